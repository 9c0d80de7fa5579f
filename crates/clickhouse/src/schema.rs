//! The tables, by schema version, and the migration that brings a database
//! up to [`SCHEMA_VERSION`]. Statements are idempotent (`IF NOT EXISTS`), so
//! a migration interrupted half-way is simply run again.
//!
//! Each table is written once ([`Table`]) and rendered per layout
//! ([`Table::create`]): on one server as it always was; on a cluster
//! ([`Cluster`]) as a local table on every node plus a `Distributed` table
//! of the table's name over them, or, for the small tables when the cluster
//! is replicated, as one Replicated table every node holds whole.
//! Why the tables look like this: `docs/clickhouse.md`.

use crate::client::{Client, Request};
use crate::cluster::{Cluster, LOCAL_SUFFIX};
use crate::sql::{ident, quote};
use crate::Error;

/// The newest schema version this binary knows.
pub const SCHEMA_VERSION: u32 = 2;

/// The table recording applied versions.
pub const VERSION_TABLE: &str = "runakefli_schema";

/// A table's engine, named as on one server; on a replicated cluster the
/// `Replicated` variant with its Keeper path and `{replica}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// `MergeTree`.
    MergeTree,
    /// `ReplacingMergeTree`, or `ReplacingMergeTree(column)` with a version column.
    ReplacingMergeTree(Option<&'static str>),
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::MergeTree => "MergeTree",
            Engine::ReplacingMergeTree(_) => "ReplacingMergeTree",
        }
    }

    /// The engine clause: plain, or `Replicated…(path, '{replica}'[, version])`.
    fn sql(self, replicated: Option<&str>) -> String {
        let version = match self {
            Engine::ReplacingMergeTree(Some(v)) => Some(v),
            _ => None,
        };
        match (replicated, version) {
            (None, None) => self.name().to_string(),
            (None, Some(v)) => format!("{}({v})", self.name()),
            (Some(path), None) => format!("Replicated{}({path}, '{{replica}}')", self.name()),
            (Some(path), Some(v)) => {
                format!("Replicated{}({path}, '{{replica}}', {v})", self.name())
            }
        }
    }
}

/// How a table is spread over a cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
    /// Rows split over the shards by this key: a local table on every node
    /// and a `Distributed` table over them.
    Sharded(&'static str),
    /// A small table every reader needs whole: on a replicated cluster one
    /// Replicated table with a replica on every node (reads stay local);
    /// without replication, as [`Spread::Sharded`] by this key (a table
    /// copied to every node needs Keeper).
    Everywhere(&'static str),
}

/// One table of the schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Table {
    /// The name the rest of the crate reads and writes (on a cluster, the
    /// `Distributed` table's, or the replicated table's).
    pub name: &'static str,
    /// Whether the name is written back-quoted (the version table's always
    /// was; kept so single-server statements stay as they were).
    backquoted: bool,
    /// The column and index list, between the parentheses.
    columns: &'static str,
    /// The engine.
    pub engine: Engine,
    /// What follows the engine (`PARTITION BY`, `ORDER BY`, `SETTINGS`).
    tail: &'static str,
    /// How it is spread over a cluster.
    pub spread: Spread,
}

/// The version table: one row per applied version.
pub const VERSION: Table = Table {
    name: VERSION_TABLE,
    backquoted: true,
    columns: "version UInt32, applied_at DateTime DEFAULT now()",
    engine: Engine::MergeTree,
    tail: " ORDER BY version",
    spread: Spread::Everywhere("version"),
};

/// One row per (tenant, day, stream) with rows: the streams' labels.
pub const STREAMS: Table = Table {
    name: "streams",
    backquoted: false,
    columns: "
        tenant LowCardinality(String),
        day Date,
        stream_id UInt64,
        labels Map(String, String),
        labels_text String
    ",
    engine: Engine::ReplacingMergeTree(None),
    tail: "
    PARTITION BY toYYYYMM(day)
    ORDER BY (tenant, day, stream_id)",
    spread: Spread::Sharded("stream_id"),
};

