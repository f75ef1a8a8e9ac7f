//! `DDS:Access:Permissions`: the builtin access control plugin of DDS Security 1.1, as a
//! sans-IO library.
//!
//! # Contract
//!
//! * Documents. A governance or permissions document is accepted only if it is an S/MIME
//!   `multipart/signed` document (as `openssl smime -sign -text` writes) whose PKCS#7 signature
//!   verifies against the **permissions CA** ([`PermissionsCa`]) with OpenSSL; the signed
//!   content must carry the `-text` `Content-Type: text/plain` header (Cyclone DDS and Fast DDS
//!   require it too). Only then is the XML parsed ([`Governance::from_signed`],
//!   [`Permissions::from_signed`]). [`Governance::parse_xml`] and [`Permissions::parse_xml`]
//!   parse without a signature, for tests and fuzzing. (OpenSSL checks the signer's
//!   certificate chain against the system clock; everything after the signature uses the
//!   caller's `now`.)
//! * Parsing is strict, following the OMG DDS Security 1.1 XSDs: every element the schema
//!   requires must be present once, unknown elements are rejected, booleans are TRUE/FALSE in
//!   any case or 1/0, protection kinds are the exact XSD spellings (`data_protection_kind`
//!   only NONE/SIGN/ENCRYPT), domain ids are u32 and `id_range` may omit `min` (0) or `max`
//!   (unbounded, as the XSD says; for interoperability write `max`: Cyclone DDS 0.10 reads a
//!   range without it as the single domain `min` and refuses ids above 230). Nothing falls back to a default: every error is an [`AccessError`] naming
//!   the file, the line, the element, the bad value and the valid ones. Malformed or truncated
//!   input never panics (the `security_permissions` fuzz target checks this).
//! * Expressions (`topic_expression`, `topic`, `partition`) are fnmatch patterns (`*`, `?`,
//!   `[...]`, `[!...]`, no path semantics), via the `glob` crate ([`Expression`]).
//! * Subject names match as sets of `attribute=value` pairs ([`SubjectName`], Cyclone's rule).
//! * Decisions ([`AccessControl`], [`Governance`]) are pure functions of the documents and of
//!   `now` (a [`SystemTime`] the caller passes): domain rule = first whose `domains` cover the
//!   id; topic rule = first whose expression matches; a grant's rules are evaluated in order
//!   and the first whose domains and criteria match decides (allow: the topic and every
//!   requested partition covered; deny: the topic and any partition), else the grant's
//!   `default`. A criteria without `partitions` covers only the default (empty) partition.
//!   Access control applies only where the governance enables it (join, read, write); grant
//!   validity is always checked. Every denial is an [`AccessDenied`] naming the subject, the
//!   topic, the domain and the deciding rule.
//! * Security attributes map to the PARTICIPANT_SECURITY_INFO / ENDPOINT_SECURITY_INFO words
//!   of the SPDP/SEDP parameters ([`ParticipantSecurityInfo`], [`EndpointSecurityInfo`]); the
//!   VALID bit (0x8000_0000) is set in both the attributes and the plugin attributes, as Cyclone
//!   DDS and Fast DDS do.
//! * Tokens ([`PermissionsToken`], [`PermissionsCredential`]) are plain name/value data; their
//!   `DataHolder` encoding belongs to [`crate::generic_message`].
//! * Not evaluated yet: `relay` criteria and `data_tags` (parsed and kept).

mod governance;
mod permissions;
mod smime;
mod xml;

use std::fmt;
use std::path::Path;
use std::time::SystemTime;

use openssl::x509::store::{X509Store, X509StoreBuilder};
use openssl::x509::{X509Ref, X509};
use time::OffsetDateTime;

pub use governance::{BasicProtectionKind, DomainRule, Governance, ProtectionKind, TopicRule};
pub use permissions::{
    Criteria, DataTag, DefaultAction, Grant, Permissions, Rule, RuleKind, SubjectName, Validity,
};

