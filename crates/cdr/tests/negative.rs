//! Malformed input: truncation at every offset, absurd lengths, bounds, garbage.
//! Every case must return an error; none may panic or allocate from a wire length.

mod common;

use common::*;
use ferrodds_cdr::types::{ShapeType, TestData, TestDataKeyed, TestDataKeyedLarge, TestDataLarge};
use ferrodds_cdr::{
    decode_sample, encode_sample, CdrError, CdrReader, CdrType, Encoding, TopicType,
};
use proptest::prelude::*;

fn encode<T: TopicType>(v: &T, e: Encoding) -> Vec<u8> {
    let mut b = Vec::new();
    encode_sample(v, e, &mut b).unwrap();
    b
}

fn every_prefix_fails<T: TopicType + std::fmt::Debug>(v: &T) {
    for e in ENCODINGS {
        let full = encode(v, e);
        assert!(decode_sample::<T>(&full).is_ok());
        for cut in 0..full.len() {
            let r = decode_sample::<T>(&full[..cut]);
            assert!(
                r.is_err(),
                "{} {e:?} prefix {cut}/{} decoded: {r:?}",
                T::TYPE_NAME,
                full.len()
            );
        }
    }
}

fn sample_mut_all() -> MutAll {
    MutAll {
        id: 3,
        p: Prims {
            g: 1 << 40,
            l: 'z',
            m: Mode::Auto,
            ..Prims::default()
        },
        c: Collections {
            s: "héllo".into(),
            bs: "bound".into(),
            v8: vec![1, 2, 3],
            v16: vec![4],
            v64: vec![0.5],
            vs: vec!["a".into(), String::new()],
            arr: [1, 2, 3],
            arr_s: ["x".into(), "yz".into()],
            nested: vec![Prims::default()],
            bv: vec![9, 9],
            grid: [[1, 2], [3, 4], [5, 6]],
            vv: vec![vec![1], vec![]],
        },
        mode: Mode::On,
        tail: u64::MAX,
        far: -1,
    }
}

#[test]
fn truncation_at_every_offset_is_an_error() {
    let perf = TestData {
        key: [1, 2, 3, 4],
        latency_ping: -1,
        bin_data: vec![9; 13],
        ..TestData::default()
    };
    every_prefix_fails(&perf);
    every_prefix_fails(&TestDataKeyed {
        bin_data: vec![1],
        ..TestDataKeyed::default()
    });
    every_prefix_fails(&TestDataLarge::default());
    every_prefix_fails(&TestDataKeyedLarge::default());
    every_prefix_fails(&ShapeType {
        color: "PURPLE".into(),
        x: 1,
        y: 2,
        shapesize: 3,
    });
    every_prefix_fails(&sample_mut_all());
    every_prefix_fails(&Collections::default());
}

#[test]
fn huge_lengths_rejected_without_allocating() {
    // sequence<octet> claiming 4 GiB with 10 bytes left.
    let mut p = vec![0x00, 0x01, 0x00, 0x00];
    p.extend_from_slice(&[0; 24]);
    p.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
    p.extend_from_slice(&[0; 10]);
    // TestDataLarge is unbounded, so only the input-size check can stop this one.
    assert_eq!(
        decode_sample::<TestDataLarge>(&p),
        Err(CdrError::Truncated {
            offset: 28,
            needed: 0xffff_ffff,
            have: 10
        })
    );
    // The bounded type stops at the bound first.
    assert_eq!(
        decode_sample::<TestData>(&p),
        Err(CdrError::BoundExceeded {
            len: 0xffff_ffff,
            bound: 65_470
        })
    );

    // sequence<string> with a billion elements: would be 24 GB of `String`s if allocated.
    let b = [0x40, 0x00, 0x00, 0x00, 0x00, 0x00];
    let mut r = CdrReader::new(&b, Encoding::XCDR1_BE);
    assert_eq!(
        <Vec<String>>::deserialize(&mut r),
        Err(CdrError::Truncated {
            offset: 4,
            needed: 0x4000_0000 * 4,
            have: 2
        })
    );
    // Same through an XCDR2 DHEADER that lies about its size.
    let b = [0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0x3f];
    let mut r = CdrReader::new(&b, Encoding::XCDR2_LE);
    assert!(matches!(
        <Vec<Vec<u64>>>::deserialize(&mut r),
        Err(CdrError::Truncated { have: 4, .. })
    ));
    // A string claiming 4 GiB.
    let b = [0xff, 0xff, 0xff, 0xff, b'a', 0];
    let mut r = CdrReader::new(&b, Encoding::XCDR1_LE);
    assert!(matches!(
        String::deserialize(&mut r),
        Err(CdrError::Truncated { have: 2, .. })
    ));
    // An XCDR2 member with LC=7 and a NEXTINT whose byte count overflows 32 bits.
    #[rustfmt::skip]
    let b = [
        0x00, 0x0b, 0x00, 0x00,
        12, 0, 0, 0,
        0x01, 0, 0, 0x70, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0,
    ];
    assert!(matches!(
        decode_sample::<MutAll>(&b),
        Err(CdrError::Truncated { .. }) | Err(CdrError::BadMemberHeader { .. })
    ));
    // An XCDR1 extended parameter claiming a 4 GiB member.
    #[rustfmt::skip]
    let b = [
        0x00, 0x03, 0x00, 0x00,
        0x01, 0x3f, 0x08, 0x00, 0x01, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
        0x02, 0x3f, 0x00, 0x00,
    ];
    assert!(matches!(
        decode_sample::<MutAll>(&b),
        Err(CdrError::Truncated {
            offset: 12,
            needed: 0xffff_ffff,
            have: 4
        })
    ));
}

