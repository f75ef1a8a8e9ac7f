//! FerroDDS test kit: a deterministic simulated network of sans-IO RTPS
//! [`Participant`]s.
//!
//! Contract:
//! - Virtual time only ([`Timestamp`]); nothing reads a clock, so a run is a
//!   pure function of the seed, the [`LinkConfig`] and the test's actions.
//! - Every participant gets unique loopback-style locators
//!   (`127.0.0.<n>` unicast, shared SPDP multicast group `239.255.0.1:7400`).
//!   A [`Transmit`] is delivered to every node owning one of its destination
//!   locators (the sender included, for its own unicast/multicast locators).
//! - Each (datagram, receiver) pair independently suffers loss, duplication,
//!   extra reorder delay and fixed + random delay per the [`LinkConfig`] of
//!   that link ([`Network::set_link`]) or the network-wide default.
//! - Bottleneck (like Linux `tc tbf` without a burst allowance): a link
//!   (sender node -> receiver node) with
//!   [`LinkConfig::rate_bytes_per_sec`] set serializes its datagrams one
//!   after the other through a drop-tail FIFO ([`Bottleneck`]). A datagram
//!   of `L` bytes (UDP payload + [`LinkConfig::overhead_bytes`]) offered at
//!   `t` starts at `max(t, busy_until)`, finishes at `start + L / rate` and
//!   is delivered at `finish + delay` (+ jitter, reorder delay). It is
//!   dropped at enqueue (a *queue drop*, counted apart from random loss) if
//!   the backlog (bytes not yet serialized) plus `L` would exceed
//!   [`LinkConfig::queue_bytes`]; an idle link always accepts one datagram.
//!   Random loss and duplication apply after the queue (a lossy wire behind
//!   the shaper): a randomly lost datagram still used link time. Time is kept
//!   exactly (no rounding drift) and each datagram costs O(1). With
//!   `rate_bytes_per_sec: None` (the default) a link is exactly as before:
//!   no queue, no serialization delay, the same random draws.
//! - Each node has a wall clock (what a runtime stamps source timestamps with):
//!   virtual time plus an offset that starts at [`WALL_CLOCK_START_NS`] and moves only
//!   when a test steps it ([`Network::step_wall_clock`], an NTP step or an operator's
//!   `date -s`). The engine never sees it except as the source timestamps
//!   [`Network::write_stamped`] puts on writes.
//! - Events are collected into [`Node::events`]; with [`Node::auto_take`]
//!   (default on) samples are taken into [`Node::samples`] after every input.
//! - [`Network::run_until`] advances until a condition holds or a virtual-time
//!   limit passes, and also stops after a bounded number of steps. A datagram
//!   finds its receivers through a locator index; each step asks every node
//!   for its timer, unless [`Network::indexed_timers`] is set (runs of
//!   hundreds of nodes whose conditions do not call the engines): then a heap
//!   kept as the network calls the engines gives the next timer.
//! - [`Network::counters`] and [`Network::byte_counters`] count datagrams and
//!   bytes sent, delivered, lost (at random) and queue-dropped (e.g. to
//!   compare repair traffic with what the link lost); [`Network::link_stats`]
//!   has the same per directed link, with the first and last delivery times
//!   (to compute goodput); [`Network::transmit_flow_controlled`] sends a
//!   flow-controlled writer's data within a byte budget, as one token-bucket
//!   period of an asynchronous publisher would.
//! - DDS Security: [`Network::add_secure_participant`] adds an engine running a
//!   [`ferrodds_rtps::security::ParticipantSecurity`] plugin; [`secure`] makes a test PKI at
//!   run time and the builtin plugins with seeded entropy (still no clock read: certificates
//!   are checked against the simulated wall clock).
#![forbid(unsafe_code)]

pub mod engine_input;
pub mod flood;
pub mod scale;
pub mod secure;
pub mod skip;

pub use skip::skip;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::Ipv4Addr;
use std::time::Duration;

use std::net::SocketAddrV4;

use ferrodds_capture::{CaptureError, CaptureWriter, Direction};
use ferrodds_rtps::{
    Event, Locator, Participant, ParticipantConfig, ReaderId, Sample, SequenceNumber, Time,
    Timestamp, Transmit, WriteError, WriteRequest, WriterId,
};

/// The wall clock of every node at virtual time 0: 2026-01-01T00:00:00Z, in nanoseconds since
/// the Unix epoch.
pub const WALL_CLOCK_START_NS: i64 = 1_767_225_600_000_000_000;

/// SPDP multicast group used by every simulated participant.
pub const SPDP_GROUP: Ipv4Addr = Ipv4Addr::new(239, 255, 0, 1);

fn socket_addr(l: &Locator) -> Option<SocketAddrV4> {
    if l.kind != Locator::KIND_UDPV4 {
        return None;
    }
    let a = l.address;
    Some(SocketAddrV4::new(
        Ipv4Addr::new(a[12], a[13], a[14], a[15]),
        u16::try_from(l.port).ok()?,
    ))
}

/// Every locator a participant with `cfg` receives on.
fn node_locators(cfg: &ParticipantConfig) -> Vec<Locator> {
    let mut locators = Vec::new();
    locators.extend(cfg.metatraffic_unicast_locators.iter().copied());
    locators.extend(cfg.metatraffic_multicast_locators.iter().copied());
    locators.extend(cfg.default_unicast_locators.iter().copied());
    locators.extend(cfg.default_multicast_locators.iter().copied());
    locators
}

/// splitmix64: a tiny deterministic PRNG.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }

    /// Uniform in `[0, n)` (0 if n is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

/// Fault model applied to every (datagram, receiver) pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkConfig {
    /// Probability a datagram is lost.
    pub loss: f64,
    /// Probability a datagram is delivered twice.
    pub duplicate: f64,
    /// Probability a datagram gets `reorder_delay` extra delay.
    pub reorder: f64,
    /// Extra delay of reordered datagrams.
    pub reorder_delay: Duration,
    /// Fixed delay.
    pub delay: Duration,
    /// Uniform random extra delay in `[0, jitter)`.
    pub jitter: Duration,
    /// Serialization rate of the link's bottleneck in bytes per second
    /// (`None`: infinite, no queue; `Some(0)`: nothing passes, every
    /// datagram is queue-dropped). See [`Bottleneck`].
    pub rate_bytes_per_sec: Option<u64>,
    /// Capacity of the bottleneck's drop-tail queue: the most bytes accepted
    /// but not yet serialized (only with `rate_bytes_per_sec`; default
    /// `usize::MAX`, unbounded).
    pub queue_bytes: usize,
    /// Bytes added to every datagram's UDP payload length when it is
    /// serialized through the bottleneck (default 0; e.g.
    /// [`ETH_IPV4_UDP_OVERHEAD`] to model an Ethernet wire). Counters still
    /// count UDP payload bytes.
    pub overhead_bytes: usize,
}

