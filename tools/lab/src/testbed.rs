//! Topologies: loopback, a two-namespace testbed joined by a veth pair with emulated link
//! impairments, and a remote peer.
//!
//! The netns testbed ([`Testbed`]) creates namespaces `flab<pid>a`/`flab<pid>b`, a veth pair
//! with 10.77.0.1/24 (publisher side) and 10.77.0.2/24 (subscriber side), and removes them
//! all when dropped (normal end, error, or Ctrl-C, which the lab turns into a normal end).
//! Loss is emulated with an nftables rule on each namespace's UDP and TCP input (`numgen
//! random`), so it works without the `sch_netem` module; the rate with `tc tbf`; delay and
//! jitter need netem and fail with a clear error when the kernel lacks it.

use std::io::Write;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::error::LabError;

/// Publisher-side address in the netns testbed.
pub const NETNS_PUB_ADDR: &str = "10.77.0.1";
/// Subscriber-side address in the netns testbed.
pub const NETNS_SUB_ADDR: &str = "10.77.0.2";
/// Prefix length of the testbed subnet.
pub const NETNS_PREFIX_LEN: u8 = 24;

/// Link impairments of the netns testbed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Impairments {
    /// Packet loss in percent, applied on each direction (0–100).
    pub loss_pct: Option<f64>,
    /// One-way delay in ms (needs netem).
    pub delay_ms: Option<f64>,
    /// Delay jitter in ms (needs netem).
    pub jitter_ms: Option<f64>,
    /// Rate limit in Mbit/s on each direction.
    pub rate_mbit: Option<f64>,
}

impl Impairments {
    /// A compact description such as `loss=1% rate=100Mbit`.
    pub fn describe(&self) -> String {
        let mut v = Vec::new();
        if let Some(l) = self.loss_pct {
            v.push(format!("loss={l}%"));
        }
        if let Some(d) = self.delay_ms {
            v.push(format!("delay={d}ms"));
        }
        if let Some(j) = self.jitter_ms {
            v.push(format!("jitter={j}ms"));
        }
        if let Some(r) = self.rate_mbit {
            v.push(format!("rate={r}Mbit"));
        }
        v.join(" ")
    }

    /// Checks value ranges.
    pub fn validate(&self) -> Result<(), LabError> {
        let bad = |what: &'static str, v: f64| LabError::BadValue {
            what,
            value: v.to_string(),
        };
        if let Some(l) = self.loss_pct {
            if !(0.0..=100.0).contains(&l) {
                return Err(bad("--loss (percent, 0-100)", l));
            }
        }
        for (what, v) in [
            ("--delay (ms)", self.delay_ms),
            ("--jitter (ms)", self.jitter_ms),
            ("--rate (Mbit/s)", self.rate_mbit),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(bad(what, v));
                }
            }
        }
        if self.rate_mbit == Some(0.0) {
            return Err(bad("--rate (Mbit/s)", 0.0));
        }
        if self.jitter_ms.is_some() && self.delay_ms.is_none() {
            return Err(LabError::Usage("--jitter needs --delay"));
        }
        Ok(())
    }

    /// True when anything is set.
    pub fn any(&self) -> bool {
        self.loss_pct.is_some()
            || self.delay_ms.is_some()
            || self.jitter_ms.is_some()
            || self.rate_mbit.is_some()
    }
}

/// True when the lab runs with effective uid 0 (read from /proc, no libc needed).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

