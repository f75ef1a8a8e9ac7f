//! Recorded results: one [`RunRecord`] per run, the per-test CSV files, the JSON summary and the
//! aggregation of repetitions into medians and spreads.
//!
//! CSV schema (`latency.csv`, `throughput.csv`): the columns [`META_COLUMNS`], then the
//! perftest summary columns of the test ([`LATENCY_COLUMNS`] or [`THROUGHPUT_COLUMNS`], named as
//! in the reference CSVs), then [`TAIL_COLUMNS`] (error, the two command lines, stderr tail).
//! Metric cells of failed runs are empty, except what a timed-out run's processes printed when
//! interrupted (partial figures, status `timed-out`; aggregates use `ok` runs only) and the zeros
//! of a throughput run that received no samples. `summary.json` ([`Summary`]) holds the run settings,
//! every record and the aggregates.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::LabError;
use crate::matrix::{
    Capture, Language, Reliability, Scenario, SecurityProfile, System, TestKind, Transport,
};

/// Columns common to both CSV files, first.
pub const META_COLUMNS: [&str; 21] = [
    "run_index",
    "repetition",
    "system",
    "test",
    "reliability",
    "keyed",
    "batching",
    "transport",
    "capture",
    "language",
    "security",
    "subscribers",
    "multicast",
    "topology",
    "size_bytes",
    "execution_time_s",
    "status",
    "duration_s",
    "pub_cpu_s",
    "capture_frames_written",
    "capture_frames_dropped",
];

/// perftest's one-way latency summary, in µs.
pub const LATENCY_COLUMNS: [&str; 9] = [
    "avg_us",
    "std_us",
    "min_us",
    "max_us",
    "p50_us",
    "p90_us",
    "p99_us",
    "p9999_us",
    "p999999_us",
];

/// perftest's throughput summary, then the UDP datagrams sent during the run
/// ([`RunRecord::udp_datagrams`]; empty where not counted).
pub const THROUGHPUT_COLUMNS: [&str; 6] = [
    "total_samples",
    "samples_per_s",
    "mbps",
    "lost_samples",
    "lost_pct",
    "udp_datagrams",
];

/// Columns common to both CSV files, last.
pub const TAIL_COLUMNS: [&str; 4] = ["error", "pub_command", "sub_command", "stderr_tail"];

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// Both processes ended and the summary was parsed.
    Ok,
    /// A process failed, or its output had no summary.
    Failed,
    /// The run exceeded its timeout and was killed.
    TimedOut,
    /// Ctrl-C stopped the run.
    Interrupted,
}

impl RunStatus {
    /// The stable name used in CSV and JSON.
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::TimedOut => "timed-out",
            RunStatus::Interrupted => "interrupted",
        }
    }

    fn parse(s: &str) -> Result<Self, LabError> {
        match s {
            "ok" => Ok(RunStatus::Ok),
            "failed" => Ok(RunStatus::Failed),
            "timed-out" => Ok(RunStatus::TimedOut),
            "interrupted" => Ok(RunStatus::Interrupted),
            _ => Err(LabError::BadValue {
                what: "status",
                value: s.to_string(),
            }),
        }
    }
}

/// JSON writes non-finite numbers as `null`; read them back as NaN ("not measured").
fn f64_or_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// One-way latency summary (µs), as perftest prints it (RTT/2). NaN = not reported by the
/// measuring program (ddsperf has no std, p99.99 or p99.9999).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct LatencyStats {
    /// Mean.
    #[serde(deserialize_with = "f64_or_nan")]
    pub avg_us: f64,
    /// Population standard deviation.
    #[serde(deserialize_with = "f64_or_nan")]
    pub std_us: f64,
    /// Minimum.
    #[serde(deserialize_with = "f64_or_nan")]
    pub min_us: f64,
    /// Maximum.
    #[serde(deserialize_with = "f64_or_nan")]
    pub max_us: f64,
    /// Median.
    #[serde(deserialize_with = "f64_or_nan")]
    pub p50_us: f64,
    /// 90th percentile.
    #[serde(deserialize_with = "f64_or_nan")]
    pub p90_us: f64,
    /// 99th percentile.
    #[serde(deserialize_with = "f64_or_nan")]
    pub p99_us: f64,
    /// 99.99th percentile.
    #[serde(deserialize_with = "f64_or_nan")]
    pub p9999_us: f64,
    /// 99.9999th percentile.
    #[serde(deserialize_with = "f64_or_nan")]
    pub p999999_us: f64,
}

impl LatencyStats {
    fn values(&self) -> [f64; 9] {
        [
            self.avg_us,
            self.std_us,
            self.min_us,
            self.max_us,
            self.p50_us,
            self.p90_us,
            self.p99_us,
            self.p9999_us,
            self.p999999_us,
        ]
    }

    fn from_values(v: [f64; 9]) -> Self {
        LatencyStats {
            avg_us: v[0],
            std_us: v[1],
            min_us: v[2],
            max_us: v[3],
            p50_us: v[4],
            p90_us: v[5],
            p99_us: v[6],
            p9999_us: v[7],
            p999999_us: v[8],
        }
    }
}

