//! The encoding side: [`SenderCrypto`] (local key material and its session) and the
//! receiver-specific MAC keys of origin authentication.

use ferrodds_wire::{submessage::id, Header};

use super::keymat::{KeyMaterial, TransformKind};
use super::keys::{receiver_specific_session_key, session_key, Cipher};
use super::wire::{
    message_encoded_len, pad4, payload_encoded_len, put_sub, read_sub, submessage_encoded_len,
    CryptoHeader, CRYPTO_FOOTER_LEN, CRYPTO_HEADER_LEN, INFO_SRC_LEN, MAC_LEN, MAX_RECEIVER_MACS,
    RECEIVER_MAC_LEN, RTPS_HDR, SUB_HDR,
};
use super::{CryptoError, Result};

/// Default `max_blocks_per_session`: never start a new session (as Cyclone DDS, whose limit
/// is `INT64_MAX` blocks). Fast DDS's default would be 32 (`dds.sec.crypto.maxblockspersession`).
pub const DEFAULT_MAX_BLOCKS_PER_SESSION: u64 = u64::MAX;

/// The receiver-specific MAC key of one receiver (origin authentication), on the sending side:
/// made from the key material handed to that receiver (its master salt, receiver-specific key
/// id and key). The derived session key is cached for the sender's current session.
pub struct ReceiverMacKey {
    km: KeyMaterial,
    cached: Option<(u32, Cipher)>,
}

impl std::fmt::Debug for ReceiverMacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReceiverMacKey")
            .field("key_id", &self.km.receiver_specific_key_id)
            .field("cached_session", &self.cached.as_ref().map(|c| c.0))
            .finish()
    }
}

impl ReceiverMacKey {
    /// The MAC key for the receiver that was given `km` (which must have a receiver-specific
    /// key and a protecting kind).
    pub fn new(km: &KeyMaterial) -> Result<Self> {
        if !km.transformation_kind.protects() {
            return Err(CryptoError::NotProtecting("receiver-specific MAC"));
        }
        if km.receiver_specific_key_id == 0 {
            return Err(CryptoError::NoReceiverSpecificKey);
        }
        Ok(Self {
            km: km.clone(),
            cached: None,
        })
    }

    /// The receiver-specific key id written next to this receiver's MAC.
    #[must_use]
    pub fn key_id(&self) -> u32 {
        self.km.receiver_specific_key_id
    }

    fn cipher(&mut self, session_id: u32) -> Result<&Cipher> {
        let stale = !matches!(&self.cached, Some((s, _)) if *s == session_id);
        if stale {
            let key = receiver_specific_session_key(&self.km, session_id);
            self.cached = Some((session_id, Cipher::new(self.km.transformation_kind, &key)?));
        }
        match &self.cached {
            Some((_, c)) => Ok(c),
            None => Err(CryptoError::Library("receiver key cache")),
        }
    }
}

/// Local key material with its sending session: session id, IV suffix counter and the number
/// of 16-byte blocks protected in the session. One per protected stream (e.g. a writer's
/// submessages, a writer's payloads, a participant's messages); give each a different random
/// starting session id, since streams sharing key material must never share a (session, IV).
pub struct SenderCrypto {
    km: KeyMaterial,
    session_id: u32,
    iv_suffix: u64,
    blocks: u64,
    max_blocks: u64,
    cipher: Cipher,
}

impl std::fmt::Debug for SenderCrypto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SenderCrypto")
            .field("key_material", &self.km)
            .field("session_id", &self.session_id)
            .field("iv_suffix", &self.iv_suffix)
            .field("blocks", &self.blocks)
            .field("max_blocks", &self.max_blocks)
            .finish()
    }
}

impl SenderCrypto {
    /// A sender with key material `km` (GMAC or GCM), starting at session `session_id` with
    /// IV suffix `iv_suffix` (both random, from the caller; the suffix is incremented before
    /// each use). Sessions never end (see [`Self::with_max_blocks_per_session`]).
    pub fn new(km: KeyMaterial, session_id: u32, iv_suffix: u64) -> Result<Self> {
        if !km.transformation_kind.protects() {
            return Err(CryptoError::NotProtecting("sender"));
        }
        let cipher = Cipher::new(km.transformation_kind, &session_key(&km, session_id))?;
        Ok(Self {
            km,
            session_id,
            iv_suffix,
            blocks: 0,
            max_blocks: DEFAULT_MAX_BLOCKS_PER_SESSION,
            cipher,
        })
    }

