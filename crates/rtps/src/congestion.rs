//! Round-trip time estimation and the pacing / congestion control of a
//! participant's reliable traffic (new user data and repairs).
//!
//! **Round-trip time** ([`RttEstimator`]): a writer whose HEARTBEAT asks for an
//! acknowledgement remembers when and up to which SN; the first ACKNACK that
//! acknowledges that SN gives a sample (Karn's rule: a probe is forgotten when
//! the writer resends data, so a repair never gives a sample). Smoothed as in
//! RFC 6298 (`srtt`, `rttvar`). From it derive the retransmission timeout of
//! tail-loss probes ([`RttEstimator::rto`]), the reader's NACK hold-off and the
//! writer's repair suppression.
//!
//! **Pacing and congestion control** ([`Pacer`]): loss-tolerant AIMD on a
//! sending rate, with the decrease anchored on the measured goodput.
//! - Until the first congestion signal nothing is paced: an idle link and
//!   small samples see no change at all (no token check costs more than a
//!   branch).
//! - The pacer counts bytes sent (new data and repairs) and bytes lost (what
//!   readers newly ask to be repaired: SNs by ACKNACK, fragments by
//!   NACK_FRAG) over evaluation windows of at least [`MIN_WINDOW`] (and
//!   four smoothed round trips) and [`MIN_WINDOW_DATAGRAMS`] datagrams.
//! - A window that lost more than [`LOSS_TOLERANCE`] of its bytes is
//!   congestion: the rate becomes [`GOODPUT_SHARE`] of the window's goodput
//!   (bytes sent minus bytes lost, per second), but no less than
//!   [`MAX_DECREASE`] of the previous rate; then one window passes before the
//!   next decision, as the readers' NACKs for data sent before the decrease
//!   are still arriving.
//! - A window without congestion in which the sender used its rate grows the
//!   rate by [`GROWTH_PER_10MS`] per 10 ms unless the round trip shows a
//!   queue building ([`QUEUE_DELAY`]) (multiplicative, so the same
//!   dynamics hold on a 10 Mbit/s radio and a 10 Gbit/s loopback).
//! - Tokens refill at the rate, at most [`BURST`] worth of it (and at least
//!   one large datagram); a datagram may be sent while the balance is
//!   positive, so a paced link carries trains of a few datagrams at most.
//!
//! Why not plain AIMD on every loss: random loss (a radio, the 1 % of a
//! lossy link) is not congestion, and halving on each lost datagram on a
//! lossy link starves it (TCP Reno's `1/sqrt(p)`); a loss *rate* above the
//! tolerance is what a full bottleneck queue produces (tail drops of all
//! excess traffic), while 0.1–1 % random loss stays below it. Why anchor the
//! decrease on goodput: the first overload (an unpaced burst into a
//! 10 Mbit/s shaper) can exceed the link by 100×; halving would take seven
//! round trips of heavy loss, the goodput lands near the link rate at once.
//! Why delay is only a gate, not the controller: readers acknowledge only when
//! asked (every few milliseconds), which gives too few delay samples to track
//! a queue closely, and on loopback the "queue" is the receiver's socket
//! buffer, whose overflow shows as loss, not delay; a round trip more than
//! [`QUEUE_DELAY`] above the least one merely stops growth and makes any loss
//! count as congestion.

use crate::types::Timestamp;

/// Bytes lost beyond this share of the bytes sent in a window is congestion.
pub const LOSS_TOLERANCE: f64 = 0.05;
/// After congestion the rate is this share of the goodput measured.
pub const GOODPUT_SHARE: f64 = 0.9;
/// A decrease never goes below this share of the previous rate.
pub const MAX_DECREASE: f64 = 0.5;
/// Rate growth per 10 ms of pacing-limited sending without congestion.
pub const GROWTH_PER_10MS: f64 = 0.015;
/// Shortest evaluation window.
pub const MIN_WINDOW: u64 = 10_000_000;
/// Longest evaluation window (a slow sender still gets decisions).
pub const MAX_WINDOW: u64 = 250_000_000;
/// Datagrams a window must hold before it is judged (unless `MAX_WINDOW` passed).
pub const MIN_WINDOW_DATAGRAMS: u64 = 100;
/// Token bucket depth, in time at the current rate.
pub const BURST: u64 = 1_000_000;
/// Lowest rate (bytes/s) a decrease can reach.
pub const MIN_RATE: f64 = 64_000.0;
/// Queueing delay above which the rate stops growing and any loss counts as
/// congestion.
pub const QUEUE_DELAY: u64 = 10_000_000;
/// A round-trip sample older than this no longer tells whether a queue builds.
pub const RTT_STALE: u64 = 100_000_000;
/// Smallest retransmission timeout of tail-loss probes.
pub const MIN_RTO: u64 = 500_000;

