//! Non-generic per-endpoint state shared between the runtime threads and the typed
//! [`crate::DataWriter`] / [`crate::DataReader`] handles: statuses, condvars, listeners,
//! attached wait sets, and the reader's sample cache.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use ferrodds_rtps::{ChangeKind, Event};

use crate::qos::History;
use crate::runtime::{lock, wait_timeout};
use crate::sample::{InstanceHandle, InstanceState, SampleInfo, SampleState};
use crate::status::{
    DataReaderListener, DataWriterListener, OfferedIncompatibleQosStatus, PublicationMatchedStatus,
    RequestedIncompatibleQosStatus, SampleLostStatus, StatusMask, SubscriptionMatchedStatus,
};

/// Wake-up point of one [`crate::WaitSet`].
#[derive(Debug, Default)]
pub(crate) struct WaitSetSignal {
    pub(crate) generation: Mutex<u64>,
    pub(crate) cv: Condvar,
}

impl WaitSetSignal {
    pub(crate) fn notify(&self) {
        *lock(&self.generation) += 1;
        self.cv.notify_all();
    }
}

/// Wait sets attached to an entity or condition.
#[derive(Debug, Default)]
pub(crate) struct Waiters {
    list: Mutex<Vec<Weak<WaitSetSignal>>>,
    /// `list.len()`, readable without the lock: a notification with no wait set attached
    /// (the common case on the per-sample path) is one atomic load. A wait set checks its
    /// conditions after attaching, so one attached concurrently misses nothing.
    attached: AtomicUsize,
}

impl Waiters {
    pub(crate) fn attach(&self, s: &Arc<WaitSetSignal>) {
        let mut v = lock(&self.list);
        v.retain(|w| w.strong_count() > 0);
        v.push(Arc::downgrade(s));
        self.attached.store(v.len(), Ordering::SeqCst);
    }
    pub(crate) fn detach(&self, s: &Arc<WaitSetSignal>) {
        let mut v = lock(&self.list);
        v.retain(|w| w.upgrade().is_some_and(|x| !Arc::ptr_eq(&x, s)));
        self.attached.store(v.len(), Ordering::SeqCst);
    }
    /// Wakes the attached wait sets. Inlined: the common case (none attached) is one
    /// atomic load at the call site.
    #[inline]
    pub(crate) fn notify(&self) {
        if self.attached.load(Ordering::SeqCst) != 0 {
            self.notify_attached();
        }
    }

    #[inline(never)]
    fn notify_attached(&self) {
        // Signals are notified under the list lock (lock order: list, then a signal's
        // generation; nothing takes them the other way round).
        for s in lock(&self.list).iter().filter_map(Weak::upgrade) {
            s.notify();
        }
    }
}

/// Calls a listener callback; a panicking listener is logged and does not take the
/// runtime thread down with it.
fn call_listener(what: &'static str, f: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
        tracing::error!(callback = what, "listener panicked");
    }
}

/// Decodes a serialized payload into the slot (a boxed `T`; a value already there is
/// decoded into, reusing its storage) and returns the key hash of the decoded value when
/// the flag asks for it; `None` if the payload does not decode (the slot then holds an
/// unspecified value, or nothing).
pub(crate) type DecodeFn =
    dyn Fn(&[u8], &mut Option<Box<dyn Any + Send>>, bool) -> Option<Option<[u8; 16]>> + Send + Sync;
/// Computes the key hash from a key-only payload (dispose/unregister).
pub(crate) type KeyFn = dyn Fn(&[u8]) -> Option<[u8; 16]> + Send + Sync;

/// A decoded sample in a reader cache.
pub(crate) struct CachedSample {
    pub(crate) data: Option<Box<dyn Any + Send>>,
    pub(crate) info: SampleInfo,
    /// Size of the serialized payload `data` was decoded from.
    size: usize,
}

/// The reader's sample cache (what `read` looks at and `take` removes from).
#[derive(Default)]
pub(crate) struct ReaderCache {
    pub(crate) samples: VecDeque<CachedSample>,
    instances: HashMap<InstanceHandle, InstanceState>,
    /// The last state recorded (most samples repeat it: no hash-map update then).
    last_state: Option<(InstanceHandle, InstanceState)>,
    /// Samples being moved from the inbox (kept for its capacity).
    incoming: VecDeque<ferrodds_rtps::Sample>,
    /// Payload buffers of decoded samples, on their way back to the engine (handed over
    /// at the next ingest).
    used_payloads: Vec<Vec<u8>>,
    /// Decoded values no longer needed (taken by `take_each`, pushed out by KEEP_LAST),
    /// decoded into again by later samples so that those allocate nothing; with the
    /// serialized size each came from, which bounds the memory kept.
    spare_values: Vec<(Box<dyn Any + Send>, usize)>,
    /// Sum of the sizes in `spare_values`.
    spare_bytes: usize,
    /// Samples lent to a `take_each` callback (kept for its capacity).
    pub(crate) lent: Vec<CachedSample>,
    pub(crate) undecodable: u64,
}

