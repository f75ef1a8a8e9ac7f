//! DDS Security in the participant: secure SPDP, the stateless endpoints, the handshake
//! driver and the gating of SEDP on authentication (step 1); the volatile-secure key
//! exchange and the RTPS message transforms (step 2). See [`crate::security`].

use super::*;
use crate::reassembly::{Reassembler, ReassemblyLimits};
use crate::security::{
    submessage_endpoint, HandshakeOutput, SecurityFailureKind, SubmessageKey,
    BES_SECURE_PARTICIPANT_ANNOUNCER, BES_STATELESS_ANNOUNCER, BES_STATELESS_DETECTOR,
    BES_VOLATILE_SECURE_READER, BES_VOLATILE_SECURE_WRITER, HANDSHAKE_RESEND_PERIOD,
    HANDSHAKE_TIMEOUT, SEC_PREFIX, SRTPS_PREFIX, STATELESS_READER, STATELESS_WRITER,
    VOLATILE_SECURE_READER, VOLATILE_SECURE_WRITER,
};

/// The security state of a participant.
#[derive(Debug)]
pub(super) struct Security {
    plugin: Box<dyn ParticipantSecurity>,
    /// Last writer SN of the stateless writer.
    stateless_sn: i64,
    /// Stateless or volatile-secure messages to send: (destinations, destination
    /// participant, payload, kind).
    queue: VecDeque<(Vec<Locator>, GuidPrefix, Vec<u8>, Builtin)>,
    /// Count of the volatile-secure reader's ACKNACKs.
    volatile_ack_count: i32,
    /// The highest SN of each remote volatile-secure writer seen (decoded) here.
    volatile_seen: SeededMap<GuidPrefix, i64>,
    /// Bytes a protected submessage may add (0 while no local endpoint protects them).
    pub(super) sub_overhead: usize,
    /// Local endpoints whose submessages are protected.
    sub_local: Vec<EntityId>,
    /// Remote endpoints matched with a protected local one: their submessages must arrive
    /// protected with their own key material.
    sub_remote: SeededMap<Guid, ()>,
    /// Local writers whose payloads are protected.
    payload_local: Vec<EntityId>,
    /// Remote writers matched with a local reader whose payloads must be decoded.
    payload_remote: SeededMap<Guid, ()>,
    /// Scratch buffers of the payload transforms (sent, received).
    payload_tx: Vec<u8>,
    payload_rx: Vec<u8>,
    /// Endpoint crypto tokens to deliver, per remote participant (one message in flight).
    ep_kx: SeededMap<GuidPrefix, EndpointTokens>,
    /// Second scratch buffer (a received message's submessages; made with the first
    /// protected local endpoint).
    scratch2: Vec<u8>,
    /// Last writer SN of the volatile-secure writer.
    volatile_sn: i64,
    /// RTPS messages are protected (step 2).
    protects: bool,
    /// Bytes the message transform adds (0 when not protecting).
    pub(super) overhead: usize,
    /// Remote participants whose key-exchange offer is not acknowledged: next offer time
    /// and the volatile-secure SN of the last offer.
    kx: SeededMap<GuidPrefix, (Timestamp, i64)>,
    /// Scratch buffer of the transforms (reserved at creation).
    scratch: Vec<u8>,
    /// Remote participants waiting for a handshake slot, in discovery order.
    queued: VecDeque<GuidPrefix>,
    /// Handshakes pending that we initiated.
    pending: usize,
    /// A stateless message being sent as DATA_FRAGs (larger than a datagram).
    train: Option<Train>,
    /// Reassembly of stateless messages received as DATA_FRAGs, per remote participant
    /// (only for those with a handshake pending or done).
    reassembly: SeededMap<GuidPrefix, Reassembler>,
    /// Time of the datagram being interpreted (remote endpoint checks need it).
    pub(super) now: Timestamp,
    /// Keep the clear form of protected datagrams ([`Participant::set_keep_plaintext`]).
    keep_plaintext: bool,
    /// The clear form of the last datagram `poll_transmit_into` protected (kept), and its
    /// length (`None`: that datagram was not protected).
    plain_sent: Vec<u8>,
    pub(super) plain_sent_len: Option<usize>,
    /// The clear form of the datagram `handle_datagram` decoded last (kept), and its length.
    plain_received: Vec<u8>,
    pub(super) plain_received_len: Option<usize>,
    /// Scratch buffers of the decrypted view: the rewritten message, a decoded payload.
    view_tmp: Vec<u8>,
    view_payload: Vec<u8>,
}

impl Security {
    /// The decrypted view of a datagram sent ([`Self::plain_sent`], `len` bytes): our
    /// writers' protected payloads decoded.
    #[cold]
    fn clear_sent_payloads(&mut self, len: usize) {
        let (local, plugin) = (&self.payload_local, &mut self.plugin);
        let n = clear_payload_view(
            &mut self.plain_sent,
            len,
            &mut self.view_tmp,
            &mut self.view_payload,
            |g| local.contains(&g.entity_id),
            |g, p, out| plugin.decode_local_payload(g, p, out).ok(),
        );
        self.plain_sent_len = Some(n);
    }

    /// The decrypted view of a datagram received ([`Self::plain_received`], `len` bytes):
    /// the matched remote writers' protected payloads decoded.
    #[cold]
    fn clear_received_payloads(&mut self, len: usize) {
        let (remote, plugin) = (&self.payload_remote, &mut self.plugin);
        let n = clear_payload_view(
            &mut self.plain_received,
            len,
            &mut self.view_tmp,
            &mut self.view_payload,
            |g| remote.contains_key(&g),
            |g, p, out| plugin.decode_payload(g, p, out).ok(),
        );
        self.plain_received_len = Some(n);
    }
}

/// What a queued builtin message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Builtin {
    /// A stateless message (handshake).
    Stateless,
    /// A volatile-secure message (participant crypto tokens).
    Volatile,
    /// A volatile-secure message with endpoint crypto tokens (its SN is noted when sent).
    EndpointTokens,
    /// An ACKNACK of our volatile-secure reader: everything below the first SN
    /// acknowledged, and the SNs from it to the second (inclusive) asked for again.
    VolatileAck(i64, i64),
}

/// Endpoint crypto tokens on their way to one remote participant: sent one at a time,
/// each again every [`HANDSHAKE_RESEND_PERIOD`] until an ACKNACK of the remote's
/// volatile-secure reader acknowledges its SN.
#[derive(Debug, Default)]
struct EndpointTokens {
    /// Messages not yet acknowledged (the first one is in flight when `sent` is set).
    queue: VecDeque<Vec<u8>>,
    /// The SN the first message last went with (0: queued, not sent yet) and when to
    /// send it again.
    sent: Option<(i64, Timestamp)>,
}

/// A stateless message sent as DATA_FRAGs, one per datagram.
#[derive(Debug)]
struct Train {
    dests: Vec<Locator>,
    to: GuidPrefix,
    payload: Vec<u8>,
    sn: i64,
    /// Next fragment (0-based).
    next: usize,
    fragment_size: usize,
}

/// Bounds of the reassembly of one remote's stateless messages (handshake messages are a
/// few kilobytes: certificate, permissions, participant data).
const STATELESS_REASSEMBLY: ReassemblyLimits = ReassemblyLimits {
    max_sample_size: 64 * 1024,
    max_bytes_per_writer: 128 * 1024,
    max_bytes_total: 64 << 20,
    max_samples_per_writer: 2,
    best_effort_timeout: core::time::Duration::from_secs(1),
};

/// The submessage at `pos` of `d`: (id, end offset), or `None` when truncated.
fn sub_at(d: &[u8], pos: usize) -> Option<(u8, usize)> {
    let h = d.get(pos..pos + 4)?;
    let len = if h[1] & 1 == 1 {
        u16::from_le_bytes([h[2], h[3]])
    } else {
        u16::from_be_bytes([h[2], h[3]])
    } as usize;
    // octetsToNextHeader 0: the submessage extends to the end (not for PAD / INFO_TS).
    let end = if len == 0 && h[0] != 0x01 && h[0] != 0x09 {
        d.len()
    } else {
        pos + 4 + len
    };
    (end <= d.len()).then_some((h[0], end))
}

