//! Label selection stages: `| drop …`, `| keep …`, and `| distinct …`.

use super::labels::{LabelsBuilder, ERROR_DETAILS_LABEL, ERROR_LABEL};
use runakefli_logql::LabelSelectorItem;
use std::collections::HashSet;

/// `| drop a, b="v"`.
pub fn drop(items: &[LabelSelectorItem], lbs: &mut LabelsBuilder) {
    for it in items {
        match &it.matcher {
            None => lbs.del(&it.name),
            Some(m) => {
                if lbs.get(&it.name).is_some_and(|v| m.matches(v)) {
                    lbs.del(&it.name);
                }
            }
        }
    }
}

/// `| keep a, b="v"`: everything else goes, except the error labels.
pub fn keep(items: &[LabelSelectorItem], lbs: &mut LabelsBuilder) {
    lbs.retain(|name, value| {
        if name == ERROR_LABEL || name == ERROR_DETAILS_LABEL {
            return true;
        }
        items
            .iter()
            .any(|it| it.name == name && it.matcher.as_ref().is_none_or(|m| m.matches(value)))
    });
}

/// `| distinct a, b`: keeps the first entry of each value combination.
#[derive(Debug, Default)]
pub struct Distinct {
    labels: Vec<String>,
    seen: HashSet<Vec<Option<String>>>,
}

impl Distinct {
    /// A filter over `labels`.
    pub fn new(labels: &[String]) -> Self {
        Distinct {
            labels: labels.to_vec(),
            seen: HashSet::new(),
        }
    }

    /// True for the first entry with its value combination.
    pub fn keep(&mut self, lbs: &LabelsBuilder) -> bool {
        let key: Vec<Option<String>> = self
            .labels
            .iter()
            .map(|l| lbs.get(l).map(str::to_string))
            .collect();
        if key.iter().all(Option::is_none) {
            return true;
        }
        self.seen.insert(key)
    }
}
