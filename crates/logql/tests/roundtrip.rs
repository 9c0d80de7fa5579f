//! Property tests: random valid queries from a small LogQL grammar parse, and
//! print → parse gives the same AST; arbitrary input never panics.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use proptest::prelude::*;
use proptest::sample::select;
use runakefli_logql::{parse_expr, parse_matchers};

fn name() -> impl Strategy<Value = String> {
    select(vec![
        "app",
        "env",
        "pod",
        "level",
        "status",
        "x_y",
        "latency_ms",
    ])
    .prop_map(String::from)
}

fn text() -> impl Strategy<Value = String> {
    select(vec![
        "api",
        "",
        "a b",
        "quo\"te",
        "back\\slash",
        "tab\t",
        "ünï",
        "x",
    ])
    .prop_map(|s| format!("{s:?}"))
}

fn regex() -> impl Strategy<Value = String> {
    select(vec![".+", "a|b", "x.*", "[0-9]+", "(?i)err"]).prop_map(|s| format!("{s:?}"))
}

fn matcher() -> impl Strategy<Value = String> {
    prop_oneof![
        (name(), select(vec!["=", "!="]), text()).prop_map(|(n, o, v)| format!("{n}{o}{v}")),
        (name(), select(vec!["=~", "!~"]), regex()).prop_map(|(n, o, v)| format!("{n}{o}{v}")),
    ]
}

