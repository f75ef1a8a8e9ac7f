//! The test logic, written once against [`Transport`]: start-up handshake, initial
//! burst, publisher loop with pings, subscriber counting and echoing, end-of-test
//! protocol and result printing (spec 1).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::error::PerftestError;
use crate::message::TestMessage;
use crate::options::{
    BatchingState, Options, RateMethod, CONTROL_INSTANCE, FINISHED_SIZE, INITIALIZE_SIZE,
    LENGTH_CHANGED_SIZE, OVERHEAD_BYTES,
};
use crate::output::{write_latency_file, CpuMonitor, Printer};
use crate::stats::{one_way_latency, split_timestamp, LatencyStats, ThroughputStats};
use crate::system;
use crate::transport::{OnMessage, Reader, TopicKind, Transport, Writer};

/// Set by Ctrl-C (or a fatal error): every loop stops and the summary of what was
/// measured is printed.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// Whether a stop was requested.
pub fn stopping() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Microseconds on the process's monotonic clock.
pub fn clock_us() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_micros() as u64
}

/// How long the publisher waits for its initial burst to be acknowledged at most.
/// Latency values allocated (and touched) before a run, so that recording the first ones
/// neither allocates nor faults pages in: 1 Mi (4 MiB) in the full build, 16 Ki (64 KiB)
/// in the micro build, whose footprint is the point (later values grow the vector).
const LATENCY_PREALLOC: usize = if cfg!(feature = "micro") {
    1 << 14
} else {
    1 << 20
};

const INITIAL_BURST_ACK_WAIT: Duration = Duration::from_secs(60);
/// How long a reliable latency ping waits for its pong at most (a 10 MB ping over a
/// 10 Mbit/s link takes 8 s; a pong that does not come means the subscriber went away).
const RELIABLE_PONG_WAIT: Duration = Duration::from_secs(30);

