//! Reliability submessages: HEARTBEAT (§9.4.5.7), HEARTBEAT_FRAG (§9.4.5.8),
//! ACKNACK (§9.4.5.2), NACK_FRAG (§9.4.5.13), GAP (§9.4.5.5).

use super::{id, parse_kind, write_sized, write_submessage, Encode, SubmessageHeader};
use crate::codec::{Endianness, Reader, Writer};
use crate::error::{Result, WireError};
use crate::types::{
    Count, EntityId, FragmentNumber, FragmentNumberSet, SequenceNumber, SequenceNumberSet, WireType,
};

const FINAL: u8 = 0x02;
const LIVELINESS: u8 = 0x04;
const HB_GROUP: u8 = 0x08;
const GAP_GROUP: u8 = 0x02;
const GAP_FILTERED: u8 = 0x04;

#[inline]
fn read_sn_at_least(r: &mut Reader<'_>, min: i64) -> Result<SequenceNumber> {
    let offset = r.offset();
    let sn = SequenceNumber::read(r)?;
    if sn.0 < min {
        return Err(WireError::InvalidSequenceNumber { offset });
    }
    Ok(sn)
}

/// Group information of a HEARTBEAT with the G flag (RTPS 2.4+).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HeartbeatGroupInfo {
    /// `currentGSN`.
    pub current_gsn: SequenceNumber,
    /// `firstGSN`.
    pub first_gsn: SequenceNumber,
    /// `lastGSN`.
    pub last_gsn: SequenceNumber,
    /// `writerSet` group digest.
    pub writer_set: [u8; 4],
    /// `secureWriterSet` group digest.
    pub secure_writer_set: [u8; 4],
}

/// HEARTBEAT: the writer announces the range of available sequence numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Heartbeat {
    /// Destination reader (`UNKNOWN` for all).
    pub reader_id: EntityId,
    /// Source writer.
    pub writer_id: EntityId,
    /// First available SN (>= 1).
    pub first_sn: SequenceNumber,
    /// Last available SN (>= first_sn - 1; `first_sn - 1` means none available).
    pub last_sn: SequenceNumber,
    /// Heartbeat count.
    pub count: Count,
    /// F flag: no response required.
    pub final_flag: bool,
    /// L flag: liveliness assertion.
    pub liveliness: bool,
    /// Group information (G flag).
    pub group_info: Option<HeartbeatGroupInfo>,
}

impl Heartbeat {
    /// Decodes a HEARTBEAT body: what [`Submessage::parse`](super::Submessage::parse)
    /// does for the HEARTBEAT id (same checks, same errors), without the enum.
    #[inline]
    pub fn parse(header: SubmessageHeader, body: &[u8], offset: usize) -> Result<Self> {
        parse_kind(header, body, offset, Self::parse_body)
    }

    fn flags(&self) -> u8 {
        (if self.final_flag { FINAL } else { 0 })
            | (if self.liveliness { LIVELINESS } else { 0 })
            | (if self.group_info.is_some() {
                HB_GROUP
            } else {
                0
            })
    }

    fn body_len(&self) -> usize {
        28 + if self.group_info.is_some() { 32 } else { 0 }
    }

    #[inline]
    pub(crate) fn parse_body(flags: u8, r: &mut Reader<'_>) -> Result<Self> {
        // Blocks end at each validated field, so a short body and an invalid
        // field are reported as a field-by-field read would.
        let mut f = r.block::<16>()?;
        let reader_id = EntityId::read(&mut f)?;
        let writer_id = EntityId::read(&mut f)?;
        let first_sn = read_sn_at_least(&mut f, 1)?;
        let last_offset = r.offset();
        let last_sn = SequenceNumber::read(&mut r.block::<8>()?)?;
        if last_sn.0 < 0 || last_sn.0 < first_sn.0 - 1 {
            return Err(WireError::InvalidSequenceNumber {
                offset: last_offset,
            });
        }
        let count = Count::read(r)?;
        let group_info = if flags & HB_GROUP != 0 {
            Some(HeartbeatGroupInfo {
                current_gsn: SequenceNumber::read(r)?,
                first_gsn: SequenceNumber::read(r)?,
                last_gsn: SequenceNumber::read(r)?,
                writer_set: r.array()?,
                secure_writer_set: r.array()?,
            })
        } else {
            None
        };
        Ok(Self {
            reader_id,
            writer_id,
            first_sn,
            last_sn,
            count,
            final_flag: flags & FINAL != 0,
            liveliness: flags & LIVELINESS != 0,
            group_info,
        })
    }
}

