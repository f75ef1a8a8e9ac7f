//! Reliability submessages: HEARTBEAT, HEARTBEAT_FRAG and GAP (reader
//! side), ACKNACK and NACK_FRAG (writer side), and writer bookkeeping after
//! acknowledgements.

use super::*;

impl Participant {
    pub(super) fn on_heartbeat(
        &mut self,
        writer: Guid,
        reader_id: EntityId,
        hb: (i64, i64, i32, bool),
    ) {
        let (first, last, count, final_flag) = hb;
        let mut builtin = Vec::new();
        let mut matched = false;
        for ri in self.readers_for(writer.entity_id) {
            let Some(r) = self.readers[ri].as_mut() else {
                continue;
            };
            if reader_id != EntityId::UNKNOWN && reader_id != r.guid.entity_id {
                continue;
            }
            let room = r.room();
            let Some(pi) = r.proxies.position(writer) else {
                continue;
            };
            let p = &mut r.proxies[pi];
            matched = true;
            let out = reset_scratch(&mut self.scratch);
            p.on_heartbeat(first, last, count, final_flag, room, out);
            self.work
                .watch_writer_proxy(&mut r.ack_work, &mut r.proxies, pi);
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

    pub(super) fn on_heartbeat_frag(
        &mut self,
        writer: Guid,
        reader_id: EntityId,
        hbf: (i64, u32, i32),
    ) {
        let (sn, last_frag, count) = hbf;
        let mut matched = false;
        let range = self.readers_for(writer.entity_id);
        for r in self.readers[range].iter_mut().flatten() {
            if reader_id != EntityId::UNKNOWN && reader_id != r.guid.entity_id {
                continue;
            }
            if let Some(pi) = r.proxies.position(writer) {
                matched = true;
                r.proxies[pi].on_heartbeat_frag(sn, last_frag, count);
                self.work
                    .watch_writer_proxy(&mut r.ack_work, &mut r.proxies, pi);
            }
        }
        if !matched {
            self.stats.unmatched_submessages += 1;
        }
    }

    pub(super) fn on_gap(&mut self, writer: Guid, reader_id: EntityId, start: i64, list: &SnSet) {
        let mut builtin = Vec::new();
        for ri in self.readers_for(writer.entity_id) {
            let Some(r) = self.readers[ri].as_mut() else {
                continue;
            };
            if reader_id != EntityId::UNKNOWN && reader_id != r.guid.entity_id {
                continue;
            }
            let room = r.room();
            let Some(pi) = r.proxies.position(writer) else {
                continue;
            };
            let p = &mut r.proxies[pi];
            let out = reset_scratch(&mut self.scratch);
            p.on_gap(start, list, room, out);
            self.work
                .watch_writer_proxy(&mut r.ack_work, &mut r.proxies, pi);
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

    pub(super) fn on_acknack(
        &mut self,
        reader: Guid,
        writer_id: EntityId,
        set: &SnSet,
        count: i32,
        final_flag: bool,
        now: Timestamp,
    ) {
        let due = now.saturating_add(self.config.nack_response_delay);
        let windows = self.suppress_windows();
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
        let suppress = Suppress {
            pushed: w.push_mark(),
            ..windows
        };
        let last = w.last_sn;
        let reliable_readers = w.reliable_proxies.max(1) as u64;
        let LocalWriter {
            proxies,
            history,
            sizes,
            lagging_proxies,
            ..
        } = w;
        let Some(pi) = proxies.position(reader) else {
            self.stats.unmatched_submessages += 1;
            return;
        };
        let p = &mut proxies[pi];
        if !p.reliable {
            return;
        }
        p.unanswered_hbs = 0;
        // Losses of data sent before the last decrease do not count again,
        // but a repair sent after it that is lost does.
        // Nor do SNs pushed before this reader matched that were never
        // resent to it: they never reached it (a late joiner asking for a
        // transient-local history, as every remote participant does of the
        // builtin SEDP writers).
        let recovery = w.recovery_sn;
        let recovery_at = w.recovery_at;
        let joined = p.pushed_before_match;
        let size_of = |sn: i64, resent: Option<Timestamp>| {
            if sn <= recovery && resent.is_none_or(|t| t < recovery_at) {
                return 0;
            }
            if sn <= joined && resent.is_none() {
                return 0;
            }
            let len = history.get(sn).map_or(0, |c| c.payload.len() as u64);
            // As for deliveries (below): a pushed datagram is paced once for all the n
            // reliable readers it reached, so one reader's loss of it is a 1/n share; a
            // repair went to this reader alone and counts whole. (Counting every reader's
            // loss whole made n CPU-starved subscribers' scattered losses look like n times
            // the loss rate: 8 unicast subscribers cut the rate 50-odd times in 5 s.)
            if resent.is_some() {
                len
            } else {
                len / reliable_readers
            }
        };
        let acked_before = p.acked;
        let was_lagging = p.lagging(last);
        let Some(lost) = p.on_acknack(set, count, final_flag, last, now, suppress, due, size_of)
        else {
            return;
        };
        if was_lagging && !p.lagging(last) {
            *lagging_proxies -= 1;
        }
        // Bytes this reader newly acknowledged, as sent (with their
        // submessage headers), feed the delivery rate under congestion
        // control (at most the whole history is visited). A pushed datagram
        // is paced once whatever number of readers it reaches, so each
        // reader's share of a pushed SN is 1/n (n reliable readers); SNs
        // pushed before this reader matched reached it only by repairs sent
        // to it alone, which count whole (else a transient-local history
        // sent to each of n late joiners would count n times too little).
        let delivered = if self.pacer.enabled() && p.acked > acked_before {
            let first = acked_before.max(history.first_sn().unwrap_or(i64::MAX) - 1) + 1;
            let bytes = |from: i64, to: i64| -> u64 {
                (from..=to)
                    .filter_map(|sn| history.get(sn))
                    .map(|c| sizes.wire_len(c.payload.len()) as u64)
                    .sum()
            };
            let own = if first <= joined {
                bytes(first, p.acked.min(joined))
            } else {
                0
            };
            own + bytes(first.max(joined + 1), p.acked) / reliable_readers
        } else {
            0
        };
        self.work
            .watch_reader_proxy(&mut w.repair_work, &mut w.proxies, pi);
        let mut rtt = None;
        if let Some((sn, sent)) = w.rtt_probe {
            if set.base() > sn {
                rtt = Some(now.0.saturating_sub(sent.0));
                w.rtt_probe = None;
            }
        }
        if let Some(rtt) = rtt {
            self.rtt_sample(now, rtt);
        }
        if delivered > 0 {
            self.pacer.on_delivered(now, delivered, self.rtt.srtt());
        }
        if lost > 0 {
            self.on_lost(now, lost);
        }
        self.after_ack(wi);
    }

    pub(super) fn on_nack_frag(
        &mut self,
        reader: Guid,
        writer_id: EntityId,
        sn: i64,
        frags: &ferrodds_wire::FragmentNumberSet,
        count: i32,
        now: Timestamp,
    ) {
        let due = now.saturating_add(self.config.nack_response_delay);
        let windows = self.suppress_windows();
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
        let suppress = Suppress {
            pushed: w.push_mark(),
            ..windows
        };
        if sn > w.last_sn {
            return;
        }
        let Some(pi) = w.proxies.position(reader) else {
            self.stats.unmatched_submessages += 1;
            return;
        };
        if w.proxies[pi].reliable {
            let reliable_readers = w.reliable_proxies.max(1) as u64;
            let p = &mut w.proxies[pi];
            let new = p.on_nack_frag(sn, frags.iter().map(|f| f.0), count, now, suppress, due);
            self.work
                .watch_reader_proxy(&mut w.repair_work, &mut w.proxies, pi);
            let p = &w.proxies[pi];
            let repair_lost = p.resent.get(&sn).is_some_and(|r| r.at >= w.recovery_at);
            if new > 0 && (sn > w.recovery_sn || repair_lost) {
                // This reader's share of fragments pushed to all (see on_acknack), whole
                // for a repair sent to it.
                let share = if repair_lost { 1 } else { reliable_readers };
                let lost = new as u64 * w.sizes.frag as u64 / share;
                self.on_lost(now, lost);
            }
        }
    }

    /// Feeds reported losses to congestion control; after a decrease, losses
    /// of what every writer pushed so far no longer count (TCP's recovery
    /// point: the decrease answered them).
    fn on_lost(&mut self, now: Timestamp, bytes: u64) {
        if self.pacer.on_lost(now, bytes, self.rtt.srtt()) {
            self.set_recovery_points(now);
        }
        self.sync_cc_stats();
    }

    /// After a congestion decrease: what writers pushed so far was sent before it.
    pub(super) fn set_recovery_points(&mut self, now: Timestamp) {
        for w in self.writers.iter_mut().flatten() {
            w.recovery_sn = w.push_mark();
            w.recovery_at = now;
        }
    }

    /// Purges acknowledged history and raises resource/acknowledgement events.
    pub(super) fn after_ack(&mut self, wi: usize) {
        let Some(w) = self.writers[wi].as_mut() else {
            return;
        };
        debug_assert!(w.counts_ok(), "reliable/lagging proxy counts");
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
            && w.reliable_proxies > 0
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
            // The tail-loss probe this acknowledgement makes useless: when it was the
            // participant's next timeout, that timeout is computed again once the datagram
            // is handled, so that the event thread is not woken for nothing (one wake-up
            // per retransmission timeout while samples flow, a latency tail when it shares
            // the CPU).
            if w.next_hb.take() == Some(self.work.timeout) {
                self.work.stale_timeout = true;
            }
            w.hb_backoff = 0;
        }
    }
}
