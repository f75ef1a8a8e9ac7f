//! DDS Security step 1 in the simulated network: secure participants authenticate each
//! other (PKI-DH handshake on the stateless topic, permissions validated) before any endpoint
//! discovery, and then exchange user data; identities from another CA never match;
//! unauthenticated participants are ignored when the governance says so; the handshake
//! survives datagram loss (resends). Test PKI made at run time (`ferrodds_testkit::secure`).

use std::time::Duration;

use ferrodds_rtps::{Event, GuidPrefix, ReaderQos, Reliability, WriterQos};
use ferrodds_security::auth::pki::{generate_ca, issue_identity};
use ferrodds_security::auth::IdentityAlgo;
use ferrodds_testkit::helpers::{alive, payload, reader, value, writer};
use ferrodds_testkit::secure::{TestSecurity, VALID_FROM, VALID_TO};
use ferrodds_testkit::{LinkConfig, Network};

const DOMAIN: u32 = 7;

fn candidate(n: usize) -> GuidPrefix {
    Network::config_for(n, DOMAIN).guid_prefix
}

/// Adds secure participant `n` named `cn` with an identity of `pki`.
fn add_secure(net: &mut Network, pki: &mut TestSecurity, n: usize, cn: &str) -> usize {
    let now = net.now;
    let plugin = pki
        .plugin(cn, candidate(n), DOMAIN, n as u64 + 1, now)
        .unwrap();
    net.add_secure_participant(Network::config_for(n, DOMAIN), plugin)
        .unwrap()
}

fn authenticated(net: &Network, i: usize) -> usize {
    net.nodes[i].participant.authenticated_participants().len()
}

fn failures(net: &Network, i: usize) -> Vec<String> {
    net.nodes[i]
        .participant
        .authentication_failures()
        .map(|(_, reason)| reason.to_string())
        .collect()
}

/// Two secure participants, a writer on `a` and a reader on `b`; runs until both
/// authenticated each other.
fn secure_pair(net: &mut Network) -> (usize, usize) {
    let mut pki = TestSecurity::new("CA", false, &["alice", "bob"]).unwrap();
    let a = add_secure(net, &mut pki, 0, "alice");
    let b = add_secure(net, &mut pki, 1, "bob");
    (a, b)
}

