//! Testing a column's values: a value test's verdict per wanted row,
//! memoized per dictionary entry (a part's shared dictionary's entries once
//! per worker, across blocks), judged on skeletons where the test allows,
//! and on packed-hex columns without unpacking a value.

use super::BlockEval;
use crate::exec::needle::{TestKind, ValueTest};
use runakefli_storage::block::encoding::{Encoding, Values};
use runakefli_storage::block::hash::FastMap as HashMap;
use runakefli_storage::block::hex_search::Anchor;
use runakefli_storage::block::reader::SharedIndexView;
use runakefli_storage::block::shared::SharedDict;
use runakefli_storage::StorageError;

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
    pub(super) fn dict_may_hold(&mut self, dict: &SharedDict, s: &[u8]) -> bool {
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
pub(super) struct SharedColumn<'a> {
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

impl<'r, 'a> BlockEval<'r, 'a> {
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
    pub(super) fn hex_verdicts(
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
        out.clear();
        if !equal.contains(&true) {
            // No value holds the stretch (a rare id's usual answer): every
            // row is a "no", without mapping rows to values.
            out.resize(n, 1);
            self.spare.borrow_mut().hex_equal = equal;
            return Ok(true);
        }
        let (first, end) = (self.first, self.end);
        let vidx = self.value_index(c);
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