/// Errors reading, verifying or parsing a governance or permissions document or a CA.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// The file could not be read.
    #[error("{file}: cannot read: {source}")]
    Read {
        /// The file.
        file: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The permissions CA certificate is unusable.
    #[error("{file}: not a usable permissions CA certificate: {reason}")]
    CaCertificate {
        /// The file (or label).
        file: String,
        /// Why.
        reason: String,
    },
    /// The S/MIME structure is malformed or the signature does not verify against the CA.
    #[error("{file}: {reason}")]
    Signature {
        /// The document.
        file: String,
        /// Why (OpenSSL's reasons included).
        reason: String,
    },
    /// The signed content is not UTF-8 or not well-formed XML.
    #[error("{file}: not well-formed XML: {reason}")]
    Xml {
        /// The document.
        file: String,
        /// The parser's message (with line and column).
        reason: String,
    },
    /// A required element is missing.
    #[error("{file}:{line}: <{parent}> lacks <{element}>")]
    MissingElement {
        /// The document.
        file: String,
        /// Line of the parent.
        line: u32,
        /// The parent element.
        parent: String,
        /// The missing element.
        element: &'static str,
    },
    /// An element that may appear once appears again.
    #[error("{file}:{line}: <{parent}> has more than one <{element}>")]
    DuplicateElement {
        /// The document.
        file: String,
        /// Line of the repetition.
        line: u32,
        /// The repeated element.
        element: &'static str,
        /// Its parent.
        parent: String,
    },
    /// An element the schema does not allow here (often a misspelt one).
    #[error("{file}:{line}: unexpected <{element}> in <{parent}> (allowed: {allowed})")]
    UnexpectedElement {
        /// The document.
        file: String,
        /// Its line.
        line: u32,
        /// The element.
        element: String,
        /// Its parent.
        parent: String,
        /// The elements allowed there.
        allowed: String,
    },
    /// Text where only elements are allowed.
    #[error("{file}:{line}: unexpected text '{text}' in <{element}>")]
    UnexpectedText {
        /// The document.
        file: String,
        /// Its line.
        line: u32,
        /// The element holding it.
        element: String,
        /// The text (shortened).
        text: String,
    },
    /// A leaf element's value is not one of the valid ones.
    #[error("{file}:{line}: <{element}> has invalid value '{value}' (valid: {valid})")]
    InvalidValue {
        /// The document.
        file: String,
        /// Its line.
        line: u32,
        /// The element.
        element: String,
        /// The bad value (shortened).
        value: String,
        /// The valid values.
        valid: String,
    },
    /// The documents are valid but grant nothing to this participant.
    #[error(transparent)]
    Denied(Box<AccessDenied>),
}

impl From<AccessDenied> for AccessError {
    fn from(d: AccessDenied) -> Self {
        Self::Denied(Box::new(d))
    }
}

/// Why an access decision was negative.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessDenied {
    /// No `domain_rule` covers the domain.
    #[error("governance {file}: no domain_rule covers domain {domain_id}")]
    NoDomainRule {
        /// The governance document.
        file: String,
        /// The domain.
        domain_id: u32,
    },
    /// No `topic_rule` of the domain's rule matches the topic.
    #[error("governance {file}: no topic_rule of domain {domain_id} matches topic '{topic}'")]
    NoTopicRule {
        /// The governance document.
        file: String,
        /// The domain.
        domain_id: u32,
        /// The topic.
        topic: String,
    },
    /// The permissions document has no grant for the subject.
    #[error("permissions {file}: no grant has subject_name matching '{subject}'")]
    NoGrant {
        /// The permissions document.
        file: String,
        /// The certificate subject looked for.
        subject: String,
    },
    /// The grant's validity has not started.
    #[error(
        "permissions {file}: grant '{grant}' for '{subject}' is not valid before {not_before}"
    )]
    NotYetValid {
        /// The permissions document.
        file: String,
        /// The grant's name.
        grant: String,
        /// Its subject.
        subject: String,
        /// `not_before`.
        not_before: OffsetDateTime,
    },
    /// The grant's validity has ended.
    #[error("permissions {file}: grant '{grant}' for '{subject}' expired at {not_after}")]
    Expired {
        /// The permissions document.
        file: String,
        /// The grant's name.
        grant: String,
        /// Its subject.
        subject: String,
        /// `not_after`.
        not_after: OffsetDateTime,
    },
    /// Join access control is on and the grant does not allow the domain.
    #[error(
        "permissions {file}: grant '{grant}' for '{subject}' does not allow joining domain \
         {domain_id} (enable_join_access_control is on): {rule}"
    )]
    JoinDenied {
        /// The permissions document.
        file: String,
        /// The grant's name.
        grant: String,
        /// Its subject.
        subject: String,
        /// The domain.
        domain_id: u32,
        /// What decided.
        rule: DecidingRule,
    },
    /// The grant does not allow publishing or subscribing the topic.
    #[error("{0}")]
    TopicDenied(Box<TopicDenial>),
}

/// Details of [`AccessDenied::TopicDenied`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicDenial {
    /// The permissions document.
    pub file: String,
    /// The grant's name.
    pub grant: String,
    /// Its subject.
    pub subject: String,
    /// Publish or subscribe.
    pub action: Action,
    /// The topic.
    pub topic: String,
    /// The requested partitions.
    pub partitions: Vec<String>,
    /// The domain.
    pub domain_id: u32,
    /// What decided.
    pub rule: DecidingRule,
}

impl fmt::Display for TopicDenial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "permissions {}: '{}' may not {} topic '{}' (partitions {:?}) in domain {}: {} of grant '{}'",
            self.file,
            self.subject,
            self.action,
            self.topic,
            self.partitions,
            self.domain_id,
            self.rule,
            self.grant
        )
    }
}

