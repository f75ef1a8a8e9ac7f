//! Unit tests of option parsing, validation and the run plan.

use std::path::PathBuf;

use super::*;
use crate::error::OptionError;

fn parse(args: &str) -> Result<Options, OptionError> {
    let v: Vec<&str> = args.split_whitespace().collect();
    Options::parse(&v)
}

#[test]
fn table_is_sorted_and_unique() {
    for w in OPTIONS.windows(2) {
        assert!(w[0].name < w[1].name, "{} !< {}", w[0].name, w[1].name);
    }
}

#[test]
fn prefixes_from_the_reference_scripts() {
    let cases = [
        ("-exec", "-executionTime"),
        ("-best", "-bestEffort"),
        ("-noPrint", "-noPrintIntervals"),
        ("-raw", "-rawTransport"),
        ("-initialBurst", "-initialBurstSize"),
        ("-noXML", "-noXmlQos"),
        ("-sid", "-sidMultiSubTest"),
        ("-dom", "-domain"),
        ("-dataL", "-dataLen"),
        ("-doNot", "-doNotDropNetworkCapture"),
        ("-datalen", "-dataLen"),
        ("-PUB", "-pub"),
        ("-pubRate", "-pubRate"),
        ("-multicast", "-multicast"),
        ("-transport", "-transport"),
        ("-noprint", "-noPrintIntervals"),
        ("-help", "-help"),
        ("-H", "-h"),
    ];
    for (arg, want) in cases {
        assert_eq!(lookup(arg).map(|s| s.name), Some(want), "{arg}");
    }
    assert!(lookup("-").is_none());
    assert!(lookup("-hel").is_none(), "help must be exact");
    assert!(lookup("-bogus").is_none());
    assert!(lookup("dataLen").is_none());
}

#[test]
fn ambiguous_prefixes_list_the_candidates() {
    for (arg, candidates) in [
        (
            "-d",
            &[
                "-dataLen",
                "-doNotDropNetworkCapture",
                "-domain",
                "-durability",
                "-dynamicData",
            ][..],
        ),
        (
            "-latency",
            &["-latencyCount", "-latencyFile", "-latencyTest"][..],
        ),
        ("-pubR", &["-pubRate", "-pubRatebps"][..]),
    ] {
        assert_eq!(
            resolve(arg).unwrap_err(),
            OptionError::Ambiguous {
                arg: arg.to_string(),
                candidates: candidates.to_vec(),
            },
            "{arg}"
        );
        assert!(lookup(arg).is_none());
    }
    let msg = parse("-pub -latency").unwrap_err().to_string();
    assert_eq!(
        msg,
        "Ambiguous option '-latency': it could be -latencyCount, -latencyFile, -latencyTest."
    );
}

#[test]
fn numbers_are_strict() {
    for (args, want) in [
        ("-dataLen 100abc", "Invalid value '100abc' for '-dataLen'"),
        ("-dataLen 1.5", "Invalid value '1.5' for '-dataLen'"),
        ("-dataLen  ", "Missing value for '-dataLen'"),
        ("-pub -exec 5s", "Invalid value '5s' for '-executionTime'"),
        (
            "-pub -pubRate 10x:spin",
            "Invalid value '10x:spin' for '-pubRate'",
        ),
        ("-pub -scan 32:64k", "Invalid value '32:64k' for '-scan'"),
        ("-domain 99999999999999999999999", "value out of range"),
        (
            "-dataLen -5",
            "Invalid value '-5' for '-dataLen': negative values are not allowed.",
        ),
        (
            "-pub -unbounded -100",
            "Invalid value '-100' for '-unbounded': negative values",
        ),
        (
            "-pub -pubRate -5:spin",
            "Invalid value '-5:spin' for '-pubRate': negative values",
        ),
    ] {
        let err = parse(args).unwrap_err().to_string();
        assert!(err.contains(want), "{args}: {err}");
    }
    assert_eq!(parse("-dataLen +200").unwrap().data_len, 200);
    assert_eq!(scan_u64("007"), Ok(7));
    assert_eq!(scan_u64(" 7"), Err(NumError::NotANumber));
    assert_eq!(scan_u64("-7"), Err(NumError::Negative));
}

