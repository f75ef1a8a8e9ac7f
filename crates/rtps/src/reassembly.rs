//! Reassembly of fragmented samples (DATA_FRAG, DDSI-RTPS 2.5 §8.4.14.1),
//! bounded in bytes, in number of samples and in time.
//!
//! One [`Reassembler`] exists per (local reader, remote writer) pair; all
//! reassemblers of a participant share one [`ReassemblyBudget`]. Memory is
//! allocated lazily in chunks of about [`CHUNK_BYTES`] as fragment bytes
//! actually arrive, and every allocation (chunk, fragment bitmap, chunk index)
//! is charged to the writer's and the participant's budget *before* it is
//! made: a sender announcing a 4 GB sample, or thousands of samples it never
//! completes, gets its fragments rejected instead of making us allocate. The
//! only allocation not charged is the final contiguous payload of a sample
//! whose bytes have all been received (at most `max_sample_size`).
//!
//! [`Reassembler::add_reusing`] takes its chunks from, and builds the final
//! payload in, buffers a receiver keeps in [`ReassemblySpares`] (the chunks of
//! each completed sample go back there, within a byte bound): a receiver of
//! large samples that gives their payload buffers back then reassembles
//! without allocating, so without faulting fresh pages in, per sample.
//!
//! Inconsistent input (a fragment size or sample size that differs from the
//! first fragment of that sample, unaligned offsets, fragments beyond the end,
//! short non-final fragments) is rejected with a [`Rejected`] reason and
//! never panics.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::types::{ChangeKind, Timestamp};
use crate::Time;

/// Allocation granule of reassembly buffers (rounded to whole fragments).
pub const CHUNK_BYTES: usize = 64 * 1024;
/// Most fragments per sample (bounds the fragment bitmap to 32 KiB).
pub const MAX_FRAGMENTS: u32 = 1 << 18;
/// Most bytes of chunk capacity kept in [`ReassemblySpares`].
pub const SPARE_CHUNK_BYTES: usize = 4 << 20;

/// Buffers kept between reassembled samples for reuse (see
/// [`Reassembler::add_reusing`]); one per receiver, shared by its reassemblers.
#[derive(Debug, Default)]
pub struct ReassemblySpares {
    /// Buffer for the next completed payload (taken whatever its capacity).
    pub payload: Option<Vec<u8>>,
    /// Chunks of completed samples (each at most [`CHUNK_BYTES`]).
    chunks: Vec<Vec<u8>>,
    /// Capacity of `chunks`, in bytes (at most [`SPARE_CHUNK_BYTES`]).
    chunk_bytes: usize,
}

impl ReassemblySpares {
    /// Chunk buffers kept (and their capacity in bytes).
    #[must_use]
    pub fn chunks(&self) -> (usize, usize) {
        (self.chunks.len(), self.chunk_bytes)
    }

    /// A chunk of `len` bytes: a kept one (its old bytes are overwritten by the
    /// fragments before the sample completes), else a new zeroed one. The budget
    /// charges `len`; what a kept chunk's capacity holds beyond it is bounded by
    /// [`SPARE_CHUNK_BYTES`] in all.
    fn chunk(&mut self, len: usize) -> Vec<u8> {
        match self.chunks.pop() {
            Some(mut c) => {
                self.chunk_bytes -= c.capacity();
                if c.len() >= len {
                    c.truncate(len);
                } else {
                    c.resize(len, 0);
                }
                c
            }
            None => vec![0u8; len],
        }
    }

    /// Keeps a chunk of a completed sample, within [`SPARE_CHUNK_BYTES`].
    fn keep_chunk(&mut self, c: Vec<u8>) {
        let cap = c.capacity();
        if cap > 0 && cap <= CHUNK_BYTES && self.chunk_bytes + cap <= SPARE_CHUNK_BYTES {
            self.chunk_bytes += cap;
            self.chunks.push(c);
        }
    }
}

