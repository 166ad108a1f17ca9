//! The frame every batch of the worker runs in, and its statements: its own transaction,
//! within `jsonb_ttl.batch_timeout` and the deadline owner code cannot catch; the table locked,
//! its current names and owner read, then the batch as that owner; statements prepared once and
//! kept across passes; a failed batch split into parts.

use super::frame::Frame;
use super::statements::{prepare_into, Prepared};
use super::Worker;
use crate::archive::Verdict;
use crate::bgw::BatchTimer;
use crate::catalog::{self, TtlIndex};
use crate::deadline::Deadline;
use crate::deleter::{self, Batch, Named, Outcome, Reached};
use crate::extension::Extension;
use crate::generic_plan::GenericPlan;
use crate::leaf_check::{self, Marks};
use crate::leaf_range::{self, RangeEnd};
use crate::origin::Stream;
use crate::txn::{in_transaction, Failure};
use crate::undeletable;
use crate::{gucs, owner};
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use std::collections::HashMap;

impl Worker {
    /// One batch of the form `batch` in its own transaction, as the table's owner (see
    /// [`in_batch_frame`]): what it did, or `None` when the TTL index or the table no longer
    /// exists.
    ///
    /// The batch first runs its DELETE without row locks ([`deleter::unlocked_batch_sql`]),
    /// which writes less WAL. When that DELETE meets a row another transaction holds, it gives
    /// up within `jsonb_ttl.lock_timeout` (a lock timeout, or a deadlock) and the batch is run
    /// again at once, in a new transaction, with the pick that skips busy rows (`FOR UPDATE
    /// SKIP LOCKED`); so do the table's other batches in this pass. A lock timeout on the
    /// table itself (DDL holds it) is no row's: it ends the visit as before.
    pub(super) fn batch(
        &mut self,
        ext: &Extension,
        (batch, low, marks): (Batch, i64, &Marks),
        index: &TtlIndex,
        limit: i64,
    ) -> Result<Option<Outcome>, Failure> {
        let set_aside = self.undeletable.rows(index.set_aside_key());
        let locked = self.frame.row_locked.contains(&index.target());
        let mut reached_rows = false;
        let statements = &mut self.statements;
        let first = in_delete_frame(&mut self.frame, index, |current, expire_after| {
            reached_rows = true;
            run_statements(
                statements,
                ext,
                (batch, low, marks),
                current,
                expire_after,
                limit,
                &set_aside,
                locked,
            )
        });
        match first {
            Err(failure) if !locked && reached_rows && waited_on_a_row(&failure) => {
                self.frame.row_locked.insert(index.target());
                debug1!(
                    "jsonb_ttl: a row of {} is busy ({failure}): its batches skip busy rows \
                     in this pass",
                    index.display_name
                );
                let statements = &mut self.statements;
                in_delete_frame(&mut self.frame, index, |current, expire_after| {
                    run_statements(
                        statements,
                        ext,
                        (batch, low, marks),
                        current,
                        expire_after,
                        limit,
                        &set_aside,
                        true,
                    )
                })
            }
            other => other,
        }
    }

    /// Whether the archive of `index` still takes its rows, asked after a batch of `rows`
    /// failed: it no longer fits ([`crate::archive::usable`]), or it refuses the rows
    /// ([`crate::archive::takes_rows`]); [`Verdict::Takes`] when it has none.
    pub(super) fn archive_verdict(
        &mut self,
        ext: &Extension,
        index: &TtlIndex,
        rows: i64,
    ) -> Verdict {
        let Some(archive) = index.archive_to else {
            return Verdict::Takes;
        };
        let set_aside = self.undeletable.rows(index.set_aside_key());
        let verdict = in_batch_frame(&mut self.frame, index, |current, expire_after| {
            let Some(owner) = crate::owner::table_owner(current.table) else {
                return Verdict::Unknown;
            };
            match crate::archive::usable(current.table, &current.display_name, archive, owner) {
                Err(reason) => Verdict::Refuses(reason),
                // the trial INSERT is a TTL move as the batch's is: jsonb_ttl.expiring = on for
                // the archive's triggers (a guard that takes only TTL moves takes it)
                Ok(()) => gucs::expiring(|| {
                    crate::archive::takes_rows(ext, current, expire_after, rows, &set_aside)
                }),
            }
        });
        verdict.ok().flatten().unwrap_or(Verdict::Unknown)
    }

