//! perftest's QoS profiles (`-qosFile`, `-qosLibrary`, `-noXmlQos`): a profiles file is read
//! and changes the run (partitions from its default profile decide whether the two sides
//! match), the start-up summary names it, and a bad file stops perftest before it touches
//! the network with an error naming the file, line and element. Loopback only; bounded.
#![cfg(feature = "dds")]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{run, spawn, wait, wait_killed_after};

const T: Duration = Duration::from_secs(60);

fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrodds-qosxml-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Two libraries whose default profiles put the publisher and subscriber in different
/// partitions; the perftest profiles inherit from them.
fn partition_library(lib: &str, partition: &str, default: bool) -> String {
    format!(
        r#"  <qos_library name="{lib}">
    <qos_profile name="Base" is_default_qos="{default}">
      <datawriter_qos>
        <reliability><kind>RELIABLE_RELIABILITY_QOS</kind></reliability>
        <history><kind>KEEP_ALL_HISTORY_QOS</kind></history>
      </datawriter_qos>
      <datareader_qos>
        <reliability><kind>RELIABLE_RELIABILITY_QOS</kind></reliability>
        <history><kind>KEEP_ALL_HISTORY_QOS</kind></history>
      </datareader_qos>
      <publisher_qos><partition><name><element>{partition}</element></name></partition></publisher_qos>
      <subscriber_qos><partition><name><element>{partition}</element></name></partition></subscriber_qos>
    </qos_profile>
    <qos_profile name="ThroughputQos" base_name="Base"/>
    <qos_profile name="LatencyQos" base_name="Base"/>
    <qos_profile name="AnnouncementQos" base_name="Base">
      <datawriter_qos><durability><kind>TRANSIENT_LOCAL_DURABILITY_QOS</kind></durability></datawriter_qos>
      <datareader_qos><durability><kind>TRANSIENT_LOCAL_DURABILITY_QOS</kind></durability></datareader_qos>
    </qos_profile>
  </qos_library>
"#
    )
}

#[test]
fn the_profiles_file_decides_the_run() {
    let file = temp_file(
        "partitions.xml",
        &format!(
            "<dds>\n{}{}</dds>\n",
            partition_library("LibA", "A", true),
            partition_library("LibB", "B", false)
        ),
    );
    let f = file.to_str().unwrap();
    let side = |role: &str, lib: &str| {
        let mut a = vec![
            role,
            "-nic",
            "127.0.0.1",
            "-domain",
            "97",
            "-qosFile",
            f,
            "-qosLibrary",
            lib,
            "-noPrint",
        ];
        if role == "-pub" {
            a.extend([
                "-numIter",
                "2000",
                "-latencyCount",
                "100",
                "-batchSize",
                "0",
            ]);
        }
        spawn(&a)
    };
    // Same library: the run completes, and the summary names the file.
    let sub = side("-sub", "LibA");
    let publ = side("-pub", "LibA");
    let p = wait(publ, T, "publisher");
    let s = wait(sub, T, "subscriber");
    assert_eq!(p.code, Some(0), "{}\n{}", p.stdout, p.stderr);
    assert_eq!(s.code, Some(0), "{}\n{}", s.stdout, s.stderr);
    assert!(p.stderr.contains(&format!("XML File: {f}")), "{}", p.stderr);
    // Publisher and subscriber QoS (partitions) come from the file's default profile
    // (is_default_qos): a file whose default puts the subscriber in partition B keeps it
    // apart from a publisher in partition A.
    let other = temp_file(
        "partition-b.xml",
        &format!("<dds>\n{}</dds>\n", partition_library("LibA", "B", true)),
    );
    let sub = spawn(&[
        "-sub",
        "-nic",
        "127.0.0.1",
        "-domain",
        "99",
        "-qosFile",
        other.to_str().unwrap(),
        "-noPrint",
    ]);
    let publ = spawn(&[
        "-pub",
        "-nic",
        "127.0.0.1",
        "-domain",
        "99",
        "-qosFile",
        f,
        "-qosLibrary",
        "LibA",
        "-numIter",
        "2000",
        "-latencyCount",
        "100",
        "-noPrint",
    ]);
    // Partitions A and B never match: the publisher is still waiting after 4 s.
    let p = wait_killed_after(publ, Duration::from_secs(4));
    let s = wait_killed_after(sub, Duration::from_secs(1));
    assert!(
        p.stderr.contains("Waiting to discover") && !p.stderr.contains("Sending data"),
        "the partitions should keep the sides apart:\n{}",
        p.stderr
    );
    let _ = s;
}

