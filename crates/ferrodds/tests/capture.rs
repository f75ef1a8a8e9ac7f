//! A capture of an interop run (FerroDDS ↔ Cyclone DDS, both directions) written by our
//! participant's pcapng tap decodes in tshark as RTPS with no malformed packet and no
//! expert warning.

mod common;

use std::time::Duration;

use common::peer::{cyclone_python, Peer};
use common::*;
use ferrodds::cdr::types::{TestData, TestDataKeyed};
use ferrodds::{
    DataReaderQos, DataWriterQos, DomainParticipant, PublisherQos, SubscriberQos, TopicQos,
};
use ferrodds_capture::testing::assert_tshark_clean;
use ferrodds_capture::{read_udp_payloads, Direction};

#[test]
fn capture_of_interop_run_decodes_in_tshark() {
    with_timeout(120, || {
        let Some(py) = cyclone_python() else { return };
        let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("ferrodds-interop-{}.pcapng", std::process::id()));
        let _ = std::fs::remove_file(&path);
        {
            let mut sub = Peer::start(
                &py,
                &[
                    "sub",
                    "--type",
                    "keyed",
                    "--topic",
                    "cap_out",
                    "--domain",
                    "181",
                    "--count",
                    "50",
                    "--reliable",
                    "--keep-all",
                    "--timeout",
                    "40",
                ],
            );
            sub.wait_line(Duration::from_secs(30), |l| l == "READY");
            let publ = Peer::start(
                &py,
                &[
                    "pub",
                    "--type",
                    "unkeyed",
                    "--topic",
                    "cap_in",
                    "--domain",
                    "181",
                    "--count",
                    "20",
                    "--reliable",
                    "--keep-all",
                    "--timeout",
                    "40",
                ],
            );
            let p = DomainParticipant::with_config(
                181,
                loopback_config().capture_file(Some(path.clone())),
            )
            .unwrap();
            let t_out = p
                .create_topic::<TestDataKeyed>("cap_out", TopicQos::default())
                .unwrap();
            let t_in = p
                .create_topic::<TestData>("cap_in", TopicQos::default())
                .unwrap();
            let r = p
                .create_subscriber(SubscriberQos::default())
                .unwrap()
                .create_datareader(&t_in, DataReaderQos::default().reliable().keep_all())
                .unwrap();
            let w = p
                .create_publisher(PublisherQos::default())
                .unwrap()
                .create_datawriter(&t_out, DataWriterQos::default().keep_all())
                .unwrap();
            assert!(w.wait_for_matched(1, WAIT));
            // Matching is asymmetric: a volatile reader ignores what was written before
            // it matched the writer, so wait for the Cyclone side too.
            sub.wait_line(WAIT, |l| l == "MATCHED 1");
            for i in 0..50 {
                w.write(&keyed_data(i, i)).unwrap();
            }
            w.wait_for_acknowledgments(WAIT).unwrap();
            let mut got = 0;
            let deadline = std::time::Instant::now() + WAIT;
            while got < 20 && std::time::Instant::now() < deadline {
                let _ = r.wait_for_data(Duration::from_millis(100));
                got += r
                    .take()
                    .unwrap()
                    .iter()
                    .filter(|s| s.info.valid_data)
                    .count();
            }
            assert_eq!(got, 20, "samples from Cyclone");
            let (lines, ok) = sub.finish(Duration::from_secs(30));
            assert!(ok, "Cyclone subscriber: {lines:?}");
            drop(publ);
            // dropping the participant flushes the capture
        }
        let contents = read_udp_payloads(&path).expect("read back capture");
        assert!(contents.skipped.is_empty(), "{:?}", contents.skipped);
        let out = contents
            .datagrams
            .iter()
            .filter(|d| d.direction == Some(Direction::Outbound))
            .count();
        let inb: Vec<_> = contents
            .datagrams
            .iter()
            .filter(|d| d.direction == Some(Direction::Inbound))
            .collect();
        assert!(out > 10 && inb.len() > 10, "out {out} in {}", inb.len());
        assert!(
            inb.iter()
                .any(|d| d.payload.get(6..8) == Some(&[0x01, 0x10][..])),
            "no datagram from Cyclone (vendor 0x0110) captured"
        );
        // our messages: RTPS header vendor id and GUID prefix both start with our vendor id
        for d in contents
            .datagrams
            .iter()
            .filter(|d| d.direction == Some(Direction::Outbound))
        {
            assert_eq!(d.payload.get(..4), Some(&b"RTPS"[..]));
            assert_eq!(d.payload.get(6..8), Some(&ferrodds::VENDOR_ID[..]));
            assert_eq!(d.payload.get(8..10), Some(&ferrodds::VENDOR_ID[..]));
        }
        assert!(contents
            .datagrams
            .iter()
            .all(|d| d.src.ip().is_loopback() && d.dst.ip().is_loopback()));
        let Some(report) = assert_tshark_clean(&path) else {
            return;
        };
        let ids = report.submessage_ids();
        for id in [0x15u8, 0x07, 0x06, 0x09] {
            assert!(
                ids.contains(&id),
                "submessage 0x{id:02x} missing from {ids:?}"
            );
        }
        let _ = std::fs::remove_file(&path);
    });
}

