//! Shared-memory transport for FerroDDS: participants on the same host (and the same boot of
//! it) exchange user-data RTPS messages through memory-mapped files instead of UDP.
//! Discovery stays on UDP; the runtime offers this transport only to peers whose locator
//! carries the same [`host_id`].
//!
//! # Contract
//!
//! * **Segments.** Each receiving participant owns one segment, the file
//!   `<dir>/ferrodds-<uid>-<netns>-<id>` ([`segment_path`]; `dir` defaults to `/dev/shm`, `uid`
//!   is the real user id, `netns` the network namespace's inode, `id` the `u16` the runtime
//!   passes: the participant's UDP user-data port, unique in the namespace while the
//!   participant lives). It is created with mode `0600` by
//!   default ([`ShmConfig::mode`], set exactly, whatever the umask), written under a temporary
//!   name and renamed into place, so a sender never sees a half-initialised segment and a
//!   stale file of the same name (from a dead process) is replaced atomically. It is removed on
//!   [`Transport::shutdown`](ferrodds_transport::Transport::shutdown) or drop (only if the
//!   name still refers to that file). [`cleanup_stale`] removes the files of dead owners.
//! * **Layout** (version [`LAYOUT_VERSION`], all integers native-endian, little-endian on
//!   every supported target). A [`HEADER_SIZE`]-byte header: magic [`MAGIC`] (`u64`, written
//!   last), layout version, header size, slot count (a power of two), slot payload size,
//!   slot stride, owner pid, owner id, total size; then on cache lines of their own the `tail`
//!   (`u64`, the next position senders claim), the consumer's `head` (`u64`, diagnostics
//!   only: the consumer's real head is private), and the futex word and `sleeping` flag
//!   (`u32` each). Then `slots` slots of `stride` bytes: a [`SLOT_HEADER_SIZE`]-byte header
//!   — sequence (`u64`), writer pid (`u32`), source id (`u16`), length (`u32`) — and the
//!   payload (default 512 slots of 65,536 bytes: 32 MiB of address space, pages used only as
//!   touched on tmpfs).
//! * **Ring** (Vyukov's bounded MPSC queue, positions are `u64` counting from 0, the slot of
//!   position `p` is `p mod slots`). The sequence of a slot is `p` when it is free for
//!   position `p`, the *writing mark* `1<<63 | pid<<32 | (p mod 2^32)` while sender `pid`
//!   writes it, `p + 1` once published. A sender: (1) reads `tail = p` and the slot's
//!   sequence, `== p`: claims `p` by a compare-exchange of the tail (sequence `< p`: the ring
//!   is full, [`SendError::Full`], never waiting); (2) marks the slot with a compare-exchange
//!   `p → mark` (failure: the receiver skipped the claim, [`SendError::Skipped`]); (3) writes
//!   pid, source id, length and the payload (gathered from its `IoSlice`s: one copy);
//!   (4) publishes with a release compare-exchange `mark → p + 1`. The receiver, at its head
//!   `h`, waits for sequence `h + 1`, validates the length, copies the payload into its own
//!   buffer, then releases the slot with a release store of `h + slots` and advances.
//! * **Who writes what.** Only the owner writes the fixed header fields (at creation), the
//!   `head` and the `sleeping` flag, and the sequence `p + slots` (release, skip). Senders
//!   write the tail, a slot they claimed, the sequence marks and publishes above, and the
//!   futex word. All shared words are accessed atomically; payload bytes are copied as plain
//!   bytes (no type invariants), by the receiver into private memory before any parsing.
//! * **Wake-ups.** The receiver spins briefly (about 50 `spin_loop` hints; not at all when
//!   it may run on one CPU only, where its senders cannot run meanwhile), then reads the
//!   futex word `v`, stores `sleeping = 1` (SeqCst), issues a SeqCst fence, re-checks the head
//!   slot, and only if still nothing is there calls `FUTEX_WAIT(word, v)` (a shared futex:
//!   across processes) with a timeout of [`POLL_INTERVAL`] (100 ms, so shutdown and stalled
//!   slots are seen), then clears `sleeping`. A sender, after publishing, issues a SeqCst
//!   fence and loads `sleeping` (SeqCst); only if set it increments the futex word and calls
//!   `FUTEX_WAKE`. *No lost wake-up:* the publish and the `sleeping` store are each followed
//!   by a SeqCst fence before the other side's load, so (store-buffering with fences) at least
//!   one side sees the other's store: either the receiver's re-check sees the message and it
//!   does not sleep, or the sender sees `sleeping` and wakes it. In the second case the
//!   receiver read `v` before storing `sleeping` (release), which the sender read (acquire)
//!   before incrementing the word, so the increment comes after `v` was read: if it lands
//!   before `FUTEX_WAIT` the kernel sees `word != v` and returns at once; if after, the wake
//!   finds the waiter queued (the kernel checks the value and queues atomically). The cost
//!   for a sender while the receiver is busy is one fence and one load.
//! * **Faults.** Nothing read from a segment is trusted. Senders validate the header when
//!   they open a segment (magic, version, sizes consistent and within [`MAX_SLOTS`],
//!   [`MAX_SLOT_PAYLOAD`], [`MAX_SEGMENT_SIZE`], the file as large as the header says) and
//!   refuse a bad one with [`ShmError::BadSegment`]; every later offset comes from that
//!   validated copy, never from shared memory again; a sender gives up with
//!   [`SendError::Corrupt`] when the tail and sequences are inconsistent. The receiver uses its
//!   own layout; it drops (counts in `frame_errors`, with a `tracing` warning at most once a
//!   second) a slot whose length exceeds the slot payload or whose sequence is none of the
//!   protocol's values, and hands the slot back. A slot at the head that holds anything but
//!   "free" while the tail has not moved past it was written by someone outside the protocol
//!   (every legitimate value follows a claim that moved the tail first): the receiver resets
//!   it to free, counted the same way, instead of consuming it, which would move the head past
//!   the tail and wedge the ring. A hostile or corrupted segment may cause wrong data or lost
//!   messages (there is no checksum), never a panic, a wedged ring or an access outside the
//!   mapping.
//! * **Dead senders.** If the slot at the head stays unpublished for [`STALL_TIMEOUT`]
//!   (500 ms) the receiver looks at who holds it: a writing mark with a pid that no longer
//!   runs (`kill(pid, 0)` fails with `ESRCH`, or `/proc/<pid>/stat` shows a zombie), or a
//!   claim (the tail moved past the head) without a mark (nobody known: the claimer stopped
//!   between its two compare-exchanges, which are a few instructions apart), is skipped: a compare-exchange from the observed value to `h + slots`, counted in
//!   `frame_errors` (and [`ShmReceiver::skipped_slots`]). A mark of a live pid is waited for
//!   (a stopped sender blocks the ring until it continues or dies). *Race analysis:* an
//!   unmarked claim is skipped only by compare-exchange from `h`; a sender that resumes then
//!   fails its own marking compare-exchange (the sequence never returns to `h`: it only grows,
//!   and marks have bit 63 set), so it never writes into a slot that is no longer its own and
//!   returns [`SendError::Skipped`] (a live sender descheduled for 500 ms right there only
//!   loses that message). A marked slot is taken away only from a dead process, which writes
//!   nothing more; its partly written payload is never delivered (the slot is released
//!   unread). Limits: a recycled pid makes a dead writer look alive (the
//!   ring waits until that process ends); senders must share the receiver's pid namespace; a
//!   writer stalled through 2^32 positions could see its mark match again.
//! * **Sending.** [`ShmTransport`] caches one [`ShmSender`] per peer id (a lock-protected
//!   map of `Arc`s, the lock held only for the look-up); every 250 ms (and at most every
//!   10 ms while the ring is full) it checks that the file still exists with the same inode
//!   and that its owner is alive, re-opening a replaced segment. A missing segment, or one
//!   whose owner is not running ([`ShmError::OwnerGone`], a stale file), is `NotFound`
//!   (counted in `unreachable_drops`; so is a bad one, `InvalidData`), a full ring
//!   `WouldBlock` (counted in `send_queue_drops`; the runtime treats it as loss and reliable
//!   writers repair it).
//! * **Receiving.** [`Transport::start`](ferrodds_transport::Transport::start) spawns one
//!   thread, `ferrodds-shm-rx`, which copies each message into one reusable buffer (no
//!   allocation per message) and calls the handler with `src = 127.0.0.1:<sender id>`,
//!   `dst = 127.0.0.1:<own id>`, user-data traffic.
//! * **Loan pools.** A participant may also own a loan pool ([`LoanPool`]), the file
//!   `<dir>/ferrodds-<uid>-<netns>-<id>.pool` ([`pool_path`]), created like a segment (exact
//!   mode, temporary name, rename; removed when the pool and its last chunk are dropped, by
//!   [`cleanup_stale`] once its owner is dead). It holds power-of-two size classes of chunks
//!   (a [`POOL_HEADER_SIZE`]-byte header, a `u32` generation per chunk, page-aligned chunk
//!   regions; sparse). The owner fills a chunk with a large sample ([`PoolChunk`]) and
//!   sends only a 20-byte [`ChunkRef`] (pool id, owner pid, class, index, generation, length)
//!   through the ring; readers map the pool read-only ([`PoolReader`]) and copy the chunk out.
//!   Safety for readers is a seqlock, not reference counts (a reader killed with `SIGKILL`
//!   leaks nothing): `alloc` makes the chunk's generation odd (relaxed store, release fence)
//!   before writing it, `publish` stores the next even value (release); a reader loads the
//!   generation (relaxed, then an acquire fence), requires it to equal the reference's, copies
//!   the bytes as plain bytes into private memory, issues an acquire fence, and re-loads it:
//!   any change discards the copy ([`PoolReadError::Stale`]). A released chunk waits in a quarantine of the
//!   class's last few released (up to 16 chunks, 32 MiB and half the class) before it can be
//!   allocated again; after that chunks are reused last-in first-out (warm memory, and the
//!   sparse file takes memory only for the peak of chunks in use at once). The owner
//!   releases a chunk when its history lets the sample go: once every reliable reader
//!   acknowledged it, at once for best-effort-only readers, when KEEP_LAST replaces it. A
//!   reference so stays valid for the quarantine's length of later releases; a reader
//!   slower than that loses the sample (a reliable one asks again: repaired as bytes while
//!   the writer's history still holds it), never reads a torn one. Readers validate the header once (magic, version, id,
//!   sizes within limits, regions inside the file, aligned, not overlapping) and use only that
//!   private copy; a reference outside it is [`PoolReadError::OutOfRange`]; a cached mapping is
//!   re-checked (same file) every 100 ms and on a stale reference. Same-user trust applies as
//!   for segments (the owner can truncate the file under a reader's mapping: `SIGBUS`); a
//!   generation that wraps around (2^31 reuses of a chunk during one copy) goes unnoticed.
//! * **Limits.** Linux only (futex, `/proc`). A message must fit in one slot
//!   ([`ShmConfig::slot_payload`], default 65,536 bytes). The owner of a segment (the same
//!   user) can truncate its file under a sender's mapping, which faults the sender (`SIGBUS`):
//!   segments are trusted that far. Liveness checks (stalled slots, [`cleanup_stale`], stale
//!   peers) use pids: every participant sharing the directory must be in the same pid
//!   namespace.
//!
//! # Example
//!
//! A receiver and a sender (in one process here; normally in two):
//!
//! ```
//! use std::io::IoSlice;
//! use std::time::Duration;
//! use ferrodds_transport_shm::{ShmConfig, ShmReceiver, ShmSender};
//!
//! let dir = std::env::temp_dir().join(format!("ferrodds-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let config = ShmConfig { dir: dir.clone(), slots: 16, slot_payload: 1024, ..ShmConfig::new(7410) };
//! let mut rx = ShmReceiver::create(&config)?;
//!
//! let tx = ShmSender::open(&dir, ferrodds_transport_shm::real_uid(), 7410, 7412)?;
//! tx.send(&[IoSlice::new(b"RTPS"), IoSlice::new(b" hello")])?;
//!
//! let mut buf = Vec::with_capacity(rx.max_message_size());
//! let got = rx.recv(&mut buf, Duration::from_secs(1)).expect("a message");
//! assert_eq!((got.src, &buf[..got.len]), (7412, &b"RTPS hello"[..]));
//! drop(rx); // removes the segment file
//! std::fs::remove_dir(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![cfg(target_os = "linux")]

