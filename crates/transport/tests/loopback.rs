//! Unicast tests on 127.0.0.1. Each test uses its own domain id (210..=229).

mod common;

use std::io::IoSlice;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use common::{collector, lo_config, WAIT};
use ferrodds_transport::{
    InterfaceSelector, PortMapping, TrafficKind, TransportError, UdpConfig, UdpTransport,
    MAX_UDP_PAYLOAD,
};

#[test]
fn two_transports_get_distinct_ids_and_exchange_scatter_gather_datagrams() {
    let cfg = lo_config(210);
    let a = UdpTransport::new(&cfg).unwrap();
    let b = UdpTransport::new(&cfg).unwrap();
    assert_ne!(a.participant_id(), b.participant_id());

    let ports = PortMapping::default()
        .ports(210, b.participant_id())
        .unwrap();
    assert_eq!(b.ports(), ports);
    let meta = b.metatraffic_unicast_locators();
    let user = b.default_unicast_locators();
    assert_eq!(meta.len(), 1);
    assert_eq!(
        meta[0].socket_addr(),
        SocketAddrV4::new(Ipv4Addr::LOCALHOST, ports.spdp_unicast)
    );
    assert_eq!(
        user[0].socket_addr(),
        SocketAddrV4::new(Ipv4Addr::LOCALHOST, ports.user_unicast)
    );
    assert!(b.metatraffic_multicast_locators().is_empty());
    assert!(b.default_multicast_locators().is_empty());
    assert_eq!(b.receivers().len(), 2);

    let user_rx = collector(&b, TrafficKind::UserData, false);
    let meta_rx = collector(&b, TrafficKind::Metatraffic, false);

    let header = *b"RTPS\x02\x05";
    let middle = [0xabu8; 300];
    let tail = b"tail!";
    let sent = a
        .send(
            user[0].socket_addr(),
            &[
                IoSlice::new(&header),
                IoSlice::new(&middle),
                IoSlice::new(tail),
            ],
        )
        .unwrap();
    assert_eq!(sent, header.len() + middle.len() + tail.len());

    let (got, bytes) = user_rx.next(WAIT).expect("datagram on user unicast");
    let mut expected = header.to_vec();
    expected.extend_from_slice(&middle);
    expected.extend_from_slice(tail);
    assert_eq!(bytes, expected);
    assert_eq!(got.len, sent);
    assert_eq!(got.kind, TrafficKind::UserData);
    assert!(!got.multicast);
    assert_eq!(got.local_port, ports.user_unicast);
    assert_eq!(got.dst, user[0].socket_addr());
    assert_eq!(*got.src.ip(), Ipv4Addr::LOCALHOST);
    assert_eq!(got.src.port(), a.source_port());
    assert_ne!(a.source_port(), 0);
    // One datagram, not three, and nothing on the metatraffic socket.
    assert!(user_rx.next(Duration::from_millis(200)).is_none());
    assert!(meta_rx.next(Duration::from_millis(10)).is_none());

    // And the other way round, on the metatraffic port.
    let a_meta = collector(&a, TrafficKind::Metatraffic, false);
    b.send_to(a.metatraffic_unicast_locators()[0].socket_addr(), b"spdp")
        .unwrap();
    let (got, bytes) = a_meta.next(WAIT).expect("datagram on metatraffic unicast");
    assert_eq!(bytes, b"spdp");
    assert_eq!(got.kind, TrafficKind::Metatraffic);

    a.shutdown();
    b.shutdown();
    for c in [user_rx, meta_rx, a_meta] {
        c.handle.join().unwrap().unwrap();
    }
}

#[test]
fn explicit_participant_id_in_use_is_a_typed_error() {
    let mut cfg = lo_config(211);
    cfg.participant_id = Some(7);
    let first = UdpTransport::new(&cfg).unwrap();
    assert_eq!(first.participant_id(), 7);
    match UdpTransport::new(&cfg) {
        Err(TransportError::ParticipantIdInUse {
            participant_id,
            port,
            ..
        }) => {
            assert_eq!(participant_id, 7);
            assert_eq!(port, first.ports().spdp_unicast);
        }
        other => panic!("expected ParticipantIdInUse, got {other:?}"),
    }
}

