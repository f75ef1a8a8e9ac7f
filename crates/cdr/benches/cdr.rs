//! Criterion benchmarks: encode/decode `TestData` with 32 B and 63000 B payloads.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ferrodds_cdr::types::TestData;
use ferrodds_cdr::{decode_sample, encode_sample, Encoding};
use std::hint::black_box;

fn sample(len: usize) -> TestData {
    TestData {
        key: [1, 0, 0, 0],
        entity_id: 1,
        seq_num: 42,
        timestamp_sec: 7,
        timestamp_usec: 123_456,
        latency_ping: -1,
        bin_data: vec![0xa5; len],
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("TestData");
    for len in [32usize, 63_000] {
        let s = sample(len);
        g.throughput(Throughput::Bytes((len + 28) as u64));
        for (name, enc) in [
            ("xcdr1_le", Encoding::XCDR1_LE),
            ("xcdr2_be", Encoding::XCDR2_BE),
        ] {
            let mut buf = Vec::with_capacity(len + 64);
            g.bench_with_input(
                BenchmarkId::new(format!("encode_{name}"), len),
                &s,
                |b, s| {
                    b.iter(|| {
                        buf.clear();
                        encode_sample(black_box(s), enc, &mut buf).unwrap();
                        black_box(buf.len())
                    })
                },
            );
            let mut bytes = Vec::new();
            encode_sample(&s, enc, &mut bytes).unwrap();
            g.bench_with_input(
                BenchmarkId::new(format!("decode_{name}"), len),
                &bytes,
                |b, bytes| b.iter(|| decode_sample::<TestData>(black_box(bytes)).unwrap()),
            );
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
