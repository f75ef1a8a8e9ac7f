//! XML QoS profiles in the OMG DDS-XML QoS syntax ([`QosProvider`]).
//!
//! ```xml
//! <dds>
//!   <qos_library name="MyLibrary">
//!     <qos_profile name="Base" is_default_qos="true">
//!       <datawriter_qos>
//!         <reliability><kind>RELIABLE_RELIABILITY_QOS</kind></reliability>
//!         <history><kind>KEEP_ALL_HISTORY_QOS</kind></history>
//!       </datawriter_qos>
//!     </qos_profile>
//!     <qos_profile name="Fast" base_name="Base">
//!       <datawriter_qos topic_filter="Sensor*">
//!         <reliability><kind>BEST_EFFORT_RELIABILITY_QOS</kind></reliability>
//!       </datawriter_qos>
//!     </qos_profile>
//!   </qos_library>
//! </dds>
//! ```
//!
//! # Contract
//!
//! * A profile is named `library::profile`. Its QoS for an entity is the base profile's QoS
//!   (`base_name`, transitively; the DDS defaults when there is none) with the profile's own
//!   elements applied on top, one policy field at a time: a field the profile does not name keeps
//!   the inherited value.
//! * `<datawriter_qos>`, `<datareader_qos>` and `<topic_qos>` may carry `topic_filter` (`*` and
//!   `?` wildcards): for a topic, the first element whose filter matches is applied, else the
//!   element without a filter, else none (inherited QoS only).
//! * Supported policies (everything the Rust API has): `reliability` (`kind`,
//!   `max_blocking_time`), `durability` (`kind`: VOLATILE or TRANSIENT_LOCAL), `history` (`kind`,
//!   `depth`), `resource_limits` (`max_samples`, `max_instances`, `max_samples_per_instance`;
//!   `LENGTH_UNLIMITED` or -1), `liveliness` (`kind`, `lease_duration`), `ownership` (`kind`),
//!   `deadline` (`period`), and on writers Connext's `batch` (`enable`, `max_data_bytes`,
//!   `max_samples`, `max_flush_delay`, `source_timestamp_resolution`); `partition` (`name/element`) in `<publisher_qos>` and
//!   `<subscriber_qos>`. Durations are `<sec>`/`<nanosec>` (`DURATION_INFINITY`,
//!   `DURATION_INFINITE_SEC`, `DURATION_INFINITE_NSEC` accepted). Enumerators may carry Connext's
//!   `DDS_` prefix; booleans are `true`/`false`/`1`/`0` in any case.
//! * Never silently ignored: an element this loader does not know or FerroDDS does not support
//!   (for example `<latency_budget>` or a `<participant_qos>` policy), a bad value, a missing or
//!   circular base profile, a duplicate name and malformed XML are [`QosXmlError`]s naming the
//!   file, the line and the element.
//! * Loading never panics on any input (fuzz target `qos_xml`).

use std::path::Path;
use std::time::Duration;

use crate::qos::{
    DataReaderQos, DataWriterQos, Durability, History, LivelinessKind, Ownership, PublisherQos,
    ReliabilityKind, SubscriberQos,
};

/// A problem in a QoS XML document: where it is (`origin`, the file name or the name given to
/// [`QosProvider::from_str`]; `line`, 1-based, 0 when not tied to a line) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}:{line}: {message}")]
pub struct QosXmlError {
    /// The file (or name) the document came from.
    pub origin: String,
    /// 1-based line of the offending element (0 when the error is not tied to one line).
    pub line: u32,
    /// What is wrong, naming the element and the value.
    pub message: String,
}

/// Setting one field of an endpoint QoS.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Policy {
    Reliability(ReliabilityKind),
    MaxBlockingTime(Duration),
    Durability(Durability),
    KeepLast,
    KeepAll,
    Depth(u32),
    MaxSamples(Option<u32>),
    MaxInstances(Option<u32>),
    MaxSamplesPerInstance(Option<u32>),
    Liveliness(LivelinessKind),
    LeaseDuration(Option<Duration>),
    Ownership(Ownership),
    Deadline(Option<Duration>),
    BatchEnable(bool),
    BatchMaxBytes(usize),
    BatchMaxSamples(usize),
    BatchMaxFlushDelay(Duration),
    BatchTimestampResolution(Duration),
}

/// One `<datawriter_qos>`/`<datareader_qos>`/`<topic_qos>` element.
#[derive(Debug, Clone)]
struct Element {
    filter: Option<String>,
    policies: Vec<Policy>,
}

#[derive(Debug, Clone, Default)]
struct Profile {
    library: String,
    name: String,
    line: u32,
    /// `(library, profile, line of the attribute's element)`.
    base: Option<(String, String, u32)>,
    writers: Vec<Element>,
    readers: Vec<Element>,
    topics: Vec<Element>,
    publisher_partition: Option<Vec<String>>,
    subscriber_partition: Option<Vec<String>>,
}

/// QoS profiles loaded from a DDS-XML document (see the module documentation).
#[derive(Debug, Clone)]
pub struct QosProvider {
    origin: String,
    profiles: Vec<Profile>,
    default_profile: Option<usize>,
}

/// Which entity kind a `<…_qos>` element is for (what it may contain).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Writer,
    Reader,
    Topic,
}

