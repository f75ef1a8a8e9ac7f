//! The PKI-DH handshake state machine (Request → Reply → Final), sans-IO.

use std::collections::HashMap;

use openssl::bn::{BigNum, BigNumContext, BigNumRef};
use openssl::derive::Deriver;
use openssl::dh::Dh;
use openssl::ec::{EcGroup, EcKey, EcPoint, PointConversionForm};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{Id, PKey, PKeyRef, Private, Public};
use openssl::rsa::Padding;
use openssl::sign::{RsaPssSaltlen, Signer, Verifier};
use openssl::x509::X509;

use super::identity::{
    adjusted_guid, public_key, sha256, subject_oneline, validate_certificate, LocalIdentity,
};
use super::{
    algo_name_eq, crypto, prop, AuthError, IdentityAlgo, KeyAgreement, AUTH_REQUEST_CLASS_ID,
    HANDSHAKE_FINAL_CLASS_ID, HANDSHAKE_REPLY_CLASS_ID, HANDSHAKE_REQUEST_CLASS_ID,
};
use crate::generic_message::{serialize_binary_properties, BinaryProperty, DataHolder, GuidBytes};

/// Default bound on pending handshakes ([`AuthOptions::max_pending`]).
pub const DEFAULT_MAX_PENDING: usize = 64;
/// Default age after which a pending handshake may be dropped
/// ([`AuthOptions::handshake_timeout_secs`]).
pub const DEFAULT_HANDSHAKE_TIMEOUT_SECS: i64 = 60;

const CHALLENGE_LEN: usize = 32;
const PID_SENTINEL: u16 = 0x0001;
const PID_PARTICIPANT_GUID: u16 = 0x0050;

/// Source of the randomness the handshake needs (challenges, (EC)DH private keys).
pub trait Entropy {
    /// Fills `buf` with unpredictable bytes.
    fn fill(&mut self, buf: &mut [u8]) -> Result<(), AuthError>;
}

/// [`Entropy`] from OpenSSL's CSPRNG.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsEntropy;

impl Entropy for OsEntropy {
    fn fill(&mut self, buf: &mut [u8]) -> Result<(), AuthError> {
        openssl::rand::rand_bytes(buf).map_err(crypto("random bytes"))
    }
}

/// How a `DH+MODP-2048-256` public key is sent (both are accepted on receipt).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ModpEncoding {
    /// A DER ASN.1 INTEGER: what Cyclone sends and requires.
    #[default]
    Der,
    /// The raw big-endian integer: what Fast DDS, OpenDDS and RustDDS send.
    Raw,
}

/// Handshake options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthOptions {
    /// Key agreement proposed in our Requests (a Reply always follows the Request's).
    pub key_agreement: KeyAgreement,
    /// Encoding of our MODP public keys.
    pub modp_encoding: ModpEncoding,
    /// Most pending handshakes kept (one per remote at most).
    pub max_pending: usize,
    /// Age (seconds) after which a pending handshake may be dropped to make room.
    pub handshake_timeout_secs: i64,
}

impl Default for AuthOptions {
    fn default() -> Self {
        AuthOptions {
            key_agreement: KeyAgreement::EcdhPrime256v1,
            modp_encoding: ModpEncoding::Der,
            max_pending: DEFAULT_MAX_PENDING,
            handshake_timeout_secs: DEFAULT_HANDSHAKE_TIMEOUT_SECS,
        }
    }
}

/// The result of a completed handshake.
#[derive(Clone)]
pub struct HandshakeOutcome {
    /// The remote participant's GUID.
    pub remote_guid: GuidBytes,
    /// SHA-256 of the (EC)DH output.
    pub shared_secret: [u8; 32],
    /// The initiator's challenge.
    pub challenge1: [u8; 32],
    /// The replier's challenge.
    pub challenge2: [u8; 32],
    /// The key agreement used.
    pub key_agreement: KeyAgreement,
    /// The peer's validated identity certificate.
    pub peer_certificate: X509,
    /// Its subject name in one-line form (`/C=../CN=..`) for access control.
    pub peer_subject_name: String,
    /// The peer's `c.perm` (signed permissions document) as received.
    pub peer_permissions: Vec<u8>,
    /// The peer's `c.pdata` (serialized participant data) as received.
    pub peer_pdata: Vec<u8>,
}

impl std::fmt::Debug for HandshakeOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandshakeOutcome")
            .field("remote_guid", &self.remote_guid)
            .field("key_agreement", &self.key_agreement)
            .field("peer_subject_name", &self.peer_subject_name)
            .finish_non_exhaustive()
    }
}

/// What to do after [`Authenticator::process`].
#[derive(Debug)]
pub enum HandshakeStep {
    /// We are the replier: send this Reply and wait for the Final.
    Reply(DataHolder),
    /// We are the initiator: send this Final; the handshake is complete.
    Final {
        /// The Final to send.
        message: DataHolder,
        /// The result.
        outcome: HandshakeOutcome,
    },
    /// We are the replier and the Final checked out: the handshake is complete.
    Complete(HandshakeOutcome),
}

struct DhKey {
    agreement: KeyAgreement,
    key: PKey<Private>,
    /// Our public key as sent (dh1 or dh2).
    public: Vec<u8>,
}

struct Peer {
    cert: X509,
    perm: Vec<u8>,
    pdata: Vec<u8>,
}

enum State {
    /// Only future challenges exchanged (AuthRequest), no handshake message yet.
    Announced,
    AwaitReply {
        challenge1: [u8; 32],
        dh: DhKey,
        hash_c1: [u8; 32],
    },
    AwaitFinal {
        challenge1: [u8; 32],
        challenge2: [u8; 32],
        dh: DhKey,
        dh1: Vec<u8>,
        peer_dh: PKey<Public>,
        hash_c1: [u8; 32],
        hash_c2: [u8; 32],
        peer: Peer,
    },
}

