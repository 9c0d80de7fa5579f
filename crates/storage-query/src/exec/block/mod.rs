//! A plan's pieces on one version-2 columnar block, split by the stages a
//! block goes through when a query reads it:
//!
//! - [`prune`]: whether the block may match at all, from its bloom, the
//!   part's kept needle verdicts and the columns' headers;
//! - opening it (here): the rows in the time range and the query's view
//!   of each template ([`BlockEval::open`]);
//! - [`columns`]: reading a column's values and each row's value index;
//! - [`value_tests`]: a value test's verdict per row, memoized per
//!   dictionary entry (shared dictionaries across blocks) or answered on
//!   packed hex;
//! - [`needle_rows`]: the rows whose line contains a needle, from the
//!   templates and column verdicts (see `needle.rs`);
//! - [`line_filters`]: the row mask of the query's line filters, with lines
//!   rebuilt only for the rows that need them.
//!
//! The fields stage reads slot values per row through [`columns`].

mod columns;
mod line_filters;
mod needle_rows;
mod prune;
mod value_tests;

pub use prune::header_if_may_match;

use super::decoded_cache::DecodedCache;
use super::query::{CompiledQuery, SharedTemplate};
use columns::ValueIndex;
use needle_rows::ContainsScratch;
use prune::ProbeStats;
use runakefli_storage::block::encoding::Values;
use runakefli_storage::block::hash::FastMap as HashMap;
use runakefli_storage::block::BlockReader;
use runakefli_storage::StorageError;
use std::sync::Arc;
use value_tests::{SharedColumn, SharedMemo};

/// Template infos a worker has derived so far, by template id, and where
/// `| json` finds each label, by template id and base label names.
#[derive(Default)]
pub struct TemplateCache {
    map: HashMap<u128, SharedTemplate>,
    /// Label sources by (template id, signature of the base label names).
    pub resolved: HashMap<(u128, u64), std::rc::Rc<Vec<super::query::LabelSource>>>,
    /// Answers of value tests on the entries of parts' shared dictionaries.
    shared: std::rc::Rc<std::cell::RefCell<SharedMemo>>,
    /// How well each line filter's bloom probes prune.
    probes: ProbeStats,
    /// `0, 1, 2, …`: the value index of columns every row holds.
    identity: std::rc::Rc<std::cell::RefCell<std::rc::Rc<[u32]>>>,
    /// Buffers [`BlockEval::contains`] reuses from block to block.
    scratch: std::rc::Rc<std::cell::RefCell<ContainsScratch>>,
    /// Vectors of the worker's last block evaluation, for its next.
    spare: std::rc::Rc<std::cell::RefCell<EvalSpare>>,
    /// Per label filter of the fields stage that reads one label: its
    /// outcome code by the label's text (`None`: absent), kept from block
    /// to block, since a filter's outcome depends on the value alone.
    pub filter_outcomes: Vec<FilterOutcomes>,
    /// Per (part serial, needle probe): the part's kept block verdicts.
    verdicts: HashMap<(u64, usize), runakefli_storage::part::needle_memo::Verdicts>,
    /// Per-block buffers a worker reuses from block to block (a grouped
    /// count over 5,000 small blocks spent ~9 % of its time allocating and
    /// freeing them).
    pub buffers: BlockBuffers,
}

