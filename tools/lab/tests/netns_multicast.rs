//! Multicast user data (issue 19): one perftest publisher in one network namespace and three
//! perftest subscribers in another, joined by a veth pair (172.16.0.1 and 172.16.0.2, made and
//! removed by the test). With `-multicast` the subscribers' readers announce the multicast
//! group (RTI Perftest's Throughput group 239.255.1.1, or `-multicastAddr`'s) and the
//! publisher sends each sample once, to the group: its own capture
//! (`-networkCapture -doNotDropNetworkCapture`, decoded by tshark) holds about one user-data
//! copy of each sample, none to the subscribers' unicast ports. Without it the same run sends
//! each sample to each subscriber. Every subscriber receives every sample (strict
//! reliable) either way, and the start-up summary says `Use Multicast: True` only with
//! `-multicast`. Needs root; every process is bounded.
//!
//! The raw UDP baseline (`-rawTransport`) likewise: with `-multicast` the publisher's
//! namespace sends about one UDP datagram per sample (to the Throughput group), without it
//! one per sample and subscriber (`OutDatagrams` of the namespace's `/proc/net/snmp`).

mod common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::{output_bounded, perftest, temp_dir};
use ferrodds_capture::testing::{require_tshark, tshark_check};
use ferrodds_capture::{read_udp_payloads, Direction};
use ferrodds_lab::lab::parse_udp_out_datagrams;
use ferrodds_lab::testbed::{is_root, Impairments, Testbed};
use ferrodds_wire::{MessageView, Submessage};

const PUB_ADDR: &str = "172.16.0.1";
const SUB_ADDR: &str = "172.16.0.2";
const SUBSCRIBERS: u32 = 3;
const SAMPLES: u64 = 2_000;
/// perftest's default domain (1): the user-data multicast port and the first unicast ones.
const USER_MULTICAST_PORT: u16 = 7400 + 250 + 1;
const LIMIT: Duration = Duration::from_secs(90);

/// The two tests run one after the other (each runs four processes on this 2-CPU machine,
/// and the raw one counts what best effort delivers).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn side(ns: &str, dir: &Path, args: &[String]) -> Output {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns])
        .arg(perftest())
        .args(args)
        .current_dir(dir);
    output_bounded(&mut cmd, LIMIT)
}

