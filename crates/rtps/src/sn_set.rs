//! Sequence-number sets: a base plus a fixed 256-bit bitmap (the RTPS
//! maximum), no allocation.

/// `SequenceNumberSet`: SNs in `[base, base + num_bits)` whose bit is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SnSet {
    base: i64,
    num_bits: u32,
    bits: [u32; 8],
}

impl SnSet {
    /// Maximum bitmap length.
    pub(crate) const MAX_BITS: u32 = 256;

    /// Empty set at `base` (clamped to >= 1: a base of 0 is never emitted).
    pub(crate) fn new(base: i64) -> Self {
        Self {
            base: base.max(1),
            num_bits: 0,
            bits: [0; 8],
        }
    }

    /// From wire fields; `None` if `num_bits > 256` or base is negative.
    /// A base of 0 (sent by some vendors in pre-emptive ACKNACKs) is accepted
    /// only with no bits set, and read as base 1.
    pub(crate) fn from_wire(base: i64, num_bits: u32, mut bits: [u32; 8]) -> Option<Self> {
        if num_bits > Self::MAX_BITS || base < 0 {
            return None;
        }
        // Clear bits beyond num_bits so equality and iteration are canonical.
        for (i, w) in bits.iter_mut().enumerate() {
            let lo = (i as u32) * 32;
            if lo >= num_bits {
                *w = 0;
            } else if num_bits - lo < 32 {
                *w &= !(u32::MAX >> (num_bits - lo));
            }
        }
        if base == 0 {
            if bits.iter().any(|&w| w != 0) {
                return None;
            }
            return Some(Self::new(1));
        }
        Some(Self {
            base,
            num_bits,
            bits,
        })
    }

    pub(crate) fn base(&self) -> i64 {
        self.base
    }

    pub(crate) fn num_bits(&self) -> u32 {
        self.num_bits
    }

    /// The bitmap words on the wire (ceil(num_bits / 32) of them).
    pub(crate) fn words(&self) -> &[u32] {
        &self.bits[..self.num_bits.div_ceil(32) as usize]
    }

    /// Adds `sn`; false if it is outside `[base, base + 256)`.
    pub(crate) fn insert(&mut self, sn: i64) -> bool {
        let Some(off) = sn.checked_sub(self.base) else {
            return false;
        };
        if !(0..i64::from(Self::MAX_BITS)).contains(&off) {
            return false;
        }
        let off = off as u32;
        self.bits[(off / 32) as usize] |= 1 << (31 - off % 32);
        self.num_bits = self.num_bits.max(off + 1);
        true
    }

    /// Extends the bitmap to cover `sn` (at most 256 bits) without setting
    /// bits: the SNs in between are covered but not requested.
    pub(crate) fn extend_to(&mut self, sn: i64) {
        let Some(off) = sn.checked_sub(self.base) else {
            return;
        };
        if off >= 0 {
            let bits = (off + 1).min(i64::from(Self::MAX_BITS)) as u32;
            self.num_bits = self.num_bits.max(bits);
        }
    }

    /// The highest SN up to `max` that the bitmap covers with a clear bit
    /// (from an ACKNACK: one the reader has, whole or in part), if any.
    pub(crate) fn highest_clear(&self, max: i64) -> Option<i64> {
        let top = max.checked_sub(self.base)?;
        if top < 0 || self.num_bits == 0 {
            return None;
        }
        let top = top.min(i64::from(self.num_bits) - 1) as u32;
        (0..=top)
            .rev()
            .find(|off| self.bits[(off / 32) as usize] & (1 << (31 - off % 32)) == 0)
            .map(|off| self.base + i64::from(off))
    }

    #[cfg(test)]
    pub(crate) fn contains(&self, sn: i64) -> bool {
        let Some(off) = sn.checked_sub(self.base) else {
            return false;
        };
        if !(0..i64::from(self.num_bits)).contains(&off) {
            return false;
        }
        let off = off as u32;
        self.bits[(off / 32) as usize] & (1 << (31 - off % 32)) != 0
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.bits.iter().all(|&w| w == 0)
    }

    /// Set SNs in increasing order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.num_bits)
            .filter(|off| self.bits[(off / 32) as usize] & (1 << (31 - off % 32)) != 0)
            .map(|off| self.base + i64::from(off))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_contains_iter() {
        let mut s = SnSet::new(10);
        assert!(s.is_empty());
        assert!(s.insert(10));
        assert!(s.insert(41));
        assert!(s.insert(265));
        assert!(!s.insert(266));
        assert!(!s.insert(9));
        assert!(s.contains(41) && !s.contains(42));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![10, 41, 265]);
        assert_eq!(s.num_bits(), 256);
        assert_eq!(s.words().len(), 8);
    }

    #[test]
    fn wire_validation() {
        assert!(SnSet::from_wire(1, 257, [0; 8]).is_none());
        assert!(SnSet::from_wire(-1, 0, [0; 8]).is_none());
        assert_eq!(SnSet::from_wire(0, 0, [0; 8]).unwrap().base(), 1);
        assert!(SnSet::from_wire(0, 1, [u32::MAX; 8]).is_none());
        // Bits beyond num_bits are cleared.
        let s = SnSet::from_wire(5, 3, [u32::MAX; 8]).unwrap();
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![5, 6, 7]);
        assert_eq!(s.words(), &[0xe000_0000]);
    }

    #[test]
    fn extend_and_highest_clear() {
        let mut s = SnSet::new(10);
        assert_eq!(s.highest_clear(100), None);
        s.insert(10);
        s.insert(12);
        assert_eq!(s.num_bits(), 3);
        assert_eq!(s.highest_clear(100), Some(11));
        s.extend_to(15);
        assert_eq!(s.num_bits(), 6);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![10, 12]);
        assert_eq!(s.highest_clear(100), Some(15));
        assert_eq!(s.highest_clear(14), Some(14));
        assert_eq!(s.highest_clear(10), None);
        assert_eq!(s.highest_clear(9), None);
        s.extend_to(1000);
        assert_eq!(s.num_bits(), 256);
        s.extend_to(5);
        assert_eq!(s.num_bits(), 256);
        let full = SnSet::from_wire(1, 2, [u32::MAX; 8]).unwrap();
        assert_eq!(full.highest_clear(100), None);
    }

    #[test]
    fn base_never_zero() {
        assert_eq!(SnSet::new(0).base(), 1);
        assert_eq!(SnSet::new(-4).base(), 1);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// The set behaves like a `BTreeSet` restricted to its window.
            #[test]
            fn matches_a_model(base in 1i64..1000, sns in proptest::collection::vec(0i64..1400, 0..100)) {
                let mut s = SnSet::new(base);
                let mut model = std::collections::BTreeSet::new();
                for sn in sns {
                    let fits = sn >= base && sn < base + 256;
                    prop_assert_eq!(s.insert(sn), fits);
                    if fits {
                        model.insert(sn);
                    }
                }
                prop_assert_eq!(s.iter().collect::<Vec<_>>(), model.iter().copied().collect::<Vec<_>>());
                for sn in base - 1..base + 257 {
                    prop_assert_eq!(s.contains(sn), model.contains(&sn));
                }
                // Wire round trip.
                let mut words = [0u32; 8];
                words[..s.words().len()].copy_from_slice(s.words());
                prop_assert_eq!(SnSet::from_wire(s.base(), s.num_bits(), words), Some(s));
            }
        }
    }
}
