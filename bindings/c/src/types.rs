//! The ready type supports: topic types whose samples C passes as serialized CDR bytes.
//!
//! A ready type pairs a shipped Rust type (its DDS type name, extensibility and key layout)
//! with a validator of its serialized form. Two wire types carry the bytes through the
//! typed runtime without decoding them into the Rust type:
//!
//! * [`WireIn`] (writers) borrows the caller's XCDR1 little-endian body for the duration
//!   of one call; the writer serializes it with one copy into its reusable payload buffer.
//! * [`WireOut`] (readers) owns a reusable buffer holding the received payload
//!   (encapsulation header + body) as the reader decodes it.
//!
//! Keys are read from the serialized body with the Rust type's own key transcoder, which
//! reads the key members from the front of the body: both shipped keyed types declare
//! their key members first (checked by the tests against the Rust types' key hashes).

use std::marker::PhantomData;

use ferrodds::DdsError;
use ferrodds_cdr::encapsulation::{EncapsulationHeader, Representation};
use ferrodds_cdr::types::{ShapeType, TestData, TestDataKeyed, TestDataKeyedLarge, TestDataLarge};
use ferrodds_cdr::{
    CdrError, CdrReader, CdrType, CdrWriter, Encoding, Extensibility, TopicType, XcdrVersion,
};

/// A topic type the C API supports: the Rust type that describes it on the wire and a
/// validator of its serialized body.
pub(crate) trait Ready: Send + Sync + 'static {
    /// The shipped Rust type (type name, extensibility, key layout and bounds).
    type Typed: TopicType;
    /// Checks that `r` holds one well-formed value (bounds included), reading it whole.
    fn validate(r: &mut CdrReader<'_>) -> Result<(), CdrError>;
}

/// Validates a perftest body: `octet key[4]`, five 32-bit members, `sequence<octet>`.
fn validate_perftest(r: &mut CdrReader<'_>, bound: Option<usize>) -> Result<(), CdrError> {
    r.skip(4)?;
    for _ in 0..5 {
        r.read_u32()?;
    }
    let n = r.read_len()?;
    if let Some(bound) = bound {
        if n > bound {
            return Err(CdrError::BoundExceeded { len: n, bound });
        }
    }
    r.read_raw(n)?;
    Ok(())
}

/// `ShapeType` (`@key string<128> color; long x, y, shapesize`).
pub(crate) struct Shape;
impl Ready for Shape {
    type Typed = ShapeType;
    fn validate(r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        let scope = if r.version() == XcdrVersion::Xcdr2 {
            Some(r.begin_dheader()?)
        } else {
            None
        };
        r.read_bounded_str(128)?;
        for _ in 0..3 {
            r.read_i32()?;
        }
        if let Some(scope) = scope {
            r.end_scope(scope);
        }
        Ok(())
    }
}

macro_rules! perftest_type {
    ($name:ident, $typed:ty, $bound:expr, $doc:literal) => {
        #[doc = $doc]
        pub(crate) struct $name;
        impl Ready for $name {
            type Typed = $typed;
            fn validate(r: &mut CdrReader<'_>) -> Result<(), CdrError> {
                validate_perftest(r, $bound)
            }
        }
    };
}
perftest_type!(
    Perf,
    TestData,
    Some(ferrodds_cdr::types::MAX_BOUNDED_SEQ_SIZE),
    "`TestData_t` (unkeyed, `bin_data` bounded)."
);
perftest_type!(
    PerfKeyed,
    TestDataKeyed,
    Some(ferrodds_cdr::types::MAX_BOUNDED_SEQ_SIZE),
    "`TestDataKeyed_t` (keyed, `bin_data` bounded)."
);
perftest_type!(
    PerfLarge,
    TestDataLarge,
    None,
    "`TestDataLarge_t` (unkeyed, `bin_data` unbounded)."
);
perftest_type!(
    PerfKeyedLarge,
    TestDataKeyedLarge,
    None,
    "`TestDataKeyedLarge_t` (keyed, `bin_data` unbounded)."
);

