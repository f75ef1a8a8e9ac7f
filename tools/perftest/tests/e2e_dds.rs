//! End-to-end runs over the FerroDDS middleware: publisher and subscriber as separate
//! processes on 127.0.0.1 (`-nic 127.0.0.1` turns multicast off and uses 127.0.0.1 as the
//! discovery peer). Each test has its own domain and a process timeout.
#![cfg(feature = "dds")]

mod common;

use std::time::Duration;

use common::{latency_summary, run, spawn, throughput_summary, wait};

const T: Duration = Duration::from_secs(60);

fn pair(
    domain: &str,
    pub_args: &[&str],
    sub_args: &[&str],
) -> (common::Finished, common::Finished) {
    let mut s = vec!["-sub", "-nic", "127.0.0.1", "-domain", domain];
    s.extend_from_slice(sub_args);
    let sub = spawn(&s);
    let mut p = vec!["-pub", "-nic", "127.0.0.1", "-domain", domain];
    p.extend_from_slice(pub_args);
    let publ = spawn(&p);
    let p = wait(publ, T, "publisher");
    let s = wait(sub, T, "subscriber");
    (p, s)
}

fn assert_ok(r: &common::Finished, who: &str) {
    assert_eq!(r.code, Some(0), "{who} failed:\n{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("Test ended."), "{who}: {}", r.stderr);
}

/// A bounded throughput run: every sample must arrive (reliable) or be accounted as lost.
fn throughput(domain: &str, extra: &[&str], reliable: bool) {
    let mut pa = vec!["-numIter", "5000", "-latencyCount", "100", "-noPrint"];
    pa.extend_from_slice(extra);
    let mut sa = vec!["-noPrint"];
    sa.extend_from_slice(extra);
    let (p, s) = pair(domain, &pa, &sa);
    assert_ok(&p, "pub");
    assert_ok(&s, "sub");
    let t = throughput_summary(&s.stdout);
    assert_eq!(t[1] + t[4], 5000.0, "{t:?}");
    if reliable {
        assert_eq!(t[4], 0.0, "{t:?}");
    }
    assert!(t[1] > 0.0);
    let l = latency_summary(&p.stdout);
    assert!(l[1] > 0.0, "{l:?}");
}

#[test]
fn latency_reliable() {
    let (p, s) = pair(
        "60",
        &["-latencyTest", "-exec", "2", "-noPrint"],
        &["-noPrint"],
    );
    assert_ok(&p, "pub");
    assert_ok(&s, "sub");
    assert!(p.stderr.contains("\tReliability: Reliable"));
    let l = latency_summary(&p.stdout);
    assert!(l[1] > 0.0 && l[3] > 0.0 && l[5] <= l[4], "{l:?}");
    let t = throughput_summary(&s.stdout);
    assert!(t[1] > 10.0);
    assert_eq!(t[4], 0.0);
}

#[test]
fn latency_best_effort_keyed() {
    let (p, s) = pair(
        "61",
        &[
            "-latencyTest",
            "-numIter",
            "500",
            "-bestEffort",
            "-keyed",
            "-instances",
            "3",
        ],
        &["-bestEffort", "-keyed", "-instances", "3"],
    );
    assert_ok(&p, "pub");
    assert_ok(&s, "sub");
    assert!(p.stderr.contains("\tKeyed: Yes"));
    let l = latency_summary(&p.stdout);
    assert!(l[1] > 0.0);
}

#[test]
fn throughput_reliable_unkeyed() {
    throughput("62", &[], true);
}

#[test]
fn throughput_reliable_keyed() {
    throughput(
        "63",
        &["-keyed", "-instances", "4", "-dataLen", "256"],
        true,
    );
}

#[test]
fn throughput_best_effort() {
    throughput("64", &["-bestEffort"], false);
}

#[test]
fn throughput_unbounded_type() {
    // The Large (unbounded) type selected explicitly on both sides.
    throughput("65", &["-unbounded", "-dataLen", "2000"], true);
}

#[test]
fn two_subscribers() {
    let d = "66";
    let s0 = spawn(&[
        "-sub",
        "-nic",
        "127.0.0.1",
        "-domain",
        d,
        "-sid",
        "0",
        "-noPrint",
    ]);
    let s1 = spawn(&[
        "-sub",
        "-nic",
        "127.0.0.1",
        "-domain",
        d,
        "-sid",
        "1",
        "-noPrint",
    ]);
    let p = spawn(&[
        "-pub",
        "-nic",
        "127.0.0.1",
        "-domain",
        d,
        "-numSubscribers",
        "2",
        "-numIter",
        "3000",
        "-latencyCount",
        "50",
        "-noPrint",
    ]);
    let p = wait(p, T, "publisher");
    let s0 = wait(s0, T, "sub 0");
    let s1 = wait(s1, T, "sub 1");
    assert_ok(&p, "pub");
    for s in [&s0, &s1] {
        assert_ok(s, "sub");
        let t = throughput_summary(&s.stdout);
        assert_eq!((t[1], t[4]), (3000.0, 0.0), "{t:?}");
    }
    assert!(latency_summary(&p.stdout)[1] > 0.0);
}

#[test]
fn missing_middleware_features_fail_at_once() {
    for (args, needle) in [
        (
            &["-pub", "-batchSize", "8192"][..],
            "'-batchSize' is not supported",
        ),
        (
            &["-pub", "-dataLen", "100000", "-batchSize", "0"][..],
            "fragmentation",
        ),
    ] {
        let r = run(args, Duration::from_secs(10));
        assert_ne!(r.code, Some(0), "{args:?}");
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn two_publishers_one_subscriber() {
    let d = "67";
    let s = spawn(&[
        "-sub",
        "-nic",
        "127.0.0.1",
        "-domain",
        d,
        "-numPublishers",
        "2",
        "-noPrint",
    ]);
    let p0 = spawn(&[
        "-pub",
        "-nic",
        "127.0.0.1",
        "-domain",
        d,
        "-pidMultiPubTest",
        "0",
        "-numIter",
        "2000",
        "-latencyCount",
        "50",
        "-noPrint",
    ]);
    let p1 = spawn(&[
        "-pub",
        "-nic",
        "127.0.0.1",
        "-domain",
        d,
        "-pidMultiPubTest",
        "1",
        "-numIter",
        "2000",
        "-latencyCount",
        "50",
        "-noPrint",
    ]);
    let p0 = wait(p0, T, "publisher 0");
    let p1 = wait(p1, T, "publisher 1");
    let s = wait(s, T, "subscriber");
    assert_ok(&p0, "pub0");
    assert_ok(&p1, "pub1");
    assert_ok(&s, "sub");
    // Only publisher 0 pings and prints latency.
    assert!(latency_summary(&p0.stdout)[1] > 0.0);
    assert!(p1.stdout.is_empty(), "{}", p1.stdout);
    let t = throughput_summary(&s.stdout);
    assert_eq!((t[1], t[4]), (4000.0, 0.0), "{t:?}");
}
