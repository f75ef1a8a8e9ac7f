//! Return codes, the per-thread last error message, and the panic barrier every exported
//! function runs behind.

use std::cell::RefCell;
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

use ferrodds::DdsError;

/// Return code of every fallible C API function (`FERRODDS_RETCODE_*`).
pub type FerroddsRetcode = i32;

/// Success.
pub const FERRODDS_RETCODE_OK: FerroddsRetcode = 0;
/// `RETCODE_ERROR`: an unspecified failure inside the middleware ([`DdsError::Error`]).
pub const FERRODDS_RETCODE_ERROR: FerroddsRetcode = 1;
/// `RETCODE_UNSUPPORTED` ([`DdsError::Unsupported`]).
pub const FERRODDS_RETCODE_UNSUPPORTED: FerroddsRetcode = 2;
/// `RETCODE_BAD_PARAMETER`: a null pointer, an invalid value, a handle of the wrong kind
/// ([`DdsError::BadParameter`]).
pub const FERRODDS_RETCODE_BAD_PARAMETER: FerroddsRetcode = 3;
/// `RETCODE_PRECONDITION_NOT_MET` ([`DdsError::PreconditionNotMet`]).
pub const FERRODDS_RETCODE_PRECONDITION_NOT_MET: FerroddsRetcode = 4;
/// `RETCODE_OUT_OF_RESOURCES` ([`DdsError::OutOfResources`]).
pub const FERRODDS_RETCODE_OUT_OF_RESOURCES: FerroddsRetcode = 5;
/// `RETCODE_NOT_ENABLED` ([`DdsError::NotEnabled`]).
pub const FERRODDS_RETCODE_NOT_ENABLED: FerroddsRetcode = 6;
/// `RETCODE_ALREADY_DELETED`: the handle was deleted (or its participant was), or it was
/// never valid ([`DdsError::AlreadyDeleted`]).
pub const FERRODDS_RETCODE_ALREADY_DELETED: FerroddsRetcode = 9;
/// `RETCODE_TIMEOUT`: a wait ended without its condition ([`DdsError::Timeout`]).
pub const FERRODDS_RETCODE_TIMEOUT: FerroddsRetcode = 10;
/// `RETCODE_NO_DATA`: a take or read found no sample.
pub const FERRODDS_RETCODE_NO_DATA: FerroddsRetcode = 11;
/// `RETCODE_ILLEGAL_OPERATION` ([`DdsError::IllegalOperation`]).
pub const FERRODDS_RETCODE_ILLEGAL_OPERATION: FerroddsRetcode = 12;
/// A sample could not be serialized or deserialized, or its bytes are not a valid sample
/// of the topic type (a bound exceeded, truncated, wrong encapsulation)
/// ([`DdsError::Serialization`]).
pub const FERRODDS_RETCODE_SERIALIZATION: FerroddsRetcode = 100;
/// The network transport failed ([`DdsError::Transport`], [`DdsError::Tls`],
/// [`DdsError::SharedMemory`]).
pub const FERRODDS_RETCODE_TRANSPORT: FerroddsRetcode = 101;
/// The protocol engine refused the operation ([`DdsError::Engine`], [`DdsError::Write`]).
pub const FERRODDS_RETCODE_ENGINE: FerroddsRetcode = 102;
/// An operating-system or capture-file error ([`DdsError::Io`], [`DdsError::Capture`],
/// [`DdsError::CaptureFile`]).
pub const FERRODDS_RETCODE_IO: FerroddsRetcode = 103;
/// The caller's buffer is too small for the next sample; the required size was stored and
/// the sample is kept for the next take.
pub const FERRODDS_RETCODE_BUFFER_TOO_SMALL: FerroddsRetcode = 104;
/// A bug: the library panicked; the panic was caught at the API boundary. The entity may
/// be unusable, the process is not.
pub const FERRODDS_RETCODE_INTERNAL: FerroddsRetcode = 105;

