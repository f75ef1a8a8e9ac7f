//! Property tests: everything encodes and decodes back to itself in every encapsulation.

mod common;

use common::*;
use ferrodds_cdr::types::{ShapeType, TestData, TestDataKeyed, TestDataKeyedLarge, TestDataLarge};
use ferrodds_cdr::{
    decode_sample, decode_sample_into, encode_sample, key_hash, CdrReader, CdrType, CdrWriter,
    EncapsulationHeader, Encoding, Representation, TopicType,
};
use proptest::prelude::*;

fn round_trip<T: TopicType + PartialEq + std::fmt::Debug>(v: &T) -> Result<(), TestCaseError> {
    for e in ENCODINGS {
        let mut buf = vec![0x55; 3]; // pre-existing bytes must not disturb anything
        let n = encode_sample(v, e, &mut buf).unwrap();
        prop_assert_eq!(n, buf.len() - 3);
        let payload = &buf[3..];
        prop_assert_eq!(payload.len() % 4, 0);
        let (h, _) = EncapsulationHeader::parse(payload).unwrap();
        prop_assert_eq!(
            h.representation,
            Representation::for_type(T::EXTENSIBILITY, e)
        );
        let back = decode_sample::<T>(payload).unwrap();
        prop_assert_eq!(&back, v);
    }
    Ok(())
}

/// `decode_sample_into` a value that held `a` gives `b` in every encoding (and the other
/// way round): no member of the earlier value survives.
fn into_round_trip<T: TopicType + PartialEq + Default + std::fmt::Debug>(
    a: &T,
    b: &T,
) -> Result<(), TestCaseError> {
    for e in ENCODINGS {
        let (mut pa, mut pb) = (Vec::new(), Vec::new());
        encode_sample(a, e, &mut pa).unwrap();
        encode_sample(b, e, &mut pb).unwrap();
        let mut x = T::default();
        decode_sample_into(&pa, &mut x).unwrap();
        prop_assert_eq!(&x, a);
        decode_sample_into(&pb, &mut x).unwrap();
        prop_assert_eq!(&x, b);
        decode_sample_into(&pa, &mut x).unwrap();
        prop_assert_eq!(&x, a);
    }
    Ok(())
}

/// Writes `v` after `skew` bytes and reads it back: alignment is counted from the
/// writer's origin, so the value bytes do not depend on what precedes the body.
fn value_round_trip<T: CdrType + PartialEq + std::fmt::Debug>(
    v: &T,
    skew: usize,
) -> Result<(), TestCaseError> {
    for e in ENCODINGS {
        let mut buf = Vec::new();
        let mut w = CdrWriter::new(&mut buf, e);
        for _ in 0..skew {
            w.write_u8(0xee);
        }
        v.serialize(&mut w).unwrap();
        let mut r = CdrReader::new(&buf, e);
        for _ in 0..skew {
            prop_assert_eq!(r.read_u8().unwrap(), 0xee);
        }
        prop_assert_eq!(&T::deserialize(&mut r).unwrap(), v);
        prop_assert_eq!(r.remaining(), 0);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn primitives(p in prims(), skew in 0usize..8) {
        value_round_trip(&p, skew)?;
        value_round_trip(&p.g, skew)?;
        value_round_trip(&p.j, skew)?;
        value_round_trip(&p.c, skew)?;
        value_round_trip(&p.l, skew)?;
        round_trip(&p)?;
    }

    #[test]
    fn strings_sequences_arrays(
        s in text(40),
        v in proptest::collection::vec(any::<i64>(), 0..20),
        vs in proptest::collection::vec(text(6), 0..6),
        a in any::<[u16; 5]>(),
        skew in 0usize..8,
    ) {
        value_round_trip(&s, skew)?;
        value_round_trip(&v, skew)?;
        value_round_trip(&vs, skew)?;
        value_round_trip(&a, skew)?;
    }

    #[test]
    fn nested_appendable(c in collections()) {
        round_trip(&c)?;
    }

    #[test]
    fn nested_mutable(m in mut_all()) {
        round_trip(&m)?;
        prop_assert!(key_hash(&m).unwrap().is_some());
    }

    #[test]
    fn perftest_types(
        a in test_data(), b in test_data_keyed(), c in perftest_fields(), d in test_data_keyed_large(),
    ) {
        round_trip::<TestData>(&a)?;
        round_trip::<TestDataKeyed>(&b)?;
        round_trip::<TestDataLarge>(&c)?;
        round_trip::<TestDataKeyedLarge>(&d)?;
        // Keyed perftest hash = the 4 key bytes, zero-padded.
        let h = key_hash(&b).unwrap().unwrap();
        prop_assert_eq!(&h[..4], &b.key[..]);
        prop_assert_eq!(&h[4..], &[0u8; 12][..]);
    }

    #[test]
    fn shapes(s in shape()) {
        round_trip::<ShapeType>(&s)?;
    }

    #[test]
    fn decode_into_replaces_every_member(
        a in test_data(), b in test_data(), k1 in test_data_keyed_large(), k2 in test_data_keyed_large(),
        s1 in shape(), s2 in shape(), c1 in collections(), c2 in collections(),
        m1 in mut_all(), m2 in mut_all(), p1 in prims(), p2 in prims(),
    ) {
        into_round_trip(&a, &b)?;
        into_round_trip(&k1, &k2)?;
        into_round_trip(&s1, &s2)?;
        into_round_trip(&c1, &c2)?;
        into_round_trip(&m1, &m2)?;
        into_round_trip(&p1, &p2)?;
    }

    #[test]
    fn key_hash_depends_only_on_key(a in mut_all(), b in mut_all()) {
        let mut b2 = b.clone();
        b2.id = a.id;
        prop_assert_eq!(key_hash(&a).unwrap(), key_hash(&b2).unwrap());
        if a.id != b.id {
            prop_assert_ne!(key_hash(&a).unwrap(), key_hash(&b).unwrap());
        }
    }
}

#[test]
fn all_encodings_listed() {
    // Guard for the property tests above: they must cover both versions and byte orders.
    let set: std::collections::HashSet<Encoding> = ENCODINGS.into_iter().collect();
    assert_eq!(set.len(), 4);
}

#[test]
fn decode_into_reuses_the_payload_buffer() {
    let big = TestData {
        bin_data: vec![7; 1000],
        ..TestData::default()
    };
    let small = TestData {
        seq_num: 9,
        bin_data: vec![3; 32],
        ..TestData::default()
    };
    let (mut pb, mut ps) = (Vec::new(), Vec::new());
    encode_sample(&big, Encoding::XCDR1_LE, &mut pb).unwrap();
    encode_sample(&small, Encoding::XCDR1_LE, &mut ps).unwrap();
    let mut x = TestData::default();
    decode_sample_into(&pb, &mut x).unwrap();
    let ptr = x.bin_data.as_ptr();
    decode_sample_into(&ps, &mut x).unwrap();
    assert_eq!(x, small);
    assert_eq!(x.bin_data.as_ptr(), ptr, "the sequence kept its buffer");
    decode_sample_into(&pb, &mut x).unwrap();
    assert_eq!(x, big);
    assert_eq!(x.bin_data.as_ptr(), ptr);
    // An undecodable payload is an error, and the value stays usable.
    assert!(decode_sample_into(&ps[..ps.len() - 8], &mut x).is_err());
    decode_sample_into(&ps, &mut x).unwrap();
    assert_eq!(x, small);
}
