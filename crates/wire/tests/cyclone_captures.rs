//! Real Cyclone DDS traffic (`tests/data/cyclone-*.pcapng`, see the README
//! there): every RTPS message parses, every submessage re-emits byte for byte
//! with its own byte order, the submessage counts match tshark's, and the
//! discovery payloads decode as parameter lists.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ferrodds_wire::qos::{DataRepresentation, Partition, Reliability};
use ferrodds_wire::*;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Counts per submessage id, from the README tables (tshark).
fn expected(file: &str) -> &'static [(u8, usize)] {
    match file {
        "cyclone-ping-besteffort.pcapng" => {
            &[(0x06, 16), (0x07, 16), (0x09, 185), (0x0e, 12), (0x15, 185)]
        }
        "cyclone-ping-reliable.pcapng" => &[
            (0x06, 25),
            (0x07, 130),
            (0x09, 188),
            (0x0e, 22),
            (0x15, 188),
        ],
        "cyclone-pubsub-frag-besteffort.pcapng" => &[
            (0x06, 15),
            (0x07, 15),
            (0x09, 84),
            (0x0e, 10),
            (0x15, 82),
            (0x16, 16),
        ],
        "cyclone-pubsub-frag-lossy.pcapng" => &[
            (0x06, 39),
            (0x07, 45),
            (0x09, 87),
            (0x0e, 87),
            (0x12, 11),
            (0x13, 10),
            (0x15, 81),
            (0x16, 65),
        ],
        "cyclone-pubsub-frag.pcapng" => &[
            (0x06, 23),
            (0x07, 23),
            (0x09, 83),
            (0x0e, 19),
            (0x13, 14),
            (0x15, 81),
            (0x16, 16),
        ],
        other => panic!("no expectations for {other}"),
    }
}

/// Decodes the typed values a discovery parameter list may hold.
fn check_discovery_payload(payload: &[u8]) -> usize {
    let Ok(pl) = ParameterList::from_serialized_payload(payload) else {
        return 0; // user data (CDR), not a parameter list
    };
    let mut n = 0;
    for p in pl.iter() {
        let p = p.expect("parameter list well formed");
        let e = pl.endianness();
        match p.pid {
            pid::PROTOCOL_VERSION => {
                assert_eq!(p.decode::<ProtocolVersion>(e).unwrap().major, 2);
            }
            pid::VENDORID => {
                assert_eq!(p.decode::<VendorId>(e).unwrap(), VendorId::CYCLONE_DDS);
            }
            pid::PARTICIPANT_GUID | pid::ENDPOINT_GUID => {
                p.decode::<Guid>(e).unwrap();
            }
            pid::DEFAULT_UNICAST_LOCATOR
            | pid::METATRAFFIC_UNICAST_LOCATOR
            | pid::UNICAST_LOCATOR => {
                let l = p.decode::<Locator>(e).unwrap();
                let addr = l.udp_socket_addr().expect("UDPv4 locator");
                assert!(addr.ip().is_loopback(), "{addr}");
            }
            pid::TOPIC_NAME | pid::TYPE_NAME | pid::ENTITY_NAME => {
                assert!(!p.decode::<&str>(e).unwrap().is_empty());
            }
            pid::RELIABILITY => {
                p.decode::<Reliability>(e).unwrap();
            }
            pid::PARTITION => {
                let part = p.decode::<Partition<'_>>(e).unwrap();
                assert_eq!(part.iter().count(), part.len());
            }
            pid::DATA_REPRESENTATION => {
                p.decode::<DataRepresentation<'_>>(e).unwrap();
            }
            pid::PARTICIPANT_LEASE_DURATION => {
                assert!(p.decode::<Duration>(e).unwrap().seconds > 0);
            }
            pid::BUILTIN_ENDPOINT_SET => {
                let s = p.decode::<BuiltinEndpointSet>(e).unwrap();
                assert!(s.contains(BuiltinEndpointSet::PARTICIPANT_ANNOUNCER));
            }
            pid::KEY_HASH => {
                p.decode::<KeyHash>(e).unwrap();
            }
            _ => {}
        }
        n += 1;
    }
    n
}

#[test]
fn cyclone_captures_parse_and_reemit_identically() {
    let mut files: Vec<_> = std::fs::read_dir(data_dir())
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            (name.starts_with("cyclone-") && name.ends_with(".pcapng")).then_some(name)
        })
        .collect();
    files.sort();
    assert!(files.len() >= 5, "captures missing: {files:?}");
    let mut buf = vec![0u8; 70_000];
    for file in &files {
        let contents = ferrodds_capture::read_udp_payloads(data_dir().join(file)).unwrap();
        let mut counts: BTreeMap<u8, usize> = BTreeMap::new();
        let mut params = 0;
        let mut messages = 0;
        for dgram in &contents.datagrams {
            if !dgram.payload.starts_with(b"RTPS") {
                continue; // Cyclone's 1-byte wake-up datagrams
            }
            messages += 1;
            let m = MessageView::parse(&dgram.payload)
                .unwrap_or_else(|e| panic!("{file} frame {}: {e}", dgram.frame));
            assert_eq!(m.header().vendor_id, VendorId::CYCLONE_DDS);
            // Re-emit the whole message: header + each submessage with its own E flag.
            let mut w = MessageWriter::new(&mut buf, m.header()).unwrap();
            for raw in m.raw_submessages() {
                let raw = raw.unwrap_or_else(|e| panic!("{file} frame {}: {e}", dgram.frame));
                let s = raw
                    .parse()
                    .unwrap_or_else(|e| panic!("{file} frame {}: {e}", dgram.frame));
                *counts.entry(raw.header.id).or_default() += 1;
                let mut one = vec![0u8; s.encoded_len()];
                let n = s.write(raw.endianness(), &mut one).unwrap();
                assert_eq!(
                    &one[..n],
                    raw.bytes,
                    "{file} frame {} submessage at {}: {s:?}",
                    dgram.frame,
                    raw.offset
                );
                w.push(&s, raw.endianness()).unwrap();
                match s {
                    Submessage::Data(d) => {
                        if let Some(q) = d.inline_qos {
                            assert!(q.check_must_understand(|_| true).is_ok());
                        }
                        if let Some(p) = d.serialized_payload {
                            params += check_discovery_payload(p);
                        }
                    }
                    Submessage::DataFrag(f) => {
                        let end = f.sample_offset() + f.serialized_payload.len() as u64;
                        assert!(end <= u64::from(f.sample_size));
                        assert!(f.fragment_starting_num.0 <= f.total_fragments());
                    }
                    _ => {}
                }
            }
            assert_eq!(
                w.finish(),
                &dgram.payload[..],
                "{file} frame {}",
                dgram.frame
            );
        }
        let want: BTreeMap<u8, usize> = expected(file).iter().copied().collect();
        assert_eq!(counts, want, "{file}");
        assert!(messages > 50, "{file}: only {messages} RTPS messages");
        assert!(params > 20, "{file}: only {params} discovery parameters");
    }
}
