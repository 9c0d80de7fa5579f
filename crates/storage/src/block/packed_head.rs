//! A block's header as a needle probe reads it, packed for a part's first
//! probe of thousands of blocks.
//!
//! A decoded [`BlockHeader`] lies scattered over the heap, and its column
//! heads span several cache lines each: a needle new to the process used to
//! miss on every one of them, block after block. A part keeps instead, per
//! block, a [`ProbeBlock`] and the ids of its columns' [`ProbeColumn`]
//! records, which are *interned* part-wide ([`PackedColumns`]): the blocks
//! of a part repeat a few hundred distinct column records (the 2M-line
//! varied workload: 152 distinct among 148,744 columns), so a block's
//! columns cost two bytes each, and all records fit the CPU's first-level
//! cache.

use super::encoding::Encoding;
use super::hash::FastMap;
use super::layout::{BlockHeader, ColumnHead};
use super::tokens::FEATURES;

/// What a needle probe reads of one column head, in 24 bytes (the
/// [`ColumnHead`] it comes from spans several cache lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProbeColumn {
    /// [`ColumnHead::alphabet`].
    pub alphabet: u64,
    /// [`ColumnHead::encoding`].
    pub encoding: Encoding,
    /// [`ColumnHead::classes`].
    pub classes: u8,
    /// [`ColumnHead::max_token_len`].
    pub max_token_len: u8,
    /// [`ColumnHead::has_grams`].
    pub has_grams: bool,
    /// [`ColumnHead::has_stride_grams`].
    pub has_stride_grams: bool,
    /// [`ColumnHead::feature_token_lens`].
    pub feature_token_lens: [u8; FEATURES],
    /// Where a PrefixedDecimal column's prefix is in its [`PackedColumns`]'
    /// prefix bytes (a length byte, then the prefix); 0 for others.
    pub prefix_at: u32,
}

impl ProbeColumn {
    /// The fields of `col` a probe reads; its prefix, if any, is to be
    /// placed by the caller ([`ProbeColumn::prefix_at`]).
    pub fn of(col: &ColumnHead<'_>) -> Self {
        ProbeColumn {
            alphabet: col.alphabet,
            encoding: col.encoding,
            classes: col.classes,
            max_token_len: col.max_token_len,
            has_grams: col.has_grams,
            has_stride_grams: col.has_stride_grams,
            feature_token_lens: col.feature_token_lens,
            prefix_at: 0,
        }
    }
}

/// What the needle walk reads of a block, or of a group's members, besides
/// its columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WalkFlags {
    /// [`BlockHeader::boundaries`].
    pub boundaries: u16,
    /// [`BlockHeader::has_grams`].
    pub has_grams: bool,
    /// [`BlockHeader::has_short_grams`].
    pub has_short_grams: bool,
}

/// What a needle probe reads of a block header besides its columns (the
/// default: a block without a packed head).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeBlock {
    /// The bloom section's place in the block's bytes.
    pub bloom_start: u32,
    /// Its end.
    pub bloom_end: u32,
    /// [`BlockHeader::boundaries`].
    pub boundaries: u16,
    /// [`BlockHeader::has_grams`].
    pub has_grams: bool,
    /// [`BlockHeader::has_short_grams`].
    pub has_short_grams: bool,
    /// Whether [`NeedleProbe::may_match_packed`] may judge the block from
    /// this and its [`ProbeColumn`]s: version 2, exact boundary bytes,
    /// bloom within `u32` (and, once packed, every prefix placed: see
    /// [`PackedColumns::pack`]). Other blocks are judged from their header.
    pub packed: bool,
}

impl ProbeBlock {
    /// The packed form of `header`.
    pub fn of(header: &BlockHeader<'_>) -> Self {
        let (start, end) = (
            u32::try_from(header.bloom.start),
            u32::try_from(header.bloom.end),
        );
        let packed = header.version >= 2
            && header.boundaries & (1 << 15) == 0
            && start.is_ok()
            && end.is_ok();
        ProbeBlock {
            bloom_start: start.unwrap_or(0),
            bloom_end: end.unwrap_or(0),
            boundaries: header.boundaries,
            has_grams: header.has_grams,
            has_short_grams: header.has_short_grams,
            packed,
        }
    }

    /// What the needle walk reads of the block besides its columns.
    pub fn flags(&self) -> WalkFlags {
        WalkFlags {
            boundaries: self.boundaries,
            has_grams: self.has_grams,
            has_short_grams: self.has_short_grams,
        }
    }

    /// The bloom section's bytes in the block's bytes `src`.
    pub fn bloom_bytes<'s>(&self, src: &'s [u8]) -> &'s [u8] {
        src.get(self.bloom_start as usize..self.bloom_end as usize)
            .unwrap_or(&[])
    }
}

