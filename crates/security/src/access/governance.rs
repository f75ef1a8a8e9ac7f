//! The governance document (`dds/domain_access_rules/domain_rule`) and its protection kinds.

use std::fmt;

use roxmltree::Node;

use super::xml::{parse_dds, Doc};
use super::{AccessError, DomainSet, Expression};

/// A protection kind of `discovery_protection_kind`, `liveliness_protection_kind`,
/// `rtps_protection_kind` or `metadata_protection_kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProtectionKind {
    /// `NONE`: no cryptographic transformation.
    None,
    /// `SIGN`: a message authentication code (AES-GMAC), plaintext visible.
    Sign,
    /// `ENCRYPT`: authenticated encryption (AES-GCM).
    Encrypt,
    /// `SIGN_WITH_ORIGIN_AUTHENTICATION`: `SIGN` plus one receiver-specific MAC per destination.
    SignWithOriginAuthentication,
    /// `ENCRYPT_WITH_ORIGIN_AUTHENTICATION`: `ENCRYPT` plus receiver-specific MACs.
    EncryptWithOriginAuthentication,
}

impl ProtectionKind {
    /// The valid spellings, as listed in errors.
    pub const VALID: &'static str =
        "NONE, SIGN, ENCRYPT, SIGN_WITH_ORIGIN_AUTHENTICATION, ENCRYPT_WITH_ORIGIN_AUTHENTICATION";

    /// Parses the exact XSD spelling.
    pub fn from_xml(s: &str) -> Option<Self> {
        Some(match s {
            "NONE" => Self::None,
            "SIGN" => Self::Sign,
            "ENCRYPT" => Self::Encrypt,
            "SIGN_WITH_ORIGIN_AUTHENTICATION" => Self::SignWithOriginAuthentication,
            "ENCRYPT_WITH_ORIGIN_AUTHENTICATION" => Self::EncryptWithOriginAuthentication,
            _ => return None,
        })
    }

    /// The XSD spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "NONE",
            Self::Sign => "SIGN",
            Self::Encrypt => "ENCRYPT",
            Self::SignWithOriginAuthentication => "SIGN_WITH_ORIGIN_AUTHENTICATION",
            Self::EncryptWithOriginAuthentication => "ENCRYPT_WITH_ORIGIN_AUTHENTICATION",
        }
    }

    /// Anything but `NONE`.
    pub fn is_protected(self) -> bool {
        self != Self::None
    }

    /// `ENCRYPT` or `ENCRYPT_WITH_ORIGIN_AUTHENTICATION`.
    pub fn is_encrypted(self) -> bool {
        matches!(self, Self::Encrypt | Self::EncryptWithOriginAuthentication)
    }

    /// One of the `*_WITH_ORIGIN_AUTHENTICATION` kinds.
    pub fn is_origin_authenticated(self) -> bool {
        matches!(
            self,
            Self::SignWithOriginAuthentication | Self::EncryptWithOriginAuthentication
        )
    }
}

impl fmt::Display for ProtectionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `data_protection_kind` (payload protection has no origin authentication).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BasicProtectionKind {
    /// `NONE`.
    None,
    /// `SIGN`: AES-GMAC over the payload.
    Sign,
    /// `ENCRYPT`: AES-GCM of the payload.
    Encrypt,
}

impl BasicProtectionKind {
    /// The valid spellings, as listed in errors.
    pub const VALID: &'static str = "NONE, SIGN, ENCRYPT";

    /// Parses the exact XSD spelling.
    pub fn from_xml(s: &str) -> Option<Self> {
        Some(match s {
            "NONE" => Self::None,
            "SIGN" => Self::Sign,
            "ENCRYPT" => Self::Encrypt,
            _ => return None,
        })
    }

    /// The XSD spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "NONE",
            Self::Sign => "SIGN",
            Self::Encrypt => "ENCRYPT",
        }
    }
}

impl fmt::Display for BasicProtectionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `topic_rule`: the settings of the topics its `topic_expression` matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicRule {
    /// `topic_expression` (fnmatch style).
    pub topic_expression: Expression,
    /// `enable_discovery_protection`.
    pub enable_discovery_protection: bool,
    /// `enable_liveliness_protection`.
    pub enable_liveliness_protection: bool,
    /// `enable_read_access_control`.
    pub enable_read_access_control: bool,
    /// `enable_write_access_control`.
    pub enable_write_access_control: bool,
    /// `metadata_protection_kind` (submessage protection).
    pub metadata_protection_kind: ProtectionKind,
    /// `data_protection_kind` (serialized payload protection).
    pub data_protection_kind: BasicProtectionKind,
}

/// One `domain_rule`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainRule {
    /// The domain ids it covers.
    pub domains: DomainSet,
    /// `allow_unauthenticated_participants`.
    pub allow_unauthenticated_participants: bool,
    /// `enable_join_access_control`.
    pub enable_join_access_control: bool,
    /// `discovery_protection_kind`.
    pub discovery_protection_kind: ProtectionKind,
    /// `liveliness_protection_kind`.
    pub liveliness_protection_kind: ProtectionKind,
    /// `rtps_protection_kind`.
    pub rtps_protection_kind: ProtectionKind,
    /// `topic_access_rules/topic_rule`, in document order (the first match applies).
    pub topic_rules: Vec<TopicRule>,
}

