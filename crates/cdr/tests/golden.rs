//! Golden bytes for the shipped types, hand-derived from the XCDR rules, in both byte
//! orders and both XCDR versions; plus key hashes with independently computed values.

use ferrodds_cdr::types::{
    ShapeType, TestData, TestDataKeyed, TestDataKeyedLarge, TestDataLarge, PERFTEST_OVERHEAD_BYTES,
};
use ferrodds_cdr::{
    decode_sample, encode_key, encode_sample, key_hash, key_hash_with, CdrError, Encoding,
    TopicType, XcdrVersion,
};

fn encode<T: TopicType>(v: &T, e: Encoding) -> Vec<u8> {
    let mut buf = Vec::new();
    let n = encode_sample(v, e, &mut buf).unwrap();
    assert_eq!(n, buf.len());
    buf
}

fn perftest_fields() -> ([u8; 4], i32, u32, i32, u32, i32, Vec<u8>) {
    ([1, 2, 3, 4], 5, 6, 7, 8, -1, vec![0xde, 0xad, 0xbe])
}

macro_rules! perftest_sample {
    ($t:ident) => {{
        let (key, entity_id, seq_num, timestamp_sec, timestamp_usec, latency_ping, bin_data) =
            perftest_fields();
        $t {
            key,
            entity_id,
            seq_num,
            timestamp_sec,
            timestamp_usec,
            latency_ping,
            bin_data,
        }
    }};
}

// Body of the perftest sample above in little-endian; every member is naturally aligned,
// and no member is 8 bytes wide, so XCDR1 and XCDR2 bodies are identical.
#[rustfmt::skip]
const PERFTEST_BODY_LE: [u8; 32] = [
    1, 2, 3, 4,             // octet key[4]
    5, 0, 0, 0,             // long entity_id = 5
    6, 0, 0, 0,             // unsigned long seq_num = 6
    7, 0, 0, 0,             // long timestamp_sec = 7
    8, 0, 0, 0,             // unsigned long timestamp_usec = 8
    0xff, 0xff, 0xff, 0xff, // long latency_ping = -1
    3, 0, 0, 0,             // bin_data length 3 (sequence<octet>: no DHEADER in XCDR2)
    0xde, 0xad, 0xbe,       // bin_data
    0,                      // padding to 4, announced in the options
];

#[rustfmt::skip]
const PERFTEST_BODY_BE: [u8; 32] = [
    1, 2, 3, 4,
    0, 0, 0, 5,
    0, 0, 0, 6,
    0, 0, 0, 7,
    0, 0, 0, 8,
    0xff, 0xff, 0xff, 0xff,
    0, 0, 0, 3,
    0xde, 0xad, 0xbe,
    0,
];

fn with_header(id: u16, pad: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![(id >> 8) as u8, id as u8, 0, pad];
    v.extend_from_slice(body);
    v
}

fn check_perftest<T: TopicType + PartialEq + std::fmt::Debug>(v: &T) {
    // (encoding, representation id expected for a @final type)
    let cases = [
        (Encoding::XCDR1_LE, 0x0001, &PERFTEST_BODY_LE),
        (Encoding::XCDR1_BE, 0x0000, &PERFTEST_BODY_BE),
        (Encoding::XCDR2_LE, 0x0007, &PERFTEST_BODY_LE),
        (Encoding::XCDR2_BE, 0x0006, &PERFTEST_BODY_BE),
    ];
    for (e, id, body) in cases {
        let bytes = encode(v, e);
        assert_eq!(bytes, with_header(id, 1, body), "{} {e:?}", T::TYPE_NAME);
        assert_eq!(&decode_sample::<T>(&bytes).unwrap(), v);
    }
}

#[test]
fn perftest_golden() {
    check_perftest(&perftest_sample!(TestData));
    check_perftest(&perftest_sample!(TestDataKeyed));
    check_perftest(&perftest_sample!(TestDataLarge));
    check_perftest(&perftest_sample!(TestDataKeyedLarge));
}

#[test]
fn perftest_overhead_is_28_bytes() {
    for e in [Encoding::XCDR1_LE, Encoding::XCDR2_BE] {
        let empty = encode(&TestData::default(), e);
        assert_eq!(empty.len(), 4 + PERFTEST_OVERHEAD_BYTES);
        assert_eq!(empty[3], 0, "28 is a multiple of 4: no padding");
        for len in [1usize, 32, 1234, 63_000, 65_470] {
            let s = TestData {
                bin_data: vec![7; len],
                ..TestData::default()
            };
            let body = PERFTEST_OVERHEAD_BYTES + len;
            let pad = (4 - body % 4) % 4;
            let bytes = encode(&s, e);
            assert_eq!(bytes.len(), 4 + body + pad);
            assert_eq!(usize::from(bytes[3]), pad);
        }
    }
}

