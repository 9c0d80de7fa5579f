//! Reading columns: a column's decoded values (kept in the decoded cache
//! across queries), its Decimal values as numbers, and per row the index of
//! its value, numbered only over the rows in the time range.

use super::{BlockEval, TailTemplates};
use runakefli_storage::block::encoding::{Encoding, Values};
use runakefli_storage::StorageError;

/// Per row of a block: the index of its value in one column.
pub(super) enum ValueIndex {
    /// Row `i` holds value `i` (the first `rows` of the shared identity).
    Identity(std::rc::Rc<[u32]>, usize),
    /// Per row (`u32::MAX`: the row's template lacks the column).
    Map(Vec<u32>),
}

impl ValueIndex {
    pub(super) fn as_slice(&self) -> &[u32] {
        match self {
            ValueIndex::Identity(id, rows) => &id[..*rows],
            ValueIndex::Map(v) => v,
        }
    }
}

/// Which rows of a block hold a column: those whose template has
/// `holds[t]`, `values` of them in all (the column's count, which the
/// block's directory check matched with the templates' rows).
#[derive(Clone, Copy)]
struct Holders<'h> {
    holds: &'h [bool],
    values: usize,
}

/// The value positions of rows `window` (`[first, end)`) of `rows` in a
/// column held as `column` says, given the templates of rows `base..rows`
/// in `tail` (`base` at most `first`): one entry per row, `u32::MAX` for
/// rows lacking the column and for every row outside the window, which a
/// [`BlockEval`] never reads. The values before the window are counted
/// from whichever end is nearer (from the back only, when the front rows'
/// templates are not given): a log query past its cutoff opens the last few
/// rows of most blocks, and numbering every row cost ~2,400 instructions a
/// column and block (callgrind, q14).
fn window_value_index(
    mut out: Vec<u32>,
    rows: usize,
    window: std::ops::Range<usize>,
    tail: &TailTemplates<'_>,
    column: Holders<'_>,
) -> Vec<u32> {
    let (base, tpl) = (tail.base(), tail.templates());
    let Holders {
        holds,
        values: total,
    } = column;
    out.clear();
    out.resize(rows, u32::MAX);
    let (first, end) = (window.start.min(rows), window.end.min(rows));
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

impl<'r, 'a> BlockEval<'r, 'a> {
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
                let column = Holders {
                    holds: &holds,
                    values: self.r.column_len(c),
                };
                let out = window_value_index(buf, self.rows(), self.first..self.end, &tail, column);
                self.spare.borrow_mut().holds = holds;
                self.vidx[c] = Some(ValueIndex::Map(out));
            }
        }
        self.vidx[c].as_ref().expect("just set").as_slice()
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
                        let tail = TailTemplates::From(base, tpl[base..].into());
                        let column = Holders {
                            holds: &holds,
                            values: n as usize,
                        };
                        let w = window_value_index(vec![7; 3], rows, first..end, &tail, column);
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
}
