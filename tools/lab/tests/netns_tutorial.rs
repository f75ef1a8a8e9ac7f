//! The published perftest tutorial end to end, with two network namespaces as its two boards
//! (made and removed here): `scripts/tutorial/pub.sh` and `sub.sh` run its sequence (the raw
//! UDP baseline in loops over the sizes with `-raw -peer ADDR -nic IFNAME`, one process per
//! size; the full build with `-scan`, with and without `-batchSize 0`, and its latency; the
//! micro build `perftest_micro`) and every case writes a row per size on both boards. Then the
//! lab characterises the same kind of link with the tutorial's four curves in one report (raw,
//! full, full with batching, micro; plots with linear and logarithmic value axes). Needs root
//! and `target/micro/perftest_micro` (scripts/test.sh builds it).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{lab, output_bounded, perftest, temp_dir};
use ferrodds_lab::record::{self, files, RunStatus};
use ferrodds_lab::testbed::{is_root, Impairments, Testbed};

/// One testbed at a time (the lab's namespace names come from its process id, ours too).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

const SIZES: [u32; 3] = [32, 1024, 8192];

fn micro() -> Option<PathBuf> {
    let p = std::env::var_os("FERRODDS_PERFTEST_MICRO")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/micro/perftest_micro")
        });
    p.is_file().then_some(p)
}

fn spawn_script(
    ns: &str,
    script: &Path,
    args: &[&str],
    env: &[(&str, String)],
    log: &Path,
) -> Child {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, "sh"]).arg(script).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    // Its own process group: a hung script is killed with its perftest.
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    c.stdin(Stdio::null())
        .stdout(std::fs::File::create(log.with_extension("out")).unwrap())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("spawn script")
}

fn wait_bounded(children: Vec<(Child, &str, PathBuf)>, limit: Duration) {
    let end = Instant::now() + limit;
    let mut children: Vec<_> = children
        .into_iter()
        .map(|(c, w, l)| (c, w, l, None))
        .collect();
    while children.iter().any(|c| c.3.is_none()) {
        for c in children.iter_mut().filter(|c| c.3.is_none()) {
            c.3 = c.0.try_wait().unwrap();
        }
        if Instant::now() > end {
            for c in &children {
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", c.0.id())])
                    .status();
            }
            let logs: Vec<String> = children
                .iter()
                .map(|c| {
                    let s = std::fs::read_to_string(&c.2).unwrap_or_default();
                    let tail: String = s
                        .chars()
                        .rev()
                        .take(4000)
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                        .collect();
                    format!("{} ({}):\n{tail}", c.1, c.2.display())
                })
                .collect();
            panic!(
                "the tutorial scripts did not finish within {limit:?}\n{}",
                logs.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for c in &children {
        let status = c.3.unwrap();
        assert!(
            status.success(),
            "{} script failed ({status}):\n{}",
            c.1,
            std::fs::read_to_string(&c.2).unwrap_or_default()
        );
    }
}

/// The sizes of the result rows of `file` (header lines skipped), and the second column of each.
fn rows(file: &Path) -> Vec<(u32, f64)> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            let size = f.first()?.parse().ok()?;
            Some((size, f.get(1)?.parse().ok()?))
        })
        .collect()
}

