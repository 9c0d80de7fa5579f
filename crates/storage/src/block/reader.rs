//! The block reader: checks a block, decompresses its directory frame, and
//! gives access to timestamps, metadata, single columns (decompressing only
//! what they need) and whole lines.

use std::borrow::Cow;
use std::cell::OnceCell;

use super::encoding::{decode_column_where, Encoding, Stats, Values};
use super::ints::get_ints;
use super::layout::{BlockHeader, ColumnKind, FrameInfo, CODEC_ZSTD};
use super::shape::{template_slots, SLOT};
use super::varint::{unzigzag, Cursor};
use crate::StorageError;

/// Where a column's payload is, plus what the directory says about it.
#[derive(Clone, Debug)]
struct ColumnDir {
    kind: ColumnKind,
    encoding: Encoding,
    values: usize,
    frame: usize,
    offset: usize,
    len: usize,
    stats: Option<Stats>,
}

/// A template: literal pieces between slots, and the column of each slot.
#[derive(Clone, Debug)]
struct Template {
    text: Vec<u8>,
    /// Start of each piece in `text` (pieces are separated by one SLOT byte).
    piece_starts: Vec<usize>,
    slots: Vec<u32>,
}

impl Template {
    fn piece(&self, i: usize) -> &[u8] {
        let start = self.piece_starts[i];
        let end = self
            .piece_starts
            .get(i + 1)
            .map_or(self.text.len(), |&n| n - 1);
        &self.text[start..end]
    }
}

/// Column-level access to one encoded block.
pub struct BlockReader<'a> {
    src: &'a [u8],
    header: BlockHeader,
    frame_starts: Vec<usize>,
    frame0: Vec<u8>,
    payload_base: usize,
    templates: Vec<Template>,
    row_tpl: Vec<u32>,
    ts: Vec<i64>,
    metadata: Vec<Vec<(String, String)>>,
    columns: Vec<ColumnDir>,
    names: OnceCell<Vec<Option<String>>>,
}

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

fn bad(detail: &str) -> StorageError {
    StorageError::corrupt("block", detail)
}

impl<'a> BlockReader<'a> {
    /// Checks both checksums and reads the header and directory of `src`,
    /// which must be exactly one block.
    pub fn open(src: &'a [u8]) -> Result<Self, StorageError> {
        let (header, body_start) = BlockHeader::decode(src)?;
        let body_len: usize = header
            .frames
            .iter()
            .try_fold(0usize, |a, f| a.checked_add(f.stored_len))
            .ok_or_else(|| bad("frame sizes overflow"))?;
        if src.len() != body_start.saturating_add(body_len).saturating_add(4) {
            return Err(bad("block length does not match its frames"));
        }
        let body = &src[body_start..body_start + body_len];
        let crc = &src[body_start + body_len..];
        if crc32fast::hash(body).to_le_bytes() != crc {
            return Err(bad("body checksum mismatch"));
        }
        let mut frame_starts = Vec::with_capacity(header.frames.len());
        let mut at = body_start;
        for f in &header.frames {
            frame_starts.push(at);
            at += f.stored_len;
        }
        if header.frames.is_empty() {
            return Err(bad("no directory frame"));
        }
        let frame0 = read_frame(src, frame_starts[0], &header.frames[0])?;
        let mut r = BlockReader {
            src,
            header,
            frame_starts,
            frame0: Vec::new(),
            payload_base: 0,
            templates: Vec::new(),
            row_tpl: Vec::new(),
            ts: Vec::new(),
            metadata: Vec::new(),
            columns: Vec::new(),
            names: OnceCell::new(),
        };
        r.read_directory(&frame0)?;
        r.frame0 = frame0;
        Ok(r)
    }

