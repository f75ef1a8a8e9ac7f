//! `#[derive(TopicType)]` / `#[derive(CdrEnum)]`: extensibility kinds, member ids, keys,
//! nesting and enums, with hand-derived golden bytes. No imports are needed by the derive;
//! the ones below are for the test code itself.

use ferrodds_cdr::{
    decode_sample, encode_sample, key_hash, key_hash_with, CdrError, CdrReader, CdrType, CdrWriter,
    Encoding, Extensibility, TopicType, XcdrVersion,
};

mod user {
    // Deliberately no `use` of ferrodds_cdr items: generated code must be self-contained.
    #[derive(Debug, Clone, PartialEq, Default, ferrodds_cdr::TopicType)]
    #[dds(type_name = "test::Mut", extensibility = "mutable")]
    pub(crate) struct Mut {
        #[key]
        #[dds(id = 1)]
        pub(crate) a: u16,
        #[dds(id = 2)]
        pub(crate) b: f64,
        pub(crate) s: String,
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ferrodds_cdr::CdrEnum)]
    pub(crate) enum Color {
        #[default]
        Red,
        Green = 5,
        Blue,
    }
}
use user::{Color, Mut};

fn enc<T: TopicType>(v: &T, e: Encoding) -> Vec<u8> {
    let mut b = Vec::new();
    encode_sample(v, e, &mut b).unwrap();
    b
}

fn mut_sample() -> Mut {
    Mut {
        a: 0x0102,
        b: 1.0,
        s: "x".into(),
    }
}

#[test]
fn mutable_xcdr1_parameter_list() {
    #[rustfmt::skip]
    let expect = [
        0x00, 0x02, 0x00, 0x00,                  // PL_CDR_BE, no padding
        0x40, 0x01, 0x00, 0x04, 0x01, 0x02, 0, 0, // M|id 1, len 4: u16 + 2 padding
        0x00, 0x02, 0x00, 0x08,                  // id 2, len 8
        0x3f, 0xf0, 0, 0, 0, 0, 0, 0,            // f64 1.0 (aligned to the member start)
        0x00, 0x03, 0x00, 0x08,                  // id 3 (auto: previous id + 1), len 8
        0, 0, 0, 2, b'x', 0, 0, 0,               // string "x" + 2 padding
        0x3f, 0x02, 0x00, 0x00,                  // PID_LIST_END
    ];
    let b = enc(&mut_sample(), Encoding::XCDR1_BE);
    assert_eq!(b, expect);
    assert_eq!(decode_sample::<Mut>(&b).unwrap(), mut_sample());
}

#[test]
fn mutable_key_holder() {
    let mut b = Vec::new();
    ferrodds_cdr::encode_key(&mut_sample(), Encoding::XCDR1_BE, &mut b).unwrap();
    #[rustfmt::skip]
    assert_eq!(b, [
        0x00, 0x02, 0x00, 0x00,                   // PL_CDR_BE
        0x40, 0x01, 0x00, 0x04, 0x01, 0x02, 0, 0, // key member a only
        0x3f, 0x02, 0x00, 0x00,                   // PID_LIST_END
    ]);
    b.clear();
    ferrodds_cdr::encode_key(&mut_sample(), Encoding::XCDR2_LE, &mut b).unwrap();
    #[rustfmt::skip]
    assert_eq!(b, [
        0x00, 0x0b, 0x00, 0x02,                   // PL_CDR2_LE, 2 bytes of padding
        6, 0, 0, 0,                               // DHEADER
        0x01, 0, 0, 0x90, 0x02, 0x01,             // M|LC=1|id 1, u16 LE
        0, 0,
    ]);
}

#[test]
fn mutable_xcdr2_emheaders() {
    #[rustfmt::skip]
    let expect = [
        0x00, 0x0a, 0x00, 0x02,        // PL_CDR2_BE, 2 bytes of padding
        0, 0, 0, 34,                   // DHEADER
        0x90, 0, 0, 1, 0x01, 0x02,     // M | LC=1 (2 bytes) | id 1; u16
        0, 0,                          // align next EMHEADER
        0x30, 0, 0, 2,                 // LC=3 (8 bytes) | id 2
        0x3f, 0xf0, 0, 0, 0, 0, 0, 0,  // f64 1.0
        0x40, 0, 0, 3, 0, 0, 0, 6,     // LC=4 | id 3, NEXTINT = 6
        0, 0, 0, 2, b'x', 0,           // string "x"
        0, 0,                          // encapsulation padding
    ];
    let b = enc(&mut_sample(), Encoding::XCDR2_BE);
    assert_eq!(b, expect);
    assert_eq!(decode_sample::<Mut>(&b).unwrap(), mut_sample());
    let le = enc(&mut_sample(), Encoding::XCDR2_LE);
    assert_eq!(&le[..8], &[0x00, 0x0b, 0x00, 0x02, 34, 0, 0, 0]);
    assert_eq!(decode_sample::<Mut>(&le).unwrap(), mut_sample());
}

