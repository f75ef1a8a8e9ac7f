//! Live interoperability of the bare engine with Eclipse Cyclone DDS
//! (`ddsperf`) over real UDP sockets on 127.0.0.1 only.
//!
//! Skipped (with a notice) when `ddsperf` is not installed. Cyclone is pinned to
//! loopback with unicast discovery through a generated configuration file, and
//! uses a domain id of its own so parallel tests do not interfere. Each
//! scenario is bounded to a few seconds.

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ferrodds_rtps::{
    Batching, ChangeKind, Event, GuidPrefix, History, Locator, Participant, ParticipantConfig,
    ReaderAttributes, ReaderQos, Reliability, Timestamp, WriteRequest, WriterAttributes, WriterQos,
};

const CYCLONE_CONFIG: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<CycloneDDS xmlns="https://cdds.io/config">
  <Domain Id="any">
    <General>
      <Interfaces><NetworkInterface name="lo"/></Interfaces>
      <AllowMulticast>false</AllowMulticast>
    </General>
    <Discovery>
      <ParticipantIndex>auto</ParticipantIndex>
      <Peers><Peer Address="127.0.0.1"/></Peers>
    </Discovery>
  </Domain>
</CycloneDDS>
"#;

/// At most this many scenarios (each a `ddsperf` process plus an engine)
/// run at once, so discovery stays prompt on a small shared machine.
const MAX_CONCURRENT: usize = 4;

static RUNNING: std::sync::Mutex<usize> = std::sync::Mutex::new(0);
static RUNNING_CV: std::sync::Condvar = std::sync::Condvar::new();

/// A slot among [`MAX_CONCURRENT`], released on drop.
struct Permit;

fn permit() -> Permit {
    let mut n = RUNNING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    while *n >= MAX_CONCURRENT {
        n = RUNNING_CV
            .wait(n)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
    *n += 1;
    Permit
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut n = RUNNING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *n -= 1;
        RUNNING_CV.notify_one();
    }
}

