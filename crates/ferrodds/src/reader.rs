//! [`DataReader`]: a typed reader over the engine's reader cache, and [`Samples`], the
//! loan that `take` and `read` return.
//!
//! The engine's reader cache is the reader's only history (HISTORY and instance states
//! are applied there, once, as samples arrive). A take moves the samples out of it under
//! the engine lock in one hand-off (payload buffers of the previous take go back to the
//! engine under the same lock), then decodes them with no engine lock held, into values
//! recycled from earlier takes. Nothing is copied between caches.

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrodds_cdr::{decode_sample, decode_sample_into, TopicType};
use ferrodds_rtps::{ChangeKind, Event, Guid, ReaderId, TakenSample};

use crate::entity::ReaderShared;
use crate::error::{DdsError, DdsResult};
use crate::qos::DataReaderQos;
use crate::runtime::Inner;
use crate::sample::{InstanceHandle, InstanceState, Sample, SampleInfo, SampleState};
use crate::status::{
    DataReaderListener, RequestedIncompatibleQosStatus, SampleLostStatus, SubscriptionMatchedStatus,
};
use crate::sync::lock;
use crate::waitset::{ReadCondition, StatusCondition};

/// Most decoded values a reader keeps for reuse (bounded in bytes too, below). A reader
/// that fell behind takes thousands of batched samples at once; with a few hundred kept,
/// the rest were decoded into new values and freed again, which slowed it further.
const SPARE_VALUES_MAX: usize = 4096;
/// Most serialized bytes' worth of decoded values a reader keeps for reuse (a value from a
/// larger sample is dropped instead, unless it would be the only one kept: a reader of
/// samples above this size still decodes each into the previous one's buffers). 8 MiB:
/// a reader taking perftest's send queue of 50 samples of 63,000 B at once keeps a value
/// for each (with 1 MiB, 34 of every 50 were decoded into new values).
const SPARE_VALUES_BYTES: usize = 8 << 20;
/// Most sample vectors a reader keeps for its loans.
const SPARE_VECS_MAX: usize = 4;
/// Most payload buffers a reader holds for the engine between two takes (the rest are
/// freed outside the engine lock)...
const USED_MAX: usize = 256;
/// ... or, for buffers of at most [`USED_SMALL_BYTES`] (batched small samples), this many.
const USED_SMALL_MAX: usize = 4096;
/// Capacity up to which a payload buffer counts as small for [`USED_SMALL_MAX`].
const USED_SMALL_BYTES: usize = 2048;

/// What a reader reuses from one take to the next, so that a reader in steady state
/// takes without allocating: the engine hand-off vector, payload buffers on their way
/// back to the engine, decoded values to decode later samples into, and the vectors of
/// returned loans.
pub(crate) struct Lending<T> {
    /// Samples moved out of the engine by the current take (kept for its capacity).
    taken: Vec<TakenSample>,
    /// Payload buffers of decoded samples, given back to the engine by the next take.
    used: Vec<Vec<u8>>,
    /// Decoded values no longer lent, with the serialized size each came from (which
    /// bounds the memory kept).
    spare: Vec<(T, usize)>,
    /// Sum of the sizes in `spare`.
    spare_bytes: usize,
    /// Vectors of returned loans: samples and their serialized sizes.
    vecs: Vec<(Vec<Sample<T>>, Vec<usize>)>,
    /// Samples taken by reference, to release (kept for its capacity).
    released: Vec<(Guid, ferrodds_rtps::SequenceNumber)>,
}

impl<T> Default for Lending<T> {
    fn default() -> Self {
        Self {
            taken: Vec::new(),
            used: Vec::new(),
            spare: Vec::new(),
            spare_bytes: 0,
            vecs: Vec::new(),
            released: Vec::new(),
        }
    }
}

impl<T> Lending<T> {
    /// Keeps a decoded value (from a sample of `size` serialized bytes) for reuse,
    /// within the bounds above (one value is kept whatever its size).
    #[inline]
    fn recycle(&mut self, value: T, size: usize) {
        if self.spare.is_empty()
            || (self.spare.len() < SPARE_VALUES_MAX
                && self.spare_bytes.saturating_add(size) <= SPARE_VALUES_BYTES)
        {
            self.spare_bytes += size;
            self.spare.push((value, size));
        }
    }