#[test]
fn defaults_and_values() {
    let o = parse("-pub -datalen 200 -exec 5 -noPrint -raw").unwrap();
    assert_eq!(o.role, Role::Publisher);
    assert_eq!(o.data_len, 200);
    assert_eq!(o.execution_time, 5);
    assert!(o.no_print_intervals && o.raw);
    assert_eq!(o.effective_num_iter(), 100_000_000);
    assert_eq!(o.effective_latency_count(), 10_000);
    let o = parse("-pub -latencyTest").unwrap();
    assert_eq!(o.effective_latency_count(), 1);
    assert_eq!(o.effective_num_iter(), 10_000_000);
    // Unlike RTI's scanf, trailing junk is refused (see numbers_are_strict).
    assert!(parse("-dataLen 128abc").is_err());
}

#[test]
fn errors() {
    assert_eq!(
        parse("-bogus").unwrap_err().to_string(),
        "Cannot parse '-bogus', invalid input."
    );
    assert_eq!(
        parse("-dataLen").unwrap_err(),
        OptionError::MissingValue("-dataLen")
    );
    assert_eq!(
        parse("-dataLen -pub").unwrap_err(),
        OptionError::MissingValue("-dataLen")
    );
    assert!(matches!(
        parse("-dataLen 27"),
        Err(OptionError::BadValue { .. })
    ));
    assert!(matches!(
        parse("-dataLen x"),
        Err(OptionError::BadValue { .. })
    ));
    assert!(matches!(
        parse("-domain 251"),
        Err(OptionError::BadValue { .. })
    ));
    assert_eq!(
        parse("-sub -latencyTest").unwrap_err().to_string(),
        "Cannot use '-latencyTest' while setting '-sub'."
    );
    assert_eq!(
        parse("-pub -sidMultiSubTest 1").unwrap_err().to_string(),
        "Cannot use '-sidMultiSubTest' while setting '-pub'."
    );
    // Without an explicit -sub, publisher options are accepted.
    assert!(parse("-latencyCount 5 -numIter 10").is_ok());
    assert!(matches!(
        parse("-pub -numIter 5 -latencyCount 10"),
        Err(OptionError::NumIterBelowLatencyCount { .. })
    ));
    assert!(matches!(
        parse("-transport DTLS"),
        Err(OptionError::Unsupported { .. })
    ));
    assert!(matches!(
        parse("-transport udpv4"),
        Err(OptionError::BadValue { .. })
    ));
    assert!(matches!(
        parse("-pub -latencyTest -batchSize 1000"),
        Err(OptionError::Conflict(_))
    ));
    assert!(matches!(
        parse("-raw -keyed"),
        Err(OptionError::Unsupported { .. })
    ));
    assert!(matches!(
        parse("-raw -dataLen 65501"),
        Err(OptionError::DataLenRange { .. })
    ));
    assert!(matches!(
        parse("-pubRate 100"),
        Err(OptionError::BadValue { .. })
    ));
    assert!(matches!(parse("-pub -sub"), Err(OptionError::Conflict(_))));
    assert!(matches!(
        parse("-raw -secureGovernanceFile x"),
        Err(OptionError::Unsupported { .. })
    ));
}

#[test]
fn secure_options() {
    let o = parse(
        "-secureGovernanceFile g.xml -secureCertFile c.pem -secureEncryptionAlgorithm AES-256-GCM",
    )
    .unwrap();
    let s = o.secure.unwrap();
    assert_eq!(s.governance.as_deref(), Some("g.xml"));
    assert_eq!(s.cert.as_deref(), Some("c.pem"));
    assert_eq!(s.encryption_algorithm.as_deref(), Some("aes-256-gcm"));
    assert!(parse("-pub").unwrap().secure.is_none());
    // RTI Perftest 4.0's flags name a governance file.
    let s = parse("-secureSign").unwrap().secure.unwrap();
    assert_eq!(
        s.legacy_governance_name(),
        "signed_PerftestGovernance_Sign.xml"
    );
    let s = parse("-secureEncryptDiscovery -secureSign -secureEncryptData -secureEncryptSM")
        .unwrap()
        .secure
        .unwrap();
    assert_eq!(
        s.legacy_governance_name(),
        "signed_PerftestGovernance_DiscoverySignEncryptBoth.xml"
    );
    let s = parse("-secureEncryptSM").unwrap().secure.unwrap();
    assert_eq!(
        s.legacy_governance_name(),
        "signed_PerftestGovernance_EncryptSubmessage.xml"
    );
}

