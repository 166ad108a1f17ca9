//! The launcher: one static background worker per server, started once recovery has finished
//! (so never on a standby, and at promotion on a former one). It keeps one per-database worker
//! for every database that has the extension. Its lifecycle is written down in docs/worker.md.
//!
//! It cannot know which databases have the extension without connecting to them, so it starts a
//! worker for every connectable database it has not yet seen; a worker that finds no extension
//! says so in shared memory and exits. The launcher lists the databases every
//! `max(frequency, 1 s)` and leaves those without the extension alone until CREATE EXTENSION
//! wakes it (or `REPROBE_WITHOUT_EXTENSION` passes, a safety net).

mod rotation;

use crate::{gucs, registry};
use pgrx::bgworkers::{
    BackgroundWorker, BackgroundWorkerBuilder, BgWorkerStartTime, DynamicBackgroundWorker,
    SignalWakeFlags,
};
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use rotation::Rotation;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Registers the launcher; from `_PG_init` while preloading.
pub fn register() {
    BackgroundWorkerBuilder::new("jsonb_ttl launcher")
        .set_type("jsonb_ttl launcher")
        .set_library("jsonb_ttl")
        .set_function("jsonb_ttl_launcher_main")
        .enable_shmem_access(None)
        .enable_spi_access()
        .set_start_time(BgWorkerStartTime::RecoveryFinished)
        .set_restart_time(Some(Duration::from_secs(5)))
        .load();
}

#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn jsonb_ttl_launcher_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    // No database: the launcher reads only the shared catalog pg_database.
    BackgroundWorker::connect_worker_to_spi(None, None);
    registry::register_launcher();
    log!("jsonb_ttl launcher started");

    let mut launcher = Launcher::default();
    loop {
        let probe_every = Duration::from_millis(gucs::FREQUENCY_MS.get().max(1000) as u64);
        launcher.take_reports();
        launcher.probe(probe_every);
        let no_slot = launcher.start_workers();
        launcher.publish_waiting(no_slot);
        // A worker whose batch outlasted jsonb_ttl.batch_timeout + its grace: terminated.
        for overdue in crate::deadline::take_overdue() {
            crate::deadline::terminate(&overdue, gucs::FREQUENCY_MS.get() as i64);
        }
        if !launcher.wait(probe_every) {
            break;
        }
        crate::bgw::reload_config_if_asked();
    }
    // Exit code 1: the postmaster starts the launcher again after its restart time, so a
    // pg_terminate_backend() or an idle-connection reaper never leaves the server unpurged
    // (at shutdown the postmaster restarts nothing).
    log!("jsonb_ttl launcher exiting; the postmaster restarts it");
    unsafe { pg_sys::proc_exit(1) };
}

/// What the launcher keeps from one wake-up to the next.
#[derive(Default)]
struct Launcher {
    workers: HashMap<Oid, DynamicBackgroundWorker>,
    /// Databases a worker found without the extension, and since when.
    without_extension: HashMap<Oid, Instant>,
    /// Databases whose CREATE EXTENSION asked for a worker, with its transaction.
    wanted: HashMap<Oid, pg_sys::TransactionId>,
    /// Databases that need a worker while jsonb_ttl.max_workers run, first come first served,
    /// and when each may start again (its last start + frequency): workers take turns.
    queue: Rotation,
    /// When "no background worker slot" was last logged (at most once a minute).
    no_slot_logged: Option<Instant>,
    last_probe: Option<Instant>,
}

impl Launcher {
    /// Takes what shared memory holds for the launcher: the databases whose CREATE EXTENSION
    /// woke it, and those a worker found without the extension.
    fn take_reports(&mut self) {
        let (requests, overflowed) = registry::take_wanted();
        if overflowed {
            self.without_extension.clear(); // some request was lost: look everywhere again
        }
        self.wanted.extend(requests);
        for (db, pid) in registry::take_without_extension() {
            // A report from a worker that looked before CREATE EXTENSION committed, or from one
            // that has since been replaced, is stale.
            let replaced = self
                .workers
                .get(&db)
                .is_some_and(|w| matches!(w.pid(), Ok(current) if current != pid));
            if !self.wanted.contains_key(&db) && !replaced {
                self.without_extension.insert(db, Instant::now());
            }
        }
        let wanted = &self.wanted;
        self.without_extension.retain(|db, since| {
            !wanted.contains_key(db) && since.elapsed() < REPROBE_WITHOUT_EXTENSION
        });
    }

