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
use runakefli_model::plan::{AnswerData, LineRow, PlanAnswer, PlanStats};
use runakefli_model::{Direction, Entry, TimeCutoff};
use runakefli_storage::StorageError;
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

/// A candidate keyed for the worst-first heap: larger is worse. Ties in
/// time are broken by the streams' label text, worked out only when two
/// candidates share a timestamp (rare: formatting every candidate
/// stream's labels cost ~8 % of a common-needle log query's instructions).
struct Ranked<'c, 'p> {
    /// The timestamp in answer order (negated when reading backward).
    t: i64,
    ctx: &'c Context<'p>,
    c: Candidate,
}

impl PartialEq for Ranked<'_, '_> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Ranked<'_, '_> {}
impl PartialOrd for Ranked<'_, '_> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ranked<'_, '_> {
    fn cmp(&self, o: &Self) -> Ordering {
        self.t
            .cmp(&o.t)
            .then_with(|| self.ctx.order(self.c.stream).cmp(o.ctx.order(o.c.stream)))
            .then(self.c.seq.cmp(&o.c.seq))
    }
}

/// One worker's best rows: a heap of at most `limit`, worst on top. Once
/// full, the worst one's timestamp is the shared cutoff, tightened with
/// every better row that comes.
struct Collector<'c, 'p> {
    ctx: &'c Context<'p>,
    limit: usize,
    dir: Direction,
    cutoff: &'c TimeCutoff,
    heap: std::collections::BinaryHeap<Ranked<'c, 'p>>,
    stats: PlanStats,
}

impl Collector<'_, '_> {
    fn push(&mut self, c: Candidate) {
        let t = match self.dir {
            Direction::Forward => c.ts,
            Direction::Backward => -c.ts,
        };
        let r = Ranked {
            t,
            ctx: self.ctx,
            c,
        };
        if self.heap.len() == self.limit {
            match self.heap.peek() {
                Some(worst) if r < *worst => {
                    self.heap.pop();
                }
                _ => return,
            }
        }
        self.heap.push(r);
        if self.heap.len() == self.limit {
            if let Some(worst) = self.heap.peek() {
                self.cutoff.tighten(worst.c.ts);
            }
        }
    }

