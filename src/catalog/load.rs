//! The query that loads the TTL indexes of a database ([`super::load`]): the catalog's rows,
//! each column read by name (a catalog of an older version's SQL lacks the newer ones), their
//! targets (a partitioned table's leaves, a Citus table's shards here), whether each table has
//! its TTL index valid and ready, and the row's version; and one row read as a [`TtlIndex`].

use super::{
    definition::VERSION_SQL, in_window_sql, kind_of_type, Part, PartitionMode, RowTtl, Scope,
    TtlIndex,
};
use crate::extension::Extension;
use jsonb_ttl_core::parse::NumericUnit;
use jsonb_ttl_core::path::Resolved;
use pgrx::datum::Interval;
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;

/// Whether the index named by the SQL expression `name` (in the schema of the table the TTL
/// index was created on, `rn`) is valid and ready on the target table `l.relid`: itself, or
/// for a partition its partition of that index (the part of the load query below). A restore
/// creates the index after the catalog row, and a failed `CREATE INDEX CONCURRENTLY` leaves it
/// invalid. Names are looked up in `pg_class`, not through `to_regclass`, which checks the
/// caller's USAGE on the schema: an owner's `ttl_expire_now()` must not fail on another owner's
/// schema it cannot use.
fn index_ready_sql(name: &str) -> String {
    format!(
        "EXISTS (SELECT FROM pg_catalog.pg_index i, \
                   (SELECT (SELECT x.oid FROM pg_catalog.pg_class x \
                            WHERE x.relnamespace OPERATOR(pg_catalog.=) rn.oid \
                              AND x.relname OPERATOR(pg_catalog.=) ({name})::pg_catalog.name) AS oid) ttl \
                 WHERE i.indrelid OPERATOR(pg_catalog.=) l.relid \
                   AND i.indisvalid AND i.indisready AND i.indislive \
                   AND (i.indexrelid OPERATOR(pg_catalog.=) ttl.oid \
                        OR ttl.oid OPERATOR(pg_catalog.=) ANY (ARRAY( \
                             SELECT p.relid::pg_catalog.oid \
                             FROM pg_catalog.pg_partition_ancestors(i.indexrelid) p)) \
                        OR i.indexrelid OPERATOR(pg_catalog.=) (SELECT x.oid FROM pg_catalog.pg_class x \
                             WHERE x.relnamespace OPERATOR(pg_catalog.=) n.oid \
                               AND x.relname OPERATOR(pg_catalog.=) (({name}) OPERATOR(pg_catalog.||) '_' \
                                   OPERATOR(pg_catalog.||) l.shardid::pg_catalog.text)::pg_catalog.name)))"
    )
}

/// Whether the target `l.relid` has its index valid and ready: the index recorded for it by
/// OID (`recorded`, see [`recorded_index_sql`]), which [`crate::tracking`] records only for an
/// index that is ours by its expression, predicate and access method, never by its name alone
/// (an unrelated index under the TTL index's name is not it). A Citus shard, whose indexes
/// are not recorded, is not ready here: its index is found by its shape above the catalog
/// ([`crate::shard_targets::targets`], [`crate::shard_targets::shard_index`]). Only a database still at
/// an older version's SQL, which records no OIDs, goes by the name (`name`, see
/// [`index_ready_sql`]).
fn ready_sql(ext: &Extension, recorded: &str, name: &str) -> String {
    match ext.has_internal_schema() {
        true => format!("l.shardid IS NULL AND ({recorded}) IS NOT NULL"),
        false => index_ready_sql(name),
    }
}

/// The index recorded (`jsonb_ttl_internal.index_oid`, see [`crate::tracking`]) for the catalog
/// column `role` of catalog row `t`, on target `l.relid`: the recorded index itself, or on a
/// partition its partition of it; valid and ready. NULL for a Citus shard, or a database still
/// at an older version's SQL, which records no OIDs.
fn recorded_index_sql(ext: &Extension, role: &str) -> String {
    if !ext.has_internal_schema() {
        return "NULL::pg_catalog.oid".to_string();
    }
    format!(
        "(SELECT i.indexrelid FROM jsonb_ttl_internal.index_oid o, pg_catalog.pg_index i \
          WHERE l.shardid IS NULL \
            AND o.table_oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid \
            AND o.role OPERATOR(pg_catalog.=) '{role}'::pg_catalog.text \
            AND i.indrelid OPERATOR(pg_catalog.=) l.relid \
            AND i.indisvalid AND i.indisready AND i.indislive \
            AND (i.indexrelid OPERATOR(pg_catalog.=) o.index_oid \
                 OR o.index_oid OPERATOR(pg_catalog.=) ANY (ARRAY( \
                      SELECT p.relid::pg_catalog.oid \
                      FROM pg_catalog.pg_partition_ancestors(i.indexrelid) p))) \
          ORDER BY i.indexrelid LIMIT 1)"
    )
}

