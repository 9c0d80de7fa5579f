//! Metadata answers: series, label names and values, index stats and volumes,
//! with the time granularity Loki answers them at.
//!
//! The answers that scan entries (series, index stats, volumes) stop at a
//! deadline and fail with [`EngineError::Timeout`], as queries do.

use crate::error::EngineError;
use crate::labelset::LabelSet;
use crate::scope::QueryScope;
use runakefli_model::{
    Backend, BackendError, Direction, MatchOp, Matcher, ScanControl, ScanRequest, TenantId,
    Timestamp,
};
use std::collections::BTreeSet;
use std::time::Instant;

/// Runs `backend.scan`, stopping once `deadline` has passed (then `Timeout`).
fn scan_until(
    backend: &dyn Backend,
    req: &ScanRequest,
    deadline: Instant,
    visit: &mut dyn FnMut(&runakefli_model::StreamInfo, runakefli_model::EntryBatch) -> ScanControl,
) -> Result<(), EngineError> {
    let mut timed_out = false;
    backend.scan(req, &mut |info, batch| {
        if Instant::now() > deadline {
            timed_out = true;
            return ScanControl::Stop;
        }
        visit(info, batch)
    })?;
    if timed_out {
        return Err(EngineError::Timeout);
    }
    Ok(())
}

/// Label sets of the streams matching any of `selectors` whose time bounds
/// (first to last entry, as Loki's chunk bounds) overlap `[start, end)`: a
/// stream with entries before and after the window is listed even when none
/// falls inside it, as Loki's ingester answers. The bounds come from
/// [`Backend::stream_bounds`] when the backend answers it (ClickHouse: one
/// aggregate query, no entry shipped), else from a forward and a backward
/// scan that read one batch from each end of every stream.
pub fn series(
    backend: &dyn Backend,
    tenant: &TenantId,
    selectors: &[Vec<Matcher>],
    start: Timestamp,
    end: Timestamp,
    deadline: Instant,
) -> Result<Vec<LabelSet>, EngineError> {
    let mut out: BTreeSet<LabelSet> = BTreeSet::new();
    if end <= start {
        return Ok(Vec::new());
    }
    let (lo, hi) = label_window(start, end);
    for sel in selectors {
        // First and last entry per stream: one batch from each end.
        let mut bounds: crate::fast_hash::FastMap<u64, (LabelSet, Timestamp, Timestamp)> =
            Default::default();
        // A backend that knows each stream's ends without shipping entries.
        match backend.stream_bounds(tenant, sel, lo, hi, Some(deadline)) {
            Ok(Some(known)) => {
                out.extend(
                    known
                        .into_iter()
                        .filter(|b| end > b.first && start <= b.last)
                        .map(|b| LabelSet::from(b.stream.labels.as_ref())),
                );
                continue;
            }
            Ok(None) => {}
            Err(BackendError::Cancelled) => return Err(EngineError::Timeout),
            Err(e) => return Err(e.into()),
        }
        for direction in [Direction::Forward, Direction::Backward] {
            let req = ScanRequest {
                tenant: tenant.clone(),
                matchers: sel.clone(),
                start: lo,
                end: hi,
                direction,
                required_substrings: Vec::new(),
                shard: None,
                cutoff: None,
            };
            scan_until(backend, &req, deadline, &mut |info, batch| {
                let Some(e) = batch.entries.first() else {
                    return ScanControl::Continue;
                };
                let b = bounds
                    .entry(info.id)
                    .or_insert_with(|| (LabelSet::from(info.labels.as_ref()), e.ts, e.ts));
                b.1 = b.1.min(e.ts);
                b.2 = b.2.max(e.ts);
                ScanControl::NextStream
            })?;
        }
        out.extend(
            bounds
                .into_values()
                .filter(|(_, min, max)| end > *min && start <= *max)
                .map(|(labels, _, _)| labels),
        );
    }
    Ok(out.into_iter().collect())
}

/// Length of one index bucket: Loki's label index (TSDB) is cut into daily
/// tables, and a label query answers from every table the window touches,
/// without looking at entry times inside a table.
const INDEX_BUCKET_NS: i64 = 86_400 * 1_000_000_000;

