//! Decodes arbitrary bytes as an SPDP or SEDP serialized payload into the data the engine
//! keeps about a discovered participant, writer or reader
//! (`ferrodds_rtps::fuzzing::check_discovery_payload`): the step between a parameter list
//! (fuzzed by `parameter_list`) and matching.
//!
//! Properties checked on top of "never panics": every value decoded encodes (as FerroDDS
//! announces its own) into a payload that decodes to the same value, up to what the
//! encoding does not carry and durations one nanosecond shorter.
//!
//! Seeds (`corpus-seeds/discovery_data`): the SPDP and SEDP payloads of the
//! `parameter_list` seeds (Cyclone DDS's announcements and ours, every QoS set).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = ferrodds_rtps::fuzzing::check_discovery_payload(data) {
        panic!("{e}");
    }
});
