//! Result printing: CSV (default), JSON and legacy formats of RTI Perftest (spec 3), plus
//! the CPU monitor and the `-latencyFile` dump.
//!
//! Results go to a [`Write`] sink (stdout or the `-outputFile`, opened for append);
//! progress text goes to stderr elsewhere. Header units use the UTF-8 "μ"; rows are
//! ASCII with the exact printf widths of the reference implementation.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use crate::options::OutputFormat;
use crate::stats::{LatencyInterval, LatencySummary, ThroughputInterval, ThroughputSummary};

const LAT_INTERVAL_COLUMNS: &str =
    "Length (Bytes), Latency (μs), Ave (μs), Std (μs), Min (μs), Max (μs)";
const LAT_SUMMARY_COLUMNS: &str = "Sample Size (Bytes), Ave (μs), Std (μs), Min (μs), Max (μs), 50% (μs), 90% (μs), 99% (μs), 99.99% (μs), 99.9999% (μs)";
const THR_INTERVAL_COLUMNS: &str = "Length (Bytes), Total Samples,  Samples/s, Avg Samples/s,     Mbps,  Avg Mbps, Lost Samples, Lost Samples (%)";
const THR_SUMMARY_COLUMNS: &str =
    "Sample Size (Bytes), Total Samples, Avg Samples/s,    Avg Mbps, Lost Samples, Lost Samples (%)";

/// Formats a float like C's `%.{prec}f`, never printing `NaN`/`inf` (they become 0).
fn f(v: f64, width: usize, prec: usize) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    format!("{v:>width$.prec$}")
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrinterConfig {
    /// Format.
    pub format: OutputFormat,
    /// Interval rows are printed (not `-noPrintIntervals`).
    pub print_intervals: bool,
    /// Header lines are printed (not `-noOutputHeaders`).
    pub print_headers: bool,
    /// A CPU column is added (`-cpu`).
    pub cpu: bool,
}

#[derive(Debug, Default)]
struct JsonState {
    started: bool,
    sizes: u64,
    size_open: bool,
    intervals_open: bool,
    intervals: u64,
}

/// Prints headers, interval rows and summaries in the configured format.
pub struct Printer {
    cfg: PrinterConfig,
    out: Box<dyn Write + Send>,
    lat_summary_header_done: bool,
    thr_summary_header_done: bool,
    legacy_size: Option<u64>,
    json: JsonState,
    last_flush: Instant,
}

impl std::fmt::Debug for Printer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printer").field("cfg", &self.cfg).finish()
    }
}

impl Printer {
    /// A printer writing to `out`.
    pub fn new(cfg: PrinterConfig, out: Box<dyn Write + Send>) -> Self {
        Printer {
            cfg,
            out,
            lat_summary_header_done: false,
            thr_summary_header_done: false,
            legacy_size: None,
            json: JsonState::default(),
            last_flush: Instant::now(),
        }
    }

    fn cpu_suffix(&self, cpu: Option<f64>) -> String {
        match (self.cfg.cpu, self.cfg.format) {
            (false, _) => String::new(),
            (true, OutputFormat::Legacy) => format!(" CPU {} (%)", f(cpu.unwrap_or(0.0), 1, 2)),
            (true, _) => format!(",{}", f(cpu.unwrap_or(0.0), 8, 2)),
        }
    }

