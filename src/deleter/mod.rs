//! Removing the expired rows of one TTL index, in batches: what a batch removes and how, built
//! in one place for the worker, `ttl_expire_now`, `ttl_field_expire_now` and the preview. The
//! SQL of a target's conditions and the archive's form are [`conditions`], the statements
//! [`statements`], and running them (a batch, a range, a failed batch split in parts) here.
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

mod conditions;
mod statements;
pub use conditions::{update_head, wrap, Archive, Named};
pub use statements::*;

use crate::generic_plan::GenericPlan;
use crate::txn::{in_subtransaction, Failure};
use pgrx::datum::Interval;
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::ffi::CStr;

pub use jsonb_ttl_core::purge::{Batch, Outcome, Purge, Reached};

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
/// `archives`: `delete_rows` is the archiving form ([`wrap`]), which returns
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
