//! Typed errors of the shared-memory transport.

use std::io;
use std::path::PathBuf;

/// Why a segment could not be created, opened or used.
#[derive(Debug, thiserror::Error)]
pub enum ShmError {
    /// The configuration is out of range (slot count not a power of two, sizes too large...).
    #[error("invalid shared-memory configuration: {0}")]
    InvalidConfig(String),
    /// No segment exists at this path (its owner is not running, or not on this host).
    #[error("no shared-memory segment at {}", .0.display())]
    NotFound(PathBuf),
    /// The segment's owner (the pid in its header) is no longer running: a stale file.
    #[error("{}: its owner (pid {pid}) is not running", path.display())]
    OwnerGone {
        /// The segment file.
        path: PathBuf,
        /// The owner pid from its header.
        pid: u32,
    },
    /// A system call on the segment file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The segment file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The file exists but its header is not one this implementation accepts (wrong magic,
    /// layout version or sizes, or the file is shorter than the header says).
    #[error("{}: not a usable FerroDDS segment: {reason}", path.display())]
    BadSegment {
        /// The segment file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

impl ShmError {
    pub(crate) fn io(path: &std::path::Path, source: io::Error) -> Self {
        if source.kind() == io::ErrorKind::NotFound {
            ShmError::NotFound(path.to_path_buf())
        } else {
            ShmError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    }

    pub(crate) fn io_at(path: &std::path::Path, source: io::Error) -> Self {
        ShmError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn bad(path: &std::path::Path, reason: impl Into<String>) -> Self {
        ShmError::BadSegment {
            path: path.to_path_buf(),
            reason: reason.into(),
        }
    }
}

impl ShmError {
    /// The `io::ErrorKind` this error converts to.
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            ShmError::InvalidConfig(_) => io::ErrorKind::InvalidInput,
            ShmError::NotFound(_) | ShmError::OwnerGone { .. } => io::ErrorKind::NotFound,
            ShmError::Io { source, .. } => source.kind(),
            ShmError::BadSegment { .. } => io::ErrorKind::InvalidData,
        }
    }
}

impl From<ShmError> for io::Error {
    fn from(e: ShmError) -> Self {
        io::Error::new(e.kind(), e)
    }
}

/// Why [`ShmSender::send`](crate::ShmSender::send) did not deliver a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// Every slot of the receiver's ring is in use (the receiver is slower than its senders,
    /// or gone). The message is dropped; reliable writers repair it like datagram loss.
    #[error("the receiver's ring is full")]
    Full,
    /// The message does not fit in one slot.
    #[error("message of {len} bytes exceeds the slot payload of {max} bytes")]
    TooLarge {
        /// The message length.
        len: usize,
        /// The slot payload size of the receiver.
        max: usize,
    },
    /// The receiver gave up on the slot this sender had claimed (the sender stalled for
    /// longer than the stall timeout between claiming and marking it); the message is dropped.
    #[error("the receiver skipped the claimed slot (the sender stalled)")]
    Skipped,
    /// The ring's shared counters are inconsistent (a corrupted or hostile segment).
    #[error("the receiver's ring is inconsistent")]
    Corrupt,
}

impl SendError {
    /// The `io::ErrorKind` this error converts to.
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            SendError::Full | SendError::Skipped => io::ErrorKind::WouldBlock,
            SendError::TooLarge { .. } => io::ErrorKind::InvalidInput,
            SendError::Corrupt => io::ErrorKind::InvalidData,
        }
    }
}

impl From<SendError> for io::Error {
    fn from(e: SendError) -> Self {
        io::Error::new(e.kind(), e)
    }
}

/// Why [`PoolReader::copy`](crate::PoolReader::copy) did not copy a chunk.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolReadError {
    /// There is no pool file of that id, or its owner is not running.
    #[error("no such loan pool (or its owner is not running)")]
    NotFound,
    /// The pool file cannot be used: it cannot be opened or mapped, or its header fails
    /// validation (wrong magic, version, id or sizes, regions outside the file or
    /// overlapping).
    #[error("unusable loan pool: {0}")]
    BadPool(String),
    /// The reference does not fit the pool's layout (class, index, or a length larger than
    /// the chunk) or is malformed (an odd generation).
    #[error("chunk reference outside the pool's layout")]
    OutOfRange,
    /// The chunk was reused (or is being rewritten) since the reference was made, or the pool
    /// file now belongs to another owner: the copy is discarded.
    #[error("stale chunk reference")]
    Stale,
}
