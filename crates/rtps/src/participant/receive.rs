//! The receive path: [`Participant::handle_datagram`] and the DATA /
//! DATA_FRAG handlers.

use super::*;
use ferrodds_wire::ReceiverState;

impl Participant {
    /// Processes one received datagram. `src` is the sender's locator, if known
    /// (unused for now). Malformed input is counted in [`Stats`] and dropped.
    /// With DDS Security protecting RTPS messages, a protected datagram is decoded first
    /// (see [`crate::security`]).
    pub fn handle_datagram(&mut self, now: Timestamp, src: Option<Locator>, datagram: &[u8]) {
        self.rx_shm = src.is_some_and(|l| l.kind == Locator::KIND_FERRODDS_SHM);
        self.stats.received_datagrams += 1;
        if let Some(s) = self.security.as_mut() {
            s.plain_received_len = None;
        }
        if !(self.protects_messages() && self.receive_protected(now, datagram)) {
            self.interpret(now, datagram, secure::Origin::Clear);
        }
        self.refresh_stale_timeout();
    }

    /// Interprets the submessages of a (decoded) datagram from `origin`.
    pub(super) fn interpret(&mut self, now: Timestamp, datagram: &[u8], origin: secure::Origin) {
        let Ok((hdr, subs)) = codec::parse(datagram) else {
            self.stats.malformed_datagrams += 1;
            return;
        };
        let src_prefix = hdr.prefix;
        let ours = self.config.guid_prefix;
        // DATA_REF is ours, and names memory of this host: only from FerroDDS over shared
        // memory, without DDS Security (whose protections it would bypass).
        let refs_ok = hdr.vendor == codec::VENDOR_ID && self.rx_shm && self.security.is_none();
        if let Some(s) = self.security.as_mut() {
            s.now = now;
        }
        match &mut self.heard {
            Some((p, t)) if *p == src_prefix => *t = now,
            // Our own prefix (local loopback) is never a remote participant.
            _ if src_prefix == ours => {}
            _ => {
                // (A contested participant's lease is renewed only by its own
                // SPDP announcements: see `spdp`.)
                if let Some(p) = self
                    .participants
                    .get_mut(&src_prefix)
                    .filter(|p| !p.contested)
                {
                    p.last_heard = now;
                    self.flush_heard();
                    self.heard = Some((src_prefix, now));
                }
            }
        }
        // The receiver state (source, destination, timestamp, reply
        // locators) as the wire crate interprets the INFO_* submessages;
        // `for_us` caches its `is_for(ours)`.
        let mut rx = ReceiverState::new(&hdr.header, ours);
        let mut for_us = true;
        for sub in subs {
            let sub = match sub {
                Ok(s) => s,
                Err(_) => {
                    self.stats.malformed_datagrams += 1;
                    break;
                }
            };
            match sub {
                Sub::InfoTs(ts) => rx.timestamp = ts,
                Sub::Info(info) => {
                    rx.apply(&info, ours);
                    for_us = rx.is_for(ours);
                }
                Sub::Other(_) => self.stats.unknown_submessages += 1,
                Sub::Pad => {}
                _ if !for_us => {}
                ref s if self.security.is_some() && !self.admits(origin, s) => {}
                Sub::Data(d) if d.writer_id == crate::security::VOLATILE_SECURE_WRITER => {
                    self.on_volatile_data(rx.source_guid_prefix, &d)
                }
                Sub::AckNack {
                    writer_id, ref set, ..
                } if writer_id == crate::security::VOLATILE_SECURE_WRITER
                    && origin == secure::Origin::Volatile =>
                {
                    self.on_volatile_acknack(rx.source_guid_prefix, set.base())
                }
                Sub::Heartbeat {
                    writer_id,
                    first,
                    last,
                    ..
                } if writer_id == crate::security::VOLATILE_SECURE_WRITER
                    && origin == secure::Origin::Volatile =>
                {
                    self.on_volatile_heartbeat(rx.source_guid_prefix, first, last)
                }
                Sub::Gap {
                    writer_id,
                    start,
                    ref list,
                    ..
                } if writer_id == crate::security::VOLATILE_SECURE_WRITER
                    && origin == secure::Origin::Volatile =>
                {
                    self.on_volatile_gap(rx.source_guid_prefix, start, list.base())
                }
                Sub::Data(d) => self.on_data(rx.source_guid_prefix, &d, rx.timestamp, now),
                Sub::DataRef(d) if refs_ok => {
                    self.on_data_ref(rx.source_guid_prefix, &d, rx.timestamp)
                }
                Sub::DataRef(_) => self.stats.unreadable_data_refs += 1,
                Sub::DataFrag(f) => self.on_data_frag(rx.source_guid_prefix, &f, rx.timestamp, now),
                Sub::HeartbeatFrag {
                    reader_id,
                    writer_id,
                    sn,
                    last_frag,
                    count,
                } => self.on_heartbeat_frag(
                    Guid::new(rx.source_guid_prefix, writer_id),
                    reader_id,
                    (sn, last_frag, count),
                ),
                Sub::Heartbeat {
                    reader_id,
                    writer_id,
                    first,
                    last,
                    count,
                    final_flag,
                } => self.on_heartbeat(
                    Guid::new(rx.source_guid_prefix, writer_id),
                    reader_id,
                    (first, last, count, final_flag),
                ),
                Sub::AckNack {
                    reader_id,
                    writer_id,
                    set,
                    count,
                    final_flag,
                } => self.on_acknack(
                    Guid::new(rx.source_guid_prefix, reader_id),
                    writer_id,
                    &set,
                    count,
                    final_flag,
                    now,
                ),
                Sub::NackFrag {
                    reader_id,
                    writer_id,
                    sn,
                    frags,
                    count,
                } => self.on_nack_frag(
                    Guid::new(rx.source_guid_prefix, reader_id),
                    writer_id,
                    sn,
                    &frags,
                    count,
                    now,
                ),
                Sub::Gap {
                    reader_id,
                    writer_id,
                    start,
                    list,
                } => self.on_gap(
                    Guid::new(rx.source_guid_prefix, writer_id),
                    reader_id,
                    start,
                    &list,
                ),
            }
        }
        if !core::mem::take(&mut self.notify) {
            return;
        }
        for (ri, r) in self.readers.iter_mut().enumerate() {
            if let Some(r) = r.as_mut() {
                if r.notify {
                    r.notify = false;
                    self.events.push_back(Event::DataAvailable {
                        reader: ReaderId(ri),
                    });
                }
            }
        }
    }

