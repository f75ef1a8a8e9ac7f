//! User data over the simulated network: best effort, strict reliable,
//! KEEP_LAST, durability and writer history limits.

use std::time::Duration;

use ferrodds_rtps::{
    ChangeKind, Durability, Event, History, ReaderId, ReaderQos, Reliability, ResourceLimits, Time,
    WriteError, WriteRequest, WriterId, WriterQos,
};
use ferrodds_testkit::helpers::{alive, payload, reader, value, writer};
use ferrodds_testkit::{LinkConfig, Network};

fn reliable_reader() -> ReaderQos {
    ReaderQos {
        reliability: Reliability::RELIABLE,
        history: History::KeepAll,
        ..ReaderQos::default()
    }
}

fn keep_all_writer() -> WriterQos {
    WriterQos {
        history: History::KeepAll,
        ..WriterQos::default()
    }
}

/// Two participants, a writer on `a`, a reader on `b`, matched on a perfect link.
fn pair(seed: u64, wq: WriterQos, rq: ReaderQos) -> (Network, usize, usize, WriterId, ReaderId) {
    pair_mtu(seed, wq, rq, 65000)
}

/// Like [`pair`] with a given `max_message_size` on both sides.
fn pair_mtu(
    seed: u64,
    wq: WriterQos,
    rq: ReaderQos,
    mtu: usize,
) -> (Network, usize, usize, WriterId, ReaderId) {
    pair_mtu_keyed(seed, wq, rq, mtu, false)
}

/// [`pair_mtu`] on a keyed topic (`keyed`) or an unkeyed one.
fn pair_mtu_keyed(
    seed: u64,
    wq: WriterQos,
    rq: ReaderQos,
    mtu: usize,
    keyed: bool,
) -> (Network, usize, usize, WriterId, ReaderId) {
    let mut net = Network::new(seed);
    let mut ca = Network::config_for(0, 0);
    ca.max_message_size = mtu;
    let mut cb = Network::config_for(1, 0);
    cb.max_message_size = mtu;
    let a = net.add_participant_with(ca);
    let b = net.add_participant_with(cb);
    let now = net.now;
    let mut wa = writer("T", wq);
    wa.keyed = keyed;
    let mut ra = reader("T", rq);
    ra.keyed = keyed;
    let w = net.p(a).create_writer(wa, now).unwrap();
    let r = net.p(b).create_reader(ra, now).unwrap();
    let ok = net.run_until(Duration::from_secs(2), |n| {
        n.nodes[a].participant.matched_reader_count(w) == 1
            && n.nodes[b].participant.matched_writer_count(r) == 1
    });
    assert!(ok, "no match");
    // Let the SEDP and pre-emptive ACKNACK exchanges settle.
    net.run_for(Duration::from_millis(50));
    (net, a, b, w, r)
}

fn values(net: &Network, b: usize, r: ReaderId) -> Vec<u32> {
    net.nodes[b]
        .samples_of(r)
        .map(|s| value(s).unwrap())
        .collect()
}

#[test]
fn best_effort_1000_with_loss_never_duplicates_or_reorders() {
    let wq = WriterQos {
        reliability: Reliability::BEST_EFFORT,
        ..WriterQos::default()
    };
    let (mut net, a, b, w, r) = pair(21, wq, ReaderQos::default());
    net.link = LinkConfig::lossy(0.2, 0.2, 0.2);
    for i in 0..1000u32 {
        let now = net.now;
        net.p(a).write(w, alive(&payload(i)), now).unwrap();
        net.flush(a);
        net.run_for(Duration::from_micros(50));
    }
    net.run_for(Duration::from_millis(100));
    let got = values(&net, b, r);
    assert!(got.windows(2).all(|p| p[0] < p[1]), "order/dup violated");
    // Lost and overtaken (reordered) samples are gone; the rest arrive once.
    assert!(got.len() > 400 && got.len() < 1000, "got {}", got.len());
    assert!(net.nodes[b].participant.stats().dropped_samples > 0);
}

