//! The published network-capture command lines (RTI's suite: perftest `-pub|-sub -transport
//! UDPv4 -nic ADDR -noPrint -noOutputHeaders -noXML -networkCapture`, latency and throughput,
//! best effort, sizes 32 … 63000) run unchanged between two network namespaces joined by a veth
//! pair, 172.16.0.1 (publisher host) and 172.16.0.2 (subscriber host), which this test creates
//! and removes; `-peer` names the other host (no multicast between the namespaces) and
//! `-executionTime` bounds each run.
//!
//! Without `-doNotDropNetworkCapture` both processes report the frames they captured and delete
//! their file. With it, each keeps `rtiperftest_network_capture_<pub|sub>_0_<GUID prefix>.pcapng`
//! in its working directory, holding exactly the frames it reported, all between the two
//! namespace addresses, and tshark decodes every frame as RTPS with no malformed frame or
//! warning. Needs root (prints "SKIPPED:" otherwise) and tshark (`FERRODDS_SKIP_TSHARK=1`
//! skips only the tshark part).

mod common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{output_bounded, perftest, temp_dir};
use ferrodds_capture::testing::{require_tshark, tshark_check};
use ferrodds_capture::{read_udp_payloads, Direction};
use ferrodds_lab::testbed::{is_root, Impairments, Testbed};

/// One testbed at a time (its namespace names come from the process id).
static SERIAL: Mutex<()> = Mutex::new(());

const PUB_ADDR: &str = "172.16.0.1";
const SUB_ADDR: &str = "172.16.0.2";
/// Sizes run with the published lines as they are (capture file deleted at the end).
const SIZES: [u32; 3] = [32, 1024, 63000];
/// Sizes run again with `-doNotDropNetworkCapture`, whose files are checked.
const KEPT_SIZES: [u32; 2] = [32, 63000];
/// perftest `-executionTime` of every run, in seconds.
const EXECUTION_S: &str = "2";
/// Bound on each perftest process (a run takes about 5 s: discovery, 2 s, the end).
const PROCESS_LIMIT: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Latency,
    Throughput,
}

/// The published capture line of one side, as RTI's suite writes it.
fn published_line(role: &str, nic: &str) -> Vec<String> {
    [
        role,
        "-transport",
        "UDPv4",
        "-nic",
        nic,
        "-noPrint",
        "-noOutputHeaders",
        "-noXML",
        "-networkCapture",
    ]
    .map(String::from)
    .to_vec()
}

/// What one side of a run left behind.
struct Side {
    role: &'static str,
    own_addr: &'static str,
    dir: PathBuf,
    command: String,
    out: Output,
}

impl Side {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }

    /// Everything needed to understand a failure of this side.
    fn context(&self) -> String {
        format!(
            "{} ({}) in {}:\n$ {}\n--- stdout:\n{}--- stderr:\n{}",
            self.role,
            self.out.status,
            self.dir.display(),
            self.command,
            String::from_utf8_lossy(&self.out.stdout),
            self.stderr()
        )
    }

    /// Capture files (any `.pcapng`) in the side's working directory.
    fn pcapng_files(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "pcapng"))
            .collect();
        v.sort();
        v
    }
}

/// `ip netns exec NS perftest ARGS` run in `dir`, bounded by [`PROCESS_LIMIT`].
fn run_side(
    ns: &str,
    perftest: &Path,
    dir: &Path,
    role: &'static str,
    own_addr: &'static str,
    args: Vec<String>,
) -> Side {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns])
        .arg(perftest)
        .args(&args)
        .current_dir(dir);
    let command = format!(
        "cd {} && ip netns exec {ns} {} {}",
        dir.display(),
        perftest.display(),
        args.join(" ")
    );
    let out = output_bounded(&mut cmd, PROCESS_LIMIT);
    Side {
        role,
        own_addr,
        dir: dir.to_path_buf(),
        command,
        out,
    }
}

