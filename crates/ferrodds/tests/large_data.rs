//! Large data over real UDP on loopback (issue 4): 1 MB and 10 MB samples,
//! asynchronous publishing under a token-bucket flow controller, batching of
//! small samples (with a samples/s comparison), 100,000 instances, and 1 MB
//! samples both ways with Cyclone DDS. Each test uses its own domain id
//! (197, 200-209) and is bounded in time.

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::peer::{cyclone_python, Peer};
use common::*;
use ferrodds::cdr::types::{TestData, TestDataKeyed, TestDataLarge};
use ferrodds::{
    Batching, DataReader, DataReaderQos, DataWriterQos, FlowController, PublisherQos,
    SubscriberQos, TopicQos,
};

fn take_n<T: ferrodds::TopicType + Send + 'static>(
    r: &DataReader<T>,
    n: usize,
    wait: Duration,
) -> Vec<ferrodds::Sample<T>> {
    let deadline = Instant::now() + wait;
    let mut out: Vec<ferrodds::Sample<T>> = Vec::new();
    while out.iter().filter(|s| s.info.valid_data).count() < n && Instant::now() < deadline {
        let _ = r.wait_for_data(Duration::from_millis(50));
        out.extend(r.take().unwrap());
    }
    out
}

/// A writer on `a` and a reader on `b` of `topic`, matched.
fn pair<T: ferrodds::TopicType + Send + 'static>(
    domain: u32,
    topic: &str,
    wq: DataWriterQos,
    rq: DataReaderQos,
) -> (
    ferrodds::DomainParticipant,
    ferrodds::DomainParticipant,
    ferrodds::DataWriter<T>,
    DataReader<T>,
) {
    let a = participant(domain);
    let b = participant(domain);
    let ta = a.create_topic::<T>(topic, TopicQos::default()).unwrap();
    let tb = b.create_topic::<T>(topic, TopicQos::default()).unwrap();
    let w = a
        .create_publisher(PublisherQos::default())
        .unwrap()
        .create_datawriter(&ta, wq)
        .unwrap();
    let r = b
        .create_subscriber(SubscriberQos::default())
        .unwrap()
        .create_datareader(&tb, rq)
        .unwrap();
    assert!(w.wait_for_matched(1, WAIT), "writer did not match");
    assert!(r.wait_for_matched(1, WAIT), "reader did not match");
    (a, b, w, r)
}

fn reliable_keep_all_writer() -> DataWriterQos {
    DataWriterQos::default()
        .reliable()
        .keep_all()
        .max_blocking_time(Duration::from_secs(10))
}

#[test]
fn one_and_ten_megabyte_samples_over_udp() {
    with_timeout(60, || {
        let (_a, _b, w, r) = pair::<TestDataLarge>(
            200,
            "large_1_10",
            reliable_keep_all_writer(),
            DataReaderQos::default().reliable().keep_all(),
        );
        let sizes = [1_048_576usize, 10_485_760];
        for (i, &size) in sizes.iter().enumerate() {
            let t = Instant::now();
            w.write(&large_data(i as u32, size)).unwrap();
            let got = take_n(&r, 1, Duration::from_secs(20));
            let d = got
                .iter()
                .find_map(|s| s.data.as_ref())
                .unwrap_or_else(|| panic!("{size}-byte sample not delivered"));
            assert_eq!(d.seq_num, i as u32);
            assert!(
                d.bin_data == sized_payload(i as u32, size),
                "content of the {size}-byte sample"
            );
            eprintln!("{size} bytes delivered in {:?}", t.elapsed());
        }
        w.wait_for_acknowledgments(WAIT).unwrap();
    });
}

#[test]
fn asynchronous_writer_is_paced_by_its_flow_controller() {
    with_timeout(60, || {
        // 20 MB/s: five 1 MiB samples need about 250 ms.
        let fc = FlowController::bytes_per_second(20_000_000);
        let (_a, _b, w, r) = pair::<TestDataLarge>(
            201,
            "large_async",
            reliable_keep_all_writer().asynchronous(fc),
            DataReaderQos::default().reliable().keep_all(),
        );
        let n = 5u32;
        let size = 1 << 20;
        let t = Instant::now();
        for i in 0..n {
            w.write(&large_data(i, size)).unwrap();
        }
        let queued = t.elapsed();
        let got = take_n(&r, n as usize, Duration::from_secs(20));
        let took = t.elapsed();
        let data: Vec<&TestDataLarge> = got.iter().filter_map(|s| s.data.as_ref()).collect();
        assert_eq!(data.len(), n as usize);
        for (i, d) in data.iter().enumerate() {
            assert_eq!(d.seq_num, i as u32);
            assert!(
                d.bin_data == sized_payload(i as u32, size),
                "content of {i}"
            );
        }
        eprintln!("async: {n} x 1 MiB queued in {queued:?}, delivered in {took:?} at 20 MB/s");
        // The bucket starts full (1.5 periods): the rest is paced.
        assert!(took >= Duration::from_millis(150), "not paced: {took:?}");
        assert!(queued < took, "write must return after queueing");
        assert_eq!(w.pending_bytes(), 0);
        w.wait_for_acknowledgments(WAIT).unwrap();
    });
}

