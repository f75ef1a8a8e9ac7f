//! Hostile networks: a flood of fake SPDP participants (as one misbehaving host on a plant
//! network could announce) must not starve user data, must stay within bounded memory, and the
//! fakes must expire by lease once the flood stops.
//!
//! Two participants on loopback run a reliable flow at a fixed rate while 20,000 fake
//! participants, whose locators are a loopback port nobody listens on, are announced to both
//! participants' SPDP unicast ports in 4 s; or while one fake participant announces 50,000
//! endpoints in 4 s; or while garbage arrives at a high rate.

mod common;

use std::net::{Ipv4Addr, UdpSocket};
use std::time::{Duration, Instant};

use common::*;
use ferrodds::cdr::types::TestData;
use ferrodds::{
    DataReader, DataReaderQos, DataWriter, DataWriterQos, DomainParticipant, PublisherQos,
    SubscriberQos, TopicQos,
};
use ferrodds_testkit::flood::{SedpFlood, SpdpFlood};

const DOMAIN: u32 = 158;
const FAKES: u32 = 20_000;
const FLOOD: Duration = Duration::from_secs(4);
const FAKE_LEASE: Duration = Duration::from_secs(3);
/// The flow: this many samples per second for `FLOW` (the flood runs from its second 1).
const RATE: u32 = 1_000;
const FLOW: Duration = Duration::from_secs(6);
/// Share of the flow's samples that must go out on time: 95 % (the target; optimised builds
/// keep 99–100 %), 90 % in unoptimised test builds, where the engine's per-datagram work costs
/// about ten times as much (measured 96.6–99.6 % there).
const MIN_KEPT_PERCENT: u32 = if cfg!(debug_assertions) { 90 } else { 95 };
/// Resident memory the flood may add (the participants keep at most 4,096 remote
/// participants each; measured about 21 MiB).
const MAX_RSS_GROWTH_KIB: u64 = 64 * 1024;

/// The tests measure a flow's timing: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// Takes samples until `n` arrived (or `WAIT` passes).
fn collect(reader: &DataReader<TestData>, n: usize) -> Vec<ferrodds::Sample<TestData>> {
    let deadline = Instant::now() + WAIT;
    let mut out = Vec::new();
    while out.len() < n && Instant::now() < deadline {
        let _ = reader.wait_for_data(Duration::from_millis(100));
        out.extend(
            reader
                .take()
                .unwrap()
                .into_iter()
                .filter(|s| s.info.valid_data),
        );
    }
    out
}

/// Two loopback participants in `domain` with a matched reliable KEEP_ALL writer (in the first)
/// and reader (in the second) on `topic`.
fn matched_pair(
    domain: u32,
    topic: &str,
) -> (
    DomainParticipant,
    DomainParticipant,
    DataWriter<TestData>,
    DataReader<TestData>,
) {
    let a = participant(domain);
    let b = participant(domain);
    let ta = a
        .create_topic::<TestData>(topic, TopicQos::default())
        .unwrap();
    let tb = b
        .create_topic::<TestData>(topic, TopicQos::default())
        .unwrap();
    let w = a
        .create_publisher(PublisherQos::default())
        .unwrap()
        .create_datawriter(
            &ta,
            DataWriterQos::default()
                .reliable()
                .keep_all()
                .max_blocking_time(Duration::from_secs(10)),
        )
        .unwrap();
    let r = b
        .create_subscriber(SubscriberQos::default())
        .unwrap()
        .create_datareader(&tb, DataReaderQos::default().reliable().keep_all())
        .unwrap();
    assert!(w.wait_for_matched(1, WAIT) && r.wait_for_matched(1, WAIT));
    (a, b, w, r)
}

