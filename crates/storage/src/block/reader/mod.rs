//! The block reader: checks a block and gives access to timestamps, row
//! templates, metadata, single columns (decompressing only the frames they
//! need) and whole lines.
//!
//! Version 2 blocks are read lazily: opening checks the header and reads
//! the directory frame (row templates, timestamps); template texts,
//! metadata and column frames are decompressed (and their checksums
//! checked) on first use and kept for the reader's lifetime. Version 1
//! blocks are checked and read whole on open.

use std::borrow::Cow;
use std::cell::{OnceCell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::encoding::{
    decode_column_at, decode_column_where, decode_decimal_numbers, decode_shared_strings, Encoding,
    Stats, Values,
};
use super::ints::{get_ints, IntsLayout};
use super::layout::{
    BlockHeader, ColumnKind, FrameInfo, SharedPlace, TemplateHead, CODEC_NONE, CODEC_ZSTD,
    FRAME_DIRECTORY, FRAME_METADATA, FRAME_TEMPLATES, METADATA_FORM_SETS,
};
use super::shape::{template_slots, SLOT};
use super::shared::{SharedDict, SharedDicts};
use super::template_shapes::{self, TemplateShape};
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
    shared: Option<SharedPlace>,
}

/// A template: literal pieces between slots, and the column of each slot.
#[derive(Clone, Debug)]
pub struct Template {
    /// The text and its pieces, shared by every block holding the template
    /// (see [`super::template_shapes`]).
    shape: Arc<TemplateShape>,
    slots: Vec<u32>,
}

impl Template {
    fn new(text: Vec<u8>, slots: Vec<u32>) -> Result<Template, StorageError> {
        // Sized once: a line template has dozens of slots, and growing
        // from one element reallocated it five or six times.
        let mut piece_starts = Vec::with_capacity(slots.len() + 1);
        piece_starts.push(0);
        piece_starts.extend(memchr::memchr_iter(SLOT, &text).map(|i| i + 1));
        if piece_starts.len() != slots.len() + 1 {
            return Err(bad("template slot count mismatch"));
        }
        Ok(Template {
            shape: Arc::new(TemplateShape { text, piece_starts }),
            slots,
        })
    }

    /// A kept shape with a block's slot columns.
    fn with_shape(shape: Arc<TemplateShape>, slots: Vec<u32>) -> Result<Template, StorageError> {
        if shape.piece_starts.len() != slots.len() + 1 {
            return Err(bad("template slot count mismatch"));
        }
        Ok(Template { shape, slots })
    }

    /// The template text, slots as the byte 0x00.
    pub fn text(&self) -> &[u8] {
        &self.shape.text
    }

    /// The `k`-th literal piece (`k` up to the slot count).
    pub fn piece(&self, k: usize) -> &[u8] {
        let starts = &self.shape.piece_starts;
        let start = starts[k];
        let end = starts.get(k + 1).map_or(self.shape.text.len(), |&n| n - 1);
        &self.shape.text[start..end]
    }

    /// Column of each slot, in line order.
    pub fn slots(&self) -> &[u32] {
        &self.slots
    }
}

/// A block header, decoded for this reader or shared from a cache.
pub enum HeaderRef<'a> {
    /// Decoded from the block.
    Owned(BlockHeader<'a>),
    /// Decoded earlier and kept (see `Part::header`), borrowed from its
    /// keeper: no reference count is touched (a query judges thousands of
    /// blocks, and a count's increment writes a line otherwise only read).
    Kept(&'a BlockHeader<'static>),
}

impl<'a> std::ops::Deref for HeaderRef<'a> {
    type Target = BlockHeader<'a>;
    fn deref(&self) -> &BlockHeader<'a> {
        match self {
            HeaderRef::Owned(h) => h,
            HeaderRef::Kept(h) => h,
        }
    }
}

/// Column-level access to one encoded block.
pub struct BlockReader<'a> {
    src: &'a [u8],
    header: HeaderRef<'a>,
    /// Frames read so far (stored frames are borrowed from the block).
    frames: RefCell<FrameSlots<'a>>,
    /// Version 1: start of the payload area in frame 0.
    payload_base: usize,
    templates: OnceCell<Vec<Template>>,
    /// Row templates, unpacked on first use of [`Self::row_templates`] when
    /// the directory was checked before (else when it is read).
    row_tpl: OnceCell<Arc<[u32]>>,
    /// Version 2, directory checked earlier, two templates or more: where
    /// the row templates lie in the directory, to read single rows'
    /// ([`Self::row_template`]) without unpacking all.
    tpl_layout: Option<(FrameRef<'a>, IntsLayout)>,
    /// Row timestamps, decoded on first use of [`Self::timestamps`] (or
    /// given by [`Self::set_timestamps`]).
    ts: OnceCell<Arc<[i64]>>,
    /// Version 2: where the row timestamps lie in the directory, to read
    /// the newest rows' without decoding all.
    ts_layout: Option<TsLayout<'a>>,
    /// Timestamps of the rows from `ts_tail.0` on, read backward from the
    /// newest row (see [`Self::first_row_from`]).
    ts_tail: RefCell<(usize, Vec<i64>)>,
    metadata: OnceCell<RowMetadata>,
    columns: Vec<ColumnDir>,
    names: OnceCell<Vec<Option<String>>>,
    /// The part's shared dictionaries (needed by [`Encoding::Shared`] columns).
    dicts: Option<&'a SharedDicts>,
    /// What readers of this block share for the process's life (see
    /// [`BlockLog`]).
    log: Option<&'a BlockLog>,
    /// Where compressed data frames are read from instead of `src` (see
    /// [`BlockReader::read_compressed_from`]).
    file: Option<BlockFile<'a>>,
}

/// The file holding a block, and where in it the block starts: compressed
/// data frames are read from it with `pread` into a scratch buffer and
/// decompressed, so reading them maps none of the block's pages into the
/// process (they are read once and decompressed, so the mapping would only
/// grow the resident set). Stored (uncompressed) frames are still read in
/// place from the block's bytes: copying them out cost 10–20 % of warm
/// queries that read shared-column indexes in every block (docs/benchmarks.md).
#[derive(Clone, Copy, Debug)]
pub struct BlockFile<'a> {
    /// The file.
    pub file: &'a std::fs::File,
    /// The block's first byte in it.
    pub offset: u64,
}

/// What every reader of one stored block shares for the process's life
/// (stored blocks never change).
#[derive(Debug, Default)]
pub struct BlockLog {
    /// Bit `i` (below 63) set: frame `i`'s checksum was verified by an
    /// earlier reader, so it is not computed again; [`DIRECTORY_CHECKED`]:
    /// nor is the directory checked.
    verified: AtomicU64,
    /// Bit `i` set: data frame `i` (any frame but the directory; bit 63 for
    /// frames 63 and later) was read from the block's bytes since
    /// [`BlockLog::take_data_read`] last cleared it, so its pages are mapped in.
    data_read: AtomicU64,
    /// Bit `t` set: some row of the block uses template `t`, as counted when
    /// the directory was checked (0: not known, or more than 64 templates).
    templates_with_rows: AtomicU64,
    /// A reader read the block's directory frame (so later queries find its
    /// decoded forms cached, or its bytes fetched once already).
    directory_read: AtomicBool,
}

impl BlockLog {
    /// Whether a data frame was read since the last call, clearing it.
    pub fn take_data_read(&self) -> bool {
        self.data_read.load(Ordering::Relaxed) != 0
            && self.data_read.swap(0, Ordering::Relaxed) != 0
    }

    /// Whether a data frame was read since [`BlockLog::take_data_read`] last cleared it.
    pub fn data_read(&self) -> bool {
        self.data_read.load(Ordering::Relaxed) != 0
    }

    /// Notes that data frame `i` was read.
    fn note_data_read(&self, i: usize) {
        let bit = 1u64 << i.min(63);
        if self.data_read.load(Ordering::Relaxed) & bit == 0 {
            self.data_read.fetch_or(bit, Ordering::Relaxed);
        }
    }

    /// Whether a reader read the block's directory frame since the part opened.
    pub fn directory_read(&self) -> bool {
        self.directory_read.load(Ordering::Relaxed)
    }

    fn has(&self, bits: u64) -> bool {
        self.verified.load(Ordering::Relaxed) & bits == bits
    }

