//! Metric queries: every expression is evaluated into step-aligned values
//! (one value slot per evaluation step), then shaped into a matrix, vector
//! or scalar answer.

mod binary;
pub(crate) mod range;
mod vector;

use crate::error::EngineError;
use crate::labelset::LabelSet;
use crate::limits::QueryLimits;
use crate::result::{QueryResult, QueryStats, Sample, Series};
use runakefli_logql::{SampleExpr, VectorOp};
use runakefli_model::{Backend, TenantId, Timestamp};

/// One series with a value slot per step.
#[derive(Clone, Debug)]
pub(crate) struct StepSeries {
    pub labels: LabelSet,
    pub values: Vec<Option<f64>>,
}

/// An evaluated expression.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    /// One number per step.
    Scalar(Vec<f64>),
    /// Series.
    Vector(Vec<StepSeries>),
}

/// Evaluation context shared by the operators.
pub(crate) struct Ctx<'a> {
    pub backend: &'a dyn Backend,
    pub tenant: &'a TenantId,
    pub steps: Vec<Timestamp>,
    pub stats: &'a mut QueryStats,
    pub deadline: std::time::Instant,
}

impl Ctx<'_> {
    fn eval(&mut self, e: &SampleExpr) -> Result<Value, EngineError> {
        match e {
            SampleExpr::Paren(inner) => self.eval(inner),
            SampleExpr::Literal(v) => Ok(Value::Scalar(vec![*v; self.steps.len()])),
            SampleExpr::Vector(v) => Ok(Value::Vector(vec![StepSeries {
                labels: LabelSet::default(),
                values: vec![Some(*v); self.steps.len()],
            }])),
            SampleExpr::RangeAggregation {
                op,
                range,
                param,
                grouping,
            } => Ok(Value::Vector(range::eval(
                self,
                *op,
                range,
                *param,
                grouping.as_ref(),
            )?)),
            SampleExpr::VectorAggregation {
                op,
                expr,
                grouping,
                param,
            } => {
                let pushed = match crate::columnar::sum_pushdown(*op, grouping.as_ref(), expr) {
                    Some((rop, r, g)) => {
                        match crate::pushdown::metric::range_series(self, rop, &r, None, Some(&g))?
                        {
                            Some(v) => Some(v),
                            None => crate::columnar::range_series(self, rop, &r, Some(&g), true)?
                                .map(|s| range::finish(&self.steps, rop, &r, None, s))
                                .transpose()?,
                        }
                    }
                    None => None,
                };
                let inner = match pushed {
                    Some(v) => v,
                    None => match self.eval(expr)? {
                        Value::Vector(v) => v,
                        Value::Scalar(_) => {
                            return Err(EngineError::Plan(
                                "expected vector expression in aggregation".into(),
                            ))
                        }
                    },
                };
                Ok(Value::Vector(vector::aggregate(
                    *op,
                    inner,
                    grouping.as_ref(),
                    *param,
                    self.steps.len(),
                )?))
            }
            SampleExpr::Binary {
                op,
                lhs,
                rhs,
                modifier,
            } => {
                let l = self.eval(lhs)?;
                let r = self.eval(rhs)?;
                binary::eval(*op, l, r, modifier)
            }
            SampleExpr::LabelReplace {
                expr,
                dst,
                replacement,
                src,
                regex,
            } => {
                let inner = match self.eval(expr)? {
                    Value::Vector(v) => v,
                    s => return Ok(s),
                };
                Ok(Value::Vector(vector::label_replace(
                    inner,
                    dst,
                    replacement,
                    src,
                    regex,
                )?))
            }
        }
    }
}

fn check_series(limits: &QueryLimits, n: usize) -> Result<(), EngineError> {
    if limits.max_query_series > 0 && n > limits.max_query_series {
        return Err(EngineError::SeriesLimit(limits.max_query_series));
    }
    Ok(())
}

/// Evaluates a metric query at every step `start, start+step, …` up to `end` inclusive.
#[allow(clippy::too_many_arguments)]
pub fn eval_range(
    backend: &dyn Backend,
    limits: &QueryLimits,
    tenant: &TenantId,
    expr: &SampleExpr,
    start: Timestamp,
    end: Timestamp,
    step: i64,
    stats: &mut QueryStats,
) -> Result<QueryResult, EngineError> {
    if step <= 0 {
        return Err(EngineError::BadRequest(
            "zero or negative query resolution step widths are not accepted. Try a positive integer".into(),
        ));
    }
    let n = (end.saturating_sub(start) / step).max(0) + 1;
    if n > 11_000 {
        return Err(EngineError::BadRequest(
            "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)".into(),
        ));
    }
    let steps: Vec<Timestamp> = (0..n)
        .map(|i| start.saturating_add(i.saturating_mul(step)))
        .collect();
    let deadline = std::time::Instant::now() + limits.query_timeout;
    let mut ctx = Ctx {
        deadline,
        backend,
        tenant,
        steps,
        stats,
    };
    let v = ctx.eval(expr)?;
    let steps = ctx.steps;
    let series: Vec<StepSeries> = match v {
        Value::Scalar(vals) => vec![StepSeries {
            labels: LabelSet::default(),
            values: vals.into_iter().map(Some).collect(),
        }],
        Value::Vector(v) => v,
    };
    let mut out: Vec<Series> = series
        .into_iter()
        .filter(|s| s.values.iter().any(Option::is_some))
        .map(|s| Series {
            labels: s.labels,
            points: steps
                .iter()
                .zip(s.values)
                .filter_map(|(t, v)| v.map(|v| (t.div_euclid(1_000_000), v)))
                .collect(),
        })
        .collect();
    check_series(limits, out.len())?;
    out.sort_by(|a, b| a.labels.cmp(&b.labels));
    Ok(QueryResult::Matrix(out))
}

/// Evaluates a metric query at one instant.
pub fn eval_instant(
    backend: &dyn Backend,
    limits: &QueryLimits,
    tenant: &TenantId,
    expr: &SampleExpr,
    time: Timestamp,
    stats: &mut QueryStats,
) -> Result<QueryResult, EngineError> {
    let deadline = std::time::Instant::now() + limits.query_timeout;
    let mut ctx = Ctx {
        deadline,
        backend,
        tenant,
        steps: vec![time],
        stats,
    };
    let t_ms = time.div_euclid(1_000_000);
    match ctx.eval(expr)? {
        Value::Scalar(v) => Ok(QueryResult::Scalar(t_ms, v[0])),
        Value::Vector(series) => {
            let mut out: Vec<Sample> = series
                .into_iter()
                .filter_map(|s| {
                    s.values[0].map(|value| Sample {
                        labels: s.labels,
                        t_ms,
                        value,
                    })
                })
                .collect();
            check_series(limits, out.len())?;
            out.sort_by(|a, b| a.labels.cmp(&b.labels));
            match outermost_vector_op(expr) {
                Some(VectorOp::Sort) => out.sort_by(|a, b| a.value.total_cmp(&b.value)),
                Some(VectorOp::SortDesc) => out.sort_by(|a, b| b.value.total_cmp(&a.value)),
                _ => {}
            }
            Ok(QueryResult::Vector(out))
        }
    }
}

fn outermost_vector_op(e: &SampleExpr) -> Option<VectorOp> {
    match e {
        SampleExpr::Paren(i) => outermost_vector_op(i),
        SampleExpr::VectorAggregation { op, .. } => Some(*op),
        _ => None,
    }
}