/// Ethernet (14) + IPv4 (20) + UDP (8) header bytes of a datagram, for
/// [`LinkConfig::overhead_bytes`].
pub const ETH_IPV4_UDP_OVERHEAD: usize = 42;

impl Default for LinkConfig {
    fn default() -> Self {
        Self {
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_delay: Duration::from_millis(2),
            delay: Duration::from_micros(100),
            jitter: Duration::ZERO,
            rate_bytes_per_sec: None,
            queue_bytes: usize::MAX,
            overhead_bytes: 0,
        }
    }
}

impl LinkConfig {
    /// A perfect link (default delay) behind a bottleneck of
    /// `rate_bits_per_sec` whose queue holds `queue` worth of traffic at
    /// that rate (`rate * queue` bytes, like tbf's `latency`), e.g.
    /// `bottleneck(100_000_000, Duration::from_millis(5))` is 100 Mbit/s with
    /// a 62,500-byte queue.
    pub fn bottleneck(rate_bits_per_sec: u64, queue: Duration) -> Self {
        let rate = rate_bits_per_sec / 8;
        let queue_bytes = u128::from(rate) * queue.as_nanos() / NANOS_PER_SEC;
        Self {
            rate_bytes_per_sec: Some(rate),
            queue_bytes: usize::try_from(queue_bytes).unwrap_or(usize::MAX),
            ..Self::default()
        }
    }

    /// A lossy link: loss, duplication and reordering probabilities.
    pub fn lossy(loss: f64, duplicate: f64, reorder: f64) -> Self {
        Self {
            loss,
            duplicate,
            reorder,
            jitter: Duration::from_micros(200),
            ..Self::default()
        }
    }
}

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// The bottleneck of one directed link: a drop-tail FIFO queue in front of a
/// serializer of fixed rate (Linux `tc tbf` without a burst allowance).
///
/// A datagram of `L` bytes offered at `t` starts serializing at
/// `max(t, busy_until)` and finishes `L / rate` later. It is dropped if the
/// backlog at `t` (bytes accepted but not yet serialized, counting the
/// unsent part of the datagram on the wire) is not zero and backlog + `L`
/// exceeds the queue capacity; an idle link accepts any datagram, so a queue
/// smaller than one datagram still passes traffic one datagram at a time.
///
/// Time is kept exactly in units of 1/rate ns (u128), so a long train of
/// datagrams accumulates no rounding error; reported times are rounded up to
/// the next nanosecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bottleneck {
    rate: u64,
    queue_bytes: u64,
    /// When everything accepted has been serialized, in ns × `rate`.
    busy_until: u128,
}

impl Bottleneck {
    /// An idle bottleneck of `rate_bytes_per_sec` (0: drops everything) and
    /// a queue of `queue_bytes`.
    pub fn new(rate_bytes_per_sec: u64, queue_bytes: u64) -> Self {
        Self {
            rate: rate_bytes_per_sec,
            queue_bytes,
            busy_until: 0,
        }
    }

    /// Rate in bytes per second.
    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// Queue capacity in bytes.
    pub fn queue_bytes(&self) -> u64 {
        self.queue_bytes
    }

    /// Changes the rate and the queue capacity; the link stays busy until
    /// [`Bottleneck::idle_at`] (what was accepted keeps its schedule).
    pub fn reconfigure(&mut self, rate_bytes_per_sec: u64, queue_bytes: u64) {
        if rate_bytes_per_sec != self.rate {
            let idle = u128::from(self.idle_at().0);
            self.rate = rate_bytes_per_sec;
            self.busy_until = idle.saturating_mul(u128::from(self.rate));
        }
        self.queue_bytes = queue_bytes;
    }

    fn scaled(&self, t: Timestamp) -> u128 {
        u128::from(t.0).saturating_mul(u128::from(self.rate))
    }

    /// When the link has serialized everything accepted so far.
    pub fn idle_at(&self) -> Timestamp {
        if self.rate == 0 {
            return Timestamp(0);
        }
        let ns = self.busy_until.div_ceil(u128::from(self.rate));
        Timestamp(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// Bytes accepted but not yet serialized at `now` (rounded up).
    pub fn backlog(&self, now: Timestamp) -> u64 {
        let left = self.busy_until.saturating_sub(self.scaled(now));
        u64::try_from(left.div_ceil(NANOS_PER_SEC)).unwrap_or(u64::MAX)
    }

    /// Offers a datagram of `len` bytes at `now` (`now` must not go back in
    /// time). Returns when its last byte has been serialized, or `None` if it
    /// was dropped (queue full, or a rate of 0).
    pub fn offer(&mut self, now: Timestamp, len: u64) -> Option<Timestamp> {
        if self.rate == 0 {
            return None;
        }
        let t = self.scaled(now);
        let start = self.busy_until.max(t);
        // Backlog and sizes in bytes × 10^9 (ns × rate per byte).
        let backlog = start - t;
        let len = u128::from(len) * NANOS_PER_SEC;
        if backlog > 0 && backlog + len > u128::from(self.queue_bytes) * NANOS_PER_SEC {
            return None;
        }
        self.busy_until = start.saturating_add(len);
        Some(self.idle_at())
    }
}

/// Traffic of one directed link (sender node -> receiver node), one entry per
/// (datagram, receiver) pair; bytes are UDP payload bytes. Duplicated
/// datagrams count once in `offered` and twice in `delivered`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Datagrams offered to the link (entering the queue).
    pub offered: u64,
    /// Bytes offered to the link.
    pub offered_bytes: u64,
    /// Datagrams dropped because the bottleneck queue was full.
    pub queue_dropped: u64,
    /// Bytes dropped because the bottleneck queue was full.
    pub queue_dropped_bytes: u64,
    /// Datagrams lost at random ([`LinkConfig::loss`]).
    pub lost: u64,
    /// Bytes lost at random.
    pub lost_bytes: u64,
    /// Datagrams delivered to the receiver.
    pub delivered: u64,
    /// Bytes delivered to the receiver.
    pub delivered_bytes: u64,
    /// Largest bottleneck backlog seen right after accepting a datagram, in
    /// bytes (including [`LinkConfig::overhead_bytes`]).
    pub peak_backlog_bytes: u64,
    /// Virtual time of the first delivery.
    pub first_delivery: Option<Timestamp>,
    /// Virtual time of the last delivery.
    pub last_delivery: Option<Timestamp>,
}

/// One simulated participant and what it produced.
#[derive(Debug)]
pub struct Node {
    /// The engine.
    pub participant: Participant,
    /// Every event polled so far.
    pub events: Vec<Event>,
    /// Samples taken so far (with `auto_take`).
    pub samples: Vec<(ReaderId, Sample)>,
    /// Take samples of all readers after every input (default true).
    pub auto_take: bool,
    /// Readers to auto-take from.
    pub readers: Vec<ReaderId>,
    /// A crashed node sends nothing, receives nothing and runs no timers.
    pub crashed: bool,
    /// This node's wall clock minus virtual time, in nanoseconds (see
    /// [`Network::wall_clock`]).
    pub wall_clock_offset_ns: i64,
    locators: Vec<Locator>,
}

impl Node {
    /// Samples of one reader, in delivery order.
    pub fn samples_of(&self, r: ReaderId) -> impl Iterator<Item = &Sample> {
        self.samples
            .iter()
            .filter(move |(id, _)| *id == r)
            .map(|(_, s)| s)
    }

