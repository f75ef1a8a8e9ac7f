//! Bad command lines end with a clear error (exit status 2), never a panic (status 101) and
//! never a matrix of runs that all fail for the same avoidable reason.

mod common;

use std::time::Duration;

use common::{lab, output_bounded, temp_dir};

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
