//! How much of a part's mapping stays in the process's resident set.
//!
//! A part is read through one read-only mapping of its file. The pages every
//! query reads — each columnar block's header, bloom and directory frame,
//! and its metadata and small-payload frames when stored uncompressed —
//! stay mapped from the part's opening on ([`keep_ranges`]); everything
//! else is dropped from the mapping as soon as the opening has read it
//! ([`OpeningRelease`]), and the data frames that queries read later are
//! dropped again once the process's mapped file pages pass the kept ones
//! by [`crate::config::PART_MAPPED_DATA_MAX_BYTES`] ([`DataPages`]), or once
//! the whole resident set passes them by
//! [`crate::config::RESIDENT_BEYOND_KEPT_MAX_BYTES`] after the allocator has
//! given its free pages back (a query holding a large heap leaves less room
//! for mapped data pages). The blocks read since the last drop are dropped
//! with one `process_madvise` call where the kernel takes one (a TLB flush
//! for them all, see [`release_many`]). Dropped
//! pages stay in the kernel's page cache: touching them again is a minor
//! fault, not a disk read. A scan over every block of a large part so maps
//! a bounded window of it instead of the whole file, and the peak resident
//! set while querying stays bounded by the kept pages plus that window.

use crate::block::layout::{BlockHeader, CODEC_NONE, FRAME_METADATA, FRAME_SMALL};
use crate::block::reader::BlockLog;
use memmap2::Mmap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use super::BlockRef;
use crate::padded::Padded;

/// Page size assumed for alignment (the smallest the platforms we run on use).
pub(super) const PAGE: usize = 4096;

/// The opening of a part reads every block header, which faults in the
/// pages around each (the kernel maps up to 64 KiB around a fault): at most
/// this many bytes of the file are left mapped behind the block being read
/// before the pages outside the kept ranges are dropped.
const OPENING_WINDOW_BYTES: usize = 16 << 20;

/// The frames after the directory that queries read in place when they are
/// stored uncompressed: structured metadata (frame 2, read for the names a
/// fields plan checks) and the payloads under 256 bytes (frame 3: most
/// columns' entry indexes). Compressed frames are read with `pread`, not
/// through the mapping, and template texts (frame 1) are read once per
/// template of the part, so neither is kept.
pub(super) const KEPT_FRAMES: [usize; 2] = [FRAME_METADATA, FRAME_SMALL];

/// Calls `keep` with the byte ranges of block `b` that most queries read
/// through the mapping, in file order: its header, bloom and directory
/// frame, and its [`KEPT_FRAMES`] that are stored uncompressed (a range
/// starting in the page another ends in is merged with it). Nothing when
/// its header did not decode.
pub(super) fn keep_ranges(
    b: &BlockRef,
    h: Option<&Arc<BlockHeader<'static>>>,
    mut keep: impl FnMut((usize, usize)),
) {
    let (Some(header), Some(mut cur)) = (h, head_range(b, h)) else {
        return;
    };
    let at = |off: usize| (b.offset as usize).saturating_add(off.min(b.len as usize));
    let mut frame_start = header
        .body_start
        .saturating_add(header.frames[0].stored_len);
    for (i, f) in header
        .frames
        .iter()
        .enumerate()
        .take(FRAME_SMALL + 1)
        .skip(1)
    {
        let from = at(frame_start);
        frame_start = frame_start.saturating_add(f.stored_len);
        let to = at(frame_start);
        if !KEPT_FRAMES.contains(&i) || f.codec != CODEC_NONE || from == to {
            continue;
        }
        if from <= cur.1.next_multiple_of(PAGE) {
            cur.1 = to;
        } else {
            keep(cur);
            cur = (from, to);
        }
    }
    keep(cur);
}

/// The byte range of block `b`'s header, bloom and directory frame (`None`
/// when its header did not decode). Its pages are the kept pages the
/// resident budgets are measured from; the [`KEPT_FRAMES`] kept besides
/// count against the mapped-data budget
/// ([`crate::config::PART_MAPPED_DATA_MAX_BYTES`]), so keeping them does
/// not raise the bound on the resident set.
pub(super) fn head_range(
    b: &BlockRef,
    h: Option<&Arc<BlockHeader<'static>>>,
) -> Option<(usize, usize)> {
    let h = h?;
    let dir_end = h.body_start.saturating_add(h.frames.first()?.stored_len);
    let start = b.offset as usize;
    Some((start, start.saturating_add(dir_end.min(b.len as usize))))
}

