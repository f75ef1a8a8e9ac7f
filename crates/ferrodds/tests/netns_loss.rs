//! Reliability over a lossy link: two network namespaces joined by a veth pair with
//! `tc netem loss 10%` on both ends (when the kernel has no netem qdisc, as some VM kernels
//! built without `CONFIG_NET_SCH_NETEM`, an nftables rule dropping a random 10% of the UDP
//! datagrams each namespace receives is used instead and the test says so); the `shapes` binary publishes 100,000 reliable
//! KEEP_ALL samples in one namespace and counts them in the other. Everything must arrive,
//! in order. The namespaces are created and deleted by the test (also on failure); without
//! root or `ip netns` the test prints `SKIPPED: ...` and returns.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::with_timeout;

const SAMPLES: u64 = 100_000;

fn ip(args: &[&str]) -> std::io::Result<Output> {
    Command::new("ip").args(args).stdin(Stdio::null()).output()
}

fn run_ok(prog: &str, args: &[&str]) -> Result<(), String> {
    let o = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{prog} {args:?}: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{prog} {args:?}: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

/// Two namespaces and a veth pair; deleted on drop.
struct Netns {
    a: String,
    b: String,
    devs: [String; 2],
    nft: bool,
}

impl Netns {
    const ADDR_A: &'static str = "10.231.77.1";
    const ADDR_B: &'static str = "10.231.77.2";

    fn create() -> Result<Netns, String> {
        let id = std::process::id();
        let va = format!("fdla{}", id % 100_000);
        let vb = format!("fdlb{}", id % 100_000);
        let mut n = Netns {
            a: format!("fdds-loss-a-{id}"),
            b: format!("fdds-loss-b-{id}"),
            devs: [va.clone(), vb.clone()],
            nft: false,
        };
        run_ok("ip", &["netns", "add", &n.a])?;
        run_ok("ip", &["netns", "add", &n.b])?;
        run_ok(
            "ip",
            &["link", "add", &va, "type", "veth", "peer", "name", &vb],
        )?;
        run_ok("ip", &["link", "set", &va, "netns", &n.a])?;
        run_ok("ip", &["link", "set", &vb, "netns", &n.b])?;
        let (na, nb) = (n.a.clone(), n.b.clone());
        for (ns, dev, addr) in [(&na, &va, Self::ADDR_A), (&nb, &vb, Self::ADDR_B)] {
            run_ok("ip", &["-n", ns, "link", "set", "lo", "up"])?;
            run_ok(
                "ip",
                &["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev],
            )?;
            run_ok("ip", &["-n", ns, "link", "set", dev, "up"])?;
            let netem = run_ok(
                "ip",
                &[
                    "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "netem", "loss",
                    "10%",
                ],
            );
            if let Err(e) = netem {
                eprintln!("tc netem unavailable ({e}); using nftables random 10% drop instead");
                n.nft = true;
                let nft = |args: &[&str]| {
                    let mut v = vec!["netns", "exec", ns.as_str(), "nft"];
                    v.extend_from_slice(args);
                    run_ok("ip", &v)
                };
                nft(&["add", "table", "inet", "ferrodds_loss"])?;
                nft(&[
                    "add",
                    "chain",
                    "inet",
                    "ferrodds_loss",
                    "input",
                    "{ type filter hook input priority 0; policy accept; }",
                ])?;
                nft(&[
                    "add",
                    "rule",
                    "inet",
                    "ferrodds_loss",
                    "input",
                    "meta",
                    "l4proto",
                    "udp",
                    "numgen",
                    "random",
                    "mod",
                    "100",
                    "<",
                    "10",
                    "counter",
                    "drop",
                ])?;
            }
        }
        Ok(n)
    }
}

impl Netns {
    /// Datagrams dropped by the loss emulation in namespace `ns` (index 0 = a, 1 = b).
    fn dropped(&self, idx: usize) -> u64 {
        let ns = if idx == 0 { &self.a } else { &self.b };
        let out = if self.nft {
            ip(&[
                "netns",
                "exec",
                ns,
                "nft",
                "list",
                "table",
                "inet",
                "ferrodds_loss",
            ])
        } else {
            ip(&[
                "netns",
                "exec",
                ns,
                "tc",
                "-s",
                "qdisc",
                "show",
                "dev",
                &self.devs[idx],
            ])
        };
        let text = out
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let key = if self.nft { "packets" } else { "dropped" };
        let mut words = text.split_whitespace();
        while let Some(w) = words.next() {
            if w == key {
                return words
                    .next()
                    .and_then(|v| v.trim_end_matches(',').parse().ok())
                    .unwrap_or(0);
            }
        }
        0
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.a]);
        let _ = ip(&["netns", "del", &self.b]);
    }
}

fn shapes_in(ns: &str, args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, env!("CARGO_BIN_EXE_shapes")])
        .args(args)
        .env_remove("FERRODDS_INTERFACE")
        .env_remove("FERRODDS_PEERS")
        .env_remove("FERRODDS_MULTICAST")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn wait_output(mut child: std::process::Child, timeout: Duration) -> (String, String, bool) {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().expect("child output");
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.success(),
    )
}

#[test]
fn reliable_100k_samples_over_10_percent_loss() {
    with_timeout(330, || {
        let can = ip(&["netns", "list"]).is_ok_and(|o| o.status.success());
        if !can {
            ferrodds_testkit::skip("needs root and `ip netns` for network namespaces");
            return;
        }
        let ns = match Netns::create() {
            Ok(ns) => ns,
            Err(e) => {
                ferrodds_testkit::skip(&format!("could not create network namespaces: {e}"));
                return;
            }
        };
        let count = SAMPLES.to_string();
        let common = [
            "-d",
            "190",
            "--no-multicast",
            "--sequence",
            "--max-message-size",
            "1400",
            "--duration",
            "500",
        ];
        let sub = shapes_in(
            &ns.b,
            &[
                "-S",
                "--quiet",
                "--count",
                &count,
                "--interface",
                Netns::ADDR_B,
                "--peer",
                Netns::ADDR_A,
            ],
        )
        .args(common)
        .spawn()
        .expect("spawn subscriber");
        let publ = shapes_in(
            &ns.a,
            &[
                "-P",
                "--rate",
                "0",
                "--wait-matched",
                "--count",
                &count,
                "--interface",
                Netns::ADDR_A,
                "--peer",
                Netns::ADDR_B,
            ],
        )
        .args(common)
        .spawn()
        .expect("spawn publisher");
        let t0 = Instant::now();
        let (sub_out, sub_err, sub_ok) = wait_output(sub, Duration::from_secs(260));
        let (pub_out, pub_err, pub_ok) = wait_output(publ, Duration::from_secs(30));
        let dropped = (ns.dropped(0), ns.dropped(1));
        eprintln!(
            "netns loss run took {:?}; datagrams dropped (a, b): {dropped:?}",
            t0.elapsed()
        );
        drop(ns);
        // 100,000 samples need thousands of datagrams: 10% loss must have hit some of them
        assert!(
            dropped.1 > 100,
            "loss emulation dropped too little: {dropped:?}"
        );
        assert!(pub_ok, "publisher failed: {pub_out} {pub_err}");
        assert!(
            pub_out.contains(&format!("PUBLISHED {SAMPLES}")),
            "{pub_out}"
        );
        assert!(sub_ok, "subscriber failed: {sub_out} {sub_err}");
        assert!(
            sub_out.contains(&format!("SUMMARY received={SAMPLES} in_order=true gaps=0")),
            "subscriber summary: {sub_out} {sub_err}"
        );
    });
}
