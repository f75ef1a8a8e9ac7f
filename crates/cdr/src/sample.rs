//! Whole serialized payloads (encapsulation header + body) and key hashes.

use md5::{Digest, Md5};

use crate::encapsulation::{
    EncapsulationHeader, Encoding, Endianness, Representation, XcdrVersion,
};
use crate::error::CdrError;
use crate::reader::CdrReader;
use crate::writer::CdrWriter;
use crate::TopicType;

/// A 16-byte RTPS key hash (PID_KEY_HASH).
pub type KeyHash = [u8; 16];

/// Appends a serialized payload for `sample` to `out`: the encapsulation header chosen
/// from `T::EXTENSIBILITY` and `encoding`, the body, and zero padding to a multiple of 4
/// whose count goes in the options' low two bits (as Cyclone does for both XCDR versions).
///
/// Returns the number of bytes appended. On error `out` is truncated back to its original
/// length.
pub fn encode_sample<T: TopicType>(
    sample: &T,
    encoding: Encoding,
    out: &mut Vec<u8>,
) -> Result<usize, CdrError> {
    let start = out.len();
    let repr = Representation::for_type(T::EXTENSIBILITY, encoding);
    out.extend_from_slice(&EncapsulationHeader::new(repr).to_bytes());
    let res = sample.serialize(&mut CdrWriter::new(out, encoding));
    if let Err(e) = res {
        out.truncate(start);
        return Err(e);
    }
    let pad = (4 - (out.len() - start) % 4) % 4;
    out.resize(out.len() + pad, 0);
    out[start + 3] = pad as u8;
    Ok(out.len() - start)
}

/// Decodes a serialized payload in any CDR encapsulation (XCDR1 or XCDR2, either byte
/// order). The body is decoded per `T`'s own extensibility; the identifier only supplies
/// version and byte order. Bytes left after the value (padding, members of a newer type
/// version) are ignored.
pub fn decode_sample<T: TopicType>(payload: &[u8]) -> Result<T, CdrError> {
    T::deserialize(&mut body_reader(payload)?)
}

/// A reader over the body of a serialized payload: the encapsulation header parsed and
/// the trailing padding it announces removed.
#[inline]
fn body_reader(payload: &[u8]) -> Result<CdrReader<'_>, CdrError> {
    let (header, body) = EncapsulationHeader::parse(payload)?;
    let pad = header.padding();
    if pad > body.len() {
        return Err(CdrError::BadPadding {
            padding: pad,
            body: body.len(),
        });
    }
    let body = &body[..body.len() - pad];
    Ok(CdrReader::new(body, header.representation.encoding()))
}

/// Decodes a serialized payload like [`decode_sample`], into `out`, reusing the storage
/// `out` owns (sequence and string buffers; see
/// [`CdrType::deserialize_into`](crate::CdrType::deserialize_into)): decoding sample after
/// sample into one value does not allocate once its buffers are large enough. On error
/// `out` holds a valid but unspecified value.
pub fn decode_sample_into<T: TopicType>(payload: &[u8], out: &mut T) -> Result<(), CdrError> {
    out.deserialize_into(&mut body_reader(payload)?)
}

/// Appends a key-only payload (encapsulation header + the key-holder serialization, see
/// [`CdrType::serialize_key_holder`](crate::CdrType::serialize_key_holder)), as used for
/// dispose/unregister samples, to `out`. Padding is handled as in [`encode_sample`].
pub fn encode_key<T: TopicType>(
    sample: &T,
    encoding: Encoding,
    out: &mut Vec<u8>,
) -> Result<usize, CdrError> {
    let start = out.len();
    let repr = Representation::for_type(T::EXTENSIBILITY, encoding);
    out.extend_from_slice(&EncapsulationHeader::new(repr).to_bytes());
    if let Err(e) = sample.serialize_key_holder(&mut CdrWriter::new(out, encoding)) {
        out.truncate(start);
        return Err(e);
    }
    let pad = (4 - (out.len() - start) % 4) % 4;
    out.resize(out.len() + pad, 0);
    out[start + 3] = pad as u8;
    Ok(out.len() - start)
}

/// The key hash of `sample` using XCDR1 key serialization (Cyclone's default), or `None`
/// for unkeyed types. See [`key_hash_with`].
pub fn key_hash<T: TopicType>(sample: &T) -> Result<Option<KeyHash>, CdrError> {
    let mut scratch = Vec::new();
    key_hash_with(sample, XcdrVersion::Xcdr1, &mut scratch)
}