    /// Starts a new session (id + 1, new session key) before a transform would take the
    /// session beyond `max_blocks` 16-byte blocks (a transform larger than that on its own
    /// still goes in one fresh session). 0 is treated as 1.
    #[must_use]
    pub fn with_max_blocks_per_session(mut self, max_blocks: u64) -> Self {
        self.max_blocks = max_blocks.max(1);
        self
    }

    /// The key material.
    #[must_use]
    pub fn key_material(&self) -> &KeyMaterial {
        &self.km
    }

    /// Transformation kind.
    #[must_use]
    pub fn kind(&self) -> TransformKind {
        self.km.transformation_kind
    }

    /// The current session id.
    #[must_use]
    pub fn session_id(&self) -> u32 {
        self.session_id
    }

    /// The IV suffix of the last transform (the next uses this + 1).
    #[must_use]
    pub fn iv_suffix(&self) -> u64 {
        self.iv_suffix
    }

    /// Advances the session for `len` protected bytes and returns the CryptoHeader to use.
    fn advance(&mut self, len: usize) -> Result<CryptoHeader> {
        let blocks = (len as u64).div_ceil(16).max(1);
        if self.blocks > 0 && self.blocks.saturating_add(blocks) > self.max_blocks {
            let next = self.session_id.wrapping_add(1);
            self.cipher = Cipher::new(self.km.transformation_kind, &session_key(&self.km, next))?;
            self.session_id = next;
            self.blocks = 0;
        }
        self.blocks = self.blocks.saturating_add(blocks);
        self.iv_suffix = self.iv_suffix.wrapping_add(1);
        Ok(CryptoHeader {
            transformation_kind: self.km.transformation_kind,
            transformation_key_id: self.km.sender_key_id,
            session_id: self.session_id,
            init_vector_suffix: self.iv_suffix,
        })
    }

    fn check_out(out: &[u8], needed: usize) -> Result<()> {
        if out.len() < needed {
            Err(CryptoError::BufferTooSmall {
                needed,
                have: out.len(),
            })
        } else {
            Ok(())
        }
    }

    fn check_receivers(&self, receivers: &[ReceiverMacKey]) -> Result<()> {
        if receivers.len() > MAX_RECEIVER_MACS {
            return Err(CryptoError::TooManyReceivers {
                count: receivers.len(),
                max: MAX_RECEIVER_MACS,
            });
        }
        for r in receivers {
            if r.km.transformation_kind != self.km.transformation_kind {
                return Err(CryptoError::ReceiverKindMismatch {
                    sender: self.km.transformation_kind,
                    receiver: r.km.transformation_kind,
                });
            }
        }
        Ok(())
    }

    /// Writes the postfix submessage (`postfix_id`) at `pos` with the common MAC and one
    /// receiver-specific MAC per receiver; returns the end offset.
    fn write_postfix(
        out: &mut [u8],
        pos: usize,
        postfix_id: u8,
        header: &CryptoHeader,
        common_mac: &[u8; MAC_LEN],
        receivers: &mut [ReceiverMacKey],
    ) -> Result<usize> {
        put_sub(
            out,
            pos,
            postfix_id,
            CRYPTO_FOOTER_LEN + receivers.len() * RECEIVER_MAC_LEN,
        )?;
        let mut p = pos + SUB_HDR;
        out[p..p + MAC_LEN].copy_from_slice(common_mac);
        let count = u32::try_from(receivers.len()).unwrap_or(u32::MAX);
        out[p + MAC_LEN..p + CRYPTO_FOOTER_LEN].copy_from_slice(&count.to_be_bytes());
        p += CRYPTO_FOOTER_LEN;
        let nonce = header.nonce();
        for r in receivers {
            let key_id = r.key_id();
            let mac = r.cipher(header.session_id)?.gmac(nonce, common_mac)?;
            out[p..p + 4].copy_from_slice(&key_id.to_be_bytes());
            out[p + 4..p + RECEIVER_MAC_LEN].copy_from_slice(&mac);
            p += RECEIVER_MAC_LEN;
        }
        Ok(p)
    }