impl DomainRule {
    /// The first topic rule whose expression matches `topic`.
    pub fn topic_rule(&self, topic: &str) -> Option<&TopicRule> {
        self.topic_rules
            .iter()
            .find(|r| r.topic_expression.matches(topic))
    }
}

/// A parsed governance document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Governance {
    /// Where it came from (file name or caller-given label), used in errors.
    pub source: String,
    /// The domain rules in document order (the first that covers a domain applies).
    pub domain_rules: Vec<DomainRule>,
}

impl Governance {
    /// Parses the XML of a governance document (already verified, or for tests and fuzzing);
    /// `file` names it in errors.
    pub fn parse_xml(xml: &str, file: &str) -> Result<Self, AccessError> {
        let doc = parse_dds(xml, file)?;
        let d = Doc { file, doc: &doc };
        let root = doc.root_element();
        let kids = d.children(root, &["domain_access_rules"])?;
        let rules_node = d.one(root, &kids, "domain_access_rules")?;
        let mut domain_rules = Vec::new();
        for rule in d.children(rules_node, &["domain_rule"])? {
            domain_rules.push(domain_rule(&d, rule)?);
        }
        if domain_rules.is_empty() {
            return Err(AccessError::MissingElement {
                file: file.to_owned(),
                line: d.line(rules_node),
                parent: "domain_access_rules".to_owned(),
                element: "domain_rule",
            });
        }
        Ok(Self {
            source: file.to_owned(),
            domain_rules,
        })
    }

    /// The first domain rule covering `domain_id`.
    pub fn domain_rule(&self, domain_id: u32) -> Option<&DomainRule> {
        self.domain_rules
            .iter()
            .find(|r| r.domains.contains(domain_id))
    }
}

fn domain_rule<'a, 'i>(d: &Doc<'a, 'i>, node: Node<'a, 'i>) -> Result<DomainRule, AccessError> {
    let kids = d.children(
        node,
        &[
            "domains",
            "allow_unauthenticated_participants",
            "enable_join_access_control",
            "discovery_protection_kind",
            "liveliness_protection_kind",
            "rtps_protection_kind",
            "topic_access_rules",
        ],
    )?;
    let kind = |name: &'static str| -> Result<ProtectionKind, AccessError> {
        let n = d.one(node, &kids, name)?;
        let v = d.text(n)?;
        ProtectionKind::from_xml(&v).ok_or_else(|| d.invalid(n, &v, ProtectionKind::VALID))
    };
    let flag = |name: &'static str| d.boolean(d.one(node, &kids, name)?);
    let domains = d.domains(d.one(node, &kids, "domains")?)?;
    let allow_unauthenticated_participants = flag("allow_unauthenticated_participants")?;
    let enable_join_access_control = flag("enable_join_access_control")?;
    let discovery_protection_kind = kind("discovery_protection_kind")?;
    let liveliness_protection_kind = kind("liveliness_protection_kind")?;
    let rtps_protection_kind = kind("rtps_protection_kind")?;
    let tar = d.one(node, &kids, "topic_access_rules")?;
    let mut topic_rules = Vec::new();
    for tr in d.children(tar, &["topic_rule"])? {
        topic_rules.push(topic_rule(d, tr)?);
    }
    Ok(DomainRule {
        domains,
        allow_unauthenticated_participants,
        enable_join_access_control,
        discovery_protection_kind,
        liveliness_protection_kind,
        rtps_protection_kind,
        topic_rules,
    })
}

fn topic_rule<'a, 'i>(d: &Doc<'a, 'i>, node: Node<'a, 'i>) -> Result<TopicRule, AccessError> {
    let kids = d.children(
        node,
        &[
            "topic_expression",
            "enable_discovery_protection",
            "enable_liveliness_protection",
            "enable_read_access_control",
            "enable_write_access_control",
            "metadata_protection_kind",
            "data_protection_kind",
        ],
    )?;
    let flag = |name: &'static str| d.boolean(d.one(node, &kids, name)?);
    let te = d.one(node, &kids, "topic_expression")?;
    let topic_expression =
        Expression::new(&d.text(te)?).map_err(|(v, why)| d.invalid(te, &v, &why))?;
    let enable_discovery_protection = flag("enable_discovery_protection")?;
    let enable_liveliness_protection = flag("enable_liveliness_protection")?;
    let enable_read_access_control = flag("enable_read_access_control")?;
    let enable_write_access_control = flag("enable_write_access_control")?;
    let mk = d.one(node, &kids, "metadata_protection_kind")?;
    let mv = d.text(mk)?;
    let metadata_protection_kind =
        ProtectionKind::from_xml(&mv).ok_or_else(|| d.invalid(mk, &mv, ProtectionKind::VALID))?;
    let dk = d.one(node, &kids, "data_protection_kind")?;
    let dv = d.text(dk)?;
    let data_protection_kind = BasicProtectionKind::from_xml(&dv)
        .ok_or_else(|| d.invalid(dk, &dv, BasicProtectionKind::VALID))?;
    Ok(TopicRule {
        topic_expression,
        enable_discovery_protection,
        enable_liveliness_protection,
        enable_read_access_control,
        enable_write_access_control,
        metadata_protection_kind,
        data_protection_kind,
    })
}