#[test]
fn perftest_bound_enforced() {
    let too_big = TestData {
        bin_data: vec![0; 65_471],
        ..TestData::default()
    };
    let mut buf = vec![0xaa];
    assert_eq!(
        encode_sample(&too_big, Encoding::XCDR1_LE, &mut buf),
        Err(CdrError::BoundExceeded {
            len: 65_471,
            bound: 65_470
        })
    );
    assert_eq!(buf, [0xaa], "failed encode leaves the buffer as it was");
    // The unbounded type takes it, and the bounded type refuses to decode it.
    let large = TestDataLarge {
        bin_data: vec![0; 65_471],
        ..TestDataLarge::default()
    };
    let bytes = encode(&large, Encoding::XCDR1_LE);
    assert_eq!(decode_sample::<TestDataLarge>(&bytes).unwrap(), large);
    assert_eq!(
        decode_sample::<TestData>(&bytes),
        Err(CdrError::BoundExceeded {
            len: 65_471,
            bound: 65_470
        })
    );
}

fn blue() -> ShapeType {
    ShapeType {
        color: "BLUE".into(),
        x: 10,
        y: 20,
        shapesize: 30,
    }
}

#[test]
fn shape_golden_xcdr1() {
    #[rustfmt::skip]
    let le = [
        0x00, 0x01, 0x00, 0x00,         // CDR_LE (appendable = final in XCDR1), no padding
        5, 0, 0, 0, b'B', b'L', b'U', b'E', 0, // string<128> color = "BLUE" (len incl. NUL)
        0, 0, 0,                        // align x to 4
        10, 0, 0, 0,                    // x
        20, 0, 0, 0,                    // y
        30, 0, 0, 0,                    // shapesize
    ];
    #[rustfmt::skip]
    let be = [
        0x00, 0x00, 0x00, 0x00,         // CDR_BE
        0, 0, 0, 5, b'B', b'L', b'U', b'E', 0,
        0, 0, 0,
        0, 0, 0, 10,
        0, 0, 0, 20,
        0, 0, 0, 30,
    ];
    assert_eq!(encode(&blue(), Encoding::XCDR1_LE), le);
    assert_eq!(encode(&blue(), Encoding::XCDR1_BE), be);
    assert_eq!(decode_sample::<ShapeType>(&le).unwrap(), blue());
    assert_eq!(decode_sample::<ShapeType>(&be).unwrap(), blue());
}

#[test]
fn shape_golden_xcdr2() {
    #[rustfmt::skip]
    let le = [
        0x00, 0x09, 0x00, 0x00,         // D_CDR2_LE, no padding
        24, 0, 0, 0,                    // DHEADER: 24 bytes follow
        5, 0, 0, 0, b'B', b'L', b'U', b'E', 0,
        0, 0, 0,
        10, 0, 0, 0,
        20, 0, 0, 0,
        30, 0, 0, 0,
    ];
    #[rustfmt::skip]
    let be = [
        0x00, 0x08, 0x00, 0x00,         // D_CDR2_BE
        0, 0, 0, 24,
        0, 0, 0, 5, b'B', b'L', b'U', b'E', 0,
        0, 0, 0,
        0, 0, 0, 10,
        0, 0, 0, 20,
        0, 0, 0, 30,
    ];
    assert_eq!(encode(&blue(), Encoding::XCDR2_LE), le);
    assert_eq!(encode(&blue(), Encoding::XCDR2_BE), be);
    assert_eq!(decode_sample::<ShapeType>(&le).unwrap(), blue());
    assert_eq!(decode_sample::<ShapeType>(&be).unwrap(), blue());
}

#[test]
fn shape_from_newer_writer_with_additional_payload() {
    // The current OMG shape.idl appends `sequence<uint8> additional_payload_size`.
    // XCDR2: the DHEADER covers it and we skip it. Here: 2 extra bytes of payload.
    #[rustfmt::skip]
    let le = [
        0x00, 0x09, 0x00, 0x02,         // D_CDR2_LE, 2 bytes of padding at the end
        30, 0, 0, 0,                    // DHEADER: 24 + 4 + 2
        5, 0, 0, 0, b'B', b'L', b'U', b'E', 0,
        0, 0, 0,
        10, 0, 0, 0,
        20, 0, 0, 0,
        30, 0, 0, 0,
        2, 0, 0, 0, 0xaa, 0xbb,         // additional_payload_size
        0, 0,                           // padding
    ];
    assert_eq!(decode_sample::<ShapeType>(&le).unwrap(), blue());
    // XCDR1: trailing bytes after the last known member are ignored.
    #[rustfmt::skip]
    let le1 = [
        0x00, 0x01, 0x00, 0x00,
        5, 0, 0, 0, b'B', b'L', b'U', b'E', 0,
        0, 0, 0,
        10, 0, 0, 0,
        20, 0, 0, 0,
        30, 0, 0, 0,
        0, 0, 0, 0,                     // additional_payload_size = []
    ];
    assert_eq!(decode_sample::<ShapeType>(&le1).unwrap(), blue());
}

