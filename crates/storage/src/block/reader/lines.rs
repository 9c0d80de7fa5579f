//! Whole lines: rebuilt from the templates and the columns the kept rows
//! use, by decoding whole columns or, for sparse selections, only the
//! values the rows hold.

use super::templates::Template;
use super::{bad, BlockReader};
use crate::block::encoding::{decode_column_at, Encoding, Values};
use crate::StorageError;

/// Spells out a row of template `t`: its pieces with, per slot, value
/// `next[c]` of the slot's column `c` (then advanced).
fn assemble_line(
    t: &Template,
    cols: &[Option<Values>],
    next: &mut [usize],
) -> Result<String, StorageError> {
    let mut line = Vec::with_capacity(t.text().len() + 64);
    line.extend_from_slice(t.piece(0));
    for (k, &c) in t.slots.iter().enumerate() {
        let c = c as usize;
        let values = cols[c]
            .as_ref()
            .ok_or_else(|| bad("column of a kept row not decoded"))?;
        line.extend_from_slice(values.get(next[c]));
        next[c] += 1;
        line.extend_from_slice(t.piece(k + 1));
    }
    String::from_utf8(line).map_err(|_| bad("line is not utf-8"))
}

/// A row selection keeping at most one row in this many is rebuilt row by
/// row ([`BlockReader::lines_at`]) instead of by decoding whole columns.
const SPARSE_REBUILD: usize = 4;

impl<'a> BlockReader<'a> {
    /// Rebuilds every line, byte-identical to what was pushed.
    pub fn lines(&self) -> Result<Vec<String>, StorageError> {
        let all = vec![true; self.rows()];
        Ok(self.lines_where(&all)?.into_iter().flatten().collect())
    }

    /// Rebuilds the lines of the rows with `keep[r]` set (`None` for the
    /// others); only the columns those rows' templates use are decoded.
    /// `keep` must have one entry per row.
    pub fn lines_where(&self, keep: &[bool]) -> Result<Vec<Option<String>>, StorageError> {
        if keep.len() != self.rows() {
            return Err(bad("row selection does not match the block"));
        }
        let kept = keep.iter().filter(|&&k| k).count();
        if kept * SPARSE_REBUILD <= self.rows() {
            let rows: Vec<usize> = (0..keep.len()).filter(|&r| keep[r]).collect();
            let mut out = vec![None; keep.len()];
            for (r, line) in rows.iter().zip(self.lines_at(&rows)?) {
                out[*r] = Some(line);
            }
            return Ok(out);
        }
        let templates = self.templates()?;
        // Per column, which of its values the kept rows use.
        let mut wanted: Vec<Vec<bool>> = (0..self.column_count())
            .map(|c| Vec::with_capacity(self.dir(c).values))
            .collect();
        for (&t, &k) in self.row_templates().iter().zip(keep) {
            for &c in &templates[t as usize].slots {
                wanted[c as usize].push(k);
            }
        }
        let cols: Vec<Option<Values>> = (0..self.column_count())
            .map(|i| {
                if !wanted[i].iter().any(|&w| w) {
                    return Ok(None);
                }
                self.values_where(i, Some(&wanted[i])).map(Some)
            })
            .collect::<Result<_, _>>()?;
        let mut cursor = vec![0usize; cols.len()];
        let mut out = Vec::with_capacity(self.rows());
        for (&t, &k) in self.row_templates().iter().zip(keep) {
            let t = &templates[t as usize];
            if !k {
                for &col in &t.slots {
                    cursor[col as usize] += 1;
                }
                out.push(None);
                continue;
            }
            out.push(Some(assemble_line(t, &cols, &mut cursor)?));
        }
        Ok(out)
    }

