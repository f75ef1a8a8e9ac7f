//! UDPv4 locators: the socket addresses this transport binds and sends to. Their raw RTPS
//! form (kind, port, sixteen address bytes) is the wire crate's `Locator`, converted in
//! one place: `Locator::udpv4` and `Locator::udpv4_destination`.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddrV4};

/// A UDPv4 locator: an IPv4 address and a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UdpLocator(pub SocketAddrV4);

impl UdpLocator {
    /// A locator for `addr:port`.
    pub const fn new(addr: Ipv4Addr, port: u16) -> Self {
        Self(SocketAddrV4::new(addr, port))
    }

    /// The socket address of this locator.
    pub const fn socket_addr(&self) -> SocketAddrV4 {
        self.0
    }

    /// The IPv4 address.
    pub const fn ip(&self) -> Ipv4Addr {
        *self.0.ip()
    }

    /// The UDP port.
    pub const fn port(&self) -> u16 {
        self.0.port()
    }

    /// Whether the address is an IPv4 multicast address.
    pub const fn is_multicast(&self) -> bool {
        self.0.ip().is_multicast()
    }
}

impl From<SocketAddrV4> for UdpLocator {
    fn from(addr: SocketAddrV4) -> Self {
        Self(addr)
    }
}

impl From<UdpLocator> for SocketAddrV4 {
    fn from(loc: UdpLocator) -> Self {
        loc.0
    }
}

impl fmt::Display for UdpLocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "udpv4/{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_and_display() {
        let sa = SocketAddrV4::new(Ipv4Addr::new(239, 255, 0, 1), 7400);
        let loc = UdpLocator::from(sa);
        assert!(loc.is_multicast());
        assert_eq!(SocketAddrV4::from(loc), sa);
        assert_eq!(loc.to_string(), "udpv4/239.255.0.1:7400");
        assert!(!UdpLocator::new(Ipv4Addr::LOCALHOST, 1).is_multicast());
    }
}
