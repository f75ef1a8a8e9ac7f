//! The loan pool: chunks of a shared file that the writing participant ([`LoanPool`], the
//! owner) fills with a large sample's serialized bytes, and that other processes of the same
//! user on the same host copy out ([`PoolReader`]) given a small [`ChunkRef`], with a
//! per-chunk generation counter (a seqlock) instead of cross-process reference counts.
//!
//! # Layout (version [`POOL_LAYOUT_VERSION`], native-endian)
//!
//! A [`POOL_HEADER_SIZE`]-byte header: magic [`POOL_MAGIC`] (`u64` at 0, written last with a
//! release store), layout version (`u32` at 8), header size (`u32` at 12), owner pid (`u32`
//! at 16), owner id (`u16` at 20, then 2 bytes of padding), class count (`u32` at 24, at most
//! [`POOL_MAX_CLASSES`]), total file size (`u64` at 32); from byte 64, one 32-byte entry per
//! class: chunk size (`u64`, a power of two), chunk count (`u32`, then 4 bytes of padding),
//! offset of the class's generation array (`u64`), offset of its first chunk (`u64`). After
//! the header the generation arrays (one `u32` per chunk, each array 64-byte aligned), then
//! the chunks of each class (each class's region page-aligned).

use std::ffi::CString;
use std::fs::{self, File, OpenOptions, Permissions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use memmap2::{MmapOptions, MmapRaw};

use crate::error::{PoolReadError, ShmError};
use crate::segment::{pid_alive, remove_if_same};

/// The first 8 bytes of every pool file (`FDDSPOOL`, little-endian `u64`).
pub const POOL_MAGIC: u64 = u64::from_le_bytes(*b"FDDSPOOL");
/// The pool layout version this implementation writes and accepts.
pub const POOL_LAYOUT_VERSION: u32 = 1;
/// Size of the pool header in bytes.
pub const POOL_HEADER_SIZE: usize = 4096;
/// Largest number of size classes in a pool.
pub const POOL_MAX_CLASSES: usize = 16;
/// Largest number of chunks in one class.
pub const POOL_MAX_CLASS_CHUNKS: u32 = 1 << 16;
/// Smallest chunk size accepted, in bytes.
pub const POOL_MIN_CHUNK: usize = 64;
/// Largest chunk size accepted, in bytes (1 GiB: a length fits a [`ChunkRef`]'s `u32`).
pub const POOL_MAX_CHUNK: usize = 1 << 30;
/// Largest pool file accepted, in bytes (64 GiB of address space; the file is sparse).
pub const POOL_MAX_SIZE: u64 = 1 << 36;

/// Default smallest chunk size (64 KiB).
pub const DEFAULT_POOL_MIN_CHUNK: usize = 64 << 10;
/// Default largest chunk size (16 MiB).
pub const DEFAULT_POOL_MAX_CHUNK: usize = 16 << 20;
/// Default bytes of address space per class the chunk count aims at (1 GiB; the file is
/// sparse, and chunks are reused last-in first-out, so only as many chunks as were ever in
/// use at once take memory).
pub const DEFAULT_POOL_CLASS_BUDGET: usize = 1 << 30;
/// Default fewest chunks per class.
pub const DEFAULT_POOL_MIN_CHUNKS: u32 = 8;
/// Default most chunks per class (256: samples of up to 4 MiB fill a 256-sample history
/// unacknowledged; the 8 MiB class has 128 chunks and the 16 MiB class 64, within the
/// default budget of address space).
pub const DEFAULT_POOL_MAX_CHUNKS: u32 = 256;

// Header fields (byte offsets).
const H_MAGIC: usize = 0;
const H_VERSION: usize = 8;
const H_HEADER_SIZE: usize = 12;
const H_OWNER_PID: usize = 16;
const H_OWNER_ID: usize = 20;
const H_CLASSES: usize = 24;
const H_TOTAL: usize = 32;
const H_CLASS_TABLE: usize = 64;
// A class entry: its size and field offsets within it.
const CLASS_ENTRY: usize = 32;
const C_CHUNK_SIZE: usize = 0;
const C_COUNT: usize = 8;
const C_GEN_OFF: usize = 16;
const C_DATA_OFF: usize = 24;

const GEN_ALIGN: u64 = 64;
const PAGE: u64 = 4096;

/// How often a [`PoolReader`] checks that a cached pool's file is still the one it mapped.
const RECHECK_INTERVAL: Duration = Duration::from_millis(100);

/// The loan pool file of participant `id` of user `uid` in `dir`, in this process's network
/// namespace: `<dir>/ferrodds-<uid>-<netns>-<id>.pool` (beside its segment,
/// [`segment_path`](crate::segment_path)).
pub fn pool_path(dir: &Path, uid: u32, id: u16) -> PathBuf {
    dir.join(format!(
        "ferrodds-{uid}-{}-{id}.pool",
        crate::net_namespace()
    ))
}

/// Configuration of a [`LoanPool`]: size classes are the powers of two from `min_chunk` to
/// `max_chunk`, each with `clamp(class_budget / chunk size, min_chunks, max_chunks)` chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    /// The pool id: the owning participant's segment id (see
    /// [`ShmConfig::id`](crate::ShmConfig::id)). No default.
    pub id: u16,
    /// Where the pool file is created. Default [`DEFAULT_DIR`](crate::DEFAULT_DIR).
    pub dir: PathBuf,
    /// Mode of the pool file, set exactly. Default [`DEFAULT_MODE`](crate::DEFAULT_MODE).
    pub mode: u32,
    /// Smallest chunk size, a power of two, at least [`POOL_MIN_CHUNK`]. Default
    /// [`DEFAULT_POOL_MIN_CHUNK`] (64 KiB).
    pub min_chunk: usize,
    /// Largest chunk size, a power of two, at most [`POOL_MAX_CHUNK`] and at most
    /// `min_chunk << 15` (16 classes): the largest sample the pool takes. Default
    /// [`DEFAULT_POOL_MAX_CHUNK`] (16 MiB).
    pub max_chunk: usize,
    /// Bytes of address space per class the chunk count aims at. Default
    /// [`DEFAULT_POOL_CLASS_BUDGET`] (1 GiB: the default pool is about 4 GiB of sparse file).
    pub class_budget: usize,
    /// Fewest chunks per class, at least 1. Default [`DEFAULT_POOL_MIN_CHUNKS`] (8).
    pub min_chunks: u32,
    /// Most chunks per class, at most [`POOL_MAX_CLASS_CHUNKS`]. Default
    /// [`DEFAULT_POOL_MAX_CHUNKS`] (256).
    pub max_chunks: u32,
}

