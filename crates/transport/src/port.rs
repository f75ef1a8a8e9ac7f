//! The RTPS well-known port mapping (DDSI-RTPS 2.5 §9.6.1.1).
//!
//! ```text
//! SPDP multicast = PB + DG * domain + d0
//! SPDP unicast   = PB + DG * domain + d1 + PG * participant
//! user multicast = PB + DG * domain + d2
//! user unicast   = PB + DG * domain + d3 + PG * participant
//! ```

use crate::error::PortError;

/// Highest participant id probed by [`crate::UdpTransport`] (ids are `0..=MAX_PARTICIPANT_ID`).
pub const MAX_PARTICIPANT_ID: u32 = 119;

/// Parameters of the RTPS port formula; [`Default`] gives the values of the specification
/// (PB 7400, DG 250, PG 2, d0 0, d1 10, d2 1, d3 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PortMapping {
    /// Port base `PB`.
    pub port_base: u32,
    /// Domain id gain `DG`.
    pub domain_id_gain: u32,
    /// Participant id gain `PG`.
    pub participant_id_gain: u32,
    /// Offset `d0` of the SPDP (metatraffic) multicast port.
    pub offset_d0: u32,
    /// Offset `d1` of the SPDP (metatraffic) unicast port.
    pub offset_d1: u32,
    /// Offset `d2` of the user-data multicast port.
    pub offset_d2: u32,
    /// Offset `d3` of the user-data unicast port.
    pub offset_d3: u32,
}

impl Default for PortMapping {
    fn default() -> Self {
        Self::RTPS_DEFAULT
    }
}

/// The four ports of one participant, as computed by [`PortMapping::ports`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ParticipantPorts {
    /// SPDP (metatraffic) multicast port.
    pub spdp_multicast: u16,
    /// SPDP (metatraffic) unicast port.
    pub spdp_unicast: u16,
    /// User-data multicast port.
    pub user_multicast: u16,
    /// User-data unicast port.
    pub user_unicast: u16,
}

impl PortMapping {
    /// The values of the RTPS specification.
    pub const RTPS_DEFAULT: Self = Self {
        port_base: 7400,
        domain_id_gain: 250,
        participant_id_gain: 2,
        offset_d0: 0,
        offset_d1: 10,
        offset_d2: 1,
        offset_d3: 11,
    };

    fn compute(
        &self,
        what: &'static str,
        domain_id: u32,
        participant_id: Option<u32>,
        offset: u32,
    ) -> Result<u16, PortError> {
        let port = u64::from(self.port_base)
            + u64::from(self.domain_id_gain) * u64::from(domain_id)
            + u64::from(offset)
            + u64::from(self.participant_id_gain) * u64::from(participant_id.unwrap_or(0));
        match u16::try_from(port) {
            Ok(p) if p != 0 => Ok(p),
            _ => Err(PortError {
                what,
                domain_id,
                participant_id,
                port,
            }),
        }
    }

    /// SPDP (metatraffic) multicast port `PB + DG*domain + d0`.
    pub fn spdp_multicast_port(&self, domain_id: u32) -> Result<u16, PortError> {
        self.compute("SPDP multicast", domain_id, None, self.offset_d0)
    }

    /// SPDP (metatraffic) unicast port `PB + DG*domain + d1 + PG*participant`.
    pub fn spdp_unicast_port(&self, domain_id: u32, participant_id: u32) -> Result<u16, PortError> {
        self.compute(
            "SPDP unicast",
            domain_id,
            Some(participant_id),
            self.offset_d1,
        )
    }

    /// User-data multicast port `PB + DG*domain + d2`.
    pub fn user_multicast_port(&self, domain_id: u32) -> Result<u16, PortError> {
        self.compute("user multicast", domain_id, None, self.offset_d2)
    }

    /// User-data unicast port `PB + DG*domain + d3 + PG*participant`.
    pub fn user_unicast_port(&self, domain_id: u32, participant_id: u32) -> Result<u16, PortError> {
        self.compute(
            "user unicast",
            domain_id,
            Some(participant_id),
            self.offset_d3,
        )
    }

    /// All four ports of a participant; fails if any of them is out of range.
    pub fn ports(
        &self,
        domain_id: u32,
        participant_id: u32,
    ) -> Result<ParticipantPorts, PortError> {
        Ok(ParticipantPorts {
            spdp_multicast: self.spdp_multicast_port(domain_id)?,
            spdp_unicast: self.spdp_unicast_port(domain_id, participant_id)?,
            user_multicast: self.user_multicast_port(domain_id)?,
            user_unicast: self.user_unicast_port(domain_id, participant_id)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_domain0_participant0() {
        let p = PortMapping::default().ports(0, 0).unwrap();
        assert_eq!(
            (
                p.spdp_multicast,
                p.spdp_unicast,
                p.user_multicast,
                p.user_unicast
            ),
            (7400, 7410, 7401, 7411)
        );
    }

    #[test]
    fn golden_domain1_participant2() {
        let p = PortMapping::default().ports(1, 2).unwrap();
        assert_eq!(
            (
                p.spdp_multicast,
                p.spdp_unicast,
                p.user_multicast,
                p.user_unicast
            ),
            (7650, 7664, 7651, 7665)
        );
    }

    #[test]
    fn participant_ids_step_by_two() {
        let m = PortMapping::default();
        assert_eq!(m.spdp_unicast_port(0, 1).unwrap(), 7412);
        assert_eq!(m.user_unicast_port(0, 1).unwrap(), 7413);
        assert_eq!(m.spdp_unicast_port(0, 119).unwrap(), 7648);
    }

    #[test]
    fn highest_domains() {
        let m = PortMapping::default();
        // 7400 + 250*232 + 11 + 2*0 = 65411 still fits; domain 233 does not fit at all.
        assert_eq!(m.user_unicast_port(232, 0).unwrap(), 65411);
        assert!(m.ports(232, 119).is_err());
        let err = m.spdp_multicast_port(233).unwrap_err();
        assert_eq!(err.port, 7400 + 250 * 233);
        assert_eq!(err.domain_id, 233);
        assert_eq!(err.participant_id, None);
    }

    #[test]
    fn too_large_domain_is_an_error_not_a_wrap() {
        let err = PortMapping::default().ports(1000, 0).unwrap_err();
        assert_eq!(err.port, 257_400);
        assert_eq!(err.what, "SPDP multicast");
        let err = PortMapping::default()
            .user_unicast_port(u32::MAX, u32::MAX)
            .unwrap_err();
        assert!(err.port > 65535);
        assert_eq!(err.participant_id, Some(u32::MAX));
        assert!(err.to_string().contains("participant"));
    }

    #[test]
    fn overrides_are_used() {
        let m = PortMapping {
            port_base: 20000,
            domain_id_gain: 100,
            participant_id_gain: 4,
            offset_d0: 1,
            offset_d1: 2,
            offset_d2: 3,
            offset_d3: 5,
        };
        let p = m.ports(2, 3).unwrap();
        assert_eq!(p.spdp_multicast, 20201);
        assert_eq!(p.spdp_unicast, 20214);
        assert_eq!(p.user_multicast, 20203);
        assert_eq!(p.user_unicast, 20217);
    }

    #[test]
    fn port_zero_is_rejected() {
        let m = PortMapping {
            port_base: 0,
            offset_d0: 0,
            ..PortMapping::default()
        };
        assert!(m.spdp_multicast_port(0).is_err());
    }
}
