//! Label filters, compiled from the plan's data ([`LabelCondition`]) to a
//! *keep* and an *undecided* predicate over a row's label columns (`lv{i}`
//! the text, `lu{i}` whether it is undecided, `lf{i}` its exact number, see
//! `super::json::Label` and `super::number`).

use super::number::{
    exact_bytes, exact_duration_ns, exact_ipv4, exact_ipv6, float_compare, ipv6_literal, sql_cmp,
};
use crate::sql::{quote, selector_regex};
use crate::Error;
use runakefli_logql::humanize::loki_bytes_round_trip;
use runakefli_logql::ip::IpPattern;
use runakefli_model::label_condition::LabelCondition;
use runakefli_model::plan::UnwrapConversion;
use runakefli_model::{MatchOp, Matcher};

/// A stage as SQL: `keep` holds when the row passes (meaningful only
/// where `undecided` does not hold), `undecided` when the SQL cannot tell
/// (the row goes to the engine).
pub(super) struct Compiled {
    /// The row passes.
    pub keep: String,
    /// The SQL cannot tell.
    pub undecided: String,
}

/// Compiles a filter over the label columns (`col` gives a label's index).
pub(super) fn compile(e: &LabelCondition, col: &dyn Fn(&str) -> usize) -> Result<Compiled, Error> {
    Ok(match e {
        LabelCondition::And(a, b) => {
            let (a, b) = (compile(a, col)?, compile(b, col)?);
            Compiled {
                keep: format!("({} AND {})", a.keep, b.keep),
                undecided: format!("({} OR {})", a.undecided, b.undecided),
            }
        }
        // The right side runs only when the left one fails.
        LabelCondition::Or(a, b) => {
            let (a, b) = (compile(a, col)?, compile(b, col)?);
            Compiled {
                keep: format!("({} OR {})", a.keep, b.keep),
                undecided: format!("({} OR (NOT {} AND {}))", a.undecided, a.keep, b.undecided),
            }
        }
        LabelCondition::String(m) => {
            let i = col(&m.name);
            Compiled {
                keep: string_match(&format!("coalesce(lv{i}, '')"), m)?,
                undecided: format!("lu{i}"),
            }
        }
        // Decided where the value is an exact number; an absent label
        // drops the row (no error); any other value is the engine's (its
        // conversion, or its `__error__`).
        LabelCondition::Number { name, op, value } => {
            let i = col(name);
            Compiled {
                keep: format!(
                    "(isNotNull(lf{i}) AND {})",
                    float_compare(&format!("lf{i}"), *op, *value)
                ),
                undecided: format!("(isNull(lf{i}) AND (lu{i} OR isNotNull(lv{i})))"),
            }
        }
        // Decided where the SQL reads the duration as the engine does
        // (`exact_duration_ns`); an absent label drops the row; any other
        // value is the engine's.
        LabelCondition::Duration { name, op, value } => {
            let i = col(name);
            let ns = exact_duration_ns(&format!("lv{i}"));
            Compiled {
                keep: format!("(isNotNull({ns}) AND {ns} {} {value})", sql_cmp(*op)),
                undecided: format!("(lu{i} OR (isNull({ns}) AND isNotNull(lv{i})))"),
            }
        }
        // Compared with the size as Loki's query text prints it
        // (`loki_bytes_round_trip`), decided where the SQL reads the value
        // as the engine does (`exact_bytes`), as durations.
        LabelCondition::Bytes { name, op, value } => {
            let i = col(name);
            let bytes = exact_bytes(&format!("lv{i}"));
            let value = loki_bytes_round_trip(*value);
            Compiled {
                keep: format!("(isNotNull({bytes}) AND {bytes} {} {value})", sql_cmp(*op)),
                undecided: format!("(lu{i} OR (isNull({bytes}) AND isNotNull(lv{i})))"),
            }
        }
        // An IPv4 pattern over values that are plain dotted quads, an IPv6
        // pattern over values that are plain IPv6 addresses; an absent
        // label drops the row (`!=` too, as in Loki); other values are the
        // engine's. A zoned address (it matches nothing) is declined.
        LabelCondition::Ip {
            name,
            negated,
            pattern,
        } => {
            let p = IpPattern::parse(pattern)
                .map_err(|_| Error::Unsupported(format!("ip({pattern:?}) does not parse")))?;
            let i = col(name);
            let (n, lo, hi) = match (p.ipv4_range(), p.ipv6_range()) {
                (Some((lo, hi)), _) => (
                    exact_ipv4(&format!("lv{i}")),
                    lo.to_string(),
                    hi.to_string(),
                ),
                (None, Some((lo, hi))) => (
                    exact_ipv6(&format!("lv{i}")),
                    ipv6_literal(lo),
                    ipv6_literal(hi),
                ),
                (None, None) => {
                    return Err(Error::Unsupported(format!(
                        "ip({pattern:?}) matches nothing"
                    )))
                }
            };
            Compiled {
                keep: format!(
                    "(isNotNull({n}) AND ({n} BETWEEN {lo} AND {hi}) != {})",
                    u8::from(*negated)
                ),
                undecided: format!("(lu{i} OR (isNull({n}) AND isNotNull(lv{i})))"),
            }
        }
    })
}

