//! Pruning: whether a block may match before its rows are read — the
//! line filters' bloom probes (and the part's kept needle verdicts) on the
//! block, and per column whether a value test can pass at all, judged from
//! the column's brief, head, shared dictionary and bloom fragments.

use super::{BlockEval, TemplateCache};
use crate::exec::needle::{TestKind, ValueTest};
use crate::exec::query::{CompiledQuery, FilterPlan};
use runakefli_storage::block::encoding::Encoding;
use runakefli_storage::block::layout::ColumnKind;
use runakefli_storage::block::prune::LazySources;
use runakefli_storage::StorageError;

/// Blocks a filter's bloom probes must judge before their pass rate counts.
const PROBE_TRIAL: u32 = 64;

/// Per line filter of a query, on one worker: how many blocks its bloom
/// probes judged and how many they let through. Probes that let nearly
/// every block through (a common word) cost more than they save, so they
/// stop; the exact evaluation of the block decides anyway.
#[derive(Default)]
pub struct ProbeStats {
    judged: Vec<(u32, u32)>,
}

impl ProbeStats {
    fn reserve(&mut self, filters: usize) {
        if self.judged.len() < filters {
            self.judged.resize(filters, (0, 0));
        }
    }

    fn worth_probing(&self, f: usize) -> bool {
        let (judged, passed) = self.judged[f];
        judged < PROBE_TRIAL || u64::from(passed) * 16 < u64::from(judged) * 15
    }

    fn note(&mut self, f: usize, passed: bool) {
        let s = &mut self.judged[f];
        s.0 = s.0.saturating_add(1);
        s.1 = s.1.saturating_add(u32::from(passed));
    }
}

/// A columnar block's header, when the query's line filters can match
/// any of its rows (judged from the bloom and column facts alone); `None`
/// when they cannot.
pub fn header_if_may_match<'p>(
    q: &CompiledQuery<'_>,
    part: &'p runakefli_storage::part::Part,
    b: &runakefli_storage::part::BlockRef,
    cache: &mut TemplateCache,
) -> Result<Option<runakefli_storage::block::HeaderRef<'p>>, StorageError> {
    use runakefli_storage::part::needle_memo;
    let h = part.header(b)?;
    let stats = &mut cache.probes;
    stats.reserve(q.filters.len());
    let probed = |stats: &ProbeStats, f: usize| {
        matches!(
            q.filters[f],
            FilterPlan::AnyOf { negated: false, .. } | FilterPlan::Test { negated: false, .. }
        ) && stats.worth_probing(f)
    };
    if !(0..q.filters.len()).any(|f| probed(stats, f)) {
        return Ok(Some(h));
    }
    // Verdicts the part kept from earlier probes answer without the bloom;
    // the bloom is checked and read only for a needle new to the block.
    let mut bloom: Option<(
        &[u8],
        Option<runakefli_storage::block::packed_head::PackedHead<'_>>,
    )> = None;
    let block = b.index as usize;
    let mut may = |n: usize, cache: &mut TemplateCache| -> Result<bool, StorageError> {
        let v = cache
            .verdicts
            .entry((part.serial(), n))
            .or_insert_with(|| part.needle_verdicts(q.probes[n].bytes()));
        match needle_memo::get(v, block) {
            needle_memo::NO => return Ok(false),
            needle_memo::MAYBE => return Ok(true),
            _ => {}
        }
        // A block in one of the part's filter groups is judged with its
        // whole group, which records every member's verdict.
        if let Some(ok) = part.judge_needle_group(b.index, &q.probes[n], v) {
            return Ok(ok);
        }
        // A packed head answers without touching the header or its
        // column heads (a cache miss each on a first query); looked up with
        // the bloom, once per block.
        let (bits, packed) = match bloom {
            Some(found) => found,
            None => {
                part.check_bloom(b, &h)?;
                let src = part.block_self_checked(b)?;
                let packed = part.packed_head(b.index);
                let bits = match &packed {
                    Some(p) => p.block.bloom_bytes(src),
                    None => h.bloom_bytes(src),
                };
                bloom = Some((bits, packed));
                (bits, packed)
            }
        };
        let ok = match packed {
            Some(p) => q.probes[n].may_match_packed(p, bits),
            None => q.probes[n].may_match(&h, bits),
        };
        needle_memo::set(v, block, ok);
        Ok(ok)
    };
    for f in 0..q.filters.len() {
        if !probed(&cache.probes, f) {
            continue;
        }
        let mut ok = true;
        match &q.filters[f] {
            FilterPlan::AnyOf { needles, .. } => {
                ok = false;
                for &n in needles {
                    if may(n, cache)? {
                        ok = true;
                        break;
                    }
                }
            }
            FilterPlan::Test { required, .. } => {
                for &n in required {
                    if !may(n, cache)? {
                        ok = false;
                        break;
                    }
                }
            }
        }
        cache.probes.note(f, ok);
        if !ok {
            return Ok(None);
        }
    }
    Ok(Some(h))
}

