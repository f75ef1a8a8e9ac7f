//! The FerroDDS lab: characterises a link in one command.
//!
//! Contract:
//! - [`matrix`] expands the selected axes (system × test × reliability × keyed × batching ×
//!   transport × size, plus capture, language and DDS Security profile) into scenarios and a
//!   schedule that interleaves systems round by round. Combinations that cannot run are
//!   refused before anything starts ([`matrix::MatrixSpec::check_security`] for the security
//!   axis: profiles FerroDDS lacks, secure rows without a secure-capable system or UDPv4).
//! - A row never claims a setting its run did not use: a FerroDDS row of a security profile is
//!   failed unless its processes' start-up summaries name the profile's governance
//!   ([`lab::security_mismatch`]).
//! - [`lab::run_lab`] runs each scenario as a pair of processes (perftest `-sub`/`-pub`,
//!   perftest `-rawTransport`, or Cyclone `ddsperf` pong/ping, sub/pub), pinned with `taskset`
//!   by default, each with a timeout; a failed or timed-out run is recorded with its error and
//!   stderr tail and the lab goes on. Ctrl-C (the caller raises the stop flag) stops launching
//!   runs, kills the children and leaves valid partial results.
//! - Results directory: `latency.csv`, `throughput.csv` (schema in [`record`]), `summary.json`
//!   and a self-contained `report.html` (inline SVG, inline CSS, no script, no network).
//!   CSV/JSON are rewritten after every run.
//! - [`testbed`] builds the two-namespace veth testbed (root needed) and always removes it.
//! - [`compare`] compares two results directories and flags regressions.
//! - Parsers of untrusted program output ([`parse`]) never panic.
#![forbid(unsafe_code)]

pub mod compare;
pub mod error;
pub mod lab;
pub mod matrix;
pub mod parse;
pub mod record;
pub mod reference;
pub mod report;
pub mod runner;
pub mod testbed;

pub use error::LabError;