struct Session {
    started: i64,
    state: State,
    /// Challenges announced in AuthRequest tokens (ours, the peer's).
    futures: Futures,
}

/// `future_challenge`s of AuthRequest tokens: ours (our next challenge with this peer) and
/// the peer's (its next challenge must equal it, as Cyclone checks).
#[derive(Debug, Clone, Copy, Default)]
struct Futures {
    local: Option<[u8; 32]>,
    remote: Option<[u8; 32]>,
}

/// The local side of PKI-DH authentication: our identity, credentials and the pending
/// handshakes (at most one per remote, at most [`AuthOptions::max_pending`] in all).
pub struct Authenticator {
    identity: LocalIdentity,
    permissions: Vec<u8>,
    pdata: Vec<u8>,
    options: AuthOptions,
    sessions: HashMap<GuidBytes, Session>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("identity", &self.identity)
            .field("options", &self.options)
            .field("pending", &self.sessions.len())
            .finish_non_exhaustive()
    }
}

fn nul_terminated(s: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(s.len() + 1);
    v.extend_from_slice(s.as_bytes());
    v.push(0);
    v
}

fn bp(name: &str, value: impl Into<Vec<u8>>) -> BinaryProperty {
    BinaryProperty::new(name, value)
}

fn find<'a>(t: &'a DataHolder, name: &str) -> Option<&'a [u8]> {
    t.binary_property(name)
}

fn required<'a>(
    t: &'a DataHolder,
    message: &'static str,
    property: &'static str,
    nonempty: bool,
) -> Result<&'a [u8], AuthError> {
    match find(t, property) {
        Some(v) if !(nonempty && v.is_empty()) => Ok(v),
        _ => Err(AuthError::MissingProperty { message, property }),
    }
}

fn challenge(
    t: &DataHolder,
    message: &'static str,
    property: &'static str,
) -> Result<[u8; 32], AuthError> {
    let v = required(t, message, property, true)?;
    v.try_into().map_err(|_| AuthError::BadProperty {
        message,
        property,
        reason: format!("{} bytes, want {CHALLENGE_LEN}", v.len()),
    })
}

/// An optional property: when present it must equal `expected`.
fn optional_eq(
    t: &DataHolder,
    message: &'static str,
    property: &'static str,
    expected: &[u8],
    what: &str,
) -> Result<(), AuthError> {
    match find(t, property) {
        Some(v) if v != expected => Err(AuthError::BadProperty {
            message,
            property,
            reason: format!("does not match {what}"),
        }),
        _ => Ok(()),
    }
}

fn cdr_of(props: &[BinaryProperty]) -> Result<Vec<u8>, AuthError> {
    let refs: Vec<&BinaryProperty> = props.iter().collect();
    let mut out = Vec::new();
    serialize_binary_properties(&refs, &mut out).map_err(|e| AuthError::Crypto {
        context: "serializing signed properties",
        reason: e.to_string(),
    })?;
    Ok(out)
}

/// SHA-256 of the CDR of [c.id, c.perm, c.pdata, c.dsign_algo, c.kagree_algo].
fn credentials_hash(props: &[BinaryProperty]) -> Result<[u8; 32], AuthError> {
    Ok(sha256(&cdr_of(props)?))
}

/// The signed sequence: six (name, value) pairs.
fn signed_bytes(items: [(&str, &[u8]); 6]) -> Result<Vec<u8>, AuthError> {
    let props: Vec<BinaryProperty> = items.iter().map(|(n, v)| bp(n, v.to_vec())).collect();
    cdr_of(&props)
}

fn sign(key: &PKeyRef<Private>, data: &[u8]) -> Result<Vec<u8>, AuthError> {
    let f = crypto("signing the handshake");
    let mut s = Signer::new(MessageDigest::sha256(), key).map_err(f)?;
    if key.id() == Id::RSA {
        s.set_rsa_padding(Padding::PKCS1_PSS)
            .and_then(|_| s.set_rsa_pss_saltlen(RsaPssSaltlen::custom(32)))
            .and_then(|_| s.set_rsa_mgf1_md(MessageDigest::sha256()))
            .map_err(crypto("signing the handshake"))?;
    }
    s.update(data).map_err(crypto("signing the handshake"))?;
    s.sign_to_vec().map_err(crypto("signing the handshake"))
}

/// Verifies; any malformed signature is simply "does not verify".
fn verify(key: &PKeyRef<Public>, data: &[u8], sig: &[u8]) -> bool {
    (|| -> Result<bool, openssl::error::ErrorStack> {
        let mut v = Verifier::new(MessageDigest::sha256(), key)?;
        if key.id() == Id::RSA {
            v.set_rsa_padding(Padding::PKCS1_PSS)?;
            // -2 = RSA_PSS_SALTLEN_AUTO when verifying: any salt length.
            v.set_rsa_pss_saltlen(RsaPssSaltlen::custom(-2))?;
            v.set_rsa_mgf1_md(MessageDigest::sha256())?;
        }
        v.update(data)?;
        v.verify(sig)
    })()
    .unwrap_or(false)
}

/// A uniformly distributed scalar in [1, order-1] from 48 bytes of entropy.
fn scalar(order: &BigNumRef, e: &mut dyn Entropy) -> Result<BigNum, AuthError> {
    let f = || crypto("making a key-agreement private key");
    let mut raw = [0u8; 48];
    e.fill(&mut raw)?;
    let x = BigNum::from_slice(&raw).map_err(f())?;
    let mut om1 = order.to_owned().map_err(f())?;
    om1.sub_word(1).map_err(f())?;
    let mut ctx = BigNumContext::new().map_err(f())?;
    let mut r = BigNum::new().map_err(f())?;
    r.nnmod(&x, &om1, &mut ctx).map_err(f())?;
    r.add_word(1).map_err(f())?;
    Ok(r)
}

