//! Immutable parts: one file per part holding per-stream blocks and an index.
//!
//! Layout: a 16-byte header (`RKFPART\0`, version u32, block format u32), the
//! blocks back to back, (version 2) the shared dictionaries of its columnar
//! blocks, the index, and a 40-byte footer (`index_offset u64, index_len u64,
//! rows u64, index_crc32 u32, version u32, RKFPEND\0`). The index (version 2:
//! after the dictionaries' offset and length) lists streams in ascending id
//! order, each with its blocks (offset, length, crc32 of the block bytes, and
//! the block's [`BlockMeta`]). See `docs/storage-format.md`.

pub mod bloom_groups;
mod damage;
pub mod needle_memo;
pub mod raw_block;
mod resident;
mod writer;

pub use writer::PartWriter;

use crate::block::bloom::Bloom;
use crate::block::layout::BlockHeader;
use crate::block::packed_head::{PackedColumns, PackedHead, ProbeBlock};
use crate::block::prune::{needle_sources_with, NeedleProbe};
use crate::block::reader::{
    check_directory, stored_metadata_names, verify_stored_frames, BlockFile, BlockLog,
};
use crate::block::shared::SharedDicts;
use crate::block::{
    block_may_contain, decode_block_in, BlockMeta, BlockReader, DecodedBlock, HeaderRef,
};
use crate::encoding::Reader;
use crate::fsutil::remove_file;
use crate::StorageError;
use memmap2::Mmap;
use runakefli_model::StreamId;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;

const MAGIC: &[u8; 8] = b"RKFPART\0";
const END_MAGIC: &[u8; 8] = b"RKFPEND\0";

/// Source of [`next_part_serial`].
static NEXT_SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A serial number no other part of this process has or will have
/// ([`Part::serial`]).
pub fn next_part_serial() -> u64 {
    NEXT_SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Part format version written (version 1, without shared dictionaries,
/// is still read).
const VERSION: u32 = 2;
const HEADER_LEN: usize = 16;
const FOOTER_LEN: usize = 40;
/// Smallest encoding of one block entry in the index.
const INDEX_BLOCK_LEN: usize = 8 + 4 + 4 + 4 + 8 + 8 + 8;

/// How the blocks of a part are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockFormat {
    /// Columnar blocks of the block codec (merged parts; flushed parts when so configured).
    Columnar,
    /// Row-wise zstd blocks (freshly flushed parts).
    Raw,
}

impl BlockFormat {
    fn code(self) -> u32 {
        match self {
            BlockFormat::Columnar => 0,
            BlockFormat::Raw => 1,
        }
    }

    fn from_code(c: u32) -> Option<Self> {
        match c {
            0 => Some(BlockFormat::Columnar),
            1 => Some(BlockFormat::Raw),
            _ => None,
        }
    }
}

/// Where a block lies in its part, with its summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockRef {
    /// Byte offset in the part file.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
    /// CRC-32 of the block bytes.
    pub crc: u32,
    /// Rows and time range of the block.
    pub meta: BlockMeta,
    /// Position among the part's blocks.
    pub index: u32,
}

/// What the manifest records about a part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartInfo {
    /// Unique id within the partition (the file name).
    pub id: u64,
    /// Position in push order: the id of the oldest flushed part it contains.
    /// Parts of a partition are ordered by it; merges only combine neighbours.
    pub order: u64,
    /// 0 for a flushed part, 1 + the highest input level for a merged one.
    pub level: u32,
    /// Number of rows.
    pub rows: u64,
    /// File size in bytes.
    pub bytes: u64,
}

/// The most bytes of a block's mapping [`Part::prefetch_block`] hints.
pub const PREFETCH_BLOCK_BYTES: usize = 8 << 10;

/// A block's bloom section has not been checked.
const BLOOM_UNCHECKED: u8 = 0;
/// A block's bloom section matched its checksum.
const BLOOM_SOUND: u8 = 1;
/// A block's bloom section did not match its checksum.
const BLOOM_DAMAGED: u8 = 2;

/// An open, memory-mapped part. Cloned as `Arc<Part>`; when marked obsolete
/// (merged away) its file is deleted once the last handle drops.
pub struct Part {
    info: PartInfo,
    path: PathBuf,
    map: Mmap,
    /// The part file, for reading compressed data frames with `pread`
    /// (see [`BlockReader::read_compressed_from`]).
    file: File,
    /// Each stream's run of [`Part::blocks`] (first, count). Looked up per
    /// stream by every query (5,000 a query over every stream): a fast
    /// hasher, not SipHash (~140 instructions a look-up).
    streams: crate::block::hash::FastMap<StreamId, (usize, usize)>,
    stream_order: Vec<StreamId>,
    blocks: Vec<BlockRef>,
    format: BlockFormat,
    obsolete: AtomicBool,
    /// Decoded headers of the columnar blocks, by block index (decoded when
    /// the part opens; `None` for raw blocks and headers that failed).
    headers: Vec<Option<Arc<BlockHeader<'static>>>>,
    /// Per block: [`BLOOM_UNCHECKED`], [`BLOOM_SOUND`] or [`BLOOM_DAMAGED`]
    /// (checked when the part opens).
    bloom_checked: Vec<AtomicU8>,
    /// The shared dictionaries the columnar blocks refer to (version 2).
    dicts: SharedDicts,
    /// Per block: what its readers share (verified checksums, data frames read).
    block_logs: Vec<BlockLog>,
    /// Bounds the data pages left mapped after queries (see [`resident`]).
    data_pages: resident::DataPages,
    /// Blocks found damaged when read, and where that is reported.
    damage: damage::DamageLog,
    /// Unique for the process's life (see [`Part::serial`]).
    serial: u64,
    /// Blocks' answers to needle probes, kept across queries.
    needle_memo: needle_memo::NeedleMemo,
    /// Per block: the number of columns of the blocks before it (one more
    /// entry at the end: all columns), the place of a block's columns in
    /// [`Part::column_verdicts`].
    column_base: Vec<u32>,
    /// Per block: how many of its first bytes a first read touches through
    /// the mapping (header to the end of the small-payload frame, at most
    /// [`PREFETCH_BLOCK_BYTES`]), for [`Part::prefetch_block`].
    prefetch_len: Vec<u16>,
    /// What each column of each block answered to a line filter's column
    /// test (see `runakefli-storage-query`'s `exec/block.rs`), kept from query to query.
    column_memo: needle_memo::NeedleMemo,
    /// Per block: the metadata names its rows use, read once
    /// ([`Part::metadata_names`]).
    metadata_names: Vec<std::sync::OnceLock<Arc<[String]>>>,
    /// Per block: its kept header's format version (0: none kept). Read
    /// for every block a plan lists: from here one cache line holds 64
    /// blocks' versions, where the headers cost a miss each.
    versions: Vec<u8>,
    /// Per block: what a needle probe reads of its kept header, packed
    /// (`packed: false` where none is kept or it cannot be packed).
    probe_blocks: Vec<ProbeBlock>,
    /// Per column of every block (placed by `column_base`): what a needle
    /// probe reads of its head, interned part-wide. A first probe of 5,000
    /// blocks otherwise misses on each header and its column heads, which
    /// lie apart.
    probe_columns: PackedColumns,
    /// The packed blocks' filters in groups judged together by a needle's
    /// first probe ([`bloom_groups`]).
    bloom_groups: bloom_groups::BloomGroups,
}

impl std::fmt::Debug for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Part")
            .field("info", &self.info)
            .field("path", &self.path)
            .finish()
    }
}

impl Part {
    /// Opens and validates a part file on its own, outside any partition's
    /// manifest (inspection tools and the storage examples): its
    /// [`PartInfo`] is left blank (id 0, level 1).
    pub fn open_file(path: &Path) -> Result<Part, StorageError> {
        let info = PartInfo {
            id: 0,
            order: 0,
            level: 1,
            rows: 0,
            bytes: 0,
        };
        Part::open(path, info)
    }

