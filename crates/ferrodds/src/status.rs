//! Communication statuses, status masks and listener traits.

use ferrodds_rtps::Guid;

use crate::qos::QosPolicyId;

/// A set of status kinds (for [`crate::StatusCondition`] masks and status-change flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct StatusMask(pub u32);

impl StatusMask {
    /// No status.
    pub const NONE: Self = Self(0);
    /// `OFFERED_INCOMPATIBLE_QOS` (writer).
    pub const OFFERED_INCOMPATIBLE_QOS: Self = Self(1 << 5);
    /// `REQUESTED_INCOMPATIBLE_QOS` (reader).
    pub const REQUESTED_INCOMPATIBLE_QOS: Self = Self(1 << 6);
    /// `SAMPLE_LOST` (reader).
    pub const SAMPLE_LOST: Self = Self(1 << 7);
    /// `DATA_AVAILABLE` (reader).
    pub const DATA_AVAILABLE: Self = Self(1 << 10);
    /// `PUBLICATION_MATCHED` (writer).
    pub const PUBLICATION_MATCHED: Self = Self(1 << 13);
    /// `SUBSCRIPTION_MATCHED` (reader).
    pub const SUBSCRIPTION_MATCHED: Self = Self(1 << 14);
    /// Every status.
    pub const ALL: Self = Self(u32::MAX);

    /// Whether any kind of `other` is in `self`.
    pub const fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }
    /// `self ∪ other`.
    #[must_use]
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
    /// `self \ other`.
    #[must_use]
    pub const fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }
}

impl core::ops::BitOr for StatusMask {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        self.union(rhs)
    }
}

/// `PUBLICATION_MATCHED` status of a writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PublicationMatchedStatus {
    /// Readers ever matched.
    pub total_count: u32,
    /// Change of `total_count` since the status was last read.
    pub total_count_change: i32,
    /// Readers matched now.
    pub current_count: u32,
    /// Change of `current_count` since the status was last read.
    pub current_count_change: i32,
    /// The reader of the last change.
    pub last_subscription_handle: Option<Guid>,
}

/// `SUBSCRIPTION_MATCHED` status of a reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SubscriptionMatchedStatus {
    /// Writers ever matched.
    pub total_count: u32,
    /// Change of `total_count` since the status was last read.
    pub total_count_change: i32,
    /// Writers matched now.
    pub current_count: u32,
    /// Change of `current_count` since the status was last read.
    pub current_count_change: i32,
    /// The writer of the last change.
    pub last_publication_handle: Option<Guid>,
}

/// `OFFERED_INCOMPATIBLE_QOS` status of a writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OfferedIncompatibleQosStatus {
    /// Incompatible readers seen.
    pub total_count: u32,
    /// Change since last read.
    pub total_count_change: i32,
    /// The policy that failed last.
    pub last_policy_id: Option<QosPolicyId>,
}

/// `REQUESTED_INCOMPATIBLE_QOS` status of a reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestedIncompatibleQosStatus {
    /// Incompatible writers seen.
    pub total_count: u32,
    /// Change since last read.
    pub total_count_change: i32,
    /// The policy that failed last.
    pub last_policy_id: Option<QosPolicyId>,
}

/// `SAMPLE_LOST` status of a reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleLostStatus {
    /// Samples lost in total.
    pub total_count: u32,
    /// Change since last read.
    pub total_count_change: i32,
}

/// Callbacks of a [`crate::DataWriter`]. Called from a runtime thread (receive or event
/// thread) with no runtime lock held; keep them short. Every method has an empty default.
pub trait DataWriterListener: Send + Sync + 'static {
    /// The set of matched readers changed.
    fn on_publication_matched(&self, _status: &PublicationMatchedStatus) {}
    /// A reader requested QoS this writer does not offer.
    fn on_offered_incompatible_qos(&self, _status: &OfferedIncompatibleQosStatus) {}
}

/// Callbacks of a [`crate::DataReader`]. Called from a runtime thread (receive or event
/// thread) with no runtime lock held; keep them short. Every method has an empty default.
pub trait DataReaderListener: Send + Sync + 'static {
    /// New samples can be taken.
    fn on_data_available(&self) {}
    /// The set of matched writers changed.
    fn on_subscription_matched(&self, _status: &SubscriptionMatchedStatus) {}
    /// A writer does not offer the QoS this reader requests.
    fn on_requested_incompatible_qos(&self, _status: &RequestedIncompatibleQosStatus) {}
    /// Samples were lost.
    fn on_sample_lost(&self, _status: &SampleLostStatus) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_algebra() {
        let m = StatusMask::DATA_AVAILABLE | StatusMask::SUBSCRIPTION_MATCHED;
        assert!(m.intersects(StatusMask::DATA_AVAILABLE));
        assert!(!m.intersects(StatusMask::PUBLICATION_MATCHED));
        assert_eq!(
            m.without(StatusMask::DATA_AVAILABLE),
            StatusMask::SUBSCRIPTION_MATCHED
        );
        assert!(StatusMask::ALL.intersects(StatusMask::SAMPLE_LOST));
        assert!(!StatusMask::NONE.intersects(StatusMask::ALL));
    }
}