fn p256() -> Result<EcGroup, AuthError> {
    EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).map_err(crypto("P-256 group"))
}

/// DER encoding of a non-negative big-endian integer.
fn der_integer(be: &[u8]) -> Vec<u8> {
    let start = be.iter().position(|b| *b != 0).unwrap_or(be.len());
    let mut content = Vec::with_capacity(be.len() + 1);
    if be.get(start).is_none_or(|b| b & 0x80 != 0) {
        content.push(0);
    }
    content.extend_from_slice(&be[start..]);
    let mut out = vec![0x02];
    let n = content.len();
    if n < 0x80 {
        out.push(n as u8);
    } else if n <= 0xff {
        out.extend_from_slice(&[0x81, n as u8]);
    } else {
        out.extend_from_slice(&[0x82, (n >> 8) as u8, n as u8]);
    }
    out.extend_from_slice(&content);
    out
}

/// The content of a minimal DER INTEGER filling all of `b`, if it is one and positive.
fn der_integer_content(b: &[u8]) -> Option<&[u8]> {
    if b.first() != Some(&0x02) {
        return None;
    }
    let (len, hdr) = match *b.get(1)? {
        n if n < 0x80 => (n as usize, 2),
        0x81 => (usize::from(*b.get(2)?), 3),
        0x82 => ((usize::from(*b.get(2)?) << 8) | usize::from(*b.get(3)?), 4),
        _ => return None,
    };
    let minimal = match hdr {
        3 => len >= 0x80,
        4 => len > 0xff,
        _ => true,
    };
    if !minimal || len == 0 || hdr + len != b.len() || b[hdr] & 0x80 != 0 {
        return None;
    }
    Some(&b[hdr..])
}

fn gen_dh(
    agreement: KeyAgreement,
    encoding: ModpEncoding,
    e: &mut dyn Entropy,
) -> Result<DhKey, AuthError> {
    let f = || crypto("making a key-agreement key pair");
    match agreement {
        KeyAgreement::EcdhPrime256v1 => {
            let group = p256()?;
            let mut ctx = BigNumContext::new().map_err(f())?;
            let mut order = BigNum::new().map_err(f())?;
            group.order(&mut order, &mut ctx).map_err(f())?;
            let k = scalar(&order, e)?;
            let mut point = EcPoint::new(&group).map_err(f())?;
            point.mul_generator2(&group, &k, &mut ctx).map_err(f())?;
            let public = point
                .to_bytes(&group, PointConversionForm::UNCOMPRESSED, &mut ctx)
                .map_err(f())?;
            let ec = EcKey::from_private_components(&group, &k, &point).map_err(f())?;
            Ok(DhKey {
                agreement,
                key: PKey::from_ec_key(ec).map_err(f())?,
                public,
            })
        }
        KeyAgreement::DhModp2048_256 => {
            let params = Dh::get_2048_256().map_err(f())?;
            let q = params
                .prime_q()
                .ok_or(AuthError::Crypto {
                    context: "MODP-2048-256 group",
                    reason: "no subgroup order".into(),
                })?
                .to_owned()
                .map_err(f())?;
            let x = scalar(&q, e)?;
            let dh = params.set_private_key(x).map_err(f())?;
            let y = dh.public_key().to_vec();
            let public = match encoding {
                ModpEncoding::Der => der_integer(&y),
                ModpEncoding::Raw => y,
            };
            Ok(DhKey {
                agreement,
                key: PKey::from_dh(dh).map_err(f())?,
                public,
            })
        }
    }
}

fn peer_dh(
    agreement: KeyAgreement,
    bytes: &[u8],
    message: &'static str,
    property: &'static str,
) -> Result<PKey<Public>, AuthError> {
    let bad = |reason: String| AuthError::BadProperty {
        message,
        property,
        reason,
    };
    match agreement {
        KeyAgreement::EcdhPrime256v1 => {
            if bytes.len() != 65 || bytes[0] != 0x04 {
                return Err(bad(format!(
                    "{} bytes, want an uncompressed P-256 point (65 bytes starting 0x04)",
                    bytes.len()
                )));
            }
            let group = p256()?;
            let mut ctx = BigNumContext::new().map_err(crypto("ECDH"))?;
            let point = EcPoint::from_bytes(&group, bytes, &mut ctx)
                .map_err(|_| bad("not a point on P-256".into()))?;
            let ec = EcKey::from_public_key(&group, &point)
                .map_err(|e| bad(format!("not a P-256 public key ({e})")))?;
            ec.check_key()
                .map_err(|_| bad("not a valid P-256 public key".into()))?;
            PKey::from_ec_key(ec).map_err(crypto("ECDH"))
        }
        KeyAgreement::DhModp2048_256 => {
            let content = match der_integer_content(bytes) {
                Some(c) => c,
                None if !bytes.is_empty() && bytes.len() <= 256 => bytes,
                None => {
                    return Err(bad(format!(
                        "{} bytes: neither a DER INTEGER nor a raw 2048-bit integer",
                        bytes.len()
                    )))
                }
            };
            let f = || crypto("MODP-2048-256");
            let y = BigNum::from_slice(content).map_err(f())?;
            let params = Dh::get_2048_256().map_err(f())?;
            let p = params.prime_p().to_owned().map_err(f())?;
            let mut pm1 = p.to_owned().map_err(f())?;
            pm1.sub_word(1).map_err(f())?;
            let one = BigNum::from_u32(1).map_err(f())?;
            if y <= one || y >= pm1 {
                return Err(bad("outside 2..p-2".into()));
            }
            // Subgroup check: y^q mod p == 1 (RFC 5114 groups have small cofactors).
            if let Some(q) = params.prime_q() {
                let mut ctx = BigNumContext::new().map_err(f())?;
                let mut r = BigNum::new().map_err(f())?;
                r.mod_exp(&y, q, &p, &mut ctx).map_err(f())?;
                if r != one {
                    return Err(bad("not in the order-q subgroup".into()));
                }
            }
            let dh = params.set_public_key(y).map_err(f())?;
            PKey::from_dh(dh).map_err(f())
        }
    }
}

