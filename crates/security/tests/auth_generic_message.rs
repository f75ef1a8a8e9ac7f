//! CDR of `DataHolder` and `ParticipantGenericMessage`: round trips in both byte orders, a
//! hand-computed layout, and malformed input (truncation at every length, absurd lengths).

use ferrodds_cdr::{CdrReader, CdrWriter, Encoding, Endianness};
use ferrodds_security::generic_message::{
    BinaryProperty, DataHolder, GenericMessageError, MessageIdentity, ParticipantGenericMessage,
    Property, GMCLASSID_SECURITY_AUTH_HANDSHAKE, MAX_DATA_HOLDERS, MAX_PROPERTIES,
};

fn sample() -> ParticipantGenericMessage {
    let mut src: [u8; 16] = core::array::from_fn(|i| i as u8 + 1);
    src[12..].copy_from_slice(&[0x00, 0x02, 0x01, 0xc3]);
    ParticipantGenericMessage {
        message_identity: MessageIdentity {
            source_guid: src,
            sequence_number: 2,
        },
        related_message_identity: MessageIdentity {
            source_guid: [0x11; 16],
            sequence_number: -7,
        },
        destination_participant_guid: [0xaa; 16],
        destination_endpoint_guid: [0xbb; 16],
        source_endpoint_guid: [0xcc; 16],
        message_class_id: GMCLASSID_SECURITY_AUTH_HANDSHAKE.into(),
        message_data: vec![
            DataHolder {
                class_id: "DDS:Auth:PKI-DH:1.0+Req".into(),
                properties: vec![Property::new("p", "value"), Property::new("", "")],
                binary_properties: vec![
                    BinaryProperty::new("challenge1", vec![7u8; 32]),
                    BinaryProperty::new("c.perm", Vec::<u8>::new()),
                    BinaryProperty::new("odd", vec![1u8, 2, 3]),
                ],
            },
            DataHolder::new("second"),
        ],
    }
}

#[test]
fn round_trips_in_both_byte_orders() {
    let m = sample();
    for e in [Endianness::Little, Endianness::Big] {
        let mut body = Vec::new();
        m.encode(e, &mut body).unwrap();
        assert_eq!(ParticipantGenericMessage::decode(&body, e).unwrap(), m);
        let mut payload = Vec::new();
        m.encode_payload(e, &mut payload).unwrap();
        assert_eq!(&payload[4..], &body[..]);
        assert_eq!(
            ParticipantGenericMessage::decode_payload(&payload).unwrap(),
            m
        );
        // RTPS may pad the serialized payload: trailing bytes are ignored.
        payload.extend_from_slice(&[0, 0, 0]);
        assert_eq!(
            ParticipantGenericMessage::decode_payload(&payload).unwrap(),
            m
        );
    }
    let mut le = Vec::new();
    let mut be = Vec::new();
    m.encode(Endianness::Little, &mut le).unwrap();
    m.encode(Endianness::Big, &mut be).unwrap();
    assert_ne!(le, be);
    assert_eq!(le.len(), be.len());
}

#[test]
fn data_holder_round_trips_alone() {
    let h = sample().message_data.remove(0);
    for enc in [Encoding::XCDR1_LE, Encoding::XCDR1_BE] {
        let mut buf = Vec::new();
        h.encode(&mut CdrWriter::new(&mut buf, enc)).unwrap();
        let mut r = CdrReader::new(&buf, enc);
        assert_eq!(DataHolder::decode(&mut r).unwrap(), h);
        assert_eq!(r.remaining(), 0);
    }
}

#[test]
fn little_endian_layout_is_exactly_as_computed_by_hand() {
    let m = ParticipantGenericMessage {
        message_identity: MessageIdentity {
            source_guid: core::array::from_fn(|i| i as u8 + 1),
            sequence_number: 2,
        },
        related_message_identity: MessageIdentity::default(),
        destination_participant_guid: [0xaa; 16],
        destination_endpoint_guid: [0; 16],
        source_endpoint_guid: [0; 16],
        message_class_id: "dds.sec.auth".into(),
        message_data: vec![DataHolder {
            class_id: "X".into(),
            properties: vec![Property::new("a", "b")],
            binary_properties: vec![BinaryProperty::new("c", vec![1u8, 2, 3])],
        }],
    };
    let mut want: Vec<u8> = (1..=16).collect(); // message_identity.source_guid   0..16
    want.extend_from_slice(&[2, 0, 0, 0, 0, 0, 0, 0]); // sequence_number (i64, 8-aligned) 16..24
    want.extend_from_slice(&[0; 24]); // related_message_identity                 24..48
    want.extend_from_slice(&[0xaa; 16]); // destination_participant_guid          48..64
    want.extend_from_slice(&[0; 32]); // destination_endpoint_guid, source_endpoint_guid 64..96
    want.extend_from_slice(&[13, 0, 0, 0]); // message_class_id length incl. NUL   96..100
    want.extend_from_slice(b"dds.sec.auth\0"); //                                100..113
    want.extend_from_slice(&[0, 0, 0]); // pad to 4                               113..116
    want.extend_from_slice(&[1, 0, 0, 0]); // message_data: 1 DataHolder          116..120
    want.extend_from_slice(&[2, 0, 0, 0, b'X', 0, 0, 0]); // class_id "X" + pad   120..128
    want.extend_from_slice(&[1, 0, 0, 0]); // 1 property                          128..132
    want.extend_from_slice(&[2, 0, 0, 0, b'a', 0, 0, 0]); // name "a" (no propagate flag)
    want.extend_from_slice(&[2, 0, 0, 0, b'b', 0, 0, 0]); // value "b"           ..148
    want.extend_from_slice(&[1, 0, 0, 0]); // 1 binary property                   148..152
    want.extend_from_slice(&[2, 0, 0, 0, b'c', 0, 0, 0]); // name "c"            152..160
    want.extend_from_slice(&[3, 0, 0, 0, 1, 2, 3]); // value [1,2,3], no trailing pad ..167
    let mut got = Vec::new();
    m.encode(Endianness::Little, &mut got).unwrap();
    assert_eq!(got, want);

    let mut payload = Vec::new();
    m.encode_payload(Endianness::Big, &mut payload).unwrap();
    assert_eq!(&payload[..4], &[0x00, 0x00, 0x00, 0x00]); // CDR_BE
    assert_eq!(&payload[4 + 16..4 + 24], &[0, 0, 0, 0, 0, 0, 0, 2]);
    assert_eq!(&payload[4 + 96..4 + 100], &[0, 0, 0, 13]);
    m.encode_payload(Endianness::Little, &mut payload).unwrap();
}

