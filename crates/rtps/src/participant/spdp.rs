//! Participant discovery (SPDP): remote participants, their leases,
//! leaving, and restarts (a new incarnation of a known GUID prefix).
//!
//! # Incarnations
//!
//! DDSI-RTPS requires GUIDs to be unique but says nothing of a participant
//! that crashes and comes back with the same GUID prefix (a process with a
//! configured prefix): for the protocol it is the same participant, whose
//! writers' sequence numbers and HEARTBEAT/ACKNACK counts went backwards, so
//! its peers, which remember higher ones, drop what it sends as old
//! (§8.4.10.4, §8.3.7.5, §8.3.7.1) — and since every datagram it sends renews
//! the lease of the participant they remember, that state never expires. The
//! only ends the specification gives a participant are its lease (the
//! leaseDuration of its SPDP data, §8.5.3) and its disposal.
//!
//! An SPDP announcement from a known prefix is therefore classified
//! ([`Announcement`]):
//!
//! - A FerroDDS participant announces an *incarnation* stamp (vendor-specific
//!   parameter; the wall clock at creation). A larger stamp than the one
//!   known is a restart: the old incarnation is removed at once (its
//!   endpoints unmatched, every proxy dropped, [`Event::ParticipantLost`]) and
//!   the announcement is handled as a new participant's.
//! - A smaller stamp, or the same one (or none) with a lower SPDP sequence
//!   number than the last announcement, is stale: a replay of old traffic, a
//!   reordered datagram — or a restart that cannot be told from either (an
//!   implementation without the stamp, a wall clock that went backwards). It
//!   changes nothing, and from then on only the known incarnation's own
//!   announcements renew its lease, not every datagram with its prefix: a live
//!   participant announces itself several times per lease and stays; a dead
//!   one ends by its lease although its successor talks, and the successor is
//!   then discovered as new. (Without stamps this holds only while the
//!   successor's sequence numbers stay below the old run's last: once they
//!   catch up, nothing tells them apart. The FerroDDS runtime always stamps;
//!   other implementations derive a new prefix for every run.)
//!
//! Why not take a lower sequence number as a restart at once: anyone who
//! captured one announcement could then tear a live participant down (and
//! every match of it) by replaying it. With the stamp, replayed traffic only
//! ever carries the live incarnation's stamp or an earlier one, and is
//! ignored; forging a later stamp needs no replay — but an unauthenticated
//! forger can equally forge a disposal, which only DDS-Security prevents.
//! SPDP disposals carry the stamp too: one of an earlier incarnation is stale.
//! (Replayed *user data* of an earlier incarnation whose sequence numbers lie
//! beyond the new incarnation's is indistinguishable from new data; only
//! message authentication, DDS-Security, rejects it.)

use super::*;

#[derive(Debug)]
pub(super) struct RemoteParticipant {
    pub(super) data: SpdpData,
    pub(super) last_heard: Timestamp,
    /// SPDP sequence number of its latest announcement.
    pub(super) spdp_sn: i64,
    /// When it last announced itself.
    pub(super) announced_at: Timestamp,
    /// Stale announcements came in since then (possibly another incarnation
    /// of this prefix): only its own announcements renew its lease, not every
    /// datagram with its prefix.
    pub(super) contested: bool,
    /// Authentication (security on; `Unauthenticated` without security).
    pub(super) auth: AuthState,
}

/// An SPDP announcement from a known GUID prefix, compared with what it last
/// announced (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Announcement {
    /// The known incarnation (again, or with changed data).
    Current,
    /// A later incarnation: the known one restarted.
    Newer,
    /// Older than what is known: ignored.
    Stale,
}

impl RemoteParticipant {
    fn new(data: SpdpData, sn: i64, now: Timestamp, auth: AuthState) -> Self {
        Self {
            data,
            last_heard: now,
            spdp_sn: sn,
            announced_at: now,
            contested: false,
            auth,
        }
    }

    fn classify(&self, incarnation: Option<u64>, sn: i64) -> Announcement {
        match (self.data.incarnation, incarnation) {
            (Some(known), Some(i)) if i > known => Announcement::Newer,
            (Some(known), Some(i)) if i < known => Announcement::Stale,
            (None, Some(_)) => Announcement::Newer,
            (Some(_), None) => Announcement::Stale,
            _ if sn < self.spdp_sn => Announcement::Stale,
            _ => Announcement::Current,
        }
    }

