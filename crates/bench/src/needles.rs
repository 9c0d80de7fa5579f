//! Rare tokens ("needles") for the needle queries of issue 7, picked from the
//! generated data itself so that the same seed always gives the same needles.
//!
//! The generator is regenerated line by line (it is seeded and cheap) over the
//! lines that fall in the queried window:
//! - the user id whose line count is closest to [`USER_ID_TARGET_LINES`] (ties: the
//!   smallest id), counted from each line's `user_id` field;
//! - the trace id with the smallest key `trace * ODD mod 2^128` (a bijection, so the
//!   pick is a uniformly random trace id, not one with leading zeros), with the number
//!   of lines whose `trace_id` is that id.
//!
//! A user id (`usr_` and eight digits) or a 32-hex-digit trace id can occur in a line
//! only in its own field (and, for user ids, in the message of the same line): no other
//! field holds `usr_` or 32 hex digits in a row. So the field counts are the line
//! counts a substring filter finds; the tests check this against `str::contains`.

use std::collections::HashMap;

use serde::Serialize;

use crate::generator::{Generator, GeneratorConfig, GeneratorError};

/// How many lines the picked user id should occur in ("a handful").
pub const USER_ID_TARGET_LINES: u64 = 4;

/// An odd multiplier: multiplying by it modulo 2^128 permutes trace ids.
const ODD: u128 = 0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835;

/// The picked needles and how many lines of the queried window hold each.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Needles {
    /// A user id (`usr_` and eight digits).
    pub user_id: String,
    /// Lines holding `user_id`.
    pub user_id_lines: u64,
    /// A trace id (32 hex digits).
    pub trace_id: String,
    /// Lines holding `trace_id` (1 unless 128-bit ids collide).
    pub trace_id_lines: u64,
    /// Generated lines inside the window (the ones counted).
    pub lines_scanned: u64,
}

/// The text of the string field `key` of a generated line (no escapes in the value).
fn str_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("\"{key}\":\"");
    let start = line.find(&pat)? + pat.len();
    let len = line[start..].find('"')?;
    Some(&line[start..start + len])
}

/// Picks the needles from the first `lines` lines of `config`, counting only the lines
/// with a timestamp in `[start_ns, end_ns]` (the queried window).
pub fn find_needles(
    config: &GeneratorConfig,
    lines: u64,
    start_ns: i64,
    end_ns: i64,
) -> Result<Needles, GeneratorError> {
    let mut gen = Generator::new(config.clone())?;
    let mut users: HashMap<u32, u64> = HashMap::new();
    let mut best_trace: Option<(u128, u128)> = None; // (key, trace)
    let mut trace_lines = 0u64;
    let mut scanned = 0u64;
    for _ in 0..lines {
        let g = gen.next_line();
        if g.ts < start_ns || g.ts > end_ns {
            continue;
        }
        scanned += 1;
        if let Some(u) = str_field(&g.line, "user_id")
            .and_then(|u| u.strip_prefix("usr_"))
            .and_then(|d| d.parse::<u32>().ok())
        {
            *users.entry(u).or_default() += 1;
        }
        if let Some(t) =
            str_field(&g.line, "trace_id").and_then(|t| u128::from_str_radix(t, 16).ok())
        {
            let key = t.wrapping_mul(ODD);
            match best_trace {
                Some((k, _)) if key > k => {}
                Some((k, _)) if key == k => trace_lines += 1,
                _ => {
                    best_trace = Some((key, t));
                    trace_lines = 1;
                }
            }
        }
    }
    let (user, user_lines) = users
        .into_iter()
        .min_by_key(|&(u, n)| (n.abs_diff(USER_ID_TARGET_LINES), u))
        .ok_or_else(|| GeneratorError::Config("no line falls in the queried window".into()))?;
    let (_, trace) = best_trace
        .ok_or_else(|| GeneratorError::Config("no line with a trace id in the window".into()))?;
    Ok(Needles {
        user_id: format!("usr_{user:08}"),
        user_id_lines: user_lines,
        trace_id: format!("{trace:032x}"),
        trace_id_lines: trace_lines,
        lines_scanned: scanned,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(seed: u64, lines: u64) -> GeneratorConfig {
        GeneratorConfig::ending_at(
            seed,
            500,
            lines,
            1_790_812_800_000_000_000,
            GeneratorConfig::HOUR_NS,
        )
    }

    fn window(c: &GeneratorConfig) -> (i64, i64) {
        (c.start_ns, c.start_ns + c.span_ns)
    }

    #[test]
    fn same_seed_same_needles() {
        let c = config(3, 20_000);
        let (s, e) = window(&c);
        let a = find_needles(&c, 20_000, s, e).unwrap();
        let b = find_needles(&c, 20_000, s, e).unwrap();
        assert_eq!(a, b);
        let other = find_needles(&config(4, 20_000), 20_000, s, e).unwrap();
        assert_ne!(a.trace_id, other.trace_id);
        assert_eq!(a.lines_scanned, 20_000);
    }

    #[test]
    fn counts_match_substring_search_of_the_generated_lines() {
        let n = 30_000;
        let c = config(1, n);
        let (s, e) = window(&c);
        let needles = find_needles(&c, n, s, e).unwrap();
        assert_eq!(needles.trace_id.len(), 32);
        assert!(needles.user_id.starts_with("usr_") && needles.user_id.len() == 12);
        let lines: Vec<String> = Generator::new(c)
            .unwrap()
            .take(n as usize)
            .map(|g| g.line)
            .collect();
        let count = |needle: &str| lines.iter().filter(|l| l.contains(needle)).count() as u64;
        assert_eq!(needles.trace_id_lines, 1);
        assert_eq!(count(&needles.trace_id), 1);
        assert_eq!(count(&needles.user_id), needles.user_id_lines);
        assert_eq!(needles.user_id_lines, USER_ID_TARGET_LINES);
    }

    #[test]
    fn only_the_window_is_counted() {
        let n = 10_000;
        let c = config(2, n);
        let half = c.start_ns + c.span_ns / 2;
        let needles = find_needles(&c, n, half, c.start_ns + c.span_ns).unwrap();
        assert!(needles.lines_scanned > 4_000 && needles.lines_scanned < 6_000);
        let in_window: Vec<String> = Generator::new(c)
            .unwrap()
            .take(n as usize)
            .filter(|g| g.ts >= half)
            .map(|g| g.line)
            .collect();
        assert_eq!(
            in_window
                .iter()
                .filter(|l| l.contains(&needles.trace_id))
                .count(),
            1
        );
        let empty = find_needles(&config(2, 100), 100, 0, 1);
        assert!(empty.is_err());
    }

    #[test]
    fn reads_string_fields() {
        let line = r#"{"level":"info","user_id":"usr_00000042","trace_id":"ab"}"#;
        assert_eq!(str_field(line, "user_id"), Some("usr_00000042"));
        assert_eq!(str_field(line, "trace_id"), Some("ab"));
        assert_eq!(str_field(line, "span_id"), None);
    }
}
