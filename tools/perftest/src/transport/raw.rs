//! Raw transport (`-rawTransport`): plain UDP sockets without RTPS (spec 6).
//!
//! Ports follow the RTPS well-known unicast formula `7400 + 250×domain + 10 +
//! 2×participant (+1)`: the publisher is participant 0 and receives `Latency` on the
//! first port and `Announcement` on the second (domain 1: 7660/7661); subscriber `sid`
//! is participant `sid + 1` and receives `Throughput` on its first port (domain 1, sid 0:
//! 7662). Writers send from an ephemeral port on the `-nic` address. Batching is done
//! here: samples are appended to one buffer sent when the next would not fit the batch
//! size, or on flush. There is no reliability: lost datagrams are lost.
//!
//! With `-multicast` (or `-multicastAddr`) every topic goes to its group, once per datagram
//! whatever the number of subscribers: Throughput to its group on participant 1's port,
//! where every subscriber listens (RTI: "in multicast all subscribers use participant 1"),
//! Latency and Announcement to theirs on the publisher's two ports. Groups are joined on the
//! `-nic` interface and sent out of it (TTL 1, looped back to this host's listeners).

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::AsFd;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

use crate::error::{OptionError, PerftestError};
use crate::message::{decode_datagram, encoded_len, Encoder, TestMessage};
use crate::options::{
    parse_raw_pub_peer, parse_raw_sub_peer, Options, Role, DEFAULT_MULTICAST_GROUPS, FINISHED_SIZE,
    MAX_RAW_DATA_LEN,
};
use crate::transport::{dds, Capabilities, Reader, Support, TopicKind, Transport, Writer};
use ferrodds_transport::{list_interfaces, InterfaceSelector};

/// What the raw backend can do: no DDS entities or QoS, one sample per datagram, multicast
/// groups per topic, batching in the tool, no DDS Security. The options refused whatever the
/// mode (transports, content filters, ...) are refused with the DDS backend's reasons.
pub const CAPABILITIES: Capabilities = Capabilities {
    dds_entities: Support::No("not available with -rawTransport (no DDS)"),
    xml_qos: Support::No("raw sockets have no QoS (not available with -rawTransport)"),
    security: Support::No("not available with -rawTransport (no DDS)"),
    max_data_len: MAX_RAW_DATA_LEN,
    data_len_mode: "the raw UDP transport (one sample per datagram)",
    multicast: Support::Yes,
    multicast_address: Support::Yes,
    non_blocking_sockets: Support::Yes,
    batching: Support::Yes,
    transports: &["UDPv4"],
    transport_limit: "only UDPv4, TCP, TLS and SHMEM are available with -rawTransport",
    transport_settings: Support::No("not available with -rawTransport"),
    network_capture: Support::No(
        "raw sockets have no participant to capture: record them with tcpdump or dumpcap",
    ),
    ..dds::CAPABILITIES
};

/// `-rawTransport -transport SHMEM` in a perftest built without shared memory: refused.
#[cfg(not(feature = "shared-memory"))]
pub const NO_SHM_CAPABILITIES: Capabilities = Capabilities {
    transport_limit:
        "this perftest was built without the `shared-memory` feature (the micro build has none)",
    ..CAPABILITIES
};

/// Largest UDP payload over IPv4.
pub const MAX_DATAGRAM: usize = 65507;

/// Port of `participant` (+1 for the second port) in `domain`.
pub fn port(domain: u32, participant: u32, second: bool) -> Result<u16, PerftestError> {
    let p = 7400u64 + 250 * u64::from(domain) + 10 + 2 * u64::from(participant) + u64::from(second);
    u16::try_from(p).map_err(|_| {
        PerftestError::NotAvailable("raw transport: domain/subscriber id give a port above 65535")
    })
}

/// The raw transport's `-nic`: an IPv4 address, or an interface name (`eth0`, `lo`) resolved
/// to the interface's first IPv4 address, as the published tutorial's `-raw -nic eth0`.
pub fn resolve_nic(nic: &str) -> Result<Ipv4Addr, OptionError> {
    if let Ok(addr) = nic.parse::<Ipv4Addr>() {
        return Ok(addr);
    }
    let interfaces = list_interfaces();
    InterfaceSelector::Name(nic.to_string())
        .resolve_in(&interfaces)
        .map(|i| i.address)
        .map_err(|_| {
            let mut names: Vec<&str> = interfaces.iter().map(|i| i.name.as_str()).collect();
            names.dedup();
            OptionError::NoSuchInterface {
                nic: nic.to_string(),
                available: names.join(", "),
            }
        })
}

