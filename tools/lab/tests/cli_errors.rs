//! Bad command lines end with a clear error (exit status 2), never a panic (status 101) and
//! never a matrix of runs that all fail for the same avoidable reason.

mod common;

use std::time::Duration;

use common::{lab, output_bounded, script, temp_dir};

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn domain_base_beyond_the_port_range_is_a_usage_error() {
    // --quick has 18 runs: domains base..=base + 17.
    for base in ["4294967295", "216", "1000"] {
        let out = output_bounded(
            lab().args([
                "run",
                "--quick",
                "--dry-run",
                "--perftest",
                "perftest",
                "--domain-base",
                base,
            ]),
            Duration::from_secs(20),
        );
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "--domain-base {base}: {err}");
        assert!(err.contains("domain"), "{err}");
    }
    // The highest base whose domains all keep their ports below 65536 is accepted.
    let out = output_bounded(
        lab().args([
            "run",
            "--quick",
            "--dry-run",
            "--perftest",
            "perftest",
            "--domain-base",
            "215",
        ]),
        Duration::from_secs(20),
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
}

#[test]
fn missing_explicit_binaries_fail_before_any_run() {
    let dir = temp_dir("missing-bin");
    let missing = dir.join("no-such-perftest");
    let out = output_bounded(
        lab()
            .args([
                "run",
                "--systems",
                "raw",
                "--tests",
                "latency",
                "--sizes",
                "32",
            ])
            .args([
                "--reliability",
                "reliable",
                "--keyed",
                "off",
                "--batching",
                "off",
            ])
            .args(["--execution-time", "1", "--repetitions", "1"])
            .arg("--perftest")
            .arg(&missing)
            .arg("--out")
            .arg(dir.join("out")),
        Duration::from_secs(60),
    );
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no-such-perftest"), "{err}");
    assert!(
        !dir.join("out").exists(),
        "no results directory for a run that cannot start"
    );

    let out = output_bounded(
        lab()
            .args([
                "run",
                "--systems",
                "cyclone",
                "--tests",
                "latency",
                "--sizes",
                "32",
            ])
            .args([
                "--reliability",
                "reliable",
                "--keyed",
                "off",
                "--batching",
                "off",
            ])
            .arg("--ddsperf")
            .arg(dir.join("no-such-ddsperf"))
            .arg("--out")
            .arg(dir.join("out")),
        Duration::from_secs(60),
    );
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no-such-ddsperf"), "{err}");
    assert!(!dir.join("out").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compare_rejects_negative_or_nan_thresholds() {
    for arg in ["--latency-threshold=-5", "--throughput-threshold=NaN"] {
        let out = output_bounded(
            lab().args(["compare", "old", "new", arg]),
            Duration::from_secs(20),
        );
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{arg}: {err}");
        assert!(err.contains("threshold"), "{err}");
    }
}

#[test]
fn a_bad_cpu_list_is_refused_before_anything_runs() {
    let dir = temp_dir("badcpu");
    let marker = dir.join("started");
    let fake = script(&dir, "perftest", &format!("touch {}", marker.display()));
    for (cpu, needle) in [
        ("0-", "invalid --cpu"),
        ("abc", "invalid --cpu"),
        ("3-1", "invalid --cpu"),
        ("4095", "CPU 4095 is not available here"),
    ] {
        let out = output_bounded(
            lab()
                .args([
                    "run",
                    "--systems",
                    "raw",
                    "--tests",
                    "latency",
                    "--sizes",
                    "32",
                ])
                .args(["--repetitions", "1", "--execution-time", "1", "--cpu", cpu])
                .arg("--perftest")
                .arg(&fake)
                .arg("--out")
                .arg(dir.join("out")),
            Duration::from_secs(20),
        );
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "--cpu {cpu}: {err}");
        assert!(err.contains(needle), "--cpu {cpu}: {err}");
        assert!(!marker.exists(), "--cpu {cpu}: perftest was started");
        assert!(
            !dir.join("out").exists(),
            "--cpu {cpu}: results were written"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn c_sharp_language_combinations_it_cannot_run_are_refused() {
    let cases: [(&[&str], &str); 5] = [
        (&["--language", "java"], "language"),
        (
            &["--language", "cs", "--transport", "tcp"],
            "udpv4 and shmem",
        ),
        (
            &["--language", "cs", "--capture", "on"],
            "no network capture",
        ),
        (&["--language", "cs", "--systems", "raw"], "add ferrodds"),
        (
            &["--language", "cs", "--perftest-cs", "/no/such/perftest_cs"],
            "--perftest-cs",
        ),
    ];
    for (args, want) in cases {
        let out = output_bounded(
            lab()
                .args(["run", "--quick", "--perftest", "sh"])
                .args(args),
            Duration::from_secs(20),
        );
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // A dry run shows the C# perftest's command lines beside the Rust ones.
    let out = output_bounded(
        lab().args([
            "run",
            "--quick",
            "--dry-run",
            "--perftest",
            "perftest",
            "--language",
            "rust,cs",
            "--perftest-cs",
            "/opt/perftest_cs",
            "--systems",
            "ferrodds",
        ]),
        Duration::from_secs(20),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(text.contains("/opt/perftest_cs -pub"), "{text}");
    assert!(text.contains("perftest -pub"), "{text}");
}

#[test]
fn security_profiles_and_combinations_it_cannot_run_are_refused() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["--security", "rtps_sign", "--systems", "raw"],
            "raw UDP has none",
        ),
        (
            &["--security", "rtps_sign", "--transport", "tcp"],
            "UDPv4 only",
        ),
        (
            &["--security", "rtps_sign", "--language", "rust,cs"],
            "add no_security_libraries",
        ),
        (&["--security", "rtps_signature"], "security profile"),
    ];
    for (args, want) in cases {
        let out = output_bounded(
            lab()
                .args(["run", "--quick", "--dry-run", "--perftest", "perftest"])
                .args(args),
            Duration::from_secs(20),
        );
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // A dry run shows the governance of each secure row.
    let out = output_bounded(
        lab().args([
            "run",
            "--quick",
            "--dry-run",
            "--perftest",
            "perftest",
            "--systems",
            "ferrodds,raw",
            "--security",
            "no_security_libraries,rtps_encrypt",
        ]),
        Duration::from_secs(20),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(
        text.contains("ferrodds reliable unkeyed rtps_encrypt latency 32 B")
            && text.contains(
                "-secureGovernanceFile resource/secure/signed_PerftestGovernance_RTPSEncrypt.xml"
            ),
        "{text}"
    );
}

/// Multicast rows need an interface with multicast: refused on loopback before anything runs;
/// bad subscriber counts are refused too.
#[test]
fn multicast_on_loopback_and_bad_subscriber_counts_are_refused() {
    let out = output_bounded(
        lab()
            .args(["run", "--quick", "--dry-run", "--perftest", "perftest"])
            .args(["--multicast", "both"]),
        Duration::from_secs(20),
    );
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("loopback interface has no multicast"), "{err}");
    for bad in ["0", "17", "two"] {
        let out = output_bounded(
            lab()
                .args(["run", "--quick", "--dry-run", "--perftest", "perftest"])
                .args(["--subscribers", bad]),
            Duration::from_secs(20),
        );
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "--subscribers {bad}: {err}");
        assert!(err.contains("subscriber count"), "{err}");
    }
}

#[test]
fn shmem_zero_copy_needs_loopback_and_asks_both_sides_for_writer_loans() {
    for topology in ["netns", "remote"] {
        let out = output_bounded(
            lab()
                .args(["run", "--quick", "--dry-run", "--perftest", "perftest"])
                .args(["--transport", "shmem-zc", "--topology", topology]),
            Duration::from_secs(20),
        );
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{topology}: {err}");
        assert!(
            err.contains("--transport shmem-zc") && err.contains("--topology loopback"),
            "{topology}: {err}"
        );
    }
    // On loopback: FerroDDS rows only, -transport SHMEM -zeroCopy on both sides.
    let out = output_bounded(
        lab().args([
            "run",
            "--quick",
            "--dry-run",
            "--perftest",
            "perftest",
            "--transport",
            "shmem-zc",
            "--keyed",
            "both",
            "--batching",
            "both",
        ]),
        Duration::from_secs(20),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let subs: Vec<&str> = text.lines().filter(|l| l.contains("sub: ")).collect();
    let pubs: Vec<&str> = text.lines().filter(|l| l.contains("pub: ")).collect();
    // --quick: 3 sizes × 2 tests, unkeyed and unbatched only.
    assert_eq!((subs.len(), pubs.len()), (6, 6), "{text}");
    for l in subs.iter().chain(&pubs) {
        assert!(l.contains(" -transport SHMEM -zeroCopy"), "{l}");
        assert!(!l.contains("-rawTransport") && !l.contains("-keyed"), "{l}");
        assert!(
            !l.contains("ddsperf") && !l.contains("-batchSize 8192"),
            "{l}"
        );
    }
    // The help names the value.
    let out = output_bounded(lab().args(["run", "--help"]), Duration::from_secs(20));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("shmem-zc"), "{help}");
}
