//! Validation shared by every protocol: label strings, label sets, lines and
//! structured metadata against [`PushLimits`], with Loki's checks and wording.

use crate::limits::exceeds;
use crate::{PushError, PushLimits};
use runakefli_model::labels::unquote_go;
use runakefli_model::Labels;
use std::collections::HashMap;

/// True when `name` is a legal label name: `[a-zA-Z_][a-zA-Z0-9_]*`.
pub fn is_valid_label_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// A field or attribute name as a Prometheus label name: every character
/// outside `[A-Za-z0-9_]` becomes `_`, a leading digit gets a `key_` prefix and
/// a single leading `_` a `key` prefix (as Loki rewrites OTLP attribute names).
pub fn sanitize_label_name(name: &str) -> String {
    if name.is_empty() {
        return String::new();
    }
    let mut s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.as_bytes()[0].is_ascii_digit() {
        s.insert_str(0, "key_");
    } else if s.starts_with('_') && !s.starts_with("__") {
        s.insert_str(0, "key");
    }
    s
}

/// Splits Loki's label string form (`{a="b", c=`x`}`) into its pairs, in
/// written order, keeping repeated names and empty values so the caller can
/// report them. Values are Go-quoted strings as [`Labels::parse`] reads them.
pub fn parse_label_pairs(text: &str) -> Result<Vec<(String, String)>, String> {
    let s = text.trim();
    let inner = s
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .ok_or_else(|| format!("{text:?}: expected labels enclosed in braces"))?;
    let b = inner.as_bytes();
    let mut i = 0;
    let mut pairs = Vec::new();
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    loop {
        skip_ws(&mut i);
        if i >= b.len() {
            return Ok(pairs);
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        let name = &inner[start..i];
        if !is_valid_label_name(name) {
            return Err(format!(
                "{text:?}: invalid label name at offset {}",
                start + 1
            ));
        }
        skip_ws(&mut i);
        if i >= b.len() || b[i] != b'=' {
            return Err(format!(
                "{text:?}: expected \"=\" after label name {name:?}"
            ));
        }
        i += 1;
        skip_ws(&mut i);
        let (value, used) = unquote_go(&inner[i..])
            .ok_or_else(|| format!("{text:?}: expected a quoted value for label {name:?}"))?;
        i += used;
        pairs.push((name.to_string(), value));
        skip_ws(&mut i);
        if i < b.len() {
            if b[i] != b',' {
                return Err(format!(
                    "{text:?}: expected \",\" or \"}}\" after label {name:?}"
                ));
            }
            i += 1;
        }
    }
}

/// Checks a label set given as pairs (any order, empty values already dropped)
/// as Loki's validator does: at least one label, no more names than allowed,
/// names and values not too long, no name twice. Returns the canonical set.
pub fn check_label_pairs(
    mut pairs: Vec<(String, String)>,
    limits: &PushLimits,
) -> Result<Labels, PushError> {
    pairs.retain(|(_, v)| !v.is_empty());
    if pairs.is_empty() {
        return Err(PushError::MissingLabels);
    }
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    let stream = |pairs: &[(String, String)]| render(pairs);
    if exceeds(pairs.len(), limits.max_label_names_per_series) {
        return Err(PushError::TooManyLabels {
            stream: stream(&pairs),
            count: pairs.len(),
            limit: limits.max_label_names_per_series,
        });
    }
    let mut prev: Option<&str> = None;
    for (k, v) in &pairs {
        if exceeds(k.len(), limits.max_label_name_length) {
            return Err(PushError::LabelNameTooLong {
                stream: stream(&pairs),
                name: k.clone(),
            });
        }
        if exceeds(v.len(), limits.max_label_value_length) {
            return Err(PushError::LabelValueTooLong {
                stream: stream(&pairs),
                value: v.clone(),
            });
        }
        if prev == Some(k.as_str()) {
            return Err(PushError::DuplicateLabelName {
                stream: stream(&pairs),
                name: k.clone(),
            });
        }
        prev = Some(k);
    }
    Ok(Labels::new(pairs))
}

/// Loki's display of a (possibly non-canonical) sorted pair list.
fn render(pairs: &[(String, String)]) -> String {
    let mut out = String::from("{");
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(k);
        out.push('=');
        out.push_str(&runakefli_model::labels::quote_go(v));
    }
    out.push('}');
    out
}

