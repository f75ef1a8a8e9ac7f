//! The simulated traffic can be dumped to pcapng, read back, and (when tshark
//! is installed) decodes as RTPS without malformed packets.

use std::time::Duration;

use ferrodds_capture::testing::{require_tshark, tshark_check};
use ferrodds_rtps::{History, ReaderQos, Reliability, WriterQos};
use ferrodds_testkit::helpers::{alive, payload, reader, writer};
use ferrodds_testkit::{LinkConfig, Network};

#[test]
fn simulated_traffic_dumps_to_a_valid_pcapng() {
    let mut net = Network::new(3);
    net.record = true;
    net.link = LinkConfig::lossy(0.2, 0.0, 0.0);
    // Small datagrams so that the large sample below goes out as DATA_FRAGs.
    let mut ca = Network::config_for(0, 0);
    ca.max_message_size = 1400;
    let a = net.add_participant_with(ca);
    let b = net.add_participant(0);
    let now = net.now;
    let wq = WriterQos {
        history: History::KeepAll,
        ..WriterQos::default()
    };
    let rq = ReaderQos {
        reliability: Reliability::RELIABLE,
        ..ReaderQos::default()
    };
    let w = net.p(a).create_writer(writer("T", wq), now).unwrap();
    net.p(b).create_reader(reader("T", rq), now).unwrap();
    assert!(net.run_until(Duration::from_secs(2), |n| n.nodes[a]
        .participant
        .matched_reader_count(w)
        == 1));
    for i in 0..50 {
        let now = net.now;
        net.p(a).write(w, alive(&payload(i)), now).unwrap();
    }
    let mut big = vec![0u8, 1, 0, 0];
    // (More than 32 fragments: the train carries a HEARTBEAT_FRAG.)
    big.resize(50_000, 0x5a);
    let now = net.now;
    net.p(a).write(w, alive(&big), now).unwrap();
    net.flush(a);
    net.run_for(Duration::from_millis(500));

    let mut file = Vec::new();
    net.write_pcapng(&mut file).unwrap();
    let back = ferrodds_capture::parse_udp_payloads(&file).unwrap();
    let frames: usize = net.recorded().iter().map(|d| d.destinations.len()).sum();
    assert_eq!(back.datagrams.len(), frames);
    assert!(back
        .datagrams
        .iter()
        .all(|d| d.payload.starts_with(b"RTPS")));

    if !require_tshark().unwrap_or(false) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ferrodds-testkit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sim.pcapng");
    std::fs::write(&path, &file).unwrap();
    let report = tshark_check(&path).unwrap();
    let issues = report.issues();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(issues.is_empty(), "{issues:#?}");
    let ids = report.submessage_ids();
    // Including HEARTBEAT_FRAG and NACK_FRAG (the large sample loses fragments).
    for id in [0x06u8, 0x07, 0x0e, 0x12, 0x13, 0x15, 0x16] {
        assert!(ids.contains(&id), "submessage {id:#x} missing: {ids:?}");
    }
}
