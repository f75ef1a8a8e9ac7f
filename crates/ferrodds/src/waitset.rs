//! [`WaitSet`] and its attachable conditions.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferrodds_rtps::ReaderId;

use crate::entity::{ReaderShared, WaitSetSignal, Waiters, WriterShared};
use crate::error::{DdsError, DdsResult};
use crate::runtime::Inner;
use crate::status::StatusMask;
use crate::sync::{lock, wait_timeout, Deadline};

/// Triggers while its reader has samples that were not read yet.
#[derive(Clone)]
pub struct ReadCondition {
    inner: Arc<Inner>,
    id: ReaderId,
    reader: Arc<ReaderShared>,
}

impl ReadCondition {
    pub(crate) fn new(inner: Arc<Inner>, id: ReaderId, reader: Arc<ReaderShared>) -> Self {
        Self { inner, id, reader }
    }

    /// Whether the condition is triggered now (the reader's cache, in the engine, holds a
    /// sample not read yet).
    pub fn trigger_value(&self) -> bool {
        self.inner.reader_has_unread(self.id)
    }
}

#[derive(Clone)]
enum StatusEntity {
    Reader(Arc<ReaderShared>),
    Writer(Arc<WriterShared>),
}

/// Triggers while one of its enabled statuses changed and was not read since.
#[derive(Clone)]
pub struct StatusCondition {
    entity: StatusEntity,
    enabled: Arc<AtomicU32>,
}

impl StatusCondition {
    pub(crate) fn for_reader(r: Arc<ReaderShared>) -> Self {
        Self {
            entity: StatusEntity::Reader(r),
            enabled: Arc::new(AtomicU32::new(StatusMask::ALL.0)),
        }
    }

    pub(crate) fn for_writer(w: Arc<WriterShared>) -> Self {
        Self {
            entity: StatusEntity::Writer(w),
            enabled: Arc::new(AtomicU32::new(StatusMask::ALL.0)),
        }
    }

    /// Restricts the statuses this condition looks at.
    pub fn set_enabled_statuses(&self, mask: StatusMask) {
        self.enabled.store(mask.0, Ordering::Release);
    }

    /// The statuses this condition looks at.
    pub fn enabled_statuses(&self) -> StatusMask {
        StatusMask(self.enabled.load(Ordering::Acquire))
    }

    /// Whether the condition is triggered now.
    pub fn trigger_value(&self) -> bool {
        let changed = match &self.entity {
            StatusEntity::Reader(r) => r.changed(),
            StatusEntity::Writer(w) => w.changed(),
        };
        changed.intersects(self.enabled_statuses())
    }

    fn waiters(&self) -> &Waiters {
        match &self.entity {
            StatusEntity::Reader(r) => &r.waiters,
            StatusEntity::Writer(w) => &w.waiters,
        }
    }
}

#[derive(Default)]
struct GuardInner {
    value: AtomicBool,
    waiters: Waiters,
}

/// A condition triggered by the application.
#[derive(Clone, Default)]
pub struct GuardCondition {
    inner: Arc<GuardInner>,
}

impl GuardCondition {
    /// A new, untriggered guard condition.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the trigger value (waking attached wait sets when set).
    pub fn set_trigger_value(&self, v: bool) {
        self.inner.value.store(v, Ordering::Release);
        if v {
            self.inner.waiters.notify();
        }
    }

    /// Whether the condition is triggered now.
    pub fn trigger_value(&self) -> bool {
        self.inner.value.load(Ordering::Acquire)
    }
}

/// Anything a [`WaitSet`] can wait on.
#[derive(Clone)]
#[non_exhaustive]
pub enum Condition {
    /// Unread data on a reader.
    Read(ReadCondition),
    /// Status changes on an entity.
    Status(StatusCondition),
    /// Application-triggered.
    Guard(GuardCondition),
}

impl Condition {
    /// Whether the condition is triggered now.
    pub fn trigger_value(&self) -> bool {
        match self {
            Self::Read(c) => c.trigger_value(),
            Self::Status(c) => c.trigger_value(),
            Self::Guard(c) => c.trigger_value(),
        }
    }