/// The part of a serialized payload after its encapsulation header, without the trailing
/// padding the header announces, checked to be XCDR1 little-endian (what the C API
/// writes).
pub(crate) fn xcdr1_le_body(payload: &[u8]) -> Result<&[u8], CdrError> {
    let (header, body) = EncapsulationHeader::parse(payload)?;
    if header.representation.encoding() != Encoding::XCDR1_LE {
        return Err(CdrError::UnsupportedEncapsulation(
            header.representation.id(),
        ));
    }
    let pad = header.padding();
    if pad > body.len() {
        return Err(CdrError::BadPadding {
            padding: pad,
            body: body.len(),
        });
    }
    Ok(&body[..body.len() - pad])
}

/// Checks a whole XCDR1 little-endian body of `R`: it must hold exactly one value (up to
/// 3 bytes of alignment padding may follow it).
pub(crate) fn validate_body<R: Ready>(body: &[u8]) -> Result<(), DdsError> {
    let mut r = CdrReader::new(body, Encoding::XCDR1_LE);
    R::validate(&mut r)?;
    if r.remaining() >= 4 {
        return Err(DdsError::BadParameter {
            what: "the sample has bytes after its last member",
        });
    }
    Ok(())
}

/// Writer-side sample: the caller's XCDR1 little-endian body, borrowed for one call.
///
/// The `'static` lifetime is a promise of the FFI layer, which builds a `WireIn` from a
/// caller pointer inside one exported function and drops it before returning; the writer
/// serializes it synchronously and keeps no reference to it.
pub(crate) struct WireIn<R> {
    body: &'static [u8],
    _r: PhantomData<fn() -> R>,
}

impl<R: Ready> WireIn<R> {
    /// Wraps a body (see the type's lifetime note).
    pub(crate) fn new(body: &'static [u8]) -> Self {
        Self {
            body,
            _r: PhantomData,
        }
    }
}

/// Writes `R`'s key members read from the XCDR1 body `body` in `w`'s encoding.
fn transcode_key<R: Ready>(
    body: &[u8],
    encoding: Encoding,
    w: &mut CdrWriter<'_>,
) -> Result<(), CdrError> {
    <R::Typed as CdrType>::transcode_key_holder(&mut CdrReader::new(body, encoding), w)
}

macro_rules! wire_consts {
    () => {
        const ALIGN: usize = <R::Typed as CdrType>::ALIGN;
        const MIN_SIZE: usize = <R::Typed as CdrType>::MIN_SIZE;
        const MAX_SIZE_XCDR1: Option<usize> = <R::Typed as CdrType>::MAX_SIZE_XCDR1;
        const MAX_SIZE_XCDR2: Option<usize> = <R::Typed as CdrType>::MAX_SIZE_XCDR2;
        const KEY_MAX_SIZE_XCDR1: Option<usize> = <R::Typed as CdrType>::KEY_MAX_SIZE_XCDR1;
        const KEY_MAX_SIZE_XCDR2: Option<usize> = <R::Typed as CdrType>::KEY_MAX_SIZE_XCDR2;
    };
}

macro_rules! wire_topic_type {
    ($t:ident) => {
        impl<R: Ready> TopicType for $t<R> {
            const TYPE_NAME: &'static str = <R::Typed as TopicType>::TYPE_NAME;
            const EXTENSIBILITY: Extensibility = <R::Typed as TopicType>::EXTENSIBILITY;
            const IS_KEYED: bool = <R::Typed as TopicType>::IS_KEYED;
            const KEY_MAX_SIZE: Option<usize> = <R::Typed as TopicType>::KEY_MAX_SIZE;
        }
    };
}

impl<R: Ready> CdrType for WireIn<R> {
    wire_consts!();

    fn serialize(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        if w.encoding() != Encoding::XCDR1_LE {
            return Err(CdrError::UnsupportedEncapsulation(
                Representation::for_type(R::Typed::EXTENSIBILITY, w.encoding()).id(),
            ));
        }
        w.write_raw(self.body);
        Ok(())
    }

    fn deserialize(_r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        // Writers never decode; a borrowed body cannot be built from received bytes.
        Err(CdrError::UnsupportedEncapsulation(0))
    }

    fn serialize_key(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        transcode_key::<R>(self.body, Encoding::XCDR1_LE, w)
    }

    fn serialize_key_holder(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        // Both shipped keyed types have a key holder equal to their key form in XCDR1.
        transcode_key::<R>(self.body, Encoding::XCDR1_LE, w)
    }
}
wire_topic_type!(WireIn);

