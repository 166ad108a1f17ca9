//! Changing a TTL index in place: `ttl_index_alter`'s expire_after, path and numeric_unit,
//! per-row TTL field, time zone, touch, hide_expired, drop_partitions and filter, each a step
//! of its own.

use crate::build::{build_index, choose_index_name, index_specs};
use crate::catalog::TtlIndex;
use crate::extension::Extension;
use crate::functions::numeric_unit_arg;
use crate::spec::{check_drop_partitions, index_time_zone, resolve_path, row_ttl_field};
use crate::table::{set_column, ttl_index_of, Table};
use crate::{citus, hide, partitions, touch, tracking};
use jsonb_ttl_core::path::ColumnKind;
use pgrx::datum::Interval;
use pgrx::prelude::*;
use pgrx::spi::quote_identifier;

/// A new expire_after (the hiding policy, which has it written in, follows).
pub(crate) fn set_expire_after(ext: &Extension, table: &Table, expire_after: Interval) {
    ttl_index_of(ext, table);
    citus::check_managed_here(table.oid, &table.name);
    set_column(ext, table, "expire_after", expire_after.into());
    rearm_brake(ext, table);
    let current = ttl_index_of(ext, table);
    if current.hide_expired {
        hide::refresh(ext, &current);
    }
}

/// Sets the safety brake again after a change that may widen what expires (a shorter
/// expire_after, a wider filter, another time zone): a backlog it let through (the first one,
/// or one resumed) is counted again under the new definition.
fn rearm_brake(ext: &Extension, table: &Table) {
    if ext.has_controls() {
        set_column(ext, table, "brake_released", false.into());
    }
}

/// Turns dropping whole partitions on (`Some` mode) or off (see [`partitions`]).
pub(crate) fn set_drop_partitions(ext: &Extension, table: &Table, mode: Option<partitions::Mode>) {
    // (archive_to is read after a concurrent alter of it committed)
    crate::table::lock_entry(ext, table);
    let current = ttl_index_of(ext, table);
    citus::check_options(table.oid, &table.name, false, false, mode.is_some(), false);
    if mode == Some(partitions::Mode::Drop) && current.archive_to.is_some() {
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!(
                "drop_partitions => 'drop' cannot go with archive_to on {}",
                table.name
            ),
            "A dropped partition's rows would never reach the archive: use 'detach' (the \
             detached partition keeps its rows), or remove archive_to first ('-').",
        );
    }
    if mode.is_some() {
        let reference = current
            .base_reference(ext)
            .unwrap_or_else(|e| error!("jsonb_ttl: {e}"));
        check_drop_partitions(
            table,
            &reference,
            &current.resolved,
            current.filter_sql.is_some(),
            current.row_ttl.is_some(),
        );
    }
    set_column(
        ext,
        table,
        "drop_partitions",
        mode.map(partitions::Mode::name).into(),
    );
}

/// Changes the zone a `timestamp` or `date` column is read in. The zone is part of the index
/// expression, so the TTL index is rebuilt: a new index is built beside the old one (CREATE
/// INDEX: a SHARE lock, so writes to the table wait for the build), the catalog points at it,
/// the old one is dropped and the new one takes its name (ACCESS EXCLUSIVE, for an instant).
pub(crate) fn set_time_zone(ext: &Extension, table: &Table, time_zone: &str) {
    let current = ttl_index_of(ext, table);
    citus::check_managed_here(table.oid, &table.name);
    let Some(zone) = index_time_zone(
        table,
        current.resolved.kind,
        &current.resolved.column,
        Some(time_zone),
    ) else {
        unreachable!("index_time_zone raises for a kind without a zone")
    };
    if current.time_zone.as_deref() == Some(zone.as_str()) {
        return;
    }
    rearm_brake(ext, table);
    // Each index is built again beside the old one. The catalog follows the new index first, so
    // that dropping the old one (which the sql_drop event trigger watches) keeps the entry,
    // then takes the old name back with it.
    let rezoned = TtlIndex {
        time_zone: Some(zone.clone()),
        ..current
    };
    if rezoned.drop_partitions.is_some() {
        // the partitions are bounded by the old reference: refused unless still the same
        let reference = rezoned
            .base_reference(ext)
            .unwrap_or_else(|e| error!("jsonb_ttl: {e}"));
        check_drop_partitions(table, &reference, &rezoned.resolved, false, false);
    }
    tracking::track_indexes(ext, table.oid);
    set_column(ext, table, "time_zone", zone.into());
    for (column, name, expression, predicate) in index_specs(ext, &rezoned) {
        rebuild(ext, table, column, &name, &expression, &predicate);
    }
    let entry = ttl_index_of(ext, table);
    if entry.touch {
        touch::install(ext, &entry);
    }
    if entry.hide_expired {
        hide::refresh(ext, &entry);
    }
}

