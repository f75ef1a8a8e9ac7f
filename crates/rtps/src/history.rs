//! Writer history cache: changes in SN order in a `VecDeque` (binary search by
//! SN, removed changes left as tombstones and compacted in amortised O(1)),
//! a per-instance index (key hash -> live SNs) so KEEP_LAST replacement is
//! O(1) per write whatever the number of instances, and a small pool of
//! recycled payload buffers (plus one large buffer, so that a writer of samples
//! above 64 KiB does not allocate, and fault in, a fresh buffer per write).

use std::collections::VecDeque;

use crate::api::SharedPayload;
use crate::instance::{InstanceMap, InstanceState};
use crate::types::ChangeKind;
use crate::Time;

/// Most recycled payload buffers kept (a batching writer's history holds
/// thousands of small samples: recycling only a few made every write allocate).
const POOL_MAX: usize = 16_384;
/// Most bytes of capacity kept in recycled payload buffers.
const POOL_MAX_BYTES: usize = 4 << 20;
/// Largest buffer kept in the pool; a larger one may be kept as the single large buffer.
const POOL_BUFFER_MAX: usize = 1 << 16;
/// Most released shared payloads kept for the runtime to reclaim.
const RELEASED_MAX: usize = 256;
/// Largest capacity of the single large buffer kept (the default largest sample
/// reassembled).
const LARGE_MAX_BYTES: usize = 16 << 20;

/// The serialized payload of a change in a writer's history: its own buffer, or a chunk
/// of shared memory ([`SharedPayload`]) that shared-memory readers copy from themselves.
#[derive(Debug)]
pub(crate) enum ChangePayload {
    Owned(Vec<u8>),
    Shared(Box<dyn SharedPayload>),
}

impl Default for ChangePayload {
    fn default() -> Self {
        Self::Owned(Vec::new())
    }
}

impl core::ops::Deref for ChangePayload {
    type Target = [u8];
    #[inline(always)]
    fn deref(&self) -> &[u8] {
        match self {
            Self::Owned(v) => v,
            Self::Shared(s) => s.bytes(),
        }
    }
}

impl PartialEq for ChangePayload {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for ChangePayload {}

impl PartialEq<Vec<u8>> for ChangePayload {
    fn eq(&self, other: &Vec<u8>) -> bool {
        **self == **other
    }
}

impl ChangePayload {
    /// The reference a shared-memory reader resolves, for a shared payload.
    #[inline]
    pub(crate) fn reference(&self) -> Option<&[u8]> {
        match self {
            Self::Owned(_) => None,
            Self::Shared(s) => Some(s.reference()),
        }
    }
}

/// One change in a writer's history.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct CacheChange {
    pub(crate) sn: i64,
    pub(crate) kind: ChangeKind,
    pub(crate) key_hash: Option<[u8; 16]>,
    pub(crate) source_timestamp: Option<Time>,
    pub(crate) payload: ChangePayload,
    /// Tombstone: removed from the history, kept until compaction.
    pub(crate) removed: bool,
    /// Payload bytes of every change pushed into the history before this one
    /// (set by [`HistoryCache::push`]): the bytes between two changes are a
    /// subtraction, not a walk ([`HistoryCache::bytes_between`]).
    pub(crate) offset: u64,
}

/// Per-instance index entry of a writer.
#[derive(Debug, Default)]
pub(crate) struct WriterInstance {
    /// Live SNs of the instance, ascending.
    sns: VecDeque<i64>,
    pub(crate) state: InstanceState,
}

/// SN-ordered history with a per-instance index.
#[derive(Debug, Default)]
pub(crate) struct HistoryCache {
    changes: VecDeque<CacheChange>,
    live: usize,
    instances: InstanceMap<WriterInstance>,
    pool: Vec<Vec<u8>>,
    /// Capacity of the buffers in `pool`, in bytes.
    pool_bytes: usize,
    /// One recycled buffer above [`POOL_BUFFER_MAX`] (the largest seen, at most
    /// [`LARGE_MAX_BYTES`]), for payloads above `POOL_BUFFER_MAX`.
    large: Option<Vec<u8>>,
    /// Shared payloads released by removed changes, for
    /// [`HistoryCache::take_released`].
    released: Vec<Box<dyn SharedPayload>>,
    /// Payload bytes of every change ever pushed (the next change's offset).
    pushed_bytes: u64,
}

