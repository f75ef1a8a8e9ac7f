//! Interoperability with eProsima Fast DDS 2.9 (Debian's `libfastrtps-dev`), through the C++
//! peer `interop/fastdds/peer.cpp` (built by `scripts/build-fastdds-peer.sh` into
//! `target/peers/fastdds_peer`; `scripts/install-test-deps.sh` does both). The tests fail with
//! instructions when it is missing, unless `FERRODDS_SKIP_INTEROP=1`.
//!
//! Everything stays on loopback: the peer turns Fast DDS's builtin transports off and allows
//! one UDPv4 interface, 127.0.0.1, with the unicast initial peer 127.0.0.1; our participants
//! run `Config::loopback()`.
//!
//! Matrix: discovery both ways; our writer → Fast DDS reader and Fast DDS writer → our reader,
//! reliable and best effort, unkeyed (`TestData_t`) and keyed with 1,000 instances
//! (`TestDataKeyed_t`, every instance disposed, both ways), and 1 MiB samples (`TestDataLarge_t`,
//! fragmented both ways). In the reliable unkeyed case both sides also announce their own
//! shared-memory locators (FerroDDS's and Fast DDS's), which the other must ignore and keep UDP.
//! Every sample is checked by content, order and count. Domains 133–136.

mod common;

use std::time::{Duration, Instant};

use common::peer::{disposed_keys, fastdds_peer, parse_sample, Peer};
use common::*;
use ferrodds::cdr::types::{TestData, TestDataKeyed, TestDataLarge};
use ferrodds::{
    DataReader, DataReaderQos, DataWriter, DataWriterQos, DomainParticipant, InstanceState,
    PublisherQos, SubscriberQos, TopicQos, TopicType,
};

const PEER_WAIT: Duration = Duration::from_secs(30);
const N: u32 = 1000;

/// What one direction of a case runs.
#[derive(Clone, Copy)]
struct Case {
    domain: u32,
    /// `unkeyed`, `keyed` or `large` (the peer's `--type`).
    kind: &'static str,
    reliable: bool,
    count: u32,
    /// Fixed payload size (`large`), else `seq % 64` bytes.
    size: Option<usize>,
    /// Both sides add their shared-memory transport (announced, never usable by the other).
    shm: bool,
    /// Keyed: the writer disposes every instance after its samples, and the reader waits for
    /// as many disposals.
    dispose: bool,
}

impl Case {
    fn peer_args(&self, role: &str, topic: &str) -> Vec<String> {
        let mut a: Vec<String> = [
            role,
            "--type",
            self.kind,
            "--topic",
            topic,
            "--domain",
            &self.domain.to_string(),
            "--count",
            &self.count.to_string(),
            "--keep-all",
            "--timeout",
            "60",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        if self.reliable {
            a.push("--reliable".into());
        }
        if let Some(s) = self.size {
            a.extend(["--size".into(), s.to_string()]);
        }
        if self.shm {
            a.push("--shm".into());
        }
        a
    }

    fn participant(&self) -> DomainParticipant {
        DomainParticipant::with_config(self.domain, loopback_config().shared_memory(self.shm))
            .expect("participant")
    }
}

fn start(program: &std::path::PathBuf, args: &[String]) -> Peer {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    Peer::start_fastdds(program, &refs)
}

/// Our writer → a Fast DDS reader: every sample arrives in order with its content (best
/// effort: at least 98 %, in increasing order).
fn ours_to_fastdds<T: TopicType + Send + 'static>(
    case: Case,
    make: impl Fn(u32) -> T,
    key_of: impl Fn(u32) -> u32,
) {
    let Some(program) = fastdds_peer() else {
        return;
    };
    let topic = format!("ours_to_fastdds_{}_{}", case.kind, case.domain);
    let expect = if case.reliable {
        case.count
    } else {
        case.count * 98 / 100
    };
    let mut sub_case = case;
    sub_case.count = expect;
    let mut sub_args = sub_case.peer_args("sub", &topic);
    if case.dispose {
        sub_args.extend(["--disposals".into(), case.count.to_string()]);
    }
    let mut peer = start(&program, &sub_args);
    peer.wait_line(PEER_WAIT, |l| l == "READY");
    let p = case.participant();
    let t = p.create_topic::<T>(&topic, TopicQos::default()).unwrap();
    let mut wq = DataWriterQos::default()
        .keep_all()
        .max_blocking_time(Duration::from_secs(10));
    wq = if case.reliable {
        wq.reliable()
    } else {
        wq.best_effort()
    };
    let w: DataWriter<T> = p
        .create_publisher(PublisherQos::default())
        .unwrap()
        .create_datawriter(&t, wq)
        .unwrap();
    assert!(
        w.wait_for_matched(1, PEER_WAIT),
        "Fast DDS reader not matched"
    );
    peer.wait_line(PEER_WAIT, |l| l == "MATCHED 1");
    for i in 0..case.count {
        w.write(&make(i)).unwrap();
        if !case.reliable && i % 10 == 9 {
            std::thread::sleep(Duration::from_millis(3));
        }
    }
    if case.dispose {
        for i in 0..case.count {
            w.dispose(&make(i)).unwrap();
        }
    }
    if case.reliable {
        w.wait_for_acknowledgments(PEER_WAIT).unwrap();
    }
    let (lines, ok) = peer.finish(Duration::from_secs(70));
    assert!(
        ok,
        "Fast DDS subscriber failed; last lines {:?}",
        lines.iter().rev().take(5).collect::<Vec<_>>()
    );
    let samples: Vec<(u32, u32, bool)> = lines.iter().filter_map(|l| parse_sample(l)).collect();
    if case.reliable {
        assert_eq!(samples.len(), case.count as usize, "samples at Fast DDS");
    } else {
        assert!(
            samples.len() >= expect as usize && samples.len() <= case.count as usize,
            "best-effort samples at Fast DDS: {} of {}",
            samples.len(),
            case.count
        );
    }
    for (i, (key, seq, good)) in samples.iter().enumerate() {
        assert!(good, "content at Fast DDS of sample {i} (seq {seq})");
        assert_eq!(*key, key_of(*seq), "key of {seq}");
    }
    if case.dispose {
        // Each instance disposed once, named by its key (Fast DDS's instance handle is the key
        // hash we sent).
        assert_eq!(
            disposed_keys(&lines),
            (0..case.count).map(&key_of).collect::<Vec<_>>(),
            "disposals at Fast DDS"
        );
    }
    let mut seqs: Vec<u32> = samples.iter().map(|s| s.1).collect();
    if case.kind == "keyed" {
        // One sample per instance here: order holds within an instance only, and Fast DDS's
        // take_next_sample walks its instances (a reliable run gave seq 256 right after 240).
        seqs.sort_unstable();
    }
    if case.reliable {
        assert_eq!(
            seqs,
            (0..case.count).collect::<Vec<_>>(),
            "order at Fast DDS"
        );
    } else {
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "order at Fast DDS: {seqs:?}"
        );
    }
}

