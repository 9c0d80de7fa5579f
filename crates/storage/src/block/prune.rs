//! Block skipping for line filters: can a block hold a line containing a
//! needle, and if so, which of its columns can? Answered from the header
//! alone (bloom, column encodings, token lengths and classes), without
//! decompressing anything.
//!
//! A line is its template's pieces with values in the slots, and every byte
//! touching a slot is one of the header's *boundary bytes*. Cut a needle at
//! the boundary bytes it contains: each *fragment* (a stretch of the needle
//! between them) lies wholly inside one template piece or one value, so all
//! the fragment's token runs must fit one *source*: the templates, or one
//! column. A token run fits a source when its bloom may hold it as a whole
//! token (runs bounded on both sides inside the needle), as a substring via
//! gram keys, or when the column's encoding, token classes and longest token
//! allow it. Version 1 blocks (unscoped bloom, no boundary bytes recorded)
//! are judged run by run.

use super::bloom::{
    Bloom, BloomV1, RunKeys, Scope, GRAM, MIN_HEX_TOKEN, SHORT_GRAM, STRIDE, STRIDE_MIN_RUN,
};
use super::bloom_group::BloomGroup;
use super::encoding::Encoding;
use super::layout::{BlockHeader, BOUNDARY_BYTES, TOKEN_LEN_UNKNOWN};
use super::packed_head::{PackedHead, ProbeColumn, WalkFlags};
use super::tokens::{
    alphabet, needle_runs, token_classes, token_features, NeedleRun, DIGIT_RUN, HEX_RUN,
    TOKEN_FEATURES,
};
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};

/// [`run_features`] bit: the run is only hex digits.
const RUN_ALL_HEX: u8 = 1 << 6;
/// [`run_features`] bit: the run is only digits.
const RUN_ALL_DIGITS: u8 = 1 << 7;

/// A needle run's [`token_features`], with [`RUN_ALL_HEX`] and
/// [`RUN_ALL_DIGITS`].
fn run_features(text: &[u8]) -> u8 {
    token_features(text)
        | if text.iter().all(u8::is_ascii_hexdigit) {
            RUN_ALL_HEX
        } else {
            0
        }
        | if text.iter().all(u8::is_ascii_digit) {
            RUN_ALL_DIGITS
        } else {
            0
        }
}

/// Whether the block may hold a line containing every one of `substrings`.
/// `false` only when the block's indexes prove no line can match.
///
/// Only the header (and in version 2 the bloom section) is read. A damaged
/// header or bloom answers `true` (reading the block will report it).
pub fn block_may_contain(src: &[u8], substrings: &[String]) -> bool {
    let Ok(header) = BlockHeader::decode(src) else {
        return true;
    };
    if header.check_bloom(src).is_err() {
        return true;
    }
    substrings
        .iter()
        .all(|s| needle_sources(&header, src, s.as_bytes()).is_some())
}

/// Where the fragments of a needle may lie in one block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FragmentSources {
    /// The fragment: a stretch of the needle between boundary bytes.
    pub text: Vec<u8>,
    /// Where it starts in the needle.
    pub start: usize,
    /// Where it ends in the needle (exclusive).
    pub end: usize,
    /// The templates may hold it.
    pub template: bool,
    /// Per column: its values may hold it.
    pub columns: Vec<bool>,
}

/// Per fragment of `needle`, the sources that may hold it; `None` when some
/// fragment fits no source (no line of the block contains the needle). In
/// version 1 every source is possible for every fragment that passes.
pub fn needle_sources(
    header: &BlockHeader<'_>,
    src: &[u8],
    needle: &[u8],
) -> Option<Vec<FragmentSources>> {
    needle_sources_in(header, header.bloom_bytes(src), needle)
}

/// [`needle_sources`] with the bloom bytes given.
pub fn needle_sources_in(
    header: &BlockHeader<'_>,
    bloom: &[u8],
    needle: &[u8],
) -> Option<Vec<FragmentSources>> {
    let ncols = header.columns.len();
    if header.version < 2 {
        let bloom = BloomV1::new(bloom);
        let ok = needle_runs(needle)
            .iter()
            .all(|run| run_fits_v1(header, &bloom, run));
        return ok.then(|| {
            vec![FragmentSources {
                text: needle.to_vec(),
                start: 0,
                end: needle.len(),
                template: true,
                columns: vec![true; ncols],
            }]
        });
    }
    needle_sources_with(header, Bloom::new(bloom), needle)
}

/// [`needle_sources`] of a version-2 block with its filter given as a
/// [`Bloom`] (the bytes, or their copy in a filter group).
pub fn needle_sources_with(
    header: &BlockHeader<'_>,
    bloom: Bloom<'_>,
    needle: &[u8],
) -> Option<Vec<FragmentSources>> {
    let ncols = header.columns.len();
    debug_assert!(header.version >= 2);
    let runs = needle_runs(needle);
    let exact_bounds = header.boundaries & (1 << 15) == 0;
    // Without exact bounds nothing is cut: the needle is one fragment whose
    // runs are judged each on its own.
    let is_boundary = |b: u8| {
        exact_bounds
            && BOUNDARY_BYTES
                .iter()
                .position(|&x| x == b)
                .is_some_and(|i| header.boundaries & (1 << i) != 0)
    };
    let mut out = Vec::new();
    // Fragments as byte ranges of the needle.
    let mut start = 0usize;
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    for (i, &b) in needle.iter().enumerate() {
        if is_boundary(b) {
            if i > start {
                cuts.push((start, i));
            }
            start = i + 1;
        }
    }
    if needle.len() > start {
        cuts.push((start, needle.len()));
    }
    let base = needle.as_ptr() as usize;
    for (a, b) in cuts {
        let frag_runs: Vec<&NeedleRun<'_>> = runs
            .iter()
            .filter(|r| {
                let at = r.text.as_ptr() as usize - base;
                at >= a && at + r.text.len() <= b
            })
            .collect();
        let mut fs = FragmentSources {
            text: needle[a..b].to_vec(),
            start: a,
            end: b,
            template: false,
            columns: vec![false; ncols],
        };
        if !exact_bounds {
            // Runs may straddle sources: judge each on its own.
            let ok = frag_runs.iter().all(|r| {
                run_in_template(header, &bloom, r)
                    || (0..ncols).any(|c| run_in_column(header, &bloom, c, r))
            });
            if !ok {
                return None;
            }
            fs.template = true;
            fs.columns = vec![true; ncols];
            out.push(fs);
            continue;
        }
        fs.template = frag_runs.iter().all(|r| run_in_template(header, &bloom, r));
        for (c, slot) in fs.columns.iter_mut().enumerate() {
            *slot = fragment_fits_column(header, c, &fs.text)
                && frag_runs
                    .iter()
                    .all(|r| run_in_column(header, &bloom, c, r));
        }
        if !fs.template && !fs.columns.iter().any(|&x| x) {
            return None;
        }
        out.push(fs);
    }
    Some(out)
}