/// Who talks to whom in raw mode (UDP or TCP): this process's role, the `-nic` address, the
/// publisher's targets or the subscriber's publisher, and the RTPS port formula's ports.
#[derive(Debug, Clone)]
pub struct Endpoints {
    role: Role,
    domain: u32,
    sid: u32,
    /// The `-nic` address (127.0.0.1 by default; an interface name resolved to its IPv4
    /// address).
    pub nic: Ipv4Addr,
    /// The `-nic` value as given, for the start-up summary (the address when not given).
    pub nic_label: String,
    /// Publisher: (address, sid) send targets.
    pub pub_targets: Vec<(Ipv4Addr, u32)>,
    /// Subscriber: the publisher address.
    pub sub_peer: Ipv4Addr,
    /// With `-multicast`: the Throughput, Latency and Announcement groups.
    pub groups: Option<[Ipv4Addr; 3]>,
}

impl Endpoints {
    /// From `-nic`, `-peer`, `-numSubscribers`, `-sidMultiSubTest` and `-domain`; every port
    /// is checked here, so a bad domain fails before anything starts.
    pub fn from_options(opts: &Options) -> Result<Self, PerftestError> {
        let nic = match &opts.nic {
            Some(n) => resolve_nic(n)?,
            None => Ipv4Addr::LOCALHOST,
        };
        let nic_label = opts.nic.clone().unwrap_or_else(|| nic.to_string());
        let mut pub_targets = Vec::new();
        let mut sub_peer = Ipv4Addr::LOCALHOST;
        let groups = opts
            .multicast
            .then(|| opts.multicast_groups.unwrap_or(DEFAULT_MULTICAST_GROUPS));
        // With multicast every topic goes to its group (-peer was refused with -multicast).
        if groups.is_none() && opts.role == Role::Publisher {
            if opts.peers.is_empty() {
                pub_targets.extend((0..opts.num_subscribers).map(|s| (Ipv4Addr::LOCALHOST, s)));
            }
            for p in &opts.peers {
                let (addr, ids) = parse_raw_pub_peer(p)?;
                pub_targets.extend(ids.into_iter().map(|s| (addr, s)));
            }
        } else if let Some(p) = opts.peers.first().filter(|_| groups.is_none()) {
            sub_peer = parse_raw_sub_peer(p)?;
        }
        port(opts.domain, 0, true)?;
        port(opts.domain, opts.sid + 1, false)?;
        port(opts.domain, 1, false)?;
        for (_, s) in &pub_targets {
            port(opts.domain, s + 1, false)?;
        }
        Ok(Endpoints {
            role: opts.role,
            domain: opts.domain,
            sid: opts.sid,
            nic,
            nic_label,
            pub_targets,
            sub_peer,
            groups,
        })
    }

    /// The participant whose first port receives Throughput at this subscriber: `sid + 1`,
    /// or 1 for every subscriber with multicast.
    fn throughput_participant(&self, sid: u32) -> u32 {
        if self.groups.is_some() {
            1
        } else {
            sid + 1
        }
    }

    /// The group a reader of `topic` joins, with multicast.
    pub fn reader_group(&self, topic: TopicKind) -> Option<Ipv4Addr> {
        let [throughput, latency, announcement] = self.groups?;
        Some(match topic {
            TopicKind::Throughput => throughput,
            TopicKind::Latency => latency,
            TopicKind::Announcement => announcement,
        })
    }

    /// The role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The ports this process uses, for the start-up summary.
    pub fn ports(&self) -> Vec<u16> {
        let mut v = Vec::new();
        match self.role {
            Role::Publisher => {
                v.extend(port(self.domain, 0, false));
                v.extend(port(self.domain, 0, true));
                if self.groups.is_some() {
                    v.extend(port(self.domain, 1, false));
                }
                for (_, s) in &self.pub_targets {
                    v.extend(port(self.domain, s + 1, false));
                }
            }
            Role::Subscriber => {
                v.extend(port(
                    self.domain,
                    self.throughput_participant(self.sid),
                    false,
                ));
                v.extend(port(self.domain, 0, false));
                v.extend(port(self.domain, 0, true));
            }
        }
        v
    }

