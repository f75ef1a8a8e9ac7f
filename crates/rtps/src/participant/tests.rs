//! Unit tests of the participant.

use super::*;
use crate::ReaderAttributes;

#[test]
fn piggy_backed_heartbeats_ask_for_acks_only_when_needed() {
    let mut qos = WriterQos {
        history: History::KeepAll,
        ..WriterQos::default()
    };
    qos.resource_limits.max_samples = 40;
    let guid = Guid::new(GuidPrefix([7; 12]), EntityId([0, 0, 1, 2]));
    let mut w = LocalWriter::new(guid, Role::User, "T".into(), "U".into(), qos);
    let reader = Guid::new(GuidPrefix([8; 12]), EntityId([0, 0, 1, 7]));
    w.proxies
        .push(ReaderProxy::new(reader, true, Vec::new(), 0));
    let ms = core::time::Duration::from_millis(1);
    let t0 = Timestamp(1_000_000_000);
    // Nothing asked yet: ask.
    assert!(w.wants_ack(t0, 5 * ms));
    w.last_ack_request = Some(t0);
    // A few unacknowledged samples, soon after the last request: final.
    w.pushed = 9;
    assert!(!w.wants_ack(t0.saturating_add(ms), 5 * ms));
    // A quarter of the bounded history unacknowledged: ask.
    w.pushed = 10;
    assert!(w.wants_ack(t0.saturating_add(ms), 5 * ms));
    // Asked at 10, no acknowledgement yet: the samples after it do not ask again
    // until another quarter is pushed.
    w.last_ack_request_sn = 10;
    w.pushed = 19;
    assert!(!w.wants_ack(t0.saturating_add(ms), 5 * ms));
    w.pushed = 20;
    assert!(w.wants_ack(t0.saturating_add(ms), 5 * ms));
    w.pushed = 10;
    w.last_ack_request_sn = 0;
    // Acknowledged up to 5: 5 unacknowledged, below the quarter.
    w.proxies[0].acked = 5;
    assert!(!w.wants_ack(t0.saturating_add(ms), 5 * ms));
    // The last request is old: ask again.
    assert!(w.wants_ack(t0.saturating_add(5 * ms), 5 * ms));
    // A deep history (a batching writer's) asks per quarter, not per 64.
    w.qos.resource_limits.max_samples = 12_800;
    w.proxies[0].acked = 0;
    w.pushed = 3_199;
    assert!(!w.wants_ack(t0.saturating_add(ms), 5 * ms));
    w.pushed = 3_200;
    assert!(w.wants_ack(t0.saturating_add(ms), 5 * ms));
}

/// [`cfg`] on host `host` with shared memory (locator port 7411), UDP datagrams of 1472
/// bytes and shared-memory messages of 65,000.
fn shm_cfg(n: u8, host: [u8; 12]) -> ParticipantConfig {
    let mut c = cfg(n);
    c.shm_host = Some(host);
    c.default_unicast_locators
        .insert(0, Locator::shm(host, 7411));
    c.max_message_size = 1472;
    c.shm_message_size = 65_000;
    c
}

fn cfg(n: u8) -> ParticipantConfig {
    let ip = core::net::Ipv4Addr::new(127, 0, 0, n);
    ParticipantConfig {
        guid_prefix: GuidPrefix([1, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, n]),
        metatraffic_unicast_locators: vec![Locator::udpv4(ip, 7410)],
        default_unicast_locators: vec![Locator::udpv4(ip, 7411)],
        spdp_destinations: vec![Locator::udpv4(
            core::net::Ipv4Addr::new(239, 255, 0, 1),
            7400,
        )],
        ..ParticipantConfig::default()
    }
}

fn drain(p: &mut Participant, now: Timestamp) -> Vec<(Vec<u8>, Vec<Locator>)> {
    let mut buf = vec![0u8; 65536];
    let mut out = Vec::new();
    while let Some(t) = p.poll_transmit(now, &mut buf) {
        out.push((buf[..t.len].to_vec(), t.destinations));
    }
    out
}

fn wattrs(keyed: bool) -> WriterAttributes {
    WriterAttributes {
        topic_name: "T".into(),
        type_name: "U".into(),
        keyed,
        qos: WriterQos::default(),
    }
}

fn rattrs(keyed: bool) -> ReaderAttributes {
    ReaderAttributes {
        topic_name: "T".into(),
        type_name: "U".into(),
        keyed,
        qos: ReaderQos::default(),
    }
}

#[test]
fn first_timeout_announces_spdp_to_the_destinations() {
    let mut p = Participant::new(cfg(1), Timestamp(0));
    assert_eq!(p.poll_timeout(), Some(Timestamp(0)));
    p.handle_timeout(Timestamp(0));
    let out = drain(&mut p, Timestamp(0));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].1, cfg(1).spdp_destinations);
    let (h, subs) = codec::parse(&out[0].0).unwrap();
    assert_eq!(h.prefix, cfg(1).guid_prefix);
    let Some(Ok(Sub::Data(d))) = subs.into_iter().next() else {
        panic!("no DATA");
    };
    assert_eq!(d.writer_id, SPDP_WRITER);
    let spdp = SpdpData::decode(d.payload.unwrap()).unwrap();
    assert_eq!(spdp.guid_prefix, cfg(1).guid_prefix);
    assert_eq!(spdp.default_unicast, cfg(1).default_unicast_locators);
    assert_eq!(spdp.builtin_endpoints & 0x3f, 0x3f);
    // Next announcement 100 ms later (quick initial phase).
    assert_eq!(
        p.poll_timeout(),
        Some(Timestamp(0).saturating_add(INITIAL_ANNOUNCEMENT_PERIOD))
    );
}

/// Each periodic announcement is a new change of the SPDP writer (sequence
/// numbers 1, 2, ...; a disposal follows the last), so that peers can tell an
/// older one — replayed, or of an earlier run with the same GUID prefix — from
/// the latest. The incarnation stamp rides along in both.
#[test]
fn spdp_announcements_are_numbered_and_stamped() {
    let mut c = cfg(1);
    c.incarnation = Some(0x1122_3344_5566_7788);
    let mut p = Participant::new(c, Timestamp(0));
    let spdp = |d: &[u8]| {
        let (_, subs) = codec::parse(d).unwrap();
        let Some(Ok(Sub::Data(d))) = subs.into_iter().next() else {
            panic!("no DATA");
        };
        (d.sn, d.payload.unwrap().to_vec())
    };
    let mut sns = Vec::new();
    let mut t = Timestamp(0);
    for _ in 0..3 {
        p.handle_timeout(t);
        for (d, _) in drain(&mut p, t) {
            let (sn, payload) = spdp(&d);
            assert_eq!(
                SpdpData::decode(&payload).unwrap().incarnation,
                Some(0x1122_3344_5566_7788)
            );
            sns.push(sn);
        }
        t = p.poll_timeout().unwrap();
    }
    assert_eq!(sns, vec![1, 2, 3]);
    p.announce_leave();
    let leave = drain(&mut p, t);
    let (sn, payload) = spdp(&leave[0].0);
    assert_eq!(sn, 4);
    assert_eq!(
        discovery::key_incarnation(&payload),
        Some(0x1122_3344_5566_7788)
    );
}

#[test]
fn own_and_foreign_domain_announcements_are_ignored() {
    let mut a = Participant::new(cfg(1), Timestamp(0));
    a.handle_timeout(Timestamp(0));
    let own = drain(&mut a, Timestamp(0));
    a.handle_datagram(Timestamp(1), None, &own[0].0);
    assert!(a.discovered_participants().is_empty());

    let mut other = cfg(2);
    other.domain_id = 5;
    let mut b = Participant::new(other, Timestamp(0));
    b.handle_timeout(Timestamp(0));
    let foreign = drain(&mut b, Timestamp(0));
    a.handle_datagram(Timestamp(1), None, &foreign[0].0);
    assert!(a.discovered_participants().is_empty());

    let mut c = Participant::new(cfg(3), Timestamp(0));
    c.handle_timeout(Timestamp(0));
    let same = drain(&mut c, Timestamp(0));
    a.handle_datagram(Timestamp(1), None, &same[0].0);
    assert_eq!(a.discovered_participants(), vec![cfg(3).guid_prefix]);
    assert_eq!(
        a.poll_event(),
        Some(Event::ParticipantDiscovered {
            prefix: cfg(3).guid_prefix
        })
    );
    // The newcomer gets a unicast announcement at once, then SEDP traffic.
    let replies = drain(&mut a, Timestamp(1));
    assert_eq!(replies[0].1, cfg(3).metatraffic_unicast_locators);
}

