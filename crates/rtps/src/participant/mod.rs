//! The participant: entity tables, discovery (SPDP/SEDP), matching, the
//! stateful writer/reader machines and datagram building.
//!
//! [`Participant`] is one struct; its `impl` is spread over these modules:
//!
//! - `mod.rs`: the [`Participant`] struct, construction and shared helpers.
//! - [`commands`]: public commands and queries (writers, writes, counts).
//! - [`reader`]: [`LocalReader`], creating/deleting readers, delivery into the
//!   reader cache (the reader's only history), `take_samples`/`take_sample`,
//!   `read_samples`, `recycle_payload`, unmatching writers.
//! - [`writer`]: [`LocalWriter`], its [`PushPlan`] and [`Sizes`].
//! - [`matching`]: destination locators, writer–reader matching, builtin
//!   (SEDP) endpoints and SEDP-driven discovery of remote endpoints.
//! - [`spdp`]: participant discovery, leases, leaving.
//! - [`receive`]: `handle_datagram` and the DATA/DATA_FRAG handlers.
//! - [`reliability`]: HEARTBEAT/HEARTBEAT_FRAG/GAP (reader side),
//!   ACKNACK/NACK_FRAG (writer side), bookkeeping after acknowledgements.
//! - [`transmit`]: `poll_transmit*`: SPDP, ACKNACKs, pushes and repairs.
//! - [`emit`]: building DATA/DATA_FRAG submessages of a change.
//! - [`work`]: work hints ([`Work`]), timers, `handle_timeout`/`poll_timeout`.

use std::collections::{HashMap, VecDeque};

use crate::api::*;
use crate::codec::{self, Emitter, Sub};
use crate::congestion::{Pacer, RttEstimator};
use crate::discovery::{
    self, bes, EndpointData, SpdpData, SEDP_PUB_READER, SEDP_PUB_WRITER, SEDP_SUB_READER,
    SEDP_SUB_WRITER, SPDP_READER, SPDP_WRITER,
};
use crate::history::{CacheChange, ChangePayload, HistoryCache};
use crate::instance::{
    InstanceState, KeyExtractor, KeyHasherBuilder, ReaderCache, TakeOutcome, TakenSample,
};
use crate::proxy::{
    Change, Outcome, ReaderProxy, Resent, Suppress, WriterProxy, MAX_OUT_OF_ORDER,
    MAX_UNANSWERED_HEARTBEATS, UNRESPONSIVE_HEARTBEAT_DIVISOR,
};
use crate::qos::{
    check_compatible, Durability, EndpointQos, History, ReaderQos, Reliability, ReliabilityKind,
    WriterQos,
};
use crate::reassembly::{FragmentRef, ReassemblyBudget, ReassemblySpares, Rejected};
use crate::security::{AuthState, ParticipantSecurity, SecurityFailure};
use crate::sn_set::SnSet;
use crate::types::{ChangeKind, Timestamp};
use crate::{EntityId, Guid, GuidPrefix, Locator, SequenceNumber, Time};

mod commands;
mod emit;
mod matching;
mod proxies;
mod reader;
mod receive;
mod reliability;
mod secure;
mod spdp;
#[cfg(test)]
mod tests;
mod transmit;
mod work;
mod writer;

use emit::{emit_change, emit_fragment, Emitted};
use proxies::Proxies;
use reader::{builtin_reader, LocalReader};
use spdp::RemoteParticipant;
use work::Work;
use writer::{LocalWriter, PushPlan, Sizes};

/// Authentication failures kept for [`Participant::authentication_failures`].
const MAX_AUTH_FAILURES: usize = 16;

