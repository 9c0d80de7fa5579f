//! Rows of a columnar block through a fields stage: the labels a query reads
//! found in the templates' slots, label filters, the unwrap and the group.
//!
//! Every value a label can take in one block gets a small integer id: the
//! absent value, the stream label's value, each dictionary entry (or value)
//! of each column a label may come from, each metadata value. Rows are
//! processed a column at a time, grouped by where their labels come from
//! (template and metadata names): each label becomes an array of ids, and
//! what depends only on a value — whether `| json` takes it as a member, a
//! label filter's outcome, the unwrapped number, the group — is computed
//! once per id and memoized, so the engine's label filters and conversions
//! run once per distinct value, not per row.

use super::agg::{base_key, decode_all_used, line_len, Agg};
use super::block::{relent, BlockBuffers, BlockEval, TemplateCache};
use super::entry_marks;
use super::query::{resolve_labels, LabelSource};
use super::Context;
use runakefli_model::plan::{BucketValue, FilterOutcome, GroupBy, GroupKey, JsonParser};
use runakefli_model::{Entry, Labels};
use runakefli_storage::block::encoding::Values;
use runakefli_storage::block::hash::FastMap as HashMap;
use runakefli_storage::StorageError;
use std::rc::Rc;

/// Where every row of a uniform block finds one label (a [`LabelSource`]
/// placed in the block's columns): plain data, compared and copied without
/// allocating, since a block's templates are placed one by one.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Placed {
    /// `| json`'s one slot, in column `col` (quoted there or not): its
    /// value when a member, else the base label.
    Json { col: usize, quoted: bool },
    /// A `| json` parameter's slot, in column `col`.
    Key { col: usize, quoted: bool },
    /// A `| json` parameter no slot of the template holds: `""`.
    KeyAbsent,
    /// The row's metadata or stream labels (or absent).
    Base,
}

/// Rows whose labels come from the same place: (template, label sources, rows).
type RowGroup = (usize, Option<Rc<Vec<LabelSource>>>, Vec<u32>);

/// Id of the absent value.
const ABSENT: u32 = 0;

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
    /// Metadata values (and `""`), interned.
    meta: HashMap<&'e [u8], u32>,
    meta_text: Vec<&'e [u8]>,
    /// First interned id.
    meta_base: u32,
    /// Columns in id order, for [`Ids::text`].
    ranges: Vec<(u32, usize)>,
}

impl<'e> Ids<'e> {
    /// Returns the tables' allocations to the worker's buffers.
    fn give_back(self, bufs: &mut BlockBuffers) {
        bufs.col_base = self.col_base;
        bufs.ranges = self.ranges;
        bufs.values = relent(self.values);
        bufs.vidx = relent(self.vidx);
        bufs.stream_vals = relent(self.stream_vals);
    }

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

    fn intern(&mut self, v: &'e [u8]) -> u32 {
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
        let k = self.ranges.partition_point(|&(b, _)| b <= id) - 1;
        let (base, c) = self.ranges[k];
        let vals = self.values[c]?;
        let sub = (id - base) as usize;
        Some(match vals {
            Values::Const { value, .. } => value.as_slice(),
            Values::Dict { .. } => vals.entry(sub),
            Values::Flat { .. } => vals.get(sub),
        })
    }
}

/// A memo indexed by id, growing as interned ids appear.
struct Memo<T: Clone> {
    v: Vec<T>,
    empty: T,
}

impl<T: Clone> Memo<T> {
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

/// Per-value facts: a member when unquoted, needs unescaping when quoted,
/// rejected by `| json` when unquoted.
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

/// What the header says about all values of column `c`: `MEMBER` when
/// every value is a member, `ESCAPED` / `BAD` when some value may be.
/// Read from the column briefs (a few cache lines for a whole block).
fn column_facts(ev: &BlockEval<'_, '_>, c: usize) -> u8 {
    use runakefli_storage::block::layout::{
        VALUES_JSON_SCALARS, VALUES_NOT_NULL_OR_ARRAY, VALUES_UNESCAPED,
    };
    let f = ev.r.header().briefs[c].facts;
    let mut out = KNOWN;
    if f & VALUES_NOT_NULL_OR_ARRAY != 0 {
        out |= MEMBER;
    }
    if f & VALUES_UNESCAPED == 0 {
        out |= ESCAPED;
    }
    if f & VALUES_JSON_SCALARS == 0 {
        out |= BAD;
    }
    out
}

fn outcome_code(o: FilterOutcome) -> u8 {
    match o {
        FilterOutcome::Keep => 1,
        FilterOutcome::Drop => 2,
        FilterOutcome::Error => 3,
    }
}

/// A block's rows as the fields stage takes them: which are kept, the
/// stream they belong to, their timestamps, and the block's metadata when
/// it can matter to the plan (see [`metadata_matters`]), else `None`.
#[derive(Clone, Copy)]
pub struct BlockRows<'e> {
    /// Per row of the block: it is kept.
    pub keep: &'e [bool],
    /// The stream's index in [`Context::streams`].
    pub stream: usize,
    /// Per row: its timestamp.
    pub ts: &'e [i64],
    /// The block's metadata, when it can matter.
    pub md: Option<&'e runakefli_storage::block::RowMetadata>,
}

/// Hands the kept rows of `rows` back to the engine whole (their lines
/// rebuilt, with their metadata), for rows the store cannot decide.
fn hand_back(
    ctx: &Context<'_>,
    ev: &BlockEval<'_, '_>,
    agg: &mut Agg<'_>,
    rows: BlockRows<'_>,
) -> Result<(), StorageError> {
    let BlockRows {
        keep: want,
        stream,
        ts,
        md,
    } = rows;
    let lines = ev.rebuild(want)?;
    // The engine evaluates these rows whole: they keep their metadata.
    let md = match md {
        Some(m) => Some(m),
        None if ev.r.has_metadata() => Some(ev.r.metadata()?),
        None => None,
    };
    let out = agg.residual.entry(stream).or_default();
    let before = out.len();
    for (i, line) in lines.into_iter().enumerate() {
        if let Some(line) = line {
            out.push(Entry {
                ts: ts[i],
                line,
                metadata: md.map_or(&[][..], |m| m.row(i)).to_vec(),
            });
        }
    }
    ctx.note_residual(&out[before..]);
    Ok(())
}