/// The submessages of datagram `d` (after the RTPS header): (id, start, end).
fn sub_ends(d: &[u8]) -> impl Iterator<Item = (u8, usize, usize)> + '_ {
    let mut pos = 20;
    core::iter::from_fn(move || {
        let (id, end) = sub_at(d, pos)?;
        let start = pos;
        pos = end;
        Some((id, start, end))
    })
}

/// Smallest scratch buffer of a protecting participant (a received datagram's bound).
const SCRATCH_MIN: usize = 65536;

/// The builtin endpoints whose traffic may come in clear under RTPS message protection:
/// SPDP, the standard (not secure) SEDP and ParticipantMessage endpoints, the TypeLookup
/// endpoints and the stateless ones. Cyclone DDS 0.10 protects RTPS messages only of user
/// endpoints and of the secure builtin ones (its `maybe_rtps_protected`), and accepts these
/// in clear; FerroDDS protects all but SPDP and stateless messages and accepts the same set
/// in clear, so that discovery with it completes. (User traffic and the secure builtins
/// must come protected.)
const CLEAR_BUILTINS: [[u8; 4]; 14] = [
    [0x00, 0x01, 0x00, 0xc2],
    [0x00, 0x01, 0x00, 0xc7],
    [0x00, 0x00, 0x03, 0xc2],
    [0x00, 0x00, 0x03, 0xc7],
    [0x00, 0x00, 0x04, 0xc2],
    [0x00, 0x00, 0x04, 0xc7],
    [0x00, 0x02, 0x00, 0xc2],
    [0x00, 0x02, 0x00, 0xc7],
    [0x00, 0x03, 0x00, 0xc3],
    [0x00, 0x03, 0x00, 0xc4],
    [0x00, 0x03, 0x01, 0xc3],
    [0x00, 0x03, 0x01, 0xc4],
    [0x00, 0x02, 0x01, 0xc3],
    [0x00, 0x02, 0x01, 0xc4],
];

/// Length of the RTPS header.
const HDR: usize = 20;

/// Decodes the reassembled protected payload `encoded` of remote writer `writer` into a new
/// buffer (a large sample: one allocation); `None` if it fails.
pub(super) fn unprotect_whole(
    security: &mut Option<Security>,
    writer: Guid,
    encoded: &[u8],
) -> Option<Vec<u8>> {
    let s = security.as_mut()?;
    let mut out = vec![0u8; encoded.len()];
    let n = s.plugin.decode_payload(writer, encoded, &mut out).ok()?;
    out.truncate(n);
    Some(out)
}

/// Rewrites the clear message kept for a capture's decrypted view, `view[..len]`, so that
/// each DATA of a writer whose payloads are protected carries its decoded payload; returns
/// the new length. `protected` says which writers protect their payloads; `decode` writes
/// a writer's clear payload into its buffer (as long as the protected one) and returns the
/// length, or `None` to leave that DATA as it is. A DATA_FRAG keeps its protected bytes:
/// FerroDDS protects a sample's payload as a whole before fragmenting it, so a fragment has
/// no clear form of its own. `tmp` (swapped with `view` when something changed) and `clear`
/// are scratch.
fn clear_payload_view(
    view: &mut Vec<u8>,
    len: usize,
    tmp: &mut Vec<u8>,
    clear: &mut Vec<u8>,
    protected: impl Fn(Guid) -> bool,
    mut decode: impl FnMut(Guid, &[u8], &mut [u8]) -> Option<usize>,
) -> usize {
    use ferrodds_wire::submessage::{id, Data, InfoSrc};
    let Some(msg) = view.get(..len) else {
        return len;
    };
    let Ok(m) = ferrodds_wire::Message::parse(msg) else {
        return len;
    };
    let mut prefix = m.header().guid_prefix;
    let mut changed = false;
    tmp.clear();
    tmp.extend_from_slice(&msg[..HDR]);
    for raw in m.raw_submessages() {
        let Ok(raw) = raw else {
            return len;
        };
        match raw.header.id {
            id::INFO_SRC => {
                if let Ok(i) = InfoSrc::parse(raw.header, raw.body, raw.offset) {
                    prefix = i.guid_prefix;
                }
            }
            id::DATA => {
                let d = Data::parse(raw.header, raw.body, raw.offset).ok();
                let d = d.filter(|d| !d.key && protected(Guid::new(prefix, d.writer_id)));
                let n = d.and_then(|d| {
                    let p = d.serialized_payload?;
                    clear.resize(p.len(), 0);
                    decode(Guid::new(prefix, d.writer_id), p, clear).map(|n| (d, n))
                });
                if let Some((d, n)) = n {
                    let d = Data {
                        serialized_payload: clear.get(..n),
                        ..d
                    };
                    let start = tmp.len();
                    tmp.resize(start + d.header_len(), 0);
                    if d.write_header(raw.endianness(), &mut tmp[start..]).is_ok() {
                        tmp.extend_from_slice(&clear[..n]);
                        tmp.resize(tmp.len() + d.padding_len(), 0);
                        changed = true;
                        continue;
                    }
                    tmp.truncate(start);
                }
            }
            _ => {}
        }
        tmp.extend_from_slice(raw.bytes);
    }
    if !changed {
        return len;
    }
    core::mem::swap(view, tmp);
    view.len()
}

/// The participant an INFO_DST submessage `sub` (header included) names; `None` for
/// GUIDPREFIX_UNKNOWN (every participant).
fn info_dst_prefix(sub: &[u8]) -> Option<GuidPrefix> {
    let p = sub.get(4..16)?;
    let mut b = [0u8; 12];
    b.copy_from_slice(p);
    (b != [0; 12]).then_some(GuidPrefix(b))
}

/// The one participant datagram `d` goes to: the INFO_DST its first submessage is, if any.
fn info_dst_of(d: &[u8]) -> Option<GuidPrefix> {
    let (id, start, end) = sub_ends(d).next()?;
    if id == 0x0e {
        info_dst_prefix(&d[start..end])
    } else {
        None
    }
}

/// What [`unprotect_submessages`] made of a datagram.
struct Pass {
    /// Length of the result.
    len: usize,
    /// A volatile-secure submessage was decoded.
    volatile: bool,
    /// A protected submessage was decoded.
    decoded: bool,
    /// Clear submessages dropped (they had to be protected).
    dropped: u64,
    /// Protected submessages that failed to decode (or claimed another endpoint).
    rejected: u64,
}

/// Rebuilds the (clear or decoded) message `plain` from `src` into `out` with each
/// protected submessage replaced by its plain form, leaving out what may not be
/// interpreted: volatile-secure DATA in clear, submessages in clear of remote endpoints
/// whose submessages must be protected, endpoint submessages decoded from a message that
/// was not itself protected (`message`), and decoded ones whose endpoint is not the key's.
/// `out` is at least `plain.len()` long (a decoded submessage is shorter than its
/// protected form).
fn unprotect_submessages(
    s: &mut Security,
    src: GuidPrefix,
    plain: &[u8],
    message: bool,
    out: &mut [u8],
) -> Pass {
    let mut r = Pass {
        len: 0,
        volatile: false,
        decoded: false,
        dropped: 0,
        rejected: 0,
    };
    out[..HDR].copy_from_slice(&plain[..HDR]);
    let mut o = HDR;
    let mut pos = HDR;
    // The source of the submessages that follow (INFO_SRC changes it).
    let mut source = src;
    while pos + 4 <= plain.len() {
        let Some((id, end)) = sub_at(plain, pos) else {
            break;
        };
        if id == 0x0c {
            if let Some(p) = plain.get(pos + 12..pos + 24) {
                let mut b = [0u8; 12];
                b.copy_from_slice(p);
                source = GuidPrefix(b);
            }
        }
        if id == SEC_PREFIX {
            match s
                .plugin
                .decode_submessage(src, &plain[pos..], &mut out[o..])
            {
                Ok((consumed, n, key)) => {
                    let claimed = submessage_endpoint(&out[o..o + n]);
                    let keep = match key {
                        SubmessageKey::Volatile => {
                            r.volatile = true;
                            true
                        }
                        // An endpoint's key protects only that endpoint's submessages, and
                        // (RTPS protection being on) only inside a protected message.
                        SubmessageKey::Endpoint(eid) => {
                            message && source == src && claimed.is_some_and(|(e, _)| e == eid)
                        }
                    };
                    if keep {
                        o += n;
                        r.decoded = true;
                    } else {
                        r.rejected += 1;
                    }
                    pos += consumed;
                    continue;
                }
                Err(_) => {
                    // Left out with its body (which is the submessage in clear when
                    // signed) and its postfix.
                    r.rejected += 1;
                    pos = end;
                    if let Some((_, body_end)) = sub_at(plain, pos) {
                        pos = body_end;
                        if let Some((0x32, post_end)) = sub_at(plain, pos) {
                            pos = post_end;
                        }
                    }
                    continue;
                }
            }
        }
        let sub = &plain[pos..end];
        let clear_volatile_data =
            (id == 0x15 || id == 0x16) && sub.get(12..16) == Some(&VOLATILE_SECURE_WRITER.0[..]);
        let must_be_protected = submessage_endpoint(sub)
            .is_some_and(|(eid, _)| s.sub_remote.contains_key(&Guid::new(source, eid)));
        if clear_volatile_data || must_be_protected {
            r.dropped += 1;
        } else {
            out[o..o + sub.len()].copy_from_slice(sub);
            o += sub.len();
        }
        pos = end;
    }
    r.len = o;
    r
}

