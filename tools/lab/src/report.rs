//! The static HTML report: inline SVG plots drawn with `plotters`, inline CSS, no script and
//! no network access needed to view it.
//!
//! Plots (size axis logarithmic throughout; value axis linear and logarithmic): one-way latency
//! median and p99, throughput in Mbps and samples/s, lost samples. One line per configuration
//! (system × reliability × keyed × batching), the same colour in every plot, vertical bars for
//! the min–max spread across repetitions, and the published Connext figures as a dashed grey
//! reference line when asked for.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::LabError;
use crate::matrix::{Capture, Language, Scenario, SecurityProfile, System, TestKind, Transport};
use crate::record::{Aggregate, RunStatus, Spread, Summary};
use crate::reference;

/// Inline stylesheet shared by the report and the comparison page.
pub const CSS: &str = "\
body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;margin:24px 32px;color:#222;background:#fff}\
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:28px 0 8px;border-bottom:2px solid #ddd;padding-bottom:4px}\
h3{font-size:16px;margin:18px 0 6px}\
table{border-collapse:collapse;font-size:13px;margin:6px 0 12px}\
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}\
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}\
tr.bad td{background:#fde2e2}tr.good td{background:#e2f5e2}\
.meta td:first-child{font-weight:bold;background:#fafafa}\
.plots{display:grid;grid-template-columns:repeat(2,650px);gap:14px}\
.plot{border:1px solid #ddd;padding:4px;background:#fff}\
.plot svg{display:block}\
.legend{display:flex;flex-wrap:wrap;gap:6px 18px;margin:8px 0 12px;font-size:13px}\
.legend span.sw{display:inline-block;width:26px;height:4px;margin-right:6px;vertical-align:middle}\
.legend span.ref{border-top:3px dashed #888;height:0;background:none}\
.empty{width:630px;height:120px;display:flex;align-items:center;justify-content:center;color:#888;border:1px dashed #ccc}\
pre{background:#f7f7f7;padding:6px;font-size:12px;white-space:pre-wrap;max-width:1360px}\
code{font-size:12px}.note{color:#555;font-size:13px}";

/// Plot size in pixels.
pub const PLOT_SIZE: (u32, u32) = (640, 400);

const PALETTE: [RGBColor; 14] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
    RGBColor(188, 189, 34),
    RGBColor(57, 59, 121),
    RGBColor(99, 121, 57),
    RGBColor(140, 109, 49),
    RGBColor(132, 60, 57),
    RGBColor(123, 65, 115),
];
/// Plots with more series than this rely on the page's legend only.
const LEGEND_MAX: usize = 7;
const REF_COLOR: RGBColor = RGBColor(120, 120, 120);
const REF_TCP_COLOR: RGBColor = RGBColor(60, 60, 60);
/// Label of the published TCP latency series.
const TCP_REFERENCE_LABEL: &str = "Connext (published: TCP 10 GbE, reliable, other hardware)";
const REF_CS_COLOR: RGBColor = RGBColor(120, 60, 140);
const CS_REFERENCE_LABEL: &str = "Connext C# (published: UDPv4 10 GbE, reliable, other hardware)";

/// Escapes text for HTML.
pub fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Formats a byte size for an axis label: 32, 1k, 64k, 1M, 10M.
pub fn fmt_size(x: f64) -> String {
    if x >= 1_048_576.0 {
        trim(x / 1_048_576.0, "M")
    } else if x >= 1024.0 {
        trim(x / 1024.0, "k")
    } else {
        format!("{x:.0}")
    }
}

fn trim(v: f64, unit: &str) -> String {
    if (v - v.round()).abs() < 0.05 {
        format!("{:.0}{unit}", v)
    } else {
        format!("{v:.1}{unit}")
    }
}

fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        trim(v / 1e9, "G")
    } else if a >= 1e6 {
        trim(v / 1e6, "M")
    } else if a >= 1e3 {
        trim(v / 1e3, "k")
    } else if a >= 100.0 || a == 0.0 || (a >= 1.0 && (v - v.round()).abs() < 1e-9) {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A series: one configuration's points (size, median, min, max).
#[derive(Clone, Debug)]
struct Series {
    label: String,
    color: RGBColor,
    system: Option<System>,
    points: Vec<(f64, f64, f64, f64)>,
    reference: bool,
}

/// Which metric a plot shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Metric {
    P50,
    P99,
    Mbps,
    SamplesPerS,
    LostPct,
}

impl Metric {
    fn test(self) -> TestKind {
        match self {
            Metric::P50 | Metric::P99 => TestKind::Latency,
            _ => TestKind::Throughput,
        }
    }
    fn of(self, a: &Aggregate) -> Option<Spread> {
        match self {
            Metric::P50 => a.p50_us,
            Metric::P99 => a.p99_us,
            Metric::Mbps => a.mbps,
            Metric::SamplesPerS => a.samples_per_s,
            Metric::LostPct => a.lost_pct,
        }
    }
    fn y_desc(self) -> &'static str {
        match self {
            Metric::P50 => "one-way latency, median (µs)",
            Metric::P99 => "one-way latency, p99 (µs)",
            Metric::Mbps => "throughput (Mbit/s)",
            Metric::SamplesPerS => "throughput (samples/s)",
            Metric::LostPct => "lost samples (%)",
        }
    }
}

/// Stable colour assignment: configurations sorted, then palette order.
fn colours(summary: &Summary) -> BTreeMap<String, RGBColor> {
    let mut labels: Vec<(System, String)> = summary
        .aggregates
        .iter()
        .map(|a| (a.scenario.system, a.scenario.config_label()))
        .collect();
    labels.sort();
    labels.dedup();
    labels
        .into_iter()
        .enumerate()
        .map(|(i, (_, l))| (l, PALETTE[i % PALETTE.len()]))
        .collect()
}

