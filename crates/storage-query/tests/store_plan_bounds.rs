//! The store's bucket plans stop or step aside instead of holding memory:
//! a plan whose cancel flag is raised fails with `Cancelled`; a plan whose
//! groups pass `PLAN_MAX_GROUPS` or whose residual rows pass
//! `PLAN_RESIDUAL_MAX_BYTES` is declined (`Ok(None)`, the engine's scan then
//! answers), while the same plan under the bound answers exactly.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use runakefli_model::plan::{
    AnswerData, BucketPlan, BucketValue, FieldStage, GroupBy, JsonParser, PlanOutput, QueryPlan,
};
use runakefli_model::{Backend, BackendError, Entry, Labels, PushRequest, PushStream, TenantId};
use runakefli_model::{MatchOp, Matcher};
use runakefli_storage::StorageConfig;
use runakefli_storage_query::limits::{PLAN_MAX_GROUPS, PLAN_RESIDUAL_MAX_BYTES};
use runakefli_storage_query::EmbeddedBackend;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

const T0: i64 = 1_795_910_400_000_000_000;

fn open(dir: &Path) -> Arc<EmbeddedBackend> {
    let mut c = StorageConfig::new(dir);
    c.background = false;
    // Everything stays in the memtable, whose rows plans hand back as residual.
    c.memtable_flush_bytes = 1 << 30;
    EmbeddedBackend::open(c).unwrap()
}

/// Appends `n` rows to stream `{app="a"}` starting at row `from`, row `i`
/// with line `line(i)` and metadata `metadata(i)`.
fn push(
    s: &EmbeddedBackend,
    from: usize,
    n: usize,
    line: impl Fn(usize) -> String,
    metadata: impl Fn(usize) -> Vec<(String, String)>,
) {
    let entries = (from..from + n)
        .map(|i| Entry {
            ts: T0 + i as i64 * 1_000,
            line: line(i),
            metadata: metadata(i),
        })
        .collect();
    let req = PushRequest {
        streams: vec![PushStream {
            labels: Labels::new(vec![("app".into(), "a".into())]),
            entries,
        }],
    };
    s.storage().append(&TenantId::new("t"), &req).unwrap();
}

/// `count_over_time({app="a"} [..])` in one bucket covering every row, one
/// group per stream and metadata; `fields` adds `| json`.
fn count_plan(fields: bool) -> QueryPlan {
    QueryPlan {
        tenant: TenantId::new("t"),
        selector: vec![Matcher::new("app", MatchOp::Eq, "a").unwrap()],
        start: T0 - 1,
        end: T0 + 1_000_000_000_000,
        line_filters: vec![],
        fields: fields.then(|| FieldStage {
            parser: JsonParser::All,
            filters: vec![],
            unwrap: None,
            drop_errors: false,
        }),
        output: PlanOutput::Buckets(BucketPlan {
            bounds: vec![T0 - 1, T0 + 1_000_000_000_000],
            group_by: GroupBy::Stream,
            value: BucketValue::Count,
            top: None,
        }),
        deadline: None,
        cancel: None,
    }
}

fn groups_of(s: &EmbeddedBackend, plan: &QueryPlan) -> Option<usize> {
    let a = s.execute(plan).expect("no failure")?;
    match a.data {
        AnswerData::Buckets(g) => Some(g.len()),
        AnswerData::Lines(_) => panic!("buckets expected"),
    }
}

#[test]
fn a_plan_whose_cancel_flag_is_raised_stops() {
    let d = tempfile::tempdir().unwrap();
    let s = open(d.path());
    push(&s, 0, 1_000, |i| format!("line {i}"), |_| vec![]);
    let mut plan = count_plan(false);
    assert_eq!(groups_of(&s, &plan), Some(1), "answered without a flag");
    plan.cancel = Some(Arc::new(AtomicBool::new(false)));
    assert_eq!(
        groups_of(&s, &plan),
        Some(1),
        "answered with a lowered flag"
    );
    plan.cancel = Some(Arc::new(AtomicBool::new(true)));
    assert!(matches!(s.execute(&plan), Err(BackendError::Cancelled)));
}

#[test]
fn a_plan_past_the_group_bound_is_declined_and_under_it_answers() {
    let d = tempfile::tempdir().unwrap();
    let s = open(d.path());
    let meta = |i: usize| vec![("req".to_string(), format!("r{i}"))];
    // One group per row (distinct metadata): just under the bound, answered.
    let under = PLAN_MAX_GROUPS - 10;
    push(&s, 0, under, |i| format!("l{i}"), meta);
    let plan = count_plan(false);
    assert_eq!(groups_of(&s, &plan), Some(under), "one group per row");
    // Past it: declined for the engine's scan, not answered in part.
    push(&s, under, 20, |i| format!("l{i}"), meta);
    assert_eq!(groups_of(&s, &plan), None, "declined past the bound");
}

#[test]
fn a_plan_past_the_residual_bound_is_declined_and_under_it_answers() {
    let d = tempfile::tempdir().unwrap();
    let s = open(d.path());
    // `| json` rows of the memtable are handed back whole (residual).
    let pad = "x".repeat(4_000);
    let line = |i: usize| format!(r#"{{"i":{i},"pad":"{pad}"}}"#);
    push(&s, 0, 1_000, line, |_| vec![]);
    let plan = count_plan(true);
    let a = s.execute(&plan).unwrap().expect("answered under the bound");
    let rows: usize = a.residual.iter().map(|r| r.entries.len()).sum();
    assert_eq!(rows, 1_000, "every row handed back once");
    // Enough rows for more than the bound (each row counts at least its line).
    let more = PLAN_RESIDUAL_MAX_BYTES / 4_000 + 1;
    push(&s, 1_000, more, line, |_| vec![]);
    assert!(
        s.execute(&plan).unwrap().is_none(),
        "declined past {PLAN_RESIDUAL_MAX_BYTES} bytes of residual rows"
    );
}
