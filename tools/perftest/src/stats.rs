//! Latency and throughput statistics (spec 1.7 and 1.9).
//!
//! Latency values are one-way microseconds (round-trip / 2, integer division). The
//! standard deviation is the population one, `sqrt(sumsq/count - mean²)`, and
//! percentiles are exact: the sorted values indexed at `floor(count × p)`.

use std::time::Instant;

/// Summary of a latency run for one data size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencySummary {
    /// Sample size (`-dataLen`).
    pub data_len: u64,
    /// Number of latency values.
    pub count: u64,
    /// Mean (µs).
    pub ave: f64,
    /// Population standard deviation (µs).
    pub std: f64,
    /// Minimum (µs).
    pub min: u64,
    /// Maximum (µs).
    pub max: u64,
    /// 50th percentile.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.99th percentile.
    pub p9999: u64,
    /// 99.9999th percentile.
    pub p999999: u64,
    /// CPU usage (%), when measured.
    pub cpu: Option<f64>,
}

/// One latency interval row: the current value and the running statistics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyInterval {
    /// Sample size (`-dataLen`).
    pub data_len: u64,
    /// This pong's one-way latency (µs).
    pub latency: u64,
    /// Running mean.
    pub ave: f64,
    /// Running population standard deviation.
    pub std: f64,
    /// Running minimum.
    pub min: u64,
    /// Running maximum.
    pub max: u64,
    /// CPU usage (%), when measured.
    pub cpu: Option<f64>,
}

/// Running latency statistics with every value kept for exact percentiles.
#[derive(Debug, Clone)]
pub struct LatencyStats {
    values: Vec<u32>,
    capacity: usize,
    count: u64,
    sum: u128,
    sumsq: u128,
    min: u64,
    max: u64,
    overflowed: u64,
}

impl LatencyStats {
    /// Statistics that keep up to `capacity` values; up to `prealloc` are allocated now, and
    /// their memory touched, so that storing them during the run neither takes page faults on
    /// the measured path nor shows as memory growth (a soak's RSS stays flat).
    pub fn new(capacity: usize, prealloc: usize) -> Self {
        let n = prealloc.min(capacity);
        let mut values = Vec::with_capacity(n);
        // (Not zeros: `vec![0; n]` would come from calloc, whose pages stay untouched.)
        values.resize(n, u32::MAX);
        std::hint::black_box(&mut values);
        values.clear();
        LatencyStats {
            values,
            capacity,
            count: 0,
            sum: 0,
            sumsq: 0,
            min: u64::MAX,
            max: 0,
            overflowed: 0,
        }
    }

    /// Forgets all values (new data size).
    pub fn reset(&mut self) {
        self.values.clear();
        self.count = 0;
        self.sum = 0;
        self.sumsq = 0;
        self.min = u64::MAX;
        self.max = 0;
        self.overflowed = 0;
    }

    /// Adds one one-way latency in µs. Returns false (and does not store it for the
    /// percentiles) when the array is full ("Too many latency pongs received").
    pub fn add(&mut self, us: u64) -> bool {
        self.count += 1;
        self.sum += u128::from(us);
        self.sumsq += u128::from(us) * u128::from(us);
        self.min = self.min.min(us);
        self.max = self.max.max(us);
        if self.values.len() < self.capacity {
            self.values.push(u32::try_from(us).unwrap_or(u32::MAX));
            true
        } else {
            self.overflowed += 1;
            false
        }
    }

    /// Number of values added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Values in arrival order (for `-latencyFile`).
    pub fn values(&self) -> &[u32] {
        &self.values
    }

    /// Mean, or 0 with no values.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Population standard deviation, or 0 with no values.
    pub fn std(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let n = self.count as f64;
        let mean = self.sum as f64 / n;
        let var = self.sumsq as f64 / n - mean * mean;
        if var > 0.0 {
            var.sqrt()
        } else {
            0.0
        }
    }