/// What decided a denial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecidingRule {
    /// The grant's n-th rule (1-based), a `deny_rule`.
    DenyRule(usize),
    /// No rule matched and the grant's `default` is DENY.
    DefaultDeny,
}

impl fmt::Display for DecidingRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DenyRule(i) => write!(f, "rule #{i} (deny_rule)"),
            Self::DefaultDeny => f.write_str("no rule matches and default is DENY"),
        }
    }
}

/// An endpoint action checked against permissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A DataWriter: `publish` criteria.
    Publish,
    /// A DataReader: `subscribe` criteria.
    Subscribe,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Publish => "publish",
            Self::Subscribe => "subscribe",
        })
    }
}

/// A set of domain ids (`domains`): inclusive ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainSet {
    /// Inclusive `(min, max)` ranges; `id` entries are `(id, id)`.
    pub ranges: Vec<(u32, u32)>,
}

impl DomainSet {
    /// Whether `domain_id` is in the set.
    pub fn contains(&self, domain_id: u32) -> bool {
        self.ranges
            .iter()
            .any(|&(lo, hi)| lo <= domain_id && domain_id <= hi)
    }
}

/// An fnmatch-style expression (`*`, `?`, `[...]`, `[!...]`; `/` and `.` are ordinary).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expression {
    text: String,
    pattern: glob::Pattern,
}

impl Expression {
    /// Compiles `text`; the error is (value, what is valid).
    pub fn new(text: &str) -> Result<Self, (String, String)> {
        // fnmatch without FNM_PATHNAME: a run of `*` is one `*` (glob would read `**` as a
        // recursive path wildcard).
        let mut collapsed = String::with_capacity(text.len());
        for c in text.chars() {
            if !(c == '*' && collapsed.ends_with('*')) {
                collapsed.push(c);
            }
        }
        let pattern = glob::Pattern::new(&collapsed).map_err(|e| {
            (
                text.to_owned(),
                format!("an fnmatch expression with *, ?, [...] ({})", e.msg),
            )
        })?;
        Ok(Self {
            text: text.to_owned(),
            pattern,
        })
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        self.pattern.matches_with(
            name,
            glob::MatchOptions {
                case_sensitive: true,
                require_literal_separator: false,
                require_literal_leading_dot: false,
            },
        )
    }

    /// The expression as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// The permissions CA certificate: the trust anchor of governance and permissions documents.
#[derive(Clone)]
pub struct PermissionsCa {
    cert: X509,
    store: std::sync::Arc<X509Store>,
    subject: SubjectName,
}

impl fmt::Debug for PermissionsCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PermissionsCa")
            .field("subject", &self.subject.as_str())
            .finish()
    }
}

impl PermissionsCa {
    /// A CA from a PEM certificate; `file` names it in errors.
    pub fn from_pem(pem: &[u8], file: &str) -> Result<Self, AccessError> {
        let err = |reason: String| AccessError::CaCertificate {
            file: file.to_owned(),
            reason,
        };
        let cert = X509::from_pem(pem).map_err(|e| err(smime::ssl_reason(&e)))?;
        Self::from_x509(cert).map_err(|e| err(smime::ssl_reason(&e)))
    }

    /// A CA from a PEM file.
    pub fn load(path: &Path) -> Result<Self, AccessError> {
        let file = path.display().to_string();
        let pem = std::fs::read(path).map_err(|source| AccessError::Read {
            file: file.clone(),
            source,
        })?;
        Self::from_pem(&pem, &file)
    }

    fn from_x509(cert: X509) -> Result<Self, openssl::error::ErrorStack> {
        let mut b = X509StoreBuilder::new()?;
        b.add_cert(cert.clone())?;
        let subject = SubjectName::from_x509(cert.subject_name());
        Ok(Self {
            cert,
            store: std::sync::Arc::new(b.build()),
            subject,
        })
    }

    /// The certificate.
    pub fn certificate(&self) -> &X509Ref {
        &self.cert
    }

    /// Its subject.
    pub fn subject(&self) -> &SubjectName {
        &self.subject
    }

    pub(crate) fn store(&self) -> &openssl::x509::store::X509StoreRef {
        &self.store
    }

    /// Verifies an S/MIME document signed by this CA and returns the signed text; `file`
    /// names it in errors.
    pub fn verify_smime(&self, signed: &[u8], file: &str) -> Result<String, AccessError> {
        let content = smime::verify(signed, file, self)?;
        String::from_utf8(content).map_err(|e| AccessError::Xml {
            file: file.to_owned(),
            reason: format!("signed content is not UTF-8: {e}"),
        })
    }

