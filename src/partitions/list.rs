//! The partitions of a table with `drop_partitions` that have expired whole, or will before the
//! next pass, and about how many rows they and the table hold: catalogs only.

use crate::catalog::TtlIndex;
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;

/// A partition of a TTL table whose rows have all expired.
pub struct Expired {
    pub oid: Oid,
    /// `schema.name`, quoted.
    pub qualified: String,
    /// About how many rows it holds (the planner's estimate).
    pub rows: f64,
    /// Its upper bound is at or before `now() - expire_after` (else it expires whole soon).
    pub expired: bool,
}

/// The direct partitions of `root` whose upper bound is at or before `now() - expire_after`,
/// oldest first; about how many rows the whole table has (its leaves', see [`leaf_rows`]); and
/// the partitions that expire whole before the next pass, one `jsonb_ttl.frequency` from now
/// (see [`super::Visited::left_whole`]). Reads catalogs only.
pub fn expired(index: &TtlIndex) -> (Vec<Expired>, f64, Vec<Oid>) {
    let frequency =
        pgrx::datum::Interval::from_micros(crate::gucs::FREQUENCY_MS.get() as i64 * 1000);
    let (expired, soon): (Vec<Expired>, Vec<Expired>) = list_partitions(index, None, frequency)
        .into_iter()
        .partition(|partition| partition.expired);
    let expired = with_rows(expired);
    let soon = soon.into_iter().map(|partition| partition.oid).collect();
    (expired, leaf_rows(index.root), soon)
}

/// About how many rows the partitioned table `root` has: the sum of its leaves' as
/// [`crate::brake::table_rows`] estimates them (`reltuples` scaled by the pages each has now, as
/// the planner does, capped by the live rows counted). A leaf's `reltuples` alone would be
/// stale in the steady state of a table partitioned by time: the newest partition is analyzed
/// while it fills, and the oldest ones lose their rows to the worker.
pub fn leaf_rows(root: Oid) -> f64 {
    // read-only (crate::read): each pass of a table with drop_partitions would otherwise
    // assign a transaction ID, and write an empty commit record
    let leaves = crate::read::one_checked::<Vec<Oid>>(
        "SELECT pg_catalog.array_agg(relid::pg_catalog.oid) FROM pg_catalog.pg_partition_tree($1) WHERE isleaf",
        &[root.into()],
    )
    .ok()
    .flatten()
    .unwrap_or_default();
    leaves.into_iter().map(leaf_size).sum()
}

/// About how many rows `leaf` has ([`crate::brake::table_rows`]), read under a lock taken for
/// the moment (a partition dropped meanwhile has no file to measure); when the lock is not free
/// at once, the live rows the statistics count.
fn leaf_size(leaf: Oid) -> f64 {
    let mode = pg_sys::AccessShareLock as pg_sys::LOCKMODE;
    unsafe {
        if !pg_sys::ConditionalLockRelationOid(leaf, mode) {
            return crate::brake::live_rows(leaf);
        }
        let rows = crate::brake::table_rows(leaf);
        pg_sys::UnlockRelationOid(leaf, mode);
        rows
    }
}

/// The expired direct partitions of `index`'s table, or only `only` if it still is one, each
/// with about how many rows it holds ([`leaf_rows`]).
pub(super) fn list(index: &TtlIndex, only: Option<Oid>) -> Vec<Expired> {
    let now = pgrx::datum::Interval::from_micros(0);
    with_rows(list_partitions(index, only, now))
}

/// `partitions`, each with about how many rows it holds ([`leaf_rows`]).
fn with_rows(mut partitions: Vec<Expired>) -> Vec<Expired> {
    for partition in &mut partitions {
        partition.rows = leaf_rows(partition.oid);
    }
    partitions
}

/// The direct partitions of `index`'s table (or only `only` if it still is one) whose upper
/// bound is at or before `now() - expire_after + ahead`, without their rows: expired, or
/// (`ahead` > 0) expiring whole within `ahead` (not [`Expired::expired`]).
fn list_partitions(
    index: &TtlIndex,
    only: Option<Oid>,
    ahead: pgrx::datum::Interval,
) -> Vec<Expired> {
    Spi::connect(|client| {
        client
            .select(
                "SELECT c.oid, pg_catalog.quote_ident(n.nspname::pg_catalog.text) \
                          OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) \
                          pg_catalog.quote_ident(c.relname::pg_catalog.text), \
                        b.upper OPERATOR(pg_catalog.<=) \
                          (pg_catalog.now() OPERATOR(pg_catalog.-) $2::pg_catalog.interval) \
                 FROM pg_catalog.pg_inherits i \
                 JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.inhrelid \
                 JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
                 CROSS JOIN LATERAL (SELECT pg_catalog.substring( \
                     pg_catalog.pg_get_expr(c.relpartbound, c.oid), \
                     ' TO \\(''([^'']*)''\\)$'::pg_catalog.text)::pg_catalog.timestamptz AS upper) b \
                 WHERE i.inhparent OPERATOR(pg_catalog.=) $1 AND c.relispartition \
                   AND b.upper OPERATOR(pg_catalog.<=) \
                       (pg_catalog.now() OPERATOR(pg_catalog.-) $2::pg_catalog.interval \
                        OPERATOR(pg_catalog.+) $4::pg_catalog.interval) \
                   AND ($3 IS NULL OR c.oid OPERATOR(pg_catalog.=) $3) \
                 ORDER BY b.upper",
                None,
                &[
                    index.root.into(),
                    index.expire_after.into(),
                    only.into(),
                    ahead.into(),
                ],
            )
            .map(|rows| {
                rows.map(|row| Expired {
                    oid: row.get::<Oid>(1).ok().flatten().unwrap_or_default(),
                    qualified: row.get::<String>(2).ok().flatten().unwrap_or_default(),
                    rows: 0.0,
                    expired: row.get::<bool>(3).ok().flatten().unwrap_or(false),
                })
                .collect::<Vec<_>>()
            })
    })
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot list the partitions: {e}"))
}
