//! Property-based round trips: every submessage kind, whole messages, sets,
//! times, locators and parameter values, in both byte orders; plus
//! "never panics" checks on random and mutated input.

use ferrodds_wire::qos::*;
use ferrodds_wire::submessage::id;
use ferrodds_wire::values::OctetSeq;
use ferrodds_wire::*;
use proptest::prelude::*;

fn endian() -> impl Strategy<Value = Endianness> {
    prop_oneof![Just(Endianness::Big), Just(Endianness::Little)]
}

fn entity() -> impl Strategy<Value = EntityId> {
    any::<[u8; 4]>().prop_map(EntityId)
}

fn prefix() -> impl Strategy<Value = GuidPrefix> {
    any::<[u8; 12]>().prop_map(GuidPrefix)
}

fn valid_sn() -> impl Strategy<Value = SequenceNumber> {
    prop_oneof![1i64..1000, 1i64..i64::MAX / 2].prop_map(SequenceNumber)
}

fn any_sn() -> impl Strategy<Value = SequenceNumber> {
    any::<i64>().prop_map(SequenceNumber)
}

fn sn_set() -> impl Strategy<Value = SequenceNumberSet> {
    (valid_sn(), 0u32..=256, any::<[u32; 8]>())
        .prop_map(|(b, n, w)| SequenceNumberSet::from_parts(b, n, w).expect("num_bits <= 256"))
}

fn frag_set() -> impl Strategy<Value = FragmentNumberSet> {
    (1u32.., 0u32..=256, any::<[u32; 8]>()).prop_map(|(b, n, w)| {
        FragmentNumberSet::from_parts(FragmentNumber(b), n, w).expect("num_bits <= 256")
    })
}

fn time() -> impl Strategy<Value = Time> {
    (any::<i32>(), any::<u32>()).prop_map(|(seconds, fraction)| Time { seconds, fraction })
}

fn duration() -> impl Strategy<Value = Duration> {
    (any::<i32>(), any::<u32>()).prop_map(|(seconds, fraction)| Duration { seconds, fraction })
}

fn locator() -> impl Strategy<Value = Locator> {
    (any::<i32>(), any::<u32>(), any::<[u8; 16]>()).prop_map(|(kind, port, address)| Locator {
        kind,
        port,
        address,
    })
}

/// Inline QoS encoded in both byte orders from (pid, value) pairs.
#[derive(Debug, Clone)]
struct Qos {
    be: Vec<u8>,
    le: Vec<u8>,
}

impl Qos {
    fn get(&self, e: Endianness) -> ParameterList<'_> {
        match e {
            Endianness::Big => ParameterList::new(&self.be, e),
            Endianness::Little => ParameterList::new(&self.le, e),
        }
    }
}

fn encode_list(params: &[(u16, Vec<u8>)], e: Endianness) -> Vec<u8> {
    let mut buf = vec![0u8; 4096];
    let mut w = ParameterListWriter::new(&mut buf, e);
    for (p, v) in params {
        w.push_raw(*p, v).unwrap();
    }
    w.finish().unwrap().to_vec()
}

fn qos() -> impl Strategy<Value = Qos> {
    prop::collection::vec(
        (
            any::<u16>().prop_filter("no sentinel", |p| *p != pid::SENTINEL),
            prop::collection::vec(any::<u8>(), 0..24),
        ),
        0..5,
    )
    .prop_map(|params| Qos {
        be: encode_list(&params, Endianness::Big),
        le: encode_list(&params, Endianness::Little),
    })
}

fn aligned_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max).prop_map(|mut v| {
        v.truncate(v.len() / 4 * 4);
        v
    })
}

