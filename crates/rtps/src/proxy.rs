//! Per-remote-endpoint state: the reader proxy kept by a local writer and the
//! writer proxy kept by a local reader (DDSI-RTPS 2.5 §8.4.7.5, §8.4.10.4).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::reassembly::{
    FragmentRef, Reassembler, ReassemblyBudget, ReassemblyLimits, ReassemblySpares, Rejected,
};
use crate::sn_set::SnSet;
use crate::types::{ChangeKind, Timestamp};
use crate::{Guid, Locator, Time};

/// How far a local writer pushes new data past its slowest reliable reader's
/// acknowledgement: the default of [`crate::PeerLimits::max_out_of_order_samples`]
/// (behind one lost datagram a reader must hold all that a window of small
/// batched samples carries, or drop it and have it resent, 256 SNs per
/// ACKNACK).
pub(crate) const MAX_OUT_OF_ORDER: usize = 32768;
/// Out-of-order changes a writer proxy buffers whatever their size.
const MIN_OUT_OF_ORDER: usize = 64;
/// Most outstanding repair requests per reader proxy.
const MAX_REQUESTED: usize = 4096;
/// Most samples with outstanding fragment requests per reader proxy (and
/// with resent fragments remembered).
const MAX_FRAG_REQUESTS: usize = 64;
/// Most resent fragments remembered per sample.
const MAX_RESENT_FRAGS: usize = 1024;

/// A received change waiting for delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    pub(crate) kind: ChangeKind,
    pub(crate) key_hash: Option<[u8; 16]>,
    pub(crate) source_timestamp: Option<Time>,
    pub(crate) payload: Vec<u8>,
    /// `payload` is a DATA_REF's chunk reference, kept for a reader that reads in place
    /// ([`crate::Participant::set_reader_in_place`]), not the bytes.
    pub(crate) by_reference: bool,
}

/// Payload bytes of a buffered entry (`None`: an SN a GAP made irrelevant).
fn held_len(c: &Option<Change>) -> usize {
    c.as_ref().map_or(0, |c| c.payload.len())
}

/// How long a repair sent to a reader is taken to be on its way, during
/// which the reader's requests for it again are not answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Suppress {
    /// While nothing was pushed after the repair (no later data can show
    /// whether it arrived): about a retransmission timeout.
    pub(crate) short: core::time::Duration,
    /// While more than one sample pushed after the repair has not reached
    /// the reader either (all are probably still queued at a bottleneck,
    /// whose delay the round trip understates; one sample of a fragmented
    /// train on a slow link can take longer than the short window by
    /// itself): the HEARTBEAT period.
    pub(crate) long: core::time::Duration,
    /// What the writer has pushed (or begun to push) now.
    pub(crate) pushed: i64,
}

/// A repair sent to one reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resent {
    /// When it was (last) sent.
    pub(crate) at: Timestamp,
    /// The highest SN the writer had pushed (begun to push) by then: a
    /// reader that has anything beyond it got data sent after the repair,
    /// so on a path that keeps order the repair was lost.
    pub(crate) mark: i64,
}

/// A remote reader as seen by a local writer.
#[derive(Debug, Clone)]
pub(crate) struct ReaderProxy {
    pub(crate) guid: Guid,
    pub(crate) reliable: bool,
    pub(crate) locators: Vec<Locator>,
    /// Every SN <= `acked` is acknowledged.
    pub(crate) acked: i64,
    /// SNs below this are not for this reader (volatile late joiner): GAP them.
    pub(crate) first_relevant: i64,
    pub(crate) requested: BTreeSet<i64>,
    pub(crate) gap_pending: bool,
    pub(crate) hb_pending: bool,
    pub(crate) last_acknack: Option<i32>,
    pub(crate) repair_due: Timestamp,
    /// Resend progress of a fragmented sample: (SN, next fragment).
    pub(crate) repair_frag: (i64, u32),
    /// Fragments requested by NACK_FRAG, per SN.
    pub(crate) frag_requests: BTreeMap<i64, BTreeSet<u32>>,
    pub(crate) last_nackfrag: Option<i32>,
    /// When unacknowledged SNs were last resent, and what the writer had
    /// pushed by then (for NACK suppression).
    pub(crate) resent: BTreeMap<i64, Resent>,
    /// Fragments resent to this reader, per SN: when, and after what.
    pub(crate) resent_frags: BTreeMap<i64, BTreeMap<u32, Resent>>,
    /// This reader's ACKNACK bitmaps have shown an SN it has beyond the
    /// last one it asked for (FerroDDS readers extend their bitmaps so):
    /// then not showing data sent after a repair means something, and a
    /// repair may be taken to be on its way for the long window. Readers
    /// that cut their bitmap at the last missing SN (or at a partly received
    /// one) only get the short window.
    pub(crate) shows_arrivals: bool,
    /// The highest SN this reader has shown it has (acknowledged, or left
    /// clear in an ACKNACK's bitmap: received whole or in part).
    pub(crate) received_high: i64,
    /// The highest SN this reader's last ACKNACK could have shown it has
    /// (its bitmap spans 256 SNs from its base).
    pub(crate) ack_reach: i64,
    /// Periodic HEARTBEATs (and tail-loss probes) since this reader last
    /// sent an ACKNACK: past [`MAX_UNANSWERED_HEARTBEATS`] it is heartbeated
    /// only every [`UNRESPONSIVE_HEARTBEAT_DIVISOR`]th time.
    pub(crate) unanswered_hbs: u32,
    /// SNs up to this one were pushed before this reader matched: they
    /// reach it only as repairs (so its first NACK of them is no loss).
    pub(crate) pushed_before_match: i64,
    /// Key of this proxy's live entry in its writer's work queue
    /// (`participant::proxies`), if it has one.
    pub(crate) queued_at: Option<Timestamp>,
}

/// Periodic HEARTBEATs a reader may leave unanswered before it counts as
/// unresponsive (as RTI's `max_heartbeat_retries`, 10 by default): a crashed
/// reader before its lease ends, or one of the thousands of participants a
/// hostile host may announce with locators nobody listens on.
pub(crate) const MAX_UNANSWERED_HEARTBEATS: u32 = 10;
/// An unresponsive reader gets one periodic HEARTBEAT in this many (one a
/// second at the default 100 ms period) until it answers again.
pub(crate) const UNRESPONSIVE_HEARTBEAT_DIVISOR: u32 = 10;