    /// Rebuilds the lines of `rows` (ascending, below [`Self::rows`]), in
    /// that order. A row's value in a column is found by counting the
    /// templates of the rows before it, and only the values the rows use
    /// are read: dictionary-coded and shared columns look up each value's
    /// entry alone, instead of spelling out the whole column.
    pub fn lines_at(&self, rows: &[usize]) -> Result<Vec<String>, StorageError> {
        let templates = self.templates()?;
        let template = |t: u32| {
            templates
                .get(t as usize)
                .ok_or_else(|| bad("row template out of range"))
        };
        let ncols = self.column_count();
        // Values of each column before the current row, advanced by the
        // templates met since the last kept row (each counted once).
        let mut before = vec![0u32; ncols];
        let mut met = vec![0u32; templates.len()];
        let mut touched: Vec<u32> = Vec::new();
        let mut wanted: Vec<Vec<u32>> = vec![Vec::new(); ncols];
        // The row timestamps of the wanted values of Timestamp columns
        // (stored relative to them).
        let relative: Vec<bool> = (0..ncols)
            .map(|c| self.dir(c).encoding == Encoding::Timestamp)
            .collect();
        let mut wanted_ts: Vec<Vec<i64>> = vec![Vec::new(); ncols];
        let mut next = 0usize;
        for &r in rows {
            if r < next || r >= self.rows() {
                return Err(bad("rows to rebuild out of order or range"));
            }
            for &t in &self.row_templates()[next..r] {
                let n = met
                    .get_mut(t as usize)
                    .ok_or_else(|| bad("row template out of range"))?;
                if *n == 0 {
                    touched.push(t);
                }
                *n += 1;
            }
            for t in touched.drain(..) {
                let n = std::mem::take(&mut met[t as usize]);
                for &c in &templates[t as usize].slots {
                    before[c as usize] += n;
                }
            }
            for &c in &template(self.row_templates()[r])?.slots {
                wanted[c as usize].push(before[c as usize]);
                before[c as usize] += 1;
                if relative[c as usize] {
                    wanted_ts[c as usize].push(self.timestamps()[r]);
                }
            }
            next = r + 1;
        }
        let cols: Vec<Option<Values>> = wanted
            .iter()
            .enumerate()
            .map(|(c, w)| {
                if w.is_empty() {
                    return Ok(None);
                }
                self.values_at(c, w, &wanted_ts[c]).map(Some)
            })
            .collect::<Result<_, _>>()?;
        let mut taken = vec![0usize; ncols];
        let mut out = Vec::with_capacity(rows.len());
        for &r in rows {
            out.push(assemble_line(
                template(self.row_templates()[r])?,
                &cols,
                &mut taken,
            )?);
        }
        Ok(out)
    }

    /// Values `positions` (ascending, distinct) of column `id`, in that
    /// order, spelled out; `row_ts`: the timestamps of the rows holding
    /// them, for a Timestamp column (see [`decode_column_at`]).
    fn values_at(
        &self,
        id: usize,
        positions: &[u32],
        row_ts: &[i64],
    ) -> Result<Values, StorageError> {
        let col = self.dir(id);
        if positions.last().is_some_and(|&p| p as usize >= col.values) {
            return Err(bad("value position out of range"));
        }
        // Room for values of a typical width up front (growing from empty
        // reallocated the bytes of a rebuilt page's column several times).
        let mut data = Vec::with_capacity(positions.len() * 16);
        let mut ends = Vec::with_capacity(positions.len());
        if col.encoding.is_shared() {
            self.shared_values_at(id, positions, &mut data, &mut ends)?;
        } else if let Some(v) = self.with_column_payload(id, |p| {
            decode_column_at(
                col.encoding,
                p,
                col.values,
                positions,
                row_ts,
                self.header.version,
            )
        })? {
            return Ok(v);
        } else {
            let mut wanted = vec![false; col.values];
            for &p in positions {
                wanted[p as usize] = true;
            }
            let all = self.values_where(id, Some(&wanted))?;
            for &p in positions {
                data.extend_from_slice(all.get(p as usize));
                ends.push(data.len() as u32);
            }
        }
        Ok(Values::Flat { data, ends })
    }
}