/// An owned description of one submessage; `build` borrows from it.
#[derive(Debug, Clone)]
enum Plan {
    Data {
        extra_flags: u16,
        otiq: u16,
        reader: EntityId,
        writer: EntityId,
        sn: SequenceNumber,
        qos: Option<Qos>,
        payload: Option<Vec<u8>>,
        key: bool,
        non_standard: bool,
    },
    DataFrag {
        extra_flags: u16,
        otiq: u16,
        reader: EntityId,
        writer: EntityId,
        sn: SequenceNumber,
        start: u32,
        count: u16,
        frag_size: u16,
        sample_size: u32,
        qos: Option<Qos>,
        payload: Vec<u8>,
        key: bool,
        non_standard: bool,
    },
    Heartbeat(Heartbeat),
    HeartbeatFrag(HeartbeatFrag),
    AckNack(AckNack),
    NackFrag(NackFrag),
    Gap(Gap),
    InfoTs(InfoTs),
    InfoDst(InfoDst),
    InfoSrc(InfoSrc),
    InfoReply(Vec<Locator>, Option<Vec<Locator>>),
    InfoReplyIp4(InfoReplyIp4),
    Pad(Pad),
    Opaque(u8, u8, Vec<u8>),
}

impl Plan {
    fn build(&self, e: Endianness) -> Submessage<'_> {
        match self {
            Plan::Data {
                extra_flags,
                otiq,
                reader,
                writer,
                sn,
                qos,
                payload,
                key,
                non_standard,
            } => Submessage::Data(Data {
                extra_flags: *extra_flags,
                octets_to_inline_qos: *otiq,
                reader_id: *reader,
                writer_id: *writer,
                writer_sn: *sn,
                inline_qos: qos.as_ref().map(|q| q.get(e)),
                serialized_payload: payload.as_deref(),
                key: *key && payload.is_some(),
                non_standard_payload: *non_standard,
            }),
            Plan::DataFrag {
                extra_flags,
                otiq,
                reader,
                writer,
                sn,
                start,
                count,
                frag_size,
                sample_size,
                qos,
                payload,
                key,
                non_standard,
            } => Submessage::DataFrag(DataFrag {
                extra_flags: *extra_flags,
                octets_to_inline_qos: *otiq,
                reader_id: *reader,
                writer_id: *writer,
                writer_sn: *sn,
                fragment_starting_num: FragmentNumber(*start),
                fragments_in_submessage: *count,
                fragment_size: *frag_size,
                sample_size: *sample_size,
                inline_qos: qos.as_ref().map(|q| q.get(e)),
                serialized_payload: payload,
                key: *key,
                non_standard_payload: *non_standard,
            }),
            Plan::Heartbeat(s) => Submessage::Heartbeat(*s),
            Plan::HeartbeatFrag(s) => Submessage::HeartbeatFrag(*s),
            Plan::AckNack(s) => Submessage::AckNack(*s),
            Plan::NackFrag(s) => Submessage::NackFrag(*s),
            Plan::Gap(s) => Submessage::Gap(*s),
            Plan::InfoTs(s) => Submessage::InfoTs(*s),
            Plan::InfoDst(s) => Submessage::InfoDst(*s),
            Plan::InfoSrc(s) => Submessage::InfoSrc(*s),
            Plan::InfoReply(uc, mc) => Submessage::InfoReply(InfoReply {
                unicast_locators: LocatorList::from_slice(uc),
                multicast_locators: mc.as_deref().map(LocatorList::from_slice),
            }),
            Plan::InfoReplyIp4(s) => Submessage::InfoReplyIp4(*s),
            Plan::Pad(s) => Submessage::Pad(*s),
            Plan::Opaque(sid, flags, body) => {
                let o = Opaque {
                    id: *sid,
                    flags: (flags & !1) | e.flag(),
                    body,
                };
                if id::is_security(*sid) {
                    Submessage::Security(o)
                } else {
                    Submessage::Unknown(o)
                }
            }
        }
    }
}

const KNOWN: [u8; 13] = [
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
];

fn data_plan() -> impl Strategy<Value = Plan> {
    (
        any::<u16>(),
        // octetsToInlineQos multiple of 4, so the payload stays aligned
        (4u16..10).prop_map(|x| x * 4),
        entity(),
        entity(),
        valid_sn(),
        prop::option::of(qos()),
        prop::option::of(aligned_bytes(96)),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(extra_flags, otiq, reader, writer, sn, qos, payload, key, non_standard)| Plan::Data {
                extra_flags,
                otiq,
                reader,
                writer,
                sn,
                qos,
                payload,
                key,
                non_standard,
            },
        )
}