/// The whole pages of block `b` after its kept ranges: its data frames.
fn data_pages(b: &BlockRef, h: Option<&Arc<BlockHeader<'static>>>) -> Option<(usize, usize)> {
    let mut kept_end = None;
    keep_ranges(b, h, |(_, end)| kept_end = Some(end));
    let from = kept_end?.next_multiple_of(PAGE);
    let end = (b.offset as usize + b.len as usize) / PAGE * PAGE;
    (end > from).then_some((from, end))
}

/// Drops pages while a part opens: the caller notes each block's kept range
/// in file order and calls [`OpeningRelease::advance`] as it goes.
pub(super) struct OpeningRelease {
    /// Everything before this offset has been dealt with.
    released_to: usize,
    /// Kept ranges that may share a page with what is not dropped yet.
    keep: Vec<(usize, usize)>,
    /// Every head range ([`head_range`]): the kept pages the resident
    /// budgets are measured from.
    heads: Vec<(usize, usize)>,
    /// Every kept range noted, for [`OpeningRelease::release_again`].
    all_kept: Vec<(usize, usize)>,
}

impl OpeningRelease {
    pub(super) fn new() -> Self {
        OpeningRelease {
            released_to: 0,
            keep: Vec::new(),
            heads: Vec::new(),
            all_kept: Vec::new(),
        }
    }

    /// Notes a kept range (in file order).
    pub(super) fn keep(&mut self, range: (usize, usize)) {
        self.keep.push(range);
        self.all_kept.push(range);
    }

    /// Drops again every page of the file (`len` bytes) that holds no kept
    /// byte. Reading kept pages after the opening's drops (a directory's
    /// first check) faults them in, and the kernel maps the page-cache
    /// pages around each fault with them (up to 64 KiB): pages dropped a
    /// moment before were mapped again that way. Called once, when the
    /// opening ends: it hands over the kept ranges noted.
    pub(super) fn release_again(&mut self, map: &Mmap, len: usize) {
        let end = len.min(map.len());
        let kept = std::mem::take(&mut self.all_kept);
        release_many(map, &page_gaps(0, end, kept, PAGE));
    }

    /// Notes a block's head range (in file order).
    pub(super) fn head(&mut self, range: (usize, usize)) {
        self.heads.push(range);
    }

    /// Every head range noted, in file order.
    pub(super) fn heads(&self) -> &[(usize, usize)] {
        &self.heads
    }

    /// The opening has read everything before `at`: once that is more than
    /// [`OPENING_WINDOW_BYTES`] past the last drop, drops the pages before
    /// `at` that hold no kept byte.
    pub(super) fn advance(&mut self, map: &Mmap, at: usize) {
        if at.saturating_sub(self.released_to) >= OPENING_WINDOW_BYTES {
            self.release(map, at);
        }
    }

    /// Drops every page before `end` (the file's length at the end of the
    /// opening) that holds no kept byte.
    pub(super) fn release(&mut self, map: &Mmap, end: usize) {
        let end = end.min(map.len());
        release_many(
            map,
            &page_gaps(self.released_to, end, self.keep.clone(), PAGE),
        );
        self.released_to = end / PAGE * PAGE;
        // A kept range reaching into the page the next window starts with
        // still keeps that page.
        let at = self.released_to;
        self.keep.retain(|&(_, stop)| stop > at);
    }
}

/// A part checks the process's mapped file pages every this many readers
/// opened on it ([`DataPages::reader_opened`]).
const CHECK_EVERY_READERS: u32 = 128;

/// Bytes of the head ranges ([`head_range`], whole pages) of every open part.
static KEPT_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Bounds the data pages of one part that stay mapped after queries read
/// them (see the module documentation).
pub(super) struct DataPages {
    /// Whole pages of this part's head ranges (counted in [`KEPT_BYTES`]
    /// while the part is open).
    kept_bytes: usize,
    /// Readers opened since the last check, and whether one thread checks
    /// and drops now: written as every block opens, so on lines of their
    /// own, not shared with the part's fields every reader reads.
    opening: Padded<Opening>,
}