    /// Number of events satisfying `f`.
    pub fn count_events(&self, f: impl Fn(&Event) -> bool) -> usize {
        self.events.iter().filter(|e| f(e)).count()
    }
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct InFlight {
    at: Timestamp,
    seq: u64,
    from: usize,
    to: usize,
    data: Vec<u8>,
}

/// A recorded datagram (for inspection or pcap export).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram {
    /// When it was sent.
    pub at: Timestamp,
    /// Sending node.
    pub from: usize,
    /// Destinations.
    pub destinations: Vec<Locator>,
    /// Bytes.
    pub data: Vec<u8>,
}

/// The simulated network.
#[derive(Debug)]
pub struct Network {
    /// Current virtual time.
    pub now: Timestamp,
    /// Fault model of every link without an override.
    pub link: LinkConfig,
    /// Per-link overrides, keyed by (sender, receiver) node index.
    pub links: std::collections::HashMap<(usize, usize), LinkConfig>,
    /// Nodes, indexed by the value `add_participant` returned.
    pub nodes: Vec<Node>,
    /// Record every sent datagram into `log` (default off).
    pub record: bool,
    /// Recorded datagrams.
    pub log: Vec<Datagram>,
    /// Datagrams sent (once per datagram), delivered, lost at random and
    /// dropped by a full bottleneck queue (the last three per receiver).
    pub counters: (u64, u64, u64, u64),
    /// Bytes (UDP payload) sent (once per datagram), delivered, lost at
    /// random and dropped by a full bottleneck queue (per receiver).
    pub byte_counters: (u64, u64, u64, u64),
    /// Traffic per directed link (sender, receiver); see
    /// [`Network::link_stats`].
    pub link_stats: std::collections::HashMap<(usize, usize), LinkStats>,
    bottlenecks: std::collections::HashMap<(usize, usize), Bottleneck>,
    rng: Rng,
    queue: BinaryHeap<Reverse<InFlight>>,
    seq: u64,
    buf: Vec<u8>,
    /// The nodes owning each locator (so that a datagram finds its receivers
    /// without visiting every node: discovery of N nodes sends O(N²) datagrams).
    owners: std::collections::HashMap<Locator, Vec<usize>>,
    /// Scratch list of one datagram's receivers.
    receivers: Vec<usize>,
    /// Find the next timer in a heap kept up to date as the network calls the
    /// engines (default off: every step asks every node, which costs O(N) per
    /// step, O(N³) for discovery of N nodes). Only for runs whose `run_until`
    /// conditions do not call the engines: changes made between runs are seen
    /// when `run_until` starts, changes made inside a condition are not.
    pub indexed_timers: bool,
    /// Node timers as last seen (`indexed_timers`), earliest first; an entry
    /// that is not the node's `timer_at` is stale.
    timers: BinaryHeap<Reverse<(Timestamp, usize)>>,
    timer_at: Vec<Option<Timestamp>>,
}

impl Network {
    /// A network with a perfect link (100 µs delay).
    pub fn new(seed: u64) -> Self {
        Self {
            now: Timestamp(1_000_000_000),
            link: LinkConfig::default(),
            links: std::collections::HashMap::new(),
            nodes: Vec::new(),
            record: false,
            log: Vec::new(),
            counters: (0, 0, 0, 0),
            byte_counters: (0, 0, 0, 0),
            link_stats: std::collections::HashMap::new(),
            bottlenecks: std::collections::HashMap::new(),
            rng: Rng::new(seed),
            queue: BinaryHeap::new(),
            seq: 0,
            buf: vec![0; 65536],
            owners: std::collections::HashMap::new(),
            receivers: Vec::new(),
            indexed_timers: false,
            timers: BinaryHeap::new(),
            timer_at: Vec::new(),
        }
    }

    /// Notes node `i`'s timer (`indexed_timers`).
    fn refresh_timer(&mut self, i: usize) {
        if self.timer_at.len() < self.nodes.len() {
            self.timer_at.resize(self.nodes.len(), None);
        }
        let t = if self.nodes[i].crashed {
            None
        } else {
            self.nodes[i].participant.poll_timeout()
        };
        if self.timer_at[i] != t {
            self.timer_at[i] = t;
            if let Some(t) = t {
                self.timers.push(Reverse((t, i)));
            }
        }
    }

    /// The earliest node timer (`indexed_timers`), dropping stale entries.
    fn next_indexed_timer(&mut self) -> Option<Timestamp> {
        while let Some(Reverse((t, i))) = self.timers.peek().copied() {
            if self.timer_at[i] == Some(t) {
                return Some(t);
            }
            self.timers.pop();
        }
        None
    }

    /// Records that node `i` owns `locators` (and no longer what it owned before).
    fn set_owner(&mut self, i: usize, locators: &[Locator]) {
        for v in self.owners.values_mut() {
            v.retain(|&n| n != i);
        }
        for l in locators {
            let v = self.owners.entry(*l).or_default();
            if !v.contains(&i) {
                v.push(i);
                v.sort_unstable();
            }
        }
    }

