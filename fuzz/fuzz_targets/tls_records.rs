//! The TLS transport's receive path after the handshake: a peer's records, cut anywhere,
//! mixed with forged bytes, opened by the acceptor's channel
//! (`ferrodds_transport_tls`, rustls) and the plaintext split into `MSG_LEN` frames by the
//! TCP deframer as the read loop does. Each input runs on a fresh connection pair whose
//! handshake ran in memory (`fuzzing::connected_pair`; after the first, resumed sessions).
//!
//! The input is a sequence of records `[op: u8][bytes]`:
//! - `op % 4 == 0`: the peer seals a framed RTPS message whose body is the next
//!   `[len: u8]` bytes;
//! - `op % 4 == 1`: `[len: u8]` raw bytes are appended to the stream (forged records);
//! - `op % 4 == 2`: the byte at `[pos: u16 BE]` (modulo what is not yet delivered) of the
//!   stream is XORed with `[x: u8] | 1`;
//! - `op % 4 == 3`: the next `[len: u16 BE]` bytes of the stream are delivered to `open`.
//!
//! What is left is delivered at the end. Properties checked on top of "never panics": the
//! plaintext opened is always a prefix of what the peer sealed (nothing forged or altered is
//! ever handed on), all of it when nothing was forged; once `open` fails the connection is
//! closed (as the transport does); the deframer yields exactly the peer's frames, in order.
#![no_main]

use std::io::IoSlice;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::OnceLock;

use ferrodds_transport::tcp::{Deframer, MAX_TCP_MESSAGE};
use ferrodds_transport::SecureChannel;
use ferrodds_transport_tls::fuzzing::connected_pair;
use ferrodds_transport_tls::{RustlsSecurity, TlsConfig};
use libfuzzer_sys::fuzz_target;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

const SERVER: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7400);

/// A CA and two identities it signed for 127.0.0.1, made once per process.
fn pair() -> &'static (RustlsSecurity, RustlsSecurity) {
    static PAIR: OnceLock<(RustlsSecurity, RustlsSecurity)> = OnceLock::new();
    PAIR.get_or_init(|| {
        let mut p = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, "fuzz CA");
        p.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate().expect("CA key");
        let ca_pem = p.self_signed(&ca_key).expect("CA certificate").pem();
        let issuer = Issuer::new(p, ca_key);
        let identity = || {
            let mut p = CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
            p.distinguished_name.push(DnType::CommonName, "fuzz");
            p.extended_key_usages = vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ];
            let key = KeyPair::generate().expect("key");
            let cert = p.signed_by(&key, &issuer).expect("certificate");
            RustlsSecurity::new(&TlsConfig {
                ca_certificates: ca_pem.clone().into_bytes(),
                certificate_chain: cert.pem().into_bytes(),
                private_key: key.serialize_pem().into_bytes(),
                peer_name: None,
                allow_tls12: false,
            })
            .expect("TLS configuration")
        };
        (identity(), identity())
    })
}

/// An RTPS message framed as the TCP transport sends it: header, `MSG_LEN`, body.
fn frame(body: &[u8]) -> Vec<u8> {
    let mut m = b"RTPS\x02\x05\x01\x0f".to_vec();
    m.extend_from_slice(&[7; 12]);
    m.extend_from_slice(&[0x81, 0x01, 4, 0]);
    m.extend_from_slice(&u32::try_from(28 + body.len()).expect("short").to_le_bytes());
    m.extend_from_slice(body);
    m
}

struct Receiver {
    channel: Box<dyn SecureChannel>,
    deframer: Deframer,
    /// Everything opened so far.
    opened: Vec<u8>,
    /// Frames the deframer yielded so far.
    frames: usize,
    closed: bool,
}

impl Receiver {
    /// Opens `wire` and hands the plaintext to the deframer (the TLS read loop).
    fn deliver(&mut self, wire: &[u8], sealed: &[u8], sent: &[Vec<u8>]) {
        if self.closed || wire.is_empty() {
            return;
        }
        let (mut plain, mut reply) = (Vec::new(), Vec::new());
        let res = self.channel.open(wire, &mut plain, &mut reply);
        self.opened.extend_from_slice(&plain);
        assert!(
            sealed.starts_with(&self.opened),
            "opened bytes the peer never sealed"
        );
        let mut off = 0;
        while off < plain.len() {
            let spare = self.deframer.spare();
            assert!(!spare.is_empty());
            let k = spare.len().min(plain.len() - off);
            spare[..k].copy_from_slice(&plain[off..off + k]);
            self.deframer.filled(k);
            off += k;
            loop {
                match self.deframer.next_message() {
                    Ok(Some(m)) => {
                        assert_eq!(m, &sent[self.frames][..], "frame {}", self.frames);
                        self.frames += 1;
                    }
                    Ok(None) => break,
                    Err(e) => panic!("the peer's frames are valid: {e}"),
                }
            }
        }
        if res.is_err() {
            self.closed = true;
        }
    }
}

/// The next `n` bytes of the input (fewer at its end).
fn take(input: &mut &[u8], n: usize) -> Vec<u8> {
    let (a, b) = input.split_at(n.min(input.len()));
    *input = b;
    a.to_vec()
}

fuzz_target!(|data: &[u8]| {
    let (client, server) = pair();
    let Ok((mut peer, channel)) = connected_pair(client, server, SERVER) else {
        panic!("the in-memory handshake failed");
    };
    let mut rx = Receiver {
        channel,
        deframer: Deframer::new(),
        opened: Vec::new(),
        frames: 0,
        closed: false,
    };
    let mut sealed = Vec::new();
    let mut sent: Vec<Vec<u8>> = Vec::new();
    let mut wire: Vec<u8> = Vec::new();
    let mut delivered = 0;
    let mut forged = false;
    let mut input = data;
    while let Some((&op, rest)) = input.split_first() {
        input = rest;
        match op % 4 {
            0 => {
                let len = take(&mut input, 1).first().copied().unwrap_or(0);
                let body = take(&mut input, usize::from(len));
                let m = frame(&body);
                assert!(m.len() < MAX_TCP_MESSAGE);
                peer.seal(&[IoSlice::new(&m[..20]), IoSlice::new(&m[20..])], &mut wire)
                    .expect("sealing never fails");
                sealed.extend_from_slice(&m);
                sent.push(m);
            }
            1 => {
                let len = take(&mut input, 1).first().copied().unwrap_or(0);
                wire.extend_from_slice(&take(&mut input, usize::from(len)));
                forged |= len > 0;
            }
            2 => {
                let b = take(&mut input, 3);
                let (Some(&hi), Some(&lo), Some(&x)) = (b.first(), b.get(1), b.get(2)) else {
                    continue;
                };
                let pending = wire.len() - delivered;
                if pending > 0 {
                    let pos = delivered + usize::from(u16::from_be_bytes([hi, lo])) % pending;
                    wire[pos] ^= x | 1;
                    forged = true;
                }
            }
            _ => {
                let b = take(&mut input, 2);
                let len = match b[..] {
                    [hi, lo] => usize::from(u16::from_be_bytes([hi, lo])),
                    _ => 0,
                };
                let end = wire.len().min(delivered + len);
                rx.deliver(&wire[delivered..end], &sealed, &sent);
                delivered = end;
            }
        }
    }
    rx.deliver(&wire[delivered..], &sealed, &sent);
    if !forged {
        assert!(!rx.closed, "a clean stream closed the connection");
        assert_eq!(rx.opened, sealed, "a clean stream lost bytes");
        assert_eq!(rx.frames, sent.len());
    }
});
