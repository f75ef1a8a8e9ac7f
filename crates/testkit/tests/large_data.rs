//! Large data (issue 4): samples up to 10 MB, NACK_FRAG repair exactness
//! under loss, best-effort drop of incomplete samples, per-writer fragment
//! sizes, and batching of small samples.

use std::time::Duration;

use ferrodds_rtps::{Batching, History, ReaderId, ReaderQos, Reliability, WriterId, WriterQos};
use ferrodds_testkit::helpers::{alive, payload, reader, value, writer};
use ferrodds_testkit::{LinkConfig, Network};
use ferrodds_wire::{MessageView, Submessage};

/// Sizes users characterise (bytes of serialized payload).
const SIZES: [usize; 6] = [
    100_000, 500_000, 1_048_576, 1_548_576, 4_194_304, 10_485_760,
];

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

fn pair(
    seed: u64,
    wq: WriterQos,
    rq: ReaderQos,
    mtu: usize,
) -> (Network, usize, usize, WriterId, ReaderId) {
    let mut net = Network::new(seed);
    let mut ca = Network::config_for(0, 0);
    ca.max_message_size = mtu;
    let mut cb = Network::config_for(1, 0);
    cb.max_message_size = mtu;
    let a = net.add_participant_with(ca);
    let b = net.add_participant_with(cb);
    let now = net.now;
    let w = net.p(a).create_writer(writer("T", wq), now).unwrap();
    let r = net.p(b).create_reader(reader("T", rq), now).unwrap();
    assert!(net.run_until(Duration::from_secs(2), |n| {
        n.nodes[a].participant.matched_reader_count(w) == 1
            && n.nodes[b].participant.matched_writer_count(r) == 1
    }));
    net.run_for(Duration::from_millis(50));
    (net, a, b, w, r)
}

/// CDR_LE encapsulation + a pattern depending on `seed`.
fn big(len: usize, seed: u32) -> Vec<u8> {
    let mut v = vec![0u8, 1, 0, 0];
    v.extend((0..len as u32 - 4).map(|i| (i.wrapping_mul(31) ^ seed) as u8));
    v
}

#[test]
fn samples_up_to_10_mb_are_delivered_reliably() {
    let (mut net, a, b, w, r) = pair(1, keep_all_writer(), reliable_reader(), 65000);
    for (i, &size) in SIZES.iter().enumerate() {
        let data = big(size, i as u32);
        let now = net.now;
        net.p(a).write(w, alive(&data), now).unwrap();
        assert!(
            net.run_until(Duration::from_secs(5), |n| n.nodes[b].samples_of(r).count()
                == 1),
            "sample of {size} bytes not delivered"
        );
        let got = net.nodes[b].samples_of(r).next().unwrap();
        assert_eq!(got.payload.len(), size);
        assert!(
            got.payload == data,
            "content of the {size}-byte sample differs"
        );
        net.nodes[b].samples.clear();
    }
    assert!(net.run_until(Duration::from_secs(2), |n| n.nodes[a]
        .participant
        .is_acknowledged_by_all(w)));
    assert_eq!(net.nodes[b].participant.reassembly_bytes(), 0);
    assert_eq!(net.nodes[b].participant.stats().rejected_fragments, 0);
}

