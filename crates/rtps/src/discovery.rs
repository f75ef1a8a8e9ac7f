//! SPDP and SEDP builtin-topic data: PL_CDR_LE encoding and PL_CDR_LE/BE
//! decoding with default filling per endpoint kind (DDSI-RTPS 2.5 §9.6.2).

use core::time::Duration;

use crate::codec::{Params, Rd, PID_KEY_HASH, PID_SENTINEL};
use crate::qos::{
    DataRepresentation, Deadline, Durability, EndpointQos, History, Liveliness, LivelinessKind,
    Ownership, Partition, Reliability, ReliabilityKind, DURATION_INFINITE,
};
use crate::{EntityId, Guid, GuidPrefix, Locator};

pub(crate) const PID_PARTICIPANT_LEASE_DURATION: u16 = 0x0002;
pub(crate) const PID_TOPIC_NAME: u16 = 0x0005;
pub(crate) const PID_OWNERSHIP_STRENGTH: u16 = 0x0006;
pub(crate) const PID_TYPE_NAME: u16 = 0x0007;
pub(crate) const PID_DOMAIN_ID: u16 = 0x000f;
pub(crate) const PID_PROTOCOL_VERSION: u16 = 0x0015;
pub(crate) const PID_VENDORID: u16 = 0x0016;
pub(crate) const PID_RELIABILITY: u16 = 0x001a;
pub(crate) const PID_LIVELINESS: u16 = 0x001b;
pub(crate) const PID_DURABILITY: u16 = 0x001d;
pub(crate) const PID_OWNERSHIP: u16 = 0x001f;
pub(crate) const PID_DEADLINE: u16 = 0x0023;
pub(crate) const PID_PARTITION: u16 = 0x0029;
pub(crate) const PID_UNICAST_LOCATOR: u16 = 0x002f;
pub(crate) const PID_MULTICAST_LOCATOR: u16 = 0x0030;
pub(crate) const PID_DEFAULT_UNICAST_LOCATOR: u16 = 0x0031;
pub(crate) const PID_METATRAFFIC_UNICAST_LOCATOR: u16 = 0x0032;
pub(crate) const PID_METATRAFFIC_MULTICAST_LOCATOR: u16 = 0x0033;
pub(crate) const PID_HISTORY: u16 = 0x0040;
pub(crate) const PID_DEFAULT_MULTICAST_LOCATOR: u16 = 0x0048;
pub(crate) const PID_PARTICIPANT_GUID: u16 = 0x0050;
pub(crate) const PID_BUILTIN_ENDPOINT_SET: u16 = 0x0058;
pub(crate) const PID_ENDPOINT_GUID: u16 = 0x005a;
pub(crate) const PID_ENTITY_NAME: u16 = 0x0062;
pub(crate) const PID_DATA_REPRESENTATION: u16 = 0x0073;
pub(crate) const PID_DOMAIN_TAG: u16 = 0x4014;

/// Builtin endpoint set bits we use.
pub(crate) mod bes {
    pub(crate) const PARTICIPANT_ANNOUNCER: u32 = 1 << 0;
    pub(crate) const PARTICIPANT_DETECTOR: u32 = 1 << 1;
    pub(crate) const PUBLICATIONS_ANNOUNCER: u32 = 1 << 2;
    pub(crate) const PUBLICATIONS_DETECTOR: u32 = 1 << 3;
    pub(crate) const SUBSCRIPTIONS_ANNOUNCER: u32 = 1 << 4;
    pub(crate) const SUBSCRIPTIONS_DETECTOR: u32 = 1 << 5;
}

pub(crate) const SPDP_WRITER: EntityId = EntityId([0, 0x01, 0x00, 0xc2]);
pub(crate) const SPDP_READER: EntityId = EntityId([0, 0x01, 0x00, 0xc7]);
pub(crate) const SEDP_PUB_WRITER: EntityId = EntityId([0, 0, 0x03, 0xc2]);
pub(crate) const SEDP_PUB_READER: EntityId = EntityId([0, 0, 0x03, 0xc7]);
pub(crate) const SEDP_SUB_WRITER: EntityId = EntityId([0, 0, 0x04, 0xc2]);
pub(crate) const SEDP_SUB_READER: EntityId = EntityId([0, 0, 0x04, 0xc7]);

