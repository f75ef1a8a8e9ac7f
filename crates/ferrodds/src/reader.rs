//! [`DataReader`]: typed reader with a per-reader sample cache (`read` keeps, `take` removes).

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use ferrodds_cdr::TopicType;
use ferrodds_rtps::Guid;
use ferrodds_rtps::ReaderId;

use crate::entity::{CachedSample, ReaderShared};
use crate::error::{DdsError, DdsResult};
use crate::qos::DataReaderQos;
use crate::runtime::{lock, Inner};
use crate::sample::{Sample, SampleInfo, SampleState};
use crate::status::{
    DataReaderListener, RequestedIncompatibleQosStatus, SampleLostStatus, SubscriptionMatchedStatus,
};
use crate::waitset::{ReadCondition, StatusCondition};

/// A typed DataReader.
///
/// Received samples are decoded into a per-reader cache (by the receive thread that got
/// them, or by the next `take`/`read`), which applies the reader's HISTORY (KEEP_LAST depth
/// per instance; KEEP_ALL keeps everything). `take*` removes samples from the cache, `read`
/// returns copies and marks them read. Dropping the reader deletes it.
pub struct DataReader<T> {
    inner: Arc<Inner>,
    id: ReaderId,
    guid: Guid,
    shared: Arc<ReaderShared>,
    qos: DataReaderQos,
    topic_name: String,
    _t: PhantomData<fn() -> T>,
}

