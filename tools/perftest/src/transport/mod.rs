//! The small messaging interface the test harness is written against, with two backends:
//! [`raw`] (plain UDP sockets, no RTPS), [`raw_tcp`] (plain TCP sockets), [`raw_shm`] (plain
//! shared-memory rings) and `dds` (the FerroDDS public API, feature `dds`).
//!
//! Three "topics" carry [`TestMessage`]s: `Throughput` (publisher → subscribers),
//! `Latency` (subscriber → publisher, pongs and init echoes) and `Announcement`
//! (subscriber → publisher control). Readers either deliver from the middleware's receive
//! thread through a listener ([`Reader::listen`], the default where the backend has
//! one) or are polled by harness-owned threads with [`Reader::receive`]
//! (`-useReadThread`); writers are used by one thread at a time.

use std::time::Duration;

use crate::error::PerftestError;
use crate::message::TestMessage;

pub mod dds;
pub mod raw;
#[cfg(feature = "shared-memory")]
pub mod raw_shm;
pub mod raw_tcp;
#[cfg(all(feature = "dds", feature = "security"))]
pub mod secure;
#[cfg(feature = "tls")]
pub mod tls;

/// Whether a backend has a feature; when not, the reason printed after the option name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Available.
    Yes,
    /// Not available, with the reason.
    No(&'static str),
}

impl Support {
    /// The reason when not available.
    pub const fn reason(self) -> Option<&'static str> {
        match self {
            Support::Yes => None,
            Support::No(r) => Some(r),
        }
    }
}

/// What a backend can do. Option parsing and validation check the options against the
/// selected backend's capabilities ([`Backend::capabilities`]) and refuse what it cannot
/// do with the reasons given here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// `-transport` kinds offered (RTI names).
    pub transports: &'static [&'static str],
    /// Why the other `-transport` kinds (and `-enableSharedMemory`, `-enableTCP`,
    /// `-enableUDPv6`) are refused.
    pub transport_limit: &'static str,
    /// Transport settings (`-transport*` options other than `-transport`).
    pub transport_settings: Support,
    /// Highest `-durability` kind (0 VOLATILE, 1 TRANSIENT_LOCAL, 2 TRANSIENT, 3 PERSISTENT).
    pub max_durability: u32,
    /// Why the durability kinds above `max_durability` are refused.
    pub durability_limit: &'static str,
    /// QoS from XML files (`-qosFile`, `-qosLibrary`, `-qosProfile`).
    pub xml_qos: Support,
    /// Network capture (`-networkCapture`, `-doNotDropNetworkCapture`).
    pub network_capture: Support,
    /// Content-filtered topics (`-cft`).
    pub content_filters: Support,
    /// Custom multicast addresses (`-multicastAddr`).
    pub multicast_address: Support,
    /// DDS Security (`-secure*`, `-lightWeightSecurity`).
    pub security: Support,
    /// Why the RTI QoS options without a FerroDDS policy are refused (`-zeroCopy`,
    /// `-instanceHashBuckets`, `-messageSizeMax`, ...).
    pub missing_qos: &'static str,
    /// DDS entities and QoS: `-bestEffort`, `-keyed`, `-instances`, `-writeInstance`,
    /// `-durability`, `-useReadThread`, `-asynchronous`, `-scan`, `-threadCPUAffinity`,
    /// `-unbounded`, `-numPublishers` above 1, `-pidMultiPubTest`.
    pub dds_entities: Support,
    /// Largest `-dataLen`.
    pub max_data_len: u64,
    /// The mode named when `-dataLen` is above `max_data_len`.
    pub data_len_mode: &'static str,
    /// `-multicast`.
    pub multicast: Support,
    /// `-noBlockingSockets`.
    pub non_blocking_sockets: Support,
    /// Writer-side batching (`-batchSize`).
    pub batching: Support,
}

/// The backend a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// [`raw`] (`-rawTransport`).
    Raw,
    /// [`raw_tcp`] (`-rawTransport -transport TCP`).
    RawTcp,
    /// [`raw_shm`] (`-rawTransport -transport SHMEM`).
    RawShm,
    /// `dds` (the default).
    Dds,
}

