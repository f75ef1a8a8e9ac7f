//! Replays real Cyclone DDS captures (recorded by the capture crate's script,
//! stored with the wire crate's test data) through the codec, the discovery
//! decoders and a participant.

use std::path::PathBuf;

use crate::codec::{self, Sub};
use crate::discovery::{EndpointData, SpdpData, SEDP_PUB_WRITER, SEDP_SUB_WRITER, SPDP_WRITER};
use crate::{Event, GuidPrefix, Participant, ParticipantConfig, Timestamp};

fn capture(name: &str) -> Vec<Vec<u8>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../wire/tests/data")
        .join(name);
    let contents = ferrodds_capture::read_udp_payloads(&path).expect("capture readable");
    contents
        .datagrams
        .into_iter()
        .map(|d| d.payload)
        .filter(|p| p.starts_with(b"RTPS"))
        .collect()
}

const FILES: [&str; 5] = [
    "cyclone-ping-besteffort.pcapng",
    "cyclone-ping-reliable.pcapng",
    "cyclone-pubsub-frag.pcapng",
    "cyclone-pubsub-frag-besteffort.pcapng",
    "cyclone-pubsub-frag-lossy.pcapng",
];

#[test]
fn every_cyclone_datagram_parses() {
    for f in FILES {
        let dgrams = capture(f);
        assert!(!dgrams.is_empty(), "{f}");
        for (i, d) in dgrams.iter().enumerate() {
            let (h, subs) = codec::parse(d).unwrap_or_else(|e| panic!("{f}#{i}: {e:?}"));
            assert_eq!(h.vendor, [0x01, 0x10], "Cyclone vendor id");
            for s in subs {
                s.unwrap_or_else(|e| panic!("{f}#{i}: {e:?}"));
            }
        }
    }
}

#[test]
fn cyclone_discovery_data_decodes() {
    let mut spdp = 0;
    let mut topics = Vec::new();
    for d in capture("cyclone-ping-reliable.pcapng") {
        let (_, subs) = codec::parse(&d).unwrap();
        for s in subs {
            let Ok(Sub::Data(data)) = s else { continue };
            let Some(payload) = data.payload else {
                continue;
            };
            let disposed = data
                .inline_qos
                .and_then(|q| codec::parse_inline_qos(q, data.little_endian))
                .is_some_and(|q| q.status_info != 0);
            if data.key_only || disposed {
                continue;
            }
            if data.writer_id == SPDP_WRITER {
                let p = SpdpData::decode(payload).expect("SPDP decodes");
                assert_eq!(p.domain_id.unwrap_or(77), 77);
                assert!(!p.metatraffic_unicast.is_empty() || !p.default_unicast.is_empty());
                spdp += 1;
            } else if data.writer_id == SEDP_PUB_WRITER || data.writer_id == SEDP_SUB_WRITER {
                let is_writer = data.writer_id == SEDP_PUB_WRITER;
                if let Some(e) = EndpointData::decode(payload, is_writer) {
                    topics.push((is_writer, e.topic_name, e.type_name, e.qos.reliability.kind));
                }
            }
        }
    }
    // ddsperf's reliable ping/pong topics, as writers and readers.
    for t in ["DDSPerfRPingKS", "DDSPerfRPongKS"] {
        for w in [true, false] {
            assert!(
                topics.iter().any(|(iw, name, ty, rel)| *iw == w
                    && name == t
                    && ty == "KeyedSeq"
                    && *rel == crate::ReliabilityKind::Reliable),
                "{t} writer={w}: {topics:?}"
            );
        }
    }
    assert!(spdp >= 2, "{spdp}");
    assert!(
        topics.iter().any(|(w, _, _, _)| *w) && topics.iter().any(|(w, _, _, _)| !*w),
        "{topics:?}"
    );
}

#[test]
fn participant_replaying_cyclone_traffic_discovers_peers_without_errors() {
    for f in FILES {
        let cfg = ParticipantConfig {
            domain_id: 77,
            guid_prefix: GuidPrefix([0x01, 0xfd, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]),
            ..ParticipantConfig::default()
        };
        let mut p = Participant::new(cfg, Timestamp(0));
        let mut buf = vec![0u8; 65536];
        for (i, d) in capture(f).iter().enumerate() {
            let now = Timestamp(1_000_000 * i as u64);
            p.handle_datagram(now, None, d);
            while p.poll_transmit(now, &mut buf).is_some() {}
        }
        assert_eq!(p.stats().malformed_datagrams, 0, "{f}: {:?}", p.stats());
        let mut found = 0;
        while let Some(e) = p.poll_event() {
            if matches!(e, Event::ParticipantDiscovered { .. }) {
                found += 1;
            }
        }
        assert!(found >= 1, "{f}: no participant discovered");
    }
}

/// Impersonates the subscribing Cyclone participant of the best-effort
/// fragmented capture (same GUID prefix, same topic) and checks that the
/// publisher's 100 kB samples, sent as DATA_FRAG, are reassembled.
#[test]
fn fragmented_cyclone_samples_are_reassembled() {
    let dgrams = capture("cyclone-pubsub-frag-besteffort.pcapng");
    let mut sub = None;
    for d in &dgrams {
        let (_, subs) = codec::parse(d).unwrap();
        for s in subs {
            let Ok(Sub::Data(data)) = s else { continue };
            if data.writer_id != SEDP_SUB_WRITER || data.key_only {
                continue;
            }
            if let Some(e) = data.payload.and_then(|p| EndpointData::decode(p, false)) {
                if e.topic_name == "DDSPerfUDataKS" {
                    sub = Some(e);
                }
            }
        }
    }
    let sub = sub.expect("subscription in capture");
    let cfg = ParticipantConfig {
        domain_id: 77,
        guid_prefix: sub.guid.prefix,
        ..ParticipantConfig::default()
    };
    let mut p = Participant::new(cfg, Timestamp(0));
    let r = p
        .create_reader(
            crate::ReaderAttributes {
                topic_name: sub.topic_name.clone(),
                type_name: sub.type_name.clone(),
                keyed: sub.guid.entity_id.0[3] == 0x07,
                qos: crate::ReaderQos {
                    reliability: sub.qos.reliability,
                    history: crate::History::KeepAll,
                    ..crate::ReaderQos::default()
                },
            },
            Timestamp(0),
        )
        .unwrap();
    let mut buf = vec![0u8; 65536];
    let mut samples = Vec::new();
    for (i, d) in dgrams.iter().enumerate() {
        let now = Timestamp(1_000_000 * i as u64);
        p.handle_datagram(now, None, d);
        while p.poll_transmit(now, &mut buf).is_some() {}
        while let Some(s) = p.take_sample(r) {
            samples.push(s);
        }
    }
    let mut events = Vec::new();
    while let Some(e) = p.poll_event() {
        events.push(e);
    }
    // Matched through SEDP, then the publisher left (SPDP dispose at shutdown).
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::SubscriptionMatched { reader, .. } if *reader == r)),
        "{events:?}"
    );
    assert!(matches!(events.last(), Some(Event::ParticipantLost { .. })));
    assert_eq!(p.matched_writer_count(r), 0);
    assert!(!samples.is_empty(), "{:?}", p.stats());
    for s in &samples {
        assert!(s.payload.len() >= 100_000, "{}", s.payload.len());
        // CDR little-endian encapsulation.
        assert_eq!(&s.payload[..2], &[0x00, 0x01]);
    }
    let sns: Vec<i64> = samples.iter().map(|s| s.sequence_number.0).collect();
    assert!(sns.windows(2).all(|w| w[0] < w[1]), "{sns:?}");
}
