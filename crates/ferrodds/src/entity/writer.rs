//! Non-generic state of a [`crate::DataWriter`] shared with the runtime: statuses,
//! generations that blocked writes wait on, the listener and attached wait sets.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use ferrodds_rtps::Event;

use super::signal::{call_listener, Waiters};
use crate::qos::QosPolicyId;
use crate::status::{
    DataWriterListener, OfferedIncompatibleQosStatus, PublicationMatchedStatus, StatusMask,
};
use crate::sync::{lock, wait_timeout, Deadline};

#[derive(Default)]
struct WriterStatus {
    changed: StatusMask,
    matched: PublicationMatchedStatus,
    /// Engine order of the event `matched`'s current count and last handle come from.
    matched_seq: u64,
    incompatible: OfferedIncompatibleQosStatus,
    resources_gen: u64,
    acked_gen: u64,
}

/// Shared state of one writer.
#[derive(Default)]
pub(crate) struct WriterShared {
    status: Mutex<WriterStatus>,
    cv: Condvar,
    listener: Mutex<Option<Arc<dyn DataWriterListener>>>,
    pub(crate) waiters: Waiters,
}

impl WriterShared {
    pub(crate) fn set_listener(&self, l: Option<Arc<dyn DataWriterListener>>) {
        *lock(&self.listener) = l;
    }

    pub(crate) fn changed(&self) -> StatusMask {
        lock(&self.status).changed
    }

    pub(crate) fn resources_gen(&self) -> u64 {
        lock(&self.status).resources_gen
    }

    pub(crate) fn acked_gen(&self) -> u64 {
        lock(&self.status).acked_gen
    }

    /// Waits (at most `d`) for the resources generation to move past `gen`.
    pub(crate) fn wait_resources(&self, gen: u64, d: Duration) {
        let st = lock(&self.status);
        if st.resources_gen == gen {
            drop(wait_timeout(&self.cv, st, d));
        }
    }

    /// Waits (at most `d`) for the acknowledgement generation to move past `gen`.
    pub(crate) fn wait_acked(&self, gen: u64, d: Duration) {
        let st = lock(&self.status);
        if st.acked_gen == gen {
            drop(wait_timeout(&self.cv, st, d));
        }
    }

    pub(crate) fn publication_matched_status(&self) -> PublicationMatchedStatus {
        let mut st = lock(&self.status);
        let s = st.matched;
        st.matched.total_count_change = 0;
        st.matched.current_count_change = 0;
        st.changed = st.changed.without(StatusMask::PUBLICATION_MATCHED);
        s
    }

    pub(crate) fn current_matched(&self) -> u32 {
        lock(&self.status).matched.current_count
    }

    pub(crate) fn offered_incompatible_qos_status(&self) -> OfferedIncompatibleQosStatus {
        let mut st = lock(&self.status);
        let s = st.incompatible;
        st.incompatible.total_count_change = 0;
        st.changed = st.changed.without(StatusMask::OFFERED_INCOMPATIBLE_QOS);
        s
    }

