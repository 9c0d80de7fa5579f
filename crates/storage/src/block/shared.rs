//! Part-level shared dictionaries: string values that recur across the
//! blocks of one part (messages, paths, user agents, callers) are stored
//! once per part, and a block's column refers to them by id (encoding
//! [`Encoding::Shared`](super::Encoding::Shared)).
//!
//! This saves disk, and it lets a query test a needle once per distinct value
//! of the part instead of once per block, and read a block's column without
//! decompressing the shared strings at all (only the block's own values are
//! in a compressed frame; see `FORMAT.md`).
//!
//! The writer learns which values recur while the part is written, in one
//! pass and with bounded memory: a value is promoted into the part's
//! dictionary the second time a block holds it (the first block keeps its
//! copy). Candidates are remembered by hash only, a bounded number per
//! column; dictionaries have a bounded size.

use super::hash::FastMap;
use super::varint::{put_bytes, put_uvarint, Cursor};
use crate::StorageError;
use xxhash_rust::xxh3::xxh3_64;

/// Longest value a dictionary takes.
pub const MAX_VALUE_LEN: usize = 1024;
/// Most bytes of values in one dictionary.
pub const MAX_DICT_BYTES: usize = 8 << 20;
/// Most entries in one dictionary.
pub const MAX_DICT_ENTRIES: usize = 1 << 20;
/// Most dictionaries in a part.
pub const MAX_DICTS: usize = 4096;
/// Candidates (values seen in one block so far) remembered per column;
/// when more arrive, all of them are forgotten and learning starts over.
const MAX_CANDIDATES: usize = 1 << 17;
/// Most bytes a decoded dictionary section may declare (hostile input).
const MAX_SECTION_RAW: usize = 1 << 30;

/// One column's shared values, by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedDict {
    name: Box<[u8]>,
    /// Entries are skeletons (see `digits.rs`), not values.
    skeletons: bool,
    data: Vec<u8>,
    ends: Vec<u32>,
}

impl SharedDict {
    /// The column (dotted field path) the dictionary serves.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// True when the entries are skeletons.
    pub fn holds_skeletons(&self) -> bool {
        self.skeletons
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when the dictionary has no entries.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Entry `id`, or `None` when out of range.
    #[inline]
    pub fn get(&self, id: u32) -> Option<&[u8]> {
        let i = id as usize;
        let end = *self.ends.get(i)? as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        Some(&self.data[start..end])
    }

    /// False only when no entry contains `s` (a non-empty byte string):
    /// one search over the entries' bytes, where a match across two
    /// neighbouring entries counts too. Skeleton entries are searched for
    /// each digit-free piece of `s` (every value holding `s` holds each
    /// piece in its skeleton).
    pub fn may_hold(&self, s: &[u8]) -> bool {
        let has = |p: &[u8]| memchr::memmem::find(&self.data, p).is_some();
        if !self.skeletons {
            return has(s);
        }
        match super::digits::skeleton_pieces(s) {
            Some(pieces) => pieces.into_iter().all(has),
            None => true,
        }
    }

    fn push(&mut self, v: &[u8]) -> u32 {
        self.data.extend_from_slice(v);
        self.ends.push(self.data.len() as u32);
        self.ends.len() as u32 - 1
    }
}

/// The shared dictionaries of one part, by dictionary id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedDicts {
    dicts: Vec<SharedDict>,
}

impl SharedDicts {
    /// Dictionary `d`, or `None` when out of range.
    pub fn get(&self, d: u32) -> Option<&SharedDict> {
        self.dicts.get(d as usize)
    }

    /// Number of dictionaries.
    pub fn len(&self) -> usize {
        self.dicts.len()
    }

    /// True when the part has no shared dictionary.
    pub fn is_empty(&self) -> bool {
        self.dicts.is_empty()
    }

    /// All dictionaries, by id.
    pub fn iter(&self) -> impl Iterator<Item = &SharedDict> {
        self.dicts.iter()
    }

    /// Bytes the dictionaries hold in memory.
    pub fn memory_bytes(&self) -> usize {
        self.dicts
            .iter()
            .map(|d| d.data.len() + d.ends.len() * 4 + d.name.len())
            .sum()
    }

