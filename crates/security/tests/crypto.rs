//! Tests of the `DDS:Crypto:AES-GCM-GMAC` plugin: key material CDR, known answers of the key
//! derivations (recomputed here with OpenSSL, the library Cyclone DDS uses), round trips of every
//! transformation kind at every level, origin authentication, tampering, replay, truncation.

use ferrodds_security::crypto::*;
use openssl::hash::MessageDigest;
use openssl::pkey::PKey;
use openssl::sign::Signer;
use openssl::symm::{decrypt_aead, encrypt_aead, Cipher as OsslCipher};

const KINDS: [TransformKind; 4] = [
    TransformKind::Aes128Gmac,
    TransformKind::Aes128Gcm,
    TransformKind::Aes256Gmac,
    TransformKind::Aes256Gcm,
];

/// Deterministic test randomness (xorshift); never all zero.
struct Rng(u64);

impl Rng {
    fn fill(&mut self, b: &mut [u8]) {
        for x in b {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            *x = (self.0 >> 24) as u8;
        }
    }
}

fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let pkey = PKey::hmac(key).unwrap();
    let mut s = Signer::new(MessageDigest::sha256(), &pkey).unwrap();
    for p in parts {
        s.update(p).unwrap();
    }
    s.sign_to_vec().unwrap()
}

fn ossl_gcm(key_len: usize) -> OsslCipher {
    if key_len == 16 {
        OsslCipher::aes_128_gcm()
    } else {
        OsslCipher::aes_256_gcm()
    }
}

fn writer_km(kind: TransformKind, seed: u64) -> KeyMaterial {
    let mut rng = Rng(seed);
    KeyMaterial::generate(kind, 0x1000 + seed as u32, |b| rng.fill(b)).unwrap()
}

/// The key material handed to receiver `i` (receiver-specific key id 0x100 + i).
fn for_receiver(km: &KeyMaterial, i: u32) -> KeyMaterial {
    let mut rng = Rng(0xabcdef + u64::from(i));
    km.with_receiver_specific_key(0x100 + i, |b| rng.fill(b))
        .unwrap()
}

/// A DATA submessage (little-endian) with a `payload_len`-byte payload, padded to 4.
fn data_submessage(payload_len: usize) -> Vec<u8> {
    let body = 20 + payload_len.next_multiple_of(4);
    let mut v = vec![0x15, 0x05];
    v.extend_from_slice(&(body as u16).to_le_bytes());
    v.extend_from_slice(&[0, 0, 16, 0]); // extraFlags, octetsToInlineQos
    v.extend_from_slice(&[0, 0, 0, 0]); // readerId
    v.extend_from_slice(&[0, 0, 1, 2]); // writerId
    v.extend_from_slice(&[0, 0, 0, 0, 7, 0, 0, 0]); // SN 7
    v.extend((0..payload_len.next_multiple_of(4)).map(|i| i as u8));
    v
}

