//! Raw TCP transport (`-rawTransport -transport TCP`): plain TCP sockets without RTPS,
//! the baseline for FerroDDS over TCP as [`super::raw`] is for UDP. With `-transport TLS` the
//! same over TLS 1.3 (the TLS identity of [`super::tls`], mutual authentication, the handshake
//! when a connection opens): the baseline for FerroDDS over TLS.
//!
//! Ports are the raw UDP ones ([`super::raw::port`]), as TCP ports: every reader listens
//! on its port (the publisher's `Latency` and `Announcement`, each subscriber's
//! `Throughput`) and accepts any number of connections; every writer dials its targets
//! when it first writes (again at most every [`RECONNECT_INTERVAL`] while a target is
//! unreachable: what is written meanwhile is dropped, as a datagram to a port nobody
//! listens on would be). Sockets have `TCP_NODELAY`. Each frame on a stream is a 4-byte
//! little-endian length followed by one or more encoded samples (application-level
//! batching as in raw UDP); a receive buffer grows to the largest frame seen. Writes block: TCP's flow control is the back-pressure, bounded
//! by [`SEND_TIMEOUT`] so a stuck receiver cannot hang the publisher. A frame longer than
//! a batch plus the largest sample closes that connection (logged).

use std::io::{self, IoSlice, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrodds_transport::{SecureChannel, StreamSecurity};
#[cfg(feature = "tls")]
use ferrodds_transport_tls::RustlsSecurity;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use socket2::{Domain, Protocol, Socket, Type};

use crate::error::PerftestError;
use crate::message::{decode_datagram, encoded_len, Encoder, TestMessage};
use crate::options::{Options, Role, FINISHED_SIZE, MAX_RAW_TCP_DATA_LEN};
use crate::transport::raw::{set_buffers, Endpoints, MAX_DATAGRAM};
use crate::transport::{raw, Capabilities, Reader, Support, TopicKind, Transport, Writer};

/// What the raw TCP backend can do: as raw UDP, but samples up to
/// [`MAX_RAW_TCP_DATA_LEN`] and blocking sockets only.
pub const CAPABILITIES: Capabilities = Capabilities {
    max_data_len: MAX_RAW_TCP_DATA_LEN,
    data_len_mode: "the raw TCP/TLS transport",
    non_blocking_sockets: Support::No(
        "raw TCP/TLS writes block (TCP flow control); -noBlockingSockets is for raw UDP",
    ),
    transports: if cfg!(feature = "tls") {
        &["TCP", "TLS"]
    } else {
        &["TCP"]
    },
    transport_limit: if cfg!(feature = "tls") {
        "only UDPv4, TCP, TLS and SHMEM are available with -rawTransport"
    } else {
        "this perftest was built without the `tls` feature (the micro build has none)"
    },
    multicast: Support::No("raw TCP/TLS is point to point (no multicast)"),
    multicast_address: Support::No("raw TCP/TLS is point to point (no multicast)"),
    ..raw::CAPABILITIES
};

/// Bytes of the frame header (the length of what follows).
const FRAME_HEADER: usize = 4;
/// Least time between two dial attempts to an unreachable target.
pub const RECONNECT_INTERVAL: Duration = Duration::from_millis(100);
/// Dial timeout (a target that does not answer).
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// Longest a write may block before the connection is given up.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes asked from the kernel per read.
const READ_CHUNK: usize = 256 * 1024;

/// The raw TCP backend.
pub struct RawTcpTransport {
    ep: Endpoints,
    num_subscribers: u32,
    batch: Option<usize>,
    max_payload: usize,
    recv_buffer: usize,
    send_buffer: usize,
    /// `-transport TLS`: the TLS configuration, and how it is described.
    tls: Option<(Arc<dyn StreamSecurity>, String)>,
}

impl std::fmt::Debug for RawTcpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawTcpTransport")
            .field("role", &self.ep.role())
            .field("nic", &self.ep.nic)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

/// How long a raw TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Runs a handshake with [`HANDSHAKE_TIMEOUT`]; an error is printed (naming the peer and
/// the reason) and the connection dropped.
fn handshake(
    stream: &mut TcpStream,
    peer: SocketAddr,
    run: impl FnOnce(&mut TcpStream) -> io::Result<Box<dyn SecureChannel>>,
) -> Option<Box<dyn SecureChannel>> {
    let _ = stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
    let _ = stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT));
    let r = run(stream);
    let _ = stream.set_read_timeout(None);
    let _ = stream.set_write_timeout(Some(SEND_TIMEOUT));
    match r {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("raw TLS: connection with {peer} refused: {e}");
            None
        }
    }
}

