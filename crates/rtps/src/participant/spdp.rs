//! Participant discovery (SPDP): remote participants, their leases and
//! leaving.

use super::*;

#[derive(Debug)]
pub(super) struct RemoteParticipant {
    pub(super) data: SpdpData,
    pub(super) last_heard: Timestamp,
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
        let gone: Vec<GuidPrefix> = prefixes
            .iter()
            .copied()
            .filter(|p| self.participants.remove(p).is_some())
            .collect();
        if gone.is_empty() {
            return;
        }
        let set: std::collections::HashSet<GuidPrefix> = gone.iter().copied().collect();
        if self.heard.is_some_and(|(p, _)| set.contains(&p)) {
            self.heard = None;
        }
        for i in [IDX_SEDP_PUB, IDX_SEDP_SUB] {
            if let Some(w) = self.writers[i].as_mut() {
                w.proxies.retain(|p| !set.contains(&p.guid.prefix));
                w.proxies_changed();
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
        if let Some(p) = self.participants.get_mut(&prefix) {
            p.last_heard = now;
            if p.data != data {
                let set = data.builtin_endpoints;
                // The lease duration may have shrunk.
                self.work.arm(now.saturating_add(data.lease_duration));
                self.next_lease_check = self
                    .next_lease_check
                    .min(now.saturating_add(data.lease_duration));
                p.data = data;
                self.match_builtins(prefix, set);
                self.refresh_locators(prefix);
            }
            return;
        }
        if self.participants.len() >= self.config.peer_limits.max_remote_participants {
            self.stats.refused_participants += 1;
            return;
        }
        let set = data.builtin_endpoints;
        self.work.arm(now.saturating_add(data.lease_duration));
        self.next_lease_check = self
            .next_lease_check
            .min(now.saturating_add(data.lease_duration));
        self.participants.insert(
            prefix,
            RemoteParticipant {
                data,
                last_heard: now,
            },
        );
        self.events
            .push_back(Event::ParticipantDiscovered { prefix });
        let dests = self.locators_for(prefix, &[], true);
        if !dests.is_empty() {
            self.spdp_queue.push_back(dests);
        }
        self.match_builtins(prefix, set);
    }
}
