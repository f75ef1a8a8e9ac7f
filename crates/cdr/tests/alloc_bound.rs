//! A sequence count read off the wire never makes the decoder reserve more than a bounded
//! amount of memory up front, even for element types whose in-memory size dwarfs their
//! minimum wire size (a mutable struct may be 4 bytes on the wire and kilobytes in memory).
//!
//! Runs without the libtest harness (`harness = false`): the counting allocator is global,
//! so this single-threaded `main` is the only code running while it measures.

use std::alloc::System;

use ferrodds_cdr::{decode_sample, CdrType, TopicType};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// 4 KiB in memory.
#[derive(Debug, PartialEq, TopicType)]
struct Blob {
    words: [u64; 512],
}

impl Default for Blob {
    fn default() -> Self {
        Blob { words: [0; 512] }
    }
}

/// 4 KiB in memory, 4 bytes minimum on the wire (every member may be absent).
#[derive(Debug, Default, PartialEq, TopicType)]
#[dds(extensibility = "mutable")]
struct Sparse {
    blob: Blob,
}

#[derive(Debug, PartialEq, TopicType)]
struct Many {
    items: Vec<Sparse>,
}

fn main() {
    assert_eq!(<Sparse as CdrType>::MIN_SIZE, 4);
    let in_memory = size_of::<Sparse>();
    assert!(in_memory >= 4096, "{in_memory}");
    // CDR_LE, count 1 000 000, then 4 MB of zeros: enough bytes for the count check, but the
    // first element is malformed (member 0 with length 0 cannot hold a Blob).
    let n: u32 = 1_000_000;
    let mut payload = vec![0x00, 0x01, 0x00, 0x00];
    payload.extend_from_slice(&n.to_le_bytes());
    payload.resize(payload.len() + 4 * n as usize, 0);

    let region = Region::new(GLOBAL);
    let res = decode_sample::<Many>(&payload);
    let stats = region.change();
    assert!(res.is_err(), "{res:?}");
    // Without a cap this reserved n × 4 KiB = 4 GB before reading the first element.
    assert!(
        stats.bytes_allocated <= 2 << 20,
        "decoder reserved {} bytes for a malformed 4 MB payload",
        stats.bytes_allocated
    );
    println!("test sequence_count_reserves_bounded_memory ... ok");
    println!("alloc_bound: 1 passed, 0 failed");
}