fn derive(local: &PKeyRef<Private>, peer: &PKeyRef<Public>) -> Result<[u8; 32], AuthError> {
    let f = || crypto("computing the shared secret");
    let mut d = Deriver::new(local).map_err(f())?;
    d.set_peer(peer).map_err(f())?;
    let raw = d.derive_to_vec().map_err(f())?;
    Ok(sha256(&raw))
}

/// The participant GUID in a big-endian parameter list (Cyclone's `c.pdata`).
fn pdata_guid(pdata: &[u8]) -> Option<GuidBytes> {
    let mut i = 0usize;
    loop {
        i = i.checked_add(3)? & !3;
        let hdr = pdata.get(i..i.checked_add(4)?)?;
        let pid = u16::from_be_bytes([hdr[0], hdr[1]]);
        let len = usize::from(u16::from_be_bytes([hdr[2], hdr[3]]));
        i += 4;
        let body = pdata.get(i..i.checked_add(len)?)?;
        match pid {
            PID_SENTINEL => return None,
            PID_PARTICIPANT_GUID if len >= 16 => {
                let mut g = [0u8; 16];
                g.copy_from_slice(&body[..16]);
                return Some(g);
            }
            _ => {}
        }
        i += len;
    }
}

fn algo_from(
    v: &[u8],
    message: &'static str,
    property: &'static str,
) -> Result<IdentityAlgo, AuthError> {
    [IdentityAlgo::Rsa2048, IdentityAlgo::EcPrime256v1]
        .into_iter()
        .find(|a| algo_name_eq(a.dsign_name(), v))
        .ok_or_else(|| AuthError::BadProperty {
            message,
            property,
            reason: format!(
                "unsupported '{}'",
                String::from_utf8_lossy(&v[..v.len().min(64)])
            ),
        })
}

fn kagree_from(
    v: &[u8],
    message: &'static str,
    property: &'static str,
) -> Result<KeyAgreement, AuthError> {
    [KeyAgreement::EcdhPrime256v1, KeyAgreement::DhModp2048_256]
        .into_iter()
        .find(|a| algo_name_eq(a.name(), v))
        .ok_or_else(|| AuthError::BadProperty {
            message,
            property,
            reason: format!(
                "unsupported '{}'",
                String::from_utf8_lossy(&v[..v.len().min(64)])
            ),
        })
}

/// An AuthRequest token announcing `future_challenge`.
pub fn auth_request_token(future_challenge: &[u8; 32]) -> DataHolder {
    DataHolder {
        class_id: AUTH_REQUEST_CLASS_ID.into(),
        properties: Vec::new(),
        binary_properties: vec![bp(prop::FUTURE_CHALLENGE, future_challenge.to_vec())],
    }
}

/// The `future_challenge` of an AuthRequest token (class `DDS:Auth:PKI-DH:1.0+AuthReq...`,
/// a 32-byte `future_challenge`), as Cyclone validates it.
pub fn parse_auth_request(token: &DataHolder) -> Result<[u8; 32], AuthError> {
    if !token.class_id.starts_with(AUTH_REQUEST_CLASS_ID) {
        return Err(AuthError::UnexpectedMessage {
            expected: AUTH_REQUEST_CLASS_ID,
            got: token.class_id.chars().take(64).collect(),
        });
    }
    challenge(token, "AuthRequest", prop::FUTURE_CHALLENGE)
}

struct Credentials {
    peer: Peer,
    kagree: KeyAgreement,
    hash: [u8; 32],
}

impl Authenticator {
    /// An authenticator for `identity`, sending `permissions` as `c.perm` (the signed
    /// permissions document as access control supplies it; Cyclone sends the document with
    /// a trailing NUL) and `pdata` as `c.pdata` (our SPDP participant data as a big-endian
    /// parameter list with `PID_PARTICIPANT_GUID` and a sentinel, no encapsulation header,
    /// as Cyclone sends and checks).
    pub fn new(
        identity: LocalIdentity,
        permissions: Vec<u8>,
        pdata: Vec<u8>,
        options: AuthOptions,
    ) -> Self {
        Authenticator {
            identity,
            permissions,
            pdata,
            options,
            sessions: HashMap::new(),
        }
    }

    /// Our identity.
    pub fn identity(&self) -> &LocalIdentity {
        &self.identity
    }

    /// Our adjusted participant GUID.
    pub fn local_guid(&self) -> GuidBytes {
        self.identity.guid
    }

    /// Whether we send the Request to `remote`: our GUID is the lower (16-byte comparison).
    pub fn is_initiator(&self, remote: &GuidBytes) -> bool {
        self.identity.guid < *remote
    }

    /// Number of pending handshakes.
    pub fn pending(&self) -> usize {
        self.sessions.len()
    }

    /// Forgets the pending handshake with `remote`, if any.
    pub fn cancel(&mut self, remote: &GuidBytes) -> bool {
        self.sessions.remove(remote).is_some()
    }

    /// Drops pending handshakes started more than `handshake_timeout_secs` before `now`;
    /// returns how many.
    pub fn expire(&mut self, now: i64) -> usize {
        let before = self.sessions.len();
        let timeout = self.options.handshake_timeout_secs;
        self.sessions
            .retain(|_, s| now.saturating_sub(s.started) < timeout);
        before - self.sessions.len()
    }

