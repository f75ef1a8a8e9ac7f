//! `DDS:Auth:PKI-DH` — the DDS Security 1.1 builtin authentication plugin, sans-IO.
//!
//! # Contract
//!
//! * **Identity** ([`LocalIdentity::load`]): the `identity_ca`, `identity_certificate`,
//!   `private_key` (and optional `password`) configuration values are `file:` or `data:,`
//!   URIs holding PEM (or DER); the certificate is validated against the identity CA *at the
//!   `now` the caller gives* (validity dates, chain and signature, RSA-2048 or EC P-256 key,
//!   `digitalSignature` key usage when a KeyUsage extension is present) and the private key
//!   must match it. Errors name the file (or `data:`) and the reason.
//! * **Adjusted GUID** ([`adjusted_guid`]): top bit of byte 0 set, the next 47 bits from
//!   SHA-256 of the DER subject name, bytes 6..12 = the first 6 bytes of SHA-256 of the
//!   candidate prefix, entity id kept (Cyclone's `get_adjusted_participant_guid`).
//! * **Tokens**: IdentityToken `DDS:Auth:PKI-DH:1.0` (`dds.cert.sn`, `dds.cert.algo`,
//!   `dds.ca.sn`, `dds.ca.algo`) built and parsed; PermissionsToken built (the permissions
//!   document itself, `c.perm`, is opaque bytes supplied by access control).
//! * **Handshake** ([`Authenticator`]): the participant with the lower GUID (16-byte
//!   comparison of the adjusted GUIDs, as Cyclone's `validate_remote_identity`) sends the
//!   Request; Reply and Final follow, as `DataHolder`s laid out exactly as Cyclone's with
//!   `IncludeOptionalFields` on (every optional field is sent; none is required on receipt,
//!   each one present is checked). Key agreement `ECDH+prime256v1-CEUM` (default, what
//!   Cyclone always picks) or `DH+MODP-2048-256` (public key sent as a DER INTEGER like
//!   Cyclone, or raw on request; both accepted). Signatures `RSASSA-PSS-SHA256` (salt 32 on
//!   signing, any salt length on verification) and `ECDSA-SHA256` over the big-endian CDR
//!   of the `BinaryPropertySeq`s [hash_c2, challenge2, dh2, challenge1, dh1, hash_c1]
//!   (Reply) and [hash_c1, challenge1, dh1, challenge2, dh2, hash_c2] (Final); hash_cN =
//!   SHA-256 of the CDR of [c.id, c.perm, c.pdata, c.dsign_algo, c.kagree_algo] as sent.
//!   The peer's certificate is validated against *our* identity CA at `now`, and the GUID in
//!   its `c.pdata` must match both the certificate (first 6 bytes, Cyclone's rule) and the
//!   remote participant the caller names. SharedSecret = SHA-256 of the raw (EC)DH output.
//! * **Sans-IO**: no sockets, no clock, no threads; time (`now`, Unix seconds) and
//!   randomness (challenges and (EC)DH private keys, from an [`Entropy`]) are inputs.
//!   OpenSSL's own generator is used only inside RSA-PSS / ECDSA signing (salt, nonce).
//! * **AuthRequest** (optional): [`Authenticator::auth_request`] announces the challenge we
//!   will use next with a peer (`future_challenge`); after
//!   [`Authenticator::note_auth_request`] the peer's next challenge must be the one it
//!   announced (Cyclone's rule). Neither is needed to authenticate.
//! * **Bounded state**: at most one pending handshake per remote participant (a new Request
//!   or begin replaces the old one, so a flood from one peer keeps one entry) and at most
//!   [`AuthOptions::max_pending`] in total; entries older than
//!   [`AuthOptions::handshake_timeout_secs`] are dropped before a new one is refused with
//!   [`AuthError::TooManyPending`]. A completed handshake leaves the table.
//! * Every failure is a typed [`AuthError`] naming the message, property or file and the
//!   reason; nothing here panics on input from the network or from files.
//!
//! ```
//! use ferrodds_security::auth::pki::{generate_ca, issue_identity, minimal_pdata};
//! use ferrodds_security::auth::{
//!     AuthOptions, Authenticator, HandshakeStep, IdentityAlgo, LocalIdentity, OsEntropy,
//! };
//!
//! let now = 1_800_000_000; // Unix seconds, from the caller's clock
//! let ca = generate_ca("CA", IdentityAlgo::EcPrime256v1, now - 60, now + 3600)?;
//! let participant = |cn: &str, n: u8| -> Result<Authenticator, _> {
//!     let id = issue_identity(&ca, cn, IdentityAlgo::EcPrime256v1, n.into(), now - 60, now + 3600)?;
//!     let id = LocalIdentity::from_parts(ca.cert.clone(), id.cert, id.key, &[n; 16], now, cn, cn)?;
//!     let pdata = minimal_pdata(&id.guid()); // really: our SPDP data, big-endian PL
//!     Ok::<_, ferrodds_security::auth::AuthError>(
//!         Authenticator::new(id, b"<signed permissions>\0".to_vec(), pdata, AuthOptions::default()))
//! };
//! let (mut a, mut b) = (participant("a", 1)?, participant("b", 2)?);
//! if !a.is_initiator(&b.local_guid()) {
//!     std::mem::swap(&mut a, &mut b);
//! }
//! let (ag, bg) = (a.local_guid(), b.local_guid());
//! let request = a.begin_handshake(bg, now, &mut OsEntropy)?;
//! let HandshakeStep::Reply(reply) = b.process(ag, &request, now, &mut OsEntropy)? else { panic!() };
//! let HandshakeStep::Final { message, outcome: at_a } = a.process(bg, &reply, now, &mut OsEntropy)?
//! else { panic!() };
//! let HandshakeStep::Complete(at_b) = b.process(ag, &message, now, &mut OsEntropy)? else { panic!() };
//! assert_eq!(at_a.shared_secret, at_b.shared_secret);
//! assert_eq!(at_a.peer_subject_name, b.identity().subject_name());
//! # Ok::<(), ferrodds_security::auth::AuthError>(())
//! ```

