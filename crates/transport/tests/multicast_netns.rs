//! Multicast tests, run only inside a network namespace each test creates for itself (never on
//! a real interface).
//!
//! The outer run creates `ferrodds-test-<pid>-<n>`, brings its `lo` up with multicast and a
//! 224.0.0.0/4 route, then re-executes this test binary inside it with
//! `FERRODDS_TRANSPORT_NETNS_INNER=1`, which runs the test body. The namespace is deleted
//! afterwards, also on failure. Without root (or without `ip netns`) the test prints
//! `SKIPPED: needs root for network namespaces` and passes.

mod common;

use std::io::Read;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::{collector, WAIT};
use ferrodds_transport::{InterfaceSelector, TrafficKind, UdpConfig, UdpLocator, UdpTransport};

const INNER_ENV: &str = "FERRODDS_TRANSPORT_NETNS_INNER";
const CHILD_TIMEOUT: Duration = Duration::from_secs(60);

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

fn ip(ns: &str, args: &[&str]) {
    let out = Command::new("ip")
        .arg("-n")
        .arg(ns)
        .args(args)
        .output()
        .expect("run ip");
    assert!(
        out.status.success(),
        "ip -n {ns} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs the test named `test_name` inside a fresh namespace; returns after it passed there.
fn run_in_netns(test_name: &str) {
    if !is_root() {
        println!("SKIPPED: needs root for network namespaces (not running as root)");
        return;
    }
    let ns = format!(
        "ferrodds-test-{}-{}",
        std::process::id(),
        NS_COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    match Command::new("ip").args(["netns", "add", &ns]).output() {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            println!(
                "SKIPPED: needs root for network namespaces (ip netns add: {})",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return;
        }
        Err(e) => {
            println!("SKIPPED: needs root for network namespaces (ip: {e})");
            return;
        }
    }
    let guard = Netns(ns);
    ip(&guard.0, &["link", "set", "lo", "up"]);
    ip(&guard.0, &["link", "set", "lo", "multicast", "on"]);
    ip(&guard.0, &["route", "add", "224.0.0.0/4", "dev", "lo"]);

    let exe = std::env::current_exe().expect("current test binary");
    let mut child = Command::new("ip")
        .args(["netns", "exec", &guard.0])
        .arg(exe)
        .args(["--exact", test_name, "--nocapture", "--test-threads=1"])
        .env(INNER_ENV, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn inner test run");
    let pid = child.id();
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut out = String::new();
        let mut err = String::new();
        let _ = stdout.read_to_string(&mut out);
        let _ = stderr.read_to_string(&mut err);
        let status = child.wait();
        let _ = tx.send((status, out, err));
    });
    let (status, out, err) = match rx.recv_timeout(CHILD_TIMEOUT) {
        Ok(r) => r,
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("inner run of {test_name} timed out after {CHILD_TIMEOUT:?}");
        }
    };
    let status = status.expect("wait for inner run");
    assert!(
        status.success(),
        "inner run of {test_name} failed ({status}):\n{out}\n{err}"
    );
    // Guard against a filter that matched nothing.
    assert!(
        out.contains("test result: ok. 1 passed"),
        "inner run did not run exactly one test:\n{out}\n{err}"
    );
    drop(guard);
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
    let start = std::time::Instant::now();
    drop(t);
    for c in collectors {
        c.handle.join().unwrap().unwrap();
    }
    assert!(start.elapsed() < Duration::from_secs(1));
}
