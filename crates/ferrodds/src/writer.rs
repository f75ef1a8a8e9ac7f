//! [`DataWriter`]: typed writer. Serializes in the caller's thread and sends from it.

use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrodds_cdr::TopicType;
#[cfg(feature = "shared-memory")]
use ferrodds_rtps::SharedWrite;
use ferrodds_rtps::{
    ChangeKind, InstanceState as EngineInstanceState, TakingWrite, WriteError, WriterId,
};
use ferrodds_rtps::{Guid, Time};

use crate::entity::WriterShared;
use crate::error::{DdsError, DdsResult};
use crate::loan::{LoanBuf, SampleLoan};
use crate::qos::{DataWriterQos, PublishMode};
use crate::runtime::{Inner, Pending, TxScratch};
use crate::sample::InstanceHandle;
use crate::status::{DataWriterListener, OfferedIncompatibleQosStatus, PublicationMatchedStatus};
use crate::sync::{lock, Deadline};
use crate::typesupport;
use crate::waitset::StatusCondition;

/// Per-writer scratch buffers (reused: the steady-state write path does not allocate here).
struct Scratch {
    payload: Vec<u8>,
    key: Vec<u8>,
    pending: Vec<Pending>,
    tx: TxScratch,
}

/// A typed DataWriter.
///
/// `write` serializes into a per-writer buffer, hands the change to the engine and sends the
/// resulting datagrams from the calling thread. With KEEP_ALL and a full history of
/// unacknowledged samples it blocks up to `reliability.max_blocking_time`, then fails with
/// [`DdsError::Timeout`]. Dropping the writer deletes it (remote readers see it unmatched).
pub struct DataWriter<T> {
    inner: Arc<Inner>,
    id: WriterId,
    guid: Guid,
    shared: Arc<WriterShared>,
    scratch: Mutex<Scratch>,
    qos: DataWriterQos,
    topic_name: String,
    _t: PhantomData<fn(&T)>,
}

impl<T: TopicType> DataWriter<T> {
    pub(crate) fn new(
        inner: Arc<Inner>,
        id: WriterId,
        guid: Guid,
        shared: Arc<WriterShared>,
        qos: DataWriterQos,
        topic_name: String,
    ) -> Self {
        if let PublishMode::Asynchronous(fc) = qos.publish_mode {
            inner.add_async_writer(id, fc);
        }
        Self {
            inner,
            id,
            guid,
            shared,
            scratch: Mutex::new(Scratch {
                payload: Vec::with_capacity(256),
                key: Vec::new(),
                pending: Vec::with_capacity(8),
                tx: TxScratch::default(),
            }),
            qos,
            topic_name,
            _t: PhantomData,
        }
    }

    /// Writes a sample, stamped with the current wall-clock time (the participant's
    /// monotonic clock anchored to the wall clock when the participant was created).
    pub fn write(&self, sample: &T) -> DdsResult<()> {
        self.write_change(sample, ChangeKind::Alive, None, false)
    }

    /// Writes a sample with an explicit source timestamp.
    pub fn write_with_timestamp(&self, sample: &T, timestamp: Time) -> DdsResult<()> {
        self.write_change(sample, ChangeKind::Alive, Some(timestamp), false)
    }

    /// Writes a sample and sends it at once together with anything batching
    /// holds (e.g. a latency ping on a batching writer).
    pub fn write_flush(&self, sample: &T) -> DdsResult<()> {
        self.write_change(sample, ChangeKind::Alive, None, true)
    }

    /// Sends every sample batching holds now.
    pub fn flush(&self) -> DdsResult<()> {
        if self.inner.is_shut_down() {
            return Err(DdsError::AlreadyDeleted);
        }
        let mut pending = Vec::new();
        self.inner
            .with_engine(&mut pending, |st, now| st.engine.flush(self.id, now))
            .map_err(|_| DdsError::AlreadyDeleted)?;
        if matches!(self.qos.publish_mode, PublishMode::Asynchronous(_)) {
            self.inner.kick_publisher();
        }
        Ok(())
    }