/// Most locators of one kind we keep from a discovery sample.
const MAX_LOCATORS: usize = 16;
/// Most partition names we keep.
const MAX_PARTITIONS: usize = 64;
/// Longest topic or type name accepted (longer ones drop the sample).
const MAX_NAME_LEN: usize = 1024;

const PL_CDR_LE: [u8; 4] = [0x00, 0x03, 0x00, 0x00];

/// SPDPdiscoveredParticipantData (the subset we use).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SpdpData {
    pub(crate) guid_prefix: GuidPrefix,
    pub(crate) vendor: [u8; 2],
    pub(crate) protocol_major: u8,
    pub(crate) domain_id: Option<u32>,
    pub(crate) domain_tag_empty: bool,
    pub(crate) builtin_endpoints: u32,
    pub(crate) metatraffic_unicast: Vec<Locator>,
    pub(crate) metatraffic_multicast: Vec<Locator>,
    pub(crate) default_unicast: Vec<Locator>,
    pub(crate) default_multicast: Vec<Locator>,
    pub(crate) lease_duration: Duration,
    pub(crate) entity_name: Option<String>,
}

/// DiscoveredWriterData / DiscoveredReaderData (the subset we use).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EndpointData {
    pub(crate) guid: Guid,
    pub(crate) topic_name: String,
    pub(crate) type_name: String,
    pub(crate) qos: EndpointQos,
    pub(crate) unicast: Vec<Locator>,
    pub(crate) multicast: Vec<Locator>,
}

/// Appends parameters to a PL_CDR_LE payload.
struct PlWriter {
    buf: Vec<u8>,
}

impl PlWriter {
    fn new() -> Self {
        Self {
            buf: PL_CDR_LE.to_vec(),
        }
    }
    fn param(&mut self, pid: u16, value: &[u8]) {
        let padded = value.len().div_ceil(4) * 4;
        self.buf.extend_from_slice(&pid.to_le_bytes());
        self.buf
            .extend_from_slice(&u16::try_from(padded).unwrap_or(u16::MAX).to_le_bytes());
        self.buf.extend_from_slice(value);
        self.buf.resize(self.buf.len() + padded - value.len(), 0);
    }
    fn u32(&mut self, pid: u16, v: u32) {
        self.param(pid, &v.to_le_bytes());
    }
    fn string(&mut self, pid: u16, s: &str) {
        let mut v = Vec::with_capacity(s.len() + 5);
        put_string(&mut v, s);
        self.param(pid, &v);
    }
    fn locator(&mut self, pid: u16, l: &Locator) {
        let mut v = [0u8; 24];
        v[..4].copy_from_slice(&l.kind.to_le_bytes());
        v[4..8].copy_from_slice(&l.port.to_le_bytes());
        v[8..].copy_from_slice(&l.address);
        self.param(pid, &v);
    }
    fn finish(mut self) -> Vec<u8> {
        self.buf.extend_from_slice(&PID_SENTINEL.to_le_bytes());
        self.buf.extend_from_slice(&0u16.to_le_bytes());
        self.buf
    }
}

fn put_string(v: &mut Vec<u8>, s: &str) {
    let len = u32::try_from(s.len() + 1).unwrap_or(u32::MAX);
    v.extend_from_slice(&len.to_le_bytes());
    v.extend_from_slice(s.as_bytes());
    v.push(0);
}

fn duration_bytes(d: Duration) -> [u8; 8] {
    let mut b = [0u8; 8];
    let (s, f) = if d >= Duration::from_secs(0x7fff_ffff) {
        (0x7fff_ffffi32, 0xffff_ffffu32)
    } else {
        let frac = ((u64::from(d.subsec_nanos()) << 32) / 1_000_000_000) as u32;
        (d.as_secs() as i32, frac)
    };
    b[..4].copy_from_slice(&s.to_le_bytes());
    b[4..].copy_from_slice(&f.to_le_bytes());
    b
}

fn read_duration(r: &mut Rd<'_>) -> Option<Duration> {
    let s = r.i32()?;
    let f = r.u32()?;
    if s == 0x7fff_ffff {
        return Some(DURATION_INFINITE);
    }
    if s < 0 {
        return Some(Duration::ZERO);
    }
    let nanos = ((u64::from(f) * 1_000_000_000) >> 32) as u32;
    Some(Duration::new(s as u64, nanos))
}