/// The flow: 1024 B samples at [`RATE`] for [`FLOW`], each at its due time (a write more
/// than 50 ms late is skipped, not caught up). Returns (written, scheduled).
fn run_flow(w: &DataWriter<TestData>) -> (u32, u32) {
    let start = Instant::now();
    let n = RATE * FLOW.as_secs() as u32;
    let mut written = 0u32;
    for i in 0..n {
        let due = FLOW * i / n;
        match due.checked_sub(start.elapsed()) {
            Some(d) => std::thread::sleep(d),
            None if start.elapsed() > due + Duration::from_millis(50) => continue,
            None => {}
        }
        let mut s = test_data(written);
        s.bin_data = vec![7; 1024];
        w.write(&s).unwrap();
        written += 1;
    }
    (written, n)
}

/// Waits until the flow is acknowledged and takes the `written` samples.
fn acknowledged_and_received(
    w: &DataWriter<TestData>,
    r: &DataReader<TestData>,
    written: u32,
) -> Vec<ferrodds::Sample<TestData>> {
    w.wait_for_acknowledgments(WAIT).unwrap();
    collect(r, written as usize)
}

/// Enough of the flow went out on time, and nothing written was lost.
fn assert_flow_kept(written: u32, n: u32, received: usize) {
    assert!(
        written >= n * MIN_KEPT_PERCENT / 100,
        "the flow kept {written} of {n} samples on time"
    );
    assert_eq!(received, written as usize, "nothing lost");
}

fn spdp_unicast_port(domain: u32, participant_id: u32) -> u16 {
    (7400 + 250 * domain + 10 + 2 * participant_id) as u16
}

/// The SPDP unicast ports of `a` and `b`, where a flood is sent.
fn spdp_targets(domain: u32, a: &DomainParticipant, b: &DomainParticipant) -> [(Ipv4Addr, u16); 2] {
    [a, b].map(|p| {
        (
            Ipv4Addr::LOCALHOST,
            spdp_unicast_port(domain, p.participant_id()),
        )
    })
}

/// Once the flood stopped, the fakes expire by lease (3 s, checked every second) and `a` and
/// `b` know only each other. A participant that fell behind (an unoptimised build on a loaded
/// machine: its receive buffer still holds announcements when the flood ends, so some fakes
/// are discovered late) needs longer: the bound is generous, the check is that they go.
fn assert_fakes_expire(a: &DomainParticipant, b: &DomainParticipant) {
    let deadline = Instant::now() + FAKE_LEASE + Duration::from_secs(20);
    while Instant::now() < deadline
        && (a.discovered_participants().len() > 1 || b.discovered_participants().len() > 1)
    {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(a.discovered_participants(), vec![b.guid_prefix()]);
    assert_eq!(b.discovered_participants(), vec![a.guid_prefix()]);
}

#[test]
fn spdp_flood_does_not_starve_user_data_and_expires_by_lease() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    with_timeout(90, || {
        let (a, b, w, r) = matched_pair(DOMAIN, "flooded");
        let targets = spdp_targets(DOMAIN, &a, &b);
        let rss_before = rss_kib();

        let flood = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(1));
            let mut f = SpdpFlood::new(DOMAIN, (Ipv4Addr::LOCALHOST, 9), FAKE_LEASE)
                .expect("an SPDP announcement");
            let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
            let start = Instant::now();
            let mut peak = 0;
            for i in 0..FAKES {
                let msg = f.announcement(i);
                for t in targets {
                    let _ = sock.send_to(msg, t);
                }
                if i % 1000 == 0 {
                    peak = peak.max(rss_kib());
                }
                let due = FLOOD * (i + 1) / FAKES;
                if let Some(d) = due.checked_sub(start.elapsed()) {
                    std::thread::sleep(d);
                }
            }
            (start.elapsed(), peak.max(rss_kib()))
        });

        let (written, n) = run_flow(&w);
        let (flood_took, rss_peak) = flood.join().unwrap();
        let samples = acknowledged_and_received(&w, &r, written);
        let fakes_a = a.discovered_participants().len() - 1;
        let refused = a.engine_stats().refused_participants;
        eprintln!(
            "flood: {FAKES} fakes in {flood_took:?}; flow wrote {written} of {n} samples, \
             {} received; RSS {rss_before} -> peak {rss_peak} KiB; a knows {fakes_a} fakes, \
             refused {refused}",
            samples.len()
        );
        // More fakes than the bound: the rest were refused, and counted.
        if fakes_a >= 4_000 {
            assert!(refused > 0, "a knows {fakes_a} fakes and refused none");
        }
        assert_flow_kept(written, n, samples.len());
        for (i, s) in samples.iter().enumerate() {
            assert_eq!(s.data.as_ref().unwrap().seq_num, i as u32, "order");
        }
        assert!(
            rss_peak.saturating_sub(rss_before) <= MAX_RSS_GROWTH_KIB,
            "RSS grew from {rss_before} to {rss_peak} KiB"
        );
        assert_fakes_expire(&a, &b);
    });
}