/// What [`DataPages`] updates as readers open.
#[derive(Default)]
struct Opening {
    /// Readers opened since the last check.
    readers: AtomicU32,
    /// One thread at a time checks and drops.
    busy: AtomicBool,
}

impl DataPages {
    /// A part whose head ranges ([`head_range`]) are `heads` (in file
    /// order), less `dropped` bytes of whole pages inside them that were
    /// dropped for good (filters read from their copies in filter groups).
    pub(super) fn new(heads: &[(usize, usize)], dropped: usize) -> Self {
        let kept_bytes = heads
            .iter()
            .map(|&(from, end)| end.next_multiple_of(PAGE) - from / PAGE * PAGE)
            .sum::<usize>()
            .saturating_sub(dropped);
        KEPT_BYTES.fetch_add(kept_bytes, Ordering::Relaxed);
        DataPages {
            kept_bytes,
            opening: Padded::default(),
        }
    }

    /// Called as a reader of one of the part's columnar blocks opens: every
    /// [`CHECK_EVERY_READERS`] readers, when the process's mapped file pages
    /// pass the kept pages of every open part by more than `max_bytes`, drops
    /// the data pages of this part's blocks read since its last drop (the
    /// kernel maps more than the frames read: it maps up to 64 KiB around
    /// each fault, so the resident set is measured rather than estimated).
    pub(super) fn reader_opened(
        &self,
        map: &Mmap,
        blocks: &[BlockRef],
        headers: &[Option<Arc<BlockHeader<'static>>>],
        logs: &[BlockLog],
        max_bytes: usize,
    ) {
        if self.opening.readers.fetch_add(1, Ordering::Relaxed) + 1 < CHECK_EVERY_READERS
            || self.opening.busy.swap(true, Ordering::Acquire)
        {
            return;
        }
        self.opening.readers.store(0, Ordering::Relaxed);
        let kept = KEPT_BYTES.load(Ordering::Relaxed);
        let total_max = crate::config::RESIDENT_BEYOND_KEPT_MAX_BYTES;
        // The filter groups' copies stand in for kept bloom pages
        // (dropped from the mapping): they count as kept, not as heap.
        let copies = super::bloom_groups::held_bytes();
        let now = || {
            resident_bytes().map_or(Pressure::None, |r| {
                r.without_heap(copies).pressure(kept, max_bytes, total_max)
            })
        };
        let release = match now() {
            Pressure::None => false,
            Pressure::Mapped => true,
            // Over the whole budget, not the mapped one: the heap's free
            // pages go back first, the data pages only if that is not enough.
            Pressure::Whole => !return_free_heap() || now() != Pressure::None,
        };
        if release {
            release_read_data(map, blocks, headers, logs);
        }
        self.opening.busy.store(false, Ordering::Release);
    }
}

impl Drop for DataPages {
    fn drop(&mut self) {
        KEPT_BYTES.fetch_sub(self.kept_bytes, Ordering::Relaxed);
    }
}

/// At most one heap trim per this many milliseconds: a trim hands back
/// pages the running queries' next allocations fault in again, so while
/// they run over the budget the data pages go instead.
const TRIM_EVERY_MS: u64 = 1000;

/// Lets one caller through per [`TRIM_EVERY_MS`].
struct TrimGate {
    /// When the last caller went through (ms, offset by one period so that
    /// the first call at time 0 goes through).
    last: AtomicU64,
}

impl TrimGate {
    const fn new() -> Self {
        TrimGate {
            last: AtomicU64::new(0),
        }
    }