mod error;
// The only modules with unsafe code (see the crate's `[lints]`).
#[allow(unsafe_code)]
mod pool;
#[allow(unsafe_code)]
mod ring;
#[allow(unsafe_code)]
mod segment;
mod transport;

use std::path::{Path, PathBuf};

pub use error::{PoolReadError, SendError, ShmError};
pub use pool::{
    pool_path, ChunkRef, ChunkView, LoanPool, PoolChunk, PoolConfig, PoolReader, PoolStats,
    SharedChunk, DEFAULT_POOL_CLASS_BUDGET, DEFAULT_POOL_MAX_CHUNK, DEFAULT_POOL_MAX_CHUNKS,
    DEFAULT_POOL_MIN_CHUNK, DEFAULT_POOL_MIN_CHUNKS, POOL_HEADER_SIZE, POOL_LAYOUT_VERSION,
    POOL_MAGIC, POOL_MAX_CHUNK, POOL_MAX_CLASSES, POOL_MAX_CLASS_CHUNKS, POOL_MAX_SIZE,
    POOL_MIN_CHUNK,
};
pub use ring::{Received, ShmReceiver, ShmSender, ShmWaker, POLL_INTERVAL, STALL_TIMEOUT};
pub use segment::{
    HEADER_SIZE, LAYOUT_VERSION, MAGIC, MAX_SEGMENT_SIZE, MAX_SLOTS, MAX_SLOT_PAYLOAD,
    SLOT_HEADER_SIZE,
};
pub use transport::ShmTransport;

