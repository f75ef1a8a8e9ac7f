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
use ferrodds_capture::testing::{require_tshark, tshark_check};
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
        match require_tshark() {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                panic!("tshark is required for this test ({e}); set FERRODDS_SKIP_TSHARK=1 to skip")
            }
        }
        let report = tshark_check(&path).expect("tshark");
        let issues = report.issues();
        assert!(issues.is_empty(), "tshark found problems: {issues:#?}");
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
