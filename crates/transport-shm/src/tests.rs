//! Unit tests of the segment and the ring (with access to the shared words).

use std::io::IoSlice;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::ring::test_support::{mapping, mark};
use crate::*;

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

/// A private directory for segments, removed on drop.
struct TestDir(PathBuf);

impl TestDir {
    fn new(name: &str) -> Self {
        let base = if Path::new(DEFAULT_DIR).is_dir() {
            PathBuf::from(DEFAULT_DIR)
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!(
            "ferrodds-test-{}-{name}-{}",
            std::process::id(),
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn config(&self, id: u16, slots: u32, slot_payload: usize) -> ShmConfig {
        ShmConfig {
            dir: self.0.clone(),
            slots,
            slot_payload,
            ..ShmConfig::new(id)
        }
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `f` on its own thread and fails if it does not finish within `limit`.
fn bounded<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let t = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => {
            t.join().unwrap();
            v
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // The closure panicked: surface its panic.
            std::panic::resume_unwind(t.join().unwrap_err())
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("test did not finish within {limit:?}"),
    }
}

/// The pid of a process that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn sender(rx: &ShmReceiver, src: u16) -> ShmSender {
    ShmSender::open_path(rx.path(), src).unwrap()
}

/// Deterministic message `i` of producer `p`: 12..=1500 bytes, header then a pattern.
fn message(p: u8, i: u32, out: &mut Vec<u8>) {
    let len = 12 + (i as usize * 7919 + p as usize * 31) % 1489;
    out.clear();
    out.push(p);
    out.extend_from_slice(&i.to_le_bytes());
    out.extend((5..len).map(|k| (k as u32 ^ i) as u8 ^ p));
}

#[test]
fn ring_keeps_order_and_content_with_four_producers() {
    const PRODUCERS: u8 = 4;
    const PER_PRODUCER: u32 = 100_000;
    let dir = TestDir::new("mpsc");
    let mut rx = ShmReceiver::create(&dir.config(1, 256, 2048)).unwrap();
    // A lost wake-up would hang the consumer far past the test's bound.
    rx.set_poll(Duration::from_secs(600));
    let path = rx.path().to_path_buf();
    bounded(Duration::from_secs(240), move || {
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let tx = ShmSender::open_path(&path, u16::from(p) + 100).unwrap();
                std::thread::spawn(move || {
                    let mut msg = Vec::new();
                    let mut full = 0u64;
                    for i in 0..PER_PRODUCER {
                        message(p, i, &mut msg);
                        let (a, b) = msg.split_at(msg.len() / 2);
                        loop {
                            match tx.send(&[IoSlice::new(a), IoSlice::new(b)]) {
                                Ok(()) => break,
                                Err(SendError::Full) => {
                                    full += 1;
                                    std::thread::yield_now();
                                }
                                Err(e) => panic!("send failed: {e}"),
                            }
                        }
                    }
                    full
                })
            })
            .collect();
        let mut next = [0u32; PRODUCERS as usize];
        let mut buf = Vec::with_capacity(2048);
        let mut expected = Vec::new();
        let total = u64::from(PRODUCERS) * u64::from(PER_PRODUCER);
        for _ in 0..total {
            let r = loop {
                if let Some(r) = rx.recv(&mut buf, Duration::from_secs(600)) {
                    break r;
                }
            };
            let p = buf[0];
            assert!(p < PRODUCERS);
            assert_eq!(r.src, u16::from(p) + 100);
            assert_eq!(r.pid, std::process::id());
            let i = u32::from_le_bytes(buf[1..5].try_into().unwrap());
            assert_eq!(i, next[p as usize], "order of producer {p}");
            next[p as usize] += 1;
            message(p, i, &mut expected);
            assert_eq!(&buf[..r.len], &expected[..], "content of {p}/{i}");
        }
        for t in producers {
            t.join().unwrap();
        }
        assert_eq!(rx.try_recv(&mut buf), None);
        assert_eq!(rx.frame_errors(), 0);
        eprintln!("{} futex sleeps", rx.sleeps());
    });
}

#[test]
fn full_ring_refuses_and_recovers() {
    let dir = TestDir::new("full");
    let mut rx = ShmReceiver::create(&dir.config(2, 8, 64)).unwrap();
    let tx = sender(&rx, 9);
    for i in 0u8..8 {
        tx.send(&[IoSlice::new(&[i; 10])]).unwrap();
    }
    assert_eq!(tx.send(&[IoSlice::new(b"x")]), Err(SendError::Full));
    assert_eq!(
        tx.send(&[IoSlice::new(&[0; 65])]),
        Err(SendError::TooLarge { len: 65, max: 64 })
    );
    let mut buf = Vec::new();
    assert_eq!(
        rx.try_recv(&mut buf),
        Some(Received {
            len: 10,
            src: 9,
            pid: std::process::id()
        })
    );
    assert_eq!(buf, [0u8; 10]);
    tx.send(&[IoSlice::new(&[8; 3])]).unwrap();
    for i in 1u8..8 {
        assert!(rx.try_recv(&mut buf).is_some());
        assert_eq!(buf, [i; 10]);
    }
    assert!(rx.try_recv(&mut buf).is_some());
    assert_eq!(buf, [8; 3]);
    assert_eq!(rx.try_recv(&mut buf), None);
    // An empty message is a message.
    tx.send(&[]).unwrap();
    assert_eq!(rx.try_recv(&mut buf).map(|r| r.len), Some(0));
}

#[test]
fn sleeping_receiver_is_woken_by_one_message() {
    let dir = TestDir::new("wake");
    let mut rx = ShmReceiver::create(&dir.config(3, 16, 256)).unwrap();
    // Only a futex wake can end the wait early: the poll interval is far longer than the
    // latency asserted.
    rx.set_poll(Duration::from_secs(30));
    let tx = sender(&rx, 4);
    let consumer = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let r = rx.recv(&mut buf, Duration::from_secs(30));
        (r, buf, Instant::now())
    });
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        mapping(&tx).sleeping().load(Ordering::SeqCst),
        1,
        "the receiver sleeps after 200 ms idle"
    );
    let sent = Instant::now();
    tx.send(&[IoSlice::new(b"wake up")]).unwrap();
    let (r, buf, arrived) = bounded(Duration::from_secs(10), move || consumer.join().unwrap());
    assert_eq!(r.map(|r| r.len), Some(7));
    assert_eq!(buf, b"wake up");
    let latency = arrived.duration_since(sent);
    assert!(latency < Duration::from_secs(2), "latency {latency:?}");
}

