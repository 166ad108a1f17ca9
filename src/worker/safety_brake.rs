//! The safety brake before a visit (see [`crate::brake`] for what it is): the TTL index's
//! btree read first, then the count as the owner, and the pause.

use super::batch::in_batch_frame;
use super::Worker;
use crate::catalog::TtlIndex;
use crate::extension::Extension;
use crate::leaf_check::{self, Marks};
use crate::txn::{in_transaction, Failure};
use crate::{brake, gucs, partitions};
use pgrx::pg_sys;
use pgrx::prelude::*;

impl Worker {
    /// The safety brake before a visit (see [`crate::brake`]): reads the TTL index's btree,
    /// then (past the limit there) counts the expired rows of `index`'s table as its owner, up
    /// to the limit, and pauses the TTL index when there are more. A backlog that passed is not counted again until a visit drains it (each visit
    /// would recount what is left of it); a count that outlasts `jsonb_ttl.batch_timeout`
    /// pauses the index too, saying so (it cannot tell, and the owner can resume). The walk of
    /// the btree leaves `marks` (spaced for the visit's batches) for its batches by key range.
    pub(super) fn brake(&mut self, ext: &Extension, index: &TtlIndex, mut marks: Marks) -> Brake {
        if !index.brake_available
            || index.brake_released
            || self.brake_checked.get(&index.target()) == Some(&index.version)
            || self.brake_checked_roots.get(&(index.root, index.part)) == Some(&index.version)
        {
            return Brake::Go(Marks::default());
        }
        let counted = self.count_for_brake(ext, index, &mut marks);
        let reason = match counted {
            Ok(Some((Some(reason), _))) => reason,
            Ok(counted) => {
                let key = index.version.clone();
                match counted {
                    Some((None, true)) => self
                        .brake_checked_roots
                        .insert((index.root, index.part), key),
                    _ => self.brake_checked.insert(index.target(), key),
                };
                return Brake::Go(marks);
            }
            Err(e) if e.code == PgSqlErrorCode::ERRCODE_QUERY_CANCELED => {
                brake::reason_uncounted(index, &e.message)
            }
            Err(e) => return Brake::Failed(format!("the safety brake could not count: {e}")),
        };
        if let Err(e) = in_transaction(|| brake::pause(ext, index.root, &reason)) {
            return Brake::Failed(format!("the safety brake could not pause: {e}"));
        }
        log!("jsonb_ttl: {reason}");
        Brake::Paused
    }

    /// The safety brake's count, in a batch frame: why the TTL index must pause, if it must
    /// (`Ok(Some((None, _)))`: it need not; `Ok(None)`: the table is gone), and whether it
    /// counted a whole partitioned table. The walk of the btree records `marks`.
    fn count_for_brake(
        &mut self,
        ext: &Extension,
        index: &TtlIndex,
        marks: &mut Marks,
    ) -> Result<Option<(Option<String>, bool)>, Failure> {
        in_batch_frame(&mut self.frame, index, |current, expire_after| {
            // a partition: the whole partitioned table (see brake::partitioned_root)
            let root = brake::partitioned_root(current);
            let whole = root.is_some();
            let (rows, sql, table) = match root {
                Some(root) => (
                    partitions::leaf_rows(current.root),
                    brake::count_sql_in(ext, current, &root),
                    root,
                ),
                None => (
                    brake::table_rows(current.table),
                    brake::count_sql(ext, current),
                    current.display_name.clone(),
                ),
            };
            let fraction = gucs::MAX_TABLE_FRACTION.get();
            let Some(limit) = brake::limit(rows, fraction, gucs::BRAKE_MIN_ROWS.get() as i64)
            else {
                return (None, whole);
            };
            if !whole && few_entries(current, &expire_after, limit, marks) {
                return (None, whole);
            }
            let sql = sql.unwrap_or_else(|e| error!("{e}"));
            let expired =
                // read-only: no transaction ID, no empty commit record
                crate::read::one_checked::<i64>(&sql, &[expire_after.into(), (limit + 1).into()])
                    .unwrap_or_else(|e| error!("jsonb_ttl: cannot count the expired rows: {e}"))
                    .unwrap_or(0);
            (
                (expired > limit).then(|| brake::reason(current, &table, limit, rows)),
                whole,
            )
        })
    }
}

/// Whether `index`'s TTL index has at most `limit` entries before the cutoff, read from its
/// btree alone ([`leaf_check::entries_before`]: no heap, no code of the owner's): an upper
/// bound of the expired rows (entries of dead rows count too), so within the limit the safety
/// brake need not count them row by row. A table in its steady state loses a small fraction a
/// pass, and counting it through the heap cost a third of the delete itself. Called in the
/// batch frame, where `now() - expire_after` is what the count's SQL computes. The walk
/// records `marks` (cleared when it says nothing).
fn few_entries(
    index: &TtlIndex,
    expire_after: &pgrx::datum::Interval,
    limit: i64,
    marks: &mut Marks,
) -> bool {
    let Some(index_oid) = index.index_oid else {
        return false;
    };
    let locked = unsafe {
        pg_sys::ConditionalLockRelationOid(index.table, pg_sys::AccessShareLock as pg_sys::LOCKMODE)
    };
    let few = locked
        && leaf_check::cutoff(expire_after, || true)
            .and_then(|cutoff| {
                leaf_check::entries_before(index.table, index_oid, cutoff, limit + 1, Some(marks))
            })
            .is_some_and(|entries| entries <= limit);
    if !few {
        *marks = Marks::default();
    }
    few
}

/// What the safety brake says before a visit.
pub(super) enum Brake {
    /// Purge, with the marks of the brake's walk of the TTL index, if it walked it.
    Go(Marks),
    /// Paused now (the reason is in the catalog, and the log).
    Paused,
    /// The check itself failed: the table is not purged in this pass.
    Failed(String),
}
