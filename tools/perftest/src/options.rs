//! Command-line options with RTI Perftest syntax.
//!
//! Options start with a single dash and match **case-insensitively by prefix**; when a
//! prefix fits several options, the first one in byte order of the canonical names wins
//! (so `-d` is `-dataLen` and `-do` is `-doNotDropNetworkCapture`, as in RTI Perftest).
//! `-help` and `-h` must be spelled out. A value never starts with `-`. Numbers are read
//! like `scanf("%llu")`: leading digits count, trailing junk is ignored, no digits is an
//! error. Everything is driven by [`OPTIONS`], a table sorted in byte order.

use std::path::PathBuf;

use crate::error::OptionError;

/// Which role an option belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Publisher only (rejected with an explicit `-sub`).
    Pub,
    /// Subscriber only (rejected with an explicit `-pub`).
    Sub,
    /// Either role.
    Both,
}

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// A flag.
    Flag,
    /// A mandatory value.
    Value,
    /// A value that may be omitted (taken only if the next argument does not start with `-`).
    Optional,
}

/// One row of the option table.
#[derive(Debug, Clone, Copy)]
pub struct OptionSpec {
    /// Canonical name with the leading dash, e.g. `-dataLen`.
    pub name: &'static str,
    /// Value arity.
    pub arity: Arity,
    /// Role group.
    pub side: Side,
    /// Help text; empty for options hidden from `-help`.
    pub help: &'static str,
}

const fn o(name: &'static str, arity: Arity, side: Side, help: &'static str) -> OptionSpec {
    OptionSpec {
        name,
        arity,
        side,
        help,
    }
}

use Arity::{Flag, Optional, Value};
use Side::{Both, Pub, Sub};

/// Every option RTI Perftest 4.3 (and older releases) knows, sorted in byte order of the
/// name. Options this implementation does not support are still listed so that they are
/// recognised and rejected with a clear message instead of matching another prefix.
pub const OPTIONS: &[OptionSpec] = &[
    o("-allowInterfaces", Value, Both, ""),
    o(
        "-asynchronous",
        Flag,
        Both,
        "Use asynchronous publish mode (the publisher thread sends, paced by -flowController)",
    ),
    o(
        "-batchSize",
        Value,
        Pub,
        "<bytes> Batch size, 0 disables; default 8192 in throughput tests (raw: off)",
    ),
    o("-bestEffort", Flag, Both, "Use best-effort reliability"),
    o("-cacheStats", Flag, Both, ""),
    o("-cft", Value, Sub, ""),
    o("-checkConsistency", Flag, Both, ""),
    o("-collectorPeer", Value, Both, ""),
    o("-compressionId", Value, Both, ""),
    o("-compressionLevel", Value, Both, ""),
    o("-compressionThreshold", Value, Both, ""),
    o("-cpu", Flag, Both, "Add a process CPU usage column"),
    o("-crc", Flag, Both, ""),
    o("-crcKind", Value, Both, ""),
    o(
        "-dataLen",
        Value,
        Both,
        "<bytes> Sample size including the 28-byte header, default 100",
    ),
    o("-doNotDropNetworkCapture", Flag, Both, ""),
    o("-domain", Value, Both, "<id> Domain id (0-250), default 1"),
    o(
        "-durability",
        Value,
        Both,
        "<0|1> VOLATILE or TRANSIENT_LOCAL on Throughput, default 0",
    ),
    o("-dynamicData", Flag, Both, ""),
    o("-enable-message-length", Flag, Both, ""),
    o("-enableAutoThrottle", Flag, Pub, ""),
    o("-enableInstanceStateRecovery", Flag, Both, ""),
    o("-enableMonitoring2", Flag, Both, ""),
    o("-enableSharedMemory", Flag, Both, ""),
    o("-enableTCP", Flag, Both, ""),
    o("-enableTurboMode", Flag, Pub, ""),
    o("-enableUDPv6", Flag, Both, ""),
    o(
        "-executionTime",
        Value,
        Pub,
        "<sec> Stop the test after this time, default 0 (none)",
    ),
    o("-fastHeartbeatPeriod", Value, Both, ""),
    o("-fastQueue", Flag, Both, ""),
    o("-flatData", Flag, Both, ""),
    o(
        "-flowController",
        Value,
        Both,
        "<default|1Gbps|10Gbps> Flow controller of asynchronous writers",
    ),
    o("-h", Flag, Both, ""),
    o("-heartbeatPeriod", Value, Both, ""),
    o("-help", Flag, Both, "Print this help and exit"),
    o(
        "-initialBurstSize",
        Value,
        Pub,
        "<n> Number of initialization samples",
    ),
    o("-instanceHashBuckets", Value, Both, ""),
    o(
        "-instances",
        Value,
        Both,
        "<n> Instances written round-robin (with -keyed), default 1",
    ),
    o("-keepDurationUsec", Value, Both, ""),
    o("-keyed", Flag, Both, "Use a keyed type (both sides)"),
    o(
        "-latencyCount",
        Value,
        Pub,
        "<n> Samples (batches) between pings, default 10000 (1 with -latencyTest)",
    ),
    o(
        "-latencyFile",
        Optional,
        Pub,
        "[file] Append every latency value, default latency_samples.csv",
    ),
    o("-latencyTest", Flag, Pub, "Ping-pong latency test"),
    o("-lightWeightSecurity", Flag, Both, ""),
    o("-loadDataFromFile", Value, Pub, ""),
    o("-loaningSendReceive", Flag, Both, ""),
    o("-lowResolutionClock", Flag, Pub, ""),
    o("-maximumAllocableBufferSize", Value, Pub, ""),
    o("-messageSizeMax", Value, Both, ""),
    o("-multicast", Flag, Both, "Use multicast for data"),
    o("-multicastAddr", Value, Both, ""),
    o("-networkCapture", Flag, Both, ""),
    o(
        "-nic",
        Value,
        Both,
        "<ip|name> Network interface, raw default 127.0.0.1",
    ),
    o(
        "-noBlockingSockets",
        Flag,
        Both,
        "Raw: UDP sends never block (samples may be dropped)",
    ),
    o("-noDirectCommunication", Flag, Both, ""),
    o("-noOutputHeaders", Flag, Both, "Print no header lines"),
    o("-noPositiveAcks", Flag, Both, ""),
    o("-noPrintIntervals", Flag, Both, "Print only summaries"),
    o(
        "-noXmlQos",
        Flag,
        Both,
        "Use the compiled-in QoS (always the case here)",
    ),
    o("-nomulticast", Flag, Both, ""),
    o(
        "-numIter",
        Value,
        Pub,
        "<n> Samples to send, default 100000000 (10000000 latency test)",
    ),
    o(
        "-numPublishers",
        Value,
        Sub,
        "<n> Publishers to wait for, default 1",
    ),
    o(
        "-numSubscribers",
        Value,
        Pub,
        "<n> Subscribers to wait for, default 1",
    ),
    o(
        "-outputFile",
        Value,
        Both,
        "<file> Append results to this file instead of stdout",
    ),
    o(
        "-outputFormat",
        Value,
        Both,
        "<csv|json|legacy> Result format, default csv",
    ),
    o(
        "-peer",
        Value,
        Both,
        "<addr> Peer address (raw pub: addr[:sid] or addr:first-last)",
    ),
    o(
        "-pidMultiPubTest",
        Value,
        Pub,
        "<id> Publisher id, default 0",
    ),
    o(
        "-pinMemory",
        Flag,
        Both,
        "Lock all process memory (mlockall); FerroDDS extension",
    ),
    o("-preallocateFragmentedSamples", Flag, Both, ""),
    o("-pub", Flag, Pub, "Run as publisher"),
    o(
        "-pubRate",
        Value,
        Pub,
        "<N:spin|N:sleep> Target samples per second",
    ),
    o(
        "-pubRatebps",
        Value,
        Pub,
        "<bps:spin|bps:sleep> Target bits per second",
    ),
    o("-qosFile", Value, Both, ""),
    o("-qosLibrary", Value, Both, ""),
    o("-qosProfile", Value, Both, ""),
    o(
        "-rawTransport",
        Flag,
        Both,
        "Plain UDP sockets without DDS (baseline)",
    ),
    o(
        "-receiveBufferSize",
        Value,
        Both,
        "<bytes> Socket receive buffer size",
    ),
    o(
        "-receiveQueueSize",
        Value,
        Both,
        "<n> Reader queue size, default 128",
    ),
    o(
        "-scan",
        Optional,
        Pub,
        "[s1:s2:...] Run one test per size (removed in RTI Perftest 4.2; kept here)",
    ),
    o("-secureCertAuthority", Value, Both, ""),
    o("-secureCertFile", Value, Both, ""),
    o("-secureDebug", Value, Both, ""),
    o("-secureEnableAAD", Flag, Both, ""),
    o("-secureEncryptBoth", Flag, Both, ""),
    o("-secureEncryptData", Flag, Both, ""),
    o("-secureEncryptDiscovery", Flag, Both, ""),
    o("-secureEncryptSM", Flag, Both, ""),
    o("-secureEncryptionAlgorithm", Value, Both, ""),
    o("-secureGovernanceFile", Value, Both, ""),
    o("-secureLibrary", Value, Both, ""),
    o("-securePSK", Value, Both, ""),
    o("-securePSKAlgorithm", Value, Both, ""),
    o("-securePermissionsFile", Value, Both, ""),
    o("-securePrivateKey", Value, Both, ""),
    o("-secureRtpsHmacOnly", Value, Both, ""),
    o("-secureSign", Flag, Both, ""),
    o(
        "-sendBufferSize",
        Value,
        Both,
        "<bytes> Socket send buffer size",
    ),
    o(
        "-sendQueueSize",
        Value,
        Both,
        "<n> Writer queue size, default 50",
    ),
    o("-showResourceLimits", Flag, Both, ""),
    o("-showSerializationTime", Flag, Pub, ""),
    o(
        "-sidMultiSubTest",
        Value,
        Sub,
        "<id> Subscriber id, default 0",
    ),
    o("-sleep", Value, Pub, "<ms> Sleep between writes"),
    o("-spin", Value, Pub, ""),
    o("-sub", Flag, Sub, "Run as subscriber (default)"),
    o(
        "-threadCPUAffinity",
        Value,
        Both,
        "<A:B:C:D> Core lists for main, receive, (database, event) threads",
    ),
    o(
        "-threadPriorities",
        Value,
        Both,
        "<X:Y:Z> SCHED_FIFO priorities (numbers or h/n/l)",
    ),
    o(
        "-transport",
        Value,
        Both,
        "<UDPv4> Transport (only UDPv4 so far)",
    ),
    o("-transportCertAuthority", Value, Both, ""),
    o("-transportCertFile", Value, Both, ""),
    o("-transportHostPort", Value, Both, ""),
    o("-transportPrivateKey", Value, Both, ""),
    o("-transportPublicAddress", Value, Both, ""),
    o("-transportSecureWan", Flag, Both, ""),
    o("-transportServerBindPort", Value, Both, ""),
    o("-transportVerbosity", Value, Both, ""),
    o("-transportWan", Flag, Both, ""),
    o("-transportWanId", Value, Both, ""),
    o("-transportWanServerAddress", Value, Both, ""),
    o("-transportWanServerPort", Value, Both, ""),
    o(
        "-unbounded",
        Optional,
        Both,
        "[threshold] Use the unbounded (Large) type",
    ),
    o("-useLegacyDynamicData", Flag, Both, ""),
    o(
        "-useReadThread",
        Flag,
        Both,
        "Receive in a read thread instead of a listener on the receive thread",
    ),
    o("-verbosity", Value, Both, "<0-3> Log level"),
    o("-waitsetDelayUsec", Value, Both, ""),
    o("-waitsetEventCount", Value, Both, ""),
    o("-writeInstance", Value, Pub, "<i> Always write instance i"),
    o("-writerStats", Flag, Pub, ""),
    o("-zeroCopy", Flag, Both, ""),
];

