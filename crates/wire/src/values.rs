//! [`ParameterValue`] codecs for primitive and identity values, plus the
//! value types of discovery and inline QoS parameters that are not QoS
//! policies (key hash, status info, builtin endpoint set, security info,
//! octet sequences).

use crate::codec::{pad4, Endianness, Reader, Writer};
use crate::error::{Result, WireError};
use crate::parameter::ParameterValue;
use crate::types::{
    Duration, EntityId, Guid, GuidPrefix, Locator, ProtocolVersion, Time, VendorId, WireType,
};

/// Runs `f` on a reader over `value` (offsets relative to the value start).
pub(crate) fn decode_with<'a, T>(
    value: &'a [u8],
    endian: Endianness,
    f: impl FnOnce(&mut Reader<'a>) -> Result<T>,
) -> Result<T> {
    let mut r = Reader::new(value, 0, endian);
    f(&mut r)
}

/// Checks room for `len` bytes, runs `f` on a writer over `out`, returns `len`.
pub(crate) fn encode_with(
    out: &mut [u8],
    endian: Endianness,
    len: usize,
    f: impl FnOnce(&mut Writer<'_>) -> Result<()>,
) -> Result<usize> {
    crate::codec::check_room(out, len)?;
    let mut w = Writer::new(out, endian);
    f(&mut w)?;
    debug_assert_eq!(w.pos(), len);
    Ok(len)
}

/// Reads a CDR string: u32 length including the NUL, bytes, NUL. The content
/// must be UTF-8 without inner NULs.
pub(crate) fn read_string<'a>(r: &mut Reader<'a>) -> Result<&'a str> {
    let offset = r.offset();
    let len = r.u32()? as usize;
    if len == 0 {
        return Err(WireError::BadString { offset });
    }
    let bytes = r.take(len)?;
    match bytes.split_last() {
        Some((0, body)) if !body.contains(&0) => {
            core::str::from_utf8(body).map_err(|_| WireError::BadString { offset })
        }
        _ => Err(WireError::BadString { offset }),
    }
}

/// Encoded size of a CDR string.
pub(crate) fn string_len(s: &str) -> usize {
    4 + s.len() + 1
}

/// Writes a CDR string.
pub(crate) fn write_string(w: &mut Writer<'_>, s: &str) -> Result<()> {
    if s.as_bytes().contains(&0) {
        return Err(WireError::Unencodable {
            what: "string with an inner NUL",
        });
    }
    let n = u32::try_from(s.len() + 1).map_err(|_| WireError::TooLong {
        length: s.len(),
        max: u32::MAX as usize - 1,
    })?;
    w.u32(n)?;
    w.put(s.as_bytes())?;
    w.u8(0)
}

impl<'a> ParameterValue<'a> for u32 {
    fn decode(value: &'a [u8], endian: Endianness) -> Result<Self> {
        decode_with(value, endian, |r| r.u32())
    }
    fn encoded_len(&self) -> usize {
        4
    }
    fn encode(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        encode_with(out, endian, 4, |w| w.u32(*self))
    }
}

impl<'a> ParameterValue<'a> for i32 {
    fn decode(value: &'a [u8], endian: Endianness) -> Result<Self> {
        decode_with(value, endian, |r| r.i32())
    }
    fn encoded_len(&self) -> usize {
        4
    }
    fn encode(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        encode_with(out, endian, 4, |w| w.i32(*self))
    }
}

/// A CDR boolean: one octet (0 = false, anything else = true), e.g.
/// `PID_EXPECTS_INLINE_QOS`; the list writer pads it to 4.
impl<'a> ParameterValue<'a> for bool {
    fn decode(value: &'a [u8], endian: Endianness) -> Result<Self> {
        decode_with(value, endian, |r| Ok(r.u8()? != 0))
    }
    fn encoded_len(&self) -> usize {
        1
    }
    fn encode(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        encode_with(out, endian, 1, |w| w.u8(u8::from(*self)))
    }
}

/// A CDR string (topic name, type name, entity name, domain tag).
impl<'a> ParameterValue<'a> for &'a str {
    fn decode(value: &'a [u8], endian: Endianness) -> Result<Self> {
        decode_with(value, endian, read_string)
    }
    fn encoded_len(&self) -> usize {
        string_len(self)
    }
    fn encode(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        encode_with(out, endian, string_len(self), |w| write_string(w, self))
    }
}