    /// The `dds.perm_ca.algo` value: `RSA-2048`, `EC-prime256v1` (or `RSA-<bits>`, `EC-<curve>`).
    pub fn algorithm(&self) -> String {
        match self.cert.public_key() {
            Ok(key) => {
                if let Ok(rsa) = key.rsa() {
                    format!("RSA-{}", rsa.size() * 8)
                } else if let Ok(ec) = key.ec_key() {
                    let curve = ec
                        .group()
                        .curve_name()
                        .and_then(|n| n.short_name().ok())
                        .unwrap_or("unknown");
                    format!("EC-{curve}")
                } else {
                    "unknown".to_owned()
                }
            }
            Err(_) => "unknown".to_owned(),
        }
    }

    /// The PermissionsToken announced in SPDP.
    pub fn permissions_token(&self) -> PermissionsToken {
        PermissionsToken {
            class_id: PermissionsToken::CLASS_ID,
            properties: vec![
                (
                    "dds.perm_ca.sn".to_owned(),
                    self.subject.as_str().to_owned(),
                ),
                ("dds.perm_ca.algo".to_owned(), self.algorithm()),
            ],
        }
    }
}

fn read(path: &Path) -> Result<(Vec<u8>, String), AccessError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| AccessError::Read {
        file: file.clone(),
        source,
    })?;
    Ok((bytes, file))
}

impl Governance {
    /// Verifies a signed governance document against `ca`, then parses it.
    pub fn from_signed(signed: &[u8], file: &str, ca: &PermissionsCa) -> Result<Self, AccessError> {
        let xml = ca.verify_smime(signed, file)?;
        Self::parse_xml(&xml, file)
    }

    /// Reads, verifies and parses a signed governance file.
    pub fn load(path: &Path, ca: &PermissionsCa) -> Result<Self, AccessError> {
        let (bytes, file) = read(path)?;
        Self::from_signed(&bytes, &file, ca)
    }

    /// The participant security attributes for `domain_id`.
    pub fn participant_security_attributes(
        &self,
        domain_id: u32,
    ) -> Result<ParticipantSecurityAttributes, AccessDenied> {
        let r = self.rule(domain_id)?;
        Ok(ParticipantSecurityAttributes {
            allow_unauthenticated_participants: r.allow_unauthenticated_participants,
            is_access_protected: r.enable_join_access_control,
            rtps_protection_kind: r.rtps_protection_kind,
            discovery_protection_kind: r.discovery_protection_kind,
            liveliness_protection_kind: r.liveliness_protection_kind,
        })
    }

    /// The endpoint security attributes of `topic` in `domain_id`.
    pub fn endpoint_security_attributes(
        &self,
        domain_id: u32,
        topic: &str,
    ) -> Result<EndpointSecurityAttributes, AccessDenied> {
        let t = self.topic_rule_for(domain_id, topic)?;
        Ok(EndpointSecurityAttributes {
            is_read_protected: t.enable_read_access_control,
            is_write_protected: t.enable_write_access_control,
            is_discovery_protected: t.enable_discovery_protection,
            is_liveliness_protected: t.enable_liveliness_protection,
            metadata_protection_kind: t.metadata_protection_kind,
            data_protection_kind: t.data_protection_kind,
        })
    }

    fn rule(&self, domain_id: u32) -> Result<&DomainRule, AccessDenied> {
        self.domain_rule(domain_id)
            .ok_or_else(|| AccessDenied::NoDomainRule {
                file: self.source.clone(),
                domain_id,
            })
    }

    fn topic_rule_for(&self, domain_id: u32, topic: &str) -> Result<&TopicRule, AccessDenied> {
        self.rule(domain_id)?
            .topic_rule(topic)
            .ok_or_else(|| AccessDenied::NoTopicRule {
                file: self.source.clone(),
                domain_id,
                topic: topic.to_owned(),
            })
    }
}

impl Permissions {
    /// Verifies a signed permissions document against `ca`, then parses it.
    pub fn from_signed(signed: &[u8], file: &str, ca: &PermissionsCa) -> Result<Self, AccessError> {
        let xml = ca.verify_smime(signed, file)?;
        Self::parse_xml(&xml, file)
    }

    /// Reads, verifies and parses a signed permissions file.
    pub fn load(path: &Path, ca: &PermissionsCa) -> Result<Self, AccessError> {
        let (bytes, file) = read(path)?;
        Self::from_signed(&bytes, &file, ca)
    }
}

/// ParticipantSecurityAttributes of a domain (from its governance rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParticipantSecurityAttributes {
    /// `allow_unauthenticated_participants`.
    pub allow_unauthenticated_participants: bool,
    /// `enable_join_access_control`.
    pub is_access_protected: bool,
    /// `rtps_protection_kind`.
    pub rtps_protection_kind: ProtectionKind,
    /// `discovery_protection_kind`.
    pub discovery_protection_kind: ProtectionKind,
    /// `liveliness_protection_kind`.
    pub liveliness_protection_kind: ProtectionKind,
}

impl ParticipantSecurityAttributes {
    /// Whole RTPS messages are protected (SRTPS).
    pub fn is_rtps_protected(&self) -> bool {
        self.rtps_protection_kind.is_protected()
    }

