//! Removing the expired rows of one TTL index, in batches.
//!
//! The worker's batches take one range of the TTL index's keys each ([`range_batch_sql`]: each
//! row read once, through the index, no document parsed again), the next starting where the
//! one before ended. Where no range can be used, and in `ttl_expire_now`, a batch picks its rows
//! from the head of the index instead.
//!
//! That batch is one statement, prepared once per table and executed as often as needed:
//!
//! ```sql
//! DELETE FROM ONLY tbl
//! WHERE ctid = ANY (ARRAY(
//!         SELECT ctid FROM ONLY tbl
//!         WHERE <reference> < now() - $1      -- through the TTL index, oldest first
//!           [AND ctid <> ALL ($3)]            -- rows set aside, when there are any
//!         LIMIT $2
//!         FOR UPDATE SKIP LOCKED))            -- rows busy elsewhere are left for later
//! ```
//!
//! (shown unqualified: the statements themselves name every function, cast and operator by
//! schema, `OPERATOR(pg_catalog.<)`, `pg_catalog.now()`, so no search_path redirects them).
//!
//! `FOR UPDATE` in READ COMMITTED re-evaluates the condition on the newest version of a row it
//! locks, so a row whose date was moved into the future after being found is never locked, and
//! a row it locks stays as it is until the batch commits: no other transaction can change it
//! between the pick and the DELETE. So the DELETE does not evaluate the condition again (that
//! would parse every document twice). When the pick had to follow a row to a version committed
//! after the statement's snapshot, the DELETE, which reads by that snapshot, does not see the
//! version and removes nothing: the row, still expired, is picked again by the next batch.
//! `tests/isolation` pins these cases.
//!
//! A batch that removes fewer rows than asked usually means the table is drained. But rows a
//! DELETE trigger keeps (it returns NULL), or whose date moved meanwhile, make it short too, and
//! kept rows stay at the head of the index for the next batch. So after a short batch come
//! [`Batch::Counting`] ones, which first lock and count the rows the DELETE will pick
//! (`SELECT count(*) FROM (<the same SELECT … FOR UPDATE SKIP LOCKED>)`), to tell the two apart
//! (see [`Purge`]). The DELETE then finds those rows already locked by its own transaction.
//!
//! The worker runs another form of the batch first, [`unlocked_batch_sql`]: the same pick
//! without `FOR UPDATE SKIP LOCKED`, and the condition tested again by the DELETE. It writes no
//! row-lock record for each row. When it meets a row another transaction holds, it waits within
//! `jsonb_ttl.lock_timeout`, and the worker runs the batch again in the form above.
//! `ttl_expire_now` ([`crate::expire_now`]) uses only the form above.
//!
//! A field TTL's statements are the same with `UPDATE ONLY tbl SET doc = doc #- '{…}'` in
//! place of `DELETE FROM ONLY tbl` ([`TtlIndex::removal`], see [`crate::field`]); each tests
//! expiry again on the row version it changes.

use crate::catalog::TtlIndex;
use crate::extension::Extension;
use crate::generic_plan::GenericPlan;
use crate::planner::MARKER;
use crate::txn::{in_subtransaction, Failure};
use pgrx::datum::Interval;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgBuiltInOids;
use std::ffi::CStr;

