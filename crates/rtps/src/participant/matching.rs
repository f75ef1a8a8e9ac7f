//! Endpoint matching: destination locators, local/remote writer–reader
//! matching, builtin (SEDP) endpoint matching and SEDP-driven changes.

use super::*;

impl Participant {
    pub(super) fn locators_for(
        &self,
        prefix: GuidPrefix,
        endpoint: &[Locator],
        builtin: bool,
    ) -> Vec<Locator> {
        if !endpoint.is_empty() {
            let l = self.prefer_shared_memory(endpoint.to_vec());
            if !l.is_empty() {
                return l;
            }
        }
        self.participant_locators(prefix, builtin)
    }

    /// One path per remote: shared-memory locators of this host replace the rest of the
    /// list; shared-memory locators of another host (or any, without shared memory here)
    /// are dropped.
    fn prefer_shared_memory(&self, mut locators: Vec<Locator>) -> Vec<Locator> {
        if !locators
            .iter()
            .any(|l| l.kind == Locator::KIND_FERRODDS_SHM)
        {
            return locators;
        }
        let here =
            |l: &Locator| self.config.shm_host.is_some() && l.shm_host() == self.config.shm_host;
        if locators.iter().any(here) {
            locators.retain(here);
        } else {
            locators.retain(|l| l.kind != Locator::KIND_FERRODDS_SHM);
        }
        locators
    }

    /// The first non-empty list of what participant `prefix` announced, in the order a
    /// builtin or a user endpoint uses them, after [`Self::prefer_shared_memory`].
    fn participant_locators(&self, prefix: GuidPrefix, builtin: bool) -> Vec<Locator> {
        let (meta_u, meta_m, def_u, def_m) = if prefix == self.config.guid_prefix {
            (
                &self.config.metatraffic_unicast_locators,
                &self.config.metatraffic_multicast_locators,
                &self.config.default_unicast_locators,
                &self.config.default_multicast_locators,
            )
        } else if let Some(p) = self.participants.get(&prefix) {
            (
                &p.data.metatraffic_unicast,
                &p.data.metatraffic_multicast,
                &p.data.default_unicast,
                &p.data.default_multicast,
            )
        } else {
            return Vec::new();
        };
        let order: [&Vec<Locator>; 4] = if builtin {
            [meta_u, def_u, meta_m, def_m]
        } else {
            [def_u, meta_u, def_m, meta_m]
        };
        order
            .into_iter()
            .map(|l| self.prefer_shared_memory(l.clone()))
            .find(|l| !l.is_empty())
            .unwrap_or_default()
    }

    /// Where a local user writer sends to `reader`: with multicast user data, the reader's
    /// multicast group when it announces one (shared by every reader that listens on it: one
    /// datagram serves them all), else its unicast locators.
    fn reader_locators(&self, reader: &EndpointData) -> Vec<Locator> {
        if self.config.multicast_user_data && !reader.multicast.is_empty() {
            reader.multicast.clone()
        } else {
            self.locators_for(reader.guid.prefix, &reader.unicast, false)
        }
    }

    /// Matches local user writer `wi` with a (remote or local) reader.
    pub(super) fn match_writer_reader(&mut self, wi: usize, reader: &EndpointData) {
        let Some(w) = self.writers.get(wi).and_then(Option::as_ref) else {
            return;
        };
        if w.role != Role::User
            || w.topic_name != reader.topic_name
            || w.type_name != reader.type_name
        {
            return;
        }
        // (Resolved only for a writer of the topic: every remote reader is offered
        // to every local writer.)
        let locators = self.reader_locators(reader);
        let Some(w) = self.writers.get_mut(wi).and_then(Option::as_mut) else {
            return;
        };
        let existing = w.proxies.position(reader.guid);
        match check_compatible(&EndpointQos::from(&w.qos), &reader.qos) {
            Ok(()) => {
                if let Some(i) = existing {
                    w.proxies[i].locators = locators;
                    w.proxies_changed();
                    return;
                }
                let reliable = reader.qos.reliability.kind == ReliabilityKind::Reliable;
                // History only for TRANSIENT_LOCAL writer *and* reader.
                let start_after = if w.qos.durability == Durability::TransientLocal
                    && reader.qos.durability == Durability::TransientLocal
                {
                    0
                } else {
                    w.pushed
                };
                let mut p = ReaderProxy::new(reader.guid, reliable, locators, start_after);
                p.pushed_before_match = w.pushed;
                w.add_proxy(p);
                let i = w.proxies.len() - 1;
                self.work
                    .watch_reader_proxy(&mut w.repair_work, &mut w.proxies, i);
                w.all_acked_reported = false;
                let local = w.guid;
                self.events.push_back(Event::PublicationMatched {
                    writer: WriterId(wi),
                    remote_reader: reader.guid,
                    current_count: w.proxies.len(),
                });
                self.secure_endpoint_matched(local, reader.guid);
            }
            Err(policy) => {
                if let Some(i) = existing {
                    w.remove_proxy(i);
                    self.events.push_back(Event::PublicationUnmatched {
                        writer: WriterId(wi),
                        remote_reader: reader.guid,
                        current_count: w.proxies.len(),
                    });
                }
                self.events.push_back(Event::OfferedIncompatibleQos {
                    writer: WriterId(wi),
                    remote_reader: reader.guid,
                    policy,
                });
            }
        }
    }

