//! Drives a whole participant (the sans-IO engine: discovery, matching, reliability,
//! reassembly, reader caches) with an arbitrary sequence of datagrams, time steps, writes and
//! takes (`ferrodds_testkit::engine_input`), as a hostile peer and an application could.
//!
//! Properties: never panics, and each step's output is bounded (the harness drains at most
//! 4,096 datagrams per record). The committed seed (`corpus-seeds/engine_datagrams/session`,
//! made by `Victim::record_seed`) is a real session with a peer participant: discovery,
//! reliable keyed samples, fragments, repairs, a disposal and a best-effort flow.
#![no_main]

use ferrodds_testkit::engine_input::Victim;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    Victim::new().run(data);
});
