//! Local identity: configuration properties, `file:` / `data:,` URIs, X.509 validation at a
//! given time, the adjusted GUID and the identity / permissions tokens.

use std::cmp::Ordering;

use openssl::asn1::Asn1Time;
use openssl::nid::Nid;
use openssl::pkey::{Id, PKey, PKeyRef, Private, Public};
use openssl::stack::Stack;
use openssl::x509::store::X509StoreBuilder;
use openssl::x509::verify::X509VerifyParam;
use openssl::x509::{X509KeyUsage, X509NameRef, X509Ref, X509StoreContext, X509};

use super::{AuthError, IdentityAlgo, AUTH_TOKEN_CLASS_ID};
use crate::generic_message::{DataHolder, GuidBytes, Property};

/// Property naming the identity CA (spec long form).
pub const PROP_IDENTITY_CA: &str = "dds.sec.auth.builtin.PKI-DH.identity_ca";
/// Property naming the identity certificate (spec long form).
pub const PROP_IDENTITY_CERTIFICATE: &str = "dds.sec.auth.builtin.PKI-DH.identity_certificate";
/// Property naming the private key (spec long form).
pub const PROP_PRIVATE_KEY: &str = "dds.sec.auth.builtin.PKI-DH.private_key";
/// Property holding the private key's password (spec long form).
pub const PROP_PASSWORD: &str = "dds.sec.auth.builtin.PKI-DH.password";
/// Cyclone's short form of [`PROP_IDENTITY_CA`].
pub const PROP_IDENTITY_CA_SHORT: &str = "dds.sec.auth.identity_ca";
/// Cyclone's short form of [`PROP_IDENTITY_CERTIFICATE`].
pub const PROP_IDENTITY_CERTIFICATE_SHORT: &str = "dds.sec.auth.identity_certificate";
/// Cyclone's short form of [`PROP_PRIVATE_KEY`].
pub const PROP_PRIVATE_KEY_SHORT: &str = "dds.sec.auth.private_key";
/// Cyclone's short form of [`PROP_PASSWORD`].
pub const PROP_PASSWORD_SHORT: &str = "dds.sec.auth.password";

/// IdentityToken property: the identity certificate's subject name.
pub const TOKEN_PROP_CERT_SN: &str = "dds.cert.sn";
/// IdentityToken property: the identity certificate's algorithm.
pub const TOKEN_PROP_CERT_ALGO: &str = "dds.cert.algo";
/// IdentityToken property: the identity CA's subject name.
pub const TOKEN_PROP_CA_SN: &str = "dds.ca.sn";
/// IdentityToken property: the identity CA's algorithm.
pub const TOKEN_PROP_CA_ALGO: &str = "dds.ca.algo";
/// PermissionsToken class.
pub const PERMISSIONS_TOKEN_CLASS_ID: &str = "DDS:Access:Permissions:1.0";
/// PermissionsToken property: the permissions CA's subject name (optional).
pub const TOKEN_PROP_PERM_CA_SN: &str = "dds.perm_ca.sn";
/// PermissionsToken property: the permissions CA's algorithm (optional).
pub const TOKEN_PROP_PERM_CA_ALGO: &str = "dds.perm_ca.algo";

/// Where the identity's files come from: the four configuration values, each a `file:` or
/// `data:,` URI (the password is plain text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityConfig {
    /// `identity_ca` URI.
    pub identity_ca: String,
    /// `identity_certificate` URI.
    pub identity_certificate: String,
    /// `private_key` URI.
    pub private_key: String,
    /// Password of an encrypted private key.
    pub password: Option<String>,
}

impl IdentityConfig {
    /// Reads the configuration from participant properties, long (`dds.sec.auth.builtin.
    /// PKI-DH.*`) or Cyclone's short (`dds.sec.auth.*`) names; a missing required property
    /// is an error naming it.
    pub fn from_properties(props: &[Property]) -> Result<Self, AuthError> {
        let find = |long: &'static str, short: &'static str| {
            props
                .iter()
                .find(|p| p.name == long || p.name == short)
                .map(|p| p.value.clone())
        };
        let required = |long: &'static str, short: &'static str| {
            find(long, short).ok_or(AuthError::MissingConfig { property: long })
        };
        Ok(IdentityConfig {
            identity_ca: required(PROP_IDENTITY_CA, PROP_IDENTITY_CA_SHORT)?,
            identity_certificate: required(
                PROP_IDENTITY_CERTIFICATE,
                PROP_IDENTITY_CERTIFICATE_SHORT,
            )?,
            private_key: required(PROP_PRIVATE_KEY, PROP_PRIVATE_KEY_SHORT)?,
            password: find(PROP_PASSWORD, PROP_PASSWORD_SHORT).filter(|p| !p.is_empty()),
        })
    }
}