/// Checks one entry of stream `labels`: line length and structured metadata
/// count and size (name + value bytes), with Loki's wording.
pub fn check_entry(
    labels: &Labels,
    line_len: usize,
    metadata: &[(String, String)],
    limits: &PushLimits,
) -> Result<(), PushError> {
    if exceeds(line_len, limits.max_line_bytes) {
        return Err(PushError::LineTooLong {
            limit: limits.max_line_bytes,
            stream: labels.to_string(),
            len: line_len,
        });
    }
    if metadata.is_empty() {
        return Ok(());
    }
    if exceeds(metadata.len(), limits.max_structured_metadata_entries) {
        return Err(PushError::MetadataTooMany {
            stream: labels.to_string(),
            count: metadata.len(),
            limit: limits.max_structured_metadata_entries,
        });
    }
    if limits.max_structured_metadata_bytes != 0 {
        let size: usize = metadata.iter().map(|(k, v)| k.len() + v.len()).sum();
        if size > limits.max_structured_metadata_bytes {
            return Err(PushError::MetadataTooLarge {
                stream: labels.to_string(),
                size,
                limit: limits.max_structured_metadata_bytes,
            });
        }
    }
    Ok(())
}

/// Parses and checks label strings, remembering each distinct string so that
/// a label string repeated across streams, and across the requests of one
/// thread (collectors send the same streams again and again), is parsed
/// once. The answers hold for one set of limits: other limits empty the
/// cache, and so does reaching [`LabelCache::MAX_ENTRIES`].
#[derive(Default)]
pub struct LabelCache {
    parsed: HashMap<String, Labels>,
    /// The limits the parsed answers were checked against.
    limits: Option<PushLimits>,
}

impl LabelCache {
    /// Label strings kept at most; the next one after that starts afresh.
    pub const MAX_ENTRIES: usize = 8192;

    /// An empty cache.
    pub fn new() -> Self {
        LabelCache::default()
    }

