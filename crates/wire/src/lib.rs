//! # ferrodds-wire: the RTPS 2.x wire layer of FerroDDS
//!
//! Pure functions on byte slices: no I/O, no clock, no threads, `#![no_std]`
//! and no allocation at all.
//!
//! ## What it covers (DDSI-RTPS 2.5, DDS-Security 1.1)
//!
//! - Common types (§8.2, §9.3): [`ProtocolVersion`], [`VendorId`], [`GuidPrefix`],
//!   [`EntityId`] (with all builtin and secure builtin ids), [`Guid`],
//!   [`SequenceNumber`], [`SequenceNumberSet`] and [`FragmentNumberSet`]
//!   (fixed 256-bit bitmaps), [`Count`], [`Locator`], [`Time`], [`Duration`].
//! - The 20-byte message [`Header`] (§9.4.4; magic `RTPS` or `RTPX`, any 2.x).
//! - Every standard submessage (§9.4.5): DATA, DATA_FRAG, HEARTBEAT (with
//!   group info), HEARTBEAT_FRAG, ACKNACK, NACK_FRAG, GAP (with group/filtered
//!   info), INFO_TS, INFO_DST, INFO_SRC, INFO_REPLY, INFO_REPLY_IP4, PAD; the
//!   security submessages (SEC_*, SRTPS_*) and unknown/vendor ids as
//!   [`Opaque`] bodies.
//! - Parameter lists (§9.4.2.11) with PID constants ([`parameter::pid`]), a
//!   borrowed iterator, a writer and typed values ([`ParameterValue`], module
//!   [`qos`] and [`values`]).
//!
//! ## Parsing contract
//!
//! [`MessageView::parse`] checks the header; [`MessageView::submessages`]
//! yields `Result<Submessage>` lazily and stops after the first error (the
//! rest of a malformed message is ignored, as §8.3.4.1 requires).
//! [`MessageView::interpret`] additionally tracks the receiver state of
//! §8.3.4 (source, destination, timestamp, reply locators set by the INFO_*
//! submessages). Parsed
//! values are owned `Copy` structs for fixed layouts and borrowed views into
//! the input for DATA/DATA_FRAG payloads, inline QoS, locator lists and opaque
//! bodies. For any input:
//!
//! - parsing never panics (all reads are bounds-checked);
//! - nothing is allocated, and no length or count read off the wire is used to
//!   size anything: counts are checked against the bytes actually present;
//! - errors are typed ([`WireError`]) with offsets relative to the start of
//!   the message.
//!
//! Interop leniencies (protocol notes §6): `octetsToNextHeader == 0` means
//! "to the end of the message" except for PAD and INFO_TS; sequence-number
//! sets with base 0 and `numBits` 0 are accepted (but never emitted);
//! `octetsToInlineQos` is honoured; any 2.x minor version is accepted.
//!
//! ## Emission contract
//!
//! Every submessage implements [`Encode`]: `encoded_len()` then
//! `write(endian, &mut out)` into a caller-owned buffer, returning the bytes
//! written or [`WireError::BufferTooSmall`]. Submessages are padded to 4 with
//! zeros. [`MessageWriter`] appends submessages after a header.
//! [`Data::write_header`] / [`DataFrag::write_header`] write everything before
//! the payload for scatter-gather sends.
//!
//! A parsed submessage re-emitted with the byte order of its E flag
//! reproduces its input bytes whenever the input was canonical: exact
//! `octetsToNextHeader` (not the "0 = to end" form), zero padding, a zero
//! INFO_SRC `unused` word, zero-filled extra `octetsToInlineQos` octets, no
//! undefined flag bits and no trailing extension bytes after the known
//! fields. Fields that make that possible (`extra_flags`,
//! `octets_to_inline_qos`, opaque flags) are kept.
#![no_std]
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

mod codec;
mod error;
mod header;
mod message;
pub mod parameter;
pub mod qos;
mod receiver;
pub mod submessage;
mod types;
pub mod values;

pub use codec::{pad4, Endianness};
pub use error::{Result, WireError};
pub use header::Header;
pub use message::{
    Message, MessageView, MessageWriter, RawSubmessage, RawSubmessages, Submessages,
};
pub use parameter::{
    pid, Parameter, ParameterList, ParameterListWriter, ParameterValue, Parameters,
};
pub use receiver::{Interpreter, ReceiverState, ReplyTo};
pub use submessage::{
    AckNack, Data, DataFrag, Encode, Gap, GapGroupInfo, Heartbeat, HeartbeatFrag,
    HeartbeatGroupInfo, InfoDst, InfoReply, InfoReplyIp4, InfoSrc, InfoTs, LocatorUdpv4, NackFrag,
    Opaque, Pad, Submessage, SubmessageHeader, TimedData,
};
pub use types::{
    Count, Duration, EntityId, FragmentNumber, FragmentNumberSet, Guid, GuidPrefix, Locator,
    LocatorList, ProtocolVersion, SequenceNumber, SequenceNumberSet, Time, VendorId, MAX_SET_BITS,
};
pub use values::{BuiltinEndpointSet, KeyHash, OctetSeq, PropertyList, SecurityInfo, StatusInfo};