/// Reads the bytes a `file:` / `data:,` URI designates; `what` names the item in errors.
/// Returns the bytes and a label for later errors (the file path, or `data:` for inline).
pub fn read_uri(uri: &str, what: &'static str) -> Result<(Vec<u8>, String), AuthError> {
    if let Some(data) = uri.strip_prefix("data:,") {
        Ok((data.as_bytes().to_vec(), format!("{what} (data:)")))
    } else if let Some(path) = uri.strip_prefix("file:") {
        // `file:///abs` and `file:/abs` and `file:rel` all name a path.
        let path = path.strip_prefix("//").unwrap_or(path);
        let bytes = std::fs::read(path).map_err(|e| AuthError::ReadFile {
            what,
            file: path.to_owned(),
            reason: e.to_string(),
        })?;
        Ok((bytes, format!("{what} ({path})")))
    } else {
        let scheme: String = uri.chars().take_while(|c| *c != ':').take(16).collect();
        Err(AuthError::UnsupportedUri {
            what,
            scheme: if uri.contains(':') {
                scheme
            } else {
                String::new()
            },
        })
    }
}

fn parse_cert(bytes: &[u8], label: &str) -> Result<X509, AuthError> {
    let trimmed = bytes.strip_suffix(&[0]).unwrap_or(bytes);
    X509::from_pem(trimmed)
        .or_else(|_| X509::from_der(trimmed))
        .map_err(|e| AuthError::BadCertificate {
            what: label.to_owned(),
            reason: format!("not a PEM or DER X.509 certificate ({e})"),
        })
}

// `time_t` is i32 on some 32-bit targets, hence the conversion.
#[allow(clippy::useless_conversion)]
fn unix_time(now: i64, label: &str) -> Result<Asn1Time, AuthError> {
    let t = now.try_into().map_err(|_| AuthError::BadCertificate {
        what: label.to_owned(),
        reason: format!("time {now} out of range"),
    })?;
    Asn1Time::from_unix(t).map_err(|e| AuthError::BadCertificate {
        what: label.to_owned(),
        reason: format!("time {now} out of range ({e})"),
    })
}

/// The algorithm of a certificate's or key's public key; only RSA-2048 and EC P-256 are
/// supported (as in Cyclone).
pub(crate) fn key_algo<T>(key: &PKeyRef<T>, label: &str) -> Result<IdentityAlgo, AuthError>
where
    T: openssl::pkey::HasPublic,
{
    match key.id() {
        Id::RSA if key.bits() == 2048 => Ok(IdentityAlgo::Rsa2048),
        Id::EC => {
            let ec = key.ec_key().map_err(|e| AuthError::UnsupportedKey {
                what: label.to_owned(),
                reason: e.to_string(),
            })?;
            if ec.group().curve_name() == Some(Nid::X9_62_PRIME256V1) {
                Ok(IdentityAlgo::EcPrime256v1)
            } else {
                Err(AuthError::UnsupportedKey {
                    what: label.to_owned(),
                    reason: format!(
                        "EC key on curve {:?}, only prime256v1 (P-256) is supported",
                        ec.group()
                            .curve_name()
                            .map(|n| n.short_name().unwrap_or("?"))
                    ),
                })
            }
        }
        Id::RSA => Err(AuthError::UnsupportedKey {
            what: label.to_owned(),
            reason: format!("RSA key of {} bits, only 2048 is supported", key.bits()),
        }),
        other => Err(AuthError::UnsupportedKey {
            what: label.to_owned(),
            reason: format!("key type {other:?}, only RSA-2048 and EC P-256 are supported"),
        }),
    }
}

