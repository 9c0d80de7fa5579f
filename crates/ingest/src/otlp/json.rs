//! OTLP/JSON -> the protobuf structs of [`super::proto`]. Field names in
//! lowerCamelCase (snake_case also accepted), 64-bit integers as strings or
//! numbers, trace and span ids as hex, bytes as base64, severity numbers as
//! integers or enum names. Unknown fields are ignored.

use super::proto::*;
use super::value::{base64_decode, hex_decode};
use crate::PushError;
use serde_json::{Map, Value};

type Obj = Map<String, Value>;

fn err(msg: impl Into<String>) -> PushError {
    PushError::Json(msg.into())
}

/// Parses an OTLP/JSON `ExportLogsServiceRequest`.
pub(crate) fn decode(body: &[u8]) -> Result<ExportLogsServiceRequest, PushError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| err(e.to_string()))?;
    let root = v.as_object().ok_or_else(|| err("expected a JSON object"))?;
    Ok(ExportLogsServiceRequest {
        resource_logs: list(root, "resourceLogs", "resource_logs", resource_logs)?,
    })
}

fn field<'a>(o: &'a Obj, camel: &str, snake: &str) -> Option<&'a Value> {
    o.get(camel)
        .or_else(|| o.get(snake))
        .filter(|v| !v.is_null())
}

fn obj<'a>(v: &'a Value, what: &str) -> Result<&'a Obj, PushError> {
    v.as_object()
        .ok_or_else(|| err(format!("{what}: expected an object")))
}

fn list<T>(
    o: &Obj,
    camel: &str,
    snake: &str,
    f: impl Fn(&Value) -> Result<T, PushError>,
) -> Result<Vec<T>, PushError> {
    match field(o, camel, snake) {
        None => Ok(Vec::new()),
        Some(Value::Array(a)) => a.iter().map(f).collect(),
        Some(_) => Err(err(format!("{camel}: expected an array"))),
    }
}

fn string(o: &Obj, camel: &str, snake: &str) -> Result<String, PushError> {
    match field(o, camel, snake) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(err(format!("{camel}: expected a string"))),
    }
}

/// An integer given as a JSON number or a decimal string.
fn int<T: TryFrom<i128>>(o: &Obj, camel: &str, snake: &str) -> Result<T, PushError> {
    let bad = || err(format!("{camel}: expected an integer"));
    let n: i128 = match field(o, camel, snake) {
        None => 0,
        Some(Value::Number(n)) => {
            if let Some(i) = n.as_i64() {
                i128::from(i)
            } else if let Some(u) = n.as_u64() {
                i128::from(u)
            } else {
                return Err(bad());
            }
        }
        Some(Value::String(s)) => s.trim().parse().map_err(|_| bad())?,
        Some(_) => return Err(bad()),
    };
    T::try_from(n).map_err(|_| err(format!("{camel}: integer out of range")))
}

fn bytes_hex(o: &Obj, camel: &str, snake: &str) -> Result<Vec<u8>, PushError> {
    let s = string(o, camel, snake)?;
    hex_decode(&s).ok_or_else(|| err(format!("{camel}: invalid hex {s:?}")))
}

fn resource_logs(v: &Value) -> Result<ResourceLogs, PushError> {
    let o = obj(v, "resourceLogs")?;
    let resource = match field(o, "resource", "resource") {
        None => None,
        Some(r) => {
            let r = obj(r, "resource")?;
            Some(Resource {
                attributes: list(r, "attributes", "attributes", key_value)?,
                dropped_attributes_count: int(
                    r,
                    "droppedAttributesCount",
                    "dropped_attributes_count",
                )?,
            })
        }
    };
    Ok(ResourceLogs {
        resource,
        scope_logs: list(o, "scopeLogs", "scope_logs", scope_logs)?,
        schema_url: string(o, "schemaUrl", "schema_url")?,
    })
}

fn scope_logs(v: &Value) -> Result<ScopeLogs, PushError> {
    let o = obj(v, "scopeLogs")?;
    let scope = match field(o, "scope", "scope") {
        None => None,
        Some(s) => {
            let s = obj(s, "scope")?;
            Some(InstrumentationScope {
                name: string(s, "name", "name")?,
                version: string(s, "version", "version")?,
                attributes: list(s, "attributes", "attributes", key_value)?,
                dropped_attributes_count: int(
                    s,
                    "droppedAttributesCount",
                    "dropped_attributes_count",
                )?,
            })
        }
    };
    Ok(ScopeLogs {
        scope,
        log_records: list(o, "logRecords", "log_records", log_record)?,
        schema_url: string(o, "schemaUrl", "schema_url")?,
    })
}

