//! The committed perftest security resources work in a real DDS Security implementation:
//! Eclipse Cyclone DDS (Debian's `ddsperf` and its builtin plugins) loads each governance with
//! the pub/sub identities and permissions, authenticates the two participants and delivers
//! data under every profile. This checks what our own parser cannot: that the S/MIME form,
//! the XML and the subject names are what a peer accepts (Cyclone compares subject names
//! without trimming spaces, for instance).
//!
//! 127.0.0.1 only, multicast off, domains 170-175; each run is bounded (ddsperf `-D 3`, killed
//! after 10 s). Skipped with a notice when `ddsperf` is not installed
//! (`scripts/install-test-deps.sh` installs it); `CI=true` makes that a failure.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn secure_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tools/perftest/resource/secure")
        .canonicalize()
        .unwrap()
}

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

fn config(dir: &Path, role: &str, governance: &str) -> PathBuf {
    let r = secure_dir();
    let r = r.display();
    let perm = if role == "pub" { "Pub" } else { "Sub" };
    let path = dir.join(format!("{role}.xml"));
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
    <Security>
      <Authentication>
        <IdentityCertificate>file:{r}/{role}.pem</IdentityCertificate>
        <IdentityCA>file:{r}/cacert.pem</IdentityCA>
        <PrivateKey>file:{r}/{role}key.pem</PrivateKey>
      </Authentication>
      <AccessControl>
        <PermissionsCA>file:{r}/cacert.pem</PermissionsCA>
        <Governance>file:{r}/{governance}</Governance>
        <Permissions>file:{r}/signed_PerftestPermissions{perm}.xml</Permissions>
      </AccessControl>
    </Security>
  </Domain>
</CycloneDDS>
"#
        ),
    )
    .unwrap();
    path
}

fn spawn(cfg: &Path, domain: u32, args: &[&str]) -> Child {
    Command::new("ddsperf")
        .env("CYCLONEDDS_URI", format!("file://{}", cfg.display()))
        .args(["-i", &domain.to_string(), "-D", "3"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ddsperf starts")
}

/// Waits at most `limit` for `child`, killing it then; returns stdout + stderr.
fn finish(mut child: Child, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The largest `total N` a ddsperf subscriber printed.
fn received(sub_output: &str) -> u64 {
    sub_output
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0] == "total")
        .filter_map(|w| w[1].parse::<u64>().ok())
        .max()
        .unwrap_or(0)
}

#[test]
fn cyclone_authenticates_and_delivers_under_every_committed_governance() {
    if !ddsperf_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let profiles = [
        "",
        "RTPSSign",
        "RTPSEncrypt",
        "RTPSSignWithOrigAuthEncryptData",
        "RTPSSignEncryptSubmessageWithOrigAuthEncryptData",
        "SignEncryptSubmessage",
    ];
    let mut failures = Vec::new();
    for (i, suffix) in profiles.iter().enumerate() {
        let domain = 170 + i as u32;
        let governance = format!("signed_PerftestGovernance_{suffix}.xml");
        let dir = tmp.path().join(format!("d{domain}"));
        std::fs::create_dir_all(&dir).unwrap();
        let sub = spawn(&config(&dir, "sub", &governance), domain, &["sub"]);
        std::thread::sleep(Duration::from_millis(300));
        let publisher = spawn(
            &config(&dir, "pub", &governance),
            domain,
            &["pub", "2000Hz"],
        );
        let pub_out = finish(publisher, Duration::from_secs(10));
        let sub_out = finish(sub, Duration::from_secs(10));
        let n = received(&sub_out);
        println!("{governance}: Cyclone subscriber received {n} samples");
        if n == 0 {
            failures.push(format!(
                "{governance}: no samples\n--- sub ---\n{sub_out}\n--- pub ---\n{pub_out}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
