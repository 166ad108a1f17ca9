//! The per-database worker: a dynamic background worker connected to one database for life.
//! Its lifecycle is written down in docs/worker.md.
//!
//! Every `jsonb_ttl.frequency` ms it runs a pass: it loads the TTL indexes of its database and
//! visits them round-robin, removing expired rows in batches — each batch its own transaction,
//! run as the table's owner with a short `lock_timeout` — until nothing is expired or a limit
//! is hit. An error in one table aborts that batch's transaction only; the table is counted,
//! logged and skipped until the next pass.

use crate::bgw::{self, handle_signals, sleep, BatchTimer};
use crate::catalog::{self, TtlIndex};
use crate::deadline::Deadline;
use crate::deleter::{Batch, Outcome, Purge};
use crate::extension::Extension;
use crate::txn::{in_transaction, Failure};
use crate::undeletable::{self, Undeletable};
use crate::{brake, budget, deleter, gucs, owner, partitions, registry, stats, tracking};
use jsonb_ttl_core::batch_size;
use pgrx::bgworkers::{BackgroundWorker, SignalWakeFlags};
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use pgrx::spi::OwnedPreparedStatement;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Forgets this process in shared memory however it exits (a FATAL from `die()` included), so
/// nobody signals a reused pid later.
unsafe extern "C-unwind" fn unregister_on_exit(_code: std::ffi::c_int, _arg: pg_sys::Datum) {
    registry::unregister_worker();
    crate::deadline::forget_mine();
}

/// A statement prepared once and kept across transactions, with the SQL it was prepared from
/// (a rename changes the SQL and the statement is prepared again).
type Prepared = (String, OwnedPreparedStatement);

/// Makes sure `cache` holds the statement for `key`, prepared from `sql` (again if the SQL
/// changed).
fn prepare_into<K: std::hash::Hash + Eq + Copy>(
    cache: &mut HashMap<K, Prepared>,
    key: K,
    sql: &str,
    args: &[pgrx::PgBuiltInOids],
) {
    if cache
        .get(&key)
        .is_none_or(|(prepared_sql, _)| prepared_sql != sql)
    {
        let args: Vec<_> = args.iter().map(|t| t.oid()).collect();
        let statement = Spi::connect(|client| client.prepare_mut(sql, &args).map(|s| s.keep()))
            .unwrap_or_else(|e| error!("cannot prepare {sql}: {e}"));
        cache.insert(key, (sql.to_string(), statement));
    }
}

/// The statement for `key` in `cache`, prepared now if missing or stale.
fn prepared<'a, K: std::hash::Hash + Eq + Copy>(
    cache: &'a mut HashMap<K, Prepared>,
    key: K,
    sql: &str,
    args: &[pgrx::PgBuiltInOids],
) -> &'a OwnedPreparedStatement {
    prepare_into(cache, key, sql, args);
    &cache[&key].1
}

/// What the worker keeps between passes.
struct Worker {
    /// The statements of each table's batches: the DELETE (under `Batch::Plain`) and the count
    /// that comes first in a counting batch (under `Batch::Counting`).
    statements: HashMap<((Oid, catalog::Part), Batch), Prepared>,
    /// The probe of each table (is anything expired?).
    probes: HashMap<(Oid, catalog::Part), Prepared>,
    /// What the batches of a pass share.
    frame: Frame,
    /// Rows that cannot be deleted, set aside.
    undeletable: Undeletable,
    /// Where the next pass starts, so no table is always first.
    next_start: usize,
    /// The batch size each table reached (see [`batch_size`]), where its next visit starts.
    batch_rows: HashMap<Oid, i64>,
    /// Whether the last pass was skipped because pg_restore is connected (logged once).
    waiting_for_restore: bool,
    /// TTL indexes the safety brake paused in this pass (their other partitions wait too).
    paused_roots: std::collections::HashSet<Oid>,
    /// Tables whose backlog the safety brake let through, until a visit drains it, with the
    /// expire_after it was counted under (a changed one is counted again: the brake is there
    /// for a wrong expire_after most of all).
    brake_checked: HashMap<(Oid, catalog::Part), (i32, i32, i64)>,
    /// Tables whose oldest expired time is recorded in the statistics (see
    /// [`stats::tables_with_oldest_expired`]).
    lagging: std::collections::HashSet<Oid>,
}

/// What the launcher tells a worker: its database, and, when CREATE EXTENSION asked for it,
/// that statement's transaction (the worker waits for it to end before it looks).
pub struct WorkerArg {
    pub db: Oid,
    /// The CREATE EXTENSION's top-level transaction, or InvalidTransactionId (0).
    pub created_by: pg_sys::TransactionId,
}

