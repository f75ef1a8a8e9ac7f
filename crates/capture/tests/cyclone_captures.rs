//! The reader and the tshark helper on the real Cyclone DDS captures kept in
//! `crates/wire/tests/data` (recorded by `scripts/record-cyclone-capture.sh`).

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::path::PathBuf;

use ferrodds_capture::read_udp_payloads;
use ferrodds_capture::testing::{require_tshark, tshark_check_with, TsharkOptions};

fn capture_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../wire/tests/data");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("cyclone-") && n.ends_with(".pcapng"))
        })
        .collect();
    files.sort();
    assert!(
        files.len() >= 4,
        "expected the Cyclone captures, found {files:?}"
    );
    files
}

#[test]
fn reader_extracts_every_datagram_of_the_cyclone_captures() {
    for path in capture_files() {
        let c = read_udp_payloads(&path).unwrap();
        assert!(c.skipped.is_empty(), "{}: {:?}", path.display(), c.skipped);
        assert!(c.datagrams.len() > 20, "{}", path.display());
        let mut rtps = 0;
        for d in &c.datagrams {
            assert_eq!(*d.src.ip(), Ipv4Addr::LOCALHOST);
            assert_eq!(*d.dst.ip(), Ipv4Addr::LOCALHOST);
            if d.payload.starts_with(b"RTPS") {
                rtps += 1;
                // Cyclone's vendor id and RTPS 2.1 header.
                assert_eq!(&d.payload[4..8], &[2, 1, 0x01, 0x10], "{}", path.display());
            } else {
                assert_eq!(d.payload.len(), 1, "{}: frame {}", path.display(), d.frame);
            }
        }
        assert!(rtps + 4 >= c.datagrams.len(), "{}", path.display());
        // Timestamps are in capture order and recent (after 2025).
        let ts: Vec<_> = c.datagrams.iter().map(|d| d.ts).collect();
        assert!(ts.windows(2).all(|w| w[0] <= w[1]));
        let secs = ts[0]
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(secs > 1_735_689_600, "{secs}");
    }
}

#[test]
fn tshark_sees_clean_rtps_in_the_cyclone_captures() {
    if !require_tshark().expect("tshark is required for this test") {
        return;
    }
    let mut kinds = BTreeSet::new();
    for path in capture_files() {
        let report = tshark_check_with(&path, &TsharkOptions::real_capture()).unwrap();
        let datagrams = read_udp_payloads(&path).unwrap().datagrams;
        assert_eq!(report.packets.len(), datagrams.len());
        // The only non-RTPS frames are Cyclone's 1-byte wake-up datagrams.
        for p in report.non_rtps() {
            let d = &datagrams[p.frame as usize - 1];
            assert_eq!(d.frame, p.frame);
            assert_eq!(d.payload.len(), 1, "{}: frame {}", path.display(), p.frame);
        }
        let problems: Vec<_> = report
            .problems(ferrodds_capture::testing::Severity::Warning)
            .into_iter()
            .map(|p| (p.frame, p.malformed, p.expert.clone()))
            .collect();
        assert!(problems.is_empty(), "{}: {problems:?}", path.display());
        kinds.extend(report.submessage_ids());
    }
    // ACKNACK, HEARTBEAT, INFO_TS, INFO_DST, NACK_FRAG, HEARTBEAT_FRAG, DATA, DATA_FRAG.
    for id in [0x06, 0x07, 0x09, 0x0e, 0x12, 0x13, 0x15, 0x16] {
        assert!(
            kinds.contains(&id),
            "submessage {id:#04x} missing from {kinds:?}"
        );
    }
}
