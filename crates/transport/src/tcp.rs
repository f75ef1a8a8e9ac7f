//! RTPS over TCPv4 with Cyclone DDS's framing: every message on the stream is an RTPS message
//! whose first submessage, right after the 20-byte header, is ADLINK's `MSG_LEN` (id 0x81, a
//! `u32` body holding the whole message's length, `MSG_LEN` included).
//!
//! # Connection model
//!
//! Each transport listens on one server port (on its interface's address when the interface
//! was named, else on every address) and announces the interface's address and that port as
//! its unicast locators (kind TCPv4). Sending to a locator uses the
//! connection that serves it, dialling one in the background when there is none (messages
//! queue, bounded, meanwhile; a peer that cannot be reached is retried after
//! [`TcpConfig::retry_interval`] and its messages are dropped in between, counted).
//!
//! A dialled connection starts with a *hello*: an RTPS message made of the participant's
//! header, `MSG_LEN` and an `INFO_REPLY` carrying the dialler's own server locator. A FerroDDS
//! acceptor uses it to send its own traffic back over the same connection; when both sides
//! dialled each other at once, the connection dialled by the side with the smaller server
//! locator (address, then port) survives and the other is closed by both sides. Other
//! implementations treat the hello as a harmless `INFO_REPLY`; with them traffic flows on one
//! connection each way (as Cyclone DDS does itself).
//!
//! # TLS
//!
//! With [`TcpConfig::security`] every connection first runs the secure handshake (the dialler
//! as client, the acceptor as server, bounded by [`TcpConfig::handshake_timeout`]); only then is
//! anything written or read as RTPS, and every byte after goes through the connection's
//! [`SecureChannel`] (sealing and the write that follows are atomic, so records stay in
//! order). Messages sent while a dialled connection is still in its handshake wait, bounded, and
//! go first after it. A failed handshake is counted, kept for
//! [`TcpTransport::security_errors`] and logged once per peer address and reason; a dialled
//! peer is retried after [`TcpConfig::retry_interval`]. The transport is then
//! [`TransportKind::Tlsv4`].
//!
//! # Sending never blocks
//!
//! [`TcpTransport::send`] writes directly from the caller's thread with `MSG_DONTWAIT` when the
//! connection has nothing queued; what the socket does not take is queued (at most
//! [`TcpConfig::send_queue_bytes`] per connection) for the connection's writer thread.
//! A message that does not fit is dropped whole and counted
//! ([`crate::TransportStats::send_queue_drops`]); reliable writers repair such drops as they
//! repair datagram loss. `TCP_NODELAY` is set on every connection.
//!
//! # Receiving
//!
//! One reader thread per connection reads into its own buffer and hands every complete message
//! to its handler. A frame that does not start with `RTPS` and `MSG_LEN`, or announces a length
//! below 28 or above [`MAX_TCP_MESSAGE`], closes that connection (counted in
//! [`crate::TransportStats::frame_errors`] and logged once per connection); nothing panics and
//! no more than [`MAX_TCP_MESSAGE`] bytes are buffered per connection. At most
//! [`TcpConfig::max_connections`] connections are open at once; further incoming ones are
//! closed at once (counted).

use std::collections::HashMap;
use std::io::{self, IoSlice, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, SockRef, Socket, Type};

use crate::{
    AnnouncedLocators, HandlerFactory, InterfaceSelector, MessageHandler, MessageMeta,
    NetworkInterface, SecureChannel, SecurityHandle, StreamSecurity, TrafficKind, Transport,
    TransportError, TransportKind, TransportStats,
};

/// The server port RTI perftest uses with `-transport TCP`.
pub const DEFAULT_TCP_PORT: u16 = 7400;
/// ADLINK's `MSG_LEN` submessage id.
pub const MSG_LEN_ID: u8 = 0x81;
/// The largest message accepted from a connection, in bytes (Cyclone DDS sends at most 64 KiB).
pub const MAX_TCP_MESSAGE: usize = 256 * 1024;
/// RTPS header plus `MSG_LEN`: the bytes needed to know a message's length.
const PREFIX: usize = 28;
const RTPS_HEADER: usize = 20;
const INFO_REPLY_ID: u8 = 0x0f;
/// Length of the hello message: header, `MSG_LEN`, `INFO_REPLY` with one locator.
const HELLO_LEN: usize = PREFIX + 4 + 4 + 24;

/// Configuration of a [`TcpTransport`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpConfig {
    /// Interface whose IPv4 address the server binds to and announces. Default:
    /// [`InterfaceSelector::Default`].
    pub interface: InterfaceSelector,
    /// Server port; 0 lets the system choose. Default: [`DEFAULT_TCP_PORT`] (7400).
    pub port: u16,
    /// Largest message [`TcpTransport::send`] accepts (without `MSG_LEN`). Default: 65000.
    pub max_message_size: usize,
    /// Most connections open at once (dialled and accepted). Default: 64.
    pub max_connections: usize,
    /// Most bytes queued per connection for its writer thread. Default: 16 MiB.
    pub send_queue_bytes: usize,
    /// How long a dial may take. Default: 2 s.
    pub connect_timeout: Duration,
    /// After a failed dial, how long messages to that locator are dropped before the next
    /// attempt. Default: 1 s.
    pub retry_interval: Duration,
    /// The participant's RTPS header; when set, dialled connections start with a hello
    /// (see the module documentation) so the acceptor can answer on them. Default: `None`.
    pub rtps_header: Option<[u8; RTPS_HEADER]>,
    /// A secure channel (TLS) for every connection: the transport is then
    /// [`TransportKind::Tlsv4`] and no byte of RTPS crosses before the handshake completed.
    /// Default: `None` (plain TCP).
    pub security: Option<SecurityHandle>,
    /// How long a secure handshake may take. Default: 5 s.
    pub handshake_timeout: Duration,
}