// ---------------------------------------------------------------------------------------
// The capture as a product feature: configuration, run-time control, what it records.
// ---------------------------------------------------------------------------------------

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;

use ferrodds::cdr::types::TestDataLarge;
use ferrodds::{
    CaptureConfig, CaptureOutput, CaptureOverflow, DataReader, DataWriter, DdsError, TransportKind,
    Transports,
};
use ferrodds_capture::CapturedDatagram;

/// A fresh path in the test's temporary directory.
fn tmp(name: &str) -> PathBuf {
    let p = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cap-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

/// A writer in `a` and a reader in `b` on `topic`, matched.
fn pair(
    a: &DomainParticipant,
    b: &DomainParticipant,
    topic: &str,
    reliable: bool,
) -> (DataWriter<TestDataLarge>, DataReader<TestDataLarge>) {
    let ta = a
        .create_topic::<TestDataLarge>(topic, TopicQos::default())
        .unwrap();
    let tb = b
        .create_topic::<TestDataLarge>(topic, TopicQos::default())
        .unwrap();
    let (wq, rq) = if reliable {
        (
            DataWriterQos::default().reliable().keep_all(),
            DataReaderQos::default().reliable().keep_all(),
        )
    } else {
        (
            DataWriterQos::default().best_effort(),
            DataReaderQos::default().best_effort(),
        )
    };
    let w = a
        .create_publisher(PublisherQos::default())
        .unwrap()
        .create_datawriter(&ta, wq)
        .unwrap();
    let r = b
        .create_subscriber(SubscriberQos::default())
        .unwrap()
        .create_datareader(&tb, rq)
        .unwrap();
    assert!(w.wait_for_matched(1, WAIT), "writer not matched");
    assert!(r.wait_for_matched(1, WAIT), "reader not matched");
    (w, r)
}

fn sample(seq: u32, len: usize, fill: u8) -> TestDataLarge {
    let mut s = large_data(seq, len);
    s.bin_data.fill(fill);
    s
}

/// Takes until `n` valid samples arrived (or `WAIT` passed); returns how many did.
fn take_n(r: &DataReader<TestDataLarge>, n: usize) -> usize {
    let mut got = 0;
    let deadline = std::time::Instant::now() + WAIT;
    while got < n && std::time::Instant::now() < deadline {
        let _ = r.wait_for_data(Duration::from_millis(100));
        got += r
            .take()
            .unwrap()
            .iter()
            .filter(|s| s.info.valid_data)
            .count();
    }
    got
}

/// The user writers' DATA (0x15) and DATA_FRAG (0x16) submessages of an RTPS message:
/// (submessage id, writer sequence number, payload bytes after the fixed part).
fn user_data(msg: &[u8]) -> Vec<(u8, u64, usize)> {
    let mut out = Vec::new();
    let mut pos = 20;
    while pos + 4 <= msg.len() {
        let (id, flags) = (msg[pos], msg[pos + 1]);
        let le = flags & 1 != 0;
        let rd16 = |b: &[u8]| {
            if le {
                u16::from_le_bytes([b[0], b[1]])
            } else {
                u16::from_be_bytes([b[0], b[1]])
            }
        };
        let len = usize::from(rd16(&msg[pos + 2..]));
        let end = if len == 0 { msg.len() } else { pos + 4 + len };
        let body = &msg[pos + 4..end.min(msg.len())];
        if (id == 0x15 || id == 0x16) && body.len() >= 20 && body[11] & 0xC0 != 0xC0 {
            let hi = &body[12..16];
            let lo = &body[16..20];
            let rd32 = |b: &[u8]| {
                let a = [b[0], b[1], b[2], b[3]];
                if le {
                    u32::from_le_bytes(a)
                } else {
                    u32::from_be_bytes(a)
                }
            };
            let sn = (u64::from(rd32(hi)) << 32) | u64::from(rd32(lo));
            out.push((id, sn, body.len()));
        }
        pos = end;
    }
    out
}

fn outbound(c: &[CapturedDatagram]) -> impl Iterator<Item = &CapturedDatagram> {
    c.iter()
        .filter(|d| d.direction == Some(Direction::Outbound))
}

fn inbound(c: &[CapturedDatagram]) -> impl Iterator<Item = &CapturedDatagram> {
    c.iter().filter(|d| d.direction == Some(Direction::Inbound))
}

#[test]
fn captured_frames_carry_the_real_ports_on_both_sides() {
    with_timeout(60, || {
        let (pa, pb) = (tmp("ports-a.pcapng"), tmp("ports-b.pcapng"));
        let a = DomainParticipant::with_config(
            182,
            loopback_config().capture(Some(CaptureConfig::file(&pa))),
        )
        .unwrap();
        let b = DomainParticipant::with_config(
            182,
            loopback_config().capture(Some(CaptureConfig::file(&pb))),
        )
        .unwrap();
        let (w, r) = pair(&a, &b, "cap_ports", true);
        for i in 0..20 {
            w.write(&sample(i, 100, 0x11)).unwrap();
        }
        w.wait_for_acknowledgments(WAIT).unwrap();
        assert_eq!(take_n(&r, 20), 20);
        let sa = a.stop_capture().expect("a's capture");
        let sb = b.stop_capture().expect("b's capture");
        assert!(a.stop_capture().is_none(), "stopped twice");
        assert_eq!((sa.frames_dropped, sb.frames_dropped), (0, 0));
        // The space the writer allocated ahead (16 MiB at a time) is freed at the end.
        for p in [&pa, &pb] {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::metadata(p).unwrap();
            assert!(
                m.blocks() * 512 <= m.len() + (1 << 20),
                "{}: {} bytes allocated for {} bytes",
                p.display(),
                m.blocks() * 512,
                m.len()
            );
        }
        let ca = read_udp_payloads(&pa).unwrap().datagrams;
        let cb = read_udp_payloads(&pb).unwrap().datagrams;
        assert_eq!(ca.len() as u64, sa.frames_written);
        // Every message a sent to b is in b's capture with the same two addresses: what
        // b's socket reported as the source is where a's message really left from.
        let b_ports: std::collections::HashSet<u16> = inbound(&cb).map(|d| d.dst.port()).collect();
        let mut matched = 0;
        let mut data = 0;
        for d in outbound(&ca).filter(|d| b_ports.contains(&d.dst.port())) {
            let Some(m) = inbound(&cb).find(|m| m.payload == d.payload) else {
                continue;
            };
            assert_eq!(
                (m.src, m.dst),
                (d.src, d.dst),
                "addresses of frame {}",
                d.frame
            );
            matched += 1;
            data += user_data(&d.payload).len();
        }
        assert!(
            matched >= 20 && data >= 20,
            "matched {matched} messages, {data} DATA"
        );
        // and the other way (acknowledgements)
        let a_ports: std::collections::HashSet<u16> = inbound(&ca).map(|d| d.dst.port()).collect();
        let back = outbound(&cb)
            .filter(|d| a_ports.contains(&d.dst.port()))
            .filter(|d| {
                inbound(&ca).any(|m| m.payload == d.payload && (m.src, m.dst) == (d.src, d.dst))
            })
            .count();
        assert!(
            back > 0,
            "no message from b found in a's capture with its addresses"
        );
        assert_tshark_clean(&pa);
        let _ = std::fs::remove_file(&pa);
        let _ = std::fs::remove_file(&pb);
    });
}

#[test]
fn removing_user_data_keeps_headers_and_decodes() {
    with_timeout(60, || {
        let path = tmp("strip.pcapng");
        let a = DomainParticipant::with_config(
            183,
            loopback_config().capture(Some(CaptureConfig::file(&path).remove_user_data(true))),
        )
        .unwrap();
        let b = participant(183);
        let (w, r) = pair(&a, &b, "cap_strip", true);
        // 3,000 B samples (DATA) and 100,000 B ones (DATA_FRAG)
        for i in 0..10 {
            w.write(&sample(i, 3000, 0xA5)).unwrap();
        }
        for i in 10..13 {
            w.write(&sample(i, 100_000, 0xA5)).unwrap();
        }
        w.wait_for_acknowledgments(WAIT).unwrap();
        let mut intact = 0;
        let deadline = std::time::Instant::now() + WAIT;
        while intact < 13 && std::time::Instant::now() < deadline {
            let _ = r.wait_for_data(Duration::from_millis(100));
            for s in r.take().unwrap().iter() {
                if let Some(d) = s.data.as_ref() {
                    assert!(
                        d.bin_data.iter().all(|&b| b == 0xA5),
                        "data altered on the wire"
                    );
                    intact += 1;
                }
            }
        }
        assert_eq!(intact, 13, "samples delivered intact");
        let st = a.stop_capture().unwrap();
        assert!(
            st.user_data_bytes_removed >= 10 * 3000 + 3 * 100_000,
            "removed only {} bytes",
            st.user_data_bytes_removed
        );
        let file = std::fs::read(&path).unwrap();
        assert!(
            !file.windows(16).any(|w| w.iter().all(|&b| b == 0xA5)),
            "user data found in the capture"
        );
        let c = read_udp_payloads(&path).unwrap().datagrams;
        let stripped: Vec<_> = outbound(&c)
            .filter(|d| !user_data(&d.payload).is_empty())
            .collect();
        let frags = stripped
            .iter()
            .flat_map(|d| user_data(&d.payload))
            .filter(|u| u.0 == 0x16)
            .count();
        assert!(
            stripped.len() >= 13 && frags > 0,
            "{} stripped, {frags} DATA_FRAG",
            stripped.len()
        );
        for d in &stripped {
            let comment = d.comment.as_deref().unwrap_or_default();
            assert!(
                comment.starts_with("user data removed: "),
                "comment {comment:?}"
            );
        }
        // discovery is kept: SPDP/SEDP DATA from builtin writers still carry their payload
        assert!(
            outbound(&c).any(|d| d.payload.windows(9).any(|w| w == b"cap_strip")),
            "SEDP announcement (topic name) missing"
        );
        assert_tshark_clean(&path);
        let _ = std::fs::remove_file(&path);
    });
}

#[test]
fn capture_starts_pauses_resumes_and_stops_at_run_time() {
    with_timeout(60, || {
        let path = tmp("control.pcapng");
        let a = participant(184);
        let b = participant(184);
        let (w, r) = pair(&a, &b, "cap_control", false);
        assert!(matches!(
            a.pause_capture(),
            Err(DdsError::PreconditionNotMet { .. })
        ));
        assert!(a.capture_stats().is_none() && a.stop_capture().is_none());
        let got = a.start_capture(&CaptureConfig::file(&path)).unwrap();
        assert_eq!(got, path);
        assert!(matches!(
            a.start_capture(&CaptureConfig::file(tmp("second.pcapng"))),
            Err(DdsError::PreconditionNotMet { .. })
        ));
        let mut seq = 0;
        let mut write = |n: u32| {
            for _ in 0..n {
                w.write(&sample(seq, 64, 0x22)).unwrap();
                seq += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
        };
        write(10); // recorded: 0..10
        a.pause_capture().unwrap();
        assert!(a.capture_stats().unwrap().paused);
        write(10); // not recorded
        a.resume_capture().unwrap();
        write(10); // recorded: 20..30
        let st = a.stop_capture().unwrap();
        write(10); // no capture
        assert!(take_n(&r, 1) >= 1, "samples delivered");
        let c = read_udp_payloads(&path).unwrap().datagrams;
        let mut sns: Vec<u64> = outbound(&c)
            .flat_map(|d| user_data(&d.payload))
            .map(|u| u.1)
            .collect();
        sns.sort_unstable();
        sns.dedup();
        let expected: Vec<u64> = (1..=10).chain(21..=30).collect();
        assert_eq!(sns, expected, "writer sequence numbers recorded");
        assert_eq!(st.frames_written, c.len() as u64);
        assert_eq!(st.frames_dropped, 0);
        // a transport the participant does not use: accepted, nothing recorded
        let tcp_only = tmp("tcp-only.pcapng");
        a.start_capture(
            &CaptureConfig::file(&tcp_only).transports(Some(vec![TransportKind::Tcpv4])),
        )
        .unwrap();
        w.write(&sample(99, 64, 0x22)).unwrap();
        let st = a.stop_capture().unwrap();
        assert_eq!(st.frames_written, 0);
        assert!(read_udp_payloads(&tcp_only).unwrap().datagrams.is_empty());
        for p in [path, tcp_only] {
            let _ = std::fs::remove_file(p);
        }
    });
}

/// A capture "file" that is a FIFO, read by a thread into a regular file once `release`
/// is sent (at once when `held` is false): while it is held, the capture's writer thread
/// blocks on a full pipe, as on a disk that cannot keep up.
fn slow_disk(
    name: &str,
    held: bool,
) -> (
    PathBuf,
    PathBuf,
    std::sync::mpsc::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let fifo = tmp(&format!("{name}.fifo"));
    let out = tmp(&format!("{name}.pcapng"));
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(ok.success(), "mkfifo {}", fifo.display());
    let (release, released) = std::sync::mpsc::channel::<()>();
    if !held {
        release.send(()).unwrap();
    }
    let (f, o) = (fifo.clone(), out.clone());
    let reader = std::thread::spawn(move || {
        // Opening blocks until the capture opens its end.
        let mut from = std::fs::File::open(&f).expect("open the FIFO");
        let _ = released.recv();
        let mut to = std::fs::File::create(&o).expect("capture copy");
        std::io::copy(&mut from, &mut to).expect("drain the FIFO");
    });
    (fifo, out, release, reader)
}

#[test]
fn a_full_buffer_drops_by_default_and_blocks_on_request() {
    with_timeout(90, || {
        let a = participant(185);
        let b = participant(185);
        let (w, _r) = pair(&a, &b, "cap_overflow", false);
        for overflow in [CaptureOverflow::Drop, CaptureOverflow::Block] {
            // Dropping: the disk is stalled until every sample was written. Blocking: it is
            // slow but moving (a stalled one would block the writer for ever, by design).
            let (fifo, path, release, reader) = slow_disk(
                &format!("overflow-{overflow:?}"),
                overflow == CaptureOverflow::Drop,
            );
            a.start_capture(
                &CaptureConfig::file(&fifo)
                    .overflow(overflow)
                    .buffer_bytes(64 * 1024),
            )
            .unwrap();
            for i in 0..400 {
                w.write(&sample(i, 30_000, 0x33)).unwrap();
            }
            let _ = release.send(());
            let st = a.stop_capture().unwrap();
            reader.join().unwrap();
            let c = read_udp_payloads(&path).unwrap().datagrams;
            let sns: std::collections::BTreeSet<u64> = outbound(&c)
                .flat_map(|d| user_data(&d.payload))
                .map(|u| u.1)
                .collect();
            match overflow {
                CaptureOverflow::Drop => assert!(
                    st.frames_dropped > 0 && sns.len() < 400,
                    "a 64 KiB buffer in front of a stalled disk kept 400 × 30 kB: {st:?}"
                ),
                _ => {
                    assert_eq!(st.frames_dropped, 0, "{st:?}");
                    assert_eq!(sns.len(), 400, "every sample recorded");
                }
            }
            assert_eq!(st.frames_written, c.len() as u64);
            for p in [&fifo, &path] {
                let _ = std::fs::remove_file(p);
            }
        }
    });
}

#[test]
fn unwritable_file_is_a_clear_error_and_the_participant_runs_on() {
    with_timeout(60, || {
        let bad = PathBuf::from("/nonexistent-ferrodds-dir/capture.pcapng");
        match DomainParticipant::with_config(186, loopback_config().capture_file(Some(bad.clone())))
        {
            Err(e @ DdsError::CaptureFile { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.contains("/nonexistent-ferrodds-dir/capture.pcapng"),
                    "{msg}"
                );
            }
            other => panic!("expected a capture file error, got {other:?}"),
        }
        let a = participant(186);
        let b = participant(186);
        let (w, r) = pair(&a, &b, "cap_bad", true);
        let e = a
            .start_capture(&CaptureConfig {
                output: CaptureOutput::Prefix("/nonexistent-ferrodds-dir/run_".into()),
                ..CaptureConfig::default()
            })
            .unwrap_err();
        assert!(
            e.to_string().contains("/nonexistent-ferrodds-dir/run_"),
            "{e}"
        );
        assert!(a.capture_stats().is_none());
        for i in 0..10 {
            w.write(&sample(i, 100, 1)).unwrap();
        }
        assert_eq!(take_n(&r, 10), 10);
    });
}

/// A small tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(size: &str) -> Option<Self> {
        let dir = tmp("tmpfs");
        std::fs::create_dir_all(&dir).ok()?;
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tmpfs(dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn a_full_disk_stops_the_capture_not_the_participant() {
    with_timeout(60, || {
        let Some(fs) = Tmpfs::mount("256k") else {
            ferrodds_testkit::skip::skip("mounting a tmpfs needs root (CAP_SYS_ADMIN)");
            return;
        };
        let path = fs.0.join("full.pcapng");
        let a = DomainParticipant::with_config(
            187,
            loopback_config().capture(Some(CaptureConfig::file(&path))),
        )
        .unwrap();
        let b = participant(187);
        let (w, r) = pair(&a, &b, "cap_full", true);
        for i in 0..200 {
            w.write(&sample(i, 4000, 7)).unwrap();
        }
        w.wait_for_acknowledgments(WAIT).unwrap();
        assert_eq!(take_n(&r, 200), 200, "every sample delivered");
        std::thread::sleep(Duration::from_millis(50));
        let st = a.capture_stats().unwrap();
        let err = st.error.clone().unwrap_or_default();
        assert!(err.contains("No space left"), "capture error: {st:?}");
        assert!(st.frames_dropped > 0, "{st:?}");
        // still running: the participant keeps working and stopping reports the same
        w.write(&sample(200, 4000, 7)).unwrap();
        assert_eq!(take_n(&r, 1), 1);
        let end = a.stop_capture().unwrap();
        assert!(end.error.is_some() && end.frames_dropped >= st.frames_dropped);
        drop(a);
    });
}

#[test]
fn tcp_messages_are_captured_between_the_connections_ends() {
    with_timeout(60, || {
        let path = tmp("tcp.pcapng");
        let cfg = |port: u16, peer: u16| {
            loopback_config()
                .transports(Transports::Tcpv4)
                .tcp_port(port)
                .tcp_peers(vec![SocketAddrV4::new(Ipv4Addr::LOCALHOST, peer)])
        };
        let a = DomainParticipant::with_config(
            188,
            cfg(17461, 17462).capture(Some(CaptureConfig::file(&path))),
        )
        .unwrap();
        let b = DomainParticipant::with_config(188, cfg(17462, 17461)).unwrap();
        let (w, r) = pair(&a, &b, "cap_tcp", true);
        for i in 0..10 {
            w.write(&sample(i, 100_000, 9)).unwrap();
        }
        w.wait_for_acknowledgments(WAIT).unwrap();
        assert_eq!(take_n(&r, 10), 10);
        let st = a.stop_capture().unwrap();
        assert_eq!(st.frames_dropped, 0);
        let c = read_udp_payloads(&path).unwrap();
        assert!(c.skipped.is_empty(), "{:?}", c.skipped);
        let out: Vec<_> = outbound(&c.datagrams).collect();
        assert!(out.iter().flat_map(|d| user_data(&d.payload)).count() >= 10);
        // Every frame is between a's server port or a connection's ephemeral port and
        // b's: never the wrong pair of server ports for a connection a dialled.
        for d in c.datagrams.iter() {
            let ports = [d.src.port(), d.dst.port()];
            assert!(
                ports.contains(&17461) || ports.contains(&17462),
                "frame {} between {} and {}",
                d.frame,
                d.src,
                d.dst
            );
            assert_ne!(d.src.port(), d.dst.port());
        }
        assert_tshark_clean(&path);
        let _ = std::fs::remove_file(&path);
    });
}
