//! The cluster layout (`--clickhouse-cluster`): which ClickHouse cluster the
//! tables are spread over, and what that changes in the SQL — `ON CLUSTER`
//! on every DDL statement and mutation, mutations sent to the local tables
//! (`logs_local`) instead of the `Distributed` ones (`logs`), the settings
//! every request carries, and the Keeper paths of Replicated tables. The
//! tables themselves are written once, in [`crate::schema`].
//! Why the layout looks like this: `docs/clickhouse.md`, "Cluster".
//!
//! Without a cluster ([`crate::Config::cluster`] `None`) nothing here is
//! used and every statement is the single-server one.

use crate::sql::{ident, quote};

/// Suffix of the per-node table under a `Distributed` table of the same
/// name (`logs_local` under `logs`).
pub const LOCAL_SUFFIX: &str = "_local";

/// A ClickHouse cluster (a `remote_servers` entry) holding the tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// The cluster's name in ClickHouse's `remote_servers`.
    pub name: String,
    /// Replicated engines (`ReplicatedMergeTree`, …) with the `{shard}` and
    /// `{replica}` macros and a Keeper path naming database and table;
    /// needs ClickHouse Keeper (or ZooKeeper) and the macros on every node.
    pub replicated: bool,
    /// Whether DDL and mutations carry `ON CLUSTER` (always, except for a
    /// one-node cluster without Keeper, which cannot run distributed DDL:
    /// the chdb tests create the cluster layout on one node this way).
    pub on_cluster: bool,
}

impl Cluster {
    /// The cluster `name`, not replicated, with `ON CLUSTER` DDL.
    pub fn new(name: impl Into<String>) -> Self {
        Cluster {
            name: name.into(),
            replicated: false,
            on_cluster: true,
        }
    }

    /// ` ON CLUSTER `name`` (with its leading space), or nothing when
    /// [`Cluster::on_cluster`] is off.
    pub fn on_cluster_clause(&self) -> String {
        if self.on_cluster {
            format!(" ON CLUSTER {}", ident(&self.name))
        } else {
            String::new()
        }
    }

    /// Settings every request to a cluster carries:
    /// - `insert_distributed_sync=1`: an insert into a `Distributed` table
    ///   answers only once every shard it sends rows to has written them (by
    ///   default it would answer once the rows are queued on the node it
    ///   reached, and a push would be acknowledged before it is stored);
    /// - `distributed_product_mode=local`: `stream_id IN (SELECT stream_id
    ///   FROM streams …)` inside a query over `logs` reads each shard's own
    ///   `streams_local` — exact because both tables are sharded by
    ///   `stream_id`, so a shard's rows have their streams on that shard
    ///   (ClickHouse's default refuses such a subquery over a second
    ///   `Distributed` table when there is more than one shard).
    pub fn request_settings(&self) -> [(&'static str, &'static str); 2] {
        [
            ("insert_distributed_sync", "1"),
            ("distributed_product_mode", "local"),
        ]
    }

    /// The Keeper path of the Replicated table `table` of `database`: one
    /// replica set per shard (`{shard}`) for sharded tables, one over the
    /// whole cluster (`all`) for tables every node holds whole.
    pub fn keeper_path(&self, database: &str, table: &str, per_shard: bool) -> String {
        let shard = if per_shard { "{shard}" } else { "all" };
        quote(&format!("/clickhouse/tables/{shard}/{database}/{table}"))
    }
}

/// Where a mutation of `table` (a lightweight `DELETE`, an `ALTER`) goes:
/// the table itself on one server; on a cluster its local table on every
/// node (`logs_local ON CLUSTER c`) — a `Distributed` table cannot be
/// mutated.
pub fn mutation_target(cluster: Option<&Cluster>, table: &str) -> String {
    match cluster {
        None => table.to_string(),
        Some(c) => format!("{table}{LOCAL_SUFFIX}{}", c.on_cluster_clause()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_go_to_the_local_tables_on_every_node() {
        assert_eq!(mutation_target(None, "logs"), "logs");
        let mut c = Cluster::new("main`x");
        assert_eq!(
            mutation_target(Some(&c), "logs"),
            "logs_local ON CLUSTER `main\\`x`"
        );
        c.on_cluster = false;
        assert_eq!(mutation_target(Some(&c), "streams"), "streams_local");
        assert_eq!(
            c.keeper_path("d'b", "logs_local", true),
            "'/clickhouse/tables/{shard}/d\\'b/logs_local'"
        );
    }
}
