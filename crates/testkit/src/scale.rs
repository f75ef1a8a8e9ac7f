//! Discovery at scale (issue 20, item 5): `n` participants with `endpoints` endpoints each
//! (half writers, half readers) start together in the simulated network and discover each
//! other until every matching pair is matched. What it costs is counted: discovery
//! datagrams and bytes sent, and the engine's CPU time (the simulation runs only the
//! participants' engines, so its process CPU time is theirs), per participant.
//!
//! Topics form a ring so that the number of matches grows linearly with `n`: writer `k` of
//! participant `i` publishes `T<i>_<k>`, and reader `k` of participant `(i + 1) mod n`
//! subscribes to it. Every participant still learns every other participant's endpoints
//! (SEDP is not filtered by topic), which is the part that grows with the system.

use std::time::{Duration, Instant};

use ferrodds_rtps::{Event, ReaderQos, WriterQos};

use crate::helpers::{reader, writer};
use crate::Network;

/// What one discovery run cost.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleReport {
    /// Participants.
    pub participants: usize,
    /// Endpoints per participant.
    pub endpoints: usize,
    /// Every writer and reader matched its one partner within the time limit.
    pub converged: bool,
    /// Virtual time until convergence (or the limit).
    pub virtual_time: Duration,
    /// Datagrams sent by all participants.
    pub datagrams: u64,
    /// UDP payload bytes sent by all participants.
    pub bytes: u64,
    /// Datagrams delivered to all participants (a multicast datagram counts once per
    /// receiver).
    pub deliveries: u64,
    /// CPU time of the simulation thread (the engines' work plus the simulator's
    /// bookkeeping; from `/proc/thread-self/schedstat`, wall-clock time where that is
    /// missing), so that a loaded machine does not inflate it.
    pub cpu: Duration,
    /// Engine counters summed over all participants: DATA resent, bytes readers reported
    /// lost (the simulated network loses nothing, so any is a misreading), pacing waits,
    /// congestion-control decreases, HEARTBEATs skipped to unresponsive readers, refused
    /// participants and endpoints.
    pub resent_data: u64,
    /// See `resent_data`.
    pub lost_bytes_reported: u64,
    /// See `resent_data`.
    pub pacing_waits: u64,
    /// See `resent_data`.
    pub congestion_decreases: u64,
    /// See `resent_data`.
    pub unresponsive_heartbeats_skipped: u64,
    /// See `resent_data`.
    pub refused: u64,
}

impl ScaleReport {
    /// Bytes sent per participant.
    pub fn bytes_per_participant(&self) -> f64 {
        self.bytes as f64 / self.participants as f64
    }
    /// Datagrams sent per participant.
    pub fn datagrams_per_participant(&self) -> f64 {
        self.datagrams as f64 / self.participants as f64
    }
    /// Engine CPU time per participant.
    pub fn cpu_per_participant(&self) -> Duration {
        self.cpu / self.participants as u32
    }
}

/// Runs discovery of `participants` participants with `endpoints` endpoints each (even, at
/// least 2) until all match or `limit` of virtual time passes.
pub fn discovery_run(
    participants: usize,
    endpoints: usize,
    seed: u64,
    limit: Duration,
) -> ScaleReport {
    assert!(participants >= 2 && endpoints >= 2 && endpoints.is_multiple_of(2));
    let per_side = endpoints / 2;
    let started = Instant::now();
    let cpu0 = thread_cpu();
    let mut net = Network::new(seed);
    // (The condition below only reads events.)
    net.indexed_timers = true;
    let ids: Vec<usize> = (0..participants).map(|_| net.add_participant(0)).collect();
    let now = net.now;
    let t0 = now;
    for &i in &ids {
        let upstream = (i + participants - 1) % participants;
        for k in 0..per_side {
            net.p(i)
                .create_writer(writer(&format!("T{i}_{k}"), WriterQos::default()), now)
                .expect("writer");
            net.p(i)
                .create_reader(
                    reader(&format!("T{upstream}_{k}"), ReaderQos::default()),
                    now,
                )
                .expect("reader");
        }
    }
    // Matched endpoints so far, counted from the events as they arrive (checking every
    // endpoint on every simulation step would cost more than the engines).
    let mut seen = vec![0usize; participants];
    let mut matched = vec![(0usize, 0usize); participants];
    let mut calls = 0u64;
    let target = (per_side, per_side);
    let converged = net.run_until(limit, |n| {
        calls += 1;
        if !calls.is_multiple_of(512) {
            return false;
        }
        for (i, node) in n.nodes.iter().enumerate() {
            for e in &node.events[seen[i]..] {
                match e {
                    Event::PublicationMatched { .. } => matched[i].0 += 1,
                    Event::SubscriptionMatched { .. } => matched[i].1 += 1,
                    _ => {}
                }
            }
            seen[i] = node.events.len();
        }
        matched.iter().all(|m| *m == target)
    });
    let (sent, delivered, _, _) = net.counters;
    let sum = |f: fn(&ferrodds_rtps::Stats) -> u64| -> u64 {
        net.nodes.iter().map(|n| f(n.participant.stats())).sum()
    };
    let resent_data = sum(|s| s.resent_data);
    let lost_bytes_reported = sum(|s| s.lost_bytes_reported);
    let pacing_waits = sum(|s| s.pacing_waits);
    let congestion_decreases = sum(|s| s.congestion_decreases);
    let unresponsive_heartbeats_skipped = sum(|s| s.unresponsive_heartbeats_skipped);
    let refused = sum(|s| s.refused_participants + s.refused_endpoints);
    ScaleReport {
        participants,
        endpoints,
        converged,
        virtual_time: Duration::from_nanos(net.now.0.saturating_sub(t0.0)),
        datagrams: sent,
        bytes: net.byte_counters.0,
        deliveries: delivered,
        cpu: match (cpu0, thread_cpu()) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => started.elapsed(),
        },
        resent_data,
        lost_bytes_reported,
        pacing_waits,
        congestion_decreases,
        unresponsive_heartbeats_skipped,
        refused,
    }
}

/// This thread's CPU time (`/proc/thread-self/schedstat`: nanoseconds on a CPU first).
fn thread_cpu() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}
