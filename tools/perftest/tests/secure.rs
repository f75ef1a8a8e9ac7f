//! DDS Security in perftest (`-secure*`), end to end between two processes on 127.0.0.1:
//! RTI's command lines with only `-secureGovernanceFile` use the files perftest ships
//! (`resource/secure`); an RTPS-protected run carries no user data in clear (its own
//! network capture, decoded by tshark, whose decrypted view holds the clear messages); the profiles FerroDDS does not implement yet fail
//! with an error naming what is missing instead of running with less protection; a secure
//! side and a plain one never match, and the secure side says why. Domains 81-86.
#![cfg(all(feature = "dds", feature = "security"))]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{has_submessage, has_user_data, latency_summary, wait};
use ferrodds_capture::read_udp_payloads;
use ferrodds_capture::testing::assert_tshark_clean;

const T: Duration = Duration::from_secs(60);

fn workdir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("secure-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// perftest in `dir` (not perftest's folder: the shipped files must be found from the
/// executable's location).
fn spawn_in(dir: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_perftest"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start perftest")
}

const GOV: &str = "-secureGovernanceFile";

/// An RTPSEncrypt latency run over UDPv4: both sides authenticate with the shipped files,
/// every sample arrives, and the publisher's capture holds only protected messages besides
/// discovery and the handshake.
#[test]
fn rtps_encrypt_latency_run_with_the_shipped_files() {
    latency_run_with_the_shipped_files("signed_PerftestGovernance_RTPSEncrypt.xml", "81");
}

/// The same with the SignEncryptSubmessage profile (RTPS messages signed, each submessage
/// of the perftest endpoints encrypted): no sample byte in clear although the messages are
/// only signed.
#[test]
fn sign_encrypt_submessage_latency_run_with_the_shipped_files() {
    latency_run_with_the_shipped_files("signed_PerftestGovernance_SignEncryptSubmessage.xml", "84");
}

/// The two published profiles with origin authentication: RTPS messages signed with a MAC
/// per receiving participant, or submessages encrypted with a MAC per receiving endpoint;
/// payloads encrypted in both.
#[test]
fn origin_authentication_latency_runs_with_the_shipped_files() {
    latency_run_with_the_shipped_files(
        "signed_PerftestGovernance_RTPSSignWithOrigAuthEncryptData.xml",
        "85",
    );
    latency_run_with_the_shipped_files(
        "signed_PerftestGovernance_RTPSSignEncryptSubmessageWithOrigAuthEncryptData.xml",
        "86",
    );
}

/// A latency run under the shipped governance `file` in `domain` (see the tests above).
fn latency_run_with_the_shipped_files(file: &str, domain: &str) {
    let dir = workdir(file);
    let gov = format!("resource/secure/{file}");
    let gov = gov.as_str();
    let common = [
        "-nic",
        "127.0.0.1",
        "-domain",
        domain,
        "-transport",
        "UDPv4",
        GOV,
        gov,
    ];
    let mut s = vec!["-sub", "-noPrint"];
    s.extend_from_slice(&common);
    let sub = spawn_in(&dir, &s);
    let mut p = vec![
        "-pub",
        "-noPrint",
        "-latencyTest",
        "-numIter",
        "2000",
        "-dataLen",
        "200",
        "-networkCapture",
        "-doNotDropNetworkCapture",
    ];
    p.extend_from_slice(&common);
    let publ = spawn_in(&dir, &p);
    let p = wait(publ, T, "publisher");
    let s = wait(sub, T, "subscriber");
    for (r, who) in [(&p, "pub"), (&s, "sub")] {
        assert_eq!(r.code, Some(0), "{who} failed:\n{}\n{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("Secure Configuration:"),
            "{who}: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains(file)
                && r.stderr.contains("Certificate file: ")
                && r.stderr.contains(&format!("{who}.pem"))
                && r.stderr.contains("Encryption algorithm: aes-128-gcm"),
            "{who}: {}",
            r.stderr
        );
    }
    let l = latency_summary(&p.stdout);
    assert!(l[1] > 0.0, "{l:?}");
    // The wire: the publisher's own capture.
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("rtiperftest_network_capture_pub_"))
        })
        .expect("the publisher's capture");
    let c = read_udp_payloads(&file).unwrap();
    let (mut protected, mut protected_submessages, mut clear_user, mut decrypted) = (0, 0, 0, 0);
    for d in &c.datagrams {
        let m = &d.payload;
        // The decrypted view (as RTI's capture parses encrypted content): the clear form of
        // each protected message, marked.
        if d.comment.as_deref() == Some(ferrodds::CAPTURE_DECRYPTED_COMMENT) {
            decrypted += 1;
            continue;
        }
        if m.len() > 24 && &m[..4] == b"RTPS" {
            if m[20] == 0x33 {
                protected += 1;
            } else if has_submessage(m, 0x31) {
                // Volatile-secure submessages (the key exchange): decrypted when received.
                protected_submessages += 1;
            } else if has_user_data(m) {
                clear_user += 1;
            }
        }
        // perftest's samples are 172 zero bytes after their header: never in clear.
        assert!(
            !m.windows(100).any(|w| w.iter().all(|&b| b == 0)),
            "frame {} carries plaintext sample bytes",
            d.frame
        );
    }
    assert!(protected > 2000, "{protected} protected messages");
    assert_eq!(clear_user, 0, "user DATA in clear");
    assert!(
        decrypted > 2000 && decrypted <= protected + protected_submessages,
        "{decrypted} decrypted-view frames for {protected} protected messages and {protected_submessages} with protected submessages"
    );
    assert!(
        p.stderr.contains("Network capture decrypted view:"),
        "{}",
        p.stderr
    );
    assert_tshark_clean(&file);
    let _ = std::fs::remove_dir_all(&dir);
}

