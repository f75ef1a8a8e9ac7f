//! The committed perftest resources (tools/perftest/resource/secure) and the document parsers:
//! every signed file verifies against the committed CA and parses to its PROFILES.md values;
//! tampering, misspellings, truncation and garbage are errors naming what is wrong.

use std::path::PathBuf;

use ferrodds_security::access::{
    AccessError, BasicProtectionKind, EndpointSecurityInfo as E, Expression, Governance,
    ParticipantSecurityInfo as P, Permissions, PermissionsCa, ProtectionKind, SubjectName,
};
use openssl::x509::X509;

fn secure_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tools/perftest/resource/secure")
}

fn ca() -> PermissionsCa {
    PermissionsCa::load(&secure_dir().join("cacert.pem")).expect("committed CA loads")
}

/// (file suffix, PROFILES.md scenario, allow_unauthenticated, rtps, metadata, data)
const PROFILES: [(
    &str,
    &str,
    bool,
    ProtectionKind,
    ProtectionKind,
    BasicProtectionKind,
); 6] = [
    (
        "",
        "no_protection",
        true,
        ProtectionKind::None,
        ProtectionKind::None,
        BasicProtectionKind::None,
    ),
    (
        "RTPSSign",
        "rtps_sign",
        false,
        ProtectionKind::Sign,
        ProtectionKind::None,
        BasicProtectionKind::None,
    ),
    (
        "RTPSEncrypt",
        "rtps_encrypt",
        false,
        ProtectionKind::Encrypt,
        ProtectionKind::None,
        BasicProtectionKind::None,
    ),
    (
        "RTPSSignWithOrigAuthEncryptData",
        "rtps_sign_origauth_data_encrypt",
        false,
        ProtectionKind::SignWithOriginAuthentication,
        ProtectionKind::None,
        BasicProtectionKind::Encrypt,
    ),
    (
        "RTPSSignEncryptSubmessageWithOrigAuthEncryptData",
        "rtps_sign_submsg_encrypt_origauth_data_encrypt",
        false,
        ProtectionKind::Sign,
        ProtectionKind::EncryptWithOriginAuthentication,
        BasicProtectionKind::Encrypt,
    ),
    (
        "SignEncryptSubmessage",
        "rtps_sign_submsg_encrypt",
        false,
        ProtectionKind::Sign,
        ProtectionKind::Encrypt,
        BasicProtectionKind::None,
    ),
];

#[test]
fn every_committed_governance_verifies_and_has_its_profile_values() {
    let ca = ca();
    for (suffix, scenario, unauth, rtps, metadata, data) in PROFILES {
        let path = secure_dir().join(format!("signed_PerftestGovernance_{suffix}.xml"));
        let gov = Governance::load(&path, &ca).unwrap_or_else(|e| panic!("{scenario}: {e}"));
        assert_eq!(gov.domain_rules.len(), 1, "{scenario}");
        assert_eq!(gov.domain_rules[0].domains.ranges, [(0, 230)], "{scenario}");
        for domain in [0, 1, 100, 230] {
            let r = gov.domain_rule(domain).expect("domains 0 to 230");
            assert_eq!(r.allow_unauthenticated_participants, unauth, "{scenario}");
            assert!(!r.enable_join_access_control, "{scenario}");
            assert_eq!(
                r.discovery_protection_kind,
                ProtectionKind::None,
                "{scenario}"
            );
            assert_eq!(
                r.liveliness_protection_kind,
                ProtectionKind::None,
                "{scenario}"
            );
            assert_eq!(r.rtps_protection_kind, rtps, "{scenario}");
            assert_eq!(r.topic_rules.len(), 1, "{scenario}");
            for topic in ["Throughput", "Latency", "Announcement"] {
                let t = r.topic_rule(topic).expect("topic rule *");
                assert_eq!(t.topic_expression.as_str(), "*");
                assert!(!t.enable_discovery_protection && !t.enable_liveliness_protection);
                assert!(!t.enable_read_access_control && !t.enable_write_access_control);
                assert_eq!(t.metadata_protection_kind, metadata, "{scenario}");
                assert_eq!(t.data_protection_kind, data, "{scenario}");
            }
        }
        // The unsigned source says the same.
        let src = secure_dir().join(format!("input/governances/PerftestGovernance_{suffix}.xml"));
        let xml = std::fs::read_to_string(&src).unwrap();
        let unsigned = Governance::parse_xml(&xml, "source").unwrap();
        assert_eq!(unsigned.domain_rules, gov.domain_rules, "{scenario}");
    }
}