fn strict_reliable(seed: u64, n: u32) {
    // Small datagrams so that loss hits individual samples, not huge batches.
    let (mut net, a, b, w, r) = pair_mtu(seed, keep_all_writer(), reliable_reader(), 1400);
    net.link = LinkConfig::lossy(0.3, 0.1, 0.2);
    let now = net.now;
    for i in 0..n {
        net.p(a).write(w, alive(&payload(i)), now).unwrap();
    }
    net.flush(a);
    let ok = net.run_until(Duration::from_secs(60), |net| {
        net.nodes[b].samples_of(r).count() >= n as usize
    });
    let got = values(&net, b, r);
    assert!(
        ok,
        "seed {seed}: only {} of {n} after {:?}",
        got.len(),
        net.now
    );
    assert_eq!(got, (0..n).collect::<Vec<_>>(), "seed {seed}");
    // The faults really happened and were repaired.
    assert!(net.counters.2 > 0, "nothing lost");
    assert!(net.nodes[a].participant.stats().resent_data > 0);
    assert!(
        net.nodes[b].participant.stats().dropped_samples > 0,
        "no duplicates seen"
    );
    eprintln!(
        "seed {seed}: sent/delivered/lost {:?}, writer {:?}, t={:?}",
        net.counters,
        net.nodes[a].participant.stats(),
        net.now
    );
    // Writer learns everything was acknowledged and frees its volatile history.
    assert!(net.run_until(Duration::from_secs(10), |net| net
        .p(a)
        .is_acknowledged_by_all(w)));
    assert!(net.nodes[a]
        .events
        .iter()
        .any(|e| matches!(e, Event::AllAcknowledged { writer } if *writer == w)));
    net.run_for(Duration::from_millis(300));
    assert_eq!(values(&net, b, r).len(), n as usize, "late duplicates");
}

#[test]
fn strict_reliable_10000_samples_with_30_percent_loss() {
    strict_reliable(31, 10_000);
}

#[test]
fn strict_reliable_several_seeds() {
    for seed in [1, 2, 3, 4, 5] {
        strict_reliable(seed, 2_000);
    }
}

#[test]
fn strict_reliable_with_blocking_writer_history() {
    let wq = WriterQos {
        history: History::KeepAll,
        resource_limits: ResourceLimits {
            max_samples: 32,
            ..ResourceLimits::default()
        },
        ..WriterQos::default()
    };
    let (mut net, a, b, w, r) = pair_mtu(41, wq, reliable_reader(), 1400);
    net.link = LinkConfig::lossy(0.3, 0.1, 0.2);
    let n = 2_000u32;
    let mut i = 0u32;
    let mut full = 0;
    while i < n {
        let now = net.now;
        match net.p(a).write(w, alive(&payload(i)), now) {
            Ok(_) => i += 1,
            Err(WriteError::HistoryFull) => {
                full += 1;
                net.flush(a);
                let seen = net.nodes[a].events.len();
                let ok = net.run_until(Duration::from_secs(5), |net| {
                    net.nodes[a].events[seen..]
                        .iter()
                        .any(|e| matches!(e, Event::WriterResourcesAvailable { .. }))
                });
                assert!(ok, "writer stayed blocked at {i}");
            }
            Err(e) => panic!("{e}"),
        }
    }
    net.flush(a);
    assert!(full > 0);
    assert!(net.run_until(Duration::from_secs(30), |net| net.nodes[b]
        .samples_of(r)
        .count()
        >= n as usize));
    assert_eq!(values(&net, b, r), (0..n).collect::<Vec<_>>());
}

