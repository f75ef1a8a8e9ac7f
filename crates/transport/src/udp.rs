//! The UDPv4 transport: socket set-up, scatter-gather send and blocking receive handles.

use std::io::{self, IoSlice};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::connected::{ConnectedSockets, DEFAULT_CONNECTED_SEND_SOCKETS};
use crate::error::TransportError;
use crate::interface::{InterfaceSelector, NetworkInterface};
use crate::locator::UdpLocator;
use crate::port::{ParticipantPorts, PortMapping, MAX_PARTICIPANT_ID};

/// Largest UDP payload over IPv4 (65535 - 20 byte IP header - 8 byte UDP header).
pub const MAX_UDP_PAYLOAD: usize = 65_507;

/// The RTPS default IPv4 multicast group, 239.255.0.1.
pub const DEFAULT_MULTICAST_GROUP: Ipv4Addr = Ipv4Addr::new(239, 255, 0, 1);

/// Longest time a blocked [`UdpReceiver::recv`] takes to notice [`UdpTransport::shutdown`]
/// (the receive sockets' read timeout; it costs nothing per datagram).
pub const SHUTDOWN_POLL: Duration = Duration::from_millis(100);

/// Configuration of a [`UdpTransport`].
///
/// Build it with [`UdpConfig::new`] (or [`Default`], domain 0) and adjust the public fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpConfig {
    /// DDS domain id. Default 0.
    pub domain_id: u32,
    /// Participant id; `None` (the default) probes 0..=119 and takes the first id whose SPDP
    /// unicast and user unicast ports both bind.
    pub participant_id: Option<u32>,
    /// Interface used for multicast and announced in the unicast locators. Default
    /// [`InterfaceSelector::Default`].
    pub interface: InterfaceSelector,
    /// Whether to create the multicast sockets and announce multicast locators. Default true.
    pub multicast_enabled: bool,
    /// Multicast group for SPDP and user data. Default 239.255.0.1.
    pub multicast_group: Ipv4Addr,
    /// More user-data multicast groups to receive on (each on the user-data multicast port,
    /// with its own socket and thread), for readers that announce a group of their own
    /// (RTI's per-reader multicast). Not announced as the participant's locators; only with
    /// `multicast_enabled`. Default: none.
    pub user_multicast_groups: Vec<Ipv4Addr>,
    /// Requested `SO_RCVBUF` of every receive socket, in bytes; `None` (default) keeps the
    /// system default. The kernel may clamp (and Linux doubles) it: see
    /// [`UdpTransport::buffer_sizes`].
    pub recv_buffer_bytes: Option<usize>,
    /// Requested `SO_SNDBUF` of the send socket, in bytes; `None` (default) keeps the system
    /// default.
    pub send_buffer_bytes: Option<usize>,
    /// `IP_MULTICAST_TTL` of sent multicast datagrams. Default 1 (stay on the local subnet).
    pub multicast_ttl: u32,
    /// `IP_MULTICAST_LOOP`: deliver our own multicast to sockets on this host. Default true
    /// (other participants on the same host must see our SPDP announcements).
    pub multicast_loop: bool,
    /// The RTPS port formula parameters. Default: the specification's values.
    pub port_mapping: PortMapping,
    /// Largest datagram payload `send` accepts, in bytes, 1..=65507. Default 65507.
    pub max_message_size: usize,
    /// How many unicast destinations get their own connected send socket (created on the
    /// first send to them, least recently used replaced; see the [crate documentation](crate)).
    /// 0 sends everything on the one unconnected socket. Default 32, at most 1024 (larger
    /// values are clamped). Linux only: elsewhere the value is ignored and treated as 0.
    pub connected_send_sockets: usize,
    /// UDPv4_WAN mode: one fixed port for everything and a public address announced (see
    /// [`WanConfig`]). Default `None` (the RTPS port formula, two unicast ports).
    pub wan: Option<WanConfig>,
}

/// UDPv4_WAN: the participant receives every datagram on one fixed port and sends from it
/// too, and announces a public address (a NAT's forwarded address and port) as all its unicast
/// locators (kind UDPv4), so a peer outside the NAT reaches it both ways. No multicast. The
/// periodic SPDP announcements to the peers (every `spdp_period`, 3 s by default) keep a NAT's
/// mapping open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WanConfig {
    /// The local port (default [`DEFAULT_WAN_PORT`]).
    pub host_port: u16,
    /// Where peers reach this participant; `None`: the interface address and `host_port`.
    pub public_address: Option<SocketAddrV4>,
}

/// The UDPv4_WAN host port RTI's examples use.
pub const DEFAULT_WAN_PORT: u16 = 7400;

impl Default for UdpConfig {
    fn default() -> Self {
        Self::new(0)
    }
}

impl UdpConfig {
    /// The default configuration for `domain_id`.
    pub fn new(domain_id: u32) -> Self {
        Self {
            domain_id,
            participant_id: None,
            interface: InterfaceSelector::Default,
            multicast_enabled: true,
            multicast_group: DEFAULT_MULTICAST_GROUP,
            user_multicast_groups: Vec::new(),
            recv_buffer_bytes: None,
            send_buffer_bytes: None,
            multicast_ttl: 1,
            multicast_loop: true,
            port_mapping: PortMapping::RTPS_DEFAULT,
            max_message_size: MAX_UDP_PAYLOAD,
            connected_send_sockets: DEFAULT_CONNECTED_SEND_SOCKETS,
            wan: None,
        }
    }
}

