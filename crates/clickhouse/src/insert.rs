//! Push requests as `JSONEachRow` bodies for `logs` and `streams`.
//!
//! Timestamps go as decimal seconds with nine fraction digits, which
//! `DateTime64(9)` reads exactly; `seq` numbers the request's entries in
//! push order from the caller's `first_seq`. Each body has a deduplication
//! token that depends only on what was pushed (table, tenant and the rows
//! *without* their `seq`): the same push sent again, by a retry inside the
//! backend or by a collector after a lost answer or a restart of Rúnakefli
//! (which numbers it anew), carries the same token and is a no-op in
//! ClickHouse within the table's `non_replicated_deduplication_window`.
//!
//! [`encode_batch`] joins the inserts of several pushes into one pair for
//! the group commit ([`crate::group_commit`]); a batch of one push is that
//! push's inserts unchanged, byte for byte and token for token.

use runakefli_model::civil::civil_from_days;
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
    /// `insert_deduplication_token` for it: equal for equal pushed content,
    /// whatever `seq` numbers the rows carry.
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
    let (y, m, d) = civil_from_days(ts.div_euclid(DAY));
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

/// A content hash for a deduplication token: the table and the tenant, then
/// the bytes the caller feeds it.
struct TokenHash {
    table: &'static str,
    hash: xxhash_rust::xxh3::Xxh3,
}

impl TokenHash {
    fn new(table: &'static str, tenant: &TenantId) -> Self {
        let mut hash = xxhash_rust::xxh3::Xxh3::new();
        hash.update(table.as_bytes());
        hash.update(&[0]);
        hash.update(tenant.as_str().as_bytes());
        hash.update(&[0]);
        TokenHash { table, hash }
    }

    fn token(&self) -> String {
        format!("{}-{:032x}", self.table, self.hash.digest128())
    }
}

impl PushInserts {
    /// Encoded bytes of both bodies (what a waiting push holds in memory).
    pub fn bytes(&self) -> usize {
        self.logs.data.len() + self.streams.data.len()
    }

    /// Whether there is nothing to insert.
    pub fn is_empty(&self) -> bool {
        self.logs.data.is_empty() && self.streams.data.is_empty()
    }
}

/// The inserts of several pushes as one pair, in their order; `entries`
/// counts the rows of the `logs` body.
///
/// - One push: its own inserts, unchanged (same bytes, same tokens), so a
///   push that had nothing to share its insert with deduplicates against
///   any earlier or later lone insert of the same content.
/// - Several: the `logs` bodies one after the other, except a push whose
///   `logs` token equals an earlier member's (the same content pushed
///   twice; its rows would only be duplicates, as one insert of each would
///   have been a no-op too); the `streams` rows of every member once each.
///   The tokens are hashes of what the batch holds — the members' `logs`
///   tokens (which leave `seq` out) and the `streams` body — so the
///   backend's retry of the same batch is a no-op in ClickHouse, and a
///   batch of other members is another insert.
pub fn encode_batch(members: &[&PushInserts]) -> PushInserts {
    if let [one] = members {
        return (*one).clone();
    }
    let mut logs = Vec::with_capacity(members.iter().map(|m| m.logs.data.len()).sum());
    let mut streams = Vec::new();
    let mut entries = 0;
    let mut tokens: BTreeSet<&str> = BTreeSet::new();
    let mut stream_rows: BTreeSet<&[u8]> = BTreeSet::new();
    let mut logs_hash = xxhash_rust::xxh3::Xxh3::new();
    logs_hash.update(b"logs batch\0");
    for m in members {
        for row in m.streams.data.split_inclusive(|&b| b == b'\n') {
            if stream_rows.insert(row) {
                streams.extend_from_slice(row);
            }
        }
        if m.logs.data.is_empty() || !tokens.insert(&m.logs.token) {
            continue;
        }
        logs.extend_from_slice(&m.logs.data);
        entries += m.entries;
        logs_hash.update(m.logs.token.as_bytes());
        logs_hash.update(b"\n");
    }
    let mut streams_hash = xxhash_rust::xxh3::Xxh3::new();
    streams_hash.update(b"streams batch\0");
    streams_hash.update(&streams);
    PushInserts {
        logs: InsertBody {
            token: format!("logs-batch-{:032x}", logs_hash.digest128()),
            data: logs,
        },
        streams: InsertBody {
            token: format!("streams-batch-{:032x}", streams_hash.digest128()),
            data: streams,
        },
        entries,
    }
}