const MAX_BASE_DEPTH: usize = 64;

struct Ctx<'a> {
    origin: &'a str,
    doc: &'a roxmltree::Document<'a>,
}

impl Ctx<'_> {
    fn line(&self, n: roxmltree::Node<'_, '_>) -> u32 {
        self.doc.text_pos_at(n.range().start).row
    }
    fn err(&self, n: roxmltree::Node<'_, '_>, message: String) -> QosXmlError {
        QosXmlError {
            origin: self.origin.to_string(),
            line: self.line(n),
            message,
        }
    }
}

fn elements<'a, 'i>(n: roxmltree::Node<'a, 'i>) -> impl Iterator<Item = roxmltree::Node<'a, 'i>> {
    n.children().filter(roxmltree::Node::is_element)
}

fn text<'a>(ctx: &Ctx<'_>, n: roxmltree::Node<'a, '_>) -> Result<&'a str, QosXmlError> {
    if let Some(child) = elements(n).next() {
        return Err(ctx.err(
            child,
            format!(
                "<{}> holds a value, not an element <{}>",
                n.tag_name().name(),
                child.tag_name().name()
            ),
        ));
    }
    Ok(n.text().unwrap_or("").trim())
}

/// An enumerator, with or without Connext's `DDS_` prefix.
fn enumerator<T: Copy>(
    ctx: &Ctx<'_>,
    n: roxmltree::Node<'_, '_>,
    valid: &[(&str, T)],
) -> Result<T, QosXmlError> {
    let v = text(ctx, n)?;
    let bare = v.strip_prefix("DDS_").unwrap_or(v);
    valid
        .iter()
        .find(|(name, _)| *name == bare)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            let names: Vec<&str> = valid.iter().map(|(n, _)| *n).collect();
            ctx.err(
                n,
                format!(
                    "<{}>: '{v}' is not a valid value (valid: {})",
                    n.tag_name().name(),
                    names.join(", ")
                ),
            )
        })
}

fn boolean(ctx: &Ctx<'_>, n: roxmltree::Node<'_, '_>) -> Result<bool, QosXmlError> {
    let v = text(ctx, n)?;
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "dds_boolean_true" => Ok(true),
        "false" | "0" | "dds_boolean_false" => Ok(false),
        _ => Err(ctx.err(
            n,
            format!(
                "<{}>: '{v}' is not a boolean (valid: true, false, 1, 0)",
                n.tag_name().name()
            ),
        )),
    }
}

/// A non-negative count; `LENGTH_UNLIMITED` or -1 give `None` when `unlimited` is allowed.
fn count(
    ctx: &Ctx<'_>,
    n: roxmltree::Node<'_, '_>,
    unlimited: bool,
) -> Result<Option<u32>, QosXmlError> {
    let v = text(ctx, n)?;
    let bare = v.strip_prefix("DDS_").unwrap_or(v);
    if unlimited && (bare == "LENGTH_UNLIMITED" || v == "-1") {
        return Ok(None);
    }
    v.parse::<u32>().map(Some).map_err(|_| {
        ctx.err(
            n,
            format!(
                "<{}>: '{v}' is not a non-negative integer{}",
                n.tag_name().name(),
                if unlimited {
                    " or LENGTH_UNLIMITED"
                } else {
                    ""
                }
            ),
        )
    })
}

/// A `<sec>`/`<nanosec>` duration; `None` = infinite.
fn duration(ctx: &Ctx<'_>, n: roxmltree::Node<'_, '_>) -> Result<Option<Duration>, QosXmlError> {
    let mut sec: Option<u64> = Some(0);
    let mut nanosec: Option<u32> = Some(0);
    let mut seen = false;
    for c in elements(n) {
        seen = true;
        let v = text(ctx, c)?;
        let bare = v.strip_prefix("DDS_").unwrap_or(v);
        let infinite = matches!(
            bare,
            "DURATION_INFINITY" | "DURATION_INFINITE_SEC" | "DURATION_INFINITE_NSEC"
        );
        match c.tag_name().name() {
            "sec" => {
                sec = if infinite || v == "2147483647" {
                    None
                } else {
                    Some(v.parse::<u64>().map_err(|_| {
                        ctx.err(
                            c,
                            format!("<sec>: '{v}' is not a number of seconds or DURATION_INFINITY"),
                        )
                    })?)
                }
            }
            "nanosec" => {
                nanosec = if infinite || v == "2147483647" || v == "4294967295" {
                    None
                } else {
                    match v.parse::<u32>() {
                        Ok(ns) if ns < 1_000_000_000 => Some(ns),
                        _ => {
                            return Err(ctx.err(
                                c,
                                format!(
                                    "<nanosec>: '{v}' is not a number of nanoseconds below 1000000000 or DURATION_INFINITY"
                                ),
                            ))
                        }
                    }
                }
            }
            other => {
                return Err(ctx.err(
                    c,
                    format!(
                        "<{}> has no element <{other}> (valid: sec, nanosec)",
                        n.tag_name().name()
                    ),
                ))
            }
        }
    }
    if !seen {
        return Err(ctx.err(
            n,
            format!("<{}> needs <sec> and/or <nanosec>", n.tag_name().name()),
        ));
    }
    Ok(match (sec, nanosec) {
        (Some(s), Some(ns)) => Some(Duration::new(s, ns)),
        _ => None,
    })
}

