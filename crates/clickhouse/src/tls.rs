//! TLS to ClickHouse beyond the public web's roots: a private certificate
//! authority (`--clickhouse-ca-file`) and a client certificate
//! (`--clickhouse-client-cert`, `--clickhouse-client-key`) for servers that
//! authenticate clients by certificate.
//!
//! Without files, an `https://` URL is checked against the roots built into
//! the HTTP client (Mozilla's). A CA file replaces them, as `curl --cacert`
//! does: the server's chain must lead to one of its certificates.

use crate::Error;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// PEM files of the TLS settings; every field optional, but a client
/// certificate and its key come together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// Certificates to trust instead of the built-in roots.
    pub ca: Option<PathBuf>,
    /// The client certificate chain shown to the server.
    pub client_cert: Option<PathBuf>,
    /// The client certificate's private key.
    pub client_key: Option<PathBuf>,
}

impl TlsFiles {
    /// Whether any file is given (otherwise the client's defaults stay).
    pub fn is_empty(&self) -> bool {
        self.ca.is_none() && self.client_cert.is_none() && self.client_key.is_none()
    }
}

/// The rustls client configuration for `files`, or `None` when none is given.
pub fn client_config(files: &TlsFiles) -> Result<Option<Arc<rustls::ClientConfig>>, Error> {
    if files.is_empty() {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?;
    let mut roots = rustls::RootCertStore::empty();
    match &files.ca {
        Some(path) => {
            for cert in certificates(path)? {
                roots
                    .add(cert)
                    .map_err(|e| Error::Tls(format!("{}: {e}", path.display())))?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let builder = builder.with_root_certificates(roots);
    let config = match (&files.client_cert, &files.client_key) {
        (None, None) => builder.with_no_client_auth(),
        (Some(cert), Some(key)) => {
            let chain = certificates(cert)?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| Error::Tls(format!("{}: no private key read: {e}", key.display())))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| Error::Tls(format!("client certificate and key: {e}")))?
        }
        _ => {
            return Err(Error::Tls(
                "a client certificate needs its key and a key its certificate \
                 (--clickhouse-client-cert with --clickhouse-client-key)"
                    .into(),
            ))
        }
    };
    Ok(Some(Arc::new(config)))
}

/// Every certificate of the PEM file at `path`; at least one.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| Error::Tls(format!("{}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(Error::Tls(format!(
            "{}: no PEM certificate in it",
            path.display()
        )));
    }
    Ok(certs)
}