/// The outcome code of a one-label filter on `text`, from the codes kept
/// across blocks (computed and kept when new).
fn outcome_by_text(
    outcomes: &mut super::block::FilterOutcomes,
    test: &runakefli_model::plan::FieldTest,
    text: Option<&[u8]>,
) -> u8 {
    match outcomes.get(text) {
        Some(code) => code,
        None => {
            let code = outcome_code(call(test, &[text]));
            outcomes.insert(text, code);
            code
        }
    }
}

fn call(test: &runakefli_model::plan::FieldTest, args: &[Option<&[u8]>]) -> FilterOutcome {
    let strs: Vec<Option<&str>> = args
        .iter()
        .map(|v| v.map(|b| std::str::from_utf8(b).unwrap_or("")))
        .collect();
    test(&strs)
}

/// Runs a label filter of several labels over the rows still `alive`: the
/// filter's arguments are the label ids `arg` names in `lab`, and the test
/// runs once per distinct tuple of them (`args` is scratch). A row the
/// filter drops is no longer alive; a row it fails on is also dead (the
/// engine reports its error).
fn filter_by_label_tuples(
    test: &runakefli_model::plan::FieldTest,
    arg: &[usize],
    lab: &[Vec<u32>],
    ids: &Ids<'_>,
    alive: &mut [bool],
    dead: &mut [bool],
    args: &mut Vec<u32>,
) {
    let mut memo: HashMap<Vec<u32>, u8> = HashMap::default();
    for p in 0..alive.len() {
        if !alive[p] {
            continue;
        }
        args.clear();
        args.extend(arg.iter().map(|&j| lab[j][p]));
        let code = match memo.get(args.as_slice()) {
            Some(&c) => c,
            None => {
                let vals: Vec<Option<&[u8]>> = args.iter().map(|&id| ids.text(id)).collect();
                let c = outcome_code(call(test, &vals));
                memo.insert(args.clone(), c);
                c
            }
        };
        match code {
            1 => {}
            2 => alive[p] = false,
            _ => {
                alive[p] = false;
                dead[p] = true;
            }
        }
    }
}

/// Whether a block's structured metadata can change what the fields stage
/// computes for a plan grouped by labels, judged from the metadata names
/// alone (no row decoded): only when a metadata name is a label the plan
/// reads, or one a template of the block would extract (the extracted label
/// is then renamed). Rows handed back to the engine get their metadata
/// either way ([`run`] reads it for them).
pub(super) fn metadata_matters(
    ctx: &Context<'_>,
    ev: &BlockEval<'_, '_>,
    md_names: &[String],
) -> Result<bool, StorageError> {
    let stage = ctx.q.fields().expect("fields stage");
    let names = &ctx.q.labels.labels;
    Ok(md_names
        .iter()
        .any(|n| name_is_seen(n, names, stage, ev.infos.iter())))
}

/// Whether metadata name `n` is a label the plan reads (`names`) or one the
/// stage's `| json` extracts from one of `templates` (and so renames).
fn name_is_seen<'t>(
    n: &str,
    names: &[String],
    stage: &runakefli_model::plan::FieldStage,
    mut templates: impl Iterator<Item = &'t super::query::SharedTemplate>,
) -> bool {
    if names.iter().any(|l| l == n) {
        return true;
    }
    match &stage.parser {
        JsonParser::All => {
            let n_bits = super::query::LabelBits::of(n);
            templates.any(|info| {
                info.fields
                    .as_ref()
                    .is_some_and(|tf| tf.has_slot_label(n, &n_bits))
            })
        }
        JsonParser::Keys(params) => {
            params.iter().any(|p| p.label == n) && templates.any(|info| info.fields.is_some())
        }
        // Declined before (`execute_plan`).
        JsonParser::Logfmt { .. } | JsonParser::Base => false,
    }
}

/// Runs the fields stage over the kept rows of `ev` (`rows`), adding to
/// `agg`.
pub fn run<'e>(
    ctx: &'e Context<'_>,
    ev: &'e mut BlockEval<'_, '_>,
    agg: &mut Agg<'_>,
    rows: BlockRows<'e>,
    cache: &mut TemplateCache,
) -> Result<(), StorageError> {
    let mut bufs = std::mem::take(&mut cache.buffers);
    let done = run_with(ctx, ev, agg, rows, cache, &mut bufs);
    cache.buffers = bufs;
    done
}

