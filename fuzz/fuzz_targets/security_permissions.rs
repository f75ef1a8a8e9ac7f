//! Governance and permissions XML from anyone who can hand a participant a document (the
//! signature is skipped: this is what `Governance::from_signed` / `Permissions::from_signed`
//! parse once a signature verifies, and the parser must hold even for a careless signer).
//!
//! The input, as UTF-8 (lossy), is parsed as both a governance and a permissions document.
//! Properties checked on top of "never panics":
//! - every error message names the file label;
//! - an accepted governance answers participant and endpoint attribute queries for every
//!   domain bound it names, and its security-info words always carry the VALID bits;
//! - an accepted permissions document answers criteria matches for its own expressions.
#![no_main]

use ferrodds_security::access::{
    EndpointSecurityInfo, Governance, ParticipantSecurityInfo, Permissions, SubjectName,
};
use libfuzzer_sys::fuzz_target;

const FILE: &str = "fuzz.xml";

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match Governance::parse_xml(&text, FILE) {
        Ok(gov) => {
            for rule in &gov.domain_rules {
                for &(lo, hi) in &rule.domains.ranges {
                    // Both bounds and their inner neighbours; a one-id range [n, n] has no
                    // inner neighbour, so a probe outside the range is skipped.
                    let probes = [lo, hi, lo.saturating_add(1), hi.saturating_sub(1)];
                    for id in probes.into_iter().filter(|id| (lo..=hi).contains(id)) {
                        let covered = gov.domain_rule(id).expect("a listed bound is covered");
                        let p = gov.participant_security_attributes(id).expect("covered");
                        assert_eq!(p.is_access_protected, covered.enable_join_access_control);
                        let info = p.security_info();
                        assert_ne!(info.attributes & ParticipantSecurityInfo::VALID, 0);
                        assert_ne!(info.plugin_attributes & ParticipantSecurityInfo::PLUGIN_VALID, 0);
                        for t in &covered.topic_rules {
                            let name = t.topic_expression.as_str();
                            if let Ok(e) = gov.endpoint_security_attributes(id, name) {
                                let info = e.security_info();
                                assert_ne!(info.attributes & EndpointSecurityInfo::VALID, 0);
                            }
                        }
                    }
                }
            }
        }
        Err(e) => assert!(e.to_string().contains(FILE), "{e}"),
    }
    match Permissions::parse_xml(&text, FILE) {
        Ok(perms) => {
            for g in &perms.grants {
                let again = SubjectName::parse(g.subject_name.as_str()).expect("reparses");
                assert!(again.matches(&g.subject_name));
                assert!(perms.grant_for(&g.subject_name).is_some());
                for r in &g.rules {
                    for c in r.publish.iter().chain(&r.subscribe).chain(&r.relay) {
                        for t in &c.topics {
                            let _ = c.matches(t.as_str(), &[], true);
                            let _ = c.matches(t.as_str(), &["", t.as_str()], false);
                        }
                    }
                }
            }
        }
        Err(e) => assert!(e.to_string().contains(FILE), "{e}"),
    }
});