    /// Empty vectors for a loan (reused when a returned loan left some).
    fn loan_vecs(&mut self) -> (Vec<Sample<T>>, Vec<usize>) {
        self.vecs.pop().unwrap_or_default()
    }

    /// Takes back a loan's samples (their values are kept for reuse) and its vectors.
    fn give_back(&mut self, mut items: Vec<Sample<T>>, mut sizes: Vec<usize>) {
        while let Some(s) = items.pop() {
            let size = sizes.pop().unwrap_or(usize::MAX);
            if let Some(v) = s.data {
                self.recycle(v, size);
            }
        }
        sizes.clear();
        if self.vecs.len() < SPARE_VECS_MAX && items.capacity() > 0 {
            self.vecs.push((items, sizes));
        }
    }
}

impl<T: TopicType> Lending<T> {
    /// Decodes the samples in `taken` (emptied, its capacity kept), handing each that
    /// decodes to `put` with its serialized size, and keeps their payload buffers for the
    /// engine. Returns how many were handed on.
    fn decode_taken(
        &mut self,
        shared: &ReaderShared,
        mut put: impl FnMut(Sample<T>, usize),
    ) -> usize {
        let mut taken = std::mem::take(&mut self.taken);
        let mut n = 0;
        for t in taken.drain(..) {
            if let Some((s, size)) = self.decode(&t.sample, t.instance_state, t.read, shared) {
                put(s, size);
                n += 1;
            }
            let held = self.used.len();
            if held < USED_MAX
                || (held < USED_SMALL_MAX && t.sample.payload.capacity() <= USED_SMALL_BYTES)
            {
                self.used.push(t.sample.payload);
            }
        }
        self.taken = taken;
        n
    }

    /// Decodes a sample (into a recycled value when one is kept) and returns it with its
    /// info and the value's footprint in serialized bytes (the largest sample decoded into
    /// it); the payload buffer is kept for the engine. `None`: an alive sample whose
    /// payload does not decode (dropped and counted).
    fn decode(
        &mut self,
        s: &ferrodds_rtps::Sample,
        instance_state: ferrodds_rtps::InstanceState,
        read: bool,
        shared: &ReaderShared,
    ) -> Option<(Sample<T>, usize)> {
        // The value's footprint: the largest sample decoded into it, whose buffers it keeps
        // (what the byte bound on kept values counts).
        let mut size = s.payload.len();
        let data = if s.kind == ChangeKind::Alive {
            let decoded = match self.spare.pop() {
                Some((mut v, kept)) => {
                    self.spare_bytes -= kept;
                    size = size.max(kept);
                    match decode_sample_into(&s.payload, &mut v) {
                        Ok(()) => Some(v),
                        Err(_) => {
                            self.recycle(v, kept);
                            None
                        }
                    }
                }
                None => decode_sample::<T>(&s.payload).ok(),
            };
            if decoded.is_none() {
                if !read {
                    // Counted once: a read leaves it cached and marks it read.
                    shared.count_undecodable();
                }
                return None;
            }
            decoded
        } else {
            None
        };
        let sample = Sample {
            info: sample_info(s, instance_state, read, data.is_some()),
            data,
        };
        Some((sample, size))
    }
}

/// The [`SampleInfo`] of a taken or read sample.
#[inline(always)]
fn sample_info(
    s: &ferrodds_rtps::Sample,
    instance_state: ferrodds_rtps::InstanceState,
    read: bool,
    valid_data: bool,
) -> SampleInfo {
    SampleInfo {
        sample_state: if read {
            SampleState::Read
        } else {
            SampleState::NotRead
        },
        instance_state: match instance_state {
            ferrodds_rtps::InstanceState::Alive => InstanceState::Alive,
            ferrodds_rtps::InstanceState::NotAliveDisposed => InstanceState::NotAliveDisposed,
            ferrodds_rtps::InstanceState::NotAliveNoWriters => InstanceState::NotAliveNoWriters,
        },
        valid_data,
        source_timestamp: s.source_timestamp,
        instance_handle: InstanceHandle(s.key_hash.unwrap_or([0; 16])),
        publication_handle: s.writer_guid,
        sequence_number: s.sequence_number.0,
    }
}

