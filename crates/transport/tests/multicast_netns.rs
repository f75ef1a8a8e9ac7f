//! Multicast tests (and a large unicast datagram over veth), run only inside network namespaces
//! each test creates for itself (never on a real interface).
//!
//! The outer run creates `ferrodds-test-<pid>-<n>`, brings its `lo` up with multicast and a
//! 224.0.0.0/4 route, then re-executes this test binary inside it with
//! `FERRODDS_TRANSPORT_NETNS_INNER=1`, which runs the test body. The namespace is deleted
//! afterwards, also on failure. Without root (or without `ip netns`) the test prints
//! `SKIPPED: needs root for network namespaces` and passes.

mod common;

use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::{collector, WAIT};
use ferrodds_transport::{InterfaceSelector, TrafficKind, UdpConfig, UdpLocator, UdpTransport};

const INNER_ENV: &str = "FERRODDS_TRANSPORT_NETNS_INNER";
const CHILD_TIMEOUT: Duration = Duration::from_secs(60);
const ROLE_SENDER: &str = "sender";
const ROLE_RECEIVER: &str = "receiver";

static NS_COUNTER: AtomicU32 = AtomicU32::new(0);

fn is_inner() -> bool {
    std::env::var_os(INNER_ENV).is_some()
}

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

/// Deletes the namespace when dropped.
struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.0])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Creates a fresh namespace with `lo` up, or `None` (after printing the skip line) when this
/// process may not.
fn new_netns() -> Option<Netns> {
    if !is_root() {
        ferrodds_testkit::skip("needs root for network namespaces (not running as root)");
        return None;
    }
    let name = format!(
        "ferrodds-test-{}-{}",
        std::process::id(),
        NS_COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    match Command::new("ip").args(["netns", "add", &name]).output() {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            ferrodds_testkit::skip(&format!(
                "needs root for network namespaces (ip netns add: {})",
                String::from_utf8_lossy(&o.stderr).trim()
            ));
            return None;
        }
        Err(e) => {
            ferrodds_testkit::skip(&format!("needs root for network namespaces (ip: {e})"));
            return None;
        }
    }
    let ns = Netns(name);
    ip(&ns, &["link", "set", "lo", "up"]);
    Some(ns)
}

fn ip(ns: &Netns, args: &[&str]) {
    let out = Command::new("ip")
        .arg("-n")
        .arg(&ns.0)
        .args(args)
        .output()
        .expect("run ip");
    assert!(
        out.status.success(),
        "ip -n {} {args:?} failed: {}",
        ns.0,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A re-executed copy of this test binary running one test inside a namespace.
struct Inner {
    test_name: String,
    pid: u32,
    lines: mpsc::Receiver<String>,
    done: mpsc::Receiver<std::io::Result<std::process::ExitStatus>>,
    output: Vec<String>,
}

impl Inner {
    fn spawn(ns: &Netns, test_name: &str, role: &str) -> Self {
        let exe = std::env::current_exe().expect("current test binary");
        let mut child = Command::new("ip")
            .args(["netns", "exec", &ns.0])
            .arg(exe)
            .args(["--exact", test_name, "--nocapture", "--test-threads=1"])
            .env(INNER_ENV, role)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn inner test run");
        let pid = child.id();
        let (line_tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        for stream in [
            Box::new(stdout) as Box<dyn std::io::Read + Send>,
            Box::new(stderr),
        ] {
            let tx = line_tx.clone();
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
            test_name: test_name.to_owned(),
            pid,
            lines,
            done,
            output: Vec::new(),
        }
    }

    fn kill(&self) {
        let _ = Command::new("kill")
            .args(["-9", &self.pid.to_string()])
            .status();
    }

    /// Waits until the child prints a line ending with `marker`.
    fn wait_for_line(&mut self, marker: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let hit = line.trim().ends_with(marker);
                    self.output.push(line);
                    if hit {
                        return;
                    }
                }
                Err(_) => {
                    self.kill();
                    panic!(
                        "{}: no {marker:?} line within {timeout:?}:\n{}",
                        self.test_name,
                        self.output.join("\n")
                    );
                }
            }
        }
    }

    /// Waits for the child to exit and asserts that it ran exactly one test, successfully.
    fn finish(mut self) {
        let status = match self.done.recv_timeout(CHILD_TIMEOUT) {
            Ok(status) => status.expect("wait for inner run"),
            Err(_) => {
                self.kill();
                panic!("inner run of {} timed out", self.test_name);
            }
        };
        // The reader threads end at EOF, shortly after exit.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.output.push(line);
        }
        let out = self.output.join("\n");
        assert!(
            status.success(),
            "inner run of {} failed ({status}):\n{out}",
            self.test_name
        );
        // Guard against a filter that matched nothing.
        assert!(
            out.contains("test result: ok. 1 passed"),
            "inner run did not run exactly one test:\n{out}"
        );
    }
}