#[test]
fn structured_values() {
    let o =
        parse("-pubRate 1000:spin -threadPriorities h:n:10 -threadCPUAffinity 0,2-3:1").unwrap();
    assert_eq!(
        o.pub_rate,
        Some(PubRate {
            rate: 1000,
            method: RateMethod::Spin
        })
    );
    let p = o.thread_priorities.unwrap();
    assert_eq!(
        (p.main, p.receive, p.event),
        (Priority::High, Priority::Normal, Priority::Value(10))
    );
    let a = o.thread_cpu_affinity.unwrap();
    assert_eq!(a.main, vec![0, 2, 3]);
    assert_eq!(a.receive, vec![1]);
    assert!(a.database.is_empty());
    assert!(parse("-threadCPUAffinity 3-1").is_err());
    assert!(parse("-threadPriorities 1:2").is_err());
    let o = parse("-latencyFile -pub").unwrap();
    assert_eq!(
        o.latency_file.unwrap(),
        PathBuf::from("latency_samples.csv")
    );
    assert_eq!(
        parse("-outputFormat JSON").unwrap().output_format,
        OutputFormat::Json
    );
}

#[test]
fn raw_peers() {
    let (a, ids) = parse_raw_pub_peer("10.0.0.2:1-2").unwrap();
    assert_eq!(a, std::net::Ipv4Addr::new(10, 0, 0, 2));
    assert_eq!(ids, vec![1, 2]);
    // As RTI's (`sscanf("%[^:]:%d")` with id 0 by default): ADDR is subscriber 0 only,
    // whatever -numSubscribers says; ids are not bounded by it.
    assert_eq!(parse_raw_pub_peer("10.0.0.2").unwrap().1, vec![0]);
    assert_eq!(parse_raw_pub_peer("10.0.0.2:5").unwrap().1, vec![5]);
    assert!(parse_raw_pub_peer("10.0.0.2:2-1").is_err());
    assert!(parse_raw_pub_peer("10.0.0.2:65535").is_err());
    assert!(parse_raw_pub_peer("host:1").is_err());
    // Every subscriber must be reached by the explicit peers.
    assert!(parse("-pub -raw -numSubscribers 2 -peer 127.0.0.1:0-1").is_ok());
    assert!(parse("-pub -raw -numSubscribers 2 -peer 127.0.0.1:0 -peer 127.0.0.1:1").is_ok());
    assert!(parse("-pub -raw -numSubscribers 2").is_ok());
    assert!(parse("-pub -raw -peer 127.0.0.1:3").is_err());
    assert_eq!(
        parse("-pub -raw -numSubscribers 2 -peer 10.0.0.2")
            .unwrap_err()
            .to_string(),
        "With -rawTransport the publisher sends only to the subscriber ids its '-peer's name (ADDR is id 0, ADDR:ID, ADDR:FIRST-LAST): subscriber 1 of '-numSubscribers 2' is not reached; give e.g. '-peer ADDR:0-1'."
    );
}

#[test]
fn scan_async_and_flow_controller() {
    let o = parse("-pub -scan").unwrap();
    assert_eq!(o.scan.as_deref(), Some(&DEFAULT_SCAN_SIZES[..]));
    assert_eq!(o.data_len, 64900);
    assert_eq!(o.execution_time, DEFAULT_SCAN_SECONDS);
    let o = parse("-pub -scan 1024:32:64:32 -exec 3").unwrap();
    assert_eq!(o.sizes(), vec![32, 64, 1024]);
    assert_eq!((o.data_len, o.execution_time), (1024, 3));
    // Batching applies to every size (no "< 2 x dataLen" rule with -scan).
    assert_eq!(o.batching(true), BatchingState::On(8192));
    assert_eq!(parse("-pub -dataLen 64").unwrap().sizes(), vec![64]);
    assert!(parse("-pub -scan 32:100000").is_err());
    assert!(parse("-pub -scan 10").is_err());
    assert!(parse("-pub -scan 32:x").is_err());
    assert!(parse("-sub -scan").is_err());
    assert!(parse("-pub -raw -scan 32:64").is_err());
    let o = parse("-pub -asynchronous -flowController 1Gbps").unwrap();
    assert!(o.asynchronous);
    assert_eq!(o.flow_controller, FlowControllerName::Gbps1);
    assert_eq!(
        parse("-flowController 10Gbps").unwrap().flow_controller,
        FlowControllerName::Gbps10
    );
    assert!(parse("-flowController 5Gbps").is_err());
    assert!(parse("-raw -asynchronous").is_err());
}