    /// Whether frame `i`'s checksum was verified (and found sound).
    pub fn frame_verified(&self, i: usize) -> bool {
        i < 63 && self.has(1 << i)
    }

    /// Which templates some row uses (bit `t` for template `t`), when the
    /// directory check counted them and the block has at most 64.
    pub fn templates_with_rows(&self) -> Option<u64> {
        Some(self.templates_with_rows.load(Ordering::Relaxed)).filter(|&m| m != 0)
    }

    /// Notes the templates some row uses, from the directory check's counts.
    fn note_template_counts(&self, per_tpl: &[usize]) {
        if per_tpl.len() <= 64 {
            let mask = per_tpl
                .iter()
                .enumerate()
                .fold(0u64, |m, (t, &n)| m | (u64::from(n > 0) << t));
            self.templates_with_rows.store(mask, Ordering::Relaxed);
        }
    }

    fn set(&self, bits: u64) {
        self.verified.fetch_or(bits, Ordering::Relaxed);
    }
}

/// The index part of a shared column, read in place.
pub struct SharedIndexView<'a> {
    /// Shared ids of entries `0..global_count`, read in place.
    globals: super::ints::IntsLayout,
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
    idx: super::ints::IntsLayout,
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
    pub fn digit_reader(&self) -> Option<super::digits::DigitReader<'_>> {
        let r = self.digits.clone()?;
        let buf = &self.frame[self.base..self.base + self.len];
        Some(super::digits::DigitReader::new(&buf[r]))
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
    /// Checks and reads the header and directory of `src`, which must be
    /// exactly one block (version 1: every checksum; version 2: the header's
    /// and the directory frame's, the others when their frames are read).
    pub fn open(src: &'a [u8]) -> Result<Self, StorageError> {
        Self::with_header(src, HeaderRef::Owned(BlockHeader::decode(src)?))
    }

    /// Like [`BlockReader::open`], for a block of a part with shared
    /// dictionaries `dicts`.
    pub fn open_in(src: &'a [u8], dicts: &'a SharedDicts) -> Result<Self, StorageError> {
        Self::with_header_in(
            src,
            HeaderRef::Owned(BlockHeader::decode(src)?),
            Some(dicts),
        )
    }

    /// Like [`BlockReader::open`], for a header already decoded (and its
    /// checksum checked) from `src`.
    pub fn with_header(src: &'a [u8], header: HeaderRef<'a>) -> Result<Self, StorageError> {
        Self::with_header_in(src, header, None)
    }

    /// Like [`BlockReader::with_header`], with the part's shared
    /// dictionaries (`None`: the part has none).
    pub fn with_header_in(
        src: &'a [u8],
        header: HeaderRef<'a>,
        dicts: Option<&'a SharedDicts>,
    ) -> Result<Self, StorageError> {
        Self::with_context(src, header, dicts, None)
    }

    /// Like [`BlockReader::with_header_in`]; `log` remembers which frames'
    /// checksums have been verified (by any reader sharing it), and those are
    /// not verified again: parts are immutable. It also notes reads of data
    /// frames ([`BlockLog::take_data_read`]).
    pub fn with_context(
        src: &'a [u8],
        header: HeaderRef<'a>,
        dicts: Option<&'a SharedDicts>,
        log: Option<&'a BlockLog>,
    ) -> Result<Self, StorageError> {
        let v1 = header.version == 1;
        let mut r = Self::unread(src, header, dicts, log)?;
        let frame0 = r.frame(FRAME_DIRECTORY)?;
        if let Some(l) = log {
            if !l.directory_read() {
                l.directory_read.store(true, Ordering::Relaxed);
            }
        }

        if v1 {
            r.read_directory_v1(&frame0)?;
        } else {
            r.read_directory_v2(frame0)?;
        }
        Ok(r)
    }

    /// Like [`BlockReader::with_context`], given the row templates and row
    /// timestamps an earlier reader of this very block decoded
    /// ([`Self::row_templates_shared`], [`Self::timestamps_shared`]): a
    /// version-2 block whose directory has been checked (`verified`) is then
    /// opened without reading its directory frame again. Otherwise (or when
    /// the counts do not match the block's rows) the directory is read as
    /// by `with_context`.
    pub fn with_directory(
        src: &'a [u8],
        header: HeaderRef<'a>,
        dicts: Option<&'a SharedDicts>,
        log: Option<&'a BlockLog>,
        row_tpl: Arc<[u32]>,
        ts: Arc<[i64]>,
    ) -> Result<Self, StorageError> {
        let rows = header.rows;
        let checked = header.version >= 2 && log.is_some_and(|l| l.has(DIRECTORY_CHECKED));
        if !checked || row_tpl.len() != rows || ts.len() != rows {
            let r = Self::with_context(src, header, dicts, log)?;
            r.set_timestamps(ts);
            return Ok(r);
        }
        let r = Self::unread(src, header, dicts, log)?;
        let _ = r.row_tpl.set(row_tpl);
        let _ = r.ts.set(ts);
        Ok(r)
    }

    /// A reader of the block's frames with its bounds checked and its
    /// directory not read yet (row templates and timestamps empty).
    fn unread(
        src: &'a [u8],
        header: HeaderRef<'a>,
        dicts: Option<&'a SharedDicts>,
        log: Option<&'a BlockLog>,
    ) -> Result<Self, StorageError> {
        let body_start = header.body_start;
        let body_len: usize = header
            .frames
            .iter()
            .try_fold(0usize, |a, f| a.checked_add(f.stored_len))
            .ok_or_else(|| bad("frame sizes overflow"))?;
        let v1 = header.version == 1;
        let trailer = if v1 { 4 } else { 0 };
        if src.len() != body_start.saturating_add(body_len).saturating_add(trailer) {
            return Err(bad("block length does not match its frames"));
        }
        if v1 {
            let body = &src[body_start..body_start + body_len];
            let crc = &src[body_start + body_len..];
            if crc32fast::hash(body).to_le_bytes() != crc {
                return Err(bad("body checksum mismatch"));
            }
        }
        if header.frames.is_empty() {
            return Err(bad("no directory frame"));
        }
        let r = BlockReader {
            src,
            header,
            frames: RefCell::new(FrameSlots::default()),
            payload_base: 0,
            templates: OnceCell::new(),
            row_tpl: OnceCell::new(),
            tpl_layout: None,
            ts: OnceCell::new(),
            ts_layout: None,
            ts_tail: RefCell::new((usize::MAX, Vec::new())),
            metadata: OnceCell::new(),
            columns: Vec::new(),
            names: OnceCell::new(),
            dicts,
            log,
            file: None,
        };
        Ok(r)
    }

    /// Where column `id`'s payload is: from the header in version 2 (whose
    /// places the directory check vouched for), from the directory in 1.
    #[inline]
    fn dir(&self, id: usize) -> ColumnDir {
        if self.header.version < 2 {
            return self.columns[id].clone();
        }
        let head = &self.header.columns[id];
        let p = head
            .place
            .expect("version 2 column places are checked with the directory");
        ColumnDir {
            kind: head.kind,
            encoding: head.encoding,
            values: p.values,
            frame: p.frame,
            offset: p.offset,
            len: p.len,
            stats: p.stats,
            shared: head.shared,
        }
    }

    /// Reads compressed data frames (every frame but the directory) from
    /// `file` instead of the block's bytes; `file` holds the same bytes.
    pub fn read_compressed_from(mut self, file: BlockFile<'a>) -> Self {
        self.file = Some(file);
        self
    }

    /// The decompressed frame `i` (checked and decompressed on first use).
    fn frame(&self, i: usize) -> Result<FrameRef<'a>, StorageError> {
        if let Some(f) = self.frames.borrow().get(i) {
            return Ok(f);
        }
        let info = self
            .header
            .frames
            .get(i)
            .ok_or_else(|| bad("frame out of range"))?;
        let bit = if i < 63 { 1u64 << i } else { 0 };
        let known = self.log.is_some_and(|l| bit != 0 && l.has(bit));
        let from_file = match self.file {
            Some(file) if i != FRAME_DIRECTORY && info.codec == CODEC_ZSTD => Some(file),
            _ => None,
        };
        // Where the frame starts: summed on each first read of a frame (a
        // block has a few), not kept per reader (one allocation fewer per
        // block opened; the sums cannot overflow, `unread` checked them).
        let start = self.header.frame_start(i);
        let f = match from_file {
            Some(file) => read_frame_from_file(file, start, info, !known)?,
            None => read_frame(self.src, start, info, !known)?,
        };
        if let Some(l) = self.log {
            if !known {
                l.set(bit);
            }
            if i != FRAME_DIRECTORY && from_file.is_none() {
                l.note_data_read(i);
            }
        }
        self.frames.borrow_mut().set(i, f.clone());
        Ok(f)
    }

    fn read_directory_v2(&mut self, frame: FrameRef<'a>) -> Result<(), StorageError> {
        let DirectoryV2 {
            templates,
            gcd,
            timestamps,
            templates_at,
        } = DirectoryV2::read(&frame, &self.header)?;
        // A directory checked once (its frame's bytes never change) is not
        // checked again: the counts cost a pass over every row.
        let checked = self.log.is_some_and(|l| l.has(DIRECTORY_CHECKED));
        let mut per_tpl = TemplateCounts::new(self.header.templates.len());
        match templates {
            // One template (or none): unpacked when first asked for.
            None => per_tpl.all_rows_in_one(self.header.rows),
            // Every template was found in range when the directory was
            // checked: unpacked when asked for, or read row by row.
            Some(l) if checked => self.tpl_layout = Some((frame.clone(), l)),
            Some(l) => {
                // Unpacked first, then counted in a loop of its own: the
                // unpacking stays a straight run of shifts and stores, and
                // the reader keeps it.
                let t = l.all_shared(&frame, self.header.rows, |t| {
                    u32::try_from(t).unwrap_or(u32::MAX)
                });
                count_templates(&t, per_tpl.as_mut())
                    .map_err(|_| DirectoryV2::template_error(templates_at))?;
                let _ = self.row_tpl.set(t);
            }
        }
        self.ts_layout = Some(TsLayout {
            frame: frame.clone(),
            gcd,
            deltas: timestamps,
        });
        if checked {
            return Ok(());
        }
        check_column_counts(&self.header, self.dicts, per_tpl.as_ref())?;
        if let Some(l) = self.log {
            l.note_template_counts(per_tpl.as_ref());
            l.set(DIRECTORY_CHECKED);
        }
        Ok(())
    }

    fn read_directory_v1(&mut self, frame0: &[u8]) -> Result<(), StorageError> {
        let rows = self.header.rows;
        let ncols = self.header.columns.len();
        let mut c = Cursor::new(frame0, "directory");
        // Every row costs at least one directory byte (its timestamp), which
        // bounds allocations sized by the row count.
        if rows > frame0.len() {
            return Err(c.err("row count exceeds directory"));
        }
        let nt = c.len(c.remaining())?;
        let mut templates = Vec::with_capacity(nt.min(c.remaining()));
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
            templates.push(Template::new(text, slots)?);
        }
        if rows > 0 && nt == 0 {
            return Err(c.err("rows without templates"));
        }
        let _ = self
            .row_tpl
            .set(read_row_templates(&mut c, rows, nt)?.into());
        let _ = self
            .ts
            .set(read_row_timestamps(&mut c, rows, self.header.min_ts)?.into());
        let metadata = read_metadata(&mut c, rows)?;
        // How many values each column must hold, from the templates.
        let mut per_tpl = vec![0usize; nt];
        for &t in self.row_templates() {
            per_tpl[t as usize] += 1;
        }
        let mut expected = vec![0usize; ncols];
        for (t, n) in templates.iter().zip(&per_tpl) {
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
                shared: None,
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
        let _ = self.templates.set(templates);
        let _ = self.metadata.set(metadata);
        Ok(())
    }

    /// The block header.
    pub fn header(&self) -> &BlockHeader<'a> {
        &self.header
    }

    /// The block's bytes.
    pub fn src(&self) -> &'a [u8] {
        self.src
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
        self.timestamps_shared()
    }

    /// [`Self::timestamps`], shared (for keeping them past this reader).
    pub fn timestamps_shared(&self) -> &Arc<[i64]> {
        self.ts.get_or_init(|| match &self.ts_layout {
            Some(l) => decode_timestamps(l, self.header.min_ts, self.rows()),
            None => Vec::new().into(),
        })
    }

    /// Which of the block's templates some row uses (bit `t` for template
    /// `t`), without unpacking the row templates: known once the block's
    /// directory was checked (when its part opened), for blocks of at most
    /// 64 templates.
    pub fn templates_with_rows(&self) -> Option<u64> {
        let mask = self.log?.templates_with_rows()?;
        let nt = self.header.templates.len().max(1) as u32;
        (nt <= 64 && mask.checked_shr(nt).unwrap_or(0) == 0).then_some(mask)
    }

    /// Whether the row templates were unpacked (or given) already.
    pub fn has_row_templates(&self) -> bool {
        self.row_tpl.get().is_some()
    }

    /// Whether the row timestamps were decoded (or given) already.
    pub fn has_timestamps(&self) -> bool {
        self.ts.get().is_some()
    }

    /// Gives the row timestamps, decoded earlier from this very block, so
    /// that they are not decoded again; ignored when already decoded or
    /// when their count is not the block's row count.
    pub fn set_timestamps(&self, ts: Arc<[i64]>) {
        if ts.len() == self.rows() {
            let _ = self.ts.set(ts);
        }
    }

    /// The timestamp of row `r` (below [`Self::rows`]). Rows read by
    /// [`Self::first_row_from`] are answered without decoding the others.
    pub fn row_ts(&self, r: usize) -> i64 {
        if let Some(ts) = self.ts.get() {
            return ts[r];
        }
        {
            let tail = self.ts_tail.borrow();
            if r >= tail.0 && tail.0 != usize::MAX {
                return tail.1[r - tail.0];
            }
        }
        self.timestamps()[r]
    }

    /// The first row with a timestamp at or after `lo` (rows are in time
    /// order). Reads the timestamps backward from the newest row, so a
    /// bound near the block's end costs only the rows after it.
    pub fn first_row_from(&self, lo: i64) -> usize {
        let n = self.rows();
        if lo <= self.header.min_ts || n == 0 {
            return 0;
        }
        if lo > self.header.max_ts {
            return n;
        }
        if let Some(ts) = self.ts.get() {
            return first_at_or_after_from_end(ts, lo);
        }
        let Some(l) = &self.ts_layout else {
            return self.timestamps().partition_point(|&t| t < lo);
        };
        let mut tail = self.ts_tail.borrow_mut();
        if tail.0 == usize::MAX {
            *tail = (n, Vec::new());
        }
        // Extend the tail backward until its first row is before `lo`.
        let limit = n / 4;
        // Room for the few rows a log query past its cutoff reads of most
        // blocks: one allocation, not one per doubling.
        let mut rev: Vec<i64> = Vec::with_capacity(16.min(limit + 2));
        let mut at = tail.0;
        let mut t = if at == n {
            self.header.max_ts
        } else {
            tail.1[0]
        };
        if at == n {
            at -= 1;
            rev.push(t);
        }
        while t >= lo && at > 0 {
            if n - at > limit {
                drop(tail);
                return self.timestamps().partition_point(|&t| t < lo);
            }
            let d = unzigzag(l.deltas.get(&l.frame, at));
            t = t.wrapping_sub(d.wrapping_mul(l.gcd));
            at -= 1;
            rev.push(t);
        }
        if !rev.is_empty() {
            rev.reverse();
            rev.extend_from_slice(&tail.1);
            *tail = (at, rev);
        }
        // Rows [tail.0, n) are known; the first at or after `lo`:
        let base = tail.0;
        base + tail.1.partition_point(|&t| t < lo)
    }

    /// The templates (version 2: read and checked on first use).
    pub fn templates(&self) -> Result<&[Template], StorageError> {
        if let Some(t) = self.templates.get() {
            return Ok(t);
        }
        let heads = &self.header.templates;
        // Every template read before (by any block): no frame read.
        let kept = (self.header.version >= 2 && !heads.is_empty())
            .then(|| template_shapes::all_of(heads.iter().map(|h| h.id)))
            .flatten();
        if let Some(shapes) = kept {
            let out = shapes
                .into_iter()
                .zip(heads)
                .map(|(shape, head)| Template::with_shape(shape, head.slots.clone()))
                .collect::<Result<Vec<_>, _>>()?;
            let _ = self.templates.set(out);
            return Ok(self.templates.get().expect("just set"));
        }
        let out = self.read_templates()?;
        template_shapes::keep(heads.iter().zip(&out).map(|(h, t)| (h.id, t.shape.clone())));
        let _ = self.templates.set(out);
        Ok(self.templates.get().expect("just set"))
    }

    /// The templates read from the block's templates frame, each text
    /// checked against its id.
    fn read_templates(&self) -> Result<Vec<Template>, StorageError> {
        let heads = &self.header.templates;
        let frame = self.frame(FRAME_TEMPLATES)?;
        let mut c = Cursor::new(&frame, "templates");
        let mut out = Vec::with_capacity(heads.len());
        for head in heads {
            let text = c.bytes()?.to_vec();
            if xxhash_rust::xxh3::xxh3_128(&text) != head.id {
                return Err(bad("template id mismatch"));
            }
            out.push(Template::new(text, head.slots.clone())?);
        }
        if !c.is_empty() {
            return Err(c.err("trailing bytes"));
        }
        Ok(out)
    }

    /// Reads and checks the templates frame (version 2) even when
    /// [`Self::templates`] would build the templates from texts kept by id
    /// without reading it: a whole decode verifies every frame.
    pub fn check_templates_frame(&self) -> Result<(), StorageError> {
        if self.header.version >= 2 {
            self.read_templates()?;
        }
        Ok(())
    }

    /// Version 2: the templates' ids and slot columns, from the header
    /// alone (empty for version 1).
    pub fn template_heads(&self) -> &[TemplateHead] {
        &self.header.templates
    }

    /// Structured metadata per row (version 2: read on first use).
    pub fn metadata(&self) -> Result<&RowMetadata, StorageError> {
        if let Some(m) = self.metadata.get() {
            return Ok(m);
        }
        let frame = self.frame(FRAME_METADATA)?;
        let mut c = Cursor::new(&frame, "metadata");
        let md = if frame.is_empty() {
            RowMetadata::empty(self.rows())
        } else {
            let md = read_metadata(&mut c, self.rows())?;
            if !c.is_empty() {
                return Err(c.err("trailing bytes"));
            }
            md
        };
        let _ = self.metadata.set(md);
        Ok(self.metadata.get().expect("just set"))
    }

    /// The metadata names some row uses, read without decoding the rows
    /// (version 2; version 1 decodes them).
    pub fn metadata_names(&self) -> Result<Vec<String>, StorageError> {
        if self.header.version < 2 {
            let mut names: Vec<String> = self.metadata()?.names().map(str::to_string).collect();
            names.sort_unstable();
            names.dedup();
            return Ok(names);
        }
        let frame = self.frame(FRAME_METADATA)?;
        if frame.is_empty() {
            return Ok(Vec::new());
        }
        let mut c = Cursor::new(&frame, "metadata");
        let mut nm = c.len(c.remaining())?;
        if nm == 0 && c.buf().get(c.pos()) == Some(&METADATA_FORM_SETS) {
            c.u8()?;
            nm = c.len(c.remaining())?;
        }
        (0..nm).map(|_| utf8(c.bytes()?)).collect()
    }

    /// [`Self::metadata_names`], handed to `f` as text borrowed from the
    /// block (no string allocated): blocks of a part mostly share one set
    /// of names, which the caller can then keep once.
    pub fn with_metadata_names<R>(&self, f: impl FnOnce(&[&str]) -> R) -> Result<R, StorageError> {
        if self.header.version < 2 {
            let names = self.metadata_names()?;
            let borrowed: Vec<&str> = names.iter().map(String::as_str).collect();
            return Ok(f(&borrowed));
        }
        let frame = self.frame(FRAME_METADATA)?;
        Ok(f(&metadata_frame_names(&frame)?))
    }

    /// True when some row has structured metadata (version 2: from the
    /// header alone; version 1: from the decoded metadata).
    pub fn has_metadata(&self) -> bool {
        if self.header.version >= 2 {
            return self.header.frames[FRAME_METADATA].raw_len > 0;
        }
        self.metadata.get().is_some_and(|m| !m.all_empty())
    }

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

    /// Number of templates (distinct line shapes) of the block.
    pub fn template_count(&self) -> usize {
        match self.templates.get() {
            Some(t) => t.len(),
            None => self.header.templates.len(),
        }
    }

    /// The first byte of template `t`'s text (`None` when empty, out of
    /// range or unreadable).
    pub fn template_starts_with(&self, t: usize) -> Option<u8> {
        self.templates().ok()?.get(t)?.text().first().copied()
    }

    /// The template of each row, an index below [`Self::template_count`].
    pub fn row_templates(&self) -> &[u32] {
        self.row_templates_shared()
    }

    /// [`Self::row_templates`], shared (for keeping them past this reader).
    pub fn row_templates_shared(&self) -> &Arc<[u32]> {
        self.row_tpl.get_or_init(|| match &self.tpl_layout {
            Some((frame, l)) => l.all_shared(frame, self.rows(), |t| t as u32),
            None => std::iter::repeat_n(0, self.rows()).collect(),
        })
    }

    /// The template of row `r` (below [`Self::rows`]), read alone when the
    /// row templates have not been unpacked: a log query past its cutoff
    /// looks at the last few rows of most blocks it opens.
    pub fn row_template(&self, r: usize) -> u32 {
        match (self.row_tpl.get(), &self.tpl_layout) {
            (Some(all), _) => all[r],
            (None, Some((frame, l))) => {
                assert!(r < self.rows(), "row {r} out of range");
                l.get(frame, r) as u32
            }
            // One template or none: every row's is template 0.
            (None, None) => {
                assert!(r < self.rows(), "row {r} out of range");
                0
            }
        }
    }

    /// Whether [`Self::row_template`] reads rows without unpacking all.
    pub fn reads_templates_by_row(&self) -> bool {
        self.row_tpl.get().is_none() && self.tpl_layout.is_some()
    }

    /// The slots of template `t` in line order: column id, dotted field name
    /// (raw key text) and whether the value is a JSON string. `None` when the
    /// template is a whole-line template or `t` is out of range.
    pub fn template_fields(&self, t: usize) -> Option<Vec<(usize, Vec<u8>, bool)>> {
        let tpl = self.templates().ok()?.get(t)?;
        if tpl
            .slots
            .iter()
            .any(|&c| self.dir(c as usize).kind != ColumnKind::Field)
        {
            return None;
        }
        let slots = template_slots(tpl.text())?;
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
    pub(super) fn hex_digit_runs(&self, id: usize) -> Option<(bool, usize)> {
        if self.dir(id).encoding != Encoding::Hex {
            return None;
        }
        super::encoding::hex_digit_runs(&self.column_payload(id).ok()?)
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

    /// The slot columns of each template (from the header in version 2).
    fn slot_columns(&self) -> Vec<&[u32]> {
        if self.header.version >= 2 {
            return self
                .header
                .templates
                .iter()
                .map(|t| t.slots.as_slice())
                .collect();
        }
        self.templates
            .get()
            .map(|ts| ts.iter().map(|t| t.slots.as_slice()).collect())
            .unwrap_or_default()
    }

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
        let l = super::encoding::shared_index_layout(p, col.values, dict.len(), skeleton)?;
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
    fn shared_values(&self, id: usize) -> Result<Values, StorageError> {
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
            super::digits::fill(entries.get(i), &mut digits, &mut data)?;
            ends.push(data.len() as u32);
        }
        if !digits.is_done() {
            return Err(bad("trailing digit runs"));
        }
        Ok(Values::Flat { data, ends })
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
    /// its values still packed (see [`super::encoding::hex_packed`]), so a
    /// test that needs no value's text reads no digit. `None` for other
    /// encodings.
    pub fn with_hex_values<R>(
        &self,
        id: usize,
        f: impl FnOnce(&super::text::HexLayout, &[u8]) -> R,
    ) -> Result<Option<R>, StorageError> {
        let col = &self.dir(id);
        if col.encoding != Encoding::Hex {
            return Ok(None);
        }
        self.with_column_payload(id, |p| {
            let (layout, packed) = super::encoding::hex_packed(p, col.values)?;
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

    /// Appends values `positions` (ascending, distinct) of shared column
    /// `id` to `data`/`ends`: each value's entry looked up alone; for
    /// skeleton columns the digit runs of the values between are skipped.
    fn shared_values_at(
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
                    holes[e] = super::digits::holes(entry(e)?) as u32;
                }
                skip += holes[e] as usize;
                v += 1;
            }
            digits.skip(skip)?;
            super::digits::fill(entry(si.entry(v)?)?, &mut digits, data)?;
            ends.push(data.len() as u32);
            v += 1;
        }
        Ok(())
    }
}

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

/// Largest offset or length accepted in the directory.
const MAX: usize = super::layout::MAX_FRAME_RAW;

/// In a block's verification flags (bits 0..63: frames whose checksum
/// matched): its version-2 directory passed every check against the header
/// once, so later readers of the same bytes skip the per-row counts.
const DIRECTORY_CHECKED: u64 = 1 << 63;

/// Adds each row's template to `per_tpl` (one count per template); `Err`
/// when a row names a template past `per_tpl`. Up to 256 templates (nearly
/// every block) the range is checked once, by the largest, and the counts
/// go to a fixed table a byte indexes: no check per row.
fn count_templates<T: Copy + Into<u64>>(row_tpl: &[T], per_tpl: &mut [usize]) -> Result<(), ()> {
    let nt = per_tpl.len();
    if nt <= 256 {
        if row_tpl
            .iter()
            .map(|&t| t.into())
            .max()
            .is_some_and(|m| m >= nt as u64)
        {
            return Err(());
        }
        let mut counts = [0u32; 256];
        for &t in row_tpl {
            counts[(t.into() & 0xFF) as usize] += 1;
        }
        for (n, &k) in per_tpl.iter_mut().zip(&counts) {
            *n += k as usize;
        }
        return Ok(());
    }
    for &t in row_tpl {
        let i = usize::try_from(t.into()).map_err(|_| ())?;
        *per_tpl.get_mut(i).ok_or(())? += 1;
    }
    Ok(())
}

/// Checks a version-2 block's directory as its first reader would (row
/// templates in range, every column's value count equal to the rows of the
/// templates naming it, shared columns' dictionaries present) and notes it
/// in `log` as checked, so that readers read single rows' templates instead
/// of unpacking and counting every row's. Allocates nothing unless the
/// directory frame is compressed: a part checks its blocks when it opens,
/// and allocations there would be left in the heap for later queries.
/// A directory that fails is not noted; the read that uses it reports it.
pub fn check_directory(
    src: &[u8],
    header: &BlockHeader<'_>,
    dicts: Option<&SharedDicts>,
    log: &BlockLog,
) -> Result<(), StorageError> {
    if header.version < 2 || log.has(DIRECTORY_CHECKED) {
        return Ok(());
    }
    let info = header
        .frames
        .get(FRAME_DIRECTORY)
        .ok_or_else(|| bad("no directory frame"))?;
    let verified = log.has(1 << FRAME_DIRECTORY);
    let frame = read_frame(src, header.body_start, info, !verified)?;
    log.set(1 << FRAME_DIRECTORY);
    let d = DirectoryV2::read(&frame, header)?;
    let mut per_tpl = TemplateCounts::new(header.templates.len());
    match &d.templates {
        None => per_tpl.all_rows_in_one(header.rows),
        Some(l) => {
            let mut sound = true;
            l.for_each_run(&frame, header.rows, |run| {
                sound &= count_templates(run, per_tpl.as_mut()).is_ok();
            });
            if !sound {
                return Err(DirectoryV2::template_error(d.templates_at));
            }
        }
    }
    check_column_counts(header, dicts, per_tpl.as_ref())?;
    log.note_template_counts(per_tpl.as_ref());
    log.set(DIRECTORY_CHECKED);
    Ok(())
}

/// Verifies the checksums of `header`'s frames `frames` that are stored
/// uncompressed, as their first reader would, and notes each sound one in
/// `log` so that no reader computes it again. A part does this when it
/// opens for the frames it keeps mapped (a block's metadata and small
/// payloads), whose pages it maps in then anyway: a first query after a
/// restart then reads them without checksumming whole frames of which it
/// needs a few values. A frame that fails is not noted; the read that uses
/// it reports it.
pub fn verify_stored_frames(
    src: &[u8],
    header: &BlockHeader<'_>,
    frames: &[usize],
    log: &BlockLog,
) {
    let mut start = header.body_start;
    for (i, f) in header.frames.iter().enumerate() {
        let at = start;
        start = start.saturating_add(f.stored_len);
        if i >= 63 || !frames.contains(&i) || f.codec != CODEC_NONE || log.has(1 << i) {
            continue;
        }
        if read_frame(src, at, f, true).is_ok() {
            log.set(1 << i);
        }
    }
}

/// The names a version-2 metadata frame lists first (none in an empty frame).
fn metadata_frame_names(frame: &[u8]) -> Result<Vec<&str>, StorageError> {
    if frame.is_empty() {
        return Ok(Vec::new());
    }
    let mut c = Cursor::new(frame, "metadata");
    let mut nm = c.len(c.remaining())?;
    if nm == 0 && c.buf().get(c.pos()) == Some(&METADATA_FORM_SETS) {
        c.u8()?;
        nm = c.len(c.remaining())?;
    }
    (0..nm)
        .map(|_| std::str::from_utf8(c.bytes()?).map_err(|_| bad("metadata is not utf-8")))
        .collect()
}

/// [`BlockReader::with_metadata_names`] of the block `src` (its bytes) with
/// `header`, read straight from the bytes when its metadata frame is stored
/// uncompressed and its checksum was verified ([`verify_stored_frames`]):
/// a part lists its blocks' names when it opens, while the frames' pages
/// are mapped in anyway. `None` otherwise (version 1, a compressed or
/// unverified frame, names that do not decode): a reader reads them then,
/// and reports what is wrong.
pub fn stored_metadata_names<R>(
    src: &[u8],
    header: &BlockHeader<'_>,
    log: &BlockLog,
    f: impl FnOnce(&[&str]) -> R,
) -> Option<R> {
    let info = header.frames.get(FRAME_METADATA)?;
    if header.version < 2 || info.codec != CODEC_NONE || !log.frame_verified(FRAME_METADATA) {
        return None;
    }
    let at = header.frame_start(FRAME_METADATA);
    let frame = src.get(at..at.checked_add(info.stored_len)?)?;
    metadata_frame_names(frame).ok().map(|names| f(&names))
}

/// Where a version-2 directory frame keeps its row templates and timestamps
/// (its framing checked: row count, template count, no trailing bytes).
struct DirectoryV2 {
    /// The row templates' integers; `None` with at most one template.
    templates: Option<IntsLayout>,
    /// Timestamps are stored divided by this.
    gcd: i64,
    /// The timestamps' zigzag deltas.
    timestamps: IntsLayout,
    /// Where the templates start, for errors.
    templates_at: usize,
}

impl DirectoryV2 {
    fn read(dir: &[u8], header: &BlockHeader<'_>) -> Result<Self, StorageError> {
        let rows = header.rows;
        let nt = header.templates.len();
        let mut c = Cursor::new(dir, "directory");
        if rows > super::layout::MAX_ROWS {
            return Err(c.err("too many rows"));
        }
        if rows > 0 && nt == 0 {
            return Err(c.err("rows without templates"));
        }
        let templates_at = c.pos();
        let templates = if nt >= 2 {
            Some(IntsLayout::read(&mut c, rows)?)
        } else {
            None
        };
        let g = c.uvarint()?;
        if g == 0 || g > i64::MAX as u64 {
            return Err(c.err("bad timestamp divisor"));
        }
        let timestamps = IntsLayout::read(&mut c, rows)?;
        if !c.is_empty() {
            return Err(c.err("trailing bytes"));
        }
        Ok(DirectoryV2 {
            templates,
            gcd: g as i64,
            timestamps,
            templates_at,
        })
    }

    fn template_error(templates_at: usize) -> StorageError {
        StorageError::corrupt(
            "block directory".to_string(),
            format!("row template out of range at offset {templates_at}"),
        )
    }
}

/// Rows per template while a directory is checked: on the stack for the
/// usual few templates (an empty `Vec` does not allocate).
struct TemplateCounts {
    few: [usize; 64],
    many: Vec<usize>,
    n: usize,
}

impl TemplateCounts {
    fn new(nt: usize) -> Self {
        let n = nt.max(1);
        TemplateCounts {
            few: [0; 64],
            many: if n > 64 { vec![0; n] } else { Vec::new() },
            n,
        }
    }

    fn all_rows_in_one(&mut self, rows: usize) {
        self.as_mut()[0] = rows;
    }

    fn as_mut(&mut self) -> &mut [usize] {
        if self.n <= self.few.len() {
            &mut self.few[..self.n]
        } else {
            &mut self.many
        }
    }

    fn as_ref(&self) -> &[usize] {
        if self.n <= self.few.len() {
            &self.few[..self.n]
        } else {
            &self.many
        }
    }
}

/// Every column holds one value per row of the templates naming it
/// (templates name each column at most once: checked with the header), and
/// a shared column's dictionary exists and holds what its encoding reads:
/// skeletons for Skeleton columns, values for Shared ones. Version 2 column
/// places are read from the header when asked for (see `dir`): a checked
/// directory costs no pass over the columns.
fn check_column_counts(
    header: &BlockHeader<'_>,
    dicts: Option<&SharedDicts>,
    per_tpl: &[usize],
) -> Result<(), StorageError> {
    let ncols = header.columns.len();
    let mut few = [0usize; 256];
    let mut many = Vec::new();
    let expected: &mut [usize] = if ncols <= few.len() {
        &mut few[..ncols]
    } else {
        many.resize(ncols, 0);
        &mut many
    };
    for (t, &n) in header.templates.iter().zip(per_tpl) {
        for &s in &t.slots {
            expected[s as usize] += n;
        }
    }
    for (head, &want) in header.columns.iter().zip(expected.iter()) {
        let p = head.place.ok_or_else(|| bad("column without place"))?;
        if p.values != want {
            return Err(bad("column value count mismatch"));
        }
        if let Some(sp) = head.shared {
            let skeleton = head.encoding == Encoding::Skeleton;
            let ok = dicts.is_some_and(|d| {
                d.get(sp.dict)
                    .is_some_and(|dict| dict.holds_skeletons() == skeleton)
            });
            if !ok {
                return Err(bad("shared column without its part's dictionary"));
            }
        }
    }
    Ok(())
}

fn read_row_templates(
    c: &mut Cursor<'_>,
    rows: usize,
    nt: usize,
) -> Result<Vec<u32>, StorageError> {
    let row_tpl: Vec<u32> = match nt {
        0 | 1 => vec![0; rows],
        2..=256 => c.take(rows)?.iter().map(|&b| u32::from(b)).collect(),
        _ => (0..rows)
            .map(|_| c.len(nt).map(|v| v as u32))
            .collect::<Result<_, _>>()?,
    };
    if row_tpl.iter().any(|&t| t as usize >= nt.max(1)) {
        return Err(c.err("row template out of range"));
    }
    Ok(row_tpl)
}

/// A version-2 directory's row timestamps. Rows are in time order, so
/// every delta is non-negative and its zigzag form is twice it: the deltas
/// are added as `d >> 1` (and multiplied by the divisor only when it is
/// not 1), with the low bits of all of them or-ed together on the way; a
/// delta with its low bit set (a negative one, which the store never
/// writes) has the block decoded again the general way.
fn decode_timestamps(l: &TsLayout<'_>, min_ts: i64, rows: usize) -> Arc<[i64]> {
    let g = l.gcd;
    let mut odd = 0u64;
    let mut prev = min_ts;
    let ts = if g == 1 {
        l.deltas.all_shared(&l.frame, rows, |d| {
            odd |= d;
            prev = prev.wrapping_add((d >> 1) as i64);
            prev
        })
    } else {
        l.deltas.all_shared(&l.frame, rows, |d| {
            odd |= d;
            prev = prev.wrapping_add(((d >> 1) as i64).wrapping_mul(g));
            prev
        })
    };
    if odd & 1 == 0 {
        return ts;
    }
    let mut prev = min_ts;
    l.deltas.all_shared(&l.frame, rows, |d| {
        prev = prev.wrapping_add(unzigzag(d).wrapping_mul(g));
        prev
    })
}

fn read_row_timestamps(
    c: &mut Cursor<'_>,
    rows: usize,
    min_ts: i64,
) -> Result<Vec<i64>, StorageError> {
    let g = c.uvarint()?;
    if g == 0 || g > i64::MAX as u64 {
        return Err(c.err("bad timestamp divisor"));
    }
    let mut prev = min_ts;
    Ok(get_ints(c, rows)?
        .into_iter()
        .map(|d| {
            prev = prev.wrapping_add(unzigzag(d).wrapping_mul(g as i64));
            prev
        })
        .collect())
}

fn read_metadata<'b>(c: &mut Cursor<'b>, rows: usize) -> Result<RowMetadata, StorageError> {
    let nm = c.len(c.remaining())?;
    if nm == 0 && !c.is_empty() && c.buf().get(c.pos()) == Some(&METADATA_FORM_SETS) {
        c.u8()?;
        return read_metadata_sets(c, rows);
    }
    if nm == 0 {
        return Ok(RowMetadata::empty(rows));
    }
    let mut names = Vec::with_capacity(nm);
    for _ in 0..nm {
        names.push(utf8(c.bytes()?)?);
    }
    // Rows mostly repeat a few sets (a level, a trace flag): each distinct
    // encoding of a row's pairs is decoded once.
    let mut sets: Vec<Vec<(String, String)>> = Vec::new();
    let mut known: crate::block::hash::FastMap<&'b [u8], u32> = Default::default();
    let mut row_set = Vec::with_capacity(rows.min(c.remaining()));
    let buf = c.buf();
    for _ in 0..rows {
        let start = c.pos();
        let np = c.len(c.remaining())?;
        for _ in 0..np {
            c.len(nm - 1)?;
            c.bytes()?;
        }
        let raw = &buf[start..c.pos()];
        let id = match known.get(raw) {
            Some(&id) => id,
            None => {
                let mut r = Cursor::new(raw, "metadata");
                let np = r.len(r.remaining())?;
                let mut pairs = Vec::with_capacity(np);
                for _ in 0..np {
                    let name = r.len(nm - 1)?;
                    pairs.push((names[name].clone(), utf8(r.bytes()?)?));
                }
                sets.push(pairs);
                let id = (sets.len() - 1) as u32;
                known.insert(raw, id);
                id
            }
        };
        row_set.push(id);
    }
    Ok(RowMetadata { sets, row_set })
}

