//! The DDS Security crypto plugin's inverse transforms (`decode_payload`, `decode_submessage`,
//! `decode_message`) on arbitrary bytes, with fixed key material of every transformation kind,
//! with and without origin authentication.
//!
//! The first byte selects the kind (bits 0-1) and the mode (bit 2):
//! - mode 0: the rest is fed as it is to the three decoders (a fresh receiver each, and a
//!   receiver reused across them); only typed errors may come out, and anything decoded fits
//!   the output and the input;
//! - mode 1: bytes 1-2 are a position, byte 3 a bit pattern, the rest a submessage body. The
//!   body is protected as a payload, as a submessage (two receiver-specific MACs) and inside an
//!   RTPS message; each must decode to the original, be refused when replayed (submessage,
//!   message), and be refused once the byte at the position is XORed with the pattern (except
//!   for the non-E bits of a security submessage's flags, which carry no meaning, and the other
//!   receiver's MAC entry, which only that receiver can check).
#![no_main]

use ferrodds_security::crypto::{
    CryptoError, KeyMaterial, ReceiverCrypto, ReceiverMacKey, SenderCrypto, TransformKind,
};
use libfuzzer_sys::fuzz_target;
use std::ops::Range;

const KINDS: [TransformKind; 4] = [
    TransformKind::Aes128Gmac,
    TransformKind::Aes128Gcm,
    TransformKind::Aes256Gmac,
    TransformKind::Aes256Gcm,
];

/// The fixed key material of `kind` (sender key id 0x11), and the key material of receivers
/// 0x21 and 0x22 (with receiver-specific keys). The seeds in corpus-seeds were made with these.
fn keys(kind: TransformKind) -> (KeyMaterial, KeyMaterial, KeyMaterial) {
    let n = kind.key_len();
    let salt: Vec<u8> = (1..=n as u8).collect();
    let key: Vec<u8> = (0x41..0x41 + n as u8).collect();
    let km = KeyMaterial::new(kind, &salt, 0x11, &key, None).expect("writer keys");
    let r = |id: u32| {
        let k: Vec<u8> = (0..n as u8).map(|i| i ^ id as u8).collect();
        KeyMaterial::new(kind, &salt, 0x11, &key, Some((id, &k))).expect("receiver keys")
    };
    (km.clone(), r(0x21), r(0x22))
}

fn decode_all(rx: &mut ReceiverCrypto, data: &[u8], out: &mut [u8]) {
    if let Ok(n) = rx.decode_payload(data, out) {
        assert!(n <= data.len());
    }
    if let Ok(d) = rx.decode_submessage(data, out) {
        assert!(d.consumed <= data.len() && d.len <= d.consumed);
    }
    if let Ok(n) = rx.decode_message(data, out) {
        assert!(n <= data.len());
    }
}

/// Whether XORing `pattern` into byte `pos` of a protected submessage may go unnoticed: the
/// non-E flag bits of the security submessage headers at `flags`, and `other`: bytes of the
/// CryptoFooter this receiver cannot or need not check (the other receiver's MAC entry, and,
/// when this receiver's entry comes first, the count, which may drop the second entry).
fn harmless(pos: usize, pattern: u8, flags: &[usize], other: &[Range<usize>]) -> bool {
    pattern == 0
        || (flags.contains(&pos) && pattern & 1 == 0)
        || other.iter().any(|r| r.contains(&pos))
}

