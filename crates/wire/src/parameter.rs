//! Parameter lists (DDSI-RTPS 2.5 §9.4.2.11): PID constants, a borrowed
//! iterator, an allocation-free writer and the [`ParameterValue`] codec trait.
//!
//! A parameter is `pid(u16) | length(u16) | value`, in the byte order of the
//! enclosing submessage (inline QoS) or encapsulation (PL_CDR_LE/BE). The list
//! ends with `PID_SENTINEL`; `PID_PAD` entries are skipped.

use crate::codec::{pad4, Endianness, Reader, Writer};
use crate::error::{Result, WireError};

/// Parameter ids (protocol notes §1.5; DDSI-RTPS 2.5 Tables 9.12-9.14, DDS-Security 1.1 §7.4).
pub mod pid {
    /// Padding, skipped.
    pub const PAD: u16 = 0x0000;
    /// End of the list.
    pub const SENTINEL: u16 = 0x0001;
    /// Participant lease duration (Duration).
    pub const PARTICIPANT_LEASE_DURATION: u16 = 0x0002;
    /// Time-based filter QoS.
    pub const TIME_BASED_FILTER: u16 = 0x0004;
    /// Topic name (string).
    pub const TOPIC_NAME: u16 = 0x0005;
    /// Ownership strength QoS.
    pub const OWNERSHIP_STRENGTH: u16 = 0x0006;
    /// Type name (string).
    pub const TYPE_NAME: u16 = 0x0007;
    /// Domain id (u32).
    pub const DOMAIN_ID: u16 = 0x000f;
    /// Protocol version.
    pub const PROTOCOL_VERSION: u16 = 0x0015;
    /// Vendor id.
    pub const VENDORID: u16 = 0x0016;
    /// Reliability QoS.
    pub const RELIABILITY: u16 = 0x001a;
    /// Liveliness QoS.
    pub const LIVELINESS: u16 = 0x001b;
    /// Durability QoS.
    pub const DURABILITY: u16 = 0x001d;
    /// Durability service QoS.
    pub const DURABILITY_SERVICE: u16 = 0x001e;
    /// Ownership QoS.
    pub const OWNERSHIP: u16 = 0x001f;
    /// Presentation QoS.
    pub const PRESENTATION: u16 = 0x0021;
    /// Deadline QoS.
    pub const DEADLINE: u16 = 0x0023;
    /// Destination order QoS.
    pub const DESTINATION_ORDER: u16 = 0x0025;
    /// Latency budget QoS.
    pub const LATENCY_BUDGET: u16 = 0x0027;
    /// Partition QoS.
    pub const PARTITION: u16 = 0x0029;
    /// Lifespan QoS.
    pub const LIFESPAN: u16 = 0x002b;
    /// User data QoS.
    pub const USER_DATA: u16 = 0x002c;
    /// Group data QoS.
    pub const GROUP_DATA: u16 = 0x002d;
    /// Topic data QoS.
    pub const TOPIC_DATA: u16 = 0x002e;
    /// Endpoint unicast locator.
    pub const UNICAST_LOCATOR: u16 = 0x002f;
    /// Endpoint multicast locator.
    pub const MULTICAST_LOCATOR: u16 = 0x0030;
    /// Participant default unicast locator.
    pub const DEFAULT_UNICAST_LOCATOR: u16 = 0x0031;
    /// Participant metatraffic unicast locator.
    pub const METATRAFFIC_UNICAST_LOCATOR: u16 = 0x0032;
    /// Participant metatraffic multicast locator.
    pub const METATRAFFIC_MULTICAST_LOCATOR: u16 = 0x0033;
    /// Participant manual liveliness count.
    pub const PARTICIPANT_MANUAL_LIVELINESS_COUNT: u16 = 0x0034;
    /// Content filter property.
    pub const CONTENT_FILTER_PROPERTY: u16 = 0x0035;
    /// History QoS.
    pub const HISTORY: u16 = 0x0040;
    /// Resource limits QoS.
    pub const RESOURCE_LIMITS: u16 = 0x0041;
    /// Expects inline QoS (boolean).
    pub const EXPECTS_INLINE_QOS: u16 = 0x0043;
    /// Participant default multicast locator.
    pub const DEFAULT_MULTICAST_LOCATOR: u16 = 0x0048;
    /// Transport priority QoS.
    pub const TRANSPORT_PRIORITY: u16 = 0x0049;
    /// Participant GUID.
    pub const PARTICIPANT_GUID: u16 = 0x0050;
    /// Group entity id.
    pub const GROUP_ENTITYID: u16 = 0x0053;
    /// Builtin endpoint set (u32 bit flags).
    pub const BUILTIN_ENDPOINT_SET: u16 = 0x0058;
    /// Property list.
    pub const PROPERTY_LIST: u16 = 0x0059;
    /// Endpoint GUID.
    pub const ENDPOINT_GUID: u16 = 0x005a;
    /// Coherent set (inline QoS).
    pub const COHERENT_SET: u16 = 0x0056;
    /// Directed write (inline QoS).
    pub const DIRECTED_WRITE: u16 = 0x0057;
    /// Original writer info (inline QoS).
    pub const ORIGINAL_WRITER_INFO: u16 = 0x0061;
    /// Entity name (string).
    pub const ENTITY_NAME: u16 = 0x0062;
    /// Key hash (inline QoS, 16 octets).
    pub const KEY_HASH: u16 = 0x0070;
    /// Status info (inline QoS, big-endian u32 flags).
    pub const STATUS_INFO: u16 = 0x0071;
    /// Data representation QoS.
    pub const DATA_REPRESENTATION: u16 = 0x0073;
    /// Type consistency enforcement QoS.
    pub const TYPE_CONSISTENCY_ENFORCEMENT: u16 = 0x0074;
    /// XTypes type information (XCDR2 content).
    pub const TYPE_INFORMATION: u16 = 0x0075;
    /// Builtin endpoint QoS (u32 bit flags).
    pub const BUILTIN_ENDPOINT_QOS: u16 = 0x0077;
    /// Domain tag (string; must-understand bit set).
    pub const DOMAIN_TAG: u16 = 0x4014;
    /// Extended parameter header (long values; XTypes 1.3 reserved PID).
    pub const EXTENDED: u16 = 0x3f01;
    /// XTypes `PID_LIST_END` (ends an XCDR1 PL_CDR member list; RTPS lists end with
    /// [`SENTINEL`]).
    pub const LIST_END: u16 = 0x3f02;
    /// XTypes `PID_IGNORE`: a parameter to skip.
    pub const IGNORE: u16 = 0x3f03;
    /// DDS-Security identity token.
    pub const IDENTITY_TOKEN: u16 = 0x1001;
    /// DDS-Security permissions token.
    pub const PERMISSIONS_TOKEN: u16 = 0x1002;
    /// DDS-Security data tags.
    pub const DATA_TAGS: u16 = 0x1003;
    /// DDS-Security endpoint security info.
    pub const ENDPOINT_SECURITY_INFO: u16 = 0x1004;
    /// DDS-Security participant security info.
    pub const PARTICIPANT_SECURITY_INFO: u16 = 0x1005;
    /// DDS-Security identity status token.
    pub const IDENTITY_STATUS_TOKEN: u16 = 0x1006;