/// The sets form of the metadata frame (after its `0` and form byte).
fn read_metadata_sets(c: &mut Cursor<'_>, rows: usize) -> Result<RowMetadata, StorageError> {
    let nm = c.len(c.remaining())?;
    if nm == 0 {
        return Err(c.err("metadata sets without names"));
    }
    let mut names = Vec::with_capacity(nm);
    for _ in 0..nm {
        names.push(utf8(c.bytes()?)?);
    }
    let ns = c.len(c.remaining())?;
    if ns == 0 && rows > 0 {
        return Err(c.err("metadata without sets"));
    }
    let mut sets = Vec::with_capacity(ns);
    for _ in 0..ns {
        let np = c.len(c.remaining())?;
        let mut pairs = Vec::with_capacity(np);
        for _ in 0..np {
            let name = c.len(nm - 1)?;
            pairs.push((names[name].clone(), utf8(c.bytes()?)?));
        }
        sets.push(pairs);
    }
    let layout = IntsLayout::read(c, rows)?;
    let mut out_of_range = false;
    let row_set = layout.all(c.buf(), rows, |v| {
        out_of_range |= v >= ns as u64;
        v as u32
    });
    if out_of_range {
        return Err(c.err("metadata set out of range"));
    }
    Ok(RowMetadata { sets, row_set })
}

