//! Golden tests of every output format with fixed statistics.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use ferrodds_perftest::options::{BatchingState, Options, OutputFormat};
use ferrodds_perftest::output::{write_latency_file, Printer, PrinterConfig};
use ferrodds_perftest::run::{startup_summary, version_line};
use ferrodds_perftest::stats::{
    LatencyInterval, LatencySummary, ThroughputInterval, ThroughputSummary,
};

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

impl Sink {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

fn printer(format: OutputFormat, intervals: bool, headers: bool) -> (Printer, Sink) {
    let sink = Sink::default();
    let p = Printer::new(
        PrinterConfig {
            format,
            print_intervals: intervals,
            print_headers: headers,
            cpu: false,
        },
        Box::new(sink.clone()),
    );
    (p, sink)
}

fn lat_interval() -> LatencyInterval {
    LatencyInterval {
        data_len: 100,
        latency: 85,
        ave: 91.0,
        std: 7.4,
        min: 80,
        max: 142,
        cpu: None,
    }
}

fn lat_summary() -> LatencySummary {
    LatencySummary {
        data_len: 100,
        count: 1000,
        ave: 92.0,
        std: 11.3,
        min: 80,
        max: 190,
        p50: 90,
        p90: 101,
        p99: 150,
        p9999: 190,
        p999999: 190,
        cpu: None,
    }
}

fn thr_interval() -> ThroughputInterval {
    ThroughputInterval {
        data_len: 100,
        total_samples: 1_203_455,
        samples_per_sec: 601_227,
        avg_samples_per_sec: 600_912.0,
        mbps: 481.0,
        avg_mbps: 480.7,
        lost: 0,
        lost_percent: 0.0,
        cpu: None,
    }
}

fn thr_summary() -> ThroughputSummary {
    ThroughputSummary {
        data_len: 100,
        total_samples: 18_034_552,
        samples_per_sec: 601_151,
        mbps: 480.9,
        lost: 0,
        lost_percent: 0.0,
        cpu: None,
    }
}

#[test]
fn csv_latency_with_intervals() {
    let (mut p, sink) = printer(OutputFormat::Csv, true, true);
    p.latency_header(100).unwrap();
    p.latency_interval(&lat_interval()).unwrap();
    p.latency_summary(&lat_summary()).unwrap();
    p.finish().unwrap();
    assert_eq!(
        sink.text(),
        "\nIntervals One-Way Latency for 100 Bytes:\n\
         Length (Bytes), Latency (μs), Ave (μs), Std (μs), Min (μs), Max (μs)\n\
         \x20          100,           85,       91,      7.4,       80,      142\n\
         \nOne-way Latency Summary:\n\
         Sample Size (Bytes), Ave (μs), Std (μs), Min (μs), Max (μs), 50% (μs), 90% (μs), 99% (μs), 99.99% (μs), 99.9999% (μs)\n\
         \x20               100,       92,     11.3,       80,      190,       90,      101,      150,         190,           190\n"
    );
}

#[test]
fn csv_latency_no_print_prints_one_header_for_all_sizes() {
    let (mut p, sink) = printer(OutputFormat::Csv, false, true);
    p.latency_header(100).unwrap();
    p.latency_interval(&lat_interval()).unwrap();
    p.latency_summary(&lat_summary()).unwrap();
    p.latency_header(200).unwrap();
    p.latency_summary(&LatencySummary {
        data_len: 200,
        ..lat_summary()
    })
    .unwrap();
    assert_eq!(
        sink.text(),
        "Sample Size (Bytes), Ave (μs), Std (μs), Min (μs), Max (μs), 50% (μs), 90% (μs), 99% (μs), 99.99% (μs), 99.9999% (μs)\n\
         \x20               100,       92,     11.3,       80,      190,       90,      101,      150,         190,           190\n\
         \x20               200,       92,     11.3,       80,      190,       90,      101,      150,         190,           190\n"
    );
}

#[test]
fn csv_no_output_headers() {
    let (mut p, sink) = printer(OutputFormat::Csv, true, false);
    p.throughput_header(100).unwrap();
    p.throughput_interval(&thr_interval()).unwrap();
    p.throughput_summary(&thr_summary()).unwrap();
    assert_eq!(
        sink.text(),
        "           100,       1203455,     601227,        600912,    481.0,     480.7,            0,             0.00\n\
         \x20               100,      18034552,        601151,       480.9,            0,             0.00\n"
    );
}

#[test]
fn csv_throughput_with_intervals() {
    let (mut p, sink) = printer(OutputFormat::Csv, true, true);
    p.throughput_header(100).unwrap();
    p.throughput_interval(&thr_interval()).unwrap();
    p.throughput_summary(&thr_summary()).unwrap();
    assert_eq!(
        sink.text(),
        "\nInterval Throughput for 100 Bytes:\n\
         Length (Bytes), Total Samples,  Samples/s, Avg Samples/s,     Mbps,  Avg Mbps, Lost Samples, Lost Samples (%)\n\
         \x20          100,       1203455,     601227,        600912,    481.0,     480.7,            0,             0.00\n\
         \nThroughput Summary:\n\
         Sample Size (Bytes), Total Samples, Avg Samples/s,    Avg Mbps, Lost Samples, Lost Samples (%)\n\
         \x20               100,      18034552,        601151,       480.9,            0,             0.00\n"
    );
}

#[test]
fn csv_throughput_zero_rate_quirk() {
    let (mut p, sink) = printer(OutputFormat::Csv, false, false);
    p.throughput_summary(&ThroughputSummary {
        total_samples: 0,
        samples_per_sec: 0,
        mbps: 0.0,
        ..thr_summary()
    })
    .unwrap();
    // `%14.0llu` of 0 prints only padding.
    assert_eq!(
        sink.text(),
        "                100,             0,              ,         0.0,            0,             0.00\n"
    );
}

#[test]
fn legacy_rows() {
    let (mut p, sink) = printer(OutputFormat::Legacy, true, true);
    p.latency_header(100).unwrap();
    p.latency_interval(&lat_interval()).unwrap();
    p.latency_summary(&lat_summary()).unwrap();
    assert_eq!(
        sink.text(),
        "\n\n********** New data length is 100\n\
         One-Way Latency:     85 μs Ave     91 μs Std    7.4 μs Min     80 μs Max    142 μs\n\
         Length:   100 Latency: Ave     92 μs Std   11.3 μs Min     80 μs Max    190 μs 50%     90 μs 90%    101 μs 99%    150 μs 99.99%    190 μs 99.9999%    190 μs\n"
    );
    let (mut p, sink) = printer(OutputFormat::Legacy, true, true);
    p.throughput_header(100).unwrap();
    p.throughput_interval(&thr_interval()).unwrap();
    p.throughput_summary(&thr_summary()).unwrap();
    assert_eq!(
        sink.text(),
        "\n\n********** New data length is 100\n\
         Packets:  1203455  Packets/s:  601227  Packets/s(ave):  600912  Mbps:   481.0  Mbps(ave):   480.7  Lost:     0 (0.00%)\n\
         Length:   100  Packets: 18034552  Packets/s(ave):  601151  Mbps(ave):   480.9  Lost:     0 (0.00%)\n"
    );
}

#[test]
fn json_latency_document() {
    let (mut p, sink) = printer(OutputFormat::Json, true, true);
    p.latency_header(100).unwrap();
    p.latency_interval(&lat_interval()).unwrap();
    p.latency_interval(&LatencyInterval {
        latency: 90,
        ..lat_interval()
    })
    .unwrap();
    p.latency_summary(&lat_summary()).unwrap();
    p.latency_header(200).unwrap();
    p.latency_summary(&LatencySummary {
        data_len: 200,
        ..lat_summary()
    })
    .unwrap();
    p.finish().unwrap();
    let text = sink.text();
    // Byte for byte RTI's document: `"key": value`, ave/std with two decimals, a blank line
    // after `[`, no length in latency intervals.
    let interval = |latency: u32| {
        format!(
            "\t\t\t\t{{\n\
             \t\t\t\t\t\"latency\": {latency},\n\
             \t\t\t\t\t\"latency_ave\": 91.00,\n\
             \t\t\t\t\t\"latency_std\": 7.40,\n\
             \t\t\t\t\t\"latency_min\": 80,\n\
             \t\t\t\t\t\"latency_max\": 142\n\
             \t\t\t\t}}"
        )
    };
    let summary = "\t\t\t\"summary\":{\n\
                   \t\t\t\t\"latency_ave\": 92.00,\n\
                   \t\t\t\t\"latency_std\": 11.30,\n\
                   \t\t\t\t\"latency_min\": 80,\n\
                   \t\t\t\t\"latency_max\": 190,\n\
                   \t\t\t\t\"latency_50\": 90,\n\
                   \t\t\t\t\"latency_90\": 101,\n\
                   \t\t\t\t\"latency_99\": 150,\n\
                   \t\t\t\t\"latency_99.99\": 190,\n\
                   \t\t\t\t\"latency_99.9999\": 190\n\
                   \t\t\t}";
    assert_eq!(
        text,
        format!(
            "{{\"perftest\":\n\t[\n\t\t{{\n\
             \t\t\t\"length\":100,\n\
             \t\t\t\"intervals\":[\n\n{},\n{}\n\t\t\t],\n\
             {summary}\n\t\t}},\n\t\t{{\n\
             \t\t\t\"length\":200,\n\
             {summary}\n\t\t}}\n\t]\n}}\n",
            interval(85),
            interval(90)
        )
    );
    let v: serde_json::Value = serde_json::from_str(&text).expect(&text);
    let runs = v["perftest"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["length"], 100);
    assert_eq!(runs[0]["intervals"].as_array().unwrap().len(), 2);
    assert_eq!(runs[0]["intervals"][1]["latency"], 90);
    assert_eq!(runs[0]["intervals"][0]["latency_std"], 7.4);
    assert!(runs[0]["intervals"][0].get("length").is_none());
    assert_eq!(runs[0]["summary"]["latency_99.9999"], 190);
    assert_eq!(runs[1]["length"], 200);
    assert!(runs[1].get("intervals").is_none());
    assert_eq!(runs[1]["summary"]["latency_ave"], 92.0);
}

#[test]
fn json_throughput_document_and_empty_document() {
    let (mut p, sink) = printer(OutputFormat::Json, false, true);
    p.throughput_header(100).unwrap();
    p.throughput_interval(&thr_interval()).unwrap();
    p.throughput_summary(&thr_summary()).unwrap();
    p.finish().unwrap();
    let v: serde_json::Value = serde_json::from_str(&sink.text()).unwrap();
    let s = &v["perftest"][0]["summary"];
    assert_eq!(s["packets"], 18_034_552);
    assert_eq!(s["packets/sAve"], 601_151);
    assert_eq!(s["mbpsAve"], 480.9);
    assert_eq!(s["lostPercent"], 0.0);
    // Nothing measured (e.g. Ctrl-C before any data): still a valid document.
    let (mut p, sink) = printer(OutputFormat::Json, true, true);
    p.finish().unwrap();
    let v: serde_json::Value = serde_json::from_str(&sink.text()).unwrap();
    assert_eq!(v["perftest"].as_array().unwrap().len(), 0);
}

#[test]
fn json_throughput_document_is_rtis() {
    let (mut p, sink) = printer(OutputFormat::Json, true, true);
    p.throughput_header(100).unwrap();
    p.throughput_interval(&thr_interval()).unwrap();
    p.throughput_summary(&thr_summary()).unwrap();
    p.finish().unwrap();
    // RTI closes the interval list of a throughput summary without a newline (`}\t\t\t],`).
    assert_eq!(
        sink.text(),
        "{\"perftest\":\n\t[\n\t\t{\n\
         \t\t\t\"length\":100,\n\
         \t\t\t\"intervals\":[\n\n\
         \t\t\t\t{\n\
         \t\t\t\t\t\"length\": 100,\n\
         \t\t\t\t\t\"packets\": 1203455,\n\
         \t\t\t\t\t\"packets/s\": 601227,\n\
         \t\t\t\t\t\"packets/s_ave\": 600912.00,\n\
         \t\t\t\t\t\"mbps\": 481.0,\n\
         \t\t\t\t\t\"mbps_ave\": 480.7,\n\
         \t\t\t\t\t\"lost\": 0,\n\
         \t\t\t\t\t\"lost_percent\": 0.00\n\
         \t\t\t\t}\t\t\t],\n\
         \t\t\t\"summary\":{\n\
         \t\t\t\t\"packets\": 18034552,\n\
         \t\t\t\t\"packets/sAve\": 601151,\n\
         \t\t\t\t\"mbpsAve\": 480.9,\n\
         \t\t\t\t\"lost\": 0,\n\
         \t\t\t\t\"lostPercent\": 0.00\n\
         \t\t\t}\n\t\t}\n\t]\n}\n"
    );
    serde_json::from_str::<serde_json::Value>(&sink.text()).unwrap();
}

#[test]
fn json_cpu_has_two_decimals() {
    let sink = Sink::default();
    let mut p = Printer::new(
        PrinterConfig {
            format: OutputFormat::Json,
            print_intervals: false,
            print_headers: true,
            cpu: true,
        },
        Box::new(sink.clone()),
    );
    p.latency_header(100).unwrap();
    p.latency_summary(&LatencySummary {
        cpu: Some(12.5),
        ..lat_summary()
    })
    .unwrap();
    p.finish().unwrap();
    assert!(
        sink.text()
            .contains("\"latency_99.9999\": 190,\n\t\t\t\t\"CPU\": 12.50\n\t\t\t}"),
        "{}",
        sink.text()
    );
}

#[test]
fn legacy_no_print_has_no_new_data_length_line() {
    // RTI prints "New data length" only when intervals are printed too.
    let (mut p, sink) = printer(OutputFormat::Legacy, false, true);
    p.latency_header(100).unwrap();
    p.latency_interval(&lat_interval()).unwrap();
    p.latency_summary(&lat_summary()).unwrap();
    p.latency_header(200).unwrap();
    p.latency_summary(&LatencySummary {
        data_len: 200,
        ..lat_summary()
    })
    .unwrap();
    assert_eq!(
        sink.text(),
        "Length:   100 Latency: Ave     92 μs Std   11.3 μs Min     80 μs Max    190 μs 50%     90 μs 90%    101 μs 99%    150 μs 99.99%    190 μs 99.9999%    190 μs\n\
         Length:   200 Latency: Ave     92 μs Std   11.3 μs Min     80 μs Max    190 μs 50%     90 μs 90%    101 μs 99%    150 μs 99.99%    190 μs 99.9999%    190 μs\n"
    );
    let (mut p, sink) = printer(OutputFormat::Legacy, false, true);
    p.throughput_header(100).unwrap();
    p.throughput_summary(&thr_summary()).unwrap();
    assert!(!sink.text().contains("New data length"), "{}", sink.text());
}

#[test]
fn latency_file_format() {
    let mut out = Vec::new();
    write_latency_file(&mut out, &[85, 90, 7]).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "Sample Number, Value\n0, 85\n1, 90\n2, 7\n\n"
    );
}

