//! The per-entry label buffer a pipeline works on (Loki's `LabelsBuilder`):
//! stream labels, structured metadata and parsed labels, plus the
//! `__error__`/`__error_details__` pair.

use crate::labelset::LabelSet;

/// Name of the error label.
pub const ERROR_LABEL: &str = "__error__";
/// Name of the error details label.
pub const ERROR_DETAILS_LABEL: &str = "__error_details__";

/// Reusable label state of one entry while it runs through a pipeline.
#[derive(Debug, Default)]
pub struct LabelsBuilder {
    base: LabelSet,
    metadata_names: Vec<String>,
    current: Vec<(String, String)>,
    err: Option<String>,
    err_details: Option<String>,
    dirty: bool,
}

impl LabelsBuilder {
    /// Resets the buffer to a stream's labels plus an entry's structured metadata.
    pub fn reset(&mut self, base: &LabelSet, metadata: &[(String, String)]) {
        if self.base != *base
            || self.dirty
            || !metadata.is_empty()
            || self.current.len() != base.len()
        {
            self.base = base.clone();
            self.metadata_names.clear();
            self.metadata_names
                .extend(metadata.iter().map(|(k, _)| k.clone()));
            self.current.clear();
            self.current.extend(base.pairs().iter().cloned());
            for (k, v) in metadata {
                self.set(k, v);
            }
            self.dirty = !metadata.is_empty();
        }
        self.err = None;
        self.err_details = None;
    }

    /// True when the stream labels or the structured metadata hold `name`
    /// (parsers then add `_extracted`).
    pub fn base_has(&self, name: &str) -> bool {
        self.base.get(name).is_some() || self.metadata_names.iter().any(|m| m == name)
    }

    /// The value of `name`; the error labels read the error state.
    pub fn get(&self, name: &str) -> Option<&str> {
        match name {
            ERROR_LABEL => self.err.as_deref(),
            ERROR_DETAILS_LABEL => self.err_details.as_deref(),
            _ => self
                .current
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str()),
        }
    }

    /// Sets a label (overwriting).
    pub fn set(&mut self, name: &str, value: &str) {
        self.dirty = true;
        match name {
            ERROR_LABEL => self.err = Some(value.to_string()),
            ERROR_DETAILS_LABEL => self.err_details = Some(value.to_string()),
            _ => match self.current.iter_mut().find(|(k, _)| k == name) {
                Some(slot) => {
                    slot.1.clear();
                    slot.1.push_str(value);
                }
                None => self.current.push((name.to_string(), value.to_string())),
            },
        }
    }

    /// Removes a label.
    pub fn del(&mut self, name: &str) {
        self.dirty = true;
        match name {
            ERROR_LABEL => self.err = None,
            ERROR_DETAILS_LABEL => self.err_details = None,
            _ => self.current.retain(|(k, _)| k != name),
        }
    }

    /// Keeps only the labels for which `keep` answers true (error labels included).
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &str) -> bool) {
        self.dirty = true;
        self.current.retain(|(k, v)| keep(k, v));
        if let Some(e) = &self.err {
            if !keep(ERROR_LABEL, e) {
                self.err = None;
            }
        }
        if let Some(e) = &self.err_details {
            if !keep(ERROR_DETAILS_LABEL, e) {
                self.err_details = None;
            }
        }
    }

    /// True when an error is set.
    pub fn has_err(&self) -> bool {
        self.err.is_some()
    }

    /// Sets `__error__`.
    pub fn set_err(&mut self, err: &str) {
        self.err = Some(err.to_string());
    }

    /// Sets `__error_details__`.
    pub fn set_err_details(&mut self, details: &str) {
        self.err_details = Some(details.to_string());
    }

    /// Every label, unsorted, error labels excluded (for templates).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.current.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The final label set: everything plus the error labels when set.
    pub fn labels(&self) -> LabelSet {
        if !self.dirty && self.err.is_none() && self.err_details.is_none() {
            return self.base.clone();
        }
        let mut pairs = self.current.clone();
        if let Some(e) = &self.err {
            pairs.push((ERROR_LABEL.to_string(), e.clone()));
        }
        if let Some(e) = &self.err_details {
            pairs.push((ERROR_DETAILS_LABEL.to_string(), e.clone()));
        }
        LabelSet::new(pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_error_and_reset() {
        let base = LabelSet::new(vec![("app".into(), "api".into())]);
        let mut b = LabelsBuilder::default();
        b.reset(&base, &[("trace_id".into(), "t".into())]);
        assert!(b.base_has("app"));
        assert!(b.base_has("trace_id"));
        assert!(!b.base_has("level"));
        b.set("level", "info");
        b.set_err("JSONParserErr");
        assert_eq!(b.get("__error__"), Some("JSONParserErr"));
        assert_eq!(
            b.labels().to_string(),
            r#"{__error__="JSONParserErr", app="api", level="info", trace_id="t"}"#
        );
        b.reset(&base, &[]);
        assert_eq!(b.labels(), base);
    }
}
