//! QoS policies of the public API and their mapping onto the protocol engine's QoS values.
//!
//! Defaults follow the DDS specification: writers are RELIABLE (max_blocking_time 100 ms),
//! readers BEST_EFFORT; both VOLATILE and KEEP_LAST(1), unlimited resource limits, AUTOMATIC
//! liveliness with an infinite lease.

use std::time::Duration;

/// `RELIABILITY` kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReliabilityKind {
    /// Samples are sent once; losses are not repaired.
    BestEffort,
    /// Losses are repaired with HEARTBEAT/ACKNACK; with KEEP_ALL on both sides nothing is lost.
    Reliable,
}

/// `RELIABILITY` policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reliability {
    /// Best effort or reliable.
    pub kind: ReliabilityKind,
    /// How long a KEEP_ALL writer blocks in `write` when its history is full of
    /// unacknowledged samples before returning [`crate::DdsError::Timeout`].
    pub max_blocking_time: Duration,
}

impl Reliability {
    /// BEST_EFFORT.
    pub const fn best_effort() -> Self {
        Self {
            kind: ReliabilityKind::BestEffort,
            max_blocking_time: Duration::from_millis(100),
        }
    }
    /// RELIABLE with a max_blocking_time of 100 ms.
    pub const fn reliable() -> Self {
        Self {
            kind: ReliabilityKind::Reliable,
            max_blocking_time: Duration::from_millis(100),
        }
    }
}

/// `DURABILITY` kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Durability {
    /// Late-joining readers get only samples written after they matched.
    Volatile,
    /// The writer keeps its history (per `history`) for late-joining TRANSIENT_LOCAL readers.
    TransientLocal,
}

/// `HISTORY` policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum History {
    /// Keep the last `n` samples per instance (`n >= 1`).
    KeepLast(u32),
    /// Keep everything, bounded by the resource limits.
    KeepAll,
}

/// `RESOURCE_LIMITS` policy (`None` = unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ResourceLimits {
    /// Maximum number of samples kept.
    pub max_samples: Option<u32>,
    /// Maximum number of instances.
    pub max_instances: Option<u32>,
    /// Maximum number of samples per instance.
    pub max_samples_per_instance: Option<u32>,
}

/// `LIVELINESS` kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LivelinessKind {
    /// Asserted by the middleware.
    Automatic,
    /// Asserted by any action of the participant.
    ManualByParticipant,
    /// Asserted by writing.
    ManualByTopic,
}

/// `LIVELINESS` policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Liveliness {
    /// Who asserts liveliness.
    pub kind: LivelinessKind,
    /// Lease duration; `None` = infinite.
    pub lease_duration: Option<Duration>,
}

impl Default for Liveliness {
    fn default() -> Self {
        Self {
            kind: LivelinessKind::Automatic,
            lease_duration: None,
        }
    }
}

/// `OWNERSHIP` kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Ownership {
    /// Every writer may update every instance.
    #[default]
    Shared,
    /// Only the strongest writer updates an instance.
    Exclusive,
}

/// QoS of a [`crate::DataWriter`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DataWriterQos {
    /// Default: RELIABLE, max_blocking_time 100 ms.
    pub reliability: Reliability,
    /// Default: VOLATILE.
    pub durability: Durability,
    /// Default: KEEP_LAST(1).
    pub history: History,
    /// Default: unlimited.
    pub resource_limits: ResourceLimits,
    /// Default: AUTOMATIC, infinite lease.
    pub liveliness: Liveliness,
    /// Default: SHARED.
    pub ownership: Ownership,
    /// Deadline period; default `None` = infinite.
    pub deadline: Option<Duration>,
    /// Batching of small samples (default off). Batched samples wait for
    /// [`crate::DataWriter::flush`], a full batch or `max_flush_delay`; use a
    /// KEEP_ALL (or deep enough KEEP_LAST) history, since a held sample can be
    /// replaced by a newer one of its instance.
    pub batching: Batching,
    /// Synchronous (default: `write` sends from the caller's thread) or
    /// asynchronous with a flow controller.
    pub publish_mode: PublishMode,
    /// Best-effort only: whether this writer's data follows the sending rate
    /// that congestion control measured on the participant's reliable
    /// traffic (default false: best-effort data goes out as fast as it is
    /// written, and what the network drops shows as the readers'
    /// [`crate::SampleLostStatus`]). Reliable data is always paced while
    /// congestion control is on; for a fixed rate use
    /// [`DataWriterQos::asynchronous`] with a [`FlowController`].
    pub pace_best_effort: bool,
}

