//! `KeyMaterial_AES_GCM_GMAC`: the transformation kinds, the key material, its CDR form in the
//! `dds.cryp.keymat` binary property, generation and the KxKeys derivation.

use aws_lc_rs::{digest, hmac};

use super::{CryptoError, Result};

/// Largest key (and master salt) length: 32 bytes for AES-256.
pub const MAX_KEY_LEN: usize = 32;

/// Length of an authentication handshake challenge (`challenge1`, `challenge2`).
pub const CHALLENGE_LEN: usize = 32;

/// `CryptoTransformKind` (DDS Security 1.1 §9.5.2.1.1): the last octet of the 4-octet
/// `transformation_kind`, which is a big-endian integer on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum TransformKind {
    /// No protection.
    None = 0,
    /// AES-128 GMAC (SIGN).
    Aes128Gmac = 1,
    /// AES-128 GCM (ENCRYPT).
    Aes128Gcm = 2,
    /// AES-256 GMAC (SIGN).
    Aes256Gmac = 3,
    /// AES-256 GCM (ENCRYPT).
    Aes256Gcm = 4,
}

impl TransformKind {
    /// The kind from its wire value.
    pub fn from_u32(v: u32) -> Result<Self> {
        Ok(match v {
            0 => Self::None,
            1 => Self::Aes128Gmac,
            2 => Self::Aes128Gcm,
            3 => Self::Aes256Gmac,
            4 => Self::Aes256Gcm,
            other => return Err(CryptoError::UnknownTransformKind(other)),
        })
    }

    /// The wire value.
    #[must_use]
    pub const fn to_u32(self) -> u32 {
        self as u32
    }

    /// The kind for a protection: `encrypt` (GCM) or sign only (GMAC), with 128 or 256-bit keys
    /// (`dds.sec.crypto.keysize`; anything but 128 means 256, the default of Cyclone DDS and
    /// Fast DDS).
    #[must_use]
    pub const fn for_protection(encrypt: bool, key_bits: u32) -> Self {
        match (encrypt, key_bits == 128) {
            (true, true) => Self::Aes128Gcm,
            (true, false) => Self::Aes256Gcm,
            (false, true) => Self::Aes128Gmac,
            (false, false) => Self::Aes256Gmac,
        }
    }

    /// Key (and master salt) length in bytes: 16, 32, or 0 for NONE.
    #[must_use]
    pub const fn key_len(self) -> usize {
        match self {
            Self::None => 0,
            Self::Aes128Gmac | Self::Aes128Gcm => 16,
            Self::Aes256Gmac | Self::Aes256Gcm => 32,
        }
    }

    /// Whether the kind encrypts (GCM).
    #[must_use]
    pub const fn encrypts(self) -> bool {
        matches!(self, Self::Aes128Gcm | Self::Aes256Gcm)
    }

    /// Whether the kind protects at all (not NONE).
    #[must_use]
    pub const fn protects(self) -> bool {
        !matches!(self, Self::None)
    }
}

/// `KeyMaterial_AES_GCM_GMAC` (DDS Security 1.1 §9.5.2.1.1).
///
/// Keys are held in fixed arrays of [`MAX_KEY_LEN`] bytes of which the first
/// `transformation_kind.key_len()` are meaningful (the rest are zero), so key material never
/// allocates; they are wiped when the key material is dropped. Key ids are the big-endian integers of their 4-octet wire form.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyMaterial {
    /// Transformation kind.
    pub transformation_kind: TransformKind,
    /// Master salt.
    pub master_salt: [u8; MAX_KEY_LEN],
    /// Sender key id (the `transformation_key_id` of every CryptoHeader made with it).
    pub sender_key_id: u32,
    /// Master sender key.
    pub master_sender_key: [u8; MAX_KEY_LEN],
    /// Receiver-specific key id; 0 = no receiver-specific key (no origin authentication).
    pub receiver_specific_key_id: u32,
    /// Master receiver-specific key (meaningful when `receiver_specific_key_id` is not 0).
    pub master_receiver_specific_key: [u8; MAX_KEY_LEN],
}

impl std::fmt::Debug for KeyMaterial {
    /// Key ids and kind only: keys are secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyMaterial")
            .field("transformation_kind", &self.transformation_kind)
            .field("sender_key_id", &self.sender_key_id)
            .field("receiver_specific_key_id", &self.receiver_specific_key_id)
            .finish_non_exhaustive()
    }
}

impl Drop for KeyMaterial {
    /// Wipes the keys.
    fn drop(&mut self) {
        use zeroize::Zeroize;
        self.master_salt.zeroize();
        self.master_sender_key.zeroize();
        self.master_receiver_specific_key.zeroize();
    }
}

