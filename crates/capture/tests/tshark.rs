//! Writes captures of hand-assembled RTPS messages and checks that tshark
//! decodes every frame as RTPS, with no malformed packet, no expert warning
//! or error, and valid IPv4/UDP checksums (validation is switched on).
//!
//! Fails when tshark is missing, unless FERRODDS_SKIP_TSHARK=1.

use std::io::BufWriter;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;

use ferrodds_capture::testing::{
    require_tshark, tshark_check, tshark_check_with, write_rtps_pcapng, Severity, TsharkOptions,
    TEST_DST,
};
use ferrodds_capture::{
    read_udp_payloads, CaptureWriter, Direction, PcapWriter, Timestamp, MAX_UDP_PAYLOAD,
    MAX_UNFRAGMENTED_UDP_PAYLOAD,
};

const VENDOR: [u8; 2] = [0x00, 0x00];
const WRITER_ID: [u8; 4] = [0x00, 0x00, 0x01, 0x03];
const READER_ID: [u8; 4] = [0x00, 0x00, 0x01, 0x04];

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ferrodds-capture-{}-{name}", std::process::id()))
}

fn prefix(n: u8) -> [u8; 12] {
    [VENDOR[0], VENDOR[1], 1, 2, 3, 4, 5, 6, 7, 8, 9, n]
}

/// RTPS 2.5 message header.
fn header(src_prefix: [u8; 12]) -> Vec<u8> {
    let mut m = b"RTPS".to_vec();
    m.extend_from_slice(&[2, 5]);
    m.extend_from_slice(&VENDOR);
    m.extend_from_slice(&src_prefix);
    m
}

/// Appends a little-endian submessage (E flag set) with `flags` and `body`.
fn submsg(m: &mut Vec<u8>, id: u8, flags: u8, body: &[u8]) {
    assert_eq!(body.len() % 4, 0);
    m.push(id);
    m.push(flags | 0x01);
    m.extend_from_slice(&u16::try_from(body.len()).unwrap().to_le_bytes());
    m.extend_from_slice(body);
}

fn sn(v: u64) -> Vec<u8> {
    let mut b = ((v >> 32) as u32).to_le_bytes().to_vec();
    b.extend_from_slice(&(v as u32).to_le_bytes());
    b
}

fn info_ts(m: &mut Vec<u8>) {
    let mut body = 1_700_000_000u32.to_le_bytes().to_vec();
    body.extend_from_slice(&0x8000_0000u32.to_le_bytes());
    submsg(m, 0x09, 0, &body);
}

fn heartbeat(m: &mut Vec<u8>, first: u64, last: u64, count: u32) {
    let mut body = [0u8; 4].to_vec();
    body.extend_from_slice(&WRITER_ID);
    body.extend(sn(first));
    body.extend(sn(last));
    body.extend_from_slice(&count.to_le_bytes());
    submsg(m, 0x07, 0, &body);
}

fn info_dst(m: &mut Vec<u8>, dst: [u8; 12]) {
    submsg(m, 0x0e, 0, &dst);
}

fn acknack(m: &mut Vec<u8>, base: u64, count: u32) {
    let mut body = READER_ID.to_vec();
    body.extend_from_slice(&WRITER_ID);
    body.extend(sn(base));
    body.extend_from_slice(&0u32.to_le_bytes()); // numBits = 0: pure ACK
    body.extend_from_slice(&count.to_le_bytes());
    submsg(m, 0x06, 0x02, &body);
}

fn gap(m: &mut Vec<u8>, start: u64, list_base: u64) {
    let mut body = READER_ID.to_vec();
    body.extend_from_slice(&WRITER_ID);
    body.extend(sn(start));
    body.extend(sn(list_base));
    body.extend_from_slice(&0u32.to_le_bytes());
    submsg(m, 0x08, 0, &body);
}

