//! Test support: decode a capture file with `tshark` and report, per
//! packet, the protocol stack, RTPS submessage ids, whether Wireshark
//! flagged it malformed, and its expert infos.
//!
//! This module is for tests in this and other FerroDDS crates; it is not
//! used by the capture path. It runs the `tshark` binary found on `PATH`
//! (or named by the `TSHARK` environment variable) in two-pass mode with
//! RTPS reassembly on and, by default, IPv4/UDP checksum validation on (see
//! [`TsharkOptions`]), and kills it after a timeout.
//!
//! Tests should call [`require_tshark`] first: a missing tshark is an error
//! unless the environment variable [`SKIP_ENV`] (`FERRODDS_SKIP_TSHARK`) is
//! `1`, so a CI machine without tshark fails loudly instead of silently
//! skipping the check.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::{CaptureError, CaptureWriter, Direction, Timestamp};

/// Environment variable that, when `1`, lets tests skip tshark checks.
pub const SKIP_ENV: &str = "FERRODDS_SKIP_TSHARK";

/// How long [`tshark_check`] lets tshark run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Preferences passed to every tshark run: RTPS DATA_FRAG reassembly.
pub const DEFAULT_PREFS: &[&str] = &["-o", "rtps.enable_rtps_reassembly:TRUE"];

/// Preferences that make Wireshark validate IPv4 and UDP checksums (a wrong
/// checksum becomes an expert error). Right for files written by this crate;
/// wrong for real loopback captures, whose UDP checksums are left to
/// (absent) offload hardware and look bad.
pub const CHECKSUM_PREFS: &[&str] = &[
    "-o",
    "ip.check_checksum:TRUE",
    "-o",
    "udp.check_checksum:TRUE",
];

/// How to run tshark in [`tshark_check_with`].
#[derive(Debug, Clone, Copy)]
pub struct TsharkOptions<'a> {
    /// Add [`CHECKSUM_PREFS`] (default: true).
    pub validate_checksums: bool,
    /// Extra arguments after the preferences, e.g. `["-Y", "rtps.sm.id == 0x15"]`
    /// or more `-o pref:value` pairs (default: none).
    pub extra_args: &'a [&'a str],
    /// Kill tshark after this long (default: [`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
}

impl Default for TsharkOptions<'_> {
    fn default() -> Self {
        Self {
            validate_checksums: true,
            extra_args: &[],
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl<'a> TsharkOptions<'a> {
    /// Options for real captures: no checksum validation.
    pub fn real_capture() -> Self {
        Self {
            validate_checksums: false,
            ..Self::default()
        }
    }

    /// The same options with a display filter (`-Y filter`) added.
    pub fn with_filter(self, filter_args: &'a [&'a str]) -> Self {
        Self {
            extra_args: filter_args,
            ..self
        }
    }
}

/// Fields requested from tshark, in output column order.
const FIELDS: &[&str] = &[
    "frame.number",
    "frame.protocols",
    "rtps.sm.id",
    "_ws.malformed",
    "_ws.expert.severity",
    "_ws.expert.message",
    "ip.reassembled_in",
];

/// Separates multiple occurrences of a field (ASCII record separator).
const AGGREGATOR: char = '\u{1e}';

/// Errors from running tshark.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TsharkError {
    /// The tshark binary could not be started.
    #[error(
        "tshark not found or not runnable ({0}); install it (Debian: `apt-get install tshark`) \
         or set FERRODDS_SKIP_TSHARK=1 to skip tshark checks"
    )]
    NotFound(#[source] io::Error),
    /// Talking to the tshark process failed.
    #[error("running tshark failed: {0}")]
    Io(#[from] io::Error),
    /// tshark exited unsuccessfully.
    #[error("tshark exited with {status}: {stderr}")]
    Failed {
        /// Exit status.
        status: ExitStatus,
        /// What it printed on stderr.
        stderr: String,
    },
    /// tshark did not finish in time and was killed.
    #[error("tshark did not finish within {0:?}")]
    Timeout(Duration),
    /// A line of tshark output could not be understood.
    #[error("unexpected tshark output line: {0:?}")]
    BadOutput(String),
}

/// Severity of a Wireshark expert info, in increasing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Packet comment.
    Comment,
    /// Usual workflow information.
    Chat,
    /// Notable but usual event.
    Note,
    /// Warning: possible problem.
    Warning,
    /// Error: serious problem, e.g. malformed packet.
    Error,
}

