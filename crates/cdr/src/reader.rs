//! The CDR decoder.

use crate::encapsulation::{Encoding, Endianness, XcdrVersion};
use crate::error::CdrError;
use crate::writer::{
    EMHEADER_MUST_UNDERSTAND, MEMBER_ID_MASK, PID_EXTENDED, PID_FLAG_MUST_UNDERSTAND, PID_IGNORE,
    PID_LIST_END, PID_MASK,
};
use crate::CdrType;

/// Reads CDR from a borrowed byte slice (the body after the encapsulation header).
///
/// Every read checks the bytes left in the current scope first: malformed or truncated
/// input yields a [`CdrError`], never a panic, and no read allocates memory based on a
/// length taken from the input before checking that the input holds at least that many
/// bytes. DHEADERs and member headers narrow the scope to the bytes they announce.
#[derive(Debug, Clone)]
pub struct CdrReader<'a> {
    data: &'a [u8],
    pos: usize,
    end: usize,
    origin: usize,
    encoding: Encoding,
    max_align: usize,
    depth: usize,
}

/// Deepest nesting of aggregated types (structs) [`CdrReader`] decodes before failing with
/// [`CdrError::TooDeep`]. Derived types count one level each; only recursive types (a struct
/// containing a `Vec` of itself) can reach it, and without it such input could exhaust the
/// stack.
pub const MAX_NESTING_DEPTH: usize = 100;

/// A narrowed region of the input opened by a DHEADER or a member header.
#[derive(Debug)]
#[must_use = "pass the scope back to the reader to leave it"]
pub struct Scope {
    end: usize,
    saved_end: usize,
    saved_origin: usize,
}

/// State of a mutable type being decoded (see [`CdrReader::begin_mutable`]).
#[derive(Debug)]
#[must_use = "pass to end_mutable"]
pub struct MutableScope {
    dheader: Option<Scope>,
}

/// A member header of a mutable type; its scope covers exactly the member data.
#[derive(Debug)]
#[must_use = "pass to end_member"]
pub struct MemberHeader {
    id: u32,
    must_understand: bool,
    scope: Scope,
}

impl MemberHeader {
    /// Member id.
    pub fn id(&self) -> u32 {
        self.id
    }
    /// Whether the writer flagged the member must-understand.
    pub fn must_understand(&self) -> bool {
        self.must_understand
    }
}

macro_rules! read_prim {
    ($(#[$doc:meta] $name:ident : $t:ty),* $(,)?) => {$(
        #[$doc]
        #[inline]
        pub fn $name(&mut self) -> Result<$t, CdrError> {
            const N: usize = core::mem::size_of::<$t>();
            self.align(N)?;
            let b = self.take_array::<N>()?;
            Ok(match self.encoding.endianness {
                Endianness::Big => <$t>::from_be_bytes(b),
                Endianness::Little => <$t>::from_le_bytes(b),
            })
        }
    )*};
}

impl<'a> CdrReader<'a> {
    /// A reader over `data`; alignment counts from `data[0]`.
    pub fn new(data: &'a [u8], encoding: Encoding) -> Self {
        CdrReader {
            data,
            pos: 0,
            end: data.len(),
            origin: 0,
            encoding,
            max_align: encoding.max_align(),
            depth: 0,
        }
    }

    /// Enters one level of aggregated-type nesting (called by derived `deserialize`
    /// implementations before reading a struct's members); fails with
    /// [`CdrError::TooDeep`] beyond [`MAX_NESTING_DEPTH`]. Pair with
    /// [`leave_nested`](Self::leave_nested).
    #[inline]
    pub fn enter_nested(&mut self) -> Result<(), CdrError> {
        if self.depth >= MAX_NESTING_DEPTH {
            return Err(CdrError::TooDeep {
                max: MAX_NESTING_DEPTH,
            });
        }
        self.depth += 1;
        Ok(())
    }

    /// Leaves a level entered with [`enter_nested`](Self::enter_nested).
    #[inline]
    pub fn leave_nested(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// The encoding being read.
    #[inline]
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// XCDR version shorthand.
    #[inline]
    pub fn version(&self) -> XcdrVersion {
        self.encoding.version
    }

    /// Offset from the start of the body.
    #[inline]
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// Bytes left in the current scope.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.end - self.pos
    }

