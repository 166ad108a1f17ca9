//! The SQL functions of field TTLs (sql/api.sql wraps them): `ttl_field_create`,
//! `ttl_field_alter`, `ttl_field_drop`, `ttl_field_expire_now`. For the table's owner; the
//! catalog is written as the catalog's owner.

use crate::build::{build_index, choose_index_name, matching_index};
use crate::catalog::MAX_FIELDS;
use crate::error::raise;
use crate::extension::{Extension, INTERNAL_SCHEMA as INTERNAL};
use crate::field_dates::{dates_and_removals, related, removes_date, serialize_dates};
use crate::functions::numeric_unit_arg;
use crate::owner;
use crate::reference::field_index_expressions as index_expressions;
use crate::spec::{check_expire_after, resolve_path};
use crate::table::{existing, owned_table, required, Table};
use crate::tracking::field_index_on as index_on;
use jsonb_ttl_core::parse::NumericUnit;
use jsonb_ttl_core::path::{ColumnKind, Resolved};
use pgrx::datum::Interval;
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;
use pgrx::spi::quote_literal;
use pgrx::PgSqlErrorCode;

const PATH_HINT: &str = "A field TTL's path names a date inside a jsonb column (a string, or a \
     number of seconds since 1970), such as 'otp.issuedAt'.";
const REMOVE_HINT: &str = "remove names the date itself or an object that holds it (by default \
     the object that holds it, or the date when it is a top-level key), in the same column.";

/// `ttl_field_create(tbl, path, expire_after, remove, numeric_unit)`: `false` when the table
/// has this very field TTL already.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_field_create",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_field_create(
    tbl: Option<Oid>,
    path: Option<&str>,
    expire_after: Option<Interval>,
    remove: Option<&str>,
    numeric_unit: Option<&str>,
) -> bool {
    let ext = Extension::current();
    let table = owned_table(tbl);
    let path = required(path, "path");
    let expire_after = check_expire_after(expire_after);
    let unit = numeric_unit_arg(required(numeric_unit, "numeric_unit"));
    refuse_partition(&table);
    if crate::citus::citus_table(table.oid) {
        raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!(
                "{} is a Citus table: field TTLs are not distributed",
                table.name
            ),
            "Give the field TTL to a table that is not distributed, or remove the field yourself.",
        );
    }
    let date = date_path(&table, path);
    let removed = remove_path(&table, &date, remove);
    guard_row_ttl(&ext, &table, &date.column, &removed);
    if let Some((same_expire, keys, unit_name)) = find(&table, &date, expire_after) {
        if same_expire && keys == removed && unit_name == unit.name() {
            return false;
        }
        raise(
            PgSqlErrorCode::ERRCODE_DUPLICATE_OBJECT,
            format!(
                "table {} has a field TTL on {} already, with another definition",
                table.name,
                quote_literal(path)
            ),
            "ttl_field_alter() changes its expire_after; drop it with ttl_field_drop() to change the rest.",
        );
    }
    let index_name = build_or_adopt(&ext, &table, &date, unit);
    record(
        &ext,
        &table,
        path,
        &date,
        &removed,
        expire_after,
        unit,
        index_name,
    );
    crate::advise::on_field(&ext, &table, path, &date, unit);
    true
}

/// The index of a new field TTL on `date`: a valid one that is exactly it, adopted, or one
/// built now (`CREATE INDEX`, as the caller, who owns the table); its name.
fn build_or_adopt(ext: &Extension, table: &Table, date: &Resolved, unit: NumericUnit) -> String {
    let (expression, predicate) =
        index_expressions(ext, date, unit).unwrap_or_else(|e| error!("jsonb_ttl: {e}"));
    match matching_index(table.oid, &expression, &predicate, None) {
        Some((_, adopted)) => {
            notice!("jsonb_ttl: index {adopted} is the index of this field TTL: adopted, not built again");
            adopted
        }
        None => {
            let name = choose_index_name(table, "_ttl_field_idx", &[]);
            build_index(table, &name, &expression, &predicate);
            name
        }
    }
}

