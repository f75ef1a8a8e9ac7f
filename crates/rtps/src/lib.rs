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
//!    [`Participant::poll_event`] until both return `None`, read samples with
//!    [`Participant::take_sample`], then re-arm the timer from
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
//!   readers; ACKNACK requests are answered with DATA or GAP (after
//!   `nack_response_delay`; an SN resent less than `heartbeat_period / 20`
//!   ago is not resent again); HEARTBEATs repeat every `heartbeat_period`
//!   while a reliable reader lags. KEEP_LAST evicts per instance (key hash); KEEP_ALL
//!   with `max_samples` reports [`WriteError::HistoryFull`] until
//!   acknowledgements free space ([`Event::WriterResourcesAvailable`]).
//!   Volatile writers drop what every reliable reader acknowledged.
//! - Readers: best effort delivers only SNs newer than the last one; reliable
//!   readers buffer out of order (bounded), deliver in SN order exactly once,
//!   answer every non-final HEARTBEAT (and any showing missing data) with an
//!   ACKNACK whose base is the first missing SN (never 0; ACKNACKs requesting
//!   data are at least `heartbeat_period / 10` apart), send a pre-emptive
//!   ACKNACK (base 1, no bits) on matching, and report SNs a HEARTBEAT shows as
//!   gone as [`Event::SampleLost`]. A KEEP_ALL reader with `max_samples`
//!   stops accepting (and acknowledging) when full: back-pressure.
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
//! nothing (history payload buffers are recycled from a small pool, the
//! destination list is caller-owned); [`Participant::poll_transmit`] allocates
//! the `Vec` of its [`Transmit`]; receiving allocates exactly one `Vec` per
//! delivered sample (its payload). Reliable repair bookkeeping, discovery and
//! entity creation allocate freely.
//!
//! # Fragments
//!
//! Samples larger than one datagram allows are sent as DATA_FRAGs (one
//! fragment per submessage, fragments sized to fill a datagram, at most
//! [`Participant::max_payload_size`] = 16 MiB per sample; larger writes get
//! [`WriteError::PayloadTooLarge`]); NACK_FRAG requests are answered with the
//! fragments asked for. Received DATA_FRAGs are reassembled per writer proxy
//! (at most 16 MiB per sample and 32 MiB per writer under reassembly;
//! best-effort readers drop older incomplete samples once a newer one
//! completes; reliable readers NACK an incomplete sample as a whole: they
//! send no NACK_FRAG yet).
//!
//! # Not implemented yet
//!
//! NACK_FRAG from readers, HEARTBEAT_FRAG, multicast
//! delivery of user data, liveliness (participant-message endpoints) and
//! deadline monitoring, content filters, ownership arbitration, SEDP topics,
//! security.
//!
//! # API extensions beyond the shared contract
//!
//! [`Participant::poll_transmit_into`], [`Participant::stats`], [`Participant::config`],
//! [`Participant::discovered_participants`], [`Participant::max_payload_size`]
//! and [`Participant::announce_leave`]; [`Timestamp::saturating_add`] and
//! [`Timestamp::since`].
#![forbid(unsafe_code)]

mod api;
#[cfg(test)]
mod capture_tests;
mod codec;
mod discovery;
mod history;
mod instance;
mod participant;
mod proxy;
pub mod qos;
pub mod reassembly;
mod sn_set;
mod types;

pub use api::{
    ChangeKind, EngineError, Event, ParticipantConfig, ReaderAttributes, ReaderId, Sample, Stats,
    Timestamp, Transmit, WriteError, WriteRequest, WriterAttributes, WriterId,
};
pub use instance::InstanceState;
pub use participant::Participant;
pub use qos::{
    Batching, DataRepresentation, Deadline, Durability, History, Liveliness, LivelinessKind,
    Ownership, Partition, QosPolicyId, ReaderQos, Reliability, ReliabilityKind, ResourceLimits,
    WriterQos,
};
pub use reassembly::{ReassemblyBudget, ReassemblyLimits};
pub use types::{EntityId, Guid, GuidPrefix, Locator, SequenceNumber, Time};