fn ddsperf_available() -> bool {
    Command::new("ddsperf")
        .arg("help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Starts `ddsperf -i DOMAIN ARGS...` on loopback; its stdout lines go to the
/// returned channel.
fn ddsperf(domain: u32, args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let dir = std::env::temp_dir().join(format!("ferrodds-cyclone-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // One file per scenario: tests run in parallel, and rewriting a shared
    // file while another ddsperf reads it can hand that one an empty config.
    let cfg = dir.join(format!("cyclone-{domain}.xml"));
    std::fs::write(&cfg, CYCLONE_CONFIG).unwrap();
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

/// The engine on two UDP sockets (metatraffic and user unicast) of
/// participant index `pid` in `domain`, announcing itself to the first ten
/// participant indices on 127.0.0.1 (as Cyclone's unicast discovery does).
struct Node {
    p: Participant,
    meta: UdpSocket,
    user: UdpSocket,
    start: Instant,
    buf: Vec<u8>,
    rx: Vec<u8>,
}

impl Node {
    fn new(domain: u32, pid: u32) -> Self {
        let base = 7400 + 250 * domain;
        let lo = Ipv4Addr::LOCALHOST;
        let meta_port = (base + 10 + 2 * pid) as u16;
        let user_port = (base + 11 + 2 * pid) as u16;
        let meta = UdpSocket::bind(SocketAddrV4::new(lo, meta_port)).expect("bind metatraffic");
        let user = UdpSocket::bind(SocketAddrV4::new(lo, user_port)).expect("bind user");
        meta.set_nonblocking(true).unwrap();
        user.set_nonblocking(true).unwrap();
        let mut prefix = [0x01, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        prefix[4..8].copy_from_slice(&std::process::id().to_be_bytes());
        prefix[8..12].copy_from_slice(&pid.to_be_bytes());
        let cfg = ParticipantConfig {
            domain_id: domain,
            participant_id: pid,
            guid_prefix: GuidPrefix(prefix),
            metatraffic_unicast_locators: vec![Locator::udpv4(lo, meta_port)],
            default_unicast_locators: vec![Locator::udpv4(lo, user_port)],
            spdp_destinations: (0..10)
                .filter(|&i| i != pid)
                .map(|i| Locator::udpv4(lo, (base + 10 + 2 * i) as u16))
                .collect(),
            ..ParticipantConfig::default()
        };
        let start = Instant::now();
        Self {
            p: Participant::new(cfg, Timestamp(0)),
            meta,
            user,
            start,
            buf: vec![0; 65536],
            rx: vec![0; 65536],
        }
    }

    fn now(&self) -> Timestamp {
        Timestamp(self.start.elapsed().as_nanos() as u64)
    }

    /// Receives, runs timers and sends for about `d`.
    fn run(&mut self, d: Duration, mut each: impl FnMut(&mut Participant, Timestamp)) {
        let end = Instant::now() + d;
        while Instant::now() < end {
            let mut idle = true;
            for s in [&self.meta, &self.user] {
                while let Ok((n, _)) = s.recv_from(&mut self.rx) {
                    idle = false;
                    let now = Timestamp(self.start.elapsed().as_nanos() as u64);
                    self.p.handle_datagram(now, None, &self.rx[..n]);
                }
            }
            let now = self.now();
            if self.p.poll_timeout().is_some_and(|t| t <= now) {
                self.p.handle_timeout(now);
            }
            each(&mut self.p, now);
            while let Some(t) = self.p.poll_transmit(now, &mut self.buf) {
                for d in &t.destinations {
                    let a = d.address;
                    let ip = Ipv4Addr::new(a[12], a[13], a[14], a[15]);
                    // Loopback only, whatever a peer announced.
                    if d.kind == Locator::KIND_UDPV4 && ip.is_loopback() {
                        let to = SocketAddr::V4(SocketAddrV4::new(ip, d.port as u16));
                        let _ = self.meta.send_to(&self.buf[..t.len], to);
                    }
                }
            }
            if idle {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }
}

/// ddsperf's data topic (`R`eliable or `U`nreliable, KeyedSeq type).
fn topic(reliable: bool) -> &'static str {
    if reliable {
        "DDSPerfRDataKS"
    } else {
        "DDSPerfUDataKS"
    }
}

/// KeyedSeq (ddsperf's KS topic): `seq u32, keyval u32, baggage sequence<octet>`, CDR LE.
fn keyed_seq(seq: u32, baggage: usize) -> Vec<u8> {
    let mut v = vec![0x00, 0x01, 0x00, 0x00];
    v.extend_from_slice(&seq.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&(baggage as u32).to_le_bytes());
    v.resize(v.len() + baggage, 0xab);
    while v.len() % 4 != 0 {
        v.push(0);
    }
    v
}

#[test]
fn cyclone_publisher_to_engine_reader_reliable() {
    cyclone_to_engine(93, "32", 200, 50, true);
}

#[test]
fn cyclone_publisher_to_engine_reader_best_effort() {
    cyclone_to_engine(97, "32", 200, 50, false);
}

#[test]
fn cyclone_fragmented_samples_to_engine_reader() {
    // 100 kB samples: Cyclone sends them as DATA_FRAGs.
    cyclone_to_engine(95, "100000", 20, 10, true);
}

#[test]
fn cyclone_1mb_samples_to_engine_reader() {
    cyclone_to_engine_with(60, "1048576", "20Hz", &[], 10, true);
}

#[test]
fn cyclone_10mb_samples_to_engine_reader() {
    cyclone_to_engine_with(61, "10485760", "4Hz", &[], 1, true);
}

#[test]
fn cyclone_bursts_of_small_samples_to_engine_reader() {
    // Cyclone packs the samples of a burst into shared datagrams.
    cyclone_to_engine_with(62, "32", "100Hz", &["burst", "50"], 2000, true);
}

fn cyclone_to_engine(domain: u32, size: &str, rate: u32, min: usize, reliable: bool) {
    cyclone_to_engine_with(domain, size, &format!("{rate}Hz"), &[], min, reliable);
}

fn cyclone_to_engine_with(
    domain: u32,
    size: &str,
    rate: &str,
    extra: &[&str],
    min: usize,
    reliable: bool,
) {
    if !ddsperf_available() {
        ferrodds_testkit::skip("ddsperf not installed");
        return;
    }
    let _permit = permit();
    let mut node = Node::new(domain, 7);
    let r = node
        .p
        .create_reader(
            ReaderAttributes {
                topic_name: topic(reliable).into(),
                type_name: "KeyedSeq".into(),
                keyed: true,
                qos: ReaderQos {
                    reliability: if reliable {
                        Reliability::RELIABLE
                    } else {
                        Reliability::BEST_EFFORT
                    },
                    history: History::KeepAll,
                    ..ReaderQos::default()
                },
            },
            Timestamp(0),
        )
        .unwrap();
    let mut args = vec!["-D", "4"];
    if !reliable {
        args.push("-u");
    }
    args.extend(["pub", rate, "size", size]);
    args.extend(extra);
    let (mut child, lines) = ddsperf(domain, &args);
    let mut sizes = Vec::new();
    let mut seqs = Vec::new();
    let mut events = Vec::new();
    node.run(Duration::from_secs(4), |p, _| {
        while let Some(e) = p.poll_event() {
            events.push(e);
        }
        while let Some(s) = p.take_sample(r) {
            if let Some(b) = s.payload.get(4..8) {
                seqs.push(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
                sizes.push(s.payload.len());
            }
        }
    });
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::SubscriptionMatched { .. })),
        "no match with Cyclone: {events:?} {:?}; ddsperf: {:#?}",
        node.p.stats(),
        lines.try_iter().collect::<Vec<_>>()
    );
    eprintln!(
        "received {} samples from Cyclone, {:?}",
        seqs.len(),
        node.p.stats()
    );
    assert!(
        seqs.len() > min,
        "only {} samples: {:?}",
        seqs.len(),
        node.p.stats()
    );
    let want: usize = size.parse().unwrap();
    assert!(sizes.iter().all(|&n| n >= want), "short samples: {sizes:?}");
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "reliable order broken"
    );
    if reliable {
        // Every sample published after we matched arrived, none skipped.
        assert!(
            seqs.windows(2).all(|w| w[1] == w[0] + 1),
            "reliable samples missing: {:?}",
            seqs.windows(2).find(|w| w[1] != w[0] + 1)
        );
        assert_eq!(node.p.stats().rejected_fragments, 0);
    }
}

#[test]
fn engine_writer_to_cyclone_subscriber_reliable() {
    engine_to_cyclone(94, 24, 5, 50, true);
}

#[test]
fn engine_writer_to_cyclone_subscriber_best_effort() {
    engine_to_cyclone(98, 24, 5, 50, false);
}

#[test]
fn engine_fragmented_samples_to_cyclone_subscriber() {
    // 150 kB samples: sent as DATA_FRAGs.
    engine_to_cyclone(96, 150_000, 50, 10, true);
}

#[test]
fn engine_1mb_samples_to_cyclone_subscriber() {
    engine_to_cyclone(63, 1_048_576, 200, 5, true);
}

#[test]
fn engine_10mb_samples_to_cyclone_subscriber() {
    engine_to_cyclone(64, 10_485_760, 600, 2, true);
}

#[test]
fn engine_batched_small_samples_to_cyclone_subscriber() {
    // Bursts of 100 samples of 32 B, batched into 8192-byte datagrams; a burst's last
    // partial batch goes on a 1 ms flush timer (the loop below never flushes).
    let batching = Batching {
        max_flush_delay: Duration::from_millis(1),
        ..Batching::bytes(8192)
    };
    engine_to_cyclone_with(65, 24, 10, 100, batching, 1000, true);
}

fn engine_to_cyclone(domain: u32, baggage: usize, period_ms: u64, min: u64, reliable: bool) {
    engine_to_cyclone_with(
        domain,
        baggage,
        period_ms,
        1,
        Batching::default(),
        min,
        reliable,
    );
}

#[allow(clippy::too_many_arguments)]
fn engine_to_cyclone_with(
    domain: u32,
    baggage: usize,
    period_ms: u64,
    burst: u32,
    batching: Batching,
    min: u64,
    reliable: bool,
) {
    if !ddsperf_available() {
        ferrodds_testkit::skip("ddsperf not installed");
        return;
    }
    let _permit = permit();
    let mut node = Node::new(domain, 7);
    let w = node
        .p
        .create_writer(
            WriterAttributes {
                topic_name: topic(reliable).into(),
                type_name: "KeyedSeq".into(),
                keyed: true,
                qos: WriterQos {
                    reliability: if reliable {
                        Reliability::RELIABLE
                    } else {
                        Reliability::BEST_EFFORT
                    },
                    history: History::KeepAll,
                    batching,
                    ..WriterQos::default()
                },
            },
            Timestamp(0),
        )
        .unwrap();
    let mut args = vec!["-D", "15", "-1"];
    if !reliable {
        args.push("-u");
    }
    args.push("sub");
    let (mut child, lines) = ddsperf(domain, &args);
    let mut seq = 0u32;
    let mut last_write = Timestamp(0);
    // Cyclone (volatile reader) starts at the first HEARTBEAT it sees after
    // matching us: give its SEDP a moment so no early burst predates it. Then
    // write for 2.5 s, and leave time for repairs and ddsperf's
    // once-a-second report (discovery may be slow on a loaded machine).
    let mut matched_at: Option<Timestamp> = None;
    let started = Instant::now();
    loop {
        node.run(Duration::from_millis(100), |p, now| {
            if matched_at.is_none() && p.matched_reader_count(w) > 0 {
                matched_at = Some(now);
            }
            let window = matched_at.map(|t| {
                (
                    t.saturating_add(Duration::from_millis(300)),
                    t.saturating_add(Duration::from_millis(2800)),
                )
            });
            if window.is_some_and(|(from, until)| now >= from && now < until)
                && now.since(last_write) >= Duration::from_millis(period_ms)
            {
                last_write = now;
                for _ in 0..burst {
                    let payload = keyed_seq(seq, baggage);
                    let req = WriteRequest {
                        kind: ChangeKind::Alive,
                        key_hash: Some([0; 16]),
                        serialized_payload: &payload,
                        // Stamped: a batch's samples share its first one's timestamp, so
                        // Cyclone reads one INFO_TS for many DATA.
                        source_timestamp: Some(ferrodds_testkit::helpers::time_from_nanos(
                            i64::try_from(now.0).unwrap_or(i64::MAX),
                        )),
                    };
                    if p.write(w, req, now).is_ok() {
                        seq += 1;
                    }
                }
            }
            while p.poll_event().is_some() {}
        });
        let now = node.now();
        let done = matched_at.is_some_and(|t| now.since(t) >= Duration::from_millis(4200));
        if done || started.elapsed() > Duration::from_secs(12) {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let out: Vec<String> = lines.try_iter().collect();
    eprintln!(
        "wrote {seq}; ddsperf: {:?}",
        out.iter().rev().take(2).collect::<Vec<_>>()
    );
    assert!(
        u64::from(seq) > min,
        "wrote only {seq}: {:?}; ddsperf: {out:#?}",
        node.p.stats()
    );
    // ddsperf sub prints "... total N lost M ..." lines once a second.
    let totals: Vec<u64> = out
        .iter()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            it.by_ref().find(|w| *w == "total")?;
            it.next()?.parse().ok()
        })
        .collect();
    assert!(
        totals.iter().any(|&t| t > min),
        "Cyclone received too little: {out:#?}"
    );
    let lost: Vec<u64> = out
        .iter()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            it.by_ref().find(|w| *w == "lost")?;
            it.next()?.parse().ok()
        })
        .collect();
    if reliable {
        assert!(lost.iter().all(|&l| l == 0), "Cyclone saw losses: {out:#?}");
        // Everything written reached Cyclone (its last report came after the
        // last write).
        assert_eq!(
            totals.iter().max().copied(),
            Some(u64::from(seq)),
            "Cyclone did not receive every sample: {out:#?}"
        );
    }
}
