//! The per-entry label buffer a pipeline works on (Loki's `LabelsBuilder`):
//! stream labels, structured metadata and parsed labels, plus the
//! `__error__`/`__error_details__` pair.
//!
//! Labels are kept sorted by name; string buffers of earlier entries are
//! reused, so steady-state processing does not allocate.

use crate::fast_hash::hash_pairs;
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
    /// Sorted by name, unique names.
    current: Vec<(String, String)>,
    spare: Vec<(String, String)>,
    err: Option<String>,
    err_details: Option<String>,
    /// True when `current` may differ from `base`.
    dirty: bool,
}

fn fill(slot: &mut String, s: &str) {
    slot.clear();
    slot.push_str(s);
}

impl LabelsBuilder {
    /// Resets the buffer to a stream's labels plus an entry's structured metadata.
    pub fn reset(&mut self, base: &LabelSet, metadata: &[(String, String)]) {
        self.err = None;
        self.err_details = None;
        self.metadata_names.clear();
        if !self.dirty && self.base.id() == base.id() && metadata.is_empty() {
            return;
        }
        if self.base.id() != base.id() {
            self.base = base.clone();
        }
        let n = base.len();
        while self.current.len() > n {
            if let Some(p) = self.current.pop() {
                self.spare.push(p);
            }
        }
        for (i, (k, v)) in base.pairs().iter().enumerate() {
            if i < self.current.len() {
                fill(&mut self.current[i].0, k);
                fill(&mut self.current[i].1, v);
            } else {
                self.current.push((k.clone(), v.clone()));
            }
        }
        self.dirty = false;
        for (k, v) in metadata {
            self.metadata_names.push(k.clone());
            self.set(k, v);
        }
    }

    /// True when the stream labels or the structured metadata hold `name`
    /// (parsers then add `_extracted`).
    pub fn base_has(&self, name: &str) -> bool {
        self.base.get(name).is_some() || self.metadata_names.iter().any(|m| m == name)
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.current.binary_search_by(|(k, _)| k.as_str().cmp(name))
    }

    /// The value of `name`; the error labels read the error state.
    pub fn get(&self, name: &str) -> Option<&str> {
        match name {
            ERROR_LABEL => self.err.as_deref(),
            ERROR_DETAILS_LABEL => self.err_details.as_deref(),
            _ => self.find(name).ok().map(|i| self.current[i].1.as_str()),
        }
    }

    /// Sets a label (overwriting).
    pub fn set(&mut self, name: &str, value: &str) {
        match name {
            ERROR_LABEL => self.err = Some(value.to_string()),
            ERROR_DETAILS_LABEL => self.err_details = Some(value.to_string()),
            _ => match self.find(name) {
                Ok(i) => {
                    if self.current[i].1 != value {
                        self.dirty = true;
                        fill(&mut self.current[i].1, value);
                    }
                }
                Err(i) => {
                    self.dirty = true;
                    let mut slot = self.spare.pop().unwrap_or_default();
                    fill(&mut slot.0, name);
                    fill(&mut slot.1, value);
                    self.current.insert(i, slot);
                }
            },
        }
    }

    /// Removes a label.
    pub fn del(&mut self, name: &str) {
        match name {
            ERROR_LABEL => self.err = None,
            ERROR_DETAILS_LABEL => self.err_details = None,
            _ => {
                if let Ok(i) = self.find(name) {
                    self.dirty = true;
                    let p = self.current.remove(i);
                    self.spare.push(p);
                }
            }
        }
    }

    /// Keeps only the labels for which `keep` answers true (error labels included).
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &str) -> bool) {
        let mut i = 0;
        while i < self.current.len() {
            if keep(&self.current[i].0, &self.current[i].1) {
                i += 1;
            } else {
                self.dirty = true;
                let p = self.current.remove(i);
                self.spare.push(p);
            }
        }
        if self.err.as_deref().is_some_and(|e| !keep(ERROR_LABEL, e)) {
            self.err = None;
        }
        if self
            .err_details
            .as_deref()
            .is_some_and(|e| !keep(ERROR_DETAILS_LABEL, e))
        {
            self.err_details = None;
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

    /// Every label in name order, error labels excluded (for templates).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.current.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The final labels in name order, error labels included.
    fn view(&self) -> impl Iterator<Item = (&str, &str)> {
        let mut extra: [Option<(&str, &str)>; 2] = [
            self.err.as_deref().map(|e| (ERROR_LABEL, e)),
            self.err_details
                .as_deref()
                .map(|e| (ERROR_DETAILS_LABEL, e)),
        ];
        let mut cur = self.iter().peekable();
        let mut next_extra = 0;
        std::iter::from_fn(move || {
            while next_extra < 2 && extra[next_extra].is_none() {
                next_extra += 1;
            }
            let e = if next_extra < 2 {
                extra[next_extra]
            } else {
                None
            };
            match (cur.peek().copied(), e) {
                (Some(c), Some(x)) if x.0 < c.0 => {
                    extra[next_extra] = None;
                    Some(x)
                }
                (Some(_), _) => cur.next(),
                (None, Some(x)) => {
                    extra[next_extra] = None;
                    Some(x)
                }
                (None, None) => None,
            }
        })
    }

    /// True when nothing differs from the stream labels.
    pub fn is_base(&self) -> bool {
        !self.dirty && self.err.is_none() && self.err_details.is_none()
    }

    /// The stream labels this buffer started from.
    pub fn base(&self) -> &LabelSet {
        &self.base
    }

    /// Hash of the final labels (as [`LabelSet::hash64`] of [`Self::labels`]).
    pub fn view_hash(&self) -> u64 {
        hash_pairs(self.view())
    }

    /// True when the final labels equal `set`.
    pub fn view_eq(&self, set: &LabelSet) -> bool {
        let mut a = self.view();
        let mut b = set.pairs().iter();
        loop {
            match (a.next(), b.next()) {
                (None, None) => return true,
                (Some((k, v)), Some((k2, v2))) if k == k2 && v == v2 => {}
                _ => return false,
            }
        }
    }

    /// The final label set: everything plus the error labels when set.
    pub fn labels(&self) -> LabelSet {
        if self.is_base() {
            return self.base.clone();
        }
        LabelSet::from_sorted(
            self.view()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
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
        assert!(b.base_has("trace_id"));
        assert!(!b.base_has("level"));
        b.set("level", "info");
        b.set("Status", "OK");
        b.set_err("JSONParserErr");
        assert_eq!(b.get("__error__"), Some("JSONParserErr"));
        let l = b.labels();
        assert_eq!(
            l.to_string(),
            r#"{Status="OK", __error__="JSONParserErr", app="api", level="info", trace_id="t"}"#
        );
        assert_eq!(b.view_hash(), l.hash64());
        assert!(b.view_eq(&l));
        b.del("level");
        assert!(!b.view_eq(&l));
        b.reset(&base, &[]);
        assert_eq!(b.labels(), base);
        assert!(b.is_base());
        assert_eq!(b.get("level"), None);
    }
}
