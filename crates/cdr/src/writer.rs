//! The CDR encoder.

use crate::encapsulation::{Encoding, Endianness, XcdrVersion};
use crate::error::CdrError;
use crate::CdrType;

/// XCDR1 parameter id announcing an extended (12-byte) member header.
pub const PID_EXTENDED: u16 = 0x3f01;
/// XCDR1 parameter id terminating a parameter list.
pub const PID_LIST_END: u16 = 0x3f02;
/// XCDR1 parameter id of a parameter to be skipped.
pub const PID_IGNORE: u16 = 0x3f03;
/// XCDR1 must-understand flag in a short parameter id.
pub const PID_FLAG_MUST_UNDERSTAND: u16 = 0x4000;
/// XCDR1 implementation-specific flag in a short parameter id.
pub const PID_FLAG_IMPL: u16 = 0x8000;
/// Mask of the id bits in a short parameter id.
pub const PID_MASK: u16 = 0x3fff;
/// XCDR2 EMHEADER must-understand flag.
pub const EMHEADER_MUST_UNDERSTAND: u32 = 0x8000_0000;
/// XCDR2 EMHEADER member id mask (and the largest member id + 1 overall).
pub const MEMBER_ID_MASK: u32 = 0x0fff_ffff;

/// Appends CDR to a caller-owned buffer.
///
/// Alignment is counted from the buffer length at construction (the start of the CDR body),
/// so the caller may put the encapsulation header (or anything else) in the buffer first.
/// Writing primitives cannot fail; anything with a length can (a length must fit a `u32`,
/// a bounded value must respect its bound). The buffer is only ever appended to, except for
/// length fields patched in place by the `end_*` calls, so reusing one `Vec` across samples
/// makes the steady state allocation-free.
#[derive(Debug)]
pub struct CdrWriter<'a> {
    buf: &'a mut Vec<u8>,
    origin: usize,
    encoding: Encoding,
    max_align: usize,
}

/// A DHEADER whose length is patched by [`CdrWriter::end_dheader`].
#[derive(Debug)]
#[must_use = "pass the token to end_dheader"]
pub struct DheaderToken {
    at: usize,
}

/// An open mutable-type member; close it with [`CdrWriter::end_member`].
#[derive(Debug)]
#[must_use = "pass the token to end_member"]
pub struct MemberToken {
    header_at: usize,
    data_at: usize,
    saved_origin: usize,
    id: u32,
    must_understand: bool,
    kind: MemberKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemberKind {
    /// XCDR1 short header (pid, u16 length).
    PlShort,
    /// XCDR1 extended header (PID_EXTENDED, 8, id, u32 length).
    PlExtended,
    /// XCDR2 EMHEADER with LC 0..=3: length implied.
    EmFixed,
    /// XCDR2 EMHEADER with LC 4 and a NEXTINT length.
    EmNextInt,
}

/// Bytes from `pos` to the next multiple of `n` (a mask for the powers of two CDR
/// alignments are, a division otherwise).
#[inline]
pub(crate) fn padding(pos: usize, n: usize) -> usize {
    if n.is_power_of_two() {
        pos.wrapping_neg() & (n - 1)
    } else {
        (n - pos % n) % n
    }
}

macro_rules! write_prim {
    ($(#[$doc:meta] $name:ident : $t:ty),* $(,)?) => {$(
        #[$doc]
        #[inline]
        pub fn $name(&mut self, v: $t) {
            // The size is 1, 2, 4 or 8 and the cap 4 or 8: a power-of-two alignment.
            let a = core::mem::size_of::<$t>().min(self.max_align);
            let pad = self.position().wrapping_neg() & (a - 1);
            if pad != 0 {
                self.buf.resize(self.buf.len() + pad, 0);
            }
            match self.encoding.endianness {
                Endianness::Big => self.buf.extend_from_slice(&v.to_be_bytes()),
                Endianness::Little => self.buf.extend_from_slice(&v.to_le_bytes()),
            }
        }
    )*};
}

impl<'a> CdrWriter<'a> {
    /// A writer appending to `buf`; alignment origin = `buf.len()` now.
    pub fn new(buf: &'a mut Vec<u8>, encoding: Encoding) -> Self {
        let origin = buf.len();
        CdrWriter {
            buf,
            origin,
            encoding,
            max_align: encoding.max_align(),
        }
    }

    /// The encoding this writer produces.
    #[inline]
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// XCDR version shorthand.
    #[inline]
    pub fn version(&self) -> XcdrVersion {
        self.encoding.version
    }

    /// Bytes written since the current alignment origin.
    #[inline]
    pub fn position(&self) -> usize {
        self.buf.len() - self.origin
    }

