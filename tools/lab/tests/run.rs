//! End-to-end `lab run`s: a real quick-style run against perftest (raw transport and DDS) and
//! Cyclone ddsperf when installed, failure and timeout recording with fake programs, Ctrl-C,
//! the remote topology through a command prefix, and the dry run.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{lab, output_bounded, perftest, script, temp_dir};
use ferrodds_lab::matrix::{System, TestKind};
use ferrodds_lab::record::{self, files, RunStatus};

/// Fails with the lab's own output and, for each failed run, its error and the tail of the
/// programs' stderr (from the results the lab wrote), so a failure in CI says why.
fn assert_lab_succeeded(out: &std::process::Output, out_dir: &std::path::Path) {
    if out.status.success() {
        return;
    }
    let mut why = String::from_utf8_lossy(&out.stderr).into_owned();
    if let Ok(s) = record::read_results(out_dir) {
        for r in s.runs.iter().filter(|r| r.status != RunStatus::Ok) {
            why.push_str(&format!(
                "\n--- {} {}: {}\n{}",
                r.scenario.config_label(),
                r.scenario.test,
                r.error,
                r.stderr_tail
            ));
        }
    }
    panic!("lab run failed ({}):\n{why}", out.status);
}

#[test]
fn quick_style_run_against_raw_dds_and_cyclone() {
    let out_dir = temp_dir("quick");
    let have_cyclone = ferrodds_lab::runner::find_program("ddsperf").is_some();
    let systems = if have_cyclone {
        "ferrodds,raw,cyclone"
    } else {
        ferrodds_testkit::skip("ddsperf not installed: the Cyclone baseline of the run");
        "ferrodds,raw"
    };
    let out = output_bounded(
        lab()
            .args(["run", "--quick", "--sizes", "1024", "--execution-time", "1"])
            .args(["--systems", systems, "--domain-base", "200"])
            .arg("--perftest")
            .arg(perftest())
            .arg("--out")
            .arg(&out_dir),
        Duration::from_secs(240),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_lab_succeeded(&out, &out_dir);
    let s = record::read_results(&out_dir).unwrap();
    let n_sys = if have_cyclone { 3 } else { 2 };
    assert_eq!(s.runs.len(), 2 * n_sys, "{stderr}");
    for r in &s.runs {
        assert_eq!(
            r.status,
            RunStatus::Ok,
            "{} {} failed: {}\n{}",
            r.scenario.config_label(),
            r.scenario.test,
            r.error,
            r.stderr_tail
        );
        match r.scenario.test {
            TestKind::Latency => {
                let l = r.latency.unwrap();
                assert!(l.p50_us > 0.0 && l.p50_us < 100_000.0, "{l:?}");
                assert!(l.p99_us >= l.p50_us);
            }
            TestKind::Throughput => {
                let t = r.throughput.unwrap();
                assert!(t.total_samples > 0 && t.samples_per_s > 0.0, "{t:?}");
                assert!(t.mbps > 0.0);
                // The host's UDP datagrams were counted; FerroDDS without batching and raw
                // UDP send one sample per datagram at most (other tests' traffic on this host
                // can only lower the ratio).
                assert!(r.udp_datagrams.is_some_and(|d| d > 0), "{r:?}");
                if r.scenario.system != System::Cyclone {
                    let per = r.samples_per_datagram().unwrap();
                    assert!(per <= 1.5, "{} samples per datagram", per);
                }
            }
        }
        if r.scenario.test == TestKind::Latency {
            assert_eq!(r.udp_datagrams, None);
        }
        assert!(r.pub_command.contains("taskset -c 0"), "{}", r.pub_command);
        if r.scenario.system == System::Raw {
            assert!(r.pub_command.contains("-rawTransport"));
        }
    }
    let html = std::fs::read_to_string(out_dir.join(files::REPORT_HTML)).unwrap();
    assert_eq!(html.matches("<svg").count(), 9);
    assert!(html.contains("samples per UDP datagram"));
    assert!(html.contains("Throughput against what sends alike"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join(files::SUMMARY_JSON)).unwrap())
            .unwrap();
    assert_eq!(json["runs_ok"], 2 * n_sys);
    assert_eq!(json["settings"]["quick"], true);
    std::fs::remove_dir_all(&out_dir).unwrap();
}

/// Fan-out (`--subscribers 2`): FerroDDS, raw UDP and (when installed) Cyclone with two
/// subscriber processes each, throughput and latency. Every row ran both subscribers (their
/// command lines are recorded, the second with its id), each subscriber received the samples
/// the row reports, and the publisher's CPU time was measured. Domains 127-132.
#[test]
fn fan_out_rows_with_two_subscribers() {
    let out_dir = temp_dir("fan-out");
    let have_cyclone = ferrodds_lab::runner::find_program("ddsperf").is_some();
    let systems = if have_cyclone {
        "ferrodds,raw,cyclone"
    } else {
        ferrodds_testkit::skip("ddsperf not installed: the Cyclone fan-out rows");
        "ferrodds,raw"
    };
    let out = output_bounded(
        lab()
            .args(["run", "--quick", "--sizes", "1024", "--execution-time", "1"])
            .args(["--subscribers", "2", "--systems", systems])
            .args(["--domain-base", "127"])
            .arg("--perftest")
            .arg(perftest())
            .arg("--out")
            .arg(&out_dir),
        Duration::from_secs(240),
    );
    assert_lab_succeeded(&out, &out_dir);
    let s = record::read_results(&out_dir).unwrap();
    let n_sys = if have_cyclone { 3 } else { 2 };
    assert_eq!(s.runs.len(), 2 * n_sys);
    for r in &s.runs {
        let what = format!("{} {}", r.scenario.config_label(), r.scenario.test);
        assert_eq!(
            r.status,
            RunStatus::Ok,
            "{what}: {}\n{}",
            r.error,
            r.stderr_tail
        );
        assert_eq!(r.scenario.subscribers, 2, "{what}");
        assert!(what.contains("×2 subscribers"), "{what}");
        assert_eq!(
            r.sub_command.matches(" ; ").count(),
            1,
            "{what}: {}",
            r.sub_command
        );
        if r.scenario.system != System::Cyclone {
            assert!(
                r.pub_command.contains("-numSubscribers 2"),
                "{}",
                r.pub_command
            );
            assert!(
                r.sub_command.ends_with("-sidMultiSubTest 1"),
                "{}",
                r.sub_command
            );
        }
        assert!(
            r.pub_cpu_s.is_some_and(|c| c > 0.0),
            "{what}: {:?}",
            r.pub_cpu_s
        );
        if r.scenario.test == TestKind::Throughput {
            let t = r.throughput.unwrap();
            assert!(
                t.total_samples > 0 && t.samples_per_s > 0.0,
                "{what}: {t:?}"
            );
            assert!(r.pub_cpu_us_per_sample().is_some_and(|c| c > 0.0), "{what}");
        }
    }
    let thr = std::fs::read_to_string(out_dir.join(files::THROUGHPUT_CSV)).unwrap();
    assert!(
        thr.lines().next().unwrap().contains(",subscribers,"),
        "{thr}"
    );
    std::fs::remove_dir_all(&out_dir).unwrap();
}

/// The language axis: FerroDDS's C# perftest (Mono, over the release C API library) runs
/// beside the Rust one in each group, and the report puts their ratio beside the published
/// C# one. Needs mono, mcs and `target/release/libferrodds_c.so` (scripts/test.sh builds it).
#[test]
fn c_sharp_perftest_rows_run_beside_rust() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let lib = root.join("target/release/libferrodds_c.so");
    let have = ferrodds_lab::runner::find_program("mono").is_some()
        && ferrodds_lab::runner::find_program("mcs").is_some()
        && lib.is_file();
    if !have {
        ferrodds_testkit::skip("the C# rows need mono, mcs and the release C API library");
        return;
    }
    let out_dir = temp_dir("csharp");
    let out = output_bounded(
        lab()
            .args(["run", "--systems", "ferrodds", "--language", "rust,cs"])
            .args(["--tests", "latency,throughput", "--sizes", "32"])
            .args([
                "--reliability",
                "reliable",
                "--keyed",
                "off",
                "--batching",
                "off",
            ])
            .args(["--execution-time", "2", "--repetitions", "1"])
            .args(["--domain-base", "155"])
            .arg("--perftest")
            .arg(perftest())
            .arg("--perftest-cs")
            .arg(root.join("bindings/csharp/perftest/perftest_cs"))
            .arg("--out")
            .arg(&out_dir),
        Duration::from_secs(240),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_lab_succeeded(&out, &out_dir);
    let s = record::read_results(&out_dir).unwrap();
    assert_eq!(s.runs.len(), 4, "{stderr}");
    for r in &s.runs {
        assert_eq!(
            r.status,
            RunStatus::Ok,
            "{} {} failed: {}\n{}",
            r.scenario.config_label(),
            r.scenario.test,
            r.error,
            r.stderr_tail
        );
        let cs = r.scenario.language == ferrodds_lab::matrix::Language::Cs;
        assert_eq!(
            cs,
            r.pub_command.contains("perftest_cs"),
            "{}",
            r.pub_command
        );
        assert_eq!(
            cs,
            r.sub_command.contains("perftest_cs"),
            "{}",
            r.sub_command
        );
        match r.scenario.test {
            TestKind::Latency => {
                let l = r.latency.unwrap();
                assert!(l.p50_us > 0.0 && l.p50_us < 100_000.0, "{l:?}");
            }
            TestKind::Throughput => {
                let t = r.throughput.unwrap();
                assert!(t.total_samples > 0 && t.samples_per_s > 0.0, "{t:?}");
            }
        }
    }
    let csv = std::fs::read_to_string(out_dir.join(files::LATENCY_CSV)).unwrap();
    assert!(csv.lines().next().unwrap().contains(",language,"), "{csv}");
    let html = std::fs::read_to_string(out_dir.join(files::REPORT_HTML)).unwrap();
    assert!(html.contains("C# cost"), "the C# cost table");
    assert!(html.contains("ferrodds reliable unkeyed C#"), "the C# rows");
    assert!(
        html.contains("Connext C# (published"),
        "the published C# line"
    );
    std::fs::remove_dir_all(&out_dir).unwrap();
}

/// The micro build beside the full one (the published tutorial's "Micro" curve):
/// perftest_micro runs the FerroDDS rows of `--language micro` in each group, and the report
/// puts their ratio to the full build's rows in its "Micro build" table. Needs
/// `target/micro/perftest_micro` (scripts/test.sh builds it).
#[test]
fn micro_rows_run_beside_the_full_build() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let micro = root.join("target/micro/perftest_micro");
    if !micro.is_file() {
        ferrodds_testkit::skip("the micro rows need target/micro/perftest_micro");
        return;
    }
    let out_dir = temp_dir("micro");
    let out = output_bounded(
        lab()
            .args(["run", "--systems", "ferrodds", "--language", "rust,micro"])
            .args(["--tests", "latency,throughput", "--sizes", "32"])
            .args(["--reliability", "reliable", "--keyed", "off"])
            .args(["--batching", "off", "--transport", "udpv4"])
            .args(["--execution-time", "2", "--repetitions", "1"])
            .args(["--domain-base", "190"])
            .arg("--perftest")
            .arg(perftest())
            .arg("--perftest-micro")
            .arg(&micro)
            .arg("--out")
            .arg(&out_dir),
        Duration::from_secs(240),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_lab_succeeded(&out, &out_dir);
    let s = record::read_results(&out_dir).unwrap();
    assert_eq!(s.runs.len(), 4, "{stderr}");
    for r in &s.runs {
        assert_eq!(
            r.status,
            RunStatus::Ok,
            "{} {} failed: {}\n{}",
            r.scenario.config_label(),
            r.scenario.test,
            r.error,
            r.stderr_tail
        );
        let micro = r.scenario.language == ferrodds_lab::matrix::Language::Micro;
        assert_eq!(
            micro,
            r.pub_command.contains("perftest_micro"),
            "{}",
            r.pub_command
        );
        assert_eq!(
            micro,
            r.sub_command.contains("perftest_micro"),
            "{}",
            r.sub_command
        );
        match r.scenario.test {
            TestKind::Latency => {
                let l = r.latency.unwrap();
                assert!(l.p50_us > 0.0 && l.p50_us < 100_000.0, "{l:?}");
            }
            TestKind::Throughput => {
                let t = r.throughput.unwrap();
                assert!(t.total_samples > 0 && t.samples_per_s > 0.0, "{t:?}");
            }
        }
    }
    let html = std::fs::read_to_string(out_dir.join(files::REPORT_HTML)).unwrap();
    assert!(
        html.contains("Micro build (perftest_micro"),
        "the micro table"
    );
    assert!(
        html.contains("ferrodds reliable unkeyed micro"),
        "the micro rows"
    );
    std::fs::remove_dir_all(&out_dir).unwrap();
}

/// The network capture axis: rows with and without capture, latency and throughput. Each
/// capture row records how many frames its captures wrote and dropped (both participants,
/// from perftest's end line) in the CSV, and the report's capture cost table shows the
/// share written; rows without capture have no count. Domains 176-179.
#[test]
fn capture_rows_record_the_frames_their_captures_wrote() {
    let out_dir = temp_dir("capture");
    let out = output_bounded(
        lab()
            .args(["run", "--systems", "ferrodds", "--capture", "off,on"])
            .args(["--tests", "latency,throughput", "--sizes", "32"])
            .args(["--reliability", "best-effort", "--keyed", "off"])
            .args(["--batching", "off", "--transport", "udpv4"])
            .args(["--execution-time", "1", "--repetitions", "1"])
            .args(["--domain-base", "176"])
            .arg("--perftest")
            .arg(perftest())
            .arg("--out")
            .arg(&out_dir),
        Duration::from_secs(240),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_lab_succeeded(&out, &out_dir);
    let s = record::read_results(&out_dir).unwrap();
    assert_eq!(s.runs.len(), 4, "{stderr}");
    for r in &s.runs {
        assert_eq!(r.status, RunStatus::Ok, "{}: {}", r.error, r.stderr_tail);
        let on = r.scenario.capture != ferrodds_lab::matrix::Capture::Off;
        assert_eq!(on, r.pub_command.contains("-networkCapture"));
        match r.capture_frames {
            Some(c) => {
                assert!(on, "a count without capture: {r:?}");
                // The captures wrote at least a frame per sample the subscriber received
                // (latency runs: the subscriber's count of the pings' samples).
                let samples = r.throughput.map_or(0, |t| t.total_samples);
                assert!(samples > 0, "no subscriber count: {r:?}");
                assert!(c.written >= samples, "{c:?} for {samples} samples");
            }
            None => assert!(!on, "no count from a capture run: {r:?}\n{stderr}"),
        }
    }
    assert!(stderr.contains("capture wrote"), "{stderr}");
    // The CSV keeps the counts, and reads back the same.
    for file in [files::LATENCY_CSV, files::THROUGHPUT_CSV] {
        let text = std::fs::read_to_string(out_dir.join(file)).unwrap();
        let header = text.lines().next().unwrap();
        assert!(
            header.contains("capture_frames_written,capture_frames_dropped"),
            "{header}"
        );
        for back in record::read_csv(&out_dir.join(file)).unwrap() {
            let same = s
                .runs
                .iter()
                .find(|r| r.run_index == back.run_index)
                .unwrap();
            assert_eq!(back.capture_frames, same.capture_frames);
        }
    }
    let html = std::fs::read_to_string(out_dir.join(files::REPORT_HTML)).unwrap();
    assert!(html.contains("frames the captures wrote"), "the column");
    assert!(
        html.contains(" % ("),
        "a share written in the capture table"
    );
    std::fs::remove_dir_all(&out_dir).unwrap();
}

/// The DDS Security axis: FerroDDS (and Cyclone's ddsperf when installed) without security
/// and with rtps_sign, interleaved at one size; each secure run names its governance, the
/// CSV says which profile each row used and the report has the DDS Security table.
/// Domains 160-163.
#[test]
fn security_axis_rows_beside_the_rows_without() {
    let out_dir = temp_dir("security");
    let have_cyclone = ferrodds_lab::runner::find_program("ddsperf").is_some();
    let systems = if have_cyclone {
        "ferrodds,cyclone"
    } else {
        ferrodds_testkit::skip("ddsperf not installed: the Cyclone rows of the security run");
        "ferrodds"
    };
    let out = output_bounded(
        lab()
            .args(["run", "--security", "no_security_libraries,rtps_sign"])
            .args(["--systems", systems, "--tests", "latency", "--sizes", "32"])
            .args(["--reliability", "reliable", "--keyed", "off"])
            .args(["--batching", "off", "--execution-time", "1"])
            .args(["--repetitions", "1", "--domain-base", "160"])
            .arg("--perftest")
            .arg(perftest())
            .arg("--out")
            .arg(&out_dir),
        Duration::from_secs(240),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_lab_succeeded(&out, &out_dir);
    let governance = "-secureGovernanceFile resource/secure/signed_PerftestGovernance_RTPSSign.xml";
    assert!(
        stderr.contains(&format!(
            "security rtps_sign: FerroDDS perftest {governance}"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("ferrodds reliable unkeyed rtps_sign latency 32 B: p50"),
        "{stderr}"
    );
    let s = record::read_results(&out_dir).unwrap();
    let n_sys = if have_cyclone { 2 } else { 1 };
    assert_eq!(s.runs.len(), 2 * n_sys, "{stderr}");
    use ferrodds_lab::matrix::SecurityProfile;
    for r in &s.runs {
        // (An ok secure FerroDDS row is one whose both start-up summaries named the governance.)
        assert_eq!(
            r.status,
            RunStatus::Ok,
            "{} failed: {}\n{}",
            r.scenario.config_label(),
            r.error,
            r.stderr_tail
        );
        let l = r.latency.unwrap();
        assert!(l.p50_us > 0.0 && l.p50_us < 100_000.0, "{l:?}");
        let secure = r.scenario.security == Some(SecurityProfile::RtpsSign);
        assert!(
            secure || r.scenario.security == Some(SecurityProfile::NoSecurityLibraries),
            "{r:?}"
        );
        let named = match r.scenario.system {
            System::Ferrodds => {
                r.pub_command.contains(governance) && r.sub_command.contains(governance)
            }
            _ => {
                r.pub_command
                    .contains("signed_PerftestGovernance_RTPSSign.xml</Governance>")
                    && r.sub_command.contains("signed_PerftestPermissionsSub.xml")
            }
        };
        assert_eq!(secure, named, "{}\n{}", r.pub_command, r.sub_command);
        assert!(!r.pub_command.contains("-secure") || r.pub_command.contains("-transport UDPv4"));
    }
    let csv = std::fs::read_to_string(out_dir.join(files::LATENCY_CSV)).unwrap();
    assert!(csv.lines().next().unwrap().contains(",security,"), "{csv}");
    assert!(
        csv.contains(",rust,rtps_sign,1,false,loopback,32,"),
        "{csv}"
    );
    assert!(
        csv.contains(",rust,no_security_libraries,1,false,loopback,32,"),
        "{csv}"
    );
    let html = std::fs::read_to_string(out_dir.join(files::REPORT_HTML)).unwrap();
    assert!(html.contains("<h2>DDS Security"), "the security table");
    assert!(
        html.contains("<tr><td>ferrodds reliable unkeyed rtps_sign</td><td class=\"num\">32</td>"),
        "the FerroDDS rtps_sign row"
    );
    // Connext's published ratio for rtps_sign at 32 B beside it (24 µs over 17 µs).
    assert!(html.contains(">1.41×<"), "the published ratio");
    if have_cyclone {
        assert!(html.contains("<tr><td>cyclone reliable unkeyed rtps_sign</td>"));
    }
    std::fs::remove_dir_all(&out_dir).unwrap();
}

#[test]
fn tcp_transport_axis_with_raw_tcp_and_cyclone_over_tcp() {
    let out_dir = temp_dir("tcp");
    let ddsperf = ferrodds_lab::runner::find_program("ddsperf").is_some();
    // CI installs Cyclone DDS; elsewhere the Cyclone baseline is skipped (and counted).
    if !ddsperf {
        ferrodds_testkit::skip("ddsperf not installed: the Cyclone baseline of the run");
    }
    let systems = if ddsperf {
        "ferrodds,raw,cyclone"
    } else {
        "ferrodds,raw"
    };
    let out = output_bounded(
        lab()
            .args(["run", "--transport", "udpv4,tcp,tls,udpv4-wan"])
            .args(["--systems", systems])
            .args([
                "--tests",
                "latency",
                "--sizes",
                "1024",
                "--reliability",
                "reliable",
            ])
            .args([
                "--keyed",
                "off",
                "--batching",
                "off",
                "--execution-time",
                "1",
            ])
            .args(["--repetitions", "1", "--domain-base", "210"])
            .arg("--perftest")
            .arg(perftest())
            .arg("--out")
            .arg(&out_dir),
        Duration::from_secs(240),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_lab_succeeded(&out, &out_dir);
    let s = record::read_results(&out_dir).unwrap();
    // UDPv4 and TCP: every system; TLS: FerroDDS and raw TLS; UDPv4_WAN: FerroDDS.
    let n_sys = if ddsperf { 3 } else { 2 };
    assert_eq!(s.runs.len(), 2 * n_sys + 3, "{stderr}");
    let mut labels = Vec::new();
    for r in &s.runs {
        assert_eq!(
            r.status,
            RunStatus::Ok,
            "{} failed: {}\n{}",
            r.scenario.config_label(),
            r.error,
            r.stderr_tail
        );
        let l = r.latency.unwrap();
        assert!(l.p50_us > 0.0 && l.p50_us < 100_000.0, "{l:?}");
        labels.push(r.scenario.config_label());
        if r.scenario.transport == ferrodds_lab::matrix::Transport::Tcp {
            match r.scenario.system {
                System::Ferrodds => {
                    assert!(
                        r.pub_command.contains("-transport TCP"),
                        "{}",
                        r.pub_command
                    );
                    assert!(
                        r.pub_command.contains("-peer 0@tcpv4_lan://127.0.0.1:7401"),
                        "{}",
                        r.pub_command
                    );
                    assert!(r.sub_command.contains("-transportServerBindPort 7401"));
                }
                System::Raw => assert!(
                    r.pub_command.contains("-rawTransport")
                        && r.pub_command.contains("-transport TCP"),
                    "{}",
                    r.pub_command
                ),
                System::Cyclone => {
                    let cfg = std::fs::read_to_string(out_dir.join("cyclone-tcp-pub.xml")).unwrap();
                    assert!(cfg.contains("<Transport>tcp</Transport>"), "{cfg}");
                    assert!(
                        r.pub_command.contains("cyclone-tcp-pub.xml"),
                        "{}",
                        r.pub_command
                    );
                }
            }
        }
    }
    for want in [
        "raw TCP",
        "raw UDP",
        "raw TLS",
        "ferrodds reliable unkeyed tcp",
        "ferrodds reliable unkeyed tls",
        "ferrodds reliable unkeyed udpv4-wan",
    ] {
        assert!(labels.iter().any(|l| l == want), "{want} not in {labels:?}");
    }
    let html = std::fs::read_to_string(out_dir.join(files::REPORT_HTML)).unwrap();
    assert!(
        html.contains("Connext (published: TCP 10 GbE, reliable, other hardware)"),
        "the published TCP latency is drawn for TCP runs"
    );
    std::fs::remove_dir_all(&out_dir).unwrap();
}

#[test]
fn failed_runs_are_recorded_the_lab_goes_on_and_exits_non_zero() {
    let dir = temp_dir("fail");
    let fake = script(
        &dir,
        "perftest",
        "echo \"fake perftest: boom $1\" >&2\nexit 3",
    );
    let out = output_bounded(
        lab()
            .args(["run", "--systems", "ferrodds,raw", "--tests", "latency"])
            .args([
                "--sizes",
                "32,64",
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
                "1",
            ])
            .arg("--perftest")
            .arg(&fake)
            .arg("--out")
            .arg(dir.join("out")),
        Duration::from_secs(60),
    );
    // Every run failed: the results are written, and the exit status says so.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = record::read_results(&dir.join("out")).unwrap();
    assert_eq!(s.runs.len(), 4);
    for r in &s.runs {
        assert_eq!(r.status, RunStatus::Failed);
        assert!(r.error.contains("no latency summary"), "{}", r.error);
        assert!(r.error.contains("exit 3"), "{}", r.error);
        assert!(r.stderr_tail.contains("pub: fake perftest: boom -pub"));
        assert!(r.stderr_tail.contains("sub: fake perftest: boom -sub"));
    }
    let html = std::fs::read_to_string(dir.join("out").join(files::REPORT_HTML)).unwrap();
    assert!(html.contains("Failed runs (4)"));
    assert!(html.contains("no successful runs"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("0 ok, 4 failed"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_hanging_run_times_out() {
    let dir = temp_dir("timeout");
    let fake = script(&dir, "perftest", "exec sleep 60");
    let start = Instant::now();
    let out = output_bounded(
        lab()
            .args([
                "run",
                "--systems",
                "raw",
                "--tests",
                "throughput",
                "--sizes",
                "32",
            ])
            .args([
                "--batching",
                "off",
                "--repetitions",
                "1",
                "--execution-time",
                "1",
            ])
            .args(["--run-timeout", "2", "--no-pin"])
            .arg("--perftest")
            .arg(&fake)
            .arg("--out")
            .arg(dir.join("out")),
        Duration::from_secs(60),
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "a timed-out run is a failed run"
    );
    assert!(start.elapsed() < Duration::from_secs(20));
    let s = record::read_results(&dir.join("out")).unwrap();
    assert_eq!(s.runs.len(), 1);
    assert_eq!(s.runs[0].status, RunStatus::TimedOut);
    assert!(!s.runs[0].pub_command.contains("taskset"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ctrl_c_kills_children_and_keeps_partial_results() {
    let dir = temp_dir("ctrlc");
    let pids = dir.join("pids");
    let fake = script(
        &dir,
        "perftest",
        &format!("echo $$ >> {}\nexec sleep 60", pids.display()),
    );
    let mut child = lab()
        .args([
            "run",
            "--systems",
            "raw",
            "--tests",
            "latency",
            "--sizes",
            "32,64,128",
        ])
        .args(["--repetitions", "1", "--execution-time", "1", "--no-pin"])
        .arg("--perftest")
        .arg(&fake)
        .arg("--out")
        .arg(dir.join("out"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until both processes of the first run are up.
    let t0 = Instant::now();
    while std::fs::read_to_string(&pids)
        .map(|s| s.lines().count())
        .unwrap_or(0)
        < 2
    {
        assert!(t0.elapsed() < Duration::from_secs(20), "runs never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let t1 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t1.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("lab did not stop after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    let s = record::read_results(&dir.join("out")).unwrap();
    assert!(s.interrupted);
    assert_eq!(s.runs.len(), 1);
    assert_eq!(s.runs[0].status, RunStatus::Interrupted);
    assert_eq!(s.runs_not_started, 2);
    assert!(dir.join("out").join(files::REPORT_HTML).exists());
    for pid in std::fs::read_to_string(&pids).unwrap().lines() {
        assert!(
            !std::path::Path::new(&format!("/proc/{}", pid.trim())).exists(),
            "child {pid} still running"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn remote_topology_runs_the_subscriber_through_the_prefix() {
    let dir = temp_dir("remote");
    let pt = perftest();
    let out = output_bounded(
        lab()
            .args(["run", "--topology", "remote", "--peer-host", "127.0.0.1"])
            .args(["--local-addr", "127.0.0.1", "--run-remote-cmd", "sh -c"])
            .arg("--remote-perftest")
            .arg(&pt)
            .args([
                "--systems",
                "raw",
                "--tests",
                "throughput",
                "--sizes",
                "1024",
            ])
            .args([
                "--batching",
                "off",
                "--repetitions",
                "1",
                "--execution-time",
                "1",
            ])
            .args(["--domain-base", "150"])
            .arg("--perftest")
            .arg(&pt)
            .arg("--out")
            .arg(dir.join("out")),
        Duration::from_secs(90),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = record::read_results(&dir.join("out")).unwrap();
    assert_eq!(s.runs.len(), 1);
    let r = &s.runs[0];
    assert_eq!(r.status, RunStatus::Ok, "{}\n{}", r.error, r.stderr_tail);
    assert!(r.sub_command.starts_with("sh -c '"), "{}", r.sub_command);
    assert!(r.topology.starts_with("remote 127.0.0.1"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dry_run_prints_the_quick_schedule() {
    let out = output_bounded(
        lab().args(["run", "--quick", "--dry-run", "--perftest", "perftest"]),
        Duration::from_secs(20),
    );
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("18 runs, estimated"), "{stdout}");
    assert_eq!(stdout.matches("-rawTransport").count(), 12, "{stdout}");
    let out = output_bounded(
        lab().args([
            "run",
            "--dry-run",
            "--perftest",
            "perftest",
            "--sizes",
            "nonsense",
        ]),
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid size"));
}

/// Pids of the processes whose parent is `parent` (from /proc/*/stat).
fn children_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

/// Whether `pid` is still a live process (a zombie counts as gone).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X")
        })
        .unwrap_or(false)
}

/// Starts a long raw `lab run`, waits for its two perftest children, sends SIGTERM `signals`
/// times back to back (`timeout` and service managers signal the lab and then its group:
/// the second signal takes the forced exit) and checks that the lab exits at once with 130
/// and leaves no perftest running. Each caller has its own domains (the tests run at once).
fn sigterm_stops_the_perftest_children(name: &str, signals: usize, domain_base: &str) {
    let dir = temp_dir(name);
    let mut child = lab()
        .args(["run", "--systems", "raw", "--tests", "throughput"])
        .args(["--sizes", "1024", "--repetitions", "1"])
        .args([
            "--execution-time",
            "60",
            "--no-pin",
            "--domain-base",
            domain_base,
        ])
        .arg("--perftest")
        .arg(perftest())
        .arg("--out")
        .arg(dir.join("out"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let kids = loop {
        let kids: Vec<u32> = children_of(child.id())
            .into_iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c.contains("perftest"))
            })
            .collect();
        if kids.len() == 2 {
            break kids;
        }
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the perftest pair never started");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    for _ in 0..signals {
        let st = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
    }
    let t1 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t1.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            for k in &kids {
                let _ = Command::new("kill")
                    .args(["-KILL", &k.to_string()])
                    .status();
            }
            panic!("lab did not stop within 10 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    // The children are reaped by the lab (first signal) or killed by it before exiting
    // (second signal; then init reaps them): give the kernel a moment either way.
    let t2 = Instant::now();
    while kids.iter().any(|k| alive(*k)) && t2.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<u32> = kids.iter().copied().filter(|k| alive(*k)).collect();
    for k in &left {
        let _ = Command::new("kill")
            .args(["-KILL", &k.to_string()])
            .status();
    }
    assert!(
        left.is_empty(),
        "perftest children {left:?} still running after SIGTERM"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sigterm_stops_the_run_and_its_perftest_children() {
    sigterm_stops_the_perftest_children("sigterm", 1, "225");
}

#[test]
fn a_second_sigterm_forces_the_exit_but_still_kills_the_children() {
    sigterm_stops_the_perftest_children("sigterm2", 2, "229");
}