/// A block's structured metadata: its distinct sets of pairs and, per row,
/// which one the row has.
#[derive(Clone, Debug, Default)]
pub struct RowMetadata {
    sets: Vec<Vec<(String, String)>>,
    row_set: Vec<u32>,
}

impl RowMetadata {
    /// `rows` rows without metadata.
    pub fn empty(rows: usize) -> Self {
        RowMetadata {
            sets: vec![Vec::new()],
            row_set: vec![0; rows],
        }
    }

    /// Row `i`'s pairs.
    #[inline]
    pub fn row(&self, i: usize) -> &[(String, String)] {
        &self.sets[self.row_set[i] as usize]
    }

    /// Which distinct set row `i` has (rows with equal pairs may still have
    /// different sets only if their encodings differ).
    #[inline]
    pub fn set_of(&self, i: usize) -> usize {
        self.row_set[i] as usize
    }

    /// Every name some row's pairs use (with repeats).
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.sets.iter().flatten().map(|(k, _)| k.as_str())
    }

    /// Whether no row has any pair.
    pub fn all_empty(&self) -> bool {
        self.sets.iter().all(|s| s.is_empty())
    }

    /// How many distinct sets there are.
    pub fn set_count(&self) -> usize {
        self.sets.len()
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.row_set.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.row_set.is_empty()
    }

    /// Every row's pairs, in row order.
    pub fn iter(&self) -> impl Iterator<Item = &[(String, String)]> + '_ {
        self.row_set
            .iter()
            .map(|&s| self.sets[s as usize].as_slice())
    }

    /// Every row's pairs, copied.
    pub fn to_vec(&self) -> Vec<Vec<(String, String)>> {
        self.iter().map(<[_]>::to_vec).collect()
    }
}

