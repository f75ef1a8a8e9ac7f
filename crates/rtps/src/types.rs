//! Wire value types, re-exported from `ferrodds-wire`.

pub use ferrodds_wire::{EntityId, Guid, GuidPrefix, Locator, SequenceNumber, Time};
