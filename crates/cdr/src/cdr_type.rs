//! The [`CdrType`] and [`TopicType`] traits and their implementations for built-in types.

use crate::encapsulation::{Endianness, Extensibility, XcdrVersion};
use crate::error::CdrError;
use crate::reader::{CdrReader, Scope};
use crate::writer::CdrWriter;

/// A type that can be written to and read from CDR (XCDR1 and XCDR2, both byte orders).
///
/// Implemented for the primitives, `bool`, `char` (8-bit IDL char), `String`, `Vec<T>`
/// (unbounded sequence) and `[T; N]` (array), and by `#[derive(TopicType)]` for structs and
/// `#[derive(CdrEnum)]` for enums.
///
/// The associated constants describe the wire layout well enough to bound allocations and
/// to decide key-hash sizes without serializing anything.
pub trait CdrType: Sized {
    /// XCDR1 alignment of the type's first primitive (1, 2, 4 or 8); XCDR2 caps it at 4.
    const ALIGN: usize;
    /// Size if this is a primitive type (1, 2, 4 or 8; enums count as 4), else 0.
    /// Primitive members of mutable types get EMHEADERs without NEXTINT in XCDR2.
    const PRIMITIVE_SIZE: usize = 0;
    /// Whether an XCDR2 sequence or array of this type carries a DHEADER (true unless
    /// the element type is primitive; arrays of arrays follow their innermost element,
    /// as a multi-dimensional IDL array does).
    const XCDR2_ELEMENT_DHEADER: bool = true;
    /// A lower bound of the serialized size in any encoding (guards allocations).
    const MIN_SIZE: usize;
    /// Upper bound of the XCDR1 serialized size when started at an offset aligned to
    /// [`ALIGN`](Self::ALIGN); `None` if unbounded.
    const MAX_SIZE_XCDR1: Option<usize>;
    /// Upper bound of the XCDR2 serialized size; `None` if unbounded.
    const MAX_SIZE_XCDR2: Option<usize>;
    /// Upper bound of the XCDR1 size of [`serialize_key`](Self::serialize_key)'s output.
    const KEY_MAX_SIZE_XCDR1: Option<usize> = Self::MAX_SIZE_XCDR1;
    /// Upper bound of the XCDR2 size of [`serialize_key`](Self::serialize_key)'s output.
    const KEY_MAX_SIZE_XCDR2: Option<usize> = Self::MAX_SIZE_XCDR2;

    /// Appends `self` in the writer's encoding.
    fn serialize(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError>;

    /// Reads a value in the reader's encoding.
    fn deserialize(r: &mut CdrReader<'_>) -> Result<Self, CdrError>;

    /// Reads a value into `self`, reusing the storage `self` already owns (sequence and
    /// string buffers) instead of allocating new storage: a reader decoding sample after
    /// sample into one value allocates only when a sample outgrows the buffers.
    ///
    /// On success `self` equals what [`deserialize`](Self::deserialize) returns for the
    /// same input; on error it holds a valid but unspecified value. The default replaces
    /// the whole value; sequences, strings and derived final and appendable structs
    /// override it.
    #[inline]
    fn deserialize_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        *self = Self::deserialize(r)?;
        Ok(())
    }

    /// Writes the key form of the value: for structs with `#[key]` members only those
    /// members (XCDR1: declaration order; XCDR2: member-id order) without DHEADERs or member
    /// headers; for everything else the whole value as with [`serialize`](Self::serialize).
    fn serialize_key(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        self.serialize(w)
    }

    /// Writes the value as its key-holder type for key-only payloads (dispose/unregister):
    /// the key members with the type's own extensibility framing (XCDR2 DHEADER for
    /// appendable types; parameter list / EMHEADERs for mutable types). Defaults to
    /// [`serialize_key`](Self::serialize_key), which is right for final types.
    fn serialize_key_holder(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        self.serialize_key(w)
    }

    /// Reads the output of [`serialize_key`](Self::serialize_key) in the reader's encoding
    /// and writes the same key in the writer's encoding (re-ordering struct key members when
    /// the XCDR versions differ). Used to compute key hashes from key-only payloads without
    /// building a value. The default (decode, then `serialize_key`) is right for every type
    /// whose key form is its whole serialization; derived structs and arrays override it.
    fn transcode_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        Self::deserialize(r)?.serialize_key(w)
    }