    /// Where a writer of `topic` sends.
    pub fn writer_targets(&self, topic: TopicKind) -> Result<Vec<SocketAddr>, PerftestError> {
        if let Some(group) = self.reader_group(topic) {
            let port = match (self.role, topic) {
                (Role::Publisher, TopicKind::Throughput) => port(self.domain, 1, false)?,
                (Role::Subscriber, TopicKind::Latency) => port(self.domain, 0, false)?,
                (Role::Subscriber, TopicKind::Announcement) => port(self.domain, 0, true)?,
                _ => {
                    return Err(PerftestError::NotAvailable(
                        "raw transport: this role does not write that topic",
                    ))
                }
            };
            return Ok(vec![SocketAddr::from((group, port))]);
        }
        match (self.role, topic) {
            (Role::Publisher, TopicKind::Throughput) => self
                .pub_targets
                .iter()
                .map(|(a, s)| port(self.domain, s + 1, false).map(|p| SocketAddr::from((*a, p))))
                .collect(),
            (Role::Subscriber, TopicKind::Latency) => Ok(vec![SocketAddr::from((
                self.sub_peer,
                port(self.domain, 0, false)?,
            ))]),
            (Role::Subscriber, TopicKind::Announcement) => Ok(vec![SocketAddr::from((
                self.sub_peer,
                port(self.domain, 0, true)?,
            ))]),
            _ => Err(PerftestError::NotAvailable(
                "raw transport: this role does not write that topic",
            )),
        }
    }

    /// The port a reader of `topic` binds.
    pub fn reader_port(&self, topic: TopicKind) -> Result<u16, PerftestError> {
        match (self.role, topic) {
            (Role::Publisher, TopicKind::Latency) => port(self.domain, 0, false),
            (Role::Publisher, TopicKind::Announcement) => port(self.domain, 0, true),
            (Role::Subscriber, TopicKind::Throughput) => {
                port(self.domain, self.throughput_participant(self.sid), false)
            }
            _ => Err(PerftestError::NotAvailable(
                "raw transport: this role does not read that topic",
            )),
        }
    }

    /// The "Initial peers" line of the start-up summary.
    pub fn peers_line(&self) -> String {
        if let Some([t, l, a]) = self.groups {
            return format!("Multicast groups: Throughput {t}, Latency {l}, Announcement {a}");
        }
        match self.role {
            Role::Publisher => {
                let peers: Vec<String> = self
                    .pub_targets
                    .iter()
                    .map(|(a, s)| format!("{a}:{s}"))
                    .collect();
                format!("Initial peers: {}", peers.join(", "))
            }
            Role::Subscriber => format!("Initial peers: {}", self.sub_peer),
        }
    }
}

/// The raw UDP backend.
#[derive(Debug)]
pub struct RawTransport {
    ep: Endpoints,
    batch: Option<usize>,
    max_payload: usize,
    recv_buffer: usize,
    send_buffer: usize,
    non_blocking: bool,
}

impl RawTransport {
    /// Builds the backend from the options (`batch` is the decided batch size in bytes).
    pub fn new(opts: &Options, batch: Option<usize>) -> Result<Self, PerftestError> {
        let ep = Endpoints::from_options(opts)?;
        let max_payload = opts.payload_len().max(FINISHED_SIZE + 1);
        if encoded_len(opts.payload_len()) > MAX_DATAGRAM {
            return Err(PerftestError::NotAvailable(
                "raw transport: -dataLen does not fit one UDP datagram",
            ));
        }
        Ok(RawTransport {
            ep,
            batch,
            max_payload,
            recv_buffer: opts.receive_buffer_size.unwrap_or(4 << 20) as usize,
            send_buffer: opts.send_buffer_size.unwrap_or(1 << 20) as usize,
            non_blocking: opts.no_blocking_sockets,
        })
    }

    fn socket(&self, bind_port: u16) -> Result<UdpSocket, PerftestError> {
        let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
            .map_err(PerftestError::io("creating a UDP socket"))?;
        set_buffers(&s, self.recv_buffer, self.send_buffer);
        s.bind(&SocketAddr::V4(SocketAddrV4::new(self.ep.nic, bind_port)).into())
            .map_err(PerftestError::io(
                "binding a UDP socket (is the port in use?)",
            ))?;
        Ok(s.into())
    }