    /// Bit 0x8000: vendor-specific parameter (interpret only for a known vendor).
    pub const VENDOR_SPECIFIC_BIT: u16 = 0x8000;
    /// Bit 0x4000: the receiver must understand the parameter or drop the sample.
    pub const MUST_UNDERSTAND_BIT: u16 = 0x4000;

    /// Whether an unknown `pid` must be understood (must-understand bit set);
    /// a consumer that does not know such a parameter must drop the sample.
    #[must_use]
    pub const fn must_understand(pid: u16) -> bool {
        pid & MUST_UNDERSTAND_BIT != 0
    }

    /// Whether `pid` is vendor-specific.
    #[must_use]
    pub const fn is_vendor_specific(pid: u16) -> bool {
        pid & VENDOR_SPECIFIC_BIT != 0
    }
}

/// Encapsulation id of a big-endian parameter list payload (protocol notes §1.8).
pub const PL_CDR_BE: u16 = 0x0002;
/// Encapsulation id of a little-endian parameter list payload.
pub const PL_CDR_LE: u16 = 0x0003;

/// One parameter: its id and borrowed value bytes (including any trailing padding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parameter<'a> {
    /// Full parameter id, including the vendor and must-understand bits.
    pub pid: u16,
    /// The value bytes (`length` bytes as on the wire).
    pub value: &'a [u8],
}

