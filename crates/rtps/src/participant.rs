//! The participant: entity tables, discovery (SPDP/SEDP), matching, the
//! stateful writer/reader machines and datagram building.

use std::collections::{HashMap, VecDeque};

use crate::api::*;
use crate::codec::{self, Emitter, Sub};
use crate::discovery::{
    self, bes, EndpointData, SpdpData, SEDP_PUB_READER, SEDP_PUB_WRITER, SEDP_SUB_READER,
    SEDP_SUB_WRITER, SPDP_READER, SPDP_WRITER,
};
use crate::history::{CacheChange, HistoryCache};
use crate::instance::{InstanceState, KeyExtractor, ReaderCache, TakeOutcome, TakenSample};
use crate::proxy::{Change, Outcome, ReaderProxy, WriterProxy};
use crate::qos::{
    check_compatible, Durability, EndpointQos, History, ReaderQos, Reliability, ReliabilityKind,
    WriterQos,
};
use crate::reassembly::{FragmentRef, ReassemblyBudget};
use crate::sn_set::SnSet;
use crate::{EntityId, Guid, GuidPrefix, Locator, SequenceNumber, Time};

/// Bytes of a datagram not available to a user payload: header, INFO_DST,
/// INFO_TS, DATA header, inline QoS (key hash + status info), a HEARTBEAT and
/// a HEARTBEAT_FRAG.
const DATA_OVERHEAD: usize = 20 + 16 + 12 + 24 + 32 + 32 + 28;
/// HEARTBEAT submessage size.
const HB_LEN: usize = 32;
/// HEARTBEAT_FRAG submessage size.
const HBF_LEN: usize = 28;
/// Most NACK_FRAGs in one ACKNACK datagram.
const MAX_NACK_FRAGS: usize = 8;
/// Smallest configurable fragment size.
const MIN_FRAGMENT: usize = 64;
/// Most remote participants tracked.
const MAX_PARTICIPANTS: usize = 4096;
/// Most remote endpoints tracked (per kind).
const MAX_REMOTE_ENDPOINTS: usize = 1 << 14;

/// Number of quick SPDP announcements after start.
const INITIAL_ANNOUNCEMENTS: u32 = 5;
/// Their period.
const INITIAL_ANNOUNCEMENT_PERIOD: core::time::Duration = core::time::Duration::from_millis(100);

const IDX_SEDP_PUB: usize = 0;
const IDX_SEDP_SUB: usize = 1;
const FIRST_USER: usize = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    SedpPub,
    SedpSub,
}

#[derive(Debug)]
struct LocalWriter {
    guid: Guid,
    role: Role,
    topic_name: String,
    type_name: String,
    qos: WriterQos,
    history: HistoryCache,
    last_sn: i64,
    pushed: i64,
    /// Next fragment of SN `pushed + 1` to push (1-based).
    push_frag: u32,
    proxies: Vec<ReaderProxy>,
    hb_count: i32,
    next_hb: Option<Timestamp>,
    blocked: bool,
    all_acked_reported: bool,
    /// Payload bytes written but not pushed yet (batching).
    unsent_bytes: usize,
    /// Samples written but not pushed yet (batching).
    unsent_samples: usize,
    /// When the oldest unpushed sample was written (batching).
    batch_since: Option<Timestamp>,
    /// Push everything pending now (explicit flush, large sample).
    flush: bool,
    hbf_count: i32,
    sizes: Sizes,
    /// When a piggy-backed HEARTBEAT last asked readers to acknowledge.
    last_ack_request: Option<Timestamp>,
    /// Some proxy may have repair work ([`ReaderProxy::has_repair_work`]);
    /// false guarantees none has (see [`Work`]).
    repair_work: bool,
    /// How new data is pushed, derived from `proxies`; `None` after they (or
    /// their locators) changed: every such place calls
    /// [`LocalWriter::proxies_changed`].
    plan: Option<PushPlan>,
}

/// Destinations and header choices of a writer's push, derived from its
/// proxies (cached: a push then need not gather and sort the locators).
#[derive(Debug, Clone, PartialEq, Eq)]
struct PushPlan {
    /// Distinct locators of all matched readers.
    dests: Vec<Locator>,
    /// The reader's entity id when there is one reader, else UNKNOWN.
    reader_id: EntityId,
    /// The GUID prefix shared by all readers (then an INFO_DST leads).
    prefix: Option<GuidPrefix>,
    /// A reliable writer with a reliable reader: HEARTBEATs are piggy-backed.
    with_hb: bool,
}

impl PushPlan {
    fn new(proxies: &[ReaderProxy], reliable_writer: bool) -> Self {
        let mut dests = Vec::new();
        fill_dests(&mut dests, proxies.iter().flat_map(|p| p.locators.iter()));
        let (reader_id, prefix) = Self::addressing(proxies);
        Self {
            dests,
            reader_id,
            prefix,
            with_hb: Self::heartbeats(proxies, reliable_writer),
        }
    }

    /// The readerId to address (the one reader's, or UNKNOWN for several) and the
    /// INFO_DST prefix (when every matched reader is in one participant).
    fn addressing(proxies: &[ReaderProxy]) -> (EntityId, Option<GuidPrefix>) {
        let reader_id = match proxies {
            [p] => p.guid.entity_id,
            _ => EntityId::UNKNOWN,
        };
        let prefix = proxies
            .first()
            .map(|p| p.guid.prefix)
            .filter(|first| proxies.iter().all(|p| p.guid.prefix == *first));
        (reader_id, prefix)
    }

    /// Whether pushes piggy-back a HEARTBEAT (a reliable writer with a reliable reader).
    fn heartbeats(proxies: &[ReaderProxy], reliable_writer: bool) -> bool {
        reliable_writer && proxies.iter().any(|p| p.reliable)
    }

    /// Whether this plan is what [`PushPlan::new`] would compute now
    /// (checked in debug builds, without allocating).
    fn is_current(&self, proxies: &[ReaderProxy], reliable_writer: bool) -> bool {
        let fresh_dests = self.dests.windows(2).all(|w| w[0] < w[1])
            && proxies
                .iter()
                .flat_map(|p| p.locators.iter())
                .all(|l| self.dests.binary_search(l).is_ok())
            && self
                .dests
                .iter()
                .all(|d| proxies.iter().any(|p| p.locators.contains(d)));
        fresh_dests
            && (self.reader_id, self.prefix) == Self::addressing(proxies)
            && self.with_hb == Self::heartbeats(proxies, reliable_writer)
    }
}

impl LocalWriter {
    fn new(guid: Guid, role: Role, topic_name: String, type_name: String, qos: WriterQos) -> Self {
        Self {
            guid,
            role,
            topic_name,
            type_name,
            qos,
            history: HistoryCache::default(),
            last_sn: 0,
            pushed: 0,
            push_frag: 1,
            proxies: Vec::new(),
            hb_count: 0,
            next_hb: None,
            blocked: false,
            all_acked_reported: false,
            unsent_bytes: 0,
            unsent_samples: 0,
            batch_since: None,
            flush: false,
            hbf_count: 0,
            last_ack_request: None,
            repair_work: false,
            plan: None,
            sizes: Sizes {
                max_data: 0,
                frag: 0,
                max_message: 0,
            },
        }
    }

    /// When held samples must go out at the latest (batching).
    fn batch_deadline(&self) -> Option<Timestamp> {
        if !self.qos.batching.enabled || self.pushed >= self.last_sn {
            return None;
        }
        self.batch_since
            .map(|t| t.saturating_add(self.qos.batching.max_flush_delay))
    }

    /// Whether pending samples may be pushed now.
    fn push_ready(&self, now: Timestamp) -> bool {
        let b = &self.qos.batching;
        !b.enabled
            || self.flush
            || self.push_frag > 1
            || self.unsent_bytes >= b.max_bytes
            || (b.max_samples > 0 && self.unsent_samples >= b.max_samples)
            || self.batch_deadline().is_some_and(|d| now >= d)
    }

    /// Bookkeeping once SN `pushed` went out whole.
    fn pushed_one(&mut self, len: usize) {
        self.unsent_bytes = self.unsent_bytes.saturating_sub(len);
        self.unsent_samples = self.unsent_samples.saturating_sub(1);
    }

    fn push_done(&mut self) {
        if self.pushed >= self.last_sn {
            self.unsent_bytes = 0;
            self.unsent_samples = 0;
            self.batch_since = None;
            self.flush = false;
        }
    }

    fn reliable(&self) -> bool {
        self.qos.reliability.kind == ReliabilityKind::Reliable
    }

    /// Forgets the push plan: call whenever `proxies` or their locators change.
    fn proxies_changed(&mut self) {
        self.plan = None;
    }

    /// Whether the HEARTBEAT piggy-backed on new data should ask for an
    /// ACKNACK (not final). Asking on every sample doubles the datagrams of a
    /// ping-pong; so ask only when a quarter of a bounded history (64 samples
    /// of an unbounded one) is unacknowledged, or when the last request is
    /// `min_interval` old. Readers answer a final HEARTBEAT anyway when it
    /// shows them missing data, and the periodic HEARTBEAT still asks while a
    /// reader lags.
    #[cfg(test)]
    fn wants_ack(&self, now: Timestamp, min_interval: core::time::Duration) -> bool {
        let ns = u64::try_from(min_interval.as_nanos()).unwrap_or(u64::MAX);
        self.wants_ack_at(now, ns, self.ack_bound())
    }

    /// [`LocalWriter::wants_ack`] with the interval in nanoseconds and the
    /// writer's current [`LocalWriter::ack_bound`] given.
    fn wants_ack_at(&self, now: Timestamp, min_interval_ns: u64, ack_bound: i64) -> bool {
        let every = self.max_samples().map_or(64, |m| (m / 4).max(1)) as i64;
        let unacked = self.pushed.saturating_sub(ack_bound);
        unacked >= every
            || self
                .last_ack_request
                .is_none_or(|t| now.0 >= t.0.saturating_add(min_interval_ns))
    }

    /// Highest SN every reliable reader acknowledged and that was pushed.
    fn ack_bound(&self) -> i64 {
        self.acked_floor().min(self.pushed)
    }

    /// Lowest SN acknowledged by every reliable reader (`i64::MAX` if none
    /// is reliable); unlike [`LocalWriter::ack_bound`] a push does not move it.
    fn acked_floor(&self) -> i64 {
        self.proxies
            .iter()
            .filter(|p| p.reliable)
            .map(|p| p.acked)
            .min()
            .unwrap_or(i64::MAX)
    }

    fn hb_first(&self) -> i64 {
        self.history.first_sn().unwrap_or(self.last_sn + 1)
    }

    fn lagging(&self) -> bool {
        self.reliable() && self.proxies.iter().any(|p| p.lagging(self.last_sn))
    }

    fn all_acked(&self) -> bool {
        !self.proxies.iter().any(|p| p.lagging(self.last_sn))
    }

    fn max_samples(&self) -> Option<usize> {
        match self.qos.history {
            History::KeepAll => self.qos.resource_limits.max_samples_bound(),
            History::KeepLast(_) => None,
        }
    }

    fn has_room(&self) -> bool {
        match self.max_samples() {
            None => true,
            Some(max) => {
                self.history.len() < max
                    || self
                        .history
                        .first_sn()
                        .is_some_and(|f| f <= self.ack_bound())
            }
        }
    }
}

#[derive(Debug)]
struct LocalReader {
    guid: Guid,
    role: Role,
    topic_name: String,
    type_name: String,
    qos: ReaderQos,
    proxies: Vec<WriterProxy>,
    samples: ReaderCache,
    /// Key hashes of changes received without `PID_KEY_HASH` (keyed readers).
    key_extractor: Option<KeyExtractor>,
    notify: bool,
    /// Some proxy may have `ack_pending`; false guarantees none has (see
    /// [`Work`]).
    ack_work: bool,
}

impl LocalReader {
    fn room(&self) -> usize {
        match (self.role, self.qos.history) {
            (Role::User, History::KeepAll) => match self.qos.resource_limits.max_samples_bound() {
                Some(max) => max.saturating_sub(self.samples.len()),
                None => usize::MAX,
            },
            _ => usize::MAX,
        }
    }
}

#[derive(Debug)]
struct RemoteParticipant {
    data: SpdpData,
    last_heard: Timestamp,
}

/// What [`Participant::poll_transmit_into`] and [`Participant::poll_timeout`]
/// may have to do, maintained where the work is created so that neither has
/// to visit every endpoint and proxy on every call (a ping-pong calls both
/// after every operation, and `poll_transmit_into` runs once more than it
/// produces a datagram).
///
/// The flags are conservative: `false` guarantees that there is nothing of
/// that kind to send, `true` means "maybe" (set wherever such work can
/// appear; the scan that finds nothing left clears it). Per-endpoint flags
/// ([`LocalReader::ack_work`], [`LocalWriter::repair_work`]) let a scan skip
/// the endpoints (builtin SEDP ones included) that have nothing to do.
#[derive(Debug)]
struct Work {
    /// Some reader may have a proxy with `ack_pending`.
    ack: bool,
    /// Some writer that is not flow-controlled may have changes not pushed yet.
    push: bool,
    /// No writer below this index has changes to push (when `push` is set):
    /// a push scan starts here, so the poll that follows a push (which finds
    /// nothing more) does not revisit the writers before and including the
    /// one just drained.
    push_from: usize,
    /// Some writer may have a proxy with repair work.
    repair: bool,
    /// A lower bound of every pending deadline ([`Participant::next_deadline`]):
    /// lowered whenever a deadline is set or becomes active, recomputed exactly
    /// by `handle_timeout`. A deadline that moves later or goes away leaves it
    /// early, which costs at most one `handle_timeout` that finds nothing to do.
    timeout: Timestamp,
}

impl Work {
    fn arm(&mut self, t: Timestamp) {
        self.timeout = self.timeout.min(t);
    }