    fn waiters(&self) -> &Waiters {
        match self {
            Self::Read(c) => &c.reader.waiters,
            Self::Status(c) => c.waiters(),
            Self::Guard(c) => &c.inner.waiters,
        }
    }

    fn same_as(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Read(a), Self::Read(b)) => Arc::ptr_eq(&a.reader, &b.reader),
            (Self::Status(a), Self::Status(b)) => Arc::ptr_eq(&a.enabled, &b.enabled),
            (Self::Guard(a), Self::Guard(b)) => Arc::ptr_eq(&a.inner, &b.inner),
            _ => false,
        }
    }
}

impl From<ReadCondition> for Condition {
    fn from(c: ReadCondition) -> Self {
        Self::Read(c)
    }
}
impl From<StatusCondition> for Condition {
    fn from(c: StatusCondition) -> Self {
        Self::Status(c)
    }
}
impl From<GuardCondition> for Condition {
    fn from(c: GuardCondition) -> Self {
        Self::Guard(c)
    }
}

/// Blocks a thread until one of the attached conditions triggers.
pub struct WaitSet {
    signal: Arc<WaitSetSignal>,
    conditions: Vec<Condition>,
}

impl Default for WaitSet {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitSet {
    /// An empty wait set.
    pub fn new() -> Self {
        Self {
            signal: Arc::new(WaitSetSignal::default()),
            conditions: Vec::new(),
        }
    }

    /// Attaches a condition (attaching the same condition twice is a no-op).
    pub fn attach_condition(&mut self, c: impl Into<Condition>) {
        let c = c.into();
        if self.conditions.iter().any(|x| x.same_as(&c)) {
            return;
        }
        c.waiters().attach(&self.signal);
        self.conditions.push(c);
    }

    /// Detaches a condition; `BadParameter` if it was not attached.
    pub fn detach_condition(&mut self, c: impl Into<Condition>) -> DdsResult<()> {
        let c = c.into();
        let Some(pos) = self.conditions.iter().position(|x| x.same_as(&c)) else {
            return Err(DdsError::BadParameter {
                what: "condition is not attached",
            });
        };
        let c = self.conditions.remove(pos);
        c.waiters().detach(&self.signal);
        Ok(())
    }

    /// The attached conditions.
    pub fn conditions(&self) -> &[Condition] {
        &self.conditions
    }

    /// Waits until at least one attached condition is triggered and returns the triggered
    /// ones; [`DdsError::Timeout`] if none triggers within `timeout`.
    pub fn wait(&self, timeout: Duration) -> DdsResult<Vec<Condition>> {
        let deadline = Deadline::after(timeout);
        loop {
            let generation = *lock(&self.signal.generation);
            let active: Vec<Condition> = self
                .conditions
                .iter()
                .filter(|c| c.trigger_value())
                .cloned()
                .collect();
            if !active.is_empty() {
                return Ok(active);
            }
            let Some(left) = deadline.remaining() else {
                return Err(DdsError::Timeout);
            };
            let g = lock(&self.signal.generation);
            if *g == generation {
                // Bounded so that a condition changing without a notification (e.g. a
                // status read elsewhere) is still re-evaluated.
                drop(wait_timeout(
                    &self.signal.cv,
                    g,
                    left.min(Duration::from_millis(50)),
                ));
            }
        }
    }
}

impl Drop for WaitSet {
    fn drop(&mut self) {
        for c in &self.conditions {
            c.waiters().detach(&self.signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn guard_condition_wakes_waitset() {
        let g = GuardCondition::new();
        let mut ws = WaitSet::new();
        ws.attach_condition(g.clone());
        ws.attach_condition(g.clone());
        assert_eq!(ws.conditions().len(), 1);
        assert!(matches!(
            ws.wait(Duration::from_millis(20)),
            Err(DdsError::Timeout)
        ));
        let g2 = g.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            g2.set_trigger_value(true);
        });
        let start = Instant::now();
        let active = ws.wait(Duration::from_secs(5)).unwrap();
        assert_eq!(active.len(), 1);
        assert!(start.elapsed() < Duration::from_secs(2));
        t.join().unwrap();
        ws.detach_condition(g.clone()).unwrap();
        assert!(ws.detach_condition(g).is_err());
    }
}
