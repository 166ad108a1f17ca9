//! The catalog of TTL indexes (`ttl_index`, see sql/catalog.sql): loading the TTL indexes of
//! a database as the worker and the API see them ([`TtlIndex`], in [`ttl_index`]), and the
//! lookups of the system catalogs they need. Every name that reaches SQL text is quoted here.

mod ttl_index;
pub use ttl_index::{Part, PartitionMode, RowTtl, TtlIndex};

use crate::extension::Extension;
use jsonb_ttl_core::parse::NumericUnit;
use jsonb_ttl_core::path::{Column, ColumnKind, Resolved};
use pgrx::datum::Interval;
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use pgrx::spi::quote_identifier;

/// What a column of type `type_oid` can be to a TTL index.
pub fn kind_of_type(type_oid: Oid) -> ColumnKind {
    match type_oid {
        pg_sys::JSONBOID => ColumnKind::Jsonb,
        pg_sys::JSONOID => ColumnKind::Json,
        pg_sys::TEXTOID | pg_sys::VARCHAROID | pg_sys::BPCHAROID => ColumnKind::Text,
        pg_sys::TIMESTAMPTZOID => ColumnKind::Timestamptz,
        pg_sys::TIMESTAMPOID => ColumnKind::Timestamp,
        pg_sys::DATEOID => ColumnKind::Date,
        pg_sys::INT2OID
        | pg_sys::INT4OID
        | pg_sys::INT8OID
        | pg_sys::NUMERICOID
        | pg_sys::FLOAT4OID
        | pg_sys::FLOAT8OID => ColumnKind::Number,
        _ => ColumnKind::Other,
    }
}

/// The live columns of a table.
pub fn table_columns(table: Oid) -> Vec<Column> {
    Spi::connect(|client| {
        client
            .select(
                "SELECT attname::pg_catalog.text, atttypid, \
                        pg_catalog.format_type(atttypid, atttypmod) \
                 FROM pg_catalog.pg_attribute \
                 WHERE attrelid OPERATOR(pg_catalog.=) $1 AND attnum OPERATOR(pg_catalog.>) 0 \
                   AND NOT attisdropped ORDER BY attnum",
                None,
                &[table.into()],
            )
            .expect("pg_attribute is readable")
            .map(|row| Column {
                name: row.get::<String>(1).ok().flatten().unwrap_or_default(),
                kind: kind_of_type(row.get::<Oid>(2).ok().flatten().unwrap_or_default()),
                type_name: row.get::<String>(3).ok().flatten().unwrap_or_default(),
            })
            .collect()
    })
}

/// `index` with the names its table and column have now, from the system caches; `None` when
/// the table is gone. Called holding a lock on the table, so that a concurrent ALTER TABLE …
/// RENAME (or SET SCHEMA, RENAME COLUMN) either committed before, and shows here, or waits.
pub fn with_current_names(index: &TtlIndex) -> Option<TtlIndex> {
    let text = |name: *mut std::ffi::c_char| {
        (!name.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy())
    };
    unsafe {
        let table = text(pg_sys::get_rel_name(index.table))?;
        let schema = text(pg_sys::get_namespace_name(pg_sys::get_rel_namespace(
            index.table,
        )))?;
        let mut current = index.clone();
        current.qualified_table = format!(
            "{}.{}",
            quote_identifier(schema.as_ref()),
            quote_identifier(table.as_ref())
        );
        if index.attnum > 0 {
            if let Some(column) = text(pg_sys::get_attname(index.table, index.attnum, true)) {
                current.resolved.column = column.into_owned();
            }
        }
        Some(current)
    }
}

/// Whether `table` is (still) a partition, at any depth, of `root`.
pub fn is_partition_of(table: Oid, root: Oid) -> bool {
    Spi::get_one_with_args::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_partition_ancestors($1) a \
                        WHERE a.relid::pg_catalog.oid OPERATOR(pg_catalog.=) $2)",
        &[table.into(), root.into()],
    )
    .ok()
    .flatten()
    .unwrap_or(false)
}

/// What to load from the catalog.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The catalog rows as they are: one per TTL index, keyed by the table it was created on.
    Entries,
    /// The tables rows are deleted from: a plain table stands for itself, a partitioned table
    /// for each of its leaf partitions (ctid is unique only within one); each twice with a
    /// per-row TTL field (see [`Part`]).
    Targets,
}

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

/// Whether the time of day now, in the zone `zone` (UTC when NULL), is inside the delete window
/// from `start` to `end` (SQL expressions of text; no window when either is NULL: always). As
/// `jsonb_ttl_internal._ttl_in_window` in sql/api.sql, which a catalog from before 0.3.0 does
/// not have. The load query below reads the catalog row's; the worker, which keeps the targets
/// across passes, evaluates it again each pass ([`in_window`]).
fn in_window_sql(start: &str, end: &str, zone: &str) -> String {
    format!(
        "(SELECT CASE WHEN w.s IS NULL OR w.e IS NULL THEN true \
          WHEN w.s OPERATOR(pg_catalog.<) w.e \
          THEN w.l OPERATOR(pg_catalog.>=) w.s AND w.l OPERATOR(pg_catalog.<) w.e \
          ELSE w.l OPERATOR(pg_catalog.>=) w.s OR w.l OPERATOR(pg_catalog.<) w.e END \
   FROM (SELECT ({start})::pg_catalog.time AS s, ({end})::pg_catalog.time AS e, \
                pg_catalog.timezone(coalesce({zone}, 'UTC'::pg_catalog.text), \
                                    pg_catalog.now())::pg_catalog.time AS l) w)"
    )
}

