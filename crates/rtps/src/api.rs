//! Value types of the engine API: time, configuration, handles, requests,
//! events, samples, errors and statistics.

use crate::qos::{QosPolicyId, ReaderQos, WriterQos};
use crate::reassembly::ReassemblyLimits;
use crate::types::ChangeKind;
use crate::{Guid, GuidPrefix, Locator, SequenceNumber, Time};

/// Participant configuration. `Default` fills everything but the GUID prefix
/// and the locators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParticipantConfig {
    /// DDS domain id (default 0).
    pub domain_id: u32,
    /// Participant id from the transport's port probing (default 0).
    pub participant_id: u32,
    /// GUID prefix chosen by the runtime (vendor bytes + random).
    pub guid_prefix: GuidPrefix,
    /// Unicast locators for builtin (discovery) traffic.
    pub metatraffic_unicast_locators: Vec<Locator>,
    /// Multicast locators for builtin traffic.
    pub metatraffic_multicast_locators: Vec<Locator>,
    /// Unicast locators for user traffic.
    pub default_unicast_locators: Vec<Locator>,
    /// Multicast locators for user traffic.
    pub default_multicast_locators: Vec<Locator>,
    /// Where SPDP announcements go: the SPDP multicast group and/or unicast initial peers.
    pub spdp_destinations: Vec<Locator>,
    /// Participant lease duration announced to peers (default 20 s).
    pub lease_duration: core::time::Duration,
    /// SPDP announcement period (default 3 s; the first announcement is immediate).
    pub spdp_period: core::time::Duration,
    /// HEARTBEAT period while unacknowledged data exists (default 100 ms).
    pub heartbeat_period: core::time::Duration,
    /// Delay before answering an ACKNACK (default 0: at once).
    pub nack_response_delay: core::time::Duration,
    /// Largest datagram `poll_transmit` builds (default 65000). Writers may
    /// lower it ([`WriterQos::max_message_size`]).
    pub max_message_size: usize,
    /// DATA_FRAG fragment size in bytes (default 0: the largest that fits a
    /// datagram of `max_message_size`; otherwise clamped to 64..=65280 and to
    /// what fits). Writers may override it ([`WriterQos::fragment_size`]).
    pub fragment_size: usize,
    /// Bounds of DATA_FRAG reassembly on the receive side; its
    /// `max_sample_size` is also the largest payload `write` accepts.
    pub reassembly: ReassemblyLimits,
    /// Bounds on the discovery and out-of-order state remote peers can make
    /// this participant keep.
    pub peer_limits: PeerLimits,
    /// Optional PID_ENTITY_NAME announced in SPDP.
    pub entity_name: Option<String>,
    /// Pace reliable traffic (new data and repairs) at a rate that adapts to
    /// the delivery and loss readers report ([`crate::congestion`]); default
    /// on. Off, the engine sends as fast as it is polled (HEARTBEAT and NACK
    /// timing still follow the measured round trip).
    pub congestion_control: bool,
    /// Which run of the participant this is, among runs with the same GUID
    /// prefix (a process restarted with a fixed prefix): announced in SPDP
    /// (a FerroDDS vendor-specific parameter) and ordered, a later run having
    /// a larger value; the runtime uses the wall clock at creation in
    /// nanoseconds since the UNIX epoch. A peer that knows this prefix with a
    /// smaller value takes an announcement with a larger one as a restart: it
    /// drops the old run's endpoints and state at once and discovers the new
    /// run afresh (its sequence numbers start from 1 again). Default `None`:
    /// not announced (a restart is then noticed when the old run's lease ends).
    pub incarnation: Option<u64>,
    /// The host identity of this participant's shared-memory transport, `Some` when it runs
    /// one (default `None`). A remote's FerroDDS shared-memory locators
    /// (`Locator::KIND_FERRODDS_SHM`) whose host identity is this one are then used *instead
    /// of* its other locators of the same list (one path per remote, not two); shared-memory
    /// locators of another host, or all of them when this is `None`, are never used.
    pub shm_host: Option<[u8; 12]>,
    /// Largest datagram a writer's push builds when every destination of it is a
    /// shared-memory locator (default 0: [`ParticipantConfig::max_message_size`]). Shared
    /// memory has no MTU: a runtime whose `max_message_size` is bounded by a network
    /// interface's MTU sets this to the size its shared-memory slots take, so that a batch or
    /// a train of fragments to a peer on the same host goes in one message, not one per
    /// MTU, and (without DDS Security) a sample that fits such a message goes whole. A
    /// sample begun in fragments is finished in them; repairs, acknowledgements, discovery,
    /// flow-controlled writers and writers with their own `max_message_size` keep
    /// `max_message_size`.
    pub shm_message_size: usize,
    /// User data by multicast (default `false`): this participant's user readers announce
    /// [`ParticipantConfig::default_multicast_locators`] as their multicast locators, and its
    /// user writers send to a remote reader's multicast locators instead of its unicast ones
    /// when it announces some, so that one datagram reaches every reader listening on the
    /// group. Off, readers announce none and writers ignore those of remote readers.
    pub multicast_user_data: bool,
}