    #[inline]
    fn truncated(&self, needed: usize) -> CdrError {
        CdrError::Truncated {
            offset: self.pos,
            needed,
            have: self.remaining(),
        }
    }

    /// Skips padding to a multiple of `n` (capped at the encoding's maximum alignment).
    #[inline]
    pub fn align(&mut self, n: usize) -> Result<(), CdrError> {
        let n = n.min(self.max_align);
        if n > 1 {
            let pad = crate::writer::padding(self.pos - self.origin, n);
            if pad > self.remaining() {
                return Err(self.truncated(pad));
            }
            self.pos += pad;
        }
        Ok(())
    }

    /// Takes the next `n` bytes, unaligned.
    #[inline]
    pub fn read_raw(&mut self, n: usize) -> Result<&'a [u8], CdrError> {
        if n > self.remaining() {
            return Err(self.truncated(n));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    #[inline]
    fn take_array<const N: usize>(&mut self) -> Result<[u8; N], CdrError> {
        let rest = &self.data[self.pos..self.end];
        match rest.first_chunk::<N>() {
            Some(b) => {
                self.pos += N;
                Ok(*b)
            }
            None => Err(self.truncated(N)),
        }
    }

    /// Skips `n` bytes.
    #[inline]
    pub fn skip(&mut self, n: usize) -> Result<(), CdrError> {
        self.read_raw(n).map(|_| ())
    }

    read_prim! {
        /// Reads an `octet`/`uint8`.
        read_u8: u8,
        /// Reads an `int8`.
        read_i8: i8,
        /// Reads an `unsigned short`.
        read_u16: u16,
        /// Reads a `short`.
        read_i16: i16,
        /// Reads an `unsigned long`.
        read_u32: u32,
        /// Reads a `long`.
        read_i32: i32,
        /// Reads an `unsigned long long`.
        read_u64: u64,
        /// Reads a `long long`.
        read_i64: i64,
        /// Reads a `float`.
        read_f32: f32,
        /// Reads a `double`.
        read_f64: f64,
    }

    /// Reads a `boolean`; octets other than 0 and 1 are [`CdrError::InvalidBool`].
    #[inline]
    pub fn read_bool(&mut self) -> Result<bool, CdrError> {
        match self.read_u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(CdrError::InvalidBool(b)),
        }
    }

    /// Reads an 8-bit IDL `char` (as Latin-1).
    #[inline]
    pub fn read_char(&mut self) -> Result<char, CdrError> {
        Ok(char::from(self.read_u8()?))
    }

    /// Reads a sequence/string length. The value is not checked against the input here;
    /// callers check it (times a minimum element size) against [`remaining`](Self::remaining).
    #[inline]
    pub fn read_len(&mut self) -> Result<usize, CdrError> {
        Ok(self.read_u32()? as usize)
    }