/// [`run`] with the worker's block buffers.
fn run_with<'e>(
    ctx: &'e Context<'_>,
    ev: &'e mut BlockEval<'_, '_>,
    agg: &mut Agg<'_>,
    rows: BlockRows<'e>,
    cache: &mut TemplateCache,
    bufs: &mut BlockBuffers,
) -> Result<(), StorageError> {
    let BlockRows {
        keep,
        stream,
        ts,
        md,
    } = rows;
    let stage = ctx.q.fields().expect("fields stage");
    let lu = &ctx.q.labels;
    let names = &lu.labels;
    let labels: &Labels = &ctx.streams[stream].labels;
    let bytes = agg.plan.value == BucketValue::LineBytes;
    let infos = ev.infos.clone();
    let nt = infos.len();
    let reader = ev.r;
    let heads = reader.template_heads();
    let no_md: &[(String, String)] = &[];
    let row_md = |i: usize| md.map_or(no_md, |m| m.row(i));

    // Which templates the kept rows use, and whether any row has metadata.
    let stream_sig = ctx.name_sig(stream);
    let used = &mut bufs.used;
    used.clear();
    used.resize(nt, false);
    let (first, end) = (ev.first, ev.end);
    if nt == 1 {
        used[0] = super::row_mask::any_set(&keep[first..end]);
    } else if nt <= 64 {
        // Every row of the block kept: the templates its rows use, counted
        // when the directory was checked (the row templates stay packed).
        let whole = first == 0 && end == ev.rows() && super::row_mask::all_set(&keep[first..end]);
        let known = reader.templates_with_rows().filter(|_| whole);
        // Else a mask in a register: no store and reload of `used` per row.
        let mask = known.unwrap_or_else(|| {
            reader.row_templates()[first..end]
                .iter()
                .zip(&keep[first..end])
                .fold(0u64, |m, (&t, &k)| m | (u64::from(k) << (t & 63)))
        });
        for (t, u) in used.iter_mut().enumerate() {
            *u = mask >> t & 1 != 0;
        }
    } else {
        for (&t, &k) in reader.row_templates()[first..end]
            .iter()
            .zip(&keep[first..end])
        {
            used[t as usize] |= k;
        }
    }
    let used: &[bool] = used;
    // Most blocks have no metadata at all: no per-row look then.
    let any_md = md.is_some_and(|m| {
        !m.all_empty() && (ev.first..ev.end).any(|i| keep[i] && !m.row(i).is_empty())
    });
    let resolve = |cache: &mut TemplateCache, t: usize, sig: u64, mdr: &[(String, String)]| {
        infos[t].fields.as_ref().map(|tf| {
            cache
                .resolved
                .entry((heads[t].id, sig))
                .or_insert_with(|| {
                    let has = |n: &str| labels.get(n).is_some() || mdr.iter().any(|(k, _)| k == n);
                    Rc::new(resolve_labels(names, Some(tf), Some(stage), &has))
                })
                .clone()
        })
    };
    // Metadata the plan cannot see (a `detected_level` no label reads or
    // renames, rows not grouped by stream) is as good as none.
    let md_matters = any_md
        && md.is_some_and(|m| {
            matches!(agg.plan.group_by, GroupBy::Stream)
                || m.names().any(|n| {
                    let used_templates = (0..nt).filter(|&t| used[t]).map(|t| &infos[t]);
                    name_is_seen(n, names, stage, used_templates)
                })
        });
    // Uniform blocks (the common case): no metadata that matters, and every
    // template in use finds each label in the same place. Their rows need no
    // grouping.
    let uniform: Option<Vec<Placed>> = if md_matters {
        None
    } else {
        // Each used template's placements are compared with the first's
        // as they are made (no list per template).
        let mut common: Vec<Placed> = Vec::with_capacity(names.len());
        let mut templates = 0usize;
        let mut ok = true;
        'templates: for t in (0..nt).filter(|&t| used[t]) {
            let Some(res) = resolve(cache, t, stream_sig, no_md) else {
                ok = false;
                break;
            };
            let tf = infos[t].fields.as_ref().expect("resolved");
            for (j, src) in res.iter().enumerate() {
                let here = match src {
                    LabelSource::Json(slots) if slots.len() == 1 => Placed::Json {
                        col: heads[t].slots[slots[0]] as usize,
                        quoted: tf.slot_quoted[slots[0]],
                    },
                    LabelSource::Json(_) => {
                        ok = false;
                        break 'templates;
                    }
                    LabelSource::Key(Some(k)) => Placed::Key {
                        col: heads[t].slots[*k] as usize,
                        quoted: tf.slot_quoted[*k],
                    },
                    LabelSource::Key(None) => Placed::KeyAbsent,
                    LabelSource::Base => Placed::Base,
                };
                if templates == 0 {
                    common.push(here);
                } else if common[j] != here {
                    ok = false;
                    break 'templates;
                }
            }
            templates += 1;
        }
        (ok && templates > 0).then_some(common)
    };
    // Otherwise rows are grouped by where their labels come from:
    // (template, metadata names).
    let mut groups: Vec<RowGroup> = Vec::new();
    if uniform.is_none() {
        let mut group_index: HashMap<(usize, u64), usize> = HashMap::default();
        let mut plain_group: Vec<usize> = vec![usize::MAX; nt];
        let mut set_sig: Vec<Option<u64>> = vec![None; md.map_or(0, |m| m.set_count())];
        let row_tpl = reader.row_templates();
        for i in ev.first..ev.end {
            if !keep[i] {
                continue;
            }
            let t = row_tpl[i] as usize;
            let mdr = row_md(i);
            if mdr.is_empty() && plain_group[t] != usize::MAX {
                groups[plain_group[t]].2.push(i as u32);
                continue;
            }
            let sig = if mdr.is_empty() {
                stream_sig
            } else {
                // Rows share a few metadata sets: one signature per set.
                let set = md.map_or(0, |m| m.set_of(i));
                match set_sig[set] {
                    Some(s) => s,
                    None => {
                        let s = mdr.iter().fold(stream_sig ^ 0x6d65_7461, |h, (k, _)| {
                            (h ^ xxhash_rust::xxh3::xxh3_64(k.as_bytes()))
                                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                        });
                        set_sig[set] = Some(s);
                        s
                    }
                }
            };
            let g = match group_index.get(&(t, sig)) {
                Some(&g) => g,
                None => {
                    let res = resolve(cache, t, sig, mdr);
                    groups.push((t, res, Vec::new()));
                    group_index.insert((t, sig), groups.len() - 1);
                    groups.len() - 1
                }
            };
            if mdr.is_empty() {
                plain_group[t] = g;
            }
            groups[g].2.push(i as u32);
        }
    }

    if let Some(placed) = &uniform {
        if unwrap_decimals(ctx, ev, agg, rows, placed, used)? {
            return Ok(());
        }
    }

    // Columns labels may come from, and unquoted columns `| json` reads.
    let ncols = ev.r.column_count();
    let label_col = &mut bufs.label_col;
    label_col.clear();
    label_col.resize(ncols, false);
    for t in 0..nt {
        if !used[t] {
            continue;
        }
        if infos[t].fields.is_none() {
            continue;
        }
        for &k in &infos[t].label_slots {
            label_col[heads[t].slots[k] as usize] = true;
        }
        // Unquoted values are checked only where the header cannot vouch
        // for every value.
        for &k in &infos[t].unquoted_slots {
            let c = heads[t].slots[k] as usize;
            if column_facts(ev, c) & BAD != 0 {
                label_col[c] = true;
            }
        }
    }
    if bytes {
        decode_all_used(ev, keep)?;
    }
    for (c, _) in label_col.iter().enumerate().filter(|(_, &l)| l) {
        ev.values(c)?;
        ev.value_index(c);
    }
    let ev: &'e BlockEval<'_, '_> = ev;
    let mut col_base = std::mem::take(&mut bufs.col_base);
    col_base.clear();
    col_base.resize(ncols, u32::MAX);
    let mut values = relent(std::mem::take(&mut bufs.values));
    values.resize(ncols, None);
    let mut vidx = relent(std::mem::take(&mut bufs.vidx));
    vidx.resize(ncols, None);
    let mut ranges = std::mem::take(&mut bufs.ranges);
    ranges.clear();
    let mut stream_vals = relent(std::mem::take(&mut bufs.stream_vals));
    stream_vals
        .extend((0..names.len()).map(|j| ctx.stream_labels.get(stream, j).map(str::as_bytes)));
    let col_fact = &mut bufs.col_fact;
    col_fact.clear();
    col_fact.resize(ncols, 0);
    let mut next = 1 + names.len() as u32;
    for c in 0..ncols {
        if !label_col[c] {
            continue;
        }
        let v = ev.values_ro(c);
        col_base[c] = next;
        ranges.push((next, c));
        next += match v {
            Values::Const { .. } => 1,
            Values::Dict { ends, .. } => ends.len() as u32,
            Values::Flat { ends, .. } => ends.len() as u32,
        };
        values[c] = Some(v);
        vidx[c] = Some(ev.value_index_ro(c));
        col_fact[c] = column_facts(ev, c);
    }
    let mut ids = Ids {
        col_base,
        values,
        vidx,
        stream_vals,
        meta: HashMap::default(),
        meta_text: Vec::new(),
        meta_base: next,
        ranges,
    };
    let total = next as usize;
    if let Some(srcs) = &uniform {
        let templates = UsedTemplates {
            infos: &infos,
            heads,
            used,
        };
        if let Some(fast) = FastBlock::plan(ctx, agg, srcs, &ids, col_fact, templates, |c| {
            ev.value_index_is_identity(c)
        }) {
            let done = fast.run(ev, agg, rows, cache, &mut ids, bufs);
            ids.give_back(bufs);
            return done;
        }
    }
    let mut fact = Memo::new(total, 0u8);
    let mut get_fact = |ids: &Ids<'e>, id: u32| -> u8 {
        let f = fact.get(id);
        if *f == 0 {
            *f = facts(ids.text(id).unwrap_or(b""));
        }
        *f
    };

    // Label ids, a column of ids per label over the rows in group order.
    let n: usize = match &uniform {
        Some(_) => keep[ev.first..ev.end].iter().filter(|&&k| k).count(),
        None => groups.iter().map(|g| g.2.len()).sum(),
    };
    let mut order: Vec<u32> = Vec::with_capacity(n);
    let mut lab: Vec<Vec<u32>> = vec![Vec::with_capacity(n); names.len()];
    let mut dead = vec![false; n]; // residual
    if let Some(srcs) = &uniform {
        order.extend((ev.first..ev.end).filter(|&i| keep[i]).map(|i| i as u32));
        // Unquoted values `| json` would reject.
        for t in (0..nt).filter(|&t| used[t]) {
            for &k in &infos[t].unquoted_slots {
                let c = heads[t].slots[k] as usize;
                if ids.col_base[c] == u32::MAX || col_fact[c] & BAD == 0 {
                    continue;
                }
                let row_tpl = reader.row_templates();
                for (p, &r) in order.iter().enumerate() {
                    if row_tpl[r as usize] as usize == t
                        && get_fact(&ids, ids.of(c, r as usize)) & BAD != 0
                    {
                        dead[p] = true;
                    }
                }
            }
        }
        for (j, &placed) in srcs.iter().enumerate() {
            let out = &mut lab[j];
            match placed {
                Placed::Json { col: c, quoted } => {
                    let f = col_fact[c];
                    let check_escape = quoted && f & ESCAPED != 0;
                    let check_member = !quoted && f & MEMBER == 0;
                    let base = ids.col_base[c];
                    let vidx = ids.vidx[c].expect("prepared");
                    match ids.values[c].expect("prepared") {
                        Values::Dict { idx, .. } if !check_escape && !check_member => {
                            out.extend(
                                order.iter().map(|&r| base + idx[vidx[r as usize] as usize]),
                            );
                        }
                        _ => {
                            for (p, &r) in order.iter().enumerate() {
                                let mut id = ids.of(c, r as usize);
                                if check_escape && get_fact(&ids, id) & ESCAPED != 0 {
                                    dead[p] = true;
                                }
                                if check_member && get_fact(&ids, id) & MEMBER == 0 {
                                    id = ids.stream(j);
                                }
                                out.push(id);
                            }
                        }
                    }
                }
                Placed::Key { col: c, quoted } => {
                    for (p, &r) in order.iter().enumerate() {
                        let id = ids.of(c, r as usize);
                        let f = get_fact(&ids, id);
                        let id = if quoted {
                            if f & ESCAPED != 0 {
                                dead[p] = true;
                            }
                            id
                        } else if ids.text(id) == Some(&b"null"[..]) {
                            ids.intern(b"")
                        } else {
                            id
                        };
                        out.push(id);
                    }
                }
                Placed::KeyAbsent => {
                    let id = ids.intern(b"");
                    out.extend(std::iter::repeat_n(id, n));
                }
                Placed::Base => {
                    let id = ids.stream(j);
                    out.extend(std::iter::repeat_n(id, n));
                }
            }
        }
    }
    for (t, res, rows) in &groups {
        let start = order.len();
        order.extend_from_slice(rows);
        let Some(res) = res else {
            dead[start..start + rows.len()]
                .iter_mut()
                .for_each(|d| *d = true);
            for l in lab.iter_mut() {
                l.resize(start + rows.len(), ABSENT);
            }
            continue;
        };
        let t = *t;
        // Unquoted values `| json` would reject.
        for &k in &infos[t].unquoted_slots {
            let c = heads[t].slots[k] as usize;
            if ids.col_base[c] == u32::MAX || col_fact[c] & BAD == 0 {
                continue;
            }
            for (p, &r) in rows.iter().enumerate() {
                if get_fact(&ids, ids.of(c, r as usize)) & BAD != 0 {
                    dead[start + p] = true;
                }
            }
        }
        let slot_col = |k: usize| heads[t].slots[k] as usize;
        for (j, src) in res.iter().enumerate() {
            let out = &mut lab[j];
            match src {
                LabelSource::Base => {
                    for &r in rows {
                        let mdr = row_md(r as usize);
                        let id = match mdr.iter().rev().find(|(k, _)| *k == names[j]) {
                            Some((_, v)) => ids.intern(v.as_bytes()),
                            None => ids.stream(j),
                        };
                        out.push(id);
                    }
                }
                LabelSource::Json(slots) if slots.len() == 1 => {
                    let k = slots[0];
                    let c = slot_col(k);
                    let quoted = infos[t].fields.as_ref().expect("fields").slot_quoted[k];
                    let f = col_fact[c];
                    let check_escape = quoted && f & ESCAPED != 0;
                    let check_member = !quoted && f & MEMBER == 0;
                    for (p, &r) in rows.iter().enumerate() {
                        let mut id = ids.of(c, r as usize);
                        if check_escape && get_fact(&ids, id) & ESCAPED != 0 {
                            dead[start + p] = true;
                        }
                        if check_member && get_fact(&ids, id) & MEMBER == 0 {
                            let mdr = row_md(r as usize);
                            id = match mdr.iter().rev().find(|(k, _)| *k == names[j]) {
                                Some((_, v)) => ids.intern(v.as_bytes()),
                                None => ids.stream(j),
                            };
                        }
                        out.push(id);
                    }
                }
                LabelSource::Json(slots) => {
                    let tf = infos[t].fields.as_ref().expect("fields");
                    for (p, &r) in rows.iter().enumerate() {
                        let mut found = None;
                        for &k in slots {
                            let id = ids.of(slot_col(k), r as usize);
                            let f = get_fact(&ids, id);
                            if tf.slot_quoted[k] {
                                if f & ESCAPED != 0 {
                                    dead[start + p] = true;
                                }
                                found = Some(id);
                                break;
                            }
                            if f & MEMBER != 0 {
                                found = Some(id);
                                break;
                            }
                        }
                        let id = match found {
                            Some(id) => id,
                            None => {
                                let mdr = row_md(r as usize);
                                match mdr.iter().rev().find(|(k, _)| *k == names[j]) {
                                    Some((_, v)) => ids.intern(v.as_bytes()),
                                    None => ids.stream(j),
                                }
                            }
                        };
                        out.push(id);
                    }
                }
                LabelSource::Key(None) => {
                    let id = ids.intern(b"");
                    out.extend(std::iter::repeat_n(id, rows.len()));
                }
                LabelSource::Key(Some(k)) => {
                    let c = slot_col(*k);
                    let quoted = infos[t].fields.as_ref().expect("fields").slot_quoted[*k];
                    for (p, &r) in rows.iter().enumerate() {
                        let id = ids.of(c, r as usize);
                        let f = get_fact(&ids, id);
                        let id = if quoted {
                            if f & ESCAPED != 0 {
                                dead[start + p] = true;
                            }
                            id
                        } else if ids.text(id) == Some(&b"null"[..]) {
                            ids.intern(b"")
                        } else {
                            id
                        };
                        out.push(id);
                    }
                }
            }
        }
    }

    // Label filters.
    let mut alive: Vec<bool> = dead.iter().map(|d| !d).collect();
    let mut args: Vec<u32> = Vec::new();
    for (fi, f) in stage.filters.iter().enumerate() {
        let arg = &lu.filters[fi];
        if arg.len() == 1 {
            let mut memo = Memo::new(ids.meta_base as usize + ids.meta_text.len(), 0u8);
            if cache.filter_outcomes.len() <= fi {
                cache.filter_outcomes.resize_with(fi + 1, Default::default);
            }
            let outcomes = &mut cache.filter_outcomes[fi];
            let col = &lab[arg[0]];
            for p in 0..n {
                if !alive[p] {
                    continue;
                }
                let id = col[p];
                let m = memo.get(id);
                if *m == 0 {
                    *m = outcome_by_text(outcomes, &f.test, ids.text(id));
                }
                match *m {
                    1 => {}
                    2 => alive[p] = false,
                    _ => {
                        alive[p] = false;
                        dead[p] = true;
                    }
                }
            }
        } else {
            filter_by_label_tuples(
                &f.test,
                arg,
                &lab,
                &ids,
                &mut alive[..n],
                &mut dead[..n],
                &mut args,
            );
        }
    }

    // Samples.
    let mut sample: Vec<f64> = Vec::new();
    if let (Some(u), Some(j)) = (&stage.unwrap, lu.unwrap) {
        sample = vec![0.0; n];
        let mut memo: Memo<Option<Option<f64>>> =
            Memo::new(ids.meta_base as usize + ids.meta_text.len(), None);
        // A float unwrap of a short decimal is read from its bytes directly
        // (the same double the engine's conversion gives, see
        // `runakefli_model::number`).
        let float = u.conversion == runakefli_model::plan::UnwrapConversion::Float;
        let convert = |text: &[u8]| {
            float
                .then(|| runakefli_model::number::short_decimal(text))
                .flatten()
                .or_else(|| std::str::from_utf8(text).ok().and_then(|s| (u.convert)(s)))
        };
        for p in 0..n {
            if !alive[p] {
                continue;
            }
            let id = lab[j][p];
            let m = memo.get(id);
            if m.is_none() {
                *m = Some(convert(ids.text(id).unwrap_or(b"")));
            }
            match m.expect("set") {
                Some(v) => sample[p] = v,
                None => {
                    alive[p] = false;
                    dead[p] = true;
                }
            }
        }
        for (fi, f) in u.post_filters.iter().enumerate() {
            let arg = &lu.post_filters[fi];
            filter_by_label_tuples(
                &f.test,
                arg,
                &lab,
                &ids,
                &mut alive[..n],
                &mut dead[..n],
                &mut args,
            );
        }
    } else if bytes {
        sample = order
            .iter()
            .map(|&r| line_len(ev, r as usize) as f64)
            .collect();
    }

    // Groups and buckets.
    let mut group_memo: Memo<usize> =
        Memo::new(ids.meta_base as usize + ids.meta_text.len(), usize::MAX);
    let mut group_map: HashMap<Vec<u32>, usize> = HashMap::default();
    let mut constant: Option<usize> = None;
    for p in 0..n {
        if !alive[p] {
            continue;
        }
        let r = order[p] as usize;
        agg.stats.rows_kept += 1;
        agg.stats.rows_from_columns += 1;
        let g = match &agg.plan.group_by {
            GroupBy::Labels(_) if lu.group.is_empty() => {
                *constant.get_or_insert_with(|| agg.group(GroupKey::Labels(Vec::new())))
            }
            GroupBy::Labels(_) if lu.group.len() == 1 => {
                let id = lab[lu.group[0]][p];
                let slot = group_memo.get(id);
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
                args.extend(lu.group.iter().map(|&j| lab[j][p]));
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
            GroupBy::Stream => {
                agg.group(base_key(agg.plan, row_md(r), &ctx.streams[stream].labels))
            }
        };
        let v = if sample.is_empty() { 1.0 } else { sample[p] };
        agg.add(g, ts[r], v);
    }

    // Residual rows.
    if dead.iter().any(|&d| d) {
        let mut want = vec![false; keep.len()];
        for p in 0..n {
            if dead[p] {
                want[order[p] as usize] = true;
            }
        }
        let back = BlockRows {
            keep: &want,
            ..rows
        };
        hand_back(ctx, ev, agg, back)?;
    }
    ids.give_back(bufs);
    Ok(())
}

