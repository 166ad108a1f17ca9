//! The visit of one table in a pass ("One table in a pass" in docs/worker.md): the safety
//! brake first, then batch after batch within the limits (`max_table_removes`, the server-wide
//! budget, `max_removes_per_second`, and the replicas' and WAL's, [`crate::throttle`]), each
//! sized to take `batch_time`, a failed one split;
//! then what the visit did, in the statistics.

use super::batch::in_batch_frame;
use super::safety_brake::Brake;
use super::{Limit, Worker};
use crate::archive::Verdict;
use crate::bgw::handle_signals;
use crate::catalog::TtlIndex;
use crate::deleter::{Outcome, Purge};
use crate::extension::Extension;
use crate::leaf_check::Marks;
use crate::txn::Failure;
use crate::{brake, budget, gucs, stats};
use jsonb_ttl_core::batch_size;
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// Where one table's visit stands, batch after batch.
struct Visit {
    purge: Purge,
    /// Where the safety brake's walk of the TTL index saw its keys, for the batches by range.
    marks: Marks,
    removed: u64,
    limit: Limit,
    error: Option<String>,
    /// rows set aside in this visit: shown in errors / last_error, the rows in rows_undeletable
    note: Option<String>,
    /// `max_table_removes`, read as the visit starts.
    max_table: i64,
    /// `batch_time`, read as the visit starts.
    target: Duration,
    /// The size of the next batch.
    rows: i64,
    /// The most rows a batch may take: `batch_size`, or the index's own when lower.
    max_rows: i64,
    /// The most rows removed per second: `max_removes_per_second`, or the index's own when
    /// lower (0: no limit).
    rate: i64,
    /// When the visit began.
    started: Instant,
    /// The TTL index's definition changed since the pass loaded it (see
    /// [`super::frame::Frame::changed`]): the visit ended, the next pass goes on under the new
    /// one.
    changed: bool,
}

impl Visit {
    /// A visit whose first batch asks for `rows` ([`first_rows`]), with the safety brake's
    /// `marks`.
    fn start(index: &TtlIndex, rows: i64, marks: Marks) -> Visit {
        let max_table = gucs::MAX_TABLE_REMOVES.get() as i64;
        let target = Duration::from_millis(gucs::BATCH_TIME_MS.get() as u64);
        let max_rows = lower(gucs::BATCH_SIZE.get() as i64, index.batch_size);
        let rate = lower(
            gucs::MAX_REMOVES_PER_SECOND.get() as i64,
            index.max_removes_per_second,
        );
        Visit {
            purge: Purge::default(),
            marks,
            removed: 0,
            limit: Limit::None,
            error: None,
            note: None,
            max_table,
            target,
            rows,
            max_rows,
            rate,
            started: Instant::now(),
            changed: false,
        }
    }
}

/// The size of the first batch of a visit of `index` whose last visit left its batch size at
/// `last_rows`.
fn first_rows(index: &TtlIndex, last_rows: Option<i64>) -> i64 {
    let target = Duration::from_millis(gucs::BATCH_TIME_MS.get() as u64);
    let max_rows = lower(gucs::BATCH_SIZE.get() as i64, index.batch_size);
    batch_size::first(last_rows, target, max_rows)
}

/// A server limit (0: none) with a TTL index's own on top: the lower one. An index's own
/// limits come from its owner, whom the server's limits hold: they never raise them.
fn lower(server: i64, own: Option<i64>) -> i64 {
    match (server, own) {
        (_, None) => server,
        (0, Some(own)) => own,
        (server, Some(own)) => server.min(own),
    }
}

impl Worker {
    /// Removes the expired rows of one table, batch by batch, within the limits. A batch that
    /// fails because of some of its rows is retried in parts ([`Worker::split`]): the rows that
    /// cannot be deleted are set aside, and the purge goes on behind them.
    pub(super) fn purge(&mut self, ext: &Extension, index: &TtlIndex) -> Limit {
        // (a Citus shard starts where its node's shards of the same table left the size: no
        // ramp-up from the first batch size in each shard)
        let rows = first_rows(index, self.batch_rows.get(&index.sizing_key()).copied());
        let marks = match self.brake(ext, index, Marks::for_batches_of(rows)) {
            Brake::Go(marks) => marks,
            Brake::Paused => {
                // not an error: ttl_stats shows it as paused, with its reason in skipped
                self.paused_roots.insert(index.root);
                return Limit::None;
            }
            // unchecked, not purged: the table waits for the next pass
            Brake::Failed(e) => {
                return report(index, 0, Limit::None, Some(e), None, Ended::default())
            }
        };
        let mut visit = Visit::start(index, rows, marks);
        while self.next_batch(ext, index, &mut visit) {}
        self.end_visit(ext, index, visit)
    }

