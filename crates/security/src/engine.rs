//! The builtin plugins as the RTPS engine calls them: [`BuiltinSecurity`] implements
//! [`ferrodds_rtps::security::ParticipantSecurity`] over [`crate::auth`] and
//! [`crate::access`] (step 1 of issue 15: authentication and access control of
//! participants).
//!
//! # Contract
//!
//! * **Loading** ([`SecurityFiles`]): the identity CA, certificate and private key, the
//!   permissions CA, governance and permissions, each a `file:` or `data:,` URI (the
//!   standard property names, long or Cyclone's short form, [`SecurityFiles::from_properties`]).
//!   [`BuiltinSecurity::load`] validates everything at the caller's `now`: the identity
//!   against its CA, the signatures of governance and permissions against the permissions CA,
//!   the local grant (subject, validity, join access control for the domain) and the
//!   governance's domain rule. Every error ([`EngineSecurityError`]) names the file (or
//!   `data:`) and the reason.
//! * **Engine interface**: GUID prefix = the identity's adjusted prefix; SPDP tokens are the
//!   IdentityToken and PermissionsToken (with `dds.perm_ca.sn` / `dds.perm_ca.algo`) in
//!   little-endian CDR; PARTICIPANT_SECURITY_INFO from the governance's domain rule;
//!   `allow_unauthenticated` is the rule's `allow_unauthenticated_participants`.
//! * **Handshake**: the remote's IdentityToken must be PKI-DH 1.x; the participant with the
//!   lower GUID sends the Request (from our stateless writer, to the remote participant);
//!   Reply and Final follow (`related_message_identity` = the message answered). A message
//!   whose `message_identity` equals the last one handled from that remote is a resend: the
//!   answer given then is given again (the Reply or the Final; nothing after a failure), so
//!   losses on the best-effort channel are repaired by the sender's resends (a message
//!   refused only because the pending-handshake table is full is not remembered: its resend
//!   is handled anew). Messages for
//!   another participant, and AuthRequests (whose `future_challenge` is noted), produce no
//!   answer. Handshake failures are reported as non-final (a forged message must not end a
//!   handshake; the engine's timeout does). On completion the remote's `c.perm` (trailing
//!   NUL removed) is verified against the permissions CA, its grant selected by the
//!   authenticated certificate subject, and checked at `now` (validity; the domain when the
//!   governance enables join access control): a refusal is final
//!   ([`SecurityFailureKind::AccessControl`]).
//! * **Key exchange and RTPS protection** (step 2, governance `rtps_protection_kind` not
//!   NONE): the participant key material is generated at construction from the caller's
//!   entropy — AES-GMAC for SIGN, AES-GCM for ENCRYPT (and their
//!   `*_WITH_ORIGIN_AUTHENTICATION` forms), 256-bit keys unless
//!   [`PROP_ENCRYPTION_ALGORITHM`] asks for 128, a random non-zero sender key id, session id
//!   and IV suffix. On completion of a handshake the KxKeys
//!   ([`crate::crypto::kx_key_material`] of the challenges and shared secret) protect the
//!   volatile-secure submessages both ways. The key-exchange offer is a
//!   `dds.sec.participant_crypto_tokens` message (from our volatile-secure writer to the
//!   remote participant and its volatile-secure reader, `related_message_identity` zero)
//!   with one `DDS:Crypto:AES_GCM_GMAC` CryptoToken whose binary property
//!   `dds.cryp.keymat` is our KeyMaterial CDR; an offer received is answered with the same
//!   message whose `related_message_identity` is the offer's (the ack); a message relating
//!   to one of ours acknowledges our tokens. The remote's key material replaces the one held
//!   only when it differs (so a resent offer keeps the anti-replay window).
//! * **Endpoints** ([`ParticipantSecurity::check_local_endpoint`],
//!   [`ParticipantSecurity::check_remote_endpoint`]): a local DataWriter or DataReader is
//!   checked against its topic rule: one asking for submessage or payload protection under
//!   `rtps_protection_kind` NONE is refused
//!   with a message naming the governance file, the topic and the kinds (not implemented
//!   yet: never sent with less protection); with write (read) access control the local
//!   permissions must allow it.
//! * **Submessage protection** (step 3, `metadata_protection_kind` SIGN or ENCRYPT): each
//!   such local endpoint gets its own key material when registered (GMAC or GCM, the
//!   participant's key length, a random non-zero key id); its crypto tokens (one
//!   `DDS:Crypto:AES_GCM_GMAC` token, no receiver-specific key) go to each matched remote
//!   endpoint as `dds.sec.datawriter_crypto_tokens` / `dds.sec.datareader_crypto_tokens`
//!   (source endpoint ours, destination endpoint and participant theirs). Tokens received
//!   from an authenticated participant (its source endpoint must be of that participant)
//!   are kept by sender key id with the endpoint's entity id (at most 4096 per participant;
//!   a resend with the same key keeps the anti-replay window); a SEC_PREFIX is decoded
//!   with the endpoint key its CryptoHeader names, else with the KxKeys.
//! * **Discovery protection**: the secure SEDP endpoints register as endpoints of
//!   `DCPSPublicationsSecure` / `DCPSSubscriptionsSecure`: with `discovery_protection_kind`
//!   not NONE each gets its own key material (GMAC or GCM, origin authentication as the kind
//!   says) sent as endpoint crypto tokens, as Cyclone DDS does. A governance whose
//!   `discovery_protection_kind` protects while `rtps_protection_kind` is NONE is refused
//!   ([`EngineSecurityError::NotImplemented`]). A topic rule's `enable_discovery_protection`
//!   selects the secure SEDP endpoints
//!   ([`ParticipantSecurity::discovery_protected`]); `enable_liveliness_protection` needs
//!   nothing (no liveliness messages are sent).
//! * **Origin authentication** (`rtps_protection_kind` or `metadata_protection_kind`
//!   `*_WITH_ORIGIN_AUTHENTICATION`): each remote participant (RTPS messages) or each matched
//!   remote endpoint (submessages) is handed its own copy of the key material with a
//!   receiver-specific key and key id (ids counted from 1, the copy kept so that resent
//!   tokens match). A protected message or submessage carries one receiver-specific MAC
//!   for each receiver of the participant its datagram goes to (its INFO_DST), or of every
//!   participant when it goes to several — at most [`MAX_ORIGIN_MACS`], whose room every
//!   datagram keeps; more is a protection failure. A received key material with a
//!   receiver-specific key id requires its MAC.
//! * **Payload protection** (`data_protection_kind` SIGN or ENCRYPT): a local writer gets
//!   a second key material for its payloads, sent as the second token of its datawriter
//!   crypto tokens (the first when its submessages are not protected); a signed payload is
//!   padded to a multiple of 4 first (the encapsulation options counting the padding), as
//!   CDR pads. A received payload is decoded with the key material its CryptoHeader names,
//!   which must be that writer's. A remote endpoint is matched only when its participant's validated permissions
//!   allow it under the same rule (an unauthenticated participant, when the governance
//!   admits one, matches only topics without access control or protection).
//! * **Time and randomness**: the engine's monotonic [`Timestamp`] is turned into Unix time
//!   with the [`WallClock`] given at construction; randomness comes from the caller's
//!   [`Entropy`] (OS randomness in the runtime, a seeded generator in simulations).

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrodds_cdr::{CdrReader, CdrWriter, Encoding, Endianness};
use ferrodds_rtps::security::{
    EndpointProtection, HandshakeOutput, LocalSecurityParams, ParticipantSecurity,
    RemoteSecurityParams, SecurityFailure, SecurityFailureKind, SubmessageKey,
    SEDP_PUB_SECURE_TOPIC, SEDP_SUB_SECURE_TOPIC,
};
use ferrodds_rtps::{EntityId, Guid, GuidPrefix, Timestamp};

