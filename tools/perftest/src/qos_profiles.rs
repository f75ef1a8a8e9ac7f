//! Where perftest's QoS profiles come from (`-qosFile`, `-qosLibrary`, `-noXmlQos`), as RTI
//! Perftest: a `perftest_qos_profiles.xml` file, or the copy compiled into perftest.

use std::path::{Path, PathBuf};

use crate::options::{Options, DEFAULT_QOS_FILE};

/// The profiles file shipped with perftest, compiled in (used with `-noXmlQos`, or when no
/// `perftest_qos_profiles.xml` is found).
pub const BUILT_IN: &str = include_str!("../perftest_qos_profiles.xml");

/// The profiles perftest looks up in the library: (topic, profile).
pub const PROFILES: [(&str, &str); 3] = [
    ("Throughput", "ThroughputQos"),
    ("Latency", "LatencyQos"),
    ("Announcement", "AnnouncementQos"),
];

/// Which QoS profiles a run uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QosSource {
    /// A file: `-qosFile`, or `perftest_qos_profiles.xml` found in the working directory or
    /// beside the executable.
    File(PathBuf),
    /// The copy compiled into perftest (`-noXmlQos`, or no file found).
    BuiltIn,
}

impl QosSource {
    /// The start-up summary's `XML File:` value (RTI prints `Disabled` for the compiled-in
    /// profiles).
    pub fn summary(&self) -> String {
        match self {
            QosSource::File(p) => p.display().to_string(),
            QosSource::BuiltIn => "Disabled".to_string(),
        }
    }
}

/// Resolves the source of the QoS profiles of a DDS run (raw runs have none).
pub fn qos_source(opts: &Options) -> QosSource {
    if opts.no_xml_qos {
        return QosSource::BuiltIn;
    }
    if let Some(f) = &opts.qos_file {
        return QosSource::File(f.clone());
    }
    let here = Path::new(DEFAULT_QOS_FILE);
    if here.is_file() {
        return QosSource::File(here.to_path_buf());
    }
    if let Some(beside) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(DEFAULT_QOS_FILE)))
        .filter(|p| p.is_file())
    {
        return QosSource::File(beside);
    }
    QosSource::BuiltIn
}