/// The raw TLS identity and trust anchors (and where they came from, for the summary).
#[cfg(feature = "tls")]
fn tls_security(opts: &Options) -> Result<(Arc<dyn StreamSecurity>, String), PerftestError> {
    let (cfg, source) = super::tls::tls_config(opts)?;
    let sec = RustlsSecurity::new(&cfg).map_err(|e| PerftestError::Tls {
        context: "loading the TLS identity",
        source: e,
    })?;
    Ok((Arc::new(sec), source))
}

/// Without the `tls` feature the option parser refuses `-transport TLS`.
#[cfg(not(feature = "tls"))]
fn tls_security(_opts: &Options) -> Result<(Arc<dyn StreamSecurity>, String), PerftestError> {
    Err(PerftestError::NotAvailable(
        "raw TLS: this perftest was built without the `tls` feature",
    ))
}

impl RawTcpTransport {
    /// Builds the backend from the options (`batch` is the decided batch size in bytes).
    pub fn new(opts: &Options, batch: Option<usize>) -> Result<Self, PerftestError> {
        let ep = Endpoints::from_options(opts)?;
        let tls = if opts.transport.as_deref() == Some("TLS") {
            Some(tls_security(opts)?)
        } else {
            None
        };
        Ok(RawTcpTransport {
            tls,
            ep,
            num_subscribers: opts.num_subscribers,
            batch,
            max_payload: opts.payload_len().max(FINISHED_SIZE + 1),
            recv_buffer: opts.receive_buffer_size.unwrap_or(4 << 20) as usize,
            send_buffer: opts.send_buffer_size.unwrap_or(1 << 20) as usize,
        })
    }
}

/// The longest frame a reader accepts: a batch plus the largest sample (the readers do not
/// know the writer's `-dataLen`).
fn max_frame() -> usize {
    MAX_DATAGRAM + encoded_len(MAX_RAW_TCP_DATA_LEN as usize)
}

impl Transport for RawTcpTransport {
    fn create_writer(&mut self, topic: TopicKind) -> Result<Box<dyn Writer>, PerftestError> {
        let targets = self.ep.writer_targets(topic)?;
        let batch = if topic == TopicKind::Throughput {
            self.batch.map(|b| b.min(MAX_DATAGRAM))
        } else {
            None
        };
        let cap = FRAME_HEADER + batch.unwrap_or(0) + encoded_len(self.max_payload);
        Ok(Box::new(RawTcpWriter {
            conns: targets
                .into_iter()
                .map(|addr| Target {
                    addr,
                    stream: None,
                    channel: None,
                    last_attempt: None,
                })
                .collect(),
            tls: self.tls.as_ref().map(|(s, _)| Arc::clone(s)),
            sealed: Vec::new(),
            nic: self.ep.nic,
            send_buffer: self.send_buffer,
            encoder: Encoder::new(self.max_payload),
            buf: Vec::with_capacity(cap),
            batch,
        }))
    }

