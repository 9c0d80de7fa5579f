//! Delete requests and retention of the ClickHouse backend against the real
//! ClickHouse 26.9 engine (chdb behind the test front, see `front/`):
//! requests hide rows from every read path at once, survive reopening, come
//! back when cancelled and are deleted when due; retention drops whole day
//! partitions and deletes the expired days of streams whose period is
//! shorter, by the embedded store's rules.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod front;

use runakefli_clickhouse::client::Request;
use runakefli_clickhouse::{ClickHouseBackend, Client, Error, Housekeeping, RetentionReport};
use runakefli_model::deletes::{CancelRefusal, DeleteRequest, DeleteStatus, LineFilter, LineTest};
use runakefli_model::plan::{AnswerData, PlanOutput, QueryPlan};
use runakefli_model::retention::{StreamRule, TenantRetention};
use runakefli_model::{
    Backend, Direction, Entry, Labels, MatchOp, Matcher, PushRequest, PushStream, ScanControl,
    ScanRequest, TenantId, NANOS_PER_DAY,
};
use std::sync::Arc;
use std::time::Duration;

const DAY: i64 = NANOS_PER_DAY;
/// A UTC midnight (2023-11-15).
const D0: i64 = 19_676 * DAY;
const API: &str = r#"{app="api"}"#;
const WEB: &str = r#"{app="web"}"#;
const DEV: &str = r#"{app="api", env="dev"}"#;

fn push(b: &ClickHouseBackend, tenant: &str, streams: &[(&str, &[(i64, &str)])]) {
    let req = PushRequest {
        streams: streams
            .iter()
            .map(|(labels, entries)| PushStream {
                labels: Labels::parse(labels).unwrap(),
                entries: entries
                    .iter()
                    .map(|(ts, line)| Entry {
                        ts: *ts,
                        line: line.to_string(),
                        metadata: vec![],
                    })
                    .collect(),
            })
            .collect(),
    };
    b.push(&TenantId::new(tenant), &req).unwrap();
}

fn matchers(sel: &str) -> Vec<Matcher> {
    Labels::parse(sel)
        .unwrap()
        .pairs()
        .iter()
        .map(|(k, v)| Matcher::new(k, MatchOp::Eq, v).unwrap())
        .collect()
}

fn any_app() -> Vec<Matcher> {
    vec![Matcher::new("app", MatchOp::Re, ".+").unwrap()]
}

/// Every row of `tenant` a scan returns: (stream, ts, line), sorted.
fn scanned(b: &ClickHouseBackend, tenant: &str) -> Vec<(String, i64, String)> {
    let mut out = Vec::new();
    let req = ScanRequest::new(
        TenantId::new(tenant),
        any_app(),
        D0 - 30 * DAY,
        D0 + 30 * DAY,
        Direction::Forward,
    );
    b.scan(&req, &mut |info, batch| {
        for e in batch.entries {
            out.push((info.labels.to_string(), e.ts, e.line));
        }
        ScanControl::Continue
    })
    .unwrap();
    out.sort();
    out
}

/// The lines a lines plan over `tenant` answers in SQL.
fn planned(b: &ClickHouseBackend, tenant: &str) -> Vec<String> {
    let plan = QueryPlan {
        tenant: TenantId::new(tenant),
        selector: any_app(),
        start: D0 - 30 * DAY,
        end: D0 + 30 * DAY,
        line_filters: vec![],
        fields: None,
        output: PlanOutput::Lines {
            limit: 1000,
            direction: Direction::Forward,
        },
        deadline: None,
        cancel: None,
    };
    let answer = b.execute(&plan).unwrap().expect("answered in SQL");
    let AnswerData::Lines(rows) = answer.data else {
        panic!("{answer:?}")
    };
    let mut v: Vec<String> = rows.into_iter().map(|r| r.entry.line).collect();
    v.sort();
    v
}

/// Entries per stream from `stream_totals` (the index/stats path).
fn totals(b: &ClickHouseBackend, tenant: &str) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = b
        .stream_totals(
            &TenantId::new(tenant),
            &any_app(),
            D0 - 30 * DAY,
            D0 + 30 * DAY,
            None,
        )
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|t| (t.stream.labels.to_string(), t.entries))
        .collect();
    v.sort();
    v
}

