//! DATA (§8.3.7.2, §9.4.5.3) and DATA_FRAG (§8.3.7.3, §9.4.5.4).

use super::{check_room, id, octets_for, parse_kind, write_submessage, Encode, SubmessageHeader};
use crate::codec::{pad4, Endianness, Reader, Writer};
use crate::error::{Result, WireError};
use crate::parameter::ParameterList;
use crate::types::{EntityId, FragmentNumber, SequenceNumber, WireType};

const DATA_Q: u8 = 0x02;
const DATA_D: u8 = 0x04;
const DATA_K: u8 = 0x08;
const DATA_N: u8 = 0x10;
const FRAG_Q: u8 = 0x02;
const FRAG_K: u8 = 0x04;
const FRAG_N: u8 = 0x08;

/// Octets from after `octetsToInlineQos` to the inline QoS in a standard DATA.
pub const DATA_OCTETS_TO_INLINE_QOS: u16 = 16;
/// Octets from after `octetsToInlineQos` to the inline QoS in a standard DATA_FRAG.
pub const DATA_FRAG_OCTETS_TO_INLINE_QOS: u16 = 28;

#[inline]
fn write_inline_qos(w: &mut Writer<'_>, qos: &Option<ParameterList<'_>>) -> Result<()> {
    if let Some(q) = qos {
        if q.endianness() != w.endian {
            return Err(WireError::EndiannessMismatch);
        }
        w.put(q.as_bytes())?;
    }
    Ok(())
}

fn read_inline_qos<'a>(r: &mut Reader<'a>) -> Result<ParameterList<'a>> {
    let list = ParameterList::parse_prefix(r.rest(), r.endian, r.offset())?;
    r.take(list.as_bytes().len())?;
    Ok(list)
}

/// A DATA submessage: one sample (or key, or inline QoS only) of a writer.
///
/// Parsed values borrow the message. `serialized_payload` extends to the end of
/// the submessage, so it includes the sender's padding to 4 (XCDR2 senders
/// record that count in the encapsulation options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Data<'a> {
    /// The `extraFlags` field (0 in RTPS 2.x; kept for faithful re-emission).
    pub extra_flags: u16,
    /// `octetsToInlineQos`: normally 16; larger values skip (on parse) or
    /// zero-fill (on emit) the extra octets before the inline QoS/payload.
    pub octets_to_inline_qos: u16,
    /// Destination reader (`EntityId::UNKNOWN` = all matching readers).
    pub reader_id: EntityId,
    /// Source writer.
    pub writer_id: EntityId,
    /// Sequence number of the change (>= 1).
    pub writer_sn: SequenceNumber,
    /// Inline QoS (Q flag), a parameter list in the submessage byte order,
    /// sentinel included.
    pub inline_qos: Option<ParameterList<'a>>,
    /// Serialized payload (D or K flag), starting with the encapsulation header.
    pub serialized_payload: Option<&'a [u8]>,
    /// K flag: the payload is a serialized key rather than data.
    pub key: bool,
    /// N flag: non-standard payload.
    pub non_standard_payload: bool,
}

impl<'a> Data<'a> {
    /// A standard DATA carrying `payload` (D flag), no inline QoS.
    #[must_use]
    pub const fn new(
        reader_id: EntityId,
        writer_id: EntityId,
        writer_sn: SequenceNumber,
        payload: Option<&'a [u8]>,
    ) -> Self {
        Self {
            extra_flags: 0,
            octets_to_inline_qos: DATA_OCTETS_TO_INLINE_QOS,
            reader_id,
            writer_id,
            writer_sn,
            inline_qos: None,
            serialized_payload: payload,
            key: false,
            non_standard_payload: false,
        }
    }

    fn flags(&self) -> u8 {
        let mut f = 0;
        if self.inline_qos.is_some() {
            f |= DATA_Q;
        }
        if self.serialized_payload.is_some() {
            f |= if self.key { DATA_K } else { DATA_D };
        }
        if self.non_standard_payload {
            f |= DATA_N;
        }
        f
    }