impl WorkerArg {
    pub fn into_datum(self) -> pg_sys::Datum {
        pg_sys::Datum::from(self.db.to_u32() as u64 | (u32::from(self.created_by) as u64) << 32)
    }

    fn from_datum(datum: pg_sys::Datum) -> WorkerArg {
        let value = datum.value() as u64;
        WorkerArg {
            db: Oid::from(value as u32),
            created_by: pg_sys::TransactionId::from((value >> 32) as u32),
        }
    }
}

/// Waits until transaction `xid` has committed or rolled back (at once if it has), as a row
/// lock waits for its holder: a CREATE EXTENSION may sit in a long transaction (a restore, a
/// migration) and the worker must not give up on it. No snapshot is held meanwhile, and the
/// server's `lock_timeout` does not apply; if the wait is cancelled anyway, the worker polls.
fn wait_for_transaction(xid: pg_sys::TransactionId) {
    let waited = PgTryBuilder::new(|| unsafe {
        pg_sys::StartTransactionCommand();
        gucs::override_setting(c"lock_timeout", "0");
        pg_sys::XactLockTableWait(
            xid,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            pg_sys::XLTW_Oper::XLTW_None,
        );
        pg_sys::CommitTransactionCommand();
        true
    })
    .catch_others(|_| false)
    .execute();
    if !waited {
        unsafe { pg_sys::AbortCurrentTransaction() };
        while unsafe { pg_sys::TransactionIdIsInProgress(xid) } {
            sleep(Duration::from_millis(200));
        }
    }
}

#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn jsonb_ttl_worker_main(arg: pg_sys::Datum) {
    let WorkerArg {
        db: dboid,
        created_by,
    } = WorkerArg::from_datum(arg);
    bgw::die_on_sigterm();
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP);
    BackgroundWorker::connect_worker_to_spi_by_oid(Some(dboid), None);
    match registry::register_worker(dboid) {
        Ok(()) => {}
        Err(registry::Refused::Served(pid)) => {
            debug1!("jsonb_ttl: worker {pid} serves this database already");
            return;
        }
        Err(registry::Refused::Full) => {
            log!(
                "jsonb_ttl: more than {} databases; this one is not served",
                registry::MAX_DATABASES
            );
            return;
        }
    }
    unsafe { pg_sys::before_shmem_exit(Some(unregister_on_exit), pg_sys::Datum::from(0)) };
    // Everything the worker runs names its schema; nothing resolves through search_path.
    let _ = in_transaction(|| Spi::run("SET search_path = pg_catalog, pg_temp"));
    if created_by != pg_sys::InvalidTransactionId {
        // CREATE EXTENSION wakes the launcher before it commits.
        wait_for_transaction(created_by);
    }

    let mut worker = Worker {
        statements: HashMap::new(),
        probes: HashMap::new(),
        frame: Frame::default(),
        undeletable: Undeletable::default(),
        // where the previous worker of this database (if it gave its turn up) left off
        next_start: registry::next_start(dboid),
        batch_rows: HashMap::new(),
        waiting_for_restore: false,
        paused_roots: Default::default(),
        brake_checked: Default::default(),
        lagging: stats::tables_with_oldest_expired(),
    };
    loop {
        handle_signals();
        let Ok(ext) = in_transaction(Extension::find) else {
            break;
        };
        let Some(ext) = ext else {
            // Never created here, dropped, or its CREATE EXTENSION rolled back.
            registry::report_without_extension(dboid);
            break;
        };
        let started = Instant::now();
        if gucs::ENABLED.get() {
            worker.pass(&ext);
        }
        report_idle();
        if registry::databases_waiting() > 0 {
            // jsonb_ttl.max_workers run and other databases wait: give the turn up
            debug1!("jsonb_ttl: other databases wait for a worker; this one yields its turn");
            break;
        }
        wait_for_next_pass(started);
    }
}

/// Shows in pg_stat_activity what the worker does now (`state` active, `query` naming the table).
fn report_activity(what: &str) {
    let what = std::ffi::CString::new(what).unwrap_or_default();
    unsafe { pg_sys::pgstat_report_activity(pg_sys::BackendState::STATE_RUNNING, what.as_ptr()) };
}

/// Between passes: `state` idle in pg_stat_activity, and the table statistics of the pass
/// (`n_tup_del` and the dead rows autovacuum counts) sent at once, as a backend sends them
/// when it goes idle.
fn report_idle() {
    unsafe {
        pg_sys::pgstat_report_activity(pg_sys::BackendState::STATE_IDLE, std::ptr::null());
        #[allow(clippy::let_unit_value)]
        let _ = pg_sys::pgstat_report_stat(true);
    }
}

