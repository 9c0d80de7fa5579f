//! Parser tests: the shape of parsed trees, precedence, error wording, and
//! print → parse round trips.

use crate::ast::*;
use crate::{parse_expr, parse_matchers};
use runakefli_model::MatchOp;

fn rt(q: &str) -> Expr {
    let e = parse_expr(q).unwrap_or_else(|err| panic!("{q}: {err}"));
    let printed = e.to_string();
    let again =
        parse_expr(&printed).unwrap_or_else(|err| panic!("{q} printed as {printed}: {err}"));
    assert_eq!(again, e, "{q} printed as {printed}");
    e
}

fn err(q: &str) -> String {
    match parse_expr(q) {
        Ok(e) => panic!("{q} parsed as {e}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn broad_corpus_round_trips() {
    for q in [
        r#"{app="api"}"#,
        r#"{app="api", env!="dev", pod=~"a.+", ns!~"x|y"}"#,
        r#"{app=`raw\d`} |= "x" != "y" |~ "a.*" !~ "b" |> "<_> foo" !> "bar <_>""#,
        r#"{app="a"} |= "a" or "b" or ip("10.0.0.0/8") != ip("::1") or "z""#,
        r#"{app="a"} | json | logfmt --strict --keep-empty | logfmt a="b", c | json x="y.z", w="q[0]""#,
        r#"{app="a"} | regexp "(?P<ip>\\S+)" | pattern "<ip> - <_>" | unpack | decolorize"#,
        r#"{app="a"} | line_format "{{.msg}}" | label_format a=b, c="{{.d}}" | drop a, b="c" | keep x, y=~"z""#,
        r#"{app="a"} | status >= 200 and status < 300 or level="error", dur > 1m30s | size <= 10MB"#,
        r#"{app="a"} | (a="b" or c="d") and e!="f" | g == -1.5 | h = ip("10.0.0.1") | i != ip("::1")"#,
        r#"{app="a"} | a="b" c="d" | e=~"f" , g!~"h""#,
        r#"{app="a"} # comment
           |= "x""#,
        r#"count_over_time({app="a"}[5m])"#,
        r#"rate({app="a"} |= "x" [1h30m] offset 5m)"#,
        r#"sum_over_time({app="a"} | json | unwrap latency_ms | __error__="" [5m])"#,
        r#"avg_over_time({app="a"} | logfmt | unwrap duration(d) [5m]) by (pod)"#,
        r#"max_over_time({app="a"} | logfmt | unwrap bytes(b) [5m]) without (pod)"#,
        r#"min_over_time({app="a"} | unwrap duration_seconds(d) [5m])"#,
        r#"quantile_over_time(0.99, {app="a"} | json | unwrap x [5m]) by (app)"#,
        r#"sum_over_time({app="a"}[5m] | json | unwrap x)"#,
        r#"sum_over_time({app="a"}[5m] offset 1h | json | unwrap x | y > 2)"#,
        r#"sum_over_time(({app="a"} | json | unwrap x)[5m])"#,
        r#"count_over_time(({app="a"})[5m])"#,
        r#"count_over_time(({app="a"}[5m]))"#,
        r#"sum by (app) (rate({app="a"}[5m]))"#,
        r#"sum(rate({app="a"}[5m])) by (app, pod)"#,
        r#"sum without () (rate({app="a"}[5m]))"#,
        r#"topk(3, sum by (app) (rate({app="a"}[5m])))"#,
        r#"bottomk by (app) (2, rate({app="a"}[5m]))"#,
        r#"sort_desc(sum by (app) (rate({app="a"}[5m])))"#,
        r#"sort(rate({app="a"}[5m]))"#,
        r#"label_replace(rate({app="a"}[5m]), "dst", "$1", "app", "(.*)")"#,
        r#"vector(1)"#,
        r#"1 + 2 * 3 ^ 2 ^ -1 - -4 % 5 / 6"#,
        r#"1 > bool 2"#,
        r#"(1 + 2) * 3"#,
        r#"sum(rate({a="b"}[1m])) / on (x) group_left (y) sum(rate({a="c"}[1m]))"#,
        r#"sum(rate({a="b"}[1m])) * ignoring () group_right sum(rate({a="c"}[1m]))"#,
        r#"sum(rate({a="b"}[1m])) > 1 and sum(rate({a="b"}[1m])) or vector(0) unless vector(1)"#,
        r#"-1.5e3"#,
        r#"SUM BY (app) (RATE({app="a"}[5m]))"#,
        r#"({app="a"})"#,
        r#"rate({app="a"} | rate > 2 [5m])"#,
        r#"{app="a"} | bytes > 1KiB | duration >= 100ms"#,
    ] {
        rt(q);
    }
}

#[test]
fn shapes() {
    let Expr::Sample(SampleExpr::Binary { op, lhs, rhs, .. }) = rt("1 + 2 * 3") else {
        panic!()
    };
    assert_eq!(op, BinOp::Add);
    assert_eq!(*lhs, SampleExpr::Literal(1.0));
    assert!(matches!(*rhs, SampleExpr::Binary { op: BinOp::Mul, .. }));
    let Expr::Sample(SampleExpr::Binary { op, rhs, .. }) = rt("2 ^ 3 ^ 2") else {
        panic!()
    };
    assert_eq!(op, BinOp::Pow);
    assert!(matches!(*rhs, SampleExpr::Binary { op: BinOp::Pow, .. }));
    let Expr::Sample(SampleExpr::Binary { op, lhs, .. }) = rt("1 - 2 - 3") else {
        panic!()
    };
    assert_eq!(op, BinOp::Sub);
    assert!(matches!(*lhs, SampleExpr::Binary { op: BinOp::Sub, .. }));

    let Expr::Log(l) = rt(r#"{a="b"} | x="1" or y="2" and z="3", w="4""#) else {
        panic!()
    };
    let Stage::LabelFilter(LabelFilterExpr::Or(_, r)) = &l.pipeline[0] else {
        panic!("{:?}", l.pipeline)
    };
    assert!(matches!(**r, LabelFilterExpr::And(..)));

    let Expr::Log(l) = rt(r#"{a="b"} |= "x" or "y""#) else {
        panic!()
    };
    let Stage::LineFilter(f) = &l.pipeline[0] else {
        panic!()
    };
    assert_eq!(f.values.len(), 2);

    let Expr::Sample(SampleExpr::RangeAggregation {
        range,
        param,
        grouping,
        ..
    }) = rt(r#"quantile_over_time(0.5, {a="b"} | unwrap x [1m] offset 2m) by (a)"#)
    else {
        panic!()
    };
    assert_eq!(param, Some(0.5));
    assert_eq!(range.range, 60_000_000_000);
    assert_eq!(range.offset, 120_000_000_000);
    assert_eq!(range.unwrap.as_ref().unwrap().label, "x");
    assert_eq!(
        grouping,
        Some(Grouping {
            without: false,
            labels: vec!["a".into()]
        })
    );

    let m = parse_matchers(r#"{a="b", c=~"d.*"}"#).unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!(m[1].op, MatchOp::Re);
}

#[test]
fn printer_forms() {
    assert_eq!(
        rt(r#"{app="api"}  |=  "x" | json"#).to_string(),
        r#"{app="api"} |= "x" | json"#
    );
    assert_eq!(
        rt(r#"sum by (app) (rate({app="a"}[5m]))"#).to_string(),
        r#"sum by (app)(rate({app="a"}[5m]))"#
    );
    assert_eq!(
        rt(r#"quantile_over_time(0.99,{a="b"}|unwrap x[1h]) by (a)"#).to_string(),
        r#"quantile_over_time(0.99,{a="b"} | unwrap x[1h]) by (a)"#
    );
}

#[test]
fn syntax_errors_like_loki() {
    let cases = [
        ("{", "parse error at line 1, col 2: syntax error: unexpected $end, expecting IDENTIFIER or }"),
        (r#"{a"#, "parse error at line 1, col 3: syntax error: unexpected $end, expecting = or =~ or !~ or !="),
        (r#"{a="b", }"#, "parse error at line 1, col 9: syntax error: unexpected }, expecting IDENTIFIER"),
        (r#"{a=b}"#, "parse error at line 1, col 4: syntax error: unexpected IDENTIFIER, expecting STRING"),
        (r#"{a="b"} |= ip"#, "parse error at line 1, col 12: syntax error: unexpected IDENTIFIER, expecting STRING or ip"),
        (r#"{a="b"} | regexp"#, "parse error at line 1, col 17: syntax error: unexpected $end, expecting STRING"),
        (r#"{a="b"} | label_format x"#, "parse error at line 1, col 25: syntax error: unexpected $end, expecting ="),
        (r#"rate({a="b"}[5m]"#, "parse error at line 1, col 17: syntax error: unexpected $end, expecting )"),
        (r#"rate({a="b"}[5m]) by"#, "parse error at line 1, col 21: syntax error: unexpected $end, expecting ("),
        (r#"sum(rate({a="b"}[5m])) by (a"#, "parse error at line 1, col 29: syntax error: unexpected $end, expecting , or )"),
        (r#"rate(1"#, "parse error at line 1, col 7: syntax error: unexpected $end, expecting ,"),
        (r#"rate(x"#, "parse error at line 1, col 6: syntax error: unexpected IDENTIFIER, expecting NUMBER or { or ("),
        (r#"sum(rate({a="b"}[5m]) offset"#, "parse error at line 1, col 23: syntax error: unexpected offset"),
        (r#"rate({a="b"}[5m] offset)"#, "parse error at line 1, col 24: syntax error: unexpected ), expecting DURATION"),
        (r#"rate({a="b"} | unwrap [5m])"#, "parse error at line 1, col 23: syntax error: unexpected RANGE, expecting IDENTIFIER or BYTES_CONV or DURATION_CONV or DURATION_SECONDS_CONV"),
        (r#"sum_over_time({a="b"} | unwrap x | json [5m])"#, "parse error at line 1, col 36: syntax error: unexpected json, expecting IDENTIFIER or ("),
        (r#"{a="b"} [5m]"#, "parse error at line 1, col 9: syntax error: unexpected RANGE"),
        (r#"{a="b"} [5"#, "parse error at line 1, col 9: missing closing ']' in duration"),
        (r#"rate({a="b"}[1.5h])"#, "parse error at line 1, col 13: unknown unit \".\" in duration \"1.5h\""),
        (r#"rate({a="b"}[5x])"#, "parse error at line 1, col 13: unknown unit \"x\" in duration \"5x\""),
        (r#"{a="b"} |= "x"#, "parse error at line 1, col 12: literal not terminated"),
        ("sum(", "parse error at line 1, col 5: syntax error: unexpected $end"),
        ("", "parse error : syntax error: unexpected $end"),
        ("1 +\n", "parse error at line 2, col 1: syntax error: unexpected $end"),
        (r#"sum({a="b"})"#, "parse error at line 1, col 12: syntax error: unexpected )"),
        (r#"vector(1"#, "parse error at line 1, col 9: syntax error: unexpected $end, expecting )"),
        (r#"{a="b"} | x="1" or vector(1)"#, "parse error at line 1, col 20: syntax error: unexpected VECTOR, expecting IDENTIFIER or ("),
    ];
    for (q, want) in cases {
        assert_eq!(err(q), want, "{q}");
    }
}

#[test]
fn semantic_errors_like_loki() {
    let cases = [
        (r#"rate({a="b"}[5m]) by (a)"#, "parse error : grouping not allowed for rate aggregation"),
        (r#"rate_counter({a="b"}[5m])"#, "parse error : invalid aggregation rate_counter without unwrap"),
        (r#"bytes_rate({a="b"} | unwrap x [5m])"#, "parse error : invalid aggregation bytes_rate with unwrap"),
        (r#"count_over_time(1, {a="b"}[5m])"#, "parse error : parameter 1 not supported for operation count_over_time"),
        (r#"sum(1, rate({a="b"}[5m]))"#, "parse error : unsupported parameter for operation sum(1,"),
        (r#"topk(1.5, rate({a="b"}[5m]))"#, "parse error : invalid parameter topk(1.5,"),
        (r#"sort by (a) (rate({a="b"}[5m]))"#, "parse error : sort and sort_desc doesn't allow grouping by "),
        (r#"1 and vector(1)"#, "parse error : unexpected literal for left leg of logical/set binary operation (and): 1.000000"),
        (r#"{a="b"} |= "x" + 1"#, "parse error : unexpected type for left leg of binary operation (+): *syntax.PipelineExpr"),
        (r#"{a=~"(a"}"#, "parse error : error parsing regexp: missing closing ): `(a`"),
        (r#"{a=~".*", b=""}"#, "parse error : queries require at least one regexp or equality matcher that does not have an empty-compatible value. For instance, app=~\".*\" does not meet this requirement, but app=~\".+\" will"),
        (r#"{a="b"} |= "x" |~ "(" | json"#, "parse error : stage '|= \"x\" |~ \"(\"' : error parsing regexp: missing closing ): `(`"),
        (r#"{a="b"} | label_format a=b, a="x""#, "parse error : stage '| label_format a=b,a=\"x\"' : multiple label name 'a' not allowed in a single format operation"),
        (r#"{a="b"} | regexp "(x)""#, "parse error : invalid regexp parser: at least one named capture must be supplied"),
        (r#"{a="b"} | label_format x="{{ if .a }}""#, "parse error : stage '| label_format x=\"{{ if .a }}\"' : invalid template for label 'x': template: label:1: unexpected EOF"),
    ];
    for (q, want) in cases {
        assert_eq!(err(q), want, "{q}");
    }
    assert_eq!(
        parse_matchers(r#"{a="b"} |= "x""#).unwrap_err().to_string(),
        "only label matchers are supported"
    );
}

/// A label name the lexer took from a lone symbol (`!`) prints apart from
/// the operator after it, which it would otherwise join (`!` `=~` → `!=` `~`).
#[test]
fn odd_label_names_round_trip() {
    for q in [
        "{!\n=~\".+\"}",
        r#"{a="b", ! !~"x"}"#,
        r#"{a="b"} | ! > 5"#,
        r#"{a="b"} | ! = "x""#,
        r#"{a="b"} | ! = ip("10.0.0.1")"#,
        r#"{a="b"} | ! >= 1s"#,
        r#"{a="b"} | ! < 1KB"#,
        r#"{a="b"} | label_format ! = x, y = !"#,
        r#"{a="b"} | label_format ! = "{{.x}}""#,
        r#"{a="b"} | json ! = "x""#,
        r#"{a="b"} | logfmt ! = "x""#,
        r#"{a="b"} | drop ! = "x""#,
        r#"{a="b"} | keep !, ! !~ "x""#,
    ] {
        if parse_expr(q).is_ok() {
            rt(q);
        } else {
            eprintln!("does not parse: {q}");
        }
    }
}
