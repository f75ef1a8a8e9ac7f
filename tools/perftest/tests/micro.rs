//! The small-footprint build `perftest_micro` (tools/perftest-micro, built on its own by
//! `scripts/test.sh` before `cargo test`, found through `FERRODDS_PERFTEST_MICRO` or at
//! `target/micro/perftest_micro`): it interoperates with the full `perftest` both ways (a
//! micro publisher with a full subscriber, then the reverse, over UDPv4 on loopback), it
//! refuses what it leaves out with a message naming the option, and its stripped binary stays
//! within the 1.5 MB.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{latency_summary, spawn, throughput_summary, wait};

const T: Duration = Duration::from_secs(60);

fn micro() -> Option<PathBuf> {
    let p = std::env::var_os("FERRODDS_PERFTEST_MICRO")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/micro/perftest_micro")
        });
    if p.is_file() {
        Some(p)
    } else {
        ferrodds_testkit::skip(&format!(
            "perftest_micro not built ({}): cargo build --profile micro --manifest-path tools/perftest-micro/Cargo.toml",
            p.display()
        ));
        None
    }
}

fn spawn_micro(bin: &PathBuf, args: &[&str]) -> Child {
    Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start perftest_micro")
}

fn ok(r: &common::Finished, who: &str) {
    assert_eq!(r.code, Some(0), "{who} failed:\n{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("Test ended."), "{who}: {}", r.stderr);
}

/// Micro publisher with full subscriber, then full publisher with micro subscriber: a
/// latency run (reliable, keyed) and a throughput run (best effort) each way.
#[test]
fn micro_and_full_interoperate_both_ways() {
    let Some(bin) = micro() else { return };
    let lo = ["-nic", "127.0.0.1", "-domain", "34", "-noPrint"];
    for micro_pub in [true, false] {
        let start = |pub_side: bool, args: &[&str]| -> Child {
            let mut a: Vec<&str> = vec![if pub_side { "-pub" } else { "-sub" }];
            a.extend_from_slice(&lo);
            a.extend_from_slice(args);
            if pub_side == micro_pub {
                spawn_micro(&bin, &a)
            } else {
                spawn(&a)
            }
        };
        let who = if micro_pub {
            "micro pub, full sub"
        } else {
            "full pub, micro sub"
        };
        // Latency, strict reliable, keyed.
        let s = start(false, &["-keyed", "-dataLen", "100"]);
        let p = start(
            true,
            &[
                "-keyed",
                "-dataLen",
                "100",
                "-latencyTest",
                "-latencyCount",
                "1",
                "-numIter",
                "2000",
            ],
        );
        let p = wait(p, T, "publisher");
        let s = wait(s, T, "subscriber");
        ok(&p, who);
        ok(&s, who);
        let l = latency_summary(&p.stdout);
        assert!(l[1] > 0.0 && l[5] < 100_000.0, "{who}: {l:?}");
        // Throughput, best effort (no batching in either: micro has none).
        let s = start(false, &["-bestEffort", "-dataLen", "200"]);
        let p = start(
            true,
            &[
                "-bestEffort",
                "-dataLen",
                "200",
                "-batchSize",
                "0",
                "-numIter",
                "20000",
                "-latencyCount",
                "1000",
            ],
        );
        let p = wait(p, T, "publisher");
        let s = wait(s, T, "subscriber");
        ok(&p, who);
        ok(&s, who);
        let t = throughput_summary(&s.stdout);
        assert!(t[1] > 1000.0, "{who}: {t:?}");
        let micro_side = if micro_pub { &p } else { &s };
        assert!(
            micro_side.stderr.contains("Kind: UDPv4 (FerroDDS RTPS)"),
            "{who}: {}",
            micro_side.stderr
        );
    }
}

/// What the micro build leaves out is refused, naming the option.
#[test]
fn micro_refuses_what_it_leaves_out() {
    let Some(bin) = micro() else { return };
    let cases: &[(&[&str], &str)] = &[
        (
            &["-pub", "-batchSize", "8192"],
            "'-batchSize' is not supported by FerroDDS perftest: the micro build has no batching",
        ),
        (&["-transport", "TCP"], "the micro build has only UDPv4"),
        (&["-transport", "SHMEM"], "the micro build has only UDPv4"),
        (&["-enableSharedMemory"], "the micro build has only UDPv4"),
        (
            &["-networkCapture"],
            "the micro build has no network capture",
        ),
        (
            &["-raw", "-transport", "TLS"],
            "built without the `tls` feature",
        ),
        (
            &["-raw", "-transport", "SHMEM"],
            "built without the `shared-memory` feature",
        ),
    ];
    for (args, want) in cases {
        let mut a = args.to_vec();
        a.extend(["-nic", "127.0.0.1", "-domain", "35", "-exec", "1"]);
        let r = wait(spawn_micro(&bin, &a), T, "perftest_micro");
        assert_ne!(r.code, Some(0), "{args:?} accepted: {}", r.stderr);
        assert!(
            r.stderr.contains(want),
            "{args:?}: want {want:?}, got {}",
            r.stderr
        );
    }
}

/// The target: a stripped binary of at most 1.5 MB (the full perftest is about
/// 7.5 MB stripped).
#[test]
fn micro_binary_is_small() {
    let Some(bin) = micro() else { return };
    let size = std::fs::metadata(&bin).unwrap().len();
    eprintln!("perftest_micro: {size} bytes");
    assert!(size <= 1_500_000, "perftest_micro is {size} bytes");
}