impl ReaderProxy {
    pub(crate) fn new(
        guid: Guid,
        reliable: bool,
        locators: Vec<Locator>,
        start_after: i64,
    ) -> Self {
        Self {
            guid,
            reliable,
            locators,
            acked: start_after,
            first_relevant: start_after + 1,
            requested: BTreeSet::new(),
            gap_pending: reliable && start_after > 0,
            hb_pending: reliable,
            last_acknack: None,
            repair_due: Timestamp(0),
            repair_frag: (0, 1),
            frag_requests: BTreeMap::new(),
            last_nackfrag: None,
            resent: BTreeMap::new(),
            resent_frags: BTreeMap::new(),
            shows_arrivals: false,
            received_high: start_after,
            ack_reach: start_after + i64::from(SnSet::MAX_BITS),
            unanswered_hbs: 0,
            pushed_before_match: 0,
            queued_at: None,
        }
    }

    /// A repair is probably still on its way: this reader has shown nothing
    /// sent after it (which, the path keeping order, would prove it lost),
    /// and it was sent less than `suppress.short` before `now`, or less than
    /// `suppress.long` with more than one sample pushed after it (none of
    /// which has arrived either, so all are probably queued at a bottleneck),
    /// within reach of the reader's ACKNACK bitmap (else nothing could show
    /// the repair lost: thousands of batched samples in flight) and from a
    /// reader whose bitmaps show what arrived.
    fn in_flight(&self, r: &Resent, now: Timestamp, suppress: Suppress) -> bool {
        self.received_high <= r.mark
            && (now < r.at.saturating_add(suppress.short)
                || (self.shows_arrivals
                    && suppress.pushed > r.mark + 1
                    && r.mark < self.ack_reach
                    && now < r.at.saturating_add(suppress.long)))
    }

    /// Applies a NACK_FRAG for `sn` (fragments `frags`); returns how many
    /// fragments were newly requested (0 if stale). A fragment whose repair
    /// is probably still on its way ([`Self::in_flight`]) is not
    /// requested again; fragments never resent always are.
    pub(crate) fn on_nack_frag(
        &mut self,
        sn: i64,
        frags: impl Iterator<Item = u32>,
        count: i32,
        now: Timestamp,
        suppress: Suppress,
        due: Timestamp,
    ) -> usize {
        if self.last_nackfrag.is_some_and(|c| count <= c) || sn <= self.acked {
            return 0;
        }
        self.last_nackfrag = Some(count);
        if self.frag_requests.len() >= MAX_FRAG_REQUESTS && !self.frag_requests.contains_key(&sn) {
            return 0;
        }
        let mut set = self.frag_requests.remove(&sn).unwrap_or_default();
        let resent = self.resent_frags.get(&sn);
        let mut new = 0;
        for f in frags {
            if resent
                .and_then(|m| m.get(&f))
                .is_some_and(|r| self.in_flight(r, now, suppress))
            {
                continue;
            }
            if f >= 1 && set.len() < 256 && set.insert(f) {
                new += 1;
            }
        }
        // (Only an SN with fragments to resend is kept: an empty entry would
        // make the writer send nothing but a HEARTBEAT, whose answer asks
        // for the same fragments again.)
        if !set.is_empty() {
            self.frag_requests.insert(sn, set);
        }
        if new > 0 {
            self.repair_due = due;
        }
        new
    }

    /// Applies an ACKNACK; `None` if it was stale, else the bytes newly
    /// requested (`size_of` an SN's payload size, given when it was last
    /// resent to this reader, if it was). `last_sn` is the writer's
    /// newest SN; SNs whose repair is probably still on its way
    /// ([`Self::in_flight`]) are not requested again.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_acknack(
        &mut self,
        set: &SnSet,
        count: i32,
        final_flag: bool,
        last_sn: i64,
        now: Timestamp,
        suppress: Suppress,
        due: Timestamp,
        size_of: impl Fn(i64, Option<Timestamp>) -> u64,
    ) -> Option<u64> {
        if self.last_acknack.is_some_and(|c| count <= c) {
            return None;
        }
        self.last_acknack = Some(count);
        let base = set.base().min(last_sn + 1);
        if base - 1 > self.acked {
            self.acked = base - 1;
            self.requested = self.requested.split_off(&(self.acked + 1));
            self.frag_requests = self.frag_requests.split_off(&(self.acked + 1));
            self.resent = self.resent.split_off(&(self.acked + 1));
            self.resent_frags = self.resent_frags.split_off(&(self.acked + 1));
        }
        // (Nothing beyond what was pushed can have arrived.)
        let clear = set.highest_clear(last_sn.min(suppress.pushed.max(self.acked)));
        if clear.is_some_and(|c| set.iter().last().is_some_and(|l| c > l)) {
            self.shows_arrivals = true;
        }
        let has = clear.unwrap_or(0).max(self.acked);
        self.received_high = self.received_high.max(has);
        self.ack_reach = set.base() + i64::from(SnSet::MAX_BITS) - 1;
        let before = self.requested.len();
        let mut lost = 0;
        for sn in set.iter() {
            if sn > last_sn || self.requested.len() >= MAX_REQUESTED {
                break;
            }
            if self
                .resent
                .get(&sn)
                .is_some_and(|r| self.in_flight(r, now, suppress))
            {
                continue;
            }
            let resent = self.resent.get(&sn).map(|r| r.at);
            if self.requested.insert(sn) {
                lost += size_of(sn, resent);
            }
        }
        if self.requested.len() > before {
            self.repair_due = due;
        }
        if !final_flag && set.is_empty() {
            self.hb_pending = true;
        }
        Some(lost)
    }

    /// Notes in `resent_frags` (a proxy's) that fragment `frag` of `sn` was
    /// resent as `at` says.
    pub(crate) fn note_resent_fragment(
        resent_frags: &mut BTreeMap<i64, BTreeMap<u32, Resent>>,
        sn: i64,
        frag: u32,
        at: Resent,
    ) {
        if resent_frags.len() >= MAX_FRAG_REQUESTS && !resent_frags.contains_key(&sn) {
            return;
        }
        let map = resent_frags.entry(sn).or_default();
        if map.len() < MAX_RESENT_FRAGS || map.contains_key(&frag) {
            map.insert(frag, at);
        }
    }

    /// Notes that `sn` was resent at `now`, when the writer had pushed up to
    /// `mark`.
    pub(crate) fn note_resent(&mut self, sn: i64, now: Timestamp, mark: i64) {
        if self.resent.len() < MAX_REQUESTED || self.resent.contains_key(&sn) {
            self.resent.insert(sn, Resent { at: now, mark });
        }
    }

    pub(crate) fn lagging(&self, last_sn: i64) -> bool {
        self.reliable && self.acked < last_sn
    }

    /// Repairs (DATA or GAP) were requested by ACKNACK or NACK_FRAG; they
    /// are due at `repair_due`.
    pub(crate) fn repairs_requested(&self) -> bool {
        !self.requested.is_empty() || !self.frag_requests.is_empty()
    }

    /// Something is (or will be, once `repair_due` passes) to be sent to
    /// this reader outside the writer's push: a GAP, a HEARTBEAT or repairs.
    pub(crate) fn has_repair_work(&self) -> bool {
        self.reliable && (self.gap_pending || self.hb_pending || self.repairs_requested())
    }
}