#[test]
fn keep_all_max_samples_10_is_full_until_acknowledged() {
    let wq = WriterQos {
        history: History::KeepAll,
        resource_limits: ResourceLimits {
            max_samples: 10,
            ..ResourceLimits::default()
        },
        ..WriterQos::default()
    };
    let (mut net, a, b, w, r) = pair(42, wq, reliable_reader());
    let now = net.now;
    for i in 0..10 {
        net.p(a).write(w, alive(&payload(i)), now).unwrap();
    }
    assert_eq!(
        net.p(a).write(w, alive(&payload(10)), now),
        Err(WriteError::HistoryFull)
    );
    assert!(!net.p(a).is_acknowledged_by_all(w));
    let ok = net.run_until(Duration::from_secs(1), |net| {
        net.nodes[a]
            .events
            .iter()
            .any(|e| matches!(e, Event::WriterResourcesAvailable { writer } if *writer == w))
    });
    assert!(ok);
    assert!(net.p(a).is_acknowledged_by_all(w));
    let now = net.now;
    assert_eq!(
        net.p(a).write(w, alive(&payload(10)), now).map(|sn| sn.0),
        Ok(11)
    );
    net.flush(a);
    assert!(net.run_until(Duration::from_secs(1), |net| net.nodes[b]
        .samples_of(r)
        .count()
        == 11));
    assert_eq!(values(&net, b, r), (0..11).collect::<Vec<_>>());
}

#[test]
fn keep_last_1_reliable_delivers_latest_in_order() {
    let rq = ReaderQos {
        reliability: Reliability::RELIABLE,
        ..ReaderQos::default()
    };
    let (mut net, a, b, w, r) = pair(51, WriterQos::default(), rq);
    net.link = LinkConfig::lossy(0.3, 0.1, 0.2);
    for i in 0..200u32 {
        let now = net.now;
        net.p(a).write(w, alive(&payload(i)), now).unwrap();
        net.flush(a);
        net.run_for(Duration::from_micros(300));
    }
    let ok = net.run_until(Duration::from_secs(5), |net| {
        net.nodes[b].samples_of(r).last().and_then(value) == Some(199)
    });
    let got = values(&net, b, r);
    assert!(ok, "last delivered {:?}", got.last());
    assert!(got.windows(2).all(|p| p[0] < p[1]));
    // Writer keeps only the last sample.
    assert!(net.run_until(Duration::from_secs(2), |net| net
        .p(a)
        .is_acknowledged_by_all(w)));
}

fn late_joiner(durability: Durability) -> Vec<u32> {
    let mut net = Network::new(61);
    let a = net.add_participant(0);
    let b = net.add_participant(0);
    let now = net.now;
    let wq = WriterQos {
        durability: Durability::TransientLocal,
        history: History::KeepLast(5),
        ..WriterQos::default()
    };
    let w = net.p(a).create_writer(writer("T", wq), now).unwrap();
    for i in 0..10 {
        net.p(a).write(w, alive(&payload(i)), now).unwrap();
    }
    net.run_for(Duration::from_millis(500));
    let rq = ReaderQos {
        durability,
        ..reliable_reader()
    };
    let now = net.now;
    let r = net.p(b).create_reader(reader("T", rq), now).unwrap();
    assert!(net.run_until(Duration::from_secs(2), |n| n.nodes[b]
        .participant
        .matched_writer_count(r)
        == 1));
    net.run_for(Duration::from_millis(500));
    let now = net.now;
    net.p(a).write(w, alive(&payload(100)), now).unwrap();
    net.flush(a);
    net.run_for(Duration::from_millis(500));
    assert!(net.nodes[b]
        .events
        .iter()
        .all(|e| !matches!(e, Event::SampleLost { .. })));
    values(&net, b, r)
}

#[test]
fn transient_local_late_joiner_receives_history() {
    assert_eq!(
        late_joiner(Durability::TransientLocal),
        vec![5, 6, 7, 8, 9, 100]
    );
}

#[test]
fn volatile_late_joiner_does_not_receive_history() {
    assert_eq!(late_joiner(Durability::Volatile), vec![100]);
}