    /// Protects a serialized payload (`encode_serialized_payload`): writes `CryptoHeader |
    /// CryptoContent | CryptoFooter` (GCM) or `CryptoHeader | plaintext | CryptoFooter` (GMAC)
    /// into `out`, which needs [`payload_encoded_len`] bytes (at most `plain.len() +`
    /// [`PAYLOAD_OVERHEAD`](super::PAYLOAD_OVERHEAD)); returns the length written. The footer
    /// has no receiver-specific MACs. For GMAC the payload length should be a multiple of 4 (as
    /// CDR payloads are), since a receiver takes everything before the footer as the payload.
    pub fn encode_payload(&mut self, plain: &[u8], out: &mut [u8]) -> Result<usize> {
        let n = plain.len();
        if u32::try_from(n).is_err() {
            return Err(CryptoError::TooLong {
                what: "payload",
                length: n,
                max: u32::MAX as usize,
            });
        }
        let total = payload_encoded_len(self.kind(), n);
        Self::check_out(out, total)?;
        let h = self.advance(n)?;
        h.write(&mut out[..CRYPTO_HEADER_LEN]);
        let mut pos = CRYPTO_HEADER_LEN;
        let mac = if self.kind().encrypts() {
            out[pos..pos + 4].copy_from_slice(&(n as u32).to_be_bytes());
            pos += 4;
            let body = &mut out[pos..pos + n];
            body.copy_from_slice(plain);
            self.cipher.seal(h.nonce(), body)?
        } else {
            out[pos..pos + n].copy_from_slice(plain);
            self.cipher.gmac(h.nonce(), plain)?
        };
        pos += n;
        out[pos..pos + MAC_LEN].copy_from_slice(&mac);
        out[pos + MAC_LEN..pos + CRYPTO_FOOTER_LEN].copy_from_slice(&0u32.to_be_bytes());
        Ok(total)
    }

    /// Protects one submessage (`encode_datawriter_submessage` /
    /// `encode_datareader_submessage`): `plain` is a whole submessage, header included, whose
    /// `octetsToNextHeader` covers exactly the rest of `plain`. Writes `SEC_PREFIX | SEC_BODY |
    /// SEC_POSTFIX` (GCM) or `SEC_PREFIX | plain | SEC_POSTFIX` (GMAC; `plain` must then be a
    /// multiple of 4 long) with one receiver-specific MAC per entry of `receivers` into `out`,
    /// which needs [`submessage_encoded_len`] bytes (at most `plain.len() +`
    /// [`SUBMESSAGE_OVERHEAD`](super::SUBMESSAGE_OVERHEAD) `+ 20 × receivers`); returns the
    /// length written.
    pub fn encode_submessage(
        &mut self,
        plain: &[u8],
        receivers: &mut [ReceiverMacKey],
        out: &mut [u8],
    ) -> Result<usize> {
        let bad = |reason| CryptoError::BadPlaintext {
            what: "submessage",
            reason,
        };
        let n = plain.len();
        if n < SUB_HDR {
            return Err(bad("shorter than a submessage header"));
        }
        let octets = [plain[2], plain[3]];
        let octets = usize::from(if plain[1] & 1 != 0 {
            u16::from_le_bytes(octets)
        } else {
            u16::from_be_bytes(octets)
        });
        if SUB_HDR + octets != n {
            return Err(bad(
                "octetsToNextHeader does not cover exactly the submessage",
            ));
        }
        let encrypt = self.kind().encrypts();
        if !encrypt && !n.is_multiple_of(4) {
            return Err(bad(
                "a signed submessage must be a multiple of 4 bytes long",
            ));
        }
        self.check_receivers(receivers)?;
        let total = submessage_encoded_len(self.kind(), n, receivers.len());
        Self::check_out(out, total)?;
        if encrypt {
            // Checked before the session advances.
            put_sub(out, SUB_HDR + CRYPTO_HEADER_LEN, id::SEC_BODY, 4 + pad4(n))?;
        }
        let h = self.advance(n)?;
        put_sub(out, 0, id::SEC_PREFIX, CRYPTO_HEADER_LEN)?;
        h.write(&mut out[SUB_HDR..SUB_HDR + CRYPTO_HEADER_LEN]);
        let mut pos = SUB_HDR + CRYPTO_HEADER_LEN;
        let mac = if encrypt {
            out[pos + SUB_HDR..pos + SUB_HDR + 4].copy_from_slice(&(n as u32).to_be_bytes());
            pos += SUB_HDR + 4;
            let body = &mut out[pos..pos + n];
            body.copy_from_slice(plain);
            let mac = self.cipher.seal(h.nonce(), body)?;
            out[pos + n..pos + pad4(n)].fill(0);
            pos += pad4(n);
            mac
        } else {
            out[pos..pos + n].copy_from_slice(plain);
            pos += n;
            self.cipher.gmac(h.nonce(), plain)?
        };
        let end = Self::write_postfix(out, pos, id::SEC_POSTFIX, &h, &mac, receivers)?;
        debug_assert_eq!(end, total);
        Ok(end)
    }

