//! The directory frame: reading it (version 2: row templates and
//! timestamps left in place; version 1: the whole block's layout), and
//! checking it against the header once per block ([`check_directory`]).

use super::frames::{read_frame, BlockLog, FrameRef};
use super::metadata::read_metadata;
use super::templates::Template;
use super::timestamps::{read_row_timestamps, TsLayout};
use super::{bad, BlockReader, ColumnDir};
use crate::block::encoding::{Encoding, Stats};
use crate::block::ints::IntsLayout;
use crate::block::layout::{BlockHeader, FRAME_DIRECTORY};
use crate::block::shared::SharedDicts;
use crate::block::varint::Cursor;
use crate::StorageError;

/// Largest offset or length accepted in the directory.
const MAX: usize = crate::block::layout::MAX_FRAME_RAW;

/// In a block's verification flags (bits 0..63: frames whose checksum
/// matched): its version-2 directory passed every check against the header
/// once, so later readers of the same bytes skip the per-row counts.
pub(super) const DIRECTORY_CHECKED: u64 = 1 << 63;

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
        if rows > crate::block::layout::MAX_ROWS {
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

impl<'a> BlockReader<'a> {
    pub(super) fn read_directory_v2(&mut self, frame: FrameRef<'a>) -> Result<(), StorageError> {
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

    pub(super) fn read_directory_v1(&mut self, frame0: &[u8]) -> Result<(), StorageError> {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::{BlockBuilder, HeaderRef};

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