    /// Matches local user reader `ri` with a (remote or local) writer.
    pub(super) fn match_reader_writer(&mut self, ri: usize, writer: &EndpointData) {
        let Some(r) = self.readers.get(ri).and_then(Option::as_ref) else {
            return;
        };
        if r.role != Role::User
            || r.topic_name != writer.topic_name
            || r.type_name != writer.type_name
        {
            return;
        }
        let locators = self.locators_for(writer.guid.prefix, &writer.unicast, false);
        let Some(r) = self.readers.get_mut(ri).and_then(Option::as_mut) else {
            return;
        };
        let existing = r.proxies.position(writer.guid);
        match check_compatible(&writer.qos, &EndpointQos::from(&r.qos)) {
            Ok(()) => {
                if let Some(i) = existing {
                    r.proxies[i].locators = locators;
                    return;
                }
                let reliable = r.qos.reliability.kind == ReliabilityKind::Reliable;
                let mut p = WriterProxy::new(
                    writer.guid,
                    reliable,
                    locators,
                    self.config.reassembly,
                    self.reasm_budget.clone(),
                )
                .with_out_of_order_limits(
                    self.config.peer_limits.max_out_of_order_samples,
                    self.config.peer_limits.max_out_of_order_bytes,
                );
                p.continue_counts(self.count_floor);
                r.proxies.push(p);
                let i = r.proxies.len() - 1;
                self.work
                    .watch_writer_proxy(&mut r.ack_work, &mut r.proxies, i);
                let local = r.guid;
                self.events.push_back(Event::SubscriptionMatched {
                    reader: ReaderId(ri),
                    remote_writer: writer.guid,
                    current_count: r.proxies.len(),
                });
                self.secure_endpoint_matched(local, writer.guid);
            }
            Err(policy) => {
                if let Some(i) = existing {
                    // Samples it sent by reference and the reader holds: copied out now.
                    self.resolve_writer_references(ri, writer.guid);
                    let Some(r) = self.readers.get_mut(ri).and_then(Option::as_mut) else {
                        return;
                    };
                    r.proxies.remove(i);
                    if r.proxies.is_empty() {
                        r.samples.no_writers();
                    }
                    self.events.push_back(Event::SubscriptionUnmatched {
                        reader: ReaderId(ri),
                        remote_writer: writer.guid,
                        current_count: r.proxies.len(),
                    });
                }
                self.events.push_back(Event::RequestedIncompatibleQos {
                    reader: ReaderId(ri),
                    remote_writer: writer.guid,
                    policy,
                });
            }
        }
    }

    /// Remote writers plus readers known (discovered through SEDP, within
    /// [`crate::PeerLimits`]).
    pub fn remote_endpoint_count(&self) -> usize {
        self.remote_writers.len() + self.remote_readers.len()
    }

