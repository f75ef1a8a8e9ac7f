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

/// A child killed at a random point: the receiver keeps going (skipping a claim the child
/// may have left) and takes messages from a later sender.
#[test]
fn killed_sender_does_not_block_the_receiver() {
    let dir = TestDir::new("xkill");
    let mut rx = ShmReceiver::create(&dir.config(6, 64, 1024)).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_sender", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, rx.path())
        .spawn()
        .unwrap();
    let mut buf = Vec::with_capacity(1024);
    // Let it send a while (filling the ring), then kill it mid-stream.
    let start = Instant::now();
    let mut got = 0u32;
    while got < 1000 && start.elapsed() < Duration::from_secs(30) {
        if rx.recv(&mut buf, Duration::from_millis(100)).is_some() {
            got += 1;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Drain what it published.
    while rx.recv(&mut buf, Duration::from_millis(50)).is_some() {}
    let tx = ShmSender::open_path(rx.path(), 1).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match tx.send(&[IoSlice::new(b"after")]) {
            Ok(()) | Err(SendError::Full) => {}
            Err(e) => panic!("{e}"),
        }
        if rx.recv(&mut buf, Duration::from_millis(100)).is_some() && buf == b"after" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "receiver blocked by the killed sender"
        );
    }
}
