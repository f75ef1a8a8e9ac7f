//! Crash and restart on the simulated network: a participant killed without a
//! goodbye and started again with the same GUID prefix (a new incarnation,
//! its sequence numbers from 1 again) is discovered afresh by its peers, and
//! replayed announcements of a live participant do not tear it down.

use std::time::Duration;

use ferrodds_rtps::{
    Durability, EntityId, Event, History, ParticipantConfig, ReaderId, ReaderQos, Reliability,
    WriterId, WriterQos,
};
use ferrodds_testkit::helpers::{alive, payload, reader, value, writer};
use ferrodds_testkit::Network;
use ferrodds_wire::{MessageView, Submessage};

/// Reliable, KEEP_ALL and TRANSIENT_LOCAL on both sides: what a publisher
/// wrote before a reader matched reaches it too.
fn reliable_reader() -> ReaderQos {
    ReaderQos {
        reliability: Reliability::RELIABLE,
        history: History::KeepAll,
        durability: Durability::TransientLocal,
        ..ReaderQos::default()
    }
}

fn keep_all_writer() -> WriterQos {
    WriterQos {
        history: History::KeepAll,
        durability: Durability::TransientLocal,
        ..WriterQos::default()
    }
}

/// Node `i`'s configuration with an incarnation stamp (as the runtime sets it
/// from the wall clock at creation), or none.
fn config(i: usize, incarnation: Option<u64>) -> ParticipantConfig {
    let mut c = Network::config_for(i, 0);
    c.incarnation = incarnation;
    c
}

fn values(net: &Network, b: usize, r: ReaderId) -> Vec<u32> {
    net.nodes[b]
        .samples_of(r)
        .map(|s| value(s).unwrap())
        .collect()
}

/// Writes `values` on writer `w` of node `a`, one per millisecond.
fn write_all(net: &mut Network, a: usize, w: WriterId, values: impl Iterator<Item = u32>) {
    for v in values {
        let now = net.now;
        net.p(a).write(w, alive(&payload(v)), now).unwrap();
        net.flush(a);
        net.run_for(Duration::from_millis(1));
    }
}

/// Publisher `a` (incarnation `first`) and subscriber `b`, matched, with
/// samples 0..50 delivered (every datagram recorded); returns the network, the
/// node indices, the writer and the reader.
fn delivered_fifty(first: Option<u64>) -> (Network, usize, usize, WriterId, ReaderId) {
    let mut net = Network::new(41);
    net.record = true;
    let a = net.add_participant_with(config(0, first));
    let b = net.add_participant_with(config(1, Some(7)));
    let now = net.now;
    let w = net
        .p(a)
        .create_writer(writer("T", keep_all_writer()), now)
        .unwrap();
    let r = net
        .p(b)
        .create_reader(reader("T", reliable_reader()), now)
        .unwrap();
    assert!(net.run_until(Duration::from_secs(2), |n| {
        n.nodes[a].participant.matched_reader_count(w) == 1
            && n.nodes[b].participant.matched_writer_count(r) == 1
    }));
    net.run_for(Duration::from_millis(50));
    write_all(&mut net, a, w, 0..50);
    assert!(net.run_until(Duration::from_secs(2), |n| values(n, b, r).len() == 50));
    // Let the writer see every acknowledgement and a few announcements pass.
    net.run_for(Duration::from_secs(1));
    (net, a, b, w, r)
}

/// Restarts `a` as `incarnation` with a writer of the same GUID (the same
/// entity keys are allocated in the same order) and writes samples 1000..1020,
/// that is sequence numbers 1..=20 again; returns the new writer.
fn restart_and_write(net: &mut Network, a: usize, incarnation: Option<u64>) -> WriterId {
    net.nodes[a].crashed = true;
    net.run_for(Duration::from_millis(500));
    net.restart(a, config(0, incarnation));
    let now = net.now;
    let w = net
        .p(a)
        .create_writer(writer("T", keep_all_writer()), now)
        .unwrap();
    write_all(net, a, w, 1000..1020);
    w
}

fn new_samples(net: &Network, b: usize, r: ReaderId) -> Vec<u32> {
    values(net, b, r)
        .into_iter()
        .filter(|v| *v >= 1000)
        .collect()
}

