//! Metric queries: every expression is evaluated into step-aligned values
//! (one value slot per evaluation step), then shaped into a matrix, vector
//! or scalar answer.

mod binary;
#[cfg(test)]
mod budget_tests;
#[cfg(test)]
mod counting_backend;
#[cfg(test)]
mod points_tests;
pub(crate) mod range;
mod vector;

use crate::error::EngineError;
use crate::labelset::LabelSet;
use crate::limits::QueryLimits;
use crate::pushdown::metric::TopWanted;
use crate::result::{QueryResult, QueryStats, Sample, Series};
use crate::sampling::{points, Ctx, StepSeries};
use crate::scope::QueryScope;
use runakefli_logql::{Grouping, SampleExpr, VectorOp};
use runakefli_model::Timestamp;

/// An evaluated expression.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    /// One number per step.
    Scalar(Vec<f64>),
    /// Series.
    Vector(Vec<StepSeries>),
}

/// Whether the series of the answer are exactly those of the expression's
/// single range aggregation: the aggregation itself, in parentheses, or
/// under arithmetic with a literal (`rate(…) * 60`), which keeps every series.
fn answer_is_range_series(e: &SampleExpr) -> bool {
    match e {
        SampleExpr::Paren(x) => answer_is_range_series(x),
        SampleExpr::RangeAggregation { .. } => true,
        SampleExpr::Binary {
            op,
            lhs,
            rhs,
            modifier,
        } if !op.is_set_op() && (!op.is_comparison() || modifier.return_bool) => {
            match (&**lhs, &**rhs) {
                (SampleExpr::Literal(_), x) | (x, SampleExpr::Literal(_)) => {
                    answer_is_range_series(x)
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// Counts, during one scan, the series that have a sample some step will use,
/// against [`Ctx::series_limit`].
pub(crate) struct SeriesBudget<'a> {
    max: Option<usize>,
    steps: &'a [Timestamp],
    range: i64,
    offset: i64,
    /// Every scanned point falls in some step's window (step ≤ range).
    gapless: bool,
    live: Vec<bool>,
    count: usize,
}

impl<'a> SeriesBudget<'a> {
    /// The budget of a scan for range aggregation `op` over `r`. Ops whose
    /// windows may give no value although they hold samples (`rate_counter`
    /// needs two, `absent_over_time` answers one series) are not counted.
    pub fn new(ctx: &'a Ctx, op: runakefli_logql::RangeOp, r: &runakefli_logql::LogRange) -> Self {
        use runakefli_logql::RangeOp;
        let counted = !matches!(op, RangeOp::RateCounter | RangeOp::AbsentOverTime);
        let step = match ctx.steps.as_slice() {
            [a, b, ..] => b - a,
            _ => 0,
        };
        SeriesBudget {
            max: ctx.series_limit.filter(|_| counted),
            steps: &ctx.steps,
            range: r.range,
            offset: r.offset,
            gapless: step <= r.range,
            live: Vec::new(),
            count: 0,
        }
    }

    /// A series was added (its index is the number added before).
    pub fn add_series(&mut self) {
        self.live.push(false);
    }

    /// Series `idx` has a sample at `ts`; false once more series than allowed
    /// have samples inside some step's window.
    pub fn note(&mut self, idx: usize, ts: Timestamp) -> bool {
        let Some(max) = self.max else { return true };
        if self.live[idx] || !(self.gapless || self.in_some_window(ts)) {
            return true;
        }
        self.live[idx] = true;
        self.count += 1;
        self.count <= max
    }

    /// Whether `ts` lies in `(t - range - offset, t - offset]` for some step `t`.
    fn in_some_window(&self, ts: Timestamp) -> bool {
        let u = ts.saturating_add(self.offset);
        let i = self.steps.partition_point(|&t| t < u);
        self.steps
            .get(i)
            .is_some_and(|&t| t.saturating_sub(self.range) < u)
    }

    /// The error for a budget that ran out.
    pub fn exceeded(&self) -> EngineError {
        EngineError::SeriesLimit(self.max.unwrap_or_default())
    }
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
                None,
            )?)),
            SampleExpr::VectorAggregation {
                op,
                expr,
                grouping,
                param,
            } => self.vector_aggregation(*op, expr, grouping.as_ref(), *param, None),
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

    /// `op [by …] (expr)`. `top`: the caller keeps only the `k` largest
    /// (`true`: smallest) of this aggregation's series at each step (see
    /// [`crate::pushdown::metric::range_series`]).
    fn vector_aggregation(
        &mut self,
        op: VectorOp,
        expr: &SampleExpr,
        grouping: Option<&Grouping>,
        param: Option<f64>,
        top: Option<TopWanted>,
    ) -> Result<Value, EngineError> {
        let pushed = match vector::sum_grouping_in_range(op, grouping, expr) {
            Some((rop, r, g)) => Some(range::eval(self, rop, r, None, Some(&g), top)?),
            None => None,
        };
        let inner = match pushed {
            Some(v) => v,
            None => {
                let value = match (top_wanted(op, grouping, param), unparen(expr)) {
                    // `topk(k, sum by (…) (…))`: the sum's plan may ship
                    // only the groups that can be among the top `k`.
                    (
                        Some(top),
                        SampleExpr::VectorAggregation {
                            op,
                            expr,
                            grouping,
                            param,
                        },
                    ) => {
                        self.vector_aggregation(*op, expr, grouping.as_ref(), *param, Some(top))?
                    }
                    _ => self.eval(expr)?,
                };
                match value {
                    Value::Vector(v) => v,
                    Value::Scalar(_) => {
                        return Err(EngineError::Plan(
                            "expected vector expression in aggregation".into(),
                        ))
                    }
                }
            }
        };
        let held = inner.len().saturating_mul(self.steps.len());
        let out = vector::aggregate(op, inner, grouping, param, self.steps.len())?;
        // The inputs' step values are gone; the output's are held.
        self.points.give_back(held);
        self.points
            .charge(out.len().saturating_mul(self.steps.len()))?;
        Ok(Value::Vector(out))
    }
}

/// `expr` without the parentheses around it.
fn unparen(mut expr: &SampleExpr) -> &SampleExpr {
    while let SampleExpr::Paren(e) = expr {
        expr = e;
    }
    expr
}

/// What `op` keeps when it is `topk`/`bottomk` keeping at least one series
/// per step: the series among the `k` largest (smallest) at some step, in
/// the parts its `by`/`without` makes.
fn top_wanted(op: VectorOp, grouping: Option<&Grouping>, param: Option<f64>) -> Option<TopWanted> {
    let bottom = match op {
        VectorOp::Topk => false,
        VectorOp::Bottomk => true,
        _ => return None,
    };
    let k = param?;
    // As `vector::topk` reads it: NaN or below 1 keeps nothing.
    (k >= 1.0).then(|| TopWanted {
        k: k as usize,
        bottom,
        grouping: grouping.cloned(),
    })
}

/// The limit a scan may enforce while it runs (see [`Ctx::series_limit`]).
fn early_series_limit(limits: &QueryLimits, expr: &SampleExpr) -> Option<usize> {
    (limits.max_query_series > 0 && answer_is_range_series(expr)).then_some(limits.max_query_series)
}

fn check_series(limits: &QueryLimits, n: usize) -> Result<(), EngineError> {
    if limits.max_query_series > 0 && n > limits.max_query_series {
        return Err(EngineError::SeriesLimit(limits.max_query_series));
    }
    Ok(())
}

/// The evaluation steps of a range query: `start, start+step, …` up to
/// `end` inclusive (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Steps {
    /// The first step.
    pub start: Timestamp,
    /// No step lies past it.
    pub end: Timestamp,
    /// The distance between steps (must be positive).
    pub step: i64,
}

