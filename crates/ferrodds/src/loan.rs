//! Writer loans: a sample written in place, in its serialized form
//! ([`DataWriter::loan_sample`](crate::DataWriter::loan_sample)).
//!
//! A loan is a buffer for the serialized body (XCDR1 little-endian, after the 4-byte
//! encapsulation header the loan writes itself) of one sample of a [`FlatType`]. When every
//! reader of the writer is on this host and reached through shared memory, and the sample
//! is at least 16 KiB, the buffer is a chunk of the participant's shared-memory loan pool:
//! what the caller writes there is what the readers copy out, and the write copies nothing.
//! Otherwise it is a buffer of the writer's that the history takes on write (no copy
//! either). [`FlatType::validate_body`] checks the body on write without decoding it.

use ferrodds_cdr::types::{TestData, TestDataKeyed, TestDataKeyedLarge, TestDataLarge};
use ferrodds_cdr::{CdrError, CdrReader, Encoding, TopicType};

/// A topic type whose samples can be written in their serialized form through a writer
/// loan: the writer checks the bytes with [`FlatType::validate_body`] instead of
/// serializing a value. Implemented for perftest's four types; implement it for a type of
/// your own with a validator of its XCDR1 little-endian body.
pub trait FlatType: TopicType {
    /// Checks that `body` (XCDR1 little-endian, without the encapsulation header) starts
    /// with one well-formed value of the type, its bounds included, reading it without
    /// building the value; returns the value's length in bytes (the writer requires it to
    /// be the whole body).
    fn validate_body(body: &[u8]) -> Result<usize, CdrError>;
}

/// A perftest body: `octet key[4]`, five 32-bit members, `sequence<octet>` (at most
/// `bound`).
fn validate_perftest(body: &[u8], bound: Option<usize>) -> Result<usize, CdrError> {
    let mut r = CdrReader::new(body, Encoding::XCDR1_LE);
    r.skip(4)?;
    for _ in 0..5 {
        r.read_u32()?;
    }
    let n = r.read_len()?;
    if let Some(bound) = bound {
        if n > bound {
            return Err(CdrError::BoundExceeded { len: n, bound });
        }
    }
    r.read_raw(n)?;
    Ok(r.offset())
}

macro_rules! perftest_flat {
    ($t:ty, $bound:expr) => {
        impl FlatType for $t {
            fn validate_body(body: &[u8]) -> Result<usize, CdrError> {
                validate_perftest(body, $bound)
            }
        }
    };
}
perftest_flat!(TestData, Some(ferrodds_cdr::types::MAX_BOUNDED_SEQ_SIZE));
perftest_flat!(
    TestDataKeyed,
    Some(ferrodds_cdr::types::MAX_BOUNDED_SEQ_SIZE)
);
perftest_flat!(TestDataLarge, None);
perftest_flat!(TestDataKeyedLarge, None);

/// Where a loan's bytes are.
#[derive(Debug)]
pub(crate) enum LoanBuf {
    /// A chunk of the participant's shared-memory loan pool.
    #[cfg(feature = "shared-memory")]
    Shared(ferrodds_transport_shm::PoolChunk),
    /// A buffer of the writer's, which its history takes on write.
    Heap(Vec<u8>),
}

/// A sample lent by [`DataWriter::loan_sample`](crate::DataWriter::loan_sample): fill
/// [`SampleLoan::body_mut`] with the serialized value, then hand it to
/// [`DataWriter::write_loan`](crate::DataWriter::write_loan). Dropped without being written,
/// its buffer goes back (nothing is sent).
#[derive(Debug)]
pub struct SampleLoan<T> {
    pub(crate) buf: LoanBuf,
    /// The body's length (the bytes after the 4-byte encapsulation header, before padding).
    pub(crate) body_len: usize,
    /// The writer that lent it.
    pub(crate) writer: ferrodds_rtps::Guid,
    pub(crate) _t: core::marker::PhantomData<fn(&T)>,
}

impl<T> SampleLoan<T> {
    /// The serialized body to fill: XCDR1 little-endian, the value's encoding without the
    /// encapsulation header. Its contents when lent are unspecified (a previous sample's,
    /// or zeros).
    pub fn body_mut(&mut self) -> &mut [u8] {
        let len = self.body_len;
        match &mut self.buf {
            #[cfg(feature = "shared-memory")]
            LoanBuf::Shared(c) => &mut c.as_mut_slice()[4..4 + len],
            LoanBuf::Heap(v) => &mut v[4..4 + len],
        }
    }

    /// The body's length in bytes.
    pub fn body_len(&self) -> usize {
        self.body_len
    }

    /// Whether the loan is in shared memory (the write then sends a reference and copies
    /// nothing; readers on this host copy the bytes out).
    pub fn in_shared_memory(&self) -> bool {
        match &self.buf {
            #[cfg(feature = "shared-memory")]
            LoanBuf::Shared(_) => true,
            LoanBuf::Heap(_) => false,
        }
    }

    /// The whole serialized payload: encapsulation header, body and padding.
    pub(crate) fn payload(&self) -> &[u8] {
        let len = padded(self.body_len);
        match &self.buf {
            #[cfg(feature = "shared-memory")]
            LoanBuf::Shared(c) => &c_bytes(c)[..len],
            LoanBuf::Heap(v) => &v[..len],
        }
    }
}

#[cfg(feature = "shared-memory")]
fn c_bytes(c: &ferrodds_transport_shm::PoolChunk) -> &[u8] {
    c.as_slice()
}

/// The payload's length for a body of `body_len` bytes: the 4-byte encapsulation header,
/// the body, padding to a multiple of 4.
pub(crate) fn padded(body_len: usize) -> usize {
    4 + body_len.next_multiple_of(4)
}

/// Writes the encapsulation header (XCDR1 little-endian, final or appendable as `T` is,
/// with the padding count) and zeroes the padding of a payload of `body_len` body bytes.
pub(crate) fn frame<T: TopicType>(payload: &mut [u8], body_len: usize) {
    use ferrodds_cdr::{EncapsulationHeader, Representation};
    let pad = padded(body_len) - 4 - body_len;
    let repr = Representation::for_type(T::EXTENSIBILITY, crate::typesupport::USER_ENCODING);
    payload[..4].copy_from_slice(&EncapsulationHeader::new(repr).with_padding(pad).to_bytes());
    payload[4 + body_len..4 + body_len + pad].fill(0);
}
