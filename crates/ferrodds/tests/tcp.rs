//! RTPS over TCP between FerroDDS participants on loopback (issue 12): discovery and data both
//! ways over one connection per pair, reliable and best effort, 32 B to 10 MB, a peer that
//! restarts, a busy port, and garbage on the server port; TLS between participants. Domains
//! 230-237, ports 27400-27420.

mod common;

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::time::{Duration, Instant};

use common::*;
use ferrodds::cdr::types::TestDataLarge;
use ferrodds::{Config, DataReaderQos, DomainParticipant, SubscriberQos, TopicQos, Transports};

fn tcp_config(port: u16, peers: &[u16]) -> Config {
    loopback_config()
        .transports(Transports::Tcpv4)
        .tcp_port(port)
        .tcp_peers(
            peers
                .iter()
                .map(|p| SocketAddrV4::new(Ipv4Addr::LOCALHOST, *p))
                .collect(),
        )
}

fn tcp_participant(domain: u32, port: u16, peers: &[u16]) -> DomainParticipant {
    DomainParticipant::with_config(domain, tcp_config(port, peers)).expect("TCP participant")
}

fn open_connections(p: &DomainParticipant) -> u64 {
    p.transport_stats()
        .iter()
        .map(|(_, s)| s.connections_opened - s.connections_closed)
        .sum()
}

#[test]
fn tcp_data_flows_both_ways_on_one_connection() {
    with_timeout(90, || {
        // Both sides know each other, so both dial at once: one connection must survive.
        let a = tcp_participant(230, 27400, &[27401]);
        let b = tcp_participant(230, 27401, &[27400]);
        assert!(a.wait_for_participants(1, WAIT) && b.wait_for_participants(1, WAIT));
        for (size, n) in [(32usize, 500u32), (100_000, 40)] {
            for (from, to, dir) in [(&a, &b, "ab"), (&b, &a, "ba")] {
                let (w, r) = endpoints(from, to, &format!("Tcp{dir}{size}"), true);
                for seq in 0..n {
                    w.write(&large_data(seq, size)).unwrap();
                }
                let got = receive(&r, n as usize, size, Duration::from_secs(20));
                assert_eq!(got, (0..n).collect::<Vec<_>>(), "reliable {size} B {dir}");
            }
        }
        // Best effort, paced so that nothing overflows: everything arrives on loopback TCP.
        let (w, r) = endpoints(&a, &b, "TcpBestEffort", false);
        for seq in 0..200 {
            w.write(&large_data(seq, 1024)).unwrap();
            std::thread::sleep(Duration::from_micros(200));
        }
        let got = receive(&r, 200, 1024, Duration::from_secs(5));
        assert_eq!(got, (0..200).collect::<Vec<_>>(), "best effort over TCP");
        // A connection closed by the tie-break may still be counted for a moment.
        let deadline = Instant::now() + Duration::from_secs(5);
        while (open_connections(&a), open_connections(&b)) != (1, 1) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let stats = format!("a: {:?}\nb: {:?}", a.transport_stats(), b.transport_stats());
        assert_eq!(open_connections(&a), 1, "{stats}");
        assert_eq!(open_connections(&b), 1, "{stats}");
    });
}

#[test]
fn tcp_carries_10_mb_samples() {
    with_timeout(90, || {
        let a = tcp_participant(231, 27402, &[27403]);
        let b = tcp_participant(231, 27403, &[]);
        let (w, r) = endpoints(&a, &b, "TcpLarge", true);
        let size = 10 * 1024 * 1024;
        let start = Instant::now();
        for seq in 0..3 {
            w.write(&large_data(seq, size)).unwrap();
        }
        let got = receive(&r, 3, size, Duration::from_secs(40));
        assert_eq!(got, vec![0, 1, 2], "10 MB samples over TCP");
        eprintln!("3 x 10 MB over TCP in {:?}", start.elapsed());
    });
}

#[test]
fn tcp_peer_restart_is_matched_again() {
    with_timeout(90, || {
        let a = tcp_participant(232, 27404, &[27405]);
        let (w, r) = {
            let b = tcp_participant(232, 27405, &[27404]);
            let (w, r) = endpoints(&a, &b, "TcpRestart", true);
            w.write(&large_data(1, 64)).unwrap();
            assert_eq!(receive(&r, 1, 64, WAIT), vec![1]);
            drop(r);
            drop(b);
            // The writer notices the reader is gone (disposal or lease).
            let deadline = Instant::now() + Duration::from_secs(15);
            while w.matched_count() > 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            assert_eq!(w.matched_count(), 0, "old reader still matched");
            let b2 = tcp_participant(232, 27405, &[27404]);
            let tb = b2
                .create_topic::<TestDataLarge>("TcpRestart", TopicQos::default())
                .unwrap();
            let r = b2
                .create_subscriber(SubscriberQos::default())
                .unwrap()
                .create_datareader(&tb, DataReaderQos::default().reliable().keep_all())
                .unwrap();
            (w, (b2, r))
        };
        assert!(w.wait_for_matched(1, WAIT), "restarted peer not matched");
        w.write(&large_data(2, 64)).unwrap();
        assert_eq!(receive(&r.1, 1, 64, WAIT), vec![2]);
    });
}