/// A remote writer as seen by a local reader.
#[derive(Debug)]
pub(crate) struct WriterProxy {
    pub(crate) guid: Guid,
    pub(crate) reliable: bool,
    pub(crate) locators: Vec<Locator>,
    /// Next SN to deliver: everything below was delivered, irrelevant or lost.
    pub(crate) next: i64,
    /// Out-of-order changes (`None` = irrelevant per GAP).
    pub(crate) buffer: BTreeMap<i64, Option<Change>>,
    /// Payload bytes held in `buffer`.
    pub(crate) buffer_bytes: usize,
    /// Most entries of `buffer` ([`crate::PeerLimits::max_out_of_order_samples`]).
    max_buffer: usize,
    /// Most payload bytes of `buffer` beyond its first [`MIN_OUT_OF_ORDER`]
    /// entries ([`crate::PeerLimits::max_out_of_order_bytes`]).
    max_buffer_bytes: usize,
    /// Highest SN known to exist.
    pub(crate) max_seen: i64,
    /// A HEARTBEAT established where the writer starts.
    pub(crate) synced: bool,
    pub(crate) last_hb: Option<i32>,
    pub(crate) ack_pending: bool,
    pub(crate) ack_count: i32,
    /// When the last ACKNACK requesting data was sent.
    pub(crate) last_nack_at: Option<Timestamp>,
    /// A held-off ACKNACK is due then.
    pub(crate) ack_due: Option<Timestamp>,
    /// Samples under reassembly.
    pub(crate) reasm: Reassembler,
    /// Highest lastSN announced by a HEARTBEAT.
    pub(crate) hb_last: i64,
    /// Latest HEARTBEAT_FRAG: (SN, last fragment available).
    pub(crate) hb_frag: (i64, u32),
    pub(crate) last_hb_frag: Option<i32>,
    pub(crate) nack_frag_count: i32,
    /// When the pending NACK_FRAGs may go out (NackDelay).
    pub(crate) nack_frag_due: Option<Timestamp>,
    /// HEARTBEAT count (and HEARTBEAT_FRAG count) an ACKNACK was last sent
    /// after: while NACK_FRAGs wait for their hold-off, the acknowledgement
    /// goes at once, once per HEARTBEAT.
    pub(crate) answered_hb: (Option<i32>, Option<i32>),
    /// Key of this proxy's live entry in its reader's work queue
    /// (`participant::proxies`), if it has one.
    pub(crate) queued_at: Option<Timestamp>,
    /// SNs delivered by reference to a reader that reads them in place and not yet
    /// released (ascending): the ACKNACK acknowledges nothing from the first on, so
    /// that the writer keeps (and does not reuse) their shared-memory chunks.
    pub(crate) held: VecDeque<i64>,
}

/// What a proxy operation produced.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Changes now deliverable, in order.
    pub(crate) delivered: Vec<(i64, Change)>,
    /// Changes dropped (duplicate, old, no room).
    pub(crate) dropped: u64,
    /// Of `dropped`: those for which the out-of-order buffer had no room.
    pub(crate) overflow: u64,
    /// SNs found unavailable.
    pub(crate) lost: u64,
}

impl WriterProxy {
    pub(crate) fn new(
        guid: Guid,
        reliable: bool,
        locators: Vec<Locator>,
        limits: ReassemblyLimits,
        budget: ReassemblyBudget,
    ) -> Self {
        Self {
            guid,
            reliable,
            locators,
            next: 1,
            buffer: BTreeMap::new(),
            buffer_bytes: 0,
            max_buffer: MAX_OUT_OF_ORDER,
            max_buffer_bytes: 256 << 20,
            max_seen: 0,
            synced: false,
            last_hb: None,
            // Pre-emptive ACKNACK (base 1, no bits) for reliable writers.
            ack_pending: reliable,
            ack_count: 0,
            last_nack_at: None,
            ack_due: None,
            reasm: Reassembler::new(limits, budget),
            hb_last: 0,
            hb_frag: (0, 0),
            last_hb_frag: None,
            nack_frag_count: 0,
            nack_frag_due: None,
            answered_hb: (None, None),
            queued_at: None,
            held: VecDeque::new(),
        }
    }

    /// Releases held SN `sn` ([`WriterProxy::held`]); true when the acknowledged base
    /// moved (an ACKNACK is worth sending).
    pub(crate) fn release_held(&mut self, sn: i64) -> bool {
        match self.held.iter().position(|&h| h == sn) {
            Some(0) => {
                self.held.pop_front();
                true
            }
            Some(i) => {
                self.held.remove(i);
                false
            }
            None => false,
        }
    }

    /// Bounds the out-of-order buffer to `samples` changes and `bytes` payload
    /// bytes (beyond its first few changes).
    pub(crate) fn with_out_of_order_limits(mut self, samples: usize, bytes: usize) -> Self {
        self.max_buffer = samples.max(1);
        self.max_buffer_bytes = bytes;
        self
    }

