//! The permissions document (`dds/permissions/grant`) and X.509 subject-name matching.

use std::fmt;

use openssl::x509::X509NameRef;
use roxmltree::Node;
use time::format_description::well_known::Rfc3339;
use time::{macros::format_description, OffsetDateTime, PrimitiveDateTime};

use super::xml::{parse_dds, Doc};
use super::{AccessError, DomainSet, Expression};

/// A distinguished name as a set of `attribute=value` pairs.
///
/// Matching follows Cyclone DDS's rule: both names are split on `,`, `/` and `|` into
/// `attribute=value` pairs and compared as sets, so component order, the OpenSSL one-line form
/// (`/C=ES/O=x/CN=y`) and the RFC 4514 form (`CN=y, O=x, C=ES`) all compare equal. Spaces around
/// names and values are ignored, attribute names compare case-insensitively with the usual
/// long forms mapped to short ones (`commonName` = `CN`, `E` = `emailAddress`, ...), values
/// compare exactly. (Like Cyclone, a value containing one of the separators is not supported.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectName {
    text: String,
    /// Canonical, sorted (attribute, value) pairs.
    pairs: Vec<(String, String)>,
}

impl SubjectName {
    /// Parses a subject name as written in a permissions document; `None` if a component has
    /// no `=` or the name is empty.
    pub fn parse(text: &str) -> Option<Self> {
        let mut pairs = Vec::new();
        for tok in text.split([',', '/', '|']) {
            if tok.trim().is_empty() {
                continue;
            }
            let (name, value) = tok.split_once('=')?;
            let name = canonical_attribute(name.trim());
            if name.is_empty() {
                return None;
            }
            pairs.push((name, value.trim().to_owned()));
        }
        if pairs.is_empty() {
            return None;
        }
        pairs.sort();
        Some(Self {
            text: text.trim().to_owned(),
            pairs,
        })
    }

    /// The subject of an X.509 certificate.
    pub fn from_x509(name: &X509NameRef) -> Self {
        let mut pairs = Vec::new();
        let mut text = String::new();
        for entry in name.entries() {
            let attr = entry
                .object()
                .nid()
                .short_name()
                .map(str::to_owned)
                .unwrap_or_else(|_| entry.object().to_string());
            let value = entry
                .data()
                .to_string()
                .unwrap_or_else(|_| String::from_utf8_lossy(entry.data().as_slice()).into_owned());
            if !text.is_empty() {
                text.push_str(", ");
            }
            text.push_str(&attr);
            text.push('=');
            text.push_str(&value);
            pairs.push((canonical_attribute(&attr), value.trim().to_owned()));
        }
        pairs.sort();
        Self { text, pairs }
    }

    /// The name as written (or, from a certificate, `attr=value, ...` in certificate order).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether both names have the same set of `attribute=value` pairs.
    pub fn matches(&self, other: &SubjectName) -> bool {
        self.pairs == other.pairs
    }
}

impl fmt::Display for SubjectName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Short upper-case attribute names (`emailAddress` keeps OpenSSL's spelling).
fn canonical_attribute(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    let short = match lower.as_str() {
        "commonname" | "cn" => "CN",
        "countryname" | "c" => "C",
        "organizationname" | "o" => "O",
        "organizationalunitname" | "ou" => "OU",
        "localityname" | "l" => "L",
        "stateorprovincename" | "st" | "s" => "ST",
        "emailaddress" | "e" | "email" => "emailAddress",
        "serialnumber" => "serialNumber",
        "domaincomponent" | "dc" => "DC",
        "userid" | "uid" => "UID",
        "street" | "streetaddress" => "STREET",
        "title" => "TITLE",
        "givenname" | "gn" => "GN",
        "surname" | "sn" => "SN",
        _ => return name.to_owned(),
    };
    short.to_owned()
}

/// `allow_rule` or `deny_rule`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleKind {
    /// `allow_rule`.
    Allow,
    /// `deny_rule`.
    Deny,
}

/// A grant's `default` (what applies when no rule matches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultAction {
    /// `ALLOW`.
    Allow,
    /// `DENY`.
    Deny,
}

/// A data tag of a criteria (`data_tags/tag`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataTag {
    /// `name`.
    pub name: String,
    /// `value`.
    pub value: String,
}