use crate::access::ProtectionKind;
use crate::access::{
    AccessControl, AccessError, Governance, ParticipantSecurityAttributes, PermissionsCa,
    RemotePermissions, SubjectName,
};
use crate::auth::{
    parse_identity_token, read_uri, AuthError, AuthOptions, Authenticator, Entropy, HandshakeStep,
    IdentityConfig, LocalIdentity, AUTH_REQUEST_CLASS_ID,
};
use crate::crypto::{
    kx_key_material, KeyMaterial, ReceiverCrypto, ReceiverMacKey, SenderCrypto, TransformKind,
    MESSAGE_OVERHEAD, PAYLOAD_OVERHEAD, RECEIVER_MAC_LEN, SUBMESSAGE_OVERHEAD,
};
use crate::generic_message::{
    BinaryProperty, DataHolder, GenericMessageError, GuidBytes, MessageIdentity,
    ParticipantGenericMessage, Property, ENTITYID_P2P_PARTICIPANT_STATELESS_MESSAGE_WRITER,
    ENTITYID_P2P_PARTICIPANT_VOLATILE_MESSAGE_SECURE_READER,
    ENTITYID_P2P_PARTICIPANT_VOLATILE_MESSAGE_SECURE_WRITER, ENTITYID_PARTICIPANT,
    GMCLASSID_SECURITY_AUTH_HANDSHAKE, GMCLASSID_SECURITY_AUTH_REQUEST,
    GMCLASSID_SECURITY_DATAREADER_CRYPTO_TOKENS, GMCLASSID_SECURITY_DATAWRITER_CRYPTO_TOKENS,
    GMCLASSID_SECURITY_PARTICIPANT_CRYPTO_TOKENS, GUID_UNKNOWN,
};

/// Most endpoint key materials kept per remote participant.
const MAX_REMOTE_ENDPOINT_KEYS: usize = 4096;

/// Most receiver-specific MACs one protected message or submessage carries (origin
/// authentication): room for them is kept in every datagram. A message to more receivers
/// than this (several participants' endpoints in one datagram) cannot be protected.
pub const MAX_ORIGIN_MACS: usize = 8;

/// The receivers of one protected stream with origin authentication: for each remote
/// participant (RTPS messages) or endpoint (submessages), the key material handed to it
/// (its own receiver-specific key) and its MAC key, sorted by GUID so that one participant's
/// receivers are contiguous.
#[derive(Debug, Default)]
struct OriginMacs {
    guids: Vec<Guid>,
    tokens: Vec<KeyMaterial>,
    keys: Vec<ReceiverMacKey>,
}

impl OriginMacs {
    /// The key material for `remote` (made on first use with a new receiver-specific key id
    /// from `next_id`, and kept: a resent token carries the same key).
    fn token_for(
        &mut self,
        remote: Guid,
        base: &KeyMaterial,
        next_id: &mut u32,
        entropy: &mut (dyn Entropy + Send),
    ) -> Result<&KeyMaterial, SecurityFailure> {
        let i = match self.guids.binary_search(&remote) {
            Ok(i) => i,
            Err(i) => {
                *next_id = next_id.wrapping_add(1).max(1);
                let mut failed = None;
                let km = base
                    .with_receiver_specific_key(*next_id, |b| fill(entropy, &mut failed, b))
                    .map_err(|e| crypto_fail(format!("receiver-specific key: {e}")))?;
                if let Some(e) = failed {
                    return Err(crypto_fail(format!("receiver-specific key: {e}")));
                }
                let key = ReceiverMacKey::new(&km)
                    .map_err(|e| crypto_fail(format!("receiver-specific key: {e}")))?;
                self.guids.insert(i, remote);
                self.tokens.insert(i, km);
                self.keys.insert(i, key);
                i
            }
        };
        Ok(&self.tokens[i])
    }

    /// The MAC keys of `dest`'s receivers, or of all when `None`.
    fn receivers(&mut self, dest: Option<GuidPrefix>) -> &mut [ReceiverMacKey] {
        let Some(p) = dest else {
            return &mut self.keys;
        };
        let lo = self.guids.partition_point(|g| g.prefix < p);
        let hi = self.guids.partition_point(|g| g.prefix <= p);
        &mut self.keys[lo..hi]
    }

    /// Forgets the receivers matching `f`.
    fn forget(&mut self, f: impl Fn(&Guid) -> bool) {
        let mut i = 0;
        while i < self.guids.len() {
            if f(&self.guids[i]) {
                self.guids.remove(i);
                self.tokens.remove(i);
                self.keys.remove(i);
            } else {
                i += 1;
            }
        }
    }
}

/// The MAC keys of `dest`'s receivers (of all when `None`) in `origin` (none without origin
/// authentication), at most [`MAX_ORIGIN_MACS`]; `what` names the protected unit in the error.
fn origin_receivers<'a>(
    origin: Option<&'a mut OriginMacs>,
    dest: Option<GuidPrefix>,
    what: &str,
) -> Result<&'a mut [ReceiverMacKey], SecurityFailure> {
    let Some(o) = origin else {
        return Ok(&mut []);
    };
    let receivers = o.receivers(dest);
    if receivers.len() > MAX_ORIGIN_MACS {
        return Err(crypto_fail(format!(
            "{} receivers of one {what}: origin authentication carries at most {MAX_ORIGIN_MACS}",
            receivers.len()
        )));
    }
    Ok(receivers)
}

/// A `DDS:Crypto:AES_GCM_GMAC` CryptoToken carrying key material `km` (its CDR).
fn keymat_token(km: Vec<u8>) -> DataHolder {
    let mut token = DataHolder::new(CRYPTO_TOKEN_CLASS);
    token.binary_properties = vec![BinaryProperty::new(PROP_KEYMAT, km)];
    token
}

/// A local endpoint that protects its submessages: its sender, and its receivers when origin
/// authentication is on.
#[derive(Debug)]
struct LocalEndpoint {
    tx: SenderCrypto,
    origin: Option<OriginMacs>,
}

/// CryptoToken class of the builtin cryptographic plugin.
pub const CRYPTO_TOKEN_CLASS: &str = "DDS:Crypto:AES_GCM_GMAC";
/// Binary property of a CryptoToken holding the KeyMaterial CDR.
pub const PROP_KEYMAT: &str = "dds.cryp.keymat";

/// Property: permissions CA (`file:` / `data:,` URI).
pub const PROP_PERMISSIONS_CA: &str = "dds.sec.access.builtin.Access-Permissions.permissions_ca";
/// Property: signed governance document.
pub const PROP_GOVERNANCE: &str = "dds.sec.access.builtin.Access-Permissions.governance";
/// Property: signed permissions document.
pub const PROP_PERMISSIONS: &str = "dds.sec.access.builtin.Access-Permissions.permissions";
/// Cyclone's short form of [`PROP_PERMISSIONS_CA`].
pub const PROP_PERMISSIONS_CA_SHORT: &str = "dds.sec.access.permissions_ca";
/// Cyclone's short form of [`PROP_GOVERNANCE`].
pub const PROP_GOVERNANCE_SHORT: &str = "dds.sec.access.governance";
/// Cyclone's short form of [`PROP_PERMISSIONS`].
pub const PROP_PERMISSIONS_SHORT: &str = "dds.sec.access.permissions";

