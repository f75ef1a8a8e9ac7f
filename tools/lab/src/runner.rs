//! Building the command lines of a run and running a subscriber/publisher pair with a timeout.
//!
//! The "server" (perftest `-sub`, ddsperf `pong`/`sub`) starts first; the "client" (perftest
//! `-pub`, ddsperf `ping`/`pub`) follows after a short delay. Each child gets its own process
//! group, so a terminal's Ctrl-C reaches only the lab, which then kills the groups itself.
//! A pair that outlives its timeout is first sent SIGINT (perftest then prints what it has
//! measured so far) and killed [`TIMEOUT_INTERRUPT_GRACE`] later if still running.
//! Output is read by one thread per pipe into a bounded buffer (the tail is kept).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::LabError;
use crate::matrix::{
    Capture, Language, Reliability, Scenario, SecurityProfile, System, TestKind, Transport,
    BATCH_BYTES,
};
use crate::matrix::{KEYED_INSTANCES, LARGE_THRESHOLD};

/// Most bytes of one pipe's output kept (the tail).
pub const OUTPUT_CAP: usize = 4 << 20;

/// How long the processes of a timed-out pair get, after SIGINT, to print what they measured
/// and exit before they are killed.
pub const TIMEOUT_INTERRUPT_GRACE: Duration = Duration::from_secs(3);

