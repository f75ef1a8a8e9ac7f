//! Criterion benchmarks of DATA_FRAG reassembly: a 1 MiB and a 10 MiB sample
//! from 64 000-byte fragments, in order, into a fresh reassembler.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ferrodds_rtps::reassembly::{FragmentRef, Reassembler, ReassemblyBudget, ReassemblyLimits};
use ferrodds_rtps::Timestamp;

const FRAG: usize = 64_000;

fn reassemble(sample: &[u8]) -> usize {
    let mut r = Reassembler::new(ReassemblyLimits::default(), ReassemblyBudget::new());
    let mut out = 0;
    for (i, chunk) in sample.chunks(FRAG).enumerate() {
        let f = FragmentRef {
            sn: 1,
            offset: (i * FRAG) as u64,
            data: chunk,
            sample_size: sample.len() as u32,
            fragment_size: FRAG as u16,
            meta: None,
            source_timestamp: None,
        };
        if let Ok(Some(c)) = r.add(&f, true, Timestamp(1)) {
            out = c.payload.len();
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("reassembly");
    for (name, size) in [("1MiB", 1usize << 20), ("10MiB", 10 << 20)] {
        let sample: Vec<u8> = (0..size).map(|i| i as u8).collect();
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_function(name, |b| {
            b.iter(|| assert_eq!(reassemble(black_box(&sample)), size));
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