    fn qos_len(&self) -> usize {
        self.inline_qos.map_or(0, |q| q.as_bytes().len())
    }

    fn payload_len(&self) -> usize {
        self.serialized_payload.map_or(0, <[u8]>::len)
    }

    fn fixed_len(&self) -> usize {
        4 + usize::from(self.octets_to_inline_qos.max(DATA_OCTETS_TO_INLINE_QOS))
    }

    fn body_len(&self) -> usize {
        self.fixed_len() + self.qos_len() + self.payload_len()
    }

    /// Bytes written by [`Data::write_header`]: submessage header, fixed
    /// fields and inline QoS, i.e. everything before the payload.
    #[must_use]
    pub fn header_len(&self) -> usize {
        SubmessageHeader::SIZE + self.fixed_len() + self.qos_len()
    }

    /// Zero bytes that follow the payload to pad the submessage to 4.
    #[must_use]
    pub fn padding_len(&self) -> usize {
        pad4(self.body_len()) - self.body_len()
    }

    /// Writes everything before the payload (with `octetsToNextHeader`
    /// covering payload and padding), for scatter-gather sends: transmit
    /// these bytes, then the payload, then [`Data::padding_len`] zero bytes.
    pub fn write_header(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        let octets = octets_for(self.body_len())?;
        let n = self.header_len();
        check_room(out, n)?;
        let mut w = self.write_head(endian, octets, out)?;
        self.write_tail(&mut w)?;
        Ok(n)
    }

    /// Writes the submessage header and the 20 fixed bytes (`extraFlags` ..
    /// `writerSN`) as one 24-byte block (the caller checked the room), and
    /// returns a writer for what follows.
    #[inline]
    fn write_head<'o>(
        &self,
        endian: Endianness,
        octets: u16,
        out: &'o mut [u8],
    ) -> Result<Writer<'o>> {
        let have = out.len();
        let Some((head, rest)) = out.split_first_chunk_mut::<24>() else {
            return Err(WireError::BufferTooSmall { needed: 24, have });
        };
        let mut w = Writer::new(head, endian);
        w.u8(id::DATA)?;
        w.u8(self.flags() | endian.flag())?;
        w.u16(octets)?;
        w.u16(self.extra_flags)?;
        w.u16(self.octets_to_inline_qos.max(DATA_OCTETS_TO_INLINE_QOS))?;
        self.reader_id.write(&mut w)?;
        self.writer_id.write(&mut w)?;
        self.writer_sn.write(&mut w)?;
        Ok(Writer::new(rest, endian))
    }

    /// What follows the fixed fields up to the payload: the extra octets of a
    /// larger `octetsToInlineQos` (zeros) and the inline QoS.
    #[inline(always)]
    fn write_tail(&self, w: &mut Writer<'_>) -> Result<()> {
        let extra = self.octets_to_inline_qos.max(DATA_OCTETS_TO_INLINE_QOS);
        w.zeros(usize::from(extra - DATA_OCTETS_TO_INLINE_QOS))?;
        write_inline_qos(w, &self.inline_qos)
    }

    /// Decodes a DATA body: what [`Submessage::parse`](super::Submessage::parse)
    /// does for the DATA id (same checks, same errors), without the enum, for
    /// callers that dispatch on `header.id` themselves.
    #[inline]
    pub fn parse(header: SubmessageHeader, body: &'a [u8], offset: usize) -> Result<Self> {
        parse_kind(header, body, offset, |flags, r| {
            Self::parse_body(flags, r, offset)
        })
    }

    #[inline]
    pub(crate) fn parse_body(flags: u8, r: &mut Reader<'a>, offset: usize) -> Result<Self> {
        if flags & DATA_D != 0 && flags & DATA_K != 0 {
            return Err(WireError::InvalidFlags {
                offset,
                id: id::DATA,
                flags,
            });
        }
        // extraFlags, octetsToInlineQos, readerId, writerId, writerSN: one
        // bounds check for the block (a short body fails here or at the
        // field, both reported as BadSubmessageLength).
        let mut f = r.block::<20>()?;
        let extra_flags = f.u16()?;
        let octets_to_inline_qos = f.u16()?;
        if octets_to_inline_qos < DATA_OCTETS_TO_INLINE_QOS {
            return Err(truncated_here(&f));
        }
        let reader_id = EntityId::read(&mut f)?;
        let writer_id = EntityId::read(&mut f)?;
        let sn_offset = f.offset();
        let writer_sn = SequenceNumber::read(&mut f)?;
        if !writer_sn.is_valid() {
            return Err(WireError::InvalidSequenceNumber { offset: sn_offset });
        }
        r.take(usize::from(
            octets_to_inline_qos - DATA_OCTETS_TO_INLINE_QOS,
        ))?;
        let inline_qos = if flags & DATA_Q != 0 {
            Some(read_inline_qos(r)?)
        } else {
            None
        };
        let serialized_payload = if flags & (DATA_D | DATA_K) != 0 {
            Some(r.take_rest())
        } else {
            None
        };
        Ok(Self {
            extra_flags,
            octets_to_inline_qos,
            reader_id,
            writer_id,
            writer_sn,
            inline_qos,
            serialized_payload,
            key: flags & DATA_K != 0,
            non_standard_payload: flags & DATA_N != 0,
        })
    }
}

