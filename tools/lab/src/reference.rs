//! The published RTI Connext DDS figures (`data/reference/` in the repository), embedded in the
//! binary so reports can draw them as reference lines anywhere. Compare shapes and ratios,
//! never absolute times across different hardware.

/// `data/reference/connext_latency.csv`.
pub const LATENCY_CSV: &str = include_str!("../../../data/reference/connext_latency.csv");
/// `data/reference/connext_throughput.csv`.
pub const THROUGHPUT_CSV: &str = include_str!("../../../data/reference/connext_throughput.csv");

/// The latency series drawn by default: UDPv4, 10 GbE, unkeyed, strict reliable, C++98.
pub const DEFAULT_LATENCY: (&str, &str) =
    ("security_udpv4_10g_cpp98_reliable", "no_security_libraries");
/// The published TCP latency source and scenario (drawn for runs over TCP).
pub const TCP_LATENCY: (&str, &str) = ("tcp_10g_cpp98", "unkeyed_reliable");
/// The published C# latency (UDPv4, 10 GbE, unkeyed strict reliable), drawn beside runs of the
/// C# perftest.
pub const CS_LATENCY: (&str, &str) = ("csharp_udpv4_10g", "unkeyed_reliable");
/// The throughput series drawn by default: UDPv4, 10 GbE, best effort, batching 8192 B.
pub const DEFAULT_THROUGHPUT: (&str, &str) = (
    "network_capture_udpv4_10g_cpp98",
    "unkeyed_best_effort_batching",
);

/// One published latency row (µs, one-way).
#[derive(Clone, Debug, PartialEq)]
pub struct RefLatency {
    /// `source` column.
    pub source: String,
    /// `scenario` column.
    pub scenario: String,
    /// Sample size in bytes.
    pub size: u64,
    /// Mean.
    pub avg_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
}

/// One published throughput row.
#[derive(Clone, Debug, PartialEq)]
pub struct RefThroughput {
    /// `source` column.
    pub source: String,
    /// `scenario` column.
    pub scenario: String,
    /// Sample size in bytes.
    pub size: u64,
    /// Samples per second.
    pub samples_per_s: f64,
    /// Mbps.
    pub mbps: f64,
    /// Lost %.
    pub lost_pct: f64,
}

fn rows(text: &str) -> (Vec<String>, Vec<csv::StringRecord>) {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header = r
        .headers()
        .map(|h| h.iter().map(str::to_string).collect())
        .unwrap_or_default();
    (header, r.records().filter_map(Result::ok).collect())
}

fn field(h: &[String], rec: &csv::StringRecord, name: &str) -> Option<String> {
    h.iter()
        .position(|c| c == name)
        .and_then(|i| rec.get(i))
        .map(|s| s.trim().to_string())
}

fn num(h: &[String], rec: &csv::StringRecord, name: &str) -> Option<f64> {
    field(h, rec, name)?.parse().ok()
}

/// All published latency rows (malformed rows skipped).
pub fn latency() -> Vec<RefLatency> {
    let (h, recs) = rows(LATENCY_CSV);
    recs.iter()
        .filter_map(|r| {
            Some(RefLatency {
                source: field(&h, r, "source")?,
                scenario: field(&h, r, "scenario")?,
                size: field(&h, r, "size_bytes")?.parse().ok()?,
                avg_us: num(&h, r, "avg_us")?,
                p50_us: num(&h, r, "p50_us")?,
                p99_us: num(&h, r, "p99_us")?,
            })
        })
        .collect()
}

/// All published throughput rows (malformed rows skipped).
pub fn throughput() -> Vec<RefThroughput> {
    let (h, recs) = rows(THROUGHPUT_CSV);
    recs.iter()
        .filter_map(|r| {
            Some(RefThroughput {
                source: field(&h, r, "source")?,
                scenario: field(&h, r, "scenario")?,
                size: field(&h, r, "size_bytes")?.parse().ok()?,
                samples_per_s: num(&h, r, "samples_per_s")?,
                mbps: num(&h, r, "mbps")?,
                lost_pct: num(&h, r, "lost_pct")?,
            })
        })
        .collect()
}

/// The default latency reference series, sorted by size.
pub fn default_latency() -> Vec<RefLatency> {
    let mut v: Vec<RefLatency> = latency()
        .into_iter()
        .filter(|r| r.source == DEFAULT_LATENCY.0 && r.scenario == DEFAULT_LATENCY.1)
        .collect();
    v.sort_by_key(|r| r.size);
    v
}

