//! A loan pool written by someone outside the protocol (another process of the same user,
//! or a corrupted file): a reader copying chunks out of it with `PoolReader::copy` must never
//! panic, hang, read outside its mapping, or hand out more than the reference's length.
//!
//! The first input byte chooses what is fuzzed:
//! - even: a forged pool file. The next 40 bytes are two chunk references; the rest is the
//!   whole file (its owner pid field is set to this process, so the reader gets past the
//!   owner check and validates the rest); both references are copied.
//! - odd: a real pool (two classes of 4 chunks) with one published chunk; the rest of the
//!   input is written over the file after its header (generations and chunk bytes) and
//!   then read as references: every copy that succeeds is at most a chunk long.
#![no_main]

use std::path::PathBuf;

use ferrodds_transport_shm::{
    pool_path, real_uid, ChunkRef, LoanPool, PoolConfig, PoolReader, POOL_HEADER_SIZE,
};
use libfuzzer_sys::fuzz_target;

/// This process's pool id (one file per process, removed after each input).
fn pool_id() -> u16 {
    (20_000 + std::process::id() % 20_000) as u16
}

fn dir() -> PathBuf {
    std::env::temp_dir()
}

/// Byte offset of the owner pid in a pool header.
const H_OWNER_PID: usize = 16;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut out = Vec::new();
    if mode % 2 == 0 {
        if rest.len() < 40 {
            return;
        }
        let (refs, file) = rest.split_at(40);
        let mut file = file.to_vec();
        if file.len() >= H_OWNER_PID + 4 {
            file[H_OWNER_PID..H_OWNER_PID + 4].copy_from_slice(&std::process::id().to_ne_bytes());
        }
        let path = pool_path(&dir(), real_uid(), pool_id());
        std::fs::write(&path, &file).expect("pool file");
        let mut reader = PoolReader::new(dir(), real_uid());
        for r in refs.chunks(20) {
            let Some(mut r) = ChunkRef::decode(r) else {
                continue;
            };
            r.pool = pool_id();
            r.owner = std::process::id();
            if reader.copy(&r, &mut out).is_ok() {
                assert_eq!(out.len(), r.len as usize);
            }
        }
        drop(reader);
        let _ = std::fs::remove_file(&path);
    } else {
        let config = PoolConfig {
            dir: dir(),
            min_chunk: 4096,
            max_chunk: 8192,
            min_chunks: 4,
            max_chunks: 4,
            ..PoolConfig::new(pool_id())
        };
        let pool = LoanPool::create(&config).expect("pool");
        let mut chunk = pool.alloc(100).expect("chunk");
        chunk.as_mut_slice().fill(7);
        let published = chunk.publish();
        let good = published.reference();
        {
            use std::os::unix::fs::FileExt;
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(pool.path())
                .expect("pool file");
            let len = f.metadata().expect("metadata").len() as usize;
            let n = rest.len().min(len - POOL_HEADER_SIZE);
            f.write_at(&rest[..n], POOL_HEADER_SIZE as u64).expect("write");
        }
        let mut reader = PoolReader::new(dir(), real_uid());
        let mut refs = vec![good];
        for r in rest.chunks(20).take(8) {
            if let Some(mut r) = ChunkRef::decode(r) {
                r.pool = pool_id();
                r.owner = std::process::id();
                refs.push(r);
            }
        }
        for r in &refs {
            if reader.copy(r, &mut out).is_ok() {
                assert_eq!(out.len(), r.len as usize);
                assert!(out.len() <= 8192);
            }
        }
        drop(published);
    }
});