    fn cpu_header(&self) -> &'static str {
        if self.cfg.cpu {
            ", CPU (%)"
        } else {
            ""
        }
    }

    fn maybe_flush(&mut self) -> io::Result<()> {
        if self.last_flush.elapsed() >= Duration::from_millis(100) {
            self.last_flush = Instant::now();
            self.out.flush()?;
        }
        Ok(())
    }

    /// Whether interval rows are printed (not `-noPrintIntervals`).
    pub fn prints_intervals(&self) -> bool {
        self.cfg.print_intervals
    }

    /// Flushes the sink.
    pub fn flush(&mut self) -> io::Result<()> {
        self.last_flush = Instant::now();
        self.out.flush()
    }

    /// The legacy "New data length" line: like RTI, only when both headers and intervals
    /// are printed (so never under `-noPrintIntervals`).
    fn legacy_header(&mut self, data_len: u64) -> io::Result<()> {
        if self.legacy_size != Some(data_len) {
            self.legacy_size = Some(data_len);
            if self.cfg.print_headers && self.cfg.print_intervals {
                writeln!(self.out, "\n\n********** New data length is {data_len}")?;
            }
        }
        Ok(())
    }

    // ---- JSON plumbing ----

    fn json_start(&mut self) -> io::Result<()> {
        if !self.json.started {
            self.json.started = true;
            write!(self.out, "{{\"perftest\":\n\t[\n")?;
        }
        Ok(())
    }

    fn json_close_size(&mut self) -> io::Result<()> {
        if self.json.intervals_open {
            write!(self.out, "\n\t\t\t]")?;
            self.json.intervals_open = false;
        }
        if self.json.size_open {
            write!(self.out, "\n\t\t}}")?;
            self.json.size_open = false;
        }
        Ok(())
    }

    fn json_open_size(&mut self, data_len: u64) -> io::Result<()> {
        self.json_start()?;
        self.json_close_size()?;
        if self.json.sizes > 0 {
            writeln!(self.out, ",")?;
        }
        self.json.sizes += 1;
        self.json.size_open = true;
        self.json.intervals = 0;
        write!(self.out, "\t\t{{\n\t\t\t\"length\":{data_len}")
    }

    fn json_interval(&mut self, data_len: u64, fields: &[(&str, String)]) -> io::Result<()> {
        if !self.json.size_open {
            self.json_open_size(data_len)?;
        }
        if !self.json.intervals_open {
            if self.json.intervals > 0 {
                // A summary closed the previous interval list of this size: start a new size.
                self.json_open_size(data_len)?;
            }
            // RTI starts every interval object with a newline: a blank line follows `[`.
            write!(self.out, ",\n\t\t\t\"intervals\":[\n\n")?;
            self.json.intervals_open = true;
        } else {
            writeln!(self.out, ",")?;
        }
        self.json.intervals += 1;
        writeln!(self.out, "\t\t\t\t{{")?;
        write_json_fields(&mut self.out, fields, "\t\t\t\t\t")?;
        write!(self.out, "\t\t\t\t}}")
    }

    /// The summary object of a size. `tight_close` reproduces RTI's throughput summary, which
    /// closes the interval list without a newline before its tabs (`}\t\t\t],`).
    fn json_summary(
        &mut self,
        data_len: u64,
        fields: &[(&str, String)],
        tight_close: bool,
    ) -> io::Result<()> {
        if !self.json.size_open {
            self.json_open_size(data_len)?;
        }
        if self.json.intervals_open {
            if tight_close {
                writeln!(self.out, "\t\t\t],")?;
            } else {
                write!(self.out, "\n\t\t\t],\n")?;
            }
            self.json.intervals_open = false;
        } else {
            writeln!(self.out, ",")?;
        }
        writeln!(self.out, "\t\t\t\"summary\":{{")?;
        write_json_fields(&mut self.out, fields, "\t\t\t\t")?;
        write!(self.out, "\t\t\t}}")?;
        self.json_close_size()?;
        self.flush()
    }

    // ---- latency (publisher) ----

    /// Called on the first pong of a data size.
    pub fn latency_header(&mut self, data_len: u64) -> io::Result<()> {
        match self.cfg.format {
            OutputFormat::Csv => {
                if self.cfg.print_headers && self.cfg.print_intervals {
                    write!(
                        self.out,
                        "\nIntervals One-Way Latency for {data_len} Bytes:\n{LAT_INTERVAL_COLUMNS}{}\n",
                        self.cpu_header()
                    )?;
                }
                Ok(())
            }
            OutputFormat::Legacy => self.legacy_header(data_len),
            OutputFormat::Json => self.json_open_size(data_len),
        }
    }

    /// One row per pong (unless intervals are off).
    pub fn latency_interval(&mut self, r: &LatencyInterval) -> io::Result<()> {
        if !self.cfg.print_intervals {
            return Ok(());
        }
        let cpu = self.cpu_suffix(r.cpu);
        match self.cfg.format {
            OutputFormat::Csv => writeln!(
                self.out,
                "{:>14},{:>13},{},{},{:>9},{:>9}{cpu}",
                r.data_len,
                r.latency,
                f(r.ave, 9, 0),
                f(r.std, 9, 1),
                r.min,
                r.max
            )?,
            OutputFormat::Legacy => {
                self.legacy_header(r.data_len)?;
                writeln!(
                    self.out,
                    "One-Way Latency: {:>6} μs Ave {} μs Std {} μs Min {:>6} μs Max {:>6} μs{cpu}",
                    r.latency,
                    f(r.ave, 6, 0),
                    f(r.std, 6, 1),
                    r.min,
                    r.max
                )?
            }
            OutputFormat::Json => {
                let mut fields = vec![
                    ("latency", r.latency.to_string()),
                    ("latency_ave", f(r.ave, 1, 2)),
                    ("latency_std", f(r.std, 1, 2)),
                    ("latency_min", r.min.to_string()),
                    ("latency_max", r.max.to_string()),
                ];
                if self.cfg.cpu {
                    fields.push(("CPU", f(r.cpu.unwrap_or(0.0), 1, 2)));
                }
                self.json_interval(r.data_len, &fields)?
            }
        }
        self.maybe_flush()
    }

    /// The latency summary of one size.
    pub fn latency_summary(&mut self, s: &LatencySummary) -> io::Result<()> {
        let cpu = self.cpu_suffix(s.cpu);
        match self.cfg.format {
            OutputFormat::Csv => {
                if self.cfg.print_headers
                    && (self.cfg.print_intervals || !self.lat_summary_header_done)
                {
                    if self.cfg.print_intervals {
                        write!(self.out, "\nOne-way Latency Summary:\n")?;
                    }
                    writeln!(self.out, "{LAT_SUMMARY_COLUMNS}{}", self.cpu_header())?;
                    self.lat_summary_header_done = true;
                }
                writeln!(
                    self.out,
                    "{:>19},{},{},{:>9},{:>9},{:>9},{:>9},{:>9},{:>12},{:>14}{cpu}",
                    s.data_len,
                    f(s.ave, 9, 0),
                    f(s.std, 9, 1),
                    s.min,
                    s.max,
                    s.p50,
                    s.p90,
                    s.p99,
                    s.p9999,
                    s.p999999
                )?;
            }
            OutputFormat::Legacy => {
                self.legacy_header(s.data_len)?;
                writeln!(
                    self.out,
                    "Length: {:>5} Latency: Ave {} μs Std {} μs Min {:>6} μs Max {:>6} μs 50% {:>6} μs 90% {:>6} μs 99% {:>6} μs 99.99% {:>6} μs 99.9999% {:>6} μs{cpu}",
                    s.data_len,
                    f(s.ave, 6, 0),
                    f(s.std, 6, 1),
                    s.min,
                    s.max,
                    s.p50,
                    s.p90,
                    s.p99,
                    s.p9999,
                    s.p999999
                )?;
            }
            OutputFormat::Json => {
                let mut fields = vec![
                    ("latency_ave", f(s.ave, 1, 2)),
                    ("latency_std", f(s.std, 1, 2)),
                    ("latency_min", s.min.to_string()),
                    ("latency_max", s.max.to_string()),
                    ("latency_50", s.p50.to_string()),
                    ("latency_90", s.p90.to_string()),
                    ("latency_99", s.p99.to_string()),
                    ("latency_99.99", s.p9999.to_string()),
                    ("latency_99.9999", s.p999999.to_string()),
                ];
                if self.cfg.cpu {
                    fields.push(("CPU", f(s.cpu.unwrap_or(0.0), 1, 2)));
                }
                return self.json_summary(s.data_len, &fields, false);
            }
        }
        self.flush()
    }

    // ---- throughput (subscriber) ----

    /// Called on the first sample of a data size.
    pub fn throughput_header(&mut self, data_len: u64) -> io::Result<()> {
        match self.cfg.format {
            OutputFormat::Csv => {
                if self.cfg.print_headers && self.cfg.print_intervals {
                    write!(
                        self.out,
                        "\nInterval Throughput for {data_len} Bytes:\n{THR_INTERVAL_COLUMNS}{}\n",
                        self.cpu_header()
                    )?;
                }
                Ok(())
            }
            OutputFormat::Legacy => self.legacy_header(data_len),
            OutputFormat::Json => self.json_open_size(data_len),
        }
    }

    /// One row per second (unless intervals are off).
    pub fn throughput_interval(&mut self, r: &ThroughputInterval) -> io::Result<()> {
        if !self.cfg.print_intervals {
            return Ok(());
        }
        let cpu = self.cpu_suffix(r.cpu);
        match self.cfg.format {
            OutputFormat::Csv => writeln!(
                self.out,
                "{:>14},{:>14},{:>11},{},{},{}, {:>12}, {}{cpu}",
                r.data_len,
                r.total_samples,
                r.samples_per_sec,
                f(r.avg_samples_per_sec, 14, 0),
                f(r.mbps, 9, 1),
                f(r.avg_mbps, 10, 1),
                r.lost,
                f(r.lost_percent, 16, 2)
            )?,
            OutputFormat::Legacy => {
                self.legacy_header(r.data_len)?;
                writeln!(
                    self.out,
                    "Packets: {:>8}  Packets/s: {:>7}  Packets/s(ave): {}  Mbps: {}  Mbps(ave): {}  Lost: {:>5} ({}%){cpu}",
                    r.total_samples,
                    r.samples_per_sec,
                    f(r.avg_samples_per_sec, 7, 0),
                    f(r.mbps, 7, 1),
                    f(r.avg_mbps, 7, 1),
                    r.lost,
                    f(r.lost_percent, 1, 2)
                )?
            }
            OutputFormat::Json => {
                let mut fields = vec![
                    ("length", r.data_len.to_string()),
                    ("packets", r.total_samples.to_string()),
                    ("packets/s", r.samples_per_sec.to_string()),
                    ("packets/s_ave", f(r.avg_samples_per_sec, 1, 2)),
                    ("mbps", f(r.mbps, 1, 1)),
                    ("mbps_ave", f(r.avg_mbps, 1, 1)),
                    ("lost", r.lost.to_string()),
                    ("lost_percent", f(r.lost_percent, 1, 2)),
                ];
                if self.cfg.cpu {
                    fields.push(("CPU", f(r.cpu.unwrap_or(0.0), 1, 2)));
                }
                self.json_interval(r.data_len, &fields)?
            }
        }
        self.flush()
    }

    /// The throughput summary of one size.
    pub fn throughput_summary(&mut self, s: &ThroughputSummary) -> io::Result<()> {
        let cpu = self.cpu_suffix(s.cpu);
        match self.cfg.format {
            OutputFormat::Csv => {
                if self.cfg.print_headers
                    && (self.cfg.print_intervals || !self.thr_summary_header_done)
                {
                    if self.cfg.print_intervals {
                        write!(self.out, "\nThroughput Summary:\n")?;
                    }
                    writeln!(self.out, "{THR_SUMMARY_COLUMNS}{}", self.cpu_header())?;
                    self.thr_summary_header_done = true;
                }
                // `%14.0llu` prints nothing but padding for 0.
                let rate = if s.samples_per_sec == 0 {
                    " ".repeat(14)
                } else {
                    format!("{:>14}", s.samples_per_sec)
                };
                writeln!(
                    self.out,
                    "{:>19},{:>14},{rate},{}, {:>12}, {}{cpu}",
                    s.data_len,
                    s.total_samples,
                    f(s.mbps, 12, 1),
                    s.lost,
                    f(s.lost_percent, 16, 2)
                )?;
            }
            OutputFormat::Legacy => {
                self.legacy_header(s.data_len)?;
                writeln!(
                    self.out,
                    "Length: {:>5}  Packets: {:>8}  Packets/s(ave): {:>7}  Mbps(ave): {}  Lost: {:>5} ({}%){cpu}",
                    s.data_len,
                    s.total_samples,
                    s.samples_per_sec,
                    f(s.mbps, 7, 1),
                    s.lost,
                    f(s.lost_percent, 1, 2)
                )?;
            }
            OutputFormat::Json => {
                let mut fields = vec![
                    ("packets", s.total_samples.to_string()),
                    ("packets/sAve", s.samples_per_sec.to_string()),
                    ("mbpsAve", f(s.mbps, 1, 1)),
                    ("lost", s.lost.to_string()),
                    ("lostPercent", f(s.lost_percent, 1, 2)),
                ];
                if self.cfg.cpu {
                    fields.push(("CPU", f(s.cpu.unwrap_or(0.0), 1, 2)));
                }
                return self.json_summary(s.data_len, &fields, true);
            }
        }
        self.flush()
    }

    /// Ends the output (closes the JSON document) and flushes.
    pub fn finish(&mut self) -> io::Result<()> {
        if self.cfg.format == OutputFormat::Json {
            self.json_start()?;
            self.json_close_size()?;
            if self.json.sizes > 0 {
                writeln!(self.out)?;
            }
            write!(self.out, "\t]\n}}\n")?;
            self.json = JsonState {
                started: false,
                ..JsonState::default()
            };
        }
        self.flush()
    }
}