    /// Reads the output of [`serialize_key_holder`](Self::serialize_key_holder) (a key-only
    /// payload body) and writes the key as [`serialize_key`](Self::serialize_key) would in
    /// the writer's encoding. Defaults to [`transcode_key`](Self::transcode_key), which is
    /// right for final types.
    fn transcode_key_holder(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        Self::transcode_key(r, w)
    }

    /// Writes the elements of a sequence or array (no count, no DHEADER).
    /// Primitives override this with bulk copies.
    fn serialize_slice(items: &[Self], w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        for item in items {
            item.serialize(w)?;
        }
        Ok(())
    }

    /// Reads `n` elements of a sequence. `n` must already have been checked against the
    /// input with [`CdrReader::check_count`] using [`MIN_SIZE`](Self::MIN_SIZE).
    fn deserialize_vec(r: &mut CdrReader<'_>, n: usize) -> Result<Vec<Self>, CdrError> {
        // `n` fits the input at MIN_SIZE bytes per element, but an element can be far larger
        // in memory than on the wire (a mutable struct is 4 bytes minimum): reserve at most
        // PREALLOC_MAX_BYTES up front and let the vector grow as elements actually decode.
        let cap = n.min(PREALLOC_MAX_BYTES / size_of::<Self>().max(1));
        let mut v = Vec::with_capacity(cap);
        for _ in 0..n {
            v.push(Self::deserialize(r)?);
        }
        Ok(v)
    }

    /// Reads `n` elements of a sequence into `v`, replacing its contents (as
    /// [`deserialize_vec`](Self::deserialize_vec) would) but keeping its capacity where the
    /// element type allows. `n` must have been checked as for `deserialize_vec`.
    /// Primitives override this with bulk copies; the default decodes into the elements
    /// `v` already holds (reusing their storage) and appends the rest.
    fn deserialize_vec_into(
        r: &mut CdrReader<'_>,
        n: usize,
        v: &mut Vec<Self>,
    ) -> Result<(), CdrError> {
        v.truncate(n);
        for item in v.iter_mut() {
            item.deserialize_into(r)?;
        }
        let more = n - v.len();
        v.reserve(more.min(PREALLOC_MAX_BYTES / size_of::<Self>().max(1)));
        for _ in 0..more {
            v.push(Self::deserialize(r)?);
        }
        Ok(())
    }

    /// Reads the `N` elements of an array.
    fn deserialize_array<const N: usize>(r: &mut CdrReader<'_>) -> Result<[Self; N], CdrError> {
        let mut err = None;
        let items: [Option<Self>; N] = core::array::from_fn(|_| {
            if err.is_some() {
                return None;
            }
            match Self::deserialize(r) {
                Ok(v) => Some(v),
                Err(e) => {
                    err = Some(e);
                    None
                }
            }
        });
        if let Some(e) = err {
            return Err(e);
        }
        // Every slot is Some when no error was recorded.
        Ok(items.map(|o| o.expect("array slot filled when no error was recorded")))
    }
}

/// Largest up-front reservation (bytes) for a decoded sequence whose count came off the
/// wire; longer sequences grow as their elements decode.
const PREALLOC_MAX_BYTES: usize = 1 << 20;

/// A top-level DDS topic type.
///
/// `#[derive(TopicType)]` implements this together with [`CdrType`].
pub trait TopicType: CdrType {
    /// DDS type name as announced in discovery (e.g. `"TestData_t"`, `"ShapeType"`).
    const TYPE_NAME: &'static str;
    /// Extensibility kind; selects the encapsulation identifier.
    const EXTENSIBILITY: Extensibility;
    /// Whether the type has key members.
    const IS_KEYED: bool;
    /// Largest XCDR1 serialized key (see [`CdrType::KEY_MAX_SIZE_XCDR1`]); `None` if
    /// unbounded. Decides between a zero-padded and an MD5 key hash.
    const KEY_MAX_SIZE: Option<usize> = Self::KEY_MAX_SIZE_XCDR1;
}

