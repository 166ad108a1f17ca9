//! The SQL face: `ttl_index_create` / `ttl_index_alter` / `ttl_index_drop` / `ttl_expire_now`
//! / `ttl_index_resume`, each a few lines over the rooms that do the work.
//!
//! The documented signatures are SQL wrappers in sql/api.sql, which call these internals (in
//! schema `jsonb_ttl_internal`). Each checks its table ([`table`]) and its arguments
//! ([`spec`]: each failure a clear error with a SQLSTATE and a HINT, before anything is
//! changed), then hands over to [`create`], [`alter`], [`expire_now`] or [`brake`].

use crate::controls::{self, Controls};
use crate::extension::Extension;
use crate::spec::{self, Args, IndexSpec};
use crate::table::{owned_table, required, ttl_index_of};
use crate::{alter, brake, create, expire_now, partitions};
use pgrx::datum::Interval;
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;
use pgrx::AnyNumeric;

/// A number of seconds as an interval, for the numeric overloads. STABLE, not IMMUTABLE: the
/// planner would fold a call with a constant argument while it plans a wrapper (PostgreSQL 18
/// plans SQL functions' statements with their arguments), and its error would carry that
/// wrapper's CONTEXT; called at run time it carries none, as every argument error.
#[pg_extern(
    stable,
    parallel_safe,
    name = "_ttl_seconds",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_seconds(seconds: Option<AnyNumeric>) -> Interval {
    spec::seconds(seconds)
}

/// An invalid argument (SQLSTATE 22023) that a PL/pgSQL wrapper of sql/api.sql finds itself
/// (an `expire_after` text that is no interval, `ttl_index_alter` with nothing to change),
/// raised here so that it carries no CONTEXT line, like every other argument error
/// ([`crate::error::raise`]): a RAISE in PL/pgSQL would add the wrapper's frames ("PL/pgSQL
/// function jsonb_ttl_internal._ttl_interval(text) line 5 at RAISE", "SQL function
/// "ttl_index_create" statement 1").
#[pg_extern(
    volatile,
    parallel_safe,
    name = "_ttl_invalid_argument",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_invalid_argument(message: Option<&str>, hint: Option<&str>) {
    crate::error::raise(
        pgrx::PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        message.unwrap_or("invalid argument"),
        hint.unwrap_or_default(),
    )
}

/// `ttl_index_create` as 0.1.0's SQL calls it (no time_zone): the library serves it until
/// `ALTER EXTENSION jsonb_ttl UPDATE` runs.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_create",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_create(
    tbl: Option<Oid>,
    path: Option<&str>,
    expire_after: Option<Interval>,
    numeric_unit: Option<&str>,
) -> bool {
    ttl_index_create_in_zone(tbl, path, expire_after, numeric_unit, None)
}

#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_create",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_create_in_zone(
    tbl: Option<Oid>,
    path: Option<&str>,
    expire_after: Option<Interval>,
    numeric_unit: Option<&str>,
    time_zone: Option<&str>,
) -> bool {
    ttl_index_create_with_options(
        tbl,
        path,
        expire_after,
        numeric_unit,
        time_zone,
        None,
        None,
        None,
        None,
        None,
        None,
    )
}

/// `ttl_index_create` with every option (sql/api.sql gives it its documented signature, with
/// names and defaults: one argument per option is the SQL face).
#[allow(clippy::too_many_arguments)]
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_create",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_create_with_options(
    tbl: Option<Oid>,
    path: Option<&str>,
    expire_after: Option<Interval>,
    numeric_unit: Option<&str>,
    time_zone: Option<&str>,
    filter: Option<&str>,
    touch: Option<bool>,
    build: Option<bool>,
    hide_expired: Option<bool>,
    row_ttl_path: Option<&str>,
    drop_partitions: Option<&str>,
) -> bool {
    let table = owned_table(tbl);
    let args = Args {
        path,
        expire_after,
        numeric_unit,
        time_zone,
        filter,
        touch,
        build,
        hide_expired,
        row_ttl_path,
        drop_partitions,
    };
    let ext = Extension::current();
    let spec = IndexSpec::validate(&ext, &table, args);
    create::create(&ext, &table, &spec)
}