/// After a committed batch: the table statistics, at most once a second (PostgreSQL's own
/// pacing), so autovacuum sees TTL deletes during a long purge too.
fn report_stats_soon() {
    unsafe {
        #[allow(clippy::let_unit_value)]
        let _ = pg_sys::pgstat_report_stat(false);
    }
}

/// Waits until `frequency` ms after `started`, re-reading the frequency after each SIGHUP so a
/// shorter one takes effect at once.
fn wait_for_next_pass(started: Instant) {
    loop {
        handle_signals();
        let frequency = Duration::from_millis(gucs::FREQUENCY_MS.get() as u64);
        let elapsed = started.elapsed();
        if elapsed >= frequency {
            return;
        }
        sleep(frequency - elapsed);
    }
}

impl Worker {
    fn pass(&mut self, ext: &Extension) {
        let loaded = in_transaction(|| {
            // Planned above jit_above_cost (the partition trees), the catalog read would be
            // compiled by JIT on every pass: 0.2–0.4 s each, measured with jit = on.
            gucs::override_setting(c"jit", "off");
            (!catalog::restore_in_progress()).then(|| {
                for table in tracking::stale_records(ext) {
                    // reading its indexes locks the table: only if that lock is free now
                    let free = unsafe {
                        pg_sys::ConditionalLockRelationOid(
                            table,
                            pg_sys::AccessShareLock as pg_sys::LOCKMODE,
                        )
                    };
                    if free {
                        tracking::track_indexes(ext, table);
                    }
                }
                catalog::load(ext, None, catalog::Scope::Targets)
            })
        });
        let indexes = match loaded {
            Ok(Some(indexes)) => indexes,
            Ok(None) => {
                if !self.waiting_for_restore {
                    log!("jsonb_ttl: pg_restore is connected to this database; no pass until it is done");
                    self.waiting_for_restore = true;
                }
                return;
            }
            Err(e) => {
                log!("jsonb_ttl: cannot read the TTL catalog: {e}");
                return;
            }
        };
        self.waiting_for_restore = false;
        self.paused_roots.clear();
        let started = Instant::now();
        let indexes = self.drop_expired_partitions(ext, indexes);
        self.undeletable
            .retain(|table| indexes.iter().any(|i| i.table == table));
        self.frame.begin_pass(ext);
        self.statements
            .retain(|((table, _), _), _| indexes.iter().any(|i| i.table == *table));
        self.probes
            .retain(|(table, _), _| indexes.iter().any(|i| i.table == *table));
        self.batch_rows
            .retain(|table, _| indexes.iter().any(|i| i.table == *table));
        self.brake_checked
            .retain(|(table, _), _| indexes.iter().any(|i| i.table == *table));
        let aside = stats::SetAside::now();
        let set_aside: Vec<bool> = indexes
            .iter()
            .map(|index| aside.holds(index.table, index.owner))
            .collect();
        let expired = self.probe(ext, &indexes, &set_aside);
        let mut pass_limited = false;
        let count = indexes.len();
        for k in 0..count {
            let at = (self.next_start + k) % count;
            let index = &indexes[at];
            let limit = match expired[at] {
                // ttl_stats shows both as skipped
                _ if index.foreign => Limit::None,
                _ if index.paused || self.paused_roots.contains(&index.root) => Limit::None,
                // it held a worker past its deadline: ttl_stats shows until when
                _ if set_aside[at] => Limit::None,
                _ if !index.index_ready => {
                    let why = match index.index_name.is_empty() {
                        true => "the per-row TTL index of this table was dropped: its rows are \
                                 not deleted until it is built again (ttl_index_create again \
                                 returns the statements in build_sql)"
                            .to_string(),
                        false => format!(
                            "the TTL index {} is missing or not valid on this table: \
                             nothing is deleted until it is built (REINDEX, or ttl_index_create again)",
                            index.index_name
                        ),
                    };
                    report(index, 0, Limit::None, None, Some(why))
                }
                true => self.purge(ext, index),
                false => report(index, 0, Limit::None, None, None),
            };
            pass_limited |= limit != Limit::None;
            // a worker terminated further on (see crate::deadline) lets the next one go on
            // after this table
            registry::set_next_start(unsafe { pg_sys::MyDatabaseId }, (at + 1) % count);
            if limit == Limit::Server {
                break;
            }
            handle_signals();
        }
        self.next_start = self.next_start.wrapping_add(1) % count.max(1);
        registry::set_next_start(unsafe { pg_sys::MyDatabaseId }, self.next_start);
        stats::record_pass(pass_limited, started.elapsed());
    }