#[test]
fn no_xml_qos_uses_the_compiled_in_profiles() {
    let sub = spawn(&[
        "-sub",
        "-nic",
        "127.0.0.1",
        "-domain",
        "88",
        "-noXmlQos",
        "-noPrint",
        "-dataLen",
        "100",
    ]);
    let publ = spawn(&[
        "-pub",
        "-nic",
        "127.0.0.1",
        "-domain",
        "88",
        "-noXmlQos",
        "-numIter",
        "1000",
        "-latencyCount",
        "100",
        "-noPrint",
        "-dataLen",
        "100",
    ]);
    let p = wait(publ, T, "publisher");
    let s = wait(sub, T, "subscriber");
    assert_eq!(p.code, Some(0), "{}", p.stderr);
    assert_eq!(s.code, Some(0), "{}", s.stderr);
    assert!(p.stderr.contains("XML File: Disabled"), "{}", p.stderr);
}

#[test]
fn bad_profiles_files_are_clear_errors() {
    let cases: Vec<(String, Vec<String>)> = vec![
        (
            "<dds>\n<qos_library name=\"PerftestQosLibrary\">\n<qos_profile name=\"ThroughputQos\">\n<datawriter_qos>\n<latency_budget/>\n</datawriter_qos></qos_profile></qos_library></dds>".into(),
            vec!["bad1.xml:5:".into(), "<latency_budget>".into()],
        ),
        (
            "<dds>\n<qos_library name=\"PerftestQosLibrary\">\n<qos_profile name=\"ThroughputQos\">\n<datareader_qos><reliability><kind>RELIABLE</kind></reliability></datareader_qos></qos_profile></qos_library></dds>".into(),
            vec!["bad2.xml:4:".into(), "'RELIABLE'".into(), "RELIABLE_RELIABILITY_QOS".into()],
        ),
        (
            "<dds>\n<qos_library name=\"PerftestQosLibrary\">\n<qos_profile name=\"ThroughputQos\" base_name=\"Missing\"/></qos_library></dds>".into(),
            vec!["bad3.xml:3:".into(), "PerftestQosLibrary::Missing is not defined".into()],
        ),
        (
            "<dds><qos_library name=\"PerftestQosLibrary\"><qos_profile name=\"ThroughputQos\"/></qos_library></dds>".into(),
            vec!["no QoS profile PerftestQosLibrary::LatencyQos".into()],
        ),
        (
            "<dds><qos_library name=\"PerftestQosLibrary\">".into(),
            vec!["bad5.xml:1: not well-formed XML".into()],
        ),
    ];
    for (i, (text, wants)) in cases.iter().enumerate() {
        let f = temp_file(&format!("bad{}.xml", i + 1), text);
        let r = run(
            &[
                "-pub",
                "-nic",
                "127.0.0.1",
                "-domain",
                "89",
                "-qosFile",
                f.to_str().unwrap(),
            ],
            Duration::from_secs(20),
        );
        assert_eq!(r.code, Some(2), "case {i}: {}", r.stderr);
        for w in wants {
            assert!(
                r.stderr.contains(w.as_str()),
                "case {i}: want {w}: {}",
                r.stderr
            );
        }
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
    let r = run(
        &[
            "-pub",
            "-nic",
            "127.0.0.1",
            "-domain",
            "89",
            "-qosFile",
            "/nonexistent/qos.xml",
        ],
        Duration::from_secs(20),
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("/nonexistent/qos.xml:0: cannot read"),
        "{}",
        r.stderr
    );
    let r = run(
        &[
            "-pub",
            "-nic",
            "127.0.0.1",
            "-domain",
            "89",
            "-qosLibrary",
            "NoSuchLib",
        ],
        Duration::from_secs(20),
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("no QoS profile NoSuchLib::ThroughputQos"),
        "{}",
        r.stderr
    );
}