#[test]
fn ping_pong_loses_no_wake_up() {
    const ROUNDS: u32 = 100_000;
    let dir = TestDir::new("pingpong");
    let mut a = ShmReceiver::create(&dir.config(10, 64, 64)).unwrap();
    let mut b = ShmReceiver::create(&dir.config(11, 64, 64)).unwrap();
    // A lost wake-up would hang a side for this long: far past the test's bound.
    a.set_poll(Duration::from_secs(600));
    b.set_poll(Duration::from_secs(600));
    let to_a = sender(&a, 11);
    let to_b = sender(&b, 10);
    bounded(Duration::from_secs(200), move || {
        let pong = std::thread::spawn(move || {
            let mut buf = Vec::with_capacity(64);
            for i in 0..ROUNDS {
                while b.recv(&mut buf, Duration::from_secs(600)).is_none() {}
                assert_eq!(buf, i.to_le_bytes());
                to_a.send(&[IoSlice::new(&buf)]).unwrap();
            }
            b.sleeps()
        });
        let mut buf = Vec::with_capacity(64);
        for i in 0..ROUNDS {
            to_b.send(&[IoSlice::new(&i.to_le_bytes())]).unwrap();
            while a.recv(&mut buf, Duration::from_secs(600)).is_none() {}
            assert_eq!(buf, i.to_le_bytes());
        }
        let sleeps = a.sleeps() + pong.join().unwrap();
        // The futex path was taken (not only the spin): each sleep was ended by a wake-up.
        eprintln!("{sleeps} futex sleeps in {ROUNDS} round trips");
        assert!(sleeps > 0);
    });
}

