//! The catalog of TTL indexes (`ttl_index` and `ttl_field`, see sql/catalog.sql), as data:
//! loading the TTL indexes and field TTLs of a database as the worker and the API see them
//! ([`TtlIndex`], in [`ttl_index`]; [`load`], [`load_fields`]), the one read of a definition
//! ([`read_definition`]), and the lookups of the system catalogs they need. It knows nothing of
//! statements, archives or filters' SQL: those are built above it, in [`crate::deleter`].

mod load;
pub(crate) use load::{target_of_row, targets_sql};
mod definition;
mod ttl_index;
pub use definition::{
    definition_holds, definition_sql, read_definition, Definition, Lock, Statement,
};
mod fields;
pub use fields::{fields_available, load_fields, MAX_FIELDS};
pub use ttl_index::{FieldTtl, Part, PartitionMode, RowTtl, TtlIndex};

use crate::extension::Extension;
use jsonb_ttl_core::path::{Column, ColumnKind};
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
    let mut current = index.clone();
    current.qualified_table = qualified_name(index.table)?;
    unsafe {
        if index.attnum > 0 {
            if let Some(column) = text(pg_sys::get_attname(index.table, index.attnum, true)) {
                current.resolved.column = column;
            }
        }
        Some(current)
    }
}

/// `schema.name` of the relation `relation`, both quoted, from the system caches; `None` when
/// it does not exist.
pub fn qualified_name(relation: Oid) -> Option<String> {
    unsafe {
        let name = text(pg_sys::get_rel_name(relation))?;
        let schema = text(pg_sys::get_namespace_name(pg_sys::get_rel_namespace(
            relation,
        )))?;
        Some(format!(
            "{}.{}",
            quote_identifier(&schema),
            quote_identifier(&name)
        ))
    }
}

/// A C string of the system caches as text (`None` for NULL).
fn text(name: *mut std::ffi::c_char) -> Option<String> {
    (!name.is_null()).then(|| {
        unsafe { std::ffi::CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    })
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

/// Whether the time of day now, in the zone `zone` (UTC when NULL), is inside the delete window
/// from `start` to `end` (SQL expressions of text; no window when either is NULL: always). As
/// `jsonb_ttl_internal._ttl_in_window` in sql/api.sql, which a catalog from before 0.3.0 does
/// not have. The load query below reads the catalog row's; the worker, which keeps the targets
/// across passes, evaluates it again each pass ([`in_window`]).
pub(crate) fn in_window_sql(start: &str, end: &str, zone: &str) -> String {
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

/// Loads the TTL index of `table` (the table it was created on), or all of them. Under Citus,
/// the targets of a hash-distributed table are the shards this node holds (see
/// [`crate::citus`]), which only a session that asks may see in `pg_class`.
pub fn load(ext: &Extension, table: Option<Oid>, scope: Scope) -> Vec<TtlIndex> {
    LOADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let citus = crate::citus::present();
    let sql = load::sql(ext, scope, citus);
    let settings: &[_] = match citus {
        true => &crate::citus::SHOW_SHARDS,
        false => &[],
    };
    crate::gucs::with_settings(settings, || load::rows(&sql, table, scope))
}

/// How many times this backend has read the catalog's rows ([`load`], [`load_fields`]): a
/// figure the tests pin (one `ttl_index_create`, one pass of the worker).
static LOADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// See [`LOADS`].
pub fn loads() -> u64 {
    LOADS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Counts a read of the field TTLs' rows ([`load_fields`]).
fn counted() {
    LOADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::loads;
    use pgrx::prelude::*;

    /// One `ttl_index_create` reads the catalog's rows five times: is there an entry already,
    /// the entry as recorded (its index built, recorded, its options installed from that one
    /// read), the ddl_command_end event trigger after CREATE INDEX (which records any index of
    /// a TTL index, ours or a restore's), the held first backlog (after the controls and the
    /// archive are set), and `build_sql` of the result row. A change that adds reads fails here.
    #[pg_test]
    fn ttl_index_create_reads_the_catalog_five_times() {
        Spi::run("CREATE TABLE sessions (id int, doc jsonb)").expect("table made");
        let before = loads();
        Spi::run("SELECT ttl_index_create('sessions', 'expires', interval '1 hour')")
            .expect("created");
        let read = loads() - before;
        assert!(read <= 5, "ttl_index_create read the catalog {read} times");
    }
}
