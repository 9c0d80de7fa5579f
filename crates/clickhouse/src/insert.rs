//! Push requests as `JSONEachRow` bodies for `logs` and `streams`.
//!
//! Timestamps go as decimal seconds with nine fraction digits, which
//! `DateTime64(9)` reads exactly; `seq` numbers the request's entries in
//! push order from the caller's `first_seq`. Each body has a deduplication
//! token (a hash of tenant and body): a retried insert with the same token
//! is a no-op in ClickHouse.

use runakefli_model::{PushRequest, TenantId, Timestamp};
use std::collections::BTreeSet;

/// `INSERT` statements the bodies go with.
pub const INSERT_LOGS: &str = "INSERT INTO logs FORMAT JSONEachRow";
/// See [`INSERT_LOGS`].
pub const INSERT_STREAMS: &str = "INSERT INTO streams FORMAT JSONEachRow";

/// One encoded insert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InsertBody {
    /// The rows, one JSON object a line.
    pub data: Vec<u8>,
    /// `insert_deduplication_token` for it.
    pub token: String,
}

/// The two inserts of a push: rows, and one row per stream and day.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushInserts {
    /// For [`INSERT_LOGS`].
    pub logs: InsertBody,
    /// For [`INSERT_STREAMS`].
    pub streams: InsertBody,
    /// Entries encoded (the next request's `first_seq` is this much higher).
    pub entries: u64,
}

const NANOS: i64 = 1_000_000_000;
const DAY: i64 = 86_400 * NANOS;

/// `ts` as `DateTime64(9)` text: `"-1.5"` style decimal seconds.
pub fn ts_text(ts: Timestamp) -> String {
    let secs = ts.div_euclid(NANOS);
    let frac = ts.rem_euclid(NANOS);
    if secs < 0 && frac > 0 {
        // -0.25 s is secs -1 + 0.75: write it as a negative decimal.
        let neg = -(ts as i128);
        return format!("-{}.{:09}", neg / 1_000_000_000, neg % 1_000_000_000);
    }
    format!("{secs}.{frac:09}")
}

/// The UTC calendar day of `ts` as `YYYY-MM-DD`.
pub fn day_text(ts: Timestamp) -> String {
    // Days to civil date (proleptic Gregorian), after H. Hinnant's algorithm.
    let z = ts.div_euclid(DAY) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn json_str(out: &mut String, s: &str) {
    // serde_json's string encoding cannot fail for a &str.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

fn json_pairs(out: &mut String, pairs: &[(String, String)]) {
    out.push('{');
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_str(out, k);
        out.push(':');
        json_str(out, v);
    }
    out.push('}');
}

fn token(table: &str, tenant: &TenantId, data: &[u8]) -> String {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(tenant.as_str().as_bytes());
    h.update(&[0]);
    h.update(data);
    format!("{table}-{:032x}", h.digest128())
}

/// Encodes `push` for `tenant`, numbering entries from `first_seq`.
pub fn encode_push(tenant: &TenantId, push: &PushRequest, first_seq: u64) -> PushInserts {
    let mut logs = String::new();
    let mut streams = String::new();
    let mut seq = first_seq;
    for s in &push.streams {
        let id = s.labels.stream_id();
        let days: BTreeSet<i64> = s.entries.iter().map(|e| e.ts.div_euclid(DAY)).collect();
        for day in days {
            streams.push_str("{\"tenant\":");
            json_str(&mut streams, tenant.as_str());
            streams.push_str(&format!(
                ",\"day\":\"{}\",\"stream_id\":{id},\"labels\":",
                day_text(day * DAY)
            ));
            json_pairs(&mut streams, s.labels.pairs());
            streams.push_str(",\"labels_text\":");
            json_str(&mut streams, &s.labels.to_string());
            streams.push_str("}\n");
        }
        for e in &s.entries {
            logs.push_str("{\"tenant\":");
            json_str(&mut logs, tenant.as_str());
            logs.push_str(&format!(
                ",\"stream_id\":{id},\"timestamp\":\"{}\",\"seq\":{seq},\"line\":",
                ts_text(e.ts)
            ));
            json_str(&mut logs, &e.line);
            logs.push_str(",\"metadata\":");
            json_pairs(&mut logs, &e.metadata);
            logs.push_str("}\n");
            seq += 1;
        }
    }
    let logs = logs.into_bytes();
    let streams = streams.into_bytes();
    PushInserts {
        logs: InsertBody {
            token: token("logs", tenant, &logs),
            data: logs,
        },
        streams: InsertBody {
            token: token("streams", tenant, &streams),
            data: streams,
        },
        entries: seq - first_seq,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_model::{Entry, Labels, PushStream};

    #[test]
    fn timestamps_are_exact_decimal_seconds() {
        assert_eq!(ts_text(1_700_000_000_000_000_001), "1700000000.000000001");
        assert_eq!(ts_text(0), "0.000000000");
        assert_eq!(ts_text(-250_000_000), "-0.250000000");
        assert_eq!(ts_text(-2 * NANOS), "-2.000000000");
    }

    #[test]
    fn days_are_utc_calendar_dates() {
        assert_eq!(day_text(0), "1970-01-01");
        assert_eq!(day_text(DAY - 1), "1970-01-01");
        assert_eq!(day_text(1_700_000_000 * NANOS), "2023-11-14");
        assert_eq!(day_text(951_782_400 * NANOS), "2000-02-29");
        assert_eq!(day_text(-1), "1969-12-31");
    }

    #[test]
    fn a_push_becomes_rows_and_stream_days() {
        let labels = Labels::parse(r#"{app="api"}"#).unwrap();
        let push = PushRequest {
            streams: vec![PushStream {
                labels,
                entries: vec![
                    Entry {
                        ts: DAY + 5,
                        line: "a \"q\"\n".into(),
                        metadata: vec![("z".into(), "1".into()), ("a".into(), "2".into())],
                    },
                    Entry {
                        ts: 5,
                        line: "b".into(),
                        metadata: vec![],
                    },
                ],
            }],
        };
        let t = TenantId::new("t");
        let ins = encode_push(&t, &push, 7);
        assert_eq!(ins.entries, 2);
        let logs = String::from_utf8(ins.logs.data.clone()).unwrap();
        let id = Labels::parse(r#"{app="api"}"#).unwrap().stream_id();
        assert_eq!(
            logs,
            format!(
                "{{\"tenant\":\"t\",\"stream_id\":{id},\"timestamp\":\"86400.000000005\",\"seq\":7,\"line\":\"a \\\"q\\\"\\n\",\"metadata\":{{\"z\":\"1\",\"a\":\"2\"}}}}\n\
                 {{\"tenant\":\"t\",\"stream_id\":{id},\"timestamp\":\"0.000000005\",\"seq\":8,\"line\":\"b\",\"metadata\":{{}}}}\n"
            )
        );
        let streams = String::from_utf8(ins.streams.data.clone()).unwrap();
        assert_eq!(streams.lines().count(), 2);
        assert!(streams.starts_with("{\"tenant\":\"t\",\"day\":\"1970-01-01\""));
        // Same push, same tokens (a retry deduplicates); another tenant, others.
        assert_eq!(encode_push(&t, &push, 7), ins);
        assert_ne!(
            encode_push(&TenantId::new("u"), &push, 7).logs.token,
            ins.logs.token
        );
    }
}
