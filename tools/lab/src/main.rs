//! `lab`: run the perftest matrix on a link and write CSV, JSON and an HTML report.
#![forbid(unsafe_code)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use ferrodds_lab::compare::{self, Thresholds};
use ferrodds_lab::lab::{self, ConsoleProgress, LabOptions, TopologyOptions};
use ferrodds_lab::matrix::{self, MatrixSpec, System};
use ferrodds_lab::record::{self, RunStatus};
use ferrodds_lab::runner;
use ferrodds_lab::testbed::Impairments;
use ferrodds_lab::{report, LabError};

#[derive(Parser, Debug)]
#[command(
    name = "lab",
    version,
    about = "Characterise a link: run perftest (plus raw-UDP and Cyclone ddsperf baselines) through a test matrix and write CSV, JSON and an HTML report"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run the matrix (full by default, --quick for a first look). Exit status: 0 when every
    /// run succeeded, 1 when any run failed or timed out (results and report are still
    /// written), 2 for a bad command line, 130 when interrupted.
    Run(Box<RunArgs>),
    /// Regenerate report.html of a results directory from its recorded CSV/JSON.
    Report {
        /// Results directory.
        dir: PathBuf,
        /// Leave out the published Connext reference lines.
        #[arg(long)]
        no_reference: bool,
    },
    /// Compare two results directories and flag regressions.
    Compare {
        /// Baseline results directory.
        old: PathBuf,
        /// New results directory.
        new: PathBuf,
        /// Flag a latency (p50) increase beyond this many percent.
        #[arg(long, default_value_t = 10.0)]
        latency_threshold: f64,
        /// Flag a throughput (samples/s) decrease beyond this many percent.
        #[arg(long, default_value_t = 10.0)]
        throughput_threshold: f64,
        /// Where to write compare.csv and compare.html (default: the NEW directory).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Exit with status 1 when a regression is flagged.
        #[arg(long)]
        fail_on_regression: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Topo {
    Loopback,
    Netns,
    Remote,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// Small representative subset with short runs (about two minutes).
    #[arg(long)]
    quick: bool,
    /// Sample sizes in bytes, comma-separated (k/M suffixes allowed).
    #[arg(long)]
    sizes: Option<String>,
    /// Tests: latency,throughput.
    #[arg(long)]
    tests: Option<String>,
    /// Reliability: reliable,best-effort.
    #[arg(long)]
    reliability: Option<String>,
    /// Keyed type (100,000 instances): on, off or both.
    #[arg(long)]
    keyed: Option<String>,
    /// Batching (8192 B): on, off or both.
    #[arg(long)]
    batching: Option<String>,
    /// Transports: udpv4,tcp,tls,udpv4-wan,shmem,shmem-zc (comma-separated).
    /// shmem-zc: shared memory with writer loans and reads in place (perftest -transport SHMEM
    /// -zeroCopy on both sides), FerroDDS only, unkeyed, unbatched, no security; the shmem raw
    /// rows are its baseline.
    #[arg(long)]
    transport: Option<String>,
    /// Network capture of the FerroDDS runs (perftest -networkCapture on both sides):
    /// off, on, no-user-data (comma-separated; each setting is a row of its own, run
    /// interleaved with the others, and the report shows the capture's cost).
    #[arg(long)]
    capture: Option<String>,
    /// Keep the capture files in OUT/captures (-doNotDropNetworkCapture: every message
    /// recorded, the flow waiting for the disk if it must); perftest deletes them otherwise.
    #[arg(long)]
    keep_captures: bool,
    /// Systems: ferrodds,raw,cyclone.
    #[arg(long)]
    systems: Option<String>,
    /// Builds of the FerroDDS perftest: rust,cs,micro (comma-separated; cs is the C# perftest
    /// over the C API, UDPv4 and SHMEM without capture, its rows beside the published C#
    /// figures; micro is the small-footprint perftest_micro, UDPv4 without batching or capture).
    #[arg(long)]
    language: Option<String>,
    /// DDS Security profiles, comma-separated, as the published Connext security figures name
    /// them: no_security_libraries (no -secure option), no_protection, rtps_sign, rtps_encrypt,
    /// rtps_sign_origauth_data_encrypt, rtps_sign_submsg_encrypt_origauth_data_encrypt,
    /// rtps_sign_submsg_encrypt. Each FerroDDS row of a profile
    /// runs perftest with -secureGovernanceFile resource/secure/signed_PerftestGovernance_*.xml;
    /// Cyclone's rows get the same files. Secure rows run over UDPv4 only; raw, C# and micro
    /// rows run as no_security_libraries. Default: no security axis.
    #[arg(long)]
    security: Option<String>,
    /// Fan-out: subscriber counts, comma-separated (1 to 16; default 1). Each count is a row of
    /// its own: perftest's publisher with -numSubscribers N and N subscriber processes
    /// (-sidMultiSubTest 0 … N-1), Cyclone's ddsperf with N `sub` (or `pong`) processes; all
    /// on the same CPUs. Throughput rows give the subscribers' mean (each receives every
    /// sample). UDPv4 only; C# and micro rows run with one subscriber.
    #[arg(long)]
    subscribers: Option<String>,
    /// User data by multicast: off, on or both (each a row of its own). perftest
    /// -multicast for FerroDDS and raw UDP, Cyclone with multicast allowed. UDPv4 with the
    /// Rust perftest and Cyclone; needs --topology netns or remote (the loopback interface has
    /// no multicast). Default: off.
    #[arg(long)]
    multicast: Option<String>,
    /// perftest_micro (default: target/micro/perftest_micro from the current directory, then
    /// from the repository the lab was built in; build it with `cargo build --profile micro
    /// --manifest-path tools/perftest-micro/Cargo.toml`).
    #[arg(long, env = "FERRODDS_PERFTEST_MICRO")]
    perftest_micro: Option<PathBuf>,
    /// The C# perftest's executable wrapper (default: bindings/csharp/perftest/perftest_cs
    /// from the current directory, then from the repository the lab was built in).
    #[arg(long, env = "FERRODDS_PERFTEST_CS")]
    perftest_cs: Option<PathBuf>,
    /// perftest -executionTime of each run, in seconds.
    #[arg(long)]
    execution_time: Option<u32>,
    /// Repetitions of each scenario.
    #[arg(long)]
    repetitions: Option<u32>,
    /// Results directory.
    #[arg(long, default_value = "lab-results")]
    out: PathBuf,
    /// CPU list both processes are pinned to with `taskset -c` (a cross-CPU wake-up costs
    /// ~30 µs on small VMs).
    #[arg(long, default_value = "0")]
    cpu: String,
    /// Do not pin the processes.
    #[arg(long)]
    no_pin: bool,
    /// Topology.
    #[arg(long, value_enum, default_value = "loopback")]
    topology: Topo,
    /// netns: packet loss in percent per direction (nftables).
    #[arg(long)]
    loss: Option<f64>,
    /// netns: one-way delay in ms (needs tc netem).
    #[arg(long)]
    delay: Option<f64>,
    /// netns: delay jitter in ms (needs tc netem).
    #[arg(long)]
    jitter: Option<f64>,
    /// netns: rate limit in Mbit/s per direction (tc tbf).
    #[arg(long)]
    rate: Option<f64>,
    /// remote: address of the other host.
    #[arg(long)]
    peer_host: Option<String>,
    /// remote: this host's address on the link.
    #[arg(long)]
    local_addr: Option<String>,
    /// remote: command prefix that runs a shell command line on the other host, e.g. "ssh host".
    #[arg(long)]
    run_remote_cmd: Option<String>,
    /// remote: perftest's name or path on the other host.
    #[arg(long, default_value = "perftest")]
    remote_perftest: String,
    /// perftest binary (default: next to `lab`, then PATH).
    #[arg(long, env = "FERRODDS_PERFTEST")]
    perftest: Option<PathBuf>,
    /// ddsperf binary (default: PATH; Cyclone is skipped when missing).
    #[arg(long)]
    ddsperf: Option<PathBuf>,
    /// Timeout of one run in seconds (default: execution time + a start-up margin, + with --rate
    /// twice the time the link takes to carry perftest's send queue of a reliable throughput run).
    #[arg(long)]
    run_timeout: Option<u64>,
    /// First DDS domain id (run i uses this + i % 40, which must be at most 232).
    #[arg(long, default_value_t = 180)]
    domain_base: u32,
    /// Leave out the published Connext reference lines in the report.
    #[arg(long)]
    no_reference: bool,
    /// Print the schedule and command lines without running anything.
    #[arg(long)]
    dry_run: bool,
}

fn spec_from(a: &RunArgs) -> Result<MatrixSpec, LabError> {
    let mut spec = if a.quick {
        MatrixSpec::quick()
    } else {
        MatrixSpec::full()
    };
    if let Some(s) = &a.sizes {
        spec.sizes = Some(matrix::parse_sizes(s)?);
    }
    if let Some(s) = &a.tests {
        spec.tests = matrix::parse_list(s)?;
    }
    if let Some(s) = &a.reliability {
        spec.reliabilities = matrix::parse_list(s)?;
    }
    if let Some(s) = &a.keyed {
        spec.keyed = matrix::parse_on_off("keyed", s)?;
    }
    if let Some(s) = &a.batching {
        spec.batching = matrix::parse_on_off("batching", s)?;
    }
    if let Some(s) = &a.transport {
        spec.transports = matrix::parse_list(s)?;
    }
    if let Some(s) = &a.capture {
        spec.captures = matrix::parse_list(s)?;
    }
    if a.keep_captures && spec.captures.iter().all(|c| *c == matrix::Capture::Off) {
        return Err(LabError::Usage(
            "--keep-captures keeps the files of capture runs: add --capture on (or no-user-data)",
        ));
    }
    if let Some(s) = &a.systems {
        spec.systems = matrix::parse_list(s)?;
    }
    if let Some(s) = &a.language {
        spec.languages = matrix::parse_list(s)?;
        if spec.languages.is_empty() {
            return Err(LabError::Usage("--language needs rust, cs or micro"));
        }
    }
    if spec.languages.contains(&matrix::Language::Cs) {
        if !spec.systems.contains(&System::Ferrodds) {
            return Err(LabError::Usage(
                "--language cs selects FerroDDS's C# perftest: add ferrodds to --systems",
            ));
        }
        if !spec
            .transports
            .iter()
            .any(|t| matches!(t, matrix::Transport::Udpv4 | matrix::Transport::Shmem))
        {
            return Err(LabError::Usage(
                "--language cs: the C# perftest runs over udpv4 and shmem only",
            ));
        }
        if !spec.captures.contains(&matrix::Capture::Off) {
            return Err(LabError::Usage(
                "--language cs: the C# perftest has no network capture: add off to --capture",
            ));
        }
    }
    if spec.languages.contains(&matrix::Language::Micro) {
        if !spec.systems.contains(&System::Ferrodds) {
            return Err(LabError::Usage(
                "--language micro selects FerroDDS's perftest_micro: add ferrodds to --systems",
            ));
        }
        if !spec.transports.contains(&matrix::Transport::Udpv4) {
            return Err(LabError::Usage(
                "--language micro: perftest_micro runs over udpv4 only",
            ));
        }
        if !spec.captures.contains(&matrix::Capture::Off) {
            return Err(LabError::Usage(
                "--language micro: perftest_micro has no network capture: add off to --capture",
            ));
        }
    }
    if let Some(s) = &a.security {
        spec.security = matrix::parse_list(s)?;
        if spec.security.is_empty() {
            return Err(LabError::Usage(
                "--security needs at least one profile (e.g. no_security_libraries,rtps_sign)",
            ));
        }
        let mut seen = Vec::new();
        spec.security.retain(|p| {
            let first = !seen.contains(p);
            seen.push(*p);
            first
        });
    }
    spec.check_security()?;
    if let Some(n) = &a.subscribers {
        spec.subscribers = matrix::parse_subscribers(n)?;
    }
    if let Some(m) = &a.multicast {
        spec.multicast = matrix::parse_on_off("multicast", m)?;
    }
    if let Some(t) = a.execution_time {
        if t == 0 {
            return Err(LabError::Usage("--execution-time must be at least 1 s"));
        }
        spec.execution_time_s = t;
    }
    if let Some(r) = a.repetitions {
        if r == 0 {
            return Err(LabError::Usage("--repetitions must be at least 1"));
        }
        spec.repetitions = r;
    }
    Ok(spec)
}

fn find_perftest(explicit: &Option<PathBuf>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.clone());
    }
    let sibling = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("perftest")))
        .filter(|p| p.is_file());
    sibling.or_else(|| runner::find_program("perftest"))
}

