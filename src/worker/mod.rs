//! The per-database worker: a dynamic background worker connected to one database for life.
//! Its lifecycle is written down in docs/worker.md.
//!
//! Every `jsonb_ttl.frequency` ms it runs a pass: it loads the TTL indexes of its database and
//! visits them round-robin, removing expired rows in batches — each batch its own transaction,
//! run as the table's owner with a short `lock_timeout` — until nothing is expired or a limit
//! is hit. An error in one table aborts that batch's transaction only; the table is counted,
//! logged and skipped until the next pass.
//!
//! The rooms: this module starts the worker and runs its main loop (a pass, then sleep until
//! the next); [`pass`] is one pass over the database's TTL indexes; [`visit`] is the purge of
//! one table within the limits; [`batch`] is the frame each batch runs in (its transaction,
//! time limits and owner) and its statements.

mod batch;
mod frame;
mod one_batch;
mod pass;
mod probe;
mod rate;
mod safety_brake;
mod statements;
mod targets;
mod visit;

use crate::bgw::{self, handle_signals, sleep};
use crate::catalog::{self, TtlIndex};
use crate::deleter::Batch;
use crate::extension::Extension;
use crate::generic_plan::GenericPlan;
use crate::txn::in_transaction;
use crate::undeletable::Undeletable;
use crate::{citus_sync, gucs, registry, stats};
use frame::Frame;
use pgrx::bgworkers::{BackgroundWorker, SignalWakeFlags};
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use statements::Prepared;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Forgets this process in shared memory however it exits (a FATAL from `die()` included), so
/// nobody signals a reused pid later.
unsafe extern "C-unwind" fn unregister_on_exit(_code: std::ffi::c_int, _arg: pg_sys::Datum) {
    registry::unregister_worker();
    crate::deadline::forget_mine();
}

/// What the worker keeps between passes.
struct Worker {
    /// The statements of each table's batches: the DELETE (under `Batch::Plain`) and the count
    /// that comes first in a counting batch (under `Batch::Counting`).
    statements: HashMap<((Oid, catalog::Part), Batch), Prepared<GenericPlan>>,
    /// The probe of each table (is anything expired?).
    probes: HashMap<(Oid, catalog::Part), Prepared>,
    /// What the batches of a pass share.
    frame: Frame,
    /// Rows that cannot be deleted, set aside.
    undeletable: Undeletable,
    /// Where the next pass starts, so no table is always first.
    next_start: usize,
    /// The batch size each table reached (see [`jsonb_ttl_core::batch_size`]), where its next
    /// visit starts; a Citus shard's under its distributed table, shared by the node's shards.
    batch_rows: HashMap<(Oid, Option<i16>), i64>,
    /// Whether the last pass was skipped because pg_restore is connected (logged once).
    waiting_for_restore: bool,
    /// TTL indexes the safety brake paused in this pass (their other partitions wait too).
    paused_roots: std::collections::HashSet<Oid>,
    /// Tables whose backlog the safety brake let through, until a visit drains it, with the
    /// version of the definition it was counted under ([`catalog::TtlIndex::version`]): any
    /// change of the definition (a shorter expire_after, a wider filter, a new time zone…) is
    /// counted again, between passes as mid-visit (a batch runs only under the version it was
    /// built from).
    brake_checked: HashMap<(Oid, catalog::Part), String>,
    /// Partitioned tables whose expired rows the safety brake counted in this pass, in all
    /// their partitions, and let through, with the version it counted under: their other
    /// partitions are not counted again until the next pass.
    brake_checked_roots: HashMap<(Oid, catalog::Part), String>,
    /// Tables whose oldest expired time is recorded in the statistics (see
    /// [`stats::tables_with_oldest_expired`]).
    lagging: std::collections::HashSet<(Oid, u8)>,
    /// What the coordinator last handed on to the Citus worker nodes (see [`citus_sync`]).
    citus_sent: citus_sync::Sent,
    /// Slowing down for replicas and WAL (see [`crate::throttle`]).
    throttle: crate::throttle::Throttle,
    /// The TTL indexes (by their table) whose brake, released, holds again at the end of the
    /// pass: true when every target of theirs visited drained, false when one did not.
    rearm: HashMap<Oid, bool>,
    /// When each rate-limited table's next batch is due (`max_removes_per_second`): its last
    /// batch's start plus that batch's rows' share of a second, under the version of the
    /// definition it ran under (a new rate, or any change, starts afresh). Kept across passes.
    rate_due: HashMap<(Oid, catalog::Part), (Instant, String)>,
    /// The rate-limited tables whose visit yielded with expired rows left (see
    /// worker/rate.rs): served between passes when due, until the next pass.
    rate_pending: HashMap<(Oid, catalog::Part), TtlIndex>,
    /// The targets of the last pass, kept until what they were read from changes.
    kept: Option<targets::Kept>,
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
    if !start(dboid, created_by) {
        return;
    }
    Worker::new(dboid).serve(dboid);
}

