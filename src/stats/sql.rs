//! The SQL functions that read the statistics in shared memory (see [`super`]): `_ttl_stats`
//! (behind the `ttl_stats` view), `_ttl_undeletable`, `ttl_statistics()`, `ttl_stats_reset()`,
//! and the symbols an older version's SQL still calls. Who may read an error message or a lag
//! is decided here.

use super::{store, Entry, LAST_PASS_AT, LAST_PASS_US, TOTAL_LIMIT, TOTAL_ROWS, TOTAL_RUNS};
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::sync::atomic::Ordering;

mod far_future;
mod nodes;
mod view;
use nodes::{add_worker_nodes, merge};

fn timestamptz(value: i64) -> Option<TimestampWithTimeZone> {
    (value != 0)
        .then(|| TimestampWithTimeZone::try_from(value).ok())
        .flatten()
}

/// One statistics row, as `_ttl_stats()` returns it.
type StatsRow = (
    pg_sys::Oid,
    i64,
    i64,
    Option<TimestampWithTimeZone>,
    i64,
    i64,
    i64,
    Option<String>,
    Option<TimestampWithTimeZone>,
    Option<String>,
    Option<TimestampWithTimeZone>,
    Option<f64>,
    Option<i64>,
    // the part of the table (super::WHOLE, super::OWN_TTL, super::field_part)
    u8,
);

/// The statistics entries of the current database, as the caller may see them: an error
/// message can carry row data (an owner's trigger message), so, as `pg_stat_activity.query`, it
/// is shown only to roles with the privileges of the table's owner, members of
/// `pg_read_all_stats` and superusers; others read `<insufficient privilege>`.
fn visible_entries() -> Vec<StatsRow> {
    visible_entries_of(None)
}

/// [`visible_entries`] of `table` only, or of every table.
fn visible_entries_of(table: Option<pg_sys::Oid>) -> Vec<StatsRow> {
    if !crate::preload::preloaded() {
        return Vec::new();
    }
    let dboid = unsafe { pg_sys::MyDatabaseId }.to_u32();
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    let entries: Vec<Entry> = store::read(|store| {
        store
            .entries()
            .iter()
            .filter(|e| e.dboid == dboid && table.is_none_or(|t| t.to_u32() == e.reloid))
            .copied()
            .collect()
    });
    let user = unsafe { pg_sys::GetUserId() };
    let reads_all = unsafe {
        pg_sys::has_privs_of_role(user, pg_sys::Oid::from(pg_sys::ROLE_PG_READ_ALL_STATS))
    };
    entries
        .iter()
        .map(|e| visible_row(e, user, reads_all, now))
        .collect()
}

/// Entry `e` as a statistics row for `user` (`reads_all`: a member of `pg_read_all_stats`) at
/// `now`, its error message and lag hidden from those who may not read them.
fn visible_row(e: &Entry, user: pg_sys::Oid, reads_all: bool, now: i64) -> StatsRow {
    let table = pg_sys::Oid::from(e.reloid);
    let access = (e.last_error_len > 0 || e.oldest_expired != 0)
        .then(|| access_of(table))
        .flatten();
    let may_read =
        reads_all || access.is_some_and(|a| unsafe { pg_sys::has_privs_of_role(user, a.owner) });
    // the lag is a reference time from a row: shown to those who may read the error
    // text, and to whoever may read all the table's rows (SELECT, no row security)
    let may_read_rows = may_read || access.is_some_and(|a| a.select && !a.row_security);
    let oldest_expired = match may_read_rows {
        true => timestamptz(e.oldest_expired),
        false => None,
    };
    let error = (e.last_error_len > 0).then(|| match may_read {
        true => String::from_utf8_lossy(&e.last_error[..e.last_error_len]).into_owned(),
        false => "<insufficient privilege>".to_string(),
    });
    let set_aside = (e.set_aside_until > now).then(|| {
        let until = timestamptz(e.set_aside_until).map_or_else(String::new, |at| at.to_string());
        format!(
            "set aside until {until}: a batch held the worker past jsonb_ttl.batch_timeout \
             and the worker was terminated ({} time(s) in a row)",
            e.strikes
        )
    });
    (
        table,
        e.runs as i64,
        e.rows_deleted as i64,
        timestamptz(e.last_run_at),
        e.last_rows_deleted as i64,
        e.limit_reached as i64,
        e.errors as i64,
        error,
        oldest_expired,
        set_aside,
        timestamptz(e.last_success_at),
        (e.runs > 0).then(|| e.last_run_us as f64 / 1000.0),
        (e.backlog >= 0).then_some(e.backlog),
        e.part,
    )
}