/// The float unwrap of a uniform block whose unwrapped label is one Decimal
/// column, read as numbers without printing their text
/// ([`BlockEval::decimal_numbers`]): no label filter before or after the
/// unwrap, and every grouping label the stream's (or absent). Each kept row
/// adds its value in row order, as the general path does. `false` (nothing
/// added) when the plan or block has another shape.
fn unwrap_decimals(
    ctx: &Context<'_>,
    ev: &mut BlockEval<'_, '_>,
    agg: &mut Agg<'_>,
    rows: BlockRows<'_>,
    placed: &[Placed],
    used: &[bool],
) -> Result<bool, StorageError> {
    let BlockRows {
        keep, stream, ts, ..
    } = rows;
    let Some(stage) = ctx.q.fields() else {
        return Ok(false);
    };
    let lu = &ctx.q.labels;
    let (Some(u), Some(j)) = (&stage.unwrap, lu.unwrap) else {
        return Ok(false);
    };
    if u.conversion != runakefli_model::plan::UnwrapConversion::Float
        || !u.post_filters.is_empty()
        || !lu.filters.is_empty()
        || !lu.post_filters.is_empty()
        || !matches!(agg.plan.group_by, GroupBy::Labels(_))
        || lu.group.iter().any(|&g| placed[g] != Placed::Base)
    {
        return Ok(false);
    }
    let c = match placed[j] {
        Placed::Json { col, .. } | Placed::Key { col, .. } => col,
        _ => return Ok(false),
    };
    // Unquoted values `| json` may reject make their rows errors.
    let heads = ev.r.template_heads();
    for t in (0..ev.infos.len()).filter(|&t| used[t]) {
        for &k in &ev.infos[t].unquoted_slots {
            if column_facts(ev, heads[t].slots[k] as usize) & BAD != 0 {
                return Ok(false);
            }
        }
    }
    let Some(nums) = ev.decimal_numbers(c)? else {
        return Ok(false);
    };
    let (first, end) = (ev.first, ev.end);
    let vidx = ev.value_index(c);
    if (first..end).any(|r| keep[r] && vidx[r] as usize >= nums.len()) {
        return Ok(false);
    }
    let g = agg.stream_group(ctx, stream);
    let kept = agg.add_rows(g, ts, first, end, |r| keep[r], |r| nums[vidx[r] as usize]);
    agg.stats.rows_kept += kept;
    agg.stats.rows_from_columns += kept;
    Ok(true)
}