    /// Replaces any session with `remote` (keeping its announced challenges, returned) and
    /// makes sure there is room for one more.
    fn make_room(&mut self, remote: &GuidBytes, now: i64) -> Result<Futures, AuthError> {
        let futures = self
            .sessions
            .remove(remote)
            .map(|s| s.futures)
            .unwrap_or_default();
        if self.sessions.len() >= self.options.max_pending {
            self.expire(now);
        }
        if self.sessions.len() >= self.options.max_pending {
            return Err(AuthError::TooManyPending {
                max: self.options.max_pending,
            });
        }
        Ok(futures)
    }

    /// Records an announced challenge for `remote`, creating an entry if needed.
    fn announce(
        &mut self,
        remote: GuidBytes,
        now: i64,
        set: impl FnOnce(&mut Futures),
    ) -> Result<(), AuthError> {
        if let Some(s) = self.sessions.get_mut(&remote) {
            set(&mut s.futures);
            return Ok(());
        }
        let mut futures = self.make_room(&remote, now)?;
        set(&mut futures);
        self.sessions.insert(
            remote,
            Session {
                started: now,
                state: State::Announced,
                futures,
            },
        );
        Ok(())
    }

    /// Our AuthRequest token for `remote` (class `DDS:Auth:PKI-DH:1.0+AuthReq`, binary
    /// property `future_challenge`), sent on the stateless topic with message class
    /// `dds.sec.auth_request`: the challenge we will use in our next Request or Reply to
    /// `remote` (a peer that received it checks that). Repeated calls return the same one.
    pub fn auth_request(
        &mut self,
        remote: GuidBytes,
        now: i64,
        entropy: &mut dyn Entropy,
    ) -> Result<DataHolder, AuthError> {
        if let Some(c) = self.sessions.get(&remote).and_then(|s| s.futures.local) {
            return Ok(auth_request_token(&c));
        }
        let mut c = [0u8; 32];
        entropy.fill(&mut c)?;
        self.announce(remote, now, |f| f.local = Some(c))?;
        Ok(auth_request_token(&c))
    }

    /// Takes note of `remote`'s AuthRequest token: its next Request's `challenge1` (or
    /// Reply's `challenge2`) must then be the announced `future_challenge`.
    pub fn note_auth_request(
        &mut self,
        remote: GuidBytes,
        token: &DataHolder,
        now: i64,
    ) -> Result<(), AuthError> {
        let c = parse_auth_request(token)?;
        self.announce(remote, now, |f| f.remote = Some(c))
    }

    fn own_credentials(&self, kagree: KeyAgreement) -> Vec<BinaryProperty> {
        vec![
            bp(prop::C_ID, self.identity.cert_pem.clone()),
            bp(prop::C_PERM, self.permissions.clone()),
            bp(prop::C_PDATA, self.pdata.clone()),
            bp(
                prop::C_DSIGN_ALGO,
                nul_terminated(self.identity.algo.dsign_name()),
            ),
            bp(prop::C_KAGREE_ALGO, nul_terminated(kagree.name())),
        ]
    }

    /// Starts a handshake with `remote` as the initiator: returns the Request to send.
    /// Replaces any pending handshake with `remote`.
    pub fn begin_handshake(
        &mut self,
        remote: GuidBytes,
        now: i64,
        entropy: &mut dyn Entropy,
    ) -> Result<DataHolder, AuthError> {
        let futures = self.make_room(&remote, now)?;
        let challenge1 = match futures.local {
            Some(c) => c,
            None => {
                let mut c = [0u8; 32];
                entropy.fill(&mut c)?;
                c
            }
        };
        let dh = gen_dh(
            self.options.key_agreement,
            self.options.modp_encoding,
            entropy,
        )?;
        let mut props = self.own_credentials(dh.agreement);
        let hash_c1 = credentials_hash(&props)?;
        props.push(bp(prop::HASH_C1, hash_c1.to_vec()));
        props.push(bp(prop::DH1, dh.public.clone()));
        props.push(bp(prop::CHALLENGE1, challenge1.to_vec()));
        self.sessions.insert(
            remote,
            Session {
                started: now,
                state: State::AwaitReply {
                    challenge1,
                    dh,
                    hash_c1,
                },
                futures,
            },
        );
        Ok(DataHolder {
            class_id: HANDSHAKE_REQUEST_CLASS_ID.into(),
            properties: Vec::new(),
            binary_properties: props,
        })
    }

    /// Handles a handshake message (the `DataHolder` of a `dds.sec.auth` generic message)
    /// from `remote` at `now`. `remote` is the sender's participant GUID (the prefix of the
    /// message's source GUID; only the 12-byte prefix is compared with its `c.pdata`).
    /// A failed Reply or Final leaves the pending handshake in place (a forged message
    /// cannot cancel it); a failed Request creates nothing.
    pub fn process(
        &mut self,
        remote: GuidBytes,
        token: &DataHolder,
        now: i64,
        entropy: &mut dyn Entropy,
    ) -> Result<HandshakeStep, AuthError> {
        let class = token.class_id.as_str();
        if class.starts_with(HANDSHAKE_REQUEST_CLASS_ID) {
            self.on_request(remote, token, now, entropy)
                .map(HandshakeStep::Reply)
        } else if class.starts_with(HANDSHAKE_REPLY_CLASS_ID) {
            self.on_reply(remote, token, now)
        } else if class.starts_with(HANDSHAKE_FINAL_CLASS_ID) {
            self.on_final(remote, token).map(HandshakeStep::Complete)
        } else {
            Err(AuthError::UnexpectedMessage {
                expected: "a PKI-DH Request, Reply or Final",
                got: class.chars().take(64).collect(),
            })
        }
    }

