//! The version-2 filters of up to 64 blocks of one size, laid side by
//! side so that one key is asked of all of them at once.
//!
//! A needle new to the process used to be asked of every block's filter in
//! turn: a cache miss (and, on a part's thousands of blocks, a TLB miss)
//! each, most of a first search's time. A [`BloomGroup`] keeps, for each
//! filter block (32 bytes), that block of every member next to each other:
//! a key's filter block in 64 members is 2 KiB read in order, and the
//! answer is a mask with one bit per member. The bits are the members'
//! own, copied: a member's answer is exactly its filter's.

use super::bloom::{block_of, key_pattern, Bloom, SlotView, BLOCK_BYTES, STRIDE};

/// Most members of a group (one bit of a mask each).
pub const GROUP_MEMBERS: usize = 64;

/// The filters of up to [`GROUP_MEMBERS`] blocks with the same number of
/// filter blocks, interleaved by filter block.
#[derive(Debug)]
pub struct BloomGroup {
    /// Filter blocks of every member.
    blocks: usize,
    /// Members the group has room for (at most [`GROUP_MEMBERS`]).
    capacity: usize,
    /// Members added.
    members: usize,
    /// `blocks × capacity` filter blocks: filter block `k` of member `j`
    /// at `k × capacity + j`, as four little-endian words.
    slots: Box<[[u64; 4]]>,
}

impl BloomGroup {
    /// An empty group with room for `capacity` (at most
    /// [`GROUP_MEMBERS`]) filters of `blocks` filter blocks each.
    pub fn new(blocks: usize, capacity: usize) -> Self {
        let capacity = capacity.min(GROUP_MEMBERS);
        BloomGroup {
            blocks,
            capacity,
            members: 0,
            slots: vec![[0u64; 4]; blocks * capacity].into_boxed_slice(),
        }
    }

    /// Bytes a group of `capacity` filters of `blocks` filter blocks holds.
    pub fn bytes_for(blocks: usize, capacity: usize) -> usize {
        blocks * capacity.min(GROUP_MEMBERS) * BLOCK_BYTES
    }

    /// Members added.
    pub fn len(&self) -> usize {
        self.members
    }

    /// Whether no member was added.
    pub fn is_empty(&self) -> bool {
        self.members == 0
    }

    /// The mask of the members added.
    pub fn members_mask(&self) -> u64 {
        match self.members {
            GROUP_MEMBERS => u64::MAX,
            n => (1u64 << n) - 1,
        }
    }

    /// Adds a member's filter bytes (exactly [`Self::filter_blocks`] × 32
    /// of them) as the next member; `false` (nothing added) when the group
    /// is full or the size differs.
    pub fn add(&mut self, filter: &[u8]) -> bool {
        if self.members == self.capacity || filter.len() != self.blocks * BLOCK_BYTES {
            return false;
        }
        let j = self.members;
        for (k, block) in filter.chunks_exact(BLOCK_BYTES).enumerate() {
            let slot = &mut self.slots[k * self.capacity + j];
            for (w, bytes) in slot.iter_mut().zip(block.chunks_exact(8)) {
                let mut word = [0u8; 8];
                word.copy_from_slice(bytes);
                *w = u64::from_le_bytes(word);
            }
        }
        self.members += 1;
        true
    }

    /// The members whose filter may hold key `h` (bit `j`: member `j`).
    #[inline]
    pub fn key_mask(&self, h: u64) -> u64 {
        if self.blocks == 0 {
            return 0;
        }
        let p = key_pattern(h);
        let k = block_of(h, self.blocks) * self.capacity;
        let mut mask = 0u64;
        for (j, s) in self.slots[k..k + self.members].iter().enumerate() {
            let hit = (s[0] & p[0] == p[0])
                & (s[1] & p[1] == p[1])
                & (s[2] & p[2] == p[2])
                & (s[3] & p[3] == p[3]);
            mask |= u64::from(hit) << j;
        }
        mask
    }

