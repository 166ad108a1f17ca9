//! Statistics in shared memory: one entry per TTL index the worker has visited, and the
//! server totals. Read through the `ttl_stats` view and `ttl_statistics()`; cleared by
//! `ttl_stats_reset()`. Only the background worker counts: `ttl_expire_now()` runs in a
//! transaction the caller may still roll back.
//!
//! This module is the store and what the worker and the launcher record in it; [`sql`], the SQL
//! functions that read it.

mod sql;
mod store;

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgAtomic;
use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;
pub use store::bytes_per_entry;

/// The bytes of `last_error` kept: a whole message as PostgreSQL writes one (names, the
/// archive's or a trigger's own text), cut on a character boundary past that.
const ERROR_LEN: usize = 1024;

#[derive(Copy, Clone)]
pub struct Entry {
    dboid: u32,
    reloid: u32,
    /// Which rows of the table: [`WHOLE`], or [`OWN_TTL`] for the rows of a per-row TTL table
    /// with a TTL of their own (the rest count in `WHOLE`).
    part: u8,
    runs: u64,
    rows_deleted: u64,
    /// TimestampTz of the last run, 0 when none.
    last_run_at: i64,
    /// TimestampTz of the last update of any kind: which entry a table being set aside takes
    /// when all are taken.
    touched_at: i64,
    last_rows_deleted: u64,
    limit_reached: u64,
    errors: u64,
    /// Rows the worker has set aside because they cannot be deleted (now, not in all).
    rows_undeletable: u64,
    last_error_len: usize,
    last_error: [u8; ERROR_LEN],
    /// The oldest expired reference time the worker saw at its last visit (its probe), 0 when
    /// it saw none: what `ttl_stats.oldest_expired` shows, read without running owner code.
    oldest_expired: i64,
    /// Set aside until then (TimestampTz, 0 when not): a batch on this table held its worker
    /// past its deadline (see [`crate::deadline`]).
    set_aside_until: i64,
    /// How many times in a row that happened: the back-off grows with it.
    strikes: u32,
    /// The table's owner when it was set aside: that owner's other tables wait too.
    set_aside_owner: u32,
    /// TimestampTz of the end of the last visit that ended without an error, 0 when none.
    last_success_at: i64,
    /// How long the last visit took (µs).
    last_run_us: u64,
    /// The expired rows left at the end of the last visit (0: it drained the table; counted
    /// up to [`BACKLOG_COUNT_LIMIT`]), -1 when unknown.
    backlog: i64,
}

impl Entry {
    const EMPTY: Entry = Entry {
        dboid: 0,
        reloid: 0,
        part: WHOLE,
        runs: 0,
        rows_deleted: 0,
        last_run_at: 0,
        touched_at: 0,
        last_rows_deleted: 0,
        limit_reached: 0,
        errors: 0,
        rows_undeletable: 0,
        last_error_len: 0,
        last_error: [0; ERROR_LEN],
        oldest_expired: 0,
        set_aside_until: 0,
        strikes: 0,
        set_aside_owner: 0,
        last_success_at: 0,
        last_run_us: 0,
        backlog: -1,
    };
}

/// The part of a table's statistics: all its rows, or those that fall back to expire_after.
pub const WHOLE: u8 = 0;
/// The part of a per-row TTL table's statistics: its rows with a TTL of their own.
pub const OWN_TTL: u8 = 1;
/// The parts of field TTLs start after these (see [`field_part`]).
const FIELD_BASE: u8 = 2;

/// The most field TTLs one table may have: each counts in a part of the table's statistics
/// (a `u8` after [`FIELD_BASE`]).
pub const MAX_FIELDS: i16 = 200;

/// The part of a table's statistics that field TTL number `n` (1 to 200, see
/// [`crate::field`]) counts in: the documents whose field it removed.
pub fn field_part(n: i16) -> u8 {
    FIELD_BASE + n.clamp(1, MAX_FIELDS) as u8
}

/// The most expired rows counted for `ttl_stats.backlog` after a visit cut short by a limit.
pub const BACKLOG_COUNT_LIMIT: i64 = 100_000;

