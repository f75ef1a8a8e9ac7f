//! The test matrix: axes, the rules that prune meaningless combinations, and the run schedule.
//!
//! A [`Scenario`] is one point of the matrix (system × test × reliability × keyed × batching ×
//! transport × size). [`MatrixSpec::scenarios`] expands the selected axes; [`MatrixSpec::schedule`]
//! orders the runs so that, for each configuration, the systems alternate round by round
//! (A B C A B C …) and slow drifts of the machine spread over all systems alike.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::LabError;

/// The sample sizes (perftest `-dataLen`, bytes) of the standard matrix.
pub const STANDARD_SIZES: [u64; 12] = [
    32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 63000,
];

/// The large sizes (bytes), run only reliable, unkeyed and without batching.
pub const LARGE_SIZES: [u64; 6] = [
    100_000, 500_000, 1_048_576, 1_548_576, 4_194_304, 10_485_760,
];

/// Sizes above this many bytes are "large data": reliable, unkeyed, no batching, no raw baseline.
pub const LARGE_THRESHOLD: u64 = 63_000;

/// The batch size (bytes) used when batching is on.
pub const BATCH_BYTES: u64 = 8192;

/// Number of instances written in keyed runs (`-keyed -instances 100000`).
pub const KEYED_INSTANCES: u64 = 100_000;

/// The sizes of `lab run --quick`.
pub const QUICK_SIZES: [u64; 3] = [32, 1024, 16384];

/// Which implementation a run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum System {
    /// FerroDDS through `perftest`.
    Ferrodds,
    /// `perftest -rawTransport`: plain UDP sockets, no DDS (the baseline).
    Raw,
    /// Eclipse Cyclone DDS `ddsperf`.
    Cyclone,
}

/// Which measurement a run makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestKind {
    /// Ping-pong, one-way latency (RTT/2) reported by the publisher.
    Latency,
    /// Publish as fast as possible, throughput reported by the subscriber.
    Throughput,
}

/// Reliability QoS of the data topics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reliability {
    /// Strict reliable (keep all).
    Reliable,
    /// Best effort (`-bestEffort`, ddsperf `-u`).
    BestEffort,
}

/// The transport perftest is asked to use (`-transport`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// UDP over IPv4.
    Udpv4,
    /// Shared memory between FerroDDS participants on one host (perftest `-transport SHMEM`;
    /// raw: plain shared-memory rings; no Cyclone DDS baseline: its shared memory needs
    /// iceoryx, not installed here). Loopback topology only.
    Shmem,
    /// Shared memory with writer loans (perftest `-transport SHMEM -zeroCopy` on both sides):
    /// FerroDDS only, unkeyed, unbatched, without DDS Security (perftest refuses the rest);
    /// no raw baseline of its own: the [`Transport::Shmem`] raw rows are its baseline (see
    /// [`Transport::raw_pair`]). Loopback topology only.
    ShmemZc,
    /// RTPS over TCPv4 (perftest `-transport TCP`, raw: plain TCP sockets, Cyclone DDS:
    /// `General/Transport=tcp`).
    Tcp,
    /// RTPS over TLS over TCPv4 (perftest `-transport TLS` with its built-in test identity;
    /// raw: plain TLS sockets; no Cyclone DDS baseline: its TLS is not built here).
    Tls,
    /// UDPv4_WAN: one UDP port per participant, public address announced (FerroDDS only;
    /// raw UDP is its baseline in the UDPv4 rows).
    Udpv4Wan,
}

/// Network capture of the FerroDDS participants (perftest `-networkCapture`): the capture's
/// cost is the ratio of a capture row to the same row without.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Capture {
    /// No capture (default).
    #[default]
    Off,
    /// Both participants capture their traffic (`-networkCapture`).
    On,
    /// Both capture with user payloads replaced by their length
    /// (`-networkCapture -networkCaptureRemoveUserData`).
    NoUserData,
}

/// The language of the FerroDDS perftest a run uses: the Rust one, or the C# one over the C
/// API (`bindings/csharp/perftest/perftest_cs`), whose figures the published Connext C# ones
/// compare with. The baselines are Rust (raw) or C (Cyclone) whatever this says.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Language {
    /// `perftest` (default).
    #[default]
    Rust,
    /// The C# perftest (UDPv4 and SHMEM, no network capture).
    Cs,
    /// `perftest_micro`, the small-footprint Rust build (UDPv4 only, no batching, no network
    /// capture), beside the full one as the published tutorial's "Micro" curve.
    Micro,
}

/// A DDS Security profile of the published Connext security figures
/// (`security_udpv4_10g_cpp98_reliable`; `shared/security/PROFILES.md`): each but
/// [`SecurityProfile::NoSecurityLibraries`] is a signed governance document perftest ships in
/// `resource/secure` and is given with `-secureGovernanceFile`. The names are the published
/// scenario names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecurityProfile {
    /// No `-secure*` option: the security plugins are not loaded.
    NoSecurityLibraries,
    /// Plugins loaded, nothing protected, unauthenticated participants allowed.
    NoProtection,
    /// Every RTPS message signed (`rtps_protection_kind` SIGN).
    RtpsSign,
    /// Every RTPS message encrypted (`rtps_protection_kind` ENCRYPT).
    RtpsEncrypt,
    /// RTPS messages signed with origin authentication, payloads encrypted.
    RtpsSignOrigauthDataEncrypt,
    /// RTPS messages signed, submessages encrypted with origin authentication, payloads
    /// encrypted.
    RtpsSignSubmsgEncryptOrigauthDataEncrypt,
    /// RTPS messages signed, submessages encrypted.
    RtpsSignSubmsgEncrypt,
}

impl SecurityProfile {
    /// Every profile, in the published order.
    pub const ALL: [SecurityProfile; 7] = [
        SecurityProfile::NoSecurityLibraries,
        SecurityProfile::NoProtection,
        SecurityProfile::RtpsSign,
        SecurityProfile::RtpsEncrypt,
        SecurityProfile::RtpsSignOrigauthDataEncrypt,
        SecurityProfile::RtpsSignSubmsgEncryptOrigauthDataEncrypt,
        SecurityProfile::RtpsSignSubmsgEncrypt,
    ];