#[test]
fn entity_kinds_follow_keyed_and_handles_are_checked() {
    let mut p = Participant::new(cfg(1), Timestamp(0));
    let wk = p.create_writer(wattrs(true), Timestamp(0)).unwrap();
    let wn = p.create_writer(wattrs(false), Timestamp(0)).unwrap();
    let rk = p.create_reader(rattrs(true), Timestamp(0)).unwrap();
    let rn = p.create_reader(rattrs(false), Timestamp(0)).unwrap();
    assert_eq!(p.writer_guid(wk).unwrap().entity_id.0[3], 0x02);
    assert_eq!(p.writer_guid(wn).unwrap().entity_id.0[3], 0x03);
    assert_eq!(p.reader_guid(rk).unwrap().entity_id.0[3], 0x07);
    assert_eq!(p.reader_guid(rn).unwrap().entity_id.0[3], 0x04);
    // Local writers and readers of a topic match each other.
    assert_eq!(p.matched_reader_count(wk), 2);
    assert_eq!(p.matched_writer_count(rn), 2);
    p.delete_writer(wk, Timestamp(1)).unwrap();
    assert_eq!(p.writer_guid(wk), None);
    assert_eq!(p.matched_writer_count(rn), 1);
    assert_eq!(
        p.delete_writer(wk, Timestamp(1)),
        Err(EngineError::UnknownWriter)
    );
    assert_eq!(
        p.write(
            wk,
            WriteRequest {
                kind: ChangeKind::Alive,
                key_hash: None,
                serialized_payload: &[],
                source_timestamp: None
            },
            Timestamp(1)
        ),
        Err(WriteError::UnknownWriter)
    );
    assert!(
        p.take_sample(ReaderId(0)).is_none(),
        "builtin readers are hidden"
    );
    let mut bad = wattrs(false);
    bad.qos.history = History::KeepLast(0);
    assert!(matches!(
        p.create_writer(bad, Timestamp(1)),
        Err(EngineError::InconsistentQos(_))
    ));
}

#[test]
fn changed_spdp_locators_are_followed() {
    let mut a = Participant::new(cfg(1), Timestamp(0));
    let w = a.create_writer(wattrs(false), Timestamp(0)).unwrap();
    let mut b = Participant::new(cfg(2), Timestamp(0));
    b.create_reader(rattrs(false), Timestamp(0)).unwrap();
    b.handle_timeout(Timestamp(0));
    for (d, _) in drain(&mut b, Timestamp(0)) {
        a.handle_datagram(Timestamp(1), None, &d);
    }
    // Hand b's SEDP subscription to a.
    for (d, _) in drain(&mut b, Timestamp(1)) {
        a.handle_datagram(Timestamp(1), None, &d);
    }
    let mut t = 2;
    while a.matched_reader_count(w) == 0 && t < 50 {
        for (d, _) in drain(&mut a, Timestamp(t)) {
            b.handle_datagram(Timestamp(t), None, &d);
        }
        for (d, _) in drain(&mut b, Timestamp(t)) {
            a.handle_datagram(Timestamp(t), None, &d);
        }
        t += 1;
    }
    assert_eq!(a.matched_reader_count(w), 1);
    // b comes back with another user locator.
    let mut moved = cfg(2);
    let new_loc = Locator::udpv4(core::net::Ipv4Addr::new(127, 0, 0, 9), 9999);
    moved.default_unicast_locators = vec![new_loc];
    let mut b2 = Participant::new(moved, Timestamp(0));
    b2.handle_timeout(Timestamp(0));
    for (d, _) in drain(&mut b2, Timestamp(0)) {
        a.handle_datagram(Timestamp(t), None, &d);
    }
    drain(&mut a, Timestamp(t));
    a.write(
        w,
        WriteRequest {
            kind: ChangeKind::Alive,
            key_hash: None,
            serialized_payload: &[0, 1, 0, 0],
            source_timestamp: None,
        },
        Timestamp(t),
    )
    .unwrap();
    let out = drain(&mut a, Timestamp(t));
    assert!(out.iter().any(|(_, d)| d == &vec![new_loc]), "{out:?}");
}

/// Forces every work hint on: the next `poll_transmit` then scans
/// everything, as it did before the hints existed.
fn force_full_scan(p: &mut Participant) {
    p.work.ack = true;
    p.work.push = true;
    p.work.push_from = 0;
    p.work.repair = true;
    for r in p.readers.iter_mut().flatten() {
        r.ack_work = true;
    }
    for w in p.writers.iter_mut().flatten() {
        w.repair_work = true;
    }
}

/// Delivers what `from` sends to `to`, dropping every `drop_every`th
/// datagram (counted by `n`); then checks that the work hints hid
/// nothing: a full scan finds nothing more to send, and `poll_timeout`
/// is not later than the earliest deadline.
fn pump_checked(
    from: &mut Participant,
    to: &mut Participant,
    now: Timestamp,
    n: &mut u32,
    drop_every: u32,
) {
    let mut buf = vec![0u8; 65536];
    let mut dests = Vec::new();
    while let Some(len) = from.poll_transmit_into(now, &mut buf, &mut dests) {
        *n += 1;
        if !n.is_multiple_of(drop_every) {
            to.handle_datagram(now, None, &buf[..len]);
        }
    }
    force_full_scan(from);
    assert!(
        from.poll_transmit_into(now, &mut buf, &mut dests).is_none(),
        "a work hint hid a datagram"
    );
    // Every move of the acknowledgement bound ran after_ack (pushes skip
    // it when the bound did not move): running it again purges nothing
    // and frees no blocked writer. (An AllAcknowledged may legitimately
    // still be due: matching does not run after_ack.)
    for wi in 0..from.writers.len() {
        let state = |p: &Participant| {
            p.writers[wi]
                .as_ref()
                .map(|w| (w.history.len(), w.history.first_sn(), w.blocked))
        };
        let before = state(from);
        from.after_ack(wi);
        assert_eq!(before, state(from), "after_ack had work left");
    }
    for p in [&*from, &*to] {
        assert!(p.poll_timeout().unwrap() <= p.next_deadline());
    }
}

