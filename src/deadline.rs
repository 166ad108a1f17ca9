//! A deadline owner code cannot catch. A batch (or the probe, or the safety brake's count) runs
//! the table owner's triggers, policies and index expressions; `jsonb_ttl.batch_timeout` cancels
//! its statement, but a cancel is an ERROR, and owner code can catch it (`EXCEPTION WHEN
//! query_canceled`) and go on for as long as it likes, holding the worker and one of
//! `jsonb_ttl.max_workers`' turns. So each worker also publishes here, in shared memory, the
//! table it works on and when that work must be over: `batch_timeout` plus [`GRACE_MS`]. The
//! launcher looks four times a second, and terminates a worker past its deadline (SIGTERM: a
//! FATAL, which no PL/pgSQL handler catches), after setting the table aside in the statistics
//! with a back-off that grows ([`crate::stats::set_aside`]). The next worker of the database
//! skips that table, and every other TTL table of the same owner (a tenant with many traps
//! costs one termination per back-off, not one per table), and purges the others on time.

use crate::registry::{now_ms, MAX_DATABASES};
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use pgrx::shmem::PGRXSharedMemory;
use pgrx::PgLwLock;
use std::time::Duration;

/// How long past `jsonb_ttl.batch_timeout` a batch may run (its rollback, owner code that
/// handles the cancel and stops) before its worker is terminated.
pub const GRACE_MS: i64 = 2_000;

#[derive(Copy, Clone, Default)]
struct Watch {
    pid: i32,
    dboid: u32,
    table: u32,
    /// The table's owner: a table set aside sets its owner's other tables aside too.
    owner: u32,
    /// Milliseconds since the Unix epoch; 0 when nothing is watched.
    deadline_ms: i64,
}

#[derive(Copy, Clone)]
pub struct Watches([Watch; MAX_DATABASES]);

impl Default for Watches {
    fn default() -> Self {
        Watches([Watch::default(); MAX_DATABASES])
    }
}

unsafe impl PGRXSharedMemory for Watches {}

static WATCHES: PgLwLock<Watches> = unsafe { PgLwLock::new(c"jsonb_ttl_deadlines") };

/// Requests the shared memory; from `_PG_init` while preloading.
pub fn init() {
    pgrx::pg_shmem_init!(WATCHES);
}

/// The work of this process on one table, watched by the launcher until dropped.
pub struct Deadline {
    armed: bool,
}

impl Deadline {
    /// Watches this process's work on `table` for `timeout_ms` plus [`GRACE_MS`]; nothing is
    /// watched when `timeout_ms` is 0 (`jsonb_ttl.batch_timeout = 0`: no time limit at all),
    /// or outside a background worker (a caller's own session: `ttl_expire_now()`).
    pub fn arm(table: Oid, owner: Oid, timeout_ms: i32) -> Deadline {
        let armed = timeout_ms > 0
            && crate::preload::preloaded()
            && unsafe { pg_sys::MyBackendType } == pg_sys::BackendType::B_BG_WORKER;
        if armed {
            let deadline_ms = now_ms() + timeout_ms as i64 + GRACE_MS;
            update_mine(|watch| {
                watch.table = table.to_u32();
                watch.owner = owner.to_u32();
                watch.deadline_ms = deadline_ms;
            });
        }
        Deadline { armed }
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        if self.armed {
            update_mine(|watch| watch.deadline_ms = 0);
        }
    }
}

/// Applies `update` to this process's watch, taking a free one if it has none.
fn update_mine(update: impl FnOnce(&mut Watch)) {
    let pid = unsafe { pg_sys::MyProcPid };
    let dboid = unsafe { pg_sys::MyDatabaseId }.to_u32();
    let mut watches = WATCHES.exclusive();
    let slot = watches
        .0
        .iter()
        .position(|w| w.pid == pid)
        .or_else(|| watches.0.iter().position(|w| w.pid == 0));
    if let Some(slot) = slot {
        let watch = &mut watches.0[slot];
        watch.pid = pid;
        watch.dboid = dboid;
        update(watch);
    }
}

/// Forgets this process's watch; from the worker's exit callback (a terminated worker's
/// destructors do not run).
pub fn forget_mine() {
    let pid = unsafe { pg_sys::MyProcPid };
    for watch in WATCHES.exclusive().0.iter_mut().filter(|w| w.pid == pid) {
        *watch = Watch::default();
    }
}

/// Work past its deadline, as (pid, database, table), each reported once.
pub struct Overdue {
    pub pid: i32,
    pub dboid: Oid,
    pub table: Oid,
    pub owner: Oid,
}

/// The launcher takes the work that is past its deadline now.
pub fn take_overdue() -> Vec<Overdue> {
    let now = now_ms();
    let mut watches = WATCHES.exclusive();
    watches
        .0
        .iter_mut()
        .filter(|w| w.pid != 0 && w.deadline_ms != 0 && w.deadline_ms <= now)
        .map(|w| {
            w.deadline_ms = 0;
            Overdue {
                pid: w.pid,
                dboid: Oid::from(w.dboid),
                table: Oid::from(w.table),
                owner: Oid::from(w.owner),
            }
        })
        .collect()
}

/// How often the launcher looks for work past its deadline.
pub const CHECK_EVERY: Duration = Duration::from_millis(250);

/// Terminates the worker whose work is `overdue` after setting its table aside: a FATAL that
/// no handler of the owner's catches. From the launcher.
pub fn terminate(overdue: &Overdue, frequency_ms: i64) {
    let until = crate::stats::set_aside(
        overdue.dboid,
        overdue.table,
        overdue.owner,
        frequency_ms,
        GRACE_MS,
    );
    log!(
        "jsonb_ttl: the worker of database {} (pid {}) ran past jsonb_ttl.batch_timeout + {} ms \
         on table {}: terminating it; the table and its owner's other TTL tables are set aside \
         for {} s",
        overdue.dboid.to_u32(),
        overdue.pid,
        GRACE_MS,
        overdue.table.to_u32(),
        until.as_secs()
    );
    // Signalled holding the lock its exit callback takes (forget_mine), and only while the
    // process still holds its watch: a pid that exited and was reused is never signalled.
    let watches = WATCHES.exclusive();
    if watches.0.iter().any(|w| w.pid == overdue.pid) {
        unsafe { libc::kill(overdue.pid, libc::SIGTERM) };
    }
}
