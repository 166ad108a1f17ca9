//! Every GUC of jsonb_ttl, in one place. All are `PGC_SIGHUP`: set them in postgresql.conf (or
//! with ALTER SYSTEM) and apply them with `SELECT pg_reload_conf()`; the worker picks the new
//! values up at its next wake-up, with no restart. The README's GUC table mirrors this file.

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};

/// `jsonb_ttl.enabled`: whether the background worker deletes anything. `off` pauses all
/// deletion at the next pass; `ttl_expire_now()` still works.
pub static ENABLED: GucSetting<bool> = GucSetting::<bool>::new(true);

/// `jsonb_ttl.frequency`: milliseconds between the starts of two passes of a database's worker.
/// Default 30 s, ArangoDB's `--ttl.frequency`.
pub static FREQUENCY_MS: GucSetting<i32> = GucSetting::<i32>::new(30_000);

/// `jsonb_ttl.max_total_removes`: rows one pass may remove across the whole server, shared by
/// every database's worker. Default 1,000,000, ArangoDB's `--ttl.max-total-removes`.
pub static MAX_TOTAL_REMOVES: GucSetting<i32> = GucSetting::<i32>::new(1_000_000);

/// `jsonb_ttl.max_table_removes`: rows one pass may remove from one table. Default 100,000,
/// ArangoDB 3.12's `--ttl.max-collection-removes`.
pub static MAX_TABLE_REMOVES: GucSetting<i32> = GucSetting::<i32>::new(100_000);

/// `jsonb_ttl.batch_size`: rows removed per delete transaction (per statement in
/// `ttl_expire_now`). Small batches hold row locks briefly and keep WAL bursts short; large
/// batches amortise the per-statement cost. See the README's benchmark section.
pub static BATCH_SIZE: GucSetting<i32> = GucSetting::<i32>::new(1_000);

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
/// table is skipped until the next pass), not the database's whole worker. Default 30 s, the
/// default pass frequency: a batch of 1000 rows normally takes milliseconds.
pub static BATCH_TIMEOUT_MS: GucSetting<i32> = GucSetting::<i32>::new(30_000);

/// `jsonb_ttl.max_workers`: per-database workers running at once, server-wide (the launcher
/// comes on top). Each takes one of `max_worker_processes`, which parallel query and logical
/// replication share. With more databases than this, workers take turns: a worker that ends a
/// pass while other databases wait exits, and the next database in line gets one; a database
/// is never served by two, and waits at most ceil(databases / max_workers) − 1 passes of the
/// others (and never passes more often than `frequency`). Default 4: half of PostgreSQL's
/// default `max_worker_processes` (8).
pub static MAX_WORKERS: GucSetting<i32> = GucSetting::<i32>::new(4);

/// Registers every GUC. Called from `_PG_init`, whether preloaded or loaded on first use.
pub fn register() {
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
    GucRegistry::define_int_guc(
        c"jsonb_ttl.batch_size",
        c"Rows removed per jsonb_ttl delete transaction.",
        c"Each batch is one DELETE through the TTL index, committed on its own by the worker.",
        &BATCH_SIZE,
        1,
        1_000_000,
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

/// Overrides the server setting `name` with `value` until the current GUC nest level ends: the
/// end of a function-like scope opened with `NewGUCNestLevel`, or else of the transaction. For
/// the settings jsonb_ttl's own statements need (planner pins, `lock_timeout`).
pub fn override_setting(name: &std::ffi::CStr, value: &str) {
    let value = std::ffi::CString::new(value).expect("no NUL in a setting");
    unsafe {
        pgrx::pg_sys::set_config_option(
            name.as_ptr(),
            value.as_ptr(),
            pgrx::pg_sys::GucContext::PGC_USERSET,
            pgrx::pg_sys::GucSource::PGC_S_SESSION,
            pgrx::pg_sys::GucAction::GUC_ACTION_SAVE,
            true,
            pgrx::PgLogLevel::ERROR as i32,
            false,
        );
    }
}