/// Most decoded values a reader keeps for reuse.
const SPARE_VALUES_MAX: usize = 256;
/// Most serialized bytes' worth of decoded values a reader keeps for reuse (a value from a
/// larger sample is dropped instead).
const SPARE_VALUES_BYTES: usize = 1 << 20;

impl ReaderCache {
    /// Keeps a decoded value (from a sample of `size` serialized bytes) for reuse, within
    /// the bounds above.
    #[inline]
    fn recycle_value(&mut self, value: Box<dyn Any + Send>, size: usize) {
        if self.spare_values.len() < SPARE_VALUES_MAX
            && self.spare_bytes.saturating_add(size) <= SPARE_VALUES_BYTES
        {
            self.spare_bytes += size;
            self.spare_values.push((value, size));
        }
    }

    /// A decoded value to decode the next sample into, if one is kept.
    fn spare_value(&mut self) -> Option<Box<dyn Any + Send>> {
        let (v, size) = self.spare_values.pop()?;
        self.spare_bytes -= size;
        Some(v)
    }

    /// Takes back the samples lent to a `take_each` callback: their values are kept for
    /// reuse, the vector for its capacity.
    pub(crate) fn return_lent(&mut self, mut lent: Vec<CachedSample>) {
        while let Some(c) = lent.pop() {
            if let Some(d) = c.data {
                self.recycle_value(d, c.size);
            }
        }
        // A nested take_each (from a callback) may have left a vector here: keep one.
        if self.lent.capacity() == 0 {
            self.lent = lent;
        }
    }

    /// Records the instance's new state; cached samples of the instance report it too (the
    /// DDS instance state is that of the instance when the sample is read, not received).
    fn set_instance_state(&mut self, handle: InstanceHandle, state: InstanceState) {
        if self.last_state == Some((handle, state)) {
            return;
        }
        self.last_state = Some((handle, state));
        let old = self.instances.insert(handle, state);
        if old.is_some_and(|o| o != state) {
            for c in self
                .samples
                .iter_mut()
                .filter(|c| c.info.instance_handle == handle)
            {
                c.info.instance_state = state;
            }
        }
    }

    /// No writer is left: every alive instance becomes `NotAliveNoWriters`.
    fn no_writers(&mut self) {
        let alive: Vec<InstanceHandle> = self
            .instances
            .iter()
            .filter(|(_, s)| **s == InstanceState::Alive)
            .map(|(h, _)| *h)
            .collect();
        for h in alive {
            self.set_instance_state(h, InstanceState::NotAliveNoWriters);
        }
    }
}

#[derive(Default)]
struct ReaderStatus {
    /// Threads blocked on the condvar (a notify without waiters is a futex syscall,
    /// which the per-sample path avoids).
    waiting: u32,
    data_flag: bool,
    changed: StatusMask,
    matched: SubscriptionMatchedStatus,
    incompatible: RequestedIncompatibleQosStatus,
    lost: SampleLostStatus,
}

/// Samples moved out of the engine, not yet decoded into the cache, and payload buffers
/// going the other way. One lock covers both directions: a fill (under the engine lock)
/// hands the buffers back to the engine and moves samples in, an ingest swaps the samples
/// out and returns the buffers of those the previous ingest decoded.
#[derive(Default)]
pub(crate) struct Inbox {
    pub(crate) samples: VecDeque<ferrodds_rtps::Sample>,
    /// Decoded samples' payload buffers, given back to the engine for reuse.
    spare: Vec<Vec<u8>>,
}

/// Shared state of one reader.
pub(crate) struct ReaderShared {
    pub(crate) inbox: Mutex<Inbox>,
    pub(crate) cache: Mutex<ReaderCache>,
    status: Mutex<ReaderStatus>,
    cv: Condvar,
    listener: Mutex<Option<Arc<dyn DataReaderListener>>>,
    pub(crate) waiters: Waiters,
    decode: Box<DecodeFn>,
    decode_key: Box<KeyFn>,
    history: History,
    /// KEEP_ALL with `max_samples`: the most samples held here (inbox + cache); the rest
    /// stay in the engine, which then withholds acknowledgements (back-pressure).
    capacity: Option<usize>,
    /// Samples in the inbox and the cache.
    held: AtomicUsize,
}

