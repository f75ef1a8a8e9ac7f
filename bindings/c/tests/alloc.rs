//! Steady-state allocations of the C API's hot path: `ferrodds_write` from a caller
//! buffer and `ferrodds_take_each` lending the received bytes, between two participants
//! of this process on loopback (domain 138), reliable. Once warmed up they must not
//! allocate; the runtimes' background threads are counted too (the allocator is global),
//! so fewer than one allocation per 100 samples is allowed, as in the ferrodds crate's
//! own allocation test. Then 1 MiB samples (`TestDataLarge_t`, fragmented) written and
//! taken with `ferrodds_take` into a caller buffer, as the C# binding does, one at a time:
//! each arrives intact, and together they allocate less than one sample's size (a fresh
//! buffer per sample anywhere on the path, whose pages are faulted in again each time,
//! tripled the C# perftest's 1 MiB latency). Runs without the libtest harness.
#![allow(unsafe_code)]

use std::alloc::System;
use std::ffi::c_void;
use std::ptr::null;
use std::time::{Duration, Instant};

use ferrodds_c::*;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const DOMAIN: u32 = 138;
const SAMPLES: usize = 5_000;

unsafe extern "C" fn count(
    _d: *const u8,
    len: usize,
    _i: *const FerroddsSampleInfo,
    user: *mut c_void,
) {
    // SAFETY: `user` is the `usize` counter of `main`, alive for the whole test and only
    // touched from the thread that calls `ferrodds_take_each`.
    unsafe { *(user as *mut usize) += usize::from(len > 0) };
}

fn ok(rc: FerroddsRetcode) {
    assert_eq!(rc, FERRODDS_RETCODE_OK);
}