    /// PROBING (docs/worker.md), when a probe is due (every `probe_every`) or CREATE EXTENSION
    /// asked for a worker: lists the databases, stops the workers of those gone, and, at a due
    /// probe, queues every database that may have the extension.
    fn probe(&mut self, probe_every: Duration) {
        let due = self.last_probe.is_none_or(|t| t.elapsed() >= probe_every);
        if !due && self.wanted.is_empty() {
            return;
        }
        let databases = connectable_databases();
        // Dropped, or now a template or closed to connections: its worker leaves.
        let gone: Vec<Oid> = self
            .workers
            .keys()
            .filter(|db| !databases.contains(db))
            .copied()
            .collect();
        for db in gone {
            if let Some(worker) = self.workers.remove(&db) {
                worker.terminate();
            }
        }
        self.without_extension
            .retain(|db, _| databases.contains(db));
        self.wanted.retain(|db, _| databases.contains(db));
        let without_extension = &self.without_extension;
        self.queue
            .retain(|db| databases.contains(&db) && !without_extension.contains_key(&db));
        if due {
            self.last_probe = Some(Instant::now());
            // the statistics of databases gone (dropped, or closed) go too
            crate::stats::forget_databases_except(
                &databases.iter().map(|db| db.to_u32()).collect(),
            );
            for db in databases {
                if !self.without_extension.contains_key(&db) && !self.wanted.contains_key(&db) {
                    self.queue.join(db);
                }
            }
        }
    }

    /// Starts the workers that are wanted, as far as jsonb_ttl.max_workers allows: those
    /// CREATE EXTENSION asked for first, then the queue in order. Whether a database that waits
    /// found no background worker slot (max_worker_processes).
    fn start_workers(&mut self) -> bool {
        let mut no_slot = self.start_wanted();
        self.requeue_stopped();
        no_slot |= self.start_queued();
        if no_slot
            && self
                .no_slot_logged
                .is_none_or(|at| at.elapsed() >= Duration::from_secs(60))
        {
            log!(
                "jsonb_ttl: no background worker slot for a database that waits; workers take \
                 turns (raise max_worker_processes)"
            );
            self.no_slot_logged = Some(Instant::now());
        }
        no_slot
    }

    /// A worker that waits for the CREATE EXTENSION's transaction to end, as soon as none
    /// runs there (one may be looking at the database right now, before the commit; its
    /// exit wakes the launcher). These go first. Whether a worker slot was missing.
    fn start_wanted(&mut self) -> bool {
        let mut no_slot = false;
        let workers = &mut self.workers;
        self.wanted
            .retain(|&db, xid| match ensure_worker(workers, db, *xid) {
                Ensured::Started => false,
                Ensured::NoSlot => {
                    no_slot = true;
                    true
                }
                _ => true,
            });
        no_slot
    }

    /// A worker that stopped (it yielded its turn, or it crashed) queues its database again,
    /// due a frequency after it started.
    fn requeue_stopped(&mut self) {
        let stopped: Vec<Oid> = self
            .workers
            .iter()
            .filter(|(_, w)| {
                matches!(
                    w.pid(),
                    Err(pgrx::bgworkers::BackgroundWorkerStatus::Stopped)
                )
            })
            .map(|(&db, _)| db)
            .collect();
        for db in stopped {
            self.workers.remove(&db);
            if !self.without_extension.contains_key(&db) && !self.wanted.contains_key(&db) {
                self.queue.join(db);
            }
        }
    }

    /// Then the queue, in order, as far as jsonb_ttl.max_workers allows. Whether a worker slot
    /// was missing.
    fn start_queued(&mut self) -> bool {
        let frequency = Duration::from_millis(gucs::FREQUENCY_MS.get() as u64);
        while let Some(db) = self.queue.next_due() {
            if registry::is_dropping(db) {
                self.queue.remove(db); // back at the next probe, if it is still there
                continue;
            }
            match ensure_worker(&mut self.workers, db, pg_sys::InvalidTransactionId) {
                Ensured::Started => self.queue.started(db, frequency),
                Ensured::Running => self.queue.remove(db),
                Ensured::NotStarted => break,
                Ensured::NoSlot => return true,
            }
        }
        false
    }

    /// When databases wait their turn because jsonb_ttl.max_workers run, or because
    /// max_worker_processes has no slot left (`no_slot`), workers that finish a pass give
    /// theirs up: says so in shared memory.
    fn publish_waiting(&self, no_slot: bool) {
        let at_cap = running_count(&self.workers) >= gucs::MAX_WORKERS.get() as usize;
        registry::set_waiting(if at_cap || no_slot {
            self.queue.due_count() + self.wanted.len()
        } else {
            0
        });
    }

