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
//! The budget (`--decoded-cache-bytes`, 0 turns the cache off) bounds the
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

use crate::block::encoding::Values;
use crate::block::hash::FastMap;
use crate::padded::Padded;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Default budget: 64 MiB.
pub const DEFAULT_BUDGET_BYTES: usize = 64 << 20;

/// Bytes charged per entry on top of its data (key, map slot, queue slot).
const ENTRY_OVERHEAD: usize = 96;

/// The `column` of a block's directory (row templates and timestamps).
const DIRECTORY: u32 = u32::MAX;

/// Independent caches, a key's chosen by its hash (a power of two).
const SHARDS: usize = 8;

static BUDGET: Padded<AtomicUsize> = Padded(AtomicUsize::new(DEFAULT_BUDGET_BYTES));
static CACHE: [Padded<Mutex<Option<Cache>>>; SHARDS] = [const { Padded(Mutex::new(None)) }; SHARDS];

/// The budget of one shard.
fn shard_budget() -> usize {
    BUDGET.load(Ordering::Relaxed) / SHARDS
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

/// The shard of `key`, locked.
fn lock(key: Key) -> std::sync::MutexGuard<'static, Option<Cache>> {
    lock_shard(key_hash(key) as usize % SHARDS)
}

fn lock_shard(i: usize) -> std::sync::MutexGuard<'static, Option<Cache>> {
    CACHE[i].lock().unwrap_or_else(|e| e.into_inner())
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

/// Sets the budget in bytes (0 turns the cache off and empties it).
pub fn set_budget(bytes: usize) {
    BUDGET.store(bytes, Ordering::Relaxed);
    for i in 0..SHARDS {
        let mut c = lock_shard(i);
        match c.as_mut() {
            Some(cache) if bytes > 0 => cache.shrink_to(bytes / SHARDS),
            _ => *c = None,
        }
    }
}

/// The bytes kept now.
#[cfg(test)]
fn bytes() -> usize {
    (0..SHARDS)
        .map(|i| lock_shard(i).as_ref().map_or(0, |c| c.bytes))
        .sum()
}

/// Column `column` of block `block` of the part with serial `part`, when kept.
pub fn values(part: u64, block: u32, column: usize) -> Option<Arc<Values>> {
    match get((part, block, column as u32))? {
        Item::Values(v) => Some(v),
        _ => None,
    }
}

/// The shared-dictionary entry of each value of shared column `column`,
/// when kept.
pub fn entries(part: u64, block: u32, column: usize) -> Option<Arc<[u32]>> {
    match get((part, block, column as u32 | ENTRIES))? {
        Item::Entries(e) => Some(e),
        _ => None,
    }
}

/// Keeps a shared column's entry numbers.
pub fn keep_entries(part: u64, block: u32, column: usize, e: &Arc<[u32]>) {
    put(
        (part, block, column as u32 | ENTRIES),
        Item::Entries(e.clone()),
        e.len() * 4,
    );
}

/// Decimal column `column`'s values as doubles, when kept.
pub fn numbers(part: u64, block: u32, column: usize) -> Option<Arc<[f64]>> {
    match get((part, block, column as u32 | NUMBERS))? {
        Item::Numbers(v) => Some(v),
        _ => None,
    }
}

/// Keeps a Decimal column's values as doubles.
pub fn keep_numbers(part: u64, block: u32, column: usize, v: &Arc<[f64]>) {
    put(
        (part, block, column as u32 | NUMBERS),
        Item::Numbers(v.clone()),
        v.len() * 8,
    );
}

/// Keeps a block column's decoded values.
pub fn keep_values(part: u64, block: u32, column: usize, v: &Arc<Values>) {
    let bytes = values_bytes(v);
    put((part, block, column as u32), Item::Values(v.clone()), bytes);
}

/// A block's decoded directory: each row's template and timestamp.
pub type Directory = (Arc<[u32]>, Arc<[i64]>);

/// A block's row templates and row timestamps, when kept.
pub fn directory(part: u64, block: u32) -> Option<Directory> {
    match get((part, block, DIRECTORY))? {
        Item::Directory(tpl, ts) => Some((tpl, ts)),
        _ => None,
    }
}

/// Keeps a block's row templates and row timestamps.
pub fn keep_directory(part: u64, block: u32, tpl: &Arc<[u32]>, ts: &Arc<[i64]>) {
    put(
        (part, block, DIRECTORY),
        Item::Directory(tpl.clone(), ts.clone()),
        tpl.len() * 4 + ts.len() * 8,
    );
}

/// Bytes a plan is expected to keep per row it reads: its timestamp, its
/// template and about one column's value index.
const BYTES_PER_ROW: u64 = 16;

/// How many rows' decoded forms one plan may add: what half the budget
/// holds. A plan adding more would evict its own entries before any later
/// query could read them, and push out those of the smaller queries that do
/// profit; a plan over more rows keeps its first blocks' (see
/// `Context::admit_block`).
pub fn admission_rows() -> u64 {
    let budget = BUDGET.load(Ordering::Relaxed) as u64;
    budget / 2 / BYTES_PER_ROW
}