/// Finds the option an argument names: exact `-help`/`-h`, otherwise the first option in
/// byte order whose name starts with the argument, compared case-insensitively.
pub fn lookup(arg: &str) -> Option<&'static OptionSpec> {
    if arg.len() < 2 || !arg.starts_with('-') {
        return None;
    }
    let exact_only = |name: &str| name == "-h" || name == "-help";
    if let Some(spec) = OPTIONS
        .iter()
        .find(|s| exact_only(s.name) && s.name.eq_ignore_ascii_case(arg))
    {
        return Some(spec);
    }
    OPTIONS.iter().find(|s| {
        !exact_only(s.name)
            && s.name.len() >= arg.len()
            && s.name.as_bytes()[..arg.len()].eq_ignore_ascii_case(arg.as_bytes())
    })
}

/// The role of this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `-pub`.
    Publisher,
    /// `-sub` (default).
    Subscriber,
}

/// Result format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// CSV (default).
    Csv,
    /// JSON document.
    Json,
    /// Pre-3.1 text.
    Legacy,
}

/// How `-pubRate` waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateMethod {
    /// Busy loop.
    Spin,
    /// Sleep.
    Sleep,
}

/// `-pubRate N:method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PubRate {
    /// Samples per second (1..=10^7).
    pub rate: u64,
    /// Waiting method.
    pub method: RateMethod,
}

/// One `-threadPriorities` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// An explicit SCHED_FIFO priority.
    Value(i32),
    /// `h`: the maximum.
    High,
    /// `n`: (max + min) / 2.
    Normal,
    /// `l`: the minimum.
    Low,
}

/// `-threadPriorities X:Y:Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadPriorities {
    /// Main (and asynchronous writer) thread.
    pub main: Priority,
    /// Receive threads.
    pub receive: Priority,
    /// Event/database threads (not applied: the middleware owns them).
    pub event: Priority,
}

/// `-threadCPUAffinity A:B:C:D`: core lists (empty = unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuAffinity {
    /// Main thread cores.
    pub main: Vec<usize>,
    /// Receive thread cores.
    pub receive: Vec<usize>,
    /// Database thread cores (middleware-owned; recorded only).
    pub database: Vec<usize>,
    /// Event thread cores (middleware-owned; recorded only).
    pub event: Vec<usize>,
}