fn run(args: &[&str], stdin: Option<&str>) -> Result<(), LabError> {
    let (prog, rest) = args.split_first().ok_or(LabError::Usage("empty command"))?;
    let mut c = Command::new(prog);
    c.args(rest)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    let mut child = c.spawn().map_err(|source| LabError::Spawn {
        program: prog.to_string(),
        source,
    })?;
    if let (Some(text), Some(mut si)) = (stdin, child.stdin.take()) {
        let _ = si.write_all(text.as_bytes());
    }
    let out = child.wait_with_output().map_err(|source| LabError::Spawn {
        program: prog.to_string(),
        source,
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(LabError::Testbed {
            command: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Two network namespaces joined by a veth pair; removed on drop.
#[derive(Debug)]
pub struct Testbed {
    /// Publisher-side namespace.
    pub ns_pub: String,
    /// Subscriber-side namespace.
    pub ns_sub: String,
    /// veth end in the publisher namespace.
    pub veth_pub: String,
    /// veth end in the subscriber namespace.
    pub veth_sub: String,
    /// What was applied.
    pub impairments: Impairments,
    /// Human-readable notes on how the impairments were realised.
    pub notes: Vec<String>,
    /// Publisher-side address ([`NETNS_PUB_ADDR`] unless [`Testbed::create_with_addresses`]).
    pub pub_addr: String,
    /// Subscriber-side address ([`NETNS_SUB_ADDR`] unless [`Testbed::create_with_addresses`]).
    pub sub_addr: String,
    created: bool,
}

impl Testbed {
    /// Creates the testbed (root needed) and applies the impairments.
    pub fn create(imp: Impairments) -> Result<Testbed, LabError> {
        Self::create_with_addresses(imp, NETNS_PUB_ADDR, NETNS_SUB_ADDR)
    }

    /// [`Testbed::create`] with other addresses (in one /24, e.g. the published scripts'
    /// 172.16.0.1 and 172.16.0.2).
    pub fn create_with_addresses(
        imp: Impairments,
        pub_addr: &str,
        sub_addr: &str,
    ) -> Result<Testbed, LabError> {
        imp.validate()?;
        for a in [pub_addr, sub_addr] {
            if a.parse::<std::net::Ipv4Addr>().is_err() {
                return Err(LabError::BadValue {
                    what: "testbed address (IPv4)",
                    value: a.to_string(),
                });
            }
        }
        if !is_root() {
            return Err(LabError::NotRoot);
        }
        let id = std::process::id();
        let mut tb = Testbed {
            ns_pub: format!("flab{id}a"),
            ns_sub: format!("flab{id}b"),
            veth_pub: format!("flv{id}a"),
            veth_sub: format!("flv{id}b"),
            impairments: imp,
            notes: Vec::new(),
            pub_addr: pub_addr.to_string(),
            sub_addr: sub_addr.to_string(),
            created: false,
        };
        // From here on, Drop removes whatever was created.
        tb.created = true;
        live_namespaces().extend([tb.ns_pub.clone(), tb.ns_sub.clone()]);
        tb.setup()?;
        Ok(tb)
    }

    fn setup(&mut self) -> Result<(), LabError> {
        let (a, b) = (self.ns_pub.clone(), self.ns_sub.clone());
        let (va, vb) = (self.veth_pub.clone(), self.veth_sub.clone());
        run(&["ip", "netns", "add", &a], None)?;
        run(&["ip", "netns", "add", &b], None)?;
        run(
            &[
                "ip", "link", "add", &va, "netns", &a, "type", "veth", "peer", "name", &vb,
                "netns", &b,
            ],
            None,
        )?;
        let (pa, sa) = (self.pub_addr.clone(), self.sub_addr.clone());
        for (ns, dev, addr) in [(&a, &va, &pa), (&b, &vb, &sa)] {
            let cidr = format!("{addr}/{NETNS_PREFIX_LEN}");
            run(&["ip", "-n", ns, "addr", "add", &cidr, "dev", dev], None)?;
            run(&["ip", "-n", ns, "link", "set", dev, "up"], None)?;
            run(&["ip", "-n", ns, "link", "set", "lo", "up"], None)?;
        }
        let imp = self.impairments;
        if imp.delay_ms.is_some() {
            self.apply_netem()?;
        } else if let Some(rate) = imp.rate_mbit {
            self.apply_tbf(rate)?;
        }
        if let Some(loss) = imp.loss_pct {
            self.apply_nft_loss(loss)?;
        }
        Ok(())
    }

    fn apply_netem(&mut self) -> Result<(), LabError> {
        let imp = self.impairments;
        for (ns, dev) in [
            (self.ns_pub.clone(), self.veth_pub.clone()),
            (self.ns_sub.clone(), self.veth_sub.clone()),
        ] {
            let mut args: Vec<String> = ["ip", "netns", "exec", &ns, "tc", "qdisc", "add", "dev"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            args.extend([dev.clone(), "root".into(), "netem".into(), "delay".into()]);
            args.push(format!("{}ms", imp.delay_ms.unwrap_or(0.0)));
            if let Some(j) = imp.jitter_ms {
                args.push(format!("{j}ms"));
            }
            if let Some(r) = imp.rate_mbit {
                args.extend(["rate".into(), format!("{r}mbit")]);
            }
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            match run(&refs, None) {
                Ok(()) => {}
                Err(LabError::Testbed { stderr, .. })
                    if stderr.contains("unknown") || stderr.contains("No such file") =>
                {
                    return Err(LabError::NetemMissing {
                        option: if imp.jitter_ms.is_some() {
                            "delay/--jitter"
                        } else {
                            "delay"
                        },
                    });
                }
                Err(e) => return Err(e),
            }
        }
        self.notes
            .push("delay/jitter (and rate) applied with tc netem on both veth ends".into());
        Ok(())
    }

    fn apply_tbf(&mut self, rate: f64) -> Result<(), LabError> {
        // Burst: 10 ms worth of bytes at the rate, at least 3 MTU-sized frames.
        let burst = ((rate * 1e6 / 8.0 / 100.0) as u64).max(3 * 1514);
        for (ns, dev) in [
            (self.ns_pub.clone(), self.veth_pub.clone()),
            (self.ns_sub.clone(), self.veth_sub.clone()),
        ] {
            let r = format!("{rate}mbit");
            let b = format!("{burst}b");
            match run(
                &[
                    "ip", "netns", "exec", &ns, "tc", "qdisc", "add", "dev", &dev, "root", "tbf",
                    "rate", &r, "burst", &b, "latency", "50ms",
                ],
                None,
            ) {
                Ok(()) => {}
                Err(LabError::Testbed { stderr, .. }) if stderr.contains("unknown") => {
                    return Err(LabError::TbfMissing { stderr });
                }
                Err(e) => return Err(e),
            }
        }
        self.notes.push(format!(
            "rate limited to {rate} Mbit/s per direction with tc tbf (burst {burst} B, latency 50 ms)"
        ));
        Ok(())
    }

    fn apply_nft_loss(&mut self, loss: f64) -> Result<(), LabError> {
        // numgen gives 0..9999; drop when below loss × 100 (0.01 % resolution).
        let threshold = (loss * 100.0).round() as u64;
        for (ns, dev) in [
            (self.ns_pub.clone(), self.veth_pub.clone()),
            (self.ns_sub.clone(), self.veth_sub.clone()),
        ] {
            let ruleset = format!(
                "table inet ferrolab {{\n  chain input {{\n    type filter hook input priority 0; policy accept;\n    iifname \"{dev}\" meta l4proto {{ udp, tcp }} numgen random mod 10000 < {threshold} drop\n  }}\n}}\n"
            );
            run(
                &["ip", "netns", "exec", &ns, "nft", "-f", "-"],
                Some(&ruleset),
            )?;
        }
        self.notes.push(format!(
            "loss {loss}% per direction: nftables `numgen random mod 10000 < {threshold} drop` on UDP and TCP input of each namespace (netem not needed)"
        ));
        Ok(())
    }

    /// The `ip netns exec NS` prefix of the publisher side.
    pub fn pub_prefix(&self) -> Vec<String> {
        vec![
            "ip".into(),
            "netns".into(),
            "exec".into(),
            self.ns_pub.clone(),
        ]
    }

    /// The `ip netns exec NS` prefix of the subscriber side.
    pub fn sub_prefix(&self) -> Vec<String> {
        vec![
            "ip".into(),
            "netns".into(),
            "exec".into(),
            self.ns_sub.clone(),
        ]
    }

    /// True while both namespaces are listed by `ip netns list`.
    pub fn namespaces_exist(&self) -> bool {
        let out = Command::new("ip").args(["netns", "list"]).output();
        match out {
            Ok(o) => {
                let s = String::from_utf8_lossy(&o.stdout);
                s.lines()
                    .any(|l| l.split_whitespace().next() == Some(&self.ns_pub))
                    && s.lines()
                        .any(|l| l.split_whitespace().next() == Some(&self.ns_sub))
            }
            Err(_) => false,
        }
    }

    /// Removes the namespaces (and with them the veth pair and rules). Idempotent.
    pub fn teardown(&mut self) {
        if !self.created {
            return;
        }
        self.created = false;
        live_namespaces().retain(|n| *n != self.ns_pub && *n != self.ns_sub);
        for ns in [&self.ns_pub, &self.ns_sub] {
            delete_namespace(ns);
        }
    }
}

/// Namespaces of the testbeds that exist now (for [`remove_live_namespaces`]).
static LIVE_NAMESPACES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn live_namespaces() -> std::sync::MutexGuard<'static, Vec<String>> {
    LIVE_NAMESPACES.lock().unwrap_or_else(|e| e.into_inner())
}

fn delete_namespace(ns: &str) {
    let _ = Command::new("ip")
        .args(["netns", "del", ns])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Removes the namespaces of every testbed still alive, for an exit that skips `Drop` (a
/// second Ctrl-C/SIGTERM); kill the processes inside first (`runner::kill_live_children`).
pub fn remove_live_namespaces() {
    let names = std::mem::take(&mut *live_namespaces());
    for ns in &names {
        delete_namespace(ns);
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// Cyclone DDS configuration pinning it to one interface address with a unicast peer
/// (netns and remote topologies).
pub fn cyclone_config_for(address: &str, peer: &str) -> String {
    cyclone_config_with(address, peer, false)
}

/// [`cyclone_config_for`] with multicast allowed (Cyclone's default use of it: discovery and
/// user data to its groups on that interface), for the multicast rows.
pub fn cyclone_multicast_config_for(address: &str, peer: &str) -> String {
    cyclone_config_with(address, peer, true)
}

fn cyclone_config_with(address: &str, peer: &str, multicast: bool) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<CycloneDDS xmlns=\"https://cdds.io/config\">\n\
  <Domain Id=\"any\">\n\
    <General>\n\
      <Interfaces><NetworkInterface address=\"{address}\"/></Interfaces>\n\
      <AllowMulticast>{multicast}</AllowMulticast>\n\
    </General>\n\
    <Discovery>\n\
      <ParticipantIndex>auto</ParticipantIndex>\n\
      <Peers><Peer Address=\"{peer}\"/></Peers>\n\
    </Discovery>\n\
  </Domain>\n\
</CycloneDDS>\n"
    )
}

/// Cyclone DDS configuration for RTPS over TCP (`General/Transport=tcp`): pinned to one
/// interface address, its TCP server on `port`, the other side's server as its only peer.
pub fn cyclone_tcp_config_for(address: &str, port: u16, peer: &str, peer_port: u16) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<CycloneDDS xmlns=\"https://cdds.io/config\">\n\
  <Domain Id=\"any\">\n\
    <General>\n\
      <Interfaces><NetworkInterface address=\"{address}\"/></Interfaces>\n\
      <AllowMulticast>false</AllowMulticast>\n\
      <Transport>tcp</Transport>\n\
    </General>\n\
    <TCP><Port>{port}</Port></TCP>\n\
    <Discovery>\n\
      <ParticipantIndex>none</ParticipantIndex>\n\
      <Peers><Peer Address=\"{peer}:{peer_port}\"/></Peers>\n\
    </Discovery>\n\
  </Domain>\n\
</CycloneDDS>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impairment_validation() {
        assert!(Impairments::default().validate().is_ok());
        assert!(!Impairments::default().any());
        let l = Impairments {
            loss_pct: Some(150.0),
            ..Default::default()
        };
        assert!(l.validate().is_err());
        let j = Impairments {
            jitter_ms: Some(1.0),
            ..Default::default()
        };
        assert!(matches!(j.validate(), Err(LabError::Usage(_))));
        let ok = Impairments {
            loss_pct: Some(1.5),
            rate_mbit: Some(100.0),
            ..Default::default()
        };
        assert!(ok.validate().is_ok());
        assert_eq!(ok.describe(), "loss=1.5% rate=100Mbit");
        let zero = Impairments {
            rate_mbit: Some(0.0),
            ..Default::default()
        };
        assert!(zero.validate().is_err());
    }

    #[test]
    fn cyclone_tcp_config() {
        let c = cyclone_tcp_config_for("127.0.0.1", 7401, "127.0.0.1", 7400);
        assert!(c.contains("<Transport>tcp</Transport>"));
        assert!(c.contains("<TCP><Port>7401</Port></TCP>"));
        assert!(c.contains("Peer Address=\"127.0.0.1:7400\""));
    }

    #[test]
    fn cyclone_config_pins_the_address() {
        let c = cyclone_config_for("10.77.0.1", "10.77.0.2");
        assert!(c.contains("NetworkInterface address=\"10.77.0.1\""));
        assert!(c.contains("Peer Address=\"10.77.0.2\""));
        assert!(c.contains("<AllowMulticast>false</AllowMulticast>"));
        let m = cyclone_multicast_config_for("10.77.0.1", "10.77.0.2");
        assert!(m.contains("NetworkInterface address=\"10.77.0.1\""));
        assert!(m.contains("<AllowMulticast>true</AllowMulticast>"));
    }
}
