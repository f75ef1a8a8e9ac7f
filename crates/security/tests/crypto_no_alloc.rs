//! After warm-up, encoding and decoding payloads, submessages (with receiver-specific MACs)
//! and RTPS messages allocates nothing from the Rust heap, for every transformation kind.
//!
//! Runs without the libtest harness (`harness = false`): the counting allocator is global, so
//! this single-threaded `main` is the only code running while it measures. (AWS-LC's own C
//! code is outside the Rust allocator; its AES-GCM and HMAC do not allocate per operation.)

use std::alloc::System;

use ferrodds_security::crypto::{
    KeyMaterial, ReceiverCrypto, ReceiverMacKey, SenderCrypto, TransformKind, MESSAGE_OVERHEAD,
    PAYLOAD_OVERHEAD, SUBMESSAGE_OVERHEAD,
};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn main() {
    for kind in [
        TransformKind::Aes128Gmac,
        TransformKind::Aes128Gcm,
        TransformKind::Aes256Gmac,
        TransformKind::Aes256Gcm,
    ] {
        transforms_do_not_allocate(kind);
        println!("test transforms_do_not_allocate({kind:?}) ... ok");
    }
    println!("crypto_no_alloc: 4 passed, 0 failed");
}

fn transforms_do_not_allocate(kind: TransformKind) {
    let mut seed = kind.to_u32() as u8;
    let mut rng = |b: &mut [u8]| {
        for x in b {
            seed = seed.wrapping_mul(73).wrapping_add(11);
            *x = seed;
        }
    };
    let km = KeyMaterial::generate(kind, 7, &mut rng).unwrap();
    let r1 = km.with_receiver_specific_key(0x21, &mut rng).unwrap();
    let r2 = km.with_receiver_specific_key(0x22, &mut rng).unwrap();
    let mut macs = [
        ReceiverMacKey::new(&r1).unwrap(),
        ReceiverMacKey::new(&r2).unwrap(),
    ];
    let mut tx = SenderCrypto::new(km.clone(), 0x10, 0x20).unwrap();
    let mut rx_payload = ReceiverCrypto::new(km).unwrap();
    let mut rx = ReceiverCrypto::new(r2).unwrap();

    let payload: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
    let mut submessage = vec![0x15u8, 0x01, 0xe8, 0x03];
    submessage.extend_from_slice(&payload);
    let mut message = b"RTPS\x02\x03\x01\x10".to_vec();
    message.extend_from_slice(&[3; 12]);
    message.extend_from_slice(&submessage);
    message.extend_from_slice(&submessage);
    let mut enc = vec![0u8; message.len() + MESSAGE_OVERHEAD + 40];
    let mut out = vec![0u8; enc.len()];
    assert!(payload.len() + PAYLOAD_OVERHEAD <= enc.len());
    assert!(submessage.len() + SUBMESSAGE_OVERHEAD + 40 <= enc.len());

    let mut round = || {
        let n = tx.encode_payload(&payload, &mut enc).unwrap();
        let m = rx_payload.decode_payload(&enc[..n], &mut out).unwrap();
        assert_eq!(&out[..m], &payload[..]);
        let n = tx
            .encode_submessage(&submessage, &mut macs, &mut enc)
            .unwrap();
        let d = rx.decode_submessage(&enc[..n], &mut out).unwrap();
        assert_eq!(&out[..d.len], &submessage[..]);
        let n = tx.encode_message(&message, &mut macs, &mut enc).unwrap();
        let m = rx.decode_message(&enc[..n], &mut out).unwrap();
        assert_eq!(m, message.len() + 24);
    };
    for _ in 0..3 {
        round();
    }
    let region = Region::new(GLOBAL);
    for _ in 0..500 {
        round();
    }
    let stats = region.change();
    assert_eq!(stats.allocations, 0, "{kind:?}: {stats:?}");
    assert_eq!(stats.reallocations, 0, "{kind:?}: {stats:?}");
}