#[test]
fn inline_qos_timestamp_and_dispose_reach_the_reader() {
    // A keyed topic: the key hash is an instance's (an unkeyed writer drops it).
    let (mut net, a, b, w, r) =
        pair_mtu_keyed(71, keep_all_writer(), reliable_reader(), 65000, true);
    let now = net.now;
    let ts = Time {
        seconds: 1234,
        fraction: 5678,
    };
    let key = [7u8; 16];
    net.p(a)
        .write(
            w,
            WriteRequest {
                kind: ChangeKind::Alive,
                key_hash: Some(key),
                serialized_payload: &payload(1),
                source_timestamp: Some(ts),
            },
            now,
        )
        .unwrap();
    net.p(a)
        .write(
            w,
            WriteRequest {
                kind: ChangeKind::NotAliveDisposed,
                key_hash: Some(key),
                serialized_payload: &[],
                source_timestamp: None,
            },
            now,
        )
        .unwrap();
    net.flush(a);
    assert!(
        net.run_until(Duration::from_secs(1), |n| n.nodes[b].samples_of(r).count()
            == 2)
    );
    let s: Vec<_> = net.nodes[b].samples_of(r).cloned().collect();
    assert_eq!(s[0].source_timestamp, Some(ts));
    assert_eq!(s[0].key_hash, Some(key));
    assert_eq!(s[0].kind, ChangeKind::Alive);
    assert_eq!(s[0].sequence_number.0, 1);
    assert_eq!(s[1].kind, ChangeKind::NotAliveDisposed);
    assert!(s[1].payload.is_empty());
    assert_eq!(s[1].writer_guid, net.p(a).writer_guid(w).unwrap());
    assert!(net.nodes[b]
        .events
        .iter()
        .any(|e| matches!(e, Event::DataAvailable { reader } if *reader == r)));
}

#[test]
fn oversized_sample_is_refused() {
    let (mut net, a, _b, w, _r) = pair(81, WriterQos::default(), reliable_reader());
    let now = net.now;
    let max = net.p(a).max_payload_size();
    let big = vec![0u8; max + 1];
    assert_eq!(
        net.p(a).write(w, alive(&big), now),
        Err(WriteError::PayloadTooLarge { size: max + 1, max })
    );
}

fn big_payload(i: u32, len: usize) -> Vec<u8> {
    let mut p = vec![0, 1, 0, 0];
    p.extend_from_slice(&i.to_le_bytes());
    p.extend((8..len).map(|k| (k as u32).wrapping_mul(31).wrapping_add(i) as u8));
    p
}

#[test]
fn large_samples_are_fragmented_and_reassembled_reliably_under_loss() {
    // (Keyed: the key hash goes with the first fragment.)
    let (mut net, a, b, w, r) =
        pair_mtu_keyed(82, keep_all_writer(), reliable_reader(), 1400, true);
    net.link = LinkConfig::lossy(0.2, 0.1, 0.2);
    let now = net.now;
    let ts = Time {
        seconds: 9,
        fraction: 1,
    };
    let samples: Vec<Vec<u8>> = (0..20)
        .map(|i| big_payload(i, 20_000 + 999 * i as usize))
        .collect();
    for s in &samples {
        let req = WriteRequest {
            source_timestamp: Some(ts),
            key_hash: Some([4; 16]),
            ..alive(s)
        };
        net.p(a).write(w, req, now).unwrap();
    }
    net.flush(a);
    let ok = net.run_until(Duration::from_secs(30), |n| {
        n.nodes[b].samples_of(r).count() >= 20
    });
    assert!(ok, "got {}", net.nodes[b].samples_of(r).count());
    let got: Vec<_> = net.nodes[b].samples_of(r).cloned().collect();
    for (s, want) in got.iter().zip(&samples) {
        assert_eq!(&s.payload[..want.len()], &want[..]);
        assert!(s.payload.len() < want.len() + 4);
        assert_eq!(s.source_timestamp, Some(ts));
        assert_eq!(s.key_hash, Some([4; 16]));
    }
    assert!(net.nodes[a].participant.stats().resent_data > 0);
}

