//! `serve --auth-file` end to end with the real binary: secrets made by
//! `runakefli auth hash-password` and `auth new-token` admit their
//! tenants; requests without them are refused; a bad credentials file stops
//! the start with a message naming the problem. Isolation on every endpoint
//! is in `crates/server/tests/tenant_isolation.rs`.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::TestServer;
use std::io::Write;
use std::process::{Command, Stdio};

fn runakefli(args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_runakefli"))
        .args(args)
        .env_remove("LOKI_ADDR")
        .env_remove("LOKI_ORG_ID")
        .env_remove("LOKI_USERNAME")
        .env_remove("LOKI_PASSWORD")
        .env_remove("LOKI_BEARER_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn basic(user: &str, password: &str) -> String {
    // A tiny base64 encoder keeps this test free of another dependency.
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = format!("{user}:{password}").into_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| (n << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    format!("Basic {out}")
}

#[test]
fn secrets_from_the_auth_subcommands_admit_their_tenants() {
    let (ok, phc, err) = runakefli(&["auth", "hash-password"], "correct horse\n");
    assert!(ok, "{err}");
    let phc = phc.trim();
    assert!(phc.starts_with("$argon2id$"), "{phc}");
    let (ok, out, err) = runakefli(
        &["auth", "new-token", "--name", "agent", "--tenant", "team-b"],
        "",
    );
    assert!(ok, "{err}");
    let token = out
        .lines()
        .find_map(|l| l.strip_prefix("token: "))
        .unwrap()
        .to_string();
    // The printed entry is the file's `tokens:` section as is.
    let entry: String = out
        .lines()
        .skip_while(|l| !l.starts_with("tokens:"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!entry.contains(&token), "the file keeps only the digest");
    let file = format!(
        "users:\n  - name: grafana\n    password_hash: '{phc}'\n    tenants: [team-a]\n{entry}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("credentials.yaml");
    std::fs::write(&path, file).unwrap();
    let server = TestServer::start_with(&["--auth-file", path.to_str().unwrap()]);

    let push = br#"{"streams":[{"stream":{"app":"agent"},"values":[["1795910400000000000","from the agent"]]}]}"#;
    let bearer = format!("Bearer {token}");
    let (status, body) = server.post_with(
        "/loki/api/v1/push",
        "application/json",
        None,
        &[("Authorization", &bearer)],
        push,
    );
    assert_eq!(status, 204, "{body}");
    let (status, _) = server.post("/loki/api/v1/push", "application/json", None, push);
    assert_eq!(status, 401);

    let params = [
        ("query", r#"{app="agent"}"#),
        ("start", "1795910000000000000"),
        ("end", "1795911000000000000"),
    ];
    let (status, body) = server.get_with(
        "/loki/api/v1/query_range",
        &params,
        &[("Authorization", &bearer)],
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("from the agent"), "{body}");
    // grafana is team-a's: it sees nothing of team-b, and may not ask for it.
    let grafana = basic("grafana", "correct horse");
    let (status, body) = server.get_with(
        "/loki/api/v1/query_range",
        &params,
        &[("Authorization", &grafana)],
    );
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains("from the agent"), "{body}");
    let (status, body) = server.get_with(
        "/loki/api/v1/query_range",
        &params,
        &[("Authorization", &grafana), ("X-Scope-OrgID", "team-b")],
    );
    assert_eq!(status, 403, "{body}");
    let (status, _) = server.get_with(
        "/loki/api/v1/labels",
        &[],
        &[("Authorization", &basic("grafana", "wrong"))],
    );
    assert_eq!(status, 401);
    let (status, _) = server.get("/ready", &[]);
    assert_eq!(status, 200);

    // The command-line client sends the same credentials.
    let addr = ["--addr", server.base.as_str()];
    let as_agent = [&addr[..], &["--bearer-token", token.as_str()]].concat();
    let push = [&["push", "--labels", r#"{app="cli"}"#][..], &as_agent].concat();
    let (ok, _, err) = runakefli(&push, "from the client\n");
    assert!(ok, "{err}");
    let query = [&["query", "--since", "1h", r#"{app="cli"}"#][..], &as_agent].concat();
    let (ok, out, err) = runakefli(&query, "");
    assert!(ok, "{err}");
    assert!(out.contains("from the client"), "{out}");
    let as_grafana = [
        &["query", "--since", "1h", r#"{app="cli"}"#][..],
        &addr,
        &["--username", "grafana", "--password", "correct horse"],
    ]
    .concat();
    let (ok, out, err) = runakefli(&as_grafana, "");
    assert!(ok, "{err}");
    assert!(!out.contains("from the client"), "{out}");
    let (ok, _, err) = runakefli(&[&["labels"][..], &addr].concat(), "");
    assert!(!ok);
    assert!(err.contains("401"), "{err}");
}

#[test]
fn a_bad_credentials_file_stops_the_start_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("credentials.yaml");
    std::fs::write(
        &path,
        "tokens:\n  - name: t\n    sha256: not-hex\n    tenants: [a]\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let args = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--auth-file",
        path.to_str().unwrap(),
    ];
    let (ok, _, err) = runakefli(&args, "");
    assert!(!ok);
    assert!(
        err.contains(r#"credentials file: token "t": sha256: expected 64 hex digits"#),
        "{err}"
    );
    let missing = dir.path().join("missing.yaml");
    let mut args = args;
    args[6] = missing.to_str().unwrap();
    let (ok, _, err) = runakefli(&args, "");
    assert!(!ok);
    assert!(err.contains("missing.yaml"), "{err}");
}
