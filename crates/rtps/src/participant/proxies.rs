//! [`Proxies`]: the remote endpoints matched with a local writer or reader,
//! in the order they matched, found by GUID in constant time, and with a
//! queue of those that have something to send.
//!
//! A builtin SEDP endpoint has one proxy per remote participant, and every
//! ACKNACK, HEARTBEAT, GAP and DATA it receives names the proxy by GUID: a
//! linear search there makes discovery of N participants cost O(N²) in each.
//! So does a scan of all proxies for the few with an ACKNACK or a repair to
//! send, after every datagram sent and at every timer. So once there are more
//! than [`INDEX_FROM`] proxies, a hash index (seeded like the participant's
//! other maps, so that announced GUIDs cannot be chosen to collide) finds a
//! proxy, and a work queue holds the proxies with work: those due now in
//! arrival order, those due later by time. Below that a scan is cheaper, and
//! a user endpoint with one or a few proxies (the data path) neither hashes
//! nor queues nor allocates for either.
//!
//! The queue's entries are hints, checked when taken: each proxy records the
//! key of its one live entry ([`Proxy::queued_at`]); an entry whose proxy is
//! gone, has another key or has no work left is dropped. Whoever gives a
//! proxy work calls [`Proxies::note_work`] (the participant's `watch_*`
//! calls do), so that a proxy with work always has an entry no later than
//! when its work is due.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::ops::{Deref, DerefMut};

use super::{map_hasher, SeededMap};
use crate::proxy::{ReaderProxy, WriterProxy};
use crate::types::Timestamp;
use crate::{Guid, GuidPrefix};

/// With more proxies than this, lookups by GUID use the index.
pub(super) const INDEX_FROM: usize = 8;

/// Key of a queue entry due now (served in arrival order).
const NOW: Timestamp = Timestamp(0);

/// A proxy as [`Proxies`] sees it.
pub(super) trait Proxy {
    /// The remote endpoint's GUID.
    fn guid(&self) -> Guid;
    /// When what this proxy has to send is due ([`NOW`]: at once), if it has
    /// anything to send.
    fn work_due(&self) -> Option<Timestamp>;
    /// The key of this proxy's live queue entry.
    fn queued_at(&mut self) -> &mut Option<Timestamp>;
}

impl Proxy for ReaderProxy {
    fn guid(&self) -> Guid {
        self.guid
    }
    /// A GAP or a HEARTBEAT goes at once, requested repairs when due.
    fn work_due(&self) -> Option<Timestamp> {
        if !self.has_repair_work() {
            None
        } else if self.gap_pending || self.hb_pending {
            Some(NOW)
        } else {
            Some(self.repair_due)
        }
    }
    fn queued_at(&mut self) -> &mut Option<Timestamp> {
        &mut self.queued_at
    }
}

impl Proxy for WriterProxy {
    fn guid(&self) -> Guid {
        self.guid
    }
    /// A pending ACKNACK is looked at once; when it is held off, the reader
    /// requeues it ([`Proxies::requeue`]) for when the hold-off ends.
    fn work_due(&self) -> Option<Timestamp> {
        self.ack_pending.then_some(NOW)
    }
    fn queued_at(&mut self) -> &mut Option<Timestamp> {
        &mut self.queued_at
    }
}

/// Proxies in match order (a slice through `Deref`), at most one per GUID,
/// with a GUID → position index and a work queue while there are more than
/// [`INDEX_FROM`] ([`Proxies::queued`]). Adding and removing go through
/// [`Proxies::push`], [`Proxies::remove`] and [`Proxies::retain`]; through
/// the slice a proxy may change but not its GUID.
#[derive(Debug)]
pub(super) struct Proxies<P> {
    list: Vec<P>,
    /// Empty while `list.len() <= INDEX_FROM`.
    index: SeededMap<Guid, usize>,
    /// Proxies whose work is due now, in the order it came.
    ready: VecDeque<Guid>,
    /// Proxies whose work is due later, earliest first.
    timed: BinaryHeap<Reverse<(Timestamp, Guid)>>,
}

impl<P: Proxy> Proxies<P> {
    /// No proxies; the index hashes with the seed of participant `prefix`.
    pub(super) fn new(prefix: GuidPrefix) -> Self {
        Self {
            list: Vec::new(),
            index: SeededMap::with_hasher(map_hasher(prefix)),
            ready: VecDeque::new(),
            timed: BinaryHeap::new(),
        }
    }