/// Which traffic a socket carries, from the port it is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrafficKind {
    /// Discovery traffic (SPDP/SEDP and other builtin endpoints): the SPDP ports.
    Metatraffic,
    /// User data: the user ports.
    UserData,
}

/// Metadata of one received datagram; the bytes are `buf[..len]` of the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Received {
    /// Number of bytes written to the start of the buffer.
    pub len: usize,
    /// Source address of the datagram.
    pub src: SocketAddrV4,
    /// Traffic kind of the socket it arrived on.
    pub kind: TrafficKind,
    /// Whether it arrived on a multicast socket.
    pub multicast: bool,
    /// Local port of the socket it arrived on.
    pub local_port: u16,
    /// The locator it was sent to, as this transport announces it: the group and port for a
    /// multicast socket, the interface address and port for a unicast socket (the actual
    /// destination address is not read from the packet).
    pub dst: SocketAddrV4,
}

/// Kernel-granted socket buffer sizes, in bytes (Linux reports twice the requested value,
/// clamped to `net.core.[rw]mem_max`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferSizes {
    /// `SO_SNDBUF` of the send socket.
    pub send: usize,
    /// `SO_RCVBUF` of the metatraffic unicast socket (all receive sockets get the same
    /// request).
    pub recv: usize,
}

#[derive(Debug)]
struct RecvSocket {
    socket: Arc<UdpSocket>,
    kind: TrafficKind,
    multicast: bool,
    dst: SocketAddrV4,
}

/// A UDPv4 RTPS transport for one participant.
///
/// See the [crate documentation](crate) for the threading and shutdown contract.
#[derive(Debug)]
pub struct UdpTransport {
    domain_id: u32,
    participant_id: u32,
    ports: ParticipantPorts,
    interface: NetworkInterface,
    send_socket: Socket,
    /// Connected sockets for unicast destinations; `send_socket` serves the others.
    connected: ConnectedSockets,
    recv_sockets: Vec<RecvSocket>,
    shutdown: Arc<AtomicBool>,
    max_message_size: usize,
    buffer_sizes: BufferSizes,
    source_port: u16,
    metatraffic_unicast: [UdpLocator; 1],
    default_unicast: [UdpLocator; 1],
    metatraffic_multicast: Vec<UdpLocator>,
    default_multicast: Vec<UdpLocator>,
}

fn udp_socket(op: &'static str) -> Result<Socket, TransportError> {
    Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).map_err(TransportError::socket(op))
}

fn set_recv_buffer(socket: &Socket, bytes: Option<usize>) -> Result<(), TransportError> {
    match bytes {
        Some(n) => socket
            .set_recv_buffer_size(n)
            .map_err(TransportError::socket("set SO_RCVBUF")),
        None => Ok(()),
    }
}

/// Binds an exclusive unicast socket on `0.0.0.0:port` (no `SO_REUSEADDR`, so a port held by
/// another participant fails with `AddrInUse`).
fn bind_unicast(port: u16, recv_buffer: Option<usize>) -> Result<Socket, BindFailure> {
    let socket = udp_socket("create unicast socket").map_err(BindFailure::Fatal)?;
    set_recv_buffer(&socket, recv_buffer).map_err(BindFailure::Fatal)?;
    let addr = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port);
    match socket.bind(&SockAddr::from(addr)) {
        Ok(()) => Ok(socket),
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => Err(BindFailure::InUse(port, e)),
        Err(e) => Err(BindFailure::Fatal(TransportError::Socket {
            op: "bind unicast socket",
            source: e,
        })),
    }
}

enum BindFailure {
    InUse(u16, io::Error),
    Fatal(TransportError),
}

/// Creates a shared multicast receive socket for `group:port`, joined on `iface`.
fn bind_multicast(
    group: Ipv4Addr,
    port: u16,
    iface: Ipv4Addr,
    recv_buffer: Option<usize>,
) -> Result<Socket, TransportError> {
    let socket = udp_socket("create multicast socket")?;
    socket
        .set_reuse_address(true)
        .map_err(TransportError::socket("set SO_REUSEADDR"))?;
    #[cfg(all(unix, not(any(target_os = "solaris", target_os = "illumos"))))]
    socket
        .set_reuse_port(true)
        .map_err(TransportError::socket("set SO_REUSEPORT"))?;
    set_recv_buffer(&socket, recv_buffer)?;
    // Binding to the group address (where the OS allows it) keeps unicast datagrams to the same
    // port and other groups' traffic off this socket.
    #[cfg(unix)]
    let bind_ip = group;
    #[cfg(not(unix))]
    let bind_ip = Ipv4Addr::UNSPECIFIED;
    socket
        .bind(&SockAddr::from(SocketAddrV4::new(bind_ip, port)))
        .map_err(TransportError::socket("bind multicast socket"))?;
    #[cfg(target_os = "linux")]
    socket
        .set_multicast_all_v4(false)
        .map_err(TransportError::socket("clear IP_MULTICAST_ALL"))?;
    socket
        .join_multicast_v4(&group, &iface)
        .map_err(TransportError::socket("join multicast group"))?;
    Ok(socket)
}