fn utf8(b: &[u8]) -> Result<String, StorageError> {
    String::from_utf8(b.to_vec()).map_err(|_| bad("metadata is not utf-8"))
}

/// Where a version-2 block's row timestamps lie in its directory frame.
struct TsLayout<'a> {
    frame: FrameRef<'a>,
    gcd: i64,
    deltas: IntsLayout,
}

/// The frames a reader has read, by number: the first
/// [`INLINE_FRAMES`] in place (directory, template texts, metadata, small
/// payloads, the first large payload: what most reads touch), later ones in a
/// list grown when one is read. A reader opened per block then allocates
/// nothing for its frames (q14's first run opened ~4,000 readers, each
/// allocating and freeing a slot per frame).
#[derive(Default)]
struct FrameSlots<'a> {
    first: [Option<FrameRef<'a>>; INLINE_FRAMES],
    more: Vec<Option<FrameRef<'a>>>,
}

/// Frames a [`FrameSlots`] keeps in place.
const INLINE_FRAMES: usize = 5;

impl<'a> FrameSlots<'a> {
    fn get(&self, i: usize) -> Option<FrameRef<'a>> {
        match i.checked_sub(INLINE_FRAMES) {
            None => self.first[i].clone(),
            Some(k) => self.more.get(k).and_then(Clone::clone),
        }
    }

    fn set(&mut self, i: usize, f: FrameRef<'a>) {
        match i.checked_sub(INLINE_FRAMES) {
            None => self.first[i] = Some(f),
            Some(k) => {
                if self.more.len() <= k {
                    self.more.resize(k + 1, None);
                }
                self.more[k] = Some(f);
            }
        }
    }
}