/// Inserts the catalog row of a new field TTL, as the catalog's owner, under the next free
/// number (the one after the highest, so a number dropped last is reused last).
#[allow(clippy::too_many_arguments)]
fn record(
    ext: &Extension,
    table: &Table,
    path: &str,
    date: &Resolved,
    removed: &[String],
    expire_after: Interval,
    unit: NumericUnit,
    index_name: String,
) {
    let remove_text = removed.join(".");
    owner::as_catalog_owner(ext.owner(), || {
        Spi::run_with_args(
            &format!(
                "INSERT INTO {INTERNAL}.ttl_field (table_oid, field_id, path, column_name, json_path, \
                   remove, remove_path, expire_after, numeric_unit, index_name) \
                 SELECT $1, CASE WHEN m.id OPERATOR(pg_catalog.<) {MAX_FIELDS} THEN m.id OPERATOR(pg_catalog.+) 1 \
                        ELSE (SELECT pg_catalog.min(n) FROM pg_catalog.generate_series(1, {MAX_FIELDS}) n \
                              WHERE NOT EXISTS (SELECT FROM {INTERNAL}.ttl_field f \
                                                WHERE f.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
                                                  AND f.field_id OPERATOR(pg_catalog.=) n)) END, \
                        $2, $3, $4, $5, $6, $7, $8, $9 \
                 FROM (SELECT coalesce(pg_catalog.max(f.field_id), 0::pg_catalog.int2) AS id \
                       FROM {INTERNAL}.ttl_field f \
                       WHERE f.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1) m"
            ),
            &[
                table.oid.into(),
                path.into(),
                date.column.clone().into(),
                date.json_path.clone().into(),
                remove_text.into(),
                removed.to_vec().into(),
                expire_after.into(),
                unit.name().into(),
                index_name.into(),
            ],
        )
    })
    .unwrap_or_else(|e| match e.to_string().contains("field_id") {
        true => raise(
            PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            format!("table {} has {MAX_FIELDS} field TTLs already", table.name),
            "Drop one with ttl_field_drop() first.",
        ),
        false => error!("jsonb_ttl: cannot record the field TTL: {e}"),
    });
}

/// `ttl_field_alter(tbl, path, expire_after)`: a new `expire_after` for the field TTL on
/// `path`. Waits for a batch of the worker under way on it (which holds its catalog row).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_field_alter",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_field_alter(tbl: Option<Oid>, path: Option<&str>, expire_after: Option<Interval>) {
    let ext = Extension::current();
    let table = owned_table(tbl);
    let path = required(path, "path");
    let expire_after = check_expire_after(expire_after);
    let date = field_key(&table, path);
    let changed = owner::as_catalog_owner(ext.owner(), || {
        Spi::get_one_with_args::<bool>(
            &format!(
                "WITH changed AS (UPDATE {INTERNAL}.ttl_field SET expire_after = $4 \
                   WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
                     AND column_name OPERATOR(pg_catalog.=) $2::pg_catalog.name \
                     AND json_path OPERATOR(pg_catalog.=) $3 RETURNING 1) \
                 SELECT EXISTS (SELECT FROM changed)"
            ),
            &[
                table.oid.into(),
                date.column.clone().into(),
                date.json_path.clone().into(),
                expire_after.into(),
            ],
        )
    })
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot change the field TTL: {e}"));
    if changed != Some(true) {
        no_field(&table, path);
    }
}