/// Reader-side sample: a received payload (encapsulation header + body), in a buffer
/// reused from take to take.
pub(crate) struct WireOut<R> {
    /// Header (rebuilt from the encoding, options 0) followed by the body without padding.
    pub(crate) bytes: Vec<u8>,
    encoding: Encoding,
    _r: PhantomData<fn() -> R>,
}

impl<R> Default for WireOut<R> {
    fn default() -> Self {
        Self {
            bytes: Vec::new(),
            encoding: Encoding::XCDR1_LE,
            _r: PhantomData,
        }
    }
}

impl<R: Ready> CdrType for WireOut<R> {
    wire_consts!();

    fn serialize(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        if w.encoding() != self.encoding {
            return Err(CdrError::UnsupportedEncapsulation(
                Representation::for_type(R::Typed::EXTENSIBILITY, w.encoding()).id(),
            ));
        }
        w.write_raw(&self.bytes[EncapsulationHeader::LEN..]);
        Ok(())
    }

    fn deserialize(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        let mut v = Self::default();
        v.deserialize_into(r)?;
        Ok(v)
    }

    fn deserialize_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        let encoding = r.encoding();
        let body = r.read_raw(r.remaining())?;
        // A malformed sample fails here: the reader drops it and counts it.
        R::validate(&mut CdrReader::new(body, encoding))?;
        self.encoding = encoding;
        self.bytes.clear();
        let header =
            EncapsulationHeader::new(Representation::for_type(R::Typed::EXTENSIBILITY, encoding));
        self.bytes.extend_from_slice(&header.to_bytes());
        self.bytes.extend_from_slice(body);
        Ok(())
    }

    fn serialize_key(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        transcode_key::<R>(&self.bytes[EncapsulationHeader::LEN..], self.encoding, w)
    }
}
wire_topic_type!(WireOut);

#[cfg(test)]
mod tests {
    use super::*;
    use ferrodds_cdr::{
        decode_sample, encode_key, encode_sample, key_hash, key_hash_with, Encoding,
    };

    fn shape(color: &str, x: i32) -> ShapeType {
        ShapeType {
            color: color.into(),
            x,
            y: 2,
            shapesize: 3,
        }
    }

    fn payload<T: TopicType>(v: &T, enc: Encoding) -> Vec<u8> {
        let mut out = Vec::new();
        encode_sample(v, enc, &mut out).unwrap();
        out
    }

    /// An XCDR1 little-endian ShapeType payload built by hand (no bound check).
    fn raw_shape(color: &str) -> Vec<u8> {
        let mut p = vec![0, 1, 0, 0];
        p.extend_from_slice(&(color.len() as u32 + 1).to_le_bytes());
        p.extend_from_slice(color.as_bytes());
        p.push(0);
        while p.len() % 4 != 0 {
            p.push(0);
        }
        for v in [1i32, 2, 3] {
            p.extend_from_slice(&v.to_le_bytes());
        }
        p
    }