fn series_for(
    summary: &Summary,
    metric: Metric,
    colours: &BTreeMap<String, RGBColor>,
    with_reference: bool,
) -> Vec<Series> {
    let mut by: BTreeMap<String, Series> = BTreeMap::new();
    for a in summary
        .aggregates
        .iter()
        .filter(|a| a.scenario.test == metric.test())
    {
        let Some(sp) = metric.of(a) else { continue };
        let s = &a.scenario;
        let label = s.config_label();
        let color = colours.get(&label).copied().unwrap_or(PALETTE[0]);
        by.entry(label.clone())
            .or_insert_with(|| Series {
                label,
                color,
                system: Some(s.system),
                points: Vec::new(),
                reference: false,
            })
            .points
            .push((s.size as f64, sp.median, sp.min, sp.max));
    }
    let mut out: Vec<Series> = by.into_values().collect();
    for s in &mut out {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    if with_reference && !out.is_empty() {
        let pts: Vec<(f64, f64, f64, f64)> = match metric {
            Metric::P50 => reference::default_latency()
                .iter()
                .map(|r| (r.size as f64, r.p50_us, r.p50_us, r.p50_us))
                .collect(),
            Metric::P99 => reference::default_latency()
                .iter()
                .map(|r| (r.size as f64, r.p99_us, r.p99_us, r.p99_us))
                .collect(),
            Metric::Mbps => reference::default_throughput()
                .iter()
                .map(|r| (r.size as f64, r.mbps, r.mbps, r.mbps))
                .collect(),
            Metric::SamplesPerS => reference::default_throughput()
                .iter()
                .map(|r| {
                    (
                        r.size as f64,
                        r.samples_per_s,
                        r.samples_per_s,
                        r.samples_per_s,
                    )
                })
                .collect(),
            Metric::LostPct => Vec::new(),
        };
        if !pts.is_empty() {
            out.push(Series {
                label: reference_label(metric.test()).to_string(),
                color: REF_COLOR,
                system: None,
                points: pts,
                reference: true,
            });
        }
        // Runs over TCP: the published TCP latency too.
        let tcp = summary
            .aggregates
            .iter()
            .any(|a| a.scenario.transport == Transport::Tcp && a.scenario.test == metric.test());
        let tcp_pts: Vec<(f64, f64, f64, f64)> = match metric {
            Metric::P50 if tcp => reference::tcp_latency()
                .iter()
                .map(|r| (r.size as f64, r.p50_us, r.p50_us, r.p50_us))
                .collect(),
            Metric::P99 if tcp => reference::tcp_latency()
                .iter()
                .map(|r| (r.size as f64, r.p99_us, r.p99_us, r.p99_us))
                .collect(),
            _ => Vec::new(),
        };
        if !tcp_pts.is_empty() {
            out.push(Series {
                label: TCP_REFERENCE_LABEL.to_string(),
                color: REF_TCP_COLOR,
                system: None,
                points: tcp_pts,
                reference: true,
            });
        }
        // Runs of the C# perftest: the published C# latency too.
        let cs = summary
            .aggregates
            .iter()
            .any(|a| a.scenario.language == Language::Cs && a.scenario.test == metric.test());
        let cs_pts: Vec<(f64, f64, f64, f64)> = match metric {
            Metric::P50 if cs => reference::cs_latency()
                .iter()
                .map(|r| (r.size as f64, r.p50_us, r.p50_us, r.p50_us))
                .collect(),
            Metric::P99 if cs => reference::cs_latency()
                .iter()
                .map(|r| (r.size as f64, r.p99_us, r.p99_us, r.p99_us))
                .collect(),
            _ => Vec::new(),
        };
        if !cs_pts.is_empty() {
            out.push(Series {
                label: CS_REFERENCE_LABEL.to_string(),
                color: REF_CS_COLOR,
                system: None,
                points: cs_pts,
                reference: true,
            });
        }
    }
    out
}

fn reference_label(test: TestKind) -> &'static str {
    match test {
        TestKind::Latency => "Connext (published: UDPv4 10 GbE, reliable, other hardware)",
        TestKind::Throughput => {
            "Connext (published: UDPv4 10 GbE, best effort, batching, other hardware)"
        }
    }
}

fn plot_err<E: std::error::Error + Send + Sync>(plot: &str) -> impl Fn(E) -> LabError + '_ {
    move |e| LabError::Plot {
        plot: plot.to_string(),
        detail: e.to_string(),
    }
}

fn draw_body<Y>(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    metric: Metric,
    x: (f64, f64),
    y: Y,
    series: &[Series],
) -> Result<(), LabError>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let e = plot_err(title);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 19).into_font().color(&BLACK))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d((x.0..x.1).log_scale(), y)
        .map_err(&e)?;
    chart
        .configure_mesh()
        .x_desc("sample size (bytes, log scale)")
        .y_desc(metric.y_desc())
        .x_label_formatter(&|v| fmt_value(*v))
        .y_labels(7)
        .y_label_formatter(&|v| fmt_value(*v))
        .axis_desc_style(("sans-serif", 14))
        .label_style(("sans-serif", 12))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(&e)?;
    let legend_ok = series.len() <= LEGEND_MAX;
    for s in series {
        let color = s.color;
        let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (p.0, p.1)).collect();
        if s.reference {
            let anno = chart
                .draw_series(DashedLineSeries::new(
                    pts.clone(),
                    8,
                    5,
                    color.stroke_width(2),
                ))
                .map_err(&e)?;
            if legend_ok {
                // A dashed sample in the legend too.
                anno.label(s.label.clone()).legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + PathElement::new(vec![(0, 0), (6, 0)], color.stroke_width(2))
                        + PathElement::new(vec![(9, 0), (15, 0)], color.stroke_width(2))
                        + PathElement::new(vec![(18, 0), (22, 0)], color.stroke_width(2))
                });
            }
            continue;
        }
        let anno = chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(&e)?;
        if legend_ok {
            anno.label(s.label.clone()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(3))
            });
        }
        // Spread across repetitions.
        chart
            .draw_series(
                s.points
                    .iter()
                    .filter(|p| p.3 > p.2)
                    .map(|p| PathElement::new(vec![(p.0, p.2), (p.0, p.3)], color.stroke_width(1))),
            )
            .map_err(&e)?;
        match s.system {
            Some(System::Raw) => {
                chart
                    .draw_series(
                        pts.iter()
                            .map(|p| TriangleMarker::new(*p, 5, color.filled())),
                    )
                    .map_err(&e)?;
            }
            Some(System::Cyclone) => {
                chart
                    .draw_series(pts.iter().map(|p| {
                        EmptyElement::at(*p) + Rectangle::new([(-4, -4), (4, 4)], color.filled())
                    }))
                    .map_err(&e)?;
            }
            _ => {
                chart
                    .draw_series(pts.iter().map(|p| Circle::new(*p, 4, color.filled())))
                    .map_err(&e)?;
            }
        }
    }
    if legend_ok {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(190, 190, 190))
            .label_font(("sans-serif", 12))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(&e)?;
    }
    Ok(())
}

