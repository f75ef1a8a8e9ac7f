//! Multicast discovery end to end: two FerroDDS participants with multicast on and **no**
//! initial peers find each other through SPDP multicast (239.255.0.1) and exchange reliable
//! and best-effort samples.
//!
//! The outer run creates two network namespaces ("hosts") joined by a veth pair with private
//! addresses, routes 224.0.0.0/4 over the veth in each, and re-executes this test binary
//! once in each namespace (`FERRODDS_MC_NETNS_ROLE=publisher|subscriber`). Each process
//! only sees its own namespace, so everything the participants exchange crosses the veth;
//! nothing is ever sent on the machine's real interfaces. The namespaces are deleted when
//! the test ends, also on failure. Without root (or without `ip netns`) the test prints
//! `SKIPPED: ...` and passes.
//!
//! Protocol of the two inner runs:
//! 1. both wait to discover exactly one remote participant and print `PREFIX own=… remote=…`
//!    (the outer run cross-checks the two lines);
//! 2. the subscriber, once its readers matched, writes `READY` (seq 0) on a reliable control
//!    topic;
//! 3. the publisher then writes 300 reliable and 200 best-effort samples, waits for the
//!    reliable ones to be acknowledged, and waits for `DONE` (seq 1) on the control topic;
//! 4. the subscriber checks count, order and content of both streams, then writes `DONE`.

mod common;

use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::{payload_for, test_data, with_timeout};
use ferrodds::cdr::types::TestData;
use ferrodds::{
    Config, DataReader, DataReaderQos, DataWriterQos, DomainParticipant, GuidPrefix, Interface,
    PublisherQos, SubscriberQos, TopicQos,
};

const ROLE_ENV: &str = "FERRODDS_MC_NETNS_ROLE";
const PUBLISHER: &str = "publisher";
const SUBSCRIBER: &str = "subscriber";
const TEST_NAME: &str = "multicast_discovery_and_delivery_across_veth";

const ADDR_A: Ipv4Addr = Ipv4Addr::new(10, 231, 78, 1);
const ADDR_B: Ipv4Addr = Ipv4Addr::new(10, 231, 78, 2);
/// Interface names inside the namespaces (each namespace has its own name space for links).
const DEV_A: &str = "mc-veth-a";
const DEV_B: &str = "mc-veth-b";

const RELIABLE_SAMPLES: u32 = 300;
const BEST_EFFORT_SAMPLES: u32 = 200;
/// Time bound of one inner run.
const INNER_SECS: u64 = 60;
/// Time bound of the whole test (both inner runs plus namespace set-up).
const OUTER_SECS: u64 = 120;
/// Longest wait for discovery, matching or data inside an inner run.
const WAIT: Duration = Duration::from_secs(20);

const SEQ_READY: u32 = 0;
const SEQ_DONE: u32 = 1;

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