/// The templates of a block's rows, and which of them the kept rows use.
#[derive(Clone, Copy)]
struct UsedTemplates<'t> {
    /// Per local template: what the query derived from it.
    infos: &'t [super::query::SharedTemplate],
    /// Per local template: its head (the column of each slot).
    heads: &'t [runakefli_storage::block::layout::TemplateHead],
    /// Per local template: some kept row uses it.
    used: &'t [bool],
}

/// Where the fused pass finds one label for every row of a uniform block.
#[derive(Clone, Copy)]
enum FastSource<'e> {
    /// The same id for every row.
    Const(u32),
    /// A dictionary column of `entries` entries: `base + idx[vidx[row]]`.
    Dict {
        base: u32,
        entries: u32,
        idx: &'e [u32],
        vidx: &'e [u32],
        /// Every row holds the column: `vidx[row] == row`.
        dense: bool,
    },
    /// A column of values spelled out: `base + vidx[row]`.
    Flat { base: u32, vidx: &'e [u32] },
}

impl FastSource<'_> {
    #[inline(always)]
    fn id(&self, r: usize) -> u32 {
        match *self {
            FastSource::Const(id) => id,
            FastSource::Dict {
                base, idx, vidx, ..
            } => base + idx[vidx[r] as usize],
            FastSource::Flat { base, vidx } => base + vidx[r],
        }
    }
}

