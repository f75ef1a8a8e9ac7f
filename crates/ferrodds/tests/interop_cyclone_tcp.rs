//! Interoperability with Eclipse Cyclone DDS over TCP (issue 12): Debian's `ddsperf` with
//! `General/Transport=tcp` on 127.0.0.1 and a FerroDDS participant with
//! `Transports::Tcpv4`, each given the other's server port as its only peer. Discovery, then
//! ddsperf's KeyedSeq data both ways, reliable and best effort, 32 B and 100 KB.
//!
//! Skipped with a notice when `ddsperf` is not installed (`scripts/install-test-deps.sh`
//! installs it); `CI=true` makes that a failure. Domains 241-248, ports 27520-27560.

mod common;

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use ferrodds::{
    Config, DataReaderQos, DataWriterQos, DomainParticipant, PublisherQos, SubscriberQos, TopicQos,
    TopicType, Transports,
};

/// ddsperf's KeyedSeq type.
#[derive(Debug, Clone, PartialEq, Eq, Default, TopicType)]
#[dds(type_name = "KeyedSeq", extensibility = "final")]
struct KeyedSeq {
    seq: u32,
    #[key]
    keyval: u32,
    baggage: Vec<u8>,
}

fn ddsperf_available() -> bool {
    let ok = Command::new("ddsperf")
        .arg("help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !ok {
        ferrodds_testkit::skip("ddsperf not installed");
    }
    ok
}

