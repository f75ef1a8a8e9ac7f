//! Criterion benchmarks of batching: 1000 samples of 32 B written, sent and
//! received (best effort, two engines back to back), unbatched versus batched
//! into 8192-byte batches. Throughput is reported in samples.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ferrodds_rtps::{
    Batching, ChangeKind, GuidPrefix, History, Locator, Participant, ParticipantConfig,
    ReaderAttributes, ReaderId, ReaderQos, Reliability, Timestamp, WriteRequest, WriterAttributes,
    WriterId, WriterQos,
};

const N: usize = 1000;

fn config(n: u8) -> ParticipantConfig {
    let ip = core::net::Ipv4Addr::new(127, 0, 0, n);
    ParticipantConfig {
        guid_prefix: GuidPrefix([1, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, n]),
        metatraffic_unicast_locators: vec![Locator::udpv4(ip, 7410)],
        default_unicast_locators: vec![Locator::udpv4(ip, 7411)],
        spdp_destinations: vec![Locator::udpv4(
            core::net::Ipv4Addr::new(127, 0, 0, 3 - n),
            7410,
        )],
        // (Engine cost of 1000 samples moved at one instant of time:
        // pacing would hold most of them back.)
        congestion_control: false,
        ..ParticipantConfig::default()
    }
}

fn pump(from: &mut Participant, to: &mut Participant, now: Timestamp, buf: &mut [u8]) -> usize {
    let mut n = 0;
    let mut dests = Vec::new();
    while let Some(len) = from.poll_transmit_into(now, buf, &mut dests) {
        to.handle_datagram(now, None, &buf[..len]);
        n += 1;
    }
    n
}

struct Pair {
    a: Participant,
    b: Participant,
    w: WriterId,
    r: ReaderId,
    buf: Vec<u8>,
}

fn setup(batching: Batching) -> Pair {
    let mut a = Participant::new(config(1), Timestamp(0));
    let mut b = Participant::new(config(2), Timestamp(0));
    let mut buf = vec![0u8; 65536];
    let w = a
        .create_writer(
            WriterAttributes {
                topic_name: "T".into(),
                type_name: "T".into(),
                keyed: false,
                // KEEP_ALL: with KEEP_LAST 1 a held sample would be replaced
                // by the next write of the (single) instance.
                qos: WriterQos {
                    reliability: Reliability::BEST_EFFORT,
                    history: History::KeepAll,
                    batching,
                    ..WriterQos::default()
                },
            },
            Timestamp(1),
        )
        .expect("writer");
    let r = b
        .create_reader(
            ReaderAttributes {
                topic_name: "T".into(),
                type_name: "T".into(),
                keyed: false,
                // KEEP_ALL: a batch delivers many samples of the one instance.
                qos: ReaderQos {
                    history: History::KeepAll,
                    ..ReaderQos::default()
                },
            },
            Timestamp(1),
        )
        .expect("reader");
    for t in 1..50u64 {
        let now = Timestamp(t * 1_000_000);
        a.handle_timeout(now);
        b.handle_timeout(now);
        pump(&mut a, &mut b, now, &mut buf);
        pump(&mut b, &mut a, now, &mut buf);
        while a.poll_event().is_some() {}
        while b.poll_event().is_some() {}
        if a.matched_reader_count(w) == 1 && b.matched_writer_count(r) == 1 {
            break;
        }
    }
    assert_eq!(a.matched_reader_count(w), 1);
    Pair { a, b, w, r, buf }
}

/// Writes N samples, draining after every write (as a synchronous
/// publisher does); returns the samples received.
fn run(p: &mut Pair, now: Timestamp) -> usize {
    let payload = [
        0u8, 1, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
        22, 23, 24, 25, 26, 27, 28,
    ];
    let req = WriteRequest {
        kind: ChangeKind::Alive,
        key_hash: None,
        serialized_payload: &payload,
        source_timestamp: None,
    };
    let mut got = 0;
    for _ in 0..N {
        p.a.write(p.w, req, now).expect("write");
        pump(&mut p.a, &mut p.b, now, &mut p.buf);
        while p.b.take_sample(p.r).is_some() {
            got += 1;
        }
    }
    p.a.flush(p.w, now).expect("flush");
    pump(&mut p.a, &mut p.b, now, &mut p.buf);
    while p.b.take_sample(p.r).is_some() {
        got += 1;
    }
    while p.b.poll_event().is_some() {}
    got
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("batching_32B");
    g.throughput(Throughput::Elements(N as u64));
    for (name, batching) in [
        ("unbatched", Batching::default()),
        ("batched_8192", Batching::bytes(8192)),
    ] {
        let mut p = setup(batching);
        let mut t = 1_000_000_000u64;
        g.bench_function(name, |b| {
            b.iter(|| {
                t += 1;
                assert_eq!(run(black_box(&mut p), Timestamp(t)), N);
            });
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