/// An RTPS message: header plus an INFO_TS and two DATA submessages.
fn rtps_message() -> Vec<u8> {
    let mut v = b"RTPS\x02\x03\x01\x10".to_vec();
    v.extend_from_slice(&[0x01, 0x10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    v.extend_from_slice(&[0x09, 0x01, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
    v.extend_from_slice(&data_submessage(32));
    v.extend_from_slice(&data_submessage(100));
    v
}

#[test]
fn session_keys_match_an_independent_hmac() {
    for kind in KINDS {
        let km = for_receiver(&writer_km(kind, 3), 1);
        let n = kind.key_len();
        for sid in [0u32, 1, 0x1234_5678, u32::MAX] {
            let want = hmac_sha256(
                &km.master_sender_key[..n],
                &[b"SessionKey", &km.master_salt[..n], &sid.to_be_bytes()],
            );
            assert_eq!(session_key(&km, sid).as_bytes(), &want[..n], "{kind:?}");
            let want = hmac_sha256(
                &km.master_receiver_specific_key[..n],
                &[
                    b"SessionReceiverKey",
                    &km.master_salt[..n],
                    &sid.to_be_bytes(),
                ],
            );
            assert_eq!(
                receiver_specific_session_key(&km, sid).as_bytes(),
                &want[..n]
            );
        }
    }
}

#[test]
fn kx_keys_match_an_independent_derivation() {
    let mut rng = Rng(77);
    let mut c1 = [0u8; 32];
    let mut c2 = [0u8; 32];
    let mut secret = [0u8; 32];
    rng.fill(&mut c1);
    rng.fill(&mut c2);
    rng.fill(&mut secret);
    let km = kx_key_material(&c1, &c2, &secret).unwrap();
    let salt_key = openssl::sha::sha256(&[&c1[..], b"keyexchange salt", &c2[..]].concat());
    let key_key = openssl::sha::sha256(&[&c2[..], b"key exchange key", &c1[..]].concat());
    assert_eq!(km.transformation_kind, TransformKind::Aes256Gcm);
    assert_eq!(km.sender_key_id, 0);
    assert_eq!(km.receiver_specific_key_id, 0);
    assert_eq!(&km.master_salt[..], &hmac_sha256(&salt_key, &[&secret])[..]);
    assert_eq!(
        &km.master_sender_key[..],
        &hmac_sha256(&key_key, &[&secret])[..]
    );
    // Swapping the challenges changes both keys.
    let swapped = kx_key_material(&c2, &c1, &secret).unwrap();
    assert_ne!(swapped.master_salt, km.master_salt);
    assert_ne!(swapped.master_sender_key, km.master_sender_key);
}

#[test]
fn key_material_cdr_layout_and_round_trip() {
    let salt: Vec<u8> = (1..=16).collect();
    let key: Vec<u8> = (101..=116).collect();
    let rs: Vec<u8> = (201..=216).collect();
    let km = KeyMaterial::new(
        TransformKind::Aes128Gcm,
        &salt,
        0x0102_0304,
        &key,
        Some((0x0a0b_0c0d, &rs)),
    )
    .unwrap();
    let mut want = vec![0, 0, 0, 2, 0, 0, 0, 16];
    want.extend_from_slice(&salt);
    want.extend_from_slice(&[1, 2, 3, 4, 0, 0, 0, 16]);
    want.extend_from_slice(&key);
    want.extend_from_slice(&[0x0a, 0x0b, 0x0c, 0x0d, 0, 0, 0, 16]);
    want.extend_from_slice(&rs);
    assert_eq!(km.to_bytes(), want);
    assert_eq!(km.encoded_len(), want.len());
    assert_eq!(KeyMaterial::decode(&want).unwrap(), km);

    // Without a receiver-specific key: id 0 and an empty sequence (Cyclone's form).
    for kind in KINDS {
        let km = writer_km(kind, 9);
        let b = km.to_bytes();
        let n = kind.key_len();
        assert_eq!(b.len(), 24 + 2 * n);
        assert_eq!(&b[b.len() - 8..], &[0u8; 8]);
        assert_eq!(KeyMaterial::decode(&b).unwrap(), km);
        let with = for_receiver(&km, 5);
        assert_eq!(KeyMaterial::decode(&with.to_bytes()).unwrap(), with);
        // Every truncation is an error.
        let b = with.to_bytes();
        for len in 0..b.len() {
            assert!(KeyMaterial::decode(&b[..len]).is_err(), "{kind:?} {len}");
        }
        let mut small = vec![0u8; b.len() - 1];
        assert!(matches!(
            with.encode(&mut small),
            Err(CryptoError::BufferTooSmall { .. })
        ));
    }
}

#[test]
fn key_material_decode_errors() {
    let km = writer_km(TransformKind::Aes256Gmac, 4);
    let b = km.to_bytes();
    let mut bad = b.clone();
    bad[3] = 9;
    assert_eq!(
        KeyMaterial::decode(&bad),
        Err(CryptoError::UnknownTransformKind(9))
    );
    // A 128-bit kind with 32-byte keys.
    let mut bad = b.clone();
    bad[3] = 1;
    assert!(matches!(
        KeyMaterial::decode(&bad),
        Err(CryptoError::KeyLength {
            field: "master_salt",
            length: 32,
            expected: 16
        })
    ));
    // All-zero master sender key.
    let mut bad = b.clone();
    bad[48..80].fill(0);
    assert_eq!(
        KeyMaterial::decode(&bad),
        Err(CryptoError::ZeroKey("master_sender_key"))
    );
    // A receiver-specific key id without a key.
    let mut bad = b.clone();
    bad[80..84].copy_from_slice(&7u32.to_be_bytes());
    assert!(matches!(
        KeyMaterial::decode(&bad),
        Err(CryptoError::KeyLength {
            field: "master_receiver_specific_key",
            ..
        })
    ));
    // A length beyond the input.
    let mut bad = b;
    bad[4..8].copy_from_slice(&1000u32.to_be_bytes());
    assert!(matches!(
        KeyMaterial::decode(&bad),
        Err(CryptoError::Truncated { .. })
    ));
    // A broken RNG.
    assert_eq!(
        KeyMaterial::generate(TransformKind::Aes128Gcm, 1, |b| b.fill(0)),
        Err(CryptoError::ZeroKey("master_salt"))
    );
}

#[test]
fn payload_round_trip_every_kind_and_openssl_agrees() {
    for kind in KINDS {
        let km = writer_km(kind, 11);
        let mut tx = SenderCrypto::new(km.clone(), 0x5000, 0x77).unwrap();
        let mut rx = ReceiverCrypto::new(km.clone()).unwrap();
        for len in [0usize, 4, 32, 1000, 63000] {
            let plain: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let mut enc = vec![0u8; len + PAYLOAD_OVERHEAD];
            let n = tx.encode_payload(&plain, &mut enc).unwrap();
            assert_eq!(n, payload_encoded_len(kind, len));
            let enc = &enc[..n];
            let h = CryptoHeader::parse(enc).unwrap();
            assert_eq!(h.transformation_kind, kind);
            assert_eq!(h.transformation_key_id, km.sender_key_id);
            assert_eq!(h.session_id, 0x5000);
            assert_eq!(h.init_vector_suffix, tx.iv_suffix());
            // Independent check of the transform with OpenSSL.
            let key = session_key(&km, h.session_id);
            let nonce = h.nonce();
            let cipher = ossl_gcm(kind.key_len());
            let (content, footer) = if kind.encrypts() {
                assert_eq!(&enc[20..24], &(len as u32).to_be_bytes());
                (&enc[24..24 + len], &enc[24 + len..])
            } else {
                assert_eq!(&enc[20..20 + len], &plain[..]);
                (&enc[20..20 + len], &enc[20 + len..])
            };
            assert_eq!(footer.len(), 20);
            assert_eq!(&footer[16..], &[0, 0, 0, 0]);
            if kind.encrypts() {
                let p = decrypt_aead(
                    cipher,
                    key.as_bytes(),
                    Some(&nonce),
                    &[],
                    content,
                    &footer[..16],
                )
                .unwrap();
                assert_eq!(p, plain);
            } else {
                let mut tag = [0u8; 16];
                encrypt_aead(cipher, key.as_bytes(), Some(&nonce), content, &[], &mut tag).unwrap();
                assert_eq!(&tag, &footer[..16]);
            }
            let mut out = vec![0u8; len];
            assert_eq!(rx.decode_payload(enc, &mut out).unwrap(), len);
            assert_eq!(out, plain);
            // Payloads are not replay-checked: a repair re-sends the same bytes.
            assert_eq!(rx.decode_payload(enc, &mut out).unwrap(), len);
            if kind.encrypts() {
                // A DATA submessage's padding after the footer is ignored.
                let mut padded = enc.to_vec();
                padded.extend_from_slice(&[0, 0, 0]);
                assert_eq!(rx.decode_payload(&padded, &mut out).unwrap(), len);
            }
        }
    }
}

fn submessage_setup(
    kind: TransformKind,
    receivers: u32,
) -> (SenderCrypto, Vec<ReceiverMacKey>, Vec<ReceiverCrypto>) {
    let km = writer_km(kind, 21);
    let tx = SenderCrypto::new(km.clone(), 0xfffffffe, u64::MAX - 3).unwrap();
    if receivers == 0 {
        return (tx, vec![], vec![ReceiverCrypto::new(km).unwrap()]);
    }
    let kms: Vec<KeyMaterial> = (0..receivers).map(|i| for_receiver(&km, i)).collect();
    let macs = kms
        .iter()
        .map(|k| ReceiverMacKey::new(k).unwrap())
        .collect();
    let rxs = kms
        .into_iter()
        .map(|k| ReceiverCrypto::new(k).unwrap())
        .collect();
    (tx, macs, rxs)
}

#[test]
fn submessage_round_trip_every_kind_with_0_1_3_receivers() {
    for kind in KINDS {
        for receivers in [0u32, 1, 3] {
            let (mut tx, mut macs, mut rxs) = submessage_setup(kind, receivers);
            for payload in [0usize, 8, 64, 2000] {
                let plain = data_submessage(payload);
                let mut enc = vec![0u8; plain.len() + SUBMESSAGE_OVERHEAD + 60];
                let n = tx.encode_submessage(&plain, &mut macs, &mut enc).unwrap();
                assert_eq!(n, submessage_encoded_len(kind, plain.len(), macs.len()));
                let mut enc = enc[..n].to_vec();
                // Layout: SEC_PREFIX (E, 20), CryptoHeader, body, SEC_POSTFIX.
                assert_eq!(&enc[..4], &[0x31, 0x01, 20, 0]);
                assert_eq!(&enc[4..8], &kind.to_u32().to_be_bytes());
                if kind.encrypts() {
                    assert_eq!(enc[24], 0x30);
                    assert_eq!(&enc[28..32], &(plain.len() as u32).to_be_bytes());
                    assert_ne!(&enc[32..32 + plain.len()], &plain[..]);
                } else {
                    assert_eq!(&enc[24..24 + plain.len()], &plain[..]);
                }
                let post = n - 24 - 20 * receivers as usize;
                assert_eq!(enc[post], 0x32);
                assert_eq!(&enc[post + 20..post + 24], &receivers.to_be_bytes());
                // Followed by another submessage: `consumed` says where it starts.
                enc.extend_from_slice(&[0x01, 0x01, 0, 0]);
                for rx in &mut rxs {
                    let mut out = vec![0u8; enc.len()];
                    let d = rx.decode_submessage(&enc, &mut out).unwrap();
                    assert_eq!(d.consumed, n);
                    assert_eq!(&out[..d.len], &plain[..]);
                    assert!(matches!(
                        rx.decode_submessage(&enc, &mut out),
                        Err(CryptoError::Replayed { .. })
                    ));
                }
            }
        }
    }
}

#[test]
fn message_round_trip_every_kind_with_0_1_3_receivers() {
    let plain = rtps_message();
    for kind in KINDS {
        for receivers in [0u32, 1, 3] {
            let (mut tx, mut macs, mut rxs) = submessage_setup(kind, receivers);
            for _ in 0..3 {
                let mut enc = vec![0u8; plain.len() + MESSAGE_OVERHEAD + 60];
                let n = tx.encode_message(&plain, &mut macs, &mut enc).unwrap();
                assert_eq!(n, message_encoded_len(kind, plain.len(), macs.len()));
                let enc = &enc[..n];
                assert_eq!(&enc[..20], &plain[..20]);
                assert_eq!(&enc[20..24], &[0x33, 0x01, 20, 0]);
                let h = CryptoHeader::of_message(enc).unwrap();
                assert_eq!(h.init_vector_suffix, tx.iv_suffix());
                for rx in &mut rxs {
                    let mut out = vec![0u8; n];
                    let len = rx.decode_message(enc, &mut out).unwrap();
                    // Header, INFO_SRC copy of it, then the submessages.
                    assert_eq!(len, plain.len() + 24);
                    assert_eq!(&out[..20], &plain[..20]);
                    assert_eq!(&out[20..28], &[0x0c, 0x01, 20, 0, 0, 0, 0, 0]);
                    assert_eq!(&out[28..44], &plain[4..20]);
                    assert_eq!(&out[44..len], &plain[20..]);
                    assert!(matches!(
                        rx.decode_message(enc, &mut out),
                        Err(CryptoError::Replayed { .. })
                    ));
                }
            }
        }
    }
}

#[test]
fn receiver_specific_macs_are_checked() {
    for kind in KINDS {
        let (mut tx, mut macs, _) = submessage_setup(kind, 3);
        let km = tx.key_material().clone();
        let plain = data_submessage(16);
        let mut enc = vec![0u8; 400];
        let n = tx.encode_submessage(&plain, &mut macs, &mut enc).unwrap();
        let mut out = vec![0u8; 400];
        // Same key id, different receiver-specific key: the MAC does not verify.
        let mut rng = Rng(999);
        let forged = km
            .with_receiver_specific_key(0x101, |b| rng.fill(b))
            .unwrap();
        let mut rx = ReceiverCrypto::new(forged).unwrap();
        assert_eq!(
            rx.decode_submessage(&enc[..n], &mut out),
            Err(CryptoError::ReceiverMacMismatch { key_id: 0x101 })
        );
        // A receiver the sender did not include.
        let mut rx = ReceiverCrypto::new(for_receiver(&km, 7)).unwrap();
        assert_eq!(
            rx.decode_submessage(&enc[..n], &mut out),
            Err(CryptoError::ReceiverMacMissing {
                key_id: 0x107,
                count: 3
            })
        );
        // Without origin authentication the receiver-specific MACs are not needed.
        let mut rx = ReceiverCrypto::new(km.clone()).unwrap();
        rx.decode_submessage(&enc[..n], &mut out).unwrap();
        // Message level too.
        let msg = rtps_message();
        let n = tx.encode_message(&msg, &mut macs[..1], &mut enc).unwrap();
        let mut rx = ReceiverCrypto::new(for_receiver(&km, 2)).unwrap();
        assert_eq!(
            rx.decode_message(&enc[..n], &mut out),
            Err(CryptoError::ReceiverMacMissing {
                key_id: 0x102,
                count: 1
            })
        );
        let mut rx = ReceiverCrypto::new(for_receiver(&km, 0)).unwrap();
        rx.decode_message(&enc[..n], &mut out).unwrap();
        // Wrong key material altogether.
        let mut rx = ReceiverCrypto::new(writer_km(kind, 21 + 1)).unwrap();
        assert!(matches!(
            rx.decode_message(&enc[..n], &mut out),
            Err(CryptoError::UnknownKeyId { .. })
        ));
    }
}

/// Flipping any bit pattern of any byte of `enc` makes `decode` fail (with a typed error).
/// At `flags` (the flags of the security submessages, which are not authenticated and whose
/// bits other than E carry no meaning, so a receiver ignores them as RTPS requires) only the
/// E flag is flipped.
fn every_byte_tamper_detected(
    enc: &[u8],
    flags: &[usize],
    mut decode: impl FnMut(&[u8]) -> Result<(), CryptoError>,
) {
    for i in 0..enc.len() {
        let flips: &[u8] = if flags.contains(&i) {
            &[0x01]
        } else {
            &[0x01, 0x80, 0xff]
        };
        for &flip in flips {
            let mut t = enc.to_vec();
            t[i] ^= flip;
            assert!(decode(&t).is_err(), "byte {i} ^ {flip:#x} not detected");
        }
    }
}

#[test]
fn tampering_any_byte_is_detected() {
    for kind in KINDS {
        let (mut tx, mut macs, mut rxs) = submessage_setup(kind, 1);
        let km = tx.key_material().clone();
        let mut out = vec![0u8; 70000];

        let mut ptx = SenderCrypto::new(km.clone(), 1, 1).unwrap();
        let mut prx = ReceiverCrypto::new(km.clone()).unwrap();
        let plain: Vec<u8> = (0..64u8).collect();
        let mut enc = vec![0u8; 200];
        let n = ptx.encode_payload(&plain, &mut enc).unwrap();
        every_byte_tamper_detected(&enc[..n], &[], |t| {
            prx.decode_payload(t, &mut out).map(|_| ())
        });
        prx.decode_payload(&enc[..n], &mut out).unwrap();

        let rx = &mut rxs[0];
        let plain = data_submessage(24);
        let n = tx.encode_submessage(&plain, &mut macs, &mut enc).unwrap();
        let post = n - 44;
        every_byte_tamper_detected(&enc[..n], &[1, 25, post + 1], |t| {
            rx.decode_submessage(t, &mut out).map(|_| ())
        });
        rx.decode_submessage(&enc[..n], &mut out).unwrap();

        let msg = rtps_message();
        let mut enc = vec![0u8; msg.len() + MESSAGE_OVERHEAD + 20];
        let n = tx.encode_message(&msg, &mut macs, &mut enc).unwrap();
        let post = n - 44;
        every_byte_tamper_detected(&enc[..n], &[21, 45, post + 1], |t| {
            rx.decode_message(t, &mut out).map(|_| ())
        });
        // "RTPS" -> "RTPX" (which plain parsers tolerate) in the clear header.
        let mut t = enc[..n].to_vec();
        t[3] = b'X';
        assert_eq!(
            rx.decode_message(&t, &mut out),
            Err(CryptoError::BadRtpsHeader)
        );
        rx.decode_message(&enc[..n], &mut out).unwrap();
    }
}

#[test]
fn truncation_at_every_length_is_an_error() {
    for kind in KINDS {
        let (mut tx, mut macs, mut rxs) = submessage_setup(kind, 3);
        let km = tx.key_material().clone();
        let mut out = vec![0u8; 4000];
        let mut enc = vec![0u8; 4000];

        let mut ptx = SenderCrypto::new(km.clone(), 1, 1).unwrap();
        let mut prx = ReceiverCrypto::new(km).unwrap();
        let n = ptx.encode_payload(&[5u8; 40], &mut enc).unwrap();
        for len in 0..n {
            assert!(prx.decode_payload(&enc[..len], &mut out).is_err(), "{len}");
        }
        let n = tx
            .encode_submessage(&data_submessage(40), &mut macs, &mut enc)
            .unwrap();
        for len in 0..n {
            assert!(
                rxs[1].decode_submessage(&enc[..len], &mut out).is_err(),
                "{len}"
            );
        }
        let n = tx
            .encode_message(&rtps_message(), &mut macs, &mut enc)
            .unwrap();
        for len in 0..n {
            assert!(
                rxs[2].decode_message(&enc[..len], &mut out).is_err(),
                "{len}"
            );
        }
        // Too small an output buffer is an error too, on both sides.
        assert!(matches!(
            tx.encode_message(&rtps_message(), &mut macs, &mut enc[..100]),
            Err(CryptoError::BufferTooSmall { .. })
        ));
        assert!(matches!(
            rxs[2].decode_message(&enc[..n], &mut out[..50]),
            Err(CryptoError::BufferTooSmall { .. })
        ));
        rxs[2].decode_message(&enc[..n], &mut out).unwrap();
    }
}

#[test]
fn replay_window_and_sessions() {
    let kind = TransformKind::Aes256Gcm;
    let km = writer_km(kind, 31);
    // A new session every 4 blocks (64 bytes): a 100-byte submessage takes 7 blocks, so
    // every transform starts a session.
    let mut tx = SenderCrypto::new(km.clone(), 10, 0)
        .unwrap()
        .with_max_blocks_per_session(4);
    let mut rx = ReceiverCrypto::new(km.clone()).unwrap();
    let plain = data_submessage(80);
    let mut encs = vec![];
    for _ in 0..6 {
        let mut enc = vec![0u8; 400];
        let n = tx.encode_submessage(&plain, &mut [], &mut enc).unwrap();
        encs.push(enc[..n].to_vec());
    }
    let sessions: Vec<u32> = encs
        .iter()
        .map(|e| CryptoHeader::of_submessage(e).unwrap().session_id)
        .collect();
    assert_eq!(sessions, [10, 11, 12, 13, 14, 15]);
    let mut out = vec![0u8; 400];
    // Out of order within the cache is fine; sessions 4 or more behind the newest are stale.
    for i in [2usize, 0, 5, 3, 4] {
        let d = rx.decode_submessage(&encs[i], &mut out).unwrap();
        assert_eq!(d.len, plain.len(), "{i}");
    }
    assert_eq!(
        rx.decode_submessage(&encs[1], &mut out),
        Err(CryptoError::StaleSession {
            session_id: 11,
            newest: 15
        })
    );
    for e in &encs[2..] {
        assert!(matches!(
            rx.decode_submessage(e, &mut out),
            Err(CryptoError::Replayed { .. })
        ));
    }

    // Within one session: a window of REPLAY_WINDOW suffixes.
    let mut tx = SenderCrypto::new(km.clone(), 1, 1000).unwrap();
    let mut rx = ReceiverCrypto::new(km).unwrap();
    let mut encs = vec![];
    for _ in 0..=REPLAY_WINDOW {
        let mut enc = vec![0u8; 400];
        let n = tx.encode_submessage(&plain, &mut [], &mut enc).unwrap();
        encs.push(enc[..n].to_vec());
    }
    let last = encs.len() - 1;
    rx.decode_submessage(&encs[last], &mut out).unwrap();
    assert!(matches!(
        rx.decode_submessage(&encs[0], &mut out),
        Err(CryptoError::OutsideReplayWindow { .. })
    ));
    rx.decode_submessage(&encs[1], &mut out).unwrap();
    assert!(matches!(
        rx.decode_submessage(&encs[1], &mut out),
        Err(CryptoError::Replayed { .. })
    ));
    // A failed decode (tampered) leaves the window as it was: the genuine one still passes.
    let mut t = encs[5].clone();
    let l = t.len();
    t[l - 30] ^= 1;
    assert!(rx.decode_submessage(&t, &mut out).is_err());
    rx.decode_submessage(&encs[5], &mut out).unwrap();
}

/// Two senders with one key material (Cyclone DDS's volatile-secure writer and reader share
/// the KxKeys), each from its own random session id: both decode, interleaved, with their
/// replay windows; a session behind its own sender's newest is still stale; more senders
/// than [`MAX_SENDERS`] are refused.
#[test]
fn senders_sharing_key_material_each_keep_their_sessions() {
    let kind = TransformKind::Aes256Gcm;
    let km = writer_km(kind, 32);
    let plain = data_submessage(40);
    let mut out = vec![0u8; 400];
    let enc = |tx: &mut SenderCrypto| {
        let mut e = vec![0u8; 400];
        let n = tx.encode_submessage(&plain, &mut [], &mut e).unwrap();
        e.truncate(n);
        e
    };
    let mut writer = SenderCrypto::new(km.clone(), 0x90b9_ad9c, 7).unwrap();
    let mut reader = SenderCrypto::new(km.clone(), 0xb490_c3c3, 9).unwrap();
    let mut rx = ReceiverCrypto::new(km.clone()).unwrap();
    let mut seen = vec![];
    for i in 0..20 {
        let e = if i % 3 == 0 {
            enc(&mut reader)
        } else {
            enc(&mut writer)
        };
        rx.decode_submessage(&e, &mut out).unwrap();
        seen.push(e);
    }
    for e in &seen {
        assert!(matches!(
            rx.decode_submessage(e, &mut out),
            Err(CryptoError::Replayed { .. })
        ));
    }
    // A session 4 behind the writer's newest: stale.
    let mut old = SenderCrypto::new(km.clone(), 0x90b9_ad9c - 4, 1).unwrap();
    assert!(matches!(
        rx.decode_submessage(&enc(&mut old), &mut out),
        Err(CryptoError::StaleSession { .. })
    ));
    // Two more senders fit; a fifth does not.
    for sid in [0x1000_0000u32, 0x3000_0000] {
        let mut tx = SenderCrypto::new(km.clone(), sid, 1).unwrap();
        rx.decode_submessage(&enc(&mut tx), &mut out).unwrap();
    }
    assert_eq!(MAX_SENDERS, 4);
    let mut fifth = SenderCrypto::new(km, 0x5000_0000, 1).unwrap();
    assert!(matches!(
        rx.decode_submessage(&enc(&mut fifth), &mut out),
        Err(CryptoError::StaleSession { .. })
    ));
}

#[test]
fn bad_plaintext_is_refused() {
    let km = writer_km(TransformKind::Aes256Gmac, 41);
    let mut tx = SenderCrypto::new(km, 1, 1).unwrap();
    let mut out = vec![0u8; 1000];
    // Length field not covering the submessage.
    let mut p = data_submessage(8);
    p.push(0);
    assert!(matches!(
        tx.encode_submessage(&p, &mut [], &mut out),
        Err(CryptoError::BadPlaintext { .. })
    ));
    // A signed submessage not a multiple of 4 long.
    let p = [0x15u8, 0x01, 1, 0, 9];
    assert!(matches!(
        tx.encode_submessage(&p, &mut [], &mut out),
        Err(CryptoError::BadPlaintext { .. })
    ));
    // Not an RTPS message.
    assert!(matches!(
        tx.encode_message(b"RTPX\x03\x00", &mut [], &mut out),
        Err(CryptoError::BadPlaintext { .. })
    ));
    // NONE protects nothing.
    let none = KeyMaterial::new(TransformKind::None, &[], 0, &[], None).unwrap();
    assert!(SenderCrypto::new(none.clone(), 1, 1).is_err());
    assert!(ReceiverCrypto::new(none).is_err());
    // A GCM submessage of odd length is padded in SEC_BODY and comes back exact.
    let km = writer_km(TransformKind::Aes128Gcm, 42);
    let mut tx = SenderCrypto::new(km.clone(), 1, 1).unwrap();
    let mut rx = ReceiverCrypto::new(km).unwrap();
    let p = [0x15u8, 0x01, 1, 0, 9];
    let n = tx.encode_submessage(&p, &mut [], &mut out).unwrap();
    assert_eq!(n, submessage_encoded_len(TransformKind::Aes128Gcm, 5, 0));
    let enc = out[..n].to_vec();
    assert_eq!(u16::from_le_bytes([enc[26], enc[27]]), 12);
    let d = rx.decode_submessage(&enc, &mut out).unwrap();
    assert_eq!(&out[..d.len], &p);
}

#[test]
fn new_sessions_rederive_receiver_specific_keys() {
    for kind in KINDS {
        let (tx, mut macs, mut rxs) = submessage_setup(kind, 3);
        // A new session for every transform (a 100-byte body is 7 blocks).
        let mut tx = SenderCrypto::new(tx.key_material().clone(), 0xffff_fffe, 9)
            .unwrap()
            .with_max_blocks_per_session(2);
        let plain = data_submessage(100);
        let msg = rtps_message();
        let mut enc = vec![0u8; 1000];
        let mut out = vec![0u8; 1000];
        let mut seen = vec![];
        for _ in 0..4 {
            let n = tx.encode_submessage(&plain, &mut macs, &mut enc).unwrap();
            seen.push(tx.session_id());
            for rx in &mut rxs {
                let d = rx.decode_submessage(&enc[..n], &mut out).unwrap();
                assert_eq!(&out[..d.len], &plain[..]);
            }
            let n = tx.encode_message(&msg, &mut macs, &mut enc).unwrap();
            for rx in &mut rxs {
                rx.decode_message(&enc[..n], &mut out).unwrap();
            }
        }
        // Session ids wrap.
        assert_eq!(seen, [0xffff_fffe, 0, 2, 4], "{kind:?}");
    }
}

#[test]
fn header_peeking_and_kind_selection() {
    assert_eq!(
        TransformKind::for_protection(true, 128),
        TransformKind::Aes128Gcm
    );
    assert_eq!(
        TransformKind::for_protection(false, 256),
        TransformKind::Aes256Gmac
    );
    assert!(matches!(
        CryptoHeader::of_submessage(&[0x31, 0x01, 20, 0]),
        Err(CryptoError::Truncated { .. })
    ));
    assert!(matches!(
        CryptoHeader::of_message(b"RTPS"),
        Err(CryptoError::Truncated { .. })
    ));
    let mut sub = vec![0x31, 0x00, 0, 20];
    sub.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 9, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 6]);
    let h = CryptoHeader::of_submessage(&sub).unwrap();
    assert_eq!(
        h,
        CryptoHeader {
            transformation_kind: TransformKind::Aes256Gcm,
            transformation_key_id: 9,
            session_id: 5,
            init_vector_suffix: 6
        }
    );
    assert_eq!(h.nonce(), [0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 6]);
    sub[7] = 0;
    assert_eq!(
        CryptoHeader::of_submessage(&sub),
        Err(CryptoError::UnknownTransformKind(0))
    );
}
