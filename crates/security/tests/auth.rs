//! PKI-DH authentication: identities made at test time (RSA-2048 and P-256), full handshakes
//! between two in-memory participants, and every rejection path with its typed error.

use ferrodds_cdr::Endianness;
use ferrodds_security::auth::pki::{generate_ca, issue_identity, minimal_pdata, Issued};
use ferrodds_security::auth::{
    adjusted_guid_from_subject, parse_identity_token, permissions_token, prop, AuthError,
    AuthOptions, Authenticator, Entropy, HandshakeOutcome, HandshakeStep, IdentityAlgo,
    IdentityConfig, KeyAgreement, LocalIdentity, ModpEncoding, HANDSHAKE_FINAL_CLASS_ID,
    HANDSHAKE_REPLY_CLASS_ID, HANDSHAKE_REQUEST_CLASS_ID,
};
use ferrodds_security::generic_message::{
    DataHolder, GuidBytes, MessageIdentity, ParticipantGenericMessage, Property,
    ENTITYID_P2P_PARTICIPANT_STATELESS_MESSAGE_WRITER, GMCLASSID_SECURITY_AUTH_HANDSHAKE,
};

/// A fixed "now" (2027-01-15), so the tests do not depend on the clock.
const NOW: i64 = 1_800_000_000;
const DAY: i64 = 86_400;

/// Deterministic test entropy (xorshift64*); the handshake only needs unpredictability in
/// production, and determinism here makes failures reproducible.
struct TestEntropy(u64);

impl Entropy for TestEntropy {
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

fn ca(algo: IdentityAlgo) -> Issued {
    generate_ca("Identity CA", algo, NOW - DAY, NOW + 365 * DAY).unwrap()
}

fn candidate(n: u8) -> GuidBytes {
    let mut g = [n; 16];
    g[12..].copy_from_slice(&[0, 0, 1, 0xc1]);
    g
}

fn identity(ca: &Issued, cn: &str, algo: IdentityAlgo, n: u8) -> LocalIdentity {
    let id = issue_identity(ca, cn, algo, u32::from(n) + 10, NOW - DAY, NOW + 30 * DAY).unwrap();
    LocalIdentity::from_parts(
        ca.cert.clone(),
        id.cert,
        id.key,
        &candidate(n),
        NOW,
        "identity_certificate",
        "private_key",
    )
    .unwrap()
}

fn authenticator(id: LocalIdentity, options: AuthOptions) -> Authenticator {
    let pdata = minimal_pdata(&id.guid());
    let perm = format!("permissions of {}\0", id.subject_name()).into_bytes();
    Authenticator::new(id, perm, pdata, options)
}

/// Sends a token through the wire form (a ParticipantGenericMessage in `e`) and back.
fn over_the_wire(from: GuidBytes, to: GuidBytes, token: DataHolder, e: Endianness) -> DataHolder {
    let mut writer = from;
    writer[12..].copy_from_slice(&ENTITYID_P2P_PARTICIPANT_STATELESS_MESSAGE_WRITER);
    let related = MessageIdentity {
        source_guid: to,
        sequence_number: 3,
    };
    let msg = ParticipantGenericMessage::auth_handshake(writer, 1, to, Some(related), token);
    assert_eq!(msg.message_class_id, GMCLASSID_SECURITY_AUTH_HANDSHAKE);
    let mut buf = Vec::new();
    msg.encode_payload(e, &mut buf).unwrap();
    let back = ParticipantGenericMessage::decode_payload(&buf).unwrap();
    assert_eq!(back, msg);
    back.message_data.into_iter().next().unwrap()
}

struct Pair {
    init: Authenticator,
    repl: Authenticator,
    e: TestEntropy,
}

/// Orders two authenticators so that `init` has the lower GUID.
fn pair(a: Authenticator, b: Authenticator) -> Pair {
    let (init, repl) = if a.is_initiator(&b.local_guid()) {
        (a, b)
    } else {
        (b, a)
    };
    assert!(init.is_initiator(&repl.local_guid()));
    assert!(!repl.is_initiator(&init.local_guid()));
    Pair {
        init,
        repl,
        e: TestEntropy(0x9e37_79b9_7f4a_7c15),
    }
}

impl Pair {
    fn ig(&self) -> GuidBytes {
        self.init.local_guid()
    }
    fn rg(&self) -> GuidBytes {
        self.repl.local_guid()
    }
    fn request(&mut self) -> DataHolder {
        let rg = self.rg();
        self.init.begin_handshake(rg, NOW, &mut self.e).unwrap()
    }
    fn reply(&mut self, req: &DataHolder) -> Result<DataHolder, AuthError> {
        let ig = self.ig();
        match self.repl.process(ig, req, NOW, &mut self.e)? {
            HandshakeStep::Reply(r) => Ok(r),
            other => panic!("expected a Reply, got {other:?}"),
        }
    }
    fn finish(&mut self, reply: &DataHolder) -> Result<(DataHolder, HandshakeOutcome), AuthError> {
        let rg = self.rg();
        match self.init.process(rg, reply, NOW, &mut self.e)? {
            HandshakeStep::Final { message, outcome } => Ok((message, outcome)),
            other => panic!("expected a Final, got {other:?}"),
        }
    }
    fn complete(&mut self, fin: &DataHolder) -> Result<HandshakeOutcome, AuthError> {
        let ig = self.ig();
        match self.repl.process(ig, fin, NOW, &mut self.e)? {
            HandshakeStep::Complete(o) => Ok(o),
            other => panic!("expected completion, got {other:?}"),
        }
    }

