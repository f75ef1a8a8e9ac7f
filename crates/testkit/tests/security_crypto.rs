//! DDS Security step 2 in the simulated network: with the governance's
//! `rtps_protection_kind` SIGN or ENCRYPT, authenticated participants exchange participant
//! crypto tokens over the volatile-secure endpoints and protect every datagram after
//! authentication (except SPDP and stateless ones) as an SRTPS message; tampered, replayed
//! and unprotected datagrams are dropped and counted. Test PKI made at run time.

use std::time::Duration;

use ferrodds_rtps::{GuidPrefix, History, ReaderQos, Reliability, WriterQos};
use ferrodds_testkit::helpers::{alive, reader, value, writer};
use ferrodds_testkit::secure::TestSecurity;
use ferrodds_testkit::{LinkConfig, Network};

const DOMAIN: u32 = 7;
/// Plaintext marker carried by every sample.
const PATTERN: &[u8] = b"FERRODDS-PLAINTEXT-PATTERN";
const SRTPS_PREFIX: u8 = 0x33;

fn candidate(n: usize) -> GuidPrefix {
    Network::config_for(n, DOMAIN).guid_prefix
}

fn sample(i: u32) -> Vec<u8> {
    let mut p = vec![0, 1, 0, 0];
    p.extend_from_slice(&i.to_le_bytes());
    p.extend_from_slice(PATTERN);
    p
}