/// Most payload buffers a reader keeps for the engine between two fills.
const SPARE_MAX: usize = 256;

impl ReaderShared {
    pub(crate) fn new(
        history: History,
        max_samples: Option<u32>,
        decode: Box<DecodeFn>,
        decode_key: Box<KeyFn>,
    ) -> Self {
        let capacity = match history {
            History::KeepAll => max_samples.map(|m| m.max(1) as usize),
            History::KeepLast(_) => None,
        };
        Self {
            capacity,
            held: AtomicUsize::new(0),
            inbox: Mutex::new(Inbox::default()),
            cache: Mutex::new(ReaderCache::default()),
            status: Mutex::new(ReaderStatus::default()),
            cv: Condvar::new(),
            listener: Mutex::new(None),
            waiters: Waiters::default(),
            decode,
            decode_key,
            history,
        }
    }

    pub(crate) fn set_listener(&self, l: Option<Arc<dyn DataReaderListener>>) {
        *lock(&self.listener) = l;
    }

    /// Whether this reader bounds what it holds (KEEP_ALL with `max_samples`).
    pub(crate) fn is_bounded(&self) -> bool {
        self.capacity.is_some()
    }

    /// How many more samples may be moved in from the engine.
    pub(crate) fn room(&self) -> usize {
        self.capacity.map_or(usize::MAX, |c| {
            c.saturating_sub(self.held.load(Ordering::Acquire))
        })
    }

    /// Moves samples from the engine into the inbox, up to the room left. Called with the
    /// engine lock held.
    pub(crate) fn fill_inbox(
        &self,
        engine: &mut ferrodds_rtps::Participant,
        id: ferrodds_rtps::ReaderId,
    ) {
        let mut room = self.room();
        let mut inbox = lock(&self.inbox);
        while let Some(p) = inbox.spare.pop() {
            engine.recycle_payload(p);
        }
        let mut n = 0;
        while room > 0 {
            let Some(s) = engine.take_sample(id) else {
                break;
            };
            inbox.samples.push_back(s);
            n += 1;
            room -= 1;
        }
        if n > 0 {
            self.held.fetch_add(n, Ordering::AcqRel);
        }
    }

    /// Notes that `n` samples left the cache.
    pub(crate) fn released(&self, n: usize) {
        self.held.fetch_sub(n, Ordering::AcqRel);
    }

    fn listener(&self) -> Option<Arc<dyn DataReaderListener>> {
        lock(&self.listener).clone()
    }