impl PoolConfig {
    /// The default configuration for pool id `id`.
    pub fn new(id: u16) -> Self {
        Self {
            id,
            dir: PathBuf::from(crate::DEFAULT_DIR),
            mode: crate::DEFAULT_MODE,
            min_chunk: DEFAULT_POOL_MIN_CHUNK,
            max_chunk: DEFAULT_POOL_MAX_CHUNK,
            class_budget: DEFAULT_POOL_CLASS_BUDGET,
            min_chunks: DEFAULT_POOL_MIN_CHUNKS,
            max_chunks: DEFAULT_POOL_MAX_CHUNKS,
        }
    }
}

/// One size class, validated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Class {
    chunk_size: usize,
    count: u32,
    gen_off: usize,
    data_off: usize,
}

/// The layout of a pool, validated; every offset used to access a mapping comes from here,
/// never from shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    classes: [Class; POOL_MAX_CLASSES],
    class_count: usize,
    total: usize,
}

impl Layout {
    fn classes(&self) -> &[Class] {
        &self.classes[..self.class_count]
    }

    /// The layout the owner creates for `config`.
    fn plan(config: &PoolConfig) -> Result<Self, String> {
        let (min, max) = (config.min_chunk, config.max_chunk);
        if !min.is_power_of_two()
            || !max.is_power_of_two()
            || min < POOL_MIN_CHUNK
            || max > POOL_MAX_CHUNK
            || min > max
        {
            return Err(format!(
                "chunk sizes {min}..={max} are not powers of two in \
                 {POOL_MIN_CHUNK}..={POOL_MAX_CHUNK}"
            ));
        }
        let class_count = (max.trailing_zeros() - min.trailing_zeros()) as usize + 1;
        if class_count > POOL_MAX_CLASSES {
            return Err(format!(
                "{class_count} size classes, at most {POOL_MAX_CLASSES}"
            ));
        }
        if config.min_chunks == 0
            || config.min_chunks > config.max_chunks
            || config.max_chunks > POOL_MAX_CLASS_CHUNKS
        {
            return Err(format!(
                "chunk counts {}..={} not in 1..={POOL_MAX_CLASS_CHUNKS}",
                config.min_chunks, config.max_chunks
            ));
        }
        let mut classes = [Class::default(); POOL_MAX_CLASSES];
        let mut end = POOL_HEADER_SIZE as u64;
        for (i, class) in classes[..class_count].iter_mut().enumerate() {
            let chunk_size = min << i;
            let count = (config.class_budget / chunk_size)
                .clamp(config.min_chunks as usize, config.max_chunks as usize)
                as u32;
            let gen_off = end.next_multiple_of(GEN_ALIGN);
            end = gen_off + 4 * u64::from(count);
            *class = Class {
                chunk_size,
                count,
                gen_off: gen_off as usize,
                data_off: 0,
            };
        }
        let too_large = || format!("a pool of {class_count} classes is too large");
        for class in &mut classes[..class_count] {
            let data_off = end.next_multiple_of(PAGE);
            end = u64::from(class.count)
                .checked_mul(class.chunk_size as u64)
                .and_then(|n| n.checked_add(data_off))
                .filter(|&e| e <= POOL_MAX_SIZE)
                .ok_or_else(too_large)?;
            class.data_off = usize::try_from(data_off).map_err(|_| too_large())?;
        }
        let total = end.next_multiple_of(PAGE);
        let layout = Self {
            classes,
            class_count,
            total: usize::try_from(total).map_err(|_| too_large())?,
        };
        layout.validate()?;
        Ok(layout)
    }

    /// Checks every size and region: within the limits, inside `total`, past the header,
    /// aligned, not overlapping one another.
    fn validate(&self) -> Result<(), String> {
        if self.class_count == 0 || self.class_count > POOL_MAX_CLASSES {
            return Err(format!("{} size classes", self.class_count));
        }
        let total = self.total as u64;
        if total < POOL_HEADER_SIZE as u64 || total > POOL_MAX_SIZE {
            return Err(format!("total size {total}"));
        }
        let mut regions = [(0u64, 0u64); 2 * POOL_MAX_CLASSES];
        for (i, c) in self.classes().iter().enumerate() {
            if !c.chunk_size.is_power_of_two()
                || c.chunk_size < POOL_MIN_CHUNK
                || c.chunk_size > POOL_MAX_CHUNK
            {
                return Err(format!("class {i}: chunk size {}", c.chunk_size));
            }
            if c.count == 0 || c.count > POOL_MAX_CLASS_CHUNKS {
                return Err(format!("class {i}: {} chunks", c.count));
            }
            let gen_off = c.gen_off as u64;
            let data_off = c.data_off as u64;
            if !gen_off.is_multiple_of(GEN_ALIGN) || !data_off.is_multiple_of(PAGE) {
                return Err(format!("class {i}: misaligned region"));
            }
            let gen_end = gen_off.checked_add(4 * u64::from(c.count));
            let data_end = (c.chunk_size as u64)
                .checked_mul(u64::from(c.count))
                .and_then(|n| n.checked_add(data_off));
            match (gen_end, data_end) {
                (Some(g), Some(d))
                    if gen_off >= POOL_HEADER_SIZE as u64
                        && data_off >= POOL_HEADER_SIZE as u64
                        && g <= total
                        && d <= total =>
                {
                    regions[2 * i] = (gen_off, g);
                    regions[2 * i + 1] = (data_off, d);
                }
                _ => return Err(format!("class {i}: region outside the pool")),
            }
        }
        let regions = &mut regions[..2 * self.class_count];
        regions.sort_unstable();
        if regions.windows(2).any(|w| w[0].1 > w[1].0) {
            return Err("overlapping regions".into());
        }
        Ok(())
    }