    /// Protects a whole RTPS message (`encode_rtps_message`): `plain` is the message, RTPS
    /// header included. Writes the clear header, `SRTPS_PREFIX`, then `SEC_BODY` holding the
    /// encrypted `INFO_SRC` copy of the header followed by the submessages (GCM) or those in
    /// clear (GMAC: the submessages must then have exact, 4-multiple lengths), and
    /// `SRTPS_POSTFIX` with one receiver-specific MAC per entry of `receivers`. `out` needs
    /// [`message_encoded_len`] bytes (at most `plain.len() +`
    /// [`MESSAGE_OVERHEAD`](super::MESSAGE_OVERHEAD) `+ 20 × receivers`); returns the length
    /// written.
    pub fn encode_message(
        &mut self,
        plain: &[u8],
        receivers: &mut [ReceiverMacKey],
        out: &mut [u8],
    ) -> Result<usize> {
        let bad = |reason| CryptoError::BadPlaintext {
            what: "RTPS message",
            reason,
        };
        if Header::parse(plain).is_err() {
            return Err(bad("does not start with an RTPS 2.x header"));
        }
        let rest = &plain[RTPS_HDR..];
        let encrypt = self.kind().encrypts();
        if !encrypt {
            // The receiver finds SRTPS_POSTFIX by walking the submessages.
            let mut pos = 0;
            while pos < rest.len() {
                let s = read_sub(rest, pos)
                    .map_err(|_| bad("signed messages need 4-multiple submessage lengths"))?;
                if s.id == id::SRTPS_POSTFIX {
                    return Err(bad("contains an SRTPS_POSTFIX"));
                }
                pos = s.end();
            }
        }
        let l = INFO_SRC_LEN + rest.len();
        self.check_receivers(receivers)?;
        let total = message_encoded_len(self.kind(), plain.len(), receivers.len());
        Self::check_out(out, total)?;
        if encrypt {
            put_sub(
                out,
                RTPS_HDR + SUB_HDR + CRYPTO_HEADER_LEN,
                id::SEC_BODY,
                4 + pad4(l),
            )?;
        }
        let h = self.advance(l)?;
        out[..RTPS_HDR].copy_from_slice(&plain[..RTPS_HDR]);
        put_sub(out, RTPS_HDR, id::SRTPS_PREFIX, CRYPTO_HEADER_LEN)?;
        let mut pos = RTPS_HDR + SUB_HDR;
        h.write(&mut out[pos..pos + CRYPTO_HEADER_LEN]);
        pos += CRYPTO_HEADER_LEN;
        if encrypt {
            out[pos + SUB_HDR..pos + SUB_HDR + 4].copy_from_slice(&(l as u32).to_be_bytes());
            pos += SUB_HDR + 4;
        }
        let body_start = pos;
        // INFO_SRC: id, flags (E), octetsToNextHeader 20 (LE), unused 0, version, vendor, prefix.
        put_sub(out, pos, id::INFO_SRC, INFO_SRC_LEN - SUB_HDR)?;
        out[pos + 4..pos + 8].fill(0);
        out[pos + 8..pos + INFO_SRC_LEN].copy_from_slice(&plain[4..RTPS_HDR]);
        pos += INFO_SRC_LEN;
        out[pos..pos + rest.len()].copy_from_slice(rest);
        let mac = if encrypt {
            let mac = self
                .cipher
                .seal(h.nonce(), &mut out[body_start..body_start + l])?;
            out[body_start + l..body_start + pad4(l)].fill(0);
            pos = body_start + pad4(l);
            mac
        } else {
            pos = body_start + l;
            self.cipher.gmac(h.nonce(), &out[body_start..pos])?
        };
        let end = Self::write_postfix(out, pos, id::SRTPS_POSTFIX, &h, &mac, receivers)?;
        debug_assert_eq!(end, total);
        Ok(end)
    }
}
