//! Log patterns for `/loki/api/v1/patterns`: lines clustered into templates
//! with a Drain-like tree (Loki's pattern ingester uses Drain), counted per
//! `step` bucket.
//!
//! How lines become patterns (a simplification of Loki's Drain, see
//! docs/conformance.md for where the answers differ):
//! - **Tokens.** A JSON object line with a message field (`msg`,
//!   `message`, `log`, `_msg`, `content`) is reduced to `<_>` + message +
//!   `<_>` (the JSON around the message); the message is found even in a
//!   JSON line cut short. Other lines are used whole. The text is split at
//!   spaces.
//! - Patterns of fewer than [`MIN_CLUSTER_SIZE`] lines in the window are
//!   left out.
//! - **Tree.** Lines are grouped by token count and their first
//!   [`PATH_TOKENS`] tokens (never the last one), a token containing a digit standing for any
//!   token there. Within a group a line joins the most similar cluster
//!   (the share of positions whose template token is not a wildcard and
//!   equals the line's) when that share reaches [`SIMILARITY`]; otherwise
//!   it starts a cluster.
//! - **Merging.** Where a line differs from its cluster's template the
//!   template gets `<_>`, keeping leading and trailing punctuation both
//!   share (`(12ms)` and `(7ms)` give `(<_>)`) and the `key=` of logfmt
//!   pairs (`took=<_>`).
//! - Patterns are kept per `detected_level` (from structured metadata or a
//!   stream label; `unknown` without one).

use std::collections::{BTreeMap, HashMap};

/// Leading tokens that route a line in the tree.
pub const PATH_TOKENS: usize = 7;
/// Least similarity for a line to join a cluster.
pub const SIMILARITY: f64 = 0.3;
/// Patterns of fewer lines over the queried window are left out, as Loki's
/// querier prunes them.
pub const MIN_CLUSTER_SIZE: u64 = 30;
/// The wildcard.
pub const PARAM: &str = "<_>";
/// JSON members read as the message, in order.
const MESSAGE_FIELDS: &[&str] = &["msg", "message", "log", "_msg", "content"];

/// One pattern of the answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// The template.
    pub pattern: String,
    /// The `detected_level` of its lines.
    pub level: String,
    /// `(bucket start in seconds, lines)`, from the first to the last
    /// non-empty bucket, empty buckets between them included.
    pub samples: Vec<(i64, u64)>,
}

struct Cluster {
    tokens: Vec<String>,
    /// Lines per bucket start (ns).
    buckets: BTreeMap<i64, u64>,
}

/// Clusters lines of one level.
#[derive(Default)]
struct Drain {
    groups: HashMap<(usize, Vec<String>), Vec<usize>>,
    clusters: Vec<Cluster>,
}

impl Drain {
    fn add(&mut self, tokens: Vec<String>, bucket: i64) {
        // As in Drain, the last token never routes (a line's last word may vary).
        let key: Vec<String> = tokens
            .iter()
            .take(PATH_TOKENS.min(tokens.len().saturating_sub(1)))
            .map(|t| {
                if t.bytes().any(|b| b.is_ascii_digit()) {
                    "<*>".to_string()
                } else {
                    t.clone()
                }
            })
            .collect();
        let group = self.groups.entry((tokens.len(), key)).or_default();
        let mut best: Option<(usize, f64)> = None;
        for &c in group.iter() {
            let sim = similarity(&self.clusters[c].tokens, &tokens);
            if sim >= SIMILARITY && best.is_none_or(|(_, s)| sim > s) {
                best = Some((c, sim));
            }
        }
        let c = match best {
            Some((c, _)) => {
                let cl = &mut self.clusters[c];
                for (t, new) in cl.tokens.iter_mut().zip(&tokens) {
                    if t != new {
                        *t = merge_token(t, new);
                    }
                }
                c
            }
            None => {
                self.clusters.push(Cluster {
                    tokens,
                    buckets: BTreeMap::new(),
                });
                group.push(self.clusters.len() - 1);
                self.clusters.len() - 1
            }
        };
        *self.clusters[c].buckets.entry(bucket).or_default() += 1;
    }
}

