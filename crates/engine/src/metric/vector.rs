//! Vector aggregations (`sum`, `avg`, `min`, `max`, `count`, `stddev`,
//! `stdvar`, `topk`, `bottomk`, `sort`, `sort_desc`) and `label_replace`.

use super::StepSeries;
use crate::error::EngineError;
use crate::labelset::LabelSet;
use runakefli_logql::{Grouping, VectorOp};
use std::collections::HashMap;

/// The group label set of `labels` under `grouping` (no grouping: all labels go).
pub(crate) fn group_labels(labels: &LabelSet, grouping: Option<&Grouping>) -> LabelSet {
    match grouping {
        None => LabelSet::default(),
        Some(g) if g.without => LabelSet::from_sorted(
            labels
                .pairs()
                .iter()
                .filter(|(k, _)| !g.labels.iter().any(|l| l == k))
                .cloned()
                .collect(),
        ),
        Some(g) => LabelSet::from_sorted(
            labels
                .pairs()
                .iter()
                .filter(|(k, _)| g.labels.iter().any(|l| l == k))
                .cloned()
                .collect(),
        ),
    }
}

/// Applies a vector aggregation step by step.
pub(crate) fn aggregate(
    op: VectorOp,
    input: Vec<StepSeries>,
    grouping: Option<&Grouping>,
    param: Option<f64>,
    nsteps: usize,
) -> Result<Vec<StepSeries>, EngineError> {
    match op {
        VectorOp::Sort | VectorOp::SortDesc => return Ok(input),
        VectorOp::Topk | VectorOp::Bottomk => {
            return Ok(topk(op == VectorOp::Topk, input, grouping, param, nsteps))
        }
        _ => {}
    }
    let mut order: Vec<LabelSet> = Vec::new();
    let mut groups: HashMap<LabelSet, Vec<usize>> = HashMap::new();
    for (i, s) in input.iter().enumerate() {
        let g = group_labels(&s.labels, grouping);
        groups
            .entry(g.clone())
            .or_insert_with(|| {
                order.push(g);
                Vec::new()
            })
            .push(i);
    }
    let mut out = Vec::with_capacity(order.len());
    for g in order {
        let members = &groups[&g];
        let mut values = Vec::with_capacity(nsteps);
        for step in 0..nsteps {
            let vals: Vec<f64> = members
                .iter()
                .filter_map(|&i| input[i].values[step])
                .collect();
            values.push(if vals.is_empty() {
                None
            } else {
                Some(combine(op, &vals))
            });
        }
        out.push(StepSeries { labels: g, values });
    }
    Ok(out)
}

fn combine(op: VectorOp, v: &[f64]) -> f64 {
    let n = v.len() as f64;
    match op {
        VectorOp::Sum => v.iter().sum(),
        VectorOp::Avg => {
            let mut mean = 0.0;
            for (k, x) in v.iter().enumerate() {
                mean += (x - mean) / (k as f64 + 1.0);
            }
            mean
        }
        VectorOp::Min => v
            .iter()
            .copied()
            .fold(f64::NAN, |m, x| if m.is_nan() || x < m { x } else { m }),
        VectorOp::Max => v
            .iter()
            .copied()
            .fold(f64::NAN, |m, x| if m.is_nan() || x > m { x } else { m }),
        VectorOp::Count => n,
        VectorOp::Stddev | VectorOp::Stdvar => {
            let (mut mean, mut aux) = (0.0, 0.0);
            for (k, x) in v.iter().enumerate() {
                let d = x - mean;
                mean += d / (k as f64 + 1.0);
                aux += d * (x - mean);
            }
            let var = aux / n;
            if op == VectorOp::Stddev {
                var.sqrt()
            } else {
                var
            }
        }
        _ => f64::NAN,
    }
}