/// Strings and sequences that can carry an IDL bound (`#[dds(bound = N)]`).
pub trait BoundedCdr: CdrType {
    /// Alignment of one element.
    const ELEM_ALIGN: usize;
    /// XCDR1 upper bound of one element.
    const ELEM_MAX_XCDR1: Option<usize>;
    /// XCDR2 upper bound of one element.
    const ELEM_MAX_XCDR2: Option<usize>;
    /// Bytes after the elements (1 for a string's NUL).
    const TRAILER: usize;
    /// Whether XCDR2 puts a DHEADER before the count.
    const DHEADER_XCDR2: bool;
    /// Element count (characters without NUL for strings).
    fn bounded_len(&self) -> usize;
    /// Serializes after checking the bound.
    fn serialize_bounded(&self, bound: usize, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        let len = self.bounded_len();
        if len > bound {
            return Err(CdrError::BoundExceeded { len, bound });
        }
        self.serialize(w)
    }
    /// Deserializes, rejecting values longer than `bound` before reading their elements.
    fn deserialize_bounded(r: &mut CdrReader<'_>, bound: usize) -> Result<Self, CdrError>;
    /// [`deserialize_bounded`](Self::deserialize_bounded) into `self`, reusing its storage
    /// (see [`CdrType::deserialize_into`]).
    fn deserialize_bounded_into(
        &mut self,
        r: &mut CdrReader<'_>,
        bound: usize,
    ) -> Result<(), CdrError> {
        *self = Self::deserialize_bounded(r, bound)?;
        Ok(())
    }
}

macro_rules! primitive {
    ($t:ty, $write:ident, $read:ident) => {
        impl CdrType for $t {
            const ALIGN: usize = core::mem::size_of::<$t>();
            const PRIMITIVE_SIZE: usize = core::mem::size_of::<$t>();
            const XCDR2_ELEMENT_DHEADER: bool = false;
            const MIN_SIZE: usize = core::mem::size_of::<$t>();
            const MAX_SIZE_XCDR1: Option<usize> = Some(core::mem::size_of::<$t>());
            const MAX_SIZE_XCDR2: Option<usize> = Some(core::mem::size_of::<$t>());

            #[inline]
            fn serialize(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
                w.$write(*self);
                Ok(())
            }

            #[inline]
            fn deserialize(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
                r.$read()
            }

            fn serialize_slice(items: &[Self], w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
                const N: usize = core::mem::size_of::<$t>();
                if let Some(first) = items.first() {
                    // Aligning once suffices: elements are contiguous and size == alignment.
                    w.$write(*first);
                    let big = w.encoding().endianness == Endianness::Big;
                    let mut tmp = [0u8; 256];
                    for chunk in items[1..].chunks(256 / N) {
                        let out = &mut tmp[..chunk.len() * N];
                        for (dst, v) in out.chunks_exact_mut(N).zip(chunk) {
                            dst.copy_from_slice(&if big {
                                v.to_be_bytes()
                            } else {
                                v.to_le_bytes()
                            });
                        }
                        w.write_raw(out);
                    }
                }
                Ok(())
            }

            fn deserialize_vec(r: &mut CdrReader<'_>, n: usize) -> Result<Vec<Self>, CdrError> {
                const N: usize = core::mem::size_of::<$t>();
                if n == 0 {
                    return Ok(Vec::new());
                }
                r.align(N)?;
                let bytes = r.read_raw(n.saturating_mul(N))?;
                let big = r.encoding().endianness == Endianness::Big;
                Ok(bytes
                    .chunks_exact(N)
                    .map(|c| {
                        let mut a = [0u8; N];
                        a.copy_from_slice(c);
                        if big {
                            <$t>::from_be_bytes(a)
                        } else {
                            <$t>::from_le_bytes(a)
                        }
                    })
                    .collect())
            }

            fn deserialize_vec_into(
                r: &mut CdrReader<'_>,
                n: usize,
                v: &mut Vec<Self>,
            ) -> Result<(), CdrError> {
                const N: usize = core::mem::size_of::<$t>();
                v.clear();
                if n == 0 {
                    return Ok(());
                }
                r.align(N)?;
                let bytes = r.read_raw(n.saturating_mul(N))?;
                let big = r.encoding().endianness == Endianness::Big;
                v.extend(bytes.chunks_exact(N).map(|c| {
                    let mut a = [0u8; N];
                    a.copy_from_slice(c);
                    if big {
                        <$t>::from_be_bytes(a)
                    } else {
                        <$t>::from_le_bytes(a)
                    }
                }));
                Ok(())
            }

            fn deserialize_array<const M: usize>(
                r: &mut CdrReader<'_>,
            ) -> Result<[Self; M], CdrError> {
                let mut a = [<$t>::default(); M];
                for slot in &mut a {
                    *slot = r.$read()?;
                }
                Ok(a)
            }
        }
    };
}

primitive!(u16, write_u16, read_u16);
primitive!(i16, write_i16, read_i16);
primitive!(u32, write_u32, read_u32);
primitive!(i32, write_i32, read_i32);
primitive!(u64, write_u64, read_u64);
primitive!(i64, write_i64, read_i64);
primitive!(f32, write_f32, read_f32);
primitive!(f64, write_f64, read_f64);

macro_rules! byte_primitive {
    ($t:ty, $write:ident, $read:ident) => {
        impl CdrType for $t {
            const ALIGN: usize = 1;
            const PRIMITIVE_SIZE: usize = 1;
            const XCDR2_ELEMENT_DHEADER: bool = false;
            const MIN_SIZE: usize = 1;
            const MAX_SIZE_XCDR1: Option<usize> = Some(1);
            const MAX_SIZE_XCDR2: Option<usize> = Some(1);

            #[inline]
            fn serialize(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
                w.$write(*self);
                Ok(())
            }

            #[inline]
            fn deserialize(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
                r.$read()
            }

            #[inline]
            fn serialize_slice(items: &[Self], w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
                for v in items {
                    w.$write(*v);
                }
                Ok(())
            }
        }
    };
}

byte_primitive!(i8, write_i8, read_i8);

impl CdrType for u8 {
    const ALIGN: usize = 1;
    const PRIMITIVE_SIZE: usize = 1;
    const XCDR2_ELEMENT_DHEADER: bool = false;
    const MIN_SIZE: usize = 1;
    const MAX_SIZE_XCDR1: Option<usize> = Some(1);
    const MAX_SIZE_XCDR2: Option<usize> = Some(1);