/// Parses a `taskset -c` CPU list (`0`, `1-3`, `0,2,4-5`) into the CPU numbers.
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, LabError> {
    let bad = || LabError::BadValue {
        what: "--cpu (expected a CPU list like 0, 1-3 or 0,2,4-5)",
        value: s.to_string(),
    };
    let num = |t: &str| -> Result<usize, LabError> {
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        t.parse::<usize>()
            .ok()
            .filter(|n| *n < 1 << 16)
            .ok_or_else(bad)
    };
    let mut cpus = Vec::new();
    for item in s.split(',') {
        match item.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(bad());
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(num(item)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// The CPUs this process may run on (`Cpus_allowed_list` of `/proc/self/status`), or `None`
/// when that cannot be read.
pub fn allowed_cpus() -> Option<Vec<usize>> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    parse_cpu_list(list.trim()).ok()
}

/// Checks `--cpu` before anything runs: the list must parse and, when the processes run on
/// this machine, name only CPUs this process may use (`taskset` would fail every run).
pub fn validate_cpu_list(s: &str, local: bool) -> Result<(), LabError> {
    let cpus = parse_cpu_list(s)?;
    if local {
        if let Some(allowed) = allowed_cpus() {
            if let Some(c) = cpus.iter().find(|c| !allowed.contains(c)) {
                return Err(LabError::CpuNotAvailable {
                    cpu: *c,
                    list: s.to_string(),
                    allowed: allowed
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(","),
                });
            }
        }
    }
    Ok(())
}

/// A program with arguments and extra environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandSpec {
    /// Program name or path.
    pub program: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Working directory (local processes; `None` = the lab's).
    pub cwd: Option<PathBuf>,
}

/// Quotes a word for a POSIX shell when needed.
pub fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,+@%".contains(&b));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

impl CommandSpec {
    /// A command without arguments.
    pub fn new(program: impl Into<String>) -> Self {
        CommandSpec {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
        }
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Runs this command through `prefix` (e.g. `taskset -c 0`, `ip netns exec NS`), which
    /// receives the program and its arguments as separate arguments.
    pub fn wrapped(self, prefix: &[String]) -> Self {
        let Some((first, rest)) = prefix.split_first() else {
            return self;
        };
        let mut args: Vec<String> = rest.to_vec();
        args.push(self.program);
        args.extend(self.args);
        CommandSpec {
            program: first.clone(),
            args,
            env: self.env,
            cwd: self.cwd,
        }
    }

    /// Runs this command through a remote-shell prefix (e.g. `ssh host`), which receives the
    /// whole command, environment included, as one shell command line.
    pub fn through_shell_prefix(self, prefix: &[String]) -> Self {
        let Some((first, rest)) = prefix.split_first() else {
            return self;
        };
        let mut args: Vec<String> = rest.to_vec();
        args.push(self.shell_line());
        CommandSpec {
            program: first.clone(),
            args,
            env: Vec::new(),
            cwd: None,
        }
    }

    /// The command as one shell line (`env K=V prog args…` when there is environment).
    pub fn shell_line(&self) -> String {
        let mut words: Vec<String> = Vec::new();
        if !self.env.is_empty() {
            words.push("env".into());
            for (k, v) in &self.env {
                words.push(shell_quote(&format!("{k}={v}")));
            }
        }
        words.push(shell_quote(&self.program));
        words.extend(self.args.iter().map(|a| shell_quote(a)));
        words.join(" ")
    }

    fn to_command(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.args);
        for (k, v) in &self.env {
            c.env(k, v);
        }
        if let Some(d) = &self.cwd {
            c.current_dir(d);
        }
        c
    }
}

/// Where and how the two processes of a run are started.
#[derive(Clone, Debug, Default)]
pub struct Placement {
    /// The perftest binary (local path, or remote name for the remote side).
    pub perftest: PathBuf,
    /// The C# perftest's wrapper (FerroDDS runs in C#; local topologies).
    pub perftest_cs: Option<PathBuf>,
    /// perftest_micro (FerroDDS runs of the micro build; local topologies).
    pub perftest_micro: Option<PathBuf>,
    /// perftest binary name on the remote host (remote topology).
    pub remote_perftest: Option<String>,
    /// The ddsperf binary.
    pub ddsperf: PathBuf,
    /// `taskset -c` CPU list, `None` = no pinning.
    pub cpu: Option<String>,
    /// Address the publisher side uses (`-nic`), `None` = perftest's default.
    pub pub_addr: Option<String>,
    /// Address the subscriber side uses.
    pub sub_addr: Option<String>,
    /// `CYCLONEDDS_URI` of the publisher side.
    pub cyclone_pub_uri: String,
    /// `CYCLONEDDS_URI` of the subscriber side.
    pub cyclone_sub_uri: String,
    /// `CYCLONEDDS_URI` of the publisher side over TCP.
    pub cyclone_tcp_pub_uri: String,
    /// `CYCLONEDDS_URI` of the subscriber side over TCP.
    pub cyclone_tcp_sub_uri: String,
    /// `CYCLONEDDS_URI` of the publisher side with multicast allowed (multicast rows; empty
    /// on loopback, which has no multicast).
    pub cyclone_mc_pub_uri: String,
    /// `CYCLONEDDS_URI` of the subscriber side with multicast allowed.
    pub cyclone_mc_sub_uri: String,
    /// TCP server port of the publisher side (FerroDDS and Cyclone over TCP).
    pub tcp_pub_port: u16,
    /// TCP server port of the subscriber side.
    pub tcp_sub_port: u16,
    /// Prefix for the publisher side (e.g. `ip netns exec A`).
    pub pub_prefix: Vec<String>,
    /// Prefix for the subscriber side (e.g. `ip netns exec B`).
    pub sub_prefix: Vec<String>,
    /// Remote-shell prefix for the subscriber side (e.g. `ssh host`).
    pub sub_shell_prefix: Vec<String>,
    /// Where FerroDDS runs with network capture write their files (the processes' working
    /// directory); `None` = the lab's working directory.
    pub capture_dir: Option<PathBuf>,
    /// Keep the capture files (`-doNotDropNetworkCapture`: every message recorded, the file
    /// kept); otherwise perftest deletes them at the end, as RTI's does.
    pub keep_captures: bool,
    /// perftest's `resource/secure` folder (absolute): the CA, identities, permissions and
    /// governance files Cyclone DDS is given in its secure rows (FerroDDS's perftest finds
    /// them itself).
    pub secure_dir: Option<PathBuf>,
}

/// The two command lines of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunCommands {
    /// Subscriber / pong / sub (started first).
    pub server: CommandSpec,
    /// The other subscribers of a fan-out run (subscriber ids 1, 2, …; empty with one).
    pub more_servers: Vec<CommandSpec>,
    /// Publisher / ping / pub.
    pub client: CommandSpec,
}

/// Builds the commands of one run.
pub fn build_commands(
    s: &Scenario,
    p: &Placement,
    domain: u32,
    execution_time_s: u32,
) -> RunCommands {
    let (server, client) = match s.system {
        System::Ferrodds | System::Raw => perftest_commands(s, p, domain, execution_time_s),
        System::Cyclone => ddsperf_commands(s, p, domain, execution_time_s),
    };
    let pin: Vec<String> = match &p.cpu {
        Some(cpu) => vec!["taskset".into(), "-c".into(), cpu.clone()],
        None => Vec::new(),
    };
    let wrap_sub = |c: CommandSpec| {
        c.wrapped(&pin)
            .wrapped(&p.sub_prefix)
            .through_shell_prefix(&p.sub_shell_prefix)
    };
    // Fan-out: the other subscribers, each perftest one with its id (ddsperf has none).
    let more_servers = (1..s.subscribers.max(1))
        .map(|i| {
            let c = server.clone();
            wrap_sub(if s.system == System::Cyclone {
                c
            } else {
                c.args(["-sidMultiSubTest".into(), i.to_string()])
            })
        })
        .collect();
    RunCommands {
        server: wrap_sub(server),
        more_servers,
        client: client.wrapped(&pin).wrapped(&p.pub_prefix),
    }
}

fn perftest_commands(
    s: &Scenario,
    p: &Placement,
    domain: u32,
    exec: u32,
) -> (CommandSpec, CommandSpec) {
    let mut common: Vec<String> = vec![
        "-domain".into(),
        domain.to_string(),
        "-noPrint".into(),
        "-dataLen".into(),
        s.size.to_string(),
    ];
    if s.system == System::Raw {
        common.push("-rawTransport".into());
    }
    if s.multicast {
        common.push("-multicast".into());
    }
    if s.system != System::Raw {
        if s.reliability == Reliability::BestEffort {
            common.push("-bestEffort".into());
        }
        if s.keyed {
            common.extend([
                "-keyed".into(),
                "-instances".into(),
                KEYED_INSTANCES.to_string(),
            ]);
        }
    }
    if s.transport != Transport::Udpv4 || s.system == System::Ferrodds {
        common.extend(["-transport".into(), s.transport.perftest_name().into()]);
    }
    // SHMEM zero-copy: writer loans on both sides (FerroDDS only; raw has no DDS).
    if s.transport.zero_copy() && s.system == System::Ferrodds {
        common.push("-zeroCopy".into());
    }
    if s.system == System::Ferrodds {
        // Relative to perftest's own folder, where perftest finds it from any directory.
        if let Some(g) = s.security.and_then(SecurityProfile::perftest_governance) {
            common.extend(["-secureGovernanceFile".into(), g]);
        }
    }
    let capture = s.system == System::Ferrodds && s.capture != Capture::Off;
    if capture {
        common.push("-networkCapture".into());
        if s.capture == Capture::NoUserData {
            common.push("-networkCaptureRemoveUserData".into());
        }
        if p.keep_captures {
            common.push("-doNotDropNetworkCapture".into());
        }
    }
    // `ids`: the subscriber ids the peer stands for (raw UDP names them all in its peer).
    let side =
        |own: &Option<String>, other: &Option<String>, own_port: u16, other_port: u16, ids: u32| {
            let mut v: Vec<String> = Vec::new();
            let stream = matches!(s.transport, Transport::Tcp | Transport::Tls);
            let tcp_dds = stream && s.system == System::Ferrodds;
            if s.transport == Transport::Udpv4Wan {
                // One port per side, each announcing the address and port it is reached at.
                if let Some(a) = own {
                    v.extend(["-nic".into(), a.clone()]);
                    v.extend(["-transportPublicAddress".into(), format!("{a}:{own_port}")]);
                }
                v.extend(["-transportHostPort".into(), own_port.to_string()]);
                if let Some(a) = other {
                    v.extend(["-peer".into(), format!("0@udpv4_wan://{a}:{other_port}")]);
                }
                return v;
            }
            let scheme = if s.transport == Transport::Tls {
                "tlsv4_lan"
            } else {
                "tcpv4_lan"
            };
            if s.transport == Transport::Udpv4 || stream {
                if let Some(a) = own {
                    v.extend(["-nic".into(), a.clone()]);
                }
                if tcp_dds {
                    v.extend(["-transportServerBindPort".into(), own_port.to_string()]);
                }
                // Raw multicast sends each topic to its group: no peers.
                let raw_multicast = s.system == System::Raw && s.multicast;
                if let Some(a) = other.as_ref().filter(|_| !raw_multicast) {
                    let peer = if tcp_dds {
                        format!("0@{scheme}://{a}:{other_port}")
                    } else if s.system == System::Raw && ids > 1 {
                        // Raw UDP sends only to the subscriber ids its peer names: all of them.
                        format!("{a}:0-{}", ids - 1)
                    } else {
                        // Raw TCP and UDP: the address (ports follow the raw formula).
                        a.clone()
                    };
                    v.extend(["-peer".into(), peer]);
                }
            }
            v
        };
    let own_bin = match (s.language, &p.perftest_cs) {
        (Language::Cs, Some(cs)) if s.system == System::Ferrodds => cs.display().to_string(),
        // (Never the Rust perftest in a C# row: the run fails, visibly.)
        (Language::Cs, None) if s.system == System::Ferrodds => "perftest_cs".to_string(),
        (Language::Micro, _) if s.system == System::Ferrodds => p
            .perftest_micro
            .as_ref()
            .map_or_else(|| "perftest_micro".to_string(), |m| m.display().to_string()),
        _ => p.perftest.display().to_string(),
    };
    let sub_bin = match &p.remote_perftest {
        Some(r) if !p.sub_shell_prefix.is_empty() => r.clone(),
        _ => own_bin.clone(),
    };
    let mut sub = CommandSpec::new(sub_bin)
        .args(["-sub"])
        .args(common.clone())
        .args(side(
            &p.sub_addr,
            &p.pub_addr,
            p.tcp_sub_port,
            p.tcp_pub_port,
            1,
        ));
    let mut pub_args: Vec<String> = vec!["-pub".into()];
    pub_args.extend(common);
    pub_args.extend(["-executionTime".into(), exec.to_string()]);
    match s.test {
        TestKind::Latency => pub_args.push("-latencyTest".into()),
        TestKind::Throughput => {
            // (perftest refuses a positive -batchSize with -zeroCopy; 0 is plain "off".)
            if s.batching && !s.transport.zero_copy() {
                pub_args.extend(["-batchSize".into(), BATCH_BYTES.to_string()]);
            } else if s.system == System::Ferrodds && s.size <= LARGE_THRESHOLD {
                pub_args.extend(["-batchSize".into(), "0".into()]);
            }
        }
    }
    let n = s.subscribers.max(1);
    let mut publ = CommandSpec::new(own_bin).args(pub_args).args(side(
        &p.pub_addr,
        &p.sub_addr,
        p.tcp_pub_port,
        p.tcp_sub_port,
        n,
    ));
    if n > 1 {
        // perftest's fan-out: the publisher waits for N subscribers.
        publ = publ.args(["-numSubscribers".into(), n.to_string()]);
    }
    if capture {
        publ.cwd.clone_from(&p.capture_dir);
        if p.sub_shell_prefix.is_empty() {
            sub.cwd.clone_from(&p.capture_dir);
        }
    }
    (sub, publ)
}

fn ddsperf_commands(
    s: &Scenario,
    p: &Placement,
    domain: u32,
    exec: u32,
) -> (CommandSpec, CommandSpec) {
    let mut common: Vec<String> = Vec::new();
    if s.reliability == Reliability::BestEffort {
        common.push("-u".into());
    }
    if s.keyed {
        common.extend(["-n".into(), KEYED_INSTANCES.to_string()]);
    }
    common.extend(["-i".into(), domain.to_string()]);
    let prog = if p.sub_shell_prefix.is_empty() {
        p.ddsperf.display().to_string()
    } else {
        "ddsperf".to_string()
    };
    // The server outlives the client by a few seconds and stops by itself, so its output
    // (block-buffered into our pipe) is flushed at exit.
    let mut sub = CommandSpec::new(prog)
        .args(common.clone())
        .args([format!("-D{}", exec + 4)]);
    let (sub_uri, pub_uri) = if s.transport == Transport::Tcp {
        (&p.cyclone_tcp_sub_uri, &p.cyclone_tcp_pub_uri)
    } else if s.multicast {
        (&p.cyclone_mc_sub_uri, &p.cyclone_mc_pub_uri)
    } else {
        (&p.cyclone_sub_uri, &p.cyclone_pub_uri)
    };
    // Secure rows: the profile's governance and this side's identity, as a configuration
    // fragment after the topology's (Cyclone merges a comma-separated list).
    let secure = |uri: &String, side: &str| match (
        s.security.and_then(SecurityProfile::governance_file),
        &p.secure_dir,
    ) {
        (Some(g), Some(dir)) => format!("{uri},{}", cyclone_security_fragment(dir, g, side)),
        _ => uri.clone(),
    };
    sub.env
        .push(("CYCLONEDDS_URI".into(), secure(sub_uri, "sub")));
    // ddsperf's duration counts from process start (discovery included) and it prints once a
    // second: one more second makes a run comparable with perftest's -executionTime.
    let mut publ = CommandSpec::new(p.ddsperf.display().to_string())
        .args(common)
        .args([format!("-D{}", exec + 1)]);
    publ.env
        .push(("CYCLONEDDS_URI".into(), secure(pub_uri, "pub")));
    let size = s.size.to_string();
    match s.test {
        TestKind::Latency => {
            sub = sub.args(["pong"]);
            publ = publ.args(["ping", "size", size.as_str()]);
        }
        TestKind::Throughput => {
            sub = sub.args(["sub"]);
            publ = publ.args(["pub", "size", size.as_str()]);
        }
    }
    (sub, publ)
}

/// perftest's `resource/secure` folder (absolute), looked for as perftest looks for it: beside
/// the `perftest` binary, one level up (an installed `bin/`), at `../../tools/perftest` (cargo's
/// `target/<profile>/`), then in the repository this lab was built from.
pub fn find_secure_dir(perftest: &Path) -> Option<PathBuf> {
    let exe = find_program(&perftest.to_string_lossy()).and_then(|p| p.canonicalize().ok());
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dir) = exe.as_deref().and_then(Path::parent) {
        candidates.push(dir.to_path_buf());
        candidates.push(dir.join(".."));
        candidates.push(dir.join("../../tools/perftest"));
    }
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../perftest"));
    candidates
        .into_iter()
        .map(|c| c.join(crate::matrix::PERFTEST_SECURE_DIR))
        .find(|d| d.join("cacert.pem").is_file())
        .and_then(|d| d.canonicalize().ok())
}