/// Where the submessages being interpreted come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Origin {
    /// A datagram in clear.
    Clear,
    /// A decoded protected RTPS message.
    Message,
    /// A decoded volatile-secure submessage.
    Volatile,
}

/// Largest fragment of a stateless message sent.
const STATELESS_FRAGMENT: usize = 8192;

impl Security {
    /// Stateless messages wait to be sent.
    pub(super) fn has_queued(&self) -> bool {
        !self.queue.is_empty() || self.train.is_some()
    }
}

impl Participant {
    /// Creates a participant with DDS Security: its GUID prefix is the plugin's (the
    /// `guid_prefix` of `config` is replaced), its SPDP data carries the plugin's tokens, and
    /// remote participants are authenticated before any endpoint discovery with them (see
    /// [`crate::security`]). Fails when the plugin refuses to start.
    pub fn with_security(
        mut config: ParticipantConfig,
        now: Timestamp,
        mut plugin: Box<dyn ParticipantSecurity>,
    ) -> Result<Self, SecurityFailure> {
        config.guid_prefix = plugin.guid_prefix();
        let mut spdp = spdp_data(&config);
        let local = plugin.init(spdp.encode_pdata())?;
        spdp.builtin_endpoints |=
            BES_STATELESS_ANNOUNCER | BES_STATELESS_DETECTOR | BES_SECURE_PARTICIPANT_ANNOUNCER;
        let protects = plugin.protects_messages();
        let overhead = if protects {
            plugin.message_overhead()
        } else {
            0
        };
        if protects {
            spdp.builtin_endpoints |= BES_VOLATILE_SECURE_WRITER | BES_VOLATILE_SECURE_READER;
        }
        // Received datagrams are at most 64 KiB; sent ones max_message_size + overhead.
        let scratch = if protects {
            vec![0u8; (config.max_message_size + overhead).max(SCRATCH_MIN)]
        } else {
            Vec::new()
        };
        // The secure SEDP endpoints (announced; used for topics whose rule enables
        // discovery protection).
        spdp.builtin_endpoints |= crate::security::BES_PUBLICATIONS_SECURE_ANNOUNCER
            | crate::security::BES_PUBLICATIONS_SECURE_DETECTOR
            | crate::security::BES_SUBSCRIPTIONS_SECURE_ANNOUNCER
            | crate::security::BES_SUBSCRIPTIONS_SECURE_DETECTOR;
        spdp.security = Some(crate::security::RemoteSecurityParams {
            identity_token: Some(local.identity_token),
            permissions_token: Some(local.permissions_token),
            security_info: Some(local.security_info),
            big_endian: false,
        });
        let prefix = config.guid_prefix;
        let mut p = Self::new(config, now);
        p.spdp_payload = spdp.encode();
        p.security = Some(Security {
            plugin,
            stateless_sn: 0,
            queue: VecDeque::new(),
            volatile_ack_count: 0,
            volatile_seen: HashMap::with_hasher(map_hasher(prefix)),
            sub_overhead: 0,
            sub_local: Vec::new(),
            payload_local: Vec::new(),
            payload_remote: HashMap::with_hasher(map_hasher(prefix)),
            payload_tx: Vec::new(),
            payload_rx: Vec::new(),
            sub_remote: HashMap::with_hasher(map_hasher(prefix)),
            ep_kx: HashMap::with_hasher(map_hasher(prefix)),
            scratch2: Vec::new(),
            volatile_sn: 0,
            protects,
            overhead,
            kx: HashMap::with_hasher(map_hasher(prefix)),
            scratch,
            queued: VecDeque::new(),
            pending: 0,
            train: None,
            reassembly: HashMap::with_hasher(map_hasher(prefix)),
            now,
            keep_plaintext: false,
            view_tmp: Vec::new(),
            view_payload: Vec::new(),
            plain_sent: Vec::new(),
            plain_sent_len: None,
            plain_received: Vec::new(),
            plain_received_len: None,
        });
        p.add_secure_sedp()?;
        Ok(p)
    }

    /// Creates the secure SEDP writers and readers and registers them with the plugin (their
    /// submessages protected as the governance's `discovery_protection_kind` says).
    fn add_secure_sedp(&mut self) -> Result<(), SecurityFailure> {
        use crate::security::*;
        let prefix = self.config.guid_prefix;
        let endpoints = [
            (
                IDX_SEDP_PUB_SECURE,
                SEDP_PUB_SECURE_WRITER,
                SEDP_PUB_SECURE_READER,
                Role::SedpPub,
                SEDP_PUB_SECURE_TOPIC,
            ),
            (
                IDX_SEDP_SUB_SECURE,
                SEDP_SUB_SECURE_WRITER,
                SEDP_SUB_SECURE_READER,
                Role::SedpSub,
                SEDP_SUB_SECURE_TOPIC,
            ),
        ];
        for (i, weid, reid, role, topic) in endpoints {
            let refused = |_| SecurityFailure {
                kind: SecurityFailureKind::Cryptography,
                fatal: true,
                reason: format!("the plugin refused the secure SEDP endpoints of {topic}"),
            };
            self.register_secure_endpoint(Guid::new(prefix, weid), topic, true)
                .map_err(refused)?;
            self.register_secure_endpoint(Guid::new(prefix, reid), topic, false)
                .map_err(refused)?;
            let mut w = builtin_writer(&self.config, weid, role, topic);
            let reserve = self.security.as_ref().map_or(0, |s| s.overhead)
                + Self::sub_reserve(&self.security, weid);
            w.sizes = Sizes::reserving(&self.config, &w.qos, weid, reserve);
            debug_assert_eq!(self.writers.len(), i);
            self.writers.push(Some(w));
            self.readers
                .push(Some(builtin_reader(prefix, reid, role, topic)));
        }
        self.first_user = IDX_SEDP_SUB_SECURE + 1;
        Ok(())
    }

    /// The SEDP writer that announces a local endpoint of `topic`: the secure one when the
    /// topic rule enables discovery protection.
    pub(super) fn sedp_writer_for(&self, topic: &str, writer: bool) -> usize {
        let secure = self
            .security
            .as_ref()
            .is_some_and(|s| s.plugin.discovery_protected(topic));
        match (writer, secure) {
            (true, false) => IDX_SEDP_PUB,
            (false, false) => IDX_SEDP_SUB,
            (true, true) => IDX_SEDP_PUB_SECURE,
            (false, true) => IDX_SEDP_SUB_SECURE,
        }
    }

