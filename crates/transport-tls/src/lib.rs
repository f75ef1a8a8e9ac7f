//! TLS for the FerroDDS TCP transport, with rustls (no OpenSSL).
//!
//! # Contract
//!
//! * [`security`] turns a [`TlsConfig`] (PEM: the CA certificates peers must chain to, this
//!   participant's certificate chain and private key) into the
//!   [`ferrodds_transport::SecurityHandle`] that makes a `TcpTransport` a TLS transport
//!   (`TcpConfig::security`): every connection runs a TLS handshake before any RTPS byte
//!   crosses, then carries Cyclone DDS's framing inside the TLS stream.
//! * **Mutual authentication**: each side presents its certificate and verifies the other's
//!   against the configured CA (chain, validity dates, key usage). The dialling side also checks
//!   the server's name: [`TlsConfig::peer_name`] when set, else the address it dialled.
//! * **TLS 1.3** only, unless [`TlsConfig::allow_tls12`]. Cipher suites are rustls' defaults
//!   with the aws-lc-rs provider (AES-GCM with hardware acceleration where the CPU has it).
//! * **Session resumption**: one [`security`] value keeps the sessions of the connections it
//!   made, so a reconnect to the same peer resumes (counted by the transport as
//!   `resumed_sessions`) instead of paying a full handshake.
//! * **Errors**: bad configuration (unreadable PEM, no certificate, a key that does not match
//!   the certificate) is a [`TlsError`] at construction. A peer that cannot be accepted (an
//!   unknown CA, an expired or not yet valid certificate, a wrong name, no certificate, not TLS
//!   at all) fails its handshake with an `io::Error` whose text names the reason
//!   ([`describe`]); the transport counts it, logs it once per peer and reason, and retries
//!   dialled peers later. Nothing panics.
#![forbid(unsafe_code)]

use std::io::{self, IoSlice, Read, Write};
use std::net::{IpAddr, SocketAddrV4, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferrodds_transport::{SecureChannel, SecurityHandle, StreamSecurity};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    AlertDescription, CertificateError, ClientConfig, ClientConnection, Connection, RootCertStore,
    ServerConfig, ServerConnection,
};

/// A TLS identity and trust anchors, as PEM bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// Certificates of the certificate authorities peers must chain to (PEM, one or more).
    pub ca_certificates: Vec<u8>,
    /// This participant's certificate, then any intermediates (PEM).
    pub certificate_chain: Vec<u8>,
    /// This participant's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub private_key: Vec<u8>,
    /// The name (DNS name or IP address) a server's certificate must be valid for; `None`:
    /// the address dialled.
    pub peer_name: Option<String>,
    /// Also allow TLS 1.2 (default: TLS 1.3 only).
    pub allow_tls12: bool,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("ca_certificates", &self.ca_certificates.len())
            .field("certificate_chain", &self.certificate_chain.len())
            .field("private_key", &"<redacted>")
            .field("peer_name", &self.peer_name)
            .field("allow_tls12", &self.allow_tls12)
            .finish()
    }
}

impl TlsConfig {
    /// Reads the three PEM files.
    pub fn from_pem_files(
        ca: impl AsRef<Path>,
        certificate: impl AsRef<Path>,
        private_key: impl AsRef<Path>,
    ) -> Result<Self, TlsError> {
        let read = |p: &Path| {
            std::fs::read(p).map_err(|source| TlsError::Read {
                path: p.to_path_buf(),
                source,
            })
        };
        Ok(TlsConfig {
            ca_certificates: read(ca.as_ref())?,
            certificate_chain: read(certificate.as_ref())?,
            private_key: read(private_key.as_ref())?,
            peer_name: None,
            allow_tls12: false,
        })
    }
}

