//! Field TTLs against the dates TTL indexes expire rows by: what a field TTL removes must never
//! hold the point in time (or per-row TTL field) of a TTL index of the same rows. Checked from
//! both sides at creation, serialized over the partition tree ([`serialize_dates`]), and again
//! by the worker as it reads its targets ([`guard_targets`]) and in each batch of a partition
//! ([`removes_a_ttl_date`]).

use crate::catalog::TtlIndex;
use crate::extension::{Extension, INTERNAL_SCHEMA as INTERNAL};
use jsonb_ttl_core::path::Resolved;
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use pgrx::spi::quote_literal;
use pgrx::PgSqlErrorCode;

/// Serializes the changes of the dates of `table`'s partition tree (its TTL indexes' points in
/// time and per-row TTL fields, and what its field TTLs remove) until the transaction ends: a
/// lock on the tree's root as an object of the class `jsonb_ttl_internal.ttl_field`, which no
/// role can take by SQL (an advisory lock anyone could hold, and stall the table's owner).
/// Whoever checks next, checks under a snapshot taken after it ([`related`]).
pub fn serialize_dates(table: Oid) {
    let class = crate::read::one::<Oid>(
        &format!("SELECT pg_catalog.to_regclass('{INTERNAL}.ttl_field')::pg_catalog.oid"),
        &[],
    );
    let root = crate::read::one::<Oid>(
        "SELECT coalesce(pg_catalog.pg_partition_root($1)::pg_catalog.oid, $1)",
        &[table.into()],
    )
    .unwrap_or(table);
    if let Some(class) = class {
        unsafe {
            pg_sys::LockDatabaseObject(class, root, 0, pg_sys::ExclusiveLock as pg_sys::LOCKMODE)
        };
    }
}

/// The tables whose TTL indexes and field TTLs reach the rows of `table`: itself, its
/// partitioned ancestors and its partitions at any depth (a partition attached since may have
/// its own), read under a snapshot taken now.
pub(crate) fn related(table: Oid) -> Vec<Oid> {
    crate::read::under_fresh_snapshot(|| {
        Spi::connect(|client| {
            client
                .select(
                    "SELECT a.relid::pg_catalog.oid FROM pg_catalog.pg_partition_ancestors($1) a \
                     UNION SELECT d.relid::pg_catalog.oid FROM pg_catalog.pg_partition_tree($1) d \
                     UNION SELECT $1",
                    None,
                    &[table.into()],
                )
                .map(|rows| {
                    rows.filter_map(|r| r.get::<Oid>(1).ok().flatten())
                        .collect()
                })
                .unwrap_or_else(|_| vec![table])
        })
    })
}

/// The dates the TTL indexes of `tables` read (each one's point in time, and its per-row TTL
/// field), and what the field TTLs of `tables` remove, as (column, keys), read under a snapshot
/// taken now (after [`serialize_dates`]: under REPEATABLE READ too).
pub(crate) fn dates_and_removals(ext: &Extension, tables: &[Oid]) -> (Vec<Keys>, Vec<Keys>) {
    let read = |sql: String| -> Vec<Keys> {
        Spi::connect(|client| {
            client
                .select(&sql, None, &[tables.to_vec().into()])
                .map(|rows| {
                    rows.filter_map(|row| {
                        Some((
                            row.get::<String>(1).ok()??,
                            row.get::<Vec<String>>(2).ok()??,
                        ))
                    })
                    .collect()
                })
                .unwrap_or_default()
        })
    };
    crate::read::under_fresh_snapshot(|| {
        let dates = read(format!(
            "SELECT t.column_name::pg_catalog.text, t.json_path FROM {catalog} t \
             WHERE t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) \
             UNION ALL \
             SELECT t.row_ttl_column::pg_catalog.text, t.row_ttl_json_path FROM {catalog} t \
             WHERE t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) \
               AND t.row_ttl_column IS NOT NULL",
            catalog = ext.catalog()
        ));
        let removals = match crate::catalog::fields_available() {
            true => read(format!(
                "SELECT f.column_name::pg_catalog.text, f.remove_path FROM {INTERNAL}.ttl_field f \
                 WHERE f.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)"
            )),
            false => Vec::new(),
        };
        (dates, removals)
    })
}