fn write_json_fields(
    out: &mut Box<dyn Write + Send>,
    fields: &[(&str, String)],
    indent: &str,
) -> io::Result<()> {
    for (i, (k, v)) in fields.iter().enumerate() {
        let sep = if i + 1 < fields.len() { "," } else { "" };
        writeln!(out, "{indent}\"{k}\": {v}{sep}")?;
    }
    Ok(())
}

/// Writes the `-latencyFile` dump: `Sample Number, Value`, one line per value, blank line.
pub fn write_latency_file(out: &mut dyn Write, values: &[u32]) -> io::Result<()> {
    writeln!(out, "Sample Number, Value")?;
    for (i, v) in values.iter().enumerate() {
        writeln!(out, "{i}, {v}")?;
    }
    writeln!(out)
}

/// Process CPU usage as a share of the whole machine (spec 3.4).
#[derive(Debug)]
pub struct CpuMonitor {
    last_cpu: Duration,
    last_wall: Instant,
    ncpu: f64,
    readings: Vec<f64>,
}

fn process_cpu_time() -> Duration {
    use nix::sys::resource::{getrusage, UsageWho};
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(u) => {
            let tv = |t: nix::sys::time::TimeVal| {
                Duration::from_secs(t.tv_sec().max(0) as u64)
                    + Duration::from_micros(t.tv_usec().max(0) as u64)
            };
            tv(u.user_time()) + tv(u.system_time())
        }
        Err(_) => Duration::ZERO,
    }
}