    /// The secure discovery endpoints are protected.
    pub fn is_discovery_protected(&self) -> bool {
        self.discovery_protection_kind.is_protected()
    }

    /// The secure liveliness endpoints are protected.
    pub fn is_liveliness_protected(&self) -> bool {
        self.liveliness_protection_kind.is_protected()
    }

    /// The PARTICIPANT_SECURITY_INFO parameter value.
    pub fn security_info(&self) -> ParticipantSecurityInfo {
        use ParticipantSecurityInfo as P;
        let mut a = P::VALID;
        let mut p = P::PLUGIN_VALID;
        let mut add = |k: ProtectionKind, prot: u32, enc: u32, auth: u32| {
            if k.is_protected() {
                a |= prot;
            }
            if k.is_encrypted() {
                p |= enc;
            }
            if k.is_origin_authenticated() {
                p |= auth;
            }
        };
        add(
            self.rtps_protection_kind,
            P::RTPS_PROTECTED,
            P::RTPS_ENCRYPTED,
            P::RTPS_AUTHENTICATED,
        );
        add(
            self.discovery_protection_kind,
            P::DISCOVERY_PROTECTED,
            P::DISCOVERY_ENCRYPTED,
            P::DISCOVERY_AUTHENTICATED,
        );
        add(
            self.liveliness_protection_kind,
            P::LIVELINESS_PROTECTED,
            P::LIVELINESS_ENCRYPTED,
            P::LIVELINESS_AUTHENTICATED,
        );
        P {
            attributes: a,
            plugin_attributes: p,
        }
    }
}

/// PARTICIPANT_SECURITY_INFO: participant security attributes and plugin attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ParticipantSecurityInfo {
    /// `participant_security_attributes` (the `*_PROTECTED` and VALID bits).
    pub attributes: u32,
    /// `plugin_participant_security_attributes` (the `*_ENCRYPTED`, `*_AUTHENTICATED` and
    /// VALID bits).
    pub plugin_attributes: u32,
}

impl ParticipantSecurityInfo {
    /// attributes: RTPS messages protected.
    pub const RTPS_PROTECTED: u32 = 0x1;
    /// attributes: discovery protected.
    pub const DISCOVERY_PROTECTED: u32 = 0x2;
    /// attributes: liveliness protected.
    pub const LIVELINESS_PROTECTED: u32 = 0x4;
    /// attributes: the word is valid.
    pub const VALID: u32 = 0x8000_0000;
    /// plugin attributes: RTPS protection encrypts.
    pub const RTPS_ENCRYPTED: u32 = 0x1;
    /// plugin attributes: discovery protection encrypts.
    pub const DISCOVERY_ENCRYPTED: u32 = 0x2;
    /// plugin attributes: liveliness protection encrypts.
    pub const LIVELINESS_ENCRYPTED: u32 = 0x4;
    /// plugin attributes: RTPS protection has origin authentication.
    pub const RTPS_AUTHENTICATED: u32 = 0x8;
    /// plugin attributes: discovery protection has origin authentication.
    pub const DISCOVERY_AUTHENTICATED: u32 = 0x10;
    /// plugin attributes: liveliness protection has origin authentication.
    pub const LIVELINESS_AUTHENTICATED: u32 = 0x20;
    /// plugin attributes: the word is valid.
    pub const PLUGIN_VALID: u32 = 0x8000_0000;
}

/// EndpointSecurityAttributes of a topic (from its governance topic rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndpointSecurityAttributes {
    /// `enable_read_access_control`.
    pub is_read_protected: bool,
    /// `enable_write_access_control`.
    pub is_write_protected: bool,
    /// `enable_discovery_protection`.
    pub is_discovery_protected: bool,
    /// `enable_liveliness_protection`.
    pub is_liveliness_protected: bool,
    /// `metadata_protection_kind`.
    pub metadata_protection_kind: ProtectionKind,
    /// `data_protection_kind`.
    pub data_protection_kind: BasicProtectionKind,
}

impl EndpointSecurityAttributes {
    /// Submessages are protected.
    pub fn is_submessage_protected(&self) -> bool {
        self.metadata_protection_kind.is_protected()
    }

    /// Serialized payloads are protected.
    pub fn is_payload_protected(&self) -> bool {
        self.data_protection_kind != BasicProtectionKind::None
    }

    /// Key hashes are protected (payload encryption: the key must not travel in clear).
    pub fn is_key_protected(&self) -> bool {
        self.data_protection_kind == BasicProtectionKind::Encrypt
    }