    /// Starts this proxy's ACKNACK and NACK_FRAG counts after `floor`, the
    /// highest count the participant has sent: the remote writer may still
    /// hold counts from an earlier proxy of ours for the same GUIDs (we lost
    /// and rediscovered it, or one of us restarted), and would ignore lower
    /// ones as duplicates (ACKNACK §8.3.7.1 and NACK_FRAG `count`).
    pub(crate) fn continue_counts(&mut self, floor: i32) {
        self.ack_count = floor;
        self.nack_frag_count = floor;
    }

    /// Adds a fragment; returns the whole change once complete. Fragments of
    /// samples already delivered (or known irrelevant) are ignored.
    /// Reassembly reuses the buffers of `spares` (see
    /// [`Reassembler::add_reusing`](crate::reassembly::Reassembler::add_reusing)).
    pub(crate) fn on_fragment(
        &mut self,
        f: &FragmentRef<'_>,
        now: Timestamp,
        spares: &mut ReassemblySpares,
    ) -> Result<Option<Change>, Rejected> {
        // Forget samples that can no longer be delivered.
        self.reasm.drop_below(self.next);
        if f.sn < self.next || self.buffer.contains_key(&f.sn) {
            return Ok(None);
        }
        Ok(self
            .reasm
            .add_reusing(f, self.reliable, now, spares)?
            .map(|c| Change {
                kind: c.kind,
                key_hash: c.key_hash,
                source_timestamp: c.source_timestamp,
                payload: c.payload,
                by_reference: false,
            }))
    }

    /// A HEARTBEAT_FRAG: fragments up to `last_frag` of `sn` are available.
    /// Returns true if it shows missing fragments (a NACK_FRAG is due).
    pub(crate) fn on_heartbeat_frag(&mut self, sn: i64, last_frag: u32, count: i32) -> bool {
        if !self.reliable || self.last_hb_frag.is_some_and(|c| count <= c) {
            return false;
        }
        self.last_hb_frag = Some(count);
        if sn < self.next || (self.hb_frag.0 == sn && self.hb_frag.1 >= last_frag) {
            return false;
        }
        if sn >= self.hb_frag.0 {
            self.hb_frag = (sn, last_frag);
        }
        let missing = self.reasm.missing(sn, last_frag).is_some();
        if missing {
            self.ack_pending = true;
        }
        missing
    }