    /// The published scenario name, used in CSV, JSON and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SecurityProfile::NoSecurityLibraries => "no_security_libraries",
            SecurityProfile::NoProtection => "no_protection",
            SecurityProfile::RtpsSign => "rtps_sign",
            SecurityProfile::RtpsEncrypt => "rtps_encrypt",
            SecurityProfile::RtpsSignOrigauthDataEncrypt => "rtps_sign_origauth_data_encrypt",
            SecurityProfile::RtpsSignSubmsgEncryptOrigauthDataEncrypt => {
                "rtps_sign_submsg_encrypt_origauth_data_encrypt"
            }
            SecurityProfile::RtpsSignSubmsgEncrypt => "rtps_sign_submsg_encrypt",
        }
    }

    /// The governance file's name in perftest's `resource/secure` folder; `None` for
    /// [`SecurityProfile::NoSecurityLibraries`].
    pub fn governance_file(self) -> Option<&'static str> {
        Some(match self {
            SecurityProfile::NoSecurityLibraries => return None,
            SecurityProfile::NoProtection => "signed_PerftestGovernance_.xml",
            SecurityProfile::RtpsSign => "signed_PerftestGovernance_RTPSSign.xml",
            SecurityProfile::RtpsEncrypt => "signed_PerftestGovernance_RTPSEncrypt.xml",
            SecurityProfile::RtpsSignOrigauthDataEncrypt => {
                "signed_PerftestGovernance_RTPSSignWithOrigAuthEncryptData.xml"
            }
            SecurityProfile::RtpsSignSubmsgEncryptOrigauthDataEncrypt => {
                "signed_PerftestGovernance_RTPSSignEncryptSubmessageWithOrigAuthEncryptData.xml"
            }
            SecurityProfile::RtpsSignSubmsgEncrypt => {
                "signed_PerftestGovernance_SignEncryptSubmessage.xml"
            }
        })
    }

    /// perftest's `-secureGovernanceFile` value: relative to perftest's own folder, where
    /// perftest looks it up from any working directory.
    pub fn perftest_governance(self) -> Option<String> {
        self.governance_file()
            .map(|f| format!("{PERFTEST_SECURE_DIR}/{f}"))
    }

    /// Whether the security plugins are loaded (every profile but
    /// [`SecurityProfile::NoSecurityLibraries`]).
    pub fn is_secure(self) -> bool {
        self != SecurityProfile::NoSecurityLibraries
    }
}

/// perftest's folder of DDS Security files (relative to perftest's own folder).
pub const PERFTEST_SECURE_DIR: &str = "resource/secure";

impl fmt::Display for SecurityProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SecurityProfile {
    type Err = LabError;
    fn from_str(s: &str) -> Result<Self, LabError> {
        let t = s.trim().to_ascii_lowercase().replace('-', "_");
        SecurityProfile::ALL
            .into_iter()
            .find(|p| p.name() == t)
            .ok_or_else(|| LabError::BadValue {
                what: "security profile (no_security_libraries, no_protection, rtps_sign, rtps_encrypt, rtps_sign_origauth_data_encrypt, rtps_sign_submsg_encrypt_origauth_data_encrypt, rtps_sign_submsg_encrypt)",
                value: s.to_string(),
            })
    }
}

macro_rules! named_enum {
    ($t:ty, $what:literal, $($v:path => $s:literal),+ $(,)?) => {
        impl $t {
            /// The stable lower-case name used in CSV, JSON and on the command line.
            pub fn name(self) -> &'static str {
                match self { $($v => $s),+ }
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
        impl FromStr for $t {
            type Err = LabError;
            fn from_str(s: &str) -> Result<Self, LabError> {
                match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
                    $($s => Ok($v),)+
                    _ => Err(LabError::BadValue { what: $what, value: s.to_string() }),
                }
            }
        }
    };
}

named_enum!(System, "system", System::Ferrodds => "ferrodds", System::Raw => "raw", System::Cyclone => "cyclone");
named_enum!(TestKind, "test", TestKind::Latency => "latency", TestKind::Throughput => "throughput");
named_enum!(Reliability, "reliability", Reliability::Reliable => "reliable", Reliability::BestEffort => "best-effort");
named_enum!(Capture, "capture", Capture::Off => "off", Capture::On => "on", Capture::NoUserData => "no-user-data");
named_enum!(Language, "language", Language::Rust => "rust", Language::Cs => "cs", Language::Micro => "micro");
named_enum!(Transport, "transport", Transport::Udpv4 => "udpv4", Transport::Shmem => "shmem", Transport::ShmemZc => "shmem-zc", Transport::Tcp => "tcp", Transport::Tls => "tls", Transport::Udpv4Wan => "udpv4-wan");

impl Transport {
    /// Every transport, in the order of the enum (SHMEM zero-copy beside SHMEM).
    pub const ALL: [Transport; 6] = [
        Transport::Udpv4,
        Transport::Shmem,
        Transport::ShmemZc,
        Transport::Tcp,
        Transport::Tls,
        Transport::Udpv4Wan,
    ];

    /// The value of perftest's `-transport` option.
    pub fn perftest_name(self) -> &'static str {
        match self {
            Transport::Udpv4 => "UDPv4",
            Transport::Shmem | Transport::ShmemZc => "SHMEM",
            Transport::Tcp => "TCP",
            Transport::Tls => "TLS",
            Transport::Udpv4Wan => "UDPv4_WAN",
        }
    }

    /// Whether perftest's raw mode (and so the raw baseline) exists for this transport.
    pub fn has_raw_baseline(self) -> bool {
        matches!(
            self,
            Transport::Udpv4 | Transport::Tcp | Transport::Tls | Transport::Shmem
        )
    }

    /// Whether the Cyclone DDS baseline runs over this transport.
    pub fn has_cyclone_baseline(self) -> bool {
        matches!(self, Transport::Udpv4 | Transport::Tcp)
    }

    /// Whether perftest writes through writer loans over this transport (`-zeroCopy`).
    pub fn zero_copy(self) -> bool {
        self == Transport::ShmemZc
    }

    /// The transport whose raw rows the report compares FerroDDS rows of this transport
    /// with: the same one where it has a raw baseline, the SHMEM rings for SHMEM
    /// zero-copy, none for UDPv4_WAN.
    pub fn raw_pair(self) -> Option<Transport> {
        match self {
            Transport::ShmemZc => Some(Transport::Shmem),
            t if t.has_raw_baseline() => Some(t),
            _ => None,
        }
    }

    /// How a plot line's label names this transport (its [`name`](Transport::name) but for
    /// SHMEM zero-copy, named beside SHMEM).
    pub fn label(self) -> &'static str {
        match self {
            Transport::ShmemZc => "shmem zero-copy",
            t => t.name(),
        }
    }
}

/// Parses `on`/`off` style booleans used by `--keyed` and `--batching` lists.
pub fn parse_on_off(what: &'static str, s: &str) -> Result<Vec<bool>, LabError> {
    match s.trim().to_ascii_lowercase().as_str() {
        "on" | "yes" | "true" | "keyed" => Ok(vec![true]),
        "off" | "no" | "false" | "unkeyed" => Ok(vec![false]),
        "both" | "all" => Ok(vec![false, true]),
        _ => Err(LabError::BadValue {
            what,
            value: s.to_string(),
        }),
    }
}

/// Parses a comma-separated list with `FromStr` items.
pub fn parse_list<T: FromStr<Err = LabError>>(s: &str) -> Result<Vec<T>, LabError> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        out.push(item.parse()?);
    }
    Ok(out)
}