/// STARTING (docs/worker.md): connects to database `dboid` and registers there, then waits for
/// the CREATE EXTENSION's transaction `created_by`, if any. False when another worker serves
/// the database or shared memory has no room for it: the worker exits.
fn start(dboid: Oid, created_by: pg_sys::TransactionId) -> bool {
    bgw::die_on_sigterm();
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP);
    BackgroundWorker::connect_worker_to_spi_by_oid(Some(dboid), None);
    match registry::register_worker(dboid) {
        Ok(()) => {}
        Err(registry::Refused::Served(pid)) => {
            debug1!("jsonb_ttl: worker {pid} serves this database already");
            return false;
        }
        Err(registry::Refused::Full) => {
            log!(
                "jsonb_ttl: more than {} databases; this one is not served",
                registry::MAX_DATABASES
            );
            return false;
        }
    }
    unsafe { pg_sys::before_shmem_exit(Some(unregister_on_exit), pg_sys::Datum::from(0)) };
    targets::watch_invalidations();
    // Everything the worker runs names its schema; nothing resolves through search_path.
    let _ = in_transaction(|| Spi::run("SET search_path = pg_catalog, pg_temp"));
    // Under Citus, shards are hidden from pg_class in a session Citus does not know as its
    // own; the worker looks its shards up there (see crate::citus).
    let _ = in_transaction(|| {
        Spi::run(
            "SELECT pg_catalog.set_config('citus.override_table_visibility', 'off', false) \
             WHERE pg_catalog.current_setting('citus.override_table_visibility', true) \
                   IS NOT NULL",
        )
    });
    if created_by != pg_sys::InvalidTransactionId {
        // CREATE EXTENSION wakes the launcher before it commits.
        wait_for_transaction(created_by);
    }
    true
}

impl Worker {
    fn new(dboid: Oid) -> Worker {
        Worker {
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
            brake_checked_roots: Default::default(),
            lagging: stats::tables_with_oldest_expired(),
            citus_sent: Default::default(),
            throttle: Default::default(),
            kept: None,
            rate_due: HashMap::new(),
            rate_pending: HashMap::new(),
            rearm: HashMap::new(),
        }
    }

    /// CHECKING, PASS, SLEEPING (docs/worker.md), until the extension is gone or the worker
    /// gives its turn up.
    fn serve(&mut self, dboid: Oid) {
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
                self.pass(&ext);
            }
            report_idle();
            if registry::databases_waiting() > 0 {
                // jsonb_ttl.max_workers run and other databases wait: give the turn up
                debug1!("jsonb_ttl: other databases wait for a worker; this one yields its turn");
                break;
            }
            self.wait_for_next_pass(&ext, started);
        }
    }
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

/// Which limit, if any, cut a table's purge short.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Limit {
    None,
    /// `max_table_removes`.
    Table,
    /// `max_total_removes`, shared by the whole server.
    Server,
    /// A replica or the WAL rate held the worker back for a whole `frequency` (see
    /// [`crate::throttle`]): the pass ends, the next one tries again.
    Throttled,
    /// The table's own rate (`max_removes_per_second`) asked for a wait longer than a visit
    /// may take: it yields, and goes on between passes when due.
    Rate,
}
