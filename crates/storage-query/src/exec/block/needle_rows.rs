//! Choosing rows by needle: the rows whose line contains a needle, decided
//! per template from its plan (always, never, or column tests on its
//! slots), with column verdicts from [`super::value_tests`] and lines
//! rebuilt only for templates the plan cannot decide.

use super::value_tests::{MemoKey, OnSkeletons};
use super::BlockEval;
use crate::exec::needle::{TestKind, ValueTest};
use crate::exec::query::CompiledQuery;
use runakefli_storage::block::digits::{skeleton_pieces, skeleton_safe};
use runakefli_storage::block::prune::{LazySources, NeedleFrags};
use runakefli_storage::StorageError;

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
pub(super) struct ContainsScratch {
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
    pub(super) hit: Vec<bool>,
    pub(super) maybe: Vec<bool>,
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
    /// Where in `column_verdicts` the verdicts `part` keeps for needle
    /// `n`'s test `test` are. (An index, not a clone of the shared
    /// verdicts: both workers cloning and dropping the same `Arc` for every
    /// column of every block kept its count's cache line moving between
    /// them.)
    fn verdicts_index(
        &mut self,
        part: &runakefli_storage::part::Part,
        n: usize,
        test: &ValueTest,
        needle: &[u8],
    ) -> usize {
        let key = (part.serial(), n, *test);
        if let Some(i) = self.column_verdicts.iter().position(|(k, _)| *k == key) {
            return i;
        }
        // The needle (UTF-8: no 0xff byte), then the test.
        let mut bytes = needle.to_vec();
        bytes.push(0xff);
        bytes.extend_from_slice(&(test.start as u64).to_le_bytes());
        bytes.extend_from_slice(&(test.end as u64).to_le_bytes());
        bytes.push(test.kind as u8);
        let v = part.column_verdicts(&bytes);
        self.column_verdicts.push((key, v));
        self.column_verdicts.len() - 1
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

impl<'r, 'a> BlockEval<'r, 'a> {
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
                                LazySources::with_frags_in(header, self.bloom_view(), frags.clone())
                            };
                            use runakefli_storage::part::needle_memo;
                            let kept = self.verdicts_in.and_then(|(part, block)| {
                                let slot = part.column_slot(block, c)?;
                                Some((sc.verdicts_index(part, n, &test, needle), slot))
                            });
                            let known = kept.map_or(needle_memo::UNKNOWN, |(v, s)| {
                                needle_memo::get(&sc.column_verdicts[v].1, s)
                            });
                            let possible = match known {
                                needle_memo::NO => false,
                                needle_memo::MAYBE => true,
                                _ => {
                                    let alpha = sc.stretch_alphabet(n, &test, needle);
                                    let ok =
                                        self.test_possible(c, &test, needle, alpha, &sources, src)?;
                                    if let Some((v, s)) = kept {
                                        needle_memo::set(&sc.column_verdicts[v].1, s, ok);
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
        // No tester holds on any row (a rare needle's usual answer in a
        // block its bloom let through): only templates that hold always or
        // need their lines rebuilt can have hits, and without them no row
        // has one, so the rows need no look.
        if verdicts.iter().all(|v| memchr::memchr(2, v).is_none())
            && !sc
                .tpl
                .iter()
                .any(|t| matches!(t, TplNeedle::Always | TplNeedle::Rebuild))
        {
            sc.spare_verdicts.append(&mut verdicts);
            sc.verdicts = verdicts;
            return Ok(());
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
}