/// Garbage at a high rate to both participants' metatraffic and user ports — random bytes,
/// truncated RTPS headers, valid headers with absurd submessage lengths, DATA_FRAG claiming
/// huge samples — while the same reliable flow runs: no panic, the flow keeps its rate with
/// nothing lost, and the engine counts what it dropped.
#[test]
fn garbage_at_a_high_rate_is_dropped_and_counted() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    with_timeout(90, || {
        const D: u32 = 159;
        let (a, b, w, r) = matched_pair(D, "garbage");
        let mut targets = Vec::new();
        for p in [&a, &b] {
            let meta = spdp_unicast_port(D, p.participant_id());
            // Metatraffic unicast, user unicast (d1 = 10, d3 = 11) and the SPDP multicast port.
            targets.push((Ipv4Addr::LOCALHOST, meta));
            targets.push((Ipv4Addr::LOCALHOST, meta + 1));
            targets.push((Ipv4Addr::LOCALHOST, (7400 + 250 * D) as u16));
        }
        let before = b.engine_stats().malformed_datagrams + a.engine_stats().malformed_datagrams;
        let garbage = std::thread::spawn(move || {
            let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
            let mut rnd = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let start = Instant::now();
            let mut sent = 0u64;
            let mut buf = vec![0u8; 2048];
            // 20,000 datagrams per second for 3 s, from the flow's second 1.
            std::thread::sleep(Duration::from_secs(1));
            while start.elapsed() < Duration::from_secs(4) {
                for _ in 0..20 {
                    let mut len = 64 + (rnd() % 1400) as usize;
                    for b in buf[..len].iter_mut() {
                        *b = rnd() as u8;
                    }
                    match rnd() % 4 {
                        // Random bytes.
                        0 => {}
                        // A truncated RTPS header.
                        1 => {
                            buf[..4].copy_from_slice(b"RTPS");
                            len = 4 + (rnd() % 16) as usize;
                        }
                        // A valid header, then a submessage claiming more than the datagram.
                        2 => {
                            buf[..8].copy_from_slice(b"RTPS\x02\x05\x01\x0f");
                            buf[20] = 0x15; // DATA
                            buf[21] = 0x01;
                            buf[22] = 0xff;
                            buf[23] = 0xff;
                        }
                        // DATA_FRAG announcing a 4 GiB sample.
                        _ => {
                            buf[..8].copy_from_slice(b"RTPS\x02\x05\x01\x0f");
                            buf[20] = 0x16;
                            buf[21] = 0x01;
                            let n = (len - 24).min(0xffff) as u16;
                            buf[22..24].copy_from_slice(&n.to_le_bytes());
                            buf[52..56].copy_from_slice(&u32::MAX.to_le_bytes());
                        }
                    }
                    let t = targets[(rnd() % targets.len() as u64) as usize];
                    if sock.send_to(&buf[..len], t).is_ok() {
                        sent += 1;
                    }
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            sent
        });
        let (written, n) = run_flow(&w);
        let sent = garbage.join().unwrap();
        let samples = acknowledged_and_received(&w, &r, written);
        let dropped =
            b.engine_stats().malformed_datagrams + a.engine_stats().malformed_datagrams - before;
        eprintln!(
            "garbage: {sent} datagrams sent, {dropped} counted malformed; flow wrote {written} of \
             {n}, {} received",
            samples.len()
        );
        assert_flow_kept(written, n, samples.len());
        // Random bytes without the RTPS magic are dropped before the engine; the rest it
        // counts (some random datagrams may be dropped by the kernel under load).
        assert!(
            dropped > sent / 4,
            "{dropped} of {sent} counted as malformed"
        );
    });
}

/// One real-looking participant announces 50,000 endpoints (SEDP publications) in 4 s to both
/// participants while the same reliable flow runs: each keeps at most
/// `max_endpoints_per_participant` (4,096) of them and counts the rest as refused, memory stays
/// bounded, the flow keeps its rate with nothing lost, and the endpoints go with the fake's
/// lease.
#[test]
fn sedp_flood_from_one_participant_is_bounded() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    with_timeout(90, || {
        const D: u32 = 157;
        const ENDPOINTS: u32 = 50_000;
        const PER_DATAGRAM: u32 = 50;
        let (a, b, w, r) = matched_pair(D, "sedp-flooded");
        let targets = spdp_targets(D, &a, &b);
        let rss_before = rss_kib();
        let flood = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(1));
            let mut f = SedpFlood::new(D, (Ipv4Addr::LOCALHOST, 9), FAKE_LEASE)
                .expect("an SEDP announcement");
            let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
            let mut buf = vec![0u8; 65_000];
            let start = Instant::now();
            let mut peak = 0;
            let mut announced = Instant::now() - Duration::from_secs(1);
            for first in (0..ENDPOINTS).step_by(PER_DATAGRAM as usize) {
                if announced.elapsed() >= Duration::from_millis(500) {
                    for t in targets {
                        let _ = sock.send_to(f.announcement(), t);
                    }
                    announced = Instant::now();
                    // Let the announcement be matched before its endpoints arrive.
                    if first == 0 {
                        std::thread::sleep(Duration::from_millis(200));
                    }
                }
                let len = f.publications(first, PER_DATAGRAM, &mut buf).expect("fits");
                for t in targets {
                    let _ = sock.send_to(&buf[..len], t);
                }
                if first % 5_000 == 0 {
                    peak = peak.max(rss_kib());
                }
                let due = FLOOD * (first + PER_DATAGRAM) / ENDPOINTS;
                if let Some(d) = due.checked_sub(start.elapsed()) {
                    std::thread::sleep(d);
                }
            }
            (start.elapsed(), peak.max(rss_kib()))
        });
        let (written, n) = run_flow(&w);
        let (flood_took, rss_peak) = flood.join().unwrap();
        let samples = acknowledged_and_received(&w, &r, written);
        let (ra, rb) = (
            a.engine_stats().refused_endpoints,
            b.engine_stats().refused_endpoints,
        );
        eprintln!(
            "SEDP flood: {ENDPOINTS} endpoints in {flood_took:?}; flow wrote {written} of {n}, \
             {} received; RSS {rss_before} -> peak {rss_peak} KiB; refused {ra} / {rb}",
            samples.len()
        );
        assert_flow_kept(written, n, samples.len());
        for (i, s) in samples.iter().enumerate() {
            assert_eq!(s.data.as_ref().unwrap().seq_num, i as u32, "order");
        }
        // Each participant kept at most 4,096 of the fake's endpoints. (A few datagrams may
        // be lost on loopback under load: the SEDP writer's HEARTBEATs then make the reader
        // wait for repairs the fake never sends, so only a lower bound holds.)
        let limit = u64::from(ENDPOINTS) - 4_096;
        assert!(
            ra > 0 && ra <= limit && rb > 0 && rb <= limit,
            "{ra} / {rb}"
        );
        assert!(
            rss_peak.saturating_sub(rss_before) <= MAX_RSS_GROWTH_KIB,
            "RSS grew from {rss_before} to {rss_peak} KiB"
        );
        assert_fakes_expire(&a, &b);
        // The real endpoints were never displaced.
        assert_eq!(w.publication_matched_status().current_count, 1);
        assert_eq!(r.subscription_matched_status().current_count, 1);
    });
}