fn failures(net: &Network, i: usize) -> Vec<String> {
    net.nodes[i]
        .participant
        .authentication_failures()
        .map(|(_, reason)| reason.to_string())
        .collect()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Whether a datagram may go in clear: SPDP or stateless traffic (the writer entity id in
/// a datagram that is not an SRTPS message), or a volatile-secure one (INFO_DST then
/// SEC_PREFIX).
fn clear_allowed(d: &[u8]) -> bool {
    let spdp = [0x00, 0x01, 0x00, 0xc2];
    let stateless = [0x00, 0x02, 0x01, 0xc3];
    let srtps = d.get(20) == Some(&SRTPS_PREFIX);
    (!srtps && (contains(d, &spdp) || contains(d, &stateless)))
        || (d.len() > 36 && d[20] == 0x0e && d[36] == 0x31)
}

struct Pair {
    net: Network,
    a: usize,
    b: usize,
    w: ferrodds_rtps::WriterId,
    r: ferrodds_rtps::ReaderId,
}

/// Two participants with `rtps` protection, a reliable writer on `a` and reader on `b`,
/// run until matched.
fn pair(rtps: &str, seed: u64, loss: f64) -> Pair {
    pair_protecting(rtps, "NONE", seed, loss)
}

/// [`pair`] with the topic's `metadata_protection_kind` `metadata`.
fn pair_protecting(rtps: &str, metadata: &str, seed: u64, loss: f64) -> Pair {
    pair_with(rtps, metadata, "NONE", seed, loss)
}

/// [`pair`] with the topic's `metadata_protection_kind` `metadata` and
/// `data_protection_kind` `data`.
fn pair_with(rtps: &str, metadata: &str, data: &str, seed: u64, loss: f64) -> Pair {
    let mut net = Network::new(seed);
    net.record = true;
    net.link = LinkConfig::lossy(loss, 0.0, 0.0);
    let mut pki =
        TestSecurity::with_protection("CA", false, &["alice", "bob"], rtps, metadata, data)
            .unwrap();
    let mut add = |net: &mut Network, n: usize, cn: &str| {
        let now = net.now;
        let plugin = pki
            .plugin(cn, candidate(n), DOMAIN, n as u64 + 1, now)
            .unwrap();
        net.add_secure_participant(Network::config_for(n, DOMAIN), plugin)
            .unwrap()
    };
    let a = add(&mut net, 0, "alice");
    let b = add(&mut net, 1, "bob");
    let now = net.now;
    let w = net
        .p(a)
        .create_writer(
            writer(
                "Protected",
                WriterQos {
                    reliability: Reliability::RELIABLE,
                    history: History::KeepAll,
                    ..WriterQos::default()
                },
            ),
            now,
        )
        .unwrap();
    let r = net
        .p(b)
        .create_reader(
            reader(
                "Protected",
                ReaderQos {
                    reliability: Reliability::RELIABLE,
                    history: History::KeepAll,
                    ..ReaderQos::default()
                },
            ),
            now,
        )
        .unwrap();
    net.nodes[b].readers.push(r);
    let ok = net.run_until(Duration::from_secs(30), |n| {
        n.nodes[a].participant.matched_reader_count(w) == 1
            && n.nodes[b].participant.matched_writer_count(r) == 1
    });
    assert!(
        ok,
        "no match: {:?} {:?} {:?} {:?}",
        failures(&net, a),
        failures(&net, b),
        net.nodes[a].participant.stats(),
        net.nodes[b].participant.stats()
    );
    Pair { net, a, b, w, r }
}

/// Writes `n` samples and runs until all arrived (or `limit`).
fn exchange(p: &mut Pair, n: u32, limit: Duration) -> Vec<u32> {
    for i in 0..n {
        let now = p.net.now;
        p.net.p(p.a).write(p.w, alive(&sample(i)), now).unwrap();
        p.net.flush(p.a);
        p.net.run_for(Duration::from_millis(2));
    }
    let (b, r) = (p.b, p.r);
    p.net.run_until(limit, |net| {
        net.nodes[b].samples_of(r).filter_map(value).count() >= n as usize
    });
    p.net.nodes[b].samples_of(r).filter_map(value).collect()
}

/// Datagrams sent after both participants authenticated each other.
fn after_auth(p: &Pair) -> Vec<Vec<u8>> {
    // The protected traffic starts with the key exchange, right after authentication:
    // every datagram from then on that is not SPDP/stateless/volatile must be SRTPS.
    let first = p
        .net
        .log
        .iter()
        .position(|d| d.data.get(20) == Some(&SRTPS_PREFIX))
        .expect("no protected datagram at all");
    p.net.log[first..].iter().map(|d| d.data.clone()).collect()
}

#[test]
fn encrypt_hides_payload_and_protects_every_datagram() {
    let mut p = pair("ENCRYPT", 11, 0.0);
    // (Datagrams protected before the peer had our key — SEDP right after authentication
    // — were dropped and repaired; none after the key exchange.)
    let rejected: Vec<u64> = [p.a, p.b]
        .iter()
        .map(|&i| {
            p.net.nodes[i]
                .participant
                .stats()
                .rejected_protected_datagrams
        })
        .collect();
    let got = exchange(&mut p, 100, Duration::from_secs(10));
    assert_eq!(got, (0..100).collect::<Vec<_>>());
    let log = &p.net.log;
    assert!(log.len() > 100);
    for d in log {
        assert!(!contains(&d.data, PATTERN), "plaintext payload on the wire");
    }
    // The key exchange ran on the volatile-secure endpoints, its submessages protected
    // (the tokens' class never in clear).
    let volatile = log
        .iter()
        .filter(|d| d.data.len() > 36 && d.data[20] == 0x0e && d.data[36] == 0x31)
        .count();
    // Without loss: each side's offer and answer, and the offers stop once answered.
    assert!(
        (2..=6).contains(&volatile),
        "{volatile} volatile-secure datagrams"
    );
    assert!(!log
        .iter()
        .any(|d| contains(&d.data, b"dds.sec.participant_crypto_tokens")));
    let mut protected = 0;
    for d in after_auth(&p) {
        if d.get(20) == Some(&SRTPS_PREFIX) {
            protected += 1;
        } else {
            assert!(
                clear_allowed(&d),
                "unprotected datagram: {:02x?}",
                &d[..d.len().min(64)]
            );
        }
    }
    assert!(protected >= 100, "only {protected} protected datagrams");
    let sa = p.net.nodes[p.a].participant.stats();
    let sb = p.net.nodes[p.b].participant.stats();
    assert!(sa.protected_datagrams_sent >= 100, "{sa:?}");
    assert!(sb.protected_datagrams_received >= 100, "{sb:?}");
    for (k, i) in [p.a, p.b].into_iter().enumerate() {
        let s = p.net.nodes[i].participant.stats();
        assert_eq!(s.rejected_protected_datagrams, rejected[k], "{s:?}");
        assert_eq!(s.unprotected_submessages_dropped, 0, "{s:?}");
        assert_eq!(s.protection_failures, 0, "{s:?}");
    }
}

#[test]
fn sign_shows_payload_and_drops_tampered_and_replayed_datagrams() {
    let mut p = pair("SIGN", 12, 0.0);
    let got = exchange(&mut p, 100, Duration::from_secs(10));
    assert_eq!(got, (0..100).collect::<Vec<_>>());
    // Signed: the payload is visible, inside protected datagrams.
    let with_pattern: Vec<Vec<u8>> = p
        .net
        .log
        .iter()
        .filter(|d| contains(&d.data, PATTERN))
        .map(|d| d.data.clone())
        .collect();
    assert!(with_pattern.len() >= 100);
    assert!(with_pattern.iter().all(|d| d[20] == SRTPS_PREFIX));
    for d in after_auth(&p) {
        assert!(d[20] == SRTPS_PREFIX || clear_allowed(&d));
    }
    // (Samples of 34 bytes: GMAC needs 4-multiple submessages, the emitter pads.)
    for i in [p.a, p.b] {
        assert_eq!(p.net.nodes[i].participant.stats().protection_failures, 0);
    }
    let b = p.b;
    let before = p.net.nodes[b]
        .participant
        .stats()
        .rejected_protected_datagrams;
    let n_before = p.net.nodes[b].samples_of(p.r).count();
    // A new sample, captured, then tampered / replayed.
    p.net.log.clear();
    let now = p.net.now;
    p.net.p(p.a).write(p.w, alive(&sample(1000)), now).unwrap();
    p.net.flush(p.a);
    p.net.run_for(Duration::from_millis(200));
    let original = p
        .net
        .log
        .iter()
        .find(|d| contains(&d.data, PATTERN))
        .expect("sample 1000 not sent")
        .data
        .clone();
    assert_eq!(p.net.nodes[b].samples_of(p.r).count(), n_before + 1);
    let at = original
        .windows(PATTERN.len())
        .position(|w| w == PATTERN)
        .unwrap();
    let mut tampered = original.clone();
    tampered[at] ^= 0x01;
    let now = p.net.now;
    p.net.p(b).handle_datagram(now, None, &tampered);
    let s = p.net.nodes[b].participant.stats();
    assert_eq!(
        s.rejected_protected_datagrams,
        before + 1,
        "tampered accepted"
    );
    // Replay of the original.
    p.net.p(b).handle_datagram(now, None, &original);
    let s = p.net.nodes[b].participant.stats();
    assert_eq!(
        s.rejected_protected_datagrams,
        before + 2,
        "replay accepted"
    );
    // Unprotected user traffic from the authenticated writer is dropped: strip the
    // protection (SIGN keeps the submessages in clear after the INFO_SRC copy).
    let unprotected_before = s.unprotected_submessages_dropped;
    let mut clear = original[..20].to_vec();
    // SRTPS_PREFIX (4 + 20), INFO_SRC (24), then the submessages up to SRTPS_POSTFIX.
    let body = &original[20 + 24 + 24..];
    let postfix = body.len() - 24;
    clear.extend_from_slice(&body[..postfix]);
    p.net.p(b).handle_datagram(now, None, &clear);
    p.net.run_for(Duration::from_millis(100));
    let s = p.net.nodes[b].participant.stats();
    assert!(s.unprotected_submessages_dropped > unprotected_before);
    assert_eq!(p.net.nodes[b].samples_of(p.r).count(), n_before + 1);
}

#[test]
fn key_exchange_completes_with_30_percent_loss() {
    let mut p = pair("ENCRYPT", 13, 0.3);
    let got = exchange(&mut p, 100, Duration::from_secs(30));
    assert_eq!(got, (0..100).collect::<Vec<_>>());
    assert!(p.net.counters.2 > 0, "nothing was lost");
    for d in &p.net.log {
        assert!(!contains(&d.data, PATTERN));
    }
}

/// Submessage encryption under RTPS signing (perftest's SignEncryptSubmessage profile) with
/// 30 % loss: the endpoint crypto tokens are resent until acknowledged, every sample
/// arrives, and no sample byte is ever on the wire in clear (signing alone would show it).
#[test]
fn submessage_encryption_delivers_with_30_percent_loss() {
    let mut p = pair_protecting("SIGN", "ENCRYPT", 14, 0.3);
    let got = exchange(&mut p, 100, Duration::from_secs(30));
    assert_eq!(got, (0..100).collect::<Vec<_>>());
    assert!(p.net.counters.2 > 0, "nothing was lost");
    for d in &p.net.log {
        assert!(!contains(&d.data, PATTERN), "a sample in clear");
        assert!(!contains(&d.data, b"dds.sec.datawriter_crypto_tokens"));
    }
    for i in [p.a, p.b] {
        let s = p.net.nodes[i].participant.stats();
        assert_eq!(s.protection_failures, 0, "{s:?}");
    }
}

/// Without loss, each side sends its endpoint's crypto tokens once and they are acknowledged
/// (no resend), and the protected submessages decode (none rejected after the exchange).
#[test]
fn endpoint_tokens_are_sent_once_without_loss() {
    let mut p = pair_protecting("SIGN", "SIGN", 15, 0.0);
    let got = exchange(&mut p, 50, Duration::from_secs(10));
    assert_eq!(got, (0..50).collect::<Vec<_>>());
    // Signed submessages: the samples are visible, each DATA inside SEC_PREFIX/SEC_POSTFIX.
    let with_pattern: Vec<&Vec<u8>> = p
        .net
        .log
        .iter()
        .filter(|d| contains(&d.data, PATTERN))
        .map(|d| &d.data)
        .collect();
    assert!(with_pattern.len() >= 50);
    assert!(with_pattern
        .iter()
        .all(|d| d[20] == SRTPS_PREFIX && d.contains(&0x31)));
    for i in [p.a, p.b] {
        let s = p.net.nodes[i].participant.stats();
        assert_eq!(s.protection_failures, 0, "{s:?}");
        assert_eq!(s.handshake_resends, 0, "{s:?}");
    }
}

/// Payload encryption under RTPS signing: the messages are only signed, yet no sample byte
/// is on the wire in clear (each payload is encrypted with the writer's key material, sent
/// as its datawriter crypto token), with 30 % loss.
#[test]
fn payload_encryption_hides_samples_under_signed_messages() {
    let mut p = pair_with("SIGN", "NONE", "ENCRYPT", 16, 0.3);
    let got = exchange(&mut p, 100, Duration::from_secs(30));
    assert_eq!(got, (0..100).collect::<Vec<_>>());
    assert!(p.net.counters.2 > 0, "nothing was lost");
    for d in &p.net.log {
        assert!(!contains(&d.data, PATTERN), "a sample in clear");
    }
    for i in [p.a, p.b] {
        let s = p.net.nodes[i].participant.stats();
        assert_eq!(s.protection_failures, 0, "{s:?}");
    }
}

/// Payload signing: the samples are visible (GMAC) but a payload altered in a datagram is
/// refused; and the most robust combination without origin authentication (RTPS signing,
/// submessage encryption, payload encryption) delivers.
#[test]
fn payload_signing_and_submessage_plus_payload_encryption() {
    let mut p = pair_with("SIGN", "NONE", "SIGN", 17, 0.0);
    let got = exchange(&mut p, 20, Duration::from_secs(10));
    assert_eq!(got, (0..20).collect::<Vec<_>>());
    assert!(p.net.log.iter().any(|d| contains(&d.data, PATTERN)));
    let mut p = pair_with("SIGN", "ENCRYPT", "ENCRYPT", 18, 0.1);
    let got = exchange(&mut p, 50, Duration::from_secs(20));
    assert_eq!(got, (0..50).collect::<Vec<_>>());
    for d in &p.net.log {
        assert!(!contains(&d.data, PATTERN), "a sample in clear");
    }
}

/// The two published profiles with origin authentication: RTPS messages signed with a
/// receiver-specific MAC per receiving participant (rtps_sign_origauth_data_encrypt), and
/// submessages encrypted with a MAC per receiving endpoint (the most robust profile); both
/// with payload encryption and 10 % loss. Every protected message or submessage of a user
/// endpoint carries a MAC list (a non-zero count in its postfix).
#[test]
fn origin_authentication_profiles_deliver() {
    for (rtps, metadata, seed) in [
        ("SIGN_WITH_ORIGIN_AUTHENTICATION", "NONE", 19),
        ("SIGN", "ENCRYPT_WITH_ORIGIN_AUTHENTICATION", 20),
    ] {
        let mut p = pair_with(rtps, metadata, "ENCRYPT", seed, 0.1);
        let got = exchange(&mut p, 50, Duration::from_secs(20));
        assert_eq!(got, (0..50).collect::<Vec<_>>(), "{rtps} {metadata}");
        for d in &p.net.log {
            assert!(!contains(&d.data, PATTERN), "a sample in clear");
        }
        for i in [p.a, p.b] {
            let s = p.net.nodes[i].participant.stats();
            assert_eq!(s.protection_failures, 0, "{rtps} {metadata}: {s:?}");
        }
        // A postfix (SRTPS_POSTFIX 0x34 or SEC_POSTFIX 0x32) with one receiver MAC: its
        // length is 16 (common MAC) + 4 (count) + 20.
        let postfix = if metadata == "NONE" { 0x34 } else { 0x32 };
        let with_mac = p
            .net
            .log
            .iter()
            .filter(|d| {
                d.data
                    .windows(4)
                    .any(|w| w[0] == postfix && w[1] & 1 == 1 && w[2] == 40 && w[3] == 0)
            })
            .count();
        assert!(
            with_mac >= 50,
            "{rtps} {metadata}: {with_mac} postfixes with a MAC"
        );
    }
}