/// Widens `[start, end)` to whole index buckets (UTC days), the granularity at
/// which Loki answers label names and values: a stream is listed for any
/// window that touches a day in which it has entries, even when its entries
/// lie outside the window itself. `series` does not widen (Loki checks the
/// stream's time bounds there).
pub fn label_window(start: Timestamp, end: Timestamp) -> (Timestamp, Timestamp) {
    if end <= start {
        return (start, end);
    }
    let lo = start
        .div_euclid(INDEX_BUCKET_NS)
        .saturating_mul(INDEX_BUCKET_NS);
    let last = (end - 1).div_euclid(INDEX_BUCKET_NS);
    let hi = last.saturating_add(1).saturating_mul(INDEX_BUCKET_NS);
    (lo, hi)
}

/// Label names, of all streams or of those matching `matchers`, at index
/// bucket granularity (see [`label_window`]).
pub fn label_names(
    backend: &dyn Backend,
    tenant: &TenantId,
    matchers: Option<&[Matcher]>,
    start: Timestamp,
    end: Timestamp,
) -> Result<Vec<String>, EngineError> {
    let (start, end) = label_window(start, end);
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

/// Values of label `name`, over all streams or those matching `matchers`, at
/// index bucket granularity (see [`label_window`]).
pub fn label_values(
    backend: &dyn Backend,
    tenant: &TenantId,
    name: &str,
    matchers: Option<&[Matcher]>,
    start: Timestamp,
    end: Timestamp,
) -> Result<Vec<String>, EngineError> {
    let (start, end) = label_window(start, end);
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

/// Share of a chunk spanning `[min, max]` that the window `[from, through]`
/// covers, as Loki prorates chunk sizes in index stats and volumes; a chunk
/// with a single timestamp counts whole.
fn time_factor(from: Timestamp, through: Timestamp, min: Timestamp, max: Timestamp) -> f64 {
    if from > max || through < min {
        return 0.0;
    }
    if min == max {
        return 1.0;
    }
    let total = (max - min) as f64;
    let leading = (from - min).max(0) as f64;
    let trailing = (max - through).max(0) as f64;
    (total - (leading + trailing)) / total
}

/// One stream's size as Loki accounts it: its data in the index buckets the
/// window touches taken as one chunk (line bytes, 8 bytes per
/// structured-metadata pair, each distinct metadata name and value once),
/// prorated by the share of the chunk's time span inside the window.
struct StreamSize {
    labels: LabelSet,
    /// Prorated bytes.
    bytes: u64,
    /// Prorated entries.
    entries: u64,
    /// Whether the chunk overlaps the window (else it counts 0).
    overlaps: bool,
}

/// A stream's (labels, bytes, entries, first ts, last ts) in a window.
type Sums = (LabelSet, u64, u64, Timestamp, Timestamp);

/// Per stream touched by the window, Loki's uncompressed-size accounting:
/// its line bytes, 8 bytes per structured-metadata pair, and each distinct
/// metadata name or value string once. The sums come from
/// [`Backend::stream_totals`] when the backend answers it (ClickHouse: one
/// aggregate query, no entry shipped), else from a scan of every entry.
/// Streams whose time bounds miss the window are left out.
fn stream_sizes(
    backend: &dyn Backend,
    tenant: &TenantId,
    matchers: &[Matcher],
    start: Timestamp,
    end: Timestamp,
    deadline: Instant,
) -> Result<Vec<StreamSize>, EngineError> {
    if end <= start {
        return Ok(Vec::new());
    }
    let sums = window_sums(
        backend,
        tenant,
        matchers,
        label_window(start, end),
        deadline,
    )?;
    Ok(prorate(&sums, start, end))
}

/// Each selected stream's [`Sums`] over the index window `(lo, hi)` (see
/// [`label_window`]).
fn window_sums(
    backend: &dyn Backend,
    tenant: &TenantId,
    matchers: &[Matcher],
    (lo, hi): (Timestamp, Timestamp),
    deadline: Instant,
) -> Result<Vec<Sums>, EngineError> {
    Ok(
        match backend.stream_totals(tenant, matchers, lo, hi, Some(deadline)) {
            Ok(Some(totals)) => totals
                .into_iter()
                .map(|t| {
                    (
                        LabelSet::from(t.stream.labels.as_ref()),
                        t.line_bytes + 8 * t.metadata_pairs + t.metadata_distinct_bytes,
                        t.entries,
                        t.first,
                        t.last,
                    )
                })
                .collect(),
            Ok(None) => scanned_sizes(backend, tenant, matchers, (lo, hi), deadline)?,
            Err(BackendError::Cancelled) => return Err(EngineError::Timeout),
            Err(e) => return Err(e.into()),
        },
    )
}

/// The streams of `sums` whose time bounds meet `[start, end)`, their sizes
/// prorated by the share of their span inside it.
fn prorate(sums: &[Sums], start: Timestamp, end: Timestamp) -> Vec<StreamSize> {
    sums.iter()
        .filter(|a| a.2 > 0 && end > a.3 && start <= a.4)
        .map(|(labels, bytes, entries, min, max)| {
            let overlaps = start < *max && end > *min;
            let f = if overlaps {
                time_factor(start, end, *min, *max)
            } else {
                0.0
            };
            StreamSize {
                labels: labels.clone(),
                bytes: (*bytes as f64 * f) as u64,
                entries: (*entries as f64 * f) as u64,
                overlaps,
            }
        })
        .collect()
}

/// [`window_sums`] from a scan of every entry in `[lo, hi)` (the backend
/// does not answer `stream_totals`).
fn scanned_sizes(
    backend: &dyn Backend,
    tenant: &TenantId,
    matchers: &[Matcher],
    (lo, hi): (Timestamp, Timestamp),
    deadline: Instant,
) -> Result<Vec<Sums>, EngineError> {
    let req = ScanRequest {
        tenant: tenant.clone(),
        matchers: matchers.to_vec(),
        start: lo,
        end: hi,
        direction: Direction::Forward,
        required_substrings: Vec::new(),
        shard: None,
        cutoff: None,
    };
    // (labels, bytes, entries, min ts, max ts, distinct metadata strings)
    type Acc = (LabelSet, u64, u64, Timestamp, Timestamp, BTreeSet<String>);
    let mut acc: Vec<Acc> = Vec::new();
    let mut index: crate::fast_hash::FastMap<u64, usize> = Default::default();
    scan_until(backend, &req, deadline, &mut |info, batch| {
        let i = *index.entry(info.id).or_insert_with(|| {
            acc.push((
                LabelSet::from(info.labels.as_ref()),
                0,
                0,
                Timestamp::MAX,
                Timestamp::MIN,
                BTreeSet::new(),
            ));
            acc.len() - 1
        });
        let slot = &mut acc[i];
        for e in &batch.entries {
            slot.1 += e.line.len() as u64 + 8 * e.metadata.len() as u64;
            slot.2 += 1;
            slot.3 = slot.3.min(e.ts);
            slot.4 = slot.4.max(e.ts);
            for (k, v) in &e.metadata {
                for s in [k, v] {
                    if !slot.5.contains(s) {
                        slot.1 += s.len() as u64;
                        slot.5.insert(s.clone());
                    }
                }
            }
        }
        ScanControl::Continue
    })?;
    Ok(acc
        .into_iter()
        .map(|(labels, bytes, entries, min, max, _)| (labels, bytes, entries, min, max))
        .collect())
}

/// `index/stats` for one selector over `[start, end)`.
pub fn index_stats(
    backend: &dyn Backend,
    tenant: &TenantId,
    matchers: &[Matcher],
    start: Timestamp,
    end: Timestamp,
    deadline: Instant,
) -> Result<IndexStats, EngineError> {
    let sizes: Vec<StreamSize> = stream_sizes(backend, tenant, matchers, start, end, deadline)?
        .into_iter()
        .filter(|s| s.overlaps)
        .collect();
    Ok(IndexStats {
        streams: sizes.len() as u64,
        chunks: sizes.len() as u64,
        bytes: sizes.iter().map(|s| s.bytes).sum(),
        entries: sizes.iter().map(|s| s.entries).sum(),
    })
}

/// `index/volume`: bytes per group, largest first, at most `limit` groups.
/// Groups are `target_labels` (default: the selector's label names); with
/// `by_labels`, one group per label name (`{name=""}`), as Loki's
/// `aggregateBy=labels`.
pub fn volume(
    scope: &QueryScope,
    grouping: &VolumeGrouping,
    (start, end): (Timestamp, Timestamp),
    limit: usize,
) -> Result<Vec<(LabelSet, u64)>, EngineError> {
    let sizes = stream_sizes(
        scope.backend,
        scope.tenant,
        &grouping.selector,
        start,
        end,
        scope.deadline,
    )?;
    Ok(grouping.groups(sizes, limit))
}

/// `index/volume_range`: the `/index/volume` answer over `[start, end)`
/// (at most `limit` groups), and each group's bytes per window of
/// `windows` (every group, as `/index/volume` over that window alone
/// would give them). Each stream's sums are worked out once per index
/// window (see [`label_window`]) the windows touch, not once per window:
/// a window's sizes are those sums prorated to it, as for `/index/volume`.
pub fn volume_range(
    scope: &QueryScope,
    grouping: &VolumeGrouping,
    (start, end): (Timestamp, Timestamp),
    windows: &[(Timestamp, Timestamp)],
    limit: usize,
) -> Result<VolumeRange, EngineError> {
    let QueryScope {
        backend,
        tenant,
        deadline,
        ..
    } = *scope;
    let mut sums: std::collections::HashMap<(Timestamp, Timestamp), Vec<Sums>> = Default::default();
    let mut sizes = |s: Timestamp, e: Timestamp| -> Result<Vec<StreamSize>, EngineError> {
        if e <= s {
            return Ok(Vec::new());
        }
        let w = label_window(s, e);
        let window = match sums.entry(w) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => v.insert(window_sums(
                backend,
                tenant,
                &grouping.selector,
                w,
                deadline,
            )?),
        };
        Ok(prorate(window, s, e))
    };
    let whole = grouping.groups(sizes(start, end)?, limit);
    let mut per_window = Vec::with_capacity(windows.len());
    for &(s, e) in windows {
        if Instant::now() > deadline {
            return Err(EngineError::Timeout);
        }
        per_window.push(grouping.groups(sizes(s, e)?, usize::MAX));
    }
    Ok(VolumeRange { whole, per_window })
}

/// What [`volume_range`] answers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VolumeRange {
    /// The groups over the whole range, largest first, at most `limit`.
    pub whole: Vec<(LabelSet, u64)>,
    /// Per window, every group's bytes there, largest first.
    pub per_window: Vec<Vec<(LabelSet, u64)>>,
}

