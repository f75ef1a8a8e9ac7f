//! [`DataWriter`]: typed writer. Serializes in the caller's thread and sends from it.

use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrodds_cdr::TopicType;
use ferrodds_rtps::{ChangeKind, WriteError, WriteRequest, WriterId};
use ferrodds_rtps::{Guid, Time};

use crate::entity::WriterShared;
use crate::error::{DdsError, DdsResult};
use crate::qos::{DataWriterQos, PublishMode};
use crate::runtime::{lock, wall_time, Inner, Pending};
use crate::sample::InstanceHandle;
use crate::status::{DataWriterListener, OfferedIncompatibleQosStatus, PublicationMatchedStatus};
use crate::typesupport;
use crate::waitset::StatusCondition;

/// Per-writer scratch buffers (reused: the steady-state write path does not allocate here).
struct Scratch {
    payload: Vec<u8>,
    key: Vec<u8>,
    pending: Vec<Pending>,
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
            }),
            qos,
            topic_name,
            _t: PhantomData,
        }
    }

    /// Writes a sample, stamped with the current wall-clock time.
    pub fn write(&self, sample: &T) -> DdsResult<()> {
        self.write_with_timestamp(sample, wall_time())
    }

    /// Writes a sample with an explicit source timestamp.
    pub fn write_with_timestamp(&self, sample: &T, timestamp: Time) -> DdsResult<()> {
        self.write_change(sample, ChangeKind::Alive, Some(timestamp), false)
    }

    /// Writes a sample and sends it at once together with anything batching
    /// holds (e.g. a latency ping on a batching writer).
    pub fn write_flush(&self, sample: &T) -> DdsResult<()> {
        self.write_change(sample, ChangeKind::Alive, Some(wall_time()), true)
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

    /// Registers an instance and returns its handle (no traffic is generated).
    pub fn register_instance(&self, sample: &T) -> DdsResult<InstanceHandle> {
        Ok(typesupport::instance_key(sample)?.map_or(InstanceHandle::NIL, InstanceHandle))
    }

    /// Unregisters the instance of `sample` (readers see `NotAliveNoWriters`).
    pub fn unregister_instance(&self, sample: &T) -> DdsResult<()> {
        self.write_change(
            sample,
            ChangeKind::NotAliveUnregistered,
            Some(wall_time()),
            false,
        )
    }

    /// Disposes the instance of `sample` (readers see `NotAliveDisposed`).
    pub fn dispose(&self, sample: &T) -> DdsResult<()> {
        self.write_change(
            sample,
            ChangeKind::NotAliveDisposed,
            Some(wall_time()),
            false,
        )
    }

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
        } = &mut *guard;
        if kind == ChangeKind::Alive {
            typesupport::serialize(sample, payload)?;
        } else {
            typesupport::serialize_key(sample, payload)?;
        }
        let key_hash = if T::IS_KEYED {
            typesupport::instance_key_with(sample, key)?
        } else {
            None
        };
        // The clock and the writer's status lock are only needed once the history
        // is full: `gen` is the resources generation read before the last attempt.
        let mut deadline = None;
        let mut gen = None;
        loop {
            let res = self.inner.with_engine(pending, |st, now| {
                let req = WriteRequest {
                    kind,
                    key_hash,
                    serialized_payload: payload,
                    source_timestamp: ts,
                };
                if flush {
                    st.engine.write_flush(self.id, req, now)
                } else {
                    st.engine.write(self.id, req, now)
                }
            });
            match res {
                Ok(_) => {
                    if matches!(self.qos.publish_mode, PublishMode::Asynchronous(_)) {
                        self.inner.kick_publisher();
                    }
                    return Ok(());
                }
                Err(WriteError::HistoryFull) => {
                    if self.inner.is_shut_down() {
                        return Err(DdsError::AlreadyDeleted);
                    }
                    let now = Instant::now();
                    let deadline =
                        *deadline.get_or_insert(now + self.qos.reliability.max_blocking_time);
                    if now >= deadline {
                        return Err(DdsError::Timeout);
                    }
                    if let Some(g) = gen {
                        // Re-check at least every 10 ms in case a wake-up is missed.
                        self.shared
                            .wait_resources(g, (deadline - now).min(Duration::from_millis(10)));
                    }
                    // First refusal: no wait, read the generation and try again (space
                    // freed between the attempt and this read is then not missed).
                    gen = Some(self.shared.resources_gen());
                }
                Err(WriteError::UnknownWriter) => return Err(DdsError::AlreadyDeleted),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Blocks until every matched reliable reader acknowledged everything written so far, or
    /// fails with [`DdsError::Timeout`].
    pub fn wait_for_acknowledgments(&self, timeout: Duration) -> DdsResult<()> {
        let deadline = Instant::now() + timeout;
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
            let now = Instant::now();
            if now >= deadline {
                return Err(DdsError::Timeout);
            }
            self.shared
                .wait_acked(gen, (deadline - now).min(Duration::from_millis(20)));
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