/// A reader of block `block` of `part`, given the row templates and
/// timestamps kept for it (then it does not read its directory frame);
/// `true` with it when they were kept.
pub(super) fn open_reader<'p>(
    part: &'p crate::part::Part,
    block: &crate::part::BlockRef,
    header: crate::block::HeaderRef<'p>,
) -> Result<(crate::block::BlockReader<'p>, bool), crate::StorageError> {
    match directory(part.serial(), block.index) {
        Some((tpl, ts)) => Ok((part.reader_with_directory(block, header, tpl, ts)?, true)),
        None => Ok((part.reader_with(block, header)?, false)),
    }
}

/// Keeps `r`'s row templates and timestamps when it decoded them (and was
/// not opened with them by [`open_reader`]).
pub(super) fn keep_decoded(
    part: &crate::part::Part,
    block: &crate::part::BlockRef,
    r: &crate::block::BlockReader<'_>,
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
        || offered_before((part.serial(), block.index, DIRECTORY))
    {
        keep_directory(
            part.serial(),
            block.index,
            r.row_templates_shared(),
            r.timestamps_shared(),
        );
    }
}

/// Whether `key`, not kept now, was offered before (the doorkeeper's
/// answer, which remembers this offer when not).
fn offered_before(key: Key) -> bool {
    if BUDGET.load(Ordering::Relaxed) == 0 {
        return false;
    }
    let mut c = lock(key);
    let cache = c.get_or_insert_with(Cache::default);
    !cache.map.contains_key(&key) && cache.seen.offered_before(key)
}

fn get(key: Key) -> Option<Item> {
    if BUDGET.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let mut c = lock(key);
    let (item, _, used) = c.as_mut()?.map.get_mut(&key)?;
    *used = true;
    Some(item.clone())
}

fn put(key: Key, item: Item, bytes: usize) {
    let budget = shard_budget();
    let bytes = bytes + ENTRY_OVERHEAD;
    // An entry larger than its shard's budget (an eighth of the whole)
    // would push out many.
    if budget == 0 || bytes > budget {
        return;
    }
    let mut c = lock(key);
    let cache = c.get_or_insert_with(Cache::default);
    if cache.map.contains_key(&key) || !cache.seen.offered_before(key) {
        return;
    }
    cache.map.insert(key, (item, bytes, false));
    cache.queue.push_back(key);
    cache.bytes += bytes;
    cache.shrink_to(budget);
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

    /// The cache is process-wide: these steps run as one test.
    #[test]
    fn keeps_evicts_by_clock_and_turns_off() {
        set_budget(0);
        let budget = SHARDS * 8 * 1024;
        set_budget(budget);
        // 50 rows: 696 bytes with the overhead, under a shard's budget.
        let ts: Arc<[i64]> = (0..50).collect::<Vec<i64>>().into();
        let tpl: Arc<[u32]> = vec![0; 50].into();
        // Kept on the second offer, not the first.
        keep_directory(7, 1, &tpl, &ts);
        assert!(directory(7, 1).is_none(), "offered once: not kept");
        keep_directory(7, 1, &tpl, &ts);
        let (got_tpl, got_ts) = directory(7, 1).expect("kept");
        assert_eq!((&got_tpl[..], &got_ts[..]), (&tpl[..], &ts[..]));
        assert!(directory(7, 2).is_none() && values(7, 1, 0).is_none());
        let v = Arc::new(Values::Flat {
            data: b"abc".to_vec(),
            ends: vec![1, 3],
        });
        keep_values(7, 1, 0, &v);
        keep_values(7, 1, 0, &v);
        assert!(values(7, 1, 0).is_some_and(|got| Arc::ptr_eq(&got, &v)));
        // A column's entry numbers are kept apart from its values.
        let e: Arc<[u32]> = vec![3, 1, 3].into();
        assert!(entries(7, 1, 0).is_none());
        keep_entries(7, 1, 0, &e);
        keep_entries(7, 1, 0, &e);
        assert_eq!(entries(7, 1, 0).as_deref(), Some(&[3, 1, 3][..]));
        assert!(values(7, 1, 0).is_some_and(|got| Arc::ptr_eq(&got, &v)));
        assert!(entries(7, 1, 1).is_none() && values(7, 1, 1).is_none());
        // Filling the budget evicts what is not read again (an entry read
        // since it was queued gets one more turn first).
        for b in 10..2000 {
            keep_directory(7, b, &tpl, &ts);
            keep_directory(7, b, &tpl, &ts);
        }
        assert!(bytes() <= budget);
        // Every shard holds entries (the keys spread over them), none past
        // its share of the budget.
        for i in 0..SHARDS {
            let kept = lock_shard(i).as_ref().map_or(0, |c| c.bytes);
            assert!(
                kept > 0 && kept <= budget / SHARDS,
                "shard {i}: {kept} bytes"
            );
        }
        assert!(values(7, 1, 0).is_none(), "not read again: evicted");
        set_budget(0);
        assert!(directory(7, 1).is_none() && bytes() == 0);
        set_budget(DEFAULT_BUDGET_BYTES);
    }
}