    /// Minimum, or 0 with no values.
    pub fn min(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    /// Maximum.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The interval row for the value just added.
    pub fn interval(&self, data_len: u64, latency: u64) -> LatencyInterval {
        LatencyInterval {
            data_len,
            latency,
            ave: self.mean(),
            std: self.std(),
            min: self.min(),
            max: self.max(),
            cpu: None,
        }
    }

    /// The summary, sorting a copy of the values for the percentiles.
    pub fn summary(&self, data_len: u64) -> LatencySummary {
        let mut sorted = self.values.clone();
        sorted.sort_unstable();
        let n = sorted.len();
        let at = |idx: usize| -> u64 {
            if n == 0 {
                0
            } else {
                u64::from(sorted[idx.min(n - 1)])
            }
        };
        LatencySummary {
            data_len,
            count: self.count,
            ave: self.mean(),
            std: self.std(),
            min: self.min(),
            max: self.max(),
            p50: at(n * 50 / 100),
            p90: at(n * 90 / 100),
            p99: at(n * 99 / 100),
            p9999: at((n as f64 * 0.9999) as usize),
            p999999: at((n as f64 * 0.999999) as usize),
            cpu: None,
        }
    }
}

/// One-way latency from a stamped 64-bit microsecond send time split into
/// (`timestamp_sec` = high 32 bits, `timestamp_usec` = low 32 bits). `None` when the
/// clock went backwards ("clock skew").
pub fn one_way_latency(now_us: u64, timestamp_sec: i32, timestamp_usec: u32) -> Option<u64> {
    let sent = (u64::from(timestamp_sec as u32) << 32) | u64::from(timestamp_usec);
    now_us.checked_sub(sent).map(|rtt| rtt / 2)
}

/// Splits a microsecond time into the (`timestamp_sec`, `timestamp_usec`) fields.
pub fn split_timestamp(us: u64) -> (i32, u32) {
    ((us >> 32) as u32 as i32, us as u32)
}

/// Per-publisher loss tracking by sequence number (spec 1.9), wrap-safe on the 32-bit field.
///
/// Unlike RTI Perftest, "nothing received yet" is tracked explicitly instead of by a
/// zero sequence number, so a gap right after sequence 0 (or after the wrap) is counted.
#[derive(Debug, Clone)]
pub struct LossTracker {
    last: Vec<Option<u32>>,
    lost: u64,
}

impl LossTracker {
    /// Tracks `num_publishers` publishers (entity ids 0..n-1; others are ignored).
    pub fn new(num_publishers: usize) -> Self {
        LossTracker {
            last: vec![None; num_publishers],
            lost: 0,
        }
    }

    /// Resets for a new data size.
    pub fn reset(&mut self) {
        self.last.iter_mut().for_each(|l| *l = None);
        self.lost = 0;
    }

    /// Records a data sample `seq` from publisher `entity_id`.
    pub fn on_sample(&mut self, entity_id: i32, seq: u32) {
        let Some(last) = usize::try_from(entity_id)
            .ok()
            .and_then(|i| self.last.get_mut(i))
        else {
            return;
        };
        if let Some(prev) = *last {
            let expected = prev.wrapping_add(1);
            // Signed distance on the 32-bit field: forward gaps count, backward jumps
            // and duplicates do not, and the wrap from u32::MAX to 0 is continuous.
            let gap = seq.wrapping_sub(expected) as i32;
            if gap > 0 {
                self.lost += gap as u64;
            }
        }
        *last = Some(seq);
    }

    /// Adds the tail gap when publisher `entity_id` announces it finished after sending
    /// `last_seq`.
    pub fn on_finished(&mut self, entity_id: i32, last_seq: u32) {
        let Some(last) = usize::try_from(entity_id)
            .ok()
            .and_then(|i| self.last.get(i).copied())
        else {
            return;
        };
        // With nothing received from this publisher there is no reference point (the
        // FINISHED sample cannot tell "sent nothing" from "sent only sequence 0").
        let Some(last) = last else {
            return;
        };
        let gap = last_seq.wrapping_sub(last) as i32;
        if gap > 0 {
            self.lost += gap as u64;
        }
    }

    /// Samples counted as lost.
    pub fn lost(&self) -> u64 {
        self.lost
    }
}

/// One throughput interval row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThroughputInterval {
    /// Sample size.
    pub data_len: u64,
    /// Cumulative samples for this size.
    pub total_samples: u64,
    /// Samples/s in this interval.
    pub samples_per_sec: u64,
    /// Mean of the per-interval samples/s.
    pub avg_samples_per_sec: f64,
    /// Mbps in this interval.
    pub mbps: f64,
    /// Mean of the per-interval Mbps.
    pub avg_mbps: f64,
    /// Cumulative lost samples.
    pub lost: u64,
    /// Lost percentage.
    pub lost_percent: f64,
    /// CPU usage (%), when measured.
    pub cpu: Option<f64>,
}

