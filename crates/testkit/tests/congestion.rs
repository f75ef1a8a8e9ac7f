//! Reliable throughput through a simulated bottleneck (rate, drop-tail
//! queue, random loss) with the engine's congestion control: the link's
//! capacity is used and nothing is lost, in virtual time (deterministic; a
//! ratio to the link rate, not a wall-clock timing).

use std::time::Duration;

use ferrodds_rtps::{
    History, ReaderId, ReaderQos, Reliability, ResourceLimits, WriteError, WriterId, WriterQos,
};
use ferrodds_testkit::helpers::{alive, payload, reader, value, writer};
use ferrodds_testkit::{LinkConfig, Network, ETH_IPV4_UDP_OVERHEAD};

/// What a bottleneck run measured.
struct Run {
    /// Goodput in bits per second of sample payload.
    goodput: f64,
    /// Datagrams lost on the link (random loss and queue drops, both ways).
    dropped: u64,
    /// Fragments the writer resent.
    resent_fragments: u64,
    /// Samples (whole or fragments) the writer resent.
    resent_data: u64,
}

/// A perftest-like reliable throughput run: a KEEP_ALL writer with a
/// 50-sample send queue writes `size`-byte samples as fast as its history
/// allows for `secs` over a link of `rate` bit/s with a 50 ms queue (tbf's
/// `latency 50ms`), Ethernet framing and random `loss` in both directions,
/// on a 1500-byte MTU. Every sample arrives, once, in order.
fn run(seed: u64, rate: u64, loss: f64, size: usize, secs: u64) -> Run {
    run_batched(seed, rate, loss, size, secs, 0)
}

/// [`run`] with the writer batching up to `batch` bytes (0: no batching);
/// the send queue then holds 50 batches (perftest's `-sendQueueSize`
/// counts batches).
fn run_batched(seed: u64, rate: u64, loss: f64, size: usize, secs: u64, batch: usize) -> Run {
    let mut net = Network::new(seed);
    let per_batch = if batch > 0 { (batch / size).max(1) } else { 1 };
    let mut wq = WriterQos {
        history: History::KeepAll,
        resource_limits: ResourceLimits {
            max_samples: 50 * per_batch as i32,
            ..ResourceLimits::default()
        },
        ..WriterQos::default()
    };
    if batch > 0 {
        wq.batching.enabled = true;
        wq.batching.max_bytes = batch;
    }
    let rq = ReaderQos {
        reliability: Reliability::RELIABLE,
        history: History::KeepAll,
        ..ReaderQos::default()
    };
    let (a, b, w, r) = matched(&mut net, wq, rq);
    net.run_for(Duration::from_millis(50));
    let mut link = LinkConfig::bottleneck(rate, Duration::from_millis(50));
    link.overhead_bytes = ETH_IPV4_UDP_OVERHEAD;
    link.loss = loss;
    net.link = link;
    let start = net.now;
    let end = start.saturating_add(Duration::from_secs(secs));
    let mut data = vec![0u8; size];
    let mut written = 0u32;
    while net.now < end {
        loop {
            data[..8].copy_from_slice(&payload(written));
            let now = net.now;
            match net.p(a).write(w, alive(&data), now) {
                Ok(_) => written += 1,
                Err(WriteError::HistoryFull) => break,
                Err(e) => panic!("{e:?}"),
            }
        }
        net.flush(a);
        net.run_for(Duration::from_micros(500));
    }
    let got = net.nodes[b].samples_of(r).count();
    let goodput = got as f64 * size as f64 * 8.0 / secs as f64;
    // Nothing is lost: the rest arrives, in order, once.
    assert!(
        net.run_until(Duration::from_secs(30), |n| n.nodes[b]
            .samples_of(r)
            .count()
            == written as usize),
        "seed {seed}: {} of {written} samples",
        net.nodes[b].samples_of(r).count()
    );
    let vals: Vec<u32> = net.nodes[b]
        .samples_of(r)
        .map(|s| value(s).unwrap())
        .collect();
    assert_eq!(vals, (0..written).collect::<Vec<_>>());
    let queue_drops = net.counters.3;
    let dropped = net.counters.2 + queue_drops;
    eprintln!(
        "seed {seed} {} Mbit/s loss {loss} {size} B: {:.1} Mbit/s, {written} samples, \
         {dropped} datagrams lost ({queue_drops} by the queue), writer {:?}",
        rate / 1_000_000,
        goodput / 1e6,
        net.nodes[a].participant.stats()
    );
    let stats = net.nodes[a].participant.stats();
    Run {
        goodput,
        dropped,
        resent_fragments: stats.resent_fragments,
        resent_data: stats.resent_data,
    }
}

