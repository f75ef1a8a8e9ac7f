//! Helpers shared by the integration tests: loopback participants, deterministic samples,
//! and a watchdog that bounds every test's time.

#![allow(dead_code, unreachable_pub, missing_docs)]

pub mod peer;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use ferrodds::cdr::types::{TestData, TestDataKeyed, TestDataLarge};
use ferrodds::{
    Config, DataReader, DataReaderQos, DataWriter, DataWriterQos, DomainParticipant, PublisherQos,
    SecurityConfig, SubscriberQos, TopicQos, TopicType,
};

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

pub fn large_data(seq: u32, size: usize) -> TestDataLarge {
    TestDataLarge {
        key: [0; 4],
        entity_id: 7,
        seq_num: seq,
        timestamp_sec: 0,
        timestamp_usec: 0,
        latency_ping: -1,
        bin_data: sized_payload(seq, size),
    }
}

/// A writer in `w` and a reader in `r` on `topic` (reliable KEEP_ALL, or best effort),
/// matched both ways.
pub fn endpoints(
    w: &DomainParticipant,
    r: &DomainParticipant,
    topic: &str,
    reliable: bool,
) -> (DataWriter<TestDataLarge>, DataReader<TestDataLarge>) {
    endpoints_of(w, r, topic, reliable)
}

/// [`endpoints`] of any type.
pub fn endpoints_of<T: TopicType + Send + 'static>(
    w: &DomainParticipant,
    r: &DomainParticipant,
    topic: &str,
    reliable: bool,
) -> (DataWriter<T>, DataReader<T>) {
    let tw = w.create_topic::<T>(topic, TopicQos::default()).unwrap();
    let tr = r.create_topic::<T>(topic, TopicQos::default()).unwrap();
    let (wq, rq) = if reliable {
        (
            DataWriterQos::default().reliable().keep_all(),
            DataReaderQos::default().reliable().keep_all(),
        )
    } else {
        (
            DataWriterQos::default(),
            DataReaderQos::default().keep_all(),
        )
    };
    let writer = w
        .create_publisher(PublisherQos::default())
        .unwrap()
        .create_datawriter(&tw, wq)
        .unwrap();
    let reader = r
        .create_subscriber(SubscriberQos::default())
        .unwrap()
        .create_datareader(&tr, rq)
        .unwrap();
    assert!(
        writer.wait_for_matched(1, WAIT),
        "{topic}: writer did not match"
    );
    assert!(
        reader.wait_for_matched(1, WAIT),
        "{topic}: reader did not match"
    );
    (writer, reader)
}

/// Takes samples until `n` arrived or `wait` passed; returns their sequence numbers (each
/// payload checked).
pub fn receive(r: &DataReader<TestDataLarge>, n: usize, size: usize, wait: Duration) -> Vec<u32> {
    let deadline = Instant::now() + wait;
    let mut seqs = Vec::new();
    while seqs.len() < n && Instant::now() < deadline {
        let _ = r.wait_for_data(Duration::from_millis(50));
        for s in r.take().unwrap() {
            if let Some(d) = s.data {
                assert_eq!(d.bin_data, sized_payload(d.seq_num, size), "payload");
                seqs.push(d.seq_num);
            }
        }
    }
    seqs
}

/// The folder of the security files perftest ships (CA, identities, signed governance and
/// permissions documents).
pub fn perftest_secure_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tools/perftest/resource/secure")
        .canonicalize()
        .expect("tools/perftest/resource/secure")
}

/// perftest's DDS Security configuration for `role` ("pub" or "sub") with the governance
/// document `governance` from [`perftest_secure_dir`].
pub fn perftest_security(role: &str, governance: &str) -> SecurityConfig {
    let d = perftest_secure_dir();
    let f = |name: &str| format!("file:{}", d.join(name).display());
    let perm = if role == "pub" { "Pub" } else { "Sub" };
    SecurityConfig::new()
        .identity_ca(f("cacert.pem"))
        .identity_certificate(f(&format!("{role}.pem")))
        .private_key(f(&format!("{role}key.pem")))
        .permissions_ca(f("cacert.pem"))
        .governance(f(governance))
        .permissions(f(&format!("signed_PerftestPermissions{perm}.xml")))
}

/// A governance document like perftest's (domains 0-230, unauthenticated participants not
/// allowed, one topic rule for every topic without access control) with the protection
/// kinds `rtps`, `metadata` and `data`, signed by perftest's test CA (whose key perftest
/// ships in `resource/secure/demoCA`), written into `dir`; returns its absolute path.
pub fn signed_test_governance(
    dir: &std::path::Path,
    rtps: &str,
    metadata: &str,
    data: &str,
) -> std::path::PathBuf {
    signed_test_governance_discovery(dir, rtps, metadata, data, None)
}

/// [`signed_test_governance`] with discovery protection (`Some(discovery_protection_kind)`:
/// every topic announced over the secure SEDP endpoints).
pub fn signed_test_governance_discovery(
    dir: &std::path::Path,
    rtps: &str,
    metadata: &str,
    data: &str,
    discovery: Option<&str>,
) -> std::path::PathBuf {
    let d = perftest_secure_dir();
    let signed = ferrodds_testkit::secure::signed_governance_discovery(
        &std::fs::read(d.join("cacert.pem")).unwrap(),
        &std::fs::read(d.join("demoCA/private/cakey.pem")).unwrap(),
        rtps,
        metadata,
        data,
        discovery,
    )
    .expect("signing a governance with perftest's test CA");
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!(
        "governance-{rtps}-{metadata}-{data}-{}.p7s",
        discovery.unwrap_or("open")
    ));
    std::fs::write(&path, signed).unwrap();
    path.canonicalize().unwrap()
}

/// Takes from `r` until `n` samples arrived (or [`WAIT`] passed): their `seq_num`s in the
/// order taken.
pub fn take_seq_nums(r: &DataReader<TestData>, n: usize) -> Vec<u32> {
    let mut got = Vec::new();
    let deadline = Instant::now() + WAIT;
    while got.len() < n && Instant::now() < deadline {
        let _ = r.wait_for_data(Duration::from_millis(100));
        for s in r.take().unwrap() {
            if let Some(d) = s.data {
                got.push(d.seq_num);
            }
        }
    }
    got
}

/// The totals `ddsperf sub` printed, one per report line (`... total N ...`).
pub fn ddsperf_totals<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<u64> {
    lines
        .into_iter()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            it.by_ref().find(|w| *w == "total")?;
            it.next()?.parse().ok()
        })
        .collect()
}
