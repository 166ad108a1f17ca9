//! Citus: what jsonb_ttl needs to know of it. A TTL index on a hash-distributed table is purged
//! where its shards live: each node's worker deletes from the shard placements its node holds,
//! as plain local tables (docs/citus.md). Every other kind of Citus table (reference tables,
//! single-shard and schema-based tables, Citus local tables) is purged through the distributed
//! table on the coordinator, as on one server: Citus routes those statements to one place.
//!
//! Nothing here names a Citus object unless Citus is created in the database ([`present`]).

use pgrx::pg_sys::Oid;
use pgrx::PgSqlErrorCode;

/// Whether the citus extension is created in this database.
pub fn present() -> bool {
    crate::read::one::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_extension \
                        WHERE extname OPERATOR(pg_catalog.=) 'citus'::pg_catalog.name)",
        &[],
    )
    .unwrap_or(false)
}

/// Whether `table` is a hash-distributed Citus table (its rows in shards on the nodes).
pub fn hash_distributed(table: Oid) -> bool {
    present()
        && crate::read::one::<bool>(
            "SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition \
                            WHERE logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
                              AND partmethod OPERATOR(pg_catalog.=) 'h'::pg_catalog.\"char\")",
            &[table.into()],
        )
        .unwrap_or(false)
}

/// Whether `table` is a Citus table of any kind, or a shard of one.
pub(crate) fn citus_table(table: Oid) -> bool {
    present()
        && crate::read::one::<bool>(
            "SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition \
                            WHERE logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) $1) \
                 OR pg_catalog.relation_is_a_known_shard($1::pg_catalog.regclass)",
            &[table.into()],
        )
        .unwrap_or(false)
}

/// Whether this node is the Citus coordinator (or Citus is not here: a single server).
pub fn is_coordinator() -> bool {
    !present()
        || crate::read::one::<bool>("SELECT pg_catalog.citus_is_coordinator()", &[])
            .unwrap_or(false)
}

/// The settings our catalog reads need under Citus: shards are hidden from `pg_class` in
/// every session Citus does not know as its own, and the worker looks them up there.
pub const SHOW_SHARDS: [(&std::ffi::CStr, &str); 1] = [(c"citus.override_table_visibility", "off")];

/// How long a connection to a worker node may take to open, for the sending and for the
/// worker nodes' statistics (Citus waits 30 s by default).
pub const CONNECT_TIMEOUT: [(&std::ffi::CStr, &str); 1] =
    [(c"citus.node_connection_timeout", "2000")];

/// The SQL of the tables rows are deleted from for the catalog row `t` (`relid`, and
/// `shardid` for a shard, else NULL): the table and its leaf partitions (`_ttl_targets` in
/// `internal`), except for a hash-distributed table, whose targets are the shard placements
/// this node holds (active, in this node's group: a placement moved away, even one still
/// awaiting its cleanup here, is no longer this node's).
pub fn targets_sql(internal: &str) -> String {
    format!(
        "(SELECT relid::pg_catalog.oid AS relid, NULL::pg_catalog.int8 AS shardid \
          FROM {internal}._ttl_targets(t.table_oid) relid \
          WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition d \
                            WHERE d.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid \
                              AND d.partmethod OPERATOR(pg_catalog.=) 'h'::pg_catalog.\"char\") \
          UNION ALL \
          SELECT pg_catalog.to_regclass(pg_catalog.shard_name(s.logicalrelid, s.shardid, false))::pg_catalog.oid, \
                 s.shardid \
          FROM pg_catalog.pg_dist_shard s \
          JOIN pg_catalog.pg_dist_partition d ON d.logicalrelid OPERATOR(pg_catalog.=) s.logicalrelid \
          JOIN pg_catalog.pg_dist_placement p ON p.shardid OPERATOR(pg_catalog.=) s.shardid \
          WHERE s.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid \
            AND d.partmethod OPERATOR(pg_catalog.=) 'h'::pg_catalog.\"char\" \
            AND p.shardstate OPERATOR(pg_catalog.=) 1 \
            AND p.groupid OPERATOR(pg_catalog.=) (SELECT groupid FROM pg_catalog.pg_dist_local_group) \
            AND pg_catalog.to_regclass(pg_catalog.shard_name(s.logicalrelid, s.shardid, false)) IS NOT NULL)"
    )
}