#[test]
fn published_tutorial_sequence_between_two_boards() {
    if !is_root() {
        ferrodds_testkit::skip("the namespace test needs root");
        return;
    }
    let Some(micro) = micro() else {
        ferrodds_testkit::skip("the tutorial needs target/micro/perftest_micro");
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::create(Impairments::default()).expect("testbed");
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/tutorial");
    let dir = temp_dir("tutorial");
    let sizes = SIZES.map(|s| s.to_string()).join(" ");
    let env = [
        ("PERFTEST", perftest().display().to_string()),
        ("PERFTEST_MICRO", micro.display().to_string()),
        ("SIZES", sizes),
    ];
    let (pub_log, sub_log) = (dir.join("pub.log"), dir.join("sub.log"));
    let results = dir.join("results");
    let results_s = results.display().to_string();
    let sub = spawn_script(
        &tb.ns_sub,
        &scripts.join("sub.sh"),
        &[&tb.pub_addr, &tb.veth_sub, &results_s],
        &env,
        &sub_log,
    );
    let publ = spawn_script(
        &tb.ns_pub,
        &scripts.join("pub.sh"),
        &[&tb.sub_addr, &tb.veth_pub, "2", &results_s],
        &env,
        &pub_log,
    );
    wait_bounded(
        vec![
            (publ, "publisher", pub_log.clone()),
            (sub, "subscriber", sub_log.clone()),
        ],
        Duration::from_secs(300),
    );
    let cases = [
        "raw_throughput",
        "raw_latency",
        "full_batching_throughput",
        "full_throughput",
        "full_latency",
        "micro_throughput",
        "micro_latency",
    ];
    for case in cases {
        for side in ["pub", "sub"] {
            let f = results.join(format!("{case}_{side}.csv"));
            let r = rows(&f);
            assert_eq!(
                r.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
                SIZES,
                "{}: {r:?}\n{}",
                f.display(),
                std::fs::read_to_string(&f).unwrap_or_default()
            );
            // Publisher: latency (ave µs) > 0; subscriber: samples received > 0.
            assert!(r.iter().all(|(_, v)| *v > 0.0), "{}: {r:?}", f.display());
        }
    }
    let pub_text = std::fs::read_to_string(&pub_log).unwrap();
    assert!(
        pub_text.contains(&format!("Nic: {}", tb.veth_pub)),
        "the interface by name: {pub_text}"
    );
    drop(tb);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The tutorial's four curves from the lab, on its namespace testbed: raw UDP, the full build
/// without and with batching, and the micro build, in one report.
#[test]
fn lab_report_has_the_tutorial_curves() {
    if !is_root() {
        ferrodds_testkit::skip("the namespace test needs root");
        return;
    }
    let Some(micro) = micro() else {
        ferrodds_testkit::skip("the tutorial curves need target/micro/perftest_micro");
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = temp_dir("tutorial-lab");
    let out = output_bounded(
        lab()
            .args(["run", "--topology", "netns"])
            .args(["--systems", "raw,ferrodds", "--language", "rust,micro"])
            .args(["--tests", "throughput", "--sizes", "32,1024"])
            .args([
                "--reliability",
                "reliable",
                "--keyed",
                "off",
                "--batching",
                "both",
            ])
            .args([
                "--transport",
                "udpv4",
                "--repetitions",
                "1",
                "--execution-time",
                "2",
            ])
            .args(["--domain-base", "120"])
            .arg("--perftest")
            .arg(perftest())
            .arg("--perftest-micro")
            .arg(&micro)
            .arg("--out")
            .arg(&dir),
        Duration::from_secs(300),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let s = record::read_results(&dir).unwrap();
    // Per size: without batching raw, full and micro; with batching raw (batched in perftest)
    // and full.
    assert_eq!(s.runs.len(), 10, "{stderr}");
    for r in &s.runs {
        assert_eq!(
            r.status,
            RunStatus::Ok,
            "{}: {}\n{}",
            r.scenario.config_label(),
            r.error,
            r.stderr_tail
        );
    }
    let html = std::fs::read_to_string(dir.join(files::REPORT_HTML)).unwrap();
    for curve in [
        "raw UDP",
        "ferrodds reliable unkeyed",
        "ferrodds reliable unkeyed batching",
        "ferrodds reliable unkeyed micro",
    ] {
        assert!(
            html.contains(&format!(">{curve}<")),
            "curve {curve:?} in the report"
        );
    }
    assert!(
        html.contains("linear") && html.contains("log"),
        "both value axes"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
