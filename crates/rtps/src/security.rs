//! The engine's view of DDS Security (step 1: authentication and access control of
//! participants; step 2: key exchange and RTPS message protection; step 3: submessage and
//! payload protection, origin authentication and discovery protection).
//!
//! # Contract
//!
//! * The engine depends on no security library: it calls a [`ParticipantSecurity`] value the
//!   caller builds (the builtin PKI-DH / Permissions adapter lives in `ferrodds-security`,
//!   which depends on this crate, so OpenSSL never enters the engine). A participant made
//!   with [`crate::Participant::new`] has no security and behaves exactly as before; one made
//!   with [`crate::Participant::with_security`] runs the flow below. The plugin is sans-IO
//!   too: time is the engine's [`Timestamp`], randomness is the plugin's own input.
//! * **SPDP**: a secure participant's GUID prefix is the plugin's
//!   ([`ParticipantSecurity::guid_prefix`], the adjusted prefix of DDS Security §9.3.3); its
//!   announcements carry `PID_IDENTITY_TOKEN` (0x1001), `PID_PERMISSIONS_TOKEN` (0x1002) —
//!   each a `DataHolder` in the list's byte order, as [`LocalSecurityParams`] gives them
//!   (little endian) — and `PID_PARTICIPANT_SECURITY_INFO` (0x1005), and the builtin
//!   endpoint set has the stateless-message bits ([`BES_STATELESS_ANNOUNCER`],
//!   [`BES_STATELESS_DETECTOR`]) and [`BES_SECURE_PARTICIPANT_ANNOUNCER`] (which Cyclone DDS
//!   requires to treat a participant as secure; the secure SPDP writer itself is not
//!   implemented yet, so what peers send to it is ignored). The plugin is given `c.pdata` once
//!   ([`ParticipantSecurity::init`]): the participant's SPDP data as a big-endian parameter
//!   list with `PID_PARTICIPANT_GUID` and a sentinel, no encapsulation header (the security
//!   parameters left out).
//! * **Stateless endpoints**: `DCPSParticipantStatelessMessage` writer
//!   [`STATELESS_WRITER`] (0x000201c3) and reader [`STATELESS_READER`] (0x000201c4), best
//!   effort and keyless, with no proxies: every message goes to the remote participant's
//!   metatraffic unicast locators (INFO_DST + DATA with a fresh writer SN each time), and
//!   every DATA from a remote stateless writer is handed to
//!   [`ParticipantSecurity::on_message`] (payload = serialized `ParticipantGenericMessage`
//!   with its encapsulation header). A message larger than a datagram goes as DATA_FRAGs
//!   (fragments of at most 8 KiB, one per datagram); received DATA_FRAGs are reassembled per
//!   remote participant (messages up to 64 KiB, two at a time, incomplete ones dropped after
//!   1 s) — Cyclone DDS fragments its handshake messages at 1344 bytes.
//! * **Handshake driver**: a remote participant announcing an identity token is
//!   *pending*; [`ParticipantSecurity::begin`] starts the handshake and returns the Request
//!   when we initiate ([`ParticipantSecurity::is_initiator`], the plugin's rule). A message
//!   the plugin marks `resend` is sent again every [`HANDSHAKE_RESEND_PERIOD`] until the
//!   remote answers (the channel is best effort). At most half of
//!   [`ParticipantSecurity::max_pending_handshakes`] (at least one) handshakes *we* initiate
//!   run at once, the others queue in discovery order; those the remote initiates start at
//!   once (waiting holds nothing) and the plugin bounds the state their Requests create, with
//!   room left beside ours — so participants waiting for each other's Requests cannot
//!   deadlock. One pending longer than [`HANDSHAKE_TIMEOUT`] fails. On
//!   completion the plugin has validated the remote permissions; the remote is then
//!   *authenticated* ([`crate::Event::ParticipantAuthenticated`]) and only then are the
//!   SEDP endpoints matched with it. A failure ([`crate::Event::ParticipantAuthenticationFailed`]
//!   with the reason; [`crate::Stats::authentication_failures`] or
//!   [`crate::Stats::access_denied_participants`]) that the plugin marks final leaves the
//!   remote *failed* — never matched, its stateless messages ignored — until it leaves or
//!   restarts; a non-final one (a bad Reply or Final, possibly forged) is only counted.
//! * **Unauthenticated participants** (no identity token): ignored and counted
//!   ([`crate::Stats::unauthenticated_participants_ignored`]) unless
//!   [`ParticipantSecurity::allow_unauthenticated`], in which case they are discovered and
//!   matched as without security.
//! * Checked against Eclipse Cyclone DDS 0.10 (`ddsperf` with its builtin plugins): the
//!   handshake completes and each side accepts the other's permissions, whichever initiates.
//! * **Key exchange** (step 2, when [`ParticipantSecurity::protects_messages`]): once a
//!   remote is authenticated the engine sends it [`ParticipantSecurity::key_exchange_offer`]
//!   (the participant crypto tokens, a `ParticipantGenericMessage`) from the
//!   volatile-secure writer [`VOLATILE_SECURE_WRITER`] (0xff0202c3) to the reader
//!   [`VOLATILE_SECURE_READER`] (0xff0202c4), as INFO_DST + a DATA and a HEARTBEAT
//!   (first = last = the DATA's SN, not final), each protected with
//!   [`ParticipantSecurity::encode_volatile`] (submessage transform under the KxKeys), one
//!   datagram per message, never message-protected. The offer is sent again every
//!   [`HANDSHAKE_RESEND_PERIOD`] until [`ParticipantSecurity::key_exchange_acked`] or an
//!   ACKNACK of the remote volatile-secure reader past the offer's SN (what a reliable reader
//!   such as Cyclone DDS's answers to the HEARTBEAT). Every SEC_PREFIX submessage of a
//!   received clear datagram is decoded ([`ParticipantSecurity::decode_submessage`]) in place
//!   and the datagram interpreted; a volatile DATA is handed to
//!   [`ParticipantSecurity::on_volatile_message`], whose answer (an ack carrying our tokens
//!   too) is sent once; volatile DATA in clear are dropped. *Deviation*: our volatile
//!   endpoints are this offer/answer exchange, not full RTPS reliable endpoints (we send no
//!   ACKNACK for the remote's volatile writer: Cyclone DDS keeps sending HEARTBEATs for it);
//!   the builtin-endpoint-set bits [`BES_VOLATILE_SECURE_WRITER`] /
//!   [`BES_VOLATILE_SECURE_READER`] are announced.
//! * **RTPS message protection** (when [`ParticipantSecurity::protects_messages`]): every
//!   datagram the participant sends except SPDP, stateless and volatile-secure ones is
//!   given to [`ParticipantSecurity::encode_message`] (datagrams are built
//!   [`ParticipantSecurity::message_overhead`] bytes smaller so that the protected one fits
//!   `max_message_size`), through a scratch buffer reserved at creation (no allocation per
//!   datagram). A received datagram whose first submessage is `SRTPS_PREFIX` is decoded
//!   with the sender's key material ([`ParticipantSecurity::decode_message`]) before it is
//!   interpreted; one that fails is dropped and counted
//!   ([`crate::Stats::rejected_protected_datagrams`]). In an unprotected datagram only the
//!   submessages of the standard (not secure) builtin endpoints are then interpreted — SPDP,
//!   SEDP, ParticipantMessage, TypeLookup, stateless — and decoded volatile-secure ones; the
//!   others are dropped and counted ([`crate::Stats::unprotected_submessages_dropped`]).
//!   That is the set Cyclone DDS 0.10 sends in clear under RTPS protection (it protects the
//!   messages of user and secure builtin endpoints only) and accepts in clear; we protect
//!   every message but SPDP, stateless and volatile-secure ones.
//! * Checked against Cyclone DDS 0.10 `ddsperf` with the perftest RTPSSign, RTPSEncrypt and
//!   SignEncryptSubmessage governances: participant and endpoint crypto tokens are taken
//!   both ways and user data flows both ways.
//! * **Endpoints**: the API asks [`crate::Participant::check_local_endpoint`] before it
//!   creates a user DataWriter or DataReader (the plugin applies the governance's topic rule
//!   and the local permissions); a remote user endpoint is matched only when
//!   [`ParticipantSecurity::check_remote_endpoint`] allows it (refusals counted in
//!   [`crate::Stats::access_denied_endpoints`]).
//! * **Submessage protection** (a user endpoint whose topic rule has
//!   `metadata_protection_kind` SIGN or ENCRYPT: [`ParticipantSecurity::register_local_endpoint`]
//!   says so when the endpoint is created). Its writer submessages (DATA, DATA_FRAG,
//!   HEARTBEAT, HEARTBEAT_FRAG, GAP) or reader submessages (ACKNACK, NACK_FRAG) are each
//!   replaced by `SEC_PREFIX | SEC_BODY | SEC_POSTFIX` ([`ParticipantSecurity::encode_submessage`])
//!   before the message transform; INFO_DST and INFO_TS stay in clear before them, as Cyclone
//!   DDS expects. Datagrams are built with [`ParticipantSecurity::submessage_overhead`] bytes
//!   free per such submessage, and the writer's DATA / fragment sizes leave room for one.
//!   When it is matched with a remote endpoint, the engine sends that endpoint our crypto
//!   tokens ([`ParticipantSecurity::endpoint_tokens`]: `dds.sec.datawriter_crypto_tokens` /
//!   `dds.sec.datareader_crypto_tokens`) over the volatile-secure writer, one message at a
//!   time per remote participant once its participant key exchange is acknowledged, again
//!   every [`HANDSHAKE_RESEND_PERIOD`] until an ACKNACK of its volatile-secure reader passes
//!   the message's SN. Our volatile-secure reader acknowledges every volatile DATA it
//!   accepts with such an ACKNACK (protected with the KxKeys), and answers a remote
//!   volatile-secure writer's HEARTBEAT announcing SNs beyond the highest it has seen with
//!   an ACKNACK asking for them (its GAPs count as seen): a message that came before the
//!   handshake completed here (Cyclone DDS sends its tokens right after its Final) could not
//!   be decoded then and is resent. Received SEC_PREFIX
//!   submessages are decoded with the key their CryptoHeader names
//!   ([`ParticipantSecurity::decode_submessage`]); one decoded with an endpoint's key is
//!   kept only inside a protected RTPS message, from that message's participant, and when
//!   its own writer (reader) id is the key's endpoint. Submessages in clear of a remote
//!   endpoint matched with a protected local one are dropped and counted
//!   ([`crate::Stats::unprotected_submessages_dropped`]); so are the three parts of one
//!   that fails to decode ([`crate::Stats::rejected_protected_datagrams`]), e.g. before its
//!   sender's tokens arrived (reliability repairs it).
//! * **Payload protection** (a writer whose topic rule has `data_protection_kind` SIGN or
//!   ENCRYPT): each serialized payload (encapsulation header included) is protected once,
//!   when written ([`ParticipantSecurity::encode_payload`]), and the history keeps that form:
//!   sent, fragmented and repaired as it is (key hash and inline QoS stay in clear). The
//!   writer's crypto tokens carry its payload key material (after the submessage one, if
//!   any). A reader of such a topic decodes the payloads of its matched remote writers
//!   ([`ParticipantSecurity::decode_payload`]) before delivering them: a DATA's at once, a
//!   fragmented sample's once reassembled — or each fragment on its own when it is longer
//!   than its place in the sample (Cyclone DDS 0.10 protects each fragment separately). One
//!   that fails is dropped and counted ([`crate::Stats::rejected_protected_datagrams`]).
//! * **Origin authentication**: [`ParticipantSecurity::encode_message`] and
//!   [`ParticipantSecurity::encode_submessage`] are told the participant a datagram goes to
//!   (its leading INFO_DST; `None` when it goes to several), for the plugin's
//!   receiver-specific MACs. Checked against Cyclone DDS 0.10 with perftest's
//!   RTPSSignWithOrigAuthEncryptData and RTPSSignEncryptSubmessageWithOrigAuthEncryptData.
//! * **Discovery protection**: a secure participant has the secure SEDP writers and readers
//!   ([`SEDP_PUB_SECURE_WRITER`] … [`SEDP_SUB_SECURE_READER`], builtin endpoint set bits
//!   16–19), registered with the plugin as endpoints of [`SEDP_PUB_SECURE_TOPIC`] /
//!   [`SEDP_SUB_SECURE_TOPIC`] (their submessages protected as the governance's
//!   `discovery_protection_kind` says, their keys exchanged as endpoint crypto tokens) and
//!   matched with an authenticated participant's. A user endpoint whose topic rule enables
//!   discovery protection ([`ParticipantSecurity::discovery_protected`]) is announced (and
//!   disposed) over them instead of the standard SEDP writers; what they receive is
//!   discovered like standard SEDP data. Checked against Cyclone DDS 0.10.
//! * Not yet: the secure SPDP and ParticipantMessage endpoints (Cyclone DDS 0.10 writes no
//!   data on them either; FerroDDS sends no liveliness messages, so a liveliness-protected
//!   topic sends nothing in clear), submessage or payload protection without RTPS message
//!   protection, and
//!   PID_ENDPOINT_SECURITY_INFO in SEDP (Cyclone DDS then applies its own topic rule to our
//!   endpoints). Our fragmented protected payloads do not decode in Cyclone DDS 0.10 (it
//!   expects each fragment protected on its own). The builtin plugin refuses endpoints or
//!   participants whose governance asks for what is not implemented.

