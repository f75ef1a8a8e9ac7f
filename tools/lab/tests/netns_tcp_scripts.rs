//! The published Connext TCP test's two scripts (`scripts/published/tcp_pub.sh` and
//! `tcp_sub.sh`: perftest `-transport TCP -peer 0@tcpv4_lan://ADDR:7400 -nic NIC -noPrint
//! -noOutputHeaders ... -latencyTest`) run unchanged between two network namespaces with the
//! published addresses, 172.16.0.1 (publisher host) and 172.16.0.2 (subscriber host), which this
//! test creates and removes. Each script writes one CSV row per size into its file, and nftables
//! counters in both namespaces show that every packet went over TCP port 7400 and none over
//! UDP. Needs root (prints "SKIPPED:" otherwise).

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{perftest, temp_dir};
use ferrodds_lab::testbed::{is_root, Impairments, Testbed};

/// One testbed at a time (its namespace names come from the process id).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

const PUB_ADDR: &str = "172.16.0.1";
const SUB_ADDR: &str = "172.16.0.2";
const SIZES: [u32; 12] = [
    32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 63000,
];

/// Counters of what leaves each namespace, by protocol and port.
const COUNTERS: &str = "table inet ferrocount {
  counter udp_out { }
  counter udp7400_out { }
  counter tcp7400_out { }
  counter tcp_other_out { }
  counter other_ip_out { }
  chain output {
    type filter hook output priority 0; policy accept;
    udp sport 7400 udp dport 7400 counter name udp7400_out accept
    meta l4proto udp counter name udp_out accept
    tcp sport 7400 counter name tcp7400_out accept
    tcp dport 7400 counter name tcp7400_out accept
    meta l4proto tcp counter name tcp_other_out accept
    meta nfproto ipv4 counter name other_ip_out accept
  }
}
";

fn in_ns(ns: &str, args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).args(args);
    c
}

