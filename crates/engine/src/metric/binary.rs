//! Binary operations between scalars and vectors, with Loki's arithmetic
//! (`x / 0` and `x % 0` give NaN), comparisons (filtering or `bool`), set
//! operators and `on`/`ignoring`/`group_left`/`group_right` matching.

use super::{StepSeries, Value};
use crate::error::EngineError;
use crate::labelset::LabelSet;
use runakefli_logql::{BinModifier, BinOp};
use std::collections::HashMap;

fn is_comparison(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::Eq | BinOp::Neq | BinOp::Gt | BinOp::Gte | BinOp::Lt | BinOp::Lte
    )
}

/// `l op r`; for comparisons, whether it holds.
fn apply(op: BinOp, l: f64, r: f64) -> (f64, bool) {
    match op {
        BinOp::Add => (l + r, true),
        BinOp::Sub => (l - r, true),
        BinOp::Mul => (l * r, true),
        BinOp::Div => (if r == 0.0 { f64::NAN } else { l / r }, true),
        BinOp::Mod => (if r == 0.0 { f64::NAN } else { l % r }, true),
        BinOp::Pow => (l.powf(r), true),
        BinOp::Eq => (l, l == r),
        BinOp::Neq => (l, l != r),
        BinOp::Gt => (l, l > r),
        BinOp::Gte => (l, l >= r),
        BinOp::Lt => (l, l < r),
        BinOp::Lte => (l, l <= r),
        BinOp::And | BinOp::Or | BinOp::Unless => (l, true),
    }
}

/// Evaluates `l op r`.
pub(crate) fn eval(op: BinOp, l: Value, r: Value, m: &BinModifier) -> Result<Value, EngineError> {
    match (l, r) {
        (Value::Scalar(a), Value::Scalar(b)) => Ok(Value::Scalar(
            a.iter()
                .zip(&b)
                .map(|(x, y)| {
                    let (v, keep) = apply(op, *x, *y);
                    if is_comparison(op) {
                        f64::from(u8::from(keep))
                    } else {
                        v
                    }
                })
                .collect(),
        )),
        (Value::Vector(v), Value::Scalar(s)) => Ok(Value::Vector(vector_scalar(
            op,
            v,
            &s,
            false,
            m.return_bool,
        ))),
        (Value::Scalar(s), Value::Vector(v)) => {
            Ok(Value::Vector(vector_scalar(op, v, &s, true, m.return_bool)))
        }
        (Value::Vector(a), Value::Vector(b)) => vector_vector(op, a, b, m).map(Value::Vector),
    }
}

fn vector_scalar(
    op: BinOp,
    v: Vec<StepSeries>,
    s: &[f64],
    swap: bool,
    return_bool: bool,
) -> Vec<StepSeries> {
    v.into_iter()
        .map(|mut series| {
            for (step, slot) in series.values.iter_mut().enumerate() {
                if let Some(x) = *slot {
                    let (l, r) = if swap { (s[step], x) } else { (x, s[step]) };
                    let (res, keep) = apply(op, l, r);
                    *slot = if is_comparison(op) {
                        if return_bool {
                            Some(f64::from(u8::from(keep)))
                        } else if keep {
                            Some(x)
                        } else {
                            None
                        }
                    } else {
                        Some(res)
                    };
                }
            }
            series
        })
        .collect()
}

fn signature(labels: &LabelSet, m: &BinModifier) -> LabelSet {
    match &m.matching {
        Some(vm) if vm.on => LabelSet::from_sorted(
            labels
                .pairs()
                .iter()
                .filter(|(k, _)| vm.labels.iter().any(|l| l == k))
                .cloned()
                .collect(),
        ),
        Some(vm) => LabelSet::from_sorted(
            labels
                .pairs()
                .iter()
                .filter(|(k, _)| !vm.labels.iter().any(|l| l == k))
                .cloned()
                .collect(),
        ),
        None => labels.clone(),
    }
}