    /// The layout and owner pid in `header`, the first [`POOL_HEADER_SIZE`] bytes of a file
    /// of `file_len` bytes that should be pool `id`'s.
    fn parse(
        header: &[u8; POOL_HEADER_SIZE],
        file_len: u64,
        id: u16,
    ) -> Result<(Self, u32), String> {
        let u32_at = |off: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&header[off..off + 4]);
            u32::from_ne_bytes(b)
        };
        let u64_at = |off: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&header[off..off + 8]);
            u64::from_ne_bytes(b)
        };
        let usize_at = |off: usize| {
            usize::try_from(u64_at(off)).map_err(|_| format!("value at {off} too large"))
        };
        if u64_at(H_MAGIC) != POOL_MAGIC {
            return Err("bad magic".into());
        }
        let version = u32_at(H_VERSION);
        if version != POOL_LAYOUT_VERSION {
            return Err(format!(
                "layout version {version}, expected {POOL_LAYOUT_VERSION}"
            ));
        }
        if u32_at(H_HEADER_SIZE) as usize != POOL_HEADER_SIZE {
            return Err("bad header size".into());
        }
        let owner_id = u16::from_ne_bytes([header[H_OWNER_ID], header[H_OWNER_ID + 1]]);
        if owner_id != id {
            return Err(format!("pool id {owner_id}, expected {id}"));
        }
        let class_count = u32_at(H_CLASSES) as usize;
        if class_count == 0 || class_count > POOL_MAX_CLASSES {
            return Err(format!("{class_count} size classes"));
        }
        let total = u64_at(H_TOTAL);
        if total > file_len {
            return Err(format!(
                "file of {file_len} bytes, the header needs {total}"
            ));
        }
        let mut classes = [Class::default(); POOL_MAX_CLASSES];
        for (i, class) in classes[..class_count].iter_mut().enumerate() {
            let entry = H_CLASS_TABLE + i * CLASS_ENTRY;
            *class = Class {
                chunk_size: usize_at(entry + C_CHUNK_SIZE)?,
                count: u32_at(entry + C_COUNT),
                gen_off: usize_at(entry + C_GEN_OFF)?,
                data_off: usize_at(entry + C_DATA_OFF)?,
            };
        }
        let layout = Self {
            classes,
            class_count,
            total: usize_at(H_TOTAL)?,
        };
        layout.validate()?;
        Ok((layout, u32_at(H_OWNER_PID)))
    }
}

/// A mapping of a whole pool file (`layout.total` bytes) with its validated layout.
#[derive(Debug)]
struct Mapped {
    map: MmapRaw,
    layout: Layout,
}

impl Mapped {
    /// A pointer to `len` bytes at `off`, aligned for `align`. Offsets come from the validated
    /// `Layout` (within `total`, the mapping's length) and the header constants, never from
    /// shared memory: the check is an internal invariant, not input validation.
    fn ptr(&self, off: usize, len: usize, align: usize) -> *mut u8 {
        assert!(
            off.is_multiple_of(align) && off.checked_add(len).is_some_and(|e| e <= self.map.len()),
            "pool offset {off} out of range"
        );
        // SAFETY: `off + len` is within the mapping (checked above), so the pointer stays
        // inside the same allocation.
        unsafe { self.map.as_mut_ptr().add(off) }
    }

    fn u32_at(&self, off: usize) -> &AtomicU32 {
        let p = self.ptr(off, 4, 4).cast::<u32>();
        // SAFETY: `p` is in bounds and 4-byte aligned (the mapping is page-aligned and `ptr`
        // checked the offset); the mapping lives as long as `&self`; every bit pattern is a
        // valid `u32`; this process accesses these bytes only atomically (on a reader's
        // read-only mapping only with relaxed loads, which work on read-only memory).
        unsafe { AtomicU32::from_ptr(p) }
    }

    fn u64_at(&self, off: usize) -> &AtomicU64 {
        let p = self.ptr(off, 8, 8).cast::<u64>();
        // SAFETY: as in `u32_at`, for an 8-byte aligned in-bounds `u64`.
        unsafe { AtomicU64::from_ptr(p) }
    }

    /// The generation word of chunk `index` of class `class` (both in range).
    fn generation(&self, class: usize, index: u32) -> &AtomicU32 {
        let c = self.layout.classes()[class];
        assert!(index < c.count);
        self.u32_at(c.gen_off + 4 * index as usize)
    }

    /// The start of chunk `index` of class `class` (both in range); `chunk_size` bytes.
    fn chunk(&self, class: usize, index: u32) -> *mut u8 {
        let c = self.layout.classes()[class];
        assert!(index < c.count);
        self.ptr(c.data_off + index as usize * c.chunk_size, c.chunk_size, 1)
    }
}

/// The owner pid in the header of the pool file at `path`, if it has a valid magic (plain
/// file I/O, no mapping).
pub(crate) fn read_owner_pid(path: &Path) -> Option<u32> {
    use std::io::Read;
    let mut head = [0u8; 24];
    File::open(path).ok()?.read_exact(&mut head).ok()?;
    let magic = u64::from_ne_bytes(head[H_MAGIC..H_MAGIC + 8].try_into().ok()?);
    if magic != POOL_MAGIC {
        return None;
    }
    Some(u32::from_ne_bytes(
        head[H_OWNER_PID..H_OWNER_PID + 4].try_into().ok()?,
    ))
}