fn unknown(ctx: &Ctx<'_>, parent: &str, c: roxmltree::Node<'_, '_>, valid: &[&str]) -> QosXmlError {
    ctx.err(
        c,
        format!(
            "<{parent}> has no element <{}> that FerroDDS supports (valid: {})",
            c.tag_name().name(),
            valid.join(", ")
        ),
    )
}

fn parse_policy(
    ctx: &Ctx<'_>,
    kind: Kind,
    p: roxmltree::Node<'_, '_>,
    out: &mut Vec<Policy>,
) -> Result<(), QosXmlError> {
    let name = p.tag_name().name();
    match name {
        "reliability" => {
            for c in elements(p) {
                match c.tag_name().name() {
                    "kind" => out.push(Policy::Reliability(enumerator(
                        ctx,
                        c,
                        &[
                            ("BEST_EFFORT_RELIABILITY_QOS", ReliabilityKind::BestEffort),
                            ("RELIABLE_RELIABILITY_QOS", ReliabilityKind::Reliable),
                        ],
                    )?)),
                    "max_blocking_time" => out.push(Policy::MaxBlockingTime(
                        duration(ctx, c)?.unwrap_or(Duration::MAX),
                    )),
                    _ => return Err(unknown(ctx, name, c, &["kind", "max_blocking_time"])),
                }
            }
        }
        "durability" => {
            for c in elements(p) {
                match c.tag_name().name() {
                    "kind" => {
                        let v = text(ctx, c)?;
                        let bare = v.strip_prefix("DDS_").unwrap_or(v);
                        if matches!(
                            bare,
                            "TRANSIENT_DURABILITY_QOS" | "PERSISTENT_DURABILITY_QOS"
                        ) {
                            return Err(ctx.err(
                                c,
                                format!("<kind>: '{v}' needs a persistence service, which FerroDDS does not have (supported: VOLATILE_DURABILITY_QOS, TRANSIENT_LOCAL_DURABILITY_QOS)"),
                            ));
                        }
                        out.push(Policy::Durability(enumerator(
                            ctx,
                            c,
                            &[
                                ("VOLATILE_DURABILITY_QOS", Durability::Volatile),
                                ("TRANSIENT_LOCAL_DURABILITY_QOS", Durability::TransientLocal),
                            ],
                        )?));
                    }
                    _ => return Err(unknown(ctx, name, c, &["kind"])),
                }
            }
        }
        "history" => {
            let mut depth = None;
            for c in elements(p) {
                match c.tag_name().name() {
                    "kind" => out.push(enumerator(
                        ctx,
                        c,
                        &[
                            ("KEEP_LAST_HISTORY_QOS", Policy::KeepLast),
                            ("KEEP_ALL_HISTORY_QOS", Policy::KeepAll),
                        ],
                    )?),
                    "depth" => {
                        let d = count(ctx, c, false)?.unwrap_or(1);
                        if d == 0 {
                            return Err(ctx.err(c, "<depth>: must be at least 1".into()));
                        }
                        depth = Some(d);
                    }
                    _ => return Err(unknown(ctx, name, c, &["kind", "depth"])),
                }
            }
            // After the kind, whatever the order in the document.
            if let Some(d) = depth {
                out.push(Policy::Depth(d));
            }
        }
        "resource_limits" => {
            for c in elements(p) {
                let v = count(ctx, c, true);
                match c.tag_name().name() {
                    "max_samples" => out.push(Policy::MaxSamples(v?)),
                    "max_instances" => out.push(Policy::MaxInstances(v?)),
                    "max_samples_per_instance" => out.push(Policy::MaxSamplesPerInstance(v?)),
                    _ => {
                        return Err(unknown(
                            ctx,
                            name,
                            c,
                            &["max_samples", "max_instances", "max_samples_per_instance"],
                        ))
                    }
                }
            }
        }
        "liveliness" => {
            for c in elements(p) {
                match c.tag_name().name() {
                    "kind" => out.push(Policy::Liveliness(enumerator(
                        ctx,
                        c,
                        &[
                            ("AUTOMATIC_LIVELINESS_QOS", LivelinessKind::Automatic),
                            (
                                "MANUAL_BY_PARTICIPANT_LIVELINESS_QOS",
                                LivelinessKind::ManualByParticipant,
                            ),
                            (
                                "MANUAL_BY_TOPIC_LIVELINESS_QOS",
                                LivelinessKind::ManualByTopic,
                            ),
                        ],
                    )?)),
                    "lease_duration" => out.push(Policy::LeaseDuration(duration(ctx, c)?)),
                    _ => return Err(unknown(ctx, name, c, &["kind", "lease_duration"])),
                }
            }
        }
        "ownership" => {
            for c in elements(p) {
                match c.tag_name().name() {
                    "kind" => out.push(Policy::Ownership(enumerator(
                        ctx,
                        c,
                        &[
                            ("SHARED_OWNERSHIP_QOS", Ownership::Shared),
                            ("EXCLUSIVE_OWNERSHIP_QOS", Ownership::Exclusive),
                        ],
                    )?)),
                    _ => return Err(unknown(ctx, name, c, &["kind"])),
                }
            }
        }
        "deadline" => {
            for c in elements(p) {
                match c.tag_name().name() {
                    "period" => out.push(Policy::Deadline(duration(ctx, c)?)),
                    _ => return Err(unknown(ctx, name, c, &["period"])),
                }
            }
        }
        "batch" if kind == Kind::Writer => {
            for c in elements(p) {
                match c.tag_name().name() {
                    "enable" => out.push(Policy::BatchEnable(boolean(ctx, c)?)),
                    "max_data_bytes" => out.push(Policy::BatchMaxBytes(
                        count(ctx, c, true)?.map_or(usize::MAX, |v| v as usize),
                    )),
                    "max_samples" => out.push(Policy::BatchMaxSamples(
                        count(ctx, c, true)?.map_or(0, |v| v as usize),
                    )),
                    "max_flush_delay" => out.push(Policy::BatchMaxFlushDelay(
                        duration(ctx, c)?.unwrap_or(Duration::MAX),
                    )),
                    "source_timestamp_resolution" => out.push(Policy::BatchTimestampResolution(
                        duration(ctx, c)?.unwrap_or(Duration::MAX),
                    )),
                    _ => {
                        return Err(unknown(
                            ctx,
                            name,
                            c,
                            &[
                                "enable",
                                "max_data_bytes",
                                "max_samples",
                                "max_flush_delay",
                                "source_timestamp_resolution",
                            ],
                        ))
                    }
                }
            }
        }
        _ => {
            let parent = p.parent().map_or("", |n| n.tag_name().name());
            let mut valid = vec![
                "reliability",
                "durability",
                "history",
                "resource_limits",
                "liveliness",
                "ownership",
                "deadline",
            ];
            if kind == Kind::Writer {
                valid.push("batch");
            }
            return Err(unknown(ctx, parent, p, &valid));
        }
    }
    Ok(())
}