    #[inline]
    fn serialize(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        w.write_u8(*self);
        Ok(())
    }

    #[inline]
    fn deserialize(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.read_u8()
    }

    #[inline]
    fn serialize_slice(items: &[Self], w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        w.write_raw(items);
        Ok(())
    }

    #[inline]
    fn deserialize_vec(r: &mut CdrReader<'_>, n: usize) -> Result<Vec<Self>, CdrError> {
        Ok(r.read_raw(n)?.to_vec())
    }

    #[inline]
    fn deserialize_vec_into(
        r: &mut CdrReader<'_>,
        n: usize,
        v: &mut Vec<Self>,
    ) -> Result<(), CdrError> {
        let bytes = r.read_raw(n)?;
        v.clear();
        v.extend_from_slice(bytes);
        Ok(())
    }

    #[inline]
    fn deserialize_array<const N: usize>(r: &mut CdrReader<'_>) -> Result<[Self; N], CdrError> {
        let mut a = [0u8; N];
        a.copy_from_slice(r.read_raw(N)?);
        Ok(a)
    }
}

impl CdrType for bool {
    const ALIGN: usize = 1;
    const PRIMITIVE_SIZE: usize = 1;
    const XCDR2_ELEMENT_DHEADER: bool = false;
    const MIN_SIZE: usize = 1;
    const MAX_SIZE_XCDR1: Option<usize> = Some(1);
    const MAX_SIZE_XCDR2: Option<usize> = Some(1);

    #[inline]
    fn serialize(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        w.write_bool(*self);
        Ok(())
    }