impl HistoryCache {
    /// Live changes.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    pub(crate) fn first_sn(&self) -> Option<i64> {
        self.changes.front().map(|c| c.sn)
    }

    pub(crate) fn get(&self, sn: i64) -> Option<&CacheChange> {
        // SNs are ascending and usually contiguous (tombstones keep their place):
        // try the direct index before searching.
        let first = self.changes.front()?.sn;
        let direct = usize::try_from(sn.checked_sub(first)?).ok()?;
        let i = match self.changes.get(direct) {
            Some(c) if c.sn == sn => direct,
            _ => self.changes.binary_search_by_key(&sn, |c| c.sn).ok()?,
        };
        self.changes.get(i).filter(|c| !c.removed)
    }

    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &CacheChange> {
        self.changes.iter().filter(|c| !c.removed)
    }

    /// Number of instances known (registered or with changes).
    pub(crate) fn instance_total(&self) -> usize {
        self.instances.len()
    }

    /// The instance entry of `key`, if known.
    pub(crate) fn instance(&self, key: Option<&[u8; 16]>) -> Option<&WriterInstance> {
        self.instances.get(key)
    }

    /// Registers `key` (no change written); true if it was not registered: new, or
    /// unregistered earlier (it becomes `Alive` again, so it is not forgotten when its
    /// unregistration leaves the history).
    pub(crate) fn register(&mut self, key: Option<[u8; 16]>) -> bool {
        let mut new = false;
        let inst = self.instances.get_or_insert_with(key, || {
            new = true;
            WriterInstance::default()
        });
        if inst.state.is_unregistered() {
            inst.state = InstanceState::Alive;
            new = true;
        }
        new
    }

    /// A payload buffer holding `data`, reusing a recycled one when possible.
    #[inline]
    pub(crate) fn make_payload(&mut self, data: &[u8]) -> Vec<u8> {
        if data.len() > POOL_BUFFER_MAX {
            return self.make_large_payload(data);
        }
        let mut v = match self.pool.pop() {
            Some(v) => {
                self.pool_bytes -= v.capacity();
                v
            }
            None => Vec::new(),
        };
        v.clear();
        v.extend_from_slice(data);
        v
    }

    /// The buffer `buf` as a payload, without copying it: `buf` gets a recycled buffer
    /// (cleared) in exchange, of `buf`'s class (above [`POOL_BUFFER_MAX`] of capacity: the
    /// large buffer; else one of the pool), or an empty one. A buffer much larger than its
    /// contents (a scratch buffer that once held a larger sample) stays with the caller,
    /// as it was, and the history keeps a copy ([`make_payload`](Self::make_payload)), so
    /// that a deep history does not hold capacity its payloads do not use.
    #[inline]
    pub(crate) fn take_payload(&mut self, buf: &mut Vec<u8>) -> Vec<u8> {
        if buf.capacity() > 2 * buf.len() + 64 {
            return self.make_payload(buf);
        }
        let spare = if buf.capacity() > POOL_BUFFER_MAX {
            self.large.take()
        } else {
            self.pool.pop().inspect(|v| self.pool_bytes -= v.capacity())
        };
        let mut spare = spare.unwrap_or_default();
        spare.clear();
        std::mem::replace(buf, spare)
    }

    /// [`make_payload`](Self::make_payload) above [`POOL_BUFFER_MAX`]: in the large
    /// buffer when one is kept (out of line: the small-sample path stays as short).
    #[inline(never)]
    fn make_large_payload(&mut self, data: &[u8]) -> Vec<u8> {
        let mut v = self.large.take().unwrap_or_default();
        v.clear();
        v.extend_from_slice(data);
        v
    }

    /// Index in `changes` of the first change whose SN is `sn` or above
    /// (`changes.len()` if none): the direct index when SNs are contiguous.
    fn index_from(&self, sn: i64) -> usize {
        let Some(first) = self.changes.front().map(|c| c.sn) else {
            return 0;
        };
        let Some(direct) = sn.checked_sub(first).and_then(|d| usize::try_from(d).ok()) else {
            return 0;
        };
        match self.changes.get(direct) {
            Some(c) if c.sn == sn => direct,
            _ => self.changes.partition_point(|c| c.sn < sn),
        }
    }

    /// Payload bytes of the changes with SN above `after` and below `before`,
    /// in O(1) for contiguous SNs (O(log n) otherwise). Changes removed from
    /// the middle of the history since they were pushed (KEEP_LAST
    /// replacements) still count.
    pub(crate) fn bytes_between(&self, after: i64, before: i64) -> u64 {
        let offset = |i: usize| self.changes.get(i).map_or(self.pushed_bytes, |c| c.offset);
        let end = offset(self.index_from(before));
        let start = offset(self.index_from(after.saturating_add(1)));
        end.saturating_sub(start)
    }

    /// Moves the shared payloads released since the last call into `out`.
    pub(crate) fn take_released(&mut self, out: &mut Vec<Box<dyn SharedPayload>>) {
        out.append(&mut self.released);
    }

    /// Appends a change; its SN must be above every SN present.
    pub(crate) fn push(&mut self, mut c: CacheChange) {
        debug_assert!(self.changes.back().is_none_or(|b| b.sn < c.sn));
        c.offset = self.pushed_bytes;
        self.pushed_bytes += c.payload.len() as u64;
        let inst = self
            .instances
            .get_or_insert_with(c.key_hash, WriterInstance::default);
        inst.sns.push_back(c.sn);
        inst.state = InstanceState::from_kind(c.kind);
        self.changes.push_back(c);
        self.live += 1;
    }

    #[inline]
    fn recycle(
        pool: &mut Vec<Vec<u8>>,
        pool_bytes: &mut usize,
        large: &mut Option<Vec<u8>>,
        released: &mut Vec<Box<dyn SharedPayload>>,
        payload: ChangePayload,
    ) {
        let payload = match payload {
            ChangePayload::Owned(p) => p,
            ChangePayload::Shared(s) => return Self::release(released, s),
        };
        let cap = payload.capacity();
        if cap > POOL_BUFFER_MAX {
            Self::keep_large(large, payload);
        } else if cap > 0 && pool.len() < POOL_MAX && *pool_bytes + cap <= POOL_MAX_BYTES {
            *pool_bytes += cap;
            pool.push(payload);
        }
    }

    /// Gives a shared payload's memory back to its owner now; the value waits to be reused.
    #[cold]
    #[inline(never)]
    fn release(released: &mut Vec<Box<dyn SharedPayload>>, mut s: Box<dyn SharedPayload>) {
        s.release();
        if released.len() < RELEASED_MAX {
            released.push(s);
        }
    }

    /// Keeps `payload` (above [`POOL_BUFFER_MAX`]) as the large buffer if it is within
    /// [`LARGE_MAX_BYTES`] and larger than the one kept.
    #[inline(never)]
    fn keep_large(large: &mut Option<Vec<u8>>, payload: Vec<u8>) {
        let cap = payload.capacity();
        if cap <= LARGE_MAX_BYTES && large.as_ref().is_none_or(|l| l.capacity() < cap) {
            *large = Some(payload);
        }
    }

    /// Forgets the instance of a removed change if it has no live change left
    /// and was unregistered.
    fn unindex(&mut self, key: Option<[u8; 16]>, sn: i64) {
        if let Some(inst) = self.instances.get_mut(key.as_ref()) {
            if inst.sns.front() == Some(&sn) {
                inst.sns.pop_front();
            } else if let Some(i) = inst.sns.iter().position(|s| *s == sn) {
                inst.sns.remove(i);
            }
            if inst.sns.is_empty() && inst.state.is_unregistered() {
                self.instances.remove(key.as_ref());
            }
        }
    }

    /// Drops tombstones at the front, and compacts when they dominate.
    fn tidy(&mut self) {
        while self.changes.front().is_some_and(|c| c.removed) {
            self.changes.pop_front();
        }
        if self.changes.len() > 2 * self.live + 64 {
            self.changes.retain(|c| !c.removed);
        }
    }

    /// Removes every change with SN <= `sn`; returns how many.
    pub(crate) fn remove_up_to(&mut self, sn: i64) -> usize {
        let mut n = 0;
        while self.changes.front().is_some_and(|c| c.sn <= sn) {
            if let Some(c) = self.changes.pop_front() {
                if !c.removed {
                    self.live -= 1;
                    self.unindex(c.key_hash, c.sn);
                    Self::recycle(
                        &mut self.pool,
                        &mut self.pool_bytes,
                        &mut self.large,
                        &mut self.released,
                        c.payload,
                    );
                    n += 1;
                }
            }
        }
        self.tidy();
        n
    }

    /// Removes the oldest change.
    pub(crate) fn remove_oldest(&mut self) -> Option<i64> {
        self.tidy();
        let c = self.changes.pop_front()?;
        self.live -= 1;
        let sn = c.sn;
        self.unindex(c.key_hash, sn);
        Self::recycle(
            &mut self.pool,
            &mut self.pool_bytes,
            &mut self.large,
            &mut self.released,
            c.payload,
        );
        self.tidy();
        Some(sn)
    }

    /// Number of live changes of the instance `key` (`None` = the single
    /// instance of an unkeyed writer, matching changes without key hash).
    pub(crate) fn instance_count(&self, key: Option<&[u8; 16]>) -> usize {
        self.instances.get(key).map_or(0, |i| i.sns.len())
    }

    /// Removes the oldest change of instance `key`; returns its SN and
    /// payload length.
    pub(crate) fn remove_oldest_of(&mut self, key: Option<&[u8; 16]>) -> Option<(i64, usize)> {
        let sn = *self.instances.get(key)?.sns.front()?;
        let i = self.changes.binary_search_by_key(&sn, |c| c.sn).ok()?;
        let c = self.changes.get_mut(i)?;
        c.removed = true;
        let len = c.payload.len();
        let payload = core::mem::take(&mut c.payload);
        Self::recycle(
            &mut self.pool,
            &mut self.pool_bytes,
            &mut self.large,
            &mut self.released,
            payload,
        );
        self.live -= 1;
        self.unindex(key.copied(), sn);
        self.tidy();
        Some((sn, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ch(sn: i64, key: u8) -> CacheChange {
        CacheChange {
            sn,
            kind: ChangeKind::Alive,
            key_hash: Some([key; 16]),
            source_timestamp: None,
            payload: ChangePayload::Owned(vec![sn as u8]),
            removed: false,
            offset: 0,
        }
    }

    #[test]
    fn ordered_lookup_and_removal() {
        let mut h = HistoryCache::default();
        for sn in 1..=10 {
            h.push(ch(sn, (sn % 3) as u8));
        }
        assert_eq!(h.len(), 10);
        assert_eq!(h.get(7).unwrap().payload, vec![7]);
        assert!(h.get(11).is_none());
        assert_eq!(h.instance_count(Some(&[1; 16])), 4);
        assert_eq!(h.remove_oldest_of(Some(&[1; 16])), Some((1, 1)));
        assert_eq!(h.first_sn(), Some(2));
        assert_eq!(h.remove_up_to(5), 4);
        assert_eq!(h.first_sn(), Some(6));
        assert!(h.get(4).is_none());
        assert_eq!(h.get(6).unwrap().sn, 6);
        assert_eq!(h.remove_oldest(), Some(6));
        assert_eq!(
            h.iter().map(|c| c.sn).collect::<Vec<_>>(),
            vec![7, 8, 9, 10]
        );
        // Middle removal leaves a tombstone: lookups skip it.
        assert_eq!(h.remove_oldest_of(Some(&[2; 16])), Some((8, 1)));
        assert!(h.get(8).is_none());
        assert_eq!(h.len(), 3);
        assert_eq!(h.instance_count(Some(&[2; 16])), 0);
        assert_eq!(h.instance_count(Some(&[1; 16])), 2);
    }

    #[test]
    fn tombstones_are_compacted() {
        let mut h = HistoryCache::default();
        // Instance 0 written once, instance 1 replaced over and over (KEEP_LAST 1).
        h.push(ch(1, 0));
        for sn in 2..10_000 {
            if h.instance_count(Some(&[1; 16])) >= 1 {
                h.remove_oldest_of(Some(&[1; 16]));
            }
            h.push(ch(sn, 1));
        }
        assert_eq!(h.len(), 2);
        assert!(h.changes.len() < 200, "{}", h.changes.len());
        assert_eq!(h.first_sn(), Some(1));
        assert_eq!(h.get(9999).unwrap().sn, 9999);
    }

    #[test]
    fn unregistered_instances_are_forgotten() {
        let mut h = HistoryCache::default();
        assert!(h.register(Some([5; 16])));
        assert!(!h.register(Some([5; 16])));
        assert_eq!(h.instance_total(), 1);
        let mut c = ch(1, 5);
        c.kind = ChangeKind::NotAliveUnregistered;
        h.push(c);
        assert_eq!(
            h.instance(Some(&[5; 16])).unwrap().state,
            InstanceState::NotAliveNoWriters
        );
        h.remove_up_to(1);
        assert_eq!(h.instance_total(), 0);
    }

    #[test]
    fn reregistering_an_unregistered_instance_keeps_it() {
        let mut h = HistoryCache::default();
        let mut c = ch(1, 6);
        c.kind = ChangeKind::NotAliveUnregistered;
        h.push(c);
        assert!(h.register(Some([6; 16])), "unregistered: registering again");
        assert!(!h.register(Some([6; 16])));
        assert_eq!(
            h.instance(Some(&[6; 16])).unwrap().state,
            InstanceState::Alive
        );
        // The unregistration leaving the history no longer forgets it.
        h.remove_up_to(1);
        assert_eq!(h.instance_total(), 1);
        assert_eq!(h.instance_count(Some(&[6; 16])), 0);
    }

    #[test]
    fn lookup_by_sn_with_tombstones_and_gaps() {
        let mut h = HistoryCache::default();
        for sn in 1..=10 {
            h.push(ch(sn, (sn % 3) as u8));
        }
        assert_eq!(h.get(4).map(|c| c.sn), Some(4));
        // A tombstone keeps its place: found directly, reported absent.
        assert_eq!(h.remove_oldest_of(Some(&[1; 16])), Some((1, 1)));
        assert!(h.get(1).is_none());
        assert_eq!(h.get(7).map(|c| c.sn), Some(7));
        // Compaction leaves gaps: the search still finds every live SN.
        h.push(ch(20, 2));
        assert_eq!(h.get(20).map(|c| c.sn), Some(20));
        assert!(h.get(15).is_none());
        assert!(h.get(0).is_none());
        assert!(h.get(-5).is_none());
        assert!(h.get(i64::MAX).is_none());
    }

    #[test]
    fn bytes_between_counts_the_payloads_in_an_sn_range() {
        let mut h = HistoryCache::default();
        // SNs 1..=10 of 100 bytes each, then 20 and 21 (a gap) of 1,000.
        for sn in 1..=10 {
            h.push(CacheChange {
                payload: ChangePayload::Owned(vec![0; 100]),
                ..ch(sn, 1)
            });
        }
        for sn in [20, 21] {
            h.push(CacheChange {
                payload: ChangePayload::Owned(vec![0; 1000]),
                ..ch(sn, 1)
            });
        }
        assert_eq!(h.bytes_between(0, 11), 1000);
        assert_eq!(h.bytes_between(3, 7), 300, "SNs 4, 5 and 6");
        assert_eq!(h.bytes_between(3, 4), 0);
        assert_eq!(
            h.bytes_between(9, 21),
            100 + 1000,
            "10 and 20 across the gap"
        );
        assert_eq!(h.bytes_between(12, 100), 2000, "beyond the last SN");
        assert_eq!(h.bytes_between(-5, 1), 0);
        // Acknowledged changes leave the front: a range starting below it starts there.
        h.remove_up_to(5);
        assert_eq!(h.bytes_between(2, 8), 200, "SNs 6 and 7");
        assert_eq!(h.bytes_between(0, 30), 500 + 2000);
        h.remove_up_to(21);
        assert_eq!(h.bytes_between(0, 30), 0);
        h.push(ch(22, 1));
        assert_eq!(h.bytes_between(21, 23), 1);
    }

    #[test]
    fn payload_pool_is_bounded_in_bytes() {
        let mut h = HistoryCache::default();
        for sn in 1..=200 {
            let payload = h.make_payload(&[0u8; 60_000]);
            h.push(CacheChange {
                payload: ChangePayload::Owned(payload),
                ..ch(sn, 1)
            });
        }
        h.remove_up_to(200);
        assert!(h.pool_bytes <= POOL_MAX_BYTES);
        assert!(h.pool.len() < 200 && !h.pool.is_empty());
        let total: usize = h.pool.iter().map(Vec::capacity).sum();
        assert_eq!(total, h.pool_bytes);
        // Reused buffers leave the count.
        let _ = h.make_payload(b"x");
        let total: usize = h.pool.iter().map(Vec::capacity).sum();
        assert_eq!(total, h.pool_bytes);
    }

    #[test]
    fn one_large_payload_buffer_is_recycled() {
        let mut h = HistoryCache::default();
        let big = vec![7u8; 1 << 20];
        let payload = h.make_payload(&big);
        let addr = payload.as_ptr();
        h.push(CacheChange {
            payload: ChangePayload::Owned(payload),
            ..ch(1, 1)
        });
        h.remove_up_to(1);
        // Not in the pool of small buffers, whose byte bound it would exhaust.
        assert_eq!(h.pool_bytes, 0);
        // A small payload does not take it; the next large one does.
        let small = h.make_payload(&[1, 2, 3]);
        assert!(small.capacity() < 1 << 16);
        let again = h.make_payload(&big[..(1 << 20) - 5]);
        assert_eq!(again.as_ptr(), addr, "the large buffer is reused");
        assert_eq!(again, big[..(1 << 20) - 5]);
        // Beyond the bound nothing is kept.
        h.push(CacheChange {
            payload: ChangePayload::Owned(Vec::with_capacity(LARGE_MAX_BYTES + 1)),
            ..ch(2, 1)
        });
        h.remove_up_to(2);
        assert!(h.large.is_none());
    }

    #[test]
    fn payload_buffers_are_recycled() {
        let mut h = HistoryCache::default();
        let mut c = ch(1, 0);
        c.payload = ChangePayload::Owned(vec![1]);
        if let ChangePayload::Owned(v) = &mut c.payload {
            v.reserve_exact(999);
        }
        h.push(c);
        h.remove_up_to(1);
        let p = h.make_payload(&[1, 2, 3]);
        assert_eq!(p, vec![1, 2, 3]);
        assert!(p.capacity() >= 1000);
    }
    #[test]
    fn a_taken_payload_is_not_copied_and_the_buffer_is_replaced_by_a_recycled_one() {
        let mut h = HistoryCache::default();
        // Nothing recycled yet: the caller gets an empty buffer back.
        let mut buf = vec![5u8; 3000];
        let addr = buf.as_ptr();
        let taken = h.take_payload(&mut buf);
        assert_eq!(taken.as_ptr(), addr, "the payload is the caller's buffer");
        assert_eq!(taken, vec![5u8; 3000]);
        assert!(buf.is_empty() && buf.capacity() == 0);
        h.push(CacheChange {
            payload: ChangePayload::Owned(taken),
            ..ch(1, 0)
        });
        h.remove_up_to(1);
        // Recycled: the next small payload taken hands that buffer back, cleared.
        buf.extend_from_slice(&[1, 2, 3]);
        let second = h.take_payload(&mut buf);
        assert_eq!(second, vec![1, 2, 3]);
        assert_eq!(buf.as_ptr(), addr, "the recycled buffer is handed back");
        assert!(buf.is_empty() && buf.capacity() >= 3000);
        assert_eq!(h.pool_bytes, 0);
        // A large payload trades with the single large buffer.
        h.push(CacheChange {
            payload: ChangePayload::Owned(vec![0; 1 << 20]),
            ..ch(2, 0)
        });
        h.remove_up_to(2);
        let large_addr = h.large.as_ref().map(|l| l.as_ptr());
        let mut big = vec![9u8; (1 << 16) + 1];
        let big_addr = big.as_ptr();
        let taken = h.take_payload(&mut big);
        assert_eq!(taken.as_ptr(), big_addr);
        assert_eq!(Some(big.as_ptr()), large_addr);
        assert!(big.is_empty() && h.large.is_none());
    }
    #[test]
    fn a_buffer_much_larger_than_its_payload_is_copied_and_left_to_the_caller() {
        let mut h = HistoryCache::default();
        let mut buf = Vec::with_capacity(100_000);
        buf.extend_from_slice(&[1, 2, 3]);
        let addr = buf.as_ptr();
        let taken = h.take_payload(&mut buf);
        assert_eq!(taken, vec![1, 2, 3]);
        assert_ne!(taken.as_ptr(), addr, "a copy");
        assert!(taken.capacity() < 1000);
        assert_eq!(
            (buf.as_ptr(), &buf[..]),
            (addr, &[1, 2, 3][..]),
            "left as it was"
        );
    }
}