/// Number of online processors of the machine, as RTI divides by (spec 3.4): not the CPUs
/// this process is pinned to, so a pinned run still reports its share of the whole machine.
pub fn online_processors() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|l| count_cpu_list(l.trim()))
        .filter(|n| *n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Counts the CPUs of a kernel CPU list (`0-3,6,8-9`).
fn count_cpu_list(list: &str) -> Option<usize> {
    let mut n = 0;
    for item in list.split(',') {
        n += match item.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.parse::<usize>().ok()?, b.parse::<usize>().ok()?);
                b.checked_sub(a)? + 1
            }
            None => {
                item.parse::<usize>().ok()?;
                1
            }
        };
    }
    Some(n)
}

impl Default for CpuMonitor {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuMonitor {
    /// Starts measuring now.
    pub fn new() -> Self {
        CpuMonitor {
            last_cpu: process_cpu_time(),
            last_wall: Instant::now(),
            ncpu: online_processors() as f64,
            readings: Vec::new(),
        }
    }

    /// CPU % since the previous reading; remembered for the next summary.
    pub fn interval(&mut self) -> f64 {
        let cpu = process_cpu_time();
        let now = Instant::now();
        let wall = now.saturating_duration_since(self.last_wall).as_secs_f64();
        let used = cpu.saturating_sub(self.last_cpu).as_secs_f64();
        self.last_cpu = cpu;
        self.last_wall = now;
        // getrusage advances in scheduler ticks, so over a short interval the CPU time can
        // read slightly more than wall time × processors: a share of the machine is at most
        // 100 %.
        let pct = if wall > 0.0 {
            (used / wall / self.ncpu * 100.0).min(100.0)
        } else {
            0.0
        };
        self.readings.push(pct);
        pct
    }