    fn create_reader(&mut self, topic: TopicKind) -> Result<Box<dyn Reader>, PerftestError> {
        let bind_port = self.ep.reader_port(topic)?;
        let expected = match self.ep.role() {
            Role::Publisher => self.num_subscribers as usize,
            Role::Subscriber => 1,
        };
        let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))
            .map_err(PerftestError::io("creating a TCP socket"))?;
        s.set_reuse_address(true)
            .map_err(PerftestError::io("setting SO_REUSEADDR"))?;
        set_buffers(&s, self.recv_buffer, self.send_buffer);
        s.bind(&SocketAddr::V4(SocketAddrV4::new(self.ep.nic, bind_port)).into())
            .map_err(PerftestError::io(
                "binding a TCP listener (is the port in use?)",
            ))?;
        s.listen(128)
            .map_err(PerftestError::io("listening on a TCP socket"))?;
        s.set_nonblocking(true)
            .map_err(PerftestError::io("making a listener non-blocking"))?;
        Ok(Box::new(RawTcpReader {
            tls: self.tls.as_ref().map(|(s, _)| Arc::clone(s)),
            listener: s.into(),
            conns: Vec::new(),
            expected,
            max_frame: max_frame(),
            recv_buffer: self.recv_buffer,
            timeout: None,
        }))
    }

    fn describe(&self) -> Vec<String> {
        let kind = match &self.tls {
            None => "Kind: TCP (raw sockets, no RTPS; 4-byte length framing, TCP_NODELAY)".to_string(),
            Some((_, source)) => format!(
                "Kind: TLS (raw TLS 1.3 over TCP sockets, no RTPS; 4-byte length framing; identity: {source})"
            ),
        };
        let mut v = vec![
            kind,
            format!("Nic: {}", self.ep.nic_label),
            "Use Multicast: False".to_string(),
            "Blocking Sockets: Yes".to_string(),
        ];
        let ports: Vec<String> = self.ep.ports().iter().map(u16::to_string).collect();
        v.push(format!(
            "The following TCP ports will be used: {}",
            ports.join(", ")
        ));
        v.push(self.ep.peers_line());
        v
    }

    fn reliable(&self) -> bool {
        true
    }

    fn needs_discovery(&self) -> bool {
        false
    }
}

struct Target {
    addr: SocketAddr,
    stream: Option<TcpStream>,
    /// With TLS: the connection's channel.
    channel: Option<Box<dyn SecureChannel>>,
    last_attempt: Option<Instant>,
}

impl Target {
    /// Whether there is a connection, dialling (and with TLS running the handshake) when
    /// there is none and the last attempt is old enough.
    fn connect(
        &mut self,
        nic: Ipv4Addr,
        send_buffer: usize,
        tls: Option<&dyn StreamSecurity>,
    ) -> Result<bool, PerftestError> {
        if self.stream.is_none()
            && self
                .last_attempt
                .is_none_or(|t| t.elapsed() >= RECONNECT_INTERVAL)
        {
            self.last_attempt = Some(Instant::now());
            if let Some(mut s) = dial(self.addr, nic, send_buffer)? {
                match tls {
                    None => self.stream = Some(s),
                    Some(sec) => {
                        let SocketAddr::V4(server) = self.addr else {
                            return Ok(false);
                        };
                        if let Some(c) = handshake(&mut s, self.addr, |s| sec.connect(s, server)) {
                            self.channel = Some(c);
                            self.stream = Some(s);
                        }
                    }
                }
            }
        }
        Ok(self.stream.is_some())
    }
}

/// Dials `addr` from the `nic` address; `None` when nobody listens (yet).
fn dial(
    addr: SocketAddr,
    nic: Ipv4Addr,
    send_buffer: usize,
) -> Result<Option<TcpStream>, PerftestError> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))
        .map_err(PerftestError::io("creating a TCP socket"))?;
    set_buffers(&s, 1 << 16, send_buffer);
    s.bind(&SocketAddr::V4(SocketAddrV4::new(nic, 0)).into())
        .map_err(PerftestError::io(
            "binding a TCP socket to the -nic address",
        ))?;
    match s.connect_timeout(&addr.into(), CONNECT_TIMEOUT) {
        Ok(()) => {}
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::ConnectionRefused
                    | io::ErrorKind::TimedOut
                    | io::ErrorKind::WouldBlock
                    | io::ErrorKind::HostUnreachable
                    | io::ErrorKind::NetworkUnreachable
            ) =>
        {
            return Ok(None)
        }
        Err(e) => {
            return Err(PerftestError::Io {
                context: "connecting a raw TCP socket",
                source: e,
            })
        }
    }
    s.set_tcp_nodelay(true)
        .map_err(PerftestError::io("setting TCP_NODELAY"))?;
    s.set_write_timeout(Some(SEND_TIMEOUT))
        .map_err(PerftestError::io("setting a send timeout"))?;
    Ok(Some(s.into()))
}

