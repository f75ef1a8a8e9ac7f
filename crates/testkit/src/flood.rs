//! Discovery floods, as a hostile or broken host on the network would send them (issue 18's
//! flood tests and the `spdp-flood` tool):
//! - [`SpdpFlood`]: SPDP announcements of many fake participants;
//! - [`SedpFlood`]: one fake participant announcing many SEDP endpoints.
//!
//! Each announcement is a real one made by the sans-IO engine, with its GUID replaced by a
//! distinct one per index; its metatraffic and user locators are the `bogus` address and
//! port, which nobody should listen on.

use std::net::Ipv4Addr;
use std::time::Duration;

use ferrodds_rtps::{
    EntityId, GuidPrefix, Locator, Participant, ParticipantConfig, Timestamp, WriterQos,
};
use ferrodds_wire::{
    Count, Data, Endianness, Header, Heartbeat, MessageView, MessageWriter, SequenceNumber,
    Submessage,
};

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
        let mut p = fake_participant(domain, BASE, bogus, lease);
        let msg = first_transmit(&mut p, Timestamp(0))?;
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

/// A participant of `domain` named `prefix` whose locators are all `bogus`.
fn fake_participant(
    domain: u32,
    prefix: GuidPrefix,
    bogus: (Ipv4Addr, u16),
    lease: Duration,
) -> Participant {
    let bogus = Locator::udpv4(bogus.0, bogus.1);
    let cfg = ParticipantConfig {
        domain_id: domain,
        guid_prefix: prefix,
        metatraffic_unicast_locators: vec![bogus],
        default_unicast_locators: vec![bogus],
        spdp_destinations: vec![bogus],
        lease_duration: lease,
        ..ParticipantConfig::default()
    };
    Participant::new(cfg, Timestamp(0))
}

/// The first datagram `p` sends within 100 ms of `from` (driving its timers).
fn first_transmit(p: &mut Participant, from: Timestamp) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 65_536];
    for ms in 0..100u64 {
        let now = Timestamp(from.0 + ms * 1_000_000);
        if p.poll_timeout().is_some_and(|t| t <= now) {
            p.handle_timeout(now);
        }
        if let Some(t) = p.poll_transmit(now, &mut buf) {
            return Some(buf[..t.len].to_vec());
        }
    }
    None
}

/// The GUID prefix of the [`SedpFlood`] participant.
pub const SEDP_FLOOD_PREFIX: GuidPrefix =
    GuidPrefix([0x01, 0xfd, 0x5e, 0xd0, 0xd0, 0x0d, 0xf1, 0x00, 0, 0, 0, 1]);

/// One fake participant announcing any number of SEDP publications (DATA(w)), as a broken or
/// hostile application creating writers without end would: its SPDP announcement
/// ([`SedpFlood::announcement`]) and datagrams of consecutive publications, each followed by
/// the HEARTBEAT of the SEDP writer ([`SedpFlood::publications`]). Publication `i` is writer
/// `i` of the fake participant, on a topic nobody reads; its locators are the `bogus` ones.
#[derive(Debug, Clone)]
pub struct SedpFlood {
    spdp: Vec<u8>,
    /// A DATA(w) serialized payload, and where the writer's entity key is in it.
    payload: Vec<u8>,
    key_spots: Vec<usize>,
    heartbeats: i32,
}

impl SedpFlood {
    /// Announcements for `domain` with locators `bogus` and a participant lease of `lease`;
    /// `None` if the engine made no announcement (never, in practice).
    pub fn new(domain: u32, bogus: (Ipv4Addr, u16), lease: Duration) -> Option<Self> {
        let mut fake = fake_participant(domain, SEDP_FLOOD_PREFIX, bogus, lease);
        let spdp = first_transmit(&mut fake, Timestamp(0))?;
        // A listener for the fake's SEDP to go to: its SPDP makes the fake announce its
        // writer's publication.
        let listener_prefix = GuidPrefix([0x01, 0xfd, 0x5e, 0xd0, 0, 0, 0, 0, 0, 0, 0, 2]);
        let mut listener = fake_participant(domain, listener_prefix, bogus, lease);
        let announcement = first_transmit(&mut listener, Timestamp(0))?;
        fake.handle_datagram(Timestamp(1_000_000), None, &announcement);
        let w = fake
            .create_writer(
                crate::helpers::writer("FerroDDS SEDP flood", WriterQos::default()),
                Timestamp(1_000_000),
            )
            .ok()?;
        let writer = fake.writer_guid(w)?;
        let mut payload = None;
        for round in 0..20u64 {
            let Some(msg) = first_transmit(&mut fake, Timestamp((2 + round * 100) * 1_000_000))
            else {
                continue;
            };
            let view = MessageView::parse(&msg).ok()?;
            payload = view.submessages().find_map(|s| match s {
                Ok(Submessage::Data(d))
                    if d.writer_id == EntityId::SEDP_BUILTIN_PUBLICATIONS_ANNOUNCER =>
                {
                    d.serialized_payload.map(<[u8]>::to_vec)
                }
                _ => None,
            });
            if payload.is_some() {
                break;
            }
        }
        let payload = payload?;
        let mut guid = [0u8; 16];
        guid[..12].copy_from_slice(&writer.prefix.0);
        guid[12..].copy_from_slice(&writer.entity_id.0);
        let key_spots: Vec<usize> = payload
            .windows(16)
            .enumerate()
            .filter(|(_, w)| *w == guid)
            .map(|(i, _)| i + 12)
            .collect();
        (!key_spots.is_empty()).then_some(Self {
            spdp,
            payload,
            key_spots,
            heartbeats: 0,
        })
    }

