//! TLS over the TCP transport on 127.0.0.1, with a PKI generated at test time (rcgen, so
//! nothing expires): messages both ways after mutual authentication, session resumption on a
//! reconnect, and every bad input refused with an error that names the reason and no data
//! delivered: an unknown CA, an expired and a not yet valid certificate, a key that does not
//! match its certificate, a wrong name, a plaintext peer on either side. The last test
//! captures the traffic with tshark and finds no plaintext RTPS.

use std::io::IoSlice;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use ferrodds_transport::{
    InterfaceSelector, MessageHandler, MessageMeta, SecurityHandle, TcpConfig, TcpTransport,
    Transport, TransportKind,
};
use ferrodds_transport_tls::{security, TlsConfig, TlsError};
use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

const MARKER: &[u8] = b"FERRODDS-SECRET-PAYLOAD";

/// A CA and the identities it signs.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, name);
        p.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        p.not_before = date_time_ymd(2020, 1, 1);
        p.not_after = date_time_ymd(2099, 1, 1);
        let key = KeyPair::generate().unwrap();
        let cert = p.self_signed(&key).unwrap();
        Ca {
            pem: cert.pem(),
            issuer: Issuer::new(p, key),
        }
    }

    /// An identity valid for 127.0.0.1 and `ferrodds-test` between the two years.
    fn identity(&self, from: i32, to: i32) -> (String, String) {
        let mut p =
            CertificateParams::new(vec!["ferrodds-test".to_string(), "127.0.0.1".to_string()])
                .unwrap();
        p.distinguished_name
            .push(DnType::CommonName, "ferrodds-test");
        p.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        p.not_before = date_time_ymd(from, 1, 1);
        p.not_after = date_time_ymd(to, 1, 1);
        let key = KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn config(&self, trusted: &Ca, from: i32, to: i32) -> TlsConfig {
        let (cert, key) = self.identity(from, to);
        TlsConfig {
            ca_certificates: trusted.pem.clone().into_bytes(),
            certificate_chain: cert.into_bytes(),
            private_key: key.into_bytes(),
            peer_name: None,
            allow_tls12: false,
        }
    }
}

struct Forward(mpsc::Sender<Vec<u8>>);

impl MessageHandler for Forward {
    fn on_message(&mut self, msg: &[u8], meta: &MessageMeta) {
        assert_eq!(meta.transport, TransportKind::Tlsv4);
        let _ = self.0.send(msg.to_vec());
    }
}

/// A started transport on 127.0.0.1 (system-chosen port) and what it receives.
fn transport(security: Option<SecurityHandle>) -> (TcpTransport, mpsc::Receiver<Vec<u8>>) {
    let mut header = [7u8; 20];
    header[..8].copy_from_slice(b"RTPS\x02\x05\x01\x0f");
    let t = TcpTransport::new(&TcpConfig {
        interface: InterfaceSelector::Address(Ipv4Addr::LOCALHOST),
        port: 0,
        rtps_header: Some(header),
        security,
        retry_interval: Duration::from_millis(200),
        ..TcpConfig::default()
    })
    .unwrap();
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let plain = t.kind() == TransportKind::Tcpv4;
    t.start(std::sync::Arc::new(move || {
        let tx = tx.lock().unwrap().clone();
        if plain {
            Box::new(Plain(tx)) as Box<dyn MessageHandler>
        } else {
            Box::new(Forward(tx)) as Box<dyn MessageHandler>
        }
    }))
    .unwrap();
    (t, rx)
}

struct Plain(mpsc::Sender<Vec<u8>>);

impl MessageHandler for Plain {
    fn on_message(&mut self, msg: &[u8], _meta: &MessageMeta) {
        let _ = self.0.send(msg.to_vec());
    }
}

fn message(seq: u32) -> Vec<u8> {
    let mut m = b"RTPS\x02\x05\x01\x0f".to_vec();
    m.extend_from_slice(&[9; 12]);
    // A PAD submessage whose body carries the marker and a sequence number.
    let body_len = MARKER.len() + 4;
    m.extend_from_slice(&[0x01, 0x01]);
    m.extend_from_slice(&(body_len as u16).to_le_bytes());
    m.extend_from_slice(MARKER);
    m.extend_from_slice(&seq.to_le_bytes());
    m
}

