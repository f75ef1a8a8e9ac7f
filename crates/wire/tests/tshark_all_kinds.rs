//! Wireshark as an independent oracle for the emit side of the wire crate.
//!
//! Builds, with the public emit API only (`MessageWriter`, the submessage
//! structs, `ParameterListWriter` and every `ParameterValue` type), RTPS
//! messages holding every submessage kind the crate can emit, in both byte
//! orders, plus SPDP and SEDP announcements whose PL_CDR_LE / PL_CDR_BE
//! payloads hold every parameter with a typed value. They are written to a
//! pcapng file with the addresses real traffic would use (SPDP to port 7400,
//! SEDP to the metatraffic unicast port 7410, user traffic to 7411) and
//! dissected by tshark. Every frame must be RTPS, none may be malformed or
//! carry an expert info of warning severity or above, and tshark must list
//! exactly the submessage ids each message was built from.
//!
//! tshark is required unless `FERRODDS_SKIP_TSHARK=1`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration as StdDuration, Instant};

use ferrodds_capture::testing::{
    require_tshark, tshark_check, TsharkReport, CHECKSUM_PREFS, DEFAULT_PREFS,
};
use ferrodds_capture::{CaptureWriter, Direction, Timestamp};
use ferrodds_wire::qos::{
    data_representation, Deadline, DestinationOrder, DestinationOrderKind, Durability,
    DurabilityKind, DurabilityService, History, HistoryKind, LatencyBudget, Lifespan, Liveliness,
    LivelinessKind, Ownership, OwnershipKind, OwnershipStrength, Partition, Presentation,
    PresentationAccessScope, Reliability, ReliabilityKind, ResourceLimits, TimeBasedFilter,
    TransportPriority,
};
use ferrodds_wire::submessage::id;
use ferrodds_wire::*;

/// Encapsulation ids (protocol notes §1.8).
const CDR_BE: [u8; 2] = [0x00, 0x00];
const CDR_LE: [u8; 2] = [0x00, 0x01];
const PL_CDR_BE: [u8; 2] = [0x00, 0x02];
const PL_CDR_LE: [u8; 2] = [0x00, 0x03];

const LOCALHOST: Ipv4Addr = Ipv4Addr::LOCALHOST;
const SPDP_GROUP: Ipv4Addr = Ipv4Addr::new(239, 255, 0, 1);
/// Domain 0, participant 0 (RTPS 2.5 §9.6.1.1 default port mapping).
const SPDP_MULTICAST_PORT: u16 = 7400;
const METATRAFFIC_UNICAST_PORT: u16 = 7410;
const USER_UNICAST_PORT: u16 = 7411;
const USER_MULTICAST_PORT: u16 = 7401;

const OUR_PREFIX: GuidPrefix = GuidPrefix([0x01, 0xfd, 0, 0, 0x12, 0x34, 0x56, 0x78, 0, 0, 0, 1]);
const PEER_PREFIX: GuidPrefix = GuidPrefix([0x01, 0xfd, 0, 0, 0x9a, 0xbc, 0xde, 0xf0, 0, 0, 0, 2]);
const USER_WRITER: EntityId = EntityId::new([0, 0, 0x12], EntityId::KIND_WRITER_WITH_KEY);
const USER_READER: EntityId = EntityId::new([0, 0, 0x12], EntityId::KIND_READER_WITH_KEY);
const USER_GROUP: EntityId = EntityId::new([0, 0, 0x01], EntityId::KIND_WRITER_GROUP);

/// Every PID for which the wire crate has a typed [`ParameterValue`]: the
/// discovery payloads below must contain all of them.
const TYPED_PIDS: &[u16] = &[
    pid::PARTICIPANT_LEASE_DURATION,
    pid::TIME_BASED_FILTER,
    pid::TOPIC_NAME,
    pid::OWNERSHIP_STRENGTH,
    pid::TYPE_NAME,
    pid::DOMAIN_ID,
    pid::PROTOCOL_VERSION,
    pid::VENDORID,
    pid::RELIABILITY,
    pid::LIVELINESS,
    pid::DURABILITY,
    pid::DURABILITY_SERVICE,
    pid::OWNERSHIP,
    pid::PRESENTATION,
    pid::DEADLINE,
    pid::DESTINATION_ORDER,
    pid::LATENCY_BUDGET,
    pid::PARTITION,
    pid::LIFESPAN,
    pid::USER_DATA,
    pid::GROUP_DATA,
    pid::TOPIC_DATA,
    pid::UNICAST_LOCATOR,
    pid::MULTICAST_LOCATOR,
    pid::DEFAULT_UNICAST_LOCATOR,
    pid::METATRAFFIC_UNICAST_LOCATOR,
    pid::METATRAFFIC_MULTICAST_LOCATOR,
    pid::PARTICIPANT_MANUAL_LIVELINESS_COUNT,
    pid::HISTORY,
    pid::RESOURCE_LIMITS,
    pid::EXPECTS_INLINE_QOS,
    pid::DEFAULT_MULTICAST_LOCATOR,
    pid::TRANSPORT_PRIORITY,
    pid::PARTICIPANT_GUID,
    pid::GROUP_ENTITYID,
    pid::BUILTIN_ENDPOINT_SET,
    pid::PROPERTY_LIST,
    pid::ENDPOINT_GUID,
    pid::DIRECTED_WRITE,
    pid::ENTITY_NAME,
    pid::KEY_HASH,
    pid::STATUS_INFO,
    pid::DATA_REPRESENTATION,
    pid::BUILTIN_ENDPOINT_QOS,
    pid::DOMAIN_TAG,
    pid::ENDPOINT_SECURITY_INFO,
    pid::PARTICIPANT_SECURITY_INFO,
];