/// One `publish`, `subscribe` or `relay` criteria.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Criteria {
    /// `topics/topic` expressions.
    pub topics: Vec<Expression>,
    /// `partitions/partition` expressions; `None` when the element is absent (then only the
    /// default, empty partition matches).
    pub partitions: Option<Vec<Expression>>,
    /// `data_tags/tag` (parsed and kept; FerroDDS endpoints carry no data tags yet, so a
    /// criteria with data tags matches like one without).
    pub data_tags: Vec<DataTag>,
}

impl Criteria {
    /// Whether this criteria covers `topic` with `partitions` (an empty list is the default
    /// partition ""). An allow rule needs every requested partition covered
    /// (`all_partitions`), a deny rule applies when any one is.
    pub fn matches(&self, topic: &str, partitions: &[&str], all_partitions: bool) -> bool {
        if !self.topics.iter().any(|t| t.matches(topic)) {
            return false;
        }
        let default = [""];
        let requested: &[&str] = if partitions.is_empty() {
            &default
        } else {
            partitions
        };
        let covered = |p: &str| match &self.partitions {
            None => p.is_empty(),
            Some(exprs) => exprs.iter().any(|e| e.matches(p)),
        };
        if all_partitions {
            requested.iter().all(|p| covered(p))
        } else {
            requested.iter().any(|p| covered(p))
        }
    }
}

/// One `allow_rule` or `deny_rule`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Allow or deny.
    pub kind: RuleKind,
    /// 1-based position among the grant's rules (for messages).
    pub index: usize,
    /// The domains it applies to.
    pub domains: DomainSet,
    /// `publish` criteria.
    pub publish: Vec<Criteria>,
    /// `subscribe` criteria.
    pub subscribe: Vec<Criteria>,
    /// `relay` criteria.
    pub relay: Vec<Criteria>,
}

/// A grant's `validity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    /// `not_before` (a time without offset is UTC).
    pub not_before: OffsetDateTime,
    /// `not_after`.
    pub not_after: OffsetDateTime,
}

/// One `grant`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// Its `name` attribute ("" if absent).
    pub name: String,
    /// `subject_name`.
    pub subject_name: SubjectName,
    /// `validity`.
    pub validity: Validity,
    /// `allow_rule` and `deny_rule` in document order (the first matching one decides).
    pub rules: Vec<Rule>,
    /// `default`.
    pub default: DefaultAction,
}

/// A parsed permissions document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permissions {
    /// Where it came from (file name or caller-given label), used in errors.
    pub source: String,
    /// The grants in document order.
    pub grants: Vec<Grant>,
}

impl Permissions {
    /// Parses the XML of a permissions document (already verified, or for tests and
    /// fuzzing); `file` names it in errors.
    pub fn parse_xml(xml: &str, file: &str) -> Result<Self, AccessError> {
        let doc = parse_dds(xml, file)?;
        let d = Doc { file, doc: &doc };
        let root = doc.root_element();
        let kids = d.children(root, &["permissions"])?;
        let perms = d.one(root, &kids, "permissions")?;
        let mut grants = Vec::new();
        for g in d.children(perms, &["grant"])? {
            grants.push(grant(&d, g)?);
        }
        if grants.is_empty() {
            return Err(AccessError::MissingElement {
                file: file.to_owned(),
                line: d.line(perms),
                parent: "permissions".to_owned(),
                element: "grant",
            });
        }
        Ok(Self {
            source: file.to_owned(),
            grants,
        })
    }

    /// The first grant whose subject name matches `subject`.
    pub fn grant_for(&self, subject: &SubjectName) -> Option<&Grant> {
        self.grants.iter().find(|g| g.subject_name.matches(subject))
    }
}