/// Bytes of a datagram not available to a user payload: header, INFO_DST,
/// INFO_TS, DATA header, inline QoS (key hash + status info), a HEARTBEAT and
/// a HEARTBEAT_FRAG.
const DATA_OVERHEAD: usize = 20 + 16 + 12 + 24 + 32 + 32 + 28;
/// Largest payload a DATA carries whole: its 16-bit `octetsToNextHeader` (at most 0xfffc)
/// less the DATA header and the largest inline QoS.
const MAX_WHOLE_DATA: usize = 0xfffc - 20 - 32;
/// Bytes of a datagram holding one DATA_FRAG not available to the fragment:
/// header, INFO_DST, INFO_TS and the DATA_FRAG header.
const FRAG_OVERHEAD: usize = 20 + 16 + 12 + 36;
/// Inline QoS of a first fragment (key hash, status info, sentinel).
const FRAG_KEY_QOS: usize = 4 + 20 + 8;
/// Inline QoS of a first fragment without key hash (status info, sentinel).
const FRAG_STATUS_QOS: usize = 4 + 8;
/// A sample's fragment train carries a HEARTBEAT_FRAG at least every this
/// many fragments (so that readers NACK_FRAG early fragments of a large
/// sample before it ends).
const HBF_EVERY: u32 = 32;
/// HEARTBEAT submessage size.
const HB_LEN: usize = 32;
/// HEARTBEAT_FRAG submessage size.
const HBF_LEN: usize = 28;
/// Most NACK_FRAGs in one ACKNACK datagram.
const MAX_NACK_FRAGS: usize = 8;
/// Bytes of samples a reliable KEEP_ALL writer has pushed beyond the slowest
/// reliable reader's acknowledgement before it starts another fragmented
/// sample (at least two such samples, and always one): a reader keeps the samples it
/// is still reassembling (32 MiB per writer by default in FerroDDS), so a
/// writer further ahead makes it drop the newest ones, all of whose
/// fragments are then sent again.
const FRAG_WINDOW_BYTES: usize = 16 << 20;
/// Smallest configurable fragment size.
const MIN_FRAGMENT: usize = 64;

/// Number of quick SPDP announcements after start.
const INITIAL_ANNOUNCEMENTS: u32 = 5;
/// Their period.
const INITIAL_ANNOUNCEMENT_PERIOD: core::time::Duration = core::time::Duration::from_millis(100);

const IDX_SEDP_PUB: usize = 0;
const IDX_SEDP_SUB: usize = 1;
/// The secure SEDP endpoints (DDS Security only: [`Participant::first_user`] is then 4).
const IDX_SEDP_PUB_SECURE: usize = 2;
const IDX_SEDP_SUB_SECURE: usize = 3;
/// The first user endpoint without DDS Security.
const FIRST_USER: usize = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    SedpPub,
    SedpSub,
}

/// A DomainParticipant's protocol state (sans-IO). See the crate docs for
/// the call contract.
#[derive(Debug)]
pub struct Participant {
    config: ParticipantConfig,
    stats: Stats,
    writers: Vec<Option<LocalWriter>>,
    readers: Vec<Option<LocalReader>>,
    /// Index of the first user writer and reader (the builtin ones come first: 2, or 4 with
    /// the secure SEDP endpoints of DDS Security).
    first_user: usize,
    next_entity_key: u32,
    participants: SeededMap<GuidPrefix, RemoteParticipant>,
    remote_writers: SeededMap<Guid, EndpointData>,
    remote_readers: SeededMap<Guid, EndpointData>,
    /// Remote writers plus readers known per remote participant.
    endpoint_counts: SeededMap<GuidPrefix, u32>,
    spdp_payload: Vec<u8>,
    next_spdp: Timestamp,
    /// Periodic SPDP announcements so far. Each is a new change of the SPDP
    /// writer (its sequence number is this count), so that peers can tell an
    /// older announcement (a replay, or an earlier run of a participant
    /// restarted with the same GUID prefix) from the latest; the immediate
    /// replies to newly discovered participants resend the latest.
    spdp_sent: u32,
    spdp_queue: VecDeque<Vec<Locator>>,
    /// Reused proxy outcome (keeps its capacity: no allocation per sample).
    scratch: Outcome,
    leave_queue: VecDeque<Vec<Locator>>,
    events: VecDeque<Event>,
    /// The last [`MAX_AUTH_FAILURES`] authentication failures and why, oldest first.
    auth_failures: VecDeque<(GuidPrefix, String)>,
    /// Bytes under reassembly in all readers.
    reasm_budget: ReassemblyBudget,
    /// Copies the payloads DATA_REF submessages name (set by a runtime with shared
    /// memory: [`Participant::set_chunk_reader`]).
    chunk_reader: Option<Box<dyn ChunkReader>>,
    /// The datagram being handled came through shared memory (its source locator is of
    /// kind [`Locator::KIND_FERRODDS_SHM`]): only then is a DATA_REF acted on.
    rx_shm: bool,
    /// Payload buffers given back by [`Participant::recycle_payload`], reused
    /// by received samples.
    rx_pool: Vec<Vec<u8>>,
    /// Capacity of the buffers in `rx_pool`, in bytes.
    rx_pool_bytes: usize,
    /// Reassembly's spare chunks and one payload buffer above 64 KiB given back
    /// by [`Participant::recycle_payload`], reused by the next reassembled sample.
    rx_spares: ReassemblySpares,
    /// More buffers above 64 KiB given back (beside `rx_spares.payload`), and their capacity.
    rx_large: Vec<Vec<u8>>,
    rx_large_bytes: usize,
    /// Pending work hints (transmit and timeout).
    work: Work,
    /// Some reader has `notify` set (a `DataAvailable` is due).
    notify: bool,
    /// The known remote participant the last datagram came from and when: its
    /// lease renewal is written back to `participants` only when another
    /// participant is heard or leases are checked, so that a stream of
    /// datagrams from one peer costs no map lookup (that map is keyed by
    /// remote-chosen prefixes, so its hasher is seeded with our own prefix).
    heard: Option<(GuidPrefix, Timestamp)>,
    /// No remote participant's lease ends before this (leases only move later
    /// when heard): the timer scans them only from then on.
    next_lease_check: Timestamp,
    /// `config.heartbeat_period / 20` in nanoseconds: the least time between
    /// two pushes whose HEARTBEAT asks for an ACKNACK (computed once: a
    /// `Duration` division costs tens of instructions per push).
    ack_request_ns: u64,
    /// Round trip to readers, measured by writers' acknowledgement requests.
    rtt: RttEstimator,
    /// `rtt.rto(heartbeat_period)`, recomputed with each round-trip sample
    /// (read on every push).
    rto: core::time::Duration,
    /// Pacing and congestion control of user data and repairs.
    pacer: Pacer,
    /// The highest ACKNACK or NACK_FRAG count sent by any of our readers:
    /// a new writer proxy counts on from there
    /// ([`WriterProxy::continue_counts`]).
    count_floor: i32,
    /// DDS Security (authentication of participants); `None`: security off.
    security: Option<secure::Security>,
}