/// The first generation of the chunks of a new pool: even, and distinct for the pools one
/// process creates (2^23 reuses of a chunk apart), so that a reader still holding the mapping
/// of a previous pool of the same id and pid does not take its generations for this one's.
fn generation_seed() -> u32 {
    static BASE: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let base = *BASE.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() ^ d.as_secs() as u32)
    });
    base.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed) << 24) & !1
}

/// Bytes of chunks a class keeps in quarantine after their release (at least one chunk, at
/// most [`QUARANTINE_MAX`] and half the class).
const QUARANTINE_BYTES: usize = 32 << 20;
/// Most chunks a class keeps in quarantine.
const QUARANTINE_MAX: usize = 16;

/// The free chunks of a class. A released chunk first waits in a quarantine (first in,
/// first out) of the last few released, so that a reference to it stays valid for as many
/// later releases: a best-effort writer's history lets a chunk go as soon as it is sent,
/// and a KEEP_LAST writer's when the sample is replaced, while a reader on this host may not
/// have copied it out yet. Out of quarantine, chunks are reused last-in first-out (warm
/// memory, and only as many chunks touched as were ever in use at once). When the stack is
/// empty, the oldest quarantined chunk is taken rather than refusing.
#[derive(Debug)]
struct FreeList {
    quarantine: std::collections::VecDeque<u32>,
    quarantine_len: usize,
    stack: Vec<u32>,
}

impl FreeList {
    fn new(chunk_size: usize, count: u32) -> Self {
        let count = count as usize;
        Self {
            quarantine: std::collections::VecDeque::new(),
            quarantine_len: (QUARANTINE_BYTES / chunk_size)
                .min(QUARANTINE_MAX)
                .min(count / 2)
                .max(1),
            // Chunk 0 on top: taken first.
            stack: (0..count as u32).rev().collect(),
        }
    }

    fn release(&mut self, index: u32) {
        self.quarantine.push_back(index);
        if self.quarantine.len() > self.quarantine_len {
            if let Some(i) = self.quarantine.pop_front() {
                self.stack.push(i);
            }
        }
    }

    fn take(&mut self) -> Option<u32> {
        self.stack.pop().or_else(|| self.quarantine.pop_front())
    }
}

/// Counters of a [`LoanPool`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Chunks handed out by [`LoanPool::alloc`].
    pub allocations: u64,
    /// Allocations refused because the class had no free chunk.
    pub exhausted: u64,
    /// Allocations refused because the file system could not reserve the chunk's memory
    /// (a full tmpfs).
    pub no_memory: u64,
}

/// The state shared by the clones of a [`LoanPool`] and its outstanding chunks.
#[derive(Debug)]
struct PoolInner {
    mapped: Mapped,
    /// Per class, the free chunks: a quarantine of the last ones released, then a stack.
    free: Vec<Mutex<FreeList>>,
    /// Per class and chunk, how many of its bytes have memory reserved (`fallocate`): a
    /// chunk's pages are reserved before it is first written that far, so a full tmpfs is a
    /// refused allocation, not a `SIGBUS` on the write.
    backed: Vec<Mutex<Vec<usize>>>,
    /// The pool file (kept open for `fallocate`).
    file: File,
    path: PathBuf,
    dev: u64,
    ino: u64,
    id: u16,
    owner: u32,
    allocations: AtomicU64,
    exhausted: AtomicU64,
    /// Allocations refused because memory could not be reserved for the chunk.
    no_memory: AtomicU64,
}

impl PoolInner {
    /// Reserves memory for the first `len` bytes of chunk `index` of `class` (once: later
    /// calls for as many bytes or fewer do nothing); false if the file system has none.
    fn reserve(&self, class: usize, index: u32, len: usize) -> bool {
        let mut backed = self.backed[class]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(have) = backed.get_mut(index as usize) else {
            return false;
        };
        if *have >= len {
            return true;
        }
        let c = self.mapped.layout.classes()[class];
        let want = len.next_multiple_of(PAGE as usize).min(c.chunk_size);
        let offset = c.data_off + index as usize * c.chunk_size;
        match rustix::fs::fallocate(
            &self.file,
            rustix::fs::FallocateFlags::empty(),
            offset as u64,
            want as u64,
        ) {
            Ok(()) => {
                *have = want;
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, bytes = want, "no memory for a shared-memory chunk");
                false
            }
        }
    }

    fn release(&self, class: u8, index: u32) {
        self.free[usize::from(class)]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .release(index);
    }
}

impl Drop for PoolInner {
    fn drop(&mut self) {
        remove_if_same(&self.path, self.dev, self.ino);
    }
}

/// The writing side of a loan pool (the owner process): hands out chunks of its shared file
/// for large samples. Cloning shares the pool; the file is removed when the last clone and
/// the last outstanding chunk are dropped (if its name still refers to it).
#[derive(Debug, Clone)]
pub struct LoanPool {
    inner: Arc<PoolInner>,
}