    /// Whether a caller at `now_ms` may trim (and, if so, the gate closes
    /// for a period).
    fn admit(&self, now_ms: u64) -> bool {
        let now = now_ms + TRIM_EVERY_MS;
        let last = self.last.load(Ordering::Relaxed);
        now >= last + TRIM_EVERY_MS
            && self
                .last
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}

/// Gives the allocator's free pages back to the kernel (glibc keeps the
/// pages of freed blocks in its arenas; a query that held a large heap
/// would otherwise leave it resident), at most once per
/// [`TRIM_EVERY_MS`]; returns whether it did.
fn return_free_heap() -> bool {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    static GATE: TrimGate = TrimGate::new();
    let now_ms = START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_millis() as u64;
    if !GATE.admit(now_ms) {
        return false;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free pages of the allocator's own
    // arenas; it takes no pointer and touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
    true
}

/// The process's resident set, in bytes.
struct Resident {
    /// Every resident page (`/proc/self/statm`'s second field).
    total: usize,
    /// Resident file-backed and shared pages (its third field: the mapped
    /// parts, the executable, libraries).
    file: usize,
}

/// Which budget the resident set is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pressure {
    /// Neither.
    None,
    /// The mapped file pages pass the kept ones by more than the mapped
    /// data budget.
    Mapped,
    /// Only the whole resident set (heap included) passes the kept pages by
    /// more than the resident budget.
    Whole,
}

impl Resident {
    /// The same resident set less `bytes` of heap.
    fn without_heap(self, bytes: usize) -> Resident {
        Resident {
            total: self.total.saturating_sub(bytes).max(self.file),
            file: self.file,
        }
    }