use core::fmt;
use core::time::Duration;

use crate::{EntityId, Guid, GuidPrefix, Timestamp};

/// `PID_IDENTITY_TOKEN`.
pub const PID_IDENTITY_TOKEN: u16 = 0x1001;
/// `PID_PERMISSIONS_TOKEN`.
pub const PID_PERMISSIONS_TOKEN: u16 = 0x1002;
/// `PID_PARTICIPANT_SECURITY_INFO`.
pub const PID_PARTICIPANT_SECURITY_INFO: u16 = 0x1005;

/// `ENTITYID_P2P_BUILTIN_PARTICIPANT_STATELESS_WRITER`.
pub const STATELESS_WRITER: EntityId = EntityId([0x00, 0x02, 0x01, 0xc3]);
/// `ENTITYID_P2P_BUILTIN_PARTICIPANT_STATELESS_READER`.
pub const STATELESS_READER: EntityId = EntityId([0x00, 0x02, 0x01, 0xc4]);

/// `ENTITYID_P2P_BUILTIN_PARTICIPANT_VOLATILE_MESSAGE_SECURE_WRITER`.
pub const VOLATILE_SECURE_WRITER: EntityId = EntityId([0xff, 0x02, 0x02, 0xc3]);
/// `ENTITYID_P2P_BUILTIN_PARTICIPANT_VOLATILE_MESSAGE_SECURE_READER`.
pub const VOLATILE_SECURE_READER: EntityId = EntityId([0xff, 0x02, 0x02, 0xc4]);
/// Builtin endpoint set bit: `BUILTIN_PARTICIPANT_VOLATILE_MESSAGE_SECURE_WRITER`.
pub const BES_VOLATILE_SECURE_WRITER: u32 = 1 << 24;
/// Builtin endpoint set bit: `BUILTIN_PARTICIPANT_VOLATILE_MESSAGE_SECURE_READER`.
pub const BES_VOLATILE_SECURE_READER: u32 = 1 << 25;
/// `ENTITYID_SEDP_BUILTIN_PUBLICATIONS_SECURE_WRITER`.
pub const SEDP_PUB_SECURE_WRITER: EntityId = EntityId([0xff, 0x00, 0x03, 0xc2]);
/// `ENTITYID_SEDP_BUILTIN_PUBLICATIONS_SECURE_READER`.
pub const SEDP_PUB_SECURE_READER: EntityId = EntityId([0xff, 0x00, 0x03, 0xc7]);
/// `ENTITYID_SEDP_BUILTIN_SUBSCRIPTIONS_SECURE_WRITER`.
pub const SEDP_SUB_SECURE_WRITER: EntityId = EntityId([0xff, 0x00, 0x04, 0xc2]);
/// `ENTITYID_SEDP_BUILTIN_SUBSCRIPTIONS_SECURE_READER`.
pub const SEDP_SUB_SECURE_READER: EntityId = EntityId([0xff, 0x00, 0x04, 0xc7]);
/// Builtin endpoint set bits of the secure SEDP endpoints: publications announcer and
/// detector, subscriptions announcer and detector.
pub const BES_PUBLICATIONS_SECURE_ANNOUNCER: u32 = 1 << 16;
/// See [`BES_PUBLICATIONS_SECURE_ANNOUNCER`].
pub const BES_PUBLICATIONS_SECURE_DETECTOR: u32 = 1 << 17;
/// See [`BES_PUBLICATIONS_SECURE_ANNOUNCER`].
pub const BES_SUBSCRIPTIONS_SECURE_ANNOUNCER: u32 = 1 << 18;
/// See [`BES_PUBLICATIONS_SECURE_ANNOUNCER`].
pub const BES_SUBSCRIPTIONS_SECURE_DETECTOR: u32 = 1 << 19;
/// Topic names of the secure SEDP endpoints (as the plugin sees them when they register).
pub const SEDP_PUB_SECURE_TOPIC: &str = "DCPSPublicationsSecure";
/// See [`SEDP_PUB_SECURE_TOPIC`].
pub const SEDP_SUB_SECURE_TOPIC: &str = "DCPSSubscriptionsSecure";