#[test]
fn lost_fragments_are_repaired_exactly_with_nack_frag() {
    // Small datagrams: a 1 MiB sample is ~770 fragments, 10% of them lost.
    let (mut net, a, b, w, r) = pair(7, keep_all_writer(), reliable_reader(), 1400);
    net.set_link(a, b, LinkConfig::lossy(0.1, 0.0, 0.0));
    let data = big(1 << 20, 9);
    let lost_before = net.byte_counters.2;
    let now = net.now;
    net.p(a).write(w, alive(&data), now).unwrap();
    assert!(net.run_until(Duration::from_secs(20), |n| n.nodes[b]
        .samples_of(r)
        .count()
        == 1));
    assert!(net.nodes[b].samples_of(r).next().unwrap().payload == data);
    let lost = net.byte_counters.2 - lost_before;
    let ws = *net.nodes[a].participant.stats();
    let rs = *net.nodes[b].participant.stats();
    println!(
        "lost {lost} bytes on the wire; resent {} bytes in {} fragments; {} NACK_FRAGs, {} HEARTBEAT_FRAGs",
        ws.resent_bytes, ws.resent_fragments, rs.sent_nack_frags, ws.sent_heartbeat_frags
    );
    assert!(rs.sent_nack_frags > 0);
    assert!(ws.sent_heartbeat_frags > 0);
    assert!(ws.resent_fragments > 0);
    // Exactness: resent bytes track the lost bytes (repairs are lost too, at
    // 10%), far from resending the whole sample.
    assert!(
        ws.resent_bytes < lost * 3 / 2 + 20_000,
        "resent {} for {lost} lost",
        ws.resent_bytes
    );
    assert!(
        ws.resent_bytes > lost / 2,
        "resent {} for {lost} lost",
        ws.resent_bytes
    );
    assert!(ws.resent_bytes < (data.len() / 4) as u64);
    assert_eq!(net.nodes[b].participant.reassembly_bytes(), 0);
}

/// A writer of large samples stays within what a reader reassembles: while
/// the reader's acknowledgements do not come back, it pushes no more than
/// 16 MiB of samples beyond them (a FerroDDS reader keeps 32 MiB of
/// incomplete samples per writer; further ahead, it drops the newest and
/// they are all sent again), and everything goes once they come.
#[test]
fn fragmented_samples_stay_within_the_readers_reassembly_window() {
    let (mut net, a, b, w, r) = pair(11, keep_all_writer(), reliable_reader(), 65000);
    net.set_link(b, a, LinkConfig::lossy(1.0, 0.0, 0.0));
    net.record = true;
    let n = 40u32;
    let size = 1 << 20;
    for i in 0..n {
        let now = net.now;
        net.p(a).write(w, alive(&big(size, i)), now).unwrap();
    }
    // (Long enough for the pacer's initial 100 Mbit/s to push all 40.)
    net.run_for(Duration::from_secs(5));
    let mut sns = std::collections::BTreeSet::new();
    for d in net.recorded().iter().filter(|d| d.from == a) {
        for s in MessageView::parse(&d.data).unwrap().submessages() {
            if let Ok(Submessage::DataFrag(f)) = s {
                sns.insert(f.writer_sn.0);
            }
        }
    }
    let pushed = sns.len();
    println!("{pushed} samples pushed");
    assert!(
        (8..=16).contains(&pushed),
        "{pushed} samples of 1 MiB pushed without acknowledgements"
    );
    net.set_link(b, a, LinkConfig::default());
    assert!(
        net.run_until(Duration::from_secs(10), |net| net.nodes[b]
            .samples_of(r)
            .count()
            == n as usize),
        "{} of {n} delivered",
        net.nodes[b].samples_of(r).count()
    );
    for (i, s) in net.nodes[b].samples_of(r).enumerate() {
        assert!(s.payload == big(size, i as u32), "sample {i} corrupted");
    }
    let rs = net.nodes[b].participant.stats();
    assert_eq!(rs.reassembly_overflows, 0);
    assert_eq!(rs.rejected_fragments, 0);
}

/// A KEEP_LAST writer is not held up by that window: a reliable reader
/// that stopped answering (its ACKNACKs lost) does not keep the samples from
/// another reader until its lease ends.
#[test]
fn a_silent_reader_does_not_hold_up_a_keep_last_writer() {
    let mut net = Network::new(12);
    let cfgs: Vec<_> = (0..3)
        .map(|i| {
            let mut c = Network::config_for(i, 0);
            c.max_message_size = 65000;
            c
        })
        .collect();
    let [a, b, c] = [0, 1, 2].map(|i| net.add_participant_with(cfgs[i].clone()));
    let now = net.now;
    let wq = WriterQos {
        history: History::KeepLast(64),
        ..WriterQos::default()
    };
    let w = net.p(a).create_writer(writer("T", wq), now).unwrap();
    let rb = net
        .p(b)
        .create_reader(reader("T", reliable_reader()), now)
        .unwrap();
    let rc = net
        .p(c)
        .create_reader(reader("T", reliable_reader()), now)
        .unwrap();
    assert!(net.run_until(Duration::from_secs(2), |n| {
        n.nodes[a].participant.matched_reader_count(w) == 2
            && n.nodes[b].participant.matched_writer_count(rb) == 1
            && n.nodes[c].participant.matched_writer_count(rc) == 1
    }));
    net.run_for(Duration::from_millis(50));
    net.set_link(c, a, LinkConfig::lossy(1.0, 0.0, 0.0));
    let n = 40u32;
    for i in 0..n {
        let now = net.now;
        net.p(a).write(w, alive(&big(1 << 20, i)), now).unwrap();
    }
    assert!(
        net.run_until(Duration::from_secs(5), |net| net.nodes[b]
            .samples_of(rb)
            .count()
            == n as usize),
        "{} of {n} delivered",
        net.nodes[b].samples_of(rb).count()
    );
}

