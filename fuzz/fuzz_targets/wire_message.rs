//! Parses arbitrary bytes as an RTPS message: header, every submessage (raw,
//! parsed and interpreted with the receiver state), the inline QoS of every
//! DATA/DATA_FRAG and, when the payload is a PL_CDR parameter list (SPDP,
//! SEDP), every parameter, each decoded as the typed value its PID names.
//!
//! Properties checked on top of "never panics":
//! - `submessages()` and `interpret()` yield the same submessages as parsing
//!   `raw_submessages()` one by one, and stop at the same error; the receiver
//!   state `interpret()` reports matches a model of §8.3.4;
//! - every successfully parsed submessage re-emits (`Encode`) into exactly
//!   `encoded_len()` bytes with the byte order of its E flag, and the result
//!   parses back to an equal value. The crate documents two exceptions:
//!   sequence/fragment-number sets with base 0 are accepted but never emitted
//!   (`Unencodable`), and a body longer than 0xfffc bytes (only reachable
//!   through "octetsToNextHeader 0 = to the end") cannot be re-emitted
//!   (`TooLong`). A body whose length is not a multiple of 4 comes back
//!   zero-padded (PAD length, DATA payload, opaque body);
//! - re-emission is idempotent: emitting the re-parsed value gives the same bytes;
//! - DATA/DATA_FRAG `write_header` + payload + `padding_len` zeros equals `write`;
//! - every decoded parameter value re-encodes and decodes to an equal value.
//! - the engine's codec (`ferrodds_rtps::fuzzing::check_datagram`, what
//!   `Participant::handle_datagram` parses with) accepts the same header, decodes each
//!   submessage on its fast path exactly as on its generic path, stops at the same
//!   submessage, and hands on only slices of the datagram.
#![no_main]

use ferrodds_wire::qos::{
    DataRepresentation, Deadline, DestinationOrder, Durability, DurabilityService, History,
    LatencyBudget, Lifespan, Liveliness, Ownership, OwnershipStrength, Partition, Presentation,
    Reliability, ResourceLimits, TimeBasedFilter, TransportPriority,
};
use ferrodds_wire::*;
use libfuzzer_sys::fuzz_target;

/// Decodes `value` as `$ty`; on success, re-encodes and decodes again.
macro_rules! value_round_trip {
    ($ty:ty, $value:expr, $e:expr) => {{
        let (value, e): (&[u8], Endianness) = ($value, $e);
        if let Ok(v) = <$ty as ParameterValue>::decode(value, e) {
            let len = ParameterValue::encoded_len(&v);
            let mut buf = vec![0u8; len];
            let n = v.encode(e, &mut buf).expect("decoded value re-encodes");
            assert_eq!(n, len);
            let again = <$ty as ParameterValue>::decode(&buf, e).expect("re-encoded value decodes");
            assert_eq!(v, again);
        }
    }};
}

