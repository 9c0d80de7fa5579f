//! The state of an alerting rule's alerts, as Prometheus keeps it: a result
//! series makes an alert *pending*; after `for` it is *firing*; when the
//! series goes away it is resolved (*inactive*), after `keep_firing_for`
//! when that is set. Resolved alerts are kept 15 minutes, their resolution
//! sent to Alertmanager every resend delay meanwhile, as Prometheus does.

use crate::template::Data;
use crate::validate::CompiledRule;
use std::collections::BTreeMap;
use std::time::Duration;

/// How long a resolved alert is kept (and its resolution resent), as
/// Prometheus' `resolvedRetention`.
pub const RESOLVED_RETENTION: Duration = Duration::from_secs(15 * 60);

/// A result series of a query: labels and value.
pub type Series = (BTreeMap<String, String>, f64);

/// An alert's labels, annotations and value as one evaluation expands them.
type Expanded = (BTreeMap<String, String>, BTreeMap<String, String>, f64);

/// Where an alert is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AlertState {
    /// Condition holds, `for` not yet elapsed.
    Pending,
    /// Condition held for `for`.
    Firing,
    /// Resolved.
    Inactive,
}

impl AlertState {
    /// Prometheus' name of the state.
    pub fn as_str(self) -> &'static str {
        match self {
            AlertState::Pending => "pending",
            AlertState::Firing => "firing",
            AlertState::Inactive => "inactive",
        }
    }
}

/// One alert of a rule (saved across restarts by [`crate::alert_store`],
/// its value left out: the next evaluation sets it).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Alert {
    /// Final labels: the series' (without `__name__`), the rule's, `alertname`.
    pub labels: BTreeMap<String, String>,
    /// Expanded annotations.
    pub annotations: BTreeMap<String, String>,
    /// The value at the last evaluation where the condition held.
    #[serde(skip)]
    pub value: f64,
    /// Its state.
    pub state: AlertState,
    /// When it became pending, ns.
    pub active_at_ns: i64,
    /// When it started firing, ns.
    pub fired_at_ns: Option<i64>,
    /// When it was resolved, ns.
    pub resolved_at_ns: Option<i64>,
    /// When it was last handed to the notifier, ns.
    pub last_sent_ns: Option<i64>,
    /// The `endsAt` a firing notification carries, ns.
    pub valid_until_ns: i64,
    /// Since when it is kept firing without its condition (`keep_firing_for`).
    pub keep_firing_since_ns: Option<i64>,
}

/// The alerts of one alerting rule.
#[derive(Clone, Debug, Default)]
pub struct AlertSet {
    /// By final label set.
    pub alerts: BTreeMap<Vec<(String, String)>, Alert>,
}

/// What a template expands to when it fails (Prometheus shows the error).
fn expand_or_error(t: &crate::template::AlertTemplate, data: &Data<'_>, what: &str) -> String {
    t.expand(data)
        .unwrap_or_else(|e| format!("<error expanding template: {what}: {e}>"))
}

impl AlertSet {
    /// Applies one evaluation at `t_ns` of `rule` whose query returned
    /// `series`. `limit` (0: none) caps the alerts; past it the rule fails
    /// and its alerts are dropped, as Prometheus does.
    pub fn eval(
        &mut self,
        rule: &CompiledRule,
        series: &[Series],
        t_ns: i64,
        limit: usize,
        external_url: &str,
    ) -> Result<(), String> {
        let alert_name = rule.rule.name();
        let mut seen: BTreeMap<Vec<(String, String)>, Expanded> = BTreeMap::new();
        for (labels, value) in series {
            let mut base = labels.clone();
            base.remove("__name__");
            let data = Data {
                labels: &base,
                value: *value,
                external_url,
            };
            let mut out = base.clone();
            for (k, t) in &rule.label_templates {
                out.insert(k.clone(), expand_or_error(t, &data, k));
            }
            out.retain(|_, v| !v.is_empty());
            out.insert("alertname".into(), alert_name.to_string());
            let annotations = rule
                .annotation_templates
                .iter()
                .map(|(k, t)| (k.clone(), expand_or_error(t, &data, k)))
                .collect();
            let key: Vec<(String, String)> = out.clone().into_iter().collect();
            if seen.insert(key, (out, annotations, *value)).is_some() {
                return Err(
                    "vector contains metrics with the same labelset after applying alert labels"
                        .into(),
                );
            }
        }
        if limit > 0 && seen.len() > limit {
            self.alerts.clear();
            return Err(format!(
                "exceeded limit of {limit} with {} alerts",
                seen.len()
            ));
        }
        let hold = rule.rule.for_.unwrap_or_default();
        let hold_ns = i64::try_from(hold.as_nanos()).unwrap_or(i64::MAX);
        for (key, (labels, annotations, value)) in &seen {
            match self.alerts.get_mut(key) {
                Some(a) if a.state != AlertState::Inactive => {
                    a.value = *value;
                    a.annotations = annotations.clone();
                    a.keep_firing_since_ns = None;
                }
                _ => {
                    self.alerts.insert(
                        key.clone(),
                        Alert {
                            labels: labels.clone(),
                            annotations: annotations.clone(),
                            value: *value,
                            state: AlertState::Pending,
                            active_at_ns: t_ns,
                            fired_at_ns: None,
                            resolved_at_ns: None,
                            last_sent_ns: None,
                            valid_until_ns: 0,
                            keep_firing_since_ns: None,
                        },
                    );
                }
            }
        }
        let keep_ns = rule
            .rule
            .keep_firing_for
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        let retention_ns = i64::try_from(RESOLVED_RETENTION.as_nanos()).unwrap_or(i64::MAX);
        self.alerts.retain(|key, a| {
            if seen.contains_key(key) {
                if a.state == AlertState::Pending && t_ns.saturating_sub(a.active_at_ns) >= hold_ns
                {
                    a.state = AlertState::Firing;
                    a.fired_at_ns = Some(t_ns);
                }
                return true;
            }
            match a.state {
                AlertState::Pending => false,
                AlertState::Firing => {
                    if keep_ns > 0 {
                        let since = *a.keep_firing_since_ns.get_or_insert(t_ns);
                        if t_ns.saturating_sub(since) < keep_ns {
                            return true;
                        }
                    }
                    a.state = AlertState::Inactive;
                    a.resolved_at_ns = Some(t_ns);
                    true
                }
                // Kept until more than the retention has passed, as
                // Prometheus (`ts.Sub(ResolvedAt) > resolvedRetention`).
                AlertState::Inactive => {
                    t_ns.saturating_sub(a.resolved_at_ns.unwrap_or(t_ns)) <= retention_ns
                }
            }
        });
        Ok(())
    }

