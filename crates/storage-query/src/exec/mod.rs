//! [`Backend::execute`](runakefli_model::Backend::execute) for
//! [`EmbeddedBackend`]: query plans run against the blocks and memtables of
//! one [`Snapshot`](runakefli_storage::Snapshot).
//!
//! The plan's streams and time range give a set of independent units
//! (`units.rs`: one per columnar block, plus row units for memtables, old
//! blocks and streams whose sources overlap). Units run on the caller's
//! thread pool (the engine's query pool), each worker with its own cache of
//! what the query derived from a template. Line filters are decided exactly
//! on columnar blocks from templates and column values (`block.rs`,
//! `needle.rs`); lines are rebuilt only for rows that are returned or that a
//! regexp must see. Log queries take the units newest first (oldest first
//! forward) and stop once the `limit` best rows are certain (`lines.rs`);
//! bucket plans count rows into per-group time buckets (`buckets.rs`).
//!
//! The store declines plans with a fields stage whose output is lines
//! (parsers in log queries run in the engine).

mod agg;
pub(crate) mod answer_cache;
mod block;
mod buckets;
pub(crate) mod decoded_cache;
mod entry_marks;
mod fields;
mod lines;
mod needle;
mod query;
mod row_mask;
mod rows;
mod stream_labels;
mod units;

use crate::EmbeddedBackend;
use query::CompiledQuery;
use runakefli_model::plan::{PlanAnswer, PlanOutput, QueryPlan};
use runakefli_model::StreamInfo;
use runakefli_storage::StorageError;
use units::Unit;

/// What every unit of one plan sees.
pub(crate) struct Context<'p> {
    /// The compiled plan.
    pub q: CompiledQuery<'p>,
    /// The plan's streams.
    pub streams: Vec<StreamInfo>,
    /// Each stream's labels as text (ties in log answers are broken by
    /// it), made when first needed.
    orders: Vec<std::sync::OnceLock<String>>,
    /// Each stream's label names, hashed (where `| json` adds `_extracted`
    /// depends on them; kept in the stream index).
    name_sigs: Vec<u64>,
    /// Each stream's values of the labels the plan reads
    /// ([`query::LabelUse::labels`]).
    pub stream_labels: stream_labels::StreamLabels,
    /// A block was found damaged and reported while the plan ran.
    damaged: std::sync::atomic::AtomicBool,
    /// Bytes of residual rows the plan holds (all workers).
    residual_bytes: std::sync::atomic::AtomicUsize,
    /// The plan grew past a bound ([`Context::over_bounds`]): the engine's
    /// scan evaluates the query instead.
    declined: std::sync::atomic::AtomicBool,
    /// Rows of columnar blocks whose decoded forms this plan may still add
    /// to the decoded cache ([`Context::admit_block`]).
    admit_rows: std::sync::atomic::AtomicU64,
    /// The backend's cache of rows rebuilt for answers.
    pub answers: &'p answer_cache::AnswerCache,
    /// The backend's cache of decoded block columns.
    pub decoded: &'p decoded_cache::DecodedCache,
}

impl Context<'_> {
    /// Whether what a block of `rows` rows decodes may enter the decoded
    /// cache: the plan's first blocks may, until they add up to what half
    /// the cache's budget holds ([`decoded_cache::DecodedCache::admission_rows`]). A scan
    /// over everything then keeps the same first blocks at every run (its
    /// repeats read them back) and never churns more than half the cache.
    pub fn admit_block(&self, rows: u64) -> bool {
        use std::sync::atomic::Ordering;
        self.admit_rows
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(rows)
            })
            .is_ok()
    }

    /// `err` from reading unit `u`: when it is damage in a columnar block that
    /// the part could report (log line, metric, quarantine), notes it so the
    /// plan is declined and the engine's scan answers without the block.
    pub(crate) fn unit_failed(&self, u: &units::Unit, err: StorageError) -> StorageError {
        let units::UnitData::Columnar { part, block } = &u.data else {
            return err;
        };
        let text = err.to_string();
        match part.report_damaged_block(block, err) {
            Ok(()) => {
                self.damaged
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                StorageError::corrupt("block", text)
            }
            Err(e) => e,
        }
    }

    /// Stream `i`'s labels as text.
    pub fn order(&self, i: usize) -> &str {
        self.orders[i].get_or_init(|| self.streams[i].labels.to_string())
    }

    /// Stream `i`'s label names, hashed.
    pub fn name_sig(&self, i: usize) -> u64 {
        self.name_sigs[i]
    }

    /// Counts residual rows handed back whole.
    pub fn note_residual(&self, rows: &[runakefli_model::Entry]) {
        let bytes: usize = rows.iter().map(|e| e.heap_bytes() + 48).sum();
        self.residual_bytes
            .fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    /// Fails (and marks the plan declined) once its residual rows or one
    /// worker's `groups` pass their bounds
    /// ([`crate::limits::PLAN_RESIDUAL_MAX_BYTES`],
    /// [`crate::limits::PLAN_MAX_GROUPS`]).
    pub fn over_bounds(&self, groups: usize) -> Result<(), StorageError> {
        use std::sync::atomic::Ordering::Relaxed;
        if self.residual_bytes.load(Relaxed) > crate::limits::PLAN_RESIDUAL_MAX_BYTES
            || groups > crate::limits::PLAN_MAX_GROUPS
        {
            self.declined.store(true, Relaxed);
            return Err(StorageError::Cancelled);
        }
        Ok(())
    }

    /// Fails once the plan's deadline has passed or its cancel flag (the
    /// client went away) is raised.
    pub fn check_deadline(&self) -> Result<(), StorageError> {
        if let Some(c) = &self.q.plan.cancel {
            if c.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(StorageError::Cancelled);
            }
        }
        match self.q.plan.deadline {
            Some(d) if std::time::Instant::now() > d => Err(StorageError::Cancelled),
            _ => Ok(()),
        }
    }
}

