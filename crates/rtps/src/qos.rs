//! QoS value types shared by the engine and the public API, and the
//! offered/requested compatibility rules (DDS 1.4 §2.2.3).

use core::time::Duration;

/// An infinite duration (`DURATION_INFINITE` on the wire).
pub const DURATION_INFINITE: Duration = Duration::MAX;

/// Reliability kind, ordered `BestEffort < Reliable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReliabilityKind {
    /// Samples may be lost; no repair (wire value 1).
    BestEffort,
    /// Lost samples are repaired (wire value 2).
    Reliable,
}

/// RELIABILITY policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reliability {
    /// The kind.
    pub kind: ReliabilityKind,
    /// How long a reliable `write` may block on a full history.
    pub max_blocking_time: Duration,
}

impl Reliability {
    /// Best effort (max_blocking_time 100 ms, unused).
    pub const BEST_EFFORT: Self = Self {
        kind: ReliabilityKind::BestEffort,
        max_blocking_time: Duration::from_millis(100),
    };
    /// Reliable with max_blocking_time 100 ms.
    pub const RELIABLE: Self = Self {
        kind: ReliabilityKind::Reliable,
        max_blocking_time: Duration::from_millis(100),
    };
}

/// DURABILITY policy, ordered `Volatile < TransientLocal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Durability {
    /// No history for late joiners (wire value 0).
    #[default]
    Volatile,
    /// The writer keeps its history for late joiners (wire value 1).
    TransientLocal,
}

/// HISTORY policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum History {
    /// Keep the last `n` samples per instance (n >= 1).
    KeepLast(u32),
    /// Keep every sample (bounded by resource limits).
    KeepAll,
}

impl Default for History {
    fn default() -> Self {
        History::KeepLast(1)
    }
}

/// RESOURCE_LIMITS policy; `-1` means unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResourceLimits {
    /// Maximum samples in the history (all instances).
    pub max_samples: i32,
    /// Maximum instances.
    pub max_instances: i32,
    /// Maximum samples per instance.
    pub max_samples_per_instance: i32,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        Self {
            max_samples: -1,
            max_instances: -1,
            max_samples_per_instance: -1,
        }
    }
}

impl ResourceLimits {
    /// `max_samples` as a bound (`None` = unlimited).
    #[must_use]
    pub fn max_samples_bound(&self) -> Option<usize> {
        usize::try_from(self.max_samples).ok().filter(|&n| n > 0)
    }
}

/// Liveliness kind, ordered `Automatic < ManualByParticipant < ManualByTopic`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum LivelinessKind {
    /// Asserted by the infrastructure (wire 0).
    #[default]
    Automatic,
    /// Asserted by the participant (wire 1).
    ManualByParticipant,
    /// Asserted per writer (wire 2).
    ManualByTopic,
}

/// LIVELINESS policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Liveliness {
    /// The kind.
    pub kind: LivelinessKind,
    /// Lease duration ([`DURATION_INFINITE`] by default).
    pub lease_duration: Duration,
}

impl Default for Liveliness {
    fn default() -> Self {
        Self {
            kind: LivelinessKind::Automatic,
            lease_duration: DURATION_INFINITE,
        }
    }
}

/// OWNERSHIP policy kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Ownership {
    /// Several writers may update an instance (wire 0).
    #[default]
    Shared,
    /// Only the strongest writer updates an instance (wire 1).
    Exclusive,
}

/// DEADLINE policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Deadline {
    /// Maximum period between samples of an instance ([`DURATION_INFINITE`] by default).
    pub period: Duration,
}

impl Default for Deadline {
    fn default() -> Self {
        Self {
            period: DURATION_INFINITE,
        }
    }
}

/// PARTITION policy: partition names (empty = the default partition `""`).
/// `*` and `?` wildcards are honoured when matching.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Partition(pub Vec<String>);

/// DATA_REPRESENTATION ids (wire values).
pub mod data_representation {
    /// XCDR version 1.
    pub const XCDR1: i16 = 0;
    /// XML.
    pub const XML: i16 = 1;
    /// XCDR version 2.
    pub const XCDR2: i16 = 2;
}

/// DATA_REPRESENTATION policy: accepted/offered representations (empty = XCDR1 only).
/// A writer offers its first entry; a reader accepts any listed one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct DataRepresentation(pub Vec<i16>);

impl DataRepresentation {
    fn effective(&self) -> &[i16] {
        if self.0.is_empty() {
            &[data_representation::XCDR1]
        } else {
            &self.0
        }
    }
}