    /// Which budget this resident set is over, with `kept` bytes of kept
    /// pages, `mapped_max` for the data pages beyond them and `total_max`
    /// for everything beyond them.
    fn pressure(&self, kept: usize, mapped_max: usize, total_max: usize) -> Pressure {
        if self.file > kept.saturating_add(mapped_max) {
            Pressure::Mapped
        } else if self.total > kept.saturating_add(total_max) {
            Pressure::Whole
        } else {
            Pressure::None
        }
    }
}

/// The process's resident set, from `/proc/self/statm`.
fn resident_bytes() -> Option<Resident> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let mut fields = statm.split_whitespace().skip(1);
    let total: usize = fields.next()?.parse().ok()?;
    let file: usize = fields.next()?.parse().ok()?;
    Some(Resident {
        total: total * PAGE,
        file: file * PAGE,
    })
}

/// Drops the data pages of every block read since the last drop (a reader
/// still holding a frame of one faults its pages back in from the page
/// cache when it touches them: the mapping is read-only and file-backed).
/// Returns how many blocks it dropped pages of.
pub(super) fn release_read_data(
    map: &Mmap,
    blocks: &[BlockRef],
    headers: &[Option<Arc<BlockHeader<'static>>>],
    logs: &[BlockLog],
) -> usize {
    let mut ranges = Vec::new();
    for (b, l) in blocks.iter().zip(logs) {
        if !l.take_data_read() {
            continue;
        }
        if let Some(r) = data_pages(b, headers.get(b.index as usize).and_then(|h| h.as_ref())) {
            ranges.push(r);
        }
    }
    let n = ranges.len();
    release_many(map, &ranges);
    n
}

/// The runs of whole `page`-sized pages of `[from, end)` (`from`
/// page-aligned) that hold no byte of the ranges `keep` (half-open; they may
/// overlap and come in any order).
pub(super) fn page_gaps(
    from: usize,
    end: usize,
    mut keep: Vec<(usize, usize)>,
    page: usize,
) -> Vec<(usize, usize)> {
    keep.sort_unstable();
    let mut gaps = Vec::new();
    let mut at = from;
    for (start, stop) in keep.into_iter().chain([(end, end)]) {
        let gap_start = at.next_multiple_of(page);
        let gap_end = start.min(end) / page * page;
        if gap_end > gap_start {
            gaps.push((gap_start, gap_end));
        }
        at = at.max(stop);
    }
    gaps
}

/// Ranges per `process_madvise` call (the kernel's `UIO_MAXIOV`).
const RANGES_PER_CALL: usize = 1024;

/// Whether `process_madvise` on this process was refused once (kernels
/// before 6.13 take only a few advices from it): then each range gets its
/// own `madvise`.
static VECTORED_REFUSED: AtomicBool = AtomicBool::new(false);

/// Drops this process's mapping of the whole pages of each of `ranges`
/// (page-aligned starts, inside `map`). One `madvise` per range flushes the
/// TLB of every CPU running a thread of the process each time (an
/// interrupt to each, waited for: ~24 µs a call on the project's 2-vCPU
/// test machine, 22 % of the CPU of `quantile_over_time(…)` over 10M lines
/// when a scan's blocks were dropped one call each); `process_madvise`
/// takes up to [`RANGES_PER_CALL`] ranges and flushes once for them.
pub(super) fn release_many(map: &Mmap, ranges: &[(usize, usize)]) {
    let iov: Vec<libc::iovec> = ranges
        .iter()
        .filter_map(|&(from, end)| {
            let end = end.min(map.len());
            (end > from && from.is_multiple_of(PAGE)).then(|| libc::iovec {
                // SAFETY: `from` is inside the mapping (checked above).
                iov_base: unsafe { map.as_ptr().add(from) } as *mut libc::c_void,
                iov_len: end - from,
            })
        })
        .collect();
    for chunk in iov.chunks(RANGES_PER_CALL) {
        if !advise_vectored(chunk) {
            release_each(chunk);
        }
    }
}

/// `MADV_DONTNEED` on each range of `iov` (ranges of a read-only,
/// file-backed mapping of ours), one `madvise` call each.
fn release_each(iov: &[libc::iovec]) {
    for v in iov {
        // SAFETY: as in `release_pages`: page-aligned ranges of our
        // read-only, file-backed mapping.
        unsafe { libc::madvise(v.iov_base, v.iov_len, libc::MADV_DONTNEED) };
    }
}

/// `MADV_DONTNEED` on every range of `iov` with one `process_madvise` call
/// on this process; false (nothing assumed done) when the kernel refused or
/// did only part of it.
fn advise_vectored(iov: &[libc::iovec]) -> bool {
    #[cfg(target_os = "linux")]
    {
        if VECTORED_REFUSED.load(Ordering::Relaxed) {
            return false;
        }
        let Some(fd) = own_pidfd() else {
            VECTORED_REFUSED.store(true, Ordering::Relaxed);
            return false;
        };
        let total: usize = iov.iter().map(|v| v.iov_len).sum();
        // SAFETY: `iov` holds `iov.len()` ranges of our own mapping; the
        // call reads the vector and changes no memory we hold a reference
        // into (read-only, file-backed pages are faulted back in on use).
        let done = unsafe {
            libc::syscall(
                libc::SYS_process_madvise,
                fd,
                iov.as_ptr(),
                iov.len(),
                libc::MADV_DONTNEED,
                0u32,
            )
        };
        if done < 0 {
            VECTORED_REFUSED.store(true, Ordering::Relaxed);
            return false;
        }
        done as usize == total
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = iov;
        false
    }
}

/// A pidfd of this process, opened once (`None` where the kernel has none).
#[cfg(target_os = "linux")]
fn own_pidfd() -> Option<libc::c_int> {
    static FD: std::sync::OnceLock<Option<libc::c_int>> = std::sync::OnceLock::new();
    *FD.get_or_init(|| {
        // SAFETY: pidfd_open takes a pid and flags and returns a new
        // descriptor (kept open for the process's life) or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0u32) };
        (fd >= 0).then_some(fd as libc::c_int)
    })
}

/// Drops this process's mapping of the whole pages of `map[from..end]`
/// (`from` page-aligned); they stay in the page cache.
pub(super) fn release_pages(map: &Mmap, from: usize, end: usize) {
    let end = end.min(map.len());
    if end <= from || !from.is_multiple_of(PAGE) {
        return;
    }
    // SAFETY: the range lies inside our read-only, file-backed mapping, whose
    // start is page-aligned; MADV_DONTNEED on such a mapping only drops
    // page-table entries and the data is faulted back in from the file if
    // touched again.
    unsafe {
        libc::madvise(
            map.as_ptr().add(from) as *mut libc::c_void,
            end - from,
            libc::MADV_DONTNEED,
        );
    }
}

/// Resident bytes of the mapping that starts at `map` (`/proc/self/smaps`).
#[cfg(test)]
pub(super) fn mapped_rss(map: &Mmap) -> usize {
    let start = format!("{:x}-", map.as_ptr() as usize);
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
    let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&start));
    assert!(lines.next().is_some(), "mapping listed");
    let rss = lines.find(|l| l.starts_with("Rss:")).unwrap_or_default();
    let kb: usize = rss
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_default();
    kb * 1024
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::layout::{FrameInfo, CODEC_ZSTD};