/// Parses a size such as `32`, `63000`, `1k` (1024), `4M` (4 MiB) or `1.5MB`.
pub fn parse_size(s: &str) -> Result<u64, LabError> {
    let t = s.trim().to_ascii_lowercase();
    let bad = || LabError::BadValue {
        what: "size",
        value: s.to_string(),
    };
    let (num, mult) = if let Some(n) = t.strip_suffix("kib").or_else(|| t.strip_suffix('k')) {
        (n, 1024.0)
    } else if let Some(n) = t.strip_suffix("mib").or_else(|| t.strip_suffix('m')) {
        (n, 1_048_576.0)
    } else if let Some(n) = t.strip_suffix("kb") {
        (n, 1000.0)
    } else if let Some(n) = t.strip_suffix("mb") {
        (n, 1e6)
    } else {
        (t.as_str(), 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    let bytes = (v * mult).round();
    if !(28.0..=2_147_482_620.0).contains(&bytes) {
        return Err(bad());
    }
    Ok(bytes as u64)
}

/// Parses a comma-separated list of sizes.
pub fn parse_sizes(s: &str) -> Result<Vec<u64>, LabError> {
    s.split(',')
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .map(parse_size)
        .collect()
}

/// One point of the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Scenario {
    /// Measured implementation.
    pub system: System,
    /// Latency or throughput.
    pub test: TestKind,
    /// Reliability of the data topics.
    pub reliability: Reliability,
    /// Keyed type with [`KEYED_INSTANCES`] instances.
    pub keyed: bool,
    /// Batching ([`BATCH_BYTES`]) on.
    pub batching: bool,
    /// Transport.
    pub transport: Transport,
    /// Sample size in bytes (perftest `-dataLen`, 28-byte header included).
    pub size: u64,
    /// Network capture (FerroDDS only; the baselines never capture).
    #[serde(default)]
    pub capture: Capture,
    /// The perftest's language (FerroDDS only; the baselines are always [`Language::Rust`]).
    #[serde(default)]
    pub language: Language,
    /// The DDS Security profile; `None` when the security axis is not in use (then no run has
    /// security). With the axis, rows without security are
    /// [`SecurityProfile::NoSecurityLibraries`].
    #[serde(default)]
    pub security: Option<SecurityProfile>,
    /// Subscriber processes of the run (fan-out: perftest `-numSubscribers`, each with its
    /// `-sidMultiSubTest`; Cyclone: as many `ddsperf sub`/`pong`).
    #[serde(default = "one_subscriber")]
    pub subscribers: u32,
    /// User data by multicast (perftest `-multicast`; Cyclone with multicast allowed).
    #[serde(default)]
    pub multicast: bool,
}

fn one_subscriber() -> u32 {
    1
}

/// Most subscribers of one run (`--subscribers`).
pub const MAX_SUBSCRIBERS: u32 = 16;

/// Parses `--subscribers`: a comma-separated list of counts from 1 to [`MAX_SUBSCRIBERS`].
pub fn parse_subscribers(s: &str) -> Result<Vec<u32>, LabError> {
    let bad = || LabError::BadValue {
        what: "subscriber count (1 to 16)",
        value: s.to_string(),
    };
    let mut v = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        match item.parse::<u32>() {
            Ok(n) if (1..=MAX_SUBSCRIBERS).contains(&n) => v.push(n),
            _ => return Err(bad()),
        }
    }
    if v.is_empty() {
        return Err(bad());
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

impl Scenario {
    /// The configuration a plot line stands for: system × reliability × keyed × batching
    /// (plus the transport when it is not UDPv4).
    pub fn config_label(&self) -> String {
        let mut s = config_label(
            self.system,
            self.reliability,
            self.keyed,
            self.batching,
            self.transport,
        );
        s.push_str(capture_suffix(self.capture));
        match self.language {
            Language::Cs => s.push_str(" C#"),
            Language::Micro => s.push_str(" micro"),
            Language::Rust => {}
        }
        if let Some(p) = self.security.filter(|p| p.is_secure()) {
            s.push(' ');
            s.push_str(p.name());
        }
        if self.multicast {
            s.push_str(" multicast");
        }
        if self.subscribers > 1 {
            s.push_str(&format!(" ×{} subscribers", self.subscribers));
        }
        s
    }

    /// Whether this run loads the DDS Security plugins.
    pub fn is_secure(&self) -> bool {
        self.security.is_some_and(SecurityProfile::is_secure)
    }
}

/// What a plot line's label gets for its capture setting.
pub fn capture_suffix(c: Capture) -> &'static str {
    match c {
        Capture::Off => "",
        Capture::On => " capture",
        Capture::NoUserData => " capture (no user data)",
    }
}

/// Builds the label of a plot line (see [`Scenario::config_label`]).
pub fn config_label(
    system: System,
    reliability: Reliability,
    keyed: bool,
    batching: bool,
    transport: Transport,
) -> String {
    let mut s = match system {
        // The raw transport has no reliability and no keys: label it by what it is.
        System::Raw if transport == Transport::Tcp => return "raw TCP".to_string(),
        System::Raw if transport == Transport::Tls => return "raw TLS".to_string(),
        System::Raw if transport == Transport::Shmem => return "raw SHMEM".to_string(),
        System::Raw => "raw UDP".to_string(),
        _ => format!(
            "{} {} {}",
            system,
            reliability,
            if keyed { "keyed" } else { "unkeyed" }
        ),
    };
    if batching {
        s.push_str(" batching");
    }
    if transport != Transport::Udpv4 {
        s.push(' ');
        s.push_str(transport.label());
    }
    s
}

/// One scheduled run: a scenario and which repetition of it this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedRun {
    /// Position in the schedule, from 0.
    pub index: usize,
    /// What to run.
    pub scenario: Scenario,
    /// Repetition number, from 0.
    pub repetition: u32,
}

/// The selected axes of a matrix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatrixSpec {
    /// Systems to run (those not installed are removed by the caller).
    pub systems: Vec<System>,
    /// Tests.
    pub tests: Vec<TestKind>,
    /// Reliabilities.
    pub reliabilities: Vec<Reliability>,
    /// Keyed values (`false` = unkeyed).
    pub keyed: Vec<bool>,
    /// Batching values.
    pub batching: Vec<bool>,
    /// Transports.
    pub transports: Vec<Transport>,
    /// Network capture settings of the FerroDDS runs (default: off only).
    #[serde(default = "captures_off")]
    pub captures: Vec<Capture>,
    /// Languages of the FerroDDS perftest (default: Rust only).
    #[serde(default = "rust_only")]
    pub languages: Vec<Language>,
    /// DDS Security profiles (default: none, the axis absent; see [`MatrixSpec::check_security`]).
    #[serde(default)]
    pub security: Vec<SecurityProfile>,
    /// Subscriber counts (fan-out; default: one).
    #[serde(default = "one_subscriber_list")]
    pub subscribers: Vec<u32>,
    /// Multicast values (`true`: user data by multicast; default: unicast only).
    #[serde(default = "unicast_only")]
    pub multicast: Vec<bool>,
    /// Explicit sizes; `None` = [`STANDARD_SIZES`] plus [`LARGE_SIZES`] for reliable unkeyed.
    pub sizes: Option<Vec<u64>>,
    /// Repetitions of each scenario.
    pub repetitions: u32,
    /// perftest `-executionTime` (seconds) of each run.
    pub execution_time_s: u32,
}

