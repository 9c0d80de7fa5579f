//! A plan's pieces on one version-2 columnar block: the rows in the time
//! range, exact line-filter masks computed from templates and column values
//! (see `needle.rs`), lines rebuilt only for the rows that need them, and
//! per-row access to slot values for the fields stage.

use super::decoded_cache::DecodedCache;
use super::needle::{TestKind, ValueTest};
use super::query::{CompiledQuery, FilterPlan, SharedTemplate};
use runakefli_storage::block::digits::{skeleton_pieces, skeleton_safe};
use runakefli_storage::block::encoding::{Encoding, Values};
use runakefli_storage::block::hash::FastMap as HashMap;
use runakefli_storage::block::hex_search::Anchor;
use runakefli_storage::block::layout::ColumnKind;
use runakefli_storage::block::prune::{LazySources, NeedleFrags};
use runakefli_storage::block::reader::SharedIndexView;
use runakefli_storage::block::shared::SharedDict;
use runakefli_storage::block::BlockReader;
use runakefli_storage::StorageError;
use std::sync::Arc;

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

/// Per row of a block: the index of its value in one column.
enum ValueIndex {
    /// Row `i` holds value `i` (the first `rows` of the shared identity).
    Identity(std::rc::Rc<[u32]>, usize),
    /// Per row (`u32::MAX`: the row's template lacks the column).
    Map(Vec<u32>),
}

impl ValueIndex {
    fn as_slice(&self) -> &[u32] {
        match self {
            ValueIndex::Identity(id, rows) => &id[..*rows],
            ValueIndex::Map(v) => v,
        }
    }
}

/// The value positions of rows `[first, end)` of `rows` in a column held by
/// the rows whose template has `holds[t]`, over `total` values (the
/// column's count, which the block's directory check matched with the
/// templates' rows), given the templates of rows `base..rows` (`base` at
/// most `first`): one entry per row, `u32::MAX` for rows lacking the column
/// and for every row outside the window, which a [`BlockEval`] never reads.
/// The values before the window are counted from whichever end is nearer
/// (from the back only, when the front rows' templates are not given): a
/// log query past its cutoff opens the last few rows of most blocks, and
/// numbering every row cost ~2,400 instructions a column and block
/// (callgrind, q14).
#[allow(clippy::too_many_arguments)]
fn window_value_index(
    mut out: Vec<u32>,
    rows: usize,
    base: usize,
    tpl: &[u32],
    holds: &[bool],
    total: usize,
    first: usize,
    end: usize,
) -> Vec<u32> {
    out.clear();
    out.resize(rows, u32::MAX);
    let (first, end) = (first.min(rows), end.min(rows));
    if first >= end || base > first || base + tpl.len() != rows {
        return out;
    }
    let held = |r: &[u32]| r.iter().filter(|&&t| holds[t as usize]).count();
    let before = if base == 0 && first <= rows - first {
        held(&tpl[..first])
    } else {
        total.saturating_sub(held(&tpl[first - base..]))
    };
    let mut next = before as u32;
    for (o, &t) in out[first..end]
        .iter_mut()
        .zip(&tpl[first - base..end - base])
    {
        if holds[t as usize] {
            *o = next;
            next += 1;
        }
    }
    out
}

/// How the rows of one template are decided for one needle.
#[derive(Clone, Copy)]
enum TplNeedle {
    /// Their lines are rebuilt and searched.
    Rebuild,
    /// Every row holds the needle.
    Always,
    /// A row does when every test of one alternative holds: alternatives
    /// `first..end` of [`ContainsScratch::alt_ends`].
    Alts { first: usize, end: usize },
    /// No alternative is possible in this block: no row holds the needle.
    Never,
    /// One alternative of one test: a row does when tester `id` holds.
    One(usize),
}

/// Buffers of [`BlockEval::contains`], kept per worker so that a block
/// costs no allocation for its needle plan.
#[derive(Default)]
struct ContainsScratch {
    /// The (column, test) pairs the block's alternatives use.
    testers: Vec<(usize, ValueTest)>,
    /// Per column: the tester id of each test met on it (`usize::MAX`: the
    /// column cannot pass); a few tests per column at most, so a short list
    /// searched in order beats hashing (this is looked up per template slot
    /// of every block).
    tester_of: Vec<Vec<(ValueTest, usize)>>,
    /// Columns with entries in `tester_of`, to clear.
    touched: Vec<usize>,
    /// Per template.
    tpl: Vec<TplNeedle>,
    /// The tester ids of every alternative, concatenated.
    alt_ids: Vec<usize>,
    /// Where each alternative ends in `alt_ids`.
    alt_ends: Vec<usize>,
    /// Rows still open.
    want: Vec<bool>,
    /// Per template: some open row uses it.
    used: Vec<bool>,
    /// Per tester: its verdict on each row (emptied after each block).
    verdicts: Vec<Vec<u8>>,
    /// Verdict buffers of earlier blocks, for the next (a block's testers
    /// each allocated and freed one before).
    spare_verdicts: Vec<Vec<u8>>,
    /// Needles' fragments by (needle, boundary mask): few per query, never
    /// cleared (the scratch lives for one query).
    needle_frags: Vec<(usize, std::rc::Rc<NeedleFrags>)>,
    /// Rows holding a needle and rows that may pass a regexp, for
    /// [`BlockEval::exact_filters`] (taken out while it runs).
    hit: Vec<bool>,
    maybe: Vec<bool>,
    /// The [`alphabet`](runakefli_storage::block::tokens::alphabet) of each needle
    /// stretch met, as (needle, start, end, alphabet): constant for the
    /// query, so worked out once rather than per block and column. Never
    /// cleared (the scratch lives for one query).
    alphabets: Vec<(usize, usize, usize, u64)>,
    /// The kept column verdicts of each (part serial, needle, test) met:
    /// few per query, never cleared (the scratch lives for one query).
    column_verdicts: Vec<(
        (u64, usize, ValueTest),
        runakefli_storage::part::needle_memo::Verdicts,
    )>,
}

impl ContainsScratch {
    /// The verdicts `part` keeps for needle `n`'s test `test`.
    fn column_verdicts(
        &mut self,
        part: &runakefli_storage::part::Part,
        n: usize,
        test: &ValueTest,
        needle: &[u8],
    ) -> runakefli_storage::part::needle_memo::Verdicts {
        let key = (part.serial(), n, *test);
        if let Some((_, v)) = self.column_verdicts.iter().find(|(k, _)| *k == key) {
            return v.clone();
        }
        // The needle (UTF-8: no 0xff byte), then the test.
        let mut bytes = needle.to_vec();
        bytes.push(0xff);
        bytes.extend_from_slice(&(test.start as u64).to_le_bytes());
        bytes.extend_from_slice(&(test.end as u64).to_le_bytes());
        bytes.push(test.kind as u8);
        let v = part.column_verdicts(&bytes);
        self.column_verdicts.push((key, v.clone()));
        v
    }