    /// A reader's socket for `group`: bound to the group and port (shared with the other
    /// listeners of this host), joined on the `-nic` interface, and receiving only that
    /// group's datagrams.
    fn group_socket(&self, group: Ipv4Addr, port: u16) -> Result<UdpSocket, PerftestError> {
        let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
            .map_err(PerftestError::io("creating a UDP socket"))?;
        s.set_reuse_address(true)
            .map_err(PerftestError::io("setting SO_REUSEADDR"))?;
        s.set_reuse_port(true)
            .map_err(PerftestError::io("setting SO_REUSEPORT"))?;
        set_buffers(&s, self.recv_buffer, self.send_buffer);
        s.bind(&SocketAddr::V4(SocketAddrV4::new(group, port)).into())
            .map_err(PerftestError::io("binding a multicast socket"))?;
        s.set_multicast_all_v4(false)
            .map_err(PerftestError::io("clearing IP_MULTICAST_ALL"))?;
        s.join_multicast_v4(&group, &self.ep.nic)
            .map_err(PerftestError::io(
                "joining the multicast group on the -nic interface (does it support multicast?)",
            ))?;
        Ok(s.into())
    }
}

/// Sets socket buffer sizes, forcing past `rmem_max`/`wmem_max` when privileged.
pub(super) fn set_buffers(s: &Socket, recv: usize, send: usize) {
    use nix::sys::socket::{setsockopt, sockopt};
    let fd = s.as_fd();
    if setsockopt(&fd, sockopt::RcvBufForce, &recv).is_err() {
        let _ = s.set_recv_buffer_size(recv);
    }
    if setsockopt(&fd, sockopt::SndBufForce, &send).is_err() {
        let _ = s.set_send_buffer_size(send);
    }
}

impl Transport for RawTransport {
    fn create_writer(&mut self, topic: TopicKind) -> Result<Box<dyn Writer>, PerftestError> {
        let targets = self.ep.writer_targets(topic)?;
        let socket = self.socket(0)?;
        if self.ep.groups.is_some() {
            // Out of the -nic interface, to this link only, and to this host's listeners too.
            let s = socket2::SockRef::from(&socket);
            s.set_multicast_if_v4(&self.ep.nic)
                .map_err(PerftestError::io("setting IP_MULTICAST_IF"))?;
            s.set_multicast_ttl_v4(1)
                .map_err(PerftestError::io("setting IP_MULTICAST_TTL"))?;
            s.set_multicast_loop_v4(true)
                .map_err(PerftestError::io("setting IP_MULTICAST_LOOP"))?;
        }
        if self.non_blocking {
            socket
                .set_nonblocking(true)
                .map_err(PerftestError::io("making a socket non-blocking"))?;
        }
        let batch = if topic == TopicKind::Throughput {
            self.batch.map(|b| b.min(MAX_DATAGRAM))
        } else {
            None
        };
        Ok(Box::new(BatchingWriter::new(
            UdpSink { socket, targets },
            self.max_payload,
            batch,
        )))
    }

    fn create_reader(&mut self, topic: TopicKind) -> Result<Box<dyn Reader>, PerftestError> {
        let bind_port = self.ep.reader_port(topic)?;
        let socket = match self.ep.reader_group(topic) {
            Some(group) => self.group_socket(group, bind_port)?,
            None => self.socket(bind_port)?,
        };
        Ok(Box::new(RawReader {
            socket,
            buf: vec![0; 65536],
            timeout: None,
        }))
    }

    fn describe(&self) -> Vec<String> {
        let mut v = vec![
            "Kind: UDPv4 (raw sockets, no RTPS)".to_string(),
            format!("Nic: {}", self.ep.nic_label),
            format!(
                "Use Multicast: {}",
                if self.ep.groups.is_some() {
                    "True"
                } else {
                    "False"
                }
            ),
            format!(
                "Blocking Sockets: {}",
                if self.non_blocking { "No" } else { "Yes" }
            ),
        ];
        let ports: Vec<String> = self.ep.ports().iter().map(u16::to_string).collect();
        v.push(format!(
            "The following ports will be used: {}",
            ports.join(", ")
        ));
        v.push(self.ep.peers_line());
        v
    }