/// A perftest build other than the default one: `explicit`, else `rel` under the current
/// directory, else under the repository this lab was built from.
fn find_in_repo(explicit: &Option<PathBuf>, rel: &str) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.clone());
    }
    let rel = Path::new(rel);
    let built_in = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel);
    [rel.to_path_buf(), built_in]
        .into_iter()
        .find(|p| p.is_file())
}

/// The program of `language` when the matrix has it: found by [`find_in_repo`] and checked
/// to exist (not in a dry run); `option` names the flag in the errors, `missing` says how to
/// get the program.
fn language_program(
    a: &RunArgs,
    languages: &[matrix::Language],
    language: matrix::Language,
    explicit: &Option<PathBuf>,
    rel: &str,
    option: &'static str,
    missing: &'static str,
) -> Result<Option<PathBuf>, LabError> {
    if !languages.contains(&language) {
        return Ok(None);
    }
    match find_in_repo(explicit, rel) {
        Some(p) if a.dry_run || runner::find_program(&p.to_string_lossy()).is_some() => Ok(Some(p)),
        Some(p) => Err(LabError::BadValue {
            what: option,
            value: p.display().to_string(),
        }),
        None => Err(LabError::Usage(missing)),
    }
}

fn options_from(a: &RunArgs) -> Result<LabOptions, LabError> {
    let spec = spec_from(a)?;
    lab::check_domain_base(a.domain_base, spec.schedule().len())?;
    let needs_perftest = spec
        .systems
        .iter()
        .any(|s| matches!(s, System::Ferrodds | System::Raw));
    // An explicitly named program that does not exist would make every run fail: say so
    // before setting anything up (a dry run only prints the command lines).
    let exists = |p: &PathBuf| runner::find_program(&p.to_string_lossy()).is_some();
    if let Some(p) = &a.perftest {
        if needs_perftest && !a.dry_run && !exists(p) {
            return Err(LabError::BadValue {
                what: "--perftest (no such program)",
                value: p.display().to_string(),
            });
        }
    }
    if let Some(p) = &a.ddsperf {
        if spec.systems.contains(&System::Cyclone) && !a.dry_run && !exists(p) {
            return Err(LabError::BadValue {
                what: "--ddsperf (no such program)",
                value: p.display().to_string(),
            });
        }
    }
    let perftest = match find_perftest(&a.perftest) {
        Some(p) => p,
        None if needs_perftest => {
            return Err(LabError::Usage(
                "perftest binary not found: build it (cargo build --release -p ferrodds-perftest) or pass --perftest PATH",
            ))
        }
        None => PathBuf::from("perftest"),
    };
    let ddsperf = match &a.ddsperf {
        Some(p) => Some(p.clone()),
        None => runner::find_program("ddsperf"),
    };
    let perftest_cs = language_program(
        a,
        &spec.languages,
        matrix::Language::Cs,
        &a.perftest_cs,
        "bindings/csharp/perftest/perftest_cs",
        "--perftest-cs (no such program)",
        "the C# perftest (bindings/csharp/perftest/perftest_cs) was not found: run the lab from the repository or pass --perftest-cs PATH",
    )?;
    let perftest_micro = language_program(
        a,
        &spec.languages,
        matrix::Language::Micro,
        &a.perftest_micro,
        "target/micro/perftest_micro",
        "--perftest-micro (no such program)",
        "perftest_micro (target/micro/perftest_micro) was not found: build it with `cargo build --profile micro --manifest-path tools/perftest-micro/Cargo.toml` or pass --perftest-micro PATH",
    )?;
    // Cyclone's secure rows are given perftest's certificates and governance files by path.
    let cyclone_secure =
        spec.systems.contains(&System::Cyclone) && spec.security.iter().any(|p| p.is_secure());
    let secure_dir = if cyclone_secure {
        if a.topology == Topo::Remote {
            return Err(LabError::Usage(
                "--security with cyclone: Cyclone's secure rows name the security files by this host's paths, which the other host may not have: not with --topology remote (leave cyclone out of --systems)",
            ));
        }
        match runner::find_secure_dir(&perftest) {
            Some(d) => Some(d),
            None => return Err(LabError::Usage(
                "--security with cyclone: perftest's resource/secure folder (the CA, identities, permissions and governance files Cyclone's secure rows use) was not found beside perftest or in the repository the lab was built from",
            )),
        }
    } else {
        None
    };
    let imp = Impairments {
        loss_pct: a.loss,
        delay_ms: a.delay,
        jitter_ms: a.jitter,
        rate_mbit: a.rate,
    };
    imp.validate()?;
    if a.topology == Topo::Loopback && spec.multicast.contains(&true) {
        return Err(LabError::Usage(
            "--multicast on/both: the loopback interface has no multicast: use --topology netns (or remote)",
        ));
    }
    if a.topology != Topo::Loopback && spec.transports.contains(&matrix::Transport::Shmem) {
        return Err(LabError::Usage(
            "--transport shmem runs both processes on one host: it needs --topology loopback",
        ));
    }
    if a.topology != Topo::Loopback && spec.transports.contains(&matrix::Transport::ShmemZc) {
        return Err(LabError::Usage(
            "--transport shmem-zc runs both processes on one host: it needs --topology loopback",
        ));
    }
    if a.topology == Topo::Remote && spec.languages.contains(&matrix::Language::Cs) {
        return Err(LabError::Usage(
            "--language cs runs on this host's topologies (loopback, netns), not remote",
        ));
    }
    if a.topology == Topo::Remote && spec.languages.contains(&matrix::Language::Micro) {
        return Err(LabError::Usage(
            "--language micro runs on this host's topologies (loopback, netns), not remote",
        ));
    }
    if a.topology != Topo::Netns && imp.any() {
        return Err(LabError::Usage(
            "--loss/--delay/--jitter/--rate need --topology netns",
        ));
    }
    let topology = match a.topology {
        Topo::Loopback => TopologyOptions::Loopback,
        Topo::Netns => TopologyOptions::Netns(imp),
        Topo::Remote => TopologyOptions::Remote {
            peer_host: a
                .peer_host
                .clone()
                .ok_or(LabError::Usage("--topology remote needs --peer-host ADDR"))?,
            local_addr: a.local_addr.clone(),
            run_remote_cmd: a
                .run_remote_cmd
                .as_ref()
                .map(|c| c.split_whitespace().map(String::from).collect()),
            remote_perftest: a.remote_perftest.clone(),
        },
    };
    if !a.no_pin {
        runner::validate_cpu_list(&a.cpu, a.topology != Topo::Remote && !a.dry_run)?;
    }
    let cpu = if a.no_pin {
        None
    } else if runner::find_program("taskset").is_some() {
        Some(a.cpu.clone())
    } else {
        eprintln!("lab: taskset not found (util-linux): processes are not pinned");
        None
    };
    Ok(LabOptions {
        spec,
        quick: a.quick,
        out: a.out.clone(),
        cpu,
        topology,
        perftest,
        perftest_cs,
        perftest_micro,
        ddsperf,
        run_timeout: a.run_timeout.map(Duration::from_secs),
        domain_base: a.domain_base,
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        reference: !a.no_reference,
        keep_captures: a.keep_captures,
        secure_dir,
    })
}

