//! Steady-state allocation counts of the best-effort data path.
//!
//! Runs without the libtest harness (`harness = false`): the counting
//! allocator is global, so this single-threaded `main` is the only code
//! running while it measures.

use std::alloc::System;

use ferrodds_rtps::{
    ChangeKind, GuidPrefix, Locator, Participant, ParticipantConfig, ReaderAttributes, ReaderQos,
    Reliability, Timestamp, WriteRequest, WriterAttributes, WriterQos,
};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn config(n: u8) -> ParticipantConfig {
    let ip = core::net::Ipv4Addr::new(127, 0, 0, n);
    ParticipantConfig {
        guid_prefix: GuidPrefix([1, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, n]),
        metatraffic_unicast_locators: vec![Locator::udpv4(ip, 7410)],
        default_unicast_locators: vec![Locator::udpv4(ip, 7411)],
        // The other participant's metatraffic locator (`pump` delivers there).
        spdp_destinations: vec![Locator::udpv4(
            core::net::Ipv4Addr::new(127, 0, 0, 3 - n),
            7410,
        )],
        ..ParticipantConfig::default()
    }
}

/// Delivers everything `from` wants to send to `to` (two-node network).
fn pump(from: &mut Participant, to: &mut Participant, now: Timestamp, buf: &mut [u8]) -> usize {
    let mut n = 0;
    let mut dests = Vec::new();
    while let Some(len) = from.poll_transmit_into(now, buf, &mut dests) {
        to.handle_datagram(now, None, &buf[..len]);
        n += 1;
    }
    n
}

fn main() {
    let mut a = Participant::new(config(1), Timestamp(0));
    let mut b = Participant::new(config(2), Timestamp(0));
    let mut buf = vec![0u8; 65536];
    let now = Timestamp(1);
    let w = a
        .create_writer(
            WriterAttributes {
                topic_name: "T".into(),
                type_name: "T".into(),
                keyed: false,
                qos: WriterQos {
                    reliability: Reliability::BEST_EFFORT,
                    ..WriterQos::default()
                },
            },
            now,
        )
        .unwrap();
    let r = b
        .create_reader(
            ReaderAttributes {
                topic_name: "T".into(),
                type_name: "T".into(),
                keyed: false,
                qos: ReaderQos::default(),
            },
            now,
        )
        .unwrap();
    let mut t = 1u64;
    for _ in 0..50 {
        t += 1_000_000;
        let now = Timestamp(t);
        a.handle_timeout(now);
        b.handle_timeout(now);
        pump(&mut a, &mut b, now, &mut buf);
        pump(&mut b, &mut a, now, &mut buf);
        while a.poll_event().is_some() {}
        while b.poll_event().is_some() {}
        if a.matched_reader_count(w) == 1 && b.matched_writer_count(r) == 1 {
            break;
        }
    }
    assert_eq!(a.matched_reader_count(w), 1, "writer did not match");
    assert_eq!(b.matched_writer_count(r), 1, "reader did not match");

    let payload = [0u8, 1, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
    let req = WriteRequest {
        kind: ChangeKind::Alive,
        key_hash: None,
        serialized_payload: &payload,
        source_timestamp: None,
    };
    let mut dests = Vec::with_capacity(8);
    let mut step = |a: &mut Participant, b: &mut Participant, t: u64, count_reader: &mut usize| {
        let now = Timestamp(t);
        a.write(w, req, now).unwrap();
        let len = a.poll_transmit_into(now, &mut buf, &mut dests).unwrap();
        assert!(a.poll_transmit_into(now, &mut buf, &mut dests).is_none());
        let before = GLOBAL.stats().allocations;
        b.handle_datagram(now, None, &buf[..len]);
        while b.poll_event().is_some() {}
        let s = b.take_sample(r).unwrap();
        drop(s);
        *count_reader += GLOBAL.stats().allocations - before;
    };
    let mut reader_allocs = 0;
    for i in 0..200 {
        step(&mut a, &mut b, t + i, &mut reader_allocs);
    }
    t += 1000;
    let n = 1000u64;
    reader_allocs = 0;
    let region = Region::new(GLOBAL);
    for i in 0..n {
        step(&mut a, &mut b, t + i, &mut reader_allocs);
    }
    let total = region.change().allocations;
    let writer_allocs = total - reader_allocs;
    println!("best effort, {n} samples: writer path {writer_allocs} allocations, reader path {reader_allocs}");
    assert_eq!(
        writer_allocs, 0,
        "write + poll_transmit_into must not allocate"
    );
    // The only per-sample allocation on receive is the sample's own payload.
    assert!(reader_allocs <= n as usize, "{reader_allocs} > {n}");
    println!("test best_effort_steady_state_allocations ... ok");
}