/// Changes where a row's point in time is read (`path`) or how its numbers are read
/// (`numeric_unit`): the mending of a mistake the creation's advice told of (a misspelt key,
/// epoch milliseconds read as seconds). Both are part of the index expression, so the TTL index
/// is rebuilt as for a new time zone (see [`set_time_zone`]), the touch trigger (it writes the
/// path) and the hiding policies follow, and the brake is set again: what expires may widen
/// (from nothing, with the wrong path, to most of the table). The zone stays where the new
/// path's kind is read in one (a timestamp column asks for one when none was kept, see
/// [`crate::zone`]); a kind that holds absolute times takes none. The advice is given on the
/// new definition.
pub(crate) fn set_definition(
    ext: &Extension,
    table: &Table,
    path: Option<&str>,
    numeric_unit: Option<&str>,
) {
    let current = ttl_index_of(ext, table);
    citus::check_managed_here(table.oid, &table.name);
    let path = path.unwrap_or(&current.path).to_string();
    let resolved = resolve_path(table, &path);
    let unit = numeric_unit.map_or(current.unit, numeric_unit_arg);
    if resolved == current.resolved && unit == current.unit {
        return;
    }
    crate::field_dates::refuse_removing(ext, table.oid, &table.name, &[&resolved]);
    let zone = match (ext.has_time_zone(), resolved.kind) {
        (false, _) | (true, ColumnKind::Timestamptz | ColumnKind::Number) => None,
        (true, kind) => {
            index_time_zone(table, kind, &resolved.column, current.time_zone.as_deref())
        }
    };
    let redefined = TtlIndex {
        resolved: resolved.clone(),
        path: path.clone(),
        unit,
        time_zone: zone.clone(),
        ..current
    };
    if redefined.drop_partitions.is_some() {
        // the partitions are bounded by the reference: refused unless it is still the same
        let reference = redefined
            .base_reference(ext)
            .unwrap_or_else(|e| error!("jsonb_ttl: {e}"));
        check_drop_partitions(table, &reference, &resolved, false, false);
    }
    rearm_brake(ext, table);
    tracking::track_indexes(ext, table.oid);
    set_column(ext, table, "column_name", resolved.column.clone().into());
    set_column(ext, table, "json_path", resolved.json_path.clone().into());
    set_column(ext, table, "path", path.clone().into());
    set_column(ext, table, "numeric_unit", unit.name().into());
    if ext.has_time_zone() {
        set_column(ext, table, "time_zone", zone.clone().into());
    }
    let entry = ttl_index_of(ext, table);
    for (column, name, expression, predicate) in index_specs(ext, &entry) {
        rebuild(ext, table, column, &name, &expression, &predicate);
    }
    if entry.touch {
        touch::install(ext, &entry);
    }
    if entry.hide_expired {
        hide::refresh(ext, &entry);
    }
    let definition = crate::advise::Definition {
        path: &path,
        resolved: &resolved,
        unit,
        zone: zone.as_deref(),
        field: false,
    };
    crate::advise::on_definition(ext, table, &definition);
}

/// Adds, changes or removes (`''`) the per-row TTL field (see [`crate::row_ttl`]): the TTL
/// index's predicate changes with it (it holds only the rows without a TTL of their own), so it
/// is rebuilt as for a new time zone; the per-row TTL index is built (added), rebuilt (changed)
/// or dropped (removed). The brake is set again: rows may now expire sooner.
pub(crate) fn set_row_ttl(ext: &Extension, table: &Table, row_ttl_path: &str) {
    let current = ttl_index_of(ext, table);
    citus::check_managed_here(table.oid, &table.name);
    let field = match row_ttl_path.trim() {
        "" => None,
        path => Some((path.to_string(), row_ttl_field(table, path))),
    };
    if current.row_ttl.as_ref().map(|r| &r.resolved) == field.as_ref().map(|(_, r)| r) {
        return;
    }
    if let Some((_, resolved)) = &field {
        crate::field_dates::refuse_removing(ext, table.oid, &table.name, &[resolved]);
    }
    if current.drop_partitions.is_some() && field.is_some() {
        let reference = current
            .base_reference(ext)
            .unwrap_or_else(|e| error!("jsonb_ttl: {e}"));
        check_drop_partitions(table, &reference, &current.resolved, false, true);
    }
    let old_row_index = tracking::recorded_index(ext, table.oid, "row_ttl_index_name");
    rearm_brake(ext, table);
    tracking::track_indexes(ext, table.oid);
    let row_index_name = match (&field, &current.row_ttl) {
        (None, _) => None,
        (Some(_), Some(row_ttl)) if !row_ttl.index_name.is_empty() => {
            Some(row_ttl.index_name.clone())
        }
        (Some(_), _) => Some(choose_index_name(
            table,
            "_row_ttl_idx",
            std::slice::from_ref(&current.index_name),
        )),
    };
    write_row_ttl(ext, table, field, row_index_name);
    let entry = ttl_index_of(ext, table);
    for (column, name, expression, predicate) in index_specs(ext, &entry) {
        match column == "row_ttl_index_name" && old_row_index.is_none() {
            // a per-row TTL index of its own for the first time (or its old one was dropped)
            true => {
                build_index(table, &name, &expression, &predicate);
                tracking::track_indexes(ext, table.oid);
            }
            false => rebuild(ext, table, column, &name, &expression, &predicate),
        }
    }
    if let (None, Some(old)) = (&entry.row_ttl, old_row_index) {
        tracking::drop_index_of(table.oid, old);
    }
    if entry.hide_expired {
        hide::refresh(ext, &entry);
    }
}

