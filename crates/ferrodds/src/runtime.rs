//! The runtime driver: one engine behind one mutex, receive threads, an event thread,
//! transmit draining and event dispatch.
//!
//! Every interaction with the engine goes through [`Inner::with_engine`]: lock, run the
//! operation, drain `poll_transmit` (sending each datagram from the calling thread) and
//! `poll_event` (events as values, routed to their endpoint's shared state), read
//! `poll_timeout`, unlock, then update statuses, wake waiters and call listeners with no
//! engine lock held. Received samples stay in the engine's reader cache until a
//! [`crate::DataReader`] takes them ([`Inner::take_samples`]): the runtime never calls
//! into the API with the engine lock held, and the API never re-enters the engine from a
//! runtime callback.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::io::IoSlice;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ferrodds_rtps::{
    Event, InstanceState, Participant, ReaderId, TakeOutcome, TakenSample, Timestamp, WriterId,
};
use ferrodds_rtps::{GuidPrefix, Locator, Time};
use ferrodds_transport::{MessageHandler, MessageMeta, Transport, TransportKind};

use crate::capture::{CaptureSlot, CaptureTap};
use crate::entity::{ReaderShared, WriterShared};
use crate::qos::FlowController;
use crate::sync::{lock, wait_timeout, Deadline};
use ferrodds_capture::Direction;
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{Expiration, TimerFd, TimerSetTimeFlags};

/// A later timeout re-arms the event thread's timer only when it would fire within this
/// (see `Inner::kick_timer`).
const LAZY_MARGIN_NS: u64 = 50_000;

/// How far ahead a later timeout re-arms the timer at most: below the least retransmission
/// timeout, so that the tail-loss probes of data pushed from now on (at least that far
/// ahead) never need an earlier re-arm.
const LAZY_HORIZON_NS: u64 = ferrodds_rtps::congestion::MIN_RTO - LAZY_MARGIN_NS;

/// Whether a timer armed for `cur` (last armed at `last_armed`) is re-armed for a later
/// timeout at `now`: once it would fire within [`LAZY_MARGIN_NS`], or a horizon after it
/// was last armed (see `Inner::kick_timer`).
fn rearm_later_now(cur: u64, now: u64, last_armed: u64) -> bool {
    cur <= now.saturating_add(LAZY_MARGIN_NS) || now >= last_armed.saturating_add(LAZY_HORIZON_NS)
}

/// When a timer armed for `cur` is re-armed for the engine's timeout `next` at `now`
/// (`None`: left as it is). Earlier: at `next`. Later: at `next`, or [`LAZY_HORIZON_NS`]
/// from now if that is sooner.
fn rearm_at(cur: u64, next: u64, now: u64) -> Option<u64> {
    if next < cur {
        Some(next.max(1))
    } else if next > cur {
        let wake = next.min(now.saturating_add(LAZY_HORIZON_NS));
        (wake > cur).then_some(wake)
    } else {
        None
    }
}

/// An asynchronous writer and its token bucket (bytes).
struct AsyncWriter {
    writer: WriterId,
    fc: FlowController,
    tokens: u64,
    refilled: Instant,
}

impl AsyncWriter {
    fn refill(&mut self, now: Instant) {
        let period = self.fc.period.max(Duration::from_micros(100));
        let elapsed = now.saturating_duration_since(self.refilled);
        let periods = (elapsed.as_nanos() / period.as_nanos()) as u64;
        if periods > 0 {
            self.tokens = self
                .tokens
                .saturating_add(periods.saturating_mul(self.fc.bytes_per_period()))
                .min(self.fc.capacity());
            self.refilled += period * u32::try_from(periods).unwrap_or(u32::MAX);
        }
    }
}

/// The publisher thread's work list (asynchronous writers).
#[derive(Default)]
struct Publisher {
    writers: Vec<AsyncWriter>,
    kicked: bool,
    thread: Option<JoinHandle<()>>,
}

/// Wall-clock time as an RTPS `Time`: read once, when a participant is created, to anchor
/// its source timestamps ([`Inner::wall_time_at`]). Nothing else reads the wall clock: every
/// timer, timeout and engine time is [`Instant`]-based, so a step of the system clock moves
/// neither leases nor reliability nor source timestamps.
fn wall_time() -> Time {
    let ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    time_from_unix_nanos(ns)
}

/// Converts nanoseconds since the Unix epoch into an RTPS `Time` (seconds + 2^-32 fractions).
pub(crate) fn time_from_unix_nanos(ns: i64) -> Time {
    let secs = ns.div_euclid(1_000_000_000);
    let sub = ns.rem_euclid(1_000_000_000) as u64; // < 1e9
    Time {
        seconds: i32::try_from(secs).unwrap_or(i32::MAX),
        fraction: u32::try_from((sub << 32) / 1_000_000_000).unwrap_or(u32::MAX),
    }
}

/// Converts an RTPS `Time` into nanoseconds since the Unix epoch.
pub fn time_to_unix_nanos(t: Time) -> i64 {
    i64::from(t.seconds) * 1_000_000_000 + ((u64::from(t.fraction) * 1_000_000_000) >> 32) as i64
}

/// Hasher for the engine's endpoint handles (small integers, not attacker-chosen): one
/// multiply (Fx-style) instead of SipHash on every received sample's reader lookup.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl IdHasher {
    const K: u64 = 0x517c_c1b7_2722_0a95;

    fn add(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(Self::K);
    }
}

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.add(u64::from(*b));
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
}