fn expect_refused(r: Result<usize, CryptoError>, what: &str, pos: usize, pattern: u8) {
    assert!(
        r.is_err(),
        "{what}: XOR {pattern:#04x} at byte {pos} was not detected"
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let kind = KINDS[usize::from(sel & 3)];
    let (km, r1, r2) = keys(kind);
    let mut out = vec![0u8; data.len() + 64];

    if sel & 4 == 0 {
        for k in [&km, &r1, &r2] {
            let mut rx = ReceiverCrypto::new(k.clone()).expect("receiver");
            decode_all(&mut rx, rest, &mut out);
            // Each decoder from a fresh state, too.
            for f in [0, 1, 2] {
                let mut rx = ReceiverCrypto::new(k.clone()).expect("receiver");
                let _ = match f {
                    0 => rx.decode_payload(rest, &mut out).map(|_| ()),
                    1 => rx.decode_submessage(rest, &mut out).map(|_| ()),
                    _ => rx.decode_message(rest, &mut out).map(|_| ()),
                };
            }
        }
        return;
    }

    if rest.len() < 3 {
        return;
    }
    let pos = usize::from(u16::from_le_bytes([rest[0], rest[1]]));
    let pattern = rest[2];
    let mut body = rest[3..].to_vec();
    body.truncate(8000);
    body.resize(body.len().next_multiple_of(4), 0);
    let mut sub = vec![0x15u8, 0x01];
    sub.extend_from_slice(&(body.len() as u16).to_le_bytes());
    sub.extend_from_slice(&body);
    let mut msg = b"RTPS\x02\x03\x01\x10".to_vec();
    msg.extend_from_slice(&[0x01, 0x10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    msg.extend_from_slice(&sub);

    let mut tx = SenderCrypto::new(km.clone(), 0x100, u64::from(sel)).expect("sender");
    let mut macs = [
        ReceiverMacKey::new(&r1).expect("mac key"),
        ReceiverMacKey::new(&r2).expect("mac key"),
    ];
    let mut enc = vec![0u8; msg.len() + 200];
    let mut out = vec![0u8; enc.len()];

    // Payload.
    let n = tx.encode_payload(&body, &mut enc).expect("encode payload");
    let mut rx = ReceiverCrypto::new(km.clone()).expect("receiver");
    let m = rx
        .decode_payload(&enc[..n], &mut out)
        .expect("decode payload");
    assert_eq!(&out[..m], &body[..]);
    if pos < n && pattern != 0 {
        let mut t = enc[..n].to_vec();
        t[pos] ^= pattern;
        expect_refused(rx.decode_payload(&t, &mut out), "payload", pos, pattern);
    }

    // Submessage, decoded by receiver 2 (origin authentication).
    let n = tx
        .encode_submessage(&sub, &mut macs, &mut enc)
        .expect("encode submessage");
    let enc_sub = enc[..n].to_vec();
    let mut rx = ReceiverCrypto::new(r2.clone()).expect("receiver");
    if pos < n {
        let mut t = enc_sub.clone();
        t[pos] ^= pattern;
        // SEC_POSTFIX: header, common MAC, count, then the entries of receivers 1 and 2.
        let post = n - 24 - 40;
        if !harmless(pos, pattern, &[1, 25, post + 1], &[post + 24..post + 44]) {
            expect_refused(
                rx.decode_submessage(&t, &mut out).map(|d| d.len),
                "submessage",
                pos,
                pattern,
            );
        }
    }
    let d = rx
        .decode_submessage(&enc_sub, &mut out)
        .expect("decode submessage");
    assert_eq!((d.consumed, &out[..d.len]), (n, &sub[..]));
    assert!(matches!(
        rx.decode_submessage(&enc_sub, &mut out),
        Err(CryptoError::Replayed { .. })
    ));

    // RTPS message, decoded by receiver 1.
    let n = tx
        .encode_message(&msg, &mut macs, &mut enc)
        .expect("encode message");
    let enc_msg = enc[..n].to_vec();
    let mut rx = ReceiverCrypto::new(r1).expect("receiver");
    if pos < n {
        let mut t = enc_msg.clone();
        t[pos] ^= pattern;
        let post = n - 24 - 40;
        let other = [post + 20..post + 24, post + 44..post + 64];
        if !harmless(pos, pattern, &[21, 45, post + 1], &other) {
            expect_refused(rx.decode_message(&t, &mut out), "message", pos, pattern);
        }
    }
    let m = rx
        .decode_message(&enc_msg, &mut out)
        .expect("decode message");
    assert_eq!(m, msg.len() + 24);
    assert_eq!(&out[44..m], &msg[20..]);
    assert!(matches!(
        rx.decode_message(&enc_msg, &mut out),
        Err(CryptoError::Replayed { .. })
    ));
});
