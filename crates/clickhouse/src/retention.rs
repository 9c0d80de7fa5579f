//! Retention on ClickHouse, with the embedded store's rules
//! (`docs/operations.md`, "Retention"): a stream's rows of one UTC day go
//! once the whole day is older than the stream's period
//! ([`runakefli_model::retention`]: the tenant's `retention_period`, or the
//! `retention_stream` rule that wins), and queries see rows until the pass
//! removes them (as on the embedded store).
//!
//! One pass ([`crate::ClickHouseBackend::apply_retention`]):
//! 1. lists, from `streams`, every (tenant, stream) with a day older than
//!    the shortest configured period could expire, with its labels and those
//!    days;
//! 2. resolves each stream's period in Rust ([`plan`]), so selectors and
//!    rule priorities are evaluated exactly as the embedded store does;
//! 3. drops whole `logs` day partitions where every stream of every tenant
//!    has expired (immediate, frees the disk at once — the common case of
//!    one global `retention_period`). It drops the partition's *parts listed
//!    before step 1* (`ALTER TABLE logs DROP PART`), not the partition: a
//!    push writes `streams` before `logs`, so every row of a listed part has
//!    its stream in step 1's list, while a part written since (a late push
//!    of old rows, say of a tenant kept longer) is left alone. A listed part
//!    merged away meanwhile cannot be dropped; the pass then deletes that
//!    day's expired rows as in step 4;
//! 4. deletes the remaining expired rows with lightweight deletes, one per
//!    (tenant, first kept day) and at most [`IDS_PER_STATEMENT`] streams:
//!    `DELETE FROM logs WHERE tenant = … AND stream_id IN (…) AND timestamp
//!    < <first kept day>` (hidden at once, gone from disk when ClickHouse
//!    merges the parts);
//! 5. deletes the expired (stream, day) rows of `streams`, so label names,
//!    values and series forget them and the next pass has nothing to redo.
//!
//! On a cluster ([`crate::Cluster`]) step 3 is left out — part names are
//! per node, and `DROP PART … ON CLUSTER` would fail on every node without
//! that part — so every expired row goes by step 4's `DELETE`, sent to the
//! local tables of every node (`DELETE FROM logs_local ON CLUSTER …`,
//! [`crate::cluster::mutation_target`]), as are step 5's.
//!
//! A table `TTL` was not used: it cannot read a stream's labels (which live
//! in `streams`) for `retention_stream` rules, it would need DDL on every
//! change of the settings, and it removes rows when ClickHouse merges, not
//! on the documented day boundary.

use crate::client::Client;
use crate::cluster::mutation_target;
use crate::deletes::IDS_PER_STATEMENT;
use crate::sql::{self, quote, ts_literal};
use crate::Error;
use runakefli_model::retention::{kept_from, RetentionConfig};
use runakefli_model::{Labels, NANOS_PER_DAY};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// What one retention pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetentionReport {
    /// `logs` day partitions dropped whole.
    pub dropped_partitions: u64,
    /// Parts of partitions that could not be dropped (merged meanwhile);
    /// their expired rows were deleted instead.
    pub failed_part_drops: u64,
    /// Lightweight `DELETE FROM logs` statements run.
    pub row_deletes: u64,
    /// (stream, day) pairs that expired.
    pub expired_stream_days: u64,
}

/// A stream with days old enough to expire under some policy.
#[derive(Clone, Debug)]
pub(crate) struct Candidate {
    /// Its tenant.
    pub tenant: String,
    /// Its id.
    pub stream_id: u64,
    /// Its labels.
    pub labels: Labels,
    /// Its days (days since the epoch) with rows, each with its partition
    /// name (`YYYY-MM-DD`).
    pub days: Vec<(i64, String)>,
}