    /// The alerts to notify at `t_ns`: firing ones not sent within
    /// `resend_delay`, resolutions not yet sent, and resolved ones still
    /// kept not sent within `resend_delay`. Marks them sent and
    /// sets a firing alert's `valid_until_ns` (four times the longer of the
    /// resend delay and the group's interval, as Prometheus).
    pub fn take_notifications(
        &mut self,
        t_ns: i64,
        resend_delay: Duration,
        interval: Duration,
    ) -> Vec<Alert> {
        let resend_ns = i64::try_from(resend_delay.as_nanos()).unwrap_or(i64::MAX);
        let valid_ns =
            i64::try_from(resend_delay.max(interval).as_nanos()).unwrap_or(i64::MAX / 4) * 4;
        let mut out = Vec::new();
        for a in self.alerts.values_mut() {
            let due = match a.state {
                AlertState::Pending => false,
                // Resolved since last sent (or never sent: an alert
                // restored firing that resolved at once); then, as a
                // firing one, every resend delay while it is kept (15
                // minutes), as Prometheus does: an Alertmanager that missed
                // the resolution (down, or its queue full) still gets it.
                AlertState::Inactive => match (a.resolved_at_ns, a.last_sent_ns) {
                    (Some(r), Some(s)) => r > s || t_ns.saturating_sub(s) >= resend_ns,
                    (Some(_), None) => true,
                    _ => false,
                },
                AlertState::Firing => a
                    .last_sent_ns
                    .is_none_or(|s| t_ns.saturating_sub(s) >= resend_ns),
            };
            if due {
                a.last_sent_ns = Some(t_ns);
                a.valid_until_ns = t_ns.saturating_add(valid_ns);
                out.push(a.clone());
            }
        }
        out
    }

