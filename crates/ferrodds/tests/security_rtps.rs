//! DDS Security step 2 through the public API: two participants in one process over
//! loopback with the committed perftest RTPSEncrypt governance (`rtps_protection_kind`
//! ENCRYPT) exchange crypto tokens after authentication and deliver samples in protected
//! RTPS messages. Domain 222 (no other test uses it).
#![cfg(feature = "security")]

mod common;

use std::path::PathBuf;

use common::*;
use ferrodds::cdr::types::TestData;
use ferrodds::{
    DataReaderQos, DataWriterQos, DomainParticipant, PublisherQos, SecurityConfig, SubscriberQos,
    TopicQos,
};

const DOMAIN: u32 = 222;

fn security(role: &str) -> SecurityConfig {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tools/perftest/resource/secure")
        .canonicalize()
        .expect("tools/perftest/resource/secure");
    let f = |name: &str| format!("file:{}", d.join(name).display());
    let perm = if role == "pub" { "Pub" } else { "Sub" };
    SecurityConfig::new()
        .identity_ca(f("cacert.pem"))
        .identity_certificate(f(&format!("{role}.pem")))
        .private_key(f(&format!("{role}key.pem")))
        .permissions_ca(f("cacert.pem"))
        .governance(f("signed_PerftestGovernance_RTPSEncrypt.xml"))
        .permissions(f(&format!("signed_PerftestPermissions{perm}.xml")))
}

#[test]
fn rtps_encrypt_governance_delivers_samples() {
    with_timeout(60, || {
        let p = |role| {
            DomainParticipant::with_config(DOMAIN, loopback_config().security(security(role)))
                .expect("secure participant")
        };
        let a = p("pub");
        let b = p("sub");
        let ta = a
            .create_topic::<TestData>("Throughput", TopicQos::default())
            .unwrap();
        let tb = b
            .create_topic::<TestData>("Throughput", TopicQos::default())
            .unwrap();
        let w = a
            .create_publisher(PublisherQos::default())
            .unwrap()
            .create_datawriter(&ta, DataWriterQos::default().reliable().keep_all())
            .unwrap();
        let r = b
            .create_subscriber(SubscriberQos::default())
            .unwrap()
            .create_datareader(&tb, DataReaderQos::default().reliable().keep_all())
            .unwrap();
        assert!(w.wait_for_matched(1, WAIT), "writer did not match");
        assert!(r.wait_for_matched(1, WAIT), "reader did not match");
        for i in 0..50u32 {
            w.write(&test_data(i)).unwrap();
        }
        w.wait_for_acknowledgments(WAIT).unwrap();
        let mut got = Vec::new();
        let deadline = std::time::Instant::now() + WAIT;
        while got.len() < 50 && std::time::Instant::now() < deadline {
            let _ = r.wait_for_data(std::time::Duration::from_millis(100));
            for s in r.take().unwrap() {
                if let Some(d) = s.data {
                    got.push(d.seq_num);
                }
            }
        }
        assert_eq!(got, (0..50).collect::<Vec<_>>());
        for s in [a.engine_stats(), b.engine_stats()] {
            assert_eq!(s.authenticated_participants, 1, "{s:?}");
            assert_eq!(s.protection_failures, 0, "{s:?}");
            assert!(s.protected_datagrams_sent >= 10, "{s:?}");
            assert!(s.protected_datagrams_received >= 10, "{s:?}");
            assert_eq!(s.unprotected_submessages_dropped, 0, "{s:?}");
        }
    });
}
