//! End-to-end raw-UDP runs: publisher and subscriber(s) as separate processes on
//! 127.0.0.1, each bounded by `-executionTime`/`-numIter` and a process timeout. Every
//! test uses its own domain, hence its own ports.

mod common;

use std::time::Duration;

use common::{latency_summary, spawn, throughput_summary, wait, wait_killed_after};

const T: Duration = Duration::from_secs(40);

fn pair(
    domain: &str,
    pub_args: &[&str],
    sub_args: &[&str],
) -> (common::Finished, common::Finished) {
    let mut s = vec!["-sub", "-raw", "-domain", domain];
    s.extend_from_slice(sub_args);
    let sub = spawn(&s);
    let mut p = vec!["-pub", "-raw", "-domain", domain];
    p.extend_from_slice(pub_args);
    let publ = spawn(&p);
    let p = wait(publ, T, "publisher");
    let s = wait(sub, T, "subscriber");
    (p, s)
}

fn assert_ok(r: &common::Finished, who: &str) {
    assert_eq!(r.code, Some(0), "{who} failed:\n{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("Test ended."), "{who}: {}", r.stderr);
}

#[test]
fn latency_test() {
    let (p, s) = pair(
        "20",
        &["-latencyTest", "-exec", "2", "-noPrint"],
        &["-noPrint"],
    );
    assert_ok(&p, "pub");
    assert_ok(&s, "sub");
    assert!(p.stderr.contains("Finishing test due to timer..."));
    assert!(p.stderr.contains("Mode: LATENCY TEST (Ping-Pong test)"));
    let l = latency_summary(&p.stdout);
    assert_eq!(l[0], 100.0);
    let (ave, min, max, p50, p99) = (l[1], l[3], l[4], l[5], l[7]);
    assert!(ave > 0.0 && min > 0.0, "{l:?}");
    assert!(min <= p50 && p50 <= p99 && p99 <= max, "{l:?}");
    // Loopback one-way latency far below a second.
    assert!(p50 < 100_000.0, "{l:?}");
    let t = throughput_summary(&s.stdout);
    assert_eq!(t[0], 100.0);
    assert!(t[1] > 100.0, "{t:?}");
    assert_eq!(t[4], 0.0, "lost: {t:?}");
    // -noPrint: exactly one header and one row on each side.
    assert_eq!(p.stdout.lines().count(), 2, "{}", p.stdout);
    assert_eq!(s.stdout.lines().count(), 2, "{}", s.stdout);
}

#[test]
fn nic_by_interface_name() {
    // The published tutorial's raw baseline names the interface (`-raw -nic eth0`): the
    // name is resolved to its IPv4 address. Here the loopback interface, by name.
    let (p, s) = pair(
        "32",
        &[
            "-latencyTest",
            "-exec",
            "1",
            "-noPrint",
            "-nic",
            "lo",
            "-peer",
            "127.0.0.1",
        ],
        &["-noPrint", "-nic", "lo", "-peer", "127.0.0.1"],
    );
    assert_ok(&p, "pub");
    assert_ok(&s, "sub");
    for r in [&p, &s] {
        assert!(r.stderr.contains("\tNic: lo\n"), "{}", r.stderr);
    }
    let l = latency_summary(&p.stdout);
    assert!(l[1] > 0.0, "{l:?}");
    let t = throughput_summary(&s.stdout);
    assert!(t[1] > 10.0, "{t:?}");
}

#[test]
fn throughput_exact_count_without_batching() {
    let (p, s) = pair(
        "21",
        &[
            "-numIter",
            "20000",
            "-latencyCount",
            "1000",
            "-dataLen",
            "64",
        ],
        &["-dataLen", "64"],
    );
    assert_ok(&p, "pub");
    assert_ok(&s, "sub");
    assert!(p.stderr.contains("\tBatching: No"));
    let t = throughput_summary(&s.stdout);
    assert_eq!(t[0], 64.0);
    // Every sample either arrived or was counted lost.
    assert_eq!(t[1] + t[4], 20000.0, "{t:?}\n{}", s.stdout);
    assert_eq!(t[4], 0.0, "lost on loopback: {t:?}");
    assert!(t[2] > 0.0 && t[3] > 0.0, "{t:?}");
    // The publisher printed latency intervals and a summary from the pings.
    assert!(
        p.stdout.contains("Intervals One-Way Latency for 64 Bytes:"),
        "{}",
        p.stdout
    );
    let l = latency_summary(&p.stdout);
    assert!(l[1] > 0.0, "{l:?}");
}

#[test]
fn throughput_with_batching() {
    let (p, s) = pair(
        "22",
        &[
            "-exec",
            "2",
            "-batchSize",
            "1000",
            "-dataLen",
            "100",
            "-noPrint",
            "-pubRate",
            "20000:sleep",
        ],
        &["-noPrint"],
    );
    assert_ok(&p, "pub");
    assert_ok(&s, "sub");
    assert!(p.stderr.contains("\tBatching: 1000 Bytes"), "{}", p.stderr);
    let t = throughput_summary(&s.stdout);
    // Raw UDP has no flow control: paced at 20000 samples/s nothing may be lost.
    assert!(t[1] > 1000.0, "{t:?}");
    assert_eq!(t[4], 0.0, "loss on loopback: {t:?}");
    assert!(p
        .stderr
        .contains("Publication Rate: 20000 Samples/s (Sleep)"));
}

#[test]
fn batching_exact_count() {
    let (p, s) = pair(
        "23",
        &[
            "-numIter",
            "30000",
            "-batchSize",
            "4000",
            "-dataLen",
            "200",
            "-latencyCount",
            "10",
        ],
        &["-dataLen", "200"],
    );
    assert_ok(&p, "pub");
    assert_ok(&s, "sub");
    let t = throughput_summary(&s.stdout);
    assert_eq!(t[1] + t[4], 30000.0, "{t:?}");
    assert_eq!(t[4], 0.0, "{t:?}");
    let l = latency_summary(&p.stdout);
    assert!(l[1] > 0.0);
    // 20 samples per batch, a ping every 10th batch: 150 pings, at most one per batch;
    // the first pong only starts the statistics, so at most 149 interval rows.
    let rows = common::csv_rows(&p.stdout).len() - 1;
    assert!((100..=149).contains(&rows), "{rows} latency rows");
}

#[test]
fn two_subscribers_latency() {
    let d = "24";
    let s0 = spawn(&[
        "-sub",
        "-raw",
        "-domain",
        d,
        "-sidMultiSubTest",
        "0",
        "-noPrint",
    ]);
    let s1 = spawn(&[
        "-sub",
        "-raw",
        "-domain",
        d,
        "-sidMultiSubTest",
        "1",
        "-noPrint",
    ]);
    let p = spawn(&[
        "-pub",
        "-raw",
        "-domain",
        d,
        "-numSubscribers",
        "2",
        "-latencyTest",
        "-exec",
        "2",
        "-noPrint",
    ]);
    let p = wait(p, T, "publisher");
    let s0 = wait(s0, T, "sub 0");
    let s1 = wait(s1, T, "sub 1");
    assert_ok(&p, "pub");
    assert_ok(&s0, "sub0");
    assert_ok(&s1, "sub1");
    assert!(
        p.stderr
            .contains("The following ports will be used: 13410, 13411, 13412, 13414"),
        "{}",
        p.stderr
    );
    let l = latency_summary(&p.stdout);
    assert!(l[1] > 0.0);
    let t0 = throughput_summary(&s0.stdout);
    let t1 = throughput_summary(&s1.stdout);
    assert!(t0[1] > 10.0 && t1[1] > 10.0, "{t0:?} {t1:?}");
    assert_eq!(t0[4] + t1[4], 0.0);
}

#[test]
fn two_subscribers_throughput_peer_ranges() {
    let d = "25";
    let s0 = spawn(&["-sub", "-raw", "-domain", d, "-sid", "0"]);
    let s1 = spawn(&["-sub", "-raw", "-domain", d, "-sid", "1"]);
    let p = spawn(&[
        "-pub",
        "-raw",
        "-domain",
        d,
        "-numSubscribers",
        "2",
        "-peer",
        "127.0.0.1:0-1",
        "-numIter",
        "10000",
        "-latencyCount",
        "100",
    ]);
    let p = wait(p, T, "publisher");
    let s0 = wait(s0, T, "sub 0");
    let s1 = wait(s1, T, "sub 1");
    assert_ok(&p, "pub");
    for s in [&s0, &s1] {
        assert_ok(s, "sub");
        let t = throughput_summary(&s.stdout);
        assert_eq!(t[1] + t[4], 10000.0, "{t:?}");
    }
}

#[test]
fn json_output_file_and_latency_file() {
    let dir = std::env::temp_dir().join(format!("perftest-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("pub.json");
    let lat = dir.join("lat.csv");
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&lat);
    let (p, s) = pair(
        "26",
        &[
            "-latencyTest",
            "-numIter",
            "300",
            "-outputFormat",
            "json",
            "-outputFile",
            out.to_str().unwrap(),
            "-latencyFile",
            lat.to_str().unwrap(),
        ],
        &["-outputFormat", "legacy"],
    );
    assert_ok(&p, "pub");
    assert_ok(&s, "sub");
    assert!(
        p.stdout.is_empty(),
        "results went to the file: {}",
        p.stdout
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).expect(&text);
    let run = &v["perftest"][0];
    assert_eq!(run["length"], 100);
    assert!(run["intervals"].as_array().unwrap().len() > 100);
    assert!(run["summary"]["latency_ave"].as_f64().unwrap() > 0.0);
    let lat_text = std::fs::read_to_string(&lat).unwrap();
    assert!(lat_text.starts_with("Sample Number, Value\n0, "));
    // 300 pings, the first pong only starts the statistics.
    assert_eq!(lat_text.lines().count(), 1 + 299 + 1, "{lat_text}");
    assert!(
        s.stdout.contains("********** New data length is 100"),
        "{}",
        s.stdout
    );
    assert!(s.stdout.contains("Packets/s(ave):"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_prints_what_was_measured() {
    // A subscriber alone never gets data; SIGINT must still give a summary and exit.
    let sub = spawn(&["-sub", "-raw", "-domain", "27", "-noPrint"]);
    std::thread::sleep(Duration::from_millis(700));
    let st = std::process::Command::new("kill")
        .args(["-INT", &sub.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let s = wait(sub, Duration::from_secs(15), "subscriber");
    assert_eq!(s.code, Some(0), "{}", s.stderr);
    let t = throughput_summary(&s.stdout);
    assert_eq!((t[0], t[1], t[4]), (100.0, 0.0, 0.0));
    assert!(s.stderr.contains("No samples were received"));
}

// ---- raw TCP (`-rawTransport -transport TCP`) ----

fn tcp_pair(
    domain: &str,
    pub_args: &[&str],
    sub_args: &[&str],
) -> (common::Finished, common::Finished) {
    let mut p = vec!["-transport", "TCP"];
    p.extend_from_slice(pub_args);
    let mut s = vec!["-transport", "TCP"];
    s.extend_from_slice(sub_args);
    pair(domain, &p, &s)
}

#[test]
fn tcp_throughput_exact_count_and_latency() {
    let (p, s) = tcp_pair(
        "28",
        &[
            "-numIter",
            "20000",
            "-latencyCount",
            "1000",
            "-dataLen",
            "64",
        ],
        &["-dataLen", "64"],
    );
    assert_ok(&p, "pub");
    assert_ok(&s, "sub");
    for out in [&p.stderr, &s.stderr] {
        assert!(out.contains("Kind: TCP (raw sockets, no RTPS"), "{out}");
        assert!(
            out.contains("Reliability: Reliable (raw TCP stream)"),
            "{out}"
        );
    }
    assert!(p
        .stderr
        .contains("The following TCP ports will be used: 14410, 14411, 14412"));
    assert!(s
        .stderr
        .contains("The following TCP ports will be used: 14412, 14410, 14411"));
    let t = throughput_summary(&s.stdout);
    // A stream loses nothing: every sample written arrived.
    assert_eq!(t[1], 20000.0, "{t:?}\n{}", s.stdout);
    assert_eq!(t[4], 0.0, "{t:?}");
    let l = latency_summary(&p.stdout);
    assert!(l[1] > 0.0, "{l:?}");
}

#[test]
fn tcp_large_samples_batching_and_two_subscribers() {
    // 1 MiB samples (the subscriber is not told the size), counted exactly.
    let (p, s) = tcp_pair(
        "29",
        &[
            "-numIter",
            "300",
            "-latencyCount",
            "50",
            "-dataLen",
            "1048576",
        ],
        &[],
    );
    assert_ok(&p, "pub");
    assert_ok(&s, "sub");
    let t = throughput_summary(&s.stdout);
    assert_eq!(t[0], 1048576.0, "{t:?}");
    assert_eq!(t[1], 300.0, "{t:?}");
    // Batching in the tool: 100 B samples in 1000 B frames.
    let (p, s) = tcp_pair(
        "29",
        &["-numIter", "50000", "-batchSize", "1000", "-dataLen", "100"],
        &["-dataLen", "100"],
    );
    assert_ok(&p, "pub");
    assert_ok(&s, "sub");
    assert!(p.stderr.contains("\tBatching: 1000 Bytes"), "{}", p.stderr);
    assert_eq!(throughput_summary(&s.stdout)[1], 50000.0);
    // Two subscribers: the publisher's readers accept a connection from each.
    let d = "29";
    let subs: Vec<_> = ["0", "1"]
        .iter()
        .map(|sid| {
            spawn(&[
                "-sub",
                "-raw",
                "-transport",
                "TCP",
                "-domain",
                d,
                "-sid",
                sid,
                "-noPrint",
            ])
        })
        .collect();
    let p = spawn(&[
        "-pub",
        "-raw",
        "-transport",
        "TCP",
        "-domain",
        d,
        "-numSubscribers",
        "2",
        "-latencyTest",
        "-exec",
        "2",
        "-noPrint",
    ]);
    let p = wait(p, T, "publisher");
    assert_ok(&p, "pub");
    assert!(latency_summary(&p.stdout)[1] > 0.0);
    for (i, s) in subs.into_iter().enumerate() {
        let s = wait(s, T, "subscriber");
        assert_ok(&s, &format!("sub {i}"));
        let t = throughput_summary(&s.stdout);
        assert!(t[1] > 10.0 && t[4] == 0.0, "sub {i}: {t:?}");
    }
}

#[test]
fn tls_raw_baseline_counts_exactly_and_refuses_foreign_identities() {
    // Raw TLS with the built-in identity: a stream, so every sample arrives.
    let (p, s) = pair(
        "26",
        &[
            "-transport",
            "TLS",
            "-numIter",
            "5000",
            "-latencyCount",
            "100",
            "-dataLen",
            "1024",
        ],
        &["-transport", "TLS"],
    );
    assert_ok(&p, "pub");
    assert_ok(&s, "sub");
    assert!(
        p.stderr.contains("Kind: TLS (raw TLS 1.3 over TCP sockets"),
        "{}",
        p.stderr
    );
    assert_eq!(throughput_summary(&s.stdout)[1], 5000.0);
    assert!(latency_summary(&p.stdout)[1] > 0.0);
    // A TLS publisher against a plain raw TCP subscriber: the handshakes of the subscriber's
    // connections fail and say why.
    let sub = spawn(&["-sub", "-raw", "-transport", "TCP", "-domain", "26"]);
    let p = spawn(&[
        "-pub",
        "-raw",
        "-transport",
        "TLS",
        "-domain",
        "26",
        "-exec",
        "3",
    ]);
    let p = wait_killed_after(p, Duration::from_secs(6));
    let _ = wait_killed_after(sub, Duration::from_secs(1));
    assert!(
        p.stderr.contains("raw TLS: connection with") && p.stderr.contains("does not speak TLS"),
        "{}",
        p.stderr
    );
}

/// The raw shared-memory baseline: plain rings in `/dev/shm`, one copy per message; the
/// summary names it, latency and throughput are measured, and the segments are gone after.
#[test]
fn raw_shared_memory_latency_and_throughput() {
    let (p, s) = pair(
        "91",
        &[
            "-transport",
            "SHMEM",
            "-latencyTest",
            "-exec",
            "2",
            "-noPrint",
        ],
        &["-transport", "SHMEM", "-noPrint"],
    );
    assert_ok(&p, "pub");
    assert_ok(&s, "sub");
    for r in [&p, &s] {
        assert!(
            r.stderr
                .contains("Reliability: Best Effort (raw shared memory)"),
            "{}",
            r.stderr
        );
        assert!(
            r.stderr.contains("Kind: SHMEM (raw shared-memory rings"),
            "{}",
            r.stderr
        );
    }
    let l = latency_summary(&p.stdout);
    assert!(l[1] > 0.0 && l[5] < 100_000.0, "{l:?}");
    let t = throughput_summary(&s.stdout);
    assert!(t[1] > 100.0 && t[4] == 0.0, "{t:?}");
    let (p, s) = pair(
        "91",
        &[
            "-transport",
            "SHMEM",
            "-numIter",
            "20000",
            "-latencyCount",
            "1000",
            "-dataLen",
            "64",
            "-batchSize",
            "0",
        ],
        &["-transport", "SHMEM", "-dataLen", "64"],
    );
    assert_ok(&p, "pub");
    assert_ok(&s, "sub");
    let t = throughput_summary(&s.stdout);
    // Best effort, as raw UDP: every sample arrived or was counted lost.
    assert_eq!(t[1] + t[4], 20000.0, "{t:?}\n{}", s.stdout);
    assert!(t[1] > 0.0, "{t:?}");
    let uid = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        .unwrap();
    // Domain 91: publisher segments 30161 and 30162, subscriber 30163 (the raw ports).
    for id in [30161, 30162, 30163] {
        use std::os::unix::fs::MetadataExt;
        let ns = std::fs::metadata("/proc/self/ns/net").unwrap().ino();
        let seg = format!("/dev/shm/ferrodds-{uid}-{ns}-{id}");
        assert!(!std::path::Path::new(&seg).exists(), "{seg} left behind");
    }
}

/// Raw multicast on loopback (`-nic 127.0.0.1`, the groups joined there): both subscribers
/// listen on participant 1's port in the Throughput group, the publisher on its two ports
/// in the Latency and Announcement groups; one publisher sends every sample once and both
/// subscribers receive it. `-multicastAddr` sets the three groups.
#[test]
fn multicast_groups_reach_two_subscribers() {
    let d = "33";
    for groups in [None, Some("239.255.7.1")] {
        let mut extra = vec!["-nic", "127.0.0.1", "-noPrint"];
        match groups {
            Some(g) => extra.extend(["-multicastAddr", g]),
            None => extra.push("-multicast"),
        }
        let sub = |sid: &'static str| {
            let mut a = vec!["-sub", "-raw", "-domain", d, "-sidMultiSubTest", sid];
            a.extend_from_slice(&extra);
            spawn(&a)
        };
        let (s0, s1) = (sub("0"), sub("1"));
        let mut a = vec![
            "-pub",
            "-raw",
            "-domain",
            d,
            "-numSubscribers",
            "2",
            "-numIter",
            "5000",
            "-latencyCount",
            "100",
            "-dataLen",
            "100",
        ];
        a.extend_from_slice(&extra);
        let p = wait(spawn(&a), T, "publisher");
        let s0 = wait(s0, T, "sub 0");
        let s1 = wait(s1, T, "sub 1");
        assert_ok(&p, "pub");
        let want = match groups {
            Some(_) => "Multicast groups: Throughput 239.255.7.1, Latency 239.255.7.2, Announcement 239.255.7.3",
            None => "Multicast groups: Throughput 239.255.1.1, Latency 239.255.1.2, Announcement 239.255.1.100",
        };
        for (r, who) in [(&p, "pub"), (&s0, "sub 0"), (&s1, "sub 1")] {
            assert!(
                r.stderr.contains("Use Multicast: True"),
                "{who}: {}",
                r.stderr
            );
            assert!(r.stderr.contains(want), "{who}: {}", r.stderr);
        }
        // Domain 33: publisher 15660/15661, every subscriber participant 1's 15662.
        assert!(
            p.stderr
                .contains("The following ports will be used: 15660, 15661, 15662"),
            "{}",
            p.stderr
        );
        assert!(
            s1.stderr
                .contains("The following ports will be used: 15662, 15660, 15661"),
            "{}",
            s1.stderr
        );
        let l = latency_summary(&p.stdout);
        assert!(l[1] > 0.0, "{l:?}");
        for (s, who) in [(&s0, "sub 0"), (&s1, "sub 1")] {
            assert_ok(s, who);
            let t = throughput_summary(&s.stdout);
            // Best effort: every sample arrived or was counted lost, and most arrived.
            assert_eq!(t[1] + t[4], 5000.0, "{who}: {t:?}\n{}", s.stdout);
            assert!(t[1] >= 4000.0, "{who}: {t:?}");
        }
    }
}
