//! Log queries: the `limit` rows first in the direction's time order.
//!
//! Units are taken in order of their newest row (backward; oldest row
//! forward) from a shared cursor by every worker. Each worker keeps its best
//! rows; once it holds `limit` of them, the worst one's timestamp becomes the
//! shared [`TimeCutoff`]: rows past it cannot make the answer, so units that
//! lie wholly past it are skipped — and since units come in order of their
//! best row, the first such unit ends the scan. Within a unit only the rows
//! before the cutoff are filtered and only those that may make the answer
//! are rebuilt.

use super::block::{BlockEval, TemplateCache};
use super::rows::filtered_rows;
use super::units::{Unit, UnitData};
use super::{on_workers, Context};
use crate::block::BlockReader;
use crate::StorageError;
use runakefli_model::plan::{AnswerData, LineRow, PlanAnswer, PlanStats};
use runakefli_model::{Direction, Entry, TimeCutoff};
use std::cmp::Ordering;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

/// A row that may make the answer.
struct Candidate {
    ts: i64,
    stream: usize,
    /// Position among the unit's rows, ascending in answer order.
    seq: i64,
    row: RowRef,
}

/// Where a candidate's line is.
enum RowRef {
    /// Read already (rows of non-columnar units).
    Entry(Entry),
    /// Row `row` of the columnar block of unit `unit`, rebuilt only if the
    /// row makes the answer.
    Block { unit: usize, row: usize },
}

fn answer_order(ctx: &Context<'_>, dir: Direction, a: &Candidate, b: &Candidate) -> Ordering {
    let t = match dir {
        Direction::Forward => a.ts.cmp(&b.ts),
        Direction::Backward => b.ts.cmp(&a.ts),
    };
    t.then_with(|| ctx.order(a.stream).cmp(ctx.order(b.stream)))
        .then(a.seq.cmp(&b.seq))
}

/// One worker's best rows.
struct Collector<'c, 'p> {
    ctx: &'c Context<'p>,
    limit: usize,
    dir: Direction,
    cutoff: &'c TimeCutoff,
    rows: Vec<Candidate>,
    stats: PlanStats,
}

impl Collector<'_, '_> {
    fn push(&mut self, c: Candidate) {
        self.rows.push(c);
        if self.rows.len() >= (2 * self.limit).max(64) {
            self.prune();
        }
    }

    fn prune(&mut self) {
        let (ctx, dir) = (self.ctx, self.dir);
        self.rows.sort_by(|a, b| answer_order(ctx, dir, a, b));
        self.rows.truncate(self.limit);
        if self.rows.len() == self.limit {
            if let Some(worst) = self.rows.last() {
                self.cutoff.tighten(worst.ts);
            }
        }
    }
}

/// Runs a lines plan over `units`.
pub fn run(
    ctx: &Context<'_>,
    mut units: Vec<Unit>,
    limit: usize,
    dir: Direction,
) -> Result<PlanAnswer, StorageError> {
    if limit == 0 {
        return Ok(PlanAnswer {
            data: AnswerData::Lines(Vec::new()),
            ..PlanAnswer::default()
        });
    }
    match dir {
        Direction::Backward => units.sort_by(|a, b| b.max_ts.cmp(&a.max_ts)),
        Direction::Forward => units.sort_by(|a, b| a.min_ts.cmp(&b.min_ts)),
    }
    let cutoff = TimeCutoff::new(dir);
    let next = AtomicUsize::new(0);
    let results = on_workers(|| -> Result<(Vec<Candidate>, PlanStats), StorageError> {
        let mut col = Collector {
            ctx,
            limit,
            dir,
            cutoff: &cutoff,
            rows: Vec::new(),
            stats: PlanStats::default(),
        };
        let mut cache = TemplateCache::default();
        loop {
            let i = next.fetch_add(1, AtomicOrdering::Relaxed);
            let Some(u) = units.get(i) else { break };
            let best = match dir {
                Direction::Backward => u.max_ts,
                Direction::Forward => u.min_ts,
            };
            if cutoff.excludes(best) {
                break;
            }
            ctx.check_deadline()?;
            run_unit(ctx, i, u, &mut col, &mut cache)?;
        }
        col.prune();
        Ok((col.rows, col.stats))
    });
    let mut all = Vec::new();
    let mut stats = PlanStats::default();
    for r in results {
        let (rows, st) = r?;
        all.extend(rows);
        stats.rows_scanned += st.rows_scanned;
        stats.bytes_scanned += st.bytes_scanned;
        stats.rows_kept += st.rows_kept;
        stats.rows_from_columns += st.rows_from_columns;
    }
    all.sort_by(|a, b| answer_order(ctx, dir, a, b));
    all.truncate(limit);
    // Rebuild the answer's block rows, block by block.
    let mut by_unit: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for c in &all {
        if let RowRef::Block { unit, row } = c.row {
            by_unit.entry(unit).or_default().push(row);
        }
    }
    let mut rebuilt: std::collections::HashMap<(usize, usize), Entry> = Default::default();
    for (unit, rows) in by_unit {
        let UnitData::Columnar { part, block } = &units[unit].data else {
            continue;
        };
        let r = BlockReader::open(part.block_self_checked(block)?)?;
        let mut want = vec![false; r.rows()];
        for &i in &rows {
            want[i] = true;
        }
        let lines = r.lines_where(&want)?;
        let metadata = r.metadata()?;
        let ts = r.timestamps();
        for (i, line) in lines.into_iter().enumerate() {
            if let Some(line) = line {
                rebuilt.insert(
                    (unit, i),
                    Entry {
                        ts: ts[i],
                        line,
                        metadata: metadata[i].clone(),
                    },
                );
            }
        }
    }
    let mut rows = Vec::with_capacity(all.len());
    for c in all {
        let entry = match c.row {
            RowRef::Entry(e) => e,
            RowRef::Block { unit, row } => rebuilt
                .remove(&(unit, row))
                .ok_or_else(|| StorageError::corrupt("block", "answer row not rebuilt"))?,
        };
        rows.push(LineRow {
            stream: ctx.streams[c.stream].clone(),
            entry,
        });
    }
    Ok(PlanAnswer {
        data: AnswerData::Lines(rows),
        residual: Vec::new(),
        stats,
    })
}

