//! Single columns: names, kinds and encodings, payloads, values decoded by
//! their encoding (typed columns, packed hex, decimal numbers), and
//! [`Column`], a column mapped to rows.

use std::borrow::Cow;

use super::{bad, BlockReader};
use crate::block::encoding::{
    decode_column_where, decode_decimal_numbers, Encoding, Stats, Values,
};
use crate::block::layout::ColumnKind;
use crate::block::shape::template_slots;
use crate::StorageError;

/// One column read from a block: a value for each row that has the field.
#[derive(Clone, Debug)]
pub struct Column {
    encoding: Encoding,
    values: Values,
    /// Per row: index into `values`, or `u32::MAX` when the row lacks the field.
    row_value: Vec<u32>,
    /// Per row: the value was a JSON string (quotes are in the template).
    quoted: Vec<bool>,
}

impl Column {
    /// The raw value text of `row` (JSON escapes untouched, no quotes), or
    /// `None` when the row lacks the field.
    pub fn get(&self, row: usize) -> Option<&str> {
        let i = *self.row_value.get(row)?;
        if i == u32::MAX {
            return None;
        }
        // Values were checked to be UTF-8 when the column was read.
        std::str::from_utf8(self.values.get(i as usize)).ok()
    }

    /// True when `row`'s value was a JSON string.
    pub fn is_string(&self, row: usize) -> bool {
        self.quoted.get(row).copied().unwrap_or(false)
    }

    /// Number of rows of the block.
    pub fn rows(&self) -> usize {
        self.row_value.len()
    }

    /// How the column was stored.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Per-row values, `None` where the field is absent.
    pub fn iter(&self) -> impl Iterator<Item = Option<&str>> + '_ {
        (0..self.rows()).map(|r| self.get(r))
    }
}

impl<'a> BlockReader<'a> {
    /// Field names of the block's JSON lines (dotted paths, raw key text), in
    /// column order. Lines stored whole are not fields.
    pub fn column_names(&self) -> Vec<String> {
        self.names().iter().flatten().cloned().collect()
    }

    /// Name of each column id (`None` for line columns).
    fn names(&self) -> &[Option<String>] {
        self.names.get_or_init(|| self.derive_names())
    }

    fn derive_names(&self) -> Vec<Option<String>> {
        if self.header.version >= 2 {
            return self
                .header
                .columns
                .iter()
                .map(|c| {
                    (c.kind == ColumnKind::Field)
                        .then(|| String::from_utf8_lossy(&c.name).into_owned())
                })
                .collect();
        }
        let mut names = vec![None; self.column_count()];
        for t in self.templates().unwrap_or(&[]) {
            let Some(slots) = template_slots(t.text()) else {
                continue;
            };
            for (&col, (name, _)) in t.slots.iter().zip(slots) {
                let n = &mut names[col as usize];
                if n.is_none() && self.dir(col as usize).kind == ColumnKind::Field {
                    *n = Some(String::from_utf8_lossy(&name).into_owned());
                }
            }
        }
        names
    }

    fn column_id(&self, name: &str) -> Option<usize> {
        self.names().iter().position(|n| n.as_deref() == Some(name))
    }

    /// How the named field is stored, and its min/max when numeric.
    pub fn column_info(&self, name: &str) -> Option<(Encoding, Option<Stats>)> {
        let c = &self.dir(self.column_id(name)?);
        Some((c.encoding, c.stats))
    }

    /// Number of columns.
    pub fn column_count(&self) -> usize {
        if self.header.version < 2 {
            self.columns.len()
        } else {
            self.header.columns.len()
        }
    }

    /// What column `id` holds (must be below [`Self::column_count`]).
    pub fn column_kind(&self, id: usize) -> ColumnKind {
        self.dir(id).kind
    }

    /// Encoding and prefix (PrefixedDecimal only, else empty) of column `id`
    /// (must be below [`Self::column_count`]).
    pub fn column_head(&self, id: usize) -> (Encoding, &[u8]) {
        (self.dir(id).encoding, &self.header.columns[id].prefix)
    }

    /// Number of values of column `id`.
    pub fn column_len(&self, id: usize) -> usize {
        self.dir(id).values
    }

    /// For a Hex column: upper case or not, and the longest run of digits
    /// between dashes of its values. Reads only the column's layout.
    pub(in crate::block) fn hex_digit_runs(&self, id: usize) -> Option<(bool, usize)> {
        if self.dir(id).encoding != Encoding::Hex {
            return None;
        }
        crate::block::encoding::hex_digit_runs(&self.column_payload(id).ok()?)
    }

