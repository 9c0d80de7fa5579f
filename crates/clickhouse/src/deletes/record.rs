//! Rows of the `delete_requests` table (schema version 2): one row per
//! change of a request, the row with the highest `version` its state.
//!
//! Columns: `tenant`, `request_id`, `version` (UInt64, increasing per
//! request), `status` (`received`, `processed` or `cancelled` — a cancelled
//! request is kept as a tombstone so its id is never given again),
//! `query` (the LogQL text), `start_ns`/`end_ns` (the inclusive range),
//! `created_ns`, and `spec`: the parsed selector and line filters as JSON,
//! so requests are rebuilt without a LogQL parser:
//!
//! ```json
//! {"matchers": [["app", "=", "api"]],
//!  "filters": [{"negate": false, "tests": [["contains", "a"], ["regex", "b.*"]]}]}
//! ```

use crate::Error;
use runakefli_model::deletes::{DeleteRequest, DeleteStatus, LineFilter, LineTest};
use runakefli_model::{MatchOp, Matcher};
use serde_json::{json, Value};

/// The insert statement of [`encode`]d rows.
pub const INSERT: &str = "INSERT INTO delete_requests FORMAT JSONEachRow";

/// The query reading every request's latest row (columns as [`decode`] reads them).
pub const SELECT_LATEST: &str = "SELECT tenant, request_id, version, status, query, \
    toString(start_ns) AS start_ns, toString(end_ns) AS end_ns, \
    toString(created_ns) AS created_ns, spec FROM delete_requests \
    ORDER BY tenant, request_id, version DESC LIMIT 1 BY tenant, request_id";

/// One request's state as stored.
#[derive(Clone, Debug)]
pub struct Record {
    /// The tenant.
    pub tenant: String,
    /// The request (its status as stored, unless cancelled).
    pub request: DeleteRequest,
    /// A tombstone: the request was cancelled.
    pub cancelled: bool,
    /// The row's version.
    pub version: u64,
}

fn op_of(s: &str) -> Option<MatchOp> {
    [MatchOp::Eq, MatchOp::Neq, MatchOp::Re, MatchOp::Nre]
        .into_iter()
        .find(|o| o.as_str() == s)
}

/// The `spec` JSON of a request.
fn spec(r: &DeleteRequest) -> String {
    let matchers: Vec<Value> = r
        .matchers
        .iter()
        .map(|m| json!([m.name, m.op.as_str(), m.value]))
        .collect();
    let filters: Vec<Value> = r
        .filters
        .iter()
        .map(|f| {
            let tests: Vec<Value> = f
                .alternatives
                .iter()
                .map(|t| match t {
                    LineTest::Contains(s) => json!(["contains", s]),
                    LineTest::Regex(re) => json!(["regex", re.as_str()]),
                })
                .collect();
            json!({"negate": f.negate, "tests": tests})
        })
        .collect();
    json!({"matchers": matchers, "filters": filters}).to_string()
}

/// One `JSONEachRow` line (newline-terminated) for `record`.
pub fn encode(record: &Record) -> String {
    let r = &record.request;
    let status = if record.cancelled {
        "cancelled"
    } else {
        r.status.as_str()
    };
    let mut line = json!({
        "tenant": record.tenant,
        "request_id": r.id,
        "version": record.version,
        "status": status,
        "query": r.query,
        "start_ns": r.start,
        "end_ns": r.end,
        "created_ns": r.created,
        "spec": spec(r),
    })
    .to_string();
    line.push('\n');
    line
}

fn bad(what: &str, row: &Value) -> Error {
    Error::Decode(format!("delete request {what} in {row}"))
}

fn text<'a>(row: &'a Value, k: &str) -> Result<&'a str, Error> {
    row[k].as_str().ok_or_else(|| bad(k, row))
}

fn int<T: std::str::FromStr>(row: &Value, k: &str) -> Result<T, Error> {
    match &row[k] {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.to_string().parse().ok(),
        _ => None,
    }
    .ok_or_else(|| bad(k, row))
}

fn matchers_of(spec: &Value, row: &Value) -> Result<Vec<Matcher>, Error> {
    let list = spec["matchers"]
        .as_array()
        .ok_or_else(|| bad("matchers", row))?;
    list.iter()
        .map(|m| {
            let [name, op, value] = m.as_array().map(Vec::as_slice).unwrap_or_default() else {
                return Err(bad("matcher", row));
            };
            let (Some(name), Some(op), Some(value)) =
                (name.as_str(), op.as_str().and_then(op_of), value.as_str())
            else {
                return Err(bad("matcher", row));
            };
            Matcher::new(name, op, value).map_err(|e| bad(&e.0, row))
        })
        .collect()
}