impl Severity {
    /// Decodes the value of tshark's `_ws.expert.severity` field.
    pub fn from_wireshark(value: u32) -> Option<Self> {
        match value {
            0x0010_0000 => Some(Self::Comment),
            0x0020_0000 => Some(Self::Chat),
            0x0040_0000 => Some(Self::Note),
            0x0060_0000 => Some(Self::Warning),
            0x0080_0000 => Some(Self::Error),
            _ => None,
        }
    }
}

/// One expert info item attached to a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpertInfo {
    /// Severity (unknown values are reported as [`Severity::Error`]).
    pub severity: Severity,
    /// The expert message.
    pub message: String,
}

/// What tshark made of one frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TsharkPacket {
    /// 1-based frame number.
    pub frame: u32,
    /// Protocol stack, e.g. `["eth", "ethertype", "ip", "udp", "rtps"]`.
    pub protocols: Vec<String>,
    /// RTPS submessage ids in order (empty if not RTPS).
    pub submessage_ids: Vec<u8>,
    /// Wireshark flagged the frame as malformed.
    pub malformed: bool,
    /// Expert infos of the frame.
    pub expert: Vec<ExpertInfo>,
    /// For an IPv4 fragment: the frame in which its datagram was reassembled.
    pub reassembled_in: Option<u32>,
}

impl TsharkPacket {
    /// Whether the RTPS dissector decoded this frame.
    pub fn is_rtps(&self) -> bool {
        self.protocols.iter().any(|p| p == "rtps")
    }

    /// Highest expert severity, if any.
    pub fn max_severity(&self) -> Option<Severity> {
        self.expert.iter().map(|e| e.severity).max()
    }

    /// Malformed, or an expert info at `min` severity or above.
    pub fn has_problem(&self, min: Severity) -> bool {
        self.malformed || self.max_severity().is_some_and(|s| s >= min)
    }
}

/// tshark's view of a whole capture file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TsharkReport {
    /// One entry per frame, in order.
    pub packets: Vec<TsharkPacket>,
}

impl TsharkReport {
    /// Frames that are malformed or carry an expert info at `min` or above.
    pub fn problems(&self, min: Severity) -> Vec<&TsharkPacket> {
        self.packets.iter().filter(|p| p.has_problem(min)).collect()
    }

    /// Frames that neither decode as RTPS nor are IPv4 fragments of a
    /// datagram reassembled (as RTPS) in a later frame.
    pub fn non_rtps(&self) -> Vec<&TsharkPacket> {
        self.packets
            .iter()
            .filter(|p| {
                if p.is_rtps() {
                    return false;
                }
                match p.reassembled_in {
                    Some(f) if f != p.frame => {
                        !self.packets.iter().any(|q| q.frame == f && q.is_rtps())
                    }
                    _ => true,
                }
            })
            .collect()
    }

    /// All RTPS submessage ids seen in the file.
    pub fn submessage_ids(&self) -> BTreeSet<u8> {
        self.packets
            .iter()
            .flat_map(|p| p.submessage_ids.iter().copied())
            .collect()
    }

    /// Human-readable descriptions of every frame that is not RTPS (nor a
    /// fragment of RTPS), is malformed, or carries an expert info of warning
    /// level or above; also flags an empty capture. Empty means clean.
    pub fn issues(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .non_rtps()
            .iter()
            .map(|p| format!("frame {} is not RTPS: {:?}", p.frame, p.protocols))
            .collect();
        out.extend(self.problems(Severity::Warning).iter().map(|p| {
            format!(
                "frame {}: malformed={} expert={:?}",
                p.frame, p.malformed, p.expert
            )
        }));
        if self.packets.is_empty() {
            out.push("capture has no packets".to_string());
        }
        out
    }
}

