//! SPDP announcements of many fake participants, as a hostile or broken host on the network
//! would send them (issue 18's flood tests and the `spdp-flood` tool).
//!
//! Each announcement is a real one made by the sans-IO engine, with its GUID prefix replaced by
//! a distinct one per index; its metatraffic and user locators are the `bogus` address and
//! port, which nobody should listen on.

use std::net::Ipv4Addr;
use std::time::Duration;

use ferrodds_rtps::{GuidPrefix, Locator, Participant, ParticipantConfig, Timestamp};

/// A recognisable GUID prefix whose last 4 bytes are the fake participant's index.
const BASE: GuidPrefix = GuidPrefix([0x01, 0xfd, 0xf1, 0x00, 0xd0, 0x0d, 0xf1, 0x00, 0, 0, 0, 0]);

/// Makes the SPDP announcement of fake participant `i` (any number of them).
#[derive(Debug, Clone)]
pub struct SpdpFlood {
    msg: Vec<u8>,
    /// Offsets of the GUID prefix in `msg` (RTPS header, key hash, participant GUID).
    spots: Vec<usize>,
}

impl SpdpFlood {
    /// Announcements for `domain` with locators `bogus` and a lease of `lease`; `None` if
    /// the engine made no announcement (never, in practice).
    pub fn new(domain: u32, bogus: (Ipv4Addr, u16), lease: Duration) -> Option<Self> {
        let bogus = Locator::udpv4(bogus.0, bogus.1);
        let cfg = ParticipantConfig {
            domain_id: domain,
            guid_prefix: BASE,
            metatraffic_unicast_locators: vec![bogus],
            default_unicast_locators: vec![bogus],
            spdp_destinations: vec![bogus],
            lease_duration: lease,
            ..ParticipantConfig::default()
        };
        let mut p = Participant::new(cfg, Timestamp(0));
        let mut buf = vec![0u8; 65_536];
        let mut msg = None;
        for ms in 0..100u64 {
            let now = Timestamp(ms * 1_000_000);
            if p.poll_timeout().is_some_and(|t| t <= now) {
                p.handle_timeout(now);
            }
            if let Some(t) = p.poll_transmit(now, &mut buf) {
                msg = Some(buf[..t.len].to_vec());
                break;
            }
        }
        let msg = msg?;
        let spots: Vec<usize> = msg
            .windows(12)
            .enumerate()
            .filter(|(_, w)| *w == BASE.0)
            .map(|(i, _)| i)
            .collect();
        (!spots.is_empty()).then_some(Self { msg, spots })
    }

    /// The announcement of fake participant `i`.
    pub fn announcement(&mut self, i: u32) -> &[u8] {
        let id = i.wrapping_add(1).to_be_bytes();
        for &s in &self.spots {
            self.msg[s + 8..s + 12].copy_from_slice(&id);
        }
        &self.msg
    }

    /// Whether `prefix` is one of the fake participants.
    pub fn is_fake(prefix: GuidPrefix) -> bool {
        prefix.0[..8] == BASE.0[..8]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A participant keeps at most 4,096 remote participants; the announcements beyond are
    /// refused and counted, and every fake expires by its lease.
    #[test]
    fn remote_participants_are_bounded_and_refusals_counted() {
        let mut f =
            SpdpFlood::new(0, (Ipv4Addr::LOCALHOST, 9), Duration::from_secs(2)).expect("seed");
        let cfg = ParticipantConfig {
            guid_prefix: GuidPrefix([1, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
            metatraffic_unicast_locators: vec![Locator::udpv4(Ipv4Addr::LOCALHOST, 7410)],
            default_unicast_locators: vec![Locator::udpv4(Ipv4Addr::LOCALHOST, 7411)],
            ..ParticipantConfig::default()
        };
        let mut p = Participant::new(cfg, Timestamp(0));
        let t = Timestamp(1_000_000);
        for i in 0..5_000 {
            p.handle_datagram(t, None, f.announcement(i));
        }
        assert_eq!(p.discovered_participants().len(), 4_096);
        assert!(p
            .discovered_participants()
            .into_iter()
            .all(SpdpFlood::is_fake));
        assert_eq!(p.stats().refused_participants, 904);
        // Past their 2 s lease they are gone.
        let later = Timestamp(3_100_000_000);
        p.handle_timeout(later);
        assert!(p.discovered_participants().is_empty());
    }
}
