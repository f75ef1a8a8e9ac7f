//! Topic types shipped with FerroDDS: the RTI perftest types and the OMG shapes type.
//!
//! # Perftest (`srcIdl/perftest.idl`)
//!
//! All `@final`, members in this order:
//! `octet key[4]; long entity_id; unsigned long seq_num; long timestamp_sec;
//! unsigned long timestamp_usec; long latency_ping; sequence<octet[, 65470]> bin_data;`
//! The keyed variants make `key` the `@key`. The serialized body is
//! [`PERFTEST_OVERHEAD_BYTES`] (28) plus the `bin_data` length in either XCDR version,
//! because every member is naturally aligned.
//!
//! # Shapes (`ShapeType`)
//!
//! The OMG dds-rtps interoperability suite (`srcCxx/shape.idl`) declares
//! `@appendable struct ShapeType { @key string<128> color; int32 x; int32 y;
//! int32 shapesize; sequence<uint8> additional_payload_size; }`; older revisions had the
//! same first four members without annotations (hence final). We ship the four classic
//! members as `@appendable`: in XCDR1 (the suite's default, `-x 1`) an appendable type is
//! encoded exactly like a final one, so this interoperates with both revisions; in XCDR2
//! it is D_CDR2 with a DHEADER, and a newer writer's trailing `additional_payload_size`
//! is skipped by the DHEADER. The key hash is always MD5 (max key size 4 + 128 + 1 > 16).

use crate::TopicType;

/// `MAX_BOUNDED_SEQ_SIZE` of RTI perftest (Pro): the bound of `bin_data` in the bounded types.
pub const MAX_BOUNDED_SEQ_SIZE: usize = 65470;

/// Serialized size of a perftest sample with empty `bin_data` (perftest `OVERHEAD_BYTES`).
pub const PERFTEST_OVERHEAD_BYTES: usize = 28;

/// `TestData_t`: unkeyed perftest sample with bounded payload.
#[derive(Debug, Clone, PartialEq, Eq, Default, TopicType)]
#[dds(type_name = "TestData_t", extensibility = "final")]
pub struct TestData {
    /// Instance number, little-endian (not a key in this type).
    pub key: [u8; 4],
    /// Publisher id.
    pub entity_id: i32,
    /// Loop index.
    pub seq_num: u32,
    /// High 32 bits of the microsecond clock.
    pub timestamp_sec: i32,
    /// Low 32 bits of the microsecond clock.
    pub timestamp_usec: u32,
    /// Target subscriber id, -1 when not a ping.
    pub latency_ping: i32,
    /// Payload, at most [`MAX_BOUNDED_SEQ_SIZE`] bytes.
    #[dds(bound = 65470)]
    pub bin_data: Vec<u8>,
}

/// `TestDataKeyed_t`: keyed perftest sample with bounded payload (`key` is the `@key`).
#[derive(Debug, Clone, PartialEq, Eq, Default, TopicType)]
#[dds(type_name = "TestDataKeyed_t", extensibility = "final")]
pub struct TestDataKeyed {
    /// Instance number, little-endian.
    #[key]
    pub key: [u8; 4],
    /// Publisher id.
    pub entity_id: i32,
    /// Loop index.
    pub seq_num: u32,
    /// High 32 bits of the microsecond clock.
    pub timestamp_sec: i32,
    /// Low 32 bits of the microsecond clock.
    pub timestamp_usec: u32,
    /// Target subscriber id, -1 when not a ping.
    pub latency_ping: i32,
    /// Payload, at most [`MAX_BOUNDED_SEQ_SIZE`] bytes.
    #[dds(bound = 65470)]
    pub bin_data: Vec<u8>,
}

/// `TestDataLarge_t`: unkeyed perftest sample with unbounded payload.
#[derive(Debug, Clone, PartialEq, Eq, Default, TopicType)]
#[dds(type_name = "TestDataLarge_t", extensibility = "final")]
pub struct TestDataLarge {
    /// Instance number, little-endian (not a key in this type).
    pub key: [u8; 4],
    /// Publisher id.
    pub entity_id: i32,
    /// Loop index.
    pub seq_num: u32,
    /// High 32 bits of the microsecond clock.
    pub timestamp_sec: i32,
    /// Low 32 bits of the microsecond clock.
    pub timestamp_usec: u32,
    /// Target subscriber id, -1 when not a ping.
    pub latency_ping: i32,
    /// Payload, unbounded.
    pub bin_data: Vec<u8>,
}

/// `TestDataKeyedLarge_t`: keyed perftest sample with unbounded payload.
#[derive(Debug, Clone, PartialEq, Eq, Default, TopicType)]
#[dds(type_name = "TestDataKeyedLarge_t", extensibility = "final")]
pub struct TestDataKeyedLarge {
    /// Instance number, little-endian.
    #[key]
    pub key: [u8; 4],
    /// Publisher id.
    pub entity_id: i32,
    /// Loop index.
    pub seq_num: u32,
    /// High 32 bits of the microsecond clock.
    pub timestamp_sec: i32,
    /// Low 32 bits of the microsecond clock.
    pub timestamp_usec: u32,
    /// Target subscriber id, -1 when not a ping.
    pub latency_ping: i32,
    /// Payload, unbounded.
    pub bin_data: Vec<u8>,
}

/// The OMG interoperability `ShapeType` (see the module docs for the extensibility choice).
#[derive(Debug, Clone, PartialEq, Eq, Default, TopicType)]
#[dds(type_name = "ShapeType", extensibility = "appendable")]
pub struct ShapeType {
    /// Color name, the key (`string<128>`).
    #[key]
    #[dds(bound = 128)]
    pub color: String,
    /// X coordinate.
    pub x: i32,
    /// Y coordinate.
    pub y: i32,
    /// Size in pixels.
    pub shapesize: i32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CdrType;

    #[test]
    fn type_constants() {
        assert_eq!(TestData::TYPE_NAME, "TestData_t");
        assert_eq!(TestDataKeyed::TYPE_NAME, "TestDataKeyed_t");
        assert_eq!(TestDataLarge::TYPE_NAME, "TestDataLarge_t");
        assert_eq!(TestDataKeyedLarge::TYPE_NAME, "TestDataKeyedLarge_t");
        assert_eq!(ShapeType::TYPE_NAME, "ShapeType");
        let keyed = [
            TestData::IS_KEYED,
            TestDataLarge::IS_KEYED,
            TestDataKeyed::IS_KEYED,
            TestDataKeyedLarge::IS_KEYED,
            ShapeType::IS_KEYED,
        ];
        assert_eq!(keyed, [false, false, true, true, true]);
        assert_eq!(TestDataKeyed::KEY_MAX_SIZE, Some(4));
        assert_eq!(TestDataKeyedLarge::KEY_MAX_SIZE, Some(4));
        assert_eq!(ShapeType::KEY_MAX_SIZE, Some(133));
        assert_eq!(ShapeType::KEY_MAX_SIZE_XCDR2, Some(133));
        assert_eq!(TestData::MIN_SIZE, PERFTEST_OVERHEAD_BYTES);
        assert_eq!(TestData::MAX_SIZE_XCDR1, Some(28 + 65470));
        assert_eq!(TestDataLarge::MAX_SIZE_XCDR1, None);
        // 133 (string<128>: 4 + 128 + NUL), pad 3, 3 * 4; XCDR2 adds the DHEADER.
        assert_eq!(ShapeType::MAX_SIZE_XCDR1, Some(148));
        assert_eq!(ShapeType::MAX_SIZE_XCDR2, Some(152));
    }
}
