//! Choosing rows by line filter: the row mask of a query's line filters,
//! substring filters decided wholly from the templates and columns, regexp
//! filters as far as their literals and split sites go, and the rest tested
//! on lines rebuilt for just the rows still open.

use super::value_tests::{MemoKey, OnSkeletons};
use super::BlockEval;
use crate::exec::query::{CompiledQuery, FilterPlan};
use runakefli_storage::block::digits::skeleton_pieces;
use runakefli_storage::block::hash::FastMap as HashMap;
use runakefli_storage::block::prune::LazySources;
use runakefli_storage::StorageError;

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

impl<'r, 'a> BlockEval<'r, 'a> {
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
            !crate::exec::row_mask::any_set(&keep[..range.start])
                && !crate::exec::row_mask::any_set(&keep[range.end..]),
            "rows kept outside the time range"
        );
        for f in &q.filters {
            if !crate::exec::row_mask::any_set(&keep[range.clone()]) {
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
                    let src = || LazySources::new_in(header, self.bloom_view(), prefix);
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
}
