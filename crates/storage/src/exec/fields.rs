//! Rows of a columnar block through a fields stage: the labels a query reads
//! found in the templates' slots, label filters, the unwrap and the group.
//!
//! Every value a label can take in one block gets a small integer id: the
//! absent value, the stream label's value, each dictionary entry (or value)
//! of each column a label may come from, each metadata value. Rows turn
//! into tuples of ids by lookups; what depends only on a value — whether
//! `| json` takes it as a member, a label filter's outcome, the unwrapped
//! number, the group — is computed once per id and memoized, so the engine's
//! label filters and conversions run once per distinct value, not per row.

use super::block::BlockEval;
use super::buckets::{base_key, decode_all_used, line_len, Agg};
use super::query::{resolve_labels, LabelSource, TemplateFields};
use super::Context;
use crate::block::encoding::{Encoding, Values};
use crate::StorageError;
use runakefli_model::plan::{BucketValue, FilterOutcome, GroupBy, GroupKey};
use runakefli_model::{Entry, Labels};
use std::collections::HashMap;

/// Id of the absent value.
const ABSENT: u32 = 0;

/// Memo states.
const UNKNOWN: u8 = 0;

/// Where a label's value is, for rows of one template.
#[derive(Clone, Debug)]
enum Source {
    /// The first of these columns (slot order) whose value is a member;
    /// each with whether its slot is quoted.
    Json(Vec<(usize, bool)>),
    /// A `| json` parameter: this column's value (`""` when `None`).
    Key(Option<(usize, bool)>),
    /// The stream label or metadata.
    Base,
}

/// Ids of the values of one block.
struct Ids<'e> {
    /// Per column: first id of its values (`u32::MAX`: not a label source).
    col_base: Vec<u32>,
    /// Per column: the decoded values.
    values: Vec<Option<&'e Values>>,
    /// Per column: row → value index.
    vidx: Vec<Option<&'e [u32]>>,
    /// Per label: the stream label's value.
    stream_vals: Vec<Option<&'e [u8]>>,
    /// Metadata values, interned.
    meta: HashMap<&'e [u8], u32>,
    meta_text: Vec<&'e [u8]>,
    /// First metadata id.
    meta_base: u32,
}

impl<'e> Ids<'e> {
    /// The id of row `i`'s value in column `c`.
    #[inline]
    fn of(&self, c: usize, i: usize) -> u32 {
        let base = self.col_base[c];
        let vi = self.vidx[c].expect("prepared")[i] as usize;
        let sub = match self.values[c].expect("prepared") {
            Values::Const { .. } => 0,
            Values::Dict { idx, .. } => idx[vi] as usize,
            Values::Flat { .. } => vi,
        };
        base + sub as u32
    }

    /// The id of the stream label value of label `j`.
    #[inline]
    fn stream(&self, j: usize) -> u32 {
        if self.stream_vals[j].is_some() {
            1 + j as u32
        } else {
            ABSENT
        }
    }

    fn meta_id(&mut self, v: &'e [u8]) -> u32 {
        if let Some(&id) = self.meta.get(v) {
            return id;
        }
        let id = self.meta_base + self.meta_text.len() as u32;
        self.meta_text.push(v);
        self.meta.insert(v, id);
        id
    }

    /// The text of an id.
    fn text(&self, id: u32) -> Option<&'e [u8]> {
        if id == ABSENT {
            return None;
        }
        let n = self.stream_vals.len() as u32;
        if id <= n {
            return self.stream_vals[(id - 1) as usize];
        }
        if id >= self.meta_base {
            return Some(self.meta_text[(id - self.meta_base) as usize]);
        }
        // The column whose range holds the id.
        let (c, base) = self
            .col_base
            .iter()
            .enumerate()
            .filter(|(_, &b)| b != u32::MAX && b <= id)
            .max_by_key(|(_, &b)| b)
            .map(|(c, &b)| (c, b))?;
        let vals = self.values[c]?;
        let sub = (id - base) as usize;
        Some(match vals {
            Values::Const { value, .. } => value.as_slice(),
            Values::Dict { .. } => vals.entry(sub),
            Values::Flat { .. } => vals.get(sub),
        })
    }

    fn total(&self) -> usize {
        (self.meta_base as usize) + self.meta_text.len()
    }
}