fn check_multicast(iface: &NetworkInterface, enabled: bool) -> Result<(), TransportError> {
    if enabled && !iface.multicast {
        return Err(TransportError::MulticastUnsupported {
            interface: iface.name.clone(),
        });
    }
    Ok(())
}

fn into_recv_socket(
    socket: Socket,
    kind: TrafficKind,
    multicast: bool,
    dst: SocketAddrV4,
) -> Result<RecvSocket, TransportError> {
    let socket: UdpSocket = socket.into();
    // The receive loop re-checks the shutdown flag at least this often while idle. (Waking a
    // blocked reader with shutdown(SHUT_RD) is not usable: std's `recv_from` may then panic on
    // the empty source address the kernel returns.)
    socket
        .set_read_timeout(Some(SHUTDOWN_POLL))
        .map_err(TransportError::socket("set SO_RCVTIMEO"))?;
    Ok(RecvSocket {
        socket: Arc::new(socket),
        kind,
        multicast,
        dst,
    })
}

impl UdpTransport {
    /// Creates the sockets described by `config`.
    ///
    /// Errors: the interface does not exist ([`TransportError::InterfaceNotFound`],
    /// [`TransportError::AddressNotFound`]), a port is out of range
    /// ([`TransportError::Port`]), the requested participant id is taken
    /// ([`TransportError::ParticipantIdInUse`]) or all are
    /// ([`TransportError::NoFreeParticipantId`]), or a socket option failed.
    pub fn new(config: &UdpConfig) -> Result<Self, TransportError> {
        if config.max_message_size == 0 || config.max_message_size > MAX_UDP_PAYLOAD {
            return Err(TransportError::InvalidMaxMessageSize(
                config.max_message_size,
            ));
        }
        if config.multicast_enabled && !config.multicast_group.is_multicast() {
            return Err(TransportError::NotMulticast(config.multicast_group));
        }
        if let Some(pid) = config.participant_id {
            if pid > MAX_PARTICIPANT_ID {
                return Err(TransportError::ParticipantIdOutOfRange(pid));
            }
        }
        let interface = config.interface.resolve()?;
        if let Some(wan) = config.wan {
            return Self::new_wan(config, wan, interface);
        }
        check_multicast(&interface, config.multicast_enabled)?;
        let mapping = &config.port_mapping;
        let domain_id = config.domain_id;
        // Validate the multicast ports before probing.
        mapping.spdp_multicast_port(domain_id)?;
        mapping.user_multicast_port(domain_id)?;

        let (participant_id, ports, meta_uc, user_uc) = match config.participant_id {
            Some(pid) => {
                let ports = mapping.ports(domain_id, pid)?;
                match Self::bind_pair(&ports, config.recv_buffer_bytes) {
                    Ok((m, u)) => (pid, ports, m, u),
                    Err(BindFailure::InUse(port, source)) => {
                        return Err(TransportError::ParticipantIdInUse {
                            participant_id: pid,
                            port,
                            source,
                        })
                    }
                    Err(BindFailure::Fatal(e)) => return Err(e),
                }
            }
            None => {
                let mut found = None;
                for pid in 0..=MAX_PARTICIPANT_ID {
                    let ports = mapping.ports(domain_id, pid)?;
                    match Self::bind_pair(&ports, config.recv_buffer_bytes) {
                        Ok((m, u)) => {
                            found = Some((pid, ports, m, u));
                            break;
                        }
                        Err(BindFailure::InUse(..)) => continue,
                        Err(BindFailure::Fatal(e)) => return Err(e),
                    }
                }
                found.ok_or(TransportError::NoFreeParticipantId { domain_id })?
            }
        };

        let send_socket = udp_socket("create send socket")?;
        if let Some(n) = config.send_buffer_bytes {
            send_socket
                .set_send_buffer_size(n)
                .map_err(TransportError::socket("set SO_SNDBUF"))?;
        }
        if config.multicast_enabled {
            send_socket
                .set_multicast_if_v4(&interface.address)
                .map_err(TransportError::socket("set IP_MULTICAST_IF"))?;
            send_socket
                .set_multicast_ttl_v4(config.multicast_ttl)
                .map_err(TransportError::socket("set IP_MULTICAST_TTL"))?;
            send_socket
                .set_multicast_loop_v4(config.multicast_loop)
                .map_err(TransportError::socket("set IP_MULTICAST_LOOP"))?;
        }
        send_socket
            .bind(&SockAddr::from(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)))
            .map_err(TransportError::socket("bind send socket"))?;

        let buffer_sizes = BufferSizes {
            send: send_socket
                .send_buffer_size()
                .map_err(TransportError::socket("get SO_SNDBUF"))?,
            recv: meta_uc
                .recv_buffer_size()
                .map_err(TransportError::socket("get SO_RCVBUF"))?,
        };