fn data_frag_plan() -> impl Strategy<Value = Plan> {
    (1u16..64, 1u32..10)
        .prop_flat_map(|(fs, total)| {
            let fs32 = u32::from(fs);
            (
                Just(fs),
                1..=fs32,
                Just(total),
                1..=total,
                (
                    any::<u16>(),
                    28u16..40,
                    entity(),
                    entity(),
                    valid_sn(),
                    prop::option::of(qos()),
                    any::<bool>(),
                    any::<bool>(),
                    any::<u64>(),
                ),
            )
        })
        .prop_flat_map(|(fs, last, total, start, rest)| {
            let fs32 = u32::from(fs);
            let sample = fs32 * (total - 1) + last;
            let max_count = total - start + 1;
            (Just((fs, sample, start, rest)), 1..=max_count)
        })
        .prop_map(|((fs, sample, start, rest), count)| {
            let (extra_flags, otiq, reader, writer, sn, qos, key, non_standard, seed) = rest;
            let offset = (start - 1) * u32::from(fs);
            let len = (count * u32::from(fs)).min(sample - offset) as usize;
            let payload = (0..len)
                .map(|i| (seed >> (i % 8 * 8)) as u8 ^ i as u8)
                .collect();
            Plan::DataFrag {
                extra_flags,
                otiq,
                reader,
                writer,
                sn,
                start,
                count: count as u16,
                frag_size: fs,
                sample_size: sample,
                qos,
                payload,
                key,
                non_standard,
            }
        })
}

fn heartbeat() -> impl Strategy<Value = Heartbeat> {
    (
        entity(),
        entity(),
        valid_sn(),
        0i64..1000,
        any::<i32>(),
        any::<bool>(),
        any::<bool>(),
        prop::option::of((
            any_sn(),
            any_sn(),
            any_sn(),
            any::<[u8; 4]>(),
            any::<[u8; 4]>(),
        )),
    )
        .prop_map(|(r, w, first, d, c, f, l, g)| Heartbeat {
            reader_id: r,
            writer_id: w,
            first_sn: first,
            last_sn: SequenceNumber(first.0 - 1 + d),
            count: Count(c),
            final_flag: f,
            liveliness: l,
            group_info: g.map(|(a, b, cc, ws, sws)| HeartbeatGroupInfo {
                current_gsn: a,
                first_gsn: b,
                last_gsn: cc,
                writer_set: ws,
                secure_writer_set: sws,
            }),
        })
}