/// The XCDR1 little-endian body of a serialized payload (without its encapsulation header
/// and padding), if it is one.
fn xcdr1_le_body(payload: &[u8]) -> Option<&[u8]> {
    let (header, body) = ferrodds_cdr::EncapsulationHeader::parse(payload).ok()?;
    if header.representation.encoding() != ferrodds_cdr::Encoding::XCDR1_LE {
        return None;
    }
    body.get(..body.len().checked_sub(header.padding())?)
}

/// Samples lent by [`DataReader::take`] or [`DataReader::read`]: a slice of
/// [`Sample`]s (through `Deref`), oldest first.
///
/// When the loan is dropped its vectors and decoded values go back to the reader, which
/// decodes later samples into them: a reader in steady state takes without allocating.
/// [`into_vec`](Self::into_vec) or iterating by value keeps the samples instead.
pub struct Samples<T> {
    items: Vec<Sample<T>>,
    /// Serialized size of each sample (bounds what the reader keeps for reuse).
    sizes: Vec<usize>,
    home: Arc<Mutex<Lending<T>>>,
}

impl<T> Samples<T> {
    /// The samples, kept (the loan's storage is not reused).
    pub fn into_vec(mut self) -> Vec<Sample<T>> {
        std::mem::take(&mut self.items)
    }
}

impl<T> Deref for Samples<T> {
    type Target = [Sample<T>];
    fn deref(&self) -> &[Sample<T>] {
        &self.items
    }
}

impl<T> DerefMut for Samples<T> {
    fn deref_mut(&mut self) -> &mut [Sample<T>] {
        &mut self.items
    }
}

impl<T> Drop for Samples<T> {
    fn drop(&mut self) {
        let items = std::mem::take(&mut self.items);
        let sizes = std::mem::take(&mut self.sizes);
        lock(&self.home).give_back(items, sizes);
    }
}

impl<T> IntoIterator for Samples<T> {
    type Item = Sample<T>;
    type IntoIter = std::vec::IntoIter<Sample<T>>;
    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

impl<'a, T> IntoIterator for &'a Samples<T> {
    type Item = &'a Sample<T>;
    type IntoIter = std::slice::Iter<'a, Sample<T>>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Samples<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.items.iter()).finish()
    }
}

/// A typed DataReader.
///
/// Received samples stay in the engine's reader cache, which applies the reader's HISTORY
/// (KEEP_LAST depth per instance; KEEP_ALL keeps everything, up to `max_samples`) and
/// tracks instance states. `take*` removes samples, `read` leaves them and marks them
/// read; both decode on the calling thread. Dropping the reader deletes it.
pub struct DataReader<T> {
    inner: Arc<Inner>,
    id: ReaderId,
    guid: Guid,
    shared: Arc<ReaderShared>,
    lending: Arc<Mutex<Lending<T>>>,
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
            lending: Arc::new(Mutex::new(Lending::default())),
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

    /// Removes and lends every sample in the cache, oldest first.
    pub fn take(&self) -> DdsResult<Samples<T>> {
        self.take_max(usize::MAX)
    }

    /// Removes and lends at most `max` samples, oldest first.
    pub fn take_max(&self, max: usize) -> DdsResult<Samples<T>> {
        self.check_alive()?;
        let mut l = lock(&self.lending);
        let (mut items, mut sizes) = l.loan_vecs();
        let transmit_due = self.take_decoded(&mut l, max, |s, size| {
            items.push(s);
            sizes.push(size);
        });
        drop(l);
        if transmit_due {
            // Room again in a full KEEP_ALL reader: send the acknowledgements it held
            // back (and dispatch what that produced) with no lock of this reader held.
            self.inner.flush();
        }
        Ok(Samples {
            items,
            sizes,
            home: Arc::clone(&self.lending),
        })
    }