    fn on_data(
        &mut self,
        src: GuidPrefix,
        d: &codec::DataSub<'_>,
        ts: Option<Time>,
        now: Timestamp,
    ) {
        let iq = match d.inline_qos {
            Some(q) => match codec::parse_inline_qos(q, d.little_endian) {
                Some(iq) => iq,
                None => {
                    self.stats.malformed_datagrams += 1;
                    return;
                }
            },
            None => codec::InlineQos::default(),
        };
        if d.writer_id == SPDP_WRITER {
            self.on_spdp(src, d, iq, now);
            return;
        }
        if d.writer_id == crate::security::STATELESS_WRITER {
            self.on_stateless(src, d, now);
            return;
        }
        let writer_guid = Guid::new(src, d.writer_id);
        if self.security.is_some() && self.payload_protected_remote(writer_guid) {
            self.on_protected_data(writer_guid, d, iq, ts, now);
            return;
        }
        self.on_data_payload(
            writer_guid,
            d,
            iq,
            ts,
            PayloadSrc::Bytes(d.payload.unwrap_or(&[])),
        );
    }

    /// A DATA_REF: a user writer's DATA whose payload each matched reader copies out of the
    /// writer's shared memory.
    #[cold]
    #[inline(never)]
    fn on_data_ref(&mut self, src: GuidPrefix, d: &codec::DataSub<'_>, ts: Option<Time>) {
        let iq = match d
            .inline_qos
            .map(|q| codec::parse_inline_qos(q, d.little_endian))
        {
            Some(Some(iq)) => iq,
            Some(None) => {
                self.stats.malformed_datagrams += 1;
                return;
            }
            None => codec::InlineQos::default(),
        };
        let (Some(reference), false) = (d.payload, d.writer_id.is_builtin()) else {
            self.stats.unreadable_data_refs += 1;
            return;
        };
        let before = self.stats.unreadable_data_refs;
        self.on_data_payload(
            Guid::new(src, d.writer_id),
            d,
            iq,
            ts,
            PayloadSrc::Chunk(reference),
        );
        if self.stats.unreadable_data_refs == before {
            self.stats.received_data_refs += 1;
        }
    }

    /// A DATA of a remote writer whose payloads are protected (DDS Security): decoded once
    /// for every reader.
    #[cold]
    #[inline(never)]
    fn on_protected_data(
        &mut self,
        writer_guid: Guid,
        d: &codec::DataSub<'_>,
        iq: codec::InlineQos,
        ts: Option<Time>,
        now: Timestamp,
    ) {
        let _ = now;
        let Some((buf, n)) = self.unprotect_payload(writer_guid, d.payload.unwrap_or(&[])) else {
            return;
        };
        self.on_data_payload(writer_guid, d, iq, ts, PayloadSrc::Bytes(&buf[..n]));
        self.payload_rx_back(buf);
    }

