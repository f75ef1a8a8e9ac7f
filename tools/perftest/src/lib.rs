//! FerroDDS perftest: an RTI Perftest-compatible latency and throughput tool, with a
//! raw-UDP baseline.
//!
//! # Contract
//!
//! * **Command line.** RTI Perftest 4.3 syntax ([`options`]): single-dash options matched
//!   case-insensitively by prefix (first match in byte order of the canonical names),
//!   values never starting with `-`, numbers read like `scanf`. Existing scripts
//!   (`-pub -latencyTest -noPrint -exec 20 -datalen 64 -raw ...`) run unchanged. Every
//!   option RTI knows is recognised; those this tool or FerroDDS cannot honour fail at
//!   once with a message naming the option and exit code 1 (2 for run-time errors).
//! * **Measurements.** Latency is **one-way = round-trip / 2** in integer microseconds on
//!   the publisher's monotonic clock (no clock sync needed); the first pong of a size is
//!   discarded; std is the population deviation; percentiles are exact (floor index on
//!   all kept values). Throughput and loss are computed by the subscriber per size,
//!   counting `dataLen` bytes per sample; loss counts forward sequence gaps per publisher
//!   (wrap-safe) plus the tail gap announced by FINISHED ([`stats`]).
//! * **Output.** Results on stdout (or appended to `-outputFile`) in byte-exact CSV
//!   (default), JSON or legacy format; configuration and progress on stderr, ending with
//!   `Finishing test...` and `Test ended.` ([`output`], [`run`]). Ctrl-C stops the loops
//!   and still prints the summary of what was measured (a second Ctrl-C exits at once).
//! * **Backends.** The harness ([`harness`]) is written once against the
//!   [`transport::Transport`] trait. [`transport::raw`] uses plain UDP sockets with the
//!   RTPS port formula, CDR-encapsulated `TestData_t` samples and application-level
//!   batching. `transport::dds` (feature `dds`, on by default) uses the FerroDDS public
//!   API (batching, large data, asynchronous publishing with flow controllers, keyed
//!   types) and delivers samples through a listener on FerroDDS's receive thread (a
//!   ping is echoed from that thread; `-useReadThread` polls from a harness thread
//!   instead); without the feature, DDS mode fails with a clear error.
//! * **Hot path.** Samples are serialized into reused buffers; received samples are
//!   decoded from borrowed views; lengths read off the wire are checked against the
//!   datagram before use and malformed datagrams are dropped, never panic.
//! * **Extensions** (not in RTI Perftest): `-pinMemory` (mlockall); `-scan` (removed in
//!   RTI Perftest 4.2, kept here: one measurement per size with the LENGTH_CHANGED
//!   hand-shake).
#![forbid(unsafe_code)]

pub mod error;
pub mod harness;
pub mod logging;
pub mod message;
pub mod options;
pub mod output;
pub mod qos_profiles;
pub mod run;
pub mod stats;
pub mod system;
pub mod transport;