/// Runs the test named `test_name` inside a fresh namespace whose `lo` carries multicast;
/// returns after it passed there.
fn run_in_netns(test_name: &str) {
    let Some(ns) = new_netns() else { return };
    ip(&ns, &["link", "set", "lo", "multicast", "on"]);
    ip(&ns, &["route", "add", "224.0.0.0/4", "dev", "lo"]);
    Inner::spawn(&ns, test_name, "1").finish();
    drop(ns);
}

fn mc_config(domain_id: u32) -> UdpConfig {
    UdpConfig {
        interface: InterfaceSelector::Name("lo".into()),
        multicast_enabled: true,
        ..UdpConfig::new(domain_id)
    }
}

#[test]
fn spdp_and_user_multicast_in_netns() {
    if !is_inner() {
        return run_in_netns("spdp_and_user_multicast_in_netns");
    }
    let a = UdpTransport::new(&mc_config(0)).unwrap();
    let b = UdpTransport::new(&mc_config(0)).unwrap();
    assert_ne!(a.participant_id(), b.participant_id());
    let group = Ipv4Addr::new(239, 255, 0, 1);
    assert_eq!(
        a.metatraffic_multicast_locators(),
        &[UdpLocator::new(group, 7400)]
    );
    assert_eq!(
        a.default_multicast_locators(),
        &[UdpLocator::new(group, 7401)]
    );
    assert_eq!(a.receivers().len(), 4);
    assert_eq!(
        a.metatraffic_unicast_locators()[0].ip(),
        Ipv4Addr::LOCALHOST
    );

    let a_meta_mc = collector(&a, TrafficKind::Metatraffic, true);
    let b_meta_mc = collector(&b, TrafficKind::Metatraffic, true);
    let a_user_mc = collector(&a, TrafficKind::UserData, true);
    let b_user_mc = collector(&b, TrafficKind::UserData, true);
    let b_meta_uc = collector(&b, TrafficKind::Metatraffic, false);

    // SPDP announcement from A reaches both participants (multicast loop is on).
    let spdp = a.metatraffic_multicast_locators()[0].socket_addr();
    a.send_to(spdp, b"spdp-announce").unwrap();
    for c in [&a_meta_mc, &b_meta_mc] {
        let (got, bytes) = c.next(WAIT).expect("SPDP multicast arrives");
        assert_eq!(bytes, b"spdp-announce");
        assert!(got.multicast);
        assert_eq!(got.kind, TrafficKind::Metatraffic);
        assert_eq!(got.local_port, 7400);
        assert_eq!(got.dst, spdp);
        assert_eq!(got.src.port(), a.source_port());
    }

    // User-data multicast from B lands on the user multicast sockets only.
    let user = b.default_multicast_locators()[0].socket_addr();
    b.send_to(user, b"user-sample").unwrap();
    for c in [&a_user_mc, &b_user_mc] {
        let (got, bytes) = c.next(WAIT).expect("user multicast arrives");
        assert_eq!(bytes, b"user-sample");
        assert!(got.multicast);
        assert_eq!(got.kind, TrafficKind::UserData);
        assert_eq!(got.local_port, 7401);
        assert_eq!(got.dst, user);
    }
    // Each datagram exactly once per socket, and none on the wrong ports.
    thread::sleep(Duration::from_millis(200));
    for c in [&a_meta_mc, &b_meta_mc, &a_user_mc, &b_user_mc, &b_meta_uc] {
        assert!(c.next(Duration::from_millis(1)).is_none());
    }
}

