//! Non-generic state of a [`crate::DataReader`] shared with the runtime: statuses, the
//! DATA_AVAILABLE flag that blocked readers wait on, the listener and attached wait sets.
//!
//! Samples are not here: they stay in the engine's reader cache (the reader's only
//! history, with its instance states) until [`crate::DataReader`] takes or reads them.
//! The runtime hands engine events to [`ReaderShared::on_event`] after the engine lock
//! is released; nothing here calls into the engine.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use ferrodds_rtps::Event;

use super::signal::{call_listener, Waiters};
use crate::qos::QosPolicyId;
use crate::status::{
    DataReaderListener, RequestedIncompatibleQosStatus, SampleLostStatus, StatusMask,
    SubscriptionMatchedStatus,
};
use crate::sync::{lock, wait_timeout, Deadline};

#[derive(Default)]
struct ReaderStatus {
    /// Threads blocked on the condvar (a notify without waiters is a futex syscall,
    /// which the per-sample path avoids).
    waiting: u32,
    data_flag: bool,
    changed: StatusMask,
    matched: SubscriptionMatchedStatus,
    /// Engine order of the event `matched`'s current count and last handle come from.
    matched_seq: u64,
    incompatible: RequestedIncompatibleQosStatus,
    lost: SampleLostStatus,
}

/// Shared state of one reader.
#[derive(Default)]
pub(crate) struct ReaderShared {
    status: Mutex<ReaderStatus>,
    cv: Condvar,
    listener: Mutex<Option<Arc<dyn DataReaderListener>>>,
    pub(crate) waiters: Waiters,
    /// Alive samples dropped at take/read because their payload did not decode.
    undecodable: AtomicU64,
}

impl ReaderShared {
    pub(crate) fn set_listener(&self, l: Option<Arc<dyn DataReaderListener>>) {
        *lock(&self.listener) = l;
    }

    fn listener(&self) -> Option<Arc<dyn DataReaderListener>> {
        lock(&self.listener).clone()
    }

    /// Counts an alive sample whose payload did not decode (dropped).
    pub(crate) fn count_undecodable(&self) {
        self.undecodable.fetch_add(1, Ordering::Relaxed);
        tracing::debug!("undecodable sample dropped");
    }

    /// Alive samples dropped because they did not decode.
    pub(crate) fn undecodable(&self) -> u64 {
        self.undecodable.load(Ordering::Relaxed)
    }

    /// Waits until `has_unread` says yes or `timeout` passes. `has_unread` looks at the
    /// engine's reader cache (it takes the engine lock; no lock of this reader is held
    /// while it runs).
    pub(crate) fn wait_for_data(&self, timeout: Duration, has_unread: impl Fn() -> bool) -> bool {
        let deadline = Deadline::after(timeout);
        loop {
            if has_unread() {
                return true;
            }
            let mut st = lock(&self.status);
            if st.data_flag {
                // Set since the look above: look again.
                st.data_flag = false;
                continue;
            }
            let Some(left) = deadline.remaining() else {
                return false;
            };
            st.waiting += 1;
            st = wait_timeout(&self.cv, st, left.min(Duration::from_millis(100)));
            st.waiting -= 1;
            drop(st);
        }
    }

    /// Status kinds changed since they were last read.
    pub(crate) fn changed(&self) -> StatusMask {
        let st = lock(&self.status);
        let mut m = st.changed;
        if st.data_flag {
            m = m | StatusMask::DATA_AVAILABLE;
        }
        m
    }

    /// Clears DATA_AVAILABLE (after a take/read).
    pub(crate) fn clear_data_flag(&self) {
        let mut st = lock(&self.status);
        st.data_flag = false;
        st.changed = st.changed.without(StatusMask::DATA_AVAILABLE);
    }

    pub(crate) fn subscription_matched_status(&self) -> SubscriptionMatchedStatus {
        let mut st = lock(&self.status);
        let s = st.matched;
        st.matched.total_count_change = 0;
        st.matched.current_count_change = 0;
        st.changed = st.changed.without(StatusMask::SUBSCRIPTION_MATCHED);
        s
    }

    pub(crate) fn current_matched(&self) -> u32 {
        lock(&self.status).matched.current_count
    }

    pub(crate) fn requested_incompatible_qos_status(&self) -> RequestedIncompatibleQosStatus {
        let mut st = lock(&self.status);
        let s = st.incompatible;
        st.incompatible.total_count_change = 0;
        st.changed = st.changed.without(StatusMask::REQUESTED_INCOMPATIBLE_QOS);
        s
    }

