//! In-memory test PKI: an identity CA and identities it signs, made at run time (so no
//! fixture ever expires). For tests, fuzzing, demos and benchmarks; not a CA for production.

use openssl::asn1::{Asn1Integer, Asn1Time};
use openssl::bn::BigNum;
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::x509::extension::{BasicConstraints, KeyUsage, SubjectKeyIdentifier};
use openssl::x509::{X509Name, X509};

use super::{crypto, AuthError, IdentityAlgo};

/// A generated certificate and its private key.
#[derive(Clone)]
pub struct Issued {
    /// The certificate.
    pub cert: X509,
    /// Its private key.
    pub key: PKey<Private>,
}

impl std::fmt::Debug for Issued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issued")
            .field("subject", &super::subject_oneline(self.cert.subject_name()))
            .finish_non_exhaustive()
    }
}

impl Issued {
    /// A certificate and its private key read from PEM (e.g. a test CA's files, to sign
    /// documents with [`sign_smime`]).
    pub fn from_pem(cert: &[u8], key: &[u8]) -> Result<Self, AuthError> {
        Ok(Self {
            cert: X509::from_pem(cert).map_err(crypto("reading a PEM certificate"))?,
            key: PKey::private_key_from_pem(key).map_err(crypto("reading a PEM private key"))?,
        })
    }

    /// The certificate as PEM.
    pub fn cert_pem(&self) -> Result<Vec<u8>, AuthError> {
        self.cert.to_pem().map_err(crypto("writing a certificate"))
    }

    /// The private key as unencrypted PKCS#8 PEM.
    pub fn key_pem(&self) -> Result<Vec<u8>, AuthError> {
        self.key
            .private_key_to_pem_pkcs8()
            .map_err(crypto("writing a private key"))
    }
}

/// A fresh RSA-2048 or P-256 key pair.
pub fn generate_key(algo: IdentityAlgo) -> Result<PKey<Private>, AuthError> {
    let f = || crypto("generating a key");
    match algo {
        IdentityAlgo::Rsa2048 => PKey::from_rsa(Rsa::generate(2048).map_err(f())?).map_err(f()),
        IdentityAlgo::EcPrime256v1 => {
            let g = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).map_err(f())?;
            PKey::from_ec_key(EcKey::generate(&g).map_err(f())?).map_err(f())
        }
    }
}

#[allow(clippy::useless_conversion)] // `time_t` is i32 on some 32-bit targets
fn build(
    subject_cn: &str,
    key: &PKey<Private>,
    issuer: Option<&Issued>,
    serial: u32,
    not_before: i64,
    not_after: i64,
    ca: bool,
) -> Result<X509, AuthError> {
    let f = || crypto("building a certificate");
    let mut name = X509Name::builder().map_err(f())?;
    name.append_entry_by_text("C", "NL").map_err(f())?;
    name.append_entry_by_text("O", "FerroDDS test PKI")
        .map_err(f())?;
    name.append_entry_by_text("CN", subject_cn).map_err(f())?;
    let name = name.build();
    let mut b = X509::builder().map_err(f())?;
    b.set_version(2).map_err(f())?;
    let serial_bn: BigNum = BigNum::from_u32(serial).map_err(f())?;
    let serial = Asn1Integer::from_bn(&serial_bn).map_err(f())?;
    b.set_serial_number(&serial).map_err(f())?;
    b.set_subject_name(&name).map_err(f())?;
    b.set_issuer_name(issuer.map_or(&name, |i| i.cert.subject_name()))
        .map_err(f())?;
    let t = |s: i64| {
        s.try_into()
            .map_err(|_| AuthError::Crypto {
                context: "building a certificate",
                reason: format!("time {s} out of range"),
            })
            .and_then(|s| Asn1Time::from_unix(s).map_err(f()))
    };
    let nb: Asn1Time = t(not_before)?;
    let na: Asn1Time = t(not_after)?;
    b.set_not_before(&nb).map_err(f())?;
    b.set_not_after(&na).map_err(f())?;
    b.set_pubkey(key).map_err(f())?;
    if ca {
        b.append_extension(
            BasicConstraints::new()
                .critical()
                .ca()
                .build()
                .map_err(f())?,
        )
        .map_err(f())?;
        b.append_extension(
            // (digitalSignature too: the CA also signs governance and permissions
            // documents, S/MIME, in tests.)
            KeyUsage::new()
                .critical()
                .key_cert_sign()
                .crl_sign()
                .digital_signature()
                .build()
                .map_err(f())?,
        )
        .map_err(f())?;
        let ski = SubjectKeyIdentifier::new()
            .build(&b.x509v3_context(None, None))
            .map_err(f())?;
        b.append_extension(ski).map_err(f())?;
    } else {
        b.append_extension(BasicConstraints::new().build().map_err(f())?)
            .map_err(f())?;
        b.append_extension(
            KeyUsage::new()
                .critical()
                .digital_signature()
                .key_agreement()
                .build()
                .map_err(f())?,
        )
        .map_err(f())?;
    }
    let signer = issuer.map_or(key, |i| &i.key);
    b.sign(signer, MessageDigest::sha256()).map_err(f())?;
    Ok(b.build())
}

/// A self-signed identity CA valid from `not_before` to `not_after` (Unix seconds).
pub fn generate_ca(
    common_name: &str,
    algo: IdentityAlgo,
    not_before: i64,
    not_after: i64,
) -> Result<Issued, AuthError> {
    let key = generate_key(algo)?;
    let cert = build(common_name, &key, None, 1, not_before, not_after, true)?;
    Ok(Issued { cert, key })
}

/// An identity certificate for `common_name` signed by `ca`.
pub fn issue_identity(
    ca: &Issued,
    common_name: &str,
    algo: IdentityAlgo,
    serial: u32,
    not_before: i64,
    not_after: i64,
) -> Result<Issued, AuthError> {
    let key = generate_key(algo)?;
    let cert = build(
        common_name,
        &key,
        Some(ca),
        serial,
        not_before,
        not_after,
        false,
    )?;
    Ok(Issued { cert, key })
}

/// The smallest `c.pdata` Cyclone accepts: a big-endian parameter list holding only
/// `PID_PARTICIPANT_GUID` and the sentinel (a real participant sends its whole SPDP data).
pub fn minimal_pdata(guid: &crate::generic_message::GuidBytes) -> Vec<u8> {
    let mut v = Vec::with_capacity(24);
    v.extend_from_slice(&[0x00, 0x50, 0x00, 0x10]);
    v.extend_from_slice(guid);
    v.extend_from_slice(&[0x00, 0x01, 0x00, 0x00]);
    v
}

/// Signs `document` with `signer` as `openssl smime -sign -text` does (detached PKCS#7,
/// `multipart/signed`, `Content-Type: text/plain` header on the signed part): a governance
/// or permissions document the access-control plugin accepts when `signer` is its
/// permissions CA.
pub fn sign_smime(document: &[u8], signer: &Issued) -> Result<Vec<u8>, AuthError> {
    use openssl::pkcs7::{Pkcs7, Pkcs7Flags};
    use openssl::stack::Stack;
    let f = || crypto("signing a document");
    let flags = Pkcs7Flags::TEXT | Pkcs7Flags::DETACHED;
    let certs = Stack::new().map_err(f())?;
    let p7 = Pkcs7::sign(&signer.cert, &signer.key, &certs, document, flags).map_err(f())?;
    p7.to_smime(document, flags).map_err(f())
}
