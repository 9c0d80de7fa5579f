//! [`Backend::scan_columns`](runakefli_model::Backend::scan_columns) for
//! [`EmbeddedBackend`]: rows of merged columnar parts are answered from the block
//! columns a query names (no line is rebuilt); every other row (memtables,
//! raw flushed parts, overlapping parts, lines stored whole, lines whose
//! members Loki's `| json` would treat differently) carries its line, read
//! through the ordinary merged scan.
//!
//! Exactness rests on three facts. Merged parts come out of the
//! deduplicating merge, so a stream read from merged parts whose time ranges
//! do not overlap needs no duplicate removal. A template fixes the keys, their
//! order and nesting of every row that uses it, so the label each member gets
//! and which member wins a label clash (the first scalar one) follow from
//! the template and the row's values. Keys limited to `[A-Za-z0-9_.-]`
//! (non-empty dotted segments) are sanitized by Loki exactly as
//! [`loki_json_label`] does, whichever way the dots split them into keys.

use crate::limits::SCAN_BATCH_ENTRIES;
use crate::EmbeddedBackend;
use runakefli_model::{
    ColumnBatch, ColumnRequest, ColumnRow, Direction, Entry, JsonValue, RowFields, ScanControl,
    ScanRequest, StreamInfo,
};
use runakefli_storage::block::{BlockReader, Column, Encoding};
use runakefli_storage::deletes::StreamDeletes;
use runakefli_storage::merge_iter::{MergeIter, Source};
use runakefli_storage::part::{BlockFormat, BlockRef, Part};
use runakefli_storage::StorageError;
use std::collections::HashMap;
use std::sync::Arc;

/// The label Loki's `| json` gives the member at dotted path `name`, or
/// `None` when the path has bytes or segments this module does not map.
pub fn loki_json_label(name: &[u8]) -> Option<String> {
    if name.is_empty() || name[0] == b'.' || name[name.len() - 1] == b'.' {
        return None;
    }
    if name.windows(2).any(|w| w == b"..") {
        return None;
    }
    let mut out = String::with_capacity(name.len() + 1);
    if name[0].is_ascii_digit() {
        out.push('_');
    }
    for &c in name {
        match c {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' => out.push(c as char),
            b'.' | b'-' => out.push('_'),
            _ => return None,
        }
    }
    Some(out)
}

/// Whether Loki's JSON walker reads an unquoted value without error.
fn unquoted_ok(v: &str) -> bool {
    match v.as_bytes().first() {
        Some(b'0'..=b'9' | b'-') => true,
        Some(b'[') => !v.contains('"'),
        _ => v == "true" || v == "false" || v == "null",
    }
}

/// Whether an unquoted value counts as a member for `| json` (scalars do;
/// `null` and arrays are skipped).
fn unquoted_scalar(v: &str) -> bool {
    v != "null" && !v.starts_with('[')
}

/// Encodings whose every value starts with a digit (always readable unquoted).
fn digit_encoding(e: Encoding) -> bool {
    matches!(e, Encoding::Decimal | Encoding::Timestamp | Encoding::Ipv4)
}

/// Per template: for each wanted label, its slots `(slot index, column, quoted)`.
type TemplatePlan = Option<Vec<Vec<(u32, usize, bool)>>>;

/// The slots of the top-level member named `key` in a template's fields,
/// as `| json l="key"` reads it: `Some(None)` when there is no such member,
/// `None` when the template cannot tell (the member may be an object, or a
/// key is written with escapes).
fn key_slot(fields: &[(usize, Vec<u8>, bool)], key: &str) -> Option<Vec<(u32, usize, bool)>> {
    let mut out = Vec::new();
    for (k, (col, name, quoted)) in fields.iter().enumerate() {
        if name.contains(&b'\\') {
            return None;
        }
        if name.as_slice() == key.as_bytes() {
            out.push((k as u32, *col, *quoted));
        } else if name.starts_with(key.as_bytes()) && name.get(key.len()) == Some(&b'.') {
            return None;
        }
    }
    Some(out)
}

