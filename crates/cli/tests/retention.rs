//! Retention against the real server: by age (global, per stream selector,
//! per tenant) and by disk budget; disk measured like `du`, queries no
//! longer return the data, also after a restart. And the accepted age of
//! pushed entries (`reject_old_samples_max_age`, `creation_grace_period`).
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::TestServer;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

const DAY: i64 = 86_400_000_000_000;

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// Midday of the day `back` days before today (UTC).
fn day_noon(back: i64) -> i64 {
    (now_ns().div_euclid(DAY) - back) * DAY + DAY / 2
}

/// Name of the partition directory of a timestamp.
fn day_dir(server: &TestServer, tenant: &str, ts: i64) -> std::path::PathBuf {
    let secs = ts.div_euclid(1_000_000_000);
    let out = std::process::Command::new("date")
        .args(["-u", "-d", &format!("@{secs}"), "+%Y%m%d"])
        .output()
        .unwrap();
    let name = String::from_utf8(out.stdout).unwrap().trim().to_string();
    server.data_dir.join("tenants").join(tenant).join(name)
}

/// Disk usage in bytes as `du -sb` reports it.
fn du(path: &Path) -> u64 {
    if !path.exists() {
        return 0;
    }
    let out = std::process::Command::new("du")
        .arg("-sb")
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// `n` lines of poorly compressible text, so parts have a measurable size.
fn noisy_lines(seed: u64, n: usize) -> Vec<String> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    (0..n)
        .map(|i| {
            let mut s = format!("line {i} ");
            for _ in 0..12 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                s.push_str(&format!("{:016x}", x));
            }
            s
        })
        .collect()
}

fn push(server: &TestServer, tenant: Option<&str>, labels: serde_json::Value, t: i64, n: usize) {
    let values: Vec<_> = noisy_lines(t as u64 ^ labels.to_string().len() as u64, n)
        .into_iter()
        .enumerate()
        .map(|(i, l)| json!([(t + i as i64 * 1_000_000).to_string(), l]))
        .collect();
    let body = json!({"streams":[{"stream": labels, "values": values}]});
    let headers: Vec<(&str, &str)> = tenant.map(|t| ("X-Scope-OrgID", t)).into_iter().collect();
    let (status, text) = server.post_with(
        "/loki/api/v1/push",
        "application/json",
        None,
        &headers,
        body.to_string().as_bytes(),
    );
    assert_eq!(status, 204, "{text}");
}

fn count(server: &TestServer, tenant: Option<&str>, selector: &str, from: i64, to: i64) -> usize {
    let headers: Vec<(&str, &str)> = tenant.map(|t| ("X-Scope-OrgID", t)).into_iter().collect();
    let (status, body) = server.get_with(
        "/loki/api/v1/query_range",
        &[
            ("query", selector),
            ("start", &from.to_string()),
            ("end", &to.to_string()),
            ("limit", "5000"),
        ],
        &headers,
    );
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["values"].as_array().unwrap().len())
        .sum()
}

