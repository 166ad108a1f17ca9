//! Every GUC of jsonb_ttl, in one place. The operator's are `PGC_SIGHUP`: set them in
//! postgresql.conf (or with ALTER SYSTEM) and apply them with `SELECT pg_reload_conf()`; the
//! worker picks the new values up at its next wake-up, with no restart (`jsonb_ttl.max_tables`
//! at server start). One is no operator's: `jsonb_ttl.expiring`, which jsonb_ttl turns on
//! around its own deletes for the triggers to read. docs/configuration.md mirrors this file.

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};

/// `jsonb_ttl.enabled`: whether the background worker deletes anything. `off` pauses all
/// deletion at the next pass; `ttl_expire_now()` still works.
pub static ENABLED: GucSetting<bool> = GucSetting::<bool>::new(true);

/// `jsonb_ttl.frequency`: milliseconds between the starts of two passes of a database's worker.
/// Default 30 s, ArangoDB's `--ttl.frequency`.
pub static FREQUENCY_MS: GucSetting<i32> = GucSetting::<i32>::new(30_000);

/// `jsonb_ttl.max_total_removes`: rows one pass may remove across the whole server, shared by
/// every database's worker. Default 10,000,000: ten tables at `max_table_removes`. (ArangoDB's
/// `--ttl.max-total-removes` is 1,000,000; see `max_table_removes` for why ten times that.)
pub static MAX_TOTAL_REMOVES: GucSetting<i32> = GucSetting::<i32>::new(10_000_000);

/// `jsonb_ttl.max_table_removes`: rows one pass may remove from one table, so one table's
/// backlog cannot hold up the others for long. Default 1,000,000: about a second of work at
/// the worker's measured 0.9–1.2M rows/s, which lets a table keep up with 33,000 expiring rows a
/// second at the default 30 s frequency. ArangoDB 3.12's 100,000
/// (`--ttl.max-collection-removes`) capped a table at 3,300 rows/s: a sessions table taking
/// 5,000 inserts a second would never catch up.
pub static MAX_TABLE_REMOVES: GucSetting<i32> = GucSetting::<i32>::new(1_000_000);

/// `jsonb_ttl.batch_size`: the most rows one delete transaction of the worker removes (the
/// first statement's rows in `ttl_expire_now`). The worker sizes its batches below it to take
/// `batch_time` each (see [`jsonb_ttl_core::batch_size`]). Default 50,000: at 1–2 µs a row, past the
/// 25 ms target, so the target decides; it bounds the array of row ids a batch carries (6 bytes
/// a row) and a batch's row locks when rows are fast.
pub static BATCH_SIZE: GucSetting<i32> = GucSetting::<i32>::new(50_000);

/// `jsonb_ttl.batch_time`: the time, in ms, each batch of the worker aims to take; 0 makes
/// every batch `batch_size` rows. Default 25 ms: long enough that a batch's fixed costs (its
/// commit's WAL flush above all, about 1 ms) stay under a twentieth of it, short enough that its
/// row locks (on expired rows only) and its WAL burst go unnoticed (`make bench`: sized batches
/// settle near 20,000 rows and drain as fast as fixed ones of 10,000 or 50,000, and 1.31×
/// faster than fixed ones of 1,000).
pub static BATCH_TIME_MS: GucSetting<i32> = GucSetting::<i32>::new(25);

/// `jsonb_ttl.synchronous_commit`: whether the worker's batches wait for their WAL to reach
/// disk when they commit. `off` is safe for TTL deletes: a batch lost in a crash only lost a
/// deletion, which the next pass does again (nothing the user wrote is lost, and replicas
/// never see a delete the primary lost). It saves a WAL flush per batch, and with a synchronous
/// standby a round trip to it (see `make bench`). Default off, for those reasons
/// (docs/configuration.md).
pub static SYNCHRONOUS_COMMIT: GucSetting<bool> = GucSetting::<bool>::new(false);