fn builtin_writer(
    config: &ParticipantConfig,
    eid: EntityId,
    role: Role,
    topic: &str,
) -> LocalWriter {
    let mut w = LocalWriter::new(
        Guid::new(config.guid_prefix, eid),
        role,
        topic.into(),
        String::new(),
        WriterQos {
            reliability: Reliability::RELIABLE,
            durability: Durability::TransientLocal,
            history: History::KeepLast(1),
            ..WriterQos::default()
        },
    );
    w.sizes = Sizes::new(config, &w.qos, w.guid.entity_id);
    w
}

/// Seed of the instance hashers of readers (the GUID prefix is random).
fn hash_seed(prefix: GuidPrefix) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&prefix.0[4..12]);
    u64::from_le_bytes(a)
        ^ u64::from(u32::from_le_bytes([
            prefix.0[0],
            prefix.0[1],
            prefix.0[2],
            prefix.0[3],
        ]))
}

/// A hash map of the engine: deterministic (no OS randomness in a sans-IO
/// engine) and, since its keys may be chosen by remote peers, seeded with
/// this participant's own (random) GUID prefix ([`map_hasher`]).
type SeededMap<K, V> = HashMap<K, V, KeyHasherBuilder>;

/// The hasher of this participant's [`SeededMap`]s.
fn map_hasher(prefix: GuidPrefix) -> KeyHasherBuilder {
    KeyHasherBuilder::new(hash_seed(prefix))
}

/// The reusable proxy outcome, reset.
#[inline]
fn reset_scratch(scratch: &mut Outcome) -> &mut Outcome {
    scratch.delivered.clear();
    scratch.dropped = 0;
    scratch.overflow = 0;
    scratch.lost = 0;
    scratch
}

/// Sets `out` to the distinct locators of `it` (no allocation once `out` has
/// grown to size).
fn fill_dests<'l>(out: &mut Vec<Locator>, it: impl Iterator<Item = &'l Locator>) {
    out.clear();
    out.extend(it.copied());
    out.sort_unstable();
    out.dedup();
}

fn dedup(mut v: Vec<Locator>) -> Vec<Locator> {
    v.sort_unstable();
    v.dedup();
    v
}

