//! A part's blocks in groups judged together by a needle new to the part.
//!
//! When a part opens, its packed columnar blocks whose filters are sound
//! are sorted into groups of up to 64 that share their boundary bytes,
//! gram flags and filter size (the writer rounds filter sizes to a few
//! classes: `block::bloom::filter_blocks`), and each group's filters are
//! copied side by side ([`BloomGroup`]). A needle's first probe of a block
//! then judges the block's whole group in one walk
//! ([`NeedleProbe::may_match_group`]) and records every member's verdict in
//! the part's needle memo: the answers are the members' own, bit for bit,
//! at a fraction of the cache misses of asking 64 filters one by one.
//!
//! The copies cost as much memory as the filters, so the process keeps at
//! most [`BLOOM_GROUPS_MAX_BYTES`] of them; blocks of parts opened past
//! that are judged one by one, as before. A grouped block's filter pages
//! leave the part's mapping when it opens, and its readers read the copy
//! (`Part::bloom_view`).

use crate::block::bloom_group::{BloomGroup, GROUP_MEMBERS};
use crate::block::hash::FastMap;
use crate::block::packed_head::{PackedHead, ProbeColumn, WalkFlags};
use crate::block::prune::{GroupHead, NeedleProbe};
use crate::part::needle_memo::{self, Verdicts};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Most bytes of grouped filter copies the process keeps, over all parts.
pub const BLOOM_GROUPS_MAX_BYTES: usize = 48 << 20;

/// Fewest members a group is made for (a lone block is judged as before).
const MIN_MEMBERS: usize = 2;

/// Bytes of grouped filter copies held by open parts.
static HELD: AtomicUsize = AtomicUsize::new(0);

/// Bytes of grouped filter copies the process holds now.
pub fn held_bytes() -> usize {
    HELD.load(Ordering::Relaxed)
}

/// What a group's members share.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct GroupKey {
    flags: WalkFlags,
    filter_blocks: usize,
}

/// One group: its members, their columns' records by position, their
/// filters.
#[derive(Debug)]
struct Group {
    flags: WalkFlags,
    /// Block indexes, member by member.
    members: Vec<u32>,
    /// Per column position: the distinct records there and the members
    /// that have each.
    columns: Vec<Vec<(ProbeColumn, u64)>>,
    filters: BloomGroup,
}

/// A block offered for grouping.
pub struct Candidate<'a> {
    /// Its index in the part.
    pub block: u32,
    /// Its packed head.
    pub head: PackedHead<'a>,
    /// Its filter bytes (checked sound).
    pub filter: &'a [u8],
}

/// The groups of one part (see the module doc).
#[derive(Debug, Default)]
pub struct BloomGroups {
    groups: Vec<Group>,
    /// Per block: `group × 64 + member`, or `u32::MAX` when not grouped.
    place: Vec<u32>,
    /// Bytes of filter copies held (returned to the process's account on drop).
    bytes: usize,
}

