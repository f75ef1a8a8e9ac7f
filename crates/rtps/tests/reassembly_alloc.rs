//! Adversarial DATA_FRAG input against a reliable reader, under a counting
//! global allocator: oversized, inconsistent, overlapping and never-completed
//! samples must be rejected or bounded, and the memory held never exceeds the
//! configured reassembly caps.
//!
//! Runs without the libtest harness (`harness = false`): the allocator is
//! global, so this single-threaded `main` is the only code measured.

mod common;

use std::alloc::System;

use common::{config, matched_pair};
use ferrodds_rtps::{
    Guid, Participant, ReaderAttributes, ReaderQos, ReassemblyLimits, Reliability, Timestamp,
    WriterAttributes, WriterQos,
};
use ferrodds_wire::{DataFrag, Endianness, FragmentNumber, Header, MessageWriter, SequenceNumber};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const PER_WRITER: usize = 4 << 20;
const TOTAL: usize = 6 << 20;

fn live_bytes() -> isize {
    let s = GLOBAL.stats();
    s.bytes_allocated as isize - s.bytes_deallocated as isize
}

/// One DATA_FRAG from `writer` (fragments from `first`, 1-based).
#[allow(clippy::too_many_arguments)]
fn frag(
    out: &mut Vec<u8>,
    writer: Guid,
    sn: i64,
    first: u32,
    count: u16,
    fragment_size: u16,
    sample_size: u32,
    bytes: &[u8],
) {
    let mut buf = vec![0u8; bytes.len() + 200];
    let mut m = MessageWriter::new(&mut buf, &Header::new(writer.prefix)).unwrap();
    m.push(
        &DataFrag {
            extra_flags: 0,
            octets_to_inline_qos: ferrodds_wire::submessage::DATA_FRAG_OCTETS_TO_INLINE_QOS,
            reader_id: ferrodds_rtps::EntityId::UNKNOWN,
            writer_id: writer.entity_id,
            writer_sn: SequenceNumber(sn),
            fragment_starting_num: FragmentNumber(first),
            fragments_in_submessage: count,
            fragment_size,
            sample_size,
            inline_qos: None,
            serialized_payload: bytes,
            key: false,
            non_standard_payload: false,
        },
        Endianness::Little,
    )
    .unwrap();
    out.clear();
    out.extend_from_slice(m.finish());
}

struct Probe {
    base: isize,
    peak: isize,
}

impl Probe {
    fn new() -> Self {
        Self {
            base: live_bytes(),
            peak: 0,
        }
    }
    fn feed(&mut self, b: &mut Participant, t: u64, dgram: &[u8]) {
        b.handle_datagram(Timestamp(t), None, dgram);
        while b.poll_event().is_some() {}
        self.peak = self.peak.max(live_bytes() - self.base);
    }
}

