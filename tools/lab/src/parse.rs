//! Parsers for the output of the measured programs: perftest's CSV summaries and its network
//! capture count, and Cyclone `ddsperf`'s once-a-second lines. All take untrusted text and
//! never panic.

use crate::record::{CaptureFrames, LatencyStats, ThroughputStats};

fn norm_header(h: &str) -> String {
    h.trim().to_ascii_lowercase()
}

fn num(s: &str) -> Option<f64> {
    let t = s.trim();
    if t.is_empty() {
        // perftest's `%14.0llu` prints blanks for 0.
        return Some(0.0);
    }
    t.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Finds the last summary row under a header line containing `marker` and returns
/// `(header names, values)`.
fn last_table_row(text: &str, marker: &str) -> Option<(Vec<String>, Vec<f64>)> {
    let mut header: Option<Vec<String>> = None;
    let mut found: Option<(Vec<String>, Vec<f64>)> = None;
    for line in text.lines() {
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        if l.contains("(Bytes)") {
            header = if l.contains(marker) && l.starts_with("Sample Size") {
                Some(l.split(',').map(norm_header).collect())
            } else {
                None
            };
            continue;
        }
        if let Some(h) = &header {
            let fields: Vec<&str> = l.split(',').collect();
            if fields.len() != h.len() {
                continue;
            }
            let first_is_int = fields[0].trim().parse::<u64>().is_ok();
            let vals: Option<Vec<f64>> = fields.iter().map(|f| num(f)).collect();
            if let (true, Some(v)) = (first_is_int, vals) {
                found = Some((h.clone(), v));
            }
        }
    }
    found
}

fn col(header: &[String], vals: &[f64], prefix: &str) -> Option<f64> {
    header
        .iter()
        .position(|h| h.starts_with(prefix))
        .and_then(|i| vals.get(i).copied())
}

/// Parses perftest's one-way latency summary (publisher stdout, CSV format, with or without
/// interval lines). Returns the last summary row.
pub fn perftest_latency(text: &str) -> Option<LatencyStats> {
    let (h, v) = last_table_row(text, "50%")?;
    Some(LatencyStats {
        avg_us: col(&h, &v, "ave")?,
        std_us: col(&h, &v, "std")?,
        min_us: col(&h, &v, "min")?,
        max_us: col(&h, &v, "max")?,
        p50_us: col(&h, &v, "50%")?,
        p90_us: col(&h, &v, "90%")?,
        p99_us: col(&h, &v, "99%")?,
        p9999_us: col(&h, &v, "99.99%")?,
        p999999_us: col(&h, &v, "99.9999%")?,
    })
}

/// Parses perftest's throughput summary (subscriber stdout, CSV format).
pub fn perftest_throughput(text: &str) -> Option<ThroughputStats> {
    let (h, v) = last_table_row(text, "Total Samples")?;
    let as_u64 = |x: f64| if x >= 0.0 { x as u64 } else { 0 };
    Some(ThroughputStats {
        total_samples: as_u64(col(&h, &v, "total samples")?),
        samples_per_s: col(&h, &v, "avg samples/s")?,
        mbps: col(&h, &v, "avg mbps")?,
        lost_samples: as_u64(col(&h, &v, "lost samples")?),
        lost_pct: col(&h, &v, "lost samples (%)")?,
    })
}

/// Parses the count perftest prints when its network capture ends:
/// `Network capture: N frames written, M dropped, file ...` (the last such line).
pub fn perftest_capture(text: &str) -> Option<CaptureFrames> {
    text.lines().rev().find_map(|line| {
        let rest = line.trim().strip_prefix("Network capture:")?;
        let (written, rest) = rest.trim_start().split_once(" frames written, ")?;
        let (dropped, _) = rest.split_once(" dropped")?;
        Some(CaptureFrames {
            written: written.trim().parse().ok()?,
            dropped: dropped.trim().parse().ok()?,
        })
    })
}

/// Value following `key` in a whitespace-separated token list, e.g. `50% 5.535us`.
fn after<'a>(tokens: &[&'a str], key: &str) -> Option<&'a str> {
    tokens
        .iter()
        .position(|t| *t == key)
        .and_then(|i| tokens.get(i + 1).copied())
}

