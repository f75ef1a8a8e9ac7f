//! The ring: a bounded multi-producer single-consumer queue of fixed-size slots in a segment
//! (Vyukov's bounded queue with a claim mark, see the [crate documentation](crate)).

use std::io::IoSlice;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::thread::futex;

use crate::error::{SendError, ShmError};
use crate::segment::{pid_alive, remove_if_same, Layout, Mapping};
use crate::ShmConfig;

/// How long the slot at the head may stay claimed but unpublished before the receiver checks
/// whether its writer is dead and, if so, skips it.
pub const STALL_TIMEOUT: Duration = Duration::from_millis(500);

/// Longest a receiver sleeps on the futex before looking again (so that shutdown and stalled
/// slots are noticed).
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Spin iterations (`spin_loop` hints, a few microseconds) before the receiver sleeps.
const SPIN_ITERATIONS: u32 = 50;

/// Spin iterations for a receiver created by this thread: none when it may run on one CPU
/// only (an affinity mask or CPU quota of one): its senders then cannot run while it spins,
/// so spinning only delays the message it waits for (about 2 µs a wait on this project's
/// test VM, on every hop of a same-CPU ping-pong).
fn spin_iterations() -> u32 {
    match std::thread::available_parallelism() {
        Ok(n) if n.get() == 1 => 0,
        _ => SPIN_ITERATIONS,
    }
}

/// Bit 63 of a slot sequence: a sender is writing the slot (see [`writing_word`]).
const WRITING: u64 = 1 << 63;

/// The sequence word of a slot being written for position `pos` by process `pid`: the
/// writing bit, 31 bits of pid (Linux pids are below 2^22) and the low 32 bits of `pos`.
fn writing_word(pid: u32, pos: u64) -> u64 {
    WRITING | (u64::from(pid & 0x7fff_ffff) << 32) | (pos & 0xffff_ffff)
}

/// Whether `seq` is the writing mark of position `pos`; returns the writer's pid.
fn writing_pid(seq: u64, pos: u64) -> Option<u32> {
    (seq & WRITING != 0 && (seq & 0xffff_ffff) == (pos & 0xffff_ffff))
        .then_some(((seq >> 32) & 0x7fff_ffff) as u32)
}

/// Counters of a receiver, shared with its transport.
#[derive(Debug, Default)]
pub(crate) struct RxCounters {
    /// Slots dropped: invalid contents, or skipped because their writer died.
    pub(crate) frame_errors: AtomicU64,
    /// Of those, slots skipped because their writer died (or never marked them).
    pub(crate) skipped_slots: AtomicU64,
    /// Futex waits (the receiver went to sleep).
    pub(crate) sleeps: AtomicU64,
}

/// One message taken from the ring; its bytes are `buf[..len]` of the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Length in bytes.
    pub len: usize,
    /// The sender's id (its own segment id, the port of its SHM locator).
    pub src: u16,
    /// The sender's process id, as it wrote it.
    pub pid: u32,
}

/// The receiving side of a segment: owns the segment file (removed on drop) and is the ring's
/// only consumer. `Send`, not shared: one receive thread owns it.
#[derive(Debug)]
pub struct ShmReceiver {
    map: Arc<Mapping>,
    /// The next position to consume (private; mirrored to the header for diagnostics).
    head: u64,
    /// The position at the head seen claimed but unpublished, and since when.
    stall: Option<(u64, Instant)>,
    counters: Arc<RxCounters>,
    last_warn: Option<Instant>,
    warn_suppressed: u64,
    poll: Duration,
    /// Spin iterations before sleeping ([`spin_iterations`]).
    spin: u32,
}

/// Wakes a [`ShmReceiver`] sleeping in [`ShmReceiver::recv`] (for shutdown). Cheap to clone.
#[derive(Debug, Clone)]
pub struct ShmWaker {
    map: Arc<Mapping>,
}

impl ShmWaker {
    /// Wakes the receiver: its `recv` returns (with or without a message) soon after.
    pub fn wake(&self) {
        wake(&self.map);
    }
}

