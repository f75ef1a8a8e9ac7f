//! Criterion benchmarks of the RTPS codec: parsing a DATA message with a small
//! and a 1 KiB payload, and emitting one into a reused buffer.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ferrodds_wire::{
    Data, Endianness, EntityId, GuidPrefix, Header, InfoTs, MessageView, MessageWriter,
    SequenceNumber, Submessage, Time,
};

fn build(payload: &[u8], buf: &mut [u8]) -> usize {
    let mut w = MessageWriter::new(buf, &Header::new(GuidPrefix([1; 12]))).expect("header");
    w.push(
        &InfoTs {
            timestamp: Some(Time::from_nanos(1_700_000_000_000_000_000)),
        },
        Endianness::Little,
    )
    .expect("info_ts");
    let d = Data::new(
        EntityId::UNKNOWN,
        EntityId::new([0, 0, 1], EntityId::KIND_WRITER_NO_KEY),
        SequenceNumber(42),
        Some(payload),
    );
    w.push(&d, Endianness::Little).expect("data");
    w.len()
}

fn parse_total(bytes: &[u8]) -> usize {
    let m = MessageView::parse(bytes).expect("valid message");
    let mut n = 0;
    for s in m.submessages() {
        if let Ok(Submessage::Data(d)) = s {
            n += d.serialized_payload.map_or(0, <[u8]>::len);
        }
    }
    n
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("codec");
    for size in [32usize, 1024] {
        let mut payload = vec![0u8; size];
        payload[1] = 1; // CDR_LE encapsulation
        let mut buf = vec![0u8; 2048];
        let n = build(&payload, &mut buf);
        let msg = buf[..n].to_vec();
        g.throughput(Throughput::Bytes(n as u64));
        g.bench_function(format!("parse_data_{size}"), |b| {
            b.iter(|| parse_total(black_box(&msg)))
        });
        g.bench_function(format!("emit_data_{size}"), |b| {
            b.iter(|| build(black_box(&payload), black_box(&mut buf)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
