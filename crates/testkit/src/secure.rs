//! DDS Security in the simulated network: a test PKI made at run time (one CA signing the
//! identities, the governance and the permissions), seeded entropy, and the builtin plugins
//! of a participant ([`TestSecurity::plugin`]).
//!
//! Certificates and grants are valid from [`VALID_FROM`] to [`VALID_TO`] (Unix seconds):
//! around the simulated wall clock ([`crate::WALL_CLOCK_START_NS`]) and the real one
//! (OpenSSL checks S/MIME signer certificates against the system clock).

use ferrodds_rtps::GuidPrefix;
use ferrodds_security::auth::pki::{generate_ca, issue_identity, sign_smime, Issued};
use ferrodds_security::auth::{AuthError, Entropy, IdentityAlgo, LocalIdentity};
use ferrodds_security::engine::{BuiltinSecurity, EngineSecurityError, WallClock};
use ferrodds_security::generic_message::ENTITYID_PARTICIPANT;

use crate::{Rng, Timestamp, WALL_CLOCK_START_NS};

/// Start of every test certificate's and grant's validity (2025-01-01T00:00:00Z).
pub const VALID_FROM: i64 = 1_735_689_600;
/// End of it (2099-01-01T00:00:00Z).
pub const VALID_TO: i64 = 4_070_908_800;

/// Deterministic [`Entropy`] for simulations (splitmix64; not for real use).
#[derive(Debug, Clone)]
pub struct SeededEntropy(Rng);

impl SeededEntropy {
    /// Seeded generator.
    pub fn new(seed: u64) -> Self {
        Self(Rng::new(seed))
    }
}

impl Entropy for SeededEntropy {
    fn fill(&mut self, buf: &mut [u8]) -> Result<(), AuthError> {
        for chunk in buf.chunks_mut(8) {
            let v = self.0.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        Ok(())
    }
}

/// A governance document for domains 0-230: join access control on, no protection of any
/// kind (step 1 of DDS Security: authentication and access control without crypto).
pub fn governance_xml(allow_unauthenticated: bool) -> String {
    governance_xml_with(allow_unauthenticated, "NONE")
}

/// Like [`governance_xml`] with `rtps_protection_kind` = `rtps` (`NONE`, `SIGN`, `ENCRYPT`).
pub fn governance_xml_with(allow_unauthenticated: bool, rtps: &str) -> String {
    governance_xml_protecting(allow_unauthenticated, rtps, "NONE", "NONE")
}

/// [`governance_xml_with`] whose topic rule has `metadata_protection_kind` `metadata` and
/// `data_protection_kind` `data`.
pub fn governance_xml_protecting(
    allow_unauthenticated: bool,
    rtps: &str,
    metadata: &str,
    data: &str,
) -> String {
    let allow = if allow_unauthenticated {
        "TRUE"
    } else {
        "FALSE"
    };
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<dds>
  <domain_access_rules>
    <domain_rule>
      <domains><id_range><min>0</min><max>230</max></id_range></domains>
      <allow_unauthenticated_participants>{allow}</allow_unauthenticated_participants>
      <enable_join_access_control>TRUE</enable_join_access_control>
      <discovery_protection_kind>NONE</discovery_protection_kind>
      <liveliness_protection_kind>NONE</liveliness_protection_kind>
      <rtps_protection_kind>{rtps}</rtps_protection_kind>
      <topic_access_rules>
        <topic_rule>
          <topic_expression>*</topic_expression>
          <enable_discovery_protection>FALSE</enable_discovery_protection>
          <enable_liveliness_protection>FALSE</enable_liveliness_protection>
          <enable_read_access_control>FALSE</enable_read_access_control>
          <enable_write_access_control>FALSE</enable_write_access_control>
          <metadata_protection_kind>{metadata}</metadata_protection_kind>
          <data_protection_kind>{data}</data_protection_kind>
        </topic_rule>
      </topic_access_rules>
    </domain_rule>
  </domain_access_rules>
</dds>
"#
    )
}