/// `ttl_field_drop(tbl, path)`: drops the field TTL on `path` and its index. Waits for a batch
/// of the worker under way on it.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_field_drop",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_field_drop(tbl: Option<Oid>, path: Option<&str>) -> bool {
    let ext = Extension::current();
    let table = owned_table(tbl);
    let path = required(path, "path");
    let date = field_key(&table, path);
    let gone = owner::as_catalog_owner(ext.owner(), || {
        Spi::connect_mut(|client| {
            let rows = client.update(
                &format!(
                    "DELETE FROM {INTERNAL}.ttl_field \
                     WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
                       AND column_name OPERATOR(pg_catalog.=) $2::pg_catalog.name \
                       AND json_path OPERATOR(pg_catalog.=) $3 \
                     RETURNING index_name::pg_catalog.text, numeric_unit"
                ),
                None,
                &[
                    table.oid.into(),
                    date.column.clone().into(),
                    date.json_path.clone().into(),
                ],
            )?;
            match rows.is_empty() {
                true => Ok(None),
                false => rows.first().get_two::<String, String>().map(Some),
            }
        })
    })
    .unwrap_or_else(|e: pgrx::spi::SpiError| error!("jsonb_ttl: cannot drop the field TTL: {e}"));
    let Some((Some(index_name), Some(unit))) = gone else {
        no_field(&table, path);
    };
    let unit = numeric_unit_arg(&unit);
    // its index, found by what it is; never the table's TTL index (refused at creation). A
    // column dropped took the index with it; one retyped rebuilt it on an expression no
    // longer this one's.
    let column_there = crate::catalog::table_columns(table.oid)
        .iter()
        .any(|c| c.name == date.column && c.kind == ColumnKind::Jsonb);
    if let Some((expression, predicate)) = index_expressions(&ext, &date, unit)
        .ok()
        .filter(|_| column_there)
    {
        let row_ttl = existing(&ext, &table);
        if let Some(index) = index_on(table.oid, &expression, &predicate, &index_name) {
            let theirs = row_ttl.is_some_and(|ttl| {
                crate::tracking::recorded_index(&ext, ttl.root, "index_name") == Some(index)
                    || crate::tracking::recorded_index(&ext, ttl.root, "row_ttl_index_name")
                        == Some(index)
            });
            if !theirs {
                crate::tracking::drop_index_of(table.oid, index);
            }
        }
    }
    true
}

/// `ttl_field_expire_now(tbl, path, max_rows)`: removes the expired field of the field TTL on
/// `path` from up to `max_rows` documents now, in the caller's transaction, as the table's
/// owner, with the worker's statements (see [`crate::expire_now`]); the documents
/// changed.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_field_expire_now",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_field_expire_now(tbl: Option<Oid>, path: Option<&str>, max_rows: Option<i64>) -> i64 {
    let max_rows = crate::expire_now::max_rows_arg(max_rows);
    let ext = Extension::current();
    let table = owned_table(tbl);
    let path = required(path, "path");
    let date = field_key(&table, path);
    let targets: Vec<_> = crate::tracking::field_targets(&ext, Some(table.oid), true)
        .0
        .into_iter()
        .filter(|target| {
            target.resolved.column == date.column && target.resolved.json_path == date.json_path
        })
        .collect();
    if targets.is_empty() {
        no_field(&table, path);
    }
    let mut targets = targets;
    let ttl_targets = crate::catalog::load(&ext, None, crate::catalog::Scope::Targets);
    crate::field_dates::guard_targets(&mut targets, &ttl_targets);
    crate::expire_now::expire_targets(&ext, &targets, max_rows)
}

/// The field TTL of `table` that `path` names, as its column and keys: the one created with
/// that very `path` text first (its column may be gone, or another jsonb column now take an
/// unqualified path), else `path` resolved in the table as it is now.
fn field_key(table: &Table, path: &str) -> Resolved {
    let stored = Spi::get_two_with_args::<String, Vec<String>>(
        &format!(
            "SELECT column_name::pg_catalog.text, json_path FROM {INTERNAL}.ttl_field \
             WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
               AND path OPERATOR(pg_catalog.=) $2"
        ),
        &[table.oid.into(), path.into()],
    );
    match stored {
        Ok((Some(column), Some(json_path))) => Resolved {
            column,
            kind: ColumnKind::Jsonb,
            json_path,
        },
        _ => date_path(table, path),
    }
}