/// A needle cut into fragments for blocks whose headers record the same
/// boundary bytes: each fragment's (start, end) in the needle and the token
/// runs wholly inside it. It depends on the needle and the header's
/// `boundaries` mask only, so a query works it out once per mask rather than
/// once per block ([`LazySources::with_frags`]).
#[derive(Debug)]
pub struct NeedleFrags {
    needle: Vec<u8>,
    /// Token runs: (start, end, left bounded, right bounded).
    runs: Vec<(usize, usize, bool, bool)>,
    /// Fragments as (start, end) in the needle, with their runs' indices.
    frags: Vec<(usize, usize, Vec<usize>)>,
    /// Boundary bytes are not recorded (or version 1): every column may.
    any: bool,
    /// The headers' `boundaries` mask these fragments were cut for.
    boundaries: u16,
}

impl NeedleFrags {
    /// Cuts `needle` for blocks with `header`'s version and boundary bytes.
    pub fn new(header: &BlockHeader<'_>, needle: &[u8]) -> Self {
        let any = header.version < 2 || header.boundaries & (1 << 15) != 0;
        let is_boundary = |b: u8| {
            BOUNDARY_BYTES
                .iter()
                .position(|&x| x == b)
                .is_some_and(|i| header.boundaries & (1 << i) != 0)
        };
        let base = needle.as_ptr() as usize;
        let runs: Vec<(usize, usize, bool, bool)> = needle_runs(needle)
            .iter()
            .map(|r| {
                let at = r.text.as_ptr() as usize - base;
                (at, at + r.text.len(), r.left_bounded, r.right_bounded)
            })
            .collect();
        let mut cuts: Vec<(usize, usize)> = Vec::new();
        let mut start = 0usize;
        if !any {
            for (i, &b) in needle.iter().enumerate() {
                if is_boundary(b) {
                    if i > start {
                        cuts.push((start, i));
                    }
                    start = i + 1;
                }
            }
            if needle.len() > start {
                cuts.push((start, needle.len()));
            }
        }
        let frags = cuts
            .into_iter()
            .map(|(a, b)| {
                let idx = runs
                    .iter()
                    .enumerate()
                    .filter(|(_, &(at, end, ..))| at >= a && end <= b)
                    .map(|(i, _)| i)
                    .collect();
                (a, b, idx)
            })
            .collect();
        NeedleFrags {
            needle: needle.to_vec(),
            runs,
            frags,
            any,
            boundaries: header.boundaries,
        }
    }

    /// Whether these fragments serve blocks with `header` (cut at the same
    /// boundary bytes).
    pub fn fits(&self, header: &BlockHeader<'_>) -> bool {
        let any = header.version < 2 || header.boundaries & (1 << 15) != 0;
        any == self.any && (any || header.boundaries == self.boundaries)
    }

    fn run(&self, i: usize) -> NeedleRun<'_> {
        let (a, b, left_bounded, right_bounded) = self.runs[i];
        NeedleRun {
            text: &self.needle[a..b],
            left_bounded,
            right_bounded,
        }
    }
}

/// The fragments of a needle in one block, with which columns may hold
/// each judged on demand (and remembered): the same answers as
/// [`needle_sources_in`]'s `columns`, without probing every column.
pub struct LazySources<'h> {
    header: &'h BlockHeader<'h>,
    bloom: Bloom<'h>,
    frags: std::rc::Rc<NeedleFrags>,
    /// Per fragment and column (slot `f × columns + c`, the first 128):
    /// judged, and the answer. Later slots are judged each time asked.
    known: std::cell::Cell<u128>,
    yes: std::cell::Cell<u128>,
}

impl<'h> LazySources<'h> {
    /// Prepares `needle` for the block with `header` and bloom bytes `bloom`.
    pub fn new(header: &'h BlockHeader<'h>, bloom: &'h [u8], needle: &[u8]) -> Self {
        Self::with_frags(
            header,
            bloom,
            std::rc::Rc::new(NeedleFrags::new(header, needle)),
        )
    }

    /// [`Self::new`] with the block's filter given as a [`Bloom`] (for a
    /// version-2 block: the bytes, or their copy in a filter group).
    pub fn new_in(header: &'h BlockHeader<'h>, bloom: Bloom<'h>, needle: &[u8]) -> Self {
        Self::with_frags_in(
            header,
            bloom,
            std::rc::Rc::new(NeedleFrags::new(header, needle)),
        )
    }

    /// [`Self::new`] with the needle's fragments worked out before (they
    /// must be [`NeedleFrags::fits`] for `header`).
    pub fn with_frags(
        header: &'h BlockHeader<'h>,
        bloom: &'h [u8],
        frags: std::rc::Rc<NeedleFrags>,
    ) -> Self {
        Self::with_frags_in(
            header,
            Bloom::new(if header.version >= 2 { bloom } else { &[] }),
            frags,
        )
    }

    /// [`Self::with_frags`] with the filter given as a [`Bloom`] (see
    /// [`Self::new_in`]).
    pub fn with_frags_in(
        header: &'h BlockHeader<'h>,
        bloom: Bloom<'h>,
        frags: std::rc::Rc<NeedleFrags>,
    ) -> Self {
        LazySources {
            header,
            bloom,
            frags,
            known: std::cell::Cell::new(0),
            yes: std::cell::Cell::new(0),
        }
    }