#[test]
fn probing_skips_ids_whose_ports_are_taken() {
    let m = PortMapping::default();
    // Hold the user-unicast port of id 0 and the SPDP-unicast port of id 1.
    let _u0 = UdpSocket::bind(("0.0.0.0", m.user_unicast_port(212, 0).unwrap())).unwrap();
    let _s1 = UdpSocket::bind(("0.0.0.0", m.spdp_unicast_port(212, 1).unwrap())).unwrap();
    let t = UdpTransport::new(&lo_config(212)).unwrap();
    assert_eq!(t.participant_id(), 2);
    // The failed probe of id 0 must not have kept its SPDP-unicast port.
    let t0 = {
        let mut c = lo_config(212);
        c.participant_id = Some(0);
        UdpTransport::new(&c)
    };
    assert!(matches!(
        t0,
        Err(TransportError::ParticipantIdInUse { port, .. }) if port == m.user_unicast_port(212, 0).unwrap()
    ));
}

fn assert_receivers_unblock(stop: impl FnOnce(), receivers: Vec<ferrodds_transport::UdpReceiver>) {
    let n = receivers.len();
    let (tx, done) = mpsc::channel();
    for mut r in receivers {
        let tx = tx.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 2048];
            let res = r.recv(&mut buf).map(|o| o.is_none());
            let again = r.recv(&mut buf).map(|o| o.is_none());
            let _ = tx.send((res, again));
        });
    }
    // Let the threads block in recv.
    thread::sleep(Duration::from_millis(150));
    assert!(done.try_recv().is_err(), "recv returned before shutdown");
    let start = Instant::now();
    stop();
    for _ in 0..n {
        let left = Duration::from_secs(1).saturating_sub(start.elapsed());
        let (res, again) = done
            .recv_timeout(left)
            .expect("receiver did not unblock within 1 s of shutdown");
        assert!(res.unwrap(), "recv after shutdown must be Ok(None)");
        assert!(again.unwrap(), "later recv must also be Ok(None)");
    }
    assert!(start.elapsed() < Duration::from_secs(1));
}

#[test]
fn shutdown_unblocks_receivers_within_one_second() {
    let t = UdpTransport::new(&lo_config(213)).unwrap();
    let receivers = t.receivers();
    assert_eq!(receivers.len(), 2);
    assert_receivers_unblock(|| t.shutdown(), receivers);
    assert!(t.is_shut_down());
    t.shutdown(); // idempotent
}

#[test]
fn drop_unblocks_receivers_within_one_second() {
    let t = UdpTransport::new(&lo_config(214)).unwrap();
    let receivers = t.receivers();
    assert_receivers_unblock(move || drop(t), receivers);
}

#[test]
fn interface_by_bad_name_or_address_is_a_typed_error() {
    let mut cfg = lo_config(215);
    cfg.interface = InterfaceSelector::Name("no-such-if0".into());
    match UdpTransport::new(&cfg) {
        Err(TransportError::InterfaceNotFound { name }) => assert_eq!(name, "no-such-if0"),
        other => panic!("expected InterfaceNotFound, got {other:?}"),
    }
    cfg.interface = InterfaceSelector::Address(Ipv4Addr::new(203, 0, 113, 77));
    let err = UdpTransport::new(&cfg).unwrap_err();
    assert!(matches!(err, TransportError::AddressNotFound { .. }));
    assert!(err.to_string().contains("203.0.113.77"));
}

#[test]
fn interface_by_address_announces_that_address() {
    let mut cfg = lo_config(216);
    cfg.interface = "127.0.0.1".into();
    let t = UdpTransport::new(&cfg).unwrap();
    assert_eq!(t.interface().name, "lo");
    assert_eq!(
        t.metatraffic_unicast_locators()[0].ip(),
        Ipv4Addr::LOCALHOST
    );
    assert_eq!(t.default_unicast_locators()[0].ip(), Ipv4Addr::LOCALHOST);
}

#[test]
fn default_interface_never_announces_unspecified() {
    // No traffic: only checks what would be announced.
    let mut cfg = UdpConfig::new(217);
    cfg.multicast_enabled = false;
    let t = UdpTransport::new(&cfg).unwrap();
    let expected = InterfaceSelector::Default.resolve().unwrap();
    for loc in t
        .metatraffic_unicast_locators()
        .iter()
        .chain(t.default_unicast_locators())
    {
        assert!(!loc.ip().is_unspecified());
        assert_eq!(loc.ip(), expected.address);
    }
}