/// The log rows.
pub const LOGS: Table = Table {
    name: "logs",
    backquoted: false,
    columns: "
        tenant LowCardinality(String),
        stream_id UInt64,
        timestamp DateTime64(9, 'UTC') CODEC(Delta, ZSTD(1)),
        seq UInt64 CODEC(Delta, ZSTD(1)),
        line String CODEC(ZSTD(3)),
        metadata Map(String, String),
        INDEX line_tokens line TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1
    ",
    engine: Engine::MergeTree,
    tail: "
    PARTITION BY toDate(timestamp)
    ORDER BY (tenant, stream_id, timestamp, seq)
    SETTINGS non_replicated_deduplication_window = 1000",
    spread: Spread::Sharded("stream_id"),
};

/// Delete requests: one row per change (the highest `version` is the state).
pub const DELETE_REQUESTS: Table = Table {
    name: "delete_requests",
    backquoted: false,
    columns: "
        tenant LowCardinality(String),
        request_id String,
        version UInt64,
        status LowCardinality(String),
        query String,
        start_ns Int64,
        end_ns Int64,
        created_ns Int64,
        spec String
    ",
    engine: Engine::ReplacingMergeTree(Some("version")),
    tail: "
    ORDER BY (tenant, request_id)",
    // Every change of one request on one shard, so they collapse there.
    spread: Spread::Everywhere("cityHash64(tenant, request_id)"),
};

/// Tables of each version, in order; version `i + 1` is `MIGRATIONS[i]`.
/// Version 1: `streams` and `logs`. Version 2: `delete_requests`.
pub const MIGRATIONS: &[&[Table]] = &[&[STREAMS, LOGS], &[DELETE_REQUESTS]];

impl Table {
    fn sql_name(&self, suffix: &str) -> String {
        let name = format!("{}{suffix}", self.name);
        if self.backquoted {
            ident(&name)
        } else {
            name
        }
    }

    /// The statements creating the table in `database`: one on a single
    /// server (`cluster` `None`); on a cluster, each with `ON CLUSTER`, the
    /// local table then the `Distributed` one — or the one Replicated table
    /// of a [`Spread::Everywhere`] table on a replicated cluster.
    pub fn create(&self, cluster: Option<&Cluster>, database: &str) -> Vec<String> {
        let Some(c) = cluster else {
            return vec![format!(
                "CREATE TABLE IF NOT EXISTS {} ({}) ENGINE = {}{}",
                self.sql_name(""),
                self.columns,
                self.engine.sql(None),
                self.tail
            )];
        };
        let on = c.on_cluster_clause();
        let key = match self.spread {
            Spread::Everywhere(_) if c.replicated => {
                let path = c.keeper_path(database, self.name, false);
                return vec![format!(
                    "CREATE TABLE IF NOT EXISTS {}{on} ({}) ENGINE = {}{}",
                    self.sql_name(""),
                    self.columns,
                    self.engine.sql(Some(&path)),
                    self.tail
                )];
            }
            Spread::Sharded(key) | Spread::Everywhere(key) => key,
        };
        let local = self.sql_name(LOCAL_SUFFIX);
        let path = c
            .replicated
            .then(|| c.keeper_path(database, &format!("{}{LOCAL_SUFFIX}", self.name), true));
        vec![
            format!(
                "CREATE TABLE IF NOT EXISTS {local}{on} ({}) ENGINE = {}{}",
                self.columns,
                self.engine.sql(path.as_deref()),
                self.tail
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {}{on} AS {local} ENGINE = Distributed({}, {}, {}, {key})",
                self.sql_name(""),
                quote(&c.name),
                quote(database),
                quote(&format!("{}{LOCAL_SUFFIX}", self.name)),
            ),
        ]
    }
}