impl Default for TcpConfig {
    fn default() -> Self {
        Self {
            interface: InterfaceSelector::Default,
            port: DEFAULT_TCP_PORT,
            max_message_size: 65_000,
            max_connections: 64,
            send_queue_bytes: 16 << 20,
            connect_timeout: Duration::from_secs(2),
            retry_interval: Duration::from_secs(1),
            rtps_header: None,
            security: None,
            handshake_timeout: Duration::from_secs(5),
        }
    }
}

/// The `MSG_LEN` submessage for a message of `total` bytes (`MSG_LEN` included), little-endian.
fn msg_len(total: usize) -> [u8; 8] {
    let l = u32::try_from(total).unwrap_or(u32::MAX).to_le_bytes();
    [MSG_LEN_ID, 0x01, 4, 0, l[0], l[1], l[2], l[3]]
}

/// Length announced by a frame's first 28 bytes, or why they are not a frame.
pub fn frame_length(prefix: &[u8]) -> Result<usize, FrameError> {
    if prefix.len() < PREFIX {
        return Err(FrameError::Truncated);
    }
    if &prefix[..4] != b"RTPS" {
        return Err(FrameError::NotRtps);
    }
    if prefix[20] != MSG_LEN_ID {
        return Err(FrameError::NoMsgLen(prefix[20]));
    }
    let b = [prefix[24], prefix[25], prefix[26], prefix[27]];
    let len = if prefix[21] & 1 == 1 {
        u32::from_le_bytes(b)
    } else {
        u32::from_be_bytes(b)
    } as usize;
    if !(PREFIX..=MAX_TCP_MESSAGE).contains(&len) {
        return Err(FrameError::BadLength(len));
    }
    Ok(len)
}

/// Why a TCP frame was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Fewer than 28 bytes.
    #[error("truncated frame")]
    Truncated,
    /// The frame does not start with `RTPS`.
    #[error("frame does not start with RTPS")]
    NotRtps,
    /// The first submessage is not `MSG_LEN`.
    #[error("first submessage is 0x{0:02x}, not MSG_LEN (0x81)")]
    NoMsgLen(u8),
    /// The announced length is below 28 or above [`MAX_TCP_MESSAGE`].
    #[error("frame length {0} outside 28..=262144")]
    BadLength(usize),
}

/// Splits a byte stream into `MSG_LEN` frames with a bounded buffer.
#[derive(Debug)]
pub struct Deframer {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Default for Deframer {
    fn default() -> Self {
        Self::new()
    }
}

impl Deframer {
    /// An empty deframer with a 256 KiB buffer.
    pub fn new() -> Self {
        Self {
            buf: vec![0; MAX_TCP_MESSAGE],
            start: 0,
            end: 0,
        }
    }