#[test]
fn truncation_at_every_length_is_an_error() {
    let m = sample();
    for e in [Endianness::Little, Endianness::Big] {
        let mut body = Vec::new();
        m.encode(e, &mut body).unwrap();
        for n in 0..body.len() {
            let err = ParticipantGenericMessage::decode(&body[..n], e).unwrap_err();
            assert!(matches!(err, GenericMessageError::Cdr { .. }), "{n}: {err}");
        }
        let mut payload = Vec::new();
        m.encode_payload(e, &mut payload).unwrap();
        for n in 0..payload.len() {
            assert!(ParticipantGenericMessage::decode_payload(&payload[..n]).is_err());
        }
    }
    assert_eq!(
        ParticipantGenericMessage::decode_payload(&[0, 1]).unwrap_err(),
        GenericMessageError::NoEncapsulation(2)
    );
    assert_eq!(
        ParticipantGenericMessage::decode_payload(&[0, 2, 0, 0, 1, 2, 3, 4]).unwrap_err(),
        GenericMessageError::Encapsulation(2)
    );
}

#[test]
fn absurd_lengths_are_refused_before_allocating() {
    let mut body = Vec::new();
    ParticipantGenericMessage::default()
        .encode(Endianness::Little, &mut body)
        .unwrap();
    // The last 4 bytes are message_data's count.
    let n = body.len();
    body[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
    let err = ParticipantGenericMessage::decode(&body, Endianness::Little).unwrap_err();
    assert_eq!(
        err,
        GenericMessageError::TooMany {
            field: "message_data",
            count: u32::MAX as usize,
            bound: MAX_DATA_HOLDERS
        }
    );
    // Within the bound but longer than the input: truncated, not allocated.
    body[n - 4..].copy_from_slice(&(MAX_DATA_HOLDERS as u32).to_le_bytes());
    assert!(matches!(
        ParticipantGenericMessage::decode(&body, Endianness::Little).unwrap_err(),
        GenericMessageError::Cdr {
            field: "message_data",
            ..
        }
    ));
    // A DataHolder claiming too many properties, and a binary value longer than the input.
    let mut buf = Vec::new();
    {
        let mut w = CdrWriter::new(&mut buf, Encoding::XCDR1_BE);
        w.write_string("x").unwrap();
        w.write_u32(MAX_PROPERTIES as u32 + 1);
    }
    let err = DataHolder::decode(&mut CdrReader::new(&buf, Encoding::XCDR1_BE)).unwrap_err();
    assert!(
        matches!(
            err,
            GenericMessageError::TooMany {
                field: "properties",
                ..
            }
        ),
        "{err}"
    );
    let mut buf = Vec::new();
    {
        let mut w = CdrWriter::new(&mut buf, Encoding::XCDR1_BE);
        w.write_string("x").unwrap();
        w.write_u32(0);
        w.write_u32(1);
        w.write_string("n").unwrap();
        w.write_u32(0x7fff_ffff);
        w.write_raw(&[1, 2, 3]);
    }
    let err = DataHolder::decode(&mut CdrReader::new(&buf, Encoding::XCDR1_BE)).unwrap_err();
    assert!(
        matches!(
            err,
            GenericMessageError::Cdr {
                field: "binary_property.value",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("binary_property.value"));
}

#[test]
fn strings_must_be_nul_terminated_utf8() {
    let mut body = Vec::new();
    let m = ParticipantGenericMessage {
        message_class_id: "ab".into(),
        ..Default::default()
    };
    m.encode(Endianness::Little, &mut body).unwrap();
    // message_class_id's bytes start at 100: "ab\0".
    body[102] = b'c';
    assert!(matches!(
        ParticipantGenericMessage::decode(&body, Endianness::Little).unwrap_err(),
        GenericMessageError::Cdr {
            field: "message_class_id",
            ..
        }
    ));
    body[102] = 0;
    body[100] = 0xff;
    assert!(ParticipantGenericMessage::decode(&body, Endianness::Little).is_err());
    // Encoding a string with an inner NUL is refused (a C peer would cut it there).
    let bad = ParticipantGenericMessage {
        message_class_id: "a\0b".into(),
        ..Default::default()
    };
    assert!(bad.encode(Endianness::Big, &mut Vec::new()).is_err());
}