/// Errors creating the builtin plugins of a participant.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineSecurityError {
    /// The identity (or a configuration value) is unusable.
    #[error("authentication: {0}")]
    Auth(#[from] AuthError),
    /// A governance or permissions document or the permissions CA is unusable.
    #[error("access control: {0}")]
    Access(#[from] AccessError),
    /// The local participant may not be created.
    #[error("access control: {0}")]
    Denied(#[from] crate::access::AccessDenied),
    /// The participant key material could not be made.
    #[error("cryptography: {0}")]
    Crypto(String),
    /// A required access-control property is missing.
    #[error("access control configuration: property {0} is missing")]
    MissingConfig(&'static str),
    /// A configuration value is not valid (the message names it and the valid ones).
    #[error("security configuration: {0}")]
    BadValue(String),
    /// The governance asks for a protection FerroDDS does not implement (refused rather
    /// than weakened; the message names the file, rule and value).
    #[error("not implemented: {0}")]
    NotImplemented(String),
}

/// The six (seven with the password) configuration values of the builtin plugins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityFiles {
    /// Identity CA, certificate, private key (and password).
    pub identity: IdentityConfig,
    /// Permissions CA URI.
    pub permissions_ca: String,
    /// Signed governance URI.
    pub governance: String,
    /// Signed permissions URI.
    pub permissions: String,
    /// AES key length of the participant key material (128 or 256 bits;
    /// [`PROP_ENCRYPTION_ALGORITHM`], default 256).
    pub key_bits: u32,
}

/// Property (FerroDDS's): the AES key length of the participant key material,
/// `aes-128-gcm` or `aes-256-gcm` (the default; GMAC with the same key length for SIGN).
pub const PROP_ENCRYPTION_ALGORITHM: &str = "ferrodds.sec.crypto.encryption_algorithm";

/// The key length of an [`PROP_ENCRYPTION_ALGORITHM`] value.
pub fn key_bits_of(algorithm: &str) -> Option<u32> {
    match algorithm.to_ascii_lowercase().as_str() {
        "aes-128-gcm" | "aes128+gcm" | "aes128-gcm" => Some(128),
        "aes-256-gcm" | "aes256+gcm" | "aes256-gcm" => Some(256),
        _ => None,
    }
}

impl SecurityFiles {
    /// Reads the values from participant properties (long `dds.sec.auth.builtin.PKI-DH.*` /
    /// `dds.sec.access.builtin.Access-Permissions.*` names or Cyclone's short
    /// `dds.sec.auth.*` / `dds.sec.access.*` ones); a missing one is an error naming it.
    pub fn from_properties(props: &[(String, String)]) -> Result<Self, EngineSecurityError> {
        let as_props: Vec<Property> = props
            .iter()
            .map(|(n, v)| Property::new(n.clone(), v.clone()))
            .collect();
        let identity = IdentityConfig::from_properties(&as_props)?;
        let find = |long: &'static str, short: &'static str| {
            props
                .iter()
                .find(|(n, _)| n == long || n == short)
                .map(|(_, v)| v.clone())
                .ok_or(EngineSecurityError::MissingConfig(long))
        };
        Ok(SecurityFiles {
            identity,
            permissions_ca: find(PROP_PERMISSIONS_CA, PROP_PERMISSIONS_CA_SHORT)?,
            governance: find(PROP_GOVERNANCE, PROP_GOVERNANCE_SHORT)?,
            permissions: find(PROP_PERMISSIONS, PROP_PERMISSIONS_SHORT)?,
            key_bits: match props.iter().find(|(n, _)| n == PROP_ENCRYPTION_ALGORITHM) {
                None => 256,
                Some((_, v)) => key_bits_of(v).ok_or_else(|| {
                    EngineSecurityError::BadValue(format!(
                        "property {PROP_ENCRYPTION_ALGORITHM} is '{v}': valid values are aes-128-gcm and aes-256-gcm"
                    ))
                })?,
            },
        })
    }
}

/// Maps the engine's monotonic time to Unix time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallClock {
    /// Unix time (nanoseconds) at engine [`Timestamp`] 0.
    pub unix_ns_at_zero: i128,
}

impl WallClock {
    /// Unix seconds at `t`.
    pub fn unix_secs(&self, t: Timestamp) -> i64 {
        let ns = self.unix_ns_at_zero + i128::from(t.0);
        i64::try_from(ns.div_euclid(1_000_000_000)).unwrap_or(i64::MAX)
    }

    /// [`SystemTime`] at `t`.
    pub fn system_time(&self, t: Timestamp) -> SystemTime {
        let ns = self.unix_ns_at_zero + i128::from(t.0);
        let ns = u64::try_from(ns.max(0)).unwrap_or(u64::MAX);
        UNIX_EPOCH + Duration::from_nanos(ns)
    }
}

/// What we know of one remote participant.
#[derive(Debug, Default)]
struct Remote {
    /// The last message handled from it and our answer (`None`: it failed).
    last: Option<(MessageIdentity, Option<HandshakeOutput>)>,
    /// Its validated permissions, once authenticated.
    permissions: Option<RemotePermissions>,
    /// KxKeys: volatile-secure submessages to it.
    kx_tx: Option<SenderCrypto>,
    /// KxKeys: volatile-secure submessages from it.
    kx_rx: Option<ReceiverCrypto>,
    /// Its participant key material: RTPS messages from it.
    msg_rx: Option<ReceiverCrypto>,
    /// It acknowledged our crypto tokens.
    acked: bool,
    /// Key material of its endpoints (their submessages), by sender key id: the endpoint's
    /// entity id and the receiver.
    endpoints: HashMap<u32, (EntityId, ReceiverCrypto)>,
}

/// The builtin PKI-DH authentication and Permissions access control of one participant, as
/// the engine calls them (see the module docs).
pub struct BuiltinSecurity {
    identity: Option<LocalIdentity>,
    auth: Option<Authenticator>,
    access: AccessControl,
    attributes: ParticipantSecurityAttributes,
    domain_id: u32,
    options: AuthOptions,
    entropy: Box<dyn Entropy + Send>,
    clock: WallClock,
    guid: GuidBytes,
    seq: i64,
    remotes: HashMap<GuidPrefix, Remote>,
    /// The last message handled failed for lack of room (not remembered as answered).
    transient: bool,
    /// Our participant key material and its sender (RTPS protection on).
    msg_tx: Option<SenderCrypto>,
    /// Last sequence number of the volatile-secure writer's messages.
    volatile_seq: i64,
    /// AES key length of the key material made here.
    key_bits: u32,
    /// Key material of our endpoints that protect their submessages.
    local_endpoints: HashMap<Guid, LocalEndpoint>,
    /// Our participant key material handed to each remote participant (RTPS protection with
    /// origin authentication).
    msg_origin: Option<OriginMacs>,
    /// The last receiver-specific key id handed out.
    receiver_key_id: u32,
    /// Key material of our writers that protect their payloads.
    local_payloads: HashMap<Guid, SenderCrypto>,
    /// Decoders of our own writers' protected payloads (a capture's decrypted view), made
    /// on first use.
    local_payload_views: HashMap<Guid, ReceiverCrypto>,
    /// Scratch buffer: a payload padded for signing.
    pad_buf: Vec<u8>,
}

impl std::fmt::Debug for BuiltinSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinSecurity")
            .field("guid", &self.guid)
            .field("domain_id", &self.domain_id)
            .field("remotes", &self.remotes.len())
            .finish_non_exhaustive()
    }
}

fn read_access(uri: &str, what: &'static str) -> Result<(Vec<u8>, String), EngineSecurityError> {
    let (bytes, label) = read_uri(uri, what)?;
    // Cyclone passes documents with a trailing NUL; OpenSSL's S/MIME reader does not want it.
    let bytes = match bytes.strip_suffix(&[0]) {
        Some(b) => b.to_vec(),
        None => bytes,
    };
    Ok((bytes, label))
}

impl BuiltinSecurity {
    /// Loads the identity (its GUID adjusted from `candidate_prefix`) and the access-control
    /// documents and checks that the participant may join `domain_id` at the clock's
    /// `now` (see the module docs).
    pub fn load(
        files: &SecurityFiles,
        candidate_prefix: GuidPrefix,
        domain_id: u32,
        clock: WallClock,
        now: Timestamp,
        entropy: Box<dyn Entropy + Send>,
    ) -> Result<Self, EngineSecurityError> {
        let mut candidate = [0u8; 16];
        candidate[..12].copy_from_slice(&candidate_prefix.0);
        candidate[12..].copy_from_slice(&ENTITYID_PARTICIPANT);
        let identity = LocalIdentity::load(&files.identity, &candidate, clock.unix_secs(now))?;
        let (ca, ca_label) = read_access(&files.permissions_ca, "permissions_ca")?;
        let ca = PermissionsCa::from_pem(&ca, &ca_label)?;
        let (gov, gov_label) = read_access(&files.governance, "governance")?;
        let gov = Governance::from_signed(&gov, &gov_label, &ca)?;
        let (perm, perm_label) = read_access(&files.permissions, "permissions")?;
        let subject = SubjectName::from_x509(identity.certificate().subject_name());
        let access = AccessControl::new(ca, gov, &perm, &perm_label, &subject)?;
        Self::with_key_bits(
            identity,
            access,
            domain_id,
            clock,
            now,
            entropy,
            files.key_bits,
        )
    }

