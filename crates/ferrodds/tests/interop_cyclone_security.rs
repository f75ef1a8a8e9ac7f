//! DDS Security interop with Eclipse Cyclone DDS (Debian's `ddsperf` and its builtin
//! plugins), step 1: a FerroDDS participant and a Cyclone participant, each with the
//! committed perftest identities and the no-protection governance
//! (`tools/perftest/resource/secure`), complete the PKI-DH handshake and validate each
//! other's permissions, whichever side initiates (domains 223 and 224); step 2 with the
//! RTPSSign governance (domain 225): key exchange and protected RTPS messages both ways.
//! 127.0.0.1 only, multicast off; ddsperf is killed after at most 20 s. Skipped with a notice when `ddsperf` is not installed (`CI=true` makes that a
//! failure).
#![cfg(feature = "security")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use ferrodds::DomainParticipant;

const DOMAIN: u32 = 223;

fn ddsperf_available() -> bool {
    let ok = Command::new("ddsperf")
        .arg("help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !ok {
        ferrodds_testkit::skip("ddsperf not installed");
    }
    ok
}

/// Cyclone's configuration for `role` (pub or sub), tracing into `trace`.
fn cyclone_config(dir: &Path, role: &str, trace: &Path, governance: &str) -> PathBuf {
    let r = perftest_secure_dir();
    let r = r.display();
    let perm = if role == "pub" { "Pub" } else { "Sub" };
    let path = dir.join(format!("cyclone-{role}.xml"));
    std::fs::write(
        &path,
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<CycloneDDS xmlns="https://cdds.io/config">
  <Domain Id="any">
    <General>
      <Interfaces><NetworkInterface address="127.0.0.1"/></Interfaces>
      <AllowMulticast>false</AllowMulticast>
    </General>
    <Discovery>
      <ParticipantIndex>auto</ParticipantIndex>
      <Peers><Peer Address="127.0.0.1"/></Peers>
    </Discovery>
    <Tracing>
      <Category>trace</Category>
      <OutputFile>{trace}</OutputFile>
    </Tracing>
    <Security>
      <Authentication>
        <IdentityCertificate>file:{r}/{role}.pem</IdentityCertificate>
        <IdentityCA>file:{r}/cacert.pem</IdentityCA>
        <PrivateKey>file:{r}/{role}key.pem</PrivateKey>
        <IncludeOptionalFields>true</IncludeOptionalFields>
      </Authentication>
      <AccessControl>
        <PermissionsCA>file:{r}/cacert.pem</PermissionsCA>
        <Governance>file:{r}/{governance}</Governance>
        <Permissions>file:{r}/signed_PerftestPermissions{perm}.xml</Permissions>
      </AccessControl>
    </Security>
  </Domain>
</CycloneDDS>
"#,
            trace = trace.display()
        ),
    )
    .unwrap();
    path
}