/// Throughput summary for one size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThroughputSummary {
    /// Sample size.
    pub data_len: u64,
    /// Samples received.
    pub total_samples: u64,
    /// Samples/s over the whole run (integer).
    pub samples_per_sec: u64,
    /// Mbps over the whole run.
    pub mbps: f64,
    /// Lost samples.
    pub lost: u64,
    /// Lost percentage.
    pub lost_percent: f64,
    /// CPU usage (%), when measured.
    pub cpu: Option<f64>,
}

/// `lost × 100 / (received + lost)`, 0 when both are 0.
pub fn lost_percent(received: u64, lost: u64) -> f64 {
    let total = received + lost;
    if total == 0 {
        0.0
    } else {
        lost as f64 * 100.0 / total as f64
    }
}

/// Subscriber-side counters for one data size.
#[derive(Debug, Clone)]
pub struct ThroughputStats {
    /// Sample size of the current run (0 before the first sample).
    pub data_len: u64,
    /// Samples received.
    pub packets: u64,
    /// Bytes received (`dataLen` per sample).
    pub bytes: u64,
    /// Time of the first sample.
    pub begin: Option<Instant>,
    /// Loss tracker.
    pub loss: LossTracker,
    last_packets: u64,
    last_bytes: u64,
    last_time: Option<Instant>,
    intervals: u64,
    sum_rate: f64,
    sum_mbps: f64,
}

impl ThroughputStats {
    /// Counters for `num_publishers` publishers.
    pub fn new(num_publishers: usize) -> Self {
        ThroughputStats {
            data_len: 0,
            packets: 0,
            bytes: 0,
            begin: None,
            loss: LossTracker::new(num_publishers),
            last_packets: 0,
            last_bytes: 0,
            last_time: None,
            intervals: 0,
            sum_rate: 0.0,
            sum_mbps: 0.0,
        }
    }

    /// Starts a new size at `now`.
    pub fn reset(&mut self, data_len: u64, now: Instant) {
        self.data_len = data_len;
        self.packets = 0;
        self.bytes = 0;
        self.begin = Some(now);
        self.loss.reset();
        self.last_packets = 0;
        self.last_bytes = 0;
        self.last_time = Some(now);
        self.intervals = 0;
        self.sum_rate = 0.0;
        self.sum_mbps = 0.0;
    }

    /// Counts one data sample.
    pub fn on_sample(&mut self, entity_id: i32, seq: u32) {
        self.packets += 1;
        self.bytes += self.data_len;
        self.loss.on_sample(entity_id, seq);
    }

    /// Computes the interval row at `now`, or `None` if nothing arrived since the last one
    /// or no time passed.
    pub fn interval(&mut self, now: Instant) -> Option<ThroughputInterval> {
        let last_time = self.last_time?;
        let dt = now.saturating_duration_since(last_time).as_micros() as u64;
        let dp = self.packets - self.last_packets;
        let db = self.bytes - self.last_bytes;
        if self.packets == 0 || dt == 0 {
            return None;
        }
        self.last_time = Some(now);
        self.last_packets = self.packets;
        self.last_bytes = self.bytes;
        let rate = dp as f64 * 1e6 / dt as f64;
        let mbps = db as f64 * 1e6 / dt as f64 * 8.0 / 1e6;
        self.intervals += 1;
        self.sum_rate += rate;
        self.sum_mbps += mbps;
        let lost = self.loss.lost();
        Some(ThroughputInterval {
            data_len: self.data_len,
            total_samples: self.packets,
            samples_per_sec: rate as u64,
            avg_samples_per_sec: self.sum_rate / self.intervals as f64,
            mbps,
            avg_mbps: self.sum_mbps / self.intervals as f64,
            lost,
            lost_percent: lost_percent(self.packets, lost),
            cpu: None,
        })
    }