/// One publisher/subscriber pair with the published lines (plus `-peer`, `-bestEffort`,
/// `-dataLen`, `-executionTime`, `-latencyTest` in latency mode, and `extra`), each process in
/// a fresh working directory under `root`. Returns (publisher, subscriber).
fn run_pair(
    tb: &Testbed,
    perftest: &Path,
    root: &Path,
    mode: Mode,
    size: u32,
    extra: &[&str],
) -> (Side, Side) {
    let tag = format!(
        "{}-{size}{}",
        if mode == Mode::Latency { "lat" } else { "thr" },
        if extra.is_empty() { "" } else { "-kept" }
    );
    let pub_dir = root.join(format!("{tag}-pub"));
    let sub_dir = root.join(format!("{tag}-sub"));
    for d in [&pub_dir, &sub_dir] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).unwrap();
    }
    let size_s = size.to_string();
    let mut sub_args = published_line("-sub", SUB_ADDR);
    sub_args.extend(
        ["-peer", PUB_ADDR, "-bestEffort", "-dataLen", &size_s]
            .iter()
            .chain(extra)
            .map(|s| s.to_string()),
    );
    let mut pub_args = published_line("-pub", PUB_ADDR);
    pub_args.extend(
        [
            "-peer",
            SUB_ADDR,
            "-bestEffort",
            "-dataLen",
            &size_s,
            "-executionTime",
            EXECUTION_S,
        ]
        .iter()
        .chain(if mode == Mode::Latency {
            &["-latencyTest"][..]
        } else {
            &[][..]
        })
        .chain(extra)
        .map(|s| s.to_string()),
    );
    // Both at once (each finds the other through -peer); a panic (timeout) in either thread is
    // raised here with its own message.
    std::thread::scope(|s| {
        let sub = s.spawn(|| run_side(&tb.ns_sub, perftest, &sub_dir, "sub", SUB_ADDR, sub_args));
        let publ = s.spawn(|| run_side(&tb.ns_pub, perftest, &pub_dir, "pub", PUB_ADDR, pub_args));
        let join = |h: std::thread::ScopedJoinHandle<'_, Side>| {
            h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
        };
        let publ = join(publ);
        let sub = join(sub);
        (publ, sub)
    })
}

/// N from the end line `Network capture: N frames written, M dropped, file F ...`, and the
/// line; checks the start-up summary and the exit status too.
fn check_side(side: &Side) -> (u64, String) {
    assert!(side.out.status.success(), "{}", side.context());
    let stderr = side.stderr();
    assert!(
        stderr.contains("\tNetwork capture: Yes"),
        "no \"Network capture: Yes\" in the summary of {}",
        side.context()
    );
    let line = stderr
        .lines()
        .find(|l| l.starts_with("Network capture: ") && l.contains(" frames written, "))
        .unwrap_or_else(|| panic!("no capture end line from {}", side.context()))
        .to_string();
    let n: u64 = line["Network capture: ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no frame count in {line:?}: {}", side.context()));
    assert!(n > 0, "no frame captured: {}", side.context());
    (n, line)
}

/// The published lines as they are: the capture ran and its file is gone. Returns N and M
/// (frames dropped: allowed here, the capture drops when the disk falls behind).
fn check_deleted(side: &Side) -> (u64, u64) {
    let (n, line) = check_side(side);
    assert!(
        line.contains(" deleted (-doNotDropNetworkCapture keeps it)"),
        "{line}: {}",
        side.context()
    );
    assert_eq!(
        side.pcapng_files(),
        Vec::<PathBuf>::new(),
        "capture file left behind by {}",
        side.context()
    );
    let dropped = line
        .split(", ")
        .nth(1)
        .and_then(|d| d.strip_suffix(" dropped"))
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| panic!("no dropped count in {line:?}"));
    (n, dropped)
}

