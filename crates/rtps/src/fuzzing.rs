//! Checks of the engine's private parsers of network input, for the fuzz targets in `fuzz/`
//! (`discovery_data`, `wire_message`). Not part of the API: hidden from the documentation,
//! no stability promise. Each function returns a description of the first property it finds
//! broken; none panics.

use std::time::Duration;

use ferrodds_wire::submessage::Submessage;
use ferrodds_wire::MessageView;

use crate::codec::{self, Sub};
use crate::discovery::{self, EndpointData, SpdpData};

/// `b` is `a`, or one nanosecond less: a duration encoded (fraction rounded down) and decoded
/// (rounded down again) may lose that much.
fn within_a_nanosecond(a: Duration, b: Duration) -> bool {
    b <= a && a - b <= Duration::from_nanos(1)
}

/// Decodes `payload` (a serialized SPDP or SEDP payload from the network) as discovered
/// participant data, as discovered writer and reader data, and as a key-only payload's GUID.
///
/// Each value decoded is encoded as this participant announces its own and decoded again;
/// that must succeed and give the same value, up to what the encoding does not carry (the
/// protocol version, the domain tag, a shared writer's ownership strength) and durations
/// one nanosecond shorter.
pub fn check_discovery_payload(payload: &[u8]) -> Result<(), String> {
    let _ = discovery::key_guid(payload);
    if let Some(d) = SpdpData::decode(payload) {
        let bytes = d.encode();
        let Some(mut again) = SpdpData::decode(&bytes) else {
            return Err(format!(
                "{d:?} encodes to {bytes:02x?}, which does not decode"
            ));
        };
        if !within_a_nanosecond(d.lease_duration, again.lease_duration) {
            return Err(format!(
                "lease {:?} came back as {again:?}",
                d.lease_duration
            ));
        }
        again.lease_duration = d.lease_duration;
        again.protocol_major = d.protocol_major;
        again.domain_tag_empty = d.domain_tag_empty;
        // Big-endian security tokens are not re-encoded in our little-endian list.
        let mut d = d;
        if let Some(s) = d.security.as_mut().filter(|s| s.big_endian) {
            s.identity_token = None;
            s.permissions_token = None;
            s.big_endian = false;
            if s.security_info.is_none() {
                d.security = None;
            }
        }
        if again != d {
            return Err(format!("participant data {d:?} came back as {again:?}"));
        }
    }
    for writer in [true, false] {
        let Some(d) = EndpointData::decode(payload, writer) else {
            continue;
        };
        let bytes = d.encode(d.guid.prefix);
        let Some(mut again) = EndpointData::decode(&bytes, writer) else {
            return Err(format!(
                "{d:?} encodes to {bytes:02x?}, which does not decode"
            ));
        };
        let (q, a) = (&d.qos, &mut again.qos);
        for (want, got) in [
            (
                q.reliability.max_blocking_time,
                &mut a.reliability.max_blocking_time,
            ),
            (
                q.liveliness.lease_duration,
                &mut a.liveliness.lease_duration,
            ),
            (q.deadline.period, &mut a.deadline.period),
        ] {
            if !within_a_nanosecond(want, *got) {
                return Err(format!("duration {want:?} came back as {got:?} in {d:?}"));
            }
            *got = want;
        }
        if q.ownership == crate::Ownership::Shared {
            a.ownership_strength = q.ownership_strength;
        }
        if again != d {
            return Err(format!("endpoint data {d:?} came back as {again:?}"));
        }
    }
    Ok(())
}