    /// A failed batch again, in parts: the rows it picks are deleted in halves, each in a
    /// subtransaction, down to single rows; the rows that fail alone are set aside. Reported
    /// as a plain batch of what it deleted.
    pub(super) fn split(
        &mut self,
        ext: &Extension,
        index: &TtlIndex,
        limit: i64,
    ) -> Result<Option<Outcome>, Failure> {
        let set_aside = self.undeletable.rows(index.set_aside_key());
        let room = undeletable::MAX_PER_TABLE.saturating_sub(set_aside.len());
        let parts = in_delete_frame(&mut self.frame, index, |current, expire_after| {
            let sql = |built: Result<String, String>| built.unwrap_or_else(|e| error!("{e}"));
            let pick = sql(deleter::pick_sql(ext, current, true));
            let delete_rows = sql(deleter::delete_rows_sql(ext, current));
            let rows: Vec<pg_sys::ItemPointerData> = Spi::connect_mut(|client| {
                client
                    .update(
                        &pick,
                        None,
                        &[expire_after.into(), limit.into(), set_aside.clone().into()],
                    )?
                    .map(|row| row.get::<pg_sys::ItemPointerData>(1))
                    .collect::<Result<Vec<_>, _>>()
                    .map(|rows| rows.into_iter().flatten().collect())
            })
            .unwrap_or_else(|e| error!("jsonb_ttl: cannot pick rows: {e}"));
            let archives = current.archive_to.is_some();
            let mut parts = deleter::delete_in_parts(&delete_rows, expire_after, &rows, archives);
            parts.undeletable.truncate(room);
            parts
        })?;
        Ok(parts.map(|parts| {
            let deleted = parts.deleted;
            self.undeletable.add(
                index.set_aside_key(),
                &index.display_name,
                parts.undeletable,
            );
            Outcome::picked(None, deleted)
        }))
    }
}

/// The statements of one batch of the form `batch`, as prepared for the table's current names
/// (prepared again if a rename changed them, or if `locked` changed: the DELETE whose pick
/// locks its rows and skips busy ones, [`deleter::batch_sql`], rather than the one without row
/// locks, [`deleter::unlocked_batch_sql`]), run for at most `limit` rows. A batch by key range
/// from `low` ([`run_range`], its end found through `marks` first) runs as a plain one when its
/// range cannot be used, or `locked`.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_statements(
    statements: &mut HashMap<((Oid, catalog::Part), Batch), Prepared<GenericPlan>>,
    ext: &Extension,
    (batch, low, marks): (Batch, i64, &Marks),
    current: &Named,
    expire_after: pgrx::datum::Interval,
    limit: i64,
    set_aside: &[pg_sys::ItemPointerData],
    locked: bool,
) -> Outcome {
    let sql = |built: Result<String, String>| built.unwrap_or_else(|e| error!("{e}"));
    if batch == Batch::Range && !locked {
        let range = (low, limit, marks);
        if let Some(outcome) = run_range(statements, ext, current, expire_after, range, set_aside) {
            return outcome;
        }
    }
    let batch = match batch {
        Batch::Range => Batch::Plain,
        other => other,
    };
    let skip = !set_aside.is_empty();
    let args = &deleter::BATCH_ARGS;
    let delete = match locked {
        true => sql(deleter::batch_sql(ext, current, skip)),
        false => sql(deleter::unlocked_batch_sql(ext, current, skip)),
    };
    prepare_into(statements, (current.target(), Batch::Plain), &delete, args);
    if batch == Batch::Counting {
        let pick_count = sql(deleter::pick_count_sql(ext, current, skip));
        prepare_into(
            statements,
            (current.target(), Batch::Counting),
            &pick_count,
            args,
        );
    }
    let delete = &statements[&(current.target(), Batch::Plain)].1;
    let pick_count =
        (batch == Batch::Counting).then(|| &statements[&(current.target(), Batch::Counting)].1);
    Spi::connect_mut(|_| deleter::run_batch(delete, pick_count, expire_after, limit, set_aside))
        .unwrap_or_else(|e| error!("delete failed: {e}"))
}