/// Set to `1` to keep the capture file (its path is printed) for inspection.
const KEEP_ENV: &str = "FERRODDS_KEEP_CAPTURE";

/// One datagram of the capture.
struct Packet {
    label: String,
    src: SocketAddrV4,
    dst: SocketAddrV4,
    bytes: Vec<u8>,
    ids: Vec<u8>,
}

fn name(endian: Endianness) -> &'static str {
    match endian {
        Endianness::Little => "LE",
        Endianness::Big => "BE",
    }
}

fn sn(n: i64) -> SequenceNumber {
    SequenceNumber(n)
}

fn secs(s: u64) -> Duration {
    Duration::from_std(StdDuration::from_secs(s))
}

fn millis(ms: u64) -> Duration {
    Duration::from_std(StdDuration::from_millis(ms))
}

/// Builds one RTPS message from `subs`, all in byte order `endian`.
fn message(prefix: GuidPrefix, endian: Endianness, subs: &[Submessage<'_>]) -> (Vec<u8>, Vec<u8>) {
    let mut buf = vec![0u8; 8192];
    let mut w = MessageWriter::new(&mut buf, &Header::new(prefix)).expect("header");
    for s in subs {
        let n = w.push(s, endian).expect("push submessage");
        assert_eq!(n, s.encoded_len(), "encoded_len of {s:?}");
    }
    let n = w.len();
    buf.truncate(n);
    (buf, subs.iter().map(Submessage::id).collect())
}

/// A parameter list built by `f`, sentinel included.
fn param_list(
    endian: Endianness,
    f: impl FnOnce(&mut ParameterListWriter<'_>) -> Result<(), WireError>,
) -> Vec<u8> {
    let mut buf = vec![0u8; 4096];
    let mut w = ParameterListWriter::new(&mut buf, endian);
    f(&mut w).expect("push parameter");
    let n = w.finish().expect("sentinel").len();
    buf.truncate(n);
    buf
}

/// A PL_CDR serialized payload (encapsulation header + list) built by `f`.
fn pl_payload(
    endian: Endianness,
    f: impl FnOnce(&mut ParameterListWriter<'_>) -> Result<(), WireError>,
) -> Vec<u8> {
    let id = match endian {
        Endianness::Little => PL_CDR_LE,
        Endianness::Big => PL_CDR_BE,
    };
    let mut v = vec![id[0], id[1], 0, 0];
    v.extend(param_list(endian, f));
    v
}

/// A CDR serialized payload: encapsulation header, then `body` (a multiple of 4).
fn cdr_payload(endian: Endianness, body: &[u8]) -> Vec<u8> {
    let id = match endian {
        Endianness::Little => CDR_LE,
        Endianness::Big => CDR_BE,
    };
    let mut v = vec![id[0], id[1], 0, 0];
    v.extend_from_slice(body);
    v
}

fn u32_bytes(endian: Endianness, v: u32) -> [u8; 4] {
    match endian {
        Endianness::Little => v.to_le_bytes(),
        Endianness::Big => v.to_be_bytes(),
    }
}

fn sn_set(base: i64, members: &[i64]) -> SequenceNumberSet {
    let mut s = SequenceNumberSet::empty(sn(base));
    for &m in members {
        assert!(s.insert(sn(m)), "{m} outside the set");
    }
    s
}

fn frag_set(base: u32, members: &[u32]) -> FragmentNumberSet {
    let mut s = FragmentNumberSet::empty(FragmentNumber(base));
    for &m in members {
        assert!(s.insert(FragmentNumber(m)), "{m} outside the set");
    }
    s
}

fn user_dst() -> SocketAddrV4 {
    SocketAddrV4::new(LOCALHOST, USER_UNICAST_PORT)
}

fn user_src() -> SocketAddrV4 {
    SocketAddrV4::new(LOCALHOST, 7413)
}

/// The participant announcement (SPDP, writer 0x000100c2).
fn spdp_payload(endian: Endianness) -> Vec<u8> {
    let props: &[(&str, &str)] = &[
        ("dds.sec.auth.plugin_class", "DDS:Auth:PKI-DH:1.0"),
        ("ferrodds.process", "tshark-test"),
    ];
    let bin: &[(&str, &[u8])] = &[("ferrodds.blob", &[1, 2, 3, 4, 5])];
    pl_payload(endian, |w| {
        w.push(pid::PROTOCOL_VERSION, &ProtocolVersion::CURRENT)?;
        w.push(pid::VENDORID, &VendorId::FERRODDS)?;
        w.push(pid::DOMAIN_ID, &0u32)?;
        w.push(pid::DOMAIN_TAG, &"ferro-domain")?;
        w.push(
            pid::PARTICIPANT_GUID,
            &Guid::new(OUR_PREFIX, EntityId::PARTICIPANT),
        )?;
        w.push(
            pid::BUILTIN_ENDPOINT_SET,
            &BuiltinEndpointSet(
                BuiltinEndpointSet::PARTICIPANT_ANNOUNCER
                    | BuiltinEndpointSet::PARTICIPANT_DETECTOR
                    | BuiltinEndpointSet::PUBLICATIONS_ANNOUNCER
                    | BuiltinEndpointSet::PUBLICATIONS_DETECTOR
                    | BuiltinEndpointSet::SUBSCRIPTIONS_ANNOUNCER
                    | BuiltinEndpointSet::SUBSCRIPTIONS_DETECTOR
                    | BuiltinEndpointSet::PARTICIPANT_MESSAGE_DATA_WRITER
                    | BuiltinEndpointSet::PARTICIPANT_MESSAGE_DATA_READER,
            ),
        )?;
        w.push(pid::BUILTIN_ENDPOINT_QOS, &1u32)?;
        w.push(
            pid::METATRAFFIC_UNICAST_LOCATOR,
            &Locator::udpv4(LOCALHOST, METATRAFFIC_UNICAST_PORT),
        )?;
        w.push(
            pid::METATRAFFIC_MULTICAST_LOCATOR,
            &Locator::udpv4(SPDP_GROUP, SPDP_MULTICAST_PORT),
        )?;
        w.push(
            pid::DEFAULT_UNICAST_LOCATOR,
            &Locator::udpv4(LOCALHOST, USER_UNICAST_PORT),
        )?;
        w.push(
            pid::DEFAULT_MULTICAST_LOCATOR,
            &Locator::udpv4(SPDP_GROUP, USER_MULTICAST_PORT),
        )?;
        w.push(pid::PARTICIPANT_LEASE_DURATION, &secs(20))?;
        w.push(pid::PARTICIPANT_MANUAL_LIVELINESS_COUNT, &3i32)?;
        w.push(pid::USER_DATA, &OctetSeq(b"user!"))?;
        w.push(pid::ENTITY_NAME, &"ferrodds participant")?;
        w.push(pid::PROPERTY_LIST, &PropertyList::from_slices(props, bin))?;
        w.push(
            pid::PARTICIPANT_SECURITY_INFO,
            &SecurityInfo {
                attributes: SecurityInfo::VALID | 0x1,
                plugin_attributes: SecurityInfo::VALID,
            },
        )
    })
}

/// QoS shared by publications and subscriptions.
fn endpoint_common(
    w: &mut ParameterListWriter<'_>,
    endpoint: EntityId,
    topic: &str,
) -> Result<(), WireError> {
    w.push(pid::ENDPOINT_GUID, &Guid::new(OUR_PREFIX, endpoint))?;
    w.push(
        pid::PARTICIPANT_GUID,
        &Guid::new(OUR_PREFIX, EntityId::PARTICIPANT),
    )?;
    w.push(pid::TOPIC_NAME, &topic)?;
    w.push(pid::TYPE_NAME, &"ShapeType")?;
    w.push(pid::PROTOCOL_VERSION, &ProtocolVersion::CURRENT)?;
    w.push(pid::VENDORID, &VendorId::FERRODDS)?;
    w.push(
        pid::RELIABILITY,
        &Reliability {
            kind: ReliabilityKind::Reliable,
            max_blocking_time: millis(100),
        },
    )?;
    w.push(
        pid::DURABILITY,
        &Durability {
            kind: DurabilityKind::TransientLocal,
        },
    )?;
    w.push(
        pid::HISTORY,
        &History {
            kind: HistoryKind::KeepLast,
            depth: 5,
        },
    )?;
    w.push(
        pid::RESOURCE_LIMITS,
        &ResourceLimits {
            max_samples: 100,
            max_instances: 10,
            max_samples_per_instance: 10,
        },
    )?;
    w.push(
        pid::LIVELINESS,
        &Liveliness {
            kind: LivelinessKind::ManualByTopic,
            lease_duration: secs(3),
        },
    )?;
    w.push(pid::DEADLINE, &Deadline { period: secs(2) })?;
    w.push(
        pid::LATENCY_BUDGET,
        &LatencyBudget {
            duration: millis(5),
        },
    )?;
    w.push(
        pid::OWNERSHIP,
        &Ownership {
            kind: OwnershipKind::Exclusive,
        },
    )?;
    w.push(
        pid::DESTINATION_ORDER,
        &DestinationOrder {
            kind: DestinationOrderKind::BySourceTimestamp,
        },
    )?;
    w.push(
        pid::PRESENTATION,
        &Presentation {
            access_scope: PresentationAccessScope::Topic,
            coherent_access: true,
            ordered_access: false,
        },
    )?;
    w.push(
        pid::PARTITION,
        &Partition::from_names(&["p1", "partition-two", "x"]),
    )?;
    w.push(pid::TOPIC_DATA, &OctetSeq(b"topic"))?;
    w.push(pid::GROUP_DATA, &OctetSeq(b"gd"))?;
    w.push(pid::USER_DATA, &OctetSeq(b"userdata"))?;
    w.push(
        pid::DATA_REPRESENTATION,
        &qos::DataRepresentation::from_slice(&[
            data_representation::XCDR,
            data_representation::XCDR2,
        ]),
    )?;
    w.push(
        pid::UNICAST_LOCATOR,
        &Locator::udpv4(LOCALHOST, USER_UNICAST_PORT),
    )?;
    w.push(
        pid::MULTICAST_LOCATOR,
        &Locator::udpv4(SPDP_GROUP, USER_MULTICAST_PORT),
    )?;
    w.push(pid::GROUP_ENTITYID, &USER_GROUP)?;
    w.push(pid::ENTITY_NAME, &"shapes endpoint")?;
    w.push(
        pid::ENDPOINT_SECURITY_INFO,
        &SecurityInfo {
            attributes: SecurityInfo::VALID,
            plugin_attributes: SecurityInfo::VALID,
        },
    )?;
    w.push(
        pid::KEY_HASH,
        &KeyHash(Guid::new(OUR_PREFIX, endpoint).to_bytes()),
    )
}

/// A publication announcement (SEDP, writer 0x000003c2).
fn sedp_publication_payload(endian: Endianness) -> Vec<u8> {
    pl_payload(endian, |w| {
        endpoint_common(w, USER_WRITER, "Square")?;
        w.push(
            pid::DURABILITY_SERVICE,
            &DurabilityService {
                service_cleanup_delay: secs(1),
                history_kind: HistoryKind::KeepAll,
                history_depth: 1,
                max_samples: -1,
                max_instances: -1,
                max_samples_per_instance: -1,
            },
        )?;
        w.push(pid::LIFESPAN, &Lifespan { duration: secs(60) })?;
        w.push(pid::OWNERSHIP_STRENGTH, &OwnershipStrength { value: 7 })?;
        w.push(pid::TRANSPORT_PRIORITY, &TransportPriority { value: 2 })
    })
}

/// A subscription announcement (SEDP, writer 0x000004c2).
fn sedp_subscription_payload(endian: Endianness) -> Vec<u8> {
    pl_payload(endian, |w| {
        endpoint_common(w, USER_READER, "Square")?;
        w.push(
            pid::TIME_BASED_FILTER,
            &TimeBasedFilter {
                minimum_separation: millis(10),
            },
        )?;
        w.push(pid::EXPECTS_INLINE_QOS, &false)
    })
}

/// The PIDs of a PL_CDR payload, checked to decode.
fn pids_of(payload: &[u8]) -> Vec<u16> {
    let pl = ParameterList::from_serialized_payload(payload).expect("PL_CDR payload");
    pl.iter()
        .map(|p| p.expect("our own list iterates").pid)
        .collect()
}

/// Every message of the capture.
fn all_packets() -> (Vec<Packet>, BTreeSet<u16>) {
    let mut packets = Vec::new();
    let mut pids = BTreeSet::new();
    let mut push = |label: String, src, dst, (bytes, ids): (Vec<u8>, Vec<u8>)| {
        packets.push(Packet {
            label,
            src,
            dst,
            bytes,
            ids,
        });
    };
    for (i, endian) in [Endianness::Little, Endianness::Big]
        .into_iter()
        .enumerate()
    {
        let e = name(endian);
        let base = 100 * i as i64;
        let now = Time::from_nanos(1_700_000_000_000_000_000 + base);

        // SPDP: INFO_TS + DATA(p), multicast to port 7400.
        let spdp = spdp_payload(endian);
        pids.extend(pids_of(&spdp));
        let data_p = Data::new(
            EntityId::SPDP_BUILTIN_PARTICIPANT_DETECTOR,
            EntityId::SPDP_BUILTIN_PARTICIPANT_ANNOUNCER,
            sn(1),
            Some(&spdp),
        );
        push(
            format!("SPDP {e}"),
            SocketAddrV4::new(LOCALHOST, METATRAFFIC_UNICAST_PORT),
            SocketAddrV4::new(SPDP_GROUP, SPDP_MULTICAST_PORT),
            message(
                OUR_PREFIX,
                endian,
                &[
                    InfoTs {
                        timestamp: Some(now),
                    }
                    .into(),
                    data_p.into(),
                ],
            ),
        );

        // SEDP: INFO_DST + INFO_TS + DATA(w) with inline QoS, HEARTBEAT;
        // and DATA(r), to the peer's metatraffic unicast port.
        let pub_payload = sedp_publication_payload(endian);
        let sub_payload = sedp_subscription_payload(endian);
        pids.extend(pids_of(&pub_payload));
        pids.extend(pids_of(&sub_payload));
        let sedp_qos = param_list(endian, |w| {
            w.push(
                pid::KEY_HASH,
                &KeyHash(Guid::new(OUR_PREFIX, USER_WRITER).to_bytes()),
            )
        });
        let data_w = Data {
            inline_qos: Some(ParameterList::new(&sedp_qos, endian)),
            ..Data::new(
                EntityId::SEDP_BUILTIN_PUBLICATIONS_DETECTOR,
                EntityId::SEDP_BUILTIN_PUBLICATIONS_ANNOUNCER,
                sn(1),
                Some(&pub_payload),
            )
        };
        let data_r = Data::new(
            EntityId::SEDP_BUILTIN_SUBSCRIPTIONS_DETECTOR,
            EntityId::SEDP_BUILTIN_SUBSCRIPTIONS_ANNOUNCER,
            sn(1),
            Some(&sub_payload),
        );
        let sedp_dst = SocketAddrV4::new(LOCALHOST, METATRAFFIC_UNICAST_PORT);
        let sedp_src = SocketAddrV4::new(LOCALHOST, 7412);
        push(
            format!("SEDP publication {e}"),
            sedp_src,
            sedp_dst,
            message(
                OUR_PREFIX,
                endian,
                &[
                    InfoDst {
                        guid_prefix: PEER_PREFIX,
                    }
                    .into(),
                    InfoTs {
                        timestamp: Some(now),
                    }
                    .into(),
                    data_w.into(),
                    Heartbeat {
                        reader_id: EntityId::SEDP_BUILTIN_PUBLICATIONS_DETECTOR,
                        writer_id: EntityId::SEDP_BUILTIN_PUBLICATIONS_ANNOUNCER,
                        first_sn: sn(1),
                        last_sn: sn(1),
                        count: Count(1),
                        final_flag: false,
                        liveliness: false,
                        group_info: None,
                    }
                    .into(),
                ],
            ),
        );
        push(
            format!("SEDP subscription {e}"),
            sedp_src,
            sedp_dst,
            message(
                OUR_PREFIX,
                endian,
                &[
                    InfoDst {
                        guid_prefix: PEER_PREFIX,
                    }
                    .into(),
                    data_r.into(),
                ],
            ),
        );

        // User DATA with inline QoS and a payload, and a key-only DATA
        // (dispose + unregister) with KEY_HASH and STATUS_INFO.
        let key = Guid::new(OUR_PREFIX, USER_WRITER).to_bytes();
        let mut body = Vec::new();
        body.extend_from_slice(&u32_bytes(endian, 42));
        body.extend_from_slice(&u32_bytes(endian, 4));
        body.extend_from_slice(b"red\0");
        let payload = cdr_payload(endian, &body);
        let key_payload = cdr_payload(endian, &u32_bytes(endian, 42));
        let qos = param_list(endian, |w| {
            w.push(pid::KEY_HASH, &KeyHash(key))?;
            w.push(pid::DIRECTED_WRITE, &Guid::new(PEER_PREFIX, USER_READER))
        });
        let dispose_qos = param_list(endian, |w| {
            w.push(pid::KEY_HASH, &KeyHash(key))?;
            w.push(
                pid::STATUS_INFO,
                &StatusInfo(StatusInfo::DISPOSED | StatusInfo::UNREGISTERED),
            )
        });
        pids.extend(
            ParameterList::new(&qos, endian)
                .iter()
                .chain(ParameterList::new(&dispose_qos, endian).iter())
                .map(|p| p.expect("inline qos").pid),
        );
        let data = Data {
            inline_qos: Some(ParameterList::new(&qos, endian)),
            ..Data::new(USER_READER, USER_WRITER, sn(base + 1), Some(&payload))
        };
        let dispose = Data {
            inline_qos: Some(ParameterList::new(&dispose_qos, endian)),
            key: true,
            ..Data::new(USER_READER, USER_WRITER, sn(base + 2), Some(&key_payload))
        };
        push(
            format!("DATA + key-only DATA {e}"),
            user_src(),
            user_dst(),
            message(
                OUR_PREFIX,
                endian,
                &[
                    InfoTs {
                        timestamp: Some(now),
                    }
                    .into(),
                    data.into(),
                    dispose.into(),
                ],
            ),
        );

        // A sample of 100 bytes in two DATA_FRAGs of 64 (+ 36) bytes, then
        // HEARTBEAT_FRAG; the receiver answers NACK_FRAG.
        let sample: Vec<u8> = {
            let body: Vec<u8> = (0..96u8).collect();
            cdr_payload(endian, &body)
        };
        let frag_sn = sn(base + 3);
        let frag = |n: u32, bytes: &'_ [u8], qos: Option<ParameterList<'_>>| {
            let df = DataFrag {
                extra_flags: 0,
                octets_to_inline_qos: submessage::DATA_FRAG_OCTETS_TO_INLINE_QOS,
                reader_id: USER_READER,
                writer_id: USER_WRITER,
                writer_sn: frag_sn,
                fragment_starting_num: FragmentNumber(n),
                fragments_in_submessage: 1,
                fragment_size: 64,
                sample_size: 100,
                inline_qos: qos,
                serialized_payload: bytes,
                key: false,
                non_standard_payload: false,
            };
            message(OUR_PREFIX, endian, &[df.into()])
        };
        let frag_qos = param_list(endian, |w| w.push(pid::KEY_HASH, &KeyHash(key)));
        push(
            format!("DATA_FRAG 1/2 {e}"),
            user_src(),
            user_dst(),
            frag(
                1,
                &sample[..64],
                Some(ParameterList::new(&frag_qos, endian)),
            ),
        );
        push(
            format!("DATA_FRAG 2/2 {e}"),
            user_src(),
            user_dst(),
            frag(2, &sample[64..], None),
        );

        // Writer-side reliability: HEARTBEAT (plain; final + liveliness),
        // HEARTBEAT_FRAG, GAP.
        push(
            format!("HEARTBEAT + HEARTBEAT_FRAG + GAP {e}"),
            user_src(),
            user_dst(),
            message(
                OUR_PREFIX,
                endian,
                &[
                    Heartbeat {
                        reader_id: EntityId::UNKNOWN,
                        writer_id: USER_WRITER,
                        first_sn: sn(base + 1),
                        last_sn: sn(base + 3),
                        count: Count(7),
                        final_flag: false,
                        liveliness: false,
                        group_info: None,
                    }
                    .into(),
                    Heartbeat {
                        reader_id: USER_READER,
                        writer_id: USER_WRITER,
                        first_sn: sn(base + 1),
                        last_sn: sn(base + 3),
                        count: Count(8),
                        final_flag: true,
                        liveliness: true,
                        group_info: None,
                    }
                    .into(),
                    HeartbeatFrag {
                        reader_id: USER_READER,
                        writer_id: USER_WRITER,
                        writer_sn: frag_sn,
                        last_fragment_num: FragmentNumber(2),
                        count: Count(1),
                    }
                    .into(),
                    Gap {
                        reader_id: USER_READER,
                        writer_id: USER_WRITER,
                        gap_start: sn(base + 4),
                        gap_list: sn_set(base + 6, &[base + 7, base + 9]),
                        group_info: None,
                        filtered_count: None,
                    }
                    .into(),
                ],
            ),
        );

        // Reader-side reliability: INFO_DST + ACKNACK (pure ack, bitmap) + NACK_FRAG.
        push(
            format!("ACKNACK + NACK_FRAG {e}"),
            SocketAddrV4::new(LOCALHOST, 7414),
            SocketAddrV4::new(LOCALHOST, 7413),
            message(
                PEER_PREFIX,
                endian,
                &[
                    InfoDst {
                        guid_prefix: OUR_PREFIX,
                    }
                    .into(),
                    AckNack {
                        reader_id: USER_READER,
                        writer_id: USER_WRITER,
                        reader_sn_state: SequenceNumberSet::empty(sn(base + 4)),
                        count: Count(1),
                        final_flag: true,
                    }
                    .into(),
                    AckNack {
                        reader_id: USER_READER,
                        writer_id: USER_WRITER,
                        reader_sn_state: sn_set(base + 1, &[base + 1, base + 3, base + 40]),
                        count: Count(2),
                        final_flag: false,
                    }
                    .into(),
                    NackFrag {
                        reader_id: USER_READER,
                        writer_id: USER_WRITER,
                        writer_sn: frag_sn,
                        fragment_number_state: frag_set(1, &[2]),
                        count: Count(1),
                    }
                    .into(),
                ],
            ),
        );

        // Receiver-state submessages: INFO_SRC, INFO_REPLY (with multicast),
        // INFO_REPLY_IP4 (with multicast), INFO_TS invalidate, PAD; then a
        // HEARTBEAT they apply to.
        let unicast = [Locator::udpv4(LOCALHOST, USER_UNICAST_PORT)];
        let multicast = [
            Locator::udpv4(SPDP_GROUP, USER_MULTICAST_PORT),
            Locator::udpv6("ff02::1".parse().expect("ipv6"), USER_MULTICAST_PORT),
        ];
        push(
            format!("INFO_SRC + INFO_REPLY + INFO_REPLY_IP4 + INFO_TS(I) + PAD {e}"),
            user_src(),
            user_dst(),
            message(
                OUR_PREFIX,
                endian,
                &[
                    InfoSrc {
                        version: ProtocolVersion::CURRENT,
                        vendor_id: VendorId::FERRODDS,
                        guid_prefix: PEER_PREFIX,
                    }
                    .into(),
                    InfoReply {
                        unicast_locators: LocatorList::from_slice(&unicast),
                        multicast_locators: Some(LocatorList::from_slice(&multicast)),
                    }
                    .into(),
                    InfoReplyIp4 {
                        unicast_locator: LocatorUdpv4::new(LOCALHOST, USER_UNICAST_PORT),
                        multicast_locator: Some(LocatorUdpv4::new(SPDP_GROUP, USER_MULTICAST_PORT)),
                    }
                    .into(),
                    InfoTs { timestamp: None }.into(),
                    Pad { length: 0 }.into(),
                    Heartbeat {
                        reader_id: EntityId::UNKNOWN,
                        writer_id: USER_WRITER,
                        first_sn: sn(base + 1),
                        last_sn: sn(base),
                        count: Count(9),
                        final_flag: true,
                        liveliness: false,
                        group_info: None,
                    }
                    .into(),
                ],
            ),
        );
        // INFO_REPLY without multicast, INFO_REPLY_IP4 without multicast.
        push(
            format!("INFO_REPLY + INFO_REPLY_IP4 unicast only {e}"),
            user_src(),
            user_dst(),
            message(
                OUR_PREFIX,
                endian,
                &[
                    InfoReply {
                        unicast_locators: LocatorList::from_slice(&unicast),
                        multicast_locators: None,
                    }
                    .into(),
                    InfoReplyIp4 {
                        unicast_locator: LocatorUdpv4::new(LOCALHOST, USER_UNICAST_PORT),
                        multicast_locator: None,
                    }
                    .into(),
                    Pad { length: 0 }.into(),
                ],
            ),
        );

        // DDS-Security submessages as opaque bodies: an RTPS-level
        // SRTPS_PREFIX/SRTPS_POSTFIX pair around a SEC_PREFIX, SEC_BODY,
        // SEC_POSTFIX protected submessage.
        let mut prefix_body = Vec::new();
        prefix_body.extend_from_slice(&[0, 0, 0, 2]); // transformation kind
        prefix_body.extend_from_slice(&[0, 0, 0, 1]); // transformation key id
        prefix_body.extend_from_slice(&[0, 0, 0, 7]); // session id
        prefix_body.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]); // IV suffix
                                                                  // CryptoContent and CryptoFooter are big-endian CDR whatever the E
                                                                  // flag (DDS-Security 1.1 §7.3.6; Wireshark reads them so too).
        let mut sec_body = 12u32.to_be_bytes().to_vec();
        sec_body.extend_from_slice(&[0xa5; 12]);
        let mut postfix_body = vec![0x5a; 16]; // common MAC
        postfix_body.extend_from_slice(&0u32.to_be_bytes()); // no receiver MACs
        push(
            format!("SRTPS_PREFIX + SEC_PREFIX + SEC_BODY + SEC_POSTFIX + SRTPS_POSTFIX {e}"),
            user_src(),
            user_dst(),
            message(
                OUR_PREFIX,
                endian,
                &[
                    opaque(id::SRTPS_PREFIX, &prefix_body),
                    InfoDst {
                        guid_prefix: PEER_PREFIX,
                    }
                    .into(),
                    opaque(id::SEC_PREFIX, &prefix_body),
                    opaque(id::SEC_BODY, &sec_body),
                    opaque(id::SEC_POSTFIX, &postfix_body),
                    opaque(id::SRTPS_POSTFIX, &postfix_body),
                ],
            ),
        );
        push(
            format!("HEARTBEAT and GAP with group info {e}"),
            user_src(),
            user_dst(),
            message(
                OUR_PREFIX,
                endian,
                &[
                    Heartbeat {
                        reader_id: USER_READER,
                        writer_id: USER_WRITER,
                        first_sn: sn(base + 1),
                        last_sn: sn(base + 3),
                        count: Count(10),
                        final_flag: false,
                        liveliness: false,
                        group_info: Some(HeartbeatGroupInfo {
                            current_gsn: sn(5),
                            first_gsn: sn(1),
                            last_gsn: sn(5),
                            writer_set: [1, 2, 3, 4],
                            secure_writer_set: [0; 4],
                        }),
                    }
                    .into(),
                    Gap {
                        reader_id: USER_READER,
                        writer_id: USER_WRITER,
                        gap_start: sn(base + 4),
                        gap_list: sn_set(base + 6, &[]),
                        group_info: Some(GapGroupInfo {
                            gap_start_gsn: sn(4),
                            gap_end_gsn: sn(5),
                        }),
                        filtered_count: Some(3),
                    }
                    .into(),
                ],
            ),
        );
    }
    (packets, pids)
}

/// A security submessage with an opaque body.
fn opaque(sid: u8, body: &[u8]) -> Submessage<'_> {
    Submessage::Security(Opaque {
        id: sid,
        flags: 0,
        body,
    })
}

