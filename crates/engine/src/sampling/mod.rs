//! What every way of computing a range aggregation shares: the plain scan
//! ([`crate::metric`]), the columnar path ([`crate::columnar`]) and bucket
//! plans ([`crate::pushdown`]). The evaluation context of a metric query,
//! the sample a kept row gives, per-shard series and their merge, the labels
//! a series keeps, a window's value ([`window`]) and the query's point
//! budget ([`points`]).
//!
//! This module imports none of the three, so they depend on it and not on
//! each other: `metric` chooses a path, `columnar` and `pushdown` answer
//! with these pieces.

pub(crate) mod points;
pub(crate) mod window;

use crate::error::EngineError;
use crate::labelset::LabelSet;
use crate::options::FastPaths;
use crate::pipeline::convert::{parse_bytes, parse_duration, parse_float};
use crate::pipeline::label_filter::LabelFilter;
use crate::pipeline::labels::{LabelsBuilder, ERROR_DETAILS_LABEL, ERROR_LABEL};
use crate::pipeline::Pipeline;
use crate::result::QueryStats;
use runakefli_logql::{Grouping, LogRange, UnwrapConversion};
use runakefli_model::{Backend, Direction, ScanRequest, TenantId, Timestamp};
use std::collections::HashMap;

/// A series' reduced labels and its `(timestamp, value)` points.
pub(crate) type SeriesPoints = (LabelSet, Vec<(i64, f64)>);

/// One series with a value slot per step.
#[derive(Clone, Debug)]
pub(crate) struct StepSeries {
    pub labels: LabelSet,
    pub values: Vec<Option<f64>>,
}

/// Evaluation context shared by the operators.
pub(crate) struct Ctx<'a> {
    pub backend: &'a dyn Backend,
    pub tenant: &'a TenantId,
    pub steps: Vec<Timestamp>,
    pub stats: &'a mut QueryStats,
    pub deadline: std::time::Instant,
    /// Whether the columnar path and bucket plans may answer.
    pub fast_paths: FastPaths,
    /// `max_query_series` when the query's answer is exactly the series of
    /// its one range aggregation ([`answer_is_range_series`]): the scan then
    /// stops as soon as more series than that have a sample, instead of
    /// collecting every point first.
    pub series_limit: Option<usize>,
    /// The points the query holds, against `max_query_points`.
    pub points: points::PointBudget,
}

/// Error name set when an unwrapped label is not a number.
pub const ERR_SAMPLE_EXTRACTION: &str = "SampleExtractionErr";

/// The labels a series keeps after a range aggregation's grouping (error
/// labels always stay; the unwrapped label goes without a `by`).
pub(crate) fn reduce(
    labels: &LabelSet,
    grouping: Option<&Grouping>,
    unwrap_label: Option<&str>,
) -> LabelSet {
    // A row with an error keeps all its labels, the unwrapped one too: Loki
    // returns them before grouping so that the error is not lost.
    if labels.get(ERROR_LABEL).is_some() {
        return labels.clone();
    }
    let keep_err = |k: &str| k == ERROR_LABEL || k == ERROR_DETAILS_LABEL;
    let pairs: Vec<(String, String)> = match grouping {
        Some(g) if !g.without => labels
            .pairs()
            .iter()
            .filter(|(k, _)| g.labels.iter().any(|l| l == k) || keep_err(k))
            .cloned()
            .collect(),
        Some(g) => labels
            .pairs()
            .iter()
            .filter(|(k, _)| !g.labels.iter().any(|l| l == k) && Some(k.as_str()) != unwrap_label)
            .cloned()
            .collect(),
        None => match unwrap_label {
            Some(u) => labels
                .pairs()
                .iter()
                .filter(|(k, _)| k != u)
                .cloned()
                .collect(),
            None => return labels.clone(),
        },
    };
    LabelSet::from_sorted(pairs)
}

/// The pipeline of a range aggregation whose series are keyed by
/// `grouping`: with a `by (…)`, one that sets only the labels read after it
/// (the grouping's, the unwrapped one, those of the filters after `unwrap`;
/// [`Pipeline::reading_only`]), else every label.
pub(crate) fn range_pipeline(
    r: &LogRange,
    grouping: Option<&Grouping>,
) -> Result<Pipeline, String> {
    let Some(g) = grouping.filter(|g| !g.without) else {
        return Pipeline::new(&r.log.pipeline);
    };
    let mut read = g.labels.clone();
    if let Some(u) = &r.unwrap {
        read.push(u.label.clone());
        for f in &u.post_filters {
            crate::pipeline::label_filter_names(f, &mut read);
        }
    }
    Pipeline::reading_only(&r.log.pipeline, &read)
}