#[test]
fn work_hints_never_hide_work() {
    let mut a = Participant::new(cfg(1), Timestamp(0));
    let mut b = Participant::new(cfg(2), Timestamp(0));
    // Reliable KEEP_ALL (a bounded reader: back-pressure), reliable KEEP_LAST
    // with batching, best effort.
    let mut w_all = wattrs(false);
    w_all.topic_name = "All".into();
    w_all.qos.history = History::KeepAll;
    let mut r_all = rattrs(false);
    r_all.topic_name = "All".into();
    r_all.qos.reliability = Reliability::RELIABLE;
    r_all.qos.history = History::KeepAll;
    r_all.qos.resource_limits.max_samples = 4;
    let mut w_batch = wattrs(true);
    w_batch.topic_name = "Batch".into();
    w_batch.qos.batching.enabled = true;
    w_batch.qos.batching.max_bytes = 64;
    let mut r_batch = rattrs(true);
    r_batch.topic_name = "Batch".into();
    r_batch.qos.reliability = Reliability::RELIABLE;
    let mut w_be = wattrs(false);
    w_be.qos.reliability = Reliability::BEST_EFFORT;
    let writers = [
        a.create_writer(w_all, Timestamp(0)).unwrap(),
        a.create_writer(w_batch, Timestamp(0)).unwrap(),
        a.create_writer(w_be, Timestamp(0)).unwrap(),
    ];
    let readers = [
        b.create_reader(r_all, Timestamp(0)).unwrap(),
        b.create_reader(r_batch, Timestamp(0)).unwrap(),
        b.create_reader(rattrs(false), Timestamp(0)).unwrap(),
    ];
    let (mut n, mut t, mut taken) = (0u32, 0u64, 0usize);
    for step in 0..4000u64 {
        // Irregular time steps around the 10 ms NACK hold-off and the
        // 1 ms flush delay.
        t += [50_000, 300_000, 1_000_000, 3_000_000, 20_000_000][(step % 5) as usize] + step % 13;
        let now = Timestamp(t);
        for p in [&mut a, &mut b] {
            if p.poll_timeout().is_some_and(|d| d <= now) {
                p.handle_timeout(now);
            }
        }
        if step % 4 != 3 {
            let w = writers[(step % 3) as usize];
            let key = [(step % 5) as u8; 16];
            let _ = a.write(
                w,
                WriteRequest {
                    kind: ChangeKind::Alive,
                    key_hash: Some(key),
                    serialized_payload: &[0, 1, 0, 0, step as u8],
                    source_timestamp: None,
                },
                now,
            );
        }
        pump_checked(&mut a, &mut b, now, &mut n, 7);
        pump_checked(&mut b, &mut a, now, &mut n, 7);
        // Take slowly from the bounded reader, everything from the others.
        if step % 5 == 0 {
            taken += usize::from(b.take_sample(readers[0]).is_some());
        }
        for r in &readers[1..] {
            while b.take_sample(*r).is_some() {
                taken += 1;
            }
        }
        while a.poll_event().is_some() {}
        while b.poll_event().is_some() {}
    }
    assert!(taken > 500, "{taken}");
    assert!(a.stats().resent_data > 0);
}

/// Any datagram renews its sender's lease, also while the renewal is
/// cached for the peer heard last (alone, or alternating with another
/// peer), and a silent peer still expires.
#[test]
fn traffic_renews_leases_and_silence_expires_them() {
    let ms = core::time::Duration::from_millis(1);
    let mut a = Participant::new(cfg(1), Timestamp(0));
    let a_reader = a.create_reader(rattrs(false), Timestamp(0)).unwrap();
    let mut peers: Vec<Participant> = (2..=3)
        .map(|n| {
            let mut c = cfg(n);
            c.lease_duration = 1000 * ms;
            c.spdp_period = core::time::Duration::from_secs(100);
            let mut p = Participant::new(c, Timestamp(0));
            p.create_writer(wattrs(false), Timestamp(0)).unwrap();
            p
        })
        .collect();
    let mut t = Timestamp(0);
    // Runs every participant at `t`; `talking[k]`: peer k writes a sample
    // and its datagrams reach `a` (otherwise they are lost).
    let mut step = |a: &mut Participant, t: Timestamp, talking: [bool; 2], write: bool| {
        for (k, p) in peers.iter_mut().enumerate() {
            if write && talking[k] {
                let payload = [0, 1, 0, 0, k as u8];
                let req = WriteRequest {
                    kind: ChangeKind::Alive,
                    key_hash: None,
                    serialized_payload: &payload,
                    source_timestamp: None,
                };
                p.write(WriterId(FIRST_USER), req, t).unwrap();
            }
            if p.poll_timeout().is_some_and(|d| d <= t) {
                p.handle_timeout(t);
            }
            for (d, _) in drain(p, t) {
                if talking[k] {
                    a.handle_datagram(t, None, &d);
                }
            }
        }
        if a.poll_timeout().is_some_and(|d| d <= t) {
            a.handle_timeout(t);
        }
        for (d, _) in drain(a, t) {
            for p in peers.iter_mut() {
                p.handle_datagram(t, None, &d);
            }
        }
        while a.take_sample(a_reader).is_some() {}
    };
    // Discovery (initial SPDP burst, within the 1 s lease).
    for _ in 0..500 {
        t = t.saturating_add(ms);
        step(&mut a, t, [true, true], false);
    }
    assert_eq!(a.discovered_participants().len(), 2);
    // User data only, 200 ms apart, for 5 lease durations: both peers,
    // then the second alone (the first expires).
    for _ in 0..25 {
        t = t.saturating_add(200 * ms);
        step(&mut a, t, [true, true], true);
        assert_eq!(a.discovered_participants().len(), 2, "at {t:?}");
    }
    for _ in 0..25 {
        t = t.saturating_add(200 * ms);
        step(&mut a, t, [false, true], true);
    }
    assert_eq!(a.discovered_participants(), vec![cfg(3).guid_prefix]);
    // Silence: the second expires too.
    for _ in 0..15 {
        t = t.saturating_add(100 * ms);
        step(&mut a, t, [false, false], false);
    }
    assert!(a.discovered_participants().is_empty());
    let lost = core::iter::from_fn(|| a.poll_event())
        .filter(|e| matches!(e, Event::ParticipantLost { .. }))
        .count();
    assert_eq!(lost, 2);
}

#[test]
fn malformed_datagrams_are_counted() {
    let mut p = Participant::new(cfg(1), Timestamp(0));
    p.handle_datagram(Timestamp(0), None, b"hello");
    p.handle_datagram(Timestamp(0), None, &[0u8; 3]);
    let mut m = b"RTPS\x02\x05\x01\xfd".to_vec();
    m.extend_from_slice(&[9; 12]);
    m.extend_from_slice(&[0x15, 0x01, 0xff, 0x00]); // DATA claiming 255 bytes
    p.handle_datagram(Timestamp(0), None, &m);
    m.truncate(20);
    m.extend_from_slice(&[0x80, 0x01, 0x00, 0x00]); // vendor submessage, empty
    p.handle_datagram(Timestamp(0), None, &m);
    let s = p.stats();
    assert_eq!(s.received_datagrams, 4);
    assert_eq!(s.malformed_datagrams, 3);
    assert_eq!(s.unknown_submessages, 1);
}

#[test]
fn an_spdp_dispose_removes_only_its_sender() {
    let mut a = Participant::new(cfg(1), Timestamp(0));
    let mut b = Participant::new(cfg(2), Timestamp(0));
    let mut c = Participant::new(cfg(3), Timestamp(0));
    let mut t = Timestamp(0);
    for _ in 0..100 {
        t = t.saturating_add(core::time::Duration::from_millis(1));
        for p in [&mut b, &mut c] {
            if p.poll_timeout().is_some_and(|d| d <= t) {
                p.handle_timeout(t);
            }
            for (d, _) in drain(p, t) {
                a.handle_datagram(t, None, &d);
            }
        }
    }
    assert_eq!(a.discovered_participants().len(), 2);
    let prefix = |n: u8| cfg(n).guid_prefix;
    // b leaves; a copy of its disposal that claims to come from c (RTPS header's GUID
    // prefix rewritten: c names b) is ignored and counted.
    b.announce_leave();
    let leave = drain(&mut b, t);
    assert!(!leave.is_empty());
    for (d, _) in &leave {
        let mut forged = d.clone();
        forged[8..20].copy_from_slice(&prefix(3).0);
        a.handle_datagram(t, None, &forged);
    }
    assert_eq!(a.discovered_participants(), vec![prefix(2), prefix(3)]);
    assert!(a.stats().foreign_disposes >= 1);
    // The real one removes b.
    for (d, _) in &leave {
        a.handle_datagram(t, None, d);
    }
    assert_eq!(a.discovered_participants(), vec![prefix(3)]);
}

