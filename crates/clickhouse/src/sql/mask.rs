//! Delete requests in SQL: the condition that selects a request's rows in
//! `logs` ([`delete_condition`]), used both to hide them from every query
//! ([`RowMask`], `AND NOT (…)` on the rows condition) and to delete them
//! (`DELETE FROM logs WHERE …`), so what is hidden is exactly what is
//! deleted.
//!
//! A request's streams enter the condition as a set: the subquery of the
//! streams its selector matches ([`streams_subquery`]) when SQL evaluates
//! every matcher exactly, else the ids the backend resolved on the labels
//! ([`id_set`]). Its line filters are translated like a query's
//! ([`delete_line_filter`]); a regexp outside the shared RE2 subset is
//! [`Error::Unsupported`] (the backend refuses such requests when they
//! arrive).

use super::query::StreamSelect;
use super::{line_regex, quote, ts_literal};
use crate::Error;
use runakefli_model::deletes::{DeleteRequest, LineFilter, LineTest};

/// Rows hidden from a query by delete requests: each condition selects the
/// rows of one request. Empty: nothing hidden, the SQL unchanged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowMask {
    hidden: Vec<String>,
}

impl RowMask {
    /// A mask hiding the rows each of `conditions` selects
    /// ([`delete_condition`]s).
    pub fn hiding(conditions: Vec<String>) -> Self {
        RowMask { hidden: conditions }
    }

    /// Whether nothing is hidden.
    pub fn is_empty(&self) -> bool {
        self.hidden.is_empty()
    }

    /// What to append to a `WHERE` condition over `logs`: nothing, or
    /// ` AND NOT (c1 OR c2 …)`.
    pub fn clause(&self) -> String {
        if self.hidden.is_empty() {
            String::new()
        } else {
            format!(" AND NOT ({})", self.hidden.join(" OR "))
        }
    }
}

/// A delete request's line filter over `logs.line`: substrings as `LIKE`
/// (escaped as for queries), regexps as `match` when they are in the RE2
/// subset both engines read alike, else [`Error::Unsupported`].
pub fn delete_line_filter(f: &LineFilter) -> Result<String, Error> {
    if f.alternatives.is_empty() {
        return Err(Error::Unsupported("line filter without operands".into()));
    }
    let mut alts = Vec::with_capacity(f.alternatives.len());
    for t in &f.alternatives {
        alts.push(match t {
            LineTest::Contains(s) => format!("line LIKE {}", quote(&super::contains_pattern(s))),
            LineTest::Regex(re) => format!("match(line, {})", quote(&line_regex(re.as_str())?)),
        });
    }
    let test = if alts.len() == 1 {
        alts.pop().unwrap_or_default()
    } else {
        format!("({})", alts.join(" OR "))
    };
    Ok(if f.negate {
        format!("NOT {test}")
    } else {
        test
    })
}

/// The rows of `req` among the streams of the SQL set `streams` (a
/// subquery or a list in parentheses): `(stream_id IN streams AND
/// start <= timestamp <= end AND filters…)`.
pub fn delete_condition(req: &DeleteRequest, streams: &str) -> Result<String, Error> {
    let mut c = format!(
        "(stream_id IN {streams} AND timestamp >= {} AND timestamp <= {}",
        ts_literal(req.start),
        ts_literal(req.end)
    );
    for f in &req.filters {
        c.push_str(" AND ");
        c.push_str(&delete_line_filter(f)?);
    }
    c.push(')');
    Ok(c)
}

/// The ids of the streams `sel` selects, as a subquery over `streams`.
pub fn streams_subquery(sel: &StreamSelect<'_>) -> Result<String, Error> {
    Ok(format!(
        "(SELECT stream_id FROM streams WHERE {})",
        sel.condition()?
    ))
}

/// Stream ids as an SQL set: `(1, 2, 3)`.
pub fn id_set(ids: &[u64]) -> String {
    let list: Vec<String> = ids.iter().map(u64::to_string).collect();
    format!("({})", list.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_model::deletes::DeleteStatus;
    use runakefli_model::{MatchOp, Matcher, TenantId};

    fn request(filters: Vec<LineFilter>) -> DeleteRequest {
        DeleteRequest {
            id: "x".into(),
            query: String::new(),
            matchers: vec![Matcher::new("app", MatchOp::Eq, "api").unwrap()],
            filters,
            start: 10,
            end: 20,
            created: 0,
            status: DeleteStatus::Received,
        }
    }

    fn regex(s: &str) -> LineTest {
        LineTest::Regex(regex::Regex::new(s).unwrap())
    }

    #[test]
    fn a_request_selects_its_streams_inclusive_range_and_filters() {
        let r = request(vec![
            LineFilter {
                negate: false,
                alternatives: vec![LineTest::Contains("pass_%".into()), regex("tok.n")],
            },
            LineFilter {
                negate: true,
                alternatives: vec![LineTest::Contains("keep".into())],
            },
        ]);
        assert_eq!(
            delete_condition(&r, "(1, 2)").unwrap(),
            r"(stream_id IN (1, 2) AND timestamp >= fromUnixTimestamp64Nano(toInt64(10), 'UTC') AND timestamp <= fromUnixTimestamp64Nano(toInt64(20), 'UTC') AND (line LIKE '%pass\\_\\%%' OR match(line, '(?-s:tok.n)')) AND NOT line LIKE '%keep%')"
        );
        let out_of_subset = request(vec![LineFilter {
            negate: false,
            alternatives: vec![regex(r"\d+")],
        }]);
        assert!(matches!(
            delete_condition(&out_of_subset, "(1)"),
            Err(Error::Unsupported(_))
        ));
    }

    #[test]
    fn masks_append_nothing_or_a_negated_disjunction() {
        assert_eq!(RowMask::default().clause(), "");
        assert!(RowMask::default().is_empty());
        let m = RowMask::hiding(vec!["(a)".into(), "(b)".into()]);
        assert_eq!(m.clause(), " AND NOT ((a) OR (b))");
        assert_eq!(
            id_set(&[3, 18446744073709551615]),
            "(3, 18446744073709551615)"
        );
        let t = TenantId::new("t");
        let m = [Matcher::new("app", MatchOp::Eq, "api").unwrap()];
        let sel = StreamSelect {
            tenant: &t,
            selector: &m,
            start: 0,
            end: 1,
        };
        let q = streams_subquery(&sel).unwrap();
        assert!(q.starts_with("(SELECT stream_id FROM streams WHERE tenant = 't' AND day >= "));
        assert!(q.ends_with("AND labels['app'] = 'api')"), "{q}");
    }
}
