//! SQL text for the pieces of a query plan, as pure functions.
//!
//! Every value from a query enters SQL through [`quote`] (string literals)
//! or as a formatted integer; nothing is interpolated raw. The table
//! layout these queries read is [`crate::schema`]'s.

mod fields;
mod filter;
mod group;
mod lines;
mod mask;
mod query;
mod regex;
mod top;

pub use fields::{exact_bytes, exact_duration_ns, exact_float, exact_ipv4, exact_ipv6};
use filter::contains_pattern;
pub use filter::{line_filter, matcher, time_range};
pub use lines::{keyset_condition, lines_query, lines_read_query, LinesKey, LinesRead};
pub use mask::{delete_condition, delete_line_filter, id_set, streams_subquery, RowMask};
pub use query::{
    bucket_expr, buckets_query, label_names_query, label_values_query, scan_query,
    stream_bounds_query, stream_totals_query, streams_query, StreamSelect,
};
pub use regex::{line_regex, selector_regex};

use runakefli_model::Timestamp;

/// A ClickHouse string literal holding exactly `s` (backslash and single
/// quote escaped; every other byte, newlines included, stands for itself).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A ClickHouse identifier (a database or table name) in backquotes.
pub fn ident(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('`');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '`' => out.push_str("\\`"),
            c => out.push(c),
        }
    }
    out.push('`');
    out
}

/// A `DateTime64(9, 'UTC')` constant for a nanosecond timestamp.
pub fn ts_literal(ts: Timestamp) -> String {
    format!("fromUnixTimestamp64Nano(toInt64({ts}), 'UTC')")
}

/// The UTC day (`Date`) of a nanosecond timestamp, as a constant.
pub fn day_literal(ts: Timestamp) -> String {
    format!("toDate({}, 'UTC')", ts_literal(ts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_escapes_only_what_clickhouse_reads_specially() {
        assert_eq!(quote("a'b\\c\nd"), "'a\\'b\\\\c\nd'");
        assert_eq!(quote("\0"), "'\\0'");
        assert_eq!(quote("ünï"), "'ünï'");
        assert_eq!(ident("lo`gs"), "`lo\\`gs`");
    }

    #[test]
    fn times_are_nanosecond_constants() {
        assert_eq!(
            ts_literal(1_700_000_000_000_000_001),
            "fromUnixTimestamp64Nano(toInt64(1700000000000000001), 'UTC')"
        );
        assert_eq!(
            day_literal(0),
            "toDate(fromUnixTimestamp64Nano(toInt64(0), 'UTC'), 'UTC')"
        );
    }
}
