//! The segment file: its layout, creation (by the receiving participant) and opening (by a
//! sender), and atomic access to the shared header and slot fields.

use std::fs::{self, File, OpenOptions, Permissions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering};

use memmap2::{MmapOptions, MmapRaw};

use crate::error::ShmError;

/// The first 8 bytes of every segment (`FDDS-SHM`, little-endian `u64`).
pub const MAGIC: u64 = u64::from_le_bytes(*b"FDDS-SHM");
/// The layout version this implementation writes and accepts.
pub const LAYOUT_VERSION: u32 = 1;
/// Size of the segment header in bytes; the slots follow it.
pub const HEADER_SIZE: usize = 256;
/// Size of a slot's header (sequence, writer pid, source id, length) in bytes; the payload
/// follows it, padded to a multiple of 64 bytes.
pub const SLOT_HEADER_SIZE: usize = 64;
/// Largest slot count accepted (a power of two).
pub const MAX_SLOTS: u32 = 1 << 16;
/// Largest slot payload accepted, in bytes (16 MiB).
pub const MAX_SLOT_PAYLOAD: usize = 16 << 20;
/// Largest segment accepted, in bytes (4 GiB).
pub const MAX_SEGMENT_SIZE: u64 = 1 << 32;

// Header fields (byte offsets). Fixed at creation: magic .. total size. Shared and atomic:
// tail (producers), head (consumer, diagnostics only), futex word and sleeping flag (each on
// its own cache line, away from the producers' tail).
const H_MAGIC: usize = 0;
const H_VERSION: usize = 8;
const H_HEADER_SIZE: usize = 12;
const H_SLOTS: usize = 16;
const H_SLOT_PAYLOAD: usize = 20;
const H_SLOT_STRIDE: usize = 24;
const H_OWNER_PID: usize = 28;
const H_OWNER_ID: usize = 32;
const H_TOTAL: usize = 40;
const H_TAIL: usize = 64;
const H_HEAD: usize = 128;
const H_FUTEX: usize = 192;
const H_SLEEPING: usize = 196;

// Slot fields (byte offsets within a slot).
const S_SEQ: usize = 0;
const S_PID: usize = 8;
const S_SRC: usize = 12;
const S_LEN: usize = 16;

/// The sizes of a ring, validated; every offset used to access a mapping comes from here,
/// never from shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) slots: u32,
    pub(crate) slot_payload: usize,
    pub(crate) stride: usize,
    pub(crate) total: usize,
}

impl Layout {
    pub(crate) fn new(slots: u32, slot_payload: usize) -> Result<Self, String> {
        if slots == 0 || !slots.is_power_of_two() || slots > MAX_SLOTS {
            return Err(format!(
                "slot count {slots} is not a power of two in 1..={MAX_SLOTS}"
            ));
        }
        if slot_payload == 0 || slot_payload > MAX_SLOT_PAYLOAD {
            return Err(format!(
                "slot payload {slot_payload} is not in 1..={MAX_SLOT_PAYLOAD}"
            ));
        }
        let stride = SLOT_HEADER_SIZE + slot_payload.div_ceil(64) * 64;
        let total = u64::from(slots)
            .checked_mul(stride as u64)
            .and_then(|s| s.checked_add(HEADER_SIZE as u64))
            .filter(|&t| t <= MAX_SEGMENT_SIZE)
            .and_then(|t| usize::try_from(t).ok())
            .ok_or_else(|| format!("a segment of {slots} x {stride} bytes is too large"))?;
        Ok(Self {
            slots,
            slot_payload,
            stride,
            total,
        })
    }

    /// Byte offset of the slot serving ring position `pos`.
    fn slot_offset(&self, pos: u64) -> usize {
        HEADER_SIZE + (pos & u64::from(self.slots - 1)) as usize * self.stride
    }
}

/// A mapping of a whole segment file with its validated layout.
#[derive(Debug)]
pub(crate) struct Mapping {
    map: MmapRaw,
    pub(crate) layout: Layout,
    pub(crate) path: PathBuf,
    pub(crate) ino: u64,
    pub(crate) dev: u64,
    pub(crate) owner_pid: u32,
}