/// All parsed options. Fields holding `Option` were given explicitly when `Some`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// `-help`/`-h` was given.
    pub help: bool,
    /// Role.
    pub role: Role,
    /// `-pub` or `-sub` appeared explicitly (enables the role-group checks).
    pub role_explicit: bool,
    /// `-sidMultiSubTest`.
    pub sid: u32,
    /// `-pidMultiPubTest`.
    pub pid: u32,
    /// `-numSubscribers`.
    pub num_subscribers: u32,
    /// `-numPublishers`.
    pub num_publishers: u32,
    /// `-domain`.
    pub domain: u32,
    /// `-verbosity`.
    pub verbosity: u32,
    /// `-noXmlQos` (informational).
    pub no_xml_qos: bool,
    /// `-durability` (0 volatile, 1 transient local).
    pub durability: Option<u32>,
    /// `-useReadThread`.
    pub use_read_thread: bool,
    /// `-sendQueueSize`.
    pub send_queue_size: Option<u64>,
    /// `-receiveQueueSize`.
    pub receive_queue_size: Option<u64>,
    /// `-receiveBufferSize`.
    pub receive_buffer_size: Option<u64>,
    /// `-sendBufferSize`.
    pub send_buffer_size: Option<u64>,
    /// `-latencyTest`.
    pub latency_test: bool,
    /// `-latencyCount`.
    pub latency_count: Option<u64>,
    /// `-numIter`.
    pub num_iter: Option<u64>,
    /// `-executionTime` in seconds (0 = none).
    pub execution_time: u64,
    /// `-initialBurstSize`.
    pub initial_burst_size: Option<u64>,
    /// `-pubRate` (or `-pubRatebps` converted).
    pub pub_rate: Option<PubRate>,
    /// `-pubRatebps` in bits per second (converted once dataLen is known).
    pub pub_rate_bps: Option<(u64, RateMethod)>,
    /// `-sleep` in ms.
    pub sleep_ms: u64,
    /// `-spin` count.
    pub spin: u64,
    /// `-dataLen`.
    pub data_len: u64,
    /// `-keyed`.
    pub keyed: bool,
    /// `-instances`.
    pub instances: Option<u64>,
    /// `-writeInstance`.
    pub write_instance: Option<u64>,
    /// `-unbounded` (with optional threshold).
    pub unbounded: Option<Option<u64>>,
    /// `-batchSize`.
    pub batch_size: Option<u64>,
    /// `-bestEffort`.
    pub best_effort: bool,
    /// `-transport`.
    pub transport: Option<String>,
    /// `-nic`.
    pub nic: Option<String>,
    /// `-peer` (repeatable).
    pub peers: Vec<String>,
    /// `-multicast`.
    pub multicast: bool,
    /// `-rawTransport`.
    pub raw: bool,
    /// `-noBlockingSockets`.
    pub no_blocking_sockets: bool,
    /// `-cpu`.
    pub cpu: bool,
    /// `-threadPriorities`.
    pub thread_priorities: Option<ThreadPriorities>,
    /// `-threadCPUAffinity`.
    pub thread_cpu_affinity: Option<CpuAffinity>,
    /// `-pinMemory`.
    pub pin_memory: bool,
    /// `-noPrintIntervals`.
    pub no_print_intervals: bool,
    /// `-outputFormat`.
    pub output_format: OutputFormat,
    /// `-noOutputHeaders`.
    pub no_output_headers: bool,
    /// `-outputFile`.
    pub output_file: Option<PathBuf>,
    /// `-latencyFile`.
    pub latency_file: Option<PathBuf>,
    /// `-asynchronous`.
    pub asynchronous: bool,
    /// `-flowController` (meaningful with `-asynchronous`).
    pub flow_controller: FlowControllerName,
    /// `-scan`: the sizes (`-dataLen` values), ascending; `dataLen` is their maximum.
    pub scan: Option<Vec<u64>>,
}

/// `-flowController` values (RTI Perftest's built-in token buckets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlowControllerName {
    /// No pacing (the middleware's default flow controller).
    #[default]
    Default,
    /// 20 × 64 KiB tokens per 10 ms, bucket 30 (≈1.05 Gbit/s).
    Gbps1,
    /// 200 × 64 KiB tokens per 10 ms, bucket 300 (≈10.5 Gbit/s).
    Gbps10,
}

impl FlowControllerName {
    /// The name as given on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FlowControllerName::Default => "default",
            FlowControllerName::Gbps1 => "1Gbps",
            FlowControllerName::Gbps10 => "10Gbps",
        }
    }
}

/// `-scan` default sizes (RTI Perftest 3.1 – 4.1.1).
pub const DEFAULT_SCAN_SIZES: [u64; 12] = [
    32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 64900,
];
/// `LENGTH_CHANGED_SIZE`: payload length of `-scan` size-switch samples.
pub const LENGTH_CHANGED_SIZE: usize = 1236;
/// Per-size execution time of `-scan` when `-executionTime` is not given (seconds).
pub const DEFAULT_SCAN_SECONDS: u64 = 60;

impl Default for Options {
    fn default() -> Self {
        Options {
            help: false,
            role: Role::Subscriber,
            role_explicit: false,
            sid: 0,
            pid: 0,
            num_subscribers: 1,
            num_publishers: 1,
            domain: 1,
            verbosity: 1,
            no_xml_qos: false,
            durability: None,
            use_read_thread: false,
            send_queue_size: None,
            receive_queue_size: None,
            receive_buffer_size: None,
            send_buffer_size: None,
            latency_test: false,
            latency_count: None,
            num_iter: None,
            execution_time: 0,
            initial_burst_size: None,
            pub_rate: None,
            pub_rate_bps: None,
            sleep_ms: 0,
            spin: 0,
            data_len: 100,
            keyed: false,
            instances: None,
            write_instance: None,
            unbounded: None,
            batch_size: None,
            best_effort: false,
            transport: None,
            nic: None,
            peers: Vec::new(),
            multicast: false,
            raw: false,
            no_blocking_sockets: false,
            cpu: false,
            thread_priorities: None,
            thread_cpu_affinity: None,
            pin_memory: false,
            no_print_intervals: false,
            output_format: OutputFormat::Csv,
            no_output_headers: false,
            output_file: None,
            latency_file: None,
            asynchronous: false,
            flow_controller: FlowControllerName::Default,
            scan: None,
        }
    }
}

/// `INITIALIZE_SIZE`: payload length of initialization samples.
pub const INITIALIZE_SIZE: usize = 1234;
/// `FINISHED_SIZE`: payload length of end-of-test samples.
pub const FINISHED_SIZE: usize = 1235;
/// Serialized header size of a perftest sample (`OVERHEAD_BYTES`).
pub const OVERHEAD_BYTES: u64 = 28;
/// Largest payload of the bounded types.
pub const MAX_BOUNDED_SEQ_SIZE: u64 = 65470;
/// Largest `-dataLen` RTI Perftest accepts.
pub const MAX_DATA_LEN: u64 = 2_147_482_620;
/// Largest `-dataLen` of the raw transport: encapsulation + sample must fit one datagram.
pub const MAX_RAW_DATA_LEN: u64 = 65500;
/// Default batch size in throughput tests.
pub const DEFAULT_BATCH_SIZE: u64 = 8192;
/// Key of control samples.
pub const CONTROL_INSTANCE: u32 = 65535;