fn cmd_run(a: &RunArgs) -> Result<ExitCode, LabError> {
    let opts = options_from(a)?;
    if a.dry_run {
        let placement = runner::Placement {
            perftest: opts.perftest.clone(),
            perftest_cs: opts.perftest_cs.clone(),
            perftest_micro: opts.perftest_micro.clone(),
            ddsperf: opts
                .ddsperf
                .clone()
                .unwrap_or_else(|| PathBuf::from("ddsperf")),
            cpu: opts.cpu.clone(),
            pub_addr: Some("127.0.0.1".into()),
            sub_addr: Some("127.0.0.1".into()),
            cyclone_pub_uri: "file://<out>/cyclone-loopback.xml".into(),
            cyclone_sub_uri: "file://<out>/cyclone-loopback.xml".into(),
            secure_dir: opts.secure_dir.clone(),
            ..Default::default()
        };
        let sched = opts.spec.schedule();
        let mut stdout = std::io::stdout().lock();
        for r in &sched {
            let c = runner::build_commands(
                &r.scenario,
                &placement,
                lab::run_domain(opts.domain_base, r.index),
                opts.spec.execution_time_s,
            );
            // A closed pipe (`| head`) ends the listing quietly.
            if writeln!(
                stdout,
                "{:4} {} {} {} B rep {}\n     sub: {}\n     pub: {}",
                r.index,
                r.scenario.config_label(),
                r.scenario.test,
                r.scenario.size,
                r.repetition + 1,
                c.server.shell_line(),
                c.client.shell_line()
            )
            .is_err()
            {
                return Ok(ExitCode::SUCCESS);
            }
        }
        let est: Duration = sched
            .iter()
            .map(|r| lab::estimate(r, opts.spec.execution_time_s))
            .sum();
        let _ = writeln!(
            stdout,
            "{} runs, estimated {} min",
            sched.len(),
            est.as_secs().div_ceil(60)
        );
        return Ok(ExitCode::SUCCESS);
    }
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        let first = AtomicBool::new(true);
        // SIGINT, SIGTERM and SIGHUP (ctrlc's `termination` feature) all land here. The
        // children run in their own process groups, so a signal to the lab does not reach
        // them: the first one lets the current run stop them and write partial results; a
        // second one (e.g. `timeout`, which signals the lab and then its group) kills them and
        // removes the namespaces before exiting, since `Drop` does not run after `exit`.
        let _ = ctrlc::set_handler(move || {
            if first.swap(false, Ordering::SeqCst) {
                eprintln!("\nlab: interrupted: stopping the current run and writing partial results (Ctrl-C or SIGTERM again to force)");
                stop.store(true, Ordering::SeqCst);
            } else {
                runner::kill_live_children();
                ferrodds_lab::testbed::remove_live_namespaces();
                std::process::exit(130);
            }
        });
    }
    let mut progress = ConsoleProgress::new();
    let summary = lab::run_lab(&opts, &stop, &mut progress)?;
    println!(
        "lab: {} ok, {} failed, {} not started; results in {} (report.html)",
        summary.runs_ok,
        summary.runs_failed,
        summary.runs_not_started,
        opts.out.display()
    );
    for r in summary.runs.iter().filter(|r| r.status != RunStatus::Ok) {
        println!(
            "lab: failed: #{} {} {} {} B: {}",
            r.run_index,
            r.scenario.config_label(),
            r.scenario.test,
            r.scenario.size,
            r.error
        );
    }
    Ok(if summary.interrupted {
        ExitCode::from(130)
    } else if summary.runs_failed > 0 {
        // Results and report are written, but a script must see that runs failed.
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn run(cli: Cli) -> Result<ExitCode, LabError> {
    match cli.command {
        Cmd::Run(a) => cmd_run(&a),
        Cmd::Report { dir, no_reference } => {
            let summary = record::read_results(&dir)?;
            report::write_report(&dir, &summary, !no_reference)?;
            println!(
                "lab: wrote {}",
                dir.join(record::files::REPORT_HTML).display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Compare {
            old,
            new,
            latency_threshold,
            throughput_threshold,
            out,
            fail_on_regression,
        } => {
            let th = Thresholds {
                latency_pct: latency_threshold,
                throughput_pct: throughput_threshold,
            };
            th.validate()?;
            let old_s = record::read_results(&old)?;
            let new_s = record::read_results(&new)?;
            let c = compare::compare(&old_s, &new_s, th);
            let out = out.unwrap_or_else(|| new.clone());
            compare::write_outputs(&out, &c, &old, &new)?;
            print!("{}", compare::console_table(&c));
            let n = c.regressions();
            println!(
                "lab: {n} regression(s); wrote {} and {}",
                out.join(compare::COMPARE_CSV).display(),
                out.join(compare::COMPARE_HTML).display()
            );
            Ok(if fail_on_regression && n > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("lab: error: {e}");
            ExitCode::from(2)
        }
    }
}
