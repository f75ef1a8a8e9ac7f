//! The entities behind the handles: the Rust API's typed writers and readers of the ready
//! types, erased behind [`AnyWriter`] and [`AnyReader`] so one handle kind serves every
//! type.

use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use ferrodds::{
    Condition, DataReader, DataReaderListener, DataReaderQos, DataWriter, DataWriterListener,
    DataWriterQos, DomainParticipant, InstanceHandle, OfferedIncompatibleQosStatus,
    PublicationMatchedStatus, PublisherQos, ReadCondition, RequestedIncompatibleQosStatus,
    SampleInfo, SampleLostStatus, StatusCondition, SubscriberQos, SubscriptionMatchedStatus, Time,
    TopicQos, WaitSet,
};

use crate::error::{CError, CResult};
use crate::types::{
    validate_body, xcdr1_le_body, Perf, PerfKeyed, PerfKeyedLarge, PerfLarge, Ready, Shape, WireIn,
    WireOut,
};

/// Type support ids (`FERRODDS_TYPE_*` in the header).
pub(crate) mod type_ids {
    /// `ShapeType`.
    pub(crate) const SHAPE: u32 = 1;
    /// `TestData_t`.
    pub(crate) const TEST_DATA: u32 = 2;
    /// `TestDataKeyed_t`.
    pub(crate) const TEST_DATA_KEYED: u32 = 3;
    /// `TestDataLarge_t`.
    pub(crate) const TEST_DATA_LARGE: u32 = 4;
    /// `TestDataKeyedLarge_t`.
    pub(crate) const TEST_DATA_KEYED_LARGE: u32 = 5;
}

/// Calls `$body` with the type parameter `$r` bound to the ready type of `$id`.
macro_rules! with_ready {
    ($id:expr, $r:ident => $body:expr) => {
        match $id {
            type_ids::SHAPE => {
                type $r = Shape;
                $body
            }
            type_ids::TEST_DATA => {
                type $r = Perf;
                $body
            }
            type_ids::TEST_DATA_KEYED => {
                type $r = PerfKeyed;
                $body
            }
            type_ids::TEST_DATA_LARGE => {
                type $r = PerfLarge;
                $body
            }
            type_ids::TEST_DATA_KEYED_LARGE => {
                type $r = PerfKeyedLarge;
                $body
            }
            other => Err(CError::BadParameter(format!(
                "type support id {other} is not one of FERRODDS_TYPE_*"
            ))),
        }
    };
}

/// A participant.
pub(crate) struct ParticipantEntry {
    /// The Rust participant.
    pub(crate) participant: DomainParticipant,
}

/// A topic: a name registered in its participant with a ready type.
pub(crate) struct TopicEntry {
    /// The participant's handle.
    pub(crate) participant: u64,
    /// Topic name.
    pub(crate) name: String,
    /// `FERRODDS_TYPE_*`.
    pub(crate) type_id: u32,
}

impl TopicEntry {
    /// Registers `name` with the type `type_id` in `p` (fails when the name is taken by
    /// another type).
    pub(crate) fn create(
        p: &ParticipantEntry,
        participant: u64,
        name: &str,
        type_id: u32,
    ) -> CResult<Self> {
        with_ready!(type_id, R => {
            p.participant
                .create_topic::<WireIn<R>>(name, TopicQos::default())?;
            Ok(Self {
                participant,
                name: name.to_owned(),
                type_id,
            })
        })
    }
}

/// Instance operations of a writer.
#[derive(Debug, Clone, Copy)]
pub(crate) enum InstanceOp {
    /// `register_instance`.
    Register,
    /// `unregister_instance`.
    Unregister,
    /// `dispose`.
    Dispose,
    /// `lookup_instance`.
    Lookup,
}