static TOTAL_RUNS: PgAtomic<AtomicU64> = unsafe { PgAtomic::new(c"jsonb_ttl_runs") };
static TOTAL_ROWS: PgAtomic<AtomicU64> = unsafe { PgAtomic::new(c"jsonb_ttl_rows") };
static TOTAL_LIMIT: PgAtomic<AtomicU64> = unsafe { PgAtomic::new(c"jsonb_ttl_limit") };
/// The most recent pass of any database: when it ended (TimestampTz) and how long it took (µs).
static LAST_PASS_AT: PgAtomic<AtomicI64> = unsafe { PgAtomic::new(c"jsonb_ttl_pass_at") };
static LAST_PASS_US: PgAtomic<AtomicU64> = unsafe { PgAtomic::new(c"jsonb_ttl_pass_us") };

/// Requests the shared memory; from `_PG_init` while preloading.
pub fn init() {
    store::init();
    pgrx::pg_shmem_init!(TOTAL_RUNS);
    pgrx::pg_shmem_init!(TOTAL_ROWS);
    pgrx::pg_shmem_init!(TOTAL_LIMIT);
    pgrx::pg_shmem_init!(LAST_PASS_AT);
    pgrx::pg_shmem_init!(LAST_PASS_US);
}

/// What one pass did to one TTL index.
pub struct Run<'a> {
    pub table: pg_sys::Oid,
    /// [`WHOLE`] or [`OWN_TTL`].
    pub part: u8,
    pub rows_deleted: u64,
    pub limit_reached: bool,
    pub error: Option<&'a str>,
    /// How long the visit took (zero: no visit, the probe found nothing expired).
    pub took: Duration,
    /// The expired rows it left (see [`Entry::backlog`]), `None` when unknown.
    pub backlog: Option<i64>,
}

/// Counts the rows of one committed batch at once, so `ttl_stats` and `ttl_statistics()`
/// follow a long purge batch by batch instead of at the end of the table's visit.
pub fn record_batch(table: pg_sys::Oid, part: u8, rows_deleted: u64) {
    TOTAL_ROWS.get().fetch_add(rows_deleted, Ordering::Relaxed);
    update_entry(table, part, |entry| entry.rows_deleted += rows_deleted);
}

/// Counts the rows of the partitions the worker dropped or detached (the planner's estimate:
/// they are not counted one by one) in the server totals.
pub fn record_dropped(rows: u64) {
    TOTAL_ROWS.get().fetch_add(rows, Ordering::Relaxed);
}

/// Records the end of one visit of the worker to one TTL index of the current database (its
/// rows were counted batch by batch).
pub fn record_run(run: &Run) {
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    update_entry(run.table, run.part, |entry| {
        entry.runs += 1;
        entry.last_run_at = now;
        entry.last_rows_deleted = run.rows_deleted;
        entry.limit_reached += run.limit_reached as u64;
        if !run.took.is_zero() {
            // a visit (a probe that found nothing expired took no time of its own)
            entry.last_run_us = run.took.as_micros() as u64;
        }
        entry.backlog = run.backlog.unwrap_or(-1);
        if run.error.is_none() {
            entry.last_success_at = now;
        }
        match run.error {
            Some(error) => set_error(entry, error),
            // batches ran to their end: the back-off of a table set aside starts over
            None if run.rows_deleted > 0 => entry.strikes = 0,
            None => {}
        }
    });
}

fn set_error(entry: &mut Entry, error: &str) {
    entry.errors += 1;
    let mut len = error.len().min(ERROR_LEN);
    while !error.is_char_boundary(len) {
        len -= 1;
    }
    entry.last_error[..len].copy_from_slice(&error.as_bytes()[..len]);
    entry.last_error_len = len;
}

/// Records the oldest expired reference time of `table` the worker sees now (`None`: nothing
/// is expired, or it was all removed).
pub fn record_oldest_expired(table: pg_sys::Oid, part: u8, oldest: Option<TimestampWithTimeZone>) {
    update_entry(table, part, |entry| {
        entry.oldest_expired = oldest.map_or(0, |at| at.into_inner())
    });
}