/// DATA (D flag) with a CDR_LE serialized payload of `data_len` bytes.
fn data(m: &mut Vec<u8>, seq: u64, data_len: usize) {
    let mut body = vec![0, 0, 16, 0];
    body.extend_from_slice(&[0u8; 4]);
    body.extend_from_slice(&WRITER_ID);
    body.extend(sn(seq));
    body.extend_from_slice(&[0x00, 0x01, 0x00, 0x00]);
    body.extend((0..data_len).map(|i| (i % 251) as u8));
    submsg(m, 0x15, 0x04, &body);
}

/// A message of exactly `total` bytes: header, INFO_TS and one DATA.
fn big_data_message(total: usize) -> Vec<u8> {
    let mut m = header(prefix(1));
    info_ts(&mut m);
    // DATA: 4 submessage header + 20 fixed + 4 encapsulation + payload.
    let payload = total - m.len() - 28;
    data(&mut m, 7, payload);
    assert_eq!(m.len(), total);
    m
}

fn sa(a: [u8; 4], port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::from(a), port)
}

/// The messages written by both tests, with addresses.
fn messages() -> Vec<(SocketAddrV4, SocketAddrV4, Vec<u8>, Direction)> {
    let writer = sa([127, 0, 0, 1], 7411);
    let reader = sa([127, 0, 0, 1], 7413);
    let mut hb = header(prefix(1));
    info_ts(&mut hb);
    heartbeat(&mut hb, 1, 5, 1);
    let mut an = header(prefix(2));
    info_dst(&mut an, prefix(1));
    acknack(&mut an, 6, 1);
    let mut g = header(prefix(1));
    info_dst(&mut g, prefix(2));
    gap(&mut g, 3, 5);
    heartbeat(&mut g, 1, 5, 2);
    let mut small = header(prefix(1));
    info_ts(&mut small);
    data(&mut small, 6, 100);
    vec![
        (writer, sa([239, 255, 0, 1], 7401), hb, Direction::Outbound),
        (reader, writer, an, Direction::Inbound),
        (writer, reader, g, Direction::Outbound),
        (writer, reader, small, Direction::Outbound),
        (
            writer,
            reader,
            big_data_message(65_520),
            Direction::Outbound,
        ),
    ]
}