    /// May this participant create a DataWriter (`writer`) or a DataReader of `topic` in
    /// `partitions` at `now`? Always yes without security; with it, the plugin decides
    /// ([`ParticipantSecurity::check_local_endpoint`]). Call before
    /// [`Participant::create_writer`] / [`Participant::create_reader`].
    pub fn check_local_endpoint(
        &self,
        topic: &str,
        partitions: &[&str],
        writer: bool,
        now: Timestamp,
    ) -> Result<(), SecurityFailure> {
        match &self.security {
            Some(s) => s
                .plugin
                .check_local_endpoint(topic, partitions, writer, now),
            None => Ok(()),
        }
    }

    /// Whether the remote endpoint `data` may be matched (security off: yes); a refusal
    /// is counted in [`crate::Stats::access_denied_endpoints`].
    pub(super) fn admits_remote_endpoint_security(
        &mut self,
        data: &EndpointData,
        writer: bool,
    ) -> bool {
        let Some(s) = self.security.as_ref() else {
            return true;
        };
        if data.guid.prefix == self.config.guid_prefix {
            return true;
        }
        let partitions: Vec<&str> = data.qos.partition.0.iter().map(String::as_str).collect();
        match s.plugin.check_remote_endpoint(
            data.guid.prefix,
            &data.topic_name,
            &partitions,
            writer,
            s.now,
        ) {
            Ok(()) => true,
            Err(_) => {
                self.stats.access_denied_endpoints += 1;
                false
            }
        }
    }

    /// Keeps (or stops keeping) the clear form of every datagram this participant protects
    /// or decodes (RTPS message protection, volatile-secure submessages), for a network
    /// capture's decrypted view: [`Participant::sent_plaintext`] and
    /// [`Participant::received_plaintext`]. Costs a copy per protected datagram. No effect
    /// without security.
    pub fn set_keep_plaintext(&mut self, on: bool) {
        if let Some(s) = self.security.as_mut() {
            s.keep_plaintext = on;
            s.plain_sent_len = None;
            s.plain_received_len = None;
        }
    }

    /// The clear form of the datagram the last [`Participant::poll_transmit_into`] returned,
    /// when it was protected (an RTPS message, or volatile-secure submessages) and plaintext
    /// is kept ([`Participant::set_keep_plaintext`]).
    pub fn sent_plaintext(&self) -> Option<&[u8]> {
        let s = self.security.as_ref()?;
        s.plain_sent.get(..s.plain_sent_len?)
    }

    /// The clear form of the datagram the last [`Participant::handle_datagram`] decoded,
    /// when it was protected and plaintext is kept ([`Participant::set_keep_plaintext`]).
    pub fn received_plaintext(&self) -> Option<&[u8]> {
        let s = self.security.as_ref()?;
        s.plain_received.get(..s.plain_received_len?)
    }

    /// Whether this participant runs DDS Security.
    pub fn is_secure(&self) -> bool {
        self.security.is_some()
    }

    /// GUID prefixes of the remote participants authenticated so far (security on).
    pub fn authenticated_participants(&self) -> Vec<GuidPrefix> {
        let mut v: Vec<_> = self
            .participants
            .iter()
            .filter(|(_, p)| p.auth == AuthState::Authenticated)
            .map(|(k, _)| *k)
            .collect();
        v.sort_unstable();
        v
    }

    /// The authentication state a newly discovered participant starts in, or `None` when it
    /// is to be ignored.
    pub(super) fn initial_auth(&mut self, data: &SpdpData) -> Option<AuthState> {
        let Some(s) = self.security.as_ref() else {
            return Some(AuthState::Unauthenticated);
        };
        let token = data
            .security
            .as_ref()
            .is_some_and(|x| x.identity_token.is_some());
        if token {
            Some(AuthState::Queued)
        } else if s.plugin.allow_unauthenticated() {
            Some(AuthState::Unauthenticated)
        } else {
            self.stats.unauthenticated_participants_ignored += 1;
            None
        }
    }

    /// Starts (or queues) the handshake with `prefix` (just discovered, in state `Queued`).
    pub(super) fn queue_handshake(&mut self, prefix: GuidPrefix, now: Timestamp) {
        let Some(s) = self.security.as_mut() else {
            return;
        };
        if s.plugin.is_initiator(prefix) {
            s.queued.push_back(prefix);
            self.start_handshakes(now);
        } else {
            self.start_handshake(prefix, false, now);
        }
    }

    /// Starts queued handshakes we initiate while slots are free.
    fn start_handshakes(&mut self, now: Timestamp) {
        loop {
            let Some(s) = self.security.as_mut() else {
                return;
            };
            if s.pending >= (s.plugin.max_pending_handshakes() / 2).max(1) {
                return;
            }
            let Some(prefix) = s.queued.pop_front() else {
                return;
            };
            if self
                .participants
                .get(&prefix)
                .is_some_and(|p| p.auth == AuthState::Queued)
            {
                self.start_handshake(prefix, true, now);
            }
        }
    }

    fn start_handshake(&mut self, prefix: GuidPrefix, initiator: bool, now: Timestamp) {
        let Some(s) = self.security.as_mut() else {
            return;
        };
        let Some(p) = self.participants.get_mut(&prefix) else {
            return;
        };
        let params = p.data.security.clone().unwrap_or_default();
        p.auth = AuthState::Pending {
            initiator,
            started: now,
            outstanding: None,
            next_resend: Timestamp(u64::MAX),
        };
        if initiator {
            s.pending += 1;
        }
        self.work.arm(now.saturating_add(HANDSHAKE_TIMEOUT));
        let out = s.plugin.begin(prefix, &params, now);
        self.handshake_result(prefix, out, now);
    }

    /// Applies a plugin answer for `prefix`.
    fn handshake_result(
        &mut self,
        prefix: GuidPrefix,
        out: Result<HandshakeOutput, SecurityFailure>,
        now: Timestamp,
    ) {
        match out {
            Ok(HandshakeOutput::Wait) => {}
            Ok(HandshakeOutput::Send { payload, resend }) => {
                if let Some(p) = self.participants.get_mut(&prefix) {
                    if let AuthState::Pending {
                        outstanding,
                        next_resend,
                        ..
                    } = &mut p.auth
                    {
                        if resend {
                            *outstanding = Some(payload.clone());
                            *next_resend = now.saturating_add(HANDSHAKE_RESEND_PERIOD);
                            self.work.arm(*next_resend);
                        } else {
                            *outstanding = None;
                        }
                    }
                }
                self.send_stateless(prefix, payload);
            }
            Ok(HandshakeOutput::Authenticated { payload }) => {
                if let Some(payload) = payload {
                    self.send_stateless(prefix, payload);
                }
                self.authenticated(prefix, now);
            }
            Err(f) => self.auth_failed(prefix, f, now),
        }
    }

    fn send_stateless(&mut self, prefix: GuidPrefix, payload: Vec<u8>) {
        self.send_builtin(prefix, payload, Builtin::Stateless);
    }

    fn send_builtin(&mut self, prefix: GuidPrefix, payload: Vec<u8>, kind: Builtin) {
        let dests = self.locators_for(prefix, &[], true);
        if let Some(s) = self.security.as_mut() {
            if !dests.is_empty() {
                s.queue.push_back((dests, prefix, payload, kind));
            }
        }
    }

    /// Sends the key-exchange offer to `prefix` (authenticated) and schedules its resend.
    fn offer_keys(&mut self, prefix: GuidPrefix, now: Timestamp) {
        let Some(s) = self.security.as_mut() else {
            return;
        };
        if s.plugin.key_exchange_acked(prefix) {
            s.kx.remove(&prefix);
            return;
        }
        let Some(offer) = s.plugin.key_exchange_offer(prefix) else {
            s.kx.remove(&prefix);
            return;
        };
        let next = now.saturating_add(HANDSHAKE_RESEND_PERIOD);
        // The offer goes out with the next volatile SN or a later one (if answers to others
        // are queued before it); an ACKNACK past that SN acknowledges it — the remote only
        // learns SNs of messages to it, all of which carry our tokens.
        s.kx.insert(prefix, (next, s.volatile_sn + 1));
        self.work.arm(next);
        self.send_builtin(prefix, offer, Builtin::Volatile);
    }

