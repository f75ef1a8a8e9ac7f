//! `key_hash_from_key_payload`: the key hash computed from a key-only payload (what
//! dispose/unregister samples carry) equals the one computed from the sample, for every
//! payload encoding and both key-hash versions, and malformed payloads are typed errors.

mod common;

use common::*;
use ferrodds_cdr::types::{ShapeType, TestDataKeyed, TestDataKeyedLarge};
use ferrodds_cdr::{
    encode_key, key_hash_from_key_payload, key_hash_from_key_payload_with, key_hash_with,
    TopicType, XcdrVersion,
};
use proptest::prelude::*;

/// Key members declared in an order different from their member ids, of several kinds: the
/// XCDR1 (declaration order) and XCDR2 (id order) key forms differ.
#[derive(Debug, Clone, PartialEq, Default, TopicType)]
#[dds(extensibility = "appendable")]
pub(crate) struct Reordered {
    #[key]
    #[dds(id = 7)]
    pub(crate) a: u8,
    #[dds(id = 1)]
    pub(crate) other: Vec<String>,
    #[key]
    #[dds(id = 3, bound = 12)]
    pub(crate) name: String,
    #[key]
    #[dds(id = 2)]
    pub(crate) wide: u64,
    #[key]
    #[dds(id = 5)]
    pub(crate) inner: [Inner; 2],
}

#[derive(Debug, Clone, PartialEq, Default, TopicType)]
#[dds(extensibility = "appendable")]
pub(crate) struct Inner {
    #[dds(id = 4)]
    pub(crate) not_key: String,
    #[key]
    #[dds(id = 9)]
    pub(crate) hi: i16,
    #[key]
    #[dds(id = 1)]
    pub(crate) lo: u32,
}

#[derive(Debug, Clone, PartialEq, Default, TopicType)]
#[dds(extensibility = "mutable")]
pub(crate) struct MutKeys {
    #[key]
    #[dds(id = 20)]
    pub(crate) zone: String,
    pub(crate) payload: Vec<u8>,
    #[key]
    #[dds(id = 10)]
    pub(crate) unit: u16,
    #[key]
    #[dds(id = 0x4000)]
    pub(crate) inner: Inner,
}

/// A final type without `Default` on its non-key members: the key payload decoder never
/// needs a whole value.
#[derive(Debug, Clone, PartialEq, TopicType)]
pub(crate) struct NoDefault {
    pub(crate) big: [u8; 40],
    #[key]
    pub(crate) id: [u8; 16],
}

fn inner() -> impl Strategy<Value = Inner> {
    (text(5), any::<i16>(), any::<u32>()).prop_map(|(not_key, hi, lo)| Inner { not_key, hi, lo })
}

fn reordered() -> impl Strategy<Value = Reordered> {
    (
        any::<u8>(),
        proptest::collection::vec(text(4), 0..3),
        "[a-z]{0,12}",
        any::<u64>(),
        (inner(), inner()),
    )
        .prop_map(|(a, other, name, wide, (i0, i1))| Reordered {
            a,
            other,
            name,
            wide,
            inner: [i0, i1],
        })
}

fn mut_keys() -> impl Strategy<Value = MutKeys> {
    (
        text(10),
        proptest::collection::vec(any::<u8>(), 0..10),
        any::<u16>(),
        inner(),
    )
        .prop_map(|(zone, payload, unit, inner)| MutKeys {
            zone,
            payload,
            unit,
            inner,
        })
}

/// For every payload encoding and both versions, the payload-derived hash equals the
/// sample-derived one; every strict prefix of the payload is an error or (for trailing
/// padding) the same hash, never a panic.
fn check<T: TopicType + std::fmt::Debug>(sample: &T) {
    let mut scratch = Vec::new();
    for e in ENCODINGS {
        let mut payload = Vec::new();
        encode_key(sample, e, &mut payload).unwrap();
        for version in [XcdrVersion::Xcdr1, XcdrVersion::Xcdr2] {
            let want = key_hash_with(sample, version, &mut Vec::new()).unwrap();
            let got = key_hash_from_key_payload_with::<T>(&payload, version, &mut scratch);
            assert_eq!(
                got,
                Ok(want),
                "{} {e:?} {version:?}: {sample:?}",
                T::TYPE_NAME
            );
        }
        assert_eq!(
            key_hash_from_key_payload::<T>(&payload),
            key_hash_with(sample, XcdrVersion::Xcdr1, &mut Vec::new())
        );
        for cut in 0..payload.len() {
            let _ = key_hash_from_key_payload::<T>(&payload[..cut]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn reordered_keys(v in reordered()) { check(&v); }

    #[test]
    fn mutable_keys(v in mut_keys()) { check(&v); }

    #[test]
    fn mutable_with_nested_types(v in mut_all()) { check(&v); }

    #[test]
    fn shipped_types(s in shape(), k in test_data_keyed(), l in test_data_keyed_large()) {
        check::<ShapeType>(&s);
        check::<TestDataKeyed>(&k);
        check::<TestDataKeyedLarge>(&l);
    }

    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
        let _ = key_hash_from_key_payload::<Reordered>(&bytes);
        let _ = key_hash_from_key_payload::<MutKeys>(&bytes);
        let _ = key_hash_from_key_payload::<MutAll>(&bytes);
    }
}

#[test]
fn non_default_members_and_unkeyed_types() {
    let v = NoDefault {
        big: [7; 40],
        id: [3; 16],
    };
    check(&v);
    let mut p = Vec::new();
    encode_key(&v, ferrodds_cdr::Encoding::XCDR1_LE, &mut p).unwrap();
    assert_eq!(p.len(), 4 + 16, "the key holder has only the key");
    assert_eq!(
        key_hash_from_key_payload::<NoDefault>(&p),
        Ok(Some([3; 16]))
    );
    assert_eq!(key_hash_from_key_payload::<Prims>(&p), Ok(None));
}

#[test]
fn absent_mutable_key_member_takes_its_default() {
    // XCDR1 parameter list with only member 10 (unit = 0x0102); zone and inner are absent.
    let payload = [
        0x00, 0x03, 0x00, 0x00, // PL_CDR_LE
        0x0a, 0x40, 0x04, 0x00, 0x02, 0x01, 0x00, 0x00, // id 10 | M, len 4, u16 + pad
        0x02, 0x3f, 0x00, 0x00, // PID_LIST_END
    ];
    let want = key_hash_with(
        &MutKeys {
            unit: 0x0102,
            ..MutKeys::default()
        },
        XcdrVersion::Xcdr1,
        &mut Vec::new(),
    )
    .unwrap();
    assert_eq!(key_hash_from_key_payload::<MutKeys>(&payload), Ok(want));
}

#[test]
fn malformed_payloads_are_errors() {
    assert!(key_hash_from_key_payload::<Reordered>(&[0, 1]).is_err());
    assert!(key_hash_from_key_payload::<Reordered>(&[0, 5, 0, 0, 1, 2, 3, 4]).is_err());
    // padding count larger than the body
    assert!(key_hash_from_key_payload::<NoDefault>(&[0, 1, 0, 3, 0]).is_err());
    // truncated key
    assert!(key_hash_from_key_payload::<NoDefault>(&[0, 1, 0, 0, 1, 2, 3]).is_err());
}