/// Subscriber throughput summary.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct ThroughputStats {
    /// Samples received.
    pub total_samples: u64,
    /// Average samples per second.
    pub samples_per_s: f64,
    /// Average megabits per second (sample size × 8 × samples/s / 10^6).
    pub mbps: f64,
    /// Samples lost (sequence gaps).
    pub lost_samples: u64,
    /// Lost / (received + lost) × 100.
    pub lost_pct: f64,
}

/// What the network captures of a run recorded: frames written to the files and frames
/// dropped (what the file could not keep up with, messages larger than the capture's buffer,
/// and everything after a write error), summed over the run's participants as perftest
/// prints them when it ends (`Network capture: N frames written, M dropped, ...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CaptureFrames {
    /// Frames written.
    pub written: u64,
    /// Frames dropped.
    pub dropped: u64,
}

impl CaptureFrames {
    /// Frames written and dropped.
    pub fn total(&self) -> u64 {
        self.written.saturating_add(self.dropped)
    }

    /// The share of the frames that were written, in % (`None` without any frame).
    pub fn written_pct(&self) -> Option<f64> {
        let all = self.total();
        (all > 0).then(|| self.written as f64 * 100.0 / all as f64)
    }

    /// [`Self::written_pct`] in whole percent, rounded down: "100 %" only when nothing
    /// was dropped.
    pub fn written_pct_floor(&self) -> Option<u64> {
        self.written_pct().map(|p| p.floor() as u64)
    }

    /// Both counts added.
    pub fn plus(self, o: CaptureFrames) -> CaptureFrames {
        CaptureFrames {
            written: self.written.saturating_add(o.written),
            dropped: self.dropped.saturating_add(o.dropped),
        }
    }
}

/// The record of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Position in the schedule.
    pub run_index: usize,
    /// Repetition number, from 0.
    pub repetition: u32,
    /// The configuration.
    pub scenario: Scenario,
    /// `loopback`, `netns` or `remote` (with emulation settings, e.g. `netns loss=1%`).
    pub topology: String,
    /// perftest `-executionTime`.
    pub execution_time_s: u32,
    /// How it ended.
    pub status: RunStatus,
    /// Wall-clock seconds the run took.
    pub duration_s: f64,
    /// Latency summary (publisher side), when parsed.
    pub latency: Option<LatencyStats>,
    /// Throughput summary (subscriber side), when parsed.
    pub throughput: Option<ThroughputStats>,
    /// Why it failed (empty when ok).
    pub error: String,
    /// The publisher (or ping) command line.
    pub pub_command: String,
    /// The subscriber (or pong) command line.
    pub sub_command: String,
    /// Last lines of the processes' error output, kept for failed runs.
    pub stderr_tail: String,
    /// Throughput runs: UDP datagrams sent in the publisher's network namespace while the run
    /// lasted (`OutDatagrams` of `/proc/net/snmp`; on loopback both processes and anything
    /// else on the host; in a netns testbed the publisher's side only). `None` where not
    /// counted (latency runs, remote topology, files from before this column).
    #[serde(default)]
    pub udp_datagrams: Option<u64>,
    /// CPU seconds the publisher process used (user and system, `/proc/PID/stat`), with
    /// discovery and teardown; `None` where not measured (files from before this column).
    #[serde(default)]
    pub pub_cpu_s: Option<f64>,
    /// Runs with network capture: what the captures recorded ([`CaptureFrames`]); `None`
    /// without capture, when a participant did not print its count, or in files from before
    /// this column.
    #[serde(default)]
    pub capture_frames: Option<CaptureFrames>,
}

impl RunRecord {
    /// Publisher CPU time per sample a subscriber received, in µs (throughput runs).
    pub fn pub_cpu_us_per_sample(&self) -> Option<f64> {
        let cpu = self.pub_cpu_s?;
        let t = self.throughput.filter(|t| t.total_samples > 0)?;
        Some(cpu * 1e6 / t.total_samples as f64)
    }

    /// Samples received per UDP datagram sent ([`RunRecord::udp_datagrams`]): about 1 for one
    /// sample per datagram, about 126 for Cyclone's `ddsperf` at 32 B (it packs samples).
    pub fn samples_per_datagram(&self) -> Option<f64> {
        let d = self.udp_datagrams.filter(|d| *d > 0)?;
        let t = self.throughput?;
        Some(t.total_samples as f64 / d as f64)
    }
}

fn bool_str(b: bool) -> &'static str {
    if b {
        "true"
    } else {
        "false"
    }
}

fn fmt_f(v: f64) -> String {
    if v.is_finite() {
        // Shortest representation that round-trips.
        format!("{v}")
    } else {
        String::new()
    }
}