/// A duration token such as `5.535us`, `1.2ms`, `800ns` in µs.
fn micros(tok: &str) -> Option<f64> {
    let (n, scale) = if let Some(n) = tok.strip_suffix("us") {
        (n, 1.0)
    } else if let Some(n) = tok.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = tok.strip_suffix("ns") {
        (n, 1e-3)
    } else if let Some(n) = tok.strip_suffix('s') {
        (n, 1e6)
    } else {
        (tok, 1.0)
    };
    n.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map(|v| v * scale)
}

struct PingLine {
    mean: f64,
    min: f64,
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
    cnt: f64,
}

/// Parses `ddsperf ping` output: one line per second per pong peer, e.g.
/// `[12] 2.001  host:11 size 32 mean 8.3us min 5.2us 50% 5.5us 90% 8.0us 99% 14.9us max 4033.9us cnt 58825`.
///
/// The first interval (discovery, warm-up) is dropped when there are more. The result
/// combines intervals weighted by their count: mean and percentiles are count-weighted means of
/// the per-interval values (an approximation for percentiles), min/max are the extremes;
/// ddsperf prints no standard deviation nor p99.99/p99.9999, so those are NaN.
pub fn ddsperf_latency(text: &str) -> Option<LatencyStats> {
    let mut lines: Vec<PingLine> = Vec::new();
    for line in text.lines() {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if !tokens.contains(&"mean") || !tokens.contains(&"cnt") {
            continue;
        }
        let get = |k: &str| after(&tokens, k).and_then(micros);
        let parsed = (|| {
            Some(PingLine {
                mean: get("mean")?,
                min: get("min")?,
                p50: get("50%")?,
                p90: get("90%")?,
                p99: get("99%")?,
                max: get("max")?,
                cnt: after(&tokens, "cnt")?
                    .parse::<f64>()
                    .ok()
                    .filter(|c| c.is_finite() && *c >= 0.0)?,
            })
        })();
        if let Some(p) = parsed {
            if p.cnt > 0.0 {
                lines.push(p);
            }
        }
    }
    if lines.len() > 1 {
        lines.remove(0);
    }
    let total: f64 = lines.iter().map(|l| l.cnt).sum();
    if lines.is_empty() || total <= 0.0 {
        return None;
    }
    let wmean = |f: fn(&PingLine) -> f64| lines.iter().map(|l| f(l) * l.cnt).sum::<f64>() / total;
    Some(LatencyStats {
        avg_us: wmean(|l| l.mean),
        std_us: f64::NAN,
        min_us: lines.iter().map(|l| l.min).fold(f64::INFINITY, f64::min),
        max_us: lines.iter().map(|l| l.max).fold(0.0, f64::max),
        p50_us: wmean(|l| l.p50),
        p90_us: wmean(|l| l.p90),
        p99_us: wmean(|l| l.p99),
        p9999_us: f64::NAN,
        p999999_us: f64::NAN,
    })
}

/// A rate token pair such as `450.57 kS/s` or `3691.08 Mb/s` scaled to units (S/s or Mb/s).
fn rate(value: &str, unit: &str) -> Option<f64> {
    let v: f64 = value.parse().ok().filter(|v: &f64| v.is_finite())?;
    let scale = match unit {
        "S/s" | "b/s" => 1.0,
        "kS/s" | "kb/s" => 1e3,
        "MS/s" | "Mb/s" => 1e6,
        "GS/s" | "Gb/s" => 1e9,
        _ => return None,
    };
    Some(v * scale)
}