    #[inline]
    fn deserialize(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.read_bool()
    }
}

/// An IDL 8-bit `char`; values above U+00FF fail to serialize.
impl CdrType for char {
    const ALIGN: usize = 1;
    const PRIMITIVE_SIZE: usize = 1;
    const XCDR2_ELEMENT_DHEADER: bool = false;
    const MIN_SIZE: usize = 1;
    const MAX_SIZE_XCDR1: Option<usize> = Some(1);
    const MAX_SIZE_XCDR2: Option<usize> = Some(1);

    #[inline]
    fn serialize(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        w.write_char(*self)
    }

    #[inline]
    fn deserialize(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.read_char()
    }
}

impl CdrType for String {
    const ALIGN: usize = 4;
    const MIN_SIZE: usize = 4;
    const MAX_SIZE_XCDR1: Option<usize> = None;
    const MAX_SIZE_XCDR2: Option<usize> = None;

    #[inline]
    fn serialize(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        w.write_string(self)
    }

    #[inline]
    fn deserialize(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.read_string()
    }

    #[inline]
    fn deserialize_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        let s = r.read_str()?;
        self.clear();
        self.push_str(s);
        Ok(())
    }
}

impl BoundedCdr for String {
    const ELEM_ALIGN: usize = 1;
    const ELEM_MAX_XCDR1: Option<usize> = Some(1);
    const ELEM_MAX_XCDR2: Option<usize> = Some(1);
    const TRAILER: usize = 1;
    const DHEADER_XCDR2: bool = false;

    fn bounded_len(&self) -> usize {
        self.len()
    }

    fn deserialize_bounded(r: &mut CdrReader<'_>, bound: usize) -> Result<Self, CdrError> {
        r.read_bounded_str(bound).map(String::from)
    }

    fn deserialize_bounded_into(
        &mut self,
        r: &mut CdrReader<'_>,
        bound: usize,
    ) -> Result<(), CdrError> {
        let s = r.read_bounded_str(bound)?;
        self.clear();
        self.push_str(s);
        Ok(())
    }
}

/// Reads a sequence's DHEADER (XCDR2 element types that need one) and length, checking
/// the length against `bound` and the bytes left.
#[inline]
fn vec_header<T: CdrType>(
    r: &mut CdrReader<'_>,
    bound: usize,
) -> Result<(Option<Scope>, usize), CdrError> {
    let dheader = if r.version() == XcdrVersion::Xcdr2 && T::XCDR2_ELEMENT_DHEADER {
        Some(r.begin_dheader()?)
    } else {
        None
    };
    let n = r.read_len()?;
    if n > bound {
        return Err(CdrError::BoundExceeded { len: n, bound });
    }
    r.check_count(n, T::MIN_SIZE)?;
    Ok((dheader, n))
}

fn vec_deserialize<T: CdrType>(r: &mut CdrReader<'_>, bound: usize) -> Result<Vec<T>, CdrError> {
    let (dheader, n) = vec_header::<T>(r, bound)?;
    let v = T::deserialize_vec(r, n)?;
    if let Some(s) = dheader {
        r.end_scope(s);
    }
    Ok(v)
}

/// [`vec_deserialize`] into `v`, reusing its storage.
#[inline]
fn vec_deserialize_into<T: CdrType>(
    r: &mut CdrReader<'_>,
    bound: usize,
    v: &mut Vec<T>,
) -> Result<(), CdrError> {
    let (dheader, n) = vec_header::<T>(r, bound)?;
    T::deserialize_vec_into(r, n, v)?;
    if let Some(s) = dheader {
        r.end_scope(s);
    }
    Ok(())
}

/// An unbounded IDL `sequence<T>` (`Vec<u8>` is written and read with one copy).
impl<T: CdrType> CdrType for Vec<T> {
    const ALIGN: usize = 4;
    const MIN_SIZE: usize = 4;
    const MAX_SIZE_XCDR1: Option<usize> = None;
    const MAX_SIZE_XCDR2: Option<usize> = None;

    #[inline]
    fn serialize(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        if w.version() == XcdrVersion::Xcdr2 && T::XCDR2_ELEMENT_DHEADER {
            let d = w.begin_dheader();
            w.write_len(self.len())?;
            T::serialize_slice(self, w)?;
            w.end_dheader(d)
        } else {
            w.write_len(self.len())?;
            T::serialize_slice(self, w)
        }
    }