    /// Default configuration for node `n` in `domain`.
    pub fn config_for(n: usize, domain: u32) -> ParticipantConfig {
        let host = Ipv4Addr::new(127, 0, (n / 250) as u8, (n % 250) as u8 + 1);
        let mut prefix = [0u8; 12];
        prefix[0] = 0x01;
        prefix[1] = 0xfd;
        prefix[4..12].copy_from_slice(&(n as u64 + 1).to_be_bytes());
        let group = Locator::udpv4(SPDP_GROUP, 7400);
        ParticipantConfig {
            domain_id: domain,
            participant_id: n as u32,
            guid_prefix: ferrodds_rtps::GuidPrefix(prefix),
            metatraffic_unicast_locators: vec![Locator::udpv4(host, 7410)],
            metatraffic_multicast_locators: vec![group],
            default_unicast_locators: vec![Locator::udpv4(host, 7411)],
            default_multicast_locators: vec![],
            spdp_destinations: vec![group],
            ..ParticipantConfig::default()
        }
    }

    /// Sets the fault model of the link from node `from` to node `to`.
    pub fn set_link(&mut self, from: usize, to: usize, link: LinkConfig) {
        self.links.insert((from, to), link);
    }

    /// Traffic of the link from node `from` to node `to` so far.
    pub fn link_stats(&self, from: usize, to: usize) -> LinkStats {
        self.link_stats
            .get(&(from, to))
            .copied()
            .unwrap_or_default()
    }

    /// The bottleneck state of the link from node `from` to node `to`, once a
    /// datagram went through it with a rate set.
    pub fn bottleneck(&self, from: usize, to: usize) -> Option<&Bottleneck> {
        self.bottlenecks.get(&(from, to))
    }

    /// Adds a participant with [`Network::config_for`]; returns its index.
    pub fn add_participant(&mut self, domain: u32) -> usize {
        let cfg = Self::config_for(self.nodes.len(), domain);
        self.add_participant_with(cfg)
    }

    /// Adds a participant with a custom configuration.
    pub fn add_participant_with(&mut self, cfg: ParticipantConfig) -> usize {
        let locators = node_locators(&cfg);
        let participant = Participant::new(cfg, self.now);
        self.nodes.push(Node {
            participant,
            events: Vec::new(),
            samples: Vec::new(),
            auto_take: true,
            readers: Vec::new(),
            crashed: false,
            wall_clock_offset_ns: WALL_CLOCK_START_NS,
            locators,
        });
        let i = self.nodes.len() - 1;
        let locators = self.nodes[i].locators.clone();
        self.set_owner(i, &locators);
        self.nodes[i].participant.handle_timeout(self.now);
        self.flush(i);
        i
    }

    /// Adds a participant running DDS Security with the plugins `security` (its GUID
    /// prefix is the plugin's; see [`ferrodds_rtps::security`]).
    pub fn add_secure_participant(
        &mut self,
        cfg: ParticipantConfig,
        security: Box<dyn ferrodds_rtps::security::ParticipantSecurity>,
    ) -> Result<usize, ferrodds_rtps::security::SecurityFailure> {
        let locators = node_locators(&cfg);
        let participant = Participant::with_security(cfg, self.now, security)?;
        self.nodes.push(Node {
            participant,
            events: Vec::new(),
            samples: Vec::new(),
            auto_take: true,
            readers: Vec::new(),
            crashed: false,
            wall_clock_offset_ns: WALL_CLOCK_START_NS,
            locators,
        });
        let i = self.nodes.len() - 1;
        let locators = self.nodes[i].locators.clone();
        self.set_owner(i, &locators);
        self.nodes[i].participant.handle_timeout(self.now);
        self.flush(i);
        Ok(i)
    }

    /// Restarts node `i` as a new process would (after a crash): a fresh
    /// engine with `cfg` (typically the same GUID prefix and locators) and
    /// no entities, running from now. Its earlier events and samples stay in
    /// [`Node::events`] and [`Node::samples`]; datagrams still in flight to
    /// it reach the new engine.
    pub fn restart(&mut self, i: usize, cfg: ParticipantConfig) {
        let locators = node_locators(&cfg);
        let node = &mut self.nodes[i];
        node.participant = Participant::new(cfg, self.now);
        node.readers.clear();
        node.crashed = false;
        node.locators = locators.clone();
        self.set_owner(i, &locators);
        let node = &mut self.nodes[i];
        node.participant.handle_timeout(self.now);
        self.flush(i);
    }

    /// The engine of node `i`.
    pub fn p(&mut self, i: usize) -> &mut Participant {
        &mut self.nodes[i].participant
    }

    /// The wall clock of node `i` now, in nanoseconds since the Unix epoch: virtual time
    /// plus the node's [`Node::wall_clock_offset_ns`].
    pub fn wall_clock_ns(&self, i: usize) -> i64 {
        i64::try_from(self.now.0)
            .unwrap_or(i64::MAX)
            .saturating_add(self.nodes[i].wall_clock_offset_ns)
    }

    /// The wall clock of node `i` now, as an RTPS time.
    pub fn wall_clock(&self, i: usize) -> Time {
        helpers::time_from_nanos(self.wall_clock_ns(i))
    }

    /// Steps the wall clock of node `i` by `delta_ns` (negative: backwards). Virtual time,
    /// the engine's monotonic clock, does not move.
    pub fn step_wall_clock(&mut self, i: usize, delta_ns: i64) {
        let n = &mut self.nodes[i];
        n.wall_clock_offset_ns = n.wall_clock_offset_ns.saturating_add(delta_ns);
    }

    /// Writes `req` with writer `w` of node `i` now, its source timestamp (when `None`) taken
    /// from the node's wall clock as a runtime's `DataWriter::write` does, and sends what it
    /// produced.
    pub fn write_stamped(
        &mut self,
        i: usize,
        w: WriterId,
        mut req: WriteRequest<'_>,
    ) -> Result<SequenceNumber, WriteError> {
        req.source_timestamp = req.source_timestamp.or(Some(self.wall_clock(i)));
        let now = self.now;
        let sn = self.nodes[i].participant.write(w, req, now);
        self.flush(i);
        sn
    }

