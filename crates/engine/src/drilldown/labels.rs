//! `detected_labels`: the stream labels Drilldown offers to break a
//! selection down by, each with its number of distinct values.
//!
//! Loki leaves out internal labels (`__…__`, e.g. `__stream_shard__`) and
//! labels whose values are too many to group by (more than
//! [`MAX_CARDINALITY`]), except the static labels that name where logs come
//! from ([`STATIC_LABELS`]), which are always offered.

use crate::labelset::LabelSet;
use std::collections::{BTreeMap, BTreeSet};

/// Labels offered whatever their cardinality.
pub const STATIC_LABELS: &[&str] = &["aws_ecs_cluster", "cluster", "namespace", "pod"];

/// Labels with more distinct values than this are not offered.
pub const MAX_CARDINALITY: usize = 50;

/// `(label, cardinality)` for every label of `series` worth grouping by,
/// sorted by name.
pub fn detected_labels(series: &[LabelSet]) -> Vec<(String, usize)> {
    let mut values: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for s in series {
        for (k, v) in s.pairs() {
            values.entry(k.as_str()).or_default().insert(v.as_str());
        }
    }
    values
        .into_iter()
        .filter(|(k, _)| !k.starts_with("__"))
        .filter(|(k, v)| STATIC_LABELS.contains(k) || v.len() <= MAX_CARDINALITY)
        .map(|(k, v)| (k.to_string(), v.len()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_filters() {
        let mut series: Vec<LabelSet> = (0..60)
            .map(|i| {
                LabelSet::new(vec![
                    ("pod".into(), format!("p{i}")),
                    ("id".into(), format!("{i}")),
                    ("env".into(), "prod".into()),
                    ("__stream_shard__".into(), "1".into()),
                ])
            })
            .collect();
        series.push(LabelSet::new(vec![("env".into(), "dev".into())]));
        assert_eq!(
            detected_labels(&series),
            vec![("env".to_string(), 2), ("pod".to_string(), 60)]
        );
    }
}
