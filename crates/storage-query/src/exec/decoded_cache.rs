//! A bounded cache of decoded block columns and block directories (row
//! templates and row timestamps), kept from query to query.
//!
//! A metric query over `| json | level="error"` decodes, in every block it
//! opens, the row templates and timestamps and the one or two columns its labels come
//! from; a dashboard asks the same question again at every refresh. Parts
//! never change, so what a block decodes to never changes either: the
//! decoded forms are kept here, keyed by (part serial, block, column), and
//! a later query reads them instead of unpacking the block again. A part's
//! serial is unique for the process's life, so a merged-away part's entries
//! are never served for another part; they age out like any other.
//!
//! Each [`EmbeddedBackend`](crate::EmbeddedBackend) owns one
//! [`DecodedCache`]; its budget (`--decoded-cache-bytes`, via
//! [`QueryConfig`](crate::QueryConfig); 0 turns the cache off) bounds the
//! bytes kept. Eviction is a clock: entries are queued in insertion order,
//! and an entry read since it last reached the queue's head gets another
//! turn instead of leaving.
//!
//! The cache is [`SHARDS`] caches, a key's shard chosen by its hash, each
//! with its lock on cache lines of its own and an equal share of the
//! budget: every worker looks up each block it opens, and one lock taken
//! by all of them moved its line from core to core on every look-up
//! (`perf`, repeated `sum by (app) (count_over_time({app=~".+"} | json |
//! level="error" [1m]))` at 2M lines: ~20 % of the samples in the look-ups
//! and the contended lock).
//!
//! Admission has a doorkeeper: a decoded form is kept the second time it is
//! offered, not the first (a bit per hashed key remembers the first offer;
//! the bits are cleared when half are set). A query that runs once — an
//! ad-hoc search, the first query after a restart — then neither pushes out
//! what repeated queries use nor grows the heap by every column it decodes
//! (measured: the first run of `sum by (app) (count_over_time({app=~".+"} |
//! json | level="error" [1m]))` at 2M lines faulted in 10,400 fresh heap
//! pages with first-offer admission, 2,000 without); a dashboard's second
//! refresh keeps them, and the refreshes after it read them.

use runakefli_storage::block::encoding::Values;
use runakefli_storage::block::hash::FastMap;
use runakefli_storage::padded::Padded;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// Bytes charged per entry on top of its data (key, map slot, queue slot).
const ENTRY_OVERHEAD: usize = 96;

/// The `column` of a block's directory (row templates and timestamps).
const DIRECTORY: u32 = u32::MAX;

/// Independent caches, a key's chosen by its hash (a power of two).
const SHARDS: usize = 8;

/// Decoded block columns and directories within a budget of bytes, in
/// [`SHARDS`] shards. Each [`EmbeddedBackend`](crate::EmbeddedBackend) owns
/// one.
pub(crate) struct DecodedCache {
    /// The budget in bytes (0: off).
    budget: usize,
    shards: [Padded<Mutex<Option<Cache>>>; SHARDS],
}

