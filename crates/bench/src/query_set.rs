//! The query sets `bench query` can time: the seven queries of the reference
//! workload (`shared/workload.md`), the fourteen queries of issue 7, each of the
//! latter with the VictoriaLogs time the issue reports and our target (half of it),
//! and the needle queries of either workload shape ([`needles_queries`]).
//! The nine queries `bench clickhouse` times on both backends are
//! [`crate::side_by_side::side_by_side_queries`].

use serde::Serialize;

use crate::needles::Needles;
use crate::needles_varied::{Counted, NeedleSet};
use crate::victorialogs::Logsql;
use crate::vocab::PHRASE;

/// The app issue 7 calls "checkout": the generator's name for it.
pub const ISSUE7_APP: &str = "checkout-api";

/// Which queries to time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QuerySet {
    /// The seven queries of `shared/workload.md`, as range and as instant queries.
    #[default]
    Workload,
    /// The fourteen queries of issue 7, as range queries, against VictoriaLogs' times.
    Issue7,
    /// Rare-token searches, one per needle kind of the workload shape, each with the
    /// lines it must return, and phrase and error counts ([`needles_queries`]).
    Needles,
}

impl QuerySet {
    /// The modes each query of the set runs in.
    pub fn modes(self) -> &'static [QueryMode] {
        match self {
            QuerySet::Workload => &[QueryMode::Range, QueryMode::Instant],
            QuerySet::Issue7 | QuerySet::Needles => &[QueryMode::Range],
        }
    }

    /// Short name, as the `--set` flag spells it.
    pub fn name(self) -> &'static str {
        match self {
            QuerySet::Workload => "workload",
            QuerySet::Issue7 => "issue7",
            QuerySet::Needles => "needles",
        }
    }
}

/// Range or instant query.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum QueryMode {
    /// `/loki/api/v1/query_range` over the hour.
    Range,
    /// `/loki/api/v1/query` at the end of the hour.
    Instant,
}

impl QueryMode {
    /// `range` or `instant`.
    pub fn name(self) -> &'static str {
        match self {
            QueryMode::Range => "range",
            QueryMode::Instant => "instant",
        }
    }
}

/// One query to time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QuerySpec {
    /// Number within its set (1-based).
    pub id: u8,
    /// Short description.
    pub name: &'static str,
    /// The LogQL text.
    pub logql: String,
    /// True for log queries (limit and direction apply).
    pub is_log_query: bool,
    /// VictoriaLogs' time for this query, milliseconds: issue 7's published
    /// figure, or the median warm time measured in this run (needle queries
    /// with `--victorialogs-bin`).
    pub victorialogs_ms: Option<f64>,
    /// Our target: half of VictoriaLogs' time, milliseconds.
    pub target_ms: Option<f64>,
    /// Lines of the generated data the query must return (needle queries only).
    pub expected_lines: Option<u64>,
    /// The same question in LogsQL, for VictoriaLogs beside us (needle queries).
    pub logsql: Option<Logsql>,
}

fn spec(id: u8, name: &'static str, logql: String, is_log_query: bool) -> QuerySpec {
    QuerySpec {
        id,
        name,
        logql,
        is_log_query,
        victorialogs_ms: None,
        target_ms: None,
        expected_lines: None,
        logsql: None,
    }
}