    /// Whether the index and the work queue are kept (more than
    /// [`INDEX_FROM`] proxies): then the proxies with work are found with
    /// [`Proxies::pop_due`], else by scanning.
    #[inline]
    pub(super) fn queued(&self) -> bool {
        self.list.len() > INDEX_FROM
    }

    /// Queues proxy `i` if it has work (and no entry as early): call after
    /// anything that may give a proxy work. Nothing to do below the
    /// threshold.
    #[inline]
    pub(super) fn note_work(&mut self, i: usize) {
        if self.queued() {
            self.enqueue(i, None);
        }
    }

    /// Queues proxy `i` for `at` (an ACKNACK held off until then).
    pub(super) fn requeue(&mut self, i: usize, at: Timestamp) {
        if self.queued() {
            self.enqueue(i, Some(at));
        }
    }

    #[inline(never)]
    fn enqueue(&mut self, i: usize, at: Option<Timestamp>) {
        let Some(p) = self.list.get_mut(i) else {
            return;
        };
        let Some(key) = at.or_else(|| p.work_due()) else {
            return;
        };
        if p.queued_at().is_some_and(|q| q <= key) {
            return;
        }
        *p.queued_at() = Some(key);
        let guid = p.guid();
        if key == NOW {
            self.ready.push_back(guid);
        } else {
            self.timed.push(Reverse((key, guid)));
        }
    }

    /// Takes the next proxy whose work is due at `now` (its entry is gone:
    /// whoever serves it calls [`Proxies::note_work`] if work is left, or
    /// [`Proxies::requeue`]); entries found stale on the way are dropped,
    /// and those due later go back for their time.
    pub(super) fn pop_due(&mut self, now: Timestamp) -> Option<usize> {
        loop {
            let (key, guid) = match self.timed.peek() {
                Some(Reverse((t, g))) if *t <= now => {
                    let e = (*t, *g);
                    self.timed.pop();
                    e
                }
                _ => (NOW, self.ready.pop_front()?),
            };
            let Some(i) = self.index.get(&guid).copied() else {
                continue;
            };
            let p = &mut self.list[i];
            if *p.queued_at() != Some(key) {
                continue;
            }
            *p.queued_at() = None;
            match p.work_due() {
                None => {}
                Some(d) if d > now => self.enqueue(i, None),
                Some(_) => return Some(i),
            }
        }
    }

    /// Drops stale entries due by `now` and moves live ones to the ready
    /// queue, so that [`Proxies::next_timed`] is a time still to come (or
    /// none).
    pub(super) fn settle(&mut self, now: Timestamp) {
        while let Some(Reverse((t, guid))) = self.timed.peek().copied() {
            if t > now {
                break;
            }
            self.timed.pop();
            let Some(i) = self.index.get(&guid).copied() else {
                continue;
            };
            let p = &mut self.list[i];
            if *p.queued_at() != Some(t) {
                continue;
            }
            *p.queued_at() = None;
            if p.work_due().is_some() {
                *p.queued_at() = Some(NOW);
                self.ready.push_back(guid);
            }
        }
    }

    /// The earliest time a queued proxy's work becomes due, if later work is
    /// queued (no later than the real one; work due now is not included).
    pub(super) fn next_timed(&self) -> Option<Timestamp> {
        self.timed.peek().map(|Reverse((t, _))| *t)
    }

    /// Whether the work queue is empty (then no proxy has work, when
    /// [`Proxies::queued`]).
    pub(super) fn queue_is_empty(&self) -> bool {
        self.ready.is_empty() && self.timed.is_empty()
    }

    /// Position of the proxy of `guid`.
    #[inline]
    pub(super) fn position(&self, guid: Guid) -> Option<usize> {
        if self.list.len() <= INDEX_FROM {
            self.list.iter().position(|p| p.guid() == guid)
        } else {
            self.indexed_position(guid)
        }
    }

    /// [`Proxies::position`] through the index (kept out of line: the
    /// small-endpoint path inlined into the data path stays small).
    #[inline(never)]
    fn indexed_position(&self, guid: Guid) -> Option<usize> {
        self.index.get(&guid).copied()
    }