/// What FerroDDS does not implement (submessage or payload protection without RTPS message
/// protection; governances signed by perftest's test CA at run time) fails at once with an
/// error that names it, instead of running with less protection; so does a missing file.
#[test]
fn profiles_not_implemented_fail_naming_the_reason() {
    let dir = workdir("refused");
    let secure = Path::new(env!("CARGO_MANIFEST_DIR")).join("resource/secure");
    let mut govs = vec![];
    for (metadata, data, expect) in [
        ("ENCRYPT", "NONE", "metadata_protection_kind"),
        ("NONE", "ENCRYPT", "data_protection_kind"),
    ] {
        let signed = ferrodds_testkit::secure::signed_governance_with_ca(
            &std::fs::read(secure.join("cacert.pem")).unwrap(),
            &std::fs::read(secure.join("demoCA/private/cakey.pem")).unwrap(),
            "NONE",
            metadata,
            data,
        )
        .unwrap();
        let path = dir.join(format!("gov-{metadata}-{data}.p7s"));
        std::fs::write(&path, signed).unwrap();
        govs.push((path.display().to_string(), expect));
    }
    for (gov, expect) in &govs {
        let gov = gov.as_str();
        let expect = *expect;
        let c = spawn_in(
            &dir,
            &[
                "-pub",
                "-nic",
                "127.0.0.1",
                "-domain",
                "82",
                "-noPrint",
                GOV,
                gov,
            ],
        );
        let r = wait(c, T, "publisher");
        assert_ne!(r.code, Some(0), "{gov} must fail:\n{}", r.stderr);
        assert!(
            r.stderr.contains(expect) && r.stderr.contains("does not implement"),
            "{gov}: {}",
            r.stderr
        );
    }
    // A file that does not exist anywhere.
    let c = spawn_in(&dir, &["-pub", "-domain", "82", GOV, "nowhere/gov.xml"]);
    let r = wait(c, T, "publisher");
    assert_ne!(r.code, Some(0));
    assert!(
        r.stderr.contains("-secureGovernanceFile") && r.stderr.contains("nowhere/gov.xml"),
        "{}",
        r.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A secure subscriber ignores a publisher without security (RTPSSign does not allow
/// unauthenticated participants) and says so while it waits; nothing matches.
#[test]
fn a_plain_peer_is_ignored_and_the_secure_side_says_why() {
    let dir = workdir("plain");
    let sub = spawn_in(
        &dir,
        &[
            "-sub",
            "-nic",
            "127.0.0.1",
            "-domain",
            "83",
            "-noPrint",
            GOV,
            "resource/secure/signed_PerftestGovernance_RTPSSign.xml",
        ],
    );
    let publ = spawn_in(
        &dir,
        &["-pub", "-nic", "127.0.0.1", "-domain", "83", "-noPrint"],
    );
    let s = common::wait_killed_after(sub, Duration::from_secs(6));
    let p = common::wait_killed_after(publ, Duration::from_secs(1));
    assert!(
        s.stderr
            .contains("a participant without DDS Security was ignored"),
        "{}",
        s.stderr
    );
    assert!(!s.stderr.contains("Waiting for data"), "{}", s.stderr);
    assert!(!p.stderr.contains("Sending data"), "{}", p.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}