#[test]
fn bounds_checked_on_decode() {
    // ShapeType color of 129 characters (bound 128).
    let mut p = vec![0x00, 0x01, 0x00, 0x00, 130, 0, 0, 0];
    p.extend_from_slice(&[b'a'; 129]);
    p.push(0);
    p.extend_from_slice(&[0; 2 + 12]);
    assert_eq!(
        decode_sample::<ShapeType>(&p),
        Err(CdrError::BoundExceeded {
            len: 129,
            bound: 128
        })
    );
    // Collections.bv is sequence<unsigned long, 4>; send 5.
    let c = Collections {
        bv: vec![1, 2, 3, 4, 5],
        ..Collections::default()
    };
    assert_eq!(
        encode_sample(&c, Encoding::XCDR1_LE, &mut Vec::new()),
        Err(CdrError::BoundExceeded { len: 5, bound: 4 })
    );
}

#[test]
fn invalid_values() {
    let mut shape = encode(
        &ShapeType {
            color: "ab".into(),
            ..ShapeType::default()
        },
        Encoding::XCDR1_LE,
    );
    shape[10] = 1; // the NUL after "ab"
    assert_eq!(
        decode_sample::<ShapeType>(&shape),
        Err(CdrError::MissingNul { offset: 4 })
    );
    shape[10] = 0;
    shape[8] = 0xc3; // a lone UTF-8 lead byte
    assert_eq!(
        decode_sample::<ShapeType>(&shape),
        Err(CdrError::InvalidUtf8 { offset: 4 })
    );
    // bool 2, enum 7.
    let mut r = CdrReader::new(&[2], Encoding::XCDR1_LE);
    assert_eq!(bool::deserialize(&mut r), Err(CdrError::InvalidBool(2)));
    let mut r = CdrReader::new(&[0, 0, 0, 7], Encoding::XCDR1_BE);
    assert_eq!(Mode::deserialize(&mut r), Err(CdrError::InvalidEnum(7)));
    // Unknown encapsulation and bad padding.
    assert_eq!(
        decode_sample::<ShapeType>(&[0x00, 0x0c, 0, 0]),
        Err(CdrError::UnknownEncapsulation(0x000c))
    );
    assert_eq!(
        decode_sample::<ShapeType>(&[0x00, 0x01, 0, 3, 0, 0]),
        Err(CdrError::BadPadding {
            padding: 3,
            body: 2
        })
    );
    // char above U+00FF cannot be written.
    let p = Prims {
        l: 'Ω',
        ..Prims::default()
    };
    assert_eq!(
        encode_sample(&p, Encoding::XCDR1_LE, &mut Vec::new()),
        Err(CdrError::CharOutOfRange('Ω'))
    );
}

fn decode_all(bytes: &[u8]) {
    let _ = decode_sample::<TestData>(bytes);
    let _ = decode_sample::<TestDataKeyedLarge>(bytes);
    let _ = decode_sample::<ShapeType>(bytes);
    let _ = decode_sample::<Collections>(bytes);
    let _ = decode_sample::<MutAll>(bytes);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn garbage_never_panics(id in 0u8..12, opt in 0u8..4, body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut p = vec![0, id, 0, opt];
        p.extend_from_slice(&body);
        decode_all(&p);
    }

    #[test]
    fn mutated_valid_payloads_never_panic(
        m in mut_all(),
        e in 0usize..4,
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
    ) {
        let mut p = encode(&m, ENCODINGS[e]);
        for (at, x) in flips {
            let i = at % p.len();
            p[i] ^= x;
        }
        decode_all(&p);
    }
}

/// A recursive type: the only way nesting depth can come from the input.
#[derive(Debug, PartialEq, ferrodds_cdr::TopicType)]
#[dds(extensibility = "appendable")]
struct Tree {
    label: u8,
    children: Vec<Tree>,
}

/// A chain of `depth` nested trees (each with one child), built without recursion.
fn chain(depth: usize) -> Tree {
    let mut t = Tree {
        label: 0,
        children: Vec::new(),
    };
    for i in 1..depth {
        t = Tree {
            label: (i % 251) as u8,
            children: vec![t],
        };
    }
    t
}

#[test]
fn deeply_nested_input_is_an_error_not_a_stack_overflow() {
    // Runs on a small stack: without a depth limit the decoder recursed once per nesting
    // level and a ~1 MB payload aborted the process.
    let handle = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(|| {
            for e in ENCODINGS {
                // At the limit: decodes and round-trips.
                let ok = chain(ferrodds_cdr::MAX_NESTING_DEPTH);
                let bytes = encode(&ok, e);
                assert_eq!(decode_sample::<Tree>(&bytes).unwrap(), ok, "{e:?}");
                // One level more fails cleanly.
                let deep = chain(ferrodds_cdr::MAX_NESTING_DEPTH + 1);
                let bytes = encode(&deep, e);
                assert_eq!(
                    decode_sample::<Tree>(&bytes),
                    Err(CdrError::TooDeep {
                        max: ferrodds_cdr::MAX_NESTING_DEPTH
                    })
                );
            }
            // Hand-made XCDR1 input nesting 300 000 levels (label, count 1, ...).
            let mut b = vec![0u8, 1, 0, 0];
            for _ in 0..300_000 {
                b.extend_from_slice(&[7, 0, 0, 0]);
                b.extend_from_slice(&1u32.to_le_bytes());
            }
            assert!(matches!(
                decode_sample::<Tree>(&b),
                Err(CdrError::TooDeep { .. })
            ));
        })
        .unwrap();
    handle.join().unwrap();
}