fn count(c: &Client, sql: &str) -> u64 {
    let r = c.rows(sql, &Request::default()).unwrap();
    let n = &r[0]["n"];
    n.as_u64()
        .or_else(|| n.as_str().and_then(|s| s.parse().ok()))
        .unwrap()
}

fn contains(s: &str) -> LineTest {
    LineTest::Contains(s.into())
}

fn request(
    query: &str,
    sel: &str,
    filters: Vec<LineFilter>,
    start: i64,
    end: i64,
) -> DeleteRequest {
    DeleteRequest {
        id: String::new(),
        query: query.into(),
        matchers: matchers(sel),
        filters,
        start,
        end,
        created: 0,
        status: DeleteStatus::Received,
    }
}

fn open(c: &Client, housekeeping: Housekeeping) -> Arc<ClickHouseBackend> {
    Arc::new(
        ClickHouseBackend::open(c.clone())
            .unwrap()
            .with_housekeeping(housekeeping),
    )
}

fn an_hour_to_cancel() -> Housekeeping {
    Housekeeping {
        delete_cancel_period: Duration::from_secs(3600),
        ..Housekeeping::default()
    }
}

const NOW_PLUS_2H: i64 = 2 * 3600 * 1_000_000_000;

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

#[test]
fn delete_requests_hide_rows_at_once_come_back_when_cancelled_and_go_when_due() {
    let c = front::client("deletes");
    let b = open(&c, an_hour_to_cancel());
    let t = TenantId::new("t");
    push(
        &b,
        "t",
        &[
            (
                API,
                &[
                    (D0 + 10, "login password=1"),
                    (D0 + 20, "plain"),
                    (D0 + 30, "password=2 keep"),
                    (D0 + 2 * DAY, "password=3 later"),
                ],
            ),
            (WEB, &[(D0 + 10, "web password=9")]),
        ],
    );
    push(&b, "u", &[(API, &[(D0 + 10, "other tenant password=1")])]);
    let before = scanned(&b, "t");
    assert_eq!(before.len(), 5);

    // `{app="api"} |= "password=" != "keep"` over the first day.
    let filters = vec![
        LineFilter {
            negate: false,
            alternatives: vec![contains("password=")],
        },
        LineFilter {
            negate: true,
            alternatives: vec![contains("keep")],
        },
    ];
    let q = r#"{app="api"} |= "password=" != "keep""#;
    let first = b
        .add_delete(&t, request(q, API, filters.clone(), D0, D0 + DAY - 1))
        .unwrap();
    assert_eq!(first.id.len(), 8);
    assert_eq!(first.status, DeleteStatus::Received);
    let hidden = |lines: &[&str]| -> Vec<(String, i64, String)> {
        before
            .iter()
            .filter(|r| !lines.contains(&r.2.as_str()))
            .cloned()
            .collect()
    };
    // Hidden at once from scans, SQL plans and aggregates; other streams,
    // lines, days and tenants untouched.
    assert_eq!(scanned(&b, "t"), hidden(&["login password=1"]));
    assert_eq!(
        planned(&b, "t"),
        [
            "password=2 keep",
            "password=3 later",
            "plain",
            "web password=9"
        ]
    );
    assert_eq!(
        totals(&b, "t"),
        [(API.to_string(), 3), (WEB.to_string(), 1)]
    );
    assert_eq!(scanned(&b, "u").len(), 1);
    assert_eq!(b.delete_requests(&t).len(), 1);
    assert!(b.delete_requests(&TenantId::new("u")).is_empty());

    // Cancelled within the period: the rows come back, the list forgets it.
    assert_eq!(b.cancel_delete(&t, &first.id, false).unwrap(), Ok(()));
    assert_eq!(scanned(&b, "t"), before);
    assert!(b.delete_requests(&t).is_empty());
    assert_eq!(
        b.cancel_delete(&t, &first.id, false).unwrap(),
        Err(CancelRefusal::NotFound)
    );

    // Accepted again (a fresh id, never a cancelled one's), then due.
    let second = b
        .add_delete(&t, request(q, API, filters, D0, D0 + DAY - 1))
        .unwrap();
    assert_ne!(second.id, first.id);
    assert_eq!(b.process_due_deletes(now_ns()).unwrap(), 0, "not due yet");
    assert_eq!(b.process_due_deletes(now_ns() + NOW_PLUS_2H).unwrap(), 1);
    assert_eq!(
        b.delete_requests(&t)
            .iter()
            .map(|r| (r.id.clone(), r.status))
            .collect::<Vec<_>>(),
        [(second.id.clone(), DeleteStatus::Processed)]
    );
    assert_eq!(
        b.cancel_delete(&t, &second.id, true).unwrap(),
        Err(CancelRefusal::TooLate)
    );
    // Gone from the table itself, not only hidden by the backend.
    assert_eq!(
        count(
            &c,
            "SELECT count() AS n FROM logs WHERE line LIKE '%password=%'"
        ),
        4
    );
    assert_eq!(
        count(
            &c,
            "SELECT count() AS n FROM logs WHERE line = 'login password=1'"
        ),
        0
    );
    assert_eq!(scanned(&b, "t"), hidden(&["login password=1"]));
    assert_eq!(b.process_due_deletes(now_ns() + NOW_PLUS_2H).unwrap(), 0);

    // A late push into a processed request's range stays hidden, as on the
    // embedded store; requests survive reopening.
    push(&b, "t", &[(API, &[(D0 + 40, "late password=4")])]);
    drop(b);
    let b = open(&c, an_hour_to_cancel());
    let listed = b.delete_requests(&t);
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (
            listed[0].id.as_str(),
            listed[0].status,
            listed[0].query.as_str()
        ),
        (second.id.as_str(), DeleteStatus::Processed, q)
    );
    assert_eq!(scanned(&b, "t"), hidden(&["login password=1"]));
    assert_eq!(
        count(
            &c,
            "SELECT count() AS n FROM logs WHERE line = 'late password=4'"
        ),
        1
    );
}