#[test]
fn committed_profiles_give_the_security_info_bits() {
    let ca = ca();
    let load = |s: &str| {
        Governance::load(
            &secure_dir().join(format!("signed_PerftestGovernance_{s}.xml")),
            &ca,
        )
        .unwrap()
    };
    let none = load("");
    let p = none.participant_security_attributes(0).unwrap();
    assert!(p.allow_unauthenticated_participants && !p.is_rtps_protected());
    assert_eq!(
        p.security_info(),
        P {
            attributes: P::VALID,
            plugin_attributes: P::PLUGIN_VALID
        }
    );
    let e = none.endpoint_security_attributes(0, "Throughput").unwrap();
    assert_eq!(
        e.security_info(),
        E {
            attributes: E::VALID,
            plugin_attributes: E::PLUGIN_VALID
        }
    );

    let enc = load("RTPSEncrypt")
        .participant_security_attributes(7)
        .unwrap();
    assert_eq!(enc.security_info().attributes, P::VALID | P::RTPS_PROTECTED);
    assert_eq!(
        enc.security_info().plugin_attributes,
        P::PLUGIN_VALID | P::RTPS_ENCRYPTED
    );

    let orig = load("RTPSSignWithOrigAuthEncryptData");
    let info = orig
        .participant_security_attributes(0)
        .unwrap()
        .security_info();
    assert_eq!(info.attributes, P::VALID | P::RTPS_PROTECTED);
    assert_eq!(
        info.plugin_attributes,
        P::PLUGIN_VALID | P::RTPS_AUTHENTICATED
    );
    let e = orig
        .endpoint_security_attributes(0, "Latency")
        .unwrap()
        .security_info();
    assert_eq!(
        e.attributes,
        E::VALID | E::PAYLOAD_PROTECTED | E::KEY_PROTECTED
    );
    assert_eq!(e.plugin_attributes, E::PLUGIN_VALID | E::PAYLOAD_ENCRYPTED);

    let most = load("RTPSSignEncryptSubmessageWithOrigAuthEncryptData");
    let e = most.endpoint_security_attributes(0, "Throughput").unwrap();
    assert!(e.is_submessage_protected() && e.is_payload_protected() && e.is_key_protected());
    let e = e.security_info();
    assert_eq!(
        e.attributes,
        E::VALID | E::SUBMESSAGE_PROTECTED | E::PAYLOAD_PROTECTED | E::KEY_PROTECTED
    );
    assert_eq!(
        e.plugin_attributes,
        E::PLUGIN_VALID
            | E::SUBMESSAGE_ENCRYPTED
            | E::PAYLOAD_ENCRYPTED
            | E::SUBMESSAGE_ORIGIN_AUTHENTICATED
    );
    let sub = load("SignEncryptSubmessage")
        .endpoint_security_attributes(0, "x")
        .unwrap();
    assert_eq!(
        sub.security_info(),
        E {
            attributes: E::VALID | E::SUBMESSAGE_PROTECTED,
            plugin_attributes: E::PLUGIN_VALID | E::SUBMESSAGE_ENCRYPTED
        }
    );
}