fn take_all<T: TopicType + Send + 'static>(
    r: &DataReader<T>,
    valid: usize,
    invalid: usize,
) -> Vec<ferrodds::Sample<T>> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut out: Vec<ferrodds::Sample<T>> = Vec::new();
    loop {
        let v = out.iter().filter(|s| s.info.valid_data).count();
        if (v >= valid && out.len() - v >= invalid) || Instant::now() > deadline {
            return out;
        }
        let _ = r.wait_for_data(Duration::from_millis(100));
        out.extend(r.take().unwrap());
    }
}

/// A Fast DDS writer → our reader; returns the samples taken (valid and not) once `valid`
/// (and `disposals` disposals) arrived, after the peer ended well.
fn fastdds_to_ours<T: TopicType + Send + 'static>(
    case: Case,
    instances: u32,
    disposals: usize,
) -> Vec<ferrodds::Sample<T>> {
    let Some(program) = fastdds_peer() else {
        return Vec::new();
    };
    let topic = format!("fastdds_to_ours_{}_{}", case.kind, case.domain);
    let p = case.participant();
    let t = p.create_topic::<T>(&topic, TopicQos::default()).unwrap();
    let mut rq = DataReaderQos::default().keep_all();
    rq = if case.reliable {
        rq.reliable()
    } else {
        rq.best_effort()
    };
    let r = p
        .create_subscriber(SubscriberQos::default())
        .unwrap()
        .create_datareader(&t, rq)
        .unwrap();
    let mut args = case.peer_args("pub", &topic);
    args.extend(["--instances".into(), instances.to_string()]);
    if disposals > 0 {
        args.push("--dispose".into());
    }
    let peer = start(&program, &args);
    assert!(
        r.wait_for_matched(1, PEER_WAIT),
        "Fast DDS writer not matched"
    );
    let valid = if case.reliable {
        case.count
    } else {
        case.count * 98 / 100
    };
    let samples = take_all(&r, valid as usize, disposals);
    let (lines, ok) = peer.finish(Duration::from_secs(70));
    assert!(ok, "Fast DDS publisher failed: {lines:?}");
    if case.reliable {
        assert!(
            lines.iter().any(|l| l == "ACKED"),
            "Fast DDS saw no acknowledgement of every sample: {lines:?}"
        );
    }
    samples
}

