//! Typed errors of the CDR layer.

/// Everything that can go wrong while encoding or decoding CDR.
///
/// Offsets are counted in bytes from the start of the CDR body (the byte after the 4-byte
/// encapsulation header), which is also the origin of CDR alignment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CdrError {
    /// The input ended (or the enclosing DHEADER/member length ended) before a value did.
    #[error("truncated CDR input at offset {offset}: needed {needed} bytes, {have} left")]
    Truncated {
        /// Offset at which the read was attempted.
        offset: usize,
        /// Bytes the read needed (saturated at `usize::MAX` for absurd wire lengths).
        needed: usize,
        /// Bytes that were left in the current scope.
        have: usize,
    },
    /// A bounded string or sequence is longer than its bound.
    #[error("length {len} exceeds bound {bound}")]
    BoundExceeded {
        /// Length found (elements, or characters without the NUL for strings).
        len: usize,
        /// Declared bound.
        bound: usize,
    },
    /// A boolean octet other than 0 or 1.
    #[error("invalid boolean octet {0:#04x}")]
    InvalidBool(u8),
    /// A string whose bytes are not UTF-8.
    #[error("string at offset {offset} is not valid UTF-8")]
    InvalidUtf8 {
        /// Offset of the string's first character.
        offset: usize,
    },
    /// A string whose last byte (per its length) is not NUL.
    #[error("string at offset {offset} is not NUL-terminated")]
    MissingNul {
        /// Offset of the string's first character.
        offset: usize,
    },
    /// A string to encode contains a NUL byte, which CDR strings cannot carry.
    #[error("string contains a NUL byte at {at}")]
    InnerNul {
        /// Byte index of the first NUL.
        at: usize,
    },
    /// An encapsulation (representation) identifier this layer does not know.
    #[error("unknown encapsulation identifier {0:#06x}")]
    UnknownEncapsulation(u16),
    /// A known encapsulation that is not CDR (e.g. XML, 0x0004).
    #[error("unsupported encapsulation identifier {0:#06x}")]
    UnsupportedEncapsulation(u16),
    /// The padding count in the encapsulation options exceeds the body length.
    #[error("encapsulation padding {padding} exceeds body length {body}")]
    BadPadding {
        /// Padding count from the options field.
        padding: usize,
        /// Body length.
        body: usize,
    },
    /// A Rust `char` outside 0..=255 cannot be encoded as an IDL 8-bit `char`.
    #[error("char {0:?} does not fit an 8-bit IDL char")]
    CharOutOfRange(char),
    /// A length or count does not fit the u32 used on the wire.
    #[error("length {0} does not fit in u32")]
    LengthOverflow(usize),
    /// An enumerator value that the enum does not declare.
    #[error("unknown enumerator value {0}")]
    InvalidEnum(u32),
    /// A mutable-type member with the must-understand flag whose id this type does not know.
    #[error("unknown must-understand member id {0:#x}")]
    UnknownMustUnderstand(u32),
    /// A member id that does not fit the 28 bits of an XTypes member id.
    #[error("member id {0:#x} exceeds 28 bits")]
    InvalidMemberId(u32),
    /// Aggregated types are nested deeper than
    /// [`MAX_NESTING_DEPTH`](crate::MAX_NESTING_DEPTH) (only recursive types can get there).
    #[error("types nested deeper than {max} levels")]
    TooDeep {
        /// The limit.
        max: usize,
    },
    /// A malformed parameter-list or EMHEADER member header.
    #[error("malformed member header at offset {offset}")]
    BadMemberHeader {
        /// Offset of the header.
        offset: usize,
    },
}