    fn leak(v: Vec<u8>) -> &'static [u8] {
        Box::leak(v.into_boxed_slice())
    }

    /// A `WireIn` over a typed sample serializes to the same payload, key hash and key
    /// payload as the typed sample itself.
    fn wire_in_matches<R: Ready>(typed: &R::Typed) {
        let p = payload(typed, Encoding::XCDR1_LE);
        let body = xcdr1_le_body(&p).unwrap();
        validate_body::<R>(body).unwrap();
        let w = WireIn::<R>::new(leak(body.to_vec()));
        assert_eq!(payload(&w, Encoding::XCDR1_LE), p);
        assert_eq!(key_hash(&w).unwrap(), key_hash(typed).unwrap());
        let mut scratch = Vec::new();
        assert_eq!(
            key_hash_with(&w, XcdrVersion::Xcdr2, &mut scratch).unwrap(),
            key_hash_with(typed, XcdrVersion::Xcdr2, &mut scratch).unwrap()
        );
        let (mut a, mut b) = (Vec::new(), Vec::new());
        encode_key(&w, Encoding::XCDR1_LE, &mut a).unwrap();
        encode_key(typed, Encoding::XCDR1_LE, &mut b).unwrap();
        assert_eq!(a, b, "dispose payload");
    }

    #[test]
    fn wire_in_is_the_typed_sample_on_the_wire() {
        for (c, x) in [("BLUE", 1), ("", 2), ("A COLOR OF 21 CHARS..", -3)] {
            wire_in_matches::<Shape>(&shape(c, x));
            // Instance operations need only the key members: a body cut after them.
            let p = payload(&shape(c, x), Encoding::XCDR1_LE);
            let key_only = &xcdr1_le_body(&p).unwrap()[..4 + c.len() + 1];
            let w = WireIn::<Shape>::new(leak(key_only.to_vec()));
            assert_eq!(key_hash(&w).unwrap(), key_hash(&shape(c, 0)).unwrap());
        }
        let keyed = TestDataKeyed {
            key: [1, 2, 3, 4],
            seq_num: 9,
            bin_data: vec![7; 33],
            ..Default::default()
        };
        wire_in_matches::<PerfKeyed>(&keyed);
        wire_in_matches::<PerfKeyedLarge>(&TestDataKeyedLarge {
            key: [9, 9, 9, 9],
            bin_data: vec![1; 70_000],
            ..Default::default()
        });
        wire_in_matches::<Perf>(&TestData {
            bin_data: vec![5; 3],
            ..Default::default()
        });
        wire_in_matches::<PerfLarge>(&TestDataLarge::default());
    }

    #[test]
    fn bad_bodies_are_refused_with_the_reason() {
        let p = payload(&shape("RED", 1), Encoding::XCDR1_LE);
        let body = xcdr1_le_body(&p).unwrap();
        for cut in 0..body.len() {
            assert!(validate_body::<Shape>(&body[..cut]).is_err(), "cut {cut}");
        }
        let mut long = body.to_vec();
        long.extend_from_slice(&[0; 4]);
        assert!(validate_body::<Shape>(&long)
            .unwrap_err()
            .to_string()
            .contains("bytes after its last member"));
        assert_eq!(
            raw_shape("RED"),
            payload(&shape("RED", 1), Encoding::XCDR1_LE)
        );
        let too_long = raw_shape(&"C".repeat(129));
        let e = validate_body::<Shape>(xcdr1_le_body(&too_long).unwrap()).unwrap_err();
        assert!(e.to_string().contains("exceeds bound 128"), "{e}");
        let big = TestDataLarge {
            bin_data: vec![0; 65_471],
            ..Default::default()
        };
        let p = payload(&big, Encoding::XCDR1_LE);
        let e = validate_body::<Perf>(xcdr1_le_body(&p).unwrap()).unwrap_err();
        assert!(e.to_string().contains("65470"), "{e}");
        validate_body::<PerfLarge>(xcdr1_le_body(&p).unwrap()).unwrap();
        // Only XCDR1 little-endian is written.
        let be = payload(&shape("RED", 1), Encoding::XCDR1_BE);
        assert!(matches!(
            xcdr1_le_body(&be),
            Err(CdrError::UnsupportedEncapsulation(0))
        ));
        assert!(xcdr1_le_body(&[0, 1]).is_err());
        assert!(xcdr1_le_body(&[0, 1, 0, 3, 1]).is_err(), "padding > body");
    }

    #[test]
    fn wire_out_keeps_any_encoding_and_its_key() {
        let s = shape("MAGENTA", 5);
        for enc in [
            Encoding::XCDR1_LE,
            Encoding::XCDR1_BE,
            Encoding::XCDR2_LE,
            Encoding::XCDR2_BE,
        ] {
            let p = payload(&s, enc);
            let out: WireOut<Shape> = decode_sample(&p).unwrap();
            // The bytes decode as the typed sample.
            assert_eq!(
                decode_sample::<ShapeType>(&out.bytes).unwrap(),
                s,
                "{enc:?}"
            );
            assert_eq!(
                key_hash(&out).unwrap(),
                key_hash(&s).unwrap(),
                "key of {enc:?}"
            );
        }
        let bad = raw_shape(&"C".repeat(129));
        assert!(decode_sample::<WireOut<Shape>>(&bad).is_err());
        // Decoding into a used value reuses its buffer.
        let mut v = WireOut::<Shape>::default();
        ferrodds_cdr::decode_sample_into(&payload(&s, Encoding::XCDR1_LE), &mut v).unwrap();
        let cap = v.bytes.capacity();
        ferrodds_cdr::decode_sample_into(&payload(&shape("RED", 1), Encoding::XCDR1_LE), &mut v)
            .unwrap();
        assert_eq!(v.bytes.capacity(), cap);
    }
}
