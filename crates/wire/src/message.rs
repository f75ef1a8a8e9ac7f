//! Whole RTPS messages (DDSI-RTPS 2.5 §8.3.3, §9.4.1): a checked view with a
//! submessage iterator, and [`MessageWriter`] to build datagrams in place.

use crate::codec::Endianness;
use crate::error::{Result, WireError};
use crate::header::Header;
use crate::submessage::{Encode, Submessage, SubmessageHeader};

/// A parsed RTPS message: the header plus the borrowed submessage bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageView<'a> {
    header: Header,
    bytes: &'a [u8],
}

/// Alias so that `Message::parse(bytes)` reads naturally.
pub type Message<'a> = MessageView<'a>;

impl<'a> MessageView<'a> {
    /// Checks the header; submessages are parsed lazily by the iterators.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let header = Header::parse(bytes)?;
        Ok(Self { header, bytes })
    }

    /// The message header.
    #[must_use]
    pub const fn header(&self) -> &Header {
        &self.header
    }

    /// The whole message.
    #[must_use]
    pub const fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Parsed submessages in order. After the first error the iterator ends.
    #[must_use]
    pub fn submessages(&self) -> Submessages<'a> {
        Submessages {
            raw: self.raw_submessages(),
        }
    }

    /// Submessages as raw header + body slices, not yet parsed: lets a caller
    /// skip kinds it does not need, or compare re-emitted bytes with the input.
    #[must_use]
    pub fn raw_submessages(&self) -> RawSubmessages<'a> {
        RawSubmessages {
            bytes: self.bytes,
            pos: Header::SIZE,
            done: false,
        }
    }
}

/// One submessage located in a message but not yet decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawSubmessage<'a> {
    /// The submessage header as received.
    pub header: SubmessageHeader,
    /// Offset of the submessage header in the message.
    pub offset: usize,
    /// The body (after `octetsToNextHeader` resolution).
    pub body: &'a [u8],
    /// The whole submessage as received, header included.
    pub bytes: &'a [u8],
}

impl<'a> RawSubmessage<'a> {
    /// Byte order of the body (E flag).
    #[must_use]
    pub const fn endianness(&self) -> Endianness {
        self.header.endianness()
    }

    /// Decodes the body.
    #[inline]
    pub fn parse(&self) -> Result<Submessage<'a>> {
        Submessage::parse(self.header, self.body, self.offset)
    }
}

/// Iterator over the raw submessages of a message; fused after an error.
#[derive(Debug, Clone)]
pub struct RawSubmessages<'a> {
    bytes: &'a [u8],
    pos: usize,
    done: bool,
}

impl<'a> RawSubmessages<'a> {
    #[inline]
    fn step(&mut self) -> Result<Option<RawSubmessage<'a>>> {
        let offset = self.pos;
        let rest = self.bytes.get(offset..).unwrap_or(&[]);
        if rest.is_empty() {
            return Ok(None);
        }
        // The 4-byte header in one check; `octetsToNextHeader` is in the byte
        // order of the E flag.
        let Some((&[id, flags, l0, l1], after)) = rest.split_first_chunk::<4>() else {
            return Err(short_header(offset, rest.len()));
        };
        let octets_to_next_header = match Endianness::from_flags(flags) {
            Endianness::Big => u16::from_be_bytes([l0, l1]),
            Endianness::Little => u16::from_le_bytes([l0, l1]),
        };
        let header = SubmessageHeader {
            id,
            flags,
            octets_to_next_header,
        };
        let body_len = if octets_to_next_header == 0 && header.zero_means_to_end() {
            after.len()
        } else {
            usize::from(octets_to_next_header)
        };
        let Some(body) = after.get(..body_len) else {
            return Err(WireError::Truncated {
                offset: offset + SubmessageHeader::SIZE,
                needed: body_len,
                have: after.len(),
            });
        };
        let total = SubmessageHeader::SIZE + body_len;
        self.pos = offset + total;
        Ok(Some(RawSubmessage {
            header,
            offset,
            body,
            bytes: rest.get(..total).unwrap_or(rest),
        }))
    }
}

/// The error for a submessage header cut short (`1..=3` bytes left at
/// `offset`): the first field that does not fit, as a field-by-field read
/// reports it.
#[cold]
#[inline(never)]
fn short_header(offset: usize, have: usize) -> WireError {
    if have < 2 {
        WireError::Truncated {
            offset: offset + 1,
            needed: 1,
            have: 0,
        }
    } else {
        WireError::Truncated {
            offset: offset + 2,
            needed: 2,
            have: have - 2,
        }
    }
}

