//! Writer history cache: changes in SN order in a `VecDeque` (binary search by
//! SN), with a small pool of recycled payload buffers.

use std::collections::VecDeque;

use crate::api::ChangeKind;
use crate::Time;

/// Most recycled payload buffers kept.
const POOL_MAX: usize = 64;

/// One change in a writer's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CacheChange {
    pub(crate) sn: i64,
    pub(crate) kind: ChangeKind,
    pub(crate) key_hash: Option<[u8; 16]>,
    pub(crate) source_timestamp: Option<Time>,
    pub(crate) payload: Vec<u8>,
}

/// SN-ordered history.
#[derive(Debug, Default)]
pub(crate) struct HistoryCache {
    changes: VecDeque<CacheChange>,
    pool: Vec<Vec<u8>>,
}

impl HistoryCache {
    pub(crate) fn len(&self) -> usize {
        self.changes.len()
    }

    pub(crate) fn first_sn(&self) -> Option<i64> {
        self.changes.front().map(|c| c.sn)
    }

    pub(crate) fn get(&self, sn: i64) -> Option<&CacheChange> {
        let i = self.changes.binary_search_by_key(&sn, |c| c.sn).ok()?;
        self.changes.get(i)
    }

    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &CacheChange> {
        self.changes.iter()
    }

    /// A payload buffer holding `data`, reusing a recycled one when possible.
    pub(crate) fn make_payload(&mut self, data: &[u8]) -> Vec<u8> {
        let mut v = self.pool.pop().unwrap_or_default();
        v.clear();
        v.extend_from_slice(data);
        v
    }

    /// Appends a change; its SN must be above every SN present.
    pub(crate) fn push(&mut self, c: CacheChange) {
        debug_assert!(self.changes.back().is_none_or(|b| b.sn < c.sn));
        self.changes.push_back(c);
    }

    fn recycle(&mut self, c: CacheChange) {
        if self.pool.len() < POOL_MAX {
            self.pool.push(c.payload);
        }
    }

    /// Removes every change with SN <= `sn`; returns how many.
    pub(crate) fn remove_up_to(&mut self, sn: i64) -> usize {
        let mut n = 0;
        while self.changes.front().is_some_and(|c| c.sn <= sn) {
            if let Some(c) = self.changes.pop_front() {
                self.recycle(c);
                n += 1;
            }
        }
        n
    }

    /// Removes the oldest change.
    pub(crate) fn remove_oldest(&mut self) -> Option<i64> {
        let c = self.changes.pop_front()?;
        let sn = c.sn;
        self.recycle(c);
        Some(sn)
    }

    /// Number of changes of the instance `key` (`None` = the single instance
    /// of an unkeyed writer, matching changes without key hash).
    pub(crate) fn instance_count(&self, key: Option<&[u8; 16]>) -> usize {
        self.changes
            .iter()
            .filter(|c| c.key_hash.as_ref() == key)
            .count()
    }

    /// Removes the oldest change of instance `key`.
    pub(crate) fn remove_oldest_of(&mut self, key: Option<&[u8; 16]>) -> Option<i64> {
        let i = self
            .changes
            .iter()
            .position(|c| c.key_hash.as_ref() == key)?;
        let c = self.changes.remove(i)?;
        let sn = c.sn;
        self.recycle(c);
        Some(sn)
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
            payload: vec![sn as u8],
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
        assert_eq!(h.remove_oldest_of(Some(&[1; 16])), Some(1));
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
    }

    #[test]
    fn payload_buffers_are_recycled() {
        let mut h = HistoryCache::default();
        let mut c = ch(1, 0);
        c.payload = Vec::with_capacity(1000);
        c.payload.push(1);
        h.push(c);
        h.remove_up_to(1);
        let p = h.make_payload(&[1, 2, 3]);
        assert_eq!(p, vec![1, 2, 3]);
        assert!(p.capacity() >= 1000);
    }
}
