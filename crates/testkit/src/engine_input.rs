//! A participant driven by an arbitrary input: the fuzz target `engine_datagrams` and its seed.
//!
//! The input is a sequence of records `[op: u8][value: u16 BE][bytes]`:
//! - `op % 4 == 0`: a datagram of `value` bytes (the bytes that follow) given to
//!   [`Participant::handle_datagram`];
//! - `op % 4 == 1`: time moves on by `value % 2000` ms (no bytes follow);
//! - `op % 4 == 2`: the victim's keyed writer writes a sample of `value` bytes (the bytes
//!   that follow; the first 16, zero-padded, are its key hash); bit 2 of `op` makes it a
//!   disposal;
//! - `op % 4 == 3`: every sample and event is taken (no bytes follow).
//!
//! After each record the victim's due timers run and everything it would send is drained
//! (and dropped), so datagrams, timers, writes and takes interleave as a hostile peer and an
//! application could make them. [`Victim::record_seed`] records a real session with a peer
//! participant in this format (discovery, matching, reliable keyed samples, fragmented ones,
//! repairs, a disposal, a best-effort flow), so that a fuzzer starts from deep states.

use std::net::Ipv4Addr;
use std::time::Duration;

use ferrodds_rtps::qos::{History, Reliability, WriterQos};
use ferrodds_rtps::{
    ChangeKind, GuidPrefix, Locator, Participant, ParticipantConfig, ReaderAttributes, ReaderId,
    ReaderQos, Timestamp, WriteRequest, WriterAttributes, WriterId,
};

/// Records a single input may hold (longer inputs are cut).
pub const MAX_RECORDS: usize = 8192;
/// Datagrams drained after one record at most (the rest wait for the next).
const MAX_DRAIN: usize = 4096;

fn config(n: u8) -> ParticipantConfig {
    let ip = Ipv4Addr::new(127, 0, 0, n);
    ParticipantConfig {
        guid_prefix: GuidPrefix([1, 0xfd, 0xf2, 0, 0, 0, 0, 0, 0, 0, 0, n]),
        participant_id: u32::from(n),
        metatraffic_unicast_locators: vec![Locator::udpv4(ip, 7410)],
        default_unicast_locators: vec![Locator::udpv4(ip, 7411)],
        spdp_destinations: vec![Locator::udpv4(Ipv4Addr::new(239, 255, 0, 1), 7400)],
        lease_duration: Duration::from_secs(5),
        spdp_period: Duration::from_secs(1),
        // (Small datagrams: the seed's 3,000-byte samples go as DATA_FRAG.)
        max_message_size: 1400,
        ..ParticipantConfig::default()
    }
}

fn reliability(reliable: bool) -> Reliability {
    if reliable {
        Reliability::RELIABLE
    } else {
        Reliability::BEST_EFFORT
    }
}

fn writer_attrs(topic: &str, keyed: bool, reliable: bool) -> WriterAttributes {
    WriterAttributes {
        topic_name: topic.into(),
        type_name: "FuzzType".into(),
        keyed,
        qos: WriterQos {
            reliability: reliability(reliable),
            history: History::KeepAll,
            ..WriterQos::default()
        },
    }
}

fn reader_attrs(topic: &str, keyed: bool, reliable: bool) -> ReaderAttributes {
    ReaderAttributes {
        topic_name: topic.into(),
        type_name: "FuzzType".into(),
        keyed,
        qos: ReaderQos {
            reliability: reliability(reliable),
            history: History::KeepAll,
            ..ReaderQos::default()
        },
    }
}

/// One participant and its endpoints.
struct Node {
    p: Participant,
    writer: WriterId,
    readers: Vec<ReaderId>,
    buf: Vec<u8>,
}