    /// Payload bytes written but not sent yet (held by batching or waiting
    /// for the flow controller of an asynchronous writer).
    pub fn pending_bytes(&self) -> usize {
        self.inner.query(|st| st.engine.pending_bytes(self.id))
    }

    /// Registers the instance of `sample` with the writer (no traffic is generated) and
    /// returns its handle: the key hash by which the writer's history indexes the instance,
    /// which is also the `instance_handle` readers report for it. Registering an instance
    /// again is harmless; registering an unregistered one registers it again. Unkeyed
    /// types have one instance: [`InstanceHandle::NIL`].
    pub fn register_instance(&self, sample: &T) -> DdsResult<InstanceHandle> {
        if self.inner.is_shut_down() {
            return Err(DdsError::AlreadyDeleted);
        }
        if !T::IS_KEYED {
            return Ok(InstanceHandle::NIL);
        }
        // The scratch lock orders this with the writer's other operations.
        let mut guard = lock(&self.scratch);
        let Scratch { key, pending, .. } = &mut *guard;
        let Some(key_hash) = typesupport::instance_key_with(sample, key)? else {
            return Ok(InstanceHandle::NIL);
        };
        self.inner
            .with_engine(pending, |st, _| {
                st.engine.register_instance(self.id, key_hash)
            })
            .map_err(|_| DdsError::AlreadyDeleted)?;
        Ok(InstanceHandle(key_hash))
    }

    /// The handle of the instance of `sample` if the writer knows it (registered, written,
    /// or unregistered with the unregistration still in its history), else
    /// [`InstanceHandle::NIL`] (always for unkeyed types).
    pub fn lookup_instance(&self, sample: &T) -> DdsResult<InstanceHandle> {
        if self.inner.is_shut_down() {
            return Err(DdsError::AlreadyDeleted);
        }
        if !T::IS_KEYED {
            return Ok(InstanceHandle::NIL);
        }
        let mut guard = lock(&self.scratch);
        let Some(key_hash) = typesupport::instance_key_with(sample, &mut guard.key)? else {
            return Ok(InstanceHandle::NIL);
        };
        let known = self.inner.query(|st| {
            st.engine
                .writer_instance_state(self.id, &key_hash)
                .is_some()
        });
        Ok(if known {
            InstanceHandle(key_hash)
        } else {
            InstanceHandle::NIL
        })
    }

    /// Unregisters the instance of `sample` (readers see `NotAliveNoWriters`, or keep
    /// `NotAliveDisposed`). Fails with [`DdsError::PreconditionNotMet`], sending nothing,
    /// when the writer has not registered (or written) the instance or already
    /// unregistered it. Stamped like [`DataWriter::write`].
    pub fn unregister_instance(&self, sample: &T) -> DdsResult<()> {
        self.write_change(sample, ChangeKind::NotAliveUnregistered, None, false)
    }

    /// Disposes the instance of `sample` (readers see `NotAliveDisposed`). Stamped like
    /// [`DataWriter::write`], so a step of the system clock cannot stamp a disposal before
    /// the samples written ahead of it.
    pub fn dispose(&self, sample: &T) -> DdsResult<()> {
        self.write_change(sample, ChangeKind::NotAliveDisposed, None, false)
    }

