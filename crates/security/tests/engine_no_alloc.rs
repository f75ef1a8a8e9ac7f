//! RTPS message protection adds no allocation per datagram: two participants with the
//! ENCRYPT `rtps_protection_kind` (builtin plugins, test PKI) authenticate and exchange keys,
//! then 1000 best-effort samples go writer → reader, each datagram encoded and decoded
//! through the participants' scratch buffers; the writer path (`write` +
//! `poll_transmit_into`) and the reader path (`handle_datagram` + `take_sample` +
//! `recycle_payload`) must not allocate.
//!
//! Runs without the libtest harness: the counting allocator is global, so this
//! single-threaded `main` is the only code running while it measures.

use std::alloc::System;

use ferrodds_rtps::{
    ChangeKind, GuidPrefix, Locator, Participant, ParticipantConfig, ReaderAttributes, ReaderQos,
    Reliability, Timestamp, WriteRequest, WriterAttributes, WriterQos,
};
use ferrodds_testkit::secure::TestSecurity;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const DOMAIN: u32 = 7;

fn config(n: u8) -> ParticipantConfig {
    let ip = core::net::Ipv4Addr::new(127, 0, 0, n);
    ParticipantConfig {
        guid_prefix: GuidPrefix([1, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, n]),
        domain_id: DOMAIN,
        metatraffic_unicast_locators: vec![Locator::udpv4(ip, 7410)],
        default_unicast_locators: vec![Locator::udpv4(ip, 7411)],
        spdp_destinations: vec![Locator::udpv4(
            core::net::Ipv4Addr::new(127, 0, 0, 3 - n),
            7410,
        )],
        ..ParticipantConfig::default()
    }
}

fn pump(from: &mut Participant, to: &mut Participant, now: Timestamp, buf: &mut [u8]) {
    let mut dests = Vec::new();
    while let Some(len) = from.poll_transmit_into(now, buf, &mut dests) {
        to.handle_datagram(now, None, &buf[..len]);
    }
}

fn main() {
    let mut pki =
        TestSecurity::with_rtps_protection("CA", false, &["alice", "bob"], "ENCRYPT").unwrap();
    let t0 = Timestamp(1_000_000_000);
    let mut secure = |n: u8, cn: &str| {
        let cfg = config(n);
        let plugin = pki
            .plugin(cn, cfg.guid_prefix, DOMAIN, n.into(), t0)
            .unwrap();
        Participant::with_security(cfg, t0, plugin).unwrap()
    };
    let mut a = secure(1, "alice");
    let mut b = secure(2, "bob");
    let mut buf = vec![0u8; 65536];
    let attrs = |qos| WriterAttributes {
        topic_name: "T".into(),
        type_name: "T".into(),
        keyed: false,
        qos,
    };
    let w = a
        .create_writer(
            attrs(WriterQos {
                reliability: Reliability::BEST_EFFORT,
                ..WriterQos::default()
            }),
            t0,
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
            t0,
        )
        .unwrap();
    let mut t = t0.0;
    for _ in 0..500 {
        t += 10_000_000;
        let now = Timestamp(t);
        a.handle_timeout(now);
        b.handle_timeout(now);
        pump(&mut a, &mut b, now, &mut buf);
        pump(&mut b, &mut a, now, &mut buf);
        while a.poll_event().is_some() {}
        while b.poll_event().is_some() {}
        if a.matched_reader_count(w) == 1
            && b.matched_writer_count(r) == 1
            && a.stats().protected_datagrams_received > 0
            && b.stats().protected_datagrams_received > 0
        {
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
    let mut step = |a: &mut Participant, b: &mut Participant, t: u64, reader: &mut usize| {
        let now = Timestamp(t);
        a.write(w, req, now).unwrap();
        let len = a.poll_transmit_into(now, &mut buf, &mut dests).unwrap();
        assert!(a.poll_transmit_into(now, &mut buf, &mut dests).is_none());
        let before = GLOBAL.stats().allocations;
        b.handle_datagram(now, None, &buf[..len]);
        while b.poll_event().is_some() {}
        let s = b.take_sample(r).unwrap();
        b.recycle_payload(s.payload);
        *reader += GLOBAL.stats().allocations - before;
    };
    let mut reader_allocs = 0;
    for i in 0..200 {
        step(&mut a, &mut b, t + i * 10_000, &mut reader_allocs);
    }
    t += 200 * 10_000;
    let n = 1000u64;
    let protected_before = b.stats().protected_datagrams_received;
    reader_allocs = 0;
    let region = Region::new(GLOBAL);
    for i in 0..n {
        step(&mut a, &mut b, t + i * 10_000, &mut reader_allocs);
    }
    let total = region.change().allocations;
    let writer_allocs = total - reader_allocs;
    assert_eq!(
        b.stats().protected_datagrams_received - protected_before,
        n,
        "every sample came in a protected datagram"
    );
    println!(
        "ENCRYPT best effort, {n} samples: writer path {writer_allocs} allocations, reader path {reader_allocs}"
    );
    assert_eq!(
        writer_allocs, 0,
        "write + poll_transmit_into must not allocate"
    );
    assert_eq!(
        reader_allocs, 0,
        "receive + take + recycle must not allocate"
    );
    println!("test protected_best_effort_steady_state_allocations ... ok");
}
