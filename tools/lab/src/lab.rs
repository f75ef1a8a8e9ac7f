//! The run loop: sets up the topology, runs the schedule, records every run as it finishes
//! (CSV and JSON are rewritten after each run, so a killed lab still leaves valid files) and
//! writes the report at the end.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use indicatif::{ProgressBar, ProgressStyle};

use crate::error::LabError;
use crate::matrix::{
    Capture, MatrixSpec, PlannedRun, Reliability, Scenario, SecurityProfile, System, TestKind,
};
use crate::parse;
use crate::record::{self, HostInfo, LatencyStats, RunRecord, RunSettings, RunStatus, Summary};
use crate::record::{CaptureFrames, ThroughputStats};
use crate::runner::{self, CommandSpec, Ending, PairOutcome, PairTiming, Placement, ProcOutput};
use crate::testbed::{self, Impairments, Testbed};

/// The Cyclone DDS loopback configuration shipped with the lab (`tools/lab/cyclone-loopback.xml`).
pub const CYCLONE_LOOPBACK_XML: &str = include_str!("../cyclone-loopback.xml");

/// How the two sides of a run are connected.
#[derive(Clone, Debug, PartialEq)]
pub enum TopologyOptions {
    /// Both processes on this host, over 127.0.0.1.
    Loopback,
    /// Two network namespaces joined by a veth pair, with optional impairments.
    Netns(Impairments),
    /// The subscriber side runs on another host.
    Remote {
        /// Address of the other host.
        peer_host: String,
        /// This host's address on the link (perftest `-nic`), if to be pinned.
        local_addr: Option<String>,
        /// Command prefix that runs a shell command line on the other host (e.g. `ssh host`);
        /// `None` = print the command and wait for the user to start it.
        run_remote_cmd: Option<Vec<String>>,
        /// perftest's name or path on the other host.
        remote_perftest: String,
    },
}

impl TopologyOptions {
    /// Short description recorded with every run.
    pub fn describe(&self) -> String {
        match self {
            TopologyOptions::Loopback => "loopback".into(),
            TopologyOptions::Netns(i) if i.any() => format!("netns {}", i.describe()),
            TopologyOptions::Netns(_) => "netns".into(),
            TopologyOptions::Remote { peer_host, .. } => format!("remote {peer_host}"),
        }
    }
}

/// Everything `lab run` needs.
#[derive(Clone, Debug)]
pub struct LabOptions {
    /// The matrix.
    pub spec: MatrixSpec,
    /// Whether this is `--quick`.
    pub quick: bool,
    /// Results directory.
    pub out: PathBuf,
    /// `taskset -c` CPU list, `None` = no pinning.
    pub cpu: Option<String>,
    /// Topology.
    pub topology: TopologyOptions,
    /// perftest binary.
    pub perftest: PathBuf,
    /// The C# perftest's wrapper (runs with [`crate::matrix::Language::Cs`]).
    pub perftest_cs: Option<PathBuf>,
    /// perftest_micro (runs with [`crate::matrix::Language::Micro`]).
    pub perftest_micro: Option<PathBuf>,
    /// ddsperf binary; `None` removes Cyclone from the matrix (with a note).
    pub ddsperf: Option<PathBuf>,
    /// Per-run timeout; `None` = execution time + a margin for start-up and shutdown.
    pub run_timeout: Option<Duration>,
    /// First DDS domain id; run `i` uses `domain_base + i % 40` (see [`check_domain_base`]).
    pub domain_base: u32,
    /// The lab's own command line, recorded in the summary.
    pub command_line: String,
    /// Draw the published Connext figures as reference lines.
    pub reference: bool,
    /// Keep the network captures of capture runs in `<out>/captures`.
    pub keep_captures: bool,
    /// perftest's `resource/secure` folder, for Cyclone's secure rows (`None` without them).
    pub secure_dir: Option<PathBuf>,
}

/// Receives progress events.
pub trait Progress {
    /// The schedule is known.
    fn start(&mut self, runs: usize, estimated: Duration);
    /// A run is starting.
    fn run_started(&mut self, run: &PlannedRun, description: &str);
    /// A run has finished; `estimated` was its share of the total estimate.
    fn run_finished(&mut self, record: &RunRecord, estimated: Duration);
    /// A free-form message.
    fn message(&mut self, text: &str);
    /// All done.
    fn finish(&mut self);
}

/// Progress on the terminal: an indicatif bar with ETA when stderr is a terminal, plain log
/// lines on stderr otherwise.
pub struct ConsoleProgress {
    bar: Option<ProgressBar>,
    total: usize,
    done: usize,
}

impl ConsoleProgress {
    /// A progress reporter choosing bar or log lines by whether stderr is a terminal.
    pub fn new() -> Self {
        ConsoleProgress {
            bar: None,
            total: 0,
            done: 0,
        }
    }

    fn line(&self, text: &str) {
        match &self.bar {
            Some(b) => b.println(text),
            None => eprintln!("{text}"),
        }
    }
}

impl Default for ConsoleProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl Progress for ConsoleProgress {
    fn start(&mut self, runs: usize, estimated: Duration) {
        self.total = runs;
        if std::io::stderr().is_terminal() {
            let b = ProgressBar::new(estimated.as_secs().max(1));
            if let Ok(style) = ProgressStyle::with_template(
                "{spinner} {elapsed_precise} [{bar:30}] {percent:>3}% ETA {eta_precise} {wide_msg}",
            ) {
                b.set_style(style);
            }
            b.enable_steady_tick(Duration::from_millis(200));
            self.bar = Some(b);
        }
        self.line(&format!(
            "lab: {runs} runs planned, estimated {} min",
            estimated.as_secs().div_ceil(60)
        ));
    }

    fn run_started(&mut self, run: &PlannedRun, description: &str) {
        match &self.bar {
            Some(b) => b.set_message(format!("[{}/{}] {description}", run.index + 1, self.total)),
            None => eprintln!("lab: [{}/{}] {description} ...", run.index + 1, self.total),
        }
    }

