//! Error types.

use crate::Timestamp;

/// Errors from the capture writers.
///
/// After an [`CaptureError::Io`] error the output may end in a partial
/// block; the writer should then be dropped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// Writing to the underlying output failed.
    #[error("capture output failed: {0}")]
    Io(#[from] std::io::Error),
    /// The UDP payload is larger than a UDP length field can describe.
    #[error("UDP payload of {len} bytes exceeds the maximum of {max}")]
    DatagramTooLarge {
        /// Payload length passed in.
        len: usize,
        /// Largest accepted payload length.
        max: usize,
    },
    /// The interface id was not returned by this writer's `add_interface`.
    #[error("unknown capture interface id {0}")]
    UnknownInterface(u32),
    /// A pcapng option value (interface name, comment) is longer than 65535 bytes.
    #[error("{what} of {len} bytes exceeds the pcapng option limit of 65535 bytes")]
    OptionTooLong {
        /// Which option.
        what: &'static str,
        /// Its length in bytes.
        len: usize,
    },
    /// The MTU is outside the accepted range.
    #[error("IPv4 MTU {0} is outside {min}..={max}", min = crate::MIN_IPV4_MTU, max = crate::MAX_IPV4_MTU)]
    InvalidMtu(u16),
    /// The timestamp does not fit the format (classic pcap stores 32-bit seconds).
    #[error("timestamp {0:?} does not fit the capture format")]
    TimestampOutOfRange(Timestamp),
    /// Bytes given as encoded packet blocks are not a whole number of them.
    #[error("not a run of encoded packet blocks (at byte {offset})")]
    MalformedBlocks {
        /// Where the first bad block starts.
        offset: usize,
    },
}

/// Errors from [`read_udp_payloads`](crate::read_udp_payloads) and friends.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Reading the input failed.
    #[error("reading capture failed: {0}")]
    Io(#[from] std::io::Error),
    /// The input starts with neither a pcap nor a pcapng magic number.
    #[error("not a pcap or pcapng file (magic {magic:#010x})")]
    UnknownFormat {
        /// The first four bytes, big-endian.
        magic: u32,
    },
    /// The input ends inside a header or record.
    #[error("capture truncated at byte offset {offset}: need {needed} bytes, have {have}")]
    Truncated {
        /// Byte offset of the header or record.
        offset: usize,
        /// Bytes needed from `offset`.
        needed: usize,
        /// Bytes available from `offset`.
        have: usize,
    },
    /// The file structure (blocks, records, headers) is malformed.
    #[error("malformed capture file at byte offset {offset}: {source}")]
    Malformed {
        /// Byte offset of the block or record that failed to parse.
        offset: usize,
        /// What the pcap parser reported.
        #[source]
        source: pcap_file::PcapError,
    },
}