#[test]
fn committed_permissions_verify_and_grant_the_identity_certificates() {
    let ca = ca();
    for (role, publish, subscribe) in [
        (
            "Pub",
            ["Throughput", "Announcement"],
            ["Latency", "Announcement"],
        ),
        (
            "Sub",
            ["Latency", "Announcement"],
            ["Throughput", "Announcement"],
        ),
    ] {
        let perms = Permissions::load(
            &secure_dir().join(format!("signed_PerftestPermissions{role}.xml")),
            &ca,
        )
        .unwrap();
        let pem = std::fs::read(secure_dir().join(format!("{}.pem", role.to_lowercase()))).unwrap();
        let cert = X509::from_pem(&pem).unwrap();
        let subject = SubjectName::from_x509(cert.subject_name());
        let grant = perms.grant_for(&subject).expect("the identity's grant");
        assert_eq!(grant.rules.len(), 1);
        let rule = &grant.rules[0];
        assert!(
            rule.domains.contains(0) && rule.domains.contains(230) && !rule.domains.contains(231)
        );
        for t in publish {
            assert!(
                rule.publish.iter().any(|c| c.matches(t, &[], true)),
                "{role} publishes {t}"
            );
        }
        for t in subscribe {
            assert!(
                rule.subscribe.iter().any(|c| c.matches(t, &[], true)),
                "{role} reads {t}"
            );
        }
        // The identity certificate itself chains to the same CA (identity CA = permissions CA).
        let ca_cert =
            X509::from_pem(&std::fs::read(secure_dir().join("cacert.pem")).unwrap()).unwrap();
        assert!(
            cert.verify(&ca_cert.public_key().unwrap()).unwrap(),
            "{role} cert signed by CA"
        );
    }
    assert_eq!(ca.algorithm(), "EC-prime256v1");
}

#[test]
fn one_tampered_byte_fails_the_signature() {
    let ca = ca();
    for file in [
        "signed_PerftestGovernance_RTPSSign.xml",
        "signed_PerftestPermissionsPub.xml",
    ] {
        let signed = std::fs::read(secure_dir().join(file)).unwrap();
        // Change one byte of the signed XML: "<dds" -> "<ddt" keeps it well-formed-ish but the
        // digest differs; and one letter of a value.
        for needle in [&b"FerroDDS"[..], &b"<min>0"[..]] {
            let at = signed
                .windows(needle.len())
                .position(|w| w == needle)
                .unwrap();
            let mut bad = signed.clone();
            bad[at + needle.len() - 1] ^= 0x01;
            let err = if file.contains("Governance") {
                Governance::from_signed(&bad, file, &ca).unwrap_err()
            } else {
                Permissions::from_signed(&bad, file, &ca).unwrap_err()
            };
            assert!(
                matches!(err, AccessError::Signature { .. }),
                "{file}: {err}"
            );
            let msg = err.to_string();
            assert!(
                msg.starts_with(file) && msg.contains("does not verify"),
                "{msg}"
            );
        }
    }
}

#[test]
fn garbage_and_truncation_are_errors_not_panics() {
    let ca = ca();
    let signed = std::fs::read(secure_dir().join("signed_PerftestPermissionsSub.xml")).unwrap();
    for cut in (0..signed.len()).step_by(7) {
        assert!(
            Permissions::from_signed(&signed[..cut], "cut.xml", &ca).is_err(),
            "cut at {cut}"
        );
    }
    for garbage in [
        &b""[..],
        b"\0\xff\xfe",
        b"MIME-Version: 1.0\r\n\r\n",
        b"<dds>",
    ] {
        let err = Governance::from_signed(garbage, "g.p7s", &ca).unwrap_err();
        assert!(err.to_string().starts_with("g.p7s: "), "{err}");
    }
    let xml = std::fs::read_to_string(
        secure_dir().join("input/governances/PerftestGovernance_RTPSEncrypt.xml"),
    )
    .unwrap();
    let mut ok = 0;
    for cut in 0..xml.trim_end().len() {
        if !xml.is_char_boundary(cut) {
            continue;
        }
        if Governance::parse_xml(&xml[..cut], "gov.xml").is_ok() {
            ok += 1;
        }
        let _ = Permissions::parse_xml(&xml[..cut], "gov.xml");
    }
    assert_eq!(
        ok, 0,
        "no strict prefix of the document is a complete governance"
    );
    assert!(Governance::parse_xml(&xml, "gov.xml").is_ok());
    // A permissions parser given a governance document names the root's child.
    let err = Permissions::parse_xml(&xml, "gov.xml")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("gov.xml") && err.contains("<domain_access_rules>"),
        "{err}"
    );
}