    /// Pending and firing alerts, in label order.
    pub fn active(&self) -> impl Iterator<Item = &Alert> {
        self.alerts
            .values()
            .filter(|a| a.state != AlertState::Inactive)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Rule;
    use crate::validate::compile_group;

    fn rule(for_secs: u64, keep_secs: u64) -> CompiledRule {
        let g = crate::rules::RuleGroup {
            name: "g".into(),
            rules: vec![Rule {
                alert: Some("High".into()),
                expr: "sum by (app) (count_over_time({app=~\".+\"}[1m])) > 1".into(),
                for_: Some(Duration::from_secs(for_secs)),
                keep_firing_for: (keep_secs > 0).then(|| Duration::from_secs(keep_secs)),
                labels: [("severity".to_string(), "page-{{ $labels.app }}".to_string())].into(),
                annotations: [(
                    "summary".to_string(),
                    "{{ $labels.app }} has {{ $value }} lines".to_string(),
                )]
                .into(),
                ..Rule::default()
            }],
            ..Default::default()
        };
        compile_group(&g, &Default::default())
            .expect("valid")
            .rules
            .remove(0)
    }

    fn series(app: &str, v: f64) -> Series {
        ([("app".to_string(), app.to_string())].into(), v)
    }

    const S: i64 = 1_000_000_000;

    #[test]
    fn pending_then_firing_then_resolved() {
        let r = rule(10, 0);
        let mut set = AlertSet::default();
        set.eval(&r, &[series("api", 5.0)], 100 * S, 0, "")
            .expect("evaluates");
        let a = set.alerts.values().next().expect("one alert");
        assert_eq!(a.state, AlertState::Pending);
        assert_eq!(a.labels["severity"], "page-api");
        assert_eq!(a.labels["alertname"], "High");
        assert_eq!(a.annotations["summary"], "api has 5 lines");
        assert!(set
            .take_notifications(100 * S, Duration::from_secs(60), Duration::from_secs(1))
            .is_empty());
        set.eval(&r, &[series("api", 6.0)], 105 * S, 0, "")
            .expect("evaluates");
        assert_eq!(
            set.active().next().expect("alert").state,
            AlertState::Pending
        );
        set.eval(&r, &[series("api", 7.0)], 110 * S, 0, "")
            .expect("evaluates");
        let a = set.active().next().expect("alert");
        assert_eq!(a.state, AlertState::Firing);
        assert_eq!(a.annotations["summary"], "api has 7 lines");
        let sent = set.take_notifications(110 * S, Duration::from_secs(60), Duration::from_secs(1));
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].valid_until_ns, 110 * S + 240 * S);
        // Not resent before the resend delay.
        assert!(set
            .take_notifications(111 * S, Duration::from_secs(60), Duration::from_secs(1))
            .is_empty());
        assert_eq!(
            set.take_notifications(170 * S, Duration::from_secs(60), Duration::from_secs(1))
                .len(),
            1
        );
        set.eval(&r, &[], 171 * S, 0, "").expect("evaluates");
        let sent = set.take_notifications(171 * S, Duration::from_secs(60), Duration::from_secs(1));
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].state, AlertState::Inactive);
        assert_eq!(sent[0].resolved_at_ns, Some(171 * S));
        assert_eq!(set.active().count(), 0);
        // A pending alert whose series goes away is dropped, never sent.
        set.eval(&r, &[series("db", 2.0)], 172 * S, 0, "")
            .expect("evaluates");
        set.eval(&r, &[], 173 * S, 0, "").expect("evaluates");
        assert_eq!(set.active().count(), 0);
    }

    #[test]
    fn a_resolution_is_resent_every_resend_delay_for_fifteen_minutes() {
        let r = rule(0, 0);
        let mut set = AlertSet::default();
        let delay = Duration::from_secs(60);
        let every = Duration::from_secs(10);
        set.eval(&r, &[series("api", 5.0)], 100 * S, 0, "")
            .expect("evaluates");
        assert_eq!(set.take_notifications(100 * S, delay, every).len(), 1);
        set.eval(&r, &[], 130 * S, 0, "").expect("evaluates");
        // The resolution at once, though the last send is 30 s old.
        let sent = set.take_notifications(130 * S, delay, every);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].state, AlertState::Inactive);
        let mut resent = vec![130];
        let mut t = 140;
        // Evaluations every 10 s up to past 15 minutes after the resolution.
        while t <= 130 + 15 * 60 + 30 {
            set.eval(&r, &[], t * S, 0, "").expect("evaluates");
            for a in set.take_notifications(t * S, delay, every) {
                assert_eq!(a.state, AlertState::Inactive);
                assert_eq!(
                    a.resolved_at_ns,
                    Some(130 * S),
                    "endsAt stays the resolution"
                );
                resent.push(t);
            }
            t += 10;
        }
        // Every minute while kept; kept while at most 15 minutes old.
        let want: Vec<i64> = (0..=15).map(|m| 130 + 60 * m).collect();
        assert_eq!(resent, want);
        assert!(set.alerts.is_empty(), "dropped after 15 minutes");
        assert!(set.take_notifications(t * S, delay, every).is_empty());
    }

    #[test]
    fn keep_firing_for_holds_a_firing_alert() {
        let r = rule(0, 30);
        let mut set = AlertSet::default();
        set.eval(&r, &[series("api", 5.0)], 100 * S, 0, "")
            .expect("evaluates");
        assert_eq!(
            set.active().next().expect("alert").state,
            AlertState::Firing
        );
        set.eval(&r, &[], 110 * S, 0, "").expect("evaluates");
        assert_eq!(
            set.active().next().expect("alert").state,
            AlertState::Firing
        );
        set.eval(&r, &[], 139 * S, 0, "").expect("evaluates");
        assert_eq!(set.active().count(), 1);
        set.eval(&r, &[], 140 * S, 0, "").expect("evaluates");
        assert_eq!(set.active().count(), 0);
    }

    #[test]
    fn limit_and_duplicate_labelsets_fail_the_rule() {
        let r = rule(0, 0);
        let mut set = AlertSet::default();
        let e = set
            .eval(&r, &[series("a", 2.0), series("b", 3.0)], S, 1, "")
            .expect_err("over the limit");
        assert_eq!(e, "exceeded limit of 1 with 2 alerts");
        assert_eq!(set.active().count(), 0);
    }
}