    /// Checks the sender's credentials in a Request or Reply.
    fn credentials(
        &self,
        t: &DataHolder,
        message: &'static str,
        remote: &GuidBytes,
        now: i64,
    ) -> Result<Credentials, AuthError> {
        let c_id = required(t, message, prop::C_ID, true)?;
        let label = "peer certificate (c.id)";
        let peer_err = |source| AuthError::PeerCertificate {
            message,
            source: Box::new(source),
        };
        let pem = c_id.strip_suffix(&[0]).unwrap_or(c_id);
        let cert = X509::from_pem(pem).map_err(|e| {
            peer_err(AuthError::BadCertificate {
                what: label.into(),
                reason: format!("not a PEM certificate ({e})"),
            })
        })?;
        validate_certificate(&cert, &self.identity.ca, now, label).map_err(peer_err)?;
        let c_perm = required(t, message, prop::C_PERM, false)?;
        let c_pdata = required(t, message, prop::C_PDATA, false)?;
        let pdata_err = |reason: &str| AuthError::PdataGuid {
            message,
            reason: reason.to_owned(),
        };
        let guid = pdata_guid(c_pdata)
            .ok_or_else(|| pdata_err("no PID_PARTICIPANT_GUID in the parameter list"))?;
        let from_cert = adjusted_guid(&cert, &[0; 16])?;
        if guid[..6] != from_cert[..6] {
            return Err(pdata_err(
                "participant GUID does not derive from the certificate's subject name",
            ));
        }
        if guid[..12] != remote[..12] {
            return Err(pdata_err(
                "participant GUID differs from the sender's participant GUID",
            ));
        }
        let c_dsign = required(t, message, prop::C_DSIGN_ALGO, true)?;
        algo_from(c_dsign, message, prop::C_DSIGN_ALGO)?;
        let c_kagree = required(t, message, prop::C_KAGREE_ALGO, true)?;
        let kagree = kagree_from(c_kagree, message, prop::C_KAGREE_ALGO)?;
        let hash = credentials_hash(&[
            bp(prop::C_ID, c_id.to_vec()),
            bp(prop::C_PERM, c_perm.to_vec()),
            bp(prop::C_PDATA, c_pdata.to_vec()),
            bp(prop::C_DSIGN_ALGO, c_dsign.to_vec()),
            bp(prop::C_KAGREE_ALGO, c_kagree.to_vec()),
        ])?;
        Ok(Credentials {
            peer: Peer {
                cert,
                perm: c_perm.to_vec(),
                pdata: c_pdata.to_vec(),
            },
            kagree,
            hash,
        })
    }

    fn on_request(
        &mut self,
        remote: GuidBytes,
        t: &DataHolder,
        now: i64,
        entropy: &mut dyn Entropy,
    ) -> Result<DataHolder, AuthError> {
        const M: &str = "Request";
        let cred = self.credentials(t, M, &remote, now)?;
        let dh1 = required(t, M, prop::DH1, true)?.to_vec();
        let peer_dh = peer_dh(cred.kagree, &dh1, M, prop::DH1)?;
        let challenge1 = challenge(t, M, prop::CHALLENGE1)?;
        let announced = self.sessions.get(&remote).and_then(|s| s.futures.remote);
        if announced.is_some_and(|c| c != challenge1) {
            return Err(AuthError::ChallengeMismatch {
                message: M,
                property: prop::CHALLENGE1,
            });
        }
        optional_eq(
            t,
            M,
            prop::HASH_C1,
            &cred.hash,
            "the hash of the Request's credentials",
        )?;
        let hash_c1 = cred.hash;

        let futures = self.make_room(&remote, now)?;
        let challenge2 = match futures.local {
            Some(c) => c,
            None => {
                let mut c = [0u8; 32];
                entropy.fill(&mut c)?;
                c
            }
        };
        let dh = gen_dh(cred.kagree, self.options.modp_encoding, entropy)?;
        let mut props = self.own_credentials(cred.kagree);
        let hash_c2 = credentials_hash(&props)?;
        let signed = signed_bytes([
            (prop::HASH_C2, &hash_c2),
            (prop::CHALLENGE2, &challenge2),
            (prop::DH2, &dh.public),
            (prop::CHALLENGE1, &challenge1),
            (prop::DH1, &dh1),
            (prop::HASH_C1, &hash_c1),
        ])?;
        let signature = sign(&self.identity.key, &signed)?;
        props.extend([
            bp(prop::DH2, dh.public.clone()),
            bp(prop::CHALLENGE1, challenge1.to_vec()),
            bp(prop::CHALLENGE2, challenge2.to_vec()),
            bp(prop::DH1, dh1.clone()),
            bp(prop::HASH_C2, hash_c2.to_vec()),
            bp(prop::HASH_C1, hash_c1.to_vec()),
            bp(prop::SIGNATURE, signature),
        ]);
        self.sessions.insert(
            remote,
            Session {
                started: now,
                state: State::AwaitFinal {
                    challenge1,
                    challenge2,
                    dh,
                    dh1,
                    peer_dh,
                    hash_c1,
                    hash_c2,
                    peer: cred.peer,
                },
                futures,
            },
        );
        Ok(DataHolder {
            class_id: HANDSHAKE_REPLY_CLASS_ID.into(),
            properties: Vec::new(),
            binary_properties: props,
        })
    }