impl<T: TopicType + Send + 'static> DataReader<T> {
    pub(crate) fn new(
        inner: Arc<Inner>,
        id: ReaderId,
        guid: Guid,
        shared: Arc<ReaderShared>,
        qos: DataReaderQos,
        topic_name: String,
    ) -> Self {
        Self {
            inner,
            id,
            guid,
            shared,
            qos,
            topic_name,
            _t: PhantomData,
        }
    }

    fn check_alive(&self) -> DdsResult<()> {
        if self.inner.is_shut_down() {
            Err(DdsError::AlreadyDeleted)
        } else {
            Ok(())
        }
    }

    fn convert(c: CachedSample) -> Sample<T> {
        Sample {
            data: c.data.and_then(|b| b.downcast::<T>().ok()).map(|b| *b),
            info: c.info,
        }
    }

    /// Removes and returns every sample in the cache, oldest first.
    pub fn take(&self) -> DdsResult<Vec<Sample<T>>> {
        self.take_max(usize::MAX)
    }

    /// Removes and returns at most `max` samples, oldest first.
    pub fn take_max(&self, max: usize) -> DdsResult<Vec<Sample<T>>> {
        self.check_alive()?;
        let mut cache = self.shared.ingest();
        let n = cache.samples.len().min(max);
        let out: Vec<Sample<T>> = cache.samples.drain(..n).map(Self::convert).collect();
        let empty = cache.samples.is_empty();
        drop(cache);
        self.after_take(n, empty);
        Ok(out)
    }

    /// Removes at most `max` samples, oldest first, and hands each to `f` (its data, `None`
    /// when [`SampleInfo::valid_data`] is `false`, and its info); returns how many.
    ///
    /// Takes exactly what [`take_max`](Self::take_max) would, but lends the samples instead
    /// of returning them: no `Vec` is built, and each decoded value is kept after `f`
    /// returns so that a later sample is decoded into it, reusing its sequence and string
    /// buffers. A reader taken only this way (a listener that processes samples in place,
    /// say) receives, decodes and takes without allocating once warmed up.
    ///
    /// `f` runs with no lock of the reader held, so it may call the reader (or write) too.
    ///
    /// ```no_run
    /// # use ferrodds::{DataReader, cdr::types::ShapeType};
    /// # fn f(reader: &DataReader<ShapeType>) -> ferrodds::DdsResult<()> {
    /// let mut sum = 0i64;
    /// reader.take_each(usize::MAX, |data, _info| {
    ///     if let Some(s) = data {
    ///         sum += i64::from(s.x);
    ///     }
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn take_each(
        &self,
        max: usize,
        mut f: impl FnMut(Option<&T>, &SampleInfo),
    ) -> DdsResult<usize> {
        self.check_alive()?;
        let mut cache = self.shared.ingest();
        let n = cache.samples.len().min(max);
        let mut lent = std::mem::take(&mut cache.lent);
        lent.reserve(n);
        for _ in 0..n {
            if let Some(c) = cache.samples.pop_front() {
                lent.push(c);
            }
        }
        let empty = cache.samples.is_empty();
        drop(cache);
        self.after_take(n, empty);
        for c in &lent {
            f(c.data.as_ref().and_then(|b| b.downcast_ref::<T>()), &c.info);
        }
        self.shared.return_lent(lent);
        Ok(n)
    }

    /// Bookkeeping after `n` samples left the cache (`empty`: none is left).
    #[inline]
    fn after_take(&self, n: usize, empty: bool) {
        self.shared.released(n);
        if self.shared.is_bounded() && n > 0 {
            // Room again: move what the engine held back (it then acknowledges it).
            let id = self.id;
            let shared = &self.shared;
            let mut pending = Vec::new();
            self.inner.with_engine(&mut pending, |st, _| {
                shared.fill_inbox(&mut st.engine, id);
            });
            if !lock(&shared.inbox).samples.is_empty() {
                return;
            }
        }
        if empty {
            self.shared.clear_data_flag();
        }
    }

    /// Removes and returns the oldest sample, if any.
    pub fn take_next(&self) -> DdsResult<Option<Sample<T>>> {
        Ok(self.take_max(1)?.pop())
    }

    /// Number of samples received but not yet taken (read or not).
    pub fn cached_len(&self) -> usize {
        self.shared.ingest().samples.len()
    }

    /// Blocks until a not-yet-read sample is available; `false` on timeout.
    pub fn wait_for_data(&self, timeout: Duration) -> DdsResult<bool> {
        self.check_alive()?;
        Ok(self.shared.wait_for_data(timeout))
    }

    /// Blocks until at least `n` writers are matched; `false` on timeout. (A convenience
    /// beyond the DDS API, used by tests and tools.)
    pub fn wait_for_matched(&self, n: u32, timeout: Duration) -> bool {
        self.shared.wait_for_matched(n, timeout)
    }

    /// Matched writers now.
    pub fn matched_count(&self) -> u32 {
        self.shared.current_matched()
    }

    /// The `SUBSCRIPTION_MATCHED` status (reading resets the change counters).
    pub fn subscription_matched_status(&self) -> SubscriptionMatchedStatus {
        self.shared.subscription_matched_status()
    }

    /// The `REQUESTED_INCOMPATIBLE_QOS` status (reading resets the change counter).
    pub fn requested_incompatible_qos_status(&self) -> RequestedIncompatibleQosStatus {
        self.shared.requested_incompatible_qos_status()
    }

    /// The `SAMPLE_LOST` status (reading resets the change counter).
    pub fn sample_lost_status(&self) -> SampleLostStatus {
        self.shared.sample_lost_status()
    }

    /// Installs (or removes) the listener.
    pub fn set_listener(&self, listener: Option<Arc<dyn DataReaderListener>>) {
        self.shared.set_listener(listener);
    }

    /// A condition that triggers while unread samples are available.
    pub fn create_readcondition(&self) -> ReadCondition {
        ReadCondition::new(Arc::clone(&self.shared))
    }

    /// A status condition for [`crate::WaitSet`]s (all statuses enabled).
    pub fn status_condition(&self) -> StatusCondition {
        StatusCondition::for_reader(Arc::clone(&self.shared))
    }

    /// This reader's GUID.
    pub fn guid(&self) -> Guid {
        self.guid
    }

    /// The QoS the reader was created with.
    pub fn qos(&self) -> &DataReaderQos {
        &self.qos
    }

    /// The topic name.
    pub fn topic_name(&self) -> &str {
        &self.topic_name
    }
}

impl<T: TopicType + Clone + Send + 'static> DataReader<T> {
    /// Returns copies of every cached sample, marking them read (they stay in the cache
    /// until taken or pushed out by the history depth).
    pub fn read(&self) -> DdsResult<Vec<Sample<T>>> {
        self.check_alive()?;
        let mut cache = self.shared.ingest();
        let mut out = Vec::with_capacity(cache.samples.len());
        for c in cache.samples.iter_mut() {
            out.push(Sample {
                data: c.data.as_ref().and_then(|b| b.downcast_ref::<T>()).cloned(),
                info: c.info,
            });
            c.info.sample_state = SampleState::Read;
        }
        drop(cache);
        self.shared.clear_data_flag();
        Ok(out)
    }
}

impl<T> Drop for DataReader<T> {
    fn drop(&mut self) {
        if self.inner.is_shut_down() {
            return;
        }
        let id = self.id;
        let mut pending = Vec::new();
        self.inner.with_engine(&mut pending, |st, now| {
            st.readers.remove(&id);
            if let Err(e) = st.engine.delete_reader(id, now) {
                tracing::debug!(error = %e, "delete_reader failed");
            }
        });
    }
}

impl<T> std::fmt::Debug for DataReader<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataReader")
            .field("guid", &self.guid)
            .field("topic", &self.topic_name)
            .finish_non_exhaustive()
    }
}