/// Frame `frame` of `path` as `tshark -V` prints it (for failure messages).
fn tshark_verbose(path: &Path, frame: u32) -> String {
    let out_path = path.with_extension(format!("frame{frame}.txt"));
    let Ok(out) = std::fs::File::create(&out_path) else {
        return "(cannot create output file)".into();
    };
    let program = std::env::var_os("TSHARK").unwrap_or_else(|| "tshark".into());
    let child = Command::new(program)
        .args(["-n", "-2", "-V", "-r"])
        .arg(path)
        .args(DEFAULT_PREFS)
        .args(CHECKSUM_PREFS)
        .args(["-Y", &format!("frame.number == {frame}")])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return "(cannot run tshark -V)".into();
    };
    let deadline = Instant::now() + StdDuration::from_secs(60);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(StdDuration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
        }
    }
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    // The RTPS part is what matters; Ethernet/IP/UDP are synthetic.
    match text.find("Real-Time Publish-Subscribe") {
        Some(at) => text[at..].to_string(),
        None => text,
    }
}

fn write_capture(path: &Path, packets: &[Packet]) {
    let file = std::fs::File::create(path).expect("create capture");
    let mut w = CaptureWriter::new(std::io::BufWriter::new(file)).expect("pcapng");
    let iface = w.add_interface("ferrodds-tshark-all-kinds").expect("iface");
    let t0 = Timestamp::now().as_nanos();
    for (i, p) in packets.iter().enumerate() {
        w.write_udp(
            iface,
            Timestamp::from_nanos(t0 + 1000 * i as u64),
            p.src,
            p.dst,
            &p.bytes,
            Direction::Outbound,
            Some(&p.label),
        )
        .expect("write datagram");
    }
    w.into_inner().expect("flush");
}