impl Drop for BloomGroups {
    fn drop(&mut self) {
        HELD.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

impl BloomGroups {
    /// Groups `candidates` (blocks of a part of `blocks` blocks), within
    /// the process's budget.
    pub fn build<'a>(blocks: usize, candidates: impl Iterator<Item = Candidate<'a>>) -> Self {
        Self::build_within(blocks, candidates, BLOOM_GROUPS_MAX_BYTES)
    }

    /// [`Self::build`] with the process's budget `max_bytes`.
    pub fn build_within<'a>(
        blocks: usize,
        candidates: impl Iterator<Item = Candidate<'a>>,
        max_bytes: usize,
    ) -> Self {
        let mut by_key: FastMap<GroupKey, Vec<Candidate<'a>>> = FastMap::default();
        for c in candidates {
            if !c.head.block.packed || c.filter.is_empty() || c.filter.len() % 32 != 0 {
                continue;
            }
            let key = GroupKey {
                flags: c.head.block.flags(),
                filter_blocks: c.filter.len() / 32,
            };
            by_key.entry(key).or_default().push(c);
        }
        let mut out = BloomGroups {
            groups: Vec::new(),
            place: vec![u32::MAX; blocks],
            bytes: 0,
        };
        let mut keys: Vec<(GroupKey, Vec<Candidate<'a>>)> = by_key.into_iter().collect();
        // Larger sets first, then in block order: deterministic.
        keys.sort_by_key(|(_, c)| (std::cmp::Reverse(c.len()), c[0].block));
        for (key, members) in keys {
            for chunk in members.chunks(GROUP_MEMBERS) {
                if chunk.len() < MIN_MEMBERS {
                    continue;
                }
                let bytes = BloomGroup::bytes_for(key.filter_blocks, chunk.len());
                let before = HELD.fetch_add(bytes, Ordering::Relaxed);
                if before + bytes > max_bytes {
                    HELD.fetch_sub(bytes, Ordering::Relaxed);
                    return out;
                }
                out.bytes += bytes;
                out.push_group(key, chunk);
            }
        }
        out
    }

    fn push_group(&mut self, key: GroupKey, chunk: &[Candidate<'_>]) {
        let g = self.groups.len() as u32;
        let mut filters = BloomGroup::new(key.filter_blocks, chunk.len());
        let mut columns: Vec<Vec<(ProbeColumn, u64)>> = Vec::new();
        let mut members = Vec::with_capacity(chunk.len());
        for c in chunk {
            let j = members.len();
            if !filters.add(c.filter) {
                continue;
            }
            members.push(c.block);
            for pos in 0..c.head.column_count() {
                if columns.len() <= pos {
                    columns.push(Vec::new());
                }
                let record = c.head.record(pos);
                let at = &mut columns[pos];
                match at.iter_mut().find(|(r, _)| *r == record) {
                    Some((_, mask)) => *mask |= 1 << j,
                    None => at.push((record, 1 << j)),
                }
            }
            if let Some(p) = self.place.get_mut(c.block as usize) {
                *p = g * GROUP_MEMBERS as u32 + j as u32;
            }
        }
        self.groups.push(Group {
            flags: key.flags,
            members,
            columns,
            filters,
        });
    }

    /// Groups made.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Whether no group was made.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Blocks in some group.
    pub fn grouped_blocks(&self) -> usize {
        self.groups.iter().map(|g| g.members.len()).sum()
    }

    /// Bytes of filter copies held.
    pub fn heap_bytes(&self) -> usize {
        self.bytes
    }

    /// Whether block `block` is in a group.
    pub fn is_grouped(&self, block: u32) -> bool {
        self.place
            .get(block as usize)
            .is_some_and(|&p| p != u32::MAX)
    }

    /// Block `block`'s group and its place there, when it is in one: its
    /// filter can be read from the copy ([`BloomGroup::bloom_of`]).
    pub fn member(&self, block: u32) -> Option<(&BloomGroup, usize)> {
        let p = *self.place.get(block as usize)?;
        let g = self.groups.get(p as usize / GROUP_MEMBERS)?;
        Some((&g.filters, p as usize % GROUP_MEMBERS))
    }

    /// Judges the group of block `block` for `probe` (`prefixes`: the
    /// part's packed prefix bytes), records every member's verdict in
    /// `verdicts`, and answers for `block`; `None` when the block is in no
    /// group.
    pub fn judge(
        &self,
        block: u32,
        probe: &NeedleProbe,
        prefixes: &[u8],
        verdicts: &Verdicts,
    ) -> Option<bool> {
        let p = *self.place.get(block as usize)?;
        if p == u32::MAX {
            return None;
        }
        let g = &self.groups[p as usize / GROUP_MEMBERS];
        let mask = self.group_answer(g, probe, prefixes);
        for (j, &b) in g.members.iter().enumerate() {
            needle_memo::set(verdicts, b as usize, mask >> j & 1 == 1);
        }
        Some(mask >> (p as usize % GROUP_MEMBERS) & 1 == 1)
    }

    fn group_answer(&self, g: &Group, probe: &NeedleProbe, prefixes: &[u8]) -> u64 {
        let head = GroupHead {
            flags: g.flags,
            members: g.filters.members_mask(),
            columns: &g.columns,
            prefixes,
        };
        probe.may_match_group(&head, &g.filters)
    }

    /// Every grouped block's answer to `probe`, as `(block, answer)` (for
    /// tests and measuring tools).
    pub fn answers(&self, probe: &NeedleProbe, prefixes: &[u8]) -> Vec<(u32, bool)> {
        let mut out = Vec::new();
        for g in &self.groups {
            let mask = self.group_answer(g, probe, prefixes);
            out.extend(
                g.members
                    .iter()
                    .enumerate()
                    .map(|(j, &b)| (b, mask >> j & 1 == 1)),
            );
        }
        out
    }
}
