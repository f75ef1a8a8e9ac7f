//! `DDS:Crypto:AES-GCM-GMAC`, the builtin cryptographic plugin of DDS Security 1.1 (§9.5), as a
//! sans-IO library: key material, session keys, and the payload, submessage and RTPS-message
//! transforms with their inverses.
//!
//! # Contract
//!
//! * **Sans-IO.** Nothing here reads a clock, a socket or the system RNG: randomness (master
//!   keys, the first session id and IV suffix) is an input, given by the caller.
//! * **Key material** ([`KeyMaterial`]): the `KeyMaterial_AES_GCM_GMAC` structure with its
//!   CDR form as carried in the `dds.cryp.keymat` binary property of a `DDS:Crypto:AES_GCM_GMAC`
//!   CryptoToken — big-endian, no encapsulation header, `master_salt` and the keys as
//!   `sequence<octet>` of exactly the key length (16 or 32), the receiver-specific key an empty
//!   sequence when its id is 0 (the layout Cyclone DDS writes and checks). [`KeyMaterial::generate`]
//!   draws keys from a caller-supplied random source; [`kx_key_material`] derives the KxKeys of
//!   the volatile secure endpoints from the handshake's challenges and shared secret.
//! * **Session keys**: `HMAC-SHA256(master_key, "SessionKey" | master_salt |
//!   session_id BE)` truncated to the key length, and `"SessionReceiverKey"` with the
//!   receiver-specific master key — [`session_key`], [`receiver_specific_session_key`]. The
//!   12-byte GCM nonce is `session_id BE | init_vector_suffix BE`.
//! * **Encoding** ([`SenderCrypto`]: local key material and its session state). A sender starts
//!   at the session id and IV suffix it is given, increments the suffix before every use, and
//!   starts the next session (id + 1, fresh key) once `max_blocks_per_session` 16-byte blocks
//!   have been protected under one key (default [`DEFAULT_MAX_BLOCKS_PER_SESSION`]: never, like
//!   Cyclone DDS). Each transform writes into a caller-provided buffer and returns the length
//!   written; the `*_encoded_len` functions and the `*_OVERHEAD` constants give the sizes to
//!   reserve. Nothing allocates per call (after a receiver key's first use in a session).
//!   - payload ([`SenderCrypto::encode_payload`]): `CryptoHeader | CryptoContent` (GCM) or
//!     `CryptoHeader | plaintext` (GMAC), then `CryptoFooter` with no receiver MACs;
//!   - submessage ([`SenderCrypto::encode_submessage`]): `SEC_PREFIX | SEC_BODY(encrypted
//!     submessage, header included) | SEC_POSTFIX` for GCM, `SEC_PREFIX | submessage in clear |
//!     SEC_POSTFIX` for GMAC;
//!   - RTPS message ([`SenderCrypto::encode_message`]): the clear RTPS header, `SRTPS_PREFIX`,
//!     `SEC_BODY` with the encrypted `INFO_SRC` copy of the header followed by the submessages
//!     (in clear for GMAC), `SRTPS_POSTFIX`.
//!
//!   Submessage and message transforms append one receiver-specific MAC (origin
//!   authentication) per [`ReceiverMacKey`] given: the GMAC of the common MAC under that
//!   receiver's session key and the same nonce. Which key material protects what is the
//!   caller's choice: writer key material for a writer's submessages, reader key material for
//!   ACKNACK/NACK_FRAG, participant key material for whole messages.
//! * **Decoding** ([`ReceiverCrypto`]: one remote key material, a small cache of derived session
//!   keys and an anti-replay window per session). Keys are derived for any session id the
//!   peer uses. The transform kind and key id in the CryptoHeader must be those of the key
//!   material. When the key material carries a receiver-specific key id (origin
//!   authentication), the MAC for that id must be present and valid. Submessages and messages
//!   pass a sliding anti-replay window ([`REPLAY_WINDOW`] IV suffixes per session; a session id
//!   [`SESSION_CACHE`] or more behind the newest one is refused); payloads do not (a payload's
//!   encoded form is stored and re-sent unchanged on repair). A decoded message's INFO_SRC
//!   copy must match its clear RTPS header, so the clear header is authenticated too. Keep one
//!   receiver per key material received (a Cyclone DDS writer sends two: one for its
//!   submessages, one for its payloads).
//! * **Errors.** Every failure is a [`CryptoError`] naming what was wrong: truncated or
//!   malformed input, a MAC mismatch, a replay, a buffer too small. Nothing panics on input
//!   from the network. The state of a [`ReceiverCrypto`] changes only when a decode succeeds.
//!
//! # Example
//!
//! ```
//! use ferrodds_security::crypto::*;
//!
//! # fn main() -> Result<(), CryptoError> {
//! // The caller's RNG (here a fixed pattern; use the OS RNG).
//! let mut seed = 7u8;
//! let mut rng = |b: &mut [u8]| b.iter_mut().for_each(|x| { seed = seed.wrapping_mul(13).wrapping_add(1); *x = seed });
//! // A writer's key material, and the copy with a receiver-specific key sent to one reader.
//! let writer = KeyMaterial::generate(TransformKind::Aes256Gcm, 1, &mut rng)?;
//! let to_reader = writer.with_receiver_specific_key(2, &mut rng)?;
//! let token_bytes = to_reader.to_bytes(); // the `dds.cryp.keymat` binary property
//!
//! let mut tx = SenderCrypto::new(writer, 0x1234, 0)?; // random session id and IV suffix
//! let mut macs = [ReceiverMacKey::new(&to_reader)?];
//! let mut rx = ReceiverCrypto::new(KeyMaterial::decode(&token_bytes)?)?;
//!
//! let heartbeat = [0x07, 0x01, 28, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 1, 0, 0, 0,
//!                  0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0];
//! let mut enc = [0u8; 32 + SUBMESSAGE_OVERHEAD + RECEIVER_MAC_LEN];
//! let n = tx.encode_submessage(&heartbeat, &mut macs, &mut enc)?;
//! let mut out = [0u8; 128];
//! let d = rx.decode_submessage(&enc[..n], &mut out)?;
//! assert_eq!(&out[..d.len], &heartbeat);
//! assert!(matches!(rx.decode_submessage(&enc[..n], &mut out), Err(CryptoError::Replayed { .. })));
//! # Ok(())
//! # }
//! ```
//!
//! # Interoperability (checked against Cyclone DDS's builtin plugin)
//!
//! The CryptoHeader, CryptoContent length and CryptoFooter fields are big-endian whatever the
//! submessage E flag says; the security submessages are emitted little-endian (E set), as
//! Cyclone DDS on x86/ARM does, and parsed in either byte order. `octetsToNextHeader` of a
//! security submessage must be a multiple of 4 (Cyclone checks this), so a GCM body whose
//! length is not a multiple of 4 is zero-padded after the ciphertext (the CryptoContent length
//! stays exact); a GMAC submessage or message must already be a multiple of 4 long. The
//! receiver-specific MAC key is derived from the master salt of the key material sent to that
//! receiver and the sender's session id.
//!
//! # AEAD library (measured)
//!
//! `benches/aead.rs` compares aws-lc-rs 1.19 (`LessSafeKey`, key schedule made once per
//! session) with the `openssl` crate's EVP AES-256-GCM over the system OpenSSL 3.0 (`CipherCtx`
//! keyed once, only the IV set per call — the cheapest way to drive EVP; Cyclone DDS creates
//! and keys a context for every call, the third column). Medians of `nice cargo bench -p
//! ferrodds-security --bench aead -- --warm-up-time 1 --measurement-time 3` on the project's
//! 2-CPU build machine (shared, load average about 8, so absolute figures are pessimistic):
//!
//! | operation | aws-lc-rs | openssl EVP | openssl, context per call |
//! |---|---|---|---|
//! | AES-256-GCM seal 32 B | 178 ns | 457 ns | 1.67 µs |
//! | AES-256-GCM open 32 B | 119 ns | 335 ns | 1.85 µs |
//! | AES-256-GCM seal 63000 B | 7.8 µs | 34.9 µs | 30.0 µs |
//! | AES-256-GCM open 63000 B | 6.8 µs | 26.8 µs | 29.5 µs |
//! | GMAC 32 B | 169 ns | 309 ns | 1.59 µs |
//! | GMAC 63000 B | 5.6 µs | 15.4 µs | 18.7 µs |
//!
//! The whole submessage transform over aws-lc-rs (AES-256-GCM, one receiver-specific MAC,
//! encode then decode) takes 672 ns at 32 B and 12.9 µs at 63000 B.
//!
//! The hot path uses aws-lc-rs: 1.8-4.5 times faster at both sizes, no FFI error stack, and
//! already in the dependency tree through rustls. No primitive is written here.