fn install_counters(ns: &str) {
    use std::io::Write;
    let mut child = in_ns(ns, &["nft", "-f", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("nft");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(COUNTERS.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "nft counters in {ns}");
}

/// Packets counted by the named counter in `ns`.
fn packets(ns: &str, counter: &str) -> u64 {
    let out = in_ns(
        ns,
        &["nft", "list", "counter", "inet", "ferrocount", counter],
    )
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .skip_while(|w| *w != "packets")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no packet count for {counter} in {ns}: {text}"))
}

fn spawn_script(ns: &str, script: &Path, args: &[&str], env: &[(&str, &str)], log: &Path) -> Child {
    let mut c = in_ns(ns, &["sh"]);
    c.arg(script).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    // Its own process group, so that a hung script is killed with its perftest.
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    c.stdin(Stdio::null())
        .stdout(std::fs::File::create(log.with_extension("out")).unwrap())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("spawn script")
}

/// Waits for both scripts; `Err` with what each log says about its last perftest run when
/// they do not finish within `limit` (both killed).
fn wait_both(mut a: Child, mut b: Child, limit: Duration, logs: &[&Path]) -> Result<(), String> {
    let end = Instant::now() + limit;
    let (mut da, mut db) = (None, None);
    while da.is_none() || db.is_none() {
        if da.is_none() {
            da = a.try_wait().unwrap();
        }
        if db.is_none() {
            db = b.try_wait().unwrap();
        }
        if Instant::now() > end {
            for child in [&a, &b] {
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .status();
            }
            let _ = a.wait();
            let _ = b.wait();
            let tails: Vec<String> = logs
                .iter()
                .map(|l| format!("{}:\n{}", l.display(), last_run(l)))
                .collect();
            return Err(format!(
                "the scripts did not finish within {limit:?}\n{}",
                tails.join("\n")
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for (d, who, log) in [(da, "publisher", logs[0]), (db, "subscriber", logs[1])] {
        let d = d.unwrap();
        assert!(
            d.success(),
            "{who} script failed ({d}):\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
    }
    Ok(())
}

/// What a script's log says after the start-up summary of its last perftest run (the
/// transports' connection log with it), at most its last 8,000 characters.
fn last_run(log: &Path) -> String {
    let s = std::fs::read_to_string(log).unwrap_or_default();
    let from = s.rfind("Initial peers:").unwrap_or(0);
    let tail: Vec<char> = s[from..].chars().rev().take(8000).collect();
    tail.into_iter().rev().collect()
}

/// The first field of every row of `file`, which must hold `n` data rows (no headers).
fn row_sizes(file: &Path) -> Vec<u32> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.lines()
        .map(|l| {
            let fields: Vec<&str> = l.split(',').map(str::trim).collect();
            assert!(
                fields.len() >= 6,
                "{}: not a result row: {l}",
                file.display()
            );
            fields[0]
                .parse()
                .unwrap_or_else(|_| panic!("{}: not a result row: {l}", file.display()))
        })
        .collect()
}

#[test]
fn published_tcp_scripts_run_unchanged_between_namespaces() {
    if !is_root() {
        ferrodds_testkit::skip("the namespace test needs root");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // A run that hangs (both sides waiting to discover each other, seen once in CI in about
    // a hundred runs and not reproduced since) gets one more, on a fresh testbed; the first
    // one's connection log is printed so the cause can be found.
    if let Err(first) = tcp_scripts_attempt() {
        println!("first attempt failed, trying once more:\n{first}");
        if let Err(second) = tcp_scripts_attempt() {
            panic!("{second}");
        }
    }
}

/// One run of the TCP scripts' matrix on a fresh testbed; `Err` when the scripts hang.
fn tcp_scripts_attempt() -> Result<(), String> {
    let tb = Testbed::create_with_addresses(Impairments::default(), PUB_ADDR, SUB_ADDR)
        .expect("testbed");
    install_counters(&tb.ns_pub);
    install_counters(&tb.ns_sub);
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/published");
    let dir = temp_dir("tcp-scripts");
    // The scripts run perftest as they are; PERFTEST names a wrapper that adds the
    // transports' connection log (dialled, accepted, closed) on stderr.
    let wrapper = dir.join("perftest-logged");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec '{}' \"$@\" -transportVerbosity 2\n",
            perftest().display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let perftest = wrapper.to_str().unwrap();
    let out = dir.join("results");
    let out_s = out.to_str().unwrap();
    // Every size for the reliable unkeyed test, the smallest and largest for the other three
    // (the scripts run each combination × size as the published ones do).
    let all_sizes = SIZES.map(|s| s.to_string()).join(" ");
    let runs: [(&str, &str, &str); 3] = [
        ("reliable", "unkeyed", &all_sizes),
        ("best", "unkeyed keyed", "32 63000"),
        ("reliable", "keyed", "32 63000"),
    ];
    for (i, (rel, keyed, sizes)) in runs.iter().enumerate() {
        let env = [
            ("PERFTEST", perftest),
            ("RELIABILITY", *rel),
            ("KEYED", *keyed),
            ("SIZES", *sizes),
        ];
        let sub_log = dir.join(format!("sub{i}.log"));
        let pub_log = dir.join(format!("pub{i}.log"));
        let sub = spawn_script(
            &tb.ns_sub,
            &scripts.join("tcp_sub.sh"),
            &[PUB_ADDR, &tb.veth_sub, out_s],
            &env,
            &sub_log,
        );
        let publ = spawn_script(
            &tb.ns_pub,
            &scripts.join("tcp_pub.sh"),
            &[SUB_ADDR, &tb.veth_pub, "1", out_s],
            &env,
            &pub_log,
        );
        let n = sizes.split_whitespace().count() * keyed.split_whitespace().count();
        wait_both(
            publ,
            sub,
            Duration::from_secs(20 * n as u64 + 30),
            &[&pub_log, &sub_log],
        )?;
    }
    // One row per size in every file, in order.
    for (rel, keyed, sizes) in [
        ("reliable", "unkeyed", all_sizes.as_str()),
        ("best", "unkeyed", "32 63000"),
        ("best", "keyed", "32 63000"),
        ("reliable", "keyed", "32 63000"),
    ] {
        let want: Vec<u32> = sizes
            .split_whitespace()
            .map(|s| s.parse().unwrap())
            .collect();
        for side in ["pub", "sub"] {
            let f = out.join(format!("tcp_{keyed}_{rel}_{side}.csv"));
            assert_eq!(row_sizes(&f), want, "{}", f.display());
        }
        // The publisher's rows are latencies (positive), the subscriber's throughputs with
        // samples received.
        let text = std::fs::read_to_string(out.join(format!("tcp_{keyed}_{rel}_pub.csv"))).unwrap();
        for l in text.lines() {
            let ave: f64 = l.split(',').nth(1).unwrap().trim().parse().unwrap();
            assert!(ave > 0.0 && ave < 100_000.0, "latency row: {l}");
        }
        let text = std::fs::read_to_string(out.join(format!("tcp_{keyed}_{rel}_sub.csv"))).unwrap();
        for l in text.lines() {
            let samples: f64 = l.split(',').nth(1).unwrap().trim().parse().unwrap();
            assert!(samples > 0.0, "throughput row: {l}");
        }
    }
    // Everything went over TCP port 7400: no UDP at all, no other TCP port.
    for ns in [&tb.ns_pub, &tb.ns_sub] {
        let (udp, tcp7400, tcp_other) = (
            packets(ns, "udp_out"),
            packets(ns, "tcp7400_out"),
            packets(ns, "tcp_other_out"),
        );
        println!("{ns}: UDP {udp}, TCP port 7400 {tcp7400}, other TCP {tcp_other}");
        assert_eq!(udp + packets(ns, "udp7400_out"), 0, "{ns} sent UDP");
        assert_eq!(tcp_other, 0, "{ns} sent TCP on another port");
        assert!(tcp7400 > 1000, "{ns}: {tcp7400} TCP packets on port 7400");
    }
    drop(tb);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The suite script's TLS and UDPv4_WAN cases (`scripts/published/suite.sh`, as the published
/// base script selects them with `--transport`) between the same two namespaces: one CSV row
/// per size on each side; over TLS every packet on TCP port 7400, over UDPv4_WAN every UDP
/// datagram on port 7400 (one port per participant).
#[test]
fn published_suite_script_tls_and_wan_cases_between_namespaces() {
    if !is_root() {
        ferrodds_testkit::skip("the namespace test needs root");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let perftest = perftest();
    let perftest = perftest.to_str().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/published/suite.sh");
    let dir = temp_dir("suite-scripts");
    let out = dir.join("results");
    let out_s = out.to_str().unwrap();
    let sizes = "32 1024 63000";
    for transport in ["TLS", "UDPv4_WAN"] {
        let tb = Testbed::create_with_addresses(Impairments::default(), PUB_ADDR, SUB_ADDR)
            .expect("testbed");
        install_counters(&tb.ns_pub);
        install_counters(&tb.ns_sub);
        let env = [("PERFTEST", perftest), ("SIZES", sizes)];
        let sub_public = format!("{SUB_ADDR}:7400");
        let pub_public = format!("{PUB_ADDR}:7400");
        let mut sub_args = vec![
            "sub",
            "--transport",
            transport,
            "--peer",
            PUB_ADDR,
            "--nic",
            &tb.veth_sub,
            "--out",
            out_s,
        ];
        let mut pub_args = vec![
            "pub",
            "--transport",
            transport,
            "--peer",
            SUB_ADDR,
            "--nic",
            &tb.veth_pub,
            "--exec",
            "1",
            "--out",
            out_s,
        ];
        if transport == "UDPv4_WAN" {
            sub_args.extend(["--public-address", &sub_public]);
            pub_args.extend(["--public-address", &pub_public]);
        }
        let sub_log = dir.join(format!("sub-{transport}.log"));
        let pub_log = dir.join(format!("pub-{transport}.log"));
        let sub = spawn_script(&tb.ns_sub, &script, &sub_args, &env, &sub_log);
        let publ = spawn_script(&tb.ns_pub, &script, &pub_args, &env, &pub_log);
        wait_both(publ, sub, Duration::from_secs(120), &[&pub_log, &sub_log])
            .unwrap_or_else(|e| panic!("{e}"));
        let lower = transport.to_lowercase();
        for side in ["pub", "sub"] {
            let f = out.join(format!("{lower}_{side}.csv"));
            assert_eq!(row_sizes(&f), vec![32, 1024, 63000], "{}", f.display());
        }
        for ns in [&tb.ns_pub, &tb.ns_sub] {
            let (udp, udp7400, tcp7400, tcp_other) = (
                packets(ns, "udp_out"),
                packets(ns, "udp7400_out"),
                packets(ns, "tcp7400_out"),
                packets(ns, "tcp_other_out"),
            );
            println!(
                "{transport} {ns}: UDP 7400→7400 {udp7400}, other UDP {udp}, TCP port 7400 {tcp7400}, other TCP {tcp_other}"
            );
            if transport == "TLS" {
                assert_eq!(udp + udp7400, 0, "{ns} sent UDP over TLS");
                assert_eq!(tcp_other, 0);
                assert!(tcp7400 > 100);
            } else {
                // One port per participant: every datagram from 7400 to 7400.
                assert_eq!(tcp7400 + tcp_other, 0, "{ns} sent TCP over UDPv4_WAN");
                assert_eq!(udp, 0, "{ns} sent UDP on other ports");
                assert!(udp7400 > 100);
            }
        }
        drop(tb);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