    #[inline]
    fn deserialize(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        vec_deserialize(r, usize::MAX)
    }

    #[inline]
    fn deserialize_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        vec_deserialize_into(r, usize::MAX, self)
    }
}

impl<T: CdrType> BoundedCdr for Vec<T> {
    const ELEM_ALIGN: usize = T::ALIGN;
    const ELEM_MAX_XCDR1: Option<usize> = T::MAX_SIZE_XCDR1;
    const ELEM_MAX_XCDR2: Option<usize> = T::MAX_SIZE_XCDR2;
    const TRAILER: usize = 0;
    const DHEADER_XCDR2: bool = T::XCDR2_ELEMENT_DHEADER;

    fn bounded_len(&self) -> usize {
        self.len()
    }

    fn deserialize_bounded(r: &mut CdrReader<'_>, bound: usize) -> Result<Self, CdrError> {
        vec_deserialize(r, bound)
    }

    fn deserialize_bounded_into(
        &mut self,
        r: &mut CdrReader<'_>,
        bound: usize,
    ) -> Result<(), CdrError> {
        vec_deserialize_into(r, bound, self)
    }
}

/// An IDL array `T[N]`.
impl<T: CdrType, const N: usize> CdrType for [T; N] {
    const ALIGN: usize = T::ALIGN;
    const XCDR2_ELEMENT_DHEADER: bool = T::XCDR2_ELEMENT_DHEADER;
    const MIN_SIZE: usize = T::MIN_SIZE.saturating_mul(N);
    const MAX_SIZE_XCDR1: Option<usize> = __private::array_max(T::ALIGN, T::MAX_SIZE_XCDR1, N, 8);
    const MAX_SIZE_XCDR2: Option<usize> = __private::add_dheader(
        __private::array_max(T::ALIGN, T::MAX_SIZE_XCDR2, N, 4),
        T::XCDR2_ELEMENT_DHEADER,
    );
    const KEY_MAX_SIZE_XCDR1: Option<usize> =
        __private::array_max(T::ALIGN, T::KEY_MAX_SIZE_XCDR1, N, 8);
    const KEY_MAX_SIZE_XCDR2: Option<usize> = __private::add_dheader(
        __private::array_max(T::ALIGN, T::KEY_MAX_SIZE_XCDR2, N, 4),
        T::XCDR2_ELEMENT_DHEADER,
    );

    #[inline]
    fn serialize(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        if w.version() == XcdrVersion::Xcdr2 && T::XCDR2_ELEMENT_DHEADER {
            let d = w.begin_dheader();
            T::serialize_slice(self, w)?;
            w.end_dheader(d)
        } else {
            T::serialize_slice(self, w)
        }
    }

    fn serialize_key(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        if w.version() == XcdrVersion::Xcdr2 && T::XCDR2_ELEMENT_DHEADER {
            let d = w.begin_dheader();
            for item in self {
                item.serialize_key(w)?;
            }
            w.end_dheader(d)
        } else {
            for item in self {
                item.serialize_key(w)?;
            }
            Ok(())
        }
    }

    fn transcode_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        let scope = if r.version() == XcdrVersion::Xcdr2 && T::XCDR2_ELEMENT_DHEADER {
            Some(r.begin_dheader()?)
        } else {
            None
        };
        let token = if w.version() == XcdrVersion::Xcdr2 && T::XCDR2_ELEMENT_DHEADER {
            Some(w.begin_dheader())
        } else {
            None
        };
        for _ in 0..N {
            T::transcode_key(r, w)?;
        }
        if let Some(t) = token {
            w.end_dheader(t)?;
        }
        if let Some(s) = scope {
            r.end_scope(s);
        }
        Ok(())
    }

    #[inline]
    fn deserialize(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        if r.version() == XcdrVersion::Xcdr2 && T::XCDR2_ELEMENT_DHEADER {
            let s = r.begin_dheader()?;
            let a = T::deserialize_array::<N>(r)?;
            r.end_scope(s);
            Ok(a)
        } else {
            T::deserialize_array::<N>(r)
        }
    }

    /// Replaces the elements in place; inlined so that a small array member (perftest's
    /// `octet key[4]`) is a bounds check and a copy, not a call returning the array
    /// through a `Result`.
    #[inline]
    fn deserialize_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        *self = Self::deserialize(r)?;
        Ok(())
    }
}