mod handshake;
mod identity;
pub mod pki;

pub use handshake::{
    auth_request_token, parse_auth_request, AuthOptions, Authenticator, Entropy, HandshakeOutcome,
    HandshakeStep, ModpEncoding, OsEntropy, DEFAULT_HANDSHAKE_TIMEOUT_SECS, DEFAULT_MAX_PENDING,
};
pub use identity::{
    adjusted_guid, adjusted_guid_from_subject, parse_identity_token, permissions_token, read_uri,
    subject_oneline, validate_certificate, IdentityConfig, IdentityTokenInfo, LocalIdentity,
    PERMISSIONS_TOKEN_CLASS_ID, PROP_IDENTITY_CA, PROP_IDENTITY_CA_SHORT,
    PROP_IDENTITY_CERTIFICATE, PROP_IDENTITY_CERTIFICATE_SHORT, PROP_PASSWORD, PROP_PASSWORD_SHORT,
    PROP_PRIVATE_KEY, PROP_PRIVATE_KEY_SHORT, TOKEN_PROP_CA_ALGO, TOKEN_PROP_CA_SN,
    TOKEN_PROP_CERT_ALGO, TOKEN_PROP_CERT_SN, TOKEN_PROP_PERM_CA_ALGO, TOKEN_PROP_PERM_CA_SN,
};

/// Class of the IdentityToken and base of the handshake classes.
pub const AUTH_TOKEN_CLASS_ID: &str = "DDS:Auth:PKI-DH:1.0";
/// Class of the AuthRequest token (`future_challenge`).
pub const AUTH_REQUEST_CLASS_ID: &str = "DDS:Auth:PKI-DH:1.0+AuthReq";
/// Class of the handshake Request.
pub const HANDSHAKE_REQUEST_CLASS_ID: &str = "DDS:Auth:PKI-DH:1.0+Req";
/// Class of the handshake Reply.
pub const HANDSHAKE_REPLY_CLASS_ID: &str = "DDS:Auth:PKI-DH:1.0+Reply";
/// Class of the handshake Final.
pub const HANDSHAKE_FINAL_CLASS_ID: &str = "DDS:Auth:PKI-DH:1.0+Final";