/// Why batching is off although batching could be on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchingState {
    /// Batching with this many bytes.
    On(u64),
    /// Not requested (raw default, or `-batchSize 0`).
    Off,
    /// Turned off by the tool, with the reason line.
    Disabled(&'static str),
    /// The middleware cannot batch.
    Unavailable,
}

/// Reads a number the way `scanf("%llu")` does.
pub fn scan_u64(s: &str) -> Option<u64> {
    let t = s.trim_start();
    let t = t.strip_prefix('+').unwrap_or(t);
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    t[..digits].parse().ok()
}

fn num(option: &'static str, v: &str, min: u64, max: u64) -> Result<u64, OptionError> {
    let bad = |reason| OptionError::BadValue {
        option,
        value: v.to_string(),
        reason,
    };
    let n = scan_u64(v).ok_or_else(|| bad("expected a non-negative number"))?;
    if n < min || n > max {
        return Err(bad("value out of range"));
    }
    Ok(n)
}

fn num32(option: &'static str, v: &str, min: u64, max: u64) -> Result<u32, OptionError> {
    // max is always <= u32::MAX at the call sites.
    num(option, v, min, max.min(u64::from(u32::MAX))).map(|n| n as u32)
}

fn parse_rate_method(option: &'static str, v: &str) -> Result<(u64, RateMethod), OptionError> {
    let bad = |reason| OptionError::BadValue {
        option,
        value: v.to_string(),
        reason,
    };
    let (n, method) = v
        .split_once(':')
        .ok_or_else(|| bad("expected <rate>:spin or <rate>:sleep"))?;
    let method = match method {
        "spin" => RateMethod::Spin,
        "sleep" => RateMethod::Sleep,
        _ => return Err(bad("the method must be 'spin' or 'sleep'")),
    };
    let n = scan_u64(n).ok_or_else(|| bad("expected <rate>:spin or <rate>:sleep"))?;
    Ok((n, method))
}

fn parse_priority(v: &str, part: &str) -> Result<Priority, OptionError> {
    match part {
        "h" | "H" => Ok(Priority::High),
        "n" | "N" => Ok(Priority::Normal),
        "l" | "L" => Ok(Priority::Low),
        _ => {
            let n = part
                .parse::<i32>()
                .ok()
                .filter(|n| (0..=99).contains(n))
                .ok_or_else(|| OptionError::BadValue {
                    option: "-threadPriorities",
                    value: v.to_string(),
                    reason: "expected X:Y:Z with each a priority 0-99 or h/n/l",
                })?;
            Ok(Priority::Value(n))
        }
    }
}

/// Parses the `-scan` size list (`s1:s2:...`, empty = the default list), sorted
/// ascending without duplicates.
fn parse_scan(v: &str) -> Result<Vec<u64>, OptionError> {
    if v.is_empty() {
        return Ok(DEFAULT_SCAN_SIZES.to_vec());
    }
    let mut sizes = Vec::new();
    for part in v.split(':') {
        let n = scan_u64(part)
            .filter(|n| (OVERHEAD_BYTES..=MAX_DATA_LEN).contains(n))
            .ok_or_else(|| OptionError::BadValue {
                option: "-scan",
                value: v.to_string(),
                reason: "expected sizes s1:s2:... each between 28 and 2147482620",
            })?;
        sizes.push(n);
    }
    sizes.sort_unstable();
    sizes.dedup();
    Ok(sizes)
}

fn parse_priorities(v: &str) -> Result<ThreadPriorities, OptionError> {
    let parts: Vec<&str> = v.split(':').collect();
    if parts.len() != 3 {
        return Err(OptionError::BadValue {
            option: "-threadPriorities",
            value: v.to_string(),
            reason: "expected X:Y:Z with each a priority 0-99 or h/n/l",
        });
    }
    Ok(ThreadPriorities {
        main: parse_priority(v, parts[0])?,
        receive: parse_priority(v, parts[1])?,
        event: parse_priority(v, parts[2])?,
    })
}

/// Parses a core list `n`, `n-m` or `a,b,c-d` (empty = no change).
pub fn parse_core_list(v: &str, list: &str) -> Result<Vec<usize>, OptionError> {
    let bad = || OptionError::BadValue {
        option: "-threadCPUAffinity",
        value: v.to_string(),
        reason: "expected A:B:C:D, each a core list like 0, 1-3 or 0,2,4-5",
    };
    let mut cores = Vec::new();
    if list.is_empty() {
        return Ok(cores);
    }
    for item in list.split(',') {
        match item.split_once('-') {
            Some((a, b)) => {
                let a: usize = a.parse().map_err(|_| bad())?;
                let b: usize = b.parse().map_err(|_| bad())?;
                if a > b || b >= 1024 {
                    return Err(bad());
                }
                cores.extend(a..=b);
            }
            None => {
                let a: usize = item.parse().map_err(|_| bad())?;
                if a >= 1024 {
                    return Err(bad());
                }
                cores.push(a);
            }
        }
    }
    Ok(cores)
}

fn parse_affinity(v: &str) -> Result<CpuAffinity, OptionError> {
    let parts: Vec<&str> = v.split(':').collect();
    if parts.is_empty() || parts.len() > 4 {
        return Err(OptionError::BadValue {
            option: "-threadCPUAffinity",
            value: v.to_string(),
            reason: "expected A:B:C:D, each a core list like 0, 1-3 or 0,2,4-5",
        });
    }
    let get = |i: usize| parse_core_list(v, parts.get(i).copied().unwrap_or(""));
    Ok(CpuAffinity {
        main: get(0)?,
        receive: get(1)?,
        database: get(2)?,
        event: get(3)?,
    })
}

fn unsupported(option: &'static str, reason: &'static str) -> OptionError {
    OptionError::Unsupported { option, reason }
}