/// Draws one plot to an SVG string; `None` when there is nothing to draw.
fn plot_svg(
    title: &str,
    metric: Metric,
    log_y: bool,
    series: &[Series],
) -> Result<Option<String>, LabError> {
    let measured: Vec<&Series> = series.iter().filter(|s| !s.reference).collect();
    if measured.is_empty() {
        return Ok(None);
    }
    let xs = || measured.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (xmin, xmax) = (
        xs().fold(f64::INFINITY, f64::min),
        xs().fold(0.0_f64, f64::max),
    );
    let x = (xmin / 1.6, xmax * 1.6);
    // Reference points only inside the measured size range.
    let clipped: Vec<Series> = series
        .iter()
        .map(|s| {
            let mut s = s.clone();
            if s.reference {
                s.points.retain(|p| p.0 >= xmin && p.0 <= xmax);
            }
            s
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    let vals = || {
        clipped
            .iter()
            .flat_map(|s| s.points.iter().flat_map(|p| [p.1, p.2, p.3]))
            .filter(|v| v.is_finite())
    };
    let ymax = vals().fold(0.0_f64, f64::max);
    // Headroom at the top of the plot for the legend box, so it never covers data.
    let headroom = if clipped.len() <= LEGEND_MAX {
        ((clipped.len() as f64 * 16.0 + 18.0) / 300.0).min(0.6)
    } else {
        0.05
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, PLOT_SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err(title))?;
        if log_y {
            let ymin_pos = vals().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
            let (lo, hi) = if ymin_pos.is_finite() {
                let lo = ymin_pos / 1.6;
                let top = ymax.max(ymin_pos) * 1.3;
                (lo, lo * (top / lo).powf(1.0 / (1.0 - headroom)))
            } else {
                (0.01, 1.0)
            };
            draw_body(&root, title, metric, x, (lo..hi).log_scale(), &clipped)?;
        } else {
            let hi = if ymax > 0.0 {
                ymax * 1.05 / (1.0 - headroom)
            } else {
                1.0
            };
            let y: RangedCoordf64 = (0.0..hi).into();
            draw_body(&root, title, metric, x, y, &clipped)?;
        }
        root.present().map_err(plot_err(title))?;
    }
    Ok(Some(svg))
}

fn utc_date(unix: u64) -> String {
    if unix == 0 {
        return "unknown".into();
    }
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    // Civil-from-days (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        secs / 3600,
        (secs % 3600) / 60
    )
}

fn spread_cell(s: Option<Spread>, prec: usize) -> String {
    match s {
        None => "<td class=\"num\">–</td>".into(),
        Some(s) if s.max > s.min => format!(
            "<td class=\"num\">{:.prec$} <span class=\"note\">[{:.prec$}–{:.prec$}]</span></td>",
            s.median, s.min, s.max
        ),
        Some(s) => format!("<td class=\"num\">{:.prec$}</td>", s.median),
    }
}