impl<'a> Parameter<'a> {
    /// Must-understand bit (0x4000) set.
    #[must_use]
    pub const fn must_understand(&self) -> bool {
        pid::must_understand(self.pid)
    }

    /// Vendor-specific bit (0x8000) set.
    #[must_use]
    pub const fn is_vendor_specific(&self) -> bool {
        pid::is_vendor_specific(self.pid)
    }

    /// Decodes the value as `T` in the list's byte order.
    pub fn decode<T: ParameterValue<'a>>(&self, endian: Endianness) -> Result<T> {
        T::decode(self.value, endian)
    }
}

/// A borrowed parameter list: the bytes and their byte order.
///
/// Constructed unchecked with [`ParameterList::new`] (iteration reports errors)
/// or validated up to the sentinel with [`ParameterList::parse_prefix`], as
/// done for inline QoS in DATA/DATA_FRAG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParameterList<'a> {
    bytes: &'a [u8],
    endian: Endianness,
}

impl<'a> ParameterList<'a> {
    /// A view of `bytes` in byte order `endian`. No validation happens here.
    #[must_use]
    pub const fn new(bytes: &'a [u8], endian: Endianness) -> Self {
        Self { bytes, endian }
    }

    /// Validates the list at the start of `bytes` up to and including its
    /// sentinel and returns a view of exactly those bytes. `base` is added to
    /// error offsets.
    pub fn parse_prefix(bytes: &'a [u8], endian: Endianness, base: usize) -> Result<Self> {
        let mut it = Parameters::with_base(bytes, endian, base);
        for p in it.by_ref() {
            p?;
        }
        if !it.terminated {
            // Unreachable in practice: the iterator only ends without error at the sentinel.
            return Err(WireError::Truncated {
                offset: base + it.pos,
                needed: 4,
                have: 0,
            });
        }
        Ok(Self {
            bytes: bytes.get(..it.pos).unwrap_or(bytes),
            endian,
        })
    }

    /// The raw bytes of the view.
    #[must_use]
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The byte order of the list.
    #[must_use]
    pub const fn endianness(&self) -> Endianness {
        self.endian
    }