/// With `-doNotDropNetworkCapture`: the named file is kept, holds exactly the N frames reported
/// (none dropped, none the reader skips), all between the namespace addresses, the outbound
/// ones from this side's GUID prefix, and tshark finds no problem. Returns (N, GUID prefix).
fn check_kept(side: &Side, tshark: bool) -> (u64, String) {
    let (n, line) = check_side(side);
    assert!(
        line.contains(", 0 dropped, ") && line.ends_with(" kept"),
        "{line}: {}",
        side.context()
    );
    let files = side.pcapng_files();
    assert_eq!(files.len(), 1, "{files:?}: {}", side.context());
    let file = &files[0];
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(line.contains(name), "{line} does not name {name}");
    let prefix = format!("rtiperftest_network_capture_{}_0_", side.role);
    let guid = name
        .strip_prefix(&prefix)
        .and_then(|n| n.strip_suffix(".pcapng"))
        .unwrap_or_else(|| panic!("file name {name}, expected {prefix}<GUID prefix>.pcapng"));
    assert!(
        guid.len() == 24 && guid.bytes().all(|b| b.is_ascii_hexdigit()),
        "file name {name}: not a 24-hex-digit GUID prefix"
    );
    let c = read_udp_payloads(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert!(
        c.skipped.is_empty(),
        "{}: frames skipped by the reader: {:?}",
        file.display(),
        &c.skipped[..c.skipped.len().min(20)]
    );
    assert_eq!(
        c.datagrams.len() as u64,
        n,
        "{}: frames in the file vs reported ({line})",
        file.display()
    );
    let own: Ipv4Addr = side.own_addr.parse().unwrap();
    let ns_addrs: [Ipv4Addr; 2] = [PUB_ADDR.parse().unwrap(), SUB_ADDR.parse().unwrap()];
    let (mut outbound, mut inbound) = (0u64, 0u64);
    for d in &c.datagrams {
        let (src, dst) = (*d.src.ip(), *d.dst.ip());
        assert!(
            ns_addrs.contains(&src) && ns_addrs.contains(&dst) && src != dst,
            "{} frame {}: {} -> {} is not between the namespace addresses",
            file.display(),
            d.frame,
            d.src,
            d.dst
        );
        assert!(
            d.payload.starts_with(b"RTPS") && d.payload.len() >= 20,
            "{} frame {}: not an RTPS message",
            file.display(),
            d.frame
        );
        let sender: String = d.payload[8..20]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        match d.direction {
            Some(Direction::Outbound) => {
                outbound += 1;
                assert_eq!(
                    src,
                    own,
                    "{} frame {}: outbound source",
                    file.display(),
                    d.frame
                );
                assert_eq!(
                    sender,
                    guid,
                    "{} frame {}: outbound message of another participant",
                    file.display(),
                    d.frame
                );
            }
            Some(Direction::Inbound) => {
                inbound += 1;
                assert_eq!(
                    dst,
                    own,
                    "{} frame {}: inbound destination",
                    file.display(),
                    d.frame
                );
                assert_ne!(
                    sender,
                    guid,
                    "{} frame {}: inbound from itself",
                    file.display(),
                    d.frame
                );
            }
            other => panic!("{} frame {}: direction {other:?}", file.display(), d.frame),
        }
    }
    assert!(
        outbound > 0 && inbound > 0,
        "{}: {outbound} outbound, {inbound} inbound frames",
        file.display()
    );
    if tshark {
        let t = Instant::now();
        let report =
            tshark_check(file).unwrap_or_else(|e| panic!("tshark on {}: {e}", file.display()));
        let issues = report.issues();
        assert!(
            issues.is_empty(),
            "tshark found problems in {}: {:#?}",
            file.display(),
            &issues[..issues.len().min(20)]
        );
        println!(
            "  tshark: {} frames of {name}, no issue ({:.1} s)",
            report.packets.len(),
            t.elapsed().as_secs_f64()
        );
    }
    (n, guid.to_string())
}

fn namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect()
}

fn published_capture_lines(mode: Mode) {
    if !is_root() {
        ferrodds_testkit::skip("the namespace test needs root");
        return;
    }
    let tshark = match require_tshark() {
        Ok(t) => t,
        Err(e) => {
            panic!("tshark is required for this test ({e}); set FERRODDS_SKIP_TSHARK=1 to skip")
        }
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let perftest = perftest();
    let root = temp_dir(&format!("netcap-{mode:?}").to_lowercase());
    let start = Instant::now();
    let tb = Testbed::create_with_addresses(Impairments::default(), PUB_ADDR, SUB_ADDR)
        .expect("testbed");
    for size in SIZES {
        let (p, s) = run_pair(&tb, &perftest, &root, mode, size, &[]);
        let ((np, dp), (ns, ds)) = (check_deleted(&p), check_deleted(&s));
        println!(
            "{mode:?} {size} B: publisher {np} frames ({dp} dropped), subscriber {ns} frames \
             ({ds} dropped), files deleted"
        );
    }
    for size in KEPT_SIZES {
        let (p, s) = run_pair(
            &tb,
            &perftest,
            &root,
            mode,
            size,
            &["-doNotDropNetworkCapture"],
        );
        let (np, gp) = check_kept(&p, tshark);
        let (ns, gs) = check_kept(&s, tshark);
        assert_ne!(gp, gs, "both participants have GUID prefix {gp}");
        println!(
            "{mode:?} {size} B -doNotDropNetworkCapture: publisher {np} frames ({gp}), \
             subscriber {ns} frames ({gs}), kept and checked"
        );
    }
    let ours = [tb.ns_pub.clone(), tb.ns_sub.clone()];
    drop(tb);
    let left: Vec<String> = namespaces()
        .into_iter()
        .filter(|n| ours.contains(n))
        .collect();
    assert!(left.is_empty(), "testbed namespaces left behind: {left:?}");
    println!("{mode:?}: {:.1} s", start.elapsed().as_secs_f64());
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn published_latency_capture_lines_between_namespaces() {
    published_capture_lines(Mode::Latency);
}

#[test]
fn published_throughput_capture_lines_between_namespaces() {
    published_capture_lines(Mode::Throughput);
}
