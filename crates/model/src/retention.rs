//! Which rows retention keeps: Loki's `retention_period` (per tenant, with a
//! global default) and `retention_stream` rules (a selector, a priority and
//! a period), plus a disk byte budget that Loki does not have.
//!
//! A stream's period is that of the matching `retention_stream` rule with the
//! highest priority; among rules of equal priority the shortest period wins
//! (Loki's compactor decides the same way); a stream no rule matches gets its
//! tenant's `retention_period`. A period of zero, or none, keeps data forever.
//!
//! These are the settings and the rule resolution only; each backend removes
//! expired data its own way (the embedded store's retention pass, the
//! ClickHouse backend's partition drops and lightweight deletes).

use crate::{Labels, Matcher, NANOS_PER_DAY};
use std::collections::HashMap;
use std::time::Duration;

/// One `retention_stream` rule.
#[derive(Clone, Debug)]
pub struct StreamRule {
    /// The stream selector; every matcher must hold.
    pub matchers: Vec<Matcher>,
    /// Higher wins when several rules match.
    pub priority: u32,
    /// How long the matching streams are kept (zero: forever).
    pub period: Duration,
}

/// The retention of one tenant.
#[derive(Clone, Debug, Default)]
pub struct RetentionPolicy {
    /// `retention_period`: streams no rule matches are kept this long
    /// (`None` or zero: forever).
    pub period: Option<Duration>,
    /// `retention_stream` rules.
    pub streams: Vec<StreamRule>,
}

/// A tenant's overrides of the default policy: each field set replaces the
/// default's (as Loki's per-tenant overrides do).
#[derive(Clone, Debug, Default)]
pub struct TenantRetention {
    /// Replaces the default `retention_period` when set.
    pub period: Option<Duration>,
    /// Replaces the default `retention_stream` rules when set.
    pub streams: Option<Vec<StreamRule>>,
}

/// Everything retention is configured with.
#[derive(Clone, Debug)]
pub struct RetentionConfig {
    /// The policy of every tenant without overrides.
    pub default: RetentionPolicy,
    /// Per-tenant overrides, by tenant id.
    pub tenants: HashMap<String, TenantRetention>,
    /// Keep everything on disk (parts, WAL, indexes) under this many bytes by
    /// dropping the oldest day partitions first; `None`: no budget.
    pub max_disk_bytes: Option<u64>,
    /// How often the retention pass runs.
    pub interval: Duration,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            default: RetentionPolicy::default(),
            tenants: HashMap::new(),
            max_disk_bytes: None,
            interval: Duration::from_secs(600),
        }
    }
}

impl RetentionConfig {
    /// The policy `tenant` runs under.
    pub fn policy_for(&self, tenant: &str) -> RetentionPolicy {
        let mut p = self.default.clone();
        if let Some(o) = self.tenants.get(tenant) {
            if let Some(period) = o.period {
                p.period = Some(period);
            }
            if let Some(streams) = &o.streams {
                p.streams = streams.clone();
            }
        }
        p
    }

    /// Whether any retention (by age or size) is configured.
    pub fn is_active(&self) -> bool {
        self.max_disk_bytes.is_some()
            || self.default.is_active()
            || self.tenants.values().any(|t| {
                t.period.is_some_and(|p| !p.is_zero())
                    || t.streams
                        .as_ref()
                        .is_some_and(|s| s.iter().any(|r| !r.period.is_zero()))
            })
    }

    /// The shortest period any tenant or rule removes data after; `None`
    /// when nothing expires. Nothing younger than this expires anywhere.
    pub fn shortest_period(&self) -> Option<Duration> {
        let policies = std::iter::once((self.default.period, Some(&self.default.streams))).chain(
            self.tenants
                .values()
                .map(|t| (t.period, t.streams.as_ref())),
        );
        let mut shortest: Option<Duration> = None;
        for (period, rules) in policies {
            let rules = rules.into_iter().flatten().map(|r| r.period);
            for p in period.into_iter().chain(rules).filter(|p| !p.is_zero()) {
                shortest = Some(shortest.map_or(p, |s| s.min(p)));
            }
        }
        shortest
    }
}

impl RetentionPolicy {
    /// Whether this policy ever removes anything.
    pub fn is_active(&self) -> bool {
        self.period.is_some_and(|p| !p.is_zero())
            || self.streams.iter().any(|r| !r.period.is_zero())
    }