fn read_string(r: &mut Rd<'_>) -> Option<String> {
    let len = r.u32()? as usize;
    let bytes = r.take(len)?;
    let (last, body) = bytes.split_last()?;
    if *last != 0 {
        return None;
    }
    core::str::from_utf8(body).ok().map(str::to_owned)
}

fn read_name(r: &mut Rd<'_>) -> Option<String> {
    read_string(r).filter(|s| s.len() <= MAX_NAME_LEN)
}

fn read_locator(v: &[u8], le: bool) -> Option<Locator> {
    let mut r = Rd::new(v, le);
    let kind = r.i32()?;
    let port = r.u32()?;
    let address = r.arr::<16>()?;
    Some(Locator {
        kind,
        port,
        address,
    })
}

fn push_locator(list: &mut Vec<Locator>, v: &[u8], le: bool) {
    if let Some(l) = read_locator(v, le) {
        // Only UDPv4/UDPv6 are usable; unknown kinds are ignored silently.
        if (l.kind == 1 || l.kind == 2) && list.len() < MAX_LOCATORS && !list.contains(&l) {
            list.push(l);
        }
    }
}

/// Splits a serialized payload into its parameter list and byte order.
fn pl_body(payload: &[u8]) -> Option<(&[u8], bool)> {
    let hdr = payload.get(..4)?;
    let le = match [hdr[0], hdr[1]] {
        [0x00, 0x03] => true,
        [0x00, 0x02] => false,
        _ => return None,
    };
    Some((&payload[4..], le))
}

fn must_understand(pid: u16) -> bool {
    pid & 0x4000 != 0 && pid & 0x8000 == 0
}

impl SpdpData {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = PlWriter::new();
        w.param(PID_PROTOCOL_VERSION, &[2, 5]);
        w.param(PID_VENDORID, &self.vendor);
        if let Some(d) = self.domain_id {
            w.u32(PID_DOMAIN_ID, d);
        }
        let guid = Guid::new(self.guid_prefix, EntityId::PARTICIPANT);
        w.param(PID_PARTICIPANT_GUID, &guid.to_bytes());
        w.u32(PID_BUILTIN_ENDPOINT_SET, self.builtin_endpoints);
        for l in &self.metatraffic_unicast {
            w.locator(PID_METATRAFFIC_UNICAST_LOCATOR, l);
        }
        for l in &self.metatraffic_multicast {
            w.locator(PID_METATRAFFIC_MULTICAST_LOCATOR, l);
        }
        for l in &self.default_unicast {
            w.locator(PID_DEFAULT_UNICAST_LOCATOR, l);
        }
        for l in &self.default_multicast {
            w.locator(PID_DEFAULT_MULTICAST_LOCATOR, l);
        }
        w.param(
            PID_PARTICIPANT_LEASE_DURATION,
            &duration_bytes(self.lease_duration),
        );
        if let Some(n) = &self.entity_name {
            w.string(PID_ENTITY_NAME, n);
        }
        w.finish()
    }

    /// Decodes a PL_CDR payload; `None` if malformed or lacking a GUID.
    pub(crate) fn decode(payload: &[u8]) -> Option<Self> {
        let (body, le) = pl_body(payload)?;
        let mut d = SpdpData {
            guid_prefix: GuidPrefix([0; 12]),
            vendor: [0, 0],
            protocol_major: 2,
            domain_id: None,
            domain_tag_empty: true,
            builtin_endpoints: 0,
            metatraffic_unicast: Vec::new(),
            metatraffic_multicast: Vec::new(),
            default_unicast: Vec::new(),
            default_multicast: Vec::new(),
            lease_duration: Duration::from_secs(100),
            entity_name: None,
        };
        let mut have_guid = false;
        for p in Params::new(body, le) {
            let (pid, v) = p.ok()?;
            let mut r = Rd::new(v, le);
            match pid {
                PID_PROTOCOL_VERSION => d.protocol_major = *v.first()?,
                PID_VENDORID => d.vendor = r.arr::<2>()?,
                PID_DOMAIN_ID => d.domain_id = Some(r.u32()?),
                PID_DOMAIN_TAG => d.domain_tag_empty = read_string(&mut r)?.is_empty(),
                PID_PARTICIPANT_GUID => {
                    d.guid_prefix = Guid::from_bytes(r.arr::<16>()?).prefix;
                    have_guid = true;
                }
                PID_BUILTIN_ENDPOINT_SET => d.builtin_endpoints = r.u32()?,
                PID_METATRAFFIC_UNICAST_LOCATOR => push_locator(&mut d.metatraffic_unicast, v, le),
                PID_METATRAFFIC_MULTICAST_LOCATOR => {
                    push_locator(&mut d.metatraffic_multicast, v, le)
                }
                PID_DEFAULT_UNICAST_LOCATOR => push_locator(&mut d.default_unicast, v, le),
                PID_DEFAULT_MULTICAST_LOCATOR => push_locator(&mut d.default_multicast, v, le),
                PID_PARTICIPANT_LEASE_DURATION => d.lease_duration = read_duration(&mut r)?,
                PID_ENTITY_NAME => d.entity_name = read_string(&mut r),
                other if must_understand(other) => return None,
                _ => {}
            }
        }
        have_guid.then_some(d)
    }
}