    /// Notes the state of a writer proxy of a reader after it may have
    /// changed (`reader_flag` is the reader's [`LocalReader::ack_work`]).
    fn watch_writer_proxy(&mut self, reader_flag: &mut bool, p: &WriterProxy) {
        if p.ack_pending {
            *reader_flag = true;
            self.ack = true;
            if let Some(d) = p.ack_due {
                self.arm(d);
            }
        }
    }

    /// Notes the state of a reader proxy of a writer after it may have
    /// changed (`writer_flag` is the writer's [`LocalWriter::repair_work`]).
    fn watch_reader_proxy(&mut self, writer_flag: &mut bool, p: &ReaderProxy) {
        if p.has_repair_work() {
            *writer_flag = true;
            self.repair = true;
            if p.repairs_requested() {
                self.arm(p.repair_due);
            }
        }
    }
}

/// A DomainParticipant's protocol state (sans-IO). See the crate docs for
/// the call contract.
#[derive(Debug)]
pub struct Participant {
    config: ParticipantConfig,
    stats: Stats,
    writers: Vec<Option<LocalWriter>>,
    readers: Vec<Option<LocalReader>>,
    next_entity_key: u32,
    participants: HashMap<GuidPrefix, RemoteParticipant>,
    remote_writers: HashMap<Guid, EndpointData>,
    remote_readers: HashMap<Guid, EndpointData>,
    spdp_payload: Vec<u8>,
    next_spdp: Timestamp,
    spdp_sent: u32,
    spdp_queue: VecDeque<Vec<Locator>>,
    /// Reused proxy outcome (keeps its capacity: no allocation per sample).
    scratch: Outcome,
    leave_queue: VecDeque<Vec<Locator>>,
    events: VecDeque<Event>,
    /// Bytes under reassembly in all readers.
    reasm_budget: ReassemblyBudget,
    /// Payload buffers given back by [`Participant::recycle_payload`], reused
    /// by received samples.
    rx_pool: Vec<Vec<u8>>,
    /// Pending work hints (transmit and timeout).
    work: Work,
    /// Some reader has `notify` set (a `DataAvailable` is due).
    notify: bool,
    /// The known remote participant the last datagram came from and when: its
    /// lease renewal is written back to `participants` only when another
    /// participant is heard or leases are checked, so that a stream of
    /// datagrams from one peer costs no map lookup (that map is keyed by
    /// remote-chosen prefixes, so it keeps the DoS-resistant SipHash).
    heard: Option<(GuidPrefix, Timestamp)>,
    /// `config.heartbeat_period / 20` in nanoseconds: the least time between
    /// two pushes whose HEARTBEAT asks for an ACKNACK (computed once: a
    /// `Duration` division costs tens of instructions per push).
    ack_request_ns: u64,
}

/// Most payload buffers [`Participant::recycle_payload`] keeps.
const RX_POOL_MAX: usize = 1024;

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
    w.sizes = Sizes::new(config, &w.qos);
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

fn builtin_reader(prefix: GuidPrefix, eid: EntityId, role: Role, topic: &str) -> LocalReader {
    LocalReader {
        guid: Guid::new(prefix, eid),
        role,
        topic_name: topic.into(),
        type_name: String::new(),
        qos: ReaderQos {
            reliability: Reliability::RELIABLE,
            durability: Durability::TransientLocal,
            history: History::KeepAll,
            ..ReaderQos::default()
        },
        proxies: Vec::new(),
        samples: ReaderCache::new(hash_seed(prefix)),
        key_extractor: None,
        notify: false,
        ack_work: false,
    }
}