fn text(o: &Output) -> String {
    format!(
        "{}\n--- stdout:\n{}--- stderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs the publisher and the subscribers (`-multicast`, or `-multicastAddr GROUP` when
/// `group` is given); returns the publisher's capture file.
fn run(tb: &Testbed, root: &Path, multicast: bool, group: Option<&str>) -> PathBuf {
    let tag = match (multicast, group) {
        (_, Some(_)) => "mcaddr",
        (true, None) => "mc",
        (false, None) => "uc",
    };
    let common = |role: &str, nic: &str, peer: &str| -> Vec<String> {
        let mut v: Vec<String> = [
            role,
            "-transport",
            "UDPv4",
            "-nic",
            nic,
            "-peer",
            peer,
            "-dataLen",
            "200",
            "-noPrint",
        ]
        .map(String::from)
        .to_vec();
        match group {
            Some(g) => v.extend(["-multicastAddr".into(), g.to_string()]),
            None if multicast => v.push("-multicast".into()),
            None => {}
        }
        v
    };
    let pub_dir = root.join(format!("{tag}-pub"));
    std::fs::create_dir_all(&pub_dir).unwrap();
    let mut pub_args = common("-pub", PUB_ADDR, SUB_ADDR);
    pub_args.extend(
        [
            "-numSubscribers",
            &SUBSCRIBERS.to_string(),
            "-numIter",
            &SAMPLES.to_string(),
            "-latencyCount",
            "100",
            "-batchSize",
            "0",
            "-networkCapture",
            "-doNotDropNetworkCapture",
        ]
        .map(String::from),
    );
    let (publ, subs) = std::thread::scope(|s| {
        let subs: Vec<_> = (0..SUBSCRIBERS)
            .map(|sid| {
                let dir = root.join(format!("{tag}-sub{sid}"));
                std::fs::create_dir_all(&dir).unwrap();
                let mut args = common("-sub", SUB_ADDR, PUB_ADDR);
                args.extend(["-sidMultiSubTest".to_string(), sid.to_string()]);
                let ns = tb.ns_sub.clone();
                s.spawn(move || side(&ns, &dir, &args))
            })
            .collect();
        let publ = s.spawn(|| side(&tb.ns_pub, &pub_dir, &pub_args));
        let join = |h: std::thread::ScopedJoinHandle<'_, Output>| {
            h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
        };
        let publ = join(publ);
        let subs: Vec<Output> = subs.into_iter().map(join).collect();
        (publ, subs)
    });
    assert!(publ.status.success(), "publisher: {}", text(&publ));
    let want = format!(
        "Use Multicast: {}",
        if multicast { "True" } else { "False" }
    );
    assert!(
        String::from_utf8_lossy(&publ.stderr).contains(&want),
        "{want}: {}",
        text(&publ)
    );
    if let Some(g) = group {
        let want = format!("Multicast groups: Throughput {g},");
        for o in subs.iter().chain([&publ]) {
            assert!(
                String::from_utf8_lossy(&o.stderr).contains(&want),
                "{want}: {}",
                text(o)
            );
        }
    }
    for (sid, o) in subs.iter().enumerate() {
        assert!(o.status.success(), "subscriber {sid}: {}", text(o));
        let out = String::from_utf8_lossy(&o.stdout);
        // The throughput summary row: size, total samples, ... (every sample, reliable).
        let total: u64 = out
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(',').map(str::trim).collect();
                (f.len() >= 5 && f[0].parse::<u64>().is_ok()).then(|| f[1].parse().ok())?
            })
            .next_back()
            .unwrap_or_else(|| panic!("no summary row from subscriber {sid}: {}", text(o)));
        assert!(
            total >= SAMPLES,
            "subscriber {sid} got {total} of {SAMPLES}: {}",
            text(o)
        );
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&pub_dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcapng"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}: {}", text(&publ));
    files.pop().unwrap()
}

/// The publisher's outbound user samples: (DATA submessages to the group, to unicast ports).
/// Samples, not datagrams: a writer that has several samples queued for one destination (a
/// busy CI machine) packs them into one datagram, which is fewer datagrams but the same
/// once-per-subscriber cost.
fn user_samples(file: &Path, group: Ipv4Addr) -> (u64, u64) {
    let c = read_udp_payloads(file).unwrap();
    let (mut to_group, mut to_unicast) = (0, 0);
    for d in c.datagrams {
        if d.direction != Some(Direction::Outbound) {
            continue;
        }
        let Ok(msg) = MessageView::parse(&d.payload) else {
            continue;
        };
        let samples = msg
            .submessages()
            .filter(|s| {
                matches!(s, Ok(Submessage::Data(data))
                    if !data.writer_id.is_builtin()
                        && data.serialized_payload.is_some_and(|p| p.len() >= 200))
            })
            .count() as u64;
        if *d.dst.ip() == group && d.dst.port() == USER_MULTICAST_PORT {
            to_group += samples;
        } else if !d.dst.ip().is_multicast() {
            to_unicast += samples;
        }
    }
    (to_group, to_unicast)
}