/// Sends until `n` messages arrived or `limit` passed; returns how many arrived.
fn exchange(
    from: &TcpTransport,
    to: SocketAddrV4,
    rx: &mpsc::Receiver<Vec<u8>>,
    n: usize,
    limit: Duration,
) -> usize {
    let end = Instant::now() + limit;
    let mut got = 0;
    let mut seq = 0;
    while got < n && Instant::now() < end {
        let m = message(seq);
        let _ = from.send(to, &[IoSlice::new(&m)]);
        seq += 1;
        while let Ok(msg) = rx.recv_timeout(Duration::from_millis(20)) {
            assert!(
                msg.windows(MARKER.len()).any(|w| w == MARKER),
                "not our message"
            );
            got += 1;
        }
    }
    got
}

fn wait_for<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() > end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn mutual_tls_both_ways_and_resumption() {
    let ca = Ca::new("FerroDDS test CA");
    let server_sec = security(&ca.config(&ca, 2020, 2099)).unwrap();
    let client_sec = security(&ca.config(&ca, 2020, 2099)).unwrap();
    let (server, server_rx) = transport(Some(server_sec));
    let (client, client_rx) = transport(Some(client_sec.clone()));
    assert_eq!(server.kind(), TransportKind::Tlsv4);
    let got = exchange(
        &client,
        server.local_addr(),
        &server_rx,
        20,
        Duration::from_secs(10),
    );
    assert_eq!(got, 20, "client → server: {:?}", server.security_errors());
    // The server answers on the connection the client dialled (the hello named the client's
    // server): no second connection.
    let got = exchange(
        &server,
        client.local_addr(),
        &client_rx,
        20,
        Duration::from_secs(10),
    );
    assert_eq!(got, 20, "server → client");
    assert_eq!(server.stats().connections_opened, 1);
    assert_eq!(client.stats().connections_opened, 1);
    assert_eq!(client.stats().resumed_sessions, 0);
    // Large messages (several TLS records each).
    let mut big = message(0);
    big.resize(60_000, 0x5a);
    client
        .send(server.local_addr(), &[IoSlice::new(&big)])
        .unwrap();
    let m = server_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(m.len(), 60_000 + 8);
    // A new transport with the same security reconnects with a resumed session.
    let server_addr = server.local_addr();
    client.shutdown();
    drop(client);
    let (client2, _rx2) = transport(Some(client_sec));
    let got = exchange(
        &client2,
        server_addr,
        &server_rx,
        5,
        Duration::from_secs(10),
    );
    assert_eq!(got, 5, "after the reconnect");
    assert_eq!(client2.stats().resumed_sessions, 1, "{:?}", client2.stats());
    assert!(
        server.security_errors().is_empty(),
        "{:?}",
        server.security_errors()
    );
}

/// Runs a client with `client_cfg` against a server with `server_cfg`: nothing may be
/// delivered either way; returns the server's and the client's errors.
fn refused(server_cfg: &TlsConfig, client_cfg: &TlsConfig) -> (String, String) {
    let (server, server_rx) = transport(Some(security(server_cfg).unwrap()));
    let (client, _client_rx) = transport(Some(security(client_cfg).unwrap()));
    let got = exchange(
        &client,
        server.local_addr(),
        &server_rx,
        1,
        Duration::from_millis(1500),
    );
    assert_eq!(got, 0, "data crossed a refused handshake");
    let errors = wait_for(Duration::from_secs(5), || {
        let (s, c) = (server.security_errors(), client.security_errors());
        (!s.is_empty() && !c.is_empty()).then_some((s.join("\n"), c.join("\n")))
    })
    .unwrap_or_else(|| {
        panic!(
            "no handshake error: server {:?}, client {:?}",
            server.security_errors(),
            client.security_errors()
        )
    });
    assert!(server.stats().handshake_failures + client.stats().handshake_failures >= 2);
    errors
}