/// A memo indexed by id, growing as metadata ids appear.
struct Memo<T: Clone> {
    v: Vec<T>,
    empty: T,
}

impl<T: Clone + PartialEq> Memo<T> {
    fn new(n: usize, empty: T) -> Self {
        Memo {
            v: vec![empty.clone(); n],
            empty,
        }
    }

    #[inline]
    fn get(&mut self, id: u32) -> &mut T {
        let i = id as usize;
        if i >= self.v.len() {
            self.v.resize(i + 1, self.empty.clone());
        }
        &mut self.v[i]
    }
}

/// Whether Loki's JSON walker reads an unquoted value without error.
fn unquoted_ok(v: &[u8]) -> bool {
    match v.first() {
        Some(b'0'..=b'9' | b'-') => true,
        Some(b'[') => !v.contains(&b'"'),
        _ => v == b"true" || v == b"false" || v == b"null",
    }
}

/// Whether an unquoted value counts as a member for `| json` (scalars do;
/// `null` and arrays are skipped).
fn unquoted_member(v: &[u8]) -> bool {
    v != b"null" && !v.starts_with(b"[")
}

/// Whether a quoted value would need unescaping (left to the engine).
fn needs_unescape(raw: &[u8]) -> bool {
    raw.contains(&b'\\') || memchr::memmem::find(raw, "\u{FFFD}".as_bytes()).is_some()
}

/// Per-id facts about values in slots, memoized: bit 0 known, bit 1 a
/// member unquoted, bit 2 needs unescaping when quoted, bit 3 rejected by
/// `| json` when unquoted.
const KNOWN: u8 = 1;
const MEMBER: u8 = 2;
const ESCAPED: u8 = 4;
const BAD: u8 = 8;

fn facts(v: &[u8]) -> u8 {
    let mut f = KNOWN;
    if unquoted_member(v) {
        f |= MEMBER;
    }
    if needs_unescape(v) {
        f |= ESCAPED;
    }
    if !unquoted_ok(v) {
        f |= BAD;
    }
    f
}