#[test]
fn batching_rules() {
    let b = |s: &str| parse(s).unwrap().batching(true);
    assert_eq!(b("-pub"), BatchingState::On(8192));
    assert_eq!(b("-pub -raw"), BatchingState::Off);
    assert_eq!(b("-pub -raw -batchSize 1000"), BatchingState::On(1000));
    assert_eq!(b("-pub -batchSize 0"), BatchingState::Off);
    assert!(matches!(
        b("-pub -dataLen 5000"),
        BatchingState::Disabled(_)
    ));
    assert!(matches!(b("-pub -latencyTest"), BatchingState::Disabled(_)));
    assert!(matches!(
        b("-pub -dataLen 100000"),
        BatchingState::Disabled(_)
    ));
    assert!(matches!(
        b("-pub -pubRate 10:sleep"),
        BatchingState::Disabled(_)
    ));
    assert_eq!(
        parse("-pub").unwrap().batching(false),
        BatchingState::Unavailable
    );
    // -zeroCopy: no batching, as RTI's (FlatData); "-batchSize 0" is plain "off".
    assert_eq!(
        b("-pub -zeroCopy"),
        BatchingState::Disabled("BatchSize cannot be used with FlatData and/or Zero-Copy.")
    );
    assert_eq!(
        b("-pub -zeroCopy -dataLen 100000"),
        BatchingState::Disabled("BatchSize cannot be used with FlatData and/or Zero-Copy.")
    );
    assert_eq!(b("-pub -zeroCopy -batchSize 0"), BatchingState::Off);
    assert!(matches!(
        b("-pub -zeroCopy -latencyTest"),
        BatchingState::Disabled("BatchSize disabled for a Latency Test")
    ));
    // -loaningSendReceive: no batching either, on any transport.
    assert_eq!(
        b("-pub -loaningSendReceive -transport UDPv4"),
        BatchingState::Disabled("BatchSize cannot be used with -loaningSendReceive.")
    );
    assert_eq!(
        b("-pub -loaningSendReceive -batchSize 0"),
        BatchingState::Off
    );
    assert!(
        parse("-sub -loaningSendReceive -transport TCP")
            .unwrap()
            .loaning
    );
    // By reference only where shared memory carries the samples.
    for (args, by_ref) in [
        ("-sub -zeroCopy", true),
        ("-sub -loaningSendReceive", true),
        ("-sub -loaningSendReceive -checkConsistency", true),
        ("-sub -loaningSendReceive -transport UDPv4", false),
        ("-pub -loaningSendReceive -asynchronous", false),
        ("-sub", false),
    ] {
        assert_eq!(parse(args).unwrap().by_reference(), by_ref, "{args}");
    }
    for ok in [
        "-pub -zeroCopy",
        "-pub -zeroCopy -transport SHMEM",
        "-pub -zeroCopy -transport UDPv4 -enableSharedMemory",
    ] {
        assert!(parse(ok).unwrap().zero_copy, "{ok}");
    }
    let o = parse("-pub").unwrap();
    assert_eq!(o.initial_burst(BatchingState::On(8192)), 50 * 81);
    let o = parse("-pub -raw").unwrap();
    assert_eq!(o.initial_burst(BatchingState::Off), 1);
}