/// A packed block head: the block's [`ProbeBlock`] and its columns'
/// interned [`ProbeColumn`]s.
#[derive(Clone, Copy, Debug)]
pub struct PackedHead<'a> {
    /// The block.
    pub block: ProbeBlock,
    /// Its columns' record ids, in header order.
    ids: &'a [u16],
    /// The part's records `ids` index.
    records: &'a [ProbeColumn],
    /// The prefix bytes the records' [`ProbeColumn::prefix_at`] point into.
    prefixes: &'a [u8],
}

impl PackedHead<'_> {
    /// The number of the block's columns.
    pub fn column_count(&self) -> usize {
        self.ids.len()
    }

    /// Column `c`'s record.
    #[inline]
    pub fn record(&self, c: usize) -> ProbeColumn {
        self.records[usize::from(self.ids[c])]
    }

    /// Column `c`'s PrefixedDecimal prefix (empty for other encodings).
    pub fn prefix_of(&self, c: usize) -> &[u8] {
        let at = self.record(c).prefix_at as usize;
        let len = self.prefixes.get(at).map_or(0, |&n| usize::from(n));
        self.prefixes.get(at + 1..at + 1 + len).unwrap_or(&[])
    }
}

/// The interned column records of a part's blocks (see the module doc):
/// filled block by block with [`PackedColumns::pack`], then frozen with
/// [`PackedColumns::freeze`].
#[derive(Debug)]
pub struct PackedColumns {
    /// The distinct records, by id.
    records: Vec<ProbeColumn>,
    /// Per column of every block, in block then header order: its record id.
    ids: Vec<u16>,
    /// Length-prefixed PrefixedDecimal prefixes, each stored once; starts
    /// with the empty prefix (a 0) every record without one points to.
    prefixes: Vec<u8>,
    /// While filling: record → id.
    record_ids: FastMap<ProbeColumn, u16>,
    /// While filling: prefix → its place in `prefixes`.
    prefix_places: FastMap<Vec<u8>, u32>,
}

impl Default for PackedColumns {
    fn default() -> Self {
        PackedColumns {
            records: Vec::new(),
            ids: Vec::new(),
            prefixes: vec![0],
            record_ids: FastMap::default(),
            prefix_places: FastMap::default(),
        }
    }
}

impl PackedColumns {
    /// Appends the ids of `header`'s columns (one per column, always, so a
    /// block's columns start where the columns of the blocks before it
    /// end); `false` when some column cannot be packed (a prefix longer
    /// than 255 bytes, or more distinct records or prefix bytes than ids
    /// can tell apart), and then the block is to be judged from its header.
    pub fn pack(&mut self, header: &BlockHeader<'_>) -> bool {
        let mut ok = true;
        for col in &header.columns {
            let mut record = ProbeColumn::of(col);
            if !col.prefix.is_empty() {
                match self.place_prefix(&col.prefix) {
                    Some(at) => record.prefix_at = at,
                    None => ok = false,
                }
            }
            let id = match self.record_ids.get(&record) {
                Some(&id) => Some(id),
                None => u16::try_from(self.records.len()).ok().inspect(|&id| {
                    self.records.push(record);
                    self.record_ids.insert(record, id);
                }),
            };
            ok &= id.is_some();
            self.ids.push(id.unwrap_or(0));
        }
        ok
    }

    /// Where `prefix` is (placed now if new); `None` when it cannot be.
    fn place_prefix(&mut self, prefix: &[u8]) -> Option<u32> {
        if let Some(&at) = self.prefix_places.get(prefix) {
            return Some(at);
        }
        let len = u8::try_from(prefix.len()).ok()?;
        let at = u32::try_from(self.prefixes.len()).ok()?;
        self.prefixes.push(len);
        self.prefixes.extend_from_slice(prefix);
        self.prefix_places.insert(prefix.to_vec(), at);
        Some(at)
    }

    /// Drops what only filling needs.
    pub fn freeze(&mut self) {
        self.record_ids = FastMap::default();
        self.prefix_places = FastMap::default();
        self.records.shrink_to_fit();
        self.ids.shrink_to_fit();
        self.prefixes.shrink_to_fit();
    }

    /// The packed head of a block whose columns are `from..to` of the
    /// packed ones.
    pub fn head(&self, block: ProbeBlock, from: usize, to: usize) -> Option<PackedHead<'_>> {
        Some(PackedHead {
            block,
            ids: self.ids.get(from..to)?,
            records: &self.records,
            prefixes: &self.prefixes,
        })
    }

    /// The prefix bytes the records' [`ProbeColumn::prefix_at`] point into.
    pub fn prefixes(&self) -> &[u8] {
        &self.prefixes
    }

    /// How many distinct records the part's columns have.
    pub fn distinct(&self) -> usize {
        self.records.len()
    }

    /// Bytes held (frozen), for the part's memory account.
    pub fn heap_bytes(&self) -> usize {
        self.records.capacity() * std::mem::size_of::<ProbeColumn>()
            + self.ids.capacity() * 2
            + self.prefixes.capacity()
    }
}