/// Submessage id `SRTPS_PREFIX`.
pub const SRTPS_PREFIX: u8 = 0x33;
/// Submessage id `SEC_PREFIX`.
pub const SEC_PREFIX: u8 = 0x31;

/// Builtin endpoint set bit: `BUILTIN_PARTICIPANT_STATELESS_MESSAGE_WRITER`.
pub const BES_STATELESS_ANNOUNCER: u32 = 1 << 22;
/// Builtin endpoint set bit: `BUILTIN_PARTICIPANT_STATELESS_MESSAGE_READER`.
pub const BES_STATELESS_DETECTOR: u32 = 1 << 23;
/// Builtin endpoint set bit: `DISC_BUILTIN_ENDPOINT_PARTICIPANT_SECURE_ANNOUNCER` (the
/// secure SPDP writer, 0xff0101c2). Announced although that writer does not exist yet:
/// Cyclone DDS treats a participant as secure (and authenticates it) only when this bit is
/// set beside an identity token.
pub const BES_SECURE_PARTICIPANT_ANNOUNCER: u32 = 1 << 26;

/// How a local endpoint's traffic is protected (its topic rule in the governance).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EndpointProtection {
    /// Its submessages go as `SEC_PREFIX | SEC_BODY | SEC_POSTFIX` (metadata protection):
    /// DATA, DATA_FRAG, HEARTBEAT, HEARTBEAT_FRAG and GAP of a writer, ACKNACK and NACK_FRAG
    /// of a reader; those of the remote endpoints matched with it must arrive so.
    pub submessages: bool,
    /// A writer's serialized payloads are protected ([`ParticipantSecurity::encode_payload`]:
    /// `data_protection_kind` SIGN or ENCRYPT); a reader's matched writers send theirs so.
    pub payload: bool,
}

