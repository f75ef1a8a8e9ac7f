//! SPDP and SEDP builtin-topic data: PL_CDR_LE encoding and PL_CDR_LE/BE
//! decoding with default filling per endpoint kind (DDSI-RTPS 2.5 §9.6.2).

use core::time::Duration;

use ferrodds_wire::qos as wq;
use ferrodds_wire::{
    BuiltinEndpointSet, Duration as WireDuration, Endianness, Parameter, ParameterList,
    ParameterListWriter, ParameterValue, ProtocolVersion, VendorId, WireError,
};

use crate::codec::PID_KEY_HASH;
use crate::qos::{
    DataRepresentation, Deadline, Durability, EndpointQos, History, Liveliness, LivelinessKind,
    Ownership, Partition, Reliability, ReliabilityKind, DURATION_INFINITE,
};
use crate::security::{
    RemoteSecurityParams, PID_IDENTITY_TOKEN, PID_PARTICIPANT_SECURITY_INFO, PID_PERMISSIONS_TOKEN,
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
/// FerroDDS vendor-specific (bit 15 set, DDSI-RTPS 2.5 §9.6.2.2.1: interpreted
/// only when the sender's vendor id is FerroDDS): the participant's
/// incarnation ([`crate::ParticipantConfig::incarnation`]), in SPDP
/// announcements and disposals.
pub(crate) const PID_FERRODDS_INCARNATION: u16 = 0x8001;
/// FerroDDS vendor-specific, in SPDP announcements (a `u32`, bit 0 set): the participant reads
/// DATA_REF submessages (it maps other participants' loan pools and runs without DDS
/// Security), so writers on its host may send it large samples by reference.
pub(crate) const PID_FERRODDS_DATA_REFS: u16 = 0x8002;

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

/// An incarnation value on the wire: 8 octets, the high then the low 32 bits,
/// each in the list's byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Incarnation(u64);

impl<'a> ParameterValue<'a> for Incarnation {
    fn decode(value: &'a [u8], endian: Endianness) -> Result<Self, WireError> {
        let hi = u32::decode(value, endian)?;
        let lo = u32::decode(value.get(4..).unwrap_or(&[]), endian)?;
        Ok(Self((u64::from(hi) << 32) | u64::from(lo)))
    }
    fn encoded_len(&self) -> usize {
        8
    }
    fn encode(&self, endian: Endianness, out: &mut [u8]) -> Result<usize, WireError> {
        let (hi, rest) = out.split_at_mut(out.len().min(4));
        let n = ((self.0 >> 32) as u32).encode(endian, hi)?;
        Ok(n + (self.0 as u32).encode(endian, rest)?)
    }
}

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
    /// The FerroDDS incarnation stamp, when the sender is FerroDDS and sent one.
    pub(crate) incarnation: Option<u64>,
    /// The sender is FerroDDS and reads DATA_REF submessages ([`PID_FERRODDS_DATA_REFS`]).
    pub(crate) data_refs: bool,
    /// DDS Security parameters (identity and permissions tokens, security info), when any
    /// was announced (ours: set by a secure participant, values little endian).
    pub(crate) security: Option<RemoteSecurityParams>,
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

/// Builds a PL_CDR_LE payload: the encapsulation header, then typed parameters
/// appended with the wire crate's [`ParameterListWriter`] (4-byte padding), then
/// the sentinel.
struct PlWriter {
    buf: Vec<u8>,
    len: usize,
    endian: Endianness,
}

/// Largest discovery payload built (far above anything real; bounds the growth loop).
const MAX_PAYLOAD: usize = 1 << 24;

/// Longest security token value kept from SPDP data (longer ones are ignored).
const MAX_TOKEN_LEN: usize = 4096;

impl PlWriter {
    fn new() -> Self {
        let mut buf = vec![0u8; 256];
        buf[..4].copy_from_slice(&PL_CDR_LE);
        Self {
            buf,
            len: 4,
            endian: Endianness::Little,
        }
    }

    /// A big-endian list without encapsulation header (`c.pdata`).
    fn bare_big_endian() -> Self {
        Self {
            buf: vec![0u8; 256],
            len: 0,
            endian: Endianness::Big,
        }
    }

    /// Runs `f` on a list writer over the free tail (it returns the bytes it wrote),
    /// growing the buffer while that is too small. Any other error (a value longer than a
    /// parameter can hold, a string with an inner NUL) leaves the parameter out.
    fn append(&mut self, f: impl Fn(ParameterListWriter<'_>) -> Result<usize, WireError>) {
        loop {
            let tail = self.buf.get_mut(self.len..).unwrap_or(&mut []);
            match f(ParameterListWriter::new(tail, self.endian)) {
                Ok(n) => {
                    self.len += n;
                    return;
                }
                Err(WireError::BufferTooSmall { .. }) if self.buf.len() < MAX_PAYLOAD => {
                    let grown = self.buf.len() * 2;
                    self.buf.resize(grown, 0);
                }
                Err(_) => return,
            }
        }
    }

    fn push<'v, V: ParameterValue<'v>>(&mut self, pid: u16, value: &V) {
        self.append(|mut w| w.push(pid, value).map(|()| w.len()));
    }

    fn push_raw(&mut self, pid: u16, value: &[u8]) {
        self.append(|mut w| w.push_raw(pid, value).map(|()| w.len()));
    }

    fn finish(mut self) -> Vec<u8> {
        self.append(|w| w.finish().map(<[u8]>::len));
        self.buf.truncate(self.len);
        self.buf
    }
}

/// `Duration_t` of `d`: whole seconds and the fraction rounded down; from
/// 0x7fffffff s on, DURATION_INFINITE.
pub(crate) fn wire_duration(d: Duration) -> WireDuration {
    if d >= Duration::from_secs(0x7fff_ffff) {
        WireDuration::INFINITE
    } else {
        WireDuration {
            seconds: d.as_secs() as i32,
            fraction: ((u64::from(d.subsec_nanos()) << 32) / 1_000_000_000) as u32,
        }
    }
}

/// A received `Duration_t`: 0x7fffffff s (any fraction) is infinite, negative is zero,
/// the fraction is rounded down to nanoseconds.
fn std_duration(d: WireDuration) -> Duration {
    if d.seconds == 0x7fff_ffff {
        return DURATION_INFINITE;
    }
    if d.seconds < 0 {
        return Duration::ZERO;
    }
    let nanos = ((u64::from(d.fraction) * 1_000_000_000) >> 32) as u32;
    Duration::new(d.seconds as u64, nanos)
}

/// Decodes a parameter's value as `T` in the list's byte order.
fn val<'a, T: ParameterValue<'a>>(p: &Parameter<'a>, endian: Endianness) -> Option<T> {
    p.decode(endian).ok()
}

fn read_name(p: &Parameter<'_>, endian: Endianness) -> Option<String> {
    val::<&str>(p, endian)
        .filter(|s| s.len() <= MAX_NAME_LEN)
        .map(str::to_owned)
}

fn push_locator(list: &mut Vec<Locator>, p: &Parameter<'_>, endian: Endianness) {
    if let Some(l) = val::<Locator>(p, endian) {
        // UDPv4, UDPv6, TCPv4, FerroDDS TLSv4 and shared memory are kept (the runtime sends
        // to the kinds it has a transport for; the engine keeps shared memory only for
        // peers on its own host); unknown kinds are ignored silently.
        if matches!(
            l.kind,
            1 | 2 | 4 | Locator::KIND_FERRODDS_TLSV4 | Locator::KIND_FERRODDS_SHM
        ) && list.len() < MAX_LOCATORS
            && !list.contains(&l)
        {
            list.push(l);
        }
    }
}

/// The parameter list of a PL_CDR_LE/BE serialized payload.
fn pl_body(payload: &[u8]) -> Option<ParameterList<'_>> {
    ParameterList::from_serialized_payload(payload).ok()
}

fn must_understand(pid: u16) -> bool {
    pid & 0x4000 != 0 && pid & 0x8000 == 0
}

impl SpdpData {
    /// PL_CDR_LE payload (encapsulation header included), security parameters included.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = PlWriter::new();
        self.write(&mut w);
        if let Some(s) = self.security.as_ref() {
            // (Token values are CDR in the byte order they came in: only little-endian ones
            // fit this list.)
            if let Some(t) = s.identity_token.as_ref().filter(|_| !s.big_endian) {
                w.push_raw(PID_IDENTITY_TOKEN, t);
            }
            if let Some(t) = s.permissions_token.as_ref().filter(|_| !s.big_endian) {
                w.push_raw(PID_PERMISSIONS_TOKEN, t);
            }
            if let Some((a, p)) = s.security_info {
                w.push(
                    PID_PARTICIPANT_SECURITY_INFO,
                    &ferrodds_wire::SecurityInfo {
                        attributes: a,
                        plugin_attributes: p,
                    },
                );
            }
        }
        w.finish()
    }

    /// The DDS Security handshake's `c.pdata`: this data as a big-endian parameter list
    /// (no encapsulation header, no security parameters), ending with the sentinel.
    pub(crate) fn encode_pdata(&self) -> Vec<u8> {
        let mut w = PlWriter::bare_big_endian();
        self.write(&mut w);
        w.finish()
    }

    fn write(&self, w: &mut PlWriter) {
        w.push(
            PID_PROTOCOL_VERSION,
            &ProtocolVersion { major: 2, minor: 5 },
        );
        w.push(PID_VENDORID, &VendorId(self.vendor));
        if let Some(d) = self.domain_id {
            w.push(PID_DOMAIN_ID, &d);
        }
        let guid = Guid::new(self.guid_prefix, EntityId::PARTICIPANT);
        w.push(PID_PARTICIPANT_GUID, &guid);
        w.push(
            PID_BUILTIN_ENDPOINT_SET,
            &BuiltinEndpointSet(self.builtin_endpoints),
        );
        for l in &self.metatraffic_unicast {
            w.push(PID_METATRAFFIC_UNICAST_LOCATOR, l);
        }
        for l in &self.metatraffic_multicast {
            w.push(PID_METATRAFFIC_MULTICAST_LOCATOR, l);
        }
        for l in &self.default_unicast {
            w.push(PID_DEFAULT_UNICAST_LOCATOR, l);
        }
        for l in &self.default_multicast {
            w.push(PID_DEFAULT_MULTICAST_LOCATOR, l);
        }
        w.push(
            PID_PARTICIPANT_LEASE_DURATION,
            &wire_duration(self.lease_duration),
        );
        if let Some(n) = &self.entity_name {
            w.push(PID_ENTITY_NAME, &n.as_str());
        }
        if let Some(i) = self.incarnation {
            w.push(PID_FERRODDS_INCARNATION, &Incarnation(i));
        }
        if self.data_refs {
            w.push(PID_FERRODDS_DATA_REFS, &1u32);
        }
    }

    /// Decodes a PL_CDR payload; `None` if malformed or lacking a GUID.
    pub(crate) fn decode(payload: &[u8]) -> Option<Self> {
        let list = pl_body(payload)?;
        let e = list.endianness();
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
            incarnation: None,
            data_refs: false,
            security: None,
        };
        let mut have_guid = false;
        // (Vendor-specific: applied once the vendor id is known, wherever it is.)
        let mut incarnation = None;
        let mut data_refs = false;
        for p in list {
            let p = p.ok()?;
            match p.pid {
                PID_PROTOCOL_VERSION => d.protocol_major = *p.value.first()?,
                PID_VENDORID => d.vendor = val::<VendorId>(&p, e)?.0,
                PID_DOMAIN_ID => d.domain_id = Some(val(&p, e)?),
                PID_DOMAIN_TAG => d.domain_tag_empty = val::<&str>(&p, e)?.is_empty(),
                PID_PARTICIPANT_GUID => {
                    d.guid_prefix = val::<Guid>(&p, e)?.prefix;
                    have_guid = true;
                }
                PID_BUILTIN_ENDPOINT_SET => {
                    d.builtin_endpoints = val::<BuiltinEndpointSet>(&p, e)?.0;
                }
                PID_METATRAFFIC_UNICAST_LOCATOR => {
                    push_locator(&mut d.metatraffic_unicast, &p, e);
                }
                PID_METATRAFFIC_MULTICAST_LOCATOR => {
                    push_locator(&mut d.metatraffic_multicast, &p, e);
                }
                PID_DEFAULT_UNICAST_LOCATOR => push_locator(&mut d.default_unicast, &p, e),
                PID_DEFAULT_MULTICAST_LOCATOR => push_locator(&mut d.default_multicast, &p, e),
                PID_PARTICIPANT_LEASE_DURATION => {
                    d.lease_duration = std_duration(val(&p, e)?);
                }
                PID_ENTITY_NAME => d.entity_name = val::<&str>(&p, e).map(str::to_owned),
                PID_FERRODDS_INCARNATION => incarnation = val::<Incarnation>(&p, e),
                PID_FERRODDS_DATA_REFS => data_refs = val::<u32>(&p, e).is_some_and(|v| v & 1 != 0),
                PID_IDENTITY_TOKEN | PID_PERMISSIONS_TOKEN | PID_PARTICIPANT_SECURITY_INFO => {
                    // A parameter value is a whole number of 4-byte words on the wire; a
                    // token that is not is malformed and ignored (kept, it would come back
                    // padded when re-encoded), as is one that does not decode: a participant
                    // is secure only by the security parameters it really carries (both
                    // found by the discovery_data fuzz target).
                    let token = (p.value.len() <= MAX_TOKEN_LEN && p.value.len().is_multiple_of(4))
                        .then(|| p.value.to_vec());
                    let info = (p.pid == PID_PARTICIPANT_SECURITY_INFO)
                        .then(|| val::<ferrodds_wire::SecurityInfo>(&p, e))
                        .flatten()
                        .map(|i| (i.attributes, i.plugin_attributes));
                    let present = if p.pid == PID_PARTICIPANT_SECURITY_INFO {
                        info.is_some()
                    } else {
                        token.is_some()
                    };
                    if present {
                        let s = d.security.get_or_insert_with(|| RemoteSecurityParams {
                            big_endian: e == Endianness::Big,
                            ..RemoteSecurityParams::default()
                        });
                        match p.pid {
                            PID_IDENTITY_TOKEN => s.identity_token = token,
                            PID_PERMISSIONS_TOKEN => s.permissions_token = token,
                            _ => s.security_info = info,
                        }
                    }
                }
                other if must_understand(other) => return None,
                _ => {}
            }
        }
        if d.vendor == VendorId::FERRODDS.0 {
            d.incarnation = incarnation.map(|i| i.0);
            d.data_refs = data_refs;
        }
        have_guid.then_some(d)
    }
}