/// A place in a table's documents: a column, and keys inside it.
pub type Keys = (String, Vec<String>);

/// Whether removing `keys` of `column` removes the date at `date` (its column and keys).
pub fn removes_date(column: &str, keys: &[String], date: &Keys) -> bool {
    date.0 == column && !keys.is_empty() && date.1.starts_with(keys)
}

/// Refuses a TTL index (`ttl_index_create`, or `ttl_index_alter` of its path or row_ttl_path)
/// whose point in time or per-row TTL field `dates` lies inside what a field TTL removes from
/// the rows of `table` (its own, its ancestors', its partitions'): its expiry would take away
/// the date rows expire by (a row would fall back to expire_after, or never expire). The
/// changes of the tree's dates are serialized first ([`serialize_dates`]), so a
/// `ttl_field_create` under way either committed before, and is checked here, or checks this
/// TTL index after (see `api`'s `guard_row_ttl`). The worker checks again as it loads its
/// targets ([`guard_targets`]).
pub fn refuse_removing(ext: &Extension, table: Oid, name: &str, dates: &[&Resolved]) {
    if !crate::catalog::fields_available() {
        return;
    }
    serialize_dates(table);
    let (_, removals) = dates_and_removals(ext, &related(table));
    for date in dates {
        let date = (date.column.clone(), date.json_path.clone());
        if let Some((_, keys)) = removals
            .iter()
            .find(|(column, keys)| removes_date(column, keys, &date))
        {
            crate::error::raise(
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!(
                    "a field TTL of {name} removes {}, which holds this point in time",
                    quote_literal(keys.join("."))
                ),
                "Rows would lose the date they expire by: drop that field TTL with \
                 ttl_field_drop() first, or choose a date outside what it removes.",
            );
        }
    }
}

/// Leaves out of `fields` (field TTL targets; not ready, so no batch) each one that would remove
/// the point in time or the per-row TTL field a TTL index of the same table (`ttl_targets`)
/// reads: refused at creation either way, but a partition attached since may bring them
/// together. A premature delete is the worst a TTL system can do; a field kept is not.
pub fn guard_targets(fields: &mut [TtlIndex], ttl_targets: &[TtlIndex]) {
    for field in fields.iter_mut() {
        let Some(keys) = field.field.as_ref().map(|f| f.remove.clone()) else {
            continue;
        };
        let clash = ttl_targets
            .iter()
            .filter(|ttl| ttl.table == field.table && ttl.field.is_none())
            .flat_map(|ttl| {
                std::iter::once(&ttl.resolved).chain(ttl.row_ttl.as_ref().map(|r| &r.resolved))
            })
            .any(|date| {
                removes_date(
                    &field.resolved.column,
                    &keys,
                    &(date.column.clone(), date.json_path.clone()),
                )
            });
        if clash {
            field.index_ready = false;
            field.index_oid = None;
        }
    }
}

/// Whether the field TTL target `field` would remove the point in time or the per-row TTL field
/// of a TTL index of its table (its own, an ancestor's, a partition's), read now: checked by
/// each of its batches once the table is locked ([`crate::worker`]'s frame), since a partition
/// attached after the targets were read brings them together.
///
/// Only a partition can be brought together so (a TTL index of the field TTL's own table is
/// refused either way at creation, serialized): the common case, a table that is no partition,
/// is told from the relation cache, without a query.
pub fn removes_a_ttl_date(ext: &Extension, field: &TtlIndex) -> bool {
    let Some(removed) = field.field.as_ref() else {
        return false;
    };
    if !unsafe { pg_sys::get_rel_relispartition(field.table) } {
        return false;
    }
    let (dates, _) = dates_and_removals(ext, &related(field.table));
    dates
        .iter()
        .any(|date| removes_date(&field.resolved.column, &removed.remove, date))
}