/// A frame's bytes: borrowed from the block when stored as is, else
/// decompressed (shared by the reader's cache).
#[derive(Clone)]
pub enum FrameRef<'a> {
    /// A stored frame, in the block.
    Borrowed(&'a [u8]),
    /// A decompressed frame.
    Shared(Rc<Vec<u8>>),
}

impl std::ops::Deref for FrameRef<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FrameRef::Borrowed(b) => b,
            FrameRef::Shared(v) => v,
        }
    }
}

fn read_frame<'a>(
    src: &'a [u8],
    start: usize,
    f: &FrameInfo,
    verify: bool,
) -> Result<FrameRef<'a>, StorageError> {
    let stored = src
        .get(start..start + f.stored_len)
        .ok_or_else(|| bad("frame out of range"))?;
    if let (Some(crc), true) = (f.crc, verify) {
        if crc32fast::hash(stored) != crc {
            return Err(bad("frame checksum mismatch"));
        }
    }
    if f.codec != CODEC_ZSTD {
        if f.raw_len != f.stored_len {
            return Err(bad("stored frame size mismatch"));
        }
        return Ok(FrameRef::Borrowed(stored));
    }
    decompress_frame(stored, f)
}

/// [`read_frame`] of a compressed frame at `start` of the block in `file`,
/// read with `pread` into a per-thread scratch buffer.
fn read_frame_from_file<'a>(
    file: BlockFile<'_>,
    start: usize,
    f: &FrameInfo,
    verify: bool,
) -> Result<FrameRef<'a>, StorageError> {
    use std::os::unix::fs::FileExt;
    let at = file.offset + start as u64;
    thread_local! {
        static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }
    SCRATCH.with(|scratch| {
        let mut buf = scratch.borrow_mut();
        buf.clear();
        buf.resize(f.stored_len, 0);
        file.file
            .read_exact_at(&mut buf, at)
            .map_err(|e| bad(&format!("reading frame: {e}")))?;
        if let (Some(crc), true) = (f.crc, verify) {
            if crc32fast::hash(&buf) != crc {
                return Err(bad("frame checksum mismatch"));
            }
        }
        let out = decompress_frame(&buf, f);
        // Keep the scratch buffer small between frames of ordinary size.
        if buf.capacity() > 4 << 20 {
            *buf = Vec::new();
        }
        out
    })
}

