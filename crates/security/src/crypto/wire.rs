//! Wire structures of the transforms: CryptoHeader, CryptoFooter, security submessage headers,
//! and the sizes a caller reserves.

use ferrodds_wire::submessage::id;

use super::keymat::TransformKind;
use super::{CryptoError, Result};

/// CryptoHeader: `transformation_kind(4) | transformation_key_id(4) | session_id(4) |
/// init_vector_suffix(8)`, all big-endian.
pub const CRYPTO_HEADER_LEN: usize = 20;
/// Common MAC and receiver-specific MAC length (the GCM tag).
pub const MAC_LEN: usize = 16;
/// One receiver-specific MAC: `receiver_mac_key_id(4) | receiver_mac(16)`.
pub const RECEIVER_MAC_LEN: usize = 4 + MAC_LEN;
/// CryptoFooter without receiver-specific MACs: `common_mac(16) | count(4, BE)`.
pub const CRYPTO_FOOTER_LEN: usize = MAC_LEN + 4;
/// Largest number of receiver-specific MACs: the SEC_POSTFIX / SRTPS_POSTFIX body must fit
/// the 16-bit `octetsToNextHeader` (at most 0xfffc, a multiple of 4).
pub const MAX_RECEIVER_MACS: usize = (0xfffc - CRYPTO_FOOTER_LEN) / RECEIVER_MAC_LEN;

/// Submessage header length.
pub(crate) const SUB_HDR: usize = 4;
/// RTPS header length.
pub(crate) const RTPS_HDR: usize = 20;
/// INFO_SRC submessage length (header + unused + version + vendor + prefix).
pub(crate) const INFO_SRC_LEN: usize = 24;
/// Largest `octetsToNextHeader` (a multiple of 4).
const MAX_OCTETS: usize = 0xfffc;

/// Most bytes a protected payload adds to the serialized payload (GCM: CryptoHeader,
/// CryptoContent length, CryptoFooter; GMAC needs 4 fewer).
pub const PAYLOAD_OVERHEAD: usize = CRYPTO_HEADER_LEN + 4 + CRYPTO_FOOTER_LEN;
/// Most bytes a protected submessage adds to the plain submessage, before
/// [`RECEIVER_MAC_LEN`] per receiver-specific MAC: SEC_PREFIX (24), SEC_BODY header and
/// length (8) with up to 3 bytes of padding, SEC_POSTFIX (24).
pub const SUBMESSAGE_OVERHEAD: usize =
    SUB_HDR + CRYPTO_HEADER_LEN + SUB_HDR + 4 + 3 + SUB_HDR + CRYPTO_FOOTER_LEN;
/// Most bytes a protected RTPS message adds to the plain message, before [`RECEIVER_MAC_LEN`]
/// per receiver-specific MAC: SRTPS_PREFIX (24), SEC_BODY header and length (8) with up to 3
/// bytes of padding, the INFO_SRC copy of the header (24), SRTPS_POSTFIX (24).
pub const MESSAGE_OVERHEAD: usize = SUBMESSAGE_OVERHEAD + INFO_SRC_LEN;

#[inline]
pub(crate) const fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

/// Exact length of [`SenderCrypto::encode_payload`](super::SenderCrypto::encode_payload)'s
/// output for a `plain_len`-byte payload.
#[must_use]
pub const fn payload_encoded_len(kind: TransformKind, plain_len: usize) -> usize {
    CRYPTO_HEADER_LEN + if kind.encrypts() { 4 } else { 0 } + plain_len + CRYPTO_FOOTER_LEN
}

/// Exact length of [`SenderCrypto::encode_submessage`](super::SenderCrypto::encode_submessage)'s
/// output for a `plain_len`-byte submessage and `receivers` receiver-specific MACs.
#[must_use]
pub const fn submessage_encoded_len(
    kind: TransformKind,
    plain_len: usize,
    receivers: usize,
) -> usize {
    let body = if kind.encrypts() {
        SUB_HDR + 4 + pad4(plain_len)
    } else {
        plain_len
    };
    SUB_HDR + CRYPTO_HEADER_LEN + body + SUB_HDR + CRYPTO_FOOTER_LEN + receivers * RECEIVER_MAC_LEN
}

