//! Structured metadata: the metadata frame's names and rows (per-row and
//! sets forms), and [`RowMetadata`].

use super::frames::BlockLog;
use super::{bad, BlockReader};
use crate::block::ints::IntsLayout;
use crate::block::layout::{BlockHeader, CODEC_NONE, FRAME_METADATA, METADATA_FORM_SETS};
use crate::block::varint::Cursor;
use crate::StorageError;

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

pub(super) fn read_metadata<'b>(
    c: &mut Cursor<'b>,
    rows: usize,
) -> Result<RowMetadata, StorageError> {
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

impl<'a> BlockReader<'a> {
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
}

#[cfg(test)]
mod tests {
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