/// Support code for `#[derive]` output; not a stable API.
#[doc(hidden)]
pub mod __private {
    /// Rounds `off` up to a multiple of `align`.
    pub const fn align_up(off: usize, align: usize) -> usize {
        if align <= 1 {
            off
        } else {
            off.div_ceil(align) * align
        }
    }

    /// Adds a field of `align`/`size` (capped at `max_align`) at `off`.
    pub const fn field(
        off: Option<usize>,
        align: usize,
        size: Option<usize>,
        max_align: usize,
    ) -> Option<usize> {
        let align = if align < max_align { align } else { max_align };
        match (off, size) {
            (Some(o), Some(s)) => align_up(o, align).checked_add(s),
            _ => None,
        }
    }

    /// Adds a constant to an optional size.
    pub const fn plus(size: Option<usize>, n: usize) -> Option<usize> {
        match size {
            Some(s) => s.checked_add(n),
            None => None,
        }
    }

    /// Adds 4 DHEADER bytes when `dheader`.
    pub const fn add_dheader(size: Option<usize>, dheader: bool) -> Option<usize> {
        if dheader {
            plus(size, 4)
        } else {
            size
        }
    }

    /// Upper bound of `n` elements of `elem_align`/`elem_size`, each possibly re-aligned.
    pub const fn array_max(
        elem_align: usize,
        elem_size: Option<usize>,
        n: usize,
        max_align: usize,
    ) -> Option<usize> {
        let a = if elem_align < max_align {
            elem_align
        } else {
            max_align
        };
        match elem_size {
            Some(s) => align_up(s, a).checked_mul(n),
            None => None,
        }
    }

    /// Upper bound of a bounded string/sequence: count, alignment padding, elements,
    /// trailer, and a DHEADER if `dheader`.
    pub const fn bounded_max(
        elem_align: usize,
        elem_size: Option<usize>,
        bound: usize,
        trailer: usize,
        dheader: bool,
        max_align: usize,
    ) -> Option<usize> {
        let a = if elem_align < max_align {
            elem_align
        } else {
            max_align
        };
        let head = align_up(4, a);
        let body = plus(
            array_max(elem_align, elem_size, bound, max_align),
            head + trailer,
        );
        add_dheader(body, dheader)
    }