/// Checks the report against what was written; returns every problem, each
/// with the frame's `tshark -V` dump.
fn problems(path: &Path, packets: &[Packet], report: &TsharkReport) -> Vec<String> {
    let mut out = Vec::new();
    if report.packets.len() != packets.len() {
        out.push(format!(
            "tshark saw {} frames, we wrote {}",
            report.packets.len(),
            packets.len()
        ));
    }
    for (p, t) in packets.iter().zip(&report.packets) {
        let mut why = Vec::new();
        if !t.is_rtps() {
            why.push(format!("not RTPS: {:?}", t.protocols));
        }
        if t.malformed {
            why.push("malformed".to_string());
        }
        if t.has_problem(ferrodds_capture::testing::Severity::Warning) {
            why.push(format!("expert infos: {:?}", t.expert));
        }
        if t.submessage_ids != p.ids {
            why.push(format!(
                "submessage ids {:02x?}, we wrote {:02x?}",
                t.submessage_ids, p.ids
            ));
        }
        if !why.is_empty() {
            let mut s = format!("frame {} ({}): {}\n", t.frame, p.label, why.join("; "));
            let _ = write!(s, "{}", tshark_verbose(path, t.frame));
            out.push(s);
        }
    }
    let written: BTreeSet<u8> = packets.iter().flat_map(|p| p.ids.iter().copied()).collect();
    if report.submessage_ids() != written {
        out.push(format!(
            "submessage id set {:02x?} differs from the written set {:02x?}",
            report.submessage_ids(),
            written
        ));
    }
    out
}