/// Evaluates a metric query at every step of `steps`.
pub fn eval_range(
    scope: &QueryScope,
    limits: &QueryLimits,
    expr: &SampleExpr,
    steps: Steps,
    stats: &mut QueryStats,
) -> Result<QueryResult, EngineError> {
    let Steps { start, end, step } = steps;
    if step <= 0 {
        return Err(EngineError::BadRequest(
            "zero or negative query resolution step widths are not accepted. Try a positive integer".into(),
        ));
    }
    // Loki refuses more than 11,000 steps between start and end (so up to
    // 11,001 points), with its text from `pkg/loghttp`.
    let n = (end.saturating_sub(start) / step).max(0) + 1;
    if n > 11_001 {
        return Err(EngineError::BadRequest(
            "exceeded maximum resolution of 11,000 points per time series. Try increasing the value of the step parameter".into(),
        ));
    }
    let steps: Vec<Timestamp> = (0..n)
        .map(|i| start.saturating_add(i.saturating_mul(step)))
        .collect();
    let mut ctx = Ctx {
        deadline: scope.deadline,
        fast_paths: scope.fast_paths,
        backend: scope.backend,
        tenant: scope.tenant,
        steps,
        stats,
        series_limit: early_series_limit(limits, expr),
        points: points::PointBudget::new(limits.max_query_points),
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
    scope: &QueryScope,
    limits: &QueryLimits,
    expr: &SampleExpr,
    time: Timestamp,
    stats: &mut QueryStats,
) -> Result<QueryResult, EngineError> {
    let mut ctx = Ctx {
        deadline: scope.deadline,
        fast_paths: scope.fast_paths,
        backend: scope.backend,
        tenant: scope.tenant,
        steps: vec![time],
        stats,
        series_limit: early_series_limit(limits, expr),
        points: points::PointBudget::new(limits.max_query_points),
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

/// The scope of a test query of tenant `tenant` over `backend`, with the
/// default timeout.
#[cfg(test)]
pub(crate) fn test_scope<'a>(
    backend: &'a dyn runakefli_model::Backend,
    tenant: &'a runakefli_model::TenantId,
    fast_paths: crate::options::FastPaths,
) -> QueryScope<'a> {
    QueryScope {
        backend,
        tenant,
        deadline: std::time::Instant::now() + QueryLimits::default().query_timeout,
        fast_paths,
    }
}

fn outermost_vector_op(e: &SampleExpr) -> Option<VectorOp> {
    match e {
        SampleExpr::Paren(i) => outermost_vector_op(i),
        SampleExpr::VectorAggregation { op, .. } => Some(*op),
        _ => None,
    }
}
