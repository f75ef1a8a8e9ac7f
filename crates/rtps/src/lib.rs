//! FerroDDS sans-IO RTPS protocol engine (DDSI-RTPS 2.5), modelled on quinn-proto.
//!
//! A [`Participant`] is a pure state machine: it owns no sockets, threads or
//! clocks. The runtime feeds it and drains it:
//!
//! 1. Inputs: [`Participant::handle_datagram`] for every received datagram,
//!    [`Participant::handle_timeout`] when [`Participant::poll_timeout`] is
//!    reached, and commands ([`Participant::create_writer`],
//!    [`Participant::write`], [`Participant::delete_reader`], ...).
//! 2. After any input, drain [`Participant::poll_transmit`] (send each
//!    datagram to all its destinations) and [`Participant::poll_event`] until
//!    they return `None`, read samples with [`Participant::take_sample`], and
//!    re-arm the timer from [`Participant::poll_timeout`].
//!
//! Time ([`Timestamp`]) is monotonic and supplied by the caller; it must never
//! go backwards. Nothing here reads a clock (enforced by `clippy.toml`).
//!
//! Not implemented yet: DATA_FRAG (samples larger than one datagram are
//! refused with [`WriteError::PayloadTooLarge`]), liveliness (participant
//! message endpoints), content filters, security, SEDP topics.
#![forbid(unsafe_code)]

mod api;
#[cfg(test)]
mod capture_tests;
mod codec;
mod discovery;
mod history;
mod participant;
mod proxy;
pub mod qos;
mod sn_set;
mod types;

pub use api::{
    ChangeKind, EngineError, Event, ParticipantConfig, ReaderAttributes, ReaderId, Sample, Stats,
    Timestamp, Transmit, WriteError, WriteRequest, WriterAttributes, WriterId,
};
pub use participant::Participant;
pub use qos::{
    DataRepresentation, Deadline, Durability, History, Liveliness, LivelinessKind, Ownership,
    Partition, QosPolicyId, ReaderQos, Reliability, ReliabilityKind, ResourceLimits, WriterQos,
};
pub use types::{EntityId, Guid, GuidPrefix, Locator, SequenceNumber, Time};