    /// The plugins of a participant with `identity` and `access` in `domain_id`: checks
    /// that the participant may join the domain at the clock's `now`.
    pub fn new(
        identity: LocalIdentity,
        access: AccessControl,
        domain_id: u32,
        clock: WallClock,
        now: Timestamp,
        entropy: Box<dyn Entropy + Send>,
    ) -> Result<Self, EngineSecurityError> {
        Self::with_key_bits(identity, access, domain_id, clock, now, entropy, 256)
    }

    /// Like [`BuiltinSecurity::new`] with AES keys of `key_bits` (128 or 256) in the
    /// participant key material.
    pub fn with_key_bits(
        identity: LocalIdentity,
        access: AccessControl,
        domain_id: u32,
        clock: WallClock,
        now: Timestamp,
        entropy: Box<dyn Entropy + Send>,
        key_bits: u32,
    ) -> Result<Self, EngineSecurityError> {
        let attributes = access.participant_security_attributes(domain_id)?;
        access.check_create_participant(domain_id, clock.system_time(now))?;
        if attributes.discovery_protection_kind.is_protected()
            && !attributes.rtps_protection_kind.is_protected()
        {
            return Err(EngineSecurityError::NotImplemented(format!(
                "{}: discovery_protection_kind {} of the rule for domain {domain_id} with rtps_protection_kind NONE: FerroDDS exchanges the secure discovery endpoints' keys only with RTPS message protection on; it refuses the participant rather than announce its endpoints with less protection",
                access.governance().source,
                attributes.discovery_protection_kind.as_str(),
            )));
        }
        let mut entropy = entropy;
        let msg_tx = match attributes.rtps_protection_kind {
            ProtectionKind::None => None,
            k => {
                let encrypt = matches!(
                    k,
                    ProtectionKind::Encrypt | ProtectionKind::EncryptWithOriginAuthentication
                );
                Some(new_sender(
                    TransformKind::for_protection(encrypt, key_bits),
                    &mut *entropy,
                )?)
            }
        };
        Ok(BuiltinSecurity {
            msg_tx,
            volatile_seq: 0,
            key_bits,
            local_endpoints: HashMap::new(),
            msg_origin: attributes
                .rtps_protection_kind
                .is_origin_authenticated()
                .then(OriginMacs::default),
            receiver_key_id: 0,
            local_payloads: HashMap::new(),
            local_payload_views: HashMap::new(),
            pad_buf: Vec::new(),
            guid: identity.guid(),
            identity: Some(identity),
            auth: None,
            access,
            attributes,
            domain_id,
            options: AuthOptions::default(),
            entropy,
            clock,
            seq: 0,
            remotes: HashMap::new(),
            transient: false,
        })
    }

    /// Handshake options (before the participant is created).
    pub fn with_options(mut self, options: AuthOptions) -> Self {
        self.options = options;
        self
    }

    /// Our adjusted participant GUID.
    pub fn guid(&self) -> GuidBytes {
        self.guid
    }

    /// The validated permissions of an authenticated remote participant.
    pub fn remote_permissions(&self, remote: GuidPrefix) -> Option<&RemotePermissions> {
        self.remotes.get(&remote)?.permissions.as_ref()
    }

    fn stateless_writer(&self) -> GuidBytes {
        let mut g = self.guid;
        g[12..].copy_from_slice(&ENTITYID_P2P_PARTICIPANT_STATELESS_MESSAGE_WRITER);
        g
    }

    /// A handshake message to `remote` answering `related`, serialized (CDR_LE).
    fn message(
        &mut self,
        remote: &GuidBytes,
        related: Option<MessageIdentity>,
        token: DataHolder,
    ) -> Result<Vec<u8>, SecurityFailure> {
        self.seq += 1;
        let m = ParticipantGenericMessage::auth_handshake(
            self.stateless_writer(),
            self.seq,
            *remote,
            related,
            token,
        );
        let mut out = Vec::new();
        m.encode_payload(Endianness::Little, &mut out)
            .map_err(|e| fail(false, format!("encoding a handshake message: {e}")))?;
        Ok(out)
    }

    /// Verifies the remote's permissions after a completed handshake.
    fn permit(
        &mut self,
        remote: GuidPrefix,
        outcome: &crate::auth::HandshakeOutcome,
        now: Timestamp,
    ) -> Result<(), SecurityFailure> {
        let perm = outcome
            .peer_permissions
            .strip_suffix(&[0])
            .unwrap_or(&outcome.peer_permissions);
        let subject = SubjectName::from_x509(outcome.peer_certificate.subject_name());
        let label = format!("permissions of {}", outcome.peer_subject_name);
        let denied = |reason: String| SecurityFailure {
            kind: SecurityFailureKind::AccessControl,
            fatal: true,
            reason,
        };
        let rp = self
            .access
            .validate_remote_permissions(perm, &label, &subject)
            .map_err(|e| denied(e.to_string()))?;
        self.access
            .check_remote_participant(self.domain_id, &rp, self.clock.system_time(now))
            .map_err(|e| denied(e.to_string()))?;
        let kx = if self.msg_tx.is_some() {
            let km = kx_key_material(
                &outcome.challenge1,
                &outcome.challenge2,
                &outcome.shared_secret,
            )
            .map_err(|e| crypto_fail(format!("KxKeys: {e}")))?;
            let rx =
                ReceiverCrypto::new(km.clone()).map_err(|e| crypto_fail(format!("KxKeys: {e}")))?;
            let tx = kx_sender(km, &mut *self.entropy).map_err(crypto_fail)?;
            Some((tx, rx))
        } else {
            None
        };
        let r = self.remotes.entry(remote).or_default();
        r.permissions = Some(rp);
        if let Some((tx, rx)) = kx {
            r.kx_tx = Some(tx);
            r.kx_rx = Some(rx);
        }
        Ok(())
    }

    fn volatile_writer(&self) -> GuidBytes {
        let mut g = self.guid;
        g[12..].copy_from_slice(&ENTITYID_P2P_PARTICIPANT_VOLATILE_MESSAGE_SECURE_WRITER);
        g
    }

    /// Our crypto-tokens message to `remote`, answering `related` (an offer's identity) or
    /// not (an offer).
    fn tokens_message(
        &mut self,
        remote: GuidPrefix,
        related: MessageIdentity,
    ) -> Result<Vec<u8>, SecurityFailure> {
        let base = self
            .msg_tx
            .as_ref()
            .ok_or_else(|| crypto_fail("RTPS protection is off".into()))?
            .key_material();
        let km = match self.msg_origin.as_mut() {
            // Origin authentication: this participant's own receiver-specific key.
            Some(o) => o
                .token_for(
                    Guid::new(remote, EntityId([0, 0, 1, 0xc1])),
                    base,
                    &mut self.receiver_key_id,
                    &mut *self.entropy,
                )?
                .to_bytes(),
            None => base.to_bytes(),
        };
        let dest = participant_guid(remote);
        let mut dest_reader = dest;
        dest_reader[12..].copy_from_slice(&ENTITYID_P2P_PARTICIPANT_VOLATILE_MESSAGE_SECURE_READER);
        self.volatile_message(
            related,
            dest,
            dest_reader,
            GUID_UNKNOWN,
            GMCLASSID_SECURITY_PARTICIPANT_CRYPTO_TOKENS,
            vec![keymat_token(km)],
        )
    }

