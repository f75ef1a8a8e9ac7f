//! The engine's reader cache as a reader's whole history: KEEP_LAST per instance with
//! keys computed by a `KeyExtractor` when the writer sends no `PID_KEY_HASH`, read and
//! not-read states, instance states reported at take time, and KEEP_ALL `max_samples`
//! back-pressure released by a take.

mod common;

use std::sync::Arc;

use common::{config, matched_pair, settle};
use ferrodds_rtps::{
    ChangeKind, History, InstanceState, KeyExtractor, Participant, ReaderAttributes, ReaderId,
    ReaderQos, Reliability, TakenSample, Timestamp, WriteRequest, WriterAttributes, WriterId,
    WriterQos,
};

/// Payload: a CDR_LE header, then a 4-byte key and a 4-byte value.
fn payload(key: u8, value: u8) -> [u8; 12] {
    [0, 1, 0, 0, key, 0, 0, 0, value, 0, 0, 0]
}

fn pair(
    history: History,
    max_samples: Option<i32>,
) -> (Participant, Participant, WriterId, ReaderId, u64) {
    let mut a = Participant::new(config(1), Timestamp(0));
    let mut b = Participant::new(config(2), Timestamp(0));
    let mut buf = vec![0u8; 65536];
    let mut rq = ReaderQos {
        reliability: Reliability::RELIABLE,
        history,
        ..ReaderQos::default()
    };
    if let Some(m) = max_samples {
        rq.resource_limits.max_samples = m;
    }
    let (w, r, t) = matched_pair(
        &mut a,
        &mut b,
        WriterAttributes {
            topic_name: "H".into(),
            type_name: "H".into(),
            keyed: true,
            // KEEP_ALL: without key hashes the writer sees one instance.
            qos: WriterQos {
                history: History::KeepAll,
                ..WriterQos::default()
            },
        },
        ReaderAttributes {
            topic_name: "H".into(),
            type_name: "H".into(),
            keyed: true,
            qos: rq,
        },
        &mut buf,
    );
    (a, b, w, r, t)
}

/// Writes without a key hash (as Cyclone DDS does): the reader must compute it.
fn write(a: &mut Participant, w: WriterId, kind: ChangeKind, key: u8, value: u8, t: u64) {
    let p = payload(key, value);
    a.write(
        w,
        WriteRequest {
            kind,
            key_hash: None,
            serialized_payload: &p,
            source_timestamp: None,
        },
        Timestamp(t),
    )
    .unwrap();
}

fn extractor() -> KeyExtractor {
    KeyExtractor(Arc::new(|_kind, p: &[u8]| {
        let mut k = [0u8; 16];
        k[0] = *p.get(4)?;
        Some(k)
    }))
}

fn take_all(b: &mut Participant, r: ReaderId) -> Vec<TakenSample> {
    let mut out = Vec::new();
    let _ = b.take_samples(r, usize::MAX, &mut out, &mut Vec::new());
    out
}

#[test]
fn keep_last_applies_per_extracted_key_and_states_are_current() {
    let (mut a, mut b, w, r, t) = pair(History::KeepLast(1), None);
    b.set_key_extractor(r, extractor()).unwrap();
    let mut buf = vec![0u8; 65536];
    write(&mut a, w, ChangeKind::Alive, 1, 10, t);
    write(&mut a, w, ChangeKind::Alive, 2, 20, t);
    write(&mut a, w, ChangeKind::Alive, 1, 11, t);
    settle(&mut a, &mut b, Timestamp(t), &mut buf);
    assert_eq!(b.reader_sample_count(r), 2, "KEEP_LAST 1 per instance");
    assert!(b.reader_has_unread(r));
    let mut seen = Vec::new();
    assert_eq!(
        b.read_samples(r, usize::MAX, |s, st, was_read| seen.push((
            s.payload[8],
            st,
            was_read
        ))),
        2
    );
    assert_eq!(
        seen,
        vec![
            (20, InstanceState::Alive, false),
            (11, InstanceState::Alive, false)
        ]
    );
    assert!(!b.reader_has_unread(r), "read marks them read");
    write(&mut a, w, ChangeKind::NotAliveDisposed, 2, 0, t);
    settle(&mut a, &mut b, Timestamp(t), &mut buf);
    let got = take_all(&mut b, r);
    let got: Vec<_> = got
        .iter()
        .map(|s| {
            (
                s.sample.key_hash.unwrap()[0],
                s.sample.kind,
                s.instance_state,
                s.read,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (1, ChangeKind::Alive, InstanceState::Alive, true),
            // key 2's alive sample was replaced by its dispose (KEEP_LAST 1)
            (
                2,
                ChangeKind::NotAliveDisposed,
                InstanceState::NotAliveDisposed,
                false
            ),
        ]
    );
    assert_eq!(b.reader_sample_count(r), 0);
}

#[test]
fn without_an_extractor_keyless_changes_share_the_nil_instance() {
    let (mut a, mut b, w, r, t) = pair(History::KeepLast(1), None);
    let mut buf = vec![0u8; 65536];
    write(&mut a, w, ChangeKind::Alive, 1, 10, t);
    write(&mut a, w, ChangeKind::Alive, 2, 20, t);
    settle(&mut a, &mut b, Timestamp(t), &mut buf);
    let got = take_all(&mut b, r);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].sample.key_hash, None);
}

#[test]
fn a_take_from_a_full_keep_all_reader_releases_back_pressure() {
    let (mut a, mut b, w, r, mut t) = pair(History::KeepAll, Some(2));
    b.set_key_extractor(r, extractor()).unwrap();
    let mut buf = vec![0u8; 65536];
    for v in 0..5 {
        write(&mut a, w, ChangeKind::Alive, 1, v, t);
    }
    settle(&mut a, &mut b, Timestamp(t), &mut buf);
    assert_eq!(
        b.reader_sample_count(r),
        2,
        "max_samples holds the rest back"
    );
    let mut out = Vec::new();
    let o = b.take_samples(r, 1, &mut out, &mut Vec::new());
    assert_eq!((o.left, o.transmit_due), (1, true));
    let mut values = vec![out[0].sample.payload[8]];
    // The reader now asks for what it refused; the writer repairs; repeat until done.
    for _ in 0..50 {
        t += 200_000_000;
        a.handle_timeout(Timestamp(t));
        b.handle_timeout(Timestamp(t));
        settle(&mut a, &mut b, Timestamp(t), &mut buf);
        values.extend(take_all(&mut b, r).iter().map(|s| s.sample.payload[8]));
        if values.len() == 5 {
            break;
        }
    }
    assert_eq!(values, vec![0, 1, 2, 3, 4], "all delivered, in order, once");
}
