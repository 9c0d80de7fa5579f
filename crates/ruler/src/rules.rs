//! Rule groups as written in rule files and the ruler API: Prometheus'
//! format (`groups: - name, interval, limit, rules: - alert|record, expr,
//! for, keep_firing_for, labels, annotations`) with LogQL expressions.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// A rule file: `groups:` and nothing else.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleFile {
    /// The file's groups, in order.
    #[serde(default)]
    pub groups: Vec<RuleGroup>,
}

/// One group: rules evaluated in order on one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleGroup {
    /// The group's name, unique in its namespace.
    pub name: String,
    /// How often the group runs; the ruler's default when absent.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "prom_duration"
    )]
    pub interval: Option<Duration>,
    /// Most alerts an alerting rule, or series a recording rule, may produce
    /// per evaluation; 0: no limit.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub limit: usize,
    /// The rules, evaluated in this order.
    #[serde(default)]
    pub rules: Vec<Rule>,
}

/// One alerting or recording rule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The metric a recording rule writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    /// The alert name of an alerting rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert: Option<String>,
    /// The LogQL metric query.
    pub expr: String,
    /// How long an alert stays pending before it fires.
    #[serde(
        default,
        rename = "for",
        skip_serializing_if = "Option::is_none",
        with = "prom_duration"
    )]
    pub for_: Option<Duration>,
    /// How long an alert keeps firing after its condition stops holding.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "prom_duration"
    )]
    pub keep_firing_for: Option<Duration>,
    /// Labels added to (or replacing) the result's; templates in alerts.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// An alert's annotations (templates).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Rule {
    /// The rule's name: its alert or its record.
    pub fn name(&self) -> &str {
        self.alert
            .as_deref()
            .or(self.record.as_deref())
            .unwrap_or("")
    }

    /// True for an alerting rule.
    pub fn is_alert(&self) -> bool {
        self.alert.is_some()
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Prometheus durations (`30s`, `1m`, `1h30m`) in YAML, as `Option<Duration>`.
mod prom_duration {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&super::format_duration(*d)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let text: Option<String> = Option::deserialize(d)?;
        match text {
            None => Ok(None),
            Some(t) => super::parse_duration(&t)
                .map(Some)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// Parses a Prometheus duration (`1m`, `1h30m`, `0`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let ns = runakefli_logql::parse_prom_duration(text.trim())
        .map_err(|e| format!("not a valid duration string: {text:?}: {e}"))?;
    u64::try_from(ns)
        .map(Duration::from_nanos)
        .map_err(|_| format!("not a valid duration string: {text:?}"))
}

/// Prints a duration as Prometheus does (`1m`, `1h30m`, `0s`).
pub fn format_duration(d: Duration) -> String {
    runakefli_logql::format_duration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_file_reads_and_writes_back() {
        let text = r#"
groups:
  - name: checkout
    interval: 30s
    rules:
      - alert: Checkout5xx
        expr: sum(rate({app="checkout"} |= "500" [1m])) > 0
        for: 2m
        keep_firing_for: 1m
        labels: { severity: page }
        annotations: { summary: "{{ $value }} errors" }
      - record: checkout:lines:rate1m
        expr: sum(rate({app="checkout"}[1m]))
"#;
        let f: RuleFile = serde_yaml::from_str(text).expect("valid file");
        let g = &f.groups[0];
        assert_eq!(g.interval, Some(Duration::from_secs(30)));
        assert_eq!(g.rules[0].for_, Some(Duration::from_secs(120)));
        assert_eq!(g.rules[0].keep_firing_for, Some(Duration::from_secs(60)));
        assert_eq!(g.rules[0].name(), "Checkout5xx");
        assert!(!g.rules[1].is_alert());
        let back = serde_yaml::to_string(&f).expect("serializes");
        assert!(back.contains("for: 2m"), "{back}");
        let again: RuleFile = serde_yaml::from_str(&back).expect("reads back");
        assert_eq!(again, f);
    }

    #[test]
    fn unknown_fields_and_bad_durations_are_refused() {
        let e = serde_yaml::from_str::<RuleFile>("groups: [{name: a, rules: [], bogus: 1}]")
            .expect_err("unknown field");
        assert!(e.to_string().contains("bogus"), "{e}");
        let e = serde_yaml::from_str::<RuleFile>("groups: [{name: a, interval: 1.5m}]")
            .expect_err("bad duration");
        assert!(e.to_string().contains("not a valid duration"), "{e}");
    }
}