#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_alter",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_alter(tbl: Option<Oid>, expire_after: Option<Interval>) {
    let table = owned_table(tbl);
    let expire_after = spec::check_expire_after(expire_after);
    alter::set_expire_after(&Extension::current(), &table, expire_after);
}

/// `ttl_index_alter(tbl, time_zone => …)` (see [`alter::set_time_zone`]).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_set_time_zone",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_set_time_zone(tbl: Option<Oid>, time_zone: Option<&str>) {
    let table = owned_table(tbl);
    let time_zone = required(time_zone, "time_zone");
    alter::set_time_zone(&Extension::current(), &table, time_zone);
}

/// `ttl_index_alter(tbl, path => …, numeric_unit => …)` (see [`alter::set_definition`]).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_set_definition",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_set_definition(tbl: Option<Oid>, path: Option<&str>, numeric_unit: Option<&str>) {
    let table = owned_table(tbl);
    alter::set_definition(&Extension::current(), &table, path, numeric_unit);
}

/// `ttl_index_alter(tbl, row_ttl_path => …)` (see [`alter::set_row_ttl`]).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_set_row_ttl",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_set_row_ttl(tbl: Option<Oid>, row_ttl_path: Option<&str>) {
    let table = owned_table(tbl);
    let row_ttl_path = required(row_ttl_path, "row_ttl_path");
    alter::set_row_ttl(&Extension::current(), &table, row_ttl_path);
}

/// `ttl_index_alter(tbl, touch => …)` (see [`alter::set_touch`]).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_set_touch",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_set_touch(tbl: Option<Oid>, on: Option<bool>) {
    let table = owned_table(tbl);
    let on = required(on, "touch");
    alter::set_touch(&Extension::current(), &table, on);
}

/// `ttl_index_alter(tbl, hide_expired => …)` (see [`alter::set_hide_expired`]).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_set_hide_expired",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_set_hide_expired(tbl: Option<Oid>, on: Option<bool>) {
    let table = owned_table(tbl);
    let on = required(on, "hide_expired");
    alter::set_hide_expired(&Extension::current(), &table, on);
}

/// `ttl_index_alter(tbl, drop_partitions => 'drop' | 'detach' | 'off')` (see [`partitions`]).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_set_drop_partitions",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_set_drop_partitions(tbl: Option<Oid>, mode: Option<&str>) {
    let table = owned_table(tbl);
    let mode = partitions::Mode::from_arg(required(mode, "drop_partitions"));
    alter::set_drop_partitions(&Extension::current(), &table, mode);
}

#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_drop",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_drop(tbl: Option<Oid>) -> bool {
    let table = owned_table(tbl);
    create::drop(&Extension::current(), &table)
}

#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_expire_now",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_expire_now(tbl: Option<Oid>, max_rows: Option<i64>) -> i64 {
    expire_now::expire_now(tbl, max_rows)
}

/// On a Citus worker node: `ttl_expire_now(tbl, max_rows)` on the shards of `tbl` it holds, for
/// the coordinator's `ttl_expire_now` (see [`expire_now`]). Executable by the caller: it
/// checks the caller owns the table.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_expire_local",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_expire_local(tbl: Oid, max_rows: i64) -> i64 {
    expire_now::expire_local(tbl, max_rows)
}

/// `ttl_index_resume(tbl)`: lifts a pause of the safety brake on the TTL index of `tbl`, and
/// releases the brake until a visit of the worker drains the table. For the table's owner.
/// Returns whether the index was paused; an index that was not is left as it is (its brake
/// still holds).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_resume",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_resume(tbl: Option<Oid>) -> bool {
    let table = owned_table(tbl);
    let ext = Extension::current();
    let index = ttl_index_of(&ext, &table);
    brake::resume(&ext, index.root)
}