    /// Waits until at least `n` readers are matched.
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
            st = wait_timeout(&self.cv, st, left);
        }
    }

    /// Applies an engine event, `seq` its place in the engine's event order (called with no
    /// engine lock held, so events of one writer may come here out of that order: the
    /// matched count and last handle are those of the newest event, the totals and
    /// changes add up either way).
    pub(crate) fn on_event(&self, ev: &Event, seq: u64) {
        let listener = lock(&self.listener).clone();
        match ev {
            Event::PublicationMatched {
                remote_reader,
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
                        m.last_subscription_handle = Some(*remote_reader);
                        st.matched_seq = seq;
                    }
                    st.changed = st.changed | StatusMask::PUBLICATION_MATCHED;
                    st.matched
                };
                self.cv.notify_all();
                self.waiters.notify();
                if let Some(l) = listener {
                    call_listener("on_publication_matched", || l.on_publication_matched(&s));
                }
            }
            Event::PublicationUnmatched {
                remote_reader,
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
                        m.last_subscription_handle = Some(*remote_reader);
                        st.matched_seq = seq;
                    }
                    st.changed = st.changed | StatusMask::PUBLICATION_MATCHED;
                    // an unmatched reader may have been the one holding back acknowledgements
                    st.acked_gen += 1;
                    st.resources_gen += 1;
                    st.matched
                };
                self.cv.notify_all();
                self.waiters.notify();
                if let Some(l) = listener {
                    call_listener("on_publication_matched", || l.on_publication_matched(&s));
                }
            }
            Event::OfferedIncompatibleQos { policy, .. } => {
                let s = {
                    let mut st = lock(&self.status);
                    st.incompatible.total_count += 1;
                    st.incompatible.total_count_change += 1;
                    st.incompatible.last_policy_id = Some(QosPolicyId::from_engine(*policy));
                    st.changed = st.changed | StatusMask::OFFERED_INCOMPATIBLE_QOS;
                    st.incompatible
                };
                self.cv.notify_all();
                self.waiters.notify();
                if let Some(l) = listener {
                    call_listener("on_offered_incompatible_qos", || {
                        l.on_offered_incompatible_qos(&s)
                    });
                }
            }
            Event::WriterResourcesAvailable { .. } => {
                lock(&self.status).resources_gen += 1;
                self.cv.notify_all();
            }
            Event::AllAcknowledged { .. } => {
                {
                    let mut st = lock(&self.status);
                    st.acked_gen += 1;
                    st.resources_gen += 1;
                }
                self.cv.notify_all();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrodds_rtps::{EntityId, Guid, GuidPrefix};
    use std::time::Instant;

    /// As for readers: the matched count is the newest event's whatever order two
    /// dispatching threads apply them in.
    #[test]
    fn matched_events_applied_out_of_order_keep_the_newest_count() {
        let w = WriterShared::default();
        let r1 = Guid::new(GuidPrefix([2; 12]), EntityId([0, 0, 1, 4]));
        let r2 = Guid::new(GuidPrefix([3; 12]), EntityId([0, 0, 1, 4]));
        let matched = |remote_reader, current_count| Event::PublicationMatched {
            writer: test_writer_id(),
            remote_reader,
            current_count,
        };
        w.on_event(&matched(r2, 2), 4);
        w.on_event(&matched(r1, 1), 3);
        assert_eq!(w.current_matched(), 2);
        assert!(w.wait_for_matched(2, Duration::from_millis(1)));
    }

    #[test]
    fn writer_status_generations_advance() {
        let w = WriterShared::default();
        let g0 = w.resources_gen();
        let a0 = w.acked_gen();
        let id = test_writer_id();
        w.on_event(&Event::WriterResourcesAvailable { writer: id }, 1);
        assert_eq!(w.resources_gen(), g0 + 1);
        w.on_event(&Event::AllAcknowledged { writer: id }, 2);
        assert_eq!(w.acked_gen(), a0 + 1);
        w.on_event(
            &Event::OfferedIncompatibleQos {
                writer: id,
                remote_reader: Guid::new(GuidPrefix([3; 12]), EntityId([0, 0, 1, 4])),
                policy: ferrodds_rtps::QosPolicyId::Durability,
            },
            3,
        );
        let s = w.offered_incompatible_qos_status();
        assert_eq!(s.total_count, 1);
        assert_eq!(s.last_policy_id, Some(QosPolicyId::Durability));
        // a wait with an outdated generation returns at once
        let t0 = Instant::now();
        w.wait_resources(g0, Duration::from_secs(5));
        assert!(t0.elapsed() < Duration::from_secs(1));
    }

    fn test_writer_id() -> ferrodds_rtps::WriterId {
        use ferrodds_rtps::{Participant, ParticipantConfig, Timestamp, WriterAttributes};
        let mut p = Participant::new(ParticipantConfig::default(), Timestamp(0));
        p.create_writer(
            WriterAttributes {
                topic_name: "t".into(),
                type_name: "T".into(),
                keyed: false,
                qos: ferrodds_rtps::WriterQos::default(),
            },
            Timestamp(0),
        )
        .expect("writer")
    }
}