    fn run_finished(&mut self, r: &RunRecord, estimated: Duration) {
        self.done += 1;
        let what = match (r.status, r.latency, r.throughput) {
            (RunStatus::Ok, Some(l), _) if r.scenario.test == TestKind::Latency => {
                format!("p50 {:.1} µs, p99 {:.1} µs", l.p50_us, l.p99_us)
            }
            (RunStatus::Ok, _, Some(t)) => format!(
                "{:.0} samples/s, {:.1} Mbps, lost {:.2} %",
                t.samples_per_s, t.mbps, t.lost_pct
            ),
            (st, _, _) => format!("{}: {}", st.name(), r.error),
        };
        let what = match r
            .capture_frames
            .and_then(|c| c.written_pct_floor().map(|p| (c, p)))
        {
            Some((c, pct)) => format!("{what}, capture wrote {pct} % of {} frames", c.total()),
            None => what,
        };
        let text = format!(
            "lab: [{}/{}] {} {} {} B: {what} ({:.1} s)",
            r.run_index + 1,
            self.total,
            r.scenario.config_label(),
            r.scenario.test,
            r.scenario.size,
            r.duration_s
        );
        self.line(&text);
        if let Some(b) = &self.bar {
            b.inc(estimated.as_secs());
        }
    }

    fn message(&mut self, text: &str) {
        self.line(&format!("lab: {text}"));
    }

    fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

/// Progress that keeps the messages (tests, embedding).
#[derive(Debug, Default)]
pub struct RecordingProgress {
    /// Every line, in order.
    pub lines: Vec<String>,
}

impl Progress for RecordingProgress {
    fn start(&mut self, runs: usize, _estimated: Duration) {
        self.lines.push(format!("start {runs}"));
    }
    fn run_started(&mut self, _run: &PlannedRun, description: &str) {
        self.lines.push(format!("run {description}"));
    }
    fn run_finished(&mut self, record: &RunRecord, _estimated: Duration) {
        self.lines.push(format!("done {}", record.status.name()));
    }
    fn message(&mut self, text: &str) {
        self.lines.push(text.to_string());
    }
    fn finish(&mut self) {
        self.lines.push("finish".into());
    }
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Estimated wall time of one run (execution time plus start-up and shutdown).
pub fn estimate(run: &PlannedRun, execution_time_s: u32) -> Duration {
    let s = &run.scenario;
    let overhead = match s.system {
        System::Cyclone => 3.5,
        _ => 4.5,
    } + if s.keyed { 2.0 } else { 0.0 }
        + if s.size > 1_000_000 { 3.0 } else { 0.0 };
    Duration::from_secs_f64(f64::from(execution_time_s) + overhead)
}

/// The default run timeout: the execution time, a start-up margin and, on a link limited to
/// `rate_mbit`, the time the link needs for perftest's initial burst (50 samples of 1,234 B, or
/// as many as 50 batches of 8192 B hold: 12,800 for 32 B, 13 s at 10 Mbit/s) and twice the time
/// it needs to carry perftest's send queue (50 samples, or 50 batches of 8192 B), which a
/// reliable publisher drains before it ends the test (1 MiB samples at 10 Mbit/s: 42 s).
fn default_timeout(run: &PlannedRun, execution_time_s: u32, rate_mbit: Option<f64>) -> Duration {
    let s = &run.scenario;
    let extra = 30 + if s.keyed { 60 } else { 0 } + if s.size > 1_000_000 { 30 } else { 0 };
    let link = match rate_mbit {
        Some(r) if r > 0.0 && s.test == TestKind::Throughput => {
            let burst_samples = if s.batching {
                (50 * (8192 / s.size.max(1))).max(50)
            } else {
                50
            };
            // 1,234 B of payload, the perftest header, RTPS and UDP/IP framing.
            let burst = burst_samples as f64 * 1_350.0;
            let queue = if s.reliability == Reliability::Reliable {
                2.0 * 50.0 * if s.batching { 8192.0 } else { s.size as f64 }
            } else {
                0.0
            };
            ((burst + queue) * 8.0 / (r * 1e6)).ceil() as u64
        }
        _ => 0,
    };
    Duration::from_secs(u64::from(execution_time_s) + extra + link)
}

fn write_file(path: &Path, text: &str) -> Result<(), LabError> {
    std::fs::write(path, text).map_err(|e| LabError::io(path, e))
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

fn describe_exit(p: &ProcOutput) -> String {
    match p.status {
        Some(st) => match st.code() {
            Some(c) => format!("exit {c}"),
            None => "killed by a signal".into(),
        },
        None => "stopped by the lab".into(),
    }
}

fn no_samples(t: Option<&ThroughputStats>) -> bool {
    t.is_some_and(|t| t.total_samples == 0)
}

/// What a timed-out run's processes printed when interrupted (empty when nothing was parsed).
fn measured_until_interrupt(
    test: TestKind,
    latency: Option<&LatencyStats>,
    throughput: Option<&ThroughputStats>,
) -> String {
    match (test, latency, throughput) {
        (TestKind::Throughput, _, Some(t)) if t.total_samples == 0 => {
            "; interrupted then, the subscriber had received no samples".into()
        }
        (TestKind::Throughput, _, Some(t)) => format!(
            "; interrupted then, the subscriber had received {} samples: {:.1} Mbps, {} lost",
            t.total_samples, t.mbps, t.lost_samples
        ),
        (TestKind::Latency, Some(l), _) => format!(
            "; interrupted then, the publisher had measured p50 {:.1} µs, p99 {:.1} µs",
            l.p50_us, l.p99_us
        ),
        _ => String::new(),
    }
}

/// What is wrong with the security a FerroDDS run's processes printed in their start-up summary
/// (perftest's "Secure Configuration:" block) for the row's profile, `None` when it matches: a
/// secure row's publisher, and its subscriber when its output is here, name the profile's
/// governance file; a row without security has no such block. A row never claims a security
/// setting its run did not use.
pub fn security_mismatch(s: &Scenario, outcome: &PairOutcome) -> Option<String> {
    if s.system != System::Ferrodds {
        return None;
    }
    // (The subscriber's output is not here when it was started by hand on another host.)
    let sides = [
        ("publisher", &outcome.client),
        ("subscriber", &outcome.server),
    ];
    let printed = |p: &ProcOutput| p.stderr.contains("Perftest Configuration:");
    for (who, p) in sides {
        if who == "subscriber" && !printed(p) {
            continue;
        }
        let block = p.stderr.contains("Secure Configuration:");
        match s.security.and_then(SecurityProfile::governance_file) {
            Some(file) => {
                let named = p.stderr.lines().any(|l| {
                    l.trim()
                        .strip_prefix("Governance file: ")
                        .is_some_and(|g| g.ends_with(&format!("/{file}")) || g == file)
                });
                if !block || !named {
                    return Some(format!(
                        "the {who}'s start-up summary does not name the governance {file} of profile {} in a Secure Configuration block",
                        s.security.map(SecurityProfile::name).unwrap_or_default()
                    ));
                }
            }
            None if block => {
                return Some(format!(
                    "the {who}'s start-up summary has a Secure Configuration block, but the row has no security"
                ));
            }
            None => {}
        }
    }
    None
}

/// Turns a pair outcome into a record. A throughput run whose subscriber received no samples
/// fails; a timed-out run keeps (and its error quotes) what was printed after SIGINT.
pub fn make_record(
    run: &PlannedRun,
    outcome: &PairOutcome,
    server_cmd: &CommandSpec,
    more_server_cmds: &[CommandSpec],
    client_cmd: &CommandSpec,
    topology: &str,
    execution_time_s: u32,
) -> RunRecord {
    let s = &run.scenario;
    let servers: Vec<&ProcOutput> = std::iter::once(&outcome.server)
        .chain(&outcome.more_servers)
        .collect();
    let parse_throughput = |o: &ProcOutput| match s.system {
        System::Cyclone => parse::ddsperf_throughput(&o.stdout),
        _ => parse::perftest_throughput(&o.stdout),
    };
    let latency = match s.system {
        System::Cyclone => parse::ddsperf_latency(&outcome.client.stdout),
        _ => parse::perftest_latency(&outcome.client.stdout),
    };
    // With several subscribers: each received the whole stream; the row is their mean
    // (samples/s, Mbit/s, lost %), the fewest samples any received, and the lost samples of
    // all. Every subscriber must have printed its summary.
    let each: Option<Vec<ThroughputStats>> = servers.iter().map(|o| parse_throughput(o)).collect();
    let throughput = each.and_then(|v: Vec<ThroughputStats>| combine_subscribers(&v));
    let have = match s.test {
        TestKind::Latency => latency.is_some(),
        TestKind::Throughput => throughput.is_some(),
    };
    let mut exits = format!(
        "publisher {}, subscriber {}",
        describe_exit(&outcome.client),
        describe_exit(&outcome.server)
    );
    for (i, o) in outcome.more_servers.iter().enumerate() {
        exits.push_str(&format!(", subscriber {} {}", i + 1, describe_exit(o)));
    }
    let (status, error) = match outcome.ending {
        Ending::Interrupted => (RunStatus::Interrupted, "interrupted (Ctrl-C)".to_string()),
        Ending::TimedOut => (
            RunStatus::TimedOut,
            format!(
                "timed out after {:.0} s{}",
                outcome.elapsed.as_secs_f64(),
                measured_until_interrupt(s.test, latency.as_ref(), throughput.as_ref())
            ),
        ),
        Ending::ServerFailed => (
            RunStatus::Failed,
            format!("subscriber side failed first ({exits})"),
        ),
        Ending::Finished if s.test == TestKind::Throughput && no_samples(throughput.as_ref()) => (
            RunStatus::Failed,
            format!("the subscriber received no samples ({exits})"),
        ),
        Ending::Finished if have => (RunStatus::Ok, String::new()),
        Ending::Finished => (
            RunStatus::Failed,
            format!(
                "no {} summary in the {} output ({exits})",
                s.test,
                if s.test == TestKind::Latency {
                    "publisher"
                } else {
                    "subscriber"
                }
            ),
        ),
    };
    let (status, error) = match (status, security_mismatch(s, outcome)) {
        (RunStatus::Ok, Some(e)) => (RunStatus::Failed, e),
        (st, _) => (st, error),
    };
    let stderr_tail = if status == RunStatus::Ok {
        String::new()
    } else {
        let mut t = String::new();
        let mut who_p: Vec<(String, &ProcOutput)> = vec![
            ("pub".to_string(), &outcome.client),
            ("sub".to_string(), &outcome.server),
        ];
        for (i, o) in outcome.more_servers.iter().enumerate() {
            who_p.push((format!("sub {}", i + 1), o));
        }
        for (who, p) in who_p {
            let tail = runner::tail_lines(&format!("{}\n{}", p.stderr, p.stdout), 12);
            for l in tail.lines() {
                t.push_str(&who);
                t.push_str(": ");
                t.push_str(l);
                t.push('\n');
            }
        }
        t.trim_end().to_string()
    };
    RunRecord {
        run_index: run.index,
        repetition: run.repetition,
        scenario: *s,
        topology: topology.to_string(),
        execution_time_s,
        status,
        duration_s: outcome.elapsed.as_secs_f64(),
        latency,
        throughput,
        error,
        pub_command: client_cmd.shell_line(),
        sub_command: std::iter::once(server_cmd)
            .chain(more_server_cmds)
            .map(CommandSpec::shell_line)
            .collect::<Vec<_>>()
            .join(" ; "),
        stderr_tail,
        udp_datagrams: None,
        pub_cpu_s: outcome.client.cpu_s,
        capture_frames: capture_frames(s, &outcome.client, &servers),
    }
}

/// What the network captures of a perftest run recorded, summed over its participants (the
/// count perftest prints on its error output as it ends); `None` without capture or when one
/// of them did not print it.
fn capture_frames(
    s: &Scenario,
    client: &ProcOutput,
    servers: &[&ProcOutput],
) -> Option<CaptureFrames> {
    if s.capture == Capture::Off || s.system == System::Cyclone {
        return None;
    }
    std::iter::once(client)
        .chain(servers.iter().copied())
        .map(|o| parse::perftest_capture(&o.stderr).or_else(|| parse::perftest_capture(&o.stdout)))
        .try_fold(CaptureFrames::default(), |sum, c| Some(sum.plus(c?)))
}

/// The throughput row of a run's subscribers (see [`make_record`]); `None` without any.
fn combine_subscribers(v: &[ThroughputStats]) -> Option<ThroughputStats> {
    let first = *v.first()?;
    if v.len() == 1 {
        return Some(first);
    }
    let n = v.len() as f64;
    Some(ThroughputStats {
        total_samples: v.iter().map(|t| t.total_samples).min().unwrap_or(0),
        samples_per_s: v.iter().map(|t| t.samples_per_s).sum::<f64>() / n,
        mbps: v.iter().map(|t| t.mbps).sum::<f64>() / n,
        lost_samples: v.iter().map(|t| t.lost_samples).sum(),
        lost_pct: v.iter().map(|t| t.lost_pct).sum::<f64>() / n,
    })
}

/// A Cyclone DDS configuration as the other host gets it in `CYCLONEDDS_URI` (inline XML:
/// without the declaration line, each line trimmed).
fn inline_xml(config: &str) -> String {
    config.lines().skip(1).map(str::trim).collect()
}

struct Setup {
    placement: Placement,
    _testbed: Option<Testbed>,
    notes: Vec<String>,
    manual_remote: bool,
    /// Where the UDP datagrams of throughput runs are counted: `None` not at all (remote),
    /// `Some(None)` this host's namespace (loopback), `Some(Some(ns))` the publisher's netns.
    udp_count: Option<Option<String>>,
}

/// `OutDatagrams` of the `Udp:` lines of `/proc/net/snmp`.
pub fn parse_udp_out_datagrams(snmp: &str) -> Option<u64> {
    let mut lines = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let header = lines.next()?;
    let values = lines.next()?;
    let i = header
        .split_whitespace()
        .position(|h| h == "OutDatagrams")?;
    values.split_whitespace().nth(i)?.parse().ok()
}

/// UDP datagrams sent so far in this network namespace (`None`) or in `netns`.
fn udp_out_datagrams(netns: Option<&str>) -> Option<u64> {
    let text = match netns {
        None => std::fs::read_to_string("/proc/net/snmp").ok()?,
        Some(ns) => {
            let out = std::process::Command::new("ip")
                .args(["netns", "exec", ns, "cat", "/proc/net/snmp"])
                .output()
                .ok()?;
            if !out.status.success() {
                return None;
            }
            String::from_utf8(out.stdout).ok()?
        }
    };
    parse_udp_out_datagrams(&text)
}

fn setup_topology(opts: &LabOptions) -> Result<Setup, LabError> {
    let out = absolute(&opts.out);
    let mut placement = Placement {
        perftest: opts.perftest.clone(),
        perftest_cs: opts.perftest_cs.clone(),
        perftest_micro: opts.perftest_micro.clone(),
        ddsperf: opts
            .ddsperf
            .clone()
            .unwrap_or_else(|| PathBuf::from("ddsperf")),
        cpu: opts.cpu.clone(),
        keep_captures: opts.keep_captures,
        secure_dir: opts.secure_dir.clone(),
        ..Default::default()
    };
    if opts.spec.captures.iter().any(|c| *c != Capture::Off) {
        let dir = out.join("captures");
        std::fs::create_dir_all(&dir).map_err(|e| LabError::io(&dir, e))?;
        placement.capture_dir = Some(dir);
    }
    let mut notes = Vec::new();
    let mut testbed = None;
    let mut manual_remote = false;
    match &opts.topology {
        TopologyOptions::Loopback => {
            let p = out.join("cyclone-loopback.xml");
            write_file(&p, CYCLONE_LOOPBACK_XML)?;
            let uri = format!("file://{}", p.display());
            placement.cyclone_pub_uri = uri.clone();
            placement.cyclone_sub_uri = uri;
            placement.pub_addr = Some("127.0.0.1".into());
            placement.sub_addr = Some("127.0.0.1".into());
            // One address: the two TCP servers need two ports.
            (placement.tcp_pub_port, placement.tcp_sub_port) = (7400, 7401);
            let lo = "127.0.0.1";
            let (a, b) = (
                out.join("cyclone-tcp-pub.xml"),
                out.join("cyclone-tcp-sub.xml"),
            );
            write_file(&a, &testbed::cyclone_tcp_config_for(lo, 7400, lo, 7401))?;
            write_file(&b, &testbed::cyclone_tcp_config_for(lo, 7401, lo, 7400))?;
            placement.cyclone_tcp_pub_uri = format!("file://{}", a.display());
            placement.cyclone_tcp_sub_uri = format!("file://{}", b.display());
        }
        TopologyOptions::Netns(imp) => {
            let tb = Testbed::create(*imp)?;
            notes.extend(tb.notes.iter().cloned());
            let a = out.join("cyclone-netns-pub.xml");
            let b = out.join("cyclone-netns-sub.xml");
            write_file(
                &a,
                &testbed::cyclone_config_for(testbed::NETNS_PUB_ADDR, testbed::NETNS_SUB_ADDR),
            )?;
            write_file(
                &b,
                &testbed::cyclone_config_for(testbed::NETNS_SUB_ADDR, testbed::NETNS_PUB_ADDR),
            )?;
            placement.cyclone_pub_uri = format!("file://{}", a.display());
            placement.cyclone_sub_uri = format!("file://{}", b.display());
            let (a, b) = (
                out.join("cyclone-netns-multicast-pub.xml"),
                out.join("cyclone-netns-multicast-sub.xml"),
            );
            let (pa, sa) = (testbed::NETNS_PUB_ADDR, testbed::NETNS_SUB_ADDR);
            write_file(&a, &testbed::cyclone_multicast_config_for(pa, sa))?;
            write_file(&b, &testbed::cyclone_multicast_config_for(sa, pa))?;
            placement.cyclone_mc_pub_uri = format!("file://{}", a.display());
            placement.cyclone_mc_sub_uri = format!("file://{}", b.display());
            placement.pub_addr = Some(testbed::NETNS_PUB_ADDR.into());
            placement.sub_addr = Some(testbed::NETNS_SUB_ADDR.into());
            (placement.tcp_pub_port, placement.tcp_sub_port) = (7400, 7400);
            let (pa, sa) = (testbed::NETNS_PUB_ADDR, testbed::NETNS_SUB_ADDR);
            let (a, b) = (
                out.join("cyclone-tcp-pub.xml"),
                out.join("cyclone-tcp-sub.xml"),
            );
            write_file(&a, &testbed::cyclone_tcp_config_for(pa, 7400, sa, 7400))?;
            write_file(&b, &testbed::cyclone_tcp_config_for(sa, 7400, pa, 7400))?;
            placement.cyclone_tcp_pub_uri = format!("file://{}", a.display());
            placement.cyclone_tcp_sub_uri = format!("file://{}", b.display());
            placement.pub_prefix = tb.pub_prefix();
            placement.sub_prefix = tb.sub_prefix();
            testbed = Some(tb);
        }
        TopologyOptions::Remote {
            peer_host,
            local_addr,
            run_remote_cmd,
            remote_perftest,
        } => {
            placement.pub_addr = local_addr.clone();
            placement.sub_addr = Some(peer_host.clone());
            placement.remote_perftest = Some(remote_perftest.clone());
            let local = local_addr.clone().unwrap_or_else(|| "0.0.0.0".into());
            let a = out.join("cyclone-remote-local.xml");
            write_file(&a, &testbed::cyclone_config_for(&local, peer_host))?;
            placement.cyclone_pub_uri = format!("file://{}", a.display());
            // The other host gets its configuration inline (Cyclone accepts XML in the URI).
            placement.cyclone_sub_uri = inline_xml(&testbed::cyclone_config_for(peer_host, &local));
            let m = out.join("cyclone-remote-multicast-local.xml");
            write_file(
                &m,
                &testbed::cyclone_multicast_config_for(&local, peer_host),
            )?;
            placement.cyclone_mc_pub_uri = format!("file://{}", m.display());
            placement.cyclone_mc_sub_uri =
                inline_xml(&testbed::cyclone_multicast_config_for(peer_host, &local));
            (placement.tcp_pub_port, placement.tcp_sub_port) = (7400, 7400);
            let a = out.join("cyclone-tcp-remote-local.xml");
            write_file(
                &a,
                &testbed::cyclone_tcp_config_for(&local, 7400, peer_host, 7400),
            )?;
            placement.cyclone_tcp_pub_uri = format!("file://{}", a.display());
            placement.cyclone_tcp_sub_uri = inline_xml(&testbed::cyclone_tcp_config_for(
                peer_host, 7400, &local, 7400,
            ));
            match run_remote_cmd {
                Some(prefix) => placement.sub_shell_prefix = prefix.clone(),
                None => {
                    manual_remote = true;
                    // Commands are shown as a shell line for the other host.
                    placement.sub_shell_prefix = vec!["sh".into(), "-c".into()];
                    notes.push(
                        "remote topology without --run-remote-cmd: subscriber commands were printed for the other host; throughput is measured there"
                            .into(),
                    );
                }
            }
        }
    }
    let udp_count = match &opts.topology {
        TopologyOptions::Loopback => Some(None),
        TopologyOptions::Netns(_) => testbed.as_ref().map(|tb| Some(tb.ns_pub.clone())),
        TopologyOptions::Remote { .. } => None,
    };
    Ok(Setup {
        placement,
        _testbed: testbed,
        notes,
        manual_remote,
        udp_count,
    })
}

/// Number of consecutive DDS domains the runs cycle through, from `domain_base`.
pub const DOMAIN_SPAN: u32 = 40;

/// Highest DDS domain id whose RTPS well-known ports (7400 + 250 × domain + offsets) stay
/// below 65536.
pub const MAX_DOMAIN_ID: u32 = 232;

/// Checks that every domain `runs` runs use (see [`run_domain`]) is a valid DDS domain id.
pub fn check_domain_base(base: u32, runs: usize) -> Result<(), LabError> {
    let span = runs.clamp(1, DOMAIN_SPAN as usize) as u32;
    match base.checked_add(span - 1) {
        Some(last) if last <= MAX_DOMAIN_ID => Ok(()),
        _ => Err(LabError::BadValue {
            what: "--domain-base (run i uses domain base + i % 40, which must be at most 232)",
            value: base.to_string(),
        }),
    }
}

/// The domain of run `index` (see [`DOMAIN_SPAN`]); `base` must pass [`check_domain_base`].
pub fn run_domain(base: u32, index: usize) -> u32 {
    base.saturating_add((index % DOMAIN_SPAN as usize) as u32)
}

/// What the security axis ran, one note per profile (none without the axis).
pub fn security_notes(spec: &MatrixSpec) -> Vec<String> {
    let cyclone = spec.systems.contains(&System::Cyclone);
    spec.security
        .iter()
        .map(|p| match p.perftest_governance() {
            Some(g) => format!(
                "security {p}: FerroDDS perftest -secureGovernanceFile {g} on both sides (UDPv4; each run's start-up summary checked to name that governance){}",
                if cyclone {
                    "; Cyclone ddsperf with the same governance, identities and permissions"
                } else {
                    ""
                }
            ),
            None => format!(
                "security {p}: no -secure option (security plugins not loaded); the raw, C# and micro rows run so too"
            ),
        })
        .collect()
}

/// Runs the whole matrix and writes the results directory. Returns the summary; partial
/// results are kept when `stop` is raised (Ctrl-C).
pub fn run_lab(
    opts: &LabOptions,
    stop: &AtomicBool,
    progress: &mut dyn Progress,
) -> Result<Summary, LabError> {
    let started = now_unix();
    let mut spec = opts.spec.clone();
    let mut notes: Vec<String> = Vec::new();
    if spec.systems.contains(&System::Cyclone) && opts.ddsperf.is_none() {
        spec.systems.retain(|s| *s != System::Cyclone);
        notes.push(
            "Cyclone DDS ddsperf not found (Debian package cyclonedds-tools): Cyclone baseline skipped"
                .into(),
        );
    }
    let schedule = spec.schedule();
    if schedule.is_empty() {
        return Err(LabError::EmptyMatrix);
    }
    notes.extend(security_notes(&spec));
    let rate_mbit = match &opts.topology {
        TopologyOptions::Netns(imp) => imp.rate_mbit,
        _ => None,
    };
    check_domain_base(opts.domain_base, schedule.len())?;
    std::fs::create_dir_all(&opts.out).map_err(|e| LabError::io(&opts.out, e))?;
    let setup = setup_topology(opts)?;
    notes.extend(setup.notes.iter().cloned());
    let topology = opts.topology.describe();
    let exec = spec.execution_time_s;
    let settings = RunSettings {
        topology: topology.clone(),
        cpu_pin: opts.cpu.clone().unwrap_or_default(),
        execution_time_s: exec,
        repetitions: spec.repetitions,
        quick: opts.quick,
        perftest: opts.perftest.display().to_string(),
        ddsperf: opts
            .ddsperf
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        command_line: opts.command_line.clone(),
    };
    let mut summary = Summary {
        lab_version: env!("CARGO_PKG_VERSION").to_string(),
        started_unix_s: started,
        finished_unix_s: started,
        host: HostInfo::detect(),
        settings,
        planned_runs: schedule.len(),
        runs_ok: 0,
        runs_failed: 0,
        runs_not_started: schedule.len(),
        interrupted: false,
        notes,
        aggregates: Vec::new(),
        runs: Vec::new(),
    };
    for n in &summary.notes {
        progress.message(n);
    }
    let total_est: Duration = schedule.iter().map(|r| estimate(r, exec)).sum();
    progress.start(schedule.len(), total_est);
    for run in &schedule {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let domain = run_domain(opts.domain_base, run.index);
        let cmds = runner::build_commands(&run.scenario, &setup.placement, domain, exec);
        let s = &run.scenario;
        let desc = format!(
            "{} {} {} B rep {}",
            s.config_label(),
            s.test,
            s.size,
            run.repetition + 1
        );
        progress.run_started(run, &desc);
        let (server, shown_server) = if setup.manual_remote {
            progress.message(&format!(
                "start on the other host: {}",
                cmds.server.args.last().cloned().unwrap_or_default()
            ));
            wait_for_user(stop);
            (CommandSpec::new("true"), cmds.server.clone())
        } else {
            (cmds.server.clone(), cmds.server.clone())
        };
        let grace = match (s.system, s.test) {
            (System::Cyclone, TestKind::Latency) => Duration::from_millis(500),
            (System::Cyclone, TestKind::Throughput) => Duration::from_secs(8),
            _ => Duration::from_secs(8),
        };
        let timing = PairTiming {
            server_head_start: Duration::from_millis(500),
            timeout: opts
                .run_timeout
                .unwrap_or_else(|| default_timeout(run, exec, rate_mbit)),
            server_grace: grace,
            // perftest's subscriber (ours: the full build, the micro build and the raw
            // baseline) waits 2 s after the end of the test, as RTI's does; the lab, which
            // starts nothing else before both ended, does not wait for that (2 s per run).
            stop_server_after_client: (s.system != System::Cyclone
                && s.language != crate::matrix::Language::Cs)
                .then_some(Duration::from_millis(50)),
        };
        let count_in = setup
            .udp_count
            .as_ref()
            .filter(|_| s.test == TestKind::Throughput);
        let udp_before = count_in.and_then(|ns| udp_out_datagrams(ns.as_deref()));
        let more = if setup.manual_remote {
            Vec::new()
        } else {
            cmds.more_servers.clone()
        };
        let result = if setup.manual_remote && s.subscribers > 1 {
            Err(LabError::Usage(
                "a fan-out run (--subscribers above 1) needs the subscribers started by the lab, not by hand",
            ))
        } else {
            runner::run_group(&server, &more, &cmds.client, timing, stop)
        };
        let record = match result {
            Ok(outcome) => {
                let mut r = make_record(
                    run,
                    &outcome,
                    &shown_server,
                    &more,
                    &cmds.client,
                    &topology,
                    exec,
                );
                if setup.manual_remote {
                    r.sub_command = cmds.server.args.last().cloned().unwrap_or_default();
                }
                let udp_after = count_in.and_then(|ns| udp_out_datagrams(ns.as_deref()));
                if let (Some(a), Some(b)) = (udp_before, udp_after) {
                    r.udp_datagrams = Some(b.saturating_sub(a));
                }
                r
            }
            Err(e) => RunRecord {
                run_index: run.index,
                repetition: run.repetition,
                scenario: *s,
                topology: topology.clone(),
                execution_time_s: exec,
                status: RunStatus::Failed,
                duration_s: 0.0,
                latency: None,
                throughput: None,
                error: e.to_string(),
                pub_command: cmds.client.shell_line(),
                sub_command: shown_server.shell_line(),
                stderr_tail: String::new(),
                udp_datagrams: None,
                pub_cpu_s: None,
                capture_frames: None,
            },
        };
        progress.run_finished(&record, estimate(run, exec));
        summary.runs.push(record);
        refresh(&mut summary);
        summary.interrupted = stop.load(Ordering::Relaxed);
        record::write_results(&opts.out, &summary)?;
    }
    summary.interrupted = stop.load(Ordering::Relaxed);
    if summary.interrupted {
        summary.notes.push(format!(
            "interrupted (Ctrl-C): {} of {} runs finished",
            summary.runs.len(),
            summary.planned_runs
        ));
    }
    refresh(&mut summary);
    summary.finished_unix_s = now_unix();
    record::write_results(&opts.out, &summary)?;
    crate::report::write_report(&opts.out, &summary, opts.reference)?;
    progress.finish();
    Ok(summary)
}

fn refresh(summary: &mut Summary) {
    summary.runs_ok = summary
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::Ok)
        .count();
    summary.runs_failed = summary.runs.len() - summary.runs_ok;
    summary.runs_not_started = summary.planned_runs - summary.runs.len();
    summary.aggregates = record::aggregate(&summary.runs);
}

fn wait_for_user(stop: &AtomicBool) {
    if std::io::stdin().is_terminal() {
        eprintln!("lab: press Enter when the subscriber is running on the other host");
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    } else {
        let end = std::time::Instant::now() + Duration::from_secs(5);
        while std::time::Instant::now() < end && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::{Reliability, Scenario, Transport};

    fn planned(system: System, test: TestKind) -> PlannedRun {
        PlannedRun {
            index: 4,
            repetition: 1,
            scenario: Scenario {
                multicast: false,
                subscribers: 1,
                system,
                test,
                reliability: Reliability::Reliable,
                keyed: false,
                batching: false,
                transport: Transport::Udpv4,
                size: 32,
                capture: Default::default(),
                language: Default::default(),
                security: None,
            },
        }
    }

    fn outcome(ending: Ending, client_out: &str, server_out: &str) -> PairOutcome {
        PairOutcome {
            more_servers: Vec::new(),
            ending,
            server: ProcOutput {
                cpu_s: None,
                status: None,
                stdout: server_out.into(),
                stderr: "sub complaint".into(),
            },
            client: ProcOutput {
                cpu_s: None,
                status: None,
                stdout: client_out.into(),
                stderr: "pub complaint".into(),
            },
            elapsed: Duration::from_secs(3),
        }
    }

    const LAT: &str = "Sample Size (Bytes), Ave (us), Std (us), Min (us), Max (us), 50% (us), 90% (us), 99% (us), 99.99% (us), 99.9999% (us)\n32, 10, 1.0, 8, 50, 9, 12, 20, 40, 50\n";

    /// Several subscribers make one throughput row: their mean rate, the fewest samples any
    /// received, the lost samples of all.
    #[test]
    fn subscribers_combine_into_one_row() {
        let t = |n: u64, r: f64, lost: u64| ThroughputStats {
            total_samples: n,
            samples_per_s: r,
            mbps: r / 1000.0,
            lost_samples: lost,
            lost_pct: lost as f64,
        };
        let c = combine_subscribers(&[t(100, 10.0, 1), t(90, 20.0, 2), t(95, 30.0, 0)]).unwrap();
        assert_eq!(c.total_samples, 90);
        assert!((c.samples_per_s - 20.0).abs() < 1e-9);
        assert!((c.mbps - 0.02).abs() < 1e-9);
        assert_eq!(c.lost_samples, 3);
        assert!((c.lost_pct - 1.0).abs() < 1e-9);
        assert_eq!(combine_subscribers(&[t(5, 1.0, 0)]), Some(t(5, 1.0, 0)));
        assert_eq!(combine_subscribers(&[]), None);
    }

    #[test]
    fn udp_out_datagrams_come_from_the_udp_lines_of_snmp() {
        let snmp = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\nUdp: 10 2 0 12345 0\n\
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\nUdpLite: 0 0 0 7 0\n";
        assert_eq!(parse_udp_out_datagrams(snmp), Some(12345));
        assert_eq!(parse_udp_out_datagrams("Udp: OutDatagrams\n"), None);
        assert_eq!(parse_udp_out_datagrams(""), None);
        // This host's counter is readable and grows with a datagram sent.
        let before = udp_out_datagrams(None).expect("/proc/net/snmp");
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        s.send_to(b"x", s.local_addr().unwrap()).unwrap();
        assert!(udp_out_datagrams(None).unwrap() > before);
    }

    #[test]
    fn a_row_is_failed_when_its_runs_security_is_not_the_rows() {
        let mut run = planned(System::Ferrodds, TestKind::Latency);
        run.scenario.security = Some(SecurityProfile::RtpsSign);
        let c = CommandSpec::new("perftest").args(["-pub"]);
        let summary = |gov: &str| {
            format!("Perftest Configuration:\n\tDomain: 1\n\nSecure Configuration:\n\tGovernance file: {gov}\n\tEncryption algorithm: aes-128-gcm\n")
        };
        let with_at = |run: &PlannedRun, pub_err: String, sub_err: String| {
            let mut o = outcome(Ending::Finished, LAT, "");
            o.client.stderr = pub_err;
            o.server.stderr = sub_err;
            make_record(run, &o, &c, &[], &c, "loopback", 2)
        };
        let sign = summary("/x/resource/secure/signed_PerftestGovernance_RTPSSign.xml");
        let r = with_at(&run, sign.clone(), sign.clone());
        assert_eq!(r.status, RunStatus::Ok, "{}", r.error);
        // Another governance, or none, on either side.
        let encrypt = summary("/x/resource/secure/signed_PerftestGovernance_RTPSEncrypt.xml");
        let r = with_at(&run, sign.clone(), encrypt);
        assert_eq!(r.status, RunStatus::Failed);
        assert!(r.error.contains("the subscriber's start-up summary does not name the governance signed_PerftestGovernance_RTPSSign.xml of profile rtps_sign"), "{}", r.error);
        let r = with_at(&run, "Perftest Configuration:\n".into(), sign.clone());
        assert!(r.error.contains("the publisher's"), "{}", r.error);
        // A subscriber whose output is not here (started by hand) is not judged.
        let r = with_at(&run, sign.clone(), String::new());
        assert_eq!(r.status, RunStatus::Ok, "{}", r.error);
        // A row without security never had a Secure Configuration block.
        for plain in [None, Some(SecurityProfile::NoSecurityLibraries)] {
            run.scenario.security = plain;
            let r = with_at(&run, sign.clone(), String::new());
            assert_eq!(r.status, RunStatus::Failed, "{plain:?}");
            assert!(
                r.error.contains("but the row has no security"),
                "{}",
                r.error
            );
            let r = with_at(&run, "Perftest Configuration:\n".into(), String::new());
            assert_eq!(r.status, RunStatus::Ok, "{plain:?}");
        }
        // A failed run keeps its own error.
        run.scenario.security = Some(SecurityProfile::RtpsSign);
        let r = make_record(
            &run,
            &outcome(Ending::TimedOut, LAT, ""),
            &c,
            &[],
            &c,
            "x",
            2,
        );
        assert_eq!(r.status, RunStatus::TimedOut);
        assert!(r.error.starts_with("timed out"), "{}", r.error);
        // The notes say which governance each profile ran with.
        let mut spec = MatrixSpec::quick();
        assert!(security_notes(&spec).is_empty());
        spec.security = vec![
            SecurityProfile::NoSecurityLibraries,
            SecurityProfile::RtpsSign,
        ];
        let notes = security_notes(&spec);
        assert!(notes[0].starts_with("security no_security_libraries: no -secure option"));
        assert!(
            notes[1].contains(
                "-secureGovernanceFile resource/secure/signed_PerftestGovernance_RTPSSign.xml"
            ),
            "{}",
            notes[1]
        );
        assert!(notes[1].contains("Cyclone"), "{}", notes[1]);
    }

    #[test]
    fn records_from_outcomes() {
        let run = planned(System::Ferrodds, TestKind::Latency);
        let c = CommandSpec::new("perftest").args(["-pub"]);
        let r = make_record(
            &run,
            &outcome(Ending::Finished, LAT, ""),
            &c,
            &[],
            &c,
            "loopback",
            2,
        );
        assert_eq!(r.status, RunStatus::Ok);
        assert_eq!(r.latency.unwrap().p50_us, 9.0);
        assert!(r.stderr_tail.is_empty());
        let r = make_record(
            &run,
            &outcome(Ending::Finished, "", ""),
            &c,
            &[],
            &c,
            "loopback",
            2,
        );
        assert_eq!(r.status, RunStatus::Failed);
        assert!(r.error.contains("no latency summary"), "{}", r.error);
        assert!(r.stderr_tail.contains("pub: pub complaint"));
        assert!(r.stderr_tail.contains("sub: sub complaint"));
        let r = make_record(
            &run,
            &outcome(Ending::TimedOut, LAT, ""),
            &c,
            &[],
            &c,
            "loopback",
            2,
        );
        assert_eq!(r.status, RunStatus::TimedOut);
        let r = make_record(
            &run,
            &outcome(Ending::Interrupted, LAT, ""),
            &c,
            &[],
            &c,
            "x",
            2,
        );
        assert_eq!(r.status, RunStatus::Interrupted);
    }

    const THR_HEADER: &str = "Sample Size (Bytes), Total Samples, Avg Samples/s,    Avg Mbps, Lost Samples, Lost Samples (%)\n";

    #[test]
    fn throughput_records_of_slow_and_empty_runs() {
        let run = planned(System::Ferrodds, TestKind::Throughput);
        let c = CommandSpec::new("perftest").args(["-sub"]);
        // A timed-out run keeps what the subscriber printed on SIGINT and quotes it.
        let slow = format!("{THR_HEADER}              63000,            80,             1,         0.6,            0,             0.00\n");
        let r = make_record(
            &run,
            &outcome(Ending::TimedOut, "", &slow),
            &c,
            &[],
            &c,
            "netns",
            6,
        );
        assert_eq!(r.status, RunStatus::TimedOut);
        assert_eq!(r.throughput.unwrap().total_samples, 80);
        assert!(
            r.error
                .contains("timed out after 3 s; interrupted then, the subscriber had received 80 samples: 0.6 Mbps, 0 lost"),
            "{}",
            r.error
        );
        assert!(r.stderr_tail.contains("sub: sub complaint"));
        // No samples: never ok, and the subscriber's output is kept.
        let empty = format!("{THR_HEADER}              63000,             0,              ,         0.0,            0,             0.00\n");
        let r = make_record(
            &run,
            &outcome(Ending::Finished, "", &empty),
            &c,
            &[],
            &c,
            "netns",
            6,
        );
        assert_eq!(r.status, RunStatus::Failed);
        assert!(
            r.error.contains("the subscriber received no samples"),
            "{}",
            r.error
        );
        assert!(r.stderr_tail.contains("sub: sub complaint"));
        let r = make_record(
            &run,
            &outcome(Ending::TimedOut, "", &empty),
            &c,
            &[],
            &c,
            "netns",
            6,
        );
        assert!(
            r.error.ends_with("the subscriber had received no samples"),
            "{}",
            r.error
        );
        let r = make_record(
            &run,
            &outcome(Ending::TimedOut, "", ""),
            &c,
            &[],
            &c,
            "netns",
            6,
        );
        assert_eq!(r.error, "timed out after 3 s");
    }

    #[test]
    fn estimates_and_topology_names() {
        let run = planned(System::Ferrodds, TestKind::Latency);
        assert!(estimate(&run, 2) >= Duration::from_secs(2));
        assert!(default_timeout(&run, 2, None) > estimate(&run, 2));
        // On a rate-limited link a reliable throughput run also gets the time to drain the
        // send queue twice: 50 x 1 MiB at 10 Mbit/s is 42 s.
        let mut big = planned(System::Ferrodds, TestKind::Throughput);
        big.scenario.size = 1 << 20;
        let plain = default_timeout(&big, 8, None);
        assert_eq!(
            default_timeout(&big, 8, Some(10.0)),
            plain + Duration::from_secs(84)
        );
        assert_eq!(default_timeout(&big, 8, Some(0.0)), plain);
        // Best effort: only the initial burst, 50 x 1,234 B.
        big.scenario.reliability = Reliability::BestEffort;
        assert_eq!(
            default_timeout(&big, 8, Some(10.0)),
            plain + Duration::from_secs(1)
        );
        // Batched 32 B: 12,800 initial samples (13.8 s) and 50 batches twice (0.7 s).
        let mut batched = planned(System::Ferrodds, TestKind::Throughput);
        batched.scenario.size = 32;
        batched.scenario.batching = true;
        assert_eq!(
            default_timeout(&batched, 8, Some(10.0)),
            default_timeout(&batched, 8, None) + Duration::from_secs(15)
        );
        assert_eq!(TopologyOptions::Loopback.describe(), "loopback");
        let n = TopologyOptions::Netns(Impairments {
            loss_pct: Some(2.0),
            ..Default::default()
        });
        assert_eq!(n.describe(), "netns loss=2%");
    }
}