/// Rows of one block within `[lo, hi]`; the sum of the JSON rows' line lengths.
fn block_rows(
    reader: &BlockReader<'_>,
    meta_line_bytes: u64,
    lo: i64,
    hi: i64,
    cols: &ColumnRequest,
) -> Result<(Vec<ColumnRow>, u64), StorageError> {
    let (wanted, keys) = (&cols.json_labels, &cols.json_keys);
    let rows = reader.rows();
    let ts = reader.timestamps();
    let row_tpl = reader.row_templates();
    let full = ts.iter().all(|&t| t >= lo && t <= hi);
    // Plan each template.
    let mut unquoted_cols: Vec<usize> = Vec::new();
    let mut plans: Vec<TemplatePlan> = Vec::with_capacity(reader.template_count());
    for t in 0..reader.template_count() {
        if !keys.is_empty() && reader.template_starts_with(t) != Some(b'{') {
            plans.push(None);
            continue;
        }
        let plan = reader.template_fields(t).and_then(|fields| {
            let mut per_label = vec![Vec::new(); wanted.len()];
            for (k, (col, name, quoted)) in fields.iter().enumerate() {
                if !quoted && !unquoted_cols.contains(col) {
                    unquoted_cols.push(*col);
                }
                if wanted.is_empty() {
                    continue;
                }
                let label = loki_json_label(name)?;
                for (w, l) in wanted.iter().enumerate() {
                    if *l == label {
                        per_label[w].push((k as u32, *col, *quoted));
                    }
                }
            }
            for key in keys {
                per_label.push(key_slot(&fields, key)?);
            }
            Some(per_label)
        });
        plans.push(plan);
    }
    // Rows that must carry their line.
    let mut as_line: Vec<bool> = (0..rows)
        .map(|r| !full || plans[row_tpl[r] as usize].is_none())
        .collect();
    for &c in &unquoted_cols {
        if reader.column_encoding(c).is_some_and(digit_encoding) {
            continue;
        }
        let col = reader.column_at(c)?;
        for (r, bad) in as_line.iter_mut().enumerate() {
            if let Some(v) = col.get(r) {
                if !col.is_string(r) && !unquoted_ok(v) {
                    *bad = true;
                }
            }
        }
    }
    let mut columns: HashMap<usize, Column> = HashMap::new();
    for plan in plans.iter().flatten() {
        for &(_, c, _) in plan.iter().flatten() {
            if let std::collections::hash_map::Entry::Vacant(e) = columns.entry(c) {
                e.insert(reader.column_at(c)?);
            }
        }
    }
    let any_line = as_line.iter().any(|&b| b);
    let lines = if any_line {
        reader.lines()?
    } else {
        Vec::new()
    };
    let metadata = reader.metadata()?;
    let mut out = Vec::with_capacity(rows);
    let mut json_bytes = 0u64;
    for r in 0..rows {
        if ts[r] < lo || ts[r] > hi {
            continue;
        }
        let fields = if as_line[r] {
            RowFields::Line(lines[r].clone())
        } else {
            if any_line {
                json_bytes += lines[r].len() as u64;
            }
            let plan = plans[row_tpl[r] as usize].as_ref();
            let values = plan
                .map(|p| {
                    p.iter()
                        .enumerate()
                        .map(|(w, slots)| {
                            let by_key = w >= wanted.len();
                            slots.iter().find_map(|&(k, c, quoted)| {
                                let v = columns.get(&c)?.get(r)?;
                                (quoted || by_key || unquoted_scalar(v)).then(|| JsonValue {
                                    text: v.to_string(),
                                    string: quoted,
                                    order: k,
                                })
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            RowFields::Json(values)
        };
        out.push(ColumnRow {
            ts: ts[r],
            metadata: if r < metadata.len() {
                metadata.row(r).to_vec()
            } else {
                Vec::new()
            },
            fields,
        });
    }
    if !any_line {
        json_bytes = meta_line_bytes;
    }
    Ok((out, json_bytes))
}

/// The blocks of one stream in the parts, when they can be read column-wise:
/// all parts merged and columnar, time ranges not overlapping. In time order.
fn columnar_plan(
    parts: &[Arc<Part>],
    sid: runakefli_model::StreamId,
    lo: i64,
    hi: i64,
) -> Option<Vec<(Arc<Part>, Vec<BlockRef>)>> {
    let mut out: Vec<(Arc<Part>, Vec<BlockRef>)> = Vec::new();
    for p in parts {
        let blocks: Vec<BlockRef> = p
            .stream_blocks(sid)
            .iter()
            .filter(|b| b.meta.max_ts >= lo && b.meta.min_ts <= hi)
            .cloned()
            .collect();
        if blocks.is_empty() {
            continue;
        }
        if p.format() != BlockFormat::Columnar || p.info().level == 0 {
            return None;
        }
        out.push((p.clone(), blocks));
    }
    let span = |bs: &[BlockRef]| {
        (
            bs.iter().map(|b| b.meta.min_ts).min().unwrap_or(0),
            bs.iter().map(|b| b.meta.max_ts).max().unwrap_or(0),
        )
    };
    out.sort_by_key(|(_, bs)| span(bs).0);
    for w in out.windows(2) {
        if span(&w[0].1).1 >= span(&w[1].1).0 {
            return None;
        }
    }
    Some(out)
}

fn line_rows(entries: Vec<Entry>) -> Vec<ColumnRow> {
    entries
        .into_iter()
        .map(|e| ColumnRow {
            ts: e.ts,
            metadata: e.metadata,
            fields: RowFields::Line(e.line),
        })
        .collect()
}

impl EmbeddedBackend {
    /// The column scan; see the module documentation.
    pub(crate) fn scan_columns_inner(
        &self,
        req: &ScanRequest,
        cols: &ColumnRequest,
        visit: &mut dyn FnMut(&StreamInfo, ColumnBatch) -> ScanControl,
    ) -> Result<(), StorageError> {
        if req.start >= req.end {
            return Ok(());
        }
        let (lo, hi) = (req.start, req.end - 1);
        let Some(snap) = self.storage.snapshot(&req.tenant, lo, hi) else {
            return Ok(());
        };
        let parts = snap.parts();
        let mut streams = snap.matching(&req.matchers);
        streams.retain(|(sid, _)| req.covers(*sid));
        for (sid, labels) in streams {
            // Delete requests: a stream with deleted rows in range goes
            // through the line path, which drops them.
            let dels = StreamDeletes::for_stream(snap.deletes(), &labels, lo, hi);
            let mem: Vec<Vec<Entry>> = snap.memory_entries(sid, lo, hi);
            let info = StreamInfo { id: sid, labels };
            let plan = if mem.is_empty()
                && dels.is_empty()
                && req.direction == Direction::Forward
                && req.required_substrings.is_empty()
            {
                columnar_plan(parts, sid, lo, hi)
            } else {
                None
            };
            let control = match plan {
                Some(plan) => {
                    let mut control = ScanControl::Continue;
                    'parts: for (part, blocks) in plan {
                        for b in blocks {
                            if part.block_damaged(&b) {
                                continue;
                            }
                            let read = part.block_bytes(&b).and_then(|_| {
                                let reader = part.reader(&b)?;
                                block_rows(&reader, b.meta.line_bytes, lo, hi, cols)
                            });
                            let (rows, json_line_bytes) = match read {
                                Ok(r) => r,
                                Err(e) => {
                                    // Reported (log line, counter, quarantine) and skipped.
                                    part.report_damaged_block(&b, e)?;
                                    continue;
                                }
                            };
                            if rows.is_empty() {
                                continue;
                            }
                            control = visit(
                                &info,
                                ColumnBatch {
                                    rows,
                                    json_line_bytes,
                                },
                            );
                            if control != ScanControl::Continue {
                                break 'parts;
                            }
                        }
                    }
                    control
                }
                None => StreamSources {
                    info: &info,
                    parts,
                    mem,
                    dels: &dels,
                }
                .line_fallback(lo, hi, req, visit)?,
            };
            if control == ScanControl::Stop {
                break;
            }
        }
        Ok(())
    }
}

/// What one stream's scan reads: the stream, the snapshot's parts, its
/// rows still in memory, and the delete requests that hide some of them.
struct StreamSources<'s> {
    info: &'s StreamInfo,
    parts: &'s [Arc<Part>],
    mem: Vec<Vec<Entry>>,
    dels: &'s StreamDeletes,
}

impl StreamSources<'_> {
    /// The stream through the ordinary merged scan over `[lo, hi]`, every
    /// row with its line.
    fn line_fallback(
        self,
        lo: i64,
        hi: i64,
        req: &ScanRequest,
        visit: &mut dyn FnMut(&StreamInfo, ColumnBatch) -> ScanControl,
    ) -> Result<ScanControl, StorageError> {
        let StreamSources {
            info,
            parts,
            mem,
            dels,
        } = self;
        let mut sources = Vec::with_capacity(parts.len() + mem.len());
        for p in parts {
            if let Some(s) =
                Source::part(p, info.id, lo, hi, req.direction, &req.required_substrings)?
            {
                sources.push(s);
            }
        }
        for entries in mem {
            sources.push(Source::memory(entries, req.direction));
        }
        if sources.is_empty() {
            return Ok(ScanControl::Continue);
        }
        let mut it =
            MergeIter::new(sources, lo, hi, req.direction)?.with_needles(&req.required_substrings);
        let mut batch = Vec::with_capacity(SCAN_BATCH_ENTRIES);
        let mut control = ScanControl::Continue;
        while let Some(e) = it.next_entry()? {
            if !dels.is_empty() && dels.deletes(e.ts, &e.line) {
                continue; // hidden by a delete request
            }
            batch.push(e);
            if batch.len() == SCAN_BATCH_ENTRIES {
                control = visit(
                    info,
                    ColumnBatch {
                        rows: line_rows(std::mem::take(&mut batch)),
                        json_line_bytes: 0,
                    },
                );
                if control != ScanControl::Continue {
                    return Ok(control);
                }
            }
        }
        if !batch.is_empty() {
            control = visit(
                info,
                ColumnBatch {
                    rows: line_rows(batch),
                    json_line_bytes: 0,
                },
            );
        }
        Ok(control)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_as_loki_sanitizes() {
        assert_eq!(
            loki_json_label(b"request.method").as_deref(),
            Some("request_method")
        );
        assert_eq!(loki_json_label(b"1a.b-c").as_deref(), Some("_1a_b_c"));
        assert_eq!(loki_json_label(b"a..b"), None);
        assert_eq!(loki_json_label(b"a b"), None);
        assert_eq!(loki_json_label(b".a"), None);
        assert_eq!(loki_json_label(b""), None);
    }

    #[test]
    fn unquoted_values() {
        assert!(unquoted_ok("12") && unquoted_ok("-1.5e3") && unquoted_ok("[1,2]"));
        assert!(unquoted_ok("true") && unquoted_ok("null"));
        assert!(!unquoted_ok("abc") && !unquoted_ok("+1") && !unquoted_ok("[\"a\"]"));
        assert!(!unquoted_scalar("null") && !unquoted_scalar("[1]") && unquoted_scalar("0"));
    }
}