impl<'a> Iterator for RawSubmessages<'a> {
    type Item = Result<RawSubmessage<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.step() {
            Ok(Some(s)) => Some(Ok(s)),
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

impl core::iter::FusedIterator for RawSubmessages<'_> {}

/// Iterator over the parsed submessages of a message; fused after an error.
#[derive(Debug, Clone)]
pub struct Submessages<'a> {
    raw: RawSubmessages<'a>,
}

impl<'a> Iterator for Submessages<'a> {
    type Item = Result<Submessage<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let item = self.raw.next()?.and_then(|raw| raw.parse());
        if item.is_err() {
            self.raw.done = true;
        }
        Some(item)
    }
}

impl core::iter::FusedIterator for Submessages<'_> {}

/// Builds an RTPS message in a caller-owned buffer: the header first, then
/// submessages appended with [`MessageWriter::push`]. Never allocates.
#[derive(Debug)]
pub struct MessageWriter<'b> {
    buf: &'b mut [u8],
    len: usize,
}

impl<'b> MessageWriter<'b> {
    /// Writes `header` at the start of `buf`.
    #[inline]
    pub fn new(buf: &'b mut [u8], header: &Header) -> Result<Self> {
        let len = header.write(buf)?;
        Ok(Self { buf, len })
    }

    /// Appends a submessage in byte order `endian`; returns its size. On error
    /// (`BufferTooSmall`, …) the message is unchanged.
    #[inline]
    pub fn push<S: Encode + ?Sized>(
        &mut self,
        submessage: &S,
        endian: Endianness,
    ) -> Result<usize> {
        // Every `write` checks its room before writing anything, so the
        // size is only computed (for the error) when it fails.
        let len = self.len;
        let out = self.buf.get_mut(len..).unwrap_or(&mut []);
        match submessage.write(endian, out) {
            Ok(n) => {
                self.len += n;
                Ok(n)
            }
            Err(e) => Err(self.push_error(submessage.encoded_len(), e)),
        }
    }

    /// The error of a failed push: `BufferTooSmall` for the whole message if
    /// the submessage (`needed` bytes) does not fit, else the write's error.
    #[cold]
    #[inline(never)]
    fn push_error(&self, needed: usize, e: WireError) -> WireError {
        if needed > self.remaining() {
            WireError::BufferTooSmall {
                needed: self.len + needed,
                have: self.buf.len(),
            }
        } else {
            e
        }
    }

