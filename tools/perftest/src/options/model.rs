//! The parsed options ([`Options`]) and their value types, defaults and the perftest
//! protocol size constants.

use std::path::PathBuf;

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
    /// Event thread (`ferrodds-timer`; FerroDDS has no database thread).
    pub event: Priority,
}

/// `-threadCPUAffinity A:B:C:D`: core lists (empty = unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuAffinity {
    /// Main thread cores (and the asynchronous publisher thread, `ferrodds-publisher`).
    pub main: Vec<usize>,
    /// Receive thread cores (`ferrodds-rx*`, `ferrodds-shm-rx`, `ferrodds-tcp-rx` and
    /// perftest's read threads).
    pub receive: Vec<usize>,
    /// Database thread cores: FerroDDS has none, so a non-empty list is refused.
    pub database: Vec<usize>,
    /// Event thread cores (`ferrodds-timer`).
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
    /// `-verbosity` (0 silent, 1 errors, 2 warnings, 3 everything): FerroDDS's log on stderr.
    pub verbosity: u32,
    /// `-transportVerbosity` (0 errors, 1 warnings, 2 connections, 3 everything): the
    /// transports' log; `-verbosity` when not given.
    pub transport_verbosity: Option<u32>,
    /// `-noXmlQos`: the QoS profiles compiled into perftest, no file.
    pub no_xml_qos: bool,
    /// `-qosFile` (and the 2.x name `-qosProfile`): the QoS profiles file; `None` =
    /// `perftest_qos_profiles.xml` in the working directory or beside the executable, else
    /// the compiled-in copy.
    pub qos_file: Option<PathBuf>,
    /// `-qosLibrary` (default `PerftestQosLibrary`).
    pub qos_library: String,
    /// `-durability` (0 volatile, 1 transient local).
    pub durability: Option<u32>,
    /// `-useReadThread`.
    pub use_read_thread: bool,
    /// `-sendQueueSize`.
    pub send_queue_size: Option<u64>,
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
    pub unbounded: bool,
    /// `-batchSize`.
    pub batch_size: Option<u64>,
    /// `-bestEffort`.
    pub best_effort: bool,
    /// `-transport`.
    pub transport: Option<String>,
    /// `-enableTCP`: TCP beside UDPv4.
    pub enable_tcp: bool,
    /// `-enableSharedMemory`: shared memory beside UDPv4 (FerroDDS peers on this host use it
    /// for user data).
    pub enable_shared_memory: bool,
    /// `-zeroCopy`: throughput samples are written through writer loans
    /// (`DataWriter::loan_sample`), in the shared-memory loan pool when the readers are on
    /// this host (unkeyed types, no batching); the subscriber reads such samples in place,
    /// in the writer's chunk (`DataReader::set_in_place`).
    pub zero_copy: bool,
    /// `-checkConsistency` (with `-zeroCopy`): the subscriber checks, after reading a sample
    /// in place, that the writer did not reuse its chunk meanwhile, and drops it if it did.
    pub check_consistency: bool,
    /// `-loaningSendReceive`: the throughput samples are sent through writer loans and
    /// taken in their serialized form (read in place when they come by reference), over
    /// any transport (unkeyed types, no batching).
    pub loaning: bool,
    /// `-showResourceLimits`: print the participant's resource limits at start and how often
    /// each was exceeded at the end.
    pub show_resource_limits: bool,
    /// `-networkCapture`: the participant captures its traffic to a pcapng file.
    pub network_capture: bool,
    /// `-doNotDropNetworkCapture`: keep the capture file at the end (RTI deletes it
    /// otherwise) and record every message (the flow waits for the capture rather than
    /// the capture dropping messages).
    pub keep_network_capture: bool,
    /// `-networkCaptureRemoveUserData` (FerroDDS extension): the capture keeps headers and
    /// discovery, user payloads become their length.
    pub network_capture_no_user_data: bool,
    /// `-transportPublicAddress ADDR[:PORT]` (UDPv4_WAN: the address peers reach us at).
    pub wan_public_address: Option<std::net::SocketAddrV4>,
    /// `-transportHostPort` (UDPv4_WAN: the one local UDP port; 7400 when not given).
    pub wan_host_port: Option<u16>,
    /// DDS Security (`-secure*`): `None` when no such option was given.
    pub secure: Option<SecureOptions>,
    /// `-transportCertAuthority` (TLS: PEM file of the CA certificates).
    pub tls_ca_file: Option<String>,
    /// `-transportCertFile` (TLS: PEM file of this side's certificate chain).
    pub tls_cert_file: Option<String>,
    /// `-transportPrivateKey` (TLS: PEM file of this side's private key).
    pub tls_key_file: Option<String>,
    /// `-transportServerBindPort` (TCP server port; 7400 when not given).
    pub tcp_server_port: Option<u16>,
    /// `-nic`.
    pub nic: Option<String>,
    /// `-peer` (repeatable).
    pub peers: Vec<String>,
    /// `-multicast` (also set by `-multicastAddr`).
    pub multicast: bool,
    /// `-multicastAddr`: the Throughput, Latency and Announcement groups
    /// ([`super::parse_multicast_addr`]).
    pub multicast_groups: Option<[std::net::Ipv4Addr; 3]>,
    /// `-nomulticast` (RTI 2.x): multicast off, discovery through unicast peers (127.0.0.1
    /// when no `-peer` is given).
    pub no_multicast: bool,
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
/// `-qosLibrary` default (RTI perftest's library name).
pub const DEFAULT_QOS_LIBRARY: &str = "PerftestQosLibrary";
/// The QoS profiles file perftest reads by default.
pub const DEFAULT_QOS_FILE: &str = "perftest_qos_profiles.xml";

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
            transport_verbosity: None,
            no_xml_qos: false,
            qos_file: None,
            qos_library: DEFAULT_QOS_LIBRARY.to_string(),
            durability: None,
            use_read_thread: false,
            send_queue_size: None,
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
            unbounded: false,
            batch_size: None,
            best_effort: false,
            transport: None,
            enable_tcp: false,
            enable_shared_memory: false,
            zero_copy: false,
            check_consistency: false,
            loaning: false,
            show_resource_limits: false,
            network_capture: false,
            keep_network_capture: false,
            network_capture_no_user_data: false,
            wan_public_address: None,
            wan_host_port: None,
            secure: None,
            tls_ca_file: None,
            tls_cert_file: None,
            tls_key_file: None,
            tcp_server_port: None,
            nic: None,
            peers: Vec::new(),
            multicast: false,
            multicast_groups: None,
            no_multicast: false,
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
/// Largest `-dataLen` of the raw TCP transport (10 MiB, the largest sample FerroDDS is
/// tested with).
pub const MAX_RAW_TCP_DATA_LEN: u64 = 10 * 1024 * 1024;
/// Default batch size in throughput tests.
pub const DEFAULT_BATCH_SIZE: u64 = 8192;
/// Key of control samples.
pub const CONTROL_INSTANCE: u32 = 65535;