/// Writes the CSV file of one test kind: only records of that test, in schedule order.
pub fn write_csv(path: &Path, test: TestKind, records: &[RunRecord]) -> Result<(), LabError> {
    let csv_err = |source| LabError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut w = csv::Writer::from_path(path).map_err(csv_err)?;
    let metric_cols: &[&str] = match test {
        TestKind::Latency => &LATENCY_COLUMNS,
        TestKind::Throughput => &THROUGHPUT_COLUMNS,
    };
    let header: Vec<&str> = META_COLUMNS
        .iter()
        .chain(metric_cols)
        .chain(TAIL_COLUMNS.iter())
        .copied()
        .collect();
    w.write_record(&header).map_err(csv_err)?;
    for r in records.iter().filter(|r| r.scenario.test == test) {
        let s = &r.scenario;
        let mut row: Vec<String> = vec![
            r.run_index.to_string(),
            r.repetition.to_string(),
            s.system.name().into(),
            s.test.name().into(),
            s.reliability.name().into(),
            bool_str(s.keyed).into(),
            bool_str(s.batching).into(),
            s.transport.name().into(),
            s.capture.name().into(),
            s.language.name().into(),
            s.security.map(|p| p.name().to_string()).unwrap_or_default(),
            s.subscribers.to_string(),
            bool_str(s.multicast).into(),
            r.topology.clone(),
            s.size.to_string(),
            r.execution_time_s.to_string(),
            r.status.name().into(),
            format!("{:.3}", r.duration_s),
            r.pub_cpu_s.map(|c| format!("{c:.2}")).unwrap_or_default(),
            r.capture_frames
                .map(|c| c.written.to_string())
                .unwrap_or_default(),
            r.capture_frames
                .map(|c| c.dropped.to_string())
                .unwrap_or_default(),
        ];
        match test {
            TestKind::Latency => match &r.latency {
                Some(l) => row.extend(l.values().iter().map(|v| fmt_f(*v))),
                None => row.extend(std::iter::repeat_n(String::new(), LATENCY_COLUMNS.len())),
            },
            TestKind::Throughput => match &r.throughput {
                Some(t) => row.extend([
                    t.total_samples.to_string(),
                    fmt_f(t.samples_per_s),
                    fmt_f(t.mbps),
                    t.lost_samples.to_string(),
                    fmt_f(t.lost_pct),
                    r.udp_datagrams.map(|d| d.to_string()).unwrap_or_default(),
                ]),
                None => row.extend(std::iter::repeat_n(String::new(), THROUGHPUT_COLUMNS.len())),
            },
        }
        row.extend([
            r.error.clone(),
            r.pub_command.clone(),
            r.sub_command.clone(),
            r.stderr_tail.clone(),
        ]);
        w.write_record(&row).map_err(csv_err)?;
    }
    w.flush().map_err(|e| LabError::io(path, e))?;
    Ok(())
}

struct Row<'a> {
    path: &'a Path,
    idx: &'a BTreeMap<String, usize>,
    rec: &'a csv::StringRecord,
}

impl Row<'_> {
    fn get(&self, col: &'static str) -> Result<&str, LabError> {
        let i = self.idx.get(col).ok_or(LabError::MissingColumn {
            path: self.path.to_path_buf(),
            column: col,
        })?;
        Ok(self.rec.get(*i).unwrap_or("").trim())
    }
    fn parse<T: std::str::FromStr>(&self, col: &'static str) -> Result<T, LabError> {
        let v = self.get(col)?;
        v.parse().map_err(|_| LabError::BadValue {
            what: col,
            value: v.to_string(),
        })
    }
    fn opt_f(&self, col: &'static str) -> Result<Option<f64>, LabError> {
        let v = self.get(col)?;
        if v.is_empty() {
            Ok(None)
        } else {
            self.parse(col).map(Some)
        }
    }
    fn boolean(&self, col: &'static str) -> Result<bool, LabError> {
        match self.get(col)? {
            "true" => Ok(true),
            "false" => Ok(false),
            v => Err(LabError::BadValue {
                what: col,
                value: v.to_string(),
            }),
        }
    }
}