/// A reliable reader that stops answering (crashed before its lease ends, or a fake
/// participant whose locators nobody listens on) is heartbeated ten times, then one time in
/// ten until it answers again.
#[test]
fn unresponsive_readers_are_heartbeated_less_often() {
    let ms = core::time::Duration::from_millis(1);
    let mut a = Participant::new(cfg(1), Timestamp(0));
    let w = a.create_writer(wattrs(false), Timestamp(0)).unwrap();
    let mut b = Participant::new(cfg(2), Timestamp(0));
    let mut ra = rattrs(false);
    ra.qos.reliability = Reliability::RELIABLE;
    let r = b.create_reader(ra, Timestamp(0)).unwrap();
    let mut t = Timestamp(0);
    let exchange = |a: &mut Participant, b: &mut Participant, t: Timestamp, to_b: bool| {
        for p in [&mut *a, &mut *b] {
            if p.poll_timeout().is_some_and(|d| d <= t) {
                p.handle_timeout(t);
            }
        }
        let from_a = drain(a, t);
        for (d, _) in drain(b, t) {
            a.handle_datagram(t, None, &d);
        }
        if to_b {
            for (d, _) in &from_a {
                b.handle_datagram(t, None, d);
            }
        }
        from_a
    };
    while a.matched_reader_count(w) == 0 && t.0 < 2_000_000_000 {
        t = t.saturating_add(ms);
        exchange(&mut a, &mut b, t, true);
    }
    assert_eq!(a.matched_reader_count(w), 1);
    for _ in 0..500 {
        t = t.saturating_add(ms);
        exchange(&mut a, &mut b, t, true);
    }
    let req = WriteRequest {
        kind: ChangeKind::Alive,
        key_hash: None,
        serialized_payload: &[0, 1, 0, 0, 7],
        source_timestamp: None,
    };
    a.write(w, req, t).unwrap();
    // b goes silent for 10 s (less than its 20 s lease): what does a send to its user locator?
    let b_user = cfg(2).default_unicast_locators[0];
    let mut to_b = 0;
    for _ in 0..10_000 {
        t = t.saturating_add(ms);
        for (_, dst) in exchange(&mut a, &mut b, t, false) {
            if dst.contains(&b_user) {
                to_b += 1;
            }
        }
    }
    // 10 s of 100 ms periods: 100 HEARTBEATs (plus the first tail-loss probes) before; now
    // about ten, then one a second.
    eprintln!("{to_b} datagrams to the silent reader");
    assert!(
        (10..=30).contains(&to_b),
        "{to_b} datagrams to the silent reader"
    );
    assert!(a.stats().unresponsive_heartbeats_skipped >= 70);
    // b answers again: it gets the sample and heartbeats are back to every period.
    for _ in 0..2_000 {
        t = t.saturating_add(ms);
        exchange(&mut a, &mut b, t, true);
    }
    assert!(
        b.take_sample(r).is_some(),
        "the sample reached b once it answered"
    );
    assert!(a.is_acknowledged_by_all(w));
}

/// A captured reliable session replayed into the live reader (in order, reversed, and
/// each datagram twice) delivers nothing again: every sequence number it carries was
/// delivered or acknowledged already.
#[test]
fn a_replayed_session_is_not_delivered_twice() {
    let ms = core::time::Duration::from_millis(1);
    let mut a = Participant::new(cfg(1), Timestamp(0));
    let mut wa = wattrs(true);
    wa.qos.history = History::KeepAll;
    let w = a.create_writer(wa, Timestamp(0)).unwrap();
    let mut b = Participant::new(cfg(2), Timestamp(0));
    let mut ra = rattrs(true);
    ra.qos.reliability = Reliability::RELIABLE;
    ra.qos.history = History::KeepAll;
    let r = b.create_reader(ra, Timestamp(0)).unwrap();
    let mut t = Timestamp(0);
    let mut captured: Vec<Vec<u8>> = Vec::new();
    let step = |a: &mut Participant, b: &mut Participant, t: Timestamp, cap: &mut Vec<Vec<u8>>| {
        for p in [&mut *a, &mut *b] {
            if p.poll_timeout().is_some_and(|d| d <= t) {
                p.handle_timeout(t);
            }
        }
        for (d, _) in drain(a, t) {
            b.handle_datagram(t, None, &d);
            cap.push(d);
        }
        for (d, _) in drain(b, t) {
            a.handle_datagram(t, None, &d);
        }
    };
    while a.matched_reader_count(w) == 0 && t.0 < 2_000_000_000 {
        t = t.saturating_add(ms);
        step(&mut a, &mut b, t, &mut captured);
    }
    assert_eq!(a.matched_reader_count(w), 1);
    let mut delivered = 0;
    for i in 0..200u32 {
        let payload = [0, 1, 0, 0, i as u8, (i >> 8) as u8];
        let mut key = [0u8; 16];
        key[0] = (i % 10) as u8;
        let req = WriteRequest {
            kind: ChangeKind::Alive,
            key_hash: Some(key),
            serialized_payload: &payload,
            source_timestamp: None,
        };
        a.write(w, req, t).unwrap();
        t = t.saturating_add(ms);
        step(&mut a, &mut b, t, &mut captured);
        while b.take_sample(r).is_some() {
            delivered += 1;
        }
    }
    for _ in 0..500 {
        t = t.saturating_add(ms);
        step(&mut a, &mut b, t, &mut captured);
        while b.take_sample(r).is_some() {
            delivered += 1;
        }
    }
    assert_eq!(delivered, 200);
    assert!(a.is_acknowledged_by_all(w));
    // The replays: in order, reversed, and twice over.
    let replays: [Vec<&Vec<u8>>; 3] = [
        captured.iter().collect(),
        captured.iter().rev().collect(),
        captured.iter().flat_map(|d| [d, d]).collect(),
    ];
    for replay in replays {
        for d in replay {
            t = t.saturating_add(core::time::Duration::from_micros(10));
            b.handle_datagram(t, None, d);
            for (d, _) in drain(&mut b, t) {
                a.handle_datagram(t, None, &d);
            }
        }
        for _ in 0..200 {
            t = t.saturating_add(ms);
            step(&mut a, &mut b, t, &mut Vec::new());
        }
        assert!(
            b.take_sample(r).is_none(),
            "a replayed sample was delivered again"
        );
    }
    assert_eq!(b.discovered_participants().len(), 1);
    // a's replayed earlier announcements (lower SPDP sequence numbers) were
    // seen as stale, not as a restart of a.
    assert!(b.stats().stale_announcements > 0);
    assert_eq!(b.stats().participant_restarts, 0);
    let mut lost = 0;
    while let Some(e) = b.poll_event() {
        lost += usize::from(matches!(e, Event::ParticipantLost { .. }));
    }
    assert_eq!(lost, 0);
}