    /// The whole handshake over the wire; returns (initiator's, replier's) outcomes.
    fn run(&mut self) -> (HandshakeOutcome, HandshakeOutcome) {
        let (ig, rg) = (self.ig(), self.rg());
        let req = over_the_wire(ig, rg, self.request(), Endianness::Little);
        assert_eq!(req.class_id, HANDSHAKE_REQUEST_CLASS_ID);
        let reply = over_the_wire(rg, ig, self.reply(&req).unwrap(), Endianness::Big);
        assert_eq!(reply.class_id, HANDSHAKE_REPLY_CLASS_ID);
        let (fin, oi) = self.finish(&reply).unwrap();
        let fin = over_the_wire(ig, rg, fin, Endianness::Little);
        assert_eq!(fin.class_id, HANDSHAKE_FINAL_CLASS_ID);
        let or = self.complete(&fin).unwrap();
        assert_eq!(self.init.pending(), 0);
        assert_eq!(self.repl.pending(), 0);
        (oi, or)
    }
}

fn check_outcomes(p: &Pair, oi: &HandshakeOutcome, or: &HandshakeOutcome, k: KeyAgreement) {
    assert_eq!(oi.shared_secret, or.shared_secret);
    assert_ne!(oi.shared_secret, [0; 32]);
    assert_eq!(oi.challenge1, or.challenge1);
    assert_eq!(oi.challenge2, or.challenge2);
    assert_ne!(oi.challenge1, oi.challenge2);
    assert_eq!(oi.key_agreement, k);
    assert_eq!(or.key_agreement, k);
    assert_eq!(oi.remote_guid, p.rg());
    assert_eq!(or.remote_guid, p.ig());
    assert_eq!(oi.peer_subject_name, p.repl.identity().subject_name());
    assert_eq!(or.peer_subject_name, p.init.identity().subject_name());
    assert_eq!(oi.peer_pdata, minimal_pdata(&p.rg()));
    assert_eq!(
        or.peer_permissions,
        format!("permissions of {}\0", p.init.identity().subject_name()).into_bytes()
    );
    assert_eq!(
        oi.peer_certificate.to_der().unwrap(),
        p.repl.identity().certificate().to_der().unwrap()
    );
}

fn handshake(ca_algo: IdentityAlgo, a: IdentityAlgo, b: IdentityAlgo, opts: AuthOptions) {
    let ca = ca(ca_algo);
    let mut p = pair(
        authenticator(identity(&ca, "alice", a, 1), opts),
        authenticator(identity(&ca, "bob", b, 2), opts),
    );
    let (oi, or) = p.run();
    check_outcomes(&p, &oi, &or, opts.key_agreement);
}

#[test]
fn ecdh_with_ecdsa_identities() {
    use IdentityAlgo::*;
    handshake(
        EcPrime256v1,
        EcPrime256v1,
        EcPrime256v1,
        AuthOptions::default(),
    );
}

#[test]
fn modp_dh_with_rsa_identities_der_and_raw_keys() {
    use IdentityAlgo::*;
    for modp_encoding in [ModpEncoding::Der, ModpEncoding::Raw] {
        let opts = AuthOptions {
            key_agreement: KeyAgreement::DhModp2048_256,
            modp_encoding,
            ..AuthOptions::default()
        };
        handshake(Rsa2048, Rsa2048, Rsa2048, opts);
    }
}

#[test]
fn mixed_identities_and_agreements() {
    use IdentityAlgo::*;
    handshake(Rsa2048, Rsa2048, EcPrime256v1, AuthOptions::default());
    let dh = AuthOptions {
        key_agreement: KeyAgreement::DhModp2048_256,
        ..AuthOptions::default()
    };
    handshake(EcPrime256v1, EcPrime256v1, Rsa2048, dh);
}

#[test]
fn replier_follows_the_requests_key_agreement() {
    // The initiator proposes MODP DH, the replier would propose ECDH itself: the Reply uses
    // the Request's algorithm (as Cyclone does), and the replier's raw-MODP setting is
    // interoperable with the initiator's DER.
    let ca = ca(IdentityAlgo::EcPrime256v1);
    let a = identity(&ca, "alice", IdentityAlgo::EcPrime256v1, 1);
    let b = identity(&ca, "bob", IdentityAlgo::EcPrime256v1, 2);
    let (ia, ib) = if a.guid() < b.guid() { (a, b) } else { (b, a) };
    let mut p = pair(
        authenticator(
            ia,
            AuthOptions {
                key_agreement: KeyAgreement::DhModp2048_256,
                ..AuthOptions::default()
            },
        ),
        authenticator(
            ib,
            AuthOptions {
                modp_encoding: ModpEncoding::Raw,
                ..AuthOptions::default()
            },
        ),
    );
    let (oi, or) = p.run();
    check_outcomes(&p, &oi, &or, KeyAgreement::DhModp2048_256);
}

#[test]
fn messages_carry_every_optional_field_in_cyclones_order() {
    let ca = ca(IdentityAlgo::EcPrime256v1);
    let mut p = pair(
        authenticator(
            identity(&ca, "a", IdentityAlgo::EcPrime256v1, 1),
            AuthOptions::default(),
        ),
        authenticator(
            identity(&ca, "b", IdentityAlgo::EcPrime256v1, 2),
            AuthOptions::default(),
        ),
    );
    let names = |t: &DataHolder| {
        t.binary_properties
            .iter()
            .map(|b| b.name.clone())
            .collect::<Vec<_>>()
    };
    let req = p.request();
    assert_eq!(
        names(&req),
        [
            "c.id",
            "c.perm",
            "c.pdata",
            "c.dsign_algo",
            "c.kagree_algo",
            "hash_c1",
            "dh1",
            "challenge1"
        ]
    );
    assert_eq!(
        req.binary_property(prop::C_DSIGN_ALGO).unwrap(),
        b"ECDSA-SHA256\0"
    );
    assert_eq!(
        req.binary_property(prop::C_KAGREE_ALGO).unwrap(),
        b"ECDH+prime256v1-CEUM\0"
    );
    let dh1 = req.binary_property(prop::DH1).unwrap();
    assert_eq!((dh1.len(), dh1[0]), (65, 0x04));
    assert!(req
        .binary_property(prop::C_ID)
        .unwrap()
        .starts_with(b"-----BEGIN CERTIFICATE-----"));
    let reply = p.reply(&req).unwrap();
    assert_eq!(
        names(&reply),
        [
            "c.id",
            "c.perm",
            "c.pdata",
            "c.dsign_algo",
            "c.kagree_algo",
            "dh2",
            "challenge1",
            "challenge2",
            "dh1",
            "hash_c2",
            "hash_c1",
            "signature"
        ]
    );
    let (fin, _) = p.finish(&reply).unwrap();
    assert_eq!(
        names(&fin),
        [
            "challenge1",
            "challenge2",
            "dh1",
            "dh2",
            "hash_c2",
            "hash_c1",
            "signature"
        ]
    );
}

#[test]
fn optional_fields_are_never_required() {
    // Cyclone without IncludeOptionalFields omits hash_c1 (Request), dh1/hash_c1/hash_c2
    // (Reply) and dh1/dh2/hash_c1/hash_c2 (Final).
    let ca = ca(IdentityAlgo::EcPrime256v1);
    let mut p = pair(
        authenticator(
            identity(&ca, "a", IdentityAlgo::EcPrime256v1, 1),
            AuthOptions::default(),
        ),
        authenticator(
            identity(&ca, "b", IdentityAlgo::EcPrime256v1, 2),
            AuthOptions::default(),
        ),
    );
    let strip = |t: &mut DataHolder, names: &[&str]| {
        t.binary_properties
            .retain(|b| !names.contains(&b.name.as_str()));
    };
    let mut req = p.request();
    strip(&mut req, &["hash_c1"]);
    let mut reply = p.reply(&req).unwrap();
    strip(&mut reply, &["dh1", "hash_c1", "hash_c2"]);
    let (mut fin, oi) = p.finish(&reply).unwrap();
    strip(&mut fin, &["dh1", "dh2", "hash_c1", "hash_c2"]);
    let or = p.complete(&fin).unwrap();
    assert_eq!(oi.shared_secret, or.shared_secret);
}

fn ec_pair() -> Pair {
    let ca = ca(IdentityAlgo::EcPrime256v1);
    pair(
        authenticator(
            identity(&ca, "a", IdentityAlgo::EcPrime256v1, 1),
            AuthOptions::default(),
        ),
        authenticator(
            identity(&ca, "b", IdentityAlgo::EcPrime256v1, 2),
            AuthOptions::default(),
        ),
    )
}

fn set(t: &mut DataHolder, name: &str, f: impl FnOnce(&mut Vec<u8>)) {
    f(&mut t
        .binary_properties
        .iter_mut()
        .find(|b| b.name == name)
        .unwrap()
        .value)
}

#[test]
fn tampered_signatures_are_rejected() {
    for algo in [IdentityAlgo::EcPrime256v1, IdentityAlgo::Rsa2048] {
        let ca = ca(algo);
        let mut p = pair(
            authenticator(identity(&ca, "a", algo, 1), AuthOptions::default()),
            authenticator(identity(&ca, "b", algo, 2), AuthOptions::default()),
        );
        let req = p.request();
        let reply = p.reply(&req).unwrap();
        let mut bad = reply.clone();
        set(&mut bad, prop::SIGNATURE, |v| {
            let n = v.len() / 2;
            v[n] ^= 1
        });
        assert_eq!(
            p.finish(&bad).unwrap_err(),
            AuthError::BadSignature { message: "Reply" }
        );
        // A signature by the right key over other data (dh2 swapped) fails too.
        let mut bad = reply.clone();
        let other = p.repl.begin_handshake([0xff; 16], NOW, &mut p.e).unwrap();
        let other_dh = other.binary_property(prop::DH1).unwrap().to_vec();
        set(&mut bad, prop::DH2, |v| *v = other_dh);
        assert_eq!(
            p.finish(&bad).unwrap_err(),
            AuthError::BadSignature { message: "Reply" }
        );
        // The pending handshake survives forged Replies.
        let (fin, _) = p.finish(&reply).unwrap();
        let mut bad = fin.clone();
        set(&mut bad, prop::SIGNATURE, |v| v[3] ^= 0x40);
        assert_eq!(
            p.complete(&bad).unwrap_err(),
            AuthError::BadSignature { message: "Final" }
        );
        p.complete(&fin).unwrap();
    }
}

#[test]
fn certificate_from_another_ca_is_rejected() {
    let ours = ca(IdentityAlgo::EcPrime256v1);
    let theirs = ca(IdentityAlgo::EcPrime256v1); // same name, other key
    let a = identity(&ours, "a", IdentityAlgo::EcPrime256v1, 1);
    // b's identity is issued by another CA but b trusts ours (so it accepts a).
    let b_cert = issue_identity(
        &theirs,
        "b",
        IdentityAlgo::EcPrime256v1,
        7,
        NOW - DAY,
        NOW + DAY,
    )
    .unwrap();
    let err = LocalIdentity::from_parts(
        ours.cert.clone(),
        b_cert.cert.clone(),
        b_cert.key.clone(),
        &candidate(2),
        NOW,
        "b.pem",
        "b.key",
    )
    .unwrap_err();
    assert!(
        matches!(err, AuthError::CertificateRejected { ref what, .. } if what == "b.pem"),
        "{err}"
    );
    let b = LocalIdentity::from_parts(
        theirs.cert.clone(),
        b_cert.cert,
        b_cert.key,
        &candidate(2),
        NOW,
        "b.pem",
        "b.key",
    )
    .unwrap();
    // Let b trust our CA: an identity whose own chain is theirs but whose trust anchor is
    // ours cannot be built, so run the check from both sides of a mixed pair instead.
    let mut p = pair(
        authenticator(a, AuthOptions::default()),
        authenticator(b, AuthOptions::default()),
    );
    let req = p.request();
    let err = p.reply(&req).unwrap_err();
    let AuthError::PeerCertificate { message, source } = &err else {
        panic!("{err}")
    };
    assert_eq!(*message, "Request");
    assert!(
        matches!(**source, AuthError::CertificateRejected { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("c.id"), "{err}");
    assert_eq!(p.repl.pending(), 0);
}

#[test]
fn expired_and_not_yet_valid_certificates_are_rejected() {
    let ca = generate_ca(
        "Identity CA",
        IdentityAlgo::EcPrime256v1,
        NOW - 60 * DAY,
        NOW + 60 * DAY,
    )
    .unwrap();
    let old = issue_identity(
        &ca,
        "old",
        IdentityAlgo::EcPrime256v1,
        3,
        NOW - 30 * DAY,
        NOW - DAY,
    )
    .unwrap();
    let err = LocalIdentity::from_parts(
        ca.cert.clone(),
        old.cert.clone(),
        old.key.clone(),
        &candidate(3),
        NOW,
        "old.pem",
        "old.key",
    )
    .unwrap_err();
    assert!(
        matches!(err, AuthError::CertificateExpired { ref what, .. } if what == "old.pem"),
        "{err}"
    );
    let early = issue_identity(
        &ca,
        "early",
        IdentityAlgo::EcPrime256v1,
        4,
        NOW + DAY,
        NOW + 2 * DAY,
    )
    .unwrap();
    let err = LocalIdentity::from_parts(
        ca.cert.clone(),
        early.cert,
        early.key,
        &candidate(4),
        NOW,
        "early.pem",
        "early.key",
    )
    .unwrap_err();
    assert!(
        matches!(err, AuthError::CertificateNotYetValid { .. }),
        "{err}"
    );

    // A peer whose certificate was valid when it loaded it but has expired by `now`.
    let stale = LocalIdentity::from_parts(
        ca.cert.clone(),
        old.cert,
        old.key,
        &candidate(3),
        NOW - 2 * DAY,
        "old.pem",
        "old.key",
    )
    .unwrap();
    let fresh = identity(&ca, "fresh", IdentityAlgo::EcPrime256v1, 5);
    let mut p = pair(
        authenticator(stale, AuthOptions::default()),
        authenticator(fresh, AuthOptions::default()),
    );
    let stale_is_initiator = p.init.identity().subject_name().ends_with("CN=old");
    let req = p.request();
    if stale_is_initiator {
        let err = p.reply(&req).unwrap_err();
        assert!(
            matches!(&err, AuthError::PeerCertificate { message: "Request", source } if matches!(**source, AuthError::CertificateExpired { .. })),
            "{err}"
        );
    } else {
        let reply = p.reply(&req).unwrap();
        let err = p.finish(&reply).unwrap_err();
        assert!(
            matches!(&err, AuthError::PeerCertificate { message: "Reply", source } if matches!(**source, AuthError::CertificateExpired { .. })),
            "{err}"
        );
    }
}

#[test]
fn wrong_challenge_echo_is_rejected() {
    let mut p = ec_pair();
    let req = p.request();
    let reply = p.reply(&req).unwrap();
    let mut bad = reply.clone();
    set(&mut bad, prop::CHALLENGE1, |v| v[0] ^= 1);
    assert_eq!(
        p.finish(&bad).unwrap_err(),
        AuthError::ChallengeMismatch {
            message: "Reply",
            property: "challenge1"
        }
    );
    let (fin, _) = p.finish(&reply).unwrap();
    for name in [prop::CHALLENGE1, prop::CHALLENGE2] {
        let mut bad = fin.clone();
        set(&mut bad, name, |v| v[31] ^= 0x80);
        assert_eq!(
            p.complete(&bad).unwrap_err(),
            AuthError::ChallengeMismatch {
                message: "Final",
                property: name
            }
        );
    }
    let mut bad = fin.clone();
    set(&mut bad, prop::CHALLENGE2, |v| v.truncate(31));
    assert!(matches!(
        p.complete(&bad).unwrap_err(),
        AuthError::BadProperty {
            property: "challenge2",
            ..
        }
    ));
    p.complete(&fin).unwrap();
}

#[test]
fn replayed_and_reordered_messages_are_rejected() {
    let mut p = ec_pair();
    let (ig, rg) = (p.ig(), p.rg());
    // Reordered: a Final or a Reply nobody waits for.
    let req = p.request();
    let reply = p.reply(&req).unwrap();
    let unexpected = |r: Result<HandshakeStep, AuthError>| {
        assert!(
            matches!(r, Err(AuthError::UnexpectedMessage { .. })),
            "{r:?}"
        )
    };
    unexpected(p.repl.process(ig, &reply, NOW, &mut p.e)); // Reply to the replier
    let (fin, _) = p.finish(&reply).unwrap();
    unexpected(p.init.process(rg, &fin, NOW, &mut p.e)); // Final to the initiator
    p.complete(&fin).unwrap();
    // Replayed after completion.
    unexpected(p.init.process(rg, &reply, NOW, &mut p.e));
    unexpected(p.repl.process(ig, &fin, NOW, &mut p.e));
    // A Reply from an earlier round does not complete a new one.
    let req2 = p.request();
    let err = p.finish(&reply).unwrap_err();
    assert_eq!(
        err,
        AuthError::ChallengeMismatch {
            message: "Reply",
            property: "challenge1"
        }
    );
    // Nor does an old Final complete a new Reply.
    let reply2 = p.reply(&req2).unwrap();
    assert!(matches!(
        p.complete(&fin).unwrap_err(),
        AuthError::ChallengeMismatch { .. }
    ));
    let (fin2, oi) = p.finish(&reply2).unwrap();
    let or = p.complete(&fin2).unwrap();
    assert_eq!(oi.shared_secret, or.shared_secret);
    // An unrelated class is rejected.
    unexpected(p.repl.process(
        ig,
        &DataHolder::new("DDS:Auth:PKI-DH:1.0+Bogus"),
        NOW,
        &mut p.e,
    ));
}

#[test]
fn bad_request_contents_are_rejected_with_the_property_named() {
    let mut p = ec_pair();
    let req = p.request();

    let mut bad = req.clone();
    bad.binary_properties.retain(|b| b.name != "dh1");
    assert_eq!(
        p.reply(&bad).unwrap_err(),
        AuthError::MissingProperty {
            message: "Request",
            property: "dh1"
        }
    );
    let mut bad = req.clone();
    set(&mut bad, prop::HASH_C1, |v| v[5] ^= 1);
    assert!(matches!(
        p.reply(&bad).unwrap_err(),
        AuthError::BadProperty {
            property: "hash_c1",
            ..
        }
    ));
    let mut bad = req.clone();
    set(&mut bad, prop::DH1, |v| v[40] ^= 1); // off the curve
    assert!(matches!(
        p.reply(&bad).unwrap_err(),
        AuthError::BadProperty {
            property: "dh1",
            ..
        }
    ));
    let mut bad = req.clone();
    set(&mut bad, prop::C_KAGREE_ALGO, |v| {
        *v = b"DH+MODP-1024-160".to_vec()
    });
    assert!(matches!(
        p.reply(&bad).unwrap_err(),
        AuthError::BadProperty {
            property: "c.kagree_algo",
            ..
        }
    ));
    // c.pdata naming another participant than the sender.
    let mut bad = req.clone();
    set(&mut bad, prop::C_PDATA, |v| v[4 + 11] ^= 1);
    assert!(matches!(
        p.reply(&bad).unwrap_err(),
        AuthError::PdataGuid { .. }
    ));
    // c.pdata whose GUID does not derive from the certificate (Cyclone's check).
    let mut bad = req.clone();
    set(&mut bad, prop::C_PDATA, |v| v[4] ^= 1);
    let ig = p.ig();
    let mut other = ig;
    other[0] ^= 1;
    let err = p.repl.process(other, &bad, NOW, &mut p.e).unwrap_err();
    assert!(
        matches!(&err, AuthError::PdataGuid { reason, .. } if reason.contains("subject")),
        "{err}"
    );
    let mut bad = req.clone();
    set(&mut bad, prop::C_ID, |v| v.truncate(40));
    assert!(matches!(
        p.reply(&bad).unwrap_err(),
        AuthError::PeerCertificate { .. }
    ));
    assert_eq!(p.repl.pending(), 0);
    p.reply(&req).unwrap();
    assert_eq!(p.repl.pending(), 1);
}

#[test]
fn pending_handshakes_are_bounded() {
    let ca = ca(IdentityAlgo::EcPrime256v1);
    let opts = AuthOptions {
        max_pending: 3,
        handshake_timeout_secs: 30,
        ..AuthOptions::default()
    };
    // The replier has the highest GUID of all (adjusted GUIDs start with the subject hash,
    // so pick the identity that sorts last).
    let ids: Vec<LocalIdentity> = (0..6)
        .map(|i| identity(&ca, &format!("p{i}"), IdentityAlgo::EcPrime256v1, 20 + i))
        .collect();
    let top = ids.iter().map(|i| i.guid()).max().unwrap();
    let mut e = TestEntropy(7);
    let mut repl = authenticator(ids.iter().find(|i| i.guid() == top).unwrap().clone(), opts);
    let mut peers: Vec<Authenticator> = ids
        .into_iter()
        .filter(|i| i.guid() != top)
        .map(|i| authenticator(i, opts))
        .collect();
    // A flood of Requests from one peer keeps one entry.
    let first = peers[0].local_guid();
    for _ in 0..200 {
        let req = peers[0].begin_handshake(top, NOW, &mut e).unwrap();
        repl.process(first, &req, NOW, &mut e).unwrap();
        assert_eq!(repl.pending(), 1);
    }
    // Distinct peers fill the table up to the bound, then are refused...
    for p in &mut peers[1..3] {
        let req = p.begin_handshake(top, NOW, &mut e).unwrap();
        repl.process(p.local_guid(), &req, NOW, &mut e).unwrap();
    }
    assert_eq!(repl.pending(), 3);
    let req = peers[3].begin_handshake(top, NOW + 10, &mut e).unwrap();
    assert_eq!(
        repl.process(peers[3].local_guid(), &req, NOW + 10, &mut e)
            .unwrap_err(),
        AuthError::TooManyPending { max: 3 }
    );
    // ...until the old ones time out.
    repl.process(peers[3].local_guid(), &req, NOW + 31, &mut e)
        .unwrap();
    assert_eq!(repl.pending(), 1);
    // The initiator side is bounded the same way.
    let mut init = authenticator(identity(&ca, "i", IdentityAlgo::EcPrime256v1, 40), opts);
    for n in 0..3u8 {
        init.begin_handshake([n; 16], NOW, &mut e).unwrap();
        init.begin_handshake([n; 16], NOW, &mut e).unwrap();
    }
    assert_eq!(init.pending(), 3);
    assert_eq!(
        init.begin_handshake([9; 16], NOW, &mut e).unwrap_err(),
        AuthError::TooManyPending { max: 3 }
    );
    assert!(init.cancel(&[0; 16]));
    init.begin_handshake([9; 16], NOW, &mut e).unwrap();
}

#[test]
fn adjusted_guid_follows_the_cyclone_rule() {
    let ca = ca(IdentityAlgo::EcPrime256v1);
    let id = identity(&ca, "alice", IdentityAlgo::EcPrime256v1, 1);
    let der = id.certificate().subject_name().to_der().unwrap();
    let cand = candidate(1);
    let g = id.guid();
    // Independent formulation: 48-bit big-endian integer of the subject hash, shifted right
    // by one with the top bit set; then the candidate prefix hash; the entity id kept.
    let high = openssl::sha::sha256(&der);
    let low = openssl::sha::sha256(&cand[..12]);
    let mut h = [0u8; 8];
    h[2..].copy_from_slice(&high[..6]);
    let v = (u64::from_be_bytes(h) >> 1) | (1 << 47);
    assert_eq!(g[..6], v.to_be_bytes()[2..]);
    assert_eq!(g[6..12], low[..6]);
    assert_eq!(g[12..], cand[12..]);
    assert_eq!(adjusted_guid_from_subject(&der, &cand), g);
    // Known answer: empty subject, zero candidate.
    let z = adjusted_guid_from_subject(&[], &[0; 16]);
    // SHA-256("") = e3b0c442 98fc...; SHA-256(12 zero bytes) = 15ec7bf0 b50732b4 9f82...
    assert_eq!(z[..6], [0xf1, 0xd8, 0x62, 0x21, 0x4c, 0x7e]);
    assert_eq!(z[6..12], openssl::sha::sha256(&[0; 12])[..6]);
}

#[test]
fn identity_and_permissions_tokens() {
    let ca = ca(IdentityAlgo::Rsa2048);
    let id = identity(&ca, "alice", IdentityAlgo::EcPrime256v1, 1);
    let t = id.identity_token();
    assert_eq!(t.class_id, "DDS:Auth:PKI-DH:1.0");
    let names: Vec<_> = t.properties.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["dds.cert.sn", "dds.cert.algo", "dds.ca.sn", "dds.ca.algo"]
    );
    assert_eq!(
        t.property("dds.cert.sn"),
        Some("/C=NL/O=FerroDDS test PKI/CN=alice")
    );
    assert_eq!(t.property("dds.cert.algo"), Some("EC-prime256v1"));
    assert_eq!(t.property("dds.ca.algo"), Some("RSA-2048"));
    let info = parse_identity_token(&t).unwrap();
    assert_eq!(info.version, (1, 0));
    assert_eq!(
        info.ca_sn.as_deref(),
        Some("/C=NL/O=FerroDDS test PKI/CN=Identity CA")
    );
    let mut other = t.clone();
    other.class_id = "DDS:Auth:PKI-DH:2.0".into();
    assert!(matches!(
        parse_identity_token(&other),
        Err(AuthError::BadIdentityToken { .. })
    ));
    other.class_id = "DDS:Auth:PKI-RSA:1.0".into();
    assert!(parse_identity_token(&other).is_err());
    other.class_id = "DDS:Auth:PKI-DH:1.2+x".into();
    assert_eq!(parse_identity_token(&other).unwrap().version, (1, 2));

    let p = permissions_token(None);
    assert_eq!(p.class_id, "DDS:Access:Permissions:1.0");
    assert!(p.properties.is_empty());
    let p = permissions_token(Some(("/CN=perm ca", IdentityAlgo::Rsa2048)));
    assert_eq!(p.property("dds.perm_ca.sn"), Some("/CN=perm ca"));
    assert_eq!(p.property("dds.perm_ca.algo"), Some("RSA-2048"));
}

fn props(ca: &str, cert: &str, key: &str, pw: Option<&str>) -> Vec<Property> {
    let mut v = vec![
        Property::new("dds.sec.auth.identity_ca", ca),
        Property::new("dds.sec.auth.builtin.PKI-DH.identity_certificate", cert),
        Property::new("dds.sec.auth.private_key", key),
    ];
    if let Some(pw) = pw {
        v.push(Property::new("dds.sec.auth.builtin.PKI-DH.password", pw));
    }
    v
}

#[test]
fn identity_loads_from_file_and_data_uris() {
    let ca = ca(IdentityAlgo::Rsa2048);
    let id = issue_identity(&ca, "carol", IdentityAlgo::Rsa2048, 9, NOW - DAY, NOW + DAY).unwrap();
    let pem = |b: Vec<u8>| String::from_utf8(b).unwrap();
    let ca_pem = pem(ca.cert_pem().unwrap());
    let cert_pem = pem(id.cert_pem().unwrap());
    let key_pem = pem(id.key_pem().unwrap());

    // data:, URIs (and the short / long property names mixed).
    let cfg = IdentityConfig::from_properties(&props(
        &format!("data:,{ca_pem}"),
        &format!("data:,{cert_pem}"),
        &format!("data:,{key_pem}"),
        None,
    ))
    .unwrap();
    let loaded = LocalIdentity::load(&cfg, &candidate(5), NOW).unwrap();
    assert_eq!(loaded.algo(), IdentityAlgo::Rsa2048);
    assert_eq!(loaded.subject_name(), "/C=NL/O=FerroDDS test PKI/CN=carol");
    assert_eq!(loaded.guid()[0] & 0x80, 0x80);

    // file: URIs, with an encrypted key and its password.
    let dir = std::env::temp_dir().join(format!("ferrodds-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, data: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, data).unwrap();
        format!("file:{}", p.display())
    };
    let enc_key = id
        .key
        .private_key_to_pem_pkcs8_passphrase(openssl::symm::Cipher::aes_256_cbc(), b"s3cret")
        .unwrap();
    let ca_uri = write("ca.pem", ca_pem.as_bytes());
    let cert_uri = write("cert.pem", cert_pem.as_bytes());
    let key_uri = write("key.pem", &enc_key);
    let cfg = IdentityConfig::from_properties(&props(&ca_uri, &cert_uri, &key_uri, Some("s3cret")))
        .unwrap();
    let loaded = LocalIdentity::load(&cfg, &candidate(5), NOW).unwrap();
    assert_eq!(
        loaded.guid(),
        LocalIdentity::load(&cfg, &candidate(5), NOW)
            .unwrap()
            .guid()
    );

    // Wrong password: names the key file.
    let cfg = IdentityConfig::from_properties(&props(&ca_uri, &cert_uri, &key_uri, Some("nope")))
        .unwrap();
    let err = LocalIdentity::load(&cfg, &candidate(5), NOW).unwrap_err();
    assert!(matches!(err, AuthError::BadPrivateKey { .. }), "{err}");
    assert!(err.to_string().contains("key.pem"), "{err}");

    // Missing file: names it.
    let missing = format!("file:{}", dir.join("absent.pem").display());
    let cfg = IdentityConfig::from_properties(&props(&ca_uri, &missing, &key_uri, None)).unwrap();
    let err = LocalIdentity::load(&cfg, &candidate(5), NOW).unwrap_err();
    assert!(
        matches!(&err, AuthError::ReadFile { what: "identity_certificate", file, .. } if file.ends_with("absent.pem")),
        "{err}"
    );
    // Not a certificate: names the file.
    let junk = write("junk.pem", b"-----BEGIN CERTIFICATE-----\nAAAA\n");
    let cfg = IdentityConfig::from_properties(&props(&junk, &cert_uri, &key_uri, None)).unwrap();
    let err = LocalIdentity::load(&cfg, &candidate(5), NOW).unwrap_err();
    assert!(
        matches!(&err, AuthError::BadCertificate { what, .. } if what.contains("junk.pem")),
        "{err}"
    );
    // Another identity's key.
    let other =
        issue_identity(&ca, "dave", IdentityAlgo::Rsa2048, 10, NOW - DAY, NOW + DAY).unwrap();
    let other_key = write("other.pem", &other.key_pem().unwrap());
    let cfg =
        IdentityConfig::from_properties(&props(&ca_uri, &cert_uri, &other_key, None)).unwrap();
    assert!(matches!(
        LocalIdentity::load(&cfg, &candidate(5), NOW).unwrap_err(),
        AuthError::KeyMismatch { .. }
    ));
    std::fs::remove_dir_all(&dir).unwrap();

    // Unsupported scheme and missing property.
    let cfg = IdentityConfig::from_properties(&props("pkcs11:token=x", &cert_uri, &key_uri, None))
        .unwrap();
    assert_eq!(
        LocalIdentity::load(&cfg, &candidate(5), NOW).unwrap_err(),
        AuthError::UnsupportedUri {
            what: "identity_ca",
            scheme: "pkcs11".into()
        }
    );
    let err = IdentityConfig::from_properties(&props("x", "y", "z", None)[1..]).unwrap_err();
    assert_eq!(
        err,
        AuthError::MissingConfig {
            property: "dds.sec.auth.builtin.PKI-DH.identity_ca"
        }
    );
}

#[test]
fn unsupported_key_sizes_are_rejected() {
    let ca = ca(IdentityAlgo::EcPrime256v1);
    let key = openssl::pkey::PKey::from_rsa(openssl::rsa::Rsa::generate(1024).unwrap()).unwrap();
    let mut b = openssl::x509::X509::builder().unwrap();
    b.set_version(2).unwrap();
    b.set_subject_name(ca.cert.subject_name()).unwrap();
    b.set_issuer_name(ca.cert.subject_name()).unwrap();
    b.set_not_before(&openssl::asn1::Asn1Time::from_unix(NOW - DAY).unwrap())
        .unwrap();
    b.set_not_after(&openssl::asn1::Asn1Time::from_unix(NOW + DAY).unwrap())
        .unwrap();
    b.set_pubkey(&key).unwrap();
    b.sign(&ca.key, openssl::hash::MessageDigest::sha256())
        .unwrap();
    let err = LocalIdentity::from_parts(
        ca.cert.clone(),
        b.build(),
        key,
        &candidate(1),
        NOW,
        "small.pem",
        "small.key",
    )
    .unwrap_err();
    assert!(
        matches!(err, AuthError::UnsupportedKey { ref what, .. } if what == "small.pem"),
        "{err}"
    );
}

#[test]
fn announced_future_challenges_are_used_and_checked() {
    use ferrodds_security::auth::{auth_request_token, parse_auth_request};
    // The replier announces its challenge2; the initiator checks the Reply carries it.
    let mut p = ec_pair();
    let (ig, rg) = (p.ig(), p.rg());
    let token = p.repl.auth_request(ig, NOW, &mut p.e).unwrap();
    assert_eq!(token.class_id, "DDS:Auth:PKI-DH:1.0+AuthReq");
    assert_eq!(p.repl.auth_request(ig, NOW, &mut p.e).unwrap(), token);
    let announced = parse_auth_request(&token).unwrap();
    p.init.note_auth_request(rg, &token, NOW).unwrap();
    let (oi, or) = p.run();
    assert_eq!(oi.challenge2, announced);
    assert_eq!(or.challenge2, announced);

    // The initiator announces its challenge1 (as Cyclone uses one challenge for both).
    let mut p = ec_pair();
    let (ig, rg) = (p.ig(), p.rg());
    let token = p.init.auth_request(rg, NOW, &mut p.e).unwrap();
    p.repl.note_auth_request(ig, &token, NOW).unwrap();
    let (oi, _) = p.run();
    assert_eq!(oi.challenge1, parse_auth_request(&token).unwrap());

    // A Reply or Request whose challenge is not the announced one is refused.
    let mut p = ec_pair();
    let (ig, rg) = (p.ig(), p.rg());
    p.init
        .note_auth_request(rg, &auth_request_token(&[5; 32]), NOW)
        .unwrap();
    let req = p.request();
    let reply = p.reply(&req).unwrap();
    assert_eq!(
        p.finish(&reply).unwrap_err(),
        AuthError::ChallengeMismatch {
            message: "Reply",
            property: "challenge2"
        }
    );
    p.repl
        .note_auth_request(ig, &auth_request_token(&[6; 32]), NOW)
        .unwrap();
    assert_eq!(
        p.reply(&req).unwrap_err(),
        AuthError::ChallengeMismatch {
            message: "Request",
            property: "challenge1"
        }
    );

    // Malformed AuthRequest tokens.
    let mut bad = auth_request_token(&[1; 32]);
    bad.binary_properties[0].value.pop();
    assert!(matches!(
        parse_auth_request(&bad).unwrap_err(),
        AuthError::BadProperty {
            property: "future_challenge",
            ..
        }
    ));
    bad.binary_properties.clear();
    assert!(matches!(
        parse_auth_request(&bad).unwrap_err(),
        AuthError::MissingProperty { .. }
    ));
    assert!(matches!(
        p.init
            .note_auth_request(rg, &DataHolder::new(HANDSHAKE_REQUEST_CLASS_ID), NOW)
            .unwrap_err(),
        AuthError::UnexpectedMessage { .. }
    ));
}

#[test]
fn identity_without_digital_signature_usage_is_rejected() {
    use openssl::x509::extension::KeyUsage;
    let ca = ca(IdentityAlgo::EcPrime256v1);
    let key = ferrodds_security::auth::pki::generate_key(IdentityAlgo::EcPrime256v1).unwrap();
    let mut name = openssl::x509::X509Name::builder().unwrap();
    name.append_entry_by_text("CN", "no-sign").unwrap();
    let name = name.build();
    let mut b = openssl::x509::X509::builder().unwrap();
    b.set_version(2).unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_issuer_name(ca.cert.subject_name()).unwrap();
    b.set_not_before(&openssl::asn1::Asn1Time::from_unix(NOW - DAY).unwrap())
        .unwrap();
    b.set_not_after(&openssl::asn1::Asn1Time::from_unix(NOW + DAY).unwrap())
        .unwrap();
    b.set_pubkey(&key).unwrap();
    b.append_extension(KeyUsage::new().key_encipherment().build().unwrap())
        .unwrap();
    b.sign(&ca.key, openssl::hash::MessageDigest::sha256())
        .unwrap();
    let err = LocalIdentity::from_parts(
        ca.cert.clone(),
        b.build(),
        key,
        &candidate(1),
        NOW,
        "nosign.pem",
        "nosign.key",
    )
    .unwrap_err();
    assert_eq!(
        err,
        AuthError::KeyUsage {
            what: "nosign.pem".into()
        }
    );
}
