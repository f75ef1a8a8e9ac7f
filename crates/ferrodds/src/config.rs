//! Participant configuration: one [`Config`] value with builder setters and env overrides.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::time::Duration;

use crate::error::DdsError;
use crate::GuidPrefix;

/// Environment variable overriding [`Config::interface`] (a name such as `lo` or an IPv4
/// address such as `127.0.0.1`).
pub const ENV_INTERFACE: &str = "FERRODDS_INTERFACE";
/// `1`: print the engine's counters to stderr when a participant is dropped
/// ([`crate::DomainParticipant::engine_stats`]).
pub const ENV_STATS: &str = "FERRODDS_STATS";
/// `0` or `1`: [`Config::congestion_control`].
pub const ENV_CONGESTION_CONTROL: &str = "FERRODDS_CONGESTION_CONTROL";
/// Environment variable overriding [`Config::initial_peers`]: comma-separated IPv4 addresses.
pub const ENV_PEERS: &str = "FERRODDS_PEERS";
/// Environment variable overriding [`Config::multicast`]: `0` (off) or `1` (on).
pub const ENV_MULTICAST: &str = "FERRODDS_MULTICAST";

/// Which transports a participant uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transports {
    /// UDPv4 only (the default).
    #[default]
    Udpv4,
    /// TCPv4 only, with Cyclone DDS's framing: discovery and data over TCP connections to
    /// [`Config::tcp_peers`] and to what they announce; no UDP socket is opened.
    Tcpv4,
    /// Both; each remote locator is reached by the transport of its kind.
    Udpv4AndTcpv4,
    /// TLS over TCPv4 only ([`Config::tls`] is required): as [`Transports::Tcpv4`] (same
    /// [`Config::tcp_port`] and [`Config::tcp_peers`]), every connection mutually
    /// authenticated and encrypted; no UDP socket is opened.
    Tlsv4,
}

impl Transports {
    /// Whether UDPv4 is used.
    pub fn udp(self) -> bool {
        matches!(self, Transports::Udpv4 | Transports::Udpv4AndTcpv4)
    }
    /// Whether a TCP server is used (plain TCPv4 or TLS).
    pub fn tcp(self) -> bool {
        matches!(
            self,
            Transports::Tcpv4 | Transports::Udpv4AndTcpv4 | Transports::Tlsv4
        )
    }

    /// Whether the TCP connections are TLS.
    pub fn tls(self) -> bool {
        self == Transports::Tlsv4
    }
}

/// How the participant chooses its network interface.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Interface {
    /// The first interface that is up, not loopback and multicast-capable (as other DDS
    /// implementations do); the loopback interface when there is none.
    #[default]
    Default,
    /// An interface by system name, e.g. `lo` or `eth0`.
    Name(String),
    /// The interface carrying this IPv4 address, e.g. `127.0.0.1`.
    Address(Ipv4Addr),
}

impl Interface {
    /// Parses `""`/`"default"` as [`Interface::Default`], a dotted IPv4 address as
    /// [`Interface::Address`] and anything else as [`Interface::Name`].
    pub fn parse(s: &str) -> Self {
        let s = s.trim();
        if s.is_empty() || s.eq_ignore_ascii_case("default") {
            Self::Default
        } else if let Ok(a) = s.parse::<Ipv4Addr>() {
            Self::Address(a)
        } else {
            Self::Name(s.to_owned())
        }
    }
}