/// Decompresses a zstd frame's stored bytes.
fn decompress_frame<'a>(stored: &[u8], f: &FrameInfo) -> Result<FrameRef<'a>, StorageError> {
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
    Ok(FrameRef::Shared(Rc::new(out)))
}

thread_local! {
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { std::cell::RefCell::new(None) };
}

/// The first index of `ts` (ascending) whose value is at least `lo`,
/// searched from the end in doubling steps: a log query past its cutoff
/// asks for bounds near a block's end, and this touches the few cache
/// lines there instead of a binary search's spread over the whole array.
fn first_at_or_after_from_end(ts: &[i64], lo: i64) -> usize {
    let n = ts.len();
    // Invariant: every value of ts[hi..] is at least `lo`.
    let mut hi = n;
    let mut step = 1;
    loop {
        let probe = n.saturating_sub(step);
        if probe == 0 {
            return ts[..hi].partition_point(|&t| t < lo);
        }
        if ts[probe] < lo {
            return probe + 1 + ts[probe + 1..hi].partition_point(|&t| t < lo);
        }
        hi = probe;
        step *= 2;
    }
}

#[cfg(test)]
mod metadata_tests {
    use super::*;
    use crate::block::varint::{put_bytes, put_uvarint};

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, s)| (k.to_string(), s.to_string()))
            .collect()
    }

    #[test]
    fn the_per_row_form_written_before_sets_still_reads() {
        let mut f = Vec::new();
        put_uvarint(&mut f, 2);
        put_bytes(&mut f, b"detected_level");
        put_bytes(&mut f, b"trace");
        for row in [
            &[(0u64, "info")][..],
            &[],
            &[(0, "info"), (1, "t1")],
            &[(0, "info")],
        ] {
            put_uvarint(&mut f, row.len() as u64);
            for (n, v) in row {
                put_uvarint(&mut f, *n);
                put_bytes(&mut f, v.as_bytes());
            }
        }
        let mut c = Cursor::new(&f, "metadata");
        let md = read_metadata(&mut c, 4).unwrap();
        assert!(c.is_empty());
        assert_eq!(md.row(0), pairs(&[("detected_level", "info")]).as_slice());
        assert!(md.row(1).is_empty());
        assert_eq!(
            md.row(2),
            pairs(&[("detected_level", "info"), ("trace", "t1")]).as_slice()
        );
        // Rows with the same pairs share one set.
        assert_eq!(md.row(3), md.row(0));
        assert_eq!(md.set_count(), 3);
        assert_eq!(md.len(), 4);
    }

    #[test]
    fn a_set_index_past_the_sets_is_corrupt() {
        let mut f = vec![0, METADATA_FORM_SETS];
        put_uvarint(&mut f, 1);
        put_bytes(&mut f, b"detected_level");
        put_uvarint(&mut f, 1); // one set
        put_uvarint(&mut f, 1);
        put_uvarint(&mut f, 0);
        put_bytes(&mut f, b"warn");
        crate::block::ints::put_ints_addressable(&mut f, &[0, 1]);
        let mut c = Cursor::new(&f, "metadata");
        assert!(read_metadata(&mut c, 2).is_err());
    }
}

#[cfg(test)]
mod directory_tests {
    use super::*;
    use crate::block::BlockBuilder;