    /// Drops (or detaches) the expired partitions of the TTL indexes with `drop_partitions`
    /// (see [`partitions`]), before any row of theirs is probed or deleted; returns the targets
    /// left.
    fn drop_expired_partitions(
        &mut self,
        ext: &Extension,
        mut indexes: Vec<TtlIndex>,
    ) -> Vec<TtlIndex> {
        let mut roots = std::collections::HashSet::new();
        let owners: Vec<(TtlIndex, partitions::Mode)> = indexes
            .iter()
            .filter(|index| !index.paused && roots.insert(index.root))
            .filter_map(|index| Some((index.clone(), index.drop_partitions?)))
            .collect();
        for (index, mode) in owners {
            handle_signals();
            let visited = partitions::visit(ext, &index, mode);
            if visited.paused {
                self.paused_roots.insert(index.root);
            }
            stats::record_dropped(visited.rows as u64);
            // the expired partitions that were busy go whole at a later pass: no row of theirs
            // is deleted meanwhile
            if !visited.busy.is_empty() {
                indexes.retain(|target| {
                    target.root != index.root
                        || in_transaction(|| {
                            !visited.busy.iter().any(|&busy| {
                                target.table == busy || catalog::is_partition_of(target.table, busy)
                            })
                        })
                        .unwrap_or(false)
                });
            }
            // the leaves that went with them (a dropped partition may have partitions)
            indexes.retain(|target| {
                !visited.gone.contains(&target.table)
                    && (visited.gone.is_empty()
                        || in_transaction(|| unsafe {
                            !pg_sys::get_rel_name(target.table).is_null()
                                && (target.table == target.root
                                    || catalog::is_partition_of(target.table, target.root))
                        })
                        .unwrap_or(false))
            });
        }
        indexes
    }

    /// Which of `indexes` have an expired row now, probed in one transaction through their TTL
    /// indexes, so an idle pass costs one transaction, not one per table. Each probe runs as
    /// its table's owner (row security policies forced on the owner are the owner's code), read
    /// once the table is locked, within `jsonb_ttl.batch_timeout` and its deadline (see
    /// [`crate::deadline`]). A table whose lock is not free at once counts as expired (its
    /// batch waits lock_timeout at most); when the probe fails (a table's probe outlasted
    /// `jsonb_ttl.batch_timeout`), every table does.
    fn probe(&mut self, ext: &Extension, indexes: &[TtlIndex], set_aside: &[bool]) -> Vec<bool> {
        let probes = &mut self.probes;
        let lagging = &mut self.lagging;
        let role_settings = &mut self.frame.role_settings;
        let lock_timeout = gucs::LOCK_TIMEOUT_MS.get().to_string();
        let settings = deleter::batch_settings(&lock_timeout);
        let timeout_ms = gucs::BATCH_TIMEOUT_MS.get();
        let probe_started = Instant::now();
        let probed = in_transaction(|| {
            deleter::with_settings(&settings, || {
                indexes
                    .iter()
                    .zip(set_aside)
                    .map(|(index, &set_aside)| {
                        if index.foreign || !index.index_ready || index.paused || set_aside {
                            return false; // no foreign data wrapper, no scan of the whole table
                        }
                        if timeout_ms > 0
                            && probe_started.elapsed() > Duration::from_millis(timeout_ms as u64)
                        {
                            // owner code that returns just in time, table after table: the
                            // rest count as expired, each visited within its own limits
                            return true;
                        }
                        // each table's probe its own time limit and deadline, so the one
                        // whose owner code holds the worker is the one set aside
                        let _timer = BatchTimer::arm(timeout_ms);
                        let _deadline = Deadline::arm(index.table, index.owner, timeout_ms);
                        let Ok(sql) = deleter::probe_sql(ext, index) else {
                            return true; // purge() reports why
                        };
                        let locked = unsafe {
                            pg_sys::ConditionalLockRelationOid(
                                index.table,
                                pg_sys::AccessShareLock as pg_sys::LOCKMODE,
                            )
                        };
                        if !locked {
                            return true;
                        }
                        let Some(owner) = owner::table_owner(index.table) else {
                            return false; // dropped since the pass began
                        };
                        let owner_settings = role_settings
                            .entry(owner)
                            .or_insert_with(|| owner::role_settings(owner));
                        owner::as_table_owner_with(owner, owner_settings, &settings, || {
                            let statement =
                                prepared(probes, index.target(), &sql, &deleter::PROBE_ARGS);
                            let oldest = Spi::connect(|client| {
                                let rows = client.select(
                                    statement,
                                    Some(1),
                                    &[index.expire_after.into()],
                                )?;
                                match rows.is_empty() {
                                    true => Ok(None),
                                    false => rows.first().get_one::<TimestampWithTimeZone>(),
                                }
                            });
                            match oldest {
                                Ok(oldest) => {
                                    if index.part != catalog::Part::OwnTtl {
                                        record_lag(lagging, index.table, oldest);
                                    }
                                    oldest.is_some()
                                }
                                Err(_) => true,
                            }
                        })
                    })
                    .collect()
            })
        });
        owner::release_session_state();
        probed.unwrap_or_else(|e| {
            debug1!("jsonb_ttl: probe failed, visiting every table: {e}");
            self.probes.clear();
            vec![true; indexes.len()]
        })
    }

