//! Network interface enumeration and selection (IPv4 only).

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use crate::error::TransportError;

/// One IPv4 address of a network interface.
///
/// An interface with several IPv4 addresses appears once per address in
/// [`list_interfaces`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NetworkInterface {
    /// System name, such as `lo` or `eth0`.
    pub name: String,
    /// OS interface index.
    pub index: u32,
    /// The IPv4 address.
    pub address: Ipv4Addr,
    /// Prefix length of the address' subnet.
    pub prefix_len: u8,
    /// Whether this is a loopback interface.
    pub loopback: bool,
    /// Whether the interface supports multicast (the `MULTICAST` flag).
    pub multicast: bool,
    /// Whether the interface is administratively up.
    pub up: bool,
    /// The MTU in bytes, when the system reports it.
    pub mtu: Option<u32>,
}

/// Lists every IPv4 address of every network interface, ordered by interface index (the
/// system's `getifaddrs`, through `nix`; the MTU from `/sys/class/net`).
pub fn list_interfaces() -> Vec<NetworkInterface> {
    use nix::net::if_::InterfaceFlags;
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    let mut out: Vec<NetworkInterface> = addrs
        .filter_map(|a| {
            let address = a.address.as_ref()?.as_sockaddr_in()?.ip();
            let prefix_len = a
                .netmask
                .as_ref()
                .and_then(|m| m.as_sockaddr_in())
                .map_or(32, |m| u32::from(m.ip()).count_ones() as u8);
            let flags = a.flags;
            Some(NetworkInterface {
                index: nix::net::if_::if_nametoindex(a.interface_name.as_str()).unwrap_or(0),
                mtu: mtu_of(&a.interface_name),
                name: a.interface_name,
                address,
                prefix_len,
                loopback: flags.contains(InterfaceFlags::IFF_LOOPBACK),
                multicast: flags.contains(InterfaceFlags::IFF_MULTICAST),
                up: flags.contains(InterfaceFlags::IFF_UP),
            })
        })
        .collect();
    // Stable: an interface's addresses keep the system's order.
    out.sort_by_key(|i| i.index);
    out
}

/// The MTU of interface `name`, when the system reports it.
fn mtu_of(name: &str) -> Option<u32> {
    if name.contains('/') || name.starts_with('.') {
        return None;
    }
    std::fs::read_to_string(format!("/sys/class/net/{name}/mtu"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// How the transport chooses its network interface.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum InterfaceSelector {
    /// The first interface (by index) that is up, not loopback, multicast-capable and has an
    /// IPv4 address; failing that, the first up loopback interface.
    #[default]
    Default,
    /// The interface with this system name (its first IPv4 address).
    Name(String),
    /// The interface carrying this IPv4 address.
    Address(Ipv4Addr),
}

impl InterfaceSelector {
    /// Resolves the selector against the interfaces of this host.
    pub fn resolve(&self) -> Result<NetworkInterface, TransportError> {
        self.resolve_in(&list_interfaces())
    }

    /// Resolves the selector against a given interface list (as returned by
    /// [`list_interfaces`]).
    pub fn resolve_in(
        &self,
        interfaces: &[NetworkInterface],
    ) -> Result<NetworkInterface, TransportError> {
        let found = match self {
            Self::Default => interfaces
                .iter()
                .find(|i| i.up && !i.loopback && i.multicast)
                .or_else(|| interfaces.iter().find(|i| i.up && i.loopback))
                .ok_or(TransportError::NoUsableInterface)?,
            Self::Name(name) => interfaces
                .iter()
                .find(|i| &i.name == name)
                .ok_or_else(|| TransportError::InterfaceNotFound { name: name.clone() })?,
            Self::Address(addr) => interfaces
                .iter()
                .find(|i| i.address == *addr)
                .ok_or(TransportError::AddressNotFound { addr: *addr })?,
        };
        Ok(found.clone())
    }
}

impl FromStr for InterfaceSelector {
    type Err = std::convert::Infallible;

    /// `""` or `"default"` give [`InterfaceSelector::Default`], a dotted IPv4 address gives
    /// [`InterfaceSelector::Address`], anything else an interface name.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() || s.eq_ignore_ascii_case("default") {
            Ok(Self::Default)
        } else if let Ok(addr) = s.parse::<Ipv4Addr>() {
            Ok(Self::Address(addr))
        } else {
            Ok(Self::Name(s.to_owned()))
        }
    }
}