impl Options {
    /// Parses the arguments after the program name.
    pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Options, OptionError> {
        let mut opts = Options::default();
        let mut explicit_pub = false;
        let mut explicit_sub = false;
        let mut used: Vec<&'static OptionSpec> = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let arg = args[i].as_ref();
            let spec = lookup(arg).ok_or_else(|| OptionError::Unknown(arg.to_string()))?;
            i += 1;
            let value = match spec.arity {
                Flag => None,
                Value => match args.get(i).map(AsRef::as_ref) {
                    Some(v) if !v.starts_with('-') => {
                        i += 1;
                        Some(v)
                    }
                    _ => return Err(OptionError::MissingValue(spec.name)),
                },
                Optional => match args.get(i).map(AsRef::as_ref) {
                    Some(v) if !v.starts_with('-') => {
                        i += 1;
                        Some(v)
                    }
                    _ => None,
                },
            };
            match spec.name {
                "-pub" => explicit_pub = true,
                "-sub" => explicit_sub = true,
                _ => {}
            }
            used.push(spec);
            opts.apply(spec.name, value.unwrap_or(""))?;
        }
        if opts.help {
            return Ok(opts);
        }
        if explicit_pub && explicit_sub {
            return Err(OptionError::Conflict(
                "Cannot use '-pub' and '-sub' at the same time.",
            ));
        }
        opts.role_explicit = explicit_pub || explicit_sub;
        for spec in used {
            match (spec.side, explicit_pub, explicit_sub) {
                (Pub, _, true) => {
                    return Err(OptionError::WrongRole {
                        option: spec.name,
                        role: "-sub",
                    })
                }
                (Sub, true, _) => {
                    return Err(OptionError::WrongRole {
                        option: spec.name,
                        role: "-pub",
                    })
                }
                _ => {}
            }
        }
        opts.validate()?;
        Ok(opts)
    }

    fn apply(&mut self, name: &'static str, v: &str) -> Result<(), OptionError> {
        const DDS_ONLY: &str = "this QoS feature is not available in FerroDDS yet";
        match name {
            "-help" | "-h" => self.help = true,
            "-pub" => self.role = Role::Publisher,
            "-sub" => self.role = Role::Subscriber,
            "-sidMultiSubTest" => self.sid = num32(name, v, 0, 65534)?,
            "-pidMultiPubTest" => self.pid = num32(name, v, 0, 65534)?,
            "-numSubscribers" => self.num_subscribers = num32(name, v, 1, 65535)?,
            "-numPublishers" => self.num_publishers = num32(name, v, 1, 65535)?,
            "-domain" => self.domain = num32(name, v, 0, 250)?,
            "-verbosity" => self.verbosity = num32(name, v, 0, 3)?,
            "-noXmlQos" => self.no_xml_qos = true,
            "-durability" => {
                let d = num32(name, v, 0, 3)?;
                if d > 1 {
                    return Err(unsupported(
                        name,
                        "only 0 (VOLATILE) and 1 (TRANSIENT_LOCAL) are available",
                    ));
                }
                self.durability = Some(d);
            }
            "-useReadThread" => self.use_read_thread = true,
            "-sendQueueSize" => self.send_queue_size = Some(num(name, v, 1, 1 << 24)?),
            "-receiveQueueSize" => self.receive_queue_size = Some(num(name, v, 1, 1 << 24)?),
            "-receiveBufferSize" => {
                self.receive_buffer_size = Some(num(name, v, 1, 1 << 30)?);
            }
            "-sendBufferSize" => self.send_buffer_size = Some(num(name, v, 1, 1 << 30)?),
            "-latencyTest" => self.latency_test = true,
            "-latencyCount" => self.latency_count = Some(num(name, v, 1, u64::from(u32::MAX))?),
            "-numIter" => self.num_iter = Some(num(name, v, 1, u64::MAX)?),
            "-executionTime" => self.execution_time = num(name, v, 0, 100_000_000)?,
            "-initialBurstSize" => self.initial_burst_size = Some(num(name, v, 0, 1 << 24)?),
            "-pubRate" => {
                let (rate, method) = parse_rate_method(name, v)?;
                if !(1..=10_000_000).contains(&rate) {
                    return Err(OptionError::BadValue {
                        option: name,
                        value: v.to_string(),
                        reason: "the rate must be between 1 and 10000000",
                    });
                }
                self.pub_rate = Some(PubRate { rate, method });
            }
            "-pubRatebps" => {
                let (bps, method) = parse_rate_method(name, v)?;
                if bps == 0 {
                    return Err(OptionError::BadValue {
                        option: name,
                        value: v.to_string(),
                        reason: "the rate must be positive",
                    });
                }
                self.pub_rate_bps = Some((bps, method));
            }
            "-sleep" => self.sleep_ms = num(name, v, 1, 1_000_000)?,
            "-spin" => self.spin = num(name, v, 0, u64::from(u32::MAX))?,
            "-dataLen" => self.data_len = num(name, v, OVERHEAD_BYTES, MAX_DATA_LEN)?,
            "-keyed" => self.keyed = true,
            "-instances" => self.instances = Some(num(name, v, 1, 1 << 24)?),
            "-writeInstance" => self.write_instance = Some(num(name, v, 0, 1 << 24)?),
            "-unbounded" => {
                let threshold = if v.is_empty() {
                    None
                } else {
                    Some(num(name, v, OVERHEAD_BYTES, MAX_BOUNDED_SEQ_SIZE)?)
                };
                self.unbounded = Some(threshold);
            }
            "-batchSize" => self.batch_size = Some(num(name, v, 0, 65507)?),
            "-bestEffort" => self.best_effort = true,
            "-transport" => {
                match v {
                    "UDPv4" => {}
                    "UDPv6" | "SHMEM" | "TCP" | "TLS" | "DTLS" | "WAN" | "UDPv4_WAN" => {
                        return Err(unsupported(name, "only UDPv4 is available"))
                    }
                    _ => {
                        return Err(OptionError::BadValue {
                            option: name,
                            value: v.to_string(),
                            reason:
                                "expected UDPv4, UDPv6, SHMEM, TCP, TLS, DTLS, WAN or UDPv4_WAN",
                        })
                    }
                }
                self.transport = Some(v.to_string());
            }
            "-nic" | "-allowInterfaces" => self.nic = Some(v.to_string()),
            "-peer" => {
                if self.peers.len() >= 1023 {
                    return Err(OptionError::BadValue {
                        option: "-peer",
                        value: v.to_string(),
                        reason: "at most 1023 peers",
                    });
                }
                self.peers.push(v.to_string());
            }
            "-multicast" => self.multicast = true,
            "-nomulticast" => self.multicast = false,
            "-rawTransport" => self.raw = true,
            "-noBlockingSockets" => self.no_blocking_sockets = true,
            "-cpu" => self.cpu = true,
            "-threadPriorities" => self.thread_priorities = Some(parse_priorities(v)?),
            "-threadCPUAffinity" => self.thread_cpu_affinity = Some(parse_affinity(v)?),
            "-pinMemory" => self.pin_memory = true,
            "-noPrintIntervals" => self.no_print_intervals = true,
            "-outputFormat" => {
                self.output_format = match v.to_ascii_lowercase().as_str() {
                    "csv" => OutputFormat::Csv,
                    "json" => OutputFormat::Json,
                    "legacy" => OutputFormat::Legacy,
                    _ => {
                        return Err(OptionError::BadValue {
                            option: name,
                            value: v.to_string(),
                            reason: "expected csv, json or legacy",
                        })
                    }
                }
            }
            "-noOutputHeaders" => self.no_output_headers = true,
            "-outputFile" => self.output_file = Some(PathBuf::from(v)),
            "-latencyFile" => {
                let f = if v.is_empty() {
                    "latency_samples.csv"
                } else {
                    v
                };
                self.latency_file = Some(PathBuf::from(f));
            }
            "-asynchronous" => self.asynchronous = true,
            "-flowController" => {
                self.flow_controller = match v {
                    "default" => FlowControllerName::Default,
                    "1Gbps" => FlowControllerName::Gbps1,
                    "10Gbps" => FlowControllerName::Gbps10,
                    _ => {
                        return Err(OptionError::BadValue {
                            option: name,
                            value: v.to_string(),
                            reason: "expected default, 1Gbps or 10Gbps",
                        })
                    }
                }
            }
            "-scan" => self.scan = Some(parse_scan(v)?),
            "-qosFile" | "-qosLibrary" | "-qosProfile" => {
                return Err(unsupported(
                    name,
                    "QoS XML files are not supported, the QoS is compiled in",
                ))
            }
            "-networkCapture" | "-doNotDropNetworkCapture" => {
                return Err(unsupported(name, "network capture is not wired up yet"))
            }
            "-cft" => {
                return Err(unsupported(name, "FerroDDS has no content filters yet"));
            }
            "-multicastAddr" => {
                return Err(unsupported(
                    name,
                    "custom multicast addresses are not available",
                ))
            }
            "-enableSharedMemory" | "-enableTCP" | "-enableUDPv6" => {
                return Err(unsupported(name, "only UDPv4 is available"))
            }
            n if n.starts_with("-secure") || n == "-lightWeightSecurity" => {
                return Err(unsupported(
                    n,
                    "DDS Security is not available in FerroDDS yet",
                ))
            }
            n if n.starts_with("-transport") => {
                return Err(unsupported(n, "only the UDPv4 transport is available"))
            }
            "-lowResolutionClock"
            | "-showSerializationTime"
            | "-loadDataFromFile"
            | "-maximumAllocableBufferSize"
            | "-writerStats"
            | "-cacheStats"
            | "-showResourceLimits" => {
                return Err(unsupported(name, "not implemented in FerroDDS perftest"))
            }
            "-waitsetDelayUsec" | "-waitsetEventCount" => {
                return Err(unsupported(
                    name,
                    "FerroDDS perftest always receives in a plain read thread",
                ))
            }
            "-instanceHashBuckets" | "-messageSizeMax" | "-preallocateFragmentedSamples" => {
                return Err(unsupported(name, DDS_ONLY))
            }
            _ => return Err(unsupported(name, DDS_ONLY)),
        }
        Ok(())
    }

    fn validate(&mut self) -> Result<(), OptionError> {
        let is_pub = self.role == Role::Publisher;
        if self.raw {
            let reject = |set: bool, option: &'static str| {
                if set {
                    Err(OptionError::Unsupported {
                        option,
                        reason: "not available with -rawTransport (no DDS)",
                    })
                } else {
                    Ok(())
                }
            };
            reject(self.best_effort, "-bestEffort")?;
            reject(self.keyed, "-keyed")?;
            reject(self.instances.is_some(), "-instances")?;
            reject(self.write_instance.is_some(), "-writeInstance")?;
            reject(self.durability.is_some(), "-durability")?;
            reject(self.use_read_thread, "-useReadThread")?;
            reject(self.asynchronous, "-asynchronous")?;
            reject(self.scan.is_some(), "-scan")?;
            reject(self.thread_cpu_affinity.is_some(), "-threadCPUAffinity")?;
            reject(self.unbounded.is_some(), "-unbounded")?;
            reject(self.num_publishers > 1, "-numPublishers")?;
            reject(self.pid > 0, "-pidMultiPubTest")?;
            if self.data_len > MAX_RAW_DATA_LEN {
                return Err(OptionError::DataLenRange {
                    data_len: self.data_len,
                    min: OVERHEAD_BYTES,
                    max: MAX_RAW_DATA_LEN,
                    mode: "the raw UDP transport (one sample per datagram)",
                });
            }
            if self.multicast && !self.peers.is_empty() {
                return Err(OptionError::Conflict(
                    "'-multicast' cannot be combined with '-peer' in raw mode.",
                ));
            }
            if self.multicast {
                return Err(unsupported(
                    "-multicast",
                    "multicast is not implemented for the raw transport yet",
                ));
            }
            if let Some(nic) = &self.nic {
                if nic.parse::<std::net::Ipv4Addr>().is_err() {
                    return Err(OptionError::BadValue {
                        option: "-nic",
                        value: nic.clone(),
                        reason: "the raw transport needs an IPv4 address",
                    });
                }
            }
            for p in &self.peers {
                if is_pub {
                    parse_raw_pub_peer(p, self.num_subscribers)?;
                } else {
                    parse_raw_sub_peer(p)?;
                }
            }
        } else {
            if self.no_blocking_sockets {
                return Err(unsupported(
                    "-noBlockingSockets",
                    "only meaningful with -rawTransport",
                ));
            }
            for p in &self.peers {
                if p.parse::<std::net::Ipv4Addr>().is_err() {
                    return Err(OptionError::BadValue {
                        option: "-peer",
                        value: p.clone(),
                        reason: "FerroDDS takes IPv4 peer addresses",
                    });
                }
            }
        }
        if let Some(sizes) = &self.scan {
            let max = *sizes.last().unwrap_or(&self.data_len);
            let threshold = OVERHEAD_BYTES + MAX_BOUNDED_SEQ_SIZE;
            if sizes.iter().any(|&s| s > threshold) && sizes.iter().any(|&s| s <= threshold) {
                return Err(OptionError::Conflict(
                    "'-scan' sizes must all be above or all below the large-data threshold (65498).",
                ));
            }
            self.data_len = max;
            if self.execution_time == 0 {
                self.execution_time = DEFAULT_SCAN_SECONDS;
            }
        }
        if self.latency_test && self.pid != 0 {
            return Err(OptionError::Conflict(
                "Only the publisher with '-pidMultiPubTest 0' can run a latency test.",
            ));
        }
        if self.latency_test && matches!(self.batch_size, Some(b) if b > 0) {
            return Err(OptionError::Conflict(
                "Batching cannot be used in a Latency test ('-latencyTest' with '-batchSize').",
            ));
        }
        if self.data_len > OVERHEAD_BYTES + MAX_BOUNDED_SEQ_SIZE
            && matches!(self.batch_size, Some(b) if b > 0)
        {
            return Err(OptionError::Conflict(
                "Batching cannot be used with Large Data.",
            ));
        }
        if let (Some(w), Some(n)) = (self.write_instance, self.instances) {
            if w >= n {
                return Err(OptionError::Conflict(
                    "'-writeInstance' must be smaller than '-instances'.",
                ));
            }
        } else if matches!(self.write_instance, Some(w) if w > 0) {
            return Err(OptionError::Conflict(
                "'-writeInstance' must be smaller than '-instances'.",
            ));
        }
        if self.instances.is_some_and(|n| n > 1) && !self.keyed {
            return Err(OptionError::Conflict(
                "'-instances' greater than 1 needs '-keyed'.",
            ));
        }
        if self.sid >= self.num_subscribers && is_pub {
            // The publisher does not use -sidMultiSubTest; nothing to check.
        }
        if let Some((bps, method)) = self.pub_rate_bps {
            let rate = bps / (8 * self.data_len);
            if rate == 0 || rate > 10_000_000 {
                return Err(OptionError::BadValue {
                    option: "-pubRatebps",
                    value: format!("{bps}"),
                    reason: "the resulting samples/s must be between 1 and 10000000",
                });
            }
            self.pub_rate = Some(PubRate { rate, method });
        }
        if is_pub {
            let n = self.effective_num_iter();
            let lc = self.effective_latency_count();
            if n < lc {
                return Err(OptionError::NumIterBelowLatencyCount {
                    num_iter: n,
                    latency_count: lc,
                });
            }
        }
        Ok(())
    }

    /// The sizes of the run: the `-scan` list, or just `-dataLen`.
    pub fn sizes(&self) -> Vec<u64> {
        self.scan.clone().unwrap_or_else(|| vec![self.data_len])
    }

    /// `-numIter` or its default.
    pub fn effective_num_iter(&self) -> u64 {
        self.num_iter.unwrap_or(if self.latency_test {
            10_000_000
        } else {
            100_000_000
        })
    }

    /// `-latencyCount` or its default.
    pub fn effective_latency_count(&self) -> u64 {
        self.latency_count
            .unwrap_or(if self.latency_test { 1 } else { 10_000 })
    }

    /// `-sendQueueSize` or 50.
    pub fn effective_send_queue_size(&self) -> u64 {
        self.send_queue_size.unwrap_or(50)
    }

    /// `-instances` or 1.
    pub fn effective_instances(&self) -> u64 {
        self.instances.unwrap_or(1)
    }

    /// Payload (`bin_data`) length.
    pub fn payload_len(&self) -> usize {
        (self.data_len - OVERHEAD_BYTES) as usize
    }

    /// Whether the unbounded ("Large") type is used.
    pub fn large_data(&self) -> bool {
        self.unbounded.is_some() || self.data_len > OVERHEAD_BYTES + MAX_BOUNDED_SEQ_SIZE
    }

    /// The batching decision of spec 4 / 6 (`dds_batching` says whether the backend can batch).
    pub fn batching(&self, dds_batching: bool) -> BatchingState {
        if self.role != Role::Publisher {
            return BatchingState::Off;
        }
        let explicit = self.batch_size;
        if self.latency_test {
            return if explicit.is_some_and(|b| b > 0) || !self.raw {
                BatchingState::Disabled("BatchSize disabled for a Latency Test")
            } else {
                BatchingState::Off
            };
        }
        let size = match (explicit, self.raw) {
            (Some(0), _) => return BatchingState::Off,
            (Some(b), _) => b,
            (None, true) => return BatchingState::Off,
            (None, false) => DEFAULT_BATCH_SIZE,
        };
        if !self.raw && self.large_data() {
            return BatchingState::Disabled("BatchSize cannot be used with Fragmented Samples.");
        }
        if size < 2 * self.data_len && self.scan.is_none() {
            return BatchingState::Disabled("BatchSize is smaller than 2 times the sample size.");
        }
        if !self.raw && explicit.is_none() && self.pub_rate.is_some() {
            return BatchingState::Disabled("BatchSize disabled when using -pubRate.");
        }
        if !self.raw && !dds_batching {
            return BatchingState::Unavailable;
        }
        BatchingState::On(size)
    }

    /// Samples per batch (1 without batching).
    pub fn samples_per_batch(&self, batching: BatchingState) -> u64 {
        match batching {
            BatchingState::On(b) if b > self.data_len => b / self.data_len,
            _ => 1,
        }
    }

    /// The initial burst size of spec 1.6.
    pub fn initial_burst(&self, batching: BatchingState) -> u64 {
        if let Some(n) = self.initial_burst_size {
            return n;
        }
        let instances = self.effective_instances();
        if self.raw {
            return instances;
        }
        let sq = self.effective_send_queue_size();
        match batching {
            BatchingState::On(_) => (sq * self.samples_per_batch(batching))
                .max(sq)
                .max(instances),
            _ => sq.max(instances),
        }
    }
}