    /// Drains transmits, events and (with auto-take) samples of node `i`.
    pub fn flush(&mut self, i: usize) {
        let now = self.now;
        while let Some(t) = self.nodes[i].participant.poll_transmit(now, &mut self.buf) {
            self.send(i, t);
        }
        let node = &mut self.nodes[i];
        while let Some(e) = node.participant.poll_event() {
            if let Event::SubscriptionMatched { reader, .. } = e {
                if !node.readers.contains(&reader) {
                    node.readers.push(reader);
                }
            }
            node.events.push(e);
        }
        if node.auto_take {
            for k in 0..node.readers.len() {
                let r = node.readers[k];
                while let Some(s) = node.participant.take_sample(r) {
                    node.samples.push((r, s));
                }
            }
        }
        // Taking samples may have produced ACKNACKs.
        while let Some(t) = self.nodes[i].participant.poll_transmit(now, &mut self.buf) {
            self.send(i, t);
        }
        if self.indexed_timers {
            self.refresh_timer(i);
        }
    }

    /// Sends new data of the flow-controlled writer `w` of node `i` (see
    /// [`Participant::poll_transmit_writer`]) up to `budget` bytes, as one
    /// token-bucket period would; returns the bytes sent.
    pub fn transmit_flow_controlled(&mut self, i: usize, w: WriterId, budget: usize) -> usize {
        let now = self.now;
        let mut sent = 0;
        let mut dests = Vec::new();
        while let Some(len) = self.nodes[i].participant.poll_transmit_writer(
            now,
            w,
            budget - sent,
            &mut self.buf,
            &mut dests,
        ) {
            sent += len;
            self.send(
                i,
                Transmit {
                    len,
                    destinations: dests.clone(),
                },
            );
        }
        self.flush(i);
        sent
    }

    /// Sends the raw datagram `data` from node `from` to `destinations`
    /// now, through the links like any datagram the node's engine sends.
    pub fn inject(&mut self, from: usize, destinations: &[Locator], data: &[u8]) {
        if self.buf.len() < data.len() {
            self.buf.resize(data.len(), 0);
        }
        self.buf[..data.len()].copy_from_slice(data);
        self.send(
            from,
            Transmit {
                len: data.len(),
                destinations: destinations.to_vec(),
            },
        );
    }

    fn send(&mut self, from: usize, t: Transmit) {
        if self.nodes[from].crashed {
            return;
        }
        let data = &self.buf[..t.len];
        self.counters.0 += 1;
        self.byte_counters.0 += data.len() as u64;
        if self.record {
            self.log.push(Datagram {
                at: self.now,
                from,
                destinations: t.destinations.clone(),
                data: data.to_vec(),
            });
        }
        // Receivers in node order, each once.
        let mut receivers = std::mem::take(&mut self.receivers);
        receivers.clear();
        for d in &t.destinations {
            if let Some(v) = self.owners.get(d) {
                receivers.extend_from_slice(v);
            }
        }
        receivers.sort_unstable();
        receivers.dedup();
        for &to in &receivers {
            if self.nodes[to].crashed {
                continue;
            }
            let link = self.links.get(&(from, to)).copied().unwrap_or(self.link);
            let len = data.len() as u64;
            let stats = self.link_stats.entry((from, to)).or_default();
            stats.offered += 1;
            stats.offered_bytes += len;
            // The bottleneck comes first: a datagram lost on the wire behind
            // it still used link time.
            let mut departs = self.now;
            if let Some(rate) = link.rate_bytes_per_sec {
                let queue = link.queue_bytes as u64;
                let b = self
                    .bottlenecks
                    .entry((from, to))
                    .or_insert_with(|| Bottleneck::new(rate, queue));
                b.reconfigure(rate, queue);
                match b.offer(self.now, len + link.overhead_bytes as u64) {
                    Some(done) => {
                        departs = done;
                        stats.peak_backlog_bytes =
                            stats.peak_backlog_bytes.max(b.backlog(self.now));
                    }
                    None => {
                        stats.queue_dropped += 1;
                        stats.queue_dropped_bytes += len;
                        self.counters.3 += 1;
                        self.byte_counters.3 += len;
                        continue;
                    }
                }
            }
            if self.rng.chance(link.loss) {
                stats.lost += 1;
                stats.lost_bytes += len;
                self.counters.2 += 1;
                self.byte_counters.2 += len;
                continue;
            }
            let copies = if self.rng.chance(link.duplicate) {
                2
            } else {
                1
            };
            for _ in 0..copies {
                let mut delay = link.delay;
                let jitter = link.jitter.as_nanos() as u64;
                delay += Duration::from_nanos(self.rng.below(jitter));
                if self.rng.chance(link.reorder) {
                    delay += link.reorder_delay;
                }
                self.seq += 1;
                self.queue.push(Reverse(InFlight {
                    at: departs.saturating_add(delay),
                    seq: self.seq,
                    from,
                    to,
                    data: data.to_vec(),
                }));
            }
        }
        self.receivers = receivers;
    }