    /// Moves samples from the inbox into the cache, decoding them and applying the history
    /// policy. Returns the cache guard.
    pub(crate) fn ingest(&self) -> std::sync::MutexGuard<'_, ReaderCache> {
        let mut cache = lock(&self.cache);
        // Swap the whole inbox out under one short lock (both queues keep their
        // capacity), then decode without holding it. Samples that arrive meanwhile are
        // decoded by the next ingest (their own DataAvailable event runs one; readers,
        // waiters and conditions look at the inbox too). The payload buffers of the
        // samples the previous ingest decoded go back to the engine under the same lock.
        let mut batch = std::mem::take(&mut cache.incoming);
        let mut used = std::mem::take(&mut cache.used_payloads);
        {
            let mut inbox = lock(&self.inbox);
            while let Some(p) = used.pop() {
                if inbox.spare.len() < SPARE_MAX {
                    inbox.spare.push(p);
                }
            }
            std::mem::swap(&mut inbox.samples, &mut batch);
        }
        while let Some(s) = batch.pop_front() {
            self.ingest_one(&mut cache, s, &mut used);
        }
        cache.incoming = batch;
        cache.used_payloads = used;
        cache
    }

    fn ingest_one(
        &self,
        cache: &mut ReaderCache,
        s: ferrodds_rtps::Sample,
        used: &mut Vec<Vec<u8>>,
    ) {
        let size = s.payload.len();
        let (data, decoded_key) = if s.kind == ChangeKind::Alive {
            let mut slot = cache.spare_value();
            match (self.decode)(&s.payload, &mut slot, s.key_hash.is_none()) {
                Some(k) => (slot, k),
                None => {
                    if let Some(v) = slot {
                        cache.recycle_value(v, size);
                    }
                    cache.undecodable += 1;
                    self.released(1);
                    tracing::debug!(writer = ?s.writer_guid, sn = ?s.sequence_number, "undecodable sample dropped");
                    used.push(s.payload);
                    return;
                }
            }
        } else {
            (None, None)
        };
        let key = s
            .key_hash
            .or(decoded_key)
            .or_else(|| {
                if s.kind == ChangeKind::Alive || s.payload.is_empty() {
                    None
                } else {
                    (self.decode_key)(&s.payload)
                }
            })
            .unwrap_or([0; 16]);
        let handle = InstanceHandle(key);
        let state = match s.kind {
            ChangeKind::Alive => InstanceState::Alive,
            ChangeKind::NotAliveDisposed | ChangeKind::NotAliveDisposedUnregistered => {
                InstanceState::NotAliveDisposed
            }
            ChangeKind::NotAliveUnregistered => match cache.instances.get(&handle) {
                Some(InstanceState::NotAliveDisposed) => InstanceState::NotAliveDisposed,
                _ => InstanceState::NotAliveNoWriters,
            },
        };
        cache.set_instance_state(handle, state);
        let info = SampleInfo {
            sample_state: SampleState::NotRead,
            instance_state: state,
            valid_data: data.is_some(),
            source_timestamp: s.source_timestamp,
            instance_handle: handle,
            publication_handle: s.writer_guid,
            sequence_number: s.sequence_number.0,
        };
        if let History::KeepLast(depth) = self.history {
            let depth = depth.max(1) as usize;
            let n = cache
                .samples
                .iter()
                .filter(|c| c.info.instance_handle == handle)
                .count();
            if n >= depth {
                if let Some(pos) = cache
                    .samples
                    .iter()
                    .position(|c| c.info.instance_handle == handle)
                {
                    if let Some(old) = cache.samples.remove(pos) {
                        if let Some(d) = old.data {
                            cache.recycle_value(d, old.size);
                        }
                    }
                    self.released(1);
                }
            }
        }
        cache.samples.push_back(CachedSample { data, info, size });
        // The payload buffer goes back to the engine (no allocation per received sample
        // in steady state).
        used.push(s.payload);
    }

    /// Takes back the samples lent to a `take_each` callback (see
    /// [`ReaderCache::return_lent`]).
    pub(crate) fn return_lent(&self, lent: Vec<CachedSample>) {
        lock(&self.cache).return_lent(lent);
    }

    /// Whether the cache (or the inbox) holds samples not yet read.
    pub(crate) fn has_unread(&self) -> bool {
        if !lock(&self.inbox).samples.is_empty() {
            return true;
        }
        lock(&self.cache)
            .samples
            .iter()
            .any(|c| c.info.sample_state == SampleState::NotRead)
    }

    /// Status kinds changed since they were last read.
    pub(crate) fn changed(&self) -> StatusMask {
        let st = lock(&self.status);
        let mut m = st.changed;
        if st.data_flag || self.has_unread_quick() {
            m = m | StatusMask::DATA_AVAILABLE;
        }
        m
    }

    fn has_unread_quick(&self) -> bool {
        !lock(&self.inbox).samples.is_empty()
    }

    /// Clears DATA_AVAILABLE (after a take/read).
    pub(crate) fn clear_data_flag(&self) {
        let mut st = lock(&self.status);
        st.data_flag = false;
        st.changed = st.changed.without(StatusMask::DATA_AVAILABLE);
    }

    /// Waits until the cache has unread samples or `timeout` passes.
    pub(crate) fn wait_for_data(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            {
                let cache = self.ingest();
                if cache
                    .samples
                    .iter()
                    .any(|c| c.info.sample_state == SampleState::NotRead)
                {
                    return true;
                }
            }
            let mut st = lock(&self.status);
            if st.data_flag {
                st.data_flag = false;
                continue;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            st.waiting += 1;
            st = wait_timeout(
                &self.cv,
                st,
                (deadline - now).min(Duration::from_millis(100)),
            );
            st.waiting -= 1;
            drop(st);
        }
    }

    pub(crate) fn subscription_matched_status(&self) -> SubscriptionMatchedStatus {
        let mut st = lock(&self.status);
        let s = st.matched;
        st.matched.total_count_change = 0;
        st.matched.current_count_change = 0;
        st.changed = st.changed.without(StatusMask::SUBSCRIPTION_MATCHED);
        s
    }

    pub(crate) fn current_matched(&self) -> u32 {
        lock(&self.status).matched.current_count
    }

    pub(crate) fn requested_incompatible_qos_status(&self) -> RequestedIncompatibleQosStatus {
        let mut st = lock(&self.status);
        let s = st.incompatible;
        st.incompatible.total_count_change = 0;
        st.changed = st.changed.without(StatusMask::REQUESTED_INCOMPATIBLE_QOS);
        s
    }

    pub(crate) fn sample_lost_status(&self) -> SampleLostStatus {
        let mut st = lock(&self.status);
        let s = st.lost;
        st.lost.total_count_change = 0;
        st.changed = st.changed.without(StatusMask::SAMPLE_LOST);
        s
    }

    /// Waits until at least `n` writers are matched.
    pub(crate) fn wait_for_matched(&self, n: u32, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = lock(&self.status);
        loop {
            if st.matched.current_count >= n {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            st.waiting += 1;
            st = wait_timeout(&self.cv, st, deadline - now);
            st.waiting -= 1;
        }
    }

    /// Applies an engine event (called with no engine lock held).
    pub(crate) fn on_event(&self, ev: &Event) {
        let listener = self.listener();
        match ev {
            Event::DataAvailable { .. } => {
                // Decode now, unless a listener is about to take (its take decodes them:
                // one pass over the cache instead of two).
                if listener.is_none() {
                    drop(self.ingest());
                }
                let waiting = {
                    let mut st = lock(&self.status);
                    st.data_flag = true;
                    st.changed = st.changed | StatusMask::DATA_AVAILABLE;
                    st.waiting > 0
                };
                // Read under the status lock: a waiter registers before it releases
                // that lock in its wait, so it is either counted or sees data_flag.
                if waiting {
                    self.cv.notify_all();
                }
                self.waiters.notify();
                if let Some(l) = listener {
                    call_listener("on_data_available", || l.on_data_available());
                    // What the listener left is decoded now (the history applies to it,
                    // so that the inbox stays bounded whatever the listener does).
                    if !lock(&self.inbox).samples.is_empty() {
                        drop(self.ingest());
                    }
                }
            }
            Event::SubscriptionMatched {
                remote_writer,
                current_count,
                ..
            } => {
                let s = {
                    let mut st = lock(&self.status);
                    let m = &mut st.matched;
                    m.total_count += 1;
                    m.total_count_change += 1;
                    m.current_count = u32::try_from(*current_count).unwrap_or(u32::MAX);
                    m.current_count_change += 1;
                    m.last_publication_handle = Some(*remote_writer);
                    st.changed = st.changed | StatusMask::SUBSCRIPTION_MATCHED;
                    st.matched
                };
                self.cv.notify_all();
                self.waiters.notify();
                if let Some(l) = listener {
                    call_listener("on_subscription_matched", || l.on_subscription_matched(&s));
                }
            }
            Event::SubscriptionUnmatched {
                remote_writer,
                current_count,
                ..
            } => {
                if *current_count == 0 {
                    self.ingest().no_writers();
                }
                let s = {
                    let mut st = lock(&self.status);
                    let m = &mut st.matched;
                    m.current_count = u32::try_from(*current_count).unwrap_or(u32::MAX);
                    m.current_count_change -= 1;
                    m.last_publication_handle = Some(*remote_writer);
                    st.changed = st.changed | StatusMask::SUBSCRIPTION_MATCHED;
                    st.matched
                };
                self.cv.notify_all();
                self.waiters.notify();
                if let Some(l) = listener {
                    call_listener("on_subscription_matched", || l.on_subscription_matched(&s));
                }
            }
            Event::RequestedIncompatibleQos { policy, .. } => {
                let s = {
                    let mut st = lock(&self.status);
                    st.incompatible.total_count += 1;
                    st.incompatible.total_count_change += 1;
                    st.incompatible.last_policy_id = Some(*policy);
                    st.changed = st.changed | StatusMask::REQUESTED_INCOMPATIBLE_QOS;
                    st.incompatible
                };
                self.cv.notify_all();
                self.waiters.notify();
                if let Some(l) = listener {
                    call_listener("on_requested_incompatible_qos", || {
                        l.on_requested_incompatible_qos(&s)
                    });
                }
            }
            Event::SampleLost { count, .. } => {
                let s = {
                    let mut st = lock(&self.status);
                    st.lost.total_count = st.lost.total_count.saturating_add(*count);
                    st.lost.total_count_change = st
                        .lost
                        .total_count_change
                        .saturating_add(i32::try_from(*count).unwrap_or(i32::MAX));
                    st.changed = st.changed | StatusMask::SAMPLE_LOST;
                    st.lost
                };
                self.waiters.notify();
                if let Some(l) = listener {
                    call_listener("on_sample_lost", || l.on_sample_lost(&s));
                }
            }
            _ => {}
        }
    }
}

