//! DDS Security step 2 through the public API: two participants in one process over
//! loopback with the committed perftest RTPSEncrypt governance (`rtps_protection_kind`
//! ENCRYPT) exchange crypto tokens after authentication and deliver samples in protected
//! RTPS messages; a capture's decrypted view records each protected message's clear form
//! beside it. Under the SignEncryptSubmessage governance (RTPS SIGN, metadata ENCRYPT) the
//! endpoints exchange their crypto tokens and every submessage of the user writer and
//! reader travels encrypted (SEC_PREFIX / SEC_BODY / SEC_POSTFIX). Domains 222, 227, 105,
//! 112, 121 and 103 (no other test uses them).
#![cfg(feature = "security")]

mod common;

use common::*;
use ferrodds::cdr::types::{TestData, TestDataLarge};
use ferrodds::{
    CaptureConfig, DataReader, DataWriter, DomainParticipant, CAPTURE_DECRYPTED_COMMENT,
};
use ferrodds_capture::testing::assert_tshark_clean;
use ferrodds_capture::{read_udp_payloads, Direction};

const DOMAIN: u32 = 222;

/// perftest's RTPSEncrypt governance (`rtps_protection_kind` ENCRYPT).
const GOVERNANCE: &str = "signed_PerftestGovernance_RTPSEncrypt.xml";

/// A secure publisher (capturing with `capture`, if any) and subscriber in `domain`, a
/// reliable writer and reader of `Throughput` matched.
fn matched_pair(
    domain: u32,
    capture: Option<CaptureConfig>,
) -> (
    DomainParticipant,
    DomainParticipant,
    DataWriter<TestData>,
    DataReader<TestData>,
) {
    matched_pair_with(domain, GOVERNANCE, capture)
}

/// [`matched_pair`] under `governance`.
fn matched_pair_with(
    domain: u32,
    governance: &str,
    capture: Option<CaptureConfig>,
) -> (
    DomainParticipant,
    DomainParticipant,
    DataWriter<TestData>,
    DataReader<TestData>,
) {
    let a = DomainParticipant::with_config(
        domain,
        loopback_config()
            .security(perftest_security("pub", governance))
            .capture(capture),
    )
    .expect("secure participant");
    let b = DomainParticipant::with_config(
        domain,
        loopback_config().security(perftest_security("sub", governance)),
    )
    .expect("secure participant");
    let (w, r) = endpoints_of::<TestData>(&a, &b, "Throughput", true);
    (a, b, w, r)
}

#[test]
fn rtps_encrypt_governance_delivers_samples() {
    with_timeout(60, || {
        let (a, b, w, r) = matched_pair(DOMAIN, None);
        for i in 0..50u32 {
            w.write(&test_data(i)).unwrap();
        }
        w.wait_for_acknowledgments(WAIT).unwrap();
        let got = take_seq_nums(&r, 50);
        assert_eq!(got, (0..50).collect::<Vec<_>>());
        for s in [a.engine_stats(), b.engine_stats()] {
            assert_eq!(s.authenticated_participants, 1, "{s:?}");
            assert_eq!(s.protection_failures, 0, "{s:?}");
            assert!(s.protected_datagrams_sent >= 10, "{s:?}");
            assert!(s.protected_datagrams_received >= 10, "{s:?}");
            assert_eq!(s.unprotected_submessages_dropped, 0, "{s:?}");
        }
    });
}

/// An RTPS message protected as a whole (SRTPS_PREFIX) or holding protected submessages
/// (SEC_PREFIX: the volatile-secure key exchange).
fn is_protected(m: &[u8]) -> bool {
    let mut pos = 20;
    while pos + 4 <= m.len() {
        let (id, flags) = (m[pos], m[pos + 1]);
        if id == 0x33 || id == 0x31 {
            return true;
        }
        let len = if flags & 1 != 0 {
            u16::from_le_bytes([m[pos + 2], m[pos + 3]])
        } else {
            u16::from_be_bytes([m[pos + 2], m[pos + 3]])
        } as usize;
        if len == 0 {
            return false;
        }
        pos += 4 + len;
    }
    false
}

