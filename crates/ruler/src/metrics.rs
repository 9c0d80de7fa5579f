//! The ruler's counters, written into the server's `/metrics` in the
//! Prometheus text format with Prometheus' and Loki's metric names.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Figures of one rule group, by `(tenant, namespace;group)`.
#[derive(Clone, Debug, Default)]
pub struct GroupFigures {
    /// Evaluations run.
    pub evaluations: u64,
    /// Rule evaluations that failed.
    pub failures: u64,
    /// Evaluations skipped because the previous one ran late.
    pub missed: u64,
    /// Unix seconds of the last evaluation.
    pub last_evaluation_secs: f64,
    /// Seconds the last evaluation took.
    pub last_duration_secs: f64,
    /// Sum of evaluation seconds.
    pub duration_sum_secs: f64,
    /// Rules in the group.
    pub rules: usize,
}

/// Figures of one Alertmanager (by its alerts URL).
#[derive(Debug, Default)]
pub struct AlertmanagerFigures {
    /// Alerts it took.
    pub sent: AtomicU64,
    /// Alerts whose sending to it failed after every retry.
    pub errors: AtomicU64,
}

/// Every counter of the ruler.
#[derive(Default)]
pub struct RulerMetrics {
    groups: Mutex<BTreeMap<(String, String), GroupFigures>>,
    alertmanagers: Mutex<BTreeMap<String, Arc<AlertmanagerFigures>>>,
    /// Alerts dropped from a full notification queue (any Alertmanager's).
    pub notifications_dropped: AtomicU64,
    /// Samples remote-written successfully.
    pub samples_sent: AtomicU64,
    /// Samples whose remote write failed after every retry.
    pub samples_failed: AtomicU64,
    /// Samples dropped from a full remote-write queue.
    pub samples_dropped: AtomicU64,
    /// Loads of rule files that failed (each reload counts each bad file).
    pub load_failures: AtomicU64,
}

impl RulerMetrics {
    /// Updates the figures of one group.
    pub fn group(&self, tenant: &str, group: &str, f: impl FnOnce(&mut GroupFigures)) {
        let mut g = self.groups.lock();
        f(g.entry((tenant.to_string(), group.to_string()))
            .or_default());
    }

    /// The figures of the Alertmanager whose alerts URL is `url`.
    pub fn alertmanager(&self, url: &str) -> Arc<AlertmanagerFigures> {
        self.alertmanagers
            .lock()
            .entry(url.to_string())
            .or_default()
            .clone()
    }

    /// Forgets a group no longer loaded.
    pub fn forget(&self, tenant: &str, group: &str) {
        self.groups
            .lock()
            .remove(&(tenant.to_string(), group.to_string()));
    }

    /// A copy of one group's figures.
    pub fn figures(&self, tenant: &str, group: &str) -> Option<GroupFigures> {
        self.groups
            .lock()
            .get(&(tenant.to_string(), group.to_string()))
            .cloned()
    }

    /// Writes every figure, Prometheus text format.
    pub fn write(&self, out: &mut String) {
        let groups = self.groups.lock().clone();
        type Pick = fn(&GroupFigures) -> f64;
        let per_group: [(&str, &str, &str, Pick); 7] = [
            (
                "prometheus_rule_group_iterations_total",
                "counter",
                "Evaluations of each rule group.",
                |f| f.evaluations as f64,
            ),
            (
                "prometheus_rule_evaluation_failures_total",
                "counter",
                "Rule evaluations that failed.",
                |f| f.failures as f64,
            ),
            (
                "prometheus_rule_group_iterations_missed_total",
                "counter",
                "Evaluations skipped because the group's previous one ran late.",
                |f| f.missed as f64,
            ),
            (
                "prometheus_rule_group_last_evaluation_timestamp_seconds",
                "gauge",
                "Unix time of each group's last evaluation.",
                |f| f.last_evaluation_secs,
            ),
            (
                "prometheus_rule_group_last_duration_seconds",
                "gauge",
                "Seconds each group's last evaluation took.",
                |f| f.last_duration_secs,
            ),
            (
                "prometheus_rule_group_duration_seconds_sum",
                "counter",
                "Seconds spent evaluating each group.",
                |f| f.duration_sum_secs,
            ),
            (
                "prometheus_rule_group_rules",
                "gauge",
                "Rules in each group.",
                |f| f.rules as f64,
            ),
        ];
        for (name, kind, help, pick) in per_group {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for ((tenant, group), f) in &groups {
                let _ = writeln!(
                    out,
                    "{name}{{tenant=\"{}\",rule_group=\"{}\"}} {}",
                    escape(tenant),
                    escape(group),
                    pick(f)
                );
            }
        }
        let alertmanagers = self.alertmanagers.lock().clone();
        type PickAm = fn(&AlertmanagerFigures) -> &AtomicU64;
        let per_am: [(&str, &str, PickAm); 2] = [
            (
                "prometheus_notifications_sent_total",
                "Alerts sent to each Alertmanager.",
                |f| &f.sent,
            ),
            (
                "prometheus_notifications_errors_total",
                "Alerts whose sending to each Alertmanager failed after retries.",
                |f| &f.errors,
            ),
        ];
        for (name, help, pick) in per_am {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for (url, f) in &alertmanagers {
                let _ = writeln!(
                    out,
                    "{name}{{alertmanager=\"{}\"}} {}",
                    escape(url),
                    pick(f).load(Ordering::Relaxed)
                );
            }
        }
        let _ = writeln!(
            out,
            "# HELP prometheus_notifications_alertmanagers_discovered Alertmanagers alerts are sent to.\n# TYPE prometheus_notifications_alertmanagers_discovered gauge\nprometheus_notifications_alertmanagers_discovered {}",
            alertmanagers.len()
        );
        let totals: [(&str, &str, &AtomicU64); 5] = [
            (
                "prometheus_notifications_dropped_total",
                "Alerts dropped from the full notification queue.",
                &self.notifications_dropped,
            ),
            (
                "runakefli_ruler_remote_write_samples_total",
                "Recorded samples remote-written.",
                &self.samples_sent,
            ),
            (
                "runakefli_ruler_remote_write_samples_failed_total",
                "Recorded samples whose remote write failed after retries.",
                &self.samples_failed,
            ),
            (
                "runakefli_ruler_remote_write_samples_dropped_total",
                "Recorded samples dropped from the full remote-write queue.",
                &self.samples_dropped,
            ),
            (
                "runakefli_ruler_rule_file_load_failures_total",
                "Loads of rule files that failed (every reload counts each bad file again).",
                &self.load_failures,
            ),
        ];
        for (name, help, v) in totals {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                v.load(Ordering::Relaxed)
            );
        }
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