    /// Iterates the parameters up to the sentinel.
    #[must_use]
    pub fn iter(&self) -> Parameters<'a> {
        Parameters::with_base(self.bytes, self.endian, 0)
    }

    /// The first parameter with id `pid`, if any (stops at the first error).
    #[must_use]
    pub fn find(&self, pid: u16) -> Option<Parameter<'a>> {
        self.iter().map_while(|p| p.ok()).find(|p| p.pid == pid)
    }

    /// Decodes the first parameter with id `pid` as `T`.
    pub fn get<T: ParameterValue<'a>>(&self, pid: u16) -> Option<Result<T>> {
        self.find(pid).map(|p| T::decode(p.value, self.endian))
    }

    /// Decodes every parameter with id `pid` as `T` (e.g. each locator of a
    /// participant is its own parameter). Stops at the first iteration error.
    pub fn get_all<T: ParameterValue<'a>>(&self, pid: u16) -> impl Iterator<Item = Result<T>> + 'a {
        let endian = self.endian;
        self.iter()
            .map_while(|p| p.ok())
            .filter(move |p| p.pid == pid)
            .map(move |p| T::decode(p.value, endian))
    }

    /// The parameter list of a discovery serialized payload: checks the
    /// 4-byte encapsulation header (`PL_CDR_BE` 0x0002 or `PL_CDR_LE` 0x0003,
    /// always big-endian) and returns a view of the rest.
    pub fn from_serialized_payload(payload: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(payload, 0, Endianness::Big);
        let id = r.u16()?;
        let _options = r.u16()?;
        let endian = match id {
            PL_CDR_BE => Endianness::Big,
            PL_CDR_LE => Endianness::Little,
            _ => return Err(WireError::InvalidEncapsulation { id }),
        };
        Ok(Self::new(r.rest(), endian))
    }

    /// Checks every parameter: returns the first iteration error, or
    /// `UnknownMustUnderstandParameter` for a must-understand pid that `known`
    /// rejects.
    pub fn check_must_understand(&self, known: impl Fn(u16) -> bool) -> Result<()> {
        for p in self.iter() {
            let p = p?;
            if p.must_understand() && !known(p.pid) {
                return Err(WireError::UnknownMustUnderstandParameter { pid: p.pid });
            }
        }
        Ok(())
    }
}

impl<'a> IntoIterator for ParameterList<'a> {
    type Item = Result<Parameter<'a>>;
    type IntoIter = Parameters<'a>;
    fn into_iter(self) -> Parameters<'a> {
        self.iter()
    }
}

/// Iterator over a parameter list, yielding parameters until `PID_SENTINEL`
/// (`PID_PAD` skipped). After an error or the sentinel it yields `None`.
#[derive(Debug, Clone)]
pub struct Parameters<'a> {
    bytes: &'a [u8],
    endian: Endianness,
    base: usize,
    pos: usize,
    done: bool,
    terminated: bool,
}

impl<'a> Parameters<'a> {
    /// Iterates `bytes` in byte order `endian`; error offsets are relative to `bytes`.
    #[must_use]
    pub fn new(bytes: &'a [u8], endian: Endianness) -> Self {
        Self::with_base(bytes, endian, 0)
    }

    /// Like [`Parameters::new`], adding `base` to error offsets.
    #[must_use]
    pub fn with_base(bytes: &'a [u8], endian: Endianness, base: usize) -> Self {
        Self {
            bytes,
            endian,
            base,
            pos: 0,
            done: false,
            terminated: false,
        }
    }

    /// Bytes consumed so far; after the sentinel, the length of the whole list
    /// including the sentinel.
    #[must_use]
    pub const fn consumed(&self) -> usize {
        self.pos
    }

    /// Whether the sentinel was reached.
    #[must_use]
    pub const fn is_terminated(&self) -> bool {
        self.terminated
    }

    fn step(&mut self) -> Result<Option<Parameter<'a>>> {
        loop {
            let rest = self.bytes.get(self.pos..).unwrap_or(&[]);
            let mut r = Reader::new(rest, self.base + self.pos, self.endian);
            let pid = r.u16()?;
            let len = r.u16()? as usize;
            if pid == pid::SENTINEL {
                self.pos += 4;
                self.terminated = true;
                return Ok(None);
            }
            let value = r.take(len)?;
            self.pos += 4 + len;
            if pid != pid::PAD {
                return Ok(Some(Parameter { pid, value }));
            }
        }
    }
}