/// Whether the table of catalog row `t` is neither partitioned nor a parent: its own one
/// target, without a call of `_ttl_targets` (SQL with a SET clause, so never inlined: ~10 µs a
/// call, most of the catalog read at 10,000 TTL tables); the same rows either way.
const PLAIN_TABLE_SQL: &str = "EXISTS (SELECT FROM pg_catalog.pg_class k \
     WHERE k.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid \
       AND k.relkind OPERATOR(pg_catalog.<>) 'p'::pg_catalog.\"char\" \
       AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits h \
                       WHERE h.inhparent OPERATOR(pg_catalog.=) k.oid))";

/// The targets of catalog row `t` under `scope` (a lateral subquery of `relid`, `shardid`).
pub(crate) fn targets_sql(ext: &Extension, scope: Scope, citus: bool) -> String {
    match scope {
        Scope::Entries => {
            "(SELECT t.table_oid::pg_catalog.oid AS relid, NULL::pg_catalog.int8 AS shardid)"
                .to_string()
        }
        Scope::Targets if citus => crate::citus::targets_sql(&ext.internal()),
        Scope::Targets => format!(
            "(SELECT t.table_oid::pg_catalog.oid AS relid, NULL::pg_catalog.int8 AS shardid \
              WHERE {PLAIN_TABLE_SQL} \
              UNION ALL \
              SELECT relid::pg_catalog.oid, NULL::pg_catalog.int8 \
              FROM {}._ttl_targets(t.table_oid) relid \
              WHERE NOT {PLAIN_TABLE_SQL})",
            ext.internal()
        ),
    }
}

/// The columns of the TTL catalog `ext` has (a database not yet updated to the library's
/// SQL lacks the newer ones): each is read by name, and one it lacks reads as NULL. Never
/// through `to_jsonb` of the row, which fails on a value jsonb cannot hold (a reason of
/// hundreds of MiB) and so stopped the read of every table's TTL index.
fn catalog_columns(ext: &Extension) -> std::collections::HashSet<String> {
    Spi::connect(|client| {
        client
            .select(
                "SELECT attname::pg_catalog.text FROM pg_catalog.pg_attribute \
                 WHERE attrelid OPERATOR(pg_catalog.=) $1::pg_catalog.regclass \
                   AND attnum OPERATOR(pg_catalog.>) 0 AND NOT attisdropped",
                None,
                &[ext.catalog().into()],
            )
            .expect("pg_attribute is readable")
            .filter_map(|row| row.get::<String>(1).ok().flatten())
            .collect()
    })
}

