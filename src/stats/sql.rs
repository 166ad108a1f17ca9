//! The SQL functions that read the statistics in shared memory (see [`super`]): `_ttl_stats`
//! (behind the `ttl_stats` view), `_ttl_undeletable`, `ttl_statistics()`, `ttl_stats_reset()`,
//! and the symbols an older version's SQL still calls. Who may read an error message or a lag
//! is decided here.

use super::{store, Entry, LAST_PASS_AT, LAST_PASS_US, TOTAL_LIMIT, TOTAL_ROWS, TOTAL_RUNS};
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::sync::atomic::Ordering;

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
    bool,
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
        e.part == super::OWN_TTL,
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

/// [`Access`] to `table` from the system catalogs, without locking it (a statistics read
/// takes no lock on the tables it reports); `None` when it is gone.
fn access_of(table: pg_sys::Oid) -> Option<Access> {
    // read-only (crate::read): reading ttl_stats assigns no transaction ID
    let (owner, select, row_security) = Spi::connect(|client| {
        client
            .select(
                "SELECT relowner, pg_catalog.has_table_privilege(oid, 'SELECT'::pg_catalog.text), \
                        relrowsecurity \
                 FROM pg_catalog.pg_class WHERE oid OPERATOR(pg_catalog.=) $1",
                Some(1),
                &[table.into()],
            )?
            .first()
            .get_three::<pg_sys::Oid, bool, bool>()
    })
    .ok()?;
    Some(Access {
        owner: owner?,
        select: select.unwrap_or(false),
        row_security: row_security.unwrap_or(true),
    })
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
    TableIterator::new(rows)
}

/// On the Citus coordinator, adds to `rows` what the worker nodes count for their shards of
/// each hash-distributed table (their `ttl_stats`, read as the caller through Citus's
/// connections): the table shows once, summed over its placements; the last error names its
/// node. A node that cannot be reached adds nothing. Each node's own `ttl_stats` has its part.
fn add_worker_nodes(rows: &mut Vec<StatsRow>) {
    if !crate::citus::present() || !crate::citus::is_coordinator() {
        return;
    }
    let Some(ext) = crate::extension::Extension::find() else {
        return;
    };
    let distributed = crate::read::one::<bool>(
        &format!(
        "SELECT EXISTS (SELECT FROM {ext}.ttl_index t JOIN pg_catalog.pg_dist_partition d \
                        ON d.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid \
                        WHERE d.partmethod OPERATOR(pg_catalog.=) 'h'::pg_catalog.\"char\")"
        ),
        &[],
    );
    if distributed != Some(true) {
        return;
    }
    merge(rows, worker_node_rows(&ext));
}