    /// The ENDPOINT_SECURITY_INFO parameter value.
    pub fn security_info(&self) -> EndpointSecurityInfo {
        use EndpointSecurityInfo as E;
        let mut a = E::VALID;
        let mut p = E::PLUGIN_VALID;
        for (on, bit) in [
            (self.is_read_protected, E::READ_PROTECTED),
            (self.is_write_protected, E::WRITE_PROTECTED),
            (self.is_discovery_protected, E::DISCOVERY_PROTECTED),
            (self.is_submessage_protected(), E::SUBMESSAGE_PROTECTED),
            (self.is_payload_protected(), E::PAYLOAD_PROTECTED),
            (self.is_key_protected(), E::KEY_PROTECTED),
            (self.is_liveliness_protected, E::LIVELINESS_PROTECTED),
        ] {
            if on {
                a |= bit;
            }
        }
        if self.metadata_protection_kind.is_encrypted() {
            p |= E::SUBMESSAGE_ENCRYPTED;
        }
        if self.data_protection_kind == BasicProtectionKind::Encrypt {
            p |= E::PAYLOAD_ENCRYPTED;
        }
        if self.metadata_protection_kind.is_origin_authenticated() {
            p |= E::SUBMESSAGE_ORIGIN_AUTHENTICATED;
        }
        E {
            attributes: a,
            plugin_attributes: p,
        }
    }
}

/// ENDPOINT_SECURITY_INFO: endpoint security attributes and plugin attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndpointSecurityInfo {
    /// `endpoint_security_attributes`.
    pub attributes: u32,
    /// `plugin_endpoint_security_attributes`.
    pub plugin_attributes: u32,
}

impl EndpointSecurityInfo {
    /// attributes: read access control.
    pub const READ_PROTECTED: u32 = 0x1;
    /// attributes: write access control.
    pub const WRITE_PROTECTED: u32 = 0x2;
    /// attributes: discovery protection.
    pub const DISCOVERY_PROTECTED: u32 = 0x4;
    /// attributes: submessage protection.
    pub const SUBMESSAGE_PROTECTED: u32 = 0x8;
    /// attributes: payload protection.
    pub const PAYLOAD_PROTECTED: u32 = 0x10;
    /// attributes: key protection.
    pub const KEY_PROTECTED: u32 = 0x20;
    /// attributes: liveliness protection.
    pub const LIVELINESS_PROTECTED: u32 = 0x40;
    /// attributes: the word is valid.
    pub const VALID: u32 = 0x8000_0000;
    /// plugin attributes: submessages encrypted.
    pub const SUBMESSAGE_ENCRYPTED: u32 = 0x1;
    /// plugin attributes: payload encrypted.
    pub const PAYLOAD_ENCRYPTED: u32 = 0x2;
    /// plugin attributes: submessages carry receiver-specific MACs.
    pub const SUBMESSAGE_ORIGIN_AUTHENTICATED: u32 = 0x4;
    /// plugin attributes: the word is valid.
    pub const PLUGIN_VALID: u32 = 0x8000_0000;
}

/// The PermissionsToken (`DDS:Access:Permissions:1.0`) as name/value pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionsToken {
    /// `DDS:Access:Permissions:1.0`.
    pub class_id: &'static str,
    /// `dds.perm_ca.sn`, `dds.perm_ca.algo` (optional for receivers: RustDDS omits them).
    pub properties: Vec<(String, String)>,
}

impl PermissionsToken {
    /// The token's class id.
    pub const CLASS_ID: &'static str = "DDS:Access:Permissions:1.0";
}

/// The PermissionsCredentialToken (`DDS:Access:PermissionsCredential`): the signed
/// permissions document sent in the handshake (`c.perm`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionsCredential {
    /// `DDS:Access:PermissionsCredential`.
    pub class_id: &'static str,
    /// `dds.perm.cert` = the signed permissions document, as read.
    pub properties: Vec<(String, String)>,
}

impl PermissionsCredential {
    /// The token's class id.
    pub const CLASS_ID: &'static str = "DDS:Access:PermissionsCredential";
}

/// A remote participant's permissions, verified against the local permissions CA, with the
/// grant matching its authenticated identity.
#[derive(Debug, Clone)]
pub struct RemotePermissions {
    permissions: Permissions,
    grant: usize,
}

impl RemotePermissions {
    /// The whole document.
    pub fn permissions(&self) -> &Permissions {
        &self.permissions
    }

    /// The grant of the remote identity.
    pub fn grant(&self) -> &Grant {
        &self.permissions.grants[self.grant]
    }
}

/// The access control state of one local participant: governance, own permissions and the
/// permissions CA. All checks are pure; `now` is an input.
#[derive(Debug, Clone)]
pub struct AccessControl {
    ca: PermissionsCa,
    governance: Governance,
    permissions: Permissions,
    grant: usize,
    signed_permissions: String,
}