/// Limits of reassembly; part of [`crate::ParticipantConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReassemblyLimits {
    /// Largest sample accepted (bytes of serialized payload; default 16 MiB).
    /// DATA_FRAGs announcing more are rejected before anything is allocated.
    pub max_sample_size: u32,
    /// Most bytes under reassembly per remote writer and local reader
    /// (default 32 MiB).
    pub max_bytes_per_writer: usize,
    /// Most bytes under reassembly in the whole participant (default 64 MiB).
    pub max_bytes_total: usize,
    /// Most incomplete samples per remote writer and local reader (default 256:
    /// with MTU-sized fragments a lossy link leaves many samples of a window
    /// incomplete at once, and the byte budgets bound the memory).
    pub max_samples_per_writer: usize,
    /// Best effort: an incomplete sample older than this is dropped
    /// (default 1 s). Reliable readers keep it and repair it with NACK_FRAG.
    pub best_effort_timeout: core::time::Duration,
}

impl Default for ReassemblyLimits {
    fn default() -> Self {
        Self {
            max_sample_size: 16 << 20,
            max_bytes_per_writer: 32 << 20,
            max_bytes_total: 64 << 20,
            max_samples_per_writer: 256,
            best_effort_timeout: core::time::Duration::from_secs(1),
        }
    }
}

/// Bytes under reassembly in a participant, shared by its reassemblers.
#[derive(Debug, Clone, Default)]
pub struct ReassemblyBudget(Arc<AtomicUsize>);

impl ReassemblyBudget {
    /// A fresh, empty budget.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes currently charged.
    #[must_use]
    pub fn used(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    fn try_charge(&self, n: usize, limit: usize) -> bool {
        let used = self.used();
        if used.saturating_add(n) > limit {
            return false;
        }
        self.0.fetch_add(n, Ordering::Relaxed);
        true
    }

    fn release(&self, n: usize) {
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                Some(u.saturating_sub(n))
            });
    }
}

/// Why a fragment was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rejected {
    /// sampleSize 0, fragmentSize 0, sampleSize above `max_sample_size`, or
    /// too many fragments.
    #[error("sample or fragment size out of bounds")]
    BadSize,
    /// sampleSize or fragmentSize differs from the sample's first fragment.
    #[error("sizes inconsistent with the sample under reassembly")]
    Inconsistent,
    /// Offset not on a fragment boundary, beyond the sample, or a short
    /// non-final fragment.
    #[error("fragment offset or length invalid")]
    BadFragment,
    /// The per-writer or per-participant byte budget is exhausted.
    #[error("reassembly budget exhausted")]
    OverBudget,
    /// Too many incomplete samples, and this one is not worth keeping.
    #[error("too many incomplete samples")]
    TooManySamples,
}

/// One received DATA_FRAG (its fragment fields), as the reassembler sees it.
#[derive(Debug, Clone, Copy)]
pub struct FragmentRef<'a> {
    /// Writer sequence number of the sample.
    pub sn: i64,
    /// Byte offset of `data` in the sample (`(fragmentStartingNum - 1) * fragmentSize`).
    pub offset: u64,
    /// One or more consecutive fragments.
    pub data: &'a [u8],
    /// sampleSize.
    pub sample_size: u32,
    /// fragmentSize.
    pub fragment_size: u16,
    /// Kind and key hash from the inline QoS, when this submessage had one.
    pub meta: Option<(ChangeKind, Option<[u8; 16]>)>,
    /// From INFO_TS, if any.
    pub source_timestamp: Option<Time>,
}

/// A completed sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completed {
    /// Its sequence number.
    pub sn: i64,
    /// Kind (from the fragment that carried inline QoS; alive otherwise).
    pub kind: ChangeKind,
    /// Key hash from inline QoS, if any.
    pub key_hash: Option<[u8; 16]>,
    /// Source timestamp, if any fragment had one.
    pub source_timestamp: Option<Time>,
    /// The whole serialized payload.
    pub payload: Vec<u8>,
}