/// The directory segments live in by default.
pub const DEFAULT_DIR: &str = "/dev/shm";
/// Default number of slots of a ring.
pub const DEFAULT_SLOTS: u32 = 512;
/// Default slot payload, the largest message, in bytes.
pub const DEFAULT_SLOT_PAYLOAD: usize = 65_536;
/// Default mode of a segment file.
pub const DEFAULT_MODE: u32 = 0o600;

/// Configuration of a segment ([`ShmReceiver`]) and of a [`ShmTransport`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShmConfig {
    /// The segment id: the participant's UDP user-data port, unique on the host while the
    /// participant lives. No default (see [`ShmConfig::new`]).
    pub id: u16,
    /// Where the segment file is created. Default [`DEFAULT_DIR`] (`/dev/shm`).
    pub dir: PathBuf,
    /// Number of slots, a power of two up to [`MAX_SLOTS`]. Default [`DEFAULT_SLOTS`] (512).
    pub slots: u32,
    /// Payload bytes per slot, the largest message, up to [`MAX_SLOT_PAYLOAD`]. Default
    /// [`DEFAULT_SLOT_PAYLOAD`] (65,536).
    pub slot_payload: usize,
    /// Mode of the segment file. Default [`DEFAULT_MODE`] (`0o600`: the same user only).
    pub mode: u32,
}

