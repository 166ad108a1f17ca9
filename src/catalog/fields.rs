//! The rows of field TTLs (`jsonb_ttl_internal.ttl_field`, see [`crate::field`]) as targets:
//! one per field TTL and table its documents are changed in. Their indexes are found by what
//! they are, above the catalog ([`crate::tracking::field_targets`]).

use super::{FieldTtl, Part, Scope, TtlIndex};
use crate::extension::{Extension, INTERNAL_SCHEMA as INTERNAL};
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;

pub use crate::stats::MAX_FIELDS;

/// Whether this database's catalog has field TTLs (0.4.0's SQL and later).
pub fn fields_available() -> bool {
    crate::read::one::<bool>(
        &format!("SELECT pg_catalog.to_regclass('{INTERNAL}.ttl_field') IS NOT NULL"),
        &[],
    )
    .unwrap_or(false)
}

/// The field TTLs of `table` (the table they were created on), or of every table: one target
/// per field TTL and table rows are changed in (the table, or each leaf partition), their
/// index unread. Under Citus, none of a Citus table (refused at creation; one distributed
/// since is left alone). Empty when the catalog has no field TTLs (older SQL).
pub fn load_fields(ext: &Extension, table: Option<Oid>) -> Vec<TtlIndex> {
    if !fields_available() {
        return Vec::new();
    }
    super::counted();
    let targets = super::targets_sql(ext, Scope::Targets, false);
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
    Spi::connect(|client| {
        client
            .select(&sql, None, &[table.into()])
            .expect("the field TTL catalog is readable")
            .map(|row| from_row(&row))
            .filter(|target: &TtlIndex| !crate::citus::citus_table(target.root))
            .collect()
    })
}

/// One row of [`load_fields`]'s query as a target: the columns every target's row starts with
/// ([`super::target_of_row`]), and the field TTL's own. Not for fields: the safety brake
/// (it guards rows, docs/field_ttl.md), the TTL index's options and controls.
fn from_row(row: &pgrx::spi::SpiHeapTupleData) -> TtlIndex {
    let id = row.get::<i16>(15).ok().flatten().unwrap_or(0);
    TtlIndex {
        part: Part::Field(id),
        version: row.get::<String>(17).ok().flatten().unwrap_or_default(),
        field: Some(FieldTtl {
            id,
            remove: row
                .get::<Vec<String>>(16)
                .ok()
                .flatten()
                .unwrap_or_default(),
            busy: false,
        }),
        ..super::target_of_row(row)
    }
}