/// A Truncated error at the reader position (mapped to BadSubmessageLength by the caller).
#[cold]
#[inline(never)]
fn truncated_here(r: &Reader<'_>) -> WireError {
    WireError::Truncated {
        offset: r.offset(),
        needed: 0,
        have: r.remaining(),
    }
}

impl Encode for Data<'_> {
    fn encoded_len(&self) -> usize {
        SubmessageHeader::SIZE + pad4(self.body_len())
    }

    #[inline]
    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        // As write_submessage does (same checks in the same order), with the
        // header and fixed fields written as one block.
        let body_len = self.body_len();
        let octets = octets_for(body_len)?;
        let total = SubmessageHeader::SIZE + usize::from(octets);
        check_room(out, total)?;
        let mut w = self.write_head(endian, octets, out)?;
        self.write_tail(&mut w)?;
        w.put(self.serialized_payload.unwrap_or(&[]))?;
        w.zeros(total - SubmessageHeader::SIZE - body_len)?;
        Ok(total)
    }
}

/// An INFO_TS (when `timestamp` is set) followed by a DATA without inline QoS: the same
/// bytes as pushing [`InfoTs`](super::InfoTs) and then [`Data::new`] (no inline QoS, the
/// default `extraFlags` and `octetsToInlineQos`), written with one bounds check and the
/// fixed fields of both as one block. A batch carries this pair once per sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedData<'a> {
    /// The source timestamp (`None`: no INFO_TS).
    pub timestamp: Option<crate::types::Time>,
    /// Destination reader (`EntityId::UNKNOWN` = all matching readers).
    pub reader_id: EntityId,
    /// Source writer.
    pub writer_id: EntityId,
    /// Sequence number of the change (>= 1).
    pub writer_sn: SequenceNumber,
    /// The serialized payload (empty: no D flag, as [`Data::new`] with `None`).
    pub serialized_payload: &'a [u8],
}

impl TimedData<'_> {
    const TS_LEN: usize = 12;

    fn ts_len(&self) -> usize {
        if self.timestamp.is_some() {
            Self::TS_LEN
        } else {
            0
        }
    }
}