    /// A block at `offset` whose body starts at `body_start` with frames of
    /// `(codec, stored_len)`.
    fn block(
        offset: u64,
        body_start: usize,
        frames: &[(u8, usize)],
    ) -> (BlockRef, Arc<BlockHeader<'static>>) {
        let len = body_start + frames.iter().map(|f| f.1).sum::<usize>();
        let b = BlockRef {
            offset,
            len: len as u32,
            crc: 0,
            meta: crate::block::BlockMeta {
                rows: 1,
                min_ts: 0,
                max_ts: 0,
                line_bytes: 0,
            },
            index: 0,
        };
        let h = BlockHeader {
            version: 2,
            rows: 1,
            min_ts: 0,
            max_ts: 0,
            line_bytes: 0,
            has_grams: false,
            has_short_grams: false,
            boundaries: 0,
            frames: frames
                .iter()
                .map(|&(codec, stored_len)| FrameInfo {
                    codec,
                    stored_len,
                    raw_len: stored_len,
                    crc: None,
                })
                .collect(),
            templates: Vec::new(),
            columns: Vec::new(),
            briefs: Vec::new(),
            bloom: 0..0,
            bloom_crc: None,
            body_start,
        };
        (b, Arc::new(h))
    }

    fn ranges(b: &BlockRef, h: &Arc<BlockHeader<'static>>) -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        keep_ranges(b, Some(h), |r| v.push(r));
        v
    }

    #[test]
    fn kept_ranges_are_the_head_and_the_stored_metadata_and_small_frames() {
        let (n, z) = (CODEC_NONE, CODEC_ZSTD);
        // Directory, template texts, metadata, small payloads, a column.
        let (b, h) = block(8192, 100, &[(n, 50), (n, 30), (n, 20), (n, 40), (n, 9000)]);
        // Template texts (frame 1) sit between: in the head's page, merged.
        assert_eq!(ranges(&b, &h), vec![(8192, 8192 + 240)]);
        // The resident budgets count the head alone.
        assert_eq!(head_range(&b, Some(&h)), Some((8192, 8192 + 150)));
        assert_eq!(data_pages(&b, Some(&h)), Some((12288, 16384)));
        // Compressed frames are read with `pread`: not kept.
        let (b, h) = block(0, 100, &[(n, 50), (n, 30), (z, 20), (z, 40), (n, 9000)]);
        assert_eq!(ranges(&b, &h), vec![(0, 150)]);
        // A stored frame pages away from the head is a range of its own; the
        // data pages start after it.
        let (b, h) = block(0, 100, &[(n, 50), (z, 10_000), (n, 20), (n, 40), (n, 9000)]);
        assert_eq!(ranges(&b, &h), vec![(0, 150), (10_150, 10_210)]);
        assert_eq!(data_pages(&b, Some(&h)), Some((12288, 16384)));
        // Empty frames (no metadata) add nothing; no header, no range.
        let (b, h) = block(0, 100, &[(n, 50), (n, 0), (n, 0), (n, 0)]);
        assert_eq!(ranges(&b, &h), vec![(0, 150)]);
        let mut none = Vec::new();
        keep_ranges(&b, None, |r| none.push(r));
        assert!(none.is_empty());
    }

    #[test]
    fn page_gaps_leave_every_page_with_a_kept_byte() {
        // Nothing kept: every whole page goes, the partial last one stays.
        assert_eq!(page_gaps(0, 10_000, vec![], 4096), vec![(0, 8192)]);
        // A kept range inside page 1 keeps that page only.
        assert_eq!(
            page_gaps(0, 5 * 4096, vec![(4100, 4200)], 4096),
            vec![(0, 4096), (8192, 5 * 4096)]
        );
        // Ranges out of order, overlapping, and one spanning a boundary.
        assert_eq!(
            page_gaps(
                0,
                10 * 4096,
                vec![(6 * 4096 + 10, 7 * 4096 + 1), (100, 200), (150, 4096)],
                4096
            ),
            vec![(4096, 6 * 4096), (8 * 4096, 10 * 4096)]
        );
        // A range reaching the end leaves nothing after it.
        assert_eq!(
            page_gaps(0, 3 * 4096, vec![(4096, 3 * 4096)], 4096),
            vec![(0, 4096)]
        );
    }