fn parse_element(
    ctx: &Ctx<'_>,
    kind: Kind,
    n: roxmltree::Node<'_, '_>,
) -> Result<Element, QosXmlError> {
    for a in n.attributes() {
        if !matches!(a.name(), "topic_filter" | "name") {
            return Err(ctx.err(
                n,
                format!(
                    "<{}> has no attribute '{}' that FerroDDS supports (valid: topic_filter)",
                    n.tag_name().name(),
                    a.name()
                ),
            ));
        }
    }
    let mut policies = Vec::new();
    for p in elements(n) {
        if kind == Kind::Topic {
            return Err(ctx.err(
                p,
                format!(
                    "<topic_qos>: <{}> is not supported on topics by FerroDDS (set it in <datawriter_qos> and <datareader_qos>)",
                    p.tag_name().name()
                ),
            ));
        }
        parse_policy(ctx, kind, p, &mut policies)?;
    }
    Ok(Element {
        filter: n.attribute("topic_filter").map(str::to_string),
        policies,
    })
}

fn parse_partition(ctx: &Ctx<'_>, n: roxmltree::Node<'_, '_>) -> Result<Vec<String>, QosXmlError> {
    let parent = n.tag_name().name();
    let mut names = Vec::new();
    for p in elements(n) {
        if p.tag_name().name() != "partition" {
            return Err(unknown(ctx, parent, p, &["partition"]));
        }
        for c in elements(p) {
            if c.tag_name().name() != "name" {
                return Err(unknown(ctx, "partition", c, &["name"]));
            }
            for e in elements(c) {
                if e.tag_name().name() != "element" {
                    return Err(unknown(ctx, "name", e, &["element"]));
                }
                names.push(text(ctx, e)?.to_string());
            }
        }
    }
    Ok(names)
}

fn parse_profile(
    ctx: &Ctx<'_>,
    library: &str,
    n: roxmltree::Node<'_, '_>,
) -> Result<(Profile, bool), QosXmlError> {
    let name = n
        .attribute("name")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ctx.err(n, "<qos_profile> needs a 'name' attribute".into()))?;
    let mut default = false;
    for a in n.attributes() {
        match a.name() {
            "name" => {}
            "base_name" => {}
            "is_default_qos" => {
                default = match a.value().to_ascii_lowercase().as_str() {
                    "true" | "1" => true,
                    "false" | "0" => false,
                    v => {
                        return Err(ctx.err(
                            n,
                            format!("<qos_profile name=\"{name}\">: is_default_qos '{v}' is not a boolean (valid: true, false, 1, 0)"),
                        ))
                    }
                }
            }
            other => {
                return Err(ctx.err(
                    n,
                    format!("<qos_profile name=\"{name}\"> has no attribute '{other}' that FerroDDS supports (valid: name, base_name, is_default_qos)"),
                ))
            }
        }
    }
    let base = n.attribute("base_name").map(|b| {
        let (lib, prof) = b.split_once("::").unwrap_or((library, b));
        (lib.to_string(), prof.to_string(), ctx.line(n))
    });
    let mut p = Profile {
        library: library.to_string(),
        name: name.to_string(),
        line: ctx.line(n),
        base,
        ..Profile::default()
    };
    for c in elements(n) {
        match c.tag_name().name() {
            "datawriter_qos" => p.writers.push(parse_element(ctx, Kind::Writer, c)?),
            "datareader_qos" => p.readers.push(parse_element(ctx, Kind::Reader, c)?),
            "topic_qos" => p.topics.push(parse_element(ctx, Kind::Topic, c)?),
            "publisher_qos" => p.publisher_partition = Some(parse_partition(ctx, c)?),
            "subscriber_qos" => p.subscriber_partition = Some(parse_partition(ctx, c)?),
            "participant_qos" => {
                if let Some(e) = elements(c).next() {
                    return Err(ctx.err(
                        e,
                        format!(
                            "<participant_qos>: <{}> is not supported by FerroDDS's QoS profiles (configure the participant with ferrodds::Config)",
                            e.tag_name().name()
                        ),
                    ));
                }
            }
            _ => {
                return Err(unknown(
                    ctx,
                    "qos_profile",
                    c,
                    &[
                        "participant_qos",
                        "topic_qos",
                        "publisher_qos",
                        "subscriber_qos",
                        "datawriter_qos",
                        "datareader_qos",
                    ],
                ))
            }
        }
    }
    Ok((p, default))
}