/// `jsonb_ttl.max_removes_per_second`: a smooth rate limit on the rows the worker removes per
/// second in each database, 0 for none.
pub static MAX_REMOVES_PER_SECOND: GucSetting<i32> = GucSetting::<i32>::new(0);

/// `jsonb_ttl.lock_timeout`: milliseconds a delete batch waits for a lock before the table is
/// skipped for this pass, so DDL is never queued behind the worker.
pub static LOCK_TIMEOUT_MS: GucSetting<i32> = GucSetting::<i32>::new(100);

/// `jsonb_ttl.batch_timeout`: the longest one delete batch (or one pass's probe) of the worker
/// may run, in ms, 0 for no limit. PostgreSQL arms `statement_timeout` for client statements
/// only, never for a background worker's SPI, so the worker arms this limit itself: a trigger
/// that sleeps or a lock wait that never ends costs one batch (its transaction rolls back, the
/// table is skipped until the next pass), not the database's whole worker. Owner code that
/// catches the cancel and goes on is stopped for certain [`crate::deadline::GRACE_MS`] later:
/// the launcher terminates the worker and sets the table aside. 0 turns both off (no limit at
/// all: only for a server whose table owners are all trusted). Default 30 s, the default pass
/// frequency: a batch aims at `batch_time` (25 ms).
pub static BATCH_TIMEOUT_MS: GucSetting<i32> = GucSetting::<i32>::new(30_000);

/// `jsonb_ttl.max_table_fraction`: the safety brake (see [`crate::brake`]). A TTL index with
/// more than this fraction of its table expired at once is paused until `ttl_index_resume()`;
/// 1 turns the brake off. Default 0.5: a TTL table in its steady state
/// loses a small fraction a pass (about frequency ÷ expire_after); half of it at once means a
/// wrong `expire_after`, a clock jump, or a worker that was off for longer than the TTL, and
/// each deserves a look before the rows go. A false alarm costs one call to resume; a true
/// one would cost the table.
pub static MAX_TABLE_FRACTION: GucSetting<f64> = GucSetting::<f64>::new(0.5);

/// `jsonb_ttl.brake_min_rows`: tables with fewer rows than this are never braked. Default
/// 10,000: small tables (a demo's sessions, a table of two rows) often expire whole, and losing
/// one by mistake costs little.
pub static BRAKE_MIN_ROWS: GucSetting<i32> = GucSetting::<i32>::new(10_000);

/// `jsonb_ttl.max_workers`: per-database workers running at once, server-wide (the launcher
/// comes on top). Each takes one of `max_worker_processes`, which parallel query and logical
/// replication share. With more databases than this, workers take turns: a worker that ends a
/// pass while other databases wait exits, and the next database in line gets one; a database
/// is never served by two, and waits at most ceil(databases / max_workers) − 1 passes of the
/// others (and never passes more often than `frequency`). Default 4: half of PostgreSQL's
/// default `max_worker_processes` (8).
pub static MAX_WORKERS: GucSetting<i32> = GucSetting::<i32>::new(4);

/// `jsonb_ttl.max_replica_lag`: the worker slows down while a streaming standby's replay lag
/// (the largest of `write_lag`, `flush_lag`, `replay_lag` in `pg_stat_replication`, a standby
/// with no recent traffic reporting none: 0) passes this many ms, and goes at full speed again
/// once it is back under (see [`crate::throttle`]). 0, the default, turns it off: no query.
/// Expiry is never urgent, and a purge of millions of rows writes WAL as fast as the server can:
/// a standby that replays slower falls behind, and its readers with it.
pub static MAX_REPLICA_LAG_MS: GucSetting<i32> = GucSetting::<i32>::new(0);

/// `jsonb_ttl.max_slot_wal_keep`: the worker slows down while a replication slot holds back
/// more WAL than this many kB (the largest `pg_current_wal_lsn() - restart_lsn` in
/// `pg_replication_slots`), so a purge does not fill `pg_wal` behind an inactive or slow
/// consumer. 0, the default, turns it off.
pub static MAX_SLOT_WAL_KEEP_KB: GucSetting<i32> = GucSetting::<i32>::new(0);

