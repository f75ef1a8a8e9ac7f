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
    pub(super) proxies: Vec<WriterProxy>,
    pub(super) samples: ReaderCache,
    pub(super) notify: bool,
    /// Some proxy may have `ack_pending`; false guarantees none has (see
    /// [`Work`]).
    pub(super) ack_work: bool,
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
}

/// Most payload buffers [`Participant::recycle_payload`] keeps.
const RX_POOL_MAX: usize = 1024;

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
        proxies: Vec::new(),
        samples: ReaderCache::new(hash_seed(prefix)),
        notify: false,
        ack_work: false,
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

    /// Deletes a reader (announces a dispose through SEDP).
    pub fn delete_reader(&mut self, r: ReaderId, now: Timestamp) -> Result<(), EngineError> {
        let guid = self.user_reader(r).ok_or(EngineError::UnknownReader)?.guid;
        self.readers[r.0] = None;
        self.announce_dispose(IDX_SEDP_SUB, guid, now);
        self.remove_remote_reader(guid);
        Ok(())
    }

    /// State of an instance as last received by a reader (`None`: never seen).
    pub fn reader_instance_state(&self, r: ReaderId, key_hash: &[u8; 16]) -> Option<InstanceState> {
        self.user_reader(r)?.samples.instance_state(Some(key_hash))
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
    /// order, exactly once).
    // (Inlinable into the runtime's take: the sample is moved once instead
    // of through every call level.)
    #[inline]
    pub fn take_sample(&mut self, r: ReaderId) -> Option<Sample> {
        if r.0 < FIRST_USER {
            return None;
        }
        let reader = self.readers.get_mut(r.0)?.as_mut()?;
        let was_full = reader.room() == 0;
        let s = reader.samples.pop()?;
        if was_full {
            // Space again: ask for what we refused.
            for p in reader.proxies.iter_mut().filter(|p| p.reliable) {
                if p.max_seen >= p.next {
                    p.ack_pending = true;
                    self.work.watch_writer_proxy(&mut reader.ack_work, p);
                }
            }
        }
        Some(s)
    }

    pub(super) fn remove_remote_writer(&mut self, guid: Guid) {
        self.remote_writers.remove(&guid);
        for (ri, r) in self.readers.iter_mut().enumerate() {
            let Some(r) = r.as_mut() else { continue };
            if let Some(i) = r.proxies.iter().position(|p| p.guid == guid) {
                r.proxies.remove(i);
                if r.role == Role::User {
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
            r.samples.push(
                Sample {
                    writer_guid,
                    sequence_number: SequenceNumber(sn),
                    source_timestamp: c.source_timestamp,
                    kind: c.kind,
                    key_hash: c.key_hash,
                    payload: c.payload,
                },
                depth,
            );
            r.notify = true;
            *notify = true;
        }
    }
}
