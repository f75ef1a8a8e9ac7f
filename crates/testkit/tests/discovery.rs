//! Discovery: SPDP + SEDP between 2 and 3 simulated participants, QoS
//! incompatibility, lease expiry, endpoint deletion.

use std::time::Duration;

use ferrodds_rtps::{Event, QosPolicyId, ReaderQos, Reliability, WriterQos};
use ferrodds_testkit::helpers::{reader, writer};
use ferrodds_testkit::{LinkConfig, Network};

fn matched_pubs(n: &Network, i: usize) -> usize {
    n.nodes[i].count_events(|e| matches!(e, Event::PublicationMatched { .. }))
}

fn matched_subs(n: &Network, i: usize) -> usize {
    n.nodes[i].count_events(|e| matches!(e, Event::SubscriptionMatched { .. }))
}

#[test]
fn two_participants_match_writer_and_reader() {
    let mut net = Network::new(11);
    let a = net.add_participant(0);
    let b = net.add_participant(0);
    let now = net.now;
    let w = net
        .p(a)
        .create_writer(writer("Square", WriterQos::default()), now)
        .unwrap();
    let r = net
        .p(b)
        .create_reader(reader("Square", ReaderQos::default()), now)
        .unwrap();
    let ok = net.run_until(Duration::from_secs(2), |n| {
        matched_pubs(n, a) == 1 && matched_subs(n, b) == 1
    });
    assert!(
        ok,
        "events a={:?} b={:?}",
        net.nodes[a].events, net.nodes[b].events
    );
    assert_eq!(net.p(a).matched_reader_count(w), 1);
    assert_eq!(net.p(b).matched_writer_count(r), 1);
    let rg = net.p(b).reader_guid(r).unwrap();
    assert!(net.nodes[a].events.contains(&Event::PublicationMatched {
        writer: w,
        remote_reader: rg,
        current_count: 1
    }));
    assert!(net.nodes[a]
        .events
        .iter()
        .any(|e| matches!(e, Event::ParticipantDiscovered { prefix } if *prefix == net.nodes[b].participant.guid_prefix())));
    // Entity kinds follow `keyed`: unkeyed writer 0x03, unkeyed reader 0x04.
    assert_eq!(net.p(a).writer_guid(w).unwrap().entity_id.0[3], 0x03);
    assert_eq!(rg.entity_id.0[3], 0x04);
}

#[test]
fn three_participants_all_match_under_loss() {
    let mut net = Network::new(12);
    net.link = LinkConfig::lossy(0.2, 0.1, 0.1);
    let ids: Vec<usize> = (0..3).map(|_| net.add_participant(0)).collect();
    let now = net.now;
    for &i in &ids {
        net.p(i)
            .create_writer(writer("T", WriterQos::default()), now)
            .unwrap();
        net.p(i)
            .create_reader(reader("T", ReaderQos::default()), now)
            .unwrap();
    }
    // Each writer matches 3 readers (incl. its own participant's), each reader 3 writers.
    let ok = net.run_until(Duration::from_secs(30), |n| {
        ids.iter()
            .all(|&i| matched_pubs(n, i) == 3 && matched_subs(n, i) == 3)
    });
    assert!(
        ok,
        "{:?}",
        ids.iter()
            .map(|&i| (matched_pubs(&net, i), matched_subs(&net, i)))
            .collect::<Vec<_>>()
    );
    for &i in &ids {
        assert_eq!(net.nodes[i].participant.discovered_participants().len(), 2);
    }
}

#[test]
fn other_domain_is_ignored() {
    let mut net = Network::new(13);
    let a = net.add_participant(0);
    let b = net.add_participant(1);
    net.run_for(Duration::from_secs(4));
    assert!(net.nodes[a]
        .participant
        .discovered_participants()
        .is_empty());
    assert!(net.nodes[b]
        .participant
        .discovered_participants()
        .is_empty());
}