#[test]
fn unknown_ca_expired_and_not_yet_valid_certificates_are_refused() {
    let ca = Ca::new("FerroDDS test CA");
    let other = Ca::new("Some other CA");
    let server = ca.config(&ca, 2020, 2099);
    // A client whose certificate another CA signed.
    let (s, c) = refused(&server, &other.config(&ca, 2020, 2099));
    assert!(s.contains("not signed by a CA we trust"), "server: {s}");
    assert!(
        c.contains("does not trust our certificate's CA"),
        "client: {c}"
    );
    // Expired.
    let (s, c) = refused(&server, &ca.config(&ca, 2000, 2001));
    assert!(s.contains("has expired"), "server: {s}");
    assert!(c.contains("expired"), "client: {c}");
    // Not valid yet.
    let (s, _) = refused(&server, &ca.config(&ca, 2090, 2098));
    assert!(s.contains("not valid yet"), "server: {s}");
    // The client refuses a server whose certificate another CA signed.
    let (_, c) = refused(
        &other.config(&other, 2020, 2099),
        &ca.config(&ca, 2020, 2099),
    );
    assert!(c.contains("not signed by a CA we trust"), "client: {c}");
}

#[test]
fn a_wrong_peer_name_is_refused() {
    let ca = Ca::new("FerroDDS test CA");
    let server = ca.config(&ca, 2020, 2099);
    let mut client = ca.config(&ca, 2020, 2099);
    client.peer_name = Some("someone-else".into());
    let (_, c) = refused(&server, &client);
    assert!(
        c.contains("not valid for the name we expect"),
        "client: {c}"
    );
    // The right name is accepted.
    client.peer_name = Some("ferrodds-test".into());
    let (server, rx) = transport(Some(security(&server).unwrap()));
    let (client, _) = transport(Some(security(&client).unwrap()));
    assert_eq!(
        exchange(
            &client,
            server.local_addr(),
            &rx,
            3,
            Duration::from_secs(10)
        ),
        3
    );
}

#[test]
fn bad_configuration_is_a_clear_error() {
    let ca = Ca::new("FerroDDS test CA");
    let good = ca.config(&ca, 2020, 2099);
    let other = ca.config(&ca, 2020, 2099);
    // The key of another certificate.
    let mut mismatched = good.clone();
    mismatched.private_key = other.private_key.clone();
    assert!(matches!(security(&mismatched), Err(TlsError::KeyMismatch)));
    assert_eq!(
        security(&mismatched).unwrap_err().to_string(),
        "TLS private key does not match the certificate"
    );
    let mut no_ca = good.clone();
    no_ca.ca_certificates = b"not pem".to_vec();
    let e = security(&no_ca).unwrap_err().to_string();
    assert!(
        e.contains("CA certificates") && e.contains("no CERTIFICATE"),
        "{e}"
    );
    let mut no_key = good.clone();
    no_key.private_key = good.certificate_chain.clone();
    let e = security(&no_key).unwrap_err().to_string();
    assert!(e.contains("private key"), "{e}");
    let mut bad_name = good;
    bad_name.peer_name = Some("not a name!".into());
    assert!(matches!(security(&bad_name), Err(TlsError::PeerName(_))));
    let e = TlsConfig::from_pem_files("/nonexistent/ca.pem", "c.pem", "k.pem").unwrap_err();
    assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
}

#[test]
fn plaintext_peers_are_refused_both_ways() {
    let ca = Ca::new("FerroDDS test CA");
    let cfg = ca.config(&ca, 2020, 2099);
    // A plain TCP participant dials a TLS server.
    let (tls_server, tls_rx) = transport(Some(security(&cfg).unwrap()));
    let (plain_client, _) = transport(None);
    assert_eq!(
        exchange(
            &plain_client,
            tls_server.local_addr(),
            &tls_rx,
            1,
            Duration::from_millis(1500)
        ),
        0
    );
    let e = wait_for(Duration::from_secs(5), || {
        let e = tls_server.security_errors();
        (!e.is_empty()).then(|| e.join("\n"))
    })
    .expect("the TLS server reports the plaintext peer");
    assert!(e.contains("does not speak TLS"), "{e}");
    // A TLS participant dials a plain TCP server.
    let (plain_server, plain_rx) = transport(None);
    let (tls_client, _) = transport(Some(security(&cfg).unwrap()));
    assert_eq!(
        exchange(
            &tls_client,
            plain_server.local_addr(),
            &plain_rx,
            1,
            Duration::from_millis(1500)
        ),
        0
    );
    let e = wait_for(Duration::from_secs(5), || {
        let e = tls_client.security_errors();
        (!e.is_empty()).then(|| e.join("\n"))
    })
    .expect("the TLS client reports the plaintext server");
    assert!(e.contains("closed during the TLS handshake"), "{e}");
}