pub use jsonb_ttl_core::purge::{Batch, Outcome, Purge, Reached};

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
pub fn batch_sql(
    ext: &Extension,
    index: &TtlIndex,
    skip_set_aside: bool,
) -> Result<String, String> {
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
    index: &TtlIndex,
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
    index: &TtlIndex,
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
pub fn delete_rows_sql(ext: &Extension, index: &TtlIndex) -> Result<String, String> {
    let reference = index.reference(ext)?;
    index.archived(format!(
        "{MARKER}{} WHERE ctid OPERATOR(pg_catalog.=) ANY ($2) AND {}",
        index.removal(),
        index.expired(ext, &reference)
    ))
}

/// What [`delete_in_parts`] did.
#[derive(Default, Debug)]
pub struct Parts {
    pub deleted: u64,
    /// Rows whose DELETE fails on its own, with the error.
    pub undeletable: Vec<(pg_sys::ItemPointerData, Failure)>,
}

/// The most subtransactions one split opens: past 64, a backend's subtransaction ids no
/// longer fit its cache in the proc array, and every snapshot taken meanwhile, server-wide,
/// gets slower. The rows a split leaves are picked again by the next batch.
pub const MAX_SUBTRANSACTIONS: usize = 64;

/// Deletes `rows` (picked and locked by this transaction), each part in a subtransaction: a
/// part whose DELETE fails (a trigger raises, a foreign key restricts) is halved and tried
/// again, down to single rows, which are reported as undeletable. One row that can never be
/// deleted costs about 2·log2(batch) subtransactions and keeps no other row; at most
/// [`MAX_SUBTRANSACTIONS`] are opened, and the rows not reached stay for the next batch. A
/// failure that belongs to the moment (a cancel, `jsonb_ttl.batch_timeout`, a lock timeout, a
/// deadlock) is no row's fault: it ends the whole split, raised again, and sets nothing aside.
/// `archives`: `delete_rows` is the archiving form ([`crate::archive::wrap`]), which returns
/// the count of rows it removed.
pub fn delete_in_parts(
    delete_rows: &str,
    expire_after: Interval,
    rows: &[pg_sys::ItemPointerData],
    archives: bool,
) -> Parts {
    let mut parts = Parts::default();
    let mut pending: Vec<&[pg_sys::ItemPointerData]> = vec![rows];
    let mut opened = 0;
    while let Some(part) = pending.pop() {
        if part.is_empty() {
            continue;
        }
        if opened == MAX_SUBTRANSACTIONS {
            break;
        }
        opened += 1;
        let attempt = in_subtransaction(|| {
            Spi::connect_mut(|client| {
                client
                    .update(
                        delete_rows,
                        None,
                        &[expire_after.into(), part.to_vec().into()],
                    )
                    .and_then(|done| match archives {
                        // the archiving form returns the count of rows its DELETE removed
                        true => done.first().get_one::<i64>().map(|n| n.unwrap_or(0) as u64),
                        false => Ok(done.len() as u64),
                    })
            })
            .unwrap_or_else(|e| error!("{e}"))
        });
        match attempt {
            Ok(deleted) => parts.deleted += deleted,
            Err(failure) if failure.is_transient() => {
                pgrx::pg_sys::panic::ErrorReport::new(failure.code, failure.message, "jsonb_ttl")
                    .report(PgLogLevel::ERROR);
            }
            Err(failure) if part.len() == 1 => parts.undeletable.push((part[0], failure)),
            Err(_) => {
                let (head, tail) = part.split_at(part.len() / 2);
                pending.push(tail);
                pending.push(head);
            }
        }
    }
    parts
}

/// `SET CONSTRAINTS ALL IMMEDIATE`, without parsing a statement, before the owner's section of
/// every batch, the worker's and a caller's (`ttl_expire_now`, `ttl_field_expire_now`, whose
/// transaction keeps its constraints immediate from then on, as after that statement): a
/// deferred check (Django's `DEFERRABLE INITIALLY DEFERRED` foreign keys, a constraint
/// trigger, a key on a table an ON DELETE CASCADE reaches, an archive's) cannot be queued
/// inside the security-restricted operation a batch runs in, and would fail the DELETE; made
/// immediate, a violation belongs to a row, at the end of its statement.
pub fn check_all_now() {
    unsafe {
        let statement = pgrx::PgBox::<pg_sys::ConstraintsSetStmt>::alloc_node(
            pg_sys::NodeTag::T_ConstraintsSetStmt,
        );
        (*statement.as_ptr()).constraints = std::ptr::null_mut(); // ALL
        (*statement.as_ptr()).deferred = false;
        pg_sys::AfterTriggerSetState(statement.as_ptr());
    }
}

/// Runs one batch for at most `limit` rows: the batch statement `delete`, after `pick_count`
/// for a counting batch (both prepared from the functions above); in an SPI connection.
pub fn run_batch(
    delete: &GenericPlan,
    pick_count: Option<&GenericPlan>,
    expire_after: Interval,
    limit: i64,
    set_aside: &[pg_sys::ItemPointerData],
) -> Result<Outcome, String> {
    let args = || {
        [
            expire_after.into_datum(),
            limit.into_datum(),
            set_aside.to_vec().into_datum(),
        ]
    };
    let picked = match pick_count {
        Some(statement) => Some(statement.execute(&args())?.1.unwrap_or(0) as u64),
        None => None,
    };
    let deleted = delete.removed(&args())?;
    Ok(Outcome::picked(picked, deleted))
}

/// Runs one batch by key range, [`range_batch_sql`] prepared as `delete`, for the keys from
/// `low` up to `high` (excluded; `None`: to the cutoff): the rows it removed; in an SPI
/// connection.
pub fn run_range(
    delete: &GenericPlan,
    expire_after: Interval,
    low: i64,
    high: Option<i64>,
    set_aside: &[pg_sys::ItemPointerData],
) -> Result<u64, String> {
    // `-infinity` and `infinity` are the ends of timestamptz, i64::MIN and i64::MAX: a
    // timestamptz datum is its microseconds, by value
    let key = |key: i64| Some(pg_sys::Datum::from(key));
    let args = [
        expire_after.into_datum(),
        key(low),
        key(high.unwrap_or(i64::MAX)),
        set_aside.to_vec().into_datum(),
    ];
    delete.removed(&args)
}

/// What a batch of the worker sets on top of everything, the owner's settings included: its
/// `lock_timeout` (ms). (The planner pins are set while our statements are planned only, see
/// [`crate::planner`].)
pub fn batch_settings(lock_timeout: &str) -> [(&'static CStr, &str); 1] {
    [(c"lock_timeout", lock_timeout)]
}