/// The restarted publisher announces a later incarnation: the subscriber drops
/// what it knew of the old one at once (its 50 sequence numbers would have hidden
/// the new 1..=20), rematches, and gets every new sample, well before the old
/// incarnation's 20 s lease would have ended.
#[test]
fn a_restarted_publisher_is_a_new_incarnation() {
    let (mut net, a, b, _, r) = delivered_fifty(Some(100));
    let prefix = net.nodes[a].participant.guid_prefix();
    let t0 = net.now;
    restart_and_write(&mut net, a, Some(200));
    let ok = net.run_until(Duration::from_secs(5), |n| new_samples(n, b, r).len() == 20);
    let took = Duration::from_nanos(net.now.0 - t0.0);
    eprintln!("stamped restart: new samples delivered {took:?} after the restart");
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(
        ok,
        "new incarnation's samples: {:?}; events {:?}",
        new_samples(&net, b, r),
        net.nodes[b].events
    );
    assert_eq!(new_samples(&net, b, r), (1000..1020).collect::<Vec<_>>());
    assert_eq!(values(&net, b, r).len(), 70, "nothing delivered twice");
    let stats = *net.nodes[b].participant.stats();
    assert_eq!(stats.participant_restarts, 1);
    // The old incarnation was lost (its writer unmatched) and the new one discovered.
    let lost = net.nodes[b].count_events(|e| *e == Event::ParticipantLost { prefix });
    let found = net.nodes[b].count_events(|e| *e == Event::ParticipantDiscovered { prefix });
    assert_eq!((lost, found), (1, 2));
    assert_eq!(
        net.nodes[b].participant.discovered_participants(),
        vec![prefix]
    );
}

/// Without an incarnation stamp (another implementation, or a restart whose
/// wall clock went backwards) the new incarnation cannot be told from a replay
/// at once. Its traffic no longer keeps the old incarnation alive, though: that
/// one ends by its lease (here 3 s), and the new one is then discovered and
/// delivers everything — before, the old one lived on as long as the new one
/// talked, and its sequence numbers hid the new ones.
#[test]
fn an_unstamped_restart_is_discovered_once_the_old_lease_ends() {
    for (first, second) in [(None, None), (Some(300), Some(200))] {
        let (mut net, a, b, r) = {
            let mut net = Network::new(42);
            let mut ca = config(0, first);
            ca.lease_duration = Duration::from_secs(3);
            let a = net.add_participant_with(ca);
            let b = net.add_participant_with(config(1, Some(7)));
            let now = net.now;
            let w = net
                .p(a)
                .create_writer(writer("T", keep_all_writer()), now)
                .unwrap();
            let r = net
                .p(b)
                .create_reader(reader("T", reliable_reader()), now)
                .unwrap();
            assert!(net.run_until(Duration::from_secs(2), |n| {
                n.nodes[b].participant.matched_writer_count(r) == 1
            }));
            net.run_for(Duration::from_millis(50));
            write_all(&mut net, a, w, 0..50);
            net.run_for(Duration::from_secs(4));
            assert_eq!(values(&net, b, r).len(), 50);
            (net, a, b, r)
        };
        net.nodes[a].crashed = true;
        net.run_for(Duration::from_millis(500));
        let mut ca = config(0, second);
        ca.lease_duration = Duration::from_secs(3);
        net.restart(a, ca);
        let now = net.now;
        let w = net
            .p(a)
            .create_writer(writer("T", keep_all_writer()), now)
            .unwrap();
        let t0 = net.now;
        write_all(&mut net, a, w, 1000..1020);
        let ok = net.run_until(Duration::from_secs(15), |n| {
            new_samples(n, b, r).len() == 20
        });
        let took = Duration::from_nanos(net.now.0 - t0.0);
        eprintln!("{first:?} -> {second:?}: new samples delivered {took:?} after the restart");
        assert!(
            ok,
            "{first:?} -> {second:?}: new incarnation's samples {:?}",
            new_samples(&net, b, r)
        );
        assert_eq!(new_samples(&net, b, r), (1000..1020).collect::<Vec<_>>());
        // The old incarnation ended by its lease, not as a restart.
        let prefix = net.nodes[a].participant.guid_prefix();
        let lost = net.nodes[b].count_events(|e| *e == Event::ParticipantLost { prefix });
        assert_eq!(lost, 1);
        assert_eq!(net.nodes[b].participant.stats().participant_restarts, 0);
        assert!(net.nodes[b].participant.stats().stale_announcements > 0);
    }
}