impl Node {
    fn new(n: u8, with_best_effort_writer: bool) -> Self {
        let mut p = Participant::new(config(n), Timestamp(0));
        let t0 = Timestamp(0);
        let writer = p
            .create_writer(writer_attrs("Keyed", true, true), t0)
            .expect("keyed writer");
        let mut readers = vec![p
            .create_reader(reader_attrs("Keyed", true, true), t0)
            .expect("keyed reader")];
        if with_best_effort_writer {
            p.create_writer(writer_attrs("Plain", false, false), t0)
                .expect("best-effort writer");
        } else {
            readers.push(
                p.create_reader(reader_attrs("Plain", false, false), t0)
                    .expect("best-effort reader"),
            );
        }
        Self {
            p,
            writer,
            readers,
            buf: vec![0; 65_536],
        }
    }

    /// Runs due timers and returns what the participant sends now.
    fn step(&mut self, now: Timestamp) -> Vec<Vec<u8>> {
        if self.p.poll_timeout().is_some_and(|t| t <= now) {
            self.p.handle_timeout(now);
        }
        let mut out = Vec::new();
        while out.len() < MAX_DRAIN {
            let Some(t) = self.p.poll_transmit(now, &mut self.buf) else {
                break;
            };
            out.push(self.buf[..t.len].to_vec());
        }
        out
    }

    /// Takes every sample and event; returns the samples taken.
    fn take_all(&mut self) -> usize {
        let mut n = 0;
        for &r in &self.readers {
            while self.p.take_sample(r).is_some() {
                n += 1;
            }
        }
        while self.p.poll_event().is_some() {}
        n
    }
}

/// The participant under test (see the module documentation).
pub struct Victim {
    node: Node,
    now: Timestamp,
    /// Samples taken so far.
    pub taken: usize,
}

impl Default for Victim {
    fn default() -> Self {
        Self::new()
    }
}

impl Victim {
    /// A fresh victim: a reliable keyed writer and reader, a best-effort unkeyed reader.
    pub fn new() -> Self {
        Self {
            node: Node::new(1, false),
            now: Timestamp(0),
            taken: 0,
        }
    }

    /// Applies every record of `input` (at most [`MAX_RECORDS`]).
    pub fn run(&mut self, mut input: &[u8]) {
        for _ in 0..MAX_RECORDS {
            let [op, hi, lo, rest @ ..] = input else {
                return;
            };
            let value = usize::from(u16::from_be_bytes([*hi, *lo]));
            input = rest;
            match op % 4 {
                0 => {
                    let n = value.min(input.len());
                    let (d, rest) = input.split_at(n);
                    input = rest;
                    self.node.p.handle_datagram(self.now, None, d);
                }
                1 => {
                    let ms = (value % 2000) as u64;
                    self.now = self.now.saturating_add(Duration::from_millis(ms));
                }
                2 => {
                    let n = value.min(input.len());
                    let (payload, rest) = input.split_at(n);
                    input = rest;
                    let mut key = [0u8; 16];
                    let k = payload.len().min(16);
                    key[..k].copy_from_slice(&payload[..k]);
                    let kind = if op & 4 != 0 {
                        ChangeKind::NotAliveDisposed
                    } else {
                        ChangeKind::Alive
                    };
                    let req = WriteRequest {
                        kind,
                        key_hash: Some(key),
                        serialized_payload: payload,
                        source_timestamp: None,
                    };
                    // (A full history or a too large payload is an answer, not a failure.)
                    let _ = self.node.p.write(self.node.writer, req, self.now);
                }
                _ => self.taken += self.node.take_all(),
            }
            let _ = self.node.step(self.now);
        }
    }

