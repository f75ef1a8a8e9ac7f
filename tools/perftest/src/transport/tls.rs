//! The TLS identity of `-transport TLS` (DDS and raw): the PEM files of
//! `-transportCertAuthority`, `-transportCertFile` and `-transportPrivateKey`, or the built-in
//! test CA and identity (`resource/tls`, for testing only: the key is public), with which the
//! peer's certificate must be valid for the name `ferrodds-perftest`.

use ferrodds_transport_tls::TlsConfig;

use crate::error::PerftestError;
use crate::options::Options;

const TEST_CA: &[u8] = include_bytes!("../../resource/tls/ca.pem");
const TEST_CERT: &[u8] = include_bytes!("../../resource/tls/identity.pem");
const TEST_KEY: &[u8] = include_bytes!("../../resource/tls/identity_key.pem");
/// The name the built-in test identity is valid for.
pub const TEST_NAME: &str = "ferrodds-perftest";

/// The TLS configuration of the options, and how to describe it in the summary.
pub fn tls_config(opts: &Options) -> Result<(TlsConfig, String), PerftestError> {
    match (&opts.tls_ca_file, &opts.tls_cert_file, &opts.tls_key_file) {
        (Some(ca), Some(cert), Some(key)) => {
            let cfg = TlsConfig::from_pem_files(ca, cert, key).map_err(|e| PerftestError::Tls {
                context: "reading the TLS files",
                source: e,
            })?;
            Ok((
                cfg,
                format!("CA {ca}, certificate {cert}, key {key} (peers checked by address)"),
            ))
        }
        _ => Ok((
            TlsConfig {
                ca_certificates: TEST_CA.to_vec(),
                certificate_chain: TEST_CERT.to_vec(),
                private_key: TEST_KEY.to_vec(),
                peer_name: Some(TEST_NAME.to_string()),
                allow_tls12: false,
            },
            "built-in test CA and identity (resource/tls: for testing only, the key is public)"
                .to_string(),
        )),
    }
}