/// The key hash of `sample` (RTPS 2.5 §9.6.4.8; XTypes 1.3 §7.6.8).
///
/// The key members are serialized big-endian with `version`'s rules (XCDR1: declaration
/// order, 8-byte alignment; XCDR2: member-id order, alignment capped at 4). If the type's
/// maximum key size for that version is at most 16 bytes, the hash is that serialization
/// zero-padded to 16 bytes; otherwise (including unbounded keys) it is its MD5 digest.
/// `scratch` is cleared and reused, so a caller keeping one buffer hashes without
/// allocating. Returns `None` for unkeyed types.
pub fn key_hash_with<T: TopicType>(
    sample: &T,
    version: XcdrVersion,
    scratch: &mut Vec<u8>,
) -> Result<Option<KeyHash>, CdrError> {
    if !T::IS_KEYED {
        return Ok(None);
    }
    scratch.clear();
    let encoding = Encoding {
        version,
        endianness: Endianness::Big,
    };
    sample.serialize_key(&mut CdrWriter::new(scratch, encoding))?;
    Ok(Some(hash_key_form::<T>(version, scratch)))
}

/// The key hash of a serialized key (`serialize_key` output, big-endian, `version` rules).
fn hash_key_form<T: TopicType>(version: XcdrVersion, key: &[u8]) -> KeyHash {
    let max = match version {
        XcdrVersion::Xcdr1 => T::KEY_MAX_SIZE_XCDR1,
        XcdrVersion::Xcdr2 => T::KEY_MAX_SIZE_XCDR2,
    };
    let mut hash = [0u8; 16];
    match max {
        Some(m) if m <= 16 && key.len() <= 16 => {
            hash[..key.len()].copy_from_slice(key);
        }
        _ => hash.copy_from_slice(&Md5::digest(key)),
    }
    hash
}

/// The key hash of the instance named by a key-only payload (the output of
/// [`encode_key`] in any encoding, as sent with dispose/unregister samples), using XCDR1
/// key serialization like [`key_hash`]. `None` for unkeyed types. See
/// [`key_hash_from_key_payload_with`].
pub fn key_hash_from_key_payload<T: TopicType>(
    payload: &[u8],
) -> Result<Option<KeyHash>, CdrError> {
    let mut scratch = Vec::new();
    key_hash_from_key_payload_with::<T>(payload, XcdrVersion::Xcdr1, &mut scratch)
}

/// The key hash of the instance named by a key-only payload, equal to
/// [`key_hash_with`]`(sample, version, _)` of any sample whose [`encode_key`] output the
/// payload is, whatever encoding the payload uses.
///
/// The key holder is decoded member by member and re-serialized big-endian with `version`'s
/// rules into `scratch` (cleared first), without building a `T` (non-key members need not
/// be decodable or defaultable). Malformed payloads yield typed errors. Bytes after the key
/// holder are ignored, as in [`decode_sample`].
pub fn key_hash_from_key_payload_with<T: TopicType>(
    payload: &[u8],
    version: XcdrVersion,
    scratch: &mut Vec<u8>,
) -> Result<Option<KeyHash>, CdrError> {
    if !T::IS_KEYED {
        return Ok(None);
    }
    let (header, body) = EncapsulationHeader::parse(payload)?;
    let pad = header.padding();
    if pad > body.len() {
        return Err(CdrError::BadPadding {
            padding: pad,
            body: body.len(),
        });
    }
    let body = &body[..body.len() - pad];
    scratch.clear();
    let mut r = CdrReader::new(body, header.representation.encoding());
    let encoding = Encoding {
        version,
        endianness: Endianness::Big,
    };
    T::transcode_key_holder(&mut r, &mut CdrWriter::new(scratch, encoding))?;
    Ok(Some(hash_key_form::<T>(version, scratch)))
}

/// The key hash named by a key-only payload from any sender: the key holder as
/// [`key_hash_from_key_payload`] decodes it; failing that, a big-endian XCDR1 body
/// taken as the key serialization itself (what some implementations send with a
/// dispose or unregister), hashed by the same rule as [`key_hash_with`]. `None` for
/// unkeyed types and for payloads that are neither.
pub fn key_hash_from_any_key_payload<T: TopicType>(payload: &[u8]) -> Option<KeyHash> {
    if !T::IS_KEYED {
        return None;
    }
    if let Ok(hash) = key_hash_from_key_payload::<T>(payload) {
        return hash;
    }
    let (header, body) = EncapsulationHeader::parse(payload).ok()?;
    let body = body.get(..body.len().checked_sub(header.padding())?)?;
    if header.representation.encoding().endianness != Endianness::Big {
        return None;
    }
    let key = match T::KEY_MAX_SIZE_XCDR1 {
        Some(m) if m <= 16 => &body[..body.len().min(m)],
        _ => body,
    };
    Some(hash_key_form::<T>(XcdrVersion::Xcdr1, key))
}