impl LoanPool {
    /// Creates the pool file [`pool_path`]`(dir, uid, id)` of `config` (replacing a stale
    /// file of that name): written under `<name>.<pid>.tmp` with exactly `config.mode`, then
    /// renamed into place. The file is sparse: only touched pages use memory.
    pub fn create(config: &PoolConfig) -> Result<Self, ShmError> {
        let layout = Layout::plan(config).map_err(ShmError::InvalidConfig)?;
        let path = pool_path(&config.dir, crate::real_uid(), config.id);
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
            .mode(config.mode)
            .open(&tmp)
            .map_err(|e| ShmError::io_at(&tmp, e))?;
        let result = Self::init(&tmp, &file, layout, config, pid).and_then(|(mapped, dev, ino)| {
            fs::rename(&tmp, &path).map_err(|e| ShmError::io_at(&path, e))?;
            Ok((mapped, dev, ino))
        });
        let (mapped, dev, ino) = match result {
            Ok(r) => r,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(e);
            }
        };
        let free = layout
            .classes()
            .iter()
            .map(|c| Mutex::new(FreeList::new(c.chunk_size, c.count)))
            .collect();
        let backed = layout
            .classes()
            .iter()
            .map(|c| Mutex::new(vec![0; c.count as usize]))
            .collect();
        Ok(Self {
            inner: Arc::new(PoolInner {
                mapped,
                free,
                backed,
                file,
                path,
                dev,
                ino,
                id: config.id,
                owner: pid,
                allocations: AtomicU64::new(0),
                exhausted: AtomicU64::new(0),
                no_memory: AtomicU64::new(0),
            }),
        })
    }

    fn init(
        tmp: &Path,
        file: &File,
        layout: Layout,
        config: &PoolConfig,
        pid: u32,
    ) -> Result<(Mapped, u64, u64), ShmError> {
        // The umask may have cleared bits of the mode: set it exactly.
        file.set_permissions(Permissions::from_mode(config.mode))
            .map_err(|e| ShmError::io_at(tmp, e))?;
        file.set_len(layout.total as u64)
            .map_err(|e| ShmError::io_at(tmp, e))?;
        let map = MmapOptions::new()
            .len(layout.total)
            .map_raw(file)
            .map_err(|e| ShmError::io_at(tmp, e))?;
        let meta = file.metadata().map_err(|e| ShmError::io_at(tmp, e))?;
        let m = Mapped { map, layout };
        // The file is zero-filled: only the non-zero fields need writing.
        m.u32_at(H_VERSION)
            .store(POOL_LAYOUT_VERSION, Ordering::Relaxed);
        m.u32_at(H_HEADER_SIZE)
            .store(POOL_HEADER_SIZE as u32, Ordering::Relaxed);
        m.u32_at(H_OWNER_PID).store(pid, Ordering::Relaxed);
        // The owner id's `u16` and its padding, as one `u32` (native-endian).
        let id_word = u32::from_ne_bytes({
            let id = config.id.to_ne_bytes();
            [id[0], id[1], 0, 0]
        });
        m.u32_at(H_OWNER_ID).store(id_word, Ordering::Relaxed);
        m.u32_at(H_CLASSES)
            .store(layout.class_count as u32, Ordering::Relaxed);
        m.u64_at(H_TOTAL)
            .store(layout.total as u64, Ordering::Relaxed);
        let seed = generation_seed();
        for (i, c) in layout.classes().iter().enumerate() {
            let entry = H_CLASS_TABLE + i * CLASS_ENTRY;
            m.u64_at(entry + C_CHUNK_SIZE)
                .store(c.chunk_size as u64, Ordering::Relaxed);
            m.u32_at(entry + C_COUNT).store(c.count, Ordering::Relaxed);
            m.u64_at(entry + C_GEN_OFF)
                .store(c.gen_off as u64, Ordering::Relaxed);
            m.u64_at(entry + C_DATA_OFF)
                .store(c.data_off as u64, Ordering::Relaxed);
            for index in 0..c.count {
                m.generation(i, index).store(seed, Ordering::Relaxed);
            }
        }
        m.u64_at(H_MAGIC).store(POOL_MAGIC, Ordering::Release);
        Ok((m, meta.dev(), meta.ino()))
    }

    /// The pool file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The pool id.
    pub fn id(&self) -> u16 {
        self.inner.id
    }

    /// The largest length [`LoanPool::alloc`] accepts (the largest chunk size), in bytes.
    pub fn max_len(&self) -> usize {
        let classes = self.inner.mapped.layout.classes();
        classes[classes.len() - 1].chunk_size
    }

    /// A chunk of `len` bytes from the smallest class whose chunks are that large: after a
    /// quarantine of the last few chunks released (see `FreeList`), free chunks are reused
    /// last-in first-out (the pages and cache lines of a recently used chunk are warm, and
    /// chunks never in use at once are never touched, so the sparse file takes only the
    /// memory the peak of chunks in use needs). `None` if `len` is 0 or more than
    /// [`LoanPool::max_len`], or the class has no free chunk (counted in
    /// [`PoolStats::exhausted`]): the caller then uses its ordinary path. The chunk's
    /// generation is made odd (being written) before it is handed out.
    pub fn alloc(&self, len: usize) -> Option<PoolChunk> {
        if len == 0 {
            return None;
        }
        let inner = &self.inner;
        let class = inner
            .mapped
            .layout
            .classes()
            .iter()
            .position(|c| c.chunk_size >= len)?;
        let popped = inner.free[class]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(index) = popped else {
            inner.exhausted.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        if !inner.reserve(class, index, len) {
            inner.release(class as u8, index);
            inner.no_memory.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let generation = inner.mapped.generation(class, index);
        let g = generation.load(Ordering::Relaxed);
        // The next odd value (a chunk dropped unpublished is still odd).
        let odd = g.wrapping_add(if g & 1 == 0 { 1 } else { 2 });
        generation.store(odd, Ordering::Relaxed);
        // Orders the odd store before the writes into the chunk: a reader whose copy sees
        // any of them sees the odd (or a later) generation in its re-check.
        fence(Ordering::Release);
        inner.allocations.fetch_add(1, Ordering::Relaxed);
        Some(PoolChunk {
            pool: Some(Arc::clone(inner)),
            class: class as u8,
            index,
            generation: odd,
            len,
        })
    }

    /// The pool's counters.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            allocations: self.inner.allocations.load(Ordering::Relaxed),
            exhausted: self.inner.exhausted.load(Ordering::Relaxed),
            no_memory: self.inner.no_memory.load(Ordering::Relaxed),
        }
    }
}