/// The statements of schema version `version` (1-based) for `cluster`
/// (`None`: one server) in `database`.
pub fn migration(version: u32, cluster: Option<&Cluster>, database: &str) -> Vec<String> {
    let tables = version
        .checked_sub(1)
        .and_then(|i| MIGRATIONS.get(i as usize))
        .copied()
        .unwrap_or_default();
    tables
        .iter()
        .flat_map(|t| t.create(cluster, database))
        .collect()
}

/// The statement creating `database` (with `ON CLUSTER` on a cluster).
pub fn create_database(cluster: Option<&Cluster>, database: &str) -> String {
    let on = cluster.map(Cluster::on_cluster_clause).unwrap_or_default();
    format!("CREATE DATABASE IF NOT EXISTS {}{on}", ident(database))
}

/// Every statement [`ensure`] may run to create `database` from nothing
/// for `cluster`, in order, version rows left out.
pub fn all_statements(cluster: Option<&Cluster>, database: &str) -> Vec<String> {
    let mut out = vec![create_database(cluster, database)];
    out.extend(VERSION.create(cluster, database));
    for v in 1..=SCHEMA_VERSION {
        out.extend(migration(v, cluster, database));
    }
    out
}

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
/// On a cluster ([`crate::Config::cluster`]) every statement carries
/// `ON CLUSTER`, so it runs on every node.
pub fn ensure(client: &Client) -> Result<u32, Error> {
    let config = client.config();
    let (cluster, database) = (config.cluster.as_ref(), config.database.as_str());
    client.query(
        &create_database(cluster, database),
        &Request {
            no_database: true,
            ..Request::default()
        },
    )?;
    for s in VERSION.create(cluster, database) {
        client.execute(&s)?;
    }
    let found = current_version(client)?;
    if found > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew {
            found,
            known: SCHEMA_VERSION,
        });
    }
    for version in found + 1..=SCHEMA_VERSION {
        for s in migration(version, cluster, database) {
            client.execute(&s)?;
        }
        client.execute(&format!(
            "INSERT INTO {} (version) VALUES ({version})",
            ident(VERSION_TABLE),
        ))?;
    }
    Ok(SCHEMA_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The single-server statements exactly as they were written before the
    /// cluster layout (databases created by earlier binaries hold these).
    const SINGLE_SERVER: &[&str] = &[
        "CREATE DATABASE IF NOT EXISTS `rk`",
        "CREATE TABLE IF NOT EXISTS `runakefli_schema` (version UInt32, applied_at DateTime DEFAULT now()) \
         ENGINE = MergeTree ORDER BY version",
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
        "CREATE TABLE IF NOT EXISTS delete_requests (
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
    ORDER BY (tenant, request_id)",
    ];

    #[test]
    fn every_version_has_statements() {
        assert_eq!(MIGRATIONS.len(), SCHEMA_VERSION as usize);
        for v in 1..=SCHEMA_VERSION {
            let m = migration(v, None, "rk");
            assert!(!m.is_empty());
            for s in m {
                assert!(s.contains("IF NOT EXISTS"), "{s}");
            }
        }
        assert!(migration(0, None, "rk").is_empty());
        assert!(migration(SCHEMA_VERSION + 1, None, "rk").is_empty());
    }

    #[test]
    fn single_server_statements_are_unchanged() {
        assert_eq!(all_statements(None, "rk"), SINGLE_SERVER);
    }

    fn cluster(replicated: bool) -> Cluster {
        Cluster {
            replicated,
            ..Cluster::new("main")
        }
    }

    /// On a cluster every statement carries `ON CLUSTER`, the sharded
    /// tables are local tables plus `Distributed` ones by `stream_id`, and
    /// the small tables are sharded too when nothing replicates them.
    #[test]
    fn a_cluster_gets_local_and_distributed_tables_on_every_node() {
        let c = cluster(false);
        let all = all_statements(Some(&c), "rk");
        for s in &all {
            assert!(s.contains(" ON CLUSTER `main`"), "{s}");
            assert!(!s.contains("Replicated"), "{s}");
        }
        assert_eq!(
            all[0],
            "CREATE DATABASE IF NOT EXISTS `rk` ON CLUSTER `main`"
        );
        let distributed: Vec<&str> = all
            .iter()
            .filter_map(|s| s.split_once(" ENGINE = Distributed").map(|(_, d)| d))
            .collect();
        assert_eq!(
            distributed,
            [
                "('main', 'rk', 'runakefli_schema_local', version)",
                "('main', 'rk', 'streams_local', stream_id)",
                "('main', 'rk', 'logs_local', stream_id)",
                "('main', 'rk', 'delete_requests_local', cityHash64(tenant, request_id))",
            ]
        );
        let logs = LOGS.create(Some(&c), "rk");
        assert_eq!(logs.len(), 2);
        // The local table is the single-server one, renamed and ON CLUSTER.
        assert_eq!(
            logs[0],
            LOGS.create(None, "rk")[0]
                .replace("EXISTS logs (", "EXISTS logs_local ON CLUSTER `main` (")
        );
        assert_eq!(
            logs[1],
            "CREATE TABLE IF NOT EXISTS logs ON CLUSTER `main` AS logs_local \
             ENGINE = Distributed('main', 'rk', 'logs_local', stream_id)"
        );
        assert_eq!(
            VERSION.create(Some(&c), "rk")[1],
            "CREATE TABLE IF NOT EXISTS `runakefli_schema` ON CLUSTER `main` \
             AS `runakefli_schema_local` \
             ENGINE = Distributed('main', 'rk', 'runakefli_schema_local', version)"
        );
        // Without ON CLUSTER (a one-node test cluster): the same tables.
        let one = Cluster {
            on_cluster: false,
            ..c.clone()
        };
        let plain: Vec<String> = all
            .iter()
            .map(|s| s.replace(" ON CLUSTER `main`", ""))
            .collect();
        assert_eq!(all_statements(Some(&one), "rk"), plain);
    }

    /// A replicated cluster: Replicated engines with `{shard}`/`{replica}`
    /// for the sharded tables; the small tables replicated to every node
    /// under their own names, no `Distributed` table.
    #[test]
    fn a_replicated_cluster_names_database_and_table_in_keeper_paths() {
        let c = cluster(true);
        let all = all_statements(Some(&c), "rk");
        for s in &all {
            assert!(s.contains(" ON CLUSTER `main`"), "{s}");
        }
        let streams = STREAMS.create(Some(&c), "rk");
        assert!(
            streams[0].contains(
                ") ENGINE = ReplicatedReplacingMergeTree(\
                 '/clickhouse/tables/{shard}/rk/streams_local', '{replica}')\n    PARTITION BY"
            ),
            "{}",
            streams[0]
        );
        assert!(streams[1].ends_with("Distributed('main', 'rk', 'streams_local', stream_id)"));
        let logs = LOGS.create(Some(&c), "rk");
        assert!(logs[0].contains(
            "ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/rk/logs_local', '{replica}')"
        ));
        let deletes = DELETE_REQUESTS.create(Some(&c), "rk");
        assert_eq!(deletes.len(), 1);
        assert!(deletes[0]
            .starts_with("CREATE TABLE IF NOT EXISTS delete_requests ON CLUSTER `main` ("));
        assert!(deletes[0].contains(
            "ENGINE = ReplicatedReplacingMergeTree(\
             '/clickhouse/tables/all/rk/delete_requests', '{replica}', version)"
        ));
        let version = VERSION.create(Some(&c), "rk");
        assert_eq!(
            version,
            [
                "CREATE TABLE IF NOT EXISTS `runakefli_schema` ON CLUSTER `main` \
              (version UInt32, applied_at DateTime DEFAULT now()) ENGINE = ReplicatedMergeTree(\
              '/clickhouse/tables/all/rk/runakefli_schema', '{replica}') ORDER BY version"
            ]
        );
        assert_eq!(
            all.iter().filter(|s| s.contains("Distributed")).count(),
            2,
            "{all:#?}"
        );
    }
}
