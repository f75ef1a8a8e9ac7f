//! Network capture of a participant's own traffic ([`CaptureConfig`]): every RTPS message
//! the participant sends or receives, on the transports chosen, written to a pcapng file
//! that Wireshark and tshark decode as RTPS.
//!
//! # How it works, and what it costs
//!
//! The tap sits where messages cross the transport boundary. An outbound message is
//! stamped with the wall-clock time just before it is handed to the transport (so a
//! receiver woken by the send cannot answer "before" it), an inbound one when the receive
//! thread has it. Recording copies the message once into a staging buffer under a short lock
//! (no allocation, no system call): a UDP or shared-memory message as the pcapng packet
//! block the file will hold (synthetic Ethernet/IPv4/UDP headers with the real addresses
//! and ports, UDP checksum 0 as Cyclone DDS writes it, the direction in `epb_flags`), others
//! as a record for the writer thread to encode. The writer thread swaps the buffer out every
//! [`FLUSH_INTERVAL`] (sooner when it is half full), takes each run of packet blocks as it
//! is and encodes the rest itself (TCP and TLS messages without their framing, messages with
//! user data removed or larger than a UDP datagram (exported PDUs), decrypted views with
//! their packet comment). It writes the file with direct I/O where the file system allows
//! (`capture_file`: no page-cache copy on the CPU the data flow runs on; runs of packet
//! blocks go to the device straight from the staging buffer), with its space allocated
//! 16 MiB ahead. While messages keep coming the file may lack its last partial 4 KiB block;
//! it is whole again once an interval passes without a message, and at the end.
//! When the buffer is full the message is dropped from the capture and counted
//! ([`CaptureOverflow::Drop`], the default, so the capture never slows the data flow) or
//! the sending or receiving thread waits for the writer ([`CaptureOverflow::Block`], a
//! complete capture at the cost of the flow). A write error (a full disk) is logged once;
//! the capture stops recording, counts what it could not write as dropped, and the
//! participant carries on.
//!
//! TCP and TLS messages are recorded as the RTPS they carry (TLS: the plaintext, before
//! encryption and after decryption; the stream framing's `MSG_LEN` submessage left out),
//! framed as UDP between the two ends of the connection (as exported PDUs when larger than
//! a UDP datagram), so a capture of a TLS run contains what TLS protects on the wire.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use ferrodds_capture::{
    encode_udp_packet_block, encoded_block_at, remove_user_data, udp_packet_block_len,
    CaptureWriter, Direction, InterfaceId, MAX_UNFRAGMENTED_UDP_PAYLOAD,
};
use ferrodds_transport::tcp::MSG_LEN_ID;
use ferrodds_transport::TransportKind;
use nix::fcntl::{fallocate, FallocateFlags};

use crate::capture_file::CaptureFile;
use crate::error::DdsError;
use crate::sync::{lock, wait_timeout};

/// The packet comment of a decrypted-view frame ([`CaptureConfig::decrypted_view`]).
pub const DECRYPTED_COMMENT: &str =
    "decrypted view (FerroDDS): the clear RTPS message of the protected frame before this one";

/// How often the writer thread writes out what was recorded (and, after an interval with
/// nothing recorded, how soon the file is whole).
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(10);

/// Bytes of a record's header in the staging buffer: [`RECORD_TAG`] (4), time (8), source
/// and destination address and port (12), direction and transport (2), length (4),
/// decrypted-view flag (1), padding (1). The staging buffer holds such records and pcapng
/// packet blocks (which start with their block type, 6).
const RECORD_HEADER: usize = 32;

/// The first four bytes of a record (never a pcapng block type).
const RECORD_TAG: [u8; 4] = [0xff; 4];

/// Where a capture is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureOutput {
    /// This file (created or truncated).
    File(PathBuf),
    /// `<prefix><GUID prefix, 24 hex digits>.pcapng`: one file per participant. The prefix
    /// may start with a directory (`captures/run1_`), which must exist.
    Prefix(String),
}