macro_rules! impl_wire_value {
    ($($ty:ty = $len:expr),* $(,)?) => {$(
        impl<'a> ParameterValue<'a> for $ty {
            fn decode(value: &'a [u8], endian: Endianness) -> Result<Self> {
                decode_with(value, endian, <$ty as WireType>::read)
            }
            fn encoded_len(&self) -> usize {
                $len
            }
            fn encode(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
                encode_with(out, endian, $len, |w| WireType::write(self, w))
            }
        }
    )*};
}

impl_wire_value!(
    Locator = 24,
    Guid = 16,
    GuidPrefix = 12,
    EntityId = 4,
    ProtocolVersion = 2,
    VendorId = 2,
    Duration = 8,
    Time = 8,
);

/// Key hash (`PID_KEY_HASH`): 16 octets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyHash(pub [u8; 16]);

impl<'a> ParameterValue<'a> for KeyHash {
    fn decode(value: &'a [u8], endian: Endianness) -> Result<Self> {
        decode_with(value, endian, |r| Ok(KeyHash(r.array()?)))
    }
    fn encoded_len(&self) -> usize {
        16
    }
    fn encode(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        encode_with(out, endian, 16, |w| w.put(&self.0))
    }
}

/// Status info (`PID_STATUS_INFO`): u32 flags, always big-endian on the wire
/// regardless of the list's byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct StatusInfo(pub u32);

impl StatusInfo {
    /// The instance was disposed.
    pub const DISPOSED: u32 = 0x1;
    /// The instance was unregistered.
    pub const UNREGISTERED: u32 = 0x2;
    /// The sample was filtered out.
    pub const FILTERED: u32 = 0x4;

    /// Disposed flag.
    #[must_use]
    pub const fn disposed(self) -> bool {
        self.0 & Self::DISPOSED != 0
    }

    /// Unregistered flag.
    #[must_use]
    pub const fn unregistered(self) -> bool {
        self.0 & Self::UNREGISTERED != 0
    }

    /// Filtered flag.
    #[must_use]
    pub const fn filtered(self) -> bool {
        self.0 & Self::FILTERED != 0
    }
}

impl<'a> ParameterValue<'a> for StatusInfo {
    fn decode(value: &'a [u8], _endian: Endianness) -> Result<Self> {
        decode_with(value, Endianness::Big, |r| Ok(StatusInfo(r.u32()?)))
    }
    fn encoded_len(&self) -> usize {
        4
    }
    fn encode(&self, _endian: Endianness, out: &mut [u8]) -> Result<usize> {
        encode_with(out, Endianness::Big, 4, |w| w.u32(self.0))
    }
}

/// Builtin endpoint set (`PID_BUILTIN_ENDPOINT_SET`): u32 bit flags (protocol notes §1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BuiltinEndpointSet(pub u32);