fn wake(map: &Mapping) {
    map.futex().fetch_add(1, Ordering::Release);
    let _ = futex::wake(map.futex(), futex::Flags::empty(), i32::MAX as u32);
}

impl ShmReceiver {
    /// Creates the segment `<dir>/ferrodds-<uid>-<id>` of `config` (replacing a stale file of
    /// that name) and returns its receiver.
    pub fn create(config: &ShmConfig) -> Result<Self, ShmError> {
        let layout =
            Layout::new(config.slots, config.slot_payload).map_err(ShmError::InvalidConfig)?;
        let path = crate::segment_path(&config.dir, crate::real_uid(), config.id);
        let map = Mapping::create(&path, layout, config.mode, config.id)?;
        Ok(Self {
            map: Arc::new(map),
            head: 0,
            stall: None,
            counters: Arc::default(),
            last_warn: None,
            warn_suppressed: 0,
            poll: POLL_INTERVAL,
            spin: spin_iterations(),
        })
    }

    /// The segment file.
    pub fn path(&self) -> &Path {
        &self.map.path
    }

    /// The largest message the ring carries (the slot payload), in bytes.
    pub fn max_message_size(&self) -> usize {
        self.map.layout.slot_payload
    }

    /// A handle that wakes this receiver from another thread.
    pub fn waker(&self) -> ShmWaker {
        ShmWaker {
            map: self.map.clone(),
        }
    }

    /// Slots dropped so far: with invalid contents, or skipped because their writer died.
    pub fn frame_errors(&self) -> u64 {
        self.counters.frame_errors.load(Ordering::Relaxed)
    }

    /// Of [`ShmReceiver::frame_errors`], the slots skipped because their writer died (or
    /// never marked its claim) within [`STALL_TIMEOUT`].
    pub fn skipped_slots(&self) -> u64 {
        self.counters.skipped_slots.load(Ordering::Relaxed)
    }

    /// How often the receiver went to sleep on the futex.
    pub fn sleeps(&self) -> u64 {
        self.counters.sleeps.load(Ordering::Relaxed)
    }

    pub(crate) fn counters(&self) -> Arc<RxCounters> {
        self.counters.clone()
    }

    pub(crate) fn file_id(&self) -> (PathBuf, u64, u64) {
        (self.map.path.clone(), self.map.dev, self.map.ino)
    }

    #[cfg(test)]
    pub(crate) fn set_poll(&mut self, poll: Duration) {
        self.poll = poll;
    }