/// `jsonb_ttl.max_wal_rate`: the most WAL, in kB a second, the workers' deletes write, all
/// databases' workers together, measured over a sliding window of a few seconds
/// ([`jsonb_ttl_core::wal_rate`]); past it the workers wait before their next batch. 0, the
/// default, turns it off. A bandwidth cap for replicas and WAL archiving that
/// `max_removes_per_second` can only approximate (a row's WAL depends on its size and indexes).
pub static MAX_WAL_RATE_KB: GucSetting<i32> = GucSetting::<i32>::new(0);

/// `jsonb_ttl.expiring`: `on` while jsonb_ttl removes expired rows or fields (the worker's
/// batches, their archive INSERT and its trial, field TTLs' UPDATEs, `ttl_expire_now()`,
/// `ttl_field_expire_now()`), for the triggers they fire: a statement trigger with a transition table
/// (`REFERENCING OLD TABLE AS expired`) tests `current_setting('jsonb_ttl.expiring', true)` to
/// roll expired rows up, audit or cascade them, and leaves the application's own deletes alone.
/// `off` everywhere else. Superuser-only (`PGC_SUSET`; ALTER SYSTEM refuses it, and it has no
/// place in postgresql.conf): a table owner cannot make an ordinary DELETE pass for a TTL
/// delete. Set by [`expiring`].
pub static EXPIRING: GucSetting<bool> = GucSetting::<bool>::new(false);

/// Runs `f` with `jsonb_ttl.expiring = on`, rolled back when `f` ends (like a function's SET
/// clause; an error rolls it back with the (sub)transaction). Set with a superuser's context
/// whoever calls: `ttl_expire_now()` may be the table owner's call.
pub fn expiring<R>(f: impl FnOnce() -> R) -> R {
    let context = pgrx::pg_sys::GucContext::PGC_SUSET;
    with_settings_as(context, &[(c"jsonb_ttl.expiring", "on")], f)
}

/// Registers every GUC. Called from `_PG_init`, whether preloaded or loaded on first use.
pub fn register() {
    register_expiring();
    register_pass();
    register_batches();
    register_brake();
    register_workers();
    register_replicas();
    register_tables();
}

/// What jsonb_ttl sets around its own deletes: `jsonb_ttl.expiring`.
fn register_expiring() {
    GucRegistry::define_bool_guc(
        c"jsonb_ttl.expiring",
        c"Whether the current DELETE is jsonb_ttl's removal of expired rows (read by triggers).",
        c"on while jsonb_ttl removes expired rows or fields (the worker's batches, ttl_expire_now(), ttl_field_expire_now()), off elsewhere; not for postgresql.conf.",
        &EXPIRING,
        GucContext::Suset,
        // (RESET ALL in an owner's trigger leaves it on: the rest of the batch is still a TTL
        // delete to the triggers it fires)
        GucFlags::DISALLOW_IN_FILE | GucFlags::DISALLOW_IN_AUTO_FILE | GucFlags::NO_RESET_ALL,
    );
}

/// The pass: whether the worker deletes, how often, and how many rows a pass may remove.
fn register_pass() {
    GucRegistry::define_bool_guc(
        c"jsonb_ttl.enabled",
        c"Whether the jsonb_ttl background worker removes expired rows.",
        c"off pauses all deletion by the worker; ttl_expire_now() still works.",
        &ENABLED,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"jsonb_ttl.frequency",
        c"Time between two passes of the jsonb_ttl worker.",
        c"Each database's worker starts a pass this often (ArangoDB --ttl.frequency).",
        &FREQUENCY_MS,
        10,
        86_400_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"jsonb_ttl.max_total_removes",
        c"Rows one jsonb_ttl pass may remove across the whole server.",
        c"Shared by the workers of every database (ArangoDB --ttl.max-total-removes).",
        &MAX_TOTAL_REMOVES,
        1,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"jsonb_ttl.max_table_removes",
        c"Rows one jsonb_ttl pass may remove from one table.",
        c"ArangoDB 3.12 --ttl.max-collection-removes.",
        &MAX_TABLE_REMOVES,
        1,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::default(),
    );
}

