//! Helpers shared by the integration tests: temporary directories, the perftest binary,
//! bounded process runs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A fresh temporary directory for one test.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lab-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The lab binary under test.
pub(crate) fn lab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lab"))
}

/// Runs a command to completion with a time bound (killed and reported as a failure after).
pub(crate) fn output_bounded(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let end = Instant::now() + limit;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > end {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "command did not finish within {limit:?}; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

static BUILD: Mutex<()> = Mutex::new(());

/// The perftest binary: `FERRODDS_PERFTEST`, else next to the lab binary (built by
/// `cargo test --workspace`), else built here into the same target directory.
pub(crate) fn perftest() -> PathBuf {
    if let Ok(p) = std::env::var("FERRODDS_PERFTEST") {
        return PathBuf::from(p);
    }
    let lab = Path::new(env!("CARGO_BIN_EXE_lab"));
    let sibling = lab.with_file_name("perftest");
    let _guard = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    if sibling.is_file() {
        return sibling;
    }
    let profile_dir = lab.parent().unwrap();
    let target = profile_dir.parent().unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "-p", "ferrodds-perftest", "--bin", "perftest"])
        .env("CARGO_TARGET_DIR", target)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let out = output_bounded(&mut cmd, Duration::from_secs(900));
    assert!(
        out.status.success() && sibling.is_file(),
        "could not build perftest (cargo build -p ferrodds-perftest): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    sibling
}

/// Writes an executable shell script.
pub(crate) fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}