    /// The fake participant's SPDP announcement (send it first, and again within its lease).
    pub fn announcement(&self) -> &[u8] {
        &self.spdp
    }

    /// Writes into `buf` a datagram carrying publications `first..first + n` (SEDP sequence
    /// numbers `first + 1 ..= first + n`) and the SEDP writer's HEARTBEAT announcing
    /// `1..=first + n`; returns its length, or `None` if `buf` is too small. Publication `i`
    /// announces writer entity key `i + 1` (indices below 2^24 are distinct).
    pub fn publications(&mut self, first: u32, n: u32, buf: &mut [u8]) -> Option<usize> {
        let header = Header::new(SEDP_FLOOD_PREFIX);
        let mut m = MessageWriter::new(buf, &header).ok()?;
        let mut payload = self.payload.clone();
        for i in first..first.saturating_add(n) {
            let key = (i + 1).to_be_bytes();
            for &s in &self.key_spots {
                payload[s..s + 3].copy_from_slice(&key[1..]);
            }
            let data = Data::new(
                EntityId::SEDP_BUILTIN_PUBLICATIONS_DETECTOR,
                EntityId::SEDP_BUILTIN_PUBLICATIONS_ANNOUNCER,
                SequenceNumber(i64::from(i) + 1),
                Some(&payload),
            );
            m.push(&data, Endianness::Little).ok()?;
        }
        self.heartbeats = self.heartbeats.wrapping_add(1);
        let hb = Heartbeat {
            reader_id: EntityId::SEDP_BUILTIN_PUBLICATIONS_DETECTOR,
            writer_id: EntityId::SEDP_BUILTIN_PUBLICATIONS_ANNOUNCER,
            first_sn: SequenceNumber(1),
            last_sn: SequenceNumber(i64::from(first) + i64::from(n)),
            count: Count(self.heartbeats),
            final_flag: true,
            liveliness: false,
            group_info: None,
        };
        m.push(&hb, Endianness::Little).ok()?;
        Some(m.finish().len())
    }

    /// Whether `prefix` is the fake participant.
    pub fn is_fake(prefix: GuidPrefix) -> bool {
        prefix == SEDP_FLOOD_PREFIX
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

    /// One fake participant announcing 50,000 publications: a participant keeps at most
    /// `max_endpoints_per_participant` of them, counts the rest, and forgets them all when the
    /// fake's lease ends.
    #[test]
    fn remote_endpoints_per_participant_are_bounded_and_refusals_counted() {
        let mut f =
            SedpFlood::new(0, (Ipv4Addr::LOCALHOST, 9), Duration::from_secs(2)).expect("seed");
        let cfg = ParticipantConfig {
            guid_prefix: GuidPrefix([1, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
            metatraffic_unicast_locators: vec![Locator::udpv4(Ipv4Addr::LOCALHOST, 7410)],
            default_unicast_locators: vec![Locator::udpv4(Ipv4Addr::LOCALHOST, 7411)],
            ..ParticipantConfig::default()
        };
        let limit = cfg.peer_limits.max_endpoints_per_participant;
        let mut p = Participant::new(cfg, Timestamp(0));
        let t = Timestamp(1_000_000);
        p.handle_datagram(t, None, f.announcement());
        assert_eq!(p.discovered_participants(), vec![SEDP_FLOOD_PREFIX]);
        let mut buf = vec![0u8; 65_000];
        for first in (0..50_000).step_by(100) {
            let len = f.publications(first, 100, &mut buf).expect("fits");
            p.handle_datagram(t, None, &buf[..len]);
        }
        assert_eq!(p.stats().malformed_datagrams, 0);
        assert_eq!(p.stats().refused_endpoints, 50_000 - limit as u64);
        assert_eq!(p.remote_endpoint_count(), limit);
        // Past the fake's 2 s lease its endpoints are gone, and a new announcer has the full
        // allowance again.
        p.handle_timeout(Timestamp(3_100_000_000));
        assert!(p.discovered_participants().is_empty());
        assert_eq!(p.remote_endpoint_count(), 0);
    }
}