/// Streams of one tenant whose rows before `kept_from` have expired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Expiry {
    /// Their tenant.
    pub tenant: String,
    /// The first timestamp kept (the start of a UTC day).
    pub kept_from: i64,
    /// Their ids, ascending.
    pub streams: Vec<u64>,
    /// Whether some expired day of these streams is not dropped whole (so
    /// their rows need a `DELETE`).
    pub rows_left: bool,
}

/// What a pass removes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Partitions (`YYYY-MM-DD`) where every stream expired.
    pub drop: Vec<String>,
    /// Per (tenant, first kept day), the streams that expired before it.
    pub expire: Vec<Expiry>,
    /// (stream, day) pairs that expired.
    pub stream_days: u64,
}

/// Streams with expired days, by (tenant, first kept timestamp): each
/// stream's id and its expired days.
type Groups = BTreeMap<(String, i64), Vec<(u64, Vec<i64>)>>;

/// Decides, at `now`, which candidate days expire: per stream, the days
/// wholly before its cutoff; partitions where every candidate expired go
/// whole. `candidates` must hold every stream with rows on each listed day
/// (all tenants).
pub(crate) fn plan(cfg: &RetentionConfig, now: i64, candidates: &[Candidate]) -> Plan {
    // Per day: its name and whether every stream on it expired.
    let mut days: BTreeMap<i64, (String, bool)> = BTreeMap::new();
    let mut groups: Groups = BTreeMap::new();
    let mut stream_days = 0;
    for c in candidates {
        let kept = cfg
            .policy_for(&c.tenant)
            .cutoff_for(&c.labels, now)
            .map(kept_from);
        let mut expired = Vec::new();
        for (day, name) in &c.days {
            let gone =
                kept.is_some_and(|k| day.saturating_add(1).saturating_mul(NANOS_PER_DAY) <= k);
            let d = days.entry(*day).or_insert_with(|| (name.clone(), true));
            d.1 &= gone;
            if gone {
                expired.push(*day);
            }
        }
        if let (Some(k), false) = (kept, expired.is_empty()) {
            stream_days += expired.len() as u64;
            groups
                .entry((c.tenant.clone(), k))
                .or_default()
                .push((c.stream_id, expired));
        }
    }
    let dropped: BTreeSet<i64> = days.iter().filter(|(_, d)| d.1).map(|(k, _)| *k).collect();
    let expire = groups
        .into_iter()
        .map(|((tenant, kept_from), mut streams)| {
            streams.sort_unstable_by_key(|s| s.0);
            Expiry {
                tenant,
                kept_from,
                rows_left: streams
                    .iter()
                    .any(|(_, ds)| ds.iter().any(|d| !dropped.contains(d))),
                streams: streams.into_iter().map(|s| s.0).collect(),
            }
        })
        .collect();
    Plan {
        drop: dropped.iter().map(|d| days[d].0.clone()).collect(),
        expire,
        stream_days,
    }
}

/// The active parts of `logs` by partition (`YYYY-MM-DD`). Columns:
/// `partition`, `parts` (their names).
const PARTS_QUERY: &str = "SELECT partition, groupArray(name) AS parts FROM system.parts \
    WHERE database = currentDatabase() AND table = 'logs' AND active GROUP BY partition";

/// The candidates of a pass: every (tenant, stream) of `streams` with a day
/// before `before` (ns; the start of a day). Columns: `tenant`,
/// `stream_id`, `labels_text`, `days` (an array of `[day number, name]`).
fn candidates_query(before: i64) -> String {
    format!(
        "SELECT tenant, stream_id, any(labels_text) AS labels_text, \
         groupUniqArray(tuple(toInt64(day), toString(day))) AS days FROM streams \
         WHERE day < {} GROUP BY tenant, stream_id ORDER BY tenant, stream_id",
        sql::day_literal(before)
    )
}