    /// The uncompressed section body (see `FORMAT.md`).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.memory_bytes());
        put_uvarint(&mut out, self.dicts.len() as u64);
        for d in &self.dicts {
            put_bytes(&mut out, &d.name);
            out.push(u8::from(d.skeletons));
            put_uvarint(&mut out, d.ends.len() as u64);
            let mut start = 0u32;
            for &e in &d.ends {
                put_uvarint(&mut out, u64::from(e - start));
                start = e;
            }
            out.extend_from_slice(&d.data);
        }
        out
    }

    /// Decodes a section body written by [`SharedDicts::encode`].
    pub fn decode(src: &[u8]) -> Result<SharedDicts, StorageError> {
        let mut c = Cursor::new(src, "shared dictionaries");
        let n = c.len(MAX_DICTS)?;
        let mut dicts = Vec::with_capacity(n);
        for _ in 0..n {
            let name = c.bytes()?.into();
            let skeletons = match c.u8()? {
                0 => false,
                1 => true,
                _ => return Err(c.err("unknown dictionary kind")),
            };
            let entries = c.len(MAX_DICT_ENTRIES.min(c.remaining()))?;
            let mut ends = Vec::with_capacity(entries);
            let mut total = 0usize;
            for _ in 0..entries {
                total += c.len(MAX_VALUE_LEN)?;
                ends.push(total as u32);
            }
            if total > MAX_DICT_BYTES {
                return Err(c.err("dictionary too large"));
            }
            let data = c.take(total)?.to_vec();
            dicts.push(SharedDict {
                name,
                skeletons,
                data,
                ends,
            });
        }
        if !c.is_empty() {
            return Err(c.err("trailing bytes"));
        }
        Ok(SharedDicts { dicts })
    }

    /// Writes the section as stored in a part: `u32 raw_len`, `u32
    /// stored_len`, the zstd frame (level `level`), `u32` crc32 of the frame.
    pub fn write_section(&self, level: i32, dst: &mut Vec<u8>) -> Result<(), StorageError> {
        let raw = self.encode();
        let stored = zstd::bulk::compress(&raw, level)
            .map_err(|e| StorageError::corrupt("shared dictionaries", format!("zstd: {e}")))?;
        dst.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        dst.extend_from_slice(&(stored.len() as u32).to_le_bytes());
        dst.extend_from_slice(&stored);
        dst.extend_from_slice(&crc32fast::hash(&stored).to_le_bytes());
        Ok(())
    }

    /// Reads a section written by [`SharedDicts::write_section`]; `src` must
    /// be exactly the section.
    pub fn read_section(src: &[u8]) -> Result<SharedDicts, StorageError> {
        let bad = |d: &str| StorageError::corrupt("shared dictionaries", d);
        if src.len() < 12 {
            return Err(bad("section too short"));
        }
        let raw_len = u32::from_le_bytes(src[0..4].try_into().expect("4")) as usize;
        let stored_len = u32::from_le_bytes(src[4..8].try_into().expect("4")) as usize;
        if raw_len > MAX_SECTION_RAW || stored_len + 12 != src.len() {
            return Err(bad("bad section lengths"));
        }
        let stored = &src[8..8 + stored_len];
        let crc = u32::from_le_bytes(src[8 + stored_len..].try_into().expect("4"));
        if crc32fast::hash(stored) != crc {
            return Err(bad("checksum mismatch"));
        }
        let raw =
            zstd::bulk::decompress(stored, raw_len).map_err(|e| bad(&format!("zstd: {e}")))?;
        if raw.len() != raw_len {
            return Err(bad("size mismatch"));
        }
        SharedDicts::decode(&raw)
    }
}

/// One column's learning state while a part is written.
struct Learner {
    dict: SharedDict,
    /// Hash of each entry -> id.
    ids: FastMap<u64, u32>,
    /// Hash of values seen in exactly one block so far -> that block.
    seen: FastMap<u64, u32>,
    /// No more entries fit.
    full: bool,
}

/// Builds a part's shared dictionaries while its blocks are written.
#[derive(Default)]
pub struct SharedDictWriter {
    by_name: FastMap<(Box<[u8]>, bool), u32>,
    learners: Vec<Learner>,
    /// Serial number of the block being built.
    block: u32,
    bytes: usize,
}

impl SharedDictWriter {
    /// A writer with no dictionaries yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts the next block (values seen from now on are in a new block).
    pub fn next_block(&mut self) {
        self.block = self.block.wrapping_add(1);
    }

    /// The dictionary id for column `name`; `None` when the part has as many
    /// dictionaries as it may.
    pub fn column(&mut self, name: &[u8]) -> Option<u32> {
        self.dict_for(name, false)
    }

    /// The dictionary of skeletons for column `name` (see [`Self::column`]).
    pub fn skeleton_column(&mut self, name: &[u8]) -> Option<u32> {
        self.dict_for(name, true)
    }

    fn dict_for(&mut self, name: &[u8], skeletons: bool) -> Option<u32> {
        let key: (Box<[u8]>, bool) = (name.into(), skeletons);
        if let Some(&d) = self.by_name.get(&key) {
            return Some(d);
        }
        if self.learners.len() >= MAX_DICTS {
            return None;
        }
        let d = self.learners.len() as u32;
        self.learners.push(Learner {
            dict: SharedDict {
                name: name.into(),
                skeletons,
                ..SharedDict::default()
            },
            ids: FastMap::default(),
            seen: FastMap::default(),
            full: false,
        });
        self.by_name.insert(key, d);
        Some(d)
    }