/// Starts `ddsperf -i DOMAIN ARGS` over TCP on 127.0.0.1:`port`, with our server as its peer.
fn ddsperf(domain: u32, port: u16, peer: u16, args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let dir = std::env::temp_dir().join(format!("ferrodds-cyclone-tcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join(format!("cyclone-tcp-{domain}.xml"));
    std::fs::write(
        &cfg,
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<CycloneDDS xmlns="https://cdds.io/config">
  <Domain Id="any">
    <General>
      <Interfaces><NetworkInterface address="127.0.0.1"/></Interfaces>
      <AllowMulticast>false</AllowMulticast>
      <Transport>tcp</Transport>
    </General>
    <TCP><Port>{port}</Port></TCP>
    <Discovery>
      <ParticipantIndex>none</ParticipantIndex>
      <Peers><Peer Address="127.0.0.1:{peer}"/></Peers>
    </Discovery>
  </Domain>
</CycloneDDS>
"#
        ),
    )
    .unwrap();
    let mut child = Command::new("ddsperf")
        .env("CYCLONEDDS_URI", format!("file://{}", cfg.display()))
        .args(["-i", &domain.to_string()])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("ddsperf starts");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

fn tcp_participant(domain: u32, port: u16, peer: u16) -> DomainParticipant {
    let cfg: Config = loopback_config()
        .transports(Transports::Tcpv4)
        .tcp_port(port)
        .tcp_peers(vec![SocketAddrV4::new(Ipv4Addr::LOCALHOST, peer)]);
    DomainParticipant::with_config(domain, cfg).expect("TCP participant")
}

fn topic(reliable: bool) -> &'static str {
    if reliable {
        "DDSPerfRDataKS"
    } else {
        "DDSPerfUDataKS"
    }
}

/// ddsperf publishes; we receive at least `min` samples of `size` bytes of baggage, in order.
fn cyclone_to_ours(domain: u32, port: u16, size: usize, reliable: bool, min: usize) {
    if !ddsperf_available() {
        return;
    }
    let p = tcp_participant(domain, port, port + 1);
    let t = p
        .create_topic::<KeyedSeq>(topic(reliable), TopicQos::default())
        .unwrap();
    let rq = if reliable {
        DataReaderQos::default().reliable().keep_all()
    } else {
        DataReaderQos::default().keep_all()
    };
    let r = p
        .create_subscriber(SubscriberQos::default())
        .unwrap()
        .create_datareader(&t, rq)
        .unwrap();
    let mut args = vec!["-D", "4"];
    if !reliable {
        args.push("-u");
    }
    let size_arg = size.to_string();
    args.extend(["pub", "200Hz", "size", &size_arg]);
    let (mut child, lines) = ddsperf(domain, port + 1, port, &args);
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut seqs = Vec::new();
    while Instant::now() < deadline {
        let _ = r.wait_for_data(Duration::from_millis(50));
        for s in r.take().unwrap() {
            if let Some(d) = s.data {
                // ddsperf counts the whole sample (seq, keyval, length) in its size.
                assert!(
                    d.baggage.len() + 12 >= size,
                    "short sample: {}",
                    d.baggage.len()
                );
                seqs.push(d.seq);
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let out: Vec<String> = lines.try_iter().collect();
    assert!(
        seqs.len() >= min,
        "{size} B reliable={reliable}: only {} samples from Cyclone over TCP; transport {:?}; \
         ddsperf: {out:#?}",
        seqs.len(),
        p.transport_stats()
    );
    if reliable {
        assert!(seqs.windows(2).all(|w| w[0] + 1 == w[1]), "gaps: {seqs:?}");
    }
    eprintln!(
        "{size} B reliable={reliable}: {} samples from Cyclone over TCP",
        seqs.len()
    );
}

/// We publish; ddsperf's `sub` reports a total of at least `min`.
fn ours_to_cyclone(domain: u32, port: u16, size: usize, reliable: bool, min: u64) {
    if !ddsperf_available() {
        return;
    }
    let p = tcp_participant(domain, port, port + 1);
    let t = p
        .create_topic::<KeyedSeq>(topic(reliable), TopicQos::default())
        .unwrap();
    let wq = if reliable {
        DataWriterQos::default().reliable().keep_all()
    } else {
        DataWriterQos::default()
    };
    let w = p
        .create_publisher(PublisherQos::default())
        .unwrap()
        .create_datawriter(&t, wq)
        .unwrap();
    let mut args = vec!["-D", "5", "-1"];
    if !reliable {
        args.push("-u");
    }
    args.push("sub");
    let (mut child, lines) = ddsperf(domain, port + 1, port, &args);
    assert!(
        w.wait_for_matched(1, Duration::from_secs(15)),
        "no match with Cyclone over TCP"
    );
    // Cyclone's reader starts at the first heartbeat it sees: let its discovery settle.
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    let mut seq = 0u32;
    while start.elapsed() < Duration::from_secs(2) {
        w.write(&KeyedSeq {
            seq,
            keyval: 0,
            baggage: vec![0xab; size],
        })
        .unwrap();
        seq += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(2500));
    let _ = child.kill();
    let _ = child.wait();
    let out: Vec<String> = lines.try_iter().collect();
    let totals = ddsperf_totals(out.iter().map(String::as_str));
    assert!(
        totals.iter().any(|&t| t >= min),
        "{size} B reliable={reliable}: wrote {seq}, Cyclone over TCP received too little; \
         transport {:?}; ddsperf: {out:#?}",
        p.transport_stats()
    );
    eprintln!("{size} B reliable={reliable}: wrote {seq}, ddsperf totals {totals:?}");
}

#[test]
fn tcp_cyclone_to_ours_reliable_32() {
    with_timeout(60, || cyclone_to_ours(241, 27520, 32, true, 200));
}

#[test]
fn tcp_cyclone_to_ours_reliable_100k() {
    with_timeout(60, || cyclone_to_ours(242, 27525, 100_000, true, 200));
}

#[test]
fn tcp_cyclone_to_ours_best_effort_32() {
    with_timeout(60, || cyclone_to_ours(243, 27530, 32, false, 200));
}

#[test]
fn tcp_ours_to_cyclone_reliable_32() {
    with_timeout(60, || ours_to_cyclone(244, 27535, 32, true, 200));
}

#[test]
fn tcp_ours_to_cyclone_reliable_100k() {
    with_timeout(60, || ours_to_cyclone(245, 27540, 100_000, true, 200));
}

#[test]
fn tcp_ours_to_cyclone_best_effort_32() {
    with_timeout(60, || ours_to_cyclone(246, 27545, 32, false, 200));
}
