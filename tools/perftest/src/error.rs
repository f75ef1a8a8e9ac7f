//! Typed errors of the perftest tool.

use std::io;

/// A command-line error: the message is printed on stderr and the process exits non-zero.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionError {
    /// An argument that matches no option (RTI wording).
    #[error("Cannot parse '{0}', invalid input.")]
    Unknown(String),
    /// An option that needs a value was last on the line or followed by another option.
    #[error("Missing value for '{0}'.")]
    MissingValue(&'static str),
    /// A negative number where only non-negative values exist.
    #[error("Invalid value '{value}' for '{option}': negative values are not allowed.")]
    Negative {
        /// Canonical option name.
        option: &'static str,
        /// The value as given.
        value: String,
    },
    /// An option prefix that several options share.
    #[error("Ambiguous option '{arg}': it could be {}.", candidates.join(", "))]
    Ambiguous {
        /// The argument as given.
        arg: String,
        /// The options it is a prefix of.
        candidates: Vec<&'static str>,
    },
    /// A raw-transport `-nic` that is neither an IPv4 address nor an interface with one.
    #[error("Invalid value '{nic}' for '-nic': neither an IPv4 address nor the name of an interface with an IPv4 address (interfaces: {available}).")]
    NoSuchInterface {
        /// The value as given.
        nic: String,
        /// The interfaces with an IPv4 address.
        available: String,
    },
    /// A value that does not parse or is out of range.
    #[error("Invalid value '{value}' for '{option}': {reason}.")]
    BadValue {
        /// Canonical option name.
        option: &'static str,
        /// The value as given.
        value: String,
        /// What is expected.
        reason: &'static str,
    },
    /// A publisher-only option with an explicit `-sub`, or the reverse.
    #[error("Cannot use '{option}' while setting '{role}'.")]
    WrongRole {
        /// Canonical option name.
        option: &'static str,
        /// `-pub` or `-sub`.
        role: &'static str,
    },
    /// An option this implementation (or the middleware) does not support.
    #[error("'{option}' is not supported by FerroDDS perftest: {reason}.")]
    Unsupported {
        /// Canonical option name.
        option: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// Two options (or an option and a mode) that cannot be combined.
    #[error("{0}")]
    Conflict(&'static str),
    /// Raw publisher peers that do not reach every subscriber id.
    #[error("With -rawTransport the publisher sends only to the subscriber ids its '-peer's name (ADDR is id 0, ADDR:ID, ADDR:FIRST-LAST): subscriber {missing} of '-numSubscribers {num_subscribers}' is not reached; give e.g. '-peer ADDR:0-{last}'.", last = num_subscribers - 1)]
    RawPeersMissSubscriber {
        /// The first id not reached.
        missing: u32,
        /// `-numSubscribers`.
        num_subscribers: u32,
    },
    /// `-numIter` below `-latencyCount`.
    #[error("'-numIter' ({num_iter}) must not be smaller than '-latencyCount' ({latency_count}).")]
    NumIterBelowLatencyCount {
        /// Effective `-numIter`.
        num_iter: u64,
        /// Effective `-latencyCount`.
        latency_count: u64,
    },
    /// `-dataLen` out of the range allowed for the selected mode.
    #[error("'-dataLen' {data_len} is out of range: {min}..={max} for {mode}.")]
    DataLenRange {
        /// Requested size.
        data_len: u64,
        /// Smallest allowed.
        min: u64,
        /// Largest allowed.
        max: u64,
        /// Mode name.
        mode: &'static str,
    },
}

/// A run-time error of a test (set-up, transport, output).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PerftestError {
    /// Bad command line.
    #[error(transparent)]
    Option(#[from] OptionError),
    /// Socket or file I/O.
    #[error("I/O error while {context}: {source}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// Encoding or decoding a sample.
    #[error("CDR error: {0}")]
    Cdr(#[from] ferrodds_cdr::CdrError),
    /// The DDS middleware failed.
    #[cfg(feature = "dds")]
    #[error("DDS error while {context}: {source}")]
    Dds {
        /// What was being done.
        context: &'static str,
        /// The middleware error.
        #[source]
        source: ferrodds::DdsError,
    },
    /// The QoS profiles file cannot be used (it names the file, line and element).
    #[cfg(feature = "dds")]
    #[error("QoS profiles: {0}")]
    QosXml(#[from] ferrodds::QosXmlError),
    /// The TLS configuration cannot be used.
    #[cfg(feature = "tls")]
    #[error("TLS error while {context}: {source}")]
    Tls {
        /// What was being done.
        context: &'static str,
        /// The TLS error.
        #[source]
        source: ferrodds_transport_tls::TlsError,
    },
    /// The DDS Security files or settings cannot be used (the message names the option and
    /// the file).
    #[error("DDS Security: {0}")]
    Secure(String),
    /// A feature of the selected backend that does not exist (yet).
    #[error("{0}")]
    NotAvailable(&'static str),
    /// Setting a thread/process property (affinity, priority, memory lock) failed.
    #[error("{what} failed: {source}")]
    System {
        /// What was attempted.
        what: &'static str,
        /// The errno.
        #[source]
        source: nix::Error,
    },
    /// A received datagram that is not a sequence of perftest samples.
    #[error("malformed raw datagram: {0}")]
    Malformed(&'static str),
}

impl PerftestError {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: &'static str) -> impl FnOnce(io::Error) -> PerftestError {
        move |source| PerftestError::Io { context, source }
    }
}
