//! Clock faults (issue 18): the wall clock stepping an hour backwards or forwards mid-run
//! changes no reliability or lease behaviour.
//!
//! The engine runs on virtual time (the runtime's monotonic clock); each node's wall clock
//! reaches it only as the source timestamps of its writes ([`Network::write_stamped`], as
//! `DataWriter::write` stamps them), carried to the reader in INFO_TS. A reliable flow over a
//! lossy link runs while both nodes' wall clocks step −1 h and +1 h several times, then the
//! link goes quiet (only SPDP keeps the leases), the clocks step again, and finally the
//! writer's participant dies so that the reader's lease on it must expire. The same run
//! without any step (same seed, so the same losses) is the reference: everything but the
//! timestamps must be identical — samples, their order, every engine counter on both sides
//! (data, repairs, ACKNACKs, RTT), every event, the network's counters and the moment the
//! lease expires.

use std::time::Duration;

use ferrodds_rtps::{
    Event, History, ReaderId, ReaderQos, Reliability, Stats, Time, Timestamp, WriterId, WriterQos,
};
use ferrodds_testkit::helpers::{alive, payload, reader, time_to_nanos, value, writer};
use ferrodds_testkit::{LinkConfig, Network};

const HOUR: i64 = 3_600_000_000_000;
const SAMPLES: u32 = 3_000;
/// One sample every 5 ms: the flow lasts 15 s of virtual time.
const PERIOD: Duration = Duration::from_millis(5);
const LEASE: Duration = Duration::from_secs(4);
/// Eight announcements per lease: the 10 % lossy link would need to lose seven in a row
/// to end a lease (at one a second, three in a row, 1 in 1,000, did in one seed's quiet
/// phase once the repair traffic before it changed).
const SPDP_PERIOD: Duration = Duration::from_millis(500);
/// The flow's phases: the clocks step before samples 750, 1500 and 2250.
const PHASE: u32 = 750;
/// (before sample, node, step): node 0 writes, node 1 reads.
const STEPS: [(u32, usize, i64); 6] = [
    (PHASE, 0, -HOUR),
    (PHASE, 1, HOUR),
    (2 * PHASE, 0, HOUR),
    (2 * PHASE, 1, -HOUR),
    (3 * PHASE, 0, HOUR),
    (3 * PHASE, 1, HOUR),
];

#[derive(Debug)]
struct Outcome {
    /// Values the reader took, in order.
    values: Vec<u32>,
    /// Their source timestamps as received (ns since the epoch).
    received: Vec<Option<i64>>,
    /// The source timestamp each sample was written with (ns since the epoch).
    written: Vec<i64>,
    stats: [Stats; 2],
    events: [Vec<Event>; 2],
    counters: (u64, u64, u64, u64),
    /// The writer's repairs (resent samples) at the end of each phase of the flow.
    resent: Vec<u64>,
    /// When the writer's participant died, when the reader last heard from it and when the
    /// reader lost it.
    crashed_at: Timestamp,
    last_heard: Timestamp,
    lost_at: Timestamp,
}

fn lost_or_unmatched(e: &Event) -> bool {
    matches!(
        e,
        Event::ParticipantLost { .. }
            | Event::PublicationUnmatched { .. }
            | Event::SubscriptionUnmatched { .. }
    )
}

fn run(seed: u64, step_clocks: bool) -> Outcome {
    let mut net = Network::new(seed);
    for n in 0..2 {
        let mut c = Network::config_for(n, 0);
        c.lease_duration = LEASE;
        c.spdp_period = SPDP_PERIOD;
        // Small datagrams: loss hits single samples.
        c.max_message_size = 1400;
        net.add_participant_with(c);
    }
    let (a, b) = (0, 1);
    let now = net.now;
    let wq = WriterQos {
        history: History::KeepAll,
        ..WriterQos::default()
    };
    let rq = ReaderQos {
        reliability: Reliability::RELIABLE,
        history: History::KeepAll,
        ..ReaderQos::default()
    };
    let w: WriterId = net.p(a).create_writer(writer("Clock", wq), now).unwrap();
    let r: ReaderId = net.p(b).create_reader(reader("Clock", rq), now).unwrap();
    assert!(
        net.run_until(Duration::from_secs(5), |n| {
            n.nodes[a].participant.matched_reader_count(w) == 1
                && n.nodes[b].participant.matched_writer_count(r) == 1
        }),
        "no match"
    );
    net.link = LinkConfig::lossy(0.1, 0.05, 0.1);

    let mut written = Vec::new();
    let mut resent = Vec::new();
    for i in 0..SAMPLES {
        if i > 0 && i % PHASE == 0 {
            resent.push(net.nodes[a].participant.stats().resent_data);
        }
        for (at, node, delta) in STEPS {
            if step_clocks && at == i {
                net.step_wall_clock(node, delta);
            }
        }
        written.push(net.wall_clock_ns(a));
        net.write_stamped(a, w, alive(&payload(i))).unwrap();
        net.run_for(PERIOD);
    }
    assert!(
        net.run_until(Duration::from_secs(60), |n| {
            n.nodes[b].samples_of(r).count() >= SAMPLES as usize
        }),
        "seed {seed}: {} of {SAMPLES} samples",
        net.nodes[b].samples_of(r).count()
    );
    resent.push(net.nodes[a].participant.stats().resent_data);

    // Quiet: only SPDP keeps the leases, for five lease durations, both clocks stepping
    // halfway.
    net.run_for(LEASE * 5 / 2);
    if step_clocks {
        net.step_wall_clock(a, -HOUR);
        net.step_wall_clock(b, HOUR);
    }
    net.run_for(LEASE * 5 / 2);

    // The writer's participant dies; the reader's clock steps an hour forward at once. Its
    // lease on the writer must end a lease after it was last heard from, not an hour early.
    let crashed_at = net.now;
    net.nodes[a].crashed = true;
    if step_clocks {
        net.step_wall_clock(b, HOUR);
    }
    assert!(
        net.run_until(LEASE * 3, |n| {
            n.nodes[b]
                .events
                .iter()
                .any(|e| matches!(e, Event::ParticipantLost { .. }))
        }),
        "seed {seed}: the dead participant's lease never ended"
    );
    let lost_at = net.now;
    let last_heard = net.link_stats(a, b).last_delivery.expect("deliveries");

    let samples: Vec<_> = net.nodes[b].samples_of(r).collect();
    Outcome {
        values: samples.iter().map(|s| value(s).unwrap()).collect(),
        received: samples
            .iter()
            .map(|s| s.source_timestamp.map(time_to_nanos))
            .collect(),
        written,
        stats: [
            *net.nodes[a].participant.stats(),
            *net.nodes[b].participant.stats(),
        ],
        events: [net.nodes[a].events.clone(), net.nodes[b].events.clone()],
        counters: net.counters,
        resent,
        crashed_at,
        last_heard,
        lost_at,
    }
}