#[test]
fn capability_refusals_name_the_reason() {
    let cases = [
        ("-transport UDPv6", "'-transport' is not supported by FerroDDS perftest: only UDPv4, TCP, TLS, UDPv4_WAN and SHMEM are available."),
        ("-raw -transport UDPv4_WAN", "'-transport' is not supported by FerroDDS perftest: only UDPv4, TCP, TLS and SHMEM are available with -rawTransport."),
        ("-transport SHMEM -peer 10.0.0.1", "'-transport SHMEM' runs on this host only: discovery goes over UDPv4 on the loopback interface, so '-nic', '-peer' and '-multicast' are not used with it."),
        ("-transport SHMEM -nic eth0", "'-transport SHMEM' runs on this host only: discovery goes over UDPv4 on the loopback interface, so '-nic', '-peer' and '-multicast' are not used with it."),
        ("-raw -transport SHMEM -peer 127.0.0.1", "'-rawTransport -transport SHMEM' runs on this host only: '-nic' and '-peer' are not used with it."),
        ("-raw -transport SHMEM -noBlockingSockets", "'-noBlockingSockets' is not supported by FerroDDS perftest: raw shared memory never blocks; -noBlockingSockets is for raw UDP."),
        ("-raw -enableSharedMemory", "'-enableSharedMemory' is not used with -rawTransport."),
        ("-transport TCP -enableSharedMemory", "'-enableSharedMemory' adds shared memory beside UDPv4: it cannot be used with '-transport TCP', 'TLS', 'UDPv4_WAN' or 'SHMEM'."),
        ("-raw -transport TCP -noBlockingSockets", "'-noBlockingSockets' is not supported by FerroDDS perftest: raw TCP/TLS writes block (TCP flow control); -noBlockingSockets is for raw UDP."),
        ("-raw -transport TCP -dataLen 10485761", "'-dataLen' 10485761 is out of range: 28..=10485760 for the raw TCP/TLS transport."),
        ("-raw -transport TCP -transportServerBindPort 7401", "'-transportServerBindPort' is not used with -rawTransport: the raw ports follow the RTPS port formula."),
        ("-raw -enableTCP", "'-enableTCP' is not used with -rawTransport: use '-transport TCP'."),
        ("-raw -transport TCP -peer tcpv4_lan://10.0.0.1:7400", "Invalid value 'tcpv4_lan://10.0.0.1:7400' for '-peer': expected an IPv4 address."),
        ("-transportVerbosity 4", "Invalid value '4' for '-transportVerbosity': value out of range."),
        ("-transportPrivateKey k.pem", "'-transportCertAuthority', '-transportCertFile' and '-transportPrivateKey' need '-transport TLS'."),
        ("-transportPublicAddress 1.2.3.4:7400", "'-transportPublicAddress' and '-transportHostPort' need '-transport UDPv4_WAN'."),
        ("-transport UDPv4_WAN -transportPublicAddress 1.2.3:7400", "Invalid value '1.2.3:7400' for '-transportPublicAddress': expected ADDR[:PORT] with an IPv4 address."),
        ("-transport UDPv4_WAN -transportPublicAddress 1.2.3.4:0", "Invalid value '1.2.3.4:0' for '-transportPublicAddress': expected a port in 1..=65535."),
        ("-transport UDPv4_WAN -peer tcpv4_lan://10.0.0.1:7400", "Invalid value 'tcpv4_lan://10.0.0.1:7400' for '-peer': unknown scheme: with -transport UDPv4_WAN peers are udpv4_wan://ADDR:PORT."),
        ("-transport UDPv4_WAN -multicast", "UDPv4_WAN has no multicast ('-multicast' cannot be used with it)."),
        ("-transportWanServerAddress 1.2.3.4", "'-transportWanServerAddress' is not supported by FerroDDS perftest: of the transport settings only -transportServerBindPort, -transportVerbosity, the TLS files (-transportCertAuthority, -transportCertFile, -transportPrivateKey), -transportPublicAddress and -transportHostPort are available."),
        ("-transport TLS -peer tcpv4_lan://10.0.0.1:7400", "Invalid value 'tcpv4_lan://10.0.0.1:7400' for '-peer': unknown scheme: with -transport TLS peers are tlsv4_lan://ADDR:PORT."),
        ("-transportServerBindPort 7401", "'-transportServerBindPort' needs '-transport TCP', '-transport TLS' or '-enableTCP'."),
        ("-transport TCP -peer udpv4://10.0.0.1:7400", "Invalid value 'udpv4://10.0.0.1:7400' for '-peer': unknown scheme: with -transport TCP peers are tcpv4_lan://ADDR:PORT."),
        ("-durability 2", "'-durability' is not supported by FerroDDS perftest: only 0 (VOLATILE) and 1 (TRANSIENT_LOCAL) are available."),
        ("-raw -durability 3", "'-durability' is not supported by FerroDDS perftest: only 0 (VOLATILE) and 1 (TRANSIENT_LOCAL) are available."),
        ("-raw -durability 1", "'-durability' is not supported by FerroDDS perftest: not available with -rawTransport (no DDS)."),
        ("-raw -secureGovernanceFile x", "'-secureGovernanceFile' is not supported by FerroDDS perftest: not available with -rawTransport (no DDS)."),
        ("-secureCertFile c.pem", "DDS Security needs '-secureGovernanceFile' (as RTI Perftest 4.1 and later): one of resource/secure/signed_PerftestGovernance_*.xml, or your own signed governance."),
        ("-secureSign -secureGovernanceFile g.xml", "'-secureGovernanceFile' and RTI Perftest 4.0's governance flags ('-secureSign', '-secureEncryptData', '-secureEncryptSM', '-secureEncryptBoth', '-secureEncryptDiscovery') cannot be combined: the flags only name a governance file."),
        ("-secureGovernanceFile g.xml -secureEncryptionAlgorithm aes-192-gcm", "Invalid value 'aes-192-gcm' for '-secureEncryptionAlgorithm': valid values are aes-128-gcm and aes-256-gcm (the builtin AES-GCM-GMAC plugin's key lengths)."),
        ("-secureGovernanceFile g.xml -secureEnableAAD", "'-secureEnableAAD' is not supported by FerroDDS perftest: additional authenticated data is an RTI extension of the cryptography plugin, not part of the OMG builtin AES-GCM-GMAC plugin that FerroDDS implements (and interoperates with)."),
        ("-lightWeightSecurity", "'-lightWeightSecurity' is not supported by FerroDDS perftest: pre-shared-key (Lightweight) security is RTI's own plugin, not the OMG DDS Security builtin plugins; FerroDDS implements PKI-DH, Permissions and AES-GCM-GMAC (use -secureGovernanceFile)."),
        ("-securePSK secret", "'-securePSK' is not supported by FerroDDS perftest: pre-shared-key (Lightweight) security is RTI's own plugin, not the OMG DDS Security builtin plugins; FerroDDS implements PKI-DH, Permissions and AES-GCM-GMAC (use -secureGovernanceFile)."),
        ("-secureLibrary libx.so", "'-secureLibrary' is not supported by FerroDDS perftest: FerroDDS's security plugins are built in (no dynamic library to load)."),
        ("-secureDebug 3", "'-secureDebug' is not supported by FerroDDS perftest: FerroDDS's security plugins have no log level of their own: perftest prints each failed authentication of a remote participant (certificate, handshake or permissions) with its reason while it waits for discovery."),
        ("-raw -qosFile x", "'-qosFile' is not supported by FerroDDS perftest: raw sockets have no QoS (not available with -rawTransport)."),
        ("-raw -qosLibrary x", "'-qosLibrary' is not supported by FerroDDS perftest: raw sockets have no QoS (not available with -rawTransport)."),
        ("-noXmlQos -qosFile x.xml", "'-noXmlQos' uses the QoS profiles compiled into perftest, '-qosFile' a file: give one of them."),
        ("-raw -networkCapture", "'-networkCapture' is not supported by FerroDDS perftest: raw sockets have no participant to capture: record them with tcpdump or dumpcap."),
        ("-doNotDropNetworkCapture", "'-doNotDropNetworkCapture' keeps the capture '-networkCapture' makes: give '-networkCapture' too."),
        ("-networkCaptureRemoveUserData", "'-networkCaptureRemoveUserData' applies to the capture '-networkCapture' makes: give '-networkCapture' too."),
        ("-cft 1", "'-cft' is not supported by FerroDDS perftest: FerroDDS has no content filters yet."),
        ("-transport TCP -multicastAddr 239.1.1.1", "'-transport TCP' and 'TLS' have no multicast ('-multicast' and '-multicastAddr' cannot be used with them)."),
        ("-transport TLS -multicast", "'-transport TCP' and 'TLS' have no multicast ('-multicast' and '-multicastAddr' cannot be used with them)."),
        ("-flatData", "'-flatData' is not supported by FerroDDS perftest: this QoS feature is not available in FerroDDS yet."),
        ("-raw -zeroCopy", "'-zeroCopy' is not supported by FerroDDS perftest: not available with -rawTransport (no DDS)."),
        ("-zeroCopy -transport UDPv4", "Zero Copy must be run with SHMEM as transport"),
        ("-loaningSendReceive -keyed", "'-loaningSendReceive' cannot be used with '-keyed': FerroDDS's writer loans are for unkeyed types (a loan carries no key hash)."),
        ("-pub -loaningSendReceive -batchSize 8192", "'-loaningSendReceive' cannot be used with batching: FerroDDS writes each loan as one sample (give '-batchSize 0' or no '-batchSize')."),
        ("-raw -loaningSendReceive", "'-loaningSendReceive' is not supported by FerroDDS perftest: not available with -rawTransport (no DDS)."),
        ("-checkConsistency", "'-checkConsistency' checks samples read in place: it can only be used with '-zeroCopy' or '-loaningSendReceive'."),
        ("-zeroCopy -asynchronous", "'-zeroCopy' cannot be used with '-asynchronous': FerroDDS sends a flow-controlled writer's samples as bytes, never by reference."),
        ("-raw -checkConsistency", "'-checkConsistency' is not supported by FerroDDS perftest: not available with -rawTransport (no DDS)."),
        ("-zeroCopy -transport TCP", "Zero Copy must be run with SHMEM as transport"),
        ("-zeroCopy -keyed", "'-zeroCopy' cannot be used with '-keyed': FerroDDS's writer loans are for unkeyed types (a loan carries no key hash)."),
        ("-pub -zeroCopy -batchSize 8192", "Batching cannot be used with FlatData and/or Zero-Copy ('-zeroCopy' disables batching: give '-batchSize 0' or no '-batchSize')."),
        ("-zeroCopy -secureGovernanceFile g.xml", "'-zeroCopy' cannot be used with DDS Security: FerroDDS sends protected samples through the shared-memory ring, never by reference."),
        ("-writerStats -pub", "'-writerStats' is not supported by FerroDDS perftest: not implemented in FerroDDS perftest."),
        ("-raw -keyed", "'-keyed' is not supported by FerroDDS perftest: not available with -rawTransport (no DDS)."),
        ("-raw -dataLen 65501", "'-dataLen' 65501 is out of range: 28..=65500 for the raw UDP transport (one sample per datagram)."),
        ("-raw -multicast -peer 10.0.0.1", "'-multicast' cannot be combined with '-peer' in raw mode: every topic goes to its multicast group (choose the groups with '-multicastAddr')."),
        ("-raw -multicastAddr 239.1.1.1 -peer 10.0.0.1", "'-multicast' cannot be combined with '-peer' in raw mode: every topic goes to its multicast group (choose the groups with '-multicastAddr')."),
        ("-raw -multicastAddr 10.0.0.1", "Invalid value '10.0.0.1' for '-multicastAddr': not an IPv4 multicast address (224.0.0.0 to 239.255.255.255)."),
        ("-raw -multicastAddr 239.1.1.1,239.1.1.2", "Invalid value '239.1.1.1,239.1.1.2' for '-multicastAddr': expected one IPv4 multicast address, or three separated by commas."),
        ("-raw -multicastAddr 239.1.1.x", "Invalid value '239.1.1.x' for '-multicastAddr': expected one IPv4 multicast address, or three separated by commas."),
        ("-raw -multicastAddr 239.255.255.254", "Invalid value '239.255.255.254' for '-multicastAddr': the Latency and Announcement groups (the next two addresses) leave the multicast range."),
        ("-raw -multicastAddr 239.1.1.1,239.1.1.2,10.1.1.3", "Invalid value '239.1.1.1,239.1.1.2,10.1.1.3' for '-multicastAddr': not an IPv4 multicast address (224.0.0.0 to 239.255.255.255)."),
        ("-raw -transport TCP -multicast", "'-multicast' is not supported by FerroDDS perftest: raw TCP/TLS is point to point (no multicast)."),
        ("-raw -transport SHMEM -multicastAddr 239.1.1.1", "'-multicastAddr' is not supported by FerroDDS perftest: raw shared memory has no multicast groups."),
        ("-multicast -nomulticast", "'-multicast' and '-nomulticast' cannot be used together."),
        ("-nomulticast -multicast", "'-multicast' and '-nomulticast' cannot be used together."),
        ("-receiveQueueSize 256", "'-receiveQueueSize' is not supported by FerroDDS perftest: RTI sets the reader's initial_samples (a preallocated pool), and FerroDDS readers preallocate no samples: their queue grows as samples arrive."),
        ("-unbounded 1000", "'-unbounded' is not supported by FerroDDS perftest: its threshold sets RTI's buffer pool (samples up to it preallocated, larger ones allocated), and FerroDDS allocates every sample's buffer as needed: give '-unbounded' without a value (the unbounded type is used either way)."),
        ("-unbounded 10", "Invalid value '10' for '-unbounded': value out of range."),
        ("-threadCPUAffinity 0:1:1:0", "'-threadCPUAffinity': FerroDDS has no database thread, so the third part (C, RTI's database thread) must be empty: give A:B::D."),
        ("-receiveQueueSize 0", "Invalid value '0' for '-receiveQueueSize': value out of range."),
        ("-noBlockingSockets", "'-noBlockingSockets' is not supported by FerroDDS perftest: only meaningful with -rawTransport."),
    ];
    for (args, want) in cases {
        assert_eq!(parse(args).unwrap_err().to_string(), want, "{args}");
    }
    assert!(parse("-multicast").is_ok());
    // -multicastAddr (raw UDP): one address and the next two, or three; implies -multicast.
    let o = parse("-raw -multicastAddr 239.1.1.1").unwrap();
    assert!(o.multicast);
    assert_eq!(
        o.multicast_groups.unwrap().map(|a| a.to_string()),
        ["239.1.1.1", "239.1.1.2", "239.1.1.3"]
    );
    let o = parse("-raw -multicastAddr 239.9.9.9,224.0.1.5,239.1.1.100").unwrap();
    assert_eq!(
        o.multicast_groups.unwrap().map(|a| a.to_string()),
        ["239.9.9.9", "224.0.1.5", "239.1.1.100"]
    );
    let o = parse("-raw -multicast").unwrap();
    assert!(o.multicast && o.multicast_groups.is_none());
    // -unbounded alone (also before another option) selects the unbounded type.
    for args in ["-unbounded", "-unbounded -pub", "-pub -unbounded"] {
        let o = parse(args).unwrap();
        assert!(o.unbounded && o.large_data(), "{args}");
    }
    assert!(!parse("-pub").unwrap().large_data());
    let o = parse("-nomulticast").unwrap();
    assert!(o.no_multicast && !o.multicast);
    assert!(parse("-raw -noBlockingSockets").is_ok());
    let o = parse("-transport SHMEM").unwrap();
    assert_eq!(o.backend(), crate::transport::Backend::Dds);
    let o = parse("-raw -transport SHMEM -numSubscribers 2").unwrap();
    assert_eq!(o.backend(), crate::transport::Backend::RawShm);
    assert!(
        parse("-enableSharedMemory -peer 10.0.0.1")
            .unwrap()
            .enable_shared_memory
    );
}