fn plan() -> impl Strategy<Value = Plan> {
    prop_oneof![
        data_plan(),
        data_frag_plan(),
        heartbeat().prop_map(Plan::Heartbeat),
        (entity(), entity(), valid_sn(), 1..=u32::MAX, any::<i32>()).prop_map(
            |(r, w, sn, l, c)| Plan::HeartbeatFrag(HeartbeatFrag {
                reader_id: r,
                writer_id: w,
                writer_sn: sn,
                last_fragment_num: FragmentNumber(l),
                count: Count(c),
            })
        ),
        (entity(), entity(), sn_set(), any::<i32>(), any::<bool>()).prop_map(|(r, w, s, c, f)| {
            Plan::AckNack(AckNack {
                reader_id: r,
                writer_id: w,
                reader_sn_state: s,
                count: Count(c),
                final_flag: f,
            })
        }),
        (entity(), entity(), valid_sn(), frag_set(), any::<i32>()).prop_map(|(r, w, sn, s, c)| {
            Plan::NackFrag(NackFrag {
                reader_id: r,
                writer_id: w,
                writer_sn: sn,
                fragment_number_state: s,
                count: Count(c),
            })
        }),
        (
            entity(),
            entity(),
            valid_sn(),
            sn_set(),
            prop::option::of((any_sn(), any_sn())),
            prop::option::of(any::<i64>())
        )
            .prop_map(|(r, w, start, list, g, fc)| Plan::Gap(Gap {
                reader_id: r,
                writer_id: w,
                gap_start: start,
                gap_list: list,
                group_info: g.map(|(a, b)| GapGroupInfo {
                    gap_start_gsn: a,
                    gap_end_gsn: b,
                }),
                filtered_count: fc,
            })),
        prop::option::of(time()).prop_map(|t| Plan::InfoTs(InfoTs { timestamp: t })),
        prefix().prop_map(|p| Plan::InfoDst(InfoDst { guid_prefix: p })),
        (any::<[u8; 2]>(), any::<[u8; 2]>(), prefix()).prop_map(|(v, vid, p)| {
            Plan::InfoSrc(InfoSrc {
                version: ProtocolVersion {
                    major: v[0],
                    minor: v[1],
                },
                vendor_id: VendorId(vid),
                guid_prefix: p,
            })
        }),
        (
            prop::collection::vec(locator(), 0..4),
            prop::option::of(prop::collection::vec(locator(), 0..4))
        )
            .prop_map(|(u, m)| Plan::InfoReply(u, m)),
        (any::<(u32, u32)>(), prop::option::of(any::<(u32, u32)>())).prop_map(|(u, m)| {
            Plan::InfoReplyIp4(InfoReplyIp4 {
                unicast_locator: LocatorUdpv4 {
                    address: u.0,
                    port: u.1,
                },
                multicast_locator: m.map(|m| LocatorUdpv4 {
                    address: m.0,
                    port: m.1,
                }),
            })
        }),
        (0u16..64).prop_map(|n| Plan::Pad(Pad { length: n * 4 })),
        (
            any::<u8>().prop_filter("not a standard id", |i| !KNOWN.contains(i)),
            any::<u8>(),
            // non-empty: a zero octetsToNextHeader would mean "to the end"
            aligned_bytes(64).prop_map(|mut b| {
                b.extend_from_slice(&[1, 2, 3, 4]);
                b
            })
        )
            .prop_map(|(i, f, b)| Plan::Opaque(i, f, b)),
    ]
}

fn header() -> impl Strategy<Value = Header> {
    (any::<u8>(), any::<[u8; 2]>(), prefix()).prop_map(|(minor, v, p)| Header {
        version: ProtocolVersion { major: 2, minor },
        vendor_id: VendorId(v),
        guid_prefix: p,
    })
}

/// Builds a message from plans; returns the bytes and submessage boundaries.
fn message(h: &Header, plans: &[(Plan, Endianness)]) -> (Vec<u8>, Vec<usize>) {
    let mut buf = vec![0u8; 65536];
    let mut w = MessageWriter::new(&mut buf, h).unwrap();
    let mut bounds = vec![w.len()];
    for (p, e) in plans {
        w.push(&p.build(*e), *e).unwrap();
        bounds.push(w.len());
    }
    (w.finish().to_vec(), bounds)
}

/// Exercises every decoder on whatever the parser yields; must not panic.
fn consume(bytes: &[u8]) {
    let Ok(m) = MessageView::parse(bytes) else {
        return;
    };
    for s in m.submessages() {
        let Ok(s) = s else { break };
        let mut out = vec![0u8; s.encoded_len()];
        let _ = s.write(Endianness::Little, &mut out);
        let qos = match s {
            Submessage::Data(d) => d.inline_qos,
            Submessage::DataFrag(d) => d.inline_qos,
            Submessage::InfoReply(r) => {
                let _ = r.unicast_locators.iter().count();
                None
            }
            Submessage::Unknown(o) | Submessage::Security(o) => {
                // treat opaque bodies as parameter lists too
                Some(ParameterList::new(o.body, Endianness::Little))
            }
            _ => None,
        };
        if let Some(q) = qos {
            for p in q.iter() {
                let Ok(p) = p else { break };
                decode_all(p.value, q.endianness());
            }
        }
    }
}