/// Who may read what of a table's statistics.
#[derive(Clone, Copy)]
struct Access {
    owner: pg_sys::Oid,
    /// The reader may SELECT from the table.
    select: bool,
    /// Row security is enabled on it.
    row_security: bool,
}

/// [`Access`] to `table` from the relation cache's catalog lookups (no SQL: a query per
/// lagging table cost ~50 µs each, most of `ttl_stats` at 1,000 lagging tables), without
/// locking it (a statistics read takes no lock on the tables it reports); `None` when it is
/// gone.
fn access_of(table: pg_sys::Oid) -> Option<Access> {
    let cache = pg_sys::SysCacheIdentifier::RELOID;
    let (owner, row_security) = unsafe {
        crate::syscache::row(cache, table, |c: &pg_sys::FormData_pg_class| {
            (c.relowner, c.relrowsecurity)
        })
    }?;
    unsafe {
        // has_table_privilege(oid, 'SELECT'); a table dropped meanwhile reads as gone
        let mut missing = false;
        let select = pg_sys::pg_class_aclcheck_ext(
            table,
            pg_sys::GetUserId(),
            pg_sys::ACL_SELECT as _,
            &mut missing,
        ) == pg_sys::AclResult::ACLCHECK_OK;
        (!missing).then_some(Access {
            owner,
            select,
            row_security,
        })
    }
}

/// The statistics of the current database's TTL indexes (the `ttl_stats` view joins them).
/// Reads shared memory and the system catalogs only: no owner code runs.
#[pg_extern(
    volatile,
    parallel_restricted,
    name = "_ttl_stats",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
#[allow(clippy::type_complexity)]
fn ttl_stats_rows() -> TableIterator<
    'static,
    (
        name!(table_oid, pg_sys::Oid),
        name!(runs, i64),
        name!(rows_deleted, i64),
        name!(last_run_at, Option<TimestampWithTimeZone>),
        name!(last_rows_deleted, i64),
        name!(limit_reached, i64),
        name!(errors, i64),
        name!(last_error, Option<String>),
        name!(oldest_expired, Option<TimestampWithTimeZone>),
        name!(set_aside, Option<String>),
        name!(last_success_at, Option<TimestampWithTimeZone>),
        name!(last_run_ms, Option<f64>),
        name!(backlog, Option<i64>),
        name!(own_ttl, bool),
    ),
> {
    let mut rows = visible_entries();
    add_worker_nodes(&mut rows);
    // (the shape of 0.1.0–0.3.0's SQL: the field TTLs' parts are the ttl_stats view's only)
    TableIterator::new(
        rows.into_iter()
            .filter(|r| r.13 <= super::OWN_TTL)
            .map(|r| {
                (
                    r.0,
                    r.1,
                    r.2,
                    r.3,
                    r.4,
                    r.5,
                    r.6,
                    r.7,
                    r.8,
                    r.9,
                    r.10,
                    r.11,
                    r.12,
                    r.13 == super::OWN_TTL,
                )
            }),
    )
}

/// What the `ttl_stats` view of an older version's SQL calls (a database not yet updated with
/// `ALTER EXTENSION jsonb_ttl UPDATE`): the same rows in the old shape, with the same
/// restriction on who reads an error message.
#[pg_extern(sql = false)]
#[allow(clippy::type_complexity)]
fn ttl_stats_entries() -> TableIterator<
    'static,
    (
        name!(table_oid, pg_sys::Oid),
        name!(runs, i64),
        name!(rows_deleted, i64),
        name!(last_run_at, Option<TimestampWithTimeZone>),
        name!(last_rows_deleted, i64),
        name!(limit_reached, i64),
        name!(errors, i64),
        name!(last_error, Option<String>),
    ),
