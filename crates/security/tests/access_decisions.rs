//! Access decisions with a PKI made at test time (so nothing expires): signatures from another
//! CA are rejected, deny rules beat later allow rules, partitions, validity, join access
//! control, subject matching and the tokens.

use std::time::{Duration, SystemTime};

use ferrodds_security::access::{
    AccessControl, AccessDenied, AccessError, Action, DecidingRule, Governance, Permissions,
    PermissionsCa, PermissionsCredential, PermissionsToken, SubjectName,
};
use openssl::asn1::Asn1Time;
use openssl::bn::BigNum;
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkcs7::{Pkcs7, Pkcs7Flags};
use openssl::pkey::{PKey, Private};
use openssl::stack::Stack;
use openssl::x509::extension::BasicConstraints;
use openssl::x509::{X509NameBuilder, X509};

/// A self-signed EC P-256 CA valid from yesterday for a week.
fn make_ca(cn: &str) -> (X509, PKey<Private>) {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
    let key = PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap();
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_text("O", "FerroDDS tests").unwrap();
    name.append_entry_by_text("CN", cn).unwrap();
    let name = name.build();
    let mut b = X509::builder().unwrap();
    b.set_version(2).unwrap();
    b.set_serial_number(&BigNum::from_u32(1).unwrap().to_asn1_integer().unwrap())
        .unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_issuer_name(&name).unwrap();
    b.set_pubkey(&key).unwrap();
    b.set_not_before(&Asn1Time::from_unix(now_unix() - 86_400).unwrap())
        .unwrap();
    b.set_not_after(&Asn1Time::days_from_now(7).unwrap())
        .unwrap();
    b.append_extension(BasicConstraints::new().critical().ca().build().unwrap())
        .unwrap();
    b.sign(&key, MessageDigest::sha256()).unwrap();
    (b.build(), key)
}

fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// `openssl smime -sign -text` equivalent.
fn sign(doc: &str, (cert, key): &(X509, PKey<Private>)) -> Vec<u8> {
    let flags = Pkcs7Flags::TEXT | Pkcs7Flags::DETACHED;
    let p7 = Pkcs7::sign(cert, key, &Stack::new().unwrap(), doc.as_bytes(), flags).unwrap();
    p7.to_smime(doc.as_bytes(), flags).unwrap()
}

fn ca_of(pki: &(X509, PKey<Private>)) -> PermissionsCa {
    PermissionsCa::from_pem(&pki.0.to_pem().unwrap(), "test-ca.pem").unwrap()
}

const GOVERNANCE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<dds>
  <domain_access_rules>
    <domain_rule>
      <domains><id_range><min>0</min><max>9</max></id_range></domains>
      <allow_unauthenticated_participants>FALSE</allow_unauthenticated_participants>
      <enable_join_access_control>TRUE</enable_join_access_control>
      <discovery_protection_kind>ENCRYPT</discovery_protection_kind>
      <liveliness_protection_kind>SIGN</liveliness_protection_kind>
      <rtps_protection_kind>SIGN</rtps_protection_kind>
      <topic_access_rules>
        <topic_rule>
          <topic_expression>Open*</topic_expression>
          <enable_discovery_protection>false</enable_discovery_protection>
          <enable_liveliness_protection>false</enable_liveliness_protection>
          <enable_read_access_control>false</enable_read_access_control>
          <enable_write_access_control>false</enable_write_access_control>
          <metadata_protection_kind>NONE</metadata_protection_kind>
          <data_protection_kind>NONE</data_protection_kind>
        </topic_rule>
        <topic_rule>
          <topic_expression>*</topic_expression>
          <enable_discovery_protection>true</enable_discovery_protection>
          <enable_liveliness_protection>false</enable_liveliness_protection>
          <enable_read_access_control>true</enable_read_access_control>
          <enable_write_access_control>true</enable_write_access_control>
          <metadata_protection_kind>ENCRYPT</metadata_protection_kind>
          <data_protection_kind>ENCRYPT</data_protection_kind>
        </topic_rule>
      </topic_access_rules>
    </domain_rule>
  </domain_access_rules>