/// Waits until `writer`'s samples are acknowledged, at most `limit`, returning early on a stop
/// request.
fn wait_for_acks_interruptible(
    writer: &mut dyn Writer,
    limit: Duration,
) -> Result<(), PerftestError> {
    const STEP: Duration = Duration::from_millis(250);
    let start = Instant::now();
    while !stopping() && start.elapsed() < limit {
        if writer.wait_for_acks(STEP)? {
            break;
        }
    }
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking thread must not hide the results of the others.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Everything a test run needs besides the transport.
#[derive(Debug)]
pub struct RunContext {
    /// Parsed options.
    pub opts: Options,
    /// Batching decision.
    pub batching: BatchingState,
    /// Result printer (shared with receive threads).
    pub printer: Arc<Mutex<Printer>>,
}

fn progress(s: &str) {
    eprintln!("{s}");
}

/// Prints the DDS Security failures not printed yet: a run whose peers never match says why.
fn print_security_failures(transport: &dyn Transport, printed: &mut Vec<String>) {
    for f in transport.security_failures() {
        if !printed.contains(&f) {
            progress(&format!("DDS Security: {f}"));
            printed.push(f);
        }
    }
}

/// Waits until `cond` holds, polling every 10 ms; false if a stop was requested.
fn wait_until(mut cond: impl FnMut() -> bool) -> bool {
    loop {
        if cond() {
            return true;
        }
        if stopping() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A reader delivering to a callback: through a listener on the middleware's receive
/// thread, or polled by a harness thread (`-useReadThread`, raw sockets).
enum ReaderTask {
    Thread(std::thread::JoinHandle<Result<(), PerftestError>>),
    Listener(Box<dyn Reader>),
}

/// `-threadCPUAffinity` / `-threadPriorities` once more after discovery: the threads
/// FerroDDS started for the connections made meanwhile (TCP, TLS) get their parts too.
fn reapply_thread_settings(opts: &Options) -> Result<(), PerftestError> {
    if opts.raw {
        return Ok(());
    }
    system::apply_to_middleware_threads(opts.thread_cpu_affinity.as_ref(), opts.thread_priorities)
        .map(|_| ())
}

fn spawn_reader(
    name: &str,
    opts: &Options,
    mut reader: Box<dyn Reader>,
    done: Arc<AtomicBool>,
    on_msg: impl FnMut(&TestMessage) + Send + 'static,
) -> Result<ReaderTask, PerftestError> {
    let mut on_msg: OnMessage = Box::new(on_msg);
    if !opts.use_read_thread {
        match reader.listen(on_msg)? {
            None => return Ok(ReaderTask::Listener(reader)),
            Some(f) => on_msg = f,
        }
    }
    let affinity = opts.thread_cpu_affinity.as_ref().map(|a| a.receive.clone());
    let priority = opts.thread_priorities.map(|p| p.receive);
    let h = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            if let Some(cores) = affinity {
                system::pin_current_thread(&cores)?;
            }
            if let Some(p) = priority {
                system::set_current_thread_priority(p)?;
            }
            while !done.load(Ordering::Relaxed) {
                reader.receive(Duration::from_millis(50), &mut *on_msg)?;
            }
            Ok(())
        })
        .map_err(PerftestError::io("spawning a receive thread"))?;
    Ok(ReaderTask::Thread(h))
}

fn join(t: ReaderTask) -> Result<(), PerftestError> {
    match t {
        ReaderTask::Thread(h) => match h.join() {
            Ok(r) => r,
            Err(_) => Err(PerftestError::NotAvailable("a receive thread panicked")),
        },
        ReaderTask::Listener(mut r) => {
            r.unlisten();
            Ok(())
        }
    }
}

// ------------------------------------------------------------------------------------
// Publisher
// ------------------------------------------------------------------------------------

#[derive(Default)]
struct Announcements {
    initialized: BTreeSet<i32>,
    finished: BTreeSet<i32>,
    length_changed: BTreeSet<i32>,
    /// The publisher started sending: a FINISHED from now on ends the test for that
    /// subscriber; before, it comes from a subscriber of an earlier test on its way out
    /// (scripts start the next test while it still confirms the last one), which is then
    /// not counted as ready.
    started: bool,
}

struct LatencyState {
    stats: LatencyStats,
    current: Option<u64>,
    skew: u64,
    overflow_reported: bool,
    cpu: Option<CpuMonitor>,
    last_pong_seq: Option<u32>,
}

/// Paces writes for `-pubRate`, `-sleep` and `-spin`.
struct Pacer {
    rate: Option<(Duration, RateMethod)>,
    start: Instant,
    sleep: Duration,
    spin: u64,
}

impl Pacer {
    fn new(opts: &Options) -> Self {
        Pacer {
            rate: opts
                .pub_rate
                .map(|r| (Duration::from_nanos(1_000_000_000 / r.rate), r.method)),
            start: Instant::now(),
            sleep: Duration::from_millis(opts.sleep_ms),
            spin: opts.spin,
        }
    }

    /// Open-loop pacing: sample `i` is due at `start + i / rate`; a late sample is sent
    /// at once (never bunched into sleeps).
    fn wait(&self, i: u64) {
        if let Some((period, method)) = self.rate {
            let due = self.start + period.saturating_mul(u32::try_from(i).unwrap_or(u32::MAX));
            let due = if i > u64::from(u32::MAX) {
                self.start + Duration::from_nanos(period.as_nanos() as u64 * i)
            } else {
                due
            };
            match method {
                RateMethod::Spin => {
                    while Instant::now() < due {
                        std::hint::spin_loop();
                    }
                }
                RateMethod::Sleep => {
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                    }
                }
            }
            return;
        }
        if !self.sleep.is_zero() {
            std::thread::sleep(self.sleep);
        }
        for k in 0..self.spin {
            std::hint::black_box(k);
        }
    }
}

