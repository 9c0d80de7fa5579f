//! One rule group at run time: its rules' health and alerts (what the API
//! shows), one evaluation of its rules in order, and the loop that runs it
//! on its own thread at its own slots in the interval, so a slow group
//! delays no other.

use crate::alert::AlertSet;
use crate::alert_store::{rule_key, AlertStore};
use crate::config::Config;
use crate::metrics::RulerMetrics;
use crate::notifier::{Notification, Notifier};
use crate::query::Querier;
use crate::record::{alert_series, recorded};
use crate::remote_write::RemoteWriter;
use crate::validate::CompiledGroup;
use parking_lot::Mutex;
use runakefli_model::TenantId;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What every group's evaluation uses: the query path and the sinks.
pub struct Env {
    /// Runs the rules' queries.
    pub querier: Arc<dyn Querier>,
    /// Alertmanager, when configured.
    pub notifier: Option<Notifier>,
    /// The remote-write receiver, when configured.
    pub writer: Option<RemoteWriter>,
    /// Alerts kept across restarts, when configured.
    pub alerts: Option<AlertStore>,
    /// Counters.
    pub metrics: Arc<RulerMetrics>,
    /// Settings.
    pub config: Config,
}

/// A rule's last outcome.
#[derive(Clone, Debug, Default)]
pub struct RuleStatus {
    /// `None` before the first evaluation; the error of the last one.
    pub last_error: Option<String>,
    /// Evaluated at least once.
    pub evaluated: bool,
    /// Evaluation time of the last run, ns.
    pub last_eval_ns: i64,
    /// Seconds it took.
    pub eval_secs: f64,
    /// An alerting rule's alerts.
    pub alerts: AlertSet,
}

/// A group's last outcome.
#[derive(Clone, Debug, Default)]
pub struct GroupStatus {
    /// Per rule, in order.
    pub rules: Vec<RuleStatus>,
    /// Evaluation time of the last run, ns (0: never).
    pub last_eval_ns: i64,
    /// Seconds it took.
    pub eval_secs: f64,
}

/// A loaded group of a tenant's namespace.
pub struct GroupState {
    /// The tenant.
    pub tenant: TenantId,
    /// The namespace (its file's name).
    pub namespace: String,
    /// The group, checked.
    pub compiled: CompiledGroup,
    /// Its evaluation interval.
    pub interval: Duration,
    /// Its rules' outcomes.
    pub status: Mutex<GroupStatus>,
}

impl GroupState {
    /// A group not yet evaluated, taking over the alerts of `previous` for
    /// rules of the same name and expression (a reload keeps pending and
    /// firing alerts), or without `previous` the alerts `saved` kept from
    /// before a restart.
    pub fn new(
        tenant: TenantId,
        namespace: String,
        compiled: CompiledGroup,
        default_interval: Duration,
        previous: Option<&GroupState>,
        saved: Option<&AlertStore>,
    ) -> GroupState {
        let interval = compiled.group.interval.unwrap_or(default_interval);
        let old = previous.map(|p| (p, p.status.lock().clone()));
        let rules = compiled
            .rules
            .iter()
            .map(|r| {
                let mut status = RuleStatus::default();
                if let Some((p, st)) = &old {
                    let same =
                        p.compiled.rules.iter().position(|o| {
                            o.rule.name() == r.rule.name() && o.rule.expr == r.rule.expr
                        });
                    if let Some(i) = same {
                        status = st.rules[i].clone();
                    }
                } else if let (Some(store), true) = (saved, r.rule.is_alert()) {
                    let key = rule_key(
                        tenant.as_str(),
                        &namespace,
                        &compiled.group.name,
                        r.rule.name(),
                        &r.rule.expr,
                    );
                    for a in store.restore(&key) {
                        status
                            .alerts
                            .alerts
                            .insert(a.labels.clone().into_iter().collect(), a);
                    }
                }
                status
            })
            .collect();
        GroupState {
            tenant,
            namespace,
            interval,
            status: Mutex::new(GroupStatus {
                rules,
                ..GroupStatus::default()
            }),
            compiled,
        }
    }

