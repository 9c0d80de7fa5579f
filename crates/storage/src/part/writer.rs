//! Writes a part file: blocks stream by stream, then the index and footer,
//! fsynced and renamed into place.

use super::raw_block::RawBlockBuilder;
use super::{BlockFormat, BlockRef, PartInfo, END_MAGIC, HEADER_LEN, MAGIC, VERSION};
use crate::block::shared::SharedDictWriter;
use crate::block::{BlockBuilder, BlockMeta};
use crate::config::{BLOCK_MAX_RAW_BYTES, BLOCK_MAX_ROWS};
use crate::encoding::{put_u32, put_u64, put_uvarint};
use crate::{names, StorageError};
use runakefli_model::{Entry, StreamId};
use std::borrow::Borrow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

enum Builder {
    Columnar(Box<BlockBuilder>),
    Raw(RawBlockBuilder),
}

impl Builder {
    fn push(&mut self, ts: i64, line: &str, metadata: &[(String, String)]) {
        match self {
            Builder::Columnar(b) => b.push(ts, line, metadata),
            Builder::Raw(b) => b.push(ts, line, metadata),
        }
    }

    fn len(&self) -> usize {
        match self {
            Builder::Columnar(b) => b.len(),
            Builder::Raw(b) => b.len(),
        }
    }

    fn raw_bytes(&self) -> usize {
        match self {
            Builder::Columnar(b) => b.raw_bytes(),
            Builder::Raw(b) => b.raw_bytes(),
        }
    }

    fn finish(
        &mut self,
        level: i32,
        dst: &mut Vec<u8>,
        shared: Option<&mut SharedDictWriter>,
    ) -> Result<BlockMeta, StorageError> {
        match self {
            Builder::Columnar(b) => Ok(b.finish_in(level, dst, shared)),
            Builder::Raw(b) => b.finish(level, dst),
        }
    }
}

/// A part being written to `<id>.part.tmp`; [`PartWriter::finish`] makes it durable
/// under its final name. Dropping an unfinished writer removes the temp file.
pub struct PartWriter {
    out: Option<BufWriter<File>>,
    tmp: PathBuf,
    path: PathBuf,
    level: i32,
    offset: u64,
    index: Vec<u8>,
    n_streams: u64,
    last_stream: Option<StreamId>,
    rows: u64,
    builder: Builder,
    scratch: Vec<u8>,
    /// Columnar parts: the shared dictionaries learned so far.
    shared: Option<SharedDictWriter>,
}