/// Configuration of a [`crate::DomainParticipant`].
///
/// Every field has a documented default and unit. `Config::default()` does **not** read the
/// environment; [`Config::from_env`] (used by [`crate::DomainParticipant::new`]) applies
/// `FERRODDS_INTERFACE`, `FERRODDS_PEERS` and `FERRODDS_MULTICAST` on top of the defaults.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Config {
    /// Network interface for discovery and user data. Default: [`Interface::Default`] (first
    /// non-loopback multicast-capable interface). Tests pin this to `127.0.0.1`.
    pub interface: Interface,
    /// Whether SPDP discovery uses IPv4 multicast (group 239.255.0.1), and the participant
    /// listens for user data sent to the group (see [`Config::multicast_user_data`]).
    /// Default: `true`.
    pub multicast: bool,
    /// Unicast discovery peers (IPv4 addresses). SPDP announcements are sent to the SPDP unicast
    /// ports of participant ids `0..=max_peer_participant_id` at each peer. Default: empty.
    pub initial_peers: Vec<Ipv4Addr>,
    /// Highest participant id probed at each initial peer. Default: `9`.
    pub max_peer_participant_id: u32,
    /// Participant id (selects the unicast ports). Default: `None` = the first free id in
    /// `0..=119`.
    pub participant_id: Option<u32>,
    /// Socket receive buffer size in bytes (the kernel may clamp it). Default: 4 MiB.
    pub recv_buffer_bytes: usize,
    /// Socket send buffer size in bytes (the kernel may clamp it). Default: 1 MiB.
    pub send_buffer_bytes: usize,
    /// Participant lease duration announced in SPDP. Default: 20 s.
    pub lease_duration: Duration,
    /// Period of SPDP announcements. Default: 3 s (the first one is sent at creation).
    pub spdp_period: Duration,
    /// Heartbeat period of reliable writers while data is unacknowledged. Default: 100 ms.
    pub heartbeat_period: Duration,
    /// Largest RTPS message (UDP payload) in bytes. Default: 65000. On an interface that is
    /// not loopback the datagrams sent are further limited to what fits one IP packet of the
    /// interface's MTU (MTU − 28, 1472 on Ethernet) unless [`Config::ip_fragmentation`] is set:
    /// larger samples are then split into RTPS DATA_FRAGs, each repaired on its own, instead
    /// of IP fragments of which one lost loses the whole datagram.
    pub max_message_size: usize,
    /// Let the kernel fragment datagrams larger than the interface MTU (up to
    /// `max_message_size`) instead of fragmenting at the RTPS level. Default: `false`.
    ///
    /// Why off by default: one lost IP fragment loses the whole datagram, and Linux keeps every
    /// incomplete datagram for `net.ipv4.ipfrag_time` (30 s) charged against
    /// `ipfrag_high_thresh` (4 MiB); once that is full, every further fragment is refused, so a
    /// shaper or a lossy link that drops a few fragments collapses reliable throughput of large
    /// samples (measured: 63000 B samples over a 100 Mbit/s tbf link, 0.4 Mbit/s with
    /// 151,914 of 156,451 fragments refused at reassembly).
    pub ip_fragmentation: bool,
    /// Pace reliable traffic at a rate adapted to the delivery and losses readers report
    /// ([`ferrodds_rtps::congestion`]). Default: `true` (measured: 63000 B reliable over a
    /// 100 Mbit/s tbf link 89–91 Mbit/s with 0 % loss and 80–85 Mbit/s with 1 % loss,
    /// against ~20 Mbit/s unpaced; 10 MB samples on loopback 8–13 Gbit/s);
    /// `FERRODDS_CONGESTION_CONTROL=0` turns it off (the engine then sends as fast as it is
    /// polled).
    pub congestion_control: bool,
    /// DATA_FRAG fragment size in bytes for samples larger than one message. Default: 0 =
    /// the largest that fills a message of `max_message_size`.
    pub fragment_size: usize,
    /// Largest sample (serialized bytes) written or accepted for reassembly. Default:
    /// 16 MiB.
    pub max_sample_size: u32,
    /// Most bytes held for reassembly of fragmented samples, per remote writer and reader /
    /// for the whole participant. Default: 32 MiB / 64 MiB.
    pub max_reassembly_bytes: (usize, usize),
    /// Most samples under reassembly (incomplete) at once per remote writer and reader; a
    /// fragment of a further sample is refused (and repaired later when reliable). Default:
    /// 256.
    pub max_reassembly_samples: usize,
    /// Bounds on the discovery and out-of-order state remote peers can make the participant
    /// keep: remote participants (default 4,096), remote endpoints (16,384 writers and as many
    /// readers), endpoints of one remote participant (4,096), changes a reliable reader buffers
    /// out of order per writer (32,768, and 256 MiB). What goes beyond is ignored and counted
    /// in [`crate::DomainParticipant::engine_stats`] (`refused_participants`,
    /// `refused_endpoints`, `out_of_order_overflows`); fragments refused by the reassembly
    /// bounds above are counted in `reassembly_overflows`, and datagrams the kernel dropped
    /// because the receive buffer ([`Config::recv_buffer_bytes`]) was full in
    /// [`crate::DomainParticipant::transport_stats`] (`receive_buffer_drops`).
    pub peer_limits: crate::PeerLimits,
    /// When set, the participant captures its own traffic from the start: every RTPS
    /// message it sends and receives (on the transports chosen) is written to a pcapng file
    /// Wireshark decodes ([`crate::CaptureConfig`]; captures can also be started, paused and
    /// stopped at run time: [`crate::DomainParticipant::start_capture`]). Default: `None`.
    pub capture: Option<crate::CaptureConfig>,
    /// Participant name announced in SPDP (`PID_ENTITY_NAME`). Default: `None`.
    pub entity_name: Option<String>,
    /// The transports used. Default: [`Transports::Udpv4`].
    pub transports: Transports,
    /// TCP server port on the interface's address (with TCP): every connection from a peer
    /// arrives there, and it is the port announced. 0 lets the system choose. Default: 7400
    /// (as RTI's TCP transport); a second participant on the same host needs another.
    pub tcp_port: u16,
    /// TCP discovery peers (with TCP): the server address and port of each, to which SPDP is
    /// sent. Default: empty.
    pub tcp_peers: Vec<SocketAddrV4>,
    /// TLS identity and trust anchors, required with [`Transports::Tlsv4`]. Default: `None`.
    #[cfg(feature = "tls")]
    pub tls: Option<ferrodds_transport_tls::TlsConfig>,
    /// UDPv4_WAN (with UDPv4): one fixed UDP port for all traffic and a public address
    /// announced, for a participant behind a port-forwarding NAT; no multicast. Discovery goes
    /// to [`Config::wan_peers`]. Default: `None`.
    pub udp_wan: Option<ferrodds_transport::WanConfig>,
    /// UDPv4_WAN discovery peers: the address and port of each peer's WAN socket. Default:
    /// empty.
    pub wan_peers: Vec<SocketAddrV4>,
    /// The participant's GUID prefix. Default: `None` = a fresh one (vendor id, host, process
    /// id, counter and random bits), different for every participant and run.
    ///
    /// A fixed prefix gives a process the same identity across restarts (e.g. for peers
    /// configured with it). Every participant alive in a domain must have its own: two with
    /// the same prefix corrupt each other's sessions. A restarted participant is a new
    /// *incarnation* of the prefix (its sequence numbers start from 1 again): it announces the
    /// wall-clock time of its creation, and FerroDDS peers that still remember the previous run
    /// drop its state and discover the new one at once (other implementations may keep the
    /// old state until its lease ends: choose `lease_duration` accordingly). Starting with
    /// the FerroDDS vendor id (`[0x01, 0xfd]`, [`crate::VENDOR_ID`]) avoids prefixes of other
    /// vendors. The all-zero prefix (`GUIDPREFIX_UNKNOWN`) is refused.
    pub guid_prefix: Option<GuidPrefix>,
    /// Shared memory beside UDPv4 (needs UDPv4, which keeps discovery): the participant
    /// receives user data through a segment in `/dev/shm` (mode 0600, named from its user id
    /// and UDP user-data port) and announces a FerroDDS shared-memory locator carrying this
    /// host's boot identity. FerroDDS peers on the same host and boot that also run it send
    /// their user data (and acknowledgements) through it instead of UDP; other peers keep
    /// UDP. Default: `false`.
    pub shared_memory: bool,
    /// User data by multicast (needs [`Config::multicast`]): the participant's readers
    /// announce the multicast group (239.255.0.1, the RTPS user-data multicast port) and its
    /// writers send to a reader's group when it announces one, once per sample for every
    /// reader listening there, instead of once per reader by unicast. Default: `false`.
    pub multicast_user_data: bool,
    /// More user-data multicast groups the participant receives on (UDPv4, on the user-data
    /// multicast port; needs [`Config::multicast`]): a reader whose
    /// [`crate::DataReaderQos::multicast_group`] names one announces it instead of the
    /// participant's group, so that each topic can have a group of its own (RTI's
    /// per-reader multicast, perftest's `-multicastAddr`). Default: none.
    pub multicast_groups: Vec<Ipv4Addr>,
    /// DDS Security ([`SecurityConfig`]): authentication (PKI-DH) and access control
    /// (signed governance and permissions) of participants. Default: `None` (no security).
    pub security: Option<SecurityConfig>,
}