/// Runs the fields stage over the kept rows of `ev`, adding to `agg`.
#[allow(clippy::too_many_arguments)]
pub fn run<'e>(
    ctx: &'e Context<'_>,
    ev: &'e mut BlockEval<'_, '_>,
    keep: &[bool],
    agg: &mut Agg<'_>,
    stream: usize,
    ts: &[i64],
    md: Option<&'e [Vec<(String, String)>]>,
) -> Result<(), StorageError> {
    let stage = ctx.q.fields().expect("fields stage");
    let lu = &ctx.q.labels;
    let names = &lu.labels;
    let labels: &Labels = &ctx.streams[stream].labels;
    let bytes = agg.plan.value == BucketValue::LineBytes;
    let infos = ev.infos.clone();
    let nt = infos.len();
    let row_tpl: Vec<u32> = ev.r.row_templates().to_vec();
    let heads = ev.r.template_heads().to_vec();
    let mut used = vec![false; nt];
    for i in ev.first..ev.end {
        if keep[i] {
            used[row_tpl[i] as usize] = true;
        }
    }
    let no_md: &[(String, String)] = &[];
    let row_md = |i: usize| md.map_or(no_md, |m| m[i].as_slice());
    // Sources per template for rows without metadata.
    let stream_has = |n: &str| labels.get(n).is_some();
    let sources_of = |t: usize, base_has: &dyn Fn(&str) -> bool| -> Option<Vec<Source>> {
        let tf: &TemplateFields = infos[t].fields.as_ref()?;
        let res = resolve_labels(names, Some(tf), Some(stage), base_has);
        let col = |k: usize| (heads[t].slots[k] as usize, tf.slot_quoted[k]);
        Some(
            res.into_iter()
                .map(|r| match r {
                    LabelSource::Json(slots) => Source::Json(slots.into_iter().map(col).collect()),
                    LabelSource::Key(slot) => Source::Key(slot.map(col)),
                    LabelSource::Base => Source::Base,
                })
                .collect(),
        )
    };
    let plain: Vec<Option<Vec<Source>>> = (0..nt)
        .map(|t| {
            if used[t] {
                sources_of(t, &stream_has)
            } else {
                None
            }
        })
        .collect();
    // Columns labels may come from, and the unquoted columns `| json` could
    // reject, per template.
    let ncols = ev.r.column_count();
    let mut label_col = vec![false; ncols];
    let mut unquoted: Vec<Vec<usize>> = vec![Vec::new(); nt];
    for t in 0..nt {
        if !used[t] {
            continue;
        }
        let Some(tf) = infos[t].fields.as_ref() else {
            continue;
        };
        for (k, &c) in heads[t].slots.iter().enumerate() {
            let c = c as usize;
            let maybe = tf.keys.contains(&Some(k)) || {
                let l = &tf.slot_labels[k];
                !l.is_empty()
                    && names
                        .iter()
                        .any(|n| n == l || n.strip_suffix("_extracted") == Some(l.as_str()))
            };
            if maybe {
                label_col[c] = true;
            }
            if !tf.slot_quoted[k] {
                let (enc, _) = ev.r.column_head(c);
                if !matches!(
                    enc,
                    Encoding::Decimal | Encoding::Timestamp | Encoding::Ipv4
                ) {
                    unquoted[t].push(c);
                    label_col[c] = true;
                }
            }
        }
    }
    if bytes {
        decode_all_used(ev, keep)?;
    }
    for c in 0..ncols {
        if label_col[c] {
            ev.values(c)?;
            ev.value_index(c);
        }
    }
    let ev: &'e BlockEval<'_, '_> = ev;
    // Id space.
    let mut col_base = vec![u32::MAX; ncols];
    let mut next = 1 + names.len() as u32;
    let mut values: Vec<Option<&Values>> = vec![None; ncols];
    let mut vidx: Vec<Option<&[u32]>> = vec![None; ncols];
    for c in 0..ncols {
        if !label_col[c] {
            continue;
        }
        let v = ev.values_ro(c);
        col_base[c] = next;
        next += match v {
            Values::Const { .. } => 1,
            Values::Dict { ends, .. } => ends.len() as u32,
            Values::Flat { ends, .. } => ends.len() as u32,
        };
        values[c] = Some(v);
        vidx[c] = Some(ev.value_index_ro(c));
    }
    let mut ids = Ids {
        col_base,
        values,
        vidx,
        stream_vals: names
            .iter()
            .map(|n| labels.get(n).map(str::as_bytes))
            .collect(),
        meta: HashMap::new(),
        meta_text: Vec::new(),
        meta_base: next,
    };
    let total = ids.total();
    let mut fact = Memo::new(total, 0u8);
    let nf = stage.filters.len();
    let mut filter_memo: Vec<Memo<u8>> = (0..nf).map(|_| Memo::new(total, UNKNOWN)).collect();
    let mut filter_map: Vec<HashMap<Vec<u32>, FilterOutcome>> = vec![HashMap::new(); nf];
    let np = stage.unwrap.as_ref().map_or(0, |u| u.post_filters.len());
    let mut post_map: Vec<HashMap<Vec<u32>, FilterOutcome>> = vec![HashMap::new(); np];
    let mut unwrap_memo: Memo<Option<Option<f64>>> =
        Memo::new(if stage.unwrap.is_some() { total } else { 0 }, None);
    let mut group_one: Memo<usize> = Memo::new(total, usize::MAX);
    let mut group_map: HashMap<Vec<u32>, usize> = HashMap::new();
    let mut meta_sources: HashMap<(usize, Vec<String>), Option<Vec<Source>>> = HashMap::new();
    let mut row_ids: Vec<u32> = vec![ABSENT; names.len()];
    let mut args: Vec<u32> = Vec::new();
    let mut residual = vec![false; keep.len()];
    let mut any_residual = false;
    let outcome_code = |o: FilterOutcome| match o {
        FilterOutcome::Keep => 1u8,
        FilterOutcome::Drop => 2,
        FilterOutcome::Error => 3,
    };
    'rows: for i in ev.first..ev.end {
        if !keep[i] {
            continue;
        }
        let t = row_tpl[i] as usize;
        let mdr = row_md(i);
        // Sources for this row.
        let srcs: &Option<Vec<Source>> = if mdr.is_empty() {
            &plain[t]
        } else {
            let key = (t, mdr.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>());
            meta_sources.entry(key).or_insert_with(|| {
                let has = |n: &str| labels.get(n).is_some() || mdr.iter().any(|(k, _)| k == n);
                sources_of(t, &has)
            })
        };
        let Some(srcs) = srcs else {
            residual[i] = true;
            any_residual = true;
            continue;
        };
        // Values `| json` would reject.
        for &c in &unquoted[t] {
            let id = ids.of(c, i);
            let f = fact.get(id);
            if *f == 0 {
                *f = facts(ids.text(id).unwrap_or(b""));
            }
            if *f & BAD != 0 {
                residual[i] = true;
                any_residual = true;
                continue 'rows;
            }
        }
        // Label ids.
        for (j, src) in srcs.iter().enumerate() {
            let base = |ids: &mut Ids<'e>| -> u32 {
                match mdr.iter().rev().find(|(k, _)| *k == names[j]) {
                    Some((_, v)) => ids.meta_id(v.as_bytes()),
                    None => ids.stream(j),
                }
            };
            row_ids[j] = match src {
                Source::Base => base(&mut ids),
                Source::Json(cols) => {
                    let mut found = None;
                    for &(c, quoted) in cols {
                        let id = ids.of(c, i);
                        let f = fact.get(id);
                        if *f == 0 {
                            *f = facts(ids.text(id).unwrap_or(b""));
                        }
                        if quoted {
                            if *f & ESCAPED != 0 {
                                residual[i] = true;
                                any_residual = true;
                                continue 'rows;
                            }
                            found = Some(id);
                            break;
                        }
                        if *f & MEMBER != 0 {
                            found = Some(id);
                            break;
                        }
                    }
                    match found {
                        Some(id) => id,
                        None => base(&mut ids),
                    }
                }
                Source::Key(None) => ids.meta_id(b""),
                Source::Key(Some((c, quoted))) => {
                    let id = ids.of(*c, i);
                    let f = fact.get(id);
                    if *f == 0 {
                        *f = facts(ids.text(id).unwrap_or(b""));
                    }
                    if *quoted {
                        if *f & ESCAPED != 0 {
                            residual[i] = true;
                            any_residual = true;
                            continue 'rows;
                        }
                        id
                    } else if ids.text(id) == Some(&b"null"[..]) {
                        ids.meta_id(b"")
                    } else {
                        id
                    }
                }
            };
        }
        // Label filters.
        for (fi, f) in stage.filters.iter().enumerate() {
            let arg = &lu.filters[fi];
            let code = if arg.len() == 1 {
                let id = row_ids[arg[0]];
                let m = filter_memo[fi].get(id);
                if *m == UNKNOWN {
                    let v = ids.text(id);
                    *m = outcome_code(call(&f.test, &[v]));
                }
                *m
            } else {
                args.clear();
                args.extend(arg.iter().map(|&j| row_ids[j]));
                match filter_map[fi].get(&args) {
                    Some(&o) => outcome_code(o),
                    None => {
                        let vals: Vec<Option<&[u8]>> =
                            args.iter().map(|&id| ids.text(id)).collect();
                        let o = call(&f.test, &vals);
                        filter_map[fi].insert(args.clone(), o);
                        outcome_code(o)
                    }
                }
            };
            match code {
                1 => {}
                2 => continue 'rows,
                _ => {
                    residual[i] = true;
                    any_residual = true;
                    continue 'rows;
                }
            }
        }
        // The sample.
        let value = match (&stage.unwrap, lu.unwrap) {
            (Some(u), Some(j)) => {
                let id = row_ids[j];
                let m = unwrap_memo.get(id);
                if m.is_none() {
                    let text = ids.text(id).unwrap_or(b"");
                    *m = Some(std::str::from_utf8(text).ok().and_then(|s| (u.convert)(s)));
                }
                let Some(v) = m.expect("set") else {
                    residual[i] = true;
                    any_residual = true;
                    continue 'rows;
                };
                for (fi, f) in u.post_filters.iter().enumerate() {
                    args.clear();
                    args.extend(lu.post_filters[fi].iter().map(|&j| row_ids[j]));
                    let o = match post_map[fi].get(&args) {
                        Some(&o) => o,
                        None => {
                            let vals: Vec<Option<&[u8]>> =
                                args.iter().map(|&id| ids.text(id)).collect();
                            let o = call(&f.test, &vals);
                            post_map[fi].insert(args.clone(), o);
                            o
                        }
                    };
                    match o {
                        FilterOutcome::Keep => {}
                        FilterOutcome::Drop => continue 'rows,
                        FilterOutcome::Error => {
                            residual[i] = true;
                            any_residual = true;
                            continue 'rows;
                        }
                    }
                }
                v
            }
            _ if bytes => line_len(ev, i) as f64,
            _ => 1.0,
        };
        agg.stats.rows_kept += 1;
        agg.stats.rows_from_columns += 1;
        // The group.
        let g = match &agg.plan.group_by {
            GroupBy::Labels(_) if lu.group.is_empty() => {
                let slot = group_one.get(ABSENT);
                if *slot == usize::MAX {
                    *slot = agg.group(GroupKey::Labels(Vec::new()));
                }
                *slot
            }
            GroupBy::Labels(_) if lu.group.len() == 1 => {
                let id = row_ids[lu.group[0]];
                let slot = group_one.get(id);
                if *slot == usize::MAX {
                    let key = GroupKey::Labels(vec![ids
                        .text(id)
                        .map(|b| String::from_utf8_lossy(b).into_owned())]);
                    *slot = agg.group(key);
                }
                *slot
            }
            GroupBy::Labels(_) => {
                args.clear();
                args.extend(lu.group.iter().map(|&j| row_ids[j]));
                match group_map.get(&args) {
                    Some(&g) => g,
                    None => {
                        let key = GroupKey::Labels(
                            args.iter()
                                .map(|&id| {
                                    ids.text(id)
                                        .map(|b| String::from_utf8_lossy(b).into_owned())
                                })
                                .collect(),
                        );
                        let g = agg.group(key);
                        group_map.insert(args.clone(), g);
                        g
                    }
                }
            }
            GroupBy::Stream => agg.group(base_key(agg.plan, mdr, &ctx.streams[stream].labels)),
        };
        agg.add(g, ts[i], value);
    }
    if any_residual {
        let lines = ev.rebuild(&residual)?;
        let out = agg.residual.entry(stream).or_default();
        for (i, line) in lines.into_iter().enumerate() {
            if let Some(line) = line {
                out.push(Entry {
                    ts: ts[i],
                    line,
                    metadata: row_md(i).to_vec(),
                });
            }
        }
    }
    Ok(())
}

fn call(test: &runakefli_model::plan::FieldTest, args: &[Option<&[u8]>]) -> FilterOutcome {
    let strs: Vec<Option<&str>> = args
        .iter()
        .map(|v| v.map(|b| std::str::from_utf8(b).unwrap_or("")))
        .collect();
    test(&strs)
}
