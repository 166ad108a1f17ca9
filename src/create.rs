//! Creating a TTL index from a validated specification (the catalog row, then the index built
//! or adopted, then its options in place), and dropping one.

use crate::build::{self, build_index, choose_index_name, index_specs};
use crate::catalog::TtlIndex;
use crate::extension::Extension;
use crate::spec::{check_drop_partitions, refuse_duplicate, IndexSpec};
use crate::table::{existing, set_column, ttl_index_of, Table};
use crate::{hide, owner, reference, touch, tracking};
use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;

/// Creates the TTL index `spec` on `table`: `false` when the table has that very one already.
pub(crate) fn create(ext: &Extension, table: &Table, spec: &IndexSpec) -> bool {
    if let Some(current) = existing(ext, table) {
        let differences = spec.differences(&current);
        if differences.is_empty() {
            return false;
        }
        refuse_duplicate(table, &current, &differences);
    }
    let row_ttl = spec.row_ttl.as_ref().map(|(_, field)| field);
    crate::field_dates::refuse_removing(
        ext,
        table.oid,
        &table.name,
        &std::iter::once(&spec.resolved)
            .chain(row_ttl)
            .collect::<Vec<_>>(),
    );
    if spec.drop_partitions.is_some() {
        let reference =
            reference::reference_expr(ext, &spec.resolved, spec.unit, spec.zone.as_deref())
                .unwrap_or_else(|e| error!("jsonb_ttl: {e}"));
        check_drop_partitions(
            table,
            &reference,
            &spec.resolved,
            spec.filter.is_some(),
            spec.row_ttl.is_some(),
        );
    }
    let index_name = choose_index_name(table, "_ttl_idx", &[]);
    let row_ttl_index_name = spec
        .row_ttl
        .as_ref()
        .map(|_| choose_index_name(table, "_row_ttl_idx", std::slice::from_ref(&index_name)));
    record(ext, spec.catalog_row(table, index_name, row_ttl_index_name));
    // the entry as recorded, read once for the steps that follow
    let mut entry = ttl_index_of(ext, table);
    build_or_adopt(ext, table, &mut entry, spec.build);
    tracking::track_entry(ext, &entry);
    if spec.touch {
        touch::install(ext, &entry);
    }
    if spec.hide_expired {
        let enabled_here = hide::install(ext, &entry);
        set_column(ext, table, "hide_enabled_row_security", enabled_here.into());
    }
    if crate::citus::hash_distributed(table.oid) {
        notice!(
            "jsonb_ttl: {} is distributed: each node's worker purges the shards it holds, once \
             the coordinator's worker has handed this TTL index on (at its next pass)",
            table.name
        );
    }
    warn_unless_preloaded();
    crate::advise::on_create(ext, table, spec);
    true
}

/// Inserts the catalog row `columns`, as the catalog's owner.
fn record(ext: &Extension, columns: Vec<(&str, pgrx::datum::DatumWithOid)>) {
    let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
    let values: Vec<String> = (1..=columns.len()).map(|n| format!("${n}")).collect();
    let args: Vec<pgrx::datum::DatumWithOid> = columns.into_iter().map(|(_, v)| v).collect();
    owner::as_catalog_owner(ext.owner(), || {
        Spi::run_with_args(
            &format!(
                "INSERT INTO {catalog} ({}) VALUES ({})",
                names.join(", "),
                values.join(", "),
                catalog = ext.catalog(),
            ),
            &args,
        )
    })
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot record the TTL index: {e}"));
}

/// The index (and the per-row TTL one) of `entry`, the recorded TTL index of `table`: adopted
/// when it exists (the catalog, and `entry`, take its name), else built unless `build` is
/// false.
fn build_or_adopt(ext: &Extension, table: &Table, entry: &mut TtlIndex, build: bool) {
    for (catalog_column, name, expression, predicate) in index_specs(ext, entry) {
        match build::adoptable(table.oid, &expression, &predicate) {
            Some(adopted) => {
                notice!(
                    "jsonb_ttl: index {adopted} is the {} of {}: adopted, not built again",
                    match catalog_column {
                        "index_name" => "TTL index",
                        _ => "per-row TTL index",
                    },
                    table.name
                );
                set_column(ext, table, catalog_column, adopted.clone().into());
                match (catalog_column, entry.row_ttl.as_mut()) {
                    ("index_name", _) => entry.index_name = adopted,
                    (_, Some(row_ttl)) => row_ttl.index_name = adopted,
                    (_, None) => {}
                }
            }
            None if build => build_index(table, &name, &expression, &predicate),
            None => {}
        }
    }
}

fn warn_unless_preloaded() {
    if !crate::preload::preloaded() {
        pgrx::pg_sys::panic::ErrorReport::new(
            PgSqlErrorCode::ERRCODE_WARNING,
            "jsonb_ttl is not in shared_preload_libraries: no background worker will remove expired rows",
            "jsonb_ttl",
        )
        .set_hint("Add jsonb_ttl to shared_preload_libraries and restart; until then only ttl_expire_now() removes rows.")
        .report(PgLogLevel::WARNING);
    }
}

/// Drops the TTL index of `table`: its options' triggers and policies, its indexes, its entry.
pub(crate) fn drop(ext: &Extension, table: &Table) -> bool {
    let current = ttl_index_of(ext, table);
    crate::citus::check_managed_here(table.oid, &table.name);
    touch::remove(ext, &current);
    if current.hide_expired {
        hide::remove(&current, current.hide_enabled_row_security);
    }
    tracking::track_indexes(ext, table.oid);
    let row_index = current
        .row_ttl
        .as_ref()
        .and_then(|_| tracking::recorded_index(ext, table.oid, "row_ttl_index_name"));
    let index = tracking::recorded_index(ext, table.oid, "index_name");
    // The entry first: the sql_drop event trigger then finds no TTL index to warn of when its
    // indexes go (a DROP INDEX by hand is what it warns of).
    owner::as_catalog_owner(ext.owner(), || {
        Spi::run_with_args(
            &format!(
                "DELETE FROM {catalog} \
                 WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
                catalog = ext.catalog(),
            ),
            &[table.oid.into()],
        )
    })
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot remove the TTL index entry: {e}"));
    for index in [row_index, index].into_iter().flatten() {
        tracking::drop_index_of(table.oid, index);
    }
    true
}
