//! FerroDDS: a DDS implementation speaking the standard RTPS 2.x wire protocol over UDPv4.
//!
//! # Contract
//!
//! * **Entities.** [`DomainParticipant`] → [`Topic`] / [`Publisher`] / [`Subscriber`] →
//!   [`DataWriter<T>`] / [`DataReader<T>`] for any `T: ferrodds_cdr::TopicType`
//!   (`#[derive(TopicType)]`). Handles are `Send + Sync`; dropping a writer or reader deletes
//!   it (remote peers see it unmatched); dropping the participant deletes everything, sends
//!   the SEDP disposals best-effort, joins the threads and closes the sockets. Entity
//!   handles that outlive their participant return [`DdsError::AlreadyDeleted`].
//! * **Threads.** Each participant runs one receive thread per UDP socket (metatraffic and
//!   user unicast, plus the multicast sockets when multicast is on) and one event thread
//!   (plus a capture writer thread while a network capture runs, [`CaptureConfig`], and a publisher
//!   thread that paces asynchronous writers, [`PublishMode::Asynchronous`], once one
//!   exists).
//!   A receive thread parses, runs the protocol engine and delivers in the same thread:
//!   samples enter the reader's history in the engine, and waiting readers and wait sets
//!   are woken and listeners are called there (after the engine lock is released). The event thread sleeps until the engine's next timeout
//!   (heartbeats, SPDP announcements, lease checks) and is woken early when an operation
//!   moves that timeout forward.
//! * **Write path.** [`DataWriter::write`] serializes (XCDR1 little-endian) into a reusable
//!   per-writer buffer, gives the change to the engine and sends the resulting datagrams
//!   **from the calling thread** — no hand-off to another thread (unless the writer opts
//!   into batching or asynchronous publishing).
//! * **What blocks.** `write` blocks only with KEEP_ALL history full of unacknowledged
//!   samples, for at most `reliability.max_blocking_time`, then returns
//!   [`DdsError::Timeout`]. [`DataWriter::wait_for_acknowledgments`],
//!   [`DataReader::wait_for_data`], [`WaitSet::wait`] and the `wait_for_*` helpers block up
//!   to their timeout. Nothing else blocks except on the locks below.
//! * **Locking.** One mutex guards the protocol engine (held while running an engine
//!   operation; never while decoding a taken or read sample or calling a listener). The
//!   datagram a write or a received datagram produces is sent after the lock is released
//!   (only further datagrams of the same operation, e.g. fragments, are sent under it).
//!   Each endpoint has small status mutexes of its own, and each reader one for what it
//!   reuses between takes. Listeners run with no runtime lock held, so they may call any
//!   API. `docs/architecture.md` walks one sample through every lock and copy.
//! * **Reader history.** A reader's history is the engine's reader cache: it applies
//!   HISTORY (KEEP_LAST depth per instance, O(1) per sample) and tracks instance and
//!   read states; [`DataReader::take`] moves samples out of it under the engine lock and
//!   decodes them after releasing it, lending them as [`Samples`] whose storage is reused.
//!   A KEEP_ALL reader with `resource_limits.max_samples` holds at most that many; further
//!   samples stay unacknowledged, so a strict-reliable writer blocks until the application
//!   takes (end-to-end back-pressure). Unbounded KEEP_ALL readers grow with what the
//!   application leaves untaken. Keyed samples sent without a key hash (Cyclone DDS) are
//!   decoded once more on arrival, under the engine lock, to find their instance.
//! * **Configuration.** [`Config`] (builder setters, documented defaults).
//!   [`DomainParticipant::new`] applies the environment overrides `FERRODDS_INTERFACE`
//!   (interface name or IPv4 address), `FERRODDS_PEERS` (comma-separated IPv4 unicast
//!   discovery peers) and `FERRODDS_MULTICAST` (`0`/`1`);
//!   [`DomainParticipant::with_config`] uses exactly the configuration it is given.
//! * **Errors.** Every fallible call returns [`DdsError`], mirroring the DDS return codes,
//!   with lower-layer errors as typed sources. Runtime failures in threads (a failed send, a
//!   malformed datagram) never panic; they are logged with `tracing`. `write` takes the
//!   sample by reference, so a failed write leaves it with the caller.
//! * **DDS Security** (cargo feature `security`, default on). [`Config::security`] with a
//!   [`SecurityConfig`] (the standard `dds.sec.*` properties) makes the participant
//!   authenticate remote participants (PKI-DH handshake) and validate their permissions
//!   before any endpoint discovery with them; participants without security are ignored
//!   unless the governance allows unauthenticated ones. Bad files or documents fail
//!   creation with [`DdsError::Security`] naming them. Traffic is protected as the
//!   governance asks (RTPS message, submessage and payload protection, SIGN or ENCRYPT,
//!   with origin authentication; see the README for what is not yet).
//!   [`DomainParticipant::authenticated_participants`],
//!   [`DomainParticipant::authentication_failures`].
//! * **Shared memory** (cargo feature `shared-memory`, default on; [`Config::shared_memory`]).
//!   FerroDDS peers on this host exchange user data through each receiver's segment in
//!   `/dev/shm` instead of UDP. A sample of 16 KiB or more for readers all on this host goes
//!   by reference: the writer puts it in a chunk of its participant's loan pool (a second
//!   file beside its segment) and sends a 20-byte reference, to readers whose participants
//!   announced (in SPDP) that they read such references; each reader copies it out once,
//!   checked by the chunk's generation. A released chunk waits in a quarantine of the last
//!   few released before it is reused; a reader slower than that finds it reused: a lost
//!   sample (a reliable writer repairs it with the bytes while its history holds it).
//!   [`DataWriter::loan_sample`] / [`DataWriter::write_loan`] let the application write
//!   such a sample in place, in its serialized form ([`FlatType`]), so the write copies
//!   nothing. A reader set in place ([`DataReader::set_in_place`]) copies nothing either:
//!   it keeps a reliable writer's reference, holds back its acknowledgement (so the writer
//!   keeps the chunk) and [`DataReader::take_serialized_each`] hands the writer's chunk
//!   itself ([`SerializedSample::is_consistent`] as RTI's `is_data_consistent`).
//! * **Not yet.** Content filters, deadline/liveliness enforcement in the API, per-endpoint
//!   engine locks, an async facade, a serde `Config`.
//! * **Network capture.** [`Config::capture`] or [`DomainParticipant::start_capture`]
//!   (then `pause_capture`, `resume_capture`, `stop_capture`, `capture_stats`): each RTPS
//!   message sent or received is copied once into a bounded buffer (no allocation, no
//!   system call) that a writer thread writes to a pcapng file every 10 ms; when the
//!   buffer is full the message is dropped from the capture and counted (default) or the
//!   thread waits ([`CaptureOverflow::Block`]). Without a capture the cost is one relaxed
//!   atomic load per message.