    fn read_directory(&mut self, frame0: &[u8]) -> Result<(), StorageError> {
        let rows = self.header.rows;
        let ncols = self.header.columns.len();
        let mut c = Cursor::new(frame0, "directory");
        // Every row costs at least one directory byte (its timestamp), which
        // bounds allocations sized by the row count.
        if rows > frame0.len() {
            return Err(c.err("row count exceeds directory"));
        }
        let nt = c.len(c.remaining())?;
        for _ in 0..nt {
            let text = c.bytes()?.to_vec();
            let ns = c.len(c.remaining())?;
            let mut slots = Vec::with_capacity(ns);
            for _ in 0..ns {
                let s = c.len(ncols.saturating_sub(1))?;
                if ncols == 0 || slots.contains(&(s as u32)) {
                    return Err(c.err("bad template slot"));
                }
                slots.push(s as u32);
            }
            let mut piece_starts = vec![0];
            piece_starts.extend(memchr::memchr_iter(SLOT, &text).map(|i| i + 1));
            if piece_starts.len() != ns + 1 {
                return Err(c.err("template slot count mismatch"));
            }
            self.templates.push(Template {
                text,
                piece_starts,
                slots,
            });
        }
        if rows > 0 && nt == 0 {
            return Err(c.err("rows without templates"));
        }
        self.row_tpl = match nt {
            0 | 1 => vec![0; rows],
            2..=256 => c.take(rows)?.iter().map(|&b| u32::from(b)).collect(),
            _ => (0..rows)
                .map(|_| c.len(nt).map(|v| v as u32))
                .collect::<Result<_, _>>()?,
        };
        if self.row_tpl.iter().any(|&t| t as usize >= nt) {
            return Err(c.err("row template out of range"));
        }
        let g = c.uvarint()?;
        if g == 0 || g > i64::MAX as u64 {
            return Err(c.err("bad timestamp divisor"));
        }
        let mut prev = self.header.min_ts;
        self.ts = get_ints(&mut c, rows)?
            .into_iter()
            .map(|d| {
                prev = prev.wrapping_add(unzigzag(d).wrapping_mul(g as i64));
                prev
            })
            .collect();
        let nm = c.len(c.remaining())?;
        if nm > 0 {
            let mut names = Vec::with_capacity(nm);
            for _ in 0..nm {
                names.push(utf8(c.bytes()?)?);
            }
            self.metadata = Vec::with_capacity(rows.min(c.remaining()));
            for _ in 0..rows {
                let np = c.len(c.remaining())?;
                let mut pairs = Vec::with_capacity(np);
                for _ in 0..np {
                    let name = c.len(nm - 1)?;
                    pairs.push((names[name].clone(), utf8(c.bytes()?)?));
                }
                self.metadata.push(pairs);
            }
        } else {
            self.metadata = vec![Vec::new(); rows];
        }
        // How many values each column must hold, from the templates.
        let mut per_tpl = vec![0usize; nt];
        for &t in &self.row_tpl {
            per_tpl[t as usize] += 1;
        }
        let mut expected = vec![0usize; ncols];
        for (t, n) in self.templates.iter().zip(&per_tpl) {
            for &s in &t.slots {
                expected[s as usize] += n;
            }
        }
        for (ci, head) in self.header.columns.iter().enumerate() {
            let (kind, encoding) = (head.kind, head.encoding);
            let values = c.len(rows)?;
            if values != expected[ci] {
                return Err(c.err("column value count mismatch"));
            }
            let frame = c.len(self.header.frames.len() - 1)?;
            let offset = c.len(MAX)?;
            let len = c.len(MAX)?;
            let stats = match encoding {
                Encoding::Decimal => {
                    let min = f64::from_bits(c.u64_le()?);
                    let max = f64::from_bits(c.u64_le()?);
                    Some(Stats::Number { min, max })
                }
                Encoding::Timestamp => Some(Stats::Time {
                    min: c.ivarint()?,
                    max: c.ivarint()?,
                }),
                _ => None,
            };
            self.columns.push(ColumnDir {
                kind,
                encoding,
                values,
                frame,
                offset,
                len,
                stats,
            });
        }
        self.payload_base = c.pos();
        for col in &self.columns {
            let limit = if col.frame == 0 {
                c.remaining()
            } else {
                self.header.frames[col.frame].raw_len
            };
            if col.offset.checked_add(col.len).is_none_or(|e| e > limit) {
                return Err(bad("column payload out of range"));
            }
        }
        Ok(())
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.header.rows
    }

    /// Smallest and largest row timestamp.
    pub fn time_range(&self) -> (i64, i64) {
        (self.header.min_ts, self.header.max_ts)
    }

    /// Row timestamps, nanoseconds, in row order.
    pub fn timestamps(&self) -> &[i64] {
        &self.ts
    }

    /// Structured metadata per row.
    pub fn metadata(&self) -> &[Vec<(String, String)>] {
        &self.metadata
    }

    /// Field names of the block's JSON lines (dotted paths, raw key text), in
    /// column order. Lines stored whole are not fields.
    pub fn column_names(&self) -> Vec<String> {
        self.names().iter().flatten().cloned().collect()
    }

    /// Name of each column id (`None` for line columns), derived from the
    /// templates on first use.
    fn names(&self) -> &[Option<String>] {
        self.names.get_or_init(|| self.derive_names())
    }