/// Our SPDP data (without security parameters).
fn spdp_data(config: &ParticipantConfig) -> SpdpData {
    SpdpData {
        guid_prefix: config.guid_prefix,
        vendor: codec::VENDOR_ID,
        protocol_major: 2,
        domain_id: Some(config.domain_id),
        domain_tag_empty: true,
        builtin_endpoints: bes::PARTICIPANT_ANNOUNCER
            | bes::PARTICIPANT_DETECTOR
            | bes::PUBLICATIONS_ANNOUNCER
            | bes::PUBLICATIONS_DETECTOR
            | bes::SUBSCRIPTIONS_ANNOUNCER
            | bes::SUBSCRIPTIONS_DETECTOR,
        metatraffic_unicast: config.metatraffic_unicast_locators.clone(),
        metatraffic_multicast: config.metatraffic_multicast_locators.clone(),
        default_unicast: config.default_unicast_locators.clone(),
        default_multicast: config.default_multicast_locators.clone(),
        lease_duration: config.lease_duration,
        entity_name: config.entity_name.clone(),
        incarnation: config.incarnation,
        data_refs: false,
        security: None,
    }
}

impl Participant {
    /// Creates a participant; the first SPDP announcement is due at `now`.
    pub fn new(config: ParticipantConfig, now: Timestamp) -> Self {
        let prefix = config.guid_prefix;
        let pacer = Pacer::new(config.congestion_control);
        let rto = config.heartbeat_period;
        let ack_request_ns =
            u64::try_from((config.heartbeat_period / 20).as_nanos()).unwrap_or(u64::MAX);
        let spdp = spdp_data(&config);
        Self {
            reasm_budget: ReassemblyBudget::new(),
            chunk_reader: None,
            rx_shm: false,
            rx_pool: Vec::new(),
            rx_pool_bytes: 0,
            rx_spares: ReassemblySpares::default(),
            rx_large: Vec::new(),
            rx_large_bytes: 0,
            spdp_payload: spdp.encode(),
            writers: vec![
                Some(builtin_writer(
                    &config,
                    SEDP_PUB_WRITER,
                    Role::SedpPub,
                    "DCPSPublication",
                )),
                Some(builtin_writer(
                    &config,
                    SEDP_SUB_WRITER,
                    Role::SedpSub,
                    "DCPSSubscription",
                )),
            ],
            readers: vec![
                Some(builtin_reader(
                    prefix,
                    SEDP_PUB_READER,
                    Role::SedpPub,
                    "DCPSPublication",
                )),
                Some(builtin_reader(
                    prefix,
                    SEDP_SUB_READER,
                    Role::SedpSub,
                    "DCPSSubscription",
                )),
            ],
            first_user: FIRST_USER,
            config,
            stats: Stats::default(),
            next_entity_key: 1,
            participants: HashMap::with_hasher(map_hasher(prefix)),
            remote_writers: HashMap::with_hasher(map_hasher(prefix)),
            remote_readers: HashMap::with_hasher(map_hasher(prefix)),
            endpoint_counts: HashMap::with_hasher(map_hasher(prefix)),
            next_spdp: now,
            spdp_sent: 0,
            spdp_queue: VecDeque::new(),
            scratch: Outcome::default(),
            leave_queue: VecDeque::new(),
            events: VecDeque::new(),
            auth_failures: VecDeque::new(),
            work: Work {
                ack: false,
                push: false,
                push_from: 0,
                repair: false,
                timeout: now,
                stale_timeout: false,
            },
            heard: None,
            next_lease_check: Timestamp(0),
            ack_request_ns,
            notify: false,
            rtt: RttEstimator::default(),
            rto,
            pacer,
            count_floor: 0,
            security: None,
        }
    }

    /// Our GUID prefix.
    pub fn guid_prefix(&self) -> GuidPrefix {
        self.config.guid_prefix
    }

    /// The configuration this participant was created with.
    pub fn config(&self) -> &ParticipantConfig {
        &self.config
    }

    /// Copies the pacer's and round-trip estimator's state into `stats`.
    fn sync_cc_stats(&mut self) {
        let s = &self.pacer.stats;
        self.stats.lost_bytes_reported = s.lost_bytes;
        self.stats.congestion_decreases = s.decreases + s.drains;
        self.stats.congestion_drains = s.drains;
        self.stats.pacing_waits = s.waits;
        self.stats.pacing_rate = self.pacer.rate().map_or(0, |r| r as u64);
        self.stats.srtt_ns = self.rtt.srtt().unwrap_or(0);
    }