/// Why a [`TlsConfig`] cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// A PEM input holds nothing usable.
    #[error("TLS {what}: {detail}")]
    Pem {
        /// Which input (CA certificates, certificate chain, private key).
        what: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// The private key does not belong to the certificate.
    #[error("TLS private key does not match the certificate")]
    KeyMismatch,
    /// [`TlsConfig::peer_name`] is neither a DNS name nor an IP address.
    #[error("TLS peer name {0:?} is not a valid DNS name or IP address")]
    PeerName(String),
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

fn certificates(pem: &[u8], what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            what,
            detail: format!("not valid PEM ({e})"),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            what,
            detail: "no CERTIFICATE block".into(),
        });
    }
    Ok(certs)
}

/// Builds the TLS security of a TCP transport from `cfg`.
pub fn security(cfg: &TlsConfig) -> Result<SecurityHandle, TlsError> {
    Ok(SecurityHandle(Arc::new(RustlsSecurity::new(cfg)?)))
}

/// The rustls client and server configurations of one participant.
#[derive(Debug)]
pub struct RustlsSecurity {
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
    peer_name: Option<ServerName<'static>>,
}

impl RustlsSecurity {
    /// Checks and loads `cfg`.
    pub fn new(cfg: &TlsConfig) -> Result<Self, TlsError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let cas = certificates(&cfg.ca_certificates, "CA certificates")?;
        let chain = certificates(&cfg.certificate_chain, "certificate chain")?;
        let key = PrivateKeyDer::from_pem_slice(&cfg.private_key).map_err(|e| TlsError::Pem {
            what: "private key",
            detail: format!("no usable PRIVATE KEY block ({e})"),
        })?;
        let mut roots = RootCertStore::empty();
        for ca in cas {
            roots.add(ca).map_err(|e| TlsError::Pem {
                what: "CA certificates",
                detail: format!("not a usable CA certificate ({e})"),
            })?;
        }
        let roots = Arc::new(roots);
        // The key must be the certificate's (rustls checks it too; this names the problem).
        let signing = provider
            .key_provider
            .load_private_key(key.clone_key())
            .map_err(TlsError::Config)?;
        let certified = rustls::sign::CertifiedKey::new(chain.clone(), signing);
        match certified.keys_match() {
            Ok(()) => {}
            Err(rustls::Error::InconsistentKeys(_)) => return Err(TlsError::KeyMismatch),
            // The key type cannot be compared (rare): rustls checks at the handshake.
            Err(_) => {}
        }
        let versions: &[&rustls::SupportedProtocolVersion] = if cfg.allow_tls12 {
            &[&rustls::version::TLS13, &rustls::version::TLS12]
        } else {
            &[&rustls::version::TLS13]
        };
        let mut client = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(versions)?
            .with_root_certificates(Arc::clone(&roots))
            .with_client_auth_cert(chain.clone(), key.clone_key())
            .map_err(key_error)?;
        client.enable_sni = false;
        let verifier = WebPkiClientVerifier::builder_with_provider(roots, Arc::clone(&provider))
            .build()
            .map_err(|e| TlsError::Pem {
                what: "CA certificates",
                detail: e.to_string(),
            })?;
        let server = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain, key)
            .map_err(key_error)?;
        let peer_name = match &cfg.peer_name {
            None => None,
            Some(n) => {
                Some(ServerName::try_from(n.clone()).map_err(|_| TlsError::PeerName(n.clone()))?)
            }
        };
        Ok(Self {
            client: Arc::new(client),
            server: Arc::new(server),
            peer_name,
        })
    }
}

impl RustlsSecurity {
    /// The name a server dialled at `server` must have a certificate for.
    fn server_name(&self, server: SocketAddrV4) -> ServerName<'static> {
        self.peer_name
            .clone()
            .unwrap_or_else(|| ServerName::IpAddress(IpAddr::V4(*server.ip()).into()))
    }
}

fn key_error(e: rustls::Error) -> TlsError {
    match e {
        rustls::Error::InconsistentKeys(_) => TlsError::KeyMismatch,
        e => TlsError::Config(e),
    }
}