/// Most dictionary entries a block's group label may have for the rows to
/// be counted per entry ([`Agg::count_rows_by_class`]): each bucket run
/// flushes one counter per entry.
const MAX_CLASSES: u32 = 64;

/// The common shape of a fields plan over a uniform block, run in one pass
/// over the rows with no per-row arrays: every label is the stream's, absent,
/// or one column's value that needs no per-value check (the header vouches
/// that no value needs unescaping, and unquoted ones are JSON scalars), no
/// unwrap, rows counted into groups of labels. Rows a label filter fails on
/// with an error go back to the engine, as on the general path.
struct FastBlock<'e, 'p> {
    /// The query's context.
    ctx: &'e Context<'p>,
    /// Per label of [`super::query::LabelUse::labels`].
    srcs: Vec<FastSource<'e>>,
}

impl<'e, 'p> FastBlock<'e, 'p> {
    /// The fused pass for this block, when the plan and block have its shape.
    fn plan(
        ctx: &'e Context<'p>,
        agg: &Agg<'_>,
        placed: &[Placed],
        ids: &Ids<'e>,
        col_fact: &[u8],
        templates: UsedTemplates<'_>,
        dense: impl Fn(usize) -> bool,
    ) -> Option<Self> {
        let UsedTemplates { infos, heads, used } = templates;
        let stage = ctx.q.fields()?;
        if stage.unwrap.is_some()
            || agg.plan.value != BucketValue::Count
            || !matches!(agg.plan.group_by, GroupBy::Labels(_))
            || ctx.q.labels.filters.iter().any(|f| f.len() != 1)
        {
            return None;
        }
        // Unquoted values `| json` might reject need a per-value look.
        for t in (0..infos.len()).filter(|&t| used[t]) {
            for &k in &infos[t].unquoted_slots {
                let c = heads[t].slots[k] as usize;
                if ids.col_base[c] != u32::MAX && col_fact[c] & BAD != 0 {
                    return None;
                }
            }
        }
        let mut srcs = Vec::with_capacity(placed.len());
        for (j, &p) in placed.iter().enumerate() {
            srcs.push(match p {
                Placed::Json { col: c, quoted } | Placed::Key { col: c, quoted } => {
                    let f = col_fact[c];
                    let key = matches!(p, Placed::Key { .. });
                    // Quoted values that may need unescaping, unquoted ones
                    // that may not be members (json) or may be `null` (a
                    // parameter reads it as ""): the general path.
                    if (quoted && f & ESCAPED != 0) || (!quoted && (key || f & MEMBER == 0)) {
                        return None;
                    }
                    let base = ids.col_base[c];
                    let vidx = ids.vidx[c]?;
                    match ids.values[c]? {
                        Values::Const { .. } => FastSource::Const(base),
                        Values::Dict { idx, ends, .. } => FastSource::Dict {
                            base,
                            entries: ends.len() as u32,
                            idx: idx.as_slice(),
                            vidx,
                            dense: dense(c) && idx.len() == vidx.len(),
                        },
                        Values::Flat { .. } => FastSource::Flat { base, vidx },
                    }
                }
                Placed::KeyAbsent => return None,
                Placed::Base => FastSource::Const(ids.stream(j)),
            });
        }
        Some(FastBlock { ctx, srcs })
    }

