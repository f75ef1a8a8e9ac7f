//! Helpers for tests that run the real `perftest` binary.
#![allow(dead_code)]

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Output of a finished process.
#[derive(Debug)]
pub(crate) struct Finished {
    /// Exit code (None if killed by a signal).
    pub(crate) code: Option<i32>,
    /// Captured stdout.
    pub(crate) stdout: String,
    /// Captured stderr.
    pub(crate) stderr: String,
}

/// Starts the binary with `args`, capturing stdout and stderr.
pub(crate) fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_perftest"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start perftest")
}

/// Waits for `child` at most `timeout`; kills it and panics on timeout.
pub(crate) fn wait(mut child: Child, timeout: Duration, what: &str) -> Finished {
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = t_out.join().unwrap();
    let stderr = t_err.join().unwrap();
    let Some(status) = status else {
        panic!("{what} timed out after {timeout:?}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    };
    Finished {
        code: status.code(),
        stdout,
        stderr,
    }
}

/// Lets `child` run `after`, then interrupts it (SIGINT, as Ctrl-C) if still running and
/// returns what it printed (bounded: killed 5 s later).
#[allow(dead_code)]
pub(crate) fn wait_killed_after(child: Child, after: Duration) -> Finished {
    let end = Instant::now() + after;
    let id = child.id();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(end.saturating_duration_since(Instant::now()));
        let _ = Command::new("kill")
            .args(["-INT", &id.to_string()])
            .status();
    });
    let f = wait(
        child,
        after + Duration::from_secs(5),
        "interrupted perftest",
    );
    let _ = stopper.join();
    f
}

/// Runs the binary to completion with a timeout.
pub(crate) fn run(args: &[&str], timeout: Duration) -> Finished {
    wait(spawn(args), timeout, &format!("perftest {args:?}"))
}

/// The data rows (lines starting with a number after optional spaces) of CSV output.
pub(crate) fn csv_rows(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split(',').map(|f| f.trim().to_string()).collect())
        .collect()
}

/// Parsed latency summary row: (size, ave, std, min, max, p50, p90, p99, p99.99, p99.9999).
pub(crate) fn latency_summary(stdout: &str) -> Vec<f64> {
    let mut lines = stdout.lines();
    while let Some(l) = lines.next() {
        if l.starts_with("Sample Size (Bytes), Ave") {
            let row = lines.next().expect("summary row");
            return row
                .split(',')
                .map(|f| f.trim().parse().expect(row))
                .collect();
        }
    }
    panic!("no latency summary in:\n{stdout}");
}

/// Parsed throughput summary row: (size, samples, samples/s, mbps, lost, lost%).
pub(crate) fn throughput_summary(stdout: &str) -> Vec<f64> {
    let mut lines = stdout.lines();
    while let Some(l) = lines.next() {
        if l.starts_with("Sample Size (Bytes), Total Samples") {
            let row = lines.next().expect("summary row");
            return row
                .split(',')
                .map(|f| f.trim().parse().unwrap_or(0.0))
                .collect();
        }
    }
    panic!("no throughput summary in:\n{stdout}");
}

/// The submessages of an RTPS message: (id, offset of its header). A zero length runs to
/// the end of the message.
pub(crate) fn submessages(msg: &[u8]) -> impl Iterator<Item = (u8, usize)> + '_ {
    let mut pos = 20;
    std::iter::from_fn(move || {
        if pos + 4 > msg.len() {
            return None;
        }
        let (id, flags, at) = (msg[pos], msg[pos + 1], pos);
        let len = if flags & 1 != 0 {
            u16::from_le_bytes([msg[pos + 2], msg[pos + 3]])
        } else {
            u16::from_be_bytes([msg[pos + 2], msg[pos + 3]])
        } as usize;
        pos = if len == 0 { msg.len() } else { pos + 4 + len };
        Some((id, at))
    })
}

/// Whether an RTPS message holds a submessage `id`.
pub(crate) fn has_submessage(msg: &[u8], id: u8) -> bool {
    submessages(msg).any(|(s, _)| s == id)
}

/// Whether an RTPS message holds a DATA or DATA_FRAG of a user writer.
pub(crate) fn has_user_data(msg: &[u8]) -> bool {
    submessages(msg).any(|(id, pos)| {
        (id == 0x15 || id == 0x16) && pos + 16 <= msg.len() && msg[pos + 15] & 0xC0 != 0xC0
    })
}
