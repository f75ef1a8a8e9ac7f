//! Value types shared by the engine's modules: the wire value types
//! (re-exported from `ferrodds-wire`), time ([`Timestamp`]) and change kinds
//! ([`ChangeKind`]).

pub use ferrodds_wire::{EntityId, Guid, GuidPrefix, Locator, SequenceNumber, Time};

/// Monotonic time supplied by the caller, nanoseconds from an arbitrary origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// `self + d`, saturating.
    #[must_use]
    pub fn saturating_add(self, d: core::time::Duration) -> Timestamp {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Timestamp(self.0.saturating_add(ns))
    }

    /// Nanoseconds elapsed since `earlier` (0 if `earlier` is later).
    #[must_use]
    pub fn since(self, earlier: Timestamp) -> core::time::Duration {
        core::time::Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

/// Kind of a change (DDS instance state transitions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ChangeKind {
    /// A new value.
    #[default]
    Alive,
    /// The instance was disposed (STATUS_INFO 1).
    NotAliveDisposed,
    /// The instance was unregistered (STATUS_INFO 2).
    NotAliveUnregistered,
    /// Disposed and unregistered (STATUS_INFO 3).
    NotAliveDisposedUnregistered,
}

impl ChangeKind {
    /// The STATUS_INFO flags (0 for alive).
    #[must_use]
    pub fn status_info(self) -> u32 {
        match self {
            ChangeKind::Alive => 0,
            ChangeKind::NotAliveDisposed => 1,
            ChangeKind::NotAliveUnregistered => 2,
            ChangeKind::NotAliveDisposedUnregistered => 3,
        }
    }

    /// From STATUS_INFO flags (the filtered bit is ignored).
    #[must_use]
    pub fn from_status_info(flags: u32) -> Self {
        match flags & 3 {
            0 => ChangeKind::Alive,
            1 => ChangeKind::NotAliveDisposed,
            2 => ChangeKind::NotAliveUnregistered,
            _ => ChangeKind::NotAliveDisposedUnregistered,
        }
    }
}