    /// Removes the expired rows of one table, batch by batch, within the limits. A batch that
    /// fails because of some of its rows is retried in parts ([`Worker::split`]): the rows that
    /// cannot be deleted are set aside, and the purge goes on behind them.
    fn purge(&mut self, ext: &Extension, index: &TtlIndex) -> Limit {
        match self.brake(ext, index) {
            Brake::Go => {}
            Brake::Paused(reason) => {
                self.paused_roots.insert(index.root);
                return report(index, 0, Limit::None, None, Some(reason));
            }
            // unchecked, not purged: the table waits for the next pass
            Brake::Failed(e) => return report(index, 0, Limit::None, Some(e), None),
        }
        let mut purge = Purge::default();
        let mut removed = 0u64;
        let mut limit = Limit::None;
        let mut error: Option<String> = None;
        // rows set aside in this visit: shown in errors / last_error, the rows in rows_undeletable
        let mut note: Option<String> = None;
        let max_table = gucs::MAX_TABLE_REMOVES.get() as i64;
        let target = Duration::from_millis(gucs::BATCH_TIME_MS.get() as u64);
        let mut rows = batch_size::first(
            self.batch_rows.get(&index.table).copied(),
            target,
            gucs::BATCH_SIZE.get() as i64,
        );
        loop {
            let rate_cap = batch_size::rate_cap(gucs::MAX_REMOVES_PER_SECOND.get() as i64);
            let want = rows
                .min(rate_cap.unwrap_or(i64::MAX))
                .min(max_table - removed as i64);
            if want <= 0 {
                limit = Limit::Table;
                break;
            }
            let granted = budget::claim(
                want,
                gucs::MAX_TOTAL_REMOVES.get() as i64,
                gucs::FREQUENCY_MS.get() as i64,
            );
            if granted == 0 {
                limit = Limit::Server;
                break;
            }
            let batch_started = Instant::now();
            report_activity(&format!(
                "jsonb_ttl: deleting expired rows from {} (batch of {granted})",
                index.display_name
            ));
            let mut outcome = self.batch(ext, purge.next(), index, granted);
            if let Err(failure) = outcome.as_ref().map_err(Clone::clone) {
                self.statements
                    .retain(|((table, _), _), _| *table != index.table);
                if !failure.is_transient() && !self.undeletable.full(index.table) {
                    let before = self.undeletable.count(index.table);
                    outcome = self.split(ext, index, granted);
                    let set_aside = self.undeletable.count(index.table) - before;
                    if set_aside > 0 {
                        note = Some(format!("{set_aside} row(s) set aside: {failure}"));
                    }
                }
            }
            report_stats_soon();
            match outcome {
                Ok(None) => {
                    // The TTL index or the table is gone since the pass began: nothing to purge.
                    budget::give_back(granted);
                    break;
                }
                Ok(Some(outcome)) => {
                    let n = outcome.deleted;
                    budget::give_back(granted - n as i64);
                    stats::record_batch(index.table, n);
                    removed += n;
                    let took = batch_started.elapsed();
                    rows =
                        batch_size::next(granted, n, took, target, gucs::BATCH_SIZE.get() as i64);
                    self.batch_rows.insert(index.table, rows);
                    if !purge.go_on(granted, outcome) {
                        break;
                    }
                    throttle(n, batch_started);
                }
                Err(e) => {
                    budget::give_back(granted);
                    error = Some(e.message);
                    let max = gucs::BATCH_SIZE.get() as i64;
                    let smaller = batch_size::after_failure(granted, target, max);
                    self.batch_rows.insert(index.table, smaller);
                    break;
                }
            }
        }
        stats::record_undeletable(index.table, self.undeletable.count(index.table) as u64);
        if limit == Limit::None && error.is_none() {
            if index.part != catalog::Part::OwnTtl && self.undeletable.count(index.table) == 0 {
                // drained: nothing expired is left (rows set aside stay, and so does their age)
                record_lag(&mut self.lagging, index.table, None);
            }
            // drained: the next backlog is checked by the brake again
            self.brake_checked.remove(&index.target());
            if index.brake_released {
                // released by ttl_index_resume(): the brake holds again
                let _ = in_transaction(|| brake::rearm(ext, index.root));
            }
        }
        report(index, removed, limit, error, note)
    }