/// Buffers of one block's evaluation, reused by the next block of the
/// worker: each is cleared and resized before use.
#[derive(Default)]
pub struct BlockBuffers {
    /// Rows the line filters keep.
    pub keep: Vec<bool>,
    /// Templates the kept rows use.
    pub used: Vec<bool>,
    /// Columns labels may come from.
    pub label_col: Vec<bool>,
    /// What each column's header says about its values.
    pub col_fact: Vec<u8>,
    // A fields plan's per-column and per-label tables (`fields::Ids`),
    // empty between blocks: their allocations are kept, not their borrows
    // (a block's references are dropped with it, see [`relent`]).
    /// Per column: the first value id (`fields::Ids::col_base`).
    pub col_base: Vec<u32>,
    /// Label columns in id order (`fields::Ids::ranges`).
    pub ranges: Vec<(u32, usize)>,
    /// Per column: its decoded values, re-lent to each block.
    pub values: Vec<Option<&'static Values>>,
    /// Per column: row → value index, re-lent to each block.
    pub vidx: Vec<Option<&'static [u32]>>,
    /// Per label: the stream label's value, re-lent to each block.
    pub stream_vals: Vec<Option<&'static [u8]>>,
    /// A fields plan's label filter outcomes per (filter, value id).
    pub memo: Vec<u8>,
    /// Whether each dictionary entry of a block's filtered column passes.
    pub pass: Vec<bool>,
    /// Rows whose entry passes, a bit each (`entry_marks`).
    pub marks: Vec<u64>,
}

/// An empty vector of references with another lifetime, in `v`'s
/// allocation (the standard library collects a mapped `IntoIter` of a type
/// of the same size and alignment in place; were it not to, this would
/// allocate, which is merely slower).
pub fn relent<'b, T: ?Sized>(mut v: Vec<Option<&T>>) -> Vec<Option<&'b T>> {
    v.clear();
    v.into_iter().map(|_| None).collect()
}

/// One label filter's outcome codes, by the text of the label it reads.
#[derive(Default)]
pub struct FilterOutcomes {
    /// When the label is absent.
    pub absent: Option<u8>,
    /// By the label's text.
    pub by_text: HashMap<Vec<u8>, u8>,
}

impl FilterOutcomes {
    /// The code known for `text`.
    pub fn get(&self, text: Option<&[u8]>) -> Option<u8> {
        match text {
            None => self.absent,
            Some(t) => self.by_text.get(t).copied(),
        }
    }

    /// Most texts remembered: a filter on a label with a value per row
    /// (an id) would otherwise keep every value the query meets.
    pub const MAX_TEXTS: usize = 4096;

    /// Remembers `code` for `text` (while fewer than [`Self::MAX_TEXTS`]
    /// texts are kept).
    pub fn insert(&mut self, text: Option<&[u8]>, code: u8) {
        match text {
            None => self.absent = Some(code),
            Some(t) if self.by_text.len() < Self::MAX_TEXTS => {
                self.by_text.insert(t.to_vec(), code);
            }
            Some(_) => {}
        }
    }
}

/// Row templates of a block from some row on ([`BlockEval::tail_templates`]).
pub enum TailTemplates<'r> {
    /// Those of rows `.0..`, read row by row.
    From(usize, std::rc::Rc<[u32]>),
    /// Every row's.
    All(&'r [u32]),
}

impl TailTemplates<'_> {
    /// The first row whose template is given.
    pub fn base(&self) -> usize {
        match self {
            TailTemplates::From(b, _) => *b,
            TailTemplates::All(_) => 0,
        }
    }

    /// The templates of rows [`Self::base`]`..`.
    pub fn templates(&self) -> &[u32] {
        match self {
            TailTemplates::From(_, t) => t,
            TailTemplates::All(t) => t,
        }
    }
}