struct RawTcpWriter {
    conns: Vec<Target>,
    tls: Option<Arc<dyn StreamSecurity>>,
    /// Sealed bytes of a frame (TLS).
    sealed: Vec<u8>,
    nic: Ipv4Addr,
    send_buffer: usize,
    encoder: Encoder,
    /// The frame being built: header, then samples.
    buf: Vec<u8>,
    batch: Option<usize>,
}

impl RawTcpWriter {
    fn payload_len(&self) -> usize {
        self.buf.len().saturating_sub(FRAME_HEADER)
    }

    fn send(&mut self) -> Result<(), PerftestError> {
        if self.buf.len() <= FRAME_HEADER {
            self.buf.clear();
            return Ok(());
        }
        let len = (self.buf.len() - FRAME_HEADER) as u32;
        self.buf[..FRAME_HEADER].copy_from_slice(&len.to_le_bytes());
        for t in &mut self.conns {
            if !t.connect(self.nic, self.send_buffer, self.tls.as_deref())? {
                continue;
            }
            let Some(stream) = t.stream.as_mut() else {
                continue;
            };
            let bytes: &[u8] = match &mut t.channel {
                None => &self.buf,
                Some(ch) => {
                    self.sealed.clear();
                    if let Err(e) = ch.seal(&[IoSlice::new(&self.buf)], &mut self.sealed) {
                        eprintln!("raw TLS: sealing for {} failed: {e}", t.addr);
                        t.stream = None;
                        t.channel = None;
                        continue;
                    }
                    &self.sealed
                }
            };
            if let Err(e) = stream.write_all(bytes) {
                // The receiver went away (or stopped reading for SEND_TIMEOUT): the frame
                // is lost and the target is dialled again on a later write.
                if !matches!(
                    e.kind(),
                    io::ErrorKind::BrokenPipe
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::ConnectionAborted
                ) {
                    eprintln!("raw TCP: dropping the connection to {}: {e}", t.addr);
                }
                t.stream = None;
                t.channel = None;
            }
        }
        self.buf.clear();
        Ok(())
    }

    fn append(&mut self, m: &TestMessage) -> Result<(), PerftestError> {
        if self.buf.is_empty() {
            self.buf.extend_from_slice(&[0; FRAME_HEADER]);
        }
        self.encoder.encode(m, &mut self.buf)?;
        Ok(())
    }
}

impl Writer for RawTcpWriter {
    fn write(&mut self, m: &TestMessage) -> Result<(), PerftestError> {
        match self.batch {
            Some(limit) => {
                if self.payload_len() > 0 && self.payload_len() + encoded_len(m.size) > limit {
                    self.send()?;
                }
                self.append(m)?;
                if self.payload_len() >= limit {
                    self.send()?;
                }
                Ok(())
            }
            None => {
                self.buf.clear();
                self.append(m)?;
                self.send()
            }
        }
    }

    fn flush(&mut self) -> Result<(), PerftestError> {
        self.send()
    }

    fn matched(&self) -> u32 {
        self.conns.len() as u32
    }

    /// TCP delivers what it accepted: done once every target is connected (what the
    /// kernel accepted is delivered unless the connection breaks).
    fn wait_for_acks(&mut self, timeout: Duration) -> Result<bool, PerftestError> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.conns.iter().all(|t| t.stream.is_some()) {
                return Ok(true);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            std::thread::sleep((deadline - now).min(RECONNECT_INTERVAL));
            for t in &mut self.conns {
                t.connect(self.nic, self.send_buffer, self.tls.as_deref())?;
            }
        }
    }
}

/// One accepted connection and its receive buffer (`buf[start..end]` not yet decoded).
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// With TLS: the channel, and the bytes read from the socket before opening.
    tls: Option<(Box<dyn SecureChannel>, Vec<u8>)>,
}

