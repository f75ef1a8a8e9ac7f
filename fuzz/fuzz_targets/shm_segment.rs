//! A shared-memory segment written by someone outside the protocol (another process of the
//! same user, or a corrupted file): what `ferrodds_transport_shm` reads from it must never
//! make it panic, hang or hand out more than a slot.
//!
//! The first input byte chooses what is fuzzed:
//! - even: a receiver's ring. A small segment (8 slots of 128 bytes) is created, the rest of
//!   the input is written over it from the header's shared counters on (tail, head, wake-up
//!   words, then slot sequences, writer ids, lengths, payloads), and the receiver takes
//!   up to 64 messages: each one fits a slot, and
//!   the receiver then still takes a message a well-behaved sender puts in.
//! - odd: a peer's segment as a sender opens it. The rest of the input is the whole file; the
//!   sender validates its header (refused with a typed error, or accepted only if
//!   consistent) and a send into an accepted one returns.
#![no_main]

use std::io::{IoSlice, Write};
use std::path::PathBuf;

use ferrodds_transport_shm::{ShmConfig, ShmReceiver, ShmSender};
use libfuzzer_sys::fuzz_target;

const SLOTS: u32 = 8;
/// Where the header's shared counters start (tail, head, futex word, sleeping flag); the
/// fields before them are only read when a sender opens the segment.
const DYNAMIC: usize = 64;
const PAYLOAD: usize = 128;

/// This process's segment id (segments are named `ferrodds-<uid>-<id>`; each input's
/// receiver removes its file when dropped, so one id serves every input).
fn segment_id() -> u16 {
    (20_000 + std::process::id() % 20_000) as u16
}

fn dir() -> PathBuf {
    std::env::temp_dir()
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        let mut config = ShmConfig::new(segment_id());
        config.dir = dir();
        config.slots = SLOTS;
        config.slot_payload = PAYLOAD;
        let mut rx = ShmReceiver::create(&config).expect("segment");
        {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(rx.path())
                .expect("segment file");
            let len = f.metadata().expect("metadata").len() as usize;
            let n = rest.len().min(len - DYNAMIC);
            std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(DYNAMIC as u64)).unwrap();
            f.write_all(&rest[..n]).expect("write");
        }
        let mut buf = Vec::with_capacity(rx.max_message_size());
        for _ in 0..64 {
            match rx.try_recv(&mut buf) {
                Some(r) => {
                    assert!(r.len <= PAYLOAD && r.len == buf.len(), "{r:?}");
                }
                None => break,
            }
        }
        // A sender following the protocol still gets through once the head is free (or
        // finds the ring full: garbage may hold slots until the stall timeout).
        if let Ok(tx) = ShmSender::open_path(rx.path(), 1) {
            let _ = tx.send(&[IoSlice::new(b"RTPS after garbage")]);
            let _ = rx.try_recv(&mut buf);
        }
    } else {
        let path = dir().join(format!("ferrodds-fuzz-peer-{}", std::process::id()));
        std::fs::write(&path, rest).expect("peer file");
        if let Ok(tx) = ShmSender::open_path(&path, 1) {
            assert!(tx.max_message_size() > 0);
            let _ = tx.send(&[IoSlice::new(b"RTPS to a forged segment")]);
        }
        let _ = std::fs::remove_file(&path);
    }
});
