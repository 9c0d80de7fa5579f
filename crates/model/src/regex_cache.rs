//! Compiled regular expressions kept across queries.
//!
//! Dashboards send the same patterns again and again, and compiling one can
//! cost more than running it: the regex crate builds a whole DFA up front
//! for a small pattern (`"msg":"[^"]*request` costs ~3 M instructions to
//! compile, and a query compiles its line filters more than once). A
//! [`compile`]d pattern is kept, keyed by its text, and handed out as a
//! clone (which shares the compiled program).

use regex::Regex;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Most patterns kept; a new pattern past it starts the cache over.
const MAX_PATTERNS: usize = 128;

/// Longest pattern kept (longer ones are compiled every time).
const MAX_PATTERN_BYTES: usize = 1024;

fn kept() -> &'static Mutex<HashMap<String, Regex>> {
    static KEPT: OnceLock<Mutex<HashMap<String, Regex>>> = OnceLock::new();
    KEPT.get_or_init(Default::default)
}

/// `Regex::new(pattern)`, compiled once per pattern while it stays kept.
pub fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    let keep = pattern.len() <= MAX_PATTERN_BYTES;
    if keep {
        if let Some(re) = kept().lock().ok().and_then(|m| m.get(pattern).cloned()) {
            return Ok(re);
        }
    }
    let re = Regex::new(pattern)?;
    if keep {
        if let Ok(mut m) = kept().lock() {
            if m.len() >= MAX_PATTERNS {
                m.clear();
            }
            m.insert(pattern.to_string(), re.clone());
        }
    }
    Ok(re)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_kept(pattern: &str) -> bool {
        kept().lock().unwrap().contains_key(pattern)
    }

    #[test]
    fn a_kept_pattern_matches_like_a_fresh_one() {
        let p = "a[0-9]+b(?i)C";
        let first = compile(p).unwrap();
        assert!(is_kept(p));
        let again = compile(p).unwrap();
        for s in ["a12bc", "a12bC", "ab", "xa1bcx", ""] {
            assert_eq!(again.is_match(s), Regex::new(p).unwrap().is_match(s), "{s}");
            assert_eq!(first.is_match(s), again.is_match(s), "{s}");
        }
        assert_eq!(again.as_str(), p);
    }

    #[test]
    fn errors_are_not_kept_and_the_cache_stays_bounded() {
        assert!(compile("(?P<bad").is_err());
        assert!(!is_kept("(?P<bad"));
        let long = "x".repeat(MAX_PATTERN_BYTES + 1);
        assert!(compile(&long).unwrap().is_match(&long));
        assert!(!is_kept(&long));
        for i in 0..3 * MAX_PATTERNS {
            compile(&format!("bounded{i}")).unwrap();
            assert!(kept().lock().unwrap().len() <= MAX_PATTERNS);
        }
    }
}