/// DDS Security configuration of a participant: the standard property names and values
/// (`file:` or `data:,` URIs), as in the DDS Security specification and Cyclone DDS:
///
/// | property | value |
/// |---|---|
/// | `dds.sec.auth.identity_ca` | identity CA certificate (PEM) |
/// | `dds.sec.auth.identity_certificate` | the participant's certificate (PEM) |
/// | `dds.sec.auth.private_key` | its private key (PEM) |
/// | `dds.sec.auth.password` | password of an encrypted key (optional, plain text) |
/// | `dds.sec.access.permissions_ca` | permissions CA certificate (PEM) |
/// | `dds.sec.access.governance` | governance document signed by the permissions CA |
/// | `dds.sec.access.permissions` | permissions document signed by the permissions CA |
///
/// (the long forms `dds.sec.auth.builtin.PKI-DH.*` and
/// `dds.sec.access.builtin.Access-Permissions.*` are accepted too). Everything is read and
/// checked when the participant is created; a missing property, an unreadable file, a
/// certificate or signature that does not verify, or permissions that do not allow the
/// domain make creation fail with [`crate::DdsError::Security`] naming the property or file
/// and the reason. With security, remote participants are authenticated (and their
/// permissions checked) before any endpoint discovery with them; those without security
/// are ignored unless the governance allows unauthenticated participants. This release does
/// not protect (sign or encrypt) traffic yet: governance protection kinds are announced but
/// not applied. Needs the `security` cargo feature (default on).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SecurityConfig {
    properties: Vec<(String, String)>,
}

