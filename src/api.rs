//! The SQL face: `ttl_index_create` / `ttl_index_alter` / `ttl_index_drop` / `ttl_expire_now`
//! / `ttl_index_resume`, each a few lines over the rooms that do the work.
//!
//! The documented signatures are SQL wrappers in sql/api.sql, which call these internals (in
//! schema `jsonb_ttl_internal`). Each checks its table ([`table`]) and its arguments
//! ([`spec`]: each failure a clear error with a SQLSTATE and a HINT, before anything is
//! changed), then hands over to [`create`], [`alter`], [`expire_now`] or [`brake`].

use crate::extension::Extension;
use crate::spec::{self, Args, IndexSpec};
use crate::table::{owned_table, required, ttl_index_of};
use crate::{alter, brake, create, expire_now, partitions};
use pgrx::datum::Interval;
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;
use pgrx::AnyNumeric;

/// A number of seconds as an interval, for the numeric overloads.
#[pg_extern(
    immutable,
    parallel_safe,
    name = "_ttl_seconds",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_seconds(seconds: Option<AnyNumeric>) -> Interval {
    spec::seconds(seconds)
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
