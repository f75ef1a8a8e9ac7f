//! Local readers and their sample cache: [`LocalReader`], creating and
//! deleting readers, taking samples, recycling payload buffers, delivering
//! what proxies release ([`Participant::deliver`]), and unmatching a
//! removed writer from the readers.

use super::*;

#[derive(Debug)]
pub(super) struct LocalReader {
    pub(super) guid: Guid,
    pub(super) role: Role,
    pub(super) topic_name: String,
    pub(super) type_name: String,
    pub(super) qos: ReaderQos,
    /// Matched writers.
    pub(super) proxies: Proxies<WriterProxy>,
    pub(super) samples: ReaderCache,
    /// Key hashes of changes received without `PID_KEY_HASH` (keyed readers).
    pub(super) key_extractor: Option<KeyExtractor>,
    pub(super) notify: bool,
    /// Some proxy may have `ack_pending`; false guarantees none has (see
    /// [`Work`]).
    pub(super) ack_work: bool,
    /// Where the next scan for pending ACKNACKs starts (the proxy served
    /// last; see `LocalWriter::repair_cursor`).
    pub(super) ack_cursor: usize,
    /// Reads samples by reference in place ([`Participant::set_reader_in_place`]).
    pub(super) in_place: bool,
    /// Samples in `samples` whose payload is a chunk reference.
    pub(super) by_reference: usize,
}

impl LocalReader {
    pub(super) fn room(&self) -> usize {
        match (self.role, self.qos.history) {
            (Role::User, History::KeepAll) => match self.qos.resource_limits.max_samples_bound() {
                Some(max) => max.saturating_sub(self.samples.len()),
                None => usize::MAX,
            },
            _ => usize::MAX,
        }
    }

    /// Whether a DATA_REF of a writer through proxy `p` is kept as a reference: the
    /// reader reads in place and keeps everything (KEEP_ALL, so that only a take removes
    /// the sample), and the writer is reliable (it keeps the chunk until acknowledged).
    pub(super) fn keeps_references(&self, p: &WriterProxy) -> bool {
        self.in_place && p.reliable && self.qos.history == History::KeepAll
    }
}

/// Most payload buffers [`Participant::recycle_payload`] keeps (a reader that fell behind
/// takes thousands of batched samples at once: a smaller pool made each of them allocate
/// and free a buffer, which slowed it further).
const RX_POOL_MAX: usize = 8192;
/// Most bytes of capacity [`Participant::recycle_payload`] keeps in the pool (16 MiB: the
/// buffers of a reader's cache, of its last take and of what arrived meanwhile, for
/// samples up to 64 KiB arriving 50 at a time).
const RX_POOL_BYTES: usize = 16 << 20;
/// Most buffers above 64 KiB kept beside the reassembly spare (`rx_large`): a reader
/// handed a run of large samples before it took any (shared-memory references arrive
/// faster than fragments) reuses them instead of faulting in fresh memory per sample.
const RX_LARGE_MAX: usize = 8;
/// Most bytes of capacity kept in `rx_large`.
const RX_LARGE_BYTES: usize = 64 << 20;

pub(super) fn builtin_reader(
    prefix: GuidPrefix,
    eid: EntityId,
    role: Role,
    topic: &str,
) -> LocalReader {
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
        proxies: Proxies::new(prefix),
        samples: ReaderCache::new(hash_seed(prefix)),
        key_extractor: None,
        notify: false,
        ack_work: false,
        ack_cursor: 0,
        in_place: false,
        by_reference: 0,
    }
}