    /// `ts`: the source timestamp, `None` = now.
    fn write_change(
        &self,
        sample: &T,
        kind: ChangeKind,
        ts: Option<Time>,
        flush: bool,
    ) -> DdsResult<()> {
        if self.inner.is_shut_down() {
            return Err(DdsError::AlreadyDeleted);
        }
        if kind != ChangeKind::Alive && !T::IS_KEYED {
            return Err(DdsError::PreconditionNotMet {
                what: "dispose/unregister need a keyed type",
            });
        }
        let mut guard = lock(&self.scratch);
        let Scratch {
            payload,
            key,
            pending,
            tx,
        } = &mut *guard;
        if kind == ChangeKind::Alive {
            typesupport::serialize(sample, payload)?;
        } else if key_hash_is_the_key::<T>()
            && self.inner.query(|st| {
                st.engine
                    .writer_readers_all_of_vendor(self.id, ferrodds_wire::VendorId::FAST_DDS.0)
            })
        {
            // Only Fast DDS readers listen and the key hash carries the key itself: the
            // disposal or unregistration goes with the key hash alone (as Connext sends them
            // by default). Fast DDS up to 2.9 takes a key-only payload of at most 16 bytes as
            // the instance handle, encapsulation header included, so with a serialized key it
            // saw every instance as the same one. Every other reader gets the serialized key,
            // which Cyclone DDS's Python binding needs.
            payload.clear();
        } else {
            typesupport::serialize_key(sample, payload)?;
        }
        let key_hash = if T::IS_KEYED {
            typesupport::instance_key_with(sample, key)?
        } else {
            None
        };
        if kind == ChangeKind::NotAliveUnregistered {
            let registered = key_hash.is_some_and(|k| {
                self.inner.query(|st| {
                    st.engine
                        .writer_instance_state(self.id, &k)
                        .is_some_and(|s| s != EngineInstanceState::NotAliveNoWriters)
                })
            });
            if !registered {
                return Err(DdsError::PreconditionNotMet {
                    what: "unregister_instance: the instance is not registered",
                });
            }
        }
        // The clock and the writer's status lock are only needed once the history
        // is full: `gen` is the resources generation read before the last attempt.
        let mut deadline = None;
        let mut gen = None;
        loop {
            let len = payload.len();
            // A sample joining a batch that shares one source timestamp needs neither the
            // clock nor a timestamp of its own (the clock read is a tenth of a batched
            // write's cost).
            let b = &self.qos.batching;
            let lazy = !flush && b.enabled && b.source_timestamp_resolution == Duration::MAX;
            let res = self.inner.with_engine_tx(pending, tx, lazy, |st, clock| {
                let joins = if lazy {
                    st.engine.batch_join_timestamp(self.id, len)
                } else {
                    None
                };
                let (now, stamp) = match joins {
                    Some(batch) => (clock.last(), batch),
                    None => {
                        let now = clock.now();
                        (now, self.inner.wall_time_at(now))
                    }
                };
                // A large sample for readers on this host only goes into shared memory,
                // and they copy it out of there themselves.
                #[cfg(feature = "shared-memory")]
                if kind == ChangeKind::Alive && len >= crate::chunks::SHARED_PAYLOAD_MIN {
                    let shared = self
                        .inner
                        .pool
                        .as_ref()
                        .filter(|_| {
                            st.engine.writer_sends_by_reference(self.id)
                                && !st.engine.writer_history_full(self.id)
                        })
                        .and_then(|pool| {
                            crate::chunks::shared_payload(
                                pool,
                                &mut st.engine,
                                self.id,
                                &mut st.spare_chunks,
                                payload,
                            )
                        });
                    if let Some(shared) = shared {
                        let change = SharedWrite {
                            kind,
                            key_hash,
                            payload: shared,
                            source_timestamp: Some(ts.unwrap_or(stamp)),
                        };
                        let res = st.engine.write_shared(self.id, change, now);
                        if flush && res.is_ok() {
                            let _ = st.engine.flush(self.id, now);
                        }
                        return (res, false);
                    }
                }
                // The history takes the serialized buffer (no copy) and leaves a recycled
                // one in `payload` for the next write.
                let req = TakingWrite {
                    kind,
                    key_hash,
                    payload: &mut *payload,
                    source_timestamp: Some(ts.unwrap_or(stamp)),
                };
                if flush {
                    return (st.engine.write_taking_flush(self.id, req, now), false);
                }
                if joins.is_some() {
                    let res = st.engine.write_taking(self.id, req, now);
                    let quiet = res.is_ok();
                    return (res, quiet);
                }
                // A sample added to a batch already started (and not filling it)
                // sends nothing and moves no timeout: nothing to drain.
                let batching = &self.qos.batching;
                let before = if batching.enabled && batching.max_samples == 0 {
                    st.engine.pending_bytes(self.id)
                } else {
                    0
                };
                let res = st.engine.write_taking(self.id, req, now);
                let quiet = before > 0
                    && res.is_ok()
                    && st.engine.pending_bytes(self.id) + len < batching.max_bytes;
                (res, quiet)
            });
            match res {
                Ok(_) => {
                    if matches!(self.qos.publish_mode, PublishMode::Asynchronous(_)) {
                        self.inner.kick_publisher();
                    }
                    return Ok(());
                }
                Err(WriteError::HistoryFull) => self.wait_for_room(&mut deadline, &mut gen)?,
                Err(WriteError::UnknownWriter) => return Err(DdsError::AlreadyDeleted),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// After a write refused for a full KEEP_ALL history: fails once the writer is deleted or
    /// `max_blocking_time` (from the first refusal, `deadline`) has passed; otherwise waits
    /// for room (not on the first refusal: it reads the resources generation `gen` and lets
    /// the caller try again, so space freed between the attempt and this read is not missed).
    fn wait_for_room(
        &self,
        deadline: &mut Option<Deadline>,
        gen: &mut Option<u64>,
    ) -> DdsResult<()> {
        if self.inner.is_shut_down() {
            return Err(DdsError::AlreadyDeleted);
        }
        let deadline = *deadline
            .get_or_insert_with(|| Deadline::after(self.qos.reliability.max_blocking_time));
        let Some(left) = deadline.remaining() else {
            return Err(DdsError::Timeout);
        };
        if let Some(g) = *gen {
            // Re-check at least every 10 ms in case a wake-up is missed.
            self.shared
                .wait_resources(g, left.min(Duration::from_millis(10)));
        }
        *gen = Some(self.shared.resources_gen());
        Ok(())
    }

    /// Blocks until every matched reliable reader acknowledged everything written so far, or
    /// fails with [`DdsError::Timeout`].
    pub fn wait_for_acknowledgments(&self, timeout: Duration) -> DdsResult<()> {
        let deadline = Deadline::after(timeout);
        loop {
            if self.inner.is_shut_down() {
                return Err(DdsError::AlreadyDeleted);
            }
            let gen = self.shared.acked_gen();
            if self
                .inner
                .query(|st| st.engine.is_acknowledged_by_all(self.id))
            {
                return Ok(());
            }
            let Some(left) = deadline.remaining() else {
                return Err(DdsError::Timeout);
            };
            self.shared
                .wait_acked(gen, left.min(Duration::from_millis(20)));
        }
    }

    /// Blocks until at least `n` readers are matched; `false` on timeout. (A convenience
    /// beyond the DDS API, used by tests and tools.)
    pub fn wait_for_matched(&self, n: u32, timeout: Duration) -> bool {
        self.shared.wait_for_matched(n, timeout)
    }

    /// Matched readers now.
    pub fn matched_count(&self) -> u32 {
        self.shared.current_matched()
    }

    /// The `PUBLICATION_MATCHED` status (reading resets the change counters).
    pub fn publication_matched_status(&self) -> PublicationMatchedStatus {
        self.shared.publication_matched_status()
    }

    /// The `OFFERED_INCOMPATIBLE_QOS` status (reading resets the change counter).
    pub fn offered_incompatible_qos_status(&self) -> OfferedIncompatibleQosStatus {
        self.shared.offered_incompatible_qos_status()
    }

    /// Installs (or removes) the listener.
    pub fn set_listener(&self, listener: Option<Arc<dyn DataWriterListener>>) {
        self.shared.set_listener(listener);
    }

    /// A status condition for [`crate::WaitSet`]s (all statuses enabled; narrow it with
    /// [`StatusCondition::set_enabled_statuses`]).
    pub fn status_condition(&self) -> StatusCondition {
        StatusCondition::for_writer(Arc::clone(&self.shared))
    }

    /// This writer's GUID.
    pub fn guid(&self) -> Guid {
        self.guid
    }

    /// The QoS the writer was created with.
    pub fn qos(&self) -> &DataWriterQos {
        &self.qos
    }

    /// The topic name.
    pub fn topic_name(&self) -> &str {
        &self.topic_name
    }
}

impl<T: crate::loan::FlatType> DataWriter<T> {
    /// Lends a sample to write in place, in its serialized form: a buffer for a body of
    /// `body_len` bytes (XCDR1 little-endian, the encoding of the value without its
    /// encapsulation header, which the loan writes). Fill [`SampleLoan::body_mut`] and hand
    /// it to [`write_loan`](Self::write_loan).
    ///
    /// With shared memory on, every matched reader on this host reached through it, and
    /// samples of at least 16 KiB, the buffer is a chunk of the participant's shared-memory
    /// loan pool and the write copies nothing (readers copy the bytes out); otherwise it is
    /// a buffer of the writer's that the history takes (no copy either). Unkeyed types only
    /// ([`DdsError::Unsupported`] for a keyed one).
    pub fn loan_sample(&self, body_len: usize) -> DdsResult<SampleLoan<T>> {
        if self.inner.is_shut_down() {
            return Err(DdsError::AlreadyDeleted);
        }
        if T::IS_KEYED {
            return Err(DdsError::Unsupported {
                what: "sample loans of a keyed type (the loan carries no key hash)",
            });
        }
        let total = crate::loan::padded(body_len);
        #[cfg(feature = "shared-memory")]
        if total >= crate::chunks::SHARED_PAYLOAD_MIN {
            if let Some(pool) = self.inner.pool.as_ref() {
                // (A full history does not matter here: `write_loan` waits for room with
                // the chunk kept.)
                let by_ref = self
                    .inner
                    .query(|st| st.engine.writer_sends_by_reference(self.id));
                if let Some(mut chunk) = by_ref.then(|| pool.alloc(total)).flatten() {
                    crate::loan::frame::<T>(chunk.as_mut_slice(), body_len);
                    return Ok(self.loan(LoanBuf::Shared(chunk), body_len));
                }
            }
        }
        let mut buf = std::mem::take(&mut lock(&self.scratch).payload);
        buf.clear();
        buf.resize(total, 0);
        crate::loan::frame::<T>(&mut buf, body_len);
        Ok(self.loan(LoanBuf::Heap(buf), body_len))
    }

    fn loan(&self, buf: LoanBuf, body_len: usize) -> SampleLoan<T> {
        SampleLoan {
            buf,
            body_len,
            writer: self.guid,
            _t: PhantomData,
        }
    }

    /// Writes a sample lent by [`loan_sample`](Self::loan_sample) of this writer, stamped
    /// with the current time. The body must hold exactly one value
    /// ([`FlatType::validate_body`](crate::FlatType::validate_body); otherwise
    /// [`DdsError::BadParameter`] and nothing is sent). Blocks on a full KEEP_ALL history as
    /// [`write`](Self::write) does.
    pub fn write_loan(&self, loan: SampleLoan<T>) -> DdsResult<()> {
        if loan.writer != self.guid {
            return Err(DdsError::BadParameter {
                what: "the loan belongs to another writer",
            });
        }
        let body = &loan.payload()[4..4 + loan.body_len];
        match T::validate_body(body) {
            Ok(n) if n == loan.body_len => {}
            Ok(_) => {
                return Err(DdsError::BadParameter {
                    what: "the loan's body holds bytes after the value",
                })
            }
            Err(_) => {
                return Err(DdsError::BadParameter {
                    what: "the loan's body is not a serialized value of the topic type",
                })
            }
        }
        if self.inner.is_shut_down() {
            return Err(DdsError::AlreadyDeleted);
        }
        let mut guard = lock(&self.scratch);
        let Scratch {
            payload,
            pending,
            tx,
            ..
        } = &mut *guard;
        let mut buf = Some(loan.buf);
        let mut deadline = None;
        let mut gen = None;
        loop {
            let res = self.inner.with_engine_tx(pending, tx, false, |st, clock| {
                let now = clock.now();
                let stamp = Some(self.inner.wall_time_at(now));
                // A full history: try again later with the loan kept.
                if st.engine.writer_history_full_wait(self.id) {
                    return (Err(WriteError::HistoryFull), false);
                }
                match buf.take() {
                    #[cfg(feature = "shared-memory")]
                    Some(LoanBuf::Shared(chunk)) => {
                        let shared = crate::chunks::published(
                            chunk,
                            &mut st.engine,
                            self.id,
                            &mut st.spare_chunks,
                        );
                        let change = SharedWrite {
                            kind: ChangeKind::Alive,
                            key_hash: None,
                            payload: shared,
                            source_timestamp: stamp,
                        };
                        (st.engine.write_shared(self.id, change, now), false)
                    }
                    Some(LoanBuf::Heap(mut v)) => {
                        let req = TakingWrite {
                            kind: ChangeKind::Alive,
                            key_hash: None,
                            payload: &mut v,
                            source_timestamp: stamp,
                        };
                        let res = st.engine.write_taking(self.id, req, now);
                        // The recycled buffer the history left (or the loan's, on an
                        // error) serves the next write.
                        *payload = v;
                        (res, false)
                    }
                    None => (Err(WriteError::UnknownWriter), false),
                }
            });
            match res {
                Ok(_) => {
                    if matches!(self.qos.publish_mode, PublishMode::Asynchronous(_)) {
                        self.inner.kick_publisher();
                    }
                    return Ok(());
                }
                Err(WriteError::HistoryFull) if buf.is_some() => {
                    self.wait_for_room(&mut deadline, &mut gen)?
                }
                Err(WriteError::UnknownWriter) => return Err(DdsError::AlreadyDeleted),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl<T> Drop for DataWriter<T> {
    fn drop(&mut self) {
        if self.inner.is_shut_down() {
            return;
        }
        let id = self.id;
        let mut pending = Vec::new();
        self.inner.with_engine(&mut pending, |st, now| {
            st.writers.remove(&id);
            if let Err(e) = st.engine.delete_writer(id, now) {
                tracing::debug!(error = %e, "delete_writer failed");
            }
        });
    }
}

impl<T> std::fmt::Debug for DataWriter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataWriter")
            .field("guid", &self.guid)
            .field("topic", &self.topic_name)
            .finish_non_exhaustive()
    }
}

/// Whether `T`'s key hash is its key serialized (at most 16 bytes in both XCDR versions),
/// not an MD5 digest of it: then a reader recovers the key from the hash alone.
fn key_hash_is_the_key<T: TopicType>() -> bool {
    T::KEY_MAX_SIZE_XCDR1.is_some_and(|m| m <= 16) && T::KEY_MAX_SIZE_XCDR2.is_some_and(|m| m <= 16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, DomainParticipant, PublisherQos, TopicQos};
    use ferrodds_cdr::types::{TestData, TestDataKeyed};

    fn keyed(instance: u32) -> TestDataKeyed {
        TestDataKeyed {
            key: instance.to_le_bytes(),
            ..TestDataKeyed::default()
        }
    }

    fn engine_state(
        w: &DataWriter<TestDataKeyed>,
        h: InstanceHandle,
    ) -> Option<EngineInstanceState> {
        w.inner
            .query(|st| st.engine.writer_instance_state(w.id, &h.0))
    }

    fn engine_count(w: &DataWriter<TestDataKeyed>) -> usize {
        w.inner.query(|st| st.engine.writer_instance_count(w.id))
    }

    #[test]
    fn register_dispose_unregister_track_the_engine_instance() {
        // No peers, nothing matches; TRANSIENT_LOCAL KEEP_ALL keeps every change in the
        // history (a volatile writer without readers drops them at once, and with them an
        // unregistered instance).
        let p = DomainParticipant::with_config(213, Config::loopback().initial_peers(Vec::new()))
            .unwrap();
        let t = p
            .create_topic::<TestDataKeyed>("reg", TopicQos::default())
            .unwrap();
        let publ = p.create_publisher(PublisherQos::default()).unwrap();
        let w = publ
            .create_datawriter(&t, DataWriterQos::default().keep_all().transient_local())
            .unwrap();

        assert_eq!(w.lookup_instance(&keyed(1)).unwrap(), InstanceHandle::NIL);
        let h1 = w.register_instance(&keyed(1)).unwrap();
        assert_ne!(h1, InstanceHandle::NIL);
        assert_eq!(
            h1.0,
            typesupport::instance_key(&keyed(1)).unwrap().unwrap(),
            "the handle is the key hash writes use"
        );
        assert_eq!(engine_state(&w, h1), Some(EngineInstanceState::Alive));
        assert_eq!(engine_count(&w), 1);
        assert_eq!(w.lookup_instance(&keyed(1)).unwrap(), h1);
        // Registering again changes nothing.
        assert_eq!(w.register_instance(&keyed(1)).unwrap(), h1);
        assert_eq!(engine_count(&w), 1);

        // Unregistering an instance never registered fails and leaves no trace.
        assert!(matches!(
            w.unregister_instance(&keyed(2)),
            Err(DdsError::PreconditionNotMet { .. })
        ));
        assert_eq!(w.lookup_instance(&keyed(2)).unwrap(), InstanceHandle::NIL);
        assert_eq!(engine_count(&w), 1);

        // Registered without a write: unregistering works once.
        w.unregister_instance(&keyed(1)).unwrap();
        assert_eq!(
            engine_state(&w, h1),
            Some(EngineInstanceState::NotAliveNoWriters)
        );
        assert!(matches!(
            w.unregister_instance(&keyed(1)),
            Err(DdsError::PreconditionNotMet { .. })
        ));
        // Registering it again makes it alive (and unregistrable) again.
        assert_eq!(w.register_instance(&keyed(1)).unwrap(), h1);
        assert_eq!(engine_state(&w, h1), Some(EngineInstanceState::Alive));
        w.unregister_instance(&keyed(1)).unwrap();
        assert_eq!(
            engine_state(&w, h1),
            Some(EngineInstanceState::NotAliveNoWriters)
        );

        // A written instance is registered implicitly; dispose keeps it registered.
        w.write(&keyed(3)).unwrap();
        let h3 = w.lookup_instance(&keyed(3)).unwrap();
        assert_eq!(engine_state(&w, h3), Some(EngineInstanceState::Alive));
        w.dispose(&keyed(3)).unwrap();
        assert_eq!(
            engine_state(&w, h3),
            Some(EngineInstanceState::NotAliveDisposed)
        );
        w.unregister_instance(&keyed(3)).unwrap();
        assert_eq!(
            engine_state(&w, h3),
            Some(EngineInstanceState::NotAliveNoWriters)
        );
        assert_eq!(engine_count(&w), 2);
    }

    #[test]
    fn unkeyed_instances_are_nil() {
        let p = DomainParticipant::with_config(214, Config::loopback().initial_peers(Vec::new()))
            .unwrap();
        let t = p
            .create_topic::<TestData>("reg_unkeyed", TopicQos::default())
            .unwrap();
        let w = p
            .create_publisher(PublisherQos::default())
            .unwrap()
            .create_datawriter(&t, DataWriterQos::default())
            .unwrap();
        let s = TestData::default();
        assert_eq!(w.register_instance(&s).unwrap(), InstanceHandle::NIL);
        assert_eq!(w.lookup_instance(&s).unwrap(), InstanceHandle::NIL);
        drop(p);
        assert!(matches!(
            w.register_instance(&s),
            Err(DdsError::AlreadyDeleted)
        ));
    }
}
