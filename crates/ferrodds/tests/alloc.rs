//! Steady-state allocations of the write path: a best-effort and a reliable
//! `DataWriter::write` (serialize, engine, send from the caller's thread; for the reliable
//! writer also the acknowledgements its receive thread handles) must not allocate once
//! warmed up.
//!
//! Runs without the libtest harness (`harness = false`): the counting allocator is global.
//! The matched reader is a `shapes` subscriber in another process, so its allocations are
//! not counted; the runtime's own background threads still run, so the assertion allows a
//! little background noise (fewer than one allocation per 100 writes) instead of exactly 0.

use std::alloc::System;
use std::process::{Command, Stdio};
use std::time::Duration;

use ferrodds::cdr::types::ShapeType;
use ferrodds::{Config, DataWriterQos, DomainParticipant, PublisherQos, TopicQos};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const WRITES: u32 = 20_000;

fn main() {
    let mut sub = subscriber(&["-b", "-d", "164"]);
    let result = std::panic::catch_unwind(|| run(164, false));
    let _ = sub.kill();
    let _ = sub.wait();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
    let mut sub = subscriber(&["-d", "166"]);
    let result = std::panic::catch_unwind(|| run(166, true));
    let _ = sub.kill();
    let _ = sub.wait();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// A `shapes` subscriber (reliable unless `-b`) in another process.
fn subscriber(extra: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_shapes"))
        .args(["-S", "-t", "Square"])
        .args(extra)
        .args([
            "--quiet",
            "--duration",
            "30",
            "--interface",
            "127.0.0.1",
            "--peer",
            "127.0.0.1",
            "--no-multicast",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn shapes subscriber")
}

fn run(domain: u32, reliable: bool) {
    let cfg = Config::loopback().spdp_period(Duration::from_secs(5));
    let p = DomainParticipant::with_config(domain, cfg).expect("participant");
    let t = p
        .create_topic::<ShapeType>("Square", TopicQos::default())
        .unwrap();
    let w = p
        .create_publisher(PublisherQos::default())
        .unwrap()
        .create_datawriter(
            &t,
            if reliable {
                DataWriterQos::default().reliable()
            } else {
                DataWriterQos::default().best_effort()
            },
        )
        .unwrap();
    let kind = if reliable { "reliable" } else { "best-effort" };
    assert!(
        w.wait_for_matched(1, Duration::from_secs(20)),
        "subscriber not matched"
    );
    std::thread::sleep(Duration::from_millis(300));
    let sample = ShapeType {
        color: "BLUE".into(),
        x: 1,
        y: 2,
        shapesize: 30,
    };
    // warm up: buffers grow to their steady size
    for _ in 0..1000 {
        w.write(&sample).unwrap();
    }
    let region = Region::new(GLOBAL);
    for _ in 0..WRITES {
        w.write(&sample).unwrap();
    }
    let stats = region.change();
    let per_write = stats.allocations as f64 / f64::from(WRITES);
    println!(
        "alloc: {} allocations, {} reallocations over {WRITES} {kind} writes ({per_write:.4}/write)",
        stats.allocations, stats.reallocations
    );
    assert!(
        stats.allocations + stats.reallocations < (WRITES / 100) as usize,
        "the {kind} write path allocates: {stats:?}"
    );
    println!("alloc: ok");
}
