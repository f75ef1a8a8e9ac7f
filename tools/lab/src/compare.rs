//! Comparison of two results directories: scenario by scenario, median p50 latency and
//! median throughput, with regressions flagged beyond a threshold (default p50 latency +10 %,
//! throughput −10 %). Output: a console table, `compare.csv` and `compare.html`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::LabError;
use crate::matrix::{Scenario, TestKind};
use crate::record::Summary;
use crate::report::html_escape;

/// Name of the comparison CSV.
pub const COMPARE_CSV: &str = "compare.csv";
/// Name of the comparison page.
pub const COMPARE_HTML: &str = "compare.html";

/// Regression thresholds in percent.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// A p50 latency increase beyond this is a regression.
    pub latency_pct: f64,
    /// A throughput (samples/s) decrease beyond this is a regression.
    pub throughput_pct: f64,
}

impl Thresholds {
    /// Checks that both thresholds are finite and non-negative (a negative one flags every
    /// unchanged scenario, NaN flags nothing).
    pub fn validate(&self) -> Result<(), LabError> {
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        if ok(self.latency_pct) && ok(self.throughput_pct) {
            Ok(())
        } else {
            Err(LabError::Usage(
                "--latency-threshold and --throughput-threshold must be finite percentages >= 0",
            ))
        }
    }
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            latency_pct: 10.0,
            throughput_pct: 10.0,
        }
    }
}

/// Verdict on one scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Within the thresholds.
    Same,
    /// Better beyond the threshold.
    Improved,
    /// Worse beyond the threshold.
    Regressed,
    /// Only in the old run.
    OnlyOld,
    /// Only in the new run.
    OnlyNew,
    /// Present in both but without a value in one of them (failed runs).
    Missing,
}

impl Verdict {
    /// Stable name.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Same => "same",
            Verdict::Improved => "improved",
            Verdict::Regressed => "REGRESSED",
            Verdict::OnlyOld => "only-old",
            Verdict::OnlyNew => "only-new",
            Verdict::Missing => "missing",
        }
    }
}

/// One compared scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompareRow {
    /// The scenario.
    pub scenario: Scenario,
    /// Metric compared: `p50_us` (latency) or `samples_per_s` (throughput).
    pub metric: &'static str,
    /// Old median.
    pub old: Option<f64>,
    /// New median.
    pub new: Option<f64>,
    /// (new − old) / old × 100.
    pub delta_pct: Option<f64>,
    /// Verdict.
    pub verdict: Verdict,
}

/// A whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Thresholds used.
    pub thresholds: Thresholds,
    /// Rows in scenario order.
    pub rows: Vec<CompareRow>,
    /// Why the two runs may not be comparable: settings that differ (topology, execution
    /// time, CPU pinning, host, quick mode) or no scenario in common.
    pub warnings: Vec<String>,
}

impl Comparison {
    /// Number of regressions.
    pub fn regressions(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::Regressed)
            .count()
    }
}

fn metric_of(a: &crate::record::Aggregate) -> Option<f64> {
    match a.scenario.test {
        TestKind::Latency => a.p50_us.map(|s| s.median),
        TestKind::Throughput => a.samples_per_s.map(|s| s.median),
    }
}

