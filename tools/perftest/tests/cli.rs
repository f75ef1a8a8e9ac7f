//! Option handling through the real binary: every bad option or value gives a clear
//! message on stderr and a non-zero exit code, quickly and without starting a test.

mod common;

use std::time::Duration;

use common::run;

fn fails_with(args: &[&str], needle: &str) {
    let r = run(args, Duration::from_secs(10));
    assert_ne!(r.code, Some(0), "{args:?} should fail");
    assert!(r.code.is_some(), "{args:?} must exit, not crash");
    assert!(
        r.stderr.contains(needle),
        "{args:?}: stderr {:?} lacks {needle:?}",
        r.stderr
    );
    assert!(
        r.stdout.is_empty(),
        "{args:?}: nothing on stdout, got {:?}",
        r.stdout
    );
}

#[test]
fn help_exits_zero() {
    for h in ["-help", "-h", "-HELP"] {
        let r = run(&[h], Duration::from_secs(10));
        assert_eq!(r.code, Some(0));
        assert!(r.stdout.contains("-dataLen"));
        assert!(r.stdout.contains("round-trip time / 2"));
    }
}

#[test]
fn unknown_and_malformed() {
    fails_with(&["-bogus"], "Cannot parse '-bogus', invalid input.");
    fails_with(&["pub"], "Cannot parse 'pub', invalid input.");
    fails_with(&["-hel"], "Cannot parse '-hel', invalid input.");
    fails_with(&["-dataLen"], "Missing value for '-dataLen'.");
    fails_with(&["-dataLen", "-pub"], "Missing value for '-dataLen'.");
    fails_with(&["-dataLen", "abc"], "Invalid value 'abc' for '-dataLen'");
    fails_with(&["-dataLen", "27"], "Invalid value '27' for '-dataLen'");
    fails_with(&["-domain", "251"], "Invalid value '251' for '-domain'");
    fails_with(
        &["-outputFormat", "xml"],
        "Invalid value 'xml' for '-outputFormat'",
    );
    fails_with(&["-pubRate", "100"], "Invalid value '100' for '-pubRate'");
    fails_with(&["-pubRate", "100:fast"], "'spin' or 'sleep'");
    fails_with(&["-threadPriorities", "1:2"], "-threadPriorities");
    fails_with(&["-threadCPUAffinity", "a:b"], "-threadCPUAffinity");
    fails_with(
        &["-transport", "udpv4"],
        "Invalid value 'udpv4' for '-transport'",
    );
}

#[test]
fn numbers_with_trailing_garbage_are_refused() {
    fails_with(
        &["-dataLen", "100abc"],
        "Invalid value '100abc' for '-dataLen'",
    );
    fails_with(
        &["-pub", "-exec", "10s"],
        "Invalid value '10s' for '-executionTime'",
    );
    fails_with(&["-domain", "1.0"], "Invalid value '1.0' for '-domain'");
    fails_with(
        &["-pub", "-pubRate", "100k:spin"],
        "Invalid value '100k:spin' for '-pubRate'",
    );
}

#[test]
fn negative_numbers_have_their_own_message() {
    for args in [
        &["-dataLen", "-5"][..],
        &["-pub", "-sleep", "-1"][..],
        &["-pub", "-unbounded", "-100"][..],
    ] {
        fails_with(args, "negative values are not allowed");
        let r = run(args, Duration::from_secs(10));
        assert!(!r.stderr.contains("Missing value"), "{}", r.stderr);
    }
}

#[test]
fn ambiguous_prefix_lists_the_candidates() {
    fails_with(
        &["-pub", "-latency"],
        "Ambiguous option '-latency': it could be -latencyCount, -latencyFile, -latencyTest.",
    );
    fails_with(
        &["-d", "100"],
        "-dataLen, -doNotDropNetworkCapture, -domain",
    );
}