#[test]
fn buffer_sizes_are_applied() {
    let mut small = lo_config(218);
    small.send_buffer_bytes = Some(24 * 1024);
    small.recv_buffer_bytes = Some(24 * 1024);
    let mut large = lo_config(218);
    large.send_buffer_bytes = Some(96 * 1024);
    large.recv_buffer_bytes = Some(96 * 1024);
    let s = UdpTransport::new(&small).unwrap().buffer_sizes();
    let l = UdpTransport::new(&large).unwrap().buffer_sizes();
    // The kernel may double the request (Linux) but never grants less here (far below
    // the default [rw]mem_max).
    assert!((24 * 1024..=48 * 1024).contains(&s.send), "{s:?}");
    assert!((24 * 1024..=48 * 1024).contains(&s.recv), "{s:?}");
    assert!((96 * 1024..=192 * 1024).contains(&l.send), "{l:?}");
    assert!((96 * 1024..=192 * 1024).contains(&l.recv), "{l:?}");
}

#[test]
fn largest_datagram_round_trips_and_larger_is_refused() {
    let cfg = lo_config(219);
    let a = UdpTransport::new(&cfg).unwrap();
    let b = UdpTransport::new(&cfg).unwrap();
    assert_eq!(a.max_message_size(), MAX_UDP_PAYLOAD);
    let rx = collector(&b, TrafficKind::UserData, false);
    let dst = b.default_unicast_locators()[0].socket_addr();
    let payload: Vec<u8> = (0..MAX_UDP_PAYLOAD).map(|i| (i % 251) as u8).collect();
    let (head, rest) = payload.split_at(20);
    assert_eq!(
        a.send(dst, &[IoSlice::new(head), IoSlice::new(rest)])
            .unwrap(),
        MAX_UDP_PAYLOAD
    );
    let (got, bytes) = rx.next(WAIT).expect("max-size datagram");
    assert_eq!(got.len, MAX_UDP_PAYLOAD);
    assert!(bytes == payload);
    let err = a
        .send(dst, &[IoSlice::new(&payload), IoSlice::new(b"x")])
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn concurrent_senders_share_one_transport() {
    let cfg = lo_config(220);
    let a = Arc::new(UdpTransport::new(&cfg).unwrap());
    let b = UdpTransport::new(&cfg).unwrap();
    let rx = collector(&b, TrafficKind::UserData, false);
    let dst = b.default_unicast_locators()[0].socket_addr();
    const THREADS: u8 = 4;
    const EACH: u8 = 25;
    let senders: Vec<_> = (0..THREADS)
        .map(|t| {
            let a = Arc::clone(&a);
            thread::spawn(move || {
                for i in 0..EACH {
                    a.send(dst, &[IoSlice::new(&[t]), IoSlice::new(&[i])])
                        .unwrap();
                    if i % 5 == 0 {
                        thread::sleep(Duration::from_millis(1));
                    }
                }
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap();
    }
    let mut seen = vec![[false; EACH as usize]; THREADS as usize];
    for _ in 0..u32::from(THREADS) * u32::from(EACH) {
        let (_, bytes) = rx.next(WAIT).expect("all datagrams arrive on loopback");
        assert_eq!(bytes.len(), 2);
        let slot = &mut seen[usize::from(bytes[0])][usize::from(bytes[1])];
        assert!(!*slot, "duplicate {bytes:?}");
        *slot = true;
    }
    assert!(seen.iter().flatten().all(|s| *s));
}

#[test]
fn multicast_on_host_loopback_without_multicast_flag_is_refused() {
    let lo = ferrodds_transport::list_interfaces()
        .into_iter()
        .find(|i| i.name == "lo")
        .expect("lo exists");
    let mut cfg = lo_config(222);
    cfg.multicast_enabled = true;
    let result = UdpTransport::new(&cfg);
    if lo.multicast {
        // Some hosts enable it; then the check must not fire (no traffic is sent here).
        assert!(result.is_ok(), "{result:?}");
    } else {
        match result {
            Err(TransportError::MulticastUnsupported { interface }) => assert_eq!(interface, "lo"),
            other => panic!("expected MulticastUnsupported, got {other:?}"),
        }
    }
}

#[test]
fn shutdown_after_traffic_returns_none_without_error() {
    // Regression: a receiver that has already received datagrams must still end cleanly.
    for round in 0..5 {
        let cfg = lo_config(223);
        let a = UdpTransport::new(&cfg).unwrap();
        let b = UdpTransport::new(&cfg).unwrap();
        let rx = collector(&b, TrafficKind::UserData, false);
        let dst = b.default_unicast_locators()[0].socket_addr();
        for i in 0..3u8 {
            a.send_to(dst, &[round, i]).unwrap();
            assert_eq!(rx.next(WAIT).expect("datagram").1, [round, i]);
        }
        b.shutdown();
        let start = Instant::now();
        while !rx.handle.is_finished() {
            assert!(
                start.elapsed() < Duration::from_secs(1),
                "receiver still blocked"
            );
            thread::sleep(Duration::from_millis(5));
        }
        rx.handle
            .join()
            .expect("no panic")
            .expect("Ok(None), not an error");
    }
}

#[test]
fn short_buffer_truncates_without_panicking() {
    let cfg = lo_config(224);
    let a = UdpTransport::new(&cfg).unwrap();
    let b = UdpTransport::new(&cfg).unwrap();
    let mut rx = b
        .receivers()
        .into_iter()
        .find(|r| r.kind() == TrafficKind::UserData)
        .unwrap();
    let dst = b.default_unicast_locators()[0].socket_addr();
    let payload: Vec<u8> = (0..100u8).collect();
    a.send_to(dst, &payload).unwrap();
    a.send_to(dst, b"").unwrap();
    a.send_to(dst, b"after").unwrap();
    // Loopback delivery is synchronous: all three are queued, so recv does not block.
    let mut small = [0u8; 10];
    let got = rx.recv(&mut small).unwrap().unwrap();
    assert_eq!(got.len, 10);
    assert_eq!(small, payload[..10]);
    let got = rx.recv(&mut small).unwrap().unwrap();
    assert_eq!(got.len, 0, "empty datagrams are delivered as such");
    let got = rx.recv(&mut small).unwrap().unwrap();
    assert_eq!(&small[..got.len], b"after");
}

#[test]
fn simultaneous_start_gets_distinct_participant_ids() {
    // Eight participants of one domain probing at the same instant (as processes started
    // together would): the exclusive binds make every id, and so every port, unique.
    let n = 8;
    let barrier = Arc::new(std::sync::Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                barrier.wait();
                UdpTransport::new(&lo_config(226)).unwrap()
            })
        })
        .collect();
    let transports: Vec<UdpTransport> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let mut ids: Vec<u32> = transports.iter().map(|t| t.participant_id()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate participant ids: {ids:?}");
    let mut ports: Vec<u16> = transports
        .iter()
        .flat_map(|t| [t.ports().spdp_unicast, t.ports().user_unicast])
        .collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 2 * n);
}

#[test]
fn dropping_the_transport_and_its_receivers_releases_the_ports() {
    let mut cfg = lo_config(227);
    cfg.participant_id = Some(3);
    for round in 0..3 {
        let t = UdpTransport::new(&cfg).unwrap_or_else(|e| panic!("round {round}: {e}"));
        let threads: Vec<_> = t
            .receivers()
            .into_iter()
            .map(|mut r| {
                thread::spawn(move || {
                    let mut buf = [0u8; 64];
                    // Returns Ok(None) once the transport is gone; the receiver (and its
                    // socket) is dropped with the thread.
                    while r.recv(&mut buf).unwrap().is_some() {}
                })
            })
            .collect();
        drop(t);
        let start = Instant::now();
        for th in threads {
            th.join().unwrap();
        }
        assert!(start.elapsed() < Duration::from_secs(1));
        // All sockets closed: the same explicit id binds again in the next round.
    }
}

#[test]
fn concurrent_senders_with_more_destinations_than_connected_sockets() {
    // Two connected sockets for four destinations: threads race on lookups, insertions and
    // replacements, and on the unconnected fallback; every datagram must still arrive once,
    // from the transport's source port.
    let cfg = UdpConfig {
        connected_send_sockets: 2,
        ..lo_config(225)
    };
    let a = Arc::new(UdpTransport::new(&cfg).unwrap());
    let b = UdpTransport::new(&lo_config(225)).unwrap();
    let c = UdpTransport::new(&lo_config(225)).unwrap();
    let mut rxs = Vec::new();
    let mut dsts = Vec::new();
    for t in [&b, &c] {
        for kind in [TrafficKind::UserData, TrafficKind::Metatraffic] {
            rxs.push(collector(t, kind, false));
            dsts.push(match kind {
                TrafficKind::UserData => t.default_unicast_locators()[0].socket_addr(),
                TrafficKind::Metatraffic => t.metatraffic_unicast_locators()[0].socket_addr(),
            });
        }
    }
    const THREADS: u8 = 4;
    const EACH: u8 = 100;
    let senders: Vec<_> = (0..THREADS)
        .map(|t| {
            let a = Arc::clone(&a);
            let dsts = dsts.clone();
            thread::spawn(move || {
                for i in 0..EACH {
                    let dst = dsts[usize::from(i.wrapping_add(t)) % dsts.len()];
                    a.send(dst, &[IoSlice::new(&[t]), IoSlice::new(&[i])])
                        .unwrap();
                    // About 100 ms in all: room for a few replacements (one per 50 ms).
                    if i % 2 == 0 {
                        thread::sleep(Duration::from_millis(2));
                    }
                }
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap();
    }
    let mut seen = vec![[false; EACH as usize]; THREADS as usize];
    for (d, rx) in rxs.iter().enumerate() {
        for _ in 0..u32::from(THREADS) * u32::from(EACH) / 4 {
            let (got, bytes) = rx.next(WAIT).expect("all datagrams arrive on loopback");
            assert_eq!(got.src.port(), a.source_port());
            assert_eq!(bytes.len(), 2);
            let (t, i) = (bytes[0], bytes[1]);
            assert_eq!(usize::from(i.wrapping_add(t)) % 4, d, "wrong destination");
            let slot = &mut seen[usize::from(t)][usize::from(i)];
            assert!(!*slot, "duplicate {bytes:?}");
            *slot = true;
        }
    }
    assert!(seen.iter().flatten().all(|s| *s));
}

#[test]
fn wan_mode_uses_one_port_and_announces_the_public_address() {
    use ferrodds_transport::{Transport, WanConfig};
    let public = SocketAddrV4::new(Ipv4Addr::new(203, 0, 113, 7), 17400);
    let a = UdpTransport::new(&UdpConfig {
        wan: Some(WanConfig {
            host_port: 27450,
            public_address: Some(public),
        }),
        ..lo_config(228)
    })
    .unwrap();
    let b = UdpTransport::new(&UdpConfig {
        wan: Some(WanConfig {
            host_port: 27451,
            public_address: None,
        }),
        ..lo_config(228)
    })
    .unwrap();
    let l = Transport::locators(&a);
    assert_eq!(l.metatraffic_unicast, vec![public]);
    assert_eq!(l.default_unicast, vec![public]);
    assert!(l.metatraffic_multicast.is_empty() && l.default_multicast.is_empty());
    assert_eq!(
        Transport::locators(&b).default_unicast,
        vec![SocketAddrV4::new(Ipv4Addr::LOCALHOST, 27451)]
    );
    // One receive socket; what a sends leaves from its host port.
    assert_eq!(b.receivers().len(), 1);
    let rx = common::Collector::spawn(b.receivers().remove(0));
    a.send_to(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 27451), b"RTPS wan")
        .unwrap();
    let (got, bytes) = rx.next(WAIT).expect("datagram");
    assert_eq!(bytes, b"RTPS wan");
    assert_eq!(got.src.port(), 27450);
    // The host port is exclusive.
    let e = UdpTransport::new(&UdpConfig {
        wan: Some(WanConfig {
            host_port: 27450,
            public_address: None,
        }),
        ..lo_config(228)
    })
    .unwrap_err();
    assert!(e.to_string().contains("UDPv4_WAN host port 27450"), "{e}");
    a.shutdown();
    b.shutdown();
}
