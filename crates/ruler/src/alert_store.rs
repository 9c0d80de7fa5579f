//! Pending and firing alerts kept across restarts (Prometheus restores
//! them from its `ALERTS_FOR_STATE` series; the ruler has no TSDB of its
//! own, so it keeps them in a file): after a restart a pending alert keeps
//! counting its `for` from when it became pending, and a firing alert fires
//! on (and is sent again at once) instead of starting over as pending.
//!
//! One JSON file, `alerts.json`: per rule (tenant, namespace, group, rule
//! name and expression) its pending and firing alerts. It is rewritten
//! (temporary file, fsync, rename) when an evaluation changes a rule's
//! alerts — an alert appears, changes state or goes — not on every run.

use crate::alert::Alert;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

/// The saved alerts.
pub struct AlertStore {
    path: PathBuf,
    rules: Mutex<BTreeMap<String, Vec<Alert>>>,
}

/// The key of one rule's alerts.
pub fn rule_key(tenant: &str, namespace: &str, group: &str, rule: &str, expr: &str) -> String {
    [tenant, namespace, group, rule, expr].join("\u{1f}")
}

/// What tells two saves apart: labels, state and times of each alert.
fn same(a: &[Alert], b: &[Alert]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.labels == y.labels
                && x.state == y.state
                && x.active_at_ns == y.active_at_ns
                && x.fired_at_ns == y.fired_at_ns
                && x.keep_firing_since_ns == y.keep_firing_since_ns
        })
}

impl AlertStore {
    /// Opens the store in `dir`; a missing or unreadable file is an empty
    /// store (logged), never a failure to start.
    pub fn open(dir: PathBuf) -> AlertStore {
        let path = dir.join("alerts.json");
        let rules = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "saved alerts not restored");
                BTreeMap::new()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "saved alerts not restored");
                BTreeMap::new()
            }
        };
        AlertStore {
            path,
            rules: Mutex::new(rules),
        }
    }

    /// The saved alerts of a rule.
    pub fn restore(&self, key: &str) -> Vec<Alert> {
        self.rules.lock().get(key).cloned().unwrap_or_default()
    }

    /// Saves a rule's pending and firing alerts when they changed.
    pub fn save(&self, key: &str, alerts: Vec<Alert>) {
        let mut rules = self.rules.lock();
        let old = rules.get(key).map_or(&[][..], Vec::as_slice);
        if same(old, &alerts) {
            return;
        }
        if alerts.is_empty() {
            rules.remove(key);
        } else {
            rules.insert(key.to_string(), alerts);
        }
        self.write(&rules);
    }

    /// Keeps only the rules of `keys` (the loaded alerting rules).
    pub fn retain(&self, keys: &std::collections::BTreeSet<String>) {
        let mut rules = self.rules.lock();
        let before = rules.len();
        rules.retain(|k, _| keys.contains(k));
        if rules.len() != before {
            self.write(&rules);
        }
    }

    fn write(&self, rules: &BTreeMap<String, Vec<Alert>>) {
        let result = (|| -> std::io::Result<()> {
            let dir = self.path.parent().unwrap_or(std::path::Path::new("."));
            std::fs::create_dir_all(dir)?;
            let tmp = self.path.with_extension("json.tmp");
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&serde_json::to_vec(rules).unwrap_or_default())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.path)?;
            std::fs::File::open(dir)?.sync_all()
        })();
        if let Err(e) = result {
            tracing::warn!(path = %self.path.display(), error = %e, "alerts not saved");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alert::AlertState;

    fn alert(state: AlertState) -> Alert {
        Alert {
            labels: [("alertname".to_string(), "A".to_string())].into(),
            annotations: BTreeMap::new(),
            value: 3.0,
            state,
            active_at_ns: 10,
            fired_at_ns: None,
            resolved_at_ns: None,
            last_sent_ns: Some(12),
            valid_until_ns: 0,
            keep_firing_since_ns: None,
        }
    }

    #[test]
    fn alerts_are_restored_after_a_reopen() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let key = rule_key("fake", "ns", "g", "A", "vector(1)");
        {
            let s = AlertStore::open(tmp.path().to_path_buf());
            s.save(&key, vec![alert(AlertState::Firing)]);
        }
        let s = AlertStore::open(tmp.path().to_path_buf());
        let back = s.restore(&key);
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].state, AlertState::Firing);
        assert_eq!(back[0].active_at_ns, 10);
        assert_eq!(back[0].value, 0.0, "the value is not saved");
        s.retain(&Default::default());
        drop(s);
        assert!(AlertStore::open(tmp.path().to_path_buf())
            .restore(&key)
            .is_empty());
    }
}