/// Validates `cert` against the trust anchor `ca` at `now` (Unix seconds): validity dates,
/// chain and signature (OpenSSL's verifier with its check time set to `now`), a supported
/// key (RSA-2048 / P-256) and, when the certificate has a KeyUsage extension, the
/// `digitalSignature` usage the handshake needs. `label` names the certificate in errors.
#[allow(clippy::useless_conversion)] // `time_t` is i32 on some 32-bit targets
pub fn validate_certificate(
    cert: &X509Ref,
    ca: &X509Ref,
    now: i64,
    label: &str,
) -> Result<IdentityAlgo, AuthError> {
    let t = unix_time(now, label)?;
    let cmp = |a: &openssl::asn1::Asn1TimeRef| {
        a.compare(&t).map_err(|e| AuthError::BadCertificate {
            what: label.to_owned(),
            reason: format!("unreadable validity date ({e})"),
        })
    };
    if cmp(cert.not_before())? == Ordering::Greater {
        return Err(AuthError::CertificateNotYetValid {
            what: label.to_owned(),
            not_before: cert.not_before().to_string(),
        });
    }
    if cmp(cert.not_after())? == Ordering::Less {
        return Err(AuthError::CertificateExpired {
            what: label.to_owned(),
            not_after: cert.not_after().to_string(),
        });
    }
    let rejected = |reason: String| AuthError::CertificateRejected {
        what: label.to_owned(),
        reason,
    };
    let ok = (|| -> Result<Result<(), String>, openssl::error::ErrorStack> {
        let mut store = X509StoreBuilder::new()?;
        store.add_cert(ca.to_owned())?;
        let mut param = X509VerifyParam::new()?;
        param.set_time(now.try_into().unwrap_or_default());
        store.set_param(&param)?;
        let store = store.build();
        let chain = Stack::new()?;
        let mut ctx = X509StoreContext::new()?;
        ctx.init(&store, cert, &chain, |c| {
            Ok(if c.verify_cert()? {
                Ok(())
            } else {
                Err(c.error().error_string().to_owned())
            })
        })
    })()
    .map_err(|e| rejected(e.to_string()))?;
    ok.map_err(|reason| rejected(format!("not issued by the identity CA: {reason}")))?;
    let key = cert
        .public_key()
        .map_err(|e| rejected(format!("unreadable public key ({e})")))?;
    let algo = key_algo(&key, label)?;
    if let Some(ku) = cert.key_usage() {
        if !ku.contains(X509KeyUsage::DIGITAL_SIGNATURE) {
            return Err(AuthError::KeyUsage {
                what: label.to_owned(),
            });
        }
    }
    Ok(algo)
}

/// The subject name in OpenSSL's one-line form (`/C=NL/O=Example/CN=alice`), as Cyclone puts
/// it in `dds.cert.sn`.
pub fn subject_oneline(name: &X509NameRef) -> String {
    let mut s = String::new();
    for e in name.entries() {
        let key = e.object().nid().short_name().unwrap_or("?");
        let value = e
            .data()
            .to_string()
            .unwrap_or_else(|_| String::from_utf8_lossy(e.data().as_slice()).into_owned());
        s.push('/');
        s.push_str(key);
        s.push('=');
        s.push_str(&value);
    }
    s
}

/// The adjusted GUID of a secure participant (DDS Security 9.3.3, Cyclone's
/// `get_adjusted_participant_guid`): byte 0's top bit set, then the first 47 bits of
/// SHA-256(DER subject name), then the first 6 bytes of SHA-256(candidate prefix); the
/// entity id is kept.
pub fn adjusted_guid(cert: &X509Ref, candidate: &GuidBytes) -> Result<GuidBytes, AuthError> {
    let der = cert
        .subject_name()
        .to_der()
        .map_err(|e| AuthError::BadCertificate {
            what: "identity certificate".into(),
            reason: format!("subject name has no DER form ({e})"),
        })?;
    Ok(adjusted_guid_from_subject(&der, candidate))
}