impl AccessControl {
    /// Verifies and parses the local signed permissions document, and selects the grant of
    /// `local_subject` (the subject of the local identity certificate).
    pub fn new(
        ca: PermissionsCa,
        governance: Governance,
        signed_permissions: &[u8],
        permissions_file: &str,
        local_subject: &SubjectName,
    ) -> Result<Self, AccessError> {
        let permissions = Permissions::from_signed(signed_permissions, permissions_file, &ca)?;
        let grant = grant_index(&permissions, local_subject)?;
        let signed_permissions =
            String::from_utf8(signed_permissions.to_vec()).map_err(|e| AccessError::Signature {
                file: permissions_file.to_owned(),
                reason: format!("signed document is not UTF-8 text: {e}"),
            })?;
        Ok(Self {
            ca,
            governance,
            permissions,
            grant,
            signed_permissions,
        })
    }

    /// Reads the three files (CA, signed governance, signed permissions) and calls
    /// [`AccessControl::new`] with the subject of `identity_certificate`.
    pub fn load(
        permissions_ca: &Path,
        governance: &Path,
        permissions: &Path,
        identity_certificate: &X509Ref,
    ) -> Result<Self, AccessError> {
        let ca = PermissionsCa::load(permissions_ca)?;
        let gov = Governance::load(governance, &ca)?;
        let (bytes, file) = read(permissions)?;
        let subject = SubjectName::from_x509(identity_certificate.subject_name());
        Self::new(ca, gov, &bytes, &file, &subject)
    }

    /// The governance.
    pub fn governance(&self) -> &Governance {
        &self.governance
    }

    /// The local permissions.
    pub fn permissions(&self) -> &Permissions {
        &self.permissions
    }

    /// The local grant.
    pub fn grant(&self) -> &Grant {
        &self.permissions.grants[self.grant]
    }

    /// The permissions CA.
    pub fn permissions_ca(&self) -> &PermissionsCa {
        &self.ca
    }

    /// The PermissionsToken to announce.
    pub fn permissions_token(&self) -> PermissionsToken {
        self.ca.permissions_token()
    }

    /// The PermissionsCredentialToken to send in the handshake.
    pub fn permissions_credential(&self) -> PermissionsCredential {
        PermissionsCredential {
            class_id: PermissionsCredential::CLASS_ID,
            properties: vec![("dds.perm.cert".to_owned(), self.signed_permissions.clone())],
        }
    }

    /// Participant security attributes for `domain_id`.
    pub fn participant_security_attributes(
        &self,
        domain_id: u32,
    ) -> Result<ParticipantSecurityAttributes, AccessDenied> {
        self.governance.participant_security_attributes(domain_id)
    }

    /// Endpoint security attributes of `topic` in `domain_id`.
    pub fn endpoint_security_attributes(
        &self,
        domain_id: u32,
        topic: &str,
    ) -> Result<EndpointSecurityAttributes, AccessDenied> {
        self.governance
            .endpoint_security_attributes(domain_id, topic)
    }

    /// May the local participant be created in `domain_id`? (Grant validity; with join
    /// access control, the grant must allow the domain.)
    pub fn check_create_participant(
        &self,
        domain_id: u32,
        now: SystemTime,
    ) -> Result<(), AccessDenied> {
        check_join(
            &self.governance,
            &self.permissions,
            self.grant(),
            domain_id,
            now,
        )
    }

    /// May the local participant create a DataWriter of `topic` in `partitions`?
    pub fn check_create_datawriter(
        &self,
        domain_id: u32,
        topic: &str,
        partitions: &[&str],
        now: SystemTime,
    ) -> Result<(), AccessDenied> {
        self.check_endpoint(
            &self.permissions,
            self.grant(),
            Action::Publish,
            domain_id,
            topic,
            partitions,
            now,
        )
    }

    /// May the local participant create a DataReader of `topic` in `partitions`?
    pub fn check_create_datareader(
        &self,
        domain_id: u32,
        topic: &str,
        partitions: &[&str],
        now: SystemTime,
    ) -> Result<(), AccessDenied> {
        self.check_endpoint(
            &self.permissions,
            self.grant(),
            Action::Subscribe,
            domain_id,
            topic,
            partitions,
            now,
        )
    }

    /// Verifies a remote participant's signed permissions (`c.perm`) against the local
    /// permissions CA and selects the grant of its authenticated subject.
    pub fn validate_remote_permissions(
        &self,
        signed: &[u8],
        label: &str,
        remote_subject: &SubjectName,
    ) -> Result<RemotePermissions, AccessError> {
        let permissions = Permissions::from_signed(signed, label, &self.ca)?;
        let grant = grant_index(&permissions, remote_subject)?;
        Ok(RemotePermissions { permissions, grant })
    }

    /// May the remote participant join `domain_id`? (Grant validity; with join access
    /// control, its grant must allow the domain.)
    pub fn check_remote_participant(
        &self,
        domain_id: u32,
        remote: &RemotePermissions,
        now: SystemTime,
    ) -> Result<(), AccessDenied> {
        check_join(
            &self.governance,
            &remote.permissions,
            remote.grant(),
            domain_id,
            now,
        )
    }