    /// Larger of two alignments.
    pub const fn max_align(a: usize, b: usize) -> usize {
        if a > b {
            a
        } else {
            b
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encapsulation::Encoding;

    fn enc<T: CdrType>(v: &T, e: Encoding) -> Vec<u8> {
        let mut buf = Vec::new();
        v.serialize(&mut CdrWriter::new(&mut buf, e)).unwrap();
        buf
    }

    fn dec<T: CdrType>(b: &[u8], e: Encoding) -> Result<T, CdrError> {
        let mut r = CdrReader::new(b, e);
        let v = T::deserialize(&mut r)?;
        assert_eq!(r.remaining(), 0, "trailing bytes");
        Ok(v)
    }

    #[test]
    fn primitive_sequences_bulk() {
        let v: Vec<u32> = (0..100).collect();
        for e in [Encoding::XCDR1_LE, Encoding::XCDR1_BE, Encoding::XCDR2_LE] {
            let b = enc(&v, e);
            assert_eq!(b.len(), 4 + 400);
            assert_eq!(dec::<Vec<u32>>(&b, e).unwrap(), v);
        }
        let b = enc(&vec![1u64, 2], Encoding::XCDR1_BE);
        assert_eq!(
            b,
            [0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2]
        );
        let b = enc(&vec![1u64, 2], Encoding::XCDR2_BE);
        assert_eq!(
            b,
            [0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2]
        );
    }

    #[test]
    fn string_sequence_gets_dheader_in_xcdr2() {
        let v = vec!["a".to_string(), String::new()];
        let b = enc(&v, Encoding::XCDR2_LE);
        #[rustfmt::skip]
        assert_eq!(b, [
            17, 0, 0, 0,          // DHEADER: 4 + 6 + 2 + 5
            2, 0, 0, 0,           // count
            2, 0, 0, 0, b'a', 0,  // "a"
            0, 0,                 // pad
            1, 0, 0, 0, 0,        // ""
        ]);
        assert_eq!(dec::<Vec<String>>(&b, Encoding::XCDR2_LE).unwrap(), v);
        let b1 = enc(&v, Encoding::XCDR1_LE);
        assert_eq!(b1.len(), 4 + 6 + 2 + 5);
    }

    #[test]
    fn huge_count_rejected_without_allocation() {
        // sequence<u8> claiming 0xffffffff bytes with 10 left.
        let mut b = vec![0xff, 0xff, 0xff, 0xff];
        b.extend_from_slice(&[0; 10]);
        assert!(matches!(
            dec::<Vec<u8>>(&b, Encoding::XCDR1_LE),
            Err(CdrError::Truncated {
                needed: 0xffff_ffff,
                have: 10,
                ..
            })
        ));
        assert!(matches!(
            dec::<Vec<Vec<u8>>>(&b, Encoding::XCDR1_LE),
            Err(CdrError::Truncated { have: 10, .. })
        ));
        assert!(matches!(
            dec::<Vec<u64>>(&b, Encoding::XCDR1_LE),
            Err(CdrError::Truncated { have: 10, .. })
        ));
    }

    #[test]
    fn arrays() {
        let a: [i16; 3] = [1, -1, 2];
        let b = enc(&a, Encoding::XCDR1_BE);
        assert_eq!(b, [0, 1, 0xff, 0xff, 0, 2]);
        assert_eq!(dec::<[i16; 3]>(&b, Encoding::XCDR1_BE), Ok(a));
        let s = [String::from("x"), String::from("yz")];
        let b = enc(&s, Encoding::XCDR2_BE);
        assert_eq!(&b[..4], &[0, 0, 0, 15]);
        assert_eq!(dec::<[String; 2]>(&b, Encoding::XCDR2_BE), Ok(s));
        let m = [[1u8, 2], [3, 4]];
        assert_eq!(enc(&m, Encoding::XCDR2_LE), [1, 2, 3, 4]);
        assert!(matches!(
            dec::<[String; 2]>(&b[..b.len() - 1], Encoding::XCDR2_BE),
            Err(CdrError::Truncated { .. })
        ));
    }

    #[test]
    fn bounded() {
        let v = vec![1u8, 2, 3];
        let mut buf = Vec::new();
        let mut w = CdrWriter::new(&mut buf, Encoding::XCDR1_LE);
        assert_eq!(
            v.serialize_bounded(2, &mut w),
            Err(CdrError::BoundExceeded { len: 3, bound: 2 })
        );
        v.serialize_bounded(3, &mut w).unwrap();
        let mut r = CdrReader::new(&buf, Encoding::XCDR1_LE);
        assert_eq!(
            <Vec<u8>>::deserialize_bounded(&mut r, 2),
            Err(CdrError::BoundExceeded { len: 3, bound: 2 })
        );
    }

    #[test]
    fn size_constants() {
        assert_eq!(<[u8; 4]>::MAX_SIZE_XCDR1, Some(4));
        assert_eq!(<[u64; 2]>::MAX_SIZE_XCDR2, Some(16));
        assert_eq!(<String as CdrType>::MAX_SIZE_XCDR1, None);
        // string<128>: 4 + 128 + NUL
        assert_eq!(
            __private::bounded_max(1, Some(1), 128, 1, false, 8),
            Some(133)
        );
        // sequence<double, 2> in XCDR1: count, 4 pad, 16
        assert_eq!(__private::bounded_max(8, Some(8), 2, 0, false, 8), Some(24));
        assert_eq!(__private::field(Some(1), 8, Some(8), 4), Some(12));
        assert_eq!(__private::field(Some(1), 8, Some(8), 8), Some(16));
    }
}