    fn warn(&mut self, what: &str, pos: u64) {
        let now = Instant::now();
        if self
            .last_warn
            .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1))
        {
            tracing::warn!(
                segment = %self.map.path.display(),
                position = pos,
                suppressed = self.warn_suppressed,
                "shared-memory slot dropped: {what}"
            );
            self.last_warn = Some(now);
            self.warn_suppressed = 0;
        } else {
            self.warn_suppressed += 1;
        }
    }

    /// Hands the slot at the head back to the senders (for position head + slots) and
    /// advances.
    fn release_head(&mut self) {
        let pos = self.head;
        self.map.seq(pos).store(
            pos.wrapping_add(u64::from(self.map.layout.slots)),
            Ordering::Release,
        );
        self.advance();
    }

    fn advance(&mut self) {
        self.head = self.head.wrapping_add(1);
        self.stall = None;
        self.map.head().store(self.head, Ordering::Relaxed);
    }

    fn drop_slot(&mut self, what: &str) {
        self.counters.frame_errors.fetch_add(1, Ordering::Relaxed);
        self.warn(what, self.head);
        self.release_head();
    }

    /// Takes the next message without waiting: copies it into `buf` (cleared first; reserve
    /// [`ShmReceiver::max_message_size`] once and it never allocates) and returns its
    /// metadata, or `None` when nothing is published at the head.
    pub fn try_recv(&mut self, buf: &mut Vec<u8>) -> Option<Received> {
        let slots = u64::from(self.map.layout.slots);
        // Bounded: each round consumes or drops a slot, or returns.
        for _ in 0..=slots {
            let pos = self.head;
            let seq = self.map.seq(pos).load(Ordering::Acquire);
            if seq != pos {
                // Any other value is written by a sender that claimed `pos` first, moving the
                // tail past it (released before its mark or publish, which this load
                // acquired). With the tail not past `pos` nobody claimed the slot: someone not
                // following the protocol wrote it. It goes back to the senders (free for
                // `pos`) instead of being consumed, which would move the head past the tail
                // and wedge the ring.
                let tail = self.map.tail().load(Ordering::Acquire);
                if (tail.wrapping_sub(pos) as i64) <= 0 {
                    if self
                        .map
                        .seq(pos)
                        .compare_exchange(seq, pos, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                    {
                        self.counters.frame_errors.fetch_add(1, Ordering::Relaxed);
                        self.warn("a free slot was overwritten", pos);
                    }
                    self.stall = None;
                    return None;
                }
            }
            if seq == pos.wrapping_add(1) {
                let len = self.map.slot_len(pos).load(Ordering::Relaxed) as usize;
                if len > self.map.layout.slot_payload {
                    self.drop_slot("length larger than the slot");
                    continue;
                }
                let src = self.map.slot_src(pos).load(Ordering::Relaxed);
                let pid = self.map.slot_pid(pos).load(Ordering::Relaxed);
                buf.clear();
                buf.reserve(len);
                let from = self.map.payload_ptr(pos);
                // SAFETY: `from` points at `slot_payload >= len` bytes inside the mapping;
                // `buf` has capacity for `len` bytes after `reserve`; the regions cannot
                // overlap (private heap vs. shared mapping); `u8` has no invalid values, so
                // even bytes a misbehaving sender rewrites meanwhile are only wrong data,
                // copied before anyone parses them.
                unsafe {
                    std::ptr::copy_nonoverlapping(from, buf.as_mut_ptr(), len);
                    buf.set_len(len);
                }
                self.release_head();
                return Some(Received { len, src, pid });
            }
            if seq == pos {
                // Free for `pos`: empty, or claimed (tail moved past) but not yet marked.
                let tail = self.map.tail().load(Ordering::Acquire);
                if (tail.wrapping_sub(pos) as i64) <= 0 {
                    self.stall = None;
                    return None;
                }
                if self.stalled_dead(pos, None) {
                    // Only succeeds if the claimer did not mark it meanwhile: then its mark
                    // fails and it never touches the slot.
                    if self
                        .map
                        .seq(pos)
                        .compare_exchange(
                            pos,
                            pos.wrapping_add(slots),
                            Ordering::AcqRel,
                            Ordering::Relaxed,
                        )
                        .is_ok()
                    {
                        self.skipped("claimed but never marked within the stall timeout");
                    }
                    continue;
                }
                return None;
            }
            if let Some(pid) = writing_pid(seq, pos) {
                if self.stalled_dead(pos, Some(pid)) {
                    // The writer is dead: nobody else may touch the slot of `pos`.
                    if self
                        .map
                        .seq(pos)
                        .compare_exchange(
                            seq,
                            pos.wrapping_add(slots),
                            Ordering::AcqRel,
                            Ordering::Relaxed,
                        )
                        .is_ok()
                    {
                        self.skipped("its writer died while writing it");
                    }
                    continue;
                }
                return None;
            }
            // No sender following the protocol produces any other value.
            self.drop_slot("invalid sequence");
        }
        None
    }

    fn skipped(&mut self, what: &str) {
        self.counters.frame_errors.fetch_add(1, Ordering::Relaxed);
        self.counters.skipped_slots.fetch_add(1, Ordering::Relaxed);
        self.warn(what, self.head);
        self.advance();
    }

    /// Whether the head slot (position `pos`) has been pending for [`STALL_TIMEOUT`] and its
    /// writer (`None`: unknown) is not alive. Starts the timer on the first call for `pos`.
    fn stalled_dead(&mut self, pos: u64, writer: Option<u32>) -> bool {
        match self.stall {
            Some((p, since)) if p == pos => {
                since.elapsed() >= STALL_TIMEOUT && !writer.is_some_and(pid_alive)
            }
            _ => {
                self.stall = Some((pos, Instant::now()));
                false
            }
        }
    }

    /// Whether the head slot needs the consumer (published, or invalid).
    fn ready(&self) -> bool {
        let pos = self.head;
        let seq = self.map.seq(pos).load(Ordering::Acquire);
        seq != pos && writing_pid(seq, pos).is_none()
    }

    /// Takes the next message, waiting up to `timeout` for one: spins briefly, then sleeps on
    /// the segment's futex (in steps of at most [`POLL_INTERVAL`]). Returns `None` when the
    /// time is up or when woken without a message (by [`ShmWaker::wake`]); callers loop.
    pub fn recv(&mut self, buf: &mut Vec<u8>, timeout: Duration) -> Option<Received> {
        // Set at the first look that finds nothing: a call that finds a message at once
        // reads no clock, one that sleeps reads it once.
        let mut deadline = None;
        loop {
            if let Some(r) = self.try_recv(buf) {
                return Some(r);
            }
            // Checked on every round: a segment whose head keeps looking ready without
            // yielding a message must not keep the caller here past its deadline.
            let now = Instant::now();
            let deadline = *deadline.get_or_insert_with(|| now + timeout);
            if now >= deadline {
                return None;
            }
            let mut spun = false;
            for _ in 0..self.spin {
                std::hint::spin_loop();
                if self.ready() {
                    spun = true;
                    break;
                }
            }
            if spun {
                continue;
            }
            // Wake-up protocol (see the crate documentation): read the futex word, announce
            // sleep, re-check, then wait only while the word is unchanged.
            let futex_word = self.map.futex().load(Ordering::Acquire);
            self.map.sleeping().store(1, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            if self.ready() {
                self.map.sleeping().store(0, Ordering::Relaxed);
                continue;
            }
            let wait = (deadline - now).min(self.poll);
            let ts = futex::Timespec {
                tv_sec: wait.as_secs() as i64,
                tv_nsec: i64::from(wait.subsec_nanos()),
            };
            self.counters.sleeps.fetch_add(1, Ordering::Relaxed);
            // EAGAIN (word changed), ETIMEDOUT and EINTR all mean: look again.
            let _ = futex::wait(
                self.map.futex(),
                futex::Flags::empty(),
                futex_word,
                Some(&ts),
            );
            self.map.sleeping().store(0, Ordering::Relaxed);
            return self.try_recv(buf);
        }
    }
}

impl Drop for ShmReceiver {
    fn drop(&mut self) {
        remove_if_same(&self.map.path, self.map.dev, self.map.ino);
    }
}

/// The sending side of a peer's segment: a producer of its ring. `Send + Sync`; any number
/// of threads and processes may send at once.
#[derive(Debug)]
pub struct ShmSender {
    map: Mapping,
    src: u16,
    pid: u32,
}

impl ShmSender {
    /// Opens the segment of participant `id` in `dir` for user `uid`, validating its header;
    /// messages sent carry `src` as the sender's id.
    pub fn open(dir: &Path, uid: u32, id: u16, src: u16) -> Result<Self, ShmError> {
        Self::open_path(&crate::segment_path(dir, uid, id), src)
    }

    /// Opens the segment file `path` (see [`ShmSender::open`]). A segment whose owner (the
    /// pid in its header) is not running is refused with [`ShmError::OwnerGone`].
    pub fn open_path(path: &Path, src: u16) -> Result<Self, ShmError> {
        let map = Mapping::open(path)?;
        if !pid_alive(map.owner_pid) {
            return Err(ShmError::OwnerGone {
                path: path.to_path_buf(),
                pid: map.owner_pid,
            });
        }
        Ok(Self {
            map,
            src,
            pid: std::process::id(),
        })
    }

    /// The segment file.
    pub fn path(&self) -> &Path {
        &self.map.path
    }

    /// The pid of the segment's owner, from its header.
    pub fn owner_pid(&self) -> u32 {
        self.map.owner_pid
    }

    /// The segment file's device and inode numbers (to notice that it was replaced).
    pub fn file_id(&self) -> (u64, u64) {
        (self.map.dev, self.map.ino)
    }

    /// The largest message the receiver accepts (its slot payload), in bytes.
    pub fn max_message_size(&self) -> usize {
        self.map.layout.slot_payload
    }

    /// Puts one message (the concatenation of `bufs`, copied once) into the ring and wakes
    /// the receiver if it sleeps. Never blocks.
    pub fn send(&self, bufs: &[IoSlice<'_>]) -> Result<(), SendError> {
        let max = self.map.layout.slot_payload;
        let len = bufs
            .iter()
            .try_fold(0usize, |acc, b| acc.checked_add(b.len()))
            .unwrap_or(usize::MAX);
        if len > max {
            return Err(SendError::TooLarge { len, max });
        }
        let tail = self.map.tail();
        // Acquire/AcqRel on the tail: a sender that sees a slot taken for `pos` (by a mark,
        // a publish or the receiver's skip, each released after the tail moved) then sees the
        // tail past `pos`.
        let mut pos = tail.load(Ordering::Acquire);
        // Bounded against a hostile segment whose counters never settle.
        let mut tries = 0u32;
        loop {
            tries += 1;
            if tries > 10_000 {
                return Err(SendError::Corrupt);
            }
            let seq = self.map.seq(pos).load(Ordering::Acquire);
            let dif = seq.wrapping_sub(pos) as i64;
            if dif == 0 {
                match tail.compare_exchange_weak(
                    pos,
                    pos.wrapping_add(1),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => break,
                    Err(current) => pos = current,
                }
            } else if dif < 0 {
                // The slot still holds position pos - slots (or is being written for it).
                return Err(SendError::Full);
            } else {
                // Another sender took `pos` already; `tail` has moved on (if it has not, the
                // ring is inconsistent).
                let current = tail.load(Ordering::Acquire);
                if current == pos {
                    return Err(SendError::Corrupt);
                }
                pos = current;
            }
        }
        // Mark the claim with our pid. Fails only if the receiver skipped the claim because
        // we stalled for longer than the stall timeout: then the slot is no longer ours.
        let mark = writing_word(self.pid, pos);
        if self
            .map
            .seq(pos)
            .compare_exchange(pos, mark, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return Err(SendError::Skipped);
        }
        self.map.slot_pid(pos).store(self.pid, Ordering::Relaxed);
        self.map.slot_src(pos).store(self.src, Ordering::Relaxed);
        self.map.slot_len(pos).store(len as u32, Ordering::Relaxed);
        let mut to = self.map.payload_ptr(pos);
        for b in bufs {
            // SAFETY: the slot payload holds `max >= len` bytes (the sum of all `b.len()`),
            // so every copy stays inside the mapping; we own the marked slot exclusively (no
            // other honest writer, and the receiver reads it only after the publish below);
            // the source is a distinct, private buffer.
            unsafe {
                std::ptr::copy_nonoverlapping(b.as_ptr(), to, b.len());
                to = to.add(b.len());
            }
        }
        // Publish. Only a dead writer's mark is ever taken away, so this succeeds unless the
        // segment is tampered with.
        if self
            .map
            .seq(pos)
            .compare_exchange(
                mark,
                pos.wrapping_add(1),
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return Err(SendError::Corrupt);
        }
        fence(Ordering::SeqCst);
        if self.map.sleeping().load(Ordering::SeqCst) != 0 {
            wake(&self.map);
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    /// Test access to the mapping of a sender.
    pub(crate) fn mapping(s: &ShmSender) -> &Mapping {
        &s.map
    }

    pub(crate) fn mark(pid: u32, pos: u64) -> u64 {
        writing_word(pid, pos)
    }
}
