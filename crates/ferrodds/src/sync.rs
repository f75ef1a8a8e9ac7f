//! Lock helpers shared by the runtime, the entities and the capture tap: poisoning is
//! recovered from (the runtime never leaves shared state half-updated across a panic
//! point it controls), so a panicking listener cannot wedge a participant.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

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