impl EndpointData {
    pub(crate) fn encode(&self, participant: GuidPrefix) -> Vec<u8> {
        let mut w = PlWriter::new();
        w.push(PID_ENDPOINT_GUID, &self.guid);
        w.push(
            PID_PARTICIPANT_GUID,
            &Guid::new(participant, EntityId::PARTICIPANT),
        );
        w.push(PID_TOPIC_NAME, &self.topic_name.as_str());
        w.push(PID_TYPE_NAME, &self.type_name.as_str());
        let q = &self.qos;
        w.push(
            PID_RELIABILITY,
            &wq::Reliability {
                kind: match q.reliability.kind {
                    ReliabilityKind::BestEffort => wq::ReliabilityKind::BestEffort,
                    ReliabilityKind::Reliable => wq::ReliabilityKind::Reliable,
                },
                max_blocking_time: wire_duration(q.reliability.max_blocking_time),
            },
        );
        w.push(
            PID_DURABILITY,
            &wq::Durability {
                kind: match q.durability {
                    Durability::Volatile => wq::DurabilityKind::Volatile,
                    Durability::TransientLocal => wq::DurabilityKind::TransientLocal,
                },
            },
        );
        w.push(
            PID_HISTORY,
            &match q.history {
                History::KeepLast(n) => wq::History {
                    kind: wq::HistoryKind::KeepLast,
                    depth: i32::try_from(n).unwrap_or(i32::MAX),
                },
                History::KeepAll => wq::History {
                    kind: wq::HistoryKind::KeepAll,
                    depth: -1,
                },
            },
        );
        w.push(
            PID_OWNERSHIP,
            &wq::Ownership {
                kind: match q.ownership {
                    Ownership::Shared => wq::OwnershipKind::Shared,
                    Ownership::Exclusive => wq::OwnershipKind::Exclusive,
                },
            },
        );
        if q.ownership == Ownership::Exclusive {
            w.push(
                PID_OWNERSHIP_STRENGTH,
                &wq::OwnershipStrength {
                    value: q.ownership_strength,
                },
            );
        }
        w.push(
            PID_LIVELINESS,
            &wq::Liveliness {
                kind: match q.liveliness.kind {
                    LivelinessKind::Automatic => wq::LivelinessKind::Automatic,
                    LivelinessKind::ManualByParticipant => wq::LivelinessKind::ManualByParticipant,
                    LivelinessKind::ManualByTopic => wq::LivelinessKind::ManualByTopic,
                },
                lease_duration: wire_duration(q.liveliness.lease_duration),
            },
        );
        w.push(
            PID_DEADLINE,
            &wq::Deadline {
                period: wire_duration(q.deadline.period),
            },
        );
        if !q.partition.0.is_empty() {
            let names: Vec<&str> = q.partition.0.iter().map(String::as_str).collect();
            w.push(PID_PARTITION, &wq::Partition::from_names(&names));
        }
        if !q.data_representation.0.is_empty() {
            w.push(
                PID_DATA_REPRESENTATION,
                &wq::DataRepresentation::from_slice(&q.data_representation.0),
            );
        }
        for l in &self.unicast {
            w.push(PID_UNICAST_LOCATOR, l);
        }
        for l in &self.multicast {
            w.push(PID_MULTICAST_LOCATOR, l);
        }
        w.finish()
    }