    /// A message of our volatile-secure writer (the next sequence number), serialized.
    fn volatile_message(
        &mut self,
        related: MessageIdentity,
        destination_participant: GuidBytes,
        destination_endpoint: GuidBytes,
        source_endpoint: GuidBytes,
        class: &str,
        tokens: Vec<DataHolder>,
    ) -> Result<Vec<u8>, SecurityFailure> {
        self.volatile_seq += 1;
        let m = ParticipantGenericMessage {
            message_identity: MessageIdentity {
                source_guid: self.volatile_writer(),
                sequence_number: self.volatile_seq,
            },
            related_message_identity: related,
            destination_participant_guid: destination_participant,
            destination_endpoint_guid: destination_endpoint,
            source_endpoint_guid: source_endpoint,
            message_class_id: class.into(),
            message_data: tokens,
        };
        let mut out = Vec::new();
        m.encode_payload(Endianness::Little, &mut out)
            .map_err(|e| crypto_fail(format!("encoding crypto tokens: {e}")))?;
        Ok(out)
    }

    /// The crypto tokens of our endpoint `local` (its key material) for the remote endpoint
    /// `remote`, as a volatile-secure message.
    fn endpoint_tokens_message(
        &mut self,
        local: Guid,
        remote: Guid,
    ) -> Result<Vec<u8>, SecurityFailure> {
        // The submessage key material first, then the payload's (the order Cyclone DDS
        // expects: it finds SEC_PREFIX senders by the first token's key id).
        let mut kms = Vec::new();
        if let Some(e) = self.local_endpoints.get_mut(&local) {
            kms.push(match e.origin.as_mut() {
                // Origin authentication: the remote endpoint's own receiver-specific key.
                Some(o) => o
                    .token_for(
                        remote,
                        e.tx.key_material(),
                        &mut self.receiver_key_id,
                        &mut *self.entropy,
                    )?
                    .to_bytes(),
                None => e.tx.key_material().to_bytes(),
            });
        }
        if let Some(tx) = self.local_payloads.get(&local) {
            kms.push(tx.key_material().to_bytes());
        }
        if kms.is_empty() {
            return Err(crypto_fail("endpoint without key material".into()));
        }
        let class = if local.entity_id.is_writer() {
            GMCLASSID_SECURITY_DATAWRITER_CRYPTO_TOKENS
        } else {
            GMCLASSID_SECURITY_DATAREADER_CRYPTO_TOKENS
        };
        self.volatile_message(
            MessageIdentity::default(),
            participant_guid(remote.prefix),
            remote.to_bytes(),
            local.to_bytes(),
            class,
            kms.into_iter().map(keymat_token).collect(),
        )
    }

    /// Endpoint crypto tokens from `remote`: keeps the key material of its endpoint.
    fn on_endpoint_tokens(
        &mut self,
        remote: GuidPrefix,
        msg: &ParticipantGenericMessage,
    ) -> Result<(), SecurityFailure> {
        let source = &msg.source_endpoint_guid;
        if source[..12] != remote.0 {
            return Err(crypto_fail(format!(
                "{}: the source endpoint is not of the sending participant",
                msg.message_class_id
            )));
        }
        let eid = EntityId([source[12], source[13], source[14], source[15]]);
        let r = self
            .remotes
            .get_mut(&remote)
            .filter(|r| r.kx_rx.is_some())
            .ok_or_else(|| {
                crypto_fail("crypto tokens from an unauthenticated participant".into())
            })?;
        for token in msg
            .message_data
            .iter()
            .filter(|t| t.class_id == CRYPTO_TOKEN_CLASS)
        {
            let bytes = token.binary_property(PROP_KEYMAT).ok_or_else(|| {
                crypto_fail(format!("CryptoToken without the {PROP_KEYMAT} property"))
            })?;
            let km = KeyMaterial::decode(bytes)
                .map_err(|e| crypto_fail(format!("{PROP_KEYMAT}: {e}")))?;
            if !km.transformation_kind.protects() {
                continue;
            }
            let id = km.sender_key_id;
            if r.endpoints
                .get(&id)
                .is_some_and(|(e, rx)| *e == eid && *rx.key_material() == km)
            {
                // A resend: the anti-replay window stays.
                continue;
            }
            if r.endpoints.len() >= MAX_REMOTE_ENDPOINT_KEYS && !r.endpoints.contains_key(&id) {
                return Err(crypto_fail(format!(
                    "more than {MAX_REMOTE_ENDPOINT_KEYS} endpoint keys from one participant"
                )));
            }
            let rx =
                ReceiverCrypto::new(km).map_err(|e| crypto_fail(format!("{PROP_KEYMAT}: {e}")))?;
            r.endpoints.insert(id, (eid, rx));
        }
        Ok(())
    }

    fn handle(
        &mut self,
        remote: GuidPrefix,
        msg: &ParticipantGenericMessage,
        now: Timestamp,
    ) -> Result<HandshakeOutput, SecurityFailure> {
        let remote_guid = participant_guid(remote);
        let now_unix = self.clock.unix_secs(now);
        let auth = self
            .auth
            .as_mut()
            .ok_or_else(|| fail(false, "security plugin not initialised".into()))?;
        let token = msg
            .message_data
            .first()
            .ok_or_else(|| fail(false, "handshake message without a token".into()))?;
        let step = match auth.process(remote_guid, token, now_unix, &mut *self.entropy) {
            Ok(step) => step,
            Err(e @ AuthError::TooManyPending { .. }) => {
                // Transient: the sender's resend is handled again (not answered from the
                // cache).
                self.transient = true;
                return Err(fail(false, e.to_string()));
            }
            Err(e) => return Err(fail(false, e.to_string())),
        };
        let related = Some(msg.message_identity);
        match step {
            HandshakeStep::Reply(reply) => {
                let payload = self.message(&remote_guid, related, reply)?;
                Ok(HandshakeOutput::Send {
                    payload,
                    resend: true,
                })
            }
            HandshakeStep::Final { message, outcome } => {
                let payload = self.message(&remote_guid, related, message)?;
                self.permit(remote, &outcome, now)?;
                Ok(HandshakeOutput::Authenticated {
                    payload: Some(payload),
                })
            }
            HandshakeStep::Complete(outcome) => {
                self.permit(remote, &outcome, now)?;
                Ok(HandshakeOutput::Authenticated { payload: None })
            }
        }
    }
}

/// Random bytes from `entropy`, as a crypto random source (errors noted).
fn fill(entropy: &mut (dyn Entropy + Send), failed: &mut Option<AuthError>, b: &mut [u8]) {
    if let Err(e) = entropy.fill(b) {
        *failed = Some(e);
    }
}