fn selector() -> impl Strategy<Value = String> {
    prop::collection::vec(matcher(), 0..3).prop_map(|ms| {
        let mut all = vec![r#"app="api""#.to_string()];
        all.extend(ms);
        format!("{{{}}}", all.join(", "))
    })
}

fn line_filter() -> impl Strategy<Value = String> {
    // Loki's ip() line filter builds only after `|=` and `!=`.
    let value = prop_oneof![text(), Just(r#"ip("10.0.0.0/8")"#.to_string())];
    prop_oneof![
        (select(vec!["|=", "!="]), prop::collection::vec(value, 1..3))
            .prop_map(|(o, vs)| format!("{o} {}", vs.join(" or "))),
        (
            select(vec!["|>", "!>"]),
            prop::collection::vec(text(), 1..3)
        )
            .prop_map(|(o, vs)| format!("{o} {}", vs.join(" or "))),
        (select(vec!["|~", "!~"]), regex()).prop_map(|(o, v)| format!("{o} {v}")),
    ]
}

fn label_filter() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        matcher(),
        (
            name(),
            select(vec![">", ">=", "<", "<=", "==", "!=", "="]),
            select(vec!["1", "-2.5", "1e3", "+7", "0"])
        )
            .prop_map(|(n, o, v)| format!("{n}{o}{v}")),
        (
            name(),
            select(vec![">", "<="]),
            select(vec!["5m", "1h30m", "100ms", "2d", "1.5h", "-3s"])
        )
            .prop_map(|(n, o, v)| format!("{n} {o} {v}")),
        (
            name(),
            select(vec![">", "=="]),
            select(vec!["10MB", "1KiB", "5B", "3kB"])
        )
            .prop_map(|(n, o, v)| format!("{n}{o}{v}")),
        (name(), select(vec!["=", "!="])).prop_map(|(n, o)| format!(r#"{n}{o}ip("192.168.0.1")"#)),
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (
                inner.clone(),
                select(vec![" and ", " or ", ", ", " "]),
                inner.clone()
            )
                .prop_map(|(a, o, b)| format!("{a}{o}{b}")),
            inner.prop_map(|a| format!("({a})")),
        ]
    })
}

fn stage() -> impl Strategy<Value = String> {
    prop_oneof![
        line_filter(),
        Just("| json".to_string()),
        Just(r#"| json a="b.c", d"#.to_string()),
        Just("| logfmt --strict".to_string()),
        Just(r#"| logfmt --keep-empty x, y="z""#.to_string()),
        Just(r#"| regexp "(?P<w>\\w+)""#.to_string()),
        Just(r#"| pattern "<ip> - <_>""#.to_string()),
        Just("| unpack".to_string()),
        Just("| decolorize".to_string()),
        Just(r#"| line_format "{{.msg | ToUpper}}""#.to_string()),
        Just(r#"| label_format a=b, c="{{.d}}""#.to_string()),
        Just(r#"| drop a, b="c""#.to_string()),
        Just(r#"| keep x, y=~"z.*""#.to_string()),
        label_filter().prop_map(|f| format!("| {f}")),
    ]
}

fn log_expr() -> impl Strategy<Value = String> {
    (selector(), prop::collection::vec(stage(), 0..4)).prop_map(|(s, st)| {
        if st.is_empty() {
            s
        } else {
            format!("{s} {}", st.join(" "))
        }
    })
}

fn range() -> impl Strategy<Value = String> {
    select(vec!["[5m]", "[1h]", "[30s]", "[1h30m]", "[100ms]"]).prop_map(String::from)
}

fn offset() -> impl Strategy<Value = String> {
    select(vec!["", " offset 5m", " offset 1h", " offset -2m"]).prop_map(String::from)
}

fn grouping() -> impl Strategy<Value = String> {
    select(vec!["by (app)", "without (pod)", "by ()", "by (app, env)"]).prop_map(String::from)
}

fn range_agg() -> impl Strategy<Value = String> {
    let plain = (
        select(vec![
            "count_over_time",
            "rate",
            "bytes_over_time",
            "bytes_rate",
            "absent_over_time",
        ]),
        log_expr(),
        range(),
        offset(),
    )
        .prop_map(|(op, l, r, o)| format!("{op}({l}{r}{o})"));
    let unwrap = (
        select(vec![
            "sum_over_time",
            "avg_over_time",
            "max_over_time",
            "min_over_time",
            "quantile_over_time",
            "rate",
        ]),
        log_expr(),
        select(vec!["x", "bytes(x)", "duration(x)", "duration_seconds(x)"]),
        prop::option::of(label_filter()),
        range(),
        offset(),
        prop::option::of(grouping()),
    )
        .prop_map(|(op, l, u, post, r, o, g)| {
            let post = post.map(|p| format!(" | {p}")).unwrap_or_default();
            let param = if op == "quantile_over_time" {
                "0.95, "
            } else {
                ""
            };
            let g = if op == "rate" || op == "sum_over_time" {
                None
            } else {
                g
            };
            let g = g.map(|g| format!(" {g}")).unwrap_or_default();
            format!("{op}({param}{l} | unwrap {u}{post} {r}{o}){g}")
        });
    prop_oneof![plain, unwrap]
}

fn sample() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        4 => range_agg(),
        1 => select(vec!["1", "2.5", "-3", "1e2", "vector(1)"]).prop_map(String::from),
    ];
    leaf.prop_recursive(3, 10, 2, |inner| {
        prop_oneof![
            (
                select(vec![
                    "sum",
                    "avg",
                    "max",
                    "min",
                    "count",
                    "stddev",
                    "stdvar",
                    "sort",
                    "sort_desc"
                ]),
                inner.clone(),
                prop::option::of(grouping()),
                any::<bool>()
            )
                .prop_map(|(op, e, g, before)| {
                    let g = if op.starts_with("sort") { None } else { g };
                    match (g, before) {
                        (Some(g), true) => format!("{op} {g} ({e})"),
                        (Some(g), false) => format!("{op}({e}) {g}"),
                        (None, _) => format!("{op}({e})"),
                    }
                }),
            (select(vec!["topk", "bottomk"]), 1u8..5, inner.clone())
                .prop_map(|(op, k, e)| format!("{op}({k}, {e})")),
            (
                inner.clone(),
                select(vec![
                    "+", "-", "*", "/", "%", "^", "==", "!=", ">", ">=", "<", "<="
                ]),
                select(vec![
                    "",
                    " bool",
                    " on (app)",
                    " ignoring (pod) group_left (x)",
                    " on () group_right ()"
                ]),
                inner.clone()
            )
                .prop_map(|(a, o, m, b)| format!("{a} {o}{m} {b}")),
            inner.clone().prop_map(|e| format!("({e})")),
            inner.prop_map(|e| format!(r#"label_replace({e}, "dst", "$1", "app", "(.*)")"#)),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn log_queries_round_trip(q in log_expr()) {
        let e = parse_expr(&q).map_err(|err| TestCaseError::fail(format!("{q}: {err}")))?;
        let printed = e.to_string();
        let again = parse_expr(&printed).map_err(|err| TestCaseError::fail(format!("{printed}: {err}")))?;
        prop_assert_eq!(again, e, "{} printed as {}", q, printed);
    }

    #[test]
    fn metric_queries_round_trip(q in sample()) {
        let e = parse_expr(&q).map_err(|err| TestCaseError::fail(format!("{q}: {err}")))?;
        let printed = e.to_string();
        let again = parse_expr(&printed).map_err(|err| TestCaseError::fail(format!("{printed}: {err}")))?;
        prop_assert_eq!(again, e, "{} printed as {}", q, printed);
    }

    #[test]
    fn never_panics_on_arbitrary_text(q in "\\PC{0,80}") {
        if let Ok(e) = parse_expr(&q) {
            let printed = e.to_string();
            prop_assert_eq!(parse_expr(&printed).ok(), Some(e));
        }
        let _ = parse_matchers(&q);
    }

    #[test]
    fn never_panics_on_query_like_text(q in "[{}()\\[\\]|=~!<>,\"`a-z0-9 .#+*/%^\\-_\n]{0,60}") {
        if let Ok(e) = parse_expr(&q) {
            let printed = e.to_string();
            prop_assert_eq!(parse_expr(&printed).ok(), Some(e));
        }
    }

    #[test]
    fn never_panics_on_mutated_queries(q in sample(), cut in 0usize..200, ins in "[{}()\\[\\]|=~!,\" a-z0-9]{0,3}") {
        let chars: Vec<char> = q.chars().collect();
        let at = cut.min(chars.len());
        let mutated: String = chars[..at].iter().collect::<String>() + &ins + &chars[at..].iter().collect::<String>();
        if let Ok(e) = parse_expr(&mutated) {
            let printed = e.to_string();
            prop_assert_eq!(parse_expr(&printed).ok(), Some(e));
        }
    }
}