#[test]
fn pcapng_rtps_decodes_cleanly_in_tshark() {
    if !require_tshark().expect("tshark is required for this test") {
        return;
    }
    let path = temp_path("clean.pcapng");
    let msgs = messages();
    assert!(msgs[4].2.len() > MAX_UNFRAGMENTED_UDP_PAYLOAD);
    assert!(msgs[4].2.len() <= MAX_UDP_PAYLOAD);
    {
        let file = std::fs::File::create(&path).unwrap();
        let mut w = CaptureWriter::new(BufWriter::new(file)).unwrap();
        let _other = w.add_interface("udp4-meta").unwrap();
        let iface = w.add_interface("udp4-user").unwrap();
        let t0 = Timestamp::from_nanos(1_700_000_000_000_000_000);
        for (i, (src, dst, payload, dir)) in msgs.iter().enumerate() {
            let ts = Timestamp::from_nanos(t0.as_nanos() + i as u64 * 1000);
            let comment = (i == 4).then_some("large DATA, IPv4-fragmented");
            w.write_udp(iface, ts, *src, *dst, payload, *dir, comment)
                .unwrap();
        }
        w.into_inner().unwrap();
    }

    let report = tshark_check(&path).unwrap();
    // 4 single frames + 2 fragments of the large message.
    assert_eq!(report.packets.len(), 6, "{report:#?}");
    let issues = report.issues();
    assert!(
        issues.is_empty(),
        "tshark found problems:\n{}",
        issues.join("\n")
    );
    let ids: Vec<u8> = report.submessage_ids().into_iter().collect();
    assert_eq!(ids, vec![0x06, 0x07, 0x08, 0x09, 0x0e, 0x15]);
    assert_eq!(report.packets[0].submessage_ids, vec![0x09, 0x07]);
    assert_eq!(report.packets[5].submessage_ids, vec![0x09, 0x15]);
    assert_eq!(report.packets[4].reassembled_in, Some(6));

    // Direction flags and the comment made it into the file.
    let count = |filter: &str| {
        let args = ["-Y", filter];
        tshark_check_with(&path, &TsharkOptions::default().with_filter(&args))
            .unwrap()
            .packets
            .len()
    };
    assert_eq!(count("frame.packet_flags_direction == 1"), 1);
    assert_eq!(count("frame.packet_flags_direction == 2"), 5);
    assert_eq!(count("frame.comment contains \"IPv4-fragmented\""), 1);
    assert_eq!(count("eth.dst == 01:00:5e:7f:00:01 && rtps"), 1);
    assert_eq!(count("udp.checksum.status == \"Good\""), 5);
    assert_eq!(count("ip.checksum.status == \"Good\""), 6);

    // And the reader gives back exactly what was written.
    let back = read_udp_payloads(&path).unwrap();
    assert!(back.skipped.is_empty(), "{:?}", back.skipped);
    assert_eq!(back.datagrams.len(), msgs.len());
    for (d, (src, dst, payload, dir)) in back.datagrams.iter().zip(&msgs) {
        assert_eq!((d.src, d.dst, d.direction), (*src, *dst, Some(*dir)));
        assert_eq!(&d.payload, payload);
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn small_mtu_pcap_fragments_reassemble_in_tshark() {
    if !require_tshark().expect("tshark is required for this test") {
        return;
    }
    let path = temp_path("mtu.pcap");
    {
        let file = std::fs::File::create(&path).unwrap();
        let mut w = PcapWriter::new(BufWriter::new(file)).unwrap();
        w.set_mtu(1500).unwrap();
        for (src, dst, payload, _) in messages() {
            w.write_udp_now(src, dst, &payload).unwrap();
        }
        w.into_inner().unwrap();
    }
    let report = tshark_check(&path).unwrap();
    // 65520 + 8 bytes of UDP datagram in 1480-byte fragments: 45 frames.
    assert_eq!(report.packets.len(), 4 + 45);
    let issues = report.issues();
    assert!(
        issues.is_empty(),
        "tshark found problems:\n{}",
        issues.join("\n")
    );
    let rtps_frames = report.packets.iter().filter(|p| p.is_rtps()).count();
    assert_eq!(rtps_frames, 5);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn oversized_message_becomes_an_exported_pdu_tshark_decodes() {
    if !require_tshark().expect("tshark is required for this test") {
        return;
    }
    let path = temp_path("pdu.pcapng");
    // A 100 kB DATA: too big for UDP, as a TCP or SHM transport might carry.
    // Its octetsToNextHeader is 0 ("to the end of the message").
    let mut m = header(prefix(1));
    info_ts(&mut m);
    data(&mut m, 9, 1000);
    let data_start = m.len() - (4 + 24 + 1000);
    m.truncate(data_start + 4 + 24);
    m.extend((0..100_000u32).map(|i| (i % 241) as u8));
    m[data_start + 2..data_start + 4].copy_from_slice(&[0, 0]);
    assert!(m.len() > MAX_UDP_PAYLOAD);
    {
        let mut w = CaptureWriter::new(Vec::new()).unwrap();
        let i = w.add_interface("tcp4").unwrap();
        let (a, b) = (sa([127, 0, 0, 1], 7411), sa([127, 0, 0, 1], 7413));
        w.write_udp(i, Timestamp::now(), a, b, &m, Direction::Outbound, None)
            .unwrap();
        let mut small = header(prefix(1));
        heartbeat(&mut small, 9, 9, 3);
        w.write_udp(i, Timestamp::now(), a, b, &small, Direction::Outbound, None)
            .unwrap();
        std::fs::write(&path, w.into_inner().unwrap()).unwrap();
    }
    let report = tshark_check(&path).unwrap();
    assert_eq!(report.packets.len(), 2, "{report:#?}");
    let issues = report.issues();
    assert!(
        issues.is_empty(),
        "tshark found problems:\n{}",
        issues.join("\n")
    );
    assert_eq!(report.packets[0].protocols, vec!["exported_pdu", "rtps"]);
    assert_eq!(report.packets[0].submessage_ids, vec![0x09, 0x15]);
    assert_eq!(report.packets[1].submessage_ids, vec![0x07]);
    let back = read_udp_payloads(&path).unwrap();
    assert_eq!(back.datagrams.len(), 2);
    assert_eq!(back.datagrams[0].payload, m);
    std::fs::remove_file(&path).unwrap();
}

/// Writes one datagram to a pcapng in memory and returns the file bytes.
fn one_datagram_file(payload: &[u8]) -> Vec<u8> {
    let mut w = CaptureWriter::new(Vec::new()).unwrap();
    let i = w.add_interface("lo").unwrap();
    let a = sa([127, 0, 0, 1], 7411);
    w.write_udp(i, Timestamp::now(), a, a, payload, Direction::Inbound, None)
        .unwrap();
    w.into_inner().unwrap()
}

#[test]
fn corrupted_rtps_is_reported_by_tshark() {
    // Guards the checker itself: a HEARTBEAT too short for its fields must
    // show up as a problem.
    if !require_tshark().expect("tshark is required for this test") {
        return;
    }
    let path = temp_path("bad.pcapng");
    let mut m = header(prefix(1));
    heartbeat(&mut m, 1, 5, 1);
    m.truncate(20 + 4 + 8);
    m[22] = 8; // octetsToNextHeader: readerId + writerId only
    std::fs::write(&path, one_datagram_file(&m)).unwrap();
    let report = tshark_check(&path).unwrap();
    assert_eq!(report.packets.len(), 1);
    assert!(
        report.packets[0].has_problem(Severity::Warning),
        "{report:#?}"
    );
    assert!(!report.issues().is_empty());
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn corrupted_checksum_is_reported_by_tshark() {
    // Guards the checksum validation: flipping one payload byte after the
    // UDP checksum was computed must be flagged.
    if !require_tshark().expect("tshark is required for this test") {
        return;
    }
    let path = temp_path("badsum.pcapng");
    let mut m = header(prefix(1));
    info_ts(&mut m);
    heartbeat(&mut m, 1, 5, 1);
    let mut file = one_datagram_file(&m);
    let pos = file
        .windows(4)
        .position(|w| w == b"RTPS")
        .expect("payload in file");
    file[pos + 30] ^= 0x40; // inside INFO_TS seconds
    std::fs::write(&path, &file).unwrap();
    let report = tshark_check(&path).unwrap();
    assert_eq!(report.packets.len(), 1);
    let issues = report.issues();
    assert_eq!(issues.len(), 1, "{report:#?}");
    assert!(issues[0].contains("checksum"), "{issues:?}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn write_rtps_pcapng_helper_gives_one_frame_per_message() {
    if !require_tshark().expect("tshark is required for this test") {
        return;
    }
    let path = temp_path("helper.pcapng");
    let msgs: Vec<Vec<u8>> = messages().into_iter().take(4).map(|m| m.2).collect();
    write_rtps_pcapng(&path, &msgs).unwrap();
    let report = tshark_check(&path).unwrap();
    assert!(report.issues().is_empty(), "{:?}", report.issues());
    let ids: Vec<Vec<u8>> = report
        .packets
        .iter()
        .map(|p| p.submessage_ids.clone())
        .collect();
    assert_eq!(
        ids,
        vec![
            vec![0x09, 0x07],
            vec![0x0e, 0x06],
            vec![0x0e, 0x08, 0x07],
            vec![0x09, 0x15]
        ]
    );
    let back = read_udp_payloads(&path).unwrap();
    assert_eq!(back.datagrams[0].dst, TEST_DST);
    std::fs::remove_file(&path).unwrap();
}