/// Reads a CSV file written by [`write_csv`]; the test kind comes from each row.
pub fn read_csv(path: &Path) -> Result<Vec<RunRecord>, LabError> {
    let csv_err = |source| LabError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut r = csv::Reader::from_path(path).map_err(csv_err)?;
    let idx: BTreeMap<String, usize> = r
        .headers()
        .map_err(csv_err)?
        .iter()
        .enumerate()
        .map(|(i, h)| (h.trim().to_string(), i))
        .collect();
    // `capture`, `language`, `security`, `subscribers`, `multicast`, `pub_cpu_s`,
    // `udp_datagrams` and the capture frame counts came later: files without them are runs
    // without capture, in Rust, without the security axis, with one subscriber by unicast,
    // with the publisher's CPU, the datagrams and the captured frames not counted.
    for col in META_COLUMNS.iter().chain(TAIL_COLUMNS.iter()) {
        if !matches!(
            *col,
            "capture"
                | "language"
                | "security"
                | "subscribers"
                | "multicast"
                | "pub_cpu_s"
                | "capture_frames_written"
                | "capture_frames_dropped"
        ) && !idx.contains_key(*col)
        {
            return Err(LabError::MissingColumn {
                path: path.to_path_buf(),
                column: col,
            });
        }
    }
    let mut out = Vec::new();
    for rec in r.records() {
        let rec = rec.map_err(csv_err)?;
        let row = Row {
            path,
            idx: &idx,
            rec: &rec,
        };
        let test: TestKind = row.get("test")?.parse()?;
        let scenario = Scenario {
            system: row.get("system")?.parse::<System>()?,
            test,
            reliability: row.get("reliability")?.parse::<Reliability>()?,
            keyed: row.boolean("keyed")?,
            batching: row.boolean("batching")?,
            transport: row.get("transport")?.parse::<Transport>()?,
            size: row.parse("size_bytes")?,
            capture: match idx.get("capture").and_then(|&i| rec.get(i)) {
                Some(c) if !c.trim().is_empty() => c.parse::<Capture>()?,
                _ => Capture::Off,
            },
            language: match idx.get("language").and_then(|&i| rec.get(i)) {
                Some(c) if !c.trim().is_empty() => c.parse::<Language>()?,
                _ => Language::Rust,
            },
            // Empty: the security axis was not in use.
            security: match idx.get("security").and_then(|&i| rec.get(i)) {
                Some(c) if !c.trim().is_empty() => Some(c.parse::<SecurityProfile>()?),
                _ => None,
            },
            // Empty or absent: one subscriber.
            subscribers: match idx.get("subscribers").and_then(|&i| rec.get(i)) {
                Some(c) if !c.trim().is_empty() => {
                    c.trim().parse().map_err(|_| LabError::BadValue {
                        what: "subscribers",
                        value: c.to_string(),
                    })?
                }
                _ => 1,
            },
            multicast: match idx.get("multicast").and_then(|&i| rec.get(i)) {
                Some(c) if !c.trim().is_empty() => row.boolean("multicast")?,
                _ => false,
            },
        };
        let (latency, throughput) = match test {
            TestKind::Latency => {
                let mut v = [f64::NAN; 9];
                let mut any = false;
                for (slot, col) in v.iter_mut().zip(LATENCY_COLUMNS) {
                    if let Some(x) = row.opt_f(col)? {
                        *slot = x;
                        any = true;
                    }
                }
                (any.then(|| LatencyStats::from_values(v)), None)
            }
            TestKind::Throughput => {
                let t = if row.get("total_samples")?.is_empty() {
                    None
                } else {
                    Some(ThroughputStats {
                        total_samples: row.parse("total_samples")?,
                        samples_per_s: row.opt_f("samples_per_s")?.unwrap_or(0.0),
                        mbps: row.opt_f("mbps")?.unwrap_or(0.0),
                        lost_samples: row.parse("lost_samples")?,
                        lost_pct: row.opt_f("lost_pct")?.unwrap_or(0.0),
                    })
                };
                (None, t)
            }
        };
        let pub_cpu_s = match idx.get("pub_cpu_s").and_then(|&i| rec.get(i)) {
            Some(v) if !v.trim().is_empty() => Some(row.parse("pub_cpu_s")?),
            _ => None,
        };
        let udp_datagrams = match idx.get("udp_datagrams").and_then(|&i| rec.get(i)) {
            Some(v) if !v.trim().is_empty() => Some(row.parse("udp_datagrams")?),
            _ => None,
        };
        let count = |col: &'static str| -> Result<Option<u64>, LabError> {
            match idx.get(col).and_then(|&i| rec.get(i)) {
                Some(v) if !v.trim().is_empty() => Ok(Some(row.parse(col)?)),
                _ => Ok(None),
            }
        };
        let capture_frames = match (
            count("capture_frames_written")?,
            count("capture_frames_dropped")?,
        ) {
            (Some(written), Some(dropped)) => Some(CaptureFrames { written, dropped }),
            _ => None,
        };
        out.push(RunRecord {
            udp_datagrams,
            pub_cpu_s,
            capture_frames,
            run_index: row.parse("run_index")?,
            repetition: row.parse("repetition")?,
            scenario,
            topology: row.get("topology")?.to_string(),
            execution_time_s: row.parse("execution_time_s")?,
            status: RunStatus::parse(row.get("status")?)?,
            duration_s: row.opt_f("duration_s")?.unwrap_or(0.0),
            latency,
            throughput,
            error: row.get("error")?.to_string(),
            pub_command: row.get("pub_command")?.to_string(),
            sub_command: row.get("sub_command")?.to_string(),
            stderr_tail: row.get("stderr_tail")?.to_string(),
        });
    }
    Ok(out)
}