/// A key's hash: its low bits choose the shard, its high bits the
/// doorkeeper's bit.
fn key_hash((part, block, column): Key) -> u64 {
    // splitmix64's finalizer: every output bit depends on every input bit.
    let mut z =
        part.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (u64::from(block) << 32 | u64::from(column));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Added to a column's number for the key of its shared-entry numbers.
const ENTRIES: u32 = 1 << 31;

/// Added to a column's number for the key of its values as doubles.
const NUMBERS: u32 = 1 << 30;

/// What a block column decodes to.
#[derive(Clone)]
enum Item {
    Values(Arc<Values>),
    /// A block's row templates and row timestamps (its directory frame
    /// decoded): a reader given them does not read the frame again.
    Directory(Arc<[u32]>, Arc<[i64]>),
    /// A shared column's dictionary entry per value (line filters judge
    /// these columns by entry, without decoding their values).
    Entries(Arc<[u32]>),
    /// A Decimal column's values as the doubles a float unwrap reads
    /// (`BlockReader::decimal_numbers`).
    Numbers(Arc<[f64]>),
}

/// (part serial, block index, column or [`DIRECTORY`]).
type Key = (u64, u32, u32);

#[derive(Default)]
struct Cache {
    map: FastMap<Key, (Item, usize, bool)>,
    queue: VecDeque<Key>,
    bytes: usize,
    seen: Doorkeeper,
}

/// Bits of a shard's [`Doorkeeper`] (128 KiB over all shards).
const DOORKEEPER_BITS: usize = (1 << 20) / SHARDS;

/// Keys offered once, as one bit per hashed key (a collision admits a key
/// on its first offer: harmless). Cleared when half the bits are set.
#[derive(Default)]
struct Doorkeeper {
    bits: Vec<u64>,
    set: usize,
}

impl Doorkeeper {
    /// Whether `key` was offered before; remembers it when not.
    fn offered_before(&mut self, key: Key) -> bool {
        if self.bits.is_empty() {
            self.bits = vec![0; DOORKEEPER_BITS / 64];
        }
        let h = key_hash(key);
        let bit = (h >> (64 - DOORKEEPER_BITS.trailing_zeros())) as usize;
        let (word, mask) = (bit / 64, 1u64 << (bit % 64));
        if self.bits[word] & mask != 0 {
            return true;
        }
        if self.set >= DOORKEEPER_BITS / 2 {
            self.bits.iter_mut().for_each(|w| *w = 0);
            self.set = 0;
        }
        self.bits[word] |= mask;
        self.set += 1;
        false
    }
}

/// A block's decoded directory: each row's template and timestamp.
pub type Directory = (Arc<[u32]>, Arc<[i64]>);

/// Bytes a plan is expected to keep per row it reads: its timestamp, its
/// template and about one column's value index.
const BYTES_PER_ROW: u64 = 16;

impl DecodedCache {
    /// A cache keeping at most `budget` bytes (0 turns it off).
    pub fn new(budget: usize) -> DecodedCache {
        DecodedCache {
            budget,
            shards: std::array::from_fn(|_| Padded(Mutex::new(None))),
        }
    }

    /// The budget of one shard.
    fn shard_budget(&self) -> usize {
        self.budget / SHARDS
    }

    /// The shard of `key`, locked.
    fn lock(&self, key: Key) -> std::sync::MutexGuard<'_, Option<Cache>> {
        self.lock_shard(key_hash(key) as usize % SHARDS)
    }

    fn lock_shard(&self, i: usize) -> std::sync::MutexGuard<'_, Option<Cache>> {
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The bytes kept now.
    pub fn bytes(&self) -> usize {
        (0..SHARDS)
            .map(|i| self.lock_shard(i).as_ref().map_or(0, |c| c.bytes))
            .sum()
    }

    /// Column `column` of block `block` of the part with serial `part`, when kept.
    pub fn values(&self, part: u64, block: u32, column: usize) -> Option<Arc<Values>> {
        match self.get((part, block, column as u32))? {
            Item::Values(v) => Some(v),
            _ => None,
        }
    }

    /// The shared-dictionary entry of each value of shared column `column`,
    /// when kept.
    pub fn entries(&self, part: u64, block: u32, column: usize) -> Option<Arc<[u32]>> {
        match self.get((part, block, column as u32 | ENTRIES))? {
            Item::Entries(e) => Some(e),
            _ => None,
        }
    }

    /// Keeps a shared column's entry numbers.
    pub fn keep_entries(&self, part: u64, block: u32, column: usize, e: &Arc<[u32]>) {
        self.put(
            (part, block, column as u32 | ENTRIES),
            Item::Entries(e.clone()),
            e.len() * 4,
        );
    }

    /// Decimal column `column`'s values as doubles, when kept.
    pub fn numbers(&self, part: u64, block: u32, column: usize) -> Option<Arc<[f64]>> {
        match self.get((part, block, column as u32 | NUMBERS))? {
            Item::Numbers(v) => Some(v),
            _ => None,
        }
    }

    /// Keeps a Decimal column's values as doubles.
    pub fn keep_numbers(&self, part: u64, block: u32, column: usize, v: &Arc<[f64]>) {
        self.put(
            (part, block, column as u32 | NUMBERS),
            Item::Numbers(v.clone()),
            v.len() * 8,
        );
    }

    /// Keeps a block column's decoded values.
    pub fn keep_values(&self, part: u64, block: u32, column: usize, v: &Arc<Values>) {
        let bytes = values_bytes(v);
        self.put((part, block, column as u32), Item::Values(v.clone()), bytes);
    }

    /// A block's row templates and row timestamps, when kept.
    pub fn directory(&self, part: u64, block: u32) -> Option<Directory> {
        match self.get((part, block, DIRECTORY))? {
            Item::Directory(tpl, ts) => Some((tpl, ts)),
            _ => None,
        }
    }

    /// Keeps a block's row templates and row timestamps.
    pub fn keep_directory(&self, part: u64, block: u32, tpl: &Arc<[u32]>, ts: &Arc<[i64]>) {
        self.put(
            (part, block, DIRECTORY),
            Item::Directory(tpl.clone(), ts.clone()),
            tpl.len() * 4 + ts.len() * 8,
        );
    }

    /// How many rows' decoded forms one plan may add: what half the budget
    /// holds. A plan adding more would evict its own entries before any later
    /// query could read them, and push out those of the smaller queries that do
    /// profit; a plan over more rows keeps its first blocks' (see
    /// `Context::admit_block`).
    pub fn admission_rows(&self) -> u64 {
        let budget = self.budget as u64;
        budget / 2 / BYTES_PER_ROW
    }

    /// A reader of block `block` of `part`, given the row templates and
    /// timestamps kept for it (then it does not read its directory frame);
    /// `true` with it when they were kept.
    pub fn open_reader<'p>(
        &self,
        part: &'p runakefli_storage::part::Part,
        block: &runakefli_storage::part::BlockRef,
        header: runakefli_storage::block::HeaderRef<'p>,
    ) -> Result<(runakefli_storage::block::BlockReader<'p>, bool), runakefli_storage::StorageError>
    {
        match self.directory(part.serial(), block.index) {
            Some((tpl, ts)) => Ok((part.reader_with_directory(block, header, tpl, ts)?, true)),
            None => Ok((part.reader_with(block, header)?, false)),
        }
    }

    /// Keeps `r`'s row templates and timestamps when it decoded them (and was
    /// not opened with them by [`Self::open_reader`]).
    pub fn keep_decoded(
        &self,
        part: &runakefli_storage::part::Part,
        block: &runakefli_storage::part::BlockRef,
        r: &runakefli_storage::block::BlockReader<'_>,
        primed: bool,
    ) {
        if primed {
            return;
        }
        // A log query past its cutoff decodes only the newest timestamps of a
        // block, and a metric query over whole blocks may not unpack the row
        // templates (`BlockReader::templates_with_rows`); what is missing is
        // decoded for the cache only on the block's second offer (the
        // doorkeeper's), so a query that runs once does not pay for it.
        if (r.has_timestamps() && r.has_row_templates())
            || self.offered_before((part.serial(), block.index, DIRECTORY))
        {
            self.keep_directory(
                part.serial(),
                block.index,
                r.row_templates_shared(),
                r.timestamps_shared(),
            );
        }
    }

    /// Whether `key`, not kept now, was offered before (the doorkeeper's
    /// answer, which remembers this offer when not).
    fn offered_before(&self, key: Key) -> bool {
        if self.budget == 0 {
            return false;
        }
        let mut c = self.lock(key);
        let cache = c.get_or_insert_with(Cache::default);
        !cache.map.contains_key(&key) && cache.seen.offered_before(key)
    }

    fn get(&self, key: Key) -> Option<Item> {
        if self.budget == 0 {
            return None;
        }
        let mut c = self.lock(key);
        let (item, _, used) = c.as_mut()?.map.get_mut(&key)?;
        *used = true;
        Some(item.clone())
    }

    fn put(&self, key: Key, item: Item, bytes: usize) {
        let budget = self.shard_budget();
        let bytes = bytes + ENTRY_OVERHEAD;
        // An entry larger than its shard's budget (an eighth of the whole)
        // would push out many.
        if budget == 0 || bytes > budget {
            return;
        }
        let mut c = self.lock(key);
        let cache = c.get_or_insert_with(Cache::default);
        if cache.map.contains_key(&key) || !cache.seen.offered_before(key) {
            return;
        }
        cache.map.insert(key, (item, bytes, false));
        cache.queue.push_back(key);
        cache.bytes += bytes;
        cache.shrink_to(budget);
    }
}