    /// A DATA of a remote volatile-secure writer, decoded.
    fn on_volatile(&mut self, src: GuidPrefix, d: &codec::DataSub<'_>) {
        if !self
            .participants
            .get(&src)
            .is_some_and(|p| p.auth == AuthState::Authenticated)
        {
            self.stats.ignored_stateless_messages += 1;
            return;
        }
        let Some(s) = self.security.as_mut() else {
            return;
        };
        match s.plugin.on_volatile_message(src, d.payload.unwrap_or(&[])) {
            Ok(Some(reply)) => self.send_builtin(src, reply, Builtin::Volatile),
            Ok(None) => {}
            Err(_) => self.stats.rejected_protected_datagrams += 1,
        }
        // Acknowledged as a reliable volatile-secure reader does (the remote's writer stops
        // resending it).
        if let Some(s) = self.security.as_mut() {
            let seen = s.volatile_seen.entry(src).or_insert(0);
            *seen = (*seen).max(d.sn);
        }
        self.send_builtin(src, Vec::new(), Builtin::VolatileAck(d.sn + 1, d.sn));
        if let Some(s) = self.security.as_mut() {
            if s.plugin.key_exchange_acked(src) {
                s.kx.remove(&src);
            }
        }
        self.pump_endpoint_tokens(src);
    }

    /// Registers a new local user endpoint with the plugin (security on): notes whether its
    /// submessages are protected.
    pub(super) fn register_secure_endpoint(
        &mut self,
        guid: Guid,
        topic: &str,
        writer: bool,
    ) -> Result<(), EngineError> {
        let Some(s) = self.security.as_mut() else {
            return Ok(());
        };
        let p = s
            .plugin
            .register_local_endpoint(guid, topic, writer)
            .map_err(|_| EngineError::SecurityRefused)?;
        if p.payload {
            s.payload_local.push(guid.entity_id);
        }
        if p.submessages {
            s.sub_overhead = s.plugin.submessage_overhead();
            s.sub_local.push(guid.entity_id);
            if s.scratch2.len() < s.scratch.len() {
                s.scratch2 = vec![0u8; s.scratch.len()];
            }
        }
        Ok(())
    }

    /// A local user endpoint was deleted (security on).
    pub(super) fn unregister_secure_endpoint(&mut self, guid: Guid) {
        if let Some(s) = self.security.as_mut() {
            s.plugin.unregister_local_endpoint(guid);
            s.sub_local.retain(|e| *e != guid.entity_id);
            s.payload_local.retain(|e| *e != guid.entity_id);
        }
    }

    /// Whether the local writer `eid` protects its payloads.
    pub(super) fn protects_payload(&self, eid: EntityId) -> bool {
        self.security
            .as_ref()
            .is_some_and(|s| s.payload_local.contains(&eid))
    }

    /// Protects the payload of local writer `eid` into the scratch buffer it returns (give it
    /// back with [`Self::payload_scratch_back`]); `None` (counted) if the transform fails.
    pub(super) fn protect_payload(&mut self, eid: EntityId, plain: &[u8]) -> Option<Vec<u8>> {
        let ours = self.config.guid_prefix;
        let s = self.security.as_mut()?;
        let mut out = core::mem::take(&mut s.payload_tx);
        match s
            .plugin
            .encode_payload(Guid::new(ours, eid), plain, &mut out)
        {
            Ok(()) => Some(out),
            Err(_) => {
                s.payload_tx = out;
                self.stats.protection_failures += 1;
                None
            }
        }
    }

    /// Returns the scratch buffer of [`Self::protect_payload`].
    pub(super) fn payload_scratch_back(&mut self, buf: Vec<u8>) {
        if let Some(s) = self.security.as_mut() {
            s.payload_tx = buf;
        }
    }

    /// Whether the payloads of remote writer `writer` must be decoded.
    pub(super) fn payload_protected_remote(&self, writer: Guid) -> bool {
        self.security
            .as_ref()
            .is_some_and(|s| !s.payload_remote.is_empty() && s.payload_remote.contains_key(&writer))
    }

    /// Decodes the protected payload `encoded` of remote writer `writer` into the scratch
    /// buffer it returns with the plain length (give it back with
    /// [`Self::payload_rx_back`]); `None` (counted) if it fails.
    pub(super) fn unprotect_payload(
        &mut self,
        writer: Guid,
        encoded: &[u8],
    ) -> Option<(Vec<u8>, usize)> {
        let s = self.security.as_mut()?;
        let mut out = core::mem::take(&mut s.payload_rx);
        if out.len() < encoded.len() {
            out.resize(encoded.len(), 0);
        }
        match s.plugin.decode_payload(writer, encoded, &mut out) {
            Ok(n) => Some((out, n)),
            Err(_) => {
                s.payload_rx = out;
                self.stats.rejected_protected_datagrams += 1;
                None
            }
        }
    }

    /// Returns the scratch buffer of [`Self::unprotect_payload`].
    pub(super) fn payload_rx_back(&mut self, buf: Vec<u8>) {
        if let Some(s) = self.security.as_mut() {
            s.payload_rx = buf;
        }
    }

    /// Bytes kept free per submessage of local endpoint `eid` (its protection's).
    pub(super) fn sub_reserve(security: &Option<Security>, eid: EntityId) -> usize {
        match security {
            Some(s) if s.sub_overhead > 0 && s.sub_local.contains(&eid) => s.sub_overhead,
            _ => 0,
        }
    }

    /// A local endpoint `local` was matched with the remote endpoint `remote`: with
    /// submessage protection, the remote's submessages must arrive protected and our
    /// crypto tokens go to it.
    pub(super) fn secure_endpoint_matched(&mut self, local: Guid, remote: Guid) {
        let ours = self.config.guid_prefix;
        let Some(s) = self.security.as_mut() else {
            return;
        };
        let sub = s.sub_local.contains(&local.entity_id);
        let payload = s.payload_local.contains(&local.entity_id);
        if remote.prefix == ours || !(sub || payload) {
            return;
        }
        if sub {
            s.sub_remote.insert(remote, ());
        }
        if payload && !local.entity_id.is_writer() {
            s.payload_remote.insert(remote, ());
        }
        if let Some(m) = s.plugin.endpoint_tokens(local, remote) {
            s.ep_kx.entry(remote.prefix).or_default().queue.push_back(m);
            self.pump_endpoint_tokens(remote.prefix);
        }
    }

    /// A remote endpoint is gone (security on): its key material goes.
    pub(super) fn secure_endpoint_gone(&mut self, remote: Guid) {
        if let Some(s) = self.security.as_mut() {
            let sub = s.sub_remote.remove(&remote).is_some();
            if s.payload_remote.remove(&remote).is_some() || sub {
                s.plugin.forget_remote_endpoint(remote);
            }
        }
    }

    /// Sends the next endpoint-tokens message to `prefix` when none is in flight and the
    /// participant key exchange with it is done.
    fn pump_endpoint_tokens(&mut self, prefix: GuidPrefix) {
        let Some(s) = self.security.as_mut() else {
            return;
        };
        if s.kx.contains_key(&prefix) {
            return;
        }
        let Some(e) = s.ep_kx.get_mut(&prefix) else {
            return;
        };
        if e.sent.is_some() {
            return;
        }
        let Some(m) = e.queue.front().cloned() else {
            s.ep_kx.remove(&prefix);
            return;
        };
        let next = s.now.saturating_add(HANDSHAKE_RESEND_PERIOD);
        e.sent = Some((0, next));
        self.work.arm(next);
        self.send_builtin(prefix, m, Builtin::EndpointTokens);
    }

    /// Whether this participant protects RTPS messages.
    pub(super) fn protects_messages(&self) -> bool {
        self.security.as_ref().is_some_and(|s| s.protects)
    }