    /// Opens and validates the part file at `path`.
    pub fn open(path: &Path, info: PartInfo) -> Result<Part, StorageError> {
        let what = path.display().to_string();
        let bad = |d: &str| StorageError::corrupt(what.clone(), d);
        let file = File::open(path).map_err(|e| StorageError::io(path, e))?;
        // SAFETY: part files are immutable once renamed into place; nothing in
        // this process or the store writes to them afterwards.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| StorageError::io(path, e))?;
        let len = map.len();
        if len < HEADER_LEN + FOOTER_LEN || &map[..8] != MAGIC {
            return Err(bad("bad part header"));
        }
        let format =
            BlockFormat::from_code(u32::from_le_bytes(map[12..16].try_into().expect("4 bytes")))
                .ok_or_else(|| bad("unknown block format"))?;
        let footer = &map[len - FOOTER_LEN..];
        if &footer[32..40] != END_MAGIC {
            return Err(bad("bad part footer"));
        }
        let mut r = Reader::new(footer, "part footer");
        let index_offset = r.u64()?;
        let index_len = r.u64()?;
        let rows = r.u64()?;
        let index_crc = r.u32()?;
        let version = r.u32()?;
        if !(1..=VERSION).contains(&version) {
            return Err(bad(&format!("unsupported part version {version}")));
        }
        let index_end = index_offset
            .checked_add(index_len)
            .ok_or_else(|| bad("index bounds"))?;
        if index_offset < HEADER_LEN as u64 || index_end != (len - FOOTER_LEN) as u64 {
            return Err(bad("index bounds"));
        }
        let index = &map[index_offset as usize..index_end as usize];
        if crc32fast::hash(index) != index_crc {
            return Err(bad("index checksum mismatch"));
        }
        let mut r = Reader::new(index, "part index");
        let mut dicts = SharedDicts::default();
        let mut blocks_end = index_offset;
        if version >= 2 {
            let at = r.u64()?;
            let dlen = r.u64()?;
            if dlen > 0 {
                let end = at
                    .checked_add(dlen)
                    .ok_or_else(|| bad("dictionary bounds"))?;
                if at < HEADER_LEN as u64 || end != index_offset {
                    return Err(bad("dictionary bounds"));
                }
                dicts = SharedDicts::read_section(&map[at as usize..end as usize])
                    .map_err(|e| bad(&e.to_string()))?;
                blocks_end = at;
            }
        }
        let n = r.count(9)?;
        let mut streams =
            crate::block::hash::FastMap::with_capacity_and_hasher(n, Default::default());
        let mut stream_order = Vec::with_capacity(n);
        let mut blocks = Vec::new();
        let mut total_rows = 0u64;
        for _ in 0..n {
            let sid = r.u64()?;
            if stream_order.last().is_some_and(|&p| p >= sid) {
                return Err(bad("streams out of order"));
            }
            let nb = r.count(INDEX_BLOCK_LEN)?;
            let start = blocks.len();
            for _ in 0..nb {
                let offset = r.u64()?;
                let blen = r.u32()?;
                let crc = r.u32()?;
                let meta = BlockMeta {
                    rows: r.u32()?,
                    min_ts: r.i64()?,
                    max_ts: r.i64()?,
                    line_bytes: r.u64()?,
                };
                if offset < HEADER_LEN as u64 || offset.saturating_add(blen as u64) > blocks_end {
                    return Err(bad("block bounds"));
                }
                total_rows += meta.rows as u64;
                blocks.push(BlockRef {
                    offset,
                    len: blen,
                    crc,
                    meta,
                    index: blocks.len() as u32,
                });
            }
            streams.insert(sid, (start, nb));
            stream_order.push(sid);
        }
        if total_rows != rows {
            return Err(bad("row count mismatch"));
        }
        let mut info = info;
        info.rows = rows;
        info.bytes = len as u64;
        // Keep the headers of columnar blocks (every query reads them).
        // Reading them faults in the pages around each: keep mapped what
        // most queries read of each columnar block — header, bloom,
        // directory frame, and its metadata and small payloads when stored
        // uncompressed — and drop the rest (column frames, raw blocks, the
        // dictionaries and index already read into memory) from the resident
        // set as the reading goes (it stays in the page cache). A first query
        // after a restart then does not fault a page in for every block it
        // prunes or opens, and opening a large part does not map all of it.
        let mut opening = resident::OpeningRelease::new();
        let mut bloom_checked: Vec<AtomicU8> = Vec::with_capacity(blocks.len());
        let headers: Vec<Option<Arc<BlockHeader<'static>>>> = blocks
            .iter()
            .map(|b| {
                if format != BlockFormat::Columnar {
                    bloom_checked.push(AtomicU8::new(BLOOM_UNCHECKED));
                    return None;
                }
                opening.advance(&map, b.offset as usize);
                let src =
                    map.get(b.offset as usize..(b.offset as usize).saturating_add(b.len as usize))?;
                let h = BlockHeader::decode(src)
                    .ok()
                    .map(|h| Arc::new(h.into_owned()));
                // The bloom section's checksum, over bytes read here
                // anyway: a first query then probes blooms without checking
                // each one (a damaged one is checked again, and reported,
                // by the read that would use it: see `Part::check_bloom`).
                let bloom = match &h {
                    Some(h) if h.check_bloom(src).is_ok() => BLOOM_SOUND,
                    Some(_) => BLOOM_DAMAGED,
                    None => BLOOM_UNCHECKED,
                };
                bloom_checked.push(AtomicU8::new(bloom));
                resident::keep_ranges(b, h.as_ref(), |range| opening.keep(range));
                if let Some(head) = resident::head_range(b, h.as_ref()) {
                    opening.head(head);
                }
                h
            })
            .collect();
        opening.release(&map, len);
        let mut column_base = Vec::with_capacity(headers.len() + 1);
        let mut columns = 0u32;
        for h in &headers {
            column_base.push(columns);
            columns = columns.saturating_add(h.as_ref().map_or(0, |h| h.columns.len() as u32));
        }
        column_base.push(columns);
        let prefetch_len = blocks
            .iter()
            .zip(&headers)
            .map(|(b, h)| {
                let kept_end = h
                    .as_ref()
                    .map_or(0, |h| h.frame_start(crate::block::layout::FRAME_SMALL + 1));
                kept_end.min(b.len as usize).min(PREFETCH_BLOCK_BYTES) as u16
            })
            .collect();
        let blocks_len = blocks.len();
        let block_logs: Vec<BlockLog> = (0..blocks.len()).map(|_| BlockLog::default()).collect();
        // Each version-2 directory (row templates, timestamps) checked here,
        // over pages kept mapped for queries anyway, without allocating: a
        // first query then reads only the rows' templates it needs instead of
        // unpacking and counting every row's (`BlockReader::row_template`).
        // A directory that fails is not noted as checked; the read that uses
        // it reports it. The kept frames stored uncompressed (metadata, small
        // payloads) have their checksums verified here too, for the same
        // reason: their pages are mapped in for queries anyway, and so are
        // the metadata names fields plans check per block
        // (`Part::metadata_names`), read from the verified frame.
        let metadata_names: Vec<std::sync::OnceLock<Arc<[String]>>> =
            (0..blocks_len).map(|_| Default::default()).collect();
        let mut name_lists = NameLists::default();
        for (((b, h), log), names) in blocks
            .iter()
            .zip(&headers)
            .zip(&block_logs)
            .zip(&metadata_names)
        {
            let Some(h) = h.as_ref() else {
                continue;
            };
            let at = b.offset as usize;
            if let Some(src) = map.get(at..at.saturating_add(b.len as usize)) {
                let _ = check_directory(src, h, Some(&dicts), log);
                verify_stored_frames(src, h, &resident::KEPT_FRAMES, log);
                if let Some(list) = stored_metadata_names(src, h, log, |n| name_lists.get(n)) {
                    let _ = names.set(list);
                }
            }
        }
        opening.release_again(&map, len);
        let versions = headers
            .iter()
            .map(|h| h.as_ref().map_or(0, |h| h.version))
            .collect();
        let mut probe_blocks = Vec::with_capacity(headers.len());
        let mut probe_columns = PackedColumns::default();
        for h in &headers {
            let mut block = h
                .as_deref()
                .map_or_else(ProbeBlock::default, ProbeBlock::of);
            if let Some(h) = h {
                block.packed &= probe_columns.pack(h);
            }
            probe_blocks.push(block);
        }
        probe_columns.freeze();
        let bloom_groups = {
            let candidates = blocks.iter().enumerate().filter_map(|(i, b)| {
                let sound = bloom_checked
                    .get(i)
                    .is_some_and(|f| f.load(Ordering::Relaxed) == BLOOM_SOUND);
                let probe = *probe_blocks.get(i)?;
                if !sound || !probe.packed {
                    return None;
                }
                let (from, to) = (*column_base.get(i)?, *column_base.get(i + 1)?);
                let head = probe_columns.head(probe, from as usize, to as usize)?;
                let at = b.offset as usize;
                let src = map.get(at..at.saturating_add(b.len as usize))?;
                Some(bloom_groups::Candidate {
                    block: i as u32,
                    head,
                    filter: probe.bloom_bytes(src),
                })
            });
            bloom_groups::BloomGroups::build(blocks.len(), candidates)
        };
        // Grouped blocks' filters are read from their copies: the whole
        // pages of their bloom sections leave the mapping (and the kept
        // pages the resident budgets are measured from).
        let mut dropped_blooms = Vec::new();
        for (i, b) in blocks.iter().enumerate() {
            let Some(probe) = probe_blocks
                .get(i)
                .filter(|_| bloom_groups.is_grouped(i as u32))
            else {
                continue;
            };
            let at = b.offset as usize;
            let from = (at + probe.bloom_start as usize).next_multiple_of(resident::PAGE);
            let end = (at + probe.bloom_end as usize) / resident::PAGE * resident::PAGE;
            if end > from {
                dropped_blooms.push((from, end));
            }
        }
        resident::release_many(&map, &dropped_blooms);
        let dropped_bytes: usize = dropped_blooms.iter().map(|(a, b)| b - a).sum();
        Ok(Part {
            info,
            path: path.to_path_buf(),
            map,
            file,
            streams,
            stream_order,
            blocks,
            format,
            obsolete: AtomicBool::new(false),
            headers,
            block_logs,
            data_pages: resident::DataPages::new(opening.heads(), dropped_bytes),
            bloom_checked,
            dicts,
            damage: damage::DamageLog::new(blocks_len),
            serial: next_part_serial(),
            needle_memo: Default::default(),
            column_base,
            prefetch_len,
            column_memo: Default::default(),
            metadata_names,
            versions,
            probe_blocks,
            probe_columns,
            bloom_groups,
        })
    }