    /// Pads with zeros to a multiple of `n` (capped at the encoding's maximum alignment).
    #[inline]
    pub fn align(&mut self, n: usize) {
        let n = n.min(self.max_align);
        if n > 1 {
            let pad = padding(self.position(), n);
            if pad != 0 {
                self.buf.resize(self.buf.len() + pad, 0);
            }
        }
    }

    write_prim! {
        /// Writes an `octet`/`uint8`.
        write_u8: u8,
        /// Writes an `int8`.
        write_i8: i8,
        /// Writes an `unsigned short`.
        write_u16: u16,
        /// Writes a `short`.
        write_i16: i16,
        /// Writes an `unsigned long`.
        write_u32: u32,
        /// Writes a `long`.
        write_i32: i32,
        /// Writes an `unsigned long long`.
        write_u64: u64,
        /// Writes a `long long`.
        write_i64: i64,
        /// Writes a `float`.
        write_f32: f32,
        /// Writes a `double`.
        write_f64: f64,
    }

    /// Writes a `boolean` (one octet, 0 or 1).
    #[inline]
    pub fn write_bool(&mut self, v: bool) {
        self.buf.push(u8::from(v));
    }

    /// Writes an 8-bit IDL `char`; fails for chars above U+00FF.
    #[inline]
    pub fn write_char(&mut self, v: char) -> Result<(), CdrError> {
        let c = u8::try_from(u32::from(v)).map_err(|_| CdrError::CharOutOfRange(v))?;
        self.buf.push(c);
        Ok(())
    }

    /// Appends raw bytes with no alignment and no length.
    #[inline]
    pub fn write_raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Writes a sequence length or string length (aligned u32).
    #[inline]
    pub fn write_len(&mut self, len: usize) -> Result<(), CdrError> {
        let v = u32::try_from(len).map_err(|_| CdrError::LengthOverflow(len))?;
        self.write_u32(v);
        Ok(())
    }

    /// Writes an unbounded `string`: u32 length including the NUL, the bytes, a NUL.
    ///
    /// A string containing a NUL fails with [`CdrError::InnerNul`]: peers reading it as a C
    /// string would see it cut at the NUL (and compute a different key hash).
    #[inline]
    pub fn write_string(&mut self, s: &str) -> Result<(), CdrError> {
        if let Some(at) = s.bytes().position(|b| b == 0) {
            return Err(CdrError::InnerNul { at });
        }
        self.write_len(s.len().saturating_add(1))?;
        self.buf.reserve(s.len() + 1);
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
        Ok(())
    }

    /// Writes a `string<bound>`; the bound counts bytes without the NUL.
    #[inline]
    pub fn write_bounded_string(&mut self, s: &str, bound: usize) -> Result<(), CdrError> {
        if s.len() > bound {
            return Err(CdrError::BoundExceeded {
                len: s.len(),
                bound,
            });
        }
        self.write_string(s)
    }