/// On an Ethernet MTU (1472-byte datagrams) an unkeyed writer's fragments
/// leave no room for a key hash its single instance does not need: perftest's
/// 8192 B sample (8196 bytes serialized) goes in 6 datagrams of 1376-byte
/// fragments, not 7 (the last with 60 bytes). A key hash given to such a
/// writer anyway does not go with its fragments (else the first one would not
/// fit its datagram, and the sample would never go). A keyed writer keeps the
/// room, and its key hash arrives.
#[test]
fn unkeyed_fragments_fill_an_ethernet_mtu() {
    for (keyed, key_hash, want) in [(false, false, 6), (false, true, 6), (true, true, 7)] {
        let (mut net, a, b, w, r) =
            pair_mtu_keyed(84, keep_all_writer(), reliable_reader(), 1472, keyed);
        let before = net.nodes[a].participant.stats().sent_data;
        let data = big_payload(1, 8196);
        let now = net.now;
        let req = WriteRequest {
            key_hash: key_hash.then_some([5; 16]),
            source_timestamp: Some(Time {
                seconds: 1,
                fraction: 0,
            }),
            ..alive(&data)
        };
        net.p(a).write(w, req, now).unwrap();
        net.flush(a);
        assert!(
            net.run_until(Duration::from_secs(5), |n| n.nodes[b].samples_of(r).count()
                == 1)
        );
        let sent = net.nodes[a].participant.stats().sent_data - before;
        assert_eq!(
            sent, want,
            "keyed {keyed} key hash {key_hash}: {sent} fragments"
        );
        let got = net.nodes[b].samples_of(r).next().unwrap();
        assert_eq!(&got.payload[..data.len()], &data[..]);
        assert_eq!(got.key_hash, keyed.then_some([5; 16]));
    }
}

/// A writer of an unkeyed topic has one instance: a key hash handed to it
/// (the engine API allows one) goes neither with whole samples nor with
/// fragments, and KEEP_LAST counts all its samples as one instance.
#[test]
fn an_unkeyed_writer_ignores_key_hashes() {
    let wq = WriterQos {
        history: History::KeepLast(1),
        ..WriterQos::default()
    };
    let (mut net, a, b, w, r) = pair_mtu_keyed(85, wq, reliable_reader(), 1472, false);
    for (i, len) in [(1u32, 64usize), (2, 8196)] {
        let data = big_payload(i, len);
        let now = net.now;
        let req = WriteRequest {
            key_hash: Some([i as u8; 16]),
            ..alive(&data)
        };
        net.p(a).write(w, req, now).unwrap();
        net.flush(a);
        assert!(
            net.run_until(Duration::from_secs(5), |n| n.nodes[b].samples_of(r).count()
                == i as usize)
        );
        let got = net.nodes[b].samples_of(r).last().unwrap();
        assert_eq!(&got.payload[..len], &data[..]);
        assert_eq!(got.key_hash, None, "{len} B");
    }
    // Two samples under two key hashes, yet one instance; registering a third hash
    // finds it registered, and any hash reads its state.
    assert_eq!(net.nodes[a].participant.writer_instance_count(w), 1);
    assert_eq!(net.p(a).register_instance(w, [9; 16]), Ok(false));
    assert_eq!(net.nodes[a].participant.writer_instance_count(w), 1);
    assert!(net.nodes[a]
        .participant
        .writer_instance_state(w, &[7; 16])
        .is_some());
}

#[test]
fn large_samples_best_effort_arrive_whole_or_not_at_all() {
    let wq = WriterQos {
        reliability: Reliability::BEST_EFFORT,
        ..WriterQos::default()
    };
    let (mut net, a, b, w, r) = pair_mtu(83, wq, ReaderQos::default(), 1400);
    net.link = LinkConfig::lossy(0.02, 0.05, 0.1);
    for i in 0..30u32 {
        let now = net.now;
        net.p(a)
            .write(w, alive(&big_payload(i, 10_000)), now)
            .unwrap();
        net.flush(a);
        net.run_for(Duration::from_millis(5));
    }
    net.run_for(Duration::from_millis(100));
    let got: Vec<_> = net.nodes[b].samples_of(r).cloned().collect();
    assert!(!got.is_empty() && got.len() < 30, "{}", got.len());
    let mut last = None;
    for s in &got {
        let i = value(s).unwrap();
        assert_eq!(s.payload, big_payload(i, 10_000));
        assert!(last.is_none_or(|l| l < i));
        last = Some(i);
    }
}