    /// Delivers a DATA with `payload` to the matched readers.
    #[inline(always)]
    fn on_data_payload(
        &mut self,
        writer_guid: Guid,
        d: &codec::DataSub<'_>,
        iq: codec::InlineQos,
        ts: Option<Time>,
        payload: PayloadSrc<'_>,
    ) {
        let mut matched = false;
        let mut builtin: Vec<(Role, Change)> = Vec::new();
        let readers = self.readers_for(d.writer_id);
        for ri in readers {
            let Some(r) = self.readers[ri].as_mut() else {
                continue;
            };
            if d.reader_id != EntityId::UNKNOWN && d.reader_id != r.guid.entity_id {
                continue;
            }
            let room = r.room();
            let Some(pi) = r.proxies.position(writer_guid) else {
                continue;
            };
            let by_reference = matches!(payload, PayloadSrc::Chunk(_))
                && self.chunk_reader.is_some()
                && r.keeps_references(&r.proxies[pi]);
            let p = &mut r.proxies[pi];
            matched = true;
            let buf = match payload {
                // A reader that reads in place keeps the reference (see
                // `Participant::set_reader_in_place`).
                PayloadSrc::Chunk(reference) if by_reference => {
                    let max = self.config.reassembly.max_sample_size as usize;
                    if !self
                        .chunk_reader
                        .as_mut()
                        .is_some_and(|cr| cr.check(reference, max))
                    {
                        // Already reused (or unreadable): a lost DATA, repaired as bytes.
                        self.stats.unreadable_data_refs += 1;
                        return;
                    }
                    let mut buf = self.rx_pool.pop().unwrap_or_default();
                    self.rx_pool_bytes -= buf.capacity();
                    buf.clear();
                    buf.extend_from_slice(reference);
                    buf
                }
                PayloadSrc::Bytes(payload) => {
                    let mut buf = match self.rx_pool.pop() {
                        Some(b) => {
                            self.rx_pool_bytes -= b.capacity();
                            b
                        }
                        None => Vec::new(),
                    };
                    buf.extend_from_slice(payload);
                    buf
                }
                PayloadSrc::Chunk(reference) => {
                    // Straight from the writer's memory into the sample's buffer (a large
                    // spare first: these are large samples; then a pooled one).
                    let large = large_spare(
                        &mut self.rx_spares.payload,
                        &mut self.rx_large,
                        &mut self.rx_large_bytes,
                    );
                    let mut buf = match large {
                        Some(b) => b,
                        None => match self.rx_pool.pop() {
                            Some(b) => {
                                self.rx_pool_bytes -= b.capacity();
                                b
                            }
                            None => Vec::new(),
                        },
                    };
                    let max = self.config.reassembly.max_sample_size as usize;
                    let read = self
                        .chunk_reader
                        .as_mut()
                        .is_some_and(|cr| cr.read(reference, max, &mut buf));
                    if !read {
                        self.stats.unreadable_data_refs += 1;
                        self.recycle_payload(buf);
                        return;
                    }
                    buf
                }
            };
            let change = Change {
                kind: ChangeKind::from_status_info(iq.status_info),
                key_hash: iq.key_hash,
                source_timestamp: ts,
                payload: buf,
                by_reference,
            };
            let out = reset_scratch(&mut self.scratch);
            p.on_data(d.sn, change, room, out);
            self.work
                .watch_writer_proxy(&mut r.ack_work, &mut r.proxies, pi);
            self.stats.dropped_samples += out.dropped;
            self.stats.out_of_order_overflows += out.overflow;
            Self::deliver(
                r,
                ReaderId(ri),
                writer_guid,
                out,
                &mut builtin,
                &mut self.events,
                &mut self.notify,
            );
        }
        if !matched {
            self.stats.unmatched_submessages += 1;
        }
        if !builtin.is_empty() {
            self.process_builtin(builtin);
        }
    }

    fn on_data_frag(
        &mut self,
        src: GuidPrefix,
        f: &codec::DataFragSub<'_>,
        ts: Option<Time>,
        now: Timestamp,
    ) {
        let meta = match f.inline_qos {
            Some(q) => match codec::parse_inline_qos(q, f.little_endian) {
                Some(iq) => Some((ChangeKind::from_status_info(iq.status_info), iq.key_hash)),
                None => {
                    self.stats.malformed_datagrams += 1;
                    return;
                }
            },
            None => None,
        };
        if f.writer_id == crate::security::STATELESS_WRITER {
            self.on_stateless_frag(src, f, now);
            return;
        }
        let writer_guid = Guid::new(src, f.writer_id);
        let frag = FragmentRef {
            sn: f.sn,
            offset: f.offset,
            data: f.data,
            sample_size: f.sample_size,
            fragment_size: f.fragment_size,
            meta,
            source_timestamp: ts,
        };
        if self.security.is_some() && self.payload_protected_remote(writer_guid) {
            self.on_protected_data_frag(writer_guid, f, &frag, now);
            return;
        }
        self.on_fragment::<false>(writer_guid, f, &frag, now);
    }

