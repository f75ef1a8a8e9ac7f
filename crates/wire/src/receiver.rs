//! The receiver state of DDSI-RTPS 2.5 §8.3.4: how INFO_SRC, INFO_DST,
//! INFO_TS and INFO_REPLY(_IP4) change the interpretation of the submessages
//! that follow them in one message.

use crate::error::Result;
use crate::header::Header;
use crate::message::{MessageView, Submessages};
use crate::submessage::{InfoReply, InfoReplyIp4, Submessage};
use crate::types::{GuidPrefix, ProtocolVersion, Time, VendorId};

/// Reply locators announced by INFO_REPLY or INFO_REPLY_IP4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyTo<'a> {
    /// None announced: reply to the datagram's source address.
    Source,
    /// INFO_REPLY.
    Locators(InfoReply<'a>),
    /// INFO_REPLY_IP4.
    Ipv4(InfoReplyIp4),
}

/// The receiver state in effect for a submessage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiverState<'a> {
    /// Protocol version of the source (header, then INFO_SRC).
    pub source_version: ProtocolVersion,
    /// Vendor of the source (header, then INFO_SRC).
    pub source_vendor_id: VendorId,
    /// Participant that sent the submessage (header, then INFO_SRC).
    pub source_guid_prefix: GuidPrefix,
    /// Participant the submessage is for: the receiver's own prefix unless an
    /// INFO_DST named another one (INFO_DST with the unknown prefix resets it).
    pub dest_guid_prefix: GuidPrefix,
    /// Source timestamp from the last INFO_TS (`None` initially or after the I flag).
    pub timestamp: Option<Time>,
    /// Where replies go.
    pub reply_to: ReplyTo<'a>,
}

impl<'a> ReceiverState<'a> {
    /// The initial state for a message with header `h` received by the
    /// participant `own`.
    #[inline]
    #[must_use]
    pub fn new(h: &Header, own: GuidPrefix) -> Self {
        ReceiverState {
            source_version: h.version,
            source_vendor_id: h.vendor_id,
            source_guid_prefix: h.guid_prefix,
            dest_guid_prefix: own,
            timestamp: None,
            reply_to: ReplyTo::Source,
        }
    }

    /// Applies the effect of submessage `s` (INFO_SRC, INFO_DST, INFO_TS,
    /// INFO_REPLY, INFO_REPLY_IP4; others change nothing) for the receiving
    /// participant `own`.
    #[inline]
    pub fn apply(&mut self, s: &Submessage<'a>, own: GuidPrefix) {
        match *s {
            Submessage::InfoSrc(i) => {
                self.source_version = i.version;
                self.source_vendor_id = i.vendor_id;
                self.source_guid_prefix = i.guid_prefix;
                self.reply_to = ReplyTo::Source;
                self.timestamp = None;
            }
            Submessage::InfoDst(i) => {
                self.dest_guid_prefix = if i.guid_prefix == GuidPrefix::UNKNOWN {
                    own
                } else {
                    i.guid_prefix
                };
            }
            Submessage::InfoTs(i) => self.timestamp = i.timestamp,
            Submessage::InfoReply(r) => self.reply_to = ReplyTo::Locators(r),
            Submessage::InfoReplyIp4(r) => self.reply_to = ReplyTo::Ipv4(r),
            _ => {}
        }
    }

    /// Whether the submessage is addressed to the participant `own`.
    #[inline]
    #[must_use]
    pub fn is_for(&self, own: GuidPrefix) -> bool {
        self.dest_guid_prefix == own || self.dest_guid_prefix == GuidPrefix::UNKNOWN
    }
}

/// Iterator yielding each submessage with the receiver state in effect for it
/// (INFO_* submessages are yielded too, with their effect applied). Fused
/// after the first error.
#[derive(Debug, Clone)]
pub struct Interpreter<'a> {
    subs: Submessages<'a>,
    state: ReceiverState<'a>,
    own: GuidPrefix,
}

impl<'a> Iterator for Interpreter<'a> {
    type Item = Result<(ReceiverState<'a>, Submessage<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        let s = match self.subs.next()? {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        self.state.apply(&s, self.own);
        Some(Ok((self.state, s)))
    }
}

impl core::iter::FusedIterator for Interpreter<'_> {}

impl<'a> MessageView<'a> {
    /// Interprets the submessages for the receiving participant `own`
    /// (§8.3.4): each item carries the source, destination, timestamp and
    /// reply locators in effect for it.
    #[must_use]
    pub fn interpret(&self, own: GuidPrefix) -> Interpreter<'a> {
        Interpreter {
            subs: self.submessages(),
            state: ReceiverState::new(self.header(), own),
            own,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Endianness;
    use crate::message::MessageWriter;
    use crate::submessage::{InfoDst, InfoSrc, InfoTs, LocatorUdpv4, Pad};

    #[test]
    fn state_follows_info_submessages() {
        let own = GuidPrefix([1; 12]);
        let other = GuidPrefix([2; 12]);
        let src = GuidPrefix([3; 12]);
        let relay = GuidPrefix([4; 12]);
        let t = Time {
            seconds: 5,
            fraction: 0,
        };
        let mut buf = [0u8; 256];
        let mut w = MessageWriter::new(&mut buf, &Header::new(src)).unwrap();
        let e = Endianness::Little;
        w.push(&Pad { length: 0 }, e).unwrap();
        w.push(&InfoTs { timestamp: Some(t) }, e).unwrap();
        w.push(&InfoDst { guid_prefix: other }, e).unwrap();
        w.push(&Pad { length: 0 }, e).unwrap();
        w.push(
            &InfoDst {
                guid_prefix: GuidPrefix::UNKNOWN,
            },
            e,
        )
        .unwrap();
        w.push(
            &InfoReplyIp4 {
                unicast_locator: LocatorUdpv4 {
                    address: 0x7f00_0001,
                    port: 7411,
                },
                multicast_locator: None,
            },
            e,
        )
        .unwrap();
        w.push(
            &InfoSrc {
                version: ProtocolVersion::V2_3,
                vendor_id: VendorId::RUSTDDS,
                guid_prefix: relay,
            },
            e,
        )
        .unwrap();
        w.push(&Pad { length: 0 }, e).unwrap();
        let bytes = w.finish();
        let m = MessageView::parse(bytes).unwrap();
        let states: std::vec::Vec<_> = m.interpret(own).map(|r| r.unwrap().0).collect();
        assert_eq!(states.len(), 8);
        assert_eq!(states[0].source_guid_prefix, src);
        assert_eq!(states[0].timestamp, None);
        assert!(states[0].is_for(own));
        assert_eq!(states[1].timestamp, Some(t));
        assert!(!states[3].is_for(own));
        assert_eq!(states[3].dest_guid_prefix, other);
        assert!(states[4].is_for(own));
        assert_eq!(states[4].timestamp, Some(t));
        assert!(matches!(states[5].reply_to, ReplyTo::Ipv4(_)));
        let last = states[7];
        assert_eq!(last.source_guid_prefix, relay);
        assert_eq!(last.source_vendor_id, VendorId::RUSTDDS);
        assert_eq!(last.timestamp, None);
        assert_eq!(last.reply_to, ReplyTo::Source);
        assert_eq!(last.dest_guid_prefix, own);
    }
}