    /// The encoded payload of column `id` (its frame decompressed).
    pub fn column_payload(&self, id: usize) -> Result<Cow<'_, [u8]>, StorageError> {
        let col = &self.dir(id);
        let (frame, base) = if self.header.version == 1 && col.frame == 0 {
            (self.frame(0)?, self.payload_base)
        } else {
            (self.frame(col.frame)?, 0)
        };
        let start = base + col.offset;
        let p = frame
            .get(start..start + col.len)
            .ok_or_else(|| bad("column payload out of range"))?;
        Ok(Cow::Owned(p.to_vec()))
    }

    /// Calls `f` with column `id`'s encoded payload, without copying it.
    pub fn with_column_payload<R>(
        &self,
        id: usize,
        f: impl FnOnce(&[u8]) -> Result<R, StorageError>,
    ) -> Result<R, StorageError> {
        let col = &self.dir(id);
        let (frame, base) = if self.header.version == 1 && col.frame == 0 {
            (self.frame(0)?, self.payload_base)
        } else {
            (self.frame(col.frame)?, 0)
        };
        let start = base + col.offset;
        let p = frame
            .get(start..start + col.len)
            .ok_or_else(|| bad("column payload out of range"))?;
        f(p)
    }

    /// Column `id`'s values in value order (see [`Self::column_at`] for the
    /// mapping to rows).
    pub fn column_values(&self, id: usize) -> Result<Values, StorageError> {
        self.values_where(id, None)
    }

    /// How column `id` is stored; `None` when out of range.
    pub fn column_encoding(&self, id: usize) -> Option<Encoding> {
        (id < self.column_count()).then(|| self.dir(id).encoding)
    }

    /// Reads the named field for every row; `Ok(None)` when no line of the
    /// block has it. Only the frame holding that column is decompressed.
    pub fn column(&self, name: &str) -> Result<Option<Column>, StorageError> {
        let Some(id) = self.column_id(name) else {
            return Ok(None);
        };
        self.column_at(id).map(Some)
    }

    /// Reads column `id` (a position in the header's column list) for every
    /// row, like [`Self::column`].
    pub fn column_at(&self, id: usize) -> Result<Column, StorageError> {
        if id >= self.column_count() {
            return Err(bad("column id out of range"));
        }
        let values = self.values_where(id, None)?;
        values.check_utf8()?;
        let rows = self.rows();
        let mut row_value = vec![u32::MAX; rows];
        let mut quoted = vec![false; rows];
        // Per template: whether it holds the column, and whether quoted.
        let holds: Vec<Option<bool>> = self
            .templates()?
            .iter()
            .map(|t| {
                let k = t.slots.iter().position(|&s| s as usize == id)?;
                let before = t.piece(k).last() == Some(&b'"');
                Some(before && t.piece(k + 1).first() == Some(&b'"'))
            })
            .collect();
        let mut next = 0u32;
        for (r, &t) in self.row_templates().iter().enumerate() {
            if let Some(q) = holds[t as usize] {
                row_value[r] = next;
                quoted[r] = q;
                next += 1;
            }
        }
        Ok(Column {
            encoding: self.dir(id).encoding,
            values,
            row_value,
            quoted,
        })
    }

    /// Timestamps of the rows holding a value of column `id`.
    fn column_row_ts(&self, id: usize) -> Vec<i64> {
        let mut out = Vec::with_capacity(self.dir(id).values);
        let holds: Vec<bool> = self
            .slot_columns()
            .iter()
            .map(|slots| slots.contains(&(id as u32)))
            .collect();
        for (&t, &ts) in self.row_templates().iter().zip(self.timestamps()) {
            if holds[t as usize] {
                out.push(ts);
            }
        }
        out
    }

    /// Decodes column `id`'s values, printing only the `wanted` values of
    /// typed columns (see [`decode_column_where`]).
    pub fn values_where(&self, id: usize, wanted: Option<&[bool]>) -> Result<Values, StorageError> {
        let col = &self.dir(id);
        if col.encoding.is_shared() {
            return self.shared_values(id);
        }
        let row_ts = if col.encoding == Encoding::Timestamp {
            self.column_row_ts(id)
        } else {
            Vec::new()
        };
        let version = self.header.version;
        self.with_column_payload(id, |p| {
            decode_column_where(col.encoding, p, col.values, &row_ts, wanted, version)
        })
    }

    /// For a packed-hex column (`Encoding::Hex`): `f` on its layout and
    /// its values still packed (see [`crate::block::encoding::hex_packed`]), so a
    /// test that needs no value's text reads no digit. `None` for other
    /// encodings.
    pub fn with_hex_values<R>(
        &self,
        id: usize,
        f: impl FnOnce(&crate::block::text::HexLayout, &[u8]) -> R,
    ) -> Result<Option<R>, StorageError> {
        let col = &self.dir(id);
        if col.encoding != Encoding::Hex {
            return Ok(None);
        }
        self.with_column_payload(id, |p| {
            let (layout, packed) = crate::block::encoding::hex_packed(p, col.values)?;
            Ok(Some(f(&layout, packed)))
        })
    }

    /// Column `id`'s values as the doubles a float unwrap reads from their
    /// text, when it is a Decimal column whose values one division gives
    /// exactly (see [`decode_decimal_numbers`]); `None` otherwise.
    pub fn decimal_numbers(&self, id: usize) -> Result<Option<Vec<f64>>, StorageError> {
        let col = &self.dir(id);
        if !matches!(col.encoding, Encoding::Decimal | Encoding::PrefixedDecimal) {
            return Ok(None);
        }
        self.with_column_payload(id, |p| decode_decimal_numbers(col.encoding, p, col.values))
    }
}