impl Default for DataWriterQos {
    fn default() -> Self {
        Self {
            reliability: Reliability::reliable(),
            durability: Durability::Volatile,
            history: History::KeepLast(1),
            resource_limits: ResourceLimits::default(),
            liveliness: Liveliness::default(),
            ownership: Ownership::Shared,
            deadline: None,
            batching: Batching::default(),
            publish_mode: PublishMode::Synchronous,
            pace_best_effort: false,
        }
    }
}

impl DataWriterQos {
    /// Sets the batching policy.
    pub fn batching(mut self, b: Batching) -> Self {
        self.batching = b;
        self
    }

    /// Asynchronous publishing paced by `flow_controller`.
    pub fn asynchronous(mut self, flow_controller: FlowController) -> Self {
        self.publish_mode = PublishMode::Asynchronous(flow_controller);
        self
    }
}

/// Writer-side batching (a FerroDDS writer QoS, not announced in discovery):
/// several DATA submessages (with an INFO_TS per distinct source timestamp and a
/// trailing HEARTBEAT) share one datagram, which any RTPS reader accepts.
///
/// With `enabled`, written samples are held until `max_bytes` of payload or
/// `max_samples` samples are pending, or until [`crate::DataWriter::flush`]
/// (or [`crate::DataWriter::write_flush`]), as RTI Connext batches. A finite
/// `max_flush_delay` also sends them once the oldest pending sample waited
/// that long (off by default: Connext's `max_flush_delay` is infinite).
/// Samples that need fragmenting are never held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Batching {
    /// Off by default (every write is sent at once).
    pub enabled: bool,
    /// Payload bytes that trigger a flush (default 8192, RTI Perftest's default).
    pub max_bytes: usize,
    /// Samples that trigger a flush (default 0: no limit).
    pub max_samples: usize,
    /// Longest a sample is held; `Duration::MAX` (the default) means no
    /// timer: only a full batch or a flush sends.
    pub max_flush_delay: Duration,
    /// How finely the samples of a batch keep their own source timestamps (Connext's
    /// `source_timestamp_resolution`): a batch takes its first sample's timestamp, and a
    /// later sample takes the batch's current one unless it was written more than this
    /// after it. `Duration::MAX` (the default, as Connext's): one timestamp per batch,
    /// which readers see as every sample's `source_timestamp`; `Duration::ZERO`: each
    /// sample its own. A datagram carries one INFO_TS per distinct timestamp (12 bytes).
    pub source_timestamp_resolution: Duration,
}

impl Default for Batching {
    /// The engine's defaults (off; 8192 bytes, no sample limit, no flush timer).
    fn default() -> Self {
        let e = ferrodds_rtps::Batching::default();
        Self {
            enabled: e.enabled,
            max_bytes: e.max_bytes,
            max_samples: e.max_samples,
            max_flush_delay: e.max_flush_delay,
            source_timestamp_resolution: e.source_timestamp_resolution,
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

/// PUBLISH_MODE: who sends a writer's new data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PublishMode {
    /// `write` serializes and sends from the caller's thread (lowest latency).
    #[default]
    Synchronous,
    /// `write` queues the sample and returns; the participant's publisher
    /// thread sends it at the pace of the token bucket.
    Asynchronous(FlowController),
}

/// A token-bucket flow controller (RTI's `token_bucket` semantics): every
/// `period`, `tokens_per_period` tokens of `bytes_per_token` bytes are added,
/// up to `max_tokens`; a datagram is sent only when enough tokens are there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowController {
    /// Bucket size in tokens (must hold one maximum-size datagram).
    pub max_tokens: u32,
    /// Tokens added each period.
    pub tokens_per_period: u32,
    /// Bytes one token allows.
    pub bytes_per_token: u32,
    /// Refill period.
    pub period: Duration,
}

impl FlowController {
    /// RTI Perftest's `1Gbps`: 20 tokens of 64 KiB per 10 ms, bucket 30 (≈1.05 Gbit/s).
    pub const GBPS_1: Self = Self {
        max_tokens: 30,
        tokens_per_period: 20,
        bytes_per_token: 65536,
        period: Duration::from_millis(10),
    };
    /// RTI Perftest's `10Gbps`: 200 tokens of 64 KiB per 10 ms, bucket 300.
    pub const GBPS_10: Self = Self {
        max_tokens: 300,
        tokens_per_period: 200,
        bytes_per_token: 65536,
        period: Duration::from_millis(10),
    };

