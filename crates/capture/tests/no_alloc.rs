//! After warm-up, writing a packet does not allocate.
//!
//! Runs without the libtest harness (`harness = false`): the counting
//! allocator is global, so this single-threaded `main` is the only code
//! running while it measures.

use std::alloc::System;
use std::net::{Ipv4Addr, SocketAddrV4};

use ferrodds_capture::{CaptureWriter, Direction, PcapWriter, Timestamp, MAX_UDP_PAYLOAD};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn main() {
    pcapng_writes_do_not_allocate();
    println!("test pcapng_writes_do_not_allocate ... ok");
    pcap_writes_do_not_allocate();
    println!("test pcap_writes_do_not_allocate ... ok");
    println!("no_alloc: 2 passed, 0 failed");
}

fn pcapng_writes_do_not_allocate() {
    let src = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7411);
    let dst = SocketAddrV4::new(Ipv4Addr::new(239, 255, 0, 1), 7401);
    let small = vec![0x11u8; 200];
    let fragmented = vec![0x22u8; 6000];
    let oversized = vec![0x33u8; MAX_UDP_PAYLOAD + 100];
    let mut w = CaptureWriter::new(std::io::sink()).unwrap();
    w.set_mtu(1500).unwrap();
    let i = w.add_interface("udp").unwrap();
    let mut round = |n: u64| {
        let ts = Timestamp::from_nanos(n);
        w.write_udp(i, ts, src, dst, &small, Direction::Outbound, None)
            .unwrap();
        w.write_udp(
            i,
            ts,
            dst,
            src,
            &fragmented,
            Direction::Inbound,
            Some("frag"),
        )
        .unwrap();
        w.write_udp(i, ts, src, dst, &oversized, Direction::Outbound, None)
            .unwrap();
    };
    for n in 0..3 {
        round(n);
    }
    let region = Region::new(GLOBAL);
    for n in 3..503 {
        round(n);
    }
    let stats = region.change();
    assert_eq!(stats.allocations, 0, "{stats:?}");
    assert_eq!(stats.reallocations, 0, "{stats:?}");
}

fn pcap_writes_do_not_allocate() {
    let a = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7411);
    let payloads = [vec![1u8; 64], vec![2u8; 40_000], vec![3u8; MAX_UDP_PAYLOAD]];
    let mut w = PcapWriter::new(std::io::sink()).unwrap();
    let mut round = |n: u64| {
        for p in &payloads {
            w.write_udp(Timestamp::from_nanos(n), a, a, p).unwrap();
        }
    };
    round(0);
    let region = Region::new(GLOBAL);
    for n in 1..501 {
        round(n);
    }
    let stats = region.change();
    assert_eq!(stats.allocations, 0, "{stats:?}");
    assert_eq!(stats.reallocations, 0, "{stats:?}");
}
