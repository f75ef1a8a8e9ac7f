//! Byte order and the bounds-checked cursor/writer used by every codec in the crate.

use crate::error::{Result, WireError};

/// Byte order of a submessage body or parameter list (RTPS 2.5 §9.4.5.1.2: the
/// submessage E flag, bit 0x01, set means little-endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endianness {
    /// Big-endian (E flag clear, CDR_BE / PL_CDR_BE).
    Big,
    /// Little-endian (E flag set, CDR_LE / PL_CDR_LE).
    Little,
}

impl Endianness {
    /// The byte order of the machine running this code.
    #[cfg(target_endian = "little")]
    pub const NATIVE: Endianness = Endianness::Little;
    /// The byte order of the machine running this code.
    #[cfg(target_endian = "big")]
    pub const NATIVE: Endianness = Endianness::Big;

    /// Byte order selected by a submessage flags byte (bit 0x01).
    #[must_use]
    #[inline]
    pub const fn from_flags(flags: u8) -> Self {
        if flags & 0x01 != 0 {
            Endianness::Little
        } else {
            Endianness::Big
        }
    }

    /// The E flag bit for this byte order (0x01 for little, 0 for big).
    #[must_use]
    #[inline]
    pub const fn flag(self) -> u8 {
        match self {
            Endianness::Big => 0,
            Endianness::Little => 0x01,
        }
    }
}

/// Rounds `n` up to a multiple of 4.
#[must_use]
#[inline]
pub const fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

/// A bounds-checked reader over a byte slice. `base` is added to positions in
/// error offsets so they are relative to the start of the enclosing buffer.
///
/// Every method is `#[inline]`: the parsers run on each received submessage,
/// and once inlined the checks of consecutive fixed-size reads from a block
/// of known length (see [`Reader::block`]) fold away, leaving plain loads.
/// Error construction is kept out of line (`#[cold]`).
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
    pub(crate) endian: Endianness,
}

impl<'a> Reader<'a> {
    #[inline]
    pub(crate) fn new(buf: &'a [u8], base: usize, endian: Endianness) -> Self {
        Reader {
            buf,
            pos: 0,
            base,
            endian,
        }
    }

    /// Absolute offset (base + position).
    #[inline]
    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos
    }

    #[inline]
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    #[inline]
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }

    /// The `Truncated` error for a read of `n` bytes at the current position.
    #[cold]
    #[inline(never)]
    fn truncated(&self, n: usize) -> WireError {
        WireError::Truncated {
            offset: self.offset(),
            needed: n,
            have: self.remaining(),
        }
    }

    #[inline]
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        match self.rest().get(..n) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(self.truncated(n)),
        }
    }

    /// Everything left (cannot fail).
    #[inline]
    pub(crate) fn take_rest(&mut self) -> &'a [u8] {
        let rest = self.rest();
        self.pos += rest.len();
        rest
    }

    /// The next `N` bytes as an array reference (one bounds check).
    #[inline]
    pub(crate) fn fixed<const N: usize>(&mut self) -> Result<&'a [u8; N]> {
        match self.rest().first_chunk::<N>() {
            Some(a) => {
                self.pos += N;
                Ok(a)
            }
            None => Err(self.truncated(N)),
        }
    }

    /// Takes the next `N` bytes (one bounds check) and returns a reader over
    /// exactly them, in the same byte order and with matching error offsets.
    /// Reads of fixed-size fields from it cannot fail, and once inlined the
    /// compiler sees that: a block of fields costs a single check.
    #[inline]
    pub(crate) fn block<const N: usize>(&mut self) -> Result<Reader<'a>> {
        let base = self.offset();
        let bytes: &'a [u8; N] = self.fixed()?;
        Ok(Reader::new(bytes, base, self.endian))
    }

    #[inline]
    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        self.fixed().copied()
    }

    #[inline]
    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    #[inline]
    pub(crate) fn u16(&mut self) -> Result<u16> {
        let a = self.array::<2>()?;
        Ok(match self.endian {
            Endianness::Big => u16::from_be_bytes(a),
            Endianness::Little => u16::from_le_bytes(a),
        })
    }

    #[inline]
    pub(crate) fn u32(&mut self) -> Result<u32> {
        let a = self.array::<4>()?;
        Ok(match self.endian {
            Endianness::Big => u32::from_be_bytes(a),
            Endianness::Little => u32::from_le_bytes(a),
        })
    }

    #[inline]
    pub(crate) fn i32(&mut self) -> Result<i32> {
        Ok(self.u32()? as i32)
    }

    /// Skips up to the next multiple of `align` relative to the reader start.
    #[inline]
    pub(crate) fn align(&mut self, align: usize) -> Result<()> {
        let pad = (align - self.pos % align) % align;
        self.take(pad).map(|_| ())
    }
}