    /// About `bytes_per_second`, refilled every 10 ms in 1 KiB tokens, with a
    /// bucket of 1.5 periods (at least 64 KiB).
    pub fn bytes_per_second(bytes_per_second: u64) -> Self {
        let per_period = (bytes_per_second / 100 / 1024).clamp(1, u64::from(u32::MAX / 2)) as u32;
        Self {
            max_tokens: (per_period + per_period / 2).max(64),
            tokens_per_period: per_period,
            bytes_per_token: 1024,
            period: Duration::from_millis(10),
        }
    }

    /// Bucket capacity in bytes.
    pub fn capacity(&self) -> u64 {
        u64::from(self.max_tokens) * u64::from(self.bytes_per_token)
    }

    /// Bytes added per period.
    pub fn bytes_per_period(&self) -> u64 {
        u64::from(self.tokens_per_period) * u64::from(self.bytes_per_token)
    }
}

/// QoS of a [`crate::DataReader`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DataReaderQos {
    /// Default: BEST_EFFORT.
    pub reliability: Reliability,
    /// Default: VOLATILE.
    pub durability: Durability,
    /// Default: KEEP_LAST(1).
    pub history: History,
    /// Default: unlimited.
    pub resource_limits: ResourceLimits,
    /// Default: AUTOMATIC, infinite lease.
    pub liveliness: Liveliness,
    /// Default: SHARED.
    pub ownership: Ownership,
    /// Deadline period; default `None` = infinite.
    pub deadline: Option<Duration>,
    /// The multicast group the reader announces and receives its samples on (RTI's
    /// TRANSPORT_MULTICAST): one of the participant's [`crate::Config::multicast_groups`].
    /// Default `None`: the participant's user-data group with
    /// [`crate::Config::multicast_user_data`], else unicast only.
    pub multicast_group: Option<std::net::Ipv4Addr>,
}

impl Default for DataReaderQos {
    fn default() -> Self {
        Self {
            reliability: Reliability::best_effort(),
            durability: Durability::Volatile,
            history: History::KeepLast(1),
            resource_limits: ResourceLimits::default(),
            liveliness: Liveliness::default(),
            ownership: Ownership::Shared,
            deadline: None,
            multicast_group: None,
        }
    }
}