/// Source of the datagrams written by [`write_rtps_pcapng`].
pub const TEST_SRC: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7410);
/// Destination of the datagrams written by [`write_rtps_pcapng`] (domain 0,
/// participant 0, user unicast port).
pub const TEST_DST: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7411);

/// Writes each message as one UDP datagram from [`TEST_SRC`] to
/// [`TEST_DST`] into a new pcapng file at `path` (one interface,
/// outbound, timestamps 1 µs apart starting now): the quick way to get
/// hand-built RTPS messages in front of [`tshark_check`]. Frame `n` (1-based)
/// holds `messages[n - 1]` unless a message needs IPv4 fragments.
pub fn write_rtps_pcapng<M: AsRef<[u8]>>(
    path: impl AsRef<Path>,
    messages: &[M],
) -> Result<(), CaptureError> {
    let file = std::fs::File::create(path)?;
    let mut w = CaptureWriter::new(io::BufWriter::new(file))?;
    let iface = w.add_interface("ferrodds-test")?;
    let t0 = Timestamp::now().as_nanos();
    for (i, m) in messages.iter().enumerate() {
        let ts = Timestamp::from_nanos(t0 + 1000 * i as u64);
        w.write_udp(
            iface,
            ts,
            TEST_SRC,
            TEST_DST,
            m.as_ref(),
            Direction::Outbound,
            None,
        )?;
    }
    w.into_inner()?;
    Ok(())
}

/// Whether the environment asks to skip tshark checks ([`SKIP_ENV`] = `1`) and may: under
/// `CI=true` only with `FERRODDS_ALLOW_SKIP=1` too (a CI run must not pass by skipping; the
/// same rule as `ferrodds_testkit::skip`).
pub fn skip_requested() -> bool {
    let ci = std::env::var("CI").as_deref() == Ok("true")
        && std::env::var("FERRODDS_ALLOW_SKIP").as_deref() != Ok("1");
    !ci && std::env::var_os(SKIP_ENV).is_some_and(|v| v == "1")
}

fn tshark_program() -> OsString {
    std::env::var_os("TSHARK").unwrap_or_else(|| OsString::from("tshark"))
}

/// Checks that tshark can run.
///
/// Returns `Ok(true)` when it can, `Ok(false)` (after printing a notice to
/// stderr) when it cannot but [`SKIP_ENV`] is `1`, and an error otherwise.
pub fn require_tshark() -> Result<bool, TsharkError> {
    let probe = Command::new(tshark_program())
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match probe {
        Ok(s) if s.success() => Ok(true),
        Ok(s) => {
            let e = io::Error::other(format!("`tshark --version` exited with {s}"));
            skip_or(e)
        }
        Err(e) => skip_or(e),
    }
}

fn skip_or(e: io::Error) -> Result<bool, TsharkError> {
    if skip_requested() {
        let line = format!("SKIPPED: tshark check: tshark unavailable ({e}) and {SKIP_ENV}=1");
        eprintln!("{line}");
        // Counted by scripts/test.sh (see `ferrodds_testkit::skip`).
        if let Some(log) = std::env::var_os("FERRODDS_SKIP_LOG") {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
            {
                let _ = f.write_all(format!("{line}\n").as_bytes());
            }
        }
        Ok(false)
    } else {
        Err(TsharkError::NotFound(e))
    }
}

/// Asserts that tshark decodes every frame of `path` with no malformed packet or warning
/// ([`tshark_check`]) and returns its report; `None` when tshark is missing and skipping is
/// allowed ([`require_tshark`]). Panics, failing the test, otherwise.
pub fn assert_tshark_clean(path: impl AsRef<Path>) -> Option<TsharkReport> {
    match require_tshark() {
        Ok(true) => {}
        Ok(false) => return None,
        Err(e) => panic!("tshark is required for this test ({e}); set {SKIP_ENV}=1 to skip"),
    }
    let report = tshark_check(path).expect("tshark");
    let issues = report.issues();
    assert!(issues.is_empty(), "tshark found problems: {issues:#?}");
    Some(report)
}

