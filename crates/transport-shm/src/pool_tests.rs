//! Unit tests of the loan pool (with access to its private layout).

use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;
use crate::{cleanup_stale, net_namespace, real_uid, PoolReadError};

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

/// A private directory under the temp dir, removed on drop.
struct TestDir(PathBuf);

impl TestDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "ferrodds-pool-test-{}-{name}-{}",
            std::process::id(),
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn config(&self, id: u16) -> PoolConfig {
        PoolConfig {
            dir: self.0.clone(),
            ..PoolConfig::new(id)
        }
    }

    /// A small pool: one class of `count` chunks of `size` bytes.
    fn small(&self, id: u16, size: usize, count: u32) -> PoolConfig {
        PoolConfig {
            min_chunk: size,
            max_chunk: size,
            min_chunks: count,
            max_chunks: count,
            ..self.config(id)
        }
    }

    fn reader(&self) -> PoolReader {
        PoolReader::new(self.0.clone(), real_uid())
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// Allocates, fills with `fill` and publishes a chunk of `len` bytes.
fn publish(pool: &LoanPool, len: usize, fill: impl Fn(usize) -> u8) -> SharedChunk {
    let mut chunk = pool.alloc(len).expect("a free chunk");
    for (i, b) in chunk.as_mut_slice().iter_mut().enumerate() {
        *b = fill(i);
    }
    chunk.publish()
}

#[test]
fn round_trip_through_a_fresh_reader() {
    let dir = TestDir::new("roundtrip");
    let pool = LoanPool::create(&dir.config(7400)).unwrap();
    assert_eq!(pool.id(), 7400);
    assert_eq!(pool.path(), pool_path(&dir.0, real_uid(), 7400));
    let mut out = Vec::new();
    for len in [1, 63_000, 1 << 20, 10 << 20] {
        let shared = publish(&pool, len, |i| (i * 7 + len) as u8);
        assert_eq!(shared.bytes().len(), len);
        let r = shared.reference();
        assert_eq!(
            (r.pool, r.owner, r.len),
            (7400, std::process::id(), len as u32)
        );
        assert_eq!(ChunkRef::decode(&r.encode()), Some(r));
        let mut reader = dir.reader();
        reader.copy(&r, &mut out).unwrap();
        assert_eq!(out, shared.bytes());
        assert_eq!(reader.mapped_pools(), 1);
    }
    assert_eq!(pool.stats().allocations, 4);
}

#[test]
fn chunk_ref_encoding() {
    let r = ChunkRef {
        pool: 0x0102,
        owner: 0x0304_0506,
        class: 7,
        index: 0x0809_0a0b,
        generation: 0x0c0d_0e10,
        len: 0x1112_1314,
    };
    let b = r.encode();
    assert_eq!(
        b,
        [
            0x02, 0x01, 7, 0, 0x06, 0x05, 0x04, 0x03, 0x0b, 0x0a, 0x09, 0x08, 0x10, 0x0e, 0x0d,
            0x0c, 0x14, 0x13, 0x12, 0x11
        ]
    );
    assert_eq!(ChunkRef::decode(&b), Some(r));
    let mut longer = b.to_vec();
    longer.push(0xff);
    assert_eq!(ChunkRef::decode(&longer), Some(r));
    assert_eq!(ChunkRef::decode(&b[..19]), None);
    let mut padded = b;
    padded[3] = 1;
    assert_eq!(ChunkRef::decode(&padded), None);
}

#[test]
fn default_layout_and_config_validation() {
    let layout = Layout::plan(&PoolConfig::new(1)).unwrap();
    let sizes: Vec<_> = layout
        .classes()
        .iter()
        .map(|c| (c.chunk_size, c.count))
        .collect();
    assert_eq!(
        sizes,
        [
            (64 << 10, 256),
            (128 << 10, 256),
            (256 << 10, 256),
            (512 << 10, 256),
            (1 << 20, 256),
            (2 << 20, 256),
            (4 << 20, 256),
            (8 << 20, 128),
            (16 << 20, 64)
        ]
    );
    for c in layout.classes() {
        assert!(c.gen_off >= POOL_HEADER_SIZE && c.gen_off % 64 == 0);
        assert!(c.data_off % 4096 == 0);
    }
    let dir = TestDir::new("config");
    for bad in [
        PoolConfig {
            min_chunk: 3000,
            ..dir.config(1)
        },
        PoolConfig {
            min_chunk: 32,
            ..dir.config(1)
        },
        PoolConfig {
            min_chunk: 1 << 20,
            max_chunk: 1 << 16,
            ..dir.config(1)
        },
        PoolConfig {
            min_chunk: 64,
            max_chunk: 64 << 16,
            ..dir.config(1)
        },
        PoolConfig {
            max_chunk: 1 << 31,
            ..dir.config(1)
        },
        PoolConfig {
            min_chunks: 0,
            ..dir.config(1)
        },
        PoolConfig {
            min_chunks: 9,
            max_chunks: 8,
            ..dir.config(1)
        },
        PoolConfig {
            max_chunks: POOL_MAX_CLASS_CHUNKS + 1,
            ..dir.config(1)
        },
        PoolConfig {
            min_chunk: 1 << 30,
            max_chunk: 1 << 30,
            min_chunks: 1 << 10,
            max_chunks: 1 << 10,
            ..dir.config(1)
        },
    ] {
        assert!(
            matches!(LoanPool::create(&bad), Err(ShmError::InvalidConfig(_))),
            "{bad:?}"
        );
    }
    assert_eq!(fs::read_dir(&dir.0).unwrap().count(), 0);
}

#[test]
fn class_choice_and_exhaustion() {
    let dir = TestDir::new("classes");
    let config = PoolConfig {
        min_chunk: 4096,
        max_chunk: 16384,
        class_budget: 3 * 4096,
        min_chunks: 1,
        max_chunks: 8,
        ..dir.config(7401)
    };
    // Classes 4096 x 3, 8192 x 1, 16384 x 1.
    let pool = LoanPool::create(&config).unwrap();
    assert_eq!(pool.max_len(), 16384);
    assert!(pool.alloc(0).is_none());
    assert!(pool.alloc(16385).is_none());
    let class_of = |len| pool.alloc(len).unwrap().publish().reference().class;
    assert_eq!(class_of(1), 0);
    assert_eq!(class_of(4096), 0);
    assert_eq!(class_of(4097), 1);
    assert_eq!(class_of(8192), 1);
    assert_eq!(class_of(8193), 2);
    assert_eq!(class_of(16384), 2);

    let held: Vec<_> = (0..3).map(|_| pool.alloc(100).unwrap()).collect();
    assert!(pool.alloc(100).is_none());
    assert_eq!(pool.stats().exhausted, 1);
    // Another class is unaffected.
    assert!(pool.alloc(5000).is_some());
    let mut held = held.into_iter();
    drop(held.next());
    let again = pool.alloc(100).expect("the dropped chunk is free again");
    assert!(pool.alloc(100).is_none());
    assert_eq!(pool.stats().exhausted, 2);
    drop((again, held));
    assert_eq!(pool.stats().allocations, 6 + 3 + 1 + 1);
}

#[test]
fn released_chunks_wait_in_quarantine_then_are_reused_last_in_first_out() {
    let dir = TestDir::new("lifo");
    // 8 chunks of 4 KiB: a quarantine of 4 (half the class).
    let pool = LoanPool::create(&dir.small(7402, 4096, 8)).unwrap();
    let index = |c: &SharedChunk| c.reference().index;
    // Fresh pool: 0, 1, 2, ... in order.
    let a = publish(&pool, 10, |_| 1);
    assert_eq!(index(&a), 0);
    drop(a);
    // 0 waits in quarantine: the next chunks come from the untouched ones.
    let held: Vec<_> = (0..4).map(|_| publish(&pool, 10, |_| 2)).collect();
    assert_eq!(held.iter().map(index).collect::<Vec<_>>(), [1, 2, 3, 4]);
    // Releasing 1..4 pushes 0 out of the quarantine (it holds the last 4 released): the
    // stack then gives 0 back first (last in), before 5, 6, 7.
    drop(held);
    let c = publish(&pool, 10, |_| 3);
    assert_eq!(index(&c), 0);
    let rest: Vec<_> = (0..3).map(|_| publish(&pool, 10, |_| 3)).collect();
    assert_eq!(rest.iter().map(index).collect::<Vec<_>>(), [5, 6, 7]);
    // Stack empty: the oldest quarantined chunk (1) is taken rather than refusing.
    let d = publish(&pool, 10, |_| 4);
    assert_eq!(index(&d), 1);
    // An unpublished chunk dropped is released the same way.
    drop(pool.alloc(10).unwrap());
    drop((c, rest, d));
}

/// A chunk released just after its reference was sent (a best-effort writer's) stays
/// readable through as many later releases as the quarantine holds.
#[test]
fn a_reference_outlives_its_chunks_release_by_the_quarantine() {
    let dir = TestDir::new("quarantine");
    let pool = LoanPool::create(&dir.small(7409, 4096, 8)).unwrap();
    let mut reader = dir.reader();
    let mut out = Vec::new();
    let first = publish(&pool, 100, |_| 0x5a);
    let r = first.reference();
    drop(first);
    // Three more written and released (a stream): the first one is still in quarantine.
    for i in 0..3u8 {
        drop(publish(&pool, 100, move |_| i));
    }
    reader.copy(&r, &mut out).unwrap();
    assert_eq!(out, [0x5a; 100]);
    // Five more: it left the quarantine and was reused.
    for i in 0..5u8 {
        drop(publish(&pool, 100, move |_| i));
    }
    assert!(reader.copy(&r, &mut out).is_err());
}

#[test]
fn stale_references_are_detected() {
    let dir = TestDir::new("stale");
    let pool = LoanPool::create(&dir.small(7403, 4096, 1)).unwrap();
    let mut reader = dir.reader();
    let mut out = Vec::new();
    let first = publish(&pool, 100, |_| 0xaa);
    let r1 = first.reference();
    assert_eq!(r1.generation % 2, 0);
    reader.copy(&r1, &mut out).unwrap();
    assert_eq!(out, [0xaa; 100]);
    // Still valid after the owner freed the chunk, until it is reused.
    drop(first);
    reader.copy(&r1, &mut out).unwrap();
    assert_eq!(out, [0xaa; 100]);
    // Reused: the old reference is stale.
    let second = publish(&pool, 50, |_| 0xbb);
    let r2 = second.reference();
    assert_eq!(
        (r2.index, r2.generation),
        (r1.index, r1.generation.wrapping_add(2))
    );
    assert_eq!(reader.copy(&r1, &mut out), Err(PoolReadError::Stale));
    assert!(out.is_empty());
    reader.copy(&r2, &mut out).unwrap();
    assert_eq!(out, [0xbb; 50]);
    // An odd generation is malformed.
    let odd = ChunkRef {
        generation: r2.generation | 1,
        ..r2
    };
    assert_eq!(reader.copy(&odd, &mut out), Err(PoolReadError::OutOfRange));
    // Being rewritten: stale; dropped unpublished: still stale; then the next publish works.
    drop(second);
    let writing = pool.alloc(50).unwrap();
    assert_eq!(reader.copy(&r2, &mut out), Err(PoolReadError::Stale));
    drop(writing);
    assert_eq!(reader.copy(&r2, &mut out), Err(PoolReadError::Stale));
    let third = publish(&pool, 20, |_| 0xcc);
    let r3 = third.reference();
    assert_eq!(r3.generation, r2.generation.wrapping_add(4));
    reader.copy(&r3, &mut out).unwrap();
    assert_eq!(out, [0xcc; 20]);
    // Another owner pid (the file was replaced, or a late reference): stale.
    let other = ChunkRef {
        owner: dead_pid(),
        ..r3
    };
    assert_eq!(reader.copy(&other, &mut out), Err(PoolReadError::Stale));
    // The pool is still usable by its real references.
    reader.copy(&r3, &mut out).unwrap();
    // Unknown pool id: not found.
    let missing = ChunkRef { pool: 9999, ..r3 };
    assert_eq!(
        reader.copy(&missing, &mut out),
        Err(PoolReadError::NotFound)
    );
}

/// A view reads the chunk in place (the owner's own bytes, no copy) and stays consistent
/// until the owner reuses the chunk; it keeps the pool mapped after the reader forgets it.
#[test]
fn views_read_in_place_until_the_chunk_is_reused() {
    let dir = TestDir::new("view");
    let pool = LoanPool::create(&dir.small(7413, 4096, 1)).unwrap();
    let mut reader = dir.reader();
    let first = publish(&pool, 100, |i| i as u8);
    let r1 = first.reference();
    let view = reader.view(&r1).unwrap();
    assert_eq!(view.reference(), &r1);
    assert_eq!(view.bytes(), first.bytes());
    assert!(view.is_consistent());
    // Forgotten by the reader (its owner said goodbye): the view still reads.
    reader.forget(7413);
    assert_eq!(reader.mapped_pools(), 0);
    assert_eq!(view.bytes(), first.bytes());
    // Released and reused: the view sees the new bytes and says it is no longer consistent;
    // a new view of the old reference is refused.
    drop(first);
    assert!(view.is_consistent(), "released but not reused");
    let second = publish(&pool, 100, |_| 0xee);
    assert_eq!(view.bytes(), [0xee; 100], "the owner's memory, not a copy");
    assert!(!view.is_consistent());
    assert_eq!(reader.view(&r1).err(), Some(PoolReadError::Stale));
    assert!(reader.view(&second.reference()).unwrap().is_consistent());
    let missing = ChunkRef {
        pool: 9999,
        ..second.reference()
    };
    assert_eq!(reader.view(&missing).err(), Some(PoolReadError::NotFound));
}

#[test]
fn a_replaced_pool_of_the_same_id_and_pid_is_reopened() {
    let dir = TestDir::new("replaced");
    let config = dir.small(7404, 4096, 2);
    let mut reader = dir.reader();
    let mut out = Vec::new();
    let pool = LoanPool::create(&config).unwrap();
    let old = publish(&pool, 10, |_| 1);
    reader.copy(&old.reference(), &mut out).unwrap();
    drop((old, pool));
    let pool = LoanPool::create(&config).unwrap();
    let new = publish(&pool, 10, |_| 2);
    // The cached mapping is of the removed file: the generations differ (per-pool seeds), so
    // the reader re-checks the file, re-opens it and copies the new contents.
    reader.copy(&new.reference(), &mut out).unwrap();
    assert_eq!(out, [2; 10]);
    assert_eq!(reader.mapped_pools(), 1);
    reader.forget(7404);
    assert_eq!(reader.mapped_pools(), 0);
    reader.copy(&new.reference(), &mut out).unwrap();
    assert_eq!(out, [2; 10]);
    // Once the pool is gone: not found (after the re-check on the stale reference).
    let r = new.reference();
    drop((new, pool));
    assert_eq!(reader.copy(&r, &mut out), Ok(()));
    let stale = ChunkRef {
        generation: r.generation.wrapping_add(2),
        ..r
    };
    assert_eq!(reader.copy(&stale, &mut out), Err(PoolReadError::NotFound));
}

#[test]
fn references_out_of_range_are_refused() {
    let dir = TestDir::new("bounds");
    let config = PoolConfig {
        min_chunk: 4096,
        max_chunk: 8192,
        min_chunks: 2,
        max_chunks: 2,
        ..dir.config(7405)
    };
    let pool = LoanPool::create(&config).unwrap();
    let shared = publish(&pool, 4096, |i| i as u8);
    let r = shared.reference();
    let mut reader = dir.reader();
    let mut out = Vec::new();
    reader.copy(&r, &mut out).unwrap();
    let bad = [
        ChunkRef { class: 2, ..r },
        ChunkRef { class: 255, ..r },
        ChunkRef { index: 2, ..r },
        ChunkRef {
            index: u32::MAX,
            ..r
        },
        ChunkRef { len: 4097, ..r },
        ChunkRef { len: u32::MAX, ..r },
        ChunkRef {
            class: 1,
            index: 1,
            len: 8193,
            ..r
        },
    ];
    for b in bad {
        assert_eq!(
            reader.copy(&b, &mut out),
            Err(PoolReadError::OutOfRange),
            "{b:?}"
        );
        assert!(out.is_empty());
    }
    // Shorter than published is fine (a prefix).
    reader.copy(&ChunkRef { len: 7, ..r }, &mut out).unwrap();
    assert_eq!(out, [0, 1, 2, 3, 4, 5, 6]);
}

/// Header field offsets of the first classes' entries, for the mutations below.
fn header_words(class_count: usize) -> Vec<(usize, usize)> {
    let mut words = vec![
        (H_MAGIC, 8),
        (H_VERSION, 4),
        (H_HEADER_SIZE, 4),
        (H_OWNER_PID, 4),
        (H_OWNER_ID, 4),
        (H_CLASSES, 4),
        (H_TOTAL, 8),
    ];
    for i in 0..class_count + 1 {
        let e = H_CLASS_TABLE + i * CLASS_ENTRY;
        words.extend([
            (e + C_CHUNK_SIZE, 8),
            (e + C_COUNT, 4),
            (e + C_GEN_OFF, 8),
            (e + C_DATA_OFF, 8),
        ]);
    }
    words
}

#[test]
fn hostile_headers_are_refused_without_panicking() {
    let dir = TestDir::new("hostile");
    let config = PoolConfig {
        min_chunk: 4096,
        max_chunk: 8192,
        min_chunks: 2,
        max_chunks: 2,
        ..dir.config(7406)
    };
    let pool = LoanPool::create(&config).unwrap();
    let shared = publish(&pool, 4096, |_| 5);
    let r = shared.reference();
    let valid = fs::read(pool.path()).unwrap();
    let path = pool.path().to_path_buf();
    drop(shared);
    drop(pool);
    assert!(!path.exists());
    let total = valid.len();

    let check = |bytes: &[u8]| -> Result<(), PoolReadError> {
        fs::write(&path, bytes).unwrap();
        let mut out = Vec::new();
        let result = dir.reader().copy(&r, &mut out);
        if result.is_err() {
            assert!(out.is_empty());
        }
        result
    };
    let is_bad = |res: Result<(), PoolReadError>| matches!(res, Err(PoolReadError::BadPool(_)));
    // The valid file works (its owner pid is ours: alive).
    assert_eq!(check(&valid), Ok(()));
    // Truncated files and garbage.
    for len in [0, 8, 100, POOL_HEADER_SIZE - 1, POOL_HEADER_SIZE, total - 1] {
        assert!(is_bad(check(&valid[..len])), "truncated to {len}");
    }
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..50 {
        let garbage: Vec<u8> = (0..total)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        assert!(is_bad(check(&garbage)));
        // Garbage behind a valid magic.
        let mut g = garbage;
        g[..8].copy_from_slice(&valid[..8]);
        assert!(is_bad(check(&g)));
    }

    // Every header word set to extreme values: any outcome but a panic.
    let extremes: [u64; 9] = [
        0,
        1,
        4095,
        4096,
        0x7fff_ffff,
        0x8000_0000,
        u32::MAX as u64,
        1 << 40,
        u64::MAX,
    ];
    let mut refused = 0;
    for (off, width) in header_words(2) {
        for &v in &extremes {
            let mut bytes = valid.clone();
            if width == 8 {
                bytes[off..off + 8].copy_from_slice(&v.to_ne_bytes());
            } else {
                bytes[off..off + 4].copy_from_slice(&(v as u32).to_ne_bytes());
            }
            match check(&bytes) {
                Ok(()) => {}
                Err(PoolReadError::BadPool(_)) => refused += 1,
                Err(PoolReadError::NotFound | PoolReadError::OutOfRange | PoolReadError::Stale) => {
                }
            }
        }
    }
    assert!(refused > 50, "only {refused} mutations refused");

    // Specific mutations that must be refused.
    let mut_u64 = |off: usize, v: u64| {
        let mut b = valid.clone();
        b[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        b
    };
    let mut_u32 = |off: usize, v: u32| {
        let mut b = valid.clone();
        b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        b
    };
    let class1 = H_CLASS_TABLE + CLASS_ENTRY;
    let layout = Layout::plan(&config).unwrap();
    let c0 = layout.classes()[0];
    let c1 = layout.classes()[1];
    for bytes in [
        mut_u64(H_MAGIC, 0),
        mut_u32(H_VERSION, 2),
        mut_u32(H_HEADER_SIZE, 256),
        mut_u32(H_OWNER_ID, 7407),
        mut_u32(H_CLASSES, 0),
        mut_u32(H_CLASSES, 17),
        mut_u32(H_CLASSES, u32::MAX),
        mut_u32(H_CLASSES, 3), // an empty third entry
        mut_u64(H_TOTAL, total as u64 + 4096),
        mut_u64(H_TOTAL, 100),
        mut_u64(H_TOTAL, c1.data_off as u64), // class 1's chunks beyond it
        mut_u64(H_CLASS_TABLE + C_CHUNK_SIZE, 3000),
        mut_u64(H_CLASS_TABLE + C_CHUNK_SIZE, 1 << 31),
        mut_u64(H_CLASS_TABLE + C_CHUNK_SIZE, 32),
        mut_u32(H_CLASS_TABLE + C_COUNT, 0),
        mut_u32(H_CLASS_TABLE + C_COUNT, POOL_MAX_CLASS_CHUNKS + 1),
        mut_u32(H_CLASS_TABLE + C_COUNT, 1000),
        mut_u64(H_CLASS_TABLE + C_GEN_OFF, 0),
        mut_u64(H_CLASS_TABLE + C_GEN_OFF, 64),
        mut_u64(H_CLASS_TABLE + C_GEN_OFF, c0.gen_off as u64 + 2),
        mut_u64(H_CLASS_TABLE + C_GEN_OFF, c0.data_off as u64),
        mut_u64(H_CLASS_TABLE + C_GEN_OFF, total as u64),
        mut_u64(H_CLASS_TABLE + C_GEN_OFF, u64::MAX - 63),
        mut_u64(H_CLASS_TABLE + C_DATA_OFF, 0),
        mut_u64(H_CLASS_TABLE + C_DATA_OFF, c1.data_off as u64),
        mut_u64(H_CLASS_TABLE + C_DATA_OFF, c0.data_off as u64 + 64),
        mut_u64(H_CLASS_TABLE + C_DATA_OFF, u64::MAX - 4095),
        mut_u64(class1 + C_GEN_OFF, c0.gen_off as u64),
        mut_u64(class1 + C_DATA_OFF, total as u64),
    ] {
        assert!(is_bad(check(&bytes)));
    }
    // A dead owner: not found.
    assert_eq!(
        check(&mut_u32(H_OWNER_PID, dead_pid())),
        Err(PoolReadError::NotFound)
    );
}

#[test]
fn file_mode_removal_and_cleanup() {
    let dir = TestDir::new("files");
    let pool = LoanPool::create(&PoolConfig {
        mode: 0o640,
        ..dir.small(7410, 4096, 2)
    })
    .unwrap();
    let mode = fs::metadata(pool.path()).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o640);
    let default = LoanPool::create(&dir.small(7411, 4096, 2)).unwrap();
    let mode = fs::metadata(default.path()).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o600);
    // The file stays while a clone lives, and goes with the last one.
    let path = pool.path().to_path_buf();
    let clone = pool.clone();
    drop(pool);
    assert!(path.exists());
    drop(clone);
    assert!(!path.exists());

    // Cleanup: a pool whose header names a dead pid and a temporary file of a dead creator go;
    // a live pool and unrelated files stay.
    let uid = real_uid();
    let dead = dead_pid();
    let stale = LoanPool::create(&dir.small(7412, 4096, 2)).unwrap();
    OpenOptions::new()
        .write(true)
        .open(stale.path())
        .unwrap()
        .write_all_at(&dead.to_ne_bytes(), H_OWNER_PID as u64)
        .unwrap();
    assert_eq!(read_owner_pid(stale.path()), Some(dead));
    let tmp = dir.0.join(format!(
        "ferrodds-{uid}-{}-7413.pool.{dead}.tmp",
        net_namespace()
    ));
    fs::write(&tmp, b"").unwrap();
    let other = dir
        .0
        .join(format!("ferrodds-{uid}-{}-junk.pool", net_namespace()));
    fs::write(&other, b"junk").unwrap();
    assert_eq!(cleanup_stale(&dir.0, uid).unwrap(), 2);
    assert!(!stale.path().exists());
    assert!(!tmp.exists());
    assert!(default.path().exists());
    assert!(other.exists());
    drop(stale); // its file is already gone: nothing to do
    let live = default.path().to_path_buf();
    drop(default);
    assert!(!live.exists());
}

