//! Crash and restart between processes on loopback (issue 18, item 4): a subscriber killed
//! with SIGKILL in the middle of 10 MB samples, and a publisher killed and restarted with
//! the same GUID prefix.
//!
//! The child processes are this test binary run again with one ignored test selected
//! ([`crash_restart_child`]; `FERRODDS_CRASH_ROLE` says what it does). They talk on
//! stdout in lines carrying [`MARK`]. Loopback only (127.0.0.1, no multicast); domains
//! 190 and 191.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;
use ferrodds::cdr::types::{TestData, TestDataLarge};
use ferrodds::{
    Config, DataReaderQos, DataWriterQos, DdsError, DomainParticipant, GuidPrefix, PublisherQos,
    ResourceLimits, SubscriberQos, TopicQos,
};

/// Marks the lines of a child's protocol on its stdout (the test harness prints too).
const MARK: &str = "CRASHPEER ";
const ROLE: &str = "FERRODDS_CRASH_ROLE";
/// Serialized size of the large samples' payload.
const LARGE: usize = 10_000_000;
const LARGE_TOPIC: &str = "crash_large";
const SMALL_TOPIC: &str = "crash_restart";

// ---------------------------------------------------------------------------------------
// Child side

/// Not a test of its own: the body of the child processes the tests below start (it does
/// nothing without `FERRODDS_CRASH_ROLE`).
#[test]
#[ignore = "child process of the crash tests, started by them"]
fn crash_restart_child() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} not set"));
    let num = |k: &str| -> u64 { var(k).parse().unwrap_or_else(|_| panic!("{k}")) };
    let domain = num("CRASH_DOMAIN") as u32;
    match role.as_str() {
        "large-subscriber" => large_subscriber(domain, num("CRASH_EXPECT") as usize),
        "small-publisher" => small_publisher(
            domain,
            parse_prefix(&var("CRASH_PREFIX")),
            num("CRASH_RUN") as i32,
            num("CRASH_COUNT") as u32,
            num("CRASH_STAY") != 0,
        ),
        other => panic!("unknown role {other}"),
    }
}

fn say(line: &str) {
    println!("{MARK}{line}");
}

/// Subscribes to the 10 MB samples (reliable, TRANSIENT_LOCAL, KEEP_ALL) with a 3 s lease
/// and prints `SAMPLE <seq_num> <content ok>` for each; exits after `expect` samples (0:
/// runs until killed).
fn large_subscriber(domain: u32, expect: usize) {
    let config = Config::loopback()
        .spdp_period(Duration::from_millis(300))
        .lease_duration(Duration::from_secs(3));
    let p = DomainParticipant::with_config(domain, config).expect("participant");
    let t = p
        .create_topic::<TestDataLarge>(LARGE_TOPIC, TopicQos::default())
        .unwrap();
    let r = p
        .create_subscriber(SubscriberQos::default())
        .unwrap()
        .create_datareader(
            &t,
            DataReaderQos::default()
                .reliable()
                .keep_all()
                .transient_local(),
        )
        .unwrap();
    if !r.wait_for_matched(1, Duration::from_secs(30)) {
        say("UNMATCHED");
        std::process::exit(1);
    }
    say("MATCHED");
    let mut got = 0;
    while expect == 0 || got < expect {
        let _ = r.wait_for_data(Duration::from_millis(100));
        for s in r.take().unwrap() {
            if let Some(d) = s.data {
                let ok = d.bin_data.len() == LARGE
                    && d.bin_data
                        .iter()
                        .enumerate()
                        .all(|(i, b)| *b == pattern(d.seq_num, i));
                say(&format!("SAMPLE {} {}", d.seq_num, u8::from(ok)));
                got += 1;
            }
        }
    }
    say("DONE");
}