    /// Mean of the interval readings since the last summary (one fresh reading if none).
    pub fn summary(&mut self) -> f64 {
        if self.readings.is_empty() {
            self.interval();
        }
        let mean = self.readings.iter().sum::<f64>() / self.readings.len() as f64;
        self.readings.clear();
        mean
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A sink shared with the test.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn float_never_nan() {
        assert_eq!(f(f64::NAN, 5, 1), "  0.0");
        assert_eq!(f(2.5, 1, 0), "2");
        assert_eq!(f(7.45, 9, 1), "      7.5");
    }

    #[test]
    fn cpu_suffixes() {
        let sink = Sink::default();
        let mut p = Printer::new(
            PrinterConfig {
                format: OutputFormat::Csv,
                print_intervals: false,
                print_headers: true,
                cpu: true,
            },
            Box::new(sink.clone()),
        );
        p.throughput_summary(&ThroughputSummary {
            data_len: 32,
            total_samples: 0,
            samples_per_sec: 0,
            mbps: 0.0,
            lost: 0,
            lost_percent: 0.0,
            cpu: Some(12.5),
        })
        .unwrap();
        let s = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            s,
            format!(
                "{THR_SUMMARY_COLUMNS}, CPU (%)\n                 32,             0,              ,         0.0,            0,             0.00,   12.50\n"
            )
        );
    }

