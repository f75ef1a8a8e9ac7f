//! Work hints and timers: [`Work`], [`Participant::handle_timeout`] and
//! [`Participant::poll_timeout`].

use super::*;

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
pub(super) struct Work {
    /// Some reader may have a proxy with `ack_pending`.
    pub(super) ack: bool,
    /// Some writer that is not flow-controlled may have changes not pushed yet.
    pub(super) push: bool,
    /// No writer below this index has changes to push (when `push` is set):
    /// a push scan starts here, so the poll that follows a push (which finds
    /// nothing more) does not revisit the writers before and including the
    /// one just drained.
    pub(super) push_from: usize,
    /// Some writer may have a proxy with repair work.
    pub(super) repair: bool,
    /// A lower bound of every pending deadline ([`Participant::next_deadline`]):
    /// lowered whenever a deadline is set or becomes active, recomputed exactly
    /// by `handle_timeout`. A deadline that moves later or goes away leaves it
    /// early, which costs at most one `handle_timeout` that finds nothing to do.
    pub(super) timeout: Timestamp,
    /// The deadline `timeout` was set for went away (an acknowledgement cancelled a
    /// tail-loss probe): `timeout` is computed again after the datagram.
    pub(super) stale_timeout: bool,
}

impl Work {
    pub(super) fn arm(&mut self, t: Timestamp) {
        self.timeout = self.timeout.min(t);
    }

    /// Notes the state of writer proxy `i` of a reader after it may have
    /// changed (`reader_flag` is the reader's [`LocalReader::ack_work`]) and
    /// queues it if it has work.
    #[inline]
    pub(super) fn watch_writer_proxy(
        &mut self,
        reader_flag: &mut bool,
        proxies: &mut Proxies<WriterProxy>,
        i: usize,
    ) {
        proxies.note_work(i);
        let p = &proxies[i];
        if p.ack_pending {
            *reader_flag = true;
            self.ack = true;
            if let Some(d) = p.ack_due {
                self.arm(d);
            }
        }
    }

    /// Notes the state of reader proxy `i` of a writer after it may have
    /// changed (`writer_flag` is the writer's [`LocalWriter::repair_work`])
    /// and queues it if it has work.
    pub(super) fn watch_reader_proxy(
        &mut self,
        writer_flag: &mut bool,
        proxies: &mut Proxies<ReaderProxy>,
        i: usize,
    ) {
        proxies.note_work(i);
        let p = &proxies[i];
        if p.has_repair_work() {
            *writer_flag = true;
            self.repair = true;
            if p.repairs_requested() {
                self.arm(p.repair_due);
            }
        }
    }
}