    /// Room to read into (never empty while no error was returned).
    pub fn spare(&mut self) -> &mut [u8] {
        if self.start > 0 && (self.start == self.end || self.buf.len() - self.end < PREFIX) {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        &mut self.buf[self.end..]
    }

    /// Bytes received that are not yet a complete message.
    pub fn pending(&self) -> usize {
        self.end - self.start
    }

    /// Records that `n` bytes were read into [`Deframer::spare`].
    pub fn filled(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }

    /// The next complete message, if any; an error means the stream is not valid.
    pub fn next_message(&mut self) -> Result<Option<&[u8]>, FrameError> {
        let avail = self.end - self.start;
        if avail < PREFIX {
            return Ok(None);
        }
        let len = frame_length(&self.buf[self.start..self.start + PREFIX])?;
        if avail < len {
            if self.start + len > self.buf.len() {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            return Ok(None);
        }
        let s = self.start;
        self.start += len;
        Ok(Some(&self.buf[s..s + len]))
    }
}

/// The server locator a hello announces, if `msg` (one message the [`Deframer`] yielded) is
/// one: the first message an acceptor reads from a dialled connection (see the module
/// documentation). Anything else is `None`.
pub fn parse_hello(msg: &[u8]) -> Option<SocketAddrV4> {
    if msg.len() != HELLO_LEN || msg[PREFIX] != INFO_REPLY_ID || msg[PREFIX + 1] != 0x01 {
        return None;
    }
    let body = &msg[PREFIX + 4..];
    let u32le = |o: usize| u32::from_le_bytes([body[o], body[o + 1], body[o + 2], body[o + 3]]);
    if u32le(0) != 1 || u32le(4) != 4 {
        return None;
    }
    let port = u16::try_from(u32le(8)).ok()?;
    let a = &body[24..28];
    Some(SocketAddrV4::new(
        Ipv4Addr::new(a[0], a[1], a[2], a[3]),
        port,
    ))
}

fn hello(header: &[u8; RTPS_HEADER], server: SocketAddrV4) -> Vec<u8> {
    let mut m = Vec::with_capacity(HELLO_LEN);
    m.extend_from_slice(header);
    m.extend_from_slice(&msg_len(HELLO_LEN));
    m.extend_from_slice(&[INFO_REPLY_ID, 0x01]);
    m.extend_from_slice(&28u16.to_le_bytes());
    m.extend_from_slice(&1u32.to_le_bytes());
    m.extend_from_slice(&4i32.to_le_bytes());
    m.extend_from_slice(&u32::from(server.port()).to_le_bytes());
    m.extend_from_slice(&[0; 12]);
    m.extend_from_slice(&server.ip().octets());
    m
}

#[derive(Debug, Default)]
struct Counters {
    opened: AtomicU64,
    closed: AtomicU64,
    refused: AtomicU64,
    frame_errors: AtomicU64,
    queue_drops: AtomicU64,
    unreachable: AtomicU64,
    handshake_failures: AtomicU64,
    resumed: AtomicU64,
}

/// A secure connection's channel, and what was sent before its handshake completed.
#[derive(Default)]
struct Crypto {
    channel: Option<Box<dyn SecureChannel>>,
    /// Framed plaintext messages waiting for the handshake (dialled connections).
    pending: Vec<u8>,
    /// Sealed bytes of the message being sent (reused).
    sealed: Vec<u8>,
}

impl std::fmt::Debug for Crypto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Crypto")
            .field("established", &self.channel.is_some())
            .field("pending", &self.pending.len())
            .finish()
    }
}

#[derive(Debug, Default)]
struct Tx {
    queue: Vec<u8>,
    busy: bool,
    connected: bool,
    closed: bool,
}

#[derive(Debug)]
struct Conn {
    id: u64,
    dialled: bool,
    /// The server locator this connection serves (known for dialled ones, from the hello for
    /// accepted ones).
    route: Mutex<Option<SocketAddrV4>>,
    stream: OnceLock<TcpStream>,
    /// The connection's local and remote ends, once connected.
    ends: OnceLock<(SocketAddrV4, SocketAddrV4)>,
    tx: Mutex<Tx>,
    tx_cv: Condvar,
    /// `Some` on a secure transport: every byte goes through the channel (lock order:
    /// `crypto`, then `tx`).
    crypto: Option<Mutex<Crypto>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Conn {
    fn new(id: u64, dialled: bool, route: Option<SocketAddrV4>, secure: bool) -> Self {
        Self {
            id,
            dialled,
            route: Mutex::new(route),
            stream: OnceLock::new(),
            ends: OnceLock::new(),
            tx: Mutex::new(Tx::default()),
            tx_cv: Condvar::new(),
            crypto: secure.then(|| Mutex::new(Crypto::default())),
        }
    }

    /// Sets the connected stream and records its ends.
    fn set_stream(&self, stream: TcpStream) {
        if let (Ok(SocketAddr::V4(l)), Ok(SocketAddr::V4(r))) =
            (stream.local_addr(), stream.peer_addr())
        {
            let _ = self.ends.set((l, r));
        }
        let _ = self.stream.set(stream);
    }

    fn is_closed(&self) -> bool {
        lock(&self.tx).closed
    }

    /// Queues or writes one framed message; `Err(WouldBlock)` when the queue is full.
    fn send(&self, bufs: &[IoSlice<'_>], total: usize, cap: usize) -> io::Result<()> {
        let first = bufs.first().map_or(&[][..], |b| &b[..]);
        if first.len() < RTPS_HEADER || bufs.len() > 6 {
            // Not what the runtime sends: gathered into one buffer first.
            if total < RTPS_HEADER {
                return Err(io::ErrorKind::InvalidInput.into());
            }
            let all: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            return self.send(&[IoSlice::new(&all)], total, cap);
        }
        let framed = total + 8;
        let ml = msg_len(framed);
        let tx = lock(&self.tx);
        if tx.closed {
            return Err(io::ErrorKind::ConnectionReset.into());
        }
        let mut iov: [IoSlice<'_>; 8] = [IoSlice::new(&[]); 8];
        iov[0] = IoSlice::new(&first[..RTPS_HEADER]);
        iov[1] = IoSlice::new(&ml);
        iov[2] = IoSlice::new(&first[RTPS_HEADER..]);
        for (i, b) in bufs[1..].iter().enumerate() {
            iov[3 + i] = IoSlice::new(b);
        }
        let iov = &iov[..bufs.len() + 2];
        if let Some(crypto) = &self.crypto {
            drop(tx);
            return self.send_sealed(crypto, iov, framed, cap);
        }
        self.send_raw(tx, iov, framed, cap)
    }

    /// Seals one framed message and sends it; before the handshake it waits (bounded) in
    /// `pending`. Sealed bytes are never dropped (that would break the stream): the queue
    /// limit is checked first.
    fn send_sealed(
        &self,
        crypto: &Mutex<Crypto>,
        iov: &[IoSlice<'_>],
        framed: usize,
        cap: usize,
    ) -> io::Result<()> {
        let mut c = lock(crypto);
        let Crypto {
            channel,
            pending,
            sealed,
        } = &mut *c;
        let Some(channel) = channel else {
            if pending.len().saturating_add(framed) > cap {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            for b in iov {
                pending.extend_from_slice(b);
            }
            return Ok(());
        };
        let tx = lock(&self.tx);
        if tx.closed {
            return Err(io::ErrorKind::ConnectionReset.into());
        }
        if tx.queue.len().saturating_add(framed) > cap {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        sealed.clear();
        if let Err(e) = channel.seal(iov, sealed) {
            drop(tx);
            return Err(e);
        }
        let n = sealed.len();
        self.send_raw(tx, &[IoSlice::new(sealed)], n, usize::MAX)
    }

    /// Writes `iov` (`framed` bytes) directly when nothing is queued, else queues it.
    fn send_raw(
        &self,
        mut tx: MutexGuard<'_, Tx>,
        iov: &[IoSlice<'_>],
        framed: usize,
        cap: usize,
    ) -> io::Result<()> {
        let mut sent = 0;
        if tx.connected && !tx.busy && tx.queue.is_empty() {
            if let Some(stream) = self.stream.get() {
                match SockRef::from(stream)
                    .send_vectored_with_flags(iov, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
                {
                    Ok(n) if n >= framed => return Ok(()),
                    Ok(n) => sent = n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        tx.closed = true;
                        drop(tx);
                        self.tx_cv.notify_all();
                        return Err(e);
                    }
                }
            }
        }
        // A partly written message must be completed whatever the queue holds.
        let cap = if sent > 0 { usize::MAX } else { cap };
        self.enqueue(&mut tx, iov, sent, cap)
    }

    fn enqueue(
        &self,
        tx: &mut Tx,
        iov: &[IoSlice<'_>],
        mut skip: usize,
        cap: usize,
    ) -> io::Result<()> {
        let len: usize = iov.iter().map(|b| b.len()).sum::<usize>() - skip;
        if tx.queue.len().saturating_add(len) > cap {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        for b in iov {
            if skip >= b.len() {
                skip -= b.len();
                continue;
            }
            tx.queue.extend_from_slice(&b[skip..]);
            skip = 0;
        }
        self.tx_cv.notify_one();
        Ok(())
    }
}

/// A reader thread's state.
struct Rx {
    handler: Box<dyn MessageHandler>,
    meta: MessageMeta,
    deframer: Deframer,
    first: bool,
}

/// Recent handshake errors, each logged once per peer and reason.
#[derive(Debug, Default)]
struct SecurityErrors {
    recent: std::collections::VecDeque<String>,
    logged: std::collections::HashSet<String>,
}

/// How many handshake errors [`TcpTransport::security_errors`] keeps.
const KEPT_SECURITY_ERRORS: usize = 32;

struct Shared {
    interface: NetworkInterface,
    local: SocketAddrV4,
    /// Taken by the accept thread, which closes it when it ends.
    listener: Mutex<Option<TcpListener>>,
    max_message_size: usize,
    max_connections: usize,
    send_queue_bytes: usize,
    connect_timeout: Duration,
    retry_interval: Duration,
    hello: Option<Vec<u8>>,
    security: Option<Arc<dyn StreamSecurity>>,
    handshake_timeout: Duration,
    /// The last secure-handshake errors ("peer: reason"), and which were logged.
    security_errors: Mutex<SecurityErrors>,
    routes: Mutex<HashMap<SocketAddrV4, Arc<Conn>>>,
    conns: Mutex<Vec<Arc<Conn>>>,
    failed: Mutex<HashMap<SocketAddrV4, Instant>>,
    handlers: OnceLock<HandlerFactory>,
    next_id: AtomicU64,
    shutdown: AtomicBool,
    stats: Counters,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpTransport")
            .field("local", &self.local)
            .field("interface", &self.interface.name)
            .field("connections", &lock(&self.conns).len())
            .finish_non_exhaustive()
    }
}

/// RTPS over TCPv4 for one participant; see the [module documentation](self).
#[derive(Debug)]
pub struct TcpTransport {
    shared: Arc<Shared>,
}

impl TcpTransport {
    /// Binds the server socket described by `config`.
    ///
    /// Errors: the interface does not exist, the port is in use
    /// ([`TransportError::TcpPortInUse`]) or a socket option failed.
    pub fn new(config: &TcpConfig) -> Result<Self, TransportError> {
        if config.max_message_size < PREFIX || config.max_message_size + 8 > MAX_TCP_MESSAGE {
            return Err(TransportError::InvalidMaxMessageSize(
                config.max_message_size,
            ));
        }
        let interface = config.interface.resolve()?;
        // A named interface: listen on its address only; the default one: on every address
        // (as RTI's server does), announcing the interface's.
        let bind_ip = match config.interface {
            InterfaceSelector::Default => Ipv4Addr::UNSPECIFIED,
            _ => interface.address,
        };
        let addr = SocketAddrV4::new(bind_ip, config.port);
        let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))
            .map_err(TransportError::socket("create TCP server socket"))?;
        socket
            .set_reuse_address(true)
            .map_err(TransportError::socket("set SO_REUSEADDR"))?;
        socket
            .bind(&SockAddr::from(addr))
            .map_err(|source| TransportError::TcpPortInUse { addr, source })?;
        socket
            .listen(128)
            .map_err(TransportError::socket("listen on the TCP server socket"))?;
        let listener: TcpListener = socket.into();
        let port = listener
            .local_addr()
            .map_err(TransportError::socket("read the TCP server address"))?
            .port();
        let local = SocketAddrV4::new(interface.address, port);
        let hello = config.rtps_header.map(|h| hello(&h, local));
        Ok(Self {
            shared: Arc::new(Shared {
                interface,
                local,
                listener: Mutex::new(Some(listener)),
                max_message_size: config.max_message_size,
                max_connections: config.max_connections.max(1),
                send_queue_bytes: config.send_queue_bytes,
                connect_timeout: config.connect_timeout,
                retry_interval: config.retry_interval,
                hello,
                security: config.security.as_ref().map(|h| Arc::clone(&h.0)),
                handshake_timeout: config.handshake_timeout,
                security_errors: Mutex::new(SecurityErrors::default()),
                routes: Mutex::new(HashMap::new()),
                conns: Mutex::new(Vec::new()),
                failed: Mutex::new(HashMap::new()),
                handlers: OnceLock::new(),
                next_id: AtomicU64::new(1),
                shutdown: AtomicBool::new(false),
                stats: Counters::default(),
            }),
        })
    }

    /// The server address announced as this participant's locator.
    pub fn local_addr(&self) -> SocketAddrV4 {
        self.shared.local
    }

    /// The last secure-handshake errors (at most 32, oldest first), each "PEER: reason".
    pub fn security_errors(&self) -> Vec<String> {
        lock(&self.shared.security_errors)
            .recent
            .iter()
            .cloned()
            .collect()
    }
}

impl Shared {
    fn conn_for(self: &Arc<Self>, dst: SocketAddrV4) -> io::Result<Arc<Conn>> {
        let mut routes = lock(&self.routes);
        if let Some(c) = routes.get(&dst) {
            if !c.is_closed() {
                return Ok(Arc::clone(c));
            }
        }
        if self.handlers.get().is_none() {
            return Err(io::ErrorKind::NotConnected.into());
        }
        if let Some(t) = lock(&self.failed).get(&dst) {
            if t.elapsed() < self.retry_interval {
                return Err(io::ErrorKind::HostUnreachable.into());
            }
        }
        if lock(&self.conns).len() >= self.max_connections {
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        let conn = Arc::new(Conn::new(
            self.next_id.fetch_add(1, Ordering::Relaxed),
            true,
            Some(dst),
            self.security.is_some(),
        ));
        routes.insert(dst, Arc::clone(&conn));
        lock(&self.conns).push(Arc::clone(&conn));
        let shared = Arc::clone(self);
        let c = Arc::clone(&conn);
        std::thread::Builder::new()
            .name("ferrodds-tcp-tx".into())
            .spawn(move || shared.dial_and_write(c, dst))?;
        Ok(conn)
    }

    fn dial_and_write(self: Arc<Self>, conn: Arc<Conn>, dst: SocketAddrV4) {
        let stream = match TcpStream::connect_timeout(&SocketAddr::V4(dst), self.connect_timeout) {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(%dst, error = %e, "TCP connect failed; retrying later");
                let mut failed = lock(&self.failed);
                // Bounded by the destinations that failed within one retry interval.
                failed.retain(|_, t| t.elapsed() < self.retry_interval);
                failed.insert(dst, Instant::now());
                self.stats.unreachable.fetch_add(1, Ordering::Relaxed);
                self.close(&conn);
                return;
            }
        };
        lock(&self.failed).remove(&dst);
        if self.shutdown.load(Ordering::Acquire) {
            let _ = stream.shutdown(Shutdown::Both);
            self.close(&conn);
            return;
        }
        let _ = stream.set_nodelay(true);
        let mut stream = stream;
        if let (Some(sec), Some(crypto)) = (&self.security, &conn.crypto) {
            let channel = match self.handshake(&mut stream, dst, |s| sec.connect(s, dst)) {
                Some(c) => c,
                None => {
                    lock(&self.failed).insert(dst, Instant::now());
                    self.close(&conn);
                    return;
                }
            };
            // The hello and what was sent during the handshake, sealed, before anything
            // else can be written (the writer thread starts below; direct sends need
            // `connected`).
            let mut c = lock(crypto);
            let mut plain = self.hello.clone().unwrap_or_default();
            plain.append(&mut c.pending);
            let mut wire = Vec::new();
            let mut channel = channel;
            let ok = plain.is_empty()
                || (channel.seal(&[IoSlice::new(&plain)], &mut wire).is_ok()
                    && (&stream).write_all(&wire).is_ok());
            c.channel = Some(channel);
            drop(c);
            if !ok {
                self.close(&conn);
                return;
            }
        } else if let Some(h) = &self.hello {
            if (&stream).write_all(h).is_err() {
                self.close(&conn);
                return;
            }
        }
        let reader = match stream.try_clone() {
            Ok(r) => r,
            Err(_) => {
                self.close(&conn);
                return;
            }
        };
        conn.set_stream(stream);
        {
            // Connected before the reader starts, under the lock `close` takes: a
            // connection the peer closes at once is counted as opened and closed.
            let mut tx = lock(&conn.tx);
            if tx.closed {
                drop(tx);
                if let Some(s) = conn.stream.get() {
                    let _ = s.shutdown(Shutdown::Both);
                }
                return;
            }
            tx.connected = true;
            self.stats.opened.fetch_add(1, Ordering::Relaxed);
        }
        tracing::info!(%dst, "TCP connection dialled");
        self.spawn_reader(&conn, reader);
        self.write_loop(&conn);
    }

    fn spawn_reader(self: &Arc<Self>, conn: &Arc<Conn>, stream: TcpStream) {
        let shared = Arc::clone(self);
        let c = Arc::clone(conn);
        let spawned = std::thread::Builder::new()
            .name("ferrodds-tcp-rx".into())
            .spawn(move || shared.read_loop(c, stream));
        if spawned.is_err() {
            self.close(conn);
        }
    }

    /// Writes what [`Conn::send`] queued until the connection closes.
    fn write_loop(&self, conn: &Conn) {
        let Some(stream) = conn.stream.get() else {
            return;
        };
        let mut batch = Vec::new();
        loop {
            {
                let mut tx = lock(&conn.tx);
                tx.busy = false;
                while tx.queue.is_empty() && !tx.closed {
                    tx = conn.tx_cv.wait(tx).unwrap_or_else(|e| e.into_inner());
                }
                if tx.closed {
                    return;
                }
                std::mem::swap(&mut batch, &mut tx.queue);
                tx.busy = true;
            }
            if let Err(e) = (&*stream).write_all(&batch) {
                tracing::debug!(error = %e, "TCP write failed; closing the connection");
                self.close(conn);
                return;
            }
            batch.clear();
        }
    }

    fn read_loop(self: Arc<Self>, conn: Arc<Conn>, mut stream: TcpStream) {
        let Some(factory) = self.handlers.get() else {
            self.close(&conn);
            return;
        };
        let src = match stream.peer_addr() {
            Ok(SocketAddr::V4(a)) => a,
            _ => SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0),
        };
        // An accepted secure connection: the server side of the handshake, before anything
        // is read as RTPS.
        if let (Some(sec), Some(crypto), false) = (&self.security, &conn.crypto, conn.dialled) {
            match self.handshake(&mut stream, src, |s| sec.accept(s, src)) {
                Some(c) => lock(crypto).channel = Some(c),
                None => {
                    self.close(&conn);
                    return;
                }
            }
        }
        let mut rx = Rx {
            handler: factory(),
            meta: MessageMeta {
                transport: self.kind(),
                src,
                dst: conn.ends.get().map_or(self.local, |e| e.0),
                multicast: false,
                traffic: TrafficKind::UserData,
            },
            deframer: Deframer::new(),
            first: true,
        };
        let mut wire = if conn.crypto.is_some() {
            vec![0u8; 64 * 1024]
        } else {
            Vec::new()
        };
        let mut plain = Vec::new();
        let mut reply = Vec::new();
        // Records that arrived with the end of the handshake are opened before reading more.
        let mut buffered = conn.crypto.is_some();
        loop {
            let Some(crypto) = &conn.crypto else {
                let n = match stream.read(rx.deframer.spare()) {
                    Ok(0) => {
                        self.truncated(&rx, src);
                        break;
                    }
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                rx.deframer.filled(n);
                if !self.drain(&conn, &mut rx) {
                    break;
                }
                continue;
            };
            let n = if std::mem::take(&mut buffered) {
                0
            } else {
                match stream.read(&mut wire) {
                    Ok(0) => {
                        self.truncated(&rx, src);
                        break;
                    }
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            };
            plain.clear();
            reply.clear();
            {
                let mut c = lock(crypto);
                let Some(channel) = c.channel.as_mut() else {
                    break;
                };
                if let Err(e) = channel.open(&wire[..n], &mut plain, &mut reply) {
                    drop(c);
                    self.security_error(src, &e);
                    break;
                }
                if !reply.is_empty() {
                    let _ = conn.send_raw(
                        lock(&conn.tx),
                        &[IoSlice::new(&reply)],
                        reply.len(),
                        usize::MAX,
                    );
                }
            }
            let mut off = 0;
            let mut ok = true;
            while ok && off < plain.len() {
                let spare = rx.deframer.spare();
                let k = spare.len().min(plain.len() - off);
                spare[..k].copy_from_slice(&plain[off..off + k]);
                rx.deframer.filled(k);
                off += k;
                ok = self.drain(&conn, &mut rx);
            }
            if !ok {
                break;
            }
        }
        self.close(&conn);
    }

    /// Logs a stream that ended in the middle of a message.
    fn truncated(&self, rx: &Rx, src: SocketAddrV4) {
        if rx.deframer.pending() > 0 {
            self.stats.frame_errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(peer = %src, error = %FrameError::Truncated, "TCP connection closed mid-frame");
        }
    }

    /// Hands every complete buffered message to the handler; `false` when the connection
    /// must close (bad frame, tie-break lost, shutdown).
    fn drain(&self, conn: &Arc<Conn>, rx: &mut Rx) -> bool {
        loop {
            match rx.deframer.next_message() {
                Ok(Some(msg)) => {
                    if rx.first && !conn.dialled {
                        rx.first = false;
                        if let Some(server) = parse_hello(msg) {
                            if !self.identify(conn, server) {
                                return false;
                            }
                            continue;
                        }
                    }
                    rx.first = false;
                    if self.shutdown.load(Ordering::Relaxed) {
                        return false;
                    }
                    rx.handler.on_message(msg, &rx.meta);
                }
                Ok(None) => return true,
                Err(e) => {
                    self.stats.frame_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(peer = %rx.meta.src, error = %e, "closing a TCP connection: bad frame");
                    return false;
                }
            }
        }
    }

    /// Runs a secure handshake with [`TcpConfig::handshake_timeout`]; a failure is counted
    /// and recorded (logged once per peer address and reason).
    fn handshake(
        &self,
        stream: &mut TcpStream,
        peer: SocketAddrV4,
        run: impl FnOnce(&mut TcpStream) -> io::Result<Box<dyn SecureChannel>>,
    ) -> Option<Box<dyn SecureChannel>> {
        let t = Some(self.handshake_timeout);
        let _ = stream.set_read_timeout(t);
        let _ = stream.set_write_timeout(t);
        let r = run(stream);
        let _ = stream.set_read_timeout(None);
        let _ = stream.set_write_timeout(None);
        match r {
            Ok(c) => {
                if c.resumed() {
                    self.stats.resumed.fetch_add(1, Ordering::Relaxed);
                }
                Some(c)
            }
            Err(e) => {
                self.stats
                    .handshake_failures
                    .fetch_add(1, Ordering::Relaxed);
                self.security_error(peer, &e);
                None
            }
        }
    }

    fn security_error(&self, peer: SocketAddrV4, e: &io::Error) {
        let mut s = lock(&self.security_errors);
        if s.recent.len() >= KEPT_SECURITY_ERRORS {
            s.recent.pop_front();
        }
        s.recent.push_back(format!("{peer}: {e}"));
        // Accepted connections come from ever new ports: once per address and reason.
        if s.logged.len() >= 1024 {
            s.logged.clear();
        }
        if s.logged.insert(format!("{}: {e}", peer.ip())) {
            tracing::error!(%peer, reason = %e, "TLS connection refused");
        }
    }

    fn kind(&self) -> TransportKind {
        if self.security.is_some() {
            TransportKind::Tlsv4
        } else {
            TransportKind::Tcpv4
        }
    }

    /// An accepted connection says it comes from the participant serving `server`; returns
    /// whether it stays open.
    fn identify(&self, conn: &Arc<Conn>, server: SocketAddrV4) -> bool {
        let mut routes = lock(&self.routes);
        *lock(&conn.route) = Some(server);
        let replaced = match routes.get(&server) {
            Some(existing) if existing.id != conn.id && !existing.is_closed() => {
                if existing.dialled && self.local < server {
                    // Both dialled: the smaller server's connection (ours) survives.
                    drop(routes);
                    tracing::info!(peer = %server, "both sides dialled: keeping ours");
                    self.close(conn);
                    return false;
                }
                // Both dialled and theirs wins: ours closes. An earlier accepted
                // connection from the same participant (it dialled another of our
                // addresses) stays open: closing it would only make it dial again.
                existing.dialled.then(|| Arc::clone(existing))
            }
            _ => None,
        };
        routes.insert(server, Arc::clone(conn));
        drop(routes);
        if let Some(old) = replaced {
            self.close(&old);
        }
        true
    }

    fn accept_loop(self: Arc<Self>, listener: TcpListener) {
        loop {
            let accepted = listener.accept();
            if self.shutdown.load(Ordering::Acquire) {
                return;
            }
            let stream = match accepted {
                Ok((s, from)) => {
                    tracing::info!(%from, "TCP connection accepted");
                    s
                }
                Err(e) => {
                    tracing::debug!(error = %e, "TCP accept failed");
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            if lock(&self.conns).len() >= self.max_connections {
                tracing::warn!(
                    max = self.max_connections,
                    "TCP connection refused: too many connections"
                );
                self.stats.refused.fetch_add(1, Ordering::Relaxed);
                let _ = stream.shutdown(Shutdown::Both);
                continue;
            }
            let _ = stream.set_nodelay(true);
            let Ok(reader) = stream.try_clone() else {
                continue;
            };
            let conn = Arc::new(Conn::new(
                self.next_id.fetch_add(1, Ordering::Relaxed),
                false,
                None,
                self.security.is_some(),
            ));
            conn.set_stream(stream);
            lock(&conn.tx).connected = true;
            lock(&self.conns).push(Arc::clone(&conn));
            self.stats.opened.fetch_add(1, Ordering::Relaxed);
            let shared = Arc::clone(&self);
            let c = Arc::clone(&conn);
            if std::thread::Builder::new()
                .name("ferrodds-tcp-tx".into())
                .spawn(move || shared.write_loop(&c))
                .is_err()
            {
                self.close(&conn);
                continue;
            }
            self.spawn_reader(&conn, reader);
        }
    }

    fn close(&self, conn: &Conn) {
        let was_open = {
            let mut tx = lock(&conn.tx);
            if tx.closed {
                return;
            }
            tx.closed = true;
            tx.queue = Vec::new();
            tx.connected
        };
        conn.tx_cv.notify_all();
        if let Some(s) = conn.stream.get() {
            let _ = s.shutdown(Shutdown::Both);
        }
        if let Some(route) = *lock(&conn.route) {
            let mut routes = lock(&self.routes);
            if routes.get(&route).is_some_and(|c| c.id == conn.id) {
                routes.remove(&route);
            }
        }
        lock(&self.conns).retain(|c| c.id != conn.id);
        if was_open {
            tracing::info!(peer = ?*lock(&conn.route), "TCP connection closed");
            // (A dial that failed was never opened.)
            self.stats.closed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Transport for TcpTransport {
    fn kind(&self) -> TransportKind {
        self.shared.kind()
    }

    fn security_errors(&self) -> Vec<String> {
        TcpTransport::security_errors(self)
    }

    fn max_message_size(&self) -> usize {
        self.shared.max_message_size
    }

    fn send_addresses(&self, dst: SocketAddrV4) -> Option<(SocketAddrV4, SocketAddrV4)> {
        let conn = lock(&self.shared.routes).get(&dst).cloned()?;
        conn.ends.get().copied()
    }

    fn interface(&self) -> &NetworkInterface {
        &self.shared.interface
    }

    fn locators(&self) -> AnnouncedLocators {
        AnnouncedLocators {
            metatraffic_unicast: vec![self.shared.local],
            default_unicast: vec![self.shared.local],
            ..AnnouncedLocators::default()
        }
    }

    fn send(&self, dst: SocketAddrV4, bufs: &[IoSlice<'_>]) -> io::Result<()> {
        let s = &self.shared;
        if s.shutdown.load(Ordering::Relaxed) {
            return Err(io::ErrorKind::NotConnected.into());
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if total > s.max_message_size {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        let conn = match s.conn_for(dst) {
            Ok(c) => c,
            Err(e) => {
                if e.kind() == io::ErrorKind::HostUnreachable {
                    s.stats.unreachable.fetch_add(1, Ordering::Relaxed);
                }
                return Err(e);
            }
        };
        let r = conn.send(bufs, total, s.send_queue_bytes);
        match &r {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                s.stats.queue_drops.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => s.close(&conn),
            Ok(()) => {}
        }
        r
    }

    /// The accept thread (`ferrodds-tcp-accept`); each connection then gets a reader and a
    /// writer thread of its own.
    fn start(&self, handlers: HandlerFactory) -> io::Result<Vec<JoinHandle<()>>> {
        if self.shared.handlers.set(handlers).is_err() {
            return Ok(Vec::new());
        }
        let Some(listener) = lock(&self.shared.listener).take() else {
            return Ok(Vec::new());
        };
        let shared = Arc::clone(&self.shared);
        Ok(vec![std::thread::Builder::new()
            .name("ferrodds-tcp-accept".into())
            .spawn(move || shared.accept_loop(listener))?])
    }

    fn shutdown(&self) {
        let s = &self.shared;
        if s.shutdown.swap(true, Ordering::AcqRel) {
            return;
        }
        // Wake the accept thread.
        let wake = if s.local.ip().is_unspecified() {
            SocketAddrV4::new(Ipv4Addr::LOCALHOST, s.local.port())
        } else {
            s.local
        };
        let _ = TcpStream::connect_timeout(&SocketAddr::V4(wake), Duration::from_millis(200));
        let conns: Vec<Arc<Conn>> = lock(&s.conns).clone();
        for c in conns {
            s.close(&c);
        }
    }

    fn stats(&self) -> TransportStats {
        let c = &self.shared.stats;
        TransportStats {
            connections_opened: c.opened.load(Ordering::Relaxed),
            connections_closed: c.closed.load(Ordering::Relaxed),
            connections_refused: c.refused.load(Ordering::Relaxed),
            frame_errors: c.frame_errors.load(Ordering::Relaxed),
            send_queue_drops: c.queue_drops.load(Ordering::Relaxed),
            unreachable_drops: c.unreachable.load(Ordering::Relaxed),
            handshake_failures: c.handshake_failures.load(Ordering::Relaxed),
            resumed_sessions: c.resumed.load(Ordering::Relaxed),
            receive_buffer_drops: 0,
            ..TransportStats::default()
        }
    }
}

impl Drop for TcpTransport {
    fn drop(&mut self) {
        Transport::shutdown(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(body: &[u8]) -> Vec<u8> {
        let mut m = b"RTPS\x02\x05\x01\xfd".to_vec();
        m.extend_from_slice(&[7; 12]);
        m.extend_from_slice(&msg_len(PREFIX + body.len()));
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn deframer_splits_any_chunking() {
        let stream: Vec<u8> = [msg(&[1; 4]), msg(&[2; 1000]), msg(&[])].concat();
        for chunk in [1, 7, 28, 29, 500, 4096] {
            let mut d = Deframer::new();
            let mut got = Vec::new();
            for c in stream.chunks(chunk) {
                d.spare()[..c.len()].copy_from_slice(c);
                d.filled(c.len());
                while let Some(m) = d.next_message().unwrap() {
                    got.push(m.len());
                }
            }
            assert_eq!(got, vec![32, 1028, 28], "chunk {chunk}");
        }
    }

    #[test]
    fn bad_frames_are_refused() {
        assert_eq!(frame_length(b"RTPS"), Err(FrameError::Truncated));
        let mut m = msg(&[0; 4]);
        m[0] = b'X';
        assert_eq!(frame_length(&m), Err(FrameError::NotRtps));
        let mut m = msg(&[0; 4]);
        m[20] = 0x15;
        assert_eq!(frame_length(&m), Err(FrameError::NoMsgLen(0x15)));
        let mut m = msg(&[0; 4]);
        m[24..28].copy_from_slice(&27u32.to_le_bytes());
        assert_eq!(frame_length(&m), Err(FrameError::BadLength(27)));
        m[24..28].copy_from_slice(&(1u32 << 30).to_le_bytes());
        assert_eq!(frame_length(&m), Err(FrameError::BadLength(1 << 30)));
        // Big-endian MSG_LEN (E flag clear) is read as such.
        let mut m = msg(&[0; 4]);
        m[21] = 0;
        m[24..28].copy_from_slice(&32u32.to_be_bytes());
        assert_eq!(frame_length(&m), Ok(32));
    }

    #[test]
    fn hello_round_trips() {
        let server = SocketAddrV4::new(Ipv4Addr::new(172, 16, 0, 1), 7400);
        let mut header = [9u8; 20];
        header[..4].copy_from_slice(b"RTPS");
        let h = hello(&header, server);
        assert_eq!(h.len(), HELLO_LEN);
        assert_eq!(frame_length(&h), Ok(HELLO_LEN));
        assert_eq!(parse_hello(&h), Some(server));
        assert_eq!(parse_hello(&msg(&[0; 32])), None);
    }
}