macro_rules! endpoint_qos_setters {
    ($t:ty) => {
        impl $t {
            /// Sets RELIABLE reliability (keeps `max_blocking_time`).
            pub fn reliable(mut self) -> Self {
                self.reliability.kind = ReliabilityKind::Reliable;
                self
            }
            /// Sets BEST_EFFORT reliability.
            pub fn best_effort(mut self) -> Self {
                self.reliability.kind = ReliabilityKind::BestEffort;
                self
            }
            /// Sets the reliability `max_blocking_time`.
            pub fn max_blocking_time(mut self, d: Duration) -> Self {
                self.reliability.max_blocking_time = d;
                self
            }
            /// Sets TRANSIENT_LOCAL durability.
            pub fn transient_local(mut self) -> Self {
                self.durability = Durability::TransientLocal;
                self
            }
            /// Sets VOLATILE durability.
            pub fn volatile(mut self) -> Self {
                self.durability = Durability::Volatile;
                self
            }
            /// Sets KEEP_ALL history.
            pub fn keep_all(mut self) -> Self {
                self.history = History::KeepAll;
                self
            }
            /// Sets KEEP_LAST(depth) history.
            pub fn keep_last(mut self, depth: u32) -> Self {
                self.history = History::KeepLast(depth);
                self
            }
            /// Sets the resource limits.
            pub fn resource_limits(mut self, limits: ResourceLimits) -> Self {
                self.resource_limits = limits;
                self
            }
            /// Sets the liveliness policy.
            pub fn liveliness(mut self, l: Liveliness) -> Self {
                self.liveliness = l;
                self
            }
            /// Sets the deadline period.
            pub fn deadline(mut self, d: Option<Duration>) -> Self {
                self.deadline = d;
                self
            }
            /// Sets the ownership kind.
            pub fn ownership(mut self, o: Ownership) -> Self {
                self.ownership = o;
                self
            }

            pub(crate) fn validate(&self) -> Result<(), crate::DdsError> {
                if let History::KeepLast(0) = self.history {
                    return Err(crate::DdsError::BadParameter {
                        what: "KEEP_LAST depth must be at least 1",
                    });
                }
                if let (History::KeepLast(d), Some(m)) =
                    (self.history, self.resource_limits.max_samples_per_instance)
                {
                    if d > m {
                        return Err(crate::DdsError::BadParameter {
                            what: "KEEP_LAST depth exceeds max_samples_per_instance",
                        });
                    }
                }
                Ok(())
            }
        }
    };
}
endpoint_qos_setters!(DataWriterQos);
endpoint_qos_setters!(DataReaderQos);

/// QoS of a [`crate::Topic`] (nothing configurable yet; endpoint QoS is set per endpoint).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TopicQos {}

/// QoS of a [`crate::Publisher`]: the `PARTITION` its writers publish in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PublisherQos {
    /// Partition names; empty = the default partition `""`.
    pub partition: Vec<String>,
}

/// QoS of a [`crate::Subscriber`]: the `PARTITION` its readers subscribe to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SubscriberQos {
    /// Partition names; empty = the default partition `""`.
    pub partition: Vec<String>,
}

impl PublisherQos {
    /// Publisher QoS with these partitions.
    pub fn with_partition<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        Self {
            partition: names.into_iter().map(Into::into).collect(),
        }
    }
}

impl SubscriberQos {
    /// Subscriber QoS with these partitions.
    pub fn with_partition<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        Self {
            partition: names.into_iter().map(Into::into).collect(),
        }
    }
}

/// DDS QoS policy ids (DDS 1.4 §2.3.3, `*_QOS_POLICY_ID`): which policy made a match fail
/// (`last_policy_id` of the incompatible-QoS statuses).
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
    /// Another policy, by its numeric id.
    Other(u32),
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
            QosPolicyId::Other(id) => id,
        }
    }

    /// The policy the engine reported.
    pub(crate) fn from_engine(p: ferrodds_rtps::QosPolicyId) -> Self {
        use ferrodds_rtps::QosPolicyId as E;
        match p {
            E::Durability => QosPolicyId::Durability,
            E::Deadline => QosPolicyId::Deadline,
            E::Ownership => QosPolicyId::Ownership,
            E::Liveliness => QosPolicyId::Liveliness,
            E::Partition => QosPolicyId::Partition,
            E::Reliability => QosPolicyId::Reliability,
            E::History => QosPolicyId::History,
            E::ResourceLimits => QosPolicyId::ResourceLimits,
            E::DataRepresentation => QosPolicyId::DataRepresentation,
            other => QosPolicyId::Other(other.id()),
        }
    }
}

fn engine_batching(b: Batching) -> ferrodds_rtps::Batching {
    ferrodds_rtps::Batching {
        enabled: b.enabled,
        max_bytes: b.max_bytes,
        max_samples: b.max_samples,
        max_flush_delay: b.max_flush_delay,
        source_timestamp_resolution: b.source_timestamp_resolution,
    }
}

