//! The statements of a batch (see the folder's text): the probe, the pick, the batch in its
//! three forms (locked, unlocked, by key range), the count of a counting batch and the DELETE of
//! given rows, each built from a target's conditions ([`super::conditions`]) and, for those
//! that remove rows, as the target names its archive now ([`Named::archived`]).

use super::conditions::{on_conflict, Named};
use crate::catalog::{Part, TtlIndex};
use crate::extension::Extension;
use crate::planner::MARKER;
use pgrx::prelude::*;
use pgrx::PgBuiltInOids;

/// The probe of a TTL index: is any row expired? (parameter: `$1 interval` expire_after). An
/// index scan that stops at the first entry: no user code runs, no row is locked.
///
/// `ORDER BY` is what keeps it an index scan: `now() - $1` is no constant at plan time, so the
/// planner guesses a third of the rows match, and for a bare `LIMIT 1` it would rather scan
/// the heap until one turns up — the whole table when nothing is expired (measured: 1.4 s for
/// 5M rows, against 0.05 ms through the index). Selecting `ctid` keeps it a plain index scan,
/// which marks the entries of rows deleted earlier as dead as it passes them. The first column
/// is the oldest expired reference time, which the worker records for `ttl_stats`.
pub fn probe_sql(ext: &Extension, index: &TtlIndex) -> Result<String, String> {
    let reference = index.reference(ext)?;
    Ok(format!(
        "{MARKER}SELECT {reference}, ctid FROM ONLY {} WHERE {} ORDER BY {reference} LIMIT 1",
        index.qualified_table,
        index.expired(ext, &reference)
    ))
}

/// The parameter type of the probe: expire_after.
pub const PROBE_ARGS: [PgBuiltInOids; 1] = [PgBuiltInOids::INTERVALOID];

/// The rows a batch picks: through the TTL index, oldest first, skipping rows locked elsewhere
/// and, when `skip_set_aside`, the rows set aside because they cannot be deleted (`$3 tid[]`;
/// a statement of its own, so that the common case pays no per-row test for an empty list).
///
/// Oldest first is the order of the forward index scan that the planner pins make the only
/// plan ([`crate::planner`]: no sequential or bitmap scan, no sort). There is no `ORDER BY`: it
/// would compute every row's reference time once more, for a sort column nothing sorts on
/// (`tests/pg_regress/expected/deleter.out` pins the plan).
pub fn pick_sql(ext: &Extension, index: &TtlIndex, skip_set_aside: bool) -> Result<String, String> {
    let reference = index.reference(ext)?;
    let set_aside = not_set_aside(skip_set_aside, "$3");
    Ok(format!(
        "{MARKER}SELECT ctid FROM ONLY {} WHERE {}{set_aside} \
         LIMIT $2 FOR UPDATE SKIP LOCKED",
        index.qualified_table,
        index.expired(ext, &reference)
    ))
}

/// The condition that leaves out the rows set aside, given as the `tid[]` parameter `param`,
/// when `skip` (else nothing: the common case pays no per-row test for an empty list).
pub(crate) fn not_set_aside(skip: bool, param: &str) -> String {
    match skip {
        true => format!(" AND ctid OPERATOR(pg_catalog.<>) ALL ({param})"),
        false => String::new(),
    }
}

/// The batch statement of a TTL index (parameters: `$1 interval` expire_after, `$2 bigint` limit).
pub fn batch_sql(ext: &Extension, index: &Named, skip_set_aside: bool) -> Result<String, String> {
    // a field TTL's UPDATE tests expiry again on the version it changes
    let again = match index.field {
        Some(_) => format!(" AND {}", index.expired(ext, &index.reference(ext)?)),
        None => String::new(),
    };
    index.archived(format!(
        "{MARKER}{} WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY({})){again}",
        index.removal(),
        pick_sql(ext, index, skip_set_aside)?,
    ))
}

/// The worker's batch statement when no row of the batch is busy (same parameters): the pick
/// takes no row lock, and the DELETE tests expiry again, on the row version it deletes:
///
/// ```sql
/// DELETE FROM ONLY tbl
/// WHERE ctid = ANY (ARRAY(SELECT ctid FROM ONLY tbl WHERE <expired> LIMIT $2))
///   AND <expired>
/// ```
///
/// It writes no row-lock record before each delete (about 60 bytes of WAL a row, a tenth of
/// what a row's delete writes). A row another transaction holds makes it wait: the worker runs
/// it under `jsonb_ttl.lock_timeout`, and a batch that times out (or deadlocks) is run again
/// at once with [`batch_sql`], which skips busy rows (see `Worker::batch`). A row whose date
/// moved into the future after the pick is kept: in READ COMMITTED the DELETE re-evaluates its
/// WHERE on the newest version of a row updated meanwhile.
pub fn unlocked_batch_sql(
    ext: &Extension,
    index: &Named,
    skip_set_aside: bool,
) -> Result<String, String> {
    let reference = index.reference(ext)?;
    let set_aside = not_set_aside(skip_set_aside, "$3");
    let expired = index.expired(ext, &reference);
    index.archived(format!(
        "{MARKER}{removal} WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY(\
         SELECT ctid FROM ONLY {table} WHERE {expired}{set_aside} LIMIT $2)) AND {expired}",
        removal = index.removal(),
        table = index.qualified_table,
    ))
}