impl Heartbeat {
    #[inline(always)]
    fn write_fields(&self, w: &mut Writer<'_>) -> Result<()> {
        self.reader_id.write(w)?;
        self.writer_id.write(w)?;
        self.first_sn.write(w)?;
        self.last_sn.write(w)?;
        self.count.write(w)?;
        if let Some(g) = &self.group_info {
            g.current_gsn.write(w)?;
            g.first_gsn.write(w)?;
            g.last_gsn.write(w)?;
            w.put(&g.writer_set)?;
            w.put(&g.secure_writer_set)?;
        }
        Ok(())
    }
}

impl Encode for Heartbeat {
    fn encoded_len(&self) -> usize {
        SubmessageHeader::SIZE + self.body_len()
    }

    #[inline]
    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        // Two fixed sizes: without and with group information.
        let flags = self.flags();
        if self.group_info.is_none() {
            write_sized::<32>(id::HEARTBEAT, flags, endian, out, |w| self.write_fields(w))
        } else {
            write_sized::<64>(id::HEARTBEAT, flags, endian, out, |w| self.write_fields(w))
        }
    }
}

/// HEARTBEAT_FRAG: fragments of a sample available so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HeartbeatFrag {
    /// Destination reader.
    pub reader_id: EntityId,
    /// Source writer.
    pub writer_id: EntityId,
    /// The sample (>= 1).
    pub writer_sn: SequenceNumber,
    /// Highest fragment number available.
    pub last_fragment_num: FragmentNumber,
    /// Count.
    pub count: Count,
}

impl HeartbeatFrag {
    /// Decodes a HEARTBEAT_FRAG body: what [`Submessage::parse`](super::Submessage::parse)
    /// does for the HEARTBEAT_FRAG id (same checks, same errors), without the enum.
    #[inline]
    pub fn parse(header: SubmessageHeader, body: &[u8], offset: usize) -> Result<Self> {
        parse_kind(header, body, offset, Self::parse_body)
    }

    #[inline]
    pub(crate) fn parse_body(_flags: u8, r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            reader_id: EntityId::read(r)?,
            writer_id: EntityId::read(r)?,
            writer_sn: read_sn_at_least(r, 1)?,
            last_fragment_num: {
                let offset = r.offset();
                let n = FragmentNumber::read(r)?;
                if n.0 == 0 {
                    return Err(WireError::InvalidFragment { offset });
                }
                n
            },
            count: Count::read(r)?,
        })
    }
}

impl Encode for HeartbeatFrag {
    fn encoded_len(&self) -> usize {
        SubmessageHeader::SIZE + 24
    }

    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        write_sized::<28>(id::HEARTBEAT_FRAG, 0, endian, out, |w| {
            self.reader_id.write(w)?;
            self.writer_id.write(w)?;
            self.writer_sn.write(w)?;
            self.last_fragment_num.write(w)?;
            self.count.write(w)
        })
    }
}

/// ACKNACK: the reader acknowledges everything below the set base and requests
/// the SNs in the set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AckNack {
    /// Source reader.
    pub reader_id: EntityId,
    /// Destination writer.
    pub writer_id: EntityId,
    /// `readerSNState`.
    pub reader_sn_state: SequenceNumberSet,
    /// Count.
    pub count: Count,
    /// F flag: the writer need not respond with a HEARTBEAT.
    pub final_flag: bool,
}

impl AckNack {
    /// Decodes an ACKNACK body: what [`Submessage::parse`](super::Submessage::parse)
    /// does for the ACKNACK id (same checks, same errors), without the enum.
    #[inline]
    pub fn parse(header: SubmessageHeader, body: &[u8], offset: usize) -> Result<Self> {
        parse_kind(header, body, offset, Self::parse_body)
    }

    #[inline]
    pub(crate) fn parse_body(flags: u8, r: &mut Reader<'_>) -> Result<Self> {
        let mut ids = r.block::<8>()?;
        Ok(Self {
            reader_id: EntityId::read(&mut ids)?,
            writer_id: EntityId::read(&mut ids)?,
            reader_sn_state: SequenceNumberSet::read(r)?,
            count: Count::read(r)?,
            final_flag: flags & FINAL != 0,
        })
    }

    fn body_len(&self) -> usize {
        8 + self.reader_sn_state.encoded_len() + 4
    }
}