/// What reading a connection gave.
enum ReadOutcome {
    /// Bytes arrived (or nothing yet).
    Data,
    /// The peer closed the connection, or it broke / sent a bad frame.
    Closed,
}

impl Conn {
    fn new(stream: TcpStream, channel: Option<Box<dyn SecureChannel>>) -> Conn {
        let mut c = Conn {
            stream,
            buf: vec![0; READ_CHUNK],
            start: 0,
            end: 0,
            tls: channel.map(|c| (c, vec![0; READ_CHUNK])),
        };
        // Records that arrived with the end of the handshake are already inside the channel:
        // open them now, or a ping among them waits for the next bytes on the socket (which,
        // in a ping-pong, never come).
        if let Err(e) = c.open_tls(0) {
            eprintln!("raw TLS: a record after the handshake: {e}");
        }
        c
    }

    /// Delivers every complete frame buffered; `Err` on a frame above `max_frame`.
    fn deliver(&mut self, max_frame: usize, f: &mut dyn FnMut(&TestMessage)) -> Result<usize, ()> {
        let mut n = 0;
        loop {
            let avail = self.end - self.start;
            if avail < FRAME_HEADER {
                break;
            }
            let mut h = [0u8; FRAME_HEADER];
            h.copy_from_slice(&self.buf[self.start..self.start + FRAME_HEADER]);
            let len = u32::from_le_bytes(h) as usize;
            if len > max_frame {
                return Err(());
            }
            if avail < FRAME_HEADER + len {
                // Make room for the whole frame (grown once per larger size).
                if self.buf.len() < FRAME_HEADER + len {
                    self.buf.resize(FRAME_HEADER + len, 0);
                }
                break;
            }
            let body = &self.buf[self.start + FRAME_HEADER..self.start + FRAME_HEADER + len];
            // A malformed frame is dropped (samples before the bad one were delivered).
            n += decode_datagram(body, f).unwrap_or(0);
            self.start += FRAME_HEADER + len;
        }
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 && self.buf.len() - self.end < READ_CHUNK.min(self.buf.len() / 2) {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        Ok(n)
    }

    /// One read into the free end of the buffer.
    fn read(&mut self) -> ReadOutcome {
        if self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.end == self.buf.len() {
                // Never a zero-length read (it would look like the end of the stream).
                self.buf.resize(self.buf.len() + READ_CHUNK, 0);
            }
        }
        // With TLS the socket's bytes go to `wire` first, else straight into the buffer.
        let dst = match &mut self.tls {
            Some((_, wire)) => &mut wire[..],
            None => &mut self.buf[self.end..],
        };
        let n = match self.stream.read(dst) {
            Ok(0) => return ReadOutcome::Closed,
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                return ReadOutcome::Data
            }
            Err(_) => return ReadOutcome::Closed,
        };
        if self.tls.is_none() {
            self.end += n;
            return ReadOutcome::Data;
        }
        match self.open_tls(n) {
            Ok(()) => ReadOutcome::Data,
            Err(e) => {
                eprintln!("raw TLS: closing a connection: {e}");
                ReadOutcome::Closed
            }
        }
    }

    /// With TLS: opens the first `n` bytes of `wire` (and whatever the channel holds already)
    /// into the buffer after what is there, and sends what the channel must answer.
    fn open_tls(&mut self, n: usize) -> io::Result<()> {
        let Some((channel, wire)) = &mut self.tls else {
            return Ok(());
        };
        // Plaintext goes after what is buffered (the buffer grows as needed).
        let mut plain = std::mem::take(&mut self.buf);
        plain.truncate(self.end);
        let mut reply = Vec::new();
        let r = channel.open(&wire[..n], &mut plain, &mut reply);
        self.end = plain.len();
        let cap = plain.capacity();
        plain.resize(cap, 0);
        self.buf = plain;
        if !reply.is_empty() {
            let _ = self.stream.write_all(&reply);
        }
        r
    }
}

struct RawTcpReader {
    tls: Option<Arc<dyn StreamSecurity>>,
    listener: TcpListener,
    conns: Vec<Conn>,
    /// Connections expected (1 on a subscriber; the subscriber count on the publisher).
    expected: usize,
    max_frame: usize,
    recv_buffer: usize,
    /// The read timeout set on the single connection.
    timeout: Option<Duration>,
}