    /// Counts the kept rows that pass the label filters into their groups.
    fn run(
        self,
        ev: &'e BlockEval<'_, '_>,
        agg: &mut Agg<'_>,
        rows: BlockRows<'_>,
        cache: &mut TemplateCache,
        ids: &mut Ids<'e>,
        bufs: &mut BlockBuffers,
    ) -> Result<(), StorageError> {
        let ctx = self.ctx;
        let BlockRows {
            keep, stream, ts, ..
        } = rows;
        let stage = ctx.q.fields().expect("fields stage");
        let lu = &ctx.q.labels;
        let nids = ids.meta_base as usize;
        if cache.filter_outcomes.len() < stage.filters.len() {
            cache
                .filter_outcomes
                .resize_with(stage.filters.len(), Default::default);
        }
        // Per filter: its label's source and the outcome code per id.
        let filters: Vec<(FastSource<'e>, usize)> =
            lu.filters.iter().map(|a| (self.srcs[a[0]], a[0])).collect();
        // Outcome codes by (filter, id): `memo[fi * nids + id]`.
        let memo = &mut bufs.memo;
        memo.clear();
        memo.resize(nids * filters.len(), 0);
        let group: Vec<FastSource<'e>> = lu.group.iter().map(|&j| self.srcs[j]).collect();
        let constant_group = group.iter().all(|s| matches!(s, FastSource::Const(_)));
        let mut constant: Option<usize> = None;
        let mut group_memo: Vec<usize> = if group.len() == 1 && !constant_group {
            vec![usize::MAX; nids]
        } else {
            Vec::new()
        };
        let mut group_map: HashMap<Vec<u32>, usize> = HashMap::default();
        let mut args: Vec<u32> = Vec::new();
        let key_of = |ids: &Ids<'e>, args: &[u32]| {
            GroupKey::Labels(
                args.iter()
                    .map(|&id| {
                        ids.text(id)
                            .map(|b| String::from_utf8_lossy(b).into_owned())
                    })
                    .collect(),
            )
        };
        // Stream groups and at most one filter over few values (the common
        // case): every value's outcome is looked up before the rows, which
        // are then counted without a branch on the outcome.
        if constant_group && filters.len() <= 1 {
            let ids_of_filter = match filters.first() {
                None => Some(0..0),
                Some((FastSource::Const(id), _)) => Some(*id..*id + 1),
                Some((FastSource::Dict { base, entries, .. }, _)) => Some(*base..*base + *entries),
                Some((FastSource::Flat { .. }, _)) => None,
            };
            let ready = ids_of_filter.is_some_and(|range| {
                range.into_iter().all(|id| {
                    let code = outcome_by_text(
                        &mut cache.filter_outcomes[0],
                        &stage.filters[0].test,
                        ids.text(id),
                    );
                    memo[id as usize] = code;
                    code != 3
                })
            });
            if ready {
                let g = agg.stream_group(ctx, stream);
                let (first, end) = (ev.first, ev.end);
                let n = match filters.first().map(|f| f.0) {
                    None => agg.count_kept(g, ts, first, end, keep),
                    Some(FastSource::Const(id)) if memo[id as usize] == 1 => {
                        agg.count_kept(g, ts, first, end, keep)
                    }
                    Some(FastSource::Const(_)) => 0,
                    Some(FastSource::Dict {
                        base,
                        entries,
                        idx,
                        vidx,
                        dense,
                    }) => {
                        // Whether each of the block's entries passes.
                        let pass = &mut bufs.pass;
                        pass.clear();
                        pass.extend(
                            memo[base as usize..(base + entries) as usize]
                                .iter()
                                .map(|&m| m == 1),
                        );
                        if dense && super::row_mask::all_set(&keep[first..end]) {
                            // Every row in the window holds the column and is
                            // kept: row r's entry is idx[r] (no row look-ups).
                            match entry_marks::Wanted::passing(pass) {
                                Some(w) => {
                                    let marks = &mut bufs.marks;
                                    let n = entry_marks::mark(&idx[first..end], w.entries(), marks);
                                    agg.count_marked(g, ts, first, end, marks, n)
                                }
                                None => {
                                    agg.count_rows(g, ts, first, end, |r| pass[idx[r] as usize])
                                }
                            }
                        } else {
                            agg.count_rows(g, ts, first, end, |r| {
                                keep[r] && pass[idx[vidx[r] as usize] as usize]
                            })
                        }
                    }
                    Some(FastSource::Flat { .. }) => unreachable!("not ready"),
                };
                agg.stats.rows_kept += n;
                agg.stats.rows_from_columns += n;
                return Ok(());
            }
        }
        // No filter and one group label read from a dictionary column of
        // few entries (`sum by (level)` over `| json`): each row's entry is
        // its class, counted per bucket run without a per-row group look-up.
        if let (
            [],
            [FastSource::Dict {
                base,
                entries,
                idx,
                vidx,
                dense,
            }],
        ) = (&filters[..], &group[..])
        {
            let (base, entries, idx, vidx) = (*base, *entries, *idx, *vidx);
            if entries <= MAX_CLASSES {
                let mut groups = vec![usize::MAX; entries as usize];
                let (first, end) = (ev.first, ev.end);
                let key = |c| key_of(ids, &[base + c]);
                let n = if *dense && super::row_mask::all_set(&keep[first..end]) {
                    // Every row in the window holds the column and is kept.
                    agg.count_rows_by_class(ts, first, end, &mut groups, |r| idx[r], key)
                } else {
                    let class = |r: usize| {
                        if keep[r] {
                            idx[vidx[r] as usize]
                        } else {
                            entries
                        }
                    };
                    agg.count_rows_by_class(ts, first, end, &mut groups, class, key)
                };
                agg.stats.rows_kept += n;
                agg.stats.rows_from_columns += n;
                return Ok(());
            }
        }
        let mut dead: Vec<u32> = Vec::new();
        let mut kept = 0u64;
        'rows: for r in ev.first..ev.end {
            if !keep[r] {
                continue;
            }
            for (fi, (src, _)) in filters.iter().enumerate() {
                let id = src.id(r);
                let m = &mut memo[fi * nids + id as usize];
                if *m == 0 {
                    *m = outcome_by_text(
                        &mut cache.filter_outcomes[fi],
                        &stage.filters[fi].test,
                        ids.text(id),
                    );
                }
                match *m {
                    1 => {}
                    2 => continue 'rows,
                    _ => {
                        dead.push(r as u32);
                        continue 'rows;
                    }
                }
            }
            kept += 1;
            let g = if constant_group {
                // Each group label is the stream's (or absent): the
                // stream's group, looked up once per query and worker.
                *constant.get_or_insert_with(|| agg.stream_group(ctx, stream))
            } else if group.len() == 1 {
                let id = group[0].id(r);
                let slot = &mut group_memo[id as usize];
                if *slot == usize::MAX {
                    *slot = agg.group(key_of(ids, &[id]));
                }
                *slot
            } else {
                args.clear();
                args.extend(group.iter().map(|s| s.id(r)));
                match group_map.get(&args) {
                    Some(&g) => g,
                    None => {
                        let g = agg.group(key_of(ids, &args));
                        group_map.insert(args.clone(), g);
                        g
                    }
                }
            };
            agg.add(g, ts[r], 1.0);
        }
        agg.stats.rows_kept += kept;
        agg.stats.rows_from_columns += kept;
        if dead.is_empty() {
            return Ok(());
        }
        // Rows a filter failed on with an error: the engine evaluates them whole.
        let mut want = vec![false; keep.len()];
        for &r in &dead {
            want[r as usize] = true;
        }
        let back = BlockRows {
            keep: &want,
            ..rows
        };
        hand_back(ctx, ev, agg, back)?;
        Ok(())
    }
}
