//! The decoding side: [`ReceiverCrypto`] (remote key material, derived session keys and the
//! anti-replay windows) and the inverse transforms.

use ferrodds_wire::{submessage::id, Header};

use super::keymat::{KeyMaterial, TransformKind};
use super::keys::{receiver_specific_session_key, session_key, Cipher};
use super::replay::{ReplayWindow, WIDTH};
use super::wire::{
    expect, read_sub, CryptoHeader, Footer, CRYPTO_FOOTER_LEN, CRYPTO_HEADER_LEN, INFO_SRC_LEN,
    MAC_LEN, RTPS_HDR, SUB_HDR,
};
use super::{CryptoError, Result};

/// Width of the anti-replay window, in IV suffixes per session: a submessage or message whose
/// suffix is this far or further behind the newest one received in its session is refused.
pub const REPLAY_WINDOW: u64 = WIDTH;

/// How many sessions a receiver tracks (keys and replay windows) for submessages and
/// messages; a session id this many or more behind the newest one of its sender is refused
/// as stale (a sender only ever moves to the next session id).
pub const SESSION_CACHE: usize = 4;

/// How many senders may share one key material, each with its own session ids: Cyclone DDS
/// protects the volatile-secure writer's and reader's submessages with the same KxKeys, each
/// starting at its own random session id. A session id far from every sender's newest one
/// starts a new sender while fewer than this many are known; it is refused after that.
pub const MAX_SENDERS: usize = 4;

/// Session ids within this distance of a sender's newest one belong to that sender.
const SENDER_SPAN: u32 = 1 << 16;

/// Whether session ids `a` and `b` are of one sender.
fn near(a: u32, b: u32) -> bool {
    a.wrapping_sub(b) < SENDER_SPAN || b.wrapping_sub(a) < SENDER_SPAN
}

/// Payload session keys cached (payloads have no replay window).
const PAYLOAD_CACHE: usize = 2;

/// Result of [`ReceiverCrypto::decode_submessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodedSubmessage {
    /// Bytes of the input taken by `SEC_PREFIX | body | SEC_POSTFIX`; the next submessage of
    /// the message starts there.
    pub consumed: usize,
    /// Length of the original submessage written to the output.
    pub len: usize,
}

struct RemoteSession {
    id: u32,
    cipher: Cipher,
    receiver: Option<Cipher>,
    window: ReplayWindow,
}

/// Remote key material with the receiving state: the session keys derived for the session
/// ids the sender used, and an anti-replay window per session. One per remote sender key
/// (a remote writer's, a remote reader's or a remote participant's key material as this
/// participant received it); each protected submessage or message must be decoded once.
pub struct ReceiverCrypto {
    km: KeyMaterial,
    sessions: [Option<RemoteSession>; SESSION_CACHE],
    /// The newest session id of each sender.
    newest: [Option<u32>; MAX_SENDERS],
    payload: [Option<(u32, Cipher)>; PAYLOAD_CACHE],
    payload_next: usize,
}

impl std::fmt::Debug for ReceiverCrypto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReceiverCrypto")
            .field("key_material", &self.km)
            .field("newest_session", &self.newest)
            .finish_non_exhaustive()
    }
}

/// Whether session `a` is older than `b` by `n` or more (wrapping serial comparison).
fn behind_by(a: u32, b: u32) -> u32 {
    let d = b.wrapping_sub(a);
    if d < 1 << 31 {
        d
    } else {
        0
    }
}

impl ReceiverCrypto {
    /// A receiver for remote key material `km` (GMAC or GCM). If `km` carries a
    /// receiver-specific key id, every submessage and message must carry a valid MAC for it.
    pub fn new(km: KeyMaterial) -> Result<Self> {
        if !km.transformation_kind.protects() {
            return Err(CryptoError::NotProtecting("receiver"));
        }
        Ok(Self {
            km,
            sessions: [const { None }; SESSION_CACHE],
            newest: [None; MAX_SENDERS],
            payload: [const { None }; PAYLOAD_CACHE],
            payload_next: 0,
        })
    }

    /// The key material.
    #[must_use]
    pub fn key_material(&self) -> &KeyMaterial {
        &self.km
    }

    fn kind(&self) -> TransformKind {
        self.km.transformation_kind
    }

    fn check_header(&self, h: &CryptoHeader) -> Result<()> {
        if h.transformation_kind != self.kind() {
            return Err(CryptoError::TransformKindMismatch {
                expected: self.kind(),
                found: h.transformation_kind,
            });
        }
        if h.transformation_key_id != self.km.sender_key_id {
            return Err(CryptoError::UnknownKeyId {
                expected: self.km.sender_key_id,
                found: h.transformation_key_id,
            });
        }
        Ok(())
    }