impl From<Ipv4Addr> for InterfaceSelector {
    fn from(addr: Ipv4Addr) -> Self {
        Self::Address(addr)
    }
}

impl From<&str> for InterfaceSelector {
    fn from(s: &str) -> Self {
        match s.parse() {
            Ok(sel) => sel,
            Err(never) => match never {},
        }
    }
}

impl fmt::Display for InterfaceSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::Name(n) => f.write_str(n),
            Self::Address(a) => write!(f, "{a}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iface(name: &str, index: u32, addr: [u8; 4], loopback: bool, mc: bool) -> NetworkInterface {
        NetworkInterface {
            name: name.to_owned(),
            index,
            address: Ipv4Addr::from(addr),
            prefix_len: 24,
            loopback,
            multicast: mc,
            up: true,
            mtu: Some(1500),
        }
    }

    fn sample() -> Vec<NetworkInterface> {
        vec![
            iface("lo", 1, [127, 0, 0, 1], true, false),
            iface("tun0", 2, [10, 8, 0, 2], false, false),
            iface("eth0", 3, [192, 0, 2, 2], false, true),
            iface("eth0", 3, [192, 0, 2, 3], false, true),
        ]
    }

    #[test]
    fn parse_selectors() {
        assert_eq!(
            "lo".parse::<InterfaceSelector>().unwrap(),
            InterfaceSelector::Name("lo".into())
        );
        assert_eq!(
            InterfaceSelector::from("127.0.0.1"),
            InterfaceSelector::Address(Ipv4Addr::LOCALHOST)
        );
        assert_eq!(InterfaceSelector::from(""), InterfaceSelector::Default);
        assert_eq!(
            InterfaceSelector::from("Default"),
            InterfaceSelector::Default
        );
        assert_eq!(InterfaceSelector::from("eth0").to_string(), "eth0");
    }

    #[test]
    fn default_prefers_multicast_non_loopback() {
        let got = InterfaceSelector::Default.resolve_in(&sample()).unwrap();
        assert_eq!(got.name, "eth0");
        assert_eq!(got.address, Ipv4Addr::new(192, 0, 2, 2));
    }

    #[test]
    fn default_falls_back_to_loopback_and_skips_down() {
        let mut list = sample();
        list[2].up = false;
        list[3].up = false;
        assert_eq!(
            InterfaceSelector::Default.resolve_in(&list).unwrap().name,
            "lo"
        );
        list[0].up = false;
        assert!(matches!(
            InterfaceSelector::Default.resolve_in(&list),
            Err(TransportError::NoUsableInterface)
        ));
    }

    #[test]
    fn by_name_and_address() {
        let list = sample();
        let by_name = InterfaceSelector::Name("tun0".into()).resolve_in(&list);
        assert_eq!(by_name.unwrap().address, Ipv4Addr::new(10, 8, 0, 2));
        let by_addr = InterfaceSelector::Address(Ipv4Addr::new(192, 0, 2, 3)).resolve_in(&list);
        assert_eq!(by_addr.unwrap().name, "eth0");
    }

    #[test]
    fn missing_name_or_address_is_typed() {
        let list = sample();
        match InterfaceSelector::Name("wlan9".into()).resolve_in(&list) {
            Err(TransportError::InterfaceNotFound { name }) => assert_eq!(name, "wlan9"),
            other => panic!("unexpected {other:?}"),
        }
        match InterfaceSelector::Address(Ipv4Addr::new(203, 0, 113, 9)).resolve_in(&list) {
            Err(TransportError::AddressNotFound { addr }) => {
                assert_eq!(addr, Ipv4Addr::new(203, 0, 113, 9))
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn host_has_loopback() {
        let list = list_interfaces();
        let lo = list
            .iter()
            .find(|i| i.address == Ipv4Addr::LOCALHOST)
            .expect("127.0.0.1 is on some interface");
        assert!(lo.loopback);
        assert!(lo.up);
    }
}