    /// The next batch of `visit`, if the limits leave room for one: whether another follows.
    fn next_batch(&mut self, ext: &Extension, index: &TtlIndex, visit: &mut Visit) -> bool {
        let rate_cap = batch_size::rate_cap(visit.rate);
        let want = visit
            .rows
            .min(rate_cap.unwrap_or(i64::MAX))
            .min(visit.max_table - visit.removed as i64);
        if want <= 0 {
            visit.limit = Limit::Table;
            return false;
        }
        if !self.rate_allows(index, visit.rate, visit.started) {
            visit.limit = Limit::Rate;
            self.rate_pending.insert(index.target(), index.clone());
            return false;
        }
        // a standby's lag, a slot's WAL or the WAL rate past its limit: wait, at most a frequency
        let patience = Duration::from_millis(gucs::FREQUENCY_MS.get() as u64);
        if !self.throttle.before_batch(patience) {
            visit.limit = Limit::Throttled;
            return false;
        }
        let granted = budget::claim(
            want,
            gucs::MAX_TOTAL_REMOVES.get() as i64,
            gucs::FREQUENCY_MS.get() as i64,
        );
        if granted == 0 {
            visit.limit = Limit::Server;
            return false;
        }
        let batch_started = Instant::now();
        report_activity(&format!(
            "jsonb_ttl: deleting expired rows from {} (batch of {granted})",
            index.display_name
        ));
        let outcome = self.batch_or_split(ext, index, visit, granted);
        report_stats_soon();
        self.count_batch(index, visit, granted, batch_started, outcome)
    }

    /// A batch of the form `visit` calls for, for `granted` rows; when it fails because of some
    /// of its rows, the same batch in parts ([`Worker::split`]), noting the rows set aside.
    fn batch_or_split(
        &mut self,
        ext: &Extension,
        index: &TtlIndex,
        visit: &mut Visit,
        granted: i64,
    ) -> Result<Option<Outcome>, Failure> {
        let form = (visit.purge.next(), visit.purge.low(), &visit.marks);
        let mut outcome = self.batch(ext, form, index, granted);
        if let Err(failure) = outcome.as_ref().map_err(Clone::clone) {
            self.statements
                .retain(|((table, _), _), _| *table != index.table);
            if !failure.is_transient() && !self.undeletable.full(index.set_aside_key()) {
                match self.archive_verdict(ext, index, granted) {
                    Verdict::Takes => {}
                    // the archive's failure, not the rows': none is set aside
                    Verdict::Refuses(reason) => {
                        return Err(Failure {
                            code: failure.code,
                            message: reason,
                        })
                    }
                    // not told: the next pass tries again, nothing set aside meanwhile
                    Verdict::Unknown => return outcome,
                }
                let before = self.undeletable.count(index.set_aside_key());
                outcome = self.split(ext, index, granted);
                let set_aside = self.undeletable.count(index.set_aside_key()) - before;
                if set_aside > 0 {
                    visit.note = Some(format!("{set_aside} row(s) set aside: {failure}"));
                }
            }
        }
        outcome
    }

    /// Counts what a batch of `granted` rows did (the budget's rest given back, the rows in the
    /// statistics, the next batch sized) and throttles: whether the visit goes on.
    fn count_batch(
        &mut self,
        index: &TtlIndex,
        visit: &mut Visit,
        granted: i64,
        batch_started: Instant,
        outcome: Result<Option<Outcome>, Failure>,
    ) -> bool {
        match outcome {
            Ok(None) => {
                // The TTL index or the table is gone since the pass began, or the definition
                // changed (the next pass goes on under the new one): nothing to purge now.
                budget::give_back(granted);
                visit.changed = self.frame.changed;
                false
            }
            Ok(Some(outcome)) => {
                let n = outcome.deleted;
                if outcome.reached.is_some() && n as i64 > granted {
                    // rows came into the ranges since the brake's walk marked them (inserted
                    // already expired, or re-dated into the past): each later range is counted
                    // just before its DELETE
                    visit.marks = Marks::default();
                }
                budget::give_back(granted - n as i64);
                stats::record_batch(index.stats_table(), index.stats_part(), n);
                visit.removed += n;
                let took = batch_started.elapsed();
                visit.rows = batch_size::next(granted, n, took, visit.target, visit.max_rows);
                self.batch_rows.insert(index.sizing_key(), visit.rows);
                if visit.rate > 0 {
                    // the next batch of this table is due once these rows' share of a second
                    // at the rate has passed: in this visit if soon, else at a later one
                    let share = Duration::from_secs_f64(n as f64 / visit.rate as f64);
                    let due = (batch_started + share, index.version.clone());
                    self.rate_due.insert(index.target(), due);
                }
                handle_signals();
                visit.purge.go_on(granted, outcome)
            }
            Err(e) => {
                budget::give_back(granted);
                visit.error = Some(e.message);
                let smaller = batch_size::after_failure(granted, visit.target, visit.max_rows);
                self.batch_rows.insert(index.sizing_key(), smaller);
                false
            }
        }
    }

