//! The send and receive paths do not allocate per datagram.
//!
//! Runs without the libtest harness (`harness = false`): the counting allocator is global, so
//! this single-threaded `main` is the only code running while it measures.

use std::alloc::System;
use std::io::IoSlice;

use ferrodds_transport::{InterfaceSelector, TrafficKind, UdpConfig, UdpTransport};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn main() {
    steady_state_send_and_recv_do_not_allocate();
    println!("test steady_state_send_and_recv_do_not_allocate ... ok");
    sends_beyond_the_connected_socket_table_do_not_allocate();
    println!("test sends_beyond_the_connected_socket_table_do_not_allocate ... ok");
    println!("no_alloc: 2 passed, 0 failed");
}

fn steady_state_send_and_recv_do_not_allocate() {
    let config = UdpConfig {
        interface: InterfaceSelector::Name("lo".into()),
        multicast_enabled: false,
        ..UdpConfig::new(221)
    };
    let a = UdpTransport::new(&config).unwrap();
    let b = UdpTransport::new(&config).unwrap();
    let mut rx = b
        .receivers()
        .into_iter()
        .find(|r| r.kind() == TrafficKind::UserData)
        .unwrap();
    let dst = b.default_unicast_locators()[0].socket_addr();
    let header = [0x52u8; 20];
    let payload = [0x17u8; 1000];
    let mut buf = vec![0u8; 65_507];

    let mut round = |i: u32| {
        let seq = i.to_le_bytes();
        let sent = a
            .send(
                dst,
                &[
                    IoSlice::new(&header),
                    IoSlice::new(&seq),
                    IoSlice::new(&payload),
                ],
            )
            .unwrap();
        // Loopback delivery is synchronous, so the datagram is already queued.
        let got = rx.recv(&mut buf).unwrap().unwrap();
        assert_eq!(got.len, sent);
        assert_eq!(buf[20..24], seq);
    };
    for i in 0..10 {
        round(i);
    }
    let region = Region::new(GLOBAL);
    for i in 10..1010 {
        round(i);
    }
    let stats = region.change();
    assert_eq!(
        stats.allocations + stats.reallocations,
        0,
        "send/recv allocated: {stats:?}"
    );
}

/// More destinations than connected sockets: misses fall back to the unconnected socket and
/// now and then replace the least recently used entry (closing and creating sockets); none of
/// that allocates either.
fn sends_beyond_the_connected_socket_table_do_not_allocate() {
    let config = UdpConfig {
        interface: InterfaceSelector::Name("lo".into()),
        multicast_enabled: false,
        connected_send_sockets: 1,
        ..UdpConfig::new(221)
    };
    let a = UdpTransport::new(&config).unwrap();
    let b = UdpTransport::new(&config).unwrap();
    let mut receivers = b.receivers();
    let dsts = [
        b.default_unicast_locators()[0].socket_addr(),
        b.metatraffic_unicast_locators()[0].socket_addr(),
    ];
    let payload = [0x17u8; 100];
    let mut buf = vec![0u8; 65_507];
    let mut round = |i: usize| {
        let dst = dsts[i % 2];
        a.send(dst, &[IoSlice::new(&payload)]).unwrap();
        let rx = receivers
            .iter_mut()
            .find(|r| r.local_port() == dst.port())
            .unwrap();
        assert_eq!(rx.recv(&mut buf).unwrap().unwrap().len, payload.len());
    };
    for i in 0..10 {
        round(i);
    }
    let region = Region::new(GLOBAL);
    let start = std::time::Instant::now();
    let mut i = 10;
    // Long enough for several replacements (at most one per 50 ms).
    while start.elapsed() < std::time::Duration::from_millis(200) {
        round(i);
        i += 1;
    }
    let stats = region.change();
    assert_eq!(
        stats.allocations + stats.reallocations,
        0,
        "send/recv allocated: {stats:?}"
    );
}
