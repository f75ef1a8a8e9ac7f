//! Transports for FerroDDS: the [`Transport`] abstraction the runtime drives, UDPv4
//! (DDSI-RTPS 2.5 §9.6) and TCPv4 with Cyclone DDS's framing ([`tcp`]).
//!
//! This crate moves datagrams; it knows nothing about RTPS messages beyond the well-known port
//! formula ([`PortMapping`]) and UDPv4 locators ([`UdpLocator`]; their raw RTPS form is the
//! wire crate's `Locator`, converted only there: `Locator::udpv4`, `Locator::udpv4_destination`).
//!
//! # Contract
//!
//! * **Sockets.** A [`UdpTransport`] owns, for one participant: a metatraffic (SPDP) unicast
//!   socket and a user-data unicast socket, both bound exclusively on `0.0.0.0` at the ports of
//!   its participant id; with multicast enabled, a metatraffic and a user-data multicast socket
//!   (`SO_REUSEADDR` + `SO_REUSEPORT`, bound to the group and port, joined on the chosen
//!   interface's address); and one send socket with `IP_MULTICAST_IF` set to that interface.
//!   On Linux, datagrams to unicast destinations go instead through a small cache of
//!   sockets `connect`ed to them (up to [`UdpConfig::connected_send_sockets`], 32 by default,
//!   created on the first send to a destination, least recently used replaced at most every
//!   50 ms): the kernel then reuses the route and numbers the IP identification from a
//!   per-socket counter instead of looking both up for every datagram. They share the send
//!   socket's port (`SO_REUSEADDR`), so every datagram has the same
//!   [`UdpTransport::source_port`], and its `SO_SNDBUF`. A connected socket would report an
//!   ICMP error provoked by an earlier datagram (such as port unreachable from a peer that
//!   has gone) as the failure of the next send: such a send is retried once, so errors are
//!   no more visible than with an unconnected socket, and a socket that fails twice is
//!   dropped and recreated later (no destination becomes unusable).
//!   Multicast on an interface without the `MULTICAST` flag (such as Linux `lo` by default) is
//!   refused with [`TransportError::MulticastUnsupported`].
//! * **Participant id.** `None` probes 0..=119 and takes the first id whose SPDP-unicast and
//!   user-unicast ports both bind; an explicit id that is taken is an error.
//! * **What is announced.** [`UdpTransport::metatraffic_unicast_locators`] and
//!   [`UdpTransport::default_unicast_locators`] carry the selected interface's IPv4 address
//!   (never `0.0.0.0`); the multicast locators carry the group and are empty when multicast is
//!   disabled.
//! * **Threads.** [`UdpTransport`] is `Send + Sync`; [`UdpTransport::send`] takes `&self` and
//!   may be called from several threads at once. It sends a scatter-gather list as one
//!   datagram without copying or allocating. [`UdpTransport::receivers`] hands out one
//!   [`UdpReceiver`] per socket; each is `Send` and meant to be owned by one receive thread,
//!   which calls [`UdpReceiver::recv`] with its own buffer (no allocation per datagram).
//! * **Shutdown.** [`UdpTransport::shutdown`] (also run on drop) makes every blocked `recv`
//!   return `Ok(None)` within [`SHUTDOWN_POLL`] (100 ms), and every later one immediately;
//!   `send` then fails with `NotConnected`. Receive sockets carry that read timeout, so an idle
//!   receive thread wakes ten times a second to check a flag; nothing is added per datagram.
//!
//! # Example
//!
//! Two participants on loopback exchange a datagram:
//!
//! ```
//! use std::io::IoSlice;
//! use ferrodds_transport::{InterfaceSelector, UdpConfig, UdpTransport, TrafficKind};
//!
//! let mut config = UdpConfig::new(231);
//! config.interface = InterfaceSelector::Name("lo".into());
//! config.multicast_enabled = false;
//! let a = UdpTransport::new(&config)?;
//! let b = UdpTransport::new(&config)?;
//! assert_ne!(a.participant_id(), b.participant_id());
//!
//! let dst = b.default_unicast_locators()[0].socket_addr();
//! a.send(dst, &[IoSlice::new(b"RTPS"), IoSlice::new(b" hello")])?;
//!
//! let mut rx = b.receivers().into_iter().find(|r| r.kind() == TrafficKind::UserData).unwrap();
//! let mut buf = [0u8; 1500];
//! let got = rx.recv(&mut buf)?.expect("not shut down");
//! assert_eq!(&buf[..got.len], b"RTPS hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

mod api;
mod connected;
mod error;
mod interface;
mod locator;
mod port;
mod secure;
pub mod tcp;
mod udp;

pub use api::{
    AnnouncedLocators, HandlerFactory, MessageHandler, MessageMeta, Transport, TransportKind,
    TransportStats, SHM_LOCATOR_KIND, TLSV4_LOCATOR_KIND,
};
pub use connected::{DEFAULT_CONNECTED_SEND_SOCKETS, MAX_CONNECTED_SEND_SOCKETS};
pub use error::{PortError, TransportError};
pub use interface::{list_interfaces, InterfaceSelector, NetworkInterface};
pub use locator::UdpLocator;
pub use port::{ParticipantPorts, PortMapping, MAX_PARTICIPANT_ID};
pub use secure::{SecureChannel, SecurityHandle, StreamSecurity};
pub use tcp::{TcpConfig, TcpTransport, DEFAULT_TCP_PORT};
pub use udp::{
    BufferSizes, Received, TrafficKind, UdpConfig, UdpReceiver, UdpTransport, WanConfig,
    DEFAULT_MULTICAST_GROUP, DEFAULT_WAN_PORT, MAX_UDP_PAYLOAD, SHUTDOWN_POLL,
};
