//! Frames: reading a block's frames (in place, decompressed, or `pread`
//! from its file), checking their checksums once per process
//! ([`BlockLog`]), and the reader's cache of frames read.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::{bad, BlockReader};
use crate::block::layout::{BlockHeader, FrameInfo, CODEC_NONE, CODEC_ZSTD, FRAME_DIRECTORY};
use crate::StorageError;

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
    /// earlier reader, so it is not computed again; [`DIRECTORY_CHECKED`](super::directory::DIRECTORY_CHECKED):
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
    pub(super) directory_read: AtomicBool,
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

    pub(super) fn has(&self, bits: u64) -> bool {
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
    pub(super) fn note_template_counts(&self, per_tpl: &[usize]) {
        if per_tpl.len() <= 64 {
            let mask = per_tpl
                .iter()
                .enumerate()
                .fold(0u64, |m, (t, &n)| m | (u64::from(n > 0) << t));
            self.templates_with_rows.store(mask, Ordering::Relaxed);
        }
    }

    pub(super) fn set(&self, bits: u64) {
        self.verified.fetch_or(bits, Ordering::Relaxed);
    }
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

/// The frames a reader has read, by number: the first
/// [`INLINE_FRAMES`] in place (directory, template texts, metadata, small
/// payloads, the first large payload: what most reads touch), later ones in a
/// list grown when one is read. A reader opened per block then allocates
/// nothing for its frames (q14's first run opened ~4,000 readers, each
/// allocating and freeing a slot per frame).
#[derive(Default)]
pub(super) struct FrameSlots<'a> {
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

pub(super) fn read_frame<'a>(
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

impl<'a> BlockReader<'a> {
    /// The decompressed frame `i` (checked and decompressed on first use).
    pub(super) fn frame(&self, i: usize) -> Result<FrameRef<'a>, StorageError> {
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
}