    /// The safety brake before a visit (see [`crate::brake`]): counts the expired rows of
    /// `index`'s table as its owner, up to the limit, and pauses the TTL index when there are
    /// more. A backlog that passed is not counted again until a visit drains it (each visit
    /// would recount what is left of it); a count that outlasts `jsonb_ttl.batch_timeout`
    /// pauses the index too, saying so (it cannot tell, and the owner can resume).
    fn brake(&mut self, ext: &Extension, index: &TtlIndex) -> Brake {
        if !index.brake_available
            || index.brake_released
            || self.brake_checked.get(&index.target()) == Some(&interval_key(index.expire_after))
        {
            return Brake::Go;
        }
        let counted = in_batch_frame(&mut self.frame, index, |current, expire_after| {
            let rows = brake::table_rows(current.table);
            let fraction = gucs::MAX_TABLE_FRACTION.get();
            let limit = brake::limit(rows, fraction, gucs::BRAKE_MIN_ROWS.get() as i64)?;
            let sql = brake::count_sql(ext, current).unwrap_or_else(|e| error!("{e}"));
            let expired =
                Spi::get_one_with_args::<i64>(&sql, &[expire_after.into(), (limit + 1).into()])
                    .unwrap_or_else(|e| error!("jsonb_ttl: cannot count the expired rows: {e}"))
                    .unwrap_or(0);
            (expired > limit).then(|| brake::reason(current, limit, rows))
        });
        let reason = match counted {
            Ok(Some(Some(reason))) => reason,
            Ok(_) => {
                self.brake_checked
                    .insert(index.target(), interval_key(index.expire_after));
                return Brake::Go;
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
        Brake::Paused(reason)
    }

    /// One batch of the form `batch` in its own transaction, as the table's owner (see
    /// [`in_batch_frame`]): what it did, or `None` when the TTL index or the table no longer
    /// exists.
    fn batch(
        &mut self,
        ext: &Extension,
        batch: Batch,
        index: &TtlIndex,
        limit: i64,
    ) -> Result<Option<Outcome>, Failure> {
        let statements = &mut self.statements;
        let set_aside = self.undeletable.rows(index.table);
        in_batch_frame(&mut self.frame, index, |current, expire_after| {
            run_statements(
                statements,
                ext,
                batch,
                current,
                expire_after,
                limit,
                &set_aside,
            )
        })
    }

    /// A failed batch again, in parts: the rows it picks are deleted in halves, each in a
    /// subtransaction, down to single rows; the rows that fail alone are set aside. Reported
    /// as a plain batch of what it deleted.
    fn split(
        &mut self,
        ext: &Extension,
        index: &TtlIndex,
        limit: i64,
    ) -> Result<Option<Outcome>, Failure> {
        let set_aside = self.undeletable.rows(index.table);
        let room = undeletable::MAX_PER_TABLE.saturating_sub(set_aside.len());
        let parts = in_batch_frame(&mut self.frame, index, |current, expire_after| {
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
            let mut parts = deleter::delete_in_parts(&delete_rows, expire_after, &rows);
            parts.undeletable.truncate(room);
            parts
        })?;
        Ok(parts.map(|parts| {
            let deleted = parts.deleted;
            self.undeletable
                .add(index.table, &index.display_name, parts.undeletable);
            Outcome {
                picked: None,
                deleted,
            }
        }))
    }
}

/// The statements of one batch of the form `batch`, as prepared for the table's current names
/// (prepared again if a rename changed them), run for at most `limit` rows.
fn run_statements(
    statements: &mut HashMap<((Oid, catalog::Part), Batch), Prepared>,
    ext: &Extension,
    batch: Batch,
    current: &TtlIndex,
    expire_after: pgrx::datum::Interval,
    limit: i64,
    set_aside: &[pg_sys::ItemPointerData],
) -> Outcome {
    let sql = |built: Result<String, String>| built.unwrap_or_else(|e| error!("{e}"));
    let skip = !set_aside.is_empty();
    let args = &deleter::BATCH_ARGS;
    let delete = sql(deleter::batch_sql(ext, current, skip));
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
        (batch == Batch::Counting).then(|| &*statements[&(current.target(), Batch::Counting)].1);
    Spi::connect_mut(|client| {
        deleter::run_batch(client, delete, pick_count, expire_after, limit, set_aside)
    })
    .unwrap_or_else(|e| error!("delete failed: {e}"))
}

/// What the batches of a pass keep between them: the prepared catalog lookup of a table's
/// current expire_after, and each owner's settings (read once per pass: an `ALTER ROLE … SET`
/// takes effect at the next pass).
#[derive(Default)]
struct Frame {
    lookups: HashMap<Oid, Prepared>,
    lookup_sql: String,
    role_settings: HashMap<Oid, owner::RoleSettings>,
}

impl Frame {
    /// Ready for a pass in the database whose extension lives in `ext`.
    fn begin_pass(&mut self, ext: &Extension) {
        self.role_settings.clear();
        self.lookup_sql = format!(
            "SELECT expire_after FROM {ext}.ttl_index \
             WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1"
        );
    }

    /// The steps of one batch of `index` inside its transaction: expire_after read again (so
    /// ttl_index_alter and ttl_index_drop take effect mid-pass; 0 for the rows with a TTL of
    /// their own, see [`crate::row_ttl`]); the table locked within
    /// `jsonb_ttl.lock_timeout`, then its current names and owner read (an ALTER TABLE … OWNER
    /// TO or a rename since the pass began shows at once); every deferrable check made
    /// immediate (`SET CONSTRAINTS ALL IMMEDIATE`: the transaction is the worker's, and a
    /// deferred check cannot be queued in the security-restricted operation a batch runs in,
    /// see [`deleter::deferrable_references`]); then `f(current names, expire_after)` as the
    /// owner, with the owner's settings and the worker's lock_timeout on top (our statements get
    /// their planner pins while they are planned, see [`crate::planner`]). `None` when the TTL
    /// index or the table no longer exists.
    fn run<R>(
        &mut self,
        index: &TtlIndex,
        f: impl FnOnce(&TtlIndex, pgrx::datum::Interval) -> R,
    ) -> Option<R> {
        let lock_timeout = gucs::LOCK_TIMEOUT_MS.get().to_string();
        let settings = deleter::batch_settings(&lock_timeout);
        let lookup = prepared(
            &mut self.lookups,
            pg_sys::InvalidOid,
            &self.lookup_sql,
            &[pgrx::PgBuiltInOids::OIDOID],
        );
        let expire_after = Spi::connect(|client| {
            client
                .select(lookup, Some(1), &[index.root.into()])?
                .first()
                .get_one::<pgrx::datum::Interval>()
        })
        .unwrap_or_else(|e| error!("cannot read the TTL catalog: {e}"))?;
        // the rows with a TTL of their own are keyed on their expiry: no expire_after
        let expire_after = match index.part {
            catalog::Part::OwnTtl => pgrx::datum::Interval::from_micros(0),
            _ => expire_after,
        };
        deleter::with_settings(&settings, || {
            // The DELETE's own lock, taken first (within lock_timeout).
            unsafe {
                pg_sys::LockRelationOid(index.table, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE)
            };
            // A partition dropped or detached since the pass began: nothing to purge.
            let current = catalog::with_current_names(index)?;
            if index.table != index.root && !catalog::is_partition_of(index.table, index.root) {
                return None; // detached since the pass began: no longer this TTL index's
            }
            let owner = owner::table_owner(index.table)?;
            deleter::check_all_now();
            let owner_settings = self
                .role_settings
                .entry(owner)
                .or_insert_with(|| owner::role_settings(owner));
            Some(owner::as_table_owner_with(
                owner,
                owner_settings,
                &settings,
                || f(&current, expire_after),
            ))
        })
    }
}

/// Runs `f` as one batch of `index` ([`Frame::run`]) in its own transaction, within
/// `jsonb_ttl.batch_timeout`, committed without waiting for its WAL flush when
/// `jsonb_ttl.synchronous_commit` is off. What the owner's code left in the session that its
/// GUC nest level does not undo is released after it.
fn in_batch_frame<R>(
    frame: &mut Frame,
    index: &TtlIndex,
    f: impl FnOnce(&TtlIndex, pgrx::datum::Interval) -> R,
) -> Result<Option<R>, Failure> {
    let done = in_transaction(|| {
        let _timer = BatchTimer::arm(gucs::BATCH_TIMEOUT_MS.get());
        let _deadline = Deadline::arm(index.table, index.owner, gucs::BATCH_TIMEOUT_MS.get());
        if !gucs::SYNCHRONOUS_COMMIT.get() {
            // until the transaction ends: its commit is what it is for
            gucs::override_setting(c"synchronous_commit", "off");
        }
        frame.run(index, f)
    });
    owner::release_session_state();
    done
}

/// Runs exactly one plain batch of the worker on `tbl` (a table with a TTL index, or one of its
/// partitions) for at most `max_rows` rows, in the caller's transaction, and returns the rows
/// it removed: the worker's own steps ([`Frame::run`]) and statements, without the worker's
/// transaction and time limit around them; like a batch, it makes the transaction's
/// deferrable checks immediate (`SET CONSTRAINTS ALL IMMEDIATE`). For tests that need to stop
/// a batch halfway (tests/isolation), which no background worker lets them do. Superusers only
/// (EXECUTE is revoked from PUBLIC), and only on tables whose owner's privileges the caller has.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_worker_batch",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_worker_batch(tbl: Oid, max_rows: i64) -> i64 {
    let ext = Extension::current();
    let index = catalog::load(&ext, None, catalog::Scope::Targets)
        .into_iter()
        .find(|index| index.table == tbl)
        .unwrap_or_else(|| {
            crate::error::raise(
                PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
                format!("relation {} has no TTL index", tbl.to_u32()),
                "Pass a table with a TTL index, or one of its partitions.",
            )
        });
    if index.foreign {
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("{} is a foreign table", index.display_name),
            "The worker never deletes through a foreign data wrapper.",
        );
    }
    if !owner::has_privileges_of(index.owner) {
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "must be the owner of the table to run a batch on it",
            "A batch runs as the table's owner.",
        );
    }
    let mut frame = Frame::default();
    frame.begin_pass(&ext);
    let mut statements = HashMap::new();
    frame
        .run(&index, |current, expire_after| {
            run_statements(
                &mut statements,
                &ext,
                Batch::Plain,
                current,
                expire_after,
                max_rows,
                &[],
            )
        })
        .map_or(0, |outcome| outcome.deleted as i64)
}