impl BuiltinEndpointSet {
    /// SPDP participant announcer.
    pub const PARTICIPANT_ANNOUNCER: u32 = 1 << 0;
    /// SPDP participant detector.
    pub const PARTICIPANT_DETECTOR: u32 = 1 << 1;
    /// SEDP publications announcer.
    pub const PUBLICATIONS_ANNOUNCER: u32 = 1 << 2;
    /// SEDP publications detector.
    pub const PUBLICATIONS_DETECTOR: u32 = 1 << 3;
    /// SEDP subscriptions announcer.
    pub const SUBSCRIPTIONS_ANNOUNCER: u32 = 1 << 4;
    /// SEDP subscriptions detector.
    pub const SUBSCRIPTIONS_DETECTOR: u32 = 1 << 5;
    /// Participant-message writer.
    pub const PARTICIPANT_MESSAGE_DATA_WRITER: u32 = 1 << 10;
    /// Participant-message reader.
    pub const PARTICIPANT_MESSAGE_DATA_READER: u32 = 1 << 11;
    /// TypeLookup request writer.
    pub const TYPELOOKUP_SERVICE_REQUEST_WRITER: u32 = 1 << 12;
    /// TypeLookup request reader.
    pub const TYPELOOKUP_SERVICE_REQUEST_READER: u32 = 1 << 13;
    /// TypeLookup reply writer.
    pub const TYPELOOKUP_SERVICE_REPLY_WRITER: u32 = 1 << 14;
    /// TypeLookup reply reader.
    pub const TYPELOOKUP_SERVICE_REPLY_READER: u32 = 1 << 15;
    /// Secure publications writer.
    pub const PUBLICATIONS_SECURE_WRITER: u32 = 1 << 16;
    /// Secure publications reader.
    pub const PUBLICATIONS_SECURE_READER: u32 = 1 << 17;
    /// Secure subscriptions writer.
    pub const SUBSCRIPTIONS_SECURE_WRITER: u32 = 1 << 18;
    /// Secure subscriptions reader.
    pub const SUBSCRIPTIONS_SECURE_READER: u32 = 1 << 19;
    /// Secure participant-message writer.
    pub const PARTICIPANT_MESSAGE_SECURE_WRITER: u32 = 1 << 20;
    /// Secure participant-message reader.
    pub const PARTICIPANT_MESSAGE_SECURE_READER: u32 = 1 << 21;
    /// Participant stateless-message writer.
    pub const PARTICIPANT_STATELESS_MESSAGE_WRITER: u32 = 1 << 22;
    /// Participant stateless-message reader.
    pub const PARTICIPANT_STATELESS_MESSAGE_READER: u32 = 1 << 23;
    /// Participant volatile-message-secure writer.
    pub const PARTICIPANT_VOLATILE_MESSAGE_SECURE_WRITER: u32 = 1 << 24;
    /// Participant volatile-message-secure reader.
    pub const PARTICIPANT_VOLATILE_MESSAGE_SECURE_READER: u32 = 1 << 25;
    /// Secure SPDP announcer.
    pub const PARTICIPANT_SECURE_ANNOUNCER: u32 = 1 << 26;
    /// Secure SPDP detector.
    pub const PARTICIPANT_SECURE_DETECTOR: u32 = 1 << 27;
    /// SEDP topics announcer.
    pub const TOPICS_ANNOUNCER: u32 = 1 << 28;
    /// SEDP topics detector.
    pub const TOPICS_DETECTOR: u32 = 1 << 29;

    /// Whether every bit of `flags` is set.
    #[must_use]
    pub const fn contains(self, flags: u32) -> bool {
        self.0 & flags == flags
    }
}

impl<'a> ParameterValue<'a> for BuiltinEndpointSet {
    fn decode(value: &'a [u8], endian: Endianness) -> Result<Self> {
        u32::decode(value, endian).map(Self)
    }
    fn encoded_len(&self) -> usize {
        4
    }
    fn encode(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        self.0.encode(endian, out)
    }
}

/// `PID_PARTICIPANT_SECURITY_INFO` / `PID_ENDPOINT_SECURITY_INFO`: two u32
/// attribute masks (DDS-Security 1.1 §7.4.1.5, §7.4.1.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SecurityInfo {
    /// Security attributes (e.g. `VALID` 0x80000000 plus protection bits).
    pub attributes: u32,
    /// Plugin-specific attributes.
    pub plugin_attributes: u32,
}

impl SecurityInfo {
    /// The `IS_VALID` bit of both masks.
    pub const VALID: u32 = 0x8000_0000;
}

impl<'a> ParameterValue<'a> for SecurityInfo {
    fn decode(value: &'a [u8], endian: Endianness) -> Result<Self> {
        decode_with(value, endian, |r| {
            Ok(Self {
                attributes: r.u32()?,
                plugin_attributes: r.u32()?,
            })
        })
    }
    fn encoded_len(&self) -> usize {
        8
    }
    fn encode(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        encode_with(out, endian, 8, |w| {
            w.u32(self.attributes)?;
            w.u32(self.plugin_attributes)
        })
    }
}

/// A CDR `sequence<octet>` borrowed from the list: user data, topic data,
/// group data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OctetSeq<'a>(pub &'a [u8]);

/// `PID_USER_DATA` value.
pub type UserData<'a> = OctetSeq<'a>;
/// `PID_TOPIC_DATA` value.
pub type TopicData<'a> = OctetSeq<'a>;
/// `PID_GROUP_DATA` value.
pub type GroupData<'a> = OctetSeq<'a>;

