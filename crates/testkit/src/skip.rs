//! Skipping a test whose external dependency is missing (root for network namespaces, tshark,
//! Cyclone DDS's `ddsperf`, …): allowed on a developer's machine, never in CI.
//!
//! [`skip`] prints `SKIPPED: <reason>` and appends the line to the file named by
//! `FERRODDS_SKIP_LOG` (set by `scripts/test.sh`, which counts the skips in its summary). Under
//! `CI=true` it panics instead, so that a CI run cannot pass by skipping, unless
//! `FERRODDS_ALLOW_SKIP=1` says skips are expected on that machine.

use std::io::Write;

/// Environment variable naming the file that collects skip lines.
pub const LOG_ENV: &str = "FERRODDS_SKIP_LOG";
/// Environment variable that allows skips under `CI=true` (value `1`).
pub const ALLOW_ENV: &str = "FERRODDS_ALLOW_SKIP";

/// Whether a skip is allowed here: not under `CI=true`, unless [`ALLOW_ENV`]`=1`.
#[must_use]
pub fn allowed() -> bool {
    std::env::var("CI").as_deref() != Ok("true") || std::env::var(ALLOW_ENV).as_deref() == Ok("1")
}

/// Skips the calling test for `reason` (the caller returns right after): prints and records
/// the skip, or panics under `CI=true` (see the module documentation).
///
/// # Panics
/// Under `CI=true` without [`ALLOW_ENV`]`=1`.
pub fn skip(reason: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("unnamed test")
        .to_owned();
    assert!(
        allowed(),
        "{test}: {reason} — under CI=true a missing test dependency fails the run \
         (scripts/install-test-deps.sh installs the tools; namespace tests need root; \
         {ALLOW_ENV}=1 allows skipping)"
    );
    let line = format!("SKIPPED: {test}: {reason}");
    println!("{line}");
    if let Some(path) = std::env::var_os(LOG_ENV) {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_is_recorded_or_refused_under_ci() {
        let dir = std::env::temp_dir().join(format!("ferrodds-skip-{}", std::process::id()));
        let log = dir.with_extension("log");
        let _ = std::fs::remove_file(&log);
        // Run in a child process so that the environment can be set for it alone.
        let exe = std::env::current_exe().unwrap();
        let run = |ci: &str, allow: &str| {
            std::process::Command::new(&exe)
                .args(["--exact", "skip::tests::child", "--nocapture"])
                .env("FERRODDS_SKIP_CHILD", "1")
                .env("CI", ci)
                .env(ALLOW_ENV, allow)
                .env(LOG_ENV, &log)
                .output()
                .unwrap()
        };
        assert!(run("false", "").status.success());
        assert!(
            !run("true", "").status.success(),
            "a skip under CI=true fails"
        );
        assert!(run("true", "1").status.success());
        let logged = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        assert_eq!(logged.lines().count(), 2, "{logged}");
        assert!(logged.starts_with("SKIPPED: skip::tests::child: for the test"));
    }

    #[test]
    fn child() {
        if std::env::var_os("FERRODDS_SKIP_CHILD").is_some() {
            skip("for the test");
        }
    }
}