fn kill(mut child: Child) -> String {
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs ddsperf (`cyclone_role` identity) against a FerroDDS participant (`our_role`) in
/// `domain`; returns what each side reports.
fn handshake(domain: u32, our_role: &'static str, cyclone_role: &'static str) {
    let _ = session(domain, our_role, cyclone_role, NO_PROTECTION);
}

const NO_PROTECTION: &str = "signed_PerftestGovernance_.xml";

/// Like [`handshake`] with `governance` (both sides); returns our engine stats and
/// Cyclone's trace.
fn session(
    domain: u32,
    our_role: &'static str,
    cyclone_role: &'static str,
    governance: &str,
) -> (ferrodds_rtps::Stats, String) {
    let dir = std::env::temp_dir().join(format!(
        "ferrodds-sec-cyclone-{}-{domain}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("cyclone.trace");
    let cfg = cyclone_config(&dir, cyclone_role, &trace, governance);
    let child = Command::new("ddsperf")
        .env("CYCLONEDDS_URI", format!("file://{}", cfg.display()))
        .args(["-i", &domain.to_string(), "-D", "20", "sub"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ddsperf starts");
    let p = DomainParticipant::with_config(
        domain,
        loopback_config().security(perftest_security(our_role, governance)),
    )
    .expect("secure participant");
    let deadline = Instant::now() + Duration::from_secs(15);
    while p.authenticated_participants().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    // Give Cyclone time to process our last message (the Final, when we initiate), and
    // (RTPS protection) the key exchange time to run.
    let settle = if governance == NO_PROTECTION {
        500
    } else {
        3000
    };
    std::thread::sleep(Duration::from_millis(settle));
    let authenticated = p.authenticated_participants();
    let failures = p.authentication_failures();
    let stats = p.engine_stats();
    let ours = p.guid_prefix();
    drop(p);
    let out = kill(child);
    let trace_text = std::fs::read_to_string(&trace).unwrap_or_default();
    if let Ok(keep) = std::env::var("FERRODDS_KEEP_TRACE") {
        let _ = std::fs::write(&keep, &trace_text);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let fsm: Vec<&str> = trace_text
        .lines()
        .filter(|l| l.contains("FSM: ") && !l.contains("handshake_debug"))
        .collect();
    println!(
        "ours ({our_role}, {ours:?}): authenticated {authenticated:?}, failures {failures:?}, \
         {stats:?}"
    );
    println!("cyclone handshake FSM:\n{}", fsm.join("\n"));
    assert_eq!(
        authenticated.len(),
        1,
        "FerroDDS did not authenticate Cyclone: {failures:?}\nddsperf: {out}"
    );
    // Cyclone's side: the handshake finished and our permissions were accepted (it then
    // matches its volatile-secure endpoints with us for the crypto token exchange).
    assert!(
        trace_text.contains("match volatile endpoints"),
        "Cyclone did not complete the handshake:\n{}",
        fsm.join("\n")
    );
    (stats, trace_text)
}

#[test]
fn cyclone_initiates_the_handshake() {
    if !ddsperf_available() {
        return;
    }
    // The "pub" identity's adjusted GUID is above the "sub" one's: Cyclone sends the Request.
    with_timeout(60, || handshake(DOMAIN, "pub", "sub"));
}

/// Step 2 against Cyclone with the RTPSSign governance: after authentication the participant
/// crypto tokens are exchanged both ways over the volatile-secure endpoints (Cyclone sets
/// ours; we decode Cyclone's protected RTPS messages). No user endpoints are
/// created here.
#[test]
fn rtps_sign_with_cyclone_exchanges_keys_and_protected_messages() {
    if !ddsperf_available() {
        return;
    }
    with_timeout(60, || {
        let (s, trace) = session(
            DOMAIN + 2,
            "sub",
            "pub",
            "signed_PerftestGovernance_RTPSSign.xml",
        );
        println!(
            "RTPSSign with Cyclone: protected sent {}, protected received {}, rejected {}, \
             unprotected dropped {}",
            s.protected_datagrams_sent,
            s.protected_datagrams_received,
            s.rejected_protected_datagrams,
            s.unprotected_submessages_dropped
        );
        assert!(
            trace.contains("set participant tokens"),
            "Cyclone did not take our crypto tokens"
        );
        // Whether Cyclone gets to decode one of ours depends on timing: our SEDP
        // HEARTBEAT/ACKNACK sent before it had our tokens are dropped, and Cyclone's own SEDP
        // HEARTBEATs to all readers come in clear (we drop them), so nothing may prompt a
        // later one. Printed, not asserted.
        println!(
            "Cyclone decoded {} protected messages of ours",
            trace.matches("decode_rtps_message from").count()
        );
        // (Cyclone's protected messages that arrive before its tokens are rejected: no key.)
        assert!(s.protected_datagrams_received > 0, "{s:?}");
    });
}

#[test]
fn ferrodds_initiates_the_handshake() {
    if !ddsperf_available() {
        return;
    }
    with_timeout(60, || handshake(DOMAIN + 1, "sub", "pub"));
}