#[test]
fn secure_participants_authenticate_then_exchange_data() {
    let mut net = Network::new(1);
    let (a, b) = secure_pair(&mut net);
    let (pa, pb) = (net.p(a).guid_prefix(), net.p(b).guid_prefix());
    // Adjusted GUID prefixes: top bit set, not the candidates.
    assert_ne!(pa, candidate(0));
    assert_eq!(pa.0[0] & 0x80, 0x80);
    assert_eq!(pb.0[0] & 0x80, 0x80);
    let now = net.now;
    let w = net
        .p(a)
        .create_writer(
            writer(
                "Secure",
                WriterQos {
                    reliability: Reliability::RELIABLE,
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
                "Secure",
                ReaderQos {
                    reliability: Reliability::RELIABLE,
                    ..ReaderQos::default()
                },
            ),
            now,
        )
        .unwrap();
    net.nodes[b].readers.push(r);
    let ok = net.run_until(Duration::from_secs(5), |n| {
        n.nodes[a].participant.matched_reader_count(w) == 1
            && n.nodes[b].participant.matched_writer_count(r) == 1
    });
    assert!(
        ok,
        "no match: {:?} {:?}",
        failures(&net, a),
        failures(&net, b)
    );
    assert_eq!(authenticated(&net, a), 1);
    assert_eq!(authenticated(&net, b), 1);
    for i in [a, b] {
        let n = &net.nodes[i];
        assert_eq!(
            n.count_events(|e| matches!(e, Event::ParticipantAuthenticated { .. })),
            1
        );
        // Endpoint discovery only after authentication.
        let auth_at = n
            .events
            .iter()
            .position(|e| matches!(e, Event::ParticipantAuthenticated { .. }))
            .unwrap();
        let matched_at = n
            .events
            .iter()
            .position(|e| {
                matches!(
                    e,
                    Event::PublicationMatched { .. } | Event::SubscriptionMatched { .. }
                )
            })
            .unwrap();
        assert!(auth_at < matched_at);
        let s = n.participant.stats();
        assert_eq!(s.authentication_failures, 0, "{:?}", failures(&net, i));
        assert_eq!(s.access_denied_participants, 0);
        assert_eq!(s.authenticated_participants, 1);
    }
    for i in 0..10u32 {
        let now = net.now;
        net.p(a).write(w, alive(&payload(i)), now).unwrap();
        net.flush(a);
        net.run_for(Duration::from_millis(10));
    }
    net.run_for(Duration::from_millis(500));
    let got: Vec<u32> = net.nodes[b].samples_of(r).filter_map(value).collect();
    assert_eq!(got, (0..10).collect::<Vec<_>>());
}

#[test]
fn handshake_completes_with_30_percent_loss() {
    let mut net = Network::new(3);
    net.link = LinkConfig::lossy(0.3, 0.0, 0.0);
    let (a, b) = secure_pair(&mut net);
    let ok = net.run_until(Duration::from_secs(25), |n| {
        authenticated(n, a) == 1 && authenticated(n, b) == 1
    });
    assert!(
        ok,
        "no authentication: {:?} {:?}",
        failures(&net, a),
        failures(&net, b)
    );
    assert!(net.counters.2 > 0, "nothing was lost");
    let resends: u64 = [a, b]
        .iter()
        .map(|&i| net.nodes[i].participant.stats().handshake_resends)
        .sum();
    assert!(resends > 0, "no handshake message was resent");
    for i in [a, b] {
        assert_eq!(
            net.nodes[i].participant.stats().authentication_failures,
            0,
            "{:?}",
            failures(&net, i)
        );
    }
}

#[test]
fn identity_from_another_ca_never_matches() {
    let mut net = Network::new(5);
    let mut pki = TestSecurity::new("CA", false, &["alice", "mallory"]).unwrap();
    let a = add_secure(&mut net, &mut pki, 0, "alice");
    // Mallory's identity is signed by a CA nobody trusts (same subject names, same
    // governance and permissions otherwise).
    let other = generate_ca("CA", IdentityAlgo::EcPrime256v1, VALID_FROM, VALID_TO).unwrap();
    let id = issue_identity(
        &other,
        "mallory",
        IdentityAlgo::EcPrime256v1,
        9,
        VALID_FROM,
        VALID_TO,
    )
    .unwrap();
    let now = net.now;
    let plugin = pki
        .plugin_for(id, &other, candidate(1), DOMAIN, 2, now)
        .unwrap();
    let m = net
        .add_secure_participant(Network::config_for(1, DOMAIN), plugin)
        .unwrap();
    let now = net.now;
    let w = net
        .p(a)
        .create_writer(writer("T", WriterQos::default()), now)
        .unwrap();
    let r = net
        .p(m)
        .create_reader(reader("T", ReaderQos::default()), now)
        .unwrap();
    net.run_for(Duration::from_secs(40));
    assert_eq!(net.nodes[a].participant.matched_reader_count(w), 0);
    assert_eq!(net.nodes[m].participant.matched_writer_count(r), 0);
    assert_eq!(authenticated(&net, a), 0);
    assert_eq!(authenticated(&net, m), 0);
    // Both discovered each other (SPDP is in clear) but refused to go further.
    assert_eq!(net.nodes[a].participant.discovered_participants().len(), 1);
    let fa = net.nodes[a].participant.stats().authentication_failures;
    let fm = net.nodes[m].participant.stats().authentication_failures;
    assert!(fa >= 1 && fm >= 1, "failures {fa} {fm}");
    let reasons: Vec<String> = failures(&net, a)
        .into_iter()
        .chain(failures(&net, m))
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains("certificate")),
        "{reasons:?}"
    );
    // (The side receiving the Request rejects the certificate; the initiator's handshake
    // times out.)
    assert!(
        reasons.iter().any(|r| r.contains("not completed")),
        "{reasons:?}"
    );
}

/// A participant without security next to a secure one.
fn with_plain_peer(allow_unauthenticated: bool) -> (Network, usize, usize) {
    let mut net = Network::new(7);
    let mut pki = TestSecurity::new("CA", allow_unauthenticated, &["alice"]).unwrap();
    let a = add_secure(&mut net, &mut pki, 0, "alice");
    let p = net.add_participant_with(Network::config_for(1, DOMAIN));
    (net, a, p)
}

