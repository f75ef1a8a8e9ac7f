//! DDS Security of a perftest participant (`-secure*`): the participant's
//! [`ferrodds::SecurityConfig`] from the options, with the files perftest ships
//! (`resource/secure`, laid out as RTI perftest's) for those not given.
//!
//! A file named on the command line is used as given when it exists; a relative path that does
//! not exist in the working directory is looked up in perftest's own folder (the one holding
//! `resource/secure`), so RTI's command lines (`-secureGovernanceFile
//! resource/secure/signed_PerftestGovernance_RTPSSign.xml`) work from anywhere. That folder
//! is found beside the executable, one level up (an installed `bin/`), at
//! `../../tools/perftest` (cargo's `target/<profile>/`), or where perftest was built from.

use std::path::{Path, PathBuf};

use ferrodds::SecurityConfig;

use crate::error::PerftestError;
use crate::options::{Options, Role, SecureOptions};

/// The shipped security folder, relative to perftest's own folder.
const SHIPPED: &str = "resource/secure";

/// The encryption algorithm when `-secureEncryptionAlgorithm` is not given (RTI's default).
pub const DEFAULT_ALGORITHM: &str = "aes-128-gcm";

/// perftest's own folder: the first candidate holding `resource/secure/cacert.pem`.
pub fn perftest_root() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        candidates.push(dir.clone());
        candidates.push(dir.join(".."));
        candidates.push(dir.join("../../tools/perftest"));
    }
    candidates.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    candidates
        .into_iter()
        .find(|c| c.join(SHIPPED).join("cacert.pem").is_file())
        .and_then(|c| c.canonicalize().ok())
}

/// Resolves the file of `option`: `given` as is, or relative to perftest's folder, or the
/// shipped `default` file.
fn resolve(
    option: &str,
    given: Option<&str>,
    default: &str,
    root: Option<&Path>,
) -> Result<PathBuf, PerftestError> {
    let looked = |what: &str| {
        PerftestError::Secure(format!(
            "{option}: cannot find '{what}' (looked in the working directory{})",
            root.map_or_else(
                || " and found no perftest resource/secure folder".to_string(),
                |r| format!(" and in {}", r.display())
            )
        ))
    };
    let path = match given {
        Some(g) => {
            let p = PathBuf::from(g);
            if p.is_file() {
                p
            } else {
                match root.map(|r| r.join(&p)) {
                    Some(q) if p.is_relative() && q.is_file() => q,
                    _ => return Err(looked(g)),
                }
            }
        }
        None => match root.map(|r| r.join(SHIPPED).join(default)) {
            Some(q) if q.is_file() => q,
            _ => return Err(looked(&format!("{SHIPPED}/{default}"))),
        },
    };
    path.canonicalize()
        .map_err(|e| PerftestError::Secure(format!("{option}: '{}': {e}", path.display())))
}

/// The participant's security configuration and the lines of the "Secure Configuration"
/// block.
pub fn security_config(
    opts: &Options,
    s: &SecureOptions,
) -> Result<(SecurityConfig, Vec<String>), PerftestError> {
    let root = perftest_root();
    let root = root.as_deref();
    let side = match opts.role {
        Role::Publisher => "pub",
        Role::Subscriber => "sub",
    };
    let legacy = s.legacy_governance_name();
    let governance = match (&s.governance, s.has_legacy_flags()) {
        (Some(g), _) => resolve("-secureGovernanceFile", Some(g), "", root)?,
        (None, true) => resolve("the RTI Perftest 4.0 security flags", None, &legacy, root)?,
        // (The option parser requires one or the other.)
        (None, false) => {
            return Err(PerftestError::Secure(
                "-secureGovernanceFile is required".to_string(),
            ))
        }
    };
    let permissions = resolve(
        "-securePermissionsFile",
        s.permissions.as_deref(),
        if side == "pub" {
            "signed_PerftestPermissionsPub.xml"
        } else {
            "signed_PerftestPermissionsSub.xml"
        },
        root,
    )?;
    let ca = resolve("-secureCertAuthority", s.ca.as_deref(), "cacert.pem", root)?;
    let cert = resolve(
        "-secureCertFile",
        s.cert.as_deref(),
        &format!("{side}.pem"),
        root,
    )?;
    let key = resolve(
        "-securePrivateKey",
        s.key.as_deref(),
        &format!("{side}key.pem"),
        root,
    )?;
    let algorithm = s
        .encryption_algorithm
        .as_deref()
        .unwrap_or(DEFAULT_ALGORITHM);
    let uri = |p: &Path| format!("file:{}", p.display());
    let config = SecurityConfig::new()
        .identity_ca(uri(&ca))
        .identity_certificate(uri(&cert))
        .private_key(uri(&key))
        .permissions_ca(uri(&ca))
        .governance(uri(&governance))
        .permissions(uri(&permissions))
        .encryption_algorithm(algorithm);
    let lines = vec![
        "Security plugins: FerroDDS builtin (DDS:Auth:PKI-DH, DDS:Access:Permissions, DDS:Crypto:AES-GCM-GMAC)".to_string(),
        format!("Governance file: {}", governance.display()),
        format!("Permissions file: {}", permissions.display()),
        format!("Private key file: {}", key.display()),
        format!("Certificate file: {}", cert.display()),
        format!("Certificate authority file: {}", ca.display()),
        format!("Encryption algorithm: {algorithm}"),
    ];
    Ok((config, lines))
}