/// The key a protected submessage was decoded with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmessageKey {
    /// The KxKeys of the volatile-secure endpoints.
    Volatile,
    /// The key material of the remote endpoint with this entity id (of the sender).
    Endpoint(EntityId),
}

/// Submessage ids of a writer's submessages (DATA, DATA_FRAG, HEARTBEAT, HEARTBEAT_FRAG, GAP).
pub const WRITER_SUBMESSAGES: [u8; 5] = [0x15, 0x16, 0x07, 0x13, 0x08];
/// Submessage ids of a reader's submessages (ACKNACK, NACK_FRAG).
pub const READER_SUBMESSAGES: [u8; 2] = [0x06, 0x12];

/// The endpoint a writer or reader submessage `sub` (header included) comes from: (its
/// entity id, whether it is a writer), or `None` for other submessages.
pub fn submessage_endpoint(sub: &[u8]) -> Option<(EntityId, bool)> {
    let id = *sub.first()?;
    // DATA and DATA_FRAG: extraFlags and octetsToInlineQos, readerId, writerId; the others:
    // readerId, writerId.
    let (range, writer) = if id == 0x15 || id == 0x16 {
        (12..16, true)
    } else if WRITER_SUBMESSAGES.contains(&id) {
        (8..12, true)
    } else if READER_SUBMESSAGES.contains(&id) {
        (4..8, false)
    } else {
        return None;
    };
    let b = sub.get(range)?;
    Some((EntityId([b[0], b[1], b[2], b[3]]), writer))
}