#[test]
fn writer_and_reader_in_one_participant_communicate() {
    let mut net = Network::new(91);
    let a = net.add_participant(0);
    let now = net.now;
    let w = net
        .p(a)
        .create_writer(writer("T", keep_all_writer()), now)
        .unwrap();
    let r = net
        .p(a)
        .create_reader(reader("T", reliable_reader()), now)
        .unwrap();
    assert_eq!(net.p(a).matched_reader_count(w), 1);
    assert_eq!(net.p(a).matched_writer_count(r), 1);
    for i in 0..5 {
        net.p(a).write(w, alive(&payload(i)), now).unwrap();
    }
    net.flush(a);
    assert!(
        net.run_until(Duration::from_secs(1), |n| n.nodes[a].samples_of(r).count()
            == 5)
    );
    assert_eq!(values(&net, a, r), vec![0, 1, 2, 3, 4]);
}

#[test]
fn samples_overwritten_while_unreachable_are_reported_lost() {
    let rq = ReaderQos {
        reliability: Reliability::RELIABLE,
        ..ReaderQos::default()
    };
    let (mut net, a, b, w, r) = pair(84, WriterQos::default(), rq);
    let now = net.now;
    net.p(a).write(w, alive(&payload(0)), now).unwrap();
    net.flush(a);
    assert!(
        net.run_until(Duration::from_secs(1), |n| n.nodes[b].samples_of(r).count()
            == 1)
    );
    // The reader is cut off while the KEEP_LAST 1 writer overwrites 9 samples.
    let cut = LinkConfig {
        loss: 1.0,
        ..LinkConfig::default()
    };
    net.set_link(a, b, cut);
    for i in 1..=10 {
        let now = net.now;
        net.p(a).write(w, alive(&payload(i)), now).unwrap();
        net.flush(a);
        net.run_for(Duration::from_millis(1));
    }
    net.set_link(a, b, LinkConfig::default());
    let ok = net.run_until(Duration::from_secs(2), |n| {
        n.nodes[b].samples_of(r).count() == 2
    });
    assert!(ok);
    assert_eq!(values(&net, b, r), vec![0, 10]);
    assert!(net.nodes[b].events.contains(&Event::SampleLost {
        reader: r,
        count: 9
    }));
}

/// A writer with more readers than the engine scans (12: its proxies are then found by
/// GUID and served from a work queue) and a reader with as many writers, over a lossy
/// link: every reader gets every sample exactly once and in order, and the writer learns
/// that all acknowledged.
#[test]
fn strict_reliable_with_a_dozen_readers_and_writers() {
    let mut net = Network::new(41);
    let n_peers = 12;
    let mut cfg = Network::config_for(0, 0);
    cfg.max_message_size = 1400;
    let a = net.add_participant_with(cfg);
    let peers: Vec<usize> = (1..=n_peers)
        .map(|i| {
            let mut c = Network::config_for(i, 0);
            c.max_message_size = 1400;
            net.add_participant_with(c)
        })
        .collect();
    let now = net.now;
    let w = net
        .p(a)
        .create_writer(writer("T", keep_all_writer()), now)
        .unwrap();
    let r_a = net
        .p(a)
        .create_reader(reader("U", reliable_reader()), now)
        .unwrap();
    let mut readers = Vec::new();
    let mut writers = Vec::new();
    for &p in &peers {
        readers.push(
            net.p(p)
                .create_reader(reader("T", reliable_reader()), now)
                .unwrap(),
        );
        writers.push(
            net.p(p)
                .create_writer(writer("U", keep_all_writer()), now)
                .unwrap(),
        );
    }
    let ok = net.run_until(Duration::from_secs(5), |n| {
        n.nodes[a].participant.matched_reader_count(w) == n_peers
            && n.nodes[a].participant.matched_writer_count(r_a) == n_peers
    });
    assert!(ok, "no match");
    net.run_for(Duration::from_millis(50));
    net.link = LinkConfig::lossy(0.2, 0.05, 0.1);
    let n = 300u32;
    let now = net.now;
    for i in 0..n {
        net.p(a).write(w, alive(&payload(i)), now).unwrap();
        for (k, &p) in peers.iter().enumerate() {
            net.p(p).write(writers[k], alive(&payload(i)), now).unwrap();
        }
    }
    for i in std::iter::once(a).chain(peers.iter().copied()) {
        net.flush(i);
    }
    let ok = net.run_until(Duration::from_secs(60), |net| {
        peers
            .iter()
            .zip(&readers)
            .all(|(&p, &r)| net.nodes[p].samples_of(r).count() >= n as usize)
            && net.nodes[a].samples_of(r_a).count() >= (n as usize) * n_peers
    });
    assert!(ok, "not all delivered after {:?}", net.now);
    for (&p, &r) in peers.iter().zip(&readers) {
        assert_eq!(
            values(&net, p, r),
            (0..n).collect::<Vec<_>>(),
            "reader on node {p}"
        );
    }
    assert_eq!(
        net.nodes[a].samples_of(r_a).count(),
        (n as usize) * n_peers,
        "samples of a dozen writers"
    );
    assert!(
        net.nodes[a].participant.stats().resent_data > 0,
        "nothing repaired"
    );
    assert!(net.run_until(Duration::from_secs(10), |net| net
        .p(a)
        .is_acknowledged_by_all(w)));
}

