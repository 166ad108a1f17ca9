//! Shared memory the launcher, the per-database workers and the ProcessUtility hook share:
//! which process serves which database (and where its next pass starts), the launcher's latch,
//! databases that just ran CREATE EXTENSION, databases a worker found without the extension,
//! databases a statement needs to itself. (The server-wide removal budget is in
//! [`crate::budget`].)

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::shmem::PGRXSharedMemory;
use pgrx::{PgAtomic, PgLwLock};
use std::sync::atomic::{AtomicI64, Ordering};

/// Databases served at once; a database beyond this is logged and not served.
pub const MAX_DATABASES: usize = 256;

#[derive(Copy, Clone, Default)]
pub struct Slot {
    pub dboid: u32,
    pub pid: i32,
}

#[derive(Copy, Clone)]
pub struct Registry {
    workers: [Slot; MAX_DATABASES],
    /// Databases where CREATE EXTENSION jsonb_ttl just ran, with its transaction (0 = free).
    wanted: [(u32, u32); 16],
    /// A CREATE EXTENSION found `wanted` full: the launcher must look at every database again.
    wanted_overflowed: bool,
    /// Databases a worker just found without the extension, with that worker's pid (0 = free).
    without_extension: [(u32, i32); 64],
    /// Databases a statement needs to itself (DROP DATABASE, CREATE DATABASE … TEMPLATE, …), and
    /// since when (ms since the Unix epoch): the launcher starts no worker for them for a while.
    dropping: [(u32, i64); 16],
    launcher_latch: usize,
    /// Where each database's next pass starts its round-robin (database, index): kept here so
    /// that a worker that gives its turn up (jsonb_ttl.max_workers) does not start its
    /// successor at the first table again.
    next_start: [(u32, u32); MAX_DATABASES],
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            workers: [Slot::default(); MAX_DATABASES],
            wanted: [(0, 0); 16],
            wanted_overflowed: false,
            without_extension: [(0, 0); 64],
            dropping: [(0, 0); 16],
            launcher_latch: 0,
            next_start: [(0, 0); MAX_DATABASES],
        }
    }
}

unsafe impl PGRXSharedMemory for Registry {}

static REGISTRY: PgLwLock<Registry> = unsafe { PgLwLock::new(c"jsonb_ttl_registry") };

/// Requests the shared memory; from `_PG_init` while preloading.
pub fn init() {
    pgrx::pg_shmem_init!(REGISTRY);
    pgrx::pg_shmem_init!(WAITING);
}

/// Records that this process serves `dboid`. False when another process serves it already (a
/// worker started by an earlier life of the launcher) or every slot is taken: one worker per
/// database, whatever restarts happen.
pub fn register_worker(dboid: pg_sys::Oid) -> Result<(), Refused> {
    let pid = unsafe { pg_sys::MyProcPid };
    let mut registry = REGISTRY.exclusive();
    if let Some(other) = registry
        .workers
        .iter()
        .find(|s| s.dboid == dboid.to_u32() && s.pid != 0 && s.pid != pid)
    {
        return Err(Refused::Served(other.pid));
    }
    let free = registry.workers.iter().position(|s| s.dboid == 0);
    match free {
        Some(i) => {
            registry.workers[i] = Slot {
                dboid: dboid.to_u32(),
                pid,
            };
            Ok(())
        }
        None => Err(Refused::Full),
    }
}

/// Why [`register_worker`] refused.
pub enum Refused {
    /// This process serves the database already.
    Served(i32),
    /// Every slot is taken.
    Full,
}

/// Where the next pass of `dboid` starts its round-robin over the TTL tables.
pub fn next_start(dboid: pg_sys::Oid) -> usize {
    let registry = REGISTRY.share();
    registry
        .next_start
        .iter()
        .find(|(db, _)| *db == dboid.to_u32())
        .map_or(0, |&(_, at)| at as usize)
}

/// Records where the next pass of `dboid` starts.
pub fn set_next_start(dboid: pg_sys::Oid, at: usize) {
    let mut registry = REGISTRY.exclusive();
    let slot = registry
        .next_start
        .iter()
        .position(|(db, _)| *db == dboid.to_u32())
        .or_else(|| registry.next_start.iter().position(|(db, _)| *db == 0))
        .unwrap_or((dboid.to_u32() as usize) % MAX_DATABASES);
    registry.next_start[slot] = (dboid.to_u32(), at as u32);
}

/// How many databases a worker serves now.
pub fn served_count() -> usize {
    REGISTRY
        .share()
        .workers
        .iter()
        .filter(|s| s.pid != 0)
        .count()
}

/// Databases waiting for a worker because `jsonb_ttl.max_workers` run: a worker that ends a
/// pass while any wait exits, giving its turn to the next (the launcher sets it).
static WAITING: PgAtomic<AtomicI64> = unsafe { PgAtomic::new(c"jsonb_ttl_waiting") };

/// The launcher records how many databases wait for a worker now.
pub fn set_waiting(count: usize) {
    WAITING.get().store(count as i64, Ordering::Relaxed);
}