/// The Cyclone DDS configuration fragment of a secure row: the `governance` file of `dir`
/// (perftest's `resource/secure`) with the identity and permissions of `side` (`pub` or
/// `sub`), as perftest's own participants use them.
pub fn cyclone_security_fragment(dir: &Path, governance: &str, side: &str) -> String {
    let d = dir.display();
    let perm = if side == "pub" { "Pub" } else { "Sub" };
    format!(
        "<Domain id=\"any\"><Security><Authentication><IdentityCertificate>file:{d}/{side}.pem</IdentityCertificate><IdentityCA>file:{d}/cacert.pem</IdentityCA><PrivateKey>file:{d}/{side}key.pem</PrivateKey></Authentication><AccessControl><PermissionsCA>file:{d}/cacert.pem</PermissionsCA><Governance>file:{d}/{governance}</Governance><Permissions>file:{d}/signed_PerftestPermissions{perm}.xml</Permissions></AccessControl></Security></Domain>"
    )
}

/// What one process left behind.
#[derive(Clone, Debug, Default)]
pub struct ProcOutput {
    /// Exit status, `None` when it had to be killed.
    pub status: Option<ExitStatus>,
    /// CPU time the process used (user and system, seconds), as last read from
    /// `/proc/PID/stat` while it ran (at most one poll, 20 ms, before it ended); `None` where
    /// that file is not readable.
    pub cpu_s: Option<f64>,
    /// Standard output (tail, at most [`OUTPUT_CAP`] bytes).
    pub stdout: String,
    /// Standard error (tail).
    pub stderr: String,
}