fn flush(server: &TestServer) {
    let (status, text) = server.post("/flush", "text/plain", None, b"");
    assert_eq!(status, 204, "{text}");
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn stats(server: &TestServer) -> serde_json::Value {
    server.get_json("/admin/storage/stats", &[])
}

#[test]
fn age_retention_drops_expired_days_and_rewrites_partitions_by_selector() {
    let mut server = TestServer::start();
    let (old, recent, today) = (day_noon(10), day_noon(2), now_ns() - 60_000_000_000);
    for (t, n) in [(old, 3000), (recent, 3000), (today, 200)] {
        push(&server, None, json!({"app":"api","env":"prod"}), t, n);
        push(&server, None, json!({"app":"api","env":"dev"}), t, n);
    }
    flush(&server);
    let (old_dir, recent_dir) = (
        day_dir(&server, "fake", old),
        day_dir(&server, "fake", recent),
    );
    let (old_bytes, recent_bytes) = (du(&old_dir), du(&recent_dir));
    assert!(old_bytes > 100_000, "{old_bytes}");
    let data_before = du(&server.data_dir);
    server.stop();
    server.extra_args(&[
        "--retention-period",
        "3d",
        "--retention-stream",
        r#"{env="dev"}:1d:1"#,
        "--retention-interval",
        "1s",
    ]);
    server.start_again();
    // The old day goes whole; the recent day loses its dev stream.
    wait_for("the expired partition to go", || !old_dir.exists());
    wait_for("the dev stream's rewrite", || {
        stats(&server)["retention_rewritten_partitions"].as_u64() >= Some(1)
    });
    wait_for("the rewritten inputs to be deleted", || {
        du(&recent_dir) < recent_bytes * 3 / 4
    });
    let after = du(&server.data_dir);
    assert!(
        after + old_bytes + recent_bytes / 4 <= data_before + 64 * 1024,
        "before {data_before}, after {after}, old day {old_bytes}, recent day {recent_bytes}"
    );
    let s = stats(&server);
    assert_eq!(s["retention_dropped_partitions"], 1, "{s}");
    assert_eq!(s["retention_removed_rows"], 3000 + 3000 + 3000, "{s}");
    let check = |server: &TestServer| {
        let day = |t: i64| (t - DAY / 2, t + DAY / 2);
        let (a, b) = day(old);
        assert_eq!(count(server, None, r#"{app="api"}"#, a, b), 0);
        let (a, b) = day(recent);
        assert_eq!(count(server, None, r#"{env="dev"}"#, a, b), 0);
        assert_eq!(count(server, None, r#"{env="prod"}"#, a, b), 3000);
        let (a, b) = (today - 1, now_ns());
        assert_eq!(count(server, None, r#"{app="api"}"#, a, b), 400);
        // The index forgot the expired day: no label values there.
        let (a, b) = day(old);
        let v = server.get_json(
            "/loki/api/v1/label/env/values",
            &[("start", &a.to_string()), ("end", &b.to_string())],
        );
        assert_eq!(v["data"], json!([]), "{v}");
    };
    check(&server);
    // Expired rows still in the WAL at a crash are not replayed.
    push(
        &server,
        None,
        json!({"app":"api","env":"prod"}),
        old + 1,
        10,
    );
    push(
        &server,
        None,
        json!({"app":"api","env":"dev"}),
        recent + 1,
        10,
    );
    server.kill9();
    server.start_again();
    check(&server);
}

#[test]
fn tenant_retention_overrides_the_default() {
    let server = TestServer::start_with(&[
        "--multi-tenant",
        "--tenant-retention-period",
        "short=1d",
        "--retention-interval",
        "1s",
    ]);
    let old = day_noon(5);
    push(&server, Some("short"), json!({"app":"a"}), old, 500);
    push(&server, Some("long"), json!({"app":"a"}), old, 500);
    flush(&server);
    let short_dir = day_dir(&server, "short", old);
    let long_dir = day_dir(&server, "long", old);
    assert!(long_dir.exists());
    wait_for("the short tenant's partition to go", || !short_dir.exists());
    let (a, b) = (old - DAY / 2, old + DAY / 2);
    assert_eq!(count(&server, Some("short"), r#"{app="a"}"#, a, b), 0);
    assert_eq!(count(&server, Some("long"), r#"{app="a"}"#, a, b), 500);
    assert!(long_dir.exists());
}

#[test]
fn disk_budget_drops_the_oldest_days_first() {
    let mut server = TestServer::start();
    let days: Vec<i64> = (1..=4).rev().map(day_noon).collect(); // oldest first
    for &t in &days {
        push(&server, None, json!({"app":"api"}), t, 2000);
    }
    flush(&server);
    let sizes: Vec<u64> = days
        .iter()
        .map(|&t| du(&day_dir(&server, "fake", t)))
        .collect();
    let used = stats(&server)["disk_bytes"].as_u64().unwrap();
    // Room for everything but the oldest day and half of the next one.
    let budget = used - sizes[0] - sizes[1] / 2;
    let data_before = du(&server.data_dir);
    server.stop();
    server.extra_args(&[
        "--max-disk-bytes",
        &budget.to_string(),
        "--retention-interval",
        "1s",
    ]);
    server.start_again();
    wait_for("two partitions to go", || {
        !day_dir(&server, "fake", days[0]).exists() && !day_dir(&server, "fake", days[1]).exists()
    });
    for (i, &t) in days.iter().enumerate() {
        let (a, b) = (t - DAY / 2, t + DAY / 2);
        let want = if i < 2 { 0 } else { 2000 };
        assert_eq!(
            count(&server, None, r#"{app="api"}"#, a, b),
            want,
            "day {i}"
        );
        assert_eq!(day_dir(&server, "fake", t).exists(), i >= 2);
    }
    let used_after = stats(&server)["disk_bytes"].as_u64().unwrap();
    assert!(used_after <= budget, "{used_after} > {budget}");
    let data_after = du(&server.data_dir);
    assert!(
        data_after + sizes[0] + sizes[1] <= data_before + 64 * 1024,
        "du before {data_before}, after {data_after}, dropped {} + {}",
        sizes[0],
        sizes[1]
    );
}

#[test]
fn too_old_and_too_new_entries_are_refused_with_lokis_messages() {
    let server = TestServer::start_with(&[
        "--reject-old-samples-max-age",
        "1h",
        "--creation-grace-period",
        "10m",
        common::AS_PUSHED[0],
        common::AS_PUSHED[1],
    ]);
    let now = now_ns();
    let body = json!({"streams":[
        {"stream":{"app":"old"},"values":[[(now - 2 * 3_600_000_000_000i64).to_string(), "stale"]]},
        {"stream":{"app":"ok"},"values":[[(now - 1_000_000_000).to_string(), "fresh"]]},
        {"stream":{"app":"new"},"values":[[(now + 3_600_000_000_000i64).to_string(), "early"]]}
    ]});
    let (status, text) = server.post(
        "/loki/api/v1/push",
        "application/json",
        None,
        body.to_string().as_bytes(),
    );
    assert_eq!(status, 400, "{text}");
    let lines: Vec<&str> = text.trim_end().lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("entry for stream '{app=\"old\"}' has timestamp too old: ")
            && lines[0].contains(", oldest acceptable timestamp is: "),
        "{text}"
    );
    assert!(
        lines[1].starts_with("entry for stream '{app=\"new\"}' has timestamp too new: "),
        "{text}"
    );
    // The entry inside the window was stored; the others were not.
    let (a, b) = (now - 3 * 3_600_000_000_000, now + 2 * 3_600_000_000_000);
    assert_eq!(count(&server, None, r#"{app="ok"}"#, a, b), 1);
    assert_eq!(count(&server, None, r#"{app=~"old|new"}"#, a, b), 0);
    let (_, metrics) = server.get("/metrics", &[]);
    assert!(
        metrics.contains(
            "runakefli_rejected_requests_total{protocol=\"loki\",reason=\"greater_than_max_sample_age\"} 1"
        ),
        "{metrics}"
    );
}