#[test]
fn best_effort_drops_incomplete_samples_cleanly() {
    let wq = WriterQos {
        reliability: Reliability::BEST_EFFORT,
        ..WriterQos::default()
    };
    let (mut net, a, b, w, r) = pair(3, wq, ReaderQos::default(), 1400);
    net.set_link(a, b, LinkConfig::lossy(0.05, 0.0, 0.0));
    let n = 40u32;
    for i in 0..n {
        let data = big(20_000, i);
        let now = net.now;
        net.p(a).write(w, alive(&data), now).unwrap();
        net.flush(a);
        net.run_for(Duration::from_millis(5));
    }
    let got: Vec<(i64, Vec<u8>)> = net.nodes[b]
        .samples_of(r)
        .map(|s| (s.sequence_number.0, s.payload.clone()))
        .collect();
    assert!(!got.is_empty() && got.len() < n as usize, "{}", got.len());
    for (sn, p) in &got {
        assert!(*p == big(20_000, (*sn - 1) as u32), "sample {sn} corrupted");
    }
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0));
    // Whatever stayed incomplete is released (newer sample or timeout).
    net.set_link(a, b, LinkConfig::default());
    net.run_for(Duration::from_secs(4));
    assert_eq!(net.nodes[b].participant.reassembly_bytes(), 0);
    let data = big(20_000, 99);
    let now = net.now;
    net.p(a).write(w, alive(&data), now).unwrap();
    net.run_for(Duration::from_millis(10));
    assert!(net.nodes[b].samples_of(r).last().unwrap().payload == data);
}

#[test]
fn fragment_size_is_configurable_per_writer() {
    let wq = WriterQos {
        fragment_size: Some(1344),
        max_message_size: Some(8000),
        ..keep_all_writer()
    };
    let (mut net, a, b, w, r) = pair(4, wq, reliable_reader(), 65000);
    assert_eq!(net.p(a).writer_fragment_size(w).map(|f| f.0), Some(1344));
    net.record = true;
    let data = big(100_000, 1);
    let now = net.now;
    net.p(a).write(w, alive(&data), now).unwrap();
    assert!(
        net.run_until(Duration::from_secs(2), |n| n.nodes[b].samples_of(r).count()
            == 1)
    );
    assert!(net.nodes[b].samples_of(r).next().unwrap().payload == data);
    let mut frags = 0;
    for d in net.recorded().iter().filter(|d| d.from == a) {
        assert!(d.data.len() <= 8000, "{}", d.data.len());
        for s in MessageView::parse(&d.data).unwrap().submessages() {
            if let Submessage::DataFrag(f) = s.unwrap() {
                assert_eq!(f.fragment_size, 1344);
                assert_eq!(f.sample_size, 100_000);
                frags += 1;
            }
        }
    }
    assert_eq!(frags, 100_000usize.div_ceil(1344));
}

fn batching_writer(b: Batching) -> WriterQos {
    WriterQos {
        batching: b,
        ..keep_all_writer()
    }
}

