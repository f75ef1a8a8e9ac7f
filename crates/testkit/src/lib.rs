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
//! - Events are collected into [`Node::events`]; with [`Node::auto_take`]
//!   (default on) samples are taken into [`Node::samples`] after every input.
//! - [`Network::run_until`] advances until a condition holds or a virtual-time
//!   limit passes, and also stops after a bounded number of steps.
//! - [`Network::counters`] and [`Network::byte_counters`] count datagrams and
//!   bytes sent, delivered and lost (e.g. to compare repair traffic with what
//!   the link lost); [`Network::transmit_flow_controlled`] sends a
//!   flow-controlled writer's data within a byte budget, as one token-bucket
//!   period of an asynchronous publisher would.
#![forbid(unsafe_code)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::Ipv4Addr;
use std::time::Duration;

use std::net::SocketAddrV4;

use ferrodds_capture::{CaptureError, CaptureWriter, Direction};
use ferrodds_rtps::{
    Event, Locator, Participant, ParticipantConfig, ReaderId, Sample, Timestamp, Transmit, WriterId,
};

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
}

impl Default for LinkConfig {
    fn default() -> Self {
        Self {
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_delay: Duration::from_millis(2),
            delay: Duration::from_micros(100),
            jitter: Duration::ZERO,
        }
    }
}

impl LinkConfig {
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
    /// Datagrams sent, delivered, lost.
    pub counters: (u64, u64, u64),
    /// Bytes sent (once per datagram), delivered and lost (per receiver).
    pub byte_counters: (u64, u64, u64),
    rng: Rng,
    queue: BinaryHeap<Reverse<InFlight>>,
    seq: u64,
    buf: Vec<u8>,
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
            counters: (0, 0, 0),
            byte_counters: (0, 0, 0),
            rng: Rng::new(seed),
            queue: BinaryHeap::new(),
            seq: 0,
            buf: vec![0; 65536],
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

    /// Adds a participant with [`Network::config_for`]; returns its index.
    pub fn add_participant(&mut self, domain: u32) -> usize {
        let cfg = Self::config_for(self.nodes.len(), domain);
        self.add_participant_with(cfg)
    }

    /// Adds a participant with a custom configuration.
    pub fn add_participant_with(&mut self, cfg: ParticipantConfig) -> usize {
        let mut locators = Vec::new();
        locators.extend(cfg.metatraffic_unicast_locators.iter().copied());
        locators.extend(cfg.metatraffic_multicast_locators.iter().copied());
        locators.extend(cfg.default_unicast_locators.iter().copied());
        locators.extend(cfg.default_multicast_locators.iter().copied());
        let participant = Participant::new(cfg, self.now);
        self.nodes.push(Node {
            participant,
            events: Vec::new(),
            samples: Vec::new(),
            auto_take: true,
            readers: Vec::new(),
            crashed: false,
            locators,
        });
        let i = self.nodes.len() - 1;
        self.nodes[i].participant.handle_timeout(self.now);
        self.flush(i);
        i
    }

    /// The engine of node `i`.
    pub fn p(&mut self, i: usize) -> &mut Participant {
        &mut self.nodes[i].participant
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
        for to in 0..self.nodes.len() {
            if self.nodes[to].crashed
                || !t
                    .destinations
                    .iter()
                    .any(|d| self.nodes[to].locators.contains(d))
            {
                continue;
            }
            let link = self.links.get(&(from, to)).copied().unwrap_or(self.link);
            if self.rng.chance(link.loss) {
                self.counters.2 += 1;
                self.byte_counters.2 += data.len() as u64;
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
                    at: self.now.saturating_add(delay),
                    seq: self.seq,
                    to,
                    data: data.to_vec(),
                }));
            }
        }
    }

    /// Runs one step: delivers the next datagram or fires the next timer.
    /// Returns false if nothing is scheduled before `deadline`.
    pub fn step(&mut self, deadline: Timestamp) -> bool {
        let next_dgram = self.queue.peek().map(|Reverse(f)| f.at);
        let next_timer = self
            .nodes
            .iter()
            .filter(|n| !n.crashed)
            .filter_map(|n| n.participant.poll_timeout())
            .min();
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
                    self.counters.1 += 1;
                    self.byte_counters.1 += f.data.len() as u64;
                    let now = self.now;
                    self.nodes[f.to]
                        .participant
                        .handle_datagram(now, None, &f.data);
                    self.flush(f.to);
                }
            }
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
        ChangeKind, ReaderAttributes, ReaderQos, Sample, WriteRequest, WriterAttributes, WriterQos,
    };

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