/// Smoothed round-trip time (RFC 6298), in nanoseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct RttEstimator {
    srtt: u64,
    rttvar: u64,
    samples: u64,
}

impl RttEstimator {
    /// Adds a measured round trip.
    pub fn sample(&mut self, rtt_ns: u64) {
        if self.samples == 0 {
            self.srtt = rtt_ns;
            self.rttvar = rtt_ns / 2;
        } else {
            let err = self.srtt.abs_diff(rtt_ns);
            self.rttvar = (3 * self.rttvar + err) / 4;
            self.srtt = (7 * self.srtt + rtt_ns) / 8;
        }
        self.samples += 1;
    }

    /// The smoothed round trip, once measured.
    pub fn srtt(&self) -> Option<u64> {
        (self.samples > 0).then_some(self.srtt)
    }

    /// Number of samples taken.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// `srtt + 4·rttvar`, unclamped (`None` before the first sample).
    pub fn raw_rto(&self) -> Option<u64> {
        self.srtt().map(|s| s + 4 * self.rttvar)
    }

    /// Retransmission timeout of a tail-loss probe: `srtt + 4·rttvar`, at
    /// least [`MIN_RTO`], at most `max`; `max` before the first sample.
    pub fn rto(&self, max: u64) -> u64 {
        self.raw_rto()
            .map_or(max, |r| r.clamp(MIN_RTO, max.max(MIN_RTO)))
    }
}

/// Counters of the pacer, for tests and diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PacerStats {
    /// Congestion decisions (rate decreases).
    pub decreases: u64,
    /// Windows that grew the rate.
    pub increases: u64,
    /// Times a datagram had to wait for tokens.
    pub waits: u64,
    /// Bytes reported lost by readers (newly requested repairs).
    pub lost_bytes: u64,
    /// Bytes sent through the pacer.
    pub sent_bytes: u64,
}

/// Pacing and congestion control of a participant's reliable traffic (see
/// the module documentation).
#[derive(Debug, Clone)]
pub struct Pacer {
    /// Bytes per second; `None` until the first congestion.
    rate: Option<f64>,
    tokens: f64,
    refilled: Timestamp,
    win_start: Timestamp,
    win_sent: u64,
    win_lost: u64,
    win_datagrams: u64,
    /// The pacer made a datagram wait in this window (the rate was the limit).
    win_limited: bool,
    /// No decision before this time (NACKs of data sent before a decrease).
    hold_until: Timestamp,
    /// Largest datagram seen (the bucket holds at least one).
    max_datagram: usize,
    /// Least round trip seen, and the latest sample (ns; 0: none yet).
    min_rtt: u64,
    last_rtt: u64,
    /// When `last_rtt` was measured.
    last_rtt_at: Timestamp,
    /// When the last paced datagram went.
    last_sent: Timestamp,
    /// Counters.
    pub stats: PacerStats,
    enabled: bool,
}

impl Pacer {
    /// A pacer; `enabled == false` never paces (counters still count).
    pub fn new(enabled: bool) -> Self {
        Self {
            rate: None,
            tokens: 0.0,
            refilled: Timestamp(0),
            win_start: Timestamp(0),
            win_sent: 0,
            win_lost: 0,
            win_datagrams: 0,
            win_limited: false,
            hold_until: Timestamp(0),
            max_datagram: 1500,
            min_rtt: 0,
            last_rtt: 0,
            last_sent: Timestamp(0),
            last_rtt_at: Timestamp(0),
            stats: PacerStats::default(),
            enabled,
        }
    }

    /// The current rate in bytes per second (`None`: not paced).
    pub fn rate(&self) -> Option<f64> {
        self.rate
    }

    fn refill(&mut self, now: Timestamp) {
        if let Some(rate) = self.rate {
            if now > self.refilled {
                let dt = (now.0 - self.refilled.0) as f64 * 1e-9;
                let cap = (rate * BURST as f64 * 1e-9).max(self.max_datagram as f64);
                self.tokens = (self.tokens + dt * rate).min(cap);
            }
        }
        self.refilled = self.refilled.max(now);
    }

    /// Whether a paced datagram may be sent now.
    /// A waiting pacer also judges its window (`srtt` as in
    /// [`Pacer::on_lost`]), so that the rate grows while it limits.
    #[inline]
    pub fn may_send(&mut self, now: Timestamp, srtt: Option<u64>) -> bool {
        if self.rate.is_none() {
            return true;
        }
        self.refill(now);
        if self.tokens > 0.0 {
            true
        } else {
            self.win_limited = true;
            self.stats.waits += 1;
            // (A decrease here moves no recovery point: losses reported
            // later are of data sent before it, as with any decrease.)
            let _ = self.evaluate(now, srtt);
            false
        }
    }