/// How many databases wait for a worker now.
pub fn databases_waiting() -> i64 {
    WAITING.get().load(Ordering::Relaxed)
}

/// The process serving `dboid`, if any.
pub fn serving_pid(dboid: pg_sys::Oid) -> Option<i32> {
    REGISTRY
        .share()
        .workers
        .iter()
        .find(|s| s.dboid == dboid.to_u32() && s.pid != 0)
        .map(|s| s.pid)
}

/// Forgets this process's slot.
pub fn unregister_worker() {
    let pid = unsafe { pg_sys::MyProcPid };
    let mut registry = REGISTRY.exclusive();
    for slot in registry.workers.iter_mut().filter(|s| s.pid == pid) {
        *slot = Slot::default();
    }
}

/// How long a database being dropped gets no new worker.
const DROPPING_MS: i64 = 30_000;

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A statement that needs `dboid` to itself (DROP DATABASE…) is about to run: no new worker
/// for `dboid` for a while, and the worker serving it, if any, is asked to exit (SIGTERM) so
/// the statement need not wait.
pub fn stop_worker(dboid: pg_sys::Oid) -> Option<i32> {
    let mut registry = REGISTRY.exclusive();
    let now = now_ms();
    let oldest = (0..registry.dropping.len())
        .min_by_key(|&i| registry.dropping[i].1)
        .unwrap_or(0);
    registry.dropping[oldest] = (dboid.to_u32(), now);
    let pid = registry
        .workers
        .iter()
        .find(|s| s.dboid == dboid.to_u32() && s.pid != 0)
        .map(|s| s.pid)?;
    unsafe { libc::kill(pid, libc::SIGTERM) };
    Some(pid)
}

/// Whether a statement that needs `dboid` to itself started recently.
pub fn is_dropping(dboid: pg_sys::Oid) -> bool {
    let now = now_ms();
    REGISTRY
        .share()
        .dropping
        .iter()
        .any(|&(db, since)| db == dboid.to_u32() && now - since < DROPPING_MS)
}

/// The launcher records itself so others can wake it.
pub fn register_launcher() {
    let mut registry = REGISTRY.exclusive();
    registry.launcher_latch = unsafe { &raw mut (*pg_sys::MyProc).procLatch } as usize;
}

/// Records that `dboid` wants a worker now, once transaction `xid` (the CREATE EXTENSION's)
/// ends, and wakes the launcher.
pub fn want_worker(dboid: pg_sys::Oid, xid: pg_sys::TransactionId) {
    let entry = (dboid.to_u32(), u32::from(xid));
    let mut registry = REGISTRY.exclusive();
    let slot = registry
        .wanted
        .iter()
        .position(|w| w.0 == entry.0)
        .or_else(|| registry.wanted.iter().position(|w| w.0 == 0));
    match slot {
        Some(slot) => registry.wanted[slot] = entry,
        None => registry.wanted_overflowed = true,
    }
    if registry.launcher_latch != 0 {
        unsafe { pg_sys::SetLatch(registry.launcher_latch as *mut pg_sys::Latch) };
    }
}

/// Takes the databases that asked for a worker since the last call, each with the transaction
/// to wait for, and whether some request did not fit (then every database may have asked).
pub fn take_wanted() -> (Vec<(pg_sys::Oid, pg_sys::TransactionId)>, bool) {
    let mut registry = REGISTRY.exclusive();
    let wanted = registry
        .wanted
        .iter()
        .filter(|w| w.0 != 0)
        .map(|&(db, xid)| (pg_sys::Oid::from(db), pg_sys::TransactionId::from(xid)))
        .collect();
    registry.wanted = [(0, 0); 16];
    let overflowed = std::mem::take(&mut registry.wanted_overflowed);
    (wanted, overflowed)
}

/// This worker found no jsonb_ttl in `dboid` and is exiting: the launcher leaves the database
/// alone until CREATE EXTENSION wakes it. When the list is full the report is dropped, and the
/// launcher simply probes the database again later.
pub fn report_without_extension(dboid: pg_sys::Oid) {
    let pid = unsafe { pg_sys::MyProcPid };
    let mut registry = REGISTRY.exclusive();
    if let Some(free) = registry.without_extension.iter_mut().find(|w| w.0 == 0) {
        *free = (dboid.to_u32(), pid);
    }
}

/// Takes the databases reported without the extension since the last call, each with the pid
/// of the worker that reported it.
pub fn take_without_extension() -> Vec<(pg_sys::Oid, i32)> {
    let mut registry = REGISTRY.exclusive();
    let reports = registry
        .without_extension
        .iter()
        .filter(|w| w.0 != 0)
        .map(|&(db, pid)| (pg_sys::Oid::from(db), pid))
        .collect();
    registry.without_extension = [(0, 0); 64];
    reports
}

/// Called from CREATE EXTENSION: the launcher starts this database's worker at once, and the
/// worker waits for this transaction to end.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_wake_launcher",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_wake_launcher() {
    if crate::preload::preloaded() {
        want_worker(unsafe { pg_sys::MyDatabaseId }, unsafe {
            pg_sys::GetTopTransactionId()
        });
    }
}