fn run_ok(args: &[&str]) -> Result<(), String> {
    let o = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ip {args:?}: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {args:?}: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

/// Two namespaces joined by a veth pair; both deleted on drop (deleting a namespace also
/// deletes the veth end inside it, and with it the peer).
struct Hosts {
    a: String,
    b: String,
}

impl Hosts {
    fn create() -> Result<Hosts, String> {
        let id = std::process::id();
        let a = format!("fdds-mc-a-{id}");
        let b = format!("fdds-mc-b-{id}");
        run_ok(&["netns", "add", &a])?;
        let hosts = Hosts { a, b };
        run_ok(&["netns", "add", &hosts.b])?;
        // Create the pair inside namespace a so no link ever appears in the root namespace.
        run_ok(&[
            "-n", &hosts.a, "link", "add", DEV_A, "type", "veth", "peer", "name", DEV_B, "netns",
            &hosts.b,
        ])?;
        for (ns, dev, addr) in [(&hosts.a, DEV_A, ADDR_A), (&hosts.b, DEV_B, ADDR_B)] {
            run_ok(&["-n", ns, "link", "set", "lo", "up"])?;
            run_ok(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
            run_ok(&["-n", ns, "link", "set", dev, "multicast", "on"])?;
            run_ok(&["-n", ns, "link", "set", dev, "up"])?;
            run_ok(&["-n", ns, "route", "add", "224.0.0.0/4", "dev", dev])?;
        }
        Ok(hosts)
    }
}

impl Hosts {
    /// Adds an nftables rule in each namespace counting SPDP multicast datagrams
    /// (239.255.0.1:7400) that arrive **over the veth**. Returns `false` (after saying so)
    /// when nftables is not usable here; the test then relies on discovery alone.
    fn count_spdp_multicast(&self) -> bool {
        for (ns, dev) in [(&self.a, DEV_A), (&self.b, DEV_B)] {
            let steps: [&[&str]; 3] = [
                &["add", "table", "ip", "fdds_mc"],
                &[
                    "add",
                    "chain",
                    "ip",
                    "fdds_mc",
                    "input",
                    "{ type filter hook input priority 0; policy accept; }",
                ],
                &[
                    "add",
                    "rule",
                    "ip",
                    "fdds_mc",
                    "input",
                    "iifname",
                    dev,
                    "ip",
                    "daddr",
                    "239.255.0.1",
                    "udp",
                    "dport",
                    "7400",
                    "counter",
                ],
            ];
            for step in steps {
                let mut args = vec!["netns", "exec", ns.as_str(), "nft"];
                args.extend_from_slice(step);
                if let Err(e) = run_ok(&args) {
                    eprintln!("nftables unavailable ({e}); not counting multicast datagrams");
                    return false;
                }
            }
        }
        true
    }

    /// SPDP multicast datagrams counted arriving over the veth in namespace `ns`.
    fn spdp_multicast_received(ns: &str) -> u64 {
        let out = Command::new("ip")
            .args(["netns", "exec", ns, "nft", "list", "table", "ip", "fdds_mc"])
            .stdin(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let mut words = out.split_whitespace();
        while let Some(w) = words.next() {
            if w == "packets" {
                return words.next().and_then(|v| v.parse().ok()).unwrap_or(0);
            }
        }
        0
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// A re-executed copy of this test binary running the inner role in a namespace.
struct InnerRun {
    role: &'static str,
    pid: u32,
    lines: mpsc::Receiver<String>,
    done: mpsc::Receiver<std::io::Result<ExitStatus>>,
    /// Set once the child is known to have exited (it is then never killed).
    exited: bool,
}

impl InnerRun {
    fn spawn(ns: &str, role: &'static str) -> Self {
        let exe = std::env::current_exe().expect("current test binary");
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns])
            .arg(exe)
            .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
            .env(ROLE_ENV, role)
            .env_remove("FERRODDS_INTERFACE")
            .env_remove("FERRODDS_PEERS")
            .env_remove("FERRODDS_MULTICAST")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn inner test run");
        let pid = child.id();
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().expect("stdout");
        let err = child.stderr.take().expect("stderr");
        for stream in [
            Box::new(out) as Box<dyn std::io::Read + Send>,
            Box::new(err),
        ] {
            let tx = tx.clone();
            thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        let (done_tx, done) = mpsc::channel();
        thread::spawn(move || {
            let _ = done_tx.send(child.wait());
        });
        Self {
            role,
            pid,
            lines,
            done,
            exited: false,
        }
    }

    fn kill(&self) {
        let _ = Command::new("kill")
            .args(["-9", &self.pid.to_string()])
            .status();
    }

    /// Waits (bounded) for the run to exit; returns whether it succeeded and its output.
    fn finish(mut self, deadline: Instant) -> (bool, String) {
        let left = deadline.saturating_duration_since(Instant::now());
        let ok = match self.done.recv_timeout(left) {
            Ok(Ok(status)) => {
                self.exited = true;
                status.success()
            }
            Ok(Err(e)) => {
                self.exited = true;
                eprintln!("{}: wait failed: {e}", self.role);
                false
            }
            Err(_) => {
                self.kill();
                eprintln!("{}: inner run timed out; killed", self.role);
                self.exited = self.done.recv_timeout(Duration::from_secs(5)).is_ok();
                false
            }
        };
        let mut out = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
            out.push(line);
        }
        (ok, out.join("\n"))
    }
}

impl Drop for InnerRun {
    fn drop(&mut self) {
        // A run still going when the test unwinds must not outlive its namespace.
        if !self.exited && self.done.try_recv().is_err() {
            self.kill();
        }
    }
}

fn prefix_hex(p: GuidPrefix) -> String {
    p.0.iter().map(|b| format!("{b:02x}")).collect()
}

/// Extracts `(own, remote)` from the `PREFIX own=<hex> remote=<hex>` line of an inner run.
fn prefixes(output: &str) -> Option<(String, String)> {
    // The harness may print the test name on the same line first.
    let line = output
        .lines()
        .find_map(|l| l.find("PREFIX own=").map(|i| &l[i + "PREFIX ".len()..]))?;
    let mut own = None;
    let mut remote = None;
    for word in line.split_whitespace() {
        if let Some(v) = word.strip_prefix("own=") {
            own = Some(v.to_owned());
        } else if let Some(v) = word.strip_prefix("remote=") {
            remote = Some(v.to_owned());
        }
    }
    Some((own?, remote?))
}

/// Multicast on, no initial peers, the veth interface of this namespace.
fn inner_config(dev: &str) -> Config {
    Config::default()
        .interface(Interface::Name(dev.to_owned()))
        .multicast(true)
        .initial_peers(Vec::new())
        .spdp_period(Duration::from_millis(500))
        .lease_duration(Duration::from_secs(10))
}

/// Discovers exactly one remote participant (multicast is the only way: no peers are
/// configured) and prints the `PREFIX` line.
fn discover(p: &DomainParticipant) {
    assert!(
        p.wait_for_participants(1, WAIT),
        "no participant discovered through SPDP multicast"
    );
    let found = p.discovered_participants();
    assert_eq!(found.len(), 1, "exactly one remote participant: {found:?}");
    println!(
        "PREFIX own={} remote={}",
        prefix_hex(p.guid_prefix()),
        prefix_hex(found[0])
    );
}

fn topics(
    p: &DomainParticipant,
) -> (
    ferrodds::Topic<TestData>,
    ferrodds::Topic<TestData>,
    ferrodds::Topic<TestData>,
) {
    (
        p.create_topic::<TestData>("mc_reliable", TopicQos::default())
            .unwrap(),
        p.create_topic::<TestData>("mc_best_effort", TopicQos::default())
            .unwrap(),
        p.create_topic::<TestData>("mc_control", TopicQos::default())
            .unwrap(),
    )
}

fn reliable_writer_qos() -> DataWriterQos {
    DataWriterQos::default()
        .keep_all()
        .reliable()
        .max_blocking_time(Duration::from_secs(5))
}

/// Takes until `n` valid samples arrived or `WAIT` passed.
fn collect(reader: &DataReader<TestData>, n: usize) -> Vec<TestData> {
    let deadline = Instant::now() + WAIT;
    let mut out = Vec::new();
    while out.len() < n && Instant::now() < deadline {
        let _ = reader.wait_for_data(Duration::from_millis(100));
        out.extend(reader.take().unwrap().into_iter().filter_map(|s| s.data));
    }
    out
}

fn check_stream(what: &str, got: &[TestData], n: u32) {
    let seqs: Vec<u32> = got.iter().map(|d| d.seq_num).collect();
    assert_eq!(got.len(), n as usize, "{what}: sample count; got {seqs:?}");
    for (i, d) in got.iter().enumerate() {
        assert_eq!(d.seq_num, i as u32, "{what}: order");
        assert_eq!(d.bin_data, payload_for(d.seq_num), "{what}: content");
        assert_eq!(d.entity_id, 7, "{what}: content");
    }
}

/// Waits for control sample `seq` from the other side.
fn wait_control(reader: &DataReader<TestData>, seq: u32) {
    let got = collect(reader, 1);
    assert_eq!(
        got.iter().map(|d| d.seq_num).collect::<Vec<_>>(),
        vec![seq],
        "control message"
    );
}

fn publisher() {
    let p = DomainParticipant::with_config(0, inner_config(DEV_A)).expect("participant");
    let (rel, be, ctl) = topics(&p);
    let publ = p.create_publisher(PublisherQos::default()).unwrap();
    let w_rel = publ.create_datawriter(&rel, reliable_writer_qos()).unwrap();
    let w_be = publ
        .create_datawriter(&be, DataWriterQos::default().keep_all().best_effort())
        .unwrap();
    let r_ctl = p
        .create_subscriber(SubscriberQos::default())
        .unwrap()
        .create_datareader(&ctl, DataReaderQos::default().keep_all().reliable())
        .unwrap();
    discover(&p);
    assert!(w_rel.wait_for_matched(1, WAIT), "reliable writer matched");
    assert!(w_be.wait_for_matched(1, WAIT), "best-effort writer matched");
    assert!(r_ctl.wait_for_matched(1, WAIT), "control reader matched");
    wait_control(&r_ctl, SEQ_READY);
    println!("MATCHED");

    for i in 0..RELIABLE_SAMPLES {
        w_rel.write(&test_data(i)).unwrap();
    }
    for i in 0..BEST_EFFORT_SAMPLES {
        w_be.write(&test_data(i)).unwrap();
        if i % 20 == 19 {
            thread::sleep(Duration::from_millis(2));
        }
    }
    w_rel
        .wait_for_acknowledgments(WAIT)
        .expect("reliable samples acknowledged");
    wait_control(&r_ctl, SEQ_DONE);
    println!("PUBLISHER DONE");
}

fn subscriber() {
    let p = DomainParticipant::with_config(0, inner_config(DEV_B)).expect("participant");
    let (rel, be, ctl) = topics(&p);
    let sub = p.create_subscriber(SubscriberQos::default()).unwrap();
    let r_rel = sub
        .create_datareader(&rel, DataReaderQos::default().keep_all().reliable())
        .unwrap();
    let r_be = sub
        .create_datareader(&be, DataReaderQos::default().keep_all().best_effort())
        .unwrap();
    let w_ctl = p
        .create_publisher(PublisherQos::default())
        .unwrap()
        .create_datawriter(&ctl, reliable_writer_qos())
        .unwrap();
    discover(&p);
    assert!(r_rel.wait_for_matched(1, WAIT), "reliable reader matched");
    assert!(r_be.wait_for_matched(1, WAIT), "best-effort reader matched");
    assert!(w_ctl.wait_for_matched(1, WAIT), "control writer matched");
    w_ctl.write(&test_data(SEQ_READY)).unwrap();

    let got_rel = collect(&r_rel, RELIABLE_SAMPLES as usize);
    let got_be = collect(&r_be, BEST_EFFORT_SAMPLES as usize);
    check_stream("reliable", &got_rel, RELIABLE_SAMPLES);
    check_stream("best-effort", &got_be, BEST_EFFORT_SAMPLES);
    // Nothing extra arrives later.
    thread::sleep(Duration::from_millis(200));
    assert!(r_rel.take().unwrap().is_empty(), "extra reliable samples");
    assert!(r_be.take().unwrap().is_empty(), "extra best-effort samples");
    println!(
        "RECEIVED reliable={} best_effort={}",
        got_rel.len(),
        got_be.len()
    );

    w_ctl.write(&test_data(SEQ_DONE)).unwrap();
    w_ctl
        .wait_for_acknowledgments(WAIT)
        .expect("DONE acknowledged");
    println!("SUBSCRIBER DONE");
}

#[test]
fn multicast_discovery_and_delivery_across_veth() {
    match std::env::var(ROLE_ENV).as_deref() {
        Ok(PUBLISHER) => return with_timeout(INNER_SECS, publisher),
        Ok(SUBSCRIBER) => return with_timeout(INNER_SECS, subscriber),
        Ok(other) => panic!("unexpected {ROLE_ENV}={other:?}"),
        Err(_) => {}
    }
    if !is_root() {
        ferrodds_testkit::skip("needs root for network namespaces (not running as root)");
        return;
    }
    with_timeout(OUTER_SECS, || {
        let hosts = match Hosts::create() {
            Ok(h) => h,
            Err(e) => {
                ferrodds_testkit::skip(&format!("could not create network namespaces: {e}"));
                return;
            }
        };
        let counting = hosts.count_spdp_multicast();
        let deadline = Instant::now() + Duration::from_secs(INNER_SECS + 15);
        let sub = InnerRun::spawn(&hosts.b, SUBSCRIBER);
        let publ = InnerRun::spawn(&hosts.a, PUBLISHER);
        let (pub_ok, pub_out) = publ.finish(deadline);
        let (sub_ok, sub_out) = sub.finish(deadline);
        let multicast_in = (
            Hosts::spdp_multicast_received(&hosts.a),
            Hosts::spdp_multicast_received(&hosts.b),
        );
        drop(hosts);
        let both = format!("--- publisher:\n{pub_out}\n--- subscriber:\n{sub_out}");
        assert!(pub_ok && sub_ok, "inner runs failed:\n{both}");
        for out in [&pub_out, &sub_out] {
            assert!(
                out.contains("test result: ok. 1 passed"),
                "inner run did not run exactly one test:\n{both}"
            );
        }
        let (pub_own, pub_remote) =
            prefixes(&pub_out).unwrap_or_else(|| panic!("publisher PREFIX line:\n{both}"));
        let (sub_own, sub_remote) =
            prefixes(&sub_out).unwrap_or_else(|| panic!("subscriber PREFIX line:\n{both}"));
        assert_ne!(pub_own, sub_own);
        assert_eq!(pub_remote, sub_own, "publisher discovered the subscriber");
        assert_eq!(sub_remote, pub_own, "subscriber discovered the publisher");
        assert!(
            sub_out.contains(&format!(
                "RECEIVED reliable={RELIABLE_SAMPLES} best_effort={BEST_EFFORT_SAMPLES}"
            )),
            "{both}"
        );
        assert!(pub_out.contains("PUBLISHER DONE"), "{both}");
        if counting {
            eprintln!("SPDP multicast datagrams received over the veth (a, b): {multicast_in:?}");
            assert!(
                multicast_in.0 > 0 && multicast_in.1 > 0,
                "SPDP multicast must have crossed the veth both ways: {multicast_in:?}"
            );
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_line_parses() {
        let out = "x\ntest t ... PREFIX own=0a0b remote=0c0d\ny";
        assert_eq!(prefixes(out), Some(("0a0b".into(), "0c0d".into())));
        assert_eq!(prefixes("PREFIX own=0a0b"), None);
        assert_eq!(prefixes("nothing"), None);
        let p = GuidPrefix([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255]);
        assert_eq!(prefix_hex(p), "000102030405060708090aff");
    }
}
