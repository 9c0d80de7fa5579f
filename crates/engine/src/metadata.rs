//! Metadata answers: series, label names and label values.

use crate::error::EngineError;
use crate::labelset::LabelSet;
use runakefli_model::{Backend, Direction, Matcher, ScanControl, ScanRequest, TenantId, Timestamp};
use std::collections::BTreeSet;

/// Label sets of the streams matching any of `selectors` that have entries in
/// `[start, end)`.
pub fn series(
    backend: &dyn Backend,
    tenant: &TenantId,
    selectors: &[Vec<Matcher>],
    start: Timestamp,
    end: Timestamp,
) -> Result<Vec<LabelSet>, EngineError> {
    let mut out: BTreeSet<LabelSet> = BTreeSet::new();
    for sel in selectors {
        let req = ScanRequest {
            tenant: tenant.clone(),
            matchers: sel.clone(),
            start,
            end,
            direction: Direction::Forward,
            required_substrings: Vec::new(),
        };
        backend.scan(&req, &mut |info, batch| {
            if batch.entries.iter().any(|e| e.ts >= start && e.ts < end) {
                out.insert(LabelSet::from(info.labels.as_ref()));
                return ScanControl::NextStream;
            }
            ScanControl::Continue
        })?;
    }
    Ok(out.into_iter().collect())
}

/// Label names, of all streams or of those matching `matchers`.
pub fn label_names(
    backend: &dyn Backend,
    tenant: &TenantId,
    matchers: Option<&[Matcher]>,
    start: Timestamp,
    end: Timestamp,
) -> Result<Vec<String>, EngineError> {
    match matchers {
        None => Ok(backend.label_names(tenant, start, end)?),
        Some(m) => {
            let mut names: BTreeSet<String> = BTreeSet::new();
            for s in backend.streams(tenant, m, start, end)? {
                names.extend(s.labels.pairs().iter().map(|(k, _)| k.clone()));
            }
            Ok(names.into_iter().collect())
        }
    }
}

/// Values of label `name`, over all streams or those matching `matchers`.
pub fn label_values(
    backend: &dyn Backend,
    tenant: &TenantId,
    name: &str,
    matchers: Option<&[Matcher]>,
    start: Timestamp,
    end: Timestamp,
) -> Result<Vec<String>, EngineError> {
    Ok(backend.label_values(tenant, name, matchers.unwrap_or(&[]), start, end)?)
}

/// Loki's `index/stats` answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexStats {
    /// Streams with entries in the window.
    pub streams: u64,
    /// Chunks (one per stream here: Rúnakefli has no chunks).
    pub chunks: u64,
    /// Bytes: line bytes plus structured metadata (see [`volume`]).
    pub bytes: u64,
    /// Entries in the window.
    pub entries: u64,
}

/// Per stream: (labels, bytes, entries), Loki's uncompressed-size accounting:
/// line bytes, 8 bytes per structured-metadata pair, and each distinct
/// metadata name and value once.
fn stream_sizes(
    backend: &dyn Backend,
    tenant: &TenantId,
    matchers: &[Matcher],
    start: Timestamp,
    end: Timestamp,
) -> Result<Vec<(LabelSet, u64, u64)>, EngineError> {
    let req = ScanRequest {
        tenant: tenant.clone(),
        matchers: matchers.to_vec(),
        start,
        end,
        direction: Direction::Forward,
        required_substrings: Vec::new(),
    };
    let mut out: Vec<(LabelSet, u64, u64)> = Vec::new();
    let mut index: crate::labelset::FastMap<u64, (usize, BTreeSet<String>)> = Default::default();
    backend.scan(&req, &mut |info, batch| {
        let (i, distinct) = index.entry(info.id).or_insert_with(|| {
            out.push((LabelSet::from(info.labels.as_ref()), 0, 0));
            (out.len() - 1, BTreeSet::new())
        });
        for e in batch.entries.iter().filter(|e| e.ts >= start && e.ts < end) {
            let slot = &mut out[*i];
            slot.1 += e.line.len() as u64 + 8 * e.metadata.len() as u64;
            slot.2 += 1;
            for (k, v) in &e.metadata {
                for s in [k, v] {
                    if distinct.insert(s.clone()) {
                        slot.1 += s.len() as u64;
                    }
                }
            }
        }
        ScanControl::Continue
    })?;
    Ok(out.into_iter().filter(|s| s.2 > 0).collect())
}

/// `index/stats` for one selector over `[start, end)`.
pub fn index_stats(
    backend: &dyn Backend,
    tenant: &TenantId,
    matchers: &[Matcher],
    start: Timestamp,
    end: Timestamp,
) -> Result<IndexStats, EngineError> {
    let sizes = stream_sizes(backend, tenant, matchers, start, end)?;
    Ok(IndexStats {
        streams: sizes.len() as u64,
        chunks: sizes.len() as u64,
        bytes: sizes.iter().map(|s| s.1).sum(),
        entries: sizes.iter().map(|s| s.2).sum(),
    })
}

/// `index/volume`: bytes per group, largest first, at most `limit` groups.
/// Groups are `target_labels` (default: the selector's label names); with
/// `by_labels`, one group per label name (`{name=""}`), as Loki's
/// `aggregateBy=labels`.
#[allow(clippy::too_many_arguments)]
pub fn volume(
    backend: &dyn Backend,
    tenant: &TenantId,
    matchers: &[Matcher],
    start: Timestamp,
    end: Timestamp,
    target_labels: &[String],
    by_labels: bool,
    limit: usize,
) -> Result<Vec<(LabelSet, u64)>, EngineError> {
    let sizes = stream_sizes(backend, tenant, matchers, start, end)?;
    let mut targets: Vec<String> = target_labels.to_vec();
    if targets.is_empty() && !by_labels {
        for m in matchers {
            if !targets.contains(&m.name) {
                targets.push(m.name.clone());
            }
        }
    }
    let mut groups: std::collections::BTreeMap<LabelSet, u64> = Default::default();
    for (labels, bytes, _) in sizes {
        if by_labels {
            for (k, _) in labels.pairs() {
                if targets.is_empty() || targets.contains(k) {
                    *groups
                        .entry(LabelSet::new(vec![(k.clone(), String::new())]))
                        .or_default() += bytes;
                }
            }
        } else {
            let pairs: Vec<(String, String)> = labels
                .pairs()
                .iter()
                .filter(|(k, _)| targets.contains(k))
                .cloned()
                .collect();
            *groups.entry(LabelSet::new(pairs)).or_default() += bytes;
        }
    }
    let mut out: Vec<(LabelSet, u64)> = groups.into_iter().collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out.truncate(limit);
    Ok(out)
}
