//! Local writers: [`LocalWriter`] (history, push state, matched reader
//! proxies), its cached [`PushPlan`] and payload limits ([`Sizes`]).

use super::*;

/// Datagrams of new data after which a piggy-backed HEARTBEAT asks for an acknowledgement
/// whatever the sample count (see [`LocalWriter::wants_ack`]).
pub(super) const ACK_REQUEST_DATAGRAMS: u32 = 16;

#[derive(Debug)]
pub(super) struct LocalWriter {
    pub(super) guid: Guid,
    pub(super) role: Role,
    pub(super) topic_name: String,
    pub(super) type_name: String,
    pub(super) qos: WriterQos,
    pub(super) history: HistoryCache,
    pub(super) last_sn: i64,
    pub(super) pushed: i64,
    /// Next fragment of SN `pushed + 1` to push (1-based).
    pub(super) push_frag: u32,
    /// Matched readers; added and removed only through
    /// [`LocalWriter::add_proxy`], [`LocalWriter::remove_proxy`] and
    /// [`LocalWriter::retain_proxies`], which keep the counts below.
    pub(super) proxies: Proxies<ReaderProxy>,
    /// Reliable proxies.
    pub(super) reliable_proxies: usize,
    /// Reliable proxies that have not acknowledged `last_sn`
    /// ([`ReaderProxy::lagging`]): kept so that neither the timer nor an
    /// ACKNACK scans the proxies (one per remote participant in a builtin
    /// SEDP writer) to know whether any lags.
    pub(super) lagging_proxies: usize,
    pub(super) hb_count: i32,
    pub(super) next_hb: Option<Timestamp>,
    pub(super) blocked: bool,
    pub(super) all_acked_reported: bool,
    /// Payload bytes written but not pushed yet (batching).
    pub(super) unsent_bytes: usize,
    /// Samples written but not pushed yet (batching).
    pub(super) unsent_samples: usize,
    /// When the oldest unpushed sample was written (batching).
    pub(super) batch_since: Option<Timestamp>,
    /// The source timestamp the samples of the pending batch take (batching with a
    /// `source_timestamp_resolution`): the first sample's, or the last one's that was
    /// more than the resolution later.
    pub(super) batch_ts: Option<Time>,
    /// Push everything pending now (explicit flush, large sample).
    pub(super) flush: bool,
    pub(super) hbf_count: i32,
    /// A HEARTBEAT (and HEARTBEAT_FRAG) is due but did not fit the last
    /// datagram: the next push of this writer is that HEARTBEAT alone.
    pub(super) hb_owed: bool,
    pub(super) sizes: Sizes,
    /// When a piggy-backed HEARTBEAT last asked readers to acknowledge.
    pub(super) last_ack_request: Option<Timestamp>,
    /// The last SN that request announced: the next one waits for a quarter of the history
    /// beyond it, however late the acknowledgement.
    pub(super) last_ack_request_sn: i64,
    /// Datagrams of new data pushed since that request (large samples and batches ask at
    /// least every [`ACK_REQUEST_DATAGRAMS`], which keeps congestion control fed).
    pub(super) datagrams_since_ack_request: u32,
    /// An acknowledgement request in flight: (SN it covers, when sent); the
    /// first ACKNACK acknowledging that SN is a round-trip sample.
    pub(super) rtt_probe: Option<(i64, Timestamp)>,
    /// HEARTBEATs sent by the timer since the last push or acknowledgement
    /// progress: the next waits `rto << hb_backoff` (at most the period).
    pub(super) hb_backoff: u32,
    /// Losses of SNs up to this one were sent before the last congestion
    /// decrease: they are repaired but not counted again ([`crate::congestion`]).
    pub(super) recovery_sn: i64,
    /// When the last congestion decrease happened (repairs sent before it
    /// that are reported lost do not count again).
    pub(super) recovery_at: Timestamp,
    /// Some proxy may have repair work ([`ReaderProxy::has_repair_work`]);
    /// false guarantees none has (see [`Work`]).
    pub(super) repair_work: bool,
    /// Where the next scan for repair work starts (the proxy served last):
    /// a scan from the first proxy each time costs O(proxies²) per round of
    /// HEARTBEATs to thousands of readers.
    pub(super) repair_cursor: usize,
    /// How new data is pushed, derived from `proxies`; `None` after they (or
    /// their locators) changed: every such place calls
    /// [`LocalWriter::proxies_changed`].
    pub(super) plan: Option<PushPlan>,
}