impl<'r, 'a> BlockEval<'r, 'a> {
    /// Whether column `c` could pass `test` at all, judging by the header:
    /// the bytes its encoding prints and the bloom's view of the fragments
    /// the test's stretch of the needle holds.
    pub(super) fn test_possible<'s>(
        &self,
        c: usize,
        test: &ValueTest,
        needle: &[u8],
        alpha: u64,
        sources: &std::cell::OnceCell<LazySources<'s>>,
        make: impl FnOnce() -> LazySources<'s>,
    ) -> Result<bool, StorageError> {
        let bytes = &needle[test.start..test.end];
        let header = self.r.header();
        // The brief (one small record per column) before the column's full
        // head: most columns of a block are judged by it alone.
        let brief = header.briefs[c];
        let (kind, encoding) = if header.version >= 2 {
            (brief.kind, brief.encoding)
        } else {
            (self.r.column_kind(c), self.r.column_head(c).0)
        };
        if kind == ColumnKind::Line {
            return Ok(true);
        }
        if alpha & !brief.alphabet != 0 {
            return Ok(false);
        }
        // Only a PrefixedDecimal column's prints depend on its prefix (in
        // the full head).
        let prefix: &[u8] = if encoding == Encoding::PrefixedDecimal {
            self.r.column_head(c).1
        } else {
            &[]
        };
        if !encoding.may_print(bytes, prefix) {
            return Ok(false);
        }
        // Values that are all JSON numbers, booleans, null or arrays without
        // strings hold no `"`.
        let facts = brief.facts;
        if facts & runakefli_storage::block::layout::VALUES_JSON_SCALARS != 0
            && bytes.contains(&b'"')
        {
            return Ok(false);
        }
        if test.kind == TestKind::Equals && bytes.is_empty() {
            return Ok(true);
        }
        // A shared column without strings of its own holds only entries of
        // the part's dictionary: none may contain the stretch, no value does.
        if let (Some(sp), Some(dict)) = (self.r.header().columns[c].shared, self.r.shared_dict(c)) {
            if sp.len == 0
                && !bytes.is_empty()
                && !self.memo.borrow_mut().dict_may_hold(dict, bytes)
            {
                return Ok(false);
            }
        }
        Ok(sources
            .get_or_init(make)
            .column_may_hold(c, test.start, test.end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_stop_for_a_filter_that_lets_nearly_every_block_through() {
        let mut p = ProbeStats::default();
        p.reserve(2);
        for i in 0..PROBE_TRIAL {
            assert!(p.worth_probing(0) && p.worth_probing(1));
            // Filter 0 lets every block through; filter 1 prunes one in four.
            p.note(0, true);
            p.note(1, i % 4 != 0);
        }
        assert!(!p.worth_probing(0), "a common word stops being probed");
        assert!(
            p.worth_probing(1),
            "a filter that prunes keeps being probed"
        );
    }
}