/// `*` (any run) and `?` (any one character) wildcards.
fn wildcard(pattern: &str, s: &str) -> bool {
    let (p, s): (Vec<char>, Vec<char>) = (pattern.chars().collect(), s.chars().collect());
    let (mut pi, mut si, mut star, mut mark) = (0, 0, None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

fn choose<'a>(elements: &'a [Element], topic: &str) -> Option<&'a Element> {
    elements
        .iter()
        .find(|e| e.filter.as_deref().is_some_and(|f| wildcard(f, topic)))
        .or_else(|| elements.iter().find(|e| e.filter.is_none()))
}

/// A function applying a policy common to writers and readers; it returns the policy when it
/// is not one.
macro_rules! apply_common {
    ($name:ident, $t:ty) => {
        fn $name(q: &mut $t, p: Policy) -> Option<Policy> {
            match p {
                Policy::Reliability(k) => q.reliability.kind = k,
                Policy::MaxBlockingTime(d) => q.reliability.max_blocking_time = d,
                Policy::Durability(d) => q.durability = d,
                Policy::KeepLast => {
                    if !matches!(q.history, History::KeepLast(_)) {
                        q.history = History::KeepLast(1);
                    }
                }
                Policy::KeepAll => q.history = History::KeepAll,
                Policy::Depth(d) => {
                    if let History::KeepLast(_) = q.history {
                        q.history = History::KeepLast(d);
                    }
                }
                Policy::MaxSamples(v) => q.resource_limits.max_samples = v,
                Policy::MaxInstances(v) => q.resource_limits.max_instances = v,
                Policy::MaxSamplesPerInstance(v) => q.resource_limits.max_samples_per_instance = v,
                Policy::Liveliness(k) => q.liveliness.kind = k,
                Policy::LeaseDuration(d) => q.liveliness.lease_duration = d,
                Policy::Ownership(o) => q.ownership = o,
                Policy::Deadline(d) => q.deadline = d,
                other => return Some(other),
            }
            None
        }
    };
}
apply_common!(apply_writer_common, DataWriterQos);
apply_common!(apply_reader_common, DataReaderQos);

trait EndpointQos {
    /// Applies `p`; returns it when this kind of QoS has no such field.
    fn apply(&mut self, p: Policy) -> Option<Policy>;
}

impl EndpointQos for DataWriterQos {
    fn apply(&mut self, p: Policy) -> Option<Policy> {
        let rest = apply_writer_common(self, p)?;
        match rest {
            Policy::BatchEnable(b) => self.batching.enabled = b,
            Policy::BatchMaxBytes(b) => self.batching.max_bytes = b,
            Policy::BatchMaxSamples(s) => self.batching.max_samples = s,
            Policy::BatchMaxFlushDelay(d) => self.batching.max_flush_delay = d,
            Policy::BatchTimestampResolution(d) => self.batching.source_timestamp_resolution = d,
            other => return Some(other),
        }
        None
    }
}

impl EndpointQos for DataReaderQos {
    fn apply(&mut self, p: Policy) -> Option<Policy> {
        // Batch policies are refused on readers when parsing.
        apply_reader_common(self, p)
    }
}