/// Sleeps as long as `jsonb_ttl.max_removes_per_second` asks after removing `rows` in a batch
/// that started at `batch_started`.
fn throttle(rows: u64, batch_started: Instant) {
    let rate = gucs::MAX_REMOVES_PER_SECOND.get();
    if rate > 0 {
        let budgeted = Duration::from_secs_f64(rows as f64 / rate as f64);
        if let Some(rest) = budgeted.checked_sub(batch_started.elapsed()) {
            sleep(rest);
        }
    }
    handle_signals();
}

/// Logs a failed table and records the visit in the statistics; a visit that set rows aside
/// (`note`; each row was logged as it was) counts as an error too, with that note as its last.
fn report(
    index: &TtlIndex,
    removed: u64,
    limit: Limit,
    error: Option<String>,
    note: Option<String>,
) -> Limit {
    if let Some(e) = &error {
        log!(
            "jsonb_ttl: skipping table {} in this pass: {e}",
            index.display_name
        );
    }
    stats::record_run(&stats::Run {
        table: index.table,
        rows_deleted: removed,
        limit_reached: limit != Limit::None,
        error: error.or(note).as_deref(),
    });
    limit
}

/// Records the oldest expired time of `table` (`None`: nothing expired is left) in the
/// statistics, for `ttl_stats.oldest_expired`; shared memory is written only when there is a
/// lag or one goes, not for each idle table of each pass.
fn record_lag(
    lagging: &mut std::collections::HashSet<Oid>,
    table: Oid,
    oldest: Option<TimestampWithTimeZone>,
) {
    let was = match oldest {
        Some(_) => !lagging.insert(table),
        None => lagging.remove(&table),
    };
    if oldest.is_some() || was {
        stats::record_oldest_expired(table, oldest);
    }
}

/// An interval as a map value (months, days, microseconds).
fn interval_key(interval: pgrx::datum::Interval) -> (i32, i32, i64) {
    (interval.months(), interval.days(), interval.micros())
}

/// What the safety brake says before a visit.
enum Brake {
    Go,
    /// Paused now, for this reason.
    Paused(String),
    /// The check itself failed: the table is not purged in this pass.
    Failed(String),
}

/// Which limit, if any, cut a table's purge short.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Limit {
    None,
    /// `max_table_removes`.
    Table,
    /// `max_total_removes`, shared by the whole server.
    Server,
}