impl<'a> ParameterValue<'a> for OctetSeq<'a> {
    fn decode(value: &'a [u8], endian: Endianness) -> Result<Self> {
        decode_with(value, endian, |r| {
            let n = r.u32()? as usize;
            Ok(OctetSeq(r.take(n)?))
        })
    }
    fn encoded_len(&self) -> usize {
        4 + self.0.len()
    }
    fn encode(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        let n = u32::try_from(self.0.len()).map_err(|_| WireError::TooLong {
            length: self.0.len(),
            max: u32::MAX as usize,
        })?;
        encode_with(out, endian, 4 + self.0.len(), |w| {
            w.u32(n)?;
            w.put(self.0)
        })
    }
}

#[derive(Debug, Clone, Copy)]
enum PropertyRepr<'a> {
    Wire {
        bytes: &'a [u8],
        endian: Endianness,
        count: u32,
        /// Offset of the binary sequence's count, if present.
        binary_at: Option<usize>,
        binary_count: u32,
    },
    Slices {
        props: &'a [(&'a str, &'a str)],
        binary: &'a [(&'a str, &'a [u8])],
    },
}

/// `PID_PROPERTY_LIST`: `sequence<Property_t{name, value}>` optionally
/// followed by `sequence<BinaryProperty_t{name, sequence<octet>}>`
/// (DDS-Security 1.1 §7.2.1), borrowed. Decoding validates everything;
/// iteration never allocates. Encoding always writes both sequences.
#[derive(Debug, Clone, Copy)]
pub struct PropertyList<'a> {
    repr: PropertyRepr<'a>,
}

fn read_property<'a>(r: &mut Reader<'a>) -> Result<(&'a str, &'a str)> {
    r.align(4)?;
    let name = read_string(r)?;
    r.align(4)?;
    Ok((name, read_string(r)?))
}

fn read_binary_property<'a>(r: &mut Reader<'a>) -> Result<(&'a str, &'a [u8])> {
    r.align(4)?;
    let name = read_string(r)?;
    r.align(4)?;
    let n = r.u32()? as usize;
    Ok((name, r.take(n)?))
}

impl<'a> PropertyList<'a> {
    /// A list to emit.
    #[must_use]
    pub const fn from_slices(
        props: &'a [(&'a str, &'a str)],
        binary: &'a [(&'a str, &'a [u8])],
    ) -> Self {
        Self {
            repr: PropertyRepr::Slices { props, binary },
        }
    }

    /// The (name, value) string properties.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        let (mut r, mut left, props): (Reader<'a>, u32, &'a [(&'a str, &'a str)]) = match self.repr
        {
            PropertyRepr::Wire {
                bytes,
                endian,
                count,
                ..
            } => {
                let mut r = Reader::new(bytes, 0, endian);
                let _ = r.u32();
                (r, count, &[])
            }
            PropertyRepr::Slices { props, .. } => (Reader::new(&[], 0, Endianness::Big), 0, props),
        };
        let wire = core::iter::from_fn(move || {
            left = left.checked_sub(1)?;
            read_property(&mut r).ok()
        });
        props.iter().copied().chain(wire)
    }

    /// The (name, octets) binary properties.
    pub fn binary(&self) -> impl Iterator<Item = (&'a str, &'a [u8])> + 'a {
        let (mut r, mut left, bin): (Reader<'a>, u32, &'a [(&'a str, &'a [u8])]) = match self.repr {
            PropertyRepr::Wire {
                bytes,
                endian,
                binary_at: Some(at),
                binary_count,
                ..
            } => {
                let mut r = Reader::new(bytes, 0, endian);
                let _ = r.take(at + 4);
                (r, binary_count, &[])
            }
            PropertyRepr::Wire { .. } => (Reader::new(&[], 0, Endianness::Big), 0, &[]),
            PropertyRepr::Slices { binary, .. } => {
                (Reader::new(&[], 0, Endianness::Big), 0, binary)
            }
        };
        let wire = core::iter::from_fn(move || {
            left = left.checked_sub(1)?;
            read_binary_property(&mut r).ok()
        });
        bin.iter().copied().chain(wire)
    }

    fn counts(&self) -> (usize, usize) {
        match self.repr {
            PropertyRepr::Wire {
                count,
                binary_count,
                ..
            } => (count as usize, binary_count as usize),
            PropertyRepr::Slices { props, binary } => (props.len(), binary.len()),
        }
    }
}