    /// Needle `n` (`needle`: its bytes) cut into fragments for blocks like
    /// `header`'s: worked out once per boundary mask met, not per block.
    fn needle_frags(
        &mut self,
        n: usize,
        header: &runakefli_storage::block::layout::BlockHeader<'_>,
        needle: &[u8],
    ) -> std::rc::Rc<NeedleFrags> {
        if let Some((_, f)) = self
            .needle_frags
            .iter()
            .find(|(k, f)| *k == n && f.fits(header))
        {
            return f.clone();
        }
        let f = std::rc::Rc::new(NeedleFrags::new(header, needle));
        self.needle_frags.push((n, f.clone()));
        f
    }

    /// The alphabet of needle `n`'s stretch `test` (`needle`: its bytes).
    fn stretch_alphabet(&mut self, n: usize, test: &ValueTest, needle: &[u8]) -> u64 {
        let key = (n, test.start, test.end);
        if let Some(&(.., a)) = self.alphabets.iter().find(|e| (e.0, e.1, e.2) == key) {
            return a;
        }
        let a = runakefli_storage::block::tokens::alphabet(&needle[test.start..test.end]);
        self.alphabets.push((n, test.start, test.end, a));
        a
    }

    fn clear(&mut self) {
        self.testers.clear();
        for c in self.touched.drain(..) {
            self.tester_of[c].clear();
        }
        self.tpl.clear();
        self.alt_ids.clear();
        self.alt_ends.clear();
    }
}

/// What a memoized value test is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoKey {
    /// Needle `n`'s test on a stretch of it.
    Needle(usize, ValueTest),
    /// The rest of split regexp filter `index`.
    Regex(usize),
}

/// Per (shared dictionary, test): by entry, 0 not tested yet, 1 false, 2
/// true. A worker's queries test each entry of a part's dictionary once,
/// however many blocks refer to it. Dictionaries are keyed by address: the
/// parts a query reads stay open while it runs.
#[derive(Default)]
pub struct SharedMemo {
    map: HashMap<(usize, MemoKey), Vec<u8>>,
    /// Per (dictionary address, hash of a stretch): the stretch and whether
    /// some entry of the dictionary may contain it ([`SharedDict::may_hold`]).
    holds: HashMap<(usize, u64), StretchVerdict>,
}

/// A stretch of a needle, and whether a dictionary may hold it.
type StretchVerdict = (Box<[u8]>, bool);

impl SharedMemo {
    /// Whether some entry of `dict` may contain `s`, searched once per
    /// worker and dictionary.
    fn dict_may_hold(&mut self, dict: &SharedDict, s: &[u8]) -> bool {
        let key = (
            dict as *const SharedDict as usize,
            xxhash_rust::xxh3::xxh3_64(s),
        );
        match self.holds.get(&key) {
            Some((k, v)) if &**k == s => *v,
            Some(_) => dict.may_hold(s),
            None => {
                let v = dict.may_hold(s);
                self.holds.insert(key, (s.into(), v));
                v
            }
        }
    }
}

/// A shared column's index part, and its own strings once needed.
struct SharedColumn<'a> {
    dict: &'a SharedDict,
    index: SharedIndexView<'a>,
    locals: Option<(Vec<u8>, Vec<u32>)>,
}

/// A verdict on an entry of a Skeleton column that its rows' values decide.
const MAYBE: u8 = 3;

/// How [`BlockEval::eval_column`] may judge a test on a Skeleton column.
#[derive(Clone, Copy)]
pub enum OnSkeletons<'a> {
    /// Not at all: the column's values are rebuilt and tested.
    Rebuild,
    /// On each entry: the test gives a value and its skeleton one verdict.
    ByEntry,
    /// A value whose skeleton lacks one of these pieces fails; the rows of
    /// the other entries are rebuilt and tested.
    Pieces(&'a [&'a [u8]]),
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

/// What is known of a row and one regexp filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decided {
    /// The regexp cannot match.
    No,
    /// It matches.
    Yes,
    /// The rebuilt line must tell.
    Maybe,
}

/// A regexp filter left to rebuilt lines.
pub struct PendingTest {
    /// Position in the plan's line filters.
    index: usize,
    /// `!~`.
    negated: bool,
    /// Per row: known not to match, known to match, or to be tested.
    cand: Vec<Decided>,
}

/// Per (column, test): memoized answers by dictionary entry or value.
struct Tester<'n> {
    test: ValueTest,
    /// The searcher for [`TestKind::Contains`], built on first use (most
    /// values are judged from a memo and never searched).
    finder: std::cell::OnceCell<memchr::memmem::Finder<'n>>,
}

impl<'n> Tester<'n> {
    #[inline]
    fn holds(&self, needle: &'n [u8], v: &[u8]) -> bool {
        if self.test.kind != TestKind::Contains {
            return self.test.holds(needle, v);
        }
        self.finder
            .get_or_init(|| memchr::memmem::Finder::new(&needle[self.test.start..self.test.end]))
            .find(v)
            .is_some()
    }
}

/// Blocks a filter's bloom probes must judge before their pass rate counts.
const PROBE_TRIAL: u32 = 64;

/// Per line filter of a query, on one worker: how many blocks its bloom
/// probes judged and how many they let through. Probes that let nearly
/// every block through (a common word) cost more than they save, so they
/// stop; the exact evaluation of the block decides anyway.
#[derive(Default)]
pub struct ProbeStats {
    judged: Vec<(u32, u32)>,
}

impl ProbeStats {
    fn reserve(&mut self, filters: usize) {
        if self.judged.len() < filters {
            self.judged.resize(filters, (0, 0));
        }
    }

    fn worth_probing(&self, f: usize) -> bool {
        let (judged, passed) = self.judged[f];
        judged < PROBE_TRIAL || u64::from(passed) * 16 < u64::from(judged) * 15
    }

    fn note(&mut self, f: usize, passed: bool) {
        let s = &mut self.judged[f];
        s.0 = s.0.saturating_add(1);
        s.1 = s.1.saturating_add(u32::from(passed));
    }
}

/// How a packed-hex column, every value `len` bytes long, answers a value
/// test of kind `kind` of a needle stretch `stretch` bytes long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HexAnswer {
    /// A value passes exactly when it equals the stretch.
    Equal,
    /// No value passes.
    Nothing,
    /// A shorter stretch: a value passes when the stretch lies in it where
    /// the anchor says, searched in the packed values
    /// ([`HexLayout::values_holding`](runakefli_storage::block::text::HexLayout)).
    Within(Anchor),
}

fn hex_answer(len: usize, kind: TestKind, stretch: usize) -> HexAnswer {
    if stretch == len {
        HexAnswer::Equal
    } else if stretch > len {
        HexAnswer::Nothing
    } else {
        match kind {
            TestKind::Equals => HexAnswer::Nothing,
            TestKind::Contains => HexAnswer::Within(Anchor::Anywhere),
            TestKind::StartsWith => HexAnswer::Within(Anchor::Start),
            TestKind::EndsWith => HexAnswer::Within(Anchor::End),
        }
    }
}