/// Median, minimum and maximum of a metric across repetitions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Median (mean of the two middle values for an even count).
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`, `None` when empty. NaNs are ignored.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
        })
    }

    /// (max − min) / median × 100, the relative spread.
    pub fn relative_pct(&self) -> f64 {
        if self.median.abs() > 0.0 {
            (self.max - self.min) / self.median * 100.0
        } else {
            0.0
        }
    }
}

/// All repetitions of one scenario, summarised.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    /// The scenario.
    pub scenario: Scenario,
    /// Runs that produced results.
    pub runs_ok: u32,
    /// Runs that failed, timed out or were interrupted.
    pub runs_failed: u32,
    /// Latency mean.
    pub avg_us: Option<Spread>,
    /// Latency median.
    pub p50_us: Option<Spread>,
    /// Latency 99th percentile.
    pub p99_us: Option<Spread>,
    /// Throughput in samples/s.
    pub samples_per_s: Option<Spread>,
    /// Throughput in Mbps.
    pub mbps: Option<Spread>,
    /// Lost samples in %.
    pub lost_pct: Option<Spread>,
    /// Lost samples summed over repetitions.
    pub lost_samples_total: u64,
    /// Samples per UDP datagram ([`RunRecord::samples_per_datagram`]), where counted.
    #[serde(default)]
    pub samples_per_datagram: Option<Spread>,
    /// Frames the network captures recorded, summed over the `ok` runs that counted them.
    #[serde(default)]
    pub capture_frames: Option<CaptureFrames>,
}

/// Groups records by scenario (all repetitions) and summarises each group.
pub fn aggregate(records: &[RunRecord]) -> Vec<Aggregate> {
    let mut groups: BTreeMap<Scenario, Vec<&RunRecord>> = BTreeMap::new();
    for r in records {
        groups.entry(r.scenario).or_default().push(r);
    }
    groups
        .into_iter()
        .map(|(scenario, rs)| {
            let ok: Vec<&&RunRecord> = rs.iter().filter(|r| r.status == RunStatus::Ok).collect();
            let lat = |f: fn(&LatencyStats) -> f64| {
                let v: Vec<f64> = ok
                    .iter()
                    .filter_map(|r| r.latency.as_ref().map(f))
                    .collect();
                Spread::of(&v)
            };
            let thr = |f: fn(&ThroughputStats) -> f64| {
                let v: Vec<f64> = ok
                    .iter()
                    .filter_map(|r| r.throughput.as_ref().map(f))
                    .collect();
                Spread::of(&v)
            };
            let (avg_us, p50_us, p99_us) = if scenario.test == TestKind::Latency {
                (lat(|l| l.avg_us), lat(|l| l.p50_us), lat(|l| l.p99_us))
            } else {
                (None, None, None)
            };
            let (samples_per_s, mbps, lost_pct) = if scenario.test == TestKind::Throughput {
                (
                    thr(|t| t.samples_per_s),
                    thr(|t| t.mbps),
                    thr(|t| t.lost_pct),
                )
            } else {
                (None, None, None)
            };
            let per_datagram: Vec<f64> =
                ok.iter().filter_map(|r| r.samples_per_datagram()).collect();
            let capture_frames = ok
                .iter()
                .filter_map(|r| r.capture_frames)
                .reduce(CaptureFrames::plus);
            Aggregate {
                capture_frames,
                samples_per_datagram: Spread::of(&per_datagram),
                scenario,
                runs_ok: ok.len() as u32,
                runs_failed: (rs.len() - ok.len()) as u32,
                avg_us,
                p50_us,
                p99_us,
                samples_per_s,
                mbps,
                lost_pct,
                lost_samples_total: ok
                    .iter()
                    .filter(|_| scenario.test == TestKind::Throughput)
                    .filter_map(|r| r.throughput.map(|t| t.lost_samples))
                    .sum(),
            }
        })
        .collect()
}

/// Facts about the machine a run was made on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct HostInfo {
    /// Host name.
    pub hostname: String,
    /// `uname -sr`-style kernel string.
    pub kernel: String,
    /// Number of online CPUs.
    pub cpus: usize,
    /// CPU model name, if known.
    pub cpu_model: String,
}

impl HostInfo {
    /// Reads what it can from /proc and /etc; missing facts stay empty.
    pub fn detect() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default();
        HostInfo {
            hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
            kernel: format!(
                "{} {}",
                read("/proc/sys/kernel/ostype").trim(),
                read("/proc/sys/kernel/osrelease").trim()
            ),
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(0),
            cpu_model,
        }
    }
}

/// How a results directory was produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct RunSettings {
    /// `loopback`, `netns …` or `remote …`.
    pub topology: String,
    /// CPU list both processes were pinned to (`taskset -c`), empty when not pinned.
    pub cpu_pin: String,
    /// perftest `-executionTime` of each run.
    pub execution_time_s: u32,
    /// Repetitions of each scenario.
    pub repetitions: u32,
    /// Whether `--quick` was used.
    pub quick: bool,
    /// The perftest binary used.
    pub perftest: String,
    /// The ddsperf binary used (empty when Cyclone was not run).
    pub ddsperf: String,
    /// The lab's own command line.
    pub command_line: String,
}

/// The content of `summary.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Lab version.
    pub lab_version: String,
    /// Seconds since the Unix epoch when the run started.
    pub started_unix_s: u64,
    /// Seconds since the Unix epoch when the run ended.
    pub finished_unix_s: u64,
    /// The machine.
    pub host: HostInfo,
    /// The settings.
    pub settings: RunSettings,
    /// Runs planned.
    pub planned_runs: usize,
    /// Runs finished ok.
    pub runs_ok: usize,
    /// Runs that failed or timed out.
    pub runs_failed: usize,
    /// Runs never started (Ctrl-C).
    pub runs_not_started: usize,
    /// Whether Ctrl-C stopped the run early.
    pub interrupted: bool,
    /// Remarks (systems skipped, emulation caveats…).
    pub notes: Vec<String>,
    /// Per-scenario medians and spreads.
    pub aggregates: Vec<Aggregate>,
    /// Every run.
    pub runs: Vec<RunRecord>,
}