impl RawTcpReader {
    fn accept(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    let s = Socket::from(stream);
                    set_buffers(&s, self.recv_buffer, 1 << 16);
                    let _ = s.set_tcp_nodelay(true);
                    let _ = s.set_nonblocking(false);
                    let mut stream: TcpStream = s.into();
                    let channel = match (&self.tls, peer) {
                        (None, _) => None,
                        (Some(sec), SocketAddr::V4(p)) => {
                            match handshake(&mut stream, peer, |s| sec.accept(s, p)) {
                                Some(c) => Some(c),
                                None => continue,
                            }
                        }
                        (Some(_), SocketAddr::V6(_)) => continue,
                    };
                    self.conns.push(Conn::new(stream, channel));
                    self.timeout = None;
                }
                Err(_) => return,
            }
        }
    }

    fn deliver_buffered(&mut self, f: &mut dyn FnMut(&TestMessage)) -> usize {
        let mut n = 0;
        let max = self.max_frame;
        self.conns.retain_mut(|c| match c.deliver(max, f) {
            Ok(k) => {
                n += k;
                true
            }
            Err(()) => {
                eprintln!(
                    "raw TCP: closing the connection from {}: a frame is longer than {max} bytes",
                    c.stream
                        .peer_addr()
                        .map_or_else(|_| "?".to_string(), |a| a.to_string())
                );
                false
            }
        });
        n
    }
}

impl Reader for RawTcpReader {
    fn receive(
        &mut self,
        timeout: Duration,
        f: &mut dyn FnMut(&TestMessage),
    ) -> Result<usize, PerftestError> {
        let n = self.deliver_buffered(f);
        if n > 0 {
            return Ok(n);
        }
        if self.conns.len() == 1 && self.expected == 1 {
            // The common case: one connection, read with a blocking timeout (one system
            // call per message, as raw UDP's recv).
            let c = &mut self.conns[0];
            if self.timeout != Some(timeout) {
                let t = timeout.max(Duration::from_micros(1));
                c.stream
                    .set_read_timeout(Some(t))
                    .map_err(PerftestError::io("setting a socket timeout"))?;
                self.timeout = Some(timeout);
            }
            if let ReadOutcome::Closed = c.read() {
                self.conns.clear();
                self.timeout = None;
            }
            return Ok(self.deliver_buffered(f));
        }
        // Several connections, or still accepting: poll the listener and every connection.
        let ready: Vec<bool> = {
            let mut fds = Vec::with_capacity(self.conns.len() + 1);
            fds.push(PollFd::new(self.listener.as_fd(), PollFlags::POLLIN));
            for c in &self.conns {
                fds.push(PollFd::new(c.stream.as_fd(), PollFlags::POLLIN));
            }
            // Round up so a sub-millisecond timeout still waits.
            let ms = timeout.as_micros().div_ceil(1000);
            let t = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
            match poll(&mut fds, t) {
                Ok(_) => fds
                    .iter()
                    .map(|p| p.revents().is_some_and(|r| !r.is_empty()))
                    .collect(),
                Err(nix::errno::Errno::EINTR) => return Ok(0),
                Err(e) => {
                    return Err(PerftestError::Io {
                        context: "polling raw TCP sockets",
                        source: e.into(),
                    })
                }
            }
        };
        let mut closed = Vec::new();
        for (i, c) in self.conns.iter_mut().enumerate() {
            // Ready sockets do not block (data or end of stream).
            if ready[i + 1] {
                if let ReadOutcome::Closed = c.read() {
                    closed.push(i);
                }
            }
        }
        let mut n = self.deliver_buffered(f);
        for i in closed.into_iter().rev() {
            if i < self.conns.len() {
                let mut c = self.conns.remove(i);
                n += c.deliver(self.max_frame, f).unwrap_or(0);
            }
        }
        if ready[0] {
            self.accept();
        }
        Ok(n)
    }

    fn matched(&self) -> u32 {
        1
    }
}
