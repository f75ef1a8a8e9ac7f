//! Whole-message golden bytes: an SPDP announcement as a Cyclone-like peer
//! sends it (little-endian), parsed down to typed discovery parameters and
//! re-emitted byte for byte, as the capture comparison will do.

use ferrodds_wire::qos::{Reliability, ReliabilityKind};
use ferrodds_wire::*;

#[rustfmt::skip]
const SPDP: [u8; 176] = [
    // RTPS header: "RTPS", version 2.1, vendor 01 10 (Cyclone), prefix
    0x52, 0x54, 0x50, 0x53, 0x02, 0x01, 0x01, 0x10,
    0x01, 0x10, 0xaa, 0xbb, 0xcc, 0xdd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
    // INFO_TS, E, length 8: seconds 0x66000000, fraction 0x80000000
    0x09, 0x01, 0x08, 0x00,
    0x00, 0x00, 0x00, 0x66, 0x00, 0x00, 0x00, 0x80,
    // DATA, E|D, length 140
    0x15, 0x05, 0x8c, 0x00,
    0x00, 0x00, 0x10, 0x00,             // extraFlags, octetsToInlineQos 16
    0x00, 0x01, 0x00, 0xc7,             // reader: SPDP detector
    0x00, 0x01, 0x00, 0xc2,             // writer: SPDP announcer
    0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, // writerSN 1
    // serialized payload: PL_CDR_LE encapsulation
    0x00, 0x03, 0x00, 0x00,
    // PID_PROTOCOL_VERSION len 4: 2.1 + pad
    0x15, 0x00, 0x04, 0x00, 0x02, 0x01, 0x00, 0x00,
    // PID_VENDORID len 4: 01 10 + pad
    0x16, 0x00, 0x04, 0x00, 0x01, 0x10, 0x00, 0x00,
    // PID_PARTICIPANT_GUID len 16
    0x50, 0x00, 0x10, 0x00,
    0x01, 0x10, 0xaa, 0xbb, 0xcc, 0xdd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
    0x00, 0x00, 0x01, 0xc1,
    // PID_METATRAFFIC_UNICAST_LOCATOR len 24: UDPv4 127.0.0.1:7410
    0x32, 0x00, 0x18, 0x00,
    0x01, 0x00, 0x00, 0x00, 0xf2, 0x1c, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7f, 0x00, 0x00, 0x01,
    // PID_DEFAULT_UNICAST_LOCATOR len 24: UDPv4 127.0.0.1:7411
    0x31, 0x00, 0x18, 0x00,
    0x01, 0x00, 0x00, 0x00, 0xf3, 0x1c, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7f, 0x00, 0x00, 0x01,
    // PID_PARTICIPANT_LEASE_DURATION len 8: 10 s
    0x02, 0x00, 0x08, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    // PID_BUILTIN_ENDPOINT_SET len 4: 0x00000c3f
    0x58, 0x00, 0x04, 0x00, 0x3f, 0x0c, 0x00, 0x00,
    // PID_SENTINEL
    0x01, 0x00, 0x00, 0x00,
];

#[test]
fn spdp_announcement_parses_to_typed_values() {
    let m = MessageView::parse(&SPDP).unwrap();
    let h = m.header();
    assert_eq!(h.version, ProtocolVersion::V2_1);
    assert_eq!(h.vendor_id, VendorId::CYCLONE_DDS);
    let subs: Vec<_> = m.submessages().collect::<Result<_, _>>().unwrap();
    assert_eq!(subs.len(), 2);
    assert_eq!(
        subs[0],
        Submessage::InfoTs(InfoTs {
            timestamp: Some(Time {
                seconds: 0x6600_0000,
                fraction: 0x8000_0000
            })
        })
    );
    let Submessage::Data(d) = subs[1] else {
        panic!("expected DATA, got {:?}", subs[1]);
    };
    assert_eq!(d.reader_id, EntityId::SPDP_BUILTIN_PARTICIPANT_DETECTOR);
    assert_eq!(d.writer_id, EntityId::SPDP_BUILTIN_PARTICIPANT_ANNOUNCER);
    assert_eq!(d.writer_sn, SequenceNumber::FIRST);
    assert!(d.inline_qos.is_none());

    let pl = ParameterList::from_serialized_payload(d.serialized_payload.unwrap()).unwrap();
    assert_eq!(pl.endianness(), Endianness::Little);
    assert!(pl.check_must_understand(|_| false).is_ok());
    assert_eq!(
        pl.get::<ProtocolVersion>(pid::PROTOCOL_VERSION),
        Some(Ok(ProtocolVersion::V2_1))
    );
    let guid: Guid = pl.get(pid::PARTICIPANT_GUID).unwrap().unwrap();
    assert_eq!(guid.prefix, h.guid_prefix);
    assert_eq!(guid.entity_id, EntityId::PARTICIPANT);
    let meta: Vec<Locator> = pl
        .get_all(pid::METATRAFFIC_UNICAST_LOCATOR)
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        meta[0].udp_socket_addr(),
        Some("127.0.0.1:7410".parse().unwrap())
    );
    let lease: Duration = pl.get(pid::PARTICIPANT_LEASE_DURATION).unwrap().unwrap();
    assert_eq!(lease.to_std(), Some(std::time::Duration::from_secs(10)));
    let set: BuiltinEndpointSet = pl.get(pid::BUILTIN_ENDPOINT_SET).unwrap().unwrap();
    assert!(set.contains(
        BuiltinEndpointSet::PARTICIPANT_ANNOUNCER
            | BuiltinEndpointSet::PARTICIPANT_MESSAGE_DATA_READER
    ));
    assert!(!set.contains(BuiltinEndpointSet::TOPICS_ANNOUNCER));
    // absent QoS: the caller fills the per-endpoint default
    assert!(pl.get::<Reliability>(pid::RELIABILITY).is_none());
    let mut it = pl.iter();
    assert_eq!(it.by_ref().count(), 7);
    assert!(it.is_terminated());
    assert_eq!(it.consumed(), 116);
}