    fn derive_names(&self) -> Vec<Option<String>> {
        let mut names = vec![None; self.columns.len()];
        for t in &self.templates {
            let Some(slots) = template_slots(&t.text) else {
                continue;
            };
            for (&col, (name, _)) in t.slots.iter().zip(slots) {
                let n = &mut names[col as usize];
                if n.is_none() && self.columns[col as usize].kind == ColumnKind::Field {
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
        let c = &self.columns[self.column_id(name)?];
        Some((c.encoding, c.stats))
    }

    /// Number of templates (distinct line shapes) of the block.
    pub fn template_count(&self) -> usize {
        self.templates.len()
    }

    /// The first byte of template `t`'s text (`None` when empty or out of range).
    pub fn template_starts_with(&self, t: usize) -> Option<u8> {
        self.templates.get(t)?.text.first().copied()
    }

    /// The template of each row, an index below [`Self::template_count`].
    pub fn row_templates(&self) -> &[u32] {
        &self.row_tpl
    }

    /// The slots of template `t` in line order: column id, dotted field name
    /// (raw key text) and whether the value is a JSON string. `None` when the
    /// template is a whole-line template or `t` is out of range.
    pub fn template_fields(&self, t: usize) -> Option<Vec<(usize, Vec<u8>, bool)>> {
        let tpl = self.templates.get(t)?;
        if tpl
            .slots
            .iter()
            .any(|&c| self.columns[c as usize].kind != ColumnKind::Field)
        {
            return None;
        }
        let slots = template_slots(&tpl.text)?;
        if slots.len() != tpl.slots.len() {
            return None;
        }
        Some(
            tpl.slots
                .iter()
                .zip(slots)
                .map(|(&c, (name, quoted))| (c as usize, name, quoted))
                .collect(),
        )
    }

    /// Number of columns.
    pub fn column_count(&self) -> usize {
        self.columns.len()
    }

    /// Encoding and prefix (PrefixedDecimal only, else empty) of column `id`
    /// (must be below [`Self::column_count`]).
    pub(super) fn column_head(&self, id: usize) -> (Encoding, &[u8]) {
        (self.columns[id].encoding, &self.header.columns[id].prefix)
    }

    /// Template `t`'s text, slots as the byte 0x00.
    pub(super) fn template_text(&self, t: usize) -> &[u8] {
        &self.templates[t].text
    }

    /// Number of slots of template `t`.
    pub(super) fn template_slot_count(&self, t: usize) -> usize {
        self.templates[t].slots.len()
    }

    /// The `k`-th literal piece of template `t` (`k` up to the slot count).
    pub(super) fn template_piece(&self, t: usize, k: usize) -> &[u8] {
        self.templates[t].piece(k)
    }

    /// Column ids of template `t`'s slots, in line order.
    pub(super) fn template_columns(&self, t: usize) -> &[u32] {
        &self.templates[t].slots
    }

    /// For a Hex column: upper case or not, and the longest run of digits
    /// between dashes of its values. Reads only the column's layout.
    pub(super) fn hex_digit_runs(&self, id: usize) -> Option<(bool, usize)> {
        let col = &self.columns[id];
        if col.encoding != Encoding::Hex {
            return None;
        }
        let frame: Cow<'_, [u8]> = if col.frame == 0 {
            Cow::Borrowed(&self.frame0[self.payload_base..])
        } else {
            return None;
        };
        super::encoding::hex_digit_runs(frame.get(col.offset..col.offset + col.len)?)
    }

    /// Column `id`'s values in value order (see [`Self::column_at`] for the
    /// mapping to rows).
    pub(super) fn column_values(&self, id: usize) -> Result<Values, StorageError> {
        let row_ts = if self.columns[id].encoding == Encoding::Timestamp {
            self.column_row_ts(Some(id)).swap_remove(id)
        } else {
            Vec::new()
        };
        self.values(id, &row_ts)
    }

    /// How column `id` is stored; `None` when out of range.
    pub fn column_encoding(&self, id: usize) -> Option<Encoding> {
        self.columns.get(id).map(|c| c.encoding)
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
        if id >= self.columns.len() {
            return Err(bad("column id out of range"));
        }
        let row_ts = if self.columns[id].encoding == Encoding::Timestamp {
            self.column_row_ts(Some(id)).swap_remove(id)
        } else {
            Vec::new()
        };
        let values = self.values(id, &row_ts)?;
        values.check_utf8()?;
        let rows = self.rows();
        let mut row_value = vec![u32::MAX; rows];
        let mut quoted = vec![false; rows];
        // Per template: whether it holds the column, and whether quoted.
        let holds: Vec<Option<bool>> = self
            .templates
            .iter()
            .map(|t| {
                let k = t.slots.iter().position(|&s| s as usize == id)?;
                let before = t.piece(k).last() == Some(&b'"');
                Some(before && t.piece(k + 1).first() == Some(&b'"'))
            })
            .collect();
        let mut next = 0u32;
        for (r, &t) in self.row_tpl.iter().enumerate() {
            if let Some(q) = holds[t as usize] {
                row_value[r] = next;
                quoted[r] = q;
                next += 1;
            }
        }
        Ok(Column {
            encoding: self.columns[id].encoding,
            values,
            row_value,
            quoted,
        })
    }

    /// Timestamps of the rows holding a value of each column, per column.
    fn column_row_ts(&self, only: Option<usize>) -> Vec<Vec<i64>> {
        let mut out = vec![Vec::new(); self.columns.len()];
        for (&t, &ts) in self.row_tpl.iter().zip(&self.ts) {
            for &c in &self.templates[t as usize].slots {
                if only.is_none_or(|o| o == c as usize) {
                    out[c as usize].push(ts);
                }
            }
        }
        out
    }

    /// Decodes column `id`'s values; `row_ts` as from [`Self::column_row_ts`].
    fn values(&self, id: usize, row_ts: &[i64]) -> Result<Values, StorageError> {
        self.values_where(id, row_ts, None)
    }

    /// Like [`Self::values`], printing only the `wanted` values of typed
    /// columns (see [`decode_column_where`]).
    fn values_where(
        &self,
        id: usize,
        row_ts: &[i64],
        wanted: Option<&[bool]>,
    ) -> Result<Values, StorageError> {
        let col = &self.columns[id];
        let frame: Cow<'_, [u8]> = if col.frame == 0 {
            Cow::Borrowed(&self.frame0[self.payload_base..])
        } else {
            Cow::Owned(read_frame(
                self.src,
                self.frame_starts[col.frame],
                &self.header.frames[col.frame],
            )?)
        };
        decode_column_where(
            col.encoding,
            &frame[col.offset..col.offset + col.len],
            col.values,
            row_ts,
            wanted,
        )
    }

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
        // Per column, which of its values the kept rows use.
        let mut wanted: Vec<Vec<bool>> = self
            .columns
            .iter()
            .map(|c| Vec::with_capacity(c.values))
            .collect();
        for (&t, &k) in self.row_tpl.iter().zip(keep) {
            for &c in &self.templates[t as usize].slots {
                wanted[c as usize].push(k);
            }
        }
        let cols: Vec<Option<Values>> = (0..self.columns.len())
            .map(|i| {
                if !wanted[i].iter().any(|&w| w) {
                    return Ok(None);
                }
                let row_ts = if self.columns[i].encoding == Encoding::Timestamp {
                    self.column_row_ts(Some(i)).swap_remove(i)
                } else {
                    Vec::new()
                };
                self.values_where(i, &row_ts, Some(&wanted[i])).map(Some)
            })
            .collect::<Result<_, _>>()?;
        let mut cursor = vec![0usize; cols.len()];
        let mut out = Vec::with_capacity(self.rows());
        for (&t, &k) in self.row_tpl.iter().zip(keep) {
            let t = &self.templates[t as usize];
            if !k {
                for &col in &t.slots {
                    cursor[col as usize] += 1;
                }
                out.push(None);
                continue;
            }
            let mut line = Vec::with_capacity(t.text.len() + 64);
            line.extend_from_slice(t.piece(0));
            for (k, &col) in t.slots.iter().enumerate() {
                let col = col as usize;
                let values = cols[col]
                    .as_ref()
                    .ok_or_else(|| bad("column of a kept row not decoded"))?;
                line.extend_from_slice(values.get(cursor[col]));
                cursor[col] += 1;
                line.extend_from_slice(t.piece(k + 1));
            }
            out.push(Some(
                String::from_utf8(line).map_err(|_| bad("line is not utf-8"))?,
            ));
        }
        Ok(out)
    }
}

