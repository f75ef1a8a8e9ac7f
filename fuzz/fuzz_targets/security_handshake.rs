//! The PKI-DH handshake's receive path (`ferrodds_security`): a `ParticipantGenericMessage`
//! payload decoded from the stateless topic, and its `DataHolder`s fed to the sans-IO
//! handshake machines (`auth::Authenticator`).
//!
//! Two EC identities under one CA are made once per process; every input then runs on fresh
//! machines whose randomness is a fixed seed, so the initiator's pending Request, the
//! replier's state after that Request and the reference Reply and Final are the same in every
//! run of a process. The first input byte selects the mode:
//! - `% 4 == 0`: the rest is a serialized payload (encapsulation + body); each of its first
//!   four `DataHolder`s goes to a fresh replier and to an initiator with a pending Request,
//!   and as an AuthRequest to a replier that then gets the reference Request;
//! - `% 4 == 1 | 2 | 3`: the valid Request / Reply / Final payload, edited by the rest of the
//!   input as records `[op: u8][pos: u16 BE][val: u8]` (`op % 3`: 0 XORs the byte at `pos`
//!   with `val | 1`, 1 truncates at `pos`, 2 inserts `val` at `pos`; positions modulo the
//!   length), goes to the machine waiting for it.
//!
//! Properties checked on top of "never panics": the unedited Request, Reply and Final are
//! accepted; an accepted Reply or Final (edited or not) always yields the reference shared
//! secret and challenges, so no edit can make a peer agree on other keys.
//!
//! Seeds (`corpus-seeds/security_handshake`): the unedited messages, single edits in the
//! signature, a challenge and a length field, and a raw generic message (kept current by
//! `crates/security/tests/auth_fuzz_seeds.rs`).
#![no_main]

use std::sync::OnceLock;

use ferrodds_cdr::Endianness;
use ferrodds_security::auth::pki::{generate_ca, issue_identity, minimal_pdata};
use ferrodds_security::auth::{
    AuthError, AuthOptions, Authenticator, Entropy, HandshakeStep, IdentityAlgo, LocalIdentity,
};
use ferrodds_security::generic_message::{
    DataHolder, GuidBytes, MessageIdentity, ParticipantGenericMessage,
    GMCLASSID_SECURITY_AUTH_HANDSHAKE,
};
use libfuzzer_sys::fuzz_target;

const NOW: i64 = 1_800_000_000;

struct Seeded(u64);

impl Entropy for Seeded {
    fn fill(&mut self, buf: &mut [u8]) -> Result<(), AuthError> {
        for b in buf {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            *b = (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8;
        }
        Ok(())
    }
}

struct Fixture {
    init_id: LocalIdentity,
    repl_id: LocalIdentity,
    request: Vec<u8>,
    reply: Vec<u8>,
    fin: Vec<u8>,
    secret: [u8; 32],
    challenges: ([u8; 32], [u8; 32]),
}

fn machine(id: &LocalIdentity) -> Authenticator {
    Authenticator::new(
        id.clone(),
        b"permissions\0".to_vec(),
        minimal_pdata(&id.guid()),
        AuthOptions::default(),
    )
}

/// A fresh initiator with its (deterministic) Request pending.
fn initiator(f: &Fixture) -> Authenticator {
    let mut m = machine(&f.init_id);
    m.begin_handshake(f.repl_id.guid(), NOW, &mut Seeded(1))
        .expect("begin");
    m
}

fn payload(token: DataHolder, to: GuidBytes) -> Vec<u8> {
    let msg = ParticipantGenericMessage {
        message_identity: MessageIdentity {
            source_guid: [1; 16],
            sequence_number: 1,
        },
        destination_participant_guid: to,
        message_class_id: GMCLASSID_SECURITY_AUTH_HANDSHAKE.into(),
        message_data: vec![token],
        ..Default::default()
    };
    let mut out = Vec::new();
    msg.encode_payload(Endianness::Little, &mut out)
        .expect("encode");
    out
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let ca = generate_ca(
            "fuzz CA",
            IdentityAlgo::EcPrime256v1,
            NOW - 1000,
            NOW + 1000,
        )
        .expect("ca");
        let mk = |cn: &str, n: u8| {
            let i = issue_identity(
                &ca,
                cn,
                IdentityAlgo::EcPrime256v1,
                n.into(),
                NOW - 1000,
                NOW + 1000,
            )
            .expect("identity");
            LocalIdentity::from_parts(ca.cert.clone(), i.cert, i.key, &[n; 16], NOW, "c", "k")
                .expect("load")
        };
        let (a, b) = (mk("a", 1), mk("b", 2));
        let (init_id, repl_id) = if a.guid() < b.guid() { (a, b) } else { (b, a) };
        let mut init = machine(&init_id);
        let req = init
            .begin_handshake(repl_id.guid(), NOW, &mut Seeded(1))
            .expect("begin");
        let mut repl = machine(&repl_id);
        let Ok(HandshakeStep::Reply(reply)) =
            repl.process(init_id.guid(), &req, NOW, &mut Seeded(2))
        else {
            panic!("reference Request refused")
        };
        let Ok(HandshakeStep::Final { message, outcome }) =
            init.process(repl_id.guid(), &reply, NOW, &mut Seeded(3))
        else {
            panic!("reference Reply refused")
        };
        Fixture {
            request: payload(req, repl_id.guid()),
            reply: payload(reply, init_id.guid()),
            fin: payload(message, repl_id.guid()),
            secret: outcome.shared_secret,
            challenges: (outcome.challenge1, outcome.challenge2),
            init_id,
            repl_id,
        }
    })
}