/// How a pair run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The client ended and the server ended (or was stopped after its grace time).
    Finished,
    /// The server failed while the client was still running.
    ServerFailed,
    /// The timeout struck.
    TimedOut,
    /// The stop flag was raised (Ctrl-C).
    Interrupted,
}

/// The result of [`run_pair`].
#[derive(Clone, Debug)]
pub struct PairOutcome {
    /// How it ended.
    pub ending: Ending,
    /// Server process.
    pub server: ProcOutput,
    /// The other server processes of a fan-out run.
    pub more_servers: Vec<ProcOutput>,
    /// Client process.
    pub client: ProcOutput,
    /// Wall-clock time.
    pub elapsed: Duration,
}

/// Timing of [`run_pair`].
#[derive(Clone, Copy, Debug)]
pub struct PairTiming {
    /// Delay between starting the server and the client.
    pub server_head_start: Duration,
    /// Whole-run timeout.
    pub timeout: Duration,
    /// How long the server may keep running after the client ended.
    pub server_grace: Duration,
    /// A server that outlives a client that ended well is asked to stop (SIGINT) after
    /// this long (`None`: it ends by itself, within `server_grace`). For perftest: its
    /// subscriber waits 2 s after the end of the test, as RTI's does, while the publisher,
    /// the client, ends once the subscriber confirmed that end, its summary printed.
    pub stop_server_after_client: Option<Duration>,
}

struct Running {
    child: Child,
    out: JoinHandle<Vec<u8>>,
    err: JoinHandle<Vec<u8>>,
    status: Option<ExitStatus>,
    /// Clock ticks of CPU time last read from `/proc/PID/stat`.
    cpu_ticks: Option<u64>,
}

/// User plus system CPU time of process `pid` in clock ticks (fields 14 and 15 of
/// `/proc/PID/stat`, after the parenthesised command name).
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_cpu_ticks(&stat)
}

/// [`cpu_ticks`] of a `/proc/PID/stat` line.
pub fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After the name: state (3), ppid … utime (14), stime (15).
    let mut f = rest.split_whitespace().skip(11);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Clock ticks per second of `/proc` times (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
const CLOCK_TICKS: f64 = 100.0;

fn drain<R: Read + Send + 'static>(mut r: R) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf: Vec<u8> = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            match r.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    if buf.len() > OUTPUT_CAP * 2 {
                        let cut = buf.len() - OUTPUT_CAP;
                        buf.drain(..cut);
                    }
                }
            }
        }
        if buf.len() > OUTPUT_CAP {
            let cut = buf.len() - OUTPUT_CAP;
            buf.drain(..cut);
        }
        buf
    })
}

fn spawn(spec: &CommandSpec) -> Result<Running, LabError> {
    let mut cmd = spec.to_command();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().map_err(|source| LabError::Spawn {
        program: spec.program.clone(),
        source,
    })?;
    live_groups().push(child.id());
    let out = drain(child.stdout.take().expect("stdout was piped"));
    let err = drain(child.stderr.take().expect("stderr was piped"));
    Ok(Running {
        child,
        out,
        err,
        status: None,
        cpu_ticks: None,
    })
}

impl Running {
    fn poll(&mut self) -> bool {
        if self.status.is_none() {
            if let Some(t) = cpu_ticks(self.child.id()) {
                self.cpu_ticks = Some(t);
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                self.status = Some(st);
            }
        }
        self.status.is_some()
    }

    /// Sends `signal` to the whole process group (wrappers such as `sh -c` may have forked).
    fn signal_group(&self, signal: &str) {
        kill_group(self.child.id(), signal);
    }

    /// Asks the process to stop (SIGINT: perftest prints its summary and exits).
    fn interrupt(&mut self) {
        if !self.poll() {
            self.signal_group("-INT");
        }
    }