impl SecurityConfig {
    /// No properties yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) property `name`.
    pub fn property(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let name = name.into();
        let value = value.into();
        match self.properties.iter_mut().find(|(n, _)| *n == name) {
            Some(p) => p.1 = value,
            None => self.properties.push((name, value)),
        }
        self
    }

    /// The properties, in the order set.
    pub fn properties(&self) -> &[(String, String)] {
        &self.properties
    }

    /// `dds.sec.auth.identity_ca`.
    pub fn identity_ca(self, uri: impl Into<String>) -> Self {
        self.property("dds.sec.auth.identity_ca", uri)
    }

    /// `dds.sec.auth.identity_certificate`.
    pub fn identity_certificate(self, uri: impl Into<String>) -> Self {
        self.property("dds.sec.auth.identity_certificate", uri)
    }

    /// `dds.sec.auth.private_key`.
    pub fn private_key(self, uri: impl Into<String>) -> Self {
        self.property("dds.sec.auth.private_key", uri)
    }

    /// `dds.sec.access.permissions_ca`.
    pub fn permissions_ca(self, uri: impl Into<String>) -> Self {
        self.property("dds.sec.access.permissions_ca", uri)
    }

    /// `dds.sec.access.governance`.
    pub fn governance(self, uri: impl Into<String>) -> Self {
        self.property("dds.sec.access.governance", uri)
    }

    /// `dds.sec.access.permissions`.
    pub fn permissions(self, uri: impl Into<String>) -> Self {
        self.property("dds.sec.access.permissions", uri)
    }

    /// `ferrodds.sec.crypto.encryption_algorithm` (FerroDDS's): the AES key length of the
    /// participant's key material, `aes-128-gcm` or `aes-256-gcm` (the default when not
    /// set; SIGN uses GMAC with the same key length). Another value fails participant
    /// creation.
    pub fn encryption_algorithm(self, algorithm: impl Into<String>) -> Self {
        self.property("ferrodds.sec.crypto.encryption_algorithm", algorithm)
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            interface: Interface::Default,
            multicast: true,
            initial_peers: Vec::new(),
            max_peer_participant_id: 9,
            participant_id: None,
            recv_buffer_bytes: 4 * 1024 * 1024,
            send_buffer_bytes: 1024 * 1024,
            lease_duration: Duration::from_secs(20),
            spdp_period: Duration::from_secs(3),
            heartbeat_period: Duration::from_millis(100),
            max_message_size: 65_000,
            ip_fragmentation: false,
            congestion_control: true,
            fragment_size: 0,
            max_sample_size: 16 << 20,
            max_reassembly_bytes: (32 << 20, 64 << 20),
            max_reassembly_samples: 256,
            peer_limits: crate::PeerLimits::default(),
            capture: None,
            entity_name: None,
            transports: Transports::Udpv4,
            tcp_port: ferrodds_transport::DEFAULT_TCP_PORT,
            tcp_peers: Vec::new(),
            #[cfg(feature = "tls")]
            tls: None,
            udp_wan: None,
            wan_peers: Vec::new(),
            guid_prefix: None,
            shared_memory: false,
            multicast_user_data: false,
            multicast_groups: Vec::new(),
            security: None,
        }
    }
}

