//! Lock helpers shared by the runtime, the entities and the capture tap: poisoning is
//! recovered from (the runtime never leaves shared state half-updated across a panic
//! point it controls), so a panicking listener cannot wedge a participant.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Locks a mutex, recovering the data if a thread panicked while holding it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Waits on `cv` for at most `d`, recovering from poisoning.
pub(crate) fn wait_timeout<'a, T>(
    cv: &Condvar,
    g: MutexGuard<'a, T>,
    d: Duration,
) -> MutexGuard<'a, T> {
    match cv.wait_timeout(g, d) {
        Ok((g, _)) => g,
        Err(e) => e.into_inner().0,
    }
}

/// The longest single wait on a condition variable: a deadline further away (or none) is
/// waited for in steps of this.
const MAX_WAIT: Duration = Duration::from_secs(3600);

/// When a bounded wait ends: a timeout after the moment it was made, or never when the timeout
/// reaches beyond what [`Instant`] can represent (`Duration::MAX` means "infinite", as in the
/// engine). Adding such a timeout to `Instant::now()` would panic.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline(Option<Instant>);

impl Deadline {
    /// `timeout` from now.
    pub(crate) fn after(timeout: Duration) -> Self {
        Self(Instant::now().checked_add(timeout))
    }

    /// The time left to wait (at most an hour at a time), `None` once the deadline passed.
    pub(crate) fn remaining(&self) -> Option<Duration> {
        match self.0 {
            None => Some(MAX_WAIT),
            Some(d) => {
                let now = Instant::now();
                (now < d).then(|| (d - now).min(MAX_WAIT))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infinite_and_huge_timeouts_do_not_overflow() {
        for t in [Duration::MAX, Duration::from_secs(u64::MAX / 2)] {
            let d = Deadline::after(t);
            assert_eq!(d.remaining(), Some(MAX_WAIT));
        }
        let d = Deadline::after(Duration::from_secs(5));
        let left = d.remaining().unwrap();
        assert!(left <= Duration::from_secs(5) && left > Duration::from_secs(4));
        assert_eq!(Deadline::after(Duration::ZERO).remaining(), None);
    }
}