fn engine_reliability(r: Reliability) -> ferrodds_rtps::Reliability {
    ferrodds_rtps::Reliability {
        kind: match r.kind {
            ReliabilityKind::BestEffort => ferrodds_rtps::ReliabilityKind::BestEffort,
            ReliabilityKind::Reliable => ferrodds_rtps::ReliabilityKind::Reliable,
        },
        max_blocking_time: r.max_blocking_time,
    }
}

fn engine_durability(d: Durability) -> ferrodds_rtps::Durability {
    match d {
        Durability::Volatile => ferrodds_rtps::Durability::Volatile,
        Durability::TransientLocal => ferrodds_rtps::Durability::TransientLocal,
    }
}

fn engine_history(h: History) -> ferrodds_rtps::History {
    match h {
        History::KeepLast(n) => ferrodds_rtps::History::KeepLast(n),
        History::KeepAll => ferrodds_rtps::History::KeepAll,
    }
}

fn limit(v: Option<u32>) -> i32 {
    v.map_or(-1, |n| i32::try_from(n).unwrap_or(i32::MAX))
}

fn engine_limits(r: ResourceLimits) -> ferrodds_rtps::ResourceLimits {
    ferrodds_rtps::ResourceLimits {
        max_samples: limit(r.max_samples),
        max_instances: limit(r.max_instances),
        max_samples_per_instance: limit(r.max_samples_per_instance),
    }
}

fn engine_liveliness(l: Liveliness) -> ferrodds_rtps::Liveliness {
    ferrodds_rtps::Liveliness {
        kind: match l.kind {
            LivelinessKind::Automatic => ferrodds_rtps::LivelinessKind::Automatic,
            LivelinessKind::ManualByParticipant => {
                ferrodds_rtps::LivelinessKind::ManualByParticipant
            }
            LivelinessKind::ManualByTopic => ferrodds_rtps::LivelinessKind::ManualByTopic,
        },
        lease_duration: l
            .lease_duration
            .unwrap_or(ferrodds_rtps::qos::DURATION_INFINITE),
    }
}

fn engine_ownership(o: Ownership) -> ferrodds_rtps::Ownership {
    match o {
        Ownership::Shared => ferrodds_rtps::Ownership::Shared,
        Ownership::Exclusive => ferrodds_rtps::Ownership::Exclusive,
    }
}

fn engine_deadline(d: Option<Duration>) -> ferrodds_rtps::Deadline {
    ferrodds_rtps::Deadline {
        period: d.unwrap_or(ferrodds_rtps::qos::DURATION_INFINITE),
    }
}

impl DataWriterQos {
    pub(crate) fn to_engine(&self, partition: &[String]) -> ferrodds_rtps::WriterQos {
        ferrodds_rtps::WriterQos {
            reliability: engine_reliability(self.reliability),
            durability: engine_durability(self.durability),
            history: engine_history(self.history),
            resource_limits: engine_limits(self.resource_limits),
            liveliness: engine_liveliness(self.liveliness),
            ownership: engine_ownership(self.ownership),
            deadline: engine_deadline(self.deadline),
            partition: ferrodds_rtps::Partition(partition.to_vec()),
            batching: engine_batching(self.batching),
            flow_controlled: matches!(self.publish_mode, PublishMode::Asynchronous(_)),
            pace_best_effort: self.pace_best_effort,
            ..ferrodds_rtps::WriterQos::default()
        }
    }
}

impl DataReaderQos {
    /// Sets [`DataReaderQos::multicast_group`].
    pub fn multicast_group(mut self, group: Option<std::net::Ipv4Addr>) -> Self {
        self.multicast_group = group;
        self
    }

