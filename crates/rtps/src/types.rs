//! Wire value types (GUIDs, sequence numbers, locators, time).
//!
//! These mirror the shapes of the `ferrodds-wire` value types field for
//! field; they will become re-exports of that crate once it exports them.

/// GUID prefix (12 octets) of a participant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GuidPrefix(pub [u8; 12]);

impl GuidPrefix {
    /// `GUIDPREFIX_UNKNOWN`.
    pub const UNKNOWN: Self = Self([0; 12]);
}

/// Entity id: 3 key octets + 1 kind octet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EntityId(pub [u8; 4]);

impl EntityId {
    /// `ENTITYID_UNKNOWN`.
    pub const UNKNOWN: Self = Self([0; 4]);
    /// The participant entity.
    pub const PARTICIPANT: Self = Self([0, 0, 0x01, 0xc1]);
}

/// Globally unique id: prefix + entity id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Guid {
    /// Participant prefix.
    pub prefix: GuidPrefix,
    /// Entity within the participant.
    pub entity_id: EntityId,
}

impl Guid {
    /// Builds a GUID.
    #[must_use]
    pub const fn new(prefix: GuidPrefix, entity_id: EntityId) -> Self {
        Self { prefix, entity_id }
    }

    /// From the 16 wire octets.
    #[must_use]
    pub fn from_bytes(b: [u8; 16]) -> Self {
        let mut p = [0u8; 12];
        p.copy_from_slice(&b[..12]);
        Self {
            prefix: GuidPrefix(p),
            entity_id: EntityId([b[12], b[13], b[14], b[15]]),
        }
    }

    /// The 16 wire octets.
    #[must_use]
    pub fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..12].copy_from_slice(&self.prefix.0);
        b[12..].copy_from_slice(&self.entity_id.0);
        b
    }
}

/// Sequence number (first is 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SequenceNumber(pub i64);

/// Transport locator: kind, port, 16-octet address (IPv4 in the last 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Locator {
    /// Locator kind (1 = UDPv4).
    pub kind: i32,
    /// Port.
    pub port: u32,
    /// Address.
    pub address: [u8; 16],
}

impl Locator {
    /// `LOCATOR_KIND_UDPv4`.
    pub const KIND_UDPV4: i32 = 1;

    /// A UDPv4 locator.
    #[must_use]
    pub fn udpv4(addr: core::net::Ipv4Addr, port: u16) -> Self {
        let mut address = [0u8; 16];
        address[12..].copy_from_slice(&addr.octets());
        Self {
            kind: Self::KIND_UDPV4,
            port: u32::from(port),
            address,
        }
    }
}

/// RTPS time: seconds + fraction (2^-32 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Time {
    /// Seconds since the epoch.
    pub seconds: i32,
    /// Fraction in units of 2^-32 s.
    pub fraction: u32,
}
