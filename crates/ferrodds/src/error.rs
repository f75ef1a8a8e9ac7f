//! [`DdsError`]: the error type of every fallible public operation, mirroring the DDS return
//! codes, with protocol and I/O detail as typed sources.

use std::io;

/// Errors of the public API. The variants mirror the OMG DDS return codes
/// (`RETCODE_ERROR`, `RETCODE_BAD_PARAMETER`, ...); lower-layer failures are kept as typed
/// sources.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DdsError {
    /// `RETCODE_ERROR`: an unspecified failure inside the middleware.
    #[error("internal error: {what}")]
    Error {
        /// What failed.
        what: &'static str,
    },
    /// `RETCODE_BAD_PARAMETER`: an argument or configuration value is invalid.
    #[error("bad parameter: {what}")]
    BadParameter {
        /// Which parameter and why.
        what: &'static str,
    },
    /// `RETCODE_UNSUPPORTED`: the operation or QoS is not implemented.
    #[error("unsupported: {what}")]
    Unsupported {
        /// What is not supported.
        what: &'static str,
    },
    /// `RETCODE_OUT_OF_RESOURCES`: a resource limit was reached.
    #[error("out of resources: {what}")]
    OutOfResources {
        /// Which resource.
        what: &'static str,
    },
    /// `RETCODE_PRECONDITION_NOT_MET`: the entity is not in a state allowing the operation.
    #[error("precondition not met: {what}")]
    PreconditionNotMet {
        /// Which precondition.
        what: &'static str,
    },
    /// `RETCODE_TIMEOUT`: a blocking operation did not complete in time (for example a
    /// KEEP_ALL write blocked longer than `max_blocking_time`).
    #[error("timed out")]
    Timeout,
    /// `RETCODE_ALREADY_DELETED`: the entity (or its participant) has been deleted.
    #[error("entity already deleted")]
    AlreadyDeleted,
    /// `RETCODE_NOT_ENABLED`: the entity is not enabled.
    #[error("entity not enabled")]
    NotEnabled,
    /// `RETCODE_ILLEGAL_OPERATION`: the operation is not allowed on this entity.
    #[error("illegal operation: {what}")]
    IllegalOperation {
        /// Why.
        what: &'static str,
    },
    /// A sample could not be serialized or deserialized.
    #[error("serialization failed: {0}")]
    Serialization(#[from] ferrodds_cdr::CdrError),
    /// The UDP transport could not be created.
    #[error("transport: {0}")]
    Transport(#[from] ferrodds_transport::TransportError),
    /// The protocol engine refused the operation.
    #[error("protocol engine: {0}")]
    Engine(#[from] ferrodds_rtps::EngineError),
    /// The protocol engine refused a write.
    #[error("write refused: {0}")]
    Write(#[from] ferrodds_rtps::WriteError),
    /// The TLS configuration cannot be used (unreadable PEM, a key that does not match the
    /// certificate, ...).
    #[cfg(feature = "tls")]
    #[error("{0}")]
    Tls(#[from] ferrodds_transport_tls::TlsError),
    /// The shared-memory transport could not be set up (its segment could not be created
    /// or mapped).
    #[cfg(feature = "shared-memory")]
    #[error("shared memory: {0}")]
    SharedMemory(#[from] ferrodds_transport_shm::ShmError),
    /// The capture file could not be written.
    #[error("capture: {0}")]
    Capture(#[from] ferrodds_capture::CaptureError),
    /// The capture file could not be created.
    #[error("capture file {}: {source}", path.display())]
    CaptureFile {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: io::Error,
    },
    /// DDS Security could not be set up: a configuration property, file or document is
    /// missing or invalid, or the permissions do not allow joining the domain (the message
    /// names the property or file and the reason).
    #[error("security: {0}")]
    Security(String),
    /// An operating-system error (thread creation, files).
    #[error("I/O: {0}")]
    Io(#[from] io::Error),
}

/// Result alias of the public API.
pub type DdsResult<T> = Result<T, DdsError>;
