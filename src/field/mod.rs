//! Field TTLs: a point in time inside a JSON document whose expiry removes a subtree of the
//! document (`doc #- '{otp}'`) instead of the row (docs/field_ttl.md). One-time codes,
//! reset tokens, temporary flags: the document stays, the field goes.
//!
//! A field TTL is a row of `jsonb_ttl_internal.ttl_field` (its table, its date's path, the
//! keys it removes, `expire_after`) and a btree index on the date, like a TTL index's, partial
//! on the date being there. The worker purges it as one more target of its table
//! ([`catalog::Part::Field`]) with the same batches, limits, frame and owner as rows, its
//! statements an `UPDATE` in place of the `DELETE` ([`TtlIndex::removal`]): removing the
//! subtree removes the date, so an updated document leaves the index and is never taken again.
//! Its index is found by what it is (its expression and predicate on each table the batches
//! change), never by name alone ([`index_on`]).
//!
//! [`api`] has the SQL functions (`ttl_field_create`, `ttl_field_alter`, `ttl_field_drop`).

pub mod api;

use crate::catalog::{self, FieldTtl, Part, TtlIndex};
use crate::extension::{Extension, INTERNAL_SCHEMA as INTERNAL};
use crate::reference;
use jsonb_ttl_core::parse::NumericUnit;
use jsonb_ttl_core::path::Resolved;
use pgrx::datum::Interval;
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;
use pgrx::spi::{quote_identifier, quote_literal};

/// The most field TTLs one table may have (each counts in a part of the table's statistics).
pub const MAX_FIELDS: i16 = 200;

/// `UPDATE ONLY table SET column = column #- '{keys}'`: the head of a field TTL's statements
/// (see [`TtlIndex::removal`]), every name quoted, the operator qualified.
pub fn update_head(qualified_table: &str, column: &str, remove: &[String]) -> String {
    let column = quote_identifier(column);
    let keys: Vec<String> = remove.iter().map(|key| quote_literal(key)).collect();
    format!(
        "UPDATE ONLY {qualified_table} SET {column} = {column} OPERATOR(pg_catalog.#-) \
         ARRAY[{}]::pg_catalog.text[]",
        keys.join(", ")
    )
}

/// Whether this database's catalog has field TTLs (0.4.0's SQL and later).
pub fn available() -> bool {
    crate::read::one::<bool>(
        &format!("SELECT pg_catalog.to_regclass('{INTERNAL}.ttl_field') IS NOT NULL"),
        &[],
    )
    .unwrap_or(false)
}

/// The reference expression of a field TTL (its date, read in UTC) and its index's predicate.
pub fn index_expressions(
    ext: &Extension,
    resolved: &Resolved,
    unit: NumericUnit,
) -> Result<(String, String), String> {
    let expression = reference::reference_expr(ext, resolved, unit, None)?;
    let predicate = reference::index_predicate(&expression, None);
    Ok((expression, predicate))
}

/// The valid, ready index of `table` that is the index of a field TTL with these expressions,
/// by what it is ([`crate::build::matching_index`]): the one named `name` first, else the
/// lowest OID.
pub fn index_on(table: Oid, expression: &str, predicate: &str, name: &str) -> Option<Oid> {
    crate::build::matching_index(table, expression, predicate, Some(name)).map(|(oid, _)| oid)
}

/// The version of a field TTL's catalog row (`xmin:ctid`), as [`catalog::VERSION_SQL`].
const VERSION_SQL: &str = "f.xmin::pg_catalog.text OPERATOR(pg_catalog.||) ':' \
     OPERATOR(pg_catalog.||) f.ctid::pg_catalog.text";

/// The read of a field TTL's definition (`$1` its table, `$2` its number): `expire_after` and
/// version, as [`catalog::definition_sql`] for a TTL index (`locked`: `FOR SHARE SKIP
/// LOCKED`, so `ttl_field_alter` and `ttl_field_drop` wait for the batch that holds it).
pub fn definition_sql(locked: bool) -> String {
    format!(
        "SELECT f.expire_after, {VERSION_SQL} FROM {INTERNAL}.ttl_field f \
         WHERE f.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
           AND f.field_id OPERATOR(pg_catalog.=) $2{}",
        match locked {
            true => " FOR SHARE SKIP LOCKED",
            false => "",
        }
    )
}

