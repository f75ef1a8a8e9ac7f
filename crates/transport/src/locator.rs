//! UDPv4 locators and their raw RTPS form (kind `i32`, port `u32`, address `[u8; 16]`).

use std::fmt;
use std::net::{Ipv4Addr, SocketAddrV4};

use crate::error::LocatorError;

/// RTPS `LOCATOR_KIND_UDPv4`.
pub const LOCATOR_KIND_UDPV4: i32 = 1;

/// A UDPv4 locator: an IPv4 address and a port.
///
/// The raw RTPS form (the wire crate's `Locator`) carries the IPv4 address in the last four of
/// its sixteen address bytes, the first twelve being zero.
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

    /// The raw RTPS form `(kind, port, address)`.
    pub const fn to_raw(&self) -> (i32, u32, [u8; 16]) {
        let o = self.0.ip().octets();
        let mut address = [0u8; 16];
        address[12] = o[0];
        address[13] = o[1];
        address[14] = o[2];
        address[15] = o[3];
        (LOCATOR_KIND_UDPV4, self.0.port() as u32, address)
    }

    /// Builds a locator from its raw RTPS form.
    ///
    /// Only the last four address bytes are read (the first twelve are ignored, as peers are
    /// not consistent about them). Fails for a kind other than UDPv4 and for port 0
    /// (`LOCATOR_PORT_INVALID`) or a port above 65535.
    pub fn from_raw(kind: i32, port: u32, address: [u8; 16]) -> Result<Self, LocatorError> {
        if kind != LOCATOR_KIND_UDPV4 {
            return Err(LocatorError::NotUdpV4(kind));
        }
        let port = match u16::try_from(port) {
            Ok(p) if p != 0 => p,
            _ => return Err(LocatorError::InvalidPort(port)),
        };
        let ip = Ipv4Addr::new(address[12], address[13], address[14], address[15]);
        Ok(Self::new(ip, port))
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
    fn raw_round_trip() {
        let loc = UdpLocator::new(Ipv4Addr::new(192, 168, 1, 20), 7411);
        let (kind, port, address) = loc.to_raw();
        assert_eq!(kind, 1);
        assert_eq!(port, 7411);
        assert_eq!(address[..12], [0u8; 12]);
        assert_eq!(address[12..], [192, 168, 1, 20]);
        assert_eq!(UdpLocator::from_raw(kind, port, address).unwrap(), loc);
    }

    #[test]
    fn from_raw_rejects_other_kinds_and_bad_ports() {
        let mut a = [0u8; 16];
        a[12..].copy_from_slice(&[127, 0, 0, 1]);
        assert_eq!(
            UdpLocator::from_raw(2, 7400, a),
            Err(LocatorError::NotUdpV4(2))
        );
        assert_eq!(
            UdpLocator::from_raw(1, 0, a),
            Err(LocatorError::InvalidPort(0))
        );
        assert_eq!(
            UdpLocator::from_raw(1, 70_000, a),
            Err(LocatorError::InvalidPort(70_000))
        );
    }

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
