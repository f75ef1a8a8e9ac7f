//! Glue between [`ferrodds_cdr::TopicType`] and the runtime: serialization into reusable
//! buffers, key hashes, and the type-erased decoders a reader cache uses.

use std::any::Any;

use ferrodds_cdr::{
    decode_sample, decode_sample_into, encode_key, encode_sample, key_hash_with,
    EncapsulationHeader, Encoding, Endianness, TopicType, XcdrVersion,
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
    Ok(ferrodds_cdr::key_hash(sample)?)
}

/// The key hash of `sample`, using `scratch` for the serialized key (no allocation once
/// `scratch` has grown to the key size).
pub(crate) fn instance_key_with<T: TopicType>(
    sample: &T,
    scratch: &mut Vec<u8>,
) -> Result<Option<[u8; 16]>, DdsError> {
    Ok(key_hash_with(sample, XcdrVersion::Xcdr1, scratch)?)
}

thread_local! {
    /// Serialized-key scratch of the key hashes readers compute (one per receive thread).
    static KEY_SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A type-erased decoder for a reader cache (see [`DecodeFn`]).
///
/// A value already in the slot (a `T` from an earlier sample, recycled by the cache) is
/// decoded into in place, reusing its sequence and string buffers; an empty slot gets a
/// new box. The key hash is computed only when asked for (samples carrying
/// `PID_KEY_HASH` do not need it), into a per-thread scratch buffer.
pub(crate) fn decoder<T: TopicType + Send + 'static>() -> Box<DecodeFn> {
    Box::new(
        |payload: &[u8], slot: &mut Option<Box<dyn Any + Send>>, want_key: bool| {
            let v: &T = match slot.as_mut().and_then(|b| b.downcast_mut::<T>()) {
                Some(v) => {
                    decode_sample_into(payload, v).ok()?;
                    v
                }
                None => {
                    let b = slot.insert(Box::new(decode_sample::<T>(payload).ok()?));
                    b.downcast_ref::<T>()?
                }
            };
            if !(T::IS_KEYED && want_key) {
                return Some(None);
            }
            Some(KEY_SCRATCH.with(|s| {
                let mut s = s.borrow_mut();
                key_hash_with(v, XcdrVersion::Xcdr1, &mut s).ok().flatten()
            }))
        },
    )
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
        let decode = decoder::<ShapeType>();
        let mut slot = None;
        let key = decode(&buf, &mut slot, true).unwrap();
        let back = slot.take().unwrap().downcast::<ShapeType>().unwrap();
        assert_eq!(*back, s);
        assert_eq!(key, instance_key(&s).unwrap());
        let mut scratch = Vec::new();
        assert_eq!(key, instance_key_with(&s, &mut scratch).unwrap());
        assert_eq!(
            decode(&buf, &mut slot, false),
            Some(None),
            "key not asked for"
        );
        assert!(decode(&buf[..3], &mut None, true).is_none());

        // A recycled value is decoded into in place (same box, same string buffer).
        let other = ShapeType {
            color: "RED".into(),
            x: 1,
            y: 2,
            shapesize: 3,
        };
        let mut buf2 = Vec::new();
        serialize(&other, &mut buf2).unwrap();
        let mut slot = Some(back as Box<dyn Any + Send>);
        let (addr, color) = {
            let v = slot.as_ref().unwrap().downcast_ref::<ShapeType>().unwrap();
            (v as *const ShapeType, v.color.as_ptr())
        };
        assert_eq!(
            decode(&buf2, &mut slot, true).unwrap(),
            instance_key(&other).unwrap()
        );
        let v = slot.as_ref().unwrap().downcast_ref::<ShapeType>().unwrap();
        assert_eq!(*v, other);
        assert_eq!(v as *const ShapeType, addr);
        assert_eq!(v.color.as_ptr(), color);
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
