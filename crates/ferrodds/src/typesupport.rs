//! Glue between [`ferrodds_cdr::TopicType`] and the runtime: serialization into reusable
//! buffers, key hashes, and the key extractor a keyed reader's engine cache uses. (Key
//! hashing itself lives in `ferrodds-cdr`.)

use std::sync::{Arc, Mutex};

use ferrodds_cdr::{
    decode_sample, decode_sample_into, encode_key, encode_sample, key_hash_from_any_key_payload,
    key_hash_with, Encoding, TopicType, XcdrVersion,
};
use ferrodds_rtps::{ChangeKind, KeyExtractor};

use crate::error::DdsError;
use crate::sync::lock;

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

/// How a keyed reader's engine cache computes the key hash of changes received without
/// `PID_KEY_HASH` (Cyclone DDS sends none): alive samples are decoded (into a value kept
/// for the next one) and their key hashed; dispose/unregister payloads are key holders
/// ([`ferrodds_cdr::key_hash_from_any_key_payload`]). `None` for unkeyed types.
pub(crate) fn key_extractor<T: TopicType + Send + 'static>() -> Option<KeyExtractor> {
    if !T::IS_KEYED {
        return None;
    }
    let scratch: Mutex<(Option<T>, Vec<u8>)> = Mutex::new((None, Vec::new()));
    Some(KeyExtractor(Arc::new(
        move |kind: ChangeKind, payload: &[u8]| {
            if kind != ChangeKind::Alive {
                return key_hash_from_any_key_payload::<T>(payload);
            }
            let mut g = lock(&scratch);
            let (value, key) = &mut *g;
            let v: &T = match value {
                Some(v) => {
                    decode_sample_into(payload, v).ok()?;
                    v
                }
                None => value.insert(decode_sample::<T>(payload).ok()?),
            };
            key_hash_with(v, XcdrVersion::Xcdr1, key).ok().flatten()
        },
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrodds_cdr::types::{ShapeType, TestDataKeyed};

    fn extract(k: &KeyExtractor, kind: ChangeKind, payload: &[u8]) -> Option<[u8; 16]> {
        (k.0)(kind, payload)
    }

    #[test]
    fn key_extractor_hashes_alive_samples_and_reuses_its_value() {
        assert!(
            key_extractor::<ferrodds_cdr::types::TestData>().is_none(),
            "unkeyed"
        );
        let k = key_extractor::<ShapeType>().unwrap();
        let mut scratch = Vec::new();
        for (color, x) in [("BLUE", 10), ("RED", 1), ("A LONGER COLOR NAME", 7)] {
            let s = ShapeType {
                color: color.into(),
                x,
                y: 20,
                shapesize: 30,
            };
            let mut buf = Vec::new();
            serialize(&s, &mut buf).unwrap();
            assert_eq!(&buf[..2], &[0x00, 0x01], "CDR_LE encapsulation");
            let want = instance_key(&s).unwrap();
            assert!(want.is_some());
            assert_eq!(extract(&k, ChangeKind::Alive, &buf), want);
            assert_eq!(want, instance_key_with(&s, &mut scratch).unwrap());
            assert_eq!(extract(&k, ChangeKind::Alive, &buf[..3]), None, "truncated");
        }
    }

    #[test]
    fn key_only_payload_gives_the_key_hash_for_octet_keys() {
        let s = TestDataKeyed {
            key: [1, 2, 3, 4],
            ..TestDataKeyed::default()
        };
        let mut buf = Vec::new();
        serialize_key(&s, &mut buf).unwrap();
        let k = key_extractor::<TestDataKeyed>().unwrap();
        let h = extract(&k, ChangeKind::NotAliveDisposed, &buf).unwrap();
        assert_eq!(Some(h), instance_key(&s).unwrap());
        assert_eq!(extract(&k, ChangeKind::NotAliveDisposed, &[0, 1]), None);
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
            assert_eq!(
                extract(
                    &key_extractor::<ShapeType>().unwrap(),
                    ChangeKind::NotAliveUnregistered,
                    &buf
                ),
                want,
                "{enc:?}"
            );
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
            extract(
                &key_extractor::<ShapeType>().unwrap(),
                ChangeKind::NotAliveUnregistered,
                &buf
            ),
            instance_key(&c0).unwrap(),
            "uncounted padding"
        );
        // garbage is not a key
        assert_eq!(
            extract(
                &key_extractor::<ShapeType>().unwrap(),
                ChangeKind::NotAliveUnregistered,
                &[0, 1, 0, 0, 0xff, 0xff, 0xff, 0x7f]
            ),
            None
        );
    }
}