impl Participant {
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
        if now >= self.next_lease_check {
            let mut expired: Vec<GuidPrefix> = Vec::new();
            let mut next = Timestamp(u64::MAX);
            for (k, p) in &self.participants {
                let end = p.last_heard.saturating_add(p.data.lease_duration);
                if now >= end {
                    expired.push(*k);
                } else {
                    next = next.min(end);
                }
            }
            self.next_lease_check = next;
            expired.sort_unstable();
            self.remove_participants(&expired);
        }
        // Best effort: incomplete fragmented samples expire. (A reliable reader's
        // proxies are all reliable: its builtin SEDP readers, with a proxy per remote
        // participant, are skipped without visiting them.)
        let timeout = self.config.reassembly.best_effort_timeout;
        if let Some(deadline) = now.0.checked_sub(timeout.as_nanos() as u64) {
            for r in self
                .readers
                .iter_mut()
                .flatten()
                .filter(|r| r.qos.reliability.kind != ReliabilityKind::Reliable)
            {
                for p in r.proxies.iter_mut().filter(|p| !p.reliable) {
                    if !p.reasm.is_empty() {
                        p.reasm.drop_started_before(Timestamp(deadline));
                    }
                }
            }
        }
        let period = self.config.heartbeat_period;
        let rto = self.rto();
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
                    for i in 0..w.proxies.len() {
                        let p = &mut w.proxies[i];
                        if !p.lagging(last) {
                            continue;
                        }
                        // Only a HEARTBEAT that went out can be left
                        // unanswered: one still waiting (behind paced
                        // repairs to other readers), or repairs this reader
                        // asked for still waiting, say nothing about it.
                        if !p.hb_pending && !p.repairs_requested() {
                            p.unanswered_hbs = p.unanswered_hbs.saturating_add(1);
                        }
                        if p.unanswered_hbs > MAX_UNANSWERED_HEARTBEATS
                            && p.unanswered_hbs % UNRESPONSIVE_HEARTBEAT_DIVISOR != 0
                        {
                            // Unresponsive: heartbeated less often until it answers.
                            self.stats.unresponsive_heartbeats_skipped += 1;
                            continue;
                        }
                        p.hb_pending = true;
                        self.work
                            .watch_reader_proxy(&mut w.repair_work, &mut w.proxies, i);
                    }
                    // Tail-loss probes back off exponentially from the
                    // retransmission timeout up to the HEARTBEAT period.
                    let interval = rto
                        .checked_mul(1 << w.hb_backoff.min(16))
                        .map_or(period, |i| i.min(period));
                    if interval < period {
                        self.stats.tail_loss_probes += 1;
                    }
                    w.hb_backoff = w.hb_backoff.saturating_add(1);
                    w.next_hb = Some(now.saturating_add(interval));
                }
            }
        }
        // Work queues: what fell due moves to their ready part (see
        // `next_deadline`).
        if self.work.ack {
            for r in self.readers.iter_mut().flatten() {
                if r.ack_work && r.proxies.queued() {
                    r.proxies.settle(now);
                }
            }
        }
        if self.work.repair {
            for w in self.writers.iter_mut().flatten() {
                if w.repair_work && w.proxies.queued() {
                    w.proxies.settle(now);
                }
            }
        }
        self.security_timeout(now);
        if self.pacer.evaluate(now, self.rtt.srtt()) {
            self.set_recovery_points(now);
        }
        self.sync_cc_stats();
        self.work.timeout = self.next_deadline();
    }

    /// Computes the next timeout again when the deadline it was set for moved later or went
    /// away (`Work::stale_timeout`), so that the caller's timer is not woken for nothing.
    #[inline]
    pub(super) fn refresh_stale_timeout(&mut self) {
        if self.work.stale_timeout {
            self.work.stale_timeout = false;
            self.work.timeout = self.next_deadline();
        }
    }

    /// When `handle_timeout` should next be called. This may be earlier than
    /// needed (a deadline that moved later or went away since the last
    /// `handle_timeout`); then `handle_timeout` finds nothing to do and the
    /// value is exact again. It is never later than needed.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        Some(self.work.timeout)
    }

    /// The earliest pending deadline: the SPDP announcement, leases,
    /// held-off ACKNACKs, periodic HEARTBEATs, batch flush delays and repair
    /// delays. Every place that sets or activates one of these also lowers
    /// [`Work::timeout`]. Leases count as `next_lease_check` (a lower bound of
    /// every lease's end, kept where leases are set), and proxies are visited
    /// only in the endpoints whose work flags say they may have something due,
    /// so that the cost does not grow with the number of remote participants
    /// (discovery of N participants calls this O(N) times in each).
    pub(super) fn next_deadline(&self) -> Timestamp {
        let mut t = self.next_spdp.min(self.next_lease_check);
        if let Some(d) = self.security_deadline() {
            t = t.min(d);
        }
        if self.work.ack {
            for r in self.readers.iter().flatten().filter(|r| r.ack_work) {
                if r.proxies.queued() {
                    // (Settled by `handle_timeout`: what is due goes with
                    // the next `poll_transmit`, as unqueued pending
                    // ACKNACKs without a hold-off do.)
                    if let Some(d) = r.proxies.next_timed() {
                        t = t.min(d);
                    }
                    continue;
                }
                for p in r.proxies.iter().filter(|p| p.ack_pending) {
                    if let Some(d) = p.ack_due {
                        t = t.min(d);
                    }
                }
            }
        }
        // While the pacer waits for tokens, paced work that is already due
        // (a repair, a batch to flush) can only go when they come: its
        // deadline is that time, not a past one (which would wake the
        // caller again at once, a busy loop until the tokens come).
        let gate = self.pacer.next_send_at();
        let paced = |d: Timestamp| gate.map_or(d, |g| d.max(g));
        if self.work.push || self.work.repair {
            if let Some(p) = gate {
                t = t.min(p);
            }
        }
        for w in self.writers.iter().flatten() {
            if let Some(h) = w.next_hb {
                t = t.min(h);
            }
            // (Flow-controlled writers are paced by their publisher, which
            // polls on its own period.)
            if let Some(d) = w.batch_deadline().filter(|_| !w.qos.flow_controlled) {
                t = t.min(if w.paced() { paced(d) } else { d });
            }
            if self.work.repair && w.repair_work {
                if w.proxies.queued() {
                    // (Repairs already due wait only for the pacer, whose
                    // time is counted above.)
                    if let Some(d) = w.proxies.next_timed() {
                        t = t.min(paced(d));
                    }
                    continue;
                }
                for p in &w.proxies {
                    if p.repairs_requested() {
                        t = t.min(paced(p.repair_due));
                    }
                }
            }
        }
        t
    }
}