/// [`adjusted_guid`] from the DER-encoded subject name.
pub fn adjusted_guid_from_subject(subject_der: &[u8], candidate: &GuidBytes) -> GuidBytes {
    let high = sha256(subject_der);
    let low = sha256(&candidate[..12]);
    let mut g = *candidate;
    let mut carry = 0x80u8;
    for i in 0..6 {
        g[i] = carry | (high[i] >> 1);
        carry = high[i] << 7;
    }
    g[6..12].copy_from_slice(&low[..6]);
    g
}

pub(crate) fn sha256(data: &[u8]) -> [u8; 32] {
    openssl::sha::sha256(data)
}

/// A validated local identity: certificate, CA, private key and adjusted GUID.
#[derive(Clone)]
pub struct LocalIdentity {
    pub(crate) cert: X509,
    pub(crate) ca: X509,
    pub(crate) key: PKey<Private>,
    pub(crate) algo: IdentityAlgo,
    pub(crate) ca_algo: IdentityAlgo,
    pub(crate) cert_pem: Vec<u8>,
    pub(crate) guid: GuidBytes,
}

impl std::fmt::Debug for LocalIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalIdentity")
            .field("subject", &subject_oneline(self.cert.subject_name()))
            .field("algo", &self.algo)
            .field("guid", &self.guid)
            .finish_non_exhaustive()
    }
}

impl LocalIdentity {
    /// Loads and validates the identity at `now` (Unix seconds): the certificate must be
    /// valid then and issued by the CA, the key must be RSA-2048 or P-256 and match the
    /// certificate. `candidate_guid` is the participant GUID before adjustment.
    pub fn load(
        config: &IdentityConfig,
        candidate_guid: &GuidBytes,
        now: i64,
    ) -> Result<Self, AuthError> {
        let (ca_bytes, ca_label) = read_uri(&config.identity_ca, "identity_ca")?;
        let (cert_bytes, cert_label) =
            read_uri(&config.identity_certificate, "identity_certificate")?;
        let (key_bytes, key_label) = read_uri(&config.private_key, "private_key")?;
        let ca = parse_cert(&ca_bytes, &ca_label)?;
        let cert = parse_cert(&cert_bytes, &cert_label)?;
        let key_trimmed = key_bytes.strip_suffix(&[0]).unwrap_or(&key_bytes);
        let key = match &config.password {
            Some(pw) => PKey::private_key_from_pem_passphrase(key_trimmed, pw.as_bytes()),
            None => PKey::private_key_from_pem(key_trimmed),
        }
        .or_else(|e| PKey::private_key_from_der(key_trimmed).map_err(|_| e))
        .map_err(|e| AuthError::BadPrivateKey {
            what: key_label.clone(),
            reason: format!("not a readable PEM/DER private key or wrong password ({e})"),
        })?;
        Self::from_parts(ca, cert, key, candidate_guid, now, &cert_label, &key_label)
    }

    /// Builds an identity from already parsed objects (validated as [`load`](Self::load)
    /// does).
    pub fn from_parts(
        ca: X509,
        cert: X509,
        key: PKey<Private>,
        candidate_guid: &GuidBytes,
        now: i64,
        cert_label: &str,
        key_label: &str,
    ) -> Result<Self, AuthError> {
        let ca_key = ca.public_key().map_err(|e| AuthError::BadCertificate {
            what: "identity_ca".into(),
            reason: format!("unreadable public key ({e})"),
        })?;
        let ca_algo = key_algo(&ca_key, "identity_ca")?;
        let algo = validate_certificate(&cert, &ca, now, cert_label)?;
        let key_algo_found = key_algo(&key, key_label)?;
        let cert_key = cert.public_key().map_err(|e| AuthError::BadCertificate {
            what: cert_label.to_owned(),
            reason: e.to_string(),
        })?;
        if key_algo_found != algo || !cert_key.public_eq(&key) {
            return Err(AuthError::KeyMismatch {
                what: key_label.to_owned(),
            });
        }
        let cert_pem = cert.to_pem().map_err(|e| AuthError::BadCertificate {
            what: cert_label.to_owned(),
            reason: e.to_string(),
        })?;
        let guid = adjusted_guid(&cert, candidate_guid)?;
        Ok(LocalIdentity {
            cert,
            ca,
            key,
            algo,
            ca_algo,
            cert_pem,
            guid,
        })
    }