/// The typed value of each PID that has one.
fn check_value(pid: u16, value: &[u8], e: Endianness) {
    match pid {
        pid::PARTICIPANT_LEASE_DURATION => value_round_trip!(Duration, value, e),
        pid::TIME_BASED_FILTER => value_round_trip!(TimeBasedFilter, value, e),
        pid::TOPIC_NAME | pid::TYPE_NAME | pid::ENTITY_NAME | pid::DOMAIN_TAG => {
            value_round_trip!(&str, value, e)
        }
        pid::OWNERSHIP_STRENGTH => value_round_trip!(OwnershipStrength, value, e),
        pid::DOMAIN_ID | pid::BUILTIN_ENDPOINT_QOS => value_round_trip!(u32, value, e),
        pid::PROTOCOL_VERSION => value_round_trip!(ProtocolVersion, value, e),
        pid::VENDORID => value_round_trip!(VendorId, value, e),
        pid::RELIABILITY => value_round_trip!(Reliability, value, e),
        pid::LIVELINESS => value_round_trip!(Liveliness, value, e),
        pid::DURABILITY => value_round_trip!(Durability, value, e),
        pid::DURABILITY_SERVICE => value_round_trip!(DurabilityService, value, e),
        pid::OWNERSHIP => value_round_trip!(Ownership, value, e),
        pid::PRESENTATION => value_round_trip!(Presentation, value, e),
        pid::DEADLINE => value_round_trip!(Deadline, value, e),
        pid::DESTINATION_ORDER => value_round_trip!(DestinationOrder, value, e),
        pid::LATENCY_BUDGET => value_round_trip!(LatencyBudget, value, e),
        pid::PARTITION => value_round_trip!(Partition<'_>, value, e),
        pid::LIFESPAN => value_round_trip!(Lifespan, value, e),
        pid::USER_DATA | pid::GROUP_DATA | pid::TOPIC_DATA => {
            value_round_trip!(OctetSeq<'_>, value, e)
        }
        pid::UNICAST_LOCATOR
        | pid::MULTICAST_LOCATOR
        | pid::DEFAULT_UNICAST_LOCATOR
        | pid::DEFAULT_MULTICAST_LOCATOR
        | pid::METATRAFFIC_UNICAST_LOCATOR
        | pid::METATRAFFIC_MULTICAST_LOCATOR => value_round_trip!(Locator, value, e),
        pid::PARTICIPANT_MANUAL_LIVELINESS_COUNT => value_round_trip!(i32, value, e),
        pid::HISTORY => value_round_trip!(History, value, e),
        pid::RESOURCE_LIMITS => value_round_trip!(ResourceLimits, value, e),
        pid::EXPECTS_INLINE_QOS => value_round_trip!(bool, value, e),
        pid::TRANSPORT_PRIORITY => value_round_trip!(TransportPriority, value, e),
        pid::PARTICIPANT_GUID | pid::ENDPOINT_GUID | pid::DIRECTED_WRITE => {
            value_round_trip!(Guid, value, e)
        }
        pid::GROUP_ENTITYID => value_round_trip!(EntityId, value, e),
        pid::BUILTIN_ENDPOINT_SET => value_round_trip!(BuiltinEndpointSet, value, e),
        pid::PROPERTY_LIST => value_round_trip!(PropertyList<'_>, value, e),
        pid::KEY_HASH => value_round_trip!(KeyHash, value, e),
        pid::STATUS_INFO => value_round_trip!(StatusInfo, value, e),
        pid::DATA_REPRESENTATION => value_round_trip!(DataRepresentation<'_>, value, e),
        pid::ENDPOINT_SECURITY_INFO | pid::PARTICIPANT_SECURITY_INFO => {
            value_round_trip!(SecurityInfo, value, e)
        }
        _ => {}
    }
}

/// Iterates a parameter list and decodes every parameter it knows.
fn check_list(list: ParameterList<'_>) {
    let e = list.endianness();
    let mut ok = true;
    for p in list.iter() {
        match p {
            Ok(p) => check_value(p.pid, p.value, e),
            Err(_) => ok = false,
        }
    }
    assert_eq!(list.check_must_understand(|_| true).is_ok(), ok);
}

/// A set with base 0 (accepted on parse, refused on emit).
fn has_zero_base(s: &Submessage<'_>) -> bool {
    match s {
        Submessage::AckNack(a) => a.reader_sn_state.base().0 == 0,
        Submessage::Gap(g) => g.gap_list.base().0 == 0,
        Submessage::NackFrag(n) => n.fragment_number_state.base().0 == 0,
        _ => false,
    }
}

/// `b` is `a` followed by fewer than 4 zero bytes.
fn zero_padded(a: &[u8], b: &[u8]) -> bool {
    b.len() >= a.len()
        && b.len() - a.len() < 4
        && b.starts_with(a)
        && b[a.len()..].iter().all(|&x| x == 0)
}

/// Equality up to the zero padding re-emission adds to a body whose length
/// was not a multiple of 4.
fn same_up_to_padding(a: &Submessage<'_>, b: &Submessage<'_>) -> bool {
    match (a, b) {
        (Submessage::Pad(x), Submessage::Pad(y)) => {
            pad4(usize::from(x.length)) == usize::from(y.length)
        }
        (Submessage::Data(x), Submessage::Data(y)) => {
            let payloads = match (x.serialized_payload, y.serialized_payload) {
                (Some(p), Some(q)) => zero_padded(p, q),
                (None, None) => true,
                _ => false,
            };
            payloads
                && Data {
                    serialized_payload: x.serialized_payload,
                    ..*y
                } == *x
        }
        (Submessage::Security(x), Submessage::Security(y))
        | (Submessage::Unknown(x), Submessage::Unknown(y)) => {
            zero_padded(x.body, y.body) && Opaque { body: x.body, ..*y } == *x
        }
        _ => a == b,
    }
}

/// Re-emits `sub` (parsed from `raw`) and checks it parses back.
fn round_trip(header: &[u8], raw: &RawSubmessage<'_>, sub: &Submessage<'_>) {
    let e = raw.endianness();
    let len = sub.encoded_len();
    let mut out = vec![0u8; len];
    match sub.write(e, &mut out) {
        Ok(n) => assert_eq!(n, len, "write returned {n}, encoded_len {len}"),
        Err(WireError::TooLong { .. }) if raw.body.len() > 0xfffc => return,
        Err(WireError::Unencodable { .. }) if has_zero_base(sub) => return,
        Err(err) => panic!("re-emitting {sub:?} failed: {err}"),
    }
    // Too small a buffer is an error, never a panic or a partial success.
    if len > 0 {
        let mut short = vec![0u8; len - 1];
        assert!(matches!(
            sub.write(e, &mut short),
            Err(WireError::BufferTooSmall { .. })
        ));
    }
    // Scatter-gather form of DATA / DATA_FRAG.
    let split = match sub {
        Submessage::Data(d) => {
            let mut h = vec![0u8; d.header_len()];
            let n = d.write_header(e, &mut h).expect("write_header");
            Some((h, n, d.serialized_payload.unwrap_or(&[]), d.padding_len()))
        }
        Submessage::DataFrag(d) => {
            let mut h = vec![0u8; d.header_len()];
            let n = d.write_header(e, &mut h).expect("write_header");
            Some((h, n, d.serialized_payload, d.padding_len()))
        }
        _ => None,
    };
    if let Some((h, n, payload, pad)) = split {
        assert_eq!(n, h.len());
        assert_eq!(n + payload.len() + pad, len);
        assert_eq!(&out[..n], &h[..]);
        assert_eq!(&out[n..n + payload.len()], payload);
        assert!(out[n + payload.len()..].iter().all(|&b| b == 0));
    }

    // Parse the re-emitted submessage inside a message with the same header.
    let mut msg = header.to_vec();
    msg.extend_from_slice(&out);
    let view = MessageView::parse(&msg).expect("header parsed before");
    let mut subs = view.submessages();
    let again = subs
        .next()
        .expect("one submessage")
        .unwrap_or_else(|err| panic!("re-emitted {sub:?} does not parse: {err}\n{out:02x?}"));
    assert!(subs.next().is_none(), "re-emission is one submessage");
    if raw.body.len().is_multiple_of(4) {
        assert_eq!(*sub, again, "round trip changed the submessage");
    } else {
        assert!(
            same_up_to_padding(sub, &again),
            "round trip changed the submessage beyond padding:\n{sub:?}\n{again:?}"
        );
    }
    // Idempotence.
    let mut out2 = vec![0u8; again.encoded_len()];
    again.write(e, &mut out2).expect("second emission");
    assert_eq!(out, out2, "re-emission is not idempotent");
}

fuzz_target!(|data: &[u8]| {
    // The engine's view of the same datagram agrees with the wire crate's.
    if let Err(e) = ferrodds_rtps::fuzzing::check_datagram(data) {
        panic!("engine codec: {e}");
    }
    let Ok(view) = MessageView::parse(data) else {
        return;
    };
    // The header re-emits and parses back.
    let mut h = [0u8; Header::SIZE];
    view.header().write(&mut h).expect("header write");
    assert_eq!(Header::parse(&h).as_ref(), Ok(view.header()));
    let header = &data[..Header::SIZE];

    // Receiver state model (DDSI-RTPS 2.5 §8.3.4, §8.3.7): what
    // `interpret` must report for each submessage.
    let own = GuidPrefix([0x5a; 12]);
    let h = view.header();
    let mut state = ReceiverState {
        source_version: h.version,
        source_vendor_id: h.vendor_id,
        source_guid_prefix: h.guid_prefix,
        dest_guid_prefix: own,
        timestamp: None,
        reply_to: ReplyTo::Source,
    };

    let mut parsed = view.submessages();
    let mut interpreted = view.interpret(own);
    let mut raws = view.raw_submessages();
    loop {
        let raw = raws.next();
        let a = parsed.next();
        let b = interpreted.next();
        let Some(raw) = raw else {
            assert!(a.is_none() && b.is_none(), "iterators disagree on the end");
            break;
        };
        let raw = match raw {
            Ok(raw) => raw,
            Err(err) => {
                assert_eq!(a, Some(Err(err)));
                assert_eq!(b.map(|r| r.map(|(_, s)| s)), Some(Err(err)));
                break;
            }
        };
        assert!(raw.offset + raw.bytes.len() <= data.len());
        let sub = raw.parse();
        assert_eq!(a, Some(sub));
        let Ok(sub) = sub else {
            assert_eq!(b.map(|r| r.map(|(_, s)| s)), Some(sub));
            break;
        };
        match sub {
            Submessage::InfoSrc(i) => {
                state.source_version = i.version;
                state.source_vendor_id = i.vendor_id;
                state.source_guid_prefix = i.guid_prefix;
                state.timestamp = None;
                state.reply_to = ReplyTo::Source;
            }
            Submessage::InfoDst(i) if i.guid_prefix == GuidPrefix::UNKNOWN => {
                state.dest_guid_prefix = own;
            }
            Submessage::InfoDst(i) => state.dest_guid_prefix = i.guid_prefix,
            Submessage::InfoTs(i) => state.timestamp = i.timestamp,
            Submessage::InfoReply(r) => state.reply_to = ReplyTo::Locators(r),
            Submessage::InfoReplyIp4(r) => state.reply_to = ReplyTo::Ipv4(r),
            _ => {}
        }
        assert_eq!(
            b,
            Some(Ok((state, sub))),
            "interpret disagrees with the model"
        );
        assert_eq!(
            state.is_for(own),
            state.dest_guid_prefix == own || state.dest_guid_prefix == GuidPrefix::UNKNOWN
        );
        match &sub {
            Submessage::Data(d) => {
                if let Some(q) = d.inline_qos {
                    check_list(q);
                }
                if let Some(pl) = d
                    .serialized_payload
                    .and_then(|p| ParameterList::from_serialized_payload(p).ok())
                {
                    check_list(pl);
                }
            }
            Submessage::DataFrag(d) => {
                if let Some(q) = d.inline_qos {
                    check_list(q);
                }
            }
            _ => {}
        }
        round_trip(header, &raw, &sub);
    }
});