    /// Runs one step: delivers the next datagram or fires the next timer.
    /// Returns false if nothing is scheduled before `deadline`.
    pub fn step(&mut self, deadline: Timestamp) -> bool {
        let next_dgram = self.queue.peek().map(|Reverse(f)| f.at);
        let next_timer = if self.indexed_timers {
            self.next_indexed_timer()
        } else {
            self.nodes
                .iter()
                .filter(|n| !n.crashed)
                .filter_map(|n| n.participant.poll_timeout())
                .min()
        };
        let next = match (next_dgram, next_timer) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => return false,
            },
        };
        if next > deadline {
            return false;
        }
        self.now = self.now.max(next);
        if next_dgram.is_some_and(|t| t <= self.now) {
            if let Some(Reverse(f)) = self.queue.pop() {
                if !self.nodes[f.to].crashed {
                    let now = self.now;
                    let len = f.data.len() as u64;
                    self.counters.1 += 1;
                    self.byte_counters.1 += len;
                    let stats = self.link_stats.entry((f.from, f.to)).or_default();
                    stats.delivered += 1;
                    stats.delivered_bytes += len;
                    stats.first_delivery.get_or_insert(now);
                    stats.last_delivery = Some(now);
                    self.nodes[f.to]
                        .participant
                        .handle_datagram(now, None, &f.data);
                    self.flush(f.to);
                }
            }
            return true;
        }
        if self.indexed_timers {
            // The nodes whose timer is due, in node order (as below).
            let mut due = std::mem::take(&mut self.receivers);
            due.clear();
            while let Some(Reverse((t, i))) = self.timers.peek().copied() {
                if t > self.now {
                    break;
                }
                self.timers.pop();
                if self.timer_at[i] == Some(t) {
                    self.timer_at[i] = None;
                    due.push(i);
                }
            }
            due.sort_unstable();
            due.dedup();
            for &i in &due {
                let fire = !self.nodes[i].crashed
                    && self.nodes[i]
                        .participant
                        .poll_timeout()
                        .is_some_and(|t| t <= self.now);
                if fire {
                    let now = self.now;
                    self.nodes[i].participant.handle_timeout(now);
                    self.flush(i);
                }
                self.refresh_timer(i);
            }
            self.receivers = due;
            return true;
        }
        for i in 0..self.nodes.len() {
            if self.nodes[i].crashed {
                continue;
            }
            if self.nodes[i]
                .participant
                .poll_timeout()
                .is_some_and(|t| t <= self.now)
            {
                let now = self.now;
                self.nodes[i].participant.handle_timeout(now);
                self.flush(i);
            }
        }
        true
    }

    /// Runs until `cond` holds (true) or `limit` of virtual time passes
    /// (false). Also gives up after 20 million steps.
    pub fn run_until(
        &mut self,
        limit: Duration,
        mut cond: impl FnMut(&mut Network) -> bool,
    ) -> bool {
        let deadline = self.now.saturating_add(limit);
        for i in 0..self.nodes.len() {
            self.flush(i);
        }
        if self.indexed_timers {
            self.timers.clear();
            self.timer_at.clear();
            for i in 0..self.nodes.len() {
                self.refresh_timer(i);
            }
        }
        for _ in 0..20_000_000u64 {
            if cond(self) {
                return true;
            }
            if !self.step(deadline) {
                self.now = self.now.max(deadline);
                return cond(self);
            }
        }
        false
    }

    /// Runs for `d` of virtual time.
    pub fn run_for(&mut self, d: Duration) {
        self.run_until(d, |_| false);
    }

    /// The recorded datagrams (see [`Network::record`]).
    pub fn recorded(&self) -> &[Datagram] {
        &self.log
    }

    /// Writes the recorded datagrams as pcapng (one interface per node,
    /// synthetic Ethernet/IPv4/UDP headers, one frame per destination; virtual
    /// time is used as the timestamp).
    pub fn write_pcapng(&self, out: impl std::io::Write) -> Result<(), CaptureError> {
        let mut w = CaptureWriter::new(out)?;
        let mut ifaces = Vec::with_capacity(self.nodes.len());
        for i in 0..self.nodes.len() {
            ifaces.push(w.add_interface(&format!("node{i}"))?);
        }
        for d in &self.log {
            let node = &self.nodes[d.from];
            let src = node
                .locators
                .iter()
                .find_map(socket_addr)
                .unwrap_or(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7410));
            for dst in d.destinations.iter().filter_map(socket_addr) {
                w.write_udp(
                    ifaces[d.from],
                    Duration::from_nanos(d.at.0),
                    src,
                    dst,
                    &d.data,
                    Direction::Outbound,
                    None,
                )?;
            }
        }
        w.into_inner()?;
        Ok(())
    }
}

/// Helpers for building endpoints and samples in tests.
pub mod helpers {
    use ferrodds_rtps::{
        ChangeKind, ReaderAttributes, ReaderQos, Sample, Time, WriteRequest, WriterAttributes,
        WriterQos,
    };

    /// Nanoseconds since the Unix epoch as an RTPS time (fraction rounded down).
    pub fn time_from_nanos(ns: i64) -> Time {
        let sub = ns.rem_euclid(1_000_000_000) as u64;
        Time {
            seconds: i32::try_from(ns.div_euclid(1_000_000_000)).unwrap_or(i32::MAX),
            fraction: ((sub << 32) / 1_000_000_000) as u32,
        }
    }

    /// An RTPS time in nanoseconds since the Unix epoch (fraction rounded down).
    pub fn time_to_nanos(t: Time) -> i64 {
        i64::from(t.seconds) * 1_000_000_000
            + ((u64::from(t.fraction) * 1_000_000_000) >> 32) as i64
    }

    /// Writer attributes for `topic` (type `T`).
    pub fn writer(topic: &str, qos: WriterQos) -> WriterAttributes {
        WriterAttributes {
            topic_name: topic.into(),
            type_name: "T".into(),
            keyed: false,
            qos,
        }
    }

    /// Reader attributes for `topic` (type `T`).
    pub fn reader(topic: &str, qos: ReaderQos) -> ReaderAttributes {
        ReaderAttributes {
            topic_name: topic.into(),
            type_name: "T".into(),
            keyed: false,
            qos,
        }
    }

    /// CDR_LE payload carrying `i`.
    pub fn payload(i: u32) -> [u8; 8] {
        let mut p = [0, 1, 0, 0, 0, 0, 0, 0];
        p[4..].copy_from_slice(&i.to_le_bytes());
        p
    }