impl Default for CaptureOutput {
    fn default() -> Self {
        CaptureOutput::Prefix("ferrodds_capture_".to_owned())
    }
}

/// What happens when the capture's buffer is full because the writer thread (the disk)
/// falls behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CaptureOverflow {
    /// The message is not recorded and counted in [`CaptureStats::frames_dropped`]; the data
    /// flow never waits for the capture (default).
    #[default]
    Drop,
    /// The thread sending or receiving waits until the writer made room: nothing is
    /// dropped, and the data flow runs at the disk's pace.
    Block,
}

/// A participant's network capture: where, what, and what to do when it falls behind.
///
/// Given in [`crate::Config::capture`] (capture from the start) or to
/// [`crate::DomainParticipant::start_capture`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureConfig {
    /// The file. Default: [`CaptureOutput::Prefix`] `ferrodds_capture_` (a file named
    /// after the participant's GUID prefix in the working directory).
    pub output: CaptureOutput,
    /// The transports whose messages are recorded; `None` (the default): every transport
    /// the participant uses. Naming one the participant does not use is not an error: it
    /// is logged as a warning and has nothing to record.
    pub transports: Option<Vec<TransportKind>>,
    /// Replace the serialized payload of user data (DATA and DATA_FRAG of user writers) by
    /// its length, keeping every header, inline QoS and other submessage
    /// ([`ferrodds_capture::remove_user_data`]); the packet comment says how many bytes
    /// were removed. Discovery is kept. Default: `false`.
    pub remove_user_data: bool,
    /// **Writes protected traffic in clear.** With DDS Security protecting RTPS messages,
    /// also record the clear form of each protected message beside it: after each
    /// protected frame sent or received (RTPS message protection, and the volatile-secure
    /// submessages of the key exchange), a frame with the same addresses holding the RTPS
    /// message as its sender built it, marked by its packet comment ("decrypted view"),
    /// with protected submessages in clear and, under payload protection, each DATA's
    /// payload decoded (a DATA_FRAG keeps its protected bytes: a payload is protected as a
    /// whole before it is fragmented, so one fragment has no clear form). Anyone who can read the file reads what the protection hides: for debugging only,
    /// on a machine you trust, and delete the file afterwards. Without security it records
    /// nothing more. Default: `false`.
    pub decrypted_view: bool,
    /// Drop (default) or block when the buffer is full.
    pub overflow: CaptureOverflow,
    /// Bytes of messages (plus 28 bytes each) buffered for the writer thread; the capture
    /// holds twice this much memory. A message larger than this is never recorded
    /// (counted as dropped). Default: 32 MiB.
    pub buffer_bytes: usize,
}

impl Default for CaptureConfig {
    fn default() -> Self {
        Self {
            output: CaptureOutput::default(),
            transports: None,
            remove_user_data: false,
            decrypted_view: false,
            overflow: CaptureOverflow::Drop,
            buffer_bytes: 32 << 20,
        }
    }
}

impl CaptureConfig {
    /// A capture to `path`, otherwise the defaults.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Self {
            output: CaptureOutput::File(path.into()),
            ..Self::default()
        }
    }

    /// A capture to `<prefix><GUID prefix>.pcapng`, otherwise the defaults.
    pub fn prefix(prefix: impl Into<String>) -> Self {
        Self {
            output: CaptureOutput::Prefix(prefix.into()),
            ..Self::default()
        }
    }

    /// Sets [`CaptureConfig::transports`].
    pub fn transports(mut self, kinds: Option<Vec<TransportKind>>) -> Self {
        self.transports = kinds;
        self
    }

    /// Sets [`CaptureConfig::remove_user_data`].
    pub fn remove_user_data(mut self, on: bool) -> Self {
        self.remove_user_data = on;
        self
    }

    /// Sets [`CaptureConfig::decrypted_view`] (read its warning first).
    pub fn decrypted_view(mut self, on: bool) -> Self {
        self.decrypted_view = on;
        self
    }

    /// Sets [`CaptureConfig::overflow`].
    pub fn overflow(mut self, overflow: CaptureOverflow) -> Self {
        self.overflow = overflow;
        self
    }

    /// Sets [`CaptureConfig::buffer_bytes`].
    pub fn buffer_bytes(mut self, bytes: usize) -> Self {
        self.buffer_bytes = bytes;
        self
    }

    /// The file this configuration writes for a participant with GUID prefix `prefix`.
    pub fn path_for(&self, guid_prefix: &[u8; 12]) -> PathBuf {
        match &self.output {
            CaptureOutput::File(p) => p.clone(),
            CaptureOutput::Prefix(pre) => {
                let mut name = pre.clone();
                for b in guid_prefix {
                    name.push_str(&format!("{b:02x}"));
                }
                name.push_str(".pcapng");
                PathBuf::from(name)
            }
        }
    }
}