    /// Member `j`'s filter, read from its copy here (the same answers as
    /// its own bytes).
    pub fn bloom_of(&self, j: usize) -> Bloom<'_> {
        Bloom::of_copy(SlotView {
            slots: &self.slots,
            stride: self.capacity,
            blocks: if j < self.members { self.blocks } else { 0 },
            member: j,
        })
    }

    /// The members whose filter may hold every one of `keys`
    /// ([`super::bloom::Bloom::may_contain_keys`] of each member).
    pub fn keys_mask(&self, keys: &[u64]) -> u64 {
        let mut mask = self.members_mask();
        for &k in keys {
            if mask == 0 {
                break;
            }
            mask &= self.key_mask(k);
        }
        mask
    }

    /// The members for which
    /// [`super::bloom::Bloom::may_contain_stride_keys`] answers yes.
    pub fn stride_mask(&self, keys: &[u64], at_token_start: bool) -> u64 {
        let alignments = if at_token_start { 1 } else { STRIDE };
        let all = self.members_mask();
        let mut mask = 0u64;
        for o in 0..alignments {
            if mask == all {
                break;
            }
            let mut m = all & !mask;
            for &k in keys.iter().skip(o).step_by(STRIDE) {
                if m == 0 {
                    break;
                }
                m &= self.key_mask(k);
            }
            mask |= m;
        }
        mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::bloom::{Bloom, BloomBuilder, Scope};

    fn filter(tokens: &[String]) -> Vec<u8> {
        let mut b = BloomBuilder::default();
        for t in tokens {
            b.add_token(Scope::Column(3), t.as_bytes());
        }
        b.build()
    }

    #[test]
    fn a_group_answers_for_each_member_as_its_own_filter() {
        // Members of one size: the same number of keys each.
        let members: Vec<Vec<String>> = (0..40)
            .map(|m| (0..300).map(|i| format!("tok{m}x{i}")).collect())
            .collect();
        let filters: Vec<Vec<u8>> = members.iter().map(|t| filter(t)).collect();
        let blocks = filters[0].len() / BLOCK_BYTES;
        let mut group = BloomGroup::new(blocks, 40);
        for f in &filters {
            assert!(group.add(f));
        }
        assert!(!group.add(&filters[0]), "a full group takes no more");
        let mut other = BloomGroup::new(blocks, 2);
        assert!(
            !other.add(&filters[0][..BLOCK_BYTES]),
            "another size is refused"
        );
        assert_eq!(group.len(), 40);
        let mut asked = 0;
        for m in [0usize, 7, 39] {
            for i in (0..300).step_by(37) {
                let key = crate::block::bloom::RunKeys::new(
                    Scope::Column(3),
                    format!("tok{m}x{i}").as_bytes(),
                )
                .token;
                let mask = group.key_mask(key);
                assert_ne!(mask & 1 << m, 0, "a member's own key is found");
                for (j, f) in filters.iter().enumerate() {
                    let own = Bloom::new(f).may_contain_keys(&[key]);
                    assert_eq!(mask >> j & 1 == 1, own, "member {j}");
                    let copy = group.bloom_of(j).may_contain_keys(&[key]);
                    assert_eq!(copy, own, "member {j} read from its copy");
                    asked += 1;
                }
            }
        }
        assert!(asked > 0);
        // Stride answers equal the members' own, for both bounds.
        let keys: Vec<u64> = (0..9)
            .map(|i| 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i + 1))
            .collect();
        for start in [true, false] {
            let mask = group.stride_mask(&keys, start);
            for (j, f) in filters.iter().enumerate() {
                let own = Bloom::new(f).may_contain_stride_keys(&keys, start);
                assert_eq!(mask >> j & 1 == 1, own);
            }
        }
    }

    #[test]
    fn filters_of_about_as_many_keys_get_one_size() {
        use crate::block::bloom::filter_blocks;
        assert_eq!(filter_blocks(0), 0);
        assert_eq!(filter_blocks(10), 1);
        assert_eq!(filter_blocks(512), 16);
        assert_eq!(filter_blocks(600), 20);
        // 264 to 323 exact blocks (the varied workload's spread) land on
        // two sizes.
        let sizes: std::collections::BTreeSet<usize> =
            (264 * 32..=323 * 32).map(filter_blocks).collect();
        assert_eq!(sizes.into_iter().collect::<Vec<_>>(), vec![256, 320]);
        for n in 17usize..5000 {
            let exact = (n * 8).div_ceil(256);
            let got = filter_blocks(n);
            // Within an eighth of the exact size either way.
            assert!(
                got * 8 >= exact * 7 && got * 8 <= exact * 9,
                "{n}: {got} vs {exact}"
            );
        }
    }
}