/// DDS QoS policy ids (DDS 1.4 §2.3.3, `*_QOS_POLICY_ID`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QosPolicyId {
    /// DURABILITY (2).
    Durability,
    /// DEADLINE (4).
    Deadline,
    /// OWNERSHIP (6).
    Ownership,
    /// LIVELINESS (8).
    Liveliness,
    /// PARTITION (10).
    Partition,
    /// RELIABILITY (11).
    Reliability,
    /// HISTORY (13).
    History,
    /// RESOURCE_LIMITS (14).
    ResourceLimits,
    /// DATA_REPRESENTATION (23).
    DataRepresentation,
}

impl QosPolicyId {
    /// The numeric id of the DDS specification.
    #[must_use]
    pub fn id(self) -> u32 {
        match self {
            QosPolicyId::Durability => 2,
            QosPolicyId::Deadline => 4,
            QosPolicyId::Ownership => 6,
            QosPolicyId::Liveliness => 8,
            QosPolicyId::Partition => 10,
            QosPolicyId::Reliability => 11,
            QosPolicyId::History => 13,
            QosPolicyId::ResourceLimits => 14,
            QosPolicyId::DataRepresentation => 23,
        }
    }
}

/// Writer-side batching (a FerroDDS writer QoS, not announced in discovery):
/// several DATA submessages (with an INFO_TS per distinct source timestamp and a
/// trailing HEARTBEAT) share one datagram, which any RTPS reader accepts.
///
/// With `enabled`, written samples are held until `max_bytes` of payload or
/// `max_samples` samples are pending, or until [`crate::Participant::flush`]
/// (or [`crate::Participant::write_flush`]), as RTI Connext batches. A finite
/// `max_flush_delay` also sends them once the oldest pending sample waited
/// that long (off by default, as Connext's `max_flush_delay` is infinite).
/// Samples that need fragmenting are never held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Batching {
    /// Off by default (every write is sent at once).
    pub enabled: bool,
    /// Payload bytes that trigger a flush (default 8192, RTI Perftest's default).
    pub max_bytes: usize,
    /// Samples that trigger a flush (default 0: no limit).
    pub max_samples: usize,
    /// Longest a sample is held; [`DURATION_INFINITE`] (the default): no
    /// timer, only a full batch or a flush sends.
    pub max_flush_delay: Duration,
    /// How finely the samples of a batch keep their own source timestamps (Connext's
    /// `source_timestamp_resolution`). A batch takes the timestamp of its first sample; a
    /// later sample takes the batch's current one unless it was written more than this
    /// after it, and then its own becomes the batch's. [`DURATION_INFINITE`] (the
    /// default, as Connext's): one timestamp per batch; zero: each sample its own. A
    /// datagram carries one INFO_TS per distinct timestamp, so sharing saves 12 bytes
    /// a sample on the wire and a submessage for every reader to parse.
    pub source_timestamp_resolution: Duration,
}

impl Default for Batching {
    fn default() -> Self {
        Self {
            enabled: false,
            max_bytes: 8192,
            max_samples: 0,
            max_flush_delay: DURATION_INFINITE,
            source_timestamp_resolution: DURATION_INFINITE,
        }
    }
}

impl Batching {
    /// Batching on with `max_bytes` and the other defaults.
    #[must_use]
    pub fn bytes(max_bytes: usize) -> Self {
        Self {
            enabled: true,
            max_bytes,
            ..Self::default()
        }
    }
}

/// QoS of a local DataWriter.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WriterQos {
    /// Default reliable, max_blocking_time 100 ms.
    pub reliability: Reliability,
    /// Default volatile.
    pub durability: Durability,
    /// Default KEEP_LAST 1.
    pub history: History,
    /// Default unlimited.
    pub resource_limits: ResourceLimits,
    /// Default automatic, infinite lease.
    pub liveliness: Liveliness,
    /// Default shared.
    pub ownership: Ownership,
    /// Ownership strength (default 0).
    pub ownership_strength: i32,
    /// Default infinite.
    pub deadline: Deadline,
    /// Default: the default partition.
    pub partition: Partition,
    /// Default: XCDR1.
    pub data_representation: DataRepresentation,
    /// Batching (default off).
    pub batching: Batching,
    /// Largest datagram of this writer (default `None`: the participant's
    /// `max_message_size`; larger values are capped by it).
    pub max_message_size: Option<usize>,
    /// DATA_FRAG fragment size of this writer (default `None`: the
    /// participant's `fragment_size`).
    pub fragment_size: Option<usize>,
    /// Asynchronous publishing under flow control (default false): new data
    /// of this writer is sent only through
    /// [`crate::Participant::poll_transmit_writer`], with a byte budget.
    pub flow_controlled: bool,
    /// Best-effort data of this writer follows the participant's
    /// congestion-controlled sending rate (default false: best-effort data
    /// goes out as fast as it is written, and what a bottleneck drops shows
    /// as the readers' lost samples). Reliable data is always paced while
    /// congestion control is on; a fixed rate is a flow controller's job.
    pub pace_best_effort: bool,
}