/// Handshake binary property names.
pub mod prop {
    /// The sender's identity certificate (PEM).
    pub const C_ID: &str = "c.id";
    /// The sender's signed permissions document.
    pub const C_PERM: &str = "c.perm";
    /// The sender's serialized SPDP participant data (big-endian parameter list).
    pub const C_PDATA: &str = "c.pdata";
    /// The sender's signature algorithm.
    pub const C_DSIGN_ALGO: &str = "c.dsign_algo";
    /// The key agreement algorithm.
    pub const C_KAGREE_ALGO: &str = "c.kagree_algo";
    /// SHA-256 of the initiator's credentials.
    pub const HASH_C1: &str = "hash_c1";
    /// SHA-256 of the replier's credentials.
    pub const HASH_C2: &str = "hash_c2";
    /// The initiator's (EC)DH public key.
    pub const DH1: &str = "dh1";
    /// The replier's (EC)DH public key.
    pub const DH2: &str = "dh2";
    /// The initiator's 32-byte challenge.
    pub const CHALLENGE1: &str = "challenge1";
    /// The replier's 32-byte challenge.
    pub const CHALLENGE2: &str = "challenge2";
    /// The signature.
    pub const SIGNATURE: &str = "signature";
    /// An AuthRequest's challenge announced in advance.
    pub const FUTURE_CHALLENGE: &str = "future_challenge";
    /// OCSP status (optional, never sent by this implementation).
    pub const OCSP_STATUS: &str = "ocsp_status";
}

/// Identity key algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdentityAlgo {
    /// RSA, 2048-bit modulus; signs with `RSASSA-PSS-SHA256`.
    Rsa2048,
    /// EC on prime256v1 (P-256); signs with `ECDSA-SHA256`.
    EcPrime256v1,
}

impl IdentityAlgo {
    /// The name used in `dds.cert.algo` / `dds.ca.algo`.
    pub fn token_name(self) -> &'static str {
        match self {
            IdentityAlgo::Rsa2048 => "RSA-2048",
            IdentityAlgo::EcPrime256v1 => "EC-prime256v1",
        }
    }

    /// The `c.dsign_algo` name.
    pub fn dsign_name(self) -> &'static str {
        match self {
            IdentityAlgo::Rsa2048 => "RSASSA-PSS-SHA256",
            IdentityAlgo::EcPrime256v1 => "ECDSA-SHA256",
        }
    }
}

/// Key agreement algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyAgreement {
    /// Finite-field DH on the RFC 5114 2048-bit group with a 256-bit subgroup.
    DhModp2048_256,
    /// ECDH on P-256, uncompressed points.
    EcdhPrime256v1,
}

impl KeyAgreement {
    /// The `c.kagree_algo` name.
    pub fn name(self) -> &'static str {
        match self {
            KeyAgreement::DhModp2048_256 => "DH+MODP-2048-256",
            KeyAgreement::EcdhPrime256v1 => "ECDH+prime256v1-CEUM",
        }
    }
}

/// Compares a received algorithm name with `want`, allowing one trailing NUL (Cyclone sends
/// the names NUL-terminated; others may not).
pub(crate) fn algo_name_eq(want: &str, got: &[u8]) -> bool {
    got.strip_suffix(&[0]).unwrap_or(got) == want.as_bytes()
}