/// Largest offset or length accepted in the directory.
const MAX: usize = super::layout::MAX_FRAME_RAW;

fn utf8(b: &[u8]) -> Result<String, StorageError> {
    String::from_utf8(b.to_vec()).map_err(|_| bad("metadata is not utf-8"))
}

fn read_frame(src: &[u8], start: usize, f: &FrameInfo) -> Result<Vec<u8>, StorageError> {
    let stored = &src[start..start + f.stored_len];
    if f.codec != CODEC_ZSTD {
        if f.raw_len != f.stored_len {
            return Err(bad("stored frame size mismatch"));
        }
        return Ok(stored.to_vec());
    }
    let out = DECOMPRESSOR.with(|d| {
        let mut d = d.borrow_mut();
        match d.as_mut() {
            Some(d) => d.decompress(stored, f.raw_len),
            None => {
                let mut fresh = zstd::bulk::Decompressor::new().map_err(|e| e.to_string());
                let r = match fresh.as_mut() {
                    Ok(dd) => dd.decompress(stored, f.raw_len),
                    Err(e) => return Err(bad(&format!("zstd context: {e}"))),
                };
                *d = fresh.ok();
                r
            }
        }
        .map_err(|e| bad(&format!("zstd: {e}")))
    })?;
    if out.len() != f.raw_len {
        return Err(bad("frame size mismatch"));
    }
    Ok(out)
}

thread_local! {
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { std::cell::RefCell::new(None) };
}