impl Backend {
    /// What the backend can do.
    pub const fn capabilities(self) -> &'static Capabilities {
        match self {
            Backend::Raw => &raw::CAPABILITIES,
            Backend::RawTcp => &raw_tcp::CAPABILITIES,
            #[cfg(feature = "shared-memory")]
            Backend::RawShm => &raw_shm::CAPABILITIES,
            #[cfg(not(feature = "shared-memory"))]
            Backend::RawShm => &raw::NO_SHM_CAPABILITIES,
            Backend::Dds => &dds::CAPABILITIES,
        }
    }
}

/// The three perftest topics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicKind {
    /// Bulk data (and pings), publisher → subscribers.
    Throughput,
    /// Pongs and echoes, subscriber → publisher.
    Latency,
    /// Subscriber → publisher control ("ready", "finished").
    Announcement,
}

impl TopicKind {
    /// The DDS topic name.
    pub fn name(self) -> &'static str {
        match self {
            TopicKind::Throughput => "Throughput",
            TopicKind::Latency => "Latency",
            TopicKind::Announcement => "Announcement",
        }
    }
}

/// Writes perftest samples on one topic.
pub trait Writer: Send {
    /// Writes (or, when batching, queues) one sample.
    fn write(&mut self, m: &TestMessage) -> Result<(), PerftestError>;
    /// Sends anything queued by batching.
    fn flush(&mut self) -> Result<(), PerftestError>;
    /// Number of matched readers (raw: the number of send targets).
    fn matched(&self) -> u32;
    /// Waits until every matched reader acknowledged everything written, at most
    /// `timeout`; returns whether they did. Backends without acknowledgements sleep `timeout`
    /// and return `false`.
    fn wait_for_acks(&mut self, timeout: Duration) -> Result<bool, PerftestError>;
    /// Registers instances 0..n (keyed types); a no-op elsewhere.
    fn register_instances(&mut self, _n: u64) -> Result<(), PerftestError> {
        Ok(())
    }
}

/// A callback receiving perftest samples.
pub type OnMessage = Box<dyn FnMut(&TestMessage) + Send>;

/// Receives perftest samples on one topic.
pub trait Reader: Send {
    /// From now on, calls `f` for every sample from the middleware's receive thread
    /// (a listener: no thread hand-off per sample). Returns `f` back when the backend
    /// has no listeners (then poll with [`Reader::receive`]).
    fn listen(&mut self, f: OnMessage) -> Result<Option<OnMessage>, PerftestError> {
        Ok(Some(f))
    }
    /// Removes the listener installed by [`Reader::listen`]; when this returns, the
    /// callback is not running and will not be called again.
    fn unlisten(&mut self) {}
    /// Waits up to `timeout` for data and calls `f` for every sample available; returns
    /// how many were delivered (0 on timeout).
    fn receive(
        &mut self,
        timeout: Duration,
        f: &mut dyn FnMut(&TestMessage),
    ) -> Result<usize, PerftestError>;
    /// Number of matched writers (raw: assumed 1).
    fn matched(&self) -> u32;
}

/// A backend: creates writers and readers for the three topics.
pub trait Transport {
    /// Creates a writer on `topic`.
    fn create_writer(&mut self, topic: TopicKind) -> Result<Box<dyn Writer>, PerftestError>;
    /// Creates a reader on `topic`.
    fn create_reader(&mut self, topic: TopicKind) -> Result<Box<dyn Reader>, PerftestError>;
    /// Lines for the "Transport Configuration" block of the start-up summary.
    fn describe(&self) -> Vec<String>;
    /// Lines for the "Secure Configuration" block of the start-up summary (none without
    /// DDS Security).
    fn secure_configuration(&self) -> Vec<String> {
        Vec::new()
    }
    /// Whether end-of-test and pong waits can rely on reliable delivery.
    fn reliable(&self) -> bool;
    /// Whether discovery matching must be awaited (false for raw sockets).
    fn needs_discovery(&self) -> bool;
    /// Stops the network capture (`-networkCapture`), writes it out (deleting the file
    /// unless `-doNotDropNetworkCapture`) and returns the lines to print: messages written
    /// and dropped, the file. Nothing without a capture.
    fn finish_capture(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// DDS Security: every failed authentication of a remote participant so far, with its
    /// reason (none without security).
    fn security_failures(&self) -> Vec<String> {
        Vec::new()
    }
    /// Lines printed at the end of the run: how often each resource limit was exceeded.
    /// Without `all`, nothing when no limit was (`-showResourceLimits` sets `all`).
    fn resource_report(&self, _all: bool) -> Vec<String> {
        Vec::new()
    }
}
