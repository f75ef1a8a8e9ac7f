//! The lab's error type.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong in the lab.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LabError {
    /// A command-line or file value could not be understood.
    #[error("invalid {what}: {value:?}")]
    BadValue {
        /// What was being parsed.
        what: &'static str,
        /// The offending text.
        value: String,
    },
    /// `--cpu` names a CPU this process may not run on.
    #[error("invalid --cpu {list:?}: CPU {cpu} is not available here (allowed: {allowed})")]
    CpuNotAvailable {
        /// The first CPU that is not available.
        cpu: usize,
        /// The list as given.
        list: String,
        /// The CPUs this process may use.
        allowed: String,
    },
    /// A file or directory operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A program could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Reading or writing CSV failed.
    #[error("{path}: CSV: {source}")]
    Csv {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: csv::Error,
    },
    /// A CSV file lacks a required column.
    #[error("{path}: missing column {column:?}")]
    MissingColumn {
        /// The file.
        path: PathBuf,
        /// The column.
        column: &'static str,
    },
    /// Reading or writing JSON failed.
    #[error("{path}: JSON: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// A results directory holds no recorded runs.
    #[error("{0}: no recorded results (latency.csv / throughput.csv)")]
    NoResults(PathBuf),
    /// The selected axes expand to no run at all.
    #[error("the selected matrix is empty (check --sizes, --tests, --reliability, --keyed, --batching, --systems)")]
    EmptyMatrix,
    /// The netns topology needs root.
    #[error("the netns topology needs root (network namespaces, veth, nftables): run the lab as root or use --topology loopback")]
    NotRoot,
    /// A netns/veth/nft/tc set-up step failed.
    #[error("testbed set-up failed at `{command}`: {stderr}")]
    Testbed {
        /// The command that failed.
        command: String,
        /// Its error output.
        stderr: String,
    },
    /// Delay or jitter were asked for but the kernel has no netem qdisc.
    #[error("--{option} needs the tc netem qdisc, which this kernel lacks (module sch_netem: \"Specified qdisc kind is unknown\"); loss is emulated with nftables and rate with tbf, but delay/jitter cannot be")]
    NetemMissing {
        /// The option that needs netem.
        option: &'static str,
    },
    /// A rate limit was asked for but neither netem nor tbf is available.
    #[error("--rate needs the tc tbf (or netem) qdisc, which this kernel lacks: {stderr}")]
    TbfMissing {
        /// tc's error output.
        stderr: String,
    },
    /// An option combination that cannot work.
    #[error("{0}")]
    Usage(&'static str),
    /// An option value refused, with the reason (names the value).
    #[error("{0}")]
    Refused(String),
    /// Drawing a plot failed.
    #[error("plot {plot}: {detail}")]
    Plot {
        /// Which plot.
        plot: String,
        /// The drawing backend's message.
        detail: String,
    },
}

impl LabError {
    /// Wraps an I/O error with its path.
    pub fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        LabError::Io {
            path: path.into(),
            source,
        }
    }
}