/// A governance document as [`governance_xml_protecting`] (unauthenticated participants not
/// allowed, join access control off), signed with the CA whose PEM certificate and private
/// key are given (e.g. perftest's test CA): the S/MIME document a participant loads.
pub fn signed_governance_with_ca(
    ca_cert_pem: &[u8],
    ca_key_pem: &[u8],
    rtps: &str,
    metadata: &str,
    data: &str,
) -> Result<Vec<u8>, AuthError> {
    signed_governance_discovery(ca_cert_pem, ca_key_pem, rtps, metadata, data, None)
}

/// [`signed_governance_with_ca`] with discovery protection: `discovery` `Some(kind)` sets the
/// domain rule's `discovery_protection_kind` to `kind` and the topic rule's
/// `enable_discovery_protection` to TRUE.
pub fn signed_governance_discovery(
    ca_cert_pem: &[u8],
    ca_key_pem: &[u8],
    rtps: &str,
    metadata: &str,
    data: &str,
    discovery: Option<&str>,
) -> Result<Vec<u8>, AuthError> {
    let ca = Issued::from_pem(ca_cert_pem, ca_key_pem)?;
    let mut xml = governance_xml_protecting(false, rtps, metadata, data).replace(
        "<enable_join_access_control>TRUE",
        "<enable_join_access_control>FALSE",
    );
    if let Some(kind) = discovery {
        xml = xml
            .replace(
                "<discovery_protection_kind>NONE",
                &format!("<discovery_protection_kind>{kind}"),
            )
            .replace(
                "<enable_discovery_protection>FALSE",
                "<enable_discovery_protection>TRUE",
            );
    }
    sign_smime(xml.as_bytes(), &ca)
}

/// A permissions document granting each common name (subject `CN=<cn>,O=FerroDDS test
/// PKI,C=NL`) publish and subscribe on every topic in domains 0-230.
pub fn permissions_xml(common_names: &[&str]) -> String {
    let mut grants = String::new();
    for cn in common_names {
        grants.push_str(&format!(
            r#"    <grant name="{cn}">
      <subject_name>CN={cn},O=FerroDDS test PKI,C=NL</subject_name>
      <validity><not_before>2025-01-01T00:00:00</not_before><not_after>2099-01-01T00:00:00</not_after></validity>
      <allow_rule>
        <domains><id_range><min>0</min><max>230</max></id_range></domains>
        <publish><topics><topic>*</topic></topics><partitions><partition>*</partition><partition></partition></partitions></publish>
        <subscribe><topics><topic>*</topic></topics><partitions><partition>*</partition><partition></partition></partitions></subscribe>
      </allow_rule>
      <default>DENY</default>
    </grant>
"#
        ));
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<dds>\n  <permissions>\n{grants}  </permissions>\n</dds>\n"
    )
}

/// A test PKI: one CA (identity and permissions CA), the signed governance and permissions.
#[derive(Debug, Clone)]
pub struct TestSecurity {
    /// The CA.
    pub ca: Issued,
    /// The signed governance document.
    pub governance: Vec<u8>,
    /// The signed permissions document (grants for the common names given).
    pub permissions: Vec<u8>,
    serial: u32,
}

impl TestSecurity {
    /// A CA named `ca_name`, governance per [`governance_xml`], permissions for
    /// `common_names`.
    pub fn new(
        ca_name: &str,
        allow_unauthenticated: bool,
        common_names: &[&str],
    ) -> Result<Self, AuthError> {
        Self::with_rtps_protection(ca_name, allow_unauthenticated, common_names, "NONE")
    }

    /// A CA named `ca_name` that signs the given governance and permissions documents.
    pub fn from_documents(
        ca_name: &str,
        governance_xml: &str,
        permissions_xml: &str,
    ) -> Result<Self, AuthError> {
        let ca = generate_ca(ca_name, IdentityAlgo::EcPrime256v1, VALID_FROM, VALID_TO)?;
        let governance = sign_smime(governance_xml.as_bytes(), &ca)?;
        let permissions = sign_smime(permissions_xml.as_bytes(), &ca)?;
        Ok(Self {
            ca,
            governance,
            permissions,
            serial: 1,
        })
    }