#[test]
fn handles_are_send_and_sync_as_documented() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    fn clone<T: Clone>() {}
    send_sync::<LoanPool>();
    clone::<LoanPool>();
    send::<PoolChunk>();
    send_sync::<SharedChunk>();
    send::<PoolReader>();
}

#[test]
fn concurrent_rewrites_never_yield_a_torn_copy() {
    const LEN: usize = 64 << 10;
    let pattern = |generation: u32| (generation >> 1) as u8;
    let dir = TestDir::new("concurrent");
    let pool = LoanPool::create(&dir.small(7420, LEN, 1)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let latest = Arc::new(Mutex::new(None::<ChunkRef>));
    let writer = {
        let (pool, stop, latest) = (pool.clone(), stop.clone(), latest.clone());
        std::thread::spawn(move || {
            let mut published = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut chunk = pool.alloc(LEN).expect("the only chunk is free");
                let byte = pattern(chunk.published_generation());
                chunk.as_mut_slice().fill(byte);
                let shared = chunk.publish();
                *latest.lock().unwrap() = Some(shared.reference());
                published += 1;
                // Hold the chunk for a varying while (none at all one time in four), then
                // free it: the next iteration rewrites it, racing with the reader's copies.
                let hold = Instant::now();
                let wait = Duration::from_micros(published % 4 * 10);
                while hold.elapsed() < wait {
                    std::hint::spin_loop();
                }
                drop(shared);
            }
            published
        })
    };
    let mut reader = dir.reader();
    let mut out = Vec::with_capacity(LEN);
    let (mut ok, mut stale) = (0u64, 0u64);
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline {
        let Some(r) = *latest.lock().unwrap() else {
            std::thread::yield_now();
            continue;
        };
        match reader.copy(&r, &mut out) {
            Ok(()) => {
                ok += 1;
                let want = pattern(r.generation);
                assert_eq!(out.len(), LEN);
                assert!(
                    out.iter().all(|&b| b == want),
                    "torn copy of generation {}",
                    r.generation
                );
            }
            Err(PoolReadError::Stale) => stale += 1,
            Err(e) => panic!("unexpected {e}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let published = writer.join().unwrap();
    assert!(
        published > 100 && ok > 0 && stale > 0,
        "published {published}, ok {ok}, stale {stale}"
    );
}