fn main() {
    let mut a = Participant::new(config(1), Timestamp(0));
    let mut cb = config(2);
    cb.reassembly = ReassemblyLimits {
        max_bytes_per_writer: PER_WRITER,
        max_bytes_total: TOTAL,
        // (A reliable reader at its sample-count limit makes room for a lower
        // SN by dropping the highest partial sample; at the default of 256 the
        // 4 MiB byte cap is reached first and refuses it: see issue 21's note.)
        max_samples_per_writer: 16,
        ..ReassemblyLimits::default()
    };
    let mut b = Participant::new(cb, Timestamp(0));
    let mut buf = vec![0u8; 65536];
    let (w, r, t) = matched_pair(
        &mut a,
        &mut b,
        WriterAttributes {
            topic_name: "T".into(),
            type_name: "T".into(),
            keyed: false,
            qos: WriterQos::default(),
        },
        ReaderAttributes {
            topic_name: "T".into(),
            type_name: "T".into(),
            keyed: false,
            qos: ReaderQos {
                reliability: Reliability::RELIABLE,
                ..ReaderQos::default()
            },
        },
        &mut buf,
    );
    let writer = a.writer_guid(w).unwrap();
    let chunk = vec![0x5au8; 60_000];
    let mut d = Vec::new();
    let mut probe = Probe::new();

    // 1. A 4 GB sample announced: rejected before anything is allocated.
    let rejected0 = b.stats().rejected_fragments;
    for k in 0..100u32 {
        frag(
            &mut d,
            writer,
            10 + i64::from(k),
            1,
            1,
            60_000,
            u32::MAX,
            &chunk,
        );
        probe.feed(&mut b, t, &d);
    }
    assert_eq!(b.stats().rejected_fragments - rejected0, 100);
    assert_eq!(b.reassembly_bytes(), 0);
    println!("4 GB announcements: peak {} bytes held", probe.peak);
    assert!(probe.peak < 64 * 1024, "{}", probe.peak);

    // 2. A 16 MiB sample (above the per-writer cap) is refused outright;
    // thousands of partial 2 MiB samples, one fragment each, never completed,
    // are bounded by the per-writer sample count and byte budget.
    frag(&mut d, writer, 999, 1, 1, 60_000, 16 << 20, &chunk);
    probe.feed(&mut b, t, &d);
    assert_eq!(b.reassembly_bytes(), 0);
    for k in 0..5000u32 {
        let first = 1 + (k * 37) % 34;
        frag(
            &mut d,
            writer,
            1000 + i64::from(k),
            first,
            1,
            60_000,
            2 << 20,
            &chunk,
        );
        probe.feed(&mut b, t, &d);
    }
    assert!(b.reassembly_bytes() > 0);
    let max_samples = 16;
    assert!(
        b.reassembly_bytes() <= (max_samples * 66_000).min(PER_WRITER),
        "{}",
        b.reassembly_bytes()
    );
    println!(
        "5000 partial 2 MiB samples: {} bytes under reassembly, peak {} bytes held",
        b.reassembly_bytes(),
        probe.peak
    );
    assert!(b.reassembly_bytes() <= PER_WRITER);

    // 3. Never-completed 1 MiB samples filling the byte budget.
    for sn in 100..140i64 {
        for f in 1..17u32 {
            frag(&mut d, writer, sn, f, 1, 60_000, 1 << 20, &chunk);
            probe.feed(&mut b, t, &d);
        }
    }
    println!(
        "never-completed 1 MiB samples: {} bytes under reassembly, peak {} bytes held",
        b.reassembly_bytes(),
        probe.peak
    );
    assert!(b.reassembly_bytes() <= PER_WRITER);

    // 4. Inconsistent sizes within one sample: rejected.
    let before = b.stats().rejected_fragments;
    frag(&mut d, writer, 3, 1, 1, 1000, 100_000, &chunk[..1000]);
    probe.feed(&mut b, t, &d);
    frag(&mut d, writer, 3, 2, 1, 2000, 100_000, &chunk[..2000]);
    probe.feed(&mut b, t, &d);
    frag(&mut d, writer, 3, 2, 1, 1000, 200_000, &chunk[..1000]);
    probe.feed(&mut b, t, &d);
    assert!(b.stats().rejected_fragments - before >= 2);

    // 5. Overlapping multi-fragment submessages complete a sample correctly.
    let sample: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
    frag(&mut d, writer, 1, 1, 4, 1000, 10_000, &sample[..4000]);
    probe.feed(&mut b, t, &d);
    frag(&mut d, writer, 1, 3, 5, 1000, 10_000, &sample[2000..7000]);
    probe.feed(&mut b, t, &d);
    frag(&mut d, writer, 1, 6, 5, 1000, 10_000, &sample[5000..]);
    probe.feed(&mut b, t, &d);
    // SN 1 is the first SN: deliverable once the writer's HEARTBEAT says so.
    let hb_now = Timestamp(t + 1);
    b.handle_timeout(hb_now);
    a.handle_timeout(Timestamp(t + 200_000_000));
    common::settle(&mut a, &mut b, Timestamp(t + 200_000_000), &mut buf);
    let got = b.take_sample(r).map(|s| s.payload);
    assert_eq!(got.as_deref(), Some(&sample[..]), "overlapping fragments");

    println!(
        "adversarial DATA_FRAG: peak {} bytes held (caps: {} per writer, {} per participant)",
        probe.peak, PER_WRITER, TOTAL
    );
    assert!(
        probe.peak <= (PER_WRITER + 256 * 1024) as isize,
        "peak {} exceeds the per-writer cap",
        probe.peak
    );
    println!("test adversarial_reassembly_is_bounded ... ok");
}
