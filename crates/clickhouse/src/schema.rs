//! The tables, by schema version, and the migration that brings a database
//! up to [`SCHEMA_VERSION`]. Statements are idempotent (`IF NOT EXISTS`), so
//! a migration interrupted half-way is simply run again.
//! Why the tables look like this: `docs/clickhouse.md`.

use crate::client::{Client, Request};
use crate::sql::ident;
use crate::Error;

/// The newest schema version this binary knows.
pub const SCHEMA_VERSION: u32 = 2;

/// The table recording applied versions.
pub const VERSION_TABLE: &str = "runakefli_schema";

/// Statements of each version, in order; version `i + 1` is `MIGRATIONS[i]`.
/// Version 1: `streams` and `logs`. Version 2: `delete_requests`, one row per
/// change of a delete request (the highest `version` is its state).
pub const MIGRATIONS: &[&[&str]] = &[
    &[
        "CREATE TABLE IF NOT EXISTS streams (
        tenant LowCardinality(String),
        day Date,
        stream_id UInt64,
        labels Map(String, String),
        labels_text String
    ) ENGINE = ReplacingMergeTree
    PARTITION BY toYYYYMM(day)
    ORDER BY (tenant, day, stream_id)",
        "CREATE TABLE IF NOT EXISTS logs (
        tenant LowCardinality(String),
        stream_id UInt64,
        timestamp DateTime64(9, 'UTC') CODEC(Delta, ZSTD(1)),
        seq UInt64 CODEC(Delta, ZSTD(1)),
        line String CODEC(ZSTD(3)),
        metadata Map(String, String),
        INDEX line_tokens line TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1
    ) ENGINE = MergeTree
    PARTITION BY toDate(timestamp)
    ORDER BY (tenant, stream_id, timestamp, seq)
    SETTINGS non_replicated_deduplication_window = 1000",
    ],
    &["CREATE TABLE IF NOT EXISTS delete_requests (
        tenant LowCardinality(String),
        request_id String,
        version UInt64,
        status LowCardinality(String),
        query String,
        start_ns Int64,
        end_ns Int64,
        created_ns Int64,
        spec String
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY (tenant, request_id)"],
];

/// The schema version recorded in the client's database (0: none yet).
pub fn current_version(client: &Client) -> Result<u32, Error> {
    let rows = client.rows(
        &format!("SELECT max(version) AS v FROM {}", ident(VERSION_TABLE)),
        &Request::default(),
    )?;
    let v = rows
        .first()
        .and_then(|r| r.get("v"))
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| Error::Decode(format!("schema version rows {rows:?}")))?;
    u32::try_from(v).map_err(|_| Error::Decode(format!("schema version {v}")))
}

/// Creates the database and tables if missing and applies every migration
/// past the recorded version; returns the version now in force. A database
/// with a newer version than [`SCHEMA_VERSION`] is [`Error::SchemaTooNew`].
pub fn ensure(client: &Client) -> Result<u32, Error> {
    let db = ident(&client.config().database);
    client.query(
        &format!("CREATE DATABASE IF NOT EXISTS {db}"),
        &Request {
            no_database: true,
            ..Request::default()
        },
    )?;
    client.execute(&format!(
        "CREATE TABLE IF NOT EXISTS {} (version UInt32, applied_at DateTime DEFAULT now()) \
         ENGINE = MergeTree ORDER BY version",
        ident(VERSION_TABLE)
    ))?;
    let found = current_version(client)?;
    if found > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew {
            found,
            known: SCHEMA_VERSION,
        });
    }
    for (i, statements) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        for s in *statements {
            client.execute(s)?;
        }
        client.execute(&format!(
            "INSERT INTO {} (version) VALUES ({})",
            ident(VERSION_TABLE),
            i + 1
        ))?;
    }
    Ok(SCHEMA_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_has_statements() {
        assert_eq!(MIGRATIONS.len(), SCHEMA_VERSION as usize);
        for m in MIGRATIONS {
            assert!(!m.is_empty());
            for s in *m {
                assert!(s.contains("IF NOT EXISTS"), "{s}");
            }
        }
    }
}