impl ShmConfig {
    /// The default configuration for segment id `id`.
    pub fn new(id: u16) -> Self {
        Self {
            id,
            dir: PathBuf::from(DEFAULT_DIR),
            slots: DEFAULT_SLOTS,
            slot_payload: DEFAULT_SLOT_PAYLOAD,
            mode: DEFAULT_MODE,
        }
    }
}

/// The real user id of this process.
pub fn real_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// The segment file of participant `id` of user `uid` in `dir`, in this process's network
/// namespace: `<dir>/ferrodds-<uid>-<netns>-<id>`. The id (a UDP port) is unique only within
/// a network namespace, and processes in two namespaces of one host (a lab testbed) share
/// `/dev/shm`: the namespace in the name keeps their segments apart.
pub fn segment_path(dir: &Path, uid: u32, id: u16) -> PathBuf {
    dir.join(format!("ferrodds-{uid}-{}-{id}", net_namespace()))
}

/// This process's network namespace: the inode of `/proc/self/ns/net` (0 where that cannot
/// be read), read once.
pub fn net_namespace() -> u64 {
    static NS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *NS.get_or_init(|| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self/ns/net").map_or(0, |m| m.ino())
    })
}

/// This host's boot and network namespace: the first 8 bytes of
/// `/proc/sys/kernel/random/boot_id` (a UUID in hex; zeros if it cannot be read) and the low
/// 32 bits of [`net_namespace`]. Peers use shared memory only if theirs is the same: two
/// network namespaces stand for two hosts (a lab testbed), whose traffic must cross the link
/// between them, not memory.
pub fn host_id() -> [u8; 12] {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .and_then(|s| parse_boot_id(&s))
        .unwrap_or([0; 12]);
    let mut id = [0u8; 12];
    id[..8].copy_from_slice(&boot[..8]);
    id[8..].copy_from_slice(&(net_namespace() as u32).to_le_bytes());
    id
}