/// Compares two summaries.
pub fn compare(old: &Summary, new: &Summary, th: Thresholds) -> Comparison {
    // Per scenario: (present in old → its metric, present in new → its metric).
    type Side = Option<Option<f64>>;
    let mut keys: BTreeMap<Scenario, (Side, Side)> = BTreeMap::new();
    for a in &old.aggregates {
        keys.entry(a.scenario).or_default().0 = Some(metric_of(a));
    }
    for a in &new.aggregates {
        keys.entry(a.scenario).or_default().1 = Some(metric_of(a));
    }
    let rows: Vec<CompareRow> = keys
        .into_iter()
        .map(|(scenario, (o, n))| {
            let metric = match scenario.test {
                TestKind::Latency => "p50_us",
                TestKind::Throughput => "samples_per_s",
            };
            let (old_v, new_v) = (o.flatten(), n.flatten());
            let delta_pct = match (old_v, new_v) {
                (Some(a), Some(b)) if a > 0.0 => Some((b - a) / a * 100.0),
                _ => None,
            };
            let verdict = match (o, n, delta_pct) {
                (Some(_), None, _) => Verdict::OnlyOld,
                (None, Some(_), _) => Verdict::OnlyNew,
                (_, _, None) => Verdict::Missing,
                (_, _, Some(d)) => match scenario.test {
                    TestKind::Latency if d > th.latency_pct => Verdict::Regressed,
                    TestKind::Latency if d < -th.latency_pct => Verdict::Improved,
                    TestKind::Throughput if d < -th.throughput_pct => Verdict::Regressed,
                    TestKind::Throughput if d > th.throughput_pct => Verdict::Improved,
                    _ => Verdict::Same,
                },
            };
            CompareRow {
                scenario,
                metric,
                old: old_v,
                new: new_v,
                delta_pct,
                verdict,
            }
        })
        .collect();
    let warnings = mismatches(old, new, &rows);
    Comparison {
        thresholds: th,
        rows,
        warnings,
    }
}

/// Differences between the two runs that make their numbers hard to compare.
fn mismatches(old: &Summary, new: &Summary, rows: &[CompareRow]) -> Vec<String> {
    let mut w = Vec::new();
    let mut differ = |what: &str, a: String, b: String| {
        if a != b {
            w.push(format!("{what} differs: old {a:?}, new {b:?}"));
        }
    };
    let (o, n) = (&old.settings, &new.settings);
    differ("topology", o.topology.clone(), n.topology.clone());
    differ(
        "execution time (s)",
        o.execution_time_s.to_string(),
        n.execution_time_s.to_string(),
    );
    differ("CPU pinning", o.cpu_pin.clone(), n.cpu_pin.clone());
    differ("quick mode", o.quick.to_string(), n.quick.to_string());
    differ("host", old.host.hostname.clone(), new.host.hostname.clone());
    differ(
        "CPU model",
        old.host.cpu_model.clone(),
        new.host.cpu_model.clone(),
    );
    let common = rows
        .iter()
        .filter(|r| !matches!(r.verdict, Verdict::OnlyOld | Verdict::OnlyNew))
        .count();
    if common == 0 {
        w.push("the two runs have no scenario in common: nothing was compared".into());
    }
    w
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "-".into())
}

/// A fixed-width table for the console.
pub fn console_table(c: &Comparison) -> String {
    let mut s = String::new();
    for w in &c.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    let _ = writeln!(
        s,
        "{:<44} {:<10} {:>9} {:>14} {:>14} {:>9}  verdict",
        "configuration", "test", "size B", "old", "new", "delta %"
    );
    for r in &c.rows {
        let _ = writeln!(
            s,
            "{:<44} {:<10} {:>9} {:>14} {:>14} {:>9}  {}",
            r.scenario.config_label(),
            r.scenario.test.name(),
            r.scenario.size,
            opt(r.old, 1),
            opt(r.new, 1),
            opt(r.delta_pct, 1),
            r.verdict.name()
        );
    }
    s
}