/// Renders the whole report page.
pub fn render_html(summary: &Summary, with_reference: bool) -> Result<String, LabError> {
    let colours = colours(summary);
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>FerroDDS lab report</title><style>{CSS}</style></head><body>\n"
    );
    let st = &summary.settings;
    let _ = write!(
        h,
        "<h1>FerroDDS lab report</h1><p class=\"note\">Latency is one-way (round trip / 2) as perftest and ddsperf print it. Lines are medians across repetitions; vertical bars show the min–max spread.</p>"
    );
    h.push_str("<table class=\"meta\">");
    let mut meta = |k: &str, v: String| {
        let _ = write!(h, "<tr><td>{k}</td><td>{}</td></tr>", html_escape(&v));
    };
    meta("started", utc_date(summary.started_unix_s));
    meta(
        "host",
        format!(
            "{} — {} × {} — {}",
            summary.host.hostname, summary.host.cpus, summary.host.cpu_model, summary.host.kernel
        ),
    );
    meta("topology", st.topology.clone());
    meta(
        "CPU pinning",
        if st.cpu_pin.is_empty() {
            "none".into()
        } else {
            format!("taskset -c {} (both processes)", st.cpu_pin)
        },
    );
    meta(
        "runs",
        format!(
            "{} planned: {} ok, {} failed, {} not started{}",
            summary.planned_runs,
            summary.runs_ok,
            summary.runs_failed,
            summary.runs_not_started,
            if summary.interrupted {
                " — interrupted (Ctrl-C), partial results"
            } else {
                ""
            }
        ),
    );
    meta(
        "execution time",
        format!(
            "{} s per run, {} repetition(s){}",
            st.execution_time_s,
            st.repetitions,
            if st.quick { " (--quick)" } else { "" }
        ),
    );
    meta("lab command", st.command_line.clone());
    meta("perftest", st.perftest.clone());
    if !st.ddsperf.is_empty() {
        meta("ddsperf", st.ddsperf.clone());
    }
    h.push_str("</table>\n");
    if !summary.notes.is_empty() {
        h.push_str("<ul class=\"note\">");
        for n in &summary.notes {
            let _ = write!(h, "<li>{}</li>", html_escape(n));
        }
        h.push_str("</ul>\n");
    }

    // Legend shared by all plots.
    h.push_str("<h2>Configurations</h2><div class=\"legend\">");
    for (label, c) in &colours {
        let _ = write!(
            h,
            "<div><span class=\"sw\" style=\"background:rgb({},{},{})\"></span>{}</div>",
            c.0,
            c.1,
            c.2,
            html_escape(label)
        );
    }
    if with_reference {
        let _ = write!(
            h,
            "<div><span class=\"sw ref\"></span>published Connext figures (dashed; other hardware: compare shapes, not absolute values)</div>"
        );
        if summary
            .aggregates
            .iter()
            .any(|a| a.scenario.transport == Transport::Tcp && a.scenario.test == TestKind::Latency)
        {
            let _ = write!(
                h,
                "<div><span class=\"sw ref\"></span>{TCP_REFERENCE_LABEL} (darker dashed, latency plots)</div>"
            );
        }
        if summary
            .aggregates
            .iter()
            .any(|a| a.scenario.language == Language::Cs && a.scenario.test == TestKind::Latency)
        {
            let _ = write!(
                h,
                "<div><span class=\"sw ref\"></span>{CS_REFERENCE_LABEL} (purple dashed, latency plots)</div>"
            );
        }
    }
    h.push_str("</div><p class=\"note\">Markers: ● FerroDDS, ▲ raw UDP or TCP sockets (perftest -rawTransport), ■ Cyclone DDS ddsperf.</p>\n");

    let sections: [(&str, &[(Metric, &str)]); 3] = [
        (
            "Latency",
            &[
                (Metric::P50, "Latency, median"),
                (Metric::P99, "Latency, 99th percentile"),
            ],
        ),
        (
            "Throughput",
            &[
                (Metric::Mbps, "Throughput, Mbit/s"),
                (Metric::SamplesPerS, "Throughput, samples/s"),
            ],
        ),
        ("Lost samples", &[(Metric::LostPct, "Lost samples")]),
    ];
    for (name, plots) in sections {
        let _ = write!(h, "<h2>{name}</h2><div class=\"plots\">");
        for (metric, title) in plots {
            let series = series_for(summary, *metric, &colours, with_reference);
            let scales: &[(bool, &str)] = if *metric == Metric::LostPct {
                &[(false, "linear")]
            } else {
                &[(false, "linear"), (true, "log")]
            };
            for (log_y, scale) in scales {
                let t = format!("{title} ({scale} scale)");
                match plot_svg(&t, *metric, *log_y, &series)? {
                    Some(svg) => {
                        let _ = write!(h, "<div class=\"plot\">{svg}</div>");
                    }
                    None => {
                        let _ = write!(
                            h,
                            "<div class=\"empty\">{}: no successful runs</div>",
                            html_escape(&t)
                        );
                    }
                }
            }
        }
        h.push_str("</div>\n");
    }

    // Tables.
    h.push_str("<h2>Latency table (µs, median [min–max] over repetitions)</h2><table><tr><th>configuration</th><th>size (B)</th><th>runs ok/failed</th><th>p50</th><th>p99</th><th>mean</th></tr>");
    for a in summary
        .aggregates
        .iter()
        .filter(|a| a.scenario.test == TestKind::Latency)
    {
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}/{}</td>{}{}{}</tr>",
            html_escape(&a.scenario.config_label()),
            a.scenario.size,
            a.runs_ok,
            a.runs_failed,
            spread_cell(a.p50_us, 1),
            spread_cell(a.p99_us, 1),
            spread_cell(a.avg_us, 1)
        );
    }
    h.push_str("</table>\n");
    h.push_str("<h2>Throughput table (median [min–max] over repetitions)</h2><table><tr><th>configuration</th><th>size (B)</th><th>runs ok/failed</th><th>samples/s</th><th>Mbit/s</th><th>lost %</th><th>lost samples (sum)</th><th>samples per UDP datagram</th></tr>");
    for a in summary
        .aggregates
        .iter()
        .filter(|a| a.scenario.test == TestKind::Throughput)
    {
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}/{}</td>{}{}{}<td class=\"num\">{}</td>{}</tr>",
            html_escape(&a.scenario.config_label()),
            a.scenario.size,
            a.runs_ok,
            a.runs_failed,
            spread_cell(a.samples_per_s, 0),
            spread_cell(a.mbps, 1),
            spread_cell(a.lost_pct, 2),
            a.lost_samples_total,
            spread_cell(a.samples_per_datagram, 1)
        );
    }
    h.push_str("</table><p class=\"note\">Samples per UDP datagram: samples received over the UDP datagrams sent while the run lasted (<code>OutDatagrams</code> of <code>/proc/net/snmp</code>: on loopback all of this host's, acknowledgements and discovery included; in a netns testbed the publisher's side). About 1 is one sample per datagram; Cyclone's <code>ddsperf</code> packs samples, which is why its rows compare with FerroDDS batched, not unbatched.</p>\n");
    fair_comparison_table(&mut h, summary);

    capture_cost_table(&mut h, summary);
    language_cost_table(&mut h, summary);
    micro_cost_table(&mut h, summary);
    security_cost_table(&mut h, summary);

    let failed: Vec<_> = summary
        .runs
        .iter()
        .filter(|r| r.status != RunStatus::Ok)
        .collect();
    let _ = write!(h, "<h2>Failed runs ({})</h2>", failed.len());
    if failed.is_empty() {
        h.push_str("<p class=\"note\">None.</p>");
    }
    for r in failed {
        let _ = write!(
            h,
            "<h3>#{} {} — {} {} B, repetition {}: {}</h3><p>{}</p><p class=\"note\">pub: <code>{}</code><br>sub: <code>{}</code></p>",
            r.run_index,
            html_escape(&r.scenario.config_label()),
            r.scenario.test,
            r.scenario.size,
            r.repetition + 1,
            r.status.name(),
            html_escape(&r.error),
            html_escape(&r.pub_command),
            html_escape(&r.sub_command)
        );
        if !r.stderr_tail.is_empty() {
            let _ = write!(h, "<pre>{}</pre>", html_escape(&r.stderr_tail));
        }
    }
    h.push_str("<p class=\"note\">Raw data: latency.csv, throughput.csv (one row per run, with both command lines) and summary.json next to this page. Regenerate with <code>lab report DIR</code>.</p></body></html>\n");
    Ok(h)
}

/// A cost table: each row `of` selects over the same scenario as `base` makes it (runs
/// interleaved in one group): its median latency p50 and throughput beside the base's, their
/// ratios, and the commercial leader's published latency ratio for that row. Nothing when no
/// row is selected.
struct CostTable {
    /// The heading and the table's column names after the configuration and size.
    title: &'static str,
    published_header: &'static str,
    lost_header: &'static str,
    /// The note under the table.
    note: &'static str,
    /// Rows of the table.
    of: fn(&Scenario) -> bool,
    /// What each row is compared with.
    base: fn(Scenario) -> Scenario,
    /// The published latency ratio of a row (its size, and its profile where it has one).
    published: fn(&Scenario) -> Option<f64>,
    /// Add a column with the share of frames the row's network captures wrote.
    frames: bool,
}

