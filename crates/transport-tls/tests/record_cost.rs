//! What a TLS record layer costs at best on this machine, next to what the channel the TCP
//! transport uses costs (`cargo test --release -p ferrodds-transport-tls --test record_cost --
//! --ignored --nocapture`, pinned with `taskset -c 0`). For one 63000 B message, in
//! nanoseconds: the channel's seal, and seal + open (rustls' buffered connection, as the
//! transport runs it); AES-256-GCM alone through rustls' aws-lc-rs record encrypter and
//! decrypter, in place, 16 KiB records, no other copy; and a plain copy of the message. The
//! gap between the first two and the AEAD alone is what a copy-free record layer could save;
//! the AEAD alone is the floor any TLS path pays on the CPU that runs it.

use std::io::IoSlice;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Instant;

use ferrodds_transport_tls::{fuzzing::connected_pair, RustlsSecurity, TlsConfig};
use rustls::crypto::cipher::{
    AeadKey, InboundOpaqueMessage, Iv, OutboundChunks, OutboundPlainMessage,
};
use rustls::{ContentType, ProtocolVersion, SupportedCipherSuite};

const SIZE: usize = 63_000;
const ROUNDS: u32 = 20_000;

fn perftest_identity() -> TlsConfig {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/perftest/resource/tls");
    let mut c = TlsConfig::from_pem_files(
        dir.join("ca.pem"),
        dir.join("identity.pem"),
        dir.join("identity_key.pem"),
    )
    .expect("perftest's test identity");
    c.peer_name = Some("ferrodds-perftest".into());
    c
}

fn per_message(t: Instant) -> f64 {
    t.elapsed().as_nanos() as f64 / f64::from(ROUNDS)
}

#[test]
#[ignore = "a measurement: run it in release mode, pinned to one CPU"]
fn record_layer_cost_of_a_63000_byte_message() {
    let msg = vec![7u8; SIZE];
    let security = RustlsSecurity::new(&perftest_identity()).unwrap();
    let server = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7400);

    // The channel, sealing only (a fresh pair: the peer never opens these).
    let (mut a, _) = connected_pair(&security, &security, server).unwrap();
    let mut wire = Vec::new();
    let t = Instant::now();
    for _ in 0..ROUNDS {
        wire.clear();
        a.seal(&[IoSlice::new(&msg)], &mut wire).unwrap();
    }
    let seal = per_message(t);

    // The channel, sealing then opening every message.
    let (mut a, mut b) = connected_pair(&security, &security, server).unwrap();
    let (mut plain, mut reply) = (Vec::new(), Vec::new());
    let t = Instant::now();
    for _ in 0..ROUNDS {
        wire.clear();
        a.seal(&[IoSlice::new(&msg)], &mut wire).unwrap();
        plain.clear();
        b.open(&wire, &mut plain, &mut reply).unwrap();
    }
    let both = per_message(t);
    assert_eq!(plain, msg);

    // AES-256-GCM alone: rustls' aws-lc-rs TLS 1.3 record protection, sealing into one
    // buffer per record and opening it in place.
    let SupportedCipherSuite::Tls13(suite) =
        rustls::crypto::aws_lc_rs::cipher_suite::TLS13_AES_256_GCM_SHA384
    else {
        unreachable!("a TLS 1.3 suite");
    };
    let mut enc = suite
        .aead_alg
        .encrypter(AeadKey::from([1; 32]), Iv::new([2; 12]));
    let mut dec = suite
        .aead_alg
        .decrypter(AeadKey::from([1; 32]), Iv::new([2; 12]));
    let mut seq = 0u64;
    let t = Instant::now();
    for _ in 0..ROUNDS {
        for chunk in msg.chunks(16 * 1024) {
            let sealed = enc
                .encrypt(
                    OutboundPlainMessage {
                        typ: ContentType::ApplicationData,
                        version: ProtocolVersion::TLSv1_2,
                        payload: OutboundChunks::Single(chunk),
                    },
                    seq,
                )
                .unwrap();
            let mut record = sealed.encode();
            let opened = dec
                .decrypt(
                    InboundOpaqueMessage::new(
                        ContentType::ApplicationData,
                        ProtocolVersion::TLSv1_2,
                        &mut record[5..],
                    ),
                    seq,
                )
                .unwrap();
            assert_eq!(opened.payload.len(), chunk.len());
            seq += 1;
        }
    }
    let aead = per_message(t);

    let mut copy = vec![0u8; SIZE];
    let t = Instant::now();
    for _ in 0..ROUNDS {
        copy.copy_from_slice(std::hint::black_box(&msg));
        std::hint::black_box(&mut copy);
    }
    let memcpy = per_message(t);
    println!(
        "63000 B message, ns: channel seal {seal:.0}, channel seal + open {both:.0}, \
         AES-256-GCM seal + open alone {aead:.0}, copy {memcpy:.0}"
    );
    assert!(aead < both, "the channel cannot cost less than its AEAD");
}