    /// May the remote participant's DataWriter of `topic` in `partitions` be matched?
    pub fn check_remote_datawriter(
        &self,
        domain_id: u32,
        remote: &RemotePermissions,
        topic: &str,
        partitions: &[&str],
        now: SystemTime,
    ) -> Result<(), AccessDenied> {
        self.check_endpoint(
            &remote.permissions,
            remote.grant(),
            Action::Publish,
            domain_id,
            topic,
            partitions,
            now,
        )
    }

    /// May the remote participant's DataReader of `topic` in `partitions` be matched?
    pub fn check_remote_datareader(
        &self,
        domain_id: u32,
        remote: &RemotePermissions,
        topic: &str,
        partitions: &[&str],
        now: SystemTime,
    ) -> Result<(), AccessDenied> {
        self.check_endpoint(
            &remote.permissions,
            remote.grant(),
            Action::Subscribe,
            domain_id,
            topic,
            partitions,
            now,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn check_endpoint(
        &self,
        perms: &Permissions,
        grant: &Grant,
        action: Action,
        domain_id: u32,
        topic: &str,
        partitions: &[&str],
        now: SystemTime,
    ) -> Result<(), AccessDenied> {
        check_validity(perms, grant, now)?;
        let t = self.governance.topic_rule_for(domain_id, topic)?;
        let controlled = match action {
            Action::Publish => t.enable_write_access_control,
            Action::Subscribe => t.enable_read_access_control,
        };
        if !controlled {
            return Ok(());
        }
        let deny = |rule| {
            AccessDenied::TopicDenied(Box::new(TopicDenial {
                file: perms.source.clone(),
                grant: grant.name.clone(),
                subject: grant.subject_name.as_str().to_owned(),
                action,
                topic: topic.to_owned(),
                partitions: partitions.iter().map(|p| (*p).to_owned()).collect(),
                domain_id,
                rule,
            }))
        };
        for rule in grant.rules.iter().filter(|r| r.domains.contains(domain_id)) {
            let criteria = match action {
                Action::Publish => &rule.publish,
                Action::Subscribe => &rule.subscribe,
            };
            let allow = rule.kind == RuleKind::Allow;
            if criteria.iter().any(|c| c.matches(topic, partitions, allow)) {
                return if allow {
                    Ok(())
                } else {
                    Err(deny(DecidingRule::DenyRule(rule.index)))
                };
            }
        }
        match grant.default {
            DefaultAction::Allow => Ok(()),
            DefaultAction::Deny => Err(deny(DecidingRule::DefaultDeny)),
        }
    }
}

fn grant_index(permissions: &Permissions, subject: &SubjectName) -> Result<usize, AccessDenied> {
    permissions
        .grants
        .iter()
        .position(|g| g.subject_name.matches(subject))
        .ok_or_else(|| AccessDenied::NoGrant {
            file: permissions.source.clone(),
            subject: subject.as_str().to_owned(),
        })
}

fn check_validity(perms: &Permissions, grant: &Grant, now: SystemTime) -> Result<(), AccessDenied> {
    let now = OffsetDateTime::from(now);
    if now < grant.validity.not_before {
        return Err(AccessDenied::NotYetValid {
            file: perms.source.clone(),
            grant: grant.name.clone(),
            subject: grant.subject_name.as_str().to_owned(),
            not_before: grant.validity.not_before,
        });
    }
    if now > grant.validity.not_after {
        return Err(AccessDenied::Expired {
            file: perms.source.clone(),
            grant: grant.name.clone(),
            subject: grant.subject_name.as_str().to_owned(),
            not_after: grant.validity.not_after,
        });
    }
    Ok(())
}

/// Join check: validity, then (with join access control) an allow rule must cover the domain,
/// or no rule covers it and the default is ALLOW.
fn check_join(
    governance: &Governance,
    perms: &Permissions,
    grant: &Grant,
    domain_id: u32,
    now: SystemTime,
) -> Result<(), AccessDenied> {
    check_validity(perms, grant, now)?;
    let rule = governance.rule(domain_id)?;
    if !rule.enable_join_access_control {
        return Ok(());
    }
    let deny = |rule| AccessDenied::JoinDenied {
        file: perms.source.clone(),
        grant: grant.name.clone(),
        subject: grant.subject_name.as_str().to_owned(),
        domain_id,
        rule,
    };
    if grant
        .rules
        .iter()
        .any(|r| r.kind == RuleKind::Allow && r.domains.contains(domain_id))
    {
        return Ok(());
    }
    match grant.rules.iter().find(|r| r.domains.contains(domain_id)) {
        Some(r) => Err(deny(DecidingRule::DenyRule(r.index))),
        None if grant.default == DefaultAction::Allow => Ok(()),
        None => Err(deny(DecidingRule::DefaultDeny)),
    }
}
