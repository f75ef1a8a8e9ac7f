//! Capture timestamps.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A capture timestamp: nanoseconds since the Unix epoch (UTC).
///
/// Built from a [`SystemTime`] (saturating: times before the epoch become
/// the epoch, times after year 2554 become the largest value), from a
/// [`Duration`] since the epoch, or from raw nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The timestamp `nanos` nanoseconds after the Unix epoch.
    pub const fn from_nanos(nanos: u64) -> Self {
        Self(nanos)
    }

    /// The current wall-clock time.
    pub fn now() -> Self {
        SystemTime::now().into()
    }

    /// Nanoseconds since the Unix epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The same instant as a [`SystemTime`].
    pub fn to_system_time(self) -> SystemTime {
        UNIX_EPOCH + Duration::from_nanos(self.0)
    }
}

impl From<SystemTime> for Timestamp {
    fn from(t: SystemTime) -> Self {
        match t.duration_since(UNIX_EPOCH) {
            Ok(d) => d.into(),
            Err(_) => Self(0),
        }
    }
}

impl From<Duration> for Timestamp {
    fn from(d: Duration) -> Self {
        Self(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl From<Timestamp> for SystemTime {
    fn from(t: Timestamp) -> Self {
        t.to_system_time()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_time_round_trips_at_nanosecond_precision() {
        let t = UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
        let ts = Timestamp::from(t);
        assert_eq!(ts.as_nanos(), 1_700_000_000_123_456_789);
        assert_eq!(ts.to_system_time(), t);
    }

    #[test]
    fn before_epoch_saturates_to_zero() {
        let t = UNIX_EPOCH - Duration::from_secs(5);
        assert_eq!(Timestamp::from(t), Timestamp::from_nanos(0));
    }

    #[test]
    fn huge_duration_saturates() {
        let d = Duration::from_secs(u64::MAX);
        assert_eq!(Timestamp::from(d).as_nanos(), u64::MAX);
    }

    #[test]
    fn now_is_after_2020() {
        assert!(Timestamp::now().as_nanos() > 1_577_836_800_000_000_000);
    }
}
