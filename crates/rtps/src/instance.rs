//! Instances: a fast hasher for key hashes, instance states, and the reader
//! sample cache (FIFO delivery order with KEEP_LAST per instance in O(1)).

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};

use crate::api::Sample;
use crate::types::ChangeKind;

/// DDS instance state as seen by a writer (last change written) or a reader
/// (last change received).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum InstanceState {
    /// Registered or written alive.
    #[default]
    Alive,
    /// Disposed.
    NotAliveDisposed,
    /// Unregistered (no live writer).
    NotAliveNoWriters,
}

impl InstanceState {
    /// The state a change of `kind` leaves its instance in.
    #[must_use]
    pub fn from_kind(kind: ChangeKind) -> Self {
        match kind {
            ChangeKind::Alive => InstanceState::Alive,
            ChangeKind::NotAliveDisposed | ChangeKind::NotAliveDisposedUnregistered => {
                InstanceState::NotAliveDisposed
            }
            ChangeKind::NotAliveUnregistered => InstanceState::NotAliveNoWriters,
        }
    }

    pub(crate) fn is_unregistered(self) -> bool {
        self == InstanceState::NotAliveNoWriters
    }
}

/// Hashes key hashes (already well mixed: MD5 or a padded key) by folding
/// their words with a seeded multiply-rotate; a few nanoseconds per lookup.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyHasher(u64);

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z ^ (z >> 29)
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            self.0 = (self.0.rotate_left(23) ^ u64::from_le_bytes(a)).wrapping_mul(K);
        }
        for b in chunks.remainder() {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(K);
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.0 = (self.0.rotate_left(8) ^ u64::from(i)).wrapping_mul(K);
    }

    fn write_usize(&mut self, i: usize) {
        self.0 = (self.0.rotate_left(23) ^ i as u64).wrapping_mul(K);
    }
}

/// Builds [`KeyHasher`]s with a seed (the participant's random GUID prefix
/// for reader caches, so remote writers cannot aim collisions at us).
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyHasherBuilder(u64);

impl KeyHasherBuilder {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed | 1)
    }
}

impl Default for KeyHasherBuilder {
    fn default() -> Self {
        Self::new(K)
    }
}

impl BuildHasher for KeyHasherBuilder {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(self.0)
    }
}

/// Per-instance state by key hash. The single instance of an unkeyed topic
/// (key `None`) is kept outside the hash map, so unkeyed writers and readers
/// never hash on their data path.
#[derive(Debug)]
pub(crate) struct InstanceMap<V> {
    unkeyed: Option<V>,
    keyed: HashMap<[u8; 16], V, KeyHasherBuilder>,
}

impl<V> Default for InstanceMap<V> {
    fn default() -> Self {
        Self::with_hasher(KeyHasherBuilder::default())
    }
}

impl<V> InstanceMap<V> {
    pub(crate) fn with_hasher(hasher: KeyHasherBuilder) -> Self {
        Self {
            unkeyed: None,
            keyed: HashMap::with_hasher(hasher),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.keyed.len() + usize::from(self.unkeyed.is_some())
    }

    pub(crate) fn get(&self, key: Option<&[u8; 16]>) -> Option<&V> {
        match key {
            None => self.unkeyed.as_ref(),
            Some(k) => self.keyed.get(k),
        }
    }

    pub(crate) fn get_mut(&mut self, key: Option<&[u8; 16]>) -> Option<&mut V> {
        match key {
            None => self.unkeyed.as_mut(),
            Some(k) => self.keyed.get_mut(k),
        }
    }

    /// The entry of `key`, inserted with `f` if absent.
    pub(crate) fn get_or_insert_with(
        &mut self,
        key: Option<[u8; 16]>,
        f: impl FnOnce() -> V,
    ) -> &mut V {
        match key {
            None => self.unkeyed.get_or_insert_with(f),
            Some(k) => self.keyed.entry(k).or_insert_with(f),
        }
    }

    /// Every entry, in no particular order.
    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.unkeyed.iter_mut().chain(self.keyed.values_mut())
    }

    pub(crate) fn remove(&mut self, key: Option<&[u8; 16]>) -> Option<V> {
        match key {
            None => self.unkeyed.take(),
            Some(k) => self.keyed.remove(k),
        }
    }
}

/// Computes the key hash of a received change whose writer sent no
/// `PID_KEY_HASH` (Cyclone DDS, for one, does not): from the serialized sample
/// for alive changes, from the serialized key for dispose/unregister. Given by
/// the layer that knows the type (the engine is not generic); a pure function
/// of its input, so the engine stays deterministic. `None`: the change names
/// the nil instance.
#[derive(Clone)]
pub struct KeyExtractor(
    #[allow(clippy::type_complexity)]
    pub  std::sync::Arc<dyn Fn(ChangeKind, &[u8]) -> Option<[u8; 16]> + Send + Sync>,
);