/// A chunk being written (unique): fill [`PoolChunk::as_mut_slice`], then
/// [`PoolChunk::publish`]. Dropped unpublished, it returns to the pool.
#[derive(Debug)]
pub struct PoolChunk {
    /// `Some` until published.
    pool: Option<Arc<PoolInner>>,
    class: u8,
    index: u32,
    /// The odd generation set by `alloc`.
    generation: u32,
    len: usize,
}

impl PoolChunk {
    fn inner(&self) -> &PoolInner {
        self.pool
            .as_deref()
            .expect("a PoolChunk holds its pool until published")
    }

    /// The length of the chunk's contents, in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the contents are empty (after [`PoolChunk::truncate`] to 0).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The contents, exactly [`PoolChunk::len`] bytes (initially whatever the chunk held).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        let inner = self.inner();
        let p = inner.mapped.chunk(usize::from(self.class), self.index);
        // SAFETY: `p` starts `chunk_size >= len` bytes inside the mapping, which the `Arc`
        // keeps alive as long as `self`; this chunk index was taken off the free queue and
        // goes back only when `self` (or the `SharedChunk` it becomes) is dropped, so no
        // other reference in this process aliases it, and the `&mut self` borrow makes this
        // one unique; `u8` has no invalid values. Readers in other processes map the file
        // read-only and may copy these bytes concurrently: they check the generation (odd
        // now) afterwards and discard such a copy.
        unsafe { std::slice::from_raw_parts_mut(p, self.len) }
    }

    /// The contents, exactly [`PoolChunk::len`] bytes.
    pub fn as_slice(&self) -> &[u8] {
        let inner = self.inner();
        let p = inner.mapped.chunk(usize::from(self.class), self.index);
        // SAFETY: as for `as_mut_slice` (the chunk is this value's alone in this process);
        // the shared borrow of `self` excludes a mutable one for its lifetime.
        unsafe { std::slice::from_raw_parts(p, self.len) }
    }

    /// Shortens the contents to `new_len` bytes; no effect if `new_len` is not smaller.
    pub fn truncate(&mut self, new_len: usize) {
        self.len = self.len.min(new_len);
    }

    /// Makes the contents readable by others: stores the next (even) generation with release
    /// ordering. The bytes are immutable from now on.
    pub fn publish(mut self) -> SharedChunk {
        let pool = self
            .pool
            .take()
            .expect("a PoolChunk holds its pool until published");
        let generation = self.generation.wrapping_add(1);
        pool.mapped
            .generation(usize::from(self.class), self.index)
            .store(generation, Ordering::Release);
        SharedChunk {
            pool,
            class: self.class,
            index: self.index,
            generation,
            len: self.len,
        }
    }

    /// The generation [`PoolChunk::publish`] will give the chunk.
    #[cfg(test)]
    pub(crate) fn published_generation(&self) -> u32 {
        self.generation.wrapping_add(1)
    }
}

impl Drop for PoolChunk {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.release(self.class, self.index);
        }
    }
}

/// A published chunk: its bytes are immutable while it exists, and readers copy them given
/// [`SharedChunk::reference`]. Dropping it returns the chunk to its class's free
/// stack; references stay valid until the chunk is allocated again.
#[derive(Debug)]
pub struct SharedChunk {
    pool: Arc<PoolInner>,
    class: u8,
    index: u32,
    generation: u32,
    len: usize,
}

impl SharedChunk {
    /// The published contents.
    pub fn bytes(&self) -> &[u8] {
        let p = self.pool.mapped.chunk(usize::from(self.class), self.index);
        // SAFETY: `p` starts `chunk_size >= len` bytes inside the mapping, alive as long as
        // `self.pool`; the chunk is owned by this `SharedChunk` until it is dropped, and
        // nothing in this process writes it meanwhile (its `PoolChunk` was consumed by
        // `publish`); other processes map the file read-only (the same user could write it
        // anyway: pools are trusted that far, like segments); `u8` has no invalid values.
        unsafe { std::slice::from_raw_parts(p, self.len) }
    }

    /// The reference readers copy the chunk with.
    pub fn reference(&self) -> ChunkRef {
        ChunkRef {
            pool: self.pool.id,
            owner: self.pool.owner,
            class: self.class,
            index: self.index,
            generation: self.generation,
            len: self.len as u32,
        }
    }
}

impl Drop for SharedChunk {
    fn drop(&mut self) {
        self.pool.release(self.class, self.index);
    }
}

/// A reference to a published chunk, sent to readers (through the ring) in
/// [`ChunkRef::ENCODED_LEN`] bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChunkRef {
    /// The pool id ([`PoolConfig::id`]).
    pub pool: u16,
    /// The pid of the pool's owner.
    pub owner: u32,
    /// The size class.
    pub class: u8,
    /// The chunk index within the class.
    pub index: u32,
    /// The chunk's (even) generation when published.
    pub generation: u32,
    /// The length of the contents, in bytes.
    pub len: u32,
}

impl ChunkRef {
    /// The length of an encoded reference: little-endian pool (`u16`, bytes 0..2), class
    /// (`u8`, 2), a zero pad byte (3), owner (`u32`, 4..8), index (`u32`, 8..12), generation
    /// (`u32`, 12..16), length (`u32`, 16..20).
    pub const ENCODED_LEN: usize = 20;

