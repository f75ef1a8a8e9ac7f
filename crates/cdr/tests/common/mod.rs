//! Test types and proptest strategies shared by the integration tests.
#![allow(dead_code)]

use ferrodds_cdr::types::{ShapeType, TestData, TestDataKeyed, TestDataKeyedLarge, TestDataLarge};
use ferrodds_cdr::{CdrEnum, Encoding, TopicType};
use proptest::collection::vec;
use proptest::prelude::*;

pub(crate) const ENCODINGS: [Encoding; 4] = [
    Encoding::XCDR1_LE,
    Encoding::XCDR1_BE,
    Encoding::XCDR2_LE,
    Encoding::XCDR2_BE,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, CdrEnum)]
pub(crate) enum Mode {
    #[default]
    Off,
    On,
    Auto = 10,
}

#[derive(Debug, Clone, PartialEq, Default, TopicType)]
pub(crate) struct Prims {
    pub(crate) a: u8,
    pub(crate) b: i8,
    pub(crate) c: u16,
    pub(crate) d: i16,
    pub(crate) e: u32,
    pub(crate) f: i32,
    pub(crate) g: u64,
    pub(crate) h: i64,
    pub(crate) i: f32,
    pub(crate) j: f64,
    pub(crate) k: bool,
    pub(crate) l: char,
    pub(crate) m: Mode,
}

#[derive(Debug, Clone, PartialEq, Default, TopicType)]
#[dds(extensibility = "appendable")]
pub(crate) struct Collections {
    pub(crate) s: String,
    #[dds(bound = 8)]
    pub(crate) bs: String,
    pub(crate) v8: Vec<u8>,
    pub(crate) v16: Vec<u16>,
    pub(crate) v64: Vec<f64>,
    pub(crate) vs: Vec<String>,
    pub(crate) arr: [i32; 3],
    pub(crate) arr_s: [String; 2],
    pub(crate) nested: Vec<Prims>,
    #[dds(bound = 4)]
    pub(crate) bv: Vec<u32>,
    pub(crate) grid: [[u8; 2]; 3],
    pub(crate) vv: Vec<Vec<i16>>,
}

#[derive(Debug, Clone, PartialEq, Default, TopicType)]
#[dds(type_name = "MutAll", extensibility = "mutable")]
pub(crate) struct MutAll {
    #[key]
    pub(crate) id: u32,
    pub(crate) p: Prims,
    pub(crate) c: Collections,
    pub(crate) mode: Mode,
    #[dds(id = 100)]
    pub(crate) tail: u64,
    #[dds(id = 0x4000)]
    pub(crate) far: i8,
}

pub(crate) fn f32s() -> impl Strategy<Value = f32> {
    any::<i32>().prop_map(|x| x as f32 / 7.0)
}

pub(crate) fn f64s() -> impl Strategy<Value = f64> {
    any::<i64>().prop_map(|x| x as f64 / 3.0)
}

pub(crate) fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::Off), Just(Mode::On), Just(Mode::Auto)]
}

/// Strings of up to `max` chars without NUL (CDR strings cannot carry one).
pub(crate) fn text(max: usize) -> impl Strategy<Value = String> {
    vec(any::<char>().prop_filter("no NUL", |c| *c != '\0'), 0..max)
        .prop_map(|v| v.into_iter().collect())
}

prop_compose! {
    pub(crate) fn prims()(
        (a, b, c, d, e, f) in (any::<u8>(), any::<i8>(), any::<u16>(), any::<i16>(), any::<u32>(), any::<i32>()),
        (g, h, i, j, k, l, m) in (any::<u64>(), any::<i64>(), f32s(), f64s(), any::<bool>(), any::<u8>().prop_map(char::from), mode()),
    ) -> Prims {
        Prims { a, b, c, d, e, f, g, h, i, j, k, l, m }
    }
}

prop_compose! {
    pub(crate) fn collections()(
        (s, bs, v8, v16, v64, vs) in (
            text(20),
            "[a-z]{0,8}",
            vec(any::<u8>(), 0..40),
            vec(any::<u16>(), 0..10),
            vec(f64s(), 0..5),
            vec(text(5), 0..4),
        ),
        (arr, arr_s, nested, bv, grid, vv) in (
            any::<[i32; 3]>(),
            (text(6), text(6)).prop_map(|(a, b)| [a, b]),
            vec(prims(), 0..3),
            vec(any::<u32>(), 0..=4),
            any::<[[u8; 2]; 3]>(),
            vec(vec(any::<i16>(), 0..4), 0..3),
        ),
    ) -> Collections {
        Collections { s, bs, v8, v16, v64, vs, arr, arr_s, nested, bv, grid, vv }
    }
}

prop_compose! {
    pub(crate) fn mut_all()(
        id in any::<u32>(), p in prims(), c in collections(), mode in mode(),
        tail in any::<u64>(), far in any::<i8>(),
    ) -> MutAll {
        MutAll { id, p, c, mode, tail, far }
    }
}

prop_compose! {
    pub(crate) fn perftest_fields()(
        key in any::<[u8; 4]>(), entity_id in any::<i32>(), seq_num in any::<u32>(),
        timestamp_sec in any::<i32>(), timestamp_usec in any::<u32>(), latency_ping in any::<i32>(),
        bin_data in vec(any::<u8>(), 0..300),
    ) -> TestDataLarge {
        TestDataLarge { key, entity_id, seq_num, timestamp_sec, timestamp_usec, latency_ping, bin_data }
    }
}

pub(crate) fn test_data() -> impl Strategy<Value = TestData> {
    perftest_fields().prop_map(|t| TestData {
        key: t.key,
        entity_id: t.entity_id,
        seq_num: t.seq_num,
        timestamp_sec: t.timestamp_sec,
        timestamp_usec: t.timestamp_usec,
        latency_ping: t.latency_ping,
        bin_data: t.bin_data,
    })
}

pub(crate) fn test_data_keyed() -> impl Strategy<Value = TestDataKeyed> {
    perftest_fields().prop_map(|t| TestDataKeyed {
        key: t.key,
        entity_id: t.entity_id,
        seq_num: t.seq_num,
        timestamp_sec: t.timestamp_sec,
        timestamp_usec: t.timestamp_usec,
        latency_ping: t.latency_ping,
        bin_data: t.bin_data,
    })
}

pub(crate) fn test_data_keyed_large() -> impl Strategy<Value = TestDataKeyedLarge> {
    perftest_fields().prop_map(|t| TestDataKeyedLarge {
        key: t.key,
        entity_id: t.entity_id,
        seq_num: t.seq_num,
        timestamp_sec: t.timestamp_sec,
        timestamp_usec: t.timestamp_usec,
        latency_ping: t.latency_ping,
        bin_data: t.bin_data,
    })
}

prop_compose! {
    pub(crate) fn shape()(
        color in "[A-Za-z0-9 ]{0,128}", x in any::<i32>(), y in any::<i32>(), shapesize in any::<i32>(),
    ) -> ShapeType {
        ShapeType { color, x, y, shapesize }
    }
}