    /// Protects the datagram `buf[..len]` in place (security with message protection on):
    /// the submessages of protected local endpoints first, then the whole message; `None`
    /// (counted) if a transform fails.
    pub(super) fn protect_datagram(&mut self, buf: &mut [u8], len: usize) -> Option<usize> {
        let Some(s) = self.security.as_mut().filter(|s| s.protects) else {
            return Some(len);
        };
        if s.keep_plaintext {
            s.plain_sent.clear();
            s.plain_sent.extend_from_slice(&buf[..len]);
            s.plain_sent_len = Some(len);
            if !s.payload_local.is_empty() {
                s.clear_sent_payloads(len);
            }
        }
        let len = if s.sub_local.is_empty() {
            len
        } else {
            self.protect_submessages(buf, len)?
        };
        let s = self.security.as_mut()?;
        let dest = info_dst_of(&buf[..len]);
        match s.plugin.encode_message(&buf[..len], dest, &mut s.scratch) {
            Ok(n) if n <= buf.len() => {
                buf[..n].copy_from_slice(&s.scratch[..n]);
                self.stats.protected_datagrams_sent += 1;
                Some(n)
            }
            _ => {
                self.stats.protection_failures += 1;
                None
            }
        }
    }

    /// Replaces each submessage of a protected local endpoint in `buf[..len]` by its
    /// protected form; `None` (counted) if a transform fails or the result does not fit.
    fn protect_submessages(&mut self, buf: &mut [u8], len: usize) -> Option<usize> {
        let ours = self.config.guid_prefix;
        let s = self.security.as_mut()?;
        let mut scratch = core::mem::take(&mut s.scratch);
        let mut o = HDR;
        let mut any = false;
        let mut ok = scratch.len() >= HDR;
        if ok {
            scratch[..HDR].copy_from_slice(&buf[..HDR]);
        }
        // The participant the submessages that follow go to (INFO_DST).
        let mut dest = None;
        for (id, start, end) in sub_ends(&buf[..len]) {
            if !ok {
                break;
            }
            let sub = &buf[start..end];
            if id == 0x0e {
                dest = info_dst_prefix(sub);
            }
            let protected = submessage_endpoint(sub)
                .map(|(eid, _)| eid)
                .filter(|eid| s.sub_local.contains(eid));
            if let Some(eid) = protected {
                match s.plugin.encode_submessage(
                    Guid::new(ours, eid),
                    sub,
                    dest,
                    scratch.get_mut(o..).unwrap_or(&mut []),
                ) {
                    Ok(n) => {
                        o += n;
                        any = true;
                    }
                    Err(_) => ok = false,
                }
            } else if let Some(d) = scratch.get_mut(o..o + sub.len()) {
                d.copy_from_slice(sub);
                o += sub.len();
            } else {
                ok = false;
            }
        }
        let r = if !ok || o > buf.len() {
            self.stats.protection_failures += 1;
            None
        } else {
            if any {
                buf[..o].copy_from_slice(&scratch[..o]);
            }
            Some(if any { o } else { len })
        };
        if let Some(s) = self.security.as_mut() {
            s.scratch = scratch;
        }
        r
    }

    /// Receives a datagram when this participant protects RTPS messages: decodes a
    /// protected message, then the protected submessages (volatile-secure ones and those of
    /// remote endpoints), and interprets the result; returns `false` when the datagram is
    /// to be interpreted as it is (in clear).
    pub(super) fn receive_protected(&mut self, now: Timestamp, datagram: &[u8]) -> bool {
        if datagram.len() < HDR + 4 {
            return false;
        }
        let mut p = [0u8; 12];
        p.copy_from_slice(&datagram[8..20]);
        let src = GuidPrefix(p);
        if src == self.config.guid_prefix {
            // Our own datagram looped back: never a remote's.
            return true;
        }
        let Some(s) = self.security.as_mut() else {
            return false;
        };
        let message = datagram[HDR] == SRTPS_PREFIX;
        let filter = !s.sub_remote.is_empty();
        if !message && !filter && !sub_ends(datagram).any(|(id, _, _)| id == SEC_PREFIX) {
            return false;
        }
        let mut scratch = core::mem::take(&mut s.scratch);
        let mut scratch2 = core::mem::take(&mut s.scratch2);
        // The message transform first: the result is in `scratch`.
        let decoded = if !message {
            Some(0)
        } else if scratch.len() < datagram.len() {
            None
        } else {
            s.plugin.decode_message(src, datagram, &mut scratch).ok()
        };
        let result = match decoded {
            None => None,
            Some(n) => {
                let plain: &[u8] = if message { &scratch[..n] } else { datagram };
                if message {
                    self.stats.protected_datagrams_received += 1;
                }
                let s = self.security.as_mut();
                let needs_pass = filter || sub_ends(plain).any(|(id, _, _)| id == SEC_PREFIX);
                match s {
                    Some(s) if needs_pass => {
                        if scratch2.len() < plain.len() {
                            scratch2.resize(plain.len().max(SCRATCH_MIN), 0);
                        }
                        let pass = unprotect_submessages(s, src, plain, message, &mut scratch2);
                        self.stats.unprotected_submessages_dropped += pass.dropped;
                        self.stats.rejected_protected_datagrams += pass.rejected;
                        let origin = if message {
                            Origin::Message
                        } else if pass.volatile {
                            Origin::Volatile
                        } else {
                            Origin::Clear
                        };
                        Some((true, pass.len, origin, message || pass.decoded))
                    }
                    _ => Some((false, n, Origin::Message, true)),
                }
            }
        };
        match result {
            Some((second, n, origin, decoded)) => {
                let plain: &[u8] = if second {
                    &scratch2[..n]
                } else {
                    &scratch[..n]
                };
                // (The clear form of what was protected: a datagram in clear has none.)
                if let Some(s) = self
                    .security
                    .as_mut()
                    .filter(|s| s.keep_plaintext && decoded)
                {
                    s.plain_received.clear();
                    s.plain_received.extend_from_slice(plain);
                    s.plain_received_len = Some(n);
                    if !s.payload_remote.is_empty() {
                        s.clear_received_payloads(n);
                    }
                }
                self.interpret(now, plain, origin);
            }
            None => self.stats.rejected_protected_datagrams += 1,
        }
        if let Some(s) = self.security.as_mut() {
            s.scratch = scratch;
            s.scratch2 = scratch2;
        }
        true
    }

    /// Whether a submessage from a datagram of `origin` may be interpreted: with message
    /// protection, clear datagrams carry only SPDP and stateless traffic, and volatile-secure
    /// DATA only come decoded.
    pub(super) fn admits(&mut self, origin: Origin, sub: &Sub<'_>) -> bool {
        let writer = match sub {
            Sub::Data(d) => Some(d.writer_id),
            Sub::DataFrag(f) => Some(f.writer_id),
            _ => None,
        };
        // The remote endpoint that sent it.
        let sender = match sub {
            Sub::Data(d) => Some(d.writer_id),
            Sub::DataFrag(f) => Some(f.writer_id),
            Sub::Heartbeat { writer_id, .. }
            | Sub::HeartbeatFrag { writer_id, .. }
            | Sub::Gap { writer_id, .. } => Some(*writer_id),
            Sub::AckNack { reader_id, .. } | Sub::NackFrag { reader_id, .. } => Some(*reader_id),
            _ => None,
        };
        if writer == Some(VOLATILE_SECURE_WRITER) {
            if origin == Origin::Volatile {
                return true;
            }
            self.stats.unprotected_submessages_dropped += 1;
            return false;
        }
        if origin != Origin::Clear || !self.protects_messages() {
            return true;
        }
        if sender.is_some_and(|e| CLEAR_BUILTINS.contains(&e.0)) {
            return true;
        }
        self.stats.unprotected_submessages_dropped += 1;
        false
    }

    /// A decoded ACKNACK of a remote volatile-secure reader (a reliable one, as Cyclone
    /// DDS's): acknowledges our offer once it is past the offer's SN.
    pub(super) fn on_volatile_acknack(&mut self, src: GuidPrefix, base: i64) {
        if let Some(s) = self.security.as_mut() {
            if s.kx.get(&src).is_some_and(|&(_, sn)| base > sn) {
                s.kx.remove(&src);
            }
            if let Some(e) = s.ep_kx.get_mut(&src) {
                if e.sent.is_some_and(|(sn, _)| sn > 0 && base > sn) {
                    e.sent = None;
                    e.queue.pop_front();
                }
            }
        }
        self.pump_endpoint_tokens(src);
    }