fn topk(
    top: bool,
    input: Vec<StepSeries>,
    grouping: Option<&Grouping>,
    param: Option<f64>,
    nsteps: usize,
) -> Vec<StepSeries> {
    let k = param.unwrap_or(0.0);
    let k = if k.is_nan() || k < 1.0 { 0 } else { k as usize };
    let mut keep: Vec<Vec<bool>> = vec![vec![false; input.len()]; nsteps];
    let mut groups: HashMap<LabelSet, Vec<usize>> = HashMap::new();
    for (i, s) in input.iter().enumerate() {
        groups
            .entry(group_labels(&s.labels, grouping))
            .or_default()
            .push(i);
    }
    for members in groups.values() {
        for (step, kept) in keep.iter_mut().enumerate() {
            let mut present: Vec<(usize, f64)> = members
                .iter()
                .filter_map(|&i| input[i].values[step].map(|v| (i, v)))
                .collect();
            present.sort_by(|a, b| {
                let o = if top {
                    b.1.total_cmp(&a.1)
                } else {
                    a.1.total_cmp(&b.1)
                };
                // Ties go to the smaller label set, whatever order the
                // series came in.
                o.then_with(|| input[a.0].labels.cmp(&input[b.0].labels))
            });
            for (i, _) in present.into_iter().take(k) {
                kept[i] = true;
            }
        }
    }
    input
        .into_iter()
        .enumerate()
        .map(|(i, mut s)| {
            for (v, kept) in s.values.iter_mut().zip(&keep) {
                if !kept[i] {
                    *v = None;
                }
            }
            s
        })
        .filter(|s| s.values.iter().any(Option::is_some))
        .collect()
}

/// `label_replace(v, dst, replacement, src, regex)`.
pub(crate) fn label_replace(
    input: Vec<StepSeries>,
    dst: &str,
    replacement: &str,
    src: &str,
    regex: &str,
) -> Result<Vec<StepSeries>, EngineError> {
    let re = regex::Regex::new(&format!("^(?s:{regex})$")).map_err(|e| {
        EngineError::Plan(format!(
            "invalid regular expression in label_replace(): {regex}: {e}"
        ))
    })?;
    Ok(input
        .into_iter()
        .map(|mut s| {
            let value = s.labels.get(src).unwrap_or("").to_string();
            if let Some(c) = re.captures(&value) {
                let mut res = String::new();
                c.expand(replacement, &mut res);
                let mut pairs: Vec<(String, String)> = s
                    .labels
                    .pairs()
                    .iter()
                    .filter(|(k, _)| k != dst)
                    .cloned()
                    .collect();
                if !res.is_empty() {
                    pairs.push((dst.to_string(), res));
                }
                s.labels = LabelSet::new(pairs);
            }
            s
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(pairs: &[(&str, &str)], v: &[Option<f64>]) -> StepSeries {
        StepSeries {
            labels: LabelSet::new(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            values: v.to_vec(),
        }
    }

    #[test]
    fn sum_by_and_topk_per_step() {
        let input = vec![
            s(&[("app", "a"), ("pod", "1")], &[Some(1.0), None]),
            s(&[("app", "a"), ("pod", "2")], &[Some(2.0), Some(5.0)]),
            s(&[("app", "b"), ("pod", "3")], &[Some(4.0), Some(1.0)]),
        ];
        let by_app = Grouping {
            without: false,
            labels: vec!["app".into()],
        };
        let out = aggregate(VectorOp::Sum, input.clone(), Some(&by_app), None, 2).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].values, vec![Some(3.0), Some(5.0)]);
        let top = aggregate(VectorOp::Topk, input.clone(), None, Some(1.0), 2).unwrap();
        assert_eq!(top.len(), 2);
        assert_eq!(top[0].values, vec![None, Some(5.0)]);
        assert_eq!(top[1].values, vec![Some(4.0), None]);
        let count = aggregate(VectorOp::Count, input, None, None, 2).unwrap();
        assert_eq!(count[0].values, vec![Some(3.0), Some(2.0)]);
    }

    #[test]
    fn label_replace_anchored_and_empty_removes() {
        let input = vec![s(&[("app", "nginx")], &[Some(1.0)])];
        let out = label_replace(input.clone(), "short", "$1", "app", "(ng).*").unwrap();
        assert_eq!(out[0].labels.get("short"), Some("ng"));
        let out = label_replace(input.clone(), "short", "$1", "app", "gin").unwrap();
        assert_eq!(out[0].labels.get("short"), None);
        let out = label_replace(input, "app", "", "app", ".*").unwrap();
        assert!(out[0].labels.is_empty());
    }
}