    fn new_session(&self, id: u32) -> Result<RemoteSession> {
        let cipher = Cipher::new(self.kind(), &session_key(&self.km, id))?;
        let receiver = if self.km.receiver_specific_key_id != 0 {
            Some(Cipher::new(
                self.kind(),
                &receiver_specific_session_key(&self.km, id),
            )?)
        } else {
            None
        };
        Ok(RemoteSession {
            id,
            cipher,
            receiver,
            window: ReplayWindow::default(),
        })
    }

    /// Verifies a protected submessage or message: session (cached or derived), replay window,
    /// receiver-specific MAC, then `body` (common MAC / decryption into the output). Commits
    /// the session and window only when all passed.
    fn verify_protected(
        &mut self,
        h: &CryptoHeader,
        footer: &Footer<'_>,
        body: impl FnOnce(&Cipher, [u8; 12], &[u8; MAC_LEN]) -> Result<()>,
    ) -> Result<()> {
        self.check_header(h)?;
        let sid = h.session_id;
        let slot = self
            .sessions
            .iter()
            .position(|s| matches!(s, Some(s) if s.id == sid));
        let mut fresh = None;
        // The sender whose sessions `sid` continues (or a free slot for a new sender).
        let sender = self.sender_of(sid);
        if slot.is_none() {
            match sender {
                Some((_, Some(newest))) if behind_by(sid, newest) >= SESSION_CACHE as u32 => {
                    return Err(CryptoError::StaleSession {
                        session_id: sid,
                        newest,
                    });
                }
                Some(_) => {}
                None => {
                    let newest = self.newest.iter().flatten().copied().next().unwrap_or(sid);
                    return Err(CryptoError::StaleSession {
                        session_id: sid,
                        newest,
                    });
                }
            }
            fresh = Some(self.new_session(sid)?);
        }
        {
            let session = match (&fresh, slot) {
                (Some(f), _) => f,
                (None, Some(i)) => match &self.sessions[i] {
                    Some(s) => s,
                    None => return Err(CryptoError::Library("session cache")),
                },
                (None, None) => return Err(CryptoError::Library("session cache")),
            };
            session.window.check(sid, h.init_vector_suffix)?;
            let nonce = h.nonce();
            if let Some(rc) = &session.receiver {
                let key_id = self.km.receiver_specific_key_id;
                let mac = footer.find(key_id).ok_or(CryptoError::ReceiverMacMissing {
                    key_id,
                    count: footer.count(),
                })?;
                if !rc.verify_gmac(nonce, &footer.common_mac, &mac) {
                    return Err(CryptoError::ReceiverMacMismatch { key_id });
                }
            }
            body(&session.cipher, nonce, &footer.common_mac)?;
        }
        // Commit.
        let i = match (fresh, slot) {
            (None, Some(i)) => i,
            (Some(s), _) => {
                let i = self.victim();
                self.sessions[i] = Some(s);
                if let Some((k, n)) = sender {
                    if n.is_none_or(|n| behind_by(n, sid) > 0) {
                        self.newest[k] = Some(sid);
                    }
                }
                i
            }
            (None, None) => return Err(CryptoError::Library("session cache")),
        };
        if let Some(s) = &mut self.sessions[i] {
            s.window.accept(h.init_vector_suffix);
        }
        Ok(())
    }

    /// The sender `sid` belongs to: (its index, its newest session id), or a free index for
    /// a new sender (`None` newest); `None` when `sid` is far from every known sender's and
    /// no slot is free.
    fn sender_of(&self, sid: u32) -> Option<(usize, Option<u32>)> {
        self.newest
            .iter()
            .enumerate()
            .find_map(|(k, n)| n.filter(|&n| near(sid, n)).map(|n| (k, Some(n))))
            .or_else(|| {
                self.newest
                    .iter()
                    .position(Option::is_none)
                    .map(|k| (k, None))
            })
    }

