//! AEAD candidates for the crypto plugin's hot path: aws-lc-rs (`LessSafeKey`) against the
//! `openssl` crate's EVP AES-256-GCM, sealing, opening and GMAC at 32 B and 63000 B; then the
//! plugin's own submessage transform (encode + decode) over the chosen library.
//!
//! Both libraries get their cheapest use: the aws-lc-rs key schedule is made once, the EVP
//! context is made and keyed once and only re-initialised with the next IV per call
//! (`openssl/ctx-per-call` is what Cyclone DDS does: a new context, keyed, per call).
//!
//! `nice cargo bench -p ferrodds-security --bench aead -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ferrodds_security::crypto::{
    KeyMaterial, ReceiverCrypto, SenderCrypto, TransformKind, SUBMESSAGE_OVERHEAD,
};
use openssl::cipher::Cipher;
use openssl::cipher_ctx::CipherCtx;

const SIZES: [usize; 2] = [32, 63000];
const KEY: [u8; 32] = [0x42; 32];

fn nonce(i: u64) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&i.to_be_bytes());
    n
}

fn aws() -> LessSafeKey {
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &KEY).expect("key"))
}

fn ossl_ctx(encrypt: bool) -> CipherCtx {
    let mut ctx = CipherCtx::new().expect("ctx");
    if encrypt {
        ctx.encrypt_init(Some(Cipher::aes_256_gcm()), Some(&KEY), None)
            .expect("init");
    } else {
        ctx.decrypt_init(Some(Cipher::aes_256_gcm()), Some(&KEY), None)
            .expect("init");
    }
    ctx
}

fn ossl_seal(ctx: &mut CipherCtx, iv: &[u8; 12], data: &[u8], out: &mut [u8], tag: &mut [u8]) {
    ctx.encrypt_init(None, None, Some(iv)).expect("iv");
    let n = ctx.cipher_update(data, Some(out)).expect("update");
    ctx.cipher_final(&mut out[n..]).expect("final");
    ctx.tag(tag).expect("tag");
}

fn ossl_open(ctx: &mut CipherCtx, iv: &[u8; 12], data: &[u8], out: &mut [u8], tag: &[u8]) {
    ctx.decrypt_init(None, None, Some(iv)).expect("iv");
    ctx.set_tag(tag).expect("tag");
    let n = ctx.cipher_update(data, Some(out)).expect("update");
    ctx.cipher_final(&mut out[n..]).expect("verify");
}

fn ossl_gmac(ctx: &mut CipherCtx, iv: &[u8; 12], data: &[u8], tag: &mut [u8]) {
    ctx.encrypt_init(None, None, Some(iv)).expect("iv");
    ctx.cipher_update(data, None).expect("aad");
    ctx.cipher_final(&mut []).expect("final");
    ctx.tag(tag).expect("tag");
}

fn seal(c: &mut Criterion) {
    let mut g = c.benchmark_group("aes256gcm_seal");
    for size in SIZES {
        g.throughput(Throughput::Bytes(size as u64));
        let data = vec![7u8; size];
        let mut buf = data.clone();
        let key = aws();
        let mut i = 0u64;
        g.bench_function(BenchmarkId::new("aws-lc-rs", size), |b| {
            b.iter(|| {
                i += 1;
                buf.copy_from_slice(&data);
                let tag = key
                    .seal_in_place_separate_tag(
                        Nonce::assume_unique_for_key(nonce(i)),
                        Aad::empty(),
                        &mut buf,
                    )
                    .expect("seal");
                black_box(&tag);
            })
        });
        let mut ctx = ossl_ctx(true);
        let mut out = vec![0u8; size + 16];
        let mut tag = [0u8; 16];
        g.bench_function(BenchmarkId::new("openssl", size), |b| {
            b.iter(|| {
                i += 1;
                ossl_seal(&mut ctx, &nonce(i), &data, &mut out, &mut tag);
                black_box(&tag);
            })
        });
        g.bench_function(BenchmarkId::new("openssl/ctx-per-call", size), |b| {
            b.iter(|| {
                i += 1;
                let mut ctx = ossl_ctx(true);
                ossl_seal(&mut ctx, &nonce(i), &data, &mut out, &mut tag);
                black_box(&tag);
            })
        });
    }
    g.finish();
}