#[derive(Default)]
struct WriterStatus {
    changed: StatusMask,
    matched: PublicationMatchedStatus,
    incompatible: OfferedIncompatibleQosStatus,
    resources_gen: u64,
    acked_gen: u64,
}

/// Shared state of one writer.
#[derive(Default)]
pub(crate) struct WriterShared {
    status: Mutex<WriterStatus>,
    cv: Condvar,
    listener: Mutex<Option<Arc<dyn DataWriterListener>>>,
    pub(crate) waiters: Waiters,
}

impl WriterShared {
    pub(crate) fn set_listener(&self, l: Option<Arc<dyn DataWriterListener>>) {
        *lock(&self.listener) = l;
    }

    pub(crate) fn changed(&self) -> StatusMask {
        lock(&self.status).changed
    }

    pub(crate) fn resources_gen(&self) -> u64 {
        lock(&self.status).resources_gen
    }

    pub(crate) fn acked_gen(&self) -> u64 {
        lock(&self.status).acked_gen
    }

    /// Waits (at most `d`) for the resources generation to move past `gen`.
    pub(crate) fn wait_resources(&self, gen: u64, d: Duration) {
        let st = lock(&self.status);
        if st.resources_gen == gen {
            drop(wait_timeout(&self.cv, st, d));
        }
    }

