//! Units read as whole rows (memtable rows, raw and version-1 blocks,
//! streams whose sources overlap): line filters are run on each line.

use super::units::{Unit, UnitData};
use super::Context;
use runakefli_model::plan::PlanStats;
use runakefli_model::{Direction, Entry};
use runakefli_storage::merge_iter::{MergeIter, Source};
use runakefli_storage::StorageError;

/// The rows of a non-columnar unit with `lo <= ts <= hi` that pass the line
/// filters, in time order (forward; equal timestamps in push order); the
/// number of rows in the range and their line bytes go to `stats`.
pub fn filtered_rows(
    ctx: &Context<'_>,
    unit: &Unit,
    lo: i64,
    hi: i64,
    stats: &mut PlanStats,
) -> Result<Vec<Entry>, StorageError> {
    let keep = |e: &Entry, stats: &mut PlanStats| {
        if e.ts < lo || e.ts > hi {
            return false;
        }
        stats.rows_scanned += 1;
        stats.bytes_scanned += e.line.len() as u64;
        ctx.q.plan.line_filters.iter().all(|f| f.keep(&e.line))
    };
    let rows: Vec<Entry> = match &unit.data {
        UnitData::Rows(entries) => entries.iter().filter(|e| keep(e, stats)).cloned().collect(),
        UnitData::OldBlock { part, block } => {
            let d = part.decode_filtered(block, lo, hi, &ctx.q.hints)?;
            d.ts.into_iter()
                .zip(d.lines)
                .zip(d.metadata)
                .map(|((ts, line), metadata)| Entry { ts, line, metadata })
                .filter(|e| keep(e, stats))
                .collect()
        }
        UnitData::Merged { parts, memory } => {
            let sid = ctx.streams[unit.stream].id;
            let mut sources = Vec::with_capacity(parts.len() + memory.len());
            for (p, _) in parts {
                if let Some(s) = Source::part(p, sid, lo, hi, Direction::Forward, &ctx.q.hints)? {
                    sources.push(s);
                }
            }
            for m in memory {
                sources.push(Source::memory(m.clone(), Direction::Forward));
            }
            let mut it =
                MergeIter::new(sources, lo, hi, Direction::Forward)?.with_needles(&ctx.q.hints);
            let mut out = Vec::new();
            while let Some(e) = it.next_entry()? {
                if keep(&e, stats) {
                    out.push(e);
                }
            }
            out
        }
        UnitData::Columnar { .. } => {
            return Err(StorageError::corrupt("query", "columnar unit read as rows"))
        }
    };
    Ok(rows)
}
