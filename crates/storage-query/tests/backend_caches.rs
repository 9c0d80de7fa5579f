//! Each `EmbeddedBackend` owns its caches, sized by the `QueryConfig` it was
//! built with: two backends over one store (or two stores in one process)
//! share nothing, a backend with zero budgets keeps nothing, and the answers
//! are the same with caches or without.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use runakefli_model::plan::{PlanOutput, QueryPlan};
use runakefli_model::{
    Backend, Direction, Entry, Labels, MatchOp, Matcher, PushRequest, PushStream, TenantId,
};
use runakefli_storage::{Storage, StorageConfig};
use runakefli_storage_query::{CacheStats, EmbeddedBackend, QueryConfig};

const T0: i64 = 1_795_910_400_000_000_000;

fn lines_plan() -> QueryPlan {
    QueryPlan {
        tenant: TenantId::new("t"),
        selector: vec![Matcher::new("app", MatchOp::Eq, "a").unwrap()],
        start: T0 - 1,
        end: T0 + 1_000_000_000_000,
        line_filters: vec![],
        fields: None,
        output: PlanOutput::Lines {
            limit: 20,
            direction: Direction::Backward,
        },
        deadline: None,
        cancel: None,
    }
}

#[test]
fn backends_own_their_caches_and_answer_alike() {
    let d = tempfile::tempdir().unwrap();
    let mut c = StorageConfig::new(d.path());
    c.background = false;
    c.flush_columnar = true;
    let storage = Storage::open(c).unwrap();
    let entries = (0..300)
        .map(|i| Entry {
            ts: T0 + i * 1_000,
            line: format!(r#"{{"level":"info","n":{i},"msg":"request {i} done"}}"#),
            metadata: vec![],
        })
        .collect();
    let req = PushRequest {
        streams: vec![PushStream {
            labels: Labels::new(vec![("app".into(), "a".into())]),
            entries,
        }],
    };
    storage.append(&TenantId::new("t"), &req).unwrap();
    storage.flush().unwrap();

    let cached = EmbeddedBackend::new(storage.clone(), &QueryConfig::default());
    let off = EmbeddedBackend::new(
        storage.clone(),
        &QueryConfig {
            answer_cache_bytes: 0,
            decoded_cache_bytes: 0,
        },
    );
    let plan = lines_plan();
    let first = cached.execute(&plan).unwrap().expect("answered");
    let again = cached.execute(&plan).unwrap().expect("answered");
    let uncached = off.execute(&plan).unwrap().expect("answered");
    assert_eq!(format!("{:?}", first.data), format!("{:?}", again.data));
    assert_eq!(format!("{:?}", first.data), format!("{:?}", uncached.data));
    assert!(
        cached.cache_stats().answer_bytes > 0,
        "answer rows kept: {:?}",
        cached.cache_stats()
    );
    assert_eq!(
        off.cache_stats(),
        CacheStats::default(),
        "zero budgets keep nothing"
    );
    let fresh = EmbeddedBackend::new(storage, &QueryConfig::default());
    assert_eq!(
        fresh.cache_stats(),
        CacheStats::default(),
        "a new backend starts empty: nothing is process-wide"
    );
}