impl EndpointData {
    pub(crate) fn encode(&self, participant: GuidPrefix) -> Vec<u8> {
        let mut w = PlWriter::new();
        w.param(PID_ENDPOINT_GUID, &self.guid.to_bytes());
        w.param(
            PID_PARTICIPANT_GUID,
            &Guid::new(participant, EntityId::PARTICIPANT).to_bytes(),
        );
        w.string(PID_TOPIC_NAME, &self.topic_name);
        w.string(PID_TYPE_NAME, &self.type_name);
        let q = &self.qos;
        let mut rel = [0u8; 12];
        let kind: u32 = match q.reliability.kind {
            ReliabilityKind::BestEffort => 1,
            ReliabilityKind::Reliable => 2,
        };
        rel[..4].copy_from_slice(&kind.to_le_bytes());
        rel[4..].copy_from_slice(&duration_bytes(q.reliability.max_blocking_time));
        w.param(PID_RELIABILITY, &rel);
        w.u32(
            PID_DURABILITY,
            match q.durability {
                Durability::Volatile => 0,
                Durability::TransientLocal => 1,
            },
        );
        let mut hist = [0u8; 8];
        let (hk, depth): (u32, i32) = match q.history {
            History::KeepLast(n) => (0, i32::try_from(n).unwrap_or(i32::MAX)),
            History::KeepAll => (1, -1),
        };
        hist[..4].copy_from_slice(&hk.to_le_bytes());
        hist[4..].copy_from_slice(&depth.to_le_bytes());
        w.param(PID_HISTORY, &hist);
        w.u32(
            PID_OWNERSHIP,
            match q.ownership {
                Ownership::Shared => 0,
                Ownership::Exclusive => 1,
            },
        );
        if q.ownership == Ownership::Exclusive {
            w.u32(PID_OWNERSHIP_STRENGTH, q.ownership_strength as u32);
        }
        let mut live = [0u8; 12];
        let lk: u32 = match q.liveliness.kind {
            LivelinessKind::Automatic => 0,
            LivelinessKind::ManualByParticipant => 1,
            LivelinessKind::ManualByTopic => 2,
        };
        live[..4].copy_from_slice(&lk.to_le_bytes());
        live[4..].copy_from_slice(&duration_bytes(q.liveliness.lease_duration));
        w.param(PID_LIVELINESS, &live);
        w.param(PID_DEADLINE, &duration_bytes(q.deadline.period));
        if !q.partition.0.is_empty() {
            let mut v = Vec::new();
            v.extend_from_slice(&(q.partition.0.len() as u32).to_le_bytes());
            for name in &q.partition.0 {
                while v.len() % 4 != 0 {
                    v.push(0);
                }
                put_string(&mut v, name);
            }
            w.param(PID_PARTITION, &v);
        }
        if !q.data_representation.0.is_empty() {
            let mut v = Vec::new();
            v.extend_from_slice(&(q.data_representation.0.len() as u32).to_le_bytes());
            for id in &q.data_representation.0 {
                v.extend_from_slice(&id.to_le_bytes());
            }
            w.param(PID_DATA_REPRESENTATION, &v);
        }
        for l in &self.unicast {
            w.locator(PID_UNICAST_LOCATOR, l);
        }
        for l in &self.multicast {
            w.locator(PID_MULTICAST_LOCATOR, l);
        }
        w.finish()
    }