fn decode_all(v: &[u8], e: Endianness) {
    let _ = u32::decode(v, e);
    let _ = bool::decode(v, e);
    let _ = <&str>::decode(v, e);
    let _ = Locator::decode(v, e);
    let _ = Guid::decode(v, e);
    let _ = Duration::decode(v, e);
    let _ = KeyHash::decode(v, e);
    let _ = StatusInfo::decode(v, e);
    let _ = Reliability::decode(v, e);
    let _ = DurabilityService::decode(v, e);
    let _ = Presentation::decode(v, e);
    let _ = OctetSeq::decode(v, e);
    if let Ok(p) = Partition::decode(v, e) {
        let _ = p.iter().count();
    }
    if let Ok(d) = DataRepresentation::decode(v, e) {
        let _ = d.iter().count();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_submessage_round_trips(p in plan(), e in endian()) {
        let h = Header::new(GuidPrefix([3; 12]));
        let s = p.build(e);
        let (bytes, _) = message(&h, &[(p.clone(), e)]);
        let m = MessageView::parse(&bytes).unwrap();
        let mut it = m.raw_submessages();
        let raw = it.next().unwrap().unwrap();
        prop_assert!(it.next().is_none());
        prop_assert_eq!(raw.endianness(), e);
        let parsed = raw.parse().unwrap();
        prop_assert_eq!(parsed, s);
        // re-emission with the parsed endianness is byte-identical
        let mut out = vec![0u8; parsed.encoded_len()];
        let n = parsed.write(raw.endianness(), &mut out).unwrap();
        prop_assert_eq!(&out[..n], raw.bytes);
        prop_assert_eq!(n % 4, 0);
    }

    #[test]
    fn whole_messages_round_trip(
        h in header(),
        plans in prop::collection::vec((plan(), endian()), 0..8),
    ) {
        let (bytes, bounds) = message(&h, &plans);
        let m = MessageView::parse(&bytes).unwrap();
        prop_assert_eq!(*m.header(), h);
        let parsed: Vec<_> = m.submessages().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(parsed.len(), plans.len());
        for (got, (p, e)) in parsed.iter().zip(&plans) {
            prop_assert_eq!(*got, p.build(*e));
        }
        // truncating anywhere but at a boundary gives Truncated
        for cut in 0..bytes.len() {
            let res = MessageView::parse(&bytes[..cut])
                .map(|m| m.submessages().find_map(|r| r.err()));
            if bounds.contains(&cut) {
                prop_assert_eq!(res, Ok(None));
            } else {
                let ok = matches!(
                    res,
                    Err(WireError::Truncated { .. }) | Ok(Some(WireError::Truncated { .. }))
                );
                prop_assert!(ok, "cut {}: {:?}", cut, res);
            }
        }
    }

    #[test]
    fn header_round_trips(h in header()) {
        let mut out = [0u8; 20];
        h.write(&mut out).unwrap();
        prop_assert_eq!(Header::parse(&out).unwrap(), h);
    }

    #[test]
    fn data_with_unaligned_payload_keeps_prefix(
        payload in prop::collection::vec(any::<u8>(), 0..40),
        e in endian(),
    ) {
        let d = Data::new(EntityId::UNKNOWN, EntityId([0, 0, 1, 2]), SequenceNumber(1), Some(&payload));
        let mut buf = vec![0u8; d.encoded_len()];
        let n = d.write(e, &mut buf).unwrap();
        prop_assert_eq!(n, 24 + payload.len().div_ceil(4) * 4);
        // scatter-gather pieces equal the contiguous encoding
        let mut head = vec![0u8; d.header_len()];
        d.write_header(e, &mut head).unwrap();
        let mut joined = head.clone();
        joined.extend_from_slice(&payload);
        joined.extend(std::iter::repeat_n(0, d.padding_len()));
        prop_assert_eq!(&joined[..], &buf[..]);
        let mut msg = vec![0u8; 20];
        Header::new(GuidPrefix::UNKNOWN).write(&mut msg).unwrap();
        msg.extend_from_slice(&buf);
        let m = MessageView::parse(&msg).unwrap();
        let Some(Ok(Submessage::Data(p))) = m.submessages().next() else {
            panic!("not a DATA");
        };
        let got = p.serialized_payload.unwrap();
        prop_assert_eq!(&got[..payload.len()], &payload[..]);
        prop_assert!(got[payload.len()..].iter().all(|b| *b == 0));
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        consume(&bytes);
        let mut with_header = b"RTPS\x02\x03\x01\x0f".to_vec();
        with_header.extend_from_slice(&[0; 12]);
        with_header.extend_from_slice(&bytes);
        consume(&with_header);
    }

    #[test]
    fn mutated_messages_never_panic(
        plans in prop::collection::vec((plan(), endian()), 1..5),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let (mut bytes, _) = message(&Header::new(GuidPrefix([1; 12])), &plans);
        for (i, v) in flips {
            let i = i.index(bytes.len());
            bytes[i] = v;
        }
        consume(&bytes);
    }

    #[test]
    fn sn_set_matches_model(base in valid_sn(), offs in prop::collection::btree_set(0i64..300, 0..40)) {
        let mut s = SequenceNumberSet::empty(base);
        for o in &offs {
            let inserted = s.insert(SequenceNumber(base.0 + o));
            prop_assert_eq!(inserted, *o < 256);
        }
        let model: Vec<_> = offs.iter().filter(|o| **o < 256).map(|o| SequenceNumber(base.0 + o)).collect();
        prop_assert_eq!(s.iter().collect::<Vec<_>>(), model.clone());
        for o in 0..300 {
            prop_assert_eq!(s.contains(SequenceNumber(base.0 + o)), model.contains(&SequenceNumber(base.0 + o)));
        }
        prop_assert!(s.num_bits() <= 256);
    }

    #[test]
    fn fragment_set_matches_model(base in 1u32..1_000_000, offs in prop::collection::btree_set(0u32..300, 0..40)) {
        let mut s = FragmentNumberSet::empty(FragmentNumber(base));
        for o in &offs {
            prop_assert_eq!(s.insert(FragmentNumber(base + o)), *o < 256);
        }
        let model: Vec<_> = offs.iter().filter(|o| **o < 256).map(|o| FragmentNumber(base + o)).collect();
        prop_assert_eq!(s.iter().collect::<Vec<_>>(), model);
    }

    #[test]
    fn time_nanos_round_trip(ns in -2_000_000_000_000_000_000i64..2_000_000_000_000_000_000i64) {
        prop_assert_eq!(Time::from_nanos(ns).to_nanos(), ns);
        prop_assert_eq!(Duration::from_nanos(ns).to_nanos(), ns);
    }

    #[test]
    fn duration_std_round_trip(secs in 0u64..0x7fff_fffe, nanos in 0u32..1_000_000_000) {
        let d = core::time::Duration::new(secs, nanos);
        prop_assert_eq!(Duration::from_std(d).to_std(), Some(d));
    }

    #[test]
    fn fixed_values_round_trip(
        e in endian(),
        l in locator(),
        g in (prefix(), entity()),
        t in time(),
        d in duration(),
        n in any::<u32>(),
        i in any::<i32>(),
        b in any::<bool>(),
        kh in any::<[u8; 16]>(),
        v in any::<[u8; 2]>(),
    ) {
        fn rt<'a, T: ParameterValue<'a> + PartialEq + std::fmt::Debug>(x: T, e: Endianness, buf: &'a mut Vec<u8>) -> Result<(), TestCaseError> {
            buf.resize(x.encoded_len(), 0);
            let n = x.encode(e, buf)?;
            prop_assert_eq!(n, x.encoded_len());
            let buf: &'a [u8] = buf;
            prop_assert_eq!(T::decode(buf, e)?, x);
            Ok(())
        }
        rt(l, e, &mut Vec::new())?;
        rt(Guid::new(g.0, g.1), e, &mut Vec::new())?;
        rt(g.0, e, &mut Vec::new())?;
        rt(g.1, e, &mut Vec::new())?;
        rt(t, e, &mut Vec::new())?;
        rt(d, e, &mut Vec::new())?;
        rt(n, e, &mut Vec::new())?;
        rt(i, e, &mut Vec::new())?;
        rt(b, e, &mut Vec::new())?;
        rt(KeyHash(kh), e, &mut Vec::new())?;
        rt(StatusInfo(n), e, &mut Vec::new())?;
        rt(BuiltinEndpointSet(n), e, &mut Vec::new())?;
        rt(SecurityInfo { attributes: n, plugin_attributes: i as u32 }, e, &mut Vec::new())?;
        rt(ProtocolVersion { major: v[0], minor: v[1] }, e, &mut Vec::new())?;
        rt(VendorId(v), e, &mut Vec::new())?;
        rt(Reliability { kind: if b { ReliabilityKind::Reliable } else { ReliabilityKind::BestEffort }, max_blocking_time: d }, e, &mut Vec::new())?;
        rt(Durability { kind: DurabilityKind::from_u32(n % 4).unwrap() }, e, &mut Vec::new())?;
        rt(History { kind: HistoryKind::from_u32(n % 2).unwrap(), depth: i }, e, &mut Vec::new())?;
        rt(ResourceLimits { max_samples: i, max_instances: n as i32, max_samples_per_instance: i.wrapping_add(1) }, e, &mut Vec::new())?;
        rt(Liveliness { kind: LivelinessKind::from_u32(n % 3).unwrap(), lease_duration: d }, e, &mut Vec::new())?;
        rt(Deadline { period: d }, e, &mut Vec::new())?;
        rt(LatencyBudget { duration: d }, e, &mut Vec::new())?;
        rt(Lifespan { duration: d }, e, &mut Vec::new())?;
        rt(TimeBasedFilter { minimum_separation: d }, e, &mut Vec::new())?;
        rt(Ownership { kind: OwnershipKind::from_u32(n % 2).unwrap() }, e, &mut Vec::new())?;
        rt(OwnershipStrength { value: i }, e, &mut Vec::new())?;
        rt(TransportPriority { value: i }, e, &mut Vec::new())?;
        rt(DestinationOrder { kind: DestinationOrderKind::from_u32(n % 2).unwrap() }, e, &mut Vec::new())?;
        rt(Presentation { access_scope: PresentationAccessScope::from_u32(n % 3).unwrap(), coherent_access: b, ordered_access: !b }, e, &mut Vec::new())?;
        rt(DurabilityService {
            service_cleanup_delay: d,
            history_kind: HistoryKind::from_u32(n % 2).unwrap(),
            history_depth: i,
            max_samples: i,
            max_instances: i,
            max_samples_per_instance: i,
        }, e, &mut Vec::new())?;
    }

    #[test]
    fn sequence_values_round_trip(
        e in endian(),
        names in prop::collection::vec("[a-zA-Z0-9_*é]{0,12}", 0..5),
        reps in prop::collection::vec(any::<i16>(), 0..6),
        octets in prop::collection::vec(any::<u8>(), 0..40),
        s in "[^\u{0}]{0,20}",
    ) {
        let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut buf = vec![0u8; 2048];
        let mut w = ParameterListWriter::new(&mut buf, e);
        w.push(pid::PARTITION, &Partition::from_names(&name_refs)).unwrap();
        w.push(pid::DATA_REPRESENTATION, &DataRepresentation::from_slice(&reps)).unwrap();
        w.push(pid::USER_DATA, &OctetSeq(&octets)).unwrap();
        w.push(pid::TOPIC_NAME, &s.as_str()).unwrap();
        let bytes = w.finish().unwrap();
        let l = ParameterList::new(bytes, e);
        prop_assert_eq!(l.iter().count(), 4);
        for p in l.iter() {
            prop_assert_eq!(p.unwrap().value.len() % 4, 0);
        }
        let p: Partition<'_> = l.get(pid::PARTITION).unwrap().unwrap();
        prop_assert_eq!(p.iter().collect::<Vec<_>>(), name_refs.clone());
        let d: DataRepresentation<'_> = l.get(pid::DATA_REPRESENTATION).unwrap().unwrap();
        prop_assert_eq!(d.iter().collect::<Vec<_>>(), reps);
        let o: OctetSeq<'_> = l.get(pid::USER_DATA).unwrap().unwrap();
        prop_assert_eq!(o.0, &octets[..]);
        let t: &str = l.get(pid::TOPIC_NAME).unwrap().unwrap();
        prop_assert_eq!(t, s.as_str());
        // the list length is reported by the iterator
        let mut it = Parameters::new(bytes, e);
        for _ in it.by_ref() {}
        prop_assert!(it.is_terminated());
        prop_assert_eq!(it.consumed(), bytes.len());
    }
}