    /// Moves at most `max` samples out of the engine (one engine lock, which also takes
    /// back the previous take's payload buffers) and decodes each after the lock is
    /// released, handing it to `put` with its serialized size. Undecodable samples are
    /// dropped (counted) and more are taken in their place while the cache has some.
    /// Returns whether acknowledgements became due (see [`Inner::flush`]).
    #[inline]
    fn take_decoded(
        &self,
        l: &mut Lending<T>,
        max: usize,
        mut put: impl FnMut(Sample<T>, usize),
    ) -> bool {
        let mut transmit_due = false;
        let mut want = max;
        while want > 0 {
            let Lending { taken, used, .. } = &mut *l;
            let o = self
                .inner
                .take_samples(self.id, want, taken, used, &self.shared, false);
            transmit_due |= o.transmit_due;
            let got = l.taken.len();
            want -= l.decode_taken(&self.shared, &mut put);
            if o.left == 0 || got == 0 {
                break;
            }
        }
        transmit_due
    }

    /// Removes at most `max` samples, oldest first, and hands each to `f` (its data, `None`
    /// when [`SampleInfo::valid_data`] is `false`, and its info); returns how many.
    ///
    /// Takes exactly what [`take_max`](Self::take_max) would, but lends the samples to `f`
    /// instead of returning them; each decoded value is kept after `f` returns so that a
    /// later sample is decoded into it, reusing its sequence and string buffers. A reader
    /// taken this way (or with `take` whose loans are dropped) receives, decodes and takes
    /// without allocating once warmed up.
    ///
    /// `f` runs with no lock of the reader or the engine held, so it may call the reader
    /// (or write) too.
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
        let samples = self.take_max(max)?;
        for s in &samples {
            f(s.data.as_ref(), &s.info);
        }
        Ok(samples.len())
    }

    /// Removes and returns the oldest sample, if any.
    pub fn take_next(&self) -> DdsResult<Option<Sample<T>>> {
        Ok(self.take_max(1)?.into_vec().pop())
    }

    /// Lends every sample in the cache, oldest first, leaving them there and marking them
    /// read ([`SampleState::Read`] for later reads and takes).
    pub fn read(&self) -> DdsResult<Samples<T>> {
        self.check_alive()?;
        let mut l = lock(&self.lending);
        let (mut items, mut sizes) = l.loan_vecs();
        let shared = &self.shared;
        // The payloads stay in the cache: each is copied, under the engine lock, into a
        // recycled buffer, and decoded after the lock is released.
        let Lending { taken, used, .. } = &mut *l;
        let transmit_due =
            self.inner
                .read_samples(self.id, usize::MAX, shared, |s, state, read| {
                    let mut payload = used.pop().unwrap_or_default();
                    payload.clear();
                    payload.extend_from_slice(&s.payload);
                    taken.push(TakenSample {
                        sample: ferrodds_rtps::Sample {
                            writer_guid: s.writer_guid,
                            sequence_number: s.sequence_number,
                            source_timestamp: s.source_timestamp,
                            kind: s.kind,
                            key_hash: s.key_hash,
                            payload,
                            by_reference: false,
                        },
                        instance_state: state,
                        read,
                    });
                });
        l.decode_taken(shared, |d, size| {
            items.push(d);
            sizes.push(size);
        });
        drop(l);
        if transmit_due {
            self.inner.flush();
        }
        Ok(Samples {
            items,
            sizes,
            home: Arc::clone(&self.lending),
        })
    }

    /// Number of samples received but not yet taken (read or not).
    pub fn cached_len(&self) -> usize {
        self.inner.reader_sample_count(self.id)
    }

    /// Alive samples dropped because their payload did not decode as `T`.
    pub fn undecodable_count(&self) -> u64 {
        self.shared.undecodable()
    }

    /// Blocks until a not-yet-read sample is available; `false` on timeout.
    pub fn wait_for_data(&self, timeout: Duration) -> DdsResult<bool> {
        self.check_alive()?;
        let (inner, id) = (&self.inner, self.id);
        Ok(self
            .shared
            .wait_for_data(timeout, || inner.reader_has_unread(id)))
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
        ReadCondition::new(Arc::clone(&self.inner), self.id, Arc::clone(&self.shared))
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

impl<T: crate::loan::FlatType + Send + 'static> DataReader<T> {
    /// Removes at most `max` samples, oldest first, and hands each to `f` in its serialized
    /// form, without decoding it ([`SerializedSample`]: the XCDR1 little-endian body, without
    /// the encapsulation header, and the sample's info); returns how many. The reader side
    /// of [`DataWriter::loan_sample`](crate::DataWriter::loan_sample): the body is checked
    /// with [`FlatType::validate_body`](crate::FlatType) only. A sample that is not such a
    /// body (another encoding, or malformed) is dropped and counted as undecodable, as
    /// `take` does.
    ///
    /// The body is the received buffer itself, or, for a reader that reads in place
    /// ([`DataReader::set_in_place`]) and a sample from another participant's shared
    /// memory, the writer's chunk itself: no copy at all ([`SerializedSample::in_place`]).
    /// Such a sample stays unacknowledged while `f` runs (a KEEP_ALL writer keeps the chunk
    /// unchanged) and is released when this call returns, or if `f` panics. One whose chunk
    /// cannot be read any more is counted lost (`sample_lost_status`).
    ///
    /// `f` runs with no lock of the reader or the engine held.
    pub fn take_serialized_each(
        &self,
        max: usize,
        mut f: impl FnMut(&SerializedSample<'_>),
    ) -> DdsResult<usize> {
        self.check_alive()?;
        let mut n = 0;
        let mut want = max;
        let mut transmit_due = false;
        let mut l = lock(&self.lending);
        while want > 0 {
            let Lending { taken, used, .. } = &mut *l;
            let o = self
                .inner
                .take_samples(self.id, want, taken, used, &self.shared, true);
            transmit_due |= o.transmit_due;
            let mut batch = std::mem::take(&mut l.taken);
            // Released when the batch is done, or if `f` panics (else the writer would wait
            // for ever for these acknowledgements).
            let mut release = Release {
                inner: &self.inner,
                id: self.id,
                taken: std::mem::take(&mut l.released),
            };
            release.taken.extend(
                batch
                    .iter()
                    .filter(|t| t.sample.by_reference)
                    .map(|t| (t.sample.writer_guid, t.sample.sequence_number)),
            );
            let got = batch.len();
            drop(l);
            let mut lost = 0;
            for t in &batch {
                let s = &t.sample;
                let view = if s.by_reference {
                    match self.view(s) {
                        Some(v) => Some(v),
                        None => {
                            // The chunk was reused or its pool is gone.
                            lost += 1;
                            continue;
                        }
                    }
                } else {
                    None
                };
                let bytes = view.as_ref().map_or(&s.payload[..], |v| v.bytes());
                let body = if s.kind == ChangeKind::Alive {
                    match xcdr1_le_body(bytes)
                        .filter(|b| T::validate_body(b).is_ok_and(|n| n == b.len()))
                    {
                        Some(b) => Some(b),
                        None => {
                            if !t.read {
                                self.shared.count_undecodable();
                            }
                            continue;
                        }
                    }
                } else {
                    None
                };
                f(&SerializedSample {
                    body,
                    info: sample_info(s, t.instance_state, t.read, body.is_some()),
                    view: view.as_ref(),
                });
                n += 1;
                want -= 1;
            }
            // The writers may reuse the chunks now.
            let released = release.finish();
            if lost > 0 {
                self.shared.on_event(
                    &Event::SampleLost {
                        reader: self.id,
                        count: lost,
                    },
                    0,
                );
            }
            l = lock(&self.lending);
            for t in batch.drain(..) {
                let held = l.used.len();
                if held < USED_MAX
                    || (held < USED_SMALL_MAX && t.sample.payload.capacity() <= USED_SMALL_BYTES)
                {
                    l.used.push(t.sample.payload);
                }
            }
            l.taken = batch;
            l.released = released;
            if o.left == 0 || got == 0 {
                break;
            }
        }
        drop(l);
        if transmit_due {
            self.inner.flush();
        }
        Ok(n)
    }

    /// The writer's chunk a sample taken by reference names, in place (`None`: the chunk
    /// cannot be read, the sample is lost).
    #[cfg(feature = "shared-memory")]
    fn view(&self, s: &ferrodds_rtps::Sample) -> Option<ChunkView> {
        let view = self.inner.chunks.as_ref().and_then(|c| c.view(&s.payload));
        if view.is_none() {
            tracing::debug!(
                sn = s.sequence_number.0,
                "a sample held by reference is not readable"
            );
        }
        view
    }

    #[cfg(not(feature = "shared-memory"))]
    fn view(&self, _s: &ferrodds_rtps::Sample) -> Option<ChunkView> {
        None
    }

    /// Sets whether this reader reads large samples from other participants on this host in
    /// place, in their writers' shared memory, instead of copying them on receipt: a sample
    /// a reliable writer sent by reference is then held by reference until taken with
    /// [`DataReader::take_serialized_each`], which hands `f` the writer's chunk itself.
    /// Meanwhile the sample is not acknowledged, so a KEEP_ALL writer keeps the chunk
    /// unchanged (and waits for this reader as it waits for any unacknowledged sample). A
    /// KEEP_LAST writer that replaces the sample lets its chunk go after a short quarantine:
    /// a sample whose chunk was reused before the take is lost (`sample_lost_status`), and
    /// one reused during `f` reads [`SerializedSample::is_consistent`] false. Samples held
    /// when their writer goes away are copied out then. Applies to a KEEP_ALL reader;
    /// `take`, `read` and listeners that decode get the bytes as ever (copied at that
    /// moment). Off by default; without shared memory it changes nothing.
    pub fn set_in_place(&self, on: bool) {
        self.inner.set_reader_in_place(self.id, on);
    }
}

/// Samples taken by reference, released on drop (a panic in a take's callback included).
struct Release<'a> {
    inner: &'a Inner,
    id: ReaderId,
    taken: Vec<(Guid, ferrodds_rtps::SequenceNumber)>,
}