    /// Notes a round-trip sample: its excess over the least one seen is the
    /// queueing delay on the path.
    pub fn on_rtt(&mut self, now: Timestamp, rtt_ns: u64) {
        self.last_rtt = rtt_ns;
        self.last_rtt_at = now;
        if self.min_rtt == 0 || rtt_ns < self.min_rtt {
            self.min_rtt = rtt_ns.max(1);
        }
    }

    /// Whether the latest round trip shows a queue building on the path:
    /// more than [`QUEUE_DELAY`] (or the least round trip, if longer) above
    /// the least one. A sample older than [`RTT_STALE`] says nothing (repairs
    /// suspend sampling, Karn's rule).
    pub fn queueing(&self, now: Timestamp) -> bool {
        self.min_rtt > 0
            && now.0.saturating_sub(self.last_rtt_at.0) < RTT_STALE
            && self.last_rtt > self.min_rtt + QUEUE_DELAY.max(self.min_rtt)
    }

    /// When tokens will allow the next datagram (`None`: not waiting).
    pub fn next_send_at(&self) -> Option<Timestamp> {
        let rate = self.rate?;
        if self.tokens > 0.0 {
            return None;
        }
        let ns = ((-self.tokens + 1.0) / rate * 1e9).ceil() as u64;
        Some(
            self.refilled
                .saturating_add(core::time::Duration::from_nanos(ns.max(1))),
        )
    }

    /// Accounts a paced datagram of `len` bytes sent at `now`.
    #[inline]
    pub fn on_sent(&mut self, now: Timestamp, len: usize) {
        self.stats.sent_bytes += len as u64;
        if self.rate.is_some() {
            self.tokens -= len as f64;
        }
        if !self.enabled {
            // (Windows feed only decisions, which a disabled pacer never makes.)
            return;
        }
        if self.win_datagrams == 0 || now.0.saturating_sub(self.last_sent.0) > MIN_WINDOW {
            // A window starts with its first datagram after an idle time
            // (which would dilute the goodput).
            self.reset_window(now);
        }
        self.last_sent = now;
        self.win_sent += len as u64;
        self.win_datagrams += 1;
        if len > self.max_datagram {
            self.max_datagram = len;
        }
    }

    /// Accounts `bytes` reported lost by a reader (newly requested repairs
    /// of data sent after the last decrease: the caller leaves out losses of
    /// data sent before, which the decrease already answered, as TCP's
    /// recovery point does), and judges the window if it is complete.
    /// `srtt` is the smoothed round trip, if measured. Returns whether the
    /// rate was decreased (the caller then moves its recovery points).
    pub fn on_lost(&mut self, now: Timestamp, bytes: u64, srtt: Option<u64>) -> bool {
        self.win_lost += bytes;
        self.stats.lost_bytes += bytes;
        self.evaluate(now, srtt)
    }

    /// Judges the evaluation window if it is complete (called on losses and
    /// from the participant's timers); returns whether the rate decreased.
    pub fn evaluate(&mut self, now: Timestamp, srtt: Option<u64>) -> bool {
        if !self.enabled {
            return false;
        }
        let elapsed = now.0.saturating_sub(self.win_start.0);
        let window = MIN_WINDOW.max(4 * srtt.unwrap_or(0)).min(MAX_WINDOW);
        if elapsed < window || (self.win_datagrams < MIN_WINDOW_DATAGRAMS && elapsed < MAX_WINDOW) {
            return false;
        }
        if now < self.hold_until {
            self.reset_window(now);
            return false;
        }
        let secs = elapsed as f64 * 1e-9;
        // Loss beyond the tolerance, or any loss while a queue builds, is
        // congestion; a little loss on an empty path is the link's.
        let congested = self.win_lost as f64 > LOSS_TOLERANCE * self.win_sent as f64
            || (self.win_lost > 0 && self.queueing(now));
        if congested {
            let goodput = self.win_sent.saturating_sub(self.win_lost) as f64 / secs;
            let target = GOODPUT_SHARE * goodput;
            let new = match self.rate {
                Some(r) => target.clamp(MAX_DECREASE * r, r),
                None => target,
            };
            self.rate = Some(new.max(MIN_RATE));
            self.tokens = self.tokens.min(0.0);
            self.stats.decreases += 1;
            // Losses reported during the next window (or two round trips)
            // are of data sent before the decrease.
            let hold = window.max(2 * srtt.unwrap_or(0));
            self.hold_until = now.saturating_add(core::time::Duration::from_nanos(hold));
            self.reset_window(now);
            return true;
        } else if let Some(r) = self.rate {
            if self.win_limited && !self.queueing(now) {
                // (A long app-limited stretch that ends pacing-limited grows
                // as one window.)
                let span = elapsed.min(2 * window) as f64;
                let factor = (1.0 + GROWTH_PER_10MS).powf(span / 1e7);
                self.rate = Some(r * factor);
                self.stats.increases += 1;
            }
        }
        self.reset_window(now);
        false
    }