/// A columnar block's header, when the query's line filters can match
/// any of its rows (judged from the bloom and column facts alone); `None`
/// when they cannot.
pub fn header_if_may_match<'p>(
    q: &CompiledQuery<'_>,
    part: &'p runakefli_storage::part::Part,
    b: &runakefli_storage::part::BlockRef,
    cache: &mut TemplateCache,
) -> Result<Option<runakefli_storage::block::HeaderRef<'p>>, StorageError> {
    use runakefli_storage::part::needle_memo;
    let h = part.header(b)?;
    let stats = &mut cache.probes;
    stats.reserve(q.filters.len());
    let probed = |stats: &ProbeStats, f: usize| {
        matches!(
            q.filters[f],
            FilterPlan::AnyOf { negated: false, .. } | FilterPlan::Test { negated: false, .. }
        ) && stats.worth_probing(f)
    };
    if !(0..q.filters.len()).any(|f| probed(stats, f)) {
        return Ok(Some(h));
    }
    // Verdicts the part kept from earlier probes answer without the bloom;
    // the bloom is checked and read only for a needle new to the block.
    let mut bloom: Option<(
        &[u8],
        Option<runakefli_storage::block::prune::PackedHead<'_>>,
    )> = None;
    let block = b.index as usize;
    let mut may = |n: usize, cache: &mut TemplateCache| -> Result<bool, StorageError> {
        let v = cache
            .verdicts
            .entry((part.serial(), n))
            .or_insert_with(|| part.needle_verdicts(q.probes[n].bytes()));
        match needle_memo::get(v, block) {
            needle_memo::NO => return Ok(false),
            needle_memo::MAYBE => return Ok(true),
            _ => {}
        }
        // A packed head answers without touching the header or its
        // column heads (a cache miss each on a first query); looked up with
        // the bloom, once per block.
        let (bits, packed) = match bloom {
            Some(found) => found,
            None => {
                part.check_bloom(b, &h)?;
                let src = part.block_self_checked(b)?;
                let packed = part.packed_head(b.index);
                let bits = match &packed {
                    Some(p) => p.block.bloom_bytes(src),
                    None => h.bloom_bytes(src),
                };
                bloom = Some((bits, packed));
                (bits, packed)
            }
        };
        let ok = match packed {
            Some(p) => q.probes[n].may_match_packed(p, bits),
            None => q.probes[n].may_match(&h, bits),
        };
        needle_memo::set(v, block, ok);
        Ok(ok)
    };
    for f in 0..q.filters.len() {
        if !probed(&cache.probes, f) {
            continue;
        }
        let mut ok = true;
        match &q.filters[f] {
            FilterPlan::AnyOf { needles, .. } => {
                ok = false;
                for &n in needles {
                    if may(n, cache)? {
                        ok = true;
                        break;
                    }
                }
            }
            FilterPlan::Test { required, .. } => {
                for &n in required {
                    if !may(n, cache)? {
                        ok = false;
                        break;
                    }
                }
            }
        }
        cache.probes.note(f, ok);
        if !ok {
            return Ok(None);
        }
    }
    Ok(Some(h))
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

    /// Column `c`'s decoded values.
    pub fn values(&mut self, c: usize) -> Result<&Values, StorageError> {
        if self.values[c].is_none() {
            let kept = self
                .cache_key
                .and_then(|(dc, part, block)| dc.values(part, block, c));
            let v = match kept {
                Some(v) => v,
                None => {
                    let v = std::sync::Arc::new(self.r.values_where(c, None)?);
                    if let (Some((dc, part, block)), true) = (self.cache_key, self.admit) {
                        dc.keep_values(part, block, c, &v);
                    }
                    v
                }
            };
            self.values[c] = Some(v);
        }
        Ok(self.values[c].as_deref().expect("just set"))
    }

    /// Column `c`'s values as the doubles a float unwrap reads from their
    /// text, when it is a Decimal column one division reads exactly
    /// ([`BlockReader::decimal_numbers`]); kept across queries like
    /// [`Self::values`]. `None` for other columns: their text is parsed.
    pub fn decimal_numbers(
        &mut self,
        c: usize,
    ) -> Result<Option<std::sync::Arc<[f64]>>, StorageError> {
        if !matches!(
            self.r.column_encoding(c),
            Some(Encoding::Decimal | Encoding::PrefixedDecimal)
        ) {
            return Ok(None);
        }
        if let Some(v) = self
            .cache_key
            .and_then(|(dc, part, block)| dc.numbers(part, block, c))
        {
            return Ok(Some(v));
        }
        let Some(v) = self.r.decimal_numbers(c)? else {
            return Ok(None);
        };
        let v: std::sync::Arc<[f64]> = v.into();
        if let (Some((dc, part, block)), true) = (self.cache_key, self.admit) {
            dc.keep_numbers(part, block, c, &v);
        }
        Ok(Some(v))
    }

    /// Reads the columns kept in `cache` for block `block` of the part with
    /// serial `part`, and keeps those it decodes there when `admit`.
    pub fn keep_decoded_as(&mut self, cache: &'r DecodedCache, part: u64, block: u32, admit: bool) {
        self.cache_key = Some((cache, part, block));
        self.admit = admit;
    }

    /// Keeps what each column of this block (block `block` of `part`)
    /// answers to a line filter's column tests in the part, so that the
    /// next query asking the same needle judges the column by one byte
    /// instead of its brief, head and bloom.
    pub fn keep_verdicts_in(&mut self, part: &'a runakefli_storage::part::Part, block: u32) {
        self.verdicts_in = Some((part, block));
    }

    /// Per row: the index of its value in column `c` (`u32::MAX`: absent).
    pub fn value_index(&mut self, c: usize) -> &[u32] {
        if self.vidx[c].is_none() {
            let heads = self.r.template_heads();
            let rows = self.rows();
            let col = c as u32;
            // Which templates hold the column: one pass over every
            // template's slots per block, not one per column.
            let ncols = self.vidx.len();
            let spare = &self.spare;
            let masks = self.tpl_masks.get_or_init(|| {
                (heads.len() <= 64).then(|| {
                    let mut m = std::mem::take(&mut spare.borrow_mut().masks);
                    m.clear();
                    m.resize(ncols, 0);
                    for (t, h) in heads.iter().enumerate() {
                        for &s in &h.slots {
                            if let Some(x) = m.get_mut(s as usize) {
                                *x |= 1 << t;
                            }
                        }
                    }
                    m
                })
            });
            let all = match masks {
                Some(m) => {
                    let full = if heads.len() == 64 {
                        u64::MAX
                    } else {
                        (1u64 << heads.len()) - 1
                    };
                    m[c] == full
                }
                None => heads.iter().all(|h| h.slots.contains(&col)),
            };
            if all {
                // Every row holds the column: value i is row i's.
                let mut id = self.identity.borrow_mut();
                if id.len() < rows {
                    *id =
                        std::rc::Rc::from((0..rows.next_power_of_two() as u32).collect::<Vec<_>>());
                }
                self.vidx[c] = Some(ValueIndex::Identity(id.clone(), rows));
            } else {
                let (mut holds, buf) = {
                    let mut sp = self.spare.borrow_mut();
                    let buf = sp.maps.pop().unwrap_or_default();
                    (std::mem::take(&mut sp.holds), buf)
                };
                holds.clear();
                match masks {
                    Some(m) => holds.extend((0..heads.len()).map(|t| m[c] >> t & 1 == 1)),
                    None => holds.extend(heads.iter().map(|h| h.slots.contains(&col))),
                }
                let tail = self.tail_templates();
                let out = window_value_index(
                    buf,
                    self.rows(),
                    tail.base(),
                    tail.templates(),
                    &holds,
                    self.r.column_len(c),
                    self.first,
                    self.end,
                );
                self.spare.borrow_mut().holds = holds;
                self.vidx[c] = Some(ValueIndex::Map(out));
            }
        }
        self.vidx[c].as_ref().expect("just set").as_slice()
    }

    /// Per row of the time range with `want[r]` that holds column `c`: 2
    /// when `test` holds on its value, 1 when not; 0 for the other rows.
    /// Memoized per dictionary entry; entries of a part's shared dictionary
    /// are tested once per worker and `key` (across blocks), and the block's
    /// own strings are decompressed only when a wanted row uses one.
    /// `on_skeletons`: the test gives the same answer on a value's skeleton
    /// (see `block/digits.rs`), so skeleton columns are judged by entry too.
    /// `out` is a buffer to write the answer into (cleared first: a worker
    /// recycles these from block to block).
    pub fn eval_column(
        &mut self,
        c: usize,
        key: MemoKey,
        want: &[bool],
        on_skeletons: OnSkeletons<'_>,
        mut out: Vec<u8>,
        test: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<Vec<u8>, StorageError> {
        let n = self.rows();
        out.clear();
        out.resize(n, 0);
        self.value_index(c);
        let (first, end) = (self.first, self.end);
        let verdict = |b: bool| if b { 2u8 } else { 1u8 };
        let enc = self.r.column_encoding(c);
        let skeleton = enc == Some(Encoding::Skeleton);
        let by_entry = enc == Some(Encoding::Shared)
            || (skeleton && !matches!(on_skeletons, OnSkeletons::Rebuild));
        // On skeletons with pieces, an entry either fails (1) or is open (3):
        // its rows are then tested on their rebuilt values below.
        let mut judge = |v: &[u8]| match on_skeletons {
            OnSkeletons::Pieces(pieces) if skeleton => {
                if pieces.iter().all(|p| memchr::memmem::find(v, p).is_some()) {
                    MAYBE
                } else {
                    1
                }
            }
            _ => verdict(test(v)),
        };
        if self.values[c].is_none() && by_entry {
            let at = match self.shared.iter().position(|(k, _)| *k == c) {
                Some(at) => at,
                None => {
                    let dict = self.r.shared_dict(c).ok_or_else(|| {
                        StorageError::corrupt("block", "shared column without dictionary")
                    })?;
                    let index = self.r.shared_index_view(c)?;
                    self.shared.push((
                        c,
                        SharedColumn {
                            dict,
                            index,
                            locals: None,
                        },
                    ));
                    self.shared.len() - 1
                }
            };
            let vidx = self.vidx[c].as_ref().expect("computed").as_slice();
            let sc = &mut self.shared[at].1;
            let g = sc.index.global_count;
            // The entry of each wanted row (decoded at once when most are).
            let wanted = want[first..end].iter().filter(|&&w| w).count();
            let values = self.r.column_len(c);
            let bulk: Option<std::sync::Arc<[u32]>> = if wanted * 8 > values {
                let kept = self
                    .cache_key
                    .and_then(|(dc, part, block)| dc.entries(part, block, c));
                Some(match kept {
                    Some(e) => e,
                    None => {
                        let e: std::sync::Arc<[u32]> = sc.index.entries_all()?.into();
                        if let (Some((dc, part, block)), true) = (self.cache_key, self.admit) {
                            dc.keep_entries(part, block, c, &e);
                        }
                        e
                    }
                })
            } else {
                None
            };
            let entry_at = |vi: u32| -> Result<usize, StorageError> {
                Ok(match &bulk {
                    Some(all) => all[vi as usize] as usize,
                    None => sc.index.entry(vi as usize)?,
                })
            };
            // Rows whose entry is one of the block's own strings, judged
            // after the shared ones.
            const LOCAL: u8 = 0xff;
            let mut need_local = false;
            {
                let mut memo = self.memo.borrow_mut();
                let gm = memo
                    .map
                    .entry((sc.dict as *const SharedDict as usize, key))
                    .or_insert_with(|| vec![0u8; sc.dict.len()]);
                // Each of the block's shared entries is looked up (and, the
                // first time the worker meets it, judged) once; one pass
                // over the rows, which read `by_entry` themselves and call
                // `settle` only for an entry not seen yet in the block (a
                // call per row cost ~30 instructions a row, callgrind, q7).
                let mut by_entry = vec![0u8; g];
                let mut settle = |by_entry: &mut [u8], e: usize| -> Result<u8, StorageError> {
                    let gid = sc.index.global(e)?;
                    let m = &mut gm[gid as usize];
                    if *m == 0 {
                        *m = judge(sc.dict.get(gid).unwrap_or_default());
                    }
                    by_entry[e] = *m;
                    Ok(*m)
                };
                match &bulk {
                    // Every entry decoded: a tight loop over the rows.
                    Some(all) => {
                        for ((o, &vi), &w) in out[first..end]
                            .iter_mut()
                            .zip(&vidx[first..end])
                            .zip(&want[first..end])
                        {
                            if !w || vi == u32::MAX {
                                continue;
                            }
                            let e = all[vi as usize] as usize;
                            *o = match by_entry.get(e) {
                                Some(&0) => settle(&mut by_entry, e)?,
                                Some(&v) => v,
                                None => {
                                    need_local = true;
                                    LOCAL
                                }
                            };
                        }
                    }
                    None => {
                        for r in first..end {
                            let vi = vidx[r];
                            if !want[r] || vi == u32::MAX {
                                continue;
                            }
                            let e = entry_at(vi)?;
                            if e >= g {
                                need_local = true;
                                out[r] = LOCAL;
                                continue;
                            }
                            out[r] = match by_entry[e] {
                                0 => settle(&mut by_entry, e)?,
                                v => v,
                            };
                        }
                    }
                }
            }
            if need_local {
                if sc.locals.is_none() {
                    sc.locals = Some(self.r.shared_strings(c, sc.index.locals)?);
                }
                let (data, ends) = sc.locals.as_ref().expect("just set");
                let mut lm = vec![0u8; ends.len()];
                for r in first..end {
                    if out[r] != LOCAL {
                        continue;
                    }
                    let l = entry_at(vidx[r])? - g;
                    if lm[l] == 0 {
                        let start = if l == 0 { 0 } else { ends[l - 1] as usize };
                        lm[l] = judge(&data[start..ends[l] as usize]);
                    }
                    out[r] = lm[l];
                }
            }
            if !out.contains(&MAYBE) {
                return Ok(out);
            }
            // Open rows: test their values, rebuilt from the skeletons.
            self.values(c)?;
            let vidx = self.vidx[c].as_ref().expect("computed").as_slice();
            let vals = self.values[c].as_deref().expect("decoded");
            for r in first..end {
                if out[r] == MAYBE {
                    out[r] = verdict(test(vals.get(vidx[r] as usize)));
                }
            }
            return Ok(out);
        }
        self.values(c)?;
        let vidx = self.vidx[c].as_ref().expect("computed").as_slice();
        let vals = self.values[c].as_deref().expect("decoded");
        let mut memo: Vec<u8> = match vals {
            Values::Const { .. } => vec![0],
            Values::Dict { ends, .. } => vec![0; ends.len()],
            Values::Flat { .. } => Vec::new(),
        };
        // One loop per value layout (the layout is the block's, not the row's).
        let open = |r: usize| want[r] && vidx[r] != u32::MAX;
        match vals {
            Values::Const { value, .. } => {
                for (r, o) in out.iter_mut().enumerate().take(end).skip(first) {
                    if open(r) {
                        if memo[0] == 0 {
                            memo[0] = verdict(test(value));
                        }
                        *o = memo[0];
                    }
                }
            }
            Values::Dict { idx, .. } => {
                for r in first..end {
                    if open(r) {
                        let e = idx[vidx[r] as usize] as usize;
                        if memo[e] == 0 {
                            memo[e] = verdict(test(vals.entry(e)));
                        }
                        out[r] = memo[e];
                    }
                }
            }
            Values::Flat { .. } => {
                for r in first..end {
                    if open(r) {
                        out[r] = verdict(test(vals.get(vidx[r] as usize)));
                    }
                }
            }
        }
        Ok(out)
    }

    /// [`Self::eval_column`]'s verdicts for a value test on a packed-hex
    /// column, answered without a value's text: every value of the column
    /// has the layout's length, so a stretch that long holds (contained,
    /// at the start or end, or equal) only in a value equal to it, and a
    /// longer one, or an `Equals` of a shorter one, in none. The packed
    /// values are compared with the packed stretch, sixteen bytes for a
    /// 32-digit trace id instead of unpacking and searching 32 characters
    /// (a block a trace id's bloom probe let through cost ~130,000
    /// instructions, callgrind q4). A shorter stretch (a uuid's group, a
    /// trace id's prefix) is searched for in the packed bytes at both
    /// nibble parities (`block::hex_search`). Writes `out` and returns true
    /// for Hex columns; false (and `out` untouched) for other columns.
    fn hex_verdicts(
        &mut self,
        c: usize,
        test: ValueTest,
        needle: &[u8],
        want: &[bool],
        out: &mut Vec<u8>,
    ) -> Result<bool, StorageError> {
        if self.r.column_encoding(c) != Some(Encoding::Hex) {
            return Ok(false);
        }
        let stretch = &needle[test.start..test.end];
        let mut equal = std::mem::take(&mut self.spare.borrow_mut().hex_equal);
        equal.clear();
        let decided = self.r.with_hex_values(c, |layout, packed| {
            let n = packed.len().checked_div(layout.packed_len()).unwrap_or(0);
            match hex_answer(layout.len, test.kind, stretch.len()) {
                HexAnswer::Equal => layout.equal_values(packed, stretch, &mut equal),
                HexAnswer::Nothing => equal.resize(n, false),
                HexAnswer::Within(anchor) => {
                    layout.values_holding(packed, stretch, anchor, &mut equal)
                }
            }
            true
        })?;
        if decided != Some(true) {
            self.spare.borrow_mut().hex_equal = equal;
            return Ok(false);
        }
        let n = self.rows();
        let (first, end) = (self.first, self.end);
        let vidx = self.value_index(c);
        out.clear();
        out.resize(n, 0);
        for r in first..end {
            let vi = vidx[r];
            if want[r] && vi != u32::MAX {
                let holds = equal.get(vi as usize).copied().unwrap_or(false);
                out[r] = if holds { 2 } else { 1 };
            }
        }
        self.spare.borrow_mut().hex_equal = equal;
        Ok(true)
    }

    /// Column `c`'s values, already decoded by [`Self::values`].
    pub fn values_ro(&self, c: usize) -> &Values {
        self.values[c].as_deref().expect("column decoded first")
    }

    /// Column `c`'s value indices, already computed by [`Self::value_index`].
    pub fn value_index_ro(&self, c: usize) -> &[u32] {
        self.vidx[c]
            .as_ref()
            .expect("value index computed first")
            .as_slice()
    }

    /// Whether every row holds column `c`, row `i` its value `i` (the value
    /// index computed first).
    pub fn value_index_is_identity(&self, c: usize) -> bool {
        matches!(self.vidx[c], Some(ValueIndex::Identity(..)))
    }

    /// Row `i`'s value in column `c` (both prepared first).
    pub fn value_ro(&self, c: usize, i: usize) -> &[u8] {
        let vi = self.value_index_ro(c)[i] as usize;
        self.values_ro(c).get(vi)
    }

    /// Column of slot `k` of local template `t`.
    #[inline]
    pub fn slot_column(&self, t: usize, k: usize) -> usize {
        self.r.template_heads()[t].slots[k] as usize
    }

    /// Rebuilds the lines of the rows with `want[r]` (length: rows).
    pub fn rebuild(&self, want: &[bool]) -> Result<Vec<Option<String>>, StorageError> {
        self.r.lines_where(want)
    }

    /// Applies the query's line filters to the rows in `keep` (length: rows;
    /// rows outside the time range must be false). Rows whose line had to
    /// be rebuilt for a regexp test are kept in `lines`.
    pub fn line_filters(
        &mut self,
        q: &CompiledQuery<'_>,
        keep: &mut [bool],
        lines: &mut Vec<Option<String>>,
    ) -> Result<(), StorageError> {
        let pending = self.exact_filters(q, keep)?;
        if pending.is_empty() {
            return Ok(());
        }
        let rows: Vec<usize> = (0..keep.len()).filter(|&r| keep[r]).collect();
        let pass = self.pending_filters(q, &pending, &rows, lines)?;
        for (&r, ok) in rows.iter().zip(pass) {
            keep[r] = ok;
        }
        Ok(())
    }

    /// Applies what the templates and columns decide of the line filters:
    /// substring filters wholly, regexp filters as far as their required
    /// literals go. Returns the regexp tests still to run on rebuilt lines
    /// (see [`Self::pending_filters`]). `keep` holds no row outside the
    /// time range ([`Self::first`]`..`[`Self::end`]): only those are looked
    /// at (a log query past its cutoff opens a few rows of most blocks).
    pub fn exact_filters(
        &mut self,
        q: &CompiledQuery<'_>,
        keep: &mut [bool],
    ) -> Result<Vec<PendingTest>, StorageError> {
        let mut pending = Vec::new();
        let range = self.first..self.end;
        debug_assert!(
            !super::row_mask::any_set(&keep[..range.start])
                && !super::row_mask::any_set(&keep[range.end..]),
            "rows kept outside the time range"
        );
        for f in &q.filters {
            if !super::row_mask::any_set(&keep[range.clone()]) {
                break;
            }
            match f {
                FilterPlan::AnyOf { needles, negated } => {
                    let mut hit = std::mem::take(&mut self.scratch.borrow_mut().hit);
                    hit.clear();
                    hit.resize(keep.len(), false);
                    for &n in needles {
                        self.contains(q, n, keep, &mut hit)?;
                    }
                    for (k, h) in keep[range.clone()].iter_mut().zip(&hit[range.clone()]) {
                        *k &= *h != *negated;
                    }
                    self.scratch.borrow_mut().hit = hit;
                }
                FilterPlan::Test {
                    required,
                    negated,
                    index,
                } => {
                    // Rows lacking a required needle cannot match.
                    let (mut maybe, mut hit) = {
                        let mut sc = self.scratch.borrow_mut();
                        (std::mem::take(&mut sc.maybe), std::mem::take(&mut sc.hit))
                    };
                    maybe.clear();
                    maybe.extend_from_slice(keep);
                    for &n in required {
                        hit.clear();
                        hit.resize(keep.len(), false);
                        self.contains(q, n, &maybe, &mut hit)?;
                        for (c, h) in maybe.iter_mut().zip(&hit) {
                            *c &= *h;
                        }
                    }
                    let mut cand: Vec<Decided> = maybe
                        .iter()
                        .map(|&m| if m { Decided::Maybe } else { Decided::No })
                        .collect();
                    {
                        let mut sc = self.scratch.borrow_mut();
                        sc.maybe = maybe;
                        sc.hit = hit;
                    }
                    // A split regexp is decided from its sites where the
                    // templates allow; the other rows wait for their lines.
                    if q.plan.line_filters[*index].split.is_some() {
                        self.split_regex(q, *index, &mut cand)?;
                    }
                    if !*negated {
                        // Only candidates can pass.
                        for (k, c) in keep.iter_mut().zip(&cand) {
                            *k = *k && *c != Decided::No;
                        }
                    } else {
                        for (k, c) in keep.iter_mut().zip(&cand) {
                            if *c == Decided::Yes {
                                *k = false;
                            }
                        }
                    }
                    pending.push(PendingTest {
                        index: *index,
                        negated: *negated,
                        cand,
                    });
                }
            }
        }
        Ok(pending)
    }

    /// Decides the `Maybe` rows of regexp filter `index` (which has a split)
    /// from the templates' regexp sites and the values after them.
    fn split_regex(
        &mut self,
        q: &CompiledQuery<'_>,
        index: usize,
        cand: &mut [Decided],
    ) -> Result<(), StorageError> {
        let split = q.plan.line_filters[index]
            .split
            .as_ref()
            .expect("split filter");
        let prefix = split.prefix.as_bytes();
        let nt = self.infos.len();
        // Per template: None = rows stay Maybe; Some(always, columns).
        let mut per_tpl: Vec<Option<(bool, Vec<usize>)>> = Vec::with_capacity(nt);
        let header = self.r.header();
        let sources = std::cell::OnceCell::new();
        for t in 0..nt {
            let info = self.infos[t].clone();
            let Some(Some(sites)) = info.regex_sites.get(index) else {
                per_tpl.push(None);
                continue;
            };
            if sites.unsure {
                per_tpl.push(None);
                continue;
            }
            // Occurrences of the prefix inside or across values must be
            // impossible in this block.
            let mut live = false;
            'alt: for alt in &sites.alternatives {
                for &(slot, test) in alt {
                    let c = self.slot_column(t, slot);
                    let src = || LazySources::new(header, header.bloom_bytes(self.r.src()), prefix);
                    let alpha =
                        runakefli_storage::block::tokens::alphabet(&prefix[test.start..test.end]);
                    if !self.test_possible(c, &test, prefix, alpha, &sources, src)? {
                        continue 'alt;
                    }
                }
                live = true;
                break;
            }
            if live {
                per_tpl.push(None);
                continue;
            }
            let cols: Vec<usize> = sites
                .slots
                .iter()
                .map(|&k| self.slot_column(t, k))
                .collect();
            per_tpl.push(Some((sites.always, cols)));
        }
        // `R` on the values of the columns involved, memoized per entry.
        let rest = |v: &[u8]| std::str::from_utf8(v).is_ok_and(|s| (split.rest)(s));
        let row_tpl = self.r.row_templates().to_vec();
        let want: Vec<bool> = (0..cand.len())
            .map(|r| {
                cand[r] == Decided::Maybe
                    && per_tpl[row_tpl[r] as usize]
                        .as_ref()
                        .is_some_and(|(always, _)| !always)
            })
            .collect();
        let mut cols: Vec<usize> = per_tpl
            .iter()
            .flatten()
            .flat_map(|(_, cols)| cols.iter().copied())
            .collect();
        cols.sort_unstable();
        cols.dedup();
        let mut verdicts: HashMap<usize, Vec<u8>> = HashMap::default();
        for &c in &cols {
            let pieces: Vec<&[u8]> = split
                .rest_all_of
                .iter()
                .filter_map(|l| skeleton_pieces(l.as_bytes()))
                .flatten()
                .collect();
            let on_skeletons = if split.rest_digit_blind {
                OnSkeletons::ByEntry
            } else if pieces.is_empty() {
                OnSkeletons::Rebuild
            } else {
                OnSkeletons::Pieces(&pieces)
            };
            let v = self.eval_column(
                c,
                MemoKey::Regex(index),
                &want,
                on_skeletons,
                Vec::new(),
                &mut |v| rest(v),
            )?;
            verdicts.insert(c, v);
        }
        for r in self.first..self.end {
            if cand[r] != Decided::Maybe {
                continue;
            }
            let Some((always, cols)) = &per_tpl[row_tpl[r] as usize] else {
                continue;
            };
            let yes = *always || cols.iter().any(|c| verdicts[c][r] == 2);
            cand[r] = if yes { Decided::Yes } else { Decided::No };
        }
        Ok(())
    }

    /// Which of `rows` (kept by [`Self::exact_filters`]) pass the `pending`
    /// regexp tests; rebuilds just those rows' lines into `lines`.
    pub fn pending_filters(
        &self,
        q: &CompiledQuery<'_>,
        pending: &[PendingTest],
        rows: &[usize],
        lines: &mut Vec<Option<String>>,
    ) -> Result<Vec<bool>, StorageError> {
        let mut want = vec![false; self.rows()];
        for &r in rows {
            if pending.iter().any(|p| p.cand[r] == Decided::Maybe) {
                want[r] = true;
            }
        }
        self.ensure_lines(&want, lines)?;
        Ok(rows
            .iter()
            .map(|&r| {
                pending.iter().all(|p| {
                    let test = &q.plan.line_filters[p.index];
                    let matched = match p.cand[r] {
                        Decided::No => false,
                        Decided::Yes => true,
                        Decided::Maybe => lines[r].as_deref().is_some_and(|l| (test.test)(l)),
                    };
                    matched != p.negated
                })
            })
            .collect())
    }

    /// Rebuilds the lines of the `want` rows not rebuilt yet into `lines`.
    pub fn ensure_lines(
        &self,
        want: &[bool],
        lines: &mut Vec<Option<String>>,
    ) -> Result<(), StorageError> {
        if lines.len() != want.len() {
            *lines = vec![None; want.len()];
        }
        let missing: Vec<bool> = want
            .iter()
            .zip(lines.iter())
            .map(|(&w, l)| w && l.is_none())
            .collect();
        if !missing.iter().any(|&m| m) {
            return Ok(());
        }
        for (slot, l) in lines.iter_mut().zip(self.rebuild(&missing)?) {
            if l.is_some() {
                *slot = l;
            }
        }
        Ok(())
    }

    /// Sets `hit[r]` for the rows with `rows[r]` whose line contains needle
    /// `n` (exactly); other entries are left alone.
    pub fn contains(
        &mut self,
        q: &CompiledQuery<'_>,
        n: usize,
        rows: &[bool],
        hit: &mut [bool],
    ) -> Result<(), StorageError> {
        let needle: &[u8] = &q.needles[n];
        let header = self.r.header();
        // The bloom's view is prepared only if a test gets that far.
        let sources: std::cell::OnceCell<LazySources<'_>> = std::cell::OnceCell::new();
        let scratch = self.scratch.clone();
        let mut guard = scratch.borrow_mut();
        let sc = &mut *guard;
        sc.clear();
        let frags = sc.needle_frags(n, header, needle);
        // Templates of the open rows: a log query past its cutoff looks at
        // a few rows of most blocks, and planning every template of the
        // block for them would cost more than the rows.
        // (With many open rows every template is taken: the pass would
        // not pay.)
        let tail = self.tail_templates();
        let (tpl_base, tpl) = (tail.base(), tail.templates());
        sc.used.clear();
        let few = self.end - self.first <= 4 * self.infos.len().max(8);
        sc.used.resize(self.infos.len(), !few);
        if few {
            for r in self.first..self.end {
                if rows[r] && !hit[r] {
                    sc.used[tpl[r - tpl_base] as usize] = true;
                }
            }
        }
        // Per template: how its rows are decided; alternatives as tester ids.
        for t in 0..self.infos.len() {
            if !sc.used[t] {
                sc.tpl.push(TplNeedle::Never);
                continue;
            }
            let Some(plan) = &self.infos[t].needles[n] else {
                sc.tpl.push(TplNeedle::Rebuild);
                continue;
            };
            if plan.always {
                sc.tpl.push(TplNeedle::Always);
                continue;
            }
            let first = sc.alt_ends.len();
            'alt: for alt in &plan.alternatives {
                let mark = sc.alt_ids.len();
                for &(slot, test) in alt {
                    let c = self.slot_column(t, slot);
                    if sc.tester_of.len() <= c {
                        sc.tester_of.resize_with(c + 1, Vec::new);
                    }
                    let known = sc.tester_of[c]
                        .iter()
                        .find(|(t, _)| *t == test)
                        .map(|&(_, id)| id);
                    let id = match known {
                        Some(id) => id,
                        None => {
                            let src = || {
                                LazySources::with_frags(
                                    header,
                                    header.bloom_bytes(self.r.src()),
                                    frags.clone(),
                                )
                            };
                            use runakefli_storage::part::needle_memo;
                            let kept = self.verdicts_in.and_then(|(part, block)| {
                                let slot = part.column_slot(block, c)?;
                                Some((sc.column_verdicts(part, n, &test, needle), slot))
                            });
                            let known = kept
                                .as_ref()
                                .map_or(needle_memo::UNKNOWN, |(v, s)| needle_memo::get(v, *s));
                            let possible = match known {
                                needle_memo::NO => false,
                                needle_memo::MAYBE => true,
                                _ => {
                                    let alpha = sc.stretch_alphabet(n, &test, needle);
                                    let ok =
                                        self.test_possible(c, &test, needle, alpha, &sources, src)?;
                                    if let Some((v, s)) = &kept {
                                        needle_memo::set(v, *s, ok);
                                    }
                                    ok
                                }
                            };
                            let id = if possible {
                                sc.testers.push((c, test));
                                sc.testers.len() - 1
                            } else {
                                usize::MAX
                            };
                            if sc.tester_of[c].is_empty() {
                                sc.touched.push(c);
                            }
                            sc.tester_of[c].push((test, id));
                            id
                        }
                    };
                    if id == usize::MAX {
                        sc.alt_ids.truncate(mark);
                        continue 'alt;
                    }
                    sc.alt_ids.push(id);
                }
                sc.alt_ends.push(sc.alt_ids.len());
            }
            let end = sc.alt_ends.len();
            let from = if first == 0 {
                0
            } else {
                sc.alt_ends[first - 1]
            };
            sc.tpl.push(match end - first {
                0 => TplNeedle::Never,
                1 if sc.alt_ends[first] - from == 1 => TplNeedle::One(sc.alt_ids[from]),
                _ => TplNeedle::Alts { first, end },
            });
        }
        // Each tester's verdict on the rows still open (memoized per entry).
        let (first_row, end_row) = (self.first, self.end);
        sc.want.clear();
        sc.want.resize(rows.len(), false);
        for ((w, &k), &h) in sc.want[first_row..end_row]
            .iter_mut()
            .zip(&rows[first_row..end_row])
            .zip(&hit[first_row..end_row])
        {
            *w = k & !h;
        }
        let mut verdicts: Vec<Vec<u8>> = std::mem::take(&mut sc.verdicts);
        for &(col, test) in &sc.testers {
            let mut buf = sc.spare_verdicts.pop().unwrap_or_default();
            if self.hex_verdicts(col, test, needle, &sc.want, &mut buf)? {
                verdicts.push(buf);
                continue;
            }
            let key = MemoKey::Needle(n, test);
            let stretch = &needle[test.start..test.end];
            let pieces = skeleton_pieces(stretch);
            let on_skeletons = match &pieces {
                _ if skeleton_safe(stretch) => OnSkeletons::ByEntry,
                Some(p) if !p.is_empty() => OnSkeletons::Pieces(p),
                _ => OnSkeletons::Rebuild,
            };
            let tester = Tester {
                test,
                finder: std::cell::OnceCell::new(),
            };
            let v = self.eval_column(col, key, &sc.want, on_skeletons, buf, &mut |v| {
                tester.holds(needle, v)
            })?;
            verdicts.push(v);
        }
        let mut rebuild: Option<Vec<bool>> = None;
        // Every template decided by one and the same tester (one template,
        // or one column in all): a row holds the needle when the tester
        // holds on it, with no look at its template.
        let one_tester = match sc.tpl.first() {
            Some(&TplNeedle::One(id))
                if sc
                    .tpl
                    .iter()
                    .all(|t| matches!(t, TplNeedle::One(i) if *i == id)) =>
            {
                Some(id)
            }
            _ => None,
        };
        if let Some(id) = one_tester {
            let v = &verdicts[id][first_row..end_row];
            let want = &sc.want[first_row..end_row];
            for ((h, &w), &t) in hit[first_row..end_row].iter_mut().zip(want).zip(v) {
                *h |= w & (t == 2);
            }
        }
        let rest = if one_tester.is_some() {
            0..0
        } else {
            first_row..end_row
        };
        for r in rest {
            if !sc.want[r] {
                continue;
            }
            match sc.tpl[tpl[r - tpl_base] as usize] {
                TplNeedle::Rebuild => {
                    rebuild.get_or_insert_with(|| vec![false; rows.len()])[r] = true
                }
                TplNeedle::Always => hit[r] = true,
                TplNeedle::Never => {}
                TplNeedle::One(id) => hit[r] |= verdicts[id][r] == 2,
                TplNeedle::Alts { first, end } => {
                    let mut from = if first == 0 {
                        0
                    } else {
                        sc.alt_ends[first - 1]
                    };
                    for &to in &sc.alt_ends[first..end] {
                        if sc.alt_ids[from..to].iter().all(|&id| verdicts[id][r] == 2) {
                            hit[r] = true;
                            break;
                        }
                        from = to;
                    }
                }
            }
        }
        sc.spare_verdicts.append(&mut verdicts);
        sc.verdicts = verdicts;
        drop(guard);
        if let Some(rebuild) = rebuild {
            let finder = memchr::memmem::Finder::new(needle);
            for (r, line) in self.rebuild(&rebuild)?.into_iter().enumerate() {
                if let Some(l) = line {
                    hit[r] = finder.find(l.as_bytes()).is_some();
                }
            }
        }
        Ok(())
    }

    /// Whether column `c` could pass `test` at all, judging by the header:
    /// the bytes its encoding prints and the bloom's view of the fragments
    /// the test's stretch of the needle holds.
    fn test_possible<'s>(
        &self,
        c: usize,
        test: &ValueTest,
        needle: &[u8],
        alpha: u64,
        sources: &std::cell::OnceCell<LazySources<'s>>,
        make: impl FnOnce() -> LazySources<'s>,
    ) -> Result<bool, StorageError> {
        let bytes = &needle[test.start..test.end];
        let header = self.r.header();
        // The brief (one small record per column) before the column's full
        // head: most columns of a block are judged by it alone.
        let brief = header.briefs[c];
        let (kind, encoding) = if header.version >= 2 {
            (brief.kind, brief.encoding)
        } else {
            (self.r.column_kind(c), self.r.column_head(c).0)
        };
        if kind != ColumnKind::Field {
            return Ok(true);
        }
        if alpha & !brief.alphabet != 0 {
            return Ok(false);
        }
        // Only a PrefixedDecimal column's prints depend on its prefix (in
        // the full head).
        let prefix: &[u8] = if encoding == Encoding::PrefixedDecimal {
            self.r.column_head(c).1
        } else {
            &[]
        };
        if !encoding.may_print(bytes, prefix) {
            return Ok(false);
        }
        // Values that are all JSON numbers, booleans, null or arrays without
        // strings hold no `"`.
        let facts = brief.facts;
        if facts & runakefli_storage::block::layout::VALUES_JSON_SCALARS != 0
            && bytes.contains(&b'"')
        {
            return Ok(false);
        }
        if test.kind == TestKind::Equals && bytes.is_empty() {
            return Ok(true);
        }
        // A shared column without strings of its own holds only entries of
        // the part's dictionary: none may contain the stretch, no value does.
        if let (Some(sp), Some(dict)) = (self.r.header().columns[c].shared, self.r.shared_dict(c)) {
            if sp.len == 0
                && !bytes.is_empty()
                && !self.memo.borrow_mut().dict_may_hold(dict, bytes)
            {
                return Ok(false);
            }
        }
        Ok(sources
            .get_or_init(make)
            .column_may_hold(c, test.start, test.end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windowed_value_positions_match_numbering_every_row() {
        // Rows of three templates; templates 0 and 2 hold the column.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let holds = [true, false, true];
        for rows in [0usize, 1, 2, 7, 64, 301] {
            let tpl: Vec<u32> = (0..rows).map(|_| (next() % 3) as u32).collect();
            let mut full = Vec::new();
            let mut n = 0u32;
            for &t in &tpl {
                if holds[t as usize] {
                    full.push(n);
                    n += 1;
                } else {
                    full.push(u32::MAX);
                }
            }
            for first in 0..=rows {
                for end in first..=rows {
                    // Every row's templates, and those of rows `base..` only.
                    for base in [0, first / 2, first] {
                        let w = window_value_index(
                            vec![7; 3],
                            rows,
                            base,
                            &tpl[base..],
                            &holds,
                            n as usize,
                            first,
                            end,
                        );
                        assert_eq!(w.len(), rows);
                        assert_eq!(
                            w[first..end],
                            full[first..end],
                            "rows {rows} [{first}, {end}) from {base}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn packed_hex_columns_answer_what_the_value_length_decides() {
        use TestKind::*;
        for kind in [Contains, StartsWith, EndsWith, Equals] {
            // As long as every value: holds only in an equal one.
            assert_eq!(hex_answer(32, kind, 32), HexAnswer::Equal);
            // Longer than every value: in none.
            assert_eq!(hex_answer(32, kind, 33), HexAnswer::Nothing);
        }
        // Shorter: an equal value cannot be; a part of one can.
        assert_eq!(hex_answer(36, Equals, 8), HexAnswer::Nothing);
        assert_eq!(
            hex_answer(36, Contains, 8),
            HexAnswer::Within(Anchor::Anywhere)
        );
        assert_eq!(
            hex_answer(36, StartsWith, 8),
            HexAnswer::Within(Anchor::Start)
        );
        assert_eq!(hex_answer(36, EndsWith, 8), HexAnswer::Within(Anchor::End));
    }

    #[test]
    fn probes_stop_for_a_filter_that_lets_nearly_every_block_through() {
        let mut p = ProbeStats::default();
        p.reserve(2);
        for i in 0..PROBE_TRIAL {
            assert!(p.worth_probing(0) && p.worth_probing(1));
            // Filter 0 lets every block through; filter 1 prunes one in four.
            p.note(0, true);
            p.note(1, i % 4 != 0);
        }
        assert!(!p.worth_probing(0), "a common word stops being probed");
        assert!(
            p.worth_probing(1),
            "a filter that prunes keeps being probed"
        );
    }
}
