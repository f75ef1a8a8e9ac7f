//! Sending: [`Participant::poll_transmit`] and friends, choosing what goes
//! next (SPDP, ACKNACKs, pushes of new data, repairs).

use super::*;

impl Participant {
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
        if let Some(s) = self.security.as_mut() {
            s.plain_sent_len = None;
        }
        let r = self.transmit_next(now, buf, destinations);
        if r.is_none() {
            self.refresh_stale_timeout();
        }
        r
    }

    /// The next datagram of [`Participant::poll_transmit_into`].
    fn transmit_next(
        &mut self,
        now: Timestamp,
        buf: &mut [u8],
        destinations: &mut Vec<Locator>,
    ) -> Option<usize> {
        let full = self.config.max_message_size.min(buf.len());
        // With RTPS message protection, room is left for the transform.
        let overhead = self.security.as_ref().map_or(0, |s| s.overhead);
        let limit = full.saturating_sub(overhead);
        destinations.clear();
        // (The work hints are also tested here, so that an idle kind costs
        // no call.)
        if let Some(len) = self.transmit_spdp(buf, full, destinations).or_else(|| {
            self.security
                .as_ref()
                .is_some_and(|s| s.has_queued())
                .then(|| self.transmit_stateless(buf, full, destinations))?
        }) {
            self.stats.sent_datagrams += 1;
            return Some(len);
        }
        if let Some(len) = self
            .work
            .ack
            .then(|| self.transmit_acknack(now, buf, limit, destinations))
            .flatten()
        {
            self.stats.sent_datagrams += 1;
            return self.protect_out(buf, len, overhead);
        }
        if !(self.work.repair || self.work.push) {
            return None;
        }
        // Repairs and new data are paced (congestion control); repairs
        // first. Best-effort data that did not ask to be paced goes anyway.
        if !self.pacer.may_send(now, self.rtt.srtt()) {
            if let Some(t) = self.pacer.next_send_at() {
                self.work.arm(t);
            }
            let (len, _) = self
                .work
                .push
                .then(|| self.transmit_push(now, buf, limit, destinations, None, false))??;
            self.stats.sent_datagrams += 1;
            return self.protect_out(buf, len, overhead);
        }
        let (len, paced) = self
            .work
            .repair
            .then(|| self.transmit_repairs(now, buf, limit, destinations))
            .flatten()
            .map(|len| (len, true))
            .or_else(|| {
                self.work
                    .push
                    .then(|| self.transmit_push(now, buf, limit, destinations, None, true))?
            })?;
        if paced {
            self.pacer.on_sent(now, len);
        }
        self.stats.sent_datagrams += 1;
        debug_assert!(len <= limit.max(self.config.shm_message_size.min(buf.len())));
        self.protect_out(buf, len, overhead)
    }

    /// The datagram `buf[..len]` as sent: protected when `overhead` (message protection).
    #[inline]
    fn protect_out(&mut self, buf: &mut [u8], len: usize, overhead: usize) -> Option<usize> {
        if overhead == 0 {
            Some(len)
        } else {
            self.protect_datagram(buf, len)
        }
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
        if let Some(s) = self.security.as_mut() {
            s.plain_sent_len = None;
        }
        let overhead = self.security.as_ref().map_or(0, |s| s.overhead);
        let limit = self
            .config
            .max_message_size
            .min(buf.len())
            .min(budget)
            .saturating_sub(overhead);
        destinations.clear();
        let paced = self.pacer.may_send(now, self.rtt.srtt());
        let (len, paced) = self.transmit_push(now, buf, limit, destinations, Some(w.0), paced)?;
        if paced {
            self.pacer.on_sent(now, len);
        }
        self.stats.sent_datagrams += 1;
        self.protect_out(buf, len, overhead)
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
        let sn = i64::from(self.spdp_sent.max(1));
        if let Some(dests) = self.leave_queue.pop_front() {
            let mut e = Emitter::new(buf, limit, self.config.guid_prefix)?;
            let key = Guid::new(self.config.guid_prefix, EntityId::PARTICIPANT).to_bytes();
            let payload = discovery::participant_key_payload(
                self.config.guid_prefix,
                self.config.incarnation,
            );
            if e.data(
                SPDP_READER,
                SPDP_WRITER,
                sn + 1,
                Some(&key),
                3,
                &payload,
                true,
            ) {
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
                sn,
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
            // Many proxies: those with an ACKNACK pending come from the work
            // queue; a few: a scan from the one served last.
            let queued = r.proxies.queued();
            let n = r.proxies.len();
            let start = r.ack_cursor.min(n);
            let mut scan = (start..n).chain(0..start);
            loop {
                let next = if queued {
                    r.proxies.pop_due(now)
                } else {
                    scan.next()
                };
                let Some(i) = next else { break };
                let p = &mut r.proxies[i];
                if !p.ack_pending {
                    continue;
                }
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
                        // The acknowledgement goes now, once per HEARTBEAT
                        // (the writer's round trip and delivery rate come
                        // from its timing); the NACK_FRAGs wait.
                        if set.is_empty() && p.answered_hb == (p.last_hb, p.last_hb_frag) {
                            p.ack_due = Some(due);
                            self.work.arm(due);
                            r.proxies.requeue(i, due);
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
                            r.proxies.requeue(i, due);
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
                p.answered_hb = (p.last_hb, p.last_hb_frag);
                let final_flag = set.is_empty() && p.synced;
                p.ack_count = p.ack_count.wrapping_add(1);
                self.count_floor = self.count_floor.max(p.ack_count);
                if let Some(due) = deferred {
                    r.proxies.requeue(i, due);
                }
                let p = &mut r.proxies[i];
                let mut e = Emitter::new(buf, limit, prefix)?;
                e.protect_each(Self::sub_reserve(&self.security, reader_eid));
                if e.info_dst(p.guid.prefix)
                    && e.acknack(reader_eid, p.guid.entity_id, &set, p.ack_count, final_flag)
                {
                    // Partly received samples: ask for exactly the missing fragments.
                    for &(sn, base, bits, num_bits) in &nfs[..n_nf] {
                        p.nack_frag_count = p.nack_frag_count.wrapping_add(1);
                        self.count_floor = self.count_floor.max(p.nack_frag_count);
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
                    r.ack_cursor = i;
                    return Some(e.len());
                }
            }
            r.ack_work = if queued {
                !r.proxies.queue_is_empty()
            } else {
                r.proxies.iter().any(|p| p.ack_pending)
            };
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
        may_pace: bool,
    ) -> Option<(usize, bool)> {
        if only.is_none() && !self.work.push {
            return None;
        }
        let prefix = self.config.guid_prefix;
        let rto = self.rto();
        // The size of a push to shared-memory destinations only (when `to_shm` below).
        let shm_limit = match self.config.shm_message_size {
            m if m > limit => {
                let overhead = self.security.as_ref().map_or(0, |s| s.overhead);
                m.min(buf.len()).saturating_sub(overhead).max(limit)
            }
            _ => limit,
        };
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
            if (w.pushed >= w.last_sn && !w.hb_owed) || (only.is_none() && w.qos.flow_controlled) {
                continue;
            }
            // While the pacer holds paced data back, only the rest goes
            // (the caller learns which kind went).
            let paced = w.paced();
            if !may_pace && paced {
                remaining = remaining.or(Some(wi));
                continue;
            }
            if w.proxies.is_empty() {
                w.pushed = w.last_sn;
                w.push_frag = 1;
                w.push_done();
                self.after_ack(wi);
                continue;
            }
            if !w.hb_owed && !w.push_ready(now) {
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
            let all_shm = plan.all_shm;
            // Shared payloads go by reference only to readers whose participants read
            // DATA_REFs (FerroDDS, shared memory, no DDS Security: announced in SPDP).
            let refs_ok = all_shm
                && *plan.refs.get_or_insert_with(|| {
                    w.proxies.iter().all(|p| {
                        self.participants
                            .get(&p.guid.prefix)
                            .is_some_and(|r| r.data.data_refs)
                    })
                });
            if out.is_empty() {
                w.pushed = w.last_sn;
                w.push_frag = 1;
                w.push_done();
                self.after_ack(wi);
                continue;
            }
            let sizes = w.sizes;
            // Submessage protection: room for each submessage's transform.
            let sec = Self::sub_reserve(&self.security, w.guid.entity_id);
            let reserve = if with_hb {
                HB_LEN + HBF_LEN + 2 * sec
            } else {
                0
            };
            // To shared memory only (not under a flow controller's budget, nor a writer's own
            // `max_message_size`), a push may fill a shared-memory message; without DDS
            // Security a sample that fits it goes whole (up to the largest DATA a 16-bit
            // length allows), and one already begun in fragments is finished in them (its
            // fragment numbering is every reader's, repairs included).
            let to_shm = all_shm && only.is_none() && w.qos.max_message_size.is_none();
            let cap = if to_shm {
                shm_limit
            } else {
                limit.min(sizes.max_message + sec)
            };
            let whole_sizes = if to_shm && sec == 0 && self.security.is_none() {
                Sizes {
                    max_data: sizes
                        .max_data
                        .max(cap.saturating_sub(DATA_OVERHEAD).min(MAX_WHOLE_DATA)),
                    refs: refs_ok,
                    ..sizes
                }
            } else {
                sizes
            };
            let mut e = Emitter::new(buf, cap, prefix)?;
            e.protect_each(sec);
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
            // A HEARTBEAT owed by the previous datagram goes alone.
            let hb_only = w.hb_owed;
            // Whether a sample was completed here, and the fragment train
            // crossed a HEARTBEAT_FRAG point: then a HEARTBEAT is due.
            let mut completed = false;
            let frag_start = w.push_frag;
            // Not further ahead of the slowest reliable reader's
            // acknowledgements than a reader buffers out of order (beyond
            // that, what follows a lost datagram would be dropped and resent).
            let window = acked.saturating_add(MAX_OUT_OF_ORDER as i64);
            if !hb_only && w.pushed >= window {
                remaining = remaining.or(Some(wi));
                continue;
            }
            // Fragmented samples: not further ahead than a reader reassembles.
            let mut window_full = false;
            while !hb_only && w.pushed < w.last_sn.min(window) {
                let sn = w.pushed + 1;
                let Some(c) = w.history.get(sn) else {
                    // Replaced before it was sent (KEEP_LAST): readers get a GAP on request.
                    w.pushed = sn;
                    w.push_frag = 1;
                    continue;
                };
                let ids = (reader_id, w.guid.entity_id);
                let len = c.payload.len();
                let sizes = if w.push_frag == 1 { whole_sizes } else { sizes };
                // (A change sent by reference is never fragmented.)
                if w.push_frag == 1
                    && len > sizes.max_data
                    && !(sizes.refs && c.payload.reference().is_some())
                    && w.frag_window_full(acked, sn, len)
                {
                    window_full = true;
                    break;
                }
                match emit_change(&mut e, ids, c, sizes, w.push_frag, reserve, &mut self.stats) {
                    Emitted::All => {
                        sent_any = true;
                        completed = true;
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
            if window_full && !sent_any {
                // (Acknowledgements open the window again.)
                remaining = remaining.or(Some(wi));
                continue;
            }
            w.push_done();
            if hb_only && w.push_frag > 1 {
                partial_frag = Some((w.pushed + 1, w.push_frag - 1));
            }
            let hb_room = HB_LEN + if partial_frag.is_some() { HBF_LEN } else { 0 };
            let hb_due = hb_only
                || completed
                || partial_frag.is_some_and(|(_, f)| {
                    // (`frag_start` was this sample's next fragment if the
                    // datagram began inside it; a new sample starts at 1.)
                    let from = if completed { 1 } else { frag_start };
                    f / HBF_EVERY > from.saturating_sub(1) / HBF_EVERY
                });
            let hb_fits = e.room() >= hb_room;
            w.hb_owed = with_hb && hb_due && !hb_fits;
            if with_hb && hb_fits {
                // Announce only what was actually sent, so readers do not
                // NACK samples still queued here.
                w.hb_count = w.hb_count.wrapping_add(1);
                let last = w.pushed;
                let ask = w.wants_ack_at(now, self.ack_request_ns, acked.min(last));
                if ask {
                    w.last_ack_request = Some(now);
                    w.last_ack_request_sn = last;
                    w.datagrams_since_ack_request = 0;
                    // Round-trip probe: the ACKNACK acknowledging `last`.
                    if w.rtt_probe.is_none() {
                        w.rtt_probe = Some((last, now));
                    }
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
                // Tail-loss probe: a HEARTBEAT asking for an acknowledgement
                // if this stays unacknowledged for a retransmission timeout
                // with nothing pushed after it.
                let t = now.saturating_add(rto);
                if w.next_hb.replace(t) == Some(self.work.timeout) {
                    // Moved later: see `Work::stale_timeout`.
                    self.work.stale_timeout = true;
                }
                w.hb_backoff = 0;
                self.work.arm(t);
            }
            let len = e.len();
            if sent_any {
                w.datagrams_since_ack_request = w.datagrams_since_ack_request.saturating_add(1);
            }
            let drained = w.pushed >= w.last_sn && !w.hb_owed;
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
                return Some((len, paced));
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
            let sec = Self::sub_reserve(&self.security, w.guid.entity_id);
            // Announce only what was pushed (batched samples may still wait).
            let last = w.pushed;
            // What a repair sent now comes after: SNs pushed, or begun.
            let mark = w.push_mark();
            let first = w.hb_first().min(last + 1);
            let writer_eid = w.guid.entity_id;
            // Many proxies: those with work due come from the work queue; a
            // few: a scan from the one served last.
            let queued = w.proxies.queued();
            let n = w.proxies.len();
            let start = w.repair_cursor.min(n);
            let mut scan = (start..n).chain(0..start);
            loop {
                let next = if queued {
                    w.proxies.pop_due(now)
                } else {
                    scan.next()
                };
                let Some(i) = next else { break };
                let p = &mut w.proxies[i];
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
                // (No room for the headers: the work stays queued.)
                let Some(mut e) = Emitter::new(buf, limit.min(sizes.max_message + sec), prefix)
                else {
                    w.proxies.note_work(i);
                    return None;
                };
                e.protect_each(sec);
                if !e.info_dst(p.guid.prefix) {
                    w.proxies.note_work(i);
                    return None;
                }
                if p.gap_pending && p.first_relevant > 1 {
                    e.gap(reader_eid, writer_eid, 1, &SnSet::new(p.first_relevant));
                }
                p.gap_pending = false;
                let before = e.len();
                if repairs_due {
                    // Fragments asked for by NACK_FRAG.
                    'frags: while let Some((&sn, _)) = p.frag_requests.first_key_value() {
                        let available = if sn >= p.first_relevant {
                            w.history.get(sn)
                        } else {
                            None
                        };
                        let Some(c) = available.filter(|c| c.payload.len() > sizes.max_data) else {
                            // Gone (or not fragmented): GAP or resend it whole.
                            p.frag_requests.remove(&sn);
                            if p.requested.len() < 4096 {
                                p.requested.insert(sn);
                            }
                            continue;
                        };
                        let Some(set) = p.frag_requests.get_mut(&sn) else {
                            break;
                        };
                        // (Each fragment is noted as it goes: a NACK_FRAG
                        // arriving while this SN's fragments are still being
                        // resent must not ask again for those just sent.)
                        let at = Resent { at: now, mark };
                        let mut sent = false;
                        while let Some(f) = set.pop_first() {
                            // (A fragment may fill the datagram: the
                            // HEARTBEAT below goes only if room is left.)
                            if !emit_fragment(&mut e, ids, c, sizes, f, 0) {
                                set.insert(f);
                                break;
                            }
                            sent = true;
                            self.stats.resent_data += 1;
                            self.stats.resent_fragments += 1;
                            ReaderProxy::note_resent_fragment(&mut p.resent_frags, sn, f, at);
                        }
                        let unfinished = !set.is_empty();
                        if sent {
                            p.note_resent(sn, now, mark);
                        }
                        if unfinished {
                            break 'frags;
                        }
                        p.frag_requests.remove(&sn);
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
                                let emitted = emit_change(
                                    &mut e,
                                    ids,
                                    c,
                                    sizes,
                                    from,
                                    HB_LEN + sec,
                                    &mut self.stats,
                                );
                                // Fragments resent whole-sample are noted
                                // too: a NACK_FRAG for them is judged as one
                                // for fragments it asked for.
                                let fragmented = c.payload.len() > sizes.max_data;
                                let end = match emitted {
                                    Emitted::All if fragmented => {
                                        c.payload.len().div_ceil(sizes.frag) as u32 + 1
                                    }
                                    Emitted::Upto(f) => f,
                                    _ => from,
                                };
                                let at = Resent { at: now, mark };
                                for f in from..end {
                                    ReaderProxy::note_resent_fragment(
                                        &mut p.resent_frags,
                                        sn,
                                        f,
                                        at,
                                    );
                                }
                                match emitted {
                                    Emitted::All => {
                                        self.stats.resent_data += 1;
                                        p.requested.remove(&sn);
                                        p.note_resent(sn, now, mark);
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
                if e.len() > before {
                    // Karn: a round trip over resent data is no sample.
                    w.rtt_probe = None;
                }
                self.stats.resent_bytes += (e.len() - before) as u64;
                if e.room() >= HB_LEN {
                    w.hb_count = w.hb_count.wrapping_add(1);
                    e.heartbeat(reader_eid, writer_eid, first, last, w.hb_count, false);
                    p.hb_pending = false;
                }
                fill_dests(out, p.locators.iter());
                w.repair_cursor = i;
                let len = e.len();
                // (Work left, e.g. more repairs than one datagram holds,
                // goes back to the queue.)
                w.proxies.note_work(i);
                return Some(len);
            }
            w.repair_work = if queued {
                !w.proxies.queue_is_empty()
            } else {
                w.proxies.iter().any(ReaderProxy::has_repair_work)
            };
            remaining |= w.repair_work;
        }
        self.work.repair = remaining;
        None
    }
}