fn all_zero(b: &[u8]) -> bool {
    b.iter().all(|&x| x == 0)
}

/// A reader over key material bytes with field-naming errors.
struct Rd<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Rd<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        let have = self.b.len() - self.pos;
        if have < n {
            return Err(CryptoError::Truncated {
                what,
                needed: n,
                have,
            });
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u32(&mut self, what: &'static str) -> Result<u32> {
        let s = self.take(4, what)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }

    /// `sequence<octet>`: BE length then bytes (every field before is 4-aligned, and every
    /// length the encoder writes is a multiple of 4, so no CDR padding occurs; a peer's odd
    /// length would only be accepted for an ignored field, and the next u32 is then read at
    /// the next 4-aligned offset as CDR requires).
    fn seq(&mut self, what: &'static str) -> Result<&'a [u8]> {
        let len = self.u32(what)? as usize;
        let s = self.take(len, what)?;
        self.pos = (self.pos + 3) & !3;
        if self.pos > self.b.len() {
            self.pos = self.b.len();
        }
        Ok(s)
    }
}

impl KeyMaterial {
    /// Key material with the given keys (slices of exactly `kind.key_len()` bytes; for NONE
    /// all empty). `receiver_specific` is `None` for no receiver-specific key.
    pub fn new(
        kind: TransformKind,
        master_salt: &[u8],
        sender_key_id: u32,
        master_sender_key: &[u8],
        receiver_specific: Option<(u32, &[u8])>,
    ) -> Result<Self> {
        let n = kind.key_len();
        let mut km = Self {
            transformation_kind: kind,
            master_salt: [0; MAX_KEY_LEN],
            sender_key_id,
            master_sender_key: [0; MAX_KEY_LEN],
            receiver_specific_key_id: 0,
            master_receiver_specific_key: [0; MAX_KEY_LEN],
        };
        let check = |field, s: &[u8]| {
            if s.len() != n {
                Err(CryptoError::KeyLength {
                    field,
                    length: s.len(),
                    expected: n,
                })
            } else if n > 0 && all_zero(s) {
                Err(CryptoError::ZeroKey(field))
            } else {
                Ok(())
            }
        };
        check("master_salt", master_salt)?;
        check("master_sender_key", master_sender_key)?;
        km.master_salt[..n].copy_from_slice(master_salt);
        km.master_sender_key[..n].copy_from_slice(master_sender_key);
        if let Some((id, key)) = receiver_specific {
            if id != 0 {
                check("master_receiver_specific_key", key)?;
                km.receiver_specific_key_id = id;
                km.master_receiver_specific_key[..n].copy_from_slice(key);
            }
        }
        Ok(km)
    }

    /// Generates key material of `kind` with `sender_key_id`: master salt and master sender key
    /// are filled by `random` (the caller's cryptographically secure RNG), in that order. No
    /// receiver-specific key (see [`Self::with_receiver_specific_key`]). Fails with
    /// [`CryptoError::ZeroKey`] if the RNG produced an all-zero key.
    pub fn generate(
        kind: TransformKind,
        sender_key_id: u32,
        mut random: impl FnMut(&mut [u8]),
    ) -> Result<Self> {
        let n = kind.key_len();
        let mut salt = [0u8; MAX_KEY_LEN];
        let mut key = [0u8; MAX_KEY_LEN];
        random(&mut salt[..n]);
        random(&mut key[..n]);
        let km = Self::new(kind, &salt[..n], sender_key_id, &key[..n], None);
        zeroize::Zeroize::zeroize(&mut salt);
        zeroize::Zeroize::zeroize(&mut key);
        km
    }

    /// This key material with a receiver-specific key `key_id` (not 0) filled by `random`: the
    /// key material a sender hands to one receiver when origin authentication is on.
    pub fn with_receiver_specific_key(
        &self,
        key_id: u32,
        mut random: impl FnMut(&mut [u8]),
    ) -> Result<Self> {
        if key_id == 0 {
            return Err(CryptoError::NoReceiverSpecificKey);
        }
        let n = self.key_len();
        let mut key = [0u8; MAX_KEY_LEN];
        random(&mut key[..n]);
        if n > 0 && all_zero(&key[..n]) {
            return Err(CryptoError::ZeroKey("master_receiver_specific_key"));
        }
        let mut km = self.clone();
        km.receiver_specific_key_id = key_id;
        km.master_receiver_specific_key = key;
        zeroize::Zeroize::zeroize(&mut key);
        Ok(km)
    }

    /// Key length of the transformation kind.
    #[must_use]
    pub const fn key_len(&self) -> usize {
        self.transformation_kind.key_len()
    }

    /// The meaningful bytes of the master salt.
    #[must_use]
    pub fn salt(&self) -> &[u8] {
        &self.master_salt[..self.key_len()]
    }

    /// The meaningful bytes of the master sender key.
    #[must_use]
    pub fn sender_key(&self) -> &[u8] {
        &self.master_sender_key[..self.key_len()]
    }

    /// The meaningful bytes of the master receiver-specific key (empty when its id is 0).
    #[must_use]
    pub fn receiver_specific_key(&self) -> &[u8] {
        if self.receiver_specific_key_id == 0 {
            &[]
        } else {
            &self.master_receiver_specific_key[..self.key_len()]
        }
    }

    /// Size of the CDR form: 24 + 2 × key length (+ key length with a receiver-specific key).
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        24 + 2 * self.key_len() + self.receiver_specific_key().len()
    }

    /// Writes the CDR form (big-endian, no encapsulation header) into `out`; returns its length.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize> {
        let len = self.encoded_len();
        if out.len() < len {
            return Err(CryptoError::BufferTooSmall {
                needed: len,
                have: out.len(),
            });
        }
        let mut pos = 0;
        let mut put = |b: &[u8]| {
            out[pos..pos + b.len()].copy_from_slice(b);
            pos += b.len();
        };
        let n = u32::try_from(self.key_len()).unwrap_or(0);
        put(&self.transformation_kind.to_u32().to_be_bytes());
        put(&n.to_be_bytes());
        put(self.salt());
        put(&self.sender_key_id.to_be_bytes());
        put(&n.to_be_bytes());
        put(self.sender_key());
        put(&self.receiver_specific_key_id.to_be_bytes());
        let rs = self.receiver_specific_key();
        put(&u32::try_from(rs.len()).unwrap_or(0).to_be_bytes());
        put(rs);
        debug_assert_eq!(pos, len);
        Ok(len)
    }

    /// The CDR form in a new vector (for building a CryptoToken).
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = vec![0; self.encoded_len()];
        let n = self.encode(&mut v).unwrap_or(0);
        v.truncate(n);
        v
    }

    /// Decodes the CDR form. Checks as Cyclone DDS does: for a protecting kind, master salt and
    /// master sender key of exactly the key length and not all zero; with a non-zero
    /// receiver-specific key id, that key too. For NONE the keys are ignored. Bytes after the
    /// structure are ignored.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let mut r = Rd { b: bytes, pos: 0 };
        let kind = TransformKind::from_u32(r.u32("transformation_kind")?)?;
        let salt = r.seq("master_salt")?;
        let sender_key_id = r.u32("sender_key_id")?;
        let sender_key = r.seq("master_sender_key")?;
        let rs_id = r.u32("receiver_specific_key_id")?;
        let rs_key = r.seq("master_receiver_specific_key")?;
        if !kind.protects() {
            return Self::new(kind, &[], sender_key_id, &[], None);
        }
        Self::new(
            kind,
            salt,
            sender_key_id,
            sender_key,
            (rs_id != 0).then_some((rs_id, rs_key)),
        )
    }
}