/// Raises when `table` (`name`) is hash-distributed and this node is not the coordinator: the
/// coordinator's catalog is the authority, which its worker hands on to the other nodes.
pub fn check_managed_here(table: Oid, name: &str) {
    if citus_table(table) && !is_coordinator() {
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!(
                "the TTL index of the distributed table {name} is managed on the Citus coordinator"
            ),
            "Run ttl_index_create, ttl_index_alter and ttl_index_drop on the coordinator: its \
             worker hands each TTL index on to the nodes that hold the shards.",
        );
    }
}

/// Raises unless a TTL index with these options may be on `table` (`name`): on a
/// hash-distributed table, only from the coordinator, never partitioned, and without the
/// options that would put triggers, policies or partition drops on its shards (docs/citus.md).
pub fn check_options(
    table: Oid,
    name: &str,
    touch: bool,
    hide_expired: bool,
    drop_partitions: bool,
    partitioned: bool,
) {
    check_managed_here(table, name);
    if !hash_distributed(table) {
        return;
    }
    let refuse = |what: &str, hint: &str| -> ! {
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("{what} on the distributed table {name}"),
            hint.to_string(),
        )
    };
    if replicated(table) {
        refuse(
            "shards Citus copies itself are not supported",
            "Each copy would be purged on its own node, apart from the others: use streaming \
             replication for high availability (citus.shard_replication_factor = 1).",
        );
    }
    if partitioned {
        refuse(
            "a partitioned table is not supported",
            "Give each partition its own TTL index, or use a table that is not partitioned.",
        );
    }
    if touch {
        refuse(
            "touch is not supported",
            "touch puts a trigger on every shard; keep the time of the last write in the \
             document from the application instead.",
        );
    }
    if hide_expired {
        refuse(
            "hide_expired is not supported",
            "hide_expired puts row security policies on the table, which Citus does not \
             propagate to the shards.",
        );
    }
    if drop_partitions {
        refuse(
            "drop_partitions is not supported",
            "Rows are deleted one by one, on every shard.",
        );
    }
}

/// Whether the shards of the hash-distributed `table` are replicated by Citus itself
/// (statement-based replication: several active placements of one shard).
fn replicated(table: Oid) -> bool {
    crate::read::one::<bool>(
        "SELECT repmodel OPERATOR(pg_catalog.<>) 's'::pg_catalog.\"char\" \
         FROM pg_catalog.pg_dist_partition WHERE logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
        &[table.into()],
    )
    .unwrap_or(false)
}

/// Whether this node holds an active placement of a shard of the hash-distributed `table`.
pub fn holds_shards_of(table: Oid) -> bool {
    present()
        && crate::read::one::<bool>(
            "SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_shard s \
                            JOIN pg_catalog.pg_dist_placement p ON p.shardid OPERATOR(pg_catalog.=) s.shardid \
                            WHERE s.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
                              AND p.shardstate OPERATOR(pg_catalog.=) 1 \
                              AND p.groupid OPERATOR(pg_catalog.=) \
                                  (SELECT groupid FROM pg_catalog.pg_dist_local_group))",
            &[table.into()],
        )
        .unwrap_or(false)
}

/// Whether this node still holds an active placement of `shard`: one moved away since the
/// pass began (its old copy awaiting cleanup here) is no longer purged here.
pub fn holds_placement(shard: i64) -> bool {
    crate::read::one::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_placement p \
                        WHERE p.shardid OPERATOR(pg_catalog.=) $1 \
                          AND p.shardstate OPERATOR(pg_catalog.=) 1 \
                          AND p.groupid OPERATOR(pg_catalog.=) \
                              (SELECT groupid FROM pg_catalog.pg_dist_local_group))",
        &[shard.into()],
    )
    .unwrap_or(false)
}
