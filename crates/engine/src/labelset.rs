//! Answer label sets: the labels a pipeline gives a row, and the labels of
//! a result stream or series. Sorted like a stream's
//! [`Labels`](runakefli_model::Labels) and printed alike (both through
//! [`runakefli_model::labels`]), but a different concept:
//!
//! - a stream's labels are its identity: empty values are dropped (Loki
//!   treats `x=""` as no label) and the set hashes to the stored stream id;
//! - an answer's labels may carry empty values, since pipelines make them
//!   (`| label_format note=""`), and are shared (`Arc`): the rows and series
//!   of one label set hold one copy, cloned by a reference count on the hot
//!   path, and compared by identity first ([`LabelSet::id`]).

use crate::fast_hash::hash_pairs;
use std::fmt;
use std::sync::Arc;

/// A label set of a result stream or series, sorted by name with unique names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LabelSet(Arc<Vec<(String, String)>>);

impl LabelSet {
    /// Builds a set from pairs: sorted by name, the last value of a repeated name wins.
    pub fn new(pairs: Vec<(String, String)>) -> Self {
        LabelSet(Arc::new(runakefli_model::labels::sort_unique(pairs)))
    }

    /// Wraps pairs already sorted by name with unique names.
    pub fn from_sorted(pairs: Vec<(String, String)>) -> Self {
        debug_assert!(pairs.windows(2).all(|w| w[0].0 < w[1].0));
        LabelSet(Arc::new(pairs))
    }

    /// Identity of this shared set (equal ids imply equal sets).
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// A 64-bit hash of the pairs (see [`hash_pairs`](crate::fast_hash::hash_pairs)).
    pub fn hash64(&self) -> u64 {
        hash_pairs(self.0.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    /// The pairs, sorted by name.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.0
    }

    /// The value of `name`, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| k.as_str().cmp(name))
            .ok()
            .map(|i| self.0[i].1.as_str())
    }

    /// Number of labels.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are no labels.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<&runakefli_model::Labels> for LabelSet {
    fn from(l: &runakefli_model::Labels) -> Self {
        LabelSet(Arc::new(l.pairs().to_vec()))
    }
}

impl fmt::Display for LabelSet {
    /// Loki's form: `{a="b", c="d"}` with Go-quoted values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        runakefli_model::labels::write_pairs(f, &self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_empty_values_and_sorts() {
        let l = LabelSet::new(vec![
            ("b".into(), "".into()),
            ("a".into(), "1".into()),
            ("b".into(), "2".into()),
        ]);
        assert_eq!(l.to_string(), r#"{a="1", b="2"}"#);
        let e = LabelSet::new(vec![("note".into(), String::new())]);
        assert_eq!(e.get("note"), Some(""));
    }
}
