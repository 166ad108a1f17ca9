//! `ttl_expire_preview(tbl, at)`: what the TTL index of `tbl` would remove at time `at`, without
//! removing anything — how many rows, and the oldest and newest of their reference times. For an
//! operator about to lower `expire_after`, or to enable the worker on a restored database.
//!
//! It reads the table as the caller (a preview is the caller's own query: the caller needs
//! SELECT on it, and row security applies to the caller as to any query), through the TTL
//! index, with the planner pins of the worker's statements (see [`crate::planner`]); a
//! partitioned table is read whole. A TTL index with a filter is the exception: the filter is
//! the owner's code, so that query runs as the owner, for a caller who may read the table and
//! to whom row security does not apply.

use crate::catalog::{self, Scope, TtlIndex};
use crate::error::raise;
use crate::extension::Extension;
use crate::owner;
use crate::table::required;
use pgrx::datum::{Interval, TimestampWithTimeZone};
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;

#[allow(clippy::type_complexity)]
#[pg_extern(
    stable,
    parallel_safe,
    name = "_ttl_expire_preview",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_expire_preview(
    tbl: Option<Oid>,
    at: Option<TimestampWithTimeZone>,
) -> TableIterator<
    'static,
    (
        name!(rows, i64),
        name!(oldest, Option<TimestampWithTimeZone>),
        name!(newest, Option<TimestampWithTimeZone>),
    ),
> {
    let tbl = required(tbl, "tbl");
    let at = required(at, "at");
    let ext = Extension::current();
    let index = entry_of(&ext, tbl);
    let sql = crate::deleter::preview_sql(&ext, &index);
    let expire_after: Interval = index.expire_after;
    let query = || {
        // read-only (Spi::get_three would assign a transaction ID: refused on a standby)
        Spi::connect(|client| {
            client
                .select(&sql, Some(1), &[at.into(), expire_after.into()])?
                .first()
                .get_three::<i64, TimestampWithTimeZone, TimestampWithTimeZone>()
        })
        .unwrap_or_else(|e| error!("jsonb_ttl: cannot preview {}: {e}", index.display_name))
    };
    let row = match index.filter_sql {
        None => query(),
        // The filter is the owner's code (functions, operators): it runs as the owner, never as
        // the caller, who may be a superuser.
        Some(_) => owner::as_table_owner(owner_for_filter(tbl, &index), &[], query),
    };
    TableIterator::once((row.0.unwrap_or(0), row.1, row.2))
}

/// The TTL index of `tbl`, or an error saying it has none.
fn entry_of(ext: &Extension, tbl: Oid) -> TtlIndex {
    if let Some(index) = catalog::load(ext, Some(tbl), Scope::Entries)
        .into_iter()
        .next()
    {
        return index;
    }
    let name = crate::read::one::<String>(
        "SELECT $1::pg_catalog.regclass::pg_catalog.text",
        &[tbl.into()],
    )
    .unwrap_or_else(|| tbl.to_u32().to_string());
    raise(
        PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
        format!("table {name} has no TTL index"),
        "Create one with ttl_index_create().",
    )
}

/// The owner of `tbl`, as whom the preview of its filtered TTL index runs: the caller must be
/// able to read the table, and row security must not apply to them (the owner's view would
/// show what it hides), or this raises.
fn owner_for_filter(tbl: Oid, index: &TtlIndex) -> Oid {
    let access = Spi::connect(|client| {
        client
            .select(
                "SELECT pg_catalog.has_table_privilege($1, 'SELECT'::pg_catalog.text), \
                        pg_catalog.row_security_active($1)",
                Some(1),
                &[tbl.into()],
            )?
            .first()
            .get_two::<bool, bool>()
    });
    let Ok((Some(true), Some(row_security))) = access else {
        raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("permission denied for table {}", index.display_name),
            "ttl_expire_preview reads the table: it needs SELECT on it.",
        )
    };
    unsafe { pgrx::pg_sys::LockRelationOid(tbl, pgrx::pg_sys::AccessShareLock as _) };
    let owner = owner::table_owner(tbl).unwrap_or_else(|| error!("jsonb_ttl: no table"));
    if row_security && !owner::has_privileges_of(owner) {
        raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "row security applies to you on {}: its filtered TTL index is previewed by its owner only",
                index.display_name
            ),
            "The filter runs as the table's owner, who sees rows your policies hide.",
        )
    }
    owner
}