/// Decodes `path` with tshark using [`TsharkOptions::default`] (checksum
/// validation on): the check for files written by this crate.
pub fn tshark_check(path: impl AsRef<Path>) -> Result<TsharkReport, TsharkError> {
    tshark_check_with(path, &TsharkOptions::default())
}

/// Decodes `path` with tshark (two passes, no name resolution,
/// [`DEFAULT_PREFS`], then the options).
pub fn tshark_check_with(
    path: impl AsRef<Path>,
    opts: &TsharkOptions<'_>,
) -> Result<TsharkReport, TsharkError> {
    let mut cmd = Command::new(tshark_program());
    cmd.arg("-n")
        .arg("-2")
        .arg("-r")
        .arg(path.as_ref())
        .args(DEFAULT_PREFS);
    if opts.validate_checksums {
        cmd.args(CHECKSUM_PREFS);
    }
    cmd.args(opts.extra_args)
        .args(["-T", "fields", "-E", "separator=/t", "-E", "occurrence=a"])
        .arg(format!("-Eaggregator={AGGREGATOR}"));
    for f in FIELDS {
        cmd.args(["-e", f]);
    }
    let (status, stdout, stderr) = run_with_timeout(cmd, opts.timeout)?;
    if !status.success() {
        return Err(TsharkError::Failed { status, stderr });
    }
    parse_fields(&stdout)
}

fn run_with_timeout(
    mut cmd: Command,
    timeout: Duration,
) -> Result<(ExitStatus, String, String), TsharkError> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(TsharkError::NotFound)?;
    let mut out = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("no stdout pipe"))?;
    let mut err = child
        .stderr
        .take()
        .ok_or_else(|| io::Error::other("no stderr pipe"))?;
    let out_thread = thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).map(|_| s)
    });
    let err_thread = thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).map(|_| s)
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if Instant::now() >= deadline {
            // The child is ours; kill it by handle, then reap it.
            let _ = child.kill();
            let _ = child.wait();
            return Err(TsharkError::Timeout(timeout));
        }
        thread::sleep(Duration::from_millis(20));
    };
    let join = |h: thread::JoinHandle<io::Result<String>>| {
        h.join()
            .unwrap_or_else(|_| Err(io::Error::other("output reader thread panicked")))
    };
    let stdout = join(out_thread)?;
    let stderr = join(err_thread)?;
    Ok((status, stdout, stderr))
}