/// Period of handshake message resends while unanswered.
pub const HANDSHAKE_RESEND_PERIOD: Duration = Duration::from_millis(500);
/// A handshake pending longer than this fails.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// What the local participant announces in SPDP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalSecurityParams {
    /// The IdentityToken `DataHolder`, CDR little endian (the `PID_IDENTITY_TOKEN` value).
    pub identity_token: Vec<u8>,
    /// The PermissionsToken `DataHolder`, CDR little endian.
    pub permissions_token: Vec<u8>,
    /// PARTICIPANT_SECURITY_INFO: (attributes, plugin attributes).
    pub security_info: (u32, u32),
}

/// The security parameters of a remote participant's SPDP data, as received.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemoteSecurityParams {
    /// The raw `PID_IDENTITY_TOKEN` value (a CDR `DataHolder`), if present.
    pub identity_token: Option<Vec<u8>>,
    /// The raw `PID_PERMISSIONS_TOKEN` value, if present.
    pub permissions_token: Option<Vec<u8>>,
    /// PARTICIPANT_SECURITY_INFO, if present.
    pub security_info: Option<(u32, u32)>,
    /// Whether the values are big-endian CDR (the parameter list's byte order).
    pub big_endian: bool,
}

/// What to do after a handshake step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandshakeOutput {
    /// Nothing to send now (we wait for the remote's Request, or the message was not for us
    /// or a duplicate already answered).
    Wait,
    /// Send this stateless message (a serialized `ParticipantGenericMessage` with its
    /// encapsulation header) to the remote; with `resend`, again every
    /// [`HANDSHAKE_RESEND_PERIOD`] until the remote's next message.
    Send {
        /// The payload.
        payload: Vec<u8>,
        /// Resend until answered.
        resend: bool,
    },
    /// The handshake completed and the remote's permissions are valid: send `payload`, if
    /// any, once (a Final), and treat the remote as authenticated.
    Authenticated {
        /// A last message to send once.
        payload: Option<Vec<u8>>,
    },
}

