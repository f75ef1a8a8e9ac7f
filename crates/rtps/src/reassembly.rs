//! Reassembly of fragmented samples (DATA_FRAG, DDSI-RTPS 2.5 §8.4.14.1),
//! bounded in size and number.

use crate::api::ChangeKind;
use crate::Time;

/// Largest sample accepted for reassembly.
pub(crate) const MAX_SAMPLE_SIZE: u32 = 16 << 20;
/// Most bytes under reassembly per writer proxy.
pub(crate) const MAX_PARTIAL_BYTES: usize = 32 << 20;
/// Most fragments per sample.
const MAX_FRAGMENTS: u32 = 1 << 16;

/// A sample under reassembly.
#[derive(Debug, Clone)]
pub(crate) struct Partial {
    fragment_size: u16,
    data: Vec<u8>,
    have: Vec<u64>,
    missing: u32,
    pub(crate) kind: ChangeKind,
    pub(crate) key_hash: Option<[u8; 16]>,
    pub(crate) source_timestamp: Option<Time>,
}

impl Partial {
    /// A new reassembly buffer, `None` if the sizes are out of bounds.
    pub(crate) fn new(sample_size: u32, fragment_size: u16) -> Option<Self> {
        if sample_size == 0 || sample_size > MAX_SAMPLE_SIZE || fragment_size == 0 {
            return None;
        }
        let frags = sample_size.div_ceil(u32::from(fragment_size));
        if frags > MAX_FRAGMENTS {
            return None;
        }
        Some(Self {
            fragment_size,
            data: vec![0; sample_size as usize],
            have: vec![0; frags.div_ceil(64) as usize],
            missing: frags,
            kind: ChangeKind::Alive,
            key_hash: None,
            source_timestamp: None,
        })
    }

    /// Bytes held.
    pub(crate) fn size(&self) -> usize {
        self.data.len()
    }

    /// Whether a DATA_FRAG with these size fields belongs to this sample.
    pub(crate) fn fits(&self, sample_size: u32, fragment_size: u16) -> bool {
        self.data.len() == sample_size as usize && self.fragment_size == fragment_size
    }

    /// Copies fragment bytes starting at byte `offset` (a fragment boundary);
    /// returns true when the sample is complete.
    pub(crate) fn add(&mut self, offset: u64, bytes: &[u8]) -> bool {
        let fs = u64::from(self.fragment_size);
        if !offset.is_multiple_of(fs) {
            return self.missing == 0;
        }
        let mut pos = offset;
        let mut rest = bytes;
        while !rest.is_empty() {
            let Ok(start) = usize::try_from(pos) else {
                break;
            };
            if start >= self.data.len() {
                break;
            }
            let n = (fs as usize).min(self.data.len() - start);
            if rest.len() < n {
                break;
            }
            let idx = (pos / fs) as usize;
            let (w, b) = (idx / 64, idx % 64);
            if let Some(word) = self.have.get_mut(w) {
                if *word & (1 << b) == 0 {
                    *word |= 1 << b;
                    self.missing -= 1;
                    self.data[start..start + n].copy_from_slice(&rest[..n]);
                }
            }
            rest = &rest[n..];
            pos += fs;
        }
        self.missing == 0
    }

    /// The reassembled payload.
    pub(crate) fn into_payload(self) -> Vec<u8> {
        self.data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reassembles_out_of_order_with_short_last_fragment() {
        let sample: Vec<u8> = (0..2500u32).map(|i| i as u8).collect();
        let mut p = Partial::new(2500, 1000).unwrap();
        assert!(!p.add(2000, &sample[2000..]));
        assert!(!p.add(0, &sample[..1000]));
        assert!(!p.add(0, &sample[..1000]), "duplicate changes nothing");
        assert!(p.add(1000, &sample[1000..2000]));
        assert_eq!(p.into_payload(), sample);
    }

    #[test]
    fn several_fragments_in_one_submessage() {
        let sample = vec![7u8; 3000];
        let mut p = Partial::new(3000, 1000).unwrap();
        assert!(p.add(0, &sample));
    }

    #[test]
    fn bounds() {
        assert!(Partial::new(0, 10).is_none());
        assert!(Partial::new(MAX_SAMPLE_SIZE + 1, 1000).is_none());
        assert!(Partial::new(100_000, 1).is_none());
        let mut p = Partial::new(100, 10).unwrap();
        assert!(!p.add(5, &[0; 10]), "unaligned offset ignored");
        assert!(!p.add(200, &[0; 10]), "beyond the end ignored");
        assert!(!p.add(90, &[0; 5]), "short non-final fragment ignored");
        assert!(p.fits(100, 10) && !p.fits(100, 20));
    }
}