#![forbid(unsafe_code)]

mod capture;
mod capture_file;
#[cfg(feature = "shared-memory")]
mod chunks;
mod config;
mod entity;
mod error;
mod loan;
mod participant;
mod qos;
mod qos_xml;
mod reader;
mod runtime;
mod sample;
mod status;
mod sync;
mod typesupport;
mod waitset;
mod writer;

pub use capture::{
    CaptureConfig, CaptureOutput, CaptureOverflow, CaptureStats,
    DECRYPTED_COMMENT as CAPTURE_DECRYPTED_COMMENT, FLUSH_INTERVAL as CAPTURE_FLUSH_INTERVAL,
};
pub use config::{
    Config, Interface, SecurityConfig, Transports, ENV_CONGESTION_CONTROL, ENV_INTERFACE,
    ENV_MULTICAST, ENV_PEERS, ENV_STATS,
};
pub use error::{DdsError, DdsResult};
pub use ferrodds_rtps::PeerLimits;
pub use ferrodds_transport::{
    TransportKind, TransportStats, WanConfig, DEFAULT_TCP_PORT, DEFAULT_WAN_PORT,
};
#[cfg(feature = "tls")]
pub use ferrodds_transport_tls::{TlsConfig, TlsError};
pub use loan::{FlatType, SampleLoan};
pub use participant::{
    DomainParticipant, DynamicTypeSupport, Publisher, Subscriber, Topic, VENDOR_ID,
};
pub use qos::{
    Batching, DataReaderQos, DataWriterQos, Durability, FlowController, History, Liveliness,
    LivelinessKind, Ownership, PublishMode, PublisherQos, QosPolicyId, Reliability,
    ReliabilityKind, ResourceLimits, SubscriberQos, TopicQos,
};
pub use qos_xml::{QosProvider, QosXmlError};
pub use reader::{DataReader, Samples, SerializedSample};
pub use runtime::time_to_unix_nanos;
pub use sample::{InstanceHandle, InstanceState, Sample, SampleInfo, SampleState};
pub use status::{
    DataReaderListener, DataWriterListener, OfferedIncompatibleQosStatus, PublicationMatchedStatus,
    RequestedIncompatibleQosStatus, SampleLostStatus, StatusMask, SubscriptionMatchedStatus,
};
pub use waitset::{Condition, GuardCondition, ReadCondition, StatusCondition, WaitSet};
pub use writer::DataWriter;

/// Re-exports of the CDR layer: the `TopicType` trait and derive, and the shipped types.
pub use ferrodds_cdr::{self as cdr, TopicType};
/// GUIDs and RTPS time as used in sample infos and statuses.
pub use ferrodds_rtps::{Guid, GuidPrefix, Time};

#[cfg(test)]
mod tests {
    use super::*;
    use ferrodds_cdr::types::ShapeType;

    fn send_sync<X: Send + Sync>() {}

    #[test]
    fn handles_are_send_and_sync() {
        send_sync::<DomainParticipant>();
        send_sync::<Publisher>();
        send_sync::<Subscriber>();
        send_sync::<Topic<ShapeType>>();
        send_sync::<DataWriter<ShapeType>>();
        send_sync::<DataReader<ShapeType>>();
        send_sync::<WaitSet>();
        send_sync::<Condition>();
        send_sync::<DdsError>();
    }
}