impl Participant {
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
        self.register_secure_endpoint(guid, &attrs.topic_name, false)?;
        let data = EndpointData {
            guid,
            topic_name: attrs.topic_name.clone(),
            type_name: attrs.type_name.clone(),
            qos: EndpointQos::from(&attrs.qos),
            unicast: Vec::new(),
            multicast: if !attrs.qos.multicast_locators.is_empty() {
                attrs.qos.multicast_locators.clone()
            } else if self.config.multicast_user_data {
                self.config.default_multicast_locators.clone()
            } else {
                Vec::new()
            },
        };
        self.readers.push(Some(LocalReader {
            guid,
            role: Role::User,
            topic_name: attrs.topic_name,
            type_name: attrs.type_name,
            qos: attrs.qos,
            proxies: Proxies::new(self.config.guid_prefix),
            samples: ReaderCache::new(hash_seed(self.config.guid_prefix)),
            key_extractor: None,
            notify: false,
            ack_work: false,
            ack_cursor: 0,
            in_place: false,
            by_reference: 0,
        }));
        let id = ReaderId(self.readers.len() - 1);
        self.announce_endpoint(self.sedp_writer_for(&data.topic_name, false), &data, now);
        let writers: Vec<EndpointData> = self.remote_writers.values().cloned().collect();
        for w in &writers {
            self.match_reader_writer(id.0, w);
        }
        self.on_remote_reader(data);
        Ok(id)
    }

    /// Deletes a reader (announces a dispose through SEDP).
    pub fn delete_reader(&mut self, r: ReaderId, now: Timestamp) -> Result<(), EngineError> {
        let lr = self.user_reader(r).ok_or(EngineError::UnknownReader)?;
        let (guid, sedp) = (lr.guid, self.sedp_writer_for(&lr.topic_name, false));
        self.readers[r.0] = None;
        self.unregister_secure_endpoint(guid);
        self.announce_dispose(sedp, guid, now);
        self.remove_remote_reader(guid);
        Ok(())
    }

    /// State of an instance as last received by a reader (`None`: never seen).
    pub fn reader_instance_state(&self, r: ReaderId, key_hash: &[u8; 16]) -> Option<InstanceState> {
        self.user_reader(r)?.samples.instance_state(Some(key_hash))
    }

    /// Gives the payload buffer of a taken [`Sample`] back: received samples
    /// reuse it (up to 8,192 buffers of at most 64 KiB, 16 MiB in all, are kept, and up to
    /// 8 larger ones, 64 MiB in all, of at most the largest sample reassembled, for
    /// reassembled samples and those read from shared memory), so a reader that recycles what it takes receives
    /// without allocating per sample.
    pub fn recycle_payload(&mut self, mut payload: Vec<u8>) {
        let cap = payload.capacity();
        if cap > 1 << 16 {
            if cap > self.config.reassembly.max_sample_size as usize {
                return;
            }
            payload.clear();
            // The largest as the reassembly spare; the one it replaces, or this one, is kept
            // among the large spares if there is room.
            let spare = &mut self.rx_spares.payload;
            let other = match spare {
                Some(b) if b.capacity() >= cap => payload,
                _ => match spare.replace(payload) {
                    Some(b) => b,
                    None => return,
                },
            };
            let cap = other.capacity();
            if self.rx_large.len() < RX_LARGE_MAX && self.rx_large_bytes + cap <= RX_LARGE_BYTES {
                self.rx_large_bytes += cap;
                self.rx_large.push(other);
            }
        } else if cap > 0
            && self.rx_pool.len() < RX_POOL_MAX
            && self.rx_pool_bytes + cap <= RX_POOL_BYTES
        {
            payload.clear();
            self.rx_pool_bytes += cap;
            self.rx_pool.push(payload);
        }
    }

    /// Next sample for this reader, in delivery order (reliable: per-writer SN
    /// order, exactly once). The reader's cache is its only history: what is
    /// taken here leaves it. [`Participant::take_samples`] takes several at
    /// once, with their instance and sample states.
    pub fn take_sample(&mut self, r: ReaderId) -> Option<Sample> {
        let reader = Self::user_reader_in(&mut self.readers, r)?;
        let was_full = reader.room() == 0;
        let s = reader.samples.pop()?;
        reader.by_reference -= usize::from(s.sample.by_reference);
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
        let Some(reader) = Self::user_reader_in(&mut self.readers, r) else {
            return TakeOutcome {
                left: 0,
                transmit_due: false,
            };
        };
        let was_full = reader.room() == 0;
        let mut n = 0;
        while n < max {
            let Some(s) = reader.samples.pop() else {
                break;
            };
            reader.by_reference -= usize::from(s.sample.by_reference);
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

    /// The live user reader `r` among `readers` (a borrow of the reader table
    /// only, so that other fields stay usable beside it).
    #[inline]
    fn user_reader_in(
        readers: &mut [Option<LocalReader>],
        r: ReaderId,
    ) -> Option<&mut LocalReader> {
        readers
            .get_mut(r.0)?
            .as_mut()
            .filter(|r| r.role == Role::User)
    }

    /// A full KEEP_ALL reader has room again: ask for what it refused.
    #[inline(never)]
    fn room_again(work: &mut Work, reader: &mut LocalReader) {
        for i in 0..reader.proxies.len() {
            let p = &mut reader.proxies[i];
            if p.reliable && p.max_seen >= p.next {
                p.ack_pending = true;
                work.watch_writer_proxy(&mut reader.ack_work, &mut reader.proxies, i);
            }
        }
    }

    /// Sets whether reader `r` reads samples by reference in place: a DATA_REF (a sample in
    /// another participant's shared memory) of a reliable writer is then delivered to a
    /// KEEP_ALL reader as a [`Sample`] whose payload is the chunk reference
    /// ([`Sample::by_reference`]) instead of a copy of the bytes, and the sample stays
    /// unacknowledged (the writer keeps the chunk unchanged) until the runtime calls
    /// [`Participant::release_references`] for it. A runtime that takes such samples in
    /// another way first turns them into bytes with [`Participant::resolve_references`].
    pub fn set_reader_in_place(&mut self, r: ReaderId, on: bool) {
        if let Some(reader) = Self::user_reader_in(&mut self.readers, r) {
            reader.in_place = on;
        }
    }

    /// Releases samples of reader `r` taken by reference (writer GUID and SN each): their
    /// writers may now reuse the chunks. Returns whether an ACKNACK became due (send it:
    /// `poll_transmit`). Unknown writers and SNs are ignored.
    pub fn release_references(
        &mut self,
        r: ReaderId,
        taken: impl IntoIterator<Item = (Guid, SequenceNumber)>,
    ) -> bool {
        let Some(reader) = Self::user_reader_in(&mut self.readers, r) else {
            return false;
        };
        let mut due = false;
        for (writer, sn) in taken {
            let Some(pi) = reader.proxies.position(writer) else {
                continue;
            };
            if reader.proxies[pi].release_held(sn.0) {
                reader.proxies[pi].ack_pending = true;
                self.work
                    .watch_writer_proxy(&mut reader.ack_work, &mut reader.proxies, pi);
                due = true;
            }
        }
        due
    }

    /// Turns the by-reference samples in reader `r`'s cache into bytes: `read(reference,
    /// out)` fills `out` (empty on entry) with the bytes, or returns false (the chunk was
    /// reused or its pool is gone: the sample is dropped and counted lost,
    /// [`Event::SampleLost`]). The samples are then released (see
    /// [`Participant::release_references`]). Returns whether an ACKNACK or event became due
    /// (send and dispatch them). Costs nothing when the cache holds no reference.
    pub fn resolve_references(
        &mut self,
        r: ReaderId,
        read: impl FnMut(&[u8], &mut Vec<u8>) -> bool,
    ) -> bool {
        let Some(reader) = Self::user_reader_in(&mut self.readers, r) else {
            return false;
        };
        if reader.by_reference == 0 {
            return false;
        }
        let mut released = Vec::new();
        let lost = resolve_cached(
            reader,
            None,
            &mut self.rx_pool,
            &mut self.rx_pool_bytes,
            read,
            &mut released,
        );
        self.stats.unreadable_data_refs += lost as u64;
        if lost > 0 {
            self.events.push_back(Event::SampleLost {
                reader: r,
                count: u32::try_from(lost).unwrap_or(u32::MAX),
            });
        }
        self.release_references(r, released) || lost > 0
    }

    /// Copies the by-reference samples of writer `writer` in reader `ri`'s cache out of
    /// their chunks, with the participant's chunk reader: the writer (or its participant)
    /// is going away, and its chunks are no longer kept for this reader.
    pub(super) fn resolve_writer_references(&mut self, ri: usize, writer: Guid) {
        let Some(reader) = self.readers.get_mut(ri).and_then(Option::as_mut) else {
            return;
        };
        if reader.by_reference == 0 {
            return;
        }
        let max = self.config.reassembly.max_sample_size as usize;
        let chunk_reader = &mut self.chunk_reader;
        let mut released = Vec::new();
        let lost = resolve_cached(
            reader,
            Some(writer),
            &mut self.rx_pool,
            &mut self.rx_pool_bytes,
            |reference, out| {
                chunk_reader
                    .as_mut()
                    .is_some_and(|c| c.read(reference, max, out))
            },
            &mut released,
        );
        self.stats.unreadable_data_refs += lost as u64;
        if lost > 0 {
            self.events.push_back(Event::SampleLost {
                reader: ReaderId(ri),
                count: u32::try_from(lost).unwrap_or(u32::MAX),
            });
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
        Self::user_reader_in(&mut self.readers, r)
            .map_or(0, |reader| reader.samples.read_each(max, f))
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
        Self::user_reader_in(&mut self.readers, r)
            .ok_or(EngineError::UnknownReader)?
            .key_extractor = Some(k);
        Ok(())
    }

    pub(super) fn remove_remote_writer(&mut self, guid: Guid) {
        if self.remote_writers.remove(&guid).is_some() {
            self.release_remote_endpoint(guid.prefix);
        }
        self.secure_endpoint_gone(guid);
        for ri in 0..self.readers.len() {
            // Samples it sent by reference and the reader holds: copied out now.
            self.resolve_writer_references(ri, guid);
            let Some(r) = self.readers[ri].as_mut() else {
                continue;
            };
            if let Some(i) = r.proxies.position(guid) {
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

    /// Hands what a proxy operation delivered to the reader (user readers:
    /// its cache, setting `notify`; builtin readers: `builtin`).
    // (Forced inline, with the work out of line: left to itself the compiler
    // merged both into one call made for every HEARTBEAT too.)
    #[inline(always)]
    pub(super) fn deliver(
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
            if c.by_reference {
                // Held (not acknowledged) until the runtime releases it.
                if let Some(pi) = r.proxies.position(writer_guid) {
                    r.proxies[pi].held.push_back(sn);
                }
                r.by_reference += 1;
            }
            let key_hash = match (c.key_hash, &r.key_extractor) {
                (None, Some(k)) if !c.payload.is_empty() && !c.by_reference => {
                    (k.0)(c.kind, &c.payload)
                }
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
                    by_reference: c.by_reference,
                },
                depth,
            );
            r.notify = true;
            *notify = true;
        }
    }
}

/// Turns the by-reference samples of `reader`'s cache (of `writer` only, when given) into
/// bytes with `read`, from buffers of `pool`; drops those `read` refuses. Pushes each
/// resolved sample's writer and SN to `released`; returns how many were dropped.
fn resolve_cached(
    reader: &mut LocalReader,
    writer: Option<Guid>,
    pool: &mut Vec<Vec<u8>>,
    pool_bytes: &mut usize,
    mut read: impl FnMut(&[u8], &mut Vec<u8>) -> bool,
    released: &mut Vec<(Guid, SequenceNumber)>,
) -> usize {
    let mut resolved = 0;
    let dropped = reader.samples.retain_mut(|s| {
        if !s.by_reference || writer.is_some_and(|w| w != s.writer_guid) {
            return true;
        }
        resolved += 1;
        released.push((s.writer_guid, s.sequence_number));
        let mut buf = match pool.pop() {
            Some(b) => {
                *pool_bytes -= b.capacity();
                b
            }
            None => Vec::new(),
        };
        buf.clear();
        let ok = read(&s.payload, &mut buf);
        std::mem::swap(&mut s.payload, &mut buf);
        s.by_reference = false;
        ok
    });
    reader.by_reference -= resolved;
    dropped
}