impl Default for WriterQos {
    fn default() -> Self {
        Self {
            reliability: Reliability::RELIABLE,
            durability: Durability::Volatile,
            history: History::KeepLast(1),
            resource_limits: ResourceLimits::default(),
            liveliness: Liveliness::default(),
            ownership: Ownership::Shared,
            ownership_strength: 0,
            deadline: Deadline::default(),
            partition: Partition::default(),
            data_representation: DataRepresentation::default(),
            batching: Batching::default(),
            max_message_size: None,
            fragment_size: None,
            flow_controlled: false,
            pace_best_effort: false,
        }
    }
}

/// QoS of a local DataReader.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReaderQos {
    /// Default best effort.
    pub reliability: Reliability,
    /// Default volatile.
    pub durability: Durability,
    /// Default KEEP_LAST 1.
    pub history: History,
    /// Default unlimited.
    pub resource_limits: ResourceLimits,
    /// Default automatic, infinite lease.
    pub liveliness: Liveliness,
    /// Default shared.
    pub ownership: Ownership,
    /// Default infinite.
    pub deadline: Deadline,
    /// Default: the default partition.
    pub partition: Partition,
    /// Default: XCDR1.
    pub data_representation: DataRepresentation,
    /// Multicast locators the reader announces, its own group (RTI's per-reader
    /// multicast). Default: empty: the participant's default multicast locators with
    /// [`crate::ParticipantConfig::multicast_user_data`], else none. The runtime must
    /// receive on them. Not part of matching.
    pub multicast_locators: Vec<crate::Locator>,
}

impl Default for ReaderQos {
    fn default() -> Self {
        Self {
            reliability: Reliability::BEST_EFFORT,
            durability: Durability::Volatile,
            history: History::KeepLast(1),
            resource_limits: ResourceLimits::default(),
            liveliness: Liveliness::default(),
            ownership: Ownership::Shared,
            deadline: Deadline::default(),
            partition: Partition::default(),
            data_representation: DataRepresentation::default(),
            multicast_locators: Vec::new(),
        }
    }
}

/// The QoS subset that takes part in matching, as announced in discovery.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct EndpointQos {
    pub(crate) reliability: Reliability,
    pub(crate) durability: Durability,
    pub(crate) history: History,
    pub(crate) liveliness: Liveliness,
    pub(crate) ownership: Ownership,
    pub(crate) ownership_strength: i32,
    pub(crate) deadline: Deadline,
    pub(crate) partition: Partition,
    pub(crate) data_representation: DataRepresentation,
}

impl EndpointQos {
    /// Spec defaults for a writer (RELIABLE) or a reader (BEST_EFFORT): what an
    /// absent PID means.
    pub(crate) fn spec_default(writer: bool) -> Self {
        Self {
            reliability: if writer {
                Reliability::RELIABLE
            } else {
                Reliability::BEST_EFFORT
            },
            durability: Durability::Volatile,
            history: History::KeepLast(1),
            liveliness: Liveliness::default(),
            ownership: Ownership::Shared,
            ownership_strength: 0,
            deadline: Deadline::default(),
            partition: Partition::default(),
            data_representation: DataRepresentation::default(),
        }
    }
}

impl From<&WriterQos> for EndpointQos {
    fn from(q: &WriterQos) -> Self {
        Self {
            reliability: q.reliability,
            durability: q.durability,
            history: q.history,
            liveliness: q.liveliness,
            ownership: q.ownership,
            ownership_strength: q.ownership_strength,
            deadline: q.deadline,
            partition: q.partition.clone(),
            data_representation: q.data_representation.clone(),
        }
    }
}

impl From<&ReaderQos> for EndpointQos {
    fn from(q: &ReaderQos) -> Self {
        Self {
            reliability: q.reliability,
            durability: q.durability,
            history: q.history,
            liveliness: q.liveliness,
            ownership: q.ownership,
            ownership_strength: 0,
            deadline: q.deadline,
            partition: q.partition.clone(),
            data_representation: q.data_representation.clone(),
        }
    }
}