/// The batches: their size and time, their commit, their rate and their lock waits.
fn register_batches() {
    GucRegistry::define_int_guc(
        c"jsonb_ttl.batch_size",
        c"The most rows one jsonb_ttl delete transaction removes.",
        c"Each batch is one DELETE through the TTL index, committed on its own by the worker.",
        &BATCH_SIZE,
        1,
        1_000_000,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"jsonb_ttl.batch_time",
        c"How long each jsonb_ttl delete batch aims to take, 0 for fixed batch_size batches.",
        c"The worker sizes its batches (up to batch_size rows) from the time per row it sees.",
        &BATCH_TIME_MS,
        0,
        600_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_bool_guc(
        c"jsonb_ttl.synchronous_commit",
        c"Whether the jsonb_ttl worker's batches wait for their WAL flush at commit.",
        c"off is safe for TTL deletes: a batch lost in a crash is done again by the next pass.",
        &SYNCHRONOUS_COMMIT,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"jsonb_ttl.max_removes_per_second",
        c"Rate limit on rows the jsonb_ttl worker removes per second, 0 for none.",
        c"Applied smoothly between batches by each database's worker.",
        &MAX_REMOVES_PER_SECOND,
        0,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"jsonb_ttl.lock_timeout",
        c"How long a jsonb_ttl delete batch waits for a lock.",
        c"A table whose lock is busy is skipped for this pass, never waited on.",
        &LOCK_TIMEOUT_MS,
        1,
        600_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
}

/// The safety brake.
fn register_brake() {
    GucRegistry::define_float_guc(
        c"jsonb_ttl.max_table_fraction",
        c"The most of a table one jsonb_ttl pass may remove before the TTL index is paused.",
        c"Past it the TTL index waits for ttl_index_resume(); 1 turns this safety brake off.",
        &MAX_TABLE_FRACTION,
        0.0,
        1.0,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"jsonb_ttl.brake_min_rows",
        c"Tables with fewer rows are never paused by the jsonb_ttl safety brake.",
        c"Small tables often expire whole.",
        &BRAKE_MIN_ROWS,
        0,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::default(),
    );
}

/// The workers: how many run at once, and how long one batch may hold one.
fn register_workers() {
    GucRegistry::define_int_guc(
        c"jsonb_ttl.max_workers",
        c"Per-database jsonb_ttl workers running at once.",
        c"With more databases than this, workers take turns, one pass each.",
        &MAX_WORKERS,
        1,
        1024,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"jsonb_ttl.batch_timeout",
        c"The longest a jsonb_ttl delete batch may run, 0 for no limit.",
        c"A batch over the limit is cancelled and rolled back; its table waits for the next pass.",
        &BATCH_TIMEOUT_MS,
        0,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
}

/// Slowing down for replicas and WAL (see [`crate::throttle`]).
fn register_replicas() {
    GucRegistry::define_int_guc(
        c"jsonb_ttl.max_replica_lag",
        c"Replay lag of a standby past which the jsonb_ttl worker slows down, 0 for none.",
        c"The largest lag in pg_stat_replication; the worker waits before its next batch.",
        &MAX_REPLICA_LAG_MS,
        0,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"jsonb_ttl.max_slot_wal_keep",
        c"WAL a replication slot may hold back before the jsonb_ttl worker slows down, 0 for none.",
        c"The largest pg_current_wal_lsn() - restart_lsn in pg_replication_slots.",
        &MAX_SLOT_WAL_KEEP_KB,
        0,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::UNIT_KB,
    );
    GucRegistry::define_int_guc(
        c"jsonb_ttl.max_wal_rate",
        c"WAL per second the jsonb_ttl workers' deletes may write, 0 for no limit.",
        c"All workers together, over a sliding window of a few seconds.",
        &MAX_WAL_RATE_KB,
        0,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::UNIT_KB,
    );
}

/// Overrides the server setting `name` with `value` until the current GUC nest level ends: the
/// end of a function-like scope opened with `NewGUCNestLevel`, or else of the transaction. For
/// the settings jsonb_ttl's own statements need (planner pins, `lock_timeout`).
pub fn override_setting(name: &std::ffi::CStr, value: &str) {
    save_setting(pgrx::pg_sys::GucContext::PGC_USERSET, name, value);
}

/// [`override_setting`] with the rights of `context` (`PGC_SUSET`: as a superuser would).
fn save_setting(context: pgrx::pg_sys::GucContext::Type, name: &std::ffi::CStr, value: &str) {
    let value = std::ffi::CString::new(value).expect("no NUL in a setting");
    unsafe {
        pgrx::pg_sys::set_config_option(
            name.as_ptr(),
            value.as_ptr(),
            context,
            pgrx::pg_sys::GucSource::PGC_S_SESSION,
            pgrx::pg_sys::GucAction::GUC_ACTION_SAVE,
            true,
            pgrx::PgLogLevel::ERROR as i32,
            false,
        );
    }
}

/// Runs `f` with `settings` in force; they end with `f` (rolled back, like a function's SET
/// clause).
pub fn with_settings<R>(settings: &[(&std::ffi::CStr, &str)], f: impl FnOnce() -> R) -> R {
    with_settings_as(pgrx::pg_sys::GucContext::PGC_USERSET, settings, f)
}

/// [`with_settings`] with the rights of `context`.
fn with_settings_as<R>(
    context: pgrx::pg_sys::GucContext::Type,
    settings: &[(&std::ffi::CStr, &str)],
    f: impl FnOnce() -> R,
) -> R {
    let level = unsafe { pgrx::pg_sys::NewGUCNestLevel() };
    for (name, value) in settings {
        save_setting(context, name, value);
    }
    let result = f();
    unsafe { pgrx::pg_sys::AtEOXact_GUC(false, level) };
    result
}

/// `jsonb_ttl.max_tables`: the TTL tables (a per-row TTL table counts twice, a Citus table
/// once) whose statistics shared memory holds, server-wide: one `ttl_stats` entry each, about
/// 1,170 bytes (see [`crate::stats::bytes_per_entry`]). Read once at server start (a restart
/// applies a change). Default 20,000 (23 MB): a server of 10,000 TTL tables with room to
/// spare. When it is full, tables beyond it have no `ttl_stats` row (the log says so once and
/// `ttl_stats_store().refused` counts), and nothing else changes: the worker purges them.
pub static MAX_TABLES: GucSetting<i32> = GucSetting::<i32>::new(20_000);

/// `jsonb_ttl.max_tables` (a postmaster setting: the statistics' shared memory is sized from
/// it). Defined only while the library is preloaded: PostgreSQL refuses a postmaster setting
/// defined later (`LOAD 'jsonb_ttl'`, or a backend loading the library for its SQL functions
/// without the preload: "cannot create PGC_POSTMASTER variables after startup"), and without
/// the preload there is no store to size.
fn register_tables() {
    if !unsafe { pgrx::pg_sys::process_shared_preload_libraries_in_progress } {
        return;
    }
    GucRegistry::define_int_guc(
        c"jsonb_ttl.max_tables",
        c"TTL tables whose statistics jsonb_ttl keeps, server-wide.",
        c"Sizes the shared memory of ttl_stats at server start: one entry a TTL table.",
        &MAX_TABLES,
        100,
        10_000_000,
        GucContext::Postmaster,
        GucFlags::default(),
    );
}