/// Whether now is inside the delete window of `index` (see [`in_window_sql`]), evaluated now
/// (read-only); an error when the window cannot be read, as the load query would raise.
pub fn in_window(index: &TtlIndex) -> Result<bool, pgrx::spi::SpiError> {
    let (Some(start), Some(end)) = (&index.window_start, &index.window_end) else {
        return Ok(true);
    };
    let sql = format!(
        "SELECT {}",
        in_window_sql(
            "$1::pg_catalog.text",
            "$2::pg_catalog.text",
            "$3::pg_catalog.text"
        )
    );
    crate::read::one_checked::<bool>(
        &sql,
        &[
            start.as_str().into(),
            end.as_str().into(),
            index.time_zone.clone().into(),
        ],
    )
    .map(|inside| inside.unwrap_or(true))
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
fn targets_sql(ext: &Extension, scope: Scope, citus: bool) -> String {
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

/// The catalog row's version (`xmin:ctid`): any change of its definition (an alter, a pause,
/// a resume, the brake's own) writes a new one. A batch runs only under the version its
/// statements were built from (see [`definition_lock_sql`]).
const VERSION_SQL: &str = "t.xmin::pg_catalog.text OPERATOR(pg_catalog.||) ':' \
     OPERATOR(pg_catalog.||) t.ctid::pg_catalog.text";

/// Locks the catalog row of a TTL index (`$1`: the table it was created on) against changes
/// until the transaction ends, and returns its `expire_after` and version (see
/// [`VERSION_SQL`]); no row while a change of it is under way (`SKIP LOCKED`: the batch does
/// not wait for it) or when it is gone. A `ttl_index_alter` or `ttl_index_pause` either
/// committed before, and shows here as a new version, or waits for the batch to end.
pub fn definition_lock_sql(ext: &Extension) -> String {
    format!(
        "SELECT t.expire_after, {VERSION_SQL} FROM {ext}.ttl_index t \
         WHERE t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 FOR SHARE SKIP LOCKED"
    )
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
    let ready = index_ready_sql("t.index_name::pg_catalog.text");
    let in_window = in_window_sql(
        &text("delete_window_start"),
        &text("delete_window_end"),
        &text("time_zone"),
    );
    let index_oid = recorded_index_sql(ext, "index_name");
    let row_index_oid = recorded_index_sql(ext, "row_ttl_index_name");
    let row_ready = index_ready_sql(&text("row_ttl_index_name"));
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
                {window_start}, {window_end}, {VERSION_SQL}",
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
    )
}

/// The query of [`load`] (`$1`: the table, or NULL for all): one row per target of `scope`,
/// in the columns [`from_row`] reads.
fn load_sql(ext: &Extension, scope: Scope, citus: bool) -> String {
    let target = targets_sql(ext, scope, citus);
    let has = catalog_columns(ext);
    let columns = columns_sql(ext, &|name| has.contains(name));
    format!(
        "SELECT {columns} \
         FROM {ext}.ttl_index t \
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
         ORDER BY t.table_oid::pg_catalog.oid, l.relid"
    )
}

/// One row of [`load_sql`] as a TTL index (its `part` [`Part::Whole`]).
fn from_row(row: &pgrx::spi::SpiHeapTupleData) -> TtlIndex {
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
    }
}

/// Loads the TTL index of `table` (the table it was created on), or all of them. Under Citus,
/// the targets of a hash-distributed table are the shards this node holds (see
/// [`crate::citus`]), which only a session that asks may see in `pg_class`.
pub fn load(ext: &Extension, table: Option<Oid>, scope: Scope) -> Vec<TtlIndex> {
    let citus = crate::citus::present();
    let sql = load_sql(ext, scope, citus);
    let settings: &[_] = match citus {
        true => &crate::citus::SHOW_SHARDS,
        false => &[],
    };
    crate::gucs::with_settings(settings, || load_rows(&sql, table, scope))
}

fn load_rows(sql: &str, table: Option<Oid>, scope: Scope) -> Vec<TtlIndex> {
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

/// Whether `pg_restore` is connected to this database (its sessions' `application_name`), as
/// a superuser or the database's owner (who else may restore a database; anyone can name a
/// session `pg_restore`, and no tenant may stop the purge of a database that way): while it
/// is, a restore may be half done — TTL catalog rows restored before their indexes, expired
/// rows before the foreign keys that reference them — and the worker waits.
pub fn restore_in_progress() -> bool {
    // read-only (crate::read): pgrx's Spi::get_one assigns a transaction ID, and each idle pass
    // then wrote a commit record, enough to keep a delayed standby's replay lag up
    crate::read::one::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_stat_activity a \
         JOIN pg_catalog.pg_database d ON d.oid OPERATOR(pg_catalog.=) a.datid \
         JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.usesysid \
         WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database() \
           AND a.application_name OPERATOR(pg_catalog.=) 'pg_restore'::pg_catalog.text \
           AND (r.rolsuper OR r.oid OPERATOR(pg_catalog.=) d.datdba))",
        &[],
    )
    .unwrap_or(false)
}
