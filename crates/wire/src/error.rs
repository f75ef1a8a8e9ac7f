//! Typed errors of the wire layer.

/// Everything that can go wrong while parsing or emitting RTPS wire data.
///
/// Offsets are byte offsets relative to the start of the buffer handed to the
/// parser (for [`crate::MessageView::parse`] that is the start of the RTPS
/// message, for [`crate::ParameterList`] the start of the list unless a base
/// offset was given).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The input ended before a complete item could be read.
    #[error("truncated input at offset {offset}: needed {needed} bytes, have {have}")]
    Truncated {
        /// Offset where the item starts.
        offset: usize,
        /// Bytes needed for the item.
        needed: usize,
        /// Bytes available from `offset`.
        have: usize,
    },
    /// The message does not start with `RTPS` (or `RTPX`).
    #[error("bad RTPS magic")]
    BadMagic,
    /// The protocol major version is not 2.
    #[error("unsupported RTPS protocol version {major}.{minor}")]
    UnsupportedVersion {
        /// Major version found.
        major: u8,
        /// Minor version found.
        minor: u8,
    },
    /// A submessage's `octetsToNextHeader` is too small for its contents.
    #[error("bad submessage length at offset {offset}: id {id:#04x}, octetsToNextHeader {length}")]
    BadSubmessageLength {
        /// Offset of the submessage header.
        offset: usize,
        /// Submessage id.
        id: u8,
        /// The `octetsToNextHeader` value.
        length: u16,
    },
    /// A sequence-number or fragment-number set has `numBits > 256`.
    #[error("invalid numBits {num_bits} at offset {offset}")]
    InvalidNumBits {
        /// Offset of the set.
        offset: usize,
        /// The `numBits` value.
        num_bits: u32,
    },
    /// A sequence number is out of the valid range for its position.
    #[error("invalid sequence number at offset {offset}")]
    InvalidSequenceNumber {
        /// Offset of the sequence number.
        offset: usize,
    },
    /// A fragment description (DATA_FRAG, fragment set) is inconsistent.
    #[error("invalid fragment fields at offset {offset}")]
    InvalidFragment {
        /// Offset of the offending field or submessage.
        offset: usize,
    },
    /// A submessage carries a forbidden flag combination (e.g. DATA with both D and K).
    #[error("invalid flags {flags:#04x} for submessage {id:#04x} at offset {offset}")]
    InvalidFlags {
        /// Offset of the submessage header.
        offset: usize,
        /// Submessage id.
        id: u8,
        /// Flags byte.
        flags: u8,
    },
    /// A CDR string is malformed (length 0, missing NUL, inner NUL or not UTF-8).
    #[error("malformed string at offset {offset}")]
    BadString {
        /// Offset of the string's length field.
        offset: usize,
    },
    /// An enumerated value (QoS kind etc.) is not one of the known values.
    #[error("invalid value {value} for {what}")]
    InvalidEnum {
        /// Name of the enumeration.
        what: &'static str,
        /// The value found.
        value: u32,
    },
    /// A serialized payload has an unexpected encapsulation (representation) id.
    #[error("unexpected encapsulation id {id:#06x}")]
    InvalidEncapsulation {
        /// The representation id found.
        id: u16,
    },
    /// An output buffer is too small.
    #[error("buffer too small: needed {needed} bytes, have {have}")]
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        have: usize,
    },
    /// A value does not fit its length field (e.g. parameter > 65535 bytes,
    /// submessage body > 65535 bytes).
    #[error("value too long: {length} bytes (max {max})")]
    TooLong {
        /// Length requested.
        length: usize,
        /// Maximum encodable length.
        max: usize,
    },
    /// A parameter with the must-understand bit set is not known to the consumer.
    #[error("unknown must-understand parameter {pid:#06x}")]
    UnknownMustUnderstandParameter {
        /// The parameter id.
        pid: u16,
    },
    /// Borrowed bytes (inline QoS, locator list, parameter sequence) were encoded in
    /// a different byte order than the one requested for emission.
    #[error("embedded bytes use a different byte order than the submessage being written")]
    EndiannessMismatch,
    /// An item cannot be emitted because a field is not representable (e.g. a
    /// sequence-number set with base 0 and bits set, a negative sequence number).
    #[error("value cannot be encoded: {what}")]
    Unencodable {
        /// What is wrong.
        what: &'static str,
    },
}

/// Result alias for the wire layer.
pub type Result<T, E = WireError> = core::result::Result<T, E>;
