//! Rows of ClickHouse's `JSONEachRow` answers read as values: numbers
//! (given as JSON numbers or, for 64-bit ones, as strings), strings, group
//! keys, metadata maps, entries and residual rows.

use crate::Error;
use runakefli_model::Entry;
use serde_json::Value;

/// Member `k` of row `r` as a `u64` ([`u64_of_value`]).
pub(crate) fn u64_of(r: &Value, k: &str) -> Result<u64, Error> {
    u64_of_value(&r[k]).ok_or_else(|| Error::Decode(format!("{k} in {r}")))
}

/// A JSON number, or a number in a string (ClickHouse quotes 64-bit ones).
pub(crate) fn u64_of_value(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// A float of an answer: a JSON number, or one in a string (unwrapped
/// values are sent as `toString(Float64)`, the shortest text of the value,
/// which Rust's correctly rounded parse reads back exactly).
pub(crate) fn f64_of(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// The rows of a residual group: `[stream_id, ts, line, metadata]` each.
pub(crate) fn residual_entries(v: &Value) -> Result<Vec<Entry>, Error> {
    let bad = || Error::Decode(format!("residual rows {v}"));
    v.as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|t| {
            let [_, ts, line, md] = t.as_array().map(Vec::as_slice).ok_or_else(bad)? else {
                return Err(bad());
            };
            let ts = i64_of_value(ts).ok_or_else(bad)?;
            Ok(Entry {
                ts,
                line: line.as_str().ok_or_else(bad)?.to_string(),
                metadata: pairs_of(md)?,
            })
        })
        .collect()
}

/// Member `k` of row `r` as an `i64` ([`i64_of_value`]).
pub(crate) fn i64_of(r: &Value, k: &str) -> Result<i64, Error> {
    i64_of_value(&r[k]).ok_or_else(|| Error::Decode(format!("{k} in {r}")))
}

/// A JSON integer, or one in a string (ClickHouse quotes 64-bit ones).
pub(crate) fn i64_of_value(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// Member `k` of row `r` as a string.
pub(crate) fn str_of<'a>(r: &'a Value, k: &str) -> Result<&'a str, Error> {
    r[k].as_str()
        .ok_or_else(|| Error::Decode(format!("{k} in {r}")))
}

/// A label-grouped answer's `key`: each grouping label's value, `null`
/// where the rows lack it.
pub(crate) fn key_of(v: &Value) -> Result<Vec<Option<String>>, Error> {
    v.as_array()
        .ok_or_else(|| Error::Decode(format!("group key {v}")))?
        .iter()
        .map(|x| match x {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            other => Err(Error::Decode(format!("group key value {other}"))),
        })
        .collect()
}

/// A metadata map (`{name: value}`) as pairs, in the answer's order.
pub(crate) fn pairs_of(v: &Value) -> Result<Vec<(String, String)>, Error> {
    let obj = v
        .as_object()
        .ok_or_else(|| Error::Decode(format!("metadata {v}")))?;
    obj.iter()
        .map(|(k, v)| {
            v.as_str()
                .map(|s| (k.clone(), s.to_string()))
                .ok_or_else(|| Error::Decode(format!("metadata value {v}")))
        })
        .collect()
}

/// A log row (`ts`, `line`, `metadata`) as an entry.
pub(crate) fn entry_of(r: &Value) -> Result<Entry, Error> {
    Ok(Entry {
        ts: i64_of(r, "ts")?,
        line: str_of(r, "line")?.to_string(),
        metadata: pairs_of(&r["metadata"])?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_values_are_read_as_numbers_or_strings() {
        let r = serde_json::json!({"a": 18446744073709551615u64, "b": "7", "m": {"k": "v"}});
        assert_eq!(u64_of(&r, "a").unwrap(), u64::MAX);
        assert_eq!(u64_of(&r, "b").unwrap(), 7);
        assert_eq!(i64_of(&r, "b").unwrap(), 7);
        assert!(u64_of(&r, "missing").is_err());
        assert_eq!(
            pairs_of(&r["m"]).unwrap(),
            [("k".to_string(), "v".to_string())]
        );
        let k = serde_json::json!(["a", null, ""]);
        assert_eq!(
            key_of(&k).unwrap(),
            [Some("a".to_string()), None, Some(String::new())]
        );
        assert!(key_of(&serde_json::json!([1])).is_err());
        let res = serde_json::json!([["7", "-5", "a line", {"k": "v"}], [7, 3, "b", {}]]);
        let e = residual_entries(&res).unwrap();
        assert_eq!((e[0].ts, e[0].line.as_str()), (-5, "a line"));
        assert_eq!(e[0].metadata, [("k".to_string(), "v".to_string())]);
        assert_eq!((e[1].ts, e[1].metadata.len()), (3, 0));
        assert!(residual_entries(&serde_json::json!([[1, 2]])).is_err());
    }
}