    /// The id of `v` in dictionary `d`, promoting it when this is the
    /// second block to hold it; `None` when the block keeps its own copy.
    /// Call once per distinct value per block.
    pub fn resolve(&mut self, d: u32, v: &[u8]) -> Option<u32> {
        let l = self.learners.get_mut(d as usize)?;
        let h = xxh3_64(v);
        if let Some(&id) = l.ids.get(&h) {
            // A hash collision with another entry leaves the value local.
            return (l.dict.get(id) == Some(v)).then_some(id);
        }
        if l.full || v.len() > MAX_VALUE_LEN {
            return None;
        }
        match l.seen.get(&h) {
            Some(&b) if b != self.block => {
                l.seen.remove(&h);
                if l.dict.len() >= MAX_DICT_ENTRIES
                    || l.dict.data.len() + v.len() > MAX_DICT_BYTES
                    || self.bytes + v.len() > MAX_DICTS * 1024
                {
                    l.full = true;
                    l.seen = FastMap::default();
                    return None;
                }
                self.bytes += v.len();
                let id = l.dict.push(v);
                l.ids.insert(h, id);
                Some(id)
            }
            Some(_) => None,
            None => {
                if l.seen.len() >= MAX_CANDIDATES {
                    l.seen.clear();
                }
                l.seen.insert(h, self.block);
                None
            }
        }
    }

    /// The dictionaries learned, without the empty ones' entries (ids stay).
    pub fn finish(self) -> SharedDicts {
        SharedDicts {
            dicts: self.learners.into_iter().map(|l| l.dict).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_promoted_on_their_second_block() {
        let mut w = SharedDictWriter::new();
        let d = w.column(b"msg").unwrap();
        assert_eq!(w.column(b"msg"), Some(d));
        assert_eq!(w.resolve(d, b"hello"), None);
        assert_eq!(w.resolve(d, b"once"), None);
        w.next_block();
        assert_eq!(w.resolve(d, b"hello"), Some(0));
        w.next_block();
        assert_eq!(w.resolve(d, b"hello"), Some(0));
        assert_eq!(w.resolve(d, b"other"), None);
        let long = vec![b'x'; MAX_VALUE_LEN + 1];
        assert_eq!(w.resolve(d, &long), None);
        w.next_block();
        assert_eq!(w.resolve(d, &long), None);
        let dicts = w.finish();
        assert_eq!(dicts.get(d).unwrap().get(0), Some(&b"hello"[..]));
        assert_eq!(dicts.get(d).unwrap().len(), 1);
    }

    #[test]
    fn may_hold_is_false_only_when_no_entry_contains_the_stretch() {
        let mut w = SharedDictWriter::new();
        let d = w.column(b"msg").unwrap();
        let s = w.skeleton_column(b"path").unwrap();
        let skel = |v: &[u8]| {
            let mut out = Vec::new();
            let mut digits = crate::block::digits::DigitWriter::default();
            crate::block::digits::split(v, &mut out, &mut digits);
            out
        };
        for _ in 0..2 {
            for v in [&b"request completed"[..], b"connection timeout"] {
                w.resolve(d, v);
            }
            w.resolve(s, &skel(b"/api/v2/users/42"));
            w.next_block();
        }
        let dicts = w.finish();
        let values = dicts.get(d).unwrap();
        assert!(values.may_hold(b"timeout"));
        assert!(values.may_hold(b"completed"));
        assert!(!values.may_hold(b"refused"));
        let skeletons = dicts.get(s).unwrap();
        assert!(skeletons.holds_skeletons());
        // A stretch with digits is judged by its digit-free pieces.
        assert!(skeletons.may_hold(b"v7/users/1"));
        assert!(skeletons.may_hold(b"users"));
        assert!(!skeletons.may_hold(b"orders"));
        assert!(!skeletons.may_hold(b"v2/orders/1"));
    }

    #[test]
    fn section_round_trip_and_damage() {
        let mut w = SharedDictWriter::new();
        for name in [&b"a"[..], b"b.c"] {
            let d = w.column(name).unwrap();
            for b in 0..3 {
                for v in [&b"x"[..], b"", b"long value"] {
                    w.resolve(d, v);
                }
                if b < 2 {
                    w.next_block();
                }
            }
        }
        let dicts = w.finish();
        assert_eq!(dicts.len(), 2);
        assert_eq!(dicts.get(1).unwrap().len(), 3);
        let mut sec = Vec::new();
        dicts.write_section(3, &mut sec).unwrap();
        assert_eq!(SharedDicts::read_section(&sec).unwrap(), dicts);
        for i in 0..sec.len() {
            let mut bad = sec.clone();
            bad[i] ^= 0x10;
            assert!(SharedDicts::read_section(&bad).is_err(), "byte {i}");
        }
        assert!(SharedDicts::read_section(&sec[..sec.len() - 1]).is_err());
        assert!(SharedDicts::decode(&[1, 1, b'a', 0, 5, 1]).is_err());
        assert!(SharedDicts::decode(&[1, 1, b'a', 2, 0]).is_err());
        let mut w = SharedDictWriter::new();
        assert_ne!(w.column(b"m"), w.skeleton_column(b"m"));
        assert!(w.finish().get(1).unwrap().holds_skeletons());
    }
}
