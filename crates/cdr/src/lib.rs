//! FerroDDS CDR layer: XCDR1/XCDR2 serialization of user data types, the 4-byte
//! encapsulation header, and RTPS key hashes.
//!
//! # Contract
//!
//! - **Pure**: no I/O, no clocks, no global state. Everything works on caller-provided
//!   buffers: [`CdrWriter`] appends to a `&mut Vec<u8>` the caller owns and reuses (so a
//!   steady-state writer does not allocate), [`CdrReader`] borrows a `&[u8]`.
//! - **Alignment** is counted from the first byte of the body, i.e. the byte after the
//!   4-byte encapsulation header. XCDR1 aligns each primitive to its size (8-byte types to
//!   8); XCDR2 caps alignment at 4. XCDR1 parameter-list members align relative to the
//!   start of the member data.
//! - **Extensibility**: final types are members in order; appendable types get a DHEADER
//!   in XCDR2 (nothing in XCDR1); mutable types are parameter lists in XCDR1 (short and
//!   extended PIDs, PID_LIST_END sentinel) and DHEADER + EMHEADER per member in XCDR2.
//!   XCDR2 sequences and arrays of non-primitive elements carry a DHEADER.
//! - **Untrusted input** never panics and never makes the decoder allocate from a length
//!   read off the wire before checking that the remaining input can hold that many
//!   elements of the element type's minimum size. Nesting of derived types (reachable
//!   without bound only by recursive types) is limited to [`MAX_NESTING_DEPTH`] levels, so
//!   input cannot exhaust the stack. All failures are typed [`CdrError`]s.
//! - **Encoding a sample** ([`encode_sample`]) writes the encapsulation header matching
//!   the type's extensibility, the body, and pads it to a multiple of 4, recording the
//!   pad count in the options. [`decode_sample`] accepts every CDR encapsulation id.
//! - **Key hash** ([`key_hash`], [`key_hash_with`]): key members serialized big-endian
//!   (XCDR1 by default, like Cyclone; XCDR2 on request), zero-padded to 16 bytes if the
//!   type's maximum key size is at most 16, otherwise MD5. Unkeyed types have none.
//!   [`key_hash_from_key_payload`] computes the same hash from a key-only payload
//!   ([`encode_key`]'s output in any encoding, as in dispose/unregister samples) without
//!   decoding a whole sample.
//! - **Types**: [`CdrType`] for everything serializable, [`TopicType`] for topic types;
//!   `#[derive(TopicType)]` and `#[derive(CdrEnum)]` generate both with fully qualified
//!   paths. [`types`] ships the RTI perftest types and the OMG interoperability `ShapeType`.
//!
//! ```
//! use ferrodds_cdr::{decode_sample, encode_sample, key_hash, Encoding, TopicType};
//!
//! #[derive(Debug, PartialEq, TopicType)]
//! #[dds(type_name = "Reading", extensibility = "appendable")]
//! struct Reading {
//!     #[key]
//!     sensor: u32,
//!     #[dds(bound = 16)]
//!     unit: String,
//!     values: Vec<f64>,
//! }
//!
//! let r = Reading { sensor: 7, unit: "K".into(), values: vec![1.5] };
//! let mut buf = Vec::new();
//! encode_sample(&r, Encoding::XCDR2_LE, &mut buf)?;
//! assert_eq!(&buf[..2], &[0x00, 0x09]); // D_CDR2_LE
//! assert_eq!(decode_sample::<Reading>(&buf)?, r);
//! assert_eq!(key_hash(&r)?.unwrap()[..4], [0, 0, 0, 7]);
//! # Ok::<(), ferrodds_cdr::CdrError>(())
//! ```
#![forbid(unsafe_code)]

extern crate self as ferrodds_cdr;

mod cdr_type;
pub mod encapsulation;
mod error;
mod reader;
mod sample;
pub mod types;
mod writer;

pub use cdr_type::{BoundedCdr, CdrType, TopicType};
pub use encapsulation::{
    EncapsulationHeader, Encoding, Endianness, Extensibility, Representation, XcdrVersion,
};
pub use error::CdrError;
pub use ferrodds_cdr_derive::{CdrEnum, TopicType};
pub use reader::{CdrReader, MemberHeader, MutableScope, Scope, MAX_NESTING_DEPTH};
pub use sample::{
    decode_sample, decode_sample_into, encode_key, encode_sample, key_hash,
    key_hash_from_any_key_payload, key_hash_from_key_payload, key_hash_from_key_payload_with,
    key_hash_with, KeyHash,
};
pub use writer::{
    CdrWriter, DheaderToken, MemberToken, EMHEADER_MUST_UNDERSTAND, MEMBER_ID_MASK, PID_EXTENDED,
    PID_FLAG_IMPL, PID_FLAG_MUST_UNDERSTAND, PID_IGNORE, PID_LIST_END, PID_MASK,
};

#[doc(hidden)]
pub use cdr_type::__private;