impl Encode for TimedData<'_> {
    fn encoded_len(&self) -> usize {
        self.ts_len() + SubmessageHeader::SIZE + pad4(20 + self.serialized_payload.len())
    }

    #[inline]
    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        let payload = self.serialized_payload;
        let body_len = 20 + payload.len();
        let octets = octets_for(body_len)?;
        let ts_len = self.ts_len();
        let total = ts_len + SubmessageHeader::SIZE + usize::from(octets);
        check_room(out, total)?;
        let le = endian == Endianness::Little;
        let u16b = |v: u16| if le { v.to_le_bytes() } else { v.to_be_bytes() };
        let u32b = |v: u32| if le { v.to_le_bytes() } else { v.to_be_bytes() };
        let i32b = |v: i32| if le { v.to_le_bytes() } else { v.to_be_bytes() };
        let mut head = [0u8; Self::TS_LEN + 24];
        if let Some(t) = self.timestamp {
            head[0] = id::INFO_TS;
            head[1] = endian.flag();
            head[2..4].copy_from_slice(&u16b(8));
            head[4..8].copy_from_slice(&i32b(t.seconds));
            head[8..12].copy_from_slice(&u32b(t.fraction));
        }
        let d = &mut head[ts_len..ts_len + 24];
        d[0] = id::DATA;
        d[1] = endian.flag() | if payload.is_empty() { 0 } else { DATA_D };
        d[2..4].copy_from_slice(&u16b(octets));
        // extraFlags 0 (already zero), octetsToInlineQos.
        d[6..8].copy_from_slice(&u16b(DATA_OCTETS_TO_INLINE_QOS));
        d[8..12].copy_from_slice(&self.reader_id.0);
        d[12..16].copy_from_slice(&self.writer_id.0);
        d[16..20].copy_from_slice(&i32b(self.writer_sn.high()));
        d[20..24].copy_from_slice(&u32b(self.writer_sn.low()));
        let (h, rest) = out.split_at_mut(ts_len + 24);
        h.copy_from_slice(&head[..ts_len + 24]);
        let (p, pad) = rest.split_at_mut(payload.len());
        p.copy_from_slice(payload);
        pad[..total - ts_len - 24 - payload.len()].fill(0);
        Ok(total)
    }
}

/// A DATA_FRAG submessage: one or more consecutive fragments of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataFrag<'a> {
    /// The `extraFlags` field.
    pub extra_flags: u16,
    /// `octetsToInlineQos`: normally 28.
    pub octets_to_inline_qos: u16,
    /// Destination reader (`EntityId::UNKNOWN` = all matching readers).
    pub reader_id: EntityId,
    /// Source writer.
    pub writer_id: EntityId,
    /// Sequence number of the change (>= 1).
    pub writer_sn: SequenceNumber,
    /// Number of the first fragment in this submessage (1-based).
    pub fragment_starting_num: FragmentNumber,
    /// Number of consecutive fragments in this submessage.
    pub fragments_in_submessage: u16,
    /// Size of every fragment except possibly the last of the sample.
    pub fragment_size: u16,
    /// Size of the whole serialized payload.
    pub sample_size: u32,
    /// Inline QoS (Q flag), in the submessage byte order, sentinel included.
    pub inline_qos: Option<ParameterList<'a>>,
    /// The fragment bytes. On parse, exactly the fragments' data as implied by
    /// the size fields (a short last fragment and the padding are handled).
    pub serialized_payload: &'a [u8],
    /// K flag: the fragments belong to a serialized key.
    pub key: bool,
    /// N flag: non-standard payload.
    pub non_standard_payload: bool,
}

impl<'a> DataFrag<'a> {
    fn flags(&self) -> u8 {
        let mut f = 0;
        if self.inline_qos.is_some() {
            f |= FRAG_Q;
        }
        if self.key {
            f |= FRAG_K;
        }
        if self.non_standard_payload {
            f |= FRAG_N;
        }
        f
    }

    fn qos_len(&self) -> usize {
        self.inline_qos.map_or(0, |q| q.as_bytes().len())
    }

    fn fixed_len(&self) -> usize {
        4 + usize::from(
            self.octets_to_inline_qos
                .max(DATA_FRAG_OCTETS_TO_INLINE_QOS),
        )
    }

    fn body_len(&self) -> usize {
        self.fixed_len() + self.qos_len() + self.serialized_payload.len()
    }

    /// Bytes before the fragment data (header, fixed fields, inline QoS).
    #[must_use]
    pub fn header_len(&self) -> usize {
        SubmessageHeader::SIZE + self.fixed_len() + self.qos_len()
    }

    /// Zero bytes that follow the fragment data to pad the submessage to 4.
    #[must_use]
    pub fn padding_len(&self) -> usize {
        pad4(self.body_len()) - self.body_len()
    }