impl Cache {
    /// Evicts until at most `budget` bytes are kept.
    fn shrink_to(&mut self, budget: usize) {
        while self.bytes > budget {
            let Some(key) = self.queue.pop_front() else {
                break;
            };
            let Some(entry) = self.map.get_mut(&key) else {
                continue;
            };
            if entry.2 {
                entry.2 = false;
                self.queue.push_back(key);
                continue;
            }
            let (_, bytes, _) = self.map.remove(&key).expect("present");
            self.bytes -= bytes;
        }
    }
}

fn values_bytes(v: &Values) -> usize {
    match v {
        Values::Const { value, .. } => value.len(),
        Values::Dict { data, ends, idx } => data.len() + 4 * (ends.len() + idx.len()),
        Values::Flat { data, ends } => data.len() + 4 * ends.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_doorkeeper_admits_second_offers_and_forgets_when_half_full() {
        let mut d = Doorkeeper::default();
        assert!(!d.offered_before((1, 2, 3)));
        assert!(d.offered_before((1, 2, 3)));
        assert!(!d.offered_before((1, 2, 4)) && !d.offered_before((2, 2, 3)));
        // Distinct keys fill it (collisions aside) until it clears.
        let mut part = 10u64;
        loop {
            let before = d.set;
            d.offered_before((part, 0, 0));
            part += 1;
            if d.set < before {
                break;
            }
        }
        assert!(
            part as usize > DOORKEEPER_BITS / 2,
            "cleared only when half full"
        );
        assert!(!d.offered_before((1, 2, 3)), "forgotten after the clear");
    }

    #[test]
    fn keeps_evicts_by_clock_and_turns_off() {
        let budget = SHARDS * 8 * 1024;
        let c = DecodedCache::new(budget);
        // 50 rows: 696 bytes with the overhead, under a shard's budget.
        let ts: Arc<[i64]> = (0..50).collect::<Vec<i64>>().into();
        let tpl: Arc<[u32]> = vec![0; 50].into();
        // Kept on the second offer, not the first.
        c.keep_directory(7, 1, &tpl, &ts);
        assert!(c.directory(7, 1).is_none(), "offered once: not kept");
        c.keep_directory(7, 1, &tpl, &ts);
        let (got_tpl, got_ts) = c.directory(7, 1).expect("kept");
        assert_eq!((&got_tpl[..], &got_ts[..]), (&tpl[..], &ts[..]));
        assert!(c.directory(7, 2).is_none() && c.values(7, 1, 0).is_none());
        let v = Arc::new(Values::Flat {
            data: b"abc".to_vec(),
            ends: vec![1, 3],
        });
        c.keep_values(7, 1, 0, &v);
        c.keep_values(7, 1, 0, &v);
        assert!(c.values(7, 1, 0).is_some_and(|got| Arc::ptr_eq(&got, &v)));
        // A column's entry numbers are kept apart from its values.
        let e: Arc<[u32]> = vec![3, 1, 3].into();
        assert!(c.entries(7, 1, 0).is_none());
        c.keep_entries(7, 1, 0, &e);
        c.keep_entries(7, 1, 0, &e);
        assert_eq!(c.entries(7, 1, 0).as_deref(), Some(&[3, 1, 3][..]));
        assert!(c.values(7, 1, 0).is_some_and(|got| Arc::ptr_eq(&got, &v)));
        assert!(c.entries(7, 1, 1).is_none() && c.values(7, 1, 1).is_none());
        // Filling the budget evicts what is not read again (an entry read
        // since it was queued gets one more turn first).
        for b in 10..2000 {
            c.keep_directory(7, b, &tpl, &ts);
            c.keep_directory(7, b, &tpl, &ts);
        }
        assert!(c.bytes() <= budget);
        // Every shard holds entries (the keys spread over them), none past
        // its share of the budget.
        for i in 0..SHARDS {
            let kept = c.lock_shard(i).as_ref().map_or(0, |c| c.bytes);
            assert!(
                kept > 0 && kept <= budget / SHARDS,
                "shard {i}: {kept} bytes"
            );
        }
        assert!(c.values(7, 1, 0).is_none(), "not read again: evicted");
        let off = DecodedCache::new(0);
        off.keep_directory(7, 1, &tpl, &ts);
        off.keep_directory(7, 1, &tpl, &ts);
        assert!(off.directory(7, 1).is_none() && off.bytes() == 0);
    }
}