/// RTPS time keeps 2^-32 s: a timestamp comes back within a nanosecond.
fn same_time(a: i64, b: i64) -> bool {
    (a - b).abs() <= 1
}

fn check(seed: u64) {
    let stepped = run(seed, true);
    let reference = run(seed, false);

    // Every sample exactly once, in order.
    assert_eq!(
        stepped.values,
        (0..SAMPLES).collect::<Vec<_>>(),
        "seed {seed}"
    );
    // The steps reached the wire: each sample carries the wall-clock time it was written
    // at, an hour earlier after the first step, back after the second, an hour later after
    // the third.
    for (i, got) in stepped.received.iter().enumerate() {
        let got = got.expect("source timestamp");
        assert!(same_time(got, stepped.written[i]), "sample {i}");
        let shift = got - reference.received[i].expect("source timestamp");
        let want = match i as u32 / PHASE {
            0 => 0,
            1 => -HOUR,
            2 => 0,
            _ => HOUR,
        };
        assert!(same_time(shift, want), "sample {i}: shifted by {shift} ns");
    }
    // Repairs went on in every phase (the link lost data in each).
    assert!(
        stepped.resent.windows(2).all(|p| p[1] > p[0]) && stepped.resent[0] > 0,
        "seed {seed}: repairs per phase {:?}",
        stepped.resent
    );
    // Nothing was lost or rediscovered before the crash: one discovery each, and the only
    // loss is the reader's of the dead participant (and its writer), exactly a lease after
    // it last heard from it (SPDP twice a second, some of it lost).
    for (n, events) in stepped.events.iter().enumerate() {
        let discovered = events
            .iter()
            .filter(|e| matches!(e, Event::ParticipantDiscovered { .. }))
            .count();
        assert_eq!(
            discovered, 1,
            "seed {seed}: node {n} discovered {discovered} times"
        );
    }
    assert!(
        !stepped.events[0].iter().any(lost_or_unmatched),
        "seed {seed}: {:?} vs reference {:?}",
        stepped.events[0]
            .iter()
            .filter(|e| lost_or_unmatched(e))
            .collect::<Vec<_>>(),
        reference.events[0]
            .iter()
            .filter(|e| lost_or_unmatched(e))
            .collect::<Vec<_>>()
    );
    let lease_ended = stepped.lost_at.since(stepped.last_heard);
    assert!(
        stepped.last_heard <= stepped.crashed_at
            && lease_ended >= LEASE
            && lease_ended <= LEASE + Duration::from_millis(1),
        "seed {seed}: lease ended {lease_ended:?} after the last datagram"
    );

    // And the run is the reference run: same samples, counters, events, lease expiry.
    assert_eq!(stepped.values, reference.values);
    assert_eq!(
        stepped.stats, reference.stats,
        "seed {seed}: engine counters"
    );
    assert_eq!(stepped.events, reference.events, "seed {seed}: events");
    assert_eq!(stepped.counters, reference.counters, "seed {seed}: network");
    assert_eq!(stepped.resent, reference.resent);
    assert_eq!(
        (stepped.crashed_at, stepped.last_heard, stepped.lost_at),
        (
            reference.crashed_at,
            reference.last_heard,
            reference.lost_at
        )
    );
    eprintln!(
        "seed {seed}: {SAMPLES} samples, network (sent, delivered, lost, dropped) {:?}, \
         repairs per phase {:?}, lease ended {lease_ended:?} after the last datagram, {:?} after the crash",
        stepped.counters,
        stepped.resent,
        stepped.lost_at.since(stepped.crashed_at)
    );
}

#[test]
fn wall_clock_steps_of_an_hour_change_no_reliability_or_lease_behaviour() {
    for seed in [1, 2] {
        check(seed);
    }
}

/// The conversion the timestamps above rely on.
#[test]
fn wall_clock_times_convert_both_ways() {
    let t = Time {
        seconds: 1_767_225_600,
        fraction: 1 << 31,
    };
    assert_eq!(time_to_nanos(t), 1_767_225_600_500_000_000);
    assert_eq!(
        ferrodds_testkit::helpers::time_from_nanos(1_767_225_600_500_000_000),
        t
    );
    let mut net = Network::new(1);
    let a = net.add_participant(0);
    let before = net.wall_clock_ns(a);
    net.step_wall_clock(a, -HOUR);
    assert_eq!(net.wall_clock_ns(a), before - HOUR);
    assert_eq!(time_to_nanos(net.wall_clock(a)), before - HOUR);
}