fn cost_table(h: &mut String, summary: &Summary, t: &CostTable) {
    let rows: Vec<_> = summary
        .aggregates
        .iter()
        .filter(|a| (t.of)(&a.scenario))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<h2>{}</h2><table><tr><th>configuration</th><th>size (B)</th><th>latency p50 (µs) ÷ compared row's</th><th>latency p50 ratio</th><th>{}</th><th>throughput (samples/s) ÷ compared row's</th><th>throughput ratio (samples/s)</th><th>{}</th>{}</tr>",
        t.title,
        t.published_header,
        t.lost_header,
        if t.frames {
            "<th>frames the captures wrote (the rest dropped)</th>"
        } else {
            ""
        }
    );
    for a in rows {
        let base = (t.base)(a.scenario);
        let Some(b) = summary.aggregates.iter().find(|b| b.scenario == base) else {
            continue;
        };
        let ratio = |x: &Option<Spread>, y: &Option<Spread>| match (x, y) {
            (Some(x), Some(y)) if y.median > 0.0 => format!("{:.2}×", x.median / y.median),
            _ => "–".to_string(),
        };
        let values = |x: &Option<Spread>, y: &Option<Spread>, prec: usize| match (x, y) {
            (Some(x), Some(y)) => format!("{:.prec$} ÷ {:.prec$}", x.median, y.median),
            _ => "–".to_string(),
        };
        let published = match a.scenario.test {
            TestKind::Latency => (t.published)(&a.scenario).map_or_else(
                || "–".to_string(),
                // A setting that adds work cannot make the published latency lower: below 1
                // the two published runs differ in more than that setting.
                |r| {
                    if r < 1.0 {
                        format!("{r:.2}× (not a cost: the published runs differ in more than this)")
                    } else {
                        format!("{r:.2}×")
                    }
                },
            ),
            TestKind::Throughput => "–".to_string(),
        };
        let frames = if !t.frames {
            String::new()
        } else {
            let cell = a
                .capture_frames
                .and_then(|c| c.written_pct_floor().map(|p| (c, p)))
                .map_or_else(
                    || "–".to_string(),
                    |(c, p)| format!("{p} % ({} of {})", c.written, c.total()),
                );
            format!("<td class=\"num\">{cell}</td>")
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>{frames}</tr>",
            html_escape(&a.scenario.config_label()),
            a.scenario.size,
            values(&a.p50_us, &b.p50_us, 1),
            ratio(&a.p50_us, &b.p50_us),
            published,
            values(&a.samples_per_s, &b.samples_per_s, 0),
            ratio(&a.samples_per_s, &b.samples_per_s),
            a.lost_pct
                .as_ref()
                .map_or_else(|| "–".to_string(), |l| format!("{:.2}", l.median)),
        );
    }
    let _ = writeln!(h, "</table><p class=\"note\">{}</p>", t.note);
}

/// The cost of network capture: each FerroDDS capture row over the same row without
/// capture, beside the commercial leader's published latency ratio.
fn capture_cost_table(h: &mut String, summary: &Summary) {
    cost_table(
        h,
        summary,
        &CostTable {
            title: "Network capture cost (with capture ÷ without, medians)",
            published_header: "Connext published p50 ratio",
            lost_header: "lost % with capture",
            note: "Connext's ratio: its published capture latency (both participants capturing, best effort) over its published latency without capture on the same hardware (strict reliable: the closest row RTI publishes). Connext publishes no throughput without capture for that hardware. At 63000 B its capture run (110 µs) is faster than every UDPv4 run it publishes without capture on that hardware (159–267 µs): that ratio says nothing about the cost of capture. The last column: of the frames all participants sent and received, the share their captures wrote (rounded down), summed over the repetitions (perftest's count at the end; a capture drops what its file cannot keep up with, messages larger than its buffer and, after a write error, everything, so a cost measured with many dropped is the cost of a partial capture).",
            of: |s| s.capture != Capture::Off,
            base: |s| Scenario {
                capture: Capture::Off,
                ..s
            },
            published: |s| reference::capture_latency_ratio(s.size),
            frames: true,
        },
    );
}

/// Throughput compared with what sends alike: FerroDDS unbatched with the raw baseline (one
/// sample per datagram both), FerroDDS batched with Cyclone's `ddsperf` (which packs samples
/// into datagrams), each with its measured samples per datagram. Nothing without such pairs.
/// The raw SHMEM rings are the baseline of both SHMEM and SHMEM zero-copy rows
/// ([`Transport::raw_pair`]); other rows pair with the raw rows of their own transport.
fn fair_comparison_table(h: &mut String, summary: &Summary) {
    let thr: Vec<_> = summary
        .aggregates
        .iter()
        .filter(|a| a.scenario.test == TestKind::Throughput)
        .collect();
    let find = |peer: &Scenario, transport: Transport, batching: bool, any_reliability: bool| {
        thr.iter().copied().find(|a| {
            let s = &a.scenario;
            s.system == System::Ferrodds
                && s.language == Language::Rust
                && s.capture == Capture::Off
                && s.batching == batching
                && s.keyed == peer.keyed
                && s.transport == transport
                && s.size == peer.size
                && (any_reliability || s.reliability == peer.reliability)
        })
    };
    let mut rows = String::new();
    for peer in thr.iter().filter(|a| a.scenario.system != System::Ferrodds) {
        let pairs: Vec<(Option<&Aggregate>, &str)> = match peer.scenario.system {
            // The raw baseline has no reliability: it runs in one reliability's groups.
            System::Raw => Transport::ALL
                .into_iter()
                .filter(|t| t.raw_pair() == Some(peer.scenario.transport))
                .map(|t| (find(&peer.scenario, t, false, false), "unbatched"))
                .collect(),
            _ => vec![(
                find(&peer.scenario, peer.scenario.transport, true, false),
                "batched",
            )],
        };
        for (ours, what) in pairs {
            let Some(ours) = ours else {
                continue;
            };
            let ratio = match (&ours.samples_per_s, &peer.samples_per_s) {
                (Some(x), Some(y)) if y.median > 0.0 => format!("{:.2}×", x.median / y.median),
                _ => "–".to_string(),
            };
            let per = |a: &Aggregate| {
                a.samples_per_datagram
                    .map_or_else(|| "–".to_string(), |s| format!("{:.1}", s.median))
            };
            let _ = write!(
                rows,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                html_escape(&format!("{} ({what})", ours.scenario.config_label())),
                html_escape(&peer.scenario.config_label()),
                peer.scenario.size,
                ratio,
                per(ours),
                per(peer),
            );
        }
    }
    if rows.is_empty() {
        return;
    }
    h.push_str("<h2>Throughput against what sends alike (samples/s, medians)</h2><table><tr><th>FerroDDS</th><th>compared with</th><th>size (B)</th><th>FerroDDS ÷ it</th><th>FerroDDS samples per datagram</th><th>its samples per datagram</th></tr>");
    h.push_str(&rows);
    h.push_str("</table><p class=\"note\">Raw UDP sends one sample per datagram, as FerroDDS without batching; Cyclone's <code>ddsperf</code> has no batching switch and packs samples, as FerroDDS with batching.");
    if thr
        .iter()
        .any(|a| a.scenario.transport == Transport::ShmemZc)
    {
        h.push_str(" The raw SHMEM rings (one sample per slot) are the baseline of both the SHMEM rows and the SHMEM zero-copy ones (writer loans and reads in place, unbatched): run shmem beside shmem-zc to have them.");
    }
    h.push_str("</p>\n");
}