/// Why a TLS handshake or record failed, in words that name the reason.
pub fn describe(e: &rustls::Error) -> String {
    use rustls::Error as E;
    match e {
        E::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => {
                "the peer's certificate is not signed by a CA we trust".into()
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                "the peer's certificate has expired".into()
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "the peer's certificate is not valid yet".into()
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                "the peer's certificate is not valid for the name we expect".into()
            }
            other => format!("the peer's certificate is invalid ({other:?})"),
        },
        E::AlertReceived(a) => match a {
            AlertDescription::UnknownCA => {
                "the peer does not trust our certificate's CA (alert unknown_ca)".into()
            }
            AlertDescription::CertificateExpired => {
                "the peer says our certificate has expired or is not valid yet (alert certificate_expired)".into()
            }
            AlertDescription::BadCertificate | AlertDescription::CertificateUnknown => {
                format!("the peer refused our certificate (alert {a:?})")
            }
            AlertDescription::CertificateRequired => {
                "the peer requires a certificate (alert certificate_required)".into()
            }
            other => format!("the peer ended the handshake (alert {other:?})"),
        },
        E::NoCertificatesPresented => "the peer presented no certificate".into(),
        E::InvalidMessage(_) | E::InappropriateMessage { .. } | E::InappropriateHandshakeMessage { .. } => {
            "the peer does not speak TLS (a plaintext TCP peer?)".into()
        }
        other => other.to_string(),
    }
}

/// An `io::Error` for a failed handshake that names the reason.
fn handshake_error(e: io::Error) -> io::Error {
    if let Some(r) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return io::Error::new(io::ErrorKind::PermissionDenied, describe(r));
    }
    match e.kind() {
        io::ErrorKind::UnexpectedEof
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => io::Error::new(
            e.kind(),
            "the connection closed during the TLS handshake (a plaintext TCP peer, or it refused us)",
        ),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            io::Error::new(io::ErrorKind::TimedOut, "the TLS handshake timed out")
        }
        _ => e,
    }
}

fn record_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, describe(&e))
}

/// Runs the handshake to its end on the blocking stream.
fn drive(conn: &mut Connection, stream: &mut TcpStream) -> io::Result<()> {
    while conn.is_handshaking() {
        let (_, _) = conn.complete_io(stream).map_err(handshake_error)?;
        if !conn.is_handshaking() {
            break;
        }
    }
    while conn.wants_write() {
        conn.write_tls(stream).map_err(handshake_error)?;
    }
    // After the handshake sealed records are written into the transport's own buffers, as
    // large as its messages: no rustls limit.
    conn.set_buffer_limit(None);
    Ok(())
}

impl StreamSecurity for RustlsSecurity {
    fn connect(
        &self,
        stream: &mut TcpStream,
        server: SocketAddrV4,
    ) -> io::Result<Box<dyn SecureChannel>> {
        let c = ClientConnection::new(Arc::clone(&self.client), self.server_name(server))
            .map_err(|e| io::Error::other(describe(&e)))?;
        let mut conn = Connection::Client(c);
        drive(&mut conn, stream)?;
        let resumed = matches!(conn.handshake_kind(), Some(rustls::HandshakeKind::Resumed));
        Ok(Box::new(Channel { conn, resumed }))
    }

    fn accept(
        &self,
        stream: &mut TcpStream,
        _peer: SocketAddrV4,
    ) -> io::Result<Box<dyn SecureChannel>> {
        let s = ServerConnection::new(Arc::clone(&self.server))
            .map_err(|e| io::Error::other(describe(&e)))?;
        let mut conn = Connection::Server(s);
        drive(&mut conn, stream)?;
        let resumed = matches!(conn.handshake_kind(), Some(rustls::HandshakeKind::Resumed));
        Ok(Box::new(Channel { conn, resumed }))
    }
}