/// Sets `table` of database `dboid`, and the other TTL tables of its `owner`, aside because a
/// batch on it held its worker past its deadline (see [`crate::deadline`]), for a back-off that
/// doubles with each time in a row:
/// a minute (at least `frequency_ms`), two, four… at most an hour; `grace_ms` is how far past
/// `batch_timeout` the deadline was. From the launcher; returns the back-off.
pub fn set_aside(
    dboid: pg_sys::Oid,
    table: pg_sys::Oid,
    owner: pg_sys::Oid,
    frequency_ms: i64,
    grace_ms: i64,
) -> Duration {
    let mut backoff = Duration::ZERO;
    update_entry_in(dboid.to_u32(), table, WHOLE, true, |entry| {
        entry.strikes += 1;
        entry.set_aside_owner = owner.to_u32();
        let base = Duration::from_millis(frequency_ms.max(60_000) as u64);
        backoff = (base * 2u32.saturating_pow(entry.strikes.min(16) - 1)).min(MAX_BACKOFF);
        let now = unsafe { pg_sys::GetCurrentTimestamp() };
        entry.set_aside_until = now + backoff.as_micros() as i64;
        set_error(
            entry,
            &format!(
                "a batch ran past jsonb_ttl.batch_timeout + {} ms (the owner's code went on after \
                 the cancel): its worker was terminated; set aside for {} s ({} time(s) in a row)",
                grace_ms,
                backoff.as_secs(),
                entry.strikes
            ),
        );
    });
    backoff
}

/// The longest a table is set aside.
const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// The tables of the current database set aside now, and the owners whose tables are (see
/// [`set_aside`]): read once a pass.
#[derive(Default)]
pub struct SetAside {
    tables: HashSet<u32>,
    owners: HashSet<u32>,
}

impl SetAside {
    pub fn now() -> SetAside {
        let dboid = unsafe { pg_sys::MyDatabaseId }.to_u32();
        let now = unsafe { pg_sys::GetCurrentTimestamp() };
        store::read(|store| {
            let mut aside = SetAside::default();
            for e in store.entries() {
                if e.dboid == dboid && e.set_aside_until > now {
                    aside.tables.insert(e.reloid);
                    if e.set_aside_owner != 0 {
                        aside.owners.insert(e.set_aside_owner);
                    }
                }
            }
            aside
        })
    }

    /// Whether `table`, owned by `owner`, is set aside: itself, or another table of its owner.
    pub fn holds(&self, table: pg_sys::Oid, owner: pg_sys::Oid) -> bool {
        self.tables.contains(&table.to_u32()) || self.owners.contains(&owner.to_u32())
    }
}

/// The tables of the current database whose oldest expired time is recorded: a worker keeps
/// this set, so it writes shared memory only when a table's lag appears, changes or goes.
pub fn tables_with_oldest_expired() -> HashSet<(pg_sys::Oid, u8)> {
    let dboid = unsafe { pg_sys::MyDatabaseId }.to_u32();
    store::read(|store| {
        store
            .entries()
            .iter()
            .filter(|e| e.dboid == dboid && e.oldest_expired != 0)
            .map(|e| (pg_sys::Oid::from(e.reloid), e.part))
            .collect()
    })
}

/// Forgets the entries of the current database whose (table, part) is not in `keep` (the
/// targets of this pass: the others were dropped, or lost their TTL index), but those of tables
/// set aside now, whose back-off must outlive them. From the worker, once a pass, so that
/// entries of gone tables do not fill the store; returns how many went.
pub fn forget_tables_except(keep: &HashSet<(pg_sys::Oid, u8)>) -> usize {
    let dboid = unsafe { pg_sys::MyDatabaseId }.to_u32();
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    let gone = |e: &Entry| {
        e.dboid == dboid
            && e.set_aside_until <= now
            && !keep.contains(&(pg_sys::Oid::from(e.reloid), e.part))
    };
    // a shared look first: most passes forget nothing
    if !store::read(|store| store.entries().iter().any(gone)) {
        return 0;
    }
    store::write(|store| store.retain(|e| !gone(e)))
}

/// Forgets the entries of every database not in `databases` (dropped ones), but those of tables
/// set aside now; from the launcher, which lists them.
pub fn forget_databases_except(databases: &HashSet<u32>) -> usize {
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    let gone = |e: &Entry| !databases.contains(&e.dboid) && e.set_aside_until <= now;
    if !store::read(|store| store.entries().iter().any(gone)) {
        return 0;
    }
    store::write(|store| store.retain(|e| !gone(e)))
}