/// The columns of the load query, in the order [`from_row`] reads them; `has` says which
/// columns the catalog has.
fn columns_sql(ext: &Extension, has: &dyn Fn(&str) -> bool) -> String {
    let text = |name: &str| match has(name) {
        true => format!("t.{name}::pg_catalog.text"),
        false => "NULL::pg_catalog.text".to_string(),
    };
    let flag = |name: &str| match has(name) {
        true => format!("coalesce(t.{name}, false)"),
        false => "false".to_string(),
    };
    let int8 = |name: &str| match has(name) {
        true => format!("t.{name}::pg_catalog.int8"),
        false => "NULL::pg_catalog.int8".to_string(),
    };
    let index_oid = recorded_index_sql(ext, "index_name");
    let row_index_oid = recorded_index_sql(ext, "row_ttl_index_name");
    let ready = ready_sql(ext, &index_oid, "t.index_name::pg_catalog.text");
    let in_window = in_window_sql(
        &text("delete_window_start"),
        &text("delete_window_end"),
        &text("time_zone"),
    );
    let row_ready = ready_sql(ext, &row_index_oid, &text("row_ttl_index_name"));
    let paused = match has("paused_at") {
        true => "t.paused_at IS NOT NULL",
        false => "false",
    };
    let row_json_path = match has("row_ttl_json_path") {
        true => "t.row_ttl_json_path",
        false => "NULL::pg_catalog.text[]",
    };
    format!(
        "l.relid, \
                pg_catalog.quote_ident(n.nspname::pg_catalog.text) OPERATOR(pg_catalog.||) '.' \
                  OPERATOR(pg_catalog.||) pg_catalog.quote_ident(c.relname::pg_catalog.text), \
                l.relid::pg_catalog.regclass::pg_catalog.text, c.relowner, \
                t.column_name::pg_catalog.text, a.atttypid, t.json_path, t.path, \
                t.expire_after, t.numeric_unit, t.index_name::pg_catalog.text, \
                t.table_oid::pg_catalog.oid, coalesce(a.attnum, 0::pg_catalog.int2), c.relkind::pg_catalog.text, \
                {time_zone}, {ready}, {paused}, {brake_released}, {brake_available}, \
                {filter_sql}, {touch}, {hide_expired}, {hide_enabled}, \
                {row_ttl_path}, {row_ttl_column}, {row_json_path}, {row_ttl_index_name}, \
                (SELECT ra.atttypid FROM pg_catalog.pg_attribute ra \
                 WHERE ra.attrelid OPERATOR(pg_catalog.=) c.oid AND NOT ra.attisdropped \
                   AND ra.attname::pg_catalog.text OPERATOR(pg_catalog.=) {row_ttl_column}), \
                {row_ready}, \
                {drop_partitions}, \
                l.shardid, \
                {in_window}, \
                {batch_size}, {max_removes_per_second}, \
                {replication_origin}, {logical_message}, \
                {index_oid}, {row_index_oid}, \
                {window_start}, {window_end}, {VERSION_SQL}, {archive_to}",
        time_zone = text("time_zone"),
        brake_released = flag("brake_released"),
        brake_available = has("brake_released"),
        filter_sql = text("filter_sql"),
        touch = flag("touch"),
        hide_expired = flag("hide_expired"),
        hide_enabled = flag("hide_enabled_row_security"),
        row_ttl_path = text("row_ttl_path"),
        row_ttl_column = text("row_ttl_column"),
        row_ttl_index_name = text("row_ttl_index_name"),
        drop_partitions = text("drop_partitions"),
        batch_size = int8("batch_size"),
        max_removes_per_second = int8("max_removes_per_second"),
        replication_origin = flag("replication_origin"),
        logical_message = flag("logical_message"),
        window_start = text("delete_window_start"),
        window_end = text("delete_window_end"),
        archive_to = match has("archive_to") {
            true => "t.archive_to::pg_catalog.oid",
            false => "NULL::pg_catalog.oid",
        },
    )
}

/// The query of [`super::load`] (`$1`: the table, or NULL for all): one row per target of `scope`,
/// in the columns [`from_row`] reads.
pub(super) fn sql(ext: &Extension, scope: Scope, citus: bool) -> String {
    let target = targets_sql(ext, scope, citus);
    let has = catalog_columns(ext);
    let columns = columns_sql(ext, &|name| has.contains(name));
    format!(
        "SELECT {columns} \
         FROM {catalog} t \
         CROSS JOIN LATERAL {target} l \
         JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) l.relid \
         JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
         JOIN pg_catalog.pg_class r ON r.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid \
         JOIN pg_catalog.pg_namespace rn ON rn.oid OPERATOR(pg_catalog.=) r.relnamespace \
         LEFT JOIN LATERAL (SELECT a.atttypid, a.attnum FROM pg_catalog.pg_attribute a \
                WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid \
                  AND a.attname OPERATOR(pg_catalog.=) t.column_name AND NOT a.attisdropped \
                OFFSET 0) a ON true \
         WHERE $1 IS NULL OR t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
         ORDER BY t.table_oid::pg_catalog.oid, l.relid",
        catalog = ext.catalog(),
    )
}

