//! Store states and data sets shared by the equivalence tests: the same
//! pushes held in a memtable, row-wise flushed parts, columnar flushed parts
//! or merged parts.

#![allow(dead_code)]

use runakefli_bench::generator::{Generator, GeneratorConfig};
use runakefli_engine::testing::MemBackend;
use runakefli_model::{Entry, PushRequest, PushStream, TenantId};
use runakefli_storage::StorageConfig;
use runakefli_storage_query::EmbeddedBackend;
use std::path::Path;
use std::sync::Arc;

/// Where the store keeps the data.
#[derive(Clone, Copy, Debug)]
pub enum State {
    Memtable,
    FlushedRaw,
    FlushedColumnar,
    Merged,
}

/// Every state.
pub const STATES: [State; 4] = [
    State::Memtable,
    State::FlushedRaw,
    State::FlushedColumnar,
    State::Merged,
];

/// A store holding `pushes` in `state`; flushed states cut a part after every
/// `every`-th push (the merged state cuts once, halfway, so that one merged
/// part holds everything even when pushes overlap in time).
pub fn open_store(
    dir: &Path,
    state: State,
    pushes: &[PushRequest],
    every: usize,
) -> Arc<EmbeddedBackend> {
    let mut cfg = StorageConfig::new(dir);
    cfg.background = false;
    cfg.wal_fsync = false;
    cfg.flush_columnar = matches!(state, State::FlushedColumnar);
    let store = EmbeddedBackend::open(cfg).expect("open store");
    let tenant = TenantId::default_tenant();
    for (i, p) in pushes.iter().enumerate() {
        store.storage().append(&tenant, p).expect("append");
        let cut = match state {
            State::Memtable => false,
            State::Merged => i + 1 == pushes.len() / 2,
            _ => i % every == every - 1,
        };
        if cut {
            store.storage().flush().expect("flush");
        }
    }
    if !matches!(state, State::Memtable) {
        store.storage().flush().expect("flush");
    }
    if matches!(state, State::Merged) {
        store.storage().merge_now(true).expect("merge");
    }
    store
}

/// The recorded conformance data (testdata/conformance/data).
pub fn conformance_pushes() -> Vec<PushRequest> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/conformance/data");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("conformance data at {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no conformance data in {}",
        dir.display()
    );
    files
        .iter()
        .map(|f| MemBackend::parse_push_json(&std::fs::read(f).unwrap()).unwrap())
        .collect()
}

/// `batches` pushes of 1,000 generated workload lines over the hour ending at `end_ns`.
pub fn workload_pushes(seed: u64, streams: usize, end_ns: i64, batches: usize) -> Vec<PushRequest> {
    let cfg = GeneratorConfig::ending_at(
        seed,
        streams,
        (batches * 1000) as u64,
        end_ns,
        GeneratorConfig::HOUR_NS,
    );
    let mut g = Generator::new(cfg).expect("generator");
    let mut out = Vec::new();
    for _ in 0..batches {
        let mut streams: Vec<PushStream> = Vec::new();
        for l in g.fill_batch(1000) {
            streams.push(PushStream {
                labels: g.stream_labels(l.stream).clone(),
                entries: vec![Entry {
                    ts: l.ts,
                    line: l.line,
                    metadata: Vec::new(),
                }],
            });
        }
        out.push(PushRequest { streams });
    }
    out
}

/// Smallest and largest timestamp of the pushes.
pub fn time_range(pushes: &[PushRequest]) -> (i64, i64) {
    pushes
        .iter()
        .flat_map(|p| p.streams.iter())
        .flat_map(|s| s.entries.iter())
        .fold((i64::MAX, i64::MIN), |(a, b), e| (a.min(e.ts), b.max(e.ts)))
}