    /// A decoded HEARTBEAT of a remote volatile-secure writer (a reliable one, as Cyclone
    /// DDS's): the SNs it announces beyond the highest one seen here are asked for again. A
    /// message that could not be decoded yet (it came before the handshake completed here,
    /// so without the KxKeys) is then resent; the writer answers those meant for other
    /// participants with a GAP.
    pub(super) fn on_volatile_heartbeat(&mut self, src: GuidPrefix, first: i64, last: i64) {
        let Some(s) = self.security.as_mut() else {
            return;
        };
        if !self
            .participants
            .get(&src)
            .is_some_and(|p| p.auth == AuthState::Authenticated)
        {
            return;
        }
        let seen = s.volatile_seen.get(&src).copied().unwrap_or(0);
        if last > seen {
            let base = first.max(seen + 1).max(1);
            self.send_builtin(src, Vec::new(), Builtin::VolatileAck(base, last));
        }
    }

    /// A decoded GAP of a remote volatile-secure writer: SNs not meant for us (messages to
    /// other participants) count as seen.
    pub(super) fn on_volatile_gap(&mut self, src: GuidPrefix, start: i64, list_base: i64) {
        if let Some(s) = self.security.as_mut() {
            if let Some(seen) = s.volatile_seen.get_mut(&src) {
                if start <= *seen + 1 {
                    *seen = (*seen).max(list_base - 1);
                }
            } else if start <= 1 {
                s.volatile_seen.insert(src, list_base - 1);
            }
        }
    }

    /// Hands a decoded volatile-secure DATA to the plugin.
    pub(super) fn on_volatile_data(&mut self, src: GuidPrefix, d: &codec::DataSub<'_>) {
        if d.reader_id != EntityId::UNKNOWN && d.reader_id != VOLATILE_SECURE_READER {
            self.stats.unmatched_submessages += 1;
            return;
        }
        self.on_volatile(src, d);
    }

    fn authenticated(&mut self, prefix: GuidPrefix, now: Timestamp) {
        let Some(p) = self.participants.get_mut(&prefix) else {
            return;
        };
        let was_pending = matches!(
            p.auth,
            AuthState::Pending {
                initiator: true,
                ..
            }
        );
        if p.auth == AuthState::Authenticated {
            return;
        }
        p.auth = AuthState::Authenticated;
        let set = p.data.builtin_endpoints;
        if let Some(s) = self.security.as_mut() {
            if was_pending {
                s.pending -= 1;
            }
        }
        self.stats.authenticated_participants += 1;
        self.events
            .push_back(Event::ParticipantAuthenticated { prefix });
        // Our participant crypto tokens first: endpoint tokens (secure builtin endpoints are
        // matched next) wait until the remote acknowledges them.
        if self.protects_messages() {
            self.offer_keys(prefix, now);
        }
        self.match_builtins(prefix, set);
        self.start_handshakes(now);
    }

    fn auth_failed(&mut self, prefix: GuidPrefix, f: SecurityFailure, now: Timestamp) {
        match f.kind {
            SecurityFailureKind::Authentication => self.stats.authentication_failures += 1,
            SecurityFailureKind::AccessControl => self.stats.access_denied_participants += 1,
            SecurityFailureKind::Cryptography => self.stats.rejected_protected_datagrams += 1,
        }
        if self.auth_failures.len() >= MAX_AUTH_FAILURES {
            self.auth_failures.pop_front();
        }
        self.auth_failures.push_back((prefix, f.reason));
        self.events
            .push_back(Event::ParticipantAuthenticationFailed { prefix });
        if !f.fatal {
            return;
        }
        let Some(p) = self.participants.get_mut(&prefix) else {
            return;
        };
        let was_pending = matches!(
            p.auth,
            AuthState::Pending {
                initiator: true,
                ..
            }
        );
        p.auth = AuthState::Failed;
        if let Some(s) = self.security.as_mut() {
            if was_pending {
                s.pending -= 1;
            }
            s.plugin.forget(prefix);
            s.reassembly.remove(&prefix);
        }
        self.start_handshakes(now);
    }

    /// A remote participant was removed: its handshake state goes.
    pub(super) fn security_forget(&mut self, prefix: GuidPrefix, auth: &AuthState, now: Timestamp) {
        let Some(s) = self.security.as_mut() else {
            return;
        };
        s.plugin.forget(prefix);
        s.reassembly.remove(&prefix);
        s.kx.remove(&prefix);
        s.ep_kx.remove(&prefix);
        s.volatile_seen.remove(&prefix);
        s.sub_remote.retain(|g, _| g.prefix != prefix);
        s.payload_remote.retain(|g, _| g.prefix != prefix);
        if matches!(
            auth,
            AuthState::Pending {
                initiator: true,
                ..
            }
        ) {
            s.pending -= 1;
            self.start_handshakes(now);
        }
    }

    /// Whether a stateless submessage from `src` to `reader` is to be handled (counts it
    /// otherwise).
    fn stateless_accepted(&mut self, src: GuidPrefix, reader: EntityId) -> bool {
        if (reader != EntityId::UNKNOWN && reader != STATELESS_READER) || self.security.is_none() {
            self.stats.unmatched_submessages += 1;
            return false;
        }
        let state = self.participants.get(&src).map(|p| &p.auth);
        if !matches!(
            state,
            Some(AuthState::Pending { .. } | AuthState::Authenticated)
        ) {
            self.stats.ignored_stateless_messages += 1;
            return false;
        }
        true
    }

    /// A DATA from a remote stateless writer.
    pub(super) fn on_stateless(&mut self, src: GuidPrefix, d: &codec::DataSub<'_>, now: Timestamp) {
        if !self.stateless_accepted(src, d.reader_id) {
            return;
        }
        if let Some(s) = self.security.as_mut() {
            let out = s.plugin.on_message(src, d.payload.unwrap_or(&[]), now);
            self.handshake_result(src, out, now);
        }
    }

    /// A DATA_FRAG from a remote stateless writer (handshake messages larger than the
    /// sender's fragment size: Cyclone DDS fragments at 1344 bytes by default).
    pub(super) fn on_stateless_frag(
        &mut self,
        src: GuidPrefix,
        f: &codec::DataFragSub<'_>,
        now: Timestamp,
    ) {
        if !self.stateless_accepted(src, f.reader_id) {
            return;
        }
        let budget = self.reasm_budget.clone();
        let Some(s) = self.security.as_mut() else {
            return;
        };
        let frag = FragmentRef {
            sn: f.sn,
            offset: f.offset,
            data: f.data,
            sample_size: f.sample_size,
            fragment_size: f.fragment_size,
            meta: None,
            source_timestamp: None,
        };
        let r = s
            .reassembly
            .entry(src)
            .or_insert_with(|| Reassembler::new(STATELESS_REASSEMBLY, budget));
        r.drop_started_before(Timestamp(
            now.0
                .saturating_sub(STATELESS_REASSEMBLY.best_effort_timeout.as_nanos() as u64),
        ));
        match r.add(&frag, false, now) {
            Ok(Some(c)) => {
                let out = s.plugin.on_message(src, &c.payload, now);
                self.handshake_result(src, out, now);
            }
            Ok(None) => {}
            Err(_) => self.stats.rejected_fragments += 1,
        }
    }