impl Default for ParticipantConfig {
    fn default() -> Self {
        Self {
            domain_id: 0,
            participant_id: 0,
            guid_prefix: GuidPrefix([0; 12]),
            metatraffic_unicast_locators: Vec::new(),
            metatraffic_multicast_locators: Vec::new(),
            default_unicast_locators: Vec::new(),
            default_multicast_locators: Vec::new(),
            spdp_destinations: Vec::new(),
            lease_duration: core::time::Duration::from_secs(20),
            spdp_period: core::time::Duration::from_secs(3),
            heartbeat_period: core::time::Duration::from_millis(100),
            nack_response_delay: core::time::Duration::ZERO,
            max_message_size: 65000,
            fragment_size: 0,
            reassembly: ReassemblyLimits::default(),
            peer_limits: PeerLimits::default(),
            entity_name: None,
            congestion_control: true,
            incarnation: None,
            shm_host: None,
            shm_message_size: 0,
            multicast_user_data: false,
        }
    }
}

/// Bounds on the state remote peers can make a participant keep, beside
/// [`ReassemblyLimits`]; part of [`ParticipantConfig`]. Whatever a network
/// peer announces or sends beyond them is ignored and counted in [`Stats`],
/// so no allocation grows without bound with what arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerLimits {
    /// Most remote participants known at once (default 4,096). Announcements
    /// of further ones are ignored until some leave or expire
    /// ([`Stats::refused_participants`]).
    pub max_remote_participants: usize,
    /// Most remote writers known at once, and separately most remote readers
    /// (default 16,384; [`Stats::refused_endpoints`]).
    pub max_remote_endpoints: usize,
    /// Most remote writers plus readers of one remote participant (default
    /// 4,096; [`Stats::refused_endpoints`]), so that one participant cannot
    /// take the whole of `max_remote_endpoints`.
    pub max_endpoints_per_participant: usize,
    /// Most changes a reliable reader buffers out of order behind a missing
    /// one, per remote writer (default 32,768: behind one lost datagram, what
    /// a window of small batched samples carries). Further changes are
    /// dropped and repaired later ([`Stats::out_of_order_overflows`]).
    pub max_out_of_order_samples: usize,
    /// Most payload bytes buffered out of order per remote writer beyond its
    /// first 64 changes (default 256 MiB; [`Stats::out_of_order_overflows`]).
    pub max_out_of_order_bytes: usize,
}

impl Default for PeerLimits {
    fn default() -> Self {
        Self {
            max_remote_participants: 4096,
            max_remote_endpoints: 16_384,
            max_endpoints_per_participant: 4096,
            max_out_of_order_samples: 32_768,
            max_out_of_order_bytes: 256 << 20,
        }
    }
}

/// Handle of a local user DataWriter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WriterId(pub(crate) usize);

/// Handle of a local user DataReader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReaderId(pub(crate) usize);

/// What to create a writer with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterAttributes {
    /// Topic name.
    pub topic_name: String,
    /// Type name.
    pub type_name: String,
    /// Whether the type has a key (selects entity kind 0x02 vs 0x03).
    pub keyed: bool,
    /// Writer QoS.
    pub qos: WriterQos,
}

/// What to create a reader with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderAttributes {
    /// Topic name.
    pub topic_name: String,
    /// Type name.
    pub type_name: String,
    /// Whether the type has a key (selects entity kind 0x07 vs 0x04).
    pub keyed: bool,
    /// Reader QoS.
    pub qos: ReaderQos,
}