    /// Whether a new remote endpoint `guid` (a writer if `writer`) fits the
    /// [`crate::PeerLimits`]; counts it against its participant if so.
    fn admit_remote_endpoint(&mut self, guid: Guid, writer: bool) -> bool {
        let known = if writer {
            &self.remote_writers
        } else {
            &self.remote_readers
        };
        if known.contains_key(&guid) {
            return true;
        }
        let limits = self.config.peer_limits;
        let of_participant = self.endpoint_counts.get(&guid.prefix).copied().unwrap_or(0);
        if known.len() >= limits.max_remote_endpoints
            || of_participant as usize >= limits.max_endpoints_per_participant
        {
            self.stats.refused_endpoints += 1;
            return false;
        }
        *self.endpoint_counts.entry(guid.prefix).or_insert(0) += 1;
        true
    }

    /// Uncounts a remote endpoint of participant `prefix`.
    pub(super) fn release_remote_endpoint(&mut self, prefix: GuidPrefix) {
        if let Some(n) = self.endpoint_counts.get_mut(&prefix) {
            *n -= 1;
            if *n == 0 {
                self.endpoint_counts.remove(&prefix);
            }
        }
    }

    pub(super) fn on_remote_writer(&mut self, data: EndpointData) {
        if !self.admits_remote_endpoint_security(&data, true)
            || !self.admit_remote_endpoint(data.guid, true)
        {
            return;
        }
        for ri in self.first_user..self.readers.len() {
            self.match_reader_writer(ri, &data);
        }
        self.remote_writers.insert(data.guid, data);
    }

    pub(super) fn on_remote_reader(&mut self, data: EndpointData) {
        if !self.admits_remote_endpoint_security(&data, false)
            || !self.admit_remote_endpoint(data.guid, false)
        {
            return;
        }
        for wi in self.first_user..self.writers.len() {
            self.match_writer_reader(wi, &data);
        }
        self.remote_readers.insert(data.guid, data);
    }

    pub(super) fn remove_remote_reader(&mut self, guid: Guid) {
        if self.remote_readers.remove(&guid).is_some() {
            self.release_remote_endpoint(guid.prefix);
        }
        self.secure_endpoint_gone(guid);
        for wi in 0..self.writers.len() {
            let Some(w) = self.writers[wi].as_mut() else {
                continue;
            };
            if let Some(i) = w.proxies.position(guid) {
                w.remove_proxy(i);
                if w.role == Role::User {
                    self.events.push_back(Event::PublicationUnmatched {
                        writer: WriterId(wi),
                        remote_reader: guid,
                        current_count: w.proxies.len(),
                    });
                }
                self.after_ack(wi);
            }
        }
    }

    pub(super) fn match_builtins(&mut self, prefix: GuidPrefix, set: u32) {
        let locs = self.locators_for(prefix, &[], true);
        use crate::security::*;
        // Secure SEDP endpoints newly matched: (local, remote), for their crypto tokens.
        let mut secure = Vec::new();
        let pairs = [
            (bes::PUBLICATIONS_DETECTOR, IDX_SEDP_PUB, SEDP_PUB_READER),
            (bes::SUBSCRIPTIONS_DETECTOR, IDX_SEDP_SUB, SEDP_SUB_READER),
            (
                BES_PUBLICATIONS_SECURE_DETECTOR,
                IDX_SEDP_PUB_SECURE,
                SEDP_PUB_SECURE_READER,
            ),
            (
                BES_SUBSCRIPTIONS_SECURE_DETECTOR,
                IDX_SEDP_SUB_SECURE,
                SEDP_SUB_SECURE_READER,
            ),
        ];
        for (bit, wi, eid) in pairs {
            if set & bit == 0 {
                continue;
            }
            if wi >= self.first_user {
                continue;
            }
            if let Some(w) = self.writers[wi].as_mut() {
                let guid = Guid::new(prefix, eid);
                if !w.proxies.contains(guid) {
                    if wi >= IDX_SEDP_PUB_SECURE {
                        secure.push((w.guid, guid));
                    }
                    let mut p = ReaderProxy::new(guid, true, locs.clone(), 0);
                    p.pushed_before_match = w.pushed;
                    w.add_proxy(p);
                    let i = w.proxies.len() - 1;
                    self.work
                        .watch_reader_proxy(&mut w.repair_work, &mut w.proxies, i);
                }
            }
        }
        let pairs = [
            (bes::PUBLICATIONS_ANNOUNCER, IDX_SEDP_PUB, SEDP_PUB_WRITER),
            (bes::SUBSCRIPTIONS_ANNOUNCER, IDX_SEDP_SUB, SEDP_SUB_WRITER),
            (
                BES_PUBLICATIONS_SECURE_ANNOUNCER,
                IDX_SEDP_PUB_SECURE,
                SEDP_PUB_SECURE_WRITER,
            ),
            (
                BES_SUBSCRIPTIONS_SECURE_ANNOUNCER,
                IDX_SEDP_SUB_SECURE,
                SEDP_SUB_SECURE_WRITER,
            ),
        ];
        for (bit, ri, eid) in pairs {
            if set & bit == 0 {
                continue;
            }
            if ri >= self.first_user {
                continue;
            }
            if let Some(r) = self.readers[ri].as_mut() {
                let guid = Guid::new(prefix, eid);
                if !r.proxies.contains(guid) {
                    if ri >= IDX_SEDP_PUB_SECURE {
                        secure.push((r.guid, guid));
                    }
                    let mut p = WriterProxy::new(
                        guid,
                        true,
                        locs.clone(),
                        self.config.reassembly,
                        self.reasm_budget.clone(),
                    )
                    .with_out_of_order_limits(
                        self.config.peer_limits.max_out_of_order_samples,
                        self.config.peer_limits.max_out_of_order_bytes,
                    );
                    p.continue_counts(self.count_floor);
                    r.proxies.push(p);
                    let i = r.proxies.len() - 1;
                    self.work
                        .watch_writer_proxy(&mut r.ack_work, &mut r.proxies, i);
                }
            }
        }
        for (local, remote) in secure {
            self.secure_endpoint_matched(local, remote);
        }
    }