impl QosProvider {
    /// Loads a DDS-XML QoS document from a file. Errors name the file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, QosXmlError> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| QosXmlError {
            origin: origin.clone(),
            line: 0,
            message: format!("cannot read the QoS file: {e}"),
        })?;
        Self::from_str(&text, &origin)
    }

    /// Loads a DDS-XML QoS document; `origin` names it in errors (a file name, or a label
    /// such as `"built-in"`).
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(xml: &str, origin: &str) -> Result<Self, QosXmlError> {
        let doc = roxmltree::Document::parse(xml).map_err(|e| {
            let pos = e.pos();
            QosXmlError {
                origin: origin.to_string(),
                line: pos.row,
                message: format!("not well-formed XML: {e}"),
            }
        })?;
        let ctx = Ctx { origin, doc: &doc };
        let root = doc.root_element();
        if root.tag_name().name() != "dds" {
            return Err(ctx.err(
                root,
                format!(
                    "the root element is <{}>, expected <dds>",
                    root.tag_name().name()
                ),
            ));
        }
        let mut profiles: Vec<Profile> = Vec::new();
        let mut default_profile = None;
        for lib in elements(root) {
            if lib.tag_name().name() != "qos_library" {
                return Err(unknown(&ctx, "dds", lib, &["qos_library"]));
            }
            let lib_name = lib
                .attribute("name")
                .filter(|s| !s.is_empty())
                .ok_or_else(|| ctx.err(lib, "<qos_library> needs a 'name' attribute".into()))?;
            for n in elements(lib) {
                if n.tag_name().name() != "qos_profile" {
                    return Err(unknown(&ctx, "qos_library", n, &["qos_profile"]));
                }
                let (p, is_default) = parse_profile(&ctx, lib_name, n)?;
                if profiles
                    .iter()
                    .any(|q| q.library == p.library && q.name == p.name)
                {
                    return Err(ctx.err(
                        n,
                        format!("profile {lib_name}::{} is defined twice", p.name),
                    ));
                }
                if is_default {
                    if let Some(d) = default_profile {
                        let d: &Profile = &profiles[d];
                        return Err(ctx.err(
                            n,
                            format!(
                                "<qos_profile name=\"{}\">: is_default_qos is already set on {}::{} (line {})",
                                p.name, d.library, d.name, d.line
                            ),
                        ));
                    }
                    default_profile = Some(profiles.len());
                }
                profiles.push(p);
            }
        }
        let provider = Self {
            origin: origin.to_string(),
            profiles,
            default_profile,
        };
        // Every base must exist and no chain may loop.
        for i in 0..provider.profiles.len() {
            provider.chain(i)?;
        }
        Ok(provider)
    }

    /// Profile indices from the most basic to `i`.
    fn chain(&self, i: usize) -> Result<Vec<usize>, QosXmlError> {
        let mut chain = vec![i];
        let mut cur = i;
        while let Some((lib, name, line)) = &self.profiles[cur].base {
            let next = self.index(lib, name).ok_or_else(|| QosXmlError {
                origin: self.origin.clone(),
                line: *line,
                message: format!(
                    "<qos_profile name=\"{}\">: base profile {lib}::{name} is not defined",
                    self.profiles[cur].name
                ),
            })?;
            if chain.contains(&next) || chain.len() > MAX_BASE_DEPTH {
                let p = &self.profiles[i];
                return Err(QosXmlError {
                    origin: self.origin.clone(),
                    line: p.line,
                    message: format!(
                        "<qos_profile name=\"{}\">: its base_name chain loops back to {lib}::{name}",
                        p.name
                    ),
                });
            }
            chain.push(next);
            cur = next;
        }
        chain.reverse();
        Ok(chain)
    }

    fn index(&self, library: &str, name: &str) -> Option<usize> {
        self.profiles
            .iter()
            .position(|p| p.library == library && p.name == name)
    }

    /// The profiles, as `library::profile`, in document order.
    pub fn profiles(&self) -> Vec<String> {
        self.profiles
            .iter()
            .map(|p| format!("{}::{}", p.library, p.name))
            .collect()
    }

    /// The profile marked `is_default_qos="true"`, if any, as `library::profile`.
    pub fn default_profile(&self) -> Option<String> {
        self.default_profile
            .map(|i| format!("{}::{}", self.profiles[i].library, self.profiles[i].name))
    }

    /// Whether `library::profile` is defined.
    pub fn has_profile(&self, profile: &str) -> bool {
        self.find(profile).is_ok()
    }

    fn find(&self, profile: &str) -> Result<Vec<usize>, QosXmlError> {
        let (lib, name) = profile.split_once("::").ok_or_else(|| QosXmlError {
            origin: self.origin.clone(),
            line: 0,
            message: format!("'{profile}' is not a profile name of the form library::profile"),
        })?;
        let i = self.index(lib, name).ok_or_else(|| QosXmlError {
            origin: self.origin.clone(),
            line: 0,
            message: format!(
                "no QoS profile {profile} (defined: {})",
                self.profiles().join(", ")
            ),
        })?;
        self.chain(i)
    }

    fn endpoint<Q: EndpointQos>(
        &self,
        profile: &str,
        topic: &str,
        mut q: Q,
        pick: fn(&Profile) -> &[Element],
    ) -> Result<Q, QosXmlError> {
        for i in self.find(profile)? {
            if let Some(e) = choose(pick(&self.profiles[i]), topic) {
                for &p in &e.policies {
                    // Parsing admits only the policies of this kind of entity.
                    let _ = q.apply(p);
                }
            }
        }
        Ok(q)
    }

    /// The writer QoS of `profile` (`library::profile`) for `topic`.
    pub fn datawriter_qos(&self, profile: &str, topic: &str) -> Result<DataWriterQos, QosXmlError> {
        self.endpoint(profile, topic, DataWriterQos::default(), |p| &p.writers)
    }

    /// The reader QoS of `profile` (`library::profile`) for `topic`.
    pub fn datareader_qos(&self, profile: &str, topic: &str) -> Result<DataReaderQos, QosXmlError> {
        self.endpoint(profile, topic, DataReaderQos::default(), |p| &p.readers)
    }

    /// The publisher QoS (partitions) of `profile`.
    pub fn publisher_qos(&self, profile: &str) -> Result<PublisherQos, QosXmlError> {
        let mut q = PublisherQos::default();
        for i in self.find(profile)? {
            if let Some(p) = &self.profiles[i].publisher_partition {
                q.partition.clone_from(p);
            }
        }
        Ok(q)
    }

    /// The subscriber QoS (partitions) of `profile`.
    pub fn subscriber_qos(&self, profile: &str) -> Result<SubscriberQos, QosXmlError> {
        let mut q = SubscriberQos::default();
        for i in self.find(profile)? {
            if let Some(p) = &self.profiles[i].subscriber_partition {
                q.partition.clone_from(p);
            }
        }
        Ok(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::Batching;

    fn load(xml: &str) -> Result<QosProvider, QosXmlError> {
        QosProvider::from_str(xml, "t.xml")
    }

    const DOC: &str = r#"<?xml version="1.0"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <qos_library name="Lib">
    <qos_profile name="Base" is_default_qos="TRUE">
      <datawriter_qos>
        <reliability>
          <kind>DDS_RELIABLE_RELIABILITY_QOS</kind>
          <max_blocking_time><sec>DURATION_INFINITY</sec><nanosec>DURATION_INFINITY</nanosec></max_blocking_time>
        </reliability>
        <history><depth>7</depth><kind>KEEP_LAST_HISTORY_QOS</kind></history>
        <resource_limits><max_samples>LENGTH_UNLIMITED</max_samples><max_instances>10</max_instances></resource_limits>
      </datawriter_qos>
      <datareader_qos>
        <reliability><kind>RELIABLE_RELIABILITY_QOS</kind></reliability>
        <deadline><period><sec>1</sec><nanosec>500000000</nanosec></period></deadline>
      </datareader_qos>
      <publisher_qos><partition><name><element>A</element><element>B*</element></name></partition></publisher_qos>
    </qos_profile>
    <qos_profile name="Derived" base_name="Base">
      <datawriter_qos topic_filter="Fast*">
        <reliability><kind>BEST_EFFORT_RELIABILITY_QOS</kind></reliability>
        <batch><enable>true</enable><max_data_bytes>4096</max_data_bytes>
          <source_timestamp_resolution><sec>0</sec><nanosec>250000</nanosec></source_timestamp_resolution></batch>
      </datawriter_qos>
      <datawriter_qos>
        <durability><kind>TRANSIENT_LOCAL_DURABILITY_QOS</kind></durability>
        <liveliness><kind>MANUAL_BY_TOPIC_LIVELINESS_QOS</kind><lease_duration><sec>2</sec></lease_duration></liveliness>
        <ownership><kind>EXCLUSIVE_OWNERSHIP_QOS</kind></ownership>
      </datawriter_qos>
    </qos_profile>
  </qos_library>
  <qos_library name="Other">
    <qos_profile name="X" base_name="Lib::Derived"/>
  </qos_library>
</dds>"#;

    #[test]
    fn inheritance_filters_and_every_policy() {
        let p = load(DOC).unwrap();
        assert_eq!(p.profiles(), ["Lib::Base", "Lib::Derived", "Other::X"]);
        assert_eq!(p.default_profile().as_deref(), Some("Lib::Base"));
        let base = p.datawriter_qos("Lib::Base", "T").unwrap();
        assert_eq!(base.reliability.kind, ReliabilityKind::Reliable);
        assert_eq!(base.reliability.max_blocking_time, Duration::MAX);
        assert_eq!(base.history, History::KeepLast(7));
        assert_eq!(base.resource_limits.max_samples, None);
        assert_eq!(base.resource_limits.max_instances, Some(10));
        // Unfiltered element of Derived: inherits Base, adds its own.
        let d = p.datawriter_qos("Other::X", "Slow").unwrap();
        assert_eq!(d.reliability.kind, ReliabilityKind::Reliable);
        assert_eq!(d.durability, Durability::TransientLocal);
        assert_eq!(d.liveliness.kind, LivelinessKind::ManualByTopic);
        assert_eq!(d.liveliness.lease_duration, Some(Duration::from_secs(2)));
        assert_eq!(d.ownership, Ownership::Exclusive);
        assert_eq!(d.history, History::KeepLast(7));
        assert!(!d.batching.enabled);
        // The filtered element wins for matching topics (and only it applies).
        let f = p.datawriter_qos("Lib::Derived", "FastTopic").unwrap();
        assert_eq!(f.reliability.kind, ReliabilityKind::BestEffort);
        assert_eq!(f.durability, Durability::Volatile);
        assert_eq!(
            f.batching,
            Batching {
                enabled: true,
                max_bytes: 4096,
                source_timestamp_resolution: Duration::from_micros(250),
                ..Batching::default()
            }
        );
        let r = p.datareader_qos("Lib::Derived", "T").unwrap();
        assert_eq!(r.reliability.kind, ReliabilityKind::Reliable);
        assert_eq!(r.deadline, Some(Duration::from_millis(1500)));
        assert_eq!(
            p.publisher_qos("Other::X").unwrap().partition,
            ["A".to_string(), "B*".to_string()]
        );
        assert!(p.subscriber_qos("Lib::Base").unwrap().partition.is_empty());
    }

    fn err(xml: &str) -> String {
        load(xml).unwrap_err().to_string()
    }

    fn wrap(profile_body: &str) -> String {
        format!(
            "<dds>\n<qos_library name=\"L\">\n<qos_profile name=\"P\">\n{profile_body}\n</qos_profile>\n</qos_library>\n</dds>"
        )
    }

    #[test]
    fn unknown_elements_name_file_line_and_element() {
        let e = err(&wrap(
            "<datawriter_qos>\n<latency_budget><duration><sec>1</sec></duration></latency_budget>\n</datawriter_qos>",
        ));
        assert!(e.starts_with("t.xml:5: "), "{e}");
        assert!(e.contains("<latency_budget>"), "{e}");
        assert!(e.contains("reliability"), "{e}");
        let e = err(&wrap("<datareader_qos><batch/></datareader_qos>"));
        assert!(e.contains("<batch>"), "{e}");
        let e = err(&wrap("<participant_qos><discovery/></participant_qos>"));
        assert!(
            e.contains("<discovery>") && e.contains("not supported"),
            "{e}"
        );
        let e = err("<dds><types/></dds>");
        assert!(e.contains("<types>"), "{e}");
        let e = err("<config/>");
        assert!(e.contains("expected <dds>"), "{e}");
        let e = err(&wrap(
            "<datawriter_qos><reliability><kinds>x</kinds></reliability></datawriter_qos>",
        ));
        assert!(
            e.contains("<kinds>") && e.contains("valid: kind, max_blocking_time"),
            "{e}"
        );
        let e = err(&wrap("<datawriter_qos foo=\"1\"/>"));
        assert!(e.contains("attribute 'foo'"), "{e}");
    }

    #[test]
    fn bad_values_name_the_value_and_the_valid_ones() {
        let e = err(&wrap(
            "<datawriter_qos><reliability><kind>RELIABLE</kind></reliability></datawriter_qos>",
        ));
        assert!(e.contains("'RELIABLE'"), "{e}");
        assert!(e.contains("RELIABLE_RELIABILITY_QOS"), "{e}");
        let e = err(&wrap(
            "<datawriter_qos><history><depth>0</depth></history></datawriter_qos>",
        ));
        assert!(e.contains("<depth>"), "{e}");
        let e = err(&wrap(
            "<datawriter_qos><resource_limits><max_samples>12x</max_samples></resource_limits></datawriter_qos>",
        ));
        assert!(e.contains("'12x'"), "{e}");
        let e = err(&wrap(
            "<datawriter_qos><deadline><period><nanosec>1000000000</nanosec></period></deadline></datawriter_qos>",
        ));
        assert!(e.contains("<nanosec>"), "{e}");
        let e = err(&wrap(
            "<datawriter_qos><durability><kind>PERSISTENT_DURABILITY_QOS</kind></durability></datawriter_qos>",
        ));
        assert!(e.contains("persistence service"), "{e}");
        let e = err(&wrap(
            "<datawriter_qos><batch><enable>yes</enable></batch></datawriter_qos>",
        ));
        assert!(e.contains("'yes' is not a boolean"), "{e}");
    }

    #[test]
    fn missing_and_looping_bases_and_duplicates() {
        let e = err(
            "<dds><qos_library name=\"L\">\n<qos_profile name=\"A\" base_name=\"Nope\"/></qos_library></dds>",
        );
        assert!(
            e.contains(":2:") && e.contains("L::Nope is not defined"),
            "{e}"
        );
        let e = err("<dds><qos_library name=\"L\"><qos_profile name=\"A\" base_name=\"B\"/><qos_profile name=\"B\" base_name=\"A\"/></qos_library></dds>");
        assert!(e.contains("loops"), "{e}");
        let e = err("<dds><qos_library name=\"L\"><qos_profile name=\"A\"/><qos_profile name=\"A\"/></qos_library></dds>");
        assert!(e.contains("defined twice"), "{e}");
        let e = err("<dds><qos_library name=\"L\"><qos_profile name=\"A\" is_default_qos=\"true\"/><qos_profile name=\"B\" is_default_qos=\"true\"/></qos_library></dds>");
        assert!(e.contains("already set on L::A"), "{e}");
        let p = load(DOC).unwrap();
        let e = p.datawriter_qos("Lib::Nope", "T").unwrap_err().to_string();
        assert!(
            e.contains("no QoS profile Lib::Nope") && e.contains("Lib::Base"),
            "{e}"
        );
        let e = p.datawriter_qos("Base", "T").unwrap_err().to_string();
        assert!(e.contains("library::profile"), "{e}");
    }

    #[test]
    fn malformed_xml_and_missing_files() {
        let e = err("<dds>\n<qos_library name=\"L\">\n</dds>");
        assert!(e.starts_with("t.xml:3: not well-formed XML"), "{e}");
        let e = QosProvider::from_file("/nonexistent/qos.xml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/nonexistent/qos.xml:0: cannot read"), "{e}");
        for cut in 0..DOC.len() {
            if DOC.is_char_boundary(cut) {
                let _ = load(&DOC[..cut]);
            }
        }
    }

    #[test]
    fn wildcards() {
        assert!(wildcard("*", ""));
        assert!(wildcard("Fast*", "FastTopic"));
        assert!(!wildcard("Fast*", "SlowFast"));
        assert!(wildcard("?a*b", "xab"));
        assert!(wildcard("*b*", "abc"));
        assert!(!wildcard("a?", "a"));
    }
}