/// A change handed to [`crate::Participant::write`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteRequest<'a> {
    /// Alive or one of the not-alive kinds.
    pub kind: ChangeKind,
    /// Sent as PID_KEY_HASH inline QoS when `Some`; also identifies the
    /// instance for KEEP_LAST. A writer of an unkeyed topic (entity kind
    /// 0x03) has one instance and ignores it.
    pub key_hash: Option<[u8; 16]>,
    /// Encapsulation header + CDR body (key only for dispose/unregister; may be empty).
    pub serialized_payload: &'a [u8],
    /// Sent as INFO_TS when `Some`.
    pub source_timestamp: Option<Time>,
}

/// A change handed to [`crate::Participant::write_taking`]: a [`WriteRequest`] whose
/// serialized payload is in a buffer the writer's history takes instead of copying.
#[derive(Debug, PartialEq, Eq)]
pub struct TakingWrite<'a> {
    /// Alive or one of the not-alive kinds.
    pub kind: ChangeKind,
    /// As [`WriteRequest::key_hash`].
    pub key_hash: Option<[u8; 16]>,
    /// Encapsulation header + CDR body. On success the history keeps this buffer and
    /// leaves a recycled one in its place (cleared, capacity unspecified), or keeps a copy
    /// and leaves it as it was (a buffer more than twice as large as its contents, or a
    /// payload DDS Security protects, whose protected form the history keeps); on an
    /// error it is left as it was.
    pub payload: &'a mut Vec<u8>,
    /// Sent as INFO_TS when `Some`.
    pub source_timestamp: Option<Time>,
}

/// A serialized payload in memory that other processes on this host read: a writer
/// runtime's shared-memory chunk ([`crate::Participant::write_shared`]). The history keeps it
/// (its bytes are sent to UDP readers and resent as any payload); a push whose destinations
/// are all shared-memory locators sends [`SharedPayload::reference`] instead of the bytes, in
/// a FerroDDS DATA_REF submessage, and the receiving participant's [`ChunkReader`] copies
/// the bytes out. Dropping it gives the memory back to its owner; the bytes never change
/// while it lives.
pub trait SharedPayload: Send + Sync + core::fmt::Debug {
    /// The encapsulation header and CDR body.
    fn bytes(&self) -> &[u8];
    /// What a receiving participant's [`ChunkReader`] needs to find the bytes: at most
    /// [`MAX_CHUNK_REFERENCE`] bytes, opaque to the engine.
    fn reference(&self) -> &[u8];
    /// The history lets the payload go (every reader acknowledged it, or it was replaced):
    /// give the memory back now. The engine keeps the released value for
    /// [`crate::Participant::reclaim_shared_payloads`] (so that a runtime reuses it instead
    /// of allocating one per sample) and never reads it again. Default: nothing (the memory
    /// goes back when the value is dropped).
    fn release(&mut self) {}
    /// The value itself, for a runtime reusing reclaimed payloads (`None`: not reusable).
    fn as_any_mut(&mut self) -> Option<&mut dyn core::any::Any> {
        None
    }
}

/// Longest [`SharedPayload::reference`] the engine sends.
pub const MAX_CHUNK_REFERENCE: usize = 32;

/// Copies the payload a DATA_REF names into a buffer: the runtime's reader of other
/// participants' shared-memory chunks ([`crate::Participant::set_chunk_reader`]).
pub trait ChunkReader: Send + core::fmt::Debug {
    /// Replaces `out`'s contents with the bytes `reference` names; false (and `out`
    /// unspecified) when it cannot: the chunk's owner is gone, the chunk was reused since
    /// the reference was sent, the reference is invalid, or it names more than `max_len`
    /// bytes (the participant's largest sample, [`crate::ReassemblyLimits::max_sample_size`]).
    /// The engine then handles the DATA_REF as a lost DATA (a reliable reader asks for it
    /// again and gets it as DATA).
    fn read(&mut self, reference: &[u8], max_len: usize, out: &mut Vec<u8>) -> bool;
    /// Whether `reference` can be read now (as [`ChunkReader::read`] would succeed),
    /// without copying: checked when a reader that reads in place keeps a reference, so
    /// that one already stale is handled as a lost DATA (repaired as bytes). Default: true.
    fn check(&mut self, reference: &[u8], max_len: usize) -> bool {
        let _ = (reference, max_len);
        true
    }
    /// A remote participant that announced this shared-memory locator is gone (its lease
    /// ended or it said goodbye): forget what was kept for it (a mapping of its memory).
    /// Default: nothing.
    fn peer_gone(&mut self, shm_locator: &Locator) {
        let _ = shm_locator;
    }
}