#[test]
fn mutable_reordered_missing_and_unknown_members() {
    #[rustfmt::skip]
    let reordered = [
        0x00, 0x03, 0x00, 0x00,                  // PL_CDR_LE
        0x03, 0x00, 0x08, 0x00, 2, 0, 0, 0, b'y', 0, 0, 0, // id 3 first
        0x63, 0x00, 0x04, 0x00, 9, 9, 9, 9,      // unknown id 0x63, not must-understand
        0x01, 0x00, 0x04, 0x00, 0x34, 0x12, 0, 0, // id 1; id 2 is absent
        0x02, 0x3f, 0x00, 0x00,                  // PID_LIST_END
    ];
    assert_eq!(
        decode_sample::<Mut>(&reordered).unwrap(),
        Mut {
            a: 0x1234,
            b: 0.0,
            s: "y".into()
        }
    );
    #[rustfmt::skip]
    let must = [
        0x00, 0x03, 0x00, 0x00,
        0x63, 0x40, 0x04, 0x00, 9, 9, 9, 9,      // unknown id 0x63 with M flag
        0x02, 0x3f, 0x00, 0x00,
    ];
    assert_eq!(
        decode_sample::<Mut>(&must),
        Err(CdrError::UnknownMustUnderstand(0x63))
    );
    #[rustfmt::skip]
    let must2 = [
        0x00, 0x0b, 0x00, 0x00,
        8, 0, 0, 0,                             // DHEADER
        0x05, 0x00, 0x00, 0xa0, 1, 2, 3, 4,     // M | LC=2 | id 5 (LE)
    ];
    assert_eq!(
        decode_sample::<Mut>(&must2),
        Err(CdrError::UnknownMustUnderstand(5))
    );
}

#[test]
fn mutable_member_longer_than_64k_uses_extended_pid() {
    #[derive(Debug, PartialEq, Default, TopicType)]
    #[dds(extensibility = "mutable")]
    struct Big {
        data: Vec<u8>,
        #[dds(id = 0x3f10)]
        tail: u32,
    }
    let v = Big {
        data: vec![3; 70_000],
        tail: 7,
    };
    let b = enc(&v, Encoding::XCDR1_LE);
    // PID_EXTENDED (LE 0x3f01), slength 8, member id 0, length 70_004.
    assert_eq!(&b[4..8], &[0x01, 0x3f, 8, 0]);
    assert_eq!(&b[8..12], &0u32.to_le_bytes());
    assert_eq!(&b[12..16], &70_004u32.to_le_bytes());
    // id 0x3f10 does not fit a short PID either.
    let at = 16 + 70_004;
    assert_eq!(&b[at..at + 4], &[0x01, 0x3f, 8, 0]);
    assert_eq!(&b[at + 4..at + 8], &0x3f10u32.to_le_bytes());
    assert_eq!(decode_sample::<Big>(&b).unwrap(), v);
    assert_eq!(
        decode_sample::<Big>(&enc(&v, Encoding::XCDR2_BE)).unwrap(),
        v
    );
}

#[derive(Debug, Clone, PartialEq, Default, TopicType)]
#[dds(extensibility = "appendable")]
struct Inner {
    v: u8,
}

#[derive(Debug, Clone, PartialEq, Default, TopicType)]
struct Outer {
    inner: Inner,
    tail: u32,
    inners: Vec<Inner>,
    e: Color,
}

#[test]
fn nested_appendable_and_enum() {
    let v = Outer {
        inner: Inner { v: 7 },
        tail: 0x0a0b0c0d,
        inners: vec![Inner { v: 1 }],
        e: Color::Blue,
    };
    #[rustfmt::skip]
    let x2 = [
        0x00, 0x07, 0x00, 0x00,   // CDR2_LE (Outer is final)
        1, 0, 0, 0, 7,            // Inner: DHEADER 1, v
        0, 0, 0,                  // align
        0x0d, 0x0c, 0x0b, 0x0a,   // tail
        9, 0, 0, 0,               // sequence<Inner> DHEADER: count + Inner (no trailing pad)
        1, 0, 0, 0,               // count
        1, 0, 0, 0, 1,            // Inner { v: 1 }
        0, 0, 0,                  // align
        6, 0, 0, 0,               // Color::Blue = 6 (after Green = 5)
    ];
    assert_eq!(enc(&v, Encoding::XCDR2_LE), x2);
    assert_eq!(decode_sample::<Outer>(&x2).unwrap(), v);
    #[rustfmt::skip]
    let x1 = [
        0x00, 0x01, 0x00, 0x00,   // CDR_LE
        7, 0, 0, 0,               // v, align
        0x0d, 0x0c, 0x0b, 0x0a,
        1, 0, 0, 0, 1,            // count, Inner { v: 1 }
        0, 0, 0,
        6, 0, 0, 0,
    ];
    assert_eq!(enc(&v, Encoding::XCDR1_LE), x1);
    assert_eq!(decode_sample::<Outer>(&x1).unwrap(), v);
    // A newer Inner with an extra member: the DHEADER lets us skip it.
    #[rustfmt::skip]
    let newer = [
        0x00, 0x07, 0x00, 0x00,
        2, 0, 0, 0, 7, 0x99,      // Inner: DHEADER 2, v, unknown appended u8
        0, 0,                     // align
        0x0d, 0x0c, 0x0b, 0x0a,   // tail
        4, 0, 0, 0, 0, 0, 0, 0,   // sequence<Inner>: DHEADER 4, count 0
        0, 0, 0, 0,               // Color::Red
    ];
    let got = decode_sample::<Outer>(&newer).unwrap();
    assert_eq!(
        got,
        Outer {
            inner: Inner { v: 7 },
            tail: 0x0a0b0c0d,
            inners: vec![],
            e: Color::Red
        }
    );
}

