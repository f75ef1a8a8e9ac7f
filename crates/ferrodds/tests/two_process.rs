//! Two processes: the `shapes` binary as subscriber (or publisher) and a participant in the
//! test, over loopback only.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use ferrodds::cdr::types::ShapeType;
use ferrodds::{DataReaderQos, DataWriterQos, PublisherQos, SubscriberQos, TopicQos};

fn shapes(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_shapes"));
    c.args([
        "--interface",
        "127.0.0.1",
        "--peer",
        "127.0.0.1",
        "--no-multicast",
    ])
    .args(args)
    .env_remove("FERRODDS_INTERFACE")
    .env_remove("FERRODDS_PEERS")
    .env_remove("FERRODDS_MULTICAST")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    c
}

/// Waits for the child to exit within `timeout` (killing it otherwise) and returns its
/// stdout lines and exit success.
fn finish(mut child: Child, timeout: Duration) -> (Vec<String>, bool) {
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let lines = reader.join().expect("reader thread");
    (lines, status.is_some_and(|s| s.success()))
}

#[test]
fn shapes_subscriber_prints_samples_from_this_process() {
    with_timeout(60, || {
        let child = shapes(&[
            "-S",
            "-t",
            "Circle",
            "-d",
            "160",
            "-r",
            "--keep-all",
            "--count",
            "20",
            "--duration",
            "30",
        ])
        .spawn()
        .expect("spawn shapes");
        let p = participant(160);
        let t = p
            .create_topic::<ShapeType>("Circle", TopicQos::default())
            .unwrap();
        let w = p
            .create_publisher(PublisherQos::default())
            .unwrap()
            .create_datawriter(&t, DataWriterQos::default().keep_all())
            .unwrap();
        assert!(
            w.wait_for_matched(1, Duration::from_secs(20)),
            "shapes subscriber not matched"
        );
        // matching is asymmetric: let the subscriber process match us too
        std::thread::sleep(Duration::from_millis(300));
        for i in 0..20 {
            w.write(&ShapeType {
                color: "RED".into(),
                x: i,
                y: 2 * i,
                shapesize: 25,
            })
            .unwrap();
        }
        w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
        let (lines, ok) = finish(child, Duration::from_secs(20));
        assert!(ok, "shapes exited with failure; output: {lines:?}");
        let samples: Vec<&String> = lines.iter().filter(|l| l.starts_with("Circle ")).collect();
        assert_eq!(samples.len(), 20, "{lines:?}");
        for (i, l) in samples.iter().enumerate() {
            assert_eq!(**l, format!("Circle RED {} {} 25", i, 2 * i));
        }
        assert!(lines
            .iter()
            .any(|l| l == "SUMMARY received=20 in_order=true gaps=0"));
    });
}

#[test]
fn shapes_publisher_to_this_process() {
    with_timeout(60, || {
        let p = participant(161);
        let t = p
            .create_topic::<ShapeType>("Square", TopicQos::default())
            .unwrap();
        let r = p
            .create_subscriber(SubscriberQos::default())
            .unwrap()
            .create_datareader(&t, DataReaderQos::default().reliable().keep_all())
            .unwrap();
        let child = shapes(&[
            "-P",
            "-t",
            "Square",
            "-c",
            "GREEN",
            "-d",
            "161",
            "--sequence",
            "--count",
            "50",
            "--rate",
            "200",
            "--wait-matched",
            // No time limit (this used to panic): `--count` ends the run.
            "--duration",
            "inf",
        ])
        .spawn()
        .expect("spawn shapes");
        let mut xs = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while xs.len() < 50 && Instant::now() < deadline {
            let _ = r.wait_for_data(Duration::from_millis(100));
            for s in r.take().unwrap() {
                if let Some(d) = s.data {
                    assert_eq!(d.color, "GREEN");
                    assert_eq!(d.shapesize, 30);
                    xs.push(d.x);
                }
            }
        }
        let (lines, ok) = finish(child, Duration::from_secs(20));
        assert!(ok, "shapes publisher failed: {lines:?}");
        assert_eq!(xs, (0..50).collect::<Vec<i32>>());
        assert!(lines.iter().any(|l| l == "PUBLISHED 50"), "{lines:?}");
    });
}