impl core::fmt::Debug for KeyExtractor {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("KeyExtractor")
    }
}

/// A sample taken from (or looked at in) a reader's cache, with what the
/// reader knows of it when it is taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenSample {
    /// The sample as received.
    pub sample: Sample,
    /// The state of its instance now (not when the sample arrived).
    pub instance_state: InstanceState,
    /// Whether it was read (looked at without taking) before.
    pub read: bool,
}

/// What [`crate::Participant::take_samples`] did besides moving samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct TakeOutcome {
    /// Samples left in the reader's cache.
    pub left: usize,
    /// The take made room in a full KEEP_ALL reader: acknowledgements it held back are
    /// now due (drain `poll_transmit`).
    pub transmit_due: bool,
}

/// One queued sample.
#[derive(Debug)]
struct Queued {
    /// Delivery sequence number (position in the reader's arrival order).
    seq: u64,
    sample: Sample,
    read: bool,
}

/// Per-instance part of a reader's cache.
#[derive(Debug, Default)]
struct ReaderInstance {
    /// Queued samples, oldest first.
    queue: VecDeque<Queued>,
    state: InstanceState,
}

/// A reader's history: the received, not yet taken samples and the state of
/// every instance the reader has seen — the only copy of either (the API
/// takes from here). Samples are delivered in arrival order; with KEEP_LAST n
/// the oldest queued sample of an instance is replaced in O(1). Evicted
/// samples leave stale entries in the order queue, compacted when they
/// dominate.
#[derive(Debug)]
pub(crate) struct ReaderCache {
    order: VecDeque<(Option<[u8; 16]>, u64)>,
    instances: InstanceMap<ReaderInstance>,
    next_seq: u64,
    live: usize,
    /// Queued samples not read yet.
    unread: usize,
}

