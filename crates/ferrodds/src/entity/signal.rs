//! Wait-set signalling and listener isolation, shared by the reader and writer state.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};

use crate::sync::lock;

/// Wake-up point of one [`crate::WaitSet`].
#[derive(Debug, Default)]
pub(crate) struct WaitSetSignal {
    pub(crate) generation: Mutex<u64>,
    pub(crate) cv: Condvar,
}

impl WaitSetSignal {
    pub(crate) fn notify(&self) {
        *lock(&self.generation) += 1;
        self.cv.notify_all();
    }
}

/// Wait sets attached to an entity or condition.
#[derive(Debug, Default)]
pub(crate) struct Waiters {
    list: Mutex<Vec<Weak<WaitSetSignal>>>,
    /// `list.len()`, readable without the lock: a notification with no wait set attached
    /// (the common case on the per-sample path) is one atomic load. A wait set checks its
    /// conditions after attaching, so one attached concurrently misses nothing.
    attached: AtomicUsize,
}

impl Waiters {
    pub(crate) fn attach(&self, s: &Arc<WaitSetSignal>) {
        let mut v = lock(&self.list);
        v.retain(|w| w.strong_count() > 0);
        v.push(Arc::downgrade(s));
        self.attached.store(v.len(), Ordering::SeqCst);
    }
    pub(crate) fn detach(&self, s: &Arc<WaitSetSignal>) {
        let mut v = lock(&self.list);
        v.retain(|w| w.upgrade().is_some_and(|x| !Arc::ptr_eq(&x, s)));
        self.attached.store(v.len(), Ordering::SeqCst);
    }
    /// Wakes the attached wait sets. Inlined: the common case (none attached) is one
    /// atomic load at the call site.
    #[inline]
    pub(crate) fn notify(&self) {
        if self.attached.load(Ordering::SeqCst) != 0 {
            self.notify_attached();
        }
    }

    #[inline(never)]
    fn notify_attached(&self) {
        // Signals are notified under the list lock (lock order: list, then a signal's
        // generation; nothing takes them the other way round).
        for s in lock(&self.list).iter().filter_map(Weak::upgrade) {
            s.notify();
        }
    }
}

/// Calls a listener callback; a panicking listener is logged and does not take the
/// runtime thread down with it.
pub(super) fn call_listener(what: &'static str, f: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
        tracing::error!(callback = what, "listener panicked");
    }
}