/// The published TCP latency (`tcp_10g_cpp98`, unkeyed reliable), for runs over TCP.
pub fn tcp_latency() -> Vec<RefLatency> {
    let mut v: Vec<RefLatency> = latency()
        .into_iter()
        .filter(|r| r.source == TCP_LATENCY.0 && r.scenario == TCP_LATENCY.1)
        .collect();
    v.sort_by_key(|r| r.size);
    v
}

/// The published C# latency ([`CS_LATENCY`]), for runs of the C# perftest.
pub fn cs_latency() -> Vec<RefLatency> {
    let mut v: Vec<RefLatency> = latency()
        .into_iter()
        .filter(|r| r.source == CS_LATENCY.0 && r.scenario == CS_LATENCY.1)
        .collect();
    v.sort_by_key(|r| r.size);
    v
}

/// The published cost of C# at `size` bytes: the median one-way latency of the C# API
/// ([`CS_LATENCY`]) over C++'s on the same transport ([`DEFAULT_LATENCY`], UDPv4 10 GbE,
/// unkeyed strict reliable). 1.12 at 32 B. `None` where either is not published.
pub fn cs_latency_ratio(size: u64) -> Option<f64> {
    let all = latency();
    let p50 = |(source, scenario): (&str, &str)| {
        all.iter()
            .find(|r| r.source == source && r.scenario == scenario && r.size == size)
            .map(|r| r.p50_us)
    };
    let cs = p50(CS_LATENCY)?;
    let cpp = p50(DEFAULT_LATENCY)?;
    (cpp > 0.0).then(|| cs / cpp)
}

/// The default throughput reference series, sorted by size.
pub fn default_throughput() -> Vec<RefThroughput> {
    let mut v: Vec<RefThroughput> = throughput()
        .into_iter()
        .filter(|r| r.source == DEFAULT_THROUGHPUT.0 && r.scenario == DEFAULT_THROUGHPUT.1)
        .collect();
    v.sort_by_key(|r| r.size);
    v
}

/// The published latency cost of network capture at `size` bytes: the median one-way
/// latency with capture on both participants (`network_capture_udpv4_10g_cpp98`,
/// unkeyed best effort) over the median without, on the same hardware (the closest
/// published row without capture: `security_udpv4_10g_cpp98_reliable` /
/// `no_security_libraries`, unkeyed strict reliable). 1.35 at 32 B. `None` where either
/// is not published.
pub fn capture_latency_ratio(size: u64) -> Option<f64> {
    let all = latency();
    let p50 = |source: &str, scenario: &str| {
        all.iter()
            .find(|r| r.source == source && r.scenario == scenario && r.size == size)
            .map(|r| r.p50_us)
    };
    let with = p50("network_capture_udpv4_10g_cpp98", "unkeyed_best_effort")?;
    let without = p50(DEFAULT_LATENCY.0, DEFAULT_LATENCY.1)?;
    (without > 0.0).then(|| with / without)
}

/// The published cost of a DDS Security profile at `size` bytes: the median one-way latency
/// of `profile` (a scenario of `security_udpv4_10g_cpp98_reliable`: UDPv4 10 GbE, unkeyed
/// strict reliable, C++98) over `no_security_libraries` on the same hardware. 1.41 for
/// rtps_sign at 32 B (24 µs over 17 µs). `None` where either is not published.
pub fn security_latency_ratio(profile: &str, size: u64) -> Option<f64> {
    let all = latency();
    let p50 = |scenario: &str| {
        all.iter()
            .find(|r| r.source == DEFAULT_LATENCY.0 && r.scenario == scenario && r.size == size)
            .map(|r| r.p50_us)
    };
    let with = p50(profile)?;
    let without = p50(DEFAULT_LATENCY.1)?;
    (without > 0.0).then(|| with / without)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_reference_parses() {
        let l = latency();
        assert!(l.len() > 100, "{}", l.len());
        let d = default_latency();
        assert_eq!(d.len(), 12);
        assert_eq!(d[0].size, 32);
        assert_eq!(d[0].p50_us, 17.0);
        let t = default_throughput();
        assert_eq!(t.len(), 8);
        assert_eq!(t[0].samples_per_s, 4_591_815.0);
        assert!(throughput().len() >= 56);
        let r = security_latency_ratio("rtps_sign", 32).unwrap();
        assert!((r - 24.0 / 17.0).abs() < 1e-9, "{r}");
        assert!(security_latency_ratio("no_security_libraries", 63000).is_some_and(|r| r == 1.0));
        assert!(security_latency_ratio("rtps_sign", 100_000).is_none());
        assert!(security_latency_ratio("rtps_signature", 32).is_none());
        let t = tcp_latency();
        assert_eq!(t.len(), 14);
        assert_eq!((t[0].size, t[0].p50_us), (32, 27.0));
    }
}