impl<'a> Iterator for Parameters<'a> {
    type Item = Result<Parameter<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.step() {
            Ok(Some(p)) => Some(Ok(p)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl core::iter::FusedIterator for Parameters<'_> {}

/// A typed parameter value with a codec for both byte orders.
///
/// `decode` reads from the start of the value and ignores trailing bytes
/// (padding); `encode` writes exactly `encoded_len()` bytes (unpadded: the list
/// writer pads to 4).
pub trait ParameterValue<'a>: Sized {
    /// Decodes a value from parameter bytes.
    fn decode(value: &'a [u8], endian: Endianness) -> Result<Self>;
    /// Unpadded encoded size in bytes.
    fn encoded_len(&self) -> usize;
    /// Encodes into `out`; returns the bytes written.
    fn encode(&self, endian: Endianness, out: &mut [u8]) -> Result<usize>;
}

/// Appends parameters to a caller-owned buffer, padding each value to 4 bytes,
/// and terminates the list with a sentinel on [`ParameterListWriter::finish`].
#[derive(Debug)]
pub struct ParameterListWriter<'b> {
    buf: &'b mut [u8],
    len: usize,
    endian: Endianness,
}

impl<'b> ParameterListWriter<'b> {
    /// A writer over `buf` in byte order `endian`.
    #[must_use]
    pub fn new(buf: &'b mut [u8], endian: Endianness) -> Self {
        Self {
            buf,
            len: 0,
            endian,
        }
    }

    /// Bytes written so far.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was written yet.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn tail(&mut self) -> &mut [u8] {
        let len = self.len;
        self.buf.get_mut(len..).unwrap_or(&mut [])
    }

    fn header(&mut self, pid: u16, padded: usize) -> Result<()> {
        let length = u16::try_from(padded).map_err(|_| WireError::TooLong {
            length: padded,
            max: 0xfffc,
        })?;
        let have = self.buf.len();
        let needed = self.len + 4 + padded;
        if needed > have {
            return Err(WireError::BufferTooSmall { needed, have });
        }
        let endian = self.endian;
        let mut w = Writer::new(self.tail(), endian);
        w.u16(pid)?;
        w.u16(length)?;
        Ok(())
    }

    /// Appends a typed parameter.
    pub fn push<'v, V: ParameterValue<'v>>(&mut self, pid: u16, value: &V) -> Result<()> {
        let n = value.encoded_len();
        let padded = pad4(n);
        self.header(pid, padded)?;
        let endian = self.endian;
        let start = self.len + 4;
        let dst = self
            .buf
            .get_mut(start..start + padded)
            .ok_or(WireError::BufferTooSmall {
                needed: start + padded,
                have: 0,
            })?;
        let (val, pad) = dst.split_at_mut(n.min(padded));
        let written = value.encode(endian, val)?;
        debug_assert_eq!(written, n);
        pad.fill(0);
        self.len = start + padded;
        Ok(())
    }

    /// Appends a parameter with raw value bytes (padded to 4 with zeros).
    pub fn push_raw(&mut self, pid: u16, value: &[u8]) -> Result<()> {
        let padded = pad4(value.len());
        self.header(pid, padded)?;
        let start = self.len + 4;
        let mut w = Writer::new(self.buf.get_mut(start..).unwrap_or(&mut []), self.endian);
        w.put(value)?;
        w.pad4()?;
        self.len = start + padded;
        Ok(())
    }

    /// Writes the sentinel and returns the list bytes.
    pub fn finish(self) -> Result<&'b [u8]> {
        let mut this = self;
        this.header(pid::SENTINEL, 0)?;
        let len = this.len + 4;
        let buf: &'b [u8] = this.buf;
        Ok(buf.get(..len).unwrap_or(buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // PL in little-endian:
    // 15 00 04 00 | 02 05 00 00       PROTOCOL_VERSION 2.5 (+2 pad)
    // 00 00 04 00 | ff ff ff ff       PAD (skipped)
    // 14 40 08 00 | 03 00 00 00 'a' 'b' 00 00   DOMAIN_TAG "ab" (must-understand)
    // 01 00 00 00                     SENTINEL
    // aa bb                           trailing bytes (not part of the list)
    const LE_LIST: [u8; 34] = [
        0x15, 0x00, 0x04, 0x00, 0x02, 0x05, 0x00, 0x00, //
        0x00, 0x00, 0x04, 0x00, 0xff, 0xff, 0xff, 0xff, //
        0x14, 0x40, 0x08, 0x00, 0x03, 0x00, 0x00, 0x00, b'a', b'b', 0x00, 0x00, //
        0x01, 0x00, 0x00, 0x00, //
        0xaa, 0xbb,
    ];

    #[test]
    fn iterate_golden_list() {
        let mut it = Parameters::new(&LE_LIST, Endianness::Little);
        let p = it.next().unwrap().unwrap();
        assert_eq!(p.pid, pid::PROTOCOL_VERSION);
        assert_eq!(p.value, &[2, 5, 0, 0]);
        let p = it.next().unwrap().unwrap();
        assert_eq!(p.pid, pid::DOMAIN_TAG);
        assert!(p.must_understand());
        assert!(!p.is_vendor_specific());
        assert!(it.next().is_none());
        assert!(it.is_terminated());
        assert_eq!(it.consumed(), 32);
        let l = ParameterList::parse_prefix(&LE_LIST, Endianness::Little, 100).unwrap();
        assert_eq!(l.as_bytes().len(), 32);
        assert_eq!(
            l.check_must_understand(|p| p == pid::PROTOCOL_VERSION),
            Err(WireError::UnknownMustUnderstandParameter { pid: 0x4014 })
        );
        assert!(l.check_must_understand(|_| true).is_ok());
    }

    #[test]
    fn missing_sentinel_and_overlong_value() {
        let e = ParameterList::parse_prefix(&LE_LIST[..28], Endianness::Little, 100);
        assert_eq!(
            e,
            Err(WireError::Truncated {
                offset: 128,
                needed: 2,
                have: 0
            })
        );
        // length 8 but only 4 bytes remain
        let bad = [0x15, 0x00, 0x08, 0x00, 1, 2, 3, 4];
        assert_eq!(
            ParameterList::parse_prefix(&bad, Endianness::Little, 0),
            Err(WireError::Truncated {
                offset: 4,
                needed: 8,
                have: 4
            })
        );
    }

    #[test]
    fn writer_pads_and_terminates() {
        let mut buf = [0xeeu8; 64];
        let mut w = ParameterListWriter::new(&mut buf, Endianness::Little);
        w.push_raw(pid::PROTOCOL_VERSION, &[2, 5]).unwrap();
        w.push_raw(pid::DOMAIN_TAG, &[3, 0, 0, 0, b'a', b'b', 0])
            .unwrap();
        let out = w.finish().unwrap();
        // our writer does not emit the PAD parameter: expected = LE_LIST without it
        let mut v = [0u8; 24];
        v[..8].copy_from_slice(&LE_LIST[..8]);
        v[8..].copy_from_slice(&LE_LIST[16..32]);
        assert_eq!(out, &v);
    }

    #[test]
    fn reserved_xtypes_pids() {
        // XTypes 1.3 reserved PIDs: PID_EXTENDED 0x3f01, PID_LIST_END 0x3f02, PID_IGNORE 0x3f03
        // (IGNORE used to be 0x3f02, the list-end marker).
        assert_eq!(
            [pid::EXTENDED, pid::LIST_END, pid::IGNORE],
            [0x3f01, 0x3f02, 0x3f03]
        );
    }

    #[test]
    fn writer_too_small() {
        let mut buf = [0u8; 6];
        let mut w = ParameterListWriter::new(&mut buf, Endianness::Big);
        assert_eq!(
            w.push_raw(pid::DOMAIN_ID, &[0, 0, 0, 1]),
            Err(WireError::BufferTooSmall { needed: 8, have: 6 })
        );
    }
}