        let source_port = send_socket
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket_ipv4())
            .map_or(0, |a| a.port());

        // The connected sockets bind to the same port (so every datagram keeps one source
        // port), which needs SO_REUSEADDR on all of them. Setting it only after the bind above
        // keeps the ephemeral port choice exclusive: no other socket already holds the port.
        let connected_send_sockets = if cfg!(target_os = "linux") && source_port != 0 {
            config.connected_send_sockets
        } else {
            0
        };
        if connected_send_sockets > 0 {
            send_socket
                .set_reuse_address(true)
                .map_err(TransportError::socket("set SO_REUSEADDR on send socket"))?;
        }
        let connected = ConnectedSockets::new(
            connected_send_sockets,
            source_port,
            config.send_buffer_bytes,
        );

        let mut recv_sockets = vec![
            into_recv_socket(
                meta_uc,
                TrafficKind::Metatraffic,
                false,
                SocketAddrV4::new(interface.address, ports.spdp_unicast),
            )?,
            into_recv_socket(
                user_uc,
                TrafficKind::UserData,
                false,
                SocketAddrV4::new(interface.address, ports.user_unicast),
            )?,
        ];
        let group = config.multicast_group;
        let (metatraffic_multicast, default_multicast) = if config.multicast_enabled {
            let meta_mc = bind_multicast(
                group,
                ports.spdp_multicast,
                interface.address,
                config.recv_buffer_bytes,
            )?;
            let user_mc = bind_multicast(
                group,
                ports.user_multicast,
                interface.address,
                config.recv_buffer_bytes,
            )?;
            recv_sockets.push(into_recv_socket(
                meta_mc,
                TrafficKind::Metatraffic,
                true,
                SocketAddrV4::new(group, ports.spdp_multicast),
            )?);
            recv_sockets.push(into_recv_socket(
                user_mc,
                TrafficKind::UserData,
                true,
                SocketAddrV4::new(group, ports.user_multicast),
            )?);
            for g in &config.user_multicast_groups {
                if *g == group || !g.is_multicast() {
                    continue;
                }
                let s = bind_multicast(
                    *g,
                    ports.user_multicast,
                    interface.address,
                    config.recv_buffer_bytes,
                )?;
                recv_sockets.push(into_recv_socket(
                    s,
                    TrafficKind::UserData,
                    true,
                    SocketAddrV4::new(*g, ports.user_multicast),
                )?);
            }
            (
                vec![UdpLocator::new(group, ports.spdp_multicast)],
                vec![UdpLocator::new(group, ports.user_multicast)],
            )
        } else {
            (Vec::new(), Vec::new())
        };

        Ok(Self {
            domain_id,
            participant_id,
            ports,
            metatraffic_unicast: [UdpLocator::new(interface.address, ports.spdp_unicast)],
            default_unicast: [UdpLocator::new(interface.address, ports.user_unicast)],
            interface,
            send_socket,
            connected,
            recv_sockets,
            shutdown: Arc::new(AtomicBool::new(false)),
            max_message_size: config.max_message_size,
            buffer_sizes,
            source_port,
            metatraffic_multicast,
            default_multicast,
        })
    }

    /// UDPv4_WAN: one socket on `wan.host_port` receives everything and sends everything.
    fn new_wan(
        config: &UdpConfig,
        wan: WanConfig,
        interface: NetworkInterface,
    ) -> Result<Self, TransportError> {
        let participant_id = config.participant_id.unwrap_or(0);
        let ports = config
            .port_mapping
            .ports(config.domain_id, participant_id)?;
        let socket = match bind_unicast(wan.host_port, config.recv_buffer_bytes) {
            Ok(s) => s,
            Err(BindFailure::InUse(port, source)) => {
                return Err(TransportError::WanPortInUse { port, source })
            }
            Err(BindFailure::Fatal(e)) => return Err(e),
        };
        if let Some(n) = config.send_buffer_bytes {
            socket
                .set_send_buffer_size(n)
                .map_err(TransportError::socket("set SO_SNDBUF"))?;
        }
        let send_socket = socket
            .try_clone()
            .map_err(TransportError::socket("clone the WAN socket"))?;
        let buffer_sizes = BufferSizes {
            send: socket
                .send_buffer_size()
                .map_err(TransportError::socket("get SO_SNDBUF"))?,
            recv: socket
                .recv_buffer_size()
                .map_err(TransportError::socket("get SO_RCVBUF"))?,
        };
        let local = SocketAddrV4::new(interface.address, wan.host_port);
        let public = wan.public_address.unwrap_or(local);
        let recv_sockets = vec![into_recv_socket(
            socket,
            TrafficKind::Metatraffic,
            false,
            public,
        )?];
        Ok(Self {
            domain_id: config.domain_id,
            participant_id,
            ports,
            metatraffic_unicast: [UdpLocator::new(*public.ip(), public.port())],
            default_unicast: [UdpLocator::new(*public.ip(), public.port())],
            interface,
            send_socket,
            connected: ConnectedSockets::new(0, wan.host_port, config.send_buffer_bytes),
            recv_sockets,
            shutdown: Arc::new(AtomicBool::new(false)),
            max_message_size: config.max_message_size,
            buffer_sizes,
            source_port: wan.host_port,
            metatraffic_multicast: Vec::new(),
            default_multicast: Vec::new(),
        })
    }

    fn bind_pair(
        ports: &ParticipantPorts,
        recv_buffer: Option<usize>,
    ) -> Result<(Socket, Socket), BindFailure> {
        let meta = bind_unicast(ports.spdp_unicast, recv_buffer)?;
        let user = bind_unicast(ports.user_unicast, recv_buffer)?;
        Ok((meta, user))
    }

    /// The domain id.
    pub fn domain_id(&self) -> u32 {
        self.domain_id
    }

    /// The participant id (requested or found by probing).
    pub fn participant_id(&self) -> u32 {
        self.participant_id
    }

    /// The four ports of this participant.
    pub fn ports(&self) -> ParticipantPorts {
        self.ports
    }

    /// The selected interface.
    pub fn interface(&self) -> &NetworkInterface {
        &self.interface
    }

    /// Granted socket buffer sizes.
    pub fn buffer_sizes(&self) -> BufferSizes {
        self.buffer_sizes
    }

    /// UDP source port of every datagram [`send`](Self::send) emits (an ephemeral port of the
    /// send socket; the source address is chosen by routing).
    pub fn source_port(&self) -> u16 {
        self.source_port
    }

    /// Largest payload [`send`](Self::send) accepts (65507 unless configured lower).
    pub fn max_message_size(&self) -> usize {
        self.max_message_size
    }

    /// Metatraffic unicast locators to announce in SPDP: interface address + SPDP unicast port.
    pub fn metatraffic_unicast_locators(&self) -> &[UdpLocator] {
        &self.metatraffic_unicast
    }

    /// Default (user-data) unicast locators to announce: interface address + user unicast port.
    pub fn default_unicast_locators(&self) -> &[UdpLocator] {
        &self.default_unicast
    }

    /// Metatraffic multicast locators (group + SPDP multicast port); empty when multicast is
    /// disabled. SPDP announcements are sent here.
    pub fn metatraffic_multicast_locators(&self) -> &[UdpLocator] {
        &self.metatraffic_multicast
    }

    /// Default (user-data) multicast locators (group + user multicast port); empty when
    /// multicast is disabled.
    pub fn default_multicast_locators(&self) -> &[UdpLocator] {
        &self.default_multicast
    }

    /// Sends one datagram made of the concatenation of `bufs` to `dst`, without copying.
    ///
    /// Thread-safe (`&self`), allocation-free. Returns the number of bytes sent. Fails with
    /// [`io::ErrorKind::InvalidInput`] when the total exceeds
    /// [`max_message_size`](Self::max_message_size) and with [`io::ErrorKind::NotConnected`]
    /// after [`shutdown`](Self::shutdown).
    ///
    /// A unicast `dst` is sent on a socket connected to it (created by the first send to it,
    /// see [`UdpConfig::connected_send_sockets`]); multicast and anything else on the
    /// unconnected send socket. Either way the datagram leaves from
    /// [`source_port`](Self::source_port), and ICMP errors provoked by earlier datagrams are
    /// not reported (as with an unconnected socket).
    pub fn send(&self, dst: SocketAddrV4, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if total > self.max_message_size {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        if self.shutdown.load(Ordering::Relaxed) {
            return Err(io::ErrorKind::NotConnected.into());
        }
        if let Some(result) = self.connected.send(dst, bufs) {
            return result;
        }
        self.send_socket
            .send_to_vectored(bufs, &SockAddr::from(dst))
    }

    /// Sends one contiguous datagram; see [`send`](Self::send).
    pub fn send_to(&self, dst: SocketAddrV4, buf: &[u8]) -> io::Result<usize> {
        self.send(dst, &[IoSlice::new(buf)])
    }

    /// Receive handles, one per socket: metatraffic unicast, user unicast, then (with
    /// multicast) metatraffic multicast and user multicast.
    ///
    /// Each handle is meant to be owned by one receive thread. Calling this again returns new
    /// handles on the same sockets; a datagram is then delivered to only one of them.
    pub fn receivers(&self) -> Vec<UdpReceiver> {
        self.recv_sockets
            .iter()
            .map(|s| UdpReceiver {
                socket: Arc::clone(&s.socket),
                kind: s.kind,
                multicast: s.multicast,
                dst: s.dst,
                shutdown: Arc::clone(&self.shutdown),
            })
            .collect()
    }

    /// Stops the transport: every blocked [`UdpReceiver::recv`] returns `Ok(None)` within
    /// [`SHUTDOWN_POLL`] (later calls at once), and [`send`](Self::send) fails. Idempotent;
    /// also done on drop. Datagrams still queued are not delivered.
    pub fn shutdown(&self) {
        self.shutdown.store(true, Ordering::Release);
    }

    /// Whether [`shutdown`](Self::shutdown) has been called.
    pub fn is_shut_down(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }
}