    /// Reports damage found when reading this part's blocks to `quarantine`
    /// (see [`damage`]); without it, such reads fail instead of skipping.
    pub fn watch_damage(&self, quarantine: &Arc<crate::quarantine::Quarantine>) {
        self.damage.attach(quarantine);
    }

    /// Whether block `b` was found damaged when read and reported.
    pub fn block_damaged(&self, b: &BlockRef) -> bool {
        self.damage.is_damaged(b.index)
    }

    /// Reports that reading block `b` failed with `err` (see [`damage`]):
    /// `Ok` when the caller may go on without the block, the error otherwise.
    pub fn report_damaged_block(
        &self,
        b: &BlockRef,
        err: StorageError,
    ) -> Result<(), StorageError> {
        self.damage.report(&self.path, b.index, b.offset, err)
    }

    /// `Ok(empty)` for a block already reported damaged, or when `res` is
    /// damage that could be reported; `res` otherwise.
    fn skip_damaged(
        &self,
        b: &BlockRef,
        res: Result<DecodedBlock, StorageError>,
    ) -> Result<DecodedBlock, StorageError> {
        match res {
            Ok(d) => Ok(d),
            Err(e) => {
                self.damage.report(&self.path, b.index, b.offset, e)?;
                Ok(DecodedBlock::default())
            }
        }
    }

    /// The shared dictionaries of the part's columnar blocks.
    pub fn dicts(&self) -> &SharedDicts {
        &self.dicts
    }

