//! Samples as returned by [`crate::DataReader`]: data plus [`SampleInfo`].

use ferrodds_rtps::{Guid, Time};

/// Identifies an instance: its 16-byte key hash (all zeros for unkeyed topics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct InstanceHandle(pub [u8; 16]);

impl InstanceHandle {
    /// The handle of the single instance of an unkeyed topic (and `HANDLE_NIL`).
    pub const NIL: Self = Self([0; 16]);
}

/// Whether a sample was already returned by [`crate::DataReader::read`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SampleState {
    /// Returned by an earlier `read`.
    Read,
    /// Not returned before.
    NotRead,
}

/// State of an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InstanceState {
    /// The instance is alive (written and not disposed).
    Alive,
    /// A writer disposed the instance.
    NotAliveDisposed,
    /// No writer is alive for the instance any more (unregistered or writer gone).
    NotAliveNoWriters,
}

/// Metadata of a received sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleInfo {
    /// Read or not read.
    pub sample_state: SampleState,
    /// State of the sample's instance as of the `read`/`take` (a later disposal,
    /// unregistration or the loss of the last matched writer updates samples still cached).
    pub instance_state: InstanceState,
    /// `true` when the sample carries data; `false` for dispose/unregister notifications.
    pub valid_data: bool,
    /// Source timestamp set by the writer (INFO_TS), if any.
    pub source_timestamp: Option<Time>,
    /// The instance (key hash).
    pub instance_handle: InstanceHandle,
    /// GUID of the writer that wrote the sample.
    pub publication_handle: Guid,
    /// The writer's sequence number of this sample.
    pub sequence_number: i64,
}

/// A sample returned by [`crate::DataReader::take`] or [`crate::DataReader::read`].
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<T> {
    /// The data, when [`SampleInfo::valid_data`] is `true`.
    pub data: Option<T>,
    /// Metadata.
    pub info: SampleInfo,
}

impl<T> Sample<T> {
    /// The data, if valid.
    pub fn data(&self) -> Option<&T> {
        self.data.as_ref()
    }
}