#[test]
fn unauthenticated_participant_ignored_when_governance_forbids() {
    let (mut net, a, p) = with_plain_peer(false);
    let now = net.now;
    let w = net
        .p(a)
        .create_writer(writer("T", WriterQos::default()), now)
        .unwrap();
    let r = net
        .p(p)
        .create_reader(reader("T", ReaderQos::default()), now)
        .unwrap();
    net.run_for(Duration::from_secs(5));
    assert!(net.nodes[a]
        .participant
        .discovered_participants()
        .is_empty());
    assert!(
        net.nodes[a]
            .participant
            .stats()
            .unauthenticated_participants_ignored
            >= 1
    );
    assert_eq!(net.nodes[a].participant.matched_reader_count(w), 0);
    assert_eq!(net.nodes[p].participant.matched_writer_count(r), 0);
}

#[test]
fn unauthenticated_participant_matched_when_governance_allows() {
    let (mut net, a, p) = with_plain_peer(true);
    let now = net.now;
    let w = net
        .p(a)
        .create_writer(writer("T", WriterQos::default()), now)
        .unwrap();
    let r = net
        .p(p)
        .create_reader(reader("T", ReaderQos::default()), now)
        .unwrap();
    let ok = net.run_until(Duration::from_secs(5), |n| {
        n.nodes[a].participant.matched_reader_count(w) == 1
            && n.nodes[p].participant.matched_writer_count(r) == 1
    });
    assert!(ok);
    assert_eq!(
        net.nodes[a]
            .participant
            .stats()
            .unauthenticated_participants_ignored,
        0
    );
    assert_eq!(authenticated(&net, a), 0);
}

#[test]
fn handshake_messages_larger_than_a_datagram_go_as_fragments() {
    let mut net = Network::new(11);
    net.record = true;
    let mut pki = TestSecurity::new("CA", false, &["alice", "bob"]).unwrap();
    let mut nodes = Vec::new();
    for (n, cn) in [(0, "alice"), (1, "bob")] {
        let now = net.now;
        let plugin = pki
            .plugin(cn, candidate(n), DOMAIN, n as u64 + 1, now)
            .unwrap();
        let mut cfg = Network::config_for(n, DOMAIN);
        cfg.max_message_size = 1200;
        nodes.push(net.add_secure_participant(cfg, plugin).unwrap());
    }
    let (a, b) = (nodes[0], nodes[1]);
    let ok = net.run_until(Duration::from_secs(5), |n| {
        authenticated(n, a) == 1 && authenticated(n, b) == 1
    });
    assert!(
        ok,
        "no authentication: {:?} {:?}",
        failures(&net, a),
        failures(&net, b)
    );
    assert!(net.recorded().iter().all(|d| d.data.len() <= 1200));
    // DATA_FRAG (0x16) from the stateless writer 0x000201c3.
    let frags = net
        .recorded()
        .iter()
        .filter(|d| {
            d.data
                .windows(16)
                .any(|w| w[0] == 0x16 && w[12..16] == [0x00, 0x02, 0x01, 0xc3])
        })
        .count();
    assert!(frags >= 4, "{frags} stateless DATA_FRAG datagrams");
}

/// Five participants allowing 2 pending handshakes each (so one they initiate at a time):
/// every pair authenticates (queued handshakes start as slots free; waiting for a
/// Request holds no slot, so nobody deadlocks).
#[test]
fn bounded_pending_handshakes_all_complete() {
    use ferrodds_security::auth::AuthOptions;
    let mut net = Network::new(13);
    let names = ["p0", "p1", "p2", "p3", "p4"];
    let mut pki = TestSecurity::new("CA", false, &names).unwrap();
    let mut nodes = Vec::new();
    for (n, cn) in names.iter().enumerate() {
        let now = net.now;
        let plugin = pki
            .plugin(cn, candidate(n), DOMAIN, n as u64 + 1, now)
            .unwrap();
        let plugin = Box::new((*plugin).with_options(AuthOptions {
            max_pending: 2,
            ..AuthOptions::default()
        }));
        nodes.push(
            net.add_secure_participant(Network::config_for(n, DOMAIN), plugin)
                .unwrap(),
        );
    }
    let ok = net.run_until(Duration::from_secs(20), |n| {
        nodes
            .iter()
            .all(|&i| authenticated(n, i) == names.len() - 1)
    });
    let counts: Vec<usize> = nodes.iter().map(|&i| authenticated(&net, i)).collect();
    assert!(ok, "authenticated per node: {counts:?}");
    // The only failures: Requests refused while the table was full (retried on resend).
    let mut refused = 0;
    for &i in &nodes {
        for r in failures(&net, i) {
            assert!(r.contains("too many pending handshakes"), "{r}");
            refused += 1;
        }
    }
    println!("Requests refused for lack of room (then resent and accepted): {refused}");
}