fn grant<'a, 'i>(d: &Doc<'a, 'i>, node: Node<'a, 'i>) -> Result<Grant, AccessError> {
    let kids = d.children(
        node,
        &[
            "subject_name",
            "validity",
            "allow_rule",
            "deny_rule",
            "default",
        ],
    )?;
    let sn = d.one(node, &kids, "subject_name")?;
    let snv = d.text(sn)?;
    let subject_name = SubjectName::parse(&snv).ok_or_else(|| {
        d.invalid(
            sn,
            &snv,
            "a distinguished name of attribute=value pairs (e.g. CN=x, O=y, C=ES)",
        )
    })?;
    let val = d.one(node, &kids, "validity")?;
    let vkids = d.children(val, &["not_before", "not_after"])?;
    let not_before = date(d, d.one(val, &vkids, "not_before")?)?;
    let not_after = date(d, d.one(val, &vkids, "not_after")?)?;
    let mut rules = Vec::new();
    for k in kids.iter().filter(|k| {
        let n = k.tag_name().name();
        n == "allow_rule" || n == "deny_rule"
    }) {
        let kind = if k.tag_name().name() == "allow_rule" {
            RuleKind::Allow
        } else {
            RuleKind::Deny
        };
        rules.push(rule(d, *k, kind, rules.len() + 1)?);
    }
    let def = d.one(node, &kids, "default")?;
    let dv = d.text(def)?;
    let default = match dv.as_str() {
        "ALLOW" => DefaultAction::Allow,
        "DENY" => DefaultAction::Deny,
        _ => return Err(d.invalid(def, &dv, "ALLOW, DENY")),
    };
    Ok(Grant {
        name: node.attribute("name").unwrap_or("").to_owned(),
        subject_name,
        validity: Validity {
            not_before,
            not_after,
        },
        rules,
        default,
    })
}

fn date<'a, 'i>(d: &Doc<'a, 'i>, node: Node<'a, 'i>) -> Result<OffsetDateTime, AccessError> {
    let v = d.text(node)?;
    parse_date_time(&v).ok_or_else(|| {
        d.invalid(
            node,
            &v,
            "an xs:dateTime CCYY-MM-DDThh:mm:ss[.fff][Z|(+|-)hh:mm] (no offset = UTC)",
        )
    })
}

/// Parses an xs:dateTime; one without offset is taken as UTC (as Cyclone and RTI do).
pub(crate) fn parse_date_time(v: &str) -> Option<OffsetDateTime> {
    if let Ok(t) = OffsetDateTime::parse(v, &Rfc3339) {
        return Some(t);
    }
    let fmt = format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second][optional [.[subsecond]]]"
    );
    PrimitiveDateTime::parse(v, &fmt)
        .ok()
        .map(|t| t.assume_utc())
}

fn rule<'a, 'i>(
    d: &Doc<'a, 'i>,
    node: Node<'a, 'i>,
    kind: RuleKind,
    index: usize,
) -> Result<Rule, AccessError> {
    let kids = d.children(node, &["domains", "publish", "subscribe", "relay"])?;
    let domains = d.domains(d.one(node, &kids, "domains")?)?;
    let mut publish = Vec::new();
    let mut subscribe = Vec::new();
    let mut relay = Vec::new();
    for k in &kids {
        let target = match k.tag_name().name() {
            "publish" => &mut publish,
            "subscribe" => &mut subscribe,
            "relay" => &mut relay,
            _ => continue,
        };
        target.push(criteria(d, *k)?);
    }
    Ok(Rule {
        kind,
        index,
        domains,
        publish,
        subscribe,
        relay,
    })
}

fn criteria<'a, 'i>(d: &Doc<'a, 'i>, node: Node<'a, 'i>) -> Result<Criteria, AccessError> {
    let kids = d.children(node, &["topics", "partitions", "data_tags"])?;
    let exprs = |list: Node<'a, 'i>, item: &'static str| -> Result<Vec<Expression>, AccessError> {
        let mut out = Vec::new();
        for e in d.children(list, &[item])? {
            let v = d.text(e)?;
            out.push(Expression::new(&v).map_err(|(v, why)| d.invalid(e, &v, &why))?);
        }
        if out.is_empty() {
            return Err(AccessError::MissingElement {
                file: d.file.to_owned(),
                line: d.line(list),
                parent: list.tag_name().name().to_owned(),
                element: item,
            });
        }
        Ok(out)
    };
    let topics = exprs(d.one(node, &kids, "topics")?, "topic")?;
    let partitions = d
        .opt(node, &kids, "partitions")?
        .map(|p| exprs(p, "partition"))
        .transpose()?;
    let mut data_tags = Vec::new();
    if let Some(tags) = d.opt(node, &kids, "data_tags")? {
        for t in d.children(tags, &["tag"])? {
            let tk = d.children(t, &["name", "value"])?;
            data_tags.push(DataTag {
                name: d.text(d.one(t, &tk, "name")?)?,
                value: d.text(d.one(t, &tk, "value")?)?,
            });
        }
    }
    Ok(Criteria {
        topics,
        partitions,
        data_tags,
    })
}