/// `ttl_index_create`'s operator controls (see [`controls`]): set on the TTL index it has just
/// `created`, compared with those of one that existed already.
#[allow(clippy::too_many_arguments)]
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_controls",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_controls(
    tbl: Option<Oid>,
    created: Option<bool>,
    paused: Option<bool>,
    delete_window: Option<&str>,
    batch_size: Option<i32>,
    max_removes_per_second: Option<i32>,
    replication_origin: Option<bool>,
    logical_message: Option<bool>,
) {
    let table = owned_table(tbl);
    let ext = Extension::current();
    let paused = paused.unwrap_or(false);
    let controls = Controls {
        delete_window,
        batch_size,
        max_removes_per_second,
        replication_origin,
        logical_message,
    };
    match created.unwrap_or(false) {
        true => {
            controls::set(&ext, &table, &controls);
            if paused {
                controls::pause(&ext, &table, Some("created paused"));
            }
        }
        false if controls::are_defaults(&controls, paused) => {}
        false => controls::refuse_other(&ext, &table, &controls, paused),
    }
}

/// `archive_to` of `ttl_index_create` (`created`: whether it created the TTL index) and of
/// `ttl_index_alter` (`created` NULL) (see [`crate::archive::set`]); NULL: not given.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_archive",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_archive(tbl: Option<Oid>, archive_to: Option<Oid>, created: Option<bool>) {
    let Some(archive) = archive_to else {
        return;
    };
    let table = owned_table(tbl);
    let ext = Extension::current();
    crate::archive::set(&ext, &table, archive, created);
}

/// `ttl_index_alter(tbl, delete_window => …, batch_size => …, …)` (see [`controls`]).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_set_controls",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_set_controls(
    tbl: Option<Oid>,
    delete_window: Option<&str>,
    batch_size: Option<i32>,
    max_removes_per_second: Option<i32>,
    replication_origin: Option<bool>,
    logical_message: Option<bool>,
) {
    let table = owned_table(tbl);
    let ext = Extension::current();
    ttl_index_of(&ext, &table);
    let controls = Controls {
        delete_window,
        batch_size,
        max_removes_per_second,
        replication_origin,
        logical_message,
    };
    controls::set(&ext, &table, &controls);
}

/// `ttl_index_alter(tbl, filter => …)` (see [`alter::set_filter`]).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_set_filter",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_set_filter(tbl: Option<Oid>, filter: Option<&str>) {
    let table = owned_table(tbl);
    let filter = required(filter, "filter");
    alter::set_filter(&Extension::current(), &table, filter);
}

/// `ttl_index_pause(tbl, reason)`: the worker leaves the TTL index of `tbl` until
/// `ttl_index_resume(tbl)`. For the table's owner. Returns whether it was running.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_pause",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_pause(tbl: Option<Oid>, reason: Option<&str>) -> bool {
    let table = owned_table(tbl);
    let ext = Extension::current();
    ttl_index_of(&ext, &table);
    crate::citus::check_managed_here(table.oid, &table.name);
    controls::pause(&ext, &table, reason)
}

/// What the TTL index of `tbl` expires now that `ttl_index_alter` changed an option that may
/// widen it (expire_after, path, numeric_unit, time_zone, filter, row_ttl_path): counted once,
/// at the end of the call, held past the brake's fraction (see [`crate::held`]). For the table's
/// owner (the wrapper's caller).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_widened",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_widened(tbl: Option<Oid>) {
    let table = owned_table(tbl);
    crate::held::check(
        &Extension::current(),
        &table,
        crate::held::Occasion::Altered,
    );
}

/// The first backlog of the TTL index just created on `tbl` (see [`crate::held`]).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_first_backlog",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_first_backlog(tbl: Option<Oid>) -> Option<i64> {
    let table = owned_table(tbl);
    crate::held::first_backlog(&Extension::current(), &table)
}
