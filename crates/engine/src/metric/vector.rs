//! Vector aggregations (`sum`, `avg`, `min`, `max`, `count`, `stddev`,
//! `stdvar`, `topk`, `bottomk`, `sort`, `sort_desc`) and `label_replace`.

use super::StepSeries;
use crate::error::EngineError;
use crate::labelset::LabelSet;
use runakefli_logql::{Grouping, LogRange, RangeOp, SampleExpr, VectorOp};
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

/// `sum [by|without (g)] (op(range))` with no grouping inside, for the range
/// operations whose values add up (`count_over_time`, `rate`,
/// `bytes_over_time`, `bytes_rate`, `sum_over_time`): Loki hands the outer
/// grouping down to the range aggregation, so each group's samples (of all
/// its streams, in time order) make one series whose range value is the
/// group's, and the sum over it has one term. For counts and byte totals
/// that equals the sum of the per-stream values; for float samples (an
/// unwrapped `sum_over_time` or `rate`) and for rates (a count divided by
/// the range) it is the float Loki answers, which the sum of per-stream
/// values may miss in the last digits. Returns the range aggregation's op,
/// its log range and the grouping to evaluate it under (`sum (…)` groups
/// `by ()`).
pub(crate) fn sum_grouping_in_range<'e>(
    op: VectorOp,
    grouping: Option<&Grouping>,
    expr: &'e SampleExpr,
) -> Option<(RangeOp, &'e LogRange, Grouping)> {
    if op != VectorOp::Sum {
        return None;
    }
    let mut inner = expr;
    while let SampleExpr::Paren(e) = inner {
        inner = e;
    }
    match inner {
        SampleExpr::RangeAggregation {
            op:
                op @ (RangeOp::CountOverTime
                | RangeOp::Rate
                | RangeOp::BytesOverTime
                | RangeOp::BytesRate
                | RangeOp::SumOverTime),
            range,
            param: None,
            grouping: None,
        } => Some((
            *op,
            range,
            grouping.cloned().unwrap_or(Grouping {
                without: false,
                labels: Vec::new(),
            }),
        )),
        _ => None,
    }
}

/// Applies a vector aggregation step by step. A group's series are combined
/// in the order they come (label order from every path). Loki's order here
/// is that of a Go map (its range iterator's series, iterated afresh at
/// each step), which changes from run to run: the last digits of its `sum`
/// of three or more float series, or `avg`/`stddev`/`stdvar` of two or
/// more, follow no fixed order, so no order here reproduces them all.
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