    /// A reader of columnar block `b`, with its kept header and the part's
    /// shared dictionaries.
    pub fn reader(&self, b: &BlockRef) -> Result<BlockReader<'_>, StorageError> {
        self.reader_with(b, self.header(b)?)
    }

    /// Unique for the process's life ([`next_part_serial`]): readers key
    /// what they keep of this part's blocks (decoded columns, rebuilt rows)
    /// by it, so nothing kept for a merged-away part is served for another.
    pub fn serial(&self) -> u64 {
        self.serial
    }

    /// What this part's blocks answered to `needle`'s bloom probe so far
    /// (see [`needle_memo`]).
    pub fn needle_verdicts(&self, needle: &[u8]) -> needle_memo::Verdicts {
        self.needle_memo.verdicts(needle, self.blocks.len())
    }

    /// Most column tests whose verdicts a part keeps (a verdict is a byte
    /// per column of every block: 16 tests of a part of 5,000 blocks of 35
    /// columns keep 2.8 MB).
    pub const MAX_COLUMN_TESTS: usize = 16;

    /// The verdicts of a column test known by `key`, one per column of
    /// every block (see [`Part::column_slot`]).
    pub fn column_verdicts(&self, key: &[u8]) -> needle_memo::Verdicts {
        let all = self.column_base.last().copied().unwrap_or(0) as usize;
        self.column_memo
            .verdicts_keeping(key, all, Self::MAX_COLUMN_TESTS)
    }

    /// The metadata names some row of block `block` uses (`r` reads it),
    /// read from the block once and kept: plans grouped by labels ask for
    /// every block they read.
    pub fn metadata_names(
        &self,
        block: u32,
        r: &BlockReader<'_>,
    ) -> Result<Arc<[String]>, StorageError> {
        let Some(cell) = self.metadata_names.get(block as usize) else {
            return Ok(r.metadata_names()?.into());
        };
        if let Some(names) = cell.get() {
            return Ok(names.clone());
        }
        let names = r.with_metadata_names(interned_names)?;
        Ok(cell.get_or_init(|| names).clone())
    }

    /// What a needle probe reads of block `block`'s header, packed, when
    /// the block can be judged from it ([`ProbeBlock::packed`]).
    pub fn packed_head(&self, block: u32) -> Option<PackedHead<'_>> {
        let b = block as usize;
        let probe = *self.probe_blocks.get(b)?;
        if !probe.packed {
            return None;
        }
        let (from, to) = (*self.column_base.get(b)?, *self.column_base.get(b + 1)?);
        self.probe_columns.head(probe, from as usize, to as usize)
    }

    /// Judges block `block`'s group for `probe` and records every member's
    /// verdict in `verdicts` (see [`bloom_groups`]); the block's answer, or
    /// `None` when it is in no group (then it is judged on its own).
    pub fn judge_needle_group(
        &self,
        block: u32,
        probe: &NeedleProbe,
        verdicts: &needle_memo::Verdicts,
    ) -> Option<bool> {
        self.bloom_groups
            .judge(block, probe, self.probe_columns.prefixes(), verdicts)
    }

    /// Block `block`'s filter (`header` its kept header, `src` its bytes):
    /// read from its copy when the block is in a filter group (the pages
    /// of the bytes were dropped from the mapping then), else the bytes.
    pub fn bloom_view<'s>(
        &'s self,
        block: u32,
        header: &BlockHeader<'_>,
        src: &'s [u8],
    ) -> Bloom<'s> {
        match self.bloom_groups.member(block) {
            Some((group, j)) => group.bloom_of(j),
            None if header.version >= 2 => Bloom::new(header.bloom_bytes(src)),
            None => Bloom::new(&[]),
        }
    }

    /// The part's filter groups ([`bloom_groups`]).
    pub fn bloom_groups(&self) -> &bloom_groups::BloomGroups {
        &self.bloom_groups
    }

    /// The interned column records behind [`Part::packed_head`].
    pub fn packed_columns(&self) -> &PackedColumns {
        &self.probe_columns
    }

    /// The place of column `c` of block `block` in [`Part::column_verdicts`].
    pub fn column_slot(&self, block: u32, c: usize) -> Option<usize> {
        let b = block as usize;
        let (from, to) = (*self.column_base.get(b)?, *self.column_base.get(b + 1)?);
        let slot = from as usize + c;
        (slot < to as usize).then_some(slot)
    }

    /// Like [`Part::reader`], with the block's header already at hand.
    pub fn reader_with<'p>(
        &'p self,
        b: &BlockRef,
        header: HeaderRef<'p>,
    ) -> Result<BlockReader<'p>, StorageError> {
        self.reader_opened();
        Ok(BlockReader::with_context(
            self.block_slice(b)?,
            header,
            Some(&self.dicts),
            self.block_logs.get(b.index as usize),
        )?
        .read_compressed_from(self.block_file(b)))
    }

    /// Like [`Part::reader_with`], given the block's row templates and row
    /// timestamps as an earlier reader decoded them (see
    /// [`BlockReader::with_directory`]).
    pub fn reader_with_directory<'p>(
        &'p self,
        b: &BlockRef,
        header: HeaderRef<'p>,
        row_tpl: Arc<[u32]>,
        ts: Arc<[i64]>,
    ) -> Result<BlockReader<'p>, StorageError> {
        self.reader_opened();
        Ok(BlockReader::with_directory(
            self.block_slice(b)?,
            header,
            Some(&self.dicts),
            self.block_logs.get(b.index as usize),
            row_tpl,
            ts,
        )?
        .read_compressed_from(self.block_file(b)))
    }

    /// Block `b`'s place in the part file.
    fn block_file(&self, b: &BlockRef) -> BlockFile<'_> {
        BlockFile {
            file: &self.file,
            offset: b.offset,
        }
    }

    /// Drops the data pages queries left mapped once the data frames read
    /// pass [`crate::config::PART_MAPPED_DATA_MAX_BYTES`] (see [`resident`]).
    fn reader_opened(&self) {
        self.data_pages.reader_opened(
            &self.map,
            &self.blocks,
            &self.headers,
            &self.block_logs,
            crate::config::PART_MAPPED_DATA_MAX_BYTES,
        );
    }

    /// Drops the pages of every data frame read since the last drop from the
    /// process's mapping (they stay in the page cache); returns how many
    /// blocks' pages it dropped.
    pub fn release_read_data(&self) -> usize {
        resident::release_read_data(&self.map, &self.blocks, &self.headers, &self.block_logs)
    }

    /// The decoded header of a columnar block, kept since the part opened
    /// (decoded now, and checked, when it was not).
    pub fn header(&self, b: &BlockRef) -> Result<HeaderRef<'_>, StorageError> {
        if let Some(Some(h)) = self.headers.get(b.index as usize) {
            return Ok(HeaderRef::Kept(h));
        }
        Ok(HeaderRef::Owned(BlockHeader::decode(self.block_slice(b)?)?))
    }

    /// Whether no reader has read block `b`'s directory since the part
    /// opened: its first read is ahead, which touches memory no query has
    /// touched (see [`Part::prefetch_block`]).
    fn unread_yet(&self, b: &BlockRef) -> bool {
        self.block_logs
            .get(b.index as usize)
            .is_some_and(|l| !l.directory_read())
    }

    /// The first of three stages of fetching block `b` ahead (see
    /// [`Part::prefetch_block`]), three units ahead of its read: hints the
    /// part's entries for it (its header's place and its log).
    pub fn prefetch_entries(&self, b: &BlockRef) {
        let i = b.index as usize;
        if let (Some(h), Some(l), Some(n)) = (
            self.headers.get(i),
            self.block_logs.get(i),
            self.prefetch_len.get(i),
        ) {
            crate::prefetch::value(h);
            crate::prefetch::value(l);
            crate::prefetch::value(n);
        }
    }

    /// The second stage (see [`Part::prefetch_block`]), two units ahead:
    /// hints block `b`'s decoded header, when its first read is ahead.
    pub fn prefetch_header(&self, b: &BlockRef) {
        if let (Some(Some(h)), true) = (self.headers.get(b.index as usize), self.unread_yet(b)) {
            crate::prefetch::value::<BlockHeader<'_>>(h);
        }
    }

    /// The last stage, a unit ahead: hints what the first read of block `b`
    /// touches, until a reader has read its directory once: its decoded
    /// header's frame and template lists and, from the mapping, its bytes
    /// from its header to the end of its small-payload frame (header, bloom,
    /// directory, templates, metadata, small payloads), at most
    /// [`PREFETCH_BLOCK_BYTES`]. Each stage
    /// reads only what the stage before hinted, so no stage waits for
    /// memory. Later queries mostly find the block's decoded forms cached
    /// and read none of those bytes: hinting them every time would fetch
    /// memory no one reads.
    pub fn prefetch_block(&self, b: &BlockRef) {
        let (Some(Some(h)), true) = (self.headers.get(b.index as usize), self.unread_yet(b)) else {
            return;
        };
        crate::prefetch::slice(&h.frames, 128);
        crate::prefetch::slice(&h.templates, 256);
        let start = b.offset as usize;
        let len = self
            .prefetch_len
            .get(b.index as usize)
            .copied()
            .unwrap_or(0);
        if let Some(bytes) = self.map.get(start..start.saturating_add(len as usize)) {
            crate::prefetch::bytes(bytes, PREFETCH_BLOCK_BYTES);
        }
    }

    /// The format version of a columnar block, from its kept header.
    pub fn block_version(&self, b: &BlockRef) -> Option<u8> {
        self.versions
            .get(b.index as usize)
            .copied()
            .filter(|&v| v != 0)
    }

    /// Checks a block's bloom section once (later calls, and every call
    /// after the part's opening checked it sound, answer from memory; a
    /// damaged one is checked again, so that each read reports it).
    pub fn check_bloom(&self, b: &BlockRef, header: &BlockHeader<'_>) -> Result<(), StorageError> {
        let Some(flag) = self.bloom_checked.get(b.index as usize) else {
            return header.check_bloom(self.block_slice(b)?);
        };
        match flag.load(Ordering::Relaxed) {
            BLOOM_SOUND => Ok(()),
            _ => {
                let r = header.check_bloom(self.block_slice(b)?);
                let now = if r.is_ok() {
                    BLOOM_SOUND
                } else {
                    BLOOM_DAMAGED
                };
                flag.store(now, Ordering::Relaxed);
                r
            }
        }
    }

    /// The part's manifest entry.
    pub fn info(&self) -> &PartInfo {
        &self.info
    }

    /// The part file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Streams in the part, ascending.
    pub fn stream_ids(&self) -> &[StreamId] {
        &self.stream_order
    }

    /// Every block of the part: stream by stream (ascending), each stream's
    /// in time order.
    pub fn all_blocks(&self) -> impl Iterator<Item = &BlockRef> + '_ {
        self.stream_order
            .iter()
            .flat_map(|&sid| self.stream_blocks(sid))
    }

    /// Blocks of a stream, in time order (empty when absent).
    pub fn stream_blocks(&self, sid: StreamId) -> &[BlockRef] {
        match self.streams.get(&sid) {
            Some(&(start, n)) => &self.blocks[start..start + n],
            None => &[],
        }
    }

    /// The bytes of a block, unchecked: for columnar blocks, whose header and
    /// body carry checksums of their own that the block reader verifies.
    fn block_slice(&self, b: &BlockRef) -> Result<&[u8], StorageError> {
        self.map
            .get(b.offset as usize..(b.offset as usize).saturating_add(b.len as usize))
            .ok_or_else(|| {
                StorageError::corrupt(
                    self.path.display().to_string(),
                    format!("block at {} out of range", b.offset),
                )
            })
    }

    /// The bytes of a columnar block without checking the part index's
    /// checksum of them: columnar blocks carry checksums of their own, which
    /// the block reader verifies for exactly what it reads.
    pub fn block_self_checked(&self, b: &BlockRef) -> Result<&[u8], StorageError> {
        self.block_slice(b)
    }

    /// The bytes of a block, checksum verified.
    pub fn block_bytes(&self, b: &BlockRef) -> Result<&[u8], StorageError> {
        let bytes = &self.map[b.offset as usize..b.offset as usize + b.len as usize];
        if crc32fast::hash(bytes) != b.crc {
            return Err(StorageError::corrupt(
                self.path.display().to_string(),
                format!("block at {} checksum mismatch", b.offset),
            ));
        }
        Ok(bytes)
    }

    /// How the part's blocks are encoded.
    pub fn format(&self) -> BlockFormat {
        self.format
    }

    /// Decodes a block (none of its rows when it was found damaged and
    /// reported, see [`damage`]).
    pub fn decode(&self, b: &BlockRef) -> Result<DecodedBlock, StorageError> {
        if self.damage.is_damaged(b.index) {
            return Ok(DecodedBlock::default());
        }
        let res = self.decode_checked(b);
        self.skip_damaged(b, res)
    }

    fn decode_checked(&self, b: &BlockRef) -> Result<DecodedBlock, StorageError> {
        let bytes = self.block_bytes(b)?;
        match self.format {
            BlockFormat::Columnar => decode_block_in(bytes, Some(&self.dicts)),
            BlockFormat::Raw => raw_block::decode_raw_block(bytes),
        }
    }

    /// Decodes the rows of a block with timestamps in `[lo, hi]` whose lines
    /// may contain every one of `needles`. Rows whose lines certainly lack a
    /// needle are left out; columnar blocks decide that from their columns and
    /// rebuild only the remaining lines (see `block::prefilter`), raw blocks
    /// test each line. Kept rows may still lack a needle (the caller filters).
    /// A block found damaged and reported yields no rows (see [`damage`]).
    pub fn decode_filtered(
        &self,
        b: &BlockRef,
        lo: i64,
        hi: i64,
        needles: &[String],
    ) -> Result<DecodedBlock, StorageError> {
        if self.damage.is_damaged(b.index) {
            return Ok(DecodedBlock::default());
        }
        let res = self.decode_filtered_checked(b, lo, hi, needles);
        self.skip_damaged(b, res)
    }

    fn decode_filtered_checked(
        &self,
        b: &BlockRef,
        lo: i64,
        hi: i64,
        needles: &[String],
    ) -> Result<DecodedBlock, StorageError> {
        let mut out = DecodedBlock::default();
        match self.format {
            BlockFormat::Columnar => {
                let r = self.reader(b)?;
                let mut keep: Vec<bool> =
                    r.timestamps().iter().map(|&t| t >= lo && t <= hi).collect();
                if !needles.is_empty() {
                    let ns: Vec<&[u8]> = needles.iter().map(|n| n.as_bytes()).collect();
                    r.retain_rows_containing(&ns, &mut keep)?;
                }
                if !keep.iter().any(|&k| k) {
                    return Ok(out);
                }
                let lines = r.lines_where(&keep)?;
                for ((line, &ts), md) in lines
                    .into_iter()
                    .zip(r.timestamps())
                    .zip(r.metadata()?.iter())
                {
                    if let Some(line) = line {
                        out.ts.push(ts);
                        out.lines.push(line);
                        out.metadata.push(md.to_vec());
                    }
                }
            }
            BlockFormat::Raw => {
                let d = raw_block::decode_raw_block(self.block_bytes(b)?)?;
                let finders: Vec<memchr::memmem::Finder<'_>> =
                    needles.iter().map(memchr::memmem::Finder::new).collect();
                for ((ts, line), md) in d.ts.into_iter().zip(d.lines).zip(d.metadata) {
                    if ts >= lo
                        && ts <= hi
                        && finders.iter().all(|f| f.find(line.as_bytes()).is_some())
                    {
                        out.ts.push(ts);
                        out.lines.push(line);
                        out.metadata.push(md);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Whether the block may hold a line containing every one of `substrings`
    /// (always true for raw blocks, which carry no token index). Reads only
    /// the block header, which carries its own checksum.
    pub fn may_contain(&self, b: &BlockRef, substrings: &[String]) -> Result<bool, StorageError> {
        Ok(match self.format {
            BlockFormat::Columnar => match (
                self.bloom_groups.member(b.index),
                self.headers.get(b.index as usize).and_then(Option::as_ref),
            ) {
                // A grouped block's filter is read from its copy.
                (Some((group, j)), Some(h)) => substrings
                    .iter()
                    .all(|s| needle_sources_with(h, group.bloom_of(j), s.as_bytes()).is_some()),
                _ => block_may_contain(self.block_slice(b)?, substrings),
            },
            BlockFormat::Raw => true,
        })
    }

    /// Drops this process's mapping of the whole pages in `[from, end of sid's
    /// last block)` (they stay in the page cache) and returns the new `from`.
    /// Merges read inputs front to back, stream by stream, and call this after
    /// each stream so that reading whole parts does not grow the resident set.
    pub fn release_through_stream(&self, from: usize, sid: StreamId) -> usize {
        let Some(last) = self.stream_blocks(sid).last() else {
            return from;
        };
        let page = 4096usize;
        let end = ((last.offset as usize + last.len as usize) / page) * page;
        if end > from && end <= self.map.len() {
            resident::release_pages(&self.map, from, end);
            return end;
        }
        from
    }

    /// Marks the part as merged away: its file is deleted when the last handle drops.
    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::Release);
    }
}

impl Drop for Part {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::Acquire) {
            if let Err(e) = remove_file(&self.path) {
                tracing::warn!(error = %e, "could not delete merged-away part");
            }
        }
    }
}