    /// Whether a disposal carrying `incarnation` is of an earlier incarnation.
    fn stale_disposal(&self, incarnation: Option<u64>) -> bool {
        matches!((self.data.incarnation, incarnation), (Some(known), Some(i)) if i < known)
    }
}

impl Participant {
    /// Queues an SPDP dispose (`DATA(p[UD])`) to the SPDP destinations and to
    /// every known participant, so peers drop us without waiting for the
    /// lease. Call before dropping the participant, then drain `poll_transmit`.
    pub fn announce_leave(&mut self) {
        let mut dests = self.config.spdp_destinations.clone();
        let prefixes: Vec<GuidPrefix> = self.participants.keys().copied().collect();
        for p in prefixes {
            dests.extend(self.locators_for(p, &[], true));
        }
        let dests = dedup(dests);
        if !dests.is_empty() {
            self.leave_queue.push_back(dests);
        }
    }

    /// GUID prefixes of the currently known remote participants.
    pub fn discovered_participants(&self) -> Vec<GuidPrefix> {
        let mut v: Vec<_> = self.participants.keys().copied().collect();
        v.sort_unstable();
        v
    }

    pub(super) fn remove_participant(&mut self, prefix: GuidPrefix) {
        self.remove_participants(&[prefix]);
    }

    /// Removes remote participants (in the order given) with one pass over
    /// the builtin proxies and remote endpoints, however many there are: the
    /// thousands of participants a flood announced expire together.
    pub(super) fn remove_participants(&mut self, prefixes: &[GuidPrefix]) {
        let mut removed: Vec<(GuidPrefix, AuthState)> = Vec::new();
        // Their shared-memory locators: told to the chunk reader once their writers are
        // gone (which copies out what readers hold of theirs by reference first).
        let mut shm_gone: Vec<Locator> = Vec::new();
        for p in prefixes {
            if let Some(r) = self.participants.remove(p) {
                if self.chunk_reader.is_some() {
                    shm_gone.extend(
                        r.data
                            .default_unicast
                            .iter()
                            .chain(&r.data.metatraffic_unicast)
                            .filter(|l| l.kind == Locator::KIND_FERRODDS_SHM),
                    );
                }
                removed.push((*p, r.auth));
            }
        }
        let gone: Vec<GuidPrefix> = removed.iter().map(|(p, _)| *p).collect();
        // (No `now` here: the pending deadline stands in for it when a freed handshake
        // slot starts a queued handshake; it only shifts that handshake's timeout.)
        let now = self.work.timeout;
        for (p, auth) in &removed {
            self.security_forget(*p, auth, now);
        }
        if gone.is_empty() {
            return;
        }
        let set: std::collections::HashSet<GuidPrefix> = gone.iter().copied().collect();
        if self.heard.is_some_and(|(p, _)| set.contains(&p)) {
            self.heard = None;
        }
        for i in 0..self.first_user {
            if let Some(w) = self.writers[i].as_mut() {
                w.retain_proxies(|p| !set.contains(&p.guid.prefix));
            }
            if let Some(r) = self.readers[i].as_mut() {
                r.proxies.retain(|p| !set.contains(&p.guid.prefix));
            }
        }
        let mut ws: Vec<Guid> = self
            .remote_writers
            .keys()
            .filter(|g| set.contains(&g.prefix))
            .copied()
            .collect();
        ws.sort_unstable();
        for g in ws {
            self.remove_remote_writer(g);
        }
        let mut rs: Vec<Guid> = self
            .remote_readers
            .keys()
            .filter(|g| set.contains(&g.prefix))
            .copied()
            .collect();
        rs.sort_unstable();
        for g in rs {
            self.remove_remote_reader(g);
        }
        if let Some(cr) = self.chunk_reader.as_mut() {
            // Their shared memory is not read again: the reader unmaps it.
            for l in &shm_gone {
                cr.peer_gone(l);
            }
        }
        for prefix in gone {
            self.events.push_back(Event::ParticipantLost { prefix });
        }
    }