impl PartialEq for PropertyList<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.counts() == other.counts()
            && self.iter().eq(other.iter())
            && self.binary().eq(other.binary())
    }
}

impl Eq for PropertyList<'_> {}

fn count_u32(n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| WireError::TooLong {
        length: n,
        max: u32::MAX as usize,
    })
}

impl<'a> ParameterValue<'a> for PropertyList<'a> {
    fn decode(value: &'a [u8], endian: Endianness) -> Result<Self> {
        decode_with(value, endian, |r| {
            let count = r.u32()?;
            for _ in 0..count {
                read_property(r)?;
            }
            let mut binary_at = None;
            let mut binary_count = 0;
            // The binary sequence is optional (absent in older senders).
            if r.align(4).is_ok() && r.remaining() >= 4 {
                binary_at = Some(value.len() - r.remaining());
                binary_count = r.u32()?;
                for _ in 0..binary_count {
                    read_binary_property(r)?;
                }
            }
            Ok(PropertyList {
                repr: PropertyRepr::Wire {
                    bytes: value,
                    endian,
                    count,
                    binary_at,
                    binary_count,
                },
            })
        })
    }

    fn encoded_len(&self) -> usize {
        let pos = self.iter().fold(4, |pos, (n, v)| {
            pad4(pad4(pos) + string_len(n)) + string_len(v)
        });
        self.binary().fold(pad4(pos) + 4, |pos, (n, v)| {
            pad4(pad4(pos) + string_len(n)) + 4 + v.len()
        })
    }

    fn encode(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        let (np, nb) = self.counts();
        let (np, nb) = (count_u32(np)?, count_u32(nb)?);
        encode_with(out, endian, self.encoded_len(), |w| {
            w.u32(np)?;
            for (n, v) in self.iter() {
                w.pad4()?;
                write_string(w, n)?;
                w.pad4()?;
                write_string(w, v)?;
            }
            w.pad4()?;
            w.u32(nb)?;
            for (n, v) in self.binary() {
                w.pad4()?;
                write_string(w, n)?;
                w.pad4()?;
                w.u32(count_u32(v.len())?)?;
                w.put(v)?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parameter::{pid, ParameterList, ParameterListWriter};

    #[test]
    fn string_golden_both_orders() {
        // "ab": length 3 (incl. NUL), 'a' 'b' NUL
        let be = [0, 0, 0, 3, b'a', b'b', 0, 0];
        let le = [3, 0, 0, 0, b'a', b'b', 0, 0];
        assert_eq!(<&str>::decode(&be, Endianness::Big).unwrap(), "ab");
        assert_eq!(<&str>::decode(&le, Endianness::Little).unwrap(), "ab");
        let mut out = [0u8; 7];
        assert_eq!("ab".encode(Endianness::Little, &mut out).unwrap(), 7);
        assert_eq!(out, le[..7]);
        for bad in [
            &[0u8, 0, 0, 0][..],              // length 0
            &[0, 0, 0, 2, b'a', b'b'][..],    // no NUL
            &[0, 0, 0, 3, b'a', 0, 0][..],    // inner NUL
            &[0, 0, 0, 3, 0xff, 0xfe, 0][..], // not UTF-8
        ] {
            assert_eq!(
                <&str>::decode(bad, Endianness::Big),
                Err(WireError::BadString { offset: 0 })
            );
        }
        assert!(matches!(
            <&str>::decode(&[0, 0, 0, 9, b'a'], Endianness::Big),
            Err(WireError::Truncated { .. })
        ));
    }

    #[test]
    fn status_info_is_always_big_endian() {
        let v = [0, 0, 0, 3];
        let s = StatusInfo::decode(&v, Endianness::Little).unwrap();
        assert!(s.disposed() && s.unregistered() && !s.filtered());
        let mut out = [0u8; 4];
        s.encode(Endianness::Little, &mut out).unwrap();
        assert_eq!(out, v);
    }

    #[test]
    fn typed_list_round_trip() {
        let mut buf = [0u8; 128];
        let mut w = ParameterListWriter::new(&mut buf, Endianness::Big);
        w.push(pid::PROTOCOL_VERSION, &ProtocolVersion::V2_5)
            .unwrap();
        w.push(pid::EXPECTS_INLINE_QOS, &true).unwrap();
        w.push(pid::TOPIC_NAME, &"Square").unwrap();
        w.push(pid::KEY_HASH, &KeyHash([7; 16])).unwrap();
        w.push(pid::USER_DATA, &OctetSeq(&[1, 2, 3])).unwrap();
        let bytes = w.finish().unwrap();
        // 8 + 8 + (4 + 4 + 7 -> 12) ... every value padded to 4
        assert_eq!(bytes.len(), 8 + 8 + 16 + 20 + 12 + 4);
        assert_eq!(&bytes[8..16], &[0, 0x43, 0, 4, 1, 0, 0, 0]);
        let l = ParameterList::new(bytes, Endianness::Big);
        assert_eq!(
            l.get::<ProtocolVersion>(pid::PROTOCOL_VERSION),
            Some(Ok(ProtocolVersion::V2_5))
        );
        assert_eq!(l.get::<bool>(pid::EXPECTS_INLINE_QOS), Some(Ok(true)));
        assert_eq!(l.get::<&str>(pid::TOPIC_NAME), Some(Ok("Square")));
        assert_eq!(l.get::<KeyHash>(pid::KEY_HASH), Some(Ok(KeyHash([7; 16]))));
        assert_eq!(
            l.get::<OctetSeq<'_>>(pid::USER_DATA),
            Some(Ok(OctetSeq(&[1, 2, 3])))
        );
        assert_eq!(l.get::<u32>(pid::DOMAIN_ID), None);
    }

    #[test]
    fn short_values_are_truncated_errors() {
        assert!(matches!(
            Locator::decode(&[0; 23], Endianness::Big),
            Err(WireError::Truncated {
                offset: 8,
                needed: 16,
                have: 15
            })
        ));
        assert!(matches!(
            OctetSeq::decode(&[0, 0, 0, 5, 1], Endianness::Big),
            Err(WireError::Truncated { .. })
        ));
        assert!(bool::decode(&[], Endianness::Big).is_err());
    }

    #[test]
    fn property_list_golden_and_optional_binary() {
        // 1 property ("a" = "xy"), no binary sequence (older senders), BE
        let old = [
            0, 0, 0, 1, // count
            0, 0, 0, 2, b'a', 0, 0, 0, // "a" + pad
            0, 0, 0, 3, b'x', b'y', 0, // "xy"
        ];
        let p = PropertyList::decode(&old, Endianness::Big).unwrap();
        assert_eq!(p.iter().collect::<std::vec::Vec<_>>(), [("a", "xy")]);
        assert_eq!(p.binary().count(), 0);
        // re-encoding adds an empty binary sequence: "xy" NUL, pad 1, count 0
        let props = [("a", "xy")];
        let mine = PropertyList::from_slices(&props, &[]);
        assert_eq!(mine, p);
        let mut out = [0xffu8; 24];
        assert_eq!(mine.encode(Endianness::Big, &mut out).unwrap(), 24);
        assert_eq!(out[..19], old);
        assert_eq!(out[19..], [0, 0, 0, 0, 0]);
        // with a binary property, little-endian
        let bin: [(&str, &[u8]); 1] = [("k", &[9, 8, 7])];
        let both = PropertyList::from_slices(&props, &bin);
        let mut out = [0u8; 64];
        let n = both.encode(Endianness::Little, &mut out).unwrap();
        assert_eq!(n, both.encoded_len());
        let back = PropertyList::decode(&out[..n], Endianness::Little).unwrap();
        assert_eq!(back, both);
        assert_eq!(back.binary().next(), Some(("k", &[9u8, 8, 7][..])));
        // a corrupt binary length is an error, not a panic
        out[n - 7] = 0xff;
        assert!(PropertyList::decode(&out[..n], Endianness::Little).is_err());
    }
}