/// Which check failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecurityFailureKind {
    /// Authentication: tokens, certificates, handshake messages, timeouts.
    Authentication,
    /// Access control: the remote's permissions (signature, grant, validity, join rules).
    AccessControl,
    /// Cryptography: key exchange and transforms (a bad, replayed or unknown-key message).
    Cryptography,
}

/// A failed security step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityFailure {
    /// Which check failed.
    pub kind: SecurityFailureKind,
    /// The handshake with this remote is over (it stays failed until it leaves); otherwise
    /// the failure is only counted (e.g. a bad Reply that may be forged).
    pub fatal: bool,
    /// Why, naming the message, property, certificate or rule.
    pub reason: String,
}

impl fmt::Display for SecurityFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// The security plugins as the engine calls them (sans-IO). See the module docs for the
/// order of calls.
pub trait ParticipantSecurity: fmt::Debug + Send {
    /// The participant's GUID prefix (the adjusted prefix of its identity).
    fn guid_prefix(&self) -> GuidPrefix;

    /// Called once when the participant is created, with `c.pdata` (see the module docs);
    /// returns what to announce in SPDP.
    fn init(&mut self, pdata: Vec<u8>) -> Result<LocalSecurityParams, SecurityFailure>;

    /// Whether participants without an identity token are discovered (governance
    /// `allow_unauthenticated_participants`).
    fn allow_unauthenticated(&self) -> bool;

    /// Most handshakes pending at once (the engine initiates at most half of them).
    fn max_pending_handshakes(&self) -> usize;

    /// Whether we send the Request to `remote` (rather than wait for its Request).
    fn is_initiator(&self, remote: GuidPrefix) -> bool;

    /// A remote participant `remote` announcing an identity token was discovered at `now`:
    /// checks its tokens and starts the handshake (returns the Request when we initiate,
    /// [`HandshakeOutput::Wait`] otherwise).
    fn begin(
        &mut self,
        remote: GuidPrefix,
        params: &RemoteSecurityParams,
        now: Timestamp,
    ) -> Result<HandshakeOutput, SecurityFailure>;

    /// A stateless message from participant `remote` (a handshake is pending with it, or
    /// completed): `payload` is the DATA's serialized payload.
    fn on_message(
        &mut self,
        remote: GuidPrefix,
        payload: &[u8],
        now: Timestamp,
    ) -> Result<HandshakeOutput, SecurityFailure>;

    /// The remote participant left (or failed, or timed out): forget its state.
    fn forget(&mut self, remote: GuidPrefix);