    fn into_rows(self) -> Vec<Candidate> {
        self.heap.into_iter().map(|r| r.c).collect()
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
    // Units are taken newest first (backward) or oldest first (forward),
    // ties in their listed order. `sort_by_cached_key` sorts (key, number)
    // pairs and then moves each unit once: moving ~5,000 units of ~80
    // bytes through a comparison sort cost ~3 M instructions of a
    // rare-needle query's first run, and reading units through sorted
    // numbers instead cost a cache miss per unit at 10M lines.
    // (`!t` orders as `t` reversed, with no overflow.)
    units.sort_by_cached_key(|u| match dir {
        Direction::Backward => !u.max_ts,
        Direction::Forward => u.min_ts,
    });
    let cutoff = TimeCutoff::new(dir);
    let next = AtomicUsize::new(0);
    let results = on_workers(|| -> Result<(Vec<Candidate>, PlanStats), StorageError> {
        let mut col = Collector {
            ctx,
            limit,
            dir,
            cutoff: &cutoff,
            heap: std::collections::BinaryHeap::with_capacity(limit + 1),
            stats: PlanStats::default(),
        };
        let mut cache = TemplateCache::default();
        let mut bufs = RowBuffers::default();
        // Each unit gives at most `limit` rows (a lower cap makes more
        // units rebuild lines for regexps before the cutoff settles: worse).
        let cap = limit;
        let mut unfinished: Vec<(usize, usize, i64)> = Vec::new();
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
            if let Some((taken, next_ts)) = run_unit(
                ctx,
                i,
                u,
                &mut col,
                &mut cache,
                &mut bufs,
                Pass { skip: 0, cap },
            )
            .map_err(|e| ctx.unit_failed(u, e))?
            {
                unfinished.push((i, taken, next_ts));
            }
        }
        for (i, taken, next_ts) in unfinished {
            if cutoff.excludes(next_ts) {
                continue;
            }
            ctx.check_deadline()?;
            let pass = Pass {
                skip: taken,
                cap: limit,
            };
            run_unit(ctx, i, &units[i], &mut col, &mut cache, &mut bufs, pass)
                .map_err(|e| ctx.unit_failed(&units[i], e))?;
        }
        let stats = col.stats;
        Ok((col.into_rows(), stats))
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
    // Blocks are reopened in parallel: each costs its frames' decompression.
    let by_unit: Vec<(usize, Vec<usize>)> = by_unit.into_iter().collect();
    let rebuilt_units: Vec<Result<Vec<(usize, Entry)>, StorageError>> = {
        use rayon::prelude::*;
        by_unit
            .par_iter()
            .map(|(unit, rows)| {
                let UnitData::Columnar { part, block } = &units[*unit].data else {
                    return Ok(Vec::new());
                };
                rebuild_rows(ctx.answers, part, block, rows)
                    .map_err(|e| ctx.unit_failed(&units[*unit], e))
            })
            .collect()
    };
    let mut rebuilt: std::collections::HashMap<(usize, usize), Entry> = Default::default();
    for ((unit, _), entries) in by_unit.iter().zip(rebuilt_units) {
        for (i, e) in entries? {
            rebuilt.insert((*unit, i), e);
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

/// Rows `rows` of a columnar block, rebuilt (or kept in `answers`): (row,
/// entry).
fn rebuild_rows(
    answers: &super::answer_cache::AnswerCache,
    part: &runakefli_storage::part::Part,
    block: &runakefli_storage::part::BlockRef,
    rows: &[usize],
) -> Result<Vec<(usize, Entry)>, StorageError> {
    let mut out = answers.get(part.serial(), block.index, rows);
    if out.len() == rows.len() {
        return Ok(out);
    }
    let r = part.reader(block)?;
    let mut want = vec![false; r.rows()];
    for &i in rows {
        want[i] = true;
    }
    for (i, _) in &out {
        want[*i] = false;
    }
    let lines = r.lines_where(&want)?;
    let metadata = r.metadata()?;
    let ts = r.timestamps();
    let rebuilt: Vec<(usize, Entry)> = lines
        .into_iter()
        .enumerate()
        .filter_map(|(i, line)| {
            Some((
                i,
                Entry {
                    ts: ts[i],
                    line: line?,
                    metadata: metadata.row(i).to_vec(),
                },
            ))
        })
        .collect();
    answers.put(part.serial(), block.index, &rebuilt);
    out.extend(rebuilt);
    Ok(out)
}

/// A worker's row buffers, reused from unit to unit.
#[derive(Default)]
struct RowBuffers {
    /// Rows the line filters keep.
    keep: Vec<bool>,
    /// Kept rows in the order the query takes them.
    order: Vec<usize>,
}

/// Which of a unit's candidates one pass over it takes: those after the
/// first `skip` (taken by an earlier pass), at most `cap` of them.
#[derive(Clone, Copy)]
struct Pass {
    skip: usize,
    cap: usize,
}

/// Adds the unit's rows that may make the answer to `col`, taking the
/// candidates `pass` says; when it stops at `pass.cap`, returns how many
/// candidates it has taken in all and the timestamp of the next one.
fn run_unit(
    ctx: &Context<'_>,
    index: usize,
    u: &Unit,
    col: &mut Collector<'_, '_>,
    cache: &mut TemplateCache,
    bufs: &mut RowBuffers,
    pass: Pass,
) -> Result<Option<(usize, i64)>, StorageError> {
    let Pass { skip, cap } = pass;
    let (lo, hi) = col.cutoff.narrow(ctx.q.lo, ctx.q.hi);
    if lo > hi {
        return Ok(None);
    }
    let UnitData::Columnar { part, block } = &u.data else {
        let rows = filtered_rows(ctx, u, lo, hi, &mut col.stats)?;
        let n = rows.len() as i64;
        let ordered: Box<dyn Iterator<Item = (usize, Entry)>> = match col.dir {
            Direction::Forward => Box::new(rows.into_iter().enumerate()),
            Direction::Backward => Box::new(rows.into_iter().enumerate().rev()),
        };
        for (i, e) in ordered.skip(skip).take(col.limit) {
            if col.cutoff.excludes(e.ts) {
                break;
            }
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
        return Ok(None);
    };
    let Some(header) = super::block::header_if_may_match(&ctx.q, part, block, cache)? else {
        return Ok(None);
    };
    let (r, primed) = ctx.decoded.open_reader(part, block, header)?;
    let Some(mut ev) = BlockEval::open(&r, &ctx.q, cache, lo, hi)? else {
        return Ok(None);
    };
    let admit = ctx.admit_block(u64::from(block.meta.rows));
    ev.keep_decoded_as(ctx.decoded, part.serial(), block.index, admit);
    ev.keep_verdicts_in(part, block.index);
    let rows = ev.rows();
    let RowBuffers { keep, order } = bufs;
    keep.clear();
    keep.resize(rows, false);
    keep[ev.first..ev.end].iter_mut().for_each(|k| *k = true);
    col.stats.rows_scanned += (ev.end - ev.first) as u64;
    col.stats.bytes_scanned += ev.range_line_bytes_estimate();
    let pending = ev.exact_filters(&ctx.q, keep)?;
    let mut lines: Vec<Option<String>> = Vec::new();
    // The rows that may make the answer, in answer order; regexps are
    // tested in batches of the rows still needed, so a unit rebuilds few
    // lines even when most rows hold the regexp's literals.
    order.clear();
    match col.dir {
        Direction::Forward => order.extend((ev.first..ev.end).filter(|&i| keep[i])),
        Direction::Backward => order.extend((ev.first..ev.end).rev().filter(|&i| keep[i])),
    }
    let order: &[usize] = order;
    let mut taken = 0usize;
    let mut at = skip.min(order.len());
    let cap = cap.min(col.limit);
    while at < order.len() && taken < cap {
        let want = cap - taken;
        let mut batch = Vec::with_capacity(want);
        while at < order.len() && batch.len() < want {
            let i = order[at];
            if col.cutoff.excludes(r.row_ts(i)) {
                at = order.len();
                break;
            }
            batch.push(i);
            at += 1;
        }
        if batch.is_empty() {
            break;
        }
        let pass = if pending.is_empty() {
            vec![true; batch.len()]
        } else {
            ev.pending_filters(&ctx.q, &pending, &batch, &mut lines)?
        };
        for (&i, ok) in batch.iter().zip(pass) {
            if !ok {
                continue;
            }
            taken += 1;
            col.stats.rows_kept += 1;
            col.stats.rows_from_columns += 1;
            let seq = match col.dir {
                Direction::Forward => i as i64,
                Direction::Backward => -(i as i64),
            };
            // A line rebuilt for a regexp is kept; others are rebuilt only if
            // they make the answer.
            let row = match lines.get_mut(i).and_then(Option::take) {
                Some(line) => RowRef::Entry(Entry {
                    ts: r.row_ts(i),
                    line,
                    metadata: r.metadata()?.row(i).to_vec(),
                }),
                None => RowRef::Block {
                    unit: index,
                    row: i,
                },
            };
            col.push(Candidate {
                ts: r.row_ts(i),
                stream: u.stream,
                seq,
                row,
            });
        }
    }
    if admit {
        ctx.decoded.keep_decoded(part, block, &r, primed);
    }
    if taken >= cap && cap < col.limit && at < order.len() {
        return Ok(Some((at, r.row_ts(order[at]))));
    }
    Ok(None)
}
