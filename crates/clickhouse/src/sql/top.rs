//! `topk`/`bottomk` over a label-grouped bucket plan ([`TopGroups`]): only
//! the groups among the top at some step are shipped.
//!
//! The grouped query gives one row per (group, bucket). Around it, per
//! group: its buckets as a list, and the running sums of its rows and line
//! bytes over every bucket (`groupArrayInsertAt` makes the dense list,
//! `arrayCumSum` the running sums), from which each step's window value is
//! one subtraction. The group's buckets and its present step values become
//! rows of one kind each (`ARRAY JOIN`); the step rows are ranked per step
//! with `rank()` (ties share a rank, so every group tied at the `k`-th place
//! ranks `k` or better), and a group is shipped when one of its step rows
//! ranks `k` or better — or when any row was left to the engine (residual
//! rows may add to any group, so then every group is shipped). Only bucket
//! rows leave, in the grouped query's columns.

use crate::Error;
use runakefli_model::plan::{BucketPlan, BucketValue, GroupBy, TopGroups};

/// `inner` (a label-grouped bucket query: columns `key`, `bucket`, `rows`,
/// `bytes`, and with `residual_cols` also `res`, `rsid`, `rrow`, `residual`)
/// keeping only the groups `top` wants and the residual rows, same columns.
pub(super) fn top_groups_query(
    inner: &str,
    b: &BucketPlan,
    top: &TopGroups,
    residual_cols: bool,
) -> Result<String, Error> {
    let value = match b.value {
        BucketValue::Count => "t.3",
        BucketValue::LineBytes => "t.4",
        v => {
            return Err(Error::Unsupported(format!(
                "top groups of {v:?} buckets are not translated"
            )))
        }
    };
    let nb = b.buckets();
    if top.k == 0 || top.windows.iter().any(|&(a, e)| a > e || e as usize > nb) {
        return Err(Error::Unsupported("top groups: bad windows".into()));
    }
    let source = if residual_cols {
        format!("SELECT res, rsid, rrow, key, bucket, rows, bytes, residual FROM ({inner})")
    } else {
        format!(
            "SELECT 0 AS res, toUInt64(0) AS rsid, toUInt64(0) AS rrow, key, bucket, rows, \
             bytes FROM ({inner})"
        )
    };
    let (carry, carry_any, out_residual) = if residual_cols {
        (", residual", ", any(residual) AS residual", ", residual")
    } else {
        ("", "", "")
    };
    // Rows and bytes of buckets `a..e`: `cr[e] - cr[a]` (index 0 reads 0).
    let step_rows = format!(
        "arrayFilter(t -> NOT res AND t.3 > 0, arrayMap(s -> \
         (toUInt8(1), toUInt64(s), toUInt64(cr[{e}] - cr[{a}]), toUInt64(cb[{e}] - cb[{a}]), toUInt64(0)), \
         range({n})))",
        a = window_end(top.windows.iter().map(|w| w.0))?,
        e = window_end(top.windows.iter().map(|w| w.1))?,
        n = top.windows.len(),
    );
    let order = if top.bottom { "ASC" } else { "DESC" };
    // `topk by (…)`: ranked within the groups alike in those labels (an
    // absent label apart from `""`: the engine's label sets may hold
    // either, and parting finer only ships more groups).
    let mut parts = String::new();
    for l in &top.partition {
        let i = match &b.group_by {
            GroupBy::Labels(labels) => labels.iter().position(|g| g == l),
            GroupBy::Stream => None,
        };
        let Some(i) = i else {
            return Err(Error::Unsupported(format!(
                "top groups parted by {l:?}, not a group label"
            )));
        };
        parts.push_str(&format!(", key[{}]", i + 1));
    }
    Ok(format!(
        "SELECT res, rsid, rrow, key, bucket, rows, bytes{out_residual} FROM (\
         SELECT *, max(kind = 1 AND rk <= {k}) OVER (PARTITION BY res, rsid, rrow, key) \
         OR max(res) OVER () AS wanted FROM (\
         SELECT *, rank() OVER (PARTITION BY kind, bucket{parts} ORDER BY v {order}) AS rk FROM (\
         SELECT res, rsid, rrow, key, e.1 AS kind, e.2 AS bucket, e.3 AS rows, e.4 AS bytes, \
         e.5 AS v{carry} FROM (\
         SELECT res, rsid, rrow, key, \
         groupArray((toUInt8(0), toUInt64(bucket), toUInt64(rows), toUInt64(bytes), toUInt64(0))) AS bk, \
         arrayCumSum(groupArrayInsertAt(toUInt64(0), {nb})(toUInt64(rows), toUInt32(bucket))) AS cr, \
         arrayCumSum(groupArrayInsertAt(toUInt64(0), {nb})(toUInt64(bytes), toUInt32(bucket))) AS cb\
         {carry_any} FROM ({source}) GROUP BY res, rsid, rrow, key) \
         ARRAY JOIN arrayConcat(bk, arrayMap(t -> (t.1, t.2, t.3, t.4, {value}), {step_rows})) AS e))) \
         WHERE kind = 0 AND wanted",
        k = top.k,
    ))
}