/// How `/index/volume` selects streams and groups their sizes.
pub struct VolumeGrouping {
    /// The matchers plus `label=~".+"` for every target label they do not
    /// name: as Loki, streams without a target label are left out rather
    /// than grouped under `{}`.
    selector: Vec<Matcher>,
    /// The labels a group is made of (default: the selector's names).
    targets: Vec<String>,
    by_labels: bool,
}

impl VolumeGrouping {
    /// The grouping of `/index/volume` over the streams `matchers` select:
    /// by `target_labels` (default: the matchers' names), or with
    /// `by_labels` one group per label name.
    pub fn new(matchers: &[Matcher], target_labels: &[String], by_labels: bool) -> Self {
        let mut selector = matchers.to_vec();
        for t in target_labels {
            if !matchers.iter().any(|m| &m.name == t) {
                if let Ok(m) = Matcher::new(t.clone(), MatchOp::Re, ".+") {
                    selector.push(m);
                }
            }
        }
        let mut targets: Vec<String> = target_labels.to_vec();
        if targets.is_empty() && !by_labels {
            for m in matchers {
                if !targets.contains(&m.name) {
                    targets.push(m.name.clone());
                }
            }
        }
        VolumeGrouping {
            selector,
            targets,
            by_labels,
        }
    }

    /// The groups of `sizes`, largest first (ties by labels), at most `limit`.
    fn groups(&self, sizes: Vec<StreamSize>, limit: usize) -> Vec<(LabelSet, u64)> {
        let targets = &self.targets;
        let mut groups: std::collections::BTreeMap<LabelSet, u64> = Default::default();
        for StreamSize { labels, bytes, .. } in sizes {
            if self.by_labels {
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
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::MemBackend;

    /// A deadline no test reaches.
    fn far() -> Instant {
        Instant::now() + std::time::Duration::from_secs(3600)
    }

    /// A request of tenant `t` over `b` due by `deadline`.
    fn scope<'a>(b: &'a MemBackend, t: &'a TenantId, deadline: Instant) -> QueryScope<'a> {
        QueryScope {
            backend: b,
            tenant: t,
            deadline,
            fast_paths: crate::options::FastPaths::On,
        }
    }
    use runakefli_model::{Entry, Labels, PushRequest, PushStream};

    const S: i64 = 1_000_000_000;
    const DAY: i64 = 86_400 * S;

    fn entry(ts: i64, line: &str, md: &[(&str, &str)]) -> Entry {
        Entry {
            ts,
            line: line.into(),
            metadata: md
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn backend() -> (MemBackend, TenantId) {
        let b = MemBackend::new();
        let t = TenantId::new("fake");
        let late = PushStream {
            labels: Labels::parse(r#"{app="late", env="dev"}"#).unwrap(),
            entries: vec![entry(DAY + 600 * S, "0123456789", &[("user", "ab")])],
        };
        let early = PushStream {
            labels: Labels::parse(r#"{app="early"}"#).unwrap(),
            entries: vec![
                entry(DAY, "aaaa", &[("k", "v")]),
                entry(DAY + 100 * S, "bbbb", &[("k", "v")]),
            ],
        };
        b.push(
            &t,
            &PushRequest {
                streams: vec![late, early],
            },
        );
        (b, t)
    }

    /// Each window's volumes are `/index/volume` over that window alone,
    /// and the whole range's the volume with its limit, for windows on
    /// both sides of a day boundary (two index windows), empty ones and
    /// every grouping; one stream spans the boundary, so its size in a
    /// window depends on which index windows are read.
    #[test]
    fn volume_range_is_the_volume_of_each_window() {
        let (b, t) = backend();
        let before = PushStream {
            labels: Labels::parse(r#"{app="late", env="prod"}"#).unwrap(),
            entries: vec![
                entry(DAY - 900 * S, "before midnight", &[("user", "cd")]),
                entry(DAY - 10 * S, "just before", &[]),
                entry(DAY + 300 * S, "after midnight", &[("user", "cd")]),
            ],
        };
        b.push(
            &t,
            &PushRequest {
                streams: vec![before],
            },
        );
        let all = vec![Matcher::new("app", MatchOp::Re, ".+").unwrap()];
        let (start, end) = (DAY - 1800 * S, DAY + 1200 * S);
        let windows: Vec<(i64, i64)> = (0..10)
            .map(|i| (start + i * 300 * S, (start + (i + 1) * 300 * S).min(end)))
            .collect();
        for (targets, by_labels, limit) in [
            (vec![], false, 100),
            (vec!["env".to_string()], false, 100),
            (vec![], true, 100),
            (vec!["app".to_string()], false, 1),
        ] {
            let grouping = VolumeGrouping::new(&all, &targets, by_labels);
            let got = volume_range(
                &scope(&b, &t, far()),
                &grouping,
                (start, end),
                &windows,
                limit,
            )
            .unwrap();
            let vol =
                |s, e, limit| volume(&scope(&b, &t, far()), &grouping, (s, e), limit).unwrap();
            assert_eq!(got.whole, vol(start, end, limit), "{targets:?}");
            assert!(!got.whole.is_empty());
            let each: Vec<_> = windows
                .iter()
                .map(|&(s, e)| vol(s, e, usize::MAX))
                .collect();
            assert_eq!(got.per_window, each, "{targets:?} {by_labels}");
            assert!(each.iter().filter(|w| w.is_empty()).count() < windows.len());
        }
    }

    #[test]
    fn label_window_is_whole_utc_days() {
        assert_eq!(label_window(DAY + 5, DAY + 300 * S), (DAY, 2 * DAY));
        assert_eq!(label_window(DAY - 1, DAY + 1), (0, 2 * DAY));
        assert_eq!(label_window(0, DAY), (0, DAY));
        assert_eq!(label_window(-5, 3), (-DAY, DAY));
        assert_eq!(label_window(7, 7), (7, 7));
    }

    #[test]
    fn labels_answer_by_day_but_series_by_entries() {
        let (b, t) = backend();
        let m = vec![Matcher::new("app", MatchOp::Eq, "late").unwrap()];
        // 00:00–00:05: the stream's only entry is at 00:10.
        let (s, e) = (DAY, DAY + 300 * S);
        assert_eq!(
            label_names(&b, &t, Some(&m), s, e).unwrap(),
            vec!["app", "env"]
        );
        assert_eq!(
            label_values(&b, &t, "env", Some(&m), s, e).unwrap(),
            vec!["dev"]
        );
        assert_eq!(label_names(&b, &t, None, s, e).unwrap(), vec!["app", "env"]);
        assert!(series(&b, &t, std::slice::from_ref(&m), s, e, far())
            .unwrap()
            .is_empty());
        // A window between a stream's entries still lists it (time bounds).
        let early = vec![Matcher::new("app", MatchOp::Eq, "early").unwrap()];
        let got = series(&b, &t, &[early], DAY + 10 * S, DAY + 20 * S, far()).unwrap();
        assert_eq!(got.len(), 1);
        // Another day lists nothing.
        assert!(label_names(&b, &t, Some(&m), 0, 300 * S)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn time_factor_as_loki_prorates_chunks() {
        assert_eq!(time_factor(0, 10, 20, 30), 0.0);
        assert_eq!(time_factor(0, 100, 20, 30), 1.0);
        assert_eq!(time_factor(25, 100, 20, 30), 0.5);
        assert_eq!(time_factor(0, 22, 20, 30), 0.2);
        assert_eq!(time_factor(0, 100, 20, 20), 1.0);
    }

    #[test]
    fn volume_prorates_by_the_streams_time_span() {
        let (b, t) = backend();
        let m = vec![Matcher::new("app", MatchOp::Re, ".+").unwrap()];
        let by_selector = VolumeGrouping::new(&m, &[], false);
        let at = scope(&b, &t, far());
        let whole = volume(&at, &by_selector, (DAY, DAY + 3600 * S), 100).unwrap();
        let got: Vec<(String, u64)> = whole.iter().map(|(l, v)| (l.to_string(), *v)).collect();
        // late: 10 + 8 + "user" + "ab"; early: 4 + 8 + 4 + 8 + "k" + "v".
        assert_eq!(
            got,
            vec![
                (r#"{app="early"}"#.into(), 26),
                (r#"{app="late"}"#.into(), 24)
            ]
        );
        // The first half of early's span: half its bytes; late is outside.
        let half = volume(&at, &by_selector, (DAY, DAY + 50 * S), 100).unwrap();
        assert_eq!(half.len(), 1);
        assert_eq!(half[0].1, 13);
        // A target label the selector does not name must be present.
        let env = VolumeGrouping::new(&m, &["env".into()], false);
        let by_env = volume(&at, &env, (DAY, DAY + 3600 * S), 100).unwrap();
        let got: Vec<(String, u64)> = by_env.iter().map(|(l, v)| (l.to_string(), *v)).collect();
        assert_eq!(got, vec![(r#"{env="dev"}"#.into(), 24)]);
        let st = index_stats(&b, &t, &m, DAY, DAY + 50 * S, far()).unwrap();
        assert_eq!((st.streams, st.bytes, st.entries), (1, 13, 1));
    }

    #[test]
    fn scanning_answers_stop_at_the_deadline() {
        let (b, t) = backend();
        let m = vec![Matcher::new("app", MatchOp::Re, ".+").unwrap()];
        let past = Instant::now() - std::time::Duration::from_millis(1);
        let timeout = |r: Result<(), EngineError>| matches!(r, Err(EngineError::Timeout));
        assert!(timeout(
            series(&b, &t, std::slice::from_ref(&m), 0, 2 * DAY, past).map(|_| ())
        ));
        assert!(timeout(
            index_stats(&b, &t, &m, 0, 2 * DAY, past).map(|_| ())
        ));
        assert!(timeout(
            volume(
                &scope(&b, &t, past),
                &VolumeGrouping::new(&m, &[], false),
                (0, 2 * DAY),
                100
            )
            .map(|_| ())
        ));
        assert!(series(&b, &t, &[m], 0, 2 * DAY, far()).is_ok());
    }
}