/// An error of the C layer: a return code and its message.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CError {
    /// An error of the Rust API.
    #[error(transparent)]
    Dds(#[from] DdsError),
    /// A C-layer argument error, naming the argument.
    #[error("bad parameter: {0}")]
    BadParameter(String),
    /// A handle that is not (or no longer) in the table.
    #[error("{0}: the handle was deleted or was never valid")]
    Deleted(&'static str),
    /// Nothing to take or read.
    #[error("no data")]
    NoData,
    /// The caller's buffer is too small.
    #[error("buffer of {have} bytes is too small for the next sample of {need} bytes")]
    BufferTooSmall {
        /// Bytes needed.
        need: usize,
        /// Bytes given.
        have: usize,
    },
    /// A timeout (waits).
    #[error("timed out")]
    Timeout,
    /// An operation not allowed from where it was called.
    #[error("illegal operation: {0}")]
    Illegal(&'static str),
}

impl From<ferrodds_cdr::CdrError> for CError {
    fn from(e: ferrodds_cdr::CdrError) -> Self {
        Self::Dds(DdsError::Serialization(e))
    }
}

impl CError {
    /// The message of an error expected in a polling loop (its `Display` text, which has no
    /// parameters), recorded without the formatter: `NoData` ends every take loop.
    fn fixed_message(&self) -> Option<&'static str> {
        match self {
            Self::NoData => Some("no data"),
            Self::Timeout | Self::Dds(DdsError::Timeout) => Some("timed out"),
            _ => None,
        }
    }

    /// The return code of this error.
    pub(crate) fn code(&self) -> FerroddsRetcode {
        match self {
            Self::Dds(e) => dds_code(e),
            Self::BadParameter(_) => FERRODDS_RETCODE_BAD_PARAMETER,
            Self::Deleted(_) => FERRODDS_RETCODE_ALREADY_DELETED,
            Self::NoData => FERRODDS_RETCODE_NO_DATA,
            Self::BufferTooSmall { .. } => FERRODDS_RETCODE_BUFFER_TOO_SMALL,
            Self::Timeout => FERRODDS_RETCODE_TIMEOUT,
            Self::Illegal(_) => FERRODDS_RETCODE_ILLEGAL_OPERATION,
        }
    }
}

/// The return code mirroring a [`DdsError`] variant.
pub(crate) fn dds_code(e: &DdsError) -> FerroddsRetcode {
    match e {
        DdsError::Error { .. } => FERRODDS_RETCODE_ERROR,
        DdsError::BadParameter { .. } => FERRODDS_RETCODE_BAD_PARAMETER,
        DdsError::Unsupported { .. } => FERRODDS_RETCODE_UNSUPPORTED,
        DdsError::OutOfResources { .. } => FERRODDS_RETCODE_OUT_OF_RESOURCES,
        DdsError::PreconditionNotMet { .. } => FERRODDS_RETCODE_PRECONDITION_NOT_MET,
        DdsError::Timeout => FERRODDS_RETCODE_TIMEOUT,
        DdsError::AlreadyDeleted => FERRODDS_RETCODE_ALREADY_DELETED,
        DdsError::NotEnabled => FERRODDS_RETCODE_NOT_ENABLED,
        DdsError::IllegalOperation { .. } => FERRODDS_RETCODE_ILLEGAL_OPERATION,
        DdsError::Serialization(_) => FERRODDS_RETCODE_SERIALIZATION,
        DdsError::Transport(_) | DdsError::Tls(_) | DdsError::SharedMemory(_) => {
            FERRODDS_RETCODE_TRANSPORT
        }
        DdsError::Engine(_) | DdsError::Write(_) => FERRODDS_RETCODE_ENGINE,
        DdsError::Io(_) | DdsError::Capture(_) | DdsError::CaptureFile { .. } => {
            FERRODDS_RETCODE_IO
        }
        _ => FERRODDS_RETCODE_ERROR,
    }
}

/// Result of the C layer.
pub(crate) type CResult<T> = Result<T, CError>;

thread_local! {
    /// The message of the last failed call on this thread, NUL-terminated (just the NUL:
    /// none yet). Rewritten in place, so an expected outcome such as
    /// `FERRODDS_RETCODE_NO_DATA` does not allocate once the buffer has grown.
    static LAST_ERROR: RefCell<Vec<u8>> = RefCell::new(vec![0]);
}

/// Records `func: what` as this thread's last error message.
pub(crate) fn set_last_error(func: &str, what: &dyn std::fmt::Display) {
    use std::io::Write;
    LAST_ERROR.with(|l| {
        let mut buf = l.borrow_mut();
        buf.clear();
        let _ = write!(buf, "{func}: {what}");
        // Interior NULs cannot be in a C string.
        for b in buf.iter_mut() {
            if *b == 0 {
                *b = b'?';
            }
        }
        buf.push(0);
    });
}

/// Records `func: what` (no NUL inside `what`) as this thread's last error message, with
/// copies only.
fn set_last_error_fixed(func: &str, what: &str) {
    LAST_ERROR.with(|l| {
        let mut buf = l.borrow_mut();
        buf.clear();
        buf.extend_from_slice(func.as_bytes());
        buf.extend_from_slice(b": ");
        buf.extend_from_slice(what.as_bytes());
        buf.push(0);
    });
}

/// A pointer to this thread's last error message, valid until the thread's next failing
/// call.
pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().as_ptr().cast())
}