    /// A mapped file of `pages` pages, every page touched (resident).
    fn touched_map(pages: usize) -> (tempfile::NamedTempFile, Mmap) {
        use std::io::Write;
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&vec![7u8; pages * PAGE]).unwrap();
        f.flush().unwrap();
        // SAFETY: a private temporary file nobody else writes.
        let map = unsafe { Mmap::map(f.as_file()).unwrap() };
        let sum: u64 = map.iter().step_by(PAGE).map(|&b| u64::from(b)).sum();
        assert_eq!(sum, 7 * pages as u64);
        (f, map)
    }

    #[test]
    fn ranges_released_together_leave_the_rest_mapped() {
        let (_f, map) = touched_map(64);
        assert_eq!(mapped_rss(&map), 64 * PAGE);
        release_many(&map, &[(0, 16 * PAGE), (32 * PAGE, 48 * PAGE)]);
        assert_eq!(mapped_rss(&map), 32 * PAGE);
        // The data is still there (faulted back from the page cache).
        assert!(map.iter().all(|&b| b == 7));
    }

    #[test]
    fn the_opening_drops_again_what_was_mapped_back_after_its_drops() {
        let (_f, map) = touched_map(32);
        let mut opening = OpeningRelease::new();
        // Kept: pages 2–3 and a byte of page 20.
        opening.keep((2 * PAGE + 10, 4 * PAGE));
        opening.keep((20 * PAGE + 5, 20 * PAGE + 6));
        opening.release(&map, 32 * PAGE);
        assert_eq!(mapped_rss(&map), 3 * PAGE);
        // Touching pages after the drops maps them again (as the kernel's
        // fault-around does around a kept page's first fault).
        assert!(map.iter().step_by(PAGE).all(|&b| b == 7));
        assert_eq!(mapped_rss(&map), 32 * PAGE);
        opening.release_again(&map, 32 * PAGE);
        assert_eq!(mapped_rss(&map), 3 * PAGE, "only the kept pages stay");
    }

    #[test]
    fn ranges_released_one_call_each_leave_the_rest_mapped() {
        let (_f, map) = touched_map(16);
        let iov = |from: usize, len: usize| libc::iovec {
            iov_base: map[from * PAGE..].as_ptr() as *mut libc::c_void,
            iov_len: len * PAGE,
        };
        release_each(&[iov(2, 4), iov(10, 2)]);
        assert_eq!(mapped_rss(&map), 10 * PAGE);
    }

    #[test]
    fn a_large_heap_leaves_less_room_for_data_pages() {
        const M: usize = 1 << 20;
        let r = |total: usize, file: usize| Resident {
            total: total * M,
            file: file * M,
        };
        let (kept, mapped, whole) = (100 * M, 256 * M, 320 * M);
        // Few data pages, small heap: nothing to drop.
        assert_eq!(r(250, 200).pressure(kept, mapped, whole), Pressure::None);
        // Data pages over their own budget, whatever the heap.
        assert_eq!(r(400, 357).pressure(kept, mapped, whole), Pressure::Mapped);
        // The same data pages with a large heap: over the whole budget.
        assert_eq!(r(421, 200).pressure(kept, mapped, whole), Pressure::Whole);
        assert_eq!(r(420, 200).pressure(kept, mapped, whole), Pressure::None);
    }

    #[test]
    fn the_heap_is_trimmed_at_most_once_a_second() {
        let gate = TrimGate::new();
        assert!(gate.admit(0));
        assert!(!gate.admit(0));
        assert!(!gate.admit(999));
        assert!(gate.admit(1000));
        assert!(!gate.admit(1500));
        assert!(gate.admit(5000));
    }

    #[test]
    fn the_resident_set_is_read_from_statm() {
        let r = resident_bytes().expect("/proc/self/statm");
        assert!(
            r.total > 0 && r.file <= r.total,
            "total {} file {}",
            r.total,
            r.file
        );
    }

    #[test]
    fn page_gaps_of_a_window_stay_inside_it() {
        // A window starting at page 2: nothing before it, and a kept range
        // running past the window's end keeps the page it starts in.
        assert_eq!(
            page_gaps(
                2 * 4096,
                6 * 4096 + 100,
                vec![(5 * 4096 + 7, 9 * 4096)],
                4096
            ),
            vec![(2 * 4096, 5 * 4096)]
        );
        // A kept range from before the window that reaches into it.
        assert_eq!(
            page_gaps(4 * 4096, 8 * 4096, vec![(3 * 4096, 4 * 4096 + 1)], 4096),
            vec![(5 * 4096, 8 * 4096)]
        );
    }
}