impl Mapping {
    fn atomic<T>(&self, off: usize) -> *mut T {
        // Offsets come from `Layout` (validated against the mapping's length at creation or
        // opening) and the header constants: never from shared memory. The check is an
        // internal invariant, not input validation.
        assert!(
            off.is_multiple_of(align_of::<T>()) && off + size_of::<T>() <= self.map.len(),
            "segment offset {off} out of range"
        );
        // SAFETY: `off + size_of::<T>()` is within the mapping (checked above), so the
        // resulting pointer stays inside the same allocation.
        unsafe { self.map.as_mut_ptr().add(off).cast::<T>() }
    }

    pub(crate) fn u64_at(&self, off: usize) -> &AtomicU64 {
        let p = self.atomic::<u64>(off);
        // SAFETY: `p` is in bounds and 8-byte aligned (the mapping is page-aligned and `atomic`
        // checked the offset's alignment); the mapping lives as long as `&self`; every bit
        // pattern is a valid `u64`; this process only ever accesses these bytes atomically
        // (other processes are outside Rust's memory model and, at worst, change the value).
        unsafe { AtomicU64::from_ptr(p) }
    }

    pub(crate) fn u32_at(&self, off: usize) -> &AtomicU32 {
        let p = self.atomic::<u32>(off);
        // SAFETY: as in `u64_at`, for a 4-byte aligned in-bounds `u32`.
        unsafe { AtomicU32::from_ptr(p) }
    }

    pub(crate) fn u16_at(&self, off: usize) -> &AtomicU16 {
        let p = self.atomic::<u16>(off);
        // SAFETY: as in `u64_at`, for a 2-byte aligned in-bounds `u16`.
        unsafe { AtomicU16::from_ptr(p) }
    }

    pub(crate) fn tail(&self) -> &AtomicU64 {
        self.u64_at(H_TAIL)
    }

    pub(crate) fn head(&self) -> &AtomicU64 {
        self.u64_at(H_HEAD)
    }

    pub(crate) fn futex(&self) -> &AtomicU32 {
        self.u32_at(H_FUTEX)
    }

    pub(crate) fn sleeping(&self) -> &AtomicU32 {
        self.u32_at(H_SLEEPING)
    }

    pub(crate) fn seq(&self, pos: u64) -> &AtomicU64 {
        self.u64_at(self.layout.slot_offset(pos) + S_SEQ)
    }

    pub(crate) fn slot_pid(&self, pos: u64) -> &AtomicU32 {
        self.u32_at(self.layout.slot_offset(pos) + S_PID)
    }

    pub(crate) fn slot_src(&self, pos: u64) -> &AtomicU16 {
        self.u16_at(self.layout.slot_offset(pos) + S_SRC)
    }

    pub(crate) fn slot_len(&self, pos: u64) -> &AtomicU32 {
        self.u32_at(self.layout.slot_offset(pos) + S_LEN)
    }

    /// Start of the payload of the slot serving `pos`; `slot_payload` bytes are valid there.
    pub(crate) fn payload_ptr(&self, pos: u64) -> *mut u8 {
        let off = self.layout.slot_offset(pos) + SLOT_HEADER_SIZE;
        assert!(off + self.layout.slot_payload <= self.map.len());
        self.atomic::<u8>(off)
    }