</dds>
"#;

const ALICE: &str = "CN=alice, O=FerroDDS tests, C=ES";

fn permissions_xml(not_before: &str, not_after: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<dds>
  <permissions>
    <grant name="Alice">
      <subject_name>/C=ES/O=FerroDDS tests/CN=alice</subject_name>
      <validity><not_before>{not_before}</not_before><not_after>{not_after}</not_after></validity>
      <deny_rule>
        <domains><id>0</id></domains>
        <publish><topics><topic>Secret*</topic></topics></publish>
        <subscribe><topics><topic>*</topic></topics><partitions><partition>hidden</partition></partitions></subscribe>
      </deny_rule>
      <allow_rule>
        <domains><id_range><min>0</min><max>3</max></id_range></domains>
        <publish><topics><topic>*</topic></topics></publish>
        <subscribe>
          <topics><topic>Square</topic><topic>Circle</topic></topics>
          <partitions><partition>A*</partition><partition></partition></partitions>
        </subscribe>
      </allow_rule>
      <default>DENY</default>
    </grant>
    <grant name="Bob">
      <subject_name>CN=bob, O=FerroDDS tests</subject_name>
      <validity><not_before>2020-01-01T00:00:00</not_before><not_after>2100-01-01T00:00:00+02:00</not_after></validity>
      <allow_rule>
        <domains><id>7</id></domains>
        <subscribe><topics><topic>Square</topic></topics></subscribe>
      </allow_rule>
      <default>ALLOW</default>
    </grant>
  </permissions>
</dds>
"#
    )
}

struct Setup {
    pki: (X509, PKey<Private>),
    ac: AccessControl,
}

fn setup(not_before: &str, not_after: &str) -> Setup {
    let pki = make_ca("Permissions CA");
    let ca = ca_of(&pki);
    let gov = Governance::from_signed(&sign(GOVERNANCE, &pki), "gov.p7s", &ca).unwrap();
    let perms = sign(&permissions_xml(not_before, not_after), &pki);
    let ac = AccessControl::new(
        ca,
        gov,
        &perms,
        "alice.p7s",
        &SubjectName::parse(ALICE).unwrap(),
    )
    .unwrap();
    Setup { pki, ac }
}

fn valid() -> Setup {
    setup("2020-01-01T00:00:00Z", "2100-01-01T00:00:00Z")
}

fn now() -> SystemTime {
    SystemTime::now()
}

