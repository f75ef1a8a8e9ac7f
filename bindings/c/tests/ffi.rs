//! The C API called from Rust through its exported functions: null pointers, deleted,
//! forged and wrong-kind handles, bad configuration values, listener callbacks (including
//! a callback that tries to delete its participant) and a handle deleted while another
//! thread waits on it. Loopback only, domain 137.
#![allow(unsafe_code)]

use std::ffi::{c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use ferrodds_c::*;

const DOMAIN: u32 = 137;
const SEC: i64 = 1_000_000_000;

fn last_error() -> String {
    // SAFETY: the library returns a pointer to this thread's NUL-terminated message, valid
    // until the next failing call on this thread (none happens before it is copied).
    unsafe { CStr::from_ptr(ferrodds_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

fn loopback() -> FerroddsParticipantConfig {
    let mut cfg = std::mem::MaybeUninit::uninit();
    assert_eq!(ferrodds_participant_config_loopback(cfg.as_mut_ptr()), 0);
    // SAFETY: the call above succeeded and filled every field.
    unsafe { cfg.assume_init() }
}

fn participant() -> FerroddsParticipant {
    let mut p = 0;
    assert_eq!(ferrodds_participant_create(DOMAIN, &loopback(), &mut p), 0);
    p
}

fn shape(color: &str, x: i32) -> Vec<u8> {
    let mut p = vec![0, 1, 0, 0];
    p.extend_from_slice(&(color.len() as u32 + 1).to_le_bytes());
    p.extend_from_slice(color.as_bytes());
    p.push(0);
    while p.len() % 4 != 0 {
        p.push(0);
    }
    for v in [x, 0, 30] {
        p.extend_from_slice(&v.to_le_bytes());
    }
    p
}

#[test]
fn null_pointers_and_stale_handles_are_errors() {
    let p = participant();
    let mut t = 0;
    assert_eq!(
        ferrodds_topic_create(p, null(), FERRODDS_TYPE_SHAPE, &mut t),
        FERRODDS_RETCODE_BAD_PARAMETER
    );
    assert!(last_error().contains("name is NULL"), "{}", last_error());
    assert_eq!(
        ferrodds_topic_create(p, c"t".as_ptr(), FERRODDS_TYPE_SHAPE, null_mut()),
        FERRODDS_RETCODE_BAD_PARAMETER
    );
    assert_eq!(
        ferrodds_topic_create(p, c"ffi_t".as_ptr(), FERRODDS_TYPE_SHAPE, &mut t),
        0
    );
    let (mut w, mut r) = (0, 0);
    assert_eq!(ferrodds_writer_create(p, t, null(), null(), &mut w), 0);
    assert_eq!(ferrodds_reader_create(p, t, null(), null(), &mut r), 0);

    // Wrong kinds.
    let s = shape("RED", 1);
    assert_eq!(
        ferrodds_write(t, s.as_ptr(), s.len()),
        FERRODDS_RETCODE_BAD_PARAMETER
    );
    assert!(last_error().contains("the handle is a topic"));
    assert_eq!(ferrodds_reader_delete(w), FERRODDS_RETCODE_BAD_PARAMETER);
    assert_eq!(
        ferrodds_participant_delete(r),
        FERRODDS_RETCODE_BAD_PARAMETER
    );
    let mut ws = 0;
    assert_eq!(ferrodds_waitset_create(&mut ws), 0);
    assert_eq!(
        ferrodds_waitset_attach_status(ws, t, FERRODDS_STATUS_DATA_AVAILABLE, 1),
        FERRODDS_RETCODE_BAD_PARAMETER
    );
    assert_eq!(
        ferrodds_waitset_detach(ws, r),
        FERRODDS_RETCODE_BAD_PARAMETER,
        "nothing attached"
    );

    // Null out-pointers and buffers.
    let mut info = FerroddsSampleInfo::default();
    let mut len = 0;
    assert_eq!(
        ferrodds_take(r, null_mut(), 0, null_mut(), &mut info),
        FERRODDS_RETCODE_BAD_PARAMETER
    );
    assert_eq!(
        ferrodds_take(r, null_mut(), 0, &mut len, &mut info),
        FERRODDS_RETCODE_NO_DATA
    );
    assert_eq!(
        ferrodds_take_each(r, 0, None, null_mut(), null_mut()),
        FERRODDS_RETCODE_BAD_PARAMETER
    );
    assert_eq!(
        ferrodds_register_instance(w, s.as_ptr(), s.len(), null_mut()),
        FERRODDS_RETCODE_BAD_PARAMETER
    );
    assert_eq!(
        ferrodds_writer_get_publication_matched_status(w, null_mut()),
        FERRODDS_RETCODE_BAD_PARAMETER
    );
    assert_eq!(
        ferrodds_waitset_wait(ws, 0, null_mut(), 4, null_mut()),
        FERRODDS_RETCODE_BAD_PARAMETER
    );
    assert_eq!(
        ferrodds_writer_wait_for_matched(w, 1, -5),
        FERRODDS_RETCODE_BAD_PARAMETER
    );
    assert!(last_error().contains("-5"), "{}", last_error());

    // Deleted handles: every kind, every function family.
    assert_eq!(ferrodds_participant_delete(p), 0);
    let mut h = FerroddsInstanceHandle::default();
    let mut pm = FerroddsPublicationMatchedStatus::default();
    let mut sm = FerroddsSubscriptionMatchedStatus::default();
    let codes = [
        ferrodds_write(w, s.as_ptr(), s.len()),
        ferrodds_write_flush(w, s.as_ptr(), s.len()),
        ferrodds_write_with_timestamp(w, s.as_ptr(), s.len(), 5),
        ferrodds_writer_flush(w),
        ferrodds_dispose(w, s.as_ptr(), s.len()),
        ferrodds_unregister_instance(w, s.as_ptr(), s.len()),
        ferrodds_register_instance(w, s.as_ptr(), s.len(), &mut h),
        ferrodds_lookup_instance(w, s.as_ptr(), s.len(), &mut h),
        ferrodds_writer_wait_for_acknowledgments(w, 0),
        ferrodds_writer_get_publication_matched_status(w, &mut pm),
        ferrodds_writer_set_listener(w, null()),
        ferrodds_writer_delete(w),
        ferrodds_take(r, null_mut(), 0, &mut len, &mut info),
        ferrodds_reader_wait_for_data(r, 0),
        ferrodds_reader_get_subscription_matched_status(r, &mut sm),
        ferrodds_reader_set_listener(r, null()),
        ferrodds_waitset_attach_reader(ws, r, 1),
        ferrodds_reader_delete(r),
        ferrodds_topic_delete(t),
        ferrodds_participant_delete(p),
        ferrodds_writer_create(p, t, null(), null(), &mut w),
    ];
    for (i, c) in codes.iter().enumerate() {
        assert_eq!(*c, FERRODDS_RETCODE_ALREADY_DELETED, "call {i}");
    }
    for forged in [0, u64::MAX, 0x7777_0000_0001] {
        assert_eq!(
            ferrodds_writer_flush(forged),
            FERRODDS_RETCODE_ALREADY_DELETED
        );
    }
    assert_eq!(ferrodds_waitset_delete(ws), 0);
    assert_eq!(
        ferrodds_waitset_delete(ws),
        FERRODDS_RETCODE_ALREADY_DELETED
    );
}

#[test]
fn bad_configuration_and_qos_values_are_named() {
    let mut p = 0;
    let mut cfg = loopback();
    cfg.peers = c"127.0.0.1, 1.2.3".as_ptr();
    assert_eq!(
        ferrodds_participant_create(DOMAIN, &cfg, &mut p),
        FERRODDS_RETCODE_BAD_PARAMETER
    );
    assert!(last_error().contains("\"1.2.3\""), "{}", last_error());
    let mut cfg = loopback();
    cfg.multicast = 5;
    assert_eq!(
        ferrodds_participant_create(DOMAIN, &cfg, &mut p),
        FERRODDS_RETCODE_BAD_PARAMETER
    );
    assert!(last_error().contains("config.multicast = 5"));

    let p = participant();
    let mut t = 0;
    assert_eq!(
        ferrodds_topic_create(p, c"ffi_qos".as_ptr(), FERRODDS_TYPE_TEST_DATA, &mut t),
        0
    );
    let mut q = std::mem::MaybeUninit::uninit();
    assert_eq!(ferrodds_qos_writer_default(q.as_mut_ptr()), 0);
    // SAFETY: filled by the call above.
    let q = unsafe { q.assume_init() };
    assert_eq!(q.reliability, FERRODDS_RELIABILITY_RELIABLE);
    assert_eq!(q.max_blocking_time_ns, 100_000_000);
    assert_eq!(q.max_samples, FERRODDS_LENGTH_UNLIMITED);
    let mut w = 0;
    for (field, bad) in [
        (
            "qos.reliability = 9",
            FerroddsQos {
                reliability: 9,
                ..q
            },
        ),
        (
            "qos.max_samples = 0",
            FerroddsQos {
                max_samples: 0,
                ..q
            },
        ),
        (
            "qos.deadline_ns = -2",
            FerroddsQos {
                deadline_ns: -2,
                ..q
            },
        ),
        ("qos.batching = 3", FerroddsQos { batching: 3, ..q }),
    ] {
        assert_eq!(
            ferrodds_writer_create(p, t, &bad, null(), &mut w),
            FERRODDS_RETCODE_BAD_PARAMETER,
            "{field}"
        );
        assert!(last_error().contains(field), "{}", last_error());
    }
    let good = FerroddsQos {
        partition: c"part".as_ptr(),
        history_kind: FERRODDS_HISTORY_KEEP_ALL,
        ..q
    };
    assert_eq!(ferrodds_writer_create(p, t, &good, null(), &mut w), 0);
    // Unkeyed: no dispose.
    let mut s = vec![0u8, 1, 0, 0];
    s.extend_from_slice(&[0; 28]);
    assert_eq!(ferrodds_write(w, s.as_ptr(), s.len()), 0);
    assert_eq!(
        ferrodds_dispose(w, s.as_ptr(), s.len()),
        FERRODDS_RETCODE_PRECONDITION_NOT_MET
    );
    assert_eq!(ferrodds_participant_delete(p), 0);
}

#[derive(Default)]
struct Seen {
    matched: AtomicU32,
    data: AtomicU32,
    delete_from_callback: AtomicI32,
    participant: std::sync::atomic::AtomicU64,
}

unsafe extern "C" fn on_pub_matched(
    _w: FerroddsWriter,
    status: *const FerroddsPublicationMatchedStatus,
    user: *mut c_void,
) {
    // SAFETY: `user` is the `Seen` the test keeps alive until after the writer is deleted;
    // `status` is valid during the callback.
    let (seen, status) = unsafe { (&*(user as *const Seen), &*status) };
    seen.matched.store(status.current_count, Ordering::SeqCst);
}

unsafe extern "C" fn on_data(_r: FerroddsReader, user: *mut c_void) {
    // SAFETY: as in `on_pub_matched`.
    let seen = unsafe { &*(user as *const Seen) };
    seen.data.fetch_add(1, Ordering::SeqCst);
    let rc = ferrodds_participant_delete(seen.participant.load(Ordering::SeqCst));
    seen.delete_from_callback.store(rc, Ordering::SeqCst);
}

#[test]
fn listeners_fire_and_cannot_delete_their_participant() {
    let p = participant();
    let seen = Box::new(Seen::default());
    seen.participant.store(p, Ordering::SeqCst);
    let user = &*seen as *const Seen as *mut c_void;
    let mut t = 0;
    assert_eq!(
        ferrodds_topic_create(p, c"ffi_listen".as_ptr(), FERRODDS_TYPE_SHAPE, &mut t),
        0
    );
    let mut rq = std::mem::MaybeUninit::uninit();
    assert_eq!(ferrodds_qos_reader_default(rq.as_mut_ptr()), 0);
    // SAFETY: filled by the call above.
    let mut rq = unsafe { rq.assume_init() };
    rq.reliability = FERRODDS_RELIABILITY_RELIABLE;
    let rl = FerroddsReaderListener {
        on_data_available: Some(on_data),
        on_subscription_matched: None,
        on_requested_incompatible_qos: None,
        on_sample_lost: None,
        user,
    };
    let wl = FerroddsWriterListener {
        on_publication_matched: Some(on_pub_matched),
        on_offered_incompatible_qos: None,
        user,
    };
    let (mut w, mut r) = (0, 0);
    assert_eq!(ferrodds_reader_create(p, t, &rq, &rl, &mut r), 0);
    assert_eq!(ferrodds_writer_create(p, t, null(), &wl, &mut w), 0);
    assert_eq!(ferrodds_writer_wait_for_matched(w, 1, 10 * SEC), 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.matched.load(Ordering::SeqCst) != 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        seen.matched.load(Ordering::SeqCst),
        1,
        "on_publication_matched"
    );
    let s = shape("GREEN", 5);
    assert_eq!(ferrodds_write(w, s.as_ptr(), s.len()), 0);
    while seen.data.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(seen.data.load(Ordering::SeqCst) >= 1, "on_data_available");
    assert_eq!(
        seen.delete_from_callback.load(Ordering::SeqCst),
        FERRODDS_RETCODE_ILLEGAL_OPERATION
    );
    // The participant still works.
    let mut len = 0;
    let mut buf = [0u8; 64];
    let mut info = FerroddsSampleInfo::default();
    assert_eq!(
        ferrodds_take(r, buf.as_mut_ptr(), buf.len(), &mut len, &mut info),
        0
    );
    assert_eq!(&buf[..len], &s[..]);
    assert_eq!(ferrodds_reader_set_listener(r, null()), 0);
    assert_eq!(ferrodds_participant_delete(p), 0);
    drop(seen);
}

unsafe extern "C" fn delete_self(r: FerroddsReader, user: *mut c_void) {
    // SAFETY: `user` is the `AtomicI32` of the test, alive until the participant is deleted.
    let rc = unsafe { &*(user as *const AtomicI32) };
    rc.store(ferrodds_reader_delete(r), Ordering::SeqCst);
}

#[test]
fn a_reader_may_delete_itself_from_its_callback() {
    let p = participant();
    let mut t = 0;
    assert_eq!(
        ferrodds_topic_create(p, c"ffi_self".as_ptr(), FERRODDS_TYPE_SHAPE, &mut t),
        0
    );
    let rc = Box::new(AtomicI32::new(-1));
    let l = FerroddsReaderListener {
        on_data_available: Some(delete_self),
        on_subscription_matched: None,
        on_requested_incompatible_qos: None,
        on_sample_lost: None,
        user: &*rc as *const AtomicI32 as *mut c_void,
    };
    let (mut w, mut r) = (0, 0);
    assert_eq!(ferrodds_reader_create(p, t, null(), &l, &mut r), 0);
    assert_eq!(ferrodds_writer_create(p, t, null(), null(), &mut w), 0);
    assert_eq!(ferrodds_writer_wait_for_matched(w, 1, 10 * SEC), 0);
    let s = shape("BLUE", 1);
    assert_eq!(ferrodds_write(w, s.as_ptr(), s.len()), 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while rc.load(Ordering::SeqCst) == -1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(rc.load(Ordering::SeqCst), FERRODDS_RETCODE_OK);
    assert_eq!(ferrodds_reader_delete(r), FERRODDS_RETCODE_ALREADY_DELETED);
    // The writer sees the reader gone, and the participant keeps working.
    let mut pm = FerroddsPublicationMatchedStatus::default();
    while Instant::now() < deadline {
        assert_eq!(
            ferrodds_writer_get_publication_matched_status(w, &mut pm),
            0
        );
        if pm.current_count == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(pm.current_count, 0);
    assert_eq!(ferrodds_write(w, s.as_ptr(), s.len()), 0);
    assert_eq!(ferrodds_participant_delete(p), 0);
}

#[test]
fn a_reader_deleted_during_a_wait_ends_the_wait_cleanly() {
    let p = participant();
    let mut t = 0;
    assert_eq!(
        ferrodds_topic_create(p, c"ffi_wait".as_ptr(), FERRODDS_TYPE_SHAPE, &mut t),
        0
    );
    let mut r = 0;
    assert_eq!(ferrodds_reader_create(p, t, null(), null(), &mut r), 0);
    let waiter = std::thread::spawn(move || ferrodds_reader_wait_for_data(r, SEC / 2));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(ferrodds_reader_delete(r), 0);
    assert_eq!(waiter.join().unwrap(), FERRODDS_RETCODE_TIMEOUT);
    assert_eq!(
        ferrodds_reader_wait_for_data(r, 0),
        FERRODDS_RETCODE_ALREADY_DELETED
    );
    assert_eq!(ferrodds_participant_delete(p), 0);
}