/// [`reduce`] for a `by (…)` grouping, read straight from a pipeline's label
/// buffer: the key is built from the grouping's labels (and the error
/// labels) alone, so a row whose parsed fields are all distinct (ids,
/// timestamps) does not cost a full label set. Keys already seen are shared
/// (looked up by a hash of the values, compared without allocating).
pub(crate) struct ByKey {
    /// The grouping's labels and the two error labels, sorted, no repeats.
    names: Vec<String>,
    seen: crate::fast_hash::FastMap<u64, Vec<LabelSet>>,
    seen_len: usize,
}

impl ByKey {
    /// For a `by (…)` grouping; `None` for `without` or no grouping, whose
    /// keys need every label.
    pub(crate) fn new(grouping: Option<&Grouping>) -> Option<ByKey> {
        let g = grouping.filter(|g| !g.without)?;
        let mut names: Vec<String> = g.labels.clone();
        names.push(ERROR_LABEL.to_string());
        names.push(ERROR_DETAILS_LABEL.to_string());
        names.sort_unstable();
        names.dedup();
        Some(ByKey {
            names,
            seen: Default::default(),
            seen_len: 0,
        })
    }

    /// The row's key, as `reduce(&lbs.labels(), grouping, _)` gives it; `None`
    /// when the row carries `__error__` (its key is then every label: ask
    /// [`reduce`]).
    pub(crate) fn key(&mut self, lbs: &LabelsBuilder) -> Option<LabelSet> {
        if lbs.get(ERROR_LABEL).is_some() {
            return None;
        }
        let present = || {
            self.names
                .iter()
                .filter_map(|n| lbs.get(n).map(|v| (n.as_str(), v)))
        };
        let h = crate::fast_hash::hash_pairs(present());
        if let Some(k) = self.seen.get(&h).and_then(|b| {
            b.iter().find(|k| {
                let mut want = k.pairs().iter();
                let mut got = present();
                loop {
                    match (want.next(), got.next()) {
                        (None, None) => return true,
                        (Some((a, b)), Some((c, d))) if a == c && b == d => {}
                        _ => return false,
                    }
                }
            })
        }) {
            return Some(k.clone());
        }
        let key = LabelSet::from_sorted(
            present()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        );
        if self.seen_len >= crate::pipeline::INTERN_CAP {
            self.seen.clear();
            self.seen_len = 0;
        }
        self.seen.entry(h).or_default().push(key.clone());
        self.seen_len += 1;
        Some(key)
    }
}

/// Merges per-shard series (same reduced labels → one series, points in
/// shard order) and their statistics.
pub(crate) fn merge_shards(
    parts: Vec<Result<(Vec<SeriesPoints>, QueryStats), EngineError>>,
    stats: &mut QueryStats,
) -> Result<Vec<SeriesPoints>, EngineError> {
    let mut series: Vec<SeriesPoints> = Vec::new();
    let mut index: HashMap<LabelSet, usize> = HashMap::new();
    for part in parts {
        let (part, st) = part?;
        stats.add(&st);
        for (key, pts) in part {
            match index.get(&key) {
                Some(&i) => series[i].1.extend(pts),
                None => {
                    index.insert(key.clone(), series.len());
                    series.push((key, pts));
                }
            }
        }
    }
    Ok(series)
}