/// Shared memory is one path per remote: a writer sends user data to a reader's
/// shared-memory locator when both run on the same host (and boot), and only then; the
/// reader's UDP locator is not used beside it. Another host's shared-memory locator is
/// never used, nor any by a participant without shared memory.
#[test]
fn shared_memory_locators_replace_udp_on_the_same_host_only() {
    let here = [9u8; 12];
    let elsewhere = [8u8; 12];
    let with_shm = |n: u8, host: Option<[u8; 12]>, announced: Option<[u8; 12]>| {
        let mut c = cfg(n);
        c.shm_host = host;
        if let Some(h) = announced {
            c.default_unicast_locators.insert(0, Locator::shm(h, 7411));
        }
        c
    };
    // (writer's host, reader's host, expected kind of the user-data destination)
    let cases = [
        (Some(here), Some(here), Locator::KIND_FERRODDS_SHM),
        (Some(here), Some(elsewhere), Locator::KIND_UDPV4),
        (None, Some(here), Locator::KIND_UDPV4),
        (Some(here), None, Locator::KIND_UDPV4),
    ];
    let ms = core::time::Duration::from_millis(1);
    for (wh, rh, want) in cases {
        let mut a = Participant::new(with_shm(1, wh, wh), Timestamp(0));
        let w = a.create_writer(wattrs(false), Timestamp(0)).unwrap();
        let mut b = Participant::new(with_shm(2, rh, rh), Timestamp(0));
        let mut ra = rattrs(false);
        ra.qos.reliability = Reliability::RELIABLE;
        let r = b.create_reader(ra, Timestamp(0)).unwrap();
        let mut t = Timestamp(0);
        let step = |a: &mut Participant, b: &mut Participant, t: Timestamp| {
            for p in [&mut *a, &mut *b] {
                if p.poll_timeout().is_some_and(|d| d <= t) {
                    p.handle_timeout(t);
                }
            }
            let from_a = drain(a, t);
            let from_b = drain(b, t);
            for (d, _) in &from_b {
                a.handle_datagram(t, None, d);
            }
            for (d, _) in &from_a {
                b.handle_datagram(t, None, d);
            }
            (from_a, from_b)
        };
        while a.matched_reader_count(w) == 0 && t.0 < 2_000_000_000 {
            t = t.saturating_add(ms);
            step(&mut a, &mut b, t);
        }
        assert_eq!(a.matched_reader_count(w), 1, "{wh:?} -> {rh:?}");
        let req = WriteRequest {
            kind: ChangeKind::Alive,
            key_hash: None,
            serialized_payload: &[0, 1, 0, 0, 7],
            source_timestamp: None,
        };
        a.write(w, req, t).unwrap();
        let user_writer = a.writer_guid(w).unwrap().entity_id;
        let mut user = Vec::new();
        let mut acks = Vec::new();
        for _ in 0..300 {
            t = t.saturating_add(ms);
            let (from_a, from_b) = step(&mut a, &mut b, t);
            for (d, dst) in from_a {
                let (_, subs) = codec::parse(&d).unwrap();
                if subs
                    .into_iter()
                    .any(|s| matches!(s, Ok(Sub::Data(d)) if d.writer_id == user_writer))
                {
                    user.extend(dst);
                }
            }
            for (d, dst) in from_b {
                let (_, subs) = codec::parse(&d).unwrap();
                if subs
                    .into_iter()
                    .any(|s| matches!(s, Ok(Sub::AckNack { .. })))
                {
                    acks.extend(dst);
                }
            }
        }
        assert!(b.take_sample(r).is_some(), "{wh:?} -> {rh:?}: delivered");
        assert!(!user.is_empty(), "{wh:?} -> {rh:?}: user data sent");
        assert!(
            user.iter().all(|l| l.kind == want),
            "{wh:?} -> {rh:?}: user data went to {user:?}, expected kind {want:#x}"
        );
        // The reader's acknowledgements take the same path back to the writer (the SEDP
        // ones go to the metatraffic locators, UDP).
        let user_acks: Vec<_> = acks.iter().filter(|l| l.port == 7411).collect();
        assert!(
            user_acks.iter().all(|l| l.kind == want),
            "{wh:?} -> {rh:?}: acknowledgements went to {user_acks:?}"
        );
    }
}

/// Shared memory has no MTU: with `max_message_size` bounded by a network interface (1472 B)
/// and `shm_message_size` 65000, a batching writer's push to a reader reached through
/// shared memory goes in messages larger than the interface allows (a whole 8 KiB batch),
/// and a 20,000 B sample goes whole, unfragmented; to a reader reached over UDP, or from a
/// writer with its own `max_message_size`, every datagram stays within that size and the
/// sample goes in fragments. Every sample arrives, in order.
#[test]
fn pushes_to_shared_memory_only_fill_a_shared_memory_message() {
    let here = [9u8; 12];
    let elsewhere = [8u8; 12];
    let config = shm_cfg;
    let ms = core::time::Duration::from_millis(1);
    // (reader's host, writer's own max_message_size, whether messages may exceed the MTU)
    for (rh, own_max, shm) in [
        (here, None, true),
        (elsewhere, None, false),
        (here, Some(1400), false),
    ] {
        let mut a = Participant::new(config(1, here), Timestamp(0));
        let mut wa = wattrs(false);
        wa.qos.max_message_size = own_max;
        wa.qos.history = History::KeepAll;
        wa.qos.reliability = Reliability::RELIABLE;
        wa.qos.batching.enabled = true;
        wa.qos.batching.max_bytes = 8192;
        let w = a.create_writer(wa, Timestamp(0)).unwrap();
        let mut b = Participant::new(config(2, rh), Timestamp(0));
        let mut ra = rattrs(false);
        ra.qos.reliability = Reliability::RELIABLE;
        ra.qos.history = History::KeepAll;
        let r = b.create_reader(ra, Timestamp(0)).unwrap();
        let mut t = Timestamp(0);
        let mut largest = 0;
        let mut frags = 0;
        let mut step = |a: &mut Participant, b: &mut Participant, t: Timestamp| {
            for p in [&mut *a, &mut *b] {
                if p.poll_timeout().is_some_and(|d| d <= t) {
                    p.handle_timeout(t);
                }
            }
            let from_a = drain(a, t);
            for (d, dst) in &from_a {
                if dst.iter().any(|l| l.port == 7411) {
                    largest = largest.max(d.len());
                    let (_, subs) = codec::parse(d).unwrap();
                    frags += subs.filter(|s| matches!(s, Ok(Sub::DataFrag(_)))).count();
                }
                b.handle_datagram(t, None, d);
            }
            for (d, _) in drain(b, t) {
                a.handle_datagram(t, None, &d);
            }
        };
        while (a.matched_reader_count(w) == 0 || b.matched_writer_count(r) == 0)
            && t.0 < 2_000_000_000
        {
            t = t.saturating_add(ms);
            step(&mut a, &mut b, t);
        }
        assert_eq!(a.matched_reader_count(w), 1);
        assert_eq!(b.matched_writer_count(r), 1);
        // 200 samples of 36 B (a batch of 8 KiB and the rest), then one of 20,000 B.
        let mut sent = Vec::new();
        for i in 0..201u32 {
            let mut payload = vec![0, 1, 0, 0];
            payload.extend_from_slice(&i.to_le_bytes());
            payload.resize(if i == 200 { 20_000 } else { 36 }, i as u8);
            let req = WriteRequest {
                kind: ChangeKind::Alive,
                key_hash: None,
                serialized_payload: &payload,
                source_timestamp: None,
            };
            a.write(w, req, t).unwrap();
            sent.push(payload);
        }
        a.flush(w, t).unwrap();
        for _ in 0..300 {
            t = t.saturating_add(ms);
            step(&mut a, &mut b, t);
        }
        let mut got = Vec::new();
        while let Some(s) = b.take_sample(r) {
            got.push(s.payload.clone());
        }
        let lens = |v: &[Vec<u8>]| v.iter().map(|p| (p[4], p.len())).collect::<Vec<_>>();
        assert_eq!(
            lens(&got),
            lens(&sent),
            "shared memory {shm}: every sample, in order"
        );
        assert!(got == sent, "shared memory {shm}: payloads");
        if shm {
            // The batch and the 20,000 B sample each in one message, the sample whole.
            assert!(
                largest > 20_000,
                "shared memory: largest message {largest} B"
            );
            assert_eq!(frags, 0, "shared memory: DATA_FRAGs sent");
        } else {
            let max = own_max.unwrap_or(1472);
            assert!(largest <= max, "{own_max:?}: largest datagram {largest} B");
            assert!(frags >= 15, "{own_max:?}: {frags} DATA_FRAGs for 20,000 B");
        }
    }
}

/// A payload in "shared memory" for the DATA_REF tests: its bytes live in a map both
/// participants see (the pool), under the reference; dropping it frees the entry, as a
/// runtime's chunk goes back to its pool.
#[derive(Debug)]
struct TestChunk {
    pool: std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<u32, Vec<u8>>>>,
    id: u32,
    bytes: Vec<u8>,
    reference: [u8; 4],
}

impl SharedPayload for TestChunk {
    fn bytes(&self) -> &[u8] {
        &self.bytes
    }
    fn reference(&self) -> &[u8] {
        &self.reference
    }
    fn release(&mut self) {
        self.pool.lock().unwrap().remove(&self.id);
    }
}