    /// Byte offset of this submessage's first fragment within the sample.
    #[must_use]
    pub fn sample_offset(&self) -> u64 {
        u64::from(self.fragment_starting_num.0.saturating_sub(1)) * u64::from(self.fragment_size)
    }

    /// Total number of fragments of the sample.
    #[must_use]
    pub fn total_fragments(&self) -> u32 {
        if self.fragment_size == 0 {
            0
        } else {
            self.sample_size.div_ceil(u32::from(self.fragment_size))
        }
    }

    /// Writes everything before the fragment data, for scatter-gather sends.
    pub fn write_header(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        let octets = octets_for(self.body_len())?;
        let n = self.header_len();
        check_room(out, n)?;
        let mut w = Writer::new(out, endian);
        w.u8(id::DATA_FRAG)?;
        w.u8(self.flags() | endian.flag())?;
        w.u16(octets)?;
        self.write_fixed(&mut w)?;
        Ok(n)
    }

    fn write_fixed(&self, w: &mut Writer<'_>) -> Result<()> {
        let otiq = self
            .octets_to_inline_qos
            .max(DATA_FRAG_OCTETS_TO_INLINE_QOS);
        w.u16(self.extra_flags)?;
        w.u16(otiq)?;
        self.reader_id.write(w)?;
        self.writer_id.write(w)?;
        self.writer_sn.write(w)?;
        self.fragment_starting_num.write(w)?;
        w.u16(self.fragments_in_submessage)?;
        w.u16(self.fragment_size)?;
        w.u32(self.sample_size)?;
        w.zeros(usize::from(otiq - DATA_FRAG_OCTETS_TO_INLINE_QOS))?;
        write_inline_qos(w, &self.inline_qos)
    }

    /// Decodes a DATA_FRAG body: what [`Submessage::parse`](super::Submessage::parse)
    /// does for the DATA_FRAG id (same checks, same errors).
    #[inline]
    pub fn parse(header: SubmessageHeader, body: &'a [u8], offset: usize) -> Result<Self> {
        parse_kind(header, body, offset, |flags, r| {
            Self::parse_body(flags, r, offset)
        })
    }

    pub(crate) fn parse_body(flags: u8, r: &mut Reader<'a>, _offset: usize) -> Result<Self> {
        let extra_flags = r.u16()?;
        let octets_to_inline_qos = r.u16()?;
        if octets_to_inline_qos < DATA_FRAG_OCTETS_TO_INLINE_QOS {
            return Err(truncated_here(r));
        }
        let reader_id = EntityId::read(r)?;
        let writer_id = EntityId::read(r)?;
        let sn_offset = r.offset();
        let writer_sn = SequenceNumber::read(r)?;
        if !writer_sn.is_valid() {
            return Err(WireError::InvalidSequenceNumber { offset: sn_offset });
        }
        let frag_offset = r.offset();
        let fragment_starting_num = FragmentNumber::read(r)?;
        let fragments_in_submessage = r.u16()?;
        let fragment_size = r.u16()?;
        let sample_size = r.u32()?;
        let start = u64::from(fragment_starting_num.0.saturating_sub(1)) * u64::from(fragment_size);
        if fragment_starting_num.0 == 0
            || fragment_size == 0
            || fragments_in_submessage == 0
            || start >= u64::from(sample_size)
        {
            return Err(WireError::InvalidFragment {
                offset: frag_offset,
            });
        }
        r.take(usize::from(
            octets_to_inline_qos - DATA_FRAG_OCTETS_TO_INLINE_QOS,
        ))?;
        let inline_qos = if flags & FRAG_Q != 0 {
            Some(read_inline_qos(r)?)
        } else {
            None
        };
        let len = (u64::from(fragments_in_submessage) * u64::from(fragment_size))
            .min(u64::from(sample_size) - start);
        // len <= 65535 * 65535 fits usize on every supported target.
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        let serialized_payload = r.take(len)?;
        r.take_rest();
        Ok(Self {
            extra_flags,
            octets_to_inline_qos,
            reader_id,
            writer_id,
            writer_sn,
            fragment_starting_num,
            fragments_in_submessage,
            fragment_size,
            sample_size,
            inline_qos,
            serialized_payload,
            key: flags & FRAG_K != 0,
            non_standard_payload: flags & FRAG_N != 0,
        })
    }
}