    fn reset_window(&mut self, now: Timestamp) {
        self.win_start = now;
        self.win_sent = 0;
        self.win_lost = 0;
        self.win_datagrams = 0;
        self.win_limited = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn rtt_smoothing_and_rto() {
        let mut r = RttEstimator::default();
        assert_eq!(r.rto(100 * MS), 100 * MS, "no sample: the maximum");
        r.sample(2 * MS);
        assert_eq!(r.srtt(), Some(2 * MS));
        assert_eq!(r.rto(100 * MS), 2 * MS + 4 * MS);
        for _ in 0..50 {
            r.sample(20_000);
        }
        assert!(r.srtt().unwrap() < 30_000);
        assert_eq!(r.rto(100 * MS), MIN_RTO, "clamped to the minimum");
        r.sample(500 * MS);
        assert_eq!(r.rto(100 * MS), 100 * MS, "clamped to the maximum");
    }

    /// Sends `rate_bps` worth of 1472-byte datagrams (as many as the pacer
    /// lets through) for `ms` and reports `loss` of them lost.
    fn drive(p: &mut Pacer, t: &mut u64, ms: u64, offered_bps: f64, loss: f64) -> u64 {
        let mut sent = 0u64;
        let mut credit = 0.0;
        let mut lost_acc = 0.0;
        for _ in 0..ms * 10 {
            *t += 100_000;
            credit += offered_bps / 8.0 / 10_000.0;
            while credit >= 1472.0 && p.may_send(Timestamp(*t), Some(100_000)) {
                p.on_sent(Timestamp(*t), 1472);
                credit -= 1472.0;
                sent += 1472;
                lost_acc += loss * 1472.0;
            }
            if lost_acc >= 1472.0 {
                let _ = p.on_lost(Timestamp(*t), 1472, Some(100_000));
                lost_acc -= 1472.0;
            }
            let _ = p.evaluate(Timestamp(*t), Some(100_000));
            credit = credit.min(1e6);
        }
        sent
    }

    #[test]
    fn no_loss_means_no_pacing() {
        let mut p = Pacer::new(true);
        let mut t = 0;
        drive(&mut p, &mut t, 500, 1e9, 0.0);
        assert_eq!(p.rate(), None);
        assert_eq!(p.stats.waits, 0);
    }

    #[test]
    fn random_loss_below_the_tolerance_is_not_congestion() {
        let mut p = Pacer::new(true);
        let mut t = 0;
        drive(&mut p, &mut t, 2000, 100e6, 0.01);
        assert_eq!(p.rate(), None, "{:?}", p.stats);
    }

    #[test]
    fn heavy_loss_sets_the_rate_near_the_goodput_and_growth_resumes() {
        let mut p = Pacer::new(true);
        let mut t = 0;
        // Offered 1 Gbit/s, half of it lost (an overloaded 500 Mbit/s link).
        drive(&mut p, &mut t, 30, 1e9, 0.5);
        let r = p.rate().expect("paced after congestion") * 8.0;
        // (Goodput 500 Mbit/s; the first window's losses are reported as
        // they accrue, so the estimate lands between 0.6 and 1.5 times it.)
        assert!((300e6..=750e6).contains(&r), "rate {r}");
        // Without loss, a pacing-limited sender grows the rate (at most
        // 1.5 %/10 ms; measured here: less, see the closing note of issue 21).
        drive(&mut p, &mut t, 200, 2e9, 0.0);
        let r2 = p.rate().unwrap() * 8.0;
        assert!(r2 > r && r2 < r * 2.0, "{r} -> {r2}");
        assert!(p.stats.waits > 0);
    }

    #[test]
    fn pacing_spreads_datagrams_at_the_rate() {
        // (Disabled: the rate stays where it is set; no growth while limited.)
        let mut p = Pacer::new(false);
        p.rate = Some(12.5e6); // 100 Mbit/s
        let mut t = 0u64;
        let mut sent = 0u64;
        // 100 ms of an always-ready sender, polled every 10 µs.
        for _ in 0..10_000 {
            t += 10_000;
            while p.may_send(Timestamp(t), None) {
                p.on_sent(Timestamp(t), 1472);
                sent += 1472;
            }
        }
        let mbps = sent as f64 * 8.0 / 0.1 / 1e6;
        assert!((98.0..=104.0).contains(&mbps), "{mbps}");
        let next = p.next_send_at().expect("waiting");
        assert!(next.0 > t && next.0 - t <= 200_000);
    }

    #[test]
    fn disabled_pacer_never_paces() {
        let mut p = Pacer::new(false);
        let mut t = 0;
        drive(&mut p, &mut t, 30, 1e9, 0.5);
        assert_eq!(p.rate(), None);
    }
}