impl ReaderCache {
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            order: VecDeque::new(),
            instances: InstanceMap::with_hasher(KeyHasherBuilder::new(seed)),
            next_seq: 0,
            live: 0,
            unread: 0,
        }
    }

    /// Samples queued.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Whether some queued sample was not read yet.
    pub(crate) fn has_unread(&self) -> bool {
        self.unread > 0
    }

    /// Instances known to this reader.
    pub(crate) fn instance_count(&self) -> usize {
        self.instances.len()
    }

    /// State of an instance, if known.
    pub(crate) fn instance_state(&self, key: Option<&[u8; 16]>) -> Option<InstanceState> {
        self.instances.get(key).map(|i| i.state)
    }

    /// No writer is left: every alive instance becomes `NotAliveNoWriters`
    /// (disposed ones stay disposed), and instances without queued samples
    /// are reclaimed (no writer can bring them back to life but a new one).
    pub(crate) fn no_writers(&mut self) {
        let mark = |i: &mut ReaderInstance| {
            if i.state == InstanceState::Alive {
                i.state = InstanceState::NotAliveNoWriters;
            }
        };
        if let Some(i) = self.instances.unkeyed.as_mut() {
            mark(i);
            if i.queue.is_empty() {
                self.instances.unkeyed = None;
            }
        }
        self.instances.keyed.values_mut().for_each(mark);
        self.instances.keyed.retain(|_, i| !i.queue.is_empty());
    }

    /// Queues `s`; with `depth`, first drops the instance's oldest queued
    /// sample if it already holds `depth`. Returns true if one was dropped.
    // (Inlined into the engine's delivery: the sample is built in place.)
    #[inline]
    pub(crate) fn push(&mut self, s: Sample, depth: Option<usize>) -> bool {
        let key = s.key_hash;
        let inst = self.instances.get_or_insert_with(key, || ReaderInstance {
            // Exactly what KEEP_LAST needs (growth would reserve 4 slots).
            queue: VecDeque::with_capacity(depth.unwrap_or(1).clamp(1, 4)),
            state: InstanceState::Alive,
        });
        let next = InstanceState::from_kind(s.kind);
        // Disposed and then unregistered stays disposed.
        if !(next.is_unregistered() && inst.state == InstanceState::NotAliveDisposed) {
            inst.state = next;
        }
        let mut evicted = false;
        if let Some(d) = depth {
            while inst.queue.len() >= d.max(1) {
                if let Some(old) = inst.queue.pop_front() {
                    self.unread -= usize::from(!old.read);
                }
                self.live -= 1;
                evicted = true;
            }
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        inst.queue.push_back(Queued {
            seq,
            sample: s,
            read: false,
        });
        self.order.push_back((key, seq));
        self.live += 1;
        self.unread += 1;
        if self.order.len() > 2 * self.live + 1024 {
            let instances = &self.instances;
            self.order.retain(|(k, q)| {
                instances
                    .get(k.as_ref())
                    .is_some_and(|i| i.queue.binary_search_by_key(q, |e| e.seq).is_ok())
            });
        }
        evicted
    }

    /// Takes the oldest queued sample, with its instance's current state.
    // (Inlined into the engine's take: the sample is then moved once, not
    // once per call level.)
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<TakenSample> {
        while let Some((key, seq)) = self.order.pop_front() {
            let Some(inst) = self.instances.get_mut(key.as_ref()) else {
                continue;
            };
            if inst.queue.front().is_some_and(|e| e.seq == seq) {
                self.live -= 1;
                let e = inst.queue.pop_front()?;
                self.unread -= usize::from(!e.read);
                let instance_state = inst.state;
                if inst.queue.is_empty() && instance_state == InstanceState::NotAliveNoWriters {
                    // No writer and nothing left to take: the instance's resources are
                    // reclaimed (a writer of ever new keys that unregisters them must not
                    // grow this map for ever); a later sample starts it anew.
                    self.instances.remove(key.as_ref());
                }
                return Some(TakenSample {
                    sample: e.sample,
                    instance_state,
                    read: e.read,
                });
            }
        }
        if self.order.capacity() > 4096 {
            // Everything was taken: give back a burst's worth of order slots.
            self.order.shrink_to(4096);
        }
        None
    }

    /// Lets `f` change every queued sample (in no particular order; read or not) and drops
    /// those it returns false for; returns how many were dropped.
    pub(crate) fn retain_mut(&mut self, mut f: impl FnMut(&mut Sample) -> bool) -> usize {
        let (mut dropped, mut dropped_unread) = (0, 0);
        for inst in self.instances.values_mut() {
            inst.queue.retain_mut(|e| {
                let keep = f(&mut e.sample);
                if !keep {
                    dropped += 1;
                    dropped_unread += usize::from(!e.read);
                }
                keep
            });
        }
        // Their `order` entries no longer match a queue's front: `pop` skips them.
        self.live -= dropped;
        self.unread -= dropped_unread;
        dropped
    }

    /// Visits at most `max` queued samples, oldest first, leaving them queued
    /// and marking them read; `f` gets each sample, its instance's current
    /// state and whether it had been read before. Returns how many.
    pub(crate) fn read_each(
        &mut self,
        max: usize,
        mut f: impl FnMut(&Sample, InstanceState, bool),
    ) -> usize {
        let mut n = 0;
        for (key, seq) in &self.order {
            if n >= max {
                break;
            }
            let Some(inst) = self.instances.get_mut(key.as_ref()) else {
                continue;
            };
            // The queue is in delivery order: a stale entry is not found.
            let Ok(i) = inst.queue.binary_search_by_key(seq, |e| e.seq) else {
                continue;
            };
            let state = inst.state;
            let e = &mut inst.queue[i];
            f(&e.sample, state, e.read);
            if !e.read {
                e.read = true;
                self.unread -= 1;
            }
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EntityId, Guid, GuidPrefix, SequenceNumber};

    fn s(key: u8, sn: i64, kind: ChangeKind) -> Sample {
        Sample {
            by_reference: false,
            writer_guid: Guid::new(GuidPrefix([1; 12]), EntityId([0, 0, 1, 2])),
            sequence_number: SequenceNumber(sn),
            source_timestamp: None,
            kind,
            key_hash: Some([key; 16]),
            payload: vec![],
        }
    }

    #[test]
    fn keep_last_per_instance_keeps_arrival_order() {
        let mut c = ReaderCache::new(7);
        for (k, sn) in [(1, 1), (2, 2), (1, 3), (3, 4), (1, 5)] {
            c.push(s(k, sn, ChangeKind::Alive), Some(2));
        }
        assert_eq!(c.len(), 4);
        let got: Vec<i64> = core::iter::from_fn(|| c.pop())
            .map(|t| t.sample.sequence_number.0)
            .collect();
        assert_eq!(got, vec![2, 3, 4, 5]);
        assert_eq!(c.len(), 0);
        c.push(s(2, 6, ChangeKind::NotAliveDisposed), None);
        assert_eq!(
            c.instance_state(Some(&[2; 16])),
            Some(InstanceState::NotAliveDisposed)
        );
        assert_eq!(c.instance_state(Some(&[9; 16])), None);
        assert_eq!(c.instance_count(), 3);
    }

    #[test]
    fn instances_without_writers_or_samples_are_reclaimed() {
        let mut c = ReaderCache::new(3);
        // A writer of ever new keys that unregisters each: nothing stays once taken.
        for k in 0..200u8 {
            c.push(s(k, 2 * i64::from(k), ChangeKind::Alive), None);
            c.push(
                s(k, 2 * i64::from(k) + 1, ChangeKind::NotAliveUnregistered),
                None,
            );
        }
        assert_eq!(c.instance_count(), 200);
        let taken: Vec<InstanceState> = core::iter::from_fn(|| c.pop())
            .map(|t| t.instance_state)
            .collect();
        assert_eq!(taken.len(), 400);
        assert!(taken.iter().all(|s| *s == InstanceState::NotAliveNoWriters));
        assert_eq!(c.instance_count(), 0);
        // Alive and disposed instances stay while writers may write them again...
        c.push(s(1, 500, ChangeKind::Alive), None);
        c.push(s(2, 501, ChangeKind::NotAliveDisposed), None);
        c.push(s(3, 502, ChangeKind::Alive), None);
        while c.pop().is_some() {}
        assert_eq!(c.instance_count(), 3);
        c.push(s(3, 503, ChangeKind::Alive), None);
        // ...until no writer is left: those without queued samples go at once.
        c.no_writers();
        assert_eq!(c.instance_count(), 1);
        assert_eq!(
            c.instance_state(Some(&[3; 16])),
            Some(InstanceState::NotAliveNoWriters)
        );
        assert!(c.pop().is_some());
        assert_eq!(c.instance_count(), 0);
    }

    #[test]
    fn unregistering_a_disposed_instance_keeps_it_disposed() {
        let mut c = ReaderCache::new(5);
        let state = |c: &ReaderCache, k: u8| c.instance_state(Some(&[k; 16]));
        c.push(s(1, 1, ChangeKind::Alive), None);
        c.push(s(1, 2, ChangeKind::NotAliveDisposed), None);
        c.push(s(1, 3, ChangeKind::NotAliveUnregistered), None);
        assert_eq!(state(&c, 1), Some(InstanceState::NotAliveDisposed));
        c.push(s(2, 4, ChangeKind::Alive), None);
        c.push(s(2, 5, ChangeKind::NotAliveUnregistered), None);
        assert_eq!(state(&c, 2), Some(InstanceState::NotAliveNoWriters));
        // Written again: alive, whatever came before.
        c.push(s(1, 6, ChangeKind::Alive), None);
        assert_eq!(state(&c, 1), Some(InstanceState::Alive));
    }

    #[test]
    fn read_marks_samples_and_take_reports_states() {
        let mut c = ReaderCache::new(3);
        c.push(s(1, 1, ChangeKind::Alive), Some(1));
        c.push(s(2, 2, ChangeKind::Alive), None);
        c.push(s(1, 3, ChangeKind::Alive), Some(1)); // replaces sn 1
        assert!(c.has_unread());
        let mut seen = Vec::new();
        assert_eq!(
            c.read_each(1, |x, _, was| seen.push((x.sequence_number.0, was))),
            1
        );
        assert_eq!(
            c.read_each(9, |x, _, was| seen.push((x.sequence_number.0, was))),
            2
        );
        assert_eq!(seen, vec![(2, false), (2, true), (3, false)]);
        assert!(!c.has_unread());
        c.push(s(2, 4, ChangeKind::NotAliveDisposed), None);
        assert!(c.has_unread());
        // The state reported is the instance's now: sn 2 is of a disposed instance.
        let t = c.pop().unwrap();
        assert_eq!(
            (t.sample.sequence_number.0, t.read, t.instance_state),
            (2, true, InstanceState::NotAliveDisposed)
        );
        c.no_writers();
        let t = c.pop().unwrap();
        assert_eq!(
            (t.sample.sequence_number.0, t.instance_state),
            (3, InstanceState::NotAliveNoWriters)
        );
        let t = c.pop().unwrap();
        assert_eq!(
            (t.read, t.instance_state),
            (false, InstanceState::NotAliveDisposed),
            "disposed stays disposed when the writers leave"
        );
        assert!(c.pop().is_none());
        assert!(!c.has_unread());
        assert_eq!(c.len(), 0);
    }

    #[test]
    fn stale_order_entries_are_compacted() {
        let mut c = ReaderCache::new(1);
        for sn in 0..100_000 {
            c.push(s(1, sn, ChangeKind::Alive), Some(1));
        }
        assert_eq!(c.len(), 1);
        assert!(c.order.len() < 2000, "{}", c.order.len());
        assert_eq!(c.pop().unwrap().sample.sequence_number.0, 99_999);
        assert!(c.pop().is_none());
    }

    #[test]
    fn hasher_spreads_padded_small_keys() {
        let b = KeyHasherBuilder::new(3);
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..10_000u32 {
            let mut k = [0u8; 16];
            k[..4].copy_from_slice(&i.to_be_bytes());
            seen.insert(b.hash_one(k) >> 50);
        }
        // 14-bit buckets: a good hash fills most of them.
        assert!(seen.len() > 6500, "{}", seen.len());
    }
}
