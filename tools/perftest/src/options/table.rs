//! The option table: every RTI Perftest option's name, arity, role group and help, the
//! prefix lookup and the `-help` text.

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
    o(
        "-checkConsistency",
        Flag,
        Both,
        "With -zeroCopy: drop a sample read in place whose chunk was reused meanwhile",
    ),
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
    o(
        "-doNotDropNetworkCapture",
        Flag,
        Both,
        "Keep the -networkCapture file (deleted at the end otherwise) and record every message, waiting for the disk instead of dropping",
    ),
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
    o("-enableSharedMemory", Flag, Both, "shared memory beside UDPv4"),
    o("-enableTCP", Flag, Both, "TCP beside UDPv4"),
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
    o(
        "-loaningSendReceive",
        Flag,
        Both,
        "Throughput samples through writer loans and serialized takes, any transport",
    ),
    o("-lowResolutionClock", Flag, Pub, ""),
    o("-maximumAllocableBufferSize", Value, Pub, ""),
    o("-messageSizeMax", Value, Both, ""),
    o("-multicast", Flag, Both, "Use multicast for data"),
    o(
        "-multicastAddr",
        Value,
        Both,
        "Multicast groups A (Throughput; Latency A+1, Announcement A+2) or A,B,C; implies -multicast (raw UDP)",
    ),
    o(
        "-networkCapture",
        Flag,
        Both,
        "Capture the participant's traffic to rtiperftest_network_capture_<pub|sub>_<id>_<GUID prefix>.pcapng in the working directory",
    ),
    o(
        "-networkCaptureRemoveUserData",
        Flag,
        Both,
        "With -networkCapture: user payloads replaced by their length; FerroDDS extension",
    ),
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
    o(
        "-nomulticast",
        Flag,
        Both,
        "Do not use multicast (discovery through -peer, 127.0.0.1 by default)",
    ),
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
        "",
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
    o(
        "-showResourceLimits",
        Flag,
        Both,
        "Print resource limits, and how often each was exceeded",
    ),
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
        "<UDPv4|TCP|TLS|UDPv4_WAN> Transport (TCP: Cyclone DDS framing, server port 7400; TLS: the same inside TLS 1.3)",
    ),
    o(
        "-transportCertAuthority",
        Value,
        Both,
        "<file> TLS: PEM CA certificates (default: the built-in test CA)",
    ),
    o(
        "-transportCertFile",
        Value,
        Both,
        "<file> TLS: PEM certificate chain (default: the built-in test identity)",
    ),
    o(
        "-transportHostPort",
        Value,
        Both,
        "<port> UDPv4_WAN: the one local UDP port (default 7400)",
    ),
    o(
        "-transportPrivateKey",
        Value,
        Both,
        "<file> TLS: PEM private key (default: the built-in test identity's)",
    ),
    o(
        "-transportPublicAddress",
        Value,
        Both,
        "<ip[:port]> UDPv4_WAN: the address peers reach this side at (a NAT's forwarded port)",
    ),
    o("-transportSecureWan", Flag, Both, ""),
    o(
        "-transportServerBindPort",
        Value,
        Both,
        "<port> TCP server port (default 7400)",
    ),
    o(
        "-transportVerbosity",
        Value,
        Both,
        "<0-3> Transport log level (0 errors, 1 warnings, 2 connections, 3 all)",
    ),
    o("-transportWan", Flag, Both, ""),
    o("-transportWanId", Value, Both, ""),
    o("-transportWanServerAddress", Value, Both, ""),
    o("-transportWanServerPort", Value, Both, ""),
    o(
        "-unbounded",
        Optional,
        Both,
        "Use the unbounded (Large) type (a pool threshold value is refused)",
    ),
    o("-useLegacyDynamicData", Flag, Both, ""),
    o(
        "-useReadThread",
        Flag,
        Both,
        "Receive in a read thread instead of a listener on the receive thread",
    ),
    o(
        "-verbosity",
        Value,
        Both,
        "<0-3> Log level (0 silent, 1 errors, 2 warnings, 3 all)",
    ),
    o("-waitsetDelayUsec", Value, Both, ""),
    o("-waitsetEventCount", Value, Both, ""),
    o("-writeInstance", Value, Pub, "<i> Always write instance i"),
    o("-writerStats", Flag, Pub, ""),
    o(
        "-zeroCopy",
        Flag,
        Both,
        "Large samples by reference in shared memory: writer loans, reads in place",
    ),
];

/// Finds the option an argument names: a case-insensitive exact name, else the one option
/// the argument is a case-insensitive prefix of (`-exec`, `-best`, `-noPrint`, `-raw`).
/// `-help` and `-h` must be spelled out. `None` when no option or several match; use
/// [`resolve`] for the reason.
pub fn lookup(arg: &str) -> Option<&'static OptionSpec> {
    resolve(arg).ok()
}

/// Like [`lookup`], with the error to report: an unknown argument, or a prefix shared by
/// several options (listed, where RTI would silently take the first in byte order).
pub fn resolve(arg: &str) -> Result<&'static OptionSpec, OptionError> {
    if arg.len() < 2 || !arg.starts_with('-') {
        return Err(OptionError::Unknown(arg.to_string()));
    }
    if let Some(spec) = OPTIONS.iter().find(|s| s.name.eq_ignore_ascii_case(arg)) {
        return Ok(spec);
    }
    let exact_only = |name: &str| name == "-h" || name == "-help";
    let candidates: Vec<&'static OptionSpec> = OPTIONS
        .iter()
        .filter(|s| {
            !exact_only(s.name)
                && s.name.len() > arg.len()
                && s.name.as_bytes()[..arg.len()].eq_ignore_ascii_case(arg.as_bytes())
        })
        .collect();
    match candidates.as_slice() {
        [] => Err(OptionError::Unknown(arg.to_string())),
        [one] => Ok(one),
        many => Err(OptionError::Ambiguous {
            arg: arg.to_string(),
            candidates: many.iter().map(|s| s.name).collect(),
        }),
    }
}

/// The `-help` text.
pub fn help_text() -> String {
    let mut s = String::from(
        "Usage: perftest [options]\n\
         Options match case-insensitively by prefix (e.g. -exec, -best, -noPrint, -raw);\n\
         a prefix shared by several options is an error that lists them.\n\
         Latency is printed one-way: round-trip time / 2, in microseconds.\n\n",
    );
    for spec in OPTIONS.iter().filter(|s| !s.help.is_empty()) {
        s.push_str(&format!("\t{:<22} {}\n", spec.name, spec.help));
    }
    s
}