#[test]
fn another_ca_is_rejected() {
    let ours = make_ca("Permissions CA");
    let theirs = make_ca("Permissions CA"); // same name, other key
    let signed = sign(GOVERNANCE, &theirs);
    let err = Governance::from_signed(&signed, "gov.p7s", &ca_of(&ours)).unwrap_err();
    assert!(matches!(err, AccessError::Signature { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.starts_with("gov.p7s: signature does not verify against the permissions CA"),
        "{msg}"
    );
    // And the right CA accepts the same bytes.
    assert!(Governance::from_signed(&signed, "gov.p7s", &ca_of(&theirs)).is_ok());
    // A signature by a non-CA key of ours, then the committed perftest CA against ours.
    let perms = sign(
        &permissions_xml("2020-01-01T00:00:00", "2100-01-01T00:00:00"),
        &theirs,
    );
    assert!(Permissions::from_signed(&perms, "p.p7s", &ca_of(&ours)).is_err());
    let committed = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tools/perftest/resource/secure/signed_PerftestGovernance_RTPSSign.xml"),
    )
    .unwrap();
    assert!(Governance::from_signed(&committed, "committed", &ca_of(&ours)).is_err());
    // Unsigned XML is not accepted where a signed document is expected.
    let err =
        Governance::from_signed(GOVERNANCE.as_bytes(), "plain.xml", &ca_of(&ours)).unwrap_err();
    assert!(
        err.to_string().contains("not an S/MIME signed document"),
        "{err}"
    );
}

#[test]
fn deny_rule_before_allow_wins_and_default_applies() {
    let s = valid();
    let ac = &s.ac;
    // Writers: deny_rule #1 for Secret* beats allow_rule #2 for *.
    ac.check_create_datawriter(0, "Square", &[], now()).unwrap();
    let err = ac
        .check_create_datawriter(0, "SecretPlans", &[], now())
        .unwrap_err();
    match &err {
        AccessDenied::TopicDenied(d) => {
            assert_eq!(d.rule, DecidingRule::DenyRule(1));
            assert_eq!(d.action, Action::Publish);
            assert_eq!(d.topic, "SecretPlans");
            assert_eq!(d.grant, "Alice");
        }
        other => panic!("{other}"),
    }
    let msg = err.to_string();
    for part in [
        "alice.p7s",
        "/C=ES/O=FerroDDS tests/CN=alice",
        "publish",
        "'SecretPlans'",
        "rule #1 (deny_rule)",
        "domain 0",
    ] {
        assert!(msg.contains(part), "{msg} lacks {part}");
    }
    // The deny rule covers domain 0 only; in domain 1 the allow rule applies.
    ac.check_create_datawriter(1, "SecretPlans", &[], now())
        .unwrap();
    // Domain 4..9: no rule covers it, default DENY.
    let err = ac
        .check_create_datawriter(5, "Square", &[], now())
        .unwrap_err();
    assert!(
        matches!(&err, AccessDenied::TopicDenied(d) if d.rule == DecidingRule::DefaultDeny),
        "{err}"
    );
    // Topics whose rule has no write/read access control are not checked.
    ac.check_create_datawriter(5, "OpenTopic", &[], now())
        .unwrap();
    ac.check_create_datareader(9, "OpenTopic", &["hidden"], now())
        .unwrap();
    // Outside the governance's domains: no domain rule.
    let err = ac
        .check_create_datawriter(10, "Square", &[], now())
        .unwrap_err();
    assert_eq!(
        err,
        AccessDenied::NoDomainRule {
            file: "gov.p7s".into(),
            domain_id: 10
        }
    );
}

#[test]
fn partitions_on_readers() {
    let s = valid();
    let ac = &s.ac;
    ac.check_create_datareader(0, "Square", &[], now()).unwrap(); // default partition "" allowed
    ac.check_create_datareader(0, "Circle", &["Alpha", "A"], now())
        .unwrap();
    // Allow needs every partition covered.
    let err = ac
        .check_create_datareader(1, "Circle", &["Alpha", "Beta"], now())
        .unwrap_err();
    assert!(
        matches!(&err, AccessDenied::TopicDenied(d) if d.rule == DecidingRule::DefaultDeny),
        "{err}"
    );
    // Deny applies when any partition matches it (domain 0 only).
    let err = ac
        .check_create_datareader(0, "Square", &["Alpha", "hidden"], now())
        .unwrap_err();
    assert!(
        matches!(&err, AccessDenied::TopicDenied(d) if d.rule == DecidingRule::DenyRule(1)),
        "{err}"
    );
    assert!(err.to_string().contains("\"hidden\""), "{err}");
    // Topic not in the subscribe list.
    assert!(ac
        .check_create_datareader(0, "Triangle", &[], now())
        .is_err());
}

#[test]
fn validity_is_checked_against_now() {
    let s = setup("2020-01-01T00:00:00", "2024-06-30T12:00:00Z");
    let err = s.ac.check_create_participant(0, now()).unwrap_err();
    assert!(matches!(err, AccessDenied::Expired { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("'Alice'") && msg.contains("expired at 2024-06-30"),
        "{msg}"
    );
    // The same grant, judged at a time inside its validity, passes; `now` is an input.
    let mid = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000); // 2023-11
    s.ac.check_create_participant(0, mid).unwrap();
    s.ac.check_create_datawriter(0, "Square", &[], mid).unwrap();
    assert!(matches!(
        s.ac.check_create_datawriter(0, "Square", &[], now()),
        Err(AccessDenied::Expired { .. })
    ));
    let early = SystemTime::UNIX_EPOCH + Duration::from_secs(1_500_000_000); // 2017
    assert!(matches!(
        s.ac.check_create_participant(0, early),
        Err(AccessDenied::NotYetValid { .. })
    ));
    // A malformed date is a parse error naming the element.
    let xml = permissions_xml("2020-13-01T00:00:00", "2100-01-01T00:00:00");
    let msg = Permissions::parse_xml(&xml, "p.xml")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("<not_before> has invalid value '2020-13-01T00:00:00'"),
        "{msg}"
    );
}

#[test]
fn join_access_control_and_remote_permissions() {
    let s = valid();
    let ac = &s.ac;
    ac.check_create_participant(0, now()).unwrap();
    // Alice's allow rule covers 0..3; 5 is covered by no rule and her default is DENY.
    let err = ac.check_create_participant(5, now()).unwrap_err();
    assert!(
        matches!(&err, AccessDenied::JoinDenied { domain_id: 5, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("enable_join_access_control"),
        "{err}"
    );

    // Bob, remote: the same signed document, selected by his authenticated subject.
    let signed = sign(
        &permissions_xml("2020-01-01T00:00:00", "2100-01-01T00:00:00"),
        &s.pki,
    );
    let bob = SubjectName::parse("O=FerroDDS tests,CN=bob").unwrap();
    let remote = ac
        .validate_remote_permissions(&signed, "bob c.perm", &bob)
        .unwrap();
    assert_eq!(remote.grant().name, "Bob");
    ac.check_remote_participant(7, &remote, now()).unwrap();
    ac.check_remote_participant(2, &remote, now()).unwrap(); // no rule covers 2, default ALLOW
    ac.check_remote_datareader(7, &remote, "Square", &[], now())
        .unwrap();
    ac.check_remote_datawriter(7, &remote, "Anything", &[], now())
        .unwrap(); // default ALLOW
                   // Alice's rules judge Alice, not Bob.
    ac.check_remote_datawriter(0, &remote, "SecretPlans", &[], now())
        .unwrap();

    // A subject with no grant.
    let carol = SubjectName::parse("CN=carol, O=FerroDDS tests").unwrap();
    let err = ac
        .validate_remote_permissions(&signed, "carol c.perm", &carol)
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("carol c.perm") && msg.contains("no grant") && msg.contains("CN=carol"),
        "{msg}"
    );
    // Bob's subject with an extra attribute does not match.
    let bob_ou = SubjectName::parse("CN=bob, O=FerroDDS tests, OU=x").unwrap();
    assert!(ac
        .validate_remote_permissions(&signed, "c.perm", &bob_ou)
        .is_err());
    // Remote permissions signed by another CA.
    let other = make_ca("Other CA");
    let forged = sign(
        &permissions_xml("2020-01-01T00:00:00", "2100-01-01T00:00:00"),
        &other,
    );
    let err = ac
        .validate_remote_permissions(&forged, "forged", &bob)
        .unwrap_err();
    assert!(matches!(err, AccessError::Signature { .. }), "{err}");
    // The local participant must have a grant too.
    let pki = make_ca("Permissions CA");
    let ca = ca_of(&pki);
    let gov = Governance::from_signed(&sign(GOVERNANCE, &pki), "gov.p7s", &ca).unwrap();
    let perms = sign(
        &permissions_xml("2020-01-01T00:00:00", "2100-01-01T00:00:00"),
        &pki,
    );
    let err = AccessControl::new(ca, gov, &perms, "mine.p7s", &carol).unwrap_err();
    assert!(
        matches!(&err, AccessError::Denied(d) if matches!(**d, AccessDenied::NoGrant { .. })),
        "{err}"
    );
}

#[test]
fn endpoint_attributes_and_tokens() {
    let s = valid();
    let e = s.ac.endpoint_security_attributes(0, "Square").unwrap();
    assert!(e.is_read_protected && e.is_write_protected && e.is_discovery_protected);
    assert!(e.is_submessage_protected() && e.is_payload_protected() && e.is_key_protected());
    let open = s.ac.endpoint_security_attributes(0, "OpenX").unwrap();
    assert!(!open.is_read_protected && !open.is_submessage_protected());
    let p = s.ac.participant_security_attributes(3).unwrap();
    assert!(p.is_access_protected && p.is_rtps_protected() && p.is_discovery_protected());

    let token = s.ac.permissions_token();
    assert_eq!(token.class_id, "DDS:Access:Permissions:1.0");
    assert_eq!(PermissionsToken::CLASS_ID, token.class_id);
    let names: Vec<&str> = token.properties.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["dds.perm_ca.sn", "dds.perm_ca.algo"]);
    assert_eq!(token.properties[0].1, "O=FerroDDS tests, CN=Permissions CA");
    assert_eq!(token.properties[1].1, "EC-prime256v1");
    let cred = s.ac.permissions_credential();
    assert_eq!(cred.class_id, PermissionsCredential::CLASS_ID);
    assert_eq!(cred.class_id, "DDS:Access:PermissionsCredential");
    assert_eq!(cred.properties[0].0, "dds.perm.cert");
    assert!(cred.properties[0].1.contains("multipart/signed"));
    // The credential is what a peer verifies: it round-trips through validate_remote_permissions.
    let alice = SubjectName::parse(ALICE).unwrap();
    let remote =
        s.ac.validate_remote_permissions(cred.properties[0].1.as_bytes(), "echo", &alice)
            .unwrap();
    assert_eq!(remote.grant().name, "Alice");
}

#[test]
fn rsa_permissions_ca_and_bad_ca_files() {
    // An RSA-2048 permissions CA signs and verifies too, and names its algorithm.
    let rsa = openssl::rsa::Rsa::generate(2048).unwrap();
    let key = PKey::from_rsa(rsa).unwrap();
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", "RSA CA").unwrap();
    let name = name.build();
    let mut b = X509::builder().unwrap();
    b.set_version(2).unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_issuer_name(&name).unwrap();
    b.set_pubkey(&key).unwrap();
    b.set_not_before(&Asn1Time::from_unix(now_unix() - 60).unwrap())
        .unwrap();
    b.set_not_after(&Asn1Time::days_from_now(1).unwrap())
        .unwrap();
    b.append_extension(BasicConstraints::new().critical().ca().build().unwrap())
        .unwrap();
    b.sign(&key, MessageDigest::sha256()).unwrap();
    let pki = (b.build(), key);
    let ca = ca_of(&pki);
    assert_eq!(ca.algorithm(), "RSA-2048");
    assert_eq!(ca.permissions_token().properties[1].1, "RSA-2048");
    Governance::from_signed(&sign(GOVERNANCE, &pki), "rsa.p7s", &ca).unwrap();

    // Unusable CA files are errors naming the file.
    let err =
        PermissionsCa::from_pem(b"-----BEGIN CERTIFICATE-----\nAAAA\n", "ca.pem").unwrap_err();
    assert!(matches!(err, AccessError::CaCertificate { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("ca.pem: not a usable permissions CA certificate"),
        "{err}"
    );
    let missing = std::path::Path::new("no/such/dir/ca.pem");
    let err = PermissionsCa::load(missing).unwrap_err();
    assert!(matches!(err, AccessError::Read { .. }), "{err}");
    assert!(
        err.to_string().contains("no/such/dir/ca.pem: cannot read"),
        "{err}"
    );
    let err = Governance::load(missing, &ca).unwrap_err();
    assert!(err.to_string().contains("no/such/dir/ca.pem"), "{err}");
}