/// A writer of any ready type.
pub(crate) trait AnyWriter: Send + Sync {
    /// Writes the serialized sample `payload` (`flush`: send batched samples too).
    fn write(&self, payload: &'static [u8], ts: Option<Time>, flush: bool) -> CResult<()>;
    /// An instance operation on the instance whose key `payload` holds.
    fn instance(&self, op: InstanceOp, payload: &'static [u8]) -> CResult<InstanceHandle>;
    /// Sends what batching holds.
    fn flush(&self) -> CResult<()>;
    /// Waits until matched reliable readers acknowledged everything.
    fn wait_for_acknowledgments(&self, timeout: Duration) -> CResult<()>;
    /// Waits for `n` matched readers.
    fn wait_for_matched(&self, n: u32, timeout: Duration) -> bool;
    /// PUBLICATION_MATCHED (resets the change counts).
    fn matched_status(&self) -> PublicationMatchedStatus;
    /// OFFERED_INCOMPATIBLE_QOS.
    fn incompatible_status(&self) -> OfferedIncompatibleQosStatus;
    /// Installs or removes the listener.
    fn set_listener(&self, l: Option<Arc<dyn DataWriterListener>>);
    /// The writer's status condition.
    fn status_condition(&self) -> StatusCondition;
}

impl<R: Ready> AnyWriter for DataWriter<WireIn<R>> {
    fn write(&self, payload: &'static [u8], ts: Option<Time>, flush: bool) -> CResult<()> {
        let body = xcdr1_le_body(payload)?;
        validate_body::<R>(body)?;
        let s = WireIn::<R>::new(body);
        match (ts, flush) {
            (Some(ts), _) => self.write_with_timestamp(&s, ts)?,
            (None, true) => self.write_flush(&s)?,
            (None, false) => DataWriter::write(self, &s)?,
        }
        Ok(())
    }

    fn instance(&self, op: InstanceOp, payload: &'static [u8]) -> CResult<InstanceHandle> {
        let s = WireIn::<R>::new(xcdr1_le_body(payload)?);
        Ok(match op {
            InstanceOp::Register => self.register_instance(&s)?,
            InstanceOp::Lookup => self.lookup_instance(&s)?,
            InstanceOp::Unregister => {
                self.unregister_instance(&s)?;
                InstanceHandle::NIL
            }
            InstanceOp::Dispose => {
                self.dispose(&s)?;
                InstanceHandle::NIL
            }
        })
    }

    fn flush(&self) -> CResult<()> {
        Ok(DataWriter::flush(self)?)
    }

    fn wait_for_acknowledgments(&self, timeout: Duration) -> CResult<()> {
        Ok(DataWriter::wait_for_acknowledgments(self, timeout)?)
    }

    fn wait_for_matched(&self, n: u32, timeout: Duration) -> bool {
        DataWriter::wait_for_matched(self, n, timeout)
    }

    fn matched_status(&self) -> PublicationMatchedStatus {
        self.publication_matched_status()
    }

    fn incompatible_status(&self) -> OfferedIncompatibleQosStatus {
        self.offered_incompatible_qos_status()
    }

    fn set_listener(&self, l: Option<Arc<dyn DataWriterListener>>) {
        DataWriter::set_listener(self, l);
    }

    fn status_condition(&self) -> StatusCondition {
        DataWriter::status_condition(self)
    }
}

/// A writer.
pub(crate) struct WriterEntry {
    /// The typed writer.
    pub(crate) writer: Box<dyn AnyWriter>,
}

impl WriterEntry {
    /// Creates a writer on `topic` in `p`, in a publisher of `partition`.
    pub(crate) fn create(
        p: &ParticipantEntry,
        topic: &TopicEntry,
        qos: DataWriterQos,
        partition: Vec<String>,
        init: impl FnOnce(&dyn AnyWriter),
    ) -> CResult<Self> {
        let publisher = p.participant.create_publisher(PublisherQos { partition })?;
        with_ready!(topic.type_id, R => {
            let t = p
                .participant
                .create_topic::<WireIn<R>>(&topic.name, TopicQos::default())?;
            let w = publisher.create_datawriter(&t, qos)?;
            init(&w);
            Ok(Self { writer: Box::new(w) })
        })
    }
}

/// A sample handed to C: its serialized bytes (empty without valid data) and its info.
pub(crate) type SampleVisitor<'a> = dyn FnMut(&[u8], &SampleInfo) + 'a;

/// A reader of any ready type.
pub(crate) trait AnyReader: Send + Sync {
    /// Takes at most `max` samples, handing each to `f`; returns how many.
    fn take_each(&self, max: usize, f: &mut SampleVisitor<'_>) -> CResult<usize>;
    /// Reads every sample (leaving them cached, marked read), handing each to `f`.
    fn read_each(&self, f: &mut SampleVisitor<'_>) -> CResult<usize>;
    /// Waits for an unread sample.
    fn wait_for_data(&self, timeout: Duration) -> CResult<bool>;
    /// Waits for `n` matched writers.
    fn wait_for_matched(&self, n: u32, timeout: Duration) -> bool;
    /// SUBSCRIPTION_MATCHED (resets the change counts).
    fn matched_status(&self) -> SubscriptionMatchedStatus;
    /// REQUESTED_INCOMPATIBLE_QOS.
    fn incompatible_status(&self) -> RequestedIncompatibleQosStatus;
    /// SAMPLE_LOST.
    fn lost_status(&self) -> SampleLostStatus;
    /// Installs or removes the listener.
    fn set_listener(&self, l: Option<Arc<dyn DataReaderListener>>);
    /// A read condition (unread samples).
    fn read_condition(&self) -> ReadCondition;
    /// The reader's status condition.
    fn status_condition(&self) -> StatusCondition;
    /// Samples dropped because their bytes were not a valid sample of the type.
    fn undecodable(&self) -> u64;
}

impl<R: Ready> AnyReader for DataReader<WireOut<R>> {
    fn take_each(&self, max: usize, f: &mut SampleVisitor<'_>) -> CResult<usize> {
        Ok(DataReader::take_each(self, max, |d, info| {
            f(d.map_or(&[][..], |d| &d.bytes), info);
        })?)
    }

    fn read_each(&self, f: &mut SampleVisitor<'_>) -> CResult<usize> {
        let samples = self.read()?;
        for s in &samples {
            f(s.data.as_ref().map_or(&[][..], |d| &d.bytes), &s.info);
        }
        Ok(samples.len())
    }

    fn wait_for_data(&self, timeout: Duration) -> CResult<bool> {
        Ok(DataReader::wait_for_data(self, timeout)?)
    }

    fn wait_for_matched(&self, n: u32, timeout: Duration) -> bool {
        DataReader::wait_for_matched(self, n, timeout)
    }

    fn matched_status(&self) -> SubscriptionMatchedStatus {
        self.subscription_matched_status()
    }

    fn incompatible_status(&self) -> RequestedIncompatibleQosStatus {
        self.requested_incompatible_qos_status()
    }

    fn lost_status(&self) -> SampleLostStatus {
        self.sample_lost_status()
    }

    fn set_listener(&self, l: Option<Arc<dyn DataReaderListener>>) {
        DataReader::set_listener(self, l);
    }

    fn read_condition(&self) -> ReadCondition {
        self.create_readcondition()
    }

    fn status_condition(&self) -> StatusCondition {
        DataReader::status_condition(self)
    }

    fn undecodable(&self) -> u64 {
        self.undecodable_count()
    }
}

/// A sample a take into a too-small buffer left for the next take.
#[derive(Default)]
pub(crate) struct Stash {
    /// Serialized bytes (capacity reused).
    pub(crate) bytes: Vec<u8>,
    /// Its info; `None`: nothing stashed.
    pub(crate) info: Option<SampleInfo>,
}

/// A reader.
pub(crate) struct ReaderEntry {
    /// The typed reader.
    pub(crate) reader: Box<dyn AnyReader>,
    /// The sample a take into a too-small buffer kept.
    pub(crate) stash: Mutex<Stash>,
}

impl ReaderEntry {
    /// Creates a reader on `topic` in `p`, in a subscriber of `partition`.
    pub(crate) fn create(
        p: &ParticipantEntry,
        topic: &TopicEntry,
        qos: DataReaderQos,
        partition: Vec<String>,
        init: impl FnOnce(&dyn AnyReader),
    ) -> CResult<Self> {
        let subscriber = p
            .participant
            .create_subscriber(SubscriberQos { partition })?;
        with_ready!(topic.type_id, R => {
            let t = p
                .participant
                .create_topic::<WireOut<R>>(&topic.name, TopicQos::default())?;
            let r = subscriber.create_datareader(&t, qos)?;
            init(&r);
            Ok(Self {
                reader: Box::new(r),
                stash: Mutex::new(Stash::default()),
            })
        })
    }

    /// Takes the next sample into `buf`: `Ok((len, info))`, [`CError::NoData`], or
    /// [`CError::BufferTooSmall`] (the sample is kept for the next take).
    pub(crate) fn take_into(&self, buf: &mut [u8]) -> CResult<(usize, SampleInfo)> {
        let mut stash = self.stash.lock().unwrap_or_else(PoisonError::into_inner);
        if stash.info.is_none() {
            // Straight into `buf` when the sample fits (one copy); kept for the next take
            // when it does not.
            let stash = &mut *stash;
            let mut taken = None;
            self.reader.take_each(1, &mut |bytes, info| {
                if let Some(dst) = buf.get_mut(..bytes.len()) {
                    dst.copy_from_slice(bytes);
                    taken = Some((bytes.len(), *info));
                } else {
                    stash.bytes.clear();
                    stash.bytes.extend_from_slice(bytes);
                    stash.info = Some(*info);
                }
            })?;
            if let Some(t) = taken {
                return Ok(t);
            }
        }
        let Some(info) = stash.info else {
            return Err(CError::NoData);
        };
        let n = stash.bytes.len();
        let Some(dst) = buf.get_mut(..n) else {
            return Err(CError::BufferTooSmall {
                need: n,
                have: buf.len(),
            });
        };
        dst.copy_from_slice(&stash.bytes);
        stash.info = None;
        Ok((n, info))
    }
}

/// A wait set and the C tokens of its conditions.
pub(crate) struct WaitSetEntry {
    /// The wait set (write-locked to attach or detach, read-locked to wait).
    pub(crate) waitset: RwLock<WaitSet>,
    /// Attached conditions with their token and the handle they were attached for.
    pub(crate) conditions: Mutex<Vec<(Condition, usize, u64)>>,
}

impl WaitSetEntry {
    /// An empty wait set.
    pub(crate) fn new() -> Self {
        Self {
            waitset: RwLock::new(WaitSet::new()),
            conditions: Mutex::new(Vec::new()),
        }
    }

    /// Attaches `c` with `token`.
    pub(crate) fn attach(&self, c: Condition, token: usize, owner: u64) {
        self.waitset
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .attach_condition(c.clone());
        self.conditions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((c, token, owner));
    }

    /// Detaches every condition attached for `owner`; returns how many.
    pub(crate) fn detach(&self, owner: u64) -> CResult<usize> {
        let mut ws = self.waitset.write().unwrap_or_else(PoisonError::into_inner);
        let mut conds = self
            .conditions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut n = 0;
        let mut i = 0;
        while i < conds.len() {
            if conds[i].2 == owner {
                let (c, _, _) = conds.remove(i);
                ws.detach_condition(c)?;
                n += 1;
            } else {
                i += 1;
            }
        }
        Ok(n)
    }

    /// Waits up to `timeout` for a condition; stores the tokens of the conditions
    /// triggered on return into `out` (up to its length) and returns how many triggered.
    pub(crate) fn wait(&self, timeout: Duration, out: &mut [usize]) -> CResult<usize> {
        let ws = self.waitset.read().unwrap_or_else(PoisonError::into_inner);
        match ws.wait(timeout) {
            Ok(_) => {}
            Err(ferrodds::DdsError::Timeout) => return Err(CError::Timeout),
            Err(e) => return Err(e.into()),
        }
        drop(ws);
        let conds = self
            .conditions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut n = 0;
        for (c, token, _) in conds.iter() {
            if c.trigger_value() {
                if let Some(slot) = out.get_mut(n) {
                    *slot = *token;
                }
                n += 1;
            }
        }
        Ok(n)
    }
}