/// A change handed to [`crate::Participant::write_shared`]: a [`WriteRequest`] whose
/// serialized payload is a [`SharedPayload`] the history keeps.
#[derive(Debug)]
pub struct SharedWrite {
    /// Alive or one of the not-alive kinds.
    pub kind: ChangeKind,
    /// As [`WriteRequest::key_hash`].
    pub key_hash: Option<[u8; 16]>,
    /// Encapsulation header + CDR body, in shared memory.
    pub payload: Box<dyn SharedPayload>,
    /// Sent as INFO_TS when `Some`.
    pub source_timestamp: Option<Time>,
}

/// Errors of entity management.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The writer handle does not name a live writer.
    #[error("unknown writer")]
    UnknownWriter,
    /// The reader handle does not name a live reader.
    #[error("unknown reader")]
    UnknownReader,
    /// The 24-bit entity key space is exhausted.
    #[error("too many entities")]
    TooManyEntities,
    /// A QoS value is inconsistent (e.g. KEEP_LAST 0).
    #[error("inconsistent QoS: {0}")]
    InconsistentQos(&'static str),
    /// The security plugin could not register the endpoint (its key material); ask
    /// [`crate::Participant::check_local_endpoint`] first for the reason of a refusal.
    #[error("the security plugin could not register the endpoint")]
    SecurityRefused,
}

/// Errors of [`crate::Participant::write`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// KEEP_ALL history at its resource limit with unacknowledged data: wait for
    /// [`Event::WriterResourcesAvailable`] and retry, up to max_blocking_time.
    #[error("writer history full")]
    HistoryFull,
    /// The sample is larger than the configured maximum sample size
    /// ([`crate::ReassemblyLimits::max_sample_size`]).
    #[error("payload of {size} bytes exceeds the maximum of {max}")]
    PayloadTooLarge {
        /// Payload size.
        size: usize,
        /// Largest payload that fits.
        max: usize,
    },
    /// The writer handle does not name a live writer.
    #[error("unknown writer")]
    UnknownWriter,
    /// DDS Security could not protect the payload (counted in
    /// [`crate::Stats::protection_failures`]).
    #[error("the payload could not be protected")]
    ProtectionFailed,
}

/// A datagram produced by [`crate::Participant::poll_transmit`]: the first
/// `len` bytes of the caller's buffer go to every locator in `destinations`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Bytes written into the caller's buffer.
    pub len: usize,
    /// Distinct destination locators.
    pub destinations: Vec<Locator>,
}

/// Something the runtime may want to react to.
///
/// `Copy` on purpose: every received sample makes events, and an event owning heap data
/// (a `String`) would add drop glue to that path (measured: 21 instructions per 32 B round
/// trip and side); what does not fit is kept by the engine and queried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A remote participant was discovered.
    ParticipantDiscovered {
        /// Its GUID prefix.
        prefix: GuidPrefix,
    },
    /// A remote participant left (lease expiry or dispose).
    ParticipantLost {
        /// Its GUID prefix.
        prefix: GuidPrefix,
    },
    /// (Security on) A remote participant completed the authentication handshake and its
    /// permissions were validated: discovery of its endpoints starts.
    ParticipantAuthenticated {
        /// Its GUID prefix.
        prefix: GuidPrefix,
    },
    /// (Security on) Authenticating a remote participant or validating its permissions
    /// failed (also counted in [`Stats`]); why is kept in
    /// [`crate::Participant::authentication_failures`].
    ParticipantAuthenticationFailed {
        /// Its GUID prefix.
        prefix: GuidPrefix,
    },
    /// A writer matched a reader.
    PublicationMatched {
        /// Local writer.
        writer: WriterId,
        /// The matched reader.
        remote_reader: Guid,
        /// Matched readers now.
        current_count: usize,
    },
    /// A writer lost a reader.
    PublicationUnmatched {
        /// Local writer.
        writer: WriterId,
        /// The reader.
        remote_reader: Guid,
        /// Matched readers now.
        current_count: usize,
    },
    /// A reader matched a writer.
    SubscriptionMatched {
        /// Local reader.
        reader: ReaderId,
        /// The matched writer.
        remote_writer: Guid,
        /// Matched writers now.
        current_count: usize,
    },
    /// A reader lost a writer.
    SubscriptionUnmatched {
        /// Local reader.
        reader: ReaderId,
        /// The writer.
        remote_writer: Guid,
        /// Matched writers now.
        current_count: usize,
    },
    /// A reader with the same topic requested QoS this writer does not offer.
    OfferedIncompatibleQos {
        /// Local writer.
        writer: WriterId,
        /// The reader.
        remote_reader: Guid,
        /// First failing policy.
        policy: QosPolicyId,
    },
    /// A writer with the same topic does not offer the QoS this reader requests.
    RequestedIncompatibleQos {
        /// Local reader.
        reader: ReaderId,
        /// The writer.
        remote_writer: Guid,
        /// First failing policy.
        policy: QosPolicyId,
    },
    /// Samples are ready for [`crate::Participant::take_sample`].
    DataAvailable {
        /// The reader.
        reader: ReaderId,
    },
    /// Acknowledgements freed KEEP_ALL history space after `HistoryFull`.
    WriterResourcesAvailable {
        /// The writer.
        writer: WriterId,
    },
    /// Every matched reliable reader acknowledged everything written.
    AllAcknowledged {
        /// The writer.
        writer: WriterId,
    },
    /// Samples announced by a writer became unavailable before delivery.
    SampleLost {
        /// The reader.
        reader: ReaderId,
        /// How many.
        count: u32,
    },
}