/// Two participants on a 1500-byte MTU (congestion control on, the default)
/// with a writer (on the first) and a reader (on the second) of topic "T",
/// matched: (writer's participant, reader's participant, writer, reader).
fn matched(net: &mut Network, wq: WriterQos, rq: ReaderQos) -> (usize, usize, WriterId, ReaderId) {
    let mut ca = Network::config_for(0, 0);
    ca.max_message_size = 1472;
    let mut cb = Network::config_for(1, 0);
    cb.max_message_size = 1472;
    assert!(ca.congestion_control, "congestion control is on by default");
    let a = net.add_participant_with(ca);
    let b = net.add_participant_with(cb);
    let now = net.now;
    let w = net.p(a).create_writer(writer("T", wq), now).unwrap();
    let r = net.p(b).create_reader(reader("T", rq), now).unwrap();
    assert!(net.run_until(Duration::from_secs(2), |n| {
        n.nodes[a].participant.matched_reader_count(w) == 1
            && n.nodes[b].participant.matched_writer_count(r) == 1
    }));
    (a, b, w, r)
}

/// The best goodput this link allows for `size`-byte samples: the share of
/// payload in what the wire carries (1376-byte fragments: an unkeyed
/// writer's are sized for up to 96 bytes of RTPS headers, of which each
/// datagram carries at least 68: the RTPS header, INFO_TS and the DATA_FRAG
/// header; 42 bytes of Ethernet/IPv4/UDP each). With 96 the bound would be
/// below what a link kept full achieves.
fn payload_share(size: usize) -> f64 {
    let frags = size.div_ceil(1376).max(1);
    size as f64 / (size + frags * (68 + ETH_IPV4_UDP_OVERHEAD)) as f64
}

#[test]
fn fragmented_63000_fills_100_mbit_without_loss() {
    let r = run(1, 100_000_000, 0.0, 63_000, 4);
    let share = r.goodput / 100e6;
    assert!(share >= 0.85, "{:.1} % of the link", share * 100.0);
    assert!(share <= payload_share(63_000) + 0.01);
    no_redundant_repairs(&r);
}

/// Each lost fragment is resent at most about twice: a reader's repeated
/// NACK_FRAGs for repairs still on their way are mostly not answered again
/// (before this was fixed, 14,247 fragments were resent for 1,289 dropped;
/// now 1.0x without random loss, up to 1.9x with 1 %, where the repair
/// suppression, based on a round trip measured with an empty queue, can
/// expire before a repair crossed a full one).
fn no_redundant_repairs(r: &Run) {
    assert!(
        r.resent_fragments as f64 <= 2.0 * r.dropped as f64 + 64.0,
        "{} fragments resent for {} datagrams lost",
        r.resent_fragments,
        r.dropped
    );
}

#[test]
fn fragmented_63000_fills_100_mbit_with_one_percent_loss() {
    for seed in [1, 2] {
        let r = run(seed, 100_000_000, 0.01, 63_000, 4);
        let share = r.goodput / 100e6;
        assert!(
            share >= 0.82,
            "seed {seed}: {:.1} % of the link",
            share * 100.0
        );
        no_redundant_repairs(&r);
    }
}

#[test]
fn unfragmented_8192_fills_100_mbit_with_one_percent_loss() {
    for seed in [3, 6] {
        let r = run(seed, 100_000_000, 0.01, 8192, 4);
        let share = r.goodput / 100e6;
        assert!(
            share >= 0.85,
            "seed {seed}: {:.1} % of the link",
            share * 100.0
        );
    }
}