/// Everything that can go wrong in authentication.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A required configuration property is missing.
    #[error("authentication configuration: property {property} is missing")]
    MissingConfig {
        /// The property (long form).
        property: &'static str,
    },
    /// A configuration value is neither `file:` nor `data:,`.
    #[error("authentication configuration: {what} uses unsupported URI scheme '{scheme}' (want file: or data:,)")]
    UnsupportedUri {
        /// Which item.
        what: &'static str,
        /// The scheme found (empty when none).
        scheme: String,
    },
    /// A `file:` URI could not be read.
    #[error("{what}: cannot read {file}: {reason}")]
    ReadFile {
        /// Which item.
        what: &'static str,
        /// The path.
        file: String,
        /// The I/O error.
        reason: String,
    },
    /// A certificate could not be parsed or used.
    #[error("{what}: bad certificate: {reason}")]
    BadCertificate {
        /// Which certificate (with its file).
        what: String,
        /// Why.
        reason: String,
    },
    /// A private key could not be parsed.
    #[error("{what}: bad private key: {reason}")]
    BadPrivateKey {
        /// Which key (with its file).
        what: String,
        /// Why.
        reason: String,
    },
    /// The private key does not belong to the identity certificate.
    #[error("{what}: private key does not match the identity certificate")]
    KeyMismatch {
        /// Which key (with its file).
        what: String,
    },
    /// A key type or size other than RSA-2048 / EC P-256.
    #[error("{what}: unsupported key: {reason}")]
    UnsupportedKey {
        /// Which certificate or key.
        what: String,
        /// Why.
        reason: String,
    },
    /// The certificate's validity starts after `now`.
    #[error("{what}: certificate not yet valid (notBefore {not_before})")]
    CertificateNotYetValid {
        /// Which certificate.
        what: String,
        /// Its notBefore.
        not_before: String,
    },
    /// The certificate's validity ended before `now`.
    #[error("{what}: certificate expired (notAfter {not_after})")]
    CertificateExpired {
        /// Which certificate.
        what: String,
        /// Its notAfter.
        not_after: String,
    },
    /// The certificate does not chain to the identity CA (wrong CA, bad signature, ...).
    #[error("{what}: certificate rejected: {reason}")]
    CertificateRejected {
        /// Which certificate.
        what: String,
        /// OpenSSL's verification error.
        reason: String,
    },
    /// The certificate's KeyUsage lacks `digitalSignature`.
    #[error("{what}: certificate key usage does not allow digitalSignature")]
    KeyUsage {
        /// Which certificate.
        what: String,
    },
    /// A peer's IdentityToken is not a PKI-DH 1.x token.
    #[error("IdentityToken class '{class_id}': {reason}")]
    BadIdentityToken {
        /// The class found (truncated).
        class_id: String,
        /// Why.
        reason: String,
    },
    /// A handshake message of a class not expected now (or of no handshake class).
    #[error("unexpected handshake message '{got}' (expected {expected})")]
    UnexpectedMessage {
        /// What the handshake expected.
        expected: &'static str,
        /// The class received (truncated).
        got: String,
    },
    /// A required handshake property is missing or empty.
    #[error("handshake {message}: property {property} is missing or empty")]
    MissingProperty {
        /// Request, Reply or Final.
        message: &'static str,
        /// The property.
        property: &'static str,
    },
    /// A handshake property has a bad value.
    #[error("handshake {message}: property {property} invalid: {reason}")]
    BadProperty {
        /// Request, Reply or Final.
        message: &'static str,
        /// The property.
        property: &'static str,
        /// Why.
        reason: String,
    },
    /// A challenge (or future_challenge) that does not echo the expected one.
    #[error("handshake {message}: {property} does not match the expected challenge")]
    ChallengeMismatch {
        /// Reply or Final.
        message: &'static str,
        /// `challenge1` or `challenge2`.
        property: &'static str,
    },
    /// The peer's signature does not verify.
    #[error("handshake {message}: signature does not verify with the peer's certificate")]
    BadSignature {
        /// Reply or Final.
        message: &'static str,
    },
    /// The peer's certificate failed validation.
    #[error("handshake {message}: peer certificate (c.id): {source}")]
    PeerCertificate {
        /// Request or Reply.
        message: &'static str,
        /// Why.
        source: Box<AuthError>,
    },
    /// The GUID in the peer's `c.pdata` does not match its certificate or its GUID.
    #[error("handshake {message}: c.pdata: {reason}")]
    PdataGuid {
        /// Request or Reply.
        message: &'static str,
        /// Why.
        reason: String,
    },
    /// The pending-handshake table is full.
    #[error("too many pending handshakes ({max}); refusing a new one")]
    TooManyPending {
        /// The bound.
        max: usize,
    },
    /// A failure inside OpenSSL (key generation, signing, derivation).
    #[error("{context}: {reason}")]
    Crypto {
        /// What was being done.
        context: &'static str,
        /// OpenSSL's error.
        reason: String,
    },
}

pub(crate) fn crypto(
    context: &'static str,
) -> impl FnOnce(openssl::error::ErrorStack) -> AuthError {
    move |e| AuthError::Crypto {
        context,
        reason: e.to_string(),
    }
}