/// Exact length of [`SenderCrypto::encode_message`](super::SenderCrypto::encode_message)'s
/// output for a `message_len`-byte RTPS message (header included) and `receivers`
/// receiver-specific MACs.
#[must_use]
pub const fn message_encoded_len(
    kind: TransformKind,
    message_len: usize,
    receivers: usize,
) -> usize {
    let plain = INFO_SRC_LEN + message_len.saturating_sub(RTPS_HDR);
    RTPS_HDR + submessage_encoded_len(kind, plain, receivers)
}

/// The CryptoHeader of a protected payload, submessage or message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CryptoHeader {
    /// Transformation kind (never NONE on the wire).
    pub transformation_kind: TransformKind,
    /// Sender key id of the key material used.
    pub transformation_key_id: u32,
    /// Session id (the first 4 bytes of the nonce).
    pub session_id: u32,
    /// IV suffix (the last 8 bytes of the nonce).
    pub init_vector_suffix: u64,
}

impl CryptoHeader {
    /// Parses the 20-byte CryptoHeader at the start of `b`. A NONE or unknown kind is refused.
    pub fn parse(b: &[u8]) -> Result<Self> {
        let Some(h) = b.first_chunk::<CRYPTO_HEADER_LEN>() else {
            return Err(CryptoError::Truncated {
                what: "CryptoHeader",
                needed: CRYPTO_HEADER_LEN,
                have: b.len(),
            });
        };
        let be = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let raw = be(0);
        let kind = TransformKind::from_u32(raw)?;
        if !kind.protects() {
            return Err(CryptoError::UnknownTransformKind(raw));
        }
        let mut iv = [0u8; 8];
        iv.copy_from_slice(&h[12..20]);
        Ok(Self {
            transformation_kind: kind,
            transformation_key_id: be(4),
            session_id: be(8),
            init_vector_suffix: u64::from_be_bytes(iv),
        })
    }

    /// Writes the 20 bytes into `out[..20]` (the caller checked the room).
    pub(crate) fn write(&self, out: &mut [u8]) {
        out[0..4].copy_from_slice(&self.transformation_kind.to_u32().to_be_bytes());
        out[4..8].copy_from_slice(&self.transformation_key_id.to_be_bytes());
        out[8..12].copy_from_slice(&self.session_id.to_be_bytes());
        out[12..20].copy_from_slice(&self.init_vector_suffix.to_be_bytes());
    }

    /// The 12-byte nonce.
    #[must_use]
    pub fn nonce(&self) -> [u8; 12] {
        super::keys::nonce_bytes(self.session_id, self.init_vector_suffix)
    }

    /// The CryptoHeader of a protected submessage (`bytes` starting at its SEC_PREFIX), to
    /// pick the [`ReceiverCrypto`](super::ReceiverCrypto) whose key material has this key id.
    pub fn of_submessage(bytes: &[u8]) -> Result<Self> {
        let s = read_sub(bytes, 0)?;
        expect(&s, id::SEC_PREFIX, "SEC_PREFIX")?;
        Self::parse(s.body(bytes))
    }

    /// The CryptoHeader of a protected RTPS message (`bytes` starting at its RTPS header).
    pub fn of_message(bytes: &[u8]) -> Result<Self> {
        let s = read_sub(bytes, RTPS_HDR.min(bytes.len()))?;
        expect(&s, id::SRTPS_PREFIX, "SRTPS_PREFIX")?;
        Self::parse(s.body(bytes))
    }
}

/// A submessage found in the input: id and body range.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sub {
    pub(crate) id: u8,
    /// Offset of the submessage header.
    pub(crate) start: usize,
    /// Offset of the body.
    pub(crate) body: usize,
    /// Body length (`octetsToNextHeader`).
    pub(crate) len: usize,
}

impl Sub {
    pub(crate) fn body<'a>(&self, b: &'a [u8]) -> &'a [u8] {
        &b[self.body..self.body + self.len]
    }

    pub(crate) fn end(&self) -> usize {
        self.body + self.len
    }
}