/// A map keyed by engine endpoint handles.
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// The readers by engine handle, with the last one looked up kept aside: consecutive
/// DataAvailable events nearly always name the same reader, which is then found without
/// hashing or probing.
#[derive(Default)]
pub(crate) struct Readers {
    map: IdMap<ReaderId, Arc<ReaderShared>>,
    last: Option<(ReaderId, Arc<ReaderShared>)>,
}

impl Readers {
    pub(crate) fn insert(&mut self, id: ReaderId, r: Arc<ReaderShared>) {
        self.last = None;
        self.map.insert(id, r);
    }

    pub(crate) fn remove(&mut self, id: &ReaderId) {
        self.last = None;
        self.map.remove(id);
    }

    pub(crate) fn clear(&mut self) {
        self.last = None;
        self.map.clear();
    }

    pub(crate) fn ids(&self) -> impl Iterator<Item = &ReaderId> {
        self.map.keys()
    }

    #[inline]
    pub(crate) fn get(&mut self, id: &ReaderId) -> Option<&Arc<ReaderShared>> {
        if self.last.as_ref().is_none_or(|(l, _)| l != id) {
            let r = self.map.get(id)?;
            self.last = Some((*id, Arc::clone(r)));
        }
        self.last.as_ref().map(|(_, r)| r)
    }
}

/// What the engine lock protects.
pub(crate) struct EngineState {
    pub(crate) engine: Participant,
    pub(crate) writers: IdMap<WriterId, Arc<WriterShared>>,
    pub(crate) readers: Readers,
    tx_buf: Vec<u8>,
    tx_destinations: Vec<Locator>,
    /// Endpoint events routed so far (see [`Pending`]).
    event_seq: u64,
    /// The latest time read for the engine ([`Clock::last`]).
    last_now: Timestamp,
    /// Shared-memory payloads the engine released, reused for the next ones (a large
    /// sample into shared memory then allocates nothing).
    #[cfg(feature = "shared-memory")]
    pub(crate) spare_chunks: Vec<Box<dyn ferrodds_rtps::SharedPayload>>,
}

/// The engine's clock for one [`Inner::with_engine_tx`] operation: read at most once, and
/// only if the operation needs it.
pub(crate) struct Clock<'a> {
    inner: &'a Inner,
    read: Option<Timestamp>,
    last: Timestamp,
}

impl Clock<'_> {
    /// The time now (read once per operation).
    #[inline]
    pub(crate) fn now(&mut self) -> Timestamp {
        let inner = self.inner;
        *self.read.get_or_insert_with(|| inner.now())
    }

    /// The latest time read for the engine, without reading the clock: for an operation
    /// the engine says uses no time (a sample joining a batch, see
    /// `Participant::batch_join_timestamp`).
    #[inline]
    pub(crate) fn last(&self) -> Timestamp {
        self.read.unwrap_or(self.last)
    }
}

/// A caller-owned transmit buffer for [`Inner::with_engine_tx`] (sized on first use).
#[derive(Default)]
pub(crate) struct TxScratch {
    buf: Vec<u8>,
    dests: Vec<Locator>,
    /// The clear form of `buf`'s datagram, for a capture's decrypted view.
    plain: Vec<u8>,
}

/// What a transport's receiving thread calls for each message: capture, then the engine.
struct RxHandler {
    inner: Arc<Inner>,
    pending: Vec<Pending>,
    tx: TxScratch,
}

impl MessageHandler for RxHandler {
    fn on_message(&mut self, data: &[u8], meta: &MessageMeta) {
        let inner = &*self.inner;
        if inner.is_shut_down() {
            return;
        }
        inner.capture.record(
            None,
            meta.transport,
            meta.src,
            meta.dst,
            data,
            Direction::Inbound,
        );
        let src = Locator::with_ipv4(
            meta.transport.locator_kind(),
            *meta.src.ip(),
            u32::from(meta.src.port()),
        );
        inner.with_engine_tx(&mut self.pending, &mut self.tx, false, |st, clock| {
            st.engine.handle_datagram(clock.now(), Some(src), data);
            if inner.capture.decrypted_view() {
                if let Some(plain) = st.engine.received_plaintext() {
                    inner.capture.record_decrypted(
                        None,
                        meta.transport,
                        meta.src,
                        meta.dst,
                        plain,
                        Direction::Inbound,
                    );
                }
            }
            ((), false)
        });
    }
}

/// Work to do after the engine lock is released.
///
/// An endpoint's events carry their place in the engine's event order (`EngineState::
/// event_seq`, counted under the engine lock): threads dispatch after unlocking, so two
/// threads may apply one endpoint's events in the other order, and a status that events
/// replace (the matched count) keeps the newest.
pub(crate) enum Pending {
    Reader(Arc<ReaderShared>, Event, u64),
    Writer(Arc<WriterShared>, Event, u64),
    Participant(Event),
}