fn open(c: &mut Criterion) {
    let mut g = c.benchmark_group("aes256gcm_open");
    for size in SIZES {
        g.throughput(Throughput::Bytes(size as u64));
        let key = aws();
        let mut ct = vec![7u8; size];
        let tag = key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce(1)),
                Aad::empty(),
                &mut ct,
            )
            .expect("seal");
        let mut out = vec![0u8; size + 16];
        g.bench_function(BenchmarkId::new("aws-lc-rs", size), |b| {
            b.iter(|| {
                key.open_separate_gather(
                    Nonce::assume_unique_for_key(nonce(1)),
                    Aad::empty(),
                    &ct,
                    tag.as_ref(),
                    &mut out[..size],
                )
                .expect("open");
                black_box(&out);
            })
        });
        let mut ctx = ossl_ctx(false);
        g.bench_function(BenchmarkId::new("openssl", size), |b| {
            b.iter(|| {
                ossl_open(&mut ctx, &nonce(1), &ct, &mut out, tag.as_ref());
                black_box(&out);
            })
        });
        g.bench_function(BenchmarkId::new("openssl/ctx-per-call", size), |b| {
            b.iter(|| {
                let mut ctx = ossl_ctx(false);
                ossl_open(&mut ctx, &nonce(1), &ct, &mut out, tag.as_ref());
                black_box(&out);
            })
        });
    }
    g.finish();
}

fn gmac(c: &mut Criterion) {
    let mut g = c.benchmark_group("aes256gmac");
    for size in SIZES {
        g.throughput(Throughput::Bytes(size as u64));
        let data = vec![7u8; size];
        let key = aws();
        let mut i = 0u64;
        g.bench_function(BenchmarkId::new("aws-lc-rs", size), |b| {
            b.iter(|| {
                i += 1;
                let tag = key
                    .seal_in_place_separate_tag(
                        Nonce::assume_unique_for_key(nonce(i)),
                        Aad::from(&data[..]),
                        &mut [],
                    )
                    .expect("gmac");
                black_box(&tag);
            })
        });
        let mut ctx = ossl_ctx(true);
        let mut tag = [0u8; 16];
        g.bench_function(BenchmarkId::new("openssl", size), |b| {
            b.iter(|| {
                i += 1;
                ossl_gmac(&mut ctx, &nonce(i), &data, &mut tag);
                black_box(&tag);
            })
        });
        g.bench_function(BenchmarkId::new("openssl/ctx-per-call", size), |b| {
            b.iter(|| {
                i += 1;
                let mut ctx = ossl_ctx(true);
                ossl_gmac(&mut ctx, &nonce(i), &data, &mut tag);
                black_box(&tag);
            })
        });
    }
    g.finish();
}

/// The plugin's submessage transform round trip (AES-256-GCM, one receiver-specific MAC).
fn transform(c: &mut Criterion) {
    let mut g = c.benchmark_group("submessage_encode_decode");
    let mut seed = 1u8;
    let km = KeyMaterial::generate(TransformKind::Aes256Gcm, 1, |b| {
        for x in b {
            seed = seed.wrapping_mul(31).wrapping_add(7);
            *x = seed;
        }
    })
    .expect("keys");
    let rkm = km.with_receiver_specific_key(2, |b| b.fill(9)).expect("rs");
    for size in [32usize, 63000] {
        g.throughput(Throughput::Bytes(size as u64));
        // A submessage with a `size`-byte body.
        let mut plain = vec![0x15u8, 0x01];
        plain.extend_from_slice(&(size as u16).to_le_bytes());
        plain.resize(4 + size, 3);
        let mut tx = SenderCrypto::new(km.clone(), 5, 0).expect("tx");
        let mut macs = [ferrodds_security::crypto::ReceiverMacKey::new(&rkm).expect("mac")];
        let mut rx = ReceiverCrypto::new(rkm.clone()).expect("rx");
        let mut enc = vec![0u8; plain.len() + SUBMESSAGE_OVERHEAD + 20];
        let mut out = vec![0u8; enc.len()];
        g.bench_function(BenchmarkId::new("aws-lc-rs", size), |b| {
            b.iter(|| {
                let n = tx
                    .encode_submessage(&plain, &mut macs, &mut enc)
                    .expect("enc");
                let d = rx.decode_submessage(&enc[..n], &mut out).expect("dec");
                black_box(d);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, seal, open, gmac, transform);
criterion_main!(benches);