    #[test]
    fn cpu_share_is_of_all_processors_even_when_pinned() {
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("0-3,6,8-9"), Some(7));
        assert_eq!(count_cpu_list("x"), None);
        let all = online_processors();
        assert!(all >= 1);
        // Pin a thread to one CPU: the monitor it creates still divides by every processor.
        let ncpu = std::thread::spawn(|| {
            let me = nix::unistd::Pid::from_raw(0);
            let allowed = nix::sched::sched_getaffinity(me).unwrap();
            let first = (0..nix::sched::CpuSet::count())
                .find(|&c| allowed.is_set(c).unwrap_or(false))
                .unwrap();
            let mut one = nix::sched::CpuSet::new();
            one.set(first).unwrap();
            nix::sched::sched_setaffinity(me, &one).unwrap();
            assert_eq!(std::thread::available_parallelism().unwrap().get(), 1);
            CpuMonitor::new().ncpu
        })
        .join()
        .unwrap();
        assert_eq!(ncpu, all as f64);
    }

    #[test]
    fn cpu_monitor_is_bounded() {
        let mut m = CpuMonitor::new();
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        assert!(x > 0);
        let v = m.interval();
        assert!((0.0..=100.0 + 1e-6).contains(&v), "{v}");
        let s = m.summary();
        assert!((0.0..=100.0 + 1e-6).contains(&s));
    }
}