/// A batch by key range ([`deleter::range_batch_sql`]) of at most `rows` rows from the key
/// `low`, its end read from the TTL index first ([`leaf_check::range_end`], through `marks`
/// where they reach); `None` when the range cannot be used: the index or the cutoff cannot be
/// read here, or more than `rows` entries share the key `low` (the caller runs a plain batch).
fn run_range(
    statements: &mut HashMap<((Oid, catalog::Part), Batch), Prepared<GenericPlan>>,
    ext: &Extension,
    current: &Named,
    expire_after: pgrx::datum::Interval,
    (low, rows, marks): (i64, i64, &Marks),
    set_aside: &[pg_sys::ItemPointerData],
) -> Option<Outcome> {
    let index_oid = current.index_oid?;
    // (in the frame, as the owner: the time zone `now() - $1` computes in is this session's)
    let cutoff = leaf_check::cutoff(&expire_after, || true)?;
    let (high, reached) =
        match leaf_range::range_end(current.table, index_oid, low, cutoff, rows, marks)? {
            RangeEnd::Empty => return Some(range_outcome(0, Reached::Cutoff)),
            RangeEnd::Run => return None,
            RangeEnd::Key(key) => (Some(key), Reached::Key(key)),
            RangeEnd::Cutoff => (None, Reached::Cutoff),
        };
    let skip = !set_aside.is_empty();
    let sql = deleter::range_batch_sql(ext, current, skip).unwrap_or_else(|e| error!("{e}"));
    let key = (current.target(), Batch::Range);
    prepare_into(statements, key, &sql, &deleter::RANGE_ARGS);
    let delete = &statements[&key].1;
    let deleted =
        Spi::connect_mut(|_| deleter::run_range(delete, expire_after, low, high, set_aside))
            .unwrap_or_else(|e| error!("delete failed: {e}"));
    Some(range_outcome(deleted, reached))
}

fn range_outcome(deleted: u64, reached: Reached) -> Outcome {
    Outcome {
        picked: None,
        deleted,
        reached: Some(reached),
    }
}

/// Runs `f` as one batch of `index` ([`Frame::run`]) in its own transaction, within
/// `jsonb_ttl.batch_timeout`, committed without waiting for its WAL flush when
/// `jsonb_ttl.synchronous_commit` is off. What the owner's code left in the session that its
/// GUC nest level does not undo is released after it.
pub(super) fn in_batch_frame<R>(
    frame: &mut Frame,
    index: &TtlIndex,
    f: impl FnOnce(&Named, pgrx::datum::Interval) -> R,
) -> Result<Option<R>, Failure> {
    in_frame(frame, index, Stream::NONE, false, |_| 0, f)
}

/// What a batch that deletes reports: the rows it removed.
trait Removed {
    fn removed(&self) -> u64;
}

impl Removed for Outcome {
    fn removed(&self) -> u64 {
        self.deleted
    }
}

impl Removed for deleter::Parts {
    fn removed(&self) -> u64 {
        self.deleted
    }
}

/// [`in_batch_frame`] for a batch that deletes, the TTL index's catalog row locked until it
/// ends (see [`Frame::run`]): its transaction carries what the TTL index's
/// change-stream options ask for (see [`crate::origin`]): the replication origin, set up as
/// the worker before the owner's code runs; a logical message of the rows removed, written
/// as the worker after it.
fn in_delete_frame<R: Removed>(
    frame: &mut Frame,
    index: &TtlIndex,
    f: impl FnOnce(&Named, pgrx::datum::Interval) -> R,
) -> Result<Option<R>, Failure> {
    let stream = Stream::for_batch(index.replication_origin, index.logical_message)?;
    in_frame(frame, index, stream, true, R::removed, f)
}

/// The frame of [`in_batch_frame`] with `stream` around the batch, the TTL index's catalog row
/// locked or not (`lock`, see [`Frame::run`]; `removed`: the rows a batch's result says it
/// removed).
fn in_frame<R>(
    frame: &mut Frame,
    index: &TtlIndex,
    stream: Stream,
    lock: bool,
    removed: impl FnOnce(&R) -> u64,
    f: impl FnOnce(&Named, pgrx::datum::Interval) -> R,
) -> Result<Option<R>, Failure> {
    let done = in_transaction(|| {
        // the origin first, within a wait of its own: another database's batches that carry
        // it never use this batch's time limit up
        stream.acquire();
        let _timer = BatchTimer::arm(gucs::BATCH_TIMEOUT_MS.get());
        let _deadline = Deadline::arm(
            index.stats_table(),
            index.owner,
            gucs::BATCH_TIMEOUT_MS.get(),
        );
        if !gucs::SYNCHRONOUS_COMMIT.get() {
            // until the transaction ends: its commit is what it is for
            gucs::override_setting(c"synchronous_commit", "off");
        }
        stream.begin();
        let mut cutoff = None;
        let done = frame.run(index, lock, |current, expire_after| {
            cutoff = Some(expire_after);
            f(current, expire_after)
        });
        if let (Some(done), Some(expire_after)) = (&done, cutoff) {
            stream.end(index.table, removed(done), expire_after);
        }
        done
    });
    owner::release_session_state();
    done
}

/// Whether a batch without row locks failed waiting for a lock: a row another transaction
/// holds, past `jsonb_ttl.lock_timeout`, or a deadlock with that transaction.
pub(super) fn waited_on_a_row(failure: &Failure) -> bool {
    matches!(
        failure.code,
        PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE | PgSqlErrorCode::ERRCODE_T_R_DEADLOCK_DETECTED
    )
}