impl Encode for DataFrag<'_> {
    fn encoded_len(&self) -> usize {
        SubmessageHeader::SIZE + pad4(self.body_len())
    }

    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        write_submessage(
            id::DATA_FRAG,
            self.flags(),
            self.body_len(),
            endian,
            out,
            |w| {
                self.write_fixed(w)?;
                w.put(self.serialized_payload)
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::super::Submessage;
    use super::*;

    const RID: EntityId = EntityId([0, 0, 0x12, 0x07]);
    const WID: EntityId = EntityId([0, 0, 0x12, 0x02]);

    /// TimedData writes what InfoTs then Data::new write, byte for byte, for every
    /// padding, both byte orders, with and without a timestamp and a payload; a buffer
    /// one byte short is refused with nothing written.
    #[test]
    fn timed_data_is_info_ts_then_data() {
        use super::super::InfoTs;
        use crate::types::Time;
        use std::{vec, vec::Vec};
        for endian in [Endianness::Little, Endianness::Big] {
            for ts in [
                None,
                Some(Time {
                    seconds: -7,
                    fraction: 0x8000_0001,
                }),
            ] {
                for len in 0..=41 {
                    let payload: Vec<u8> = (0..len as u8).map(|b| b.wrapping_mul(37) | 1).collect();
                    let sn = SequenceNumber(0x1_0000_0002 + len as i64);
                    let mut want = vec![0u8; 128];
                    let mut n = 0;
                    if ts.is_some() {
                        n += InfoTs { timestamp: ts }.write(endian, &mut want).unwrap();
                    }
                    let d = Data::new(RID, WID, sn, (!payload.is_empty()).then_some(&payload[..]));
                    n += d.write(endian, &mut want[n..]).unwrap();
                    want.truncate(n);
                    let t = TimedData {
                        timestamp: ts,
                        reader_id: RID,
                        writer_id: WID,
                        writer_sn: sn,
                        serialized_payload: &payload,
                    };
                    assert_eq!(t.encoded_len(), n);
                    let mut got = vec![0xAAu8; n + 8];
                    assert_eq!(t.write(endian, &mut got).unwrap(), n);
                    assert_eq!(&got[..n], &want[..], "{endian:?} {ts:?} {len}");
                    assert!(got[n..].iter().all(|&b| b == 0xAA));
                    let mut short = vec![0xAAu8; n - 1];
                    assert!(matches!(
                        t.write(endian, &mut short),
                        Err(WireError::BufferTooSmall { .. })
                    ));
                    assert!(short.iter().all(|&b| b == 0xAA));
                }
            }
        }
    }

    // DATA, big-endian, flags Q|D (0x06), octetsToNextHeader 48
    const DATA_BE: [u8; 52] = [
        0x15, 0x06, 0x00, 0x30, // id DATA, flags Q|D, length 48
        0x00, 0x00, 0x00, 0x10, // extraFlags 0, octetsToInlineQos 16
        0x00, 0x00, 0x12, 0x07, // readerId
        0x00, 0x00, 0x12, 0x02, // writerId
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, // writerSN 5
        0x00, 0x71, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, // STATUS_INFO disposed
        0x00, 0x01, 0x00, 0x00, // SENTINEL
        0x00, 0x01, 0x00, 0x00, // payload: CDR_LE encapsulation
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb,
        0xcc, // payload body
    ];

    // Same DATA, little-endian (E flag set; the payload bytes are opaque and unchanged)
    const DATA_LE: [u8; 52] = [
        0x15, 0x07, 0x30, 0x00, // id DATA, flags E|Q|D, length 48
        0x00, 0x00, 0x10, 0x00, // extraFlags 0, octetsToInlineQos 16
        0x00, 0x00, 0x12, 0x07, // readerId
        0x00, 0x00, 0x12, 0x02, // writerId
        0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, // writerSN high 0, low 5
        0x71, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x01, // STATUS_INFO (value is BE always)
        0x01, 0x00, 0x00, 0x00, // SENTINEL
        0x00, 0x01, 0x00, 0x00, // payload: CDR_LE encapsulation
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc,
    ];

    fn data<'a>(qos: &'a [u8], endian: Endianness, payload: &'a [u8]) -> Submessage<'a> {
        let mut d = Data::new(RID, WID, SequenceNumber(5), Some(payload));
        d.inline_qos = Some(ParameterList::new(qos, endian));
        Submessage::Data(d)
    }

    #[test]
    fn data_golden_both_orders() {
        golden(
            &DATA_BE,
            data(&DATA_BE[24..36], Endianness::Big, &DATA_BE[36..]),
        );
        golden(
            &DATA_LE,
            data(&DATA_LE[24..36], Endianness::Little, &DATA_LE[36..]),
        );
    }

    #[test]
    fn data_scatter_gather_header() {
        let Submessage::Data(d) = data(&DATA_BE[24..36], Endianness::Big, &DATA_BE[36..]) else {
            unreachable!()
        };
        assert_eq!(d.header_len(), 36);
        assert_eq!(d.padding_len(), 0);
        let mut out = [0u8; 36];
        assert_eq!(d.write_header(Endianness::Big, &mut out).unwrap(), 36);
        assert_eq!(out, DATA_BE[..36]);
        // the inline QoS was encoded big-endian: emitting little-endian is refused
        let mut big = [0u8; 64];
        assert_eq!(
            d.write(Endianness::Little, &mut big),
            Err(WireError::EndiannessMismatch)
        );
    }

    #[test]
    fn data_key_only_and_padding() {
        // K flag, 6-byte key payload: padded with 2 zero bytes.
        let d = Data {
            key: true,
            ..Data::new(RID, WID, SequenceNumber(1), Some(&[0, 1, 0, 0, 9, 9]))
        };
        let mut out = [0xffu8; 64];
        let n = d.write(Endianness::Little, &mut out).unwrap();
        assert_eq!(n, 4 + 20 + 8);
        assert_eq!(out[..4], [0x15, 0x09, 28, 0]);
        assert_eq!(out[30..32], [0, 0]);
        assert_eq!(d.padding_len(), 2);
        let Submessage::Data(p) = parse_one(&out[..n]).unwrap() else {
            panic!()
        };
        assert!(p.key);
        assert_eq!(p.serialized_payload, Some(&[0, 1, 0, 0, 9, 9, 0, 0][..]));
    }

    #[test]
    fn data_rejects_bad_fields() {
        let mut b = DATA_BE;
        b[1] = 0x0e; // Q|D|K
        assert!(matches!(parse_one(&b), Err(WireError::InvalidFlags { .. })));
        let mut b = DATA_BE;
        b[23] = 0; // SN 0
        assert_eq!(
            parse_one(&b),
            Err(WireError::InvalidSequenceNumber { offset: 16 })
        );
        let mut b = DATA_BE;
        b[7] = 8; // octetsToInlineQos < 16
        assert!(matches!(
            parse_one(&b),
            Err(WireError::BadSubmessageLength { .. })
        ));
        // inline QoS without sentinel in the body
        let mut b = DATA_BE;
        b[32] = 0x00;
        b[33] = 0x70;
        b[35] = 0x40;
        assert!(matches!(
            parse_one(&b),
            Err(WireError::BadSubmessageLength { .. })
        ));
    }

    #[test]
    fn data_honours_octets_to_inline_qos() {
        // octetsToInlineQos 20: 4 unknown extension bytes before the payload
        let b: [u8; 32] = [
            0x15, 0x05, 0x1c, 0x00, // DATA, E|D, length 28
            0x00, 0x00, 0x14, 0x00, // extraFlags, octetsToInlineQos 20
            0, 0, 0, 0, 0, 0, 0x01, 0x03, // readerId unknown, writerId
            0, 0, 0, 0, 1, 0, 0, 0, // SN 1
            0, 0, 0, 0, // extension octets
            0, 1, 0, 0, // payload
        ];
        let d = Data {
            octets_to_inline_qos: 20,
            ..Data::new(
                EntityId::UNKNOWN,
                EntityId([0, 0, 1, 3]),
                SequenceNumber(1),
                Some(&[0, 1, 0, 0]),
            )
        };
        golden(&b, Submessage::Data(d));
    }

    // DATA_FRAG, little-endian: fragment 3 of a 2500-byte sample in 1000-byte
    // fragments: the short last fragment (500 bytes); the test uses a tiny
    // sample instead so the bytes fit: sampleSize 10, fragmentSize 4, fragment 3
    // holds 2 bytes + 2 padding bytes.
    const FRAG_LE: [u8; 40] = [
        0x16, 0x01, 0x24, 0x00, // DATA_FRAG, E, length 36
        0x00, 0x00, 0x1c, 0x00, // extraFlags, octetsToInlineQos 28
        0x00, 0x00, 0x12, 0x07, // readerId
        0x00, 0x00, 0x12, 0x02, // writerId
        0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, // writerSN 7
        0x03, 0x00, 0x00, 0x00, // fragmentStartingNum 3
        0x01, 0x00, 0x04, 0x00, // fragmentsInSubmessage 1, fragmentSize 4
        0x0a, 0x00, 0x00, 0x00, // sampleSize 10
        0xde, 0xad, 0x00, 0x00, // last 2 bytes + padding
    ];
    const FRAG_BE: [u8; 40] = [
        0x16, 0x00, 0x00, 0x24, // DATA_FRAG, BE, length 36
        0x00, 0x00, 0x00, 0x1c, // extraFlags, octetsToInlineQos 28
        0x00, 0x00, 0x12, 0x07, // readerId
        0x00, 0x00, 0x12, 0x02, // writerId
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, // writerSN 7
        0x00, 0x00, 0x00, 0x03, // fragmentStartingNum 3
        0x00, 0x01, 0x00, 0x04, // fragmentsInSubmessage 1, fragmentSize 4
        0x00, 0x00, 0x00, 0x0a, // sampleSize 10
        0xde, 0xad, 0x00, 0x00, // last 2 bytes + padding
    ];

    fn frag() -> DataFrag<'static> {
        DataFrag {
            extra_flags: 0,
            octets_to_inline_qos: 28,
            reader_id: RID,
            writer_id: WID,
            writer_sn: SequenceNumber(7),
            fragment_starting_num: FragmentNumber(3),
            fragments_in_submessage: 1,
            fragment_size: 4,
            sample_size: 10,
            inline_qos: None,
            serialized_payload: &[0xde, 0xad],
            key: false,
            non_standard_payload: false,
        }
    }

    #[test]
    fn data_frag_golden_both_orders() {
        golden(&FRAG_LE, Submessage::DataFrag(frag()));
        golden(&FRAG_BE, Submessage::DataFrag(frag()));
        assert_eq!(frag().total_fragments(), 3);
        assert_eq!(frag().sample_offset(), 8);
        assert_eq!(frag().header_len(), 36);
        assert_eq!(frag().padding_len(), 2);
    }

    #[test]
    fn data_frag_rejects_inconsistent_fields() {
        let mut b = FRAG_BE;
        b[27] = 4; // fragment 4 starts at 12 >= sampleSize 10
        assert_eq!(
            parse_one(&b),
            Err(WireError::InvalidFragment { offset: 24 })
        );
        let mut b = FRAG_BE;
        b[31] = 0; // fragmentSize 0
        assert!(matches!(
            parse_one(&b),
            Err(WireError::InvalidFragment { .. })
        ));
        let mut b = FRAG_BE;
        b[27] = 1; // fragment 1 needs 4 bytes, only 4 remain -> OK
        assert!(parse_one(&b).is_ok());
        b[29] = 2; // 2 fragments = 8 bytes, only 4 remain
        assert!(matches!(
            parse_one(&b),
            Err(WireError::BadSubmessageLength { .. })
        ));
    }
}