/// One established TLS connection.
struct Channel {
    conn: Connection,
    resumed: bool,
}

impl SecureChannel for Channel {
    fn seal(&mut self, plain: &[IoSlice<'_>], out: &mut Vec<u8>) -> io::Result<()> {
        let mut w = self.conn.writer();
        for b in plain {
            w.write_all(b)?;
        }
        while self.conn.wants_write() {
            self.conn.write_tls(out)?;
        }
        Ok(())
    }

    fn open(
        &mut self,
        mut wire: &[u8],
        plain: &mut Vec<u8>,
        reply: &mut Vec<u8>,
    ) -> io::Result<()> {
        loop {
            if !wire.is_empty() {
                self.conn.read_tls(&mut wire)?;
            }
            let state = self.conn.process_new_packets().map_err(record_error)?;
            let n = state.plaintext_bytes_to_read();
            if n > 0 {
                let start = plain.len();
                plain.resize(start + n, 0);
                self.conn.reader().read_exact(&mut plain[start..])?;
            }
            if wire.is_empty() {
                break;
            }
        }
        while self.conn.wants_write() {
            self.conn.write_tls(reply)?;
        }
        Ok(())
    }

    fn resumed(&self) -> bool {
        self.resumed
    }
}

/// In-memory connections for the `tls_records` fuzz target (`fuzz/`). Not part of the API:
/// hidden from the documentation, no stability promise.
#[doc(hidden)]
pub mod fuzzing {
    use super::*;

    /// Hands `bytes` (TLS records, any split) to `conn` and processes them.
    fn feed(conn: &mut Connection, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            conn.read_tls(&mut bytes)?;
            conn.process_new_packets().map_err(record_error)?;
        }
        Ok(())
    }

    /// Runs the handshake between a client of `client` dialling `server_addr` and a server of
    /// `server` in memory (no socket), and returns their channels, `(client, server)`, as the
    /// TCP transport gets them from [`StreamSecurity::connect`] and
    /// [`StreamSecurity::accept`]. Session tickets the server sends after the handshake are
    /// delivered too, so a later pair from the same `client` resumes.
    pub fn connected_pair(
        client: &RustlsSecurity,
        server: &RustlsSecurity,
        server_addr: SocketAddrV4,
    ) -> io::Result<(Box<dyn SecureChannel>, Box<dyn SecureChannel>)> {
        let c = ClientConnection::new(Arc::clone(&client.client), client.server_name(server_addr))
            .map_err(|e| io::Error::other(describe(&e)))?;
        let s = ServerConnection::new(Arc::clone(&server.server))
            .map_err(|e| io::Error::other(describe(&e)))?;
        let (mut c, mut s) = (Connection::Client(c), Connection::Server(s));
        let mut buf = Vec::new();
        // A TLS 1.3 handshake with tickets takes three flights; bounded in any case.
        for _ in 0..8 {
            buf.clear();
            while c.wants_write() {
                c.write_tls(&mut buf)?;
            }
            feed(&mut s, &buf).map_err(handshake_error)?;
            buf.clear();
            while s.wants_write() {
                s.write_tls(&mut buf)?;
            }
            feed(&mut c, &buf).map_err(handshake_error)?;
            if !c.is_handshaking() && !s.is_handshaking() && !c.wants_write() && !s.wants_write() {
                c.set_buffer_limit(None);
                s.set_buffer_limit(None);
                let resumed = |conn: &Connection| {
                    matches!(conn.handshake_kind(), Some(rustls::HandshakeKind::Resumed))
                };
                let (cr, sr) = (resumed(&c), resumed(&s));
                return Ok((
                    Box::new(Channel {
                        conn: c,
                        resumed: cr,
                    }),
                    Box::new(Channel {
                        conn: s,
                        resumed: sr,
                    }),
                ));
            }
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the in-memory TLS handshake did not complete",
        ))
    }
}