/// Every datagram node `from` sent so far, optionally only its SPDP ones.
fn sent_by(net: &Network, from: usize, spdp_only: bool) -> Vec<Vec<u8>> {
    net.recorded()
        .iter()
        .filter(|d| d.from == from)
        .filter(|d| !spdp_only || is_spdp(&d.data))
        .map(|d| d.data.clone())
        .collect()
}

fn is_spdp(datagram: &[u8]) -> bool {
    MessageView::parse(datagram).is_ok_and(|m| {
        m.submessages().any(
            |s| matches!(s, Ok(Submessage::Data(d)) if d.writer_id == EntityId([0, 1, 0, 0xc2])),
        )
    })
}

/// Delivers `datagrams` to node `to` only, as a replaying host would.
fn replay(net: &mut Network, to: usize, datagrams: &[Vec<u8>]) {
    let dests = net.nodes[to]
        .participant
        .config()
        .metatraffic_unicast_locators
        .clone();
    let mut user = net.nodes[to]
        .participant
        .config()
        .default_unicast_locators
        .clone();
    user.extend(dests);
    for d in datagrams {
        net.inject(to, &user, d);
        net.run_for(Duration::from_micros(100));
    }
}

/// Replayed traffic of the live publisher (its earlier announcements, with
/// lower SPDP sequence numbers, and all its data), then announcements and a
/// disposal of its previous incarnation, change nothing: no participant is
/// lost or rematched, nothing is delivered twice, data keeps flowing.
#[test]
fn replayed_announcements_do_not_tear_down_a_live_participant() {
    let (mut net, a, b, w, r) = delivered_fifty(Some(100));
    let prefix = net.nodes[a].participant.guid_prefix();
    let lost = |n: &Network| n.nodes[b].count_events(|e| *e == Event::ParticipantLost { prefix });
    // The same incarnation's traffic, replayed (announcements 1.. of it).
    let first_run = sent_by(&net, a, false);
    assert!(sent_by(&net, a, true).len() > 5, "several announcements");
    replay(&mut net, b, &first_run);
    write_all(&mut net, a, w, 50..60);
    net.run_for(Duration::from_secs(1));
    assert_eq!(values(&net, b, r), (0..60).collect::<Vec<_>>());
    let stats = *net.nodes[b].participant.stats();
    assert!(stats.stale_announcements > 0);
    assert_eq!((lost(&net), stats.participant_restarts), (0, 0));
    // Its disposal, taken before it crashes (it never sends it).
    let now = net.now;
    net.p(a).announce_leave();
    let mut buf = vec![0u8; 65536];
    let t = net.p(a).poll_transmit(now, &mut buf).expect("disposal");
    let disposal = buf[..t.len].to_vec();
    let old_announcements = sent_by(&net, a, true);
    // A restart (a later incarnation), then the earlier one's announcements
    // and disposal replayed: stale.
    let w = restart_and_write(&mut net, a, Some(200));
    assert!(net.run_until(Duration::from_secs(5), |n| new_samples(n, b, r).len() == 20));
    let stale_before = net.nodes[b].participant.stats().stale_announcements;
    replay(&mut net, b, &old_announcements);
    replay(&mut net, b, &[disposal]);
    write_all(&mut net, a, w, 1020..1030);
    assert!(net.run_until(Duration::from_secs(5), |n| new_samples(n, b, r).len() == 30));
    assert_eq!(new_samples(&net, b, r), (1000..1030).collect::<Vec<_>>());
    let stats = *net.nodes[b].participant.stats();
    assert!(stats.stale_announcements > stale_before);
    assert_eq!((lost(&net), stats.participant_restarts), (1, 1));
    assert_eq!(
        net.nodes[b].participant.discovered_participants(),
        vec![prefix]
    );
    // The live publisher (whose lease counts from its own announcements now)
    // stays well past its 20 s lease.
    net.run_for(Duration::from_secs(30));
    assert_eq!(lost(&net), 1);
}