/// Identities from the common identity CA, but the remote's permissions are signed by
/// another permissions CA: the handshake completes, the permissions are refused
/// (access control), and nothing matches.
#[test]
fn permissions_from_another_permissions_ca_are_refused() {
    let mut net = Network::new(17);
    let mut pki = TestSecurity::new("CA", false, &["alice", "bob"]).unwrap();
    let a = add_secure(&mut net, &mut pki, 0, "alice");
    // Bob: identity from the same CA, governance and permissions signed by CA2.
    let pki2 = TestSecurity::new("CA2", false, &["alice", "bob"]).unwrap();
    let id = issue_identity(
        &pki.ca,
        "bob",
        IdentityAlgo::EcPrime256v1,
        77,
        VALID_FROM,
        VALID_TO,
    )
    .unwrap();
    let now = net.now;
    let plugin = pki2
        .plugin_for(id, &pki.ca, candidate(1), DOMAIN, 2, now)
        .unwrap();
    let b = net
        .add_secure_participant(Network::config_for(1, DOMAIN), plugin)
        .unwrap();
    let now = net.now;
    let w = net
        .p(a)
        .create_writer(writer("T", WriterQos::default()), now)
        .unwrap();
    let r = net
        .p(b)
        .create_reader(reader("T", ReaderQos::default()), now)
        .unwrap();
    net.run_for(Duration::from_secs(5));
    assert_eq!(net.nodes[a].participant.matched_reader_count(w), 0);
    assert_eq!(net.nodes[b].participant.matched_writer_count(r), 0);
    assert_eq!(authenticated(&net, a), 0);
    assert_eq!(authenticated(&net, b), 0);
    // The side that completes the handshake first refuses the other's permissions.
    let denied = net.nodes[a].participant.stats().access_denied_participants
        + net.nodes[b].participant.stats().access_denied_participants;
    assert!(
        denied >= 1,
        "{:?} {:?}",
        failures(&net, a),
        failures(&net, b)
    );
    let reasons: Vec<String> = failures(&net, a)
        .into_iter()
        .chain(failures(&net, b))
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains("permissions of")),
        "{reasons:?}"
    );
}

/// A governance with read and write access control on every topic, payload encryption on
/// `Confidential*`, and permissions where alice publishes `Open` and `Secret`, bob
/// subscribes to `Open` only.
fn access_controlled_pki() -> TestSecurity {
    let governance = r#"<?xml version="1.0" encoding="UTF-8"?>
<dds>
  <domain_access_rules>
    <domain_rule>
      <domains><id_range><min>0</min><max>230</max></id_range></domains>
      <allow_unauthenticated_participants>FALSE</allow_unauthenticated_participants>
      <enable_join_access_control>TRUE</enable_join_access_control>
      <discovery_protection_kind>NONE</discovery_protection_kind>
      <liveliness_protection_kind>NONE</liveliness_protection_kind>
      <rtps_protection_kind>NONE</rtps_protection_kind>
      <topic_access_rules>
        <topic_rule>
          <topic_expression>Confidential*</topic_expression>
          <enable_discovery_protection>FALSE</enable_discovery_protection>
          <enable_liveliness_protection>FALSE</enable_liveliness_protection>
          <enable_read_access_control>FALSE</enable_read_access_control>
          <enable_write_access_control>FALSE</enable_write_access_control>
          <metadata_protection_kind>NONE</metadata_protection_kind>
          <data_protection_kind>ENCRYPT</data_protection_kind>
        </topic_rule>
        <topic_rule>
          <topic_expression>*</topic_expression>
          <enable_discovery_protection>FALSE</enable_discovery_protection>
          <enable_liveliness_protection>FALSE</enable_liveliness_protection>
          <enable_read_access_control>TRUE</enable_read_access_control>
          <enable_write_access_control>TRUE</enable_write_access_control>
          <metadata_protection_kind>NONE</metadata_protection_kind>
          <data_protection_kind>NONE</data_protection_kind>
        </topic_rule>
      </topic_access_rules>
    </domain_rule>
  </domain_access_rules>
</dds>
"#;
    let grant = |cn: &str, publish: &str, subscribe: &str| {
        format!(
            r#"    <grant name="{cn}">
      <subject_name>CN={cn},O=FerroDDS test PKI,C=NL</subject_name>
      <validity><not_before>2025-01-01T00:00:00</not_before><not_after>2099-01-01T00:00:00</not_after></validity>
      <allow_rule>
        <domains><id_range><min>0</min><max>230</max></id_range></domains>
        <publish><topics>{publish}</topics></publish>
        <subscribe><topics>{subscribe}</topics></subscribe>
      </allow_rule>
      <default>DENY</default>
    </grant>
"#
        )
    };
    let permissions = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<dds>\n  <permissions>\n{}{}  </permissions>\n</dds>\n",
        grant("alice", "<topic>Open</topic><topic>Secret</topic>", "<topic>Open</topic>"),
        grant("bob", "<topic>Open</topic>", "<topic>Open</topic>"),
    );
    TestSecurity::from_documents("CA", governance, &permissions).unwrap()
}

