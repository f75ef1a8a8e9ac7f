//! Non-generic per-endpoint state shared between the runtime threads and the typed
//! [`crate::DataWriter`] / [`crate::DataReader`] handles:
//!
//! - [`reader`]: a reader's statuses, DATA_AVAILABLE flag, listener and wait sets (its
//!   samples live in the engine's reader cache, taken by [`crate::DataReader`]);
//! - [`writer`]: a writer's statuses, the generations blocked writes wait on, listener
//!   and wait sets;
//! - [`signal`]: wait-set wake-ups and listener isolation (a panicking listener is
//!   logged, not propagated into a runtime thread).
//!
//! The runtime applies engine events here with no engine lock held.

pub(crate) mod reader;
pub(crate) mod signal;
pub(crate) mod writer;

pub(crate) use reader::ReaderShared;
pub(crate) use signal::{WaitSetSignal, Waiters};
pub(crate) use writer::WriterShared;