/// What a capture has done so far ([`crate::DomainParticipant::capture_stats`], and the
/// result of [`crate::DomainParticipant::stop_capture`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureStats {
    /// The capture file.
    pub path: PathBuf,
    /// Messages recorded (one per RTPS message: a UDP datagram or a TCP/TLS frame; a
    /// datagram larger than the synthetic MTU spans several IPv4-fragment frames in the
    /// file).
    pub frames_written: u64,
    /// Messages not recorded: the buffer was full ([`CaptureOverflow::Drop`]), a message
    /// was larger than the buffer, or the file could not be written.
    pub frames_dropped: u64,
    /// Message bytes recorded (after user data was removed).
    pub bytes_written: u64,
    /// User-data payload bytes removed ([`CaptureConfig::remove_user_data`]).
    pub user_data_bytes_removed: u64,
    /// Whether recording is paused.
    pub paused: bool,
    /// The write error that stopped the capture, if one did.
    pub error: Option<String>,
}

/// The staging buffer producers append records to.
struct Staging {
    bytes: Vec<u8>,
    /// IPv4 identification of the next packet block encoded here.
    ip_id: u16,
    /// Producers waiting for room ([`CaptureOverflow::Block`]).
    waiting: usize,
}

struct Shared {
    staging: Mutex<Staging>,
    /// The writer waits here for records (or the interval to pass).
    writer_cv: Condvar,
    /// Blocked producers wait here for room.
    room_cv: Condvar,
    capacity: usize,
    block: bool,
    /// Which transports are recorded: bit per `TransportKind` index.
    kinds: u8,
    /// The file's interface of each transport recorded.
    ifaces: [Option<InterfaceId>; 4],
    /// Whether UDP and shared-memory messages are recorded as packet blocks (not when user
    /// data is removed: the writer thread does that).
    encode: bool,
    paused: AtomicBool,
    stopping: AtomicBool,
    /// The writer failed: record nothing more.
    failed: AtomicBool,
    written: AtomicU64,
    dropped: AtomicU64,
    bytes: AtomicU64,
    removed: AtomicU64,
    error: Mutex<Option<String>>,
}

fn kind_index(kind: TransportKind) -> u8 {
    match kind {
        TransportKind::Udpv4 => 0,
        TransportKind::Tcpv4 => 1,
        TransportKind::Tlsv4 => 2,
        TransportKind::Shm => 3,
    }
}

const KINDS: [TransportKind; 4] = [
    TransportKind::Udpv4,
    TransportKind::Tcpv4,
    TransportKind::Tlsv4,
    TransportKind::Shm,
];