    /// Reads a `string` without copying. A zero length is accepted as the empty string.
    pub fn read_str(&mut self) -> Result<&'a str, CdrError> {
        self.read_bounded_str(usize::MAX)
    }

    /// Reads a `string<bound>` without copying (bound counts bytes without the NUL).
    pub fn read_bounded_str(&mut self, bound: usize) -> Result<&'a str, CdrError> {
        let len = self.read_len()?;
        if len == 0 {
            return Ok("");
        }
        if len - 1 > bound {
            return Err(CdrError::BoundExceeded {
                len: len - 1,
                bound,
            });
        }
        let offset = self.pos;
        let bytes = self.read_raw(len)?;
        let (last, text) = bytes.split_last().ok_or(CdrError::MissingNul { offset })?;
        if *last != 0 {
            return Err(CdrError::MissingNul { offset });
        }
        core::str::from_utf8(text).map_err(|_| CdrError::InvalidUtf8 { offset })
    }

    /// Reads a `string` into a new `String`.
    #[inline]
    pub fn read_string(&mut self) -> Result<String, CdrError> {
        self.read_str().map(String::from)
    }

    /// Reads a `sequence<octet>` without copying.
    #[inline]
    pub fn read_bytes(&mut self) -> Result<&'a [u8], CdrError> {
        let n = self.read_len()?;
        self.read_raw(n)
    }

    /// Deserializes any [`CdrType`] value.
    #[inline]
    pub fn read<T: CdrType>(&mut self) -> Result<T, CdrError> {
        T::deserialize(self)
    }

    /// Checks that `count` elements of at least `min_size` bytes each (0 counts as 1) can
    /// still be in the input; call before allocating for `count` elements.
    #[inline]
    pub fn check_count(&self, count: usize, min_size: usize) -> Result<(), CdrError> {
        let needed = count.saturating_mul(min_size.max(1));
        if needed > self.remaining() {
            return Err(self.truncated(needed));
        }
        Ok(())
    }

    /// Narrows the input to the next `len` bytes until [`end_scope`](Self::end_scope).
    pub fn enter_scope(&mut self, len: usize) -> Result<Scope, CdrError> {
        if len > self.remaining() {
            return Err(self.truncated(len));
        }
        let scope = Scope {
            end: self.pos + len,
            saved_end: self.end,
            saved_origin: self.origin,
        };
        self.end = scope.end;
        Ok(scope)
    }

    /// Leaves a scope: skips whatever of it was not read (e.g. members appended by a newer
    /// version of an appendable type) and restores the outer limit and alignment origin.
    pub fn end_scope(&mut self, scope: Scope) {
        self.pos = scope.end;
        self.end = scope.saved_end;
        self.origin = scope.saved_origin;
    }

    /// Reads an XCDR2 DHEADER and enters the scope it delimits.
    #[inline]
    pub fn begin_dheader(&mut self) -> Result<Scope, CdrError> {
        let len = self.read_len()?;
        self.enter_scope(len)
    }

    /// Starts decoding a mutable type (reads the DHEADER in XCDR2).
    pub fn begin_mutable(&mut self) -> Result<MutableScope, CdrError> {
        Ok(MutableScope {
            dheader: match self.encoding.version {
                XcdrVersion::Xcdr1 => None,
                XcdrVersion::Xcdr2 => Some(self.begin_dheader()?),
            },
        })
    }

    /// Ends a mutable type started by [`begin_mutable`](Self::begin_mutable).
    pub fn end_mutable(&mut self, scope: MutableScope) {
        if let Some(s) = scope.dheader {
            self.end_scope(s);
        }
    }

    /// Reads the next member header of a mutable type, or `None` at its end (XCDR1: the
    /// PID_LIST_END sentinel, which is required; XCDR2: the end of the DHEADER).
    /// XCDR1 PID_IGNORE parameters are skipped. The returned header's scope covers the
    /// member data; pass it to [`end_member`](Self::end_member) after reading the value.
    pub fn next_member(&mut self) -> Result<Option<MemberHeader>, CdrError> {
        match self.encoding.version {
            XcdrVersion::Xcdr1 => loop {
                self.align(4)?;
                let offset = self.pos;
                // A parameter list must end with PID_LIST_END; running out of input first
                // is a truncation.
                let raw = self.read_u16()?;
                let slen = self.read_u16()?;
                let pid = raw & PID_MASK;
                let mut must_understand = raw & PID_FLAG_MUST_UNDERSTAND != 0;
                let (id, len) = match pid {
                    PID_LIST_END => return Ok(None),
                    PID_IGNORE => {
                        self.skip(usize::from(slen))?;
                        continue;
                    }
                    PID_EXTENDED => {
                        if slen != 8 {
                            return Err(CdrError::BadMemberHeader { offset });
                        }
                        let id_raw = self.read_u32()?;
                        let len = self.read_len()?;
                        if id_raw & 0x4000_0000 != 0 {
                            must_understand = true;
                        }
                        (id_raw & MEMBER_ID_MASK, len)
                    }
                    p if p >= 0x3f00 => return Err(CdrError::BadMemberHeader { offset }),
                    p => (u32::from(p), usize::from(slen)),
                };
                let scope = self.enter_scope(len)?;
                self.origin = self.pos;
                return Ok(Some(MemberHeader {
                    id,
                    must_understand,
                    scope,
                }));
            },
            XcdrVersion::Xcdr2 => {
                if self.remaining() == 0 {
                    return Ok(None);
                }
                self.align(4)?;
                if self.remaining() == 0 {
                    return Ok(None);
                }
                let offset = self.pos;
                let h = self.read_u32()?;
                let must_understand = h & EMHEADER_MUST_UNDERSTAND != 0;
                let id = h & MEMBER_ID_MASK;
                let lc = (h >> 28) & 7;
                let len = match lc {
                    0..=3 => 1usize << lc,
                    4 => self.read_len()?,
                    _ => {
                        // NEXTINT doubles as the member's own first u32 (length or count):
                        // peek it without consuming.
                        let mut peek = self.clone();
                        let n = peek.read_len()?;
                        let unit: usize = match lc {
                            5 => 1,
                            6 => 4,
                            _ => 8,
                        };
                        n.checked_mul(unit)
                            .and_then(|b| b.checked_add(4))
                            .ok_or(CdrError::BadMemberHeader { offset })?
                    }
                };
                let scope = self.enter_scope(len)?;
                Ok(Some(MemberHeader {
                    id,
                    must_understand,
                    scope,
                }))
            }
        }
    }

    /// Finishes a member: skips any unread member data and leaves its scope.
    #[inline]
    pub fn end_member(&mut self, member: MemberHeader) {
        self.end_scope(member.scope);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitives_both_orders() {
        let le = [1u8, 0, 3, 2, 4, 0, 0, 0, 6, 5, 0, 0, 0, 0, 0, 0];
        let mut r = CdrReader::new(&le, Encoding::XCDR1_LE);
        assert_eq!(r.read_u8(), Ok(1));
        assert_eq!(r.read_u16(), Ok(0x0203));
        assert_eq!(r.read_u8(), Ok(4));
        assert_eq!(r.read_u64(), Ok(0x0506));
        assert_eq!(r.remaining(), 0);
        let be = [0u8, 0, 0, 7, 0xff, 0xfe];
        let mut r = CdrReader::new(&be, Encoding::XCDR2_BE);
        assert_eq!(r.read_i32(), Ok(7));
        assert_eq!(r.read_i16(), Ok(-2));
    }

    #[test]
    fn truncation_reports_offsets() {
        let mut r = CdrReader::new(&[1, 2, 3, 4, 5], Encoding::XCDR1_LE);
        assert_eq!(r.read_u8(), Ok(1));
        assert_eq!(
            r.read_u32(),
            Err(CdrError::Truncated {
                offset: 4,
                needed: 4,
                have: 1
            })
        );
        let mut r = CdrReader::new(&[1, 2, 3], Encoding::XCDR1_LE);
        r.read_u8().unwrap();
        assert_eq!(
            r.read_u64(),
            Err(CdrError::Truncated {
                offset: 1,
                needed: 7,
                have: 2
            })
        );
    }

    #[test]
    fn strings() {
        let ok = [3u8, 0, 0, 0, b'h', b'i', 0];
        assert_eq!(CdrReader::new(&ok, Encoding::XCDR1_LE).read_str(), Ok("hi"));
        assert_eq!(
            CdrReader::new(&ok, Encoding::XCDR1_LE).read_bounded_str(1),
            Err(CdrError::BoundExceeded { len: 2, bound: 1 })
        );
        let no_nul = [3u8, 0, 0, 0, b'h', b'i', b'!'];
        assert_eq!(
            CdrReader::new(&no_nul, Encoding::XCDR1_LE).read_str(),
            Err(CdrError::MissingNul { offset: 4 })
        );
        let bad = [3u8, 0, 0, 0, 0xff, 0xfe, 0];
        assert_eq!(
            CdrReader::new(&bad, Encoding::XCDR1_LE).read_str(),
            Err(CdrError::InvalidUtf8 { offset: 4 })
        );
        let empty = [0u8, 0, 0, 0];
        assert_eq!(
            CdrReader::new(&empty, Encoding::XCDR1_LE).read_str(),
            Ok("")
        );
        let huge = [0xffu8, 0xff, 0xff, 0xff, b'x', 0];
        assert!(matches!(
            CdrReader::new(&huge, Encoding::XCDR1_LE).read_str(),
            Err(CdrError::Truncated {
                needed: 0xffff_ffff,
                have: 2,
                ..
            })
        ));
    }

    #[test]
    fn bool_validation() {
        assert_eq!(
            CdrReader::new(&[2], Encoding::XCDR1_LE).read_bool(),
            Err(CdrError::InvalidBool(2))
        );
        assert_eq!(
            CdrReader::new(&[1], Encoding::XCDR1_LE).read_bool(),
            Ok(true)
        );
    }

    #[test]
    fn dheader_scope_limits_and_skips() {
        // DHEADER 3, then u16 + one extra byte, then a trailing u8 outside the scope.
        let d = [3u8, 0, 0, 0, 7, 0, 9, 0x42];
        let mut r = CdrReader::new(&d, Encoding::XCDR2_LE);
        let s = r.begin_dheader().unwrap();
        assert_eq!(r.read_u16(), Ok(7));
        assert!(r.read_u16().is_err());
        r.end_scope(s);
        assert_eq!(r.read_u8(), Ok(0x42));
        let lying = [9u8, 0, 0, 0, 1];
        assert!(CdrReader::new(&lying, Encoding::XCDR2_LE)
            .begin_dheader()
            .is_err());
    }

    #[test]
    fn xcdr2_members_all_length_codes() {
        #[rustfmt::skip]
        let d = [
            0, 0, 0, 40,              // DHEADER
            0x00, 0, 0, 1, 0xaa,      // LC0 id1 u8
            0, 0, 0,                  // pad
            0x40, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, // LC4 id2 NEXTINT 3
            0,                        // pad
            0xd0, 0, 0, 3, 0, 0, 0, 2, 9, 9,    // M|LC5 id3 NEXTINT=2: len 6
            0, 0,                     // pad
            0x60, 0, 0, 4, 0, 0, 0, 0, // LC6 id4 count 0: len 4
        ];
        let mut r = CdrReader::new(&d, Encoding::XCDR2_BE);
        let ms = r.begin_mutable().unwrap();
        let mut seen = Vec::new();
        while let Some(m) = r.next_member().unwrap() {
            seen.push((m.id(), m.must_understand(), r.remaining()));
            r.end_member(m);
        }
        r.end_mutable(ms);
        assert_eq!(
            seen,
            [(1, false, 1), (2, false, 3), (3, true, 6), (4, false, 4)]
        );
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn xcdr1_parameter_list() {
        #[rustfmt::skip]
        let d = [
            0x00, 0x07, 0x00, 0x04, 1, 2, 3, 4,    // id 7, len 4
            0x3f, 0x03, 0x00, 0x04, 0, 0, 0, 0,    // PID_IGNORE
            0x7f, 0x01, 0x00, 0x08, 0, 0, 0x12, 0x34, 0, 0, 0, 0, // extended, M, id 0x1234
            0x3f, 0x02, 0x00, 0x00,                // sentinel
            0xee,                                   // after the list
        ];
        let mut r = CdrReader::new(&d, Encoding::XCDR1_BE);
        let ms = r.begin_mutable().unwrap();
        let m = r.next_member().unwrap().unwrap();
        assert_eq!((m.id(), m.must_understand()), (7, false));
        assert_eq!(r.read_u32(), Ok(0x01020304));
        r.end_member(m);
        let m = r.next_member().unwrap().unwrap();
        assert_eq!(
            (m.id(), m.must_understand(), r.remaining()),
            (0x1234, true, 0)
        );
        r.end_member(m);
        assert!(r.next_member().unwrap().is_none());
        r.end_mutable(ms);
        assert_eq!(r.read_u8(), Ok(0xee));
        let bad = [0x3f, 0x01, 0x00, 0x04, 0, 0, 0, 0];
        assert_eq!(
            CdrReader::new(&bad, Encoding::XCDR1_BE)
                .next_member()
                .map(|m| m.is_some()),
            Err(CdrError::BadMemberHeader { offset: 0 })
        );
    }
}
