//! 100,000 instances on one keyed writer and one keyed reader (KEEP_LAST 1),
//! under a counting global allocator: every instance delivered, updates of
//! existing instances allocate nothing on the writer and only the payload on
//! the reader, and memory per instance is measured on both sides.
//!
//! Runs without the libtest harness (`harness = false`): the allocator is
//! global, so this single-threaded `main` is the only code measured.

mod common;

use std::alloc::System;
use std::collections::HashSet;

use common::{config, matched_pair, settle};
use ferrodds_rtps::{
    ChangeKind, Durability, History, InstanceState, Participant, ReaderAttributes, ReaderQos,
    Reliability, Timestamp, WriteRequest, WriterAttributes, WriterQos,
};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const N: u32 = 100_000;

fn live_bytes() -> isize {
    let s = GLOBAL.stats();
    s.bytes_allocated as isize - s.bytes_deallocated as isize
}

fn key(i: u32) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..4].copy_from_slice(&i.to_be_bytes());
    k
}

fn payload(i: u32, round: u32) -> [u8; 12] {
    let mut p = [0u8, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    p[4..8].copy_from_slice(&i.to_be_bytes());
    p[8..12].copy_from_slice(&round.to_le_bytes());
    p
}

fn write_all(a: &mut Participant, w: ferrodds_rtps::WriterId, round: u32, t: u64) {
    for i in 0..N {
        let p = payload(i, round);
        a.write(
            w,
            WriteRequest {
                kind: ChangeKind::Alive,
                key_hash: Some(key(i)),
                serialized_payload: &p,
                source_timestamp: None,
            },
            Timestamp(t),
        )
        .unwrap();
    }
}

fn main() {
    let mut a = Participant::new(config(1), Timestamp(0));
    let mut b = Participant::new(config(2), Timestamp(0));
    let mut buf = vec![0u8; 65536];
    let (w, r, mut t) = matched_pair(
        &mut a,
        &mut b,
        WriterAttributes {
            topic_name: "K".into(),
            type_name: "K".into(),
            keyed: true,
            // Transient-local: the writer keeps its history after
            // acknowledgement, so its memory is stable while the reader's is
            // measured.
            qos: WriterQos {
                durability: Durability::TransientLocal,
                history: History::KeepLast(1),
                ..WriterQos::default()
            },
        },
        ReaderAttributes {
            topic_name: "K".into(),
            type_name: "K".into(),
            keyed: true,
            qos: ReaderQos {
                reliability: Reliability::RELIABLE,
                history: History::KeepLast(1),
                ..ReaderQos::default()
            },
        },
        &mut buf,
    );

    // Round 1: new instances.
    t += 1_000_000;
    let base = live_bytes();
    write_all(&mut a, w, 0, t);
    let writer_bytes = live_bytes() - base;
    assert_eq!(a.writer_instance_count(w), N as usize);
    let base = live_bytes();
    settle(&mut a, &mut b, Timestamp(t), &mut buf);
    let reader_with_samples = live_bytes() - base;
    // (Test harness, not the engine: OS-seeded hashing is fine here.)
    #[allow(clippy::disallowed_methods)]
    let mut keys = HashSet::new();
    let mut taken = 0;
    while let Some(s) = b.take_sample(r) {
        let k = s.key_hash.unwrap();
        assert_eq!(&s.payload[4..8], &k[..4]);
        keys.insert(k);
        taken += 1;
    }
    let reader_after_take = live_bytes() - base;
    assert_eq!(taken, N as usize);
    assert_eq!(keys.len(), N as usize);
    assert_eq!(b.reader_instance_count(r), N as usize);
    println!(
        "{N} instances: writer {} B/instance (history change + payload + index), reader {} B/instance with one queued sample, {} B/instance after take",
        writer_bytes / N as isize,
        reader_with_samples / N as isize,
        reader_after_take / N as isize
    );
    assert!(writer_bytes / (N as isize) < 400, "writer {writer_bytes}");
    assert!(
        reader_after_take / (N as isize) < 400,
        "reader {reader_after_take}"
    );

    // Round 2: updates of existing instances.
    t += 1_000_000;
    let region = Region::new(GLOBAL);
    write_all(&mut a, w, 1, t);
    let writer_allocs = region.change().allocations;
    let region = Region::new(GLOBAL);
    settle(&mut a, &mut b, Timestamp(t), &mut buf);
    let mut n2 = 0;
    while let Some(s) = b.take_sample(r) {
        assert_eq!(&s.payload[8..12], &1u32.to_le_bytes());
        n2 += 1;
    }
    let path_allocs = region.change().allocations;
    assert_eq!(n2, N as usize);
    println!(
        "updates of {N} existing instances: writer {writer_allocs} allocations, delivery {path_allocs} allocations"
    );
    assert!(
        writer_allocs < (N / 100) as usize,
        "writes to existing instances allocate: {writer_allocs}"
    );
    // One allocation per delivered sample: its payload.
    assert!(
        path_allocs < (N + N / 20) as usize,
        "{path_allocs} allocations for {N} samples"
    );

    // Dispose and unregister reach the reader's instance states.
    t += 1_000_000;
    for (i, kind) in [
        (0, ChangeKind::NotAliveDisposed),
        (1, ChangeKind::NotAliveUnregistered),
    ] {
        let k = key(i);
        a.write(
            w,
            WriteRequest {
                kind,
                key_hash: Some(k),
                serialized_payload: &k[..4],
                source_timestamp: None,
            },
            Timestamp(t),
        )
        .unwrap();
    }
    assert_eq!(
        a.writer_instance_state(w, &key(0)),
        Some(InstanceState::NotAliveDisposed)
    );
    settle(&mut a, &mut b, Timestamp(t), &mut buf);
    while b.take_sample(r).is_some() {}
    assert_eq!(
        b.reader_instance_state(r, &key(0)),
        Some(InstanceState::NotAliveDisposed)
    );
    // Unregistered and every sample taken: the instance is reclaimed.
    assert_eq!(b.reader_instance_state(r, &key(1)), None);
    assert_eq!(b.reader_instance_count(r), N as usize - 1);
    assert_eq!(
        b.reader_instance_state(r, &key(2)),
        Some(InstanceState::Alive)
    );
    assert!(a.register_instance(w, key(N + 1)).unwrap());
    assert!(!a.register_instance(w, key(N + 1)).unwrap());
    println!("test hundred_thousand_instances ... ok");
}