#[test]
fn fragmented_63000_fills_10_mbit_with_one_percent_loss() {
    let r = run(4, 10_000_000, 0.01, 63_000, 8);
    let share = r.goodput / 10e6;
    assert!(share >= 0.82, "{:.1} % of the link", share * 100.0);
}

/// A gigabit link that loses 1 % of its datagrams at random: slow start
/// carries the rate to the link instead of ending at the first window with a
/// loss (from where it crept up 1.5 % per 10 ms for over a second: 79.0 % of
/// the link in these 3 s, 86.5 % now).
#[test]
fn unfragmented_8192_fills_1000_mbit_with_one_percent_loss() {
    let r = run(1, 1_000_000_000, 0.01, 8192, 3);
    let share = r.goodput / 1e9;
    assert!(share >= 0.84, "{:.1} % of the link", share * 100.0);
}

/// Batched 32 B samples (8192-byte batches, a send queue of 50 batches:
/// 12,800 samples in flight) fill the link: a lost datagram costs only its
/// own samples. Before readers buffered enough out-of-order samples (and
/// writers stayed within that window), each loss made the reader drop what
/// followed it, which was then resent 256 SNs per ACKNACK while new data
/// kept being dropped: 193,621 samples resent for 4 datagrams lost.
#[test]
fn batched_32_fills_100_mbit() {
    // Without source timestamps a sample costs 40 bytes of RTPS (DATA
    // header, encapsulation, payload) in 1472-byte datagrams of 36: 32 B of
    // payload use at most 54 % of the wire.
    for (seed, loss) in [(1, 0.0), (2, 0.01)] {
        let r = run_batched(seed, 100_000_000, loss, 32, 4, 8192);
        let share = r.goodput / 100e6;
        assert!(
            share >= 0.45,
            "seed {seed} loss {loss}: {:.1} % of the link",
            share * 100.0
        );
        assert!(
            r.resent_data as f64 <= 2.0 * 36.0 * r.dropped as f64 + 512.0,
            "seed {seed} loss {loss}: {} samples resent for {} datagrams lost",
            r.resent_data,
            r.dropped
        );
    }
}

/// Best-effort data goes out as fast as it is written: congestion control
/// paces reliable data (and repairs), whose readers report what they got;
/// a best-effort writer follows that rate only when it asks to
/// (`pace_best_effort`). Writing 3 MB at one instant: unpaced, all of it can
/// be sent at once; paced, a token bucket's worth, the rest as tokens come.
#[test]
fn best_effort_is_not_paced_unless_asked() {
    const SAMPLES: usize = 3000;
    const SIZE: usize = 1000;
    for pace in [false, true] {
        let mut net = Network::new(7);
        let wq = WriterQos {
            reliability: Reliability::BEST_EFFORT,
            history: History::KeepAll,
            pace_best_effort: pace,
            ..WriterQos::default()
        };
        let rq = ReaderQos {
            reliability: Reliability::BEST_EFFORT,
            history: History::KeepAll,
            ..ReaderQos::default()
        };
        let (a, _, w, _) = matched(&mut net, wq, rq);
        let now = net.now;
        let data = vec![7u8; SIZE];
        for _ in 0..SAMPLES {
            net.p(a).write(w, alive(&data), now).unwrap();
        }
        let mut buf = vec![0u8; 65536];
        let mut sent = 0;
        while let Some(t) = net.p(a).poll_transmit(now, &mut buf) {
            sent += t.len;
        }
        let total = SAMPLES * SIZE;
        if pace {
            // A bucket of BURST (ns) at the initial rate, and a datagram.
            let bucket = ferrodds_rtps::congestion::INITIAL_RATE
                * ferrodds_rtps::congestion::BURST as f64
                / 1e9;
            assert!(
                (sent as f64) <= bucket + 1472.0,
                "paced: {sent} bytes at once"
            );
            // The rest follows as the pacer allows.
            for ms in 1..=2000 {
                let t = now.saturating_add(Duration::from_millis(ms));
                while let Some(d) = net.p(a).poll_transmit(t, &mut buf) {
                    sent += d.len;
                }
            }
        }
        assert!(sent >= total, "pace {pace}: {sent} of {total} bytes sent");
    }
}
