//! DDS backend over the FerroDDS public API (the default mode).
//!
//! One participant per process; topics `Throughput`, `Latency` and `Announcement` of the
//! perftest type selected by `-keyed` and the data size (`TestData_t`,
//! `TestDataKeyed_t`, or the `*Large_t` types above 65470 payload bytes or with
//! `-unbounded`). QoS follows spec 4 as far as FerroDDS has the policies:
//! Throughput/Latency reliable (or best effort with `-bestEffort`) with KEEP_ALL
//! histories bounded by `-sendQueueSize` (samples, or batches of samples when batching)
//! on the throughput writer, Announcement reliable and TRANSIENT_LOCAL. The throughput
//! writer batches (`-batchSize`, FerroDDS writer batching) and publishes asynchronously
//! through the participant's publisher thread with `-asynchronous` (`-flowController
//! 1Gbps|10Gbps` = RTI's token buckets, `default` = unpaced). Samples above one datagram
//! are fragmented by FerroDDS (up to 10 MB tested).
//!
//! Readers deliver through a `DataReaderListener` called on FerroDDS's receive thread
//! (RTI Perftest's default "Listeners" mode: a received ping is echoed from the receive
//! thread, no thread wake-up per sample); with `-useReadThread` they are polled with
//! `wait_for_data` + `take_each` from the harness's read threads. `take_each` lends the
//! samples in place and the reader decodes later ones into the same values, so receiving
//! does not allocate in the tool; each writer keeps one sample whose payload buffer is
//! reused, so writing does not either.
//!
//! [`CAPABILITIES`] is known without the `dds` feature, so that options are validated the
//! same way in every build (without the feature, DDS runs then fail with a clear error).

use crate::options::MAX_DATA_LEN;
use crate::transport::{Capabilities, Support};

#[cfg(feature = "dds")]
mod backend;
#[cfg(feature = "dds")]
pub use backend::*;

/// What the DDS backend (FerroDDS) can do.
pub const CAPABILITIES: Capabilities = Capabilities {
    transports: if cfg!(feature = "micro") {
        &["UDPv4"]
    } else if cfg!(all(feature = "tls", feature = "shared-memory")) {
        &["UDPv4", "TCP", "TLS", "UDPv4_WAN", "SHMEM"]
    } else if cfg!(feature = "tls") {
        &["UDPv4", "TCP", "TLS", "UDPv4_WAN"]
    } else if cfg!(feature = "shared-memory") {
        &["UDPv4", "TCP", "UDPv4_WAN", "SHMEM"]
    } else {
        &["UDPv4", "TCP", "UDPv4_WAN"]
    },
    transport_limit: if cfg!(feature = "micro") {
        "the micro build has only UDPv4"
    } else if cfg!(all(feature = "tls", feature = "shared-memory")) {
        "only UDPv4, TCP, TLS, UDPv4_WAN and SHMEM are available"
    } else {
        "this perftest was built without the `tls` or the `shared-memory` feature"
    },
    transport_settings: Support::No(
        "of the transport settings only -transportServerBindPort, -transportVerbosity, the TLS files (-transportCertAuthority, -transportCertFile, -transportPrivateKey), -transportPublicAddress and -transportHostPort are available",
    ),
    max_durability: 1,
    durability_limit: "only 0 (VOLATILE) and 1 (TRANSIENT_LOCAL) are available",
    xml_qos: Support::Yes,
    network_capture: if cfg!(feature = "micro") {
        Support::No("the micro build has no network capture")
    } else if cfg!(feature = "dds") {
        Support::Yes
    } else {
        Support::No("this perftest was built without the DDS backend")
    },
    content_filters: Support::No("FerroDDS has no content filters yet"),
    multicast_address: Support::Yes,
    security: if cfg!(feature = "micro") {
        Support::No("the micro build has no DDS Security")
    } else if cfg!(all(feature = "dds", feature = "security")) {
        Support::Yes
    } else {
        Support::No("this perftest was built without the `security` feature")
    },
    missing_qos: "this QoS feature is not available in FerroDDS yet",
    dds_entities: Support::Yes,
    max_data_len: MAX_DATA_LEN,
    data_len_mode: "FerroDDS",
    multicast: Support::Yes,
    non_blocking_sockets: Support::No("only meaningful with -rawTransport"),
    batching: if cfg!(feature = "micro") {
        Support::No("the micro build has no batching (as RTI's Micro)")
    } else if cfg!(feature = "dds") {
        Support::Yes
    } else {
        Support::No("FerroDDS has no writer-side batching yet (use -batchSize 0, or -rawTransport)")
    },
};