fn check_unkeyed_from_fastdds(samples: &[ferrodds::Sample<TestData>], case: Case) {
    let data: Vec<&TestData> = samples.iter().filter_map(|s| s.data.as_ref()).collect();
    if case.reliable {
        assert_eq!(data.len(), case.count as usize, "samples from Fast DDS");
    } else {
        assert!(
            data.len() >= (case.count * 98 / 100) as usize,
            "best-effort samples from Fast DDS: {} of {}",
            data.len(),
            case.count
        );
    }
    let mut last = None;
    for (i, d) in data.iter().enumerate() {
        if case.reliable {
            assert_eq!(d.seq_num, i as u32, "order from Fast DDS");
        } else {
            assert!(last < Some(d.seq_num), "order from Fast DDS");
            last = Some(d.seq_num);
        }
        assert_eq!(d.entity_id, 7);
        assert_eq!(
            d.bin_data,
            payload_for(d.seq_num),
            "content of {}",
            d.seq_num
        );
    }
}

/// Unkeyed `TestData_t` from us to Fast DDS, then from Fast DDS to us.
fn unkeyed_both_ways(case: Case) {
    ours_to_fastdds(case, test_data, |_| 0);
    let got = fastdds_to_ours::<TestData>(case, 1, 0);
    if fastdds_peer().is_some() {
        check_unkeyed_from_fastdds(&got, case);
    }
}

#[test]
fn reliable_unkeyed_both_ways_beside_both_shared_memory_transports() {
    with_timeout(180, || {
        let case = Case {
            domain: 133,
            kind: "unkeyed",
            reliable: true,
            count: N,
            size: None,
            shm: true,
            dispose: false,
        };
        unkeyed_both_ways(case);
    });
}

#[test]
fn best_effort_unkeyed_both_ways() {
    with_timeout(180, || {
        let case = Case {
            domain: 134,
            kind: "unkeyed",
            reliable: false,
            count: N,
            size: None,
            shm: false,
            dispose: false,
        };
        unkeyed_both_ways(case);
    });
}

#[test]
fn reliable_keyed_1000_instances_both_ways_with_disposals() {
    with_timeout(180, || {
        let case = Case {
            domain: 135,
            kind: "keyed",
            reliable: true,
            count: N,
            size: None,
            shm: false,
            dispose: true,
        };
        ours_to_fastdds(case, |i| keyed_data(i, i), |seq| seq);
        let got = fastdds_to_ours::<TestDataKeyed>(case, N, N as usize);
        if fastdds_peer().is_none() {
            return;
        }
        let valid: Vec<&ferrodds::Sample<TestDataKeyed>> =
            got.iter().filter(|s| s.info.valid_data).collect();
        assert_eq!(valid.len(), N as usize, "keyed samples from Fast DDS");
        for (i, s) in valid.iter().enumerate() {
            let d = s.data.as_ref().unwrap();
            assert_eq!(d.seq_num, i as u32);
            assert_eq!(u32::from_le_bytes(d.key), i as u32, "key of {i}");
            assert_eq!(d.bin_data, payload_for(d.seq_num));
        }
        // Fast DDS disposed every instance: each disposal names an instance its data used.
        let disposed: Vec<&ferrodds::Sample<TestDataKeyed>> = got
            .iter()
            .filter(|s| {
                !s.info.valid_data && s.info.instance_state == InstanceState::NotAliveDisposed
            })
            .collect();
        assert_eq!(disposed.len(), N as usize, "disposals from Fast DDS");
        let handles: std::collections::HashSet<_> =
            valid.iter().map(|s| s.info.instance_handle).collect();
        assert_eq!(handles.len(), N as usize, "one instance per key");
        assert!(
            disposed
                .iter()
                .all(|s| handles.contains(&s.info.instance_handle)),
            "a disposal named an instance no sample used"
        );
    });
}

#[test]
fn one_mebibyte_samples_both_ways() {
    with_timeout(240, || {
        const SIZE: usize = 1 << 20;
        let case = Case {
            domain: 136,
            kind: "large",
            reliable: true,
            count: 5,
            size: Some(SIZE),
            shm: false,
            dispose: false,
        };
        ours_to_fastdds(case, |i| large_data(i, SIZE), |_| 0);
        let got = fastdds_to_ours::<TestDataLarge>(case, 1, 0);
        if fastdds_peer().is_none() {
            return;
        }
        let data: Vec<&TestDataLarge> = got.iter().filter_map(|s| s.data.as_ref()).collect();
        assert_eq!(data.len(), 5, "1 MiB samples from Fast DDS");
        for (i, d) in data.iter().enumerate() {
            assert_eq!(d.seq_num, i as u32);
            assert!(
                d.bin_data == sized_payload(i as u32, SIZE),
                "content of {i}"
            );
        }
    });
}