/// State shared by the participant handle, its entities and its threads.
pub(crate) struct Inner {
    pub(crate) domain_id: u32,
    pub(crate) guid_prefix: GuidPrefix,
    pub(crate) participant_id: u32,
    engine: Mutex<EngineState>,
    /// Every transport, and the one serving each locator kind (UDPv4, TCPv4).
    transports: Vec<Arc<dyn Transport>>,
    udp: Option<Arc<dyn Transport>>,
    tcp: Option<Arc<dyn Transport>>,
    tls: Option<Arc<dyn Transport>>,
    shm: Option<Arc<dyn Transport>>,
    origin: Instant,
    /// Wall-clock time at `origin`, nanoseconds since the Unix epoch.
    wall_origin_ns: i64,
    /// Nanoseconds (from `origin`) the event thread will next wake at; `u64::MAX` = idle.
    timer_wake_at: AtomicU64,
    timer: Mutex<bool>,
    /// What the event thread sleeps on: armed for `timer_wake_at`, and re-armed by the
    /// thread that moved the engine's next timeout, without waking it (`kick_timer`).
    timerfd: TimerFd,
    /// When (engine ns) the timer was last armed.
    timer_armed_at: AtomicU64,
    shutdown: AtomicBool,
    multicast: bool,
    /// The user-data multicast locators of `Config::multicast_groups` (group and the
    /// user-data multicast port), which the UDP transport receives on: the groups a
    /// reader may announce as its own (`DataReaderQos::multicast_group`).
    pub(crate) reader_groups: Vec<Locator>,
    /// The loan pool of shared-memory payloads (with shared memory on): large samples for
    /// readers on this host go there, and only a reference through the ring.
    #[cfg(feature = "shared-memory")]
    pub(crate) pool: Option<ferrodds_transport_shm::LoanPool>,
    /// Other participants' pools, for readers that read in place (shared with the engine's
    /// chunk reader).
    #[cfg(feature = "shared-memory")]
    pub(crate) chunks: Option<Arc<crate::chunks::Chunks>>,
    local_addr: Ipv4Addr,
    local_port: u16,
    pub(crate) capture: CaptureSlot,
    discovered: Mutex<HashSet<GuidPrefix>>,
    discovered_cv: Condvar,
    pub(crate) topics: Mutex<HashMap<String, String>>,
    publisher: Mutex<Publisher>,
    publisher_cv: Condvar,
}

