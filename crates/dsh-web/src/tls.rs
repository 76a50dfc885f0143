//! HTTPS from PEM files (`--tls-cert`, `--tls-key`): a certificate chain
//! and an unencrypted private key, on rustls with the ring provider.

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;

/// The PEM files of `--tls-cert` and `--tls-key`.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    /// The unencrypted private key.
    pub key: PathBuf,
}

/// Why the certificate or the key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file is missing, unreadable or not PEM of the expected kind.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// rustls refused the pair (a key that does not match, say).
    #[error("the certificate and key cannot be used together: {0}")]
    Config(#[from] rustls::Error),
}

fn file_error(path: &Path, message: impl ToString) -> TlsError {
    TlsError::File {
        path: path.to_owned(),
        message: message.to_string(),
    }
}

/// The acceptor of `files`.
pub fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, TlsError> {
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|err| file_error(&files.cert, err))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| file_error(&files.cert, err))?;
    if certs.is_empty() {
        return Err(file_error(&files.cert, "holds no PEM certificate"));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|err| file_error(&files.key, format!("no unencrypted PEM private key: {err}")))?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(certs, key)?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}
