//! Steady-state allocation counts of the best-effort and reliable data paths
//! (writer: `write` + `poll_transmit_into`; reader: `handle_datagram` +
//! `take_sample` + `recycle_payload`).
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
        b.recycle_payload(s.payload);
        *count_reader += GLOBAL.stats().allocations - before;
    };
    let mut reader_allocs = 0;
    // (One sample per 10 µs: a realistic rate, which the pacer of the
    // congestion control lets through at once.)
    for i in 0..200 {
        step(&mut a, &mut b, t + i * 10_000, &mut reader_allocs);
    }
    t += 200 * 10_000;
    let n = 1000u64;
    reader_allocs = 0;
    let region = Region::new(GLOBAL);
    for i in 0..n {
        step(&mut a, &mut b, t + i * 10_000, &mut reader_allocs);
    }
    let total = region.change().allocations;
    let writer_allocs = total - reader_allocs;
    println!("best effort, {n} samples: writer path {writer_allocs} allocations, reader path {reader_allocs}");
    assert_eq!(
        writer_allocs, 0,
        "write + poll_transmit_into must not allocate"
    );
    // Taken payloads go back to the engine: receiving does not allocate.
    assert_eq!(
        reader_allocs, 0,
        "receive + take + recycle must not allocate"
    );
    println!("test best_effort_steady_state_allocations ... ok");
    reliable(t + n * 10_000);
}

/// Strict reliable (KEEP_ALL on both sides): every sample pushed with a
/// piggy-backed HEARTBEAT, ACKNACKs flowing back when asked for.
fn reliable(mut t: u64) {
    let mut a = Participant::new(config(1), Timestamp(t));
    let mut b = Participant::new(config(2), Timestamp(t));
    let mut buf = vec![0u8; 65536];
    let wq = WriterQos {
        reliability: Reliability::RELIABLE,
        history: ferrodds_rtps::History::KeepAll,
        ..WriterQos::default()
    };
    let rq = ReaderQos {
        reliability: Reliability::RELIABLE,
        history: ferrodds_rtps::History::KeepAll,
        ..ReaderQos::default()
    };
    let now = Timestamp(t);
    let w = a
        .create_writer(
            WriterAttributes {
                topic_name: "R".into(),
                type_name: "R".into(),
                keyed: false,
                qos: wq,
            },
            now,
        )
        .unwrap();
    let r = b
        .create_reader(
            ReaderAttributes {
                topic_name: "R".into(),
                type_name: "R".into(),
                keyed: false,
                qos: rq,
            },
            now,
        )
        .unwrap();
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
    assert_eq!(
        a.matched_reader_count(w),
        1,
        "reliable writer did not match"
    );
    assert_eq!(
        b.matched_writer_count(r),
        1,
        "reliable reader did not match"
    );
    let payload = [0u8, 1, 0, 0, 9, 8, 7, 6, 5, 4, 3, 2];
    let req = WriteRequest {
        kind: ChangeKind::Alive,
        key_hash: None,
        serialized_payload: &payload,
        source_timestamp: None,
    };
    let mut dests = Vec::with_capacity(8);
    let mut acknacks = 0usize;
    // One sample per 10 µs of virtual time, as a fast ping-pong would.
    let mut step = |a: &mut Participant, b: &mut Participant, t: u64, acks: &mut usize| {
        let now = Timestamp(t);
        a.write(w, req, now).unwrap();
        while let Some(len) = a.poll_transmit_into(now, &mut buf, &mut dests) {
            b.handle_datagram(now, None, &buf[..len]);
        }
        while b.poll_event().is_some() {}
        let s = b.take_sample(r).unwrap();
        b.recycle_payload(s.payload);
        while let Some(len) = b.poll_transmit_into(now, &mut buf, &mut dests) {
            a.handle_datagram(now, None, &buf[..len]);
            *acks += 1;
        }
        while a.poll_event().is_some() {}
    };
    for i in 0..2000 {
        step(&mut a, &mut b, t + i * 10_000, &mut acknacks);
    }
    t += 2000 * 10_000;
    let n = 2000u64;
    acknacks = 0;
    let region = Region::new(GLOBAL);
    for i in 0..n {
        step(&mut a, &mut b, t + i * 10_000, &mut acknacks);
    }
    let allocs = region.change().allocations;
    println!("reliable, {n} samples: {allocs} allocations, {acknacks} ACKNACK datagrams");
    assert_eq!(
        allocs, 0,
        "reliable write + receive + acknowledge must not allocate"
    );
    // Piggy-backed HEARTBEATs ask for an acknowledgement only now and then.
    assert!(
        acknacks > 0 && acknacks < n as usize / 10,
        "{acknacks} ACKNACKs"
    );
    assert!(!a.is_acknowledged_by_all(w) || acknacks > 0);
    println!("test reliable_steady_state_allocations ... ok");
}