#[test]
fn spdp_announcement_reemits_byte_identically() {
    let m = MessageView::parse(&SPDP).unwrap();
    let mut buf = [0u8; 512];
    let mut w = MessageWriter::new(&mut buf, m.header()).unwrap();
    for raw in m.raw_submessages() {
        let raw = raw.unwrap();
        let s = raw.parse().unwrap();
        let n = w.push(&s, raw.endianness()).unwrap();
        assert_eq!(n, raw.bytes.len());
    }
    assert_eq!(w.finish(), &SPDP[..]);
}

#[test]
fn rebuilding_the_discovery_payload_matches() {
    // Build the same parameter list with the typed writer and compare.
    let mut pl = [0u8; 256];
    pl[1] = 0x03; // PL_CDR_LE
    let prefix = GuidPrefix([
        0x01, 0x10, 0xaa, 0xbb, 0xcc, 0xdd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
    ]);
    let mut w = ParameterListWriter::new(&mut pl[4..], Endianness::Little);
    w.push(pid::PROTOCOL_VERSION, &ProtocolVersion::V2_1)
        .unwrap();
    w.push(pid::VENDORID, &VendorId::CYCLONE_DDS).unwrap();
    w.push(
        pid::PARTICIPANT_GUID,
        &Guid::new(prefix, EntityId::PARTICIPANT),
    )
    .unwrap();
    let lo = std::net::Ipv4Addr::LOCALHOST;
    w.push(pid::METATRAFFIC_UNICAST_LOCATOR, &Locator::udpv4(lo, 7410))
        .unwrap();
    w.push(pid::DEFAULT_UNICAST_LOCATOR, &Locator::udpv4(lo, 7411))
        .unwrap();
    w.push(
        pid::PARTICIPANT_LEASE_DURATION,
        &Duration::from_std(std::time::Duration::from_secs(10)),
    )
    .unwrap();
    w.push(pid::BUILTIN_ENDPOINT_SET, &BuiltinEndpointSet(0x0c3f))
        .unwrap();
    let n = w.finish().unwrap().len();
    assert_eq!(&pl[..4 + n], &SPDP[56..]);
}

#[test]
fn sedp_reliability_and_payload_encapsulation_errors() {
    // PL_CDR_BE with RELIABILITY RELIABLE, 100 ms
    let payload = [
        0x00, 0x02, 0x00, 0x00, // PL_CDR_BE
        0x00, 0x1a, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x02, // RELIABILITY len 12, RELIABLE
        0x00, 0x00, 0x00, 0x00, 0x19, 0x99, 0x99, 0x9a, // max_blocking_time 0.1 s
        0x00, 0x01, 0x00, 0x00, // SENTINEL
    ];
    let pl = ParameterList::from_serialized_payload(&payload).unwrap();
    let r: Reliability = pl.get(pid::RELIABILITY).unwrap().unwrap();
    assert_eq!(r.kind, ReliabilityKind::Reliable);
    assert_eq!(r.max_blocking_time.to_nanos(), 100_000_000);
    let mut cdr = payload;
    cdr[1] = 0x01; // CDR_LE is not a parameter list
    assert_eq!(
        ParameterList::from_serialized_payload(&cdr),
        Err(WireError::InvalidEncapsulation { id: 1 })
    );
    assert!(matches!(
        ParameterList::from_serialized_payload(&[0]),
        Err(WireError::Truncated { .. })
    ));
}