/// The field TTLs of `table` (the table they were created on), or of every table, as the
/// worker's targets: one per field TTL and table rows are changed in (the table, or each leaf
/// partition). Under Citus, none of a Citus table (refused at creation; one distributed since
/// is left alone).
pub fn load(ext: &Extension, table: Option<Oid>) -> Vec<TtlIndex> {
    if !available() {
        return Vec::new();
    }
    let targets = catalog::targets_sql(ext, catalog::Scope::Targets, false);
    let sql = format!(
        "SELECT l.relid, \
                pg_catalog.quote_ident(n.nspname::pg_catalog.text) OPERATOR(pg_catalog.||) '.' \
                  OPERATOR(pg_catalog.||) pg_catalog.quote_ident(c.relname::pg_catalog.text), \
                l.relid::pg_catalog.regclass::pg_catalog.text, c.relowner, \
                t.column_name::pg_catalog.text, a.atttypid, t.json_path, t.path, \
                t.expire_after, t.numeric_unit, t.index_name::pg_catalog.text, \
                t.table_oid::pg_catalog.oid, coalesce(a.attnum, 0::pg_catalog.int2), \
                c.relkind::pg_catalog.text, t.field_id, t.remove_path, \
                t.xmin::pg_catalog.text OPERATOR(pg_catalog.||) ':' \
                  OPERATOR(pg_catalog.||) t.ctid::pg_catalog.text \
         FROM {INTERNAL}.ttl_field t \
         CROSS JOIN LATERAL {targets} l \
         JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) l.relid \
         JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
         LEFT JOIN LATERAL (SELECT a.atttypid, a.attnum FROM pg_catalog.pg_attribute a \
                WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid \
                  AND a.attname OPERATOR(pg_catalog.=) t.column_name AND NOT a.attisdropped \
                OFFSET 0) a ON true \
         WHERE $1 IS NULL OR t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
         ORDER BY t.table_oid::pg_catalog.oid, t.field_id, l.relid"
    );
    let rows: Vec<TtlIndex> = Spi::connect(|client| {
        client
            .select(&sql, None, &[table.into()])
            .expect("the field TTL catalog is readable")
            .map(|row| from_row(&row))
            .collect()
    });
    rows.into_iter()
        .filter(|target| !crate::citus::citus_table(target.root))
        .map(|mut target| {
            target.index_oid = index_expressions(ext, &target.resolved, target.unit)
                .ok()
                .and_then(|(expression, predicate)| {
                    index_on(target.table, &expression, &predicate, &target.index_name)
                });
            target.index_ready = target.index_oid.is_some();
            target
        })
        .collect()
}

/// One row of [`load`]'s query as a target.
fn from_row(row: &pgrx::spi::SpiHeapTupleData) -> TtlIndex {
    let text = |i| row.get::<String>(i).ok().flatten().unwrap_or_default();
    let oid = |i| row.get::<Oid>(i).ok().flatten().unwrap_or_default();
    let id = row.get::<i16>(15).ok().flatten().unwrap_or(0);
    TtlIndex {
        table: oid(1),
        qualified_table: text(2),
        display_name: text(3),
        owner: oid(4),
        resolved: Resolved {
            column: text(5),
            kind: catalog::kind_of_type(oid(6)),
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
        // the safety brake guards rows (docs/field_ttl.md): a field TTL removes a subtree
        brake_available: false,
        filter_sql: None,
        touch: false,
        hide_expired: false,
        hide_enabled_row_security: false,
        row_ttl: None,
        part: Part::Field(id),
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
        version: text(17),
        archive_to: None,
        archive: None,
        field: Some(FieldTtl {
            id,
            remove: row.get::<Vec<String>>(16).ok().flatten().unwrap_or_default(),
        }),
    }
}