fn run_unit(
    ctx: &Context<'_>,
    index: usize,
    u: &Unit,
    col: &mut Collector<'_, '_>,
    cache: &mut TemplateCache,
) -> Result<(), StorageError> {
    let (lo, hi) = col.cutoff.narrow(ctx.q.lo, ctx.q.hi);
    if lo > hi {
        return Ok(());
    }
    let UnitData::Columnar { part, block } = &u.data else {
        let rows = filtered_rows(ctx, u, lo, hi, &mut col.stats)?;
        let n = rows.len() as i64;
        let mut taken = 0usize;
        let ordered: Box<dyn Iterator<Item = (usize, Entry)>> = match col.dir {
            Direction::Forward => Box::new(rows.into_iter().enumerate()),
            Direction::Backward => Box::new(rows.into_iter().enumerate().rev()),
        };
        for (i, e) in ordered {
            if taken >= col.limit || col.cutoff.excludes(e.ts) {
                break;
            }
            taken += 1;
            col.stats.rows_kept += 1;
            let seq = match col.dir {
                Direction::Forward => i as i64,
                Direction::Backward => n - i as i64,
            };
            col.push(Candidate {
                ts: e.ts,
                stream: u.stream,
                seq,
                row: RowRef::Entry(e),
            });
        }
        return Ok(());
    };
    let Some(header) = super::block::header_if_may_match(&ctx.q, part, block)? else {
        return Ok(());
    };
    let r = BlockReader::with_header(part.block_self_checked(block)?, header)?;
    let Some(mut ev) = BlockEval::open(&r, &ctx.q, cache, lo, hi)? else {
        return Ok(());
    };
    let rows = ev.rows();
    let mut keep = vec![false; rows];
    keep[ev.first..ev.end].iter_mut().for_each(|k| *k = true);
    col.stats.rows_scanned += (ev.end - ev.first) as u64;
    col.stats.bytes_scanned += ev.range_line_bytes_estimate();
    let mut lines: Vec<Option<String>> = Vec::new();
    ev.line_filters(&ctx.q, &mut keep, &mut lines)?;
    // The rows that may make the answer, in answer order.
    let ts = r.timestamps();
    let order: Box<dyn Iterator<Item = usize>> = match col.dir {
        Direction::Forward => Box::new(ev.first..ev.end),
        Direction::Backward => Box::new((ev.first..ev.end).rev()),
    };
    let mut taken = 0usize;
    for i in order {
        if !keep[i] {
            continue;
        }
        if taken >= col.limit || col.cutoff.excludes(ts[i]) {
            break;
        }
        taken += 1;
        col.stats.rows_kept += 1;
        col.stats.rows_from_columns += 1;
        let seq = match col.dir {
            Direction::Forward => i as i64,
            Direction::Backward => -(i as i64),
        };
        col.push(Candidate {
            ts: ts[i],
            stream: u.stream,
            seq,
            row: RowRef::Block {
                unit: index,
                row: i,
            },
        });
    }
    Ok(())
}