#[test]
fn multicast_user_data_is_sent_once_per_sample() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() {
        ferrodds_testkit::skip("the namespace test needs root");
        return;
    }
    let tshark = match require_tshark() {
        Ok(t) => t,
        Err(e) => panic!("tshark is required for this test ({e})"),
    };
    let tb = Testbed::create_with_addresses(Impairments::default(), PUB_ADDR, SUB_ADDR)
        .expect("testbed");
    let root = temp_dir("multicast");
    let mc = run(&tb, &root, true, None);
    let uc = run(&tb, &root, false, None);
    let own = run(&tb, &root, true, Some("239.255.42.1"));
    let participant_group = Ipv4Addr::new(239, 255, 0, 1);
    // -multicast alone: RTI Perftest's Throughput group (239.255.1.1), which only the
    // subscribers' readers join (on the participant group every participant joins, the
    // publisher would receive its own data looped back).
    let (mc_group, mc_unicast) = user_samples(&mc, Ipv4Addr::new(239, 255, 1, 1));
    let (mc_default, _) = user_samples(&mc, participant_group);
    assert_eq!(
        mc_default, 0,
        "-multicast: samples sent to the participant group"
    );
    let (uc_group, uc_unicast) = user_samples(&uc, participant_group);
    let (own_group, own_unicast) = user_samples(&own, Ipv4Addr::new(239, 255, 42, 1));
    let (own_default, _) = user_samples(&own, participant_group);
    eprintln!(
        "-multicastAddr 239.255.42.1: {own_group} samples sent to the Throughput group, \
         {own_default} to 239.255.0.1, {own_unicast} unicast"
    );
    // -multicastAddr: the Throughput readers' own group, once per sample.
    assert!(
        own_group >= SAMPLES,
        "{own_group} samples sent to 239.255.42.1"
    );
    assert!(
        own_group + own_unicast < SAMPLES * 3 / 2,
        "{own_group} + {own_unicast}"
    );
    assert_eq!(own_default, 0, "samples sent to the participant group");
    eprintln!(
        "-multicast: {mc_group} samples sent to the group, {mc_unicast} unicast; \
         without: {uc_group} to the group, {uc_unicast} unicast ({SAMPLES} samples, {SUBSCRIBERS} subscribers)"
    );
    // Once per sample (a few repairs may go again), not once per subscriber.
    assert!(mc_group >= SAMPLES, "{mc_group} samples sent to the group");
    assert!(
        mc_group + mc_unicast < SAMPLES * 3 / 2,
        "{mc_group} to the group and {mc_unicast} unicast for {SAMPLES} samples"
    );
    assert!(
        mc_unicast < SAMPLES / 10,
        "{mc_unicast} user samples sent unicast"
    );
    // Without: once per sample and subscriber, none to the group.
    assert!(
        uc_unicast >= SAMPLES * u64::from(SUBSCRIBERS),
        "{uc_unicast}"
    );
    assert_eq!(uc_group, 0);
    let _ = tshark;
    for f in [&mc, &uc, &own] {
        let report = tshark_check(f).unwrap_or_else(|e| panic!("tshark on {}: {e}", f.display()));
        let issues = report.issues();
        assert!(
            issues.is_empty(),
            "tshark: {:#?}",
            &issues[..issues.len().min(20)]
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// UDP datagrams the namespace `ns` has sent so far.
fn out_datagrams(ns: &str) -> u64 {
    let o = Command::new("ip")
        .args(["netns", "exec", ns, "cat", "/proc/net/snmp"])
        .output()
        .expect("ip netns exec");
    parse_udp_out_datagrams(&String::from_utf8_lossy(&o.stdout)).expect("Udp: OutDatagrams")
}

/// One raw run (1 publisher, 3 subscribers); returns the datagrams the publisher's namespace
/// sent and the samples each subscriber received.
fn run_raw(tb: &Testbed, root: &Path, multicast: bool) -> (u64, Vec<u64>) {
    let tag = if multicast { "raw-mc" } else { "raw-uc" };
    let with = |mut v: Vec<String>| {
        if multicast {
            v.push("-multicast".into());
        }
        v
    };
    let strings = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let mut pub_args = strings(&[
        "-pub",
        "-raw",
        "-nic",
        PUB_ADDR,
        "-dataLen",
        "200",
        "-noPrint",
        "-numSubscribers",
        "3",
        "-numIter",
        "5000",
        "-latencyCount",
        "100",
    ]);
    if !multicast {
        pub_args.extend(strings(&["-peer", &format!("{SUB_ADDR}:0-2")]));
    }
    let pub_args = with(pub_args);
    let pub_dir = root.join(format!("{tag}-pub"));
    std::fs::create_dir_all(&pub_dir).unwrap();
    let before = out_datagrams(&tb.ns_pub);
    let (publ, subs) = std::thread::scope(|s| {
        let subs: Vec<_> = (0..SUBSCRIBERS)
            .map(|sid| {
                let dir = root.join(format!("{tag}-sub{sid}"));
                std::fs::create_dir_all(&dir).unwrap();
                let mut args = strings(&["-sub", "-raw", "-nic", SUB_ADDR, "-dataLen", "200"]);
                args.extend(strings(&["-noPrint", "-sidMultiSubTest", &sid.to_string()]));
                if !multicast {
                    args.extend(strings(&["-peer", PUB_ADDR]));
                }
                let args = with(args);
                let ns = tb.ns_sub.clone();
                s.spawn(move || side(&ns, &dir, &args))
            })
            .collect();
        // The subscribers listen before the publisher starts (raw mode has no discovery).
        std::thread::sleep(Duration::from_millis(500));
        let publ = s.spawn(|| side(&tb.ns_pub, &pub_dir, &pub_args));
        let join = |h: std::thread::ScopedJoinHandle<'_, Output>| {
            h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
        };
        let publ = join(publ);
        let subs: Vec<Output> = subs.into_iter().map(join).collect();
        (publ, subs)
    });
    let sent = out_datagrams(&tb.ns_pub) - before;
    assert!(publ.status.success(), "publisher: {}", text(&publ));
    let want = format!(
        "Use Multicast: {}",
        if multicast { "True" } else { "False" }
    );
    assert!(
        String::from_utf8_lossy(&publ.stderr).contains(&want),
        "{want}: {}",
        text(&publ)
    );
    let received = subs
        .iter()
        .enumerate()
        .map(|(sid, o)| {
            assert!(o.status.success(), "subscriber {sid}: {}", text(o));
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| {
                    let f: Vec<&str> = l.split(',').map(str::trim).collect();
                    (f.len() >= 5 && f[0].parse::<u64>().is_ok()).then(|| f[1].parse().ok())?
                })
                .next_back()
                .unwrap_or_else(|| panic!("no summary row from subscriber {sid}: {}", text(o)))
        })
        .collect();
    (sent, received)
}

#[test]
fn raw_multicast_sends_each_sample_once() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() {
        ferrodds_testkit::skip("the namespace test needs root");
        return;
    }
    let tb = Testbed::create_with_addresses(Impairments::default(), PUB_ADDR, SUB_ADDR)
        .expect("testbed");
    let root = temp_dir("raw-multicast");
    let (mc_sent, mc_received) = run_raw(&tb, &root, true);
    let (uc_sent, uc_received) = run_raw(&tb, &root, false);
    eprintln!(
        "raw, 5000 samples to {SUBSCRIBERS} subscribers: -multicast {mc_sent} datagrams sent, \
         received {mc_received:?}; unicast {uc_sent} datagrams, received {uc_received:?}"
    );
    // Best effort on a clean veth: (nearly) every sample reaches every subscriber.
    for r in mc_received.iter().chain(&uc_received) {
        assert!(*r >= 4_500, "{mc_received:?} {uc_received:?}");
    }
    // Once per sample with multicast, once per sample and subscriber without.
    assert!((5_000..6_000).contains(&mc_sent), "{mc_sent}");
    assert!(uc_sent >= 15_000, "{uc_sent}");
    let _ = std::fs::remove_dir_all(&root);
}