/// Encodes `push` for `tenant`, numbering entries from `first_seq`.
pub fn encode_push(tenant: &TenantId, push: &PushRequest, first_seq: u64) -> PushInserts {
    let mut logs = String::new();
    let mut streams = String::new();
    let mut seq = first_seq;
    let mut logs_hash = TokenHash::new("logs", tenant);
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
            // The row is hashed without its `seq` field: the token is the
            // pushed content's, not this numbering's. Each part is JSON (or
            // fixed text) and rows end in `\n`, so the hashed text still
            // tells rows and fields apart.
            let row = logs.len();
            logs.push_str("{\"tenant\":");
            json_str(&mut logs, tenant.as_str());
            logs.push_str(&format!(
                ",\"stream_id\":{id},\"timestamp\":\"{}\",",
                ts_text(e.ts)
            ));
            logs_hash.hash.update(&logs.as_bytes()[row..]);
            logs.push_str(&format!("\"seq\":{seq},"));
            let rest = logs.len();
            logs.push_str("\"line\":");
            json_str(&mut logs, &e.line);
            logs.push_str(",\"metadata\":");
            json_pairs(&mut logs, &e.metadata);
            logs.push_str("}\n");
            logs_hash.hash.update(&logs.as_bytes()[rest..]);
            seq += 1;
        }
    }
    let mut streams_hash = TokenHash::new("streams", tenant);
    streams_hash.hash.update(streams.as_bytes());
    PushInserts {
        logs: InsertBody {
            token: logs_hash.token(),
            data: logs.into_bytes(),
        },
        streams: InsertBody {
            token: streams_hash.token(),
            data: streams.into_bytes(),
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

    #[test]
    fn tokens_depend_on_the_pushed_content_not_on_seq() {
        let entry = |ts: i64, line: &str, md: &[(&str, &str)]| Entry {
            ts,
            line: line.into(),
            metadata: md
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let push = |labels: &str, entries: Vec<Entry>| PushRequest {
            streams: vec![PushStream {
                labels: Labels::parse(labels).unwrap(),
                entries,
            }],
        };
        let t = TenantId::new("t");
        let base = push(
            r#"{app="api"}"#,
            vec![entry(5, "a", &[("k", "v")]), entry(6, "b", &[])],
        );
        let first = encode_push(&t, &base, 1);
        // Numbered anew (another process, a collector's re-send): rows differ
        // in `seq` only, the tokens are the same.
        let again = encode_push(&t, &base, 1 << 40);
        assert_ne!(first.logs.data, again.logs.data);
        assert_eq!(first.logs.token, again.logs.token);
        assert_eq!(first.streams, again.streams);
        assert!(
            first.logs.token.starts_with("logs-"),
            "{}",
            first.logs.token
        );
        assert!(first.streams.token.starts_with("streams-"));
        // Any change of content is another token.
        let others = [
            push(r#"{app="web"}"#, base.streams[0].entries.clone()),
            push(
                r#"{app="api"}"#,
                vec![entry(5, "a", &[("k", "v")]), entry(7, "b", &[])],
            ),
            push(
                r#"{app="api"}"#,
                vec![entry(5, "a", &[("k", "w")]), entry(6, "b", &[])],
            ),
            push(
                r#"{app="api"}"#,
                vec![entry(5, "a", &[("k", "v")]), entry(6, "b ", &[])],
            ),
            push(r#"{app="api"}"#, vec![entry(5, "a", &[("k", "v")])]),
            // Same entries in another order: another body, another token.
            push(
                r#"{app="api"}"#,
                vec![entry(6, "b", &[]), entry(5, "a", &[("k", "v")])],
            ),
        ];
        for other in &others {
            assert_ne!(encode_push(&t, other, 1).logs.token, first.logs.token);
        }
        // The logs token is not the streams token of the same push.
        assert_ne!(first.logs.token[5..], first.streams.token[8..]);
    }

    #[test]
    fn a_batch_joins_its_pushes_and_its_token_is_its_content() {
        let push = |labels: &str, lines: &[&str]| PushRequest {
            streams: vec![PushStream {
                labels: Labels::parse(labels).unwrap(),
                entries: lines
                    .iter()
                    .enumerate()
                    .map(|(i, l)| Entry {
                        ts: 5 + i as i64,
                        line: l.to_string(),
                        metadata: vec![],
                    })
                    .collect(),
            }],
        };
        let t = TenantId::new("t");
        let a = encode_push(&t, &push(r#"{app="api"}"#, &["a1", "a2"]), 1);
        let b = encode_push(&t, &push(r#"{app="api"}"#, &["b1"]), 3);
        let c = encode_push(&TenantId::new("u"), &push(r#"{app="web"}"#, &["c1"]), 4);
        // Alone: the push's own inserts, byte for byte.
        assert_eq!(encode_batch(&[&a]), a);
        let ab = encode_batch(&[&a, &b, &c]);
        assert_eq!(ab.entries, 4);
        let mut logs = a.logs.data.clone();
        logs.extend_from_slice(&b.logs.data);
        logs.extend_from_slice(&c.logs.data);
        assert_eq!(ab.logs.data, logs);
        // a and b share their one (tenant, stream, day) row: once.
        assert_eq!(a.streams.data, b.streams.data);
        let mut streams = a.streams.data.clone();
        streams.extend_from_slice(&c.streams.data);
        assert_eq!(ab.streams.data, streams);
        assert!(
            ab.logs.token.starts_with("logs-batch-"),
            "{}",
            ab.logs.token
        );
        assert!(ab.streams.token.starts_with("streams-batch-"));
        // The same pushes numbered anew (another process): the same tokens.
        let a2 = encode_push(&t, &push(r#"{app="api"}"#, &["a1", "a2"]), 100);
        let again = encode_batch(&[&a2, &b, &c]);
        assert_ne!(again.logs.data, ab.logs.data);
        assert_eq!(
            (&again.logs.token, &again.streams.token),
            (&ab.logs.token, &ab.streams.token)
        );
        // Other members or another order: other tokens; no member's own.
        for other in [encode_batch(&[&b, &a, &c]), encode_batch(&[&a, &b])] {
            assert_ne!(other.logs.token, ab.logs.token);
        }
        for m in [&a, &b, &c] {
            assert_ne!(m.logs.token, ab.logs.token);
        }
        // A push sent twice within one batch: its rows once, as two lone
        // inserts of it would have stored them.
        let twice = encode_batch(&[&a, &a2, &b]);
        assert_eq!(twice.entries, 3);
        assert_eq!(twice.logs.token, encode_batch(&[&a, &b]).logs.token);
        let mut logs = a.logs.data.clone();
        logs.extend_from_slice(&b.logs.data);
        assert_eq!(twice.logs.data, logs);
    }
}