impl Drop for UdpTransport {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A blocking receive handle on one socket of a [`UdpTransport`]; owned by one thread.
#[derive(Debug)]
pub struct UdpReceiver {
    socket: Arc<UdpSocket>,
    kind: TrafficKind,
    multicast: bool,
    dst: SocketAddrV4,
    shutdown: Arc<AtomicBool>,
}

impl UdpReceiver {
    /// Traffic kind of this socket.
    pub fn kind(&self) -> TrafficKind {
        self.kind
    }

    /// Whether this is a multicast socket.
    pub fn is_multicast(&self) -> bool {
        self.multicast
    }

    /// Local port of this socket.
    pub fn local_port(&self) -> u16 {
        self.dst.port()
    }

    /// The locator this socket receives on, as announced (see [`Received::dst`]).
    pub fn local_locator(&self) -> UdpLocator {
        UdpLocator(self.dst)
    }

    /// Blocks until a datagram arrives (written to the start of `buf`) or the transport is
    /// shut down (`Ok(None)`, within [`SHUTDOWN_POLL`]).
    ///
    /// Does not allocate. A datagram longer than `buf` is truncated to `buf.len()`, so pass a
    /// buffer of [`MAX_UDP_PAYLOAD`] bytes (or the peer's maximum message size). Datagrams
    /// with a non-IPv4 source are skipped.
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        loop {
            if self.shutdown.load(Ordering::Acquire) {
                return Ok(None);
            }
            match self.socket.recv_from(buf) {
                Ok((len, SocketAddr::V4(src))) => {
                    return Ok(Some(Received {
                        len,
                        src,
                        kind: self.kind,
                        multicast: self.multicast,
                        local_port: self.dst.port(),
                        dst: self.dst,
                    }));
                }
                Ok((_, SocketAddr::V6(_))) => continue,
                Err(e) => {
                    if let Some(result) = self.recv_failed(e) {
                        return result;
                    }
                }
            }
        }
    }