/// The KxKeys of the volatile secure endpoints (DDS Security 1.1 §9.5.2.1.2): AES256_GCM key
/// material with key ids 0 and no receiver-specific key, where
/// `master_salt = HMAC-SHA256(SHA-256(challenge1 | "keyexchange salt" | challenge2),
/// shared_secret)` and `master_sender_key = HMAC-SHA256(SHA-256(challenge2 | "key exchange key"
/// | challenge1), shared_secret)`. `challenge1` is the handshake initiator's challenge.
pub fn kx_key_material(
    challenge1: &[u8; CHALLENGE_LEN],
    challenge2: &[u8; CHALLENGE_LEN],
    shared_secret: &[u8],
) -> Result<KeyMaterial> {
    let derive = |a: &[u8], cookie: &[u8], b: &[u8]| {
        let mut ctx = digest::Context::new(&digest::SHA256);
        ctx.update(a);
        ctx.update(cookie);
        ctx.update(b);
        let h = ctx.finish();
        let key = hmac::Key::new(hmac::HMAC_SHA256, h.as_ref());
        let tag = hmac::sign(&key, shared_secret);
        let mut out = [0u8; MAX_KEY_LEN];
        out.copy_from_slice(&tag.as_ref()[..MAX_KEY_LEN]);
        out
    };
    let salt = derive(challenge1, b"keyexchange salt", challenge2);
    let key = derive(challenge2, b"key exchange key", challenge1);
    KeyMaterial::new(TransformKind::Aes256Gcm, &salt, 0, &key, None)
}