/// The reusable proxy outcome, reset.
#[inline]
fn reset_scratch(scratch: &mut Outcome) -> &mut Outcome {
    scratch.delivered.clear();
    scratch.dropped = 0;
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

impl Participant {
    /// Creates a participant; the first SPDP announcement is due at `now`.
    pub fn new(config: ParticipantConfig, now: Timestamp) -> Self {
        let prefix = config.guid_prefix;
        let ack_request_ns =
            u64::try_from((config.heartbeat_period / 20).as_nanos()).unwrap_or(u64::MAX);
        let spdp = SpdpData {
            guid_prefix: prefix,
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
        };
        Self {
            reasm_budget: ReassemblyBudget::new(),
            rx_pool: Vec::new(),
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
            config,
            stats: Stats::default(),
            next_entity_key: 1,
            participants: HashMap::new(),
            remote_writers: HashMap::new(),
            remote_readers: HashMap::new(),
            next_spdp: now,
            spdp_sent: 0,
            spdp_queue: VecDeque::new(),
            scratch: Outcome::default(),
            leave_queue: VecDeque::new(),
            events: VecDeque::new(),
            work: Work {
                ack: false,
                push: false,
                push_from: 0,
                repair: false,
                timeout: now,
            },
            heard: None,
            ack_request_ns,
            notify: false,
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

    /// Queues an SPDP dispose (`DATA(p[UD])`) to the SPDP destinations and to
    /// every known participant, so peers drop us without waiting for the
    /// lease. Call before dropping the participant, then drain `poll_transmit`.
    pub fn announce_leave(&mut self) {
        let mut dests = self.config.spdp_destinations.clone();
        let prefixes: Vec<GuidPrefix> = self.participants.keys().copied().collect();
        for p in prefixes {
            dests.extend(self.locators_for(p, &[], true));
        }
        let dests = dedup(dests);
        if !dests.is_empty() {
            self.leave_queue.push_back(dests);
        }
    }

    /// Counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// GUID prefixes of the currently known remote participants.
    pub fn discovered_participants(&self) -> Vec<GuidPrefix> {
        let mut v: Vec<_> = self.participants.keys().copied().collect();
        v.sort_unstable();
        v
    }

    fn alloc_entity(&mut self, kind: u8) -> Result<EntityId, EngineError> {
        let k = self.next_entity_key;
        if k >= 1 << 24 {
            return Err(EngineError::TooManyEntities);
        }
        self.next_entity_key += 1;
        Ok(EntityId([(k >> 16) as u8, (k >> 8) as u8, k as u8, kind]))
    }

    fn user_writer(&self, w: WriterId) -> Option<&LocalWriter> {
        if w.0 < FIRST_USER {
            return None;
        }
        self.writers.get(w.0)?.as_ref()
    }

    fn user_reader(&self, r: ReaderId) -> Option<&LocalReader> {
        if r.0 < FIRST_USER {
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

    /// Creates a user writer, announces it through SEDP and matches it with
    /// known readers (including this participant's own).
    pub fn create_writer(
        &mut self,
        attrs: WriterAttributes,
        now: Timestamp,
    ) -> Result<WriterId, EngineError> {
        Self::check_history(attrs.qos.history)?;
        let eid = self.alloc_entity(if attrs.keyed { 0x02 } else { 0x03 })?;
        let guid = Guid::new(self.config.guid_prefix, eid);
        let data = EndpointData {
            guid,
            topic_name: attrs.topic_name.clone(),
            type_name: attrs.type_name.clone(),
            qos: EndpointQos::from(&attrs.qos),
            unicast: Vec::new(),
            multicast: Vec::new(),
        };
        let mut w = LocalWriter::new(
            guid,
            Role::User,
            attrs.topic_name,
            attrs.type_name,
            attrs.qos,
        );
        w.sizes = Sizes::new(&self.config, &w.qos);
        self.writers.push(Some(w));
        let id = WriterId(self.writers.len() - 1);
        self.announce_endpoint(IDX_SEDP_PUB, &data, now);
        let readers: Vec<EndpointData> = self.remote_readers.values().cloned().collect();
        for r in &readers {
            self.match_writer_reader(id.0, r);
        }
        // Local loopback: our own readers see this writer like a remote one.
        self.on_remote_writer(data);
        Ok(id)
    }

    /// Creates a user reader, announces it through SEDP and matches it with
    /// known writers (including this participant's own).
    pub fn create_reader(
        &mut self,
        attrs: ReaderAttributes,
        now: Timestamp,
    ) -> Result<ReaderId, EngineError> {
        Self::check_history(attrs.qos.history)?;
        let eid = self.alloc_entity(if attrs.keyed { 0x07 } else { 0x04 })?;
        let guid = Guid::new(self.config.guid_prefix, eid);
        let data = EndpointData {
            guid,
            topic_name: attrs.topic_name.clone(),
            type_name: attrs.type_name.clone(),
            qos: EndpointQos::from(&attrs.qos),
            unicast: Vec::new(),
            multicast: Vec::new(),
        };
        self.readers.push(Some(LocalReader {
            guid,
            role: Role::User,
            topic_name: attrs.topic_name,
            type_name: attrs.type_name,
            qos: attrs.qos,
            proxies: Vec::new(),
            samples: ReaderCache::new(hash_seed(self.config.guid_prefix)),
            key_extractor: None,
            notify: false,
            ack_work: false,
        }));
        let id = ReaderId(self.readers.len() - 1);
        self.announce_endpoint(IDX_SEDP_SUB, &data, now);
        let writers: Vec<EndpointData> = self.remote_writers.values().cloned().collect();
        for w in &writers {
            self.match_reader_writer(id.0, w);
        }
        self.on_remote_reader(data);
        Ok(id)
    }

    fn announce_endpoint(&mut self, sedp: usize, data: &EndpointData, now: Timestamp) {
        let payload = data.encode(self.config.guid_prefix);
        let key = data.guid.to_bytes();
        let _ = self.add_change(sedp, ChangeKind::Alive, Some(key), &payload, None, now);
    }

    fn announce_dispose(&mut self, sedp: usize, guid: Guid, now: Timestamp) {
        let payload = discovery::endpoint_key_payload(guid);
        let _ = self.add_change(
            sedp,
            ChangeKind::NotAliveDisposedUnregistered,
            Some(guid.to_bytes()),
            &payload,
            None,
            now,
        );
    }

    /// Deletes a writer (announces a dispose through SEDP).
    pub fn delete_writer(&mut self, w: WriterId, now: Timestamp) -> Result<(), EngineError> {
        let guid = self.user_writer(w).ok_or(EngineError::UnknownWriter)?.guid;
        self.writers[w.0] = None;
        self.announce_dispose(IDX_SEDP_PUB, guid, now);
        self.remove_remote_writer(guid);
        Ok(())
    }

    /// Deletes a reader (announces a dispose through SEDP).
    pub fn delete_reader(&mut self, r: ReaderId, now: Timestamp) -> Result<(), EngineError> {
        let guid = self.user_reader(r).ok_or(EngineError::UnknownReader)?.guid;
        self.readers[r.0] = None;
        self.announce_dispose(IDX_SEDP_SUB, guid, now);
        self.remove_remote_reader(guid);
        Ok(())
    }

    /// GUID of a live writer.
    pub fn writer_guid(&self, w: WriterId) -> Option<Guid> {
        self.user_writer(w).map(|w| w.guid)
    }

    /// GUID of a live reader.
    pub fn reader_guid(&self, r: ReaderId) -> Option<Guid> {
        self.user_reader(r).map(|r| r.guid)
    }

    /// Largest payload `write` accepts
    /// ([`crate::ReassemblyLimits::max_sample_size`] of the configuration).
    pub fn max_payload_size(&self) -> usize {
        self.config.reassembly.max_sample_size as usize
    }

    /// Bytes currently held for reassembly of fragmented samples by all
    /// readers of this participant (bounded by
    /// [`crate::ReassemblyLimits::max_bytes_total`]).
    pub fn reassembly_bytes(&self) -> usize {
        self.reasm_budget.used()
    }

    /// The fragment size this writer uses for samples too large for one
    /// datagram, and the largest payload it sends as one DATA.
    pub fn writer_fragment_size(&self, w: WriterId) -> Option<(usize, usize)> {
        self.user_writer(w)
            .map(|w| (w.sizes.frag, w.sizes.max_data))
    }

    /// Payload bytes written to `w` but not sent yet (held by batching, or
    /// not yet drained through `poll_transmit`): what a flow controller or
    /// an asynchronous publisher needs to know.
    pub fn pending_bytes(&self, w: WriterId) -> usize {
        self.user_writer(w).map_or(0, |w| {
            if w.pushed >= w.last_sn {
                0
            } else {
                w.unsent_bytes.max(1)
            }
        })
    }

    /// Sends everything `w` holds (batching) on the next `poll_transmit`.
    pub fn flush(&mut self, w: WriterId, now: Timestamp) -> Result<(), EngineError> {
        let _ = now;
        if self.user_writer(w).is_none() {
            return Err(EngineError::UnknownWriter);
        }
        let wi = w.0;
        if let Some(w) = self.writers.get_mut(wi).and_then(Option::as_mut) {
            if w.pushed < w.last_sn {
                w.flush = true;
                self.work.push = true;
                self.work.push_from = self.work.push_from.min(wi);
            }
        }
        Ok(())
    }

    /// [`Participant::write`] followed by [`Participant::flush`]: the sample
    /// (and anything batched before it) goes out on the next
    /// `poll_transmit`, e.g. a latency ping.
    pub fn write_flush(
        &mut self,
        w: WriterId,
        change: WriteRequest<'_>,
        now: Timestamp,
    ) -> Result<SequenceNumber, WriteError> {
        let sn = self.write(w, change, now)?;
        let _ = self.flush(w, now);
        Ok(sn)
    }

    /// Adds a change to the writer's history and queues its transmission
    /// (`poll_transmit` yields it at once).
    pub fn write(
        &mut self,
        w: WriterId,
        change: WriteRequest<'_>,
        now: Timestamp,
    ) -> Result<SequenceNumber, WriteError> {
        if self.user_writer(w).is_none() {
            return Err(WriteError::UnknownWriter);
        }
        let max = self.max_payload_size();
        if change.serialized_payload.len() > max {
            return Err(WriteError::PayloadTooLarge {
                size: change.serialized_payload.len(),
                max,
            });
        }
        self.add_change(
            w.0,
            change.kind,
            change.key_hash,
            change.serialized_payload,
            change.source_timestamp,
            now,
        )
        .map(SequenceNumber)
    }

    fn add_change(
        &mut self,
        wi: usize,
        kind: ChangeKind,
        key_hash: Option<[u8; 16]>,
        payload: &[u8],
        source_timestamp: Option<Time>,
        now: Timestamp,
    ) -> Result<i64, WriteError> {
        let period = self.config.heartbeat_period;
        let w = self
            .writers
            .get_mut(wi)
            .and_then(Option::as_mut)
            .ok_or(WriteError::UnknownWriter)?;
        match w.qos.history {
            History::KeepLast(depth) => {
                let depth = depth.max(1) as usize;
                while w.history.instance_count(key_hash.as_ref()) >= depth {
                    let Some((old, len)) = w.history.remove_oldest_of(key_hash.as_ref()) else {
                        break;
                    };
                    if old > w.pushed {
                        // Replaced before it was sent.
                        w.pushed_one(len);
                    }
                }
            }
            History::KeepAll => {
                if let Some(max) = w.max_samples() {
                    if w.history.len() >= max {
                        if w.history.first_sn().is_some_and(|f| f <= w.ack_bound()) {
                            w.history.remove_oldest();
                        } else {
                            w.blocked = true;
                            return Err(WriteError::HistoryFull);
                        }
                    }
                }
            }
        }
        let sn = w.last_sn + 1;
        if payload.len() > w.sizes.max_data {
            // Large samples are never held back by batching.
            w.flush = true;
        }
        if w.pushed >= w.last_sn {
            w.batch_since = Some(now);
        }
        w.unsent_bytes += payload.len();
        w.unsent_samples += 1;
        let payload = w.history.make_payload(payload);
        w.history.push(CacheChange {
            sn,
            kind,
            key_hash,
            source_timestamp,
            payload,
            removed: false,
        });
        w.last_sn = sn;
        w.all_acked_reported = false;
        if w.reliable() && w.next_hb.is_none() && w.proxies.iter().any(|p| p.reliable) {
            let t = now.saturating_add(period);
            w.next_hb = Some(t);
            self.work.arm(t);
        }
        if !w.qos.flow_controlled {
            self.work.push = true;
            self.work.push_from = self.work.push_from.min(wi);
            if let Some(d) = w.batch_deadline() {
                self.work.arm(d);
            }
        }
        Ok(sn)
    }

    /// Registers an instance (by key hash) with a writer without writing a
    /// sample; `Ok(true)` if it was not registered (unknown, or unregistered:
    /// it is `Alive` again). Instances are forgotten once unregistered and
    /// their changes left the history.
    pub fn register_instance(
        &mut self,
        w: WriterId,
        key_hash: [u8; 16],
    ) -> Result<bool, EngineError> {
        if self.user_writer(w).is_none() {
            return Err(EngineError::UnknownWriter);
        }
        Ok(self
            .writers
            .get_mut(w.0)
            .and_then(Option::as_mut)
            .is_some_and(|w| w.history.register(Some(key_hash))))
    }

    /// State of a writer's instance (`None`: unknown to the writer).
    pub fn writer_instance_state(&self, w: WriterId, key_hash: &[u8; 16]) -> Option<InstanceState> {
        self.user_writer(w)?
            .history
            .instance(Some(key_hash))
            .map(|i| i.state)
    }

    /// Number of instances a writer knows (registered or with changes in its history).
    pub fn writer_instance_count(&self, w: WriterId) -> usize {
        self.user_writer(w)
            .map_or(0, |w| w.history.instance_total())
    }

    /// State of an instance as last received by a reader (`None`: never seen).
    pub fn reader_instance_state(&self, r: ReaderId, key_hash: &[u8; 16]) -> Option<InstanceState> {
        self.user_reader(r)?.samples.instance_state(Some(key_hash))
    }

    /// Number of instances a reader has seen.
    pub fn reader_instance_count(&self, r: ReaderId) -> usize {
        self.user_reader(r)
            .map_or(0, |r| r.samples.instance_count())
    }

    /// True when every matched reliable reader acknowledged everything written so far.
    pub fn is_acknowledged_by_all(&self, w: WriterId) -> bool {
        self.user_writer(w).is_none_or(LocalWriter::all_acked)
    }

    /// Number of readers matched with this writer.
    pub fn matched_reader_count(&self, w: WriterId) -> usize {
        self.user_writer(w).map_or(0, |w| w.proxies.len())
    }

    /// Number of writers matched with this reader.
    pub fn matched_writer_count(&self, r: ReaderId) -> usize {
        self.user_reader(r).map_or(0, |r| r.proxies.len())
    }

    /// Next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Gives the payload buffer of a taken [`Sample`] back: received samples
    /// reuse it (up to 1024 buffers of at most 64 KiB are kept), so a reader
    /// that recycles what it takes receives without allocating per sample.
    pub fn recycle_payload(&mut self, mut payload: Vec<u8>) {
        let cap = payload.capacity();
        if cap > 0 && cap <= 1 << 16 && self.rx_pool.len() < RX_POOL_MAX {
            payload.clear();
            self.rx_pool.push(payload);
        }
    }

    /// Next sample for this reader, in delivery order (reliable: per-writer SN
    /// order, exactly once). The reader's cache is its only history: what is
    /// taken here leaves it. [`Participant::take_samples`] takes several at
    /// once, with their instance and sample states.
    pub fn take_sample(&mut self, r: ReaderId) -> Option<Sample> {
        if r.0 < FIRST_USER {
            return None;
        }
        let reader = self.readers.get_mut(r.0)?.as_mut()?;
        let was_full = reader.room() == 0;
        let s = reader.samples.pop()?;
        if was_full {
            Self::room_again(&mut self.work, reader);
        }
        Some(s.sample)
    }

    /// Moves at most `max` samples of this reader, in delivery order, to the
    /// end of `out`, after giving the payload buffers in `recycled` back for
    /// reuse (see [`Participant::recycle_payload`]; `recycled` is left empty).
    #[inline]
    pub fn take_samples(
        &mut self,
        r: ReaderId,
        max: usize,
        out: &mut Vec<TakenSample>,
        recycled: &mut Vec<Vec<u8>>,
    ) -> TakeOutcome {
        while let Some(p) = recycled.pop() {
            self.recycle_payload(p);
        }
        let none = TakeOutcome {
            left: 0,
            transmit_due: false,
        };
        if r.0 < FIRST_USER {
            return none;
        }
        let Some(reader) = self.readers.get_mut(r.0).and_then(Option::as_mut) else {
            return none;
        };
        let was_full = reader.room() == 0;
        let mut n = 0;
        while n < max {
            let Some(s) = reader.samples.pop() else {
                break;
            };
            out.push(s);
            n += 1;
        }
        let transmit_due = was_full && n > 0;
        if transmit_due {
            Self::room_again(&mut self.work, reader);
        }
        TakeOutcome {
            left: reader.samples.len(),
            transmit_due,
        }
    }

    /// A full KEEP_ALL reader has room again: ask for what it refused.
    #[inline(never)]
    fn room_again(work: &mut Work, reader: &mut LocalReader) {
        for p in reader.proxies.iter_mut().filter(|p| p.reliable) {
            if p.max_seen >= p.next {
                p.ack_pending = true;
                work.watch_writer_proxy(&mut reader.ack_work, p);
            }
        }
    }

    /// Visits at most `max` samples of this reader, in delivery order, leaving
    /// them in its cache and marking them read: `f` gets each sample, its
    /// instance's current state and whether it was read before. Returns how
    /// many were visited.
    pub fn read_samples(
        &mut self,
        r: ReaderId,
        max: usize,
        f: impl FnMut(&Sample, InstanceState, bool),
    ) -> usize {
        if r.0 < FIRST_USER {
            return 0;
        }
        match self.readers.get_mut(r.0).and_then(Option::as_mut) {
            Some(reader) => reader.samples.read_each(max, f),
            None => 0,
        }
    }

    /// Samples in a reader's cache (read or not).
    pub fn reader_sample_count(&self, r: ReaderId) -> usize {
        self.user_reader(r).map_or(0, |r| r.samples.len())
    }

    /// Whether a reader's cache holds a sample not read yet.
    pub fn reader_has_unread(&self, r: ReaderId) -> bool {
        self.user_reader(r).is_some_and(|r| r.samples.has_unread())
    }

    /// Sets how a keyed reader computes the key hash of changes received
    /// without `PID_KEY_HASH` (without one they name the nil instance).
    pub fn set_key_extractor(&mut self, r: ReaderId, k: KeyExtractor) -> Result<(), EngineError> {
        if r.0 < FIRST_USER {
            return Err(EngineError::UnknownReader);
        }
        let reader = self
            .readers
            .get_mut(r.0)
            .and_then(Option::as_mut)
            .ok_or(EngineError::UnknownReader)?;
        reader.key_extractor = Some(k);
        Ok(())
    }

    // ----------------------------------------------------------------- matching

    fn locators_for(
        &self,
        prefix: GuidPrefix,
        endpoint: &[Locator],
        builtin: bool,
    ) -> Vec<Locator> {
        if !endpoint.is_empty() {
            return endpoint.to_vec();
        }
        let (meta_u, meta_m, def_u, def_m) = if prefix == self.config.guid_prefix {
            (
                &self.config.metatraffic_unicast_locators,
                &self.config.metatraffic_multicast_locators,
                &self.config.default_unicast_locators,
                &self.config.default_multicast_locators,
            )
        } else if let Some(p) = self.participants.get(&prefix) {
            (
                &p.data.metatraffic_unicast,
                &p.data.metatraffic_multicast,
                &p.data.default_unicast,
                &p.data.default_multicast,
            )
        } else {
            return Vec::new();
        };
        let order: [&Vec<Locator>; 4] = if builtin {
            [meta_u, def_u, meta_m, def_m]
        } else {
            [def_u, meta_u, def_m, meta_m]
        };
        order
            .into_iter()
            .find(|l| !l.is_empty())
            .cloned()
            .unwrap_or_default()
    }

    /// Matches local user writer `wi` with a (remote or local) reader.
    fn match_writer_reader(&mut self, wi: usize, reader: &EndpointData) {
        let locators = self.locators_for(reader.guid.prefix, &reader.unicast, false);
        let Some(w) = self.writers.get_mut(wi).and_then(Option::as_mut) else {
            return;
        };
        if w.role != Role::User
            || w.topic_name != reader.topic_name
            || w.type_name != reader.type_name
        {
            return;
        }
        let existing = w.proxies.iter().position(|p| p.guid == reader.guid);
        match check_compatible(&EndpointQos::from(&w.qos), &reader.qos) {
            Ok(()) => {
                if let Some(i) = existing {
                    w.proxies[i].locators = locators;
                    w.proxies_changed();
                    return;
                }
                let reliable = reader.qos.reliability.kind == ReliabilityKind::Reliable;
                // History only for TRANSIENT_LOCAL writer *and* reader.
                let start_after = if w.qos.durability == Durability::TransientLocal
                    && reader.qos.durability == Durability::TransientLocal
                {
                    0
                } else {
                    w.pushed
                };
                let p = ReaderProxy::new(reader.guid, reliable, locators, start_after);
                self.work.watch_reader_proxy(&mut w.repair_work, &p);
                w.proxies.push(p);
                w.proxies_changed();
                w.all_acked_reported = false;
                self.events.push_back(Event::PublicationMatched {
                    writer: WriterId(wi),
                    remote_reader: reader.guid,
                    current_count: w.proxies.len(),
                });
            }
            Err(policy) => {
                if let Some(i) = existing {
                    w.proxies.remove(i);
                    w.proxies_changed();
                    self.events.push_back(Event::PublicationUnmatched {
                        writer: WriterId(wi),
                        remote_reader: reader.guid,
                        current_count: w.proxies.len(),
                    });
                }
                self.events.push_back(Event::OfferedIncompatibleQos {
                    writer: WriterId(wi),
                    remote_reader: reader.guid,
                    policy,
                });
            }
        }
    }

    /// Matches local user reader `ri` with a (remote or local) writer.
    fn match_reader_writer(&mut self, ri: usize, writer: &EndpointData) {
        let locators = self.locators_for(writer.guid.prefix, &writer.unicast, false);
        let Some(r) = self.readers.get_mut(ri).and_then(Option::as_mut) else {
            return;
        };
        if r.role != Role::User
            || r.topic_name != writer.topic_name
            || r.type_name != writer.type_name
        {
            return;
        }
        let existing = r.proxies.iter().position(|p| p.guid == writer.guid);
        match check_compatible(&writer.qos, &EndpointQos::from(&r.qos)) {
            Ok(()) => {
                if let Some(i) = existing {
                    r.proxies[i].locators = locators;
                    return;
                }
                let reliable = r.qos.reliability.kind == ReliabilityKind::Reliable;
                let p = WriterProxy::new(
                    writer.guid,
                    reliable,
                    locators,
                    self.config.reassembly,
                    self.reasm_budget.clone(),
                );
                self.work.watch_writer_proxy(&mut r.ack_work, &p);
                r.proxies.push(p);
                self.events.push_back(Event::SubscriptionMatched {
                    reader: ReaderId(ri),
                    remote_writer: writer.guid,
                    current_count: r.proxies.len(),
                });
            }
            Err(policy) => {
                if let Some(i) = existing {
                    r.proxies.remove(i);
                    if r.proxies.is_empty() {
                        r.samples.no_writers();
                    }
                    self.events.push_back(Event::SubscriptionUnmatched {
                        reader: ReaderId(ri),
                        remote_writer: writer.guid,
                        current_count: r.proxies.len(),
                    });
                }
                self.events.push_back(Event::RequestedIncompatibleQos {
                    reader: ReaderId(ri),
                    remote_writer: writer.guid,
                    policy,
                });
            }
        }
    }

    fn on_remote_writer(&mut self, data: EndpointData) {
        if !self.remote_writers.contains_key(&data.guid)
            && self.remote_writers.len() >= MAX_REMOTE_ENDPOINTS
        {
            return;
        }
        for ri in FIRST_USER..self.readers.len() {
            self.match_reader_writer(ri, &data);
        }
        self.remote_writers.insert(data.guid, data);
    }

    fn on_remote_reader(&mut self, data: EndpointData) {
        if !self.remote_readers.contains_key(&data.guid)
            && self.remote_readers.len() >= MAX_REMOTE_ENDPOINTS
        {
            return;
        }
        for wi in FIRST_USER..self.writers.len() {
            self.match_writer_reader(wi, &data);
        }
        self.remote_readers.insert(data.guid, data);
    }

    fn remove_remote_writer(&mut self, guid: Guid) {
        self.remote_writers.remove(&guid);
        for (ri, r) in self.readers.iter_mut().enumerate() {
            let Some(r) = r.as_mut() else { continue };
            if let Some(i) = r.proxies.iter().position(|p| p.guid == guid) {
                r.proxies.remove(i);
                if r.role == Role::User {
                    if r.proxies.is_empty() {
                        r.samples.no_writers();
                    }
                    self.events.push_back(Event::SubscriptionUnmatched {
                        reader: ReaderId(ri),
                        remote_writer: guid,
                        current_count: r.proxies.len(),
                    });
                }
            }
        }
    }

    fn remove_remote_reader(&mut self, guid: Guid) {
        self.remote_readers.remove(&guid);
        for wi in 0..self.writers.len() {
            let Some(w) = self.writers[wi].as_mut() else {
                continue;
            };
            if let Some(i) = w.proxies.iter().position(|p| p.guid == guid) {
                w.proxies.remove(i);
                w.proxies_changed();
                if w.role == Role::User {
                    self.events.push_back(Event::PublicationUnmatched {
                        writer: WriterId(wi),
                        remote_reader: guid,
                        current_count: w.proxies.len(),
                    });
                }
                self.after_ack(wi);
            }
        }
    }

    fn match_builtins(&mut self, prefix: GuidPrefix, set: u32) {
        let locs = self.locators_for(prefix, &[], true);
        let pairs = [
            (bes::PUBLICATIONS_DETECTOR, IDX_SEDP_PUB, SEDP_PUB_READER),
            (bes::SUBSCRIPTIONS_DETECTOR, IDX_SEDP_SUB, SEDP_SUB_READER),
        ];
        for (bit, wi, eid) in pairs {
            if set & bit == 0 {
                continue;
            }
            if let Some(w) = self.writers[wi].as_mut() {
                let guid = Guid::new(prefix, eid);
                if !w.proxies.iter().any(|p| p.guid == guid) {
                    let p = ReaderProxy::new(guid, true, locs.clone(), 0);
                    self.work.watch_reader_proxy(&mut w.repair_work, &p);
                    w.proxies.push(p);
                    w.proxies_changed();
                }
            }
        }
        let pairs = [
            (bes::PUBLICATIONS_ANNOUNCER, IDX_SEDP_PUB, SEDP_PUB_WRITER),
            (bes::SUBSCRIPTIONS_ANNOUNCER, IDX_SEDP_SUB, SEDP_SUB_WRITER),
        ];
        for (bit, ri, eid) in pairs {
            if set & bit == 0 {
                continue;
            }
            if let Some(r) = self.readers[ri].as_mut() {
                let guid = Guid::new(prefix, eid);
                if !r.proxies.iter().any(|p| p.guid == guid) {
                    let p = WriterProxy::new(
                        guid,
                        true,
                        locs.clone(),
                        self.config.reassembly,
                        self.reasm_budget.clone(),
                    );
                    self.work.watch_writer_proxy(&mut r.ack_work, &p);
                    r.proxies.push(p);
                }
            }
        }
    }

    /// Re-resolves the destination locators of every proxy of participant
    /// `prefix` (after its SPDP data changed).
    fn refresh_locators(&mut self, prefix: GuidPrefix) {
        let builtin = self.locators_for(prefix, &[], true);
        let mut user: HashMap<Guid, Vec<Locator>> = HashMap::new();
        for (g, d) in self.remote_writers.iter().chain(self.remote_readers.iter()) {
            if g.prefix == prefix {
                user.insert(*g, self.locators_for(prefix, &d.unicast, false));
            }
        }
        for (i, w) in self.writers.iter_mut().enumerate() {
            let Some(w) = w.as_mut() else { continue };
            w.proxies_changed();
            for p in w.proxies.iter_mut() {
                if p.guid.prefix != prefix {
                    continue;
                }
                if i < FIRST_USER {
                    p.locators.clone_from(&builtin);
                } else if let Some(l) = user.get(&p.guid) {
                    p.locators.clone_from(l);
                }
            }
        }
        for (i, r) in self.readers.iter_mut().enumerate() {
            for p in r.iter_mut().flat_map(|r| r.proxies.iter_mut()) {
                if p.guid.prefix != prefix {
                    continue;
                }
                if i < FIRST_USER {
                    p.locators.clone_from(&builtin);
                } else if let Some(l) = user.get(&p.guid) {
                    p.locators.clone_from(l);
                }
            }
        }
    }

    fn remove_participant(&mut self, prefix: GuidPrefix) {
        if self.participants.remove(&prefix).is_none() {
            return;
        }
        if self.heard.is_some_and(|(p, _)| p == prefix) {
            self.heard = None;
        }
        for i in [IDX_SEDP_PUB, IDX_SEDP_SUB] {
            if let Some(w) = self.writers[i].as_mut() {
                w.proxies.retain(|p| p.guid.prefix != prefix);
                w.proxies_changed();
            }
            if let Some(r) = self.readers[i].as_mut() {
                r.proxies.retain(|p| p.guid.prefix != prefix);
            }
        }
        let mut ws: Vec<Guid> = self
            .remote_writers
            .keys()
            .filter(|g| g.prefix == prefix)
            .copied()
            .collect();
        ws.sort_unstable();
        for g in ws {
            self.remove_remote_writer(g);
        }
        let mut rs: Vec<Guid> = self
            .remote_readers
            .keys()
            .filter(|g| g.prefix == prefix)
            .copied()
            .collect();
        rs.sort_unstable();
        for g in rs {
            self.remove_remote_reader(g);
        }
        self.events.push_back(Event::ParticipantLost { prefix });
    }

    /// Writes the lease renewal cached in `heard` back to `participants`.
    fn flush_heard(&mut self) {
        if let Some((prefix, t)) = self.heard.take() {
            if let Some(p) = self.participants.get_mut(&prefix) {
                p.last_heard = p.last_heard.max(t);
            }
        }
    }

    // ------------------------------------------------------------------ receive

    /// Processes one received datagram. `src` is the sender's locator, if known
    /// (unused for now). Malformed input is counted in [`Stats`] and dropped.
    pub fn handle_datagram(&mut self, now: Timestamp, src: Option<Locator>, datagram: &[u8]) {
        let _ = src;
        self.stats.received_datagrams += 1;
        let Ok((hdr, subs)) = codec::parse(datagram) else {
            self.stats.malformed_datagrams += 1;
            return;
        };
        let mut src_prefix = hdr.prefix;
        let ours = self.config.guid_prefix;
        match &mut self.heard {
            Some((p, t)) if *p == src_prefix => *t = now,
            // Our own prefix (local loopback) is never a remote participant.
            _ if src_prefix == ours => {}
            _ => {
                if let Some(p) = self.participants.get_mut(&src_prefix) {
                    p.last_heard = now;
                    self.flush_heard();
                    self.heard = Some((src_prefix, now));
                }
            }
        }
        let mut for_us = true;
        let mut ts: Option<Time> = None;
        for sub in subs {
            let sub = match sub {
                Ok(s) => s,
                Err(_) => {
                    self.stats.malformed_datagrams += 1;
                    break;
                }
            };
            match sub {
                Sub::InfoTs(t) => ts = t,
                Sub::InfoSrc(p) => src_prefix = p,
                Sub::InfoDst(p) => for_us = p == GuidPrefix([0; 12]) || p == ours,
                Sub::Other(_) => self.stats.unknown_submessages += 1,
                Sub::Pad => {}
                _ if !for_us => {}
                Sub::Data(d) => self.on_data(src_prefix, &d, ts, now),
                Sub::DataFrag(f) => self.on_data_frag(src_prefix, &f, ts, now),
                Sub::HeartbeatFrag {
                    reader_id,
                    writer_id,
                    sn,
                    last_frag,
                    count,
                } => self.on_heartbeat_frag(
                    Guid::new(src_prefix, writer_id),
                    reader_id,
                    (sn, last_frag, count),
                ),
                Sub::Heartbeat {
                    reader_id,
                    writer_id,
                    first,
                    last,
                    count,
                    final_flag,
                } => self.on_heartbeat(
                    Guid::new(src_prefix, writer_id),
                    reader_id,
                    (first, last, count, final_flag),
                ),
                Sub::AckNack {
                    reader_id,
                    writer_id,
                    set,
                    count,
                    final_flag,
                } => self.on_acknack(
                    Guid::new(src_prefix, reader_id),
                    writer_id,
                    &set,
                    count,
                    final_flag,
                    now,
                ),
                Sub::NackFrag {
                    reader_id,
                    writer_id,
                    sn,
                    frags,
                    count,
                } => self.on_nack_frag(
                    Guid::new(src_prefix, reader_id),
                    writer_id,
                    sn,
                    &frags,
                    count,
                    now,
                ),
                Sub::Gap {
                    reader_id,
                    writer_id,
                    start,
                    list,
                } => self.on_gap(Guid::new(src_prefix, writer_id), reader_id, start, &list),
            }
        }
        if !core::mem::take(&mut self.notify) {
            return;
        }
        for (ri, r) in self.readers.iter_mut().enumerate() {
            if let Some(r) = r.as_mut() {
                if r.notify {
                    r.notify = false;
                    self.events.push_back(Event::DataAvailable {
                        reader: ReaderId(ri),
                    });
                }
            }
        }
    }

    fn on_data(
        &mut self,
        src: GuidPrefix,
        d: &codec::DataSub<'_>,
        ts: Option<Time>,
        now: Timestamp,
    ) {
        let iq = match d.inline_qos {
            Some(q) => match codec::parse_inline_qos(q, d.little_endian) {
                Some(iq) => iq,
                None => {
                    self.stats.malformed_datagrams += 1;
                    return;
                }
            },
            None => codec::InlineQos::default(),
        };
        if d.writer_id == SPDP_WRITER {
            self.on_spdp(src, d, iq, now);
            return;
        }
        let writer_guid = Guid::new(src, d.writer_id);
        let payload = d.payload.unwrap_or(&[]);
        let mut matched = false;
        let mut builtin: Vec<(Role, Change)> = Vec::new();
        for ri in 0..self.readers.len() {
            let Some(r) = self.readers[ri].as_mut() else {
                continue;
            };
            if d.reader_id != EntityId::UNKNOWN && d.reader_id != r.guid.entity_id {
                continue;
            }
            let room = r.room();
            let Some(p) = r.proxies.iter_mut().find(|p| p.guid == writer_guid) else {
                continue;
            };
            matched = true;
            let mut buf = self.rx_pool.pop().unwrap_or_default();
            buf.extend_from_slice(payload);
            let change = Change {
                kind: ChangeKind::from_status_info(iq.status_info),
                key_hash: iq.key_hash,
                source_timestamp: ts,
                payload: buf,
            };
            let out = reset_scratch(&mut self.scratch);
            p.on_data(d.sn, change, room, out);
            self.work.watch_writer_proxy(&mut r.ack_work, p);
            self.stats.dropped_samples += out.dropped;
            Self::deliver(
                r,
                ReaderId(ri),
                writer_guid,
                out,
                &mut builtin,
                &mut self.events,
                &mut self.notify,
            );
        }
        if !matched {
            self.stats.unmatched_submessages += 1;
        }
        if !builtin.is_empty() {
            self.process_builtin(builtin);
        }
    }

    fn on_data_frag(
        &mut self,
        src: GuidPrefix,
        f: &codec::DataFragSub<'_>,
        ts: Option<Time>,
        now: Timestamp,
    ) {
        let meta = match f.inline_qos {
            Some(q) => match codec::parse_inline_qos(q, f.little_endian) {
                Some(iq) => Some((ChangeKind::from_status_info(iq.status_info), iq.key_hash)),
                None => {
                    self.stats.malformed_datagrams += 1;
                    return;
                }
            },
            None => None,
        };
        let writer_guid = Guid::new(src, f.writer_id);
        let frag = FragmentRef {
            sn: f.sn,
            offset: f.offset,
            data: f.data,
            sample_size: f.sample_size,
            fragment_size: f.fragment_size,
            meta,
            source_timestamp: ts,
        };
        let mut matched = false;
        let mut builtin: Vec<(Role, Change)> = Vec::new();
        for ri in 0..self.readers.len() {
            let Some(r) = self.readers[ri].as_mut() else {
                continue;
            };
            if f.reader_id != EntityId::UNKNOWN && f.reader_id != r.guid.entity_id {
                continue;
            }
            let room = r.room();
            let Some(p) = r.proxies.iter_mut().find(|p| p.guid == writer_guid) else {
                continue;
            };
            matched = true;
            let change = p.on_fragment(&frag, now);
            self.work.watch_writer_proxy(&mut r.ack_work, p);
            let change = match change {
                Ok(Some(c)) => c,
                Ok(None) => continue,
                Err(_) => {
                    self.stats.rejected_fragments += 1;
                    continue;
                }
            };
            let out = reset_scratch(&mut self.scratch);
            p.on_data(f.sn, change, room, out);
            self.work.watch_writer_proxy(&mut r.ack_work, p);
            self.stats.dropped_samples += out.dropped;
            Self::deliver(
                r,
                ReaderId(ri),
                writer_guid,
                out,
                &mut builtin,
                &mut self.events,
                &mut self.notify,
            );
        }
        if !matched {
            self.stats.unmatched_submessages += 1;
        }
        if !builtin.is_empty() {
            self.process_builtin(builtin);
        }
    }

    /// Hands what a proxy operation delivered to the reader (user readers:
    /// its cache, setting `notify`; builtin readers: `builtin`).
    // (Forced inline, with the work out of line: left to itself the compiler
    // merged both into one call made for every HEARTBEAT too.)
    #[inline(always)]
    fn deliver(
        r: &mut LocalReader,
        id: ReaderId,
        writer_guid: Guid,
        out: &mut Outcome,
        builtin: &mut Vec<(Role, Change)>,
        events: &mut VecDeque<Event>,
        notify: &mut bool,
    ) {
        // (Most HEARTBEATs deliver nothing: no call.)
        if !out.delivered.is_empty() || out.lost > 0 {
            Self::deliver_outcome(r, id, writer_guid, out, builtin, events, notify);
        }
    }

    #[inline(never)]
    fn deliver_outcome(
        r: &mut LocalReader,
        id: ReaderId,
        writer_guid: Guid,
        out: &mut Outcome,
        builtin: &mut Vec<(Role, Change)>,
        events: &mut VecDeque<Event>,
        notify: &mut bool,
    ) {
        if r.role != Role::User {
            builtin.extend(out.delivered.drain(..).map(|(_, c)| (r.role, c)));
            return;
        }
        if out.lost > 0 {
            events.push_back(Event::SampleLost {
                reader: id,
                count: u32::try_from(out.lost).unwrap_or(u32::MAX),
            });
        }
        let depth = match r.qos.history {
            History::KeepLast(depth) => Some(depth.max(1) as usize),
            History::KeepAll => None,
        };
        for (sn, c) in out.delivered.drain(..) {
            let key_hash = match (c.key_hash, &r.key_extractor) {
                (None, Some(k)) if !c.payload.is_empty() => (k.0)(c.kind, &c.payload),
                (k, _) => k,
            };
            r.samples.push(
                Sample {
                    writer_guid,
                    sequence_number: SequenceNumber(sn),
                    source_timestamp: c.source_timestamp,
                    kind: c.kind,
                    key_hash,
                    payload: c.payload,
                },
                depth,
            );
            r.notify = true;
            *notify = true;
        }
    }

    fn process_builtin(&mut self, changes: Vec<(Role, Change)>) {
        for (role, c) in changes {
            let writer_side = role == Role::SedpPub;
            if c.kind == ChangeKind::Alive {
                if let Some(data) = EndpointData::decode(&c.payload, writer_side) {
                    if data.guid.prefix == self.config.guid_prefix {
                        continue;
                    }
                    if writer_side {
                        self.on_remote_writer(data);
                    } else {
                        self.on_remote_reader(data);
                    }
                }
            } else {
                let guid = c
                    .key_hash
                    .map(Guid::from_bytes)
                    .or_else(|| discovery::key_guid(&c.payload));
                if let Some(g) = guid.filter(|g| g.prefix != self.config.guid_prefix) {
                    if writer_side {
                        self.remove_remote_writer(g);
                    } else {
                        self.remove_remote_reader(g);
                    }
                }
            }
        }
    }

    fn on_spdp(
        &mut self,
        src: GuidPrefix,
        d: &codec::DataSub<'_>,
        iq: codec::InlineQos,
        now: Timestamp,
    ) {
        let payload = d.payload.unwrap_or(&[]);
        if iq.status_info & 3 != 0 {
            let prefix = iq
                .key_hash
                .map(|k| Guid::from_bytes(k).prefix)
                .or_else(|| discovery::key_guid(payload).map(|g| g.prefix))
                .unwrap_or(src);
            if prefix != self.config.guid_prefix {
                self.remove_participant(prefix);
            }
            return;
        }
        let Some(data) = SpdpData::decode(payload) else {
            self.stats.malformed_datagrams += 1;
            return;
        };
        let prefix = data.guid_prefix;
        if prefix == self.config.guid_prefix
            || data.protocol_major != 2
            || data
                .domain_id
                .is_some_and(|dom| dom != self.config.domain_id)
            || !data.domain_tag_empty
        {
            return;
        }
        if let Some(p) = self.participants.get_mut(&prefix) {
            p.last_heard = now;
            if p.data != data {
                let set = data.builtin_endpoints;
                // The lease duration may have shrunk.
                self.work.arm(now.saturating_add(data.lease_duration));
                p.data = data;
                self.match_builtins(prefix, set);
                self.refresh_locators(prefix);
            }
            return;
        }
        if self.participants.len() >= MAX_PARTICIPANTS {
            return;
        }
        let set = data.builtin_endpoints;
        self.work.arm(now.saturating_add(data.lease_duration));
        self.participants.insert(
            prefix,
            RemoteParticipant {
                data,
                last_heard: now,
            },
        );
        self.events
            .push_back(Event::ParticipantDiscovered { prefix });
        let dests = self.locators_for(prefix, &[], true);
        if !dests.is_empty() {
            self.spdp_queue.push_back(dests);
        }
        self.match_builtins(prefix, set);
    }

    fn on_heartbeat(&mut self, writer: Guid, reader_id: EntityId, hb: (i64, i64, i32, bool)) {
        let (first, last, count, final_flag) = hb;
        let mut builtin = Vec::new();
        let mut matched = false;
        for ri in 0..self.readers.len() {
            let Some(r) = self.readers[ri].as_mut() else {
                continue;
            };
            if reader_id != EntityId::UNKNOWN && reader_id != r.guid.entity_id {
                continue;
            }
            let room = r.room();
            let Some(p) = r.proxies.iter_mut().find(|p| p.guid == writer) else {
                continue;
            };
            matched = true;
            let out = reset_scratch(&mut self.scratch);
            p.on_heartbeat(first, last, count, final_flag, room, out);
            self.work.watch_writer_proxy(&mut r.ack_work, p);
            Self::deliver(
                r,
                ReaderId(ri),
                writer,
                out,
                &mut builtin,
                &mut self.events,
                &mut self.notify,
            );
        }
        if !matched {
            self.stats.unmatched_submessages += 1;
        }
        if !builtin.is_empty() {
            self.process_builtin(builtin);
        }
    }

    fn on_heartbeat_frag(&mut self, writer: Guid, reader_id: EntityId, hbf: (i64, u32, i32)) {
        let (sn, last_frag, count) = hbf;
        let mut matched = false;
        for r in self.readers.iter_mut().flatten() {
            if reader_id != EntityId::UNKNOWN && reader_id != r.guid.entity_id {
                continue;
            }
            if let Some(p) = r.proxies.iter_mut().find(|p| p.guid == writer) {
                matched = true;
                p.on_heartbeat_frag(sn, last_frag, count);
                self.work.watch_writer_proxy(&mut r.ack_work, p);
            }
        }
        if !matched {
            self.stats.unmatched_submessages += 1;
        }
    }

    fn on_gap(&mut self, writer: Guid, reader_id: EntityId, start: i64, list: &SnSet) {
        let mut builtin = Vec::new();
        for ri in 0..self.readers.len() {
            let Some(r) = self.readers[ri].as_mut() else {
                continue;
            };
            if reader_id != EntityId::UNKNOWN && reader_id != r.guid.entity_id {
                continue;
            }
            let room = r.room();
            let Some(p) = r.proxies.iter_mut().find(|p| p.guid == writer) else {
                continue;
            };
            let out = reset_scratch(&mut self.scratch);
            p.on_gap(start, list, room, out);
            self.work.watch_writer_proxy(&mut r.ack_work, p);
            Self::deliver(
                r,
                ReaderId(ri),
                writer,
                out,
                &mut builtin,
                &mut self.events,
                &mut self.notify,
            );
        }
        if !builtin.is_empty() {
            self.process_builtin(builtin);
        }
    }

    fn on_acknack(
        &mut self,
        reader: Guid,
        writer_id: EntityId,
        set: &SnSet,
        count: i32,
        final_flag: bool,
        now: Timestamp,
    ) {
        let due = now.saturating_add(self.config.nack_response_delay);
        let suppress = self.config.heartbeat_period / 20;
        let Some(wi) = self
            .writers
            .iter()
            .position(|w| w.as_ref().is_some_and(|w| w.guid.entity_id == writer_id))
        else {
            self.stats.unmatched_submessages += 1;
            return;
        };
        let Some(w) = self.writers[wi].as_mut() else {
            return;
        };
        let last = w.last_sn;
        let Some(p) = w.proxies.iter_mut().find(|p| p.guid == reader) else {
            self.stats.unmatched_submessages += 1;
            return;
        };
        if p.reliable && p.on_acknack(set, count, final_flag, last, now, suppress, due) {
            self.work.watch_reader_proxy(&mut w.repair_work, p);
            self.after_ack(wi);
        }
    }

    fn on_nack_frag(
        &mut self,
        reader: Guid,
        writer_id: EntityId,
        sn: i64,
        frags: &ferrodds_wire::FragmentNumberSet,
        count: i32,
        now: Timestamp,
    ) {
        let due = now.saturating_add(self.config.nack_response_delay);
        let Some(w) = self
            .writers
            .iter_mut()
            .flatten()
            .find(|w| w.guid.entity_id == writer_id)
        else {
            self.stats.unmatched_submessages += 1;
            return;
        };
        if sn > w.last_sn {
            return;
        }
        let Some(p) = w.proxies.iter_mut().find(|p| p.guid == reader) else {
            self.stats.unmatched_submessages += 1;
            return;
        };
        if p.reliable {
            p.on_nack_frag(sn, frags.iter().map(|f| f.0), count, due);
            self.work.watch_reader_proxy(&mut w.repair_work, p);
        }
    }

    /// Purges acknowledged history and raises resource/acknowledgement events.
    fn after_ack(&mut self, wi: usize) {
        let Some(w) = self.writers[wi].as_mut() else {
            return;
        };
        if w.qos.durability == Durability::Volatile {
            let bound = w.ack_bound();
            w.history.remove_up_to(bound);
        }
        let user = w.role == Role::User;
        if w.blocked && w.has_room() {
            w.blocked = false;
            if user {
                self.events.push_back(Event::WriterResourcesAvailable {
                    writer: WriterId(wi),
                });
            }
        }
        if w.reliable()
            && w.last_sn > 0
            && !w.all_acked_reported
            && w.proxies.iter().any(|p| p.reliable)
            && w.all_acked()
        {
            w.all_acked_reported = true;
            if user {
                self.events.push_back(Event::AllAcknowledged {
                    writer: WriterId(wi),
                });
            }
        }
        if !w.lagging() {
            w.next_hb = None;
        }
    }

    // ------------------------------------------------------------------ timers

    /// Runs timers that are due at `now` (SPDP announcements, leases,
    /// periodic HEARTBEATs).
    pub fn handle_timeout(&mut self, now: Timestamp) {
        if now >= self.next_spdp {
            if !self.config.spdp_destinations.is_empty() {
                self.spdp_queue
                    .push_back(dedup(self.config.spdp_destinations.clone()));
            }
            // A few quick initial announcements (like Fast DDS) so a lost
            // first datagram does not delay discovery by a whole period.
            self.spdp_sent = self.spdp_sent.saturating_add(1);
            let period = if self.spdp_sent < INITIAL_ANNOUNCEMENTS {
                self.config.spdp_period.min(INITIAL_ANNOUNCEMENT_PERIOD)
            } else {
                self.config.spdp_period
            };
            self.next_spdp = now.saturating_add(period);
        }
        self.flush_heard();
        let mut expired: Vec<GuidPrefix> = self
            .participants
            .iter()
            .filter(|(_, p)| now >= p.last_heard.saturating_add(p.data.lease_duration))
            .map(|(k, _)| *k)
            .collect();
        expired.sort_unstable();
        for prefix in expired {
            self.remove_participant(prefix);
        }
        // Best effort: incomplete fragmented samples expire.
        let timeout = self.config.reassembly.best_effort_timeout;
        if let Some(deadline) = now.0.checked_sub(timeout.as_nanos() as u64) {
            for r in self.readers.iter_mut().flatten() {
                for p in r.proxies.iter_mut().filter(|p| !p.reliable) {
                    if !p.reasm.is_empty() {
                        p.reasm.drop_started_before(Timestamp(deadline));
                    }
                }
            }
        }
        let period = self.config.heartbeat_period;
        for w in self.writers.iter_mut().flatten() {
            if !w.lagging() {
                w.next_hb = None;
                continue;
            }
            match w.next_hb {
                Some(t) if now < t => {}
                None => w.next_hb = Some(now.saturating_add(period)),
                Some(_) => {
                    let last = w.last_sn;
                    for p in w.proxies.iter_mut().filter(|p| p.lagging(last)) {
                        p.hb_pending = true;
                        self.work.watch_reader_proxy(&mut w.repair_work, p);
                    }
                    w.next_hb = Some(now.saturating_add(period));
                }
            }
        }
        self.work.timeout = self.next_deadline();
    }

    /// When `handle_timeout` should next be called. This may be earlier than
    /// needed (a deadline that moved later or went away since the last
    /// `handle_timeout`); then `handle_timeout` finds nothing to do and the
    /// value is exact again. It is never later than needed.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        Some(self.work.timeout)
    }

    /// The earliest pending deadline, found by visiting everything: the
    /// SPDP announcement, leases, held-off ACKNACKs, periodic HEARTBEATs,
    /// batch flush delays and repair delays. Every place that sets or
    /// activates one of these also lowers [`Work::timeout`].
    fn next_deadline(&self) -> Timestamp {
        let mut t = self.next_spdp;
        for p in self.participants.values() {
            t = t.min(p.last_heard.saturating_add(p.data.lease_duration));
        }
        for r in self.readers.iter().flatten() {
            for p in r.proxies.iter().filter(|p| p.ack_pending) {
                if let Some(d) = p.ack_due {
                    t = t.min(d);
                }
            }
        }
        for w in self.writers.iter().flatten() {
            if let Some(h) = w.next_hb {
                t = t.min(h);
            }
            // (Flow-controlled writers are paced by their publisher, which
            // polls on its own period.)
            if let Some(d) = w.batch_deadline().filter(|_| !w.qos.flow_controlled) {
                t = t.min(d);
            }
            for p in &w.proxies {
                if p.repairs_requested() {
                    t = t.min(p.repair_due);
                }
            }
        }
        t
    }

    // ----------------------------------------------------------------- transmit

    /// Writes the next datagram into `buf` (len >= max_message_size) and says
    /// where to send it. Call until it returns `None`.
    pub fn poll_transmit(&mut self, now: Timestamp, buf: &mut [u8]) -> Option<Transmit> {
        let mut destinations = Vec::new();
        let len = self.poll_transmit_into(now, buf, &mut destinations)?;
        Some(Transmit { len, destinations })
    }

    /// Like [`Participant::poll_transmit`], but writes the (distinct)
    /// destinations into a caller-owned vector, so that steady-state sending
    /// does not allocate. Returns the datagram length.
    pub fn poll_transmit_into(
        &mut self,
        now: Timestamp,
        buf: &mut [u8],
        destinations: &mut Vec<Locator>,
    ) -> Option<usize> {
        let limit = self.config.max_message_size.min(buf.len());
        destinations.clear();
        // (The work hints are also tested here, so that an idle kind costs
        // no call.)
        let len = self
            .transmit_spdp(buf, limit, destinations)
            .or_else(|| {
                self.work
                    .ack
                    .then(|| self.transmit_acknack(now, buf, limit, destinations))?
            })
            .or_else(|| {
                self.work
                    .push
                    .then(|| self.transmit_push(now, buf, limit, destinations, None))?
            })
            .or_else(|| {
                self.work
                    .repair
                    .then(|| self.transmit_repairs(now, buf, limit, destinations))?
            })?;
        self.stats.sent_datagrams += 1;
        debug_assert!(len <= limit);
        Some(len)
    }

    /// Flow-controlled sending of one writer's new data: builds the next
    /// datagram of `w` (a writer with [`WriterQos::flow_controlled`]) if one
    /// fits in `budget` bytes, and returns its length. Such writers' new data
    /// is only sent through this call (repairs, HEARTBEATs and everything
    /// else still go through [`Participant::poll_transmit`]); an asynchronous
    /// publisher calls it with what its token bucket allows.
    pub fn poll_transmit_writer(
        &mut self,
        now: Timestamp,
        w: WriterId,
        budget: usize,
        buf: &mut [u8],
        destinations: &mut Vec<Locator>,
    ) -> Option<usize> {
        self.user_writer(w)?;
        let limit = self.config.max_message_size.min(buf.len()).min(budget);
        destinations.clear();
        let len = self.transmit_push(now, buf, limit, destinations, Some(w.0))?;
        self.stats.sent_datagrams += 1;
        Some(len)
    }

    fn transmit_spdp(
        &mut self,
        buf: &mut [u8],
        limit: usize,
        out: &mut Vec<Locator>,
    ) -> Option<usize> {
        if self.leave_queue.is_empty() && self.spdp_queue.is_empty() {
            return None;
        }
        if let Some(dests) = self.leave_queue.pop_front() {
            let mut e = Emitter::new(buf, limit, self.config.guid_prefix)?;
            let key = Guid::new(self.config.guid_prefix, EntityId::PARTICIPANT).to_bytes();
            let payload = discovery::participant_key_payload(self.config.guid_prefix);
            if e.data(SPDP_READER, SPDP_WRITER, 2, Some(&key), 3, &payload, true) {
                fill_dests(out, dests.iter());
                return Some(e.len());
            }
        }
        while let Some(dests) = self.spdp_queue.pop_front() {
            let mut e = Emitter::new(buf, limit, self.config.guid_prefix)?;
            let key = Guid::new(self.config.guid_prefix, EntityId::PARTICIPANT).to_bytes();
            if e.data(
                SPDP_READER,
                SPDP_WRITER,
                1,
                Some(&key),
                0,
                &self.spdp_payload,
                false,
            ) {
                self.stats.sent_data += 1;
                fill_dests(out, dests.iter());
                return Some(e.len());
            }
        }
        None
    }

    fn transmit_acknack(
        &mut self,
        now: Timestamp,
        buf: &mut [u8],
        limit: usize,
        out: &mut Vec<Locator>,
    ) -> Option<usize> {
        if !self.work.ack {
            return None;
        }
        let prefix = self.config.guid_prefix;
        let holdoff = self.nack_holdoff();
        // Whether a reader visited still has (held-off) ACKNACKs pending.
        let mut remaining = false;
        for r in self.readers.iter_mut().flatten() {
            if !r.ack_work {
                continue;
            }
            let room = r.room();
            let reader_eid = r.guid.entity_id;
            for p in r.proxies.iter_mut().filter(|p| p.ack_pending) {
                if p.locators.is_empty() {
                    p.ack_pending = false;
                    continue;
                }
                let set = p.ack_set(room);
                let mut nfs = [(0i64, 0u32, [0u32; 8], 0u32); MAX_NACK_FRAGS];
                let mut n_nf = 0;
                if room > 0 {
                    for (slot, nf) in nfs.iter_mut().zip(p.nack_frags(MAX_NACK_FRAGS)) {
                        *slot = nf;
                        n_nf += 1;
                    }
                }
                // NACK_FRAGs deferred to this time (sent with a later ACKNACK).
                let mut deferred = None;
                if n_nf > 0 {
                    // NackDelay: fragments of a sample still being pushed may
                    // merely be reordered; ask only once they had time to arrive.
                    let due = *p
                        .nack_frag_due
                        .get_or_insert_with(|| now.saturating_add(holdoff));
                    if now < due {
                        if set.is_empty() {
                            p.ack_due = Some(due);
                            self.work.arm(due);
                            continue;
                        }
                        n_nf = 0;
                        deferred = Some(due);
                    }
                }
                if !set.is_empty() || n_nf > 0 {
                    // Aggregate NACKs: repeat one at most every `holdoff`, so a
                    // burst of HEARTBEATs does not trigger a burst of repairs.
                    if let Some(t) = p.last_nack_at {
                        let due = t.saturating_add(holdoff);
                        if now < due {
                            p.ack_due = Some(due);
                            self.work.arm(due);
                            continue;
                        }
                    }
                    p.last_nack_at = Some(now);
                }
                p.ack_pending = false;
                p.ack_due = None;
                if n_nf > 0 {
                    p.nack_frag_due = None;
                }
                if let Some(due) = deferred {
                    p.ack_pending = true;
                    p.ack_due = Some(due);
                    self.work.arm(due);
                }
                let final_flag = set.is_empty() && p.synced;
                p.ack_count = p.ack_count.wrapping_add(1);
                let mut e = Emitter::new(buf, limit, prefix)?;
                if e.info_dst(p.guid.prefix)
                    && e.acknack(reader_eid, p.guid.entity_id, &set, p.ack_count, final_flag)
                {
                    // Partly received samples: ask for exactly the missing fragments.
                    for &(sn, base, bits, num_bits) in &nfs[..n_nf] {
                        p.nack_frag_count = p.nack_frag_count.wrapping_add(1);
                        if !e.nack_frag(
                            reader_eid,
                            p.guid.entity_id,
                            sn,
                            base,
                            bits,
                            num_bits,
                            p.nack_frag_count,
                        ) {
                            break;
                        }
                        self.stats.sent_nack_frags += 1;
                    }
                    fill_dests(out, p.locators.iter());
                    return Some(e.len());
                }
            }
            r.ack_work = r.proxies.iter().any(|p| p.ack_pending);
            remaining |= r.ack_work;
        }
        self.work.ack = remaining;
        None
    }

    fn transmit_push(
        &mut self,
        now: Timestamp,
        buf: &mut [u8],
        limit: usize,
        out: &mut Vec<Locator>,
        only: Option<usize>,
    ) -> Option<usize> {
        if only.is_none() && !self.work.push {
            return None;
        }
        let prefix = self.config.guid_prefix;
        let range = match only {
            Some(i) => i..i + 1,
            None => self.work.push_from..self.writers.len(),
        };
        // The first writer visited that still holds changes (batching).
        let mut remaining = None;
        for wi in range {
            let Some(w) = self.writers.get_mut(wi).and_then(Option::as_mut) else {
                continue;
            };
            if w.pushed >= w.last_sn || (only.is_none() && w.qos.flow_controlled) {
                continue;
            }
            if w.proxies.is_empty() {
                w.pushed = w.last_sn;
                w.push_frag = 1;
                w.push_done();
                self.after_ack(wi);
                continue;
            }
            if !w.push_ready(now) {
                remaining = remaining.or(Some(wi));
                continue;
            }
            // A batch is due: drain everything pending (over as many
            // datagrams as needed).
            w.flush = true;
            let reliable = w.reliable();
            let plan = w
                .plan
                .get_or_insert_with(|| PushPlan::new(&w.proxies, reliable));
            debug_assert!(plan.is_current(&w.proxies, reliable), "stale push plan");
            out.clone_from(&plan.dests);
            let (reader_id, same_prefix, with_hb) = (plan.reader_id, plan.prefix, plan.with_hb);
            if out.is_empty() {
                w.pushed = w.last_sn;
                w.push_frag = 1;
                w.push_done();
                self.after_ack(wi);
                continue;
            }
            let sizes = w.sizes;
            let reserve = if with_hb { HB_LEN + HBF_LEN } else { 0 };
            let mut e = Emitter::new(buf, limit.min(sizes.max_message), prefix)?;
            if let Some(first_prefix) = same_prefix {
                if !e.info_dst(first_prefix) {
                    return None;
                }
            }
            let mut sent_any = false;
            // Acknowledgements do not change during a push: one scan of the
            // proxies serves the bound before, the HEARTBEAT and the bound after.
            let acked = w.acked_floor();
            let bound_before = acked.min(w.pushed);
            // Fragmented sample left unfinished in this datagram: (SN, last fragment sent).
            let mut partial_frag = None;
            while w.pushed < w.last_sn {
                let sn = w.pushed + 1;
                let Some(c) = w.history.get(sn) else {
                    // Replaced before it was sent (KEEP_LAST): readers get a GAP on request.
                    w.pushed = sn;
                    w.push_frag = 1;
                    continue;
                };
                let ids = (reader_id, w.guid.entity_id);
                let len = c.payload.len();
                match emit_change(&mut e, ids, c, sizes, w.push_frag, reserve, &mut self.stats) {
                    Emitted::All => {
                        sent_any = true;
                        w.pushed = sn;
                        w.push_frag = 1;
                        w.pushed_one(len);
                    }
                    Emitted::Upto(f) => {
                        sent_any = true;
                        w.push_frag = f;
                        partial_frag = Some((sn, f - 1));
                        break;
                    }
                    Emitted::Nothing if sent_any => break,
                    // Flow control: the budget is smaller than the next
                    // datagram; try again with more budget.
                    Emitted::Nothing if only.is_some() => return None,
                    Emitted::Nothing => {
                        // Cannot fit even alone (buffer smaller than configured): drop it.
                        w.pushed = sn;
                        w.push_frag = 1;
                        w.pushed_one(len);
                    }
                }
            }
            w.push_done();
            if with_hb {
                // Announce only what was actually sent, so readers do not
                // NACK samples still queued here.
                w.hb_count = w.hb_count.wrapping_add(1);
                let last = w.pushed;
                let ask = w.wants_ack_at(now, self.ack_request_ns, acked.min(last));
                if ask {
                    w.last_ack_request = Some(now);
                }
                e.heartbeat(
                    reader_id,
                    w.guid.entity_id,
                    w.hb_first().min(last + 1),
                    last,
                    w.hb_count,
                    !ask,
                );
                if let Some((sn, f)) = partial_frag {
                    w.hbf_count = w.hbf_count.wrapping_add(1);
                    if e.heartbeat_frag(reader_id, w.guid.entity_id, sn, f, w.hbf_count) {
                        self.stats.sent_heartbeat_frags += 1;
                    }
                }
                for p in &mut w.proxies {
                    p.hb_pending = false;
                }
            }
            let len = e.len();
            let drained = w.pushed >= w.last_sn;
            // A push changes nothing after_ack looks at (acknowledgements,
            // last_sn, proxies) except the acknowledgement bound, which
            // moves only when readers acknowledged beyond what was pushed
            // before (or none is reliable): only then can history be
            // purged or a blocked writer freed.
            if acked.min(w.pushed) != bound_before {
                self.after_ack(wi);
            }
            if sent_any || with_hb {
                if only.is_none() {
                    // Writers before `wi` were found without pending changes
                    // (or are in `remaining`); `wi` itself only if drained.
                    let next = if drained { wi + 1 } else { wi };
                    self.work.push_from = remaining.unwrap_or(next);
                }
                return Some(len);
            }
        }
        if only.is_none() {
            self.work.push = remaining.is_some();
            self.work.push_from = remaining.unwrap_or(self.writers.len());
        }
        None
    }

    fn transmit_repairs(
        &mut self,
        now: Timestamp,
        buf: &mut [u8],
        limit: usize,
        out: &mut Vec<Locator>,
    ) -> Option<usize> {
        if !self.work.repair {
            return None;
        }
        let prefix = self.config.guid_prefix;
        // Whether a writer visited still has repair work (not due yet).
        let mut remaining = false;
        for w in self.writers.iter_mut().flatten() {
            if !w.repair_work {
                continue;
            }
            if !w.reliable() {
                // (Best-effort writers never repair.)
                w.repair_work = false;
                continue;
            }
            let sizes = w.sizes;
            // Announce only what was pushed (batched samples may still wait).
            let last = w.pushed;
            let first = w.hb_first().min(last + 1);
            let writer_eid = w.guid.entity_id;
            for p in w.proxies.iter_mut() {
                let repairs_due = p.repairs_requested() && now >= p.repair_due;
                if !p.reliable || !(p.gap_pending || p.hb_pending || repairs_due) {
                    continue;
                }
                if p.locators.is_empty() {
                    p.gap_pending = false;
                    p.hb_pending = false;
                    p.requested.clear();
                    p.frag_requests.clear();
                    continue;
                }
                let reader_eid = p.guid.entity_id;
                let ids = (reader_eid, writer_eid);
                let mut e = Emitter::new(buf, limit.min(sizes.max_message), prefix)?;
                if !e.info_dst(p.guid.prefix) {
                    return None;
                }
                if p.gap_pending && p.first_relevant > 1 {
                    e.gap(reader_eid, writer_eid, 1, &SnSet::new(p.first_relevant));
                }
                p.gap_pending = false;
                let before = e.len();
                if repairs_due {
                    // Fragments asked for by NACK_FRAG.
                    'frags: while let Some(mut entry) = p.frag_requests.first_entry() {
                        let sn = *entry.key();
                        let available = if sn >= p.first_relevant {
                            w.history.get(sn)
                        } else {
                            None
                        };
                        let Some(c) = available.filter(|c| c.payload.len() > sizes.max_data) else {
                            // Gone (or not fragmented): GAP or resend it whole.
                            entry.remove();
                            if p.requested.len() < 4096 {
                                p.requested.insert(sn);
                            }
                            continue;
                        };
                        while let Some(f) = entry.get_mut().pop_first() {
                            if !emit_fragment(&mut e, ids, c, sizes.frag, f, true, HB_LEN) {
                                entry.get_mut().insert(f);
                                break 'frags;
                            }
                            self.stats.resent_data += 1;
                            self.stats.resent_fragments += 1;
                        }
                        entry.remove();
                    }
                    while let Some(&sn) = p.requested.first() {
                        let change = if sn >= p.first_relevant {
                            w.history.get(sn)
                        } else {
                            None
                        };
                        match change {
                            Some(c) => {
                                let from = if p.repair_frag.0 == sn {
                                    p.repair_frag.1
                                } else {
                                    1
                                };
                                match emit_change(
                                    &mut e,
                                    ids,
                                    c,
                                    sizes,
                                    from,
                                    HB_LEN,
                                    &mut self.stats,
                                ) {
                                    Emitted::All => {
                                        self.stats.resent_data += 1;
                                        p.requested.remove(&sn);
                                        p.note_resent(sn, now);
                                        p.repair_frag = (0, 1);
                                    }
                                    Emitted::Upto(f) => {
                                        p.repair_frag = (sn, f);
                                        break;
                                    }
                                    Emitted::Nothing => break,
                                }
                            }
                            None => {
                                // Coalesce a run of unavailable SNs into one GAP.
                                let mut end = sn;
                                while p.requested.contains(&(end + 1))
                                    && (end + 1 < p.first_relevant
                                        || w.history.get(end + 1).is_none())
                                {
                                    end += 1;
                                }
                                if !e.gap(reader_eid, writer_eid, sn, &SnSet::new(end + 1)) {
                                    break;
                                }
                                p.requested = p.requested.split_off(&(end + 1));
                            }
                        }
                    }
                }
                self.stats.resent_bytes += (e.len() - before) as u64;
                w.hb_count = w.hb_count.wrapping_add(1);
                e.heartbeat(reader_eid, writer_eid, first, last, w.hb_count, false);
                p.hb_pending = false;
                fill_dests(out, p.locators.iter());
                return Some(e.len());
            }
            w.repair_work = w.proxies.iter().any(ReaderProxy::has_repair_work);
            remaining |= w.repair_work;
        }
        self.work.repair = remaining;
        None
    }

    /// Least time between two ACKNACKs of a reader that request data.
    fn nack_holdoff(&self) -> core::time::Duration {
        self.config.heartbeat_period / 10
    }
}

/// Writer payload limits: the largest payload sent as one DATA, the
/// fragment size used above it, and the writer's datagram size.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    max_data: usize,
    frag: usize,
    max_message: usize,
}

impl Sizes {
    fn new(config: &ParticipantConfig, qos: &WriterQos) -> Self {
        let max_message = qos
            .max_message_size
            .map_or(config.max_message_size, |m| m.min(config.max_message_size))
            .max(DATA_OVERHEAD + MIN_FRAGMENT + 16);
        let max_data = max_message - DATA_OVERHEAD;
        // Leave room for the DATA_FRAG header and inline QoS; a fragment
        // must also fit the 16-bit fragmentSize field.
        let auto = (max_data.saturating_sub(16) & !3).clamp(MIN_FRAGMENT, 0xff00);
        let frag = match qos.fragment_size.unwrap_or(config.fragment_size) {
            0 => auto,
            f => f.clamp(MIN_FRAGMENT, auto),
        };
        Self {
            max_data,
            frag,
            max_message,
        }
    }
}

/// What [`emit_change`] managed to put into a datagram.
enum Emitted {
    /// The whole change (or its remaining fragments).
    All,
    /// Fragments up to (excluding) this 1-based fragment number.
    Upto(u32),
    /// Nothing fitted.
    Nothing,
}

/// Emits a change as DATA, or as DATA_FRAGs from fragment `from` on when it is
/// larger than `sizes.max_data`, keeping `reserve` bytes free.
fn emit_change(
    e: &mut Emitter<'_>,
    ids: (EntityId, EntityId),
    c: &CacheChange,
    sizes: Sizes,
    from: u32,
    reserve: usize,
    stats: &mut Stats,
) -> Emitted {
    let (reader_id, writer_id) = ids;
    let key_only = c.kind != ChangeKind::Alive;
    if c.payload.len() <= sizes.max_data {
        let need = Emitter::data_len(c.key_hash.is_some(), key_only, c.payload.len())
            + if c.source_timestamp.is_some() { 12 } else { 0 };
        if need + reserve > e.room() {
            return Emitted::Nothing;
        }
        if let Some(t) = c.source_timestamp {
            e.info_ts(t);
        }
        e.data(
            reader_id,
            writer_id,
            c.sn,
            c.key_hash.as_ref(),
            c.kind.status_info(),
            &c.payload,
            key_only,
        );
        stats.sent_data += 1;
        return Emitted::All;
    }
    let total = c.payload.len().div_ceil(sizes.frag) as u32;
    let mut f = from.max(1);
    let mut first_in_datagram = true;
    while f <= total {
        if !emit_fragment(e, ids, c, sizes.frag, f, first_in_datagram, reserve) {
            break;
        }
        first_in_datagram = false;
        stats.sent_data += 1;
        f += 1;
    }
    if f > total {
        Emitted::All
    } else if f > from.max(1) {
        Emitted::Upto(f)
    } else {
        Emitted::Nothing
    }
}

/// Emits fragment `f` (1-based) of `c` as one DATA_FRAG (preceded by INFO_TS
/// when `with_ts` and the change has a source timestamp); false if it does not
/// fit with `reserve` bytes left over.
fn emit_fragment(
    e: &mut Emitter<'_>,
    ids: (EntityId, EntityId),
    c: &CacheChange,
    frag: usize,
    f: u32,
    with_ts: bool,
    reserve: usize,
) -> bool {
    let start = (f as usize - 1).saturating_mul(frag);
    let Some(bytes) = c.payload.get(start..c.payload.len().min(start + frag)) else {
        return true; // Beyond the sample: nothing to send.
    };
    let key_only = c.kind != ChangeKind::Alive;
    let qos = f == 1;
    let ts = with_ts && c.source_timestamp.is_some();
    let need = Emitter::data_frag_len(qos && c.key_hash.is_some(), qos && key_only, bytes.len())
        + if ts { 12 } else { 0 };
    if need + reserve > e.room() {
        return false;
    }
    if let (true, Some(t)) = (ts, c.source_timestamp) {
        e.info_ts(t);
    }
    e.data_frag(
        ids.0,
        ids.1,
        c.sn,
        if qos { c.key_hash.as_ref() } else { None },
        if qos { c.kind.status_info() } else { 0 },
        f,
        frag as u16,
        c.payload.len() as u32,
        bytes,
        key_only,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ReaderAttributes;

    #[test]
    fn piggy_backed_heartbeats_ask_for_acks_only_when_needed() {
        let mut qos = WriterQos {
            history: History::KeepAll,
            ..WriterQos::default()
        };
        qos.resource_limits.max_samples = 40;
        let guid = Guid::new(GuidPrefix([7; 12]), EntityId([0, 0, 1, 2]));
        let mut w = LocalWriter::new(guid, Role::User, "T".into(), "U".into(), qos);
        let reader = Guid::new(GuidPrefix([8; 12]), EntityId([0, 0, 1, 7]));
        w.proxies
            .push(ReaderProxy::new(reader, true, Vec::new(), 0));
        let ms = core::time::Duration::from_millis(1);
        let t0 = Timestamp(1_000_000_000);
        // Nothing asked yet: ask.
        assert!(w.wants_ack(t0, 5 * ms));
        w.last_ack_request = Some(t0);
        // A few unacknowledged samples, soon after the last request: final.
        w.pushed = 9;
        assert!(!w.wants_ack(t0.saturating_add(ms), 5 * ms));
        // A quarter of the bounded history unacknowledged: ask.
        w.pushed = 10;
        assert!(w.wants_ack(t0.saturating_add(ms), 5 * ms));
        // Acknowledged up to 5: 5 unacknowledged, below the quarter.
        w.proxies[0].acked = 5;
        assert!(!w.wants_ack(t0.saturating_add(ms), 5 * ms));
        // The last request is old: ask again.
        assert!(w.wants_ack(t0.saturating_add(5 * ms), 5 * ms));
        // A deep history (a batching writer's) asks per quarter, not per 64.
        w.qos.resource_limits.max_samples = 12_800;
        w.proxies[0].acked = 0;
        w.pushed = 3_199;
        assert!(!w.wants_ack(t0.saturating_add(ms), 5 * ms));
        w.pushed = 3_200;
        assert!(w.wants_ack(t0.saturating_add(ms), 5 * ms));
    }

    fn cfg(n: u8) -> ParticipantConfig {
        let ip = core::net::Ipv4Addr::new(127, 0, 0, n);
        ParticipantConfig {
            guid_prefix: GuidPrefix([1, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, n]),
            metatraffic_unicast_locators: vec![Locator::udpv4(ip, 7410)],
            default_unicast_locators: vec![Locator::udpv4(ip, 7411)],
            spdp_destinations: vec![Locator::udpv4(
                core::net::Ipv4Addr::new(239, 255, 0, 1),
                7400,
            )],
            ..ParticipantConfig::default()
        }
    }

    fn drain(p: &mut Participant, now: Timestamp) -> Vec<(Vec<u8>, Vec<Locator>)> {
        let mut buf = vec![0u8; 65536];
        let mut out = Vec::new();
        while let Some(t) = p.poll_transmit(now, &mut buf) {
            out.push((buf[..t.len].to_vec(), t.destinations));
        }
        out
    }

    fn wattrs(keyed: bool) -> WriterAttributes {
        WriterAttributes {
            topic_name: "T".into(),
            type_name: "U".into(),
            keyed,
            qos: WriterQos::default(),
        }
    }

    fn rattrs(keyed: bool) -> ReaderAttributes {
        ReaderAttributes {
            topic_name: "T".into(),
            type_name: "U".into(),
            keyed,
            qos: ReaderQos::default(),
        }
    }

    #[test]
    fn first_timeout_announces_spdp_to_the_destinations() {
        let mut p = Participant::new(cfg(1), Timestamp(0));
        assert_eq!(p.poll_timeout(), Some(Timestamp(0)));
        p.handle_timeout(Timestamp(0));
        let out = drain(&mut p, Timestamp(0));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].1, cfg(1).spdp_destinations);
        let (h, subs) = codec::parse(&out[0].0).unwrap();
        assert_eq!(h.prefix, cfg(1).guid_prefix);
        let Some(Ok(Sub::Data(d))) = subs.into_iter().next() else {
            panic!("no DATA");
        };
        assert_eq!(d.writer_id, SPDP_WRITER);
        let spdp = SpdpData::decode(d.payload.unwrap()).unwrap();
        assert_eq!(spdp.guid_prefix, cfg(1).guid_prefix);
        assert_eq!(spdp.default_unicast, cfg(1).default_unicast_locators);
        assert_eq!(spdp.builtin_endpoints & 0x3f, 0x3f);
        // Next announcement 100 ms later (quick initial phase).
        assert_eq!(
            p.poll_timeout(),
            Some(Timestamp(0).saturating_add(INITIAL_ANNOUNCEMENT_PERIOD))
        );
    }

    #[test]
    fn own_and_foreign_domain_announcements_are_ignored() {
        let mut a = Participant::new(cfg(1), Timestamp(0));
        a.handle_timeout(Timestamp(0));
        let own = drain(&mut a, Timestamp(0));
        a.handle_datagram(Timestamp(1), None, &own[0].0);
        assert!(a.discovered_participants().is_empty());

        let mut other = cfg(2);
        other.domain_id = 5;
        let mut b = Participant::new(other, Timestamp(0));
        b.handle_timeout(Timestamp(0));
        let foreign = drain(&mut b, Timestamp(0));
        a.handle_datagram(Timestamp(1), None, &foreign[0].0);
        assert!(a.discovered_participants().is_empty());

        let mut c = Participant::new(cfg(3), Timestamp(0));
        c.handle_timeout(Timestamp(0));
        let same = drain(&mut c, Timestamp(0));
        a.handle_datagram(Timestamp(1), None, &same[0].0);
        assert_eq!(a.discovered_participants(), vec![cfg(3).guid_prefix]);
        assert_eq!(
            a.poll_event(),
            Some(Event::ParticipantDiscovered {
                prefix: cfg(3).guid_prefix
            })
        );
        // The newcomer gets a unicast announcement at once, then SEDP traffic.
        let replies = drain(&mut a, Timestamp(1));
        assert_eq!(replies[0].1, cfg(3).metatraffic_unicast_locators);
    }

    #[test]
    fn entity_kinds_follow_keyed_and_handles_are_checked() {
        let mut p = Participant::new(cfg(1), Timestamp(0));
        let wk = p.create_writer(wattrs(true), Timestamp(0)).unwrap();
        let wn = p.create_writer(wattrs(false), Timestamp(0)).unwrap();
        let rk = p.create_reader(rattrs(true), Timestamp(0)).unwrap();
        let rn = p.create_reader(rattrs(false), Timestamp(0)).unwrap();
        assert_eq!(p.writer_guid(wk).unwrap().entity_id.0[3], 0x02);
        assert_eq!(p.writer_guid(wn).unwrap().entity_id.0[3], 0x03);
        assert_eq!(p.reader_guid(rk).unwrap().entity_id.0[3], 0x07);
        assert_eq!(p.reader_guid(rn).unwrap().entity_id.0[3], 0x04);
        // Local writers and readers of a topic match each other.
        assert_eq!(p.matched_reader_count(wk), 2);
        assert_eq!(p.matched_writer_count(rn), 2);
        p.delete_writer(wk, Timestamp(1)).unwrap();
        assert_eq!(p.writer_guid(wk), None);
        assert_eq!(p.matched_writer_count(rn), 1);
        assert_eq!(
            p.delete_writer(wk, Timestamp(1)),
            Err(EngineError::UnknownWriter)
        );
        assert_eq!(
            p.write(
                wk,
                WriteRequest {
                    kind: ChangeKind::Alive,
                    key_hash: None,
                    serialized_payload: &[],
                    source_timestamp: None
                },
                Timestamp(1)
            ),
            Err(WriteError::UnknownWriter)
        );
        assert!(
            p.take_sample(ReaderId(0)).is_none(),
            "builtin readers are hidden"
        );
        let mut bad = wattrs(false);
        bad.qos.history = History::KeepLast(0);
        assert!(matches!(
            p.create_writer(bad, Timestamp(1)),
            Err(EngineError::InconsistentQos(_))
        ));
    }

    #[test]
    fn changed_spdp_locators_are_followed() {
        let mut a = Participant::new(cfg(1), Timestamp(0));
        let w = a.create_writer(wattrs(false), Timestamp(0)).unwrap();
        let mut b = Participant::new(cfg(2), Timestamp(0));
        b.create_reader(rattrs(false), Timestamp(0)).unwrap();
        b.handle_timeout(Timestamp(0));
        for (d, _) in drain(&mut b, Timestamp(0)) {
            a.handle_datagram(Timestamp(1), None, &d);
        }
        // Hand b's SEDP subscription to a.
        for (d, _) in drain(&mut b, Timestamp(1)) {
            a.handle_datagram(Timestamp(1), None, &d);
        }
        let mut t = 2;
        while a.matched_reader_count(w) == 0 && t < 50 {
            for (d, _) in drain(&mut a, Timestamp(t)) {
                b.handle_datagram(Timestamp(t), None, &d);
            }
            for (d, _) in drain(&mut b, Timestamp(t)) {
                a.handle_datagram(Timestamp(t), None, &d);
            }
            t += 1;
        }
        assert_eq!(a.matched_reader_count(w), 1);
        // b comes back with another user locator.
        let mut moved = cfg(2);
        let new_loc = Locator::udpv4(core::net::Ipv4Addr::new(127, 0, 0, 9), 9999);
        moved.default_unicast_locators = vec![new_loc];
        let mut b2 = Participant::new(moved, Timestamp(0));
        b2.handle_timeout(Timestamp(0));
        for (d, _) in drain(&mut b2, Timestamp(0)) {
            a.handle_datagram(Timestamp(t), None, &d);
        }
        drain(&mut a, Timestamp(t));
        a.write(
            w,
            WriteRequest {
                kind: ChangeKind::Alive,
                key_hash: None,
                serialized_payload: &[0, 1, 0, 0],
                source_timestamp: None,
            },
            Timestamp(t),
        )
        .unwrap();
        let out = drain(&mut a, Timestamp(t));
        assert!(out.iter().any(|(_, d)| d == &vec![new_loc]), "{out:?}");
    }

    /// Forces every work hint on: the next `poll_transmit` then scans
    /// everything, as it did before the hints existed.
    fn force_full_scan(p: &mut Participant) {
        p.work.ack = true;
        p.work.push = true;
        p.work.push_from = 0;
        p.work.repair = true;
        for r in p.readers.iter_mut().flatten() {
            r.ack_work = true;
        }
        for w in p.writers.iter_mut().flatten() {
            w.repair_work = true;
        }
    }

    /// Delivers what `from` sends to `to`, dropping every `drop_every`th
    /// datagram (counted by `n`); then checks that the work hints hid
    /// nothing: a full scan finds nothing more to send, and `poll_timeout`
    /// is not later than the earliest deadline.
    fn pump_checked(
        from: &mut Participant,
        to: &mut Participant,
        now: Timestamp,
        n: &mut u32,
        drop_every: u32,
    ) {
        let mut buf = vec![0u8; 65536];
        let mut dests = Vec::new();
        while let Some(len) = from.poll_transmit_into(now, &mut buf, &mut dests) {
            *n += 1;
            if !n.is_multiple_of(drop_every) {
                to.handle_datagram(now, None, &buf[..len]);
            }
        }
        force_full_scan(from);
        assert!(
            from.poll_transmit_into(now, &mut buf, &mut dests).is_none(),
            "a work hint hid a datagram"
        );
        // Every move of the acknowledgement bound ran after_ack (pushes skip
        // it when the bound did not move): running it again purges nothing
        // and frees no blocked writer. (An AllAcknowledged may legitimately
        // still be due: matching does not run after_ack.)
        for wi in 0..from.writers.len() {
            let state = |p: &Participant| {
                p.writers[wi]
                    .as_ref()
                    .map(|w| (w.history.len(), w.history.first_sn(), w.blocked))
            };
            let before = state(from);
            from.after_ack(wi);
            assert_eq!(before, state(from), "after_ack had work left");
        }
        for p in [&*from, &*to] {
            assert!(p.poll_timeout().unwrap() <= p.next_deadline());
        }
    }

    #[test]
    fn work_hints_never_hide_work() {
        let mut a = Participant::new(cfg(1), Timestamp(0));
        let mut b = Participant::new(cfg(2), Timestamp(0));
        // Reliable KEEP_ALL (a bounded reader: back-pressure), reliable KEEP_LAST
        // with batching, best effort.
        let mut w_all = wattrs(false);
        w_all.topic_name = "All".into();
        w_all.qos.history = History::KeepAll;
        let mut r_all = rattrs(false);
        r_all.topic_name = "All".into();
        r_all.qos.reliability = Reliability::RELIABLE;
        r_all.qos.history = History::KeepAll;
        r_all.qos.resource_limits.max_samples = 4;
        let mut w_batch = wattrs(true);
        w_batch.topic_name = "Batch".into();
        w_batch.qos.batching.enabled = true;
        w_batch.qos.batching.max_bytes = 64;
        let mut r_batch = rattrs(true);
        r_batch.topic_name = "Batch".into();
        r_batch.qos.reliability = Reliability::RELIABLE;
        let mut w_be = wattrs(false);
        w_be.qos.reliability = Reliability::BEST_EFFORT;
        let writers = [
            a.create_writer(w_all, Timestamp(0)).unwrap(),
            a.create_writer(w_batch, Timestamp(0)).unwrap(),
            a.create_writer(w_be, Timestamp(0)).unwrap(),
        ];
        let readers = [
            b.create_reader(r_all, Timestamp(0)).unwrap(),
            b.create_reader(r_batch, Timestamp(0)).unwrap(),
            b.create_reader(rattrs(false), Timestamp(0)).unwrap(),
        ];
        let (mut n, mut t, mut taken) = (0u32, 0u64, 0usize);
        for step in 0..4000u64 {
            // Irregular time steps around the 10 ms NACK hold-off and the
            // 1 ms flush delay.
            t += [50_000, 300_000, 1_000_000, 3_000_000, 20_000_000][(step % 5) as usize]
                + step % 13;
            let now = Timestamp(t);
            for p in [&mut a, &mut b] {
                if p.poll_timeout().is_some_and(|d| d <= now) {
                    p.handle_timeout(now);
                }
            }
            if step % 4 != 3 {
                let w = writers[(step % 3) as usize];
                let key = [(step % 5) as u8; 16];
                let _ = a.write(
                    w,
                    WriteRequest {
                        kind: ChangeKind::Alive,
                        key_hash: Some(key),
                        serialized_payload: &[0, 1, 0, 0, step as u8],
                        source_timestamp: None,
                    },
                    now,
                );
            }
            pump_checked(&mut a, &mut b, now, &mut n, 7);
            pump_checked(&mut b, &mut a, now, &mut n, 7);
            // Take slowly from the bounded reader, everything from the others.
            if step % 5 == 0 {
                taken += usize::from(b.take_sample(readers[0]).is_some());
            }
            for r in &readers[1..] {
                while b.take_sample(*r).is_some() {
                    taken += 1;
                }
            }
            while a.poll_event().is_some() {}
            while b.poll_event().is_some() {}
        }
        assert!(taken > 500, "{taken}");
        assert!(a.stats().resent_data > 0);
    }

    /// Any datagram renews its sender's lease, also while the renewal is
    /// cached for the peer heard last (alone, or alternating with another
    /// peer), and a silent peer still expires.
    #[test]
    fn traffic_renews_leases_and_silence_expires_them() {
        let ms = core::time::Duration::from_millis(1);
        let mut a = Participant::new(cfg(1), Timestamp(0));
        let a_reader = a.create_reader(rattrs(false), Timestamp(0)).unwrap();
        let mut peers: Vec<Participant> = (2..=3)
            .map(|n| {
                let mut c = cfg(n);
                c.lease_duration = 1000 * ms;
                c.spdp_period = core::time::Duration::from_secs(100);
                let mut p = Participant::new(c, Timestamp(0));
                p.create_writer(wattrs(false), Timestamp(0)).unwrap();
                p
            })
            .collect();
        let mut t = Timestamp(0);
        // Runs every participant at `t`; `talking[k]`: peer k writes a sample
        // and its datagrams reach `a` (otherwise they are lost).
        let mut step = |a: &mut Participant, t: Timestamp, talking: [bool; 2], write: bool| {
            for (k, p) in peers.iter_mut().enumerate() {
                if write && talking[k] {
                    let payload = [0, 1, 0, 0, k as u8];
                    let req = WriteRequest {
                        kind: ChangeKind::Alive,
                        key_hash: None,
                        serialized_payload: &payload,
                        source_timestamp: None,
                    };
                    p.write(WriterId(FIRST_USER), req, t).unwrap();
                }
                if p.poll_timeout().is_some_and(|d| d <= t) {
                    p.handle_timeout(t);
                }
                for (d, _) in drain(p, t) {
                    if talking[k] {
                        a.handle_datagram(t, None, &d);
                    }
                }
            }
            if a.poll_timeout().is_some_and(|d| d <= t) {
                a.handle_timeout(t);
            }
            for (d, _) in drain(a, t) {
                for p in peers.iter_mut() {
                    p.handle_datagram(t, None, &d);
                }
            }
            while a.take_sample(a_reader).is_some() {}
        };
        // Discovery (initial SPDP burst, within the 1 s lease).
        for _ in 0..500 {
            t = t.saturating_add(ms);
            step(&mut a, t, [true, true], false);
        }
        assert_eq!(a.discovered_participants().len(), 2);
        // User data only, 200 ms apart, for 5 lease durations: both peers,
        // then the second alone (the first expires).
        for _ in 0..25 {
            t = t.saturating_add(200 * ms);
            step(&mut a, t, [true, true], true);
            assert_eq!(a.discovered_participants().len(), 2, "at {t:?}");
        }
        for _ in 0..25 {
            t = t.saturating_add(200 * ms);
            step(&mut a, t, [false, true], true);
        }
        assert_eq!(a.discovered_participants(), vec![cfg(3).guid_prefix]);
        // Silence: the second expires too.
        for _ in 0..15 {
            t = t.saturating_add(100 * ms);
            step(&mut a, t, [false, false], false);
        }
        assert!(a.discovered_participants().is_empty());
        let lost = core::iter::from_fn(|| a.poll_event())
            .filter(|e| matches!(e, Event::ParticipantLost { .. }))
            .count();
        assert_eq!(lost, 2);
    }

    #[test]
    fn malformed_datagrams_are_counted() {
        let mut p = Participant::new(cfg(1), Timestamp(0));
        p.handle_datagram(Timestamp(0), None, b"hello");
        p.handle_datagram(Timestamp(0), None, &[0u8; 3]);
        let mut m = b"RTPS\x02\x05\x01\xfd".to_vec();
        m.extend_from_slice(&[9; 12]);
        m.extend_from_slice(&[0x15, 0x01, 0xff, 0x00]); // DATA claiming 255 bytes
        p.handle_datagram(Timestamp(0), None, &m);
        m.truncate(20);
        m.extend_from_slice(&[0x80, 0x01, 0x00, 0x00]); // vendor submessage, empty
        p.handle_datagram(Timestamp(0), None, &m);
        let s = p.stats();
        assert_eq!(s.received_datagrams, 4);
        assert_eq!(s.malformed_datagrams, 3);
        assert_eq!(s.unknown_submessages, 1);
    }
}