/// Runs the publisher side; returns when the test ended (or was stopped).
pub fn run_publisher(ctx: &RunContext, transport: &mut dyn Transport) -> Result<(), PerftestError> {
    let opts = &ctx.opts;
    let pid = opts.pid as i32;
    let data_len = opts.data_len;

    let mut writer = transport.create_writer(TopicKind::Throughput)?;
    let done = Arc::new(AtomicBool::new(false));
    let ann = Arc::new(Mutex::new(Announcements::default()));
    let spb = opts.samples_per_batch(ctx.batching);
    let lc = opts.effective_latency_count();
    let num_iter = opts.effective_num_iter();
    let capacity = (num_iter / spb).div_ceil(lc) as usize + usize::from(spb > 1);
    let lat = Arc::new((
        Mutex::new(LatencyState {
            stats: LatencyStats::new(capacity, LATENCY_PREALLOC),
            current: None,
            skew: 0,
            overflow_reported: false,
            cpu: opts.cpu.then(CpuMonitor::new),
            last_pong_seq: None,
        }),
        Condvar::new(),
    ));

    let mut threads = Vec::new();
    if pid == 0 {
        let reader = transport.create_reader(TopicKind::Latency)?;
        let lat2 = Arc::clone(&lat);
        let printer = Arc::clone(&ctx.printer);
        threads.push(spawn_reader(
            "perftest-latency",
            opts,
            reader,
            Arc::clone(&done),
            move |m| on_pong(m, &lat2, &printer),
        )?);
    }
    let ann_reader = transport.create_reader(TopicKind::Announcement)?;
    {
        let ann2 = Arc::clone(&ann);
        threads.push(spawn_reader(
            "perftest-announcement",
            opts,
            ann_reader,
            Arc::clone(&done),
            move |m| {
                let mut a = lock(&ann2);
                if m.size == INITIALIZE_SIZE {
                    a.initialized.insert(m.entity_id);
                    a.finished.remove(&m.entity_id);
                } else if m.size == FINISHED_SIZE {
                    a.finished.insert(m.entity_id);
                    if !a.started {
                        a.initialized.remove(&m.entity_id);
                    }
                } else if m.size == LENGTH_CHANGED_SIZE {
                    a.length_changed.insert(m.entity_id);
                }
            },
        )?);
    }

    let result = publisher_body(
        ctx,
        transport,
        writer.as_mut(),
        &ann,
        &lat,
        spb,
        lc,
        num_iter,
    );

    done.store(true, Ordering::Relaxed);
    for t in threads {
        join(t)?;
    }
    let timer_fired = result?;

    if pid == 0 {
        let mut st = lock(&lat.0);
        if st.skew > 0 {
            progress(&format!(
                "Clock skew suspected: {} pongs arrived before they were sent and were skipped.",
                st.skew
            ));
        }
        if st.stats.count() > 0 {
            let mut summary = st.stats.summary(st.current.unwrap_or(data_len));
            summary.cpu = st.cpu.as_mut().map(CpuMonitor::summary);
            lock(&ctx.printer)
                .latency_summary(&summary)
                .map_err(PerftestError::io("printing results"))?;
        } else {
            progress("No latency pongs were received (no latency summary).");
        }
        // With -scan the earlier sizes were saved at each size switch.
        if st.stats.count() > 0 || opts.scan.is_none() {
            save_latency_file(opts, st.stats.values())?;
        }
    }
    lock(&ctx.printer)
        .finish()
        .map_err(PerftestError::io("printing results"))?;
    if timer_fired {
        progress("Finishing test due to timer...");
    } else {
        progress("Finishing test...");
    }
    Ok(())
}

