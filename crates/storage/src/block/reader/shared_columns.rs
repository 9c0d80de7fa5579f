//! Columns coded against the part's shared dictionaries
//! ([`Encoding::Shared`] values and [`Encoding::Skeleton`] skeletons with
//! their digits packed apart): the index read in place
//! ([`SharedIndexView`]), the block's own strings, and values spelled out
//! whole or one by one.

use super::frames::FrameRef;
use super::{bad, BlockReader};
use crate::block::encoding::{decode_shared_strings, Encoding, Values};
use crate::block::ints::IntsLayout;
use crate::block::shared::SharedDict;
use crate::StorageError;

/// The index part of a shared column, read in place.
pub struct SharedIndexView<'a> {
    /// Shared ids of entries `0..global_count`, read in place.
    globals: IntsLayout,
    /// How many entries are shared.
    pub global_count: usize,
    /// Entries of the part's dictionary.
    dict_len: usize,
    /// Number of the block's own strings (entries after the shared ones).
    pub locals: usize,
    entries: usize,
    frame: FrameRef<'a>,
    base: usize,
    len: usize,
    idx: IntsLayout,
    digits: Option<std::ops::Range<usize>>,
    values: usize,
}

impl SharedIndexView<'_> {
    /// The shared id of entry `e` (below [`Self::global_count`]).
    #[inline]
    pub fn global(&self, e: usize) -> Result<u32, StorageError> {
        let buf = &self.frame[self.base..self.base + self.len];
        let id = self.globals.get(buf, e);
        if e >= self.global_count || id >= self.dict_len as u64 {
            return Err(bad("shared id out of range"));
        }
        Ok(id as u32)
    }

    /// The shared ids of every shared entry, in entry order.
    pub fn globals_all(&self) -> Result<Vec<u32>, StorageError> {
        let buf = &self.frame[self.base..self.base + self.len];
        let mut bad_id = false;
        let out = self.globals.all(buf, self.global_count, |v| {
            bad_id |= v >= self.dict_len as u64;
            v as u32
        });
        if bad_id {
            return Err(bad("shared id out of range"));
        }
        Ok(out)
    }

    /// True for [`Encoding::Skeleton`] columns (entries are skeletons).
    pub fn is_skeleton(&self) -> bool {
        self.digits.is_some()
    }

    /// A reader of the values' digit runs, in value order (skeleton columns).
    pub fn digit_reader(&self) -> Option<crate::block::digits::DigitReader<'_>> {
        let r = self.digits.clone()?;
        let buf = &self.frame[self.base..self.base + self.len];
        Some(crate::block::digits::DigitReader::new(&buf[r]))
    }

    /// Every value's entry, decoded at once (cheaper than [`Self::entry`]
    /// for most of the values).
    pub fn entries_all(&self) -> Result<Vec<u32>, StorageError> {
        let n = self.values;
        let buf = &self.frame[self.base..self.base + self.len];
        let (out, max) = self.idx.all_u32(buf, n);
        let entries = self.entries as u64;
        // Integers that may not fit a `u32` (none are written so) are
        // checked whole, not as the `u32`s they were cut to.
        let cut = !self.idx.all_below(1 << 32);
        if n > 0
            && (u64::from(max) >= entries
                || (cut && (0..n).any(|i| self.idx.get(buf, i) >= entries)))
        {
            return Err(bad("shared column entry out of range"));
        }
        Ok(out)
    }

    /// The entry of value `vi` (below the column's value count).
    #[inline]
    pub fn entry(&self, vi: usize) -> Result<usize, StorageError> {
        let e = self
            .idx
            .get(&self.frame[self.base..self.base + self.len], vi) as usize;
        if e >= self.entries {
            return Err(bad("shared column entry out of range"));
        }
        Ok(e)
    }
}