#[test]
fn two_shapes_processes() {
    with_timeout(60, || {
        let sub = shapes(&[
            "-S",
            "-t",
            "Triangle",
            "-d",
            "162",
            "--sequence",
            "--quiet",
            "--count",
            "100",
            "--duration",
            "30",
        ])
        .spawn()
        .expect("spawn subscriber");
        let publ = shapes(&[
            "-P",
            "-t",
            "Triangle",
            "-c",
            "YELLOW",
            "-d",
            "162",
            "--sequence",
            "--count",
            "100",
            "--rate",
            "0",
            "--wait-matched",
            "--duration",
            "30",
        ])
        .spawn()
        .expect("spawn publisher");
        let (sub_lines, sub_ok) = finish(sub, Duration::from_secs(40));
        let (pub_lines, pub_ok) = finish(publ, Duration::from_secs(10));
        assert!(pub_ok, "publisher: {pub_lines:?}");
        assert!(sub_ok, "subscriber: {sub_lines:?}");
        assert_eq!(
            sub_lines.last().map(String::as_str),
            Some("SUMMARY received=100 in_order=true gaps=0")
        );
    });
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig} {pid} failed");
    if sig == "-STOP" {
        // `kill` returns once the signal is sent; a thread running on the other CPU may still
        // handle a datagram (and acknowledge it) before it stops. Wait until every thread is.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !all_threads_stopped(pid) {
            assert!(Instant::now() < deadline, "process {pid} did not stop");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Whether every thread of `pid` is stopped (state `T` in `/proc/PID/task/TID/stat`).
fn all_threads_stopped(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().all(|t| {
        std::fs::read_to_string(t.path().join("stat")).is_ok_and(|stat| {
            // The state follows the command name, which is in parentheses.
            stat.rsplit_once(") ")
                .and_then(|(_, rest)| rest.chars().next())
                .is_some_and(|c| c == 'T' || c == 't')
        })
    })
}

/// Strict reliability: with KEEP_ALL and `max_samples` 5, a writer whose reader stopped
/// acknowledging (the reader process is SIGSTOPped) blocks `max_blocking_time` and returns
/// `Timeout`; once the reader resumes, writing continues and nothing is lost.
#[test]
fn keep_all_writer_blocks_then_times_out_while_reader_is_stopped() {
    with_timeout(90, || {
        let child = shapes(&[
            "-S",
            "-t",
            "Square",
            "-d",
            "163",
            "-r",
            "--sequence",
            "--quiet",
            "--count",
            "40",
            "--duration",
            "60",
        ])
        .spawn()
        .expect("spawn shapes");
        let pid = child.id();
        let p = participant(163);
        let t = p
            .create_topic::<ShapeType>("Square", TopicQos::default())
            .unwrap();
        let w = p
            .create_publisher(PublisherQos::default())
            .unwrap()
            .create_datawriter(
                &t,
                DataWriterQos::default()
                    .keep_all()
                    .resource_limits(ferrodds::ResourceLimits {
                        max_samples: Some(5),
                        ..Default::default()
                    })
                    .max_blocking_time(Duration::from_millis(300)),
            )
            .unwrap();
        assert!(w.wait_for_matched(1, Duration::from_secs(20)));
        std::thread::sleep(Duration::from_millis(300));
        let shape = |x: i32| ShapeType {
            color: "BLUE".into(),
            x,
            y: 0,
            shapesize: 30,
        };
        let mut n = 0;
        while n < 10 {
            if w.write(&shape(n)).is_ok() {
                n += 1;
            }
        }
        w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
        signal(pid, "-STOP");
        for _ in 0..5 {
            w.write(&shape(n))
                .expect("history has room for 5 unacknowledged samples");
            n += 1;
        }
        let t0 = Instant::now();
        let r = w.write(&shape(n));
        let blocked = t0.elapsed();
        signal(pid, "-CONT");
        assert!(matches!(r, Err(ferrodds::DdsError::Timeout)), "{r:?}");
        assert!(
            blocked >= Duration::from_millis(250),
            "blocked only {blocked:?}"
        );
        assert!(blocked < Duration::from_secs(3), "blocked {blocked:?}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while n < 40 && Instant::now() < deadline {
            match w.write(&shape(n)) {
                Ok(()) => n += 1,
                Err(ferrodds::DdsError::Timeout) => {}
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(n, 40);
        let (lines, ok) = finish(child, Duration::from_secs(20));
        assert!(ok, "{lines:?}");
        assert_eq!(
            lines.last().map(String::as_str),
            Some("SUMMARY received=40 in_order=true gaps=0")
        );
    });
}

/// The `FERRODDS_*` environment overrides alone (no CLI flags) pin `shapes` to loopback
/// unicast discovery.
#[test]
fn env_overrides_configure_the_shapes_process() {
    with_timeout(60, || {
        let child = Command::new(env!("CARGO_BIN_EXE_shapes"))
            .args([
                "-S",
                "-t",
                "Square",
                "-d",
                "165",
                "--sequence",
                "--quiet",
                "--count",
                "10",
                "--duration",
                "30",
            ])
            .env("FERRODDS_INTERFACE", "127.0.0.1")
            .env("FERRODDS_PEERS", "127.0.0.1")
            .env("FERRODDS_MULTICAST", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn shapes");
        let p = participant(165);
        let t = p
            .create_topic::<ShapeType>("Square", TopicQos::default())
            .unwrap();
        let w = p
            .create_publisher(PublisherQos::default())
            .unwrap()
            .create_datawriter(&t, DataWriterQos::default().keep_all())
            .unwrap();
        assert!(
            w.wait_for_matched(1, Duration::from_secs(20)),
            "env-configured shapes not matched"
        );
        std::thread::sleep(Duration::from_millis(300));
        for x in 0..10 {
            w.write(&ShapeType {
                color: "CYAN".into(),
                x,
                y: 0,
                shapesize: 5,
            })
            .unwrap();
        }
        w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
        let (lines, ok) = finish(child, Duration::from_secs(20));
        assert!(ok, "{lines:?}");
        assert_eq!(
            lines.last().map(String::as_str),
            Some("SUMMARY received=10 in_order=true gaps=0")
        );
    });
}