/// Runs `f` behind the panic barrier: its error becomes a return code (and this thread's
/// last error message, prefixed with `func`), a panic becomes
/// [`FERRODDS_RETCODE_INTERNAL`].
pub(crate) fn guard(func: &str, f: impl FnOnce() -> CResult<()>) -> FerroddsRetcode {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => FERRODDS_RETCODE_OK,
        Ok(Err(e)) => {
            match e.fixed_message() {
                Some(m) => set_last_error_fixed(func, m),
                None => set_last_error(func, &e),
            }
            e.code()
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            set_last_error(func, &format_args!("internal error (caught panic): {what}"));
            FERRODDS_RETCODE_INTERNAL
        }
    }
}

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last() -> String {
        // SAFETY: `last_error_ptr` points at the thread-local NUL-terminated message,
        // which lives until this thread's next failing call (none happens in between).
        unsafe { CStr::from_ptr(last_error_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn errors_become_codes_and_messages() {
        assert_eq!(guard("f", || Ok(())), FERRODDS_RETCODE_OK);
        assert_eq!(
            guard("ferrodds_x", || Err(CError::Deleted("writer"))),
            FERRODDS_RETCODE_ALREADY_DELETED
        );
        assert_eq!(
            last(),
            "ferrodds_x: writer: the handle was deleted or was never valid"
        );
        assert_eq!(
            guard("g", || Err(DdsError::Timeout.into())),
            FERRODDS_RETCODE_TIMEOUT
        );
        assert_eq!(last(), "g: timed out");
        assert_eq!(guard("n", || Err(CError::NoData)), FERRODDS_RETCODE_NO_DATA);
        assert_eq!(last(), "n: no data");
        assert_eq!(
            guard("t", || Err(CError::Timeout)),
            FERRODDS_RETCODE_TIMEOUT
        );
        assert_eq!(last(), "t: timed out");
        // The fixed messages are the errors' own texts.
        for e in [CError::NoData, CError::Timeout, DdsError::Timeout.into()] {
            assert_eq!(e.fixed_message(), Some(e.to_string().as_str()));
        }
        assert_eq!(
            guard("h", || Err(CError::BadParameter("nul\0inside".into()))),
            FERRODDS_RETCODE_BAD_PARAMETER
        );
        assert_eq!(last(), "h: bad parameter: nul?inside");
    }

    #[test]
    fn panics_are_caught() {
        let code = guard("p", || panic!("boom {}", 1));
        assert_eq!(code, FERRODDS_RETCODE_INTERNAL);
        assert_eq!(last(), "p: internal error (caught panic): boom 1");
    }

    #[test]
    fn every_dds_error_maps_to_its_code() {
        let cases = [
            (DdsError::Error { what: "x" }, 1),
            (DdsError::Unsupported { what: "x" }, 2),
            (DdsError::BadParameter { what: "x" }, 3),
            (DdsError::PreconditionNotMet { what: "x" }, 4),
            (DdsError::OutOfResources { what: "x" }, 5),
            (DdsError::NotEnabled, 6),
            (DdsError::AlreadyDeleted, 9),
            (DdsError::Timeout, 10),
            (DdsError::IllegalOperation { what: "x" }, 12),
            (
                DdsError::Serialization(ferrodds_cdr::CdrError::InvalidBool(7)),
                100,
            ),
            (DdsError::Io(std::io::Error::other("x")), 103),
        ];
        for (e, code) in cases {
            assert_eq!(dds_code(&e), code, "{e}");
        }
    }
}