/// The worker's batch by key range (parameters: `$1 interval` expire_after, `$2 timestamptz`
/// the range's first key, `$3 timestamptz` the key it ends before, `$4 tid[]` the rows set
/// aside when `skip_set_aside`): the rows of one range of the TTL index, read once, through the
/// index:
///
/// ```sql
/// DELETE FROM ONLY tbl
/// WHERE <reference> >= $2 AND <reference> < $3 AND <expired>
///   [AND ctid <> ALL ($4)]
/// ```
///
/// The three comparisons of the key are the index scan's conditions: expiry is decided on the
/// key the index stores, and the document is not parsed again (a row updated meanwhile is tested
/// again on its newest version, in READ COMMITTED's recheck, which evaluates the expression).
/// The range is read from the index first ([`crate::leaf_check::range_end`]) so that it holds
/// at most the batch's rows; the next batch starts where this one ended, past the entries of
/// the rows it removed. As in [`unlocked_batch_sql`], no row is locked before its delete: a
/// row another transaction holds makes it wait, within `jsonb_ttl.lock_timeout`.
pub fn range_batch_sql(
    ext: &Extension,
    index: &Named,
    skip_set_aside: bool,
) -> Result<String, String> {
    let reference = index.reference(ext)?;
    let set_aside = not_set_aside(skip_set_aside, "$4");
    index.archived(format!(
        "{MARKER}{} WHERE {reference} OPERATOR(pg_catalog.>=) $2 \
         AND {reference} OPERATOR(pg_catalog.<) $3 AND {}{set_aside}",
        index.removal(),
        index.expired(ext, &reference)
    ))
}

/// The parameter types of [`range_batch_sql`]: expire_after, the range's keys, the rows set
/// aside.
pub const RANGE_ARGS: [PgBuiltInOids; 4] = [
    PgBuiltInOids::INTERVALOID,
    PgBuiltInOids::TIMESTAMPTZOID,
    PgBuiltInOids::TIMESTAMPTZOID,
    PgBuiltInOids::TIDARRAYOID,
];

/// The first statement of a counting batch: locks the rows the batch statement will pick, and
/// counts them (same parameters).
pub fn pick_count_sql(
    ext: &Extension,
    index: &TtlIndex,
    skip_set_aside: bool,
) -> Result<String, String> {
    Ok(format!(
        "{MARKER}SELECT pg_catalog.count(*) FROM ({}) picked",
        pick_sql(ext, index, skip_set_aside)?
    ))
}

/// The parameter types of the batch statements and of the pick: expire_after, limit, the rows
/// set aside.
pub const BATCH_ARGS: [PgBuiltInOids; 3] = [
    PgBuiltInOids::INTERVALOID,
    PgBuiltInOids::INT8OID,
    PgBuiltInOids::TIDARRAYOID,
];

/// The DELETE of given rows, still expired (parameters: `$1 interval` expire_after, `$2 tid[]`
/// the rows): how a failed batch is retried in parts (see [`delete_in_parts`]).
pub fn delete_rows_sql(ext: &Extension, index: &Named) -> Result<String, String> {
    let reference = index.reference(ext)?;
    index.archived(format!(
        "{MARKER}{} WHERE ctid OPERATOR(pg_catalog.=) ANY ($2) AND {}",
        index.removal(),
        index.expired(ext, &reference)
    ))
}

/// The trial of an archive's INSERT alone (same parameters as the batch statements): the rows
/// a batch would move, the rows set aside left out when `skip_set_aside`, inserted into the
/// archive of `index` (see [`crate::archive::takes_rows`], which rolls it back); `None` without
/// a usable archive.
pub fn archive_trial_sql(
    ext: &Extension,
    index: &Named,
    skip_set_aside: bool,
) -> Option<Result<String, String>> {
    let Some(Ok(archive)) = &index.archive else {
        return None;
    };
    let reference = match index.reference(ext) {
        Ok(reference) => reference,
        Err(e) => return Some(Err(e)),
    };
    Some(Ok(format!(
        "{MARKER}INSERT INTO {into} ({columns}) SELECT {columns} FROM ONLY {table} \
         WHERE {expired}{set_aside} LIMIT $2{on_conflict}",
        into = archive.qualified,
        columns = archive.columns,
        table = index.qualified_table,
        expired = index.expired(ext, &reference),
        set_aside = not_set_aside(skip_set_aside, "$3"),
        on_conflict = on_conflict(archive),
    )))
}

/// The preview's query (`ttl_expire_preview`, and the held first backlog, [`crate::held`];
/// `$1` at, `$2` expire_after): the count, oldest and newest reference
/// times of the rows expired at `$1`.
pub fn preview_sql(ext: &Extension, index: &TtlIndex) -> String {
    let reference = index.base_reference(ext).unwrap_or_else(|e| error!("{e}"));
    // each part of a TTL index with a per-row TTL field (see crate::row_ttl), or the whole;
    // the part with a TTL of its own is keyed on its expiry, with no expire_after
    let parts = match index.row_ttl {
        Some(_) => index.clone().parts(),
        None => vec![index.clone()],
    };
    let expired = parts
        .iter()
        .map(|part| {
            let key = part.reference(ext).unwrap_or_else(|e| error!("{e}"));
            let cutoff = match part.part {
                Part::OwnTtl => "$1",
                _ => "($1 OPERATOR(pg_catalog.-) $2)",
            };
            format!("({})", part.before(ext, &key, cutoff))
        })
        .collect::<Vec<_>>()
        .join(" OR ");
    // the table itself, partitions included: the TTL index of a partitioned table covers them
    format!(
        "{MARKER}SELECT pg_catalog.count(*), pg_catalog.min({reference}), pg_catalog.max({reference}) \
         FROM {} WHERE {expired}",
        index.qualified_table
    )
}