/// A bounds-checked writer over a caller-owned byte slice (errors out of
/// line, as for [`Reader`]). The field writes are `#[inline(always)]`: into
/// a block of known size (see `write_sized`) their checks then fold away.
#[derive(Debug)]
pub(crate) struct Writer<'b> {
    buf: &'b mut [u8],
    pos: usize,
    pub(crate) endian: Endianness,
}

impl<'b> Writer<'b> {
    #[inline]
    pub(crate) fn new(buf: &'b mut [u8], endian: Endianness) -> Self {
        Writer {
            buf,
            pos: 0,
            endian,
        }
    }

    #[inline]
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// The `BufferTooSmall` error for a write of `n` bytes at the current position.
    #[cold]
    #[inline(never)]
    fn too_small(&self, n: usize) -> WireError {
        WireError::BufferTooSmall {
            needed: self.pos.saturating_add(n),
            have: self.buf.len(),
        }
    }

    /// The next `n` bytes of the buffer, advancing past them.
    #[inline(always)]
    fn slot(&mut self, n: usize) -> Result<&mut [u8]> {
        let pos = self.pos;
        if self.buf.len() - pos < n {
            return Err(self.too_small(n));
        }
        self.pos = pos + n;
        Ok(self.buf.get_mut(pos..pos + n).unwrap_or(&mut []))
    }

    #[inline(always)]
    pub(crate) fn put(&mut self, bytes: &[u8]) -> Result<()> {
        let dst = self.slot(bytes.len())?;
        dst.copy_from_slice(bytes);
        Ok(())
    }

    #[inline]
    pub(crate) fn zeros(&mut self, n: usize) -> Result<()> {
        // Usually 0 (no padding needed): skip the fill (a memset call).
        if n != 0 {
            self.slot(n)?.fill(0);
        }
        Ok(())
    }

    /// Pads with zeros to the next multiple of 4 relative to the writer start.
    #[inline]
    pub(crate) fn pad4(&mut self) -> Result<()> {
        let n = pad4(self.pos) - self.pos;
        self.zeros(n)
    }

    #[inline(always)]
    pub(crate) fn u8(&mut self, v: u8) -> Result<()> {
        self.put(&[v])
    }

    #[inline(always)]
    pub(crate) fn u16(&mut self, v: u16) -> Result<()> {
        match self.endian {
            Endianness::Big => self.put(&v.to_be_bytes()),
            Endianness::Little => self.put(&v.to_le_bytes()),
        }
    }

    #[inline(always)]
    pub(crate) fn i16(&mut self, v: i16) -> Result<()> {
        self.u16(v as u16)
    }

    #[inline(always)]
    pub(crate) fn u32(&mut self, v: u32) -> Result<()> {
        match self.endian {
            Endianness::Big => self.put(&v.to_be_bytes()),
            Endianness::Little => self.put(&v.to_le_bytes()),
        }
    }

    #[inline(always)]
    pub(crate) fn i32(&mut self, v: i32) -> Result<()> {
        self.u32(v as u32)
    }
}

/// Checks that `out` holds at least `needed` bytes.
#[inline]
pub(crate) fn check_room(out: &[u8], needed: usize) -> Result<()> {
    if out.len() < needed {
        Err(WireError::BufferTooSmall {
            needed,
            have: out.len(),
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_reads_both_orders_and_reports_truncation() {
        let bytes = [0x01, 0x02, 0x03, 0x04, 0x05];
        let mut r = Reader::new(&bytes, 10, Endianness::Big);
        assert_eq!(r.u32().unwrap(), 0x0102_0304);
        assert_eq!(
            r.u16(),
            Err(WireError::Truncated {
                offset: 14,
                needed: 2,
                have: 1
            })
        );
        let mut r = Reader::new(&bytes, 0, Endianness::Little);
        assert_eq!(r.u16().unwrap(), 0x0201);
        assert_eq!(r.u8().unwrap(), 3);
        r.align(4).unwrap();
        assert_eq!(r.remaining(), 1);
    }

    #[test]
    fn writer_reports_too_small() {
        let mut buf = [0u8; 3];
        let mut w = Writer::new(&mut buf, Endianness::Little);
        w.u16(0x0102).unwrap();
        assert_eq!(
            w.u16(1),
            Err(WireError::BufferTooSmall { needed: 4, have: 3 })
        );
        assert_eq!(buf, [0x02, 0x01, 0]);
    }

    #[test]
    fn flags_map_to_endianness() {
        assert_eq!(Endianness::from_flags(0x03), Endianness::Little);
        assert_eq!(Endianness::from_flags(0x02), Endianness::Big);
        assert_eq!(Endianness::Little.flag(), 1);
        assert_eq!(pad4(5), 8);
        assert_eq!(pad4(8), 8);
    }
}