impl<'a> BlockReader<'a> {
    /// The shared dictionary an [`Encoding::Shared`] column refers to.
    pub fn shared_dict(&self, id: usize) -> Option<&'a SharedDict> {
        let sp = (id < self.column_count()).then(|| self.dir(id))?.shared?;
        self.dicts?.get(sp.dict)
    }

    /// The index part of [`Encoding::Shared`] (or [`Encoding::Skeleton`])
    /// column `id`: its entries' shared ids, its own strings' count, and each
    /// value's entry (and digit runs), read in place. Reads no string.
    pub fn shared_index_view(&self, id: usize) -> Result<SharedIndexView<'a>, StorageError> {
        let col = &self.dir(id);
        let dict = self
            .shared_dict(id)
            .ok_or_else(|| bad("column is not shared"))?;
        let frame = self.frame(col.frame)?;
        let base = col.offset;
        let p = frame
            .get(base..base + col.len)
            .ok_or_else(|| bad("column payload out of range"))?;
        let skeleton = col.encoding == Encoding::Skeleton;
        let l = crate::block::encoding::shared_index_layout(p, col.values, dict.len(), skeleton)?;
        Ok(SharedIndexView {
            entries: l.global_count + l.locals,
            globals: l.globals,
            global_count: l.global_count,
            dict_len: dict.len(),
            locals: l.locals,
            frame,
            base,
            len: col.len,
            idx: l.idx,
            digits: l.digits,
            values: col.values,
        })
    }

    /// The `locals` own strings of [`Encoding::Shared`] column `id`
    /// (concatenated, with end offsets).
    pub fn shared_strings(
        &self,
        id: usize,
        locals: usize,
    ) -> Result<(Vec<u8>, Vec<u32>), StorageError> {
        let sp = self
            .dir(id)
            .shared
            .ok_or_else(|| bad("column is not shared"))?;
        if locals == 0 && sp.len == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        let frame = self.frame(sp.frame)?;
        let p = frame
            .get(sp.offset..sp.offset + sp.len)
            .ok_or_else(|| bad("column strings out of range"))?;
        decode_shared_strings(p, locals)
    }

    /// A shared column's values: a dictionary of its entries, or for
    /// skeleton columns every value spelled out.
    pub(super) fn shared_values(&self, id: usize) -> Result<Values, StorageError> {
        let dict = self
            .shared_dict(id)
            .ok_or_else(|| bad("column is not shared"))?;
        let si = self.shared_index_view(id)?;
        let idx = si.entries_all()?;
        let globals = si.globals_all()?;
        let (local, local_ends) = self.shared_strings(id, si.locals)?;
        let global_bytes: usize = globals
            .iter()
            .map(|&g| dict.get(g).map_or(0, <[u8]>::len))
            .sum();
        let mut data = Vec::with_capacity(global_bytes + local.len());
        let mut ends = Vec::with_capacity(globals.len() + local_ends.len());
        for &g in &globals {
            data.extend_from_slice(dict.get(g).ok_or_else(|| bad("shared id out of range"))?);
            ends.push(data.len() as u32);
        }
        let base = data.len() as u32;
        data.extend_from_slice(&local);
        ends.extend(local_ends.iter().map(|&e| base + e));
        let entries = Values::Dict { data, ends, idx };
        let Some(mut digits) = si.digit_reader() else {
            return Ok(entries);
        };
        // Skeleton entries: fill each value's holes with its digit runs.
        let n = entries.len();
        let mut data = Vec::with_capacity(n * 48);
        let mut ends = Vec::with_capacity(n);
        for i in 0..n {
            crate::block::digits::fill(entries.get(i), &mut digits, &mut data)?;
            ends.push(data.len() as u32);
        }
        if !digits.is_done() {
            return Err(bad("trailing digit runs"));
        }
        Ok(Values::Flat { data, ends })
    }

    /// Appends values `positions` (ascending, distinct) of shared column
    /// `id` to `data`/`ends`: each value's entry looked up alone; for
    /// skeleton columns the digit runs of the values between are skipped.
    pub(super) fn shared_values_at(
        &self,
        id: usize,
        positions: &[u32],
        data: &mut Vec<u8>,
        ends: &mut Vec<u32>,
    ) -> Result<(), StorageError> {
        let dict = self
            .shared_dict(id)
            .ok_or_else(|| bad("column is not shared"))?;
        let si = self.shared_index_view(id)?;
        let locals = if si.locals > 0 {
            Some(self.shared_strings(id, si.locals)?)
        } else {
            None
        };
        let entry = |e: usize| -> Result<&[u8], StorageError> {
            if e < si.global_count {
                return dict
                    .get(si.global(e)?)
                    .ok_or_else(|| bad("shared id out of range"));
            }
            let (bytes, local_ends) = locals.as_ref().ok_or_else(|| bad("no local strings"))?;
            let i = e - si.global_count;
            let end = *local_ends
                .get(i)
                .ok_or_else(|| bad("local string out of range"))?;
            let start = if i == 0 { 0 } else { local_ends[i - 1] };
            bytes
                .get(start as usize..end as usize)
                .ok_or_else(|| bad("local string out of range"))
        };
        let Some(mut digits) = si.digit_reader() else {
            for &p in positions {
                data.extend_from_slice(entry(si.entry(p as usize)?)?);
                ends.push(data.len() as u32);
            }
            return Ok(());
        };
        // Skeletons: the values before a wanted one own digit runs too
        // (one per hole of their entry); skip them.
        let mut holes: Vec<u32> = Vec::new();
        let mut v = 0usize;
        for &p in positions {
            let mut skip = 0usize;
            while v < p as usize {
                let e = si.entry(v)?;
                if e >= holes.len() {
                    holes.resize(e + 1, u32::MAX);
                }
                if holes[e] == u32::MAX {
                    holes[e] = crate::block::digits::holes(entry(e)?) as u32;
                }
                skip += holes[e] as usize;
                v += 1;
            }
            digits.skip(skip)?;
            crate::block::digits::fill(entry(si.entry(v)?)?, &mut digits, data)?;
            ends.push(data.len() as u32);
            v += 1;
        }
        Ok(())
    }
}
