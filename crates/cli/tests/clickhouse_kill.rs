//! Kill tests of `runakefli serve --backend clickhouse` (issue 11, "Ingest"):
//! a client pushes numbered batches, as a collector would, while
//!
//! - the Rúnakefli server is SIGKILLed mid-ingest and started again on the
//!   same ClickHouse database, or
//! - ClickHouse itself (the chdb front, `crates/clickhouse/tests/front`) is
//!   SIGKILLed mid-ingest and started again on the same data;
//!
//! then re-sends every batch that was not acknowledged, and the last one that
//! was (a collector whose answer was lost re-sends it too). Every line
//! acknowledged at any time must be in ClickHouse exactly once, counted in
//! the `logs` table itself (queries collapse exact duplicates, so only the
//! table shows a duplicated insert), and the query API must return each line
//! once.
//!
//! Without chdb-core these tests fail, naming `.ci/setup-clients.sh chdb`.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;
#[allow(dead_code)]
#[path = "../../clickhouse/tests/front/mod.rs"]
mod front;

use common::TestServer;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// 2023-11-15T00:00:00Z: the batches' lines lie on both sides of midnight,
/// so inserts span two day partitions.
const MIDNIGHT: i64 = 1_700_006_400_000_000_000;
const SEC: i64 = 1_000_000_000;
/// Batches pushed, lines per batch (over two streams), time between lines.
const BATCHES: usize = 40;
const LINES: usize = 50;
const STEP: i64 = 10_000_000;
const FIRST_TS: i64 = MIDNIGHT - (BATCHES * LINES / 2) as i64 * STEP;

fn line_of(batch: usize, i: usize) -> String {
    format!("batch {batch:02} line {i:02}")
}

/// Batch `b`: `LINES` lines, none shared with another batch, alternating
/// between `{app="kill", half="0"}` and `{app="kill", half="1"}`.
fn batch_body(b: usize) -> Vec<u8> {
    let mut halves = [Vec::new(), Vec::new()];
    for i in 0..LINES {
        let ts = FIRST_TS + (b * LINES + i) as i64 * STEP;
        halves[i % 2].push(json!([ts.to_string(), line_of(b, i)]));
    }
    let streams: Vec<Value> = halves
        .into_iter()
        .enumerate()
        .map(|(h, values)| json!({"stream": {"app": "kill", "half": h.to_string()}, "values": values}))
        .collect();
    json!({ "streams": streams }).to_string().into_bytes()
}

/// What a push got.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    /// 204: acknowledged.
    Acked,
    /// Another HTTP status, with the answer's text.
    Status(u16, String),
    /// No HTTP answer (the server is gone).
    Unreachable(String),
}

fn push(base: &str, batch: usize) -> Outcome {
    let r = ureq::post(&format!("{base}/loki/api/v1/push"))
        .set("Content-Type", "application/json")
        .timeout(Duration::from_secs(60))
        .send_bytes(&batch_body(batch));
    match r {
        Ok(r) if r.status() == 204 => Outcome::Acked,
        Ok(r) => Outcome::Status(r.status(), r.into_string().unwrap_or_default()),
        Err(ureq::Error::Status(s, r)) => Outcome::Status(s, r.into_string().unwrap_or_default()),
        Err(ureq::Error::Transport(t)) => Outcome::Unreachable(t.to_string()),
    }
}

type Outcomes = Arc<Mutex<Vec<(usize, Outcome)>>>;

/// Pushes batches `0..BATCHES` to `base` one after the other, each once,
/// recording what each got.
fn pusher(base: String) -> (Outcomes, JoinHandle<()>) {
    let outcomes: Outcomes = Default::default();
    let out = outcomes.clone();
    let handle = std::thread::spawn(move || {
        for b in 0..BATCHES {
            let o = push(&base, b);
            out.lock().unwrap().push((b, o));
        }
    });
    (outcomes, handle)
}

