//! Checks of rule groups, on load, on POST and by `runakefli rules check`:
//! Prometheus' rule-file checks (names, one of `alert`/`record`, fields a
//! recording rule may not have, label and annotation names, templates) with
//! LogQL for the expressions. A checked group is a [`CompiledGroup`], what
//! the evaluator runs.

use crate::rules::{Rule, RuleGroup};
use crate::template::AlertTemplate;
use runakefli_logql::{Expr, ParseLimits};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// Why a group is invalid: the group, the rule (1-based) when it is one
/// rule's fault, and Prometheus' or LogQL's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("group {group:?}{}: {message}", rule.map(|r| format!(", rule {r}")).unwrap_or_default())]
pub struct ValidationError {
    /// The group's name.
    pub group: String,
    /// The rule's position in the group, from 1.
    pub rule: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// A rule whose expression and templates are parsed.
#[derive(Debug, Clone)]
pub struct CompiledRule {
    /// The rule as written.
    pub rule: Rule,
    /// Its LogQL expression.
    pub expr: Arc<Expr>,
    /// Templates of its labels (alerting rules), by label name.
    pub label_templates: BTreeMap<String, AlertTemplate>,
    /// Templates of its annotations, by name.
    pub annotation_templates: BTreeMap<String, AlertTemplate>,
}

/// A checked group.
#[derive(Debug, Clone)]
pub struct CompiledGroup {
    /// The group as written.
    pub group: RuleGroup,
    /// Its rules, in order.
    pub rules: Vec<CompiledRule>,
}

/// A Prometheus metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`).
pub fn is_metric_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// A Prometheus label name (`[a-zA-Z_][a-zA-Z0-9_]*`).
pub fn is_label_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Checks the groups of one namespace (names unique among them) and
/// compiles them; every problem is reported, not only the first.
pub fn compile_groups(
    groups: &[RuleGroup],
    limits: &ParseLimits,
) -> Result<Vec<CompiledGroup>, Vec<ValidationError>> {
    let mut seen = HashSet::new();
    let mut errors = Vec::new();
    let mut out = Vec::new();
    for g in groups {
        if !g.name.is_empty() && !seen.insert(g.name.as_str()) {
            errors.push(ValidationError {
                group: g.name.clone(),
                rule: None,
                message: format!("groupname: \"{}\" is repeated in the same file", g.name),
            });
        }
        match compile_group(g, limits) {
            Ok(c) => out.push(c),
            Err(e) => errors.extend(e),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Checks one group and compiles it.
pub fn compile_group(
    group: &RuleGroup,
    limits: &ParseLimits,
) -> Result<CompiledGroup, Vec<ValidationError>> {
    let mut errors = Vec::new();
    let err = |rule: Option<usize>, message: String| ValidationError {
        group: group.name.clone(),
        rule,
        message,
    };
    if group.name.is_empty() {
        errors.push(err(None, "Groupname must not be empty".into()));
    }
    if group.interval.is_some_and(|d| d.is_zero()) {
        errors.push(err(None, "interval must be greater than 0".into()));
    }
    let mut rules = Vec::new();
    for (i, rule) in group.rules.iter().enumerate() {
        match compile_rule(rule, limits) {
            Ok(r) => rules.push(r),
            Err(msgs) => errors.extend(msgs.into_iter().map(|m| err(Some(i + 1), m))),
        }
    }
    if errors.is_empty() {
        Ok(CompiledGroup {
            group: group.clone(),
            rules,
        })
    } else {
        Err(errors)
    }
}

/// Checks one rule: every problem's message.
fn compile_rule(rule: &Rule, limits: &ParseLimits) -> Result<CompiledRule, Vec<String>> {
    let mut errors = Vec::new();
    match (&rule.record, &rule.alert) {
        (Some(_), Some(_)) => errors.push("only one of 'record' and 'alert' must be set".into()),
        (None, None) => errors.push("one of 'record' or 'alert' must be set".into()),
        (Some(r), None) => {
            if !is_metric_name(r) {
                errors.push(format!("invalid recording rule name: {r}"));
            }
            if rule.for_.is_some() {
                errors.push("invalid field 'for' in recording rule".into());
            }
            if rule.keep_firing_for.is_some() {
                errors.push("invalid field 'keep_firing_for' in recording rule".into());
            }
            if !rule.annotations.is_empty() {
                errors.push("invalid field 'annotations' in recording rule".into());
            }
        }
        (None, Some(a)) => {
            if a.is_empty() {
                errors.push("field 'alert' must not be empty".into());
            }
        }
    }
    let expr = if rule.expr.trim().is_empty() {
        errors.push("field 'expr' must be set in rule".into());
        None
    } else {
        match runakefli_logql::parse_expr_with(&rule.expr, limits) {
            Ok(Expr::Log(_)) => {
                errors.push(format!(
                    "could not parse expression: {}: the expression of a rule must be a metric query (a log query returns no samples)",
                    rule.expr.trim()
                ));
                None
            }
            Ok(e) => Some(e),
            Err(e) => {
                errors.push(format!("could not parse expression: {e}"));
                None
            }
        }
    };
    let mut label_templates = BTreeMap::new();
    for (k, v) in &rule.labels {
        if !is_label_name(k) || k == "__name__" {
            errors.push(format!("invalid label name: {k}"));
        }
        if rule.is_alert() {
            match AlertTemplate::parse(&format!("__alert_{}", rule.name()), v) {
                Ok(t) => {
                    label_templates.insert(k.clone(), t);
                }
                Err(e) => errors.push(format!("label {k:?}: {e}")),
            }
        }
    }
    let mut annotation_templates = BTreeMap::new();
    for (k, v) in &rule.annotations {
        if !is_label_name(k) {
            errors.push(format!("invalid annotation name: {k}"));
        }
        match AlertTemplate::parse(&format!("__alert_{}", rule.name()), v) {
            Ok(t) => {
                annotation_templates.insert(k.clone(), t);
            }
            Err(e) => errors.push(format!("annotation {k:?}: {e}")),
        }
    }
    match expr {
        Some(expr) if errors.is_empty() => Ok(CompiledRule {
            rule: rule.clone(),
            expr: Arc::new(expr),
            label_templates,
            annotation_templates,
        }),
        _ => Err(errors),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::RuleFile;

    fn check(yaml: &str) -> Result<Vec<CompiledGroup>, Vec<ValidationError>> {
        let f: RuleFile = serde_yaml::from_str(yaml).expect("parses as YAML");
        compile_groups(&f.groups, &ParseLimits::default())
    }

    #[test]
    fn a_valid_group_compiles() {
        let g = check(
            r#"groups:
- name: g
  rules:
  - alert: A
    expr: sum(count_over_time({app="x"}[1m])) > 1
    labels: { severity: "{{ $labels.app }}" }
  - record: x:count:1m
    expr: sum by (app) (count_over_time({app="x"}[1m]))
"#,
        )
        .expect("valid");
        assert_eq!(g[0].rules.len(), 2);
        assert_eq!(g[0].rules[0].label_templates.len(), 1);
    }

    #[test]
    fn every_problem_is_reported_with_its_rule() {
        let errs = check(
            r#"groups:
- name: g
  rules:
  - alert: A
    expr: '{app="x"} |= "error"'
  - record: "bad name"
    expr: sum(rate({app="x"}[1m]))
    for: 1m
  - alert: B
    expr: sum(rate({app="x"}[1m])
    annotations: { summary: "{{ $value " }
  - expr: vector(1)
- name: g
  rules: []
"#,
        )
        .expect_err("invalid");
        let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
        let all = text.join("\n");
        assert!(all.contains("rule 1: could not parse expression"), "{all}");
        assert!(all.contains("must be a metric query"), "{all}");
        assert!(
            all.contains("invalid recording rule name: bad name"),
            "{all}"
        );
        assert!(
            all.contains("invalid field 'for' in recording rule"),
            "{all}"
        );
        assert!(all.contains("rule 3: could not parse expression"), "{all}");
        assert!(all.contains("unclosed action"), "{all}");
        assert!(
            all.contains("rule 4: one of 'record' or 'alert' must be set"),
            "{all}"
        );
        assert!(all.contains("is repeated in the same file"), "{all}");
    }
}