    /// Retransmission timeout of tail-loss probes (at most the HEARTBEAT period).
    #[inline]
    fn rto(&self) -> core::time::Duration {
        self.rto
    }

    /// Adds a round-trip sample (ns) and refreshes the cached timeout.
    pub(super) fn rtt_sample(&mut self, now: Timestamp, rtt: u64) {
        self.rtt.sample(rtt);
        self.pacer.on_rtt(now, rtt);
        let max = u64::try_from(self.config.heartbeat_period.as_nanos()).unwrap_or(u64::MAX);
        self.rto = core::time::Duration::from_nanos(self.rtt.rto(max));
    }

    /// Least time between two ACKNACKs of a reader that request data, and how
    /// long fragments may be reordered before a NACK_FRAG: twice the round
    /// trip once measured (at least 100 µs), else 1 ms; at most
    /// `heartbeat_period / 10`.
    fn nack_holdoff(&self) -> core::time::Duration {
        let cap = self.config.heartbeat_period / 10;
        let ns = self.rtt.srtt().map_or(1_000_000, |s| (2 * s).max(100_000));
        core::time::Duration::from_nanos(ns).min(cap)
    }

    /// How long a repaired SN (or fragments of one) is not repaired again
    /// for the same reader ([`Suppress`], whose `pushed` the
    /// caller sets from the writer): [`Self::repair_suppress`], or the
    /// HEARTBEAT period while samples pushed after the repair have not
    /// arrived either. A reader that shows data sent after the repair gets
    /// it again at once.
    fn suppress_windows(&self) -> Suppress {
        Suppress {
            short: self.repair_suppress(),
            long: self.config.heartbeat_period,
            pushed: 0,
        }
    }

    /// How long a repaired SN (or fragments of one) is not repaired again
    /// for the same reader while no data was pushed after it (nothing can
    /// show whether it arrived): the retransmission timeout without its minimum,
    /// or three smoothed round trips if longer (the repair is probably still
    /// on its way, behind a bottleneck's queue that the round trip, measured
    /// when it was emptier, understates), at least 100 µs, at most the
    /// HEARTBEAT period; `heartbeat_period / 20` before a measurement.
    fn repair_suppress(&self) -> core::time::Duration {
        let hb = self.config.heartbeat_period;
        match self.rtt.raw_rto() {
            Some(r) => {
                let queued = 3 * self.rtt.srtt().unwrap_or(0);
                core::time::Duration::from_nanos(r.max(queued).max(100_000)).min(hb)
            }
            None => hb / 20,
        }
    }

    /// Counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// (Security on) The last authentication failures (at most 16), oldest first: the
    /// remote participant and why (the message, property, certificate or rule and the
    /// reason); each was also an [`Event::ParticipantAuthenticationFailed`].
    pub fn authentication_failures(&self) -> impl Iterator<Item = (GuidPrefix, &str)> {
        self.auth_failures.iter().map(|(p, r)| (*p, r.as_str()))
    }

    fn alloc_entity(&mut self, kind: u8) -> Result<EntityId, EngineError> {
        let k = self.next_entity_key;
        if k >= 1 << 24 {
            return Err(EngineError::TooManyEntities);
        }
        self.next_entity_key += 1;
        Ok(EntityId([(k >> 16) as u8, (k >> 8) as u8, k as u8, kind]))
    }

    /// The readers that may be matched with a writer of entity id `writer`: the builtin
    /// ones for a builtin writer, the user ones otherwise.
    #[inline]
    fn readers_for(&self, writer: EntityId) -> core::ops::Range<usize> {
        if writer.0[3] & 0xc0 == 0xc0 {
            0..self.first_user.min(self.readers.len())
        } else {
            self.first_user..self.readers.len()
        }
    }

    fn user_writer(&self, w: WriterId) -> Option<&LocalWriter> {
        if w.0 < self.first_user {
            return None;
        }
        self.writers.get(w.0)?.as_ref()
    }

    fn user_reader(&self, r: ReaderId) -> Option<&LocalReader> {
        if r.0 < self.first_user {
            return None;
        }
        self.readers.get(r.0)?.as_ref()
    }

    fn check_history(h: History) -> Result<(), EngineError> {
        if h == History::KeepLast(0) {
            return Err(EngineError::InconsistentQos("KEEP_LAST depth 0"));
        }
        Ok(())
    }
}