/// The decrypted view ([`CaptureConfig::decrypted_view`]): the publisher's capture holds
/// each protected message (SRTPS_PREFIX first, the samples' bytes nowhere in clear) followed
/// by its clear form, marked by its packet comment, which carries the samples; tshark
/// decodes every frame.
#[test]
fn a_capture_with_the_decrypted_view_records_the_clear_messages() {
    const DOMAIN: u32 = 227;
    const MARKER: &[u8] = b"FERRODDS-DECRYPTED-VIEW-MARKER";
    with_timeout(60, || {
        let dir = std::env::temp_dir().join(format!("ferrodds-decrypted-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("pub.pcapng");
        let capture = CaptureConfig::file(&path).decrypted_view(true);
        let (a, _b, w, _r) = matched_pair(DOMAIN, Some(capture));
        for i in 0..20u32 {
            let mut d = test_data(i);
            d.bin_data = MARKER.to_vec();
            w.write(&d).unwrap();
        }
        w.wait_for_acknowledgments(WAIT).unwrap();
        let st = a.stop_capture().expect("a capture ran");
        assert_eq!(st.frames_dropped, 0, "{st:?}");
        let c = read_udp_payloads(&path).unwrap();
        assert!(c.skipped.is_empty(), "{:?}", c.skipped);
        let has = |m: &[u8]| m.windows(MARKER.len()).any(|w| w == MARKER);
        let (mut srtps, mut sec, mut sec_sent, mut clear, mut marked) = (0, 0, 0, 0, 0);
        // Protected frames not yet followed by their clear form, per addresses and direction.
        let mut unmatched: std::collections::HashMap<_, usize> = Default::default();
        for d in &c.datagrams {
            let key = (d.src, d.dst, d.direction);
            if d.comment.as_deref() == Some(CAPTURE_DECRYPTED_COMMENT) {
                clear += 1;
                // After a protected frame with the same addresses and direction, one clear
                // frame for each (other threads' frames may come between).
                let n = unmatched.entry(key).or_default();
                assert!(*n > 0, "frame {}: no protected frame before it", d.frame);
                *n -= 1;
                assert!(
                    !is_protected(&d.payload),
                    "frame {} still protected",
                    d.frame
                );
                if has(&d.payload) {
                    marked += 1;
                }
                continue;
            }
            assert!(
                !has(&d.payload),
                "frame {} carries the samples in clear",
                d.frame
            );
            if d.payload.get(20) == Some(&0x33) {
                srtps += 1;
                *unmatched.entry(key).or_default() += 1;
            } else if is_protected(&d.payload) {
                // Volatile-secure submessages (the key exchange), sent and received.
                sec += 1;
                if d.direction == Some(Direction::Outbound) {
                    sec_sent += 1;
                }
                *unmatched.entry(key).or_default() += 1;
            }
        }
        assert!(srtps >= 10, "{srtps} protected messages");
        assert!(sec_sent >= 1, "no volatile-secure message sent");
        // Every protected frame sent is followed by its clear form.
        let sent_unmatched: usize = unmatched
            .iter()
            .filter(|((_, _, dir), _)| *dir == Some(Direction::Outbound))
            .map(|(_, n)| n)
            .sum();
        assert_eq!(
            sent_unmatched, 0,
            "protected frames sent without their clear form"
        );
        // So is every one received, but for messages received before their sender's key
        // material (dropped and counted).
        let rejected = a.engine_stats().rejected_protected_datagrams as usize;
        assert!(
            clear + rejected >= srtps + sec && clear <= srtps + sec,
            "{clear} clear frames for {srtps} protected messages and {sec} with protected submessages ({rejected} rejected)"
        );
        assert!(marked >= 1, "no clear frame carries the samples");
        assert_tshark_clean(&path);
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// The top-level submessages of RTPS message `m`: (id, bytes, header included).
fn submessages(m: &[u8]) -> Vec<(u8, &[u8])> {
    let mut v = Vec::new();
    let mut pos = 20;
    while pos + 4 <= m.len() {
        let (id, flags) = (m[pos], m[pos + 1]);
        let len = if flags & 1 != 0 {
            u16::from_le_bytes([m[pos + 2], m[pos + 3]])
        } else {
            u16::from_be_bytes([m[pos + 2], m[pos + 3]])
        } as usize;
        let end = if len == 0 {
            m.len()
        } else {
            (pos + 4 + len).min(m.len())
        };
        v.push((id, &m[pos..end]));
        pos = end;
    }
    v
}

/// Whether entity id `e` is a user (not builtin) writer or reader.
fn is_user_entity(e: &[u8]) -> bool {
    e.len() == 4 && matches!(e[3], 0x02 | 0x03 | 0x04 | 0x07)
}

/// perftest's SignEncryptSubmessage governance: every RTPS message signed, and each
/// submessage of the user DataWriter (DATA, HEARTBEAT, GAP) and DataReader (ACKNACK,
/// NACK_FRAG) encrypted on its own with the endpoint's key material, exchanged as
/// datawriter / datareader crypto tokens. The publisher's capture: no sample byte in clear,
/// no user submessage outside a SEC_PREFIX, SEC_PREFIX both ways; tshark decodes every frame.
#[test]
fn submessage_encryption_delivers_samples_with_each_user_submessage_encrypted() {
    const DOMAIN: u32 = 105;
    const MARKER: &[u8] = b"FERRODDS-SUBMESSAGE-ENCRYPTION-MARKER";
    with_timeout(60, || {
        let dir = std::env::temp_dir().join(format!("ferrodds-submsg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("pub.pcapng");
        let (a, b, w, r) = matched_pair_with(
            DOMAIN,
            "signed_PerftestGovernance_SignEncryptSubmessage.xml",
            Some(CaptureConfig::file(&path)),
        );
        for i in 0..50u32 {
            let mut d = test_data(i);
            d.bin_data = MARKER.to_vec();
            w.write(&d).unwrap();
        }
        w.wait_for_acknowledgments(WAIT).unwrap();
        let mut got = Vec::new();
        let deadline = std::time::Instant::now() + WAIT;
        while got.len() < 50 && std::time::Instant::now() < deadline {
            let _ = r.wait_for_data(std::time::Duration::from_millis(100));
            for s in r.take().unwrap() {
                if let Some(d) = s.data {
                    assert_eq!(d.bin_data, MARKER);
                    got.push(d.seq_num);
                }
            }
        }
        assert_eq!(got, (0..50).collect::<Vec<_>>());
        for s in [a.engine_stats(), b.engine_stats()] {
            assert_eq!(s.authenticated_participants, 1, "{s:?}");
            assert_eq!(s.protection_failures, 0, "{s:?}");
            assert_eq!(s.unprotected_submessages_dropped, 0, "{s:?}");
            assert!(s.protected_datagrams_sent >= 10, "{s:?}");
        }
        let st = a.stop_capture().expect("a capture ran");
        assert_eq!(st.frames_dropped, 0, "{st:?}");
        let c = read_udp_payloads(&path).unwrap();
        let (mut sec_out, mut sec_in) = (0, 0);
        for d in &c.datagrams {
            assert!(
                !d.payload.windows(MARKER.len()).any(|w| w == MARKER),
                "frame {} carries a sample in clear",
                d.frame
            );
            for (id, sub) in submessages(&d.payload) {
                if id == 0x31 {
                    if d.direction == Some(Direction::Outbound) {
                        sec_out += 1;
                    } else {
                        sec_in += 1;
                    }
                }
                // DATA, DATA_FRAG (writer id at 12..16), HEARTBEAT, HEARTBEAT_FRAG, GAP
                // (writer id at 8..12); ACKNACK, NACK_FRAG (reader id at 4..8).
                let endpoint = match id {
                    0x15 | 0x16 => sub.get(12..16),
                    0x07 | 0x13 | 0x08 => sub.get(8..12),
                    0x06 | 0x12 => sub.get(4..8),
                    _ => None,
                };
                assert!(
                    !endpoint.is_some_and(is_user_entity),
                    "frame {}: submessage 0x{id:02x} of a user endpoint in clear",
                    d.frame
                );
            }
        }
        // DATA and HEARTBEATs out, ACKNACKs in.
        assert!(sec_out >= 50, "{sec_out} protected submessages sent");
        assert!(sec_in >= 1, "{sec_in} protected submessages received");
        assert_tshark_clean(&path);
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// Payload encryption (`data_protection_kind` ENCRYPT under RTPS signing, a governance signed
/// by perftest's test CA at run time) with samples of 200 KB: the writer encrypts each
/// payload once and fragments the protected form; the reader reassembles, then decodes.
/// Every sample arrives intact, and none of its bytes is on the wire in clear.
#[test]
fn payload_encryption_of_fragmented_samples() {
    const DOMAIN: u32 = 112;
    with_timeout(90, || {
        let dir = std::env::temp_dir().join(format!("ferrodds-payload-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let gov = signed_test_governance(&dir, "SIGN", "NONE", "ENCRYPT");
        let path = dir.join("pub.pcapng");
        let gov = gov.to_str().unwrap();
        let a = DomainParticipant::with_config(
            DOMAIN,
            loopback_config()
                .security(perftest_security("pub", gov))
                .capture(Some(CaptureConfig::file(&path))),
        )
        .expect("secure participant");
        let b = DomainParticipant::with_config(
            DOMAIN,
            loopback_config().security(perftest_security("sub", gov)),
        )
        .expect("secure participant");
        let (w, r) = endpoints_of::<TestDataLarge>(&a, &b, "Throughput", true);
        let big = |i: u32| TestDataLarge {
            seq_num: i,
            bin_data: (0..200_000u32).map(|k| (k * 7 + i) as u8 | 0x80).collect(),
            ..Default::default()
        };
        for i in 0..10u32 {
            w.write(&big(i)).unwrap();
        }
        w.wait_for_acknowledgments(WAIT).unwrap();
        let mut got = Vec::new();
        let deadline = std::time::Instant::now() + WAIT;
        while got.len() < 10 && std::time::Instant::now() < deadline {
            let _ = r.wait_for_data(std::time::Duration::from_millis(100));
            for s in r.take().unwrap() {
                if let Some(d) = s.data {
                    assert_eq!(d.bin_data, big(d.seq_num).bin_data, "sample {}", d.seq_num);
                    got.push(d.seq_num);
                }
            }
        }
        assert_eq!(got, (0..10).collect::<Vec<_>>());
        for s in [a.engine_stats(), b.engine_stats()] {
            assert_eq!(s.protection_failures, 0, "{s:?}");
        }
        let _ = a.stop_capture();
        let c = read_udp_payloads(&path).unwrap();
        let probe = &big(3).bin_data[1000..1032];
        assert!(
            !c.datagrams
                .iter()
                .any(|d| d.payload.windows(probe.len()).any(|w| w == probe)),
            "sample bytes in clear"
        );
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// The decrypted view under the most robust protection (RTPS messages, submessages and
/// payloads all encrypted; a governance signed by perftest's test CA at run time): the
/// publisher's and the subscriber's captures each hold the samples only in the frames
/// marked as decrypted views, where the payloads are decoded too (the writer's own
/// protected form on the sending side, the remote writer's on the receiving side), never in
/// the protected frames; tshark decodes every frame of both.
#[test]
fn the_decrypted_view_decodes_protected_payloads_on_both_sides() {
    const DOMAIN: u32 = 103;
    const MARKER: &[u8] = b"FERRODDS-PAYLOAD-VIEW-MARKER";
    with_timeout(90, || {
        let dir =
            std::env::temp_dir().join(format!("ferrodds-payload-view-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let gov = signed_test_governance(&dir, "ENCRYPT", "ENCRYPT", "ENCRYPT");
        let gov = gov.to_str().unwrap();
        let (pub_path, sub_path) = (dir.join("pub.pcapng"), dir.join("sub.pcapng"));
        let participant = |role: &str, path: &std::path::Path| {
            DomainParticipant::with_config(
                DOMAIN,
                loopback_config()
                    .security(perftest_security(role, gov))
                    .capture(Some(CaptureConfig::file(path).decrypted_view(true))),
            )
            .expect("secure participant")
        };
        let a = participant("pub", &pub_path);
        let b = participant("sub", &sub_path);
        let (w, r) = endpoints_of::<TestData>(&a, &b, "Throughput", true);
        for i in 0..20u32 {
            let mut d = test_data(i);
            d.bin_data = MARKER.to_vec();
            w.write(&d).unwrap();
        }
        w.wait_for_acknowledgments(WAIT).unwrap();
        assert_eq!(take_seq_nums(&r, 20), (0..20).collect::<Vec<_>>());
        for s in [a.engine_stats(), b.engine_stats()] {
            assert_eq!(s.protection_failures, 0, "{s:?}");
        }
        for (p, path, dir) in [
            (&a, &pub_path, Direction::Outbound),
            (&b, &sub_path, Direction::Inbound),
        ] {
            let st = p.stop_capture().expect("a capture ran");
            assert_eq!(st.frames_dropped, 0, "{st:?}");
            let c = read_udp_payloads(path).unwrap();
            assert!(c.skipped.is_empty(), "{:?}", c.skipped);
            let has = |m: &[u8]| m.windows(MARKER.len()).any(|w| w == MARKER);
            let mut marked = 0;
            for d in &c.datagrams {
                if d.comment.as_deref() == Some(CAPTURE_DECRYPTED_COMMENT) {
                    if has(&d.payload) {
                        assert_eq!(d.direction, Some(dir), "frame {}", d.frame);
                        marked += 1;
                    }
                } else {
                    assert!(
                        !has(&d.payload),
                        "frame {} carries a sample in clear",
                        d.frame
                    );
                }
            }
            // Each sample in clear in a decrypted view at least once (repairs may add more).
            assert!(
                marked >= 1,
                "{}: no decoded payload in the view",
                path.display()
            );
            let samples: usize = c
                .datagrams
                .iter()
                .filter(|d| d.comment.as_deref() == Some(CAPTURE_DECRYPTED_COMMENT))
                .map(|d| {
                    d.payload
                        .windows(MARKER.len())
                        .filter(|w| *w == MARKER)
                        .count()
                })
                .sum();
            assert!(
                samples >= 20,
                "{}: {samples} samples in the view",
                path.display()
            );
            assert_tshark_clean(path);
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// Discovery protection (`enable_discovery_protection` TRUE, `discovery_protection_kind`
/// ENCRYPT, RTPS messages only signed; a governance signed by perftest's test CA at run
/// time): the endpoints are announced over the secure SEDP endpoints, whose submessages are
/// encrypted, so the topic name is nowhere in clear although the messages are only signed;
/// the endpoints match and deliver.
#[test]
fn discovery_protection_hides_the_endpoints_announcements() {
    const DOMAIN: u32 = 121;
    const TOPIC: &str = "FerroddsSecretTopicName";
    with_timeout(60, || {
        let dir = std::env::temp_dir().join(format!("ferrodds-disc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let gov = signed_test_governance_discovery(&dir, "SIGN", "NONE", "NONE", Some("ENCRYPT"));
        let gov = gov.to_str().unwrap();
        let path = dir.join("pub.pcapng");
        let a = DomainParticipant::with_config(
            DOMAIN,
            loopback_config()
                .security(perftest_security("pub", gov))
                .capture(Some(CaptureConfig::file(&path))),
        )
        .expect("secure participant");
        let b = DomainParticipant::with_config(
            DOMAIN,
            loopback_config().security(perftest_security("sub", gov)),
        )
        .expect("secure participant");
        let (w, r) = endpoints_of::<TestData>(&a, &b, TOPIC, true);
        for i in 0..20u32 {
            w.write(&test_data(i)).unwrap();
        }
        w.wait_for_acknowledgments(WAIT).unwrap();
        let got = take_seq_nums(&r, 20);
        assert_eq!(got, (0..20).collect::<Vec<_>>());
        for s in [a.engine_stats(), b.engine_stats()] {
            assert_eq!(s.protection_failures, 0, "{s:?}");
        }
        let _ = a.stop_capture();
        let c = read_udp_payloads(&path).unwrap();
        assert!(
            !c.datagrams.iter().any(|d| d
                .payload
                .windows(TOPIC.len())
                .any(|w| w == TOPIC.as_bytes())),
            "the topic name is on the wire in clear"
        );
        // (Over the standard SEDP endpoints the topic name would be in clear: the messages
        // are only signed. The secure SEDP submessages, entity ids included, are encrypted.)
        assert!(
            c.datagrams
                .iter()
                .filter(|d| d.payload.get(20) == Some(&0x33))
                .any(|d| d.payload.windows(2).any(|w| w == [0x31, 0x01])),
            "no protected submessage"
        );
        assert_tshark_clean(&path);
        let _ = std::fs::remove_dir_all(&dir);
    });
}