#[test]
fn no_plaintext_rtps_on_the_wire() {
    let have_tshark = std::process::Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_tshark {
        ferrodds_testkit::skip("tshark not installed");
        return;
    }
    let ca = Ca::new("FerroDDS test CA");
    let (server, server_rx) = transport(Some(security(&ca.config(&ca, 2020, 2099)).unwrap()));
    let port = server.local_addr().port();
    let dir = std::env::temp_dir().join(format!("tls-capture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("tls.pcap");
    let mut tshark = std::process::Command::new("tshark")
        .args(["-i", "lo", "-f", &format!("tcp port {port}"), "-w"])
        .arg(&pcap)
        .args(["-a", "duration:20"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until tshark captures (it says so on stderr), bounded.
    std::thread::sleep(Duration::from_millis(1500));
    let (client, _) = transport(Some(security(&ca.config(&ca, 2020, 2099)).unwrap()));
    let got = exchange(
        &client,
        server.local_addr(),
        &server_rx,
        50,
        Duration::from_secs(10),
    );
    assert_eq!(got, 50);
    std::thread::sleep(Duration::from_millis(500));
    let _ = std::process::Command::new("kill")
        .args(["-INT", &tshark.id().to_string()])
        .status();
    let _ = tshark.wait();
    let bytes = std::fs::read(&pcap).unwrap();
    assert!(
        bytes.len() > 2000,
        "capture too small: {} bytes",
        bytes.len()
    );
    assert!(
        !bytes.windows(MARKER.len()).any(|w| w == MARKER),
        "the payload crossed in plaintext"
    );
    assert!(
        !bytes.windows(4).any(|w| w == b"RTPS"),
        "an RTPS header crossed in plaintext"
    );
    // tshark sees TLS 1.3 application data on that port.
    let out = std::process::Command::new("tshark")
        .args(["-r"])
        .arg(&pcap)
        .args([
            "-d",
            &format!("tcp.port=={port},tls"),
            "-Y",
            "tls.app_data",
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .output()
        .unwrap();
    let frames = String::from_utf8_lossy(&out.stdout).lines().count();
    assert!(frames >= 10, "{frames} TLS application-data frames");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The in-memory pair the `tls_records` fuzz target uses: records sealed by one side open on
/// the other in any split, a second pair from the same client resumes, a flipped byte fails
/// the record with an error and yields no plaintext, and an unknown CA fails the handshake.
#[test]
fn in_memory_pairs_carry_records_and_refuse_tampering() {
    use ferrodds_transport_tls::{fuzzing::connected_pair, RustlsSecurity};
    let ca = Ca::new("FerroDDS test CA");
    let client = RustlsSecurity::new(&ca.config(&ca, 2020, 2099)).unwrap();
    let server = RustlsSecurity::new(&ca.config(&ca, 2020, 2099)).unwrap();
    let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7400);
    let (mut c, mut s) = connected_pair(&client, &server, addr).unwrap();
    assert!(!c.resumed());
    let msgs: Vec<Vec<u8>> = (0..5).map(message).collect();
    let mut wire = Vec::new();
    for m in &msgs {
        c.seal(&[IoSlice::new(&m[..20]), IoSlice::new(&m[20..])], &mut wire)
            .unwrap();
    }
    let (mut plain, mut reply) = (Vec::new(), Vec::new());
    for part in wire.chunks(7) {
        s.open(part, &mut plain, &mut reply).unwrap();
    }
    assert_eq!(plain, msgs.concat());

    let (mut c, mut s) = connected_pair(&client, &server, addr).unwrap();
    assert!(c.resumed() && s.resumed(), "the second pair resumes");
    let mut wire = Vec::new();
    c.seal(&[IoSlice::new(&msgs[0])], &mut wire).unwrap();
    let last = wire.len() - 1;
    wire[last] ^= 1;
    plain.clear();
    assert!(s.open(&wire, &mut plain, &mut reply).is_err());
    assert!(plain.is_empty());

    let stranger = RustlsSecurity::new(&Ca::new("other CA").config(&ca, 2020, 2099)).unwrap();
    let err = connected_pair(&stranger, &server, addr)
        .err()
        .expect("refused");
    assert!(err.to_string().contains("CA"), "{err}");
}