    /// Like [`TestSecurity::new`] with the governance's `rtps_protection_kind` = `rtps`.
    pub fn with_rtps_protection(
        ca_name: &str,
        allow_unauthenticated: bool,
        common_names: &[&str],
        rtps: &str,
    ) -> Result<Self, AuthError> {
        Self::with_protection(
            ca_name,
            allow_unauthenticated,
            common_names,
            rtps,
            "NONE",
            "NONE",
        )
    }

    /// Like [`TestSecurity::with_rtps_protection`], with the topic rule's
    /// `metadata_protection_kind` `metadata` (submessage protection) and
    /// `data_protection_kind` `data` (payload protection).
    pub fn with_protection(
        ca_name: &str,
        allow_unauthenticated: bool,
        common_names: &[&str],
        rtps: &str,
        metadata: &str,
        data: &str,
    ) -> Result<Self, AuthError> {
        let ca = generate_ca(ca_name, IdentityAlgo::EcPrime256v1, VALID_FROM, VALID_TO)?;
        let governance = sign_smime(
            governance_xml_protecting(allow_unauthenticated, rtps, metadata, data).as_bytes(),
            &ca,
        )?;
        let permissions = sign_smime(permissions_xml(common_names).as_bytes(), &ca)?;
        Ok(Self {
            ca,
            governance,
            permissions,
            serial: 1,
        })
    }

    /// The builtin plugins of a participant with a new identity `common_name` signed by
    /// this CA, in `domain_id`, GUID adjusted from `candidate`, entropy seeded with `seed`,
    /// validated at the simulated wall clock of virtual time `now`.
    pub fn plugin(
        &mut self,
        common_name: &str,
        candidate: GuidPrefix,
        domain_id: u32,
        seed: u64,
        now: Timestamp,
    ) -> Result<Box<BuiltinSecurity>, EngineSecurityError> {
        self.serial += 1;
        let id = issue_identity(
            &self.ca,
            common_name,
            IdentityAlgo::EcPrime256v1,
            self.serial,
            VALID_FROM,
            VALID_TO,
        )?;
        self.plugin_for(id, &self.ca.clone(), candidate, domain_id, seed, now)
    }

    /// Like [`TestSecurity::plugin`] with an identity `id` issued by `identity_ca` (possibly
    /// another CA than this one; governance and permissions stay this one's).
    pub fn plugin_for(
        &self,
        id: Issued,
        identity_ca: &Issued,
        candidate: GuidPrefix,
        domain_id: u32,
        seed: u64,
        now: Timestamp,
    ) -> Result<Box<BuiltinSecurity>, EngineSecurityError> {
        use ferrodds_security::access::{AccessControl, Governance, PermissionsCa, SubjectName};
        let clock = WallClock {
            unix_ns_at_zero: i128::from(WALL_CLOCK_START_NS),
        };
        let mut guid = [0u8; 16];
        guid[..12].copy_from_slice(&candidate.0);
        guid[12..].copy_from_slice(&ENTITYID_PARTICIPANT);
        let identity = LocalIdentity::from_parts(
            identity_ca.cert.clone(),
            id.cert,
            id.key,
            &guid,
            clock.unix_secs(now),
            "identity_certificate",
            "private_key",
        )?;
        let pem = self.ca.cert_pem().map_err(EngineSecurityError::Auth)?;
        let ca = PermissionsCa::from_pem(&pem, "permissions_ca")?;
        let gov = Governance::from_signed(&self.governance, "governance", &ca)?;
        let subject = SubjectName::from_x509(identity.certificate().subject_name());
        let access = AccessControl::new(ca, gov, &self.permissions, "permissions", &subject)?;
        Ok(Box::new(BuiltinSecurity::new(
            identity,
            access,
            domain_id,
            clock,
            now,
            Box::new(SeededEntropy::new(seed)),
        )?))
    }
}