fn candidate(r: &Value) -> Result<Candidate, Error> {
    let bad = || Error::Decode(format!("retention candidate {r}"));
    let tenant = r["tenant"].as_str().ok_or_else(bad)?.to_string();
    let stream_id = match &r["stream_id"] {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .ok_or_else(bad)?;
    let labels = Labels::parse(r["labels_text"].as_str().ok_or_else(bad)?).map_err(|_| bad())?;
    let days = r["days"]
        .as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|d| {
            let [n, name] = d.as_array().map(Vec::as_slice).unwrap_or_default() else {
                return Err(bad());
            };
            let n = match n {
                Value::Number(n) => n.as_i64(),
                Value::String(s) => s.parse().ok(),
                _ => None,
            }
            .ok_or_else(bad)?;
            Ok((n, name.as_str().ok_or_else(bad)?.to_string()))
        })
        .collect::<Result<_, _>>()?;
    Ok(Candidate {
        tenant,
        stream_id,
        labels,
        days,
    })
}

/// Runs one retention pass at `now` (ns since the epoch), as the
/// housekeeping thread does every `retention_interval`: `cfg`'s expired
/// data removed from the tables `client` reaches.
pub(crate) fn apply(
    client: &Client,
    cfg: &RetentionConfig,
    now: i64,
) -> Result<RetentionReport, Error> {
    let mut report = RetentionReport::default();
    let Some(shortest) = cfg.shortest_period() else {
        return Ok(report);
    };
    let shortest = shortest.as_nanos().min(i64::MAX as u128) as i64;
    // No day from the latest possible cutoff's day on expires anywhere.
    let before = kept_from(now.saturating_sub(shortest));
    let cluster = client.config().cluster.as_ref();
    // Parts first, candidates second: see the module documentation. On
    // a cluster no part is dropped (each node has its own part names):
    // every expired row goes by `DELETE`.
    let mut parts: std::collections::HashMap<String, Vec<String>> = Default::default();
    let listed = if cluster.is_none() {
        client.rows(PARTS_QUERY, &Default::default())?
    } else {
        Vec::new()
    };
    for r in listed {
        let bad = || Error::Decode(format!("parts of {r}"));
        let names = r["parts"].as_array().ok_or_else(bad)?;
        parts.insert(
            r["partition"].as_str().ok_or_else(bad)?.to_string(),
            names
                .iter()
                .map(|n| n.as_str().map(str::to_string).ok_or_else(bad))
                .collect::<Result<_, _>>()?,
        );
    }
    let rows = client.rows(&candidates_query(before), &Default::default())?;
    let candidates: Vec<Candidate> = rows.iter().map(candidate).collect::<Result<_, _>>()?;
    let mut plan = plan(cfg, now, &candidates);
    if cluster.is_some() {
        plan.drop.clear();
        for e in &mut plan.expire {
            e.rows_left = true;
        }
    }
    for day in &plan.drop {
        for part in parts.get(day).into_iter().flatten() {
            let drop = format!("ALTER TABLE logs DROP PART {}", quote(part));
            match client.execute(&drop) {
                Ok(()) => {}
                Err(Error::Server { ref message, .. }) => {
                    tracing::info!(part, error = %message, "retention: a part could not be dropped (merged meanwhile?); deleting its expired rows instead");
                    report.failed_part_drops += 1;
                }
                Err(e) => return Err(e),
            }
        }
        report.dropped_partitions += 1;
    }
    let fallback = report.failed_part_drops > 0;
    let (logs, streams) = (
        mutation_target(cluster, "logs"),
        mutation_target(cluster, "streams"),
    );
    for e in &plan.expire {
        for chunk in e.streams.chunks(IDS_PER_STATEMENT) {
            let cond = format!(
                "tenant = {} AND stream_id IN {}",
                quote(&e.tenant),
                sql::id_set(chunk)
            );
            if e.rows_left || fallback {
                client.execute(&format!(
                    "DELETE FROM {logs} WHERE {cond} AND timestamp < {}",
                    ts_literal(e.kept_from)
                ))?;
                report.row_deletes += 1;
            }
            client.execute(&format!(
                "DELETE FROM {streams} WHERE {cond} AND day < {}",
                sql::day_literal(e.kept_from)
            ))?;
        }
    }
    report.expired_stream_days = plan.stream_days;
    if report != RetentionReport::default() {
        tracing::info!(
            dropped_partitions = report.dropped_partitions,
            row_deletes = report.row_deletes,
            expired_stream_days = report.expired_stream_days,
            "clickhouse retention removed expired data"
        );
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_model::retention::{RetentionPolicy, StreamRule, TenantRetention};
    use runakefli_model::{MatchOp, Matcher};
    use std::time::Duration;

    const DAY: i64 = NANOS_PER_DAY;

    fn cand(tenant: &str, id: u64, labels: &str, days: &[i64]) -> Candidate {
        Candidate {
            tenant: tenant.into(),
            stream_id: id,
            labels: Labels::parse(labels).unwrap(),
            days: days.iter().map(|d| (*d, format!("d{d}"))).collect(),
        }
    }

    fn days(n: u64) -> Duration {
        Duration::from_secs(n * 86_400)
    }

    #[test]
    fn whole_days_past_the_period_expire_and_full_partitions_drop() {
        let mut cfg = RetentionConfig::default();
        cfg.default.period = Some(days(2));
        cfg.default.streams = vec![StreamRule {
            matchers: vec![Matcher::new("env", MatchOp::Eq, "dev").unwrap()],
            priority: 1,
            period: days(1),
        }];
        cfg.tenants.insert(
            "audit".into(),
            TenantRetention {
                period: Some(days(400)),
                streams: Some(Vec::new()),
            },
        );
        // Now: day 10 at noon. Default keeps from day 8, dev from day 9.
        let now = 10 * DAY + DAY / 2;
        let p = plan(
            &cfg,
            now,
            &[
                cand("t", 1, r#"{app="a"}"#, &[6, 7, 8]),
                cand("t", 2, r#"{env="dev"}"#, &[7, 8]),
                cand("audit", 3, r#"{app="a"}"#, &[6]),
            ],
        );
        // Day 6 holds audit's stream (kept 400 days): not dropped; day 7 is.
        assert_eq!(p.drop, vec!["d7".to_string()]);
        assert_eq!(
            p.expire,
            vec![
                Expiry {
                    tenant: "t".into(),
                    kept_from: 8 * DAY,
                    streams: vec![1],
                    rows_left: true, // day 6
                },
                Expiry {
                    tenant: "t".into(),
                    kept_from: 9 * DAY,
                    streams: vec![2],
                    rows_left: true, // day 8
                },
            ]
        );
        assert_eq!(p.stream_days, 4);
        // The day ending exactly at the cutoff expires; the cutoff's own day does not.
        let p = plan(&cfg, 9 * DAY, &[cand("t", 1, r#"{app="a"}"#, &[6, 7])]);
        assert_eq!(p.drop, vec!["d6".to_string()]);
        assert!(!p.expire[0].rows_left);
        assert_eq!(p.expire[0].kept_from, 7 * DAY);
    }

    #[test]
    fn nothing_expires_without_a_period() {
        let cfg = RetentionConfig {
            default: RetentionPolicy::default(),
            ..RetentionConfig::default()
        };
        let p = plan(&cfg, 100 * DAY, &[cand("t", 1, r#"{app="a"}"#, &[1])]);
        assert_eq!(p, Plan::default());
        let q = candidates_query(3 * DAY);
        assert!(q.contains("WHERE day < toDate(fromUnixTimestamp64Nano(toInt64(259200000000000)"));
        let row = serde_json::json!({"tenant": "t", "stream_id": "18446744073709551615",
            "labels_text": "{app=\"a\"}", "days": [[19723, "2024-01-01"]]});
        let c = candidate(&row).unwrap();
        assert_eq!((c.stream_id, c.days[0].0), (u64::MAX, 19723));
        assert!(candidate(&serde_json::json!({"tenant": "t"})).is_err());
    }
}