#[test]
fn endpoints_follow_the_topic_rules_and_the_remote_permissions() {
    let mut net = Network::new(3);
    let mut pki = access_controlled_pki();
    let a = add_secure(&mut net, &mut pki, 0, "alice");
    let b = add_secure(&mut net, &mut pki, 1, "bob");
    let now = net.now;
    let reliable_writer = |topic: &str| {
        writer(
            topic,
            WriterQos {
                reliability: Reliability::RELIABLE,
                ..WriterQos::default()
            },
        )
    };
    let reliable_reader = |topic: &str| {
        reader(
            topic,
            ReaderQos {
                reliability: Reliability::RELIABLE,
                ..ReaderQos::default()
            },
        )
    };
    // Local checks: bob may not subscribe to Secret, nobody may use Confidential (payload
    // protection is not implemented: refused, never sent in clear).
    let e = net
        .p(b)
        .check_local_endpoint("Secret", &[], false, now)
        .unwrap_err();
    assert!(
        e.reason.contains("Secret") && e.reason.contains("bob"),
        "{e}"
    );
    let e = net
        .p(a)
        .check_local_endpoint("ConfidentialData", &[], true, now)
        .unwrap_err();
    assert!(
        e.reason.contains("data_protection_kind") && e.reason.contains("ConfidentialData"),
        "{e}"
    );
    net.p(a)
        .check_local_endpoint("Open", &[], true, now)
        .unwrap();
    net.p(a)
        .check_local_endpoint("Secret", &[], true, now)
        .unwrap();
    // Bob's engine is driven without its own check (as a participant that ignores its
    // permissions would be): alice's writer must still refuse his Secret reader.
    let w_open = net
        .p(a)
        .create_writer(reliable_writer("Open"), now)
        .unwrap();
    let w_secret = net
        .p(a)
        .create_writer(reliable_writer("Secret"), now)
        .unwrap();
    let r_open = net
        .p(b)
        .create_reader(reliable_reader("Open"), now)
        .unwrap();
    let r_secret = net
        .p(b)
        .create_reader(reliable_reader("Secret"), now)
        .unwrap();
    let ok = net.run_until(Duration::from_secs(5), |n| {
        n.nodes[a].participant.matched_reader_count(w_open) == 1
            && n.nodes[b].participant.matched_writer_count(r_open) == 1
    });
    assert!(ok, "Open did not match: {:?}", failures(&net, a));
    net.run_for(Duration::from_secs(2));
    assert_eq!(net.nodes[a].participant.matched_reader_count(w_secret), 0);
    assert!(net.nodes[a].participant.stats().access_denied_endpoints >= 1);
    // Bob's reader sees alice's Secret writer (alice may publish it): matching is each
    // side's own decision.
    assert_eq!(net.nodes[b].participant.matched_writer_count(r_secret), 1);
}