#[test]
fn enum_rejects_unknown_values() {
    let mut r = CdrReader::new(&[5, 0, 0, 0, 1, 0, 0, 0], Encoding::XCDR1_LE);
    assert_eq!(Color::deserialize(&mut r), Ok(Color::Green));
    assert_eq!(Color::deserialize(&mut r), Err(CdrError::InvalidEnum(1)));
}

#[test]
fn key_order_and_max_size_per_version() {
    #[derive(Debug, Default, TopicType)]
    struct K {
        #[key]
        #[dds(id = 5)]
        a: u8,
        #[dds(id = 1)]
        other: u64,
        #[key]
        #[dds(id = 2)]
        b: u32,
    }
    assert_eq!(K::KEY_MAX_SIZE, Some(8)); // a, 3 padding, b
    assert_eq!(K::KEY_MAX_SIZE_XCDR2, Some(5)); // b, a (member-id order)
    let k = K {
        a: 0xaa,
        other: 1,
        b: 0x01020304,
    };
    assert_eq!(
        key_hash(&k).unwrap(),
        Some([0xaa, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0])
    );
    let mut scratch = Vec::new();
    assert_eq!(
        key_hash_with(&k, XcdrVersion::Xcdr2, &mut scratch).unwrap(),
        Some([1, 2, 3, 4, 0xaa, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    );
}

#[test]
fn nested_key_struct_and_unbounded_key() {
    #[derive(Debug, Default, TopicType)]
    struct Id {
        #[key]
        hi: u32,
        not_key: String,
    }
    #[derive(Debug, Default, TopicType)]
    struct Holder {
        #[key]
        id: Id,
        #[key]
        tag: [u8; 2],
    }
    assert_eq!(Holder::KEY_MAX_SIZE, Some(6));
    let h = Holder {
        id: Id {
            hi: 9,
            not_key: "ignored".into(),
        },
        tag: [0xee, 0xff],
    };
    assert_eq!(
        key_hash(&h).unwrap(),
        Some([0, 0, 0, 9, 0xee, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    );

    #[derive(Debug, Default, TopicType)]
    struct Named {
        #[key]
        name: String,
    }
    assert_eq!(Named::KEY_MAX_SIZE, None);
    // Unbounded key: always MD5, even when the actual key is short.
    // python3: hashlib.md5(bytes.fromhex('0000000100')).hexdigest()
    //   -> 113b7f2f33d9035e4d9c5f52fc8b54d6  (empty string)
    assert_eq!(
        key_hash(&Named::default()).unwrap(),
        Some([
            0x11, 0x3b, 0x7f, 0x2f, 0x33, 0xd9, 0x03, 0x5e, 0x4d, 0x9c, 0x5f, 0x52, 0xfc, 0x8b,
            0x54, 0xd6
        ])
    );
}

#[test]
fn topic_constants() {
    assert_eq!(Mut::TYPE_NAME, "test::Mut");
    assert_eq!(Mut::EXTENSIBILITY, Extensibility::Mutable);
    assert_eq!(Outer::TYPE_NAME, "Outer");
    assert_eq!(Outer::EXTENSIBILITY, Extensibility::Final);
    assert_eq!(Inner::EXTENSIBILITY, Extensibility::Appendable);
    assert_eq!(
        [Mut::IS_KEYED, Outer::IS_KEYED, Inner::IS_KEYED],
        [true, false, false]
    );
}

#[test]
fn writer_reader_api_directly() {
    let mut buf = Vec::new();
    let mut w = CdrWriter::new(&mut buf, Encoding::XCDR1_BE);
    w.write(&Color::Green).unwrap();
    w.write(&vec![true, false]).unwrap();
    w.write(&'A').unwrap();
    w.write(&[1.5f32, -2.0]).unwrap();
    #[rustfmt::skip]
    assert_eq!(buf, [
        0, 0, 0, 5,
        0, 0, 0, 2, 1, 0,
        b'A',
        0,
        0x3f, 0xc0, 0, 0, 0xc0, 0, 0, 0,
    ]);
    let mut r = CdrReader::new(&buf, Encoding::XCDR1_BE);
    assert_eq!(r.read::<Color>(), Ok(Color::Green));
    assert_eq!(r.read::<Vec<bool>>(), Ok(vec![true, false]));
    assert_eq!(r.read::<char>(), Ok('A'));
    assert_eq!(r.read::<[f32; 2]>(), Ok([1.5, -2.0]));
    assert_eq!(r.remaining(), 0);
}