    fn reliable(&self) -> bool {
        false
    }

    fn needs_discovery(&self) -> bool {
        false
    }
}

/// Where a raw writer's datagrams go: sockets here, shared-memory rings in
/// [`super::raw_shm`].
pub(super) trait Sink: Send {
    /// Sends one datagram (one sample, or a batch of them) to every target; a target that
    /// cannot take it (no listener yet, full) loses it, as a datagram is lost.
    fn send(&mut self, datagram: &[u8]) -> Result<(), PerftestError>;
    /// The number of targets.
    fn targets(&self) -> u32;
}

/// A raw writer: samples are encoded into one buffer handed to the sink when the next
/// would not fit the batch size, or on flush; without batching, each sample alone. No
/// reliability.
pub(super) struct BatchingWriter<S> {
    sink: S,
    encoder: Encoder,
    buf: Vec<u8>,
    batch: Option<usize>,
}

impl<S: Sink> BatchingWriter<S> {
    /// A writer of samples up to `max_payload` bytes, batching up to `batch` bytes.
    pub(super) fn new(sink: S, max_payload: usize, batch: Option<usize>) -> Self {
        let cap = batch.unwrap_or(0).max(encoded_len(max_payload));
        Self {
            sink,
            encoder: Encoder::new(max_payload),
            buf: Vec::with_capacity(cap + encoded_len(max_payload)),
            batch,
        }
    }

    fn send(&mut self) -> Result<(), PerftestError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let sent = self.sink.send(&self.buf);
        self.buf.clear();
        sent
    }
}

impl<S: Sink> Writer for BatchingWriter<S> {
    fn write(&mut self, m: &TestMessage) -> Result<(), PerftestError> {
        match self.batch {
            Some(limit) => {
                if !self.buf.is_empty() && self.buf.len() + encoded_len(m.size) > limit {
                    self.send()?;
                }
                self.encoder.encode(m, &mut self.buf)?;
                if self.buf.len() >= limit {
                    self.send()?;
                }
                Ok(())
            }
            None => {
                self.buf.clear();
                self.encoder.encode(m, &mut self.buf)?;
                self.send()
            }
        }
    }

    fn flush(&mut self) -> Result<(), PerftestError> {
        self.send()
    }

    fn matched(&self) -> u32 {
        self.sink.targets()
    }

    fn wait_for_acks(&mut self, timeout: Duration) -> Result<bool, PerftestError> {
        std::thread::sleep(timeout);
        Ok(false)
    }
}

/// UDP sockets: one send per target.
struct UdpSink {
    socket: UdpSocket,
    targets: Vec<SocketAddr>,
}

impl Sink for UdpSink {
    fn send(&mut self, datagram: &[u8]) -> Result<(), PerftestError> {
        for t in &self.targets {
            match self.socket.send_to(datagram, t) {
                Ok(_) => {}
                // No listener yet (ICMP port unreachable) or a full non-blocking socket:
                // the datagram is lost, as with any UDP send.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionRefused | io::ErrorKind::WouldBlock
                    ) => {}
                Err(e) => {
                    return Err(PerftestError::Io {
                        context: "sending a raw datagram",
                        source: e,
                    })
                }
            }
        }
        Ok(())
    }

    fn targets(&self) -> u32 {
        self.targets.len() as u32
    }
}

struct RawReader {
    socket: UdpSocket,
    buf: Vec<u8>,
    timeout: Option<Duration>,
}

impl Reader for RawReader {
    fn receive(
        &mut self,
        timeout: Duration,
        f: &mut dyn FnMut(&TestMessage),
    ) -> Result<usize, PerftestError> {
        if self.timeout != Some(timeout) {
            let t = if timeout.is_zero() {
                Duration::from_micros(1)
            } else {
                timeout
            };
            self.socket
                .set_read_timeout(Some(t))
                .map_err(PerftestError::io("setting a socket timeout"))?;
            self.timeout = Some(timeout);
        }
        match self.socket.recv(&mut self.buf) {
            Ok(n) => {
                // A malformed datagram is dropped (samples before the bad one were
                // delivered); it never stops the reader.
                Ok(decode_datagram(&self.buf[..n], f).unwrap_or(0))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                        | io::ErrorKind::ConnectionRefused
                ) =>
            {
                Ok(0)
            }
            Err(e) => Err(PerftestError::Io {
                context: "receiving a raw datagram",
                source: e,
            }),
        }
    }