> {
    // one row a table, as that SQL joins it: the parts of a per-row TTL table summed
    let mut rows: Vec<StatsRow> = Vec::new();
    for mut row in visible_entries()
        .into_iter()
        .filter(|r| r.13 <= super::OWN_TTL)
    {
        row.13 = super::WHOLE;
        merge(&mut rows, vec![row]);
    }
    TableIterator::new(
        rows.into_iter()
            .map(|r| (r.0, r.1, r.2, r.3, r.4, r.5, r.6, r.7)),
    )
}

/// What the `ttl_stats` view of an older version's SQL calls for `oldest_expired`: the value
/// the worker recorded (that view ran the probe as the table's owner at read time).
#[pg_extern(sql = false)]
fn ttl_oldest_expired(_tbl: pg_sys::Oid, target: pg_sys::Oid) -> Option<TimestampWithTimeZone> {
    visible_entries_of(Some(target))
        .into_iter()
        .next()
        .and_then(|r| r.8)
}

/// Rows of each TTL table of the current database that the worker cannot delete and has set
/// aside (the `ttl_stats` view joins them; a function of its own, so that 0.1.0's `_ttl_stats`
/// keeps its shape until the update).
#[pg_extern(
    volatile,
    parallel_safe,
    name = "_ttl_undeletable",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_undeletable(
) -> TableIterator<'static, (name!(table_oid, pg_sys::Oid), name!(rows_undeletable, i64))> {
    TableIterator::new(undeletable_entries())
}

/// The tables of this database with rows set aside as undeletable, and how many.
fn undeletable_entries() -> Vec<(pg_sys::Oid, i64)> {
    if !crate::preload::preloaded() {
        return Vec::new();
    }
    let dboid = unsafe { pg_sys::MyDatabaseId }.to_u32();
    store::read(|store| {
        store
            .entries()
            .iter()
            .filter(|e| e.dboid == dboid && e.rows_undeletable > 0)
            .map(|e| (pg_sys::Oid::from(e.reloid), e.rows_undeletable as i64))
            .collect()
    })
}

/// Server totals, as ArangoDB reports them: passes run, rows removed, passes cut short by a
/// limit; and when the most recent pass (of any database) ended and how long it took.
#[pg_extern(volatile, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_statistics() -> TableIterator<
    'static,
    (
        name!(runs, i64),
        name!(rows_deleted, i64),
        name!(limit_reached, i64),
        name!(last_pass_at, Option<TimestampWithTimeZone>),
        name!(last_pass_ms, f64),
    ),
> {
    let (runs, rows, limit, at, ms, _, _) = totals();
    TableIterator::once((runs, rows, limit, at, ms))
}

/// The statistics store (see [`super`]): its entries in use, server-wide; how many it holds
/// (`jsonb_ttl.max_tables`); and the records it refused since the start or the last reset
/// because every entry was taken (not 0: tables go without a `ttl_stats` row; raise the
/// setting). A function of its own, so that `ttl_statistics()` keeps 0.2.0's shape (views built
/// on it do not block the update).
#[pg_extern(volatile, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_stats_store() -> TableIterator<
    'static,
    (
        name!(entries, i64),
        name!(max_tables, i64),
        name!(refused, i64),
    ),
> {
    let (.., entries, refused) = totals();
    let max_tables = match crate::preload::preloaded() {
        true => crate::gucs::MAX_TABLES.get() as i64,
        false => 0,
    };
    TableIterator::once((entries, max_tables, refused))
}

type Totals = (i64, i64, i64, Option<TimestampWithTimeZone>, f64, i64, i64);

fn totals() -> Totals {
    if !crate::preload::preloaded() {
        return (0, 0, 0, None, 0.0, 0, 0);
    }
    let (entries, refused) = super::store_usage();
    (
        TOTAL_RUNS.get().load(Ordering::Relaxed) as i64,
        TOTAL_ROWS.get().load(Ordering::Relaxed) as i64,
        TOTAL_LIMIT.get().load(Ordering::Relaxed) as i64,
        timestamptz(LAST_PASS_AT.get().load(Ordering::Relaxed)),
        LAST_PASS_US.get().load(Ordering::Relaxed) as f64 / 1000.0,
        entries as i64,
        refused as i64,
    )
}

/// Clears every statistic of every database and the server totals.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_stats_reset() {
    if !crate::preload::preloaded() {
        return;
    }
    super::reset();
}