impl EmbeddedBackend {
    /// Runs `plan`; `Ok(None)` when the store leaves the plan to the engine.
    pub(crate) fn execute_plan(
        &self,
        plan: &QueryPlan,
    ) -> Result<Option<PlanAnswer>, StorageError> {
        if matches!(plan.output, PlanOutput::Lines { .. }) && plan.fields.is_some() {
            return Ok(None);
        }
        // `| logfmt` stages and label filters with no parser are the
        // engine's here (its own paths read them). A dropped `__error__`
        // / `__error_details__` changes nothing in this store's answers:
        // every row that could carry an error label (a line `| json` does
        // not read as an object, a filter's value that does not convert) is
        // residual, and the engine runs its whole pipeline, the drop
        // included.
        if plan.fields.as_ref().is_some_and(|f| {
            matches!(
                f.parser,
                runakefli_model::plan::JsonParser::Logfmt { .. }
                    | runakefli_model::plan::JsonParser::Base
            )
        }) {
            return Ok(None);
        }
        if let PlanOutput::Buckets(b) = &plan.output {
            let unwrap = plan.fields.as_ref().is_some_and(|f| f.unwrap.is_some());
            if b.value.needs_unwrap() != unwrap || b.bounds.len() < 2 {
                return Ok(None);
            }
        }
        let Some(q) = CompiledQuery::new(plan) else {
            return Ok(Some(empty_answer(plan)));
        };
        let (lo, hi) = (q.lo, q.hi);
        let Some(snap) = self.storage.snapshot(&plan.tenant, lo, hi) else {
            return Ok(Some(empty_answer(plan)));
        };
        let (parts, memtables) = (snap.parts(), snap.memtables());
        let (matching, stream_labels) = {
            let index = snap.index();
            let matching = index.matching_unsorted(&plan.selector, lo, hi);
            let sids: Vec<_> = matching.iter().map(|(id, _, _)| *id).collect();
            let table = stream_labels::StreamLabels::build(
                &q.labels.labels,
                &sids,
                index.len(),
                |n| index.postings_of(n),
                |i| &matching[i].1,
            );
            (matching, table)
        };
        // Delete requests: plans do not filter deleted rows, so a plan that
        // could see one is declined and the engine falls back to the scan,
        // which drops them (backend.rs, column_scan.rs).
        {
            let deletes = snap.deletes();
            if !deletes.is_empty()
                && matching
                    .iter()
                    .any(|(_, l, _)| deletes.iter().any(|d| d.touches(l, lo, hi)))
            {
                return Ok(None);
            }
        }
        let mut streams = Vec::with_capacity(matching.len());
        let mut orders = Vec::with_capacity(matching.len());
        let mut name_sigs = Vec::with_capacity(matching.len());
        let mut units: Vec<Unit> = Vec::new();
        for (i, (id, labels, sig)) in matching.into_iter().enumerate() {
            let info = StreamInfo { id, labels };
            units::stream_units(
                i,
                &info,
                &plan.tenant,
                parts,
                memtables,
                (lo, hi),
                &mut units,
            );
            orders.push(std::sync::OnceLock::new());
            name_sigs.push(sig);
            streams.push(info);
        }
        let ctx = Context {
            admit_rows: self.decoded.admission_rows().into(),
            answers: &self.answers,
            decoded: &self.decoded,
            q,
            streams,
            orders,
            name_sigs,
            stream_labels,
            damaged: std::sync::atomic::AtomicBool::new(false),
            residual_bytes: Default::default(),
            declined: Default::default(),
        };
        let answer = match &plan.output {
            PlanOutput::Lines { limit, direction } => lines::run(&ctx, units, *limit, *direction),
            PlanOutput::Buckets(b) => buckets::run(&ctx, units, b),
        };
        match answer {
            // A damaged block was reported: the scan path skips it (and so
            // do later plans), so the answer leaves out exactly that block.
            Err(_) if ctx.damaged.load(std::sync::atomic::Ordering::Relaxed) => Ok(None),
            // Too large to hold whole: left to the engine's scan.
            Err(_) if ctx.declined.load(std::sync::atomic::Ordering::Relaxed) => Ok(None),
            a => a.map(Some),
        }
    }
}

fn empty_answer(plan: &QueryPlan) -> PlanAnswer {
    PlanAnswer {
        data: match plan.output {
            PlanOutput::Lines { .. } => runakefli_model::plan::AnswerData::Lines(Vec::new()),
            PlanOutput::Buckets(_) => runakefli_model::plan::AnswerData::Buckets(Vec::new()),
        },
        ..PlanAnswer::default()
    }
}

/// Runs `f` on every worker of the current thread pool (the engine's query
/// pool when called from it) and returns their results.
pub(crate) fn on_workers<R: Send>(f: impl Fn() -> R + Sync + Send) -> Vec<R> {
    use rayon::prelude::*;
    let n = rayon::current_num_threads().max(1);
    (0..n).into_par_iter().map(|_| f()).collect()
}