impl PartWriter {
    /// Starts part `id` in `dir`, encoding blocks in `format` at zstd `level`.
    pub fn create(
        dir: &Path,
        id: u64,
        format: BlockFormat,
        level: i32,
    ) -> Result<Self, StorageError> {
        let path = dir.join(names::part_file(id));
        let tmp = dir.join(format!("{}{}", names::part_file(id), names::TMP_SUFFIX));
        let f = File::create(&tmp).map_err(|e| StorageError::io(&tmp, e))?;
        let mut out = BufWriter::with_capacity(1 << 20, f);
        let mut h = Vec::with_capacity(HEADER_LEN);
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.extend_from_slice(&format.code().to_le_bytes());
        out.write_all(&h).map_err(|e| StorageError::io(&tmp, e))?;
        Ok(PartWriter {
            out: Some(out),
            tmp,
            path,
            level,
            offset: HEADER_LEN as u64,
            index: Vec::new(),
            n_streams: 0,
            last_stream: None,
            rows: 0,
            // `new()` is the codec's documented constructor; it may or may not implement Default.
            #[allow(clippy::box_default)]
            builder: match format {
                BlockFormat::Columnar => Builder::Columnar(Box::new(BlockBuilder::new())),
                BlockFormat::Raw => Builder::Raw(RawBlockBuilder::default()),
            },
            scratch: Vec::new(),
            shared: (format == BlockFormat::Columnar).then(SharedDictWriter::new),
        })
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Writes all rows of stream `sid` (ids must ascend from call to call; rows
    /// come sorted by time and deduplicated) as blocks of bounded size. A stream
    /// without rows is skipped.
    pub fn write_stream<E: Borrow<Entry>>(
        &mut self,
        sid: StreamId,
        rows: impl Iterator<Item = Result<E, StorageError>>,
    ) -> Result<(), StorageError> {
        if self.last_stream.is_some_and(|p| p >= sid) {
            return Err(StorageError::corrupt(
                "part writer",
                "stream ids must ascend",
            ));
        }
        let mut blocks: Vec<BlockRef> = Vec::new();
        for row in rows {
            let row = row?;
            let e = row.borrow();
            self.builder.push(e.ts, &e.line, &e.metadata);
            if self.builder.len() >= BLOCK_MAX_ROWS
                || self.builder.raw_bytes() >= BLOCK_MAX_RAW_BYTES
            {
                blocks.push(self.flush_block()?);
            }
        }
        if self.builder.len() > 0 {
            blocks.push(self.flush_block()?);
        }
        if blocks.is_empty() {
            return Ok(());
        }
        self.last_stream = Some(sid);
        self.n_streams += 1;
        put_u64(&mut self.index, sid);
        put_uvarint(&mut self.index, blocks.len() as u64);
        for b in &blocks {
            put_u64(&mut self.index, b.offset);
            put_u32(&mut self.index, b.len);
            put_u32(&mut self.index, b.crc);
            put_u32(&mut self.index, b.meta.rows);
            self.index.extend_from_slice(&b.meta.min_ts.to_le_bytes());
            self.index.extend_from_slice(&b.meta.max_ts.to_le_bytes());
            put_u64(&mut self.index, b.meta.line_bytes);
        }
        Ok(())
    }

    fn flush_block(&mut self) -> Result<BlockRef, StorageError> {
        self.scratch.clear();
        let meta = self
            .builder
            .finish(self.level, &mut self.scratch, self.shared.as_mut())?;
        let out = self.out.as_mut().expect("writer open");
        out.write_all(&self.scratch)
            .map_err(|e| StorageError::io(&self.tmp, e))?;
        let b = BlockRef {
            offset: self.offset,
            len: self.scratch.len() as u32,
            crc: crc32fast::hash(&self.scratch),
            meta,
            index: 0,
        };
        self.offset += self.scratch.len() as u64;
        self.rows += b.meta.rows as u64;
        Ok(b)
    }

    /// Writes index and footer, fsyncs, and renames the file into place. The
    /// caller fsyncs the directory (it does so once, with the manifest).
    pub fn finish(mut self, order: u64, level: u32) -> Result<PartInfo, StorageError> {
        // The shared dictionaries, then the index that locates them.
        let mut dicts = Vec::new();
        if let Some(sw) = self.shared.take() {
            let d = sw.finish();
            if !d.is_empty() {
                d.write_section(self.level.max(3), &mut dicts)?;
            }
        }
        let mut index = Vec::with_capacity(self.index.len() + 26);
        put_u64(&mut index, if dicts.is_empty() { 0 } else { self.offset });
        put_u64(&mut index, dicts.len() as u64);
        self.offset += dicts.len() as u64;
        put_uvarint(&mut index, self.n_streams);
        index.extend_from_slice(&self.index);
        let mut footer = Vec::with_capacity(40);
        put_u64(&mut footer, self.offset);
        put_u64(&mut footer, index.len() as u64);
        put_u64(&mut footer, self.rows);
        put_u32(&mut footer, crc32fast::hash(&index));
        put_u32(&mut footer, VERSION);
        footer.extend_from_slice(END_MAGIC);
        let mut out = self.out.take().expect("writer open");
        let io = |e| StorageError::io(&self.tmp, e);
        out.write_all(&dicts).map_err(io)?;
        out.write_all(&index).map_err(io)?;
        out.write_all(&footer).map_err(io)?;
        let f = out
            .into_inner()
            .map_err(|e| StorageError::io(&self.tmp, e.into_error()))?;
        f.sync_all().map_err(io)?;
        drop(f);
        std::fs::rename(&self.tmp, &self.path).map_err(|e| StorageError::io(&self.path, e))?;
        let bytes = self.offset + index.len() as u64 + footer.len() as u64;
        let id =
            names::parse_part_file(self.path.file_name().and_then(|n| n.to_str()).unwrap_or(""))
                .ok_or_else(|| StorageError::corrupt("part writer", "bad part name"))?;
        Ok(PartInfo {
            id,
            order,
            level,
            rows: self.rows,
            bytes,
        })
    }
}

impl Drop for PartWriter {
    fn drop(&mut self) {
        if self.out.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