#[test]
fn asynchronous_presets_deliver_everything() {
    with_timeout(60, || {
        for (domain, fc) in [
            (202, FlowController::GBPS_1),
            (203, FlowController::GBPS_10),
        ] {
            let (_a, _b, w, r) = pair::<TestDataLarge>(
                domain,
                "large_presets",
                reliable_keep_all_writer().asynchronous(fc),
                DataReaderQos::default().reliable().keep_all(),
            );
            for i in 0..4 {
                w.write(&large_data(i, 500_000)).unwrap();
            }
            let got = take_n(&r, 4, Duration::from_secs(20));
            assert_eq!(got.iter().filter(|s| s.info.valid_data).count(), 4);
        }
    });
}

/// Writes `n` small samples and returns samples/s at the reader.
fn small_sample_rate(domain: u32, batching: Batching, n: u32) -> f64 {
    let (_a, _b, w, r) = pair::<TestData>(
        domain,
        "small",
        reliable_keep_all_writer().batching(batching),
        DataReaderQos::default().reliable().keep_all(),
    );
    let t = Instant::now();
    let mut got = 0usize;
    let mut next = 0u32;
    for i in 0..n {
        let mut s = test_data(i);
        s.bin_data.clear();
        w.write(&s).unwrap();
        if i % 512 == 511 {
            for smp in r.take().unwrap() {
                if let Some(d) = smp.data {
                    assert_eq!(d.seq_num, next, "order");
                    next += 1;
                    got += 1;
                }
            }
        }
    }
    w.flush().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while got < n as usize && Instant::now() < deadline {
        let _ = r.wait_for_data(Duration::from_millis(50));
        for smp in r.take().unwrap() {
            if let Some(d) = smp.data {
                assert_eq!(d.seq_num, next, "order");
                next += 1;
                got += 1;
            }
        }
    }
    assert_eq!(got, n as usize, "every sample received");
    f64::from(n) / t.elapsed().as_secs_f64()
}

#[test]
fn batching_small_samples_over_udp_delivers_every_sample() {
    with_timeout(120, || {
        let n = 20_000;
        let plain = small_sample_rate(204, Batching::default(), n);
        let batched = small_sample_rate(205, Batching::bytes(8192), n);
        eprintln!(
            "{n} small samples (TestData, 32 B serialized) over loopback UDP: {plain:.0} samples/s unbatched, {batched:.0} samples/s batched 8192 B ({:.1}x)",
            batched / plain
        );
    });
}

#[test]
fn write_flush_sends_a_batched_sample_at_once() {
    with_timeout(30, || {
        let b = Batching {
            max_flush_delay: Duration::from_secs(5),
            ..Batching::bytes(1 << 20)
        };
        let (_a, _b, w, r) = pair::<TestData>(
            206,
            "ping",
            reliable_keep_all_writer().batching(b),
            DataReaderQos::default().reliable().keep_all(),
        );
        w.write(&test_data(0)).unwrap();
        assert!(w.pending_bytes() > 0, "held by batching");
        assert!(take_n(&r, 1, Duration::from_millis(300)).is_empty());
        let t = Instant::now();
        w.write_flush(&test_data(1)).unwrap();
        let got = take_n(&r, 2, Duration::from_secs(2));
        assert_eq!(got.iter().filter(|s| s.info.valid_data).count(), 2);
        assert!(t.elapsed() < Duration::from_secs(1));
    });
}