/// One block being evaluated.
pub struct BlockEval<'r, 'a> {
    /// The block.
    pub r: &'r BlockReader<'a>,
    /// Per local template: what the query derived from it.
    pub infos: Vec<SharedTemplate>,
    /// First row in the time range.
    pub first: usize,
    /// One past the last row in the time range.
    pub end: usize,
    values: Vec<Option<std::sync::Arc<Values>>>,
    /// The decoded cache and (part serial, block index): where decoded
    /// columns are kept across queries (see [`super::decoded_cache`]);
    /// `None`: not kept.
    cache_key: Option<(&'r DecodedCache, u64, u32)>,
    /// Decoded columns enter the decoded cache.
    admit: bool,
    vidx: Vec<Option<ValueIndex>>,
    /// Per column: a bit per template (at most 64) that holds it, made on
    /// first use; `None` inside when the block has more templates.
    tpl_masks: std::cell::OnceCell<Option<Vec<u64>>>,
    /// The templates of rows `first..`, read row by row (see
    /// [`Self::tail_templates`]); `None` inside: the block's are unpacked.
    tail_tpl: std::cell::OnceCell<Option<std::rc::Rc<[u32]>>>,
    identity: std::rc::Rc<std::cell::RefCell<std::rc::Rc<[u32]>>>,
    /// The shared columns evaluated by entry, by column (a block evaluates
    /// a few: a slot per column would be ~300 bytes each, allocated and
    /// freed with every block).
    shared: Vec<(usize, SharedColumn<'a>)>,
    memo: std::rc::Rc<std::cell::RefCell<SharedMemo>>,
    scratch: std::rc::Rc<std::cell::RefCell<ContainsScratch>>,
    /// The vectors of the worker's last block, for this one's (see [`EvalSpare`]).
    spare: std::rc::Rc<std::cell::RefCell<EvalSpare>>,
    /// The part and block index whose column verdicts are kept across
    /// queries ([`runakefli_storage::part::Part::column_verdicts`]); `None`: not kept.
    verdicts_in: Option<(&'a runakefli_storage::part::Part, u32)>,
}

impl Drop for BlockEval<'_, '_> {
    /// Hands the block's vectors to the worker's next block (emptied: the
    /// decoded columns they name are released here).
    fn drop(&mut self) {
        let Ok(mut sp) = self.spare.try_borrow_mut() else {
            return;
        };
        for v in self.vidx.drain(..).flatten() {
            if let ValueIndex::Map(m) = v {
                if sp.maps.len() < SPARE_MAPS {
                    sp.maps.push(m);
                }
            }
        }
        self.values.clear();
        self.infos.clear();
        sp.vidx = std::mem::take(&mut self.vidx);
        sp.values = std::mem::take(&mut self.values);
        sp.infos = std::mem::take(&mut self.infos);
        if let Some(Some(m)) = self.tpl_masks.take() {
            sp.masks = m;
        }
    }
}

/// Value-index maps a worker keeps for its next block: a block maps one or
/// two columns, rarely more.
const SPARE_MAPS: usize = 4;

/// The vectors of a worker's last [`BlockEval`], reused by its next: a log
/// query opens a block per stream (~4,000 at 2M lines) and evaluates a
/// few rows of each, so allocating and freeing each block's vectors was a
/// visible share of its time (malloc and free ~14 % of q14's first-run
/// instructions, callgrind).
#[derive(Default)]
struct EvalSpare {
    infos: Vec<SharedTemplate>,
    values: Vec<Option<std::sync::Arc<Values>>>,
    vidx: Vec<Option<ValueIndex>>,
    /// Emptied [`ValueIndex::Map`] vectors.
    maps: Vec<Vec<u32>>,
    /// Per template: it holds the column being indexed.
    holds: Vec<bool>,
    /// Per column: the templates that hold it, as bits.
    masks: Vec<u64>,
    /// Per value of a packed-hex column: it equals a needle's stretch.
    hex_equal: Vec<bool>,
}

impl<'r, 'a> BlockEval<'r, 'a> {
    /// Prepares `r` for the query; `None` when no row lies in `[lo, hi]`.
    pub fn open(
        r: &'r BlockReader<'a>,
        q: &CompiledQuery<'_>,
        cache: &mut TemplateCache,
        lo: i64,
        hi: i64,
    ) -> Result<Option<Self>, StorageError> {
        let (min_ts, max_ts) = r.time_range();
        let first = r.first_row_from(lo);
        let end = if hi >= max_ts {
            r.rows()
        } else if hi < min_ts {
            0
        } else {
            r.timestamps().partition_point(|&t| t <= hi)
        };
        if first >= end {
            return Ok(None);
        }
        let heads = r.template_heads();
        let ncols = r.column_count();
        // The vectors of the worker's previous block (see [`EvalSpare`]).
        let (mut infos, mut values, mut vidx) = {
            let mut sp = cache.spare.borrow_mut();
            (
                std::mem::take(&mut sp.infos),
                std::mem::take(&mut sp.values),
                std::mem::take(&mut sp.vidx),
            )
        };
        infos.clear();
        values.clear();
        values.resize_with(ncols, || None);
        vidx.clear();
        vidx.resize_with(ncols, || None);
        for h in heads {
            match cache.map.get(&h.id) {
                Some(info) => infos.push(info.clone()),
                None => break,
            }
        }
        if infos.len() < heads.len() {
            // A template new to this worker: derived once, kept for later blocks.
            let templates = r.templates()?;
            for (h, t) in heads.iter().zip(templates).skip(infos.len()) {
                let info = cache
                    .map
                    .entry(h.id)
                    .or_insert_with(|| Arc::new(q.template_info(t)));
                infos.push(info.clone());
            }
        }
        Ok(Some(BlockEval {
            r,
            infos,
            first,
            end,
            values,
            cache_key: None,
            admit: false,
            vidx,
            tpl_masks: std::cell::OnceCell::new(),
            tail_tpl: std::cell::OnceCell::new(),
            identity: cache.identity.clone(),
            shared: Vec::new(),
            memo: cache.shared.clone(),
            scratch: cache.scratch.clone(),
            spare: cache.spare.clone(),
            verdicts_in: None,
        }))
    }

    /// Rows of the block.
    pub fn rows(&self) -> usize {
        self.r.rows()
    }

    /// The row templates from row `base` on (row `r`'s is `tpl[r - base]`):
    /// `base` is [`Self::first`] when they are read row by row — the block
    /// was opened from a checked directory without unpacking its templates
    /// and the time range holds at most one row in eight, as for most
    /// blocks a log query past its cutoff opens (unpacking every row's cost
    /// ~5 % of such a query's first run after a restart, callgrind q14) —
    /// else 0 and every row's.
    pub fn tail_templates(&self) -> TailTemplates<'r> {
        let rows = self.rows();
        let tail = self.tail_tpl.get_or_init(|| {
            (self.r.reads_templates_by_row() && (rows - self.first) * 8 <= rows)
                .then(|| (self.first..rows).map(|r| self.r.row_template(r)).collect())
        });
        let r: &'r BlockReader<'a> = self.r;
        match tail {
            Some(t) => TailTemplates::From(self.first, t.clone()),
            None => TailTemplates::All(r.row_templates()),
        }
    }

    /// The line bytes of the rows in the time range, estimated from the
    /// block's total in proportion to the rows (exact for whole blocks).
    pub fn range_line_bytes_estimate(&self) -> u64 {
        let rows = self.rows().max(1) as u64;
        self.r.header().line_bytes * (self.end - self.first) as u64 / rows
    }

    /// Reads the columns kept in `cache` for block `block` of the part with
    /// serial `part`, and keeps those it decodes there when `admit`.
    pub fn keep_decoded_as(&mut self, cache: &'r DecodedCache, part: u64, block: u32, admit: bool) {
        self.cache_key = Some((cache, part, block));
        self.admit = admit;
    }

    /// The block's filter: from its copy in a filter group when the block
    /// is known by its part and in one (see `Part::bloom_view`), else its
    /// bytes.
    pub(super) fn bloom_view(&self) -> runakefli_storage::block::bloom::Bloom<'r> {
        let header = self.r.header();
        match self.verdicts_in {
            Some((part, block)) => part.bloom_view(block, header, self.r.src()),
            None if header.version >= 2 => {
                runakefli_storage::block::bloom::Bloom::new(header.bloom_bytes(self.r.src()))
            }
            None => runakefli_storage::block::bloom::Bloom::new(&[]),
        }
    }

    /// Keeps what each column of this block (block `block` of `part`)
    /// answers to a line filter's column tests in the part, so that the
    /// next query asking the same needle judges the column by one byte
    /// instead of its brief, head and bloom.
    pub fn keep_verdicts_in(&mut self, part: &'a runakefli_storage::part::Part, block: u32) {
        self.verdicts_in = Some((part, block));
    }
}