/// Parses `datagram` with the engine's codec (what [`crate::Participant::handle_datagram`]
/// sees) and checks it against the wire crate: the header is accepted by both or neither,
/// every submessage the codec decodes on its fast path (DATA, HEARTBEAT, ACKNACK, INFO_TS,
/// INFO_DST) equals what the generic path (`Submessage::parse`, then conversion) gives, both
/// stop at the same submessage, the slices it hands on lie inside the datagram, and the
/// inline QoS of DATA and DATA_FRAG is read. Returns the number of submessages decoded.
pub fn check_datagram(datagram: &[u8]) -> Result<usize, String> {
    let (subs, view) = match (codec::parse(datagram), MessageView::parse(datagram)) {
        (Ok((_, subs)), Ok(view)) => (subs, view),
        (Err(_), Err(_)) => return Ok(0),
        (a, b) => {
            return Err(format!(
                "header: the codec says {:?}, the wire crate {:?}",
                a.map(|(h, _)| h),
                b.map(|v| *v.header())
            ))
        }
    };
    let range = datagram.as_ptr_range();
    let within = |s: &[u8]| {
        s.is_empty()
            || range.contains(&s.as_ptr()) && s.len() <= range.end as usize - s.as_ptr() as usize
    };
    let mut raws = view.raw_submessages();
    let mut n = 0;
    for sub in subs {
        let generic = match raws.next() {
            // (A DATA_FRAG's `full` reaches the end of its body, as the codec gives it.)
            // (DATA_REF is FerroDDS's vendor submessage: laid out as a DATA, which the wire
            // crate does not know under that id.)
            Some(Ok(raw)) if raw.header.id == codec::DATA_REF => {
                codec::data_ref_sub(raw.header, raw.body, raw.offset)
            }
            Some(Ok(raw)) => raw.parse().ok().and_then(|s| match s {
                Submessage::DataFrag(f) => codec::data_frag_sub(f, raw.body),
                s => codec::convert(s),
            }),
            _ => None,
        };
        let sub = match sub {
            Ok(sub) => sub,
            Err(_) if generic.is_none() => return Ok(n),
            Err(e) => {
                return Err(format!(
                    "submessage {n}: the codec says {e:?}, the generic path {generic:?}"
                ))
            }
        };
        if generic.as_ref() != Some(&sub) {
            return Err(format!(
                "submessage {n}: the codec gives {sub:?}, the generic path {generic:?}"
            ));
        }
        let (inline_qos, data, le) = match &sub {
            Sub::Data(d) | Sub::DataRef(d) => {
                (d.inline_qos, d.payload.unwrap_or(&[]), d.little_endian)
            }
            Sub::DataFrag(f) => (f.inline_qos, f.data, f.little_endian),
            _ => (None, &[][..], true),
        };
        if !inline_qos.is_none_or(within) || !within(data) {
            return Err(format!(
                "submessage {n}: slices outside the datagram: {sub:?}"
            ));
        }
        if let Some(q) = inline_qos {
            let _ = codec::parse_inline_qos(q, le);
        }
        n += 1;
    }
    if let Some(rest) = raws.next() {
        return Err(format!(
            "the codec stopped before the wire crate's {rest:?}"
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::{DataRepresentation, Durability, EndpointQos, History, Partition};
    use crate::{EntityId, Guid, GuidPrefix, Locator};

    fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
        let dir = format!(
            "{}/../../fuzz/corpus-seeds/{target}",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut v: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .map(|e| {
                let p = e.unwrap().path();
                (p.display().to_string(), std::fs::read(&p).unwrap())
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn our_own_announcements_pass() {
        let d = SpdpData {
            guid_prefix: GuidPrefix([7; 12]),
            vendor: [1, 0xfd],
            protocol_major: 2,
            domain_id: Some(3),
            domain_tag_empty: true,
            builtin_endpoints: 0x3f,
            metatraffic_unicast: vec![Locator::udpv4([127, 0, 0, 1].into(), 7410)],
            metatraffic_multicast: vec![Locator::udpv4([239, 255, 0, 1].into(), 7400)],
            default_unicast: vec![Locator::udpv4([127, 0, 0, 1].into(), 7411)],
            default_multicast: vec![],
            lease_duration: Duration::new(20, 100_000_000),
            entity_name: Some("p1".into()),
            incarnation: Some(0x0123_4567_89ab_cdef),
            data_refs: true,
            security: None,
        };
        check_discovery_payload(&d.encode()).unwrap();
        let mut qos = EndpointQos::spec_default(true);
        qos.durability = Durability::TransientLocal;
        qos.history = History::KeepLast(7);
        qos.ownership = crate::Ownership::Exclusive;
        qos.ownership_strength = 9;
        qos.partition = Partition(vec!["a".into(), "b*".into()]);
        qos.data_representation = DataRepresentation(vec![0, 2]);
        qos.deadline.period = Duration::from_millis(1500);
        qos.liveliness.lease_duration = Duration::new(3, 333_333_333);
        let e = EndpointData {
            guid: Guid::new(GuidPrefix([7; 12]), EntityId([0, 0, 1, 2])),
            topic_name: "Square".into(),
            type_name: "ShapeType".into(),
            qos,
            unicast: vec![Locator::udpv4([127, 0, 0, 1].into(), 9000)],
            multicast: vec![],
        };
        check_discovery_payload(&e.encode(GuidPrefix([7; 12]))).unwrap();
    }

    #[test]
    fn durations_may_lose_one_nanosecond_at_most() {
        let d = Duration::new(1, 5);
        assert!(within_a_nanosecond(d, d));
        assert!(within_a_nanosecond(d, Duration::new(1, 4)));
        assert!(!within_a_nanosecond(d, Duration::new(1, 3)));
        assert!(!within_a_nanosecond(d, Duration::new(1, 6)));
    }

    /// The committed seeds of `discovery_data` are real announcements (Cyclone DDS's and
    /// ours): participants, writers and readers all decode, and pass.
    #[test]
    fn the_discovery_seeds_decode_and_pass() {
        let (mut participants, mut writers, mut readers) = (0, 0, 0);
        for (name, bytes) in seeds("discovery_data") {
            check_discovery_payload(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            participants += usize::from(SpdpData::decode(&bytes).is_some());
            writers += usize::from(EndpointData::decode(&bytes, true).is_some());
            readers += usize::from(EndpointData::decode(&bytes, false).is_some());
        }
        assert!(
            participants >= 2 && writers >= 2 && readers >= 2,
            "{participants} {writers} {readers}"
        );
    }

    /// The engine's codec agrees with the wire crate on every `wire_message` seed (real
    /// Cyclone DDS traffic and ours), on their truncations and on a flipped byte.
    #[test]
    fn the_codec_agrees_with_the_wire_crate_on_the_seeds() {
        let mut decoded = 0;
        for (name, bytes) in seeds("wire_message") {
            decoded += check_datagram(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            for cut in (0..bytes.len()).step_by(7) {
                check_datagram(&bytes[..cut]).unwrap_or_else(|e| panic!("{name}[..{cut}]: {e}"));
            }
            let mut flipped = bytes.clone();
            for i in (20..flipped.len()).step_by(13) {
                flipped[i] ^= 0xa5;
                check_datagram(&flipped).unwrap_or_else(|e| panic!("{name} ^{i}: {e}"));
            }
        }
        assert!(decoded > 200, "{decoded} submessages");
    }
}
