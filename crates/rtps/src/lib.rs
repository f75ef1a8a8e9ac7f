//! FerroDDS sans-IO RTPS protocol engine (DDSI-RTPS 2.5), modelled on quinn-proto.
//!
//! A [`Participant`] is a pure state machine for one DomainParticipant: SPDP
//! and SEDP discovery, QoS matching, best-effort and reliable stateful
//! writers/readers with per-remote-endpoint proxies, and datagram building.
//! It owns no sockets, threads or clocks (enforced by this crate's
//! `clippy.toml`).
//!
//! # Call contract
//!
//! 1. Inputs: [`Participant::handle_datagram`] for every received datagram,
//!    [`Participant::handle_timeout`] once [`Participant::poll_timeout`] is
//!    reached, and commands ([`Participant::create_writer`],
//!    [`Participant::write`], [`Participant::delete_reader`],
//!    [`Participant::announce_leave`], ...).
//! 2. After any input, drain [`Participant::poll_transmit`] (send the first
//!    `len` bytes of the buffer to every locator of the [`Transmit`]) and
//!    [`Participant::poll_event`] until both return `None`, take samples with
//!    [`Participant::take_samples`] (or [`Participant::take_sample`]; a reader's
//!    cache is its whole history: KEEP_LAST, instance and read states are kept
//!    there), then re-arm the timer from
//!    [`Participant::poll_timeout`]. The buffer given to `poll_transmit` should
//!    hold at least [`ParticipantConfig::max_message_size`] bytes; datagrams
//!    never exceed that size.
//! 3. Time ([`Timestamp`]) is monotonic, supplied by the caller, and must never
//!    go backwards. Source timestamps ([`Time`]) are opaque values the caller
//!    puts in [`WriteRequest`] and gets back in [`Sample`].
//!
//! A newly created participant announces itself (SPDP) on the first
//! `handle_timeout`/`poll_transmit` after `new`, five times 100 ms apart, then
//! every `spdp_period`. Writers and readers of one participant match each other
//! too (their traffic goes through the caller's sockets like any other).
//!
//! # Protocol behaviour
//!
//! - SPDP: PL_CDR_LE participant data to `spdp_destinations`, plus a unicast
//!   reply to each newly discovered participant; own announcements, other
//!   domains, non-empty domain tags and protocol majors other than 2 are
//!   ignored. Any datagram from a known prefix renews its lease; on expiry (or
//!   an SPDP dispose) the participant and all its endpoints are removed.
//! - SEDP: reliable, transient-local builtin publication/subscription writers
//!   and readers using the same machines as user data; absent QoS PIDs take the
//!   spec default of the endpoint kind (readers BEST_EFFORT, writers RELIABLE);
//!   deleting an endpoint sends a key-only dispose (STATUS_INFO + KEY_HASH).
//! - Matching: topic and type name, then reliability, durability, ownership,
//!   liveliness, deadline, partitions (`*`/`?` wildcards) and data
//!   representation; the first failing policy is reported on both sides.
//! - Writers: every change is pushed once to the distinct locators of all
//!   matched readers (readerId UNKNOWN when several), with INFO_TS when a
//!   source timestamp is given and a piggy-backed HEARTBEAT for reliable
//!   readers (a fragment fills its datagram alone: the HEARTBEAT, with a
//!   HEARTBEAT_FRAG at least every 32 fragments, then goes where room is
//!   left or in a datagram of its own); ACKNACK requests are answered with DATA or GAP (after
//!   `nack_response_delay`; an SN, or fragments of one, resent less than a
//!   retransmission timeout ago is not resent again). Writers measure the
//!   round trip from their acknowledgement requests ([`congestion`]); while
//!   a reliable reader lags, a HEARTBEAT follows the last push after a
//!   retransmission timeout (a tail-loss probe) and repeats with exponential
//!   back-off up to every `heartbeat_period`. Repairs go before new data; with
//!   [`ParticipantConfig::congestion_control`] both are paced (best-effort
//!   data only with [`WriterQos::pace_best_effort`]: otherwise it goes as
//!   fast as it is written). A reliable writer pushes at most 32,768 SNs
//!   beyond its slowest reliable reader's acknowledgement (what a reader
//!   buffers out of order). KEEP_LAST evicts per instance (key hash); KEEP_ALL
//!   with `max_samples` reports [`WriteError::HistoryFull`] until
//!   acknowledgements free space ([`Event::WriterResourcesAvailable`]).
//!   Volatile writers drop what every reliable reader acknowledged.
//! - Readers: best effort delivers only SNs newer than the last one; reliable
//!   readers buffer out of order (at most 32,768 changes, and 256 MiB beyond
//!   the first 64), deliver in SN order exactly once,
//!   answer every non-final HEARTBEAT (and any showing missing data) with an
//!   ACKNACK whose base is the first missing SN (never 0; ACKNACKs requesting
//!   data are at least twice the round trip apart, 1 ms before one is
//!   measured, at most `heartbeat_period / 10`), send a pre-emptive
//!   ACKNACK (base 1, no bits) on matching, and report SNs a HEARTBEAT shows as
//!   gone as [`Event::SampleLost`]. A KEEP_ALL reader with `max_samples`
//!   stops accepting (and acknowledging) when full: back-pressure.
//!
//! # Security
//!
//! [`Participant::with_security`] runs DDS Security's participant authentication and access
//! control through a [`security::ParticipantSecurity`] plugin (secure SPDP, the stateless
//! handshake endpoints, SEDP only with authenticated participants): see [`security`]. A
//! participant made with [`Participant::new`] has no security.
//!
//! # Robustness
//!
//! Malformed datagrams are dropped from the first bad submessage on and
//! counted in [`Stats`]; parsing never panics and never allocates from a
//! length read off the wire; absurd sequence numbers are rejected; remote
//! participants, endpoints, out-of-order buffers and repair requests are all
//! bounded.
//!
//! # Allocation
//!
//! Steady state (checked by `tests/alloc.rs` under a counting allocator): a
//! best-effort `write` plus [`Participant::poll_transmit_into`] allocates
//! nothing (also for 100,000 instances, `tests/instances.rs`) (history payload buffers are recycled from a small pool, the
//! destination list is caller-owned); [`Participant::poll_transmit`] allocates
//! the `Vec` of its [`Transmit`]; receiving allocates one `Vec` per
//! delivered sample (its payload) unless taken payloads are given back with
//! [`Participant::recycle_payload`] (then none). Reliable repair bookkeeping, discovery and
//! entity creation allocate freely.
//!
//! # Fragments
//!
//! Samples larger than one datagram allows are sent as DATA_FRAGs (fragment
//! size from [`ParticipantConfig::fragment_size`] or
//! [`WriterQos::fragment_size`], by default the largest that fills a datagram
//! of [`ParticipantConfig::max_message_size`] / [`WriterQos::max_message_size`];
//! several fragments share a datagram when they fit). `write` accepts payloads
//! up to [`ReassemblyLimits::max_sample_size`] (default 16 MiB; checked with
//! 100 kB to 10 MiB samples, also against Cyclone DDS). While a sample is
//! still being pushed, reliable writers append a HEARTBEAT_FRAG announcing
//! the fragments sent so far, and the HEARTBEAT's lastSN only covers samples
//! pushed completely. NACK_FRAG requests are answered with exactly the
//! fragments asked for.
//!
//! A payload in shared memory ([`Participant::write_shared`], a [`SharedPayload`]) is kept
//! by the history as it is; a push whose destinations are all FerroDDS shared-memory
//! locators sends it as a DATA_REF (FerroDDS's vendor submessage 0xfd: a DATA whose payload
//! is the chunk's reference, never fragmented), and the receiving participant's
//! [`ChunkReader`] copies the bytes out. Everyone else, and every repair, gets the bytes.
//! A reader set in place ([`Participant::set_reader_in_place`]) keeps the reference instead
//! ([`Sample::by_reference`]) and acknowledges the sample only once the runtime releases it
//! ([`Participant::release_references`]), so that the writer keeps the chunk meanwhile.
//! A DATA_REF is acted on only from FerroDDS, through shared memory, without DDS Security.
//!
//! Received DATA_FRAGs are reassembled per (local reader, remote writer) by
//! a [`reassembly::Reassembler`]: memory is allocated lazily in 64 KiB
//! chunks as fragment bytes arrive, and every allocation is charged to a
//! per-writer and a per-participant budget ([`ReassemblyLimits`]) before it
//! is made; samples above `max_sample_size` (or above the per-writer budget),
//! inconsistent sizes and malformed fragment ranges are rejected and counted
//! in [`Stats::rejected_fragments`]. At most `max_samples_per_writer`
//! incomplete samples are kept. Best-effort readers drop older incomplete
//! samples once a newer one completes and any incomplete sample after
//! `best_effort_timeout`. Reliable readers leave a partly received SN out of
//! their ACKNACK bitmap and send a NACK_FRAG for exactly its missing
//! fragments (those announced by a HEARTBEAT or HEARTBEAT_FRAG), after a
//! short NackDelay (the NACK hold-off above) so reordered fragments are not
//! requested.
//!
//! # Batching and flow control
//!
//! A writer with [`WriterQos::batching`] enabled holds written samples until
//! `max_bytes` of payload or `max_samples` are pending, until
//! [`Participant::flush`] / [`Participant::write_flush`], or, when a finite
//! `max_flush_delay` is set (the default is infinite, as Connext's), until it
//! passed ([`Participant::poll_timeout`] includes it); then
//! all pending samples go out as standard DATA submessages (with INFO_TS)
//! packed into datagrams, each ending with a HEARTBEAT for reliable readers.
//! Samples that need fragmenting are never held. A writer with
//! [`WriterQos::flow_controlled`] sends new data only through
//! [`Participant::poll_transmit_writer`] with a byte budget (an asynchronous
//! publisher's token bucket); [`Participant::pending_bytes`] tells how much
//! is waiting.
//!
//! # Instances
//!
//! Writer histories and reader caches index instances by key hash in a hash
//! map (a seeded multiply-rotate hasher; key hashes are already well mixed),
//! so KEEP_LAST replacement is O(1) per sample with 100,000 instances and
//! writing to an existing instance allocates nothing. Instance states are
//! available through [`Participant::writer_instance_state`] and
//! [`Participant::reader_instance_state`]; [`Participant::register_instance`]
//! registers without writing. Measured (`tests/instances.rs`, 8-byte
//! payloads, KEEP_LAST 1, debug build, 2026-11-24): about 200 bytes per
//! instance on the writer (history change, payload and index) and about 225
//! on the reader with one queued sample (194 after it is taken: index and a
//! one-slot sample queue).
//!
//! # Not implemented yet
//!
//! Multicast delivery of user data, liveliness (participant-message
//! endpoints) and deadline monitoring, content filters, ownership
//! arbitration, SEDP topics, security; flow control of repairs.
//!
//! # API extensions beyond the shared contract
//!
//! [`Participant::poll_transmit_into`], [`Participant::poll_transmit_writer`],
//! [`Participant::stats`], [`Participant::config`],
//! [`Participant::discovered_participants`], [`Participant::max_payload_size`],
//! [`Participant::reassembly_bytes`], [`Participant::pending_bytes`],
//! [`Participant::flush`], [`Participant::write_flush`],
//! [`Participant::recycle_payload`], [`Participant::take_samples`],
//! [`Participant::read_samples`], [`Participant::set_key_extractor`],
//! [`Participant::reader_has_unread`], [`Participant::reader_sample_count`],
//! the instance queries, and [`Participant::announce_leave`]; [`Timestamp::saturating_add`]
//! and [`Timestamp::since`]; the public [`reassembly`] module (also driven by
//! the `reassembly` fuzz target).
#![forbid(unsafe_code)]

mod api;
#[cfg(test)]
mod capture_tests;
mod codec;
pub mod congestion;
mod discovery;
#[doc(hidden)]
pub mod fuzzing;
mod history;
mod instance;
mod participant;
mod proxy;
pub mod qos;
pub mod reassembly;
pub mod security;
mod sn_set;
mod types;

pub use api::{
    ChunkReader, EngineError, Event, ParticipantConfig, PeerLimits, ReaderAttributes, ReaderId,
    Sample, SharedPayload, SharedWrite, Stats, TakingWrite, Transmit, WriteError, WriteRequest,
    WriterAttributes, WriterId, MAX_CHUNK_REFERENCE,
};
pub use instance::{InstanceState, KeyExtractor, TakeOutcome, TakenSample};
pub use participant::Participant;
pub use qos::{
    Batching, DataRepresentation, Deadline, Durability, History, Liveliness, LivelinessKind,
    Ownership, Partition, QosPolicyId, ReaderQos, Reliability, ReliabilityKind, ResourceLimits,
    WriterQos,
};
pub use reassembly::{ReassemblyBudget, ReassemblyLimits};
pub use types::{ChangeKind, EntityId, Guid, GuidPrefix, Locator, SequenceNumber, Time, Timestamp};