fn parse_boot_id(s: &str) -> Option<[u8; 12]> {
    let hex: Vec<u8> = s.trim().bytes().filter(|&b| b != b'-').collect();
    if hex.len() != 32 {
        return None;
    }
    let mut out = [0u8; 12];
    for (i, pair) in hex.chunks(2).take(12).enumerate() {
        let digits = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(digits, 16).ok()?;
    }
    Some(out)
}

/// Removes the segments and loan pools of user `uid` in `dir` whose owner (the pid in their
/// header) is no longer alive, and temporary files left by a creation that died; returns how
/// many files were removed. Files that are not valid segments or pools are left alone.
pub fn cleanup_stale(dir: &Path, uid: u32) -> std::io::Result<usize> {
    let prefix = format!("ferrodds-{uid}-");
    let mut removed = 0;
    for entry in std::fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        let path = entry.path();
        // `<netns>-<id>`, `<netns>-<id>.pool` or their `.<pid>.tmp`, of any network
        // namespace (a dead process's segment is stale wherever it ran).
        let Some(rest) = rest
            .split_once('-')
            .filter(|(ns, _)| ns.parse::<u64>().is_ok())
            .map(|(_, r)| r)
        else {
            continue;
        };
        let owner = if rest.parse::<u16>().is_ok() {
            segment::read_owner_pid(&path)
        } else if rest
            .strip_suffix(".pool")
            .is_some_and(|id| id.parse::<u16>().is_ok())
        {
            pool::read_owner_pid(&path)
        } else if let Some(tmp) = rest.strip_suffix(".tmp") {
            // `<id>.<pid>.tmp` or `<id>.pool.<pid>.tmp`
            tmp.split_once('.')
                .filter(|(id, _)| id.parse::<u16>().is_ok())
                .and_then(|(_, pid)| pid.strip_prefix("pool.").unwrap_or(pid).parse::<u32>().ok())
        } else {
            None
        };
        if let Some(pid) = owner {
            if !segment::pid_alive(pid) && std::fs::remove_file(&path).is_ok() {
                removed += 1;
            }
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests;