    // `..default()` keeps this compiling with defaults when the engine QoS gains fields.
    #[allow(clippy::needless_update)]
    pub(crate) fn to_engine(&self, partition: &[String]) -> ferrodds_rtps::ReaderQos {
        ferrodds_rtps::ReaderQos {
            reliability: engine_reliability(self.reliability),
            durability: engine_durability(self.durability),
            history: engine_history(self.history),
            resource_limits: engine_limits(self.resource_limits),
            liveliness: engine_liveliness(self.liveliness),
            ownership: engine_ownership(self.ownership),
            deadline: engine_deadline(self.deadline),
            partition: ferrodds_rtps::Partition(partition.to_vec()),
            // readers decode both XCDR1 and XCDR2 payloads
            data_representation: ferrodds_rtps::DataRepresentation(vec![
                ferrodds_rtps::qos::data_representation::XCDR1,
                ferrodds_rtps::qos::data_representation::XCDR2,
            ]),
            ..ferrodds_rtps::ReaderQos::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batching_maps_onto_the_engine() {
        assert_eq!(
            engine_batching(Batching::default()),
            ferrodds_rtps::Batching::default()
        );
        assert_eq!(
            engine_batching(Batching::bytes(1000)),
            ferrodds_rtps::Batching::bytes(1000)
        );
        let b = Batching {
            max_samples: 7,
            max_flush_delay: Duration::from_millis(5),
            source_timestamp_resolution: Duration::from_micros(3),
            ..Batching::bytes(1 << 20)
        };
        assert_eq!(
            engine_batching(b),
            ferrodds_rtps::Batching {
                enabled: true,
                max_bytes: 1 << 20,
                max_samples: 7,
                max_flush_delay: Duration::from_millis(5),
                source_timestamp_resolution: Duration::from_micros(3),
            }
        );
    }

    #[test]
    fn defaults_follow_the_spec() {
        let w = DataWriterQos::default();
        assert_eq!(w.reliability.kind, ReliabilityKind::Reliable);
        assert_eq!(w.reliability.max_blocking_time, Duration::from_millis(100));
        let r = DataReaderQos::default();
        assert_eq!(r.reliability.kind, ReliabilityKind::BestEffort);
        assert_eq!(r.history, History::KeepLast(1));
        assert_eq!(w.to_engine(&[]), ferrodds_rtps::WriterQos::default());
        let re = r.to_engine(&[]);
        assert_eq!(
            re.reliability,
            ferrodds_rtps::ReaderQos::default().reliability
        );
        assert_eq!(re.history, ferrodds_rtps::ReaderQos::default().history);
        assert_eq!(
            re.data_representation.0,
            vec![0, 2],
            "readers accept XCDR1 and XCDR2"
        );
    }

    #[test]
    fn mapping_carries_every_policy() {
        let w = DataWriterQos::default()
            .best_effort()
            .transient_local()
            .keep_all()
            .resource_limits(ResourceLimits {
                max_samples: Some(10),
                ..ResourceLimits::default()
            })
            .deadline(Some(Duration::from_secs(1)));
        let e = w.to_engine(&["p1".to_owned()]);
        assert_eq!(
            e.reliability.kind,
            ferrodds_rtps::ReliabilityKind::BestEffort
        );
        assert_eq!(e.durability, ferrodds_rtps::Durability::TransientLocal);
        assert_eq!(e.history, ferrodds_rtps::History::KeepAll);
        assert_eq!(e.resource_limits.max_samples, 10);
        assert_eq!(e.resource_limits.max_instances, -1);
        assert_eq!(e.deadline.period, Duration::from_secs(1));
        assert_eq!(e.partition.0, vec!["p1".to_owned()]);
        let r = DataReaderQos::default()
            .reliable()
            .keep_last(5)
            .to_engine(&[]);
        assert_eq!(r.reliability.kind, ferrodds_rtps::ReliabilityKind::Reliable);
        assert_eq!(r.history, ferrodds_rtps::History::KeepLast(5));
    }

    #[test]
    fn validation_rejects_inconsistent_history() {
        assert!(DataWriterQos::default().keep_last(0).validate().is_err());
        let r = DataReaderQos::default()
            .keep_last(5)
            .resource_limits(ResourceLimits {
                max_samples_per_instance: Some(2),
                ..ResourceLimits::default()
            });
        assert!(r.validate().is_err());
        assert!(DataReaderQos::default().keep_last(5).validate().is_ok());
    }
}