fn filters_of(spec: &Value, row: &Value) -> Result<Vec<LineFilter>, Error> {
    let list = spec["filters"]
        .as_array()
        .ok_or_else(|| bad("filters", row))?;
    list.iter()
        .map(|f| {
            let negate = f["negate"].as_bool().ok_or_else(|| bad("negate", row))?;
            let tests = f["tests"].as_array().ok_or_else(|| bad("tests", row))?;
            let alternatives = tests
                .iter()
                .map(
                    |t| match t.as_array().map(Vec::as_slice).unwrap_or_default() {
                        [kind, v] => match (kind.as_str(), v.as_str()) {
                            (Some("contains"), Some(s)) => Ok(LineTest::Contains(s.to_string())),
                            (Some("regex"), Some(s)) => regex::Regex::new(s)
                                .map(LineTest::Regex)
                                .map_err(|e| bad(&e.to_string(), row)),
                            _ => Err(bad("line test", row)),
                        },
                        _ => Err(bad("line test", row)),
                    },
                )
                .collect::<Result<_, _>>()?;
            Ok(LineFilter {
                negate,
                alternatives,
            })
        })
        .collect()
}

/// A row of [`SELECT_LATEST`] as a [`Record`].
pub fn decode(row: &Value) -> Result<Record, Error> {
    let spec: Value =
        serde_json::from_str(text(row, "spec")?).map_err(|e| bad(&format!("spec ({e})"), row))?;
    let (status, cancelled) = match text(row, "status")? {
        "received" => (DeleteStatus::Received, false),
        "processed" => (DeleteStatus::Processed, false),
        "cancelled" => (DeleteStatus::Received, true),
        _ => return Err(bad("status", row)),
    };
    Ok(Record {
        tenant: text(row, "tenant")?.to_string(),
        version: int(row, "version")?,
        cancelled,
        request: DeleteRequest {
            id: text(row, "request_id")?.to_string(),
            query: text(row, "query")?.to_string(),
            matchers: matchers_of(&spec, row)?,
            filters: filters_of(&spec, row)?,
            start: int(row, "start_ns")?,
            end: int(row, "end_ns")?,
            created: int(row, "created_ns")?,
            status,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_their_row() {
        let rec = Record {
            tenant: "t".into(),
            version: 7,
            cancelled: false,
            request: DeleteRequest {
                id: "0a1b2c3d".into(),
                query: r#"{app=~"a.*"} |= "x" !~ "y""#.into(),
                matchers: vec![Matcher::new("app", MatchOp::Re, "a.*").unwrap()],
                filters: vec![
                    LineFilter {
                        negate: false,
                        alternatives: vec![LineTest::Contains("x\"'\n".into())],
                    },
                    LineFilter {
                        negate: true,
                        alternatives: vec![LineTest::Regex(regex::Regex::new("y").unwrap())],
                    },
                ],
                start: -5,
                end: i64::MAX,
                created: 3,
                status: DeleteStatus::Processed,
            },
        };
        let row: Value = serde_json::from_str(encode(&rec).trim_end()).unwrap();
        let back = decode(&row).unwrap();
        assert_eq!((back.tenant.as_str(), back.version), ("t", 7));
        assert!(!back.cancelled);
        let (a, b) = (&rec.request, &back.request);
        assert_eq!((&a.id, &a.query), (&b.id, &b.query));
        assert_eq!(a.matchers, b.matchers);
        assert_eq!((a.start, a.end, a.created), (b.start, b.end, b.created));
        assert_eq!(b.status, DeleteStatus::Processed);
        assert_eq!(spec(a), spec(b));
        assert!(b.deletes(0, "x\"'\n"));
        assert!(!b.deletes(0, "x\"'\ny"));

        let tomb = Record {
            cancelled: true,
            ..rec
        };
        let row: Value = serde_json::from_str(encode(&tomb).trim_end()).unwrap();
        assert_eq!(row["status"], "cancelled");
        assert!(decode(&row).unwrap().cancelled);
        let mut broken = row.clone();
        broken["status"] = json!("lost");
        assert!(decode(&broken).is_err());
    }
}