#[test]
fn a_partial_batch_goes_out_after_the_flush_delay() {
    // Writes after the first of a batch are only queued (the write path skips its
    // drain); the flush-delay timer must still send the batch.
    with_timeout(30, || {
        let b = Batching {
            max_flush_delay: Duration::from_millis(20),
            ..Batching::bytes(1 << 20)
        };
        let (_a, _b, w, r) = pair::<TestData>(
            208,
            "partial",
            reliable_keep_all_writer().batching(b),
            DataReaderQos::default().reliable().keep_all(),
        );
        for i in 0..5 {
            w.write(&test_data(i)).unwrap();
        }
        assert!(w.pending_bytes() > 0, "held by batching");
        let got = take_n(&r, 5, Duration::from_secs(2));
        let seqs: Vec<u32> = got
            .iter()
            .filter_map(|s| s.data.as_ref())
            .map(|d| d.seq_num)
            .collect();
        assert_eq!(seqs, vec![0, 1, 2, 3, 4]);
        assert_eq!(w.pending_bytes(), 0);
    });
}

#[test]
fn hundred_thousand_instances_over_udp() {
    with_timeout(120, || {
        let n = 100_000u32;
        let (_a, _b, w, r) = pair::<TestDataKeyed>(
            207,
            "instances",
            DataWriterQos::default()
                .reliable()
                .keep_last(1)
                .batching(Batching::bytes(8192)),
            DataReaderQos::default().reliable().keep_last(1),
        );
        let t = Instant::now();
        let mut keys = HashSet::new();
        for i in 0..n {
            w.write(&keyed_data(i, i)).unwrap();
            if i % 4096 == 4095 {
                for s in r.take().unwrap() {
                    if let Some(d) = s.data {
                        keys.insert(d.key);
                    }
                }
            }
        }
        w.flush().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while keys.len() < n as usize && Instant::now() < deadline {
            let _ = r.wait_for_data(Duration::from_millis(50));
            for s in r.take().unwrap() {
                if let Some(d) = s.data {
                    assert_eq!(d.seq_num, u32::from_le_bytes(d.key));
                    keys.insert(d.key);
                }
            }
        }
        eprintln!("{} instances delivered in {:?}", keys.len(), t.elapsed());
        assert_eq!(keys.len(), n as usize);
    });
}

/// Parses a peer `SAMPLE <key> <seq> <entity> <len> ok|BAD` line.
fn parse_sample(l: &str) -> Option<(u32, bool)> {
    let mut it = l.strip_prefix("SAMPLE ")?.split(' ');
    let _key: u32 = it.next()?.parse().ok()?;
    let seq = it.next()?.parse().ok()?;
    let entity: i32 = it.next()?.parse().ok()?;
    let _len: usize = it.next()?.parse().ok()?;
    Some((seq, it.next()? == "ok" && entity == 7))
}

/// 1 MB samples both ways with Cyclone DDS (Python peer), reliable.
#[test]
fn one_megabyte_samples_both_ways_with_cyclone() {
    with_timeout(180, || {
        let Some(py) = cyclone_python() else { return };
        const SIZE: usize = 1_048_576;
        const N: u32 = 5;
        let wait = Duration::from_secs(60);
        let size = SIZE.to_string();
        let count = N.to_string();
        let args = |role: &'static str, topic: &'static str| -> Vec<String> {
            [
                role,
                "--type",
                "large",
                "--size",
                &size,
                "--topic",
                topic,
                "--domain",
                "208",
                "--count",
                &count,
                "--reliable",
                "--keep-all",
                "--timeout",
                "90",
            ]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
        };
        let sub_args = args("sub", "mb_out");
        let sub_refs: Vec<&str> = sub_args.iter().map(String::as_str).collect();
        let mut sub = Peer::start(&py, &sub_refs);
        sub.wait_line(wait, |l| l == "READY");
        let p = participant(208);
        let t_out = p
            .create_topic::<TestDataLarge>("mb_out", TopicQos::default())
            .unwrap();
        let t_in = p
            .create_topic::<TestDataLarge>("mb_in", TopicQos::default())
            .unwrap();
        let r = p
            .create_subscriber(SubscriberQos::default())
            .unwrap()
            .create_datareader(&t_in, DataReaderQos::default().reliable().keep_all())
            .unwrap();
        let pub_args = args("pub", "mb_in");
        let pub_refs: Vec<&str> = pub_args.iter().map(String::as_str).collect();
        let publ = Peer::start(&py, &pub_refs);
        let w = p
            .create_publisher(PublisherQos::default())
            .unwrap()
            .create_datawriter(&t_out, reliable_keep_all_writer())
            .unwrap();
        assert!(w.wait_for_matched(1, wait));
        sub.wait_line(wait, |l| l == "MATCHED 1");
        for i in 0..N {
            w.write(&large_data(i, SIZE)).unwrap();
        }
        w.wait_for_acknowledgments(wait).unwrap();
        let got = take_n(&r, N as usize, wait);
        let (plines, pok) = publ.finish(Duration::from_secs(90));
        assert!(pok, "Cyclone publisher: {plines:?}");
        let data: Vec<&TestDataLarge> = got.iter().filter_map(|s| s.data.as_ref()).collect();
        assert_eq!(data.len(), N as usize, "1 MB samples from Cyclone");
        for (i, d) in data.iter().enumerate() {
            assert_eq!(d.seq_num, i as u32);
            assert!(
                d.bin_data == sized_payload(i as u32, SIZE),
                "content of {i}"
            );
        }
        let (lines, ok) = sub.finish(Duration::from_secs(90));
        assert!(
            ok,
            "Cyclone subscriber: {:?}",
            lines.iter().rev().take(5).collect::<Vec<_>>()
        );
        let samples: Vec<(u32, bool)> = lines.iter().filter_map(|l| parse_sample(l)).collect();
        assert_eq!(samples.len(), N as usize);
        for (i, (seq, good)) in samples.iter().enumerate() {
            assert_eq!(*seq, i as u32);
            assert!(good, "content at Cyclone of {i}");
        }
    });
}

