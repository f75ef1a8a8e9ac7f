//! A sender in another process: the test binary re-executes itself as the child.

mod common;

use std::io::IoSlice;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::TestDir;
use ferrodds_transport_shm::{SendError, ShmReceiver, ShmSender};

const CHILD_ENV: &str = "FERRODDS_SHM_CHILD_SEGMENT";
const MESSAGES: u32 = 20_000;

fn message(i: u32) -> Vec<u8> {
    let mut m = i.to_le_bytes().to_vec();
    m.extend((0..(i % 700)).map(|k| (k ^ i) as u8));
    m
}

/// The child's side; does nothing when run as an ordinary test.
#[test]
fn child_sender() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let tx = ShmSender::open_path(&PathBuf::from(path), 77).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    for i in 0..MESSAGES {
        let m = message(i);
        loop {
            match tx.send(&[IoSlice::new(&m)]) {
                Ok(()) => break,
                Err(SendError::Full) => {
                    assert!(Instant::now() < deadline, "receiver stopped");
                    std::thread::yield_now();
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
}

#[test]
fn messages_cross_processes() {
    let dir = TestDir::new("xproc");
    let mut rx = ShmReceiver::create(&dir.config(5, 64, 1024)).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_sender", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, rx.path())
        .spawn()
        .unwrap();
    let child_pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut buf = Vec::with_capacity(1024);
    let mut i = 0;
    while i < MESSAGES {
        if let Some(r) = rx.recv(&mut buf, Duration::from_millis(100)) {
            assert_eq!(r.pid, child_pid);
            assert_eq!(r.src, 77);
            assert_eq!(buf, message(i));
            i += 1;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("only {i} of {MESSAGES} messages within the time limit");
        }
    }
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success());
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the child did not exit");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(rx.frame_errors(), 0);
}

/// Children killed (SIGKILL) while sending flat out, at varying moments: the receiver keeps
/// going (skipping any claim a child left behind, within the stall timeout) and takes
/// messages from a later sender.
#[test]
fn killed_senders_do_not_block_the_receiver() {
    let dir = TestDir::new("xkill");
    let mut rx = ShmReceiver::create(&dir.config(6, 64, 1024)).unwrap();
    let mut buf = Vec::with_capacity(1024);
    let tx = ShmSender::open_path(rx.path(), 1).unwrap();
    for round in 0..5u64 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_sender", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, rx.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Receive (so the child sends rather than finds the ring full) until the first of
        // its messages arrives, then a little longer, then kill it.
        let start = Instant::now();
        while rx.recv(&mut buf, Duration::from_millis(100)).is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "child never sent"
            );
        }
        let until = Instant::now() + Duration::from_micros(200 + 700 * round);
        while Instant::now() < until {
            let _ = rx.try_recv(&mut buf);
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // Our own message comes through, after whatever the child left.
        let deadline = Instant::now() + Duration::from_secs(10);
        let marker = round.to_le_bytes();
        let mut sent = false;
        loop {
            if !sent {
                match tx.send(&[IoSlice::new(b"after"), IoSlice::new(&marker)]) {
                    Ok(()) => sent = true,
                    Err(SendError::Full) => {}
                    Err(e) => panic!("{e}"),
                }
            }
            if rx.recv(&mut buf, Duration::from_millis(100)).is_some() && buf.starts_with(b"after")
            {
                assert_eq!(buf[5..], marker);
                break;
            }
            assert!(
                Instant::now() < deadline,
                "receiver blocked by the killed sender"
            );
        }
    }
    // Nothing a killed child wrote is invalid; at most a claim per child was skipped.
    assert_eq!(rx.frame_errors(), rx.skipped_slots());
    assert!(rx.skipped_slots() <= 5);
}