    #[test]
    fn template_counts_match_a_plain_count_and_reject_unknown_templates() {
        for nt in [1usize, 2, 7, 256, 257, 1000] {
            let rows: Vec<u32> = (0..3000u32)
                .map(|i| (i * 7919 + i / 3) % nt as u32)
                .collect();
            let mut got = vec![0usize; nt];
            count_templates(&rows, &mut got).unwrap();
            let mut want = vec![0usize; nt];
            for &t in &rows {
                want[t as usize] += 1;
            }
            assert_eq!(got, want, "{nt} templates");
            let mut bad = rows.clone();
            bad[1234] = nt as u32;
            assert!(
                count_templates(&bad, &mut vec![0; nt]).is_err(),
                "{nt} templates"
            );
            bad[1234] = u32::MAX;
            assert!(
                count_templates(&bad, &mut vec![0; nt]).is_err(),
                "{nt} templates"
            );
        }
    }

    /// A block of `rows` lines made by `line`, stored.
    fn stored_block(rows: i64, line: impl Fn(i64) -> String) -> Vec<u8> {
        let mut b = BlockBuilder::new();
        for i in 0..rows {
            b.push(i, &line(i), &[]);
        }
        let mut buf = Vec::new();
        b.finish(3, &mut buf);
        buf
    }

    /// A reader of `buf` sharing `flags` with the block's other readers.
    fn reader<'b>(buf: &'b [u8], flags: &'b BlockLog) -> BlockReader<'b> {
        let h = HeaderRef::Owned(BlockHeader::decode(buf).unwrap());
        BlockReader::with_context(buf, h, None, Some(flags)).unwrap()
    }

    #[test]
    fn a_directory_is_checked_once_and_reads_the_same_after() {
        let buf = stored_block(40, |i| {
            if i % 3 == 0 {
                format!("{{\"level\":\"error\",\"n\":{i}}}")
            } else {
                format!("plain line {i}")
            }
        });
        let flags = BlockLog::default();
        let read = || {
            let r = reader(&buf, &flags);
            (r.row_templates().to_vec(), r.lines().unwrap())
        };
        let first = read();
        assert!(flags.has(DIRECTORY_CHECKED));
        assert_eq!(read(), first);
        assert_eq!(first.1[3], "{\"level\":\"error\",\"n\":3}");
    }

    #[test]
    fn a_checked_directory_reads_row_templates_one_by_one_as_unpacked() {
        for shapes in [1usize, 2, 3, 9] {
            let buf = stored_block(500, |i| match i as usize % shapes {
                0 => format!("{{\"level\":\"error\",\"n\":{i}}}"),
                1 => format!("plain line {i}"),
                k => format!("{{\"k{k}\":{i},\"msg\":\"x\"}}"),
            });
            let flags = BlockLog::default();
            let open = || reader(&buf, &flags);
            // The first reader checks the directory and unpacks every row's.
            let checker = open();
            assert!(!checker.reads_templates_by_row());
            let all = checker.row_templates().to_vec();
            assert_eq!(all.len(), 500);
            assert!(flags.has(DIRECTORY_CHECKED));
            // A later one reads single rows until asked for all of them.
            let later = open();
            assert_eq!(
                later.reads_templates_by_row(),
                shapes > 1,
                "{shapes} shapes"
            );
            let one_by_one: Vec<u32> = (0..500).rev().map(|r| later.row_template(r)).collect();
            assert!(one_by_one.iter().rev().eq(&all), "{shapes} shapes");
            assert_eq!(later.row_templates(), &all[..]);
            assert!(!later.reads_templates_by_row());
            assert_eq!(later.lines().unwrap(), checker.lines().unwrap());
        }
    }

    /// Lines of `shapes` different shapes (over 64 of them take the
    /// counting's heap path).
    fn shaped(shapes: usize) -> impl Fn(i64) -> String {
        move |i| match i as usize % shapes {
            0 => format!("{{\"level\":\"error\",\"n\":{i}}}"),
            1 => format!("plain line {i}"),
            k => format!("{{\"k{k}\":{i},\"msg\":\"x\"}}"),
        }
    }

    #[test]
    fn a_directory_checked_without_a_reader_is_read_by_row_and_reads_the_same() {
        for shapes in [1usize, 2, 3, 9, 70] {
            let buf = stored_block(600, shaped(shapes));
            let unchecked = BlockLog::default();
            let want = reader(&buf, &BlockLog::default()).lines().unwrap();
            let h = BlockHeader::decode(&buf).unwrap();
            check_directory(&buf, &h, None, &unchecked).unwrap();
            assert!(unchecked.has(DIRECTORY_CHECKED), "{shapes} shapes");
            assert!(unchecked.has(1 << FRAME_DIRECTORY), "{shapes} shapes");
            let r = reader(&buf, &unchecked);
            assert_eq!(r.reads_templates_by_row(), shapes > 1, "{shapes} shapes");
            assert_eq!(r.lines().unwrap(), want, "{shapes} shapes");
            assert_eq!(want[5], shaped(shapes)(5));
        }
    }

    /// The templates some row uses are known once the directory is checked
    /// — by the part's opening or by a first reader — and are exactly those
    /// of the unpacked row templates (none known past 64 templates, nor
    /// before the check).
    #[test]
    fn templates_with_rows_are_those_the_rows_use() {
        for shapes in [1usize, 2, 9, 64, 70] {
            let buf = stored_block(600, shaped(shapes));
            let plain = BlockLog::default();
            let want = {
                let r = reader(&buf, &plain);
                let nt = r.template_heads().len();
                let mut used = vec![false; nt.max(1)];
                for &t in r.row_templates() {
                    used[t as usize] = true;
                }
                (nt <= 64).then(|| {
                    used.iter()
                        .enumerate()
                        .fold(0u64, |m, (t, &u)| m | (u64::from(u) << t))
                })
            };
            let unchecked = BlockLog::default();
            assert_eq!(unchecked.templates_with_rows(), None);
            let h = BlockHeader::decode(&buf).unwrap();
            check_directory(&buf, &h, None, &unchecked).unwrap();
            assert_eq!(
                reader(&buf, &unchecked).templates_with_rows(),
                want,
                "{shapes} shapes"
            );
            // A first reader checks it itself.
            let first = BlockLog::default();
            let r = reader(&buf, &first);
            assert_eq!(r.templates_with_rows(), want, "{shapes} shapes (reader)");
            if shapes <= 64 {
                assert_ne!(want, None, "{shapes} shapes");
            }
        }
        // A block read without a log knows nothing.
        let buf = stored_block(10, shaped(3));
        let h = BlockHeader::decode(&buf).unwrap();
        let r = BlockReader::with_context(&buf, HeaderRef::Owned(h), None, None).unwrap();
        assert_eq!(r.templates_with_rows(), None);
    }

    /// Both the opening's check and a reader refuse `buf` read with `h`,
    /// naming `what`, and neither notes the directory as checked.
    fn refused(buf: &[u8], h: BlockHeader<'_>, what: &str) {
        let log = BlockLog::default();
        let e = check_directory(buf, &h, None, &log).unwrap_err();
        assert!(e.to_string().contains(what), "{e}");
        assert!(!log.has(DIRECTORY_CHECKED));
        let e = BlockReader::with_context(buf, HeaderRef::Owned(h), None, Some(&log))
            .err()
            .expect("the reader finds it too");
        assert!(e.to_string().contains(what), "{e}");
        assert!(!log.has(DIRECTORY_CHECKED));
    }

    #[test]
    fn a_directory_that_disagrees_with_its_header_is_not_noted_as_checked() {
        for shapes in [3usize, 70] {
            let buf = stored_block(300, shaped(shapes));
            // A column's value count one off.
            let mut h = BlockHeader::decode(&buf).unwrap();
            h.columns[0].place.as_mut().unwrap().values += 1;
            refused(&buf, h, "value count");
            // Rows naming a template the header no longer has.
            let mut h = BlockHeader::decode(&buf).unwrap();
            h.templates.pop();
            refused(&buf, h, "row template out of range");
        }
    }
}

#[cfg(test)]
mod search_tests {
    use super::first_at_or_after_from_end;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn search_from_the_end_finds_what_a_binary_search_finds(
            mut ts in prop::collection::vec(-50i64..50, 0..300),
            lo in -60i64..60,
        ) {
            ts.sort_unstable();
            prop_assert_eq!(
                first_at_or_after_from_end(&ts, lo),
                ts.partition_point(|&t| t < lo)
            );
        }
    }
}