/// 32-byte samples, every one delivered in order with its content; returns
/// the number of datagrams the writer sent.
fn run_small_samples(batching: Batching, n: u32, gap: Duration) -> u64 {
    let (mut net, a, b, w, r) = pair(5, batching_writer(batching), reliable_reader(), 65000);
    let sent_before = net.nodes[a].participant.stats().sent_datagrams;
    for i in 0..n {
        let mut p = [0u8; 32];
        p[..8].copy_from_slice(&payload(i));
        let now = net.now;
        net.p(a).write(w, alive(&p), now).unwrap();
        net.flush(a);
        net.run_for(gap);
    }
    let now = net.now;
    net.p(a).flush(w, now).unwrap();
    assert!(net.run_until(Duration::from_secs(5), |n2| n2.nodes[b]
        .samples_of(r)
        .count()
        == n as usize));
    let vals: Vec<u32> = net.nodes[b]
        .samples_of(r)
        .map(|s| value(s).unwrap())
        .collect();
    assert_eq!(vals, (0..n).collect::<Vec<_>>());
    let data_datagrams = net.nodes[a].participant.stats().sent_datagrams - sent_before;
    data_datagrams
}

#[test]
fn batching_packs_small_samples_and_delivers_every_one() {
    let n = 2000;
    // Unbatched samples written below congestion control's initial rate go
    // one per datagram (a backlog behind the pacer would share datagrams).
    let plain = run_small_samples(Batching::default(), n, Duration::from_micros(20));
    let batched = run_small_samples(Batching::bytes(8192), n, Duration::ZERO);
    println!("{n} samples of 32 B: {plain} datagrams unbatched, {batched} batched (8192 B)");
    assert!(plain >= u64::from(n));
    // 8192 B batches hold ~100 DATA of 32 B (plus ACKNACK replies to HEARTBEATs).
    assert!(batched * 20 < plain, "{batched} vs {plain}");
}

#[test]
fn batches_flush_when_full_on_flush_on_timer_and_on_write_flush() {
    let bq = Batching {
        enabled: true,
        max_bytes: 320,
        max_samples: 0,
        max_flush_delay: Duration::from_millis(5),
        ..Batching::default()
    };
    let (mut net, a, b, w, r) = pair(6, batching_writer(bq), reliable_reader(), 65000);
    let count = |net: &Network| net.nodes[b].samples_of(r).count();
    let write = |net: &mut Network, i: u32| {
        let mut p = [0u8; 32];
        p[..8].copy_from_slice(&payload(i));
        let now = net.now;
        net.p(a).write(w, alive(&p), now).unwrap();
        net.flush(a);
    };
    // Below max_bytes: held.
    for i in 0..5 {
        write(&mut net, i);
    }
    assert_eq!(net.p(a).pending_bytes(w), 160);
    net.run_for(Duration::from_millis(1));
    assert_eq!(count(&net), 0, "held by batching");
    // Full (10 x 32 B): sent at once.
    for i in 5..10 {
        write(&mut net, i);
    }
    assert_eq!(net.p(a).pending_bytes(w), 0);
    net.run_for(Duration::from_millis(1));
    assert_eq!(count(&net), 10);
    // Timer: the held sample goes after max_flush_delay.
    write(&mut net, 10);
    net.run_for(Duration::from_millis(2));
    assert_eq!(count(&net), 10);
    net.run_for(Duration::from_millis(5));
    assert_eq!(count(&net), 11);
    // Explicit flush.
    write(&mut net, 11);
    let now = net.now;
    net.p(a).flush(w, now).unwrap();
    net.flush(a);
    net.run_for(Duration::from_micros(500));
    assert_eq!(count(&net), 12);
    // Immediate flush on write (latency ping).
    let p = payload(12);
    let now = net.now;
    net.p(a).write_flush(w, alive(&p), now).unwrap();
    net.flush(a);
    net.run_for(Duration::from_micros(500));
    assert_eq!(count(&net), 13);
    let vals: Vec<u32> = net.nodes[b]
        .samples_of(r)
        .map(|s| value(s).unwrap())
        .collect();
    assert_eq!(vals, (0..13).collect::<Vec<_>>());
    // Reliable: the batches carried HEARTBEATs, everything gets acknowledged.
    assert!(net.run_until(Duration::from_secs(1), |n| n.nodes[a]
        .participant
        .is_acknowledged_by_all(w)));
}