    /// Writes a `sequence<octet>`: u32 count and one copy of the bytes.
    #[inline]
    pub fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), CdrError> {
        self.write_len(bytes.len())?;
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// Serializes any [`CdrType`] value.
    #[inline]
    pub fn write<T: CdrType>(&mut self, v: &T) -> Result<(), CdrError> {
        v.serialize(self)
    }

    fn patch_u32(&mut self, at: usize, v: u32) {
        let b = match self.encoding.endianness {
            Endianness::Big => v.to_be_bytes(),
            Endianness::Little => v.to_le_bytes(),
        };
        self.buf[at..at + 4].copy_from_slice(&b);
    }

    fn patch_u16(&mut self, at: usize, v: u16) {
        let b = match self.encoding.endianness {
            Endianness::Big => v.to_be_bytes(),
            Endianness::Little => v.to_le_bytes(),
        };
        self.buf[at..at + 2].copy_from_slice(&b);
    }

    /// Starts an XCDR2 DHEADER (a u32 byte count of what follows, patched by
    /// [`end_dheader`](Self::end_dheader)). Callers only use this in XCDR2.
    #[inline]
    pub fn begin_dheader(&mut self) -> DheaderToken {
        self.align(4);
        let at = self.buf.len();
        self.buf.extend_from_slice(&[0; 4]);
        DheaderToken { at }
    }

    /// Patches the DHEADER opened by `token` with the bytes written since.
    #[inline]
    pub fn end_dheader(&mut self, token: DheaderToken) -> Result<(), CdrError> {
        let len = self.buf.len() - token.at - 4;
        let v = u32::try_from(len).map_err(|_| CdrError::LengthOverflow(len))?;
        self.patch_u32(token.at, v);
        Ok(())
    }

    /// Starts a mutable type: XCDR2 writes a DHEADER; XCDR1 writes nothing.
    #[inline]
    pub fn begin_mutable(&mut self) -> Option<DheaderToken> {
        match self.encoding.version {
            XcdrVersion::Xcdr1 => None,
            XcdrVersion::Xcdr2 => Some(self.begin_dheader()),
        }
    }

    /// Ends a mutable type: XCDR1 writes the PID_LIST_END sentinel; XCDR2 patches the DHEADER.
    #[inline]
    pub fn end_mutable(&mut self, token: Option<DheaderToken>) -> Result<(), CdrError> {
        match token {
            Some(t) => self.end_dheader(t),
            None => {
                self.align(4);
                self.write_u16(PID_LIST_END);
                self.write_u16(0);
                Ok(())
            }
        }
    }

    /// Opens member `id` of a mutable type.
    ///
    /// `primitive_size` is the member's fixed size if it is a primitive (1, 2, 4 or 8),
    /// else 0; in XCDR2 a primitive member gets an EMHEADER with LC 0..=3 and no NEXTINT.
    /// In XCDR1 the alignment origin moves to the member data, as XCDR1 parameter lists
    /// require; [`end_member`](Self::end_member) restores it.
    pub fn begin_member(
        &mut self,
        id: u32,
        must_understand: bool,
        primitive_size: usize,
    ) -> Result<MemberToken, CdrError> {
        if id > MEMBER_ID_MASK {
            return Err(CdrError::InvalidMemberId(id));
        }
        self.align(4);
        let header_at = self.buf.len();
        let saved_origin = self.origin;
        let kind = match self.encoding.version {
            XcdrVersion::Xcdr1 => {
                if id < 0x3f00 {
                    let mut pid = id as u16;
                    if must_understand {
                        pid |= PID_FLAG_MUST_UNDERSTAND;
                    }
                    self.write_u16(pid);
                    self.write_u16(0);
                    MemberKind::PlShort
                } else {
                    self.write_extended_header(id, must_understand, 0);
                    MemberKind::PlExtended
                }
            }
            XcdrVersion::Xcdr2 => {
                let mu = if must_understand {
                    EMHEADER_MUST_UNDERSTAND
                } else {
                    0
                };
                let lc = match primitive_size {
                    1 => Some(0u32),
                    2 => Some(1),
                    4 => Some(2),
                    8 => Some(3),
                    _ => None,
                };
                match lc {
                    Some(lc) => {
                        self.write_u32(mu | (lc << 28) | id);
                        MemberKind::EmFixed
                    }
                    None => {
                        self.write_u32(mu | (4 << 28) | id);
                        self.write_u32(0);
                        MemberKind::EmNextInt
                    }
                }
            }
        };
        let data_at = self.buf.len();
        if self.encoding.version == XcdrVersion::Xcdr1 {
            self.origin = data_at;
        }
        Ok(MemberToken {
            header_at,
            data_at,
            saved_origin,
            id,
            must_understand,
            kind,
        })
    }

    fn write_extended_header(&mut self, id: u32, must_understand: bool, len: u32) {
        let mut pid = PID_EXTENDED;
        if must_understand {
            pid |= PID_FLAG_MUST_UNDERSTAND;
        }
        self.write_u16(pid);
        self.write_u16(8);
        self.write_u32(id);
        self.write_u32(len);
    }

    /// Closes a member opened by [`begin_member`](Self::begin_member), patching its length.
    pub fn end_member(&mut self, token: MemberToken) -> Result<(), CdrError> {
        match token.kind {
            MemberKind::EmFixed => {}
            MemberKind::EmNextInt => {
                let len = self.buf.len() - token.data_at;
                let v = u32::try_from(len).map_err(|_| CdrError::LengthOverflow(len))?;
                self.patch_u32(token.data_at - 4, v);
            }
            MemberKind::PlShort | MemberKind::PlExtended => {
                // Pad the member data to 4 so the next header is aligned; the padding is
                // counted in the parameter length, as in RTPS parameter lists.
                self.align(4);
                let len = self.buf.len() - token.data_at;
                let v = u32::try_from(len).map_err(|_| CdrError::LengthOverflow(len))?;
                if token.kind == MemberKind::PlExtended {
                    self.patch_u32(token.data_at - 4, v);
                } else if let Ok(short) = u16::try_from(v) {
                    self.patch_u16(token.header_at + 2, short);
                } else {
                    // Too long for a short header: widen it in place. The data keeps its
                    // alignment because it is aligned relative to its own start.
                    let mut ext = Vec::with_capacity(12);
                    {
                        let mut w = CdrWriter::new(&mut ext, self.encoding);
                        w.write_extended_header(token.id, token.must_understand, v);
                    }
                    self.buf.splice(token.header_at..token.data_at, ext);
                }
            }
        }
        self.origin = token.saved_origin;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitives_align_from_origin() {
        let mut buf = vec![0xaa, 0xbb, 0xcc, 0xdd];
        let mut w = CdrWriter::new(&mut buf, Encoding::XCDR1_LE);
        w.write_u8(1);
        w.write_u16(0x0203);
        w.write_u8(4);
        w.write_u64(0x0506);
        assert_eq!(&buf[4..], &[1, 0, 3, 2, 4, 0, 0, 0, 6, 5, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn xcdr2_caps_alignment_at_4() {
        let mut buf = Vec::new();
        let mut w = CdrWriter::new(&mut buf, Encoding::XCDR2_BE);
        w.write_u8(1);
        w.write_f64(1.0);
        assert_eq!(buf, [1, 0, 0, 0, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn strings_and_bounds() {
        let mut buf = Vec::new();
        let mut w = CdrWriter::new(&mut buf, Encoding::XCDR1_BE);
        w.write_string("hi").unwrap();
        assert_eq!(
            w.write_bounded_string("abc", 2),
            Err(CdrError::BoundExceeded { len: 3, bound: 2 })
        );
        assert_eq!(w.write_char('é'), Ok(()));
        assert_eq!(w.write_char('€'), Err(CdrError::CharOutOfRange('€')));
        // An inner NUL would make C readers see "a": refused, nothing written.
        assert_eq!(w.write_string("a\0b"), Err(CdrError::InnerNul { at: 1 }));
        assert_eq!(
            w.write_bounded_string("\0", 4),
            Err(CdrError::InnerNul { at: 0 })
        );
        assert_eq!(buf, [0, 0, 0, 3, b'h', b'i', 0, 0xe9]);
    }

    #[test]
    fn dheader_patched() {
        let mut buf = Vec::new();
        let mut w = CdrWriter::new(&mut buf, Encoding::XCDR2_LE);
        w.write_u8(9);
        let t = w.begin_dheader();
        w.write_u16(7);
        w.write_u8(1);
        w.end_dheader(t).unwrap();
        assert_eq!(buf, [9, 0, 0, 0, 3, 0, 0, 0, 7, 0, 1]);
    }

    #[test]
    fn xcdr1_long_member_widens_header() {
        let mut buf = Vec::new();
        let mut w = CdrWriter::new(&mut buf, Encoding::XCDR1_LE);
        let t = w.begin_member(5, true, 0).unwrap();
        w.write_bytes(&[7u8; 70_000]).unwrap();
        w.end_member(t).unwrap();
        // 70_004 bytes of data (count + bytes), already a multiple of 4.
        assert_eq!(&buf[..4], &[0x01, 0x7f, 8, 0]);
        assert_eq!(&buf[4..8], &5u32.to_le_bytes());
        assert_eq!(&buf[8..12], &70_004u32.to_le_bytes());
        assert_eq!(&buf[12..16], &70_000u32.to_le_bytes());
        assert_eq!(buf.len(), 12 + 70_004);
    }

    #[test]
    fn xcdr1_member_alignment_is_relative_to_member_start() {
        let mut buf = Vec::new();
        let mut w = CdrWriter::new(&mut buf, Encoding::XCDR1_BE);
        let t = w.begin_member(1, false, 8).unwrap();
        w.write_u64(1);
        w.end_member(t).unwrap();
        let t = w.begin_mutable();
        assert!(t.is_none());
        w.end_mutable(t).unwrap();
        assert_eq!(buf, [0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1, 0x3f, 0x02, 0, 0]);
    }

    #[test]
    fn member_id_limit() {
        let mut buf = Vec::new();
        let mut w = CdrWriter::new(&mut buf, Encoding::XCDR2_LE);
        assert_eq!(
            w.begin_member(0x1000_0000, false, 4).map(|_| ()),
            Err(CdrError::InvalidMemberId(0x1000_0000))
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn xcdr2_emheaders() {
        let mut buf = Vec::new();
        let mut w = CdrWriter::new(&mut buf, Encoding::XCDR2_BE);
        let d = w.begin_mutable();
        let t = w.begin_member(3, false, 2).unwrap();
        w.write_u16(0x0102);
        w.end_member(t).unwrap();
        let t = w.begin_member(4, true, 0).unwrap();
        w.write_string("a").unwrap();
        w.end_member(t).unwrap();
        w.end_mutable(d).unwrap();
        #[rustfmt::skip]
        let expect = [
            0, 0, 0, 22,             // DHEADER
            0x10, 0, 0, 3, 1, 2,     // LC=1, id 3, u16
            0, 0,                    // pad to 4
            0xc0, 0, 0, 4, 0, 0, 0, 6, // M|LC=4 id 4, NEXTINT 6
            0, 0, 0, 2, b'a', 0,     // string
        ];
        assert_eq!(buf, expect);
    }
}