    /// The end of a visit: the rows set aside and, for a drained table, its lag and the safety
    /// brake's state; then the visit in the statistics.
    fn end_visit(&mut self, ext: &Extension, index: &TtlIndex, visit: Visit) -> Limit {
        if index.field.is_none() {
            // (a field TTL's rows set aside show in its visit's note and the log)
            stats::record_undeletable(
                index.stats_table(),
                self.undeletable.count(index.set_aside_key()) as u64,
            );
        }
        if visit.changed {
            // not drained: what is expired under the new definition is for the next pass
            let ended = Ended {
                took: visit.started.elapsed(),
                backlog: None,
            };
            return report(
                index,
                visit.removed,
                Limit::None,
                visit.error,
                visit.note,
                ended,
            );
        }
        if visit.limit == Limit::None && visit.error.is_none() {
            if self.undeletable.count(index.set_aside_key()) == 0 {
                // drained: nothing expired is left (rows set aside stay, and so does their age)
                record_lag(&mut self.lagging, index, None);
            }
            // drained: the next backlog is checked by the brake again
            self.brake_checked.remove(&index.target());
            if index.brake_released && index.field.is_none() {
                // released by ttl_index_resume() or its creation: the brake holds again, once
                // every target of the TTL index has drained (rearming writes a new version of
                // its definition, which would end the other targets' visits in this pass)
                self.rearm.entry(index.root).or_insert(true);
            }
        } else if index.field.is_none() {
            // (a field TTL's backlog is not the TTL index's: its brake rearms without it)
            self.rearm.insert(index.root, false);
        }
        let backlog = match (&visit.error, visit.limit) {
            (Some(_), _) => None,
            // drained (rows set aside are not expired rows the worker can remove)
            (None, Limit::None) => Some(0),
            // yielded to its own rate: counted at the end of a visit cut short otherwise
            (None, Limit::Rate) => None,
            (None, _) => self.count_backlog(ext, index),
        };
        let took = visit.started.elapsed();
        let ended = Ended { took, backlog };
        report(
            index,
            visit.removed,
            visit.limit,
            visit.error,
            visit.note,
            ended,
        )
    }

    /// The expired rows a visit cut short by a limit left, counted up to
    /// [`stats::BACKLOG_COUNT_LIMIT`] as the safety brake counts (as the owner, in a batch
    /// frame); `None` when the count fails.
    fn count_backlog(&mut self, ext: &Extension, index: &TtlIndex) -> Option<i64> {
        let counted = in_batch_frame(&mut self.frame, index, |current, expire_after| {
            let sql = brake::count_sql(ext, current).ok()?;
            let limit = stats::BACKLOG_COUNT_LIMIT;
            // read-only (Spi::get_one would assign a transaction ID: an empty commit record
            // every pass, which keeps a delayed standby's replay lag up)
            crate::read::one::<i64>(&sql, &[expire_after.into(), limit.into()])
        });
        counted.ok().flatten().flatten()
    }
}

/// Shows in pg_stat_activity what the worker does now (`state` active, `query` naming the table).
fn report_activity(what: &str) {
    let what = std::ffi::CString::new(what).unwrap_or_default();
    unsafe { pg_sys::pgstat_report_activity(pg_sys::BackendState::STATE_RUNNING, what.as_ptr()) };
}

/// After a committed batch: the table statistics, at most once a second (PostgreSQL's own
/// pacing), so autovacuum sees TTL deletes during a long purge too.
fn report_stats_soon() {
    unsafe {
        #[allow(clippy::let_unit_value)]
        let _ = pg_sys::pgstat_report_stat(false);
    }
}

/// How a visit ended: how long it took, and the expired rows it left (`None`: unknown).
#[derive(Default)]
pub(super) struct Ended {
    pub took: Duration,
    pub backlog: Option<i64>,
}

/// Logs a failed table and records the visit in the statistics; a visit that set rows aside
/// (`note`; each row was logged as it was) counts as an error too, with that note as its last.
pub(super) fn report(
    index: &TtlIndex,
    removed: u64,
    limit: Limit,
    error: Option<String>,
    note: Option<String>,
    ended: Ended,
) -> Limit {
    if let Some(e) = &error {
        log!(
            "jsonb_ttl: skipping table {} in this pass: {e}",
            index.display_name
        );
    }
    stats::record_run(&stats::Run {
        table: index.stats_table(),
        part: index.stats_part(),
        rows_deleted: removed,
        limit_reached: limit != Limit::None,
        error: error.or(note).as_deref(),
        took: ended.took,
        backlog: ended.backlog,
    });
    limit
}

/// Records the oldest expired time of `table` (`None`: nothing expired is left) in the
/// statistics, for `ttl_stats.oldest_expired`; shared memory is written only when there is a
/// lag or one goes, not for each idle table of each pass.
pub(super) fn record_lag(
    lagging: &mut HashSet<(Oid, u8)>,
    index: &TtlIndex,
    oldest: Option<TimestampWithTimeZone>,
) {
    let key = (index.table, index.stats_part());
    let was = match oldest {
        Some(_) => !lagging.insert(key),
        None => lagging.remove(&key),
    };
    if oldest.is_some() || was {
        stats::record_oldest_expired(key.0, key.1, oldest);
    }
}