/// The share of positions where the template's token is not the wildcard
/// and equals the line's, as Drain measures it. A token holding `<_>` among
/// other text (a JSON message's first and last, `<_>request`) is compared
/// like any other: only the wildcard itself matches nothing.
fn similarity(template: &[String], tokens: &[String]) -> f64 {
    if template.is_empty() {
        return 1.0;
    }
    let same = template
        .iter()
        .zip(tokens)
        .filter(|(t, n)| t.as_str() != PARAM && t == n)
        .count();
    same as f64 / template.len() as f64
}

/// The template token for two differing tokens.
fn merge_token(a: &str, b: &str) -> String {
    if let (Some((ka, va)), Some((kb, vb))) = (a.split_once('='), b.split_once('=')) {
        if ka == kb
            && !ka.is_empty()
            && ka
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
        {
            let quote = |v: &str| v.starts_with('"');
            let inner = if quote(va) && quote(vb) {
                "\"<_>"
            } else {
                PARAM
            };
            let close = va.ends_with('"') && vb.ends_with('"') && va.len() > 1 && vb.len() > 1;
            return format!("{ka}={inner}{}", if close { "\"" } else { "" });
        }
    }
    // A wildcard already in a template counts as a word here, so `(<_>)`
    // keeps its parentheses against `(5ms)`.
    let punct = |c: char| !c.is_alphanumeric();
    let lead = |s: &str| {
        let w = s.replace(PARAM, "x");
        w.len() - w.trim_start_matches(punct).len()
    };
    let trail = |s: &str| {
        let w = s.replace(PARAM, "x");
        w.len() - w.trim_end_matches(punct).len()
    };
    let (la, lb) = (lead(a), lead(b));
    let pre = if a[..la] == b[..lb] { &a[..la] } else { "" };
    let (ta, tb) = (trail(a), trail(b));
    let suf = if a[a.len() - ta..] == b[b.len() - tb..] && ta + la <= a.len() && tb + lb <= b.len()
    {
        &a[a.len() - ta..]
    } else {
        ""
    };
    let mut out = format!("{pre}{PARAM}{suf}");
    while out.contains("<_><_>") {
        out = out.replace("<_><_>", PARAM);
    }
    out
}

