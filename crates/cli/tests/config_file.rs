//! The YAML config file: keys named like the flags, human units, precedence
//! flag > variable > file > default, `--print-config` round trip, errors that
//! name the key; and start-up failures that say what to do.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::TestServer;
use std::process::Command;

fn runakefli() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_runakefli"));
    // Variables of the developer's shell must not leak into these checks.
    for (k, _) in std::env::vars() {
        if k.starts_with("RUNAKEFLI_") {
            c.env_remove(k);
        }
    }
    c
}

fn print_config(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let mut c = runakefli();
    c.arg("serve").args(args).arg("--print-config");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn setting<'a>(yaml: &'a str, key: &str) -> &'a str {
    yaml.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .unwrap_or_else(|| panic!("{key} missing in\n{yaml}"))
}

const FILE: &str = r#"
max_line_bytes: 100
retention_period: 30d
max_disk_bytes: 50GiB
multi_tenant: true
wal_fsync: false
retention_stream:
  - { selector: '{env="dev"}', priority: 1, period: 1d }
  - '{env="test"}:12h'
overrides:
  team-a:
    retention_period: 90d
    retention_stream:
      - { selector: '{app="audit"}', period: 400d, priority: 10 }
"#;

#[test]
fn file_values_apply_under_variables_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runakefli.yaml");
    std::fs::write(&path, FILE).unwrap();
    let p = path.to_str().unwrap();
    let (ok, yaml, err) = print_config(&["--config-file", p], &[]);
    assert!(ok, "{err}");
    assert_eq!(setting(&yaml, "max_line_bytes"), "100");
    assert_eq!(setting(&yaml, "retention_period"), "30d");
    assert_eq!(setting(&yaml, "max_disk_bytes"), "50GiB");
    assert_eq!(setting(&yaml, "multi_tenant"), "true");
    assert_eq!(setting(&yaml, "wal_fsync"), "false");
    assert!(yaml.contains("team-a:") && yaml.contains("400d"), "{yaml}");
    // A variable beats the file; a flag beats both.
    let env = [("RUNAKEFLI_MAX_LINE_BYTES", "300")];
    let (_, yaml, _) = print_config(&["--config-file", p], &env);
    assert_eq!(setting(&yaml, "max_line_bytes"), "300");
    let (_, yaml, _) = print_config(&["--config-file", p, "--max-line-bytes", "2KiB"], &env);
    assert_eq!(setting(&yaml, "max_line_bytes"), "2KiB");
    // The printed configuration loads back to itself.
    let (_, first, _) = print_config(&["--config-file", p], &[]);
    let again = dir.path().join("printed.yaml");
    std::fs::write(&again, &first).unwrap();
    let (ok, second, err) = print_config(&["--config-file", again.to_str().unwrap()], &[]);
    assert!(ok, "{err}");
    assert_eq!(first, second);
}

#[test]
fn the_server_runs_with_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runakefli.yaml");
    std::fs::write(&path, FILE).unwrap();
    let server = TestServer::start_with(&["--config-file", path.to_str().unwrap()]);
    // multi_tenant from the file: a push without a tenant is refused.
    let (status, _) = server.post("/loki/api/v1/push", "application/json", None, b"{}");
    assert_eq!(status, 401);
    // max_line_bytes from the file.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let body = format!(
        r#"{{"streams":[{{"stream":{{"app":"a"}},"values":[["{now}","{}"]]}}]}}"#,
        "x".repeat(150)
    );
    let (status, text) = server.post_with(
        "/loki/api/v1/push",
        "application/json",
        None,
        &[("X-Scope-OrgID", "team-a")],
        body.as_bytes(),
    );
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("Max entry size '100' bytes exceeded"),
        "{text}"
    );
}

#[test]
fn mistakes_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("max_line_byte: 100\n", "unknown setting \"max_line_byte\""),
        ("max_line_bytes: 10 parsecs\n", "max-line-bytes"),
        ("retention_period: 30 days\n", "invalid duration"),
        (
            "overrides:\n  t:\n    retention: 1d\n",
            "overrides.t.retention: unknown setting",
        ),
        (
            "retention_stream:\n  - { selector: '{a=\"b\"}' }\n",
            "period missing",
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("bad{i}.yaml"));
        std::fs::write(&path, text).unwrap();
        let (ok, _, err) = print_config(&["--config-file", path.to_str().unwrap()], &[]);
        assert!(!ok, "{text} accepted");
        assert!(err.contains(want), "{text}: {err}");
    }
    let (ok, _, err) = print_config(&["--config-file", "/nonexistent/runakefli.yaml"], &[]);
    assert!(!ok);
    assert!(err.contains("reading config file"), "{err}");
}