#[test]
fn raw_nic_must_be_an_address_or_an_interface() {
    fails_with(
        &["-pub", "-raw", "-nic", "no-such-if0"],
        "Invalid value 'no-such-if0' for '-nic': neither an IPv4 address nor the name of an interface",
    );
    // The message lists the interfaces there are.
    fails_with(&["-sub", "-raw", "-nic", "no-such-if0"], "lo");
}

#[test]
fn role_groups() {
    fails_with(
        &["-sub", "-latencyTest"],
        "Cannot use '-latencyTest' while setting '-sub'.",
    );
    fails_with(
        &["-sub", "-exec", "5"],
        "Cannot use '-executionTime' while setting '-sub'.",
    );
    fails_with(
        &["-pub", "-sid", "1"],
        "Cannot use '-sidMultiSubTest' while setting '-pub'.",
    );
    fails_with(&["-pub", "-sub"], "at the same time");
}

#[test]
fn semantic_conflicts() {
    fails_with(
        &["-pub", "-numIter", "5", "-latencyCount", "10"],
        "must not be smaller",
    );
    fails_with(
        &["-pub", "-latencyTest", "-batchSize", "1000"],
        "Latency test",
    );
    fails_with(
        &["-pub", "-latencyTest", "-pidMultiPubTest", "1"],
        "latency test",
    );
    fails_with(
        &["-pub", "-dataLen", "100000", "-batchSize", "8192"],
        "Large Data",
    );
    fails_with(&["-raw", "-dataLen", "70000"], "out of range");
    fails_with(&["-raw", "-keyed"], "'-keyed' is not supported");
    fails_with(&["-raw", "-best"], "'-bestEffort' is not supported");
    fails_with(
        &["-raw", "-multicast", "-peer", "127.0.0.1"],
        "cannot be combined",
    );
    fails_with(
        &["-pub", "-raw", "-peer", "127.0.0.1:5"],
        "subscriber 0 of '-numSubscribers 1' is not reached",
    );
    fails_with(
        &["-pub", "-raw", "-peer", "127.0.0.1:1-0"],
        "Invalid value '127.0.0.1:1-0' for '-peer'",
    );
    fails_with(&["-instances", "4"], "needs '-keyed'");
    fails_with(&["-raw", "-showResourceLimits"], "raw sockets have none");
}

#[test]
fn unsupported_features_fail_loudly() {
    for (args, opt) in [
        (
            &["-rawTransport", "-transport", "UDPv4_WAN"][..],
            "'-transport'",
        ),
        (&["-transport", "DTLS"][..], "'-transport'"),
        (
            &["-raw", "-secureGovernanceFile", "g.xml"][..],
            "'-secureGovernanceFile'",
        ),
        (&["-raw", "-networkCapture"][..], "'-networkCapture'"),
        (&["-raw", "-asynchronous"][..], "'-asynchronous'"),
        (&["-raw", "-scan"][..], "'-scan'"),
        (&["-rawTransport", "-qosFile", "x.xml"][..], "'-qosFile'"),
        (&["-cft", "1"][..], "'-cft'"),
        (&["-dynamicData"][..], "'-dynamicData'"),
        (&["-durability", "2"][..], "'-durability'"),
    ] {
        fails_with(args, opt);
        fails_with(args, "not supported");
    }
}

#[test]
fn prefix_spellings_of_the_reference_scripts_are_accepted() {
    // Parse-only check through the binary: an invalid trailing option proves the
    // earlier ones were accepted (the error names the trailing one).
    let r = run(
        &[
            "-pub",
            "-raw",
            "-noPrint",
            "-exec",
            "1",
            "-datalen",
            "64",
            "-batchSize",
            "0",
            "-noXML",
            "-best_bogus",
        ],
        Duration::from_secs(10),
    );
    assert_ne!(r.code, Some(0));
    assert!(
        r.stderr.contains("Cannot parse '-best_bogus'"),
        "{}",
        r.stderr
    );
}

#[cfg(not(feature = "dds"))]
#[test]
fn dds_mode_without_the_middleware_fails_loudly() {
    fails_with(&["-pub"], "DDS mode: middleware not available");
}