fn governance_xml(rtps: &str, metadata: &str, data: &str, extra_rule_children: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<dds>
  <domain_access_rules>
    <domain_rule>
      <domains><id>5</id><id_range><min>10</min><max>20</max></id_range>
               <id_range><min>100</min></id_range><id_range><max>2</max></id_range></domains>
      <allow_unauthenticated_participants>True</allow_unauthenticated_participants>
      <enable_join_access_control>0</enable_join_access_control>
      <discovery_protection_kind>ENCRYPT</discovery_protection_kind>
      <liveliness_protection_kind>SIGN_WITH_ORIGIN_AUTHENTICATION</liveliness_protection_kind>
      <rtps_protection_kind>{rtps}</rtps_protection_kind>
      {extra_rule_children}
      <topic_access_rules>
        <topic_rule>
          <topic_expression>Square*</topic_expression>
          <enable_discovery_protection>1</enable_discovery_protection>
          <enable_liveliness_protection>FALSE</enable_liveliness_protection>
          <enable_read_access_control>true</enable_read_access_control>
          <enable_write_access_control>TRUE</enable_write_access_control>
          <metadata_protection_kind>{metadata}</metadata_protection_kind>
          <data_protection_kind>{data}</data_protection_kind>
        </topic_rule>
        <topic_rule>
          <topic_expression>*</topic_expression>
          <enable_discovery_protection>false</enable_discovery_protection>
          <enable_liveliness_protection>false</enable_liveliness_protection>
          <enable_read_access_control>false</enable_read_access_control>
          <enable_write_access_control>false</enable_write_access_control>
          <metadata_protection_kind>NONE</metadata_protection_kind>
          <data_protection_kind>NONE</data_protection_kind>
        </topic_rule>
      </topic_access_rules>
    </domain_rule>
  </domain_access_rules>
</dds>
"#
    )
}

#[test]
fn misspelt_protection_kind_names_element_value_and_valid_ones() {
    let xml = governance_xml("SIGN", "ENCRYPT_WITH_ORIGINAL_AUTHENTICATION", "NONE", "");
    let err = Governance::parse_xml(&xml, "my_governance.xml").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, AccessError::InvalidValue { .. }));
    for part in [
        "my_governance.xml:",
        "<metadata_protection_kind>",
        "'ENCRYPT_WITH_ORIGINAL_AUTHENTICATION'",
        "NONE, SIGN, ENCRYPT, SIGN_WITH_ORIGIN_AUTHENTICATION, ENCRYPT_WITH_ORIGIN_AUTHENTICATION",
    ] {
        assert!(msg.contains(part), "{msg} lacks {part}");
    }
    // data_protection_kind has no origin authentication.
    let xml = governance_xml("SIGN", "NONE", "ENCRYPT_WITH_ORIGIN_AUTHENTICATION", "");
    let msg = Governance::parse_xml(&xml, "g.xml")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("<data_protection_kind>") && msg.contains("(valid: NONE, SIGN, ENCRYPT)"),
        "{msg}"
    );
    // Kinds are the exact XSD spellings.
    let msg = Governance::parse_xml(&governance_xml("sign", "NONE", "NONE", ""), "g.xml")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("<rtps_protection_kind> has invalid value 'sign'"),
        "{msg}"
    );
    // Booleans: TRUE/FALSE any case, 1/0, nothing else.
    let bad = governance_xml("SIGN", "NONE", "NONE", "").replace(">True<", ">yes<");
    let msg = Governance::parse_xml(&bad, "g.xml")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("<allow_unauthenticated_participants> has invalid value 'yes' (valid: TRUE, FALSE (any case), 1, 0)"),
        "{msg}"
    );
    // A misspelt element name is not silently skipped.
    let bad = governance_xml(
        "SIGN",
        "NONE",
        "NONE",
        "<rtps_protection_knd>SIGN</rtps_protection_knd>",
    );
    let msg = Governance::parse_xml(&bad, "g.xml")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("unexpected <rtps_protection_knd> in <domain_rule>"),
        "{msg}"
    );
    // A missing one neither.
    let bad = governance_xml("SIGN", "NONE", "NONE", "").replace(
        "<enable_join_access_control>0</enable_join_access_control>",
        "",
    );
    let msg = Governance::parse_xml(&bad, "g.xml")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("<domain_rule> lacks <enable_join_access_control>"),
        "{msg}"
    );
    // Repeated elements.
    let bad = governance_xml(
        "SIGN",
        "NONE",
        "NONE",
        "<rtps_protection_kind>SIGN</rtps_protection_kind>",
    );
    let msg = Governance::parse_xml(&bad, "g.xml")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("more than one <rtps_protection_kind>"),
        "{msg}"
    );
}