fn temp_capture(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "ferrodds-wire-{name}-{}.pcapng",
        std::process::id()
    ))
}

/// Writes `packets` to a fresh capture, runs tshark and returns every
/// disagreement (see [`problems`]); `None` if tshark is unavailable and
/// skipping was requested.
fn tshark_problems(name: &str, packets: &[Packet]) -> Option<Vec<String>> {
    match require_tshark() {
        Ok(true) => {}
        Ok(false) => return None,
        Err(e) => panic!("{e}"),
    }
    let path = temp_capture(name);
    write_capture(&path, packets);
    let report = tshark_check(&path).expect("tshark runs");
    let problems = problems(&path, packets, &report);
    if std::env::var_os(KEEP_ENV).is_some_and(|v| v == "1") {
        eprintln!("capture kept at {}", path.display());
    } else {
        let _ = std::fs::remove_file(&path);
    }
    Some(problems)
}

/// Offset of `inner` (a subslice) within `outer`.
fn offset_in(outer: &[u8], inner: &[u8]) -> usize {
    let off = (inner.as_ptr() as usize).wrapping_sub(outer.as_ptr() as usize);
    assert!(off + inner.len() <= outer.len(), "not a subslice");
    off
}

#[test]
fn every_submessage_and_parameter_kind_dissects_cleanly_in_tshark() {
    let (packets, pids) = all_packets();

    // Coverage of the build itself: every emittable kind, every typed PID.
    let ids: BTreeSet<u8> = packets.iter().flat_map(|p| p.ids.iter().copied()).collect();
    let kinds = [
        id::PAD,
        id::ACKNACK,
        id::HEARTBEAT,
        id::GAP,
        id::INFO_TS,
        id::INFO_SRC,
        id::INFO_REPLY_IP4,
        id::INFO_DST,
        id::INFO_REPLY,
        id::NACK_FRAG,
        id::HEARTBEAT_FRAG,
        id::DATA,
        id::DATA_FRAG,
        id::SEC_BODY,
        id::SEC_PREFIX,
        id::SEC_POSTFIX,
        id::SRTPS_PREFIX,
        id::SRTPS_POSTFIX,
    ];
    for k in kinds {
        assert!(ids.contains(&k), "no submessage {k:#04x} in the capture");
    }
    let missing: Vec<String> = TYPED_PIDS
        .iter()
        .filter(|p| !pids.contains(p))
        .map(|p| format!("{p:#06x}"))
        .collect();
    assert!(missing.is_empty(), "PIDs not covered: {missing:?}");

    // Every message also parses back with our own parser, to the same kinds
    // and, re-emitted, to the same bytes.
    for p in &packets {
        let m = MessageView::parse(&p.bytes).expect("our message parses");
        let mut back = Vec::new();
        for raw in m.raw_submessages() {
            let raw = raw.expect("our submessage is delimited");
            let s = raw.parse().expect("our submessage parses");
            let mut out = vec![0u8; s.encoded_len()];
            let n = s.write(raw.endianness(), &mut out).expect("re-emit");
            assert_eq!(&out[..n], raw.bytes, "{}: {s:?}", p.label);
            back.push(s.id());
        }
        assert_eq!(back, p.ids, "{}", p.label);
    }

    let Some(problems) = tshark_problems("all-kinds", &packets) else {
        return;
    };
    assert!(
        problems.is_empty(),
        "tshark disagrees with {} of {} frames:\n{}",
        problems.len(),
        packets.len(),
        problems.join("\n")
    );
}