mod keymat;
mod keys;
mod receiver;
mod replay;
mod sender;
mod wire;

pub use keymat::{kx_key_material, KeyMaterial, TransformKind, CHALLENGE_LEN, MAX_KEY_LEN};
pub use keys::{receiver_specific_session_key, session_key, SessionKey};
pub use receiver::{DecodedSubmessage, ReceiverCrypto, MAX_SENDERS, REPLAY_WINDOW, SESSION_CACHE};
pub use sender::{ReceiverMacKey, SenderCrypto, DEFAULT_MAX_BLOCKS_PER_SESSION};
pub use wire::{
    message_encoded_len, payload_encoded_len, submessage_encoded_len, CryptoHeader,
    CRYPTO_FOOTER_LEN, CRYPTO_HEADER_LEN, MAC_LEN, MAX_RECEIVER_MACS, MESSAGE_OVERHEAD,
    PAYLOAD_OVERHEAD, RECEIVER_MAC_LEN, SUBMESSAGE_OVERHEAD,
};

/// Failures of the cryptographic plugin. Each names the structure or field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    /// The input ended inside a structure.
    #[error("truncated {what}: needs {needed} bytes, {have} left")]
    Truncated {
        /// The structure being read.
        what: &'static str,
        /// Bytes it needs.
        needed: usize,
        /// Bytes that were left.
        have: usize,
    },
    /// A submessage other than the one the layout requires.
    #[error("expected submessage {expected} (0x{expected_id:02x}), found id 0x{found:02x}")]
    UnexpectedSubmessage {
        /// Name of the submessage expected.
        expected: &'static str,
        /// Its id.
        expected_id: u8,
        /// The id found.
        found: u8,
    },
    /// A length field that is inconsistent with the data.
    #[error("invalid {what}: {value} ({reason})")]
    BadLength {
        /// The field.
        what: &'static str,
        /// Its value.
        value: usize,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A transformation kind that is not one of NONE, AES128/256 GMAC/GCM.
    #[error("unknown transformation kind {0:#010x}")]
    UnknownTransformKind(u32),
    /// The CryptoHeader's transformation kind is not the key material's.
    #[error("transformation kind {found:?} does not match the key material's {expected:?}")]
    TransformKindMismatch {
        /// The key material's kind.
        expected: TransformKind,
        /// The kind found.
        found: TransformKind,
    },
    /// The transformation kind is NONE where a protecting kind is needed.
    #[error("transformation kind NONE protects nothing: a {0} needs GMAC or GCM key material")]
    NotProtecting(&'static str),
    /// The CryptoHeader's key id is not the key material's sender key id.
    #[error("transformation key id {found:#x} is not this key material's {expected:#x}")]
    UnknownKeyId {
        /// The sender key id of the key material.
        expected: u32,
        /// The key id found.
        found: u32,
    },
    /// The common MAC (GCM tag / GMAC) does not verify: tampered or wrong key.
    #[error("common MAC mismatch (session {session_id:#x}): data tampered or wrong key")]
    MacMismatch {
        /// Session id of the CryptoHeader.
        session_id: u32,
    },
    /// Origin authentication is expected but no MAC carries this receiver's key id.
    #[error("no receiver-specific MAC for key id {key_id:#x} ({count} MACs present)")]
    ReceiverMacMissing {
        /// This receiver's receiver-specific key id.
        key_id: u32,
        /// How many receiver-specific MACs the footer has.
        count: usize,
    },
    /// This receiver's MAC does not verify.
    #[error("receiver-specific MAC mismatch for key id {key_id:#x}")]
    ReceiverMacMismatch {
        /// This receiver's receiver-specific key id.
        key_id: u32,
    },
    /// A payload footer with receiver-specific MACs (payloads carry none).
    #[error("payload CryptoFooter carries {0} receiver-specific MACs, expected 0")]
    PayloadReceiverMacs(usize),
    /// An IV suffix seen before in this session.
    #[error("replay: session {session_id:#x} IV suffix {iv_suffix:#x} was already received")]
    Replayed {
        /// Session id.
        session_id: u32,
        /// IV suffix.
        iv_suffix: u64,
    },
    /// An IV suffix older than the anti-replay window.
    #[error("replay window: session {session_id:#x} IV suffix {iv_suffix:#x} is older than the window (newest {newest:#x})")]
    OutsideReplayWindow {
        /// Session id.
        session_id: u32,
        /// IV suffix.
        iv_suffix: u64,
        /// Newest IV suffix received in the session.
        newest: u64,
    },
    /// A session id more than [`SESSION_CACHE`] sessions behind the newest one.
    #[error("stale session {session_id:#x}: the newest session is {newest:#x}")]
    StaleSession {
        /// Session id of the input.
        session_id: u32,
        /// Newest session id seen.
        newest: u32,
    },
    /// A protected RTPS message that does not start with an RTPS 2.x header (magic `RTPS`).
    #[error("not an RTPS 2.x message: bad magic or version in the clear header")]
    BadRtpsHeader,
    /// The decoded message's INFO_SRC copy differs from its clear RTPS header.
    #[error("the protected INFO_SRC does not match the clear RTPS header")]
    HeaderMismatch,
    /// A plaintext submessage or message that cannot be protected as given.
    #[error("cannot protect this {what}: {reason}")]
    BadPlaintext {
        /// "submessage" or "RTPS message".
        what: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// Too long for the 16-bit `octetsToNextHeader` or the 32-bit content length.
    #[error("{what} of {length} bytes exceeds the maximum {max}")]
    TooLong {
        /// The structure.
        what: &'static str,
        /// Its length.
        length: usize,
        /// The maximum.
        max: usize,
    },
    /// The caller's output buffer is too small.
    #[error("output buffer too small: needs {needed} bytes, has {have}")]
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        have: usize,
    },
    /// Key material field with the wrong length.
    #[error("key material: {field} has length {length}, expected {expected}")]
    KeyLength {
        /// Field name.
        field: &'static str,
        /// Length found.
        length: usize,
        /// Length required by the transformation kind.
        expected: usize,
    },
    /// Key material field that is all zero (refused as Cyclone DDS does: a broken RNG).
    #[error("key material: {0} is all zero")]
    ZeroKey(&'static str),
    /// A receiver MAC key made from key material without a receiver-specific key.
    #[error("key material has no receiver-specific key (receiver_specific_key_id is 0)")]
    NoReceiverSpecificKey,
    /// Sender and receiver key material of different transformation kinds.
    #[error("receiver key material kind {receiver:?} differs from the sender's {sender:?}")]
    ReceiverKindMismatch {
        /// Sender's kind.
        sender: TransformKind,
        /// Receiver key material's kind.
        receiver: TransformKind,
    },
    /// More receiver-specific MACs than a CryptoFooter can hold.
    #[error("{count} receiver-specific MACs exceed the maximum {max}")]
    TooManyReceivers {
        /// Requested.
        count: usize,
        /// Maximum.
        max: usize,
    },
    /// The AEAD library refused an operation with valid arguments (should not happen).
    #[error("AEAD library failure in {0}")]
    Library(&'static str),
}

/// Shorthand for results of this module.
pub type Result<T, E = CryptoError> = std::result::Result<T, E>;