    /// Whether column `c`'s values may hold every fragment of the needle
    /// that lies wholly inside `[start, end)`.
    pub fn column_may_hold(&self, c: usize, start: usize, end: usize) -> bool {
        let nf = &*self.frags;
        if nf.any {
            return true;
        }
        let ncols = self.header.columns.len();
        for (f, (a, b, idx)) in nf.frags.iter().enumerate() {
            if *a < start || *b > end {
                continue;
            }
            let slot = f * ncols + c;
            let bit = if slot < 128 { 1u128 << slot } else { 0 };
            let ok = if self.known.get() & bit != 0 {
                self.yes.get() & bit != 0
            } else {
                let ok = fragment_fits_column(self.header, c, &nf.needle[*a..*b])
                    && idx
                        .iter()
                        .all(|&i| run_in_column(self.header, &self.bloom, c, &nf.run(i)));
                self.known.set(self.known.get() | bit);
                if ok {
                    self.yes.set(self.yes.get() | bit);
                }
                ok
            };
            if !ok {
                return false;
            }
        }
        true
    }
}

/// An answer of the needle walk: a `bool` for one block, or a mask with a
/// bit per member for a group of blocks judged together ([`GroupHead`]).
/// The walk is monotone (a lookup that answers "present" never turns an
/// answer to "absent"), so the walk over masks answers, bit by bit, what
/// the walk over each member's own filter answers.
pub(crate) trait Verdict: Copy {
    /// Absent everywhere.
    const NONE: Self;
    /// Present everywhere.
    const ALL: Self;
    fn and(self, other: Self) -> Self;
    fn or(self, other: Self) -> Self;
    fn is_none(self) -> bool;
    fn is_all(self) -> bool;
    /// `self && f()`, `f` not called when `self` is absent everywhere.
    #[inline]
    fn and_then(self, f: impl FnOnce() -> Self) -> Self {
        if self.is_none() {
            self
        } else {
            self.and(f())
        }
    }
    /// `self || f()`, `f` not called when `self` is present everywhere.
    #[inline]
    fn or_else(self, f: impl FnOnce() -> Self) -> Self {
        if self.is_all() {
            self
        } else {
            self.or(f())
        }
    }
}

impl Verdict for bool {
    const NONE: bool = false;
    const ALL: bool = true;
    #[inline]
    fn and(self, other: bool) -> bool {
        self && other
    }
    #[inline]
    fn or(self, other: bool) -> bool {
        self || other
    }
    #[inline]
    fn is_none(self) -> bool {
        !self
    }
    #[inline]
    fn is_all(self) -> bool {
        self
    }
}

impl Verdict for u64 {
    const NONE: u64 = 0;
    const ALL: u64 = u64::MAX;
    #[inline]
    fn and(self, other: u64) -> u64 {
        self & other
    }
    #[inline]
    fn or(self, other: u64) -> u64 {
        self | other
    }
    #[inline]
    fn is_none(self) -> bool {
        self == 0
    }
    #[inline]
    fn is_all(self) -> bool {
        self == u64::MAX
    }
}

/// What [`NeedleProbe`] reads of a version-2 header, from a [`BlockHeader`]
/// or its [`PackedHead`] (answers: `bool`), or of a group of blocks judged
/// together ([`GroupHead`], answers: masks).
pub(crate) trait ProbeHead {
    /// The walk's answer.
    type V: Verdict;
    fn flags(&self) -> WalkFlags;
    /// Whether some column may hold a fragment: the union, over columns,
    /// of `f(column index, its record, its PrefixedDecimal prefix)`.
    fn any_column(&self, f: impl FnMut(usize, ProbeColumn, &[u8]) -> Self::V) -> Self::V;
}

impl ProbeHead for BlockHeader<'_> {
    type V = bool;
    fn flags(&self) -> WalkFlags {
        WalkFlags {
            boundaries: self.boundaries,
            has_grams: self.has_grams,
            has_short_grams: self.has_short_grams,
        }
    }
    fn any_column(&self, mut f: impl FnMut(usize, ProbeColumn, &[u8]) -> bool) -> bool {
        self.columns
            .iter()
            .enumerate()
            .any(|(c, col)| f(c, ProbeColumn::of(col), &col.prefix))
    }
}

impl ProbeHead for PackedHead<'_> {
    type V = bool;
    fn flags(&self) -> WalkFlags {
        self.block.flags()
    }
    fn any_column(&self, mut f: impl FnMut(usize, ProbeColumn, &[u8]) -> bool) -> bool {
        (0..self.column_count()).any(|c| f(c, self.record(c), self.prefix_of(c)))
    }
}

/// Blocks judged together: members of one [`BloomGroup`] that share their
/// [`WalkFlags`], with each column position's distinct records and the
/// members that have them.
pub struct GroupHead<'a> {
    /// The members' flags.
    pub flags: WalkFlags,
    /// The members (bit `j`: member `j` of the group).
    pub members: u64,
    /// Per column position: the distinct records there (with their
    /// PrefixedDecimal prefixes) and the members that have each.
    pub columns: &'a [Vec<(ProbeColumn, u64)>],
    /// The prefix bytes the records' [`ProbeColumn::prefix_at`] point into.
    pub prefixes: &'a [u8],
}

impl ProbeHead for GroupHead<'_> {
    type V = u64;
    fn flags(&self) -> WalkFlags {
        self.flags
    }
    fn any_column(&self, mut f: impl FnMut(usize, ProbeColumn, &[u8]) -> u64) -> u64 {
        // Bits of non-members count as present, so that "every member"
        // reads as all bits set; the caller keeps the members' bits.
        let mut acc = !self.members;
        for (c, records) in self.columns.iter().enumerate() {
            for &(col, mask) in records {
                if acc & mask == mask {
                    continue;
                }
                let at = col.prefix_at as usize;
                let len = self.prefixes.get(at).map_or(0, |&n| usize::from(n));
                let prefix = self.prefixes.get(at + 1..at + 1 + len).unwrap_or(&[]);
                acc |= f(c, col, prefix) & mask;
                if acc == u64::MAX {
                    return acc;
                }
            }
        }
        acc
    }
}

