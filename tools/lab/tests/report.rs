//! Report generation from recorded results (the committed fixture of a real `lab run --quick`),
//! checked as HTML and as pixels rendered by headless Chromium.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ferrodds_lab::matrix::{System, TestKind};
use ferrodds_lab::record::{self, files, RunStatus};
use ferrodds_lab::report;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/quick-run")
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lab-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn copy_fixture(to: &Path) {
    for f in [
        files::LATENCY_CSV,
        files::THROUGHPUT_CSV,
        files::SUMMARY_JSON,
    ] {
        std::fs::copy(fixture().join(f), to.join(f)).unwrap();
    }
}

/// Runs a command with a time bound; returns its exit success.
fn run_bounded(cmd: &mut Command, limit: Duration) -> bool {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let end = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st.success();
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn fixture_reads_back_with_all_systems() {
    let s = record::read_results(&fixture()).unwrap();
    assert_eq!(s.runs.len(), 18);
    assert!(s.runs.iter().all(|r| r.status == RunStatus::Ok));
    for sys in [System::Ferrodds, System::Raw, System::Cyclone] {
        for test in [TestKind::Latency, TestKind::Throughput] {
            assert_eq!(
                s.aggregates
                    .iter()
                    .filter(|a| a.scenario.system == sys && a.scenario.test == test)
                    .count(),
                3,
                "{sys} {test}"
            );
        }
    }
    // Every latency aggregate has a median; every throughput one a rate.
    for a in &s.aggregates {
        match a.scenario.test {
            TestKind::Latency => assert!(a.p50_us.unwrap().median > 0.0),
            TestKind::Throughput => assert!(a.samples_per_s.unwrap().median > 0.0),
        }
    }
}

#[test]
fn html_has_plots_with_paths_and_tables() {
    let s = record::read_results(&fixture()).unwrap();
    let html = report::render_html(&s, true).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // 4 latency + 4 throughput + 1 loss plots.
    assert_eq!(html.matches("<svg").count(), 9);
    assert!(html.matches("<polyline").count() + html.matches("<path").count() >= 9 * 3);
    // No script, no external resources.
    assert!(!html.contains("<script"));
    let no_ns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(!no_ns.contains("http://") && !no_ns.contains("https://"));
    for label in [
        "ferrodds reliable unkeyed",
        "raw UDP",
        "cyclone reliable unkeyed",
        "one-way latency, median (µs)",
        "throughput (Mbit/s)",
        "sample size (bytes, log scale)",
        "Latency table",
        "Connext (published",
    ] {
        assert!(html.contains(label), "missing {label:?}");
    }
    let without = report::render_html(&s, false).unwrap();
    assert!(!without.contains("Connext (published"));
}

#[test]
fn lab_report_command_regenerates_the_page() {
    let dir = temp_dir("report-cmd");
    copy_fixture(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_lab"))
        .arg("report")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.join(files::REPORT_HTML)).unwrap();
    assert_eq!(html.matches("<svg").count(), 9);
    // An empty directory is a clear error.
    let empty = temp_dir("report-empty");
    let out = Command::new(env!("CARGO_BIN_EXE_lab"))
        .arg("report")
        .arg(&empty)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no recorded results"));
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&empty).unwrap();
}

#[test]
fn compare_command_flags_a_regression() {
    let old = temp_dir("cmp-old");
    let new = temp_dir("cmp-new");
    copy_fixture(&old);
    copy_fixture(&new);
    // Make the new run's first latency row 50 % slower at the median.
    let p = new.join(files::LATENCY_CSV);
    let mut rows = record::read_csv(&p).unwrap();
    let l = rows[0].latency.as_mut().unwrap();
    l.p50_us *= 1.5;
    record::write_csv(&p, TestKind::Latency, &rows).unwrap();
    std::fs::remove_file(new.join(files::SUMMARY_JSON)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lab"))
        .args(["compare", "--fail-on-regression"])
        .arg(&old)
        .arg(&new)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_eq!(stdout.matches("REGRESSED").count(), 1, "{stdout}");
    assert!(new.join("compare.csv").exists());
    assert!(new.join("compare.html").exists());
    // Same data: no regression, exit 0.
    let out = Command::new(env!("CARGO_BIN_EXE_lab"))
        .args(["compare", "--fail-on-regression"])
        .arg(&old)
        .arg(&old)
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::remove_dir_all(&old).unwrap();
    std::fs::remove_dir_all(&new).unwrap();
}

fn find_browser() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|n| ferrodds_lab::runner::find_program(n))
}

#[test]
fn report_renders_in_headless_chromium() {
    let Some(browser) = find_browser() else {
        if std::env::var("FERRODDS_SKIP_BROWSER").as_deref() == Ok("1") {
            ferrodds_testkit::skip("chromium not installed and FERRODDS_SKIP_BROWSER=1");
            return;
        }
        panic!(
            "chromium is needed to check the rendered report: install it \
             (DEBIAN_FRONTEND=noninteractive apt-get install -y chromium) or set FERRODDS_SKIP_BROWSER=1"
        );
    };
    let dir = temp_dir("chromium");
    copy_fixture(&dir);
    let s = record::read_results(&dir).unwrap();
    report::write_report(&dir, &s, true).unwrap();
    let png = dir.join("shot.png");
    let profile = dir.join("profile");
    let ok = run_bounded(
        Command::new(&browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--hide-scrollbars",
                "--window-size=1400,3000",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!("file://{}", dir.join(files::REPORT_HTML).display())),
        Duration::from_secs(90),
    );
    assert!(ok && png.exists(), "chromium failed to take the screenshot");

    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let (w, h) = (info.width as usize, info.height as usize);
    assert_eq!((w, h), (1400, 3000));
    let channels = info.line_size / w;
    assert!(channels >= 3);
    let px = |x: usize, y: usize| {
        let i = y * info.line_size + x * channels;
        (buf[i], buf[i + 1], buf[i + 2])
    };
    let mut non_white = 0usize;
    // Saturated (coloured) pixels per 200-px band and page half: the series lines.
    let mut bands = vec![[0usize; 2]; h.div_ceil(200)];
    for y in 0..h {
        for x in 0..w {
            let (r, g, b) = px(x, y);
            if r < 245 || g < 245 || b < 245 {
                non_white += 1;
            }
            let max = r.max(g).max(b);
            let min = r.min(g).min(b);
            if max - min > 80 {
                bands[y / 200][usize::from(x >= w / 2)] += 1;
            }
        }
    }
    let total = w * h;
    assert!(
        non_white * 100 > total * 3,
        "page looks blank: {non_white} non-white pixels of {total}"
    );
    // Plots sit in a two-column grid: coloured lines must appear in several bands, in both
    // columns.
    let left = bands.iter().filter(|b| b[0] > 150).count();
    let right = bands.iter().filter(|b| b[1] > 150).count();
    assert!(
        left >= 4 && right >= 3,
        "too few plot regions with coloured lines: left {left}, right {right}, bands {bands:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