    /// Decodes a DiscoveredWriterData (`writer`) or DiscoveredReaderData;
    /// absent QoS takes the spec default for that endpoint kind.
    pub(crate) fn decode(payload: &[u8], writer: bool) -> Option<Self> {
        let (body, le) = pl_body(payload)?;
        let mut guid = None;
        let mut topic_name = None;
        let mut type_name = None;
        let mut qos = EndpointQos::spec_default(writer);
        let mut unicast = Vec::new();
        let mut multicast = Vec::new();
        for p in Params::new(body, le) {
            let (pid, v) = p.ok()?;
            let mut r = Rd::new(v, le);
            match pid {
                PID_ENDPOINT_GUID => guid = Some(Guid::from_bytes(r.arr::<16>()?)),
                PID_TOPIC_NAME => topic_name = Some(read_name(&mut r)?),
                PID_TYPE_NAME => type_name = Some(read_name(&mut r)?),
                PID_RELIABILITY => {
                    let kind = match r.u32()? {
                        1 => ReliabilityKind::BestEffort,
                        2 => ReliabilityKind::Reliable,
                        _ => return None,
                    };
                    let max_blocking_time = read_duration(&mut r).unwrap_or(Duration::ZERO);
                    qos.reliability = Reliability {
                        kind,
                        max_blocking_time,
                    };
                }
                PID_DURABILITY => {
                    qos.durability = match r.u32()? {
                        0 => Durability::Volatile,
                        // TRANSIENT and PERSISTENT offer at least TRANSIENT_LOCAL.
                        1..=3 => Durability::TransientLocal,
                        _ => return None,
                    }
                }
                PID_HISTORY => {
                    let kind = r.u32()?;
                    let depth = r.i32().unwrap_or(1);
                    qos.history = match kind {
                        0 => History::KeepLast(u32::try_from(depth).unwrap_or(1).max(1)),
                        1 => History::KeepAll,
                        _ => return None,
                    };
                }
                PID_OWNERSHIP => {
                    qos.ownership = match r.u32()? {
                        0 => Ownership::Shared,
                        1 => Ownership::Exclusive,
                        _ => return None,
                    }
                }
                PID_OWNERSHIP_STRENGTH => qos.ownership_strength = r.i32()?,
                PID_LIVELINESS => {
                    let kind = match r.u32()? {
                        0 => LivelinessKind::Automatic,
                        1 => LivelinessKind::ManualByParticipant,
                        2 => LivelinessKind::ManualByTopic,
                        _ => return None,
                    };
                    let lease_duration = read_duration(&mut r)?;
                    qos.liveliness = Liveliness {
                        kind,
                        lease_duration,
                    };
                }
                PID_DEADLINE => {
                    qos.deadline = Deadline {
                        period: read_duration(&mut r)?,
                    }
                }
                PID_PARTITION => {
                    let n = r.u32()? as usize;
                    let mut names = Vec::new();
                    for _ in 0..n {
                        r.align(4)?;
                        let s = read_string(&mut r)?;
                        if names.len() < MAX_PARTITIONS {
                            names.push(s);
                        }
                    }
                    qos.partition = Partition(names);
                }
                PID_DATA_REPRESENTATION => {
                    let n = r.u32()? as usize;
                    let mut ids = Vec::new();
                    for _ in 0..n {
                        let id = r.u16()? as i16;
                        if ids.len() < 16 {
                            ids.push(id);
                        }
                    }
                    qos.data_representation = DataRepresentation(ids);
                }
                PID_UNICAST_LOCATOR => push_locator(&mut unicast, v, le),
                PID_MULTICAST_LOCATOR => push_locator(&mut multicast, v, le),
                PID_KEY_HASH if guid.is_none() => {
                    guid = Some(Guid::from_bytes(r.arr::<16>()?));
                }
                other if must_understand(other) => return None,
                _ => {}
            }
        }
        Some(EndpointData {
            guid: guid?,
            topic_name: topic_name?,
            type_name: type_name?,
            qos,
            unicast,
            multicast,
        })
    }
}

/// Key-only payload for an SEDP dispose: PL_CDR_LE { ENDPOINT_GUID }.
pub(crate) fn endpoint_key_payload(guid: Guid) -> Vec<u8> {
    let mut w = PlWriter::new();
    w.param(PID_ENDPOINT_GUID, &guid.to_bytes());
    w.finish()
}