    /// NACK_FRAG contents due now: for each incomplete sample the writer has
    /// announced (by HEARTBEAT, or partly by HEARTBEAT_FRAG), the missing
    /// fragments `(sn, base, bits, num_bits)`; at most `max` samples.
    pub(crate) fn nack_frags(
        &self,
        max: usize,
    ) -> impl Iterator<Item = (i64, u32, [u32; 8], u32)> + '_ {
        self.reasm
            .sns()
            .filter(move |sn| *sn >= self.next)
            .filter_map(move |sn| {
                // (A HEARTBEAT_FRAG of a later sample: this one was sent whole.)
                let upto = if sn <= self.hb_last || sn < self.hb_frag.0 {
                    u32::MAX
                } else if self.hb_frag.0 == sn {
                    self.hb_frag.1
                } else {
                    return None;
                };
                let (base, bits, n) = self.reasm.missing(sn, upto)?;
                Some((sn, base, bits, n))
            })
            .take(max)
    }

    /// Whether a change of `len` payload bytes may be buffered out of order.
    fn buffer_has_room(&self, len: usize) -> bool {
        let n = self.buffer.len();
        n < MIN_OUT_OF_ORDER.min(self.max_buffer)
            || (n < self.max_buffer && self.buffer_bytes + len <= self.max_buffer_bytes)
    }

    /// Removes and returns the buffered entries below `sn`.
    fn split_buffer(&mut self, sn: i64) -> BTreeMap<i64, Option<Change>> {
        let rest = self.buffer.split_off(&sn);
        core::mem::replace(&mut self.buffer, rest)
    }

    /// Delivers what the out-of-order buffer holds from `next` on.
    #[inline]
    fn drain(&mut self, room: &mut usize, out: &mut Outcome) {
        // (In order delivery, the common case, leaves the buffer empty: no call.)
        if !self.buffer.is_empty() {
            self.drain_buffer(room, out);
        }
    }

    fn drain_buffer(&mut self, room: &mut usize, out: &mut Outcome) {
        while let Some(entry) = self.buffer.first_entry() {
            if *entry.key() != self.next {
                if *entry.key() < self.next {
                    self.buffer_bytes -= held_len(&entry.remove());
                    continue;
                }
                break;
            }
            if entry.get().is_some() && *room == 0 {
                break;
            }
            let sn = *entry.key();
            if let Some(c) = entry.remove() {
                self.buffer_bytes -= c.payload.len();
                out.delivered.push((sn, c));
                *room -= 1;
            }
            self.next += 1;
        }
    }

    /// A DATA for `sn`. `room` bounds how many changes may be delivered.
    pub(crate) fn on_data(&mut self, sn: i64, change: Change, mut room: usize, out: &mut Outcome) {
        if !self.reliable {
            if sn >= self.next && room > 0 {
                self.next = sn + 1;
                self.max_seen = self.max_seen.max(sn);
                out.delivered.push((sn, change));
            } else {
                out.dropped += 1;
            }
            return;
        }
        if sn < self.next || self.buffer.contains_key(&sn) {
            out.dropped += 1;
            return;
        }
        self.max_seen = self.max_seen.max(sn);
        if sn == self.next && room > 0 && self.synced {
            out.delivered.push((sn, change));
            room -= 1;
            self.next += 1;
            self.drain(&mut room, out);
        } else if self.buffer_has_room(change.payload.len()) && sn - self.next < 1 << 20 {
            // Before the first HEARTBEAT the start SN is unknown: buffer.
            self.buffer_bytes += change.payload.len();
            self.buffer.insert(sn, Some(change));
        } else {
            out.dropped += 1;
            out.overflow += 1;
        }
    }

    /// A GAP: `[start, list.base())` and the set bits are irrelevant.
    pub(crate) fn on_gap(&mut self, start: i64, list: &SnSet, mut room: usize, out: &mut Outcome) {
        if !self.reliable {
            return;
        }
        let end = list.base();
        if start <= self.next && end > self.next {
            self.next = end;
            let below = self.split_buffer(end);
            self.buffer_bytes -= below.values().map(held_len).sum::<usize>();
        } else if start > self.next {
            let stop = end.min(start + 256);
            for sn in start..stop {
                if self.buffer.len() >= self.max_buffer {
                    break;
                }
                self.buffer.entry(sn).or_insert(None);
            }
        }
        self.max_seen = self.max_seen.max(end - 1);
        for sn in list.iter() {
            self.max_seen = self.max_seen.max(sn);
            if sn == self.next {
                self.buffer_bytes -= self.buffer.remove(&sn).as_ref().map_or(0, held_len);
                self.next += 1;
            } else if sn > self.next && self.buffer.len() < self.max_buffer {
                self.buffer.entry(sn).or_insert(None);
            }
        }
        if self.synced {
            self.drain(&mut room, out);
        }
        // Samples skipped by the GAP need no reassembly any more.
        self.reasm.drop_below(self.next);
    }

    /// A HEARTBEAT. Returns false if stale.
    pub(crate) fn on_heartbeat(
        &mut self,
        first: i64,
        last: i64,
        count: i32,
        final_flag: bool,
        mut room: usize,
        out: &mut Outcome,
    ) -> bool {
        if !self.reliable {
            return false;
        }
        if self.last_hb.is_some_and(|c| count <= c) {
            return false;
        }
        self.last_hb = Some(count);
        if first > self.next {
            // Everything below `first` is no longer available: deliver what we
            // buffered, count the rest as lost (unless we never synced: then
            // this is simply where we join).
            let below = self.split_buffer(first);
            let held = below.len() as i64;
            for (sn, c) in below {
                if let Some(c) = c {
                    self.buffer_bytes -= c.payload.len();
                    out.delivered.push((sn, c));
                    room = room.saturating_sub(1);
                }
            }
            if self.synced {
                out.lost += (first - self.next - held).max(0) as u64;
            }
            self.next = first;
        }
        self.synced = true;
        self.drain(&mut room, out);
        if !self.reasm.is_empty() {
            self.reasm.drop_below(self.next);
        }
        self.max_seen = self.max_seen.max(last);
        self.hb_last = self.hb_last.max(last);
        if !final_flag || self.has_missing() {
            self.ack_pending = true;
        }
        true
    }

    fn has_missing(&self) -> bool {
        if self.next > self.max_seen {
            return false;
        }
        let span = (self.max_seen - self.next + 1) as u64;
        span > self.buffer.range(self.next..=self.max_seen).count() as u64
    }

    /// The ACKNACK set: base = first missing SN (never 0), bits = missing SNs
    /// (at most `room` of them, at most 256). SNs partly received are left
    /// out: they are repaired by NACK_FRAG.
    pub(crate) fn ack_set(&self, room: usize) -> SnSet {
        // Held samples are received but not acknowledged: the base stays at the first. (While
        // it is 256 or more behind `next`, what is missing after that cannot be asked for
        // yet: repairs wait for the application's takes, they are not lost.)
        let base = self.held.front().map_or(self.next, |&h| h.min(self.next));
        let mut set = SnSet::new(base);
        let end = self.max_seen.min(base + 255);
        let mut budget = room;
        let mut sn = self.next;
        while sn <= end && budget > 0 {
            if !self.buffer.contains_key(&sn) && !self.reasm.contains(sn) {
                set.insert(sn);
                budget -= 1;
            }
            sn += 1;
        }
        // The bitmap covers every SN examined, so its clear bits tell the
        // writer what arrived (whole or in part) after what is missing, and
        // so whether a repair it sent before that was lost.
        set.extend_to(sn - 1);
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EntityId, GuidPrefix};

    fn g() -> Guid {
        Guid::new(GuidPrefix([1; 12]), EntityId([0, 0, 1, 2]))
    }

    fn wp(reliable: bool) -> WriterProxy {
        WriterProxy::new(
            g(),
            reliable,
            vec![],
            ReassemblyLimits::default(),
            ReassemblyBudget::new(),
        )
    }

    fn c(n: u8) -> Change {
        Change {
            kind: ChangeKind::Alive,
            key_hash: None,
            source_timestamp: None,
            payload: vec![n],
            by_reference: false,
        }
    }

    fn sns(o: &Outcome) -> Vec<i64> {
        o.delivered.iter().map(|(sn, _)| *sn).collect()
    }

    #[test]
    fn reliable_in_order_exactly_once() {
        let mut p = wp(true);
        let mut o = Outcome::default();
        p.on_heartbeat(1, 0, 1, false, usize::MAX, &mut o);
        p.on_data(2, c(2), usize::MAX, &mut o);
        p.on_data(3, c(3), usize::MAX, &mut o);
        assert!(o.delivered.is_empty());
        let set = p.ack_set(usize::MAX);
        assert_eq!(set.base(), 1);
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![1]);
        p.on_data(1, c(1), usize::MAX, &mut o);
        p.on_data(2, c(2), usize::MAX, &mut o);
        assert_eq!(sns(&o), vec![1, 2, 3]);
        assert_eq!(o.dropped, 1);
        assert_eq!(p.ack_set(usize::MAX).base(), 4);
    }

    #[test]
    fn data_before_first_heartbeat_is_buffered() {
        let mut p = wp(true);
        let mut o = Outcome::default();
        p.on_data(5, c(5), usize::MAX, &mut o);
        assert!(o.delivered.is_empty());
        // Writer says history starts at 5: join there, nothing lost.
        p.on_heartbeat(5, 5, 1, true, usize::MAX, &mut o);
        assert_eq!(sns(&o), vec![5]);
        assert_eq!(o.lost, 0);
    }

    #[test]
    fn heartbeat_first_above_next_marks_lost() {
        let mut p = wp(true);
        let mut o = Outcome::default();
        p.on_heartbeat(1, 10, 1, false, usize::MAX, &mut o);
        p.on_data(4, c(4), usize::MAX, &mut o);
        p.on_heartbeat(6, 10, 2, false, usize::MAX, &mut o);
        // 1,2,3,5 lost; 4 delivered.
        assert_eq!(sns(&o), vec![4]);
        assert_eq!(o.lost, 4);
        assert_eq!(p.next, 6);
        // Stale count ignored.
        assert!(!p.on_heartbeat(9, 10, 2, false, usize::MAX, &mut o));
    }

    #[test]
    fn gap_counts_as_received() {
        let mut p = wp(true);
        let mut o = Outcome::default();
        p.on_heartbeat(1, 6, 1, false, usize::MAX, &mut o);
        p.on_data(4, c(4), usize::MAX, &mut o);
        let mut list = SnSet::new(4);
        list.insert(6);
        p.on_gap(1, &list, usize::MAX, &mut o);
        assert_eq!(sns(&o), vec![4]);
        assert_eq!(p.next, 5);
        p.on_data(5, c(5), usize::MAX, &mut o);
        assert_eq!(sns(&o), vec![4, 5]);
        assert_eq!(p.next, 7);
        assert_eq!(o.lost, 0);
    }

    #[test]
    fn room_limits_delivery_and_nacks() {
        let mut p = wp(true);
        let mut o = Outcome::default();
        p.on_heartbeat(1, 5, 1, false, usize::MAX, &mut o);
        p.on_data(1, c(1), 0, &mut o);
        assert!(o.delivered.is_empty());
        assert_eq!(p.ack_set(2).iter().count(), 2);
        assert_eq!(p.ack_set(0).iter().count(), 0);
        assert_eq!(p.ack_set(0).base(), 1);
    }

    #[test]
    fn fragments_complete_into_a_change() {
        let mut p = wp(false);
        let sample = vec![3u8; 2500];
        fn frag(offset: u64, data: &[u8]) -> FragmentRef<'_> {
            FragmentRef {
                sn: 4,
                offset,
                data,
                sample_size: 2500,
                fragment_size: 1000,
                meta: None,
                source_timestamp: None,
            }
        }
        let t = Timestamp(1);
        assert_eq!(
            p.on_fragment(
                &frag(2000, &sample[2000..]),
                t,
                &mut ReassemblySpares::default()
            ),
            Ok(None)
        );
        let mut first = frag(0, &sample[..2000]);
        first.meta = Some((ChangeKind::Alive, Some([1; 16])));
        let c = p
            .on_fragment(&first, t, &mut ReassemblySpares::default())
            .unwrap()
            .unwrap();
        assert_eq!(c.payload, sample);
        assert_eq!(c.key_hash, Some([1; 16]));
        assert!(p.reasm.is_empty());
        // Inconsistent sizes for a sample under reassembly are rejected.
        let mut o = Outcome::default();
        p.on_data(4, c, usize::MAX, &mut o);
        assert_eq!(
            p.on_fragment(
                &frag(2000, &sample[2000..]),
                t,
                &mut ReassemblySpares::default()
            ),
            Ok(None),
            "delivered"
        );
        let mut other = frag(0, &sample[..1000]);
        other.sn = 9;
        assert_eq!(
            p.on_fragment(&other, t, &mut ReassemblySpares::default()),
            Ok(None)
        );
        other.fragment_size = 500;
        assert_eq!(
            p.on_fragment(&other, t, &mut ReassemblySpares::default()),
            Err(Rejected::Inconsistent)
        );
    }

    #[test]
    fn a_heartbeat_frag_of_a_later_sample_asks_for_all_missing_fragments_of_earlier_ones() {
        let mut p = wp(true);
        let mut o = Outcome::default();
        p.on_heartbeat(1, 0, 1, false, usize::MAX, &mut o);
        let data = vec![1u8; 100];
        let t = Timestamp(1);
        let fr = |sn: i64, f: u64| FragmentRef {
            sn,
            offset: f * 100,
            data: &data,
            sample_size: 500,
            fragment_size: 100,
            meta: None,
            source_timestamp: None,
        };
        // SN 1: fragment 4 (1-based) lost; SN 2: its first fragment.
        for f in [0u64, 1, 2, 4] {
            let _ = p.on_fragment(&fr(1, f), t, &mut ReassemblySpares::default());
        }
        let _ = p.on_fragment(&fr(2, 0), t, &mut ReassemblySpares::default());
        // Announced up to fragment 3 of SN 1: nothing missing there yet.
        assert!(!p.on_heartbeat_frag(1, 3, 1));
        assert_eq!(p.nack_frags(8).count(), 0);
        // The train moved on to SN 2 (no HEARTBEAT yet): SN 1 went whole, so
        // its fragment 4 is asked for at once, not after the next HEARTBEAT.
        p.on_heartbeat_frag(2, 1, 2);
        let v: Vec<_> = p.nack_frags(8).collect();
        assert_eq!(v, vec![(1, 4, [1 << 31, 0, 0, 0, 0, 0, 0, 0], 1)]);
    }

    #[test]
    fn partial_samples_are_nack_fragged_not_acknacked() {
        let mut p = wp(true);
        let mut o = Outcome::default();
        p.on_heartbeat(1, 0, 1, false, usize::MAX, &mut o);
        let data = vec![1u8; 100];
        let t = Timestamp(1);
        for f in [0u64, 2, 4] {
            let fr = FragmentRef {
                sn: 1,
                offset: f * 100,
                data: &data,
                sample_size: 500,
                fragment_size: 100,
                meta: None,
                source_timestamp: None,
            };
            assert_eq!(
                p.on_fragment(&fr, t, &mut ReassemblySpares::default()),
                Ok(None)
            );
        }
        // Nothing announced yet: no NACK_FRAG.
        assert_eq!(p.nack_frags(8).count(), 0);
        // HEARTBEAT_FRAG up to fragment 3: fragment 2 is missing.
        assert!(p.on_heartbeat_frag(1, 3, 1));
        let v: Vec<_> = p.nack_frags(8).collect();
        assert_eq!(v, vec![(1, 2, [1 << 31, 0, 0, 0, 0, 0, 0, 0], 1)]);
        assert!(!p.on_heartbeat_frag(1, 3, 1), "stale count");
        // A HEARTBEAT announcing SN 2: fragments 2 and 4 of SN 1 wanted, SN 2 whole.
        p.on_heartbeat(1, 2, 2, false, usize::MAX, &mut o);
        let v: Vec<_> = p.nack_frags(8).collect();
        assert_eq!(
            v,
            vec![(1, 2, [(1 << 31) | (1 << 29), 0, 0, 0, 0, 0, 0, 0], 3)]
        );
        let set = p.ack_set(usize::MAX);
        assert_eq!(set.base(), 1);
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn best_effort_drops_old() {
        let mut p = wp(false);
        let mut o = Outcome::default();
        p.on_data(2, c(2), usize::MAX, &mut o);
        p.on_data(1, c(1), usize::MAX, &mut o);
        p.on_data(2, c(2), usize::MAX, &mut o);
        p.on_data(5, c(5), usize::MAX, &mut o);
        assert_eq!(sns(&o), vec![2, 5]);
        assert_eq!(o.dropped, 2);
        assert!(!p.ack_pending);
    }

    const MS: core::time::Duration = core::time::Duration::from_millis(1);
    /// A 10 ms window whatever was pushed.
    const SUP: Suppress = Suppress {
        short: MS.saturating_mul(10),
        long: MS.saturating_mul(10),
        pushed: 0,
    };

    /// A repair is taken to be on its way for the short window, or the long
    /// one while more than one sample pushed after it has not arrived
    /// either; it is requested again at once when the reader shows data sent
    /// after it (on a path that keeps order, the repair was lost).
    #[test]
    fn a_repair_is_known_lost_when_later_data_arrived() {
        let ms = |n: u64| Timestamp(n * 1_000_000);
        let sup = |pushed: i64| Suppress {
            short: MS.saturating_mul(2),
            long: MS.saturating_mul(100),
            pushed,
        };
        let ask = |r: &mut ReaderProxy, count: i32, has_up_to: i64, at: u64, pushed: i64| {
            let mut set = SnSet::new(2);
            set.insert(2);
            set.extend_to(has_up_to);
            r.requested.clear();
            r.on_acknack(
                &set,
                count,
                false,
                20,
                ms(at),
                sup(pushed),
                Timestamp(0),
                |_, _| 1,
            )
            .unwrap()
        };
        let mut r = ReaderProxy::new(g(), true, vec![], 0);
        // SN 2 was resent at 1 ms, when the writer had pushed up to 6.
        r.note_resent(2, ms(1), 6);
        // The reader has 3..=6, all pushed before the repair: on its way
        // during the short window...
        assert_eq!(ask(&mut r, 1, 6, 2, 6), 0);
        assert_eq!(r.received_high, 6);
        assert!(
            r.shows_arrivals,
            "its bitmap shows 3..=6 beyond the missing 2"
        );
        // ...and after it if nothing was pushed since (nothing can show it
        // arrived): requested again.
        assert_eq!(ask(&mut r, 2, 6, 4, 6), 1);
        r.note_resent(2, ms(4), 6);
        // With more pushed since that the reader has not got either, the
        // long window holds.
        assert_eq!(ask(&mut r, 3, 6, 50, 9), 0);
        assert_eq!(ask(&mut r, 4, 6, 105, 9), 1);
        r.note_resent(2, ms(105), 9);
        // The reader has 10, pushed after the repair: the repair was lost.
        assert_eq!(ask(&mut r, 5, 10, 106, 12), 1);
        assert_eq!(r.requested.iter().copied().collect::<Vec<_>>(), vec![2]);
        assert_eq!(r.received_high, 10);
        // Beyond the reach of the reader's bitmap (256 SNs from 2) nothing
        // could show a repair lost: only the short window holds.
        r.note_resent(2, ms(106), 300);
        assert_eq!(ask(&mut r, 6, 10, 107, 400), 0);
        assert_eq!(ask(&mut r, 7, 10, 109, 400), 1);

        // Fragments: only those resent are held back; the others were lost
        // before (new requests), and nothing is kept when all are held.
        let mut r = ReaderProxy::new(g(), true, vec![], 0);
        r.shows_arrivals = true;
        r.note_resent(8, ms(1), 8);
        let at = Resent { at: ms(1), mark: 8 };
        ReaderProxy::note_resent_fragment(&mut r.resent_frags, 8, 1, at);
        let frags = |r: &mut ReaderProxy, count: i32, at: u64, pushed: i64, fs: &[u32]| {
            r.frag_requests.clear();
            r.repair_due = Timestamp(0);
            let new = r.on_nack_frag(8, fs.iter().copied(), count, ms(at), sup(pushed), ms(at));
            let asked: Vec<u32> = r
                .frag_requests
                .get(&8)
                .map_or(vec![], |s| s.iter().copied().collect());
            (new, asked, r.repair_due)
        };
        assert_eq!(frags(&mut r, 1, 2, 12, &[1, 2]), (1, vec![2], ms(2)));
        assert_eq!(frags(&mut r, 2, 50, 12, &[1, 2]), (1, vec![2], ms(50)));
        assert_eq!(frags(&mut r, 3, 50, 12, &[1]), (0, vec![], Timestamp(0)));
        assert!(!r.frag_requests.contains_key(&8));
        // A reader that has not shown it extends its bitmap (a foreign one
        // cutting it at the last missing SN) gets only the short window.
        r.shows_arrivals = false;
        assert_eq!(frags(&mut r, 4, 50, 12, &[1, 2]), (2, vec![1, 2], ms(50)));
        r.shows_arrivals = true;
        r.received_high = 9;
        assert_eq!(frags(&mut r, 5, 51, 12, &[1, 2]), (2, vec![1, 2], ms(51)));
        // Once acknowledged, nothing of it is remembered.
        let mut set = SnSet::new(9);
        set.extend_to(9);
        r.on_acknack(&set, 1, false, 20, ms(52), sup(12), Timestamp(0), |_, _| 1);
        assert!(r.resent.is_empty() && r.resent_frags.is_empty());
    }

    /// A bitmap cut at the last missing SN shows nothing beyond it, and
    /// nothing beyond what the writer pushed counts as received.
    #[test]
    fn what_an_acknack_shows() {
        let mut r = ReaderProxy::new(g(), true, vec![], 0);
        let mut set = SnSet::new(2);
        set.insert(2);
        set.insert(4);
        let pushed = |p| Suppress { pushed: p, ..SUP };
        r.on_acknack(
            &set,
            1,
            false,
            20,
            Timestamp(0),
            pushed(20),
            Timestamp(0),
            |_, _| 1,
        );
        assert_eq!(r.received_high, 3);
        assert!(!r.shows_arrivals);
        // Clear bits up to 15, but the writer pushed only up to 9.
        set.extend_to(15);
        r.on_acknack(
            &set,
            2,
            false,
            20,
            Timestamp(0),
            pushed(9),
            Timestamp(0),
            |_, _| 1,
        );
        assert_eq!(r.received_high, 9);
        assert!(r.shows_arrivals);
    }

    /// A reader's ACKNACK bitmap covers every SN it examined (up to the
    /// highest it knows of), not only up to the last missing one.
    #[test]
    fn ack_set_covers_what_arrived_after_the_gap() {
        let mut p = wp(true);
        for sn in [1, 3, 4, 5] {
            p.max_seen = p.max_seen.max(sn);
            p.buffer.insert(sn, None);
        }
        p.next = 2;
        let set = p.ack_set(256);
        assert_eq!(set.base(), 2);
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![2]);
        assert_eq!(set.num_bits(), 4);
        assert_eq!(set.highest_clear(100), Some(5));
    }

    #[test]
    fn recently_resent_sns_are_not_requested_again() {
        let mut r = ReaderProxy::new(g(), true, vec![], 0);
        let mut set = SnSet::new(1);
        set.insert(1);
        set.insert(2);
        r.note_resent(1, Timestamp(1_000_000), 5);
        assert!(r
            .on_acknack(
                &set,
                1,
                false,
                5,
                Timestamp(2_000_000),
                SUP,
                Timestamp(0),
                |_, _| 1
            )
            .is_some());
        assert_eq!(r.requested.iter().copied().collect::<Vec<_>>(), vec![2]);
        r.requested.clear();
        // After the suppression window it is requested again.
        assert!(r
            .on_acknack(
                &set,
                2,
                false,
                5,
                Timestamp(20_000_000),
                SUP,
                Timestamp(0),
                |_, _| 1
            )
            .is_some());
        assert_eq!(r.requested.iter().copied().collect::<Vec<_>>(), vec![1, 2]);
        // A non-final ACKNACK with bits asks for no extra HEARTBEAT.
        r.hb_pending = false;
        assert!(r
            .on_acknack(
                &set,
                3,
                false,
                5,
                Timestamp(20_000_000),
                SUP,
                Timestamp(0),
                |_, _| 1
            )
            .is_some());
        assert!(!r.hb_pending);
        assert!(r
            .on_acknack(
                &SnSet::new(1),
                4,
                false,
                5,
                Timestamp(20_000_000),
                SUP,
                Timestamp(0),
                |_, _| 1
            )
            .is_some());
        assert!(r.hb_pending);
    }

    #[test]
    fn reader_proxy_acknack() {
        let mut r = ReaderProxy::new(g(), true, vec![], 0);
        assert!(r.hb_pending && !r.gap_pending);
        let mut set = SnSet::new(3);
        set.insert(3);
        set.insert(5);
        set.insert(50);
        assert_eq!(
            r.on_acknack(
                &set,
                1,
                false,
                10,
                Timestamp(0),
                SUP,
                Timestamp(7),
                |sn, _| sn as u64
            ),
            Some(3 + 5),
            "lost bytes: the newly requested SNs' sizes"
        );
        assert_eq!(r.acked, 2);
        assert_eq!(r.requested.iter().copied().collect::<Vec<_>>(), vec![3, 5]);
        assert_eq!(r.repair_due, Timestamp(7));
        assert!(r
            .on_acknack(
                &SnSet::new(11),
                1,
                true,
                10,
                Timestamp(0),
                SUP,
                Timestamp(8),
                |_, _| 1
            )
            .is_none());
        assert!(r
            .on_acknack(
                &SnSet::new(11),
                2,
                true,
                10,
                Timestamp(0),
                SUP,
                Timestamp(8),
                |_, _| 1
            )
            .is_some());
        assert_eq!(r.acked, 10);
        assert!(r.requested.is_empty());
        assert!(!r.lagging(10));
        let late = ReaderProxy::new(g(), true, vec![], 7);
        assert!(late.gap_pending);
        assert_eq!(late.first_relevant, 8);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Op {
            Data(i64),
            Gap(i64, i64),
            Hb(i64, i64),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                (1i64..200).prop_map(Op::Data),
                (1i64..200, 0i64..20).prop_map(|(s, n)| Op::Gap(s, n)),
                (1i64..200, 0i64..50).prop_map(|(f, n)| Op::Hb(f, f + n - 1)),
            ]
        }

        proptest! {
            /// Whatever arrives, in whatever order: delivery is strictly
            /// increasing (exactly once, in order), and GAPped SNs are never
            /// delivered.
            #[test]
            fn reliable_delivery_is_ordered_and_unique(ops in proptest::collection::vec(op(), 0..300)) {
                let mut p = wp(true);
                let mut out = Outcome::default();
                let mut gapped = BTreeSet::new();
                let mut count = 0;
                for o in ops {
                    match o {
                        Op::Data(sn) => p.on_data(sn, c(sn as u8), usize::MAX, &mut out),
                        Op::Gap(start, n) => {
                            let list = SnSet::new(start + n);
                            for sn in start..start + n {
                                if sn >= p.next && !p.buffer.contains_key(&sn) {
                                    gapped.insert(sn);
                                }
                            }
                            p.on_gap(start, &list, usize::MAX, &mut out);
                        }
                        Op::Hb(first, last) => {
                            count += 1;
                            p.on_heartbeat(first, last, count, false, usize::MAX, &mut out);
                        }
                    }
                    prop_assert_eq!(p.buffer_bytes, p.buffer.values().map(held_len).sum::<usize>());
                    let set = p.ack_set(usize::MAX);
                    prop_assert!(set.base() >= 1);
                    prop_assert!(set.iter().all(|sn| sn >= p.next));
                }
                let sns: Vec<i64> = out.delivered.iter().map(|(sn, _)| *sn).collect();
                prop_assert!(sns.windows(2).all(|w| w[0] < w[1]), "{:?}", sns);
                prop_assert!(sns.iter().all(|sn| !gapped.contains(sn)));
                prop_assert!(sns.iter().all(|sn| *sn < p.next));
            }

            /// Best effort never delivers an SN twice or out of order.
            #[test]
            fn best_effort_delivery_is_increasing(sns in proptest::collection::vec(1i64..100, 0..200)) {
                let mut p = wp(false);
                let mut out = Outcome::default();
                for sn in sns {
                    p.on_data(sn, c(0), usize::MAX, &mut out);
                }
                let got: Vec<i64> = out.delivered.iter().map(|(sn, _)| *sn).collect();
                prop_assert!(got.windows(2).all(|w| w[0] < w[1]));
            }
        }
    }
}