    /// Re-resolves the destination locators of every proxy of participant
    /// `prefix` (after its SPDP data changed).
    pub(super) fn refresh_locators(&mut self, prefix: GuidPrefix) {
        let builtin = self.locators_for(prefix, &[], true);
        let mut user: SeededMap<Guid, Vec<Locator>> =
            HashMap::with_hasher(map_hasher(self.config.guid_prefix));
        for (g, d) in self.remote_writers.iter() {
            if g.prefix == prefix {
                user.insert(*g, self.locators_for(prefix, &d.unicast, false));
            }
        }
        for (g, d) in self.remote_readers.iter() {
            if g.prefix == prefix {
                user.insert(*g, self.reader_locators(d));
            }
        }
        let first_user = self.first_user;
        for (i, w) in self.writers.iter_mut().enumerate() {
            let Some(w) = w.as_mut() else { continue };
            w.proxies_changed();
            for p in w.proxies.iter_mut() {
                if p.guid.prefix != prefix {
                    continue;
                }
                if i < first_user {
                    p.locators.clone_from(&builtin);
                } else if let Some(l) = user.get(&p.guid) {
                    p.locators.clone_from(l);
                }
            }
        }
        for (i, r) in self.readers.iter_mut().enumerate() {
            for p in r.iter_mut().flat_map(|r| r.proxies.iter_mut()) {
                if p.guid.prefix != prefix {
                    continue;
                }
                if i < first_user {
                    p.locators.clone_from(&builtin);
                } else if let Some(l) = user.get(&p.guid) {
                    p.locators.clone_from(l);
                }
            }
        }
    }

    pub(super) fn process_builtin(&mut self, changes: Vec<(Role, Change)>) {
        for (role, c) in changes {
            let writer_side = role == Role::SedpPub;
            if c.kind == ChangeKind::Alive {
                if let Some(data) = EndpointData::decode(&c.payload, writer_side) {
                    if data.guid.prefix == self.config.guid_prefix {
                        continue;
                    }
                    if writer_side {
                        self.on_remote_writer(data);
                    } else {
                        self.on_remote_reader(data);
                    }
                }
            } else {
                let guid = c
                    .key_hash
                    .map(Guid::from_bytes)
                    .or_else(|| discovery::key_guid(&c.payload));
                if let Some(g) = guid.filter(|g| g.prefix != self.config.guid_prefix) {
                    if writer_side {
                        self.remove_remote_writer(g);
                    } else {
                        self.remove_remote_reader(g);
                    }
                }
            }
        }
    }
}