#[test]
fn shape_color_bound() {
    let s = ShapeType {
        color: "x".repeat(129),
        ..blue()
    };
    assert_eq!(
        encode_sample(&s, Encoding::XCDR1_LE, &mut Vec::new()),
        Err(CdrError::BoundExceeded {
            len: 129,
            bound: 128
        })
    );
    let ok = ShapeType {
        color: "x".repeat(128),
        ..blue()
    };
    let bytes = encode(&ok, Encoding::XCDR2_LE);
    assert_eq!(decode_sample::<ShapeType>(&bytes).unwrap(), ok);
}

#[test]
fn key_hash_shape_is_md5() {
    // Key = string<128> color; max key size 4 + 128 + 1 = 133 > 16, so MD5.
    // Input for "BLUE": 00000005 424c5545 00 (big-endian length incl. NUL, bytes, NUL).
    // python3 -c "import hashlib; print(hashlib.md5(bytes.fromhex('00000005424c554500')).hexdigest())"
    // -> cac217c318363f8ef1160eeedef9e886
    let expect_blue = [
        0xca, 0xc2, 0x17, 0xc3, 0x18, 0x36, 0x3f, 0x8e, 0xf1, 0x16, 0x0e, 0xee, 0xde, 0xf9, 0xe8,
        0x86,
    ];
    assert_eq!(key_hash(&blue()).unwrap(), Some(expect_blue));
    // "RED": 0000000452454400 -> d36de865fac295155f18df7157b217e6
    let red = ShapeType {
        color: "RED".into(),
        ..blue()
    };
    let expect_red = [
        0xd3, 0x6d, 0xe8, 0x65, 0xfa, 0xc2, 0x95, 0x15, 0x5f, 0x18, 0xdf, 0x71, 0x57, 0xb2, 0x17,
        0xe6,
    ];
    assert_eq!(key_hash(&red).unwrap(), Some(expect_red));
    // Non-key members do not change the hash; XCDR2 rules give the same bytes here.
    let moved = ShapeType { x: 99, ..red };
    assert_eq!(key_hash(&moved).unwrap(), Some(expect_red));
    let mut scratch = Vec::new();
    assert_eq!(
        key_hash_with(&moved, XcdrVersion::Xcdr2, &mut scratch).unwrap(),
        Some(expect_red)
    );
}

#[test]
fn key_hash_perftest_keyed_is_padded_key() {
    // Key = octet key[4]; max key size 4 <= 16: the key bytes zero-padded, no MD5.
    let s = perftest_sample!(TestDataKeyed);
    let expect = [1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(key_hash(&s).unwrap(), Some(expect));
    let l = perftest_sample!(TestDataKeyedLarge);
    assert_eq!(key_hash(&l).unwrap(), Some(expect));
    let control = TestDataKeyed {
        key: 65535u32.to_le_bytes(),
        ..TestDataKeyed::default()
    };
    assert_eq!(
        key_hash(&control).unwrap(),
        Some([0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    );
}

#[test]
fn unkeyed_has_no_key_hash() {
    assert_eq!(key_hash(&perftest_sample!(TestData)).unwrap(), None);
    assert_eq!(key_hash(&perftest_sample!(TestDataLarge)).unwrap(), None);
}

#[test]
fn key_only_payload() {
    let mut buf = Vec::new();
    encode_key(&blue(), Encoding::XCDR1_BE, &mut buf).unwrap();
    #[rustfmt::skip]
    assert_eq!(buf, [
        0x00, 0x00, 0x00, 0x03,   // CDR_BE, 3 bytes of padding
        0, 0, 0, 5, b'B', b'L', b'U', b'E', 0,
        0, 0, 0,
    ]);
    buf.clear();
    encode_key(&blue(), Encoding::XCDR2_BE, &mut buf).unwrap();
    #[rustfmt::skip]
    assert_eq!(buf, [
        0x00, 0x08, 0x00, 0x03,   // D_CDR2_BE, 3 bytes of padding
        0, 0, 0, 9,               // DHEADER of the key holder
        0, 0, 0, 5, b'B', b'L', b'U', b'E', 0,
        0, 0, 0,
    ]);
    buf.clear();
    encode_key(
        &perftest_sample!(TestDataKeyed),
        Encoding::XCDR2_LE,
        &mut buf,
    )
    .unwrap();
    assert_eq!(buf, [0x00, 0x07, 0x00, 0x00, 1, 2, 3, 4]);
}