fn random_u32(entropy: &mut (dyn Entropy + Send)) -> Result<u32, AuthError> {
    let mut b = [0u8; 4];
    entropy.fill(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

/// A sender over new key material of `kind` (random key id, session id and IV suffix).
fn new_sender(
    kind: TransformKind,
    entropy: &mut (dyn Entropy + Send),
) -> Result<SenderCrypto, EngineSecurityError> {
    let key_id = random_u32(entropy)?.max(1);
    let mut failed = None;
    let km = KeyMaterial::generate(kind, key_id, |b| fill(entropy, &mut failed, b));
    if let Some(e) = failed {
        return Err(e.into());
    }
    let km =
        km.map_err(|e| EngineSecurityError::Crypto(format!("participant key material: {e}")))?;
    kx_sender(km, entropy).map_err(EngineSecurityError::Crypto)
}

/// A sender over `km` starting at a random session id and IV suffix.
fn kx_sender(km: KeyMaterial, entropy: &mut (dyn Entropy + Send)) -> Result<SenderCrypto, String> {
    let session = random_u32(entropy).map_err(|e| e.to_string())?;
    let mut iv = [0u8; 8];
    entropy.fill(&mut iv).map_err(|e| e.to_string())?;
    // Keep room below the IV suffix's end.
    let iv = u64::from_be_bytes(iv) >> 1;
    SenderCrypto::new(km, session, iv).map_err(|e| format!("sender: {e}"))
}

fn crypto_fail(reason: String) -> SecurityFailure {
    SecurityFailure {
        kind: SecurityFailureKind::Cryptography,
        fatal: false,
        reason,
    }
}

fn fail(fatal: bool, reason: String) -> SecurityFailure {
    SecurityFailure {
        kind: SecurityFailureKind::Authentication,
        fatal,
        reason,
    }
}

fn participant_guid(prefix: GuidPrefix) -> GuidBytes {
    let mut g = [0u8; 16];
    g[..12].copy_from_slice(&prefix.0);
    g[12..].copy_from_slice(&ENTITYID_PARTICIPANT);
    g
}

/// The CDR (little endian) of a token, as a parameter value.
fn token_bytes(t: &DataHolder) -> Result<Vec<u8>, GenericMessageError> {
    let mut out = Vec::new();
    t.encode(&mut CdrWriter::new(&mut out, Encoding::XCDR1_LE))?;
    Ok(out)
}

impl ParticipantSecurity for BuiltinSecurity {
    fn guid_prefix(&self) -> GuidPrefix {
        let mut p = [0u8; 12];
        p.copy_from_slice(&self.guid[..12]);
        GuidPrefix(p)
    }

    fn check_local_endpoint(
        &self,
        topic: &str,
        partitions: &[&str],
        writer: bool,
        now: Timestamp,
    ) -> Result<(), SecurityFailure> {
        let denied = |reason: String| SecurityFailure {
            kind: SecurityFailureKind::AccessControl,
            fatal: true,
            reason,
        };
        let a = self
            .access
            .endpoint_security_attributes(self.domain_id, topic)
            .map_err(|e| denied(e.to_string()))?;
        let file = &self.access.governance().source;
        // (enable_liveliness_protection: FerroDDS sends no ParticipantMessage liveliness,
        // so nothing goes unprotected; the secure SEDP endpoints carry discovery-protected
        // topics.)
        let unsupported = [
            (
                a.metadata_protection_kind.is_protected() && self.msg_tx.is_none(),
                "metadata_protection_kind (submessage protection) while rtps_protection_kind is NONE (FerroDDS protects submessages only inside protected RTPS messages)",
            ),
            (
                a.is_payload_protected() && self.msg_tx.is_none(),
                "data_protection_kind (payload protection) while rtps_protection_kind is NONE (FerroDDS exchanges endpoint keys only with RTPS message protection on)",
            ),
        ];
        if let Some((_, what)) = unsupported.iter().find(|(on, _)| *on) {
            return Err(SecurityFailure {
                kind: SecurityFailureKind::Cryptography,
                fatal: true,
                reason: format!(
                    "{file}: the topic rule for '{topic}' in domain {} asks for {what} (metadata {}, data {}), which FerroDDS does not implement yet; the {} is refused rather than sent with less protection",
                    self.domain_id,
                    a.metadata_protection_kind.as_str(),
                    a.data_protection_kind.as_str(),
                    if writer { "DataWriter" } else { "DataReader" },
                ),
            });
        }
        let at = self.clock.system_time(now);
        let r = if writer {
            self.access
                .check_create_datawriter(self.domain_id, topic, partitions, at)
        } else {
            self.access
                .check_create_datareader(self.domain_id, topic, partitions, at)
        };
        r.map_err(|e| denied(e.to_string()))
    }

    fn check_remote_endpoint(
        &self,
        remote: GuidPrefix,
        topic: &str,
        partitions: &[&str],
        writer: bool,
        now: Timestamp,
    ) -> Result<(), SecurityFailure> {
        let denied = |reason: String| SecurityFailure {
            kind: SecurityFailureKind::AccessControl,
            fatal: false,
            reason,
        };
        let a = self
            .access
            .endpoint_security_attributes(self.domain_id, topic)
            .map_err(|e| denied(e.to_string()))?;
        let controlled = if writer {
            a.is_write_protected
        } else {
            a.is_read_protected
        };
        let protected = controlled
            || a.is_discovery_protected
            || a.is_liveliness_protected
            || a.metadata_protection_kind.is_protected()
            || a.is_payload_protected();
        let Some(perms) = self
            .remotes
            .get(&remote)
            .and_then(|r| r.permissions.as_ref())
        else {
            // An unauthenticated participant (allowed by the governance) matches only
            // topics without access control or protection.
            return if protected {
                Err(denied(format!(
                    "participant {remote:?} is not authenticated and topic '{topic}' is protected"
                )))
            } else {
                Ok(())
            };
        };
        let at = self.clock.system_time(now);
        let r = if writer {
            self.access
                .check_remote_datawriter(self.domain_id, perms, topic, partitions, at)
        } else {
            self.access
                .check_remote_datareader(self.domain_id, perms, topic, partitions, at)
        };
        r.map_err(|e| denied(e.to_string()))
    }

    fn init(&mut self, pdata: Vec<u8>) -> Result<LocalSecurityParams, SecurityFailure> {
        let identity = self
            .identity
            .take()
            .ok_or_else(|| fail(true, "security plugin initialised twice".into()))?;
        let identity_token = token_bytes(&identity.identity_token())
            .map_err(|e| fail(true, format!("IdentityToken: {e}")))?;
        let pt = self.access.permissions_token();
        let mut perm_token = DataHolder::new(pt.class_id);
        perm_token.properties = pt
            .properties
            .into_iter()
            .map(|(n, v)| Property::new(n, v))
            .collect();
        let permissions_token =
            token_bytes(&perm_token).map_err(|e| fail(true, format!("PermissionsToken: {e}")))?;
        // c.perm: the signed document with a trailing NUL, as Cyclone sends it.
        let mut perm = self
            .access
            .permissions_credential()
            .properties
            .into_iter()
            .next()
            .map(|(_, v)| v.into_bytes())
            .unwrap_or_default();
        perm.push(0);
        self.auth = Some(Authenticator::new(identity, perm, pdata, self.options));
        let info = self.attributes.security_info();
        Ok(LocalSecurityParams {
            identity_token,
            permissions_token,
            security_info: (info.attributes, info.plugin_attributes),
        })
    }

    fn allow_unauthenticated(&self) -> bool {
        self.attributes.allow_unauthenticated_participants
    }

    fn max_pending_handshakes(&self) -> usize {
        self.options.max_pending
    }

    fn is_initiator(&self, remote: GuidPrefix) -> bool {
        self.guid < participant_guid(remote)
    }

    fn begin(
        &mut self,
        remote: GuidPrefix,
        params: &RemoteSecurityParams,
        now: Timestamp,
    ) -> Result<HandshakeOutput, SecurityFailure> {
        let enc = if params.big_endian {
            Encoding::XCDR1_BE
        } else {
            Encoding::XCDR1_LE
        };
        let bytes = params.identity_token.as_deref().unwrap_or(&[]);
        let token = DataHolder::decode(&mut CdrReader::new(bytes, enc))
            .map_err(|e| fail(true, format!("IdentityToken: {e}")))?;
        parse_identity_token(&token).map_err(|e| fail(true, e.to_string()))?;
        self.remotes.insert(remote, Remote::default());
        let remote_guid = participant_guid(remote);
        let now_unix = self.clock.unix_secs(now);
        let auth = self
            .auth
            .as_mut()
            .ok_or_else(|| fail(true, "security plugin not initialised".into()))?;
        if !auth.is_initiator(&remote_guid) {
            return Ok(HandshakeOutput::Wait);
        }
        let request = auth
            .begin_handshake(remote_guid, now_unix, &mut *self.entropy)
            .map_err(|e| fail(true, e.to_string()))?;
        let payload = self.message(&remote_guid, None, request)?;
        Ok(HandshakeOutput::Send {
            payload,
            resend: true,
        })
    }

    fn on_message(
        &mut self,
        remote: GuidPrefix,
        payload: &[u8],
        now: Timestamp,
    ) -> Result<HandshakeOutput, SecurityFailure> {
        let msg = ParticipantGenericMessage::decode_payload(payload)
            .map_err(|e| fail(false, format!("stateless message: {e}")))?;
        if msg.destination_participant_guid != self.guid
            && msg.destination_participant_guid != GUID_UNKNOWN
        {
            return Ok(HandshakeOutput::Wait);
        }
        if msg.message_class_id == GMCLASSID_SECURITY_AUTH_REQUEST {
            let now_unix = self.clock.unix_secs(now);
            if let (Some(auth), Some(t)) = (self.auth.as_mut(), msg.message_data.first()) {
                if t.class_id.starts_with(AUTH_REQUEST_CLASS_ID) {
                    auth.note_auth_request(participant_guid(remote), t, now_unix)
                        .map_err(|e| fail(false, e.to_string()))?;
                }
            }
            return Ok(HandshakeOutput::Wait);
        }
        if msg.message_class_id != GMCLASSID_SECURITY_AUTH_HANDSHAKE {
            return Ok(HandshakeOutput::Wait);
        }
        if let Some((id, answer)) = self.remotes.get(&remote).and_then(|r| r.last.as_ref()) {
            if *id == msg.message_identity {
                // A resend: our answer was lost (or theirs crossed ours).
                return Ok(answer.clone().unwrap_or(HandshakeOutput::Wait));
            }
        }
        self.transient = false;
        let result = self.handle(remote, &msg, now);
        if !self.transient {
            let r = self.remotes.entry(remote).or_default();
            r.last = Some((msg.message_identity, result.as_ref().ok().cloned()));
        }
        result
    }

    fn protects_messages(&self) -> bool {
        self.msg_tx.is_some()
    }

    fn message_overhead(&self) -> usize {
        match (&self.msg_tx, &self.msg_origin) {
            (None, _) => 0,
            (Some(_), None) => MESSAGE_OVERHEAD,
            (Some(_), Some(_)) => MESSAGE_OVERHEAD + MAX_ORIGIN_MACS * RECEIVER_MAC_LEN,
        }
    }

    fn key_exchange_offer(&mut self, remote: GuidPrefix) -> Option<Vec<u8>> {
        self.remotes.get(&remote)?.kx_tx.as_ref()?;
        self.tokens_message(remote, MessageIdentity::default()).ok()
    }

    fn key_exchange_acked(&self, remote: GuidPrefix) -> bool {
        self.remotes.get(&remote).is_none_or(|r| r.acked)
    }

    fn on_volatile_message(
        &mut self,
        remote: GuidPrefix,
        payload: &[u8],
    ) -> Result<Option<Vec<u8>>, SecurityFailure> {
        let msg = ParticipantGenericMessage::decode_payload(payload)
            .map_err(|e| crypto_fail(format!("volatile-secure message: {e}")))?;
        if msg.destination_participant_guid != self.guid {
            return Ok(None);
        }
        if msg.message_class_id == GMCLASSID_SECURITY_DATAWRITER_CRYPTO_TOKENS
            || msg.message_class_id == GMCLASSID_SECURITY_DATAREADER_CRYPTO_TOKENS
        {
            self.on_endpoint_tokens(remote, &msg)?;
            return Ok(None);
        }
        if msg.message_class_id != GMCLASSID_SECURITY_PARTICIPANT_CRYPTO_TOKENS {
            return Ok(None);
        }
        let token = msg
            .message_data
            .iter()
            .find(|t| t.class_id == CRYPTO_TOKEN_CLASS)
            .ok_or_else(|| {
                crypto_fail(format!(
                    "participant crypto tokens without a {CRYPTO_TOKEN_CLASS} token"
                ))
            })?;
        let bytes = token.binary_property(PROP_KEYMAT).ok_or_else(|| {
            crypto_fail(format!("CryptoToken without the {PROP_KEYMAT} property"))
        })?;
        let km =
            KeyMaterial::decode(bytes).map_err(|e| crypto_fail(format!("{PROP_KEYMAT}: {e}")))?;
        let ours = self.volatile_writer();
        let r = self
            .remotes
            .get_mut(&remote)
            .filter(|r| r.kx_rx.is_some())
            .ok_or_else(|| {
                crypto_fail("crypto tokens from an unauthenticated participant".into())
            })?;
        if r.msg_rx.as_ref().is_none_or(|rx| *rx.key_material() != km) {
            r.msg_rx = Some(
                ReceiverCrypto::new(km).map_err(|e| crypto_fail(format!("{PROP_KEYMAT}: {e}")))?,
            );
        }
        if msg.related_message_identity.source_guid == ours {
            r.acked = true;
        }
        if msg.related_message_identity == MessageIdentity::default() {
            // An offer: acknowledge it (with our tokens).
            return self.tokens_message(remote, msg.message_identity).map(Some);
        }
        Ok(None)
    }

    fn encode_volatile(
        &mut self,
        remote: GuidPrefix,
        plain: &[u8],
        out: &mut [u8],
    ) -> Result<usize, SecurityFailure> {
        let tx = self
            .remotes
            .get_mut(&remote)
            .and_then(|r| r.kx_tx.as_mut())
            .ok_or_else(|| crypto_fail("no KxKeys for this participant".into()))?;
        tx.encode_submessage(plain, &mut [], out)
            .map_err(|e| crypto_fail(e.to_string()))
    }

    fn decode_submessage(
        &mut self,
        remote: GuidPrefix,
        encoded: &[u8],
        out: &mut [u8],
    ) -> Result<(usize, usize, SubmessageKey), SecurityFailure> {
        let r = self
            .remotes
            .get_mut(&remote)
            .ok_or_else(|| crypto_fail("no key material of this participant".into()))?;
        // The CryptoHeader's transformation_key_id (after the SEC_PREFIX header and the
        // transformation kind) names the key material.
        let key_id = encoded
            .get(8..12)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        if let Some((eid, rx)) = key_id.and_then(|id| r.endpoints.get_mut(&id)) {
            let d = rx
                .decode_submessage(encoded, out)
                .map_err(|e| crypto_fail(e.to_string()))?;
            return Ok((d.consumed, d.len, SubmessageKey::Endpoint(*eid)));
        }
        let rx = r
            .kx_rx
            .as_mut()
            .ok_or_else(|| crypto_fail("no KxKeys for this participant".into()))?;
        let d = rx
            .decode_submessage(encoded, out)
            .map_err(|e| crypto_fail(e.to_string()))?;
        Ok((d.consumed, d.len, SubmessageKey::Volatile))
    }

    fn register_local_endpoint(
        &mut self,
        guid: Guid,
        topic: &str,
        writer: bool,
    ) -> Result<EndpointProtection, SecurityFailure> {
        let mut p = EndpointProtection::default();
        // The secure SEDP endpoints' submessages are protected as the domain rule's
        // discovery_protection_kind says; a user endpoint's as its topic rule's
        // metadata_protection_kind says. Each gets its own key material.
        let a = if topic == SEDP_PUB_SECURE_TOPIC || topic == SEDP_SUB_SECURE_TOPIC {
            None
        } else {
            Some(
                self.access
                    .endpoint_security_attributes(self.domain_id, topic)
                    .map_err(|e| crypto_fail(e.to_string()))?,
            )
        };
        let kind = a
            .as_ref()
            .map_or(self.attributes.discovery_protection_kind, |a| {
                a.metadata_protection_kind
            });
        if kind.is_protected() {
            let tx = new_sender(
                TransformKind::for_protection(kind.is_encrypted(), self.key_bits),
                &mut *self.entropy,
            )
            .map_err(|e| crypto_fail(e.to_string()))?;
            let origin = kind.is_origin_authenticated().then(OriginMacs::default);
            self.local_endpoints
                .insert(guid, LocalEndpoint { tx, origin });
            p.submessages = true;
        }
        let Some(a) = a else {
            return Ok(p);
        };
        if a.is_payload_protected() {
            // A reader only decodes (with its writers' key material).
            if writer {
                let tx = new_sender(
                    TransformKind::for_protection(
                        a.data_protection_kind == crate::access::BasicProtectionKind::Encrypt,
                        self.key_bits,
                    ),
                    &mut *self.entropy,
                )
                .map_err(|e| crypto_fail(e.to_string()))?;
                self.local_payloads.insert(guid, tx);
                self.local_payload_views.remove(&guid);
            }
            p.payload = true;
        }
        Ok(p)
    }

    fn discovery_protected(&self, topic: &str) -> bool {
        self.access
            .endpoint_security_attributes(self.domain_id, topic)
            .is_ok_and(|a| a.is_discovery_protected)
    }

    fn unregister_local_endpoint(&mut self, guid: Guid) {
        self.local_endpoints.remove(&guid);
        self.local_payloads.remove(&guid);
        self.local_payload_views.remove(&guid);
    }

    fn encode_payload(
        &mut self,
        local: Guid,
        plain: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), SecurityFailure> {
        let tx = self
            .local_payloads
            .get_mut(&local)
            .ok_or_else(|| crypto_fail("writer without payload key material".into()))?;
        // Signed payloads (the plaintext then ends where the footer starts) are padded to
        // a multiple of 4 as CDR pads, the encapsulation options counting the padding
        // bytes (what Cyclone DDS does; the DATA submessage pads to 4 after the footer).
        let pad = if tx.kind().encrypts() {
            0
        } else {
            (4 - plain.len() % 4) % 4
        };
        out.clear();
        out.resize(plain.len() + pad + PAYLOAD_OVERHEAD, 0);
        let n = if pad == 0 {
            tx.encode_payload(plain, out)
        } else {
            let mut padded = core::mem::take(&mut self.pad_buf);
            padded.clear();
            padded.extend_from_slice(plain);
            padded.resize(plain.len() + pad, 0);
            if padded.len() >= 4 && padded[3] & 3 == 0 {
                padded[3] |= pad as u8;
            }
            let r = tx.encode_payload(&padded, out);
            self.pad_buf = padded;
            r
        }
        .map_err(|e| crypto_fail(e.to_string()))?;
        out.truncate(n);
        Ok(())
    }

    fn decode_payload(
        &mut self,
        remote: Guid,
        encoded: &[u8],
        out: &mut [u8],
    ) -> Result<usize, SecurityFailure> {
        // The CryptoHeader's transformation_key_id (after the transformation kind).
        let key_id = encoded
            .get(4..8)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| crypto_fail("protected payload shorter than its header".into()))?;
        let rx = self
            .remotes
            .get_mut(&remote.prefix)
            .and_then(|r| r.endpoints.get_mut(&key_id))
            .filter(|(e, _)| *e == remote.entity_id)
            .map(|(_, rx)| rx)
            .ok_or_else(|| crypto_fail("no payload key material of this writer".into()))?;
        rx.decode_payload(encoded, out)
            .map_err(|e| crypto_fail(e.to_string()))
    }

    fn decode_local_payload(
        &mut self,
        local: Guid,
        encoded: &[u8],
        out: &mut [u8],
    ) -> Result<usize, SecurityFailure> {
        let rx = match self.local_payload_views.entry(local) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let tx = self
                    .local_payloads
                    .get(&local)
                    .ok_or_else(|| crypto_fail("writer without payload key material".into()))?;
                let rx = ReceiverCrypto::new(tx.key_material().clone())
                    .map_err(|e| crypto_fail(e.to_string()))?;
                v.insert(rx)
            }
        };
        rx.decode_payload(encoded, out)
            .map_err(|e| crypto_fail(e.to_string()))
    }

    fn submessage_overhead(&self) -> usize {
        if self.local_endpoints.values().any(|e| e.origin.is_some()) {
            SUBMESSAGE_OVERHEAD + MAX_ORIGIN_MACS * RECEIVER_MAC_LEN
        } else {
            SUBMESSAGE_OVERHEAD
        }
    }

    fn endpoint_tokens(&mut self, local: Guid, remote: Guid) -> Option<Vec<u8>> {
        if !self.local_endpoints.contains_key(&local) && !self.local_payloads.contains_key(&local) {
            return None;
        }
        self.endpoint_tokens_message(local, remote).ok()
    }

    fn forget_remote_endpoint(&mut self, remote: Guid) {
        if let Some(r) = self.remotes.get_mut(&remote.prefix) {
            r.endpoints.retain(|_, (e, _)| *e != remote.entity_id);
        }
        for e in self.local_endpoints.values_mut() {
            if let Some(o) = e.origin.as_mut() {
                o.forget(|g| *g == remote);
            }
        }
    }

    fn encode_submessage(
        &mut self,
        local: Guid,
        plain: &[u8],
        dest: Option<GuidPrefix>,
        out: &mut [u8],
    ) -> Result<usize, SecurityFailure> {
        let e = self
            .local_endpoints
            .get_mut(&local)
            .ok_or_else(|| crypto_fail("endpoint without key material".into()))?;
        let receivers = origin_receivers(e.origin.as_mut(), dest, "submessage")?;
        e.tx.encode_submessage(plain, receivers, out)
            .map_err(|e| crypto_fail(e.to_string()))
    }

    fn encode_message(
        &mut self,
        plain: &[u8],
        dest: Option<GuidPrefix>,
        out: &mut [u8],
    ) -> Result<usize, SecurityFailure> {
        let tx = self
            .msg_tx
            .as_mut()
            .ok_or_else(|| crypto_fail("RTPS protection is off".into()))?;
        let receivers = origin_receivers(self.msg_origin.as_mut(), dest, "message")?;
        tx.encode_message(plain, receivers, out)
            .map_err(|e| crypto_fail(e.to_string()))
    }

    fn decode_message(
        &mut self,
        remote: GuidPrefix,
        encoded: &[u8],
        out: &mut [u8],
    ) -> Result<usize, SecurityFailure> {
        let rx = self
            .remotes
            .get_mut(&remote)
            .and_then(|r| r.msg_rx.as_mut())
            .ok_or_else(|| crypto_fail("no key material of this participant".into()))?;
        rx.decode_message(encoded, out)
            .map_err(|e| crypto_fail(e.to_string()))
    }

    fn forget(&mut self, remote: GuidPrefix) {
        self.remotes.remove(&remote);
        if let Some(o) = self.msg_origin.as_mut() {
            o.forget(|g| g.prefix == remote);
        }
        for e in self.local_endpoints.values_mut() {
            if let Some(o) = e.origin.as_mut() {
                o.forget(|g| g.prefix == remote);
            }
        }
        if let Some(a) = self.auth.as_mut() {
            a.cancel(&participant_guid(remote));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(extra: Option<&str>) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = [
            ("dds.sec.auth.identity_ca", "file:ca.pem"),
            ("dds.sec.auth.identity_certificate", "file:id.pem"),
            ("dds.sec.auth.private_key", "file:key.pem"),
            (PROP_PERMISSIONS_CA_SHORT, "file:ca.pem"),
            (PROP_GOVERNANCE_SHORT, "file:gov.xml"),
            (PROP_PERMISSIONS_SHORT, "file:perm.xml"),
        ]
        .iter()
        .map(|(n, v)| ((*n).to_string(), (*v).to_string()))
        .collect();
        if let Some(a) = extra {
            v.push((PROP_ENCRYPTION_ALGORITHM.to_string(), a.to_string()));
        }
        v
    }

    #[test]
    fn the_encryption_algorithm_sets_the_key_length() {
        assert_eq!(
            SecurityFiles::from_properties(&props(None))
                .unwrap()
                .key_bits,
            256
        );
        let f = SecurityFiles::from_properties(&props(Some("aes-128-gcm"))).unwrap();
        assert_eq!(f.key_bits, 128);
        let f = SecurityFiles::from_properties(&props(Some("AES-256-GCM"))).unwrap();
        assert_eq!(f.key_bits, 256);
        let e = SecurityFiles::from_properties(&props(Some("aes-192-gcm")))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(PROP_ENCRYPTION_ALGORITHM)
                && e.contains("aes-192-gcm")
                && e.contains("aes-128-gcm"),
            "{e}"
        );
    }
}