/// The seven reference queries of workload.md for an app name and a common word.
pub fn reference_queries(app: &str, word: &str) -> Vec<QuerySpec> {
    vec![
        spec(
            1,
            "errors of one app",
            format!(r#"sum(count_over_time({{app="{app}"}} | json | level="error" [1h]))"#),
            false,
        ),
        spec(
            2,
            "errors per app",
            r#"sum by (app) (count_over_time({app=~".+"} | json | level="error" [1h]))"#.into(),
            false,
        ),
        spec(
            3,
            "newest 100 lines with word",
            format!(r#"{{app=~".+"}} |= "{word}""#),
            true,
        ),
        spec(
            4,
            "p99 duration per app",
            r#"quantile_over_time(0.99, {app=~".+"} | json | unwrap duration_ms [1h]) by (app)"#
                .into(),
            false,
        ),
        spec(
            5,
            "top 10 paths",
            r#"topk(10, sum by (path) (count_over_time({app=~".+"} | json [1h])))"#.into(),
            false,
        ),
        spec(
            6,
            "count lines with word",
            format!(r#"sum(count_over_time({{app=~".+"}} |= "{word}" [1h]))"#),
            false,
        ),
        spec(
            7,
            "count lines with phrase",
            format!(r#"sum(count_over_time({{app=~".+"}} |= "{PHRASE}" [1h]))"#),
            false,
        ),
    ]
}

/// VictoriaLogs' times of issue 7, milliseconds, in the order of [`issue7_queries`].
pub const ISSUE7_VICTORIALOGS_MS: [f64; 14] = [
    23.0, 62.0, 18.0, 16.0, 44.0, 114.0, 74.0, 178.0, 9.0, 68.0, 1997.0, 347.0, 121.0, 64.0,
];

/// The fourteen queries of issue 7 for an app (see [`ISSUE7_APP`]) and the needles
/// picked from the generated data. The issue's `http_path` and `http_status` are the
/// generator's `path` and `status` fields.
pub fn issue7_queries(app: &str, needles: &Needles) -> Vec<QuerySpec> {
    let user = &needles.user_id;
    let trace = &needles.trace_id;
    let mut qs =
        vec![
        spec(
            1,
            "regexp on msg",
            r#"{namespace=~".+"} |~ `"msg":"[^"]*request`"#.into(),
            true,
        ),
        spec(
            2,
            "phrase",
            format!(r#"{{namespace=~".+"}} |= "{PHRASE}""#),
            true,
        ),
        QuerySpec {
            expected_lines: Some(needles.user_id_lines),
            ..spec(3, "one user id", format!(r#"{{namespace=~".+"}} |= "{user}""#), true)
        },
        QuerySpec {
            expected_lines: Some(needles.trace_id_lines),
            ..spec(4, "one trace id", format!(r#"{{namespace=~".+"}} |= "{trace}""#), true)
        },
        spec(
            5,
            "errors of one app (text)",
            format!(r#"{{app="{app}"}} |= `"level":"error"`"#),
            true,
        ),
        spec(
            6,
            "lines per level (json)",
            r#"sum by (level) (count_over_time({namespace=~".+"} | json level="level" [1m]))"#
                .into(),
            false,
        ),
        spec(
            7,
            "errors per app (text)",
            r#"sum by (app) (count_over_time({namespace=~".+"} |= `"level":"error"` [1m]))"#
                .into(),
            false,
        ),
        spec(
            8,
            "count phrase",
            format!(r#"sum(count_over_time({{namespace=~".+"}} |= "{PHRASE}" [1m]))"#),
            false,
        ),
        spec(
            9,
            "errors of one app (json)",
            format!(r#"sum(count_over_time({{app="{app}"}} | json | level="error" [1m]))"#),
            false,
        ),
        spec(
            10,
            "errors per app (json)",
            r#"sum by (app) (count_over_time({app=~".+"} | json | level="error" [1m]))"#.into(),
            false,
        ),
        spec(
            11,
            "p99 duration per app",
            r#"quantile_over_time(0.99, {app=~".+"} | json | unwrap duration_ms [1m]) by (app)"#
                .into(),
            false,
        ),
        spec(
            12,
            "top 10 paths",
            r#"topk(10, sum by (path) (count_over_time({app=~".+"} | json [1h])))"#.into(),
            false,
        ),
        spec(
            13,
            "5xx rate per app",
            r#"sum by (app) (rate({app=~".+"} | json | status >= 500 [1m]))"#.into(),
            false,
        ),
        spec(14, "word timeout", r#"{app=~".+"} |= "timeout""#.into(), true),
    ];
    for (q, vl) in qs.iter_mut().zip(ISSUE7_VICTORIALOGS_MS) {
        q.victorialogs_ms = Some(vl);
        q.target_ms = Some(vl / 2.0);
    }
    qs
}

/// The needle queries of a [`NeedleSet`], as range queries over the hour: for every
/// needle, the newest `limit` lines holding it (expected: all of its lines, or `limit`
/// when more hold it: a common address at 10M lines); the newest
/// `limit` lines holding each phrase and the common word (expected: `limit`, or fewer
/// when fewer lines hold it); the per-minute count of lines holding each of them; and
/// the per-minute count of lines holding the error word, by app.
pub fn needles_queries(set: &NeedleSet, limit: u32) -> Vec<QuerySpec> {
    let mut qs = Vec::new();
    let mut push =
        |name: &'static str, logql: String, log: bool, expected: Option<u64>, logsql: Logsql| {
            qs.push(QuerySpec {
                expected_lines: expected,
                logsql: Some(logsql),
                ..spec(qs.len() as u8 + 1, name, logql, log)
            });
        };
    let all = r#"{namespace=~".+"}"#;
    for n in &set.needles {
        let logql = format!(r#"{all} |= "{}""#, n.value);
        push(
            n.kind.describe(),
            logql,
            true,
            Some(n.lines.min(u64::from(limit))),
            Logsql::newest(&n.value),
        );
    }
    let words: [(Option<&Counted>, &'static str, &'static str); 3] = [
        (
            Some(&set.phrase2),
            "two-word phrase",
            "count two-word phrase",
        ),
        (
            set.phrase3.as_ref(),
            "three-word phrase",
            "count three-word phrase",
        ),
        (Some(&set.common_word), "common word", "count common word"),
    ];
    for &(w, name, _) in &words {
        if let Some(w) = w {
            let logql = format!(r#"{all} |= "{}""#, w.text);
            let vl = Logsql::newest(&w.text);
            push(name, logql, true, Some(w.lines.min(u64::from(limit))), vl);
        }
    }
    for &(w, _, name) in &words {
        if let Some(w) = w {
            let logql = format!(r#"sum(count_over_time({all} |= "{}" [1m]))"#, w.text);
            push(name, logql, false, None, Logsql::hits(&w.text, None));
        }
    }
    let logql = format!(
        r#"sum by (app) (count_over_time({all} |= "{}" [1m]))"#,
        set.error_word.text
    );
    let vl = Logsql::hits(&set.error_word.text, Some("app"));
    push("errors per app (text)", logql, false, None, vl);
    qs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::Generator;
    use crate::vocab::{APPS, COMMON_WORD};

    fn needles() -> Needles {
        Needles {
            user_id: "usr_00001234".into(),
            user_id_lines: 4,
            trace_id: "0123456789abcdef0123456789abcdef".into(),
            trace_id_lines: 1,
            lines_scanned: 10,
        }
    }

    #[test]
    fn workload_queries_use_real_vocabulary() {
        let gen = Generator::new(crate::GeneratorConfig::default()).unwrap();
        let qs = reference_queries(gen.busiest_app(), COMMON_WORD);
        assert_eq!(qs.len(), 7);
        assert!(qs[0]
            .logql
            .contains(&format!("app=\"{}\"", gen.busiest_app())));
        assert!(qs[2].is_log_query && qs[2].logql.contains(COMMON_WORD));
        assert!(qs[6].logql.contains("connection timeout"));
        assert!(qs.iter().all(|q| q.victorialogs_ms.is_none()));
    }

    #[test]
    fn issue7_set_has_fourteen_queries_with_targets_and_needles() {
        assert!(APPS.iter().any(|a| a.0 == ISSUE7_APP));
        let qs = issue7_queries(ISSUE7_APP, &needles());
        assert_eq!(qs.len(), 14);
        for (i, q) in qs.iter().enumerate() {
            assert_eq!(q.id as usize, i + 1);
            let vl = q.victorialogs_ms.unwrap();
            assert_eq!(q.target_ms, Some(vl / 2.0));
        }
        assert_eq!(qs[10].victorialogs_ms, Some(1997.0));
        let logs: Vec<u8> = qs.iter().filter(|q| q.is_log_query).map(|q| q.id).collect();
        assert_eq!(logs, [1, 2, 3, 4, 5, 14]);
        assert_eq!(
            qs[0].logql,
            "{namespace=~\".+\"} |~ `\"msg\":\"[^\"]*request`"
        );
        assert!(qs[2].logql.ends_with("|= \"usr_00001234\""));
        assert_eq!(qs[2].expected_lines, Some(4));
        assert!(qs[3].logql.contains("0123456789abcdef0123456789abcdef"));
        assert_eq!(qs[3].expected_lines, Some(1));
        assert!(qs[4].logql.starts_with("{app=\"checkout-api\"}"));
        assert!(qs[8].logql.contains("{app=\"checkout-api\"}"));
        // The issue's http_path and http_status are the generator's path and status.
        assert!(qs[11].logql.contains("sum by (path)"));
        assert!(qs[12].logql.contains("| status >= 500"));
        assert!(qs
            .iter()
            .filter(|q| !q.is_log_query && q.id != 12)
            .all(|q| q.logql.contains("[1m]")));
    }

    #[test]
    fn issue7_field_names_exist_in_generated_lines() {
        let mut gen = Generator::new(crate::GeneratorConfig::default()).unwrap();
        let line = gen.next_line().line;
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        for field in ["msg", "level", "path", "status", "duration_ms"] {
            assert!(v.get(field).is_some(), "{field} missing from {line}");
        }
    }

    fn needle_set(shape: crate::Shape) -> NeedleSet {
        use crate::needles_varied::{Needle, NeedleKind};
        let counted = |text: &str, lines| Counted {
            text: text.into(),
            lines,
        };
        let needles = match shape {
            crate::Shape::Varied => vec![
                Needle {
                    kind: NeedleKind::UidJson,
                    value: "k3x9q2m".into(),
                    lines: 3,
                },
                Needle {
                    kind: NeedleKind::UidPlain,
                    value: "a1b2c3d".into(),
                    lines: 2,
                },
                Needle {
                    kind: NeedleKind::OrderNo,
                    value: "4829301827364".into(),
                    lines: 141,
                },
            ],
            crate::Shape::Reference => vec![Needle {
                kind: NeedleKind::Trace,
                value: "0123456789abcdef0123456789abcdef".into(),
                lines: 1,
            }],
        };
        NeedleSet {
            shape,
            needles,
            phrase2: counted("payment declined", 2_000),
            phrase3: (shape == crate::Shape::Varied).then(|| counted("retry budget exhausted", 42)),
            common_word: counted("completed", 140_000),
            error_word: counted("error", 6_000),
            lines_scanned: 200_000,
        }
    }

    #[test]
    fn every_needle_query_has_a_logsql_twin_of_its_kind() {
        use crate::victorialogs::LogsqlKind;
        let qs = needles_queries(&needle_set(crate::Shape::Varied), 100);
        for q in &qs {
            let vl = q.logsql.as_ref().expect("a LogsQL twin");
            let want = if q.is_log_query {
                LogsqlKind::Newest
            } else {
                LogsqlKind::Hits
            };
            assert_eq!(vl.kind, want, "{}", q.logql);
            // The needle of the LogQL line filter is the LogsQL phrase.
            let needle = q.logql.split("|= ").nth(1).unwrap();
            let needle = needle.split('"').nth(1).unwrap();
            assert!(vl.text.starts_with(&format!("\"{needle}\"")), "{}", vl.text);
        }
        assert!(qs
            .last()
            .unwrap()
            .logsql
            .as_ref()
            .unwrap()
            .text
            .contains("by (app)"));
    }

    #[test]
    fn needles_queries_search_each_needle_and_count_the_phrases() {
        let qs = needles_queries(&needle_set(crate::Shape::Varied), 100);
        let texts: Vec<&str> = qs.iter().map(|q| q.logql.as_str()).collect();
        assert_eq!(
            texts,
            [
                r#"{namespace=~".+"} |= "k3x9q2m""#,
                r#"{namespace=~".+"} |= "a1b2c3d""#,
                r#"{namespace=~".+"} |= "4829301827364""#,
                r#"{namespace=~".+"} |= "payment declined""#,
                r#"{namespace=~".+"} |= "retry budget exhausted""#,
                r#"{namespace=~".+"} |= "completed""#,
                r#"sum(count_over_time({namespace=~".+"} |= "payment declined" [1m]))"#,
                r#"sum(count_over_time({namespace=~".+"} |= "retry budget exhausted" [1m]))"#,
                r#"sum(count_over_time({namespace=~".+"} |= "completed" [1m]))"#,
                r#"sum by (app) (count_over_time({namespace=~".+"} |= "error" [1m]))"#,
            ]
        );
        let expected: Vec<Option<u64>> = qs.iter().map(|q| q.expected_lines).collect();
        assert_eq!(
            expected,
            [
                Some(3),
                Some(2),
                // More lines hold it than a page: the newest `limit` are expected.
                Some(100),
                Some(100),
                Some(42),
                Some(100),
                None,
                None,
                None,
                None
            ]
        );
        for (i, q) in qs.iter().enumerate() {
            assert_eq!(q.id as usize, i + 1);
            assert_eq!(q.is_log_query, i < 6);
            assert!(q.victorialogs_ms.is_none() && q.target_ms.is_none());
        }
        assert_eq!(qs[0].name, "user id (JSON line)");

        let reference = needles_queries(&needle_set(crate::Shape::Reference), 100);
        assert_eq!(reference.len(), 1 + 2 + 2 + 1);
        assert!(reference[0]
            .logql
            .contains("0123456789abcdef0123456789abcdef"));
        assert!(!reference.iter().any(|q| q.logql.contains("retry budget")));
    }

    #[test]
    fn sets_and_modes() {
        assert_eq!(QuerySet::default(), QuerySet::Workload);
        assert_eq!(QuerySet::Workload.modes().len(), 2);
        assert_eq!(QuerySet::Issue7.modes(), &[QueryMode::Range]);
        assert_eq!(QuerySet::Issue7.name(), "issue7");
        assert_eq!(QuerySet::Needles.modes(), &[QueryMode::Range]);
        assert_eq!(QuerySet::Needles.name(), "needles");
    }
}