/// Checks offered (writer) against requested (reader) QoS; returns the first
/// failing policy.
pub(crate) fn check_compatible(
    offered: &EndpointQos,
    requested: &EndpointQos,
) -> Result<(), QosPolicyId> {
    if offered.reliability.kind < requested.reliability.kind {
        return Err(QosPolicyId::Reliability);
    }
    if offered.durability < requested.durability {
        return Err(QosPolicyId::Durability);
    }
    if offered.ownership != requested.ownership {
        return Err(QosPolicyId::Ownership);
    }
    if offered.liveliness.kind < requested.liveliness.kind
        || offered.liveliness.lease_duration > requested.liveliness.lease_duration
    {
        return Err(QosPolicyId::Liveliness);
    }
    if offered.deadline.period > requested.deadline.period {
        return Err(QosPolicyId::Deadline);
    }
    if !partitions_match(&offered.partition, &requested.partition) {
        return Err(QosPolicyId::Partition);
    }
    let offered_repr = offered.data_representation.effective()[0];
    if !requested
        .data_representation
        .effective()
        .contains(&offered_repr)
    {
        return Err(QosPolicyId::DataRepresentation);
    }
    Ok(())
}

fn partitions_match(a: &Partition, b: &Partition) -> bool {
    let default = [String::new()];
    let a: &[String] = if a.0.is_empty() { &default } else { &a.0 };
    let b: &[String] = if b.0.is_empty() { &default } else { &b.0 };
    a.iter().any(|x| {
        b.iter()
            .any(|y| wildcard_match(x, y) || wildcard_match(y, x))
    })
}

/// fnmatch-style match of `name` against `pattern` (`*` and `?`), iterative
/// with single backtracking point, no allocation.
fn wildcard_match(pattern: &str, name: &str) -> bool {
    let p = pattern.as_bytes();
    let n = name.as_bytes();
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(&c) if c == b'?' || c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    while p.get(pi) == Some(&b'*') {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w() -> EndpointQos {
        EndpointQos::from(&WriterQos::default())
    }
    fn r() -> EndpointQos {
        EndpointQos::from(&ReaderQos::default())
    }

    #[test]
    fn defaults_match() {
        assert_eq!(check_compatible(&w(), &r()), Ok(()));
    }

    #[test]
    fn rules_table() {
        type Case = (
            fn(&mut EndpointQos, &mut EndpointQos),
            Result<(), QosPolicyId>,
        );
        let cases: Vec<Case> = vec![
            (
                |o, q| {
                    o.reliability = Reliability::BEST_EFFORT;
                    q.reliability = Reliability::RELIABLE;
                },
                Err(QosPolicyId::Reliability),
            ),
            (
                |o, q| {
                    o.reliability = Reliability::RELIABLE;
                    q.reliability = Reliability::RELIABLE;
                },
                Ok(()),
            ),
            (
                |_, q| q.durability = Durability::TransientLocal,
                Err(QosPolicyId::Durability),
            ),
            (|o, _| o.durability = Durability::TransientLocal, Ok(())),
            (
                |o, _| o.ownership = Ownership::Exclusive,
                Err(QosPolicyId::Ownership),
            ),
            (
                |_, q| q.liveliness.kind = LivelinessKind::ManualByTopic,
                Err(QosPolicyId::Liveliness),
            ),
            (
                |_, q| q.liveliness.lease_duration = Duration::from_secs(1),
                Err(QosPolicyId::Liveliness),
            ),
            (
                |o, q| {
                    o.liveliness.lease_duration = Duration::from_secs(1);
                    q.liveliness.lease_duration = Duration::from_secs(2);
                },
                Ok(()),
            ),
            (
                |_, q| q.deadline.period = Duration::from_secs(1),
                Err(QosPolicyId::Deadline),
            ),
            (
                |o, _| o.partition = Partition(vec!["a".into()]),
                Err(QosPolicyId::Partition),
            ),
            (
                |o, q| {
                    o.partition = Partition(vec!["sensors".into()]);
                    q.partition = Partition(vec!["sen*".into()]);
                },
                Ok(()),
            ),
            (
                |o, _| o.data_representation = DataRepresentation(vec![2]),
                Err(QosPolicyId::DataRepresentation),
            ),
            (
                |o, q| {
                    o.data_representation = DataRepresentation(vec![2]);
                    q.data_representation = DataRepresentation(vec![0, 2]);
                },
                Ok(()),
            ),
        ];
        for (i, (f, want)) in cases.into_iter().enumerate() {
            let (mut o, mut q) = (w(), r());
            f(&mut o, &mut q);
            assert_eq!(check_compatible(&o, &q), want, "case {i}");
        }
    }

    #[test]
    fn wildcards() {
        assert!(wildcard_match("a*c", "abbbc"));
        assert!(wildcard_match("a?c", "abc"));
        assert!(!wildcard_match("a?c", "abbc"));
        assert!(wildcard_match("*", ""));
        assert!(!wildcard_match("", "x"));
        assert!(wildcard_match("*b*", "abc"));
    }

    #[test]
    fn policy_ids() {
        assert_eq!(QosPolicyId::Reliability.id(), 11);
        assert_eq!(QosPolicyId::Durability.id(), 2);
    }
}