/// Parses `ddsperf sub` output: one line per second, e.g.
/// `[12] 2.001  size 1024 total 815788 lost 0 delta 492361 lost 0 rate 492.06 kS/s 4030.92 Mb/s (…)`.
///
/// Total and lost come from the last line (they are cumulative); the rates are the mean of the
/// per-interval rates, the first interval (start-up) dropped when there are more.
pub fn ddsperf_throughput(text: &str) -> Option<ThroughputStats> {
    let mut rates: Vec<(f64, f64)> = Vec::new();
    let mut last: Option<(u64, u64)> = None;
    for line in text.lines() {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let Some(ti) = tokens.iter().position(|t| *t == "total") else {
            continue;
        };
        let Some(ri) = tokens.iter().position(|t| *t == "rate") else {
            continue;
        };
        let parsed = (|| {
            let total: u64 = tokens.get(ti + 1)?.parse().ok()?;
            let lost: u64 = after(&tokens[ti..], "lost")?.parse().ok()?;
            let sps = rate(tokens.get(ri + 1)?, tokens.get(ri + 2)?)?;
            let bps = rate(tokens.get(ri + 3)?, tokens.get(ri + 4)?)?;
            Some((total, lost, sps, bps / 1e6))
        })();
        if let Some((total, lost, sps, mbps)) = parsed {
            last = Some((total, lost));
            rates.push((sps, mbps));
        }
    }
    let (total, lost) = last?;
    if rates.len() > 1 {
        rates.remove(0);
    }
    let n = rates.len() as f64;
    // Counts are untrusted text: add them as floats (a u64 sum can overflow).
    let sent = total as f64 + lost as f64;
    let lost_pct = if sent > 0.0 {
        lost as f64 * 100.0 / sent
    } else {
        0.0
    };
    Some(ThroughputStats {
        total_samples: total,
        samples_per_s: rates.iter().map(|r| r.0).sum::<f64>() / n,
        mbps: rates.iter().map(|r| r.1).sum::<f64>() / n,
        lost_samples: lost,
        lost_pct,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAT: &str = "\
Sample Size (Bytes), Ave (\u{3bc}s), Std (\u{3bc}s), Min (\u{3bc}s), Max (\u{3bc}s), 50% (\u{3bc}s), 90% (\u{3bc}s), 99% (\u{3bc}s), 99.99% (\u{3bc}s), 99.9999% (\u{3bc}s)
                100,       92,     11.3,       80,      190,       90,      101,      150,         190,           190
";

    const THR: &str = "\
Sample Size (Bytes), Total Samples, Avg Samples/s,    Avg Mbps, Lost Samples, Lost Samples (%)
                100,      18034552,        601151,       480.9,            0,             0.00
";

    #[test]
    fn perftest_summaries() {
        let l = perftest_latency(LAT).unwrap();
        assert_eq!(l.avg_us, 92.0);
        assert_eq!(l.std_us, 11.3);
        assert_eq!(l.p50_us, 90.0);
        assert_eq!(l.p99_us, 150.0);
        assert_eq!(l.p999999_us, 190.0);
        assert!(perftest_throughput(LAT).is_none());
        let t = perftest_throughput(THR).unwrap();
        assert_eq!(t.total_samples, 18_034_552);
        assert_eq!(t.samples_per_s, 601_151.0);
        assert_eq!(t.mbps, 480.9);
        assert_eq!(t.lost_samples, 0);
        assert!(perftest_latency(THR).is_none());
    }

    #[test]
    fn perftest_with_intervals_and_blank_zero() {
        let text = "\nInterval Throughput for 100 Bytes:\n\
Length (Bytes), Total Samples,  Samples/s, Avg Samples/s,     Mbps,  Avg Mbps, Lost Samples, Lost Samples (%)\n\
           100,       1203455,     601227,        600912,    481.0,     480.7,            0,             0.00\n\
\nThroughput Summary:\n\
Sample Size (Bytes), Total Samples, Avg Samples/s,    Avg Mbps, Lost Samples, Lost Samples (%), CPU (%)\n\
                100,             0,              ,         0.0,            0,             0.00,    1.00\n";
        let t = perftest_throughput(text).unwrap();
        assert_eq!(t.total_samples, 0);
        assert_eq!(t.samples_per_s, 0.0);
    }

    #[test]
    fn perftest_capture_count() {
        // The configuration block also says "Network capture: Yes": only the end's count
        // is taken.
        let text = "\tNetwork capture: Yes\n\
Sample Size (Bytes), Total Samples, Avg Samples/s,    Avg Mbps, Lost Samples, Lost Samples (%)\n\
              63000,         37481,          7471,      3765.6,            0,             0.00\n\
Network capture: 74739 frames written, 87199 dropped, file rtiperftest_network_capture_sub_0_01.pcapng deleted (-doNotDropNetworkCapture keeps it)\n\
Test ended.\n";
        assert_eq!(
            perftest_capture(text),
            Some(CaptureFrames {
                written: 74_739,
                dropped: 87_199
            })
        );
        let c = perftest_capture(text).unwrap();
        assert!((c.written_pct().unwrap() - 46.15).abs() < 0.01);
        for bad in [
            "",
            "Network capture: Yes",
            "Network capture: x frames written, 1 dropped",
            "Network capture: 1 frames written, 99999999999999999999 dropped",
            "Network capture: 1 frames written",
        ] {
            assert_eq!(perftest_capture(bad), None, "{bad}");
        }
        assert_eq!(CaptureFrames::default().written_pct(), None);
    }

    #[test]
    fn huge_ddsperf_counts_do_not_overflow() {
        // total + lost exceeds u64: used to panic (debug) or wrap to a bogus loss rate.
        let t = ddsperf_throughput(
            "[1] 1.0 size 1 total 18446744073709551615 lost 18446744073709551615 \
             delta 1 lost 0 rate 1 kS/s 1 Mb/s",
        )
        .unwrap();
        assert_eq!(t.total_samples, u64::MAX);
        assert_eq!(t.lost_samples, u64::MAX);
        assert!((t.lost_pct - 50.0).abs() < 1e-9, "{}", t.lost_pct);
    }

    #[test]
    fn garbage_does_not_parse() {
        for t in [
            "",
            "Sample Size (Bytes), Total Samples\n",
            "Sample Size (Bytes), Ave (us)\nx,y\n",
            "\u{0}\u{ffff}",
            "[1] mean cnt",
            "[1] total rate",
            "[1] 1.0 size 1 total 18446744073709551616 lost 0 delta 1 lost 0 rate 1 kS/s 1 Mb/s",
        ] {
            assert!(perftest_latency(t).is_none());
            assert!(perftest_throughput(t).is_none());
            assert!(ddsperf_latency(t).is_none());
            assert!(ddsperf_throughput(t).is_none());
        }
    }

    #[test]
    fn ddsperf_ping() {
        let text = "\
[2103] participant vm:2103: new (self)
[2103] 2.001  vm:2102 size 32 mean 100.000us min 5.258us 50% 50.000us 90% 8.089us 99% 14.998us max 4033.939us cnt 100
[2103] 2.001  rss:7.7MB vcsw:25051 ivcsw:33816 ddsperf:1%+0% recvUC:20%+15%
[2103] 3.000  vm:2102 size 32 mean 9.000us min 5.293us 50% 6.000us 90% 10.000us 99% 70.000us max 2737.697us cnt 1000
[2103] 4.000  vm:2102 size 32 mean 6.000us min 5.261us 50% 5.000us 90% 6.000us 99% 10.000us max 1.5ms cnt 3000
";
        let l = ddsperf_latency(text).unwrap();
        // First interval dropped; count-weighted: (6×1000 + 5×3000) / 4000 = 5.25.
        assert!((l.p50_us - 5.25).abs() < 1e-9);
        assert!((l.avg_us - 6.75).abs() < 1e-9);
        assert_eq!(l.min_us, 5.261);
        assert_eq!(l.max_us, 2737.697);
        assert!(l.std_us.is_nan());
    }

    #[test]
    fn ddsperf_sub() {
        let text = "\
[2889] 1.004  size 32 total 539308 lost 161417 delta 539308 lost 161417 rate 537.26 kS/s 137.54 Mb/s (53.73 kS/s 13.75 Mb/s)
[2889] 1.004  rss:7.4MB vcsw:57 ivcsw:126 recvUC:40%+0%
[2889] 2.000  size 32 total 1119039 lost 384683 delta 579731 lost 223266 rate 580.00 kS/s 148.00 Mb/s (112.32 kS/s 28.75 Mb/s)
[2889] 3.004  size 32 total 1722744 lost 601091 delta 603705 lost 216408 rate 600.00 kS/s 152.00 Mb/s (171.66 kS/s 43.94 Mb/s)
";
        let t = ddsperf_throughput(text).unwrap();
        assert_eq!(t.total_samples, 1_722_744);
        assert_eq!(t.lost_samples, 601_091);
        assert!((t.samples_per_s - 590_000.0).abs() < 1e-6);
        assert!((t.mbps - 150.0).abs() < 1e-9);
        assert!((t.lost_pct - 601_091.0 * 100.0 / 2_323_835.0).abs() < 1e-9);
    }
}