/// Reads [`TestChunk`]s out of the pool; refuses the ids in `refuse` once each; records the
/// ports of the shared-memory locators of peers gone.
#[derive(Debug)]
struct TestChunkReader {
    pool: std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<u32, Vec<u8>>>>,
    refuse: Vec<u32>,
    gone: std::sync::Arc<std::sync::Mutex<Vec<u32>>>,
}

impl ChunkReader for TestChunkReader {
    fn peer_gone(&mut self, shm_locator: &Locator) {
        self.gone.lock().unwrap().push(shm_locator.port);
    }

    fn check(&mut self, reference: &[u8], max_len: usize) -> bool {
        let mut scratch = Vec::new();
        self.read(reference, max_len, &mut scratch)
    }

    fn read(&mut self, reference: &[u8], max_len: usize, out: &mut Vec<u8>) -> bool {
        let Ok(id) = <[u8; 4]>::try_from(reference).map(u32::from_le_bytes) else {
            return false;
        };
        if let Some(i) = self.refuse.iter().position(|r| *r == id) {
            self.refuse.remove(i);
            return false;
        }
        match self.pool.lock().unwrap().get(&id) {
            Some(b) if b.len() <= max_len => {
                out.clear();
                out.extend_from_slice(b);
                true
            }
            _ => false,
        }
    }
}

type TestPool = std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<u32, Vec<u8>>>>;

/// Two participants with shared memory for the DATA_REF tests: `a` (on host `here`) with a
/// reliable KEEP_ALL writer, `b` (on host `rh`, with a [`TestChunkReader`] of `pool` when
/// `reads`) with a reliable KEEP_ALL reader, matched.
struct ShmPair {
    a: Participant,
    b: Participant,
    w: WriterId,
    r: ReaderId,
    t: Timestamp,
    gone: std::sync::Arc<std::sync::Mutex<Vec<u32>>>,
    /// Datagrams to shared-memory locators come from one (else: from nowhere known).
    marked: bool,
    /// DATA_REFs and DATA_FRAGs sent by `a`.
    refs: usize,
    frags: usize,
}

const SHM_HERE: [u8; 12] = [9u8; 12];

impl ShmPair {
    fn new(rh: [u8; 12], refuse: &[u32], marked: bool, reads: bool, pool: &TestPool) -> Self {
        let config = shm_cfg;
        let mut a = Participant::new(config(1, SHM_HERE), Timestamp(0));
        let mut wa = wattrs(false);
        wa.qos.history = History::KeepAll;
        wa.qos.reliability = Reliability::RELIABLE;
        let w = a.create_writer(wa, Timestamp(0)).unwrap();
        let mut b = Participant::new(config(2, rh), Timestamp(0));
        let gone = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        if reads {
            b.set_chunk_reader(Some(Box::new(TestChunkReader {
                pool: pool.clone(),
                refuse: refuse.to_vec(),
                gone: gone.clone(),
            })));
        }
        let mut ra = rattrs(false);
        ra.qos.reliability = Reliability::RELIABLE;
        ra.qos.history = History::KeepAll;
        let r = b.create_reader(ra, Timestamp(0)).unwrap();
        let mut pair = Self {
            a,
            b,
            w,
            r,
            t: Timestamp(0),
            gone,
            marked,
            refs: 0,
            frags: 0,
        };
        while (pair.a.matched_reader_count(w) == 0 || pair.b.matched_writer_count(r) == 0)
            && pair.t.0 < 2_000_000_000
        {
            pair.step();
        }
        assert_eq!(pair.b.matched_writer_count(r), 1);
        pair
    }

    /// One millisecond: timers, then what each sends to the other.
    fn step(&mut self) {
        let t = self.t.saturating_add(core::time::Duration::from_millis(1));
        self.t = t;
        for p in [&mut self.a, &mut self.b] {
            if p.poll_timeout().is_some_and(|d| d <= t) {
                p.handle_timeout(t);
            }
        }
        let shm_src = Locator::shm(SHM_HERE, 7410);
        for (d, dst) in &drain(&mut self.a, t) {
            let to_shm = dst.iter().any(|l| l.kind == Locator::KIND_FERRODDS_SHM);
            let (_, subs) = codec::parse(d).unwrap();
            for s in subs {
                match s {
                    Ok(Sub::DataRef(_)) => self.refs += 1,
                    Ok(Sub::DataFrag(_)) => self.frags += 1,
                    _ => {}
                }
            }
            let src = (to_shm && self.marked).then_some(shm_src);
            self.b.handle_datagram(t, src, d);
        }
        for (d, _) in drain(&mut self.b, t) {
            self.a.handle_datagram(t, None, &d);
        }
    }

    /// Writes chunk `i` of `pool` (`bytes`) through `write_shared`.
    fn write_chunk(&mut self, pool: &TestPool, i: u32, bytes: &[u8]) {
        pool.lock().unwrap().insert(i, bytes.to_vec());
        let chunk = TestChunk {
            pool: pool.clone(),
            id: i,
            bytes: bytes.to_vec(),
            reference: i.to_le_bytes(),
        };
        let change = SharedWrite {
            kind: ChangeKind::Alive,
            key_hash: None,
            payload: Box::new(chunk),
            source_timestamp: None,
        };
        self.a.write_shared(self.w, change, self.t).unwrap();
    }
}

/// A payload in shared memory (`write_shared`) goes to a shared-memory reader as a
/// DATA_REF whatever its size (no fragments), and the reader's participant copies it out
/// with its chunk reader; a reader on another host gets the bytes (in fragments), and the
/// history frees each chunk once acknowledged. A DATA_REF the reader cannot read is a lost
/// DATA: the reliable reader asks again and gets the bytes. A DATA_REF that did not come
/// through shared memory is not read.
#[test]
fn shared_payloads_go_by_reference_to_shared_memory_readers() {
    let here = SHM_HERE;
    let elsewhere = [8u8; 12];
    // (reader's host, chunk ids the reader fails to read once, datagrams marked as shared
    // memory, the reader's participant reads DATA_REFs)
    for (rh, refuse, marked, reads) in [
        (here, vec![], true, true),
        (elsewhere, vec![], true, true),
        (here, vec![3, 5], true, true),
        (here, vec![], false, true),
        (here, vec![], true, false),
    ] {
        let pool = TestPool::default();
        let mut pair = ShmPair::new(rh, &refuse, marked, reads, &pool);
        let w = pair.w;
        assert_eq!(pair.a.writer_sends_by_reference(w), rh == here && reads);
        // Ten samples of 100 B ... 1 MiB, each in a chunk.
        let mut sent = Vec::new();
        for i in 0..10u32 {
            let mut bytes = vec![0, 1, 0, 0];
            bytes.extend_from_slice(&i.to_le_bytes());
            bytes.resize(100 << (i.min(9) * 4 / 3), i as u8);
            bytes.truncate(1 << 20);
            pair.write_chunk(&pool, i, &bytes);
            sent.push(bytes);
        }
        for _ in 0..2000 {
            pair.step();
            if pair.a.is_acknowledged_by_all(w) {
                break;
            }
        }
        let ShmPair {
            mut a,
            mut b,
            r,
            mut t,
            gone,
            refs,
            frags,
            ..
        } = pair;
        let mut got = Vec::new();
        while let Some(s) = b.take_sample(r) {
            got.push(s.payload.clone());
        }
        let case =
            format!("reader's host {rh:?}, refused {refuse:?}, marked {marked}, reads {reads}");
        assert_eq!(got.len(), sent.len(), "{case}: samples");
        assert!(got == sent, "{case}: payloads");
        let stats = b.stats();
        if !reads {
            // Its participant did not announce that it reads DATA_REFs: the bytes.
            assert_eq!(
                refs, 0,
                "{case}: DATA_REFs to a participant that does not read them"
            );
            assert_eq!(a.stats().sent_data_refs, 0, "{case}");
        } else if rh == here && marked {
            assert_eq!(refs, 10, "{case}: DATA_REFs (repairs go as bytes)");
            assert_eq!(a.stats().sent_data_refs, 10, "{case}");
            assert_eq!(stats.received_data_refs, 10 - refuse.len() as u64, "{case}");
            assert_eq!(stats.unreadable_data_refs, refuse.len() as u64, "{case}");
            if refuse.is_empty() {
                assert_eq!(frags, 0, "{case}: DATA_FRAGs");
            }
        } else if rh == here {
            // Refs sent, none read: every sample came again as bytes.
            assert_eq!(stats.received_data_refs, 0, "{case}");
            assert_eq!(stats.unreadable_data_refs, 10, "{case}");
        } else {
            assert_eq!(refs, 0, "{case}: DATA_REFs to another host");
            assert!(frags > 100, "{case}: {frags} DATA_FRAGs");
        }
        // Acknowledged: the history released every chunk, and hands them over for reuse.
        assert!(a.is_acknowledged_by_all(w), "{case}: acknowledged");
        assert!(pool.lock().unwrap().is_empty(), "{case}: chunks kept");
        let mut back = Vec::new();
        a.reclaim_shared_payloads(w, &mut back);
        assert_eq!(back.len(), 10, "{case}: released payloads");
        a.reclaim_shared_payloads(w, &mut back);
        assert_eq!(back.len(), 10, "{case}: released payloads, once");
        // The writer's participant falls silent: when its lease ends the reader's
        // participant tells its chunk reader to forget its shared memory.
        assert!(gone.lock().unwrap().is_empty());
        for _ in 0..30 {
            t = t.saturating_add(core::time::Duration::from_secs(1));
            if b.poll_timeout().is_some_and(|d| d <= t) {
                b.handle_timeout(t);
            }
            let _ = drain(&mut b, t);
        }
        let want: &[u32] = if reads { &[7411] } else { &[] };
        assert_eq!(*gone.lock().unwrap(), want, "{case}: peer gone");
    }
}

