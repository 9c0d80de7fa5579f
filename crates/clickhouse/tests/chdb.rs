//! The ClickHouse backend's pieces against the real ClickHouse 26.9 engine
//! (chdb-core behind the HTTP front in `chdb_http.py`, see `front/`): the
//! schema, inserts with deduplication tokens, exceptions, and the SQL the
//! crate generates for plans, with answers checked against Loki's rules.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod front;

use runakefli_clickhouse::client::Request;
use runakefli_clickhouse::insert::{encode_push, INSERT_LOGS, INSERT_STREAMS};
use runakefli_clickhouse::{schema, sql, Client, Config, Error};
use runakefli_model::plan::{
    BucketPlan, BucketValue, GroupBy, LineFilter, LineMatch, PlanOutput, QueryPlan,
};
use runakefli_model::{Direction, Entry, Labels, MatchOp, Matcher, PushRequest, PushStream};
use runakefli_model::{StreamId, TenantId};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

const T0: i64 = 1_700_000_000_000_000_000;

/// One entry to push: time offset from `T0`, line, metadata.
type TestEntry<'a> = (i64, &'a str, &'a [(&'a str, &'a str)]);

fn push(client: &Client, tenant: &str, streams: &[(&str, Vec<TestEntry<'_>>)]) {
    let req = PushRequest {
        streams: streams
            .iter()
            .map(|(labels, entries)| PushStream {
                labels: Labels::parse(labels).unwrap(),
                entries: entries
                    .iter()
                    .map(|(ts, line, md)| Entry {
                        ts: T0 + ts,
                        line: line.to_string(),
                        metadata: md
                            .iter()
                            .map(|(k, v)| (k.to_string(), v.to_string()))
                            .collect(),
                    })
                    .collect(),
            })
            .collect(),
    };
    let ins = encode_push(&TenantId::new(tenant), &req, 1);
    for (stmt, body) in [(INSERT_STREAMS, &ins.streams), (INSERT_LOGS, &ins.logs)] {
        let r = Request {
            settings: vec![("insert_deduplication_token", body.token.clone())],
            ..Request::default()
        };
        client.insert(stmt, &body.data, &r).unwrap();
    }
}

fn filter(kind: LineMatch, negated: bool, values: &[&str]) -> LineFilter {
    LineFilter {
        kind,
        negated,
        values: values.iter().map(|s| s.to_string()).collect(),
        any_of: None,
        all_of: Vec::new(),
        test: Arc::new(|_| true),
        split: None,
    }
}

fn plan(selector: &str, filters: Vec<LineFilter>, output: PlanOutput) -> QueryPlan {
    let (name, value) = selector.split_once("=~").unwrap();
    QueryPlan {
        tenant: TenantId::new("t"),
        selector: vec![Matcher::new(name, MatchOp::Re, value).unwrap()],
        start: T0,
        end: T0 + 10_000,
        line_filters: filters,
        fields: None,
        output,
        deadline: None,
        cancel: None,
    }
}

const API: &str = r#"{app="api", env="prod"}"#;
const WEB: &str = r#"{app="web"}"#;

/// Two streams of tenant `t` with time ties across and within streams, an
/// exact duplicate, metadata, and a stream of tenant `u`.
fn workload(test: &str) -> Client {
    let c = front::client(test);
    assert_eq!(schema::ensure(&c).unwrap(), schema::SCHEMA_VERSION);
    push(
        &c,
        "t",
        &[
            (
                API,
                vec![
                    (1000, "error one", &[]),
                    (2000, "ok two", &[]),
                    (2000, "error tie a", &[("trace", "x")]),
                    (2000, "error tie a2", &[]),
                    (3000, "error three", &[]),
                ],
            ),
            (
                WEB,
                vec![
                    (2000, "error tie b", &[]),
                    (2500, "50%_error\nnext line", &[]),
                ],
            ),
        ],
    );
    // The same line again, in a later push: an exact duplicate.
    push(&c, "t", &[(API, vec![(3000, "error three", &[])])]);
    push(&c, "u", &[(API, vec![(2000, "error other tenant", &[])])]);
    c
}

fn lines(c: &Client, p: &QueryPlan) -> Vec<(String, i64, String)> {
    c.rows(
        &sql::lines_query(p, &Default::default()).unwrap(),
        &Request::default(),
    )
    .unwrap()
    .iter()
    .map(|r| {
        (
            r["labels_text"].as_str().unwrap().to_string(),
            r["ts"].as_i64().unwrap() - T0,
            r["line"].as_str().unwrap().to_string(),
        )
    })
    .collect()
}

fn row(labels: &str, ts: i64, line: &str) -> (String, i64, String) {
    (labels.to_string(), ts, line.to_string())
}

fn table_names(c: &Client) -> Vec<String> {
    front::strings(
        c,
        "SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name",
        "name",
    )
}

#[test]
fn schema_is_created_once_and_newer_versions_are_refused() {
    let c = front::client("schema");
    assert_eq!(schema::ensure(&c).unwrap(), 2);
    assert_eq!(schema::ensure(&c).unwrap(), 2);
    assert_eq!(schema::current_version(&c).unwrap(), 2);
    assert_eq!(
        table_names(&c),
        ["delete_requests", "logs", "runakefli_schema", "streams"]
    );
    c.execute("INSERT INTO runakefli_schema (version) VALUES (99)")
        .unwrap();
    match schema::ensure(&c) {
        Err(Error::SchemaTooNew {
            found: 99,
            known: 2,
        }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_version_1_database_is_migrated_to_version_2_keeping_its_rows() {
    let c = front::client("migrate");
    c.query(
        &format!("CREATE DATABASE {}", c.config().database),
        &Request {
            no_database: true,
            ..Request::default()
        },
    )
    .unwrap();
    c.execute(
        "CREATE TABLE runakefli_schema (version UInt32, applied_at DateTime DEFAULT now()) \
         ENGINE = MergeTree ORDER BY version",
    )
    .unwrap();
    for s in schema::migration(1, None, &c.config().database) {
        c.execute(&s).unwrap();
    }
    c.execute("INSERT INTO runakefli_schema (version) VALUES (1)")
        .unwrap();
    push(&c, "t", &[(API, vec![(1, "kept", &[])])]);
    assert_eq!(table_names(&c), ["logs", "runakefli_schema", "streams"]);
    assert_eq!(schema::ensure(&c).unwrap(), 2);
    assert_eq!(
        table_names(&c),
        ["delete_requests", "logs", "runakefli_schema", "streams"]
    );
    let versions = c
        .rows(
            "SELECT version FROM runakefli_schema ORDER BY version",
            &Request::default(),
        )
        .unwrap();
    assert_eq!(versions.len(), 2, "{versions:?}");
    assert_eq!(log_rows(&c), 1);
}

#[test]
fn exceptions_and_unreachable_servers_are_typed_errors() {
    let c = front::client("errors");
    // The database does not exist yet: an exception, not an empty answer.
    assert_eq!(
        c.query("SELECT 1", &Request::default()).unwrap_err().code(),
        Some(81)
    );
    schema::ensure(&c).unwrap();
    match c.query("SELECT no_such_function(1)", &Request::default()) {
        Err(Error::Server {
            status,
            code: Some(46),
            message,
        }) => {
            assert_ne!(status, 200);
            assert!(message.starts_with("Code: 46. DB::Exception:"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let gone = Client::new(Config::new("http://127.0.0.1:1", "x"));
    assert!(matches!(gone.execute("SELECT 1"), Err(Error::Transport(_))));
}

#[test]
fn inserts_are_exact_and_retries_deduplicate() {
    let c = workload("insert");
    let q = |s: &str| c.rows(s, &Request::default()).unwrap();
    // 8 + 1 + 1 entries: the second push of "error three" is another insert
    // (another token), so its row is stored and left to queries to collapse.
    assert_eq!(q("SELECT count() AS n FROM logs")[0]["n"], 9);
    let r = q(
        "SELECT toUnixTimestamp64Nano(timestamp) AS ts, line, metadata FROM logs \
               WHERE line LIKE '50%' ",
    );
    assert_eq!(r[0]["ts"].as_i64().unwrap(), T0 + 2500);
    assert_eq!(r[0]["line"], "50%_error\nnext line");
    let md = q("SELECT metadata FROM logs WHERE line = 'error tie a'");
    assert_eq!(md[0]["metadata"], serde_json::json!({"trace": "x"}));
    // A retried push with the same token is a no-op.
    push(&c, "u", &[(API, vec![(2000, "error other tenant", &[])])]);
    assert_eq!(
        q("SELECT count() AS n FROM logs WHERE tenant = 'u'")[0]["n"],
        1
    );
    assert_eq!(
        q("SELECT count() AS n FROM streams FINAL")[0]["n"],
        3,
        "one row per tenant, stream and day"
    );
}

#[test]
fn lines_plans_answer_in_loki_order() {
    let c = workload("lines");
    let errors = || vec![filter(LineMatch::Substring, false, &["error"])];
    let back = plan(
        "app=~api|web",
        errors(),
        PlanOutput::Lines {
            limit: 10,
            direction: Direction::Backward,
        },
    );
    assert_eq!(
        lines(&c, &back),
        [
            row(API, 3000, "error three"),
            row(WEB, 2500, "50%_error\nnext line"),
            row(API, 2000, "error tie a2"),
            row(API, 2000, "error tie a"),
            row(WEB, 2000, "error tie b"),
            row(API, 1000, "error one"),
        ]
    );
    let fwd = plan(
        "app=~api|web",
        errors(),
        PlanOutput::Lines {
            limit: 4,
            direction: Direction::Forward,
        },
    );
    assert_eq!(
        lines(&c, &fwd),
        [
            row(API, 1000, "error one"),
            row(API, 2000, "error tie a"),
            row(API, 2000, "error tie a2"),
            row(WEB, 2000, "error tie b"),
        ]
    );
    // The time range is [start, end): a row at `end` is out.
    let mut p = back.clone();
    p.end = T0 + 3000;
    assert_eq!(lines(&c, &p)[0], row(WEB, 2500, "50%_error\nnext line"));
    // Selector and filters: `!=`, LIKE escapes, `.` and newlines.
    let only = |fs: Vec<LineFilter>| {
        let p = plan(
            "app=~.+",
            fs,
            PlanOutput::Lines {
                limit: 100,
                direction: Direction::Forward,
            },
        );
        lines(&c, &p).into_iter().map(|r| r.2).collect::<Vec<_>>()
    };
    assert_eq!(
        only(vec![filter(LineMatch::Substring, true, &["error"])]),
        ["ok two"]
    );
    assert_eq!(
        only(vec![filter(LineMatch::Substring, false, &["0%_e"])]),
        ["50%_error\nnext line"]
    );
    assert!(only(vec![filter(LineMatch::Substring, false, &["5_%"])]).is_empty());
    assert!(only(vec![filter(LineMatch::Regex, false, &["error.next"])]).is_empty());
    assert_eq!(
        only(vec![filter(LineMatch::Regex, false, &["(?s)error.next"])]),
        ["50%_error\nnext line"]
    );
    assert_eq!(
        only(vec![
            filter(LineMatch::Regex, false, &["tie", "one"]),
            filter(LineMatch::Substring, true, &["a2", "b"]),
        ]),
        ["error one", "error tie a"]
    );
}

#[test]
fn bucket_plans_count_rows_in_left_open_right_closed_buckets() {
    let c = workload("buckets");
    let ids: BTreeMap<StreamId, &str> = [API, WEB]
        .into_iter()
        .map(|l| (Labels::parse(l).unwrap().stream_id(), l))
        .collect();
    let run = |bounds: Vec<i64>, value| {
        let p = plan(
            "app=~.+",
            vec![],
            PlanOutput::Buckets(BucketPlan {
                bounds: bounds.into_iter().map(|b| T0 + b).collect(),
                group_by: GroupBy::Stream,
                value,
                top: None,
            }),
        );
        c.rows(
            &sql::buckets_query(&p, &Default::default()).unwrap(),
            &Request::default(),
        )
        .unwrap()
        .iter()
        .map(|r: &Value| {
            let stream = ids[&r["stream_id"].as_u64().unwrap()];
            let meta = r["meta"].to_string();
            (
                format!("{stream} {meta}"),
                r["bucket"].as_i64().unwrap(),
                r["rows"].as_u64().unwrap(),
                r["bytes"].as_u64().unwrap(),
            )
        })
        .collect::<Vec<_>>()
    };
    let api = format!("{API} {{}}");
    let api_trace = format!("{API} {{\"trace\":\"x\"}}");
    let web = format!("{WEB} {{}}");
    // (1000, 2000], (2000, 3000]: the row at 1000 is out, the duplicate
    // at 3000 counts once.
    let mut got = run(vec![1000, 2000, 3000], BucketValue::LineBytes);
    got.sort();
    let mut want = vec![
        (api.clone(), 0, 2, 18),
        (api.clone(), 1, 1, 11),
        (api_trace.clone(), 0, 1, 11),
        (web.clone(), 0, 1, 11),
        (web.clone(), 1, 1, 19),
    ];
    want.sort();
    assert_eq!(got, want);
    // Uneven bounds: (999, 2000], (2000, 2600].
    let uneven = run(vec![999, 2000, 2600], BucketValue::Count);
    assert!(uneven.contains(&(api.clone(), 0, 3, 27)), "{uneven:?}");
    assert!(uneven.contains(&(web.clone(), 1, 1, 19)), "{uneven:?}");
    assert!(!uneven.iter().any(|r| r.0 == api && r.1 == 1), "{uneven:?}");
}

/// Label-grouped bucket plans: a row's label is its last metadata pair of
/// that name, else its stream label, else absent (`None`); rows at the
/// bucket edges, duplicates once, one answer row per (group, bucket).
#[test]
fn bucket_plans_grouped_by_labels_count_groups_not_streams() {
    let c = workload("grouped");
    // More rows: metadata naming a stream label (it wins), a metadata name
    // given twice (the last pair wins), a third stream of another `env`.
    push(
        &c,
        "t",
        &[
            (
                API,
                vec![
                    (2600, "meta app", &[("app", "from-meta")]),
                    (2700, "twice", &[("env", "first"), ("env", "last")]),
                ],
            ),
            (r#"{app="api", env="dev"}"#, vec![(1500, "dev row", &[])]),
        ],
    );
    let run = |names: &[&str], bounds: Vec<i64>, value| {
        let p = plan(
            "app=~.+",
            vec![],
            PlanOutput::Buckets(BucketPlan {
                bounds: bounds.into_iter().map(|b| T0 + b).collect(),
                group_by: GroupBy::Labels(names.iter().map(|s| s.to_string()).collect()),
                value,
                top: None,
            }),
        );
        let mut got: Vec<(String, i64, u64, u64)> = c
            .rows(
                &sql::buckets_query(&p, &Default::default()).unwrap(),
                &Request::default(),
            )
            .unwrap()
            .iter()
            .map(|r: &Value| {
                (
                    r["key"].to_string(),
                    r["bucket"].as_i64().unwrap(),
                    r["rows"].as_u64().unwrap(),
                    r["bytes"].as_u64().unwrap(),
                )
            })
            .collect();
        got.sort();
        got
    };
    let k = |s: &str| s.to_string();
    // (1000, 2000], (2000, 3000]: the row at 1000 is out, the duplicate at
    // 3000 counts once; WEB has no `env` (null).
    assert_eq!(
        run(&["env"], vec![1000, 2000, 3000], BucketValue::LineBytes),
        [
            (k(r#"["dev"]"#), 0, 1, 7),
            (k(r#"["last"]"#), 1, 1, 5),
            (k(r#"["prod"]"#), 0, 3, 29),
            (k(r#"["prod"]"#), 1, 2, 19),
            (k("[null]"), 0, 1, 11),
            (k("[null]"), 1, 1, 19),
        ]
    );
    assert_eq!(
        run(
            &["app", "trace"],
            vec![1999, 2000, 3000],
            BucketValue::Count
        ),
        [
            (k(r#"["api","x"]"#), 0, 1, 11),
            (k(r#"["api",null]"#), 0, 2, 18),
            (k(r#"["api",null]"#), 1, 2, 16),
            (k(r#"["from-meta",null]"#), 1, 1, 8),
            (k(r#"["web",null]"#), 0, 1, 11),
            (k(r#"["web",null]"#), 1, 1, 19),
        ]
    );
    // No grouping labels: one group.
    assert_eq!(
        run(&[], vec![0, 10_000], BucketValue::Count),
        [(k("[]"), 0, 10, 9 + 6 + 11 + 12 + 11 + 8 + 5 + 11 + 19 + 7)]
    );
}

/// `Backend::stream_totals` sums each stream's rows in SQL: entries
/// (exact duplicates once), line bytes, metadata pairs (a name given twice
/// counts twice) and the bytes of the distinct metadata strings (names and
/// values together), one row per stream.
#[test]
fn stream_totals_are_summed_in_sql() {
    use runakefli_clickhouse::ClickHouseBackend;
    use runakefli_model::Backend;
    let c = workload("totals");
    let b = ClickHouseBackend::open(c).unwrap();
    let t = TenantId::new("t");
    let all = [Matcher::new("app", MatchOp::Re, ".+").unwrap()];
    let mut got: Vec<_> = b
        .stream_totals(&t, &all, T0, T0 + 10_000, None)
        .unwrap()
        .expect("clickhouse answers stream totals")
        .into_iter()
        .map(|x| {
            (
                x.stream.labels.to_string(),
                x.first - T0,
                x.last - T0,
                x.entries,
                x.line_bytes,
                x.metadata_pairs,
                x.metadata_distinct_bytes,
            )
        })
        .collect();
    got.sort();
    // API: 5 distinct rows (the re-pushed "error three" once), one with
    // `trace=x` (strings "trace" and "x": 6 bytes); WEB: 2 rows.
    assert_eq!(
        got,
        [
            (API.to_string(), 1000, 3000, 5, 9 + 6 + 11 + 12 + 11, 1, 6),
            (WEB.to_string(), 2000, 2500, 2, 11 + 19, 0, 0),
        ]
    );
    // A window without rows; a name given twice on a row, a value equal to a name.
    assert!(b
        .stream_totals(&t, &all, T0 + 3001, T0 + 10_000, None)
        .unwrap()
        .unwrap()
        .is_empty());
    b.push(
        &t,
        &PushRequest {
            streams: vec![PushStream {
                labels: Labels::parse(WEB).unwrap(),
                entries: vec![Entry {
                    ts: T0 + 5000,
                    line: "md".into(),
                    metadata: vec![("k".into(), "v".into()), ("k".into(), "k".into())],
                }],
            }],
        },
    )
    .unwrap();
    let web = b
        .stream_totals(&t, &all, T0 + 4000, T0 + 6000, None)
        .unwrap()
        .unwrap();
    assert_eq!(web.len(), 1);
    assert_eq!(
        (
            web[0].entries,
            web[0].line_bytes,
            web[0].metadata_pairs,
            web[0].metadata_distinct_bytes
        ),
        (1, 2, 2, 2)
    );
    let stats = b.sql_stats();
    assert_eq!(
        (stats.totals_queries, stats.totals_rows, stats.scan_rows),
        (3, 3, 0)
    );
}

/// Lines to test filters on: newlines, non-ASCII, LIKE and regexp
/// metacharacters, backslashes, JSON.
const LINES: &[&str] = &[
    "",
    "a\nb",
    "ünïcode ü",
    "GET /api/v1 200",
    r#"{"msg":"bad request","status":400}"#,
    "tab\there",
    "x.y*z",
    "ERROR caps",
    r"back\slash 50%_off",
    "aaa b",
];

/// ClickHouse's verdict on each of [`LINES`] for one SQL predicate over `line`.
fn verdicts(c: &Client, predicate: &str) -> Vec<bool> {
    let lines: Vec<String> = LINES.iter().map(|l| sql::quote(l)).collect();
    let q = format!(
        "SELECT arrayMap(line -> toUInt8({predicate}), [{}]) AS v",
        lines.join(", ")
    );
    c.rows(&q, &Request::default()).unwrap()[0]["v"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64() == Some(1))
        .collect()
}

#[test]
fn line_filters_agree_with_the_engines_regex_and_substring_tests() {
    let c = front::client("filters");
    schema::ensure(&c).unwrap();
    // ClickHouse's own default: `.` matches `\n` (RE2's and Loki's does not);
    // the generated `(?-s:…)` is what makes them agree.
    assert!(verdicts(&c, "match(line, 'a.b')")[1]);
    let patterns = [
        "a.b",
        "(?s)a.b",
        "^GET",
        "200$",
        "(?m)^b$",
        "ü+",
        "[^a-z ]+",
        "err(or)?|ERR",
        r#""msg":"[^"]*request"#,
        "[[:upper:]]{3}",
        r"\.\*",
        "(?U)a+",
        r"x\x2Ey",
        r"\Aa",
        r"b\z",
        "",
        r"\t",
        ".",
        "^$",
        r"[^\n]+b",
        r"\\s",
        "50%_",
        "a{3}",
    ];
    for p in patterns {
        let f = filter(LineMatch::Regex, false, &[p]);
        let pred = sql::line_filter(&f).unwrap_or_else(|e| panic!("{p}: {e}"));
        let re = regex::Regex::new(p).unwrap();
        let want: Vec<bool> = LINES.iter().map(|l| re.is_match(l)).collect();
        assert_eq!(verdicts(&c, &pred), want, "regexp {p:?} as {pred}");
        let neg = sql::line_filter(&filter(LineMatch::Regex, true, &[p])).unwrap();
        let not_want: Vec<bool> = want.iter().map(|w| !w).collect();
        assert_eq!(verdicts(&c, &neg), not_want, "!~ {p:?}");
    }
    for needle in [
        "", "%", "_", r"\", "a\nb", "ü", "50%_", "0%_o", "a_b", "%_", "'",
    ] {
        let f = filter(LineMatch::Substring, false, &[needle]);
        let pred = sql::line_filter(&f).unwrap();
        let want: Vec<bool> = LINES.iter().map(|l| l.contains(needle)).collect();
        assert_eq!(verdicts(&c, &pred), want, "|= {needle:?} as {pred}");
    }
    let or = sql::line_filter(&filter(LineMatch::Substring, false, &["tab", "caps"])).unwrap();
    let want: Vec<bool> = LINES
        .iter()
        .map(|l| l.contains("tab") || l.contains("caps"))
        .collect();
    assert_eq!(verdicts(&c, &or), want);
    // What re2 reads otherwise is declined, for the engine to evaluate.
    for p in [r"\d+", r"(?i)[e]rror", r"\bx"] {
        assert!(matches!(
            sql::line_filter(&filter(LineMatch::Regex, false, &[p])),
            Err(Error::Unsupported(_))
        ));
    }
}

#[test]
fn the_backend_pushes_lists_scans_and_answers_plans() {
    use runakefli_clickhouse::ClickHouseBackend;
    use runakefli_model::plan::AnswerData;
    use runakefli_model::{Backend, ScanControl, ScanRequest};
    let b = ClickHouseBackend::open(front::client("backend")).unwrap();
    let t = TenantId::new("t");
    let entry = |ts: i64, line: &str| Entry {
        ts: T0 + ts,
        line: line.into(),
        metadata: vec![],
    };
    let req = PushRequest {
        streams: vec![
            PushStream {
                labels: Labels::parse(API).unwrap(),
                entries: vec![entry(1000, "error one"), entry(2000, "ok two")],
            },
            PushStream {
                labels: Labels::parse(WEB).unwrap(),
                entries: vec![entry(2000, "error b"), entry(2000, "error b2")],
            },
        ],
    };
    b.push(&t, &req).unwrap();
    let (s, e) = (T0, T0 + 10_000);
    let all = [Matcher::new("app", MatchOp::Re, ".+").unwrap()];
    let streams = b.streams(&t, &all, s, e).unwrap();
    assert_eq!(streams.len(), 2);
    assert_eq!(b.label_names(&t, s, e).unwrap(), ["app", "env"]);
    assert_eq!(
        b.label_values(&t, "app", &[], s, e).unwrap(),
        ["api", "web"]
    );
    assert_eq!(b.label_values(&t, "env", &all, s, e).unwrap(), ["prod"]);
    assert!(b.label_names(&TenantId::new("u"), s, e).unwrap().is_empty());

    // A matcher outside the shared RE2 subset (`(?i)` with a class) is checked on the
    // labels: streams, values and scans still select exactly.
    let folded = [Matcher::new("app", MatchOp::Re, "(?i)[W]EB").unwrap()];
    let streams = b.streams(&t, &folded, s, e).unwrap();
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0].labels.to_string(), WEB);
    assert_eq!(b.label_values(&t, "app", &folded, s, e).unwrap(), ["web"]);

    // Each stream's first and last time in a window, aggregated in SQL
    // (one row per stream): API's two entries, WEB's two at one time; a
    // window holding only API's second entry; the `(?i)` matcher.
    let bounds = |m: &[Matcher], s, e| -> Vec<(String, i64, i64)> {
        let mut v: Vec<_> = b
            .stream_bounds(&t, m, s, e, None)
            .unwrap()
            .expect("clickhouse answers stream bounds")
            .into_iter()
            .map(|x| (x.stream.labels.to_string(), x.first - T0, x.last - T0))
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        bounds(&all, s, e),
        [(API.to_string(), 1000, 2000), (WEB.to_string(), 2000, 2000)]
    );
    assert_eq!(
        bounds(&all, T0 + 1001, T0 + 2001),
        [(API.to_string(), 2000, 2000), (WEB.to_string(), 2000, 2000)]
    );
    assert!(bounds(&all, T0 + 1001, T0 + 2000).is_empty());
    assert_eq!(bounds(&folded, s, e), [(WEB.to_string(), 2000, 2000)]);
    assert!(bounds(&all, s, s).is_empty());
    let mut seen = Vec::new();
    let req = ScanRequest::new(t.clone(), folded.to_vec(), s, e, Direction::Forward);
    b.scan(&req, &mut |info, batch| {
        seen.extend(
            batch
                .entries
                .into_iter()
                .map(|en| (info.labels.to_string(), en.line)),
        );
        ScanControl::Continue
    })
    .unwrap();
    assert_eq!(
        seen,
        [
            (WEB.to_string(), "error b".to_string()),
            (WEB.to_string(), "error b2".to_string())
        ]
    );

    let mut got = Vec::new();
    let mut req = ScanRequest::new(t.clone(), all.to_vec(), s, e, Direction::Backward);
    req.required_substrings = vec!["error".into()];
    b.scan(&req, &mut |info, batch| {
        for en in batch.entries {
            got.push((info.labels.to_string(), en.ts - T0, en.line));
        }
        ScanControl::Continue
    })
    .unwrap();
    got.sort_by_key(|r| r.0.clone());
    assert_eq!(
        got,
        [
            row(API, 1000, "error one"),
            row(WEB, 2000, "error b2"),
            row(WEB, 2000, "error b"),
        ]
    );

    let lines_plan = plan(
        "app=~.+",
        vec![filter(LineMatch::Substring, false, &["error"])],
        PlanOutput::Lines {
            limit: 2,
            direction: Direction::Forward,
        },
    );
    let Some(answer) = b.execute(&lines_plan).unwrap() else {
        panic!("lines plan declined")
    };
    // Query statistics from ClickHouse's progress: it read at least the
    // four rows of the window (whole granules, and the tables the query
    // joins), the SQL kept the two it answered.
    let st = answer.stats;
    assert!(
        st.rows_scanned >= 4 && st.bytes_scanned > 0 && st.rows_kept == 2,
        "{st:?}"
    );
    let AnswerData::Lines(rows) = answer.data else {
        panic!("{answer:?}")
    };
    let rows: Vec<_> = rows
        .into_iter()
        .map(|r| (r.stream.labels.to_string(), r.entry.ts - T0, r.entry.line))
        .collect();
    assert_eq!(
        rows,
        [row(API, 1000, "error one"), row(WEB, 2000, "error b")]
    );

    let count = plan(
        "app=~.+",
        vec![],
        PlanOutput::Buckets(BucketPlan {
            bounds: vec![T0, T0 + 1000, T0 + 2000],
            group_by: GroupBy::Stream,
            value: BucketValue::Count,
            top: None,
        }),
    );
    let Some(answer) = b.execute(&count).unwrap() else {
        panic!("bucket plan declined")
    };
    // Kept: the rows in the buckets (API 1 + 1, WEB 0 + 2).
    let st = answer.stats;
    assert!(
        st.rows_scanned >= 4 && st.bytes_scanned > 0 && st.rows_kept == 4,
        "{st:?}"
    );
    let AnswerData::Buckets(groups) = answer.data else {
        panic!("{answer:?}")
    };
    let mut counts: Vec<_> = groups
        .iter()
        .map(|g| match (&g.key, &g.data) {
            (runakefli_model::plan::GroupKey::Stream { labels, .. }, d) => {
                (labels.to_string(), d.rows(0), d.rows(1))
            }
            other => panic!("{other:?}"),
        })
        .collect();
    counts.sort();
    assert_eq!(counts, [(API.to_string(), 1, 1), (WEB.to_string(), 0, 2)]);

    // What the SQL cannot express exactly is declined, for the engine.
    let digits = plan(
        "app=~.+",
        vec![filter(LineMatch::Regex, false, &[r"\d"])],
        PlanOutput::Lines {
            limit: 2,
            direction: Direction::Forward,
        },
    );
    assert!(b.execute(&digits).unwrap().is_none());

    // The SQL share is counted: two scans shipped 4 + 3 rows (the `(?i)`
    // matcher is checked on the labels here, so ClickHouse ships all four rows
    // and two are dropped), two plans answered (2 lines; 3 (stream, bucket)
    // rows), one declined, five stream-bounds queries shipped a row per
    // stream with rows in the window (2, 2, none, 2: the `(?i)` one both
    // streams, one dropped on the labels, none).
    let stats = b.sql_stats();
    assert_eq!(
        stats,
        runakefli_clickhouse::SqlStats {
            plans_answered: 2,
            plans_declined: 1,
            plan_rows: 2 + 3,
            scans: 2,
            scan_rows: 4 + 3,
            bounds_queries: 5,
            bounds_rows: 2 + 2 + 2,
            residual_rows: 0,
            totals_queries: 0,
            totals_rows: 0,
            lines_legs: 1,
            lines_pages: 1,
            metric_legs: 1,
        }
    );
}

/// `SELECT count() FROM logs` (of every tenant) through `c`.
/// A push landing between a query's read of `streams` and its read of the
/// rows: the rows name a stream the catalog has not seen, which reads
/// `streams` again instead of failing the query (a live tail polling while
/// pushes arrive hit this); an id in no push is still corrupt data.
#[test]
fn a_stream_pushed_after_the_catalog_was_read_is_found_on_a_second_read() {
    use runakefli_clickhouse::ClickHouseBackend;
    use runakefli_model::Backend;
    let b = ClickHouseBackend::open(front::client("catalog")).unwrap();
    let t = TenantId::new("t");
    let push_one = |labels: &str| {
        let req = PushRequest {
            streams: vec![PushStream {
                labels: Labels::parse(labels).unwrap(),
                entries: vec![Entry {
                    ts: T0 + 1000,
                    line: "x".into(),
                    metadata: vec![],
                }],
            }],
        };
        b.push(&t, &req).unwrap();
    };
    push_one(r#"{app="a"}"#);
    let (s, e) = (T0, T0 + 10_000);
    let all = [Matcher::new("app", MatchOp::Re, ".+").unwrap()];
    let sel = sql::StreamSelect {
        tenant: &t,
        selector: &all,
        start: s,
        end: e,
    };
    let catalog = b.stream_catalog(sel).unwrap();
    push_one(r#"{app="b"}"#);
    let ids: Vec<StreamId> = b
        .streams(&t, &all, s, e)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids.len(), 2);
    for id in &ids {
        assert_eq!(catalog.kept(*id).unwrap().id, *id);
    }
    let unknown = (0..).find(|id| !ids.contains(id)).unwrap();
    assert!(matches!(catalog.get(unknown), Err(Error::Decode(_))));
    assert_eq!(catalog.into_kept().len(), 2);
}

/// A small deterministic generator (xorshift): `next(n)` is in `0..n`.
fn generator(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    }
}

/// The SQL expression `expr` (over a `String` named `t`) of each of
/// `texts`, in one query: its `toString`, `None` where it is `NULL`.
fn each_text_in_sql<T: AsRef<str>>(c: &Client, expr: &str, texts: &[T]) -> Vec<Option<String>> {
    let list: Vec<String> = texts.iter().map(|t| sql::quote(t.as_ref())).collect();
    let q = format!(
        "SELECT arrayMap(t -> toString({expr}), [{}]) AS v",
        list.join(", ")
    );
    let rows = c.rows(&q, &Request::default()).unwrap();
    let got: Vec<Option<String>> = rows[0]["v"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect();
    assert_eq!(got.len(), texts.len(), "{expr}");
    got
}

fn log_rows(c: &Client) -> u64 {
    let r = c
        .rows("SELECT count() AS n FROM logs", &Request::default())
        .unwrap();
    r[0]["n"].as_u64().unwrap()
}

/// A push of `lines` lines to `{app="api"}`, from `first_ts` (ns after `T0`)
/// one second apart.
fn numbered_push(prefix: &str, lines: usize, first_ts: i64) -> PushRequest {
    PushRequest {
        streams: vec![PushStream {
            labels: Labels::parse(API).unwrap(),
            entries: (0..lines)
                .map(|i| Entry {
                    ts: T0 + first_ts + i as i64 * 1_000_000_000,
                    line: format!("{prefix} {i}"),
                    metadata: vec![],
                })
                .collect(),
        }],
    }
}

/// A plan whose client went away (its cancel flag raised) ends as
/// `Cancelled` — a bucket plan while its answer is read, a lines plan
/// before its next page — and the same plans answer with the flag down.
#[test]
fn cancelled_plans_end_as_cancelled() {
    use runakefli_clickhouse::ClickHouseBackend;
    use runakefli_model::{Backend, BackendError};
    use std::sync::atomic::{AtomicBool, Ordering};
    let b = ClickHouseBackend::open(front::client("cancel")).unwrap();
    b.push(&TenantId::new("t"), &numbered_push("api", 50, 0))
        .unwrap();
    let flag = Arc::new(AtomicBool::new(true));
    let outputs = [
        PlanOutput::Buckets(BucketPlan {
            bounds: vec![T0 - 1, T0 + 25_000_000_000, T0 + 60_000_000_000],
            group_by: GroupBy::Stream,
            value: BucketValue::Count,
            top: None,
        }),
        PlanOutput::Lines {
            limit: 10,
            direction: Direction::Backward,
        },
    ];
    for output in outputs {
        let mut p = plan("app=~.+", vec![], output);
        p.end = T0 + 60_000_000_000;
        p.cancel = Some(flag.clone());
        flag.store(true, Ordering::Relaxed);
        assert!(
            matches!(b.execute(&p), Err(BackendError::Cancelled)),
            "{:?}",
            p.output
        );
        flag.store(false, Ordering::Relaxed);
        assert!(b.execute(&p).unwrap().is_some(), "{:?}", p.output);
    }
}

/// A scan hands rows on in batches of at most 1,024 as they arrive, each
/// stream's consecutive and in order; `NextStream` skips the rest of a
/// stream and `Stop` ends the scan.
#[test]
fn scans_hand_rows_on_in_bounded_batches() {
    use runakefli_clickhouse::ClickHouseBackend;
    use runakefli_model::{Backend, ScanControl, ScanRequest};
    let b = ClickHouseBackend::open(front::client("scan_batches")).unwrap();
    let t = TenantId::new("t");
    let mut req = numbered_push("api", 2_500, 0);
    req.streams.push(PushStream {
        labels: Labels::parse(WEB).unwrap(),
        entries: (0..1_100)
            .map(|i| Entry {
                ts: T0 + i * 1_000_000_000,
                line: format!("web {i}"),
                metadata: vec![],
            })
            .collect(),
    });
    b.push(&t, &req).unwrap();
    let all = vec![Matcher::new("app", MatchOp::Re, ".+").unwrap()];
    let (s, e) = (T0, T0 + 3_000 * 1_000_000_000);
    // Every row, by batches: (stream, batch length, first line, last line).
    let scan = |control: &mut dyn FnMut(&str, usize) -> ScanControl| {
        let mut batches = Vec::new();
        let r = ScanRequest::new(t.clone(), all.clone(), s, e, Direction::Forward);
        b.scan(&r, &mut |info, batch| {
            let app = info.labels.get("app").unwrap().to_string();
            let n = batches.len();
            batches.push((
                app.clone(),
                batch.entries.len(),
                batch.entries[0].line.clone(),
                batch.entries.last().unwrap().line.clone(),
            ));
            control(&app, n)
        })
        .unwrap();
        batches.sort_by_key(|(app, _, first, _)| {
            (
                app.clone(),
                first.split(' ').nth(1).unwrap().parse::<u32>().unwrap(),
            )
        });
        batches
    };
    let b1 = |app: &str, n, first: u32, last: u32| {
        (
            app.to_string(),
            n,
            format!("{app} {first}"),
            format!("{app} {last}"),
        )
    };
    assert_eq!(
        scan(&mut |_, _| ScanControl::Continue),
        [
            b1("api", 1024, 0, 1023),
            b1("api", 1024, 1024, 2047),
            b1("api", 452, 2048, 2499),
            b1("web", 1024, 0, 1023),
            b1("web", 76, 1024, 1099),
        ]
    );
    // The first batch of each stream only.
    let firsts = scan(&mut |_, _| ScanControl::NextStream);
    assert_eq!(firsts, [b1("api", 1024, 0, 1023), b1("web", 1024, 0, 1023)]);
    // Nothing after the first batch.
    let one = scan(&mut |_, _| ScanControl::Stop);
    assert_eq!(one.len(), 1, "{one:?}");
    assert_eq!(one[0].1, 1024);
    assert_eq!(b.sql_stats().scans, 3);
}

#[test]
fn a_push_sent_again_is_stored_once_even_by_another_process() {
    use runakefli_clickhouse::ClickHouseBackend;
    let c = front::client("resend");
    let t = TenantId::new("t");
    // 2023-11-14T22:13:20Z + 6,400 s is midnight: two day partitions,
    // so the insert is two parts, both deduplicated.
    let push = numbered_push("resent", 10, 6_400 * 1_000_000_000 - 5_000_000_000);
    let first = ClickHouseBackend::open(c.clone()).unwrap();
    first.push(&t, &push).unwrap();
    assert_eq!(log_rows(&c), 10);
    let parts = c
        .rows(
            "SELECT uniqExact(toDate(timestamp)) AS days FROM logs",
            &Request::default(),
        )
        .unwrap();
    assert_eq!(parts[0]["days"], 2, "the push spans two days");
    // The same push again, in this process (new seq numbers) and from a
    // backend opened anew (as after a restart of Rúnakefli): nothing more.
    first.push(&t, &push).unwrap();
    let restarted = ClickHouseBackend::open(c.clone()).unwrap();
    restarted.push(&t, &push).unwrap();
    assert_eq!(log_rows(&c), 10);
    let seqs = c
        .rows(
            "SELECT uniqExact(seq) AS n, count() AS rows FROM logs",
            &Request::default(),
        )
        .unwrap();
    assert_eq!(seqs[0]["n"], 10, "rows numbered once: {seqs:?}");
    // Other content (another line, another tenant) is stored.
    restarted.push(&t, &numbered_push("other", 10, 0)).unwrap();
    restarted.push(&TenantId::new("u"), &push).unwrap();
    assert_eq!(log_rows(&c), 30);
    assert_eq!(first.push_retries() + restarted.push_retries(), 0);
}

/// Pushes from many threads at once share inserts (the group commit), and
/// every line is in `logs` exactly once, each push's `seq` range intact.
#[test]
fn concurrent_pushes_share_inserts_and_every_line_is_stored_once() {
    use runakefli_clickhouse::ClickHouseBackend;
    use std::sync::Barrier;
    const THREADS: usize = 8;
    const PUSHES: usize = 12;
    const LINES: usize = 25;
    let c = front::client("group_commit");
    let b = Arc::new(ClickHouseBackend::open(c.clone()).unwrap());
    let start = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (b, start) = (b.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                for p in 0..PUSHES {
                    // Two tenants, and pushes on both sides of midnight.
                    let tenant = TenantId::new(if t % 2 == 0 { "t" } else { "u" });
                    let first = (6_400 - 30 + (t * PUSHES + p) as i64) * 1_000_000_000;
                    let push = numbered_push(&format!("thread {t} push {p}"), LINES, first);
                    b.push(&tenant, &push).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let all = (THREADS * PUSHES * LINES) as u64;
    assert_eq!(log_rows(&c), all);
    let q = |sql: &str| c.rows(sql, &Request::default()).unwrap();
    assert_eq!(
        q("SELECT uniqExact(tenant, line) AS n FROM logs")[0]["n"],
        all
    );
    assert_eq!(q("SELECT uniqExact(seq) AS n FROM logs")[0]["n"], all);
    let s = b.push_stats();
    eprintln!(
        "{} pushes in {} inserts ({} failed), {} retries",
        s.batched_pushes, s.batches, s.failed_batches, s.retries
    );
    assert_eq!(s.batched_pushes, (THREADS * PUSHES) as u64);
    assert_eq!(s.batched_rows, all);
    assert!(
        s.batches < s.batched_pushes,
        "concurrent pushes shared no insert: {s:?}"
    );
    assert_eq!((s.failed_batches, s.refused, s.waiting_pushes), (0, 0, 0));
    // One `streams` row per (tenant, stream, day), however pushes were batched.
    assert_eq!(q("SELECT count() AS n FROM streams FINAL")[0]["n"], 4);
}

/// A batch insert sent twice (the backend's retry after a lost answer)
/// stores its rows once, across two day partitions; a push of the batch
/// sent again alone (a collector re-sending after the batch's 503) is
/// another insert, stored again: the documented limit, which reads collapse.
#[test]
fn a_batch_sent_again_is_stored_once_and_its_pushes_alone_are_other_inserts() {
    use runakefli_clickhouse::insert::encode_batch;
    let c = front::client("batch_resend");
    assert_eq!(schema::ensure(&c).unwrap(), schema::SCHEMA_VERSION);
    let t = TenantId::new("t");
    let midnight = 6_400 * 1_000_000_000;
    let pushes = [
        encode_push(&t, &numbered_push("one", 10, midnight - 5_000_000_000), 1),
        encode_push(&t, &numbered_push("two", 10, midnight - 3_000_000_000), 11),
        encode_push(&TenantId::new("u"), &numbered_push("three", 10, 0), 21),
    ];
    let members: Vec<_> = pushes.iter().collect();
    let insert = |body: &runakefli_clickhouse::insert::InsertBody, stmt: &str| {
        let r = Request {
            settings: vec![("insert_deduplication_token", body.token.clone())],
            ..Request::default()
        };
        c.insert(stmt, &body.data, &r).unwrap();
    };
    for _ in 0..2 {
        let batch = encode_batch(&members);
        insert(&batch.streams, INSERT_STREAMS);
        insert(&batch.logs, INSERT_LOGS);
        assert_eq!(log_rows(&c), 30);
    }
    // The same members numbered anew (another process): still a no-op.
    let renumbered = [
        encode_push(&t, &numbered_push("one", 10, midnight - 5_000_000_000), 100),
        encode_push(&t, &numbered_push("two", 10, midnight - 3_000_000_000), 110),
        encode_push(&TenantId::new("u"), &numbered_push("three", 10, 0), 120),
    ];
    insert(
        &encode_batch(&renumbered.iter().collect::<Vec<_>>()).logs,
        INSERT_LOGS,
    );
    assert_eq!(log_rows(&c), 30);
    // The first push alone: its own token, another insert.
    insert(&pushes[0].logs, INSERT_LOGS);
    assert_eq!(log_rows(&c), 40);
}

/// A TCP relay to the front that can cut the answer of the next insert into
/// `logs` (after ClickHouse wrote it: the front answers only then), or go
/// down (refuse new connections, cut the requests of open ones).
struct LossyRelay {
    url: String,
    cut_logs_answers: Arc<std::sync::atomic::AtomicU32>,
    cut: Arc<std::sync::atomic::AtomicU32>,
    down: Arc<std::sync::atomic::AtomicBool>,
}

impl LossyRelay {
    /// A relay to the front at `front` (`http://HOST:PORT`).
    fn start(front: &str) -> LossyRelay {
        use std::io::{Read, Write};
        use std::net::{Shutdown, TcpListener, TcpStream};
        use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
        let target = front.trim_start_matches("http://").to_string();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let relay = LossyRelay {
            url: format!("http://{}", listener.local_addr().unwrap()),
            cut_logs_answers: Arc::new(AtomicU32::new(0)),
            cut: Arc::new(AtomicU32::new(0)),
            down: Arc::new(AtomicBool::new(false)),
        };
        let (budget, cut, down) = (
            relay.cut_logs_answers.clone(),
            relay.cut.clone(),
            relay.down.clone(),
        );
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(mut client) = client else { continue };
                if down.load(SeqCst) {
                    continue; // dropped: the connection closes unanswered
                }
                let Ok(mut upstream) = TcpStream::connect(&target) else {
                    continue;
                };
                let cut_this = Arc::new(AtomicBool::new(false));
                let (mut up_read, mut client_write) =
                    (upstream.try_clone().unwrap(), client.try_clone().unwrap());
                let (flag, cut) = (cut_this.clone(), cut.clone());
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 64 << 10];
                    while let Ok(n) = up_read.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        if flag.load(SeqCst) {
                            // The insert is written; its answer is lost.
                            cut.fetch_add(1, SeqCst);
                            break;
                        }
                        if client_write.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = client_write.shutdown(Shutdown::Both);
                    let _ = up_read.shutdown(Shutdown::Both);
                });
                let (budget, down) = (budget.clone(), down.clone());
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 64 << 10];
                    while let Ok(n) = client.read(&mut buf) {
                        if n == 0 || down.load(SeqCst) {
                            // Down: kept-alive connections are cut too.
                            let _ = client.shutdown(Shutdown::Both);
                            break;
                        }
                        let text = String::from_utf8_lossy(&buf[..n]);
                        if (text.contains("INTO+logs") || text.contains("INTO%20logs"))
                            && budget
                                .fetch_update(SeqCst, SeqCst, |b| b.checked_sub(1))
                                .is_ok()
                        {
                            cut_this.store(true, SeqCst);
                        }
                        if upstream.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = upstream.shutdown(Shutdown::Write);
                });
            }
        });
        relay
    }
}

#[test]
fn a_retried_insert_whose_answer_was_lost_is_stored_once() {
    use runakefli_clickhouse::{ClickHouseBackend, PushRetry};
    use std::sync::atomic::Ordering::SeqCst;
    use std::time::Duration;
    let direct = front::client("lost_answer");
    let relay = LossyRelay::start(&direct.config().url);
    let via_relay = Client::new(Config::new(
        relay.url.clone(),
        direct.config().database.clone(),
    ));
    let b = ClickHouseBackend::open(via_relay)
        .unwrap()
        .with_push_retry(PushRetry {
            attempts: 3,
            backoff: Duration::from_millis(20),
            budget: Duration::from_secs(10),
        });
    let t = TenantId::new("t");
    // ClickHouse writes the rows, the answer never arrives, the backend
    // retries with the same token: acknowledged, and stored once.
    relay.cut_logs_answers.store(1, SeqCst);
    b.push(&t, &numbered_push("lost", 25, 0)).unwrap();
    assert_eq!(relay.cut.load(SeqCst), 1, "the relay cut one answer");
    assert_eq!(b.push_retries(), 1);
    assert_eq!(log_rows(&direct), 25);

    // ClickHouse gone: tried `attempts` times, then the transport error,
    // which the server answers 503.
    relay.down.store(true, SeqCst);
    let e = b.push(&t, &numbered_push("down", 5, 0)).unwrap_err();
    assert!(matches!(e, Error::Transport(_)), "{e:?}");
    assert!(e.is_retryable());
    assert_eq!(b.push_retries(), 1 + 2);
    relay.down.store(false, SeqCst);

    // A failure a retry cannot mend (the table is gone) is not retried.
    direct.execute("DROP TABLE logs").unwrap();
    let e = b.push(&t, &numbered_push("no table", 5, 0)).unwrap_err();
    assert_eq!(e.code(), Some(60), "{e:?}");
    assert!(!e.is_retryable());
    assert_eq!(b.push_retries(), 3);
}

/// `sql::exact_float` takes a text as a number only where ClickHouse's
/// value is the `f64` the engine reads (Rust's correctly rounded parse, as
/// Go's `ParseFloat`): over thousands of generated decimals (1 to 17
/// integer digits, 0 to 20 fraction digits, trailing zeros, signs, `-0`)
/// and hard cases (halfway points, 17 significant digits, more digits than
/// `f64` holds, the smallest normal), every value it gives reads back bit
/// for bit as the text's, and it gives one for every decimal of at most 15
/// significant digits within `1e-4 ..= 1e15`.
#[test]
fn exact_floats_are_the_engines_floats() {
    let c = front::client("floats");
    schema::ensure(&c).unwrap();
    let mut texts: Vec<String> = [
        "0",
        "-0",
        "0.0",
        "-0.000",
        "0.1",
        "0.10",
        "0.3",
        "1.5",
        "100",
        "1e3",
        "007",
        "9007199254740993",
        "9007199254740992",
        "1.0000000000000002",
        "1.00000000000000002",
        "0.30000000000000004",
        "2.2250738585072014",
        "123456789012345678",
        "4.35",
        "0.000001",
        "3.14159265358979323846264338327950288",
        "1.7976931348623157",
        "5e-324",
        "+1",
        " 1",
        "1.",
        ".5",
        "",
        "abc",
        "12345678901234.5",
        "99999999999999999999999999999.5",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    for _ in 0..4000 {
        let int_len = 1 + next(17);
        let mut t = String::new();
        if next(4) == 0 {
            t.push('-');
        }
        for i in 0..int_len {
            let d = if i == 0 && int_len > 1 {
                1 + next(9)
            } else {
                next(10)
            };
            t.push(char::from(b'0' + d as u8));
        }
        let frac_len = next(21);
        if frac_len > 0 {
            t.push('.');
            for _ in 0..frac_len {
                t.push(char::from(b'0' + next(10) as u8));
            }
            for _ in 0..next(3) {
                t.push('0');
            }
        }
        texts.push(t);
    }
    let got = each_text_in_sql(&c, &sql::exact_float("t"), &texts);
    let mut accepted = 0;
    for (t, v) in texts.iter().zip(&got) {
        let significant = t
            .trim_start_matches('-')
            .replace('.', "")
            .trim_start_matches('0')
            .trim_end_matches('0')
            .len();
        let plain = !t.is_empty()
            && t.trim_start_matches('-')
                .bytes()
                .all(|b| b.is_ascii_digit() || b == b'.')
            && !t.starts_with('.')
            && !t.ends_with('.')
            && !t.trim_start_matches('-').starts_with("00");
        match v.as_deref() {
            Some(printed) => {
                accepted += 1;
                let want: f64 = t.parse().unwrap();
                let have: f64 = printed.parse().unwrap();
                assert_eq!(have.to_bits(), want.to_bits(), "{t} came back as {printed}");
            }
            None => {
                let value: Option<f64> = t.parse().ok();
                let in_range = value.is_some_and(|x| x == 0.0 || (1e-4..=1e15).contains(&x.abs()));
                assert!(
                    !(plain && significant <= 15 && in_range),
                    "{t} ({significant} significant digits) was not taken as a number"
                );
            }
        }
    }
    assert!(accepted > texts.len() / 3, "{accepted} of {}", texts.len());
}

/// `sql::exact_ipv4` gives an address only for a plain dotted quad, and
/// then the address Rust (as Go's `netip`) reads: listed and generated
/// texts (octets past 255, leading zeros, three or five parts, spaces,
/// IPv6) are given exactly when they are canonical quads.
#[test]
fn exact_ipv4_addresses_are_the_engines_addresses() {
    use std::net::Ipv4Addr;
    let c = front::client("ipv4");
    schema::ensure(&c).unwrap();
    let mut texts: Vec<String> = [
        "10.0.0.1",
        "0.0.0.0",
        "255.255.255.255",
        "192.168.1.20",
        "010.0.0.1",
        "1.2.3",
        "1.2.3.4.5",
        "256.1.1.1",
        " 1.2.3.4",
        "1.2.3.4 ",
        "::1",
        "::ffff:1.2.3.4",
        "",
        "a.b.c.d",
        "1..2.3",
        "1.2.3.4/8",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut next = generator(0x1234_5678_9abc_def1u64);
    for _ in 0..2000 {
        let parts = if next(10) == 0 { 3 + next(3) } else { 4 };
        let octets: Vec<String> = (0..parts)
            .map(|_| match next(12) {
                0 => format!("0{}", next(100)),
                1 => (256 + next(50)).to_string(),
                _ => next(256).to_string(),
            })
            .collect();
        texts.push(octets.join("."));
    }
    let got = each_text_in_sql(&c, &sql::exact_ipv4("t"), &texts);
    let mut given = 0;
    for (t, v) in texts.iter().zip(got) {
        let canonical = t.parse::<Ipv4Addr>().ok().filter(|a| a.to_string() == *t);
        let have = v.as_deref().map(|s| s.parse::<u32>().unwrap());
        assert_eq!(have, canonical.map(u32::from), "{t:?}");
        given += usize::from(have.is_some());
    }
    assert!(given > 500, "only {given} addresses decided in SQL");
}

/// `sql::exact_ipv6` gives an address only for a plain IPv6 address (hex
/// groups and at most one `::`, no zone, no IPv4 part), and then the
/// address Rust reads from the whole text (the engine's `ip()` filter reads
/// such a text as one address): listed forms and thousands of generated
/// ones (compressed anywhere, upper case, leading zeros, five-digit and
/// empty groups, a second `::`, too many groups, zones, dotted tails) are
/// given exactly when Rust reads them, but `::` alone (the engine finds no
/// address in it).
#[test]
fn exact_ipv6_addresses_are_the_engines_addresses() {
    use std::net::Ipv6Addr;
    let c = front::client("ipv6");
    schema::ensure(&c).unwrap();
    let mut texts: Vec<String> = [
        "::1",
        "::",
        "2001:db8::1",
        "2001:DB8::1",
        "2001:0db8:0000:0000:0000:0000:0000:0001",
        "1:2:3:4:5:6:7:8",
        "1:2:3:4:5:6:7::",
        "::2:3:4:5:6:7:8",
        "1::8",
        "1:2:3:4:5:6:7:8:9",
        "1::2::3",
        "12345::1",
        ":1:2:3:4:5:6:7",
        "1:2:3:4:5:6:7:",
        "1:::2",
        "fe80::1%eth0",
        "::ffff:1.2.3.4",
        "1.2.3.4",
        "",
        " ::1",
        "::1 ",
        "g::1",
        "[::1]",
        "::1/128",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut next = generator(0x0fed_cba9_8765_4321u64);
    for _ in 0..3000 {
        let groups = 1 + next(9) as usize;
        let mut parts: Vec<String> = (0..groups)
            .map(|_| match next(14) {
                0 => String::new(),
                1 => format!("{:05x}", next(0x10_0000)),
                2 => format!("{:04X}", next(0x1_0000)),
                3 => format!("{:04x}", next(0x100)),
                _ => format!("{:x}", next(0x1_0000)),
            })
            .collect();
        // A `::` (an empty group) somewhere, sometimes two.
        for _ in 0..next(3) {
            let at = next(parts.len() as u64 + 1) as usize;
            parts.insert(at, String::new());
        }
        let mut t = parts.join(":");
        if t.starts_with(':') && !t.starts_with("::") {
            t.insert(0, ':');
        }
        if t.ends_with(':') && !t.ends_with("::") {
            t.push(':');
        }
        match next(25) {
            0 => t.push_str("%eth0"),
            1 => t.push_str(":1.2.3.4"),
            _ => {}
        }
        texts.push(t);
    }
    for _ in 0..500 {
        // Canonical forms (Rust's printing), IPv4-mapped ones among them.
        let a = (u128::from(next(1 << 32)) << 96) | u128::from(next(1 << 16));
        texts.push(Ipv6Addr::from(a).to_string());
    }
    let got = each_text_in_sql(&c, &format!("hex({})", sql::exact_ipv6("t")), &texts);
    let mut given = 0;
    for (t, v) in texts.iter().zip(got) {
        let plain = t.bytes().all(|b| b.is_ascii_hexdigit() || b == b':') && t != "::";
        let rust = t.parse::<Ipv6Addr>().ok().filter(|_| plain);
        let have = v
            .as_deref()
            .filter(|h| !h.is_empty())
            .map(|h| u128::from_str_radix(h, 16).unwrap());
        assert_eq!(have, rust.map(u128::from), "{t:?}");
        given += usize::from(have.is_some());
    }
    assert!(given > 1000, "only {given} addresses decided in SQL");
}

/// `sql::exact_bytes` gives a size's bytes only where they are the
/// engine's (`parse_humanized_bytes`, go-humanize's `ParseBytes`): listed
/// forms in every unit and case are decided, the rest (spaces, `,`, signs,
/// unknown units, past 2^53) are left to the engine, and over thousands of
/// generated sizes every value given is the engine's.
#[test]
fn exact_byte_sizes_are_the_engines_sizes() {
    use runakefli_logql::humanize::parse_humanized_bytes;
    let c = front::client("sizes");
    schema::ensure(&c).unwrap();
    let decided = [
        "512", "512b", "512B", "10kB", "10KB", "10k", "1.5KiB", "3MiB", "3mib", "2.5GB", "1gi",
        "7TB", "1.25TiB", "2PB", "1pib", "0", "0.5", "0.3kB", "1.1MB",
    ];
    let left = [
        "",
        " 10kB",
        "10 kB",
        "10kB ",
        "1,024",
        "-5",
        "+5",
        "10 parsecs",
        "kB",
        "1e3",
        "007",
        "1.",
        ".5kB",
        "8EB",
        "10PB",
        "2EiB",
        "10kBs",
        "10ｋB",
    ];
    let units = [
        "", "b", "B", "k", "kB", "KB", "ki", "KiB", "m", "MB", "mi", "MiB", "g", "GB", "gi", "GiB",
        "t", "TB", "ti", "TiB", "p", "PB", "pi", "PiB",
    ];
    let mut generated: Vec<String> = Vec::new();
    let mut next = generator(0x2545_f491_4f6c_dd1du64);
    for _ in 0..4000 {
        let mut t = (1 + next(9)).to_string();
        for _ in 0..next(6) {
            t.push(char::from(b'0' + next(10) as u8));
        }
        let frac = next(5);
        if frac > 0 {
            t.push('.');
            for _ in 0..frac {
                t.push(char::from(b'0' + next(10) as u8));
            }
        }
        t.push_str(units[next(units.len() as u64) as usize]);
        generated.push(t);
    }
    let texts: Vec<&str> = decided
        .iter()
        .chain(left.iter())
        .copied()
        .chain(generated.iter().map(String::as_str))
        .collect();
    let got = each_text_in_sql(&c, &sql::exact_bytes("t"), &texts);
    let got: Vec<Option<u64>> = got
        .iter()
        .map(|v| v.as_deref().map(|s| s.parse().unwrap()))
        .collect();
    let mut given = 0;
    for (t, have) in texts.iter().zip(&got) {
        if let Some(b) = have {
            given += 1;
            assert_eq!(Ok(*b), parse_humanized_bytes(t), "{t:?}");
        }
    }
    for (t, have) in decided.iter().zip(&got) {
        assert!(have.is_some(), "{t:?} left to the engine");
    }
    for (t, have) in left.iter().zip(&got[decided.len()..]) {
        assert!(have.is_none(), "{t:?} decided in SQL");
    }
    assert!(given > 3000, "only {given} sizes decided in SQL");
}

/// `sql::exact_duration_ns` gives a duration's nanoseconds only where the
/// engine's reading (the number as `f64` times the unit's nanoseconds,
/// rounded) is that whole number: the listed texts give exactly the
/// listed values or nothing (the engine decides those), and over thousands
/// of generated `<decimal><unit>` texts every value given is the `f64`
/// product, whole and within 2^53.
#[test]
fn exact_durations_are_the_engines_durations() {
    let c = front::client("durations");
    schema::ensure(&c).unwrap();
    let listed: &[(&str, Option<i64>)] = &[
        ("5ms", Some(5_000_000)),
        ("1.5s", Some(1_500_000_000)),
        ("1.2s", Some(1_200_000_000)),
        ("0.1s", Some(100_000_000)),
        ("0.3ms", Some(300_000)),
        ("250us", Some(250_000)),
        ("3µs", Some(3_000)),
        ("7μs", Some(7_000)),
        ("10ns", Some(10)),
        ("2m", Some(120_000_000_000)),
        ("1h", Some(3_600_000_000_000)),
        ("2500h", Some(9_000_000_000_000_000)),
        ("0ms", Some(0)),
        ("2502h", None),
        ("0.5ns", None),
        ("1.0000001ns", None),
        ("1m30s", None),
        ("-5ms", None),
        ("+5ms", None),
        ("0", None),
        ("5", None),
        ("", None),
        ("abc", None),
        ("007ms", None),
        ("1.ms", None),
        (".5s", None),
        ("1e3ms", None),
        ("5 ms", None),
        ("5MS", None),
        ("5ms ", None),
        ("5d", None),
    ];
    let units: [(&str, f64); 8] = [
        ("ns", 1.0),
        ("us", 1e3),
        ("µs", 1e3),
        ("μs", 1e3),
        ("ms", 1e6),
        ("s", 1e9),
        ("m", 60e9),
        ("h", 3600e9),
    ];
    let mut generated: Vec<(String, f64)> = Vec::new();
    let mut next = generator(0x9e37_79b9_7f4a_7c15u64);
    for _ in 0..4000 {
        let mut t = (1 + next(9)).to_string();
        for _ in 0..next(8) {
            t.push(char::from(b'0' + next(10) as u8));
        }
        let frac = next(7);
        if frac > 0 {
            t.push('.');
            for _ in 0..frac {
                t.push(char::from(b'0' + next(10) as u8));
            }
        }
        let (unit, mult) = units[next(8) as usize];
        let product = t.parse::<f64>().unwrap() * mult;
        generated.push((format!("{t}{unit}"), product));
    }
    let texts: Vec<&str> = listed
        .iter()
        .map(|(t, _)| *t)
        .chain(generated.iter().map(|(t, _)| t.as_str()))
        .collect();
    let got = each_text_in_sql(&c, &sql::exact_duration_ns("t"), &texts);
    let got: Vec<Option<i64>> = got
        .iter()
        .map(|v| v.as_deref().map(|s| s.parse().unwrap()))
        .collect();
    for ((t, want), have) in listed.iter().zip(&got) {
        assert_eq!(have, want, "{t:?}");
    }
    let mut given = 0;
    for ((t, product), have) in generated.iter().zip(&got[listed.len()..]) {
        let whole = product.fract() == 0.0 && *product <= 9_007_199_254_740_992.0;
        match have {
            Some(ns) => {
                given += 1;
                assert!(whole, "{t}: {ns} for {product}");
                assert_eq!(*ns as f64, *product, "{t}");
            }
            None => assert!(!whole, "{t}: {product} not given"),
        }
    }
    assert!(given > 1000, "only {given} durations decided in SQL");
}

/// A lines plan read by legs (whole UTC days) and keyset pages gives the
/// one-read answer (`sql::lines_query`), for every page size down to one
/// row and a byte budget below one row, both directions, limits below and
/// above a day's rows: rows exactly at a day's start in two streams (a tie
/// across streams at a leg edge), an exact duplicate pushed again, and two
/// different rows of one stream with the same time *and* push order (two
/// writers' `seq`s colliding: the one key pages could split, kept together
/// by `WITH TIES`). Reading stops once the limit is held: one leg and one
/// read when the first leg has the rows.
#[test]
fn lines_plans_read_by_legs_and_pages_give_the_one_read_answer() {
    use runakefli_clickhouse::{ClickHouseBackend, LinesPaging};
    use runakefli_model::plan::AnswerData;
    use runakefli_model::Backend;
    const DAY: i64 = 86_400_000_000_000;
    // `push` adds T0; `edge` is the offset of the day start after T0.
    let edge = (T0 / DAY + 1) * DAY - T0;
    let c = front::client("legs");
    let b = ClickHouseBackend::open(c.clone()).unwrap();
    let mut api: Vec<TestEntry<'_>> = Vec::new();
    let mut web: Vec<TestEntry<'_>> = Vec::new();
    let texts: Vec<String> = (0..40).map(|i| format!("line {i}")).collect();
    for d in 0..4 {
        for i in 0..5 {
            let ts = edge + d * DAY + DAY / 4 + i * 1000;
            api.push((ts, texts[(d * 10 + i) as usize].as_str(), &[]));
            web.push((ts + 1, texts[(d * 10 + i + 5) as usize].as_str(), &[]));
        }
        // At the day's start, in both streams.
        api.push((edge + d * DAY, "api at the edge", &[]));
        web.push((edge + d * DAY, "web at the edge", &[]));
    }
    push(&c, "t", &[(API, api), (WEB, web)]);
    // Pushed again: an exact duplicate (collapsed), and a different line
    // with the same time and the same `seq` (this helper numbers every push
    // from 1) as `line 0`.
    push(
        &c,
        "t",
        &[(
            API,
            vec![
                (edge + DAY / 4, "line 0 twin", &[]),
                (edge, "api at the edge", &[]),
            ],
        )],
    );
    let whole = |p: &QueryPlan| -> Vec<(String, i64, String)> { lines(&c, p) };
    let legs = |b: &ClickHouseBackend, p: &QueryPlan| -> Vec<(String, i64, String)> {
        let answer = b.execute(p).unwrap().expect("lines plan answered");
        let AnswerData::Lines(rows) = answer.data else {
            panic!("{answer:?}")
        };
        rows.into_iter()
            .map(|r| (r.stream.labels.to_string(), r.entry.ts - T0, r.entry.line))
            .collect()
    };
    let pagings = [
        LinesPaging::default(),
        LinesPaging {
            rows: 1,
            bytes: 1 << 20,
        },
        LinesPaging {
            rows: 2,
            bytes: 1 << 20,
        },
        LinesPaging {
            rows: 7,
            bytes: 1 << 20,
        },
        LinesPaging {
            rows: 1000,
            bytes: 4,
        },
    ];
    let backends: Vec<ClickHouseBackend> = pagings
        .iter()
        .map(|&p| {
            ClickHouseBackend::open(c.clone())
                .unwrap()
                .with_lines_paging(p)
        })
        .collect();
    let ranges = [
        (T0, T0 + edge + 4 * DAY),
        (T0 + edge, T0 + edge + 2 * DAY),
        (T0 + edge - 1, T0 + edge + 1),
        (T0 + edge + DAY / 4, T0 + edge + 2 * DAY + 1),
    ];
    let mut checked = 0;
    for (start, end) in ranges {
        for limit in [1, 3, 13, 100] {
            for direction in [Direction::Backward, Direction::Forward] {
                let mut p = plan("app=~.+", vec![], PlanOutput::Lines { limit, direction });
                (p.start, p.end) = (start, end);
                let one = whole(&p);
                for (bk, paging) in backends.iter().zip(&pagings) {
                    let got = legs(bk, &p);
                    // The twins tie on the whole key: either order is the
                    // answer order, in one read as in pages.
                    let key = |v: &[(String, i64, String)]| -> Vec<(String, i64)> {
                        v.iter().map(|r| (r.0.clone(), r.1)).collect()
                    };
                    assert_eq!(key(&got), key(&one), "{paging:?} {limit} {direction:?}");
                    // Unless the limit cuts between the twins (either may
                    // be the one kept), the same rows.
                    let twins = |v: &[(String, i64, String)]| {
                        v.iter().filter(|r| r.2.starts_with("line 0")).count()
                    };
                    if twins(&one) != 1 {
                        let (mut g, mut o) = (got.clone(), one.clone());
                        g.sort();
                        o.sort();
                        assert_eq!(g, o, "{paging:?} [{start}, {end}) {limit} {direction:?}");
                    }
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, ranges.len() * 4 * 2 * pagings.len());
    // Early stop: backward over the four days and a bit, the newest leg
    // (the last day, 12 rows) holds a limit of 3: one leg, one read.
    let mut p = plan(
        "app=~.+",
        vec![],
        PlanOutput::Lines {
            limit: 3,
            direction: Direction::Backward,
        },
    );
    (p.start, p.end) = (T0, T0 + edge + 4 * DAY);
    let before = b.sql_stats();
    assert_eq!(legs(&b, &p).len(), 3);
    let after = b.sql_stats();
    assert_eq!(
        (
            after.lines_legs - before.lines_legs,
            after.lines_pages - before.lines_pages,
            after.plan_rows - before.plan_rows
        ),
        (1, 1, 3)
    );
    // With one-row pages: the twins come in one page, the page after the
    // pair starts past both.
    let one_row = &backends[1];
    p.output = PlanOutput::Lines {
        limit: 100,
        direction: Direction::Forward,
    };
    let before = one_row.sql_stats();
    let got = legs(one_row, &p);
    let after = one_row.sql_stats();
    let rows = got.len() as u64;
    assert_eq!(rows, 49, "{got:?}");
    // One read per row but one for the twins, plus the empty read ending
    // each leg: the part of day 0 before the first edge (empty), then,
    // nothing found yet, the rest at once.
    assert_eq!(after.lines_legs - before.lines_legs, 2);
    assert_eq!(after.lines_pages - before.lines_pages, rows - 1 + 2);
}

/// Not a check: what legs and pages change, on seven days of 40,000 rows
/// each in eight streams (`cargo test -p runakefli-clickhouse --test chdb
/// -- --ignored --nocapture lines_legs_measurement`). Prints, per query, the
/// time of the one-read query and of the legs, and the legs' reads.
#[test]
#[ignore]
fn lines_legs_measurement() {
    use runakefli_clickhouse::ClickHouseBackend;
    use runakefli_model::Backend;
    use std::time::Instant;
    const DAY: i64 = 86_400_000_000_000;
    let d0 = T0 / DAY * DAY;
    let c = front::client("legs_measure");
    let b = ClickHouseBackend::open(c.clone()).unwrap();
    let t = TenantId::new("t");
    let per_day = 40_000i64;
    for k in 0..7 {
        let streams = (0..8)
            .map(|s| PushStream {
                labels: Labels::parse(&format!(r#"{{app="a{s}"}}"#)).unwrap(),
                entries: (0..per_day / 8)
                    .map(|i| Entry {
                        ts: d0 + k * DAY + (i * 8 + s) * (DAY / per_day),
                        line: if i % 5000 == 7 {
                            format!("rare event {k} {s} {i} level=error")
                        } else {
                            format!(
                                "GET /api/v1/items/{i} status=200 took={}ms stream={s}",
                                i % 97
                            )
                        },
                        metadata: vec![],
                    })
                    .collect(),
            })
            .collect();
        b.push(&t, &PushRequest { streams }).unwrap();
    }
    let queries: [(&str, Vec<LineFilter>, usize, Direction); 5] = [
        ("app=~a.*", vec![], 100, Direction::Backward),
        ("app=~a.*", vec![], 100, Direction::Forward),
        ("app=~a.*", vec![], 5000, Direction::Backward),
        (
            "app=~a.*",
            vec![filter(LineMatch::Substring, false, &["rare"])],
            100,
            Direction::Backward,
        ),
        (
            "app=~a.*",
            vec![filter(LineMatch::Substring, false, &["status=200"])],
            1000,
            Direction::Backward,
        ),
    ];
    for (sel, filters, limit, direction) in queries {
        let desc = format!(
            "{sel} {:?} limit {limit} {direction:?}",
            filters.first().map(|f| f.values.clone())
        );
        let mut p = plan(sel, filters, PlanOutput::Lines { limit, direction });
        (p.start, p.end) = (d0, d0 + 7 * DAY);
        let (mut one, mut legs) = (Vec::new(), Vec::new());
        let mut reads = (0, 0, 0);
        for _ in 0..3 {
            let q = sql::lines_query(&p, &Default::default()).unwrap();
            let t0 = Instant::now();
            let body = c
                .query(
                    &q,
                    &Request {
                        format: Some("JSONEachRow"),
                        ..Request::default()
                    },
                )
                .unwrap();
            one.push((t0.elapsed().as_secs_f64() * 1000.0, body.len()));
            let before = b.sql_stats();
            let t0 = Instant::now();
            b.execute(&p).unwrap().unwrap();
            legs.push(t0.elapsed().as_secs_f64() * 1000.0);
            let after = b.sql_stats();
            reads = (
                after.lines_legs - before.lines_legs,
                after.lines_pages - before.lines_pages,
                after.plan_rows - before.plan_rows,
            );
        }
        let best = |v: &[f64]| v.iter().cloned().fold(f64::MAX, f64::min);
        eprintln!(
            "{desc}: one read {:.0} ms ({} bytes); legs {:.0} ms, {} legs, {} reads, {} rows",
            best(&one.iter().map(|x| x.0).collect::<Vec<_>>()),
            one[0].1,
            best(&legs),
            reads.0,
            reads.1,
            reads.2
        );
    }
}