    /// The encoding described at [`ChunkRef::ENCODED_LEN`].
    pub fn encode(&self) -> [u8; Self::ENCODED_LEN] {
        let mut b = [0u8; Self::ENCODED_LEN];
        b[0..2].copy_from_slice(&self.pool.to_le_bytes());
        b[2] = self.class;
        b[4..8].copy_from_slice(&self.owner.to_le_bytes());
        b[8..12].copy_from_slice(&self.index.to_le_bytes());
        b[12..16].copy_from_slice(&self.generation.to_le_bytes());
        b[16..20].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// Decodes the first [`ChunkRef::ENCODED_LEN`] bytes of `bytes`; `None` if it is shorter
    /// or the pad byte is not zero.
    pub fn decode(bytes: &[u8]) -> Option<ChunkRef> {
        let b = bytes.get(..Self::ENCODED_LEN)?;
        if b[3] != 0 {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Some(ChunkRef {
            pool: u16::from_le_bytes([b[0], b[1]]),
            class: b[2],
            owner: u32_at(4),
            index: u32_at(8),
            generation: u32_at(12),
            len: u32_at(16),
        })
    }
}

/// A pool mapped read-only by a [`PoolReader`].
#[derive(Debug)]
struct CachedPool {
    id: u16,
    owner: u32,
    /// Shared with the [`ChunkView`]s made from it, which keep it mapped.
    mapped: Arc<Mapped>,
    dev: u64,
    ino: u64,
    /// The file's path, for checks without allocating.
    path: CString,
    /// When the file was last known to be the one mapped.
    checked: Instant,
}

impl CachedPool {
    /// Opens, validates and maps pool `id` of `uid` in `dir` read-only.
    fn open(dir: &Path, uid: u32, id: u16) -> Result<Self, PoolReadError> {
        let path = pool_path(dir, uid, id);
        let bad = |reason: String| PoolReadError::BadPool(format!("{}: {reason}", path.display()));
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(PoolReadError::NotFound)
            }
            Err(e) => return Err(bad(e.to_string())),
        };
        let meta = file.metadata().map_err(|e| bad(e.to_string()))?;
        if !meta.is_file() || meta.len() < POOL_HEADER_SIZE as u64 {
            return Err(bad(format!("file of {} bytes", meta.len())));
        }
        let mut header = [0u8; POOL_HEADER_SIZE];
        file.read_exact_at(&mut header, 0)
            .map_err(|e| bad(e.to_string()))?;
        let (layout, owner) = Layout::parse(&header, meta.len(), id).map_err(bad)?;
        if !pid_alive(owner) {
            return Err(PoolReadError::NotFound);
        }
        let map = MmapOptions::new()
            .len(layout.total)
            .map_raw_read_only(&file)
            .map_err(|e| bad(e.to_string()))?;
        if map.len() != layout.total {
            return Err(bad("short mapping".into()));
        }
        let path = CString::new(path.as_os_str().as_bytes()).map_err(|e| bad(e.to_string()))?;
        Ok(Self {
            id,
            owner,
            mapped: Arc::new(Mapped { map, layout }),
            dev: meta.dev(),
            ino: meta.ino(),
            path,
            checked: Instant::now(),
        })
    }

    /// Whether the pool's path still names the file mapped (no allocation).
    fn is_current(&self) -> bool {
        rustix::fs::stat(self.path.as_c_str())
            .is_ok_and(|st| st.st_dev == self.dev && st.st_ino == self.ino)
    }

    /// Copies the chunk `r` (whose pool and owner are this one's) into `out`, under the
    /// generation check.
    /// Checks `r` against the layout and its chunk's current generation; the chunk's class.
    fn check(&self, r: &ChunkRef) -> Result<usize, PoolReadError> {
        let class = usize::from(r.class);
        let c = *self
            .mapped
            .layout
            .classes()
            .get(class)
            .ok_or(PoolReadError::OutOfRange)?;
        if r.index >= c.count || r.len as usize > c.chunk_size || r.generation & 1 != 0 {
            return Err(PoolReadError::OutOfRange);
        }
        let g = self
            .mapped
            .generation(class, r.index)
            .load(Ordering::Relaxed);
        // Pairs with the owner's release store of `publish` (see `copy`).
        fence(Ordering::Acquire);
        if g != r.generation {
            return Err(PoolReadError::Stale);
        }
        Ok(class)
    }

    fn view(&self, r: &ChunkRef) -> Result<ChunkView, PoolReadError> {
        let class = self.check(r)?;
        Ok(ChunkView {
            mapped: Arc::clone(&self.mapped),
            class,
            r: *r,
        })
    }

    fn copy(&self, r: &ChunkRef, out: &mut Vec<u8>) -> Result<(), PoolReadError> {
        let class = self.check(r)?;
        let len = r.len as usize;
        let generation = self.mapped.generation(class, r.index);
        let g1 = r.generation;
        let src = self.mapped.chunk(class, r.index);
        out.clear();
        out.reserve(len);
        // SAFETY: `src` starts `chunk_size >= len` bytes inside the mapping (validated
        // layout); `out` has capacity for `len` bytes after `reserve`, and the regions cannot
        // overlap (private heap vs. shared mapping). The owner may reuse and rewrite the
        // chunk while we copy (a seqlock): the bytes are copied as plain `u8`s (every value
        // valid), nothing interprets them, and the generation re-check below discards the
        // copy if the chunk was reallocated meanwhile; `set_len` covers exactly the bytes
        // written.
        unsafe {
            std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), len);
            out.set_len(len);
        }
        // Orders the copy before the re-check: if it read any byte the owner wrote after
        // making the generation odd, this fence synchronises with the owner's release fence
        // and the load below sees that odd (or a later) generation.
        fence(Ordering::Acquire);
        let g2 = generation.load(Ordering::Relaxed);
        if g2 != g1 {
            out.clear();
            return Err(PoolReadError::Stale);
        }
        Ok(())
    }
}

/// A chunk of another process's pool seen in place ([`PoolReader::view`]): the bytes a
/// [`ChunkRef`] names, in a read-only mapping this view keeps alive.
///
/// The owner reuses a chunk only once its writer's history released it, so a reader that
/// holds back its acknowledgement while it reads sees the bytes unchanged. Otherwise the
/// owner may rewrite them at any time: [`ChunkView::bytes`] may then change under the
/// caller, and [`ChunkView::is_consistent`] afterwards says so (RTI's `is_data_consistent`).
#[derive(Debug)]
pub struct ChunkView {
    mapped: Arc<Mapped>,
    class: usize,
    r: ChunkRef,
}

