//! The public commands and queries of [`Participant`]: writers (create,
//! delete, write, flush, instances) and counts/state queries.

use super::*;

impl Participant {
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
        self.register_secure_endpoint(guid, &attrs.topic_name, true)?;
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
        // With DDS Security, room for the message transform and this writer's
        // submessage transform.
        let reserve = self.security.as_ref().map_or(0, |s| s.overhead)
            + Self::sub_reserve(&self.security, eid);
        w.sizes = Sizes::reserving(&self.config, &w.qos, eid, reserve);
        self.writers.push(Some(w));
        let id = WriterId(self.writers.len() - 1);
        self.announce_endpoint(self.sedp_writer_for(&data.topic_name, true), &data, now);
        let readers: Vec<EndpointData> = self.remote_readers.values().cloned().collect();
        for r in &readers {
            self.match_writer_reader(id.0, r);
        }
        // Local loopback: our own readers see this writer like a remote one.
        self.on_remote_writer(data);
        Ok(id)
    }

    pub(super) fn announce_endpoint(&mut self, sedp: usize, data: &EndpointData, now: Timestamp) {
        let payload = data.encode(self.config.guid_prefix);
        let key = data.guid.to_bytes();
        let _ = self.add_change(
            sedp,
            ChangeKind::Alive,
            Some(key),
            Payload::Copy(&payload),
            None,
            now,
        );
    }

    pub(super) fn announce_dispose(&mut self, sedp: usize, guid: Guid, now: Timestamp) {
        let payload = discovery::endpoint_key_payload(guid);
        let _ = self.add_change(
            sedp,
            ChangeKind::NotAliveDisposedUnregistered,
            Some(guid.to_bytes()),
            Payload::Copy(&payload),
            None,
            now,
        );
    }

    /// Deletes a writer (announces a dispose through SEDP).
    pub fn delete_writer(&mut self, w: WriterId, now: Timestamp) -> Result<(), EngineError> {
        let lw = self.user_writer(w).ok_or(EngineError::UnknownWriter)?;
        let (guid, sedp) = (lw.guid, self.sedp_writer_for(&lw.topic_name, true));
        self.writers[w.0] = None;
        self.unregister_secure_endpoint(guid);
        self.announce_dispose(sedp, guid, now);
        self.remove_remote_writer(guid);
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

    /// If a write of `len` payload bytes to `w` now would join the batch it holds without
    /// sending anything or arming a new timeout, the source timestamp that sample gets
    /// (the batch's: `source_timestamp_resolution` infinite); `None` otherwise. Such a
    /// write uses neither the clock nor its own timestamp, so a runtime may skip reading
    /// them (the engine then takes the last time it was given).
    pub fn batch_join_timestamp(&self, w: WriterId, len: usize) -> Option<Time> {
        let wr = self.user_writer(w)?;
        let b = &wr.qos.batching;
        let joins = b.enabled
            && b.source_timestamp_resolution == crate::qos::DURATION_INFINITE
            && wr.pushed < wr.last_sn
            && !wr.flush
            && wr.push_frag <= 1
            && len <= wr.sizes.max_data
            && wr.unsent_bytes.saturating_add(len) < b.max_bytes
            && (b.max_samples == 0 || wr.unsent_samples + 1 < b.max_samples)
            && !self.protects_payload(wr.guid.entity_id);
        if joins {
            wr.batch_ts
        } else {
            None
        }
    }

    /// When congestion control next lets a datagram of new data or repair
    /// go, if it is holding them back now (`None`: not waiting). A caller
    /// of [`Participant::poll_transmit_writer`] that got `None` with budget
    /// left and [`Participant::pending_bytes`] to send retries then.
    pub fn pacing_resume_at(&self) -> Option<Timestamp> {
        self.pacer.next_send_at()
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
        let WriteRequest {
            kind,
            key_hash,
            serialized_payload,
            source_timestamp,
        } = change;
        self.write_payload(
            w,
            (kind, key_hash, source_timestamp),
            Payload::Copy(serialized_payload),
            now,
        )
    }

    /// [`write`](Self::write) without copying the payload: the history takes the
    /// buffer of `change` and leaves a recycled one in its place (the copy into the
    /// history is the largest cost of writing a large sample).
    pub fn write_taking(
        &mut self,
        w: WriterId,
        change: TakingWrite<'_>,
        now: Timestamp,
    ) -> Result<SequenceNumber, WriteError> {
        let TakingWrite {
            kind,
            key_hash,
            payload,
            source_timestamp,
        } = change;
        self.write_payload(
            w,
            (kind, key_hash, source_timestamp),
            Payload::Take(payload),
            now,
        )
    }

    /// [`write`](Self::write) of a payload in shared memory: the history keeps it as it is
    /// (no copy), UDP readers get its bytes, and a push to shared-memory readers only sends
    /// a DATA_REF naming it, which their participant's [`ChunkReader`] copies out. Under
    /// DDS Security payload protection the history keeps the protected form instead (a
    /// copy; the chunk is dropped).
    pub fn write_shared(
        &mut self,
        w: WriterId,
        change: SharedWrite,
        now: Timestamp,
    ) -> Result<SequenceNumber, WriteError> {
        let SharedWrite {
            kind,
            key_hash,
            payload,
            source_timestamp,
        } = change;
        if payload.reference().len() > MAX_CHUNK_REFERENCE {
            return Err(WriteError::PayloadTooLarge {
                size: payload.reference().len(),
                max: MAX_CHUNK_REFERENCE,
            });
        }
        self.write_payload(
            w,
            (kind, key_hash, source_timestamp),
            Payload::Shared(payload),
            now,
        )
    }

    /// Whether a payload of writer `w` given to [`write_shared`](Self::write_shared) now
    /// would go by reference: every matched reader is reached through shared memory only and
    /// its participant announced that it reads DATA_REFs, the writer is neither
    /// flow-controlled nor bounded by a `max_message_size` of its own, and DDS Security is
    /// off. A runtime asks before it copies a payload into shared memory
    /// (otherwise the copy buys nothing).
    pub fn writer_sends_by_reference(&self, w: WriterId) -> bool {
        let Some(w) = self.user_writer(w) else {
            return false;
        };
        self.security.is_none()
            && !w.qos.flow_controlled
            && w.qos.max_message_size.is_none()
            && !w.proxies.is_empty()
            && w.proxies.iter().all(|p| {
                !p.locators.is_empty()
                    && p.locators
                        .iter()
                        .all(|l| l.kind == Locator::KIND_FERRODDS_SHM)
                    && self
                        .participants
                        .get(&p.guid.prefix)
                        .is_some_and(|r| r.data.data_refs)
            })
    }

    /// Whether a write to writer `w` now would fail with [`WriteError::HistoryFull`] (a
    /// KEEP_ALL history at its sample limit whose oldest sample is not acknowledged). A
    /// runtime asks before it copies a payload into shared memory for the write.
    pub fn writer_history_full(&self, w: WriterId) -> bool {
        let Some(w) = self.user_writer(w) else {
            return false;
        };
        matches!(w.qos.history, History::KeepAll)
            && w.max_samples().is_some_and(|max| w.history.len() >= max)
            && w.history.first_sn().is_none_or(|f| f > w.ack_bound())
    }

    /// [`writer_history_full`](Self::writer_history_full) for a write that will wait for
    /// room: when full, the writer is marked blocked as a refused write marks it, so that
    /// [`Event::WriterResourcesAvailable`] reports the room the next acknowledgement makes
    /// (without it the waiting writer only tried again at its poll interval).
    pub fn writer_history_full_wait(&mut self, w: WriterId) -> bool {
        if !self.writer_history_full(w) {
            return false;
        }
        if let Some(w) = self.writers.get_mut(w.0).and_then(Option::as_mut) {
            w.blocked = true;
        }
        true
    }

    /// Moves the shared payloads writer `w`'s history released (see
    /// [`SharedPayload::release`]) into `out`, for the runtime to reuse.
    pub fn reclaim_shared_payloads(&mut self, w: WriterId, out: &mut Vec<Box<dyn SharedPayload>>) {
        if let Some(w) = self.writers.get_mut(w.0).and_then(Option::as_mut) {
            w.history.take_released(out);
        }
    }

    /// Sets what copies the payloads of DATA_REF submessages out of other participants'
    /// shared memory (`None`: DATA_REFs are counted in [`Stats::unreadable_data_refs`] and
    /// handled as lost DATA). A runtime with shared memory sets it.
    pub fn set_chunk_reader(&mut self, reader: Option<Box<dyn ChunkReader>>) {
        let refs = reader.is_some() && self.security.is_none();
        self.chunk_reader = reader;
        // Announced in SPDP: writers on this host send large samples by reference only to
        // participants that read them.
        if let Some(mut d) = SpdpData::decode(&self.spdp_payload) {
            if d.data_refs != refs {
                d.data_refs = refs;
                self.spdp_payload = d.encode();
            }
        }
    }

    /// [`write_taking`](Self::write_taking), then [`flush`](Self::flush).
    pub fn write_taking_flush(
        &mut self,
        w: WriterId,
        change: TakingWrite<'_>,
        now: Timestamp,
    ) -> Result<SequenceNumber, WriteError> {
        let sn = self.write_taking(w, change, now)?;
        let _ = self.flush(w, now);
        Ok(sn)
    }

    fn write_payload(
        &mut self,
        w: WriterId,
        (kind, key_hash, source_timestamp): (ChangeKind, Option<[u8; 16]>, Option<Time>),
        payload: Payload<'_>,
        now: Timestamp,
    ) -> Result<SequenceNumber, WriteError> {
        if self.user_writer(w).is_none() {
            return Err(WriteError::UnknownWriter);
        }
        let max = self.max_payload_size();
        if payload.bytes().len() > max {
            return Err(WriteError::PayloadTooLarge {
                size: payload.bytes().len(),
                max,
            });
        }
        let eid = self.writers[w.0].as_ref().map(|x| x.guid.entity_id);
        // An unkeyed topic has one instance: a key hash given to its writer is dropped, so
        // that whole samples and fragments go alike (without PID_KEY_HASH) and KEEP_LAST
        // counts one instance.
        let key_hash = key_hash.and_then(|k| eid.and_then(|e| instance_key(e, k)));
        if eid.is_some_and(|e| self.protects_payload(e)) {
            // DDS Security payload protection: the history keeps the protected form, sent
            // and repaired as it is.
            let Some(protected) = eid.and_then(|e| self.protect_payload(e, payload.bytes())) else {
                return Err(WriteError::ProtectionFailed);
            };
            let r = self.add_change(
                w.0,
                kind,
                key_hash,
                Payload::Copy(&protected),
                source_timestamp,
                now,
            );
            self.payload_scratch_back(protected);
            return r.map(SequenceNumber);
        }
        self.add_change(w.0, kind, key_hash, payload, source_timestamp, now)
            .map(SequenceNumber)
    }

    fn add_change(
        &mut self,
        wi: usize,
        kind: ChangeKind,
        key_hash: Option<[u8; 16]>,
        payload: Payload<'_>,
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
        let len = payload.bytes().len();
        if len > w.sizes.max_data {
            // Large samples are never held back by batching.
            w.flush = true;
        }
        let started = w.pushed >= w.last_sn;
        if started {
            w.batch_since = Some(now);
        }
        let source_timestamp = if w.qos.batching.enabled {
            w.batch_timestamp(source_timestamp, len, started)
        } else {
            source_timestamp
        };
        w.unsent_bytes += len;
        w.unsent_samples += 1;
        let payload = match payload {
            Payload::Copy(data) => ChangePayload::Owned(w.history.make_payload(data)),
            Payload::Take(buf) => ChangePayload::Owned(w.history.take_payload(buf)),
            Payload::Shared(s) => ChangePayload::Shared(s),
        };
        w.history.push(CacheChange {
            sn,
            kind,
            key_hash,
            source_timestamp,
            payload,
            removed: false,
            offset: 0,
        });
        w.set_last_sn(sn);
        w.all_acked_reported = false;
        if w.reliable() && w.next_hb.is_none() && w.reliable_proxies > 0 {
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
    /// their changes left the history. A writer of an unkeyed topic has one
    /// instance, whatever the key hash.
    pub fn register_instance(
        &mut self,
        w: WriterId,
        key_hash: [u8; 16],
    ) -> Result<bool, EngineError> {
        let Some(writer) = self.user_writer(w) else {
            return Err(EngineError::UnknownWriter);
        };
        let key = instance_key(writer.guid.entity_id, key_hash);
        Ok(self
            .writers
            .get_mut(w.0)
            .and_then(Option::as_mut)
            .is_some_and(|w| w.history.register(key)))
    }

    /// State of a writer's instance (`None`: unknown to the writer). An unkeyed
    /// writer has one instance, whatever the key hash.
    pub fn writer_instance_state(&self, w: WriterId, key_hash: &[u8; 16]) -> Option<InstanceState> {
        let writer = self.user_writer(w)?;
        let key = instance_key(writer.guid.entity_id, *key_hash);
        writer.history.instance(key.as_ref()).map(|i| i.state)
    }

    /// Whether every reader matched with writer `w` belongs to a participant of vendor
    /// `vendor` (false without matched readers, and for readers of this participant).
    /// The API sends a disposal without its serialized key when only Fast DDS readers
    /// listen: up to 2.9 Fast DDS takes a key-only payload of at most 16 bytes as the
    /// instance handle, encapsulation header included.
    pub fn writer_readers_all_of_vendor(&self, w: WriterId, vendor: [u8; 2]) -> bool {
        let Some(w) = self.user_writer(w) else {
            return false;
        };
        let mut any = false;
        for p in w.proxies.iter() {
            match self.participants.get(&p.guid.prefix) {
                Some(rp) if rp.data.vendor == vendor => any = true,
                _ => return false,
            }
        }
        any
    }

    /// Number of instances a writer knows (registered or with changes in its history).
    pub fn writer_instance_count(&self, w: WriterId) -> usize {
        self.user_writer(w)
            .map_or(0, |w| w.history.instance_total())
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
}

/// A payload for a writer's history: copied from a slice, taken from a buffer, or a
/// shared-memory chunk kept as it is.
enum Payload<'a> {
    Copy(&'a [u8]),
    Take(&'a mut Vec<u8>),
    Shared(Box<dyn SharedPayload>),
}

impl Payload<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Payload::Copy(b) => b,
            Payload::Take(v) => v,
            Payload::Shared(s) => s.bytes(),
        }
    }
}

/// The key a writer's history files a key hash under: none for a writer of an unkeyed
/// topic (entity kind 0x03), which has one instance.
fn instance_key(writer: EntityId, key_hash: [u8; 16]) -> Option<[u8; 16]> {
    (writer.0[3] != EntityId::KIND_WRITER_NO_KEY).then_some(key_hash)
}