/// One raw-transport publisher peer: address and the subscriber ids behind it.
pub fn parse_raw_pub_peer(
    p: &str,
    num_subscribers: u32,
) -> Result<(std::net::Ipv4Addr, Vec<u32>), OptionError> {
    let bad = |reason| OptionError::BadValue {
        option: "-peer",
        value: p.to_string(),
        reason,
    };
    let (addr, ids) = match p.split_once(':') {
        None => (p, None),
        Some((a, ids)) => (a, Some(ids)),
    };
    let addr: std::net::Ipv4Addr = addr.parse().map_err(|_| bad("expected an IPv4 address"))?;
    let ids = match ids {
        None => (0..num_subscribers).collect(),
        Some(ids) => {
            let (first, last) = match ids.split_once('-') {
                None => {
                    let n = ids
                        .parse::<u32>()
                        .map_err(|_| bad("expected addr[:sid] or addr:first-last"))?;
                    (n, n)
                }
                Some((a, b)) => (
                    a.parse::<u32>()
                        .map_err(|_| bad("expected addr[:sid] or addr:first-last"))?,
                    b.parse::<u32>()
                        .map_err(|_| bad("expected addr[:sid] or addr:first-last"))?,
                ),
            };
            if first > last || last >= num_subscribers {
                return Err(bad("subscriber ids must lie in 0..numSubscribers-1"));
            }
            (first..=last).collect()
        }
    };
    Ok((addr, ids))
}