impl ChunkView {
    /// The chunk's bytes, in the owner's memory.
    pub fn bytes(&self) -> &[u8] {
        let p = self.mapped.chunk(self.class, self.r.index);
        // SAFETY: `p` starts a chunk of `chunk_size >= r.len` bytes inside the mapping (the
        // reference was checked against the validated layout when the view was made), and
        // `self.mapped` keeps the mapping alive as long as the returned borrow. Every byte
        // value is a valid `u8`. The owner process may rewrite the chunk if it reuses it
        // (a writer that does not wait for this reader's acknowledgement): the slice then
        // reads changing plain bytes, as the seqlock copy in `copy` does, and the generation
        // check of `is_consistent` is how the caller learns of it.
        unsafe { std::slice::from_raw_parts(p.cast_const(), self.r.len as usize) }
    }

    /// Whether the chunk still holds the sample the reference named (its generation is
    /// unchanged). Call after reading [`ChunkView::bytes`]: true means what was read is the
    /// sample.
    pub fn is_consistent(&self) -> bool {
        // Orders the reads of the bytes before the generation check (as in `copy`).
        fence(Ordering::Acquire);
        self.mapped
            .generation(self.class, self.r.index)
            .load(Ordering::Relaxed)
            == self.r.generation
    }

    /// The reference this view was made from.
    pub fn reference(&self) -> &ChunkRef {
        &self.r
    }
}

/// The reading side of loan pools (any process of the same user on the host): copies chunks
/// out of pools mapped read-only, given their [`ChunkRef`]s. Mappings are cached per pool id
/// (allocation-free in steady state).
#[derive(Debug)]
pub struct PoolReader {
    dir: PathBuf,
    uid: u32,
    cache: Vec<CachedPool>,
}

impl PoolReader {
    /// A reader of the pools of user `uid` in `dir` ([`pool_path`]).
    pub fn new(dir: PathBuf, uid: u32) -> Self {
        Self {
            dir,
            uid,
            cache: Vec::new(),
        }
    }

    /// Copies the contents of chunk `r` into `out` (cleared first; left empty on error).
    /// The pool file is opened, validated and mapped on first use. Errors: `NotFound` (no
    /// pool file, or its owner is not running), `BadPool` (it fails validation), `OutOfRange`
    /// (`r` does not fit the pool's layout or has an odd generation), `Stale` (the chunk was
    /// reused since `r` was made, is being rewritten, or the pool is another owner's).
    pub fn copy(&mut self, r: &ChunkRef, out: &mut Vec<u8>) -> Result<(), PoolReadError> {
        out.clear();
        self.on_pool(r, |p| p.copy(r, out))
    }

    /// Runs `f` on `r`'s cached pool (opened if needed). A stale answer from a pool not
    /// verified just now is tried once more: perhaps the file was replaced (by a pool of the
    /// same id and owner pid) since it was last checked, so it is checked, re-opened if so.
    fn on_pool<T>(
        &mut self,
        r: &ChunkRef,
        mut f: impl FnMut(&CachedPool) -> Result<T, PoolReadError>,
    ) -> Result<T, PoolReadError> {
        let (i, verified) = self.lookup(r, false)?;
        match f(&self.cache[i]) {
            Err(PoolReadError::Stale) if !verified => {
                let (i, _) = self.lookup(r, true)?;
                f(&self.cache[i])
            }
            result => result,
        }
    }

    /// The cache entry for `r`'s pool, opened if needed, and whether its file was verified
    /// just now. A cached pool is re-checked (its path still naming the file mapped) every
    /// [`RECHECK_INTERVAL`], when `force`, and when `r` names another owner; a replaced file
    /// is re-opened once.
    fn lookup(&mut self, r: &ChunkRef, force: bool) -> Result<(usize, bool), PoolReadError> {
        if let Some(i) = self.cache.iter().position(|p| p.id == r.pool) {
            let p = &mut self.cache[i];
            if p.owner == r.owner && !force && p.checked.elapsed() < RECHECK_INTERVAL {
                return Ok((i, false));
            }
            if p.is_current() {
                p.checked = Instant::now();
                return if p.owner == r.owner {
                    Ok((i, true))
                } else {
                    Err(PoolReadError::Stale)
                };
            }
            self.cache.swap_remove(i);
        }
        let p = CachedPool::open(&self.dir, self.uid, r.pool)?;
        let owner = p.owner;
        self.cache.push(p);
        if owner != r.owner {
            return Err(PoolReadError::Stale);
        }
        Ok((self.cache.len() - 1, true))
    }

    /// A view of chunk `r` in place, without copying it: [`ChunkView::bytes`] reads the
    /// owner's memory, and [`ChunkView::is_consistent`] tells afterwards whether the chunk
    /// was reused meanwhile. The view keeps the pool mapped (even past [`PoolReader::forget`]).
    /// Errors as [`PoolReader::copy`]'s.
    pub fn view(&mut self, r: &ChunkRef) -> Result<ChunkView, PoolReadError> {
        self.on_pool(r, |p| p.view(r))
    }

    /// Whether chunk `r` can be read now (as [`PoolReader::copy`] would succeed), without
    /// copying it. Errors as [`PoolReader::copy`]'s.
    pub fn check(&mut self, r: &ChunkRef) -> Result<(), PoolReadError> {
        self.on_pool(r, |p| p.check(r).map(drop))
    }

    /// Drops the mapping of pool `pool` (its owner is gone); a later reference re-opens it.
    pub fn forget(&mut self, pool: u16) {
        self.cache.retain(|p| p.id != pool);
    }

    /// How many pools are mapped.
    pub fn mapped_pools(&self) -> usize {
        self.cache.len()
    }
}

#[cfg(test)]
#[path = "pool_tests.rs"]
mod pool_tests;