#[test]
fn tcp_options_and_peer_forms() {
    let o = parse(
        "-pub -transport TCP -transportServerBindPort 7401 -peer 0@tcpv4_lan://172.16.0.2:7400",
    )
    .unwrap();
    assert_eq!(o.transport.as_deref(), Some("TCP"));
    assert_eq!(o.tcp_server_port, Some(7401));
    assert!(parse("-sub -enableTCP -peer 10.0.0.1 -peer tcpv4_lan://10.0.0.2:7400").is_ok());
    let addr = |s: &str| parse_tcp_peer(s).map(|a| a.to_string());
    assert_eq!(
        addr("0@tcpv4_lan://172.16.0.1:7400").unwrap(),
        "172.16.0.1:7400"
    );
    assert_eq!(
        addr("tcpv4_lan://172.16.0.1:7555").unwrap(),
        "172.16.0.1:7555"
    );
    assert_eq!(addr("TCPV4_LAN://172.16.0.1").unwrap(), "172.16.0.1:7400");
    assert_eq!(addr("172.16.0.1:7401").unwrap(), "172.16.0.1:7401");
    assert_eq!(addr("172.16.0.1").unwrap(), "172.16.0.1:7400");
    for bad in [
        "tlsv4_lan://1.2.3.4:7400",
        "x@tcpv4_lan://1.2.3.4:7400",
        "tcpv4_lan://1.2.3.4:0",
        "tcpv4_lan://1.2.3.4:70000",
        "tcpv4_lan://host:7400",
        "",
    ] {
        assert!(
            matches!(parse_tcp_peer(bad), Err(OptionError::BadValue { .. })),
            "{bad:?} accepted"
        );
        let args = vec![
            "-pub".to_string(),
            "-transport".into(),
            "TCP".into(),
            "-peer".into(),
            bad.to_string(),
        ];
        assert!(
            Options::parse(&args).is_err(),
            "{bad:?} accepted by the parser"
        );
    }
}