/// What every evaluation of a log range starts with: the compiled pipeline, the
/// unwrap's post filters, and a forward scan of `(first step - range - offset,
/// last step - offset]` with the given pruning hints.
pub(crate) fn prepare_scan(
    ctx: &Ctx,
    r: &LogRange,
    grouping: Option<&Grouping>,
    required_substrings: Vec<String>,
) -> Result<(Pipeline, Vec<LabelFilter>, ScanRequest), EngineError> {
    let first = ctx.steps[0];
    let last = *ctx.steps.last().unwrap_or(&first);
    let lo = first.saturating_sub(r.range).saturating_sub(r.offset); // exclusive
    let hi = last.saturating_sub(r.offset); // inclusive
    let pipeline = range_pipeline(r, grouping).map_err(EngineError::Plan)?;
    let post: Vec<LabelFilter> = match &r.unwrap {
        Some(u) => u
            .post_filters
            .iter()
            .map(LabelFilter::new)
            .collect::<Result<_, _>>()
            .map_err(EngineError::Plan)?,
        None => Vec::new(),
    };
    let req = ScanRequest {
        tenant: ctx.tenant.clone(),
        matchers: r.log.selector.clone(),
        start: lo.saturating_add(1),
        end: hi.saturating_add(1),
        direction: Direction::Forward,
        required_substrings,
        shard: None,
        cutoff: None,
    };
    Ok((pipeline, post, req))
}

/// The sample of one kept row (1 for counting ops, the unwrapped value
/// otherwise), after the unwrap's post filters; `None` when they drop it.
/// Conversion failures set `__error__` as the plain path does.
pub(crate) fn emit_value(
    r: &LogRange,
    lbs: &mut LabelsBuilder,
    post: &[LabelFilter],
) -> Option<f64> {
    let Some(u) = &r.unwrap else {
        return Some(1.0);
    };
    let text = lbs.get(&u.label).unwrap_or("").to_string();
    // Loki takes no sample from a row whose unwrapped label is missing or
    // empty: no conversion error, whatever error an earlier stage left.
    if text.is_empty() {
        return None;
    }
    let conv = match u.conversion {
        UnwrapConversion::None => parse_float(&text),
        UnwrapConversion::Duration => parse_duration(&text).map(|ns| ns as f64 / 1e9),
        UnwrapConversion::Bytes => parse_bytes(&text).map(|b| b as f64),
    };
    let v = match conv {
        Ok(v) => v,
        Err(err) => {
            lbs.set_err(ERR_SAMPLE_EXTRACTION);
            lbs.set_err_details(&err);
            0.0
        }
    };
    post.iter().all(|f| f.keep(lbs)).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grouping(without: bool, labels: &[&str]) -> Grouping {
        Grouping {
            without,
            labels: labels.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// `ByKey` gives what `reduce` gives from the full label set, shared
    /// between rows with equal keys, and steps aside for error rows.
    #[test]
    fn by_key_equals_reduce_of_the_full_labels() {
        let base = LabelSet::new(vec![
            ("app".into(), "api".into()),
            ("namespace".into(), "shop".into()),
        ]);
        let g = grouping(false, &["level", "app", "missing"]);
        let mut by = ByKey::new(Some(&g)).expect("a by grouping");
        let mut lbs = LabelsBuilder::default();
        let mut keys = Vec::new();
        for (level, id) in [("info", "1"), ("error", "2"), ("info", "3")] {
            lbs.reset(&base, &[("trace_id".into(), id.into())]);
            lbs.set("level", level);
            lbs.set("request_id", id);
            let key = by.key(&lbs).expect("no error on this row");
            assert_eq!(key, reduce(&lbs.labels(), Some(&g), None));
            keys.push(key);
        }
        assert_eq!(keys[0].id(), keys[2].id(), "equal keys are shared");
        assert_ne!(keys[0], keys[1]);

        // Error details without the error label stay in the key, as in `reduce`.
        lbs.reset(&base, &[]);
        lbs.set_err_details("bad");
        let key = by.key(&lbs).expect("details alone are not an error");
        assert_eq!(key, reduce(&lbs.labels(), Some(&g), None));
        assert!(key.get(ERROR_DETAILS_LABEL).is_some());

        // An error row's key is every label: ByKey leaves it to `reduce`.
        lbs.reset(&base, &[]);
        lbs.set_err("JSONParserErr");
        assert!(by.key(&lbs).is_none());

        // `by ()` keys every row alike.
        let empty = grouping(false, &[]);
        let mut by = ByKey::new(Some(&empty)).expect("a by grouping");
        lbs.reset(&base, &[]);
        lbs.set("level", "x");
        assert_eq!(by.key(&lbs), Some(LabelSet::new(Vec::new())));

        assert!(ByKey::new(Some(&grouping(true, &["app"]))).is_none());
        assert!(ByKey::new(None).is_none());
    }
}