/// Waits (at most a minute) until `ready` holds for the outcomes so far.
fn wait_for(outcomes: &Outcomes, what: &str, ready: impl Fn(&[(usize, Outcome)]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if ready(&outcomes.lock().unwrap()) {
            return;
        }
        let so_far = outcomes.lock().unwrap().clone();
        assert!(
            Instant::now() < deadline,
            "waited a minute for {what}; outcomes so far: {so_far:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn acked(outcomes: &[(usize, Outcome)]) -> usize {
    outcomes
        .iter()
        .filter(|(_, o)| *o == Outcome::Acked)
        .count()
}

/// Every line in the database's `logs` table and how many rows hold it.
fn stored(clickhouse_url: &str, db: &str) -> BTreeMap<String, u64> {
    let c =
        runakefli_clickhouse::Client::new(runakefli_clickhouse::Config::new(clickhouse_url, db));
    let rows = c
        .rows(
            "SELECT line, count() AS n FROM logs GROUP BY line",
            &Default::default(),
        )
        .expect("reading the logs table");
    rows.iter()
        .map(|r| {
            let n = match &r["n"] {
                Value::Number(n) => n.as_u64(),
                Value::String(s) => s.parse().ok(),
                _ => None,
            };
            (r["line"].as_str().unwrap().to_string(), n.unwrap())
        })
        .collect()
}

/// The lines `{app="kill"}` answers over the whole range, forward.
fn served(s: &TestServer) -> Vec<String> {
    let v = s.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", r#"{app="kill"}"#),
            ("start", &(FIRST_TS - SEC).to_string()),
            ("end", &(MIDNIGHT + 60 * SEC).to_string()),
            ("limit", "5000"),
            ("direction", "forward"),
        ],
    );
    v["data"]["result"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .flat_map(|s| s["values"].as_array().unwrap())
        .map(|e| e[1].as_str().unwrap().to_string())
        .collect()
}

/// Every line of the `acked` batches is stored exactly once, no line is
/// stored twice, and nothing else is stored.
fn assert_stored_once(stored: &BTreeMap<String, u64>, acked: &BTreeSet<usize>, when: &str) {
    let twice: Vec<_> = stored.iter().filter(|(_, &n)| n > 1).collect();
    assert!(
        twice.is_empty(),
        "{when}: {} lines stored more than once, e.g. {:?}",
        twice.len(),
        &twice[..twice.len().min(3)]
    );
    for &b in acked {
        for i in 0..LINES {
            let line = line_of(b, i);
            assert_eq!(
                stored.get(&line),
                Some(&1),
                "{when}: acknowledged line {line:?} is not stored once"
            );
        }
    }
    let pushed: BTreeSet<String> = (0..BATCHES)
        .flat_map(|b| (0..LINES).map(move |i| line_of(b, i)))
        .collect();
    let strangers: Vec<_> = stored.keys().filter(|l| !pushed.contains(*l)).collect();
    assert!(
        strangers.is_empty(),
        "{when}: lines never pushed: {strangers:?}"
    );
}

/// After the re-sends: every batch stored once, and the API answers every
/// line once.
fn assert_everything_once(clickhouse_url: &str, db: &str, server: &TestServer) {
    let all: BTreeSet<usize> = (0..BATCHES).collect();
    let rows = stored(clickhouse_url, db);
    assert_stored_once(&rows, &all, "after the re-sends");
    assert_eq!(rows.len(), BATCHES * LINES);
    let mut lines = served(server);
    let answered = lines.len();
    lines.sort();
    lines.dedup();
    assert_eq!(answered, lines.len(), "the query answered a line twice");
    let want: Vec<String> = rows.into_keys().collect();
    assert_eq!(lines, want, "the query does not answer what is stored");
}

#[test]
fn a_server_killed_mid_ingest_keeps_acknowledged_lines_and_resent_pushes_once() {
    let db = format!("kill_server_{}", std::process::id());
    let args = front::serve_args(&db);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut server = TestServer::start_with(&args);

    let (outcomes, handle) = pusher(server.base.clone());
    wait_for(&outcomes, "a third of the batches acknowledged", |o| {
        acked(o) >= BATCHES / 3
    });
    server.kill9();
    handle.join().unwrap();
    let outcomes = outcomes.lock().unwrap().clone();

    // ClickHouse was up all along: a push was acknowledged, or found no
    // server; never answered otherwise.
    let mut acked_batches = BTreeSet::new();
    for (b, o) in &outcomes {
        match o {
            Outcome::Acked => {
                acked_batches.insert(*b);
            }
            Outcome::Unreachable(_) => {}
            Outcome::Status(s, text) => panic!("batch {b}: {s} {text}"),
        }
    }
    assert!(
        acked_batches.len() < BATCHES,
        "the kill came after the last push; outcomes: {outcomes:?}"
    );
    // Batches are pushed in order: the acknowledged ones come first.
    let last_acked = *acked_batches.last().unwrap();
    assert_eq!(acked_batches.len(), last_acked + 1, "{outcomes:?}");
    let url = front::url(&db);
    let rows = stored(&url, &db);
    assert_stored_once(&rows, &acked_batches, "after the kill");
    // Whether the kill fell between ClickHouse's write and the answer (the
    // batch is stored, unacknowledged, and its re-send must add nothing):
    // timing decides, so it is reported, not required.
    let in_flight = last_acked + 1;
    eprintln!(
        "{} of {BATCHES} batches acknowledged before the kill; batch {in_flight} \
         (unacknowledged) has {} of {LINES} lines stored",
        acked_batches.len(),
        (0..LINES)
            .filter(|&i| rows.contains_key(&line_of(in_flight, i)))
            .count()
    );

    // The collector's re-sends, to a server started again on the same
    // database: every batch without an answer, and the last answered one.
    server.start_again();
    for b in (0..BATCHES).filter(|b| !acked_batches.contains(b)) {
        assert_eq!(
            push(&server.base, b),
            Outcome::Acked,
            "re-send of batch {b}"
        );
    }
    assert_eq!(
        push(&server.base, last_acked),
        Outcome::Acked,
        "re-send of the last acknowledged batch {last_acked}"
    );
    assert_everything_once(&url, &db, &server);
}

#[test]
fn clickhouse_killed_mid_ingest_answers_503_and_stores_every_acknowledged_line_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut clickhouse = front::OwnFront::start(&dir.path().join("chdb"));
    let url = clickhouse.url();
    let db = "kill_clickhouse";
    let server = TestServer::start_with(&[
        "--backend",
        "clickhouse",
        "--clickhouse-url",
        &url,
        "--clickhouse-database",
        db,
    ]);

    let (outcomes, handle) = pusher(server.base.clone());
    wait_for(&outcomes, "a fifth of the batches acknowledged", |o| {
        acked(o) >= BATCHES / 5
    });
    clickhouse.kill();
    let killed_after = outcomes.lock().unwrap().len();
    wait_for(&outcomes, "two pushes refused after the kill", |o| {
        o[killed_after.min(o.len())..]
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::Status(503, _)))
            .count()
            >= 2
    });
    clickhouse.start_again();
    handle.join().unwrap();
    let outcomes = outcomes.lock().unwrap().clone();

    // Rúnakefli was up all along: every push was acknowledged or refused
    // with 503 (the collector retries), never 500 or left without answer.
    let mut acked_batches = BTreeSet::new();
    let mut refused = Vec::new();
    for (b, o) in &outcomes {
        match o {
            Outcome::Acked => {
                acked_batches.insert(*b);
            }
            Outcome::Status(503, text) => {
                assert!(text.contains("clickhouse"), "batch {b}: 503 {text}");
                refused.push(*b);
            }
            other => panic!("batch {b}: {other:?}; outcomes: {outcomes:?}"),
        }
    }
    assert!(refused.len() >= 2, "{outcomes:?}");
    let first_refused = refused[0];
    let recovered: Vec<usize> = acked_batches
        .iter()
        .copied()
        .filter(|&b| b > first_refused)
        .collect();
    assert!(
        !recovered.is_empty(),
        "no push acknowledged after ClickHouse came back: {outcomes:?}"
    );
    assert_stored_once(&stored(&url, db), &acked_batches, "after the restart");
    eprintln!(
        "{} of {BATCHES} batches acknowledged, {} refused with 503 (first: {first_refused}), \
         {} acknowledged after the first refusal",
        acked_batches.len(),
        refused.len(),
        recovered.len()
    );

    // The collector re-sends what was refused, and the last batch
    // acknowledged before the kill.
    for &b in &refused {
        assert_eq!(
            push(&server.base, b),
            Outcome::Acked,
            "re-send of batch {b}"
        );
    }
    let last_before = *acked_batches
        .range(..first_refused)
        .next_back()
        .expect("a batch acknowledged before the kill");
    assert_eq!(
        push(&server.base, last_before),
        Outcome::Acked,
        "re-send of batch {last_before}"
    );
    assert_everything_once(&url, db, &server);
}