/// An on/off environment value: `0`/`false`/`off` or `1`/`true`/`on`.
fn parse_flag(v: &str, what: &'static str) -> Result<bool, DdsError> {
    match v.trim() {
        "0" | "false" | "off" => Ok(false),
        "1" | "true" | "on" => Ok(true),
        _ => Err(DdsError::BadParameter { what }),
    }
}

impl Config {
    /// Defaults with the `FERRODDS_*` environment overrides applied.
    pub fn from_env() -> Result<Self, DdsError> {
        Self::default().with_env_overrides()
    }

    /// A loopback-only configuration: interface `127.0.0.1`, multicast off, initial peer
    /// `127.0.0.1`. This is what tests and examples in this repository use.
    pub fn loopback() -> Self {
        Self::default()
            .interface(Interface::Address(Ipv4Addr::LOCALHOST))
            .multicast(false)
            .initial_peers(vec![Ipv4Addr::LOCALHOST])
    }

    /// Applies `FERRODDS_INTERFACE`, `FERRODDS_PEERS`, `FERRODDS_MULTICAST` and
    /// `FERRODDS_CONGESTION_CONTROL` when set.
    pub fn with_env_overrides(self) -> Result<Self, DdsError> {
        self.with_overrides_from(|k| std::env::var(k).ok())
    }

    /// Applies the overrides read through `get` (the environment in
    /// [`Config::with_env_overrides`]); split out so it can be tested without touching the
    /// process environment.
    pub fn with_overrides_from(
        mut self,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, DdsError> {
        if let Some(v) = get(ENV_INTERFACE) {
            self.interface = Interface::parse(&v);
        }
        if let Some(v) = get(ENV_PEERS) {
            let mut peers = Vec::new();
            for p in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let a = p.parse::<Ipv4Addr>().map_err(|_| DdsError::BadParameter {
                    what: "FERRODDS_PEERS must be comma-separated IPv4 addresses",
                })?;
                peers.push(a);
            }
            self.initial_peers = peers;
        }
        if let Some(v) = get(ENV_CONGESTION_CONTROL) {
            self.congestion_control = parse_flag(&v, "FERRODDS_CONGESTION_CONTROL must be 0 or 1")?;
        }
        if let Some(v) = get(ENV_MULTICAST) {
            self.multicast = parse_flag(&v, "FERRODDS_MULTICAST must be 0 or 1")?;
        }
        Ok(self)
    }

    /// Sets [`Config::security`]: DDS Security for the participant.
    pub fn security(mut self, s: SecurityConfig) -> Self {
        self.security = Some(s);
        self
    }