/// Refuses a field TTL on a partition: the partitioned table's field TTLs cover its partitions
/// (one field TTL per document, whichever table it was created on).
fn refuse_partition(table: &Table) {
    let parent = Spi::get_one_with_args::<String>(
        "SELECT i.inhparent::pg_catalog.regclass::pg_catalog.text FROM pg_catalog.pg_inherits i \
         JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.inhrelid \
         WHERE i.inhrelid OPERATOR(pg_catalog.=) $1 AND c.relispartition",
        &[table.oid.into()],
    )
    .ok()
    .flatten();
    if let Some(parent) = parent {
        raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("{} is a partition of {parent}", table.name),
            format!("Create the field TTL on {parent}: it covers every partition."),
        );
    }
}

/// The date of a field TTL: `path` resolved in `table`, inside a jsonb column.
fn date_path(table: &Table, path: &str) -> Resolved {
    let resolved = resolve_path(table, path);
    if resolved.kind != ColumnKind::Jsonb || resolved.json_path.is_empty() {
        raise(
            PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
            format!(
                "path {} does not lead inside a jsonb column",
                quote_literal(path)
            ),
            PATH_HINT,
        );
    }
    resolved
}

/// The keys a field TTL removes: `remove` resolved in `table` (the date itself or an object
/// that holds it, in its column), or by default the object that holds the date (the date
/// itself when it is a top-level key).
fn remove_path(table: &Table, date: &Resolved, remove: Option<&str>) -> Vec<String> {
    let Some(remove) = remove else {
        let keys = &date.json_path;
        return match keys.len() {
            1 => keys.clone(),
            n => keys[..n - 1].to_vec(),
        };
    };
    let removed = resolve_path(table, remove);
    let holds = removed.column == date.column
        && !removed.json_path.is_empty()
        && date.json_path.starts_with(&removed.json_path);
    if !holds {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!(
                "remove {} neither is the date nor holds it",
                quote_literal(remove)
            ),
            REMOVE_HINT,
        );
    }
    removed.json_path
}

/// Refuses a field TTL whose removal would take away the point in time (or the per-row TTL
/// field) of a TTL index of the rows of `table` (its own, its ancestors', its partitions'), or
/// whose date is that point in time: rows would fall back to expire_after, or never expire.
/// The changes of the tree's dates are serialized first, and the TTL indexes read after, under
/// a snapshot taken then (see [`super::refuse_removing`], the other side).
fn guard_row_ttl(ext: &Extension, table: &Table, column: &str, removed: &[String]) {
    serialize_dates(table.oid);
    let (dates, _) = dates_and_removals(ext, &related(table.oid));
    if dates.iter().any(|date| removes_date(column, removed, date)) {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!(
                "removing {} would remove the point in time of the TTL index of {}",
                quote_literal(removed.join(".")),
                table.name
            ),
            "A field TTL may not remove the date its table's rows expire by: choose a field \
             beside it.",
        );
    }
}

/// The field TTL of `table` on `date`, if any: whether its expire_after is `expire_after`, the
/// keys it removes and its numeric unit.
fn find(
    table: &Table,
    date: &Resolved,
    expire_after: Interval,
) -> Option<(bool, Vec<String>, String)> {
    Spi::get_three_with_args::<bool, Vec<String>, String>(
        &format!(
            "SELECT expire_after OPERATOR(pg_catalog.=) $4, remove_path, numeric_unit \
             FROM {INTERNAL}.ttl_field \
             WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
               AND column_name OPERATOR(pg_catalog.=) $2::pg_catalog.name \
               AND json_path OPERATOR(pg_catalog.=) $3"
        ),
        &[
            table.oid.into(),
            date.column.clone().into(),
            date.json_path.clone().into(),
            expire_after.into(),
        ],
    )
    .ok()
    .and_then(|(expire, keys, unit)| Some((expire?, keys?, unit?)))
}

fn no_field(table: &Table, path: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
        format!(
            "table {} has no field TTL on {}",
            table.name,
            quote_literal(path)
        ),
        "ttl_indexes lists the field TTLs (the rows whose removes is not NULL).",
    )
}