fn on_pong(m: &TestMessage, lat: &(Mutex<LatencyState>, Condvar), printer: &Mutex<Printer>) {
    if m.size == INITIALIZE_SIZE || m.size == FINISHED_SIZE || m.size == LENGTH_CHANGED_SIZE {
        return;
    }
    let now = clock_us();
    let data_len = m.size as u64 + OVERHEAD_BYTES;
    let (state, cv) = lat;
    let mut st = lock(state);
    st.last_pong_seq = Some(m.seq_num);
    if st.current != Some(data_len) {
        // The first pong of a size only starts the statistics.
        st.current = Some(data_len);
        st.stats.reset();
        drop(st);
        cv.notify_all();
        let _ = lock(printer).latency_header(data_len);
        return;
    }
    let Some(l) = one_way_latency(now, m.timestamp_sec, m.timestamp_usec) else {
        st.skew += 1;
        drop(st);
        cv.notify_all();
        return;
    };
    if !st.stats.add(l) && !st.overflow_reported {
        st.overflow_reported = true;
        progress("Too many latency pongs received; the percentiles ignore the extra ones.");
    }
    // Wake the publisher only once the statistics are updated (the lock is free).
    let print = lock(printer).prints_intervals();
    if !print {
        drop(st);
        cv.notify_all();
        return;
    }
    let mut row = st.stats.interval(data_len, l);
    row.cpu = st.cpu.as_mut().map(CpuMonitor::interval);
    drop(st);
    cv.notify_all();
    let _ = lock(printer).latency_interval(&row);
}

/// Appends one block of latency values (one size) to the `-latencyFile`, if asked for.
fn save_latency_file(opts: &Options, values: &[u32]) -> Result<(), PerftestError> {
    let Some(path) = &opts.latency_file else {
        return Ok(());
    };
    progress(&format!(
        "Saving latency information in \"{}\".",
        path.display()
    ));
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(PerftestError::io("opening the -latencyFile"))?;
    // Buffered: unbuffered, each formatted piece of each line was a write(2) of its own.
    let mut f = std::io::BufWriter::with_capacity(1 << 16, f);
    write_latency_file(&mut f, values)
        .and_then(|()| std::io::Write::flush(&mut f))
        .map_err(PerftestError::io("writing the -latencyFile"))
}