#[test]
fn tcp_port_in_use_is_a_clear_error() {
    with_timeout(30, || {
        let _a = tcp_participant(233, 27406, &[]);
        let Err(err) = DomainParticipant::with_config(233, tcp_config(27406, &[])) else {
            panic!("a second participant on the same port must fail");
        };
        let msg = err.to_string();
        assert!(msg.contains("127.0.0.1:27406"), "{msg}");
    });
}

#[test]
fn tcp_garbage_closes_only_that_connection() {
    with_timeout(60, || {
        let a = tcp_participant(234, 27407, &[27408]);
        let b = tcp_participant(234, 27408, &[27407]);
        let (w, r) = endpoints(&a, &b, "TcpGarbage", true);
        let garbage: [&[u8]; 4] = [
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            // RTPS header, then DATA instead of MSG_LEN.
            b"RTPS\x02\x05\x01\xfd\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x15\x01\x04\x00\x20\x00\x00\x00",
            // MSG_LEN announcing 1 GiB.
            b"RTPS\x02\x05\x01\xfd\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x81\x01\x04\x00\x00\x00\x00\x40",
            // Truncated: the peer closes mid-frame.
            b"RTPS\x02\x05\x01\xfd\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x81\x01\x04\x00\x00\x01\x00\x00\x00",
        ];
        for g in garbage {
            let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, 27408)).unwrap();
            s.write_all(g).unwrap();
            drop(s);
        }
        let deadline = Instant::now() + WAIT;
        let errors = || -> u64 {
            b.transport_stats()
                .iter()
                .map(|(_, s)| s.frame_errors)
                .sum()
        };
        while errors() < 4 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(errors(), 4, "{:?}", b.transport_stats());
        // The real connection still works.
        w.write(&large_data(5, 32)).unwrap();
        assert_eq!(receive(&r, 1, 32, WAIT), vec![5]);
    });
}

/// The test identity perftest ships (`tools/perftest/resource/tls`, for testing only).
fn test_tls() -> ferrodds::TlsConfig {
    ferrodds::TlsConfig {
        ca_certificates: include_bytes!("../../../tools/perftest/resource/tls/ca.pem").to_vec(),
        certificate_chain: include_bytes!("../../../tools/perftest/resource/tls/identity.pem")
            .to_vec(),
        private_key: include_bytes!("../../../tools/perftest/resource/tls/identity_key.pem")
            .to_vec(),
        peer_name: Some("ferrodds-perftest".into()),
        allow_tls12: false,
    }
}

#[test]
fn tls_participants_discover_and_exchange_data() {
    with_timeout(90, || {
        let tls = |port: u16, peers: &[u16]| {
            DomainParticipant::with_config(
                237,
                tcp_config(port, peers)
                    .transports(Transports::Tlsv4)
                    .tls(test_tls()),
            )
            .expect("TLS participant")
        };
        let a = tls(27410, &[27411]);
        let b = tls(27411, &[27410]);
        assert!(a.wait_for_participants(1, WAIT) && b.wait_for_participants(1, WAIT));
        for (size, n) in [(32usize, 300u32), (100_000, 20)] {
            let (w, r) = endpoints(&a, &b, &format!("Tls{size}"), true);
            for seq in 0..n {
                w.write(&large_data(seq, size)).unwrap();
            }
            let got = receive(&r, n as usize, size, Duration::from_secs(20));
            assert_eq!(
                got,
                (0..n).collect::<Vec<_>>(),
                "reliable {size} B over TLS"
            );
        }
        for p in [&a, &b] {
            let stats = p.transport_stats();
            assert_eq!(stats.len(), 1);
            assert_eq!(stats[0].0, ferrodds::TransportKind::Tlsv4);
            assert_eq!(stats[0].1.handshake_failures, 0, "{stats:?}");
            assert!(p.transport_security_errors().is_empty());
        }
        // TLS without an identity is a clear configuration error.
        let e = DomainParticipant::with_config(
            237,
            tcp_config(27412, &[]).transports(Transports::Tlsv4),
        )
        .expect_err("TLS without Config::tls");
        assert!(e.to_string().contains("needs Config::tls"), "{e}");
        // A plain TCP participant dialling a TLS one is refused (and never discovered).
        let plain = tcp_participant(237, 27413, &[27410]);
        assert!(!plain.wait_for_participants(1, Duration::from_secs(2)));
        let deadline = Instant::now() + Duration::from_secs(5);
        while a.transport_security_errors().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let errors = a.transport_security_errors().join("\n");
        assert!(errors.contains("does not speak TLS"), "{errors}");
    });
}