    pub(crate) fn sample_lost_status(&self) -> SampleLostStatus {
        let mut st = lock(&self.status);
        let s = st.lost;
        st.lost.total_count_change = 0;
        st.changed = st.changed.without(StatusMask::SAMPLE_LOST);
        s
    }

    /// Waits until at least `n` writers are matched.
    pub(crate) fn wait_for_matched(&self, n: u32, timeout: Duration) -> bool {
        let deadline = Deadline::after(timeout);
        let mut st = lock(&self.status);
        loop {
            if st.matched.current_count >= n {
                return true;
            }
            let Some(left) = deadline.remaining() else {
                return false;
            };
            st.waiting += 1;
            st = wait_timeout(&self.cv, st, left);
            st.waiting -= 1;
        }
    }

    /// Applies an engine event, `seq` its place in the engine's event order (called with no
    /// engine lock held, so events of one reader may come here out of that order: the
    /// matched count and last handle are those of the newest event, the totals and
    /// changes add up either way).
    pub(crate) fn on_event(&self, ev: &Event, seq: u64) {
        let listener = self.listener();
        match ev {
            Event::DataAvailable { .. } => {
                // The samples stay in the engine's reader cache (the reader's only
                // history) until a take or read: here only flags and wake-ups.
                let waiting = {
                    let mut st = lock(&self.status);
                    st.data_flag = true;
                    st.changed = st.changed | StatusMask::DATA_AVAILABLE;
                    st.waiting > 0
                };
                // Read under the status lock: a waiter registers before it releases
                // that lock in its wait, so it is either counted or sees data_flag.
                if waiting {
                    self.cv.notify_all();
                }
                self.waiters.notify();
                if let Some(l) = listener {
                    call_listener("on_data_available", || l.on_data_available());
                }
            }
            Event::SubscriptionMatched {
                remote_writer,
                current_count,
                ..
            } => {
                let s = {
                    let mut st = lock(&self.status);
                    let newest = seq > st.matched_seq;
                    let m = &mut st.matched;
                    m.total_count += 1;
                    m.total_count_change += 1;
                    m.current_count_change += 1;
                    if newest {
                        m.current_count = u32::try_from(*current_count).unwrap_or(u32::MAX);
                        m.last_publication_handle = Some(*remote_writer);
                        st.matched_seq = seq;
                    }
                    st.changed = st.changed | StatusMask::SUBSCRIPTION_MATCHED;
                    st.matched
                };
                self.cv.notify_all();
                self.waiters.notify();
                if let Some(l) = listener {
                    call_listener("on_subscription_matched", || l.on_subscription_matched(&s));
                }
            }
            Event::SubscriptionUnmatched {
                remote_writer,
                current_count,
                ..
            } => {
                let s = {
                    let mut st = lock(&self.status);
                    let newest = seq > st.matched_seq;
                    let m = &mut st.matched;
                    m.current_count_change -= 1;
                    if newest {
                        m.current_count = u32::try_from(*current_count).unwrap_or(u32::MAX);
                        m.last_publication_handle = Some(*remote_writer);
                        st.matched_seq = seq;
                    }
                    st.changed = st.changed | StatusMask::SUBSCRIPTION_MATCHED;
                    st.matched
                };
                self.cv.notify_all();
                self.waiters.notify();
                if let Some(l) = listener {
                    call_listener("on_subscription_matched", || l.on_subscription_matched(&s));
                }
            }
            Event::RequestedIncompatibleQos { policy, .. } => {
                let s = {
                    let mut st = lock(&self.status);
                    st.incompatible.total_count += 1;
                    st.incompatible.total_count_change += 1;
                    st.incompatible.last_policy_id = Some(QosPolicyId::from_engine(*policy));
                    st.changed = st.changed | StatusMask::REQUESTED_INCOMPATIBLE_QOS;
                    st.incompatible
                };
                self.cv.notify_all();
                self.waiters.notify();
                if let Some(l) = listener {
                    call_listener("on_requested_incompatible_qos", || {
                        l.on_requested_incompatible_qos(&s)
                    });
                }
            }
            Event::SampleLost { count, .. } => {
                let s = {
                    let mut st = lock(&self.status);
                    st.lost.total_count = st.lost.total_count.saturating_add(*count);
                    st.lost.total_count_change = st
                        .lost
                        .total_count_change
                        .saturating_add(i32::try_from(*count).unwrap_or(i32::MAX));
                    st.changed = st.changed | StatusMask::SAMPLE_LOST;
                    st.lost
                };
                self.waiters.notify();
                if let Some(l) = listener {
                    call_listener("on_sample_lost", || l.on_sample_lost(&s));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entity::WaitSetSignal;
    use ferrodds_rtps::{EntityId, Guid, GuidPrefix};
    use std::time::Instant;

    #[test]
    fn a_waiter_sees_data_that_arrives_during_its_wait_and_the_flag_tracks_it() {
        use std::sync::atomic::AtomicBool;
        let r = Arc::new(ReaderShared::default());
        assert!(!r.changed().intersects(StatusMask::DATA_AVAILABLE));
        assert!(!r.wait_for_data(Duration::from_millis(1), || false));
        let data = Arc::new(AtomicBool::new(false));
        let (r2, d2) = (Arc::clone(&r), Arc::clone(&data));
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            // As the runtime does: the sample is in the engine before the event.
            d2.store(true, Ordering::SeqCst);
            r2.on_event(
                &Event::DataAvailable {
                    reader: test_reader_id(),
                },
                1,
            );
        });
        let start = Instant::now();
        assert!(r.wait_for_data(Duration::from_secs(5), || data.load(Ordering::SeqCst)));
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "woken, not timed out"
        );
        t.join().unwrap();
        r.on_event(
            &Event::DataAvailable {
                reader: test_reader_id(),
            },
            2,
        );
        assert!(r.changed().intersects(StatusMask::DATA_AVAILABLE));
        r.clear_data_flag();
        assert!(!r.changed().intersects(StatusMask::DATA_AVAILABLE));
    }

    /// Two threads may apply one reader's events in the other order than the engine
    /// raised them (each dispatches after unlocking): the matched count stays the newest
    /// event's, the totals count both.
    #[test]
    fn matched_events_applied_out_of_order_keep_the_newest_count() {
        let r = ReaderShared::default();
        let w1 = Guid::new(GuidPrefix([2; 12]), EntityId([0, 0, 2, 3]));
        let w2 = Guid::new(GuidPrefix([3; 12]), EntityId([0, 0, 2, 3]));
        let matched = |remote_writer, current_count| Event::SubscriptionMatched {
            reader: test_reader_id(),
            remote_writer,
            current_count,
        };
        r.on_event(&matched(w2, 2), 8);
        r.on_event(&matched(w1, 1), 7);
        let s = r.subscription_matched_status();
        assert_eq!(
            (s.total_count, s.current_count, s.current_count_change),
            (2, 2, 2)
        );
        assert_eq!(s.last_publication_handle, Some(w2));
        r.on_event(
            &Event::SubscriptionUnmatched {
                reader: test_reader_id(),
                remote_writer: w1,
                current_count: 1,
            },
            9,
        );
        assert_eq!(r.current_matched(), 1);
        assert!(!r.wait_for_matched(2, Duration::from_millis(1)));
    }

    #[test]
    fn events_update_statuses_and_wake_waiters() {
        let r = ReaderShared::default();
        let g = GuidPrefix([2; 12]);
        let w = Guid::new(g, EntityId([0, 0, 2, 3]));
        let ws = Arc::new(WaitSetSignal::default());
        r.waiters.attach(&ws);
        r.on_event(
            &Event::SubscriptionMatched {
                reader: test_reader_id(),
                remote_writer: w,
                current_count: 1,
            },
            3,
        );
        assert_eq!(*lock(&ws.generation), 1);
        assert!(r.changed().intersects(StatusMask::SUBSCRIPTION_MATCHED));
        assert!(r.wait_for_matched(1, Duration::from_millis(1)));
        let s = r.subscription_matched_status();
        assert_eq!(
            (s.total_count, s.current_count, s.current_count_change),
            (1, 1, 1)
        );
        assert_eq!(s.last_publication_handle, Some(w));
        assert!(!r.changed().intersects(StatusMask::SUBSCRIPTION_MATCHED));
        r.on_event(
            &Event::SampleLost {
                reader: test_reader_id(),
                count: 3,
            },
            4,
        );
        assert_eq!(r.sample_lost_status().total_count, 3);
        assert_eq!(r.sample_lost_status().total_count_change, 0);
        r.waiters.detach(&ws);
        r.on_event(
            &Event::SampleLost {
                reader: test_reader_id(),
                count: 1,
            },
            5,
        );
        assert_eq!(*lock(&ws.generation), 2, "detached wait sets are not woken");
    }

    /// Some reader id (the engine's ids are opaque; any live one will do).
    fn test_reader_id() -> ferrodds_rtps::ReaderId {
        use ferrodds_rtps::{Participant, ParticipantConfig, ReaderAttributes, Timestamp};
        let mut p = Participant::new(ParticipantConfig::default(), Timestamp(0));
        p.create_reader(
            ReaderAttributes {
                topic_name: "t".into(),
                type_name: "T".into(),
                keyed: false,
                qos: ferrodds_rtps::ReaderQos::default(),
            },
            Timestamp(0),
        )
        .expect("reader")
    }
}
