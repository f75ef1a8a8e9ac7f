//! Shared setup of the allocation-counting tests: two participants wired
//! back to back without a network.

#![allow(dead_code, unreachable_pub)]

use ferrodds_rtps::{
    GuidPrefix, Locator, Participant, ParticipantConfig, ReaderAttributes, ReaderId, Timestamp,
    WriterAttributes, WriterId,
};

/// Configuration of participant `n` (1 or 2); each sends SPDP to the other.
pub fn config(n: u8) -> ParticipantConfig {
    let ip = core::net::Ipv4Addr::new(127, 0, 0, n);
    ParticipantConfig {
        guid_prefix: GuidPrefix([1, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, n]),
        metatraffic_unicast_locators: vec![Locator::udpv4(ip, 7410)],
        default_unicast_locators: vec![Locator::udpv4(ip, 7411)],
        spdp_destinations: vec![Locator::udpv4(
            core::net::Ipv4Addr::new(127, 0, 0, 3 - n),
            7410,
        )],
        // (These tests move whole histories at one instant of simulated
        // time; pacing is tested in `congestion` and `testkit`.)
        congestion_control: false,
        ..ParticipantConfig::default()
    }
}

/// Delivers everything `from` wants to send to `to`; returns the datagram count.
pub fn pump(from: &mut Participant, to: &mut Participant, now: Timestamp, buf: &mut [u8]) -> usize {
    let mut n = 0;
    let mut dests = Vec::new();
    while let Some(len) = from.poll_transmit_into(now, buf, &mut dests) {
        to.handle_datagram(now, None, &buf[..len]);
        n += 1;
    }
    n
}

/// Exchanges traffic both ways at `now` until quiet (bounded).
pub fn settle(a: &mut Participant, b: &mut Participant, now: Timestamp, buf: &mut [u8]) {
    for _ in 0..100 {
        let n = pump(a, b, now, buf) + pump(b, a, now, buf);
        while a.poll_event().is_some() {}
        while b.poll_event().is_some() {}
        if n == 0 {
            break;
        }
    }
}

/// Creates a writer on `a` and a reader on `b` and runs discovery until they
/// match; returns them and the current time.
pub fn matched_pair(
    a: &mut Participant,
    b: &mut Participant,
    wa: WriterAttributes,
    ra: ReaderAttributes,
    buf: &mut [u8],
) -> (WriterId, ReaderId, u64) {
    let mut t = 1u64;
    let w = a.create_writer(wa, Timestamp(t)).unwrap();
    let r = b.create_reader(ra, Timestamp(t)).unwrap();
    for _ in 0..50 {
        t += 1_000_000;
        let now = Timestamp(t);
        a.handle_timeout(now);
        b.handle_timeout(now);
        settle(a, b, now, buf);
        if a.matched_reader_count(w) == 1 && b.matched_writer_count(r) == 1 {
            break;
        }
    }
    assert_eq!(a.matched_reader_count(w), 1, "writer did not match");
    assert_eq!(b.matched_writer_count(r), 1, "reader did not match");
    (w, r, t)
}