    /// The summary at `now` (zeros when nothing arrived).
    pub fn summary(&self, now: Instant) -> ThroughputSummary {
        let lost = self.loss.lost();
        let dt = self
            .begin
            .map_or(0, |b| now.saturating_duration_since(b).as_micros() as u64);
        let (rate, mbps) = if dt == 0 || self.packets == 0 {
            (0, 0.0)
        } else {
            (
                (self.packets as f64 * 1e6 / dt as f64) as u64,
                self.bytes as f64 * 1e6 / dt as f64 * 8.0 / 1e6,
            )
        };
        ThroughputSummary {
            data_len: self.data_len,
            total_samples: self.packets,
            samples_per_sec: rate,
            mbps,
            lost,
            lost_percent: lost_percent(self.packets, lost),
            cpu: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn latency_statistics_are_exact() {
        let mut s = LatencyStats::new(100, 100);
        for v in 1..=10u64 {
            assert!(s.add(v));
        }
        let sum = s.summary(100);
        assert_eq!(sum.count, 10);
        assert_eq!(sum.ave, 5.5);
        assert!((sum.std - 8.25f64.sqrt()).abs() < 1e-9);
        assert_eq!((sum.min, sum.max), (1, 10));
        // floor-index percentiles on the sorted array: idx 5, 9, 9, 9, 9.
        assert_eq!(
            (sum.p50, sum.p90, sum.p99, sum.p9999, sum.p999999),
            (6, 10, 10, 10, 10)
        );
        s.reset();
        assert_eq!(s.summary(100).count, 0);
        assert_eq!(s.summary(100).min, 0);
        assert_eq!(s.std(), 0.0);
    }

    #[test]
    fn latency_capacity_is_bounded() {
        let mut s = LatencyStats::new(2, 0);
        assert!(s.add(5));
        assert!(s.add(6));
        assert!(!s.add(7));
        assert_eq!(s.values(), &[5, 6]);
        assert_eq!(s.count(), 3);
        assert_eq!(s.max(), 7);
    }

    #[test]
    fn rtt_halves_and_skew() {
        let sent = (7u64 << 32) + 100;
        let (hi, lo) = split_timestamp(sent);
        assert_eq!((hi, lo), (7, 100));
        assert_eq!(one_way_latency(sent + 81, hi, lo), Some(40));
        assert_eq!(one_way_latency(sent - 1, hi, lo), None);
    }

    #[test]
    fn loss_counts_forward_gaps_only() {
        let mut l = LossTracker::new(2);
        l.on_sample(0, 1); // first: last = 1
        l.on_sample(0, 2);
        l.on_sample(0, 5); // lost 3, 4
        assert_eq!(l.lost(), 2);
        l.on_sample(0, 3); // backwards: ignored
        l.on_sample(0, 3); // duplicate: ignored
        assert_eq!(l.lost(), 2);
        l.on_sample(1, 10);
        l.on_finished(1, 12); // tail gap 11, 12
        assert_eq!(l.lost(), 4);
        l.on_sample(7, 100); // unknown publisher ignored
        assert_eq!(l.lost(), 4);
    }

    #[test]
    fn loss_handles_sequence_wrap() {
        let mut l = LossTracker::new(1);
        l.on_sample(0, u32::MAX - 1);
        l.on_sample(0, u32::MAX);
        l.on_sample(0, 0);
        l.on_sample(0, 2); // 1 lost
        assert_eq!(l.lost(), 1);
    }

    #[test]
    fn throughput_rates() {
        let t0 = Instant::now();
        let mut t = ThroughputStats::new(1);
        assert!(t.interval(t0).is_none());
        let empty = t.summary(t0);
        assert_eq!((empty.total_samples, empty.samples_per_sec), (0, 0));
        t.reset(100, t0);
        for seq in 1..=1000 {
            t.on_sample(0, seq);
        }
        let i = t.interval(t0 + Duration::from_secs(1)).unwrap();
        assert_eq!(i.samples_per_sec, 1000);
        assert!((i.mbps - 0.8).abs() < 1e-9);
        for seq in 1001..=4000 {
            t.on_sample(0, seq);
        }
        let i = t.interval(t0 + Duration::from_secs(2)).unwrap();
        assert_eq!(i.samples_per_sec, 3000);
        assert_eq!(i.avg_samples_per_sec, 2000.0);
        assert_eq!(i.total_samples, 4000);
        let s = t.summary(t0 + Duration::from_secs(2));
        assert_eq!(s.samples_per_sec, 2000);
        assert_eq!(lost_percent(0, 0), 0.0);
        assert_eq!(lost_percent(75, 25), 25.0);
    }
}
