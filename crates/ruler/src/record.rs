//! What a recording rule writes: each result series under the rule's
//! metric name with the rule's labels, and the `ALERTS` /
//! `ALERTS_FOR_STATE` series of alerting rules, as Prometheus writes them.

use crate::alert::{AlertSet, Series};
use crate::sample::RecordedSample;
use crate::validate::CompiledRule;
use std::collections::BTreeMap;

/// The samples of a recording rule's result at `t_ms`; fails past `limit`
/// series (0: none) or when two series end with the same labels.
pub fn recorded(
    rule: &CompiledRule,
    series: &[Series],
    tenant: &str,
    t_ms: i64,
    limit: usize,
) -> Result<Vec<RecordedSample>, String> {
    if limit > 0 && series.len() > limit {
        return Err(format!(
            "exceeded limit of {limit} with {} series",
            series.len()
        ));
    }
    let mut out: BTreeMap<Vec<(String, String)>, f64> = BTreeMap::new();
    for (labels, value) in series {
        let mut l = labels.clone();
        for (k, v) in &rule.rule.labels {
            if v.is_empty() {
                l.remove(k);
            } else {
                l.insert(k.clone(), v.clone());
            }
        }
        l.insert("__name__".into(), rule.rule.name().to_string());
        if out.insert(l.into_iter().collect(), *value).is_some() {
            return Err(
                "vector contains metrics with the same labelset after applying rule labels".into(),
            );
        }
    }
    Ok(out
        .into_iter()
        .map(|(labels, value)| RecordedSample {
            tenant: tenant.to_string(),
            labels,
            t_ms,
            value,
        })
        .collect())
}

/// `ALERTS{alertstate=…}` = 1 and `ALERTS_FOR_STATE` = the alert's active
/// time in seconds, for every pending or firing alert.
pub fn alert_series(alerts: &AlertSet, tenant: &str, t_ms: i64) -> Vec<RecordedSample> {
    let mut out = Vec::new();
    for a in alerts.active() {
        let mut l = a.labels.clone();
        l.insert("__name__".into(), "ALERTS_FOR_STATE".into());
        out.push(RecordedSample {
            tenant: tenant.to_string(),
            labels: l.clone().into_iter().collect(),
            t_ms,
            value: (a.active_at_ns / 1_000_000_000) as f64,
        });
        l.insert("__name__".into(), "ALERTS".into());
        l.insert("alertstate".into(), a.state.as_str().into());
        out.push(RecordedSample {
            tenant: tenant.to_string(),
            labels: l.into_iter().collect(),
            t_ms,
            value: 1.0,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{Rule, RuleGroup};

    #[test]
    fn recorded_series_take_the_name_and_labels() {
        let g = RuleGroup {
            name: "g".into(),
            rules: vec![Rule {
                record: Some("app:lines:rate1m".into()),
                expr: "sum by (app) (rate({app=~\".+\"}[1m]))".into(),
                labels: [("source".to_string(), "ruler".to_string())].into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let c = crate::validate::compile_group(&g, &Default::default()).expect("valid");
        let series = vec![([("app".to_string(), "api".to_string())].into(), 2.5)];
        let out = recorded(&c.rules[0], &series, "fake", 1000, 0).expect("records");
        assert_eq!(
            out[0].labels,
            [
                ("__name__".to_string(), "app:lines:rate1m".to_string()),
                ("app".into(), "api".into()),
                ("source".into(), "ruler".into())
            ]
        );
        assert_eq!((out[0].t_ms, out[0].value), (1000, 2.5));
        assert!(recorded(
            &c.rules[0],
            &[series[0].clone(), series[0].clone()],
            "fake",
            0,
            1
        )
        .is_err());
    }
}