    /// A DATA_FRAG of a remote writer whose payloads are protected (DDS Security). Cyclone
    /// DDS 0.10 protects each fragment on its own (the sample and fragment sizes are those of
    /// the plain payload): such a fragment is longer than its place in the sample and is
    /// decoded before reassembly. FerroDDS protects the whole payload, then fragments it:
    /// decoded once reassembled.
    #[cold]
    #[inline(never)]
    fn on_protected_data_frag(
        &mut self,
        writer_guid: Guid,
        f: &codec::DataFragSub<'_>,
        frag: &FragmentRef<'_>,
        now: Timestamp,
    ) {
        let place = (f.sample_size as usize)
            .saturating_sub(f.offset as usize)
            .min(f.fragment_size as usize);
        // (Padding to 4 may follow a fragment: a whole-protected one is no longer than
        // its place plus 3 bytes; one protected on its own adds at least 40.)
        if f.full.len() <= place + 3 {
            self.on_fragment::<true>(writer_guid, f, frag, now);
            return;
        }
        let Some((buf, n)) = self.unprotect_payload(writer_guid, f.full) else {
            return;
        };
        let decoded = FragmentRef {
            data: &buf[..n],
            ..*frag
        };
        self.on_fragment::<false>(writer_guid, f, &decoded, now);
        self.payload_rx_back(buf);
    }

    /// Hands a fragment to the matched readers' reassembly; a sample completed is delivered
    /// (decoded first when `WHOLE_PROTECTED`).
    #[inline(always)]
    fn on_fragment<const WHOLE_PROTECTED: bool>(
        &mut self,
        writer_guid: Guid,
        f: &codec::DataFragSub<'_>,
        frag: &FragmentRef<'_>,
        now: Timestamp,
    ) {
        let mut matched = false;
        let mut builtin: Vec<(Role, Change)> = Vec::new();
        let readers = self.readers_for(f.writer_id);
        for ri in readers {
            let Some(r) = self.readers[ri].as_mut() else {
                continue;
            };
            if f.reader_id != EntityId::UNKNOWN && f.reader_id != r.guid.entity_id {
                continue;
            }
            let room = r.room();
            let Some(pi) = r.proxies.position(writer_guid) else {
                continue;
            };
            let p = &mut r.proxies[pi];
            matched = true;
            let change = p.on_fragment(frag, now, &mut self.rx_spares);
            self.work
                .watch_writer_proxy(&mut r.ack_work, &mut r.proxies, pi);
            let mut change = match change {
                Ok(Some(c)) => c,
                Ok(None) => continue,
                Err(e) => {
                    self.stats.rejected_fragments += 1;
                    if matches!(e, Rejected::OverBudget | Rejected::TooManySamples) {
                        self.stats.reassembly_overflows += 1;
                    }
                    continue;
                }
            };
            if WHOLE_PROTECTED {
                match secure::unprotect_whole(&mut self.security, writer_guid, &change.payload) {
                    Some(plain) => change.payload = plain,
                    None => {
                        self.stats.rejected_protected_datagrams += 1;
                        continue;
                    }
                }
            }
            let out = reset_scratch(&mut self.scratch);
            r.proxies[pi].on_data(f.sn, change, room, out);
            self.work
                .watch_writer_proxy(&mut r.ack_work, &mut r.proxies, pi);
            self.stats.dropped_samples += out.dropped;
            self.stats.out_of_order_overflows += out.overflow;
            Self::deliver(
                r,
                ReaderId(ri),
                writer_guid,
                out,
                &mut builtin,
                &mut self.events,
                &mut self.notify,
            );
        }
        if !matched {
            self.stats.unmatched_submessages += 1;
        }
        if !builtin.is_empty() {
            self.process_builtin(builtin);
        }
    }
}

/// A buffer above 64 KiB given back earlier (the reassembly spare `spare`, or one of
/// `large`, whose capacity `bytes` counts), if any; the spare is refilled from `large`.
fn large_spare(
    spare: &mut Option<Vec<u8>>,
    large: &mut Vec<Vec<u8>>,
    bytes: &mut usize,
) -> Option<Vec<u8>> {
    let b = spare.take();
    if let Some(next) = large.pop() {
        *bytes -= next.capacity();
        match b {
            Some(_) => *spare = Some(next),
            None => return Some(next),
        }
    }
    b
}

/// Where a received DATA's payload is: in the datagram, or in another participant's shared
/// memory (a DATA_REF's reference).
#[derive(Clone, Copy)]
pub(super) enum PayloadSrc<'p> {
    Bytes(&'p [u8]),
    Chunk(&'p [u8]),
}
