//! Property tests: whatever the writers write, the reader gives back
//! identically; the reader never panics on damaged files.

use std::net::{Ipv4Addr, SocketAddrV4};

use ferrodds_capture::{
    parse_udp_payloads, CaptureError, CaptureWriter, Direction, PcapWriter, Timestamp,
    MAX_EXPORTED_PDU_PAYLOAD, MAX_UDP_PAYLOAD,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Dgram {
    src: SocketAddrV4,
    dst: SocketAddrV4,
    payload: Vec<u8>,
    ts: u64,
    inbound: bool,
    comment: Option<String>,
}

fn addr() -> impl Strategy<Value = SocketAddrV4> {
    (any::<[u8; 4]>(), any::<u16>()).prop_map(|(a, p)| SocketAddrV4::new(Ipv4Addr::from(a), p))
}

fn dgram() -> impl Strategy<Value = Dgram> {
    (
        addr(),
        addr(),
        prop::collection::vec(any::<u8>(), 0..3000),
        // Classic pcap needs seconds below 2^32.
        0u64..(u64::from(u32::MAX) * 1_000_000_000),
        any::<bool>(),
        prop::option::of("[a-z ]{0,20}"),
    )
        .prop_map(|(src, dst, payload, ts, inbound, comment)| Dgram {
            src,
            dst,
            payload,
            ts,
            inbound,
            comment,
        })
}

fn dir(inbound: bool) -> Direction {
    if inbound {
        Direction::Inbound
    } else {
        Direction::Outbound
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn pcapng_round_trip(ds in prop::collection::vec(dgram(), 0..12), mtu in 68u16..=65535) {
        let mut w = CaptureWriter::new(Vec::new()).unwrap();
        w.set_mtu(mtu).unwrap();
        let ifaces = [w.add_interface("a").unwrap(), w.add_interface("b").unwrap()];
        for (i, d) in ds.iter().enumerate() {
            w.write_udp(ifaces[i % 2], Timestamp::from_nanos(d.ts), d.src, d.dst, &d.payload,
                dir(d.inbound), d.comment.as_deref()).unwrap();
        }
        let c = parse_udp_payloads(&w.into_inner().unwrap()).unwrap();
        prop_assert!(c.skipped.is_empty(), "{:?}", c.skipped);
        prop_assert_eq!(c.datagrams.len(), ds.len());
        for (i, (got, d)) in c.datagrams.iter().zip(&ds).enumerate() {
            prop_assert_eq!(got.src, d.src);
            prop_assert_eq!(got.dst, d.dst);
            prop_assert_eq!(&got.payload, &d.payload);
            prop_assert_eq!(got.ts, Timestamp::from_nanos(d.ts).to_system_time());
            prop_assert_eq!(got.direction, Some(dir(d.inbound)));
            prop_assert_eq!(&got.comment, &d.comment);
            prop_assert_eq!(got.interface as usize, i % 2);
        }
    }

    #[test]
    fn pcap_round_trip(ds in prop::collection::vec(dgram(), 0..12), mtu in 68u16..=65535) {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.set_mtu(mtu).unwrap();
        for d in &ds {
            w.write_udp(Timestamp::from_nanos(d.ts), d.src, d.dst, &d.payload).unwrap();
        }
        let c = parse_udp_payloads(&w.into_inner().unwrap()).unwrap();
        prop_assert!(c.skipped.is_empty(), "{:?}", c.skipped);
        prop_assert_eq!(c.datagrams.len(), ds.len());
        for (got, d) in c.datagrams.iter().zip(&ds) {
            prop_assert_eq!((got.src, got.dst), (d.src, d.dst));
            prop_assert_eq!(&got.payload, &d.payload);
            prop_assert_eq!(got.ts, Timestamp::from_nanos(d.ts).to_system_time());
        }
    }

    #[test]
    fn damaged_files_never_panic(
        ds in prop::collection::vec(dgram(), 1..4),
        ng in any::<bool>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = if ng {
            let mut w = CaptureWriter::new(Vec::new()).unwrap();
            let i = w.add_interface("x").unwrap();
            w.set_mtu(576).unwrap();
            for d in &ds {
                w.write_udp(i, Timestamp::from_nanos(d.ts), d.src, d.dst, &d.payload,
                    dir(d.inbound), d.comment.as_deref()).unwrap();
            }
            w.into_inner().unwrap()
        } else {
            let mut w = PcapWriter::new(Vec::new()).unwrap();
            w.set_mtu(576).unwrap();
            for d in &ds {
                w.write_udp(Timestamp::from_nanos(d.ts), d.src, d.dst, &d.payload).unwrap();
            }
            w.into_inner().unwrap()
        };
        for (idx, val) in edits {
            let i = idx.index(bytes.len());
            bytes[i] = val;
        }
        let keep = cut.index(bytes.len() + 1);
        bytes.truncate(keep);
        // Any result is fine; panicking is not.
        let _ = parse_udp_payloads(&bytes);
    }
}

#[test]
fn largest_udp_payload_fragments_larger_ones_become_exported_pdus() {
    let mut w = CaptureWriter::new(Vec::new()).unwrap();
    let i = w.add_interface("tcp").unwrap();
    let a = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7411);
    let b = SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 2), 7413);
    let udp_max: Vec<u8> = (0..MAX_UDP_PAYLOAD).map(|i| (i % 239) as u8).collect();
    let over: Vec<u8> = (0..=MAX_UDP_PAYLOAD).map(|i| (i % 233) as u8).collect();
    let biggest = vec![0x5au8; MAX_EXPORTED_PDU_PAYLOAD];
    for p in [&udp_max, &over, &biggest] {
        w.write_udp(
            i,
            Timestamp::from_nanos(5),
            a,
            b,
            p,
            Direction::Outbound,
            Some("c"),
        )
        .unwrap();
    }
    let too_big = vec![0u8; MAX_EXPORTED_PDU_PAYLOAD + 1];
    assert!(matches!(
        w.write_udp(
            i,
            Timestamp::from_nanos(6),
            a,
            b,
            &too_big,
            Direction::Outbound,
            None
        ),
        Err(CaptureError::DatagramTooLarge { .. })
    ));
    // An interface added after the companion keeps its own index.
    let j = w.add_interface("udp").unwrap();
    assert_eq!(j.index(), 2);
    w.write_udp(
        j,
        Timestamp::from_nanos(7),
        b,
        a,
        b"tail",
        Direction::Inbound,
        None,
    )
    .unwrap();
    let c = parse_udp_payloads(&w.into_inner().unwrap()).unwrap();
    assert!(c.skipped.is_empty(), "{:?}", c.skipped);
    assert_eq!(c.datagrams.len(), 4);
    assert_eq!(c.datagrams[0].payload, udp_max);
    assert_eq!(c.datagrams[0].frame, 2, "two IPv4 fragments");
    assert_eq!(c.datagrams[0].interface, 0);
    assert_eq!(c.datagrams[1].payload, over);
    assert_eq!(c.datagrams[1].interface, 1, "exported-PDU companion");
    assert_eq!((c.datagrams[1].src, c.datagrams[1].dst), (a, b));
    assert_eq!(c.datagrams[1].comment.as_deref(), Some("c"));
    assert_eq!(c.datagrams[2].payload, biggest);
    assert_eq!(c.datagrams[3].payload, b"tail");
    assert_eq!(c.datagrams[3].interface, 2);
}