/// The DDS Security options (`-secure*`). Files not given are those perftest ships
/// (`resource/secure`): the CA, this side's identity (`pub.pem` / `sub.pem`) and permissions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecureOptions {
    /// `-secureGovernanceFile`.
    pub governance: Option<String>,
    /// `-securePermissionsFile`.
    pub permissions: Option<String>,
    /// `-secureCertAuthority` (identity CA and permissions CA, as RTI's).
    pub ca: Option<String>,
    /// `-secureCertFile`.
    pub cert: Option<String>,
    /// `-securePrivateKey`.
    pub key: Option<String>,
    /// `-secureEncryptionAlgorithm` (`aes-128-gcm` when not given, RTI's default).
    pub encryption_algorithm: Option<String>,
    /// RTI Perftest 4.0's governance flags (`-secureSign`, `-secureEncryptData`,
    /// `-secureEncryptSM`, `-secureEncryptBoth`, `-secureEncryptDiscovery`): they name the
    /// governance file when `-secureGovernanceFile` is not given.
    pub legacy_sign: bool,
    /// `-secureEncryptData`.
    pub legacy_encrypt_data: bool,
    /// `-secureEncryptSM`.
    pub legacy_encrypt_submessage: bool,
    /// `-secureEncryptBoth`.
    pub legacy_encrypt_both: bool,
    /// `-secureEncryptDiscovery`.
    pub legacy_encrypt_discovery: bool,
}

impl SecureOptions {
    /// Whether one of RTI Perftest 4.0's governance flags was given.
    pub fn has_legacy_flags(&self) -> bool {
        self.legacy_sign
            || self.legacy_encrypt_data
            || self.legacy_encrypt_submessage
            || self.legacy_encrypt_both
            || self.legacy_encrypt_discovery
    }

    /// The governance file RTI Perftest 4.0 chose from its flags:
    /// `signed_PerftestGovernance_[Discovery][Sign][EncryptBoth|EncryptData|EncryptSubmessage].xml`.
    pub fn legacy_governance_name(&self) -> String {
        let mut n = String::from("signed_PerftestGovernance_");
        if self.legacy_encrypt_discovery {
            n.push_str("Discovery");
        }
        if self.legacy_sign {
            n.push_str("Sign");
        }
        if self.legacy_encrypt_both || (self.legacy_encrypt_data && self.legacy_encrypt_submessage)
        {
            n.push_str("EncryptBoth");
        } else if self.legacy_encrypt_data {
            n.push_str("EncryptData");
        } else if self.legacy_encrypt_submessage {
            n.push_str("EncryptSubmessage");
        }
        n.push_str(".xml");
        n
    }
}
