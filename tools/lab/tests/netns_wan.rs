//! UDPv4_WAN through a port-forwarding NAT, in three network namespaces this test creates and
//! removes: the publisher host outside (10.88.1.1), a NAT (10.88.1.254 outside, 192.168.50.1
//! inside; masquerade outwards, UDP port 7400 forwarded inwards) and the subscriber host
//! behind it (192.168.50.2, default route through the NAT). The publisher knows only the
//! NAT's public address. Plain UDPv4 with default discovery cannot work there (the subscriber
//! announces its private address); UDPv4_WAN does: the subscriber announces
//! `-transportPublicAddress 10.88.1.254:7400`. Needs root (prints "SKIPPED:" otherwise).

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{output_bounded, perftest};
use ferrodds_lab::testbed::is_root;

const PUB_ADDR: &str = "10.88.1.1";
const NAT_PUBLIC: &str = "10.88.1.254";
const NAT_INSIDE: &str = "192.168.50.1";
const SUB_ADDR: &str = "192.168.50.2";

/// The three namespaces; removed on drop.
struct Nat {
    a: String,
    n: String,
    b: String,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn in_ns(ns: &str, args: &[&str], stdin: Option<&str>) {
    use std::io::Write;
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    if let Some(s) = stdin {
        child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{ns}: {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Nat {
    fn create() -> Nat {
        let id = std::process::id();
        let nat = Nat {
            a: format!("fwan{id}a"),
            n: format!("fwan{id}n"),
            b: format!("fwan{id}b"),
        };
        for ns in [&nat.a, &nat.n, &nat.b] {
            ip(&["netns", "add", ns]);
            in_ns(ns, &["ip", "link", "set", "lo", "up"], None);
        }
        let (va, vna, vnb, vb) = (
            format!("fw{id}a"),
            format!("fw{id}na"),
            format!("fw{id}nb"),
            format!("fw{id}b"),
        );
        ip(&[
            "link", "add", &va, "netns", &nat.a, "type", "veth", "peer", "name", &vna, "netns",
            &nat.n,
        ]);
        ip(&[
            "link", "add", &vb, "netns", &nat.b, "type", "veth", "peer", "name", &vnb, "netns",
            &nat.n,
        ]);
        for (ns, dev, addr) in [
            (&nat.a, &va, PUB_ADDR),
            (&nat.n, &vna, NAT_PUBLIC),
            (&nat.n, &vnb, NAT_INSIDE),
            (&nat.b, &vb, SUB_ADDR),
        ] {
            in_ns(
                ns,
                &["ip", "addr", "add", &format!("{addr}/24"), "dev", dev],
                None,
            );
            in_ns(ns, &["ip", "link", "set", dev, "up"], None);
        }
        // The subscriber host goes out through the NAT; the publisher host has no route to
        // the private network.
        in_ns(
            &nat.b,
            &["ip", "route", "add", "default", "via", NAT_INSIDE],
            None,
        );
        in_ns(&nat.n, &["sysctl", "-qw", "net.ipv4.ip_forward=1"], None);
        let rules = format!(
            "table ip ferronat {{
  chain prerouting {{
    type nat hook prerouting priority dstnat; policy accept;
    iifname \"{vna}\" udp dport 7400 dnat to {SUB_ADDR}:7400
  }}
  chain postrouting {{
    type nat hook postrouting priority srcnat; policy accept;
    oifname \"{vna}\" masquerade
  }}
}}
"
        );
        in_ns(&nat.n, &["nft", "-f", "-"], Some(&rules));
        nat
    }
}

impl Drop for Nat {
    fn drop(&mut self) {
        for ns in [&self.a, &self.n, &self.b] {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Runs a subscriber in B and a latency publisher in A; returns (publisher stdout, its stderr,
/// subscriber stdout).
fn run_pair(
    nat: &Nat,
    sub_args: &[&str],
    pub_args: &[&str],
    limit: u64,
) -> (String, String, String) {
    let perftest = perftest();
    let mut sub = Command::new("timeout")
        .args([&(limit + 5).to_string(), "ip", "netns", "exec", &nat.b])
        .arg(&perftest)
        .args(["-sub", "-domain", "3", "-noPrint"])
        .args(sub_args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let out = output_bounded(
        Command::new("timeout")
            .args([&limit.to_string(), "ip", "netns", "exec", &nat.a])
            .arg(&perftest)
            .args(["-pub", "-domain", "3", "-noPrint", "-latencyTest"])
            .args(["-executionTime", "2"])
            .args(pub_args),
        Duration::from_secs(limit + 10),
    );
    let _ = Command::new("kill")
        .args(["-INT", &sub.id().to_string()])
        .status();
    let sub_out = {
        let mut s = String::new();
        if let Some(mut o) = sub.stdout.take() {
            use std::io::Read;
            let _ = o.read_to_string(&mut s);
        }
        let _ = sub.wait();
        s
    };
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        sub_out,
    )
}

fn latency_row(stdout: &str) -> Option<Vec<f64>> {
    stdout.lines().rev().find_map(|l| {
        let v: Vec<f64> = l
            .split(',')
            .map(|f| f.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .ok()?;
        (v.len() >= 8).then_some(v)
    })
}

#[test]
fn udpv4_wan_crosses_a_port_forwarding_nat_where_plain_udpv4_cannot() {
    if !is_root() {
        ferrodds_testkit::skip("the NAT namespace test needs root");
        return;
    }
    let nat = Nat::create();
    let vb = format!("fw{}b", std::process::id());
    let va = format!("fw{}a", std::process::id());
    // Plain UDPv4, each side given the address it can reach: no sample crosses.
    let (out, err, _) = run_pair(
        &nat,
        &["-nic", &vb, "-peer", PUB_ADDR],
        &["-nic", &va, "-peer", NAT_PUBLIC],
        12,
    );
    assert!(
        latency_row(&out).is_none_or(|r| r[0] == 0.0),
        "plain UDPv4 crossed the NAT?\n{out}\n{err}"
    );
    // UDPv4_WAN: the subscriber announces the NAT's forwarded address.
    let public = format!("{NAT_PUBLIC}:7400");
    let to_pub = format!("0@udpv4_wan://{PUB_ADDR}:7400");
    let to_nat = format!("0@udpv4_wan://{NAT_PUBLIC}:7400");
    let (out, err, sub_out) = run_pair(
        &nat,
        &[
            "-transport",
            "UDPv4_WAN",
            "-nic",
            &vb,
            "-transportPublicAddress",
            &public,
            "-peer",
            &to_pub,
        ],
        &["-transport", "UDPv4_WAN", "-nic", &va, "-peer", &to_nat],
        40,
    );
    assert!(
        err.contains("Kind: UDPv4_WAN") && err.contains("Test ended."),
        "{err}"
    );
    let row = latency_row(&out).unwrap_or_else(|| panic!("no latency row:\n{out}\n{err}"));
    assert_eq!(row[0], 100.0);
    assert!(row[1] > 0.0 && row[5] < 100_000.0, "{row:?}");
    // The subscriber's throughput row counts the samples it received.
    let received = sub_out.lines().any(|l| {
        l.split(',')
            .nth(1)
            .is_some_and(|f| f.trim().parse::<f64>().is_ok_and(|n| n > 0.0))
    });
    assert!(received, "subscriber received nothing:\n{sub_out}");
}