fn main() {
    let mut cfg = std::mem::MaybeUninit::uninit();
    ok(ferrodds_participant_config_loopback(cfg.as_mut_ptr()));
    // SAFETY: filled by the call above.
    let cfg = unsafe { cfg.assume_init() };
    let (mut pp, mut sp, mut pt, mut st, mut w, mut r) = (0, 0, 0, 0, 0, 0);
    ok(ferrodds_participant_create(DOMAIN, &cfg, &mut pp));
    ok(ferrodds_participant_create(DOMAIN, &cfg, &mut sp));
    ok(ferrodds_topic_create(
        pp,
        c"alloc".as_ptr(),
        FERRODDS_TYPE_TEST_DATA,
        &mut pt,
    ));
    ok(ferrodds_topic_create(
        sp,
        c"alloc".as_ptr(),
        FERRODDS_TYPE_TEST_DATA,
        &mut st,
    ));
    let mut wq = std::mem::MaybeUninit::uninit();
    ok(ferrodds_qos_writer_default(wq.as_mut_ptr()));
    // SAFETY: filled by the call above.
    let mut wq = unsafe { wq.assume_init() };
    wq.history_kind = FERRODDS_HISTORY_KEEP_ALL;
    wq.max_samples = 64;
    wq.max_blocking_time_ns = 5_000_000_000;
    let mut rq = wq;
    rq.max_samples = FERRODDS_LENGTH_UNLIMITED;
    ok(ferrodds_writer_create(pp, pt, &wq, null(), &mut w));
    ok(ferrodds_reader_create(sp, st, &rq, null(), &mut r));
    ok(ferrodds_writer_wait_for_matched(w, 1, 10_000_000_000));
    ok(ferrodds_reader_wait_for_matched(r, 1, 10_000_000_000));

    // A 200-byte perftest sample, XCDR1 little-endian.
    let mut sample = vec![0u8, 1, 0, 0];
    sample.extend_from_slice(&[0; 24]);
    sample.extend_from_slice(&200u32.to_le_bytes());
    sample.extend_from_slice(&[7; 200]);

    let mut received = 0usize;
    let user = &mut received as *mut usize as *mut c_void;
    let round = |n: usize| {
        // SAFETY: reads the counter the callback updates on this thread (only through
        // `user` from here on).
        let start = unsafe { *(user as *const usize) };
        for _ in 0..n {
            ok(ferrodds_write(w, sample.as_ptr(), sample.len()));
            let _ = ferrodds_take_each(r, 0, Some(count), user, std::ptr::null_mut());
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        // SAFETY: reads the counter the callback updates on this thread.
        while unsafe { *(user as *const usize) } - start < n && Instant::now() < deadline {
            let _ = ferrodds_reader_wait_for_data(r, 100_000_000);
            let _ = ferrodds_take_each(r, 0, Some(count), user, std::ptr::null_mut());
        }
        // SAFETY: as above.
        let got = unsafe { *(user as *const usize) } - start;
        assert_eq!(got, n, "samples received");
    };
    round(1_000); // warm-up: buffers and caches reach their steady size
                  // Warm-up of the worst case too: the writer's whole KEEP_ALL queue (64 samples)
                  // received before the application takes any (a thread descheduled under load does
                  // that). The pools of received buffers and the lent vectors then hold what the most
                  // samples outstanding need; without this a later stall allocated them for the first
                  // time inside the measurement (about one CI run in ten: 170 allocations).
    for _ in 0..3 {
        // SAFETY: reads the counter the callback updates on this thread.
        let start = unsafe { *(user as *const usize) };
        for _ in 0..64 {
            ok(ferrodds_write(w, sample.as_ptr(), sample.len()));
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: as above.
        while unsafe { *(user as *const usize) } - start < 64 && Instant::now() < deadline {
            let _ = ferrodds_take_each(r, 0, Some(count), user, std::ptr::null_mut());
            let _ = ferrodds_reader_wait_for_data(r, 100_000_000);
        }
    }
    let region = Region::new(GLOBAL);
    round(SAMPLES);
    let stats = region.change();
    println!(
        "C API write + take_each, {SAMPLES} reliable samples of 228 bytes: {} allocations, {} reallocations",
        stats.allocations, stats.reallocations
    );
    assert!(
        (stats.allocations + stats.reallocations) * 100 < SAMPLES,
        "the steady-state C API path allocates: {stats:?}"
    );
    large(pp, sp, &wq);
    ok(ferrodds_participant_delete(sp));
    ok(ferrodds_participant_delete(pp));
}

/// `bin_data` bytes of the large samples.
const LARGE: usize = 1 << 20;
/// Large samples measured (after as many to warm up).
const LARGE_SAMPLES: usize = 40;

/// A `TestDataLarge_t` sample (XCDR1 little-endian) whose `seq_num` and `bin_data` are
/// made from `k`, so that a sample assembled with bytes of an earlier one differs.
fn fill_large(sample: &mut [u8], k: u32) {
    sample[12..16].copy_from_slice(&k.to_le_bytes());
    for (i, b) in sample[32..].iter_mut().enumerate() {
        *b = (i as u32).wrapping_mul(31).wrapping_add(k) as u8;
    }
}

/// 1 MiB samples from `pp` to `sp`, written, taken and checked one at a time.
fn large(pp: FerroddsParticipant, sp: FerroddsParticipant, q: &FerroddsQos) {
    let (mut pt, mut st, mut w, mut r) = (0, 0, 0, 0);
    ok(ferrodds_topic_create(
        pp,
        c"alloc_large".as_ptr(),
        FERRODDS_TYPE_TEST_DATA_LARGE,
        &mut pt,
    ));
    ok(ferrodds_topic_create(
        sp,
        c"alloc_large".as_ptr(),
        FERRODDS_TYPE_TEST_DATA_LARGE,
        &mut st,
    ));
    ok(ferrodds_writer_create(pp, pt, q, null(), &mut w));
    ok(ferrodds_reader_create(sp, st, q, null(), &mut r));
    ok(ferrodds_writer_wait_for_matched(w, 1, 10_000_000_000));
    ok(ferrodds_reader_wait_for_matched(r, 1, 10_000_000_000));
    let mut sample = vec![0u8, 1, 0, 0];
    sample.extend_from_slice(&[0; 24]);
    sample.extend_from_slice(&(LARGE as u32).to_le_bytes());
    sample.resize(32 + LARGE, 0);
    let mut buf = vec![0u8; sample.len() + 64];
    let mut info = std::mem::MaybeUninit::uninit();
    let mut one = |k: u32| {
        fill_large(&mut sample, k);
        ok(ferrodds_write(w, sample.as_ptr(), sample.len()));
        ok(ferrodds_reader_wait_for_data(r, 20_000_000_000));
        let mut len = 0;
        ok(ferrodds_take(
            r,
            buf.as_mut_ptr(),
            buf.len(),
            &mut len,
            info.as_mut_ptr(),
        ));
        assert!(buf[..len] == sample[..], "sample {k} arrived altered");
        // Acknowledged: the writer's history has given its buffer back.
        ok(ferrodds_writer_wait_for_acknowledgments(w, 10_000_000_000));
    };
    for k in 0..LARGE_SAMPLES as u32 {
        one(k);
    }
    let region = Region::new(GLOBAL);
    for k in 0..LARGE_SAMPLES as u32 {
        one(1000 + k);
    }
    let stats = region.change();
    println!(
        "C API write + take, {LARGE_SAMPLES} reliable samples of 1 MiB: {} allocations of {} bytes, {} reallocations of {} bytes",
        stats.allocations, stats.bytes_allocated, stats.reallocations, stats.bytes_reallocated
    );
    let grown = usize::try_from(stats.bytes_reallocated).unwrap_or(0);
    assert!(
        stats.bytes_allocated + grown < LARGE,
        "the steady-state C API path allocates per 1 MiB sample: {stats:?}"
    );
    ok(ferrodds_reader_delete(r));
    ok(ferrodds_writer_delete(w));
}