#[test]
fn parsed_values_booleans_and_domain_ranges() {
    let gov = Governance::parse_xml(
        &governance_xml("ENCRYPT_WITH_ORIGIN_AUTHENTICATION", "SIGN", "SIGN", ""),
        "g.xml",
    )
    .unwrap();
    let r = &gov.domain_rules[0];
    assert!(r.allow_unauthenticated_participants && !r.enable_join_access_control);
    assert_eq!(r.discovery_protection_kind, ProtectionKind::Encrypt);
    assert_eq!(
        r.liveliness_protection_kind,
        ProtectionKind::SignWithOriginAuthentication
    );
    for (id, covered) in [
        (0, true),
        (2, true),
        (3, false),
        (4, false),
        (5, true),
        (6, false),
        (9, false),
        (10, true),
        (15, true),
        (20, true),
        (21, false),
        (99, false),
        (100, true),
        (u32::MAX, true),
    ] {
        assert_eq!(gov.domain_rule(id).is_some(), covered, "domain {id}");
    }
    let a = gov
        .participant_security_attributes(5)
        .unwrap()
        .security_info();
    assert_eq!(
        a.attributes,
        P::VALID | P::RTPS_PROTECTED | P::DISCOVERY_PROTECTED | P::LIVELINESS_PROTECTED
    );
    assert_eq!(
        a.plugin_attributes,
        P::PLUGIN_VALID
            | P::RTPS_ENCRYPTED
            | P::RTPS_AUTHENTICATED
            | P::DISCOVERY_ENCRYPTED
            | P::LIVELINESS_AUTHENTICATED
    );
    let err = gov
        .participant_security_attributes(50)
        .unwrap_err()
        .to_string();
    assert_eq!(err, "governance g.xml: no domain_rule covers domain 50");
    // Topic rules: the first match applies.
    let sq = gov.endpoint_security_attributes(5, "Square").unwrap();
    assert!(sq.is_read_protected && sq.is_write_protected && sq.is_discovery_protected);
    assert!(!sq.is_liveliness_protected && !sq.is_key_protected());
    assert_eq!(
        sq.security_info().attributes,
        E::VALID
            | E::READ_PROTECTED
            | E::WRITE_PROTECTED
            | E::DISCOVERY_PROTECTED
            | E::SUBMESSAGE_PROTECTED
            | E::PAYLOAD_PROTECTED
    );
    assert_eq!(sq.security_info().plugin_attributes, E::PLUGIN_VALID);
    let other = gov.endpoint_security_attributes(5, "Circle").unwrap();
    assert!(!other.is_read_protected && !other.is_submessage_protected());
    // Bad ranges and ids.
    for (domains, needle) in [
        (
            "<id_range><min>9</min><max>3</max></id_range>",
            "min 9 > max 3",
        ),
        ("<id>-1</id>", "<id> has invalid value '-1'"),
        ("<id>4294967296</id>", "<id> has invalid value '4294967296'"),
        ("<id_range></id_range>", "<id_range> lacks <min or max>"),
        ("", "<domains> lacks <id or id_range>"),
    ] {
        let xml = governance_xml("SIGN", "NONE", "NONE", "").replacen(
            "<id>5</id><id_range><min>10</min><max>20</max></id_range>",
            domains,
            1,
        );
        let xml = xml.replace(
            "<id_range><min>100</min></id_range><id_range><max>2</max></id_range>",
            "",
        );
        let msg = Governance::parse_xml(&xml, "g.xml")
            .unwrap_err()
            .to_string();
        assert!(msg.contains(needle), "{domains}: {msg}");
    }
}

#[test]
fn fnmatch_expressions() {
    let m = |p: &str, s: &str| Expression::new(p).unwrap().matches(s);
    assert!(m("*", "Anything/with.dots"));
    assert!(m("Square*", "Square") && m("Square*", "SquareTopic") && !m("Square*", "square"));
    assert!(m("Sq?are", "Square") && !m("Sq?are", "Sqare"));
    assert!(m("[CS]ircle", "Circle") && m("[CS]ircle", "Sircle") && !m("[CS]ircle", "Tircle"));
    assert!(m("[!C]ircle", "Xircle") && !m("[!C]ircle", "Circle"));
    assert!(m("a/*/c", "a/b/c") && m("rt/*", "rt/chatter/x"));
    assert!(m("**x", "abcx") && m("Exact", "Exact") && !m("Exact", "Exactly"));
    assert!(m("", "") && !m("", "p"));
    let err = Expression::new("[unclosed").unwrap_err();
    assert_eq!(err.0, "[unclosed");
}