#[test]
fn flow_controlled_writer_sends_only_within_its_budget() {
    let wq = WriterQos {
        flow_controlled: true,
        ..keep_all_writer()
    };
    let (mut net, a, b, w, r) = pair(8, wq, reliable_reader(), 8192);
    let data = big(1 << 20, 3);
    let now = net.now;
    net.p(a).write(w, alive(&data), now).unwrap();
    net.flush(a);
    net.run_for(Duration::from_millis(5));
    assert_eq!(
        net.nodes[b].samples_of(r).count(),
        0,
        "nothing without budget"
    );
    assert!(net.p(a).pending_bytes(w) > 0);
    // A budget below one datagram sends nothing (and drops nothing).
    assert_eq!(net.transmit_flow_controlled(a, w, 1000), 0);
    // 100 kB per 10 ms period (10 MB/s, below congestion control's
    // initial rate): about 11 periods for 1 MiB. Within a period the
    // publisher spends its budget as the pacer lets it (as the runtime's
    // publisher thread does).
    let mut periods = 0;
    const BUDGET: usize = 100_000;
    while net.nodes[b].samples_of(r).count() == 0 && periods < 100 {
        let end = net.now.saturating_add(Duration::from_millis(10));
        let mut sent = 0;
        loop {
            sent += net.transmit_flow_controlled(a, w, BUDGET - sent);
            assert!(sent <= BUDGET);
            match net.p(a).pacing_resume_at() {
                Some(t) if t < end && sent + 8192 <= BUDGET && net.p(a).pending_bytes(w) > 0 => {
                    let d = t.0 - net.now.0;
                    net.run_for(Duration::from_nanos(d));
                }
                _ => break,
            }
        }
        net.run_for(Duration::from_nanos(end.0.saturating_sub(net.now.0)));
        periods += 1;
    }
    assert!((10..=12).contains(&periods), "{periods} periods");
    assert!(net.nodes[b].samples_of(r).next().unwrap().payload == data);
    assert_eq!(net.p(a).pending_bytes(w), 0);
}

/// Source timestamps in a batch (Connext's `source_timestamp_resolution`): 30 samples of 32 B
/// written 400 µs apart (by their source timestamps) into one batch. Infinite (the default):
/// every sample carries the first one's timestamp and the datagram one INFO_TS; zero: each
/// its own (30 INFO_TS); 1 ms: a new timestamp whenever a sample is more than 1 ms after the
/// batch's current one (every third sample). Readers get exactly those timestamps.
#[test]
fn batched_samples_share_source_timestamps_within_the_resolution() {
    use ferrodds_wire::Time;
    const STEP: u64 = 400_000; // ns
    let at = |i: u64| {
        let ns = 1_000_000_000 + i * STEP;
        Time {
            seconds: (ns / 1_000_000_000) as i32,
            fraction: (((ns % 1_000_000_000) << 32) / 1_000_000_000) as u32,
        }
    };
    for (resolution, first_of) in [
        (Duration::MAX, (|_| 0) as fn(u64) -> u64),
        (Duration::ZERO, |i| i),
        (Duration::from_millis(1), |i| i - i % 3),
    ] {
        let bq = Batching {
            source_timestamp_resolution: resolution,
            ..Batching::bytes(8192)
        };
        let (mut net, a, b, w, r) = pair(7, batching_writer(bq), reliable_reader(), 65000);
        net.record = true;
        let n = 30u64;
        for i in 0..n {
            let mut p = [0u8; 32];
            p[..8].copy_from_slice(&payload(i as u32));
            let req = ferrodds_rtps::WriteRequest {
                source_timestamp: Some(at(i)),
                ..alive(&p)
            };
            let now = net.now;
            net.p(a).write(w, req, now).unwrap();
        }
        let now = net.now;
        net.p(a).flush(w, now).unwrap();
        net.flush(a);
        assert!(net.run_until(Duration::from_secs(2), |n2| n2.nodes[b]
            .samples_of(r)
            .count()
            == n as usize));
        let got: Vec<Option<Time>> = net.nodes[b]
            .samples_of(r)
            .map(|s| s.source_timestamp)
            .collect();
        let want: Vec<Option<Time>> = (0..n).map(|i| Some(at(first_of(i)))).collect();
        assert_eq!(got, want, "resolution {resolution:?}");
        // One datagram of DATA; its INFO_TS count is the number of distinct timestamps.
        let mut infos = 0;
        let mut datas = 0;
        for d in net.recorded().iter().filter(|d| d.from == a) {
            for s in MessageView::parse(&d.data).unwrap().submessages() {
                match s.unwrap() {
                    Submessage::InfoTs(_) => infos += 1,
                    Submessage::Data(_) => datas += 1,
                    _ => {}
                }
            }
        }
        let distinct = (0..n).filter(|&i| first_of(i) == i).count();
        assert_eq!(datas, n as usize, "resolution {resolution:?}");
        assert_eq!(infos, distinct, "resolution {resolution:?}");
    }
}