    /// Appends already-encoded submessage bytes.
    pub fn push_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let len = self.len;
        let have = self.buf.len();
        let dst = self
            .buf
            .get_mut(len..len + bytes.len())
            .ok_or(WireError::BufferTooSmall {
                needed: len + bytes.len(),
                have,
            })?;
        dst.copy_from_slice(bytes);
        self.len += bytes.len();
        Ok(())
    }

    /// Bytes written so far (header included).
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether no submessage was appended yet.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len <= Header::SIZE
    }

    /// Bytes still free in the buffer.
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.len)
    }

    /// Drops everything after the first `len` bytes (never below the header),
    /// e.g. to undo a partially built batch.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len.max(Header::SIZE));
    }

    /// The message written so far.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }

    /// Finishes and returns the message bytes.
    #[must_use]
    pub fn finish(self) -> &'b [u8] {
        let len = self.len;
        let buf: &'b [u8] = self.buf;
        buf.get(..len).unwrap_or(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::submessage::{Heartbeat, InfoDst, InfoTs, Pad};
    use crate::types::{Count, EntityId, GuidPrefix, SequenceNumber, Time};

    fn hb() -> Heartbeat {
        Heartbeat {
            reader_id: EntityId::UNKNOWN,
            writer_id: EntityId::SEDP_BUILTIN_PUBLICATIONS_ANNOUNCER,
            first_sn: SequenceNumber(1),
            last_sn: SequenceNumber(4),
            count: Count(1),
            final_flag: false,
            liveliness: false,
            group_info: None,
        }
    }

    fn build(buf: &mut [u8]) -> usize {
        let mut w = MessageWriter::new(buf, &Header::new(GuidPrefix([7; 12]))).unwrap();
        assert!(w.is_empty());
        w.push(
            &InfoDst {
                guid_prefix: GuidPrefix([9; 12]),
            },
            Endianness::Little,
        )
        .unwrap();
        w.push(
            &InfoTs {
                timestamp: Some(Time::from_nanos(5)),
            },
            Endianness::Big,
        )
        .unwrap();
        w.push(&hb(), Endianness::Little).unwrap();
        w.finish().len()
    }

    #[test]
    fn write_then_iterate() {
        let mut buf = [0u8; 128];
        let n = build(&mut buf);
        assert_eq!(n, 20 + 16 + 12 + 32);
        let m = MessageView::parse(&buf[..n]).unwrap();
        assert_eq!(m.header().guid_prefix, GuidPrefix([7; 12]));
        let subs: [Submessage<'_>; 3] = {
            let mut it = m.submessages();
            let a = it.next().unwrap().unwrap();
            let b = it.next().unwrap().unwrap();
            let c = it.next().unwrap().unwrap();
            assert!(it.next().is_none());
            [a, b, c]
        };
        assert_eq!(subs[2], Submessage::Heartbeat(hb()));
        let raw: [RawSubmessage<'_>; 3] = {
            let mut it = m.raw_submessages();
            [
                it.next().unwrap().unwrap(),
                it.next().unwrap().unwrap(),
                it.next().unwrap().unwrap(),
            ]
        };
        assert_eq!(raw[1].offset, 36);
        assert_eq!(raw[1].endianness(), Endianness::Big);
        assert_eq!(raw[2].endianness(), Endianness::Little);
        // re-emission of each submessage with its own byte order is identical
        for (s, r) in subs.iter().zip(raw.iter()) {
            let mut out = [0u8; 64];
            let k = s.write(r.endianness(), &mut out).unwrap();
            assert_eq!(&out[..k], r.bytes);
        }
    }

    #[test]
    fn zero_length_last_submessage_extends_to_end() {
        let mut buf = [0u8; 128];
        let n = build(&mut buf);
        // HEARTBEAT is last: octetsToNextHeader 0 means "to the end"
        buf[20 + 16 + 12 + 2] = 0;
        let m = MessageView::parse(&buf[..n]).unwrap();
        let last = m.submessages().last().unwrap().unwrap();
        assert_eq!(last, Submessage::Heartbeat(hb()));
    }

    #[test]
    fn truncation_everywhere_is_an_error() {
        let mut buf = [0u8; 128];
        let n = build(&mut buf);
        let boundaries = [20usize, 36, 48, 80];
        for cut in 0..n {
            let bytes = &buf[..cut];
            let res = MessageView::parse(bytes).map(|m| m.submessages().find(|r| r.is_err()));
            if boundaries.contains(&cut) {
                assert!(matches!(res, Ok(None)), "cut {cut}: {res:?}");
            } else {
                assert!(
                    matches!(
                        res,
                        Err(WireError::Truncated { .. })
                            | Ok(Some(Err(WireError::Truncated { .. })))
                    ),
                    "cut {cut}: {res:?}"
                );
            }
        }
    }

    #[test]
    fn bad_length_and_fusing() {
        let mut buf = [0u8; 128];
        let n = build(&mut buf);
        // INFO_DST claims 200 bytes
        buf[22] = 200;
        let m = MessageView::parse(&buf[..n]).unwrap();
        let mut it = m.submessages();
        assert!(matches!(
            it.next(),
            Some(Err(WireError::Truncated { offset: 24, .. }))
        ));
        assert!(it.next().is_none());
        // INFO_DST claims 8 bytes: body too short, and the iterator stops
        buf[22] = 8;
        let m = MessageView::parse(&buf[..n]).unwrap();
        let mut it = m.submessages();
        assert_eq!(
            it.next(),
            Some(Err(WireError::BadSubmessageLength {
                offset: 20,
                id: 0x0e,
                length: 8
            }))
        );
        assert!(it.next().is_none());
    }

    #[test]
    fn writer_limits() {
        let mut buf = [0u8; 40];
        let mut w = MessageWriter::new(&mut buf, &Header::new(GuidPrefix::UNKNOWN)).unwrap();
        assert_eq!(w.push(&Pad { length: 12 }, Endianness::Big).unwrap(), 16);
        assert_eq!(
            w.push(&hb(), Endianness::Big),
            Err(WireError::BufferTooSmall {
                needed: 68,
                have: 40
            })
        );
        assert_eq!(w.len(), 36);
        w.truncate(0);
        assert_eq!(w.len(), 20);
        w.push_bytes(&[1, 0, 0, 0]).unwrap();
        assert_eq!(w.as_bytes().len(), 24);
    }
}