fn vector_vector(
    op: BinOp,
    lhs: Vec<StepSeries>,
    rhs: Vec<StepSeries>,
    m: &BinModifier,
) -> Result<Vec<StepSeries>, EngineError> {
    let nsteps = lhs
        .first()
        .or(rhs.first())
        .map(|s| s.values.len())
        .unwrap_or(0);
    let lsig: Vec<LabelSet> = lhs.iter().map(|s| signature(&s.labels, m)).collect();
    let rsig: Vec<LabelSet> = rhs.iter().map(|s| signature(&s.labels, m)).collect();
    match op {
        BinOp::And | BinOp::Unless => {
            let mut out = lhs;
            for (i, s) in out.iter_mut().enumerate() {
                for step in 0..nsteps {
                    if s.values[step].is_none() {
                        continue;
                    }
                    let present = rhs
                        .iter()
                        .zip(&rsig)
                        .any(|(r, sig)| *sig == lsig[i] && r.values[step].is_some());
                    if present != (op == BinOp::And) {
                        s.values[step] = None;
                    }
                }
            }
            return Ok(out);
        }
        BinOp::Or => {
            let mut out = lhs.clone();
            for (j, r) in rhs.into_iter().enumerate() {
                let mut r = r;
                for step in 0..nsteps {
                    let taken = lhs
                        .iter()
                        .zip(&lsig)
                        .any(|(l, sig)| *sig == rsig[j] && l.values[step].is_some());
                    if taken {
                        r.values[step] = None;
                    }
                }
                out.push(r);
            }
            return Ok(out);
        }
        _ => {}
    }
    // Arithmetic and comparisons: the "one" side must have unique signatures.
    let group_right = m.group.as_ref().is_some_and(|g| !g.left);
    let (many, many_sig, one, one_sig) = if group_right {
        (&rhs, &rsig, &lhs, &lsig)
    } else {
        (&lhs, &lsig, &rhs, &rsig)
    };
    let mut results: HashMap<LabelSet, StepSeries> = HashMap::new();
    let mut order: Vec<LabelSet> = Vec::new();
    for step in 0..nsteps {
        let mut one_map: HashMap<&LabelSet, usize> = HashMap::new();
        for (j, s) in one.iter().enumerate() {
            if s.values[step].is_some() && one_map.insert(&one_sig[j], j).is_some() {
                let side = if group_right { "left" } else { "right" };
                return Err(EngineError::Execution(format!(
                    "found duplicate series on the {side} hand-side;many-to-many matching not allowed: matching labels must be unique on one side"
                )));
            }
        }
        if m.group.is_none() {
            let mut seen: HashMap<&LabelSet, usize> = HashMap::new();
            for (i, s) in many.iter().enumerate() {
                if s.values[step].is_some()
                    && one_map.contains_key(&many_sig[i])
                    && seen.insert(&many_sig[i], i).is_some()
                {
                    return Err(EngineError::Execution(
                        "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)".into(),
                    ));
                }
            }
        }
        for (i, s) in many.iter().enumerate() {
            let Some(mv) = s.values[step] else { continue };
            let Some(&j) = one_map.get(&many_sig[i]) else {
                continue;
            };
            let Some(ov) = one[j].values[step] else {
                continue;
            };
            let (l, r) = if group_right { (ov, mv) } else { (mv, ov) };
            let (res, keep) = apply(op, l, r);
            let value = if is_comparison(op) {
                if m.return_bool {
                    f64::from(u8::from(keep))
                } else if keep {
                    l
                } else {
                    continue;
                }
            } else {
                res
            };
            let labels = result_labels(&s.labels, &one[j].labels, m);
            let entry = results.entry(labels.clone()).or_insert_with(|| {
                order.push(labels.clone());
                StepSeries {
                    labels,
                    values: vec![None; nsteps],
                }
            });
            entry.values[step] = Some(value);
        }
    }
    Ok(order
        .into_iter()
        .filter_map(|l| results.remove(&l))
        .collect())
}