/// What the worker nodes' `ttl_stats` say of the hash-distributed tables, one row a table.
fn worker_node_rows(ext: &crate::extension::Extension) -> Vec<StatsRow> {
    let remote = format!(
        "SELECT coalesce(pg_catalog.json_agg(pg_catalog.json_build_array( \
                (SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) FROM pg_catalog.pg_class c \
                 JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
                 WHERE c.oid OPERATOR(pg_catalog.=) ttl_table::pg_catalog.oid), \
                runs, rows_deleted, last_run_at, last_rows_deleted, limit_reached, errors, \
                last_error, oldest_expired, last_success_at, backlog, \
                part IS NOT DISTINCT FROM 'row_ttl')), '[]'::pg_catalog.json) \
         FROM {ext}.ttl_stats \
         WHERE table_name OPERATOR(pg_catalog.=) ttl_table \
           AND ttl_table::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (ARRAY( \
                 SELECT logicalrelid::pg_catalog.oid FROM pg_catalog.pg_dist_partition \
                 WHERE partmethod OPERATOR(pg_catalog.=) 'h'::pg_catalog.\"char\"))"
    );
    let sql = "SELECT pg_catalog.to_regclass(e OPERATOR(pg_catalog.->>) 0)::pg_catalog.oid, \
                      pg_catalog.sum((e OPERATOR(pg_catalog.->>) 1)::pg_catalog.int8)::pg_catalog.int8, \
                      pg_catalog.sum((e OPERATOR(pg_catalog.->>) 2)::pg_catalog.int8)::pg_catalog.int8, \
                      pg_catalog.max((e OPERATOR(pg_catalog.->>) 3)::pg_catalog.timestamptz), \
                      pg_catalog.sum((e OPERATOR(pg_catalog.->>) 4)::pg_catalog.int8)::pg_catalog.int8, \
                      pg_catalog.sum((e OPERATOR(pg_catalog.->>) 5)::pg_catalog.int8)::pg_catalog.int8, \
                      pg_catalog.sum((e OPERATOR(pg_catalog.->>) 6)::pg_catalog.int8)::pg_catalog.int8, \
                      (pg_catalog.array_agg(r.nodename OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) \
                          r.nodeport OPERATOR(pg_catalog.||) ': ' OPERATOR(pg_catalog.||) \
                          (e OPERATOR(pg_catalog.->>) 7) \
                        ORDER BY (e OPERATOR(pg_catalog.->>) 3)::pg_catalog.timestamptz DESC NULLS LAST) \
                       FILTER (WHERE (e OPERATOR(pg_catalog.->>) 7) IS NOT NULL))[1], \
                      pg_catalog.min((e OPERATOR(pg_catalog.->>) 8)::pg_catalog.timestamptz), \
                      pg_catalog.min((e OPERATOR(pg_catalog.->>) 9)::pg_catalog.timestamptz), \
                      pg_catalog.sum((e OPERATOR(pg_catalog.->>) 10)::pg_catalog.int8)::pg_catalog.int8, \
                      (e OPERATOR(pg_catalog.->>) 11)::pg_catalog.bool \
               FROM pg_catalog.run_command_on_workers($1) r, \
                    pg_catalog.json_array_elements(r.result::pg_catalog.json) e \
               WHERE r.success \
                 AND pg_catalog.to_regclass(e OPERATOR(pg_catalog.->>) 0)::pg_catalog.oid \
                     OPERATOR(pg_catalog.=) ANY (ARRAY( \
                       SELECT logicalrelid::pg_catalog.oid FROM pg_catalog.pg_dist_partition \
                       WHERE partmethod OPERATOR(pg_catalog.=) 'h'::pg_catalog.\"char\")) \
               GROUP BY 1, 12";
    crate::gucs::with_settings(&crate::citus::CONNECT_TIMEOUT, || worker_stats(sql, remote))
}

/// The rows of `sql` (run on the coordinator, `$1` = `remote`, the query each node runs).
fn worker_stats(sql: &str, remote: String) -> Vec<StatsRow> {
    Spi::connect(|client| {
        client
            .select(sql, None, &[remote.into()])
            .map(|found| {
                found
                    .filter_map(|row| {
                        let n = |i| row.get::<i64>(i).ok().flatten().unwrap_or(0);
                        Some((
                            row.get::<pg_sys::Oid>(1).ok()??,
                            n(2),
                            n(3),
                            row.get::<TimestampWithTimeZone>(4).ok().flatten(),
                            n(5),
                            n(6),
                            n(7),
                            row.get::<String>(8).ok().flatten(),
                            row.get::<TimestampWithTimeZone>(9).ok().flatten(),
                            None,
                            row.get::<TimestampWithTimeZone>(10).ok().flatten(),
                            None,
                            row.get::<i64>(11).ok().flatten(),
                            row.get::<bool>(12).ok().flatten().unwrap_or(false),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default()
    })
}

/// Adds each of `added` to the row of its table in `rows` (summed), or as a row of its own.
fn merge(rows: &mut Vec<StatsRow>, added: Vec<StatsRow>) {
    for node in added {
        match rows
            .iter_mut()
            .find(|row| row.0 == node.0 && row.13 == node.13)
        {
            Some(here) => {
                here.1 += node.1;
                here.2 += node.2;
                here.3 = here.3.max(node.3);
                here.4 += node.4;
                here.5 += node.5;
                here.6 += node.6;
                here.7 = here.7.take().or(node.7);
                here.8 = match (here.8, node.8) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                // the last success of every node: the earliest of theirs
                here.10 = match (here.10, node.10) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                here.12 = match (here.12, node.12) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                };
            }
            None => rows.push(node),
        }
    }
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
    for mut row in visible_entries() {
        row.13 = false;
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
    if !crate::preload::preloaded() {
        return TableIterator::new(Vec::new());
    }
    let dboid = unsafe { pg_sys::MyDatabaseId }.to_u32();
    let rows: Vec<_> = store::read(|store| {
        store
            .entries()
            .iter()
            .filter(|e| e.dboid == dboid && e.rows_undeletable > 0)
            .map(|e| (pg_sys::Oid::from(e.reloid), e.rows_undeletable as i64))
            .collect()
    });
    TableIterator::new(rows)
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