#[test]
fn subject_names_compare_as_attribute_sets() {
    let a = SubjectName::parse("/C=ES/O=FerroDDS/CN=perftest pub").unwrap();
    let b = SubjectName::parse("CN=perftest pub, O=FerroDDS, C=ES").unwrap();
    let c =
        SubjectName::parse(" commonName = perftest pub ,organizationName=FerroDDS,countryName=ES")
            .unwrap();
    assert!(a.matches(&b) && b.matches(&c));
    assert!(!a.matches(&SubjectName::parse("CN=perftest sub, O=FerroDDS, C=ES").unwrap()));
    assert!(!a.matches(&SubjectName::parse("CN=perftest pub, O=FerroDDS").unwrap()));
    assert!(!a.matches(&SubjectName::parse("CN=perftest pub, O=FerroDDS, C=ES, OU=x").unwrap()));
    assert!(SubjectName::parse("no equals sign").is_none());
    assert!(SubjectName::parse(" / , ").is_none());
    let e = SubjectName::parse("emailAddress=a@b, CN=x").unwrap();
    assert!(e.matches(&SubjectName::parse("CN=x/E=a@b").unwrap()));
}

#[test]
fn every_signed_file_in_the_folder_is_one_checked_here() {
    let mut found: Vec<String> = std::fs::read_dir(secure_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("signed_"))
        .collect();
    found.sort();
    let mut expected: Vec<String> = PROFILES
        .iter()
        .map(|p| format!("signed_PerftestGovernance_{}.xml", p.0))
        .chain(["Pub", "Sub"].map(|r| format!("signed_PerftestPermissions{r}.xml")))
        .collect();
    expected.sort();
    assert_eq!(found, expected);
}

/// Days from now until the certificate's notAfter.
fn days_left(cert: &X509) -> i32 {
    openssl::asn1::Asn1Time::days_from_now(0)
        .unwrap()
        .diff(cert.not_after())
        .unwrap()
        .days
}

#[test]
fn the_script_makes_a_folder_that_verifies_and_matches_the_committed_one() {
    let tmp = tempfile::tempdir().unwrap();
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/make-secure-resources.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg(tmp.path())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fresh_ca = PermissionsCa::load(&tmp.path().join("cacert.pem")).unwrap();
    let committed_ca = ca();
    for (suffix, scenario, ..) in PROFILES {
        let name = format!("signed_PerftestGovernance_{suffix}.xml");
        let fresh = Governance::load(&tmp.path().join(&name), &fresh_ca).unwrap();
        let committed = Governance::load(&secure_dir().join(&name), &committed_ca).unwrap();
        assert_eq!(fresh.domain_rules, committed.domain_rules, "{scenario}");
        // A fresh CA is another CA: the committed one does not accept its documents.
        let bytes = std::fs::read(tmp.path().join(&name)).unwrap();
        assert!(Governance::from_signed(&bytes, &name, &committed_ca).is_err());
    }
    for role in ["Pub", "Sub"] {
        let name = format!("signed_PerftestPermissions{role}.xml");
        let fresh = Permissions::load(&tmp.path().join(&name), &fresh_ca).unwrap();
        let committed = Permissions::load(&secure_dir().join(&name), &committed_ca).unwrap();
        assert_eq!(fresh.grants, committed.grants, "{role}");
    }
    // 20-year certificates; the committed ones still have years to go.
    for file in ["cacert.pem", "pub.pem", "sub.pem"] {
        let fresh = X509::from_pem(&std::fs::read(tmp.path().join(file)).unwrap()).unwrap();
        assert!(
            days_left(&fresh) >= 7299,
            "{file}: {} days",
            days_left(&fresh)
        );
        let committed = X509::from_pem(&std::fs::read(secure_dir().join(file)).unwrap()).unwrap();
        assert!(
            days_left(&committed) > 365 * 10,
            "committed {file} expires soon: regenerate"
        );
    }
}