#[test]
fn other_group_is_not_received_in_netns() {
    if !is_inner() {
        return run_in_netns("other_group_is_not_received_in_netns");
    }
    let a = UdpTransport::new(&mc_config(3)).unwrap();
    let mut other = mc_config(3);
    other.multicast_group = Ipv4Addr::new(239, 255, 0, 9);
    let b = UdpTransport::new(&other).unwrap();
    assert_eq!(
        b.metatraffic_multicast_locators()[0].ip(),
        other.multicast_group
    );
    let a_meta_mc = collector(&a, TrafficKind::Metatraffic, true);
    let b_meta_mc = collector(&b, TrafficKind::Metatraffic, true);

    b.send_to(b.metatraffic_multicast_locators()[0].socket_addr(), b"to-9")
        .unwrap();
    let (_, bytes) = b_meta_mc.next(WAIT).expect("own group arrives");
    assert_eq!(bytes, b"to-9");
    a.send_to(a.metatraffic_multicast_locators()[0].socket_addr(), b"to-1")
        .unwrap();
    let (_, bytes) = a_meta_mc.next(WAIT).expect("own group arrives");
    assert_eq!(bytes, b"to-1");
    thread::sleep(Duration::from_millis(200));
    assert!(a_meta_mc.next(Duration::from_millis(1)).is_none());
    assert!(b_meta_mc.next(Duration::from_millis(1)).is_none());
}

#[test]
fn multicast_shutdown_unblocks_in_netns() {
    if !is_inner() {
        return run_in_netns("multicast_shutdown_unblocks_in_netns");
    }
    let t = UdpTransport::new(&mc_config(5)).unwrap();
    let collectors: Vec<_> = t
        .receivers()
        .into_iter()
        .map(common::Collector::spawn)
        .collect();
    thread::sleep(Duration::from_millis(100));
    let start = Instant::now();
    drop(t);
    for c in collectors {
        c.handle.join().unwrap().unwrap();
    }
    assert!(start.elapsed() < Duration::from_secs(1));
}

const VETH_A: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const VETH_B: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
const VETH_TEST: &str = "multicast_leaves_through_the_chosen_interface_across_veth";

/// Two namespaces ("hosts") joined by a veth pair. In the sender's namespace the multicast
/// route points at `lo`, so only `IP_MULTICAST_IF` makes the SPDP datagrams leave through
/// `veth-a`; the sender has multicast loop off and must not hear itself.
#[test]
fn multicast_leaves_through_the_chosen_interface_across_veth() {
    match std::env::var(INNER_ENV).as_deref() {
        Ok(ROLE_SENDER) => return veth_sender(),
        Ok(ROLE_RECEIVER) => return veth_receiver(),
        Ok(other) => panic!("unexpected role {other:?}"),
        Err(_) => {}
    }
    let Some(ns_a) = new_netns() else { return };
    let Some(ns_b) = new_netns() else { return };
    ip(
        &ns_a,
        &[
            "link", "add", "veth-a", "type", "veth", "peer", "name", "veth-b", "netns", &ns_b.0,
        ],
    );
    ip(&ns_a, &["addr", "add", "198.18.0.1/24", "dev", "veth-a"]);
    ip(&ns_a, &["link", "set", "veth-a", "up"]);
    ip(&ns_a, &["link", "set", "lo", "multicast", "on"]);
    ip(&ns_a, &["route", "add", "224.0.0.0/4", "dev", "lo"]);
    ip(&ns_b, &["addr", "add", "198.18.0.2/24", "dev", "veth-b"]);
    ip(&ns_b, &["link", "set", "veth-b", "up"]);
    ip(&ns_b, &["route", "add", "224.0.0.0/4", "dev", "veth-b"]);

    let mut receiver = Inner::spawn(&ns_b, VETH_TEST, ROLE_RECEIVER);
    receiver.wait_for_line("READY", Duration::from_secs(20));
    let sender = Inner::spawn(&ns_a, VETH_TEST, ROLE_SENDER);
    sender.finish();
    receiver.finish();
}

fn veth_config(interface: &str) -> UdpConfig {
    UdpConfig {
        interface: InterfaceSelector::Name(interface.into()),
        multicast_enabled: true,
        ..UdpConfig::new(0)
    }
}

