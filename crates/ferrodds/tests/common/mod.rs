//! Helpers shared by the integration tests: loopback participants, deterministic samples,
//! and a watchdog that bounds every test's time.

#![allow(dead_code, unreachable_pub, missing_docs)]

pub mod peer;

use std::sync::mpsc;
use std::time::Duration;

use ferrodds::cdr::types::{TestData, TestDataKeyed};
use ferrodds::{Config, DomainParticipant};

/// Runs `f` on another thread and fails the test if it does not finish within `secs`.
pub fn with_timeout<F: FnOnce() + Send + 'static>(secs: u64, f: F) {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => h.join().expect("test body panicked"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // the body panicked: propagate its message
            if let Err(e) = h.join() {
                std::panic::resume_unwind(e);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("test exceeded its {secs} s time bound"),
    }
}

/// Loopback-only configuration used by every test: 127.0.0.1, no multicast, initial peer
/// 127.0.0.1, fast SPDP.
pub fn loopback_config() -> Config {
    Config::loopback()
        .spdp_period(Duration::from_millis(500))
        .lease_duration(Duration::from_secs(10))
}

pub fn participant(domain: u32) -> DomainParticipant {
    DomainParticipant::with_config(domain, loopback_config()).expect("participant")
}

/// Deterministic payload: `seq % 64` bytes, byte i = (seq + i) % 256.
pub fn payload_for(seq: u32) -> Vec<u8> {
    (0..seq % 64).map(|i| ((seq + i) % 256) as u8).collect()
}

pub fn test_data(seq: u32) -> TestData {
    TestData {
        key: [0; 4],
        entity_id: 7,
        seq_num: seq,
        timestamp_sec: 0,
        timestamp_usec: 0,
        latency_ping: -1,
        bin_data: payload_for(seq),
    }
}

pub fn keyed_data(instance: u32, seq: u32) -> TestDataKeyed {
    TestDataKeyed {
        key: instance.to_le_bytes(),
        entity_id: 7,
        seq_num: seq,
        timestamp_sec: 0,
        timestamp_usec: 0,
        latency_ping: -1,
        bin_data: payload_for(seq),
    }
}

pub const WAIT: Duration = Duration::from_secs(10);

/// Fixed-size deterministic payload: byte i = (seq + i) % 256.
pub fn sized_payload(seq: u32, size: usize) -> Vec<u8> {
    (0..size)
        .map(|i| ((seq as usize + i) % 256) as u8)
        .collect()
}

pub fn large_data(seq: u32, size: usize) -> ferrodds::cdr::types::TestDataLarge {
    ferrodds::cdr::types::TestDataLarge {
        key: [0; 4],
        entity_id: 7,
        seq_num: seq,
        timestamp_sec: 0,
        timestamp_usec: 0,
        latency_ping: -1,
        bin_data: sized_payload(seq, size),
    }
}