    /// Sets [`Config::transports`].
    pub fn transports(mut self, t: Transports) -> Self {
        self.transports = t;
        self
    }
    /// Sets [`Config::multicast_user_data`].
    pub fn multicast_user_data(mut self, on: bool) -> Self {
        self.multicast_user_data = on;
        self
    }
    /// Sets [`Config::multicast_groups`].
    pub fn multicast_groups(mut self, groups: Vec<Ipv4Addr>) -> Self {
        self.multicast_groups = groups;
        self
    }
    /// Sets [`Config::shared_memory`].
    pub fn shared_memory(mut self, on: bool) -> Self {
        self.shared_memory = on;
        self
    }
    /// Sets [`Config::tcp_port`].
    pub fn tcp_port(mut self, port: u16) -> Self {
        self.tcp_port = port;
        self
    }
    /// Sets [`Config::tcp_peers`].
    pub fn tcp_peers(mut self, peers: Vec<SocketAddrV4>) -> Self {
        self.tcp_peers = peers;
        self
    }
    /// Sets [`Config::udp_wan`] (and turns multicast off).
    pub fn udp_wan(mut self, wan: ferrodds_transport::WanConfig) -> Self {
        self.udp_wan = Some(wan);
        self.multicast = false;
        self
    }
    /// Sets [`Config::wan_peers`].
    pub fn wan_peers(mut self, peers: Vec<SocketAddrV4>) -> Self {
        self.wan_peers = peers;
        self
    }
    /// Sets [`Config::tls`].
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: ferrodds_transport_tls::TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }
    /// Sets [`Config::interface`].
    pub fn interface(mut self, interface: Interface) -> Self {
        self.interface = interface;
        self
    }
    /// Sets [`Config::multicast`].
    pub fn multicast(mut self, on: bool) -> Self {
        self.multicast = on;
        self
    }
    /// Sets [`Config::initial_peers`].
    pub fn initial_peers(mut self, peers: Vec<Ipv4Addr>) -> Self {
        self.initial_peers = peers;
        self
    }
    /// Sets [`Config::max_peer_participant_id`].
    pub fn max_peer_participant_id(mut self, id: u32) -> Self {
        self.max_peer_participant_id = id;
        self
    }
    /// Sets [`Config::participant_id`].
    pub fn participant_id(mut self, id: Option<u32>) -> Self {
        self.participant_id = id;
        self
    }
    /// Sets [`Config::recv_buffer_bytes`].
    pub fn recv_buffer_bytes(mut self, bytes: usize) -> Self {
        self.recv_buffer_bytes = bytes;
        self
    }
    /// Sets [`Config::send_buffer_bytes`].
    pub fn send_buffer_bytes(mut self, bytes: usize) -> Self {
        self.send_buffer_bytes = bytes;
        self
    }
    /// Sets [`Config::lease_duration`].
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = d;
        self
    }
    /// Sets [`Config::spdp_period`].
    pub fn spdp_period(mut self, d: Duration) -> Self {
        self.spdp_period = d;
        self
    }
    /// Sets [`Config::heartbeat_period`].
    pub fn heartbeat_period(mut self, d: Duration) -> Self {
        self.heartbeat_period = d;
        self
    }
    /// Sets [`Config::max_message_size`].
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }
    /// Sets [`Config::ip_fragmentation`].
    pub fn ip_fragmentation(mut self, on: bool) -> Self {
        self.ip_fragmentation = on;
        self
    }
    /// Sets [`Config::fragment_size`].
    pub fn fragment_size(mut self, bytes: usize) -> Self {
        self.fragment_size = bytes;
        self
    }
    /// Sets [`Config::max_sample_size`].
    pub fn max_sample_size(mut self, bytes: u32) -> Self {
        self.max_sample_size = bytes;
        self
    }
    /// Sets [`Config::max_reassembly_bytes`] (per writer, per participant).
    pub fn max_reassembly_bytes(mut self, per_writer: usize, total: usize) -> Self {
        self.max_reassembly_bytes = (per_writer, total);
        self
    }
    /// Sets [`Config::max_reassembly_samples`].
    pub fn max_reassembly_samples(mut self, samples: usize) -> Self {
        self.max_reassembly_samples = samples;
        self
    }
    /// Sets [`Config::peer_limits`].
    pub fn peer_limits(mut self, limits: crate::PeerLimits) -> Self {
        self.peer_limits = limits;
        self
    }
    /// Sets [`Config::capture`] to a capture into `path` with the default settings (or none).
    pub fn capture_file(mut self, path: Option<PathBuf>) -> Self {
        self.capture = path.map(crate::CaptureConfig::file);
        self
    }

    /// Sets [`Config::capture`].
    pub fn capture(mut self, capture: Option<crate::CaptureConfig>) -> Self {
        self.capture = capture;
        self
    }
    /// Sets [`Config::entity_name`].
    pub fn entity_name(mut self, name: Option<String>) -> Self {
        self.entity_name = name;
        self
    }
    /// Sets [`Config::guid_prefix`].
    pub fn guid_prefix(mut self, prefix: Option<GuidPrefix>) -> Self {
        self.guid_prefix = prefix;
        self
    }

    pub(crate) fn validate(&self) -> Result<(), DdsError> {
        if self.max_message_size < 1024 || self.max_message_size > 65_507 {
            return Err(DdsError::BadParameter {
                what: "max_message_size must be within 1024..=65507 bytes",
            });
        }
        if self.spdp_period.is_zero() || self.heartbeat_period.is_zero() {
            return Err(DdsError::BadParameter {
                what: "spdp_period and heartbeat_period must be non-zero",
            });
        }
        if self.lease_duration < self.spdp_period {
            return Err(DdsError::BadParameter {
                what: "lease_duration must not be shorter than spdp_period",
            });
        }
        if self.guid_prefix == Some(GuidPrefix([0; 12])) {
            return Err(DdsError::BadParameter {
                what: "guid_prefix must not be GUIDPREFIX_UNKNOWN (all zeros)",
            });
        }
        if self.multicast_user_data && (!self.multicast || !self.transports.udp()) {
            return Err(DdsError::BadParameter {
                what: "multicast_user_data needs multicast (and UDPv4)",
            });
        }
        if !self.multicast_groups.is_empty()
            && (!self.multicast || !self.transports.udp() || self.udp_wan.is_some())
        {
            return Err(DdsError::BadParameter {
                what: "multicast_groups needs multicast (and UDPv4, not UDPv4_WAN)",
            });
        }
        if self.multicast_groups.iter().any(|g| !g.is_multicast()) {
            return Err(DdsError::BadParameter {
                what: "multicast_groups must be IPv4 multicast addresses (224.0.0.0/4)",
            });
        }
        if self.shared_memory && (!self.transports.udp() || self.udp_wan.is_some()) {
            return Err(DdsError::BadParameter {
                what: "shared_memory needs UDPv4 (not UDPv4_WAN) beside it for discovery",
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn interface_parse() {
        assert_eq!(Interface::parse(""), Interface::Default);
        assert_eq!(Interface::parse("default"), Interface::Default);
        assert_eq!(
            Interface::parse("127.0.0.1"),
            Interface::Address(Ipv4Addr::LOCALHOST)
        );
        assert_eq!(Interface::parse(" lo "), Interface::Name("lo".into()));
    }

    #[test]
    fn env_overrides_apply() {
        let c = Config::default()
            .with_overrides_from(env(&[
                (ENV_INTERFACE, "lo"),
                (ENV_PEERS, "127.0.0.1, 10.0.0.2"),
                (ENV_MULTICAST, "0"),
            ]))
            .unwrap();
        assert_eq!(c.interface, Interface::Name("lo".into()));
        assert_eq!(
            c.initial_peers,
            vec![Ipv4Addr::LOCALHOST, Ipv4Addr::new(10, 0, 0, 2)]
        );
        assert!(!c.multicast);
        let unchanged = Config::default().with_overrides_from(env(&[])).unwrap();
        assert_eq!(unchanged, Config::default());
    }

    #[test]
    fn multicast_groups_need_multicast_and_multicast_addresses() {
        let g = Ipv4Addr::new(239, 255, 42, 1);
        assert!(Config::default()
            .multicast_groups(vec![g])
            .validate()
            .is_ok());
        for (c, what) in [
            (
                Config::loopback().multicast_groups(vec![g]),
                "multicast_groups needs multicast (and UDPv4, not UDPv4_WAN)",
            ),
            (
                Config::default().multicast_groups(vec![Ipv4Addr::new(10, 0, 0, 1)]),
                "multicast_groups must be IPv4 multicast addresses (224.0.0.0/4)",
            ),
        ] {
            match c.validate() {
                Err(DdsError::BadParameter { what: w }) => assert_eq!(w, what),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn env_overrides_reject_garbage() {
        assert!(matches!(
            Config::default().with_overrides_from(env(&[(ENV_MULTICAST, "maybe")])),
            Err(DdsError::BadParameter { .. })
        ));
        assert!(matches!(
            Config::default().with_overrides_from(env(&[(ENV_PEERS, "host.example")])),
            Err(DdsError::BadParameter { .. })
        ));
    }

    #[test]
    fn validate_bounds() {
        assert!(Config::loopback().validate().is_ok());
        assert!(Config::default()
            .max_message_size(70_000)
            .validate()
            .is_err());
        assert!(Config::default()
            .lease_duration(Duration::from_secs(1))
            .validate()
            .is_err());
        assert!(Config::loopback()
            .guid_prefix(Some(GuidPrefix([0; 12])))
            .validate()
            .is_err());
        assert!(Config::loopback()
            .guid_prefix(Some(GuidPrefix([1, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])))
            .validate()
            .is_ok());
        let lb = Config::loopback();
        assert!(!lb.multicast);
        assert_eq!(lb.initial_peers, vec![Ipv4Addr::LOCALHOST]);
    }
}