    /// What [`recv`](Self::recv) does after a failed receive: `None` to receive again (the
    /// read timeout, or a signal), else its result. Out of line: keeps the datagram path
    /// short.
    #[cold]
    #[inline(never)]
    fn recv_failed(&self, e: io::Error) -> Option<io::Result<Option<Received>>> {
        if matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
        ) {
            return None;
        }
        if self.shutdown.load(Ordering::Acquire) {
            return Some(Ok(None));
        }
        Some(Err(e))
    }
}

/// The inode of socket `fd` of this process (`socket:[N]` in `/proc/self/fd`).
fn socket_inode(fd: i32) -> Option<u64> {
    let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
    let link = link.to_str()?;
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// Sums the `drops` column of the lines of `table` (the format of `/proc/net/udp`) whose
/// inode is in `inodes`.
fn drops_of(table: &str, inodes: &[u64]) -> u64 {
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // sl local rem st tx:rx tr:tm retrnsmt uid timeout inode ref pointer drops
            let inode: u64 = f.get(9)?.parse().ok()?;
            let drops: u64 = f.get(12)?.parse().ok()?;
            inodes.contains(&inode).then_some(drops)
        })
        .sum()
}

impl UdpTransport {
    /// Datagrams the kernel dropped on this transport's receive sockets (buffer full).
    fn receive_buffer_drops(&self) -> u64 {
        use std::os::fd::AsRawFd;
        let inodes: Vec<u64> = self
            .recv_sockets
            .iter()
            .filter_map(|r| socket_inode(r.socket.as_raw_fd()))
            .collect();
        if inodes.is_empty() {
            return 0;
        }
        std::fs::read_to_string("/proc/net/udp")
            .map(|t| drops_of(&t, &inodes))
            .unwrap_or(0)
    }
}

impl crate::Transport for UdpTransport {
    fn kind(&self) -> crate::TransportKind {
        crate::TransportKind::Udpv4
    }

    fn stats(&self) -> crate::TransportStats {
        crate::TransportStats {
            receive_buffer_drops: self.receive_buffer_drops(),
            ..crate::TransportStats::default()
        }
    }

    fn max_message_size(&self) -> usize {
        self.max_message_size
    }

    fn send_addresses(&self, dst: SocketAddrV4) -> Option<(SocketAddrV4, SocketAddrV4)> {
        Some((
            SocketAddrV4::new(self.interface.address, self.source_port),
            dst,
        ))
    }

    fn interface(&self) -> &NetworkInterface {
        &self.interface
    }

    fn locators(&self) -> crate::AnnouncedLocators {
        let addrs = |l: &[UdpLocator]| l.iter().map(|l| l.0).collect();
        crate::AnnouncedLocators {
            metatraffic_unicast: addrs(&self.metatraffic_unicast),
            metatraffic_multicast: addrs(&self.metatraffic_multicast),
            default_unicast: addrs(&self.default_unicast),
            default_multicast: addrs(&self.default_multicast),
        }
    }