/// The raw-transport subscriber's peer (the publisher address).
pub fn parse_raw_sub_peer(p: &str) -> Result<std::net::Ipv4Addr, OptionError> {
    let addr = p.split_once(':').map_or(p, |(a, _)| a);
    addr.parse().map_err(|_| OptionError::BadValue {
        option: "-peer",
        value: p.to_string(),
        reason: "expected an IPv4 address",
    })
}

/// The `-help` text.
pub fn help_text() -> String {
    let mut s = String::from(
        "Usage: perftest [options]\n\
         Options match case-insensitively by prefix (e.g. -exec, -best, -noPrint, -raw).\n\
         Latency is printed one-way: round-trip time / 2, in microseconds.\n\n",
    );
    for spec in OPTIONS.iter().filter(|s| !s.help.is_empty()) {
        s.push_str(&format!("\t{:<22} {}\n", spec.name, spec.help));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &str) -> Result<Options, OptionError> {
        let v: Vec<&str> = args.split_whitespace().collect();
        Options::parse(&v)
    }

    #[test]
    fn table_is_sorted_and_unique() {
        for w in OPTIONS.windows(2) {
            assert!(w[0].name < w[1].name, "{} !< {}", w[0].name, w[1].name);
        }
    }

    #[test]
    fn prefixes_from_the_reference_scripts() {
        let cases = [
            ("-exec", "-executionTime"),
            ("-best", "-bestEffort"),
            ("-noPrint", "-noPrintIntervals"),
            ("-raw", "-rawTransport"),
            ("-initialBurst", "-initialBurstSize"),
            ("-noXML", "-noXmlQos"),
            ("-sid", "-sidMultiSubTest"),
            ("-dom", "-domain"),
            ("-d", "-dataLen"),
            ("-do", "-doNotDropNetworkCapture"),
            ("-datalen", "-dataLen"),
            ("-PUB", "-pub"),
            ("-latency", "-latencyCount"),
            ("-enable", "-enable-message-length"),
            ("-help", "-help"),
            ("-H", "-h"),
        ];
        for (arg, want) in cases {
            assert_eq!(lookup(arg).map(|s| s.name), Some(want), "{arg}");
        }
        assert!(lookup("-").is_none());
        assert!(lookup("-hel").is_none(), "help must be exact");
        assert!(lookup("-bogus").is_none());
        assert!(lookup("dataLen").is_none());
    }

    #[test]
    fn defaults_and_values() {
        let o = parse("-pub -datalen 200 -exec 5 -noPrint -raw").unwrap();
        assert_eq!(o.role, Role::Publisher);
        assert_eq!(o.data_len, 200);
        assert_eq!(o.execution_time, 5);
        assert!(o.no_print_intervals && o.raw);
        assert_eq!(o.effective_num_iter(), 100_000_000);
        assert_eq!(o.effective_latency_count(), 10_000);
        let o = parse("-pub -latencyTest").unwrap();
        assert_eq!(o.effective_latency_count(), 1);
        assert_eq!(o.effective_num_iter(), 10_000_000);
        // scanf semantics: trailing junk ignored.
        assert_eq!(parse("-dataLen 128abc").unwrap().data_len, 128);
    }

    #[test]
    fn errors() {
        assert_eq!(
            parse("-bogus").unwrap_err().to_string(),
            "Cannot parse '-bogus', invalid input."
        );
        assert_eq!(
            parse("-dataLen").unwrap_err(),
            OptionError::MissingValue("-dataLen")
        );
        assert_eq!(
            parse("-dataLen -pub").unwrap_err(),
            OptionError::MissingValue("-dataLen")
        );
        assert!(matches!(
            parse("-dataLen 27"),
            Err(OptionError::BadValue { .. })
        ));
        assert!(matches!(
            parse("-dataLen x"),
            Err(OptionError::BadValue { .. })
        ));
        assert!(matches!(
            parse("-domain 251"),
            Err(OptionError::BadValue { .. })
        ));
        assert_eq!(
            parse("-sub -latencyTest").unwrap_err().to_string(),
            "Cannot use '-latencyTest' while setting '-sub'."
        );
        assert_eq!(
            parse("-pub -sidMultiSubTest 1").unwrap_err().to_string(),
            "Cannot use '-sidMultiSubTest' while setting '-pub'."
        );
        // Without an explicit -sub, publisher options are accepted.
        assert!(parse("-latencyCount 5 -numIter 10").is_ok());
        assert!(matches!(
            parse("-pub -numIter 5 -latencyCount 10"),
            Err(OptionError::NumIterBelowLatencyCount { .. })
        ));
        assert!(matches!(
            parse("-transport TCP"),
            Err(OptionError::Unsupported { .. })
        ));
        assert!(matches!(
            parse("-transport udpv4"),
            Err(OptionError::BadValue { .. })
        ));
        assert!(matches!(
            parse("-pub -latencyTest -batchSize 1000"),
            Err(OptionError::Conflict(_))
        ));
        assert!(matches!(
            parse("-raw -keyed"),
            Err(OptionError::Unsupported { .. })
        ));
        assert!(matches!(
            parse("-raw -dataLen 65501"),
            Err(OptionError::DataLenRange { .. })
        ));
        assert!(matches!(
            parse("-pubRate 100"),
            Err(OptionError::BadValue { .. })
        ));
        assert!(matches!(parse("-pub -sub"), Err(OptionError::Conflict(_))));
        assert!(matches!(
            parse("-secureGovernanceFile x"),
            Err(OptionError::Unsupported { .. })
        ));
    }

    #[test]
    fn structured_values() {
        let o = parse("-pubRate 1000:spin -threadPriorities h:n:10 -threadCPUAffinity 0,2-3:1")
            .unwrap();
        assert_eq!(
            o.pub_rate,
            Some(PubRate {
                rate: 1000,
                method: RateMethod::Spin
            })
        );
        let p = o.thread_priorities.unwrap();
        assert_eq!(
            (p.main, p.receive, p.event),
            (Priority::High, Priority::Normal, Priority::Value(10))
        );
        let a = o.thread_cpu_affinity.unwrap();
        assert_eq!(a.main, vec![0, 2, 3]);
        assert_eq!(a.receive, vec![1]);
        assert!(a.database.is_empty());
        assert!(parse("-threadCPUAffinity 3-1").is_err());
        assert!(parse("-threadPriorities 1:2").is_err());
        let o = parse("-latencyFile -pub").unwrap();
        assert_eq!(
            o.latency_file.unwrap(),
            PathBuf::from("latency_samples.csv")
        );
        assert_eq!(
            parse("-outputFormat JSON").unwrap().output_format,
            OutputFormat::Json
        );
    }

    #[test]
    fn raw_peers() {
        let (a, ids) = parse_raw_pub_peer("10.0.0.2:1-2", 3).unwrap();
        assert_eq!(a, std::net::Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(ids, vec![1, 2]);
        assert_eq!(parse_raw_pub_peer("10.0.0.2", 2).unwrap().1, vec![0, 1]);
        assert!(parse_raw_pub_peer("10.0.0.2:2", 2).is_err());
        assert!(parse_raw_pub_peer("host:1", 2).is_err());
    }

    #[test]
    fn scan_async_and_flow_controller() {
        let o = parse("-pub -scan").unwrap();
        assert_eq!(o.scan.as_deref(), Some(&DEFAULT_SCAN_SIZES[..]));
        assert_eq!(o.data_len, 64900);
        assert_eq!(o.execution_time, DEFAULT_SCAN_SECONDS);
        let o = parse("-pub -scan 1024:32:64:32 -exec 3").unwrap();
        assert_eq!(o.sizes(), vec![32, 64, 1024]);
        assert_eq!((o.data_len, o.execution_time), (1024, 3));
        // Batching applies to every size (no "< 2 x dataLen" rule with -scan).
        assert_eq!(o.batching(true), BatchingState::On(8192));
        assert_eq!(parse("-pub -dataLen 64").unwrap().sizes(), vec![64]);
        assert!(parse("-pub -scan 32:100000").is_err());
        assert!(parse("-pub -scan 10").is_err());
        assert!(parse("-pub -scan 32:x").is_err());
        assert!(parse("-sub -scan").is_err());
        assert!(parse("-pub -raw -scan 32:64").is_err());
        let o = parse("-pub -asynchronous -flowController 1Gbps").unwrap();
        assert!(o.asynchronous);
        assert_eq!(o.flow_controller, FlowControllerName::Gbps1);
        assert_eq!(
            parse("-flowController 10Gbps").unwrap().flow_controller,
            FlowControllerName::Gbps10
        );
        assert!(parse("-flowController 5Gbps").is_err());
        assert!(parse("-raw -asynchronous").is_err());
    }

    #[test]
    fn batching_rules() {
        let b = |s: &str| parse(s).unwrap().batching(true);
        assert_eq!(b("-pub"), BatchingState::On(8192));
        assert_eq!(b("-pub -raw"), BatchingState::Off);
        assert_eq!(b("-pub -raw -batchSize 1000"), BatchingState::On(1000));
        assert_eq!(b("-pub -batchSize 0"), BatchingState::Off);
        assert!(matches!(
            b("-pub -dataLen 5000"),
            BatchingState::Disabled(_)
        ));
        assert!(matches!(b("-pub -latencyTest"), BatchingState::Disabled(_)));
        assert!(matches!(
            b("-pub -dataLen 100000"),
            BatchingState::Disabled(_)
        ));
        assert!(matches!(
            b("-pub -pubRate 10:sleep"),
            BatchingState::Disabled(_)
        ));
        assert_eq!(
            parse("-pub").unwrap().batching(false),
            BatchingState::Unavailable
        );
        let o = parse("-pub").unwrap();
        assert_eq!(o.initial_burst(BatchingState::On(8192)), 50 * 81);
        let o = parse("-pub -raw").unwrap();
        assert_eq!(o.initial_burst(BatchingState::Off), 1);
    }
}