#[test]
fn startup_summary_publisher_throughput() {
    // Tests run in tools/perftest, beside the shipped perftest_qos_profiles.xml.
    let opts = Options::parse(&["-pub", "-exec", "30"]).unwrap();
    let batching = opts.batching(true);
    let text = startup_summary(&opts, batching, &["Kind: UDPv4".to_string()]);
    let expected = format!(
        "{}\n\nMode: THROUGHPUT TEST\n      (Use \"-latencyTest\" for Latency Mode)\n\n\
         Perftest Configuration:\n\
         \tReliability: Reliable\n\
         \tKeyed: No\n\
         \tPublisher ID: 0\n\
         \tLatency count: 1 latency sample every 10000 samples\n\
         \tData Size: 100\n\
         \tBatching: 8192 Bytes (Use \"-batchSize 0\" to disable batching)\n\
         \tPublication Rate: Unlimited (Not set)\n\
         \tExecution time: 30 seconds\n\
         \tReceive using: Listeners\n\
         \tDomain: 1\n\
         \tDynamic Data: No\n\
         \tCRC Enabled: No\n\
         \tMessage Length Header Extension Enabled: No\n\
         \tFlatData: No\n\
         \tZero Copy: No\n\
         \tAsynchronous Publishing: No\n\
         \tXML File: perftest_qos_profiles.xml\n\
         \tNetwork capture: No\n\
         \nTransport Configuration:\n\
         \tKind: UDPv4\n\n",
        version_line(false)
    );
    assert_eq!(text, expected);
}