/// The check above can fail: a parameter length running past the list and a
/// submessage length too short for its fixed fields are both reported.
#[test]
fn corrupted_lengths_are_reported() {
    let (mut packets, _) = all_packets();
    // SPDP LE: PID_PROTOCOL_VERSION (the first parameter) claims 0x0400 bytes.
    let spdp = packets
        .iter_mut()
        .find(|p| p.label == "SPDP LE")
        .expect("SPDP LE packet");
    let len_at = {
        let m = MessageView::parse(&spdp.bytes).expect("parse");
        let data = m
            .submessages()
            .find_map(|s| match s {
                Ok(Submessage::Data(d)) => Some(d),
                _ => None,
            })
            .expect("DATA(p)");
        let payload = data.serialized_payload.expect("payload");
        let pl = ParameterList::from_serialized_payload(payload).expect("PL");
        assert_eq!(
            pl.iter().next().map(|p| p.map(|p| p.pid)),
            Some(Ok(pid::PROTOCOL_VERSION))
        );
        offset_in(&spdp.bytes, pl.as_bytes()) + 2
    };
    spdp.bytes[len_at..len_at + 2].copy_from_slice(&0x0400u16.to_le_bytes());
    // ACKNACK BE: the first ACKNACK's octetsToNextHeader is cut to 8.
    let ack = packets
        .iter_mut()
        .find(|p| p.label == "ACKNACK + NACK_FRAG BE")
        .expect("ACKNACK packet");
    let at = {
        let m = MessageView::parse(&ack.bytes).expect("parse");
        m.raw_submessages()
            .map(|r| r.expect("raw"))
            .find(|r| r.header.id == id::ACKNACK)
            .expect("ACKNACK")
            .offset
    };
    ack.bytes[at + 2..at + 4].copy_from_slice(&8u16.to_be_bytes());

    let Some(problems) = tshark_problems("corrupted", &packets) else {
        return;
    };
    for label in ["SPDP LE", "ACKNACK + NACK_FRAG BE"] {
        assert!(
            problems.iter().any(|p| p.contains(&format!("({label})"))),
            "corruption of {label} not reported; problems: {problems:#?}"
        );
    }
    let frames = problems.iter().filter(|p| p.starts_with("frame ")).count();
    assert_eq!(frames, 2, "only the two corrupted frames: {problems:#?}");
}