/// A needle prepared for many blocks: its token runs and their classes.
#[derive(Clone, Debug)]
pub struct NeedleProbe {
    bytes: Vec<u8>,
    /// Per run: start, end, left bounded, right bounded, token classes.
    runs: Vec<(usize, usize, bool, bool, u8)>,
    /// Per needle byte: its [`alphabet_bit`](super::tokens::alphabet_bit)
    /// (a fragment's alphabet is their union: no byte classified per block).
    byte_bits: Vec<u64>,
    /// Per needle byte: its bit in a header's `boundaries` mask (0 when it
    /// is no boundary byte).
    boundary_bit: Vec<u16>,
    /// Per needle byte: the encodings (bit `e as u8`) that may print it,
    /// [`Encoding::PrefixedDecimal`] left out (it depends on the prefix).
    print_bits: Vec<u16>,
    /// The needle's positions holding a boundary byte (where a block's
    /// boundaries may cut it into fragments), when there are at most
    /// [`MAX_TABLED_CUTS`] of them.
    cuts: Vec<usize>,
    /// [`NeedleProbe::prints`] of every fragment the `cuts` can make,
    /// worked out once: `(start slot) × (cuts + 1) + end slot` (start slot 0
    /// at the needle's start, `j + 1` after cut `j`; end slot `j` at cut
    /// `j`, `cuts` at the end). Empty when there are more cuts.
    frag_prints: Vec<u16>,
    /// Per run: its bloom keys in the templates' scope and in the scopes of
    /// the first [`KEYED_COLUMNS`] columns, and which encodings it fits
    /// (worked out once per query, not once per block: these depend on the
    /// run only).
    facts: Vec<RunFacts>,
    /// How the first-keys shortcut has fared for this needle.
    shortcut: ShortcutRecord,
}

/// How often [`NeedleProbe::answer_from_first_keys`] answered for a needle.
/// A needle whose first keys are present in most blocks (a fragment common
/// in the data) gains nothing from the shortcut and pays a second walk for
/// it: after [`ShortcutRecord::TRIAL`] blocks, such a needle stops trying.
#[derive(Debug, Default)]
struct ShortcutRecord {
    tries: AtomicU32,
    misses: AtomicU32,
}

impl Clone for ShortcutRecord {
    fn clone(&self) -> Self {
        ShortcutRecord {
            tries: AtomicU32::new(self.tries.load(Ordering::Relaxed)),
            misses: AtomicU32::new(self.misses.load(Ordering::Relaxed)),
        }
    }
}

impl ShortcutRecord {
    /// Blocks judged before the record decides.
    const TRIAL: u32 = 64;

    /// Whether the shortcut is worth trying: always during the trial, then
    /// when it answered for at least half of the trial's blocks.
    fn worth_trying(&self) -> bool {
        let tries = self.tries.load(Ordering::Relaxed);
        tries < Self::TRIAL || self.misses.load(Ordering::Relaxed) * 2 <= tries
    }

