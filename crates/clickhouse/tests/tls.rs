//! TLS to ClickHouse with a private CA and a client certificate: a loopback
//! HTTPS server (rustls) with certificates made for the test answers the
//! client only when the client trusts the test CA, and, when it asks for
//! one, only a client showing a certificate of that CA.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use runakefli_clickhouse::client::{Client, Config, Request};
use runakefli_clickhouse::tls::{client_config, TlsFiles};
use runakefli_clickhouse::Error;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A CA and the server and client certificates it signed, as PEM files.
struct Pki {
    dir: tempfile::TempDir,
    ca_der: CertificateDer<'static>,
    server: (CertificateDer<'static>, PrivateKeyDer<'static>),
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "runakefli test ca");
        let ca = ca.self_signed(&ca_key).unwrap();
        let leaf = |name: &str, usage: ExtendedKeyUsagePurpose| {
            let key = KeyPair::generate().unwrap();
            let mut p = CertificateParams::new(vec![name.to_string()]).unwrap();
            p.extended_key_usages = vec![usage];
            (p.signed_by(&key, &ca, &ca_key).unwrap(), key)
        };
        let (server, server_key) = leaf("127.0.0.1", ExtendedKeyUsagePurpose::ServerAuth);
        let (client, client_key) = leaf("runakefli", ExtendedKeyUsagePurpose::ClientAuth);
        let write = |name: &str, text: String| std::fs::write(dir.path().join(name), text).unwrap();
        write("ca.pem", ca.pem());
        write("client.pem", client.pem());
        write("client-key.pem", client_key.serialize_pem());
        // A CA that signed nothing here.
        let other_key = KeyPair::generate().unwrap();
        let mut other = CertificateParams::new(Vec::<String>::new()).unwrap();
        other.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        write("other-ca.pem", other.self_signed(&other_key).unwrap().pem());
        Pki {
            ca_der: ca.der().clone(),
            server: (
                server.der().clone(),
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der())),
            ),
            dir,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// An HTTPS server on a loopback port answering every request `1\n`
    /// (ClickHouse's answer to `SELECT 1`); with `client_auth`, only to
    /// clients showing a certificate of the test CA.
    fn serve(&self, client_auth: bool) -> String {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap();
        let builder = if client_auth {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(self.ca_der.clone()).unwrap();
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .unwrap();
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let config = Arc::new(
            builder
                .with_single_cert(vec![self.server.0.clone()], self.server.1.clone_key())
                .unwrap(),
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "https://127.0.0.1:{}",
            listener.local_addr().unwrap().port()
        );
        std::thread::spawn(move || {
            for tcp in listener.incoming() {
                let Ok(tcp) = tcp else { continue };
                let conn = rustls::ServerConnection::new(config.clone()).unwrap();
                let _ = answer(rustls::StreamOwned::new(conn, tcp));
            }
        });
        url
    }
}

/// Reads one HTTP request and answers `1\n`; a failed handshake is an error.
fn answer(stream: impl Read + Write) -> std::io::Result<()> {
    let mut r = BufReader::new(stream);
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    let s = r.get_mut();
    s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n1\n")?;
    s.flush()
}

fn client(url: &str, files: &TlsFiles) -> Client {
    Client::new(Config {
        tls: client_config(files).unwrap(),
        ..Config::new(url, "default")
    })
}

fn select_1(c: &Client) -> Result<String, Error> {
    c.query("SELECT 1", &Request::default())
}

fn files(ca: Option<&Path>, cert: Option<&Path>, key: Option<&Path>) -> TlsFiles {
    TlsFiles {
        ca: ca.map(Path::to_path_buf),
        client_cert: cert.map(Path::to_path_buf),
        client_key: key.map(Path::to_path_buf),
    }
}

#[test]
fn a_private_ca_is_trusted_only_when_given() {
    let pki = Pki::new();
    let url = pki.serve(false);
    let ca = pki.path("ca.pem");
    assert_eq!(
        select_1(&client(&url, &files(Some(&ca), None, None))).unwrap(),
        "1\n"
    );
    // The built-in roots and an unrelated CA do not know the server's issuer.
    for f in [
        files(None, None, None),
        files(Some(&pki.path("other-ca.pem")), None, None),
    ] {
        let e = select_1(&client(&url, &f)).unwrap_err();
        assert!(matches!(e, Error::Transport(_)), "{e}");
        assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");
    }
}

#[test]
fn a_server_asking_for_a_client_certificate_gets_the_configured_one() {
    let pki = Pki::new();
    let url = pki.serve(true);
    let (ca, cert, key) = (
        pki.path("ca.pem"),
        pki.path("client.pem"),
        pki.path("client-key.pem"),
    );
    let with_cert = client(&url, &files(Some(&ca), Some(&cert), Some(&key)));
    assert_eq!(select_1(&with_cert).unwrap(), "1\n");
    let without = client(&url, &files(Some(&ca), None, None));
    assert!(
        select_1(&without).is_err(),
        "a client without a certificate was answered"
    );
}

#[test]
fn unusable_tls_files_are_refused_with_their_path() {
    let pki = Pki::new();
    let (ca, cert, key) = (
        pki.path("ca.pem"),
        pki.path("client.pem"),
        pki.path("client-key.pem"),
    );
    let missing = pki.path("missing.pem");
    let cases = [
        (files(Some(&missing), None, None), "missing.pem"),
        // A key where certificates are expected, and the other way round.
        (files(Some(&key), None, None), "no PEM certificate"),
        (files(Some(&ca), Some(&cert), Some(&cert)), "no private key"),
        (files(Some(&ca), Some(&cert), None), "needs its key"),
        (files(Some(&ca), None, Some(&key)), "needs its key"),
        // A key that does not belong to the certificate.
        (
            files(Some(&ca), Some(&ca), Some(&key)),
            "client certificate and key",
        ),
    ];
    for (f, want) in cases {
        let e = client_config(&f).unwrap_err();
        assert!(matches!(e, Error::Tls(_)), "{f:?}: {e}");
        assert!(e.to_string().contains(want), "{f:?}: {e}");
    }
    assert!(client_config(&TlsFiles::default()).unwrap().is_none());
}