    /// Records a real session between a peer and the victim as an input (see the module
    /// documentation): what the peer sends reaches the victim as records, what the victim
    /// sends reaches the peer. Deterministic.
    pub fn record_seed() -> Vec<u8> {
        let mut victim = Node::new(1, false);
        let mut peer = Node::new(2, true);
        let mut seed = Vec::new();
        let mut now = Timestamp(0);
        let push = |seed: &mut Vec<u8>, op: u8, bytes: &[u8], value: usize| {
            seed.push(op);
            seed.extend_from_slice(&(value as u16).to_be_bytes());
            seed.extend_from_slice(bytes);
        };
        for ms in 0..1500u32 {
            now = now.saturating_add(Duration::from_millis(1));
            push(&mut seed, 1, &[], 1);
            let mut to_peer = victim.step(now);
            // The peer writes keyed samples (every tenth one fragmented), then disposes.
            if (300..800).contains(&ms) && ms % 5 == 0 {
                let i = ms / 5;
                let size = if i % 10 == 0 { 3000 } else { 40 };
                let mut payload = vec![0u8, 1, 0, 0];
                payload.extend((0..size).map(|b| (b as u32 + i) as u8));
                let mut key = [0u8; 16];
                key[0] = (i % 7) as u8;
                let kind = if ms == 795 {
                    ChangeKind::NotAliveDisposed
                } else {
                    ChangeKind::Alive
                };
                let req = WriteRequest {
                    kind,
                    key_hash: Some(key),
                    serialized_payload: &payload,
                    source_timestamp: None,
                };
                let _ = peer.p.write(peer.writer, req, now);
            }
            // The victim writes too (its reliable writer, acknowledged by the peer).
            if (400..700).contains(&ms) && ms % 20 == 0 {
                let payload = [0u8, 1, 0, 0, (ms / 20) as u8, 1, 2, 3];
                push(&mut seed, 2, &payload, payload.len());
                let req = WriteRequest {
                    kind: ChangeKind::Alive,
                    key_hash: Some([payload[4]; 16]),
                    serialized_payload: &payload,
                    source_timestamp: None,
                };
                let _ = victim.p.write(victim.writer, req, now);
                to_peer.extend(victim.step(now));
            }
            for d in &to_peer {
                peer.p.handle_datagram(now, None, d);
            }
            // What the peer sends reaches the victim, except every 13th datagram (repairs).
            for (k, d) in peer.step(now).into_iter().enumerate() {
                if (ms as usize + k).is_multiple_of(13) && (300..900).contains(&ms) {
                    continue;
                }
                if d.len() > usize::from(u16::MAX) {
                    continue;
                }
                push(&mut seed, 0, &d, d.len());
                victim.p.handle_datagram(now, None, &d);
                for d in victim.step(now) {
                    peer.p.handle_datagram(now, None, &d);
                }
            }
            if ms % 50 == 0 {
                push(&mut seed, 3, &[], 0);
                victim.take_all();
                peer.take_all();
            }
        }
        seed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_seed_drives_the_victim_through_a_session() {
        let seed = Victim::record_seed();
        assert_eq!(seed, Victim::record_seed(), "deterministic");
        let mut v = Victim::new();
        v.run(&seed);
        // 100 keyed samples (10 fragmented, some repaired) and the disposal reached the
        // victim's reader, so the replay matched the peer and went through reliability.
        eprintln!("{} samples taken, {} bytes of seed", v.taken, seed.len());
        assert!(v.taken >= 90, "{} samples taken", v.taken);
        // Fragments were lost and asked for again (NACK_FRAG) during the replay.
        let st = v.node.p.stats();
        assert!(
            st.received_datagrams > 200 && st.sent_nack_frags > 0,
            "{st:?}"
        );
        assert_eq!(v.node.p.discovered_participants().len(), 1);
    }

    /// The seed committed for the fuzz target still reaches deep states (if not, regenerate it:
    /// `cargo run -p ferrodds-testkit --bin engine-seed -- fuzz/corpus-seeds/engine_datagrams/session`).
    #[test]
    fn the_committed_fuzz_seed_still_drives_a_session() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fuzz/corpus-seeds/engine_datagrams/session"
        );
        let seed = std::fs::read(path).expect("committed seed");
        let mut v = Victim::new();
        v.run(&seed);
        assert!(
            v.taken >= 90,
            "{} samples taken: regenerate the seed",
            v.taken
        );
    }

    #[test]
    fn garbage_does_not_panic() {
        let mut v = Victim::new();
        let mut x: u32 = 0x1234_5678;
        let junk: Vec<u8> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        v.run(&junk);
        // A seed with its bytes flipped here and there.
        let mut seed = Victim::record_seed();
        for i in (7..seed.len()).step_by(97) {
            seed[i] ^= 0x5a;
        }
        Victim::new().run(&seed);
    }
}