    /// WAITING (docs/worker.md): until the next probe or the next queued database's turn, at
    /// most [`crate::deadline::CHECK_EVERY`] while a worker runs, or until the latch is set.
    /// False when the launcher must exit (SIGTERM, or the postmaster died).
    fn wait(&self, probe_every: Duration) -> bool {
        let wait =
            probe_every.saturating_sub(self.last_probe.map_or(Duration::ZERO, |t| t.elapsed()));
        let wait = self.queue.next_due_in().map_or(wait, |next| wait.min(next));
        let wait = match running_count(&self.workers) {
            0 => wait,
            _ => wait.min(crate::deadline::CHECK_EVERY),
        };
        let alive = crate::bgw::wait_latch(wait.max(Duration::from_millis(10)));
        alive && !BackgroundWorker::sigterm_received()
    }
}

/// Workers running now, counted against jsonb_ttl.max_workers: those this launcher started, or
/// those registered in shared memory (an earlier life of the launcher started them).
fn running_count(workers: &HashMap<Oid, DynamicBackgroundWorker>) -> usize {
    let ours = workers
        .values()
        .filter(|w| {
            !matches!(
                w.pid(),
                Err(pgrx::bgworkers::BackgroundWorkerStatus::Stopped)
            )
        })
        .count();
    ours.max(registry::served_count())
}

/// How long a database found without the extension is left alone, unless CREATE EXTENSION
/// wakes the launcher first: a safety net for an extension that appeared some other way.
const REPROBE_WITHOUT_EXTENSION: Duration = Duration::from_secs(300);

/// What `ensure_worker` found or did.
#[derive(PartialEq, Eq)]
enum Ensured {
    /// A worker was already running there.
    Running,
    Started,
    /// A statement needs the database to itself (DROP DATABASE…), or jsonb_ttl.max_workers
    /// run already.
    NotStarted,
    /// No background worker slot was free (max_worker_processes).
    NoSlot,
}

/// Starts the worker of `db` unless one is running; `created_by` is the transaction of the
/// CREATE EXTENSION that asked for it, which the worker waits for (InvalidTransactionId at a
/// probe). When no worker slot is free (max_worker_processes), logs and tries again at the
/// next probe.
fn ensure_worker(
    workers: &mut HashMap<Oid, DynamicBackgroundWorker>,
    db: Oid,
    created_by: pg_sys::TransactionId,
) -> Ensured {
    let running = workers.get(&db).is_some_and(|w| {
        !matches!(
            w.pid(),
            Err(pgrx::bgworkers::BackgroundWorkerStatus::Stopped)
        )
    });
    // A worker of an earlier life of the launcher (terminated, restarted) keeps its database.
    if running || registry::serving_pid(db).is_some() {
        return Ensured::Running;
    }
    if registry::is_dropping(db) {
        return Ensured::NotStarted;
    }
    if running_count(workers) >= gucs::MAX_WORKERS.get() as usize {
        return Ensured::NotStarted;
    }
    let started =
        BackgroundWorkerBuilder::new(&format!("jsonb_ttl worker for database {}", db.to_u32()))
            .set_type("jsonb_ttl worker")
            .set_library("jsonb_ttl")
            .set_function("jsonb_ttl_worker_main")
            .set_argument(Some(
                crate::worker::WorkerArg { db, created_by }.into_datum(),
            ))
            .enable_shmem_access(None)
            .enable_spi_access()
            .set_start_time(BgWorkerStartTime::RecoveryFinished)
            .set_restart_time(None)
            .set_notify_pid(unsafe { pg_sys::MyProcPid })
            .load_dynamic();
    match started {
        Ok(worker) => {
            workers.insert(db, worker);
            Ensured::Started
        }
        Err(_) => {
            workers.remove(&db);
            Ensured::NoSlot
        }
    }
}

/// Databases that accept connections and are not templates, read from pg_database directly
/// (as autovacuum does), since the launcher is connected to no database.
fn connectable_databases() -> Vec<Oid> {
    let mut databases = Vec::new();
    unsafe {
        pg_sys::SetCurrentStatementStartTimestamp();
        pg_sys::StartTransactionCommand();
        pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
        let relation = pg_sys::table_open(pg_sys::DatabaseRelationId, pg_sys::AccessShareLock as _);
        let scan = pg_sys::table_beginscan_catalog(relation, 0, std::ptr::null_mut());
        loop {
            let tuple = pg_sys::heap_getnext(scan, pg_sys::ScanDirection::ForwardScanDirection);
            if tuple.is_null() {
                break;
            }
            let header = (*tuple).t_data;
            let form = (header as *const u8).add((*header).t_hoff as usize)
                as *const pg_sys::FormData_pg_database;
            // datconnlimit -2: a database whose DROP DATABASE was interrupted (invalid)
            if (*form).datallowconn && !(*form).datistemplate && (*form).datconnlimit != -2 {
                databases.push((*form).oid);
            }
        }
        pg_sys::table_endscan(scan);
        pg_sys::table_close(relation, pg_sys::AccessShareLock as _);
        pg_sys::PopActiveSnapshot();
        pg_sys::CommitTransactionCommand();
    }
    databases
}