fn log_record(v: &Value) -> Result<LogRecord, PushError> {
    let o = obj(v, "logRecords")?;
    Ok(LogRecord {
        time_unix_nano: int(o, "timeUnixNano", "time_unix_nano")?,
        observed_time_unix_nano: int(o, "observedTimeUnixNano", "observed_time_unix_nano")?,
        severity_number: severity(o)?,
        severity_text: string(o, "severityText", "severity_text")?,
        body: field(o, "body", "body").map(any_value).transpose()?,
        attributes: list(o, "attributes", "attributes", key_value)?,
        dropped_attributes_count: int(o, "droppedAttributesCount", "dropped_attributes_count")?,
        flags: int(o, "flags", "flags")?,
        trace_id: bytes_hex(o, "traceId", "trace_id")?,
        span_id: bytes_hex(o, "spanId", "span_id")?,
        event_name: string(o, "eventName", "event_name")?,
    })
}

/// `severityNumber` as an integer or an enum name such as `SEVERITY_NUMBER_WARN2`.
fn severity(o: &Obj) -> Result<i32, PushError> {
    if let Some(Value::String(s)) = field(o, "severityNumber", "severity_number") {
        if let Some(name) = s.strip_prefix("SEVERITY_NUMBER_") {
            let (base, n) = match name.as_bytes().last() {
                Some(d @ b'2'..=b'4') => (&name[..name.len() - 1], i32::from(d - b'1')),
                _ => (name, 0),
            };
            let start = match base {
                "UNSPECIFIED" => return Ok(0),
                "TRACE" => 1,
                "DEBUG" => 5,
                "INFO" => 9,
                "WARN" => 13,
                "ERROR" => 17,
                "FATAL" => 21,
                _ => return Err(err(format!("severityNumber: unknown value {s:?}"))),
            };
            return Ok(start + n);
        }
    }
    int(o, "severityNumber", "severity_number")
}

fn key_value(v: &Value) -> Result<KeyValue, PushError> {
    let o = obj(v, "attributes")?;
    Ok(KeyValue {
        key: string(o, "key", "key")?,
        value: field(o, "value", "value").map(any_value).transpose()?,
    })
}

fn any_value(v: &Value) -> Result<AnyValue, PushError> {
    use any_value::Value as V;
    let o = obj(v, "value")?;
    let value = if let Some(s) = field(o, "stringValue", "string_value") {
        V::StringValue(
            s.as_str()
                .ok_or_else(|| err("stringValue: expected a string"))?
                .to_string(),
        )
    } else if let Some(b) = field(o, "boolValue", "bool_value") {
        V::BoolValue(
            b.as_bool()
                .ok_or_else(|| err("boolValue: expected a bool"))?,
        )
    } else if field(o, "intValue", "int_value").is_some() {
        V::IntValue(int(o, "intValue", "int_value")?)
    } else if let Some(d) = field(o, "doubleValue", "double_value") {
        V::DoubleValue(match d {
            Value::Number(n) => n
                .as_f64()
                .ok_or_else(|| err("doubleValue: expected a number"))?,
            Value::String(s) => match s.as_str() {
                "NaN" => f64::NAN,
                "Infinity" => f64::INFINITY,
                "-Infinity" => f64::NEG_INFINITY,
                s => s
                    .parse()
                    .map_err(|_| err("doubleValue: expected a number"))?,
            },
            _ => return Err(err("doubleValue: expected a number")),
        })
    } else if let Some(a) = field(o, "arrayValue", "array_value") {
        V::ArrayValue(ArrayValue {
            values: list(obj(a, "arrayValue")?, "values", "values", any_value)?,
        })
    } else if let Some(kv) = field(o, "kvlistValue", "kvlist_value") {
        V::KvlistValue(KeyValueList {
            values: list(obj(kv, "kvlistValue")?, "values", "values", key_value)?,
        })
    } else if let Some(b) = field(o, "bytesValue", "bytes_value") {
        let s = b
            .as_str()
            .ok_or_else(|| err("bytesValue: expected a base64 string"))?;
        V::BytesValue(
            base64_decode(s).ok_or_else(|| err(format!("bytesValue: invalid base64 {s:?}")))?,
        )
    } else {
        return Ok(AnyValue { value: None });
    };
    Ok(AnyValue { value: Some(value) })
}