/// A sample under reassembly.
#[derive(Debug)]
struct Partial {
    sample_size: u32,
    fragment_size: u16,
    /// Fragments per chunk.
    chunk_frags: u32,
    chunks: Vec<Option<Vec<u8>>>,
    have: Vec<u64>,
    total: u32,
    missing: u32,
    /// Bytes charged for this sample.
    charged: usize,
    started: Timestamp,
    kind: ChangeKind,
    key_hash: Option<[u8; 16]>,
    source_timestamp: Option<Time>,
}

impl Partial {
    fn chunk_len(&self, c: usize) -> usize {
        let cb = self.chunk_frags as usize * usize::from(self.fragment_size);
        let start = c * cb;
        cb.min((self.sample_size as usize).saturating_sub(start))
    }

    fn has(&self, f: u32) -> bool {
        self.have
            .get((f / 64) as usize)
            .is_some_and(|w| w & (1 << (f % 64)) != 0)
    }

    /// First missing fragment (0-based), if any.
    fn first_missing(&self) -> Option<u32> {
        for (i, w) in self.have.iter().enumerate() {
            if *w != u64::MAX {
                let f = i as u32 * 64 + (!*w).trailing_zeros();
                return (f < self.total).then_some(f);
            }
        }
        None
    }
}

/// Per-writer reassembly state: incomplete samples by sequence number.
#[derive(Debug)]
pub struct Reassembler {
    partial: BTreeMap<i64, Partial>,
    bytes: usize,
    budget: ReassemblyBudget,
    limits: ReassemblyLimits,
}

impl Drop for Reassembler {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

impl Reassembler {
    /// An empty reassembler charging `budget`.
    #[must_use]
    pub fn new(limits: ReassemblyLimits, budget: ReassemblyBudget) -> Self {
        Self {
            partial: BTreeMap::new(),
            bytes: 0,
            budget,
            limits,
        }
    }

    /// Bytes charged by this reassembler.
    #[must_use]
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Number of incomplete samples.
    #[must_use]
    pub fn len(&self) -> usize {
        self.partial.len()
    }

    /// True if nothing is under reassembly.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.partial.is_empty()
    }

    /// Whether `sn` is under reassembly.
    #[must_use]
    pub fn contains(&self, sn: i64) -> bool {
        self.partial.contains_key(&sn)
    }