fn captures_off() -> Vec<Capture> {
    vec![Capture::Off]
}

fn rust_only() -> Vec<Language> {
    vec![Language::Rust]
}

fn one_subscriber_list() -> Vec<u32> {
    vec![1]
}

fn unicast_only() -> Vec<bool> {
    vec![false]
}

impl MatrixSpec {
    /// The full matrix users run by hand.
    pub fn full() -> Self {
        MatrixSpec {
            systems: vec![System::Ferrodds, System::Raw, System::Cyclone],
            tests: vec![TestKind::Latency, TestKind::Throughput],
            reliabilities: vec![Reliability::Reliable, Reliability::BestEffort],
            keyed: vec![false, true],
            batching: vec![false, true],
            transports: vec![Transport::Udpv4],
            captures: captures_off(),
            languages: rust_only(),
            security: Vec::new(),
            subscribers: one_subscriber_list(),
            multicast: unicast_only(),
            sizes: None,
            repetitions: 3,
            execution_time_s: 10,
        }
    }

    /// A small representative subset for a first look (about two minutes).
    pub fn quick() -> Self {
        MatrixSpec {
            systems: vec![System::Ferrodds, System::Raw, System::Cyclone],
            tests: vec![TestKind::Latency, TestKind::Throughput],
            reliabilities: vec![Reliability::Reliable],
            keyed: vec![false],
            batching: vec![false],
            transports: vec![Transport::Udpv4],
            captures: captures_off(),
            languages: rust_only(),
            security: Vec::new(),
            subscribers: one_subscriber_list(),
            multicast: unicast_only(),
            sizes: Some(QUICK_SIZES.to_vec()),
            repetitions: 1,
            execution_time_s: 2,
        }
    }

    /// The (subscriber count, multicast) pairs to run: one subscriber and unicast when none
    /// is selected.
    fn fan_out_values(&self) -> Vec<(u32, bool)> {
        let counts = if self.subscribers.is_empty() {
            one_subscriber_list()
        } else {
            self.subscribers.clone()
        };
        let casts = if self.multicast.is_empty() {
            unicast_only()
        } else {
            self.multicast.clone()
        };
        counts
            .iter()
            .flat_map(|&n| casts.iter().map(move |&m| (n, m)))
            .collect()
    }

    fn sizes_for(&self, reliability: Reliability, keyed: bool) -> Vec<u64> {
        match &self.sizes {
            Some(s) => s.clone(),
            None => {
                let mut v = STANDARD_SIZES.to_vec();
                if reliability == Reliability::Reliable && !keyed {
                    v.extend_from_slice(&LARGE_SIZES);
                }
                v
            }
        }
    }