    fn matched(&self) -> u32 {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_formula() {
        assert_eq!(port(1, 0, false).unwrap(), 7660);
        assert_eq!(port(1, 0, true).unwrap(), 7661);
        assert_eq!(port(1, 1, false).unwrap(), 7662);
        assert_eq!(port(0, 2, false).unwrap(), 7414);
        assert!(port(250, 0, false).is_err());
    }

    /// With -multicast every topic goes to its group: Throughput on participant 1's port
    /// for every subscriber, Latency and Announcement on the publisher's ports.
    #[test]
    fn multicast_endpoints() {
        let ep = |args: &str| {
            let args: Vec<&str> = args.split_whitespace().collect();
            Endpoints::from_options(&Options::parse(&args).unwrap()).unwrap()
        };
        let sub = ep("-sub -raw -multicast -sidMultiSubTest 3 -domain 1");
        assert_eq!(sub.reader_port(TopicKind::Throughput).unwrap(), 7662);
        assert_eq!(
            sub.reader_group(TopicKind::Throughput),
            Some(Ipv4Addr::new(239, 255, 1, 1))
        );
        assert_eq!(
            sub.writer_targets(TopicKind::Latency).unwrap(),
            vec!["239.255.1.2:7660".parse::<SocketAddr>().unwrap()]
        );
        assert_eq!(
            sub.writer_targets(TopicKind::Announcement).unwrap(),
            vec!["239.255.1.100:7661".parse::<SocketAddr>().unwrap()]
        );
        assert_eq!(sub.ports(), vec![7662, 7660, 7661]);
        let publ = ep("-pub -raw -multicastAddr 239.1.2.3 -numSubscribers 4 -domain 1");
        assert_eq!(
            publ.writer_targets(TopicKind::Throughput).unwrap(),
            vec!["239.1.2.3:7662".parse::<SocketAddr>().unwrap()]
        );
        assert_eq!(
            publ.reader_group(TopicKind::Latency),
            Some(Ipv4Addr::new(239, 1, 2, 4))
        );
        assert_eq!(publ.reader_port(TopicKind::Announcement).unwrap(), 7661);
        assert_eq!(publ.ports(), vec![7660, 7661, 7662]);
        assert_eq!(
            publ.peers_line(),
            "Multicast groups: Throughput 239.1.2.3, Latency 239.1.2.4, Announcement 239.1.2.5"
        );
        // Unicast as before: no groups, subscriber 3 on participant 4's port.
        let sub = ep("-sub -raw -sidMultiSubTest 3 -domain 1");
        assert_eq!(sub.reader_group(TopicKind::Throughput), None);
        assert_eq!(sub.reader_port(TopicKind::Throughput).unwrap(), 7668);
    }

    #[test]
    fn loopback_batching_round_trip() {
        // Domain 200 keeps this away from the e2e tests' ports.
        let opts = Options::parse(&["-pub", "-raw", "-domain", "200", "-dataLen", "64"]).unwrap();
        let mut pubt = RawTransport::new(&opts, Some(300)).unwrap();
        let sopts = Options::parse(&["-sub", "-raw", "-domain", "200", "-dataLen", "64"]).unwrap();
        let mut subt = RawTransport::new(&sopts, None).unwrap();
        let mut reader = subt.create_reader(TopicKind::Throughput).unwrap();
        let mut writer = pubt.create_writer(TopicKind::Throughput).unwrap();
        assert_eq!(writer.matched(), 1);
        let mut m = TestMessage {
            size: 36,
            latency_ping: -1,
            ..TestMessage::default()
        };
        for seq in 0..10 {
            m.seq_num = seq;
            writer.write(&m).unwrap();
        }
        writer.flush().unwrap();
        let mut got = Vec::new();
        let mut datagrams = 0;
        while got.len() < 10 {
            let n = reader
                .receive(Duration::from_secs(2), &mut |m| got.push(m.seq_num))
                .unwrap();
            assert!(n > 0, "timed out after {} samples", got.len());
            datagrams += 1;
        }
        assert_eq!(got, (0..10).collect::<Vec<_>>());
        // 68-byte samples, 300-byte batches: 4 per datagram → 3 datagrams.
        assert_eq!(datagrams, 3);
    }
}