    /// Creates the segment `path` for `layout`: written under a temporary name, then renamed
    /// over `path` (atomically replacing a stale file), so that a sender never sees a
    /// half-initialised segment.
    pub(crate) fn create(
        path: &Path,
        layout: Layout,
        mode: u32,
        owner_id: u16,
    ) -> Result<Self, ShmError> {
        let pid = std::process::id();
        let file_name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| ShmError::InvalidConfig(format!("bad path {}", path.display())))?;
        let tmp = path.with_file_name(format!("{file_name}.{pid}.tmp"));
        let _ = fs::remove_file(&tmp);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)
            .map_err(|e| ShmError::io_at(&tmp, e))?;
        let result = Self::init(&tmp, &file, layout, mode, owner_id, pid).and_then(|mut m| {
            fs::rename(&tmp, path).map_err(|e| ShmError::io_at(path, e))?;
            m.path = path.to_path_buf();
            Ok(m)
        });
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }

    fn init(
        tmp: &Path,
        file: &File,
        layout: Layout,
        mode: u32,
        owner_id: u16,
        pid: u32,
    ) -> Result<Self, ShmError> {
        // The umask may have cleared bits of `mode`: set it exactly.
        file.set_permissions(Permissions::from_mode(mode))
            .map_err(|e| ShmError::io_at(tmp, e))?;
        file.set_len(layout.total as u64)
            .map_err(|e| ShmError::io_at(tmp, e))?;
        let map = MmapOptions::new()
            .len(layout.total)
            .map_raw(file)
            .map_err(|e| ShmError::io_at(tmp, e))?;
        let meta = file.metadata().map_err(|e| ShmError::io_at(tmp, e))?;
        let m = Mapping {
            map,
            layout,
            path: tmp.to_path_buf(),
            ino: meta.ino(),
            dev: meta.dev(),
            owner_pid: pid,
        };
        // The file is zero-filled: only the non-zero fields need writing.
        m.u32_at(H_VERSION).store(LAYOUT_VERSION, Ordering::Relaxed);
        m.u32_at(H_HEADER_SIZE)
            .store(HEADER_SIZE as u32, Ordering::Relaxed);
        m.u32_at(H_SLOTS).store(layout.slots, Ordering::Relaxed);
        m.u32_at(H_SLOT_PAYLOAD)
            .store(layout.slot_payload as u32, Ordering::Relaxed);
        m.u32_at(H_SLOT_STRIDE)
            .store(layout.stride as u32, Ordering::Relaxed);
        m.u32_at(H_OWNER_PID).store(pid, Ordering::Relaxed);
        m.u32_at(H_OWNER_ID)
            .store(u32::from(owner_id), Ordering::Relaxed);
        m.u64_at(H_TOTAL)
            .store(layout.total as u64, Ordering::Relaxed);
        for i in 0..u64::from(layout.slots) {
            m.seq(i).store(i, Ordering::Relaxed);
        }
        m.u64_at(H_MAGIC).store(MAGIC, Ordering::Release);
        Ok(m)
    }

    /// Opens and validates the segment at `path` (sender side).
    pub(crate) fn open(path: &Path) -> Result<Self, ShmError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| ShmError::io(path, e))?;
        let meta = file.metadata().map_err(|e| ShmError::io(path, e))?;
        let len = meta.len();
        if len < HEADER_SIZE as u64 {
            return Err(ShmError::bad(path, format!("file of {len} bytes")));
        }
        if len > MAX_SEGMENT_SIZE + HEADER_SIZE as u64 {
            return Err(ShmError::bad(
                path,
                format!("file of {len} bytes is too large"),
            ));
        }
        let map_len = usize::try_from(len)
            .map_err(|_| ShmError::bad(path, format!("file of {len} bytes is too large")))?;
        let map = MmapOptions::new()
            .len(map_len)
            .map_raw(&file)
            .map_err(|e| ShmError::io(path, e))?;
        // A provisional mapping to read the header with; its layout covers the header only.
        let mut m = Mapping {
            map,
            layout: Layout {
                slots: 1,
                slot_payload: 0,
                stride: 0,
                total: HEADER_SIZE,
            },
            path: path.to_path_buf(),
            ino: meta.ino(),
            dev: meta.dev(),
            owner_pid: 0,
        };
        if m.u64_at(H_MAGIC).load(Ordering::Acquire) != MAGIC {
            return Err(ShmError::bad(path, "bad magic"));
        }
        let version = m.u32_at(H_VERSION).load(Ordering::Relaxed);
        if version != LAYOUT_VERSION {
            return Err(ShmError::bad(
                path,
                format!("layout version {version}, expected {LAYOUT_VERSION}"),
            ));
        }
        if m.u32_at(H_HEADER_SIZE).load(Ordering::Relaxed) as usize != HEADER_SIZE {
            return Err(ShmError::bad(path, "bad header size"));
        }
        let slots = m.u32_at(H_SLOTS).load(Ordering::Relaxed);
        let payload = m.u32_at(H_SLOT_PAYLOAD).load(Ordering::Relaxed) as usize;
        let layout = Layout::new(slots, payload).map_err(|r| ShmError::bad(path, r))?;
        if m.u32_at(H_SLOT_STRIDE).load(Ordering::Relaxed) as usize != layout.stride
            || m.u64_at(H_TOTAL).load(Ordering::Relaxed) != layout.total as u64
        {
            return Err(ShmError::bad(path, "inconsistent sizes"));
        }
        if (layout.total as u64) > len {
            return Err(ShmError::bad(
                path,
                format!("file of {len} bytes, the header needs {}", layout.total),
            ));
        }
        m.owner_pid = m.u32_at(H_OWNER_PID).load(Ordering::Relaxed);
        m.layout = layout;
        Ok(m)
    }
}