/// Reads the submessage header at `pos`: the body must be in the input and its length a
/// multiple of 4 (as Cyclone DDS requires of security submessages). The byte order of
/// `octetsToNextHeader` follows the E flag.
pub(crate) fn read_sub(b: &[u8], pos: usize) -> Result<Sub> {
    let have = b.len().saturating_sub(pos);
    if have < SUB_HDR {
        return Err(CryptoError::Truncated {
            what: "submessage header",
            needed: SUB_HDR,
            have,
        });
    }
    let octets = [b[pos + 2], b[pos + 3]];
    let len = usize::from(if b[pos + 1] & 1 != 0 {
        u16::from_le_bytes(octets)
    } else {
        u16::from_be_bytes(octets)
    });
    if !len.is_multiple_of(4) {
        return Err(CryptoError::BadLength {
            what: "octetsToNextHeader",
            value: len,
            reason: "not a multiple of 4",
        });
    }
    if len > have - SUB_HDR {
        return Err(CryptoError::Truncated {
            what: "submessage body",
            needed: len,
            have: have - SUB_HDR,
        });
    }
    Ok(Sub {
        id: b[pos],
        start: pos,
        body: pos + SUB_HDR,
        len,
    })
}

pub(crate) fn expect(s: &Sub, want: u8, name: &'static str) -> Result<()> {
    if s.id == want {
        Ok(())
    } else {
        Err(CryptoError::UnexpectedSubmessage {
            expected: name,
            expected_id: want,
            found: s.id,
        })
    }
}

/// Writes a submessage header (little-endian, E flag set) at `out[pos..pos + 4]`.
pub(crate) fn put_sub(out: &mut [u8], pos: usize, id: u8, octets: usize) -> Result<()> {
    let o = u16::try_from(octets)
        .ok()
        .filter(|&o| usize::from(o) <= MAX_OCTETS)
        .ok_or(CryptoError::TooLong {
            what: "submessage body",
            length: octets,
            max: MAX_OCTETS,
        })?;
    out[pos] = id;
    out[pos + 1] = 0x01;
    out[pos + 2..pos + 4].copy_from_slice(&o.to_le_bytes());
    Ok(())
}

/// A parsed CryptoFooter: the common MAC and the receiver-specific MAC entries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Footer<'a> {
    pub(crate) common_mac: [u8; MAC_LEN],
    /// `count` entries of [`RECEIVER_MAC_LEN`] bytes.
    pub(crate) macs: &'a [u8],
}

impl<'a> Footer<'a> {
    /// Parses a CryptoFooter from `b` (which may extend beyond it).
    pub(crate) fn parse(b: &'a [u8]) -> Result<Self> {
        if b.len() < CRYPTO_FOOTER_LEN {
            return Err(CryptoError::Truncated {
                what: "CryptoFooter",
                needed: CRYPTO_FOOTER_LEN,
                have: b.len(),
            });
        }
        let mut common_mac = [0u8; MAC_LEN];
        common_mac.copy_from_slice(&b[..MAC_LEN]);
        let count = u32::from_be_bytes([b[16], b[17], b[18], b[19]]) as usize;
        let room = (b.len() - CRYPTO_FOOTER_LEN) / RECEIVER_MAC_LEN;
        if count > room {
            return Err(CryptoError::BadLength {
                what: "receiver-specific MAC count",
                value: count,
                reason: "more MACs than the CryptoFooter holds",
            });
        }
        Ok(Self {
            common_mac,
            macs: &b[CRYPTO_FOOTER_LEN..CRYPTO_FOOTER_LEN + count * RECEIVER_MAC_LEN],
        })
    }

    pub(crate) fn count(&self) -> usize {
        self.macs.len() / RECEIVER_MAC_LEN
    }

    /// The MAC for receiver-specific key id `key_id`, if present (the first one).
    pub(crate) fn find(&self, key_id: u32) -> Option<[u8; MAC_LEN]> {
        self.macs.chunks_exact(RECEIVER_MAC_LEN).find_map(|e| {
            (u32::from_be_bytes([e[0], e[1], e[2], e[3]]) == key_id).then(|| {
                let mut m = [0u8; MAC_LEN];
                m.copy_from_slice(&e[4..]);
                m
            })
        })
    }
}
