//! Running the peer DDS programs from tests: the Cyclone DDS Python peer
//! (`interop/cyclone/peer.py`) and the Fast DDS peer (`interop/fastdds/peer.cpp`, built into
//! `target/peers/fastdds_peer` by `scripts/build-fastdds-peer.sh`). Both speak the same
//! line protocol.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// Repository root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
}

/// The venv interpreter with `cyclonedds`, or `None` when `FERRODDS_SKIP_INTEROP=1`.
/// Panics with setup instructions when the venv is missing and skipping was not requested.
pub fn cyclone_python() -> Option<PathBuf> {
    let py = repo_root().join("target/peers-venv/bin/python");
    if std::env::var("FERRODDS_SKIP_INTEROP").as_deref() == Ok("1") {
        ferrodds_testkit::skip("FERRODDS_SKIP_INTEROP=1 set, Cyclone DDS interop not run");
        return None;
    }
    let ok = py.exists()
        && Command::new(&py)
            .args(["-c", "import cyclonedds"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    assert!(
        ok,
        "Cyclone DDS Python peer missing: run scripts/setup-python-peers.sh (creates \
         target/peers-venv with the `cyclonedds` package), or set FERRODDS_SKIP_INTEROP=1 \
         to skip the interop tests explicitly"
    );
    Some(py)
}

/// The Fast DDS peer program, or `None` when `FERRODDS_SKIP_INTEROP=1`. Panics with setup
/// instructions when it was not built and skipping was not requested.
pub fn fastdds_peer() -> Option<PathBuf> {
    if std::env::var("FERRODDS_SKIP_INTEROP").as_deref() == Ok("1") {
        ferrodds_testkit::skip("FERRODDS_SKIP_INTEROP=1 set, Fast DDS interop not run");
        return None;
    }
    let program = repo_root().join("target/peers/fastdds_peer");
    assert!(
        program.exists(),
        "Fast DDS peer missing: run scripts/build-fastdds-peer.sh (needs Debian's \
         libfastrtps-dev; scripts/install-test-deps.sh installs it and builds the peer), or set \
         FERRODDS_SKIP_INTEROP=1 to skip the interop tests explicitly"
    );
    Some(program)
}

/// Parses a peer's `SAMPLE <key> <seq> <entity> <len> ok|BAD` line into (key, seq, good):
/// good when the peer found the payload it expected from a writer of entity id 7.
pub fn parse_sample(l: &str) -> Option<(u32, u32, bool)> {
    let mut it = l.strip_prefix("SAMPLE ")?.split(' ');
    let key = it.next()?.parse().ok()?;
    let seq = it.next()?.parse().ok()?;
    let entity: i32 = it.next()?.parse().ok()?;
    let _len: usize = it.next()?.parse().ok()?;
    Some((key, seq, it.next()? == "ok" && entity == 7))
}

/// The keys of a peer's `DISPOSED <key>` lines, sorted.
pub fn disposed_keys(lines: &[String]) -> Vec<u32> {
    let mut keys: Vec<u32> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("DISPOSED ")?.parse().ok())
        .collect();
    keys.sort_unstable();
    keys
}

/// A running peer process with its stdout lines streamed into a channel.
pub struct Peer {
    child: Child,
    lines: Receiver<String>,
    pub seen: Vec<String>,
    name: String,
}

impl Peer {
    /// Starts `peer.py <args>` with the loopback-only Cyclone configuration.
    pub fn start(py: &PathBuf, args: &[&str]) -> Peer {
        let root = repo_root();
        let script = root.join("interop/cyclone/peer.py");
        let xml = root
            .join("interop/cyclone/cyclone-loopback.xml")
            .canonicalize()
            .expect("cyclone-loopback.xml");
        let mut cmd = Command::new(py);
        cmd.arg(script)
            .args(args)
            .env("CYCLONEDDS_URI", format!("file://{}", xml.display()))
            .env("PYTHONUNBUFFERED", "1");
        Self::spawn(cmd, args)
    }

    /// Starts the Fast DDS peer `program` with `args` (it keeps itself on loopback).
    pub fn start_fastdds(program: &PathBuf, args: &[&str]) -> Peer {
        let mut cmd = Command::new(program);
        cmd.args(args);
        Self::spawn(cmd, args)
    }

    fn spawn(mut cmd: Command, args: &[&str]) -> Peer {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn peer");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Peer {
            child,
            lines: rx,
            seen: Vec::new(),
            name: args.join(" "),
        }
    }

    /// Waits for a line matching `pred`; panics after `timeout`.
    pub fn wait_line(&mut self, timeout: Duration, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        if let Some(l) = self.seen.iter().find(|l| pred(l)) {
            return l.clone();
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if pred(&l) {
                        return l;
                    }
                }
                Err(_) => panic!(
                    "peer `{}`: expected line not seen within {timeout:?}; got {:?}",
                    self.name,
                    self.seen.iter().rev().take(10).collect::<Vec<_>>()
                ),
            }
        }
    }

    /// Waits for the process to exit (killing it after `timeout`); returns every stdout line
    /// and whether it exited successfully.
    pub fn finish(mut self, timeout: Duration) -> (Vec<String>, bool) {
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                break Some(s);
            }
            if Instant::now() > deadline {
                stop(&mut self.child);
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // drain what is left
        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(200)) {
            self.seen.push(l);
        }
        let seen = std::mem::take(&mut self.seen);
        (seen, status.is_some_and(|s| s.success()))
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            stop(&mut self.child);
        }
    }
}

/// Stops a peer process: SIGTERM first, so that it can shut down cleanly (the Fast DDS peer
/// then deletes its participant, and Fast DDS removes its shared-memory files from
/// /dev/shm, which a killed process leaves behind), then SIGKILL if it is still running
/// after two seconds.
fn stop(child: &mut Child) {
    let termed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if termed {
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