    /// The key of one of its rules in the [`AlertStore`].
    pub fn rule_key(&self, rule: &crate::validate::CompiledRule) -> String {
        rule_key(
            self.tenant.as_str(),
            &self.namespace,
            &self.compiled.group.name,
            rule.rule.name(),
            &rule.rule.expr,
        )
    }

    /// The group's name in metrics: `namespace;group`, as Prometheus'
    /// `file;group`.
    pub fn metric_name(&self) -> String {
        format!("{};{}", self.namespace, self.compiled.group.name)
    }

    /// Evaluates every rule in order at `t_ns` and hands alerts and samples
    /// to the sinks.
    pub fn evaluate(&self, t_ns: i64, env: &Env) {
        let start = Instant::now();
        let t_ms = t_ns.div_euclid(1_000_000);
        let tenant = self.tenant.as_str();
        let limit = self.compiled.group.limit;
        let url = env.config.external_url.as_str();
        let mut notes = Vec::new();
        let mut samples = Vec::new();
        let mut failures = 0u64;
        for (i, rule) in self.compiled.rules.iter().enumerate() {
            let r0 = Instant::now();
            let result = env.querier.instant(&self.tenant, &rule.expr, t_ns);
            let mut status = self.status.lock();
            let Some(rs) = status.rules.get_mut(i) else {
                continue;
            };
            let outcome = result.and_then(|series| {
                if rule.rule.is_alert() {
                    let r = rs.alerts.eval(rule, &series, t_ns, limit, url);
                    samples.extend(alert_series(&rs.alerts, tenant, t_ms));
                    r
                } else {
                    samples.extend(recorded(rule, &series, tenant, t_ms, limit)?);
                    Ok(())
                }
            });
            if rule.rule.is_alert() {
                if let Some(store) = &env.alerts {
                    store.save(&self.rule_key(rule), rs.alerts.active().cloned().collect());
                }
                notes.extend(
                    rs.alerts
                        .take_notifications(t_ns, env.config.resend_delay, self.interval)
                        .iter()
                        .map(|a| Notification::of(a, &rule.rule.expr, url)),
                );
            }
            if let Err(e) = &outcome {
                failures += 1;
                tracing::warn!(tenant, group = %self.metric_name(), rule = rule.rule.name(), error = %e, "rule evaluation failed");
            }
            rs.last_error = outcome.err();
            rs.evaluated = true;
            rs.last_eval_ns = t_ns;
            rs.eval_secs = r0.elapsed().as_secs_f64();
        }
        let secs = start.elapsed().as_secs_f64();
        {
            let mut status = self.status.lock();
            status.last_eval_ns = t_ns;
            status.eval_secs = secs;
        }
        if let Some(n) = &env.notifier {
            n.send(notes);
        }
        if let Some(w) = &env.writer {
            w.write(samples);
        }
        env.metrics.group(tenant, &self.metric_name(), |f| {
            f.evaluations += 1;
            f.failures += failures;
            f.last_evaluation_secs = t_ns as f64 / 1e9;
            f.last_duration_secs = secs;
            f.duration_sum_secs += secs;
            f.rules = self.compiled.rules.len();
        });
    }
}

/// The first evaluation time after `now_ns` of a group whose slots are
/// `offset_ns` past the multiples of `interval`.
pub fn next_slot(now_ns: i64, interval: Duration, offset_ns: i64) -> i64 {
    let step = i64::try_from(interval.as_nanos())
        .unwrap_or(i64::MAX)
        .max(1);
    let offset = offset_ns.rem_euclid(step);
    (now_ns.saturating_sub(offset).div_euclid(step) + 1)
        .saturating_mul(step)
        .saturating_add(offset)
}

