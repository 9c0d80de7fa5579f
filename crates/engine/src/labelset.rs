//! Result label sets: sorted, shared, and (unlike stream labels) allowed to
//! carry empty values, since pipelines can produce them (`note=""`).

use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// A fast non-cryptographic hasher (FxHash's mixing) for in-process maps.
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(buf));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// Hash of a label sequence, as [`LabelSet::hash64`] computes it.
pub fn hash_pairs<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> u64 {
    let mut h = FastHasher::default();
    for (k, v) in pairs {
        h.write(k.as_bytes());
        h.write_u64(0xff);
        h.write(v.as_bytes());
        h.write_u64(0xfe);
    }
    h.finish()
}

/// A label set of a result stream or series, sorted by name with unique names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LabelSet(Arc<Vec<(String, String)>>);

impl LabelSet {
    /// Builds a set from pairs: sorted by name, the last value of a repeated name wins.
    pub fn new(mut pairs: Vec<(String, String)>) -> Self {
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(String, String)> = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            match out.last_mut() {
                Some(last) if last.0 == k => last.1 = v,
                _ => out.push((k, v)),
            }
        }
        LabelSet(Arc::new(out))
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

    /// A 64-bit hash of the pairs (see [`hash_pairs`]).
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
        f.write_str("{")?;
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k}={}", runakefli_model::labels::quote_go(v))?;
        }
        f.write_str("}")
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
