//! Glue between [`ferrodds_cdr::TopicType`] and the runtime: serialization into reusable
//! buffers, key hashes, and the type-erased decoders a reader cache uses.

use std::any::Any;

use ferrodds_cdr::{
    decode_sample, encode_key, encode_sample, key_hash, key_hash_with, EncapsulationHeader,
    Encoding, Endianness, TopicType, XcdrVersion,
};

use crate::entity::{DecodeFn, KeyFn};
use crate::error::DdsError;

/// Encoding used for user data: XCDR1 little-endian (Cyclone's default for final types; the
/// absence of `DATA_REPRESENTATION` in discovery means XCDR1).
pub(crate) const USER_ENCODING: Encoding = Encoding::XCDR1_LE;

/// Serializes `sample` (encapsulation header + body) into `out` (cleared first).
pub(crate) fn serialize<T: TopicType>(sample: &T, out: &mut Vec<u8>) -> Result<(), DdsError> {
    out.clear();
    encode_sample(sample, USER_ENCODING, out)?;
    Ok(())
}

/// Serializes the key members of `sample` (for dispose/unregister) into `out`.
pub(crate) fn serialize_key<T: TopicType>(sample: &T, out: &mut Vec<u8>) -> Result<(), DdsError> {
    out.clear();
    encode_key(sample, USER_ENCODING, out)?;
    Ok(())
}

/// The key hash of `sample` (`None` for unkeyed types). The runtime uses
/// [`instance_key_with`]; this allocating form checks it in tests.
#[cfg(test)]
pub(crate) fn instance_key<T: TopicType>(sample: &T) -> Result<Option<[u8; 16]>, DdsError> {
    Ok(key_hash(sample)?)
}

/// The key hash of `sample`, using `scratch` for the serialized key (no allocation once
/// `scratch` has grown to the key size).
pub(crate) fn instance_key_with<T: TopicType>(
    sample: &T,
    scratch: &mut Vec<u8>,
) -> Result<Option<[u8; 16]>, DdsError> {
    Ok(key_hash_with(sample, XcdrVersion::Xcdr1, scratch)?)
}

/// A type-erased decoder for a reader cache.
pub(crate) fn decoder<T: TopicType + Send + 'static>() -> Box<DecodeFn> {
    Box::new(|payload: &[u8]| {
        let v: T = decode_sample(payload).ok()?;
        let k = if T::IS_KEYED {
            key_hash(&v).ok().flatten()
        } else {
            None
        };
        Some((Box::new(v) as Box<dyn Any + Send>, k))
    })
}

/// Key hash from a key-only payload (dispose/unregister without `PID_KEY_HASH`, as Cyclone
/// sends them).
///
/// The payload is the key-holder serialization (key members only), decoded member by member
/// by [`ferrodds_cdr::key_hash_from_key_payload`] in whatever encoding it uses. If it does
/// not decode as this type's key holder, a big-endian XCDR1 body is taken as the key
/// serialization itself; anything else yields `None` (the sample then names the nil
/// instance).
pub(crate) fn key_decoder<T: TopicType + 'static>() -> Box<KeyFn> {
    Box::new(|payload: &[u8]| {
        if !T::IS_KEYED {
            return None;
        }
        if let Ok(hash) = ferrodds_cdr::key_hash_from_key_payload::<T>(payload) {
            return hash;
        }
        let (header, body) = EncapsulationHeader::parse(payload).ok()?;
        let body = body.get(..body.len().checked_sub(header.padding())?)?;
        let encoding = header.representation.encoding();
        // 2. the body is the big-endian key serialization itself
        if encoding.endianness != Endianness::Big {
            return None;
        }
        let mut h = [0u8; 16];
        match T::KEY_MAX_SIZE {
            Some(m) if m <= 16 => {
                let n = body.len().min(m).min(16);
                h[..n].copy_from_slice(&body[..n]);
            }
            _ => {
                use md5::Digest;
                h.copy_from_slice(&md5::Md5::digest(body));
            }
        }
        Some(h)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrodds_cdr::types::{ShapeType, TestDataKeyed};

    #[test]
    fn shape_round_trip_through_decoder() {
        let s = ShapeType {
            color: "BLUE".into(),
            x: 10,
            y: 20,
            shapesize: 30,
        };
        let mut buf = Vec::new();
        serialize(&s, &mut buf).unwrap();
        assert_eq!(&buf[..2], &[0x00, 0x01], "CDR_LE encapsulation");
        let (any, key) = decoder::<ShapeType>()(&buf).unwrap();
        let back = any.downcast::<ShapeType>().unwrap();
        assert_eq!(*back, s);
        assert_eq!(key, instance_key(&s).unwrap());
        let mut scratch = Vec::new();
        assert_eq!(key, instance_key_with(&s, &mut scratch).unwrap());
        assert!(decoder::<ShapeType>()(&buf[..3]).is_none());
    }

    #[test]
    fn key_only_payload_gives_the_key_hash_for_octet_keys() {
        let s = TestDataKeyed {
            key: [1, 2, 3, 4],
            ..TestDataKeyed::default()
        };
        let mut buf = Vec::new();
        serialize_key(&s, &mut buf).unwrap();
        let h = key_decoder::<TestDataKeyed>()(&buf).unwrap();
        assert_eq!(Some(h), instance_key(&s).unwrap());
        assert_eq!(key_decoder::<TestDataKeyed>()(&[0, 1]), None);
    }

    #[test]
    fn key_only_payload_of_string_key_in_every_encoding() {
        let s = ShapeType {
            color: "MAGENTA".into(),
            x: 3,
            y: 4,
            shapesize: 5,
        };
        let want = instance_key(&s).unwrap();
        assert!(want.is_some());
        for enc in [
            Encoding::XCDR1_LE,
            Encoding::XCDR1_BE,
            Encoding::XCDR2_LE,
            Encoding::XCDR2_BE,
        ] {
            let mut buf = Vec::new();
            encode_key(&s, enc, &mut buf).unwrap();
            assert_eq!(key_decoder::<ShapeType>()(&buf), want, "{enc:?}");
        }
        // a sender that does not count its trailing padding in the options field
        let c0 = ShapeType {
            color: "C0".into(),
            ..ShapeType::default()
        };
        let mut buf = Vec::new();
        encode_key(&c0, Encoding::XCDR1_LE, &mut buf).unwrap();
        assert_eq!(buf[3], 1, "one padding byte counted");
        buf[3] = 0;
        assert_eq!(
            key_decoder::<ShapeType>()(&buf),
            instance_key(&c0).unwrap(),
            "uncounted padding"
        );
        // garbage is not a key
        assert_eq!(
            key_decoder::<ShapeType>()(&[0, 1, 0, 0, 0xff, 0xff, 0xff, 0x7f]),
            None
        );
    }
}