    /// Writes the lease renewal cached in `heard` back to `participants`.
    pub(super) fn flush_heard(&mut self) {
        if let Some((prefix, t)) = self.heard.take() {
            if let Some(p) = self.participants.get_mut(&prefix) {
                p.last_heard = p.last_heard.max(t);
            }
        }
    }

    pub(super) fn on_spdp(
        &mut self,
        src: GuidPrefix,
        d: &codec::DataSub<'_>,
        iq: codec::InlineQos,
        now: Timestamp,
    ) {
        let payload = d.payload.unwrap_or(&[]);
        if iq.status_info & 3 != 0 {
            let prefix = iq
                .key_hash
                .map(|k| Guid::from_bytes(k).prefix)
                .or_else(|| discovery::key_guid(payload).map(|g| g.prefix))
                .unwrap_or(src);
            if prefix == src && prefix != self.config.guid_prefix {
                if self
                    .participants
                    .get(&prefix)
                    .is_some_and(|p| p.stale_disposal(discovery::key_incarnation(payload)))
                {
                    self.stats.stale_announcements += 1;
                    return;
                }
                self.remove_participant(prefix);
            } else if prefix != src {
                // Anyone could name another participant (or us): it ends by
                // its own disposal or its lease.
                self.stats.foreign_disposes += 1;
            }
            return;
        }
        let Some(data) = SpdpData::decode(payload) else {
            self.stats.malformed_datagrams += 1;
            return;
        };
        let prefix = data.guid_prefix;
        if prefix == self.config.guid_prefix
            || data.protocol_major != 2
            || data
                .domain_id
                .is_some_and(|dom| dom != self.config.domain_id)
            || !data.domain_tag_empty
        {
            return;
        }
        let sn = d.sn;
        if let Some(p) = self.participants.get_mut(&prefix) {
            match p.classify(data.incarnation, sn) {
                Announcement::Current => {}
                Announcement::Stale => {
                    self.stats.stale_announcements += 1;
                    if !p.contested {
                        // Its lease counts from its own last announcement
                        // (this datagram renewed it on arrival).
                        p.contested = true;
                        p.last_heard = p.announced_at;
                        let end = p.announced_at.saturating_add(p.data.lease_duration);
                        self.next_lease_check = self.next_lease_check.min(end);
                        self.work.arm(end);
                    }
                    if self.heard.is_some_and(|(h, _)| h == prefix) {
                        self.heard = None;
                    }
                    return;
                }
                Announcement::Newer => {
                    self.stats.participant_restarts += 1;
                    self.remove_participant(prefix);
                    return self.add_participant(data, sn, now);
                }
            }
            p.last_heard = now;
            p.announced_at = now;
            p.spdp_sn = sn;
            p.contested = false;
            if p.data != data {
                let set = data.builtin_endpoints;
                // The lease duration may have shrunk.
                self.work.arm(now.saturating_add(data.lease_duration));
                self.next_lease_check = self
                    .next_lease_check
                    .min(now.saturating_add(data.lease_duration));
                p.data = data;
                if p.auth.admits_discovery() {
                    self.match_builtins(prefix, set);
                }
                self.refresh_locators(prefix);
            }
            return;
        }
        self.add_participant(data, sn, now);
    }

    /// A participant not known (any more) announced itself with SPDP
    /// sequence number `sn`.
    fn add_participant(&mut self, data: SpdpData, sn: i64, now: Timestamp) {
        if self.participants.len() >= self.config.peer_limits.max_remote_participants {
            self.stats.refused_participants += 1;
            return;
        }
        let Some(auth) = self.initial_auth(&data) else {
            return;
        };
        let prefix = data.guid_prefix;
        let set = data.builtin_endpoints;
        self.work.arm(now.saturating_add(data.lease_duration));
        self.next_lease_check = self
            .next_lease_check
            .min(now.saturating_add(data.lease_duration));
        let admitted = auth.admits_discovery();
        self.participants
            .insert(prefix, RemoteParticipant::new(data, sn, now, auth));
        self.events
            .push_back(Event::ParticipantDiscovered { prefix });
        let dests = self.locators_for(prefix, &[], true);
        if !dests.is_empty() {
            self.spdp_queue.push_back(dests);
        }
        if admitted {
            self.match_builtins(prefix, set);
        } else {
            self.queue_handshake(prefix, now);
        }
    }
}