/// Where in its interval a group's evaluations fall, in nanoseconds: a hash
/// of its tenant, namespace and name, modulo the interval, in whole
/// milliseconds (an evaluation time is then exactly its samples' time).
/// Prometheus offsets each group the same way (by a hash of its name and
/// file), so that groups sharing an interval do not all evaluate at the same
/// instant; the hash is stable, so a restart keeps a group's slots.
pub fn slot_offset_ns(tenant: &str, namespace: &str, group: &str, interval: Duration) -> i64 {
    let step_ms = u64::try_from(interval.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    // FNV-1a over the three names, each ended by a 0 byte (no name holds one).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in [tenant, namespace, group]
        .iter()
        .flat_map(|n| n.bytes().chain([0]))
    {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    i64::try_from(h % step_ms).map_or(0, |ms| ms.saturating_mul(1_000_000))
}

/// Runs `group` at its slots ([`slot_offset_ns`]) until `stop` is disconnected (its sender
/// dropped). An evaluation that overruns its interval skips the times it
/// ran past, counted as missed; evaluation times never lie behind the clock.
pub fn run(group: Arc<GroupState>, env: Arc<Env>, stop: Receiver<()>) {
    let step = i64::try_from(group.interval.as_nanos())
        .unwrap_or(i64::MAX)
        .max(1);
    let offset = slot_offset_ns(
        group.tenant.as_str(),
        &group.namespace,
        &group.compiled.group.name,
        group.interval,
    );
    let mut t = next_slot(crate::time::now_ns(), group.interval, offset);
    loop {
        let wait = t.saturating_sub(crate::time::now_ns());
        let wait = Duration::from_nanos(u64::try_from(wait).unwrap_or(0));
        match stop.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return,
        }
        group.evaluate(t, &env);
        t += step;
        // Times already past are skipped: the next evaluation is at the
        // first slot still ahead.
        let now = crate::time::now_ns();
        if now > t {
            let missed = (now - t) / step + 1;
            t += missed * step;
            let name = group.metric_name();
            env.metrics.group(group.tenant.as_str(), &name, |f| {
                f.missed += u64::try_from(missed).unwrap_or(0)
            });
            tracing::warn!(group = %name, missed, "rule group evaluation ran over its interval");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_slot_is_the_first_time_after_now_at_the_offset() {
        let minute = Duration::from_secs(60);
        let step = 60_000_000_000i64;
        for (now, offset) in [
            (0, 0),
            (1, 0),
            (step, 0),
            (step - 1, 7),
            (step + 7, 7),
            (5 * step + 3, step - 1),
            (-5 * step + 3, 12),
            (1_796_402_452_123_456_789, 41_000_000_017),
        ] {
            let t = next_slot(now, minute, offset);
            assert!(t > now && t - now <= step, "{now} {offset}: {t}");
            assert_eq!(t.rem_euclid(step), offset, "{now} {offset}: {t}");
        }
        // An offset outside the interval is taken modulo it.
        assert_eq!(next_slot(0, minute, step + 5), 5);
        assert_eq!(next_slot(0, minute, -1), step - 1);
    }

    #[test]
    fn groups_sharing_an_interval_get_stable_offsets_spread_over_it() {
        let minute = Duration::from_secs(60);
        let offsets: Vec<i64> = (0..20)
            .map(|i| slot_offset_ns("fake", "rules", &format!("app-{i}"), minute))
            .collect();
        assert!(offsets
            .iter()
            .all(|o| (0..60_000_000_000).contains(o) && o % 1_000_000 == 0));
        let mut distinct = offsets.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 20, "{offsets:?}");
        // Spread: not bunched in one part of the minute.
        let halves = offsets.iter().filter(|&&o| o < 30_000_000_000).count();
        assert!((4..=16).contains(&halves), "{offsets:?}");
        // Stable, and every name counts.
        assert_eq!(slot_offset_ns("fake", "rules", "app-3", minute), offsets[3]);
        assert_ne!(
            slot_offset_ns("other", "rules", "app-3", minute),
            slot_offset_ns("fake", "rules", "app-3", minute)
        );
        assert_ne!(
            slot_offset_ns("fake", "rule", "sapp-3", minute),
            slot_offset_ns("fake", "rules", "app-3", minute)
        );
    }
}