/// A received sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// The writer.
    pub writer_guid: Guid,
    /// Its sequence number.
    pub sequence_number: SequenceNumber,
    /// From INFO_TS, if any.
    pub source_timestamp: Option<Time>,
    /// Alive or not-alive.
    pub kind: ChangeKind,
    /// From PID_KEY_HASH, if any.
    pub key_hash: Option<[u8; 16]>,
    /// Serialized payload including the encapsulation header, or empty.
    /// May carry up to 3 trailing padding bytes added by the sender's submessage
    /// alignment.
    ///
    /// For a reader that reads in place ([`crate::Participant::set_reader_in_place`]),
    /// when [`Sample::by_reference`], it is instead the reference of a chunk of another
    /// participant's shared memory (what its DATA_REF carried).
    pub payload: Vec<u8>,
    /// `payload` is a chunk reference, held until released
    /// ([`crate::Participant::release_references`]).
    pub by_reference: bool,
}

/// Counters kept by the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Datagrams given to `handle_datagram`.
    pub received_datagrams: u64,
    /// (Security on) Authentication failures: bad tokens, certificates or handshake
    /// messages, handshakes timed out ([`Event::ParticipantAuthenticationFailed`] names the
    /// reason).
    pub authentication_failures: u64,
    /// (Security on) Authenticated remote participants whose permissions were refused.
    pub access_denied_participants: u64,
    /// (Security on) Endpoints of authenticated remote participants not matched because
    /// their permissions do not allow them (governance read or write access control).
    pub access_denied_endpoints: u64,
    /// (Security on) SPDP announcements of participants without an identity token ignored
    /// because the governance does not allow unauthenticated participants.
    pub unauthenticated_participants_ignored: u64,
    /// (Security on) Stateless messages ignored: from unknown, failed or unauthenticated
    /// participants, or while no handshake slot is free.
    pub ignored_stateless_messages: u64,
    /// (Security on) Remote participants authenticated.
    pub authenticated_participants: u64,
    /// (Security on) Protected datagrams (or volatile-secure submessages) dropped because
    /// they failed to decode: tampered, replayed, or without the sender's key.
    pub rejected_protected_datagrams: u64,
    /// (Security on, RTPS protection) Submessages dropped because they came in clear
    /// (neither SPDP nor stateless) from a participant that must protect them.
    pub unprotected_submessages_dropped: u64,
    /// (Security on, RTPS protection) Datagrams sent as protected RTPS messages.
    pub protected_datagrams_sent: u64,
    /// (Security on, RTPS protection) Protected RTPS messages received and decoded.
    pub protected_datagrams_received: u64,
    /// (Security on) Datagrams not sent because the transform failed.
    pub protection_failures: u64,
    /// (Security on) Handshake messages sent again because unanswered.
    pub handshake_resends: u64,
    /// Datagrams dropped (wholly or from the first bad submessage on) as malformed.
    pub malformed_datagrams: u64,
    /// Submessages skipped because their id is unknown or unsupported.
    pub unknown_submessages: u64,
    /// Submessages ignored because they name no matched endpoint.
    pub unmatched_submessages: u64,
    /// DATA_REF submessages sent: samples a shared-memory reader copies out of this
    /// participant's chunks instead of receiving their bytes (counted in `sent_data` too).
    pub sent_data_refs: u64,
    /// DATA_REF submessages received and copied out of the sender's chunk.
    pub received_data_refs: u64,
    /// DATA_REF submessages that could not be read (chunk reused, owner gone, bad
    /// reference, or not from shared memory): handled as lost DATA.
    pub unreadable_data_refs: u64,
    /// SPDP disposals ignored because they named a participant other than
    /// the one that sent them (only a participant may announce its own end).
    pub foreign_disposes: u64,
    /// Periodic HEARTBEATs not sent to unresponsive readers (no ACKNACK for
    /// ten HEARTBEATs: heartbeated one time in ten until they answer).
    pub unresponsive_heartbeats_skipped: u64,
    /// SPDP announcements of new participants ignored because
    /// [`PeerLimits::max_remote_participants`] are known already (the
    /// bound on what a flood can make us keep).
    pub refused_participants: u64,
    /// SEDP announcements of new remote endpoints ignored because
    /// [`PeerLimits::max_remote_endpoints`] remote writers (or readers),
    /// or [`PeerLimits::max_endpoints_per_participant`] of the announcing
    /// participant, are known already.
    pub refused_endpoints: u64,
    /// Reliable changes dropped because the reader's out-of-order buffer for
    /// their writer was full ([`PeerLimits::max_out_of_order_samples`] /
    /// `max_out_of_order_bytes`); the writer resends them later.
    pub out_of_order_overflows: u64,
    /// DATA_FRAGs refused because reassembly was at its limits
    /// ([`ReassemblyLimits`]: byte budgets or incomplete samples per writer);
    /// also counted in `rejected_fragments`.
    pub reassembly_overflows: u64,
    /// Known remote participants that announced a later incarnation (a
    /// restart with the same GUID prefix): the old one was dropped with its
    /// endpoints and the new one discovered afresh.
    pub participant_restarts: u64,
    /// SPDP announcements and disposals of a known participant ignored as
    /// older than what it last announced (a lower sequence number or an
    /// earlier incarnation): a replay, a reordered datagram, or a restart
    /// that announces no later incarnation (which then waits for the old
    /// one's lease, and no longer renews it).
    pub stale_announcements: u64,
    /// Datagrams produced by `poll_transmit`.
    pub sent_datagrams: u64,
    /// DATA submessages sent (including repairs).
    pub sent_data: u64,
    /// DATA submessages resent on request.
    pub resent_data: u64,
    /// Samples dropped by readers (duplicate, old, or buffer full).
    pub dropped_samples: u64,
    /// DATA_FRAG submessages rejected by reassembly (bad or inconsistent
    /// sizes, over budget, too many incomplete samples).
    pub rejected_fragments: u64,
    /// DATA_FRAG submessages resent in answer to NACK_FRAG.
    pub resent_fragments: u64,
    /// Payload bytes resent (whole samples and fragments).
    pub resent_bytes: u64,
    /// NACK_FRAG submessages sent by readers.
    pub sent_nack_frags: u64,
    /// HEARTBEAT_FRAG submessages sent by writers.
    pub sent_heartbeat_frags: u64,
    /// Payload bytes readers newly asked to be repaired (their losses).
    pub lost_bytes_reported: u64,
    /// Congestion decisions that lowered the pacing rate.
    pub congestion_decreases: u64,
    /// Of these, decreases for a standing queue without loss (the round
    /// trip grew by [`crate::congestion::QUEUE_DELAY`]: the rate went down to
    /// what the readers acknowledged before a bottleneck's queue overflowed).
    pub congestion_drains: u64,
    /// Times a datagram waited for the pacer.
    pub pacing_waits: u64,
    /// The pacing rate in bytes per second (0: not paced).
    pub pacing_rate: u64,
    /// Smoothed round-trip time to readers in nanoseconds (0: not measured).
    pub srtt_ns: u64,
    /// Tail-loss probes: HEARTBEATs sent because data stayed unacknowledged
    /// for a retransmission timeout after the last push.
    pub tail_loss_probes: u64,
}
