//! Drives two DATA_FRAG reassemblers (sharing one participant budget) with an
//! arbitrary sequence of fragments, sequence-number drops, time steps and
//! NACK_FRAG queries decoded from the input.
//!
//! Properties checked on top of "never panics":
//! - bytes charged per reassembler never exceed `max_bytes_per_writer`, the
//!   shared budget never exceeds `max_bytes_total`, and the budget always
//!   equals the sum of what the live reassemblers hold;
//! - the number of incomplete samples never exceeds `max_samples_per_writer`;
//! - every fragment byte is a function of (SN, absolute offset), so a
//!   completed sample must have exactly `sample_size` bytes, each equal to that
//!   function, however fragments overlapped or repeated;
//! - NACK_FRAG sets start at a missing fragment >= 1 and stay within 256 bits;
//! - dropping the reassemblers releases the whole budget.
#![no_main]

use core::time::Duration;

use ferrodds_rtps::reassembly::{FragmentRef, Reassembler, ReassemblyBudget, ReassemblyLimits};
use ferrodds_rtps::Timestamp;
use libfuzzer_sys::fuzz_target;

const LIMITS: ReassemblyLimits = ReassemblyLimits {
    max_sample_size: 1 << 20,
    max_bytes_per_writer: 300_000,
    max_bytes_total: 450_000,
    max_samples_per_writer: 6,
    best_effort_timeout: Duration::from_millis(50),
};

fn byte(sn: i64, pos: u64) -> u8 {
    (pos.wrapping_mul(131) ^ (sn as u64).wrapping_mul(7)) as u8
}

/// `byte(sn, pos)` repeats every 256 positions: one period per SN (0..16), so fragments are
/// built and completed samples checked with slice copies and comparisons instead of a call
/// per byte (which made long inputs cost milliseconds in the harness alone).
fn periods() -> &'static [[u8; 256]; 16] {
    static P: std::sync::OnceLock<[[u8; 256]; 16]> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let mut p = [[0u8; 256]; 16];
        for (sn, row) in p.iter_mut().enumerate() {
            for (pos, b) in row.iter_mut().enumerate() {
                *b = byte(sn as i64, pos as u64);
            }
        }
        p
    })
}

/// Appends `byte(sn, pos)` for `pos` in `offset..offset + len` to `out`.
fn fill(out: &mut Vec<u8>, sn: i64, offset: u64, len: usize) {
    let row = &periods()[sn as usize];
    let mut start = (offset % 256) as usize;
    let mut left = len;
    while left > 0 {
        let k = left.min(256 - start);
        out.extend_from_slice(&row[start..start + k]);
        left -= k;
        start = 0;
    }
}

/// Whether `payload` is `byte(sn, pos)` for `pos` in `0..payload.len()`.
fn matches_pattern(payload: &[u8], sn: i64) -> bool {
    let row = &periods()[sn as usize];
    payload.chunks(256).all(|c| c == &row[..c.len()])
}

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> Option<u8> {
        let (b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*b)
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from(self.u8()?) << 8 | u16::from(self.u8()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from(self.u16()?) << 16 | u32::from(self.u16()?))
    }
}

fuzz_target!(|data: &[u8]| {
    let budget = ReassemblyBudget::new();
    let mut rs = [
        Reassembler::new(LIMITS, budget.clone()),
        Reassembler::new(LIMITS, budget.clone()),
    ];
    let mut input = Input(data);
    let mut now = Timestamp(1);
    let mut buf = Vec::new();
    while let Some(op) = input.u8() {
        let which = usize::from(op & 1);
        match op >> 1 & 3 {
            0 | 1 => {
                // A DATA_FRAG.
                let (Some(sn), Some(fs), Some(size), Some(start), Some(count)) = (
                    input.u8(),
                    input.u16(),
                    input.u32(),
                    input.u16(),
                    input.u8(),
                ) else {
                    break;
                };
                let sn = i64::from(sn % 16);
                // Mostly plausible sizes, sometimes anything.
                let size = if op & 0x80 != 0 { size } else { size % 200_000 };
                let fs = if op & 0x40 != 0 { fs } else { fs % 4000 + 1 };
                let offset = u64::from(start) * u64::from(fs);
                let len = (usize::from(count) * usize::from(fs)).min(70_000);
                buf.clear();
                fill(&mut buf, sn, offset, len);
                let f = FragmentRef {
                    sn,
                    offset,
                    data: &buf,
                    sample_size: size,
                    fragment_size: fs,
                    meta: None,
                    source_timestamp: None,
                };
                let reliable = op & 0x20 != 0;
                if let Ok(Some(c)) = rs[which].add(&f, reliable, now) {
                    assert_eq!(c.sn, sn);
                    assert_eq!(c.payload.len(), size as usize);
                    if !matches_pattern(&c.payload, sn) {
                        let i = (0..c.payload.len())
                            .find(|&i| c.payload[i] != byte(sn, i as u64))
                            .unwrap_or(0);
                        panic!("byte {i} of SN {sn}");
                    }
                }
            }
            2 => {
                let Some(x) = input.u8() else { break };
                if x & 0x80 != 0 {
                    rs[which].drop_below(i64::from(x % 16));
                } else {
                    now = now.saturating_add(Duration::from_millis(u64::from(x)));
                    let cut = Timestamp(now.0.saturating_sub(50_000_000));
                    rs[which].drop_started_before(cut);
                }
            }
            _ => {
                let (Some(sn), Some(upto)) = (input.u8(), input.u32()) else {
                    break;
                };
                let sn = i64::from(sn % 16);
                if let Some((base, bits, n)) = rs[which].missing(sn, upto) {
                    assert!(base >= 1 && base <= upto);
                    assert!(n >= 1 && n <= 256);
                    assert!(bits[0] & 0x8000_0000 != 0, "base is missing");
                    let total = rs[which].fragment_count(sn).unwrap();
                    assert!(base - 1 + n <= total);
                } else if op & 0x80 != 0 {
                    rs[which].clear();
                }
            }
        }
        for r in &rs {
            assert!(r.bytes() <= LIMITS.max_bytes_per_writer);
            assert!(r.len() <= LIMITS.max_samples_per_writer);
        }
        assert!(budget.used() <= LIMITS.max_bytes_total);
        assert_eq!(budget.used(), rs[0].bytes() + rs[1].bytes());
    }
    drop(rs);
    assert_eq!(budget.used(), 0);
});