#[test]
fn a_port_in_use_names_the_address_and_the_flag() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = runakefli()
        .args(["serve", "--listen", &addr, "--data-dir"])
        .arg(dir.path().join("data"))
        .env("RUNAKEFLI_LOG", "error")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("cannot listen on {addr}")) && err.contains("--listen"),
        "{err}"
    );
}

#[test]
fn clickhouse_settings_come_from_the_file_and_the_password_is_never_printed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runakefli.yaml");
    std::fs::write(
        &path,
        "backend: clickhouse\nclickhouse_url: http://ch.example:8123\nclickhouse_setting:\n  - max_threads=4\n  - async_insert=0\n",
    )
    .unwrap();
    let p = path.to_str().unwrap();
    let env = [("RUNAKEFLI_CLICKHOUSE_PASSWORD", "hunter2")];
    let (ok, yaml, err) = print_config(&["--config-file", p, "--clickhouse-user", "rk"], &env);
    assert!(ok, "{err}");
    assert_eq!(setting(&yaml, "backend"), "clickhouse");
    assert_eq!(setting(&yaml, "clickhouse_url"), "http://ch.example:8123");
    assert_eq!(setting(&yaml, "clickhouse_database"), "runakefli");
    assert_eq!(setting(&yaml, "clickhouse_user"), "rk");
    assert_eq!(setting(&yaml, "clickhouse_password"), "null");
    assert!(!yaml.contains("hunter2"), "{yaml}");
    assert!(yaml.contains("- max_threads=4"), "{yaml}");
    // The printed file loads again to the same settings.
    let again = dir.path().join("again.yaml");
    std::fs::write(&again, &yaml).unwrap();
    let (ok, second, err) = print_config(&["--config-file", again.to_str().unwrap()], &env);
    assert!(ok, "{err}");
    assert_eq!(second, yaml);
    let (ok, _, err) = print_config(&["--clickhouse-setting", "no-equals-sign"], &[]);
    assert!(!ok);
    assert!(err.contains("expected NAME=VALUE"), "{err}");
}

#[test]
fn the_clickhouse_cluster_comes_from_the_file_and_replication_needs_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runakefli.yaml");
    std::fs::write(
        &path,
        "backend: clickhouse\nclickhouse_cluster: logs_cluster\nclickhouse_replicated: true\n",
    )
    .unwrap();
    let (ok, yaml, err) = print_config(&["--config-file", path.to_str().unwrap()], &[]);
    assert!(ok, "{err}");
    assert_eq!(setting(&yaml, "clickhouse_cluster"), "logs_cluster");
    assert_eq!(setting(&yaml, "clickhouse_replicated"), "true");
    let (ok, yaml, err) = print_config(&[], &[("RUNAKEFLI_CLICKHOUSE_CLUSTER", "c2")]);
    assert!(ok, "{err}");
    assert_eq!(setting(&yaml, "clickhouse_cluster"), "c2");
    assert_eq!(setting(&yaml, "clickhouse_replicated"), "false");
    let (ok, _, err) = print_config(&["--clickhouse-replicated"], &[]);
    assert!(!ok);
    assert!(err.contains("needs --clickhouse-cluster"), "{err}");
    let (ok, _, err) = print_config(&["--clickhouse-cluster", " "], &[]);
    assert!(!ok);
    assert!(err.contains("cluster name"), "{err}");
}

/// The ClickHouse TLS files are read before the server starts: a missing
/// CA file, or a client certificate without its key, stops it with an
/// error naming what is wrong (no connection to ClickHouse is tried).
#[test]
fn clickhouse_tls_files_are_checked_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing-ca.pem");
    let start = |args: &[&str]| {
        let out = runakefli()
            .arg("serve")
            .args(["--backend", "clickhouse", "--listen", "127.0.0.1:0"])
            .args(["--clickhouse-url", "https://127.0.0.1:9"])
            .args(args)
            .output()
            .unwrap();
        (out.status.success(), String::from_utf8(out.stderr).unwrap())
    };
    let (ok, err) = start(&["--clickhouse-ca-file", missing.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("clickhouse tls") && err.contains("missing-ca.pem"),
        "{err}"
    );
    let (ok, err) = start(&["--clickhouse-client-cert", missing.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("--clickhouse-client-key"), "{err}");
    let (ok, yaml, err) = print_config(&["--clickhouse-ca-file", "/etc/ca.pem"], &[]);
    assert!(ok, "{err}");
    assert_eq!(setting(&yaml, "clickhouse_ca_file"), "/etc/ca.pem");
}