#[test]
fn configured_fragment_size_and_sample_limit_apply() {
    with_timeout(60, || {
        let cfg = loopback_config()
            .fragment_size(1344)
            .max_message_size(8000)
            .max_sample_size(1 << 20);
        let a = ferrodds::DomainParticipant::with_config(209, cfg.clone()).unwrap();
        let b = ferrodds::DomainParticipant::with_config(209, cfg).unwrap();
        let ta = a
            .create_topic::<TestDataLarge>("frag_cfg", TopicQos::default())
            .unwrap();
        let tb = b
            .create_topic::<TestDataLarge>("frag_cfg", TopicQos::default())
            .unwrap();
        let w = a
            .create_publisher(PublisherQos::default())
            .unwrap()
            .create_datawriter(&ta, reliable_keep_all_writer())
            .unwrap();
        let r = b
            .create_subscriber(SubscriberQos::default())
            .unwrap()
            .create_datareader(&tb, DataReaderQos::default().reliable().keep_all())
            .unwrap();
        assert!(w.wait_for_matched(1, WAIT));
        assert!(r.wait_for_matched(1, WAIT));
        w.write(&large_data(0, 500_000)).unwrap();
        let got = take_n(&r, 1, Duration::from_secs(20));
        let d = got.iter().find_map(|s| s.data.as_ref()).expect("delivered");
        assert!(d.bin_data == sized_payload(0, 500_000));
        // Above max_sample_size: refused at the writer.
        assert!(w.write(&large_data(1, 2 << 20)).is_err());
    });
}

/// Samples written into one batch share the batch's source timestamp by default (Connext's
/// `source_timestamp_resolution` infinite), even when written milliseconds apart; with a
/// zero resolution each keeps its own (the write path then reads the clock for every sample).
#[test]
fn batched_samples_share_their_batchs_source_timestamp() {
    with_timeout(60, || {
        for resolution in [Duration::MAX, Duration::ZERO] {
            let b = Batching {
                source_timestamp_resolution: resolution,
                ..Batching::bytes(1 << 20)
            };
            let (_a, _b, w, r) = pair::<TestData>(
                197,
                "stamps",
                reliable_keep_all_writer().batching(b),
                DataReaderQos::default().reliable().keep_all(),
            );
            for i in 0..5 {
                w.write(&test_data(i)).unwrap();
                std::thread::sleep(Duration::from_millis(2));
            }
            assert!(w.pending_bytes() > 0, "held by batching");
            w.flush().unwrap();
            let got = take_n(&r, 5, Duration::from_secs(5));
            // In 2^-32 s.
            let stamps: Vec<i64> = got
                .iter()
                .map(|s| s.info.source_timestamp.expect("stamped"))
                .map(|t| (i64::from(t.seconds) << 32) | i64::from(t.fraction))
                .collect();
            assert_eq!(stamps.len(), 5);
            if resolution == Duration::MAX {
                assert!(stamps.iter().all(|t| *t == stamps[0]), "{stamps:?}");
            } else {
                let two_ms = (1i64 << 32) / 500;
                for p in stamps.windows(2) {
                    assert!(p[1] - p[0] >= two_ms, "{stamps:?}");
                }
            }
        }
    });
}