/// A reader that reads in place keeps a DATA_REF as the reference, and holds back its
/// acknowledgement (the writer keeps the chunk) until the runtime releases the sample; a
/// reference already stale on arrival is a lost DATA, repaired as bytes; a take that wants
/// the bytes resolves the references left in the cache, and one that cannot be read then is
/// a lost sample.
#[test]
fn a_reader_in_place_holds_its_acknowledgement_until_released() {
    let pool = TestPool::default();
    // Chunk 6 cannot be read when it arrives.
    let mut pair = ShmPair::new(SHM_HERE, &[6], true, true, &pool);
    let (w, r) = (pair.w, pair.r);
    pair.b.set_reader_in_place(r, true);
    let mut sent = Vec::new();
    for i in 0..10u32 {
        let mut bytes = vec![0, 1, 0, 0];
        bytes.extend_from_slice(&i.to_le_bytes());
        bytes.resize(30_000, i as u8);
        pair.write_chunk(&pool, i, &bytes);
        sent.push(bytes);
    }
    // Heartbeats come and go: nothing is acknowledged, every chunk is kept.
    for _ in 0..3000 {
        pair.step();
    }
    assert_eq!(pair.refs, 10, "DATA_REFs (the repair went as bytes)");
    assert_eq!(pair.b.stats().received_data_refs, 9);
    assert_eq!(pair.b.stats().unreadable_data_refs, 1);
    assert!(!pair.a.is_acknowledged_by_all(w), "acknowledged while held");
    assert_eq!(pool.lock().unwrap().len(), 10, "chunks kept");
    // Five taken: each is its reference; releasing them lets the writer free those chunks.
    let mut taken = Vec::new();
    for i in 0..5u32 {
        let s = pair.b.take_sample(r).unwrap();
        assert!(s.by_reference, "sample {i} by reference");
        assert_eq!(s.payload, i.to_le_bytes(), "sample {i}: its reference");
        taken.push((s.writer_guid, s.sequence_number));
    }
    // Released out of order: the first of them holds the rest back until it goes too.
    assert!(!pair.b.release_references(r, taken[1..].iter().copied()));
    for _ in 0..500 {
        pair.step();
    }
    assert_eq!(pool.lock().unwrap().len(), 10, "released behind a held one");
    assert!(pair.b.release_references(r, taken[..1].iter().copied()));
    for _ in 0..500 {
        pair.step();
    }
    let left: Vec<u32> = pool.lock().unwrap().keys().copied().collect();
    assert_eq!(left, [5, 6, 7, 8, 9], "chunks kept after the release");
    assert!(!pair.a.is_acknowledged_by_all(w));
    // The rest resolved into bytes: sample 6 is bytes already; 8 cannot be read now and is
    // lost.
    let bytes = pool.lock().unwrap().clone();
    let mut reads = Vec::new();
    assert!(pair.b.resolve_references(r, |reference, out| {
        let id = u32::from_le_bytes(reference.try_into().unwrap());
        reads.push(id);
        match bytes.get(&id).filter(|_| id != 8) {
            Some(b) => {
                out.extend_from_slice(b);
                true
            }
            None => false,
        }
    }));
    reads.sort_unstable();
    assert_eq!(reads, [5, 7, 8, 9]);
    assert!(!pair.b.resolve_references(r, |_, _| unreachable!()));
    assert!(
        pair.b
            .poll_event()
            .into_iter()
            .chain(std::iter::from_fn(|| pair.b.poll_event()))
            .any(|e| matches!(e, Event::SampleLost { count: 1, .. })),
        "the unreadable sample counted lost"
    );
    for want in [5, 6, 7, 9] {
        let s = pair.b.take_sample(r).unwrap();
        assert!(!s.by_reference);
        assert!(s.payload == sent[want], "sample {want}: the bytes");
    }
    assert!(pair.b.take_sample(r).is_none());
    for _ in 0..500 {
        pair.step();
        if pair.a.is_acknowledged_by_all(w) {
            break;
        }
    }
    assert!(
        pair.a.is_acknowledged_by_all(w),
        "acknowledged once resolved"
    );
    assert!(pool.lock().unwrap().is_empty(), "every chunk released");
}

/// Samples a reader in place holds by reference are copied out when their writer's
/// participant goes away (before its shared memory is forgotten), and taken as bytes.
#[test]
fn held_references_are_copied_out_when_their_writer_goes() {
    let pool = TestPool::default();
    let mut pair = ShmPair::new(SHM_HERE, &[], true, true, &pool);
    let r = pair.r;
    pair.b.set_reader_in_place(r, true);
    let mut sent = Vec::new();
    for i in 0..3u32 {
        let bytes = vec![i as u8; 20_000];
        pair.write_chunk(&pool, i, &bytes);
        sent.push(bytes);
    }
    for _ in 0..200 {
        pair.step();
    }
    assert_eq!(pair.b.reader_sample_count(r), 3);
    // The writer's participant falls silent: its lease ends at the reader's.
    let mut t = pair.t;
    for _ in 0..30 {
        t = t.saturating_add(core::time::Duration::from_secs(1));
        if pair.b.poll_timeout().is_some_and(|d| d <= t) {
            pair.b.handle_timeout(t);
        }
        let _ = drain(&mut pair.b, t);
    }
    assert_eq!(pair.b.matched_writer_count(r), 0, "writer gone");
    assert_eq!(
        *pair.gone.lock().unwrap(),
        [7411],
        "its shared memory forgotten"
    );
    for want in &sent {
        let s = pair.b.take_sample(r).unwrap();
        assert!(!s.by_reference, "copied out");
        assert!(s.payload == *want);
    }
}