    /// The canonical, checked label set for Loki's label string `text`.
    pub fn get(&mut self, text: &str, limits: &PushLimits) -> Result<Labels, PushError> {
        if self.limits.as_ref() != Some(limits) {
            self.parsed.clear();
            self.limits = Some(limits.clone());
        }
        if let Some(l) = self.parsed.get(text) {
            return Ok(l.clone());
        }
        if self.parsed.len() >= Self::MAX_ENTRIES {
            self.parsed.clear();
        }
        let mut pairs = parse_label_pairs(text).map_err(PushError::InvalidLabels)?;
        if limits.discover_service_name && pairs.iter().any(|(_, v)| !v.is_empty()) {
            crate::discover::discover_service_name(&mut pairs);
        }
        let labels = check_label_pairs(pairs, limits)?;
        self.parsed.insert(text.to_string(), labels.clone());
        Ok(labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim() -> PushLimits {
        PushLimits::default()
    }

    #[test]
    fn label_names() {
        for ok in ["a", "_", "A_9", "__name__"] {
            assert!(is_valid_label_name(ok), "{ok}");
        }
        for bad in ["", "9a", "a-b", "a.b", "é"] {
            assert!(!is_valid_label_name(bad), "{bad}");
        }
    }

    #[test]
    fn parses_like_the_model() {
        let text = r#"{job="a\nb", app=`raw`, env="é",}"#;
        let pairs = parse_label_pairs(text).unwrap();
        assert_eq!(pairs.len(), 3);
        assert_eq!(
            check_label_pairs(pairs, &lim()).unwrap(),
            Labels::parse(&text.replace(",}", "}")).unwrap()
        );
        for bad in [
            "app=\"x\"",
            "{app}",
            "{app=x}",
            "{1a=\"x\"}",
            "{a=\"x\" b=\"y\"}",
            "{a-b=\"x\"}",
            "{a=\"x}",
        ] {
            assert!(parse_label_pairs(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cached_label_sets_answer_for_the_limits_asked_with() {
        let mut c = LabelCache::new();
        let text = r#"{app="api", pod="p-1"}"#;
        let first = c.get(text, &lim()).unwrap();
        assert_eq!(c.get(text, &lim()).unwrap(), first);
        let strict = PushLimits {
            max_label_names_per_series: 1,
            ..lim()
        };
        assert_eq!(
            c.get(text, &strict).unwrap_err().reason(),
            "max_label_names_per_series"
        );
        assert_eq!(c.get(text, &lim()).unwrap(), first);
        for i in 0..LabelCache::MAX_ENTRIES + 10 {
            let labels = c.get(&format!("{{app=\"a{i}\"}}"), &lim()).unwrap();
            assert_eq!(labels.get("app"), Some(format!("a{i}").as_str()));
        }
        assert!(c.parsed.len() <= LabelCache::MAX_ENTRIES);
    }

    #[test]
    fn label_set_checks() {
        let mut c = LabelCache::new();
        assert_eq!(c.get("{}", &lim()).unwrap_err(), PushError::MissingLabels);
        assert_eq!(
            c.get(r#"{a=""}"#, &lim()).unwrap_err(),
            PushError::MissingLabels
        );
        let e = c.get(r#"{b="1", a="2", b="3"}"#, &lim()).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"stream '{a="2", b="1", b="3"}' has duplicate label name: 'b'"#
        );
        let many: Vec<String> = (0..16).map(|i| format!("l{i:02}=\"v\"")).collect();
        let e = c
            .get(&format!("{{{}}}", many.join(",")), &lim())
            .unwrap_err();
        assert!(
            e.to_string().ends_with("has 16 label names; limit 15"),
            "{e}"
        );
        let long = "x".repeat(2049);
        let e = c.get(&format!("{{a=\"{long}\"}}"), &lim()).unwrap_err();
        assert_eq!(e.reason(), "label_value_too_long");
        let e = c
            .get(&format!("{{{}=\"v\"}}", "n".repeat(1025)), &lim())
            .unwrap_err();
        assert_eq!(e.reason(), "label_name_too_long");
        let e = c.get("{a=1}", &lim()).unwrap_err();
        assert!(e.to_string().starts_with("couldn't parse labels: "), "{e}");
        assert_eq!(e.status(), 400);
        assert_eq!(
            c.get(r#"{b="1", a="2", c=""}"#, &lim())
                .unwrap()
                .to_string(),
            r#"{a="2", b="1"}"#
        );
    }

    #[test]
    fn entry_checks() {
        let l = Labels::parse(r#"{a="b"}"#).unwrap();
        let mut limits = lim();
        limits.max_line_bytes = 5;
        assert!(check_entry(&l, 5, &[], &limits).is_ok());
        assert_eq!(
            check_entry(&l, 6, &[], &limits).unwrap_err().reason(),
            "line_too_long"
        );
        limits.max_structured_metadata_entries = 1;
        let md = vec![
            ("k".to_string(), "v".to_string()),
            ("k2".to_string(), "v".to_string()),
        ];
        assert_eq!(
            check_entry(&l, 1, &md, &limits).unwrap_err().reason(),
            "structured_metadata_too_many"
        );
        limits.max_structured_metadata_entries = 0;
        limits.max_structured_metadata_bytes = 4;
        let e = check_entry(&l, 1, &md, &limits).unwrap_err();
        assert!(
            e.to_string().starts_with(
                r#"stream '{a="b"}' has structured metadata too large: '5' bytes, limit: '4' bytes"#
            ),
            "{e}"
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = parse_label_pairs(&s);
        }

        #[test]
        fn display_round_trips(pairs in proptest::collection::vec(("[a-z_][a-z0-9_]{0,8}", "\\PC{1,12}"), 1..6)) {
            let l = Labels::new(pairs);
            let back = check_label_pairs(parse_label_pairs(&l.to_string()).unwrap(), &PushLimits::unlimited()).unwrap();
            proptest::prop_assert_eq!(back, l);
        }
    }
}
