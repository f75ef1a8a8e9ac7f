//! S/MIME (PKCS#7 `multipart/signed`, as `openssl smime -sign -text` writes) verification
//! against the permissions CA, with OpenSSL as the C/C++ DDS implementations use it.

use openssl::pkcs7::{Pkcs7, Pkcs7Flags};
use openssl::stack::Stack;
use openssl::x509::X509;

use super::{AccessError, PermissionsCa};

/// Verifies `signed` (an S/MIME document) against `ca` and returns the signed content with
/// its `Content-Type: text/plain` header removed (the `-text` convention, which Cyclone DDS
/// and Fast DDS also require).
pub(crate) fn verify(
    signed: &[u8],
    file: &str,
    ca: &PermissionsCa,
) -> Result<Vec<u8>, AccessError> {
    let sig_err = |reason: String| AccessError::Signature {
        file: file.to_owned(),
        reason,
    };
    let (p7, content) = Pkcs7::from_smime(signed)
        .map_err(|e| sig_err(format!("not an S/MIME signed document: {}", ssl_reason(&e))))?;
    let content = content.ok_or_else(|| {
        sig_err("not a multipart/signed S/MIME document (no detached content)".to_owned())
    })?;
    let no_extra = Stack::<X509>::new().map_err(|e| sig_err(ssl_reason(&e)))?;
    let mut out = Vec::new();
    p7.verify(
        &no_extra,
        ca.store(),
        Some(&content),
        Some(&mut out),
        Pkcs7Flags::TEXT,
    )
    .map_err(|e| {
        sig_err(format!(
            "signature does not verify against the permissions CA '{}': {}",
            ca.subject(),
            ssl_reason(&e)
        ))
    })?;
    Ok(out)
}

/// OpenSSL's error stack as one line.
pub(crate) fn ssl_reason(e: &openssl::error::ErrorStack) -> String {
    let parts: Vec<String> = e
        .errors()
        .iter()
        .map(|x| {
            let mut s = x.reason().unwrap_or("unknown error").to_owned();
            if let Some(d) = x.data() {
                s.push_str(" (");
                s.push_str(d);
                s.push(')');
            }
            s
        })
        .collect();
    if parts.is_empty() {
        "unknown OpenSSL error".to_owned()
    } else {
        parts.join("; ")
    }
}