impl Encode for AckNack {
    fn encoded_len(&self) -> usize {
        SubmessageHeader::SIZE + self.body_len()
    }

    #[inline]
    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        let flags = if self.final_flag { FINAL } else { 0 };
        write_submessage(id::ACKNACK, flags, self.body_len(), endian, out, |w| {
            self.reader_id.write(w)?;
            self.writer_id.write(w)?;
            self.reader_sn_state.write(w)?;
            self.count.write(w)
        })
    }
}

/// NACK_FRAG: the reader requests missing fragments of one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NackFrag {
    /// Source reader.
    pub reader_id: EntityId,
    /// Destination writer.
    pub writer_id: EntityId,
    /// The sample (>= 1).
    pub writer_sn: SequenceNumber,
    /// Missing fragments.
    pub fragment_number_state: FragmentNumberSet,
    /// Count.
    pub count: Count,
}

impl NackFrag {
    /// Decodes a NACK_FRAG body: what [`Submessage::parse`](super::Submessage::parse)
    /// does for the NACK_FRAG id (same checks, same errors), without the enum.
    #[inline]
    pub fn parse(header: SubmessageHeader, body: &[u8], offset: usize) -> Result<Self> {
        parse_kind(header, body, offset, Self::parse_body)
    }

    #[inline]
    pub(crate) fn parse_body(_flags: u8, r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            reader_id: EntityId::read(r)?,
            writer_id: EntityId::read(r)?,
            writer_sn: read_sn_at_least(r, 1)?,
            fragment_number_state: FragmentNumberSet::read(r)?,
            count: Count::read(r)?,
        })
    }

    fn body_len(&self) -> usize {
        16 + self.fragment_number_state.encoded_len() + 4
    }
}

impl Encode for NackFrag {
    fn encoded_len(&self) -> usize {
        SubmessageHeader::SIZE + self.body_len()
    }

    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        write_submessage(id::NACK_FRAG, 0, self.body_len(), endian, out, |w| {
            self.reader_id.write(w)?;
            self.writer_id.write(w)?;
            self.writer_sn.write(w)?;
            self.fragment_number_state.write(w)?;
            self.count.write(w)
        })
    }
}

/// Group information of a GAP with the G flag (RTPS 2.4+).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GapGroupInfo {
    /// `gapStartGSN`.
    pub gap_start_gsn: SequenceNumber,
    /// `gapEndGSN`.
    pub gap_end_gsn: SequenceNumber,
}

/// GAP: the writer declares SNs irrelevant (`gapStart .. gapList.base` plus
/// the SNs in `gapList`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Gap {
    /// Destination reader.
    pub reader_id: EntityId,
    /// Source writer.
    pub writer_id: EntityId,
    /// First irrelevant SN (>= 1).
    pub gap_start: SequenceNumber,
    /// Further irrelevant SNs from its base on.
    pub gap_list: SequenceNumberSet,
    /// Group information (G flag, 0x02).
    pub group_info: Option<GapGroupInfo>,
    /// Filtered count (F flag, 0x04; `ChangeCount_t` = high i32 + low u32).
    pub filtered_count: Option<i64>,
}

impl Gap {
    /// Decodes a GAP body: what [`Submessage::parse`](super::Submessage::parse)
    /// does for the GAP id (same checks, same errors), without the enum.
    #[inline]
    pub fn parse(header: SubmessageHeader, body: &[u8], offset: usize) -> Result<Self> {
        parse_kind(header, body, offset, Self::parse_body)
    }

    fn flags(&self) -> u8 {
        (if self.group_info.is_some() {
            GAP_GROUP
        } else {
            0
        }) | (if self.filtered_count.is_some() {
            GAP_FILTERED
        } else {
            0
        })
    }

    fn body_len(&self) -> usize {
        16 + self.gap_list.encoded_len()
            + if self.group_info.is_some() { 16 } else { 0 }
            + if self.filtered_count.is_some() { 8 } else { 0 }
    }

    #[inline]
    pub(crate) fn parse_body(flags: u8, r: &mut Reader<'_>) -> Result<Self> {
        let reader_id = EntityId::read(r)?;
        let writer_id = EntityId::read(r)?;
        let gap_start = read_sn_at_least(r, 1)?;
        let gap_list = SequenceNumberSet::read(r)?;
        let group_info = if flags & GAP_GROUP != 0 {
            Some(GapGroupInfo {
                gap_start_gsn: SequenceNumber::read(r)?,
                gap_end_gsn: SequenceNumber::read(r)?,
            })
        } else {
            None
        };
        let filtered_count = if flags & GAP_FILTERED != 0 {
            Some(SequenceNumber::read(r)?.0)
        } else {
            None
        };
        Ok(Self {
            reader_id,
            writer_id,
            gap_start,
            gap_list,
            group_info,
            filtered_count,
        })
    }
}