/// Prints the latency summary of the size measured so far (a `-scan` size switch), saves
/// its values to the `-latencyFile` (one block per size) and restarts the statistics: the
/// next pong starts the next size.
fn latency_size_summary(
    ctx: &RunContext,
    lat: &(Mutex<LatencyState>, Condvar),
) -> Result<(), PerftestError> {
    let mut st = lock(&lat.0);
    if st.stats.count() > 0 {
        let data_len = st.current.unwrap_or(ctx.opts.data_len);
        let mut summary = st.stats.summary(data_len);
        summary.cpu = st.cpu.as_mut().map(CpuMonitor::summary);
        lock(&ctx.printer)
            .latency_summary(&summary)
            .map_err(PerftestError::io("printing results"))?;
        save_latency_file(&ctx.opts, st.stats.values())?;
    }
    st.stats.reset();
    st.current = None;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn publisher_body(
    ctx: &RunContext,
    transport: &mut dyn Transport,
    writer: &mut dyn Writer,
    ann: &Mutex<Announcements>,
    lat: &(Mutex<LatencyState>, Condvar),
    spb: u64,
    lc: u64,
    num_iter: u64,
) -> Result<bool, PerftestError> {
    let opts = &ctx.opts;
    let num_subs = opts.num_subscribers;
    let pid = opts.pid as i32;
    let all_subs = |set: &BTreeSet<i32>| (0..num_subs as i32).all(|s| set.contains(&s));

    progress(&format!("Waiting to discover {num_subs} subscribers ..."));
    let mut printed = Vec::new();
    if transport.needs_discovery()
        && !wait_until(|| {
            print_security_failures(transport, &mut printed);
            writer.matched() >= num_subs
        })
    {
        return Ok(false);
    }
    reapply_thread_settings(opts)?;
    progress("Waiting for subscribers announcement ...");
    if !wait_until(|| all_subs(&lock(ann).initialized)) {
        return Ok(false);
    }
    let instances = opts.effective_instances();
    writer.register_instances(instances)?;

    let burst = opts.initial_burst(ctx.batching);
    {
        let mut a = lock(ann);
        a.started = true;
        a.finished.clear();
    }
    progress(&format!("Sending {burst} initialization pings ..."));
    let mut msg = TestMessage {
        entity_id: pid,
        latency_ping: 0,
        size: INITIALIZE_SIZE,
        ..TestMessage::default()
    };
    for i in 0..burst {
        if stopping() {
            return Ok(false);
        }
        msg.key = ((i % instances) as u32).to_le_bytes();
        writer.write(&msg)?;
    }
    writer.flush()?;
    let reliable = transport.reliable() && !opts.best_effort;
    if reliable {
        // Unlike RTI's, wait (bounded) until the burst is acknowledged: on a slow link the
        // burst (12,800 samples of 1,234 B for batched 32 B: 13 s at 10 Mbit/s) would
        // otherwise still be in flight when the measured time starts, and use it up.
        wait_for_acks_interruptible(&mut *writer, INITIAL_BURST_ACK_WAIT)?;
    }
    std::thread::sleep(Duration::from_secs(1));

    progress("Sending data ...");
    let exec = (opts.execution_time > 0).then(|| Duration::from_secs(opts.execution_time));
    let latency_test = opts.latency_test;
    let num_pings_target = u64::from(num_subs);
    let mut num_pings = 0u64;
    let mut last_seq = 0u32;
    let mut timer_fired = false;
    let fixed_key = opts.write_instance.map(|w| (w as u32).to_le_bytes());
    // `-scan`: one measurement per size, each for `-executionTime`; the loop index (and
    // so the sequence number) runs on across sizes.
    let sizes = opts.sizes();
    let scan = opts.scan.is_some();
    let mut i = 0u64;
    for (k, &size) in sizes.iter().enumerate() {
        if k > 0 {
            if stopping() {
                break;
            }
            switch_size(
                ctx, writer, ann, lat, &mut msg, last_seq, reliable, num_subs,
            )?;
        }
        msg.size = (size - OVERHEAD_BYTES) as usize;
        msg.key = [0; 4];
        let pacer = Pacer::new(opts);
        let start = Instant::now();
        let first = i;
        let end = if scan { u64::MAX } else { num_iter };
        while i < end {
            if latency_test || i & 15 == 0 {
                if stopping() {
                    break;
                }
                if exec.is_some_and(|e| start.elapsed() >= e) {
                    timer_fired = true;
                    break;
                }
            }
            pacer.wait(i - first);
            let seq = i as u32;
            msg.seq_num = seq;
            msg.key = fixed_key.unwrap_or_else(|| ((i % instances) as u32).to_le_bytes());
            let is_ping = pid == 0 && is_ping_slot(i - first, spb, lc);
            if is_ping {
                msg.latency_ping = (num_pings % num_pings_target) as i32;
                num_pings += 1;
                let (hi, lo) = split_timestamp(clock_us());
                msg.timestamp_sec = hi;
                msg.timestamp_usec = lo;
            } else {
                msg.latency_ping = -1;
            }
            writer.write(&msg)?;
            last_seq = seq;
            i += 1;
            if is_ping && latency_test {
                wait_for_pong(lat, seq, reliable);
            }
        }
        writer.flush()?;
    }

    // End of test: FINISHED until every subscriber announced it saw it.
    msg.size = FINISHED_SIZE;
    msg.seq_num = last_seq;
    msg.latency_ping = -1;
    msg.key = CONTROL_INSTANCE.to_le_bytes();
    for i in 0..50 {
        // At least one FINISHED, whatever was heard before.
        if i > 0 && all_subs(&lock(ann).finished) {
            break;
        }
        writer.write(&msg)?;
        writer.flush()?;
        if reliable {
            writer.wait_for_acks(Duration::from_millis(100))?;
            std::thread::sleep(Duration::from_millis(10));
        } else {
            std::thread::sleep(Duration::from_millis(100));
        }
        if stopping() {
            break;
        }
    }
    if !all_subs(&lock(ann).finished) && !stopping() {
        progress("Not every subscriber confirmed the end of the test.");
    }
    Ok(timer_fired)
}

/// `-scan` size switch (spec 1.10): wait for the acknowledgements of the old size,
/// print its latency summary, then send LENGTH_CHANGED until every subscriber confirmed
/// it (each prints its throughput summary of the old size on it).
#[allow(clippy::too_many_arguments)]
fn switch_size(
    ctx: &RunContext,
    writer: &mut dyn Writer,
    ann: &Mutex<Announcements>,
    lat: &(Mutex<LatencyState>, Condvar),
    msg: &mut TestMessage,
    last_seq: u32,
    reliable: bool,
    num_subs: u32,
) -> Result<(), PerftestError> {
    // The old size's last (partial) batch goes out before its acknowledgements are awaited.
    writer.flush()?;
    if reliable {
        writer.wait_for_acks(Duration::from_secs(2))?;
    }
    // Let the last pongs of the old size arrive.
    std::thread::sleep(Duration::from_millis(50));
    if ctx.opts.pid == 0 {
        latency_size_summary(ctx, lat)?;
    }
    lock(ann).length_changed.clear();
    let all = |a: &Announcements| (0..num_subs as i32).all(|s| a.length_changed.contains(&s));
    let change = TestMessage {
        entity_id: ctx.opts.pid as i32,
        seq_num: last_seq,
        latency_ping: 0,
        size: LENGTH_CHANGED_SIZE,
        key: CONTROL_INSTANCE.to_le_bytes(),
        ..*msg
    };
    for _ in 0..100 {
        if all(&lock(ann)) || stopping() {
            break;
        }
        writer.write(&change)?;
        writer.flush()?;
        std::thread::sleep(Duration::from_millis(50));
    }
    if !all(&lock(ann)) && !stopping() {
        progress("Not every subscriber confirmed the size change.");
    }
    Ok(())
}

/// Whether loop index `i` carries a ping: one sample in every `lc`-th batch of `spb`
/// samples, its position inside the batch rotating with each ping (spec 1.5).
pub fn is_ping_slot(i: u64, spb: u64, lc: u64) -> bool {
    let batch = i / spb;
    batch.is_multiple_of(lc) && i % spb == (batch / lc) % spb
}

fn wait_for_pong(lat: &(Mutex<LatencyState>, Condvar), seq: u32, reliable: bool) {
    let (state, cv) = lat;
    let mut st = lock(state);
    if st.last_pong_seq == Some(seq) {
        // Often so on one CPU: the write let the subscriber and the pong's receiving
        // thread run before it returned. No clock read then.
        return;
    }
    let start = Instant::now();
    let deadline = start + Duration::from_millis(200);
    // Reliable: the pong comes unless the subscriber went away; do not wait for ever.
    let reliable_deadline = start + RELIABLE_PONG_WAIT;
    while st.last_pong_seq != Some(seq) {
        if stopping() {
            return;
        }
        let now = Instant::now();
        if (!reliable && now >= deadline) || now >= reliable_deadline {
            return;
        }
        let slice = if reliable {
            Duration::from_millis(100)
        } else {
            deadline - now
        };
        st = match cv.wait_timeout(st, slice) {
            Ok((g, _)) => g,
            Err(e) => e.into_inner().0,
        };
    }
}

// ------------------------------------------------------------------------------------
// Subscriber
// ------------------------------------------------------------------------------------

struct SubState {
    stats: ThroughputStats,
    finished: BTreeSet<i32>,
    data_arrived: bool,
    size_changed: bool,
    end: bool,
    summary_printed: bool,
    cpu: Option<CpuMonitor>,
}

fn print_throughput_summary(st: &mut SubState, printer: &Mutex<Printer>, data_len: u64) {
    if st.summary_printed {
        return;
    }
    st.summary_printed = true;
    let mut s = st.stats.summary(Instant::now());
    if s.data_len == 0 {
        s.data_len = data_len;
    }
    s.cpu = st.cpu.as_mut().map(CpuMonitor::summary);
    if s.total_samples == 0 {
        progress(
            "No samples were received. Check that both sides use the same -domain, -dataLen \
             (bounded vs. large type), -keyed, -bestEffort and -rawTransport settings.",
        );
    }
    let _ = lock(printer).throughput_summary(&s);
}

/// Prints the throughput summary of the size that just ended (`-scan`), without ending
/// the test.
fn size_summary(st: &mut SubState, printer: &Mutex<Printer>) {
    let mut s = st.stats.summary(Instant::now());
    s.cpu = st.cpu.as_mut().map(CpuMonitor::summary);
    let _ = lock(printer).throughput_summary(&s);
}

/// Runs the subscriber side; returns when the test ended (or was stopped).
pub fn run_subscriber(
    ctx: &RunContext,
    transport: &mut dyn Transport,
) -> Result<(), PerftestError> {
    let opts = &ctx.opts;
    let sid = opts.sid as i32;
    let num_pubs = opts.num_publishers;
    let reader = transport.create_reader(TopicKind::Throughput)?;
    let mut lat_writer = transport.create_writer(TopicKind::Latency)?;
    let ann_writer = Arc::new(Mutex::new(
        transport.create_writer(TopicKind::Announcement)?,
    ));

    progress(&format!("Waiting to discover {num_pubs} publishers ..."));
    if transport.needs_discovery() {
        let mut printed = Vec::new();
        let ok = wait_until(|| {
            print_security_failures(transport, &mut printed);
            reader.matched() >= num_pubs
                && lat_writer.matched() >= 1
                && lock(&ann_writer).matched() >= num_pubs
        });
        if !ok {
            return Ok(());
        }
    }
    reapply_thread_settings(opts)?;
    progress("Waiting for data ...");

    let state = Arc::new(Mutex::new(SubState {
        stats: ThroughputStats::new(num_pubs as usize),
        finished: BTreeSet::new(),
        data_arrived: false,
        size_changed: false,
        end: false,
        summary_printed: false,
        cpu: opts.cpu.then(CpuMonitor::new),
    }));
    let done = Arc::new(AtomicBool::new(false));
    let announce = move |size: usize, w: &Mutex<Box<dyn Writer>>| -> Result<(), PerftestError> {
        let m = TestMessage {
            entity_id: sid,
            size,
            latency_ping: -1,
            key: CONTROL_INSTANCE.to_le_bytes(),
            ..TestMessage::default()
        };
        let mut w = lock(w);
        w.write(&m)?;
        w.flush()
    };

    let thread = {
        let state = Arc::clone(&state);
        let printer = Arc::clone(&ctx.printer);
        let ann_writer = Arc::clone(&ann_writer);
        let default_len = opts.data_len;
        let ended = Arc::new(AtomicBool::new(false));
        spawn_reader(
            "perftest-throughput",
            opts,
            reader,
            Arc::clone(&done),
            move |m| {
                // Once the test ended, only FINISHED is answered (re-confirmed): a publisher
                // of the next test that finds this subscriber still here must not get its
                // pings echoed (or count it as ready; see `Announcements::started`).
                if m.size != FINISHED_SIZE && ended.load(Ordering::Relaxed) {
                    return;
                }
                match m.size {
                    INITIALIZE_SIZE => {
                        let _ = lat_writer.write(m);
                    }
                    LENGTH_CHANGED_SIZE => {
                        // `-scan`: the old size is over. Print its summary once, echo
                        // (the publisher ignores the echo) and confirm.
                        {
                            let mut st = lock(&state);
                            if st.stats.packets > 0 {
                                size_summary(&mut st, &printer);
                                st.stats = ThroughputStats::new(num_pubs as usize);
                                st.size_changed = true;
                            }
                        }
                        let _ = lat_writer.write(m);
                        let _ = announce(LENGTH_CHANGED_SIZE, &ann_writer);
                    }
                    FINISHED_SIZE => {
                        let mut st = lock(&state);
                        if st.finished.insert(m.entity_id) {
                            st.stats.loss.on_finished(m.entity_id, m.seq_num);
                            if st.finished.len() >= num_pubs as usize {
                                print_throughput_summary(&mut st, &printer, default_len);
                                st.end = true;
                                ended.store(true, Ordering::Relaxed);
                            }
                        }
                        let end = st.end;
                        drop(st);
                        if end {
                            // (Re-)confirm: the publisher repeats FINISHED until it hears us.
                            let _ = announce(FINISHED_SIZE, &ann_writer);
                        }
                    }
                    _ => {
                        let data_len = m.size as u64 + OVERHEAD_BYTES;
                        let mut st = lock(&state);
                        if st.stats.begin.is_none() || st.stats.data_len != data_len {
                            st.stats.reset(data_len, Instant::now());
                            st.size_changed = true;
                            let _ = lock(&printer).throughput_header(data_len);
                        }
                        st.data_arrived = true;
                        st.stats.on_sample(m.entity_id, m.seq_num);
                        drop(st);
                        if m.latency_ping == sid {
                            let _ = lat_writer.write(m);
                        }
                    }
                }
            },
        )?
    };

    let mut result = Ok(());
    let mut next_tick = Instant::now();
    loop {
        if lock(&state).end || stopping() {
            break;
        }
        if Instant::now() >= next_tick {
            next_tick += Duration::from_secs(1);
            let mut st = lock(&state);
            if !st.data_arrived {
                drop(st);
                if let Err(e) = announce(INITIALIZE_SIZE, &ann_writer) {
                    result = Err(e);
                    break;
                }
            } else if st.size_changed {
                st.size_changed = false;
            } else if let Some(mut row) = st.stats.interval(Instant::now()) {
                row.cpu = st.cpu.as_mut().map(CpuMonitor::interval);
                drop(st);
                let _ = lock(&ctx.printer).throughput_interval(&row);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let ended = lock(&state).end;
    if ended {
        // Let a late repeated FINISHED be confirmed (spec: the subscriber waits 2 s).
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until && !stopping() {
            std::thread::sleep(Duration::from_millis(20));
        }
    } else {
        print_throughput_summary(&mut lock(&state), &ctx.printer, opts.data_len);
    }
    done.store(true, Ordering::Relaxed);
    let joined = join(thread);
    lock(&ctx.printer)
        .finish()
        .map_err(PerftestError::io("printing results"))?;
    progress("Finishing test...");
    result.and(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_slots_without_batching() {
        let pings: Vec<u64> = (0..35).filter(|&i| is_ping_slot(i, 1, 10)).collect();
        assert_eq!(pings, vec![0, 10, 20, 30]);
        assert!((0..5).all(|i| is_ping_slot(i, 1, 1)));
    }

    #[test]
    fn ping_slots_with_batching_one_per_batch_rotating() {
        // 4 samples per batch, a ping every 2nd batch.
        let pings: Vec<u64> = (0..40).filter(|&i| is_ping_slot(i, 4, 2)).collect();
        // batches 0, 2, 4, 6, 8 → positions 0, 1, 2, 3, 0
        assert_eq!(pings, vec![0, 9, 18, 27, 32]);
        // Never more than one per batch, even with latencyCount 1.
        for b in 0..100u64 {
            let n = (b * 4..b * 4 + 4)
                .filter(|&i| is_ping_slot(i, 4, 1))
                .count();
            assert_eq!(n, 1);
        }
    }

    #[test]
    fn pacer_rate_is_open_loop() {
        let opts = Options::parse(&["-pub", "-pubRate", "1000:spin"]).unwrap();
        let p = Pacer::new(&opts);
        let t0 = Instant::now();
        for i in 0..21 {
            p.wait(i);
        }
        let e = t0.elapsed();
        assert!(e >= Duration::from_millis(19), "{e:?}");
        assert!(e < Duration::from_millis(500), "{e:?}");
    }
}
