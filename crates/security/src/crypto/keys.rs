//! Session key derivation (HMAC-SHA256) and the AEAD wrapper over aws-lc-rs (AES-GCM and GMAC).

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, AES_256_GCM};
use aws_lc_rs::hmac;

use super::keymat::{KeyMaterial, TransformKind, MAX_KEY_LEN};
use super::wire::MAC_LEN;
use super::{CryptoError, Result};

/// A derived session key: the first `len` bytes of `bytes` (16 or 32).
#[derive(Clone, PartialEq, Eq)]
pub struct SessionKey {
    bytes: [u8; MAX_KEY_LEN],
    len: usize,
}

impl SessionKey {
    /// The key bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl Drop for SessionKey {
    /// Wipes the key.
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.bytes);
    }
}

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SessionKey({} bytes)", self.len)
    }
}

fn derive(cookie: &[u8], master_key: &[u8], master_salt: &[u8], session_id: u32) -> SessionKey {
    let key = hmac::Key::new(hmac::HMAC_SHA256, master_key);
    let mut ctx = hmac::Context::with_key(&key);
    ctx.update(cookie);
    ctx.update(master_salt);
    ctx.update(&session_id.to_be_bytes());
    let tag = ctx.sign();
    let len = master_key.len();
    let mut bytes = [0u8; MAX_KEY_LEN];
    bytes[..len].copy_from_slice(&tag.as_ref()[..len]);
    SessionKey { bytes, len }
}

/// The session key of `km` for `session_id`: the first key-length bytes of
/// `HMAC-SHA256(key = master_sender_key, data = "SessionKey" | master_salt | session_id BE)`.
/// Empty for kind NONE.
#[must_use]
pub fn session_key(km: &KeyMaterial, session_id: u32) -> SessionKey {
    derive(b"SessionKey", km.sender_key(), km.salt(), session_id)
}

/// The receiver-specific session key of `km` for `session_id`: as [`session_key`] with
/// `"SessionReceiverKey"` and the master receiver-specific key. Empty when `km` has none.
#[must_use]
pub fn receiver_specific_session_key(km: &KeyMaterial, session_id: u32) -> SessionKey {
    let key = km.receiver_specific_key();
    let salt = if key.is_empty() { &[][..] } else { km.salt() };
    derive(b"SessionReceiverKey", key, salt, session_id)
}

/// The 12-byte GCM nonce: `session_id BE | init_vector_suffix BE`.
#[inline]
pub(crate) fn nonce_bytes(session_id: u32, iv_suffix: u64) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[..4].copy_from_slice(&session_id.to_be_bytes());
    n[4..].copy_from_slice(&iv_suffix.to_be_bytes());
    n
}

/// An AES-GCM key (128 or 256 bits) with its key schedule.
pub(crate) struct Cipher {
    key: LessSafeKey,
}

impl Cipher {
    /// The cipher for a session key of `kind`.
    pub(crate) fn new(kind: TransformKind, key: &SessionKey) -> Result<Self> {
        let alg = match kind.key_len() {
            16 => &AES_128_GCM,
            32 => &AES_256_GCM,
            _ => return Err(CryptoError::NotProtecting("cipher")),
        };
        let unbound =
            UnboundKey::new(alg, key.as_bytes()).map_err(|_| CryptoError::Library("key setup"))?;
        Ok(Self {
            key: LessSafeKey::new(unbound),
        })
    }

    /// Encrypts `in_out` in place (no AAD); returns the tag.
    #[inline]
    pub(crate) fn seal(&self, nonce: [u8; 12], in_out: &mut [u8]) -> Result<[u8; MAC_LEN]> {
        let tag = self
            .key
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), in_out)
            .map_err(|_| CryptoError::Library("AES-GCM seal"))?;
        let mut t = [0u8; MAC_LEN];
        t.copy_from_slice(tag.as_ref());
        Ok(t)
    }

    /// GMAC of `data` (AES-GCM with `data` as AAD and no plaintext).
    #[inline]
    pub(crate) fn gmac(&self, nonce: [u8; 12], data: &[u8]) -> Result<[u8; MAC_LEN]> {
        let tag = self
            .key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(data),
                &mut [],
            )
            .map_err(|_| CryptoError::Library("GMAC"))?;
        let mut t = [0u8; MAC_LEN];
        t.copy_from_slice(tag.as_ref());
        Ok(t)
    }

    /// Decrypts `ciphertext` into `out` (same length) and checks `tag`; `false` on mismatch.
    #[inline]
    pub(crate) fn open(
        &self,
        nonce: [u8; 12],
        ciphertext: &[u8],
        tag: &[u8; MAC_LEN],
        out: &mut [u8],
    ) -> bool {
        self.key
            .open_separate_gather(
                Nonce::assume_unique_for_key(nonce),
                Aad::empty(),
                ciphertext,
                tag,
                out,
            )
            .is_ok()
    }

    /// Checks the GMAC `tag` of `data`; `false` on mismatch.
    #[inline]
    pub(crate) fn verify_gmac(&self, nonce: [u8; 12], data: &[u8], tag: &[u8; MAC_LEN]) -> bool {
        self.key
            .open_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(data),
                tag,
                &mut [],
            )
            .is_ok()
    }
}