/// `batch_join_timestamp` says when a write may skip the clock: only for a sample that joins
/// an open batch sharing one timestamp, fits the batch without filling it, and needs no
/// fragments.
#[test]
fn a_write_joins_a_batch_only_when_it_sends_nothing() {
    use ferrodds_wire::Time;
    let t0 = Time {
        seconds: 3,
        fraction: 0,
    };
    let bq = Batching::bytes(100);
    let (mut net, a, _b, w, _r) = pair(8, batching_writer(bq), reliable_reader(), 65000);
    let (_, max_data) = net.p(a).writer_fragment_size(w).unwrap();
    // No batch open yet.
    assert_eq!(net.p(a).batch_join_timestamp(w, 32), None);
    let p = [0u8; 32];
    let req = ferrodds_rtps::WriteRequest {
        source_timestamp: Some(t0),
        ..alive(&p)
    };
    let now = net.now;
    net.p(a).write(w, req, now).unwrap();
    // 32 held: another 32 joins (64 < 100); 68 would fill it; a fragmented one flushes.
    assert_eq!(net.p(a).batch_join_timestamp(w, 32), Some(t0));
    assert_eq!(net.p(a).batch_join_timestamp(w, 68), None);
    assert_eq!(net.p(a).batch_join_timestamp(w, max_data + 1), None);
    // A finite resolution needs each sample's own time.
    let bq = Batching {
        source_timestamp_resolution: Duration::from_millis(1),
        ..Batching::bytes(100)
    };
    let (mut net, a, _b, w, _r) = pair(9, batching_writer(bq), reliable_reader(), 65000);
    let now = net.now;
    net.p(a).write(w, req, now).unwrap();
    assert_eq!(net.p(a).batch_join_timestamp(w, 32), None);
}

/// Source timestamps a writer is given may be anything: a batch with a finite resolution
/// compares the farthest apart without overflowing (and each keeps its own timestamp).
#[test]
fn batch_resolution_takes_any_timestamps() {
    use ferrodds_wire::Time;
    let bq = Batching {
        source_timestamp_resolution: Duration::from_millis(1),
        ..Batching::bytes(8192)
    };
    let (mut net, a, b, w, r) = pair(10, batching_writer(bq), reliable_reader(), 65000);
    let stamps = [
        Time {
            seconds: i32::MIN,
            fraction: 0,
        },
        Time {
            seconds: i32::MAX,
            fraction: u32::MAX - 1,
        },
        Time {
            seconds: i32::MIN,
            fraction: 1,
        },
    ];
    for (i, t) in stamps.iter().enumerate() {
        let p = payload(i as u32);
        let req = ferrodds_rtps::WriteRequest {
            source_timestamp: Some(*t),
            ..alive(&p)
        };
        let now = net.now;
        net.p(a).write(w, req, now).unwrap();
    }
    let now = net.now;
    net.p(a).flush(w, now).unwrap();
    net.flush(a);
    assert!(
        net.run_until(Duration::from_secs(2), |n| n.nodes[b].samples_of(r).count()
            == 3)
    );
    let got: Vec<_> = net.nodes[b]
        .samples_of(r)
        .map(|s| s.source_timestamp)
        .collect();
    // The third is before the second: within the resolution, it takes the second's.
    assert_eq!(got, vec![Some(stamps[0]), Some(stamps[1]), Some(stamps[1])]);
}