#[test]
fn regexp_line_filters_and_selectors_delete_exactly_or_are_refused() {
    let c = front::client("delete_regex");
    let b = open(&c, an_hour_to_cancel());
    let t = TenantId::new("t");
    push(
        &b,
        "t",
        &[
            (API, &[(D0 + 1, "token=abc"), (D0 + 2, "token=123")]),
            (WEB, &[(D0 + 1, "token=abc"), (D0 + 2, "Token=x")]),
        ],
    );
    // Outside the RE2 subset both engines read alike: refused, nothing stored.
    let digits = LineFilter {
        negate: false,
        alternatives: vec![LineTest::Regex(regex::Regex::new(r"token=\d+").unwrap())],
    };
    match b.add_delete(&t, request("x", API, vec![digits], D0, D0 + DAY)) {
        Err(Error::Invalid(m)) => assert!(m.contains("RE2 subset"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(b.delete_requests(&t).is_empty());
    assert_eq!(count(&c, "SELECT count() AS n FROM delete_requests"), 0);

    // `{app=~"(?i)[W]EB"} |~ "tok.n=[a-z]+"`: the selector is checked on the
    // labels (outside the subset), the line regexp in SQL.
    let mut r = request(
        r#"{app=~"(?i)[W]EB"} |~ "tok.n=[a-z]+""#,
        WEB,
        vec![LineFilter {
            negate: false,
            alternatives: vec![LineTest::Regex(regex::Regex::new("tok.n=[a-z]+").unwrap())],
        }],
        D0,
        D0 + DAY,
    );
    r.matchers = vec![Matcher::new("app", MatchOp::Re, "(?i)[W]EB").unwrap()];
    b.add_delete(&t, r).unwrap();
    let want = vec![
        (API.to_string(), D0 + 1, "token=abc".to_string()),
        (API.to_string(), D0 + 2, "token=123".to_string()),
        (WEB.to_string(), D0 + 2, "Token=x".to_string()),
    ];
    assert_eq!(scanned(&b, "t"), want);
    assert_eq!(b.process_due_deletes(now_ns() + NOW_PLUS_2H).unwrap(), 1);
    assert_eq!(scanned(&b, "t"), want);
    assert_eq!(count(&c, "SELECT count() AS n FROM logs"), 3);
}

fn stream_days(c: &Client) -> Vec<(String, String, String)> {
    let mut v: Vec<(String, String, String)> = c
        .rows(
            "SELECT DISTINCT tenant, s.labels_text AS l, toString(toDate(timestamp)) AS d \
             FROM logs INNER JOIN (SELECT DISTINCT stream_id, labels_text FROM streams) AS s \
             USING stream_id",
            &Request::default(),
        )
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["tenant"].as_str().unwrap().to_string(),
                r["l"].as_str().unwrap().to_string(),
                r["d"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

fn partitions(c: &Client) -> Vec<String> {
    front::strings(
        c,
        "SELECT DISTINCT partition FROM system.parts WHERE database = currentDatabase() \
         AND table = 'logs' AND active ORDER BY partition",
        "partition",
    )
}

#[test]
fn retention_drops_whole_days_and_deletes_the_expired_days_of_shorter_streams() {
    let c = front::client("retention");
    // Two days for everyone, one for `env="dev"`, 400 days for tenant `audit`.
    let mut h = Housekeeping::default();
    h.retention.default.period = Some(Duration::from_secs(2 * 86_400));
    h.retention.default.streams = vec![StreamRule {
        matchers: matchers(r#"{env="dev"}"#),
        priority: 1,
        period: Duration::from_secs(86_400),
    }];
    h.retention.tenants.insert(
        "audit".into(),
        TenantRetention {
            period: Some(Duration::from_secs(400 * 86_400)),
            streams: None,
        },
    );
    let h2 = h.clone();
    let b = open(&c, h);
    // Days D0 .. D0+4 (2023-11-15 .. 19), one row per stream and day; tenant
    // `audit` only on D0.
    let days: Vec<(i64, String)> = (0..5)
        .map(|d| (D0 + d * DAY + 5, format!("day {d}")))
        .collect();
    let rows: Vec<(i64, &str)> = days.iter().map(|(t, l)| (*t, l.as_str())).collect();
    push(&b, "t", &[(API, &rows), (DEV, &rows)]);
    push(&b, "audit", &[(API, &rows[..1])]);
    assert_eq!(partitions(&c).len(), 5);
    assert_eq!(scanned(&b, "t").len(), 10);

    // Now: D0+4 at noon. Default keeps from D0+2, dev from D0+3. Queries see
    // everything until the pass runs, as on the embedded store.
    let now = D0 + 4 * DAY + DAY / 2;
    let report = b.apply_retention(now).unwrap();
    assert_eq!(
        report,
        RetentionReport {
            // D0+1: every stream expired (audit has no row there); D0 holds audit's.
            dropped_partitions: 1,
            failed_part_drops: 0,
            // t's default streams (D0) and dev (D0, D0+2).
            row_deletes: 2,
            expired_stream_days: 2 + 3,
        }
    );
    assert_eq!(
        partitions(&c),
        ["2023-11-15", "2023-11-17", "2023-11-18", "2023-11-19"]
    );
    let s = |t: &str, l: &str, d: &str| (t.to_string(), l.to_string(), d.to_string());
    assert_eq!(
        stream_days(&c),
        [
            s("audit", API, "2023-11-15"),
            s("t", DEV, "2023-11-18"),
            s("t", DEV, "2023-11-19"),
            s("t", API, "2023-11-17"),
            s("t", API, "2023-11-18"),
            s("t", API, "2023-11-19"),
        ]
        .into_iter()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
    );
    let kept: Vec<String> = scanned(&b, "t")
        .into_iter()
        .map(|r| format!("{} {}", r.0, r.2))
        .collect();
    assert_eq!(
        kept,
        [
            format!("{DEV} day 3"),
            format!("{DEV} day 4"),
            format!("{API} day 2"),
            format!("{API} day 3"),
            format!("{API} day 4"),
        ]
        .into_iter()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
    );
    assert_eq!(scanned(&b, "audit").len(), 1);
    // The streams table forgot the expired days: label values over them are gone.
    let t = TenantId::new("t");
    assert!(b.label_names(&t, D0, D0 + 2 * DAY).unwrap().is_empty());
    assert_eq!(b.label_names(&t, D0, D0 + 5 * DAY).unwrap(), ["app", "env"]);

    // A second pass (or a second server) has nothing left to do.
    assert_eq!(b.apply_retention(now).unwrap(), RetentionReport::default());
    let other = open(&c, h2);
    assert_eq!(
        other.apply_retention(now).unwrap(),
        RetentionReport::default()
    );
}

/// The cluster layout on a one-node cluster chdb knows (`front::TEST_CLUSTER`;
/// no Keeper, so no `ON CLUSTER` and no Replicated engines): every table a
/// local table plus a `Distributed` one, pushes (a re-sent one deduplicated
/// through the `Distributed` insert), reads, a delete request and a
/// retention pass through them; deletes land in the local tables.
#[test]
fn the_cluster_layout_pushes_reads_deletes_and_expires_through_distributed_tables() {
    let c = front::cluster_client("cluster");
    let mut h = an_hour_to_cancel();
    h.retention.default.period = Some(Duration::from_secs(2 * 86_400));
    let b = open(&c, h);
    let engines: Vec<String> = c
        .rows(
            "SELECT name, engine FROM system.tables WHERE database = currentDatabase() \
             ORDER BY name",
            &Request::default(),
        )
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["name"].as_str().unwrap(),
                r["engine"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        engines,
        [
            "delete_requests Distributed",
            "delete_requests_local ReplacingMergeTree",
            "logs Distributed",
            "logs_local MergeTree",
            "runakefli_schema Distributed",
            "runakefli_schema_local MergeTree",
            "streams Distributed",
            "streams_local ReplacingMergeTree",
        ]
    );
    let t = TenantId::new("t");
    let rows: &[(i64, &str)] = &[
        (D0 + 10, "old password=1"),
        (D0 + 3 * DAY, "new password=2"),
    ];
    push(&b, "t", &[(API, rows), (WEB, &[(D0 + 3 * DAY + 5, "web")])]);
    // The same push again: its token makes it a no-op on the shard.
    push(&b, "t", &[(API, rows), (WEB, &[(D0 + 3 * DAY + 5, "web")])]);
    assert_eq!(count(&c, "SELECT count() AS n FROM logs_local"), 3);
    assert_eq!(scanned(&b, "t").len(), 3);
    assert_eq!(
        planned(&b, "t"),
        ["new password=2", "old password=1", "web"]
    );
    assert_eq!(
        totals(&b, "t"),
        [(API.to_string(), 2), (WEB.to_string(), 1)]
    );

    // A delete request: hidden at once, then deleted from `logs_local`.
    let filters = vec![LineFilter {
        negate: false,
        alternatives: vec![contains("password=2")],
    }];
    b.add_delete(&t, request("q", API, filters, D0, D0 + 4 * DAY))
        .unwrap();
    assert_eq!(planned(&b, "t"), ["old password=1", "web"]);
    assert_eq!(b.process_due_deletes(now_ns() + NOW_PLUS_2H).unwrap(), 1);
    assert_eq!(count(&c, "SELECT count() AS n FROM logs_local"), 2);
    assert_eq!(b.delete_requests(&t)[0].status, DeleteStatus::Processed);

    // Retention at D0+3 noon keeps from D0+1: D0's row goes by DELETE (no
    // part dropped on a cluster), from `logs_local` and `streams_local`.
    let report = b.apply_retention(D0 + 3 * DAY + DAY / 2).unwrap();
    assert_eq!(
        (
            report.dropped_partitions,
            report.row_deletes,
            report.expired_stream_days
        ),
        (0, 1, 1)
    );
    assert_eq!(count(&c, "SELECT count() AS n FROM logs_local"), 1);
    assert_eq!(count(&c, "SELECT count() AS n FROM streams_local FINAL"), 2);
    assert_eq!(planned(&b, "t"), ["web"]);
}