/// xorshift64*: random bytes without a dependency.
fn random(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

#[test]
fn garbage_segment_is_counted_not_fatal() {
    let dir = TestDir::new("garbage");
    let mut rx = ShmReceiver::create(&dir.config(5, 16, 256)).unwrap();
    let tx = sender(&rx, 6);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    bounded(Duration::from_secs(30), move || {
        let map = mapping(&tx);
        let total = map.layout.total;
        // Random bytes over every slot and the tail.
        map.tail().store(random(&mut state), Ordering::Relaxed);
        for off in (HEADER_SIZE..total).step_by(8) {
            map.u64_at(off).store(random(&mut state), Ordering::Relaxed);
        }
        let mut buf = Vec::with_capacity(256);
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(300) {
            if let Some(r) = rx.recv(&mut buf, Duration::from_millis(20)) {
                assert!(r.len <= 256);
            }
        }
        assert!(rx.frame_errors() >= 8, "{} errors", rx.frame_errors());

        // Published slots with absurd lengths, at whatever position the head is now.
        let head = map.head().load(Ordering::Relaxed);
        let before = rx.frame_errors();
        for k in 0..16u64 {
            let pos = head + k;
            map.slot_len(pos)
                .store(if k % 2 == 0 { u32::MAX } else { 257 }, Ordering::Relaxed);
            map.seq(pos).store(pos + 1, Ordering::Release);
        }
        assert_eq!(rx.try_recv(&mut buf), None);
        assert_eq!(rx.frame_errors() - before, 16);

        // The ring works again once its counters are sane.
        let head = map.head().load(Ordering::Relaxed);
        map.tail().store(head, Ordering::Relaxed);
        tx.send(&[IoSlice::new(b"after")]).unwrap();
        assert!(rx.try_recv(&mut buf).is_some());
        assert_eq!(buf, b"after");
    });
}

#[test]
fn bad_headers_are_refused() {
    let dir = TestDir::new("header");
    let rx = ShmReceiver::create(&dir.config(5, 16, 256)).unwrap();
    let path = rx.path().to_path_buf();
    let tx = sender(&rx, 6);
    let map = mapping(&tx);
    let bad = |what: &str| match ShmSender::open_path(&path, 1) {
        Err(ShmError::BadSegment { .. }) => {}
        other => panic!("{what}: {other:?}"),
    };
    map.u32_at(16).store(3, Ordering::Relaxed); // slot count not a power of two
    bad("slots");
    map.u32_at(16).store(16, Ordering::Relaxed);
    map.u32_at(20).store(u32::MAX, Ordering::Relaxed); // absurd payload
    bad("payload");
    map.u32_at(20).store(256, Ordering::Relaxed);
    map.u32_at(8).store(99, Ordering::Relaxed); // version
    bad("version");
    map.u32_at(8).store(LAYOUT_VERSION, Ordering::Relaxed);
    map.u32_at(16).store(1 << 15, Ordering::Relaxed); // more slots than the file holds
    map.u32_at(24)
        .store((SLOT_HEADER_SIZE + 256) as u32, Ordering::Relaxed);
    map.u64_at(40).store(
        (HEADER_SIZE + (1 << 15) * (SLOT_HEADER_SIZE + 256)) as u64,
        Ordering::Relaxed,
    );
    bad("size");
    map.u64_at(0).store(0, Ordering::Relaxed);
    bad("magic");
    // Too short to hold a header; missing file.
    let short = dir.0.join("short");
    std::fs::write(&short, [0u8; 10]).unwrap();
    assert!(matches!(
        ShmSender::open_path(&short, 1),
        Err(ShmError::BadSegment { .. })
    ));
    assert!(matches!(
        ShmSender::open(&dir.0, real_uid(), 999, 1),
        Err(ShmError::NotFound(_))
    ));
}

#[test]
fn claim_of_a_dead_writer_is_skipped_after_the_stall_timeout() {
    let dir = TestDir::new("dead");
    let mut rx = ShmReceiver::create(&dir.config(7, 8, 64)).unwrap();
    let tx = sender(&rx, 8);
    let map = mapping(&tx);
    let dead = dead_pid();
    // Position 0 claimed and marked by a process that died; position 1 published.
    map.tail().fetch_add(1, Ordering::Relaxed);
    map.seq(0).store(mark(dead, 0), Ordering::Release);
    tx.send(&[IoSlice::new(b"next")]).unwrap();
    let mut buf = Vec::new();
    let start = Instant::now();
    let got = bounded(Duration::from_secs(10), move || loop {
        if let Some(r) = rx.recv(&mut buf, Duration::from_millis(100)) {
            assert_eq!(buf, b"next");
            break (r, rx);
        }
        assert!(start.elapsed() < Duration::from_secs(5), "never skipped");
    });
    let waited = start.elapsed();
    assert!(
        waited >= STALL_TIMEOUT - Duration::from_millis(50),
        "{waited:?}"
    );
    assert_eq!(got.1.skipped_slots(), 1);
    assert_eq!(got.1.frame_errors(), 1);
}

#[test]
fn unmarked_claim_is_skipped_and_its_late_writer_refused() {
    let dir = TestDir::new("unmarked");
    let mut rx = ShmReceiver::create(&dir.config(7, 8, 64)).unwrap();
    let tx = sender(&rx, 8);
    let map = mapping(&tx);
    // Position 0 claimed (tail moved) by a sender that stopped before marking it.
    map.tail().fetch_add(1, Ordering::Relaxed);
    tx.send(&[IoSlice::new(b"next")]).unwrap();
    let mut buf = Vec::new();
    let start = Instant::now();
    while rx.recv(&mut buf, Duration::from_millis(100)).is_none() {
        assert!(start.elapsed() < Duration::from_secs(5), "never skipped");
    }
    assert!(start.elapsed() >= STALL_TIMEOUT - Duration::from_millis(50));
    assert_eq!(buf, b"next");
    assert_eq!(rx.skipped_slots(), 1);
    // The stalled sender resumes: its marking compare-exchange (0 -> mark) fails.
    assert!(map
        .seq(0)
        .compare_exchange(0, mark(1234, 0), Ordering::Acquire, Ordering::Relaxed)
        .is_err());
}

#[test]
fn claim_of_a_live_writer_is_waited_for() {
    let dir = TestDir::new("live");
    let mut rx = ShmReceiver::create(&dir.config(7, 8, 64)).unwrap();
    let tx = sender(&rx, 8);
    let map = mapping(&tx);
    let me = std::process::id();
    map.tail().fetch_add(1, Ordering::Relaxed);
    map.seq(0).store(mark(me, 0), Ordering::Release);
    tx.send(&[IoSlice::new(b"second")]).unwrap();
    let mut buf = Vec::new();
    let start = Instant::now();
    while start.elapsed() < STALL_TIMEOUT + Duration::from_millis(300) {
        assert_eq!(rx.recv(&mut buf, Duration::from_millis(100)), None);
    }
    assert_eq!(rx.skipped_slots(), 0);
    // The live writer finally publishes: both arrive, in order.
    map.slot_len(0).store(5, Ordering::Relaxed);
    map.slot_src(0).store(8, Ordering::Relaxed);
    map.seq(0).store(1, Ordering::Release);
    assert_eq!(rx.try_recv(&mut buf).map(|r| r.len), Some(5));
    assert!(rx.try_recv(&mut buf).is_some());
    assert_eq!(buf, b"second");
}

#[test]
fn segment_of_a_dead_owner_is_refused() {
    let dir = TestDir::new("owner");
    let rx = ShmReceiver::create(&dir.config(40, 8, 64)).unwrap();
    mapping(&sender(&rx, 1))
        .u32_at(28)
        .store(dead_pid(), Ordering::Relaxed);
    assert!(matches!(
        ShmSender::open_path(rx.path(), 1),
        Err(ShmError::OwnerGone { .. })
    ));
}

#[test]
fn zombie_counts_as_dead() {
    use crate::segment::pid_alive;
    assert!(pid_alive(std::process::id()));
    assert!(!pid_alive(0));
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    // Not reaped yet: a zombie once it has exited.
    let start = Instant::now();
    while pid_alive(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "child never exited"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait().unwrap();
    assert!(!pid_alive(pid));
}

#[test]
fn handles_are_send_and_sync_as_documented() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<ShmTransport>();
    send_sync::<ShmSender>();
    send_sync::<ShmWaker>();
    send::<ShmReceiver>();
}

#[test]
fn cleanup_removes_only_dead_owners() {
    let dir = TestDir::new("cleanup");
    let uid = real_uid();
    let dead = dead_pid();
    let stale = ShmReceiver::create(&dir.config(20, 8, 64)).unwrap();
    let live = ShmReceiver::create(&dir.config(21, 8, 64)).unwrap();
    mapping(&sender(&stale, 1))
        .u32_at(28)
        .store(dead, Ordering::Relaxed);
    let tmp = dir
        .0
        .join(format!("ferrodds-{uid}-{}-22.{dead}.tmp", net_namespace()));
    std::fs::write(&tmp, b"").unwrap();
    let other = dir.0.join(format!("ferrodds-{uid}-junk"));
    std::fs::write(&other, b"junk").unwrap();
    assert_eq!(cleanup_stale(&dir.0, uid).unwrap(), 2);
    assert!(!stale.path().exists());
    assert!(!tmp.exists());
    assert!(live.path().exists());
    assert!(other.exists());
    drop(stale); // its file is already gone: nothing to do
    assert!(live.path().exists());
    let live_path = live.path().to_path_buf();
    drop(live);
    assert!(!live_path.exists());
}

#[test]
fn segment_mode_and_replacement_of_a_stale_file() {
    let dir = TestDir::new("mode");
    let config = dir.config(30, 8, 64);
    let path = segment_path(&dir.0, real_uid(), 30);
    std::fs::write(&path, b"stale garbage").unwrap();
    let rx = ShmReceiver::create(&config).unwrap();
    assert_eq!(rx.path(), path);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(ShmSender::open_path(&path, 1).is_ok());
    drop(rx);
    assert!(!path.exists());

    let rx = ShmReceiver::create(&ShmConfig {
        mode: 0o640,
        ..config
    })
    .unwrap();
    let mode = std::fs::metadata(rx.path()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o640);
}

#[test]
fn invalid_configs_are_refused() {
    let dir = TestDir::new("config");
    for (slots, payload) in [
        (0, 64),
        (3, 64),
        (MAX_SLOTS * 2, 64),
        (8, 0),
        (8, usize::MAX),
    ] {
        assert!(matches!(
            ShmReceiver::create(&dir.config(1, slots, payload)),
            Err(ShmError::InvalidConfig(_))
        ));
    }
}

#[test]
fn boot_id_parses_as_host_id() {
    assert_eq!(
        parse_boot_id("6a0c2f2e-1a52-4c8e-9c6a-0d1e2f3a4b5c\n"),
        Some([0x6a, 0x0c, 0x2f, 0x2e, 0x1a, 0x52, 0x4c, 0x8e, 0x9c, 0x6a, 0x0d, 0x1e])
    );
    assert_eq!(parse_boot_id("nonsense"), None);
    assert_eq!(parse_boot_id("zz0c2f2e-1a52-4c8e-9c6a-0d1e2f3a4b5c"), None);
    if Path::new("/proc/sys/kernel/random/boot_id").exists() {
        assert_ne!(host_id()[..8], [0; 8]);
    }
    // The network namespace is part of the identity (and of the segment names).
    assert_eq!(host_id()[8..], (net_namespace() as u32).to_le_bytes());
    let p = segment_path(Path::new("/dev/shm"), 5, 7);
    assert_eq!(
        p.file_name().unwrap().to_string_lossy(),
        format!("ferrodds-5-{}-7", net_namespace())
    );
}