#[test]
fn startup_summary_variants() {
    let opts = Options::parse(&[
        "-pub",
        "-latencyTest",
        "-bestEffort",
        "-keyed",
        "-numIter",
        "500",
    ])
    .unwrap();
    let text = startup_summary(&opts, opts.batching(true), &[]);
    assert!(text.contains("Mode: LATENCY TEST (Ping-Pong test)\n"));
    assert!(text.contains("\tReliability: Best Effort\n"));
    assert!(text.contains("\tKeyed: Yes\n"));
    assert!(text.contains("\tLatency count: 1 latency sample every 1 samples\n"));
    assert!(text.contains(
        "\tBatching: Disabled by RTI Perftest.\n\t\t  BatchSize disabled for a Latency Test\n"
    ));
    assert!(text.contains("\tNumber of samples: 500\n"));
    let opts = Options::parse(&["-sub", "-sidMultiSubTest", "3", "-raw"]).unwrap();
    let text = startup_summary(&opts, BatchingState::Off, &[]);
    assert!(text.contains("\tSubscriber ID: 3\n"));
    assert!(text.contains("\tMiddleware: Raw Transport\n"));
    assert!(!text.contains("Mode:"));
    assert!(!text.contains("Batching"));
    let opts = Options::parse(&["-pub", "-pubRate", "1000:spin", "-batchSize", "0"]).unwrap();
    let text = startup_summary(&opts, opts.batching(true), &[]);
    assert!(text.contains("\tPublication Rate: 1000 Samples/s (Spin)\n"));
    assert!(text.contains("\tBatching: No (Use \"-batchSize\" to setup batching)\n"));
}
