//! The embedded store against the engine's in-memory reference backend
//! (`MemBackend`, which implements none of the store's pruning): line
//! filters, regexp filters, `| json` with parameters, `rate` and log queries
//! with a limit must give the same answers whether or not the store prunes
//! blocks by bloom, drops rows by the column prefilter, stops scans at the
//! shared time cutoff or answers from columns.
//!
//! Data: generated workload data (JSON) and the recorded conformance data
//! (JSON, logfmt, plain, nested objects, escapes, invalid JSON). Store
//! states: memtable only, row-wise flushed parts, columnar flushed parts,
//! merged parts.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod answer_cmp;
mod store_states;

use answer_cmp::{compare_queries, Side};
use runakefli_engine::testing::MemBackend;
use runakefli_model::{PushRequest, TenantId};
use runakefli_storage_query::EmbeddedBackend;
use std::sync::Arc;
use store_states::{conformance_pushes, open_store, time_range, workload_pushes, State, STATES};

fn reference(pushes: &[PushRequest]) -> Arc<MemBackend> {
    let b = Arc::new(MemBackend::new());
    for p in pushes {
        b.push(&TenantId::default_tenant(), p);
    }
    b
}

/// Values of JSON member `key` in the data, for needles that really occur.
fn member_values(pushes: &[PushRequest], key: &str, n: usize) -> Vec<String> {
    let pat = format!("\"{key}\":\"");
    let mut out = Vec::new();
    for e in pushes
        .iter()
        .flat_map(|p| p.streams.iter())
        .flat_map(|s| s.entries.iter())
        .step_by(97)
    {
        if let Some(i) = e.line.find(&pat) {
            let rest = &e.line[i + pat.len()..];
            if let Some(j) = rest.find('"') {
                out.push(rest[..j].to_string());
            }
        }
        if out.len() == n {
            break;
        }
    }
    out
}

/// Runs every query on the store and on the reference; panics on a
/// difference. Returns how many of the store's answers held data.
fn compare(
    store: Arc<EmbeddedBackend>,
    reference: Arc<MemBackend>,
    queries: &[String],
    range: (i64, i64),
    state: State,
) -> usize {
    compare_queries(
        &Side::new("store", store),
        &Side::new("reference", reference),
        queries,
        range,
        300 * 1_000_000_000,
        &format!("{state:?}"),
    )
}

fn run_all(pushes: &[PushRequest], queries: &[String], range: (i64, i64)) {
    let reference = reference(pushes);
    for state in STATES {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(dir.path(), state, pushes, 5);
        let nonempty = compare(store, reference.clone(), queries, range, state);
        assert!(
            nonempty * 2 >= queries.len(),
            "{state:?}: most queries found nothing ({nonempty} of {})",
            queries.len()
        );
    }
}

