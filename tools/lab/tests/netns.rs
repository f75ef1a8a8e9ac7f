//! The netns topology: two namespaces joined by a veth pair, loss emulated with nftables.
//! Needs root; prints a "SKIPPED:" line otherwise. The tests run one after the other (they
//! check that no testbed namespace is left behind).

mod common;

use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use common::{lab, output_bounded, perftest, temp_dir};
use ferrodds_lab::matrix::{System, TestKind};
use ferrodds_lab::record::{self, RunStatus};
use ferrodds_lab::testbed::is_root;

static SERIAL: Mutex<()> = Mutex::new(());

fn lab_namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("flab"))
        .map(String::from)
        .collect()
}

#[test]
fn netns_with_nftables_loss() {
    if !is_root() {
        println!("SKIPPED: netns topology test needs root");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = lab_namespaces();
    let dir = temp_dir("netns-loss");
    let out = output_bounded(
        lab()
            .args(["run", "--topology", "netns", "--loss", "10"])
            .args(["--systems", "raw,ferrodds", "--tests", "throughput"])
            .args([
                "--sizes",
                "1024",
                "--reliability",
                "reliable",
                "--keyed",
                "off",
            ])
            .args([
                "--batching",
                "off",
                "--repetitions",
                "1",
                "--execution-time",
                "2",
            ])
            .arg("--perftest")
            .arg(perftest())
            .arg("--out")
            .arg(&dir),
        Duration::from_secs(120),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(lab_namespaces(), before, "testbed namespaces left behind");
    let s = record::read_results(&dir).unwrap();
    assert_eq!(s.runs.len(), 2);
    assert!(
        s.notes.iter().any(|n| n.contains("nftables")),
        "{:?}",
        s.notes
    );
    for r in &s.runs {
        assert_eq!(r.status, RunStatus::Ok, "{}\n{}", r.error, r.stderr_tail);
        assert_eq!(r.scenario.test, TestKind::Throughput);
        assert_eq!(r.topology, "netns loss=10%");
        assert!(
            r.pub_command.contains("ip netns exec flab"),
            "{}",
            r.pub_command
        );
        assert!(r.pub_command.contains("-nic 10.77.0.1 -peer 10.77.0.2"));
        let t = r.throughput.unwrap();
        assert!(t.total_samples > 0);
        if r.scenario.system == System::Raw {
            // Plain UDP has no repair: about 10 % of the data samples vanish.
            assert!(
                t.lost_pct > 3.0 && t.lost_pct < 30.0,
                "raw loss {} % with 10 % emulated loss",
                t.lost_pct
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn netns_delay_without_netem_fails_clearly_and_cleans_up() {
    if !is_root() {
        println!("SKIPPED: netns topology test needs root");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = lab_namespaces();
    let dir = temp_dir("netns-delay");
    let out = output_bounded(
        lab()
            .args([
                "run",
                "--topology",
                "netns",
                "--delay",
                "5",
                "--jitter",
                "1",
            ])
            .args(["--systems", "raw", "--tests", "latency", "--sizes", "32"])
            .args(["--repetitions", "1", "--execution-time", "1"])
            .arg("--perftest")
            .arg(perftest())
            .arg("--out")
            .arg(&dir),
        Duration::from_secs(60),
    );
    assert_eq!(lab_namespaces(), before, "testbed namespaces left behind");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        // This kernel has netem: the delay must show in the latency.
        let s = record::read_results(&dir).unwrap();
        let l = s.runs[0].latency.unwrap();
        assert!(l.p50_us > 4000.0, "{l:?}");
    } else {
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr.contains("netem"), "{stderr}");
        assert!(stderr.contains("delay"), "{stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn netns_needs_root() {
    if !is_root() {
        // Already unprivileged: the lab itself must refuse clearly.
        let out = output_bounded(
            lab().args([
                "run",
                "--topology",
                "netns",
                "--systems",
                "raw",
                "--perftest",
                "true",
            ]),
            Duration::from_secs(30),
        );
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("needs root"));
        return;
    }
    if common_setpriv().is_none() {
        println!("SKIPPED: setpriv not installed, cannot drop root to check the message");
        return;
    }
    let dir = temp_dir("netns-noroot");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let out = output_bounded(
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_lab"))
            .args([
                "run",
                "--topology",
                "netns",
                "--systems",
                "raw",
                "--perftest",
                "true",
            ])
            .arg("--out")
            .arg(dir.join("out")),
        Duration::from_secs(30),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("Permission denied") && !stderr.contains("needs root") {
        println!("SKIPPED: the lab binary is not reachable by an unprivileged user here");
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs root"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn common_setpriv() -> Option<std::path::PathBuf> {
    ferrodds_lab::runner::find_program("setpriv")
}