    fn kill(&mut self) {
        if self.poll() {
            return;
        }
        self.signal_group("-KILL");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn finish(mut self) -> ProcOutput {
        self.kill();
        let id = self.child.id();
        live_groups().retain(|g| *g != id);
        let stdout = self.out.join().unwrap_or_default();
        let stderr = self.err.join().unwrap_or_default();
        ProcOutput {
            status: self.status,
            cpu_s: self.cpu_ticks.map(|t| t as f64 / CLOCK_TICKS),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }
}

/// Process groups of the children started by [`run_pair`] and not yet reaped.
static LIVE_GROUPS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

fn live_groups() -> std::sync::MutexGuard<'static, Vec<u32>> {
    LIVE_GROUPS.lock().unwrap_or_else(|e| e.into_inner())
}

fn kill_group(pgid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([signal, "--", &format!("-{pgid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Kills (SIGKILL) the process groups of every child still running, for an exit that
/// cannot wait for [`run_pair`] to reap them (a second Ctrl-C or SIGTERM). Each child has its
/// own process group, so a signal sent to the lab alone never reaches them.
pub fn kill_live_children() {
    let groups = std::mem::take(&mut *live_groups());
    for g in groups {
        kill_group(g, "-KILL");
    }
}

fn sleep_unless(stop: &AtomicBool, d: Duration) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20).min(end - Instant::now()));
    }
    !stop.load(Ordering::Relaxed)
}

/// Runs a server/client pair to completion, timeout or stop; always reaps both processes.
/// On timeout both are sent SIGINT and given [`TIMEOUT_INTERRUPT_GRACE`] to print their
/// summaries before they are killed.
pub fn run_pair(
    server: &CommandSpec,
    client: &CommandSpec,
    timing: PairTiming,
    stop: &AtomicBool,
) -> Result<PairOutcome, LabError> {
    run_group(server, &[], client, timing, stop)
}

/// [`run_pair`] with more servers (a fan-out run's other subscribers), started with the
/// first: the run finishes when the client and every server have, a server failing first
/// fails it, and every process is reaped.
pub fn run_group(
    server: &CommandSpec,
    more_servers: &[CommandSpec],
    client: &CommandSpec,
    timing: PairTiming,
    stop: &AtomicBool,
) -> Result<PairOutcome, LabError> {
    let start = Instant::now();
    let deadline = start + timing.timeout;
    let mut srvs = Vec::with_capacity(1 + more_servers.len());
    for spec in std::iter::once(server).chain(more_servers) {
        match spawn(spec) {
            Ok(r) => srvs.push(r),
            Err(e) => {
                for r in srvs {
                    r.finish();
                }
                return Err(e);
            }
        }
    }
    let outcome = |ending, mut outs: Vec<ProcOutput>, client| {
        let server = if outs.is_empty() {
            ProcOutput::default()
        } else {
            outs.remove(0)
        };
        PairOutcome {
            ending,
            server,
            more_servers: outs,
            client,
            elapsed: start.elapsed(),
        }
    };
    if !sleep_unless(stop, timing.server_head_start) {
        let outs = srvs.into_iter().map(Running::finish).collect();
        return Ok(outcome(Ending::Interrupted, outs, ProcOutput::default()));
    }
    let mut cli = match spawn(client) {
        Ok(c) => c,
        Err(e) => {
            for r in srvs {
                r.finish();
            }
            return Err(e);
        }
    };
    let mut client_done_at: Option<Instant> = None;
    let mut server_failed_at: Option<Instant> = None;
    let mut servers_asked_to_stop = false;
    let ending = loop {
        if stop.load(Ordering::Relaxed) {
            break Ending::Interrupted;
        }
        let now = Instant::now();
        if now >= deadline {
            break Ending::TimedOut;
        }
        let c = cli.poll();
        let mut s = true;
        let mut failed = false;
        for r in &mut srvs {
            let done = r.poll();
            s &= done;
            failed |= done && r.status.is_some_and(|st| !st.success());
        }
        if c && client_done_at.is_none() {
            client_done_at = Some(now);
        }
        if c && s {
            break Ending::Finished;
        }
        if let Some(t) = client_done_at {
            if now.duration_since(t) >= timing.server_grace {
                break Ending::Finished;
            }
            let client_ok = cli.status.is_some_and(|st| st.success());
            if let Some(d) = timing.stop_server_after_client.filter(|_| client_ok) {
                if !servers_asked_to_stop && now.duration_since(t) >= d {
                    servers_asked_to_stop = true;
                    for r in &mut srvs {
                        r.interrupt();
                    }
                }
            }
        }
        if failed && !c {
            // Give the client a moment to notice, then stop it.
            let t = *server_failed_at.get_or_insert(now);
            if now.duration_since(t) >= Duration::from_secs(2) {
                break Ending::ServerFailed;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if ending == Ending::TimedOut {
        // Let every side print what it measured up to now (the record keeps it), then kill.
        cli.interrupt();
        for r in &mut srvs {
            r.interrupt();
        }
        let end = Instant::now() + TIMEOUT_INTERRUPT_GRACE;
        while Instant::now() < end && !stop.load(Ordering::Relaxed) {
            let c = cli.poll();
            let mut all = c;
            for r in &mut srvs {
                all &= r.poll();
            }
            if all {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let client = cli.finish();
    let outs = srvs.into_iter().map(Running::finish).collect();
    Ok(outcome(ending, outs, client))
}

/// The last `n` non-empty lines of `text`.
pub fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Finds a program: an existing path as given, else a search of `PATH`.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let p = Path::new(name);
    if name.contains('/') {
        return p.is_file().then(|| p.to_path_buf());
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|c| c.is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(system: System, test: TestKind) -> Scenario {
        Scenario {
            multicast: false,
            subscribers: 1,
            system,
            test,
            reliability: Reliability::BestEffort,
            keyed: true,
            batching: false,
            transport: Transport::Udpv4,
            size: 1024,
            capture: Default::default(),
            language: Default::default(),
            security: None,
        }
    }

    fn placement() -> Placement {
        Placement {
            perftest: PathBuf::from("/x/perftest"),
            ddsperf: PathBuf::from("ddsperf"),
            cpu: Some("0".into()),
            pub_addr: Some("127.0.0.1".into()),
            sub_addr: Some("127.0.0.1".into()),
            cyclone_pub_uri: "file:///c.xml".into(),
            cyclone_sub_uri: "file:///c.xml".into(),
            ..Default::default()
        }
    }

    #[test]
    fn c_sharp_runs_use_the_c_sharp_perftest_on_both_sides() {
        let mut p = placement();
        p.perftest_cs = Some(PathBuf::from("/repo/perftest_cs"));
        let mut s = scenario(System::Ferrodds, TestKind::Latency);
        s.language = Language::Cs;
        let line = |c: &CommandSpec| c.shell_line();
        let c = build_commands(&s, &p, 7, 5);
        for side in [&c.client, &c.server] {
            assert!(line(side).contains("/repo/perftest_cs "), "{}", line(side));
            assert!(!line(side).contains("/x/perftest"), "{}", line(side));
        }
        // Without the wrapper a C# row never falls back to the Rust perftest.
        p.perftest_cs = None;
        let c = build_commands(&s, &p, 7, 5);
        assert!(
            line(&c.client).contains(" perftest_cs "),
            "{}",
            line(&c.client)
        );
        // Rust rows and the raw baseline keep the Rust perftest.
        p.perftest_cs = Some(PathBuf::from("/repo/perftest_cs"));
        for sys in [System::Ferrodds, System::Raw] {
            let c = build_commands(&scenario(sys, TestKind::Latency), &p, 7, 5);
            assert!(
                line(&c.client).contains("/x/perftest "),
                "{}",
                line(&c.client)
            );
        }
    }

    #[test]
    fn capture_runs_ask_perftest_for_it_and_write_where_told() {
        let mut p = placement();
        p.capture_dir = Some(PathBuf::from("/results/captures"));
        let mut s = scenario(System::Ferrodds, TestKind::Latency);
        s.capture = Capture::NoUserData;
        let c = build_commands(&s, &p, 7, 5);
        for side in [&c.client, &c.server] {
            assert!(side.args.contains(&"-networkCapture".to_string()));
            assert!(side
                .args
                .contains(&"-networkCaptureRemoveUserData".to_string()));
            assert!(!side.args.contains(&"-doNotDropNetworkCapture".to_string()));
            assert_eq!(side.cwd, Some(PathBuf::from("/results/captures")));
        }
        p.keep_captures = true;
        s.capture = Capture::On;
        let c = build_commands(&s, &p, 7, 5);
        assert!(c
            .client
            .args
            .contains(&"-doNotDropNetworkCapture".to_string()));
        assert!(!c
            .client
            .args
            .contains(&"-networkCaptureRemoveUserData".to_string()));
        // without capture: nothing, and the lab's working directory
        let plain = build_commands(&scenario(System::Ferrodds, TestKind::Latency), &p, 7, 5);
        assert!(!plain.client.args.iter().any(|a| a.contains("Capture")));
        assert_eq!(plain.client.cwd, None);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0").unwrap(), vec![0]);
        assert_eq!(parse_cpu_list("3,0-1,1").unwrap(), vec![0, 1, 3]);
        for bad in ["", "a", "1-", "-1", "2-1", "0,,1", "1 ", "0x1", "99999"] {
            assert!(parse_cpu_list(bad).is_err(), "{bad:?}");
        }
        let allowed = allowed_cpus().expect("Linux has /proc/self/status");
        assert!(!allowed.is_empty());
        assert!(validate_cpu_list(&allowed[0].to_string(), true).is_ok());
        assert!(matches!(
            validate_cpu_list("4095", true),
            Err(LabError::CpuNotAvailable { cpu: 4095, .. })
        ));
        assert!(validate_cpu_list("4095", false).is_ok());
    }

    #[test]
    fn perftest_command_lines() {
        let c = build_commands(
            &scenario(System::Ferrodds, TestKind::Throughput),
            &placement(),
            7,
            5,
        );
        assert_eq!(
            c.client.shell_line(),
            "taskset -c 0 /x/perftest -pub -domain 7 -noPrint -dataLen 1024 -bestEffort -keyed \
             -instances 100000 -transport UDPv4 -executionTime 5 -batchSize 0 -nic 127.0.0.1 -peer 127.0.0.1"
        );
        assert!(c
            .server
            .shell_line()
            .starts_with("taskset -c 0 /x/perftest -sub -domain 7"));
        assert!(!c.server.args.contains(&"-executionTime".to_string()));
        let raw = build_commands(
            &scenario(System::Raw, TestKind::Latency),
            &placement(),
            7,
            5,
        );
        assert!(raw.client.args.contains(&"-rawTransport".to_string()));
        assert!(raw.client.args.contains(&"-latencyTest".to_string()));
        assert!(!raw.client.args.contains(&"-bestEffort".to_string()));
        assert!(!raw.client.args.contains(&"-batchSize".to_string()));
    }

    /// SHMEM zero-copy: `-transport SHMEM -zeroCopy` on both sides, never a positive
    /// `-batchSize`; plain SHMEM and the raw rows have no `-zeroCopy`.
    #[test]
    fn shmem_zero_copy_command_lines() {
        let mut s = scenario(System::Ferrodds, TestKind::Throughput);
        (s.transport, s.keyed, s.size) = (Transport::ShmemZc, false, 63000);
        let c = build_commands(&s, &placement(), 7, 5);
        for side in [&c.client, &c.server] {
            assert!(
                side.shell_line().contains(" -transport SHMEM -zeroCopy"),
                "{}",
                side.shell_line()
            );
            assert!(
                !side.args.contains(&"-peer".to_string()),
                "{}",
                side.shell_line()
            );
        }
        assert_eq!(
            c.client.shell_line(),
            "taskset -c 0 /x/perftest -pub -domain 7 -noPrint -dataLen 63000 -bestEffort \
             -transport SHMEM -zeroCopy -executionTime 5 -batchSize 0"
        );
        // Even a batched scenario (the matrix makes none) gets no positive -batchSize.
        s.batching = true;
        let c = build_commands(&s, &placement(), 7, 5);
        assert!(!c.client.args.contains(&BATCH_BYTES.to_string()));
        // Large data: no -batchSize at all; latency: -latencyTest, still zero copy.
        (s.batching, s.size) = (false, 1_048_576);
        let c = build_commands(&s, &placement(), 7, 5);
        assert!(!c.client.args.contains(&"-batchSize".to_string()));
        assert!(c.client.args.contains(&"-zeroCopy".to_string()));
        s.test = TestKind::Latency;
        let c = build_commands(&s, &placement(), 7, 5);
        for side in [&c.client, &c.server] {
            assert!(side.args.contains(&"-zeroCopy".to_string()));
        }
        assert!(c.client.args.contains(&"-latencyTest".to_string()));
        // Plain SHMEM and raw SHMEM rings: no writer loans.
        for sys in [System::Ferrodds, System::Raw] {
            let mut p = scenario(sys, TestKind::Throughput);
            (p.transport, p.keyed) = (Transport::Shmem, false);
            let c = build_commands(&p, &placement(), 7, 5);
            for side in [&c.client, &c.server] {
                assert!(side.shell_line().contains("-transport SHMEM"));
                assert!(!side.args.contains(&"-zeroCopy".to_string()));
            }
        }
    }

    /// Fan-out: the publisher waits for N subscribers, N subscriber processes, each (but the
    /// first, id 0 by default) with its id; raw UDP names every id in its peer; Cyclone gets
    /// N identical `sub` processes. One subscriber adds nothing.
    #[test]
    fn fan_out_command_lines() {
        let mut s = scenario(System::Ferrodds, TestKind::Throughput);
        s.subscribers = 3;
        let c = build_commands(&s, &placement(), 7, 5);
        assert!(c
            .client
            .shell_line()
            .ends_with("-peer 127.0.0.1 -numSubscribers 3"));
        assert_eq!(c.more_servers.len(), 2);
        assert!(!c.server.args.contains(&"-sidMultiSubTest".to_string()));
        for (i, m) in c.more_servers.iter().enumerate() {
            assert!(
                m.shell_line()
                    .starts_with("taskset -c 0 /x/perftest -sub -domain 7"),
                "{}",
                m.shell_line()
            );
            assert!(
                m.shell_line()
                    .ends_with(&format!("-sidMultiSubTest {}", i + 1)),
                "{}",
                m.shell_line()
            );
        }
        let mut raw = scenario(System::Raw, TestKind::Throughput);
        raw.subscribers = 4;
        let c = build_commands(&raw, &placement(), 7, 5);
        assert!(c
            .client
            .shell_line()
            .contains("-peer 127.0.0.1:0-3 -numSubscribers 4"));
        assert_eq!(c.more_servers.len(), 3);
        let mut cy = scenario(System::Cyclone, TestKind::Throughput);
        cy.subscribers = 2;
        let c = build_commands(&cy, &placement(), 7, 5);
        assert_eq!(c.more_servers, vec![c.server.clone()]);
        assert!(!c.client.args.contains(&"-numSubscribers".to_string()));
        // Multicast rows: -multicast on every perftest side, Cyclone's multicast configuration.
        let mut mc = scenario(System::Ferrodds, TestKind::Throughput);
        (mc.subscribers, mc.multicast) = (2, true);
        let c = build_commands(&mc, &placement(), 7, 5);
        for cmd in [&c.client, &c.server, &c.more_servers[0]] {
            assert!(
                cmd.args.contains(&"-multicast".to_string()),
                "{}",
                cmd.shell_line()
            );
        }
        let mut rm = scenario(System::Raw, TestKind::Throughput);
        (rm.subscribers, rm.multicast) = (2, true);
        let c = build_commands(&rm, &placement(), 7, 5);
        for cmd in [&c.client, &c.server, &c.more_servers[0]] {
            assert!(
                cmd.args.contains(&"-multicast".to_string()),
                "{}",
                cmd.shell_line()
            );
            assert!(
                !cmd.args.contains(&"-peer".to_string()),
                "{}",
                cmd.shell_line()
            );
        }
        let mut p = placement();
        p.cyclone_mc_pub_uri = "file:///mc-pub.xml".into();
        p.cyclone_mc_sub_uri = "file:///mc-sub.xml".into();
        cy.multicast = true;
        let c = build_commands(&cy, &p, 7, 5);
        assert!(c
            .client
            .shell_line()
            .contains("CYCLONEDDS_URI=file:///mc-pub.xml"));
        assert!(c.more_servers[0]
            .shell_line()
            .contains("CYCLONEDDS_URI=file:///mc-sub.xml"));
        let one = build_commands(
            &scenario(System::Ferrodds, TestKind::Throughput),
            &placement(),
            7,
            5,
        );
        assert!(!one.client.args.contains(&"-multicast".to_string()));
        assert!(one.more_servers.is_empty());
        assert!(!one.client.args.contains(&"-numSubscribers".to_string()));
    }

    #[test]
    fn cpu_ticks_of_a_stat_line() {
        // A command name with spaces and parentheses; utime 250, stime 31.
        let stat = "4242 (perf (test) x) S 1 4242 4242 0 -1 4194560 1200 0 0 0 250 31 0 0 20 0 9 0 100 0 0";
        assert_eq!(parse_cpu_ticks(stat), Some(281));
        assert_eq!(parse_cpu_ticks("4242 (x) S 1"), None);
        assert_eq!(parse_cpu_ticks("garbage"), None);
        // This test process has used some CPU time, and the reading is in ticks.
        let me = cpu_ticks(std::process::id());
        assert!(me.is_some());
    }

    #[test]
    fn secure_rows_name_their_governance_and_plain_rows_none() {
        let mut s = scenario(System::Ferrodds, TestKind::Latency);
        s.security = Some(SecurityProfile::RtpsEncrypt);
        let c = build_commands(&s, &placement(), 7, 5);
        for side in [&c.client, &c.server] {
            let line = side.shell_line();
            assert!(
                line.contains(
                    "-transport UDPv4 -secureGovernanceFile resource/secure/signed_PerftestGovernance_RTPSEncrypt.xml"
                ),
                "{line}"
            );
        }
        for plain in [None, Some(SecurityProfile::NoSecurityLibraries)] {
            s.security = plain;
            let c = build_commands(&s, &placement(), 7, 5);
            assert!(!c.client.shell_line().contains("-secure"), "{plain:?}");
            assert!(!c.server.shell_line().contains("-secure"), "{plain:?}");
        }
        // Cyclone: the topology's configuration, then the profile's with this side's identity.
        let mut p = placement();
        p.secure_dir = Some(PathBuf::from("/r/secure"));
        let mut cy = scenario(System::Cyclone, TestKind::Latency);
        cy.security = Some(SecurityProfile::RtpsSign);
        let c = build_commands(&cy, &p, 3, 4);
        let uri = |cmd: &CommandSpec| {
            cmd.env
                .iter()
                .find(|(k, _)| k == "CYCLONEDDS_URI")
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        let (pub_uri, sub_uri) = (uri(&c.client), uri(&c.server));
        assert!(
            pub_uri.starts_with("file:///c.xml,<Domain id=\"any\"><Security>"),
            "{pub_uri}"
        );
        assert!(
            pub_uri.contains(
                "<Governance>file:/r/secure/signed_PerftestGovernance_RTPSSign.xml</Governance>"
            ),
            "{pub_uri}"
        );
        assert!(
            pub_uri.contains("file:/r/secure/pub.pem") && pub_uri.contains("PermissionsPub.xml"),
            "{pub_uri}"
        );
        assert!(
            sub_uri.contains("file:/r/secure/subkey.pem") && sub_uri.contains("PermissionsSub.xml"),
            "{sub_uri}"
        );
        cy.security = Some(SecurityProfile::NoSecurityLibraries);
        let c = build_commands(&cy, &p, 3, 4);
        assert_eq!(uri(&c.client), "file:///c.xml");
        // perftest's own folder is found from the repository the lab was built in.
        let dir = find_secure_dir(Path::new("/no/such/perftest")).expect("resource/secure");
        assert!(dir.join("signed_PerftestGovernance_RTPSSign.xml").is_file());
    }

    #[test]
    fn ddsperf_command_lines_and_wrapping() {
        let mut p = placement();
        p.cpu = None;
        p.pub_prefix = vec!["ip".into(), "netns".into(), "exec".into(), "a".into()];
        p.sub_shell_prefix = vec!["ssh".into(), "host".into()];
        let c = build_commands(&scenario(System::Cyclone, TestKind::Latency), &p, 3, 4);
        assert_eq!(
            c.client.shell_line(),
            "env CYCLONEDDS_URI=file:///c.xml ip netns exec a ddsperf -u -n 100000 -i 3 -D5 ping size 1024"
        );
        assert_eq!(c.server.program, "ssh");
        assert_eq!(
            c.server.args,
            vec![
                "host".to_string(),
                "env CYCLONEDDS_URI=file:///c.xml ddsperf -u -n 100000 -i 3 -D8 pong".to_string()
            ]
        );
        assert_eq!(shell_quote("a b'c"), "'a b'\\''c'");
    }

    /// A server that would linger after a client that ended well is interrupted (it prints
    /// what it prints on SIGINT and ends); after a client that failed it is left its grace.
    #[test]
    fn a_lingering_server_is_stopped_after_a_client_that_ended_well() {
        let stop = AtomicBool::new(false);
        let timing = PairTiming {
            server_head_start: Duration::from_millis(10),
            timeout: Duration::from_secs(20),
            server_grace: Duration::from_secs(8),
            stop_server_after_client: Some(Duration::from_millis(50)),
        };
        // (Perl: see `pair_runs_and_times_out`.)
        let lingering = CommandSpec::new("perl").args([
            "-e",
            "$| = 1; $SIG{INT} = sub { print \"stopped\\n\"; exit 0 }; print \"summary\\n\"; \
             sleep 30;",
        ]);
        let ok = CommandSpec::new("sh").args(["-c", "sleep 0.2; echo done"]);
        let o = run_pair(&lingering, &ok, timing, &stop).unwrap();
        assert_eq!(o.ending, Ending::Finished);
        assert_eq!(
            o.server.stdout.split_whitespace().collect::<Vec<_>>(),
            ["summary", "stopped"]
        );
        assert_eq!(o.server.status.unwrap().code(), Some(0));
        assert!(o.elapsed < Duration::from_secs(3), "{:?}", o.elapsed);
        // A failed client: the server is not interrupted, it gets its grace.
        let failed = CommandSpec::new("sh").args(["-c", "sleep 0.2; exit 3"]);
        let t = PairTiming {
            server_grace: Duration::from_millis(1500),
            ..timing
        };
        let o = run_pair(&lingering, &failed, t, &stop).unwrap();
        assert_eq!(o.ending, Ending::Finished);
        assert_eq!(o.server.stdout.trim(), "summary");
        assert!(o.elapsed >= Duration::from_millis(1500), "{:?}", o.elapsed);
    }

    #[test]
    fn pair_runs_and_times_out() {
        let stop = AtomicBool::new(false);
        let timing = PairTiming {
            server_head_start: Duration::from_millis(10),
            timeout: Duration::from_secs(10),
            server_grace: Duration::from_millis(300),
            stop_server_after_client: None,
        };
        let srv = CommandSpec::new("sh").args(["-c", "echo server; sleep 30"]);
        let cli = CommandSpec::new("sh").args(["-c", "echo client; echo oops >&2; exit 3"]);
        let o = run_pair(&srv, &cli, timing, &stop).unwrap();
        assert_eq!(o.ending, Ending::Finished);
        assert_eq!(o.client.stdout.trim(), "client");
        assert_eq!(o.client.stderr.trim(), "oops");
        assert_eq!(o.client.status.unwrap().code(), Some(3));
        assert_eq!(o.server.stdout.trim(), "server");
        assert!(o.elapsed < Duration::from_secs(5));

        let t2 = PairTiming {
            timeout: Duration::from_millis(400),
            ..timing
        };
        let slow = CommandSpec::new("sleep").args(["30"]);
        let o = run_pair(&slow, &slow, t2, &stop).unwrap();
        assert_eq!(o.ending, Ending::TimedOut);
        assert!(o.elapsed < Duration::from_secs(5));

        let bad = CommandSpec::new("sh").args(["-c", "exit 1"]);
        let o = run_pair(&bad, &slow, timing, &stop).unwrap();
        assert_eq!(o.ending, Ending::ServerFailed);

        // On timeout, SIGINT first: a server that prints its summary then is heard; one that
        // ignores SIGINT is killed after the grace time.
        // (Perl, not sh: a shell started with SIGINT ignored — any test run from a background
        // job — cannot trap it, while perftest, like perl here, installs its handler anyway.)
        let polite = CommandSpec::new("perl").args([
            "-e",
            "$| = 1; $SIG{INT} = sub { print \"summary\\n\"; exit 0 }; print \"started\\n\"; \
             select(undef, undef, undef, 0.05) while 1;",
        ]);
        let deaf = CommandSpec::new("sh").args(["-c", "trap '' INT; sleep 30"]);
        let o = run_pair(&polite, &deaf, t2, &stop).unwrap();
        assert_eq!(o.ending, Ending::TimedOut);
        assert_eq!(
            o.server.stdout.split_whitespace().collect::<Vec<_>>(),
            ["started", "summary"],
            "server status {:?}, stderr {:?}, elapsed {:?}",
            o.server.status,
            o.server.stderr,
            o.elapsed
        );
        assert_eq!(o.server.status.unwrap().code(), Some(0));
        assert!(o.client.status.is_none(), "the deaf client was killed");
        assert!(o.elapsed >= TIMEOUT_INTERRUPT_GRACE);
        assert!(o.elapsed < TIMEOUT_INTERRUPT_GRACE + Duration::from_secs(3));

        stop.store(true, Ordering::Relaxed);
        let o = run_pair(&slow, &slow, timing, &stop).unwrap();
        assert_eq!(o.ending, Ending::Interrupted);

        let missing = CommandSpec::new("/nonexistent/lab-test-program");
        assert!(matches!(
            run_pair(&missing, &slow, timing, &AtomicBool::new(false)),
            Err(LabError::Spawn { .. })
        ));
    }

    #[test]
    fn tails() {
        assert_eq!(tail_lines("a\n\nb\nc\n", 2), "b\nc");
        assert_eq!(tail_lines("", 3), "");
        assert!(find_program("sh").is_some());
        assert!(find_program("/nonexistent/x").is_none());
    }
}