    #[inline]
    fn send(&self, dst: SocketAddrV4, bufs: &[IoSlice<'_>]) -> io::Result<()> {
        UdpTransport::send(self, dst, bufs).map(|_| ())
    }

    /// One thread per socket (`ferrodds-rx<i>`), each with its own 64 KiB buffer.
    fn start(
        &self,
        handlers: crate::HandlerFactory,
    ) -> io::Result<Vec<std::thread::JoinHandle<()>>> {
        let mut threads = Vec::new();
        for (i, mut rx) in self.receivers().into_iter().enumerate() {
            let mut handler = handlers();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("ferrodds-rx{i}"))
                    .spawn(move || {
                        let mut buf = vec![0u8; MAX_UDP_PAYLOAD];
                        loop {
                            match rx.recv(&mut buf) {
                                Ok(Some(r)) => {
                                    let meta = crate::MessageMeta {
                                        transport: crate::TransportKind::Udpv4,
                                        src: r.src,
                                        dst: r.dst,
                                        multicast: r.multicast,
                                        traffic: r.kind,
                                    };
                                    handler.on_message(&buf[..r.len.min(buf.len())], &meta);
                                }
                                Ok(None) => break,
                                Err(e) => {
                                    tracing::debug!(error = %e, "receive failed");
                                    std::thread::sleep(Duration::from_millis(1));
                                }
                            }
                        }
                    })?,
            );
        }
        Ok(threads)
    }

    fn shutdown(&self) {
        UdpTransport::shutdown(self);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    fn lo_config(domain_id: u32) -> UdpConfig {
        UdpConfig {
            interface: InterfaceSelector::Name("lo".into()),
            multicast_enabled: false,
            ..UdpConfig::new(domain_id)
        }
    }

    #[test]
    fn transport_and_receiver_are_send_sync() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<UdpTransport>();
        send::<UdpReceiver>();
    }

    #[test]
    fn multicast_needs_a_multicast_interface() {
        let mut iface = NetworkInterface {
            name: "lo".into(),
            index: 1,
            address: Ipv4Addr::LOCALHOST,
            prefix_len: 8,
            loopback: true,
            multicast: false,
            up: true,
            mtu: Some(65536),
        };
        assert!(check_multicast(&iface, false).is_ok());
        match check_multicast(&iface, true) {
            Err(TransportError::MulticastUnsupported { interface }) => assert_eq!(interface, "lo"),
            other => panic!("unexpected {other:?}"),
        }
        iface.multicast = true;
        assert!(check_multicast(&iface, true).is_ok());
    }

    /// A receive socket whose small buffer overflows (nobody reads it) shows the kernel's
    /// drops in the transport's counters.
    #[test]
    fn receive_buffer_drops_are_counted() {
        use crate::Transport;
        let mut c = lo_config(203);
        c.recv_buffer_bytes = Some(4096);
        let t = UdpTransport::new(&c).unwrap();
        assert_eq!(t.stats().receive_buffer_drops, 0);
        let port = t.metatraffic_unicast[0].0.port();
        let tx = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        for _ in 0..200 {
            tx.send_to(&[0u8; 1000], (Ipv4Addr::LOCALHOST, port))
                .unwrap();
        }
        let drops = t.stats().receive_buffer_drops;
        assert!((150..=200).contains(&drops), "{drops} drops");
    }

    #[test]
    fn drops_are_read_for_our_sockets_only() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
            1: 0100007F:1CF2 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4242 2 0000000000000000 17\n\
            2: 0100007F:1CF3 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4343 2 0000000000000000 5\n\
            3: 0100007F:1CF4 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 99 2 0000000000000000 1000\n";
        assert_eq!(drops_of(table, &[4242, 4343]), 22);
        assert_eq!(drops_of(table, &[]), 0);
        assert_eq!(drops_of("garbage\nnot a table", &[1]), 0);
    }

    #[test]
    fn config_defaults() {
        let c = UdpConfig::default();
        assert_eq!(c.domain_id, 0);
        assert_eq!(c.multicast_group, Ipv4Addr::new(239, 255, 0, 1));
        assert_eq!(c.max_message_size, 65_507);
        assert!(c.multicast_enabled);
        assert_eq!(c.participant_id, None);
    }

    #[test]
    fn rejects_bad_max_message_size() {
        let mut c = lo_config(201);
        c.max_message_size = 70_000;
        assert!(matches!(
            UdpTransport::new(&c),
            Err(TransportError::InvalidMaxMessageSize(70_000))
        ));
        c.max_message_size = 0;
        assert!(matches!(
            UdpTransport::new(&c),
            Err(TransportError::InvalidMaxMessageSize(0))
        ));
    }

    #[test]
    fn rejects_non_multicast_group_and_large_pid() {
        let mut c = lo_config(201);
        c.multicast_enabled = true;
        c.multicast_group = Ipv4Addr::new(10, 0, 0, 1);
        assert!(matches!(
            UdpTransport::new(&c),
            Err(TransportError::NotMulticast(_))
        ));
        let mut c = lo_config(201);
        c.participant_id = Some(120);
        assert!(matches!(
            UdpTransport::new(&c),
            Err(TransportError::ParticipantIdOutOfRange(120))
        ));
    }

    #[test]
    fn too_large_domain_is_a_port_error() {
        let c = lo_config(240);
        assert!(matches!(
            UdpTransport::new(&c),
            Err(TransportError::Port(_))
        ));
    }

    #[test]
    fn oversized_send_is_rejected_without_sending() {
        let mut c = lo_config(202);
        c.max_message_size = 100;
        let t = UdpTransport::new(&c).unwrap();
        let big = [0u8; 101];
        let dst = t.default_unicast_locators()[0].socket_addr();
        let err = t.send_to(dst, &big).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(t.send_to(dst, &big[..100]).unwrap(), 100);
        t.shutdown();
        assert!(t.is_shut_down());
        assert_eq!(
            t.send_to(dst, &big[..1]).unwrap_err().kind(),
            io::ErrorKind::NotConnected
        );
    }

    fn receiver(t: &UdpTransport, kind: TrafficKind) -> UdpReceiver {
        t.receivers()
            .into_iter()
            .find(|r| r.kind() == kind && !r.is_multicast())
            .unwrap()
    }

    /// Receives one datagram and checks its bytes and that it came from `from`'s send port.
    fn expect(rx: &mut UdpReceiver, from: &UdpTransport, bytes: &[u8]) {
        let mut buf = [0u8; 64];
        let got = rx.recv(&mut buf).unwrap().expect("not shut down");
        assert_eq!(&buf[..got.len], bytes);
        assert_eq!(
            got.src,
            SocketAddrV4::new(Ipv4Addr::LOCALHOST, from.source_port())
        );
    }

    #[test]
    fn unicast_sends_use_connected_sockets_on_the_send_port() {
        let a = UdpTransport::new(&lo_config(204)).unwrap();
        let b = UdpTransport::new(&lo_config(204)).unwrap();
        let mut b_user = receiver(&b, TrafficKind::UserData);
        let mut b_meta = receiver(&b, TrafficKind::Metatraffic);
        let user = b.default_unicast_locators()[0].socket_addr();
        let meta = b.metatraffic_unicast_locators()[0].socket_addr();
        for i in 0..3u8 {
            assert_eq!(a.send_to(user, &[i]).unwrap(), 1);
            expect(&mut b_user, &a, &[i]);
        }
        a.send_to(meta, b"meta").unwrap();
        expect(&mut b_meta, &a, b"meta");
        assert_eq!(a.connected.destinations(), vec![user, meta]);

        // Disabled: the unconnected socket, from its own port as before.
        let c = UdpTransport::new(&UdpConfig {
            connected_send_sockets: 0,
            ..lo_config(204)
        })
        .unwrap();
        c.send_to(user, b"c").unwrap();
        expect(&mut b_user, &c, b"c");
        assert!(c.connected.destinations().is_empty());
    }

    #[test]
    fn a_full_table_replaces_the_least_recently_used_at_a_bounded_rate() {
        let a = UdpTransport::new(&UdpConfig {
            connected_send_sockets: 2,
            ..lo_config(205)
        })
        .unwrap();
        let b = UdpTransport::new(&lo_config(205)).unwrap();
        let c = UdpTransport::new(&lo_config(205)).unwrap();
        let mut x_rx = receiver(&b, TrafficKind::UserData);
        let mut y_rx = receiver(&b, TrafficKind::Metatraffic);
        let mut z_rx = receiver(&c, TrafficKind::UserData);
        let x = b.default_unicast_locators()[0].socket_addr();
        let y = b.metatraffic_unicast_locators()[0].socket_addr();
        let z = c.default_unicast_locators()[0].socket_addr();
        let send = |dst, rx: &mut UdpReceiver| {
            a.send_to(dst, b"d").unwrap();
            expect(rx, &a, b"d");
        };
        send(x, &mut x_rx);
        send(y, &mut y_rx);
        send(x, &mut x_rx);
        assert_eq!(a.connected.destinations(), vec![x, y]);

        // Full: z replaces y, the least recently used.
        let replaced_at = Instant::now();
        send(z, &mut z_rx);
        assert_eq!(a.connected.destinations(), vec![x, z]);
        // Within REPLACE_INTERVAL of that, y is sent unconnected (same source port).
        send(y, &mut y_rx);
        if replaced_at.elapsed() < crate::connected::REPLACE_INTERVAL {
            assert_eq!(a.connected.destinations(), vec![x, z]);
        }
        // Later y replaces x (z was used after it).
        std::thread::sleep(crate::connected::REPLACE_INTERVAL + Duration::from_millis(10));
        send(y, &mut y_rx);
        assert_eq!(a.connected.destinations(), vec![y, z]);
        send(x, &mut x_rx);
        send(z, &mut z_rx);
    }

    #[test]
    fn a_peer_that_went_away_and_came_back_stays_reachable() {
        let a = UdpTransport::new(&lo_config(206)).unwrap();
        let b = UdpTransport::new(&lo_config(206)).unwrap();
        let pid = b.participant_id();
        let dst = b.default_unicast_locators()[0].socket_addr();
        let mut rx = receiver(&b, TrafficKind::UserData);
        a.send_to(dst, b"1").unwrap();
        expect(&mut rx, &a, b"1");
        drop(rx);
        drop(b);

        // Premise: a connected socket reports the closed port's ICMP error on a later send.
        let probe = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
        probe.connect(&SockAddr::from(dst)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            match probe.send(b"probe") {
                Ok(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
                Ok(_) => panic!("no ECONNREFUSED from the closed port"),
                Err(e) => {
                    assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
                    break;
                }
            }
        }

        // The transport absorbs those errors, like an unconnected socket...
        for _ in 0..5 {
            assert_eq!(a.send_to(dst, b"lost").unwrap(), 4);
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(a.connected.destinations(), vec![dst]);
        // ...and reaches the peer again once it is back.
        let b = UdpTransport::new(&UdpConfig {
            participant_id: Some(pid),
            ..lo_config(206)
        })
        .unwrap();
        let mut rx = receiver(&b, TrafficKind::UserData);
        a.send_to(dst, b"back").unwrap();
        expect(&mut rx, &a, b"back");
    }
}