impl Release<'_> {
    /// Releases the samples now; the emptied vector, for its capacity.
    fn finish(mut self) -> Vec<(Guid, ferrodds_rtps::SequenceNumber)> {
        self.inner.release_references(self.id, &mut self.taken);
        std::mem::take(&mut self.taken)
    }
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.inner.release_references(self.id, &mut self.taken);
    }
}

/// A sample taken in its serialized form ([`DataReader::take_serialized_each`]).
#[derive(Debug)]
pub struct SerializedSample<'a> {
    body: Option<&'a [u8]>,
    info: SampleInfo,
    view: Option<&'a ChunkView>,
}

impl SerializedSample<'_> {
    /// The XCDR1 little-endian body, validated (`None` when [`SampleInfo::valid_data`] is
    /// `false`).
    pub fn body(&self) -> Option<&[u8]> {
        self.body
    }

    /// The sample's info.
    pub fn info(&self) -> &SampleInfo {
        &self.info
    }

    /// Whether the body is the writer's shared-memory chunk itself (read in place, no copy).
    pub fn in_place(&self) -> bool {
        self.view.is_some()
    }

    /// Whether the body still holds the sample the writer wrote (RTI's
    /// `is_data_consistent`): always for a body that was copied; for one read in place,
    /// whether the writer's chunk is unchanged (a writer process that does not wait for
    /// acknowledgements, or misbehaves, may reuse it). Check after reading the body: true
    /// means what was read is the sample.
    pub fn is_consistent(&self) -> bool {
        self.view.is_none_or(|v| v.is_consistent())
    }
}

#[cfg(feature = "shared-memory")]
use ferrodds_transport_shm::ChunkView;

/// Without shared memory no sample is read in place.
#[cfg(not(feature = "shared-memory"))]
#[derive(Debug)]
enum ChunkView {}

#[cfg(not(feature = "shared-memory"))]
impl ChunkView {
    fn bytes(&self) -> &[u8] {
        match *self {}
    }
    fn is_consistent(&self) -> bool {
        match *self {}
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