/// Writes `compare.csv` and `compare.html` into `dir`.
pub fn write_outputs(dir: &Path, c: &Comparison, old: &Path, new: &Path) -> Result<(), LabError> {
    std::fs::create_dir_all(dir).map_err(|e| LabError::io(dir, e))?;
    let csv_path = dir.join(COMPARE_CSV);
    let csv_err = |source| LabError::Csv {
        path: csv_path.clone(),
        source,
    };
    let mut w = csv::Writer::from_path(&csv_path).map_err(csv_err)?;
    w.write_record([
        "system",
        "test",
        "reliability",
        "keyed",
        "batching",
        "transport",
        "capture",
        "size_bytes",
        "metric",
        "old",
        "new",
        "delta_pct",
        "verdict",
    ])
    .map_err(csv_err)?;
    for r in &c.rows {
        let s = &r.scenario;
        w.write_record([
            s.system.name().to_string(),
            s.test.name().to_string(),
            s.reliability.name().to_string(),
            s.keyed.to_string(),
            s.batching.to_string(),
            s.transport.name().to_string(),
            s.capture.name().to_string(),
            s.size.to_string(),
            r.metric.to_string(),
            r.old.map(|v| v.to_string()).unwrap_or_default(),
            r.new.map(|v| v.to_string()).unwrap_or_default(),
            r.delta_pct.map(|v| format!("{v:.2}")).unwrap_or_default(),
            r.verdict.name().to_string(),
        ])
        .map_err(csv_err)?;
    }
    w.flush().map_err(|e| LabError::io(&csv_path, e))?;

    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>FerroDDS lab comparison</title><style>{}</style></head><body>",
        crate::report::CSS
    );
    let _ = write!(
        h,
        "<h1>Lab comparison</h1><p>Old: <code>{}</code><br>New: <code>{}</code></p><p>Regression thresholds: p50 latency +{}&nbsp;%, throughput −{}&nbsp;%. <b>{} regression(s).</b></p>",
        html_escape(&old.display().to_string()),
        html_escape(&new.display().to_string()),
        c.thresholds.latency_pct,
        c.thresholds.throughput_pct,
        c.regressions()
    );
    for w in &c.warnings {
        let _ = write!(h, "<p class=\"bad\">Warning: {}</p>", html_escape(w));
    }
    h.push_str("<table><tr><th>configuration</th><th>test</th><th>size (B)</th><th>metric</th><th>old</th><th>new</th><th>delta %</th><th>verdict</th></tr>");
    for r in &c.rows {
        let class = match r.verdict {
            Verdict::Regressed => " class=\"bad\"",
            Verdict::Improved => " class=\"good\"",
            _ => "",
        };
        let _ = write!(
            h,
            "<tr{class}><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            html_escape(&r.scenario.config_label()),
            r.scenario.test.name(),
            r.scenario.size,
            r.metric,
            opt(r.old, 1),
            opt(r.new, 1),
            opt(r.delta_pct, 1),
            r.verdict.name()
        );
    }
    h.push_str("</table></body></html>\n");
    let hp = dir.join(COMPARE_HTML);
    std::fs::write(&hp, h).map_err(|e| LabError::io(&hp, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::{Reliability, System, Transport};
    use crate::record::{aggregate, LatencyStats, RunRecord, RunStatus, ThroughputStats};

    fn rec(test: TestKind, size: u64, v: f64) -> RunRecord {
        RunRecord {
            pub_cpu_s: None,
            udp_datagrams: None,
            capture_frames: None,
            run_index: 0,
            repetition: 0,
            scenario: Scenario {
                multicast: false,
                subscribers: 1,
                system: System::Ferrodds,
                test,
                reliability: Reliability::Reliable,
                keyed: false,
                batching: false,
                transport: Transport::Udpv4,
                size,
                capture: Default::default(),
                language: Default::default(),
                security: None,
            },
            topology: "loopback".into(),
            execution_time_s: 1,
            status: RunStatus::Ok,
            duration_s: 1.0,
            latency: Some(LatencyStats {
                p50_us: v,
                ..Default::default()
            }),
            throughput: Some(ThroughputStats {
                samples_per_s: v,
                ..Default::default()
            }),
            error: String::new(),
            pub_command: String::new(),
            sub_command: String::new(),
            stderr_tail: String::new(),
        }
    }

    fn summary(runs: Vec<RunRecord>) -> Summary {
        Summary {
            lab_version: String::new(),
            started_unix_s: 0,
            finished_unix_s: 0,
            host: Default::default(),
            settings: Default::default(),
            planned_runs: runs.len(),
            runs_ok: runs.len(),
            runs_failed: 0,
            runs_not_started: 0,
            interrupted: false,
            notes: vec![],
            aggregates: aggregate(&runs),
            runs,
        }
    }

    #[test]
    fn flags_regressions_both_ways() {
        let old = summary(vec![
            rec(TestKind::Latency, 32, 10.0),
            rec(TestKind::Latency, 64, 10.0),
            rec(TestKind::Throughput, 32, 1000.0),
            rec(TestKind::Throughput, 64, 1000.0),
            rec(TestKind::Throughput, 128, 1000.0),
        ]);
        let new = summary(vec![
            rec(TestKind::Latency, 32, 11.5),      // +15 % latency: regression
            rec(TestKind::Latency, 64, 10.5),      // +5 %: same
            rec(TestKind::Throughput, 32, 850.0),  // −15 %: regression
            rec(TestKind::Throughput, 64, 1200.0), // +20 %: improved
            rec(TestKind::Throughput, 256, 1.0),   // only new
        ]);
        let c = compare(&old, &new, Thresholds::default());
        let v: Vec<(TestKind, u64, Verdict)> = c
            .rows
            .iter()
            .map(|r| (r.scenario.test, r.scenario.size, r.verdict))
            .collect();
        assert!(v.contains(&(TestKind::Latency, 32, Verdict::Regressed)));
        assert!(v.contains(&(TestKind::Latency, 64, Verdict::Same)));
        assert!(v.contains(&(TestKind::Throughput, 32, Verdict::Regressed)));
        assert!(v.contains(&(TestKind::Throughput, 64, Verdict::Improved)));
        assert!(v.contains(&(TestKind::Throughput, 128, Verdict::OnlyOld)));
        assert!(v.contains(&(TestKind::Throughput, 256, Verdict::OnlyNew)));
        assert_eq!(c.regressions(), 2);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let t = console_table(&c);
        assert_eq!(t.matches("REGRESSED").count(), 2);

        let dir = std::env::temp_dir().join(format!("lab-compare-{}", std::process::id()));
        write_outputs(&dir, &c, Path::new("old"), Path::new("new")).unwrap();
        let csv = std::fs::read_to_string(dir.join(COMPARE_CSV)).unwrap();
        assert_eq!(csv.lines().count(), 1 + c.rows.len());
        assert!(csv.contains("15.00,REGRESSED"));
        let html = std::fs::read_to_string(dir.join(COMPARE_HTML)).unwrap();
        assert_eq!(html.matches("class=\"bad\"").count(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn mismatched_runs_are_reported() {
        let old = summary(vec![rec(TestKind::Latency, 32, 10.0)]);
        let mut new = summary(vec![rec(TestKind::Latency, 32, 30.0)]);
        new.settings.topology = "netns loss 10%".into();
        new.settings.execution_time_s = 60;
        let c = compare(&old, &new, Thresholds::default());
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        assert!(c.warnings[0].contains("topology"));
        assert!(c.warnings[1].contains("execution time"));
        assert!(console_table(&c).starts_with("warning: topology differs"));

        let other = summary(vec![rec(TestKind::Throughput, 64, 1.0)]);
        let c = compare(&old, &other, Thresholds::default());
        assert_eq!(c.regressions(), 0);
        assert!(c
            .warnings
            .iter()
            .any(|w| w.contains("no scenario in common")));
    }

    #[test]
    fn thresholds_must_be_non_negative_and_finite() {
        assert!(Thresholds::default().validate().is_ok());
        for (l, t) in [(-5.0, 10.0), (10.0, f64::NAN), (f64::INFINITY, 1.0)] {
            let th = Thresholds {
                latency_pct: l,
                throughput_pct: t,
            };
            assert!(th.validate().is_err(), "{l} {t}");
        }
    }
}