    /// Notes one try during the trial.
    fn note(&self, answered: bool) {
        if self.tries.load(Ordering::Relaxed) < Self::TRIAL {
            self.tries.fetch_add(1, Ordering::Relaxed);
            if !answered {
                self.misses.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Most boundary bytes in a needle for which a [`NeedleProbe`] tables its
/// fragments' prints (their number grows with the square of the cuts).
const MAX_TABLED_CUTS: usize = 32;

/// Columns whose bloom keys a [`NeedleProbe`] works out beforehand (a
/// block's later columns, rare, have theirs worked out when asked).
const KEYED_COLUMNS: usize = 64;

/// What a [`NeedleProbe`] knows of one run before it meets a block.
#[derive(Clone, Debug)]
struct RunFacts {
    template: RunKeys,
    columns: Vec<RunKeys>,
    /// The encodings (bit `e as u8`) the run fits ([`Encoding::run_fits`],
    /// the same for a whole token and a part of one once PrefixedDecimal is
    /// left out).
    fits: u16,
    /// The run's [`token_features`].
    features: u8,
}

/// Every encoding but [`Encoding::PrefixedDecimal`], whose printed bytes
/// depend on the column's prefix.
const UNPREFIXED: [Encoding; 9] = [
    Encoding::Const,
    Encoding::Dict,
    Encoding::Decimal,
    Encoding::Timestamp,
    Encoding::Hex,
    Encoding::Plain,
    Encoding::Ipv4,
    Encoding::Shared,
    Encoding::Skeleton,
];

/// The encodings in [`UNPREFIXED`] for which `yes` holds, as a bit mask.
fn encodings_where(yes: impl Fn(Encoding) -> bool) -> u16 {
    UNPREFIXED
        .iter()
        .filter(|&&e| yes(e))
        .fold(0, |m, &e| m | 1 << (e as u8))
}

/// Most first keys a [`FirstKeys`] notes; a walk that asks more is judged
/// the plain way.
const FIRST_KEYS_MAX: usize = 24;

/// The first key of each bloom lookup a walk asked, noted by a walk in which
/// every lookup answered "absent" ([`NeedleProbe::may_match_v2`]).
///
/// A lookup answers "absent" whenever its first key is absent: a token or
/// gram lookup needs all its keys, a stride lookup all the keys of one
/// alignment (its first key is one of those). So when every noted first key
/// is absent, the real walk asks the same lookups, gets the same answers and
/// ends as the noted walk did. The keys' slots are hinted as they are noted,
/// and then read together: the few cache and TLB misses a block's bloom costs
/// a needle new to the process overlap instead of being paid one after
/// another (they were most of a first search's time).
#[derive(Default)]
struct FirstKeys {
    keys: [Cell<u64>; FIRST_KEYS_MAX],
    /// Keys noted; more than [`FIRST_KEYS_MAX`] when some did not fit.
    n: Cell<usize>,
}

impl FirstKeys {
    /// Notes (and hints) the first keys `ask` reads of `keys`; answers
    /// "absent".
    fn note(&self, bloom: &Bloom<'_>, keys: &RunKeys, ask: BloomAsk) -> bool {
        let first: &[u64] = match ask {
            BloomAsk::Token => std::slice::from_ref(&keys.token),
            BloomAsk::Grams => keys.grams.get(..1).unwrap_or(&[]),
            BloomAsk::Short => keys.short.get(..1).unwrap_or(&[]),
            BloomAsk::Stride { at_token_start } => {
                let alignments = if at_token_start { 1 } else { STRIDE };
                keys.stride.get(..alignments).unwrap_or(&keys.stride)
            }
        };
        for &k in first {
            let n = self.n.get();
            if let Some(slot) = self.keys.get(n) {
                slot.set(k);
                bloom.hint_keys(&[k]);
            }
            self.n.set(n.saturating_add(1));
        }
        false
    }

    /// Whether every noted key is absent from `bloom` (false when some
    /// did not fit).
    fn all_absent(&self, bloom: &Bloom<'_>) -> bool {
        let n = self.n.get();
        n <= FIRST_KEYS_MAX
            && self.keys[..n]
                .iter()
                .all(|k| !bloom.may_contain_keys(&[k.get()]))
    }
}

/// Asks `bloom` for a run by its keys.
fn look_up(bloom: &Bloom<'_>, keys: &RunKeys, ask: BloomAsk) -> bool {
    match ask {
        BloomAsk::Token => bloom.may_contain_keys(std::slice::from_ref(&keys.token)),
        BloomAsk::Grams => bloom.may_contain_keys(&keys.grams),
        BloomAsk::Short => bloom.may_contain_keys(&keys.short),
        BloomAsk::Stride { at_token_start } => {
            bloom.may_contain_stride_keys(&keys.stride, at_token_start)
        }
    }
}

impl NeedleProbe {
    /// Prepares `needle`.
    pub fn new(needle: &[u8]) -> Self {
        let base = needle.as_ptr() as usize;
        let found = needle_runs(needle);
        let runs = found
            .iter()
            .map(|r| {
                let at = r.text.as_ptr() as usize - base;
                (
                    at,
                    at + r.text.len(),
                    r.left_bounded,
                    r.right_bounded,
                    token_classes(r.text),
                )
            })
            .collect();
        let facts = found
            .iter()
            .map(|r| RunFacts {
                template: RunKeys::new(Scope::Template, r.text),
                features: run_features(r.text),
                columns: (0..KEYED_COLUMNS)
                    .map(|c| RunKeys::new(Scope::Column(c as u32), r.text))
                    .collect(),
                fits: encodings_where(|e| {
                    let whole = e.run_fits(r.text, &[], true);
                    debug_assert_eq!(whole, e.run_fits(r.text, &[], false));
                    whole
                }),
            })
            .collect();
        let mut probe = NeedleProbe {
            shortcut: ShortcutRecord::default(),
            cuts: Vec::new(),
            frag_prints: Vec::new(),
            facts,
            print_bits: needle
                .iter()
                .map(|&b| encodings_where(|e| e.may_print(&[b], &[])))
                .collect(),
            bytes: needle.to_vec(),
            runs,
            byte_bits: needle.iter().map(|&b| alphabet(&[b])).collect(),
            boundary_bit: needle
                .iter()
                .map(|b| {
                    BOUNDARY_BYTES
                        .iter()
                        .position(|x| x == b)
                        .map_or(0, |i| 1 << i)
                })
                .collect(),
        };
        let cuts: Vec<usize> = (0..needle.len())
            .filter(|&i| probe.boundary_bit[i] != 0)
            .collect();
        if cuts.len() <= MAX_TABLED_CUTS {
            let k = cuts.len();
            let starts = std::iter::once(0).chain(cuts.iter().map(|&c| c + 1));
            let ends: Vec<usize> = cuts.iter().copied().chain([needle.len()]).collect();
            let table = starts
                .flat_map(|a| ends.iter().map(move |&b| (a, b)))
                .map(|(a, b)| if a < b { probe.prints_now(a, b) } else { 0 })
                .collect();
            debug_assert_eq!(k + 1, ends.len());
            probe.cuts = cuts;
            probe.frag_prints = table;
        }
        probe
    }

    /// Whether judging a block still starts with the first-keys shortcut
    /// for this needle (it stops after a trial in which it rarely answered).
    pub fn tries_first_keys(&self) -> bool {
        self.shortcut.worth_trying()
    }

    /// The needle.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether some line of the block may contain the needle (the same
    /// answer as [`needle_sources_in`] being `Some`, without allocating).
    pub fn may_match(&self, header: &BlockHeader<'_>, bloom: &[u8]) -> bool {
        if header.version < 2 || header.boundaries & (1 << 15) != 0 {
            return needle_sources_in(header, bloom, &self.bytes).is_some();
        }
        self.judge_v2(header, bloom)
    }

    /// [`Self::may_match`] for a block whose header is [`ProbeBlock::packed`],
    /// from its packed head alone: the same answer.
    pub fn may_match_packed(&self, head: PackedHead<'_>, bloom: &[u8]) -> bool {
        debug_assert!(head.block.packed);
        self.judge_v2(&head, bloom)
    }

    /// The version-2 judgement: first walked with every bloom lookup
    /// answering "absent" while their first keys are noted ([`FirstKeys`]);
    /// when all of those are absent indeed, that walk's answer is the
    /// answer, else the block is walked again with real lookups.
    fn judge_v2(&self, head: &impl ProbeHead<V = bool>, bloom: &[u8]) -> bool {
        if self.shortcut.worth_trying() {
            let answer = self.answer_from_first_keys(head, bloom);
            self.shortcut.note(answer.is_some());
            if let Some(answer) = answer {
                debug_assert_eq!(
                    answer,
                    self.may_match_v2(head, &Bloom::new(bloom), &look_up)
                );
                return answer;
            }
        }
        self.may_match_v2(head, &Bloom::new(bloom), &look_up)
    }

    /// [`Self::may_match_packed`] of every member of a group at once:
    /// bit `j` of the answer is member `j`'s answer (bits of non-members
    /// are 0). `group`'s filters are the members' own, so each bit equals
    /// what the member's packed head and filter answer.
    pub fn may_match_group(&self, head: &GroupHead<'_>, group: &BloomGroup) -> u64 {
        // Lookups repeat across a position's records (the same keys):
        // each is worked out once per group. Keys are known by their token
        // key, a hash of the run and its scope that all its other keys
        // derive from (a position past `KEYED_COLUMNS` has its keys made
        // anew for each lookup, so their address tells nothing).
        let asked: std::cell::RefCell<Vec<(u64, u8, u64)>> = Default::default();
        let outside = !head.members;
        let look = |g: &BloomGroup, keys: &RunKeys, ask: BloomAsk| -> u64 {
            let (code, at_start) = match ask {
                BloomAsk::Token => (0u8, false),
                BloomAsk::Grams => (1, false),
                BloomAsk::Short => (2, false),
                BloomAsk::Stride { at_token_start } => (3, at_token_start),
            };
            let code = code | u8::from(at_start) << 2;
            let id = keys.token;
            if let Some(&(_, _, m)) = asked.borrow().iter().find(|a| a.0 == id && a.1 == code) {
                return m;
            }
            let m = outside
                | match ask {
                    BloomAsk::Token => g.key_mask(keys.token),
                    BloomAsk::Grams => g.keys_mask(&keys.grams),
                    BloomAsk::Short => g.keys_mask(&keys.short),
                    BloomAsk::Stride { at_token_start } => {
                        g.stride_mask(&keys.stride, at_token_start)
                    }
                };
            asked.borrow_mut().push((id, code, m));
            m
        };
        self.may_match_v2(head, group, &look) & head.members
    }

    /// The walk with every lookup answering "absent", when the first keys
    /// it noted are all absent indeed (see [`FirstKeys`]); `None` otherwise.
    pub(crate) fn answer_from_first_keys(
        &self,
        head: &impl ProbeHead<V = bool>,
        bloom: &[u8],
    ) -> Option<bool> {
        let firsts = FirstKeys::default();
        let bloom = Bloom::new(bloom);
        let assumed = self.may_match_v2(head, &bloom, &|b, k, a| firsts.note(b, k, a));
        firsts.all_absent(&bloom).then_some(assumed)
    }

    /// The version-2 judgement with exact boundary bytes, asking the bloom
    /// through `look`.
    fn may_match_v2<H: ProbeHead, B>(
        &self,
        head: &H,
        bloom: &B,
        look: &impl Fn(&B, &RunKeys, BloomAsk) -> H::V,
    ) -> H::V {
        let boundaries = head.flags().boundaries;
        let needle = &self.bytes;
        let mut answer = H::V::ALL;
        let mut start = 0usize;
        let mut i = 0usize;
        while i <= needle.len() {
            let cut = i == needle.len() || boundaries & self.boundary_bit[i] != 0;
            if cut {
                if i > start {
                    answer = answer.and(self.fragment_fits(head, bloom, start, i, look));
                    if answer.is_none() {
                        return answer;
                    }
                }
                start = i + 1;
            }
            i += 1;
        }
        answer
    }

    /// The encodings (bit `e as u8`, PrefixedDecimal left out) that may
    /// print every byte of the needle's `a..b` ([`Encoding::may_print`]).
    fn prints(&self, a: usize, b: usize) -> u16 {
        if self.frag_prints.is_empty() {
            return self.prints_now(a, b);
        }
        // Fragments a block's boundaries cut start at the needle's start or
        // after a cut and end at a cut or the needle's end; others are
        // worked out.
        let k = self.cuts.len();
        let start = match a {
            0 => Some(0),
            _ => self.cuts.binary_search(&(a - 1)).ok().map(|j| j + 1),
        };
        let end = match b == self.bytes.len() {
            true => Some(k),
            false => self.cuts.binary_search(&b).ok(),
        };
        match (start, end) {
            (Some(s), Some(e)) if a < b => self.frag_prints[s * (k + 1) + e],
            _ => self.prints_now(a, b),
        }
    }

    /// [`Self::prints`] worked out from the needle's bytes.
    fn prints_now(&self, a: usize, b: usize) -> u16 {
        let bytes = self.print_bits[a..b].iter().fold(u16::MAX, |m, &x| m & x);
        bytes & encodings_where(|e| e.shape_fits(&self.bytes[a..b]))
    }

    /// Whether the fragment `a..b` fits the templates or some column.
    fn fragment_fits<H: ProbeHead, B>(
        &self,
        head: &H,
        bloom: &B,
        a: usize,
        b: usize,
        look: &impl Fn(&B, &RunKeys, BloomAsk) -> H::V,
    ) -> H::V {
        let runs: &[(usize, usize, bool, bool, u8)] = &self.runs;
        let in_frag = |(_, r): &(usize, &(usize, usize, bool, bool, u8))| r.0 >= a && r.1 <= b;
        let run = |r: &(usize, usize, bool, bool, u8)| NeedleRun {
            text: &self.bytes[r.0..r.1],
            left_bounded: r.2,
            right_bounded: r.3,
        };
        let mut in_templates = H::V::ALL;
        for (i, r) in runs.iter().enumerate().filter(in_frag) {
            in_templates = in_templates.and_then(|| {
                let flags = head.flags();
                template_may_hold(flags.has_grams, flags.has_short_grams, &run(r), |ask| {
                    look(bloom, &self.facts[i].template, ask)
                })
            });
            if in_templates.is_none() {
                break;
            }
        }
        if in_templates.is_all() {
            return in_templates;
        }
        let frag = &self.bytes[a..b];
        let letters = self.byte_bits[a..b].iter().fold(0, |m, &x| m | x);
        let prints = self.prints(a, b);
        let may_print = |col: &ProbeColumn, prefix: &[u8]| match col.encoding {
            Encoding::PrefixedDecimal => col.encoding.may_print(frag, prefix),
            e => prints & 1 << (e as u8) != 0,
        };
        let in_columns = head.any_column(|c, col, prefix| {
            let possible = letters & !col.alphabet == 0
                && runs.iter().enumerate().filter(in_frag).all(|(_, r)| {
                    let len = r.1 - r.0;
                    r.4 & !col.classes == 0
                        && (col.max_token_len == TOKEN_LEN_UNKNOWN
                            || len <= usize::from(col.max_token_len))
                })
                && may_print(&col, prefix);
            if !possible {
                return H::V::NONE;
            }
            let mut held = H::V::ALL;
            for (i, r) in runs.iter().enumerate().filter(in_frag) {
                let run = run(r);
                let facts = &self.facts[i];
                let fits = || match col.encoding {
                    Encoding::PrefixedDecimal => {
                        col.encoding
                            .run_fits(run.text, prefix, run.is_whole_token())
                    }
                    e => facts.fits & 1 << (e as u8) != 0,
                };
                held = held.and_then(|| {
                    column_may_hold(col, &run, (r.4, facts.features), fits, |ask| {
                        match facts.columns.get(c) {
                            Some(keys) => look(bloom, keys, ask),
                            None => {
                                look(bloom, &RunKeys::new(Scope::Column(c as u32), run.text), ask)
                            }
                        }
                    })
                });
                if held.is_none() {
                    break;
                }
            }
            held
        });
        in_templates.or(in_columns)
    }
}

/// Whether a value of column `c` could contain `frag` at all, judging by
/// the bytes its encoding prints.
fn fragment_fits_column(header: &BlockHeader<'_>, c: usize, frag: &[u8]) -> bool {
    let head = &header.columns[c];
    alphabet(frag) & !head.alphabet == 0 && head.encoding.may_print(frag, &head.prefix)
}

/// How a run is looked up in a bloom: as a whole token, by its grams, or
/// by its short grams.
#[derive(Clone, Copy)]
enum BloomAsk {
    Token,
    Grams,
    Short,
    /// By its stride grams; `at_token_start` when the run starts a token.
    Stride {
        at_token_start: bool,
    },
}

/// Version 2: whether the templates may hold `run`.
pub fn run_in_template(header: &BlockHeader<'_>, bloom: &Bloom<'_>, run: &NeedleRun<'_>) -> bool {
    template_may_hold(
        header.has_grams,
        header.has_short_grams,
        run,
        |ask| match ask {
            BloomAsk::Token => bloom.may_contain(Scope::Template, run.text),
            BloomAsk::Grams => bloom.may_contain_grams(Scope::Template, run.text),
            BloomAsk::Short => bloom.may_contain_short_grams(Scope::Template, run.text),
            // Templates keep no stride grams, and are never asked for them.
            BloomAsk::Stride { .. } => true,
        },
    )
}

/// [`run_in_template`], the bloom asked through `look`. Every template
/// token longer than [`SHORT_GRAM`] bytes put its short grams in the bloom
/// (when `has_short_grams`), and every one of [`GRAM`] bytes or more its
/// grams (when `has_grams`): a run that long lying in a template token, or
/// being one, has all of them there. Only a run of exactly [`SHORT_GRAM`]
/// bytes may be a template token that put no short grams (one as long as
/// itself), so only there does the token key stand in for them. (Asking the
/// token key *or* the short grams of a longer run let each block's one-key
/// false positive through: about 4 % of the 2M varied data's blocks kept
/// for a 7-character id by their templates alone.)
fn template_may_hold<V: Verdict>(
    has_grams: bool,
    has_short_grams: bool,
    run: &NeedleRun<'_>,
    mut look: impl FnMut(BloomAsk) -> V,
) -> V {
    let len = run.text.len();
    let by_grams = has_grams && len >= GRAM;
    let by_short = has_short_grams && len > SHORT_GRAM;
    if run.is_whole_token() {
        let token = look(BloomAsk::Token);
        let grams = token.and_then(|| {
            if by_grams {
                look(BloomAsk::Grams)
            } else {
                V::ALL
            }
        });
        grams.and_then(|| {
            if by_short {
                look(BloomAsk::Short)
            } else {
                V::ALL
            }
        })
    } else if by_grams {
        look(BloomAsk::Grams)
    } else if by_short {
        look(BloomAsk::Short)
    } else if has_short_grams && len == SHORT_GRAM {
        look(BloomAsk::Token).or_else(|| look(BloomAsk::Short))
    } else {
        V::ALL
    }
}

/// Version 2: whether a value of column `c` may hold `run` (as the whole
/// token, prefix, suffix or anywhere, as the run's bounds require).
pub fn run_in_column(
    header: &BlockHeader<'_>,
    bloom: &Bloom<'_>,
    c: usize,
    run: &NeedleRun<'_>,
) -> bool {
    let scope = Scope::Column(c as u32);
    let col = &header.columns[c];
    let fits = || {
        col.encoding
            .run_fits(run.text, &col.prefix, run.is_whole_token())
    };
    column_may_hold(
        ProbeColumn::of(col),
        run,
        (token_classes(run.text), run_features(run.text)),
        fits,
        |ask| match ask {
            BloomAsk::Token => bloom.may_contain(scope, run.text),
            BloomAsk::Grams => bloom.may_contain_grams(scope, run.text),
            BloomAsk::Short => bloom.may_contain_short_grams(scope, run.text),
            BloomAsk::Stride { at_token_start } => {
                bloom.may_contain_stride(scope, run.text, at_token_start)
            }
        },
    )
}

/// [`run_in_column`] given the run's [`token_classes`] and
/// [`run_features`], the bloom asked through `look`.
fn column_may_hold<V: Verdict>(
    col: ProbeColumn,
    run: &NeedleRun<'_>,
    (classes, features): (u8, u8),
    fits: impl FnOnce() -> bool,
    mut look: impl FnMut(BloomAsk) -> V,
) -> V {
    let whole = run.is_whole_token();
    let enc = col.encoding;
    if !enc.is_string() && !fits() {
        return V::NONE;
    }
    if classes & !col.classes != 0 {
        return V::NONE;
    }
    let len = run.text.len();
    let known = col.max_token_len != TOKEN_LEN_UNKNOWN;
    let longest = usize::from(col.max_token_len);
    if known && len > longest {
        return V::NONE;
    }
    // A run with a feature (`k3x9q2m`: a digit before a letter) lies only
    // in tokens with it: in none longer than the column's longest such
    // token, and in one that long only as the whole token.
    let known_len = |i: usize| {
        let l = col.feature_token_lens[i];
        (l != TOKEN_LEN_UNKNOWN).then_some(usize::from(l))
    };
    let featured = (0..TOKEN_FEATURES)
        .filter(|&i| features & 1 << i != 0)
        .filter_map(known_len)
        .min();
    if featured.is_some_and(|l| len > l) {
        return V::NONE;
    }
    // A run of hex digits (a session id) or of digits (an order number)
    // lies inside a run of such bytes at least as long.
    if (features & RUN_ALL_HEX != 0 && known_len(HEX_RUN).is_some_and(|l| len > l))
        || (features & RUN_ALL_DIGITS != 0 && known_len(DIGIT_RUN).is_some_and(|l| len > l))
    {
        return V::NONE;
    }
    // A long run inside a long number or hex id: the stride grams of one
    // alignment must all be there (a run that starts a token has only the
    // first).
    let strided = if col.has_stride_grams && len >= STRIDE_MIN_RUN {
        look(BloomAsk::Stride {
            at_token_start: run.left_bounded,
        })
    } else {
        V::ALL
    };
    if strided.is_none() || !enc.tokens_in_bloom() {
        return strided;
    }
    let grams = col.has_grams && len >= GRAM;
    if whole || (known && len == longest) || featured == Some(len) {
        if enc == Encoding::Hex && len < MIN_HEX_TOKEN {
            return strided; // short hex tokens are not indexed
        }
        // A whole token of a column with grams has its grams there too:
        // asking both keeps a token probe's false positives (one key) from
        // letting through blocks that its grams rule out.
        let token = strided.and_then(|| look(BloomAsk::Token));
        return token.and_then(|| if grams { look(BloomAsk::Grams) } else { V::ALL });
    }
    if grams {
        return strided.and_then(|| look(BloomAsk::Grams));
    }
    strided
}

/// Version 1: whether some source may hold `run`.
fn run_fits_v1(header: &BlockHeader<'_>, bloom: &BloomV1<'_>, run: &NeedleRun<'_>) -> bool {
    if !run.is_whole_token() {
        return true;
    }
    bloom.may_contain(run.text)
        || header
            .columns
            .iter()
            .any(|c| !c.encoding.is_string() && c.encoding.token_fits(run.text, &c.prefix))
}

#[cfg(test)]
mod probe_tests {
    use super::*;
    use crate::block::bloom::BloomBuilder;
    use proptest::prelude::*;

    /// The lookups `template_may_hold` makes of `run`, every one answering `answer`.
    fn template_asks(run: &NeedleRun<'_>, answer: bool) -> Vec<&'static str> {
        let mut asks = Vec::new();
        template_may_hold(true, true, run, |ask| {
            asks.push(match ask {
                BloomAsk::Token => "token",
                BloomAsk::Grams => "grams",
                BloomAsk::Short => "short",
                BloomAsk::Stride { .. } => "stride",
            });
            answer
        });
        asks
    }

    fn run(text: &[u8], left_bounded: bool, right_bounded: bool) -> NeedleRun<'_> {
        NeedleRun {
            text,
            left_bounded,
            right_bounded,
        }
    }

    /// A run longer than a short gram is judged by its short grams alone:
    /// every template token that could hold it put them in the bloom, and
    /// asking the token key as well only added that key's false positives.
    #[test]
    fn template_runs_past_a_short_gram_are_judged_by_their_grams() {
        assert_eq!(
            template_asks(&run(b"h5n8r3t", false, false), false),
            ["short"]
        );
        assert_eq!(
            template_asks(&run(b"h5n8r3t", false, false), true),
            ["short"]
        );
        // Exactly a short gram long: it may be a template token of its own
        // length, which put no short grams.
        assert_eq!(
            template_asks(&run(b"h5n8", false, false), false),
            ["token", "short"]
        );
        // A whole token needs its key and its short grams (or grams).
        assert_eq!(
            template_asks(&run(b"h5n8r3t", true, true), true),
            ["token", "short"]
        );
        assert_eq!(
            template_asks(&run(b"h5n8r3t", true, true), false),
            ["token"]
        );
        assert_eq!(
            template_asks(&run(b"h5n8r3tq2", false, false), true),
            ["grams"]
        );
        assert_eq!(
            template_asks(&run(b"h5n8r3tq2", true, true), true),
            ["token", "grams", "short"]
        );
        assert!(template_asks(&run(b"h5n", false, false), true).is_empty());
    }

    proptest! {
        /// No false negative: every piece of every template token (a whole
        /// token with both bounds, a start or an end with one) may lie in
        /// the templates of a bloom built as the block builder builds it.
        #[test]
        fn template_pieces_are_never_ruled_out(
            tokens in proptest::collection::vec("[a-z0-9_]{1,14}", 1..12),
            seps in proptest::collection::vec("[ :,=\"{}]{1,3}", 12),
        ) {
            let mut text = Vec::new();
            for (t, sep) in tokens.iter().zip(&seps) {
                text.extend_from_slice(t.as_bytes());
                text.extend_from_slice(sep.as_bytes());
            }
            let mut b = BloomBuilder::default();
            b.add_tokens(Scope::Template, &text);
            b.add_grams(Scope::Template, &text);
            b.add_short_grams(Scope::Template, &text);
            let bytes = b.build();
            let bloom = Bloom::new(&bytes);
            for t in &tokens {
                let t = t.as_bytes();
                for a in 0..t.len() {
                    for e in a + 1..=t.len() {
                        for (l, r) in [(false, false), (a == 0, false), (false, e == t.len()), (a == 0, e == t.len())] {
                            let piece = run(&t[a..e], l, r);
                            let held = template_may_hold(true, true, &piece, |ask| match ask {
                                BloomAsk::Token => bloom.may_contain(Scope::Template, piece.text),
                                BloomAsk::Grams => bloom.may_contain_grams(Scope::Template, piece.text),
                                BloomAsk::Short => bloom.may_contain_short_grams(Scope::Template, piece.text),
                                BloomAsk::Stride { .. } => true,
                            });
                            prop_assert!(held, "{:?} of {:?}", piece.text, t);
                        }
                    }
                }
            }
        }
    }

    proptest! {
        /// A probe's per-byte print masks, folded over a fragment, say what
        /// each encoding's `may_print` says of it; its run masks what
        /// `run_fits` says of each run, whole token or not.
        #[test]
        fn masks_agree_with_the_encodings(needle in "[0-9a-zA-Z_.:TZ -]{1,24}") {
            let probe = NeedleProbe::new(needle.as_bytes());
            let n = needle.len();
            for a in 0..n {
                for b in a + 1..=n {
                    let frag = &needle.as_bytes()[a..b];
                    for e in UNPREFIXED {
                        prop_assert_eq!(
                            probe.prints(a, b) & 1 << (e as u8) != 0,
                            e.may_print(frag, &[]),
                            "{:?} {:?}", e, frag
                        );
                    }
                }
            }
            for (r, f) in needle_runs(needle.as_bytes()).iter().zip(&probe.facts) {
                for e in UNPREFIXED {
                    for whole in [false, true] {
                        prop_assert_eq!(f.fits & 1 << (e as u8) != 0, e.run_fits(r.text, &[], whole));
                    }
                }
            }
        }
    }
}