impl Encode for Gap {
    fn encoded_len(&self) -> usize {
        SubmessageHeader::SIZE + self.body_len()
    }

    fn write(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        write_submessage(id::GAP, self.flags(), self.body_len(), endian, out, |w| {
            self.reader_id.write(w)?;
            self.writer_id.write(w)?;
            self.gap_start.write(w)?;
            self.gap_list.write(w)?;
            if let Some(g) = &self.group_info {
                g.gap_start_gsn.write(w)?;
                g.gap_end_gsn.write(w)?;
            }
            if let Some(c) = self.filtered_count {
                SequenceNumber(c).write(w)?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::super::Submessage;
    use super::*;

    const RID: EntityId = EntityId([0, 0, 0x03, 0xc7]);
    const WID: EntityId = EntityId([0, 0, 0x03, 0xc2]);

    fn hb() -> Heartbeat {
        Heartbeat {
            reader_id: RID,
            writer_id: WID,
            first_sn: SequenceNumber(1),
            last_sn: SequenceNumber(0x1_0000_0002),
            count: Count(3),
            final_flag: true,
            liveliness: false,
            group_info: None,
        }
    }

    #[test]
    fn heartbeat_golden_both_orders() {
        let be = [
            0x07, 0x02, 0x00, 0x1c, // HEARTBEAT, F, length 28
            0x00, 0x00, 0x03, 0xc7, // readerId
            0x00, 0x00, 0x03, 0xc2, // writerId
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, // firstSN 1
            0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, // lastSN 2^32 + 2
            0x00, 0x00, 0x00, 0x03, // count 3
        ];
        let le = [
            0x07, 0x03, 0x1c, 0x00, // HEARTBEAT, E|F, length 28
            0x00, 0x00, 0x03, 0xc7, // readerId
            0x00, 0x00, 0x03, 0xc2, // writerId
            0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, // firstSN 1
            0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, // lastSN 2^32 + 2
            0x03, 0x00, 0x00, 0x00, // count 3
        ];
        golden(&be, Submessage::Heartbeat(hb()));
        golden(&le, Submessage::Heartbeat(hb()));
    }

    #[test]
    fn heartbeat_group_info_golden() {
        let le = [
            0x07, 0x0d, 0x3c, 0x00, // HEARTBEAT, E|L|G, length 60
            0x00, 0x00, 0x03, 0xc7, 0x00, 0x00, 0x03, 0xc2, // ids
            0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, // firstSN 1
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // lastSN 0 (empty)
            0x09, 0x00, 0x00, 0x00, // count 9
            0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, // currentGSN 4
            0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, // firstGSN 2
            0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, // lastGSN 3
            0xa1, 0xa2, 0xa3, 0xa4, 0xb1, 0xb2, 0xb3, 0xb4, // writerSet, secureWriterSet
        ];
        let h = Heartbeat {
            last_sn: SequenceNumber(0),
            count: Count(9),
            final_flag: false,
            liveliness: true,
            group_info: Some(HeartbeatGroupInfo {
                current_gsn: SequenceNumber(4),
                first_gsn: SequenceNumber(2),
                last_gsn: SequenceNumber(3),
                writer_set: [0xa1, 0xa2, 0xa3, 0xa4],
                secure_writer_set: [0xb1, 0xb2, 0xb3, 0xb4],
            }),
            ..hb()
        };
        golden(&le, Submessage::Heartbeat(h));
        let be = [
            0x07, 0x0c, 0x00, 0x3c, // HEARTBEAT, L|G, length 60
            0x00, 0x00, 0x03, 0xc7, 0x00, 0x00, 0x03, 0xc2, // ids
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, // firstSN 1
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // lastSN 0 (empty)
            0x00, 0x00, 0x00, 0x09, // count 9
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, // currentGSN 4
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, // firstGSN 2
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, // lastGSN 3
            0xa1, 0xa2, 0xa3, 0xa4, 0xb1, 0xb2, 0xb3, 0xb4, // writerSet, secureWriterSet
        ];
        golden(&be, Submessage::Heartbeat(h));
    }

    #[test]
    fn heartbeat_validation() {
        let mut out = [0u8; 32];
        let h = Heartbeat {
            first_sn: SequenceNumber(5),
            last_sn: SequenceNumber(3),
            ..hb()
        };
        h.write(Endianness::Big, &mut out).unwrap();
        assert_eq!(
            parse_one(&out),
            Err(WireError::InvalidSequenceNumber { offset: 20 })
        );
        let h = Heartbeat {
            first_sn: SequenceNumber(0),
            ..hb()
        };
        h.write(Endianness::Big, &mut out).unwrap();
        assert_eq!(
            parse_one(&out),
            Err(WireError::InvalidSequenceNumber { offset: 12 })
        );
        // octetsToNextHeader too small for the body
        hb().write(Endianness::Big, &mut out).unwrap();
        out[3] = 24;
        assert_eq!(
            parse_one(&out[..28]),
            Err(WireError::BadSubmessageLength {
                offset: 0,
                id: id::HEARTBEAT,
                length: 24
            })
        );
    }

    #[test]
    fn heartbeat_frag_golden() {
        let be = [
            0x13, 0x00, 0x00, 0x18, // HEARTBEAT_FRAG, length 24
            0x00, 0x00, 0x03, 0xc7, 0x00, 0x00, 0x03, 0xc2, // ids
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, // writerSN 2
            0x00, 0x00, 0x00, 0x05, // lastFragmentNum 5
            0x00, 0x00, 0x00, 0x01, // count 1
        ];
        let le = [
            0x13, 0x01, 0x18, 0x00, // HEARTBEAT_FRAG, E, length 24
            0x00, 0x00, 0x03, 0xc7, 0x00, 0x00, 0x03, 0xc2, // ids
            0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, // writerSN 2
            0x05, 0x00, 0x00, 0x00, // lastFragmentNum 5
            0x01, 0x00, 0x00, 0x00, // count 1
        ];
        let s = Submessage::HeartbeatFrag(HeartbeatFrag {
            reader_id: RID,
            writer_id: WID,
            writer_sn: SequenceNumber(2),
            last_fragment_num: FragmentNumber(5),
            count: Count(1),
        });
        golden(&be, s);
        golden(&le, s);
        // lastFragmentNum 0 is invalid (§8.3.7.6.3: fragment numbers start at 1).
        let mut zero = be;
        zero[20..24].copy_from_slice(&[0; 4]);
        assert_eq!(
            parse_one(&zero),
            Err(WireError::InvalidFragment { offset: 20 })
        );
    }

    fn acknack() -> AckNack {
        let mut set = SequenceNumberSet::empty(SequenceNumber(3));
        set.insert(SequenceNumber(3));
        set.insert(SequenceNumber(5));
        AckNack {
            reader_id: RID,
            writer_id: WID,
            reader_sn_state: set,
            count: Count(2),
            final_flag: false,
        }
    }

    #[test]
    fn acknack_golden_both_orders() {
        let be = [
            0x06, 0x00, 0x00, 0x1c, // ACKNACK, length 28
            0x00, 0x00, 0x03, 0xc7, 0x00, 0x00, 0x03, 0xc2, // ids
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, // bitmapBase 3
            0x00, 0x00, 0x00, 0x03, // numBits 3
            0xa0, 0x00, 0x00, 0x00, // bits: 3 and 5
            0x00, 0x00, 0x00, 0x02, // count 2
        ];
        let le = [
            0x06, 0x01, 0x1c, 0x00, // ACKNACK, E, length 28
            0x00, 0x00, 0x03, 0xc7, 0x00, 0x00, 0x03, 0xc2, // ids
            0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, // bitmapBase 3
            0x03, 0x00, 0x00, 0x00, // numBits 3
            0x00, 0x00, 0x00, 0xa0, // bits: 3 and 5 (word in LE)
            0x02, 0x00, 0x00, 0x00, // count 2
        ];
        golden(&be, Submessage::AckNack(acknack()));
        golden(&le, Submessage::AckNack(acknack()));
    }

    #[test]
    fn acknack_preemptive_and_bad_numbits() {
        // pre-emptive ACKNACK as sent by Fast DDS: base 0, numBits 0, F set
        let b = [
            0x06, 0x03, 0x18, 0x00, // ACKNACK, E|F, length 24
            0x00, 0x00, 0x03, 0xc7, 0x00, 0x00, 0x03, 0xc2, // ids
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // base 0
            0x00, 0x00, 0x00, 0x00, // numBits 0
            0x01, 0x00, 0x00, 0x00, // count 1
        ];
        let Ok(Submessage::AckNack(a)) = parse_one(&b) else {
            panic!("pre-emptive ACKNACK rejected")
        };
        assert!(a.final_flag);
        assert_eq!(a.reader_sn_state.base(), SequenceNumber(0));
        assert!(a.reader_sn_state.is_empty());
        // numBits 257 is rejected
        let mut b2 = [0u8; 64];
        b2[..24].copy_from_slice(&b[..24]);
        b2[2] = 60;
        b2[16] = 1; // base 1 (LE low word)
        b2[20] = 0x01;
        b2[21] = 0x01; // numBits 257 LE
        assert_eq!(
            parse_one(&b2),
            Err(WireError::InvalidNumBits {
                offset: 12,
                num_bits: 257
            })
        );
    }

    #[test]
    fn nack_frag_golden() {
        let mut set = FragmentNumberSet::empty(FragmentNumber(2));
        set.insert(FragmentNumber(2));
        set.insert(FragmentNumber(34));
        let s = Submessage::NackFrag(NackFrag {
            reader_id: RID,
            writer_id: WID,
            writer_sn: SequenceNumber(9),
            fragment_number_state: set,
            count: Count(4),
        });
        let be = [
            0x12, 0x00, 0x00, 0x24, // NACK_FRAG, length 36
            0x00, 0x00, 0x03, 0xc7, 0x00, 0x00, 0x03, 0xc2, // ids
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, // writerSN 9
            0x00, 0x00, 0x00, 0x02, // base 2
            0x00, 0x00, 0x00, 0x21, // numBits 33
            0x80, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, // fragments 2 and 34
            0x00, 0x00, 0x00, 0x04, // count 4
        ];
        let le = [
            0x12, 0x01, 0x24, 0x00, // NACK_FRAG, E, length 36
            0x00, 0x00, 0x03, 0xc7, 0x00, 0x00, 0x03, 0xc2, // ids
            0x00, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, // writerSN 9
            0x02, 0x00, 0x00, 0x00, // base 2
            0x21, 0x00, 0x00, 0x00, // numBits 33
            0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x80, // fragments 2 and 34
            0x04, 0x00, 0x00, 0x00, // count 4
        ];
        golden(&be, s);
        golden(&le, s);
    }

    #[test]
    fn gap_golden_plain_and_extended() {
        let mut list = SequenceNumberSet::empty(SequenceNumber(10));
        list.insert(SequenceNumber(11));
        let g = Gap {
            reader_id: RID,
            writer_id: WID,
            gap_start: SequenceNumber(4),
            gap_list: list,
            group_info: None,
            filtered_count: None,
        };
        let be = [
            0x08, 0x00, 0x00, 0x20, // GAP, length 32
            0x00, 0x00, 0x03, 0xc7, 0x00, 0x00, 0x03, 0xc2, // ids
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, // gapStart 4
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, // gapList base 10
            0x00, 0x00, 0x00, 0x02, 0x40, 0x00, 0x00, 0x00, // numBits 2, SN 11
        ];
        golden(&be, Submessage::Gap(g));
        let le = [
            0x08, 0x01, 0x20, 0x00, // GAP, E, length 32
            0x00, 0x00, 0x03, 0xc7, 0x00, 0x00, 0x03, 0xc2, // ids
            0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, // gapStart 4
            0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x00, // gapList base 10
            0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, // numBits 2, SN 11
        ];
        golden(&le, Submessage::Gap(g));
        let g2 = Gap {
            group_info: Some(GapGroupInfo {
                gap_start_gsn: SequenceNumber(20),
                gap_end_gsn: SequenceNumber(21),
            }),
            filtered_count: Some(7),
            ..g
        };
        let le = [
            0x08, 0x07, 0x38, 0x00, // GAP, E|G|F, length 56
            0x00, 0x00, 0x03, 0xc7, 0x00, 0x00, 0x03, 0xc2, // ids
            0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, // gapStart 4
            0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x00, // gapList base 10
            0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, // numBits 2, SN 11
            0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, // gapStartGSN 20
            0x00, 0x00, 0x00, 0x00, 0x15, 0x00, 0x00, 0x00, // gapEndGSN 21
            0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, // filteredCount 7
        ];
        golden(&le, Submessage::Gap(g2));
    }
}
