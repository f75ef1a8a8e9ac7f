//! Sliding anti-replay window over the IV suffixes of one session (RFC 4303 §3.4.3 style,
//! with wrapping serial-number comparison of the 64-bit suffix).

use super::{CryptoError, Result};

/// Window width in IV suffixes.
pub(crate) const WIDTH: u64 = 128;

/// The newest suffix accepted and a bitmap of the [`WIDTH`] suffixes up to it (bit 0 = newest).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ReplayWindow {
    newest: u64,
    bitmap: u128,
    started: bool,
}

impl ReplayWindow {
    /// Whether `suffix` may be accepted (not seen, not older than the window).
    pub(crate) fn check(&self, session_id: u32, suffix: u64) -> Result<()> {
        if !self.started {
            return Ok(());
        }
        let ahead = suffix.wrapping_sub(self.newest);
        if ahead != 0 && ahead < 1 << 63 {
            return Ok(());
        }
        let behind = self.newest.wrapping_sub(suffix);
        if behind >= WIDTH {
            return Err(CryptoError::OutsideReplayWindow {
                session_id,
                iv_suffix: suffix,
                newest: self.newest,
            });
        }
        if self.bitmap & (1u128 << behind) != 0 {
            return Err(CryptoError::Replayed {
                session_id,
                iv_suffix: suffix,
            });
        }
        Ok(())
    }

    /// Records `suffix` (which passed [`Self::check`]).
    pub(crate) fn accept(&mut self, suffix: u64) {
        if !self.started {
            self.started = true;
            self.newest = suffix;
            self.bitmap = 1;
            return;
        }
        let ahead = suffix.wrapping_sub(self.newest);
        if ahead != 0 && ahead < 1 << 63 {
            self.bitmap = if ahead >= WIDTH {
                0
            } else {
                self.bitmap << ahead
            };
            self.bitmap |= 1;
            self.newest = suffix;
        } else {
            let behind = self.newest.wrapping_sub(suffix);
            if behind < WIDTH {
                self.bitmap |= 1u128 << behind;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_accepts_new_and_rejects_replays_and_old() {
        let mut w = ReplayWindow::default();
        for s in [10u64, 12, 11, 200] {
            w.check(1, s).unwrap();
            w.accept(s);
        }
        for s in [10u64, 11, 12, 200] {
            assert!(w.check(1, s).is_err(), "{s}");
        }
        assert!(matches!(
            w.check(1, 72),
            Err(CryptoError::OutsideReplayWindow { .. })
        ));
        w.check(1, 73).unwrap();
        w.check(1, 199).unwrap();
        w.check(1, 201).unwrap();
        // Wrapping: u64::MAX then 0 is "newer".
        let mut w = ReplayWindow::default();
        w.accept(u64::MAX);
        w.check(1, 0).unwrap();
        w.accept(0);
        assert!(w.check(1, u64::MAX).is_err());
        w.check(1, u64::MAX - 1).unwrap();
    }
}
