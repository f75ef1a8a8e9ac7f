//! The seeds of the `security_handshake` fuzz target (`fuzz/corpus-seeds/security_handshake/`):
//! the mode byte alone (the unedited Request, Reply and Final), single edits of each, and
//! raw generic messages holding a Request-like DataHolder and an AuthRequest. This test
//! checks the committed files are exactly these; regenerate them with
//! `FERRODDS_WRITE_FUZZ_SEEDS=1 cargo test -p ferrodds-security --test auth_fuzz_seeds`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ferrodds_cdr::Endianness;
use ferrodds_security::auth::{auth_request_token, HANDSHAKE_REQUEST_CLASS_ID};
use ferrodds_security::generic_message::{
    BinaryProperty, DataHolder, MessageIdentity, ParticipantGenericMessage,
    GMCLASSID_SECURITY_AUTH_HANDSHAKE, GMCLASSID_SECURITY_AUTH_REQUEST,
};

fn raw_message() -> Vec<u8> {
    let props = [
        ("c.id", b"-----BEGIN CERTIFICATE-----\n".to_vec()),
        ("c.perm", vec![0]),
        ("c.pdata", vec![0, 0x50, 0, 0x10, 0x80, 1, 2, 3]),
        ("c.dsign_algo", b"ECDSA-SHA256\0".to_vec()),
        ("c.kagree_algo", b"ECDH+prime256v1-CEUM\0".to_vec()),
        ("dh1", [vec![4], vec![1; 64]].concat()),
        ("challenge1", vec![9; 32]),
    ];
    let msg = ParticipantGenericMessage {
        message_identity: MessageIdentity {
            source_guid: [0x81; 16],
            sequence_number: 1,
        },
        destination_participant_guid: [0x82; 16],
        message_class_id: GMCLASSID_SECURITY_AUTH_HANDSHAKE.into(),
        message_data: vec![DataHolder {
            class_id: HANDSHAKE_REQUEST_CLASS_ID.into(),
            properties: vec![],
            binary_properties: props
                .into_iter()
                .map(|(n, v)| BinaryProperty::new(n, v))
                .collect(),
        }],
        ..Default::default()
    };
    let mut out = vec![0u8];
    msg.encode_payload(Endianness::Big, &mut out).unwrap();
    out
}

fn raw_auth_request() -> Vec<u8> {
    let msg = ParticipantGenericMessage {
        message_identity: MessageIdentity {
            source_guid: [0x81; 16],
            sequence_number: 2,
        },
        destination_participant_guid: [0x82; 16],
        message_class_id: GMCLASSID_SECURITY_AUTH_REQUEST.into(),
        message_data: vec![auth_request_token(&[3; 32])],
        ..Default::default()
    };
    let mut out = vec![0u8];
    msg.encode_payload(Endianness::Little, &mut out).unwrap();
    out
}

fn expected() -> BTreeMap<&'static str, Vec<u8>> {
    BTreeMap::from([
        ("request", vec![1]),
        ("reply", vec![2]),
        ("final", vec![3]),
        ("request-insert", vec![1, 2, 0x00, 0x70, 0x41]),
        ("reply-flip", vec![2, 0, 0x01, 0x00, 0x01]),
        ("final-truncate", vec![3, 1, 0x00, 0x80, 0]),
        ("raw-request", raw_message()),
        ("raw-auth-request", raw_auth_request()),
    ])
}

#[test]
fn committed_seeds_are_current() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus-seeds/security_handshake");
    let seeds = expected();
    assert!(ParticipantGenericMessage::decode_payload(&seeds["raw-request"][1..]).is_ok());
    if std::env::var_os("FERRODDS_WRITE_FUZZ_SEEDS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in &seeds {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
    for (name, bytes) in &seeds {
        let path = dir.join(name);
        let on_disk = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (regenerate the seeds)", path.display()));
        assert_eq!(
            &on_disk,
            bytes,
            "{} is stale (regenerate the seeds)",
            path.display()
        );
    }
}