    /// Handshake timers: resends and timeouts.
    pub(super) fn security_timeout(&mut self, now: Timestamp) {
        let Some(s) = self.security.as_mut() else {
            return;
        };
        s.now = now;
        let mut resend = Vec::new();
        let mut expired = Vec::new();
        for (k, p) in self.participants.iter_mut() {
            if let AuthState::Pending {
                started,
                outstanding,
                next_resend,
                ..
            } = &mut p.auth
            {
                if now >= started.saturating_add(HANDSHAKE_TIMEOUT) {
                    expired.push(*k);
                } else if now >= *next_resend {
                    if let Some(m) = outstanding {
                        resend.push((*k, m.clone()));
                    }
                    *next_resend = now.saturating_add(HANDSHAKE_RESEND_PERIOD);
                }
            }
        }
        resend.sort_unstable();
        expired.sort_unstable();
        let mut offers: Vec<GuidPrefix> = self
            .security
            .as_ref()
            .map(|s| {
                s.kx.iter()
                    .filter(|(_, (t, _))| now >= *t)
                    .map(|(k, _)| *k)
                    .collect()
            })
            .unwrap_or_default();
        offers.sort_unstable();
        for k in offers {
            self.stats.handshake_resends += 1;
            self.offer_keys(k, now);
        }
        let mut tokens: Vec<GuidPrefix> = self
            .security
            .as_mut()
            .map(|s| {
                s.ep_kx
                    .iter_mut()
                    .filter(|(_, e)| e.sent.is_some_and(|(_, t)| now >= t))
                    .map(|(k, e)| {
                        e.sent = None;
                        *k
                    })
                    .collect()
            })
            .unwrap_or_default();
        tokens.sort_unstable();
        for k in tokens {
            self.stats.handshake_resends += 1;
            self.pump_endpoint_tokens(k);
        }
        for (k, m) in resend {
            self.stats.handshake_resends += 1;
            self.send_stateless(k, m);
        }
        for k in expired {
            let f = SecurityFailure {
                kind: SecurityFailureKind::Authentication,
                fatal: true,
                reason: format!(
                    "handshake not completed within {} s",
                    HANDSHAKE_TIMEOUT.as_secs()
                ),
            };
            self.auth_failed(k, f, now);
        }
    }

    /// The earliest handshake deadline.
    pub(super) fn security_deadline(&self) -> Option<Timestamp> {
        let s = self.security.as_ref()?;
        let kx =
            s.kx.values()
                .map(|(t, _)| *t)
                .chain(s.ep_kx.values().filter_map(|e| e.sent.map(|(_, t)| t)))
                .min();
        let hs = self
            .participants
            .values()
            .filter_map(|p| match &p.auth {
                AuthState::Pending {
                    started,
                    next_resend,
                    ..
                } => Some((*next_resend).min(started.saturating_add(HANDSHAKE_TIMEOUT))),
                _ => None,
            })
            .min();
        match (kx, hs) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Builds the next stateless message datagram, if any: INFO_DST and a DATA, or one
    /// DATA_FRAG of a message too large for one datagram.
    pub(super) fn transmit_stateless(
        &mut self,
        buf: &mut [u8],
        limit: usize,
        out: &mut Vec<Locator>,
    ) -> Option<usize> {
        let ours = self.config.guid_prefix;
        let s = self.security.as_mut()?;
        loop {
            if s.train.is_none() {
                let (dests, to, payload, kind) = s.queue.pop_front()?;
                if let Builtin::VolatileAck(base, last) = kind {
                    // INFO_DST and our volatile-secure reader's ACKNACK, protected.
                    s.volatile_ack_count = s.volatile_ack_count.wrapping_add(1);
                    let mut set = SnSet::new(base);
                    for sn in base..=last.min(base + 255) {
                        set.insert(sn);
                    }
                    let mut e = Emitter::new(buf, limit, ours)?;
                    if !(e.info_dst(to)
                        && e.acknack(
                            VOLATILE_SECURE_READER,
                            VOLATILE_SECURE_WRITER,
                            &set,
                            s.volatile_ack_count,
                            set.is_empty(),
                        ))
                    {
                        continue;
                    }
                    let len = e.len();
                    match s.plugin.encode_volatile(to, &buf[36..len], &mut s.scratch) {
                        Ok(n) if 36 + n <= limit => {
                            if s.keep_plaintext {
                                s.plain_sent.clear();
                                s.plain_sent.extend_from_slice(&buf[..len]);
                                s.plain_sent_len = Some(len);
                            }
                            buf[36..36 + n].copy_from_slice(&s.scratch[..n]);
                            fill_dests(out, dests.iter());
                            return Some(36 + n);
                        }
                        _ => {
                            self.stats.protection_failures += 1;
                            continue;
                        }
                    }
                }
                if kind != Builtin::Stateless {
                    s.volatile_sn += 1;
                    if kind == Builtin::EndpointTokens {
                        if let Some((sn, _)) = s.ep_kx.get_mut(&to).and_then(|e| e.sent.as_mut()) {
                            *sn = s.volatile_sn;
                        }
                    }
                    let mut e = Emitter::new(buf, limit, ours)?;
                    if !(e.info_dst(to)
                        && e.data(
                            VOLATILE_SECURE_READER,
                            VOLATILE_SECURE_WRITER,
                            s.volatile_sn,
                            None,
                            0,
                            &payload,
                            false,
                        ))
                    {
                        continue;
                    }
                    let data_end = e.len();
                    // A HEARTBEAT announcing this SN as the first available, so that a
                    // reliable volatile-secure reader (Cyclone DDS's) delivers it without
                    // waiting for earlier offers that were lost, and ACKNACKs it (which
                    // acknowledges the offer).
                    let count = i32::try_from(s.volatile_sn).unwrap_or(i32::MAX);
                    if !e.heartbeat(
                        VOLATILE_SECURE_READER,
                        VOLATILE_SECURE_WRITER,
                        s.volatile_sn,
                        s.volatile_sn,
                        count,
                        false,
                    ) {
                        continue;
                    }
                    let len = e.len();
                    if s.keep_plaintext {
                        s.plain_sent.clear();
                        s.plain_sent.extend_from_slice(&buf[..len]);
                    }
                    // Header (20) and INFO_DST (16) stay; DATA and HEARTBEAT are protected
                    // one by one.
                    let n1 = s
                        .plugin
                        .encode_volatile(to, &buf[36..data_end], &mut s.scratch);
                    let n = n1.and_then(|n1| {
                        let b = &mut s.scratch[n1..];
                        s.plugin
                            .encode_volatile(to, &buf[data_end..len], b)
                            .map(|n2| n1 + n2)
                    });
                    match n {
                        Ok(n) if 36 + n <= limit => {
                            buf[36..36 + n].copy_from_slice(&s.scratch[..n]);
                            if s.keep_plaintext {
                                s.plain_sent_len = Some(len);
                            }
                            self.stats.sent_data += 1;
                            fill_dests(out, dests.iter());
                            return Some(36 + n);
                        }
                        _ => {
                            self.stats.protection_failures += 1;
                            continue;
                        }
                    }
                }
                s.stateless_sn += 1;
                // Header, INFO_DST, DATA.
                if 20 + 16 + Emitter::data_len(false, false, payload.len()) <= limit {
                    let mut e = Emitter::new(buf, limit, ours)?;
                    if e.info_dst(to)
                        && e.data(
                            STATELESS_READER,
                            STATELESS_WRITER,
                            s.stateless_sn,
                            None,
                            0,
                            &payload,
                            false,
                        )
                    {
                        self.stats.sent_data += 1;
                        fill_dests(out, dests.iter());
                        return Some(e.len());
                    }
                    continue;
                }
                // Header, INFO_DST, DATA_FRAG header; a multiple of 4.
                let fragment_size =
                    (limit.saturating_sub(20 + 16 + 36 + 4)).min(STATELESS_FRAGMENT) & !3;
                if fragment_size < MIN_FRAGMENT || payload.len() > u32::MAX as usize {
                    // Cannot be sent (its handshake times out).
                    continue;
                }
                s.train = Some(Train {
                    dests,
                    to,
                    payload,
                    sn: s.stateless_sn,
                    next: 0,
                    fragment_size,
                });
            }
            let t = s.train.as_mut()?;
            let start = t.next * t.fragment_size;
            let end = (start + t.fragment_size).min(t.payload.len());
            let mut e = Emitter::new(buf, limit, ours)?;
            let ok = e.info_dst(t.to)
                && e.data_frag(
                    STATELESS_READER,
                    STATELESS_WRITER,
                    t.sn,
                    None,
                    0,
                    (t.next + 1) as u32,
                    t.fragment_size as u16,
                    t.payload.len() as u32,
                    &t.payload[start..end],
                    false,
                );
            t.next += 1;
            let done = end >= t.payload.len();
            if ok {
                fill_dests(out, t.dests.iter());
            }
            if done {
                s.train = None;
            }
            if ok {
                self.stats.sent_data += 1;
                return Some(e.len());
            }
        }
    }
}
