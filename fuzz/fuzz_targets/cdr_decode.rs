//! Decodes arbitrary bytes as a serialized payload (encapsulation header + body) of every
//! shipped topic type; decoding must return a value or a typed error, never panic, and never
//! allocate more than the input could hold. A successful decode must re-encode and decode to
//! the same value.
//!
//! Seeds (`corpus-seeds/cdr_decode`): a sample of every shipped type in XCDR1 and XCDR2, both
//! byte orders (kept current by `crates/cdr/tests/fuzz_seeds.rs`).
#![no_main]

use ferrodds_cdr::types::{ShapeType, TestData, TestDataKeyed, TestDataKeyedLarge, TestDataLarge};
use ferrodds_cdr::{decode_sample, encode_sample, key_hash, EncapsulationHeader, TopicType};
use libfuzzer_sys::fuzz_target;

fn check<T: TopicType + PartialEq + std::fmt::Debug>(data: &[u8]) {
    if let Ok(value) = decode_sample::<T>(data) {
        let _ = key_hash(&value);
        // Re-encode with the representation the input used and decode again.
        let (header, _) =
            EncapsulationHeader::parse(data).expect("decoded input has a valid header");
        let mut out = Vec::new();
        if encode_sample(&value, header.representation.encoding(), &mut out).is_ok() {
            let again = decode_sample::<T>(&out).expect("re-encoded sample decodes");
            assert_eq!(value, again);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check::<TestData>(data);
    check::<TestDataKeyed>(data);
    check::<TestDataLarge>(data);
    check::<TestDataKeyedLarge>(data);
    check::<ShapeType>(data);
});