/// Publishes `count` small samples (`entity_id` = `run`, `seq_num` 0..count) with a fixed GUID
/// prefix and a 60 s lease once a reader matched, waits for their acknowledgement, then stays
/// (until killed) or leaves.
fn small_publisher(domain: u32, prefix: GuidPrefix, run: i32, count: u32, stay: bool) {
    let config = Config::loopback()
        .spdp_period(Duration::from_millis(500))
        .lease_duration(Duration::from_secs(60))
        .guid_prefix(Some(prefix));
    let p = DomainParticipant::with_config(domain, config).expect("participant");
    let t = p
        .create_topic::<TestData>(SMALL_TOPIC, TopicQos::default())
        .unwrap();
    let w = p
        .create_publisher(PublisherQos::default())
        .unwrap()
        .create_datawriter(
            &t,
            DataWriterQos::default()
                .reliable()
                .keep_all()
                .transient_local(),
        )
        .unwrap();
    if !w.wait_for_matched(1, Duration::from_secs(30)) {
        say("UNMATCHED");
        std::process::exit(1);
    }
    say("MATCHED");
    for i in 0..count {
        let mut d = test_data(i);
        d.entity_id = run;
        w.write(&d).unwrap();
    }
    if w.wait_for_acknowledgments(Duration::from_secs(30)).is_err() {
        say("UNACKNOWLEDGED");
        std::process::exit(1);
    }
    say("ACKED");
    if stay {
        // Until killed.
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

/// Byte `i` of the large sample `seq`.
fn pattern(seq: u32, i: usize) -> u8 {
    ((seq as usize + i) % 256) as u8
}

fn parse_prefix(hex: &str) -> GuidPrefix {
    let mut p = [0u8; 12];
    for (i, b) in p.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex prefix");
    }
    GuidPrefix(p)
}

// ---------------------------------------------------------------------------------------
// Test side

/// A child process and its protocol lines.
struct Peer {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: Option<JoinHandle<String>>,
    seen: Vec<String>,
}

impl Peer {
    fn spawn(role: &str, env: &[(&str, String)]) -> Self {
        let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
        cmd.args([
            "crash_restart_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .env_remove("FERRODDS_INTERFACE")
        .env_remove("FERRODDS_PEERS")
        .env_remove("FERRODDS_MULTICAST")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn child");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // (The harness may print on the same line before it.)
                if let Some(i) = line.find(MARK) {
                    if tx.send(line[i + MARK.len()..].to_owned()).is_err() {
                        break;
                    }
                }
            }
        });
        let mut err = child.stderr.take().expect("stderr");
        let stderr = Some(std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        }));
        Self {
            child,
            lines,
            stderr,
            seen: Vec::new(),
        }
    }

    /// The next protocol line, if one comes within `timeout`.
    fn next(&mut self, timeout: Duration) -> Option<String> {
        let l = self.lines.recv_timeout(timeout).ok()?;
        self.seen.push(l.clone());
        Some(l)
    }

    /// Waits for the line `want` (failing on another line that is not a sample, or after
    /// `timeout`); returns the `SAMPLE` lines read meanwhile.
    fn expect(&mut self, want: &str, timeout: Duration) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        let mut samples = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Some(l) if l == want => return samples,
                Some(l) if l.starts_with("SAMPLE ") => samples.push(l),
                other => panic!("{want}: got {other:?}; {}", self.report()),
            }
        }
    }

    /// SIGKILL.
    fn kill(&mut self) {
        self.child.kill().expect("kill");
        let _ = self.child.wait();
    }

    /// Waits for the child to exit by itself; true if it succeeded.
    fn exits_ok(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.child.try_wait().expect("try_wait") {
                return s.success();
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What the child said and printed to stderr so far (once it has exited).
    fn report(&mut self) -> String {
        let exited = matches!(self.child.try_wait(), Ok(Some(_)));
        let stderr = if exited {
            self.stderr
                .take()
                .and_then(|h| h.join().ok())
                .unwrap_or_default()
        } else {
            "(running)".into()
        };
        format!("child said {:?}; stderr: {stderr}", self.seen)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `(seq_num, content ok)` of a `SAMPLE` line.
fn sample(line: &str) -> (u32, bool) {
    let mut it = line.split(' ').skip(1);
    let seq = it.next().and_then(|s| s.parse().ok()).expect("seq");
    (seq, it.next() == Some("1"))
}

fn large(seq: u32, base: &[u8]) -> TestDataLarge {
    let off = seq as usize % 256;
    TestDataLarge {
        key: [0; 4],
        entity_id: 7,
        seq_num: seq,
        timestamp_sec: 0,
        timestamp_usec: 0,
        latency_ping: -1,
        bin_data: base[off..off + LARGE].to_vec(),
    }
}

/// Outcome of each write of the writer thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wrote {
    Ok(u32),
    Blocked,
}

/// A subscriber process killed (SIGKILL) while 10 MB samples are being written to it: the
/// publisher (reliable, TRANSIENT_LOCAL, KEEP_ALL with a history of 4) is blocked by what the
/// dead reader never acknowledges — until the reader's 3 s lease ends. The publisher then
/// frees its state for it (unmatched, participant gone), writes again, and a new subscriber
/// process matches and receives the 4 samples of the history, then new ones, complete and
/// correct.
#[test]
fn a_killed_subscriber_is_dropped_after_its_lease_and_a_new_one_gets_the_history() {
    // (Each step below has its own bound, with a report of the child's output; the whole
    // test's bound is their sum, so that a stall fails at its step, not here.)
    with_timeout(150, || {
        let t0 = Instant::now();
        let env = [("CRASH_DOMAIN", "190".to_owned())];
        let p = participant(190);
        let t = p
            .create_topic::<TestDataLarge>(LARGE_TOPIC, TopicQos::default())
            .unwrap();
        let w = p
            .create_publisher(PublisherQos::default())
            .unwrap()
            .create_datawriter(
                &t,
                DataWriterQos::default()
                    .reliable()
                    .transient_local()
                    .keep_all()
                    .resource_limits(ResourceLimits {
                        max_samples: Some(4),
                        ..Default::default()
                    })
                    .max_blocking_time(Duration::from_millis(300)),
            )
            .unwrap();
        let mut first = Peer::spawn(
            "large-subscriber",
            &[env[0].clone(), ("CRASH_EXPECT", "0".into())],
        );
        first.expect("MATCHED", Duration::from_secs(30));
        assert!(w.wait_for_matched(1, Duration::from_secs(20)));
        // Matching is asymmetric: give the subscriber's side a moment too.
        std::thread::sleep(Duration::from_millis(300));

        // Write continuously on another thread, noting each outcome and when.
        let w = Arc::new(w);
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, outcomes) = mpsc::channel::<(Instant, Wrote)>();
        let writer = {
            let (w, stop) = (Arc::clone(&w), Arc::clone(&stop));
            std::thread::spawn(move || {
                let base: Vec<u8> = (0..LARGE + 256).map(|i| (i % 256) as u8).collect();
                let mut seq = 0;
                while !stop.load(Ordering::Relaxed) {
                    let r = match w.write(&large(seq, &base)) {
                        Ok(()) => {
                            seq += 1;
                            Wrote::Ok(seq - 1)
                        }
                        Err(DdsError::Timeout) => Wrote::Blocked,
                        Err(e) => panic!("write: {e}"),
                    };
                    let _ = tx.send((Instant::now(), r));
                }
            })
        };
        // Two samples arrive whole and correct; the third is under way: kill.
        let mut got = Vec::new();
        while got.len() < 2 {
            match first.next(Duration::from_secs(30)) {
                Some(l) if l.starts_with("SAMPLE ") => got.push(sample(&l)),
                other => panic!("first subscriber: {other:?}; {}", first.report()),
            }
        }
        assert_eq!(got, vec![(0, true), (1, true)]);
        first.kill();
        let killed = Instant::now();
        eprintln!("subscriber killed {:?} after the start", t0.elapsed());

        // The dead reader blocks the writer until its lease ends; then it is unmatched.
        let deadline = killed + Duration::from_secs(15);
        while w.matched_count() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let unmatched = Instant::now();
        assert_eq!(w.matched_count(), 0, "the dead reader is still matched");
        eprintln!(
            "dead reader unmatched {:?} after the kill (lease 3 s)",
            unmatched - killed
        );
        assert!(p.discovered_participants().is_empty());
        // Writes succeed again.
        let mut after = 0;
        let mut log = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while after < 5 && Instant::now() < deadline {
            if let Ok((at, r)) = outcomes.recv_timeout(Duration::from_millis(100)) {
                log.push((at, r));
                after += usize::from(at > unmatched && matches!(r, Wrote::Ok(_)));
            }
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().expect("writer thread");
        log.extend(outcomes.try_iter());
        let blocked = log
            .iter()
            .filter(|(at, r)| *at > killed && *at <= unmatched && *r == Wrote::Blocked)
            .count();
        assert!(
            blocked > 0,
            "the writer was never blocked by the dead reader"
        );
        assert!(after >= 5, "the writer stayed blocked: {log:?}");
        let Some(last) = log.iter().rev().find_map(|(_, r)| match r {
            Wrote::Ok(seq) => Some(*seq),
            Wrote::Blocked => None,
        }) else {
            panic!("nothing written")
        };
        eprintln!(
            "{blocked} writes timed out while the dead reader was matched; last written {last}"
        );

        // A new subscriber gets the history (the last 4 samples), then 2 new ones.
        let mut second = Peer::spawn(
            "large-subscriber",
            &[env[0].clone(), ("CRASH_EXPECT", "6".into())],
        );
        second.expect("MATCHED", Duration::from_secs(30));
        assert!(w.wait_for_matched(1, Duration::from_secs(20)));
        eprintln!(
            "second subscriber matched {:?} after the start",
            t0.elapsed()
        );
        let mut got = Vec::new();
        while got.len() < 4 {
            match second.next(Duration::from_secs(30)) {
                Some(l) if l.starts_with("SAMPLE ") => got.push(sample(&l)),
                other => panic!("second subscriber: {other:?}; {}", second.report()),
            }
        }
        eprintln!("history received {:?} after the start", t0.elapsed());
        let history: Vec<(u32, bool)> = (last - 3..=last).map(|s| (s, true)).collect();
        assert_eq!(got, history, "the history, whole and in order");
        let base: Vec<u8> = (0..LARGE + 256).map(|i| (i % 256) as u8).collect();
        for seq in last + 1..=last + 2 {
            w.write(&large(seq, &base)).unwrap();
        }
        let rest = second.expect("DONE", Duration::from_secs(30));
        got.extend(rest.iter().map(|l| sample(l)));
        let all: Vec<(u32, bool)> = (last - 3..=last + 2).map(|s| (s, true)).collect();
        assert_eq!(got, all);
        assert!(
            second.exits_ok(Duration::from_secs(10)),
            "{}",
            second.report()
        );
        eprintln!("done in {:?}", t0.elapsed());
    });
}

/// A unique GUID prefix for this run: FerroDDS vendor id, a tag, our process id and time.
fn fresh_prefix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut p = [0u8; 12];
    p[..4].copy_from_slice(&[0x01, 0xfd, 0xc4, 0x5e]);
    p[4..8].copy_from_slice(&std::process::id().to_be_bytes());
    p[8..].copy_from_slice(&nanos.to_be_bytes());
    p.iter().map(|b| format!("{b:02x}")).collect()
}

/// Takes samples from `r` until `n` of run `run` arrived (or `timeout`); returns every
/// sample taken as `(run, seq_num, payload ok)`.
fn take_run(
    r: &ferrodds::DataReader<TestData>,
    run: i32,
    n: usize,
    timeout: Duration,
) -> Vec<(i32, u32, bool)> {
    let deadline = Instant::now() + timeout;
    let mut out: Vec<(i32, u32, bool)> = Vec::new();
    while out.iter().filter(|s| s.0 == run).count() < n && Instant::now() < deadline {
        let _ = r.wait_for_data(Duration::from_millis(50));
        for s in r.take().unwrap() {
            if let Some(d) = s.data {
                let ok = d.bin_data == payload_for(d.seq_num);
                out.push((d.entity_id, d.seq_num, ok));
            }
        }
    }
    out
}

/// A publisher process with a fixed GUID prefix writes 50 samples, is killed (SIGKILL) and
/// restarted with the same prefix; the new run's writer has the same GUID and its sequence
/// numbers start from 1 again. The subscriber (this process) takes the restart for a new
/// incarnation at once (the old run's lease is 60 s) and receives the new run's 20 samples,
/// none of them hidden by the 50 sequence numbers it remembered, none of the old run's again.
#[test]
fn a_publisher_restarted_with_the_same_prefix_is_a_new_incarnation() {
    with_timeout(60, || {
        let t0 = Instant::now();
        let p = participant(191);
        let t = p
            .create_topic::<TestData>(SMALL_TOPIC, TopicQos::default())
            .unwrap();
        let r = p
            .create_subscriber(SubscriberQos::default())
            .unwrap()
            .create_datareader(
                &t,
                DataReaderQos::default()
                    .reliable()
                    .keep_all()
                    .transient_local(),
            )
            .unwrap();
        let prefix = fresh_prefix();
        let env = |run: u32, count: u32, stay: bool| {
            [
                ("CRASH_DOMAIN", "191".to_owned()),
                ("CRASH_PREFIX", prefix.clone()),
                ("CRASH_RUN", run.to_string()),
                ("CRASH_COUNT", count.to_string()),
                ("CRASH_STAY", u8::from(stay).to_string()),
            ]
        };
        let mut first = Peer::spawn("small-publisher", &env(1, 50, true));
        let got = take_run(&r, 1, 50, Duration::from_secs(30));
        let want: Vec<(i32, u32, bool)> = (0..50).map(|s| (1, s, true)).collect();
        assert_eq!(got, want, "first run; {}", first.report());
        first.expect("MATCHED", Duration::from_secs(10));
        first.expect("ACKED", Duration::from_secs(30));
        let known = p.discovered_participants();
        assert_eq!(known.len(), 1);
        assert_eq!(known[0], parse_prefix(&prefix));
        first.kill();
        let restarted = Instant::now();

        let mut second = Peer::spawn("small-publisher", &env(2, 20, false));
        let got = take_run(&r, 2, 20, Duration::from_secs(30));
        let took = restarted.elapsed();
        let want: Vec<(i32, u32, bool)> = (0..20).map(|s| (2, s, true)).collect();
        assert_eq!(got, want, "second run; {}", second.report());
        eprintln!("the restarted publisher's 20 samples arrived {took:?} after the restart");
        second.expect("MATCHED", Duration::from_secs(10));
        second.expect("ACKED", Duration::from_secs(30));
        assert!(
            second.exits_ok(Duration::from_secs(20)),
            "{}",
            second.report()
        );
        let stats = p.engine_stats();
        assert_eq!(stats.participant_restarts, 1, "{stats:?}");
        eprintln!("done in {:?}", t0.elapsed());
    });
}