fn edit(mut msg: Vec<u8>, script: &[u8]) -> Vec<u8> {
    for rec in script.chunks_exact(4) {
        let pos = usize::from(u16::from_be_bytes([rec[1], rec[2]]));
        match rec[0] % 3 {
            0 if !msg.is_empty() => {
                let i = pos % msg.len();
                msg[i] ^= rec[3] | 1;
            }
            1 if !msg.is_empty() => msg.truncate(pos % msg.len()),
            2 => {
                let i = pos % (msg.len() + 1);
                msg.insert(i, rec[3]);
            }
            _ => {}
        }
    }
    msg
}

fn holders(bytes: &[u8]) -> Vec<DataHolder> {
    ParticipantGenericMessage::decode_payload(bytes)
        .map(|m| m.message_data.into_iter().take(4).collect())
        .unwrap_or_default()
}

fn check_outcome(f: &Fixture, secret: [u8; 32], c1: [u8; 32], c2: [u8; 32]) {
    assert_eq!(
        secret, f.secret,
        "accepted message changed the shared secret"
    );
    assert_eq!(
        (c1, c2),
        f.challenges,
        "accepted message changed the challenges"
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let f = fixture();
    let (ig, rg) = (f.init_id.guid(), f.repl_id.guid());
    match mode % 4 {
        0 => {
            for h in holders(rest) {
                let _ = machine(&f.repl_id).process(ig, &h, NOW, &mut Seeded(2));
                let _ = initiator(f).process(rg, &h, NOW, &mut Seeded(3));
                // As an AuthRequest: noted, then the reference Request is checked against it.
                let mut repl = machine(&f.repl_id);
                if repl.note_auth_request(ig, &h, NOW).is_ok() {
                    let _ = repl.process(ig, &holders(&f.request)[0], NOW, &mut Seeded(2));
                }
            }
        }
        1 => {
            let msg = edit(f.request.clone(), rest);
            for h in holders(&msg) {
                let r = machine(&f.repl_id).process(ig, &h, NOW, &mut Seeded(2));
                if rest.len() < 4 {
                    assert!(matches!(r, Ok(HandshakeStep::Reply(_))), "{r:?}");
                }
            }
        }
        2 => {
            let msg = edit(f.reply.clone(), rest);
            for h in holders(&msg) {
                match initiator(f).process(rg, &h, NOW, &mut Seeded(3)) {
                    Ok(HandshakeStep::Final { outcome: o, .. }) => {
                        check_outcome(f, o.shared_secret, o.challenge1, o.challenge2)
                    }
                    // An edit that turns the class into "+Req..." is a Request from the peer.
                    Ok(HandshakeStep::Reply(_)) => {}
                    Ok(other) => panic!("a Reply gave {other:?}"),
                    Err(e) => assert!(rest.len() >= 4, "reference Reply refused: {e}"),
                }
            }
        }
        _ => {
            let msg = edit(f.fin.clone(), rest);
            let request = holders(&f.request);
            for h in holders(&msg) {
                let mut repl = machine(&f.repl_id);
                let _ = repl.process(ig, &request[0], NOW, &mut Seeded(2));
                match repl.process(ig, &h, NOW, &mut Seeded(4)) {
                    Ok(HandshakeStep::Complete(o)) => {
                        check_outcome(f, o.shared_secret, o.challenge1, o.challenge2)
                    }
                    Ok(HandshakeStep::Reply(_)) => {}
                    Ok(other) => panic!("a Final gave {other:?}"),
                    Err(e) => assert!(rest.len() >= 4, "reference Final refused: {e}"),
                }
            }
        }
    }
});