#[test]
fn network_capture_options() {
    let o = parse("-pub -networkCapture").unwrap();
    assert!(o.network_capture && !o.keep_network_capture && !o.network_capture_no_user_data);
    let o = parse("-sub -networkCapture -doNotDropNetworkCapture -networkCaptureRemoveUserData")
        .unwrap();
    assert!(o.network_capture && o.keep_network_capture && o.network_capture_no_user_data);
    assert!(
        parse("-pub -networkCapture -doNot")
            .unwrap()
            .keep_network_capture
    );
    assert!(!parse("-pub").unwrap().network_capture);
}

#[test]
fn qos_profile_options() {
    let o = parse("-qosFile my.xml -qosLibrary MyLib").unwrap();
    assert_eq!(o.qos_file.as_deref(), Some(std::path::Path::new("my.xml")));
    assert_eq!(o.qos_library, "MyLib");
    // RTI Perftest 2.x's name of -qosFile.
    let o = parse("-qosProfile old.xml").unwrap();
    assert_eq!(o.qos_file.as_deref(), Some(std::path::Path::new("old.xml")));
    let o = parse("-noXML").unwrap();
    assert!(o.no_xml_qos && o.qos_file.is_none());
    assert_eq!(o.qos_library, "PerftestQosLibrary");
    assert_eq!(
        crate::qos_profiles::qos_source(&o),
        crate::qos_profiles::QosSource::BuiltIn
    );
    let o = parse("-qosFile my.xml").unwrap();
    assert_eq!(
        crate::qos_profiles::qos_source(&o).summary(),
        "my.xml".to_string()
    );
}