/// Key-only payload for an SPDP dispose: PL_CDR_LE { PARTICIPANT_GUID }.
pub(crate) fn participant_key_payload(prefix: GuidPrefix) -> Vec<u8> {
    let mut w = PlWriter::new();
    w.param(
        PID_PARTICIPANT_GUID,
        &Guid::new(prefix, EntityId::PARTICIPANT).to_bytes(),
    );
    w.finish()
}

/// The GUID in a key-only builtin payload (ENDPOINT_GUID, PARTICIPANT_GUID or KEY_HASH).
pub(crate) fn key_guid(payload: &[u8]) -> Option<Guid> {
    let (body, le) = pl_body(payload)?;
    for p in Params::new(body, le) {
        let (pid, v) = p.ok()?;
        if matches!(pid, PID_ENDPOINT_GUID | PID_PARTICIPANT_GUID | PID_KEY_HASH) {
            return Some(Guid::from_bytes(Rd::new(v, le).arr::<16>()?));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(p: u32) -> Locator {
        let mut address = [0u8; 16];
        address[12..].copy_from_slice(&[127, 0, 0, 1]);
        Locator {
            kind: 1,
            port: p,
            address,
        }
    }

    #[test]
    fn spdp_round_trip() {
        let d = SpdpData {
            guid_prefix: GuidPrefix([7; 12]),
            vendor: [1, 0xfd],
            protocol_major: 2,
            domain_id: Some(3),
            domain_tag_empty: true,
            builtin_endpoints: 0x3f,
            metatraffic_unicast: vec![loc(7410)],
            metatraffic_multicast: vec![loc(7400)],
            default_unicast: vec![loc(7411)],
            default_multicast: vec![],
            lease_duration: Duration::from_secs(20),
            entity_name: Some("p1".into()),
        };
        let bytes = d.encode();
        assert_eq!(&bytes[..2], &[0, 3]);
        assert_eq!(SpdpData::decode(&bytes), Some(d));
        // Truncations never panic, never succeed wrongly with a different GUID.
        for cut in 0..bytes.len() {
            if let Some(x) = SpdpData::decode(&bytes[..cut]) {
                assert_eq!(x.guid_prefix, GuidPrefix([7; 12]));
            }
        }
    }

    #[test]
    fn sedp_round_trip_and_defaults() {
        let mut qos = EndpointQos::spec_default(true);
        qos.durability = Durability::TransientLocal;
        qos.history = History::KeepAll;
        qos.partition = Partition(vec!["a".into(), "bcd".into()]);
        qos.data_representation = DataRepresentation(vec![0, 2]);
        qos.deadline.period = Duration::from_millis(1500);
        let d = EndpointData {
            guid: Guid::new(GuidPrefix([1; 12]), EntityId([0, 0, 1, 2])),
            topic_name: "Square".into(),
            type_name: "ShapeType".into(),
            qos,
            unicast: vec![loc(9000)],
            multicast: vec![],
        };
        let bytes = d.encode(GuidPrefix([1; 12]));
        let back = EndpointData::decode(&bytes, true).unwrap();
        assert_eq!(back.guid, d.guid);
        assert_eq!(back.topic_name, "Square");
        assert_eq!(back.qos.partition, d.qos.partition);
        assert_eq!(back.qos.history, History::KeepAll);
        assert_eq!(back.qos.data_representation, d.qos.data_representation);
        let dl = back.qos.deadline.period;
        assert!(dl > Duration::from_millis(1499) && dl <= Duration::from_millis(1500));
        assert_eq!(back.unicast, d.unicast);

        // Absent reliability: writers default to RELIABLE, readers to BEST_EFFORT.
        let mut w = PlWriter::new();
        w.param(PID_ENDPOINT_GUID, &d.guid.to_bytes());
        w.string(PID_TOPIC_NAME, "T");
        w.string(PID_TYPE_NAME, "U");
        let minimal = w.finish();
        let as_writer = EndpointData::decode(&minimal, true).unwrap();
        let as_reader = EndpointData::decode(&minimal, false).unwrap();
        assert_eq!(as_writer.qos.reliability.kind, ReliabilityKind::Reliable);
        assert_eq!(as_reader.qos.reliability.kind, ReliabilityKind::BestEffort);
    }

    #[test]
    fn must_understand_unknown_drops_sample() {
        let mut w = PlWriter::new();
        w.param(PID_ENDPOINT_GUID, &[1; 16]);
        w.string(PID_TOPIC_NAME, "T");
        w.string(PID_TYPE_NAME, "U");
        w.u32(0x4077, 1);
        assert!(EndpointData::decode(&w.finish(), true).is_none());
    }

    #[test]
    fn overlong_names_drop_the_sample() {
        let mut w = PlWriter::new();
        w.param(PID_ENDPOINT_GUID, &[1; 16]);
        w.string(PID_TOPIC_NAME, &"x".repeat(MAX_NAME_LEN + 1));
        w.string(PID_TYPE_NAME, "U");
        assert!(EndpointData::decode(&w.finish(), true).is_none());
    }

    #[test]
    fn key_payloads() {
        let g = Guid::new(GuidPrefix([4; 12]), EntityId([0, 0, 9, 3]));
        assert_eq!(key_guid(&endpoint_key_payload(g)), Some(g));
        assert_eq!(
            key_guid(&participant_key_payload(GuidPrefix([4; 12]))).map(|g| g.prefix),
            Some(GuidPrefix([4; 12]))
        );
        assert_eq!(key_guid(&[0, 3]), None);
    }

    #[test]
    fn durations() {
        let mut r_inf = duration_bytes(DURATION_INFINITE);
        assert_eq!(
            read_duration(&mut Rd::new(&r_inf, true)),
            Some(DURATION_INFINITE)
        );
        r_inf = duration_bytes(Duration::from_millis(250));
        let d = read_duration(&mut Rd::new(&r_inf, true)).unwrap();
        assert!(d <= Duration::from_millis(250) && d > Duration::from_millis(249));
    }
}

/// Golden bytes of every discovery payload we build, pinned before the parameter
/// encoding moved onto the wire crate's typed values (the bytes must not change).
#[cfg(test)]
mod golden_tests {
    use super::*;

    pub(crate) fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn loc(kind: i32, ip: [u8; 4], port: u32) -> Locator {
        let mut address = [0u8; 16];
        address[12..].copy_from_slice(&ip);
        Locator {
            kind,
            port,
            address,
        }
    }

    fn spdp() -> SpdpData {
        SpdpData {
            guid_prefix: GuidPrefix([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]),
            vendor: [0x01, 0xfd],
            protocol_major: 2,
            domain_id: Some(7),
            domain_tag_empty: true,
            builtin_endpoints: 0x0000_0c3f,
            metatraffic_unicast: vec![loc(1, [10, 0, 0, 1], 7410)],
            metatraffic_multicast: vec![loc(1, [239, 255, 0, 1], 7400)],
            default_unicast: vec![loc(1, [10, 0, 0, 1], 7411)],
            default_multicast: vec![loc(1, [239, 255, 0, 1], 7401)],
            lease_duration: Duration::from_millis(20_100),
            entity_name: Some("golden".into()),
        }
    }

    fn endpoint() -> EndpointData {
        let mut qos = EndpointQos::spec_default(true);
        qos.reliability.max_blocking_time = Duration::from_millis(100);
        qos.durability = Durability::TransientLocal;
        qos.history = History::KeepLast(5);
        qos.ownership = Ownership::Exclusive;
        qos.ownership_strength = 9;
        qos.liveliness = Liveliness {
            kind: LivelinessKind::ManualByTopic,
            lease_duration: Duration::from_micros(1_500_001),
        };
        qos.deadline.period = DURATION_INFINITE;
        qos.partition = Partition(vec!["a".into(), "part*".into(), "".into()]);
        qos.data_representation = DataRepresentation(vec![0, 2, 1]);
        EndpointData {
            guid: Guid::new(
                GuidPrefix([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]),
                EntityId([0, 0, 1, 2]),
            ),
            topic_name: "Square".into(),
            type_name: "ShapeType".into(),
            qos,
            unicast: vec![loc(1, [10, 0, 0, 1], 7411)],
            multicast: vec![loc(1, [239, 255, 0, 1], 7401)],
        }
    }

    /// The expected payload, one 32-byte row per string.
    fn expect(rows: &[&str]) -> String {
        rows.concat()
    }

    #[test]
    fn spdp_golden() {
        // PROTOCOL_VERSION 2.5, VENDORID, DOMAIN_ID 7, PARTICIPANT_GUID, BUILTIN_ENDPOINT_SET,
        // four locators (kind 1, port, address), LEASE_DURATION 20.1 s (fraction rounded
        // down: 0x19999999), ENTITY_NAME "golden", SENTINEL.
        let want = expect(&[
            "0003000015000400020500001600040001fd00000f0004000700000050001000",
            "0102030405060708090a0b0c000001c1580004003f0c00003200180001000000",
            "f21c00000000000000000000000000000a0000013300180001000000e81c0000",
            "000000000000000000000000efff00013100180001000000f31c000000000000",
            "00000000000000000a0000014800180001000000e91c00000000000000000000",
            "00000000efff000102000800140000009999991962000c0007000000676f6c64",
            "656e000001000000",
        ]);
        let bytes = spdp().encode();
        assert_eq!(hex(&bytes), want);
        // Decoding rounds the fraction down again: 20.1 s comes back 1 ns short.
        let mut back = SpdpData::decode(&bytes).unwrap();
        assert_eq!(back.lease_duration, Duration::new(20, 99_999_999));
        back.lease_duration = spdp().lease_duration;
        assert_eq!(back, spdp());
    }

    #[test]
    fn sedp_writer_golden() {
        // ENDPOINT_GUID, PARTICIPANT_GUID, TOPIC_NAME, TYPE_NAME, RELIABILITY (RELIABLE,
        // 100 ms), DURABILITY TRANSIENT_LOCAL, HISTORY KEEP_LAST 5, OWNERSHIP EXCLUSIVE,
        // OWNERSHIP_STRENGTH 9, LIVELINESS MANUAL_BY_TOPIC 1.500001 s, DEADLINE infinite,
        // PARTITION ["a", "part*", ""] (each name 4-aligned), DATA_REPRESENTATION [0, 2, 1],
        // UNICAST_LOCATOR, MULTICAST_LOCATOR, SENTINEL.
        let want = expect(&[
            "000300005a0010000102030405060708090a0b0c000001025000100001010101",
            "0101010101010101000001c105000c0007000000537175617265000007001000",
            "0a0000005368617065547970650000001a000c00020000000000000099999919",
            "1d000400010000004000080000000000050000001f0004000100000006000400",
            "090000001b000c000200000001000000c610008023000800ffffff7fffffffff",
            "2900200003000000020000006100000006000000706172742a00000001000000",
            "0000000073000c000300000000000200010000002f00180001000000f31c0000",
            "0000000000000000000000000a0000013000180001000000e91c000000000000",
            "0000000000000000efff000101000000",
        ]);
        let bytes = endpoint().encode(GuidPrefix([1; 12]));
        assert_eq!(hex(&bytes), want);
        let back = EndpointData::decode(&bytes, true).unwrap();
        assert_eq!(back.guid, endpoint().guid);
        assert_eq!(back.qos.partition, endpoint().qos.partition);
        assert_eq!(back.qos.liveliness.kind, LivelinessKind::ManualByTopic);
        assert_eq!(back.multicast, endpoint().multicast);
    }

    #[test]
    fn sedp_reader_golden() {
        // Reader defaults: BEST_EFFORT, VOLATILE, KEEP_LAST 1, SHARED (no strength),
        // AUTOMATIC infinite liveliness, infinite deadline, no partition or representation.
        let mut r = endpoint();
        r.qos = EndpointQos::spec_default(false);
        r.multicast.clear();
        let want = expect(&[
            "000300005a0010000102030405060708090a0b0c000001025000100001010101",
            "0101010101010101000001c105000c0007000000537175617265000007001000",
            "0a0000005368617065547970650000001a000c00010000000000000099999919",
            "1d000400000000004000080000000000010000001f000400000000001b000c00",
            "00000000ffffff7fffffffff23000800ffffff7fffffffff2f00180001000000",
            "f31c00000000000000000000000000000a00000101000000",
        ]);
        assert_eq!(hex(&r.encode(GuidPrefix([1; 12]))), want);
    }

    #[test]
    fn key_payloads_golden() {
        assert_eq!(
            hex(&endpoint_key_payload(endpoint().guid)),
            expect(&["000300005a0010000102030405060708090a0b0c0000010201000000",])
        );
        assert_eq!(
            hex(&participant_key_payload(GuidPrefix([3; 12]))),
            expect(&["0003000050001000030303030303030303030303000001c101000000",])
        );
    }
}