    /// How long a stream with `labels` is kept; `None`: forever.
    pub fn period_for(&self, labels: &Labels) -> Option<Duration> {
        let mut best: Option<&StreamRule> = None;
        for r in &self.streams {
            if !r.matchers.iter().all(|m| m.matches_labels(labels)) {
                continue;
            }
            best = match best {
                Some(b) if b.priority > r.priority => Some(b),
                Some(b) if b.priority == r.priority && b.period <= r.period => Some(b),
                _ => Some(r),
            };
        }
        let period = match best {
            Some(r) => Some(r.period),
            None => self.period,
        };
        period.filter(|p| !p.is_zero())
    }

    /// The oldest timestamp (ns) kept for a stream with `labels` at time
    /// `now` (ns): rows before it have expired. `None`: nothing expires.
    pub fn cutoff_for(&self, labels: &Labels, now: i64) -> Option<i64> {
        let p = self.period_for(labels)?;
        Some(now.saturating_sub(p.as_nanos().min(i64::MAX as u128) as i64))
    }
}

/// The first timestamp (ns) retention keeps under `cutoff` (the oldest
/// timestamp a stream's period keeps): the start of `cutoff`'s UTC day, since
/// data goes in whole days, once the whole day is older than the period.
pub fn kept_from(cutoff: i64) -> i64 {
    cutoff
        .div_euclid(NANOS_PER_DAY)
        .saturating_mul(NANOS_PER_DAY)
}

/// Whether a row at `ts` has expired under `cutoff` (`None`: nothing
/// expires): only when its whole UTC day is older than the cutoff.
pub fn expired(cutoff: Option<i64>, ts: i64) -> bool {
    cutoff.is_some_and(|c| ts < kept_from(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MatchOp;

    fn rule(name: &str, value: &str, priority: u32, hours: u64) -> StreamRule {
        StreamRule {
            matchers: vec![Matcher::new(name, MatchOp::Eq, value).unwrap()],
            priority,
            period: Duration::from_secs(hours * 3600),
        }
    }

    #[test]
    fn highest_priority_then_shortest_period_wins() {
        let p = RetentionPolicy {
            period: Some(Duration::from_secs(100 * 3600)),
            streams: vec![
                rule("app", "api", 1, 48),
                rule("env", "dev", 1, 24),
                rule("env", "dev", 1, 72),
                rule("team", "sec", 5, 720),
            ],
        };
        let h = |l: &[(&str, &str)]| {
            p.period_for(&Labels::from_strs(l))
                .map(|d| d.as_secs() / 3600)
        };
        assert_eq!(h(&[("app", "web")]), Some(100));
        assert_eq!(h(&[("app", "api")]), Some(48));
        assert_eq!(h(&[("app", "api"), ("env", "dev")]), Some(24));
        assert_eq!(
            h(&[("app", "api"), ("env", "dev"), ("team", "sec")]),
            Some(720)
        );
    }

    #[test]
    fn zero_or_missing_periods_keep_forever_and_tenants_override() {
        let mut cfg = RetentionConfig::default();
        assert!(!cfg.is_active());
        cfg.default.streams = vec![rule("app", "api", 1, 0)];
        assert!(!cfg.is_active());
        assert_eq!(
            cfg.default
                .period_for(&Labels::from_strs(&[("app", "api")])),
            None
        );
        cfg.tenants.insert(
            "t".into(),
            TenantRetention {
                period: Some(Duration::from_secs(3600)),
                streams: None,
            },
        );
        assert!(cfg.is_active());
        let p = cfg.policy_for("t");
        assert_eq!(
            p.cutoff_for(&Labels::from_strs(&[("app", "web")]), 10_000_000_000_000),
            Some(10_000_000_000_000 - 3_600_000_000_000)
        );
        assert_eq!(cfg.policy_for("other").period, None);
    }

    #[test]
    fn whole_days_expire_and_the_shortest_period_bounds_them() {
        let day = NANOS_PER_DAY;
        assert_eq!(kept_from(3 * day + 5), 3 * day);
        assert_eq!(kept_from(-1), -day);
        // The last nanosecond of day 2 expires once the cutoff is past it.
        assert!(!expired(Some(3 * day - 1), 3 * day - 1));
        assert!(expired(Some(3 * day), 3 * day - 1));
        assert!(!expired(Some(3 * day + 7), 3 * day));
        assert!(!expired(None, 0));
        let mut cfg = RetentionConfig::default();
        assert_eq!(cfg.shortest_period(), None);
        cfg.default.period = Some(Duration::from_secs(100 * 3600));
        cfg.default.streams = vec![rule("app", "api", 1, 0)];
        assert_eq!(cfg.shortest_period(), Some(Duration::from_secs(100 * 3600)));
        cfg.tenants.insert(
            "t".into(),
            TenantRetention {
                period: None,
                streams: Some(vec![rule("env", "dev", 1, 24)]),
            },
        );
        assert_eq!(cfg.shortest_period(), Some(Duration::from_secs(24 * 3600)));
    }
}