/// Parses the `-T fields` output produced with [`FIELDS`].
fn parse_fields(text: &str) -> Result<TsharkReport, TsharkError> {
    let mut packets = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() != FIELDS.len() {
            return Err(TsharkError::BadOutput(line.to_string()));
        }
        let bad = || TsharkError::BadOutput(line.to_string());
        let frame = cols[0].parse::<u32>().map_err(|_| bad())?;
        let protocols = cols[1]
            .split(':')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let submessage_ids = split(cols[2])
            .map(|s| {
                parse_int(s)
                    .and_then(|v| u8::try_from(v).ok())
                    .ok_or_else(bad)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let malformed = !cols[3].is_empty();
        let severities = split(cols[4])
            .map(|s| parse_int(s).ok_or_else(bad))
            .collect::<Result<Vec<_>, _>>()?;
        // Expert messages are free text (they may contain commas, e.g. packet comments):
        // split them on the aggregator only, so they stay paired with their severities.
        let messages: Vec<&str> = cols[5].split(AGGREGATOR).collect();
        let expert = severities
            .iter()
            .enumerate()
            .map(|(i, &sev)| ExpertInfo {
                severity: u32::try_from(sev)
                    .ok()
                    .and_then(Severity::from_wireshark)
                    .unwrap_or(Severity::Error),
                message: messages.get(i).copied().unwrap_or("").to_string(),
            })
            .collect();
        let reassembled_in = split(cols[6])
            .next()
            .map(|s| s.parse::<u32>().map_err(|_| bad()))
            .transpose()?;
        packets.push(TsharkPacket {
            frame,
            protocols,
            submessage_ids,
            malformed,
            expert,
            reassembled_in,
        });
    }
    Ok(TsharkReport { packets })
}

fn split(col: &str) -> impl Iterator<Item = &str> {
    col.split([AGGREGATOR, ',']).filter(|s| !s.is_empty())
}

fn parse_int(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_clean_and_malformed_lines() {
        let text = "1\teth:ethertype:ip:udp:rtps\t0x09\x1e0x07\t\t\t\t\n\
                    2\teth:ethertype:ip:udp:rtps\t0x07\t[Malformed Packet: RTPS]\x1e_ws.malformed\t8388608\tMalformed Packet (Exception occurred)\t\n\
                    3\teth:ethertype:ip:data\t\t\t\t\t4\n";
        let r = parse_fields(text).unwrap();
        assert_eq!(r.packets.len(), 3);
        assert_eq!(r.packets[0].submessage_ids, vec![0x09, 0x07]);
        assert!(r.packets[0].is_rtps());
        assert!(!r.packets[0].has_problem(Severity::Warning));
        assert!(r.packets[1].malformed);
        assert_eq!(r.packets[1].max_severity(), Some(Severity::Error));
        assert_eq!(
            r.packets[1].expert[0].message,
            "Malformed Packet (Exception occurred)"
        );
        assert_eq!(r.packets[2].reassembled_in, Some(4));
        // Frame 3's datagram is "reassembled" in a frame that does not exist.
        assert_eq!(r.non_rtps().len(), 1);
        assert_eq!(r.problems(Severity::Warning).len(), 1);
        assert_eq!(
            r.submessage_ids().into_iter().collect::<Vec<_>>(),
            vec![0x07, 0x09]
        );
        assert_eq!(r.issues().len(), 2);
    }

    #[test]
    fn fragment_reassembled_in_rtps_frame_counts_as_rtps() {
        let text = "1\teth:ethertype:ip:data\t\t\t\t\t2\n\
                    2\teth:ethertype:ip:udp:rtps\t0x15\t\t\t\t2\n";
        let r = parse_fields(text).unwrap();
        assert!(r.non_rtps().is_empty());
        assert!(r.issues().is_empty());
    }

    #[test]
    fn warning_severity_is_a_problem_note_is_not() {
        let text = "1\teth:ip:udp:rtps\t0x09\t\t4194304\x1e6291456\tnote\x1ewarn\t\n";
        let r = parse_fields(text).unwrap();
        let p = &r.packets[0];
        assert_eq!(p.expert.len(), 2);
        assert_eq!(p.expert[1].severity, Severity::Warning);
        assert!(p.has_problem(Severity::Warning));
        assert!(!p.has_problem(Severity::Error));
    }

    #[test]
    fn expert_messages_with_commas_stay_paired_with_their_severity() {
        let text = "1\teth:ip:udp:rtps\t0x09\t\t4194304\x1e6291456\tcomment: a, b\x1ewarn\t\n";
        let r = parse_fields(text).unwrap();
        let p = &r.packets[0];
        assert_eq!(p.expert.len(), 2);
        assert_eq!(p.expert[0].message, "comment: a, b");
        assert_eq!(p.expert[1].message, "warn");
        assert_eq!(p.expert[1].severity, Severity::Warning);
    }

    #[test]
    fn rejects_garbage_lines() {
        assert!(matches!(
            parse_fields("x\ty\n"),
            Err(TsharkError::BadOutput(_))
        ));
        assert!(matches!(
            parse_fields("1\ta\tzz\t\t\t\t\n"),
            Err(TsharkError::BadOutput(_))
        ));
        assert_eq!(parse_fields("").unwrap().packets.len(), 0);
    }
}