#[test]
fn workload_line_filters_and_json_params_match_the_reference() {
    let end = 1_800_000_000_000_000_000;
    let pushes = workload_pushes(11, 40, end, 8);
    let (lo, hi) = time_range(&pushes);
    let mut needles: Vec<String> = vec![
        "timeout".into(),
        "connection timeout".into(),
        "completed".into(),
        r#""level":"error""#.into(),
        r#""status":5"#.into(),
        r#"error","msg":""#.into(),
        "\",\"".into(),
        "GET".into(),
        ".ec2.internal\",\"pod_ip".into(),
        "-4".into(),
        "T0".into(),
        "nowhere-to-be-found".into(),
        // Digits inside messages (columns stored as skeletons).
        "timeout after 1".into(),
        "0ms".into(),
        "larger than 1".into(),
        "queue 3".into(),
    ];
    needles.extend(member_values(&pushes, "msg", 6));
    needles.extend(member_values(&pushes, "trace_id", 2));
    needles.extend(member_values(&pushes, "user_id", 2));
    needles.extend(member_values(&pushes, "request_id", 1));
    needles.extend(
        member_values(&pushes, "span_id", 1)
            .into_iter()
            .map(|s| s[3..11].to_string()),
    );
    // Ids in packed-hex columns, judged on their packed digits
    // (`BlockEval::hex_verdicts`): quoted (the value equal), upper-cased,
    // a digit longer (no value holds it), and their first digits (left to
    // the values' text).
    for id in member_values(&pushes, "trace_id", 1)
        .into_iter()
        .chain(member_values(&pushes, "request_id", 1))
    {
        needles.push(format!("\"{id}\""));
        needles.push(id.to_uppercase());
        needles.push(format!("{id}0"));
        needles.push(format!("\"{}", &id[..10]));
    }
    let mut queries: Vec<String> = Vec::new();
    for n in &needles {
        let lit = format!("`{n}`");
        queries.push(format!("{{app=~\".+\"}} |= {lit}"));
        queries.push(format!(
            "sum by (app) (count_over_time({{app=~\".+\"}} |= {lit} [10m]))"
        ));
    }
    queries.extend(
        [
            r#"{namespace=~".+"} |~ `"msg":"[^"]*request`"#,
            r#"{namespace=~".+"} |~ `time.ut`"#,
            r#"{namespace=~".+"} |= "timeout" |= "connection""#,
            r#"{namespace=~".+"} |= "timeout" != "connection""#,
            r#"{namespace=~".+"} |= "error" | json | level="error""#,
            r#"{app=~".+"} |= "completed" | json | status >= 500 | line_format "{{.status}}""#,
            r#"sum by (level) (count_over_time({namespace=~".+"} | json level="level" [10m]))"#,
            r#"sum by (lvl, st) (count_over_time({namespace=~".+"} | json lvl="level", st="status" | st >= 400 [10m]))"#,
            r#"sum by (app) (rate({app=~".+"} | json | status >= 500 [10m]))"#,
            r#"sum(rate({app=~".+"} | json | level="error" [5m]))"#,
            r#"sum by (app) (count_over_time({app=~".+"} | json app="msg" [10m]))"#,
            r#"sum by (c) (count_over_time({app=~".+"} | json c="cache_hit", t="trace_id" | t!="" [10m]))"#,
            r#"sum(count_over_time({namespace=~".+"} |~ `"msg":"[^"]*request` [10m]))"#,
            r#"{namespace=~".+"} |~ `"msg":"[^"]*after [0-9]+5ms`"#,
            r#"{namespace=~".+"} |~ `"msg":"[^"]*queue 1`"#,
            r#"sum(count_over_time({namespace=~".+"} |~ `"msg":"[a-z ]*[0-9]{3} KiB` [10m]))"#,
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    run_all(&pushes, &queries, (lo + 120_000_000_000, hi + 1));
}

#[test]
fn conformance_line_filters_and_json_params_match_the_reference() {
    let pushes = conformance_pushes();
    let (lo, hi) = time_range(&pushes);
    let queries: Vec<String> = [
        r#"{app=~".+"} |= "error""#,
        r#"{app=~".+"} |= "refund issued""#,
        r#"{app=~".+"} |= `"level":"error"`"#,
        r#"{app=~".+"} |= "=\"""#,
        r#"{app=~".+"} |= "Müller""#,
        r#"{app=~".+"} |= "\\""#,
        r#"{app=~".+"} |~ "INV-[0-9]+5 ""#,
        r#"{app=~".+"} |~ `level=(error|warn)`"#,
        r#"{app=~".+"} |~ `"msg":"[^"]*(err|time)`"#,
        r#"{app=~".+"} !~ `"level":"[^"]*o`"#,
        r#"sum by (app) (count_over_time({app=~".+"} |~ `"msg":"[a-z ]*ed` [10m]))"#,
        r#"sum(bytes_over_time({app=~".+"} |= "error" [10m]))"#,
        r#"{app=~".+"} |= "method" |= "GET""#,
        r#"sum by (app) (count_over_time({app=~".+"} |= "error" [10m]))"#,
        r#"sum by (level) (count_over_time({app=~".+"} | json level="level" [10m]))"#,
        r#"sum by (r) (count_over_time({app=~".+"} | json r="request" [10m]))"#,
        r#"sum by (m) (count_over_time({app=~".+"} | json m="method", s="status" | s >= 400 [10m]))"#,
        r#"sum by (app) (rate({app=~".+"} | json | status >= 400 [10m]))"#,
        r#"sum by (app) (rate({app=~".+"} | json | __error__="" [10m]))"#,
        r#"sum(count_over_time({app=~".+"} | json t="tags" [10m]))"#,
        // Stages that drop no line after the line filters: lines plans of
        // the line filters, the pipeline run on the rows returned.
        r#"{app=~".+"} | json | logfmt | drop __error__, __error_details__"#,
        r#"{app=~".+"} |= "error" | logfmt | line_format "{{.level}} {{.msg}}""#,
        r#"{app=~".+"} != "GET" | json | label_format l="{{.level}}" | keep l, app"#,
        // Logs Drilldown's dropped error labels, lines that are not JSON
        // objects and values that do not convert among the rows.
        r#"sum by (level) (count_over_time({app=~".+"} | json | drop __error__, __error_details__ [10m]))"#,
        r#"sum by (status) (count_over_time({app=~".+"} | json | drop __error__, __error_details__ | status!="" [10m]))"#,
        r#"sum by (app) (count_over_time({app=~".+"} | json | drop __error__ | status >= 400 [10m]))"#,
        r#"sum(count_over_time({app=~".+"} | json | drop __error__, __error_details__ | level="error" [10m]))"#,
        // Error drops with no parser (Drilldown's level volume): grouped by
        // labels, a plan without fields; per series, the engine's.
        r#"sum by (app) (count_over_time({app=~".+"} | drop __error__ [10m]))"#,
        r#"sum by (level, app) (count_over_time({app=~".+"} |= "e" | drop __error__, __error_details__ [10m]))"#,
        r#"count_over_time({app=~".+"} | drop __error__ [10m])"#,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    run_all(&pushes, &queries, (lo + 600_000_000_000, hi + 1));
}

/// String values that start with a digit may still hold a quote: a column
/// mixing them with numbers must not be judged free of quotes.
#[test]
fn quoted_values_starting_with_digits_keep_their_quotes() {
    use runakefli_model::{Entry, Labels, PushStream};
    let end = 1_800_000_000_000_000_000i64;
    let mut streams = Vec::new();
    for s in 0..4 {
        let labels = Labels::parse(&format!(r#"{{app="a{s}", namespace="n"}}"#)).unwrap();
        let entries = (0..600)
            .map(|i| {
                let size = match i % 3 {
                    0 => format!("{i}"),
                    1 => format!(r#""{i}\" x {s}""#),
                    _ => format!(r#""{i} cm""#),
                };
                Entry {
                    ts: end - 3_600_000_000_000 + i as i64 * 1_000_000_000 + s as i64,
                    line: format!(r#"{{"level":"info","size":{size},"n":{i}}}"#),
                    metadata: Vec::new(),
                }
            })
            .collect();
        streams.push(PushStream { labels, entries });
    }
    let pushes = vec![PushRequest { streams }];
    let (lo, hi) = time_range(&pushes);
    let queries: Vec<String> = [
        r#"{namespace="n"} |= `7\" x`"#,
        r#"{namespace="n"} |= `\" x 2"`"#,
        r#"sum(count_over_time({namespace="n"} |= `\"` [10m]))"#,
        r#"sum(count_over_time({namespace="n"} |= `1 cm"` [10m]))"#,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    run_all(&pushes, &queries, (lo, hi + 1));
}