/// The owner pid in the header of the segment file at `path`, if it has a valid magic
/// (read with plain file I/O, without mapping it).
pub(crate) fn read_owner_pid(path: &Path) -> Option<u32> {
    use std::io::Read;
    let mut head = [0u8; 32];
    File::open(path).ok()?.read_exact(&mut head).ok()?;
    let magic = u64::from_le_bytes(head[H_MAGIC..H_MAGIC + 8].try_into().ok()?);
    if magic != MAGIC {
        return None;
    }
    Some(u32::from_le_bytes(
        head[H_OWNER_PID..H_OWNER_PID + 4].try_into().ok()?,
    ))
}

/// Removes `path` if it is still the file `(dev, ino)` (not one that replaced it since).
pub(crate) fn remove_if_same(path: &Path, dev: u64, ino: u64) {
    if let Ok(meta) = fs::metadata(path) {
        if meta.ino() == ino && meta.dev() == dev {
            let _ = fs::remove_file(path);
        }
    }
}

/// Whether process `pid` is running: it exists (`kill(pid, 0)` does not fail with `ESRCH`;
/// a process of another user counts) and is not a zombie waiting to be reaped. Pid 0 is not.
pub(crate) fn pid_alive(pid: u32) -> bool {
    match std::ffi::CString::new(format!("/proc/{pid}/stat")) {
        Ok(stat) => pid_alive_at(pid, &stat),
        Err(_) => false,
    }
}

/// What [`pid_alive_at`] needs to check a process and a segment file without allocating:
/// the file's path and `/proc/<pid>/stat` of its owner, as C strings made once.
#[derive(Debug)]
pub(crate) struct LivenessProbe {
    pid: u32,
    segment: std::ffi::CString,
    proc_stat: std::ffi::CString,
}

impl LivenessProbe {
    /// The probe of the segment at `path` owned by `pid` (allocates; done when opening).
    pub(crate) fn new(path: &Path, pid: u32) -> Option<Self> {
        use std::os::unix::ffi::OsStrExt;
        Some(Self {
            pid,
            segment: std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?,
            proc_stat: std::ffi::CString::new(format!("/proc/{pid}/stat")).ok()?,
        })
    }

    /// Whether the file at the segment's path is still `(dev, ino)` and its owner runs
    /// (as [`pid_alive`]); no allocation.
    pub(crate) fn current(&self, dev: u64, ino: u64) -> bool {
        let same = rustix::fs::stat(self.segment.as_c_str())
            .is_ok_and(|st| st.st_dev == dev && st.st_ino == ino);
        same && pid_alive_at(self.pid, &self.proc_stat)
    }
}

/// [`pid_alive`] with the process's `/proc/<pid>/stat` path given (a zombie, state `Z` or
/// `X` after the last `)`, is dead; a file that cannot be read is not evidence of death),
/// reading it into a stack buffer: no allocation.
fn pid_alive_at(pid: u32, proc_stat: &std::ffi::CStr) -> bool {
    let Some(p) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    if matches!(
        rustix::process::test_kill_process(p),
        Err(rustix::io::Errno::SRCH)
    ) {
        return false;
    }
    let Ok(fd) = rustix::fs::open(
        proc_stat,
        rustix::fs::OFlags::RDONLY,
        rustix::fs::Mode::empty(),
    ) else {
        return true;
    };
    let mut buf = [0u8; 1024];
    let Ok(n) = rustix::io::read(&fd, &mut buf) else {
        return true;
    };
    let stat = &buf[..n];
    // `pid (comm) state ...`: the state follows the last ')'.
    let state = stat
        .iter()
        .rposition(|&b| b == b')')
        .and_then(|i| stat[i + 1..].iter().find(|b| !b.is_ascii_whitespace()));
    !matches!(state, Some(b'Z' | b'X'))
}