    /// Whether `guid` has a proxy.
    pub(super) fn contains(&self, guid: Guid) -> bool {
        self.position(guid).is_some()
    }

    /// Adds a proxy (the caller checked that its GUID has none).
    pub(super) fn push(&mut self, p: P) {
        debug_assert!(!self.contains(p.guid()), "duplicate proxy");
        let guid = p.guid();
        self.list.push(p);
        let n = self.list.len();
        if n == INDEX_FROM + 1 {
            self.reindex();
        } else if n > INDEX_FROM {
            self.index.insert(guid, n - 1);
            self.enqueue(n - 1, None);
        }
    }

    /// Removes and returns the proxy at `i` (the order of the others stays).
    pub(super) fn remove(&mut self, i: usize) -> P {
        let p = self.list.remove(i);
        self.reindex();
        p
    }

    /// Keeps only the proxies `keep` accepts (in their order).
    pub(super) fn retain(&mut self, keep: impl FnMut(&P) -> bool) {
        let before = self.list.len();
        self.list.retain(keep);
        if self.list.len() != before {
            self.reindex();
        }
    }

    /// Rebuilds the index from the list (empty at or below [`INDEX_FROM`]);
    /// entering queued mode queues every proxy with work, leaving it
    /// forgets the queue.
    fn reindex(&mut self) {
        let was_queued = !self.index.is_empty();
        self.index.clear();
        if self.queued() {
            for (i, p) in self.list.iter().enumerate() {
                self.index.insert(p.guid(), i);
            }
            if !was_queued {
                for i in 0..self.list.len() {
                    self.enqueue(i, None);
                }
            }
        } else {
            self.index.shrink_to_fit();
            self.ready = VecDeque::new();
            self.timed = BinaryHeap::new();
            for p in &mut self.list {
                *p.queued_at() = None;
            }
        }
    }
}

impl<P> Deref for Proxies<P> {
    type Target = [P];
    #[inline]
    fn deref(&self) -> &[P] {
        &self.list
    }
}

impl<P> DerefMut for Proxies<P> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [P] {
        &mut self.list
    }
}

impl<'a, P> IntoIterator for &'a Proxies<P> {
    type Item = &'a P;
    type IntoIter = std::slice::Iter<'a, P>;
    fn into_iter(self) -> Self::IntoIter {
        self.list.iter()
    }
}

impl<'a, P> IntoIterator for &'a mut Proxies<P> {
    type Item = &'a mut P;
    type IntoIter = std::slice::IterMut<'a, P>;
    fn into_iter(self) -> Self::IntoIter {
        self.list.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EntityId;

    fn guid(n: u8) -> Guid {
        Guid::new(GuidPrefix([n; 12]), EntityId([0, 0, 1, 7]))
    }

    fn proxy(n: u8) -> ReaderProxy {
        ReaderProxy::new(guid(n), true, Vec::new(), 0)
    }

    /// Lookups agree with a linear search below, at and above the index
    /// threshold, across pushes, removals and retains.
    #[test]
    fn lookups_match_a_linear_search() {
        let mut ps = Proxies::new(GuidPrefix([9; 12]));
        let check = |ps: &Proxies<ReaderProxy>| {
            for n in 0..=40u8 {
                let linear = ps.iter().position(|p| p.guid == guid(n));
                assert_eq!(
                    ps.position(guid(n)),
                    linear,
                    "guid {n}, {} proxies",
                    ps.len()
                );
            }
        };
        for n in 1..=30 {
            ps.push(proxy(n));
            check(&ps);
        }
        ps.remove(0);
        check(&ps);
        ps.remove(10);
        check(&ps);
        ps.retain(|p| p.guid.prefix.0[0] % 3 != 0);
        check(&ps);
        assert_eq!(ps.len(), 19);
        ps.retain(|p| p.guid.prefix.0[0] < 8);
        check(&ps);
        assert!(ps.index.is_empty());
        for n in 31..=40 {
            ps.push(proxy(n));
            check(&ps);
        }
        assert!(!ps.index.is_empty());
        assert!(ps
            .position(guid(40))
            .is_some_and(|i| ps[i].guid == guid(40)));
        assert!(!ps.contains(guid(3)));
    }
}