/// Destinations and header choices of a writer's push, derived from its
/// proxies (cached: a push then need not gather and sort the locators).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PushPlan {
    /// Distinct locators of all matched readers.
    pub(super) dests: Vec<Locator>,
    /// The reader's entity id when there is one reader, else UNKNOWN.
    pub(super) reader_id: EntityId,
    /// The GUID prefix shared by all readers (then an INFO_DST leads).
    pub(super) prefix: Option<GuidPrefix>,
    /// A reliable writer with a reliable reader: HEARTBEATs are piggy-backed.
    pub(super) with_hb: bool,
    /// Every destination is a shared-memory locator (then a push may fill
    /// [`ParticipantConfig::shm_message_size`]).
    pub(super) all_shm: bool,
    /// Every reader's participant reads DATA_REFs (announced in SPDP); found on the first
    /// push that may send one.
    pub(super) refs: Option<bool>,
}

impl PushPlan {
    pub(super) fn new(proxies: &[ReaderProxy], reliable_writer: bool) -> Self {
        let mut dests = Vec::new();
        fill_dests(&mut dests, proxies.iter().flat_map(|p| p.locators.iter()));
        let (reader_id, prefix) = Self::addressing(proxies);
        let all_shm =
            !dests.is_empty() && dests.iter().all(|l| l.kind == Locator::KIND_FERRODDS_SHM);
        Self {
            dests,
            reader_id,
            prefix,
            with_hb: Self::heartbeats(proxies, reliable_writer),
            all_shm,
            refs: None,
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
    pub(super) fn is_current(&self, proxies: &[ReaderProxy], reliable_writer: bool) -> bool {
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
    /// The highest SN pushed, or begun (some fragments out): what anything
    /// sent now comes after.
    pub(super) fn push_mark(&self) -> i64 {
        self.pushed + i64::from(self.push_frag > 1)
    }

    pub(super) fn new(
        guid: Guid,
        role: Role,
        topic_name: String,
        type_name: String,
        qos: WriterQos,
    ) -> Self {
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
            proxies: Proxies::new(guid.prefix),
            reliable_proxies: 0,
            lagging_proxies: 0,
            hb_count: 0,
            next_hb: None,
            blocked: false,
            all_acked_reported: false,
            unsent_bytes: 0,
            unsent_samples: 0,
            batch_since: None,
            batch_ts: None,
            flush: false,
            hbf_count: 0,
            hb_owed: false,
            last_ack_request: None,
            last_ack_request_sn: 0,
            datagrams_since_ack_request: 0,
            rtt_probe: None,
            hb_backoff: 0,
            recovery_sn: 0,
            recovery_at: Timestamp(0),
            repair_work: false,
            repair_cursor: 0,
            plan: None,
            sizes: Sizes {
                max_data: 0,
                frag: 0,
                max_message: 0,
                batching: false,
                shared_ts: false,
                frag_key_hash: true,
                refs: false,
            },
        }
    }

    /// When held samples must go out at the latest (batching).
    pub(super) fn batch_deadline(&self) -> Option<Timestamp> {
        let b = &self.qos.batching;
        if !b.enabled
            || b.max_flush_delay == crate::qos::DURATION_INFINITE
            || self.pushed >= self.last_sn
        {
            return None;
        }
        self.batch_since
            .map(|t| t.saturating_add(self.qos.batching.max_flush_delay))
    }

    /// Whether pending samples may be pushed now.
    pub(super) fn push_ready(&self, now: Timestamp) -> bool {
        let b = &self.qos.batching;
        !b.enabled
            || self.flush
            || self.push_frag > 1
            || self.unsent_bytes >= b.max_bytes
            || (b.max_samples > 0 && self.unsent_samples >= b.max_samples)
            || self.batch_deadline().is_some_and(|d| now >= d)
    }

    /// The source timestamp of a sample of `len` payload bytes written at `ts`: inside a
    /// batch already started, the batch's timestamp unless `ts` is more than
    /// `source_timestamp_resolution` later (then `ts` becomes the batch's). `started`: the
    /// sample starts a batch.
    pub(super) fn batch_timestamp(
        &mut self,
        ts: Option<Time>,
        len: usize,
        started: bool,
    ) -> Option<Time> {
        let b = &self.qos.batching;
        if !b.enabled || len > self.sizes.max_data {
            return ts;
        }
        if started {
            self.batch_ts = ts;
            return ts;
        }
        let t = ts?;
        match self.batch_ts {
            Some(first) if !later_than(t, first, b.source_timestamp_resolution) => Some(first),
            _ => {
                self.batch_ts = Some(t);
                Some(t)
            }
        }
    }

    /// Bookkeeping once SN `pushed` went out whole.
    pub(super) fn pushed_one(&mut self, len: usize) {
        self.unsent_bytes = self.unsent_bytes.saturating_sub(len);
        self.unsent_samples = self.unsent_samples.saturating_sub(1);
    }

    pub(super) fn push_done(&mut self) {
        if self.pushed >= self.last_sn {
            self.unsent_bytes = 0;
            self.unsent_samples = 0;
            self.batch_since = None;
            self.flush = false;
        }
    }

    pub(super) fn reliable(&self) -> bool {
        self.qos.reliability.kind == ReliabilityKind::Reliable
    }

    /// Whether congestion control paces this writer's data: reliable
    /// writers, and best-effort ones that ask for it
    /// ([`WriterQos::pace_best_effort`]).
    pub(super) fn paced(&self) -> bool {
        self.reliable() || self.qos.pace_best_effort
    }

    /// Forgets the push plan: call whenever `proxies` or their locators change.
    pub(super) fn proxies_changed(&mut self) {
        self.plan = None;
    }

    /// Whether the HEARTBEAT piggy-backed on new data should ask for an
    /// ACKNACK (not final). Asking on every sample doubles the datagrams of a
    /// ping-pong; so ask only when a quarter of a bounded history (64 samples
    /// of an unbounded one) is unacknowledged and was pushed after the last
    /// request, when [`ACK_REQUEST_DATAGRAMS`] datagrams went out since it (a
    /// large sample's fragments, batches), or when the last request is
    /// `min_interval` old. Readers answer a final HEARTBEAT anyway when it
    /// shows them missing data, and the periodic HEARTBEAT still asks while a
    /// reader lags.
    #[cfg(test)]
    pub(super) fn wants_ack(&self, now: Timestamp, min_interval: core::time::Duration) -> bool {
        let ns = u64::try_from(min_interval.as_nanos()).unwrap_or(u64::MAX);
        self.wants_ack_at(now, ns, self.ack_bound())
    }

    /// [`LocalWriter::wants_ack`] with the interval in nanoseconds and the
    /// writer's current [`LocalWriter::ack_bound`] given.
    pub(super) fn wants_ack_at(
        &self,
        now: Timestamp,
        min_interval_ns: u64,
        ack_bound: i64,
    ) -> bool {
        let every = self.max_samples().map_or(64, |m| (m / 4).max(1)) as i64;
        // Counted from the last request too: while its acknowledgement is on its way every
        // datagram would otherwise ask again, and each reader answer each one (on loopback
        // that was one ACKNACK per sample, half the datagrams of an unbatched flow).
        let unacked = self
            .pushed
            .saturating_sub(ack_bound.max(self.last_ack_request_sn));
        unacked >= every
            || self.datagrams_since_ack_request >= ACK_REQUEST_DATAGRAMS
            || self
                .last_ack_request
                .is_none_or(|t| now.0 >= t.0.saturating_add(min_interval_ns))
    }

    /// Highest SN every reliable reader acknowledged and that was pushed.
    pub(super) fn ack_bound(&self) -> i64 {
        self.acked_floor().min(self.pushed)
    }

    /// Whether starting fragmented sample `sn` of `len` bytes now would put
    /// more than [`FRAG_WINDOW_BYTES`] (or two such samples) beyond
    /// `acked`, the slowest reliable reader's acknowledgement. Only KEEP_ALL
    /// writers wait (they wait for that reader anyway once their history is
    /// full); a KEEP_LAST writer goes on, so a reader that stopped answering
    /// does not hold up the others until its lease ends.
    pub(super) fn frag_window_full(&self, acked: i64, sn: i64, len: usize) -> bool {
        if !matches!(self.qos.history, History::KeepAll) {
            return false;
        }
        let limit = FRAG_WINDOW_BYTES.max(2 * len) as u64;
        // A subtraction of the history's running byte count: a walk over the SNs in
        // flight cost O(window) per push attempt (2,000 samples of 8 KiB behind a
        // batching writer's deep history made the push loop the publisher's bottleneck).
        len as u64 + self.history.bytes_between(acked, sn) > limit
    }

    /// Lowest SN acknowledged by every reliable reader (`i64::MAX` if none
    /// is reliable); unlike [`LocalWriter::ack_bound`] a push does not move it.
    pub(super) fn acked_floor(&self) -> i64 {
        self.proxies
            .iter()
            .filter(|p| p.reliable)
            .map(|p| p.acked)
            .min()
            .unwrap_or(i64::MAX)
    }

    pub(super) fn hb_first(&self) -> i64 {
        self.history.first_sn().unwrap_or(self.last_sn + 1)
    }

    pub(super) fn lagging(&self) -> bool {
        self.reliable() && self.lagging_proxies > 0
    }

    pub(super) fn all_acked(&self) -> bool {
        self.lagging_proxies == 0
    }

    /// Whether the counts of reliable and lagging proxies are right (for
    /// debug assertions; this scans the proxies).
    pub(super) fn counts_ok(&self) -> bool {
        let reliable = self.proxies.iter().filter(|p| p.reliable).count();
        let lagging = self
            .proxies
            .iter()
            .filter(|p| p.lagging(self.last_sn))
            .count();
        (reliable, lagging) == (self.reliable_proxies, self.lagging_proxies)
    }

    /// Sets the newest SN (higher than the last): every reliable reader lags.
    pub(super) fn set_last_sn(&mut self, sn: i64) {
        debug_assert!(sn > self.last_sn);
        self.last_sn = sn;
        self.lagging_proxies = self.reliable_proxies;
    }

    /// Adds a matched reader (none with its GUID is there).
    pub(super) fn add_proxy(&mut self, p: ReaderProxy) {
        self.reliable_proxies += usize::from(p.reliable);
        self.lagging_proxies += usize::from(p.lagging(self.last_sn));
        self.proxies.push(p);
        self.proxies_changed();
    }

    /// Removes the matched reader at `i`.
    pub(super) fn remove_proxy(&mut self, i: usize) {
        let p = self.proxies.remove(i);
        self.reliable_proxies -= usize::from(p.reliable);
        self.lagging_proxies -= usize::from(p.lagging(self.last_sn));
        self.proxies_changed();
    }

    /// Keeps the matched readers `keep` accepts.
    pub(super) fn retain_proxies(&mut self, keep: impl FnMut(&ReaderProxy) -> bool) {
        self.proxies.retain(keep);
        self.reliable_proxies = self.proxies.iter().filter(|p| p.reliable).count();
        let last = self.last_sn;
        self.lagging_proxies = self.proxies.iter().filter(|p| p.lagging(last)).count();
        self.proxies_changed();
    }

    pub(super) fn max_samples(&self) -> Option<usize> {
        match self.qos.history {
            History::KeepAll => self.qos.resource_limits.max_samples_bound(),
            History::KeepLast(_) => None,
        }
    }

    pub(super) fn has_room(&self) -> bool {
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

/// Writer payload limits: the largest payload sent as one DATA, the
/// fragment size used above it, and the writer's datagram size.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sizes {
    pub(super) max_data: usize,
    pub(super) frag: usize,
    pub(super) max_message: usize,
    /// The writer batches (samples share datagrams).
    pub(super) batching: bool,
    /// A batch's samples share one source timestamp (one INFO_TS per batch).
    pub(super) shared_ts: bool,
    /// A first fragment may carry a key hash (room is kept for it): all but
    /// user writers of unkeyed topics, whose single instance needs none.
    pub(super) frag_key_hash: bool,
    /// The push goes to shared-memory readers only, without DDS Security: a change whose
    /// payload is in shared memory goes as a DATA_REF (never fragmented).
    pub(super) refs: bool,
}

impl Sizes {
    /// About the bytes a sample of `len` payload bytes occupies in datagrams
    /// (its DATA or DATA_FRAGs with their headers), to compare what readers
    /// acknowledge with what the pacer sent.
    pub(super) fn wire_len(&self, len: usize) -> usize {
        if len > self.max_data {
            len + len.div_ceil(self.frag) * FRAG_OVERHEAD
        } else if self.batching {
            // DATA header, INFO_TS unless the batch shares one, and a share of the
            // datagram's header and HEARTBEAT.
            len + 24 + if self.shared_ts { 0 } else { 12 } + 8
        } else {
            // One sample per datagram: its header, INFO_TS, the DATA header and the
            // HEARTBEAT a reliable writer adds to each (what the pacer counts as sent; an
            // INFO_DST, when all readers are in one participant, adds 16 more). Counting
            // less made the delivery rate of small samples look short of the pacing rate
            // (32 B: 0.7 of it) even with nothing queued, which stopped the rate from
            // growing after any decrease.
            len + 20 + 12 + 24 + 32
        }
    }

    pub(super) fn new(config: &ParticipantConfig, qos: &WriterQos, eid: EntityId) -> Self {
        Self::reserving(config, qos, eid, 0)
    }

    /// Like [`Sizes::new`], with `reserve` bytes of each datagram left for DDS Security's
    /// transforms (the message's and one protected submessage's).
    pub(super) fn reserving(
        config: &ParticipantConfig,
        qos: &WriterQos,
        eid: EntityId,
        reserve: usize,
    ) -> Self {
        let max_message = qos
            .max_message_size
            .map_or(config.max_message_size, |m| m.min(config.max_message_size))
            .saturating_sub(reserve)
            .max(DATA_OVERHEAD + MIN_FRAGMENT + 16);
        let max_data = max_message - DATA_OVERHEAD;
        // A fragment fills a datagram alone: header, INFO_DST, INFO_TS and
        // the DATA_FRAG header with the first fragment's inline QoS: room for
        // a key hash, except for user writers of unkeyed topics (their first
        // fragments go without one; status info still fits). The 32 bytes
        // matter on an Ethernet MTU: 1,356-byte fragments put an 8192 B
        // sample in 7 datagrams (the last with 56 bytes), 1,376-byte ones in 6.
        // HEARTBEATs go where room is left (a short last fragment) or in a
        // datagram of their own. A fragment must also fit the 16-bit
        // fragmentSize field.
        let frag_key_hash = eid.0[3] != EntityId::KIND_WRITER_NO_KEY;
        let overhead = FRAG_OVERHEAD
            + if frag_key_hash {
                FRAG_KEY_QOS
            } else {
                FRAG_STATUS_QOS
            };
        let auto = (max_message.saturating_sub(overhead) & !3).clamp(MIN_FRAGMENT, 0xff00);
        let frag = match qos.fragment_size.unwrap_or(config.fragment_size) {
            0 => auto,
            f => f.clamp(MIN_FRAGMENT, auto),
        };
        Self {
            max_data,
            frag,
            max_message,
            batching: qos.batching.enabled,
            shared_ts: qos.batching.source_timestamp_resolution == crate::qos::DURATION_INFINITE,
            frag_key_hash,
            refs: false,
        }
    }
}

/// Whether `t` is more than `resolution` after `first` (never for an infinite
/// resolution; any timestamps, without overflow).
fn later_than(t: Time, first: Time, resolution: core::time::Duration) -> bool {
    let r = discovery::wire_duration(resolution);
    if r == ferrodds_wire::Duration::INFINITE {
        return false;
    }
    // In 2^-32 s.
    let units = |seconds: i32, fraction: u32| (i64::from(seconds) << 32) | i64::from(fraction);
    units(t.seconds, t.fraction).saturating_sub(units(first.seconds, first.fraction))
        > units(r.seconds, r.fraction)
}
