//! Parser limits: a query nested thousands of levels deep in any recursive
//! construct is refused with a parse error (never a stack overflow), queries
//! at the accepted depth survive every recursive walk on a 2 MiB stack (the
//! size of tokio's blocking-pool threads, where the server parses), and the
//! input length limit is configurable.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use runakefli_logql::{
    parse_expr, parse_expr_with, parse_matchers_with, ParseError, ParseLimits, DEFAULT_MAX_DEPTH,
};

/// Stack of the threads the server parses and evaluates on.
const SERVER_STACK: usize = 2 << 20;

/// Runs `f` on a thread with `stack` bytes of stack; a stack overflow there
/// aborts the test process, which is the failure these tests guard against.
fn on_stack<T: Send + 'static>(stack: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(f)
        .expect("spawn test thread")
        .join()
        .expect("test thread panicked")
}

/// Every recursive construct of the grammar, nested `n` levels deep.
fn nested(n: usize) -> Vec<(&'static str, String)> {
    let sel = r#"{app="a"}"#;
    let rep = |s: &str| s.repeat(n);
    vec![
        (
            "parenthesised literal",
            format!("{}1{}", rep("("), rep(")")),
        ),
        (
            "parenthesised log selector",
            format!("{}{sel}{}", rep("("), rep(")")),
        ),
        (
            "parenthesised range aggregation",
            format!("{}count_over_time({sel}[1m]){}", rep("("), rep(")")),
        ),
        ("left-associative +", format!("1{}", rep(" + 1"))),
        ("right-associative ^", format!("1{}", rep(" ^ 1"))),
        ("comparison chain", format!("1{}", rep(" > bool 1"))),
        (
            "set operator chain",
            format!(
                "count_over_time({sel}[1m]){}",
                rep(&format!(" or count_over_time({sel}[1m])"))
            ),
        ),
        (
            "vector aggregations",
            format!("{}count_over_time({sel}[1m]){}", rep("sum("), rep(")")),
        ),
        (
            "topk",
            format!("{}count_over_time({sel}[1m]){}", rep("topk(1,"), rep(")")),
        ),
        (
            "label_replace",
            format!(
                "{}count_over_time({sel}[1m]){}",
                rep("label_replace("),
                rep(r#","d","$1","app","(.*)")"#)
            ),
        ),
        (
            "parenthesised log range",
            format!("count_over_time({}{sel}[1m]{})", rep("("), rep(")")),
        ),
        (
            "parenthesised label filter",
            format!("{sel} | {}x=\"1\"{}", rep("("), rep(")")),
        ),
        (
            "label filter or-chain",
            format!("{sel} | x=\"1\"{}", rep(" or x=\"1\"")),
        ),
        (
            "label filter and-chain",
            format!("{sel} | x=\"1\"{}", rep(" and x=\"1\"")),
        ),
        (
            "label filter comma-chain",
            format!("{sel} | x=\"1\"{}", rep(", x=\"1\"")),
        ),
        (
            "label filter juxtaposition",
            format!("{sel} | x=\"1\"{}", rep(" x=\"1\"")),
        ),
        (
            "unwrap post-filter chain",
            format!(
                "sum_over_time({sel} | unwrap v | x=\"1\"{} [1m])",
                rep(" or x=\"1\"")
            ),
        ),
        (
            "label filter inside range inside aggregation",
            format!(
                "{}sum_over_time({sel} | {}x=\"1\"{} | unwrap v [1m]){}",
                rep("sum("),
                rep("("),
                rep(")"),
                rep(")")
            ),
        ),
    ]
}

fn no_length_limit() -> ParseLimits {
    ParseLimits {
        max_bytes: usize::MAX,
        ..ParseLimits::default()
    }
}

#[test]
fn two_thousand_levels_are_refused_in_every_construct() {
    on_stack(SERVER_STACK, || {
        for (what, q) in nested(2000) {
            // Without the length limit only the depth limit stands between
            // the query and the stack.
            let err = parse_expr_with(&q, &no_length_limit())
                .expect_err(what)
                .to_string();
            assert!(
                err.starts_with("parse error at line 1, col ")
                    && err.ends_with(&format!(
                        "query is nested too deeply (more than {DEFAULT_MAX_DEPTH} levels)"
                    )),
                "{what}: {err}"
            );
            // With the default limits it is refused too (length or depth).
            assert!(parse_expr(&q).is_err(), "{what}");
        }
    });
}

#[test]
fn the_issue_query_is_a_plain_parse_error() {
    // ~2,000 nested parentheses in 4 KB, under the input limit.
    let q = format!("{}{{app=\"a\"}}{}", "(".repeat(2000), ")".repeat(2000));
    assert!(q.len() < runakefli_logql::MAX_INPUT_SIZE);
    let err = on_stack(SERVER_STACK, move || parse_expr(&q).unwrap_err());
    assert!(matches!(err, ParseError::Parse { line: 1, .. }), "{err:?}");
    assert!(err.to_string().contains("nested too deeply"), "{err}");
}

#[test]
fn accepted_depth_survives_every_walk_on_a_server_stack() {
    // Deep enough to be close to the limit in every construct, but accepted
    // (each level of these constructs costs at most two nesting levels).
    let depth = DEFAULT_MAX_DEPTH / 2 - 4;
    on_stack(SERVER_STACK, move || {
        for (what, q) in nested(depth) {
            let e = parse_expr_with(&q, &no_length_limit())
                .unwrap_or_else(|err| panic!("{what} at depth {depth}: {err}"));
            let printed = e.to_string();
            let again = parse_expr_with(&printed, &no_length_limit())
                .unwrap_or_else(|err| panic!("{what} printed as {printed}: {err}"));
            assert_eq!(again, e, "{what}");
            let _ = format!("{e:?}");
            let copy = e.clone();
            drop(e);
            drop(copy);
        }
    });
}

#[test]
fn depth_limit_is_configurable() {
    let q = "((((1))))";
    let tight = ParseLimits {
        max_depth: 3,
        ..ParseLimits::default()
    };
    let err = parse_expr_with(q, &tight).unwrap_err().to_string();
    assert_eq!(
        err,
        "parse error at line 1, col 4: query is nested too deeply (more than 3 levels)"
    );
    let roomy = ParseLimits {
        max_depth: 5,
        ..ParseLimits::default()
    };
    assert!(parse_expr_with(q, &roomy).is_ok());
}

#[test]
fn length_limit_is_configurable_with_lokis_message() {
    let q = r#"{app="abcdefgh"}"#;
    let limits = ParseLimits {
        max_bytes: 10,
        ..ParseLimits::default()
    };
    assert_eq!(
        parse_expr_with(q, &limits).unwrap_err().to_string(),
        "parse error : input size too long (16 > 10)"
    );
    assert_eq!(
        parse_matchers_with(q, &limits).unwrap_err().to_string(),
        "parse error : input size too long (16 > 10)"
    );
    // Loki's own limit by default: 5120 bytes or more is refused.
    let long = format!(r#"{{app="{}"}}"#, "x".repeat(5200));
    assert_eq!(
        parse_expr(&long).unwrap_err().to_string(),
        format!("parse error : input size too long ({} > 5120)", long.len())
    );
}