    fn on_reply(
        &mut self,
        remote: GuidBytes,
        t: &DataHolder,
        now: i64,
    ) -> Result<HandshakeStep, AuthError> {
        const M: &str = "Reply";
        let Some(Session {
            state:
                State::AwaitReply {
                    challenge1,
                    dh,
                    hash_c1,
                },
            futures,
            ..
        }) = self.sessions.get(&remote)
        else {
            return Err(AuthError::UnexpectedMessage {
                expected: "no Reply: no Request of ours is pending for this peer",
                got: t.class_id.chars().take(64).collect(),
            });
        };
        let cred = self.credentials(t, M, &remote, now)?;
        if cred.kagree != dh.agreement {
            return Err(AuthError::BadProperty {
                message: M,
                property: prop::C_KAGREE_ALGO,
                reason: format!(
                    "{} differs from the Request's {}",
                    cred.kagree.name(),
                    dh.agreement.name()
                ),
            });
        }
        let dh2 = required(t, M, prop::DH2, true)?;
        let peer_dh = peer_dh(dh.agreement, dh2, M, prop::DH2)?;
        // The echo of our challenge first: it is what identifies a stale or replayed Reply.
        if challenge(t, M, prop::CHALLENGE1)? != *challenge1 {
            return Err(AuthError::ChallengeMismatch {
                message: M,
                property: prop::CHALLENGE1,
            });
        }
        optional_eq(t, M, prop::DH1, &dh.public, "the Request's dh1")?;
        let challenge2 = challenge(t, M, prop::CHALLENGE2)?;
        if futures.remote.is_some_and(|c| c != challenge2) {
            return Err(AuthError::ChallengeMismatch {
                message: M,
                property: prop::CHALLENGE2,
            });
        }
        let signature = required(t, M, prop::SIGNATURE, true)?;
        optional_eq(t, M, prop::HASH_C1, hash_c1, "the Request's hash_c1")?;
        optional_eq(
            t,
            M,
            prop::HASH_C2,
            &cred.hash,
            "the hash of the Reply's credentials",
        )?;
        let hash_c2 = cred.hash;
        let signed = signed_bytes([
            (prop::HASH_C2, &hash_c2),
            (prop::CHALLENGE2, &challenge2),
            (prop::DH2, dh2),
            (prop::CHALLENGE1, challenge1),
            (prop::DH1, &dh.public),
            (prop::HASH_C1, hash_c1),
        ])?;
        let peer_key = public_key(&cred.peer.cert, "peer certificate (c.id)")?;
        if !verify(&peer_key, &signed, signature) {
            return Err(AuthError::BadSignature { message: M });
        }
        let shared_secret = derive(&dh.key, &peer_dh)?;
        let final_signed = signed_bytes([
            (prop::HASH_C1, hash_c1),
            (prop::CHALLENGE1, challenge1),
            (prop::DH1, &dh.public),
            (prop::CHALLENGE2, &challenge2),
            (prop::DH2, dh2),
            (prop::HASH_C2, &hash_c2),
        ])?;
        let final_sig = sign(&self.identity.key, &final_signed)?;
        let message = DataHolder {
            class_id: HANDSHAKE_FINAL_CLASS_ID.into(),
            properties: Vec::new(),
            binary_properties: vec![
                bp(prop::CHALLENGE1, challenge1.to_vec()),
                bp(prop::CHALLENGE2, challenge2.to_vec()),
                bp(prop::DH1, dh.public.clone()),
                bp(prop::DH2, dh2.to_vec()),
                bp(prop::HASH_C2, hash_c2.to_vec()),
                bp(prop::HASH_C1, hash_c1.to_vec()),
                bp(prop::SIGNATURE, final_sig),
            ],
        };
        let outcome = HandshakeOutcome {
            remote_guid: remote,
            shared_secret,
            challenge1: *challenge1,
            challenge2,
            key_agreement: dh.agreement,
            peer_subject_name: subject_oneline(cred.peer.cert.subject_name()),
            peer_certificate: cred.peer.cert,
            peer_permissions: cred.peer.perm,
            peer_pdata: cred.peer.pdata,
        };
        self.sessions.remove(&remote);
        Ok(HandshakeStep::Final { message, outcome })
    }