fn result_labels(many: &LabelSet, one: &LabelSet, m: &BinModifier) -> LabelSet {
    match &m.group {
        None => match &m.matching {
            Some(vm) if vm.on => signature(many, m),
            Some(_) => signature(many, m),
            None => many.clone(),
        },
        Some(g) => {
            let mut pairs: Vec<(String, String)> = many
                .pairs()
                .iter()
                .filter(|(k, _)| !g.include.iter().any(|l| l == k))
                .cloned()
                .collect();
            for l in &g.include {
                if let Some(v) = one.get(l) {
                    pairs.push((l.clone(), v.to_string()));
                }
            }
            LabelSet::new(pairs)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_logql::{GroupModifier, VectorMatching};

    fn series(pairs: &[(&str, &str)], v: f64) -> StepSeries {
        StepSeries {
            labels: LabelSet::new(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            values: vec![Some(v)],
        }
    }

    fn vec_of(v: Value) -> Vec<StepSeries> {
        match v {
            Value::Vector(v) => v,
            Value::Scalar(_) => panic!("expected a vector"),
        }
    }

    #[test]
    fn scalar_rules() {
        let m = BinModifier::default();
        let r = eval(
            BinOp::Gt,
            Value::Scalar(vec![1.0]),
            Value::Scalar(vec![2.0]),
            &m,
        )
        .unwrap();
        assert!(matches!(r, Value::Scalar(v) if v == vec![0.0]));
        let r = vec_of(
            eval(
                BinOp::Div,
                Value::Vector(vec![series(&[], 1.0)]),
                Value::Scalar(vec![0.0]),
                &m,
            )
            .unwrap(),
        );
        assert!(r[0].values[0].unwrap().is_nan());
        // A comparison keeps the vector's own value, even with the scalar on the left.
        let r = vec_of(
            eval(
                BinOp::Lt,
                Value::Scalar(vec![1.0]),
                Value::Vector(vec![series(&[], 5.0)]),
                &m,
            )
            .unwrap(),
        );
        assert_eq!(r[0].values[0], Some(5.0));
    }

    #[test]
    fn matching_and_group_left() {
        let lhs = vec![
            series(&[("app", "a"), ("pod", "1")], 2.0),
            series(&[("app", "a"), ("pod", "2")], 6.0),
        ];
        let rhs = vec![series(&[("app", "a")], 8.0)];
        let m = BinModifier {
            return_bool: false,
            matching: Some(VectorMatching {
                on: true,
                labels: vec!["app".into()],
            }),
            group: Some(GroupModifier {
                left: true,
                include: vec![],
            }),
        };
        let r = vec_of(
            eval(
                BinOp::Div,
                Value::Vector(lhs.clone()),
                Value::Vector(rhs.clone()),
                &m,
            )
            .unwrap(),
        );
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].values[0], Some(0.25));
        assert_eq!(r[0].labels.get("pod"), Some("1"));
        // Without group_left the many side is an error.
        let one_to_one = BinModifier {
            group: None,
            ..m.clone()
        };
        assert!(eval(
            BinOp::Div,
            Value::Vector(lhs.clone()),
            Value::Vector(rhs),
            &one_to_one
        )
        .is_err());
        // Duplicates on both sides: many-to-many, a 500.
        let e = eval(
            BinOp::Add,
            Value::Vector(lhs.clone()),
            Value::Vector(lhs),
            &one_to_one,
        )
        .unwrap_err();
        assert_eq!(e.status(), 500);
    }

    #[test]
    fn set_operators() {
        let m = BinModifier::default();
        let a = vec![series(&[("app", "a")], 1.0), series(&[("app", "b")], 2.0)];
        let b = vec![series(&[("app", "b")], 9.0), series(&[("app", "c")], 3.0)];
        let and = vec_of(
            eval(
                BinOp::And,
                Value::Vector(a.clone()),
                Value::Vector(b.clone()),
                &m,
            )
            .unwrap(),
        );
        assert_eq!(and.iter().filter(|s| s.values[0].is_some()).count(), 1);
        let or = vec_of(
            eval(
                BinOp::Or,
                Value::Vector(a.clone()),
                Value::Vector(b.clone()),
                &m,
            )
            .unwrap(),
        );
        assert_eq!(or.iter().filter(|s| s.values[0].is_some()).count(), 3);
        let unless = vec_of(eval(BinOp::Unless, Value::Vector(a), Value::Vector(b), &m).unwrap());
        assert_eq!(unless.iter().filter(|s| s.values[0].is_some()).count(), 1);
    }
}