    /// Decodes a DiscoveredWriterData (`writer`) or DiscoveredReaderData;
    /// absent QoS takes the spec default for that endpoint kind.
    pub(crate) fn decode(payload: &[u8], writer: bool) -> Option<Self> {
        let list = pl_body(payload)?;
        let e = list.endianness();
        let mut guid = None;
        let mut topic_name = None;
        let mut type_name = None;
        let mut qos = EndpointQos::spec_default(writer);
        let mut unicast = Vec::new();
        let mut multicast = Vec::new();
        for p in list {
            let p = p.ok()?;
            match p.pid {
                PID_ENDPOINT_GUID => guid = Some(val::<Guid>(&p, e)?),
                PID_TOPIC_NAME => topic_name = Some(read_name(&p, e)?),
                PID_TYPE_NAME => type_name = Some(read_name(&p, e)?),
                PID_RELIABILITY => {
                    // The max_blocking_time may be missing: zero then.
                    let (kind, max_blocking_time) = match val::<wq::Reliability>(&p, e) {
                        Some(r) => (r.kind, std_duration(r.max_blocking_time)),
                        None => (
                            wq::ReliabilityKind::from_u32(val(&p, e)?).ok()?,
                            Duration::ZERO,
                        ),
                    };
                    qos.reliability = Reliability {
                        kind: match kind {
                            wq::ReliabilityKind::BestEffort => ReliabilityKind::BestEffort,
                            wq::ReliabilityKind::Reliable => ReliabilityKind::Reliable,
                        },
                        max_blocking_time,
                    };
                }
                PID_DURABILITY => {
                    qos.durability = match val::<wq::Durability>(&p, e)?.kind {
                        wq::DurabilityKind::Volatile => Durability::Volatile,
                        // TRANSIENT and PERSISTENT offer at least TRANSIENT_LOCAL.
                        wq::DurabilityKind::TransientLocal
                        | wq::DurabilityKind::Transient
                        | wq::DurabilityKind::Persistent => Durability::TransientLocal,
                    }
                }
                PID_HISTORY => {
                    // The depth may be missing: 1 then.
                    let (kind, depth) = match val::<wq::History>(&p, e) {
                        Some(h) => (h.kind, h.depth),
                        None => (wq::HistoryKind::from_u32(val(&p, e)?).ok()?, 1),
                    };
                    qos.history = match kind {
                        wq::HistoryKind::KeepLast => {
                            History::KeepLast(u32::try_from(depth).unwrap_or(1).max(1))
                        }
                        wq::HistoryKind::KeepAll => History::KeepAll,
                    };
                }
                PID_OWNERSHIP => {
                    qos.ownership = match val::<wq::Ownership>(&p, e)?.kind {
                        wq::OwnershipKind::Shared => Ownership::Shared,
                        wq::OwnershipKind::Exclusive => Ownership::Exclusive,
                    }
                }
                PID_OWNERSHIP_STRENGTH => {
                    qos.ownership_strength = val::<wq::OwnershipStrength>(&p, e)?.value;
                }
                PID_LIVELINESS => {
                    let l = val::<wq::Liveliness>(&p, e)?;
                    qos.liveliness = Liveliness {
                        kind: match l.kind {
                            wq::LivelinessKind::Automatic => LivelinessKind::Automatic,
                            wq::LivelinessKind::ManualByParticipant => {
                                LivelinessKind::ManualByParticipant
                            }
                            wq::LivelinessKind::ManualByTopic => LivelinessKind::ManualByTopic,
                        },
                        lease_duration: std_duration(l.lease_duration),
                    };
                }
                PID_DEADLINE => {
                    qos.deadline = Deadline {
                        period: std_duration(val::<wq::Deadline>(&p, e)?.period),
                    }
                }
                PID_PARTITION => {
                    let names = val::<wq::Partition<'_>>(&p, e)?;
                    qos.partition = Partition(
                        names
                            .iter()
                            .take(MAX_PARTITIONS)
                            .map(str::to_owned)
                            .collect(),
                    );
                }
                PID_DATA_REPRESENTATION => {
                    let ids = val::<wq::DataRepresentation<'_>>(&p, e)?;
                    qos.data_representation = DataRepresentation(ids.iter().take(16).collect());
                }
                PID_UNICAST_LOCATOR => push_locator(&mut unicast, &p, e),
                PID_MULTICAST_LOCATOR => push_locator(&mut multicast, &p, e),
                PID_KEY_HASH if guid.is_none() => guid = Some(val::<Guid>(&p, e)?),
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
    w.push(PID_ENDPOINT_GUID, &guid);
    w.finish()
}

/// Key-only payload for an SPDP dispose: PL_CDR_LE { PARTICIPANT_GUID }, and
/// the FerroDDS incarnation when there is one.
pub(crate) fn participant_key_payload(prefix: GuidPrefix, incarnation: Option<u64>) -> Vec<u8> {
    let mut w = PlWriter::new();
    w.push(
        PID_PARTICIPANT_GUID,
        &Guid::new(prefix, EntityId::PARTICIPANT),
    );
    if let Some(i) = incarnation {
        w.push(PID_FERRODDS_INCARNATION, &Incarnation(i));
    }
    w.finish()
}

/// The FerroDDS incarnation in a key-only SPDP dispose payload (the caller
/// knows the sender is FerroDDS from its announcements).
pub(crate) fn key_incarnation(payload: &[u8]) -> Option<u64> {
    let list = pl_body(payload)?;
    for p in list {
        let p = p.ok()?;
        if p.pid == PID_FERRODDS_INCARNATION {
            return val::<Incarnation>(&p, list.endianness()).map(|i| i.0);
        }
    }
    None
}

/// The GUID in a key-only builtin payload (ENDPOINT_GUID, PARTICIPANT_GUID or KEY_HASH).
pub(crate) fn key_guid(payload: &[u8]) -> Option<Guid> {
    let list = pl_body(payload)?;
    for p in list {
        let p = p.ok()?;
        if matches!(
            p.pid,
            PID_ENDPOINT_GUID | PID_PARTICIPANT_GUID | PID_KEY_HASH
        ) {
            return val::<Guid>(&p, list.endianness());
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

    /// The DDS Security parameters: raw token values (CDR DataHolders) round-trip, the
    /// security info is two u32s in the list's order, and `c.pdata` is a bare big-endian
    /// list starting with PID_PARTICIPANT_GUID's neighbours and ending with the sentinel.
    #[test]
    fn spdp_security_parameters() {
        // A DataHolder "A" with no properties: class_id "A\0" (len 2), two empty sequences.
        let token = vec![2, 0, 0, 0, b'A', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let d = SpdpData {
            guid_prefix: GuidPrefix([0x81; 12]),
            vendor: [1, 0xfd],
            protocol_major: 2,
            domain_id: Some(3),
            domain_tag_empty: true,
            builtin_endpoints: 0x3f | (1 << 22) | (1 << 23) | (1 << 26),
            metatraffic_unicast: vec![loc(7410)],
            metatraffic_multicast: vec![],
            default_unicast: vec![loc(7411)],
            default_multicast: vec![],
            lease_duration: Duration::from_secs(20),
            entity_name: None,
            incarnation: None,
            data_refs: false,
            security: Some(RemoteSecurityParams {
                identity_token: Some(token.clone()),
                permissions_token: Some(token.clone()),
                security_info: Some((0x8000_0000, 0x8000_0000)),
                big_endian: false,
            }),
        };
        let bytes = d.encode();
        assert_eq!(SpdpData::decode(&bytes), Some(d.clone()));
        // PID 0x1001, length 16, the token verbatim (little-endian list).
        let mut want = vec![0x01, 0x10, 16, 0];
        want.extend_from_slice(&token);
        assert!(bytes.windows(want.len()).any(|w| w == want.as_slice()));
        // PID 0x1005: two u32 little endian.
        let info = [0x05, 0x10, 8, 0, 0, 0, 0, 0x80, 0, 0, 0, 0x80];
        assert!(bytes.windows(info.len()).any(|w| w == info));
        // c.pdata: big endian, no encapsulation, GUID parameter, sentinel last, no tokens.
        let pdata = d.encode_pdata();
        let mut guid = vec![0x00, 0x50, 0x00, 0x10];
        guid.extend_from_slice(&[0x81; 12]);
        guid.extend_from_slice(&[0, 0, 1, 0xc1]);
        assert!(pdata.windows(guid.len()).any(|w| w == guid.as_slice()));
        assert_eq!(&pdata[pdata.len() - 4..], &[0, 1, 0, 0]);
        assert!(!pdata.windows(2).any(|w| w == [0x10, 0x01]));
        let mut with_header = vec![0, 2, 0, 0];
        with_header.extend_from_slice(&pdata);
        let back = SpdpData::decode(&with_header).unwrap();
        assert_eq!(back.guid_prefix, d.guid_prefix);
        assert_eq!(back.security, None);
        // A big-endian list's tokens are kept as received, marked big endian.
        let mut w = PlWriter::bare_big_endian();
        d.write(&mut w);
        w.push_raw(PID_IDENTITY_TOKEN, &token);
        let be = w.finish();
        let mut with_header = vec![0, 2, 0, 0];
        with_header.extend_from_slice(&be);
        let s = SpdpData::decode(&with_header).unwrap().security.unwrap();
        assert!(s.big_endian);
        assert_eq!(s.identity_token, Some(token));
        assert_eq!(s.permissions_token, None);
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
            incarnation: Some(0x0123_4567_89ab_cdef),
            data_refs: true,
            security: None,
        };
        let bytes = d.encode();
        assert_eq!(&bytes[..2], &[0, 3]);
        assert_eq!(SpdpData::decode(&bytes), Some(d.clone()));
        // The incarnation is vendor-specific: another vendor's parameter 0x8001
        // means something else.
        let other = SpdpData {
            vendor: [1, 0x10],
            ..d.clone()
        };
        assert_eq!(SpdpData::decode(&other.encode()).unwrap().incarnation, None);
        // So is the DATA_REF flag (0x8002).
        assert!(!SpdpData::decode(&other.encode()).unwrap().data_refs);
        let without = SpdpData {
            data_refs: false,
            ..d.clone()
        };
        assert_eq!(SpdpData::decode(&without.encode()), Some(without.clone()));
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
        w.push(PID_ENDPOINT_GUID, &d.guid);
        w.push(PID_TOPIC_NAME, &"T");
        w.push(PID_TYPE_NAME, &"U");
        let minimal = w.finish();
        let as_writer = EndpointData::decode(&minimal, true).unwrap();
        let as_reader = EndpointData::decode(&minimal, false).unwrap();
        assert_eq!(as_writer.qos.reliability.kind, ReliabilityKind::Reliable);
        assert_eq!(as_reader.qos.reliability.kind, ReliabilityKind::BestEffort);
    }

    #[test]
    fn must_understand_unknown_drops_sample() {
        let mut w = PlWriter::new();
        w.push(PID_ENDPOINT_GUID, &Guid::from_bytes([1; 16]));
        w.push(PID_TOPIC_NAME, &"T");
        w.push(PID_TYPE_NAME, &"U");
        w.push(0x4077, &1u32);
        assert!(EndpointData::decode(&w.finish(), true).is_none());
    }

    #[test]
    fn overlong_names_drop_the_sample() {
        let mut w = PlWriter::new();
        w.push(PID_ENDPOINT_GUID, &Guid::from_bytes([1; 16]));
        w.push(PID_TOPIC_NAME, &"x".repeat(MAX_NAME_LEN + 1).as_str());
        w.push(PID_TYPE_NAME, &"U");
        assert!(EndpointData::decode(&w.finish(), true).is_none());
    }

    #[test]
    fn key_payloads() {
        let g = Guid::new(GuidPrefix([4; 12]), EntityId([0, 0, 9, 3]));
        assert_eq!(key_guid(&endpoint_key_payload(g)), Some(g));
        assert_eq!(
            key_guid(&participant_key_payload(GuidPrefix([4; 12]), None)).map(|g| g.prefix),
            Some(GuidPrefix([4; 12]))
        );
        let stamped = participant_key_payload(GuidPrefix([4; 12]), Some(u64::MAX - 5));
        assert_eq!(
            key_guid(&stamped).map(|g| g.prefix),
            Some(GuidPrefix([4; 12]))
        );
        assert_eq!(key_incarnation(&stamped), Some(u64::MAX - 5));
        assert_eq!(
            key_incarnation(&participant_key_payload(GuidPrefix([4; 12]), None)),
            None
        );
        assert_eq!(key_guid(&[0, 3]), None);
    }

    #[test]
    fn durations() {
        assert_eq!(wire_duration(DURATION_INFINITE), WireDuration::INFINITE);
        assert_eq!(std_duration(WireDuration::INFINITE), DURATION_INFINITE);
        // Any fraction with 0x7fffffff seconds is infinite; negative is zero.
        let almost = WireDuration {
            seconds: 0x7fff_ffff,
            fraction: 0,
        };
        assert_eq!(std_duration(almost), DURATION_INFINITE);
        let negative = WireDuration {
            seconds: -1,
            fraction: 5,
        };
        assert_eq!(std_duration(negative), Duration::ZERO);
        let d = std_duration(wire_duration(Duration::from_millis(250)));
        assert!(d <= Duration::from_millis(250) && d > Duration::from_millis(249));
        // The fraction is rounded down (0.1 s = 429496729.6 units of 2^-32 s).
        assert_eq!(
            wire_duration(Duration::from_millis(100)).fraction,
            429_496_729
        );
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
            incarnation: None,
            data_refs: false,
            security: None,
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
            hex(&participant_key_payload(GuidPrefix([3; 12]), None)),
            expect(&["0003000050001000030303030303030303030303000001c101000000",])
        );
    }
}