/// Multicast user data: readers announce the participant's default multicast locators, and
/// a writer with multicast user data sends each sample once, to the group, however many
/// readers listen there (without it: once per reader, to each unicast locator). Readers
/// with multicast locators of their own (`ReaderQos::multicast_locators`) announce those
/// instead, and the sample goes once to that group.
#[test]
fn multicast_user_data_sends_once_to_the_group() {
    let group = Locator::udpv4(core::net::Ipv4Addr::new(239, 255, 0, 1), 7401);
    let own_group = Locator::udpv4(core::net::Ipv4Addr::new(239, 255, 42, 1), 7401);
    let config = |n: u8, on: bool| {
        let mut c = cfg(n);
        c.multicast_user_data = on;
        c.default_multicast_locators = vec![group];
        c
    };
    let ms = core::time::Duration::from_millis(1);
    for (on, own) in [(true, None), (false, None), (true, Some(own_group))] {
        let mut a = Participant::new(config(1, on), Timestamp(0));
        let w = a.create_writer(wattrs(false), Timestamp(0)).unwrap();
        let mut readers: Vec<Participant> = (2..5)
            .map(|n| Participant::new(config(n, on), Timestamp(0)))
            .collect();
        let rids: Vec<ReaderId> = readers
            .iter_mut()
            .map(|p| {
                let mut ra = rattrs(false);
                ra.qos.reliability = Reliability::RELIABLE;
                ra.qos.multicast_locators.extend(own);
                p.create_reader(ra, Timestamp(0)).unwrap()
            })
            .collect();
        let user_writer = a.writer_guid(w).unwrap().entity_id;
        let mut t = Timestamp(0);
        // Everyone hears everyone (a broadcast medium); returns a's user-data datagrams.
        let step = |a: &mut Participant, rs: &mut Vec<Participant>, t: Timestamp| {
            for p in std::iter::once(&mut *a).chain(rs.iter_mut()) {
                if p.poll_timeout().is_some_and(|d| d <= t) {
                    p.handle_timeout(t);
                }
            }
            let from_a = drain(a, t);
            let from_rs: Vec<_> = rs.iter_mut().flat_map(|p| drain(p, t)).collect();
            for (d, _) in &from_rs {
                a.handle_datagram(t, None, d);
                for p in rs.iter_mut() {
                    p.handle_datagram(t, None, d);
                }
            }
            let mut user = Vec::new();
            for (d, dst) in from_a {
                for p in rs.iter_mut() {
                    p.handle_datagram(t, None, &d);
                }
                let (_, subs) = codec::parse(&d).unwrap();
                if subs
                    .into_iter()
                    .any(|s| matches!(s, Ok(Sub::Data(d)) if d.writer_id == user_writer))
                {
                    user.push(dst);
                }
            }
            user
        };
        while a.matched_reader_count(w) < 3 && t.0 < 2_000_000_000 {
            t = t.saturating_add(ms);
            step(&mut a, &mut readers, t);
        }
        assert_eq!(a.matched_reader_count(w), 3, "multicast {on}");
        for _ in 0..50 {
            t = t.saturating_add(ms);
            step(&mut a, &mut readers, t);
        }
        let req = WriteRequest {
            kind: ChangeKind::Alive,
            key_hash: None,
            serialized_payload: &[0, 1, 0, 0, 7],
            source_timestamp: None,
        };
        a.write(w, req, t).unwrap();
        let mut sent = Vec::new();
        for _ in 0..5 {
            t = t.saturating_add(ms);
            sent.extend(step(&mut a, &mut readers, t));
        }
        for (p, r) in readers.iter_mut().zip(&rids) {
            assert!(p.take_sample(*r).is_some(), "multicast {on}: delivered");
        }
        assert_eq!(sent.len(), 1, "multicast {on}: one datagram: {sent:?}");
        if let Some(own) = own {
            assert_eq!(sent[0], vec![own], "to the readers' own group only");
        } else if on {
            assert_eq!(sent[0], vec![group], "to the group only");
        } else {
            assert_eq!(sent[0].len(), 3, "to each reader: {:?}", sent[0]);
            assert!(!sent[0].contains(&group));
        }
    }
}

/// A periodic HEARTBEAT that could not go out (the sender was held back: pacing behind
/// repairs to many readers, a full socket) leaves nothing for the reader to answer: it
/// does not count against the reader, which stays heartbeated every period.
#[test]
fn heartbeats_not_sent_do_not_make_a_reader_unresponsive() {
    let ms = core::time::Duration::from_millis(1);
    let mut a = Participant::new(cfg(1), Timestamp(0));
    let w = a.create_writer(wattrs(false), Timestamp(0)).unwrap();
    let mut b = Participant::new(cfg(2), Timestamp(0));
    let mut ra = rattrs(false);
    ra.qos.reliability = Reliability::RELIABLE;
    let r = b.create_reader(ra, Timestamp(0)).unwrap();
    let mut t = Timestamp(0);
    let exchange = |a: &mut Participant, b: &mut Participant, t: Timestamp| {
        for p in [&mut *a, &mut *b] {
            if p.poll_timeout().is_some_and(|d| d <= t) {
                p.handle_timeout(t);
            }
        }
        let from_a = drain(a, t);
        for (d, _) in drain(b, t) {
            a.handle_datagram(t, None, &d);
        }
        for (d, _) in &from_a {
            b.handle_datagram(t, None, d);
        }
    };
    while a.matched_reader_count(w) == 0 && t.0 < 2_000_000_000 {
        t = t.saturating_add(ms);
        exchange(&mut a, &mut b, t);
    }
    for _ in 0..500 {
        t = t.saturating_add(ms);
        exchange(&mut a, &mut b, t);
    }
    let req = WriteRequest {
        kind: ChangeKind::Alive,
        key_hash: None,
        serialized_payload: &[0, 1, 0, 0, 7],
        source_timestamp: None,
    };
    a.write(w, req, t).unwrap();
    // For 3 s (30 HEARTBEAT periods) a's timers run but nothing it has to send goes out.
    for _ in 0..3_000 {
        t = t.saturating_add(ms);
        if a.poll_timeout().is_some_and(|d| d <= t) {
            a.handle_timeout(t);
        }
    }
    assert_eq!(a.stats().unresponsive_heartbeats_skipped, 0);
    // Once a can send, the sample and a HEARTBEAT go at once, not a second later.
    for _ in 0..50 {
        t = t.saturating_add(ms);
        exchange(&mut a, &mut b, t);
    }
    assert!(b.take_sample(r).is_some());
    assert!(a.is_acknowledged_by_all(w));
    assert_eq!(a.stats().unresponsive_heartbeats_skipped, 0);
}

/// The pacer compares what readers acknowledge with what it sent, counting an acknowledged
/// sample as `Sizes::wire_len` bytes. For a batch, that estimate must be what the emitter
/// writes per sample: with a shared timestamp (the default) a DATA and no INFO_TS of its
/// own, else both. Counting an INFO_TS per sample that batches no longer carry overstated
/// delivery by 12 bytes of every 64 (32 B samples), and a 100 Mbit/s link then carried
/// 35-49 Mbit/s of batched 32 B samples from run to run instead of 48.8 every run.
#[test]
fn batched_wire_estimate_matches_what_the_emitter_writes() {
    let eid = EntityId([0, 0, 1, 3]);
    let payload = [0u8; 36]; // perftest's 32 B sample with its encapsulation header
    let ts = Time {
        seconds: 1,
        fraction: 2,
    };
    for shared in [true, false] {
        let mut qos = WriterQos::default();
        qos.batching = crate::qos::Batching::bytes(8192);
        if !shared {
            qos.batching.source_timestamp_resolution = core::time::Duration::ZERO;
        }
        let sizes = Sizes::new(&ParticipantConfig::default(), &qos, eid);
        let n = 20;
        let mut buf = [0u8; 4096];
        let mut e = Emitter::new(&mut buf, 4096, GuidPrefix([1; 12])).unwrap();
        let start = e.len();
        for sn in 1..=n {
            let t = if shared {
                ts
            } else {
                Time {
                    fraction: sn as u32,
                    ..ts
                }
            };
            assert!(e.timed_data(Some(t), EntityId::UNKNOWN, eid, sn, &payload));
        }
        let per_sample = (e.len() - start) as f64 / n as f64;
        // The estimate adds 8 bytes a sample for the datagram's header and HEARTBEAT.
        let estimate = (sizes.wire_len(payload.len()) - 8) as f64;
        assert!(
            (estimate - per_sample).abs() < 1.0,
            "shared {shared}: estimate {estimate}, emitted {per_sample} bytes a sample"
        );
    }
}