    /// Expands the axes into scenarios, applying the matrix rules:
    /// - latency tests run without batching (perftest disables batching in latency mode);
    /// - batching is only run where a batch holds at least two samples (size ≤ 4096 B);
    /// - large sizes (> 63000 B) are reliable, unkeyed and unbatched only;
    /// - the raw baseline (UDPv4 and TCP only) is unkeyed, sized ≤ 63000 B over UDP (raw TCP
    ///   carries any size); it has no reliability setting, so it is run once per configuration,
    ///   in the best-effort groups (or the reliable ones if best effort is not selected);
    /// - Cyclone `ddsperf` has no batching switch and no SHMEM here: batching-off UDPv4 and TCP
    ///   groups only;
    /// - the C# perftest runs over UDPv4 and SHMEM, without network capture;
    /// - SHMEM zero-copy (perftest `-zeroCopy`) runs FerroDDS's Rust perftest only, unkeyed,
    ///   unbatched and without DDS Security (perftest refuses writer loans with keys,
    ///   batching or security); no raw or Cyclone rows of its own;
    /// - secure rows (a [`SecurityProfile`] other than `no_security_libraries`) run over UDPv4
    ///   only, with FerroDDS's Rust perftest and Cyclone DDS; C#, micro and raw rows run
    ///   without security;
    /// - several subscribers (fan-out) and multicast run over UDPv4 only, with the Rust perftest
    ///   (FerroDDS and raw UDP) and Cyclone DDS.
    pub fn scenarios(&self) -> Vec<Scenario> {
        let raw_reliability = if self.reliabilities.contains(&Reliability::BestEffort) {
            Reliability::BestEffort
        } else {
            Reliability::Reliable
        };
        let mut out = Vec::new();
        for &test in &self.tests {
            for &reliability in &self.reliabilities {
                for &keyed in &self.keyed {
                    for &batching in &self.batching {
                        for &transport in &self.transports {
                            let mut sizes = self.sizes_for(reliability, keyed);
                            sizes.sort_unstable();
                            sizes.dedup();
                            for size in sizes {
                                if batching && (test == TestKind::Latency || 2 * size > BATCH_BYTES)
                                {
                                    continue;
                                }
                                if size > LARGE_THRESHOLD
                                    && (reliability != Reliability::Reliable || keyed || batching)
                                {
                                    continue;
                                }
                                for (system, capture, language, security) in self.system_captures()
                                {
                                    let secure = security.is_some_and(SecurityProfile::is_secure);
                                    if secure && transport != Transport::Udpv4 {
                                        continue;
                                    }
                                    // Writer loans: unkeyed, unbatched, no security.
                                    if transport.zero_copy() && (keyed || batching || secure) {
                                        continue;
                                    }
                                    let keep = match system {
                                        System::Ferrodds => match language {
                                            Language::Rust => true,
                                            // (No -zeroCopy in the C# perftest.)
                                            Language::Cs => matches!(
                                                transport,
                                                Transport::Udpv4 | Transport::Shmem
                                            ),
                                            // UDPv4 only, and no batching.
                                            Language::Micro => {
                                                transport == Transport::Udpv4 && !batching
                                            }
                                        },
                                        System::Raw => {
                                            // Raw UDP and raw shared memory: one sample per
                                            // datagram or slot; raw TCP carries up to 10 MiB.
                                            !keyed
                                                && transport.has_raw_baseline()
                                                && (size <= LARGE_THRESHOLD
                                                    || !matches!(
                                                        transport,
                                                        Transport::Udpv4 | Transport::Shmem
                                                    ))
                                                && reliability == raw_reliability
                                        }
                                        System::Cyclone => {
                                            !batching && transport.has_cyclone_baseline()
                                        }
                                    };
                                    if !keep {
                                        continue;
                                    }
                                    // Fan-out and multicast: the Rust perftest (FerroDDS
                                    // and raw UDP) and Cyclone, over UDPv4.
                                    let fan_out =
                                        transport == Transport::Udpv4 && language == Language::Rust;
                                    for (subscribers, multicast) in self.fan_out_values() {
                                        if (subscribers > 1 || multicast) && !fan_out {
                                            continue;
                                        }
                                        out.push(Scenario {
                                            system,
                                            test,
                                            reliability,
                                            keyed,
                                            batching,
                                            transport,
                                            size,
                                            capture,
                                            language,
                                            security,
                                            subscribers,
                                            multicast,
                                        });
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// The systems to run in each group, with their capture settings, languages and security
    /// profiles: FerroDDS in Rust once per capture setting and security profile (so they
    /// interleave in one group), in C# and micro once without capture or security, Cyclone
    /// once per security profile, raw once; the baselines without capture. Without the
    /// security axis every security is `None`; with it, runs without security are
    /// [`SecurityProfile::NoSecurityLibraries`].
    fn system_captures(&self) -> Vec<(System, Capture, Language, Option<SecurityProfile>)> {
        let plain = if self.security.is_empty() {
            None
        } else {
            Some(SecurityProfile::NoSecurityLibraries)
        };
        let securities: Vec<Option<SecurityProfile>> = if self.security.is_empty() {
            vec![None]
        } else {
            self.security.iter().copied().map(Some).collect()
        };
        let mut v = Vec::new();
        for &system in &self.systems {
            match system {
                System::Ferrodds => {
                    let mut langs = self.languages.clone();
                    if langs.is_empty() {
                        langs.push(Language::Rust);
                    }
                    for lang in langs {
                        if lang != Language::Rust {
                            // (C# and micro have no network capture and no -secure options.)
                            if plain.is_none()
                                || self
                                    .security
                                    .contains(&SecurityProfile::NoSecurityLibraries)
                            {
                                v.push((system, Capture::Off, lang, plain));
                            }
                            continue;
                        }
                        let mut caps = self.captures.clone();
                        if caps.is_empty() {
                            caps.push(Capture::Off);
                        }
                        for c in caps {
                            v.extend(securities.iter().map(|&sec| (system, c, lang, sec)));
                        }
                    }
                }
                System::Cyclone => {
                    v.extend(
                        securities
                            .iter()
                            .map(|&sec| (system, Capture::Off, Language::Rust, sec)),
                    );
                }
                System::Raw => v.push((system, Capture::Off, Language::Rust, plain)),
            }
        }
        v
    }

    /// Checks the security axis against the others before anything runs: a profile FerroDDS
    /// cannot run yet is refused when FerroDDS is selected (never skipped); the secure rows
    /// need a system with DDS Security (FerroDDS's Rust perftest or Cyclone DDS; raw UDP has
    /// none, the C# and micro perftests have no -secure options) and the UDPv4 transport
    /// (the published figures are UDPv4; secure rows run over UDPv4 only).
    pub fn check_security(&self) -> Result<(), LabError> {
        if self.security.is_empty() {
            return Ok(());
        }
        let ferrodds = self.systems.contains(&System::Ferrodds);
        let secure: Vec<SecurityProfile> = self
            .security
            .iter()
            .copied()
            .filter(|p| p.is_secure())
            .collect();
        let rust = self.languages.is_empty() || self.languages.contains(&Language::Rust);
        let cyclone = self.systems.contains(&System::Cyclone);
        if let Some(p) = secure.first() {
            let secure_capable = cyclone || (ferrodds && rust);
            if !secure_capable {
                return Err(LabError::Refused(format!(
                    "--security {p}: no selected system has DDS Security (raw UDP has none; the C# and micro perftests have no -secure options): add ferrodds with --language rust, or cyclone, to --systems"
                )));
            }
            if !self.transports.contains(&Transport::Udpv4) {
                return Err(LabError::Refused(format!(
                    "--security {p}: the secure rows run over UDPv4 only (the published Connext security figures are UDPv4): add udpv4 to --transport"
                )));
            }
        }
        if ferrodds
            && !self
                .security
                .contains(&SecurityProfile::NoSecurityLibraries)
            && self.languages.iter().any(|l| *l != Language::Rust)
        {
            return Err(LabError::Usage(
                "--language cs/micro: the C# and micro perftests have no -secure options: add no_security_libraries to --security",
            ));
        }
        Ok(())
    }

    /// Orders the runs: for each configuration group (all axes but the system), every repetition
    /// runs each system once, so systems interleave round by round (A B C A B C).
    pub fn schedule(&self) -> Vec<PlannedRun> {
        let scenarios = self.scenarios();
        let mut groups: Vec<Vec<Scenario>> = Vec::new();
        for s in scenarios {
            match groups.last_mut() {
                Some(g) if same_group(&g[0], &s) => g.push(s),
                _ => groups.push(vec![s]),
            }
        }
        let mut out = Vec::new();
        for g in groups {
            for repetition in 0..self.repetitions {
                for &scenario in &g {
                    out.push(PlannedRun {
                        index: out.len(),
                        scenario,
                        repetition,
                    });
                }
            }
        }
        out
    }
}

fn same_group(a: &Scenario, b: &Scenario) -> bool {
    a.test == b.test
        && a.reliability == b.reliability
        && a.keyed == b.keyed
        && a.batching == b.batching
        && a.transport == b.transport
        && a.size == b.size
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--subscribers`: fan-out rows for the Rust perftest (FerroDDS, raw UDP) and Cyclone over
    /// UDPv4, labelled with their count; C# and TCP rows keep one subscriber; bad counts are
    /// refused.
    #[test]
    fn subscriber_axis() {
        let mut spec = MatrixSpec::quick();
        spec.sizes = Some(vec![1024]);
        spec.tests = vec![TestKind::Throughput];
        spec.transports = vec![Transport::Udpv4, Transport::Tcp];
        spec.languages = vec![Language::Rust, Language::Cs];
        spec.subscribers = parse_subscribers("4,1,4").unwrap();
        assert_eq!(spec.subscribers, vec![1, 4]);
        let sc = spec.scenarios();
        let four: Vec<_> = sc.iter().filter(|s| s.subscribers == 4).collect();
        assert!(!four.is_empty());
        for s in &four {
            assert_eq!(s.transport, Transport::Udpv4, "{s:?}");
            assert_eq!(s.language, Language::Rust, "{s:?}");
            assert!(
                s.config_label().ends_with(" ×4 subscribers"),
                "{}",
                s.config_label()
            );
        }
        let systems: Vec<System> = four.iter().map(|s| s.system).collect();
        for sys in [System::Ferrodds, System::Raw, System::Cyclone] {
            assert!(systems.contains(&sys), "{systems:?}");
        }
        assert!(sc
            .iter()
            .filter(|s| s.subscribers == 1)
            .all(|s| !s.config_label().contains("subscribers")));
        for bad in ["0", "17", "x", "", "2,-1"] {
            assert!(parse_subscribers(bad).is_err(), "{bad}");
        }
        // Multicast rows beside the unicast ones, under the same rules.
        spec.multicast = vec![false, true];
        let sc2 = spec.scenarios();
        let mc: Vec<_> = sc2.iter().filter(|s| s.multicast).collect();
        assert_eq!(mc.len(), four.len() * 2, "{mc:?}");
        for s in &mc {
            assert_eq!(s.transport, Transport::Udpv4, "{s:?}");
            assert!(
                s.config_label().contains(" multicast"),
                "{}",
                s.config_label()
            );
        }
    }

    #[test]
    fn c_sharp_rows_run_beside_rust_over_udpv4_and_shmem_without_capture() {
        let mut spec = MatrixSpec::quick();
        spec.systems = vec![System::Ferrodds, System::Raw];
        spec.tests = vec![TestKind::Latency];
        spec.sizes = Some(vec![32]);
        spec.transports = vec![Transport::Udpv4, Transport::Tcp, Transport::Shmem];
        spec.captures = vec![Capture::Off, Capture::On];
        spec.languages = vec![Language::Rust, Language::Cs];
        let all = spec.scenarios();
        let cs: Vec<_> = all.iter().filter(|s| s.language == Language::Cs).collect();
        assert_eq!(
            cs.iter().map(|s| s.transport).collect::<Vec<_>>(),
            vec![Transport::Udpv4, Transport::Shmem]
        );
        assert!(cs
            .iter()
            .all(|s| s.system == System::Ferrodds && s.capture == Capture::Off));
        assert!(
            cs[0].config_label().ends_with(" C#"),
            "{}",
            cs[0].config_label()
        );
        // Rust rows keep both capture settings on every transport; baselines stay Rust.
        for t in [Transport::Udpv4, Transport::Tcp, Transport::Shmem] {
            let rust = all
                .iter()
                .filter(|s| {
                    s.system == System::Ferrodds && s.language == Language::Rust && s.transport == t
                })
                .count();
            assert_eq!(rust, 2, "{t}");
        }
        assert!(all
            .iter()
            .filter(|s| s.system != System::Ferrodds)
            .all(|s| s.language == Language::Rust));
        // C# and Rust of one configuration interleave in the schedule's group.
        let sched = spec.schedule();
        let first_group: Vec<_> = sched
            .iter()
            .take_while(|r| r.scenario.transport == Transport::Udpv4)
            .map(|r| (r.scenario.system, r.scenario.capture, r.scenario.language))
            .collect();
        assert_eq!(
            first_group,
            vec![
                (System::Ferrodds, Capture::Off, Language::Rust),
                (System::Ferrodds, Capture::On, Language::Rust),
                (System::Ferrodds, Capture::Off, Language::Cs),
                (System::Raw, Capture::Off, Language::Rust),
            ]
        );
        assert_eq!("cs".parse::<Language>().unwrap(), Language::Cs);
        assert!("java".parse::<Language>().is_err());
    }

    #[test]
    fn security_rows_interleave_with_the_rows_without() {
        let mut spec = MatrixSpec::quick();
        spec.tests = vec![TestKind::Latency];
        spec.sizes = Some(vec![32]);
        spec.transports = vec![Transport::Udpv4, Transport::Tcp];
        spec.security = parse_list("no_security_libraries,RTPS-SIGN").unwrap();
        spec.check_security().unwrap();
        let got: Vec<_> = spec
            .schedule()
            .iter()
            .map(|r| (r.scenario.transport, r.scenario.system, r.scenario.security))
            .collect();
        let (n, s) = (
            Some(SecurityProfile::NoSecurityLibraries),
            Some(SecurityProfile::RtpsSign),
        );
        let (udpv4, tcp) = (Transport::Udpv4, Transport::Tcp);
        let (ferrodds, raw, cyclone) = (System::Ferrodds, System::Raw, System::Cyclone);
        assert_eq!(
            got,
            vec![
                // UDPv4: every profile of FerroDDS and cyclone, raw without security.
                (udpv4, ferrodds, n),
                (udpv4, ferrodds, s),
                (udpv4, raw, n),
                (udpv4, cyclone, n),
                (udpv4, cyclone, s),
                // Other transports: no secure rows.
                (tcp, ferrodds, n),
                (tcp, raw, n),
                (tcp, cyclone, n),
            ]
        );
        let secure = spec.scenarios()[1];
        assert_eq!(secure.config_label(), "ferrodds reliable unkeyed rtps_sign");
        assert!(secure.is_secure());
        assert_eq!(
            spec.scenarios()[0].config_label(),
            "ferrodds reliable unkeyed"
        );
        // Without the axis no row names a profile.
        spec.security.clear();
        assert!(spec.scenarios().iter().all(|s| s.security.is_none()));
        // C# and micro run without security, beside the Rust rows.
        spec.security = vec![
            SecurityProfile::NoSecurityLibraries,
            SecurityProfile::RtpsEncrypt,
        ];
        spec.languages = vec![Language::Rust, Language::Micro];
        spec.transports = vec![Transport::Udpv4];
        spec.systems = vec![System::Ferrodds];
        spec.check_security().unwrap();
        let got: Vec<_> = spec
            .scenarios()
            .iter()
            .map(|sc| (sc.language, sc.security))
            .collect();
        assert_eq!(
            got,
            vec![
                (Language::Rust, n),
                (Language::Rust, Some(SecurityProfile::RtpsEncrypt)),
                (Language::Micro, n),
            ]
        );
    }

    #[test]
    fn security_combinations_that_cannot_run_are_refused() {
        let mut spec = MatrixSpec::quick();
        let refused = |spec: &MatrixSpec| match spec.check_security() {
            Err(e) => e.to_string(),
            Ok(()) => panic!("accepted: {spec:?}"),
        };
        // FerroDDS and Cyclone run all seven published profiles.
        for p in [
            "rtps_sign_origauth_data_encrypt",
            "rtps_sign_submsg_encrypt_origauth_data_encrypt",
            "rtps_sign_submsg_encrypt",
        ] {
            spec.security = vec![SecurityProfile::NoSecurityLibraries, p.parse().unwrap()];
            spec.systems = vec![System::Ferrodds, System::Cyclone];
            spec.check_security().unwrap();
        }
        // Raw UDP has no DDS Security.
        spec.systems = vec![System::Raw];
        spec.security = vec![SecurityProfile::RtpsSign];
        assert!(refused(&spec).contains("raw UDP has none"));
        // Neither have the C# and micro perftests.
        spec.systems = vec![System::Ferrodds];
        spec.languages = vec![Language::Cs];
        assert!(refused(&spec).contains("no -secure options"));
        spec.security = vec![
            SecurityProfile::NoSecurityLibraries,
            SecurityProfile::RtpsSign,
        ];
        assert!(refused(&spec).contains("add ferrodds with --language rust"));
        spec.languages = vec![Language::Rust, Language::Micro];
        spec.check_security().unwrap();
        spec.security = vec![SecurityProfile::RtpsSign];
        assert!(refused(&spec).contains("add no_security_libraries"));
        // Secure rows are UDPv4 rows.
        spec.languages = vec![Language::Rust];
        spec.transports = vec![Transport::Shmem, Transport::Tcp];
        assert!(refused(&spec).contains("UDPv4 only"));
        // Without secure profiles any transport goes.
        spec.security = vec![SecurityProfile::NoSecurityLibraries];
        spec.check_security().unwrap();
        assert!("rtps_signature".parse::<SecurityProfile>().is_err());
        assert_eq!(
            SecurityProfile::NoProtection.perftest_governance().unwrap(),
            "resource/secure/signed_PerftestGovernance_.xml"
        );
        assert_eq!(SecurityProfile::NoSecurityLibraries.governance_file(), None);
        // Every governance named is one perftest ships.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../perftest");
        for p in SecurityProfile::ALL {
            if let Some(g) = p.perftest_governance() {
                assert!(dir.join(&g).is_file(), "{g}");
            }
        }
    }

    #[test]
    fn quick_matrix_is_small_and_interleaved() {
        let q = MatrixSpec::quick();
        let runs = q.schedule();
        // 3 sizes × 2 tests × 3 systems.
        assert_eq!(runs.len(), 18);
        let systems: Vec<System> = runs.iter().take(6).map(|r| r.scenario.system).collect();
        assert_eq!(
            systems,
            vec![
                System::Ferrodds,
                System::Raw,
                System::Cyclone,
                System::Ferrodds,
                System::Raw,
                System::Cyclone
            ]
        );
        assert!(runs.iter().enumerate().all(|(i, r)| r.index == i));
    }

    #[test]
    fn full_matrix_counts() {
        let f = MatrixSpec::full();
        let sc = f.scenarios();
        let count = |sys: System| sc.iter().filter(|s| s.system == sys).count();
        // FerroDDS: latency 2×2×12 = 48; throughput 2×2×(12 + 8 batched) = 80; large 6×2 = 12.
        assert_eq!(count(System::Ferrodds), 140);
        // Raw: latency 12; throughput 12 + 8 batched.
        assert_eq!(count(System::Raw), 32);
        // Cyclone: per test 2×2×12 + 6 large = 54.
        assert_eq!(count(System::Cyclone), 108);
        assert_eq!(f.schedule().len(), 280 * 3);
        // Large sizes only reliable unkeyed unbatched.
        assert!(sc
            .iter()
            .filter(|s| s.size > LARGE_THRESHOLD)
            .all(|s| s.reliability == Reliability::Reliable && !s.keyed && !s.batching));
        assert!(sc.iter().any(|s| s.size == 10_485_760));
        // No batched latency runs.
        assert!(!sc.iter().any(|s| s.batching && s.test == TestKind::Latency));
    }

    #[test]
    fn subset_flags_restrict_the_matrix() {
        let mut m = MatrixSpec::full();
        m.systems = vec![System::Ferrodds];
        m.tests = parse_list("throughput").unwrap();
        m.reliabilities = parse_list("best-effort").unwrap();
        m.keyed = parse_on_off("keyed", "on").unwrap();
        m.batching = parse_on_off("batching", "both").unwrap();
        m.sizes = Some(parse_sizes("32,1k,100000").unwrap());
        m.repetitions = 2;
        let sc = m.scenarios();
        // 32 and 1024 unbatched + batched; 100000 is large and thus not best effort.
        assert_eq!(sc.len(), 4);
        assert!(sc
            .iter()
            .all(|s| s.keyed && s.reliability == Reliability::BestEffort));
        assert_eq!(m.schedule().len(), 8);
    }

    #[test]
    fn raw_runs_once_per_configuration() {
        let mut m = MatrixSpec::full();
        m.systems = vec![System::Raw];
        m.tests = vec![TestKind::Latency];
        let sc = m.scenarios();
        assert_eq!(sc.len(), 12);
        assert!(sc.iter().all(|s| s.reliability == Reliability::BestEffort));
        m.reliabilities = vec![Reliability::Reliable];
        assert_eq!(m.scenarios().len(), 12);
    }

    #[test]
    fn tcp_axis_has_raw_tcp_and_cyclone_baselines() {
        let mut m = MatrixSpec::full();
        m.transports = parse_list("udpv4,tcp").unwrap();
        m.tests = vec![TestKind::Throughput];
        m.reliabilities = vec![Reliability::Reliable];
        m.keyed = vec![false];
        m.batching = vec![false];
        m.sizes = Some(parse_sizes("32,63000,1MiB").unwrap());
        let sc = m.scenarios();
        let has = |sys, t, size| {
            sc.iter()
                .any(|s| s.system == sys && s.transport == t && s.size == size)
        };
        for t in [Transport::Udpv4, Transport::Tcp] {
            for size in [32, 63000, 1_048_576] {
                assert!(has(System::Ferrodds, t, size), "{t} {size}");
                assert!(has(System::Cyclone, t, size), "{t} {size}");
            }
        }
        // Raw UDP stops at one datagram; raw TCP carries large samples.
        assert!(!has(System::Raw, Transport::Udpv4, 1_048_576));
        assert!(has(System::Raw, Transport::Tcp, 1_048_576));
        // SHMEM and TLS have the raw baseline only.
        m.transports = vec![Transport::Shmem];
        let sc = m.scenarios();
        assert!(sc
            .iter()
            .any(|s| s.system == System::Raw && s.size == 63000));
        assert!(!sc
            .iter()
            .any(|s| s.system == System::Raw && s.size == 1_048_576));
        assert!(!sc.iter().any(|s| s.system == System::Cyclone));
        m.transports = vec![Transport::Udpv4Wan];
        let sc = m.scenarios();
        assert!(!sc.is_empty() && sc.iter().all(|s| s.system == System::Ferrodds));
        assert_eq!(
            "udpv4_wan".parse::<Transport>().unwrap().perftest_name(),
            "UDPv4_WAN"
        );
        m.transports = vec![Transport::Tls];
        let sc = m.scenarios();
        assert!(sc
            .iter()
            .any(|s| s.system == System::Raw && s.size == 1_048_576));
        assert!(!sc.iter().any(|s| s.system == System::Cyclone));
        assert_eq!(
            config_label(
                System::Raw,
                Reliability::Reliable,
                false,
                false,
                Transport::Tls
            ),
            "raw TLS"
        );
        assert_eq!("tls".parse::<Transport>().unwrap().perftest_name(), "TLS");
        assert_eq!(
            config_label(
                System::Raw,
                Reliability::Reliable,
                false,
                false,
                Transport::Tcp
            ),
            "raw TCP"
        );
        assert_eq!("tcp".parse::<Transport>().unwrap().perftest_name(), "TCP");
    }

    /// `shmem-zc`: FerroDDS's Rust perftest only (no raw or Cyclone rows of its own, no C# or
    /// micro), unkeyed, unbatched, without security; labelled beside SHMEM.
    #[test]
    fn shmem_zero_copy_axis_runs_ferrodds_unkeyed_unbatched_only() {
        assert_eq!("shmem-zc".parse::<Transport>().unwrap(), Transport::ShmemZc);
        assert_eq!("SHMEM_ZC".parse::<Transport>().unwrap(), Transport::ShmemZc);
        assert_eq!(Transport::ShmemZc.name(), "shmem-zc");
        assert_eq!(Transport::ShmemZc.perftest_name(), "SHMEM");
        assert!(Transport::ShmemZc.zero_copy());
        assert!(Transport::ALL
            .iter()
            .all(|t| t.zero_copy() == (*t == Transport::ShmemZc)));
        assert_eq!(
            parse_list::<Transport>("shmem,shmem-zc").unwrap(),
            vec![Transport::Shmem, Transport::ShmemZc]
        );
        assert!(!Transport::ShmemZc.has_raw_baseline());
        assert!(!Transport::ShmemZc.has_cyclone_baseline());
        assert_eq!(Transport::ShmemZc.raw_pair(), Some(Transport::Shmem));
        assert_eq!(Transport::Shmem.raw_pair(), Some(Transport::Shmem));
        assert_eq!(Transport::Udpv4Wan.raw_pair(), None);

        let mut m = MatrixSpec::full();
        m.transports = vec![Transport::ShmemZc];
        m.sizes = Some(parse_sizes("32,1k,63000,1MiB").unwrap());
        m.languages = vec![Language::Rust, Language::Cs, Language::Micro];
        m.captures = vec![Capture::Off, Capture::On];
        m.security = vec![
            SecurityProfile::NoSecurityLibraries,
            SecurityProfile::RtpsSign,
        ];
        let sc = m.scenarios();
        assert!(!sc.is_empty());
        for s in &sc {
            assert_eq!(s.system, System::Ferrodds, "{s:?}");
            assert_eq!(s.language, Language::Rust, "{s:?}");
            assert!(!s.keyed && !s.batching && !s.is_secure(), "{s:?}");
        }
        // Latency and throughput, both reliabilities, large sizes, capture as with SHMEM.
        for test in [TestKind::Latency, TestKind::Throughput] {
            assert!(sc.iter().any(|s| s.test == test), "{test}");
        }
        assert!(sc.iter().any(|s| s.reliability == Reliability::BestEffort));
        assert!(sc.iter().any(|s| s.size == 1_048_576));
        assert!(sc.iter().any(|s| s.capture == Capture::On));
        // FerroDDS reliable unkeyed: 4 sizes × 2 tests × 2 captures; best effort without 1 MiB.
        assert_eq!(sc.len(), (4 + 3) * 2 * 2);
        let label = sc[0].config_label();
        assert!(label.ends_with(" shmem zero-copy"), "{label}");
        // Beside SHMEM: the SHMEM rows and their raw rings are kept, keyed and batched included.
        m.transports = vec![Transport::Shmem, Transport::ShmemZc];
        m.security.clear();
        m.languages = vec![Language::Rust];
        m.captures = vec![Capture::Off];
        let sc = m.scenarios();
        let shmem = |p: &dyn Fn(&Scenario) -> bool| {
            sc.iter().any(|s| s.transport == Transport::Shmem && p(s))
        };
        assert!(shmem(&|s| s.system == System::Raw));
        assert!(shmem(&|s| s.keyed));
        assert!(shmem(&|s| s.batching));
        assert!(sc
            .iter()
            .filter(|s| s.transport == Transport::ShmemZc)
            .all(|s| s.system == System::Ferrodds && !s.keyed && !s.batching));
        // Keyed or batched alone: no zero-copy cell at all.
        m.transports = vec![Transport::ShmemZc];
        m.keyed = vec![true];
        assert!(m.scenarios().is_empty());
        m.keyed = vec![false];
        m.batching = vec![true];
        assert!(m.scenarios().is_empty());
        assert_eq!(
            config_label(
                System::Ferrodds,
                Reliability::Reliable,
                false,
                false,
                Transport::ShmemZc
            ),
            "ferrodds reliable unkeyed shmem zero-copy"
        );
    }

    #[test]
    fn parses_values() {
        assert_eq!(parse_size("1k").unwrap(), 1024);
        assert_eq!(parse_size("4MiB").unwrap(), 4_194_304);
        assert_eq!(parse_size("1.5MB").unwrap(), 1_500_000);
        assert!(parse_size("10").is_err());
        assert!(parse_size("abc").is_err());
        assert!(parse_size("").is_err());
        assert_eq!(
            "BEST_EFFORT".parse::<Reliability>().unwrap(),
            Reliability::BestEffort
        );
        assert!("sometimes".parse::<Reliability>().is_err());
        assert!(parse_on_off("keyed", "maybe").is_err());
        assert_eq!(
            parse_list::<TestKind>("latency, throughput").unwrap(),
            vec![TestKind::Latency, TestKind::Throughput]
        );
    }

    #[test]
    fn capture_rows_interleave_with_the_same_rows_without() {
        let mut m = MatrixSpec::quick();
        m.captures = vec![Capture::Off, Capture::On, Capture::NoUserData];
        m.sizes = Some(vec![32]);
        m.tests = vec![TestKind::Latency];
        m.repetitions = 2;
        let runs = m.schedule();
        let got: Vec<(System, Capture)> = runs
            .iter()
            .map(|r| (r.scenario.system, r.scenario.capture))
            .collect();
        let round = [
            (System::Ferrodds, Capture::Off),
            (System::Ferrodds, Capture::On),
            (System::Ferrodds, Capture::NoUserData),
            (System::Raw, Capture::Off),
            (System::Cyclone, Capture::Off),
        ];
        assert_eq!(got, [round, round].concat());
        assert_eq!(
            "no-user-data".parse::<Capture>().unwrap(),
            Capture::NoUserData
        );
        assert!("sometimes".parse::<Capture>().is_err());
    }

    #[test]
    fn labels() {
        let s = Scenario {
            multicast: false,
            subscribers: 1,
            system: System::Ferrodds,
            test: TestKind::Throughput,
            reliability: Reliability::BestEffort,
            keyed: true,
            batching: true,
            transport: Transport::Udpv4,
            size: 32,
            capture: Default::default(),
            language: Default::default(),
            security: None,
        };
        assert_eq!(s.config_label(), "ferrodds best-effort keyed batching");
        let r = Scenario {
            system: System::Raw,
            batching: false,
            ..s
        };
        assert_eq!(r.config_label(), "raw UDP");
        let c = Scenario {
            capture: Capture::NoUserData,
            batching: false,
            ..s
        };
        assert_eq!(
            c.config_label(),
            "ferrodds best-effort keyed capture (no user data)"
        );
    }
}