fn veth_receiver() {
    let t = UdpTransport::new(&veth_config("veth-b")).unwrap();
    assert_eq!(t.metatraffic_unicast_locators()[0].ip(), VETH_B);
    let meta = collector(&t, TrafficKind::Metatraffic, true);
    println!("READY");
    let (got, bytes) = meta
        .next(Duration::from_secs(10))
        .expect("SPDP multicast from the other namespace");
    assert_eq!(bytes, b"veth-spdp");
    assert_eq!(*got.src.ip(), VETH_A);
    assert!(got.multicast);
    assert_eq!(got.local_port, 7400);
}

fn veth_sender() {
    let mut cfg = veth_config("veth-a");
    cfg.multicast_loop = false;
    let t = UdpTransport::new(&cfg).unwrap();
    assert_eq!(t.default_unicast_locators()[0].ip(), VETH_A);
    let own = collector(&t, TrafficKind::Metatraffic, true);
    let dst = t.metatraffic_multicast_locators()[0].socket_addr();
    for _ in 0..40 {
        t.send_to(dst, b"veth-spdp").unwrap();
        thread::sleep(Duration::from_millis(50));
    }
    assert!(
        own.next(Duration::from_millis(100)).is_none(),
        "multicast loop is off: the sender must not receive its own datagrams"
    );
}

const VETH_LARGE_TEST: &str = "large_unicast_datagram_is_fragmented_across_veth";
const LARGE: usize = 60_000;

/// A unicast datagram far above the veth MTU (1500) leaves through the sender's connected
/// send socket in IP fragments (`IP_PMTUDISC_WANT`: DF only on datagrams that fit) and is
/// reassembled by the receiver.
#[test]
fn large_unicast_datagram_is_fragmented_across_veth() {
    match std::env::var(INNER_ENV).as_deref() {
        Ok(ROLE_SENDER) => return large_sender(),
        Ok(ROLE_RECEIVER) => return large_receiver(),
        Ok(other) => panic!("unexpected role {other:?}"),
        Err(_) => {}
    }
    let Some(ns_a) = new_netns() else { return };
    let Some(ns_b) = new_netns() else { return };
    ip(
        &ns_a,
        &[
            "link", "add", "veth-a", "type", "veth", "peer", "name", "veth-b", "netns", &ns_b.0,
        ],
    );
    ip(&ns_a, &["addr", "add", "198.18.0.1/24", "dev", "veth-a"]);
    ip(&ns_a, &["link", "set", "veth-a", "mtu", "1500", "up"]);
    ip(&ns_b, &["addr", "add", "198.18.0.2/24", "dev", "veth-b"]);
    ip(&ns_b, &["link", "set", "veth-b", "mtu", "1500", "up"]);

    let mut receiver = Inner::spawn(&ns_b, VETH_LARGE_TEST, ROLE_RECEIVER);
    receiver.wait_for_line("READY", Duration::from_secs(20));
    let sender = Inner::spawn(&ns_a, VETH_LARGE_TEST, ROLE_SENDER);
    sender.finish();
    receiver.finish();
}

fn unicast_veth_config(interface: &str) -> UdpConfig {
    UdpConfig {
        interface: InterfaceSelector::Name(interface.into()),
        multicast_enabled: false,
        participant_id: Some(0),
        ..UdpConfig::new(0)
    }
}

fn large_payload() -> Vec<u8> {
    (0..LARGE).map(|i| (i % 251) as u8).collect()
}

fn large_receiver() {
    let t = UdpTransport::new(&unicast_veth_config("veth-b")).unwrap();
    let user = collector(&t, TrafficKind::UserData, false);
    println!("READY");
    let (got, bytes) = user
        .next(Duration::from_secs(10))
        .expect("large unicast datagram from the other namespace");
    assert_eq!(*got.src.ip(), VETH_A);
    assert_eq!(bytes.len(), LARGE);
    assert!(bytes == large_payload(), "payload differs");
}

fn large_sender() {
    let t = UdpTransport::new(&unicast_veth_config("veth-a")).unwrap();
    let dst = std::net::SocketAddrV4::new(VETH_B, t.default_unicast_locators()[0].port());
    let payload = large_payload();
    // The receiver is already listening; repeat in case the first fragments race the
    // neighbour resolution.
    for _ in 0..20 {
        assert_eq!(t.send_to(dst, &payload).unwrap(), LARGE);
        thread::sleep(Duration::from_millis(50));
    }
}
