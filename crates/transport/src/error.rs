//! Typed errors of the transport crate.

use std::io;
use std::net::Ipv4Addr;

/// A port computed by the RTPS port formula (or an override) does not fit in a UDP port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what} port {port} for domain {domain_id}{} is outside 1..=65535",
    match participant_id { Some(p) => format!(" participant {p}"), None => String::new() }
)]
pub struct PortError {
    /// Which port was being computed (for example `"SPDP unicast"`).
    pub what: &'static str,
    /// The domain id that was used.
    pub domain_id: u32,
    /// The participant id that was used, for the unicast ports.
    pub participant_id: Option<u32>,
    /// The out-of-range value (computed without overflow in 64 bits).
    pub port: u64,
}

/// Errors raised while selecting an interface or building a [`crate::UdpTransport`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// A port of the RTPS port mapping is out of range.
    #[error(transparent)]
    Port(#[from] PortError),
    /// The participant id is outside the probe range 0..=119 allowed by the port mapping.
    #[error("participant id {0} is above the maximum of 119")]
    ParticipantIdOutOfRange(u32),
    /// No network interface with this name has an IPv4 address.
    #[error("no network interface named {name:?} with an IPv4 address")]
    InterfaceNotFound {
        /// The requested name.
        name: String,
    },
    /// No network interface carries this IPv4 address.
    #[error("no network interface has the IPv4 address {addr}")]
    AddressNotFound {
        /// The requested address.
        addr: Ipv4Addr,
    },
    /// Default selection found no interface that is up and has an IPv4 address.
    #[error("no usable IPv4 network interface found")]
    NoUsableInterface,
    /// Multicast is enabled but the chosen interface lacks the `MULTICAST` flag (as `lo` does
    /// by default on Linux); choose another interface or disable multicast.
    #[error("interface {interface:?} does not support multicast; choose another interface or disable multicast")]
    MulticastUnsupported {
        /// Name of the chosen interface.
        interface: String,
    },
    /// The configured multicast group is not an IPv4 multicast address.
    #[error("{0} is not an IPv4 multicast address")]
    NotMulticast(Ipv4Addr),
    /// The configured maximum message size is 0 or above 65507 bytes.
    #[error("max message size {0} is outside 1..=65507")]
    InvalidMaxMessageSize(usize),
    /// The UDPv4_WAN host port is taken.
    #[error("cannot bind the UDPv4_WAN host port {port} (in use?): {source}")]
    WanPortInUse {
        /// The port.
        port: u16,
        /// The bind error.
        #[source]
        source: io::Error,
    },
    /// The explicitly requested participant id is already taken on this host.
    #[error("participant id {participant_id} is in use (port {port}): {source}")]
    ParticipantIdInUse {
        /// The requested participant id.
        participant_id: u32,
        /// The port that could not be bound.
        port: u16,
        /// The bind error.
        #[source]
        source: io::Error,
    },
    /// Probing participant ids 0..=119 found none whose two unicast ports were both free.
    #[error("no free participant id in domain {domain_id} (probed 0..=119)")]
    NoFreeParticipantId {
        /// The domain that was probed.
        domain_id: u32,
    },
    /// The TCP server address (interface address and port) cannot be bound.
    #[error("cannot listen on TCP {addr} (port in use?): {source}")]
    TcpPortInUse {
        /// The address that could not be bound.
        addr: std::net::SocketAddrV4,
        /// The bind error.
        #[source]
        source: io::Error,
    },
    /// A socket operation failed.
    #[error("{op} failed: {source}")]
    Socket {
        /// What was being done (for example `"bind SPDP multicast socket"`).
        op: &'static str,
        /// The operating system error.
        #[source]
        source: io::Error,
    },
}

impl TransportError {
    pub(crate) fn socket(op: &'static str) -> impl FnOnce(io::Error) -> Self {
        move |source| Self::Socket { op, source }
    }
}