/// A string matcher over a `String` expression, as the engine's `Matcher`
/// decides it (regexps anchored, `.` matching newlines).
fn string_match(v: &str, m: &Matcher) -> Result<String, Error> {
    Ok(match m.op {
        MatchOp::Eq => format!("{v} = {}", quote(&m.value)),
        MatchOp::Neq => format!("{v} != {}", quote(&m.value)),
        MatchOp::Re => format!("match({v}, {})", quote(&selector_regex(&m.value)?)),
        MatchOp::Nre => format!("NOT match({v}, {})", quote(&selector_regex(&m.value)?)),
    })
}

/// The unwrap of label column `i` with `conversion`: the unwrapped value
/// (`Nullable(Float64)`) and the stage. Kept with the value where the SQL
/// reads it as the engine does — a float that is exact and not `-0`
/// (`-0.0` as `f64`, which orders apart from `0` in quantiles); a duration
/// of [`exact_duration_ns`], in seconds (`ns / 1e9`, the engine's one IEEE
/// division); a size of [`exact_bytes`] — an absent or empty label gives no
/// sample (dropped, as in Loki); any other text is the engine's (its
/// conversion or its `__error__`).
pub(super) fn unwrap_stage(i: usize, conversion: UnwrapConversion) -> (String, Compiled) {
    let value = match conversion {
        UnwrapConversion::Float => {
            let neg_zero = format!("(lf{i} = 0 AND startsWith(ln{i}, '-'))");
            return (
                format!("lf{i}"),
                Compiled {
                    keep: format!("(isNotNull(lf{i}) AND NOT {neg_zero})"),
                    undecided: format!(
                        "((isNull(lf{i}) AND (lu{i} OR coalesce(lv{i}, '') != '')) OR \
                         (isNotNull(lf{i}) AND {neg_zero}))"
                    ),
                },
            );
        }
        UnwrapConversion::Duration => format!(
            "(toFloat64({}) / toFloat64(1000000000))",
            exact_duration_ns(&format!("lv{i}"))
        ),
        UnwrapConversion::Bytes => format!("toFloat64({})", exact_bytes(&format!("lv{i}"))),
    };
    let stage = Compiled {
        keep: format!("isNotNull({value})"),
        undecided: format!("(lu{i} OR (isNull({value}) AND coalesce(lv{i}, '') != ''))"),
    };
    (value, stage)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use runakefli_logql::{Expr, Stage};
    use runakefli_model::plan::FieldFilter;
    use std::sync::Arc;

    /// A filter stage of `text` (parsed here, in the test, as the engine
    /// does) reading `labels`.
    pub(crate) fn ff(text: &str, labels: &[&str]) -> FieldFilter {
        let Ok(Expr::Log(log)) = runakefli_logql::parse_expr(&format!("{{x=\"y\"}} | {text}"))
        else {
            panic!("{text}")
        };
        let [Stage::LabelFilter(e)] = log.pipeline.as_slice() else {
            panic!("{text}")
        };
        FieldFilter {
            labels: labels.iter().map(|s| s.to_string()).collect(),
            condition: e.into(),
            text: text.into(),
            test: Arc::new(|_| runakefli_model::plan::FilterOutcome::Keep),
        }
    }

    fn compiled(text: &str) -> Result<Compiled, Error> {
        compile(&ff(text, &[]).condition, &|n| match n {
            "level" => 0,
            _ => 1,
        })
    }

    #[test]
    fn filters_compile_from_their_text_or_decline() {
        let c = compiled(r#"level="error""#).unwrap();
        assert_eq!(c.keep, "coalesce(lv0, '') = 'error'");
        assert_eq!(c.undecided, "lu0");
        let c = compiled(r#"level=~"err.*" or status >= 500"#).unwrap();
        assert_eq!(
            c.keep,
            "(match(coalesce(lv0, ''), '^(?s:err.*)$') OR (isNotNull(lf1) AND lf1 >= toFloat64(500)))"
        );
        assert_eq!(
            c.undecided,
            "(lu0 OR (NOT match(coalesce(lv0, ''), '^(?s:err.*)$') AND (isNull(lf1) AND (lu1 OR isNotNull(lv1)))))"
        );
        let c = compiled("status < 0.5").unwrap();
        assert_eq!(
            c.keep,
            format!(
                "(isNotNull(lf1) AND lf1 < reinterpretAsFloat64(toUInt64({})))",
                0.5f64.to_bits()
            )
        );
        let c = compiled("latency > 5s").unwrap();
        let ns = exact_duration_ns("lv1");
        assert_eq!(c.keep, format!("(isNotNull({ns}) AND {ns} > 5000000000)"));
        assert_eq!(
            c.undecided,
            format!("(lu1 OR (isNull({ns}) AND isNotNull(lv1)))")
        );
        let c = compiled("size > 3MiB").unwrap();
        let b = exact_bytes("lv1");
        assert_eq!(c.keep, format!("(isNotNull({b}) AND {b} > 3100000)"));
        let c = compiled(r#"addr != ip("10.0.0.0/8")"#).unwrap();
        let n = exact_ipv4("lv1");
        assert_eq!(
            c.keep,
            format!("(isNotNull({n}) AND ({n} BETWEEN 167772160 AND 184549375) != 1)")
        );
        let c = compiled(r#"addr = ip("2001:db8::/32")"#).unwrap();
        let n = exact_ipv6("lv1");
        assert_eq!(
            c.keep,
            format!(
                "(isNotNull({n}) AND ({n} BETWEEN toIPv6('2001:0db8:0000:0000:0000:0000:0000:0000') \
                 AND toIPv6('2001:0db8:ffff:ffff:ffff:ffff:ffff:ffff')) != 0)"
            )
        );
        assert_eq!(
            c.undecided,
            format!("(lu1 OR (isNull({n}) AND isNotNull(lv1)))")
        );
        for declined in [r#"addr = ip("fe80::1%eth0")"#, r#"level=~"\\d+""#] {
            assert!(compiled(declined).is_err(), "{declined}");
        }
    }

    #[test]
    fn the_unwrap_keeps_exact_numbers_but_negative_zero() {
        let (v, s) = unwrap_stage(2, UnwrapConversion::Float);
        assert_eq!(v, "lf2");
        assert_eq!(
            s.keep,
            "(isNotNull(lf2) AND NOT (lf2 = 0 AND startsWith(ln2, '-')))"
        );
        assert!(s
            .undecided
            .starts_with("((isNull(lf2) AND (lu2 OR coalesce(lv2, '') != ''))"));
    }
}