/// The value of `op` over one group's samples `v` (not empty) at one step,
/// in the order the group's series come. Loki folds the samples one by one
/// from the first: a sum adds them in order; `avg` keeps a running mean,
/// `mean += (x - mean) / n`, that an infinite mean keeps against finite
/// samples and infinities of its own sign; `stddev`/`stdvar` run Welford's
/// update from the first sample (mean = first, squares = 0).
fn combine(op: VectorOp, v: &[f64]) -> f64 {
    let (first, rest) = (v[0], &v[1..]);
    let n = v.len() as f64;
    match op {
        VectorOp::Sum => rest.iter().fold(first, |s, x| s + x),
        VectorOp::Avg => {
            let mut mean = first;
            for (k, &x) in rest.iter().enumerate() {
                if mean.is_infinite()
                    && (x.is_finite() || (x.is_infinite() && (mean > 0.0) == (x > 0.0)))
                {
                    continue;
                }
                mean += (x - mean) / (k as f64 + 2.0);
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
            let (mut mean, mut aux) = (first, 0.0);
            for (k, &x) in rest.iter().enumerate() {
                let d = x - mean;
                mean += d / (k as f64 + 2.0);
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
    fn combine_folds_from_the_first_sample_as_loki() {
        // An infinite mean stays against a finite sample (a plain running
        // mean would give inf + (1 - inf) / 2 = NaN); opposite infinities
        // still give NaN.
        assert_eq!(combine(VectorOp::Avg, &[f64::INFINITY, 1.0]), f64::INFINITY);
        assert_eq!(
            combine(VectorOp::Avg, &[f64::NEG_INFINITY, f64::NEG_INFINITY, 2.0]),
            f64::NEG_INFINITY
        );
        assert!(combine(VectorOp::Avg, &[f64::INFINITY, f64::NEG_INFINITY]).is_nan());
        // Welford from the first sample: one infinite sample has no spread
        // (from zero it would be inf * (inf - inf) = NaN).
        assert_eq!(combine(VectorOp::Stddev, &[f64::INFINITY]), 0.0);
        assert_eq!(combine(VectorOp::Stdvar, &[1.0, 2.0, 3.0, 4.0]), 1.25);
        // A sum starts at its first term.
        assert_eq!(
            combine(VectorOp::Sum, &[-0.0]).to_bits(),
            (-0.0f64).to_bits()
        );
        assert_eq!(combine(VectorOp::Sum, &[0.1, 0.2, 0.3]), 0.1 + 0.2 + 0.3);
    }

    fn run_instant(entries: &[(&str, i64, &str)], q: &str, at: i64) -> Vec<(String, f64)> {
        run_instant_on(crate::options::FastPaths::On, entries, q, at)
    }

    /// [`run_instant`] with fast paths on or off.
    fn run_instant_on(
        fast_paths: crate::options::FastPaths,
        entries: &[(&str, i64, &str)],
        q: &str,
        at: i64,
    ) -> Vec<(String, f64)> {
        use crate::testing::MemBackend;
        use runakefli_model::{Entry, Labels, PushRequest, PushStream, TenantId};
        let b = MemBackend::new();
        let t = TenantId::default_tenant();
        for &(pod, ts, line) in entries {
            b.push(
                &t,
                &PushRequest {
                    streams: vec![PushStream {
                        labels: Labels::new(vec![
                            ("app".into(), "a".into()),
                            ("pod".into(), pod.into()),
                        ]),
                        entries: vec![Entry {
                            ts,
                            line: line.into(),
                            metadata: vec![],
                        }],
                    }],
                },
            );
        }
        let runakefli_logql::Expr::Sample(e) = runakefli_logql::parse_expr(q).unwrap() else {
            panic!("metric query expected")
        };
        let mut stats = crate::result::QueryStats::default();
        let limits = crate::limits::QueryLimits::default();
        let scope = super::super::test_scope(&b, &t, fast_paths);
        match super::super::eval_instant(&scope, &limits, &e, at, &mut stats).unwrap() {
            crate::result::QueryResult::Vector(v) => v
                .into_iter()
                .map(|s| (s.labels.to_string(), s.value))
                .collect(),
            other => panic!("vector expected: {other:?}"),
        }
    }

    #[test]
    fn sum_of_sum_over_time_adds_the_groups_samples_in_time_order() {
        const S: i64 = 1_000_000_000;
        // Pod 1 has 0.1 (1 s) and 0.2 (3 s), pod 2 has 0.6 (2 s). Per pod and
        // then added: (0.1 + 0.2) + 0.6 = 0.9. Loki gives the outer grouping
        // to the range aggregation and adds the group's samples in time
        // order: (0.1 + 0.6) + 0.2 = 0.8999999999999999.
        let entries = [
            ("1", S, "v=0.1"),
            ("2", 2 * S, "v=0.6"),
            ("1", 3 * S, "v=0.2"),
        ];
        let merged: f64 = 0.1 + 0.6 + 0.2;
        assert_ne!(merged, (0.1 + 0.2) + 0.6);
        for q in [
            r#"sum(sum_over_time({app="a"} | logfmt | unwrap v [1m]))"#,
            r#"sum by (app) (sum_over_time({app="a"} | logfmt | unwrap v [1m]))"#,
            r#"sum without (pod) (sum_over_time({app="a"} | logfmt | unwrap v [1m]))"#,
        ] {
            let got = run_instant(&entries, q, 60 * S);
            assert_eq!(got.len(), 1, "{q}");
            assert_eq!(got[0].1.to_bits(), merged.to_bits(), "{q}");
            let plain = run_instant_on(crate::options::FastPaths::Off, &entries, q, 60 * S);
            assert_eq!(plain, got, "{q}");
        }
        let got = run_instant(
            &entries,
            r#"sum(rate({app="a"} | logfmt | unwrap v [1m]))"#,
            60 * S,
        );
        assert_eq!(got[0].1.to_bits(), (merged / 60.0).to_bits());
        // Other vector operations see one series per pod.
        let got = run_instant(
            &entries,
            r#"min(sum_over_time({app="a"} | logfmt | unwrap v [1m]))"#,
            60 * S,
        );
        assert_eq!(got[0].1, 0.1 + 0.2);
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