    /// May the local participant create a DataWriter (`writer`) or a DataReader of `topic`
    /// in `partitions` at `now`? The plugin checks the governance's topic rule (write or
    /// read access control against the local permissions) and refuses a topic whose rule
    /// asks for a protection it does not implement, rather than send in clear. Default: yes.
    fn check_local_endpoint(
        &self,
        topic: &str,
        partitions: &[&str],
        writer: bool,
        now: Timestamp,
    ) -> Result<(), SecurityFailure> {
        let _ = (topic, partitions, writer, now);
        Ok(())
    }

    /// May the DataWriter (`writer`) or DataReader of `topic` in `partitions` that the
    /// authenticated participant `remote` announced be matched at `now`? (Governance write
    /// or read access control against the remote's permissions.) Default: yes.
    fn check_remote_endpoint(
        &self,
        remote: GuidPrefix,
        topic: &str,
        partitions: &[&str],
        writer: bool,
        now: Timestamp,
    ) -> Result<(), SecurityFailure> {
        let _ = (remote, topic, partitions, writer, now);
        Ok(())
    }

    /// Whether RTPS messages are protected (governance `rtps_protection_kind` not NONE):
    /// the key exchange and the message transforms run. Default: no.
    fn protects_messages(&self) -> bool {
        false
    }

    /// Most bytes [`Self::encode_message`] adds to a datagram.
    fn message_overhead(&self) -> usize {
        0
    }

    /// The key-exchange offer to send to the authenticated `remote` (our participant crypto
    /// tokens), or `None` when there is nothing to send.
    fn key_exchange_offer(&mut self, remote: GuidPrefix) -> Option<Vec<u8>> {
        let _ = remote;
        None
    }

    /// Whether `remote` acknowledged our crypto tokens (offers stop).
    fn key_exchange_acked(&self, remote: GuidPrefix) -> bool {
        let _ = remote;
        true
    }

    /// A decoded volatile-secure message from `remote` (its payload): returns a message to
    /// send back once, if any.
    fn on_volatile_message(
        &mut self,
        remote: GuidPrefix,
        payload: &[u8],
    ) -> Result<Option<Vec<u8>>, SecurityFailure> {
        let _ = (remote, payload);
        Ok(None)
    }

    /// Protects the submessage `plain` of the volatile-secure writer to `remote` into `out`
    /// (its length returned).
    fn encode_volatile(
        &mut self,
        remote: GuidPrefix,
        plain: &[u8],
        out: &mut [u8],
    ) -> Result<usize, SecurityFailure> {
        let _ = (remote, plain, out);
        Err(no_crypto())
    }

    /// Decodes the protected submessage from `remote` at the start of `encoded` (a
    /// SEC_PREFIX) into `out`, with the key its CryptoHeader names: the KxKeys of `remote` or
    /// the key material of one of its endpoints. Returns (bytes consumed of `encoded`, plain
    /// length, the key used).
    fn decode_submessage(
        &mut self,
        remote: GuidPrefix,
        encoded: &[u8],
        out: &mut [u8],
    ) -> Result<(usize, usize, SubmessageKey), SecurityFailure> {
        let _ = (remote, encoded, out);
        Err(no_crypto())
    }

    /// A local DataWriter (`writer`) or DataReader `guid` of `topic` is created (after
    /// [`Self::check_local_endpoint`]): makes its key material when its topic rule
    /// protects it, and says how. Default: no protection.
    fn register_local_endpoint(
        &mut self,
        guid: Guid,
        topic: &str,
        writer: bool,
    ) -> Result<EndpointProtection, SecurityFailure> {
        let _ = (guid, topic, writer);
        Ok(EndpointProtection::default())
    }

    /// Whether the DataWriters and DataReaders of `topic` are announced over the secure SEDP
    /// endpoints (the topic rule's `enable_discovery_protection`). Default: no.
    fn discovery_protected(&self, topic: &str) -> bool {
        let _ = topic;
        false
    }

    /// A local endpoint was deleted.
    fn unregister_local_endpoint(&mut self, guid: Guid) {
        let _ = guid;
    }

    /// Most bytes [`Self::encode_submessage`] adds to one submessage.
    fn submessage_overhead(&self) -> usize {
        0
    }

    /// The crypto tokens of the protected local endpoint `local` for the matched remote
    /// endpoint `remote` (a volatile-secure `ParticipantGenericMessage` payload,
    /// `dds.sec.datawriter_crypto_tokens` when `local` is a writer, else
    /// `dds.sec.datareader_crypto_tokens`), or `None` when there are none.
    fn endpoint_tokens(&mut self, local: Guid, remote: Guid) -> Option<Vec<u8>> {
        let _ = (local, remote);
        None
    }