/// File names inside a results directory.
pub mod files {
    /// Latency runs.
    pub const LATENCY_CSV: &str = "latency.csv";
    /// Throughput runs.
    pub const THROUGHPUT_CSV: &str = "throughput.csv";
    /// The JSON summary.
    pub const SUMMARY_JSON: &str = "summary.json";
    /// The HTML report.
    pub const REPORT_HTML: &str = "report.html";
}

/// Writes both CSV files and `summary.json` into `dir` (created if needed).
pub fn write_results(dir: &Path, summary: &Summary) -> Result<(), LabError> {
    std::fs::create_dir_all(dir).map_err(|e| LabError::io(dir, e))?;
    write_csv(
        &dir.join(files::LATENCY_CSV),
        TestKind::Latency,
        &summary.runs,
    )?;
    write_csv(
        &dir.join(files::THROUGHPUT_CSV),
        TestKind::Throughput,
        &summary.runs,
    )?;
    write_summary(&dir.join(files::SUMMARY_JSON), summary)
}

/// Writes `summary.json` (atomically: a temporary file renamed over the old one).
pub fn write_summary(path: &Path, summary: &Summary) -> Result<(), LabError> {
    let tmp: PathBuf = path.with_extension("json.tmp");
    let f = File::create(&tmp).map_err(|e| LabError::io(&tmp, e))?;
    serde_json::to_writer_pretty(std::io::BufWriter::new(f), summary).map_err(|source| {
        LabError::Json {
            path: tmp.clone(),
            source,
        }
    })?;
    std::fs::rename(&tmp, path).map_err(|e| LabError::io(path, e))
}