/// An expression of the step number `s` (0-based) giving the bucket index
/// in `ends` at that step: `a + s * d` when they step evenly (the usual
/// case), else a lookup in a literal list.
fn window_end(ends: impl Iterator<Item = u32> + Clone) -> Result<String, Error> {
    let v: Vec<i64> = ends.map(i64::from).collect();
    let Some(&first) = v.first() else {
        return Err(Error::Unsupported("top groups: no steps".into()));
    };
    let d = v.get(1).map_or(0, |x| x - first);
    if v.iter()
        .enumerate()
        .all(|(s, &x)| x == first + s as i64 * d)
    {
        return Ok(format!("({first} + s * {d})"));
    }
    let list: Vec<String> = v.iter().map(i64::to_string).collect();
    Ok(format!("[{}][s + 1]", list.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(value: BucketValue, windows: Vec<(u32, u32)>) -> (BucketPlan, TopGroups) {
        let top = TopGroups {
            k: 2,
            bottom: false,
            windows,
            partition: Vec::new(),
        };
        let b = BucketPlan {
            bounds: (0..=6).map(|i| i * 10).collect(),
            group_by: GroupBy::Labels(vec!["app".into()]),
            value,
            top: Some(top.clone()),
        };
        (b, top)
    }

    #[test]
    fn even_windows_are_arithmetic_and_others_a_list() {
        assert_eq!(window_end([1u32, 2, 3].into_iter()).unwrap(), "(1 + s * 1)");
        assert_eq!(window_end([4u32].into_iter()).unwrap(), "(4 + s * 0)");
        assert_eq!(
            window_end([0u32, 2, 3].into_iter()).unwrap(),
            "[0, 2, 3][s + 1]"
        );
        assert!(window_end(std::iter::empty()).is_err());
    }

    #[test]
    fn ranks_counts_or_bytes_and_refuses_other_values() {
        let (b, top) = plan(BucketValue::Count, vec![(0, 2), (1, 3), (2, 4)]);
        let q = top_groups_query("SELECT 1", &b, &top, false).unwrap();
        assert!(q.contains("rk <= 2"), "{q}");
        assert!(q.contains("ORDER BY v DESC"), "{q}");
        assert!(q.contains("t.4, t.3)"), "{q}");
        assert!(!q.contains("residual"), "{q}");
        let (b, top) = plan(BucketValue::LineBytes, vec![(0, 2), (1, 3), (2, 4)]);
        let bottom = TopGroups {
            bottom: true,
            ..top
        };
        let q = top_groups_query("SELECT 1", &b, &bottom, true).unwrap();
        assert!(
            q.contains("ORDER BY v ASC") && q.contains("t.4, t.4)"),
            "{q}"
        );
        assert!(q.contains(", residual FROM"), "{q}");
        let (b, top) = plan(BucketValue::Min, vec![(0, 2)]);
        assert!(top_groups_query("SELECT 1", &b, &top, true).is_err());
        // `topk by (app)`: ranked per step and app; a label the plan
        // does not group by is refused.
        let (b, top) = plan(BucketValue::Count, vec![(0, 2)]);
        let parted = TopGroups {
            partition: vec!["app".into()],
            ..top.clone()
        };
        let q = top_groups_query("SELECT 1", &b, &parted, false).unwrap();
        assert!(
            q.contains("PARTITION BY kind, bucket, key[1] ORDER BY"),
            "{q}"
        );
        let stray = TopGroups {
            partition: vec!["pod".into()],
            ..top
        };
        assert!(top_groups_query("SELECT 1", &b, &stray, false).is_err());
        // A window past the buckets is refused, not read as zeros.
        let (b, top) = plan(BucketValue::Count, vec![(0, 7)]);
        assert!(top_groups_query("SELECT 1", &b, &top, false).is_err());
    }
}