    fn on_final(
        &mut self,
        remote: GuidBytes,
        t: &DataHolder,
    ) -> Result<HandshakeOutcome, AuthError> {
        const M: &str = "Final";
        let Some(Session {
            state:
                State::AwaitFinal {
                    challenge1,
                    challenge2,
                    dh,
                    dh1,
                    peer_dh,
                    hash_c1,
                    hash_c2,
                    peer,
                },
            ..
        }) = self.sessions.get(&remote)
        else {
            return Err(AuthError::UnexpectedMessage {
                expected: "no Final: no Reply of ours is pending for this peer",
                got: t.class_id.chars().take(64).collect(),
            });
        };
        if challenge(t, M, prop::CHALLENGE1)? != *challenge1 {
            return Err(AuthError::ChallengeMismatch {
                message: M,
                property: prop::CHALLENGE1,
            });
        }
        if challenge(t, M, prop::CHALLENGE2)? != *challenge2 {
            return Err(AuthError::ChallengeMismatch {
                message: M,
                property: prop::CHALLENGE2,
            });
        }
        let signature = required(t, M, prop::SIGNATURE, true)?;
        optional_eq(t, M, prop::DH1, dh1, "the Request's dh1")?;
        optional_eq(t, M, prop::DH2, &dh.public, "the Reply's dh2")?;
        optional_eq(t, M, prop::HASH_C1, hash_c1, "the Request's hash_c1")?;
        optional_eq(t, M, prop::HASH_C2, hash_c2, "the Reply's hash_c2")?;
        let signed = signed_bytes([
            (prop::HASH_C1, hash_c1),
            (prop::CHALLENGE1, challenge1),
            (prop::DH1, dh1),
            (prop::CHALLENGE2, challenge2),
            (prop::DH2, &dh.public),
            (prop::HASH_C2, hash_c2),
        ])?;
        let peer_key = public_key(&peer.cert, "peer certificate (c.id)")?;
        if !verify(&peer_key, &signed, signature) {
            return Err(AuthError::BadSignature { message: M });
        }
        let shared_secret = derive(&dh.key, peer_dh)?;
        let outcome = HandshakeOutcome {
            remote_guid: remote,
            shared_secret,
            challenge1: *challenge1,
            challenge2: *challenge2,
            key_agreement: dh.agreement,
            peer_subject_name: subject_oneline(peer.cert.subject_name()),
            peer_certificate: peer.cert.clone(),
            peer_permissions: peer.perm.clone(),
            peer_pdata: peer.pdata.clone(),
        };
        self.sessions.remove(&remote);
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_integer_round_trip() {
        for v in [
            vec![0x01],
            vec![0x80],
            vec![0x00, 0x00, 0x7f],
            vec![0xff; 200],
            vec![0x12; 256],
        ] {
            let d = der_integer(&v);
            let c = der_integer_content(&d).unwrap();
            let strip = |b: &[u8]| {
                b.iter()
                    .skip_while(|x| **x == 0)
                    .copied()
                    .collect::<Vec<_>>()
            };
            assert_eq!(strip(c), strip(&v));
        }
        // 256 bytes with the top bit set: 0x02 0x82 0x01 0x01 0x00 ...
        assert_eq!(
            &der_integer(&[0xff; 256])[..5],
            &[0x02, 0x82, 0x01, 0x01, 0x00]
        );
        assert!(der_integer_content(&[0x02, 0x81, 0x05, 1, 2, 3, 4, 5]).is_none()); // not minimal
        assert!(der_integer_content(&[0x02, 0x01, 0x80]).is_none()); // negative
        assert!(der_integer_content(&[0x02, 0x03, 0x01]).is_none()); // short
    }

    #[test]
    fn rsa_pss_signs_with_salt_32_and_verifies_any_salt() {
        let key = PKey::from_rsa(openssl::rsa::Rsa::generate(2048).unwrap()).unwrap();
        let public = PKey::public_key_from_pem(&key.public_key_to_pem().unwrap()).unwrap();
        let data = b"signed properties";
        let sig_with = |salt: RsaPssSaltlen| {
            let mut s = Signer::new(MessageDigest::sha256(), &key).unwrap();
            s.set_rsa_padding(Padding::PKCS1_PSS).unwrap();
            s.set_rsa_pss_saltlen(salt).unwrap();
            s.update(data).unwrap();
            s.sign_to_vec().unwrap()
        };
        // Peers sign with OpenSSL's default (maximum) salt, 32 (Fast DDS) or others.
        for salt in [
            RsaPssSaltlen::MAXIMUM_LENGTH,
            RsaPssSaltlen::DIGEST_LENGTH,
            RsaPssSaltlen::custom(20),
            RsaPssSaltlen::custom(0),
        ] {
            assert!(verify(&public, data, &sig_with(salt)));
        }
        // Ours has exactly a 32-byte salt.
        let ours = sign(&key, data).unwrap();
        let check = |salt: i32| {
            let mut v = Verifier::new(MessageDigest::sha256(), &public).unwrap();
            v.set_rsa_padding(Padding::PKCS1_PSS).unwrap();
            v.set_rsa_pss_saltlen(RsaPssSaltlen::custom(salt)).unwrap();
            v.update(data).unwrap();
            v.verify(&ours).unwrap_or(false)
        };
        assert!(check(32));
        assert!(!check(20));
        assert!(!verify(&public, b"other data", &ours));
        assert!(!verify(&public, data, b"\x30\x02garbage"));
    }

    #[test]
    fn modp_public_keys_are_accepted_der_or_raw_and_checked() {
        let mut e = OsEntropy;
        let der = gen_dh(KeyAgreement::DhModp2048_256, ModpEncoding::Der, &mut e).unwrap();
        assert_eq!(der.public[0], 0x02);
        let raw = gen_dh(KeyAgreement::DhModp2048_256, ModpEncoding::Raw, &mut e).unwrap();
        assert!(raw.public.len() <= 256);
        let p_der = peer_dh(KeyAgreement::DhModp2048_256, &der.public, "Request", "dh1").unwrap();
        let p_raw = peer_dh(KeyAgreement::DhModp2048_256, &raw.public, "Reply", "dh2").unwrap();
        assert_eq!(
            derive(&raw.key, &p_der).unwrap(),
            derive(&der.key, &p_raw).unwrap()
        );
        for bad in [
            vec![],
            vec![1],
            vec![0xff; 256],
            vec![0x02, 0x01, 0x01],
            vec![7; 300],
        ] {
            assert!(
                peer_dh(KeyAgreement::DhModp2048_256, &bad, "Request", "dh1").is_err(),
                "{bad:?}"
            );
        }
        // p - 1 (order 2) is refused.
        let params = Dh::get_2048_256().unwrap();
        let mut pm1 = params.prime_p().to_owned().unwrap();
        pm1.sub_word(1).unwrap();
        assert!(peer_dh(KeyAgreement::DhModp2048_256, &pm1.to_vec(), "Reply", "dh2").is_err());
        // A random element of the full group is (almost surely) outside the subgroup.
        let mut y = [0u8; 255];
        y[0] = 3;
        assert!(peer_dh(KeyAgreement::DhModp2048_256, &y, "Reply", "dh2").is_err());
    }

    #[test]
    fn pdata_guid_is_found_after_other_parameters() {
        let mut pl = vec![0x00, 0x15, 0x00, 0x03, 1, 2, 3, 0]; // PID_PROTOCOL_VERSION + pad
        pl.extend_from_slice(&[0x00, 0x50, 0x00, 0x10]);
        pl.extend_from_slice(&[7u8; 16]);
        pl.extend_from_slice(&[0x00, 0x01, 0x00, 0x00]);
        assert_eq!(pdata_guid(&pl), Some([7u8; 16]));
        assert_eq!(pdata_guid(&pl[..10]), None);
        assert_eq!(pdata_guid(&[0x00, 0x01, 0x00, 0x00]), None);
    }
}