/// Reads a results directory: the records come from the CSV files (the source of truth, so
/// hand-edited or merged CSVs are honoured); settings, host and notes from `summary.json` when
/// it exists. Aggregates are recomputed.
pub fn read_results(dir: &Path) -> Result<Summary, LabError> {
    let mut runs = Vec::new();
    for name in [files::LATENCY_CSV, files::THROUGHPUT_CSV] {
        let p = dir.join(name);
        if p.exists() {
            runs.extend(read_csv(&p)?);
        }
    }
    let json_path = dir.join(files::SUMMARY_JSON);
    let old: Option<Summary> = if json_path.exists() {
        let f = File::open(&json_path).map_err(|e| LabError::io(&json_path, e))?;
        Some(
            serde_json::from_reader(std::io::BufReader::new(f)).map_err(|source| {
                LabError::Json {
                    path: json_path.clone(),
                    source,
                }
            })?,
        )
    } else {
        None
    };
    if runs.is_empty() && old.as_ref().is_none_or(|o| o.runs.is_empty()) {
        return Err(LabError::NoResults(dir.to_path_buf()));
    }
    // Keep the richer JSON records (they hold both latency and throughput) where the CSV agrees.
    if let Some(o) = &old {
        for r in &mut runs {
            if let Some(j) = o
                .runs
                .iter()
                .find(|j| j.run_index == r.run_index && j.scenario == r.scenario)
            {
                if r.latency.is_none() {
                    r.latency = j.latency;
                }
                if r.throughput.is_none() {
                    r.throughput = j.throughput;
                }
            }
        }
    }
    runs.sort_by_key(|r| r.run_index);
    let aggregates = aggregate(&runs);
    let ok = runs.iter().filter(|r| r.status == RunStatus::Ok).count();
    let failed = runs.len() - ok;
    Ok(match old {
        Some(o) => Summary {
            runs_ok: ok,
            runs_failed: failed,
            aggregates,
            runs,
            ..o
        },
        None => Summary {
            lab_version: String::new(),
            started_unix_s: 0,
            finished_unix_s: 0,
            host: HostInfo::default(),
            settings: RunSettings::default(),
            planned_runs: runs.len(),
            runs_ok: ok,
            runs_failed: failed,
            runs_not_started: 0,
            interrupted: false,
            notes: Vec::new(),
            aggregates,
            runs,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(i: usize, test: TestKind, status: RunStatus, v: f64) -> RunRecord {
        RunRecord {
            pub_cpu_s: None,
            udp_datagrams: None,
            capture_frames: None,
            run_index: i,
            repetition: (i % 3) as u32,
            scenario: Scenario {
                multicast: false,
                subscribers: 1,
                system: System::Ferrodds,
                test,
                reliability: Reliability::Reliable,
                keyed: false,
                batching: false,
                transport: Transport::Udpv4,
                size: 32,
                capture: Default::default(),
                language: Default::default(),
                security: None,
            },
            topology: "loopback".into(),
            execution_time_s: 2,
            status,
            duration_s: 4.5,
            latency: (test == TestKind::Latency && status == RunStatus::Ok).then_some(
                LatencyStats {
                    avg_us: v,
                    p50_us: v,
                    p99_us: v * 2.0,
                    ..Default::default()
                },
            ),
            throughput: (test == TestKind::Throughput && status == RunStatus::Ok).then_some(
                ThroughputStats {
                    total_samples: 1000,
                    samples_per_s: v,
                    mbps: v * 0.25,
                    lost_samples: 3,
                    lost_pct: 0.3,
                },
            ),
            error: if status == RunStatus::Ok {
                String::new()
            } else {
                "perftest exited with 1, \"quoted\", comma".into()
            },
            pub_command: "taskset -c 0 perftest -pub -dataLen 32".into(),
            sub_command: "taskset -c 0 perftest -sub".into(),
            stderr_tail: "line1\nline2".into(),
        }
    }

    #[test]
    fn spread_median() {
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(Spread::of(&[1.0, 2.0, 3.0, 10.0]).unwrap().median, 2.5);
        assert!(Spread::of(&[]).is_none());
        assert!(Spread::of(&[f64::NAN]).is_none());
        assert!((s.relative_pct() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn aggregate_uses_ok_runs_only() {
        let rs = vec![
            rec(0, TestKind::Latency, RunStatus::Ok, 10.0),
            rec(1, TestKind::Latency, RunStatus::Ok, 30.0),
            rec(2, TestKind::Latency, RunStatus::Failed, 0.0),
            rec(3, TestKind::Latency, RunStatus::Ok, 20.0),
        ];
        let a = aggregate(&rs);
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].runs_ok, 3);
        assert_eq!(a[0].runs_failed, 1);
        let p50 = a[0].p50_us.unwrap();
        assert_eq!((p50.median, p50.min, p50.max), (20.0, 10.0, 30.0));
        assert_eq!(a[0].p99_us.unwrap().median, 40.0);
        assert!(a[0].mbps.is_none());
    }

    #[test]
    fn captured_frames_add_up_over_ok_runs() {
        let mut rs = vec![
            rec(0, TestKind::Latency, RunStatus::Ok, 10.0),
            rec(1, TestKind::Latency, RunStatus::Ok, 30.0),
            rec(2, TestKind::Latency, RunStatus::Failed, 0.0),
        ];
        for (r, (written, dropped)) in rs.iter_mut().zip([(30, 10), (50, 10), (1000, 0)]) {
            r.scenario.capture = Capture::On;
            r.capture_frames = Some(CaptureFrames { written, dropped });
        }
        let a = aggregate(&rs);
        let c = a[0].capture_frames.unwrap();
        assert_eq!((c.written, c.dropped), (80, 20));
        assert_eq!(c.written_pct(), Some(80.0));
        let nearly = CaptureFrames {
            written: 996,
            dropped: 4,
        };
        assert_eq!(
            nearly.written_pct_floor(),
            Some(99),
            "never 100 % with a drop"
        );
        rs.iter_mut().for_each(|r| r.capture_frames = None);
        assert_eq!(aggregate(&rs)[0].capture_frames, None);
    }

    #[test]
    fn csv_and_json_round_trip() {
        let dir = std::env::temp_dir().join(format!("lab-record-{}", std::process::id()));
        let mut runs = vec![
            rec(0, TestKind::Latency, RunStatus::Ok, 12.5),
            rec(1, TestKind::Throughput, RunStatus::Ok, 123456.0),
            rec(2, TestKind::Latency, RunStatus::TimedOut, 0.0),
            rec(3, TestKind::Throughput, RunStatus::Failed, 0.0),
        ];
        runs[0].scenario.capture = Capture::NoUserData;
        runs[1].scenario.capture = Capture::On;
        runs[2].scenario.language = Language::Cs;
        runs[0].scenario.security = Some(SecurityProfile::RtpsSign);
        runs[2].scenario.security = Some(SecurityProfile::NoSecurityLibraries);
        runs[1].udp_datagrams = Some(61_728);
        runs[1].scenario.subscribers = 4;
        runs[1].scenario.multicast = true;
        runs[1].pub_cpu_s = Some(1.25);
        runs[0].capture_frames = Some(CaptureFrames {
            written: 74_739,
            dropped: 87_199,
        });
        runs[1].capture_frames = Some(CaptureFrames {
            written: 12,
            dropped: 0,
        });
        let summary = Summary {
            lab_version: "0.1.0".into(),
            started_unix_s: 1,
            finished_unix_s: 2,
            host: HostInfo::default(),
            settings: RunSettings {
                topology: "loopback".into(),
                ..Default::default()
            },
            planned_runs: 4,
            runs_ok: 2,
            runs_failed: 2,
            runs_not_started: 0,
            interrupted: false,
            notes: vec!["note".into()],
            aggregates: aggregate(&runs),
            runs: runs.clone(),
        };
        write_results(&dir, &summary).unwrap();
        let lat = read_csv(&dir.join(files::LATENCY_CSV)).unwrap();
        assert_eq!(lat, vec![runs[0].clone(), runs[2].clone()]);
        let thr = read_csv(&dir.join(files::THROUGHPUT_CSV)).unwrap();
        assert_eq!(thr, vec![runs[1].clone(), runs[3].clone()]);
        let back = read_results(&dir).unwrap();
        assert_eq!(back, summary);
        // Headers carry the required columns in order.
        let text = std::fs::read_to_string(dir.join(files::LATENCY_CSV)).unwrap();
        let header = text.lines().next().unwrap();
        assert!(header.starts_with("run_index,repetition,system,test,"));
        assert!(header.contains("p50_us,p90_us,p99_us"));
        assert!(header.ends_with("error,pub_command,sub_command,stderr_tail"));
        assert!(
            header.contains(",capture,language,security,subscribers,multicast,topology,"),
            "{header}"
        );
        // The profile where the axis was used, nothing where it was not.
        assert!(text.contains(",rust,rtps_sign,1,false,loopback,"), "{text}");
        assert!(
            text.contains(",cs,no_security_libraries,1,false,loopback,"),
            "{text}"
        );
        let thr = std::fs::read_to_string(dir.join(files::THROUGHPUT_CSV)).unwrap();
        assert!(thr.contains(",rust,,4,true,loopback,"), "{thr}");
        assert!(thr.contains(",1.25,"), "{thr}");
        assert_eq!(
            runs[1].pub_cpu_us_per_sample().is_some(),
            runs[1].throughput.is_some_and(|t| t.total_samples > 0)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn files_without_the_capture_and_language_columns_are_rust_runs_without_capture() {
        let dir = std::env::temp_dir().join(format!("lab-record-nocap-{}", std::process::id()));
        let runs = vec![rec(0, TestKind::Latency, RunStatus::Ok, 12.5)];
        let summary = Summary {
            lab_version: "0.1.0".into(),
            started_unix_s: 1,
            finished_unix_s: 2,
            host: HostInfo::default(),
            settings: RunSettings::default(),
            planned_runs: 1,
            runs_ok: 1,
            runs_failed: 0,
            runs_not_started: 0,
            interrupted: false,
            notes: Vec::new(),
            aggregates: aggregate(&runs),
            runs: runs.clone(),
        };
        write_results(&dir, &summary).unwrap();
        // Drop the column, as files written before it existed.
        let p = dir.join(files::LATENCY_CSV);
        let mut r = csv::Reader::from_path(&p).unwrap();
        let h = r.headers().unwrap().clone();
        let at: Vec<usize> = ["capture", "language", "security"]
            .iter()
            .map(|name| h.iter().position(|c| c == *name).unwrap())
            .collect();
        let keep = |rec: &csv::StringRecord| -> Vec<String> {
            rec.iter()
                .enumerate()
                .filter(|(i, _)| !at.contains(i))
                .map(|(_, v)| v.to_string())
                .collect()
        };
        let rows: Vec<Vec<String>> = r.records().map(|x| keep(&x.unwrap())).collect();
        let mut w = csv::Writer::from_path(&p).unwrap();
        w.write_record(keep(&h)).unwrap();
        for row in rows {
            w.write_record(row).unwrap();
        }
        w.flush().unwrap();
        drop(w);
        let back = read_csv(&p).unwrap();
        assert_eq!(back, runs);
        assert_eq!(back[0].scenario.capture, Capture::Off);
        assert_eq!(back[0].scenario.language, Language::Rust);
        assert_eq!(back[0].scenario.security, None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_column_is_an_error() {
        let dir = std::env::temp_dir().join(format!("lab-record-miss-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("latency.csv");
        std::fs::write(&p, "run_index,system\n0,ferrodds\n").unwrap();
        assert!(matches!(
            read_csv(&p),
            Err(LabError::MissingColumn {
                column: "repetition",
                ..
            })
        ));
        std::fs::write(
            dir.join("latency.csv"),
            format!(
                "{}\n",
                META_COLUMNS
                    .iter()
                    .chain(TAIL_COLUMNS.iter())
                    .copied()
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        )
        .unwrap();
        assert!(matches!(read_results(&dir), Err(LabError::NoResults(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