/// `names` as a shared list, the one this thread made last when it has the
/// same names (most blocks of a part carry the same metadata names: one list
/// kept for them all, no strings allocated per block).
/// The distinct lists of metadata names a part's blocks use, each kept
/// once (a part's blocks mostly share a few).
#[derive(Default)]
struct NameLists(Vec<Arc<[String]>>);

impl NameLists {
    /// Lists kept at most; past them, lists are made per block.
    const MAX: usize = 64;

    /// The kept list equal to `names`, kept now if new.
    fn get(&mut self, names: &[&str]) -> Arc<[String]> {
        let same =
            |k: &Arc<[String]>| k.len() == names.len() && k.iter().zip(names).all(|(k, n)| k == n);
        if let Some(kept) = self.0.iter().find(|k| same(k)) {
            return kept.clone();
        }
        let made: Arc<[String]> = names.iter().map(|n| (*n).to_string()).collect();
        if self.0.len() < Self::MAX {
            self.0.push(made.clone());
        }
        made
    }
}

fn interned_names(names: &[&str]) -> Arc<[String]> {
    thread_local! {
        static LAST: std::cell::RefCell<Option<Arc<[String]>>> = const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if let Some(kept) = last.as_ref() {
            if kept.len() == names.len() && kept.iter().zip(names).all(|(k, n)| k == n) {
                return kept.clone();
            }
        }
        let made: Arc<[String]> = names.iter().map(|n| (*n).to_string()).collect();
        *last = Some(made.clone());
        made
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use runakefli_model::Entry;

    /// Writes part `id` in `dir`: stream 1 with rows `0..rows`, row `i`'s
    /// line `line(i)`; its path and what the manifest records of it.
    fn one_stream_part(
        dir: &Path,
        id: u64,
        rows: i64,
        line: impl Fn(i64) -> String,
    ) -> (PathBuf, PartInfo) {
        let mut w = PartWriter::create(dir, id, BlockFormat::Columnar, 1).unwrap();
        w.write_stream(1, (0..rows).map(|i| Ok(entry(i, &line(i)))))
            .unwrap();
        (
            dir.join(crate::names::part_file(id)),
            w.finish(id, 0).unwrap(),
        )
    }

    fn entry(ts: i64, line: &str) -> Entry {
        Entry {
            ts,
            line: line.into(),
            metadata: vec![],
        }
    }

    #[test]
    fn grouped_filters_judge_each_block_as_its_own_filter() {
        use crate::block::testgen::Workload;
        let d = tempfile::tempdir().unwrap();
        let mut w = PartWriter::create(d.path(), 5, BlockFormat::Columnar, 1).unwrap();
        let mut gen = Workload::new(44);
        let mut needles: Vec<String> = [
            "error",
            "timeout",
            "k3x9q2m",
            "zzzz-not-there",
            "0123456789abcdef",
            "user_id",
            "\"level\":\"info\"",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for s in 1..=160u64 {
            let rows: Vec<Entry> = (0..40).map(|i| entry(i, &gen.line().1)).collect();
            // Needles cut from the lines: present in a block or a few.
            if s % 9 == 0 {
                let l = &rows[s as usize % 40].line;
                for (a, b) in [(5, 40), (60, 70), (100, 133), (200, 207), (300, 312)] {
                    if let Some(t) = l.get(a..b.min(l.len())) {
                        needles.push(t.to_string());
                    }
                }
            }
            w.write_stream(s, rows.into_iter().map(Ok)).unwrap();
        }
        // Wide lines: blocks of more columns than a probe keys beforehand.
        let wide = |s: u64, i: i64| {
            let fields: Vec<String> = (0..80)
                .map(|f| format!("\"f{f}\":\"w{}q{f}z{}\"", s * 7 + f, i % 5))
                .collect();
            format!("{{{}}}", fields.join(","))
        };
        for s in 161..=200u64 {
            let rows: Vec<Entry> = (0..40).map(|i| entry(i, &wide(s, i))).collect();
            w.write_stream(s, rows.into_iter().map(Ok)).unwrap();
        }
        needles.extend(
            [
                "w1195q75z3",
                "q77z1",
                "w1200q70",
                "w9999q75z3",
                "\"f72\":\"w1187",
            ]
            .map(String::from),
        );
        let info = w.finish(5, 0).unwrap();
        let p = Part::open(&d.path().join(crate::names::part_file(5)), info).unwrap();
        let groups = p.bloom_groups();
        assert!(
            groups.len() >= 4 && groups.grouped_blocks() >= 150,
            "{} groups of {} blocks",
            groups.len(),
            groups.grouped_blocks()
        );
        let mut seen = [0usize; 2];
        for needle in &needles {
            let probe = NeedleProbe::new(needle.as_bytes());
            let answers = groups.answers(&probe, p.packed_columns().prefixes());
            assert_eq!(answers.len(), groups.grouped_blocks());
            for (b, got) in answers {
                let head = p.packed_head(b).unwrap();
                let src = p.block_slice(&p.blocks[b as usize]).unwrap();
                let want = probe.may_match_packed(head, head.block.bloom_bytes(src));
                assert_eq!(got, want, "needle {needle:?}, block {b}");
                seen[usize::from(want)] += 1;
            }
            // Judging one member records the verdicts of its whole group.
            let verdicts = p.needle_verdicts(needle.as_bytes());
            let first = (0..p.blocks.len() as u32)
                .find(|&b| groups.is_grouped(b))
                .unwrap();
            let ok = p.judge_needle_group(first, &probe, &verdicts).unwrap();
            assert_eq!(
                needle_memo::get(&verdicts, first as usize),
                if ok {
                    needle_memo::MAYBE
                } else {
                    needle_memo::NO
                }
            );
            let known = (0..p.blocks.len())
                .filter(|&b| needle_memo::get(&verdicts, b) != needle_memo::UNKNOWN)
                .count();
            assert!(known >= 2, "the group's members were recorded: {known}");
        }
        assert!(
            seen[0] > 100 && seen[1] > 100,
            "both answers seen: {seen:?}"
        );
    }

    #[test]
    fn grouped_filters_leave_the_mapping_and_are_read_from_their_copies() {
        use crate::block::prune::needle_sources_in;
        use crate::block::testgen::Workload;
        let d = tempfile::tempdir().unwrap();
        let mut w = PartWriter::create(d.path(), 9, BlockFormat::Columnar, 1).unwrap();
        let mut gen = Workload::new(46);
        let mut lines = Vec::new();
        for s in 1..=8u64 {
            let rows: Vec<Entry> = (0..500).map(|i| entry(i, &gen.line().1)).collect();
            lines.push(rows[123].line.clone());
            w.write_stream(s, rows.into_iter().map(Ok)).unwrap();
        }
        let info = w.finish(9, 0).unwrap();
        let p = Part::open(&d.path().join(crate::names::part_file(9)), info).unwrap();
        let dropped: Vec<(usize, usize)> = (0..p.blocks.len())
            .filter(|&i| p.bloom_groups().is_grouped(i as u32))
            .filter_map(|i| {
                let (b, probe) = (&p.blocks[i], p.probe_blocks[i]);
                let from = (b.offset as usize + probe.bloom_start as usize)
                    .next_multiple_of(resident::PAGE);
                let end = (b.offset as usize + probe.bloom_end as usize) / resident::PAGE
                    * resident::PAGE;
                (end > from).then_some((from, end))
            })
            .collect();
        assert!(
            dropped.len() >= 4,
            "filters of whole pages grouped: {dropped:?}"
        );
        // The opening dropped them: dropping them again changes nothing,
        // while once read (mapped again) they do leave the mapping.
        let opened = resident::mapped_rss(&p.map);
        resident::release_many(&p.map, &dropped);
        assert_eq!(
            resident::mapped_rss(&p.map),
            opened,
            "already out of the mapping"
        );
        let sum: u64 = dropped
            .iter()
            .map(|&(from, _)| u64::from(p.map[from]))
            .sum();
        let touched = resident::mapped_rss(&p.map);
        assert!(
            touched > opened,
            "read back: {opened} -> {touched} (sum {sum})"
        );
        resident::release_many(&p.map, &dropped);
        assert!(resident::mapped_rss(&p.map) < touched);
        // Readers given the copy answer as the bytes do.
        for (i, line) in lines.iter().enumerate() {
            let b = &p.stream_blocks(i as u64 + 1)[0];
            let h = p.header(b).unwrap();
            let src = p.block_slice(b).unwrap();
            let view = p.bloom_view(b.index, &h, src);
            let mut needles: Vec<&str> = vec!["zzzz-not-there", "k3x9q2m"];
            needles.extend([&line[10..30], &line[50..58], &line[100..140]]);
            for needle in needles {
                let want = needle_sources_in(&h, h.bloom_bytes(src), needle.as_bytes());
                let got = needle_sources_with(&h, view, needle.as_bytes());
                assert_eq!(got, want, "needle {needle:?}");
                let all = [needle.to_string()];
                assert_eq!(p.may_contain(b, &all).unwrap(), want.is_some());
            }
        }
    }

    #[test]
    fn filter_groups_stay_within_the_budget() {
        use crate::block::testgen::Workload;
        let d = tempfile::tempdir().unwrap();
        let mut w = PartWriter::create(d.path(), 6, BlockFormat::Columnar, 1).unwrap();
        let mut gen = Workload::new(45);
        for s in 1..=40u64 {
            let rows: Vec<Entry> = (0..40).map(|i| entry(i, &gen.line().1)).collect();
            w.write_stream(s, rows.into_iter().map(Ok)).unwrap();
        }
        let info = w.finish(6, 0).unwrap();
        let p = Part::open(&d.path().join(crate::names::part_file(6)), info).unwrap();
        assert!(!p.bloom_groups().is_empty());
        let candidates = || {
            (0..p.blocks.len() as u32).filter_map(|b| {
                let head = p.packed_head(b)?;
                let src = p.block_slice(&p.blocks[b as usize]).ok()?;
                Some(bloom_groups::Candidate {
                    block: b,
                    head,
                    filter: head.block.bloom_bytes(src),
                })
            })
        };
        let all = bloom_groups::BloomGroups::build_within(p.blocks.len(), candidates(), usize::MAX);
        assert!(all.heap_bytes() > 0 && all.grouped_blocks() >= 30);
        assert!(bloom_groups::held_bytes() >= all.heap_bytes());
        // No budget, no group: those blocks are judged one by one.
        let none = bloom_groups::BloomGroups::build_within(p.blocks.len(), candidates(), 0);
        assert!(none.is_empty() && none.heap_bytes() == 0);
        assert!(!none.is_grouped(0));
    }

    #[test]
    fn write_then_read() {
        let d = tempfile::tempdir().unwrap();
        let mut w = PartWriter::create(d.path(), 7, BlockFormat::Columnar, 1).unwrap();
        w.write_stream(3, (0..10).map(|i| Ok(entry(i, "a"))))
            .unwrap();
        w.write_stream(9, vec![Ok(entry(5, "b"))].into_iter())
            .unwrap();
        assert!(w
            .write_stream(4, std::iter::empty::<Result<Entry, StorageError>>())
            .is_err());
        let info = w.finish(7, 0).unwrap();
        assert_eq!(info.rows, 11);
        let p = Part::open(&d.path().join(crate::names::part_file(7)), info.clone()).unwrap();
        assert_eq!(p.stream_ids(), &[3, 9]);
        let b = &p.stream_blocks(3)[0];
        assert_eq!((b.meta.rows, b.meta.min_ts, b.meta.max_ts), (10, 0, 9));
        let dec = p.decode(b).unwrap();
        assert_eq!(dec.ts, (0..10).collect::<Vec<_>>());
        assert!(p.stream_blocks(4).is_empty());
    }

    #[test]
    fn dropping_read_data_pages_leaves_reads_unchanged() {
        let d = tempfile::tempdir().unwrap();
        let mut w = PartWriter::create(d.path(), 7, BlockFormat::Columnar, 1).unwrap();
        // Values that do not compress away: the data frames span pages.
        let line = |i: i64| {
            let mut h = (i as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
            h = (h ^ (h >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            format!(
                r#"{{"n":{i},"id":"{h:016x}{:016x}","msg":"request {}"}}"#,
                h.rotate_left(17),
                h % 977
            )
        };
        w.write_stream(3, (0..6000).map(|i| Ok(entry(i, &line(i)))))
            .unwrap();
        let info = w.finish(7, 0).unwrap();
        let p = Part::open(&d.path().join(crate::names::part_file(7)), info).unwrap();
        let b = p.stream_blocks(3)[0].clone();
        assert!(b.len as usize > 8 * resident::PAGE, "the block spans pages");
        // Opening reads headers only: nothing to drop.
        assert_eq!(p.release_read_data(), 0);
        let first = p.decode_filtered(&b, i64::MIN, i64::MAX, &[]).unwrap();
        assert_eq!(first.lines[17], line(17));
        assert_eq!(
            p.release_read_data(),
            1,
            "the block's data frames were read"
        );
        assert_eq!(p.release_read_data(), 0, "and dropped once");
        // Read again from the page cache after the drop: the same rows.
        let again = p.decode_filtered(&b, i64::MIN, i64::MAX, &[]).unwrap();
        assert_eq!(again.lines, first.lines);
        assert_eq!(again.ts, first.ts);
        assert_eq!(p.release_read_data(), 1);
    }

    #[test]
    fn corruption_is_an_error_not_a_panic() {
        let d = tempfile::tempdir().unwrap();
        let mut w = PartWriter::create(d.path(), 1, BlockFormat::Raw, 1).unwrap();
        w.write_stream(1, (0..100).map(|i| Ok(entry(i, "line"))))
            .unwrap();
        let info = w.finish(1, 0).unwrap();
        let path = d.path().join(crate::names::part_file(1));
        let good = std::fs::read(&path).unwrap();
        for i in (0..good.len()).step_by(3) {
            let mut bad = good.clone();
            bad[i] ^= 0x5a;
            std::fs::write(&path, &bad).unwrap();
            if let Ok(p) = Part::open(&path, info.clone()) {
                for &sid in p.stream_ids() {
                    for b in p.stream_blocks(sid) {
                        let _ = p.decode(b);
                        let _ = p.may_contain(b, &["x".to_string()]);
                    }
                }
            }
        }
        std::fs::write(&path, &good[..good.len() - 1]).unwrap();
        assert!(Part::open(&path, info).is_err());
    }

    #[test]
    fn blooms_are_checked_when_the_part_opens_and_damage_is_reported_on_each_read() {
        let d = tempfile::tempdir().unwrap();
        let (path, info) = one_stream_part(d.path(), 3, 200, |i| {
            format!(r#"{{"user":"u{i:05}","n":{i}}}"#)
        });
        let p = Part::open(&path, info.clone()).unwrap();
        let b = p.stream_blocks(1)[0].clone();
        let h = p.headers[b.index as usize]
            .clone()
            .expect("columnar header");
        assert!(
            h.bloom_crc.is_some() && !h.bloom.is_empty(),
            "the block has a bloom"
        );
        assert_eq!(
            p.bloom_checked[b.index as usize].load(Ordering::Relaxed),
            BLOOM_SOUND
        );
        assert!(p.check_bloom(&b, &h).is_ok());
        let at = b.offset as usize + h.bloom.start + 3;
        drop(p);

        let mut bytes = std::fs::read(&path).unwrap();
        bytes[at] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let p = Part::open(&path, info).unwrap();
        assert_eq!(
            p.bloom_checked[b.index as usize].load(Ordering::Relaxed),
            BLOOM_DAMAGED
        );
        let h = p.headers[b.index as usize].clone().expect("header intact");
        for _ in 0..2 {
            let e = p.check_bloom(&b, &h).unwrap_err();
            assert!(e.to_string().contains("checksum mismatch"), "{e}");
        }
    }

    #[test]
    fn an_opened_parts_blocks_read_single_rows_templates_and_damage_is_reported_on_read() {
        let d = tempfile::tempdir().unwrap();
        let line = |i: i64| match i % 2 {
            0 => format!(r#"{{"user":"u{i:05}","n":{i}}}"#),
            _ => format!("plain text line {i}"),
        };
        let (path, info) = one_stream_part(d.path(), 4, 300, line);
        let p = Part::open(&path, info.clone()).unwrap();
        let b = p.stream_blocks(1)[0].clone();
        let r = p.reader(&b).unwrap();
        assert!(
            r.reads_templates_by_row(),
            "the opening checked the directory: single rows' templates are read"
        );
        let lines = r.lines().unwrap();
        assert_eq!(lines.len(), 300);
        assert_eq!(lines[7], line(7));
        assert_eq!(lines[8], line(8));
        let at = b.offset as usize
            + p.headers[b.index as usize]
                .as_ref()
                .expect("columnar header")
                .body_start
            + 1;
        drop(r);
        drop(p);

        let mut bytes = std::fs::read(&path).unwrap();
        bytes[at] ^= 0x10;
        std::fs::write(&path, &bytes).unwrap();
        let p = Part::open(&path, info).unwrap();
        for _ in 0..2 {
            let e = p.reader(&b).err().expect("a damaged directory is an error");
            assert!(e.to_string().contains("checksum"), "{e}");
        }
    }

    #[test]
    fn kept_frames_are_verified_when_the_part_opens_and_damage_is_reported_on_read() {
        use crate::block::layout::{CODEC_NONE, FRAME_SMALL};
        let d = tempfile::tempdir().unwrap();
        let (path, info) = one_stream_part(d.path(), 5, 120, |i| {
            let level = ["info", "warn", "error"][i as usize % 3];
            format!(r#"{{"level":"{level}","user":"u{:03}","n":{i}}}"#, i % 7)
        });
        let p = Part::open(&path, info.clone()).unwrap();
        let b = p.stream_blocks(1)[0].clone();
        let h = p.headers[b.index as usize]
            .clone()
            .expect("columnar header");
        let small = &h.frames[FRAME_SMALL];
        assert!(
            small.codec == CODEC_NONE && small.stored_len > 0 && small.crc.is_some(),
            "the block stores small payloads uncompressed, with a checksum"
        );
        assert!(
            p.block_logs[b.index as usize].frame_verified(FRAME_SMALL),
            "the opening verified the kept frame"
        );
        // The frame's first byte in the file.
        let at = b.offset as usize + h.frame_start(FRAME_SMALL);
        drop(p);

        let mut bytes = std::fs::read(&path).unwrap();
        bytes[at] ^= 0x20;
        std::fs::write(&path, &bytes).unwrap();
        let p = Part::open(&path, info).unwrap();
        assert!(
            !p.block_logs[b.index as usize].frame_verified(FRAME_SMALL),
            "a damaged frame is not noted as verified"
        );
        for _ in 0..2 {
            let e = p
                .reader(&b)
                .and_then(|r| r.lines())
                .expect_err("a damaged small-payload frame is an error when read");
            assert!(e.to_string().contains("checksum"), "{e}");
        }
    }

    #[test]
    fn equal_metadata_names_share_one_list_and_others_get_their_own() {
        let a = interned_names(&["pod", "trace_id"]);
        let b = interned_names(&["pod", "trace_id"]);
        assert!(Arc::ptr_eq(&a, &b), "the same names: the same list");
        let c = interned_names(&["pod"]);
        assert_eq!(&c[..], &["pod".to_string()][..]);
        let d = interned_names(&["pod", "span_id"]);
        assert_eq!(&d[..], &["pod".to_string(), "span_id".to_string()][..]);
        assert!(interned_names(&[]).is_empty());
        let e = interned_names(&["pod", "trace_id"]);
        assert_eq!(&e[..], &a[..]);
    }

    #[test]
    fn metadata_names_are_listed_when_the_part_opens_equal_lists_shared() {
        let d = tempfile::tempdir().unwrap();
        let mut w = PartWriter::create(d.path(), 8, BlockFormat::Columnar, 1).unwrap();
        let with = |names: &'static [&'static str]| {
            move |i: i64| Entry {
                ts: i,
                line: format!(r#"{{"level":"info","n":{i}}}"#),
                metadata: names
                    .iter()
                    .map(|n| (n.to_string(), format!("{n}-{}", i % 3)))
                    .collect(),
            }
        };
        w.write_stream(1, (0..40).map(|i| Ok(with(&["pod", "trace_id"])(i))))
            .unwrap();
        w.write_stream(2, (0..40).map(|i| Ok(with(&["pod", "trace_id"])(i))))
            .unwrap();
        w.write_stream(3, (0..40).map(|i| Ok(with(&["span_id"])(i))))
            .unwrap();
        w.write_stream(4, (0..40).map(|i| Ok(entry(i, "plain"))))
            .unwrap();
        let info = w.finish(8, 0).unwrap();
        let p = Part::open(&d.path().join(crate::names::part_file(8)), info).unwrap();
        let listed = |sid: u64| {
            let b = p.stream_blocks(sid)[0].clone();
            let kept = p.metadata_names[b.index as usize]
                .get()
                .cloned()
                .unwrap_or_else(|| panic!("stream {sid}: names listed at open"));
            let read = p.reader(&b).unwrap().metadata_names().unwrap();
            assert_eq!(&kept[..], &read[..], "stream {sid}: as a reader reads them");
            kept
        };
        let (a, b, c, e) = (listed(1), listed(2), listed(3), listed(4));
        assert_eq!(&a[..], &["pod".to_string(), "trace_id".to_string()][..]);
        assert!(Arc::ptr_eq(&a, &b), "equal lists: one list");
        assert_eq!(&c[..], &["span_id".to_string()][..]);
        assert!(e.is_empty());
    }

    #[test]
    fn blocks_are_fetched_ahead_until_their_directory_is_first_read() {
        let d = tempfile::tempdir().unwrap();
        let mut w = PartWriter::create(d.path(), 6, BlockFormat::Columnar, 1).unwrap();
        for sid in 1..=2 {
            w.write_stream(
                sid,
                (0..50).map(|i| Ok(entry(i, &format!(r#"{{"level":"info","n":{i}}}"#)))),
            )
            .unwrap();
        }
        let info = w.finish(6, 0).unwrap();
        let p = Part::open(&d.path().join(crate::names::part_file(6)), info).unwrap();
        let (a, b) = (p.stream_blocks(1)[0].clone(), p.stream_blocks(2)[0].clone());
        assert!(
            p.unread_yet(&a) && p.unread_yet(&b),
            "the opening reads no directory"
        );
        // What a first read touches through the mapping: the header through
        // the small-payload frame, inside the block.
        let h = p.headers[a.index as usize]
            .clone()
            .expect("columnar header");
        let touched = h.body_start + h.frames.iter().take(4).map(|f| f.stored_len).sum::<usize>();
        let len = usize::from(p.prefetch_len[a.index as usize]);
        assert_eq!(len, touched.min(a.len as usize).min(PREFETCH_BLOCK_BYTES));
        assert!(len > h.body_start, "the directory is fetched ahead");
        p.prefetch_entries(&a);
        p.prefetch_header(&a);
        p.prefetch_block(&a);
        assert!(p.unread_yet(&a), "hints read nothing");
        let lines = p.reader(&a).unwrap().lines().unwrap();
        assert_eq!(lines.len(), 50);
        assert!(!p.unread_yet(&a), "read once: not fetched ahead again");
        assert!(p.unread_yet(&b), "the other block is still unread");
    }

    #[test]
    fn obsolete_part_file_is_deleted_on_last_drop() {
        let d = tempfile::tempdir().unwrap();
        let mut w = PartWriter::create(d.path(), 2, BlockFormat::Raw, 1).unwrap();
        w.write_stream(1, vec![Ok(entry(1, "x"))].into_iter())
            .unwrap();
        let info = w.finish(2, 0).unwrap();
        let path = d.path().join(crate::names::part_file(2));
        let p = std::sync::Arc::new(Part::open(&path, info).unwrap());
        let reader = p.clone();
        p.mark_obsolete();
        drop(p);
        assert!(path.exists());
        drop(reader);
        assert!(!path.exists());
    }
}