/// An acknowledgement cancels the tail-loss probe of the sample it acknowledges, and the
/// participant's next timeout is computed again at once: it stayed at the cancelled probe's
/// time, so that a runtime's timer woke for nothing after every acknowledged sample (about
/// 2,000 times a second in a perftest latency run).
#[test]
fn an_acknowledgement_leaves_no_stale_probe_timeout() {
    let wq = WriterQos {
        reliability: Reliability::RELIABLE,
        ..keep_all_writer()
    };
    let (mut net, a, _b, w, _r) = pair(5, wq, reliable_reader());
    // Past the quick initial SPDP announcements: the next one is seconds away.
    net.run_for(Duration::from_secs(2));
    let acked = |net: &Network| {
        net.nodes[a]
            .count_events(|e| matches!(e, Event::AllAcknowledged { writer } if *writer == w))
    };
    for i in 0..20u32 {
        let before = acked(&net);
        let now = net.now;
        net.p(a).write(w, alive(&payload(i)), now).unwrap();
        net.flush(a);
        // Its probe is armed: after the retransmission timeout (at most the HEARTBEAT
        // period, 100 ms, here: the simulated link's round trip is not measured yet).
        let probe = net.p(a).poll_timeout().unwrap();
        assert!(
            probe.0 > now.0 && probe.0 <= now.0 + 101_000_000,
            "probe at {probe:?}, sent at {now:?}"
        );
        let ok = net.run_until(Duration::from_millis(50), |n| acked(n) > before);
        assert!(ok, "sample {i} not acknowledged");
        let next = net.p(a).poll_timeout().unwrap();
        assert!(
            next > probe,
            "sample {i}: next timeout {next:?} still near the cancelled probe {probe:?} (now {:?})",
            net.now
        );
        net.run_for(Duration::from_millis(3));
    }
}

/// `writer_history_full_wait`: a full KEEP_ALL history found by asking (not by a refused
/// write) marks the writer blocked too, so the acknowledgement that makes room reports
/// `WriterResourcesAvailable` (a runtime waiting with a shared-memory loan in hand is
/// woken by it; without the mark it only tried again at its 10 ms poll).
#[test]
fn asking_whether_the_history_is_full_waits_for_the_same_event() {
    let wq = WriterQos {
        history: History::KeepAll,
        resource_limits: ResourceLimits {
            max_samples: 10,
            ..ResourceLimits::default()
        },
        ..WriterQos::default()
    };
    let (mut net, a, _b, w, _r) = pair(43, wq, reliable_reader());
    let now = net.now;
    assert!(!net.p(a).writer_history_full_wait(w));
    for i in 0..10 {
        net.p(a).write(w, alive(&payload(i)), now).unwrap();
    }
    assert!(net.p(a).writer_history_full(w));
    assert!(net.p(a).writer_history_full_wait(w));
    let ok = net.run_until(Duration::from_secs(1), |net| {
        net.nodes[a]
            .events
            .iter()
            .any(|e| matches!(e, Event::WriterResourcesAvailable { writer } if *writer == w))
    });
    assert!(ok, "no WriterResourcesAvailable after asking");
    assert!(!net.p(a).writer_history_full(w));
}