    /// The adjusted participant GUID to use on the wire.
    pub fn guid(&self) -> GuidBytes {
        self.guid
    }

    /// The identity certificate's key algorithm.
    pub fn algo(&self) -> IdentityAlgo {
        self.algo
    }

    /// The identity certificate.
    pub fn certificate(&self) -> &X509Ref {
        &self.cert
    }

    /// The identity CA (the trust anchor for peers' certificates).
    pub fn identity_ca(&self) -> &X509Ref {
        &self.ca
    }

    /// The subject name in one-line form.
    pub fn subject_name(&self) -> String {
        subject_oneline(self.cert.subject_name())
    }

    /// The IdentityToken `DDS:Auth:PKI-DH:1.0` sent in SPDP.
    pub fn identity_token(&self) -> DataHolder {
        let mut t = DataHolder::new(AUTH_TOKEN_CLASS_ID);
        t.properties = vec![
            Property::new(TOKEN_PROP_CERT_SN, self.subject_name()),
            Property::new(TOKEN_PROP_CERT_ALGO, self.algo.token_name()),
            Property::new(TOKEN_PROP_CA_SN, subject_oneline(self.ca.subject_name())),
            Property::new(TOKEN_PROP_CA_ALGO, self.ca_algo.token_name()),
        ];
        t
    }
}

/// What a peer's IdentityToken says (every property is optional).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IdentityTokenInfo {
    /// Version from the class id (`DDS:Auth:PKI-DH:<major>.<minor>`).
    pub version: (u32, u32),
    /// `dds.cert.sn`.
    pub cert_sn: Option<String>,
    /// `dds.cert.algo`.
    pub cert_algo: Option<String>,
    /// `dds.ca.sn`.
    pub ca_sn: Option<String>,
    /// `dds.ca.algo`.
    pub ca_algo: Option<String>,
}

/// Parses a peer's IdentityToken: the class must be `DDS:Auth:PKI-DH:1.x` (optionally
/// followed by `+...`), as Cyclone accepts.
pub fn parse_identity_token(token: &DataHolder) -> Result<IdentityTokenInfo, AuthError> {
    let bad = |reason: &str| AuthError::BadIdentityToken {
        class_id: token.class_id.chars().take(64).collect(),
        reason: reason.to_owned(),
    };
    let rest = token
        .class_id
        .strip_prefix("DDS:Auth:PKI-DH:")
        .ok_or_else(|| bad("class is not DDS:Auth:PKI-DH"))?;
    let version = rest.split('+').next().unwrap_or("");
    let (major, minor) = version
        .split_once('.')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
        .ok_or_else(|| bad("version is not <major>.<minor>"))?;
    if major != 1 {
        return Err(bad("only version 1.x is supported"));
    }
    let get = |n: &str| token.property(n).map(str::to_owned);
    Ok(IdentityTokenInfo {
        version: (major, minor),
        cert_sn: get(TOKEN_PROP_CERT_SN),
        cert_algo: get(TOKEN_PROP_CERT_ALGO),
        ca_sn: get(TOKEN_PROP_CA_SN),
        ca_algo: get(TOKEN_PROP_CA_ALGO),
    })
}

/// The PermissionsToken `DDS:Access:Permissions:1.0`; `permissions_ca` = (subject name,
/// algorithm) adds the optional `dds.perm_ca.sn` / `dds.perm_ca.algo` (leave it out for
/// Fast DDS peers, which reject it).
pub fn permissions_token(permissions_ca: Option<(&str, IdentityAlgo)>) -> DataHolder {
    let mut t = DataHolder::new(PERMISSIONS_TOKEN_CLASS_ID);
    if let Some((sn, algo)) = permissions_ca {
        t.properties = vec![
            Property::new(TOKEN_PROP_PERM_CA_SN, sn),
            Property::new(TOKEN_PROP_PERM_CA_ALGO, algo.token_name()),
        ];
    }
    t
}

/// A certificate's public key (for signature verification).
pub(crate) fn public_key(cert: &X509Ref, label: &str) -> Result<PKey<Public>, AuthError> {
    cert.public_key().map_err(|e| AuthError::BadCertificate {
        what: label.to_owned(),
        reason: format!("unreadable public key ({e})"),
    })
}