/// The first fourteen columns of a target's row, which the TTL catalog's load query and the
/// field TTLs' ([`crate::field`]) both start with (the target table, its quoted and displayed
/// names, owner, the path's column, its type and keys, the path as given, expire_after, the
/// numeric unit, the index name, the table the entry was created on, the column's number and
/// the target's relkind), as a target with no option set.
pub(crate) fn target_of_row(row: &pgrx::spi::SpiHeapTupleData) -> TtlIndex {
    let text = |i| row.get::<String>(i).ok().flatten().unwrap_or_default();
    let oid = |i| row.get::<Oid>(i).ok().flatten().unwrap_or_default();
    TtlIndex {
        table: oid(1),
        qualified_table: text(2),
        display_name: text(3),
        owner: oid(4),
        resolved: Resolved {
            column: text(5),
            kind: kind_of_type(oid(6)),
            json_path: row.get::<Vec<String>>(7).ok().flatten().unwrap_or_default(),
        },
        path: text(8),
        expire_after: row
            .get::<Interval>(9)
            .ok()
            .flatten()
            .unwrap_or_else(|| Interval::from_micros(0)),
        unit: NumericUnit::from_name(&text(10)).unwrap_or(NumericUnit::Seconds),
        index_name: text(11),
        root: oid(12),
        attnum: row.get::<i16>(13).ok().flatten().unwrap_or(0),
        foreign: text(14) == "f",
        time_zone: None,
        index_ready: false,
        paused: false,
        brake_released: false,
        brake_available: false,
        filter_sql: None,
        touch: false,
        hide_expired: false,
        hide_enabled_row_security: false,
        row_ttl: None,
        part: Part::Whole,
        drop_partitions: None,
        shard: None,
        in_window: true,
        batch_size: None,
        max_removes_per_second: None,
        replication_origin: false,
        logical_message: false,
        index_oid: None,
        window_start: None,
        window_end: None,
        version: String::new(),
        archive_to: None,
        field: None,
    }
}

/// One row of [`sql`] as a TTL index (its `part` [`Part::Whole`]).
fn from_row(row: &pgrx::spi::SpiHeapTupleData) -> TtlIndex {
    let text = |i| row.get::<String>(i).ok().flatten().unwrap_or_default();
    let oid = |i| row.get::<Oid>(i).ok().flatten().unwrap_or_default();
    TtlIndex {
        time_zone: row.get::<String>(15).ok().flatten(),
        index_ready: row.get::<bool>(16).ok().flatten().unwrap_or(false),
        paused: row.get::<bool>(17).ok().flatten().unwrap_or(false),
        brake_released: row.get::<bool>(18).ok().flatten().unwrap_or(false),
        brake_available: row.get::<bool>(19).ok().flatten().unwrap_or(false),
        filter_sql: row.get::<String>(20).ok().flatten(),
        touch: row.get::<bool>(21).ok().flatten().unwrap_or(false),
        hide_expired: row.get::<bool>(22).ok().flatten().unwrap_or(false),
        hide_enabled_row_security: row.get::<bool>(23).ok().flatten().unwrap_or(false),
        row_ttl: row.get::<String>(24).ok().flatten().map(|path| RowTtl {
            path,
            resolved: Resolved {
                column: text(25),
                kind: kind_of_type(oid(28)),
                json_path: row
                    .get::<Vec<String>>(26)
                    .ok()
                    .flatten()
                    .unwrap_or_default(),
            },
            index_name: text(27),
            index_ready: row.get::<bool>(29).ok().flatten().unwrap_or(false),
            index_oid: row.get::<Oid>(38).ok().flatten(),
        }),
        part: Part::Whole,
        drop_partitions: row
            .get::<String>(30)
            .ok()
            .flatten()
            .and_then(|mode| PartitionMode::from_name(&mode)),
        shard: row.get::<i64>(31).ok().flatten(),
        in_window: row.get::<bool>(32).ok().flatten().unwrap_or(true),
        batch_size: row.get::<i64>(33).ok().flatten(),
        max_removes_per_second: row.get::<i64>(34).ok().flatten(),
        replication_origin: row.get::<bool>(35).ok().flatten().unwrap_or(false),
        logical_message: row.get::<bool>(36).ok().flatten().unwrap_or(false),
        index_oid: row.get::<Oid>(37).ok().flatten(),
        window_start: row.get::<String>(39).ok().flatten(),
        window_end: row.get::<String>(40).ok().flatten(),
        version: text(41),
        archive_to: row.get::<Oid>(42).ok().flatten(),
        ..target_of_row(row)
    }
}

pub(super) fn rows(sql: &str, table: Option<Oid>, scope: Scope) -> Vec<TtlIndex> {
    Spi::connect(|client| {
        let table_arg: Option<Oid> = table;
        client
            .select(sql, None, &[table_arg.into()])
            .expect("the TTL catalog is readable")
            .map(|row| from_row(&row))
            .flat_map(|index| match scope {
                Scope::Entries => vec![index],
                Scope::Targets => index.parts(),
            })
            .collect()
    })
}