/// Records how many rows of `table` the worker holds set aside now (see
/// [`crate::undeletable`]).
pub fn record_undeletable(table: pg_sys::Oid, rows: u64) {
    update_entry(table, WHOLE, |entry| entry.rows_undeletable = rows);
}

/// Applies `update` to the entry of `table` in the current database, made when it has none.
/// When the store is full (`jsonb_ttl.max_tables` entries), the update is dropped and counted
/// (`ttl_stats_store().refused`), and the log says so once.
fn update_entry(table: pg_sys::Oid, part: u8, update: impl FnOnce(&mut Entry)) {
    update_entry_in(
        unsafe { pg_sys::MyDatabaseId }.to_u32(),
        table,
        part,
        false,
        update,
    )
}

/// [`update_entry`] in database `dboid`; `evict`: when the store is full, take the entry
/// updated least recently (never one whose table is set aside): a table being set aside must
/// be recorded, or its worker would be held again and again.
fn update_entry_in(
    dboid: u32,
    table: pg_sys::Oid,
    part: u8,
    evict: bool,
    update: impl FnOnce(&mut Entry),
) {
    let reloid = table.to_u32();
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    let (first_refusal, capacity) = store::write(|store| {
        if evict && store.is_full() && store.find(dboid, reloid, part).is_none() {
            if let Some(oldest) = store.least_recent(now) {
                store.evict(oldest);
            }
        }
        let capacity = store.capacity();
        match store.entry(dboid, reloid, part) {
            store::Found::Entry(entry) => {
                entry.touched_at = now;
                update(entry);
                (false, capacity)
            }
            store::Found::Full { first } => (first, capacity),
        }
    });
    if first_refusal {
        log!(
            "jsonb_ttl: the statistics are full (jsonb_ttl.max_tables = {capacity} TTL tables and \
             parts, server-wide): tables beyond them have no ttl_stats row \
             (ttl_stats_store().refused counts what was not recorded); raise \
             jsonb_ttl.max_tables (a restart)"
        );
    }
}

/// How many entries are in use, and how many records found no room since the start or the
/// last reset.
pub fn store_usage() -> (usize, u64) {
    store::read(|store| (store.entries().len(), store.refused()))
}

/// Records one pass of one database's worker in the server totals (its rows were counted batch
/// by batch).
pub fn record_pass(limit_reached: bool, took: Duration) {
    LAST_PASS_AT
        .get()
        .store(unsafe { pg_sys::GetCurrentTimestamp() }, Ordering::Relaxed);
    LAST_PASS_US
        .get()
        .store(took.as_micros() as u64, Ordering::Relaxed);
    TOTAL_RUNS.get().fetch_add(1, Ordering::Relaxed);
    TOTAL_LIMIT
        .get()
        .fetch_add(limit_reached as u64, Ordering::Relaxed);
}

/// Clears every statistic of every database and the server totals, but what the worker must
/// go on skipping (see [`set_aside`]).
fn reset() {
    store::write(|store| {
        // what the worker must go on skipping stays
        store.retain(|entry| entry.strikes > 0);
        for entry in store.entries_mut() {
            *entry = Entry {
                dboid: entry.dboid,
                reloid: entry.reloid,
                part: entry.part,
                set_aside_until: entry.set_aside_until,
                strikes: entry.strikes,
                set_aside_owner: entry.set_aside_owner,
                ..Entry::EMPTY
            };
        }
        store.reset_refused();
    });
    TOTAL_RUNS.get().store(0, Ordering::Relaxed);
    TOTAL_ROWS.get().store(0, Ordering::Relaxed);
    TOTAL_LIMIT.get().store(0, Ordering::Relaxed);
    LAST_PASS_AT.get().store(0, Ordering::Relaxed);
    LAST_PASS_US.get().store(0, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    /// docs/configuration.md's figure for `jsonb_ttl.max_tables` (an entry's own bytes).
    #[test]
    fn entry_size_is_the_documented_one() {
        assert_eq!(std::mem::size_of::<super::Entry>(), 1160);
    }
}