    /// Protects the serialized payload `plain` (encapsulation header included) of the local
    /// writer `local` into `out` (cleared first).
    fn encode_payload(
        &mut self,
        local: Guid,
        plain: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), SecurityFailure> {
        let _ = (local, plain, out);
        Err(no_crypto())
    }

    /// Decodes the protected serialized payload `encoded` of the remote writer `remote`
    /// into `out` (at least `encoded.len()` bytes); returns the plain length.
    fn decode_payload(
        &mut self,
        remote: Guid,
        encoded: &[u8],
        out: &mut [u8],
    ) -> Result<usize, SecurityFailure> {
        let _ = (remote, encoded, out);
        Err(no_crypto())
    }

    /// Decodes a protected serialized payload `encoded` of the local writer `local` (what
    /// [`Self::encode_payload`] made) into `out` (at least `encoded.len()` bytes); returns
    /// the plain length. For a capture's decrypted view only.
    fn decode_local_payload(
        &mut self,
        local: Guid,
        encoded: &[u8],
        out: &mut [u8],
    ) -> Result<usize, SecurityFailure> {
        let _ = (local, encoded, out);
        Err(no_crypto())
    }

    /// A remote endpoint is gone (unmatched or deleted): forget its key material.
    fn forget_remote_endpoint(&mut self, remote: Guid) {
        let _ = remote;
    }

    /// Protects the submessage `plain` (header included) of the protected local endpoint
    /// `local` into `out` (at least `plain.len() +` [`Self::submessage_overhead`] bytes).
    /// `dest` is the one participant the datagram goes to (its INFO_DST), `None` when it
    /// goes to several: with origin authentication, one receiver-specific MAC is added for
    /// each matched remote endpoint of `dest` (of every participant when `None`).
    fn encode_submessage(
        &mut self,
        local: Guid,
        plain: &[u8],
        dest: Option<GuidPrefix>,
        out: &mut [u8],
    ) -> Result<usize, SecurityFailure> {
        let _ = (local, plain, dest, out);
        Err(no_crypto())
    }

    /// Protects the RTPS message `plain` (header included) with our participant key
    /// material into `out` (at least `plain.len() +` [`Self::message_overhead`] bytes);
    /// `dest` as for [`Self::encode_submessage`] (origin authentication: a MAC for `dest`,
    /// or for every authenticated participant).
    fn encode_message(
        &mut self,
        plain: &[u8],
        dest: Option<GuidPrefix>,
        out: &mut [u8],
    ) -> Result<usize, SecurityFailure> {
        let _ = (plain, dest, out);
        Err(no_crypto())
    }

    /// Decodes the protected RTPS message `encoded` from `remote` into `out` (at least
    /// `encoded.len()` bytes); fails when tampered, replayed or without `remote`'s key.
    fn decode_message(
        &mut self,
        remote: GuidPrefix,
        encoded: &[u8],
        out: &mut [u8],
    ) -> Result<usize, SecurityFailure> {
        let _ = (remote, encoded, out);
        Err(no_crypto())
    }
}

fn no_crypto() -> SecurityFailure {
    SecurityFailure {
        kind: SecurityFailureKind::Cryptography,
        fatal: false,
        reason: "no cryptographic plugin".into(),
    }
}

/// Where a remote participant stands (security on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuthState {
    /// Without identity token, admitted by `allow_unauthenticated_participants`.
    Unauthenticated,
    /// Waiting for a free handshake slot.
    Queued,
    /// Handshake under way.
    Pending {
        /// We initiated it (it holds one of the initiator slots).
        initiator: bool,
        /// When it started.
        started: Timestamp,
        /// The message to resend until answered.
        outstanding: Option<Vec<u8>>,
        /// When to resend it.
        next_resend: Timestamp,
    },
    /// Authenticated and permitted.
    Authenticated,
    /// Failed for good (until it leaves).
    Failed,
}

impl AuthState {
    /// Whether SEDP matching with the remote is allowed.
    pub(crate) fn admits_discovery(&self) -> bool {
        matches!(self, AuthState::Unauthenticated | AuthState::Authenticated)
    }
}
