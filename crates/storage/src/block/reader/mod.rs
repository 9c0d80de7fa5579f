//! The block reader: checks a block and gives access to timestamps, row
//! templates, metadata, single columns (decompressing only the frames they
//! need) and whole lines.
//!
//! Version 2 blocks are read lazily: opening checks the header and reads
//! the directory frame (row templates, timestamps); template texts,
//! metadata and column frames are decompressed (and their checksums
//! checked) on first use and kept for the reader's lifetime. Version 1
//! blocks are checked and read whole on open.
//!
//! [`BlockReader`] is one type whose methods live beside what they read:
//! this file holds the reader, its opening, where a column lies and the
//! header; `frames.rs` reads and caches frames (and [`BlockLog`]);
//! `directory.rs` reads and checks the directory; `timestamps.rs` the row
//! timestamps; `templates.rs` the templates and row templates;
//! `metadata.rs` structured metadata; `columns.rs` single columns (typed
//! decoding, packed hex, decimal numbers); `shared_columns.rs` columns
//! coded against the part's shared dictionaries (shared values and
//! skeletons); `lines.rs` rebuilds whole lines.

use std::cell::{OnceCell, RefCell};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::encoding::{Encoding, Stats};
use super::ints::IntsLayout;
use super::layout::{BlockHeader, ColumnKind, SharedPlace, FRAME_DIRECTORY};
use super::shared::SharedDicts;
use crate::StorageError;
use directory::DIRECTORY_CHECKED;
use frames::FrameSlots;
use timestamps::TsLayout;

mod columns;
mod directory;
mod frames;
mod lines;
mod metadata;
mod shared_columns;
mod templates;
mod timestamps;

pub use columns::Column;
pub use directory::check_directory;
pub use frames::{verify_stored_frames, BlockFile, BlockLog, FrameRef};
pub use metadata::{stored_metadata_names, RowMetadata};
pub use shared_columns::SharedIndexView;
pub use templates::Template;

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
}