    /// The cache slot for a new session: a free one, else the oldest session (relative to
    /// its sender's newest; one of no known sender first).
    fn victim(&self) -> usize {
        let mut best = 0;
        let mut best_age = 0;
        for (i, s) in self.sessions.iter().enumerate() {
            let Some(s) = s else {
                return i;
            };
            let age = self
                .newest
                .iter()
                .flatten()
                .filter(|&&n| near(s.id, n))
                .map(|&n| behind_by(s.id, n))
                .min()
                .unwrap_or(u32::MAX);
            if age >= best_age {
                best = i;
                best_age = age;
            }
        }
        best
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

    /// Authenticates `data` (GMAC) or decrypts `data` into `out` (GCM).
    fn open(
        encrypt: bool,
        cipher: &Cipher,
        nonce: [u8; 12],
        mac: &[u8; MAC_LEN],
        data: &[u8],
        out: &mut [u8],
        session_id: u32,
    ) -> Result<()> {
        let ok = if encrypt {
            cipher.open(nonce, data, mac, &mut out[..data.len()])
        } else {
            let ok = cipher.verify_gmac(nonce, data, mac);
            if ok {
                out[..data.len()].copy_from_slice(data);
            }
            ok
        };
        if ok {
            Ok(())
        } else {
            Err(CryptoError::MacMismatch { session_id })
        }
    }

    /// Inverse of [`SenderCrypto::encode_payload`](super::SenderCrypto::encode_payload)
    /// (`decode_serialized_payload`): verifies and writes the serialized payload into `out`
    /// (which needs at most the encoded length less 40 bytes); returns its length. No replay check (a payload is re-sent unchanged
    /// on repair). For GCM, bytes after the CryptoFooter (a DATA submessage's padding) are
    /// ignored; for GMAC everything before the last 20 bytes is the payload.
    pub fn decode_payload(&mut self, encoded: &[u8], out: &mut [u8]) -> Result<usize> {
        let h = CryptoHeader::parse(encoded)?;
        self.check_header(&h)?;
        let encrypt = self.kind().encrypts();
        let rest = &encoded[CRYPTO_HEADER_LEN..];
        let (data, footer) = if encrypt {
            if rest.len() < 4 + CRYPTO_FOOTER_LEN {
                return Err(CryptoError::Truncated {
                    what: "CryptoContent and CryptoFooter",
                    needed: 4 + CRYPTO_FOOTER_LEN,
                    have: rest.len(),
                });
            }
            let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            if len > rest.len() - 4 - CRYPTO_FOOTER_LEN {
                return Err(CryptoError::BadLength {
                    what: "CryptoContent length",
                    value: len,
                    reason: "exceeds the encoded payload",
                });
            }
            (&rest[4..4 + len], Footer::parse(&rest[4 + len..])?)
        } else {
            if rest.len() < CRYPTO_FOOTER_LEN {
                return Err(CryptoError::Truncated {
                    what: "CryptoFooter",
                    needed: CRYPTO_FOOTER_LEN,
                    have: rest.len(),
                });
            }
            let split = rest.len() - CRYPTO_FOOTER_LEN;
            (&rest[..split], Footer::parse(&rest[split..])?)
        };
        if footer.count() != 0 {
            return Err(CryptoError::PayloadReceiverMacs(footer.count()));
        }
        Self::check_out(out, data.len())?;
        let sid = h.session_id;
        let slot = self
            .payload
            .iter()
            .position(|s| matches!(s, Some((id, _)) if *id == sid));
        let fresh = match slot {
            Some(_) => None,
            None => Some(Cipher::new(self.kind(), &session_key(&self.km, sid))?),
        };
        let cipher = match (&fresh, slot.and_then(|i| self.payload[i].as_ref())) {
            (Some(c), _) | (None, Some((_, c))) => c,
            (None, None) => return Err(CryptoError::Library("payload key cache")),
        };
        Self::open(
            encrypt,
            cipher,
            h.nonce(),
            &footer.common_mac,
            data,
            out,
            sid,
        )?;
        if let Some(c) = fresh {
            self.payload[self.payload_next] = Some((sid, c));
            self.payload_next = (self.payload_next + 1) % PAYLOAD_CACHE;
        }
        Ok(data.len())
    }

    /// Inverse of [`SenderCrypto::encode_submessage`](super::SenderCrypto::encode_submessage)
    /// (`decode_datawriter_submessage` / `decode_datareader_submessage`): `encoded` starts at
    /// the SEC_PREFIX (and may continue with further submessages). Verifies the receiver-specific
    /// MAC (when this key material has a receiver-specific key id), the replay window and the
    /// common MAC, and writes the original submessage into `out` (at most `encoded.len()` bytes
    /// are needed).
    pub fn decode_submessage(
        &mut self,
        encoded: &[u8],
        out: &mut [u8],
    ) -> Result<DecodedSubmessage> {
        let p = read_sub(encoded, 0)?;
        expect(&p, id::SEC_PREFIX, "SEC_PREFIX")?;
        let h = CryptoHeader::parse(p.body(encoded))?;
        self.check_header(&h)?;
        let encrypt = self.kind().encrypts();
        let b = read_sub(encoded, p.end())?;
        let data = if encrypt {
            expect(&b, id::SEC_BODY, "SEC_BODY")?;
            content(encoded, b.body, b.len)?
        } else {
            &encoded[b.start..b.end()]
        };
        let f = read_sub(encoded, b.end())?;
        expect(&f, id::SEC_POSTFIX, "SEC_POSTFIX")?;
        let footer = Footer::parse(f.body(encoded))?;
        Self::check_out(out, data.len())?;
        self.verify_protected(&h, &footer, |cipher, nonce, mac| {
            Self::open(encrypt, cipher, nonce, mac, data, out, h.session_id)
        })?;
        Ok(DecodedSubmessage {
            consumed: f.end(),
            len: data.len(),
        })
    }

    /// Inverse of [`SenderCrypto::encode_message`](super::SenderCrypto::encode_message)
    /// (`decode_rtps_message`): verifies the protected RTPS message in `encoded` and writes the
    /// plain message into `out` — the clear RTPS header followed by the protected body, whose
    /// first submessage is the INFO_SRC copy of the header (which must match it) — and returns
    /// its length (at most `encoded.len()`). The magic must be `RTPS`. Bytes after
    /// SRTPS_POSTFIX are ignored.
    pub fn decode_message(&mut self, encoded: &[u8], out: &mut [u8]) -> Result<usize> {
        if encoded.len() < RTPS_HDR {
            return Err(CryptoError::Truncated {
                what: "RTPS header",
                needed: RTPS_HDR,
                have: encoded.len(),
            });
        }
        // Exactly "RTPS" (not the "RTPX" some parsers tolerate): the magic is the one part of
        // the clear header that the INFO_SRC copy does not authenticate.
        if !encoded.starts_with(b"RTPS") || Header::parse(encoded).is_err() {
            return Err(CryptoError::BadRtpsHeader);
        }
        let p = read_sub(encoded, RTPS_HDR)?;
        expect(&p, id::SRTPS_PREFIX, "SRTPS_PREFIX")?;
        let h = CryptoHeader::parse(p.body(encoded))?;
        self.check_header(&h)?;
        let encrypt = self.kind().encrypts();
        let (data, postfix_at) = if encrypt {
            let b = read_sub(encoded, p.end())?;
            expect(&b, id::SEC_BODY, "SEC_BODY")?;
            (content(encoded, b.body, b.len)?, b.end())
        } else {
            let first = read_sub(encoded, p.end())?;
            expect(&first, id::INFO_SRC, "INFO_SRC")?;
            let mut pos = first.end();
            loop {
                let s = read_sub(encoded, pos)?;
                if s.id == id::SRTPS_POSTFIX {
                    break;
                }
                pos = s.end();
            }
            (&encoded[p.end()..pos], pos)
        };
        let f = read_sub(encoded, postfix_at)?;
        expect(&f, id::SRTPS_POSTFIX, "SRTPS_POSTFIX")?;
        let footer = Footer::parse(f.body(encoded))?;
        let total = RTPS_HDR + data.len();
        Self::check_out(out, total)?;
        let clear_header = &encoded[..RTPS_HDR];
        self.verify_protected(&h, &footer, |cipher, nonce, mac| {
            Self::open(
                encrypt,
                cipher,
                nonce,
                mac,
                data,
                &mut out[RTPS_HDR..],
                h.session_id,
            )?;
            if !info_src_matches(&out[RTPS_HDR..total], clear_header) {
                return Err(CryptoError::HeaderMismatch);
            }
            out[..RTPS_HDR].copy_from_slice(clear_header);
            Ok(())
        })?;
        Ok(total)
    }
}

/// The CryptoContent of a SEC_BODY: BE length then that many bytes (padding may follow).
fn content(b: &[u8], body: usize, len: usize) -> Result<&[u8]> {
    if len < 4 {
        return Err(CryptoError::Truncated {
            what: "CryptoContent length",
            needed: 4,
            have: len,
        });
    }
    let clen = u32::from_be_bytes([b[body], b[body + 1], b[body + 2], b[body + 3]]) as usize;
    if clen > len - 4 {
        return Err(CryptoError::BadLength {
            what: "CryptoContent length",
            value: clen,
            reason: "exceeds its SEC_BODY",
        });
    }
    Ok(&b[body + 4..body + 4 + clen])
}

/// Whether `body` starts with an INFO_SRC whose version, vendor and GUID prefix are those of
/// the RTPS header `header`.
fn info_src_matches(body: &[u8], header: &[u8]) -> bool {
    body.len() >= INFO_SRC_LEN
        && body[0] == id::INFO_SRC
        && read_sub(body, 0).is_ok_and(|s| s.len == INFO_SRC_LEN - SUB_HDR)
        && body[8..INFO_SRC_LEN] == header[4..RTPS_HDR]
}