    /// Sequence numbers under reassembly, ascending.
    pub fn sns(&self) -> impl Iterator<Item = i64> + '_ {
        self.partial.keys().copied()
    }

    fn remove(&mut self, sn: i64) -> Option<Partial> {
        let p = self.partial.remove(&sn)?;
        self.bytes -= p.charged;
        self.budget.release(p.charged);
        Some(p)
    }

    fn charge(&mut self, n: usize) -> bool {
        if self.bytes.saturating_add(n) > self.limits.max_bytes_per_writer {
            return false;
        }
        if !self.budget.try_charge(n, self.limits.max_bytes_total) {
            return false;
        }
        self.bytes += n;
        true
    }

    /// Charges `n` bytes for sample `sn`; when over budget, a reliable
    /// reader first drops incomplete samples with higher SNs, newest first
    /// (it needs `sn` sooner, and what it drops is simply repaired later),
    /// so that a window of large samples cannot lock the budget up with
    /// parts of samples that all wait for the same repairs.
    fn charge_evicting(&mut self, n: usize, sn: i64, reliable: bool) -> bool {
        loop {
            if self.charge(n) {
                return true;
            }
            if !reliable {
                return false;
            }
            match self.partial.last_key_value() {
                Some((&k, _)) if k > sn => {
                    self.remove(k);
                }
                _ => return false,
            }
        }
    }

    /// Drops every incomplete sample with SN below `sn`.
    pub fn drop_below(&mut self, sn: i64) -> usize {
        let mut n = 0;
        while let Some((&k, _)) = self.partial.first_key_value() {
            if k >= sn {
                break;
            }
            self.remove(k);
            n += 1;
        }
        n
    }

    /// Drops incomplete samples started before `deadline`.
    pub fn drop_started_before(&mut self, deadline: Timestamp) -> usize {
        let old: Vec<i64> = self
            .partial
            .iter()
            .filter(|(_, p)| p.started < deadline)
            .map(|(k, _)| *k)
            .collect();
        for k in &old {
            self.remove(*k);
        }
        old.len()
    }

    /// Drops everything.
    pub fn clear(&mut self) {
        let all: Vec<i64> = self.partial.keys().copied().collect();
        for k in all {
            self.remove(k);
        }
    }

    /// Earliest start time of an incomplete sample.
    #[must_use]
    pub fn oldest_start(&self) -> Option<Timestamp> {
        self.partial.values().map(|p| p.started).min()
    }

    /// The missing fragments (1-based) of `sn` among the first `upto`
    /// fragments, at most 256 starting at the first missing one: what a
    /// NACK_FRAG asks for. `None` if `sn` is not under reassembly or nothing
    /// in range is missing.
    #[must_use]
    pub fn missing(&self, sn: i64, upto: u32) -> Option<(u32, [u32; 8], u32)> {
        let p = self.partial.get(&sn)?;
        let first = p.first_missing()?;
        let end = p.total.min(upto);
        if first >= end {
            return None;
        }
        let mut bits = [0u32; 8];
        let mut num_bits = 0;
        for d in 0..256u32 {
            let f = first + d;
            if f >= end {
                break;
            }
            if !p.has(f) {
                bits[(d / 32) as usize] |= 1 << (31 - d % 32);
                num_bits = d + 1;
            }
        }
        Some((first + 1, bits, num_bits))
    }

    /// Number of fragments of `sn`, if it is under reassembly.
    #[must_use]
    pub fn fragment_count(&self, sn: i64) -> Option<u32> {
        self.partial.get(&sn).map(|p| p.total)
    }

    /// Adds a DATA_FRAG (one or more fragments). `reliable` selects the
    /// eviction policy when `max_samples_per_writer` is reached (best effort:
    /// drop the oldest; reliable: keep the oldest, drop the newest). Returns
    /// the whole sample once its last missing fragment arrived.
    pub fn add(
        &mut self,
        f: &FragmentRef<'_>,
        reliable: bool,
        now: Timestamp,
    ) -> Result<Option<Completed>, Rejected> {
        self.add_reusing(f, reliable, now, &mut ReassemblySpares::default())
    }

    /// [`add`](Self::add) with the chunks taken from `spares` and the completed
    /// sample's payload built in `spares.payload` (if any; taken whatever its
    /// capacity); the completed sample's chunks go back to `spares`.
    pub fn add_reusing(
        &mut self,
        f: &FragmentRef<'_>,
        reliable: bool,
        now: Timestamp,
        spares: &mut ReassemblySpares,
    ) -> Result<Option<Completed>, Rejected> {
        let fs = u32::from(f.fragment_size);
        if f.sample_size == 0 || fs == 0 || f.sample_size > self.limits.max_sample_size {
            return Err(Rejected::BadSize);
        }
        let total = f.sample_size.div_ceil(fs);
        if total > MAX_FRAGMENTS {
            return Err(Rejected::BadSize);
        }
        if !f.offset.is_multiple_of(u64::from(fs)) || f.offset >= u64::from(f.sample_size) {
            return Err(Rejected::BadFragment);
        }
        if let Some(p) = self.partial.get(&f.sn) {
            if p.sample_size != f.sample_size || p.fragment_size != f.fragment_size {
                return Err(Rejected::Inconsistent);
            }
        } else {
            self.start(f, total, reliable, now)?;
        }
        let first = (f.offset / u64::from(fs)) as u32;
        let mut rest = f.data;
        let mut idx = first;
        let mut result = Ok(());
        while !rest.is_empty() && idx < total {
            let (missing, chunk_index, chunk_missing, within, n) = {
                let Some(p) = self.partial.get(&f.sn) else {
                    break;
                };
                let start = idx as usize * fs as usize;
                let n = (fs as usize).min(p.sample_size as usize - start);
                if rest.len() < n {
                    result = Err(Rejected::BadFragment);
                    break;
                }
                let c = (idx / p.chunk_frags) as usize;
                let cb = p.chunk_frags as usize * fs as usize;
                (
                    !p.has(idx),
                    c,
                    p.chunks.get(c).is_some_and(Option::is_none),
                    start - c * cb,
                    n,
                )
            };
            if missing {
                if chunk_missing {
                    let len = self
                        .partial
                        .get(&f.sn)
                        .map_or(0, |p| p.chunk_len(chunk_index));
                    if !self.charge_evicting(len, f.sn, reliable) {
                        result = Err(Rejected::OverBudget);
                        break;
                    }
                    if let Some(p) = self.partial.get_mut(&f.sn) {
                        p.charged += len;
                        p.chunks[chunk_index] = Some(spares.chunk(len));
                    }
                }
                if let Some(p) = self.partial.get_mut(&f.sn) {
                    if let Some(Some(chunk)) = p.chunks.get_mut(chunk_index) {
                        if let Some(dst) = chunk.get_mut(within..within + n) {
                            dst.copy_from_slice(&rest[..n]);
                            p.have[(idx / 64) as usize] |= 1 << (idx % 64);
                            p.missing -= 1;
                        }
                    }
                }
            }
            rest = &rest[n..];
            idx += 1;
        }
        if let Some(p) = self.partial.get_mut(&f.sn) {
            if let Some((kind, key_hash)) = f.meta {
                p.kind = kind;
                p.key_hash = key_hash;
            }
            if f.source_timestamp.is_some() {
                p.source_timestamp = f.source_timestamp;
            }
        }
        let complete = self.partial.get(&f.sn).is_some_and(|p| p.missing == 0);
        if !complete {
            return result.map(|()| None);
        }
        let Some(p) = self.remove(f.sn) else {
            return Ok(None);
        };
        if !reliable {
            // Best effort: older incomplete samples are now obsolete.
            self.drop_below(f.sn);
        }
        let mut payload = spares.payload.take().unwrap_or_default();
        payload.clear();
        payload.reserve_exact(p.sample_size as usize);
        for c in p.chunks.into_iter().flatten() {
            payload.extend_from_slice(&c);
            spares.keep_chunk(c);
        }
        Ok(Some(Completed {
            sn: f.sn,
            kind: p.kind,
            key_hash: p.key_hash,
            source_timestamp: p.source_timestamp,
            payload,
        }))
    }

    /// Registers a new incomplete sample (charging its index and bitmap).
    fn start(
        &mut self,
        f: &FragmentRef<'_>,
        total: u32,
        reliable: bool,
        now: Timestamp,
    ) -> Result<(), Rejected> {
        if !reliable {
            if self
                .partial
                .last_key_value()
                .is_some_and(|(k, _)| *k > f.sn)
            {
                // A newer sample is already under way: this one is late.
                return Err(Rejected::TooManySamples);
            }
            let limit = self.limits.best_effort_timeout;
            let deadline = Timestamp(now.0.saturating_sub(limit.as_nanos() as u64));
            if now.0 > deadline.0 {
                self.drop_started_before(deadline);
            }
        }
        while self.partial.len() >= self.limits.max_samples_per_writer.max(1) {
            let victim = if reliable {
                match self.partial.last_key_value() {
                    Some((k, _)) if *k > f.sn => *k,
                    _ => return Err(Rejected::TooManySamples),
                }
            } else {
                match self.partial.first_key_value() {
                    Some((k, _)) => *k,
                    None => break,
                }
            };
            self.remove(victim);
        }
        let fs = u32::from(f.fragment_size);
        let chunk_frags = (CHUNK_BYTES as u32 / fs).max(1);
        let nchunks = total.div_ceil(chunk_frags) as usize;
        let words = total.div_ceil(64) as usize;
        let overhead = nchunks * size_of::<Option<Vec<u8>>>() + words * 8;
        if f.sample_size as usize > self.limits.max_bytes_per_writer {
            return Err(Rejected::OverBudget);
        }
        if !self.charge(overhead) {
            // Make room by dropping other incomplete samples of this writer
            // (best effort: the older ones; reliable: the newer ones).
            loop {
                let victim = if reliable {
                    self.partial.last_key_value().map(|(k, _)| *k)
                } else {
                    self.partial.first_key_value().map(|(k, _)| *k)
                };
                match victim {
                    Some(k) => {
                        self.remove(k);
                    }
                    None => return Err(Rejected::OverBudget),
                }
                if self.charge(overhead) {
                    break;
                }
            }
        }
        self.partial.insert(
            f.sn,
            Partial {
                sample_size: f.sample_size,
                fragment_size: f.fragment_size,
                chunk_frags,
                chunks: (0..nchunks).map(|_| None).collect(),
                have: vec![0; words],
                total,
                missing: total,
                charged: overhead,
                started: now,
                kind: ChangeKind::Alive,
                key_hash: None,
                source_timestamp: None,
            },
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frag(sn: i64, offset: u64, data: &[u8], size: u32, fs: u16) -> FragmentRef<'_> {
        FragmentRef {
            sn,
            offset,
            data,
            sample_size: size,
            fragment_size: fs,
            meta: None,
            source_timestamp: None,
        }
    }

    fn r() -> Reassembler {
        Reassembler::new(ReassemblyLimits::default(), ReassemblyBudget::new())
    }

    const T: Timestamp = Timestamp(1);

    /// Adds `sample` as fragments of `fs` bytes (in reverse order) through `spares`.
    fn reassemble(
        r: &mut Reassembler,
        spares: &mut ReassemblySpares,
        sn: i64,
        sample: &[u8],
        fs: u16,
    ) -> Completed {
        let size = sample.len() as u32;
        let n = sample.len().div_ceil(usize::from(fs));
        let mut done = None;
        for k in (0..n).rev() {
            let start = k * usize::from(fs);
            let end = (start + usize::from(fs)).min(sample.len());
            let f = frag(sn, start as u64, &sample[start..end], size, fs);
            if let Some(c) = r.add_reusing(&f, true, T, spares).unwrap() {
                done = Some(c);
            }
        }
        done.expect("complete")
    }

    #[test]
    fn spares_are_reused_and_bytes_stay_intact() {
        let mut r = r();
        let mut spares = ReassemblySpares::default();
        // 1 MiB + 3 in 60,000-byte fragments: 18 chunks of one fragment each.
        let a: Vec<u8> = (0..(1 << 20) + 3).map(|i| (i * 7 % 251) as u8).collect();
        let c = reassemble(&mut r, &mut spares, 1, &a, 60_000);
        assert_eq!(c.payload, a);
        let (n, bytes) = spares.chunks();
        assert_eq!(n, 18, "every chunk of the completed sample is kept");
        assert!(bytes <= SPARE_CHUNK_BYTES);
        // The payload buffer given back is filled by the next sample, whose chunks
        // are the kept ones (their old bytes overwritten: a different, shorter
        // sample comes out exactly).
        let addr = c.payload.as_ptr();
        spares.payload = Some(c.payload);
        let b: Vec<u8> = (0..1_000_000).map(|i| (i * 13 % 241) as u8).collect();
        let c = reassemble(&mut r, &mut spares, 2, &b, 60_000);
        assert_eq!(c.payload, b);
        assert_eq!(c.payload.as_ptr(), addr, "built in the buffer given back");
        assert_eq!(spares.chunks().0, 18);
        assert_eq!(r.bytes(), 0);
        // The kept chunks are bounded in bytes.
        let big = vec![5u8; 6 << 20];
        let c = reassemble(&mut r, &mut spares, 3, &big, 60_000);
        assert_eq!(c.payload, big);
        assert!(spares.chunks().1 <= SPARE_CHUNK_BYTES);
        assert!(spares.chunks().0 < big.len() / 60_000);
    }

    #[test]
    fn reassembles_out_of_order_with_short_last_fragment() {
        let sample: Vec<u8> = (0..2500u32).map(|i| i as u8).collect();
        let mut p = r();
        assert_eq!(
            p.add(&frag(1, 2000, &sample[2000..], 2500, 1000), true, T),
            Ok(None)
        );
        assert_eq!(
            p.add(&frag(1, 0, &sample[..1000], 2500, 1000), true, T),
            Ok(None)
        );
        assert_eq!(
            p.add(&frag(1, 0, &sample[..1000], 2500, 1000), true, T),
            Ok(None),
            "duplicate changes nothing"
        );
        assert_eq!(p.missing(1, u32::MAX).map(|m| (m.0, m.2)), Some((2, 1)));
        let c = p
            .add(&frag(1, 1000, &sample[1000..2000], 2500, 1000), true, T)
            .unwrap()
            .unwrap();
        assert_eq!(c.payload, sample);
        assert_eq!(p.bytes(), 0);
        assert!(p.is_empty());
    }

    #[test]
    fn several_fragments_in_one_submessage_and_padding() {
        let mut sample = vec![7u8; 3000];
        sample.extend_from_slice(&[0, 0]); // trailing submessage padding
        let mut p = r();
        let c = p.add(&frag(1, 0, &sample, 3000, 1000), false, T).unwrap();
        assert_eq!(c.unwrap().payload.len(), 3000);
    }

    #[test]
    fn bounds_and_inconsistency() {
        let mut p = r();
        assert_eq!(
            p.add(&frag(1, 0, &[0; 10], 0, 10), true, T),
            Err(Rejected::BadSize)
        );
        assert_eq!(
            p.add(&frag(1, 0, &[0; 10], (16 << 20) + 1, 1000), true, T),
            Err(Rejected::BadSize)
        );
        assert_eq!(
            p.add(&frag(1, 0, &[0; 1], 16 << 20, 1), true, T),
            Err(Rejected::BadSize),
            "too many fragments"
        );
        assert_eq!(
            p.add(&frag(1, 5, &[0; 10], 100, 10), true, T),
            Err(Rejected::BadFragment)
        );
        assert_eq!(
            p.add(&frag(1, 200, &[0; 10], 100, 10), true, T),
            Err(Rejected::BadFragment)
        );
        assert_eq!(
            p.add(&frag(1, 80, &[0; 5], 100, 10), true, T),
            Err(Rejected::BadFragment)
        );
        assert_eq!(p.add(&frag(1, 0, &[0; 10], 100, 10), true, T), Ok(None));
        assert_eq!(
            p.add(&frag(1, 20, &[0; 20], 100, 20), true, T),
            Err(Rejected::Inconsistent)
        );
        assert_eq!(
            p.add(&frag(1, 10, &[0; 10], 200, 10), true, T),
            Err(Rejected::Inconsistent)
        );
    }

    #[test]
    fn memory_is_charged_lazily_and_released() {
        let budget = ReassemblyBudget::new();
        let limits = ReassemblyLimits {
            max_bytes_per_writer: 1 << 20,
            max_bytes_total: 3 << 19,
            ..ReassemblyLimits::default()
        };
        let mut a = Reassembler::new(limits, budget.clone());
        let mut b = Reassembler::new(limits, budget.clone());
        // A 16 MiB sample announced: only the index and bitmap are charged.
        assert_eq!(
            a.add(&frag(1, 0, &[1; 1000], 16 << 20, 1000), true, T),
            Err(Rejected::OverBudget)
        );
        assert!(a.is_empty());
        // 1 MiB samples fit one per writer; the fragment's chunk is charged.
        assert_eq!(
            a.add(&frag(1, 0, &[1; 1000], 1 << 20, 1000), true, T),
            Ok(None)
        );
        let one = a.bytes();
        assert!(one > 60_000 && one < 70_000, "{one}");
        assert_eq!(budget.used(), one);
        // Fill writer a to its cap: further chunks are refused.
        let mut refused = 0;
        for k in 0..1100u64 {
            if a.add(&frag(1, k * 1000, &[1; 1000], 1 << 20, 1000), true, T)
                == Err(Rejected::OverBudget)
            {
                refused += 1;
            }
        }
        assert!(a.bytes() <= 1 << 20);
        assert!(refused > 0);
        // The participant total caps b.
        for k in 0..1100u64 {
            let _ = b.add(&frag(1, k * 1000, &[1; 1000], 1 << 20, 1000), true, T);
        }
        assert!(budget.used() <= 3 << 19, "{}", budget.used());
        drop(a);
        assert_eq!(budget.used(), b.bytes());
        b.clear();
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn best_effort_drops_old_and_stale_samples() {
        let mut p = r();
        assert_eq!(p.add(&frag(1, 0, &[1; 10], 30, 10), false, T), Ok(None));
        assert_eq!(p.add(&frag(2, 0, &[1; 10], 30, 10), false, T), Ok(None));
        // A late fragment of an older, not yet seen sample is refused.
        assert_eq!(
            p.add(&frag(0, 0, &[1; 10], 30, 10), false, T),
            Err(Rejected::TooManySamples)
        );
        assert!(p
            .add(&frag(3, 0, &[1; 30], 30, 10), false, T)
            .unwrap()
            .is_some());
        assert!(p.is_empty(), "older incomplete samples dropped");
        assert_eq!(p.add(&frag(4, 0, &[1; 10], 30, 10), false, T), Ok(None));
        let later = T.saturating_add(core::time::Duration::from_secs(2));
        assert_eq!(p.add(&frag(5, 0, &[1; 10], 30, 10), false, later), Ok(None));
        assert!(!p.contains(4), "timed out");
        // Count limit: best effort drops the oldest.
        let max = ReassemblyLimits::default().max_samples_per_writer as i64;
        for sn in 6..max + 30 {
            let _ = p.add(&frag(sn, 0, &[1; 10], 30, 10), false, later);
        }
        assert_eq!(p.len() as i64, max);
        assert!(p.contains(max + 29));
        // Reliable keeps the oldest.
        let mut q = r();
        for sn in 1..max + 30 {
            let _ = q.add(&frag(sn, 0, &[1; 10], 30, 10), true, T);
        }
        assert!(q.contains(1) && !q.contains(max + 29));
    }

    #[test]
    fn missing_reports_at_most_256_from_the_first_gap() {
        let mut p = r();
        let data = vec![0u8; 100];
        for f in (0..600u64).filter(|f| f % 3 != 1) {
            let _ = p.add(&frag(1, f * 100, &data, 60_000, 100), true, T);
        }
        let (base, bits, n) = p.missing(1, u32::MAX).unwrap();
        assert_eq!(base, 2);
        assert!(n <= 256);
        assert_eq!(bits[0] >> 31, 1);
        assert_eq!(bits[0] & 0x7000_0000, 0x1000_0000, "{:x}", bits[0]);
        assert!(p.missing(1, 1).is_none(), "first fragment present");
        assert!(p.missing(9, u32::MAX).is_none());
    }
}