/// The cost of the C# API: each FerroDDS row of the C# perftest over the same row of the Rust
/// one, beside the commercial leader's published C# over C++ latency ratio.
fn language_cost_table(h: &mut String, summary: &Summary) {
    cost_table(
        h,
        summary,
        &CostTable {
            title: "C# cost (C# perftest ÷ Rust perftest, medians)",
            published_header: "Connext published p50 ratio (C# ÷ C++)",
            lost_header: "lost % in C#",
            note: "Connext's ratio: its published C# latency over its published C++ latency on the same hardware and transport (UDPv4 10 GbE, unkeyed strict reliable), where both are published. Both FerroDDS perftests use the same library (the C# one through the C API).",
            of: |s| s.language == Language::Cs,
            base: |s| Scenario {
                language: Language::Rust,
                ..s
            },
            published: |s| reference::cs_latency_ratio(s.size),
            frames: false,
        },
    );
}

/// The small-footprint build: each FerroDDS row of perftest_micro over the same row of the full
/// perftest (no published counterpart: the commercial leader publishes no figures of its
/// Micro build).
fn micro_cost_table(h: &mut String, summary: &Summary) {
    cost_table(
        h,
        summary,
        &CostTable {
            title: "Micro build (perftest_micro ÷ perftest, medians)",
            published_header: "Connext published ratio",
            lost_header: "lost % in micro",
            note: "perftest_micro is FerroDDS built for size (tools/perftest-micro: UDPv4 only, no batching, capture, TLS, shared memory or security; opt-level z, LTO, panics abort). Connext publishes no figures of its Micro build, hence no published ratio.",
            of: |s| s.language == Language::Micro,
            base: |s| Scenario {
                language: Language::Rust,
                ..s
            },
            published: |_| None,
            frames: false,
        },
    );
}

/// The cost of DDS Security: each secure row (FerroDDS, and Cyclone DDS where it ran) over the
/// same row without security (`no_security_libraries`, run interleaved in the same group),
/// beside the commercial leader's published ratio for the same profile and size.
fn security_cost_table(h: &mut String, summary: &Summary) {
    cost_table(
        h,
        summary,
        &CostTable {
            title: "DDS Security (profile ÷ no_security_libraries, medians)",
            published_header: "Connext published p50 ratio (profile ÷ no_security_libraries)",
            lost_header: "lost % with the profile",
            note: "Each row runs perftest with -secureGovernanceFile resource/secure/signed_PerftestGovernance_*.xml of its profile (Cyclone's ddsperf with the same governance, identities and permissions), compared with the same row without any -secure option, run interleaved with it. Connext's ratio: its published latency with the profile over its published latency without the security libraries (security_udpv4_10g_cpp98_reliable: UDPv4 10 GbE, unkeyed strict reliable, 32 B to 63000 B). Connext publishes no throughput with security.",
            of: Scenario::is_secure,
            base: |s| Scenario {
                security: Some(SecurityProfile::NoSecurityLibraries),
                ..s
            },
            published: |s| {
                let p = s.security?;
                let published_alike = s.reliability == crate::matrix::Reliability::Reliable
                    && !s.keyed
                    && s.transport == Transport::Udpv4;
                published_alike
                    .then(|| reference::security_latency_ratio(p.name(), s.size))
                    .flatten()
            },
            frames: false,
        },
    );
}