/// The tokens of a line (see the module header).
pub fn tokenize(line: &str) -> Vec<String> {
    let t = line.trim();
    let text = match t.starts_with('{').then(|| message(t)).flatten() {
        Some(msg) => format!("{PARAM}{msg}{PARAM}"),
        None => t.to_string(),
    };
    text.split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The first message member of a JSON object line, read leniently (the
/// line may be cut short after it).
fn message(line: &str) -> Option<String> {
    MESSAGE_FIELDS.iter().find_map(|f| {
        let key = format!("\"{f}\"");
        let mut from = 0;
        while let Some(i) = line[from..].find(&key) {
            let rest = line[from + i + key.len()..].trim_start();
            from += i + key.len();
            let Some(rest) = rest.strip_prefix(':') else {
                continue;
            };
            let rest = rest.trim_start();
            if !rest.starts_with('"') {
                continue;
            }
            let b = rest.as_bytes();
            let mut j = 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            if j >= b.len() {
                return None;
            }
            return serde_json::from_str::<String>(&rest[..=j]).ok();
        }
        None
    })
}

/// Clusters `(ts ns, level, line)` rows into patterns counted per `step`
/// (ns) bucket, buckets aligned to multiples of `step`.
pub fn patterns<'a>(
    rows: impl Iterator<Item = (i64, &'a str, &'a str)>,
    step: i64,
) -> Vec<Pattern> {
    let step = step.max(1);
    let mut by_level: BTreeMap<String, Drain> = BTreeMap::new();
    for (ts, level, line) in rows {
        let tokens = tokenize(line);
        if tokens.is_empty() {
            continue;
        }
        let bucket = ts - ts.rem_euclid(step);
        by_level
            .entry(level.to_string())
            .or_default()
            .add(tokens, bucket);
    }
    let mut out = Vec::new();
    for (level, drain) in by_level {
        for c in drain.clusters {
            if c.buckets.values().sum::<u64>() < MIN_CLUSTER_SIZE {
                continue;
            }
            let (Some((&first, _)), Some((&last, _))) =
                (c.buckets.first_key_value(), c.buckets.last_key_value())
            else {
                continue;
            };
            let mut samples = Vec::new();
            let mut b = first;
            while b <= last {
                samples.push((b / 1_000_000_000, c.buckets.get(&b).copied().unwrap_or(0)));
                b += step;
            }
            out.push(Pattern {
                pattern: c.tokens.join(" "),
                level: level.clone(),
                samples,
            });
        }
    }
    out.sort_by_key(|p| std::cmp::Reverse(p.samples.iter().map(|s| s.1).sum::<u64>()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_like_loki() {
        let lines = [
            r#"{"ts":"x","msg":"request completed with status 204","a":1}"#,
            r#"{"ts":"y","msg":"request completed with status 201","a":2}"#,
            "warn: token refresh slow (12ms) for user carol",
            "warn: token refresh slow (7ms) for user bob",
            r#"time=1 lvl=info msg="stock updated" sku=sku-1 took=12ms"#,
            r#"time=2 lvl=info msg="stock updated" sku=sku-2 took=3ms"#,
        ];
        let rows: Vec<(i64, &str, &str)> = lines
            .iter()
            .cycle()
            .take(lines.len() * MIN_CLUSTER_SIZE as usize)
            .enumerate()
            .map(|(i, l)| (i as i64 * 1_000_000_000, "info", *l))
            .collect();
        let got: Vec<String> = patterns(rows.into_iter(), 60_000_000_000)
            .into_iter()
            .map(|p| p.pattern)
            .collect();
        assert!(
            got.contains(&"<_>request completed with status <_>".to_string()),
            "{got:?}"
        );
        assert!(
            got.contains(&"warn: token refresh slow (<_>) for user <_>".to_string()),
            "{got:?}"
        );
        assert!(
            got.contains(&r#"time=<_> lvl=info msg="stock updated" sku=<_> took=<_>"#.to_string()),
            "{got:?}"
        );
    }

    /// A JSON message of two words is two tokens that both hold `<_>`
    /// (`<_>request`, `started<_>`): equal ones are one pattern with every
    /// line counted, not a cluster per line (each under the pattern
    /// minimum, so the message vanished, and each line compared with every
    /// cluster before it).
    #[test]
    fn short_json_messages_are_one_pattern() {
        let lines = [
            r#"{"level":"info","msg":"request started","n":1}"#,
            r#"{"level":"info","msg":"token verified","n":2}"#,
        ];
        let rows: Vec<(i64, &str, &str)> = (0..200)
            .map(|i| (i as i64 * 1_000_000_000, "info", lines[i % 2]))
            .collect();
        let got: Vec<(String, u64)> = patterns(rows.into_iter(), 60_000_000_000)
            .into_iter()
            .map(|p| (p.pattern, p.samples.iter().map(|s| s.1).sum()))
            .collect();
        assert_eq!(
            got,
            [
                ("<_>request started<_>".to_string(), 100),
                ("<_>token verified<_>".to_string(), 100)
            ]
        );
    }

    #[test]
    fn message_of_a_cut_line() {
        assert_eq!(
            tokenize(r#"{"ts":"x","msg":"request \"done\" 204","user":{"id":"#),
            vec!["<_>request", "\"done\"", "204<_>"]
        );
        assert_eq!(tokenize("plain  text"), vec!["plain", "text"]);
    }

    #[test]
    fn samples_span_first_to_last_bucket() {
        let s = 1_000_000_000;
        let mut rows = vec![(125 * s, "info", "a b"); 29];
        rows.insert(0, (0, "info", "a b"));
        let p = patterns(rows.into_iter(), 60 * s);
        assert_eq!(p[0].samples, vec![(0, 1), (60, 0), (120, 29)]);
        assert!(patterns(vec![(0, "info", "a b")].into_iter(), s).is_empty());
    }
}