/// One running capture: the recording side (any thread) and its writer thread.
pub(crate) struct CaptureTap {
    shared: Arc<Shared>,
    path: PathBuf,
    /// [`CaptureConfig::decrypted_view`].
    pub(crate) decrypted_view: bool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl CaptureTap {
    /// Creates the file and starts the writer thread. `used` are the transports the
    /// participant runs; `iface_name` names the interface in the file.
    pub(crate) fn start(
        config: &CaptureConfig,
        guid_prefix: &[u8; 12],
        iface_name: &str,
        used: &[TransportKind],
    ) -> Result<Self, DdsError> {
        if config.buffer_bytes < 64 * 1024 {
            return Err(DdsError::BadParameter {
                what: "capture buffer_bytes must be at least 64 KiB",
            });
        }
        let path = config.path_for(guid_prefix);
        let file = CaptureFile::create(&path).map_err(|source| DdsError::CaptureFile {
            path: path.clone(),
            source,
        })?;
        let mut writer = CaptureWriter::new(file)?;
        writer.set_udp_checksums(false);
        let mut kinds = 0u8;
        let mut ifaces: [Option<InterfaceId>; 4] = [None; 4];
        for kind in KINDS {
            let wanted = config.transports.as_ref().is_none_or(|k| k.contains(&kind));
            if !wanted {
                continue;
            }
            if !used.contains(&kind) {
                if config.transports.is_some() {
                    tracing::warn!(
                        ?kind,
                        "capture of a transport the participant does not use: nothing to record"
                    );
                }
                continue;
            }
            let label = match kind {
                TransportKind::Udpv4 => "UDPv4",
                TransportKind::Tcpv4 => "TCPv4",
                TransportKind::Tlsv4 => "TLSv4 (plaintext)",
                TransportKind::Shm => "SHMEM",
            };
            ifaces[usize::from(kind_index(kind))] =
                Some(writer.add_interface(&format!("{iface_name} {label}"))?);
            kinds |= 1 << kind_index(kind);
        }
        writer.flush()?;
        let capacity = config.buffer_bytes;
        let shared = Arc::new(Shared {
            staging: Mutex::new(Staging {
                bytes: Vec::with_capacity(capacity),
                ip_id: 0,
                waiting: 0,
            }),
            writer_cv: Condvar::new(),
            room_cv: Condvar::new(),
            capacity,
            block: config.overflow == CaptureOverflow::Block,
            kinds,
            ifaces,
            encode: !config.remove_user_data,
            paused: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            written: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            removed: AtomicU64::new(0),
            error: Mutex::new(None),
        });
        let mut w = WriterThread {
            shared: Arc::clone(&shared),
            writer,
            ifaces,
            strip: config.remove_user_data,
            local: Vec::with_capacity(capacity),
            scratch: Vec::new(),
            unframed: Vec::new(),
            comment: String::new(),
            path: path.clone(),
            allocated: 0,
            preallocate: true,
        };
        let thread = std::thread::Builder::new()
            .name("ferrodds-capture".into())
            .spawn(move || w.run())?;
        Ok(Self {
            shared,
            path,
            decrypted_view: config.decrypted_view,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Records one message, stamped `ts` (nanoseconds since the Unix epoch).
    /// Allocation-free; waits only with [`CaptureOverflow::Block`].
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record(
        &self,
        ts: u64,
        kind: TransportKind,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        bytes: &[u8],
        dir: Direction,
        decrypted: bool,
    ) {
        let s = &*self.shared;
        if s.kinds & (1 << kind_index(kind)) == 0 || s.paused.load(Ordering::Relaxed) {
            return;
        }
        if s.failed.load(Ordering::Relaxed) {
            s.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // As a packet block: a UDP or shared-memory message that fits one frame, not
        // rewritten by the writer thread, without a comment.
        let block = s.encode
            && !decrypted
            && matches!(kind, TransportKind::Udpv4 | TransportKind::Shm)
            && bytes.len() <= MAX_UNFRAGMENTED_UDP_PAYLOAD;
        let need = if block {
            udp_packet_block_len(bytes.len())
        } else {
            RECORD_HEADER + bytes.len().next_multiple_of(4)
        };
        if need > s.capacity {
            s.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut g = lock(&s.staging);
        while g.bytes.len() + need > s.capacity {
            if !s.block || s.stopping.load(Ordering::Relaxed) || s.failed.load(Ordering::Relaxed) {
                drop(g);
                s.dropped.fetch_add(1, Ordering::Relaxed);
                s.writer_cv.notify_one();
                return;
            }
            g.waiting += 1;
            s.writer_cv.notify_one();
            g = wait_timeout(&s.room_cv, g, FLUSH_INTERVAL);
            g.waiting -= 1;
        }
        let before = g.bytes.len();
        let iface = s.ifaces[usize::from(kind_index(kind))];
        let id = g.ip_id;
        let encoded = iface.filter(|_| block).is_some_and(|iface| {
            encode_udp_packet_block(&mut g.bytes, iface, ts, src, dst, id, bytes, dir)
        });
        if encoded {
            g.ip_id = id.wrapping_add(1);
        } else {
            append_record(&mut g.bytes, ts, kind, src, dst, bytes, dir, decrypted);
        }
        let after = g.bytes.len();
        drop(g);
        // Wake the writer early only when this record filled the buffer past half (one
        // system call per half buffer, not per message).
        let half = s.capacity / 2;
        if before < half && after >= half {
            s.writer_cv.notify_one();
        }
    }

    pub(crate) fn pause(&self, paused: bool) {
        self.shared.paused.store(paused, Ordering::Relaxed);
    }

    pub(crate) fn stats(&self) -> CaptureStats {
        let s = &*self.shared;
        CaptureStats {
            path: self.path.clone(),
            frames_written: s.written.load(Ordering::Relaxed),
            frames_dropped: s.dropped.load(Ordering::Relaxed),
            bytes_written: s.bytes.load(Ordering::Relaxed),
            user_data_bytes_removed: s.removed.load(Ordering::Relaxed),
            paused: s.paused.load(Ordering::Relaxed),
            error: lock(&s.error).clone(),
        }
    }

    /// Writes out everything recorded so far, closes the file and stops the writer thread.
    /// Idempotent.
    pub(crate) fn finish(&self) -> CaptureStats {
        if let Some(t) = lock(&self.thread).take() {
            self.shared.stopping.store(true, Ordering::Relaxed);
            self.shared.writer_cv.notify_one();
            self.shared.room_cv.notify_all();
            if t.join().is_err() {
                tracing::warn!("capture writer thread panicked");
            }
            let st = self.stats();
            if st.frames_dropped > 0 {
                tracing::warn!(
                    dropped = st.frames_dropped,
                    written = st.frames_written,
                    path = %self.path.display(),
                    "capture did not record every message"
                );
            }
        }
        self.stats()
    }
}

impl Drop for CaptureTap {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Appends a record for the writer thread to encode (see [`RECORD_HEADER`]).
#[allow(clippy::too_many_arguments)] // the fields of a captured message
fn append_record(
    b: &mut Vec<u8>,
    ts: u64,
    kind: TransportKind,
    src: SocketAddrV4,
    dst: SocketAddrV4,
    bytes: &[u8],
    dir: Direction,
    decrypted: bool,
) {
    b.extend_from_slice(&RECORD_TAG);
    b.extend_from_slice(&ts.to_le_bytes());
    b.extend_from_slice(&src.ip().octets());
    b.extend_from_slice(&src.port().to_le_bytes());
    b.extend_from_slice(&dst.ip().octets());
    b.extend_from_slice(&dst.port().to_le_bytes());
    b.push(match dir {
        Direction::Inbound => 0,
        _ => 1,
    });
    b.push(kind_index(kind));
    b.extend_from_slice(&u32::try_from(bytes.len()).unwrap_or(u32::MAX).to_le_bytes());
    b.extend_from_slice(&[u8::from(decrypted), 0]);
    b.extend_from_slice(bytes);
    // Padded to 4, so that what follows stays 4-byte aligned (direct writes from here).
    b.extend_from_slice(&[0; 3][..bytes.len().next_multiple_of(4) - bytes.len()]);
}

/// The writer thread's state.
struct WriterThread {
    shared: Arc<Shared>,
    writer: CaptureWriter<CaptureFile>,
    ifaces: [Option<InterfaceId>; 4],
    strip: bool,
    /// The records taken from the staging buffer (swapped with it).
    local: Vec<u8>,
    scratch: Vec<u8>,
    /// A stream message without its `MSG_LEN`.
    unframed: Vec<u8>,
    comment: String,
    path: PathBuf,
    /// The file is allocated up to here (`fallocate`, size kept); 0: not yet.
    allocated: u64,
    /// Whether to allocate ahead (off once the file system refused).
    preallocate: bool,
}

/// How far ahead of what is written the writer thread allocates the file's space
/// (`fallocate` keeping the size): the file system then does not allocate blocks write by
/// write (on ext4 that took about 40 % of the writer thread's CPU). What is left beyond the
/// end is freed when the capture stops.
const PREALLOCATE_STEP: u64 = 16 << 20;

impl WriterThread {
    /// Allocates the file's space for at least `need` more bytes, a step at a time. A file
    /// system that cannot (or no space for a whole step) gets plain writes.
    fn preallocate(&mut self, need: u64) {
        if !self.preallocate || self.shared.failed.load(Ordering::Relaxed) {
            return;
        }
        let file = self.writer.get_ref().file();
        let Ok(len) = file.metadata().map(|m| m.len()) else {
            return;
        };
        let end = len.saturating_add(need);
        if end <= self.allocated {
            return;
        }
        let start = self.allocated.max(len);
        let add = (end - start).max(PREALLOCATE_STEP);
        let ok = i64::try_from(start)
            .ok()
            .zip(i64::try_from(add).ok())
            .is_some_and(|(o, n)| {
                fallocate(file, FallocateFlags::FALLOC_FL_KEEP_SIZE, o, n).is_ok()
            });
        if ok {
            self.allocated = start + add;
        } else {
            self.preallocate = false;
        }
    }

    /// Frees the space allocated beyond the end of the file.
    fn trim(&mut self) {
        if self.allocated == 0 {
            return;
        }
        let file = self.writer.get_ref().file();
        if let Ok(len) = file.metadata().map(|m| m.len()) {
            if self.allocated > len {
                // Truncating to the same size frees what lies beyond it.
                if let Err(e) = file.set_len(len) {
                    tracing::warn!(error = %e, path = %self.path.display(), "capture file not trimmed");
                }
            }
        }
        self.allocated = 0;
    }

    fn run(&mut self) {
        loop {
            let stopping;
            {
                let mut g = lock(&self.shared.staging);
                let half = self.shared.capacity / 2;
                if g.bytes.len() < half && !self.shared.stopping.load(Ordering::Relaxed) {
                    g = wait_timeout(&self.shared.writer_cv, g, FLUSH_INTERVAL);
                }
                stopping = self.shared.stopping.load(Ordering::Relaxed);
                std::mem::swap(&mut g.bytes, &mut self.local);
                if g.waiting > 0 {
                    self.shared.room_cv.notify_all();
                }
            }
            if self.local.is_empty() {
                // Nothing new for an interval: the file is made whole (its last partial
                // block too).
                self.flush();
            } else {
                // Records grow by their headers when encoded (less than doubled).
                self.preallocate(2 * self.local.len() as u64);
                self.write_records();
                self.local.clear();
                self.write_whole_blocks();
            }
            if stopping {
                // Whatever a producer appended between the swap and now.
                let mut g = lock(&self.shared.staging);
                std::mem::swap(&mut g.bytes, &mut self.local);
                drop(g);
                self.write_records();
                self.local.clear();
                self.flush();
                self.trim();
                return;
            }
        }
    }

    fn flush(&mut self) {
        if self.shared.failed.load(Ordering::Relaxed) {
            return;
        }
        if let Err(e) = self.writer.flush() {
            self.fail(&e.to_string(), 0);
        }
    }

    /// Writes out the whole blocks held, the last partial one staying for a flush.
    fn write_whole_blocks(&mut self) {
        if self.shared.failed.load(Ordering::Relaxed) {
            return;
        }
        if let Err(e) = self.writer.get_mut().write_blocks() {
            self.fail(&e.to_string(), 0);
        }
    }

    fn fail(&self, error: &str, lost: u64) {
        self.shared.dropped.fetch_add(lost, Ordering::Relaxed);
        if self.shared.failed.swap(true, Ordering::Relaxed) {
            return;
        }
        tracing::error!(
            path = %self.path.display(),
            error,
            "capture file could not be written; the capture stops recording"
        );
        *lock(&self.shared.error) = Some(format!("{}: {error}", self.path.display()));
    }

    fn write_records(&mut self) {
        let mut at = 0;
        let local = std::mem::take(&mut self.local);
        let mut unframed = std::mem::take(&mut self.unframed);
        // The run of packet blocks not written yet: where it starts, its messages and bytes.
        let (mut run, mut run_records, mut run_bytes) = (0, 0, 0);
        while at < local.len() {
            if local.get(at..at + 4) != Some(&RECORD_TAG[..]) {
                let Some((total, len)) = encoded_block_at(&local, at) else {
                    debug_assert!(false, "staging buffer corrupt at {at}");
                    break;
                };
                at += total;
                run_records += 1;
                run_bytes += len as u64;
                continue;
            }
            self.write_run(&local[run..at], run_records, run_bytes);
            (run_records, run_bytes) = (0, 0);
            let Some(h) = local.get(at + 4..at + RECORD_HEADER) else {
                break;
            };
            let ts = u64::from_le_bytes(h[0..8].try_into().unwrap_or_default());
            let addr = |o: usize| {
                SocketAddrV4::new(
                    Ipv4Addr::new(h[o], h[o + 1], h[o + 2], h[o + 3]),
                    u16::from_le_bytes([h[o + 4], h[o + 5]]),
                )
            };
            let (src, dst) = (addr(8), addr(14));
            let dir = if h[20] == 0 {
                Direction::Inbound
            } else {
                Direction::Outbound
            };
            let kind = usize::from(h[21]);
            let len = u32::from_le_bytes(h[22..26].try_into().unwrap_or_default()) as usize;
            let decrypted = h[26] != 0;
            let start = at + RECORD_HEADER;
            let Some(msg) = local.get(start..start + len) else {
                break;
            };
            at = (start + len.next_multiple_of(4)).min(local.len());
            run = at;
            if self.shared.failed.load(Ordering::Relaxed) {
                self.shared.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let Some(iface) = self.ifaces.get(kind).copied().flatten() else {
                continue;
            };
            // A stream's frames start with the `MSG_LEN` submessage: framing, not RTPS
            // content (and a vendor submessage Wireshark misreads), so it is left out.
            let msg = if kind != 0 && msg.len() >= 28 && msg[20] == MSG_LEN_ID {
                unframed.clear();
                unframed.extend_from_slice(&msg[..20]);
                unframed.extend_from_slice(&msg[28..]);
                &unframed[..]
            } else {
                msg
            };
            self.comment.clear();
            if decrypted {
                self.comment.push_str(DECRYPTED_COMMENT);
            }
            let (payload, comment) = if self.strip {
                let r = remove_user_data(msg, &mut self.scratch);
                if r.any() {
                    if !self.comment.is_empty() {
                        self.comment.push_str("; ");
                    }
                    self.shared.removed.fetch_add(r.bytes, Ordering::Relaxed);
                    self.comment.push_str(&format!(
                        "user data removed: {} bytes in {} submessages",
                        r.bytes, r.submessages
                    ));
                    if r.unparsed_tail > 0 {
                        self.comment
                            .push_str(&format!("; {} unparsable bytes dropped", r.unparsed_tail));
                    }
                }
                (
                    &self.scratch[..],
                    (!self.comment.is_empty()).then_some(self.comment.as_str()),
                )
            } else {
                (
                    msg,
                    (!self.comment.is_empty()).then_some(self.comment.as_str()),
                )
            };
            match self.writer.write_udp(
                iface,
                Duration::from_nanos(ts),
                src,
                dst,
                payload,
                dir,
                comment,
            ) {
                Ok(()) => {
                    self.shared.written.fetch_add(1, Ordering::Relaxed);
                    self.shared
                        .bytes
                        .fetch_add(payload.len() as u64, Ordering::Relaxed);
                }
                Err(e) => self.fail(&e.to_string(), 1),
            }
        }
        self.write_run(&local[run..at.min(local.len())], run_records, run_bytes);
        self.local = local;
        self.unframed = unframed;
    }

    /// Writes a run of packet blocks the recording threads encoded (`records` messages of
    /// `bytes` bytes), as it is.
    fn write_run(&mut self, blocks: &[u8], records: u64, bytes: u64) {
        if blocks.is_empty() {
            return;
        }
        if self.shared.failed.load(Ordering::Relaxed) {
            self.shared.dropped.fetch_add(records, Ordering::Relaxed);
            return;
        }
        // Checked block by block by `write_records`: written from the staging buffer as
        // they are (direct I/O from its memory where the file takes it).
        match self.writer.get_mut().write_in_place(blocks) {
            Ok(()) => {
                self.shared.written.fetch_add(records, Ordering::Relaxed);
                self.shared.bytes.fetch_add(bytes, Ordering::Relaxed);
            }
            Err(e) => self.fail(&e.to_string(), records),
        }
    }
}

/// The wall-clock time in nanoseconds since the Unix epoch, as captures stamp messages.
#[inline]
pub(crate) fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Where a running capture lives in the participant: checked on every message, so the
/// check without a capture is one relaxed load.
#[derive(Default)]
pub(crate) struct CaptureSlot {
    on: AtomicBool,
    /// The running capture wants the decrypted view.
    decrypted: AtomicBool,
    tap: std::sync::RwLock<Option<Arc<CaptureTap>>>,
}

impl CaptureSlot {
    /// Whether a capture is running (one relaxed load).
    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Records one message, if a capture runs: stamped `ts` (from [`now_ns`], taken before
    /// an outbound message was handed to the transport) or, when `None`, now.
    #[inline]
    pub(crate) fn record(
        &self,
        ts: Option<u64>,
        kind: TransportKind,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        bytes: &[u8],
        dir: Direction,
    ) {
        if self.on.load(Ordering::Relaxed) {
            self.record_in_tap(ts, kind, src, dst, bytes, dir, false);
        }
    }

    /// Whether a capture with the decrypted view runs (two relaxed loads).
    #[inline]
    pub(crate) fn decrypted_view(&self) -> bool {
        self.on.load(Ordering::Relaxed) && self.decrypted.load(Ordering::Relaxed)
    }

    /// Records the clear form `bytes` of a protected message just recorded, stamped `ts`
    /// (or now), when a capture with the decrypted view runs.
    pub(crate) fn record_decrypted(
        &self,
        ts: Option<u64>,
        kind: TransportKind,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        bytes: &[u8],
        dir: Direction,
    ) {
        if self.decrypted_view() {
            self.record_in_tap(ts, kind, src, dst, bytes, dir, true);
        }
    }

    /// Hands a message to the running capture, if there still is one.
    #[allow(clippy::too_many_arguments)] // the fields of a captured message
    fn record_in_tap(
        &self,
        ts: Option<u64>,
        kind: TransportKind,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        bytes: &[u8],
        dir: Direction,
        decrypted: bool,
    ) {
        let ts = ts.unwrap_or_else(now_ns);
        let g = self
            .tap
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(t) = g.as_ref() {
            t.record(ts, kind, src, dst, bytes, dir, decrypted);
        }
    }

    pub(crate) fn current(&self) -> Option<Arc<CaptureTap>> {
        self.tap
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Installs `tap`; fails when a capture is running.
    pub(crate) fn install(&self, tap: CaptureTap) -> Result<(), CaptureTap> {
        let mut g = self
            .tap
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if g.is_some() {
            return Err(tap);
        }
        self.decrypted.store(tap.decrypted_view, Ordering::Relaxed);
        *g = Some(Arc::new(tap));
        self.on.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Removes the running capture, if any, writes it out and returns its figures.
    pub(crate) fn remove(&self) -> Option<CaptureStats> {
        let tap = self
            .tap
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        self.on.store(false, Ordering::Relaxed);
        self.decrypted.store(false, Ordering::Relaxed);
        tap.map(|t| t.finish())
    }
}