/// Writes the per-row TTL field (`None`: none) and its index's name to the catalog row.
fn write_row_ttl(
    ext: &Extension,
    table: &Table,
    field: Option<(String, jsonb_ttl_core::path::Resolved)>,
    index_name: Option<String>,
) {
    let (path, resolved) = field.unzip();
    let (column, json_path) = resolved.map(|r| (r.column, r.json_path)).unzip();
    set_column(ext, table, "row_ttl_path", path.into());
    set_column(ext, table, "row_ttl_column", column.into());
    set_column(ext, table, "row_ttl_json_path", json_path.into());
    set_column(ext, table, "row_ttl_index_name", index_name.into());
}

/// Builds the index of catalog column `column` again on `expression` and `predicate`, beside
/// the recorded one, which it then replaces under its name `name`.
fn rebuild(
    ext: &Extension,
    table: &Table,
    column: &str,
    name: &str,
    expression: &str,
    predicate: &str,
) {
    let Some(old) = tracking::recorded_index(ext, table.oid, column) else {
        return; // not built yet (build => false): build_sql now gives the new zone's
    };
    let building = choose_index_name(table, "_ttl_idx", &[]);
    build_index(table, &building, expression, predicate);
    set_column(ext, table, column, building.clone().into());
    // the new index is the recorded one before the old one goes (the sql_drop event
    // trigger removes the entry of a TTL index whose recorded index is dropped)
    tracking::track_indexes(ext, table.oid);
    tracking::drop_index_of(table.oid, old);
    Spi::run(&format!(
        "ALTER INDEX {}.{} RENAME TO {}",
        quote_identifier(&table.schema),
        quote_identifier(&building),
        quote_identifier(name)
    ))
    .unwrap_or_else(|e| error!("jsonb_ttl: ALTER INDEX failed: {e}"));
    set_column(ext, table, column, name.into());
}

/// Turns touch on or off (see [`touch`]): the trigger is created or dropped, the index stays.
pub(crate) fn set_touch(ext: &Extension, table: &Table, on: bool) {
    let current = ttl_index_of(ext, table);
    citus::check_options(table.oid, &table.name, on, false, false, false);
    set_column(ext, table, "touch", on.into());
    match on {
        true => touch::install(ext, &current),
        false => touch::remove(ext, &current),
    }
}

/// Turns hide_expired on or off (see [`hide`]): the policies are created or dropped.
pub(crate) fn set_hide_expired(ext: &Extension, table: &Table, on: bool) {
    let current = ttl_index_of(ext, table);
    citus::check_options(table.oid, &table.name, false, on, false, false);
    if current.hide_expired == on {
        return;
    }
    set_column(ext, table, "hide_expired", on.into());
    let enabled_here = match on {
        true => hide::install(ext, &current),
        false => {
            hide::remove(&current, current.hide_enabled_row_security);
            false
        }
    };
    set_column(ext, table, "hide_enabled_row_security", enabled_here.into());
}

/// Changes the filter (`''` removes it: every row expires). The filter is the index's
/// predicate, so the TTL index is rebuilt as for a new time zone (see [`set_time_zone`]), and
/// the hiding policies, which have it written in, follow.
pub(crate) fn set_filter(ext: &Extension, table: &Table, text: &str) {
    let current = ttl_index_of(ext, table);
    citus::check_managed_here(table.oid, &table.name);
    let filter = match text.trim() {
        "" => None,
        text => Some(crate::filter::analyze(table.oid, text)),
    };
    let filter_sql = filter.as_ref().map(|f| f.sql.clone());
    if current.filter_sql == filter_sql {
        return;
    }
    if current.drop_partitions.is_some() && filter.is_some() {
        let reference = current
            .base_reference(ext)
            .unwrap_or_else(|e| error!("jsonb_ttl: {e}"));
        check_drop_partitions(table, &reference, &current.resolved, true, false);
    }
    let refiltered = TtlIndex {
        filter_sql,
        ..current
    };
    rearm_brake(ext, table);
    tracking::track_indexes(ext, table.oid);
    set_column(
        ext,
        table,
        "filter",
        filter.as_ref().map(|f| f.shown.clone()).into(),
    );
    set_column(
        ext,
        table,
        "filter_sql",
        refiltered.filter_sql.clone().into(),
    );
    for (column, name, expression, predicate) in index_specs(ext, &refiltered) {
        rebuild(ext, table, column, &name, &expression, &predicate);
    }
    let entry = ttl_index_of(ext, table);
    if entry.hide_expired {
        hide::refresh(ext, &entry);
    }
}