    /// An alive write request for `payload`.
    pub fn alive(payload: &[u8]) -> WriteRequest<'_> {
        WriteRequest {
            kind: ChangeKind::Alive,
            key_hash: None,
            serialized_payload: payload,
            source_timestamp: None,
        }
    }

    /// The value carried by a [`payload`].
    pub fn value(s: &Sample) -> Option<u32> {
        let b = s.payload.get(4..8)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_spread() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let xs: Vec<u64> = (0..10).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..10).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        let mut r = Rng::new(1);
        let hits = (0..10_000).filter(|_| r.chance(0.3)).count();
        assert!((2700..3300).contains(&hits), "{hits}");
        assert!((0..1000).all(|_| r.below(10) < 10));
    }

    #[test]
    fn two_participants_discover_each_other() {
        let mut net = Network::new(1);
        let a = net.add_participant(0);
        let b = net.add_participant(0);
        let ok = net.run_until(Duration::from_secs(1), |n| {
            n.nodes[a].participant.discovered_participants().len() == 1
                && n.nodes[b].participant.discovered_participants().len() == 1
        });
        assert!(ok);
    }

    #[test]
    fn per_link_loss_is_directional() {
        let mut net = Network::new(2);
        let a = net.add_participant(0);
        let b = net.add_participant(0);
        let c = net.add_participant(0);
        // Everything from a to b is lost: b never hears of a, c does.
        net.set_link(
            a,
            b,
            LinkConfig {
                loss: 1.0,
                ..LinkConfig::default()
            },
        );
        net.run_for(Duration::from_secs(1));
        let pa = net.nodes[a].participant.guid_prefix();
        assert!(!net.nodes[b]
            .participant
            .discovered_participants()
            .contains(&pa));
        assert!(net.nodes[c]
            .participant
            .discovered_participants()
            .contains(&pa));
        assert!(net.counters.2 > 0);
    }

    const MS: Duration = Duration::from_millis(1);

    /// Two nodes that send nothing by themselves (no SPDP destinations), so
    /// the only traffic is what a test injects.
    fn quiet_pair() -> (Network, usize, usize) {
        let mut net = Network::new(3);
        let mut ids = [0; 2];
        for id in &mut ids {
            let mut cfg = Network::config_for(net.nodes.len(), 0);
            cfg.spdp_destinations.clear();
            *id = net.add_participant_with(cfg);
        }
        net.run_for(10 * MS);
        assert_eq!(net.counters.0, 0, "the pair is not quiet");
        (net, ids[0], ids[1])
    }

    fn unicast(n: usize) -> Locator {
        Network::config_for(n, 0).default_unicast_locators[0]
    }

    /// Steps until `deadline`, returning the time of every delivery on the
    /// link `from` -> `to`.
    fn delivery_times(
        net: &mut Network,
        from: usize,
        to: usize,
        deadline: Timestamp,
    ) -> Vec<Timestamp> {
        let mut times = Vec::new();
        let mut seen = net.link_stats(from, to).delivered;
        while net.step(deadline) {
            let d = net.link_stats(from, to).delivered;
            assert!(d <= seen + 1);
            if d > seen {
                times.push(net.now);
                seen = d;
            }
        }
        times
    }

    /// 100 Mbit/s: a 1472-byte UDP payload + 42 header bytes takes 121.12 µs.
    const RATE: u64 = 12_500_000;
    const WIRE: u64 = 1472 + ETH_IPV4_UDP_OVERHEAD as u64;
    const SLOT_NS: u64 = 121_120;

    fn wire_100mbit(queue_datagrams: usize) -> LinkConfig {
        LinkConfig {
            rate_bytes_per_sec: Some(RATE),
            queue_bytes: queue_datagrams * WIRE as usize,
            overhead_bytes: ETH_IPV4_UDP_OVERHEAD,
            ..LinkConfig::default()
        }
    }

    #[test]
    fn bottleneck_serializes_back_to_back_without_drift() {
        // 1000 bytes at 3 MB/s: 333,333.33 ns each; finish k is exact, rounded up.
        let mut b = Bottleneck::new(3_000_000, u64::MAX);
        let t0 = Timestamp(5_000_000_000);
        for k in 1..=10_000u64 {
            let done = b.offer(t0, 1000).unwrap();
            assert_eq!(done.0 - t0.0, (k * 1_000_000_000_000).div_ceil(3_000_000));
        }
        assert_eq!(b.backlog(t0), 10_000 * 1000);
        // After 1 s, 3 MB have left; 1 µs later, 3 bytes more, and the
        // partly sent byte 1 ns later still counts.
        let t1 = t0.saturating_add(Duration::from_secs(1));
        assert_eq!(b.backlog(t1), 7_000 * 1000);
        assert_eq!(b.backlog(Timestamp(t1.0 + 1_000)), 7_000 * 1000 - 3);
        assert_eq!(b.backlog(Timestamp(t1.0 + 1)), 7_000 * 1000);
        // A datagram arriving once the link is idle starts right away.
        let later = Timestamp(b.idle_at().0 + 1_000);
        assert_eq!(b.backlog(later), 0);
        assert_eq!(b.offer(later, 3).unwrap(), Timestamp(later.0 + 1_000));
    }

    #[test]
    fn bottleneck_drops_the_tail_beyond_the_queue() {
        let mut b = Bottleneck::new(1_000_000, 10_000);
        let t0 = Timestamp(1_000_000_000);
        let accepted: Vec<bool> = (0..15).map(|_| b.offer(t0, 1000).is_some()).collect();
        assert_eq!(accepted, (0..15).map(|i| i < 10).collect::<Vec<_>>());
        assert_eq!(b.backlog(t0), 10_000);
        assert_eq!(b.idle_at(), t0.saturating_add(10 * MS));
        // After 1 ms one datagram has left: exactly one more fits.
        let t1 = t0.saturating_add(MS);
        assert!(b.offer(t1, 1000).is_some());
        assert!(b.offer(t1, 1).is_none());
        assert_eq!(b.idle_at(), t0.saturating_add(11 * MS));
    }

    #[test]
    fn bottleneck_edge_cases() {
        // An idle link accepts a datagram larger than its queue, one at a time.
        let mut b = Bottleneck::new(1_000_000, 100);
        let t0 = Timestamp(1_000_000_000);
        assert_eq!(b.offer(t0, 1000), Some(t0.saturating_add(MS)));
        assert_eq!(b.offer(t0, 1), None);
        assert!(b.offer(t0.saturating_add(MS), 1000).is_some());
        // A rate of 0 passes nothing.
        let mut z = Bottleneck::new(0, u64::MAX);
        assert_eq!(z.offer(t0, 1), None);
        assert_eq!(z.backlog(t0), 0);
        // Reconfiguring keeps what was accepted on schedule.
        let mut r = Bottleneck::new(1_000_000, u64::MAX);
        r.offer(t0, 1000).unwrap();
        r.reconfigure(2_000_000, 5_000);
        assert_eq!(r.idle_at(), t0.saturating_add(MS));
        assert_eq!((r.rate(), r.queue_bytes()), (2_000_000, 5_000));
        assert_eq!(
            r.offer(t0, 1000),
            Some(t0.saturating_add(Duration::from_micros(1_500)))
        );
    }

    #[test]
    fn bottleneck_link_config() {
        let d = LinkConfig::default();
        assert_eq!(d.rate_bytes_per_sec, None);
        assert_eq!(d.overhead_bytes, 0);
        let b = LinkConfig::bottleneck(100_000_000, 5 * MS);
        assert_eq!(b.rate_bytes_per_sec, Some(12_500_000));
        assert_eq!(b.queue_bytes, 62_500);
        assert_eq!(
            LinkConfig {
                rate_bytes_per_sec: None,
                queue_bytes: usize::MAX,
                ..b
            },
            d
        );
    }

    #[test]
    fn network_burst_is_spaced_by_serialization_time() {
        let (mut net, a, b) = quiet_pair();
        net.set_link(a, b, wire_100mbit(1000));
        let to = unicast(b);
        let t0 = net.now;
        for i in 0..20u8 {
            net.inject(a, &[to], &[i; 1472]);
        }
        let times = delivery_times(&mut net, a, b, t0.saturating_add(100 * MS));
        let want: Vec<Timestamp> = (1..=20)
            .map(|k| Timestamp(t0.0 + k * SLOT_NS + 100_000))
            .collect();
        assert_eq!(times, want);
        let s = net.link_stats(a, b);
        assert_eq!(
            (s.offered, s.delivered, s.queue_dropped, s.lost),
            (20, 20, 0, 0)
        );
        assert_eq!(s.delivered_bytes, 20 * 1472);
        assert_eq!(s.peak_backlog_bytes, 20 * WIRE);
        assert_eq!(
            (s.first_delivery, s.last_delivery),
            (Some(want[0]), Some(want[19]))
        );
        assert_eq!(net.counters, (20, 20, 0, 0));
        // The other direction is not shaped.
        assert!(net.bottleneck(b, a).is_none());
    }

    #[test]
    fn network_burst_beyond_the_queue_loses_exactly_the_tail() {
        let (mut net, a, b) = quiet_pair();
        // Sizes tell the datagrams apart: the queue holds the first 10.
        let sizes: Vec<usize> = (0..15).map(|i| 1000 + i).collect();
        let queue: usize = sizes[..10].iter().sum();
        net.set_link(
            a,
            b,
            LinkConfig {
                rate_bytes_per_sec: Some(1_000_000),
                queue_bytes: queue,
                ..LinkConfig::default()
            },
        );
        let to = unicast(b);
        let t0 = net.now;
        for &n in &sizes {
            net.inject(a, &[to], &vec![7; n]);
        }
        let times = delivery_times(&mut net, a, b, t0.saturating_add(100 * MS));
        let mut done = 0;
        let want: Vec<Timestamp> = sizes[..10]
            .iter()
            .map(|&n| {
                done += n as u64 * 1000; // ns at 1 MB/s
                Timestamp(t0.0 + done + 100_000)
            })
            .collect();
        assert_eq!(times, want);
        let s = net.link_stats(a, b);
        let tail: u64 = sizes[10..].iter().map(|&n| n as u64).sum();
        assert_eq!((s.delivered, s.queue_dropped, s.lost), (10, 5, 0));
        assert_eq!(s.delivered_bytes, queue as u64);
        assert_eq!(s.queue_dropped_bytes, tail);
        assert_eq!(net.counters, (15, 10, 0, 5));
        assert_eq!(
            net.byte_counters,
            (queue as u64 + tail, queue as u64, 0, tail)
        );
        // Drained: the link takes datagrams again.
        net.inject(a, &[to], &[1; 100]);
        net.run_for(10 * MS);
        assert_eq!(net.link_stats(a, b).delivered, 11);
    }

    #[test]
    fn network_random_loss_is_behind_the_queue() {
        let (mut net, a, b) = quiet_pair();
        net.set_link(
            a,
            b,
            LinkConfig {
                loss: 1.0,
                ..wire_100mbit(10)
            },
        );
        let to = unicast(b);
        let t0 = net.now;
        for _ in 0..15 {
            net.inject(a, &[to], &[0; 1472]);
        }
        // Ten entered the queue and were lost on the wire, using link time;
        // five found it full.
        assert_eq!(net.counters, (15, 0, 10, 5));
        assert_eq!(net.byte_counters, (15 * 1472, 0, 10 * 1472, 5 * 1472));
        let s = net.link_stats(a, b);
        assert_eq!((s.lost, s.lost_bytes), (10, 10 * 1472));
        assert_eq!((s.queue_dropped, s.queue_dropped_bytes), (5, 5 * 1472));
        assert_eq!(
            net.bottleneck(a, b).unwrap().idle_at(),
            Timestamp(t0.0 + 10 * SLOT_NS)
        );
    }

    #[test]
    fn network_default_link_is_unshaped() {
        let (mut net, a, b) = quiet_pair();
        let to = unicast(b);
        let t0 = net.now;
        for _ in 0..20 {
            net.inject(a, &[to], &[0; 1472]);
        }
        let times = delivery_times(&mut net, a, b, t0.saturating_add(100 * MS));
        assert_eq!(
            times,
            vec![t0.saturating_add(Duration::from_micros(100)); 20]
        );
        assert!(net.bottleneck(a, b).is_none());
        assert_eq!(net.counters, (20, 20, 0, 0));
    }

    #[test]
    fn network_goodput_of_an_overdriven_link_is_its_rate() {
        // 10,000 datagrams (14.7 MB) offered at twice 100 Mbit/s.
        let (mut net, a, b) = quiet_pair();
        net.set_link(
            a,
            b,
            LinkConfig {
                overhead_bytes: ETH_IPV4_UDP_OVERHEAD,
                ..LinkConfig::bottleneck(100_000_000, 2 * MS)
            },
        );
        let to = unicast(b);
        let data = [0; 1472];
        for _ in 0..10_000 {
            net.inject(a, &[to], &data);
            net.run_for(Duration::from_nanos(SLOT_NS / 2));
        }
        net.run_for(10 * MS);
        let s = net.link_stats(a, b);
        assert_eq!(s.offered, 10_000);
        assert_eq!(s.delivered + s.queue_dropped, 10_000);
        assert!((4_990..5_030).contains(&s.delivered), "{s:?}");
        assert!(s.peak_backlog_bytes <= 25_000, "{s:?}");
        let busy = s.last_delivery.unwrap().since(s.first_delivery.unwrap());
        let wire_rate = (s.delivered - 1) as f64 * WIRE as f64 / busy.as_secs_f64();
        assert!((wire_rate / RATE as f64 - 1.0).abs() < 1e-6, "{wire_rate}");
    }

    #[test]
    fn crashed_node_is_silent() {
        let mut net = Network::new(1);
        let a = net.add_participant(0);
        net.nodes[a].crashed = true;
        let b = net.add_participant(0);
        net.run_for(Duration::from_secs(1));
        assert!(net.nodes[b]
            .participant
            .discovered_participants()
            .is_empty());
    }
}