#[test]
fn incompatible_reliability_raises_both_events_and_no_match() {
    let mut net = Network::new(14);
    let a = net.add_participant(0);
    let b = net.add_participant(0);
    let now = net.now;
    let wq = WriterQos {
        reliability: Reliability::BEST_EFFORT,
        ..WriterQos::default()
    };
    let rq = ReaderQos {
        reliability: Reliability::RELIABLE,
        ..ReaderQos::default()
    };
    let w = net.p(a).create_writer(writer("T", wq), now).unwrap();
    let r = net.p(b).create_reader(reader("T", rq), now).unwrap();
    let ok = net.run_until(Duration::from_secs(3), |n| {
        n.nodes[a].count_events(|e| {
            matches!(
                e,
                Event::OfferedIncompatibleQos {
                    policy: QosPolicyId::Reliability,
                    ..
                }
            )
        }) == 1
            && n.nodes[b].count_events(|e| {
                matches!(
                    e,
                    Event::RequestedIncompatibleQos {
                        policy: QosPolicyId::Reliability,
                        ..
                    }
                )
            }) == 1
    });
    assert!(
        ok,
        "a={:?} b={:?}",
        net.nodes[a].events, net.nodes[b].events
    );
    assert_eq!(net.p(a).matched_reader_count(w), 0);
    assert_eq!(net.p(b).matched_writer_count(r), 0);
    assert_eq!(matched_pubs(&net, a), 0);
}

#[test]
fn silent_participant_is_removed_after_lease() {
    let mut net = Network::new(15);
    let mut cfg = Network::config_for(0, 0);
    cfg.lease_duration = Duration::from_secs(5);
    let a = net.add_participant_with(cfg);
    let b = net.add_participant(0);
    let now = net.now;
    net.p(a)
        .create_writer(writer("T", WriterQos::default()), now)
        .unwrap();
    let r = net
        .p(b)
        .create_reader(reader("T", ReaderQos::default()), now)
        .unwrap();
    assert!(net.run_until(Duration::from_secs(2), |n| matched_subs(n, b) == 1));
    let a_prefix = net.nodes[a].participant.guid_prefix();
    net.nodes[a].crashed = true;
    let t0 = net.now;
    let ok = net.run_until(Duration::from_secs(10), |n| {
        n.nodes[b]
            .events
            .contains(&Event::ParticipantLost { prefix: a_prefix })
    });
    assert!(ok);
    let waited = net.now.since(t0);
    assert!(
        waited >= Duration::from_secs(4),
        "removed too early: {waited:?}"
    );
    assert!(
        waited <= Duration::from_secs(6),
        "removed too late: {waited:?}"
    );
    assert!(net.nodes[b].events.iter().any(|e| matches!(
        e,
        Event::SubscriptionUnmatched { reader, current_count: 0, .. } if *reader == r
    )));
    assert_eq!(net.p(b).matched_writer_count(r), 0);
}

#[test]
fn leave_announcement_removes_participant_at_once() {
    let mut net = Network::new(16);
    let a = net.add_participant(0);
    let b = net.add_participant(0);
    assert!(net.run_until(Duration::from_secs(1), |n| {
        n.nodes[b].participant.discovered_participants().len() == 1
    }));
    net.p(a).announce_leave();
    net.flush(a);
    net.nodes[a].crashed = true;
    assert!(net.run_until(Duration::from_millis(50), |n| {
        n.nodes[b].participant.discovered_participants().is_empty()
    }));
}

#[test]
fn deleting_an_endpoint_unmatches_the_remote_side() {
    let mut net = Network::new(17);
    net.link = LinkConfig::lossy(0.1, 0.0, 0.0);
    let a = net.add_participant(0);
    let b = net.add_participant(0);
    let now = net.now;
    let w = net
        .p(a)
        .create_writer(writer("T", WriterQos::default()), now)
        .unwrap();
    let r = net
        .p(b)
        .create_reader(reader("T", ReaderQos::default()), now)
        .unwrap();
    let ok = net.run_until(Duration::from_secs(3), |n| {
        matched_subs(n, b) == 1 && matched_pubs(n, a) == 1
    });
    assert!(
        ok,
        "a={:?} b={:?} sa={:?} sb={:?}",
        net.nodes[a].events,
        net.nodes[b].events,
        net.nodes[a].participant.stats(),
        net.nodes[b].participant.stats()
    );
    let now = net.now;
    net.p(b).delete_reader(r, now).unwrap();
    net.flush(b);
    let ok = net.run_until(Duration::from_secs(3), |n| {
        n.nodes[a].count_events(|e| {
            matches!(
                e,
                Event::PublicationUnmatched {
                    current_count: 0,
                    ..
                }
            )
        }) == 1
    });
    assert!(ok, "{:?}", net.nodes[a].events);
    assert_eq!(net.p(a).matched_reader_count(w), 0);
    let now = net.now;
    assert!(net.p(b).delete_reader(r, now).is_err());
}