impl Inner {
    // One call site (participant creation) passing what it built; a parameter struct would
    // only restate these names.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        domain_id: u32,
        engine: Participant,
        participant_id: u32,
        transports: Vec<Arc<dyn Transport>>,
        origin: Instant,
        multicast: bool,
        max_message_size: usize,
        timerfd: TimerFd,
    ) -> Self {
        let guid_prefix = engine.guid_prefix();
        let first = transports.first();
        let local_addr = first.map_or(Ipv4Addr::LOCALHOST, |t| t.interface().address);
        let local_port = first
            .and_then(|t| t.locators().metatraffic_unicast.first().map(|a| a.port()))
            .unwrap_or(0);
        let of_kind = |k: TransportKind| transports.iter().find(|t| t.kind() == k).cloned();
        let udp = of_kind(TransportKind::Udpv4);
        let tcp = of_kind(TransportKind::Tcpv4);
        let tls = of_kind(TransportKind::Tlsv4);
        let shm = of_kind(TransportKind::Shm);
        Self {
            domain_id,
            guid_prefix,
            participant_id,
            engine: Mutex::new(EngineState {
                engine,
                writers: IdMap::default(),
                readers: Readers::default(),
                tx_buf: vec![0; max_message_size.max(1024)],
                tx_destinations: Vec::with_capacity(8),
                event_seq: 0,
                last_now: Timestamp(0),
                #[cfg(feature = "shared-memory")]
                spare_chunks: Vec::new(),
            }),
            transports,
            udp,
            tcp,
            tls,
            shm,
            origin,
            wall_origin_ns: time_to_unix_nanos(wall_time())
                .saturating_sub(i64::try_from(origin.elapsed().as_nanos()).unwrap_or(0)),
            timer_wake_at: AtomicU64::new(0),
            timer: Mutex::new(false),
            timerfd,
            timer_armed_at: AtomicU64::new(0),
            shutdown: AtomicBool::new(false),
            multicast,
            reader_groups: Vec::new(),
            #[cfg(feature = "shared-memory")]
            pool: None,
            #[cfg(feature = "shared-memory")]
            chunks: None,
            local_addr,
            local_port,
            capture: CaptureSlot::default(),
            discovered: Mutex::new(HashSet::new()),
            discovered_cv: Condvar::new(),
            topics: Mutex::new(HashMap::new()),
            publisher: Mutex::new(Publisher::default()),
            publisher_cv: Condvar::new(),
        }
    }

    /// Registers an asynchronous writer with the publisher thread (started on
    /// first use).
    pub(crate) fn add_async_writer(self: &Arc<Self>, writer: WriterId, fc: FlowController) {
        let mut p = lock(&self.publisher);
        p.writers.push(AsyncWriter {
            writer,
            fc,
            tokens: fc.capacity(),
            refilled: Instant::now(),
        });
        if p.thread.is_none() && !self.is_shut_down() {
            let inner = Arc::clone(self);
            match std::thread::Builder::new()
                .name("ferrodds-publisher".into())
                .spawn(move || inner.publisher_loop())
            {
                Ok(h) => p.thread = Some(h),
                Err(e) => tracing::warn!(error = %e, "publisher thread not started"),
            }
        }
    }

    /// Wakes the publisher thread (new data of an asynchronous writer).
    pub(crate) fn kick_publisher(&self) {
        let mut p = lock(&self.publisher);
        p.kicked = true;
        self.publisher_cv.notify_one();
    }

    /// Body of the publisher thread: sends the new data of asynchronous
    /// writers as their token buckets allow.
    fn publisher_loop(self: &Arc<Self>) {
        let mut pending = Vec::new();
        let mut buf = vec![0u8; 65536];
        let mut dests = Vec::with_capacity(8);
        let mut writers: Vec<AsyncWriter> = Vec::new();
        while !self.is_shut_down() {
            // Take the work list (new registrations included) without
            // holding its lock under the engine lock.
            {
                let mut p = lock(&self.publisher);
                writers.append(&mut p.writers);
            }
            let mut wait = Duration::from_millis(50);
            let (next, now) = {
                let mut st = lock(&self.engine);
                let now = self.now();
                writers.retain(|w| st.writers.contains_key(&w.writer));
                let t = Instant::now();
                for w in &mut writers {
                    w.refill(t);
                    let budget = usize::try_from(w.tokens).unwrap_or(usize::MAX);
                    while let Some(len) = st.engine.poll_transmit_writer(
                        now,
                        w.writer,
                        budget.min(buf.len()),
                        &mut buf,
                        &mut dests,
                    ) {
                        let plain = self.plaintext(&st.engine);
                        self.send_datagram(&buf[..len], &dests, plain);
                        w.tokens = w.tokens.saturating_sub(len as u64);
                        if w.tokens == 0 {
                            break;
                        }
                    }
                    if st.engine.pending_bytes(w.writer) > 0 {
                        wait = wait.min(w.fc.period);
                        // Budget left but congestion control holds the
                        // data back: retry when it lets data go.
                        if let Some(t) = st.engine.pacing_resume_at().filter(|_| w.tokens > 0) {
                            wait = wait.min(Duration::from_nanos(t.0.saturating_sub(now.0)));
                        }
                    }
                }
                self.drain_locked(&mut st, now, &mut pending);
                (st.engine.poll_timeout(), now)
            };
            self.kick_timer(next, now);
            self.dispatch(&mut pending);
            let mut p = lock(&self.publisher);
            if !p.kicked && p.writers.is_empty() {
                p = wait_timeout(&self.publisher_cv, p, wait);
            }
            p.kicked = false;
        }
    }

    /// Monotonic engine time.
    pub(crate) fn now(&self) -> Timestamp {
        // Seconds and nanoseconds combined in u64 (no u128 `as_nanos`); saturates like
        // before (after ~584 years).
        let d = self.origin.elapsed();
        Timestamp(
            d.as_secs()
                .saturating_mul(1_000_000_000)
                .saturating_add(u64::from(d.subsec_nanos())),
        )
    }

    /// The wall-clock time of engine time `now`: the monotonic clock anchored to the
    /// wall clock at participant creation (one clock read per write instead of two).
    pub(crate) fn wall_time_at(&self, now: Timestamp) -> Time {
        time_from_unix_nanos(
            self.wall_origin_ns
                .saturating_add(i64::try_from(now.0).unwrap_or(i64::MAX)),
        )
    }

    #[inline]
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Runs `f` on the engine, then drains transmits and events and dispatches them after
    /// unlocking. `pending` is a caller-owned scratch vector (reused to avoid allocation).
    pub(crate) fn with_engine<R>(
        &self,
        pending: &mut Vec<Pending>,
        f: impl FnOnce(&mut EngineState, Timestamp) -> R,
    ) -> R {
        let (r, next, now) = {
            let mut st = lock(&self.engine);
            let now = self.now();
            st.last_now = now;
            let r = f(&mut st, now);
            self.drain_locked(&mut st, now, pending);
            (r, st.engine.poll_timeout(), now)
        };
        self.kick_timer(next, now);
        self.dispatch(pending);
        r
    }

    /// Like [`Inner::with_engine`], but the first datagram the operation produces is
    /// built in the caller's `tx` buffer and sent after the engine lock is released
    /// (the hot paths: a write, a received datagram). A sender preempted by the
    /// receiver it just woke — the rule on a single CPU — then holds no lock the
    /// receiving side needs. Further datagrams of the same operation (fragments) are
    /// sent in order under the lock. `f` returns its result and whether the operation
    /// provably produced nothing to send and left the timeout unchanged (a sample queued
    /// into a batch already started); then draining is skipped. `f` reads the clock
    /// through its [`Clock`]: read before `f` runs, or with `lazy` only if `f` or the
    /// draining needs it.
    pub(crate) fn with_engine_tx<R>(
        &self,
        pending: &mut Vec<Pending>,
        tx: &mut TxScratch,
        lazy: bool,
        f: impl FnOnce(&mut EngineState, &mut Clock<'_>) -> (R, bool),
    ) -> R {
        let (r, next, first, now) = {
            let mut st = lock(&self.engine);
            let mut clock = Clock {
                inner: self,
                read: (!lazy).then(|| self.now()),
                last: st.last_now,
            };
            let (r, quiet) = f(&mut st, &mut clock);
            if quiet {
                if let Some(t) = clock.read {
                    st.last_now = t;
                }
                return r;
            }
            let now = clock.now();
            st.last_now = now;
            if tx.buf.len() < st.tx_buf.len() {
                tx.buf.resize(st.tx_buf.len(), 0);
            }
            self.drain_events(&mut st, pending);
            let EngineState {
                engine,
                tx_buf,
                tx_destinations,
                ..
            } = &mut *st;
            let mut first = engine
                .poll_transmit_into(now, &mut tx.buf, &mut tx.dests)
                .map(|l| l.min(tx.buf.len()));
            let mut first_plain = false;
            if first.is_some() && self.capture.decrypted_view() {
                if let Some(p) = engine.sent_plaintext() {
                    tx.plain.clear();
                    tx.plain.extend_from_slice(p);
                    first_plain = true;
                }
            }
            if first.is_some() {
                while let Some(len) = engine.poll_transmit_into(now, tx_buf, tx_destinations) {
                    if let Some(l) = first.take() {
                        let plain = first_plain.then_some(&tx.plain[..]);
                        self.send_datagram(&tx.buf[..l], &tx.dests, plain);
                    }
                    let len = len.min(tx_buf.len());
                    let plain = self.plaintext(engine);
                    self.send_datagram(&tx_buf[..len], tx_destinations, plain);
                }
            }
            self.drain_events(&mut st, pending);
            (
                r,
                st.engine.poll_timeout(),
                first.map(|l| (l, first_plain)),
                now,
            )
        };
        if let Some((len, first_plain)) = first {
            let plain = first_plain.then_some(&tx.plain[..]);
            self.send_datagram(&tx.buf[..len], &tx.dests, plain);
        }
        self.kick_timer(next, now);
        self.dispatch(pending);
        r
    }

    /// Runs a read-only query on the engine (no draining).
    pub(crate) fn query<R>(&self, f: impl FnOnce(&EngineState) -> R) -> R {
        let st = lock(&self.engine);
        f(&st)
    }

    /// A reader's take: moves at most `max` samples out of the engine's reader cache to
    /// `out` and gives the payload buffers in `recycled` back, under one engine lock.
    /// When the cache is left empty the reader's DATA_AVAILABLE flag is cleared under
    /// that lock (a delivery after it, or an earlier delivery's event dispatched after
    /// it, sets the flag again). A take that makes room in a full KEEP_ALL reader reports
    /// `transmit_due`: the caller then calls [`Inner::flush`] once it holds no lock of
    /// its own (sending the acknowledgements the reader held back may produce events).
    /// Unless `in_place`, samples a reader reading in place holds by reference are turned
    /// into bytes first (which also makes acknowledgements due).
    #[inline]
    pub(crate) fn take_samples(
        &self,
        id: ReaderId,
        max: usize,
        out: &mut Vec<TakenSample>,
        recycled: &mut Vec<Vec<u8>>,
        shared: &ReaderShared,
        in_place: bool,
    ) -> TakeOutcome {
        let mut st = lock(&self.engine);
        let resolved = !in_place && self.resolve_references(&mut st.engine, id);
        let mut t = st.engine.take_samples(id, max, out, recycled);
        if t.left == 0 {
            shared.clear_data_flag();
        }
        t.transmit_due |= resolved;
        t
    }

    /// Turns the samples reader `id` holds by reference (it reads in place) into bytes,
    /// for a take or read that wants bytes; true when acknowledgements became due.
    fn resolve_references(&self, engine: &mut Participant, id: ReaderId) -> bool {
        #[cfg(feature = "shared-memory")]
        if let Some(c) = &self.chunks {
            return engine
                .resolve_references(id, |reference, out| c.copy(reference, usize::MAX, out));
        }
        let _ = (engine, id);
        false
    }

    /// Releases samples a reader read in place (see
    /// [`Participant::release_references`]), then sends the acknowledgements that
    /// became due.
    pub(crate) fn release_references(
        &self,
        id: ReaderId,
        taken: &mut Vec<(ferrodds_rtps::Guid, ferrodds_rtps::SequenceNumber)>,
    ) {
        if taken.is_empty() {
            return;
        }
        let due = lock(&self.engine)
            .engine
            .release_references(id, taken.drain(..));
        if due {
            self.flush();
        }
    }

    /// Sets whether reader `id` reads by reference in place
    /// ([`Participant::set_reader_in_place`]).
    pub(crate) fn set_reader_in_place(&self, id: ReaderId, on: bool) {
        let mut st = lock(&self.engine);
        st.engine.set_reader_in_place(id, on);
        if !on && self.resolve_references(&mut st.engine, id) {
            drop(st);
            self.flush();
        }
    }

    /// Sends what the engine has to send and dispatches its events (after an operation
    /// that made work due outside [`Inner::with_engine`]).
    #[inline(never)]
    pub(crate) fn flush(&self) {
        let mut pending = Vec::new();
        self.with_engine(&mut pending, |_, _| {});
    }

    /// A reader's read: visits at most `max` samples of the engine's reader cache,
    /// leaving them there and marking them read (`f` runs under the engine lock: it only
    /// copies), then clears the reader's DATA_AVAILABLE flag. Returns whether
    /// acknowledgements became due (samples held by reference were turned into bytes).
    pub(crate) fn read_samples(
        &self,
        id: ReaderId,
        max: usize,
        shared: &ReaderShared,
        f: impl FnMut(&ferrodds_rtps::Sample, InstanceState, bool),
    ) -> bool {
        let mut st = lock(&self.engine);
        let resolved = self.resolve_references(&mut st.engine, id);
        st.engine.read_samples(id, max, f);
        shared.clear_data_flag();
        resolved
    }

    /// Whether a reader's cache holds samples not read yet.
    pub(crate) fn reader_has_unread(&self, id: ReaderId) -> bool {
        lock(&self.engine).engine.reader_has_unread(id)
    }

    /// Samples in a reader's cache.
    pub(crate) fn reader_sample_count(&self, id: ReaderId) -> usize {
        lock(&self.engine).engine.reader_sample_count(id)
    }

    fn drain_locked(&self, st: &mut EngineState, now: Timestamp, pending: &mut Vec<Pending>) {
        self.drain_events(st, pending);
        let EngineState {
            engine,
            tx_buf,
            tx_destinations,
            ..
        } = st;
        while let Some(len) = engine.poll_transmit_into(now, tx_buf, tx_destinations) {
            let len = len.min(tx_buf.len());
            let plain = self.plaintext(engine);
            self.send_datagram(&tx_buf[..len], tx_destinations, plain);
        }
        self.drain_events(st, pending);
    }

    /// Moves every queued engine event to `pending`, routed to its endpoint. Inlined: most
    /// calls find no event, and then cost one queue check instead of a call into
    /// [`Inner::route_event`]'s large frame.
    #[inline]
    fn drain_events(&self, st: &mut EngineState, pending: &mut Vec<Pending>) {
        while let Some(ev) = st.engine.poll_event() {
            self.route_event(st, ev, pending);
        }
    }

    /// Routes one engine event (see [`Inner::drain_events`]).
    #[inline(never)]
    fn route_event(&self, st: &mut EngineState, ev: Event, pending: &mut Vec<Pending>) {
        let EngineState {
            engine,
            writers,
            readers,
            event_seq,
            ..
        } = st;
        *event_seq += 1;
        let seq = *event_seq;
        match &ev {
            Event::DataAvailable { reader } => {
                if let Some(r) = readers.get(reader) {
                    pending.push(Pending::Reader(Arc::clone(r), ev, seq));
                } else {
                    // A reader being deleted: nobody will take these.
                    while engine.take_sample(*reader).is_some() {}
                }
            }
            Event::SubscriptionMatched { reader, .. }
            | Event::SubscriptionUnmatched { reader, .. }
            | Event::RequestedIncompatibleQos { reader, .. }
            | Event::SampleLost { reader, .. } => {
                if let Some(r) = readers.get(reader) {
                    pending.push(Pending::Reader(Arc::clone(r), ev, seq));
                }
            }
            Event::PublicationMatched { writer, .. }
            | Event::PublicationUnmatched { writer, .. }
            | Event::OfferedIncompatibleQos { writer, .. }
            | Event::WriterResourcesAvailable { writer }
            | Event::AllAcknowledged { writer } => {
                if let Some(w) = writers.get(writer) {
                    pending.push(Pending::Writer(Arc::clone(w), ev, seq));
                }
            }
            Event::ParticipantAuthenticationFailed { prefix } => {
                // Logged here, where the engine that keeps the reason is at hand.
                let reason = engine
                    .authentication_failures()
                    .filter(|(p, _)| p == prefix)
                    .last()
                    .map_or("", |(_, r)| r);
                tracing::warn!(?prefix, %reason, "participant authentication failed");
            }
            // The set of discovered participants changes here, under the engine lock, in the
            // engine's order (two threads dispatching after unlocking could apply a participant's
            // discovery and loss the other way round); it calls no user code.
            Event::ParticipantDiscovered { .. } | Event::ParticipantLost { .. } => {
                self.on_participant_event(&ev);
            }
            _ => pending.push(Pending::Participant(ev)),
        }
    }

    fn dispatch(&self, pending: &mut Vec<Pending>) {
        if pending.is_empty() {
            return;
        }
        // By reference, then cleared (cheaper than a draining iterator; the scratch
        // vector is the caller's, and a listener's own engine calls use their own).
        for p in pending.iter() {
            match p {
                Pending::Reader(r, ev, seq) => r.on_event(ev, *seq),
                Pending::Writer(w, ev, seq) => w.on_event(ev, *seq),
                Pending::Participant(ev) => self.on_participant_event(ev),
            }
        }
        pending.clear();
    }

    fn on_participant_event(&self, ev: &Event) {
        match ev {
            Event::ParticipantDiscovered { prefix } => {
                tracing::debug!(?prefix, "participant discovered");
                lock(&self.discovered).insert(*prefix);
                self.discovered_cv.notify_all();
            }
            Event::ParticipantLost { prefix } => {
                tracing::debug!(?prefix, "participant lost");
                lock(&self.discovered).remove(prefix);
                self.discovered_cv.notify_all();
            }
            Event::ParticipantAuthenticated { prefix } => {
                tracing::debug!(?prefix, "participant authenticated");
            }
            other => tracing::trace!(?other, "unhandled engine event"),
        }
    }

    /// The last DDS Security authentication failures, oldest first.
    pub(crate) fn authentication_failures(&self) -> Vec<String> {
        lock(&self.engine)
            .engine
            .authentication_failures()
            .map(|(prefix, reason)| format!("{prefix:?}: {reason}"))
            .collect()
    }

    pub(crate) fn discovered_participants(&self) -> Vec<GuidPrefix> {
        lock(&self.discovered).iter().copied().collect()
    }

    /// Waits until at least `n` remote participants are known.
    pub(crate) fn wait_for_participants(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Deadline::after(timeout);
        let mut g = lock(&self.discovered);
        loop {
            if g.len() >= n {
                return true;
            }
            let Some(left) = deadline.remaining() else {
                return false;
            };
            if self.is_shut_down() {
                return false;
            }
            g = wait_timeout(&self.discovered_cv, g, left);
        }
    }

    /// The clear form of the datagram `engine` just returned, when a capture records the
    /// decrypted view and the datagram was protected.
    #[inline]
    fn plaintext<'e>(&self, engine: &'e Participant) -> Option<&'e [u8]> {
        if self.capture.decrypted_view() {
            engine.sent_plaintext()
        } else {
            None
        }
    }

    /// Sends `bytes` to each destination and records it in the capture (with its clear form
    /// `plain` beside it, for the decrypted view).
    fn send_datagram(&self, bytes: &[u8], destinations: &[Locator], plain: Option<&[u8]>) {
        for d in destinations {
            let transport = match TransportKind::from_locator_kind(d.kind) {
                Some(TransportKind::Udpv4) => &self.udp,
                Some(TransportKind::Tcpv4) => &self.tcp,
                Some(TransportKind::Tlsv4) => &self.tls,
                Some(TransportKind::Shm) => &self.shm,
                None => continue,
            };
            let (Some(t), Some(dst)) = (transport, d.ipv4_destination()) else {
                continue;
            };
            if dst.ip().is_multicast() && !self.multicast {
                continue;
            }
            let ts = self.capture.is_on().then(crate::capture::now_ns);
            if let Err(e) = t.send(dst, &[IoSlice::new(bytes)]) {
                tracing::debug!(%dst, error = %e, "send failed");
                continue;
            }
            if let Some(ts) = ts {
                self.capture_outbound(ts, t.as_ref(), dst, bytes, plain);
            }
        }
    }

    /// Records a sent message in the capture, if one is running, with the addresses it
    /// really travelled between.
    #[inline]
    fn capture_outbound(
        &self,
        ts: u64,
        t: &dyn Transport,
        dst: SocketAddrV4,
        bytes: &[u8],
        plain: Option<&[u8]>,
    ) {
        let (src, dst) = t
            .send_addresses(dst)
            .unwrap_or((SocketAddrV4::new(self.local_addr, self.local_port), dst));
        self.capture
            .record(Some(ts), t.kind(), src, dst, bytes, Direction::Outbound);
        if let Some(p) = plain {
            self.capture
                .record_decrypted(Some(ts), t.kind(), src, dst, p, Direction::Outbound);
        }
    }

    /// The name of the interface the participant runs on.
    pub(crate) fn interface_name(&self) -> String {
        self.transports
            .first()
            .map_or_else(String::new, |t| t.interface().name.clone())
    }

    /// The transports the participant runs.
    pub(crate) fn transport_kinds(&self) -> Vec<TransportKind> {
        self.transports.iter().map(|t| t.kind()).collect()
    }

    /// Installs a capture (fails when one is running).
    pub(crate) fn install_capture(&self, tap: CaptureTap) -> Result<(), CaptureTap> {
        let decrypted = tap.decrypted_view;
        self.capture.install(tap)?;
        if decrypted {
            lock(&self.engine).engine.set_keep_plaintext(true);
        }
        Ok(())
    }

    /// Stops the running capture, if any (the engine stops keeping plaintext for it).
    pub(crate) fn remove_capture(&self) -> Option<crate::capture::CaptureStats> {
        let st = self.capture.remove();
        lock(&self.engine).engine.set_keep_plaintext(false);
        st
    }

    /// The counters of each transport.
    pub(crate) fn transport_stats(
        &self,
    ) -> Vec<(TransportKind, ferrodds_transport::TransportStats)> {
        self.transports
            .iter()
            .map(|t| (t.kind(), t.stats()))
            .collect()
    }

    pub(crate) fn security_errors(&self) -> Vec<String> {
        self.transports
            .iter()
            .flat_map(|t| t.security_errors())
            .collect()
    }

    /// Tells the event thread that the engine's next timeout moved: re-arms its timer when it
    /// sleeps (no wake-up), or has it look again when it is working. Earlier: at once. Later
    /// (an acknowledgement cancelled a tail-loss probe): once the timer would fire within
    /// [`LAZY_MARGIN_NS`] or was last armed [`LAZY_HORIZON_NS`] ago, and at most that far
    /// ahead. A flow of samples and acknowledgements thus re-arms it about once per least
    /// retransmission timeout instead of after every datagram (each re-arm is a system
    /// call, a costly one in a VM), and it does not wake for probes no longer due. `now` is
    /// the engine time of the operation that moved the timeout (read when it took the engine
    /// lock: a little early, which only makes the timer wake earlier, never later; one clock
    /// read less per datagram).
    fn kick_timer(&self, next: Option<Timestamp>, now: Timestamp) {
        let Some(next) = next else {
            return;
        };
        let now = now.0;
        let cur = self.timer_wake_at.load(Ordering::Acquire);
        if cur != 0 && next.0 >= cur {
            if next.0 == cur {
                return;
            }
            let last = self.timer_armed_at.load(Ordering::Relaxed);
            if !rearm_later_now(cur, now, last) {
                return;
            }
        }
        let mut kicked = lock(&self.timer);
        let cur = self.timer_wake_at.load(Ordering::Acquire);
        if cur == 0 {
            // Working: it looks at the engine again before it sleeps.
            *kicked = true;
        } else if let Some(wake) = rearm_at(cur, next.0, now) {
            self.timer_wake_at.store(wake, Ordering::Release);
            self.arm_timer(wake);
        }
    }

    /// Arms the event thread's timer for `wake_ns` (engine time; in the past: at once).
    fn arm_timer(&self, wake_ns: u64) {
        let now = self.now().0;
        self.timer_armed_at.store(now, Ordering::Relaxed);
        let d = Duration::from_nanos(wake_ns.saturating_sub(now).max(1));
        if let Err(e) = self.timerfd.set(
            Expiration::OneShot(TimeSpec::from_duration(d)),
            TimerSetTimeFlags::empty(),
        ) {
            tracing::warn!(error = %e, "event timer not armed");
        }
    }

    /// Body of the event thread: sleeps until the engine's `poll_timeout` (on its timerfd,
    /// which other threads re-arm: `kick_timer`) and calls `handle_timeout`.
    pub(crate) fn event_loop(self: &Arc<Self>) {
        let mut pending = Vec::new();
        while !self.is_shut_down() {
            // 0 = "processing": every kick is recorded until we go back to sleep.
            self.timer_wake_at.store(0, Ordering::Release);
            let next = {
                let mut st = lock(&self.engine);
                let now = self.now();
                if st.engine.poll_timeout().is_some_and(|t| t <= now) {
                    st.engine.handle_timeout(now);
                }
                self.drain_locked(&mut st, now, &mut pending);
                st.engine.poll_timeout()
            };
            self.dispatch(&mut pending);
            let wake_ns = next.map_or(u64::MAX, |t| t.0.max(1));
            let now = self.now().0;
            if wake_ns <= now {
                // Still due right after handle_timeout: do not spin on a timer the engine
                // cannot serve yet.
                std::thread::sleep(Duration::from_micros(100));
            }
            {
                let mut kicked = lock(&self.timer);
                if std::mem::take(&mut *kicked) {
                    continue;
                }
                if self.is_shut_down() {
                    break;
                }
                // Capped: a timer lost anyhow costs at most this long.
                let wake = wake_ns.min(now.saturating_add(200_000_000)).max(1);
                self.timer_wake_at.store(wake, Ordering::Release);
                self.arm_timer(wake);
            }
            if let Err(e) = self.timerfd.wait() {
                // (EINTR: a signal; the loop looks at the engine again.)
                tracing::debug!(error = %e, "event timer wait");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    /// Starts every transport's receiving threads (each calls an [`RxHandler`] of its own)
    /// and the event thread.
    pub(crate) fn start_threads(self: &Arc<Self>) -> Result<Vec<JoinHandle<()>>, std::io::Error> {
        let mut handles = Vec::new();
        for t in &self.transports {
            let inner = Arc::clone(self);
            let factory: ferrodds_transport::HandlerFactory = Arc::new(move || {
                Box::new(RxHandler {
                    inner: Arc::clone(&inner),
                    pending: Vec::new(),
                    tx: TxScratch::default(),
                })
            });
            handles.extend(t.start(factory)?);
        }
        let inner = Arc::clone(self);
        handles.push(
            std::thread::Builder::new()
                .name("ferrodds-timer".into())
                .spawn(move || inner.event_loop())?,
        );
        Ok(handles)
    }

    /// Deletes every endpoint (so the engine announces the disposals), flushes what that
    /// produced, then stops the threads' sources of work.
    pub(crate) fn shutdown(&self) {
        if self.shutdown.load(Ordering::Acquire) {
            return;
        }
        {
            let mut pending = Vec::new();
            let mut st = lock(&self.engine);
            let now = self.now();
            let writers: Vec<WriterId> = st.writers.keys().copied().collect();
            let readers: Vec<ReaderId> = st.readers.ids().copied().collect();
            for w in writers {
                let _ = st.engine.delete_writer(w, now);
            }
            for r in readers {
                let _ = st.engine.delete_reader(r, now);
            }
            st.engine.announce_leave();
            st.writers.clear();
            st.readers.clear();
            self.drain_locked(&mut st, now, &mut pending);
            self.shutdown.store(true, Ordering::Release);
        }
        for t in &self.transports {
            t.shutdown();
        }
        {
            let mut kicked = lock(&self.timer);
            *kicked = true;
            // Wakes the event thread at once: it sees the shutdown.
            self.arm_timer(0);
        }
        self.discovered_cv.notify_all();
        let publisher = {
            let mut p = lock(&self.publisher);
            p.kicked = true;
            self.publisher_cv.notify_all();
            p.thread.take()
        };
        if let Some(h) = publisher {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }

    /// Writes out the capture file (call after the runtime threads are joined).
    pub(crate) fn finish_capture(&self) {
        let _ = self.remove_capture();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The event thread's timer: earlier timeouts re-arm it at once; later ones only near
    /// its time or a horizon after the last arming, and at most that far ahead, so that the
    /// probes of data pushed later (at least the least retransmission timeout ahead) need no
    /// earlier re-arm.
    #[test]
    fn the_timer_is_re_armed_lazily_for_later_timeouts() {
        const MS: u64 = 1_000_000;
        let h = LAZY_HORIZON_NS;
        // Earlier: at once.
        assert_eq!(rearm_at(10 * MS, 5 * MS, 4 * MS), Some(5 * MS));
        // Later: at most the horizon ahead.
        let now = 10 * MS - 20_000;
        assert_eq!(rearm_at(10 * MS, 3_000 * MS, now), Some(now + h));
        assert_eq!(rearm_at(10 * MS, 10 * MS + 100, now), Some(10 * MS + 100));
        // The same time: nothing.
        assert_eq!(rearm_at(10 * MS, 10 * MS, 9 * MS), None);
        // A later timeout waits while the timer is far and was armed recently...
        assert!(!rearm_later_now(
            10 * MS,
            9 * MS + 500_000,
            9 * MS + 400_000
        ));
        // ...not near its time...
        assert!(rearm_later_now(
            10 * MS,
            10 * MS - LAZY_MARGIN_NS,
            9 * MS + 900_000
        ));
        // ...nor a horizon after the last arming (a flow slower than that).
        assert!(rearm_later_now(
            10 * MS,
            9 * MS + 100_000,
            9 * MS + 100_000 - h
        ));
        // A probe of data pushed after a lazy re-arm never falls before it.
        for t in (0..5 * MS).step_by(7_919) {
            let wake = rearm_at(t + 1, u64::MAX, t).unwrap();
            assert!(t + ferrodds_rtps::congestion::MIN_RTO >= wake, "t {t}");
        }
    }

    #[test]
    fn time_conversions_round_trip() {
        let t = time_from_unix_nanos(1_500_000_000);
        assert_eq!(t.seconds, 1);
        assert_eq!(t.fraction, 1 << 31);
        for ns in [0i64, 1, 999_999_999, 1_700_000_000_123_456_789] {
            let back = time_to_unix_nanos(time_from_unix_nanos(ns));
            assert!((back - ns).abs() <= 1, "{ns} -> {back}");
        }
    }

    #[test]
    fn wall_time_is_recent() {
        let t = wall_time();
        // after 2020-01-01 and before 2100
        assert!(t.seconds > 1_577_836_800, "{t:?}");
        assert!(t.seconds < i32::MAX);
    }
}