    /// Waits (at most `d`) for the acknowledgement generation to move past `gen`.
    pub(crate) fn wait_acked(&self, gen: u64, d: Duration) {
        let st = lock(&self.status);
        if st.acked_gen == gen {
            drop(wait_timeout(&self.cv, st, d));
        }
    }

    pub(crate) fn publication_matched_status(&self) -> PublicationMatchedStatus {
        let mut st = lock(&self.status);
        let s = st.matched;
        st.matched.total_count_change = 0;
        st.matched.current_count_change = 0;
        st.changed = st.changed.without(StatusMask::PUBLICATION_MATCHED);
        s
    }

    pub(crate) fn current_matched(&self) -> u32 {
        lock(&self.status).matched.current_count
    }

    pub(crate) fn offered_incompatible_qos_status(&self) -> OfferedIncompatibleQosStatus {
        let mut st = lock(&self.status);
        let s = st.incompatible;
        st.incompatible.total_count_change = 0;
        st.changed = st.changed.without(StatusMask::OFFERED_INCOMPATIBLE_QOS);
        s
    }

    /// Waits until at least `n` readers are matched.
    pub(crate) fn wait_for_matched(&self, n: u32, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = lock(&self.status);
        loop {
            if st.matched.current_count >= n {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            st = wait_timeout(&self.cv, st, deadline - now);
        }
    }

    /// Applies an engine event (called with no engine lock held).
    pub(crate) fn on_event(&self, ev: &Event) {
        let listener = lock(&self.listener).clone();
        match ev {
            Event::PublicationMatched {
                remote_reader,
                current_count,
                ..
            } => {
                let s = {
                    let mut st = lock(&self.status);
                    let m = &mut st.matched;
                    m.total_count += 1;
                    m.total_count_change += 1;
                    m.current_count = u32::try_from(*current_count).unwrap_or(u32::MAX);
                    m.current_count_change += 1;
                    m.last_subscription_handle = Some(*remote_reader);
                    st.changed = st.changed | StatusMask::PUBLICATION_MATCHED;
                    st.matched
                };
                self.cv.notify_all();
                self.waiters.notify();
                if let Some(l) = listener {
                    call_listener("on_publication_matched", || l.on_publication_matched(&s));
                }
            }
            Event::PublicationUnmatched {
                remote_reader,
                current_count,
                ..
            } => {
                let s = {
                    let mut st = lock(&self.status);
                    let m = &mut st.matched;
                    m.current_count = u32::try_from(*current_count).unwrap_or(u32::MAX);
                    m.current_count_change -= 1;
                    m.last_subscription_handle = Some(*remote_reader);
                    st.changed = st.changed | StatusMask::PUBLICATION_MATCHED;
                    // an unmatched reader may have been the one holding back acknowledgements
                    st.acked_gen += 1;
                    st.resources_gen += 1;
                    st.matched
                };
                self.cv.notify_all();
                self.waiters.notify();
                if let Some(l) = listener {
                    call_listener("on_publication_matched", || l.on_publication_matched(&s));
                }
            }
            Event::OfferedIncompatibleQos { policy, .. } => {
                let s = {
                    let mut st = lock(&self.status);
                    st.incompatible.total_count += 1;
                    st.incompatible.total_count_change += 1;
                    st.incompatible.last_policy_id = Some(*policy);
                    st.changed = st.changed | StatusMask::OFFERED_INCOMPATIBLE_QOS;
                    st.incompatible
                };
                self.cv.notify_all();
                self.waiters.notify();
                if let Some(l) = listener {
                    call_listener("on_offered_incompatible_qos", || {
                        l.on_offered_incompatible_qos(&s)
                    });
                }
            }
            Event::WriterResourcesAvailable { .. } => {
                lock(&self.status).resources_gen += 1;
                self.cv.notify_all();
            }
            Event::AllAcknowledged { .. } => {
                {
                    let mut st = lock(&self.status);
                    st.acked_gen += 1;
                    st.resources_gen += 1;
                }
                self.cv.notify_all();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrodds_rtps::{EntityId, Guid, GuidPrefix, SequenceNumber};

    /// A toy decoder: payload = [key, value]; anything else is undecodable.
    fn shared(history: History) -> ReaderShared {
        ReaderShared::new(
            history,
            None,
            Box::new(
                |p: &[u8], slot: &mut Option<Box<dyn Any + Send>>, _want_key: bool| match p {
                    [k, v] => {
                        let mut h = [0u8; 16];
                        h[0] = *k;
                        *slot = Some(Box::new(*v));
                        Some(Some(h))
                    }
                    _ => None,
                },
            ),
            Box::new(|p: &[u8]| {
                let mut h = [0u8; 16];
                h[0] = *p.first()?;
                Some(h)
            }),
        )
    }

    fn sample(sn: i64, kind: ChangeKind, payload: &[u8]) -> ferrodds_rtps::Sample {
        ferrodds_rtps::Sample {
            writer_guid: Guid::new(GuidPrefix([1; 12]), EntityId([0, 0, 1, 3])),
            sequence_number: SequenceNumber(sn),
            source_timestamp: None,
            kind,
            key_hash: None,
            payload: payload.to_vec(),
        }
    }

    fn push(r: &ReaderShared, s: ferrodds_rtps::Sample) {
        lock(&r.inbox).samples.push_back(s);
        r.held.fetch_add(1, Ordering::AcqRel);
    }

    fn values(r: &ReaderShared) -> Vec<(u8, Option<u8>, InstanceState)> {
        r.ingest()
            .samples
            .iter()
            .map(|c| {
                (
                    c.info.instance_handle.0[0],
                    c.data
                        .as_ref()
                        .and_then(|d| d.downcast_ref::<u8>())
                        .copied(),
                    c.info.instance_state,
                )
            })
            .collect()
    }

    #[test]
    fn keep_last_applies_per_instance() {
        let r = shared(History::KeepLast(2));
        for (sn, (k, v)) in [(1, 10), (1, 11), (2, 20), (1, 12)].iter().enumerate() {
            push(&r, sample(sn as i64 + 1, ChangeKind::Alive, &[*k, *v]));
        }
        let got: Vec<(u8, Option<u8>)> = values(&r).into_iter().map(|(k, v, _)| (k, v)).collect();
        assert_eq!(got, vec![(1, Some(11)), (2, Some(20)), (1, Some(12))]);
    }

    #[test]
    fn keep_all_keeps_everything_and_drops_undecodable() {
        let r = shared(History::KeepAll);
        push(&r, sample(1, ChangeKind::Alive, &[1, 1]));
        push(&r, sample(2, ChangeKind::Alive, &[1, 2, 3]));
        push(&r, sample(3, ChangeKind::Alive, &[1, 3]));
        assert_eq!(values(&r).len(), 2);
        assert_eq!(r.ingest().undecodable, 1);
        assert!(r.has_unread());
    }

    #[test]
    fn dispose_and_unregister_set_instance_states() {
        let r = shared(History::KeepAll);
        push(&r, sample(1, ChangeKind::Alive, &[4, 1]));
        push(&r, sample(2, ChangeKind::NotAliveDisposed, &[4]));
        push(&r, sample(3, ChangeKind::NotAliveUnregistered, &[4]));
        push(&r, sample(4, ChangeKind::NotAliveUnregistered, &[5]));
        let got = values(&r);
        assert_eq!(
            got,
            vec![
                // the instance's current state, not the one at reception
                (4, Some(1), InstanceState::NotAliveDisposed),
                (4, None, InstanceState::NotAliveDisposed),
                (4, None, InstanceState::NotAliveDisposed),
                (5, None, InstanceState::NotAliveNoWriters),
            ]
        );
        let cache = r.ingest();
        assert!(cache.samples.iter().skip(1).all(|c| !c.info.valid_data));
        assert_eq!(cache.samples[0].info.sequence_number, 1);
    }

    #[test]
    fn instance_state_is_the_current_one_and_no_writers_after_last_unmatch() {
        let r = shared(History::KeepAll);
        push(&r, sample(1, ChangeKind::Alive, &[7, 1]));
        push(&r, sample(2, ChangeKind::Alive, &[8, 1]));
        push(&r, sample(3, ChangeKind::NotAliveDisposed, &[7]));
        let got = values(&r);
        assert_eq!(got[0], (7, Some(1), InstanceState::NotAliveDisposed));
        assert_eq!(got[1], (8, Some(1), InstanceState::Alive));
        r.on_event(&Event::SubscriptionUnmatched {
            reader: test_reader_id(),
            remote_writer: Guid::new(GuidPrefix([2; 12]), EntityId([0, 0, 2, 3])),
            current_count: 0,
        });
        let got = values(&r);
        assert_eq!(
            got[0].2,
            InstanceState::NotAliveDisposed,
            "disposed stays disposed"
        );
        assert_eq!(got[1].2, InstanceState::NotAliveNoWriters);
    }

    #[test]
    fn events_update_statuses_and_wake_waiters() {
        let r = shared(History::KeepAll);
        let g = GuidPrefix([2; 12]);
        let w = Guid::new(g, EntityId([0, 0, 2, 3]));
        let ws = Arc::new(WaitSetSignal::default());
        r.waiters.attach(&ws);
        r.on_event(&Event::SubscriptionMatched {
            reader: test_reader_id(),
            remote_writer: w,
            current_count: 1,
        });
        assert_eq!(*lock(&ws.generation), 1);
        assert!(r.changed().intersects(StatusMask::SUBSCRIPTION_MATCHED));
        assert!(r.wait_for_matched(1, Duration::from_millis(1)));
        let s = r.subscription_matched_status();
        assert_eq!(
            (s.total_count, s.current_count, s.current_count_change),
            (1, 1, 1)
        );
        assert_eq!(s.last_publication_handle, Some(w));
        assert!(!r.changed().intersects(StatusMask::SUBSCRIPTION_MATCHED));
        r.on_event(&Event::SampleLost {
            reader: test_reader_id(),
            count: 3,
        });
        assert_eq!(r.sample_lost_status().total_count, 3);
        assert_eq!(r.sample_lost_status().total_count_change, 0);
        r.waiters.detach(&ws);
        r.on_event(&Event::SampleLost {
            reader: test_reader_id(),
            count: 1,
        });
        assert_eq!(*lock(&ws.generation), 2, "detached wait sets are not woken");
    }

    /// Some reader id (the engine's ids are opaque; any live one will do).
    fn test_reader_id() -> ferrodds_rtps::ReaderId {
        use ferrodds_rtps::{Participant, ParticipantConfig, ReaderAttributes, Timestamp};
        let mut p = Participant::new(ParticipantConfig::default(), Timestamp(0));
        p.create_reader(
            ReaderAttributes {
                topic_name: "t".into(),
                type_name: "T".into(),
                keyed: false,
                qos: ferrodds_rtps::ReaderQos::default(),
            },
            Timestamp(0),
        )
        .expect("reader")
    }

    #[test]
    fn writer_status_generations_advance() {
        let w = WriterShared::default();
        let g0 = w.resources_gen();
        let a0 = w.acked_gen();
        let id = test_writer_id();
        w.on_event(&Event::WriterResourcesAvailable { writer: id });
        assert_eq!(w.resources_gen(), g0 + 1);
        w.on_event(&Event::AllAcknowledged { writer: id });
        assert_eq!(w.acked_gen(), a0 + 1);
        w.on_event(&Event::OfferedIncompatibleQos {
            writer: id,
            remote_reader: Guid::new(GuidPrefix([3; 12]), EntityId([0, 0, 1, 4])),
            policy: ferrodds_rtps::QosPolicyId::Durability,
        });
        let s = w.offered_incompatible_qos_status();
        assert_eq!(s.total_count, 1);
        assert_eq!(
            s.last_policy_id,
            Some(ferrodds_rtps::QosPolicyId::Durability)
        );
        // a wait with an outdated generation returns at once
        let t0 = Instant::now();
        w.wait_resources(g0, Duration::from_secs(5));
        assert!(t0.elapsed() < Duration::from_secs(1));
    }

    fn test_writer_id() -> ferrodds_rtps::WriterId {
        use ferrodds_rtps::{Participant, ParticipantConfig, Timestamp, WriterAttributes};
        let mut p = Participant::new(ParticipantConfig::default(), Timestamp(0));
        p.create_writer(
            WriterAttributes {
                topic_name: "t".into(),
                type_name: "T".into(),
                keyed: false,
                qos: ferrodds_rtps::WriterQos::default(),
            },
            Timestamp(0),
        )
        .expect("writer")
    }
}
