//! Untrusted input: random and mutated datagrams never panic, are counted,
//! and do not break an established reliable flow.

use std::time::Duration;

use ferrodds_rtps::{History, ReaderQos, Reliability, WriterQos};
use ferrodds_testkit::helpers::{alive, payload, reader, value, writer};
use ferrodds_testkit::{Network, Rng};

#[test]
fn random_and_mutated_datagrams_never_panic() {
    let mut net = Network::new(99);
    net.record = true;
    let a = net.add_participant(0);
    let b = net.add_participant(0);
    let now = net.now;
    let w = net
        .p(a)
        .create_writer(
            writer(
                "T",
                WriterQos {
                    history: History::KeepAll,
                    ..WriterQos::default()
                },
            ),
            now,
        )
        .unwrap();
    let rq = ReaderQos {
        reliability: Reliability::RELIABLE,
        history: History::KeepAll,
        ..ReaderQos::default()
    };
    let r = net.p(b).create_reader(reader("T", rq), now).unwrap();
    assert!(net.run_until(Duration::from_secs(2), |n| {
        n.nodes[b].participant.matched_writer_count(r) == 1
            && n.nodes[a].participant.matched_reader_count(w) == 1
    }));
    for i in 0..20 {
        let now = net.now;
        net.p(a).write(w, alive(&payload(i)), now).unwrap();
    }
    net.flush(a);
    net.run_for(Duration::from_millis(200));
    assert_eq!(
        net.nodes[b]
            .samples_of(r)
            .filter_map(value)
            .collect::<Vec<_>>(),
        (0..20).collect::<Vec<_>>()
    );
    let valid: Vec<Vec<u8>> = net.recorded().iter().map(|d| d.data.clone()).collect();
    assert!(valid.len() > 10);

    let mut rng = Rng::new(5);
    let before = net.nodes[b].participant.stats().malformed_datagrams;
    for round in 0..20_000u32 {
        let mut d = if round % 4 == 0 {
            // Pure noise, sometimes behind a valid header.
            let len = rng.below(200) as usize;
            let mut v: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            if rng.chance(0.5) && !valid.is_empty() {
                let mut h = valid[0][..20].to_vec();
                h.extend_from_slice(&v);
                v = h;
            }
            v
        } else {
            valid[rng.below(valid.len() as u64) as usize].clone()
        };
        // Mutations: flip bytes, set extreme values, truncate.
        let flips = 1 + rng.below(6);
        for _ in 0..flips {
            if d.is_empty() {
                break;
            }
            let i = rng.below(d.len() as u64) as usize;
            d[i] = match rng.below(4) {
                0 => 0,
                1 => 0xff,
                2 => 0x7f,
                _ => rng.next_u64() as u8,
            };
        }
        if rng.chance(0.3) {
            let cut = rng.below(d.len() as u64 + 1) as usize;
            d.truncate(cut);
        }
        let target = if round % 2 == 0 { a } else { b };
        let now = net.now;
        net.p(target).handle_datagram(now, None, &d);
        net.flush(target);
    }
    let stats = *net.nodes[b].participant.stats();
    assert!(stats.malformed_datagrams > before, "{stats:?}");
    assert!(stats.received_datagrams > 10_000);

    // The flow still works afterwards.
    for i in 20..40 {
        let now = net.now;
        net.p(a).write(w, alive(&payload(i)), now).unwrap();
    }
    net.flush(a);
    net.run_for(Duration::from_secs(2));
    let got: Vec<u32> = net.nodes[b].samples_of(r).filter_map(value).collect();
    // Mutated copies may have injected garbage samples with valid SNs, but
    // delivery stays strictly ordered per writer and 39 arrives eventually.
    assert!(got.windows(2).all(|p| p[0] != p[1] || p[0] == 0));
    let seqs: Vec<i64> = net.nodes[b]
        .samples_of(r)
        .filter(|s| s.writer_guid == net.nodes[a].participant.writer_guid(w).unwrap())
        .map(|s| s.sequence_number.0)
        .collect();
    assert!(seqs.windows(2).all(|p| p[0] < p[1]), "{seqs:?}");
    assert_eq!(seqs.last(), Some(&40));
}

/// The peer limits are configuration: a reader allowed only 8 out-of-order changes per writer
/// still gets every sample of a lossy reliable flow, in order, and counts what it had no room
/// to buffer; a participant allowed 2 remote participants keeps 2 and counts the third.
#[test]
fn configured_peer_limits_hold_and_are_counted() {
    use ferrodds_rtps::PeerLimits;
    use ferrodds_testkit::LinkConfig;

    let mut net = Network::new(11);
    let a = net.add_participant(0);
    let mut cfg = Network::config_for(1, 0);
    cfg.peer_limits = PeerLimits {
        max_remote_participants: 2,
        max_out_of_order_samples: 8,
        ..PeerLimits::default()
    };
    let b = net.add_participant_with(cfg);
    let now = net.now;
    let wq = WriterQos {
        reliability: Reliability::RELIABLE,
        history: History::KeepAll,
        ..WriterQos::default()
    };
    let w = net.p(a).create_writer(writer("T", wq), now).unwrap();
    let rq = ReaderQos {
        reliability: Reliability::RELIABLE,
        history: History::KeepAll,
        ..ReaderQos::default()
    };
    let r = net.p(b).create_reader(reader("T", rq), now).unwrap();
    assert!(net.run_until(Duration::from_secs(2), |n| {
        n.nodes[b].participant.matched_writer_count(r) == 1
            && n.nodes[a].participant.matched_reader_count(w) == 1
    }));
    // Lossy, and slow enough that new data overtakes repairs.
    let link = LinkConfig {
        delay: Duration::from_millis(5),
        ..LinkConfig::lossy(0.1, 0.0, 0.0)
    };
    net.set_link(a, b, link);
    for i in 0..10_000 {
        let now = net.now;
        net.p(a).write(w, alive(&payload(i)), now).unwrap();
        if i % 10 == 9 {
            net.flush(a);
            net.run_for(Duration::from_millis(1));
        }
    }
    net.flush(a);
    net.run_for(Duration::from_secs(5));
    let got: Vec<u32> = net.nodes[b].samples_of(r).filter_map(value).collect();
    assert!(
        got.iter().copied().eq(0..10_000),
        "{} samples, first missing: {:?}",
        got.len(),
        (0..10_000).zip(&got).find(|(i, g)| i != *g)
    );
    let s = net.nodes[b].participant.stats();
    assert!(s.out_of_order_overflows > 0, "{s:?}");

    // Two remote participants fit; a third is refused and counted.
    net.set_link(a, b, LinkConfig::default());
    let c = net.add_participant(0);
    let d = net.add_participant(0);
    net.run_for(Duration::from_secs(1));
    let known = net.nodes[b].participant.discovered_participants();
    assert_eq!(known.len(), 2, "{known:?}");
    assert!(net.nodes[b].participant.stats().refused_participants > 0);
    assert_eq!(net.nodes[c].participant.discovered_participants().len(), 3);
    let _ = d;
}