/// Writes `report.html` into `dir`.
pub fn write_report(dir: &Path, summary: &Summary, with_reference: bool) -> Result<(), LabError> {
    let html = render_html(summary, with_reference)?;
    let p = dir.join(crate::record::files::REPORT_HTML);
    std::fs::write(&p, html).map_err(|e| LabError::io(&p, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_cost_is_a_ratio_beside_the_published_one() {
        let agg = |capture: Capture, p50: f64| Aggregate {
            scenario: Scenario {
                multicast: false,
                subscribers: 1,
                system: System::Ferrodds,
                test: TestKind::Latency,
                reliability: crate::matrix::Reliability::BestEffort,
                keyed: false,
                batching: false,
                transport: Transport::Udpv4,
                size: 32,
                capture,
                language: Default::default(),
                security: None,
            },
            runs_ok: 1,
            runs_failed: 0,
            avg_us: Spread::of(&[p50]),
            p50_us: Spread::of(&[p50]),
            p99_us: Spread::of(&[p50]),
            samples_per_s: None,
            mbps: None,
            lost_pct: None,
            lost_samples_total: 0,
            samples_per_datagram: None,
            capture_frames: None,
        };
        let mut summary = Summary {
            lab_version: "0".into(),
            started_unix_s: 0,
            finished_unix_s: 0,
            host: Default::default(),
            settings: Default::default(),
            planned_runs: 2,
            runs_ok: 2,
            runs_failed: 0,
            runs_not_started: 0,
            interrupted: false,
            notes: Vec::new(),
            aggregates: vec![agg(Capture::Off, 10.0)],
            runs: Vec::new(),
        };
        let mut h = String::new();
        capture_cost_table(&mut h, &summary);
        assert!(h.is_empty(), "no capture rows, no table");
        summary.aggregates.push(agg(Capture::On, 10.5));
        capture_cost_table(&mut h, &summary);
        assert!(h.contains("Network capture cost"), "{h}");
        assert!(h.contains("ferrodds best-effort unkeyed capture"), "{h}");
        assert!(h.contains(">1.05×<"), "{h}");
        // Connext: 23 µs with capture, 17 µs without, at 32 B
        assert!(h.contains(">1.35×<"), "{h}");
        // No count: a dash in the frames column, a ninth cell.
        assert!(h.contains("frames the captures wrote"), "{h}");
        let row = h
            .split("<tr>")
            .find(|r| r.contains("capture</td>"))
            .and_then(|r| r.split("</tr>").next())
            .unwrap();
        assert_eq!(row.matches("<td").count(), 9, "{row}");
        assert!(row.ends_with("<td class=\"num\">–</td>"), "{row}");
        let mut with_count = agg(Capture::On, 10.5);
        with_count.capture_frames = Some(crate::record::CaptureFrames {
            written: 460,
            dropped: 540,
        });
        summary.aggregates[1] = with_count;
        let mut h = String::new();
        capture_cost_table(&mut h, &summary);
        assert!(h.contains(">46 % (460 of 1000)<"), "{h}");
        // At 63000 B Connext's published capture run is faster than the run without: not a
        // cost, and the cell says so.
        for a in &mut summary.aggregates {
            a.scenario.size = 63000;
        }
        let mut h = String::new();
        capture_cost_table(&mut h, &summary);
        assert!(h.contains(">0.59× (not a cost"), "{h}");
    }

    #[test]
    fn security_cost_is_a_ratio_to_the_row_without_beside_the_published_one() {
        let agg =
            |system: System, security: Option<SecurityProfile>, size: u64, p50: f64| Aggregate {
                scenario: Scenario {
                    multicast: false,
                    subscribers: 1,
                    system,
                    test: TestKind::Latency,
                    reliability: crate::matrix::Reliability::Reliable,
                    keyed: false,
                    batching: false,
                    transport: Transport::Udpv4,
                    size,
                    capture: Capture::Off,
                    language: Language::Rust,
                    security,
                },
                runs_ok: 1,
                runs_failed: 0,
                avg_us: Spread::of(&[p50]),
                p50_us: Spread::of(&[p50]),
                p99_us: Spread::of(&[p50]),
                samples_per_s: None,
                mbps: None,
                lost_pct: None,
                lost_samples_total: 0,
                samples_per_datagram: None,
                capture_frames: None,
            };
        let none = Some(SecurityProfile::NoSecurityLibraries);
        let mut summary = Summary {
            lab_version: "0".into(),
            started_unix_s: 0,
            finished_unix_s: 0,
            host: Default::default(),
            settings: Default::default(),
            planned_runs: 2,
            runs_ok: 2,
            runs_failed: 0,
            runs_not_started: 0,
            interrupted: false,
            notes: Vec::new(),
            aggregates: vec![
                agg(System::Ferrodds, none, 32, 10.0),
                agg(System::Ferrodds, none, 63000, 100.0),
            ],
            runs: Vec::new(),
        };
        let mut h = String::new();
        security_cost_table(&mut h, &summary);
        assert!(h.is_empty(), "no secure rows, no table");
        summary.aggregates.extend([
            agg(System::Ferrodds, Some(SecurityProfile::RtpsSign), 32, 12.0),
            agg(
                System::Ferrodds,
                Some(SecurityProfile::RtpsEncrypt),
                63000,
                130.0,
            ),
            agg(System::Cyclone, none, 32, 20.0),
            agg(System::Cyclone, Some(SecurityProfile::RtpsSign), 32, 25.0),
        ]);
        security_cost_table(&mut h, &summary);
        assert!(h.contains("<h2>DDS Security"), "{h}");
        // Each row: its p50 and the plain row's, their ratio, Connext's for the profile and
        // size (rtps_sign 24 µs over 17 µs at 32 B; rtps_encrypt 219 over 186 at 63000 B).
        assert!(h.contains("<tr><td>ferrodds reliable unkeyed rtps_sign</td><td class=\"num\">32</td><td class=\"num\">12.0 ÷ 10.0</td><td class=\"num\">1.20×</td><td class=\"num\">1.41×</td>"), "{h}");
        assert!(h.contains("<tr><td>ferrodds reliable unkeyed rtps_encrypt</td><td class=\"num\">63000</td><td class=\"num\">130.0 ÷ 100.0</td><td class=\"num\">1.30×</td><td class=\"num\">1.18×</td>"), "{h}");
        assert!(h.contains("<tr><td>cyclone reliable unkeyed rtps_sign</td><td class=\"num\">32</td><td class=\"num\">25.0 ÷ 20.0</td><td class=\"num\">1.25×</td>"), "{h}");
        // Plain rows are the compared ones, never rows of the table.
        assert!(!h.contains("<tr><td>ferrodds reliable unkeyed</td>"), "{h}");
        // A keyed row has no published counterpart.
        for a in &mut summary.aggregates {
            a.scenario.keyed = true;
        }
        let mut h = String::new();
        security_cost_table(&mut h, &summary);
        assert!(
            h.contains("<td class=\"num\">1.20×</td><td class=\"num\">–</td>"),
            "{h}"
        );
        // The whole page has it too.
        let page = render_html(&summary, true).unwrap();
        assert!(page.contains("DDS Security (profile ÷ no_security_libraries"));
    }

    #[test]
    fn c_sharp_cost_is_a_ratio_beside_the_published_one() {
        let agg = |language: Language, p50: f64| Aggregate {
            scenario: Scenario {
                multicast: false,
                subscribers: 1,
                system: System::Ferrodds,
                test: TestKind::Latency,
                reliability: crate::matrix::Reliability::Reliable,
                keyed: false,
                batching: false,
                transport: Transport::Udpv4,
                size: 32,
                capture: Capture::Off,
                language,
                security: None,
            },
            runs_ok: 1,
            runs_failed: 0,
            avg_us: Spread::of(&[p50]),
            p50_us: Spread::of(&[p50]),
            p99_us: Spread::of(&[p50]),
            samples_per_s: None,
            mbps: None,
            lost_pct: None,
            lost_samples_total: 0,
            samples_per_datagram: None,
            capture_frames: None,
        };
        let mut summary = Summary {
            lab_version: "0".into(),
            started_unix_s: 0,
            finished_unix_s: 0,
            host: Default::default(),
            settings: Default::default(),
            planned_runs: 2,
            runs_ok: 2,
            runs_failed: 0,
            runs_not_started: 0,
            interrupted: false,
            notes: Vec::new(),
            aggregates: vec![agg(Language::Rust, 10.0)],
            runs: Vec::new(),
        };
        let mut h = String::new();
        language_cost_table(&mut h, &summary);
        assert!(h.is_empty(), "no C# rows, no table");
        summary.aggregates.push(agg(Language::Cs, 12.5));
        language_cost_table(&mut h, &summary);
        assert!(h.contains("C# cost"), "{h}");
        assert!(h.contains("ferrodds reliable unkeyed C#"), "{h}");
        assert!(h.contains(">1.25×<"), "{h}");
        // Connext: 19 µs in C#, 17 µs in C++, at 32 B
        assert!(h.contains(">1.12×<"), "{h}");
        // The published C# line is drawn beside the latency plots.
        let series = series_for(&summary, Metric::P50, &BTreeMap::new(), true);
        assert!(
            series.iter().any(|s| s.label == CS_REFERENCE_LABEL),
            "C# reference line"
        );
    }

    #[test]
    fn throughput_compares_with_what_sends_alike() {
        let agg = |system: System, batching: bool, sps: f64, per: f64| Aggregate {
            scenario: Scenario {
                multicast: false,
                subscribers: 1,
                system,
                test: TestKind::Throughput,
                reliability: crate::matrix::Reliability::Reliable,
                keyed: false,
                batching,
                transport: Transport::Udpv4,
                size: 32,
                capture: Capture::Off,
                language: Language::Rust,
                security: None,
            },
            runs_ok: 1,
            runs_failed: 0,
            avg_us: None,
            p50_us: None,
            p99_us: None,
            samples_per_s: Spread::of(&[sps]),
            mbps: None,
            lost_pct: None,
            lost_samples_total: 0,
            samples_per_datagram: Spread::of(&[per]),
            capture_frames: None,
        };
        let mut summary = Summary {
            lab_version: "0".into(),
            started_unix_s: 0,
            finished_unix_s: 0,
            host: Default::default(),
            settings: Default::default(),
            planned_runs: 4,
            runs_ok: 4,
            runs_failed: 0,
            runs_not_started: 0,
            interrupted: false,
            notes: Vec::new(),
            aggregates: vec![
                agg(System::Ferrodds, false, 100_000.0, 0.9),
                agg(System::Ferrodds, true, 2_000_000.0, 120.0),
            ],
            runs: Vec::new(),
        };
        let mut h = String::new();
        fair_comparison_table(&mut h, &summary);
        assert!(h.is_empty(), "no baseline, no table");
        summary
            .aggregates
            .push(agg(System::Raw, false, 200_000.0, 1.0));
        summary
            .aggregates
            .push(agg(System::Cyclone, false, 500_000.0, 126.0));
        fair_comparison_table(&mut h, &summary);
        // Unbatched beside raw UDP, batched beside ddsperf, each with its samples per datagram.
        assert!(h.contains("ferrodds reliable unkeyed (unbatched)</td><td>raw UDP</td><td class=\"num\">32</td><td class=\"num\">0.50×</td><td class=\"num\">0.9</td><td class=\"num\">1.0</td>"), "{h}");
        assert!(h.contains("ferrodds reliable unkeyed batching (batched)</td><td>cyclone reliable unkeyed</td><td class=\"num\">32</td><td class=\"num\">4.00×</td><td class=\"num\">120.0</td><td class=\"num\">126.0</td>"), "{h}");
    }

    /// SHMEM zero-copy rows: labelled beside the SHMEM ones, compared with the raw SHMEM rings
    /// (the baseline of both), never with raw UDP.
    #[test]
    fn shmem_zero_copy_rows_pair_with_the_raw_shmem_rings() {
        let agg = |system: System, transport: Transport, sps: f64| Aggregate {
            scenario: Scenario {
                multicast: false,
                subscribers: 1,
                system,
                test: TestKind::Throughput,
                reliability: crate::matrix::Reliability::Reliable,
                keyed: false,
                batching: false,
                transport,
                size: 1024,
                capture: Capture::Off,
                language: Language::Rust,
                security: None,
            },
            runs_ok: 1,
            runs_failed: 0,
            avg_us: None,
            p50_us: None,
            p99_us: None,
            samples_per_s: Spread::of(&[sps]),
            mbps: None,
            lost_pct: None,
            lost_samples_total: 0,
            samples_per_datagram: None,
            capture_frames: None,
        };
        let mut summary = Summary {
            lab_version: "0".into(),
            started_unix_s: 0,
            finished_unix_s: 0,
            host: Default::default(),
            settings: Default::default(),
            planned_runs: 3,
            runs_ok: 3,
            runs_failed: 0,
            runs_not_started: 0,
            interrupted: false,
            notes: Vec::new(),
            aggregates: vec![
                agg(System::Ferrodds, Transport::ShmemZc, 400_000.0),
                agg(System::Raw, Transport::Udpv4, 100_000.0),
            ],
            runs: Vec::new(),
        };
        // Raw UDP is no baseline of SHMEM zero-copy, and it has no raw rows of its own.
        let mut h = String::new();
        fair_comparison_table(&mut h, &summary);
        assert!(h.is_empty(), "{h}");
        summary.aggregates.extend([
            agg(System::Ferrodds, Transport::Shmem, 320_000.0),
            agg(System::Raw, Transport::Shmem, 800_000.0),
        ]);
        fair_comparison_table(&mut h, &summary);
        assert!(h.contains("ferrodds reliable unkeyed shmem (unbatched)</td><td>raw SHMEM</td><td class=\"num\">1024</td><td class=\"num\">0.40×</td>"), "{h}");
        assert!(h.contains("ferrodds reliable unkeyed shmem zero-copy (unbatched)</td><td>raw SHMEM</td><td class=\"num\">1024</td><td class=\"num\">0.50×</td>"), "{h}");
        assert!(!h.contains("raw UDP"), "{h}");
        assert!(h.contains("run shmem beside shmem-zc"), "{h}");
        // The two SHMEM lines sit side by side in the legend.
        let labels: Vec<String> = colours(&summary).into_keys().collect();
        let at = |l: &str| labels.iter().position(|x| x == l).unwrap();
        assert_eq!(
            at("ferrodds reliable unkeyed shmem zero-copy"),
            at("ferrodds reliable unkeyed shmem") + 1,
            "{labels:?}"
        );
        // The whole report names the transport in its tables.
        let page = render_html(&summary, false).unwrap();
        assert!(page.contains("ferrodds reliable unkeyed shmem zero-copy"));
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_size(32.0), "32");
        assert_eq!(fmt_size(1024.0), "1k");
        assert_eq!(fmt_size(63000.0), "61.5k");
        assert_eq!(fmt_size(10_485_760.0), "10M");
        assert_eq!(fmt_value(1_500_000.0), "1.5M");
        assert_eq!(fmt_value(12.34), "12.3");
        assert_eq!(fmt_value(10_000.0), "10k");
        assert_eq!(fmt_value(0.0), "0");
        assert_eq!(fmt_value(10.0), "10");
        assert_eq!(fmt_value(0.5), "0.50");
        assert_eq!(html_escape("<a&\"b\">"), "&lt;a&amp;&quot;b&quot;&gt;");
        assert_eq!(utc_date(0), "unknown");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc_date(1_700_000_000), "2023-11-14 22:13 UTC");
    }
}
