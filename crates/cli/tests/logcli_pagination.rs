//! logcli's pagination (`logcli query --limit N --batch M`, N > M) over HTTP,
//! without logcli: the test sends the requests logcli sends and applies its
//! rule at batch boundaries, then checks that exactly the expected entries
//! come out, each once, whatever the batch size.
//!
//! logcli's rule, as it behaves: each batch is `query_range` with
//! `limit=M` (the last one with what is left plus the entries it will drop);
//! the next batch starts (forward) at the timestamp of the batch's last
//! entry, or ends (backward) one nanosecond after it, so that entries sharing
//! that timestamp come again; those already shown (same timestamp and line)
//! are dropped. The server must answer every window with the first entries
//! of one total order, so that a boundary inside a run of equal timestamps
//! neither repeats nor loses entries.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::TestServer;
use serde_json::{json, Value};
use std::collections::BTreeSet;

const SEC: i64 = 1_000_000_000;

/// (timestamp, stream labels as JSON text, line).
type Shown = (i64, String, String);

/// One `query_range` answer, entries of all streams sorted by time in the
/// direction (equal timestamps keep the answer's order, as logcli's sort may).
fn batch(
    server: &TestServer,
    query: &str,
    limit: usize,
    start: i64,
    end: i64,
    forward: bool,
) -> Vec<Shown> {
    let v = server.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", query),
            ("limit", &limit.to_string()),
            ("start", &start.to_string()),
            ("end", &end.to_string()),
            ("direction", if forward { "FORWARD" } else { "BACKWARD" }),
        ],
    );
    let mut out = Vec::new();
    for s in v["data"]["result"].as_array().unwrap() {
        for e in s["values"].as_array().unwrap() {
            out.push((
                e[0].as_str().unwrap().parse::<i64>().unwrap(),
                s["stream"].to_string(),
                e[1].as_str().unwrap().to_string(),
            ));
        }
    }
    if forward {
        out.sort_by_key(|e| e.0);
    } else {
        out.sort_by_key(|e| std::cmp::Reverse(e.0));
    }
    out
}

/// What logcli shows for `--limit limit --batch batch_size`.
fn paginate(
    server: &TestServer,
    query: &str,
    limit: usize,
    batch_size: usize,
    (mut start, mut end): (i64, i64),
    forward: bool,
) -> Vec<Shown> {
    let batch_size = batch_size.min(limit);
    let mut shown = Vec::new();
    let mut total = 0;
    let mut last: Vec<Shown> = Vec::new();
    while total < limit {
        let size = if limit - total < batch_size {
            limit - total + last.len()
        } else {
            batch_size
        };
        let entries = batch(server, query, size, start, end, forward);
        let Some(newest) = entries.last().map(|e| e.0) else {
            break;
        };
        let fresh: Vec<Shown> = entries
            .iter()
            .filter(|e| !last.iter().any(|l| l.0 == e.0 && l.2 == e.2))
            .cloned()
            .collect();
        let printed = fresh.len();
        shown.extend(fresh);
        if printed == 0 || printed == limit {
            break;
        }
        last = entries.into_iter().filter(|e| e.0 == newest).collect();
        assert!(
            last.len() < batch_size,
            "logcli refuses batch size {batch_size}: {} entries share the boundary",
            last.len()
        );
        total += printed;
        if forward {
            start = newest;
        } else {
            end = newest + 1;
        }
    }
    shown
}

/// Four streams with one entry every second for 20 s; stream `a` has a
/// second entry at every even second. So 5 entries share each even second
/// and 4 each odd one, and batch boundaries fall inside runs of equal
/// timestamps. Lines are unique (logcli drops repeated lines at a boundary).
fn push_sample(server: &TestServer, t0: i64) {
    let streams: Vec<Value> = ["a", "b", "c", "d"]
        .iter()
        .map(|pod| {
            let mut values = Vec::new();
            for k in 0..20i64 {
                let ts = (t0 + k * SEC).to_string();
                values.push(json!([ts, format!("level=info pod={pod} k={k} n=0")]));
                if *pod == "a" && k % 2 == 0 {
                    values.push(json!([ts, format!("level=warn pod={pod} k={k} n=1")]));
                }
            }
            json!({"stream": {"app": "page", "pod": pod}, "values": values})
        })
        .collect();
    server.push_json(&json!({ "streams": streams }));
}

fn seconds_of(entries: &[Shown], t0: i64) -> BTreeSet<i64> {
    entries.iter().map(|e| (e.0 - t0) / SEC).collect()
}

fn assert_no_repeats(shown: &[Shown], what: &str) {
    let distinct: BTreeSet<&Shown> = shown.iter().collect();
    assert_eq!(distinct.len(), shown.len(), "{what}: an entry came twice");
}

#[test]
fn paginated_log_queries_return_exactly_the_unpaginated_entries() {
    let server = TestServer::start();
    let t0 = 1_700_000_000 * SEC;
    push_sample(&server, t0);
    let window = (t0 - SEC, t0 + 30 * SEC);
    for query in [r#"{app="page"}"#, r#"{app="page"} | logfmt"#] {
        // Limits that end at a whole second: seconds 11..=19 hold 40 entries,
        // seconds 0..=8 hold 41.
        for (forward, limit, seconds) in [(false, 40, 11..=19), (true, 41, 0..=8)] {
            for batch_size in [6, 7, 8, 9, 13, 40, 1000] {
                let what =
                    format!("{query} forward={forward} --limit {limit} --batch {batch_size}");
                let shown = paginate(&server, query, limit, batch_size, window, forward);
                assert_eq!(shown.len(), limit, "{what}");
                assert_no_repeats(&shown, &what);
                assert_eq!(seconds_of(&shown, t0), seconds.clone().collect(), "{what}");
                let lines: BTreeSet<&str> = shown.iter().map(|e| e.2.as_str()).collect();
                for k in seconds.clone() {
                    for pod in ["a", "b", "c", "d"] {
                        let l = format!("level=info pod={pod} k={k} n=0");
                        assert!(lines.contains(l.as_str()), "{what}: missing {l}");
                    }
                    if k % 2 == 0 {
                        let l = format!("level=warn pod=a k={k} n=1");
                        assert!(lines.contains(l.as_str()), "{what}: missing {l}");
                    }
                }
                let times: Vec<i64> = shown.iter().map(|e| e.0).collect();
                let mut sorted = times.clone();
                if forward {
                    sorted.sort();
                } else {
                    sorted.sort_by_key(|t| std::cmp::Reverse(*t));
                }
                assert_eq!(times, sorted, "{what}: out of order");
            }
        }
        // Limits that cut a run of equal timestamps: the same entries as one
        // query with that limit, for every batch size.
        for forward in [false, true] {
            for limit in [11, 23, 38] {
                let mut one = batch(&server, query, limit, window.0, window.1, forward);
                one.sort();
                for batch_size in [6, 7, 10] {
                    let what =
                        format!("{query} forward={forward} --limit {limit} --batch {batch_size}");
                    let mut shown = paginate(&server, query, limit, batch_size, window, forward);
                    assert_no_repeats(&shown, &what);
                    shown.sort();
                    assert_eq!(shown, one, "{what}");
                }
            }
        }
    }
}
