//! Change streams (docs/change_streams.md): the worker's delete transactions of a TTL index with
//! `replication_origin` carry the replication origin `jsonb_ttl`, so logical decoding can skip
//! them (a PostgreSQL 16+ subscription with `origin = none`, test_decoding's `only-local`,
//! wal2json's `filter-origins`) or tell them from the application's; with `logical_message`,
//! each batch that removed rows also writes one transactional logical message (prefix
//! `jsonb_ttl`) saying which table, how many rows and up to which cutoff.
//!
//! How the origin is carried. Every WAL record of a transaction (each row's delete, a logical
//! message) and its commit record name the session's origin (`replorigin_session_origin`) as it
//! is when they are written, and a commit or abort with an origin advances that origin's
//! progress in shared memory, which needs the origin set up for the session
//! (`replorigin_session_setup`). So, for one batch, in the batch's own transaction, as the
//! worker (a superuser) and before any of the table owner's code runs:
//!
//! 1. the origin's id, found (or created, `replorigin_create`, in a transaction of its own, so
//!    the shared catalog pg_replication_origin is locked only for an instant) before the
//!    batch's transaction, and remembered;
//! 2. a lock on the origin (`LockSharedObject(pg_replication_origin, id)`, SHARE UPDATE
//!    EXCLUSIVE, which conflicts with itself and with `pg_replication_origin_drop`): an origin
//!    can be set up by one backend at a time (PostgreSQL 15; 16+ lets others share it only for
//!    parallel apply), and several databases' workers may purge at once, so their batches that
//!    carry the origin take turns, in the lock manager's queue, each waiting within
//!    `jsonb_ttl.batch_timeout`; and no one drops the origin while a batch carries it;
//! 3. the session set up with the origin, and `replorigin_session_origin` set.
//!
//! A transaction callback ends it, whatever way the transaction ends (commit, error, cancel,
//! a FATAL that aborts it on the way out): at COMMIT / ABORT, after the commit or abort record
//! and before the transaction's locks are released (so the next batch in line finds the origin
//! free), it resets the session (`replorigin_session_reset`) and clears the globals. Just before
//! commit (PRE_COMMIT) it checks that the session's origin is still the one it set, with no
//! origin LSN or timestamp: the table owner's code runs inside the batch, and if it was granted
//! `pg_replication_origin_session_reset()` / `_setup()` / `_xact_setup()` (superuser-only by
//! default) and changed what the commit would carry, the batch fails and rolls back.

use crate::txn::{in_transaction, Failure};
use pgrx::pg_sys::{self, RepOriginId};
use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};

/// The replication origin's name (cluster-wide, in pg_replication_origin).
pub const NAME: &CStr = c"jsonb_ttl";
/// The prefix of the logical messages.
pub const MESSAGE_PREFIX: &str = "jsonb_ttl";

/// The origin's id as last found (0: not yet, or found dropped since).
static ID: AtomicU16 = AtomicU16::new(0);
/// The origin the current transaction carries because of us (0: none).
static ARMED: AtomicU16 = AtomicU16::new(0);
static CALLBACK: AtomicBool = AtomicBool::new(false);

/// What a batch of a TTL index writes for change streams (its options).
#[derive(Clone, Copy, Default, Debug)]
pub struct Stream {
    /// The origin to carry, when `replication_origin` is on (found by [`Stream::for_batch`]).
    origin: Option<RepOriginId>,
    /// `logical_message`: one message per batch that removed rows.
    message: bool,
}

impl Stream {
    /// Nothing: what a batch without the options (and the safety brake's count) writes.
    pub const NONE: Stream = Stream {
        origin: None,
        message: false,
    };

    /// For a batch of a TTL index with these options, before its transaction starts: finds
    /// (or creates) the origin when `replication_origin` is on. An error here (replication
    /// origins unusable, `max_replication_slots = 0`) fails the batch, with the reason.
    pub fn for_batch(replication_origin: bool, logical_message: bool) -> Result<Stream, Failure> {
        let origin = if replication_origin {
            Some(origin_id()?)
        } else {
            None
        };
        Ok(Stream {
            origin,
            message: logical_message,
        })
    }

    /// First in the batch's transaction, as the worker, before the batch's own time limits
    /// are armed: waits for the origin (see the module's text), within a budget of its own
    /// (as a lock timeout: `jsonb_ttl.batch_timeout` plus the grace after which the batch
    /// holding it is ended, [`crate::deadline::GRACE_MS`], so the wait outlasts any batch
    /// ahead of it), so a batch never spends its time limit waiting for another database's.
    pub fn acquire(&self) {
        if let Some(id) = self.origin {
            register_callback();
            // (batch_timeout 0: no limit, and none here either)
            let budget = match crate::gucs::BATCH_TIMEOUT_MS.get() as i64 {
                0 => 0,
                ms => (ms + crate::deadline::GRACE_MS).min(i32::MAX as i64),
            };
            let wait = format!("{budget}ms");
            crate::gucs::with_settings(&[(c"lock_timeout", wait.as_str())], || lock_origin(id));
        }
    }

    /// Then, as the worker, before the owner's code runs: sets the origin up for this
    /// transaction.
    pub fn begin(&self) {
        if let Some(id) = self.origin {
            set_up(id);
        }
    }

    /// After the batch's statements, as the worker, still in its transaction: the logical
    /// message of a batch that removed `rows` rows of `table` (`cutoff`: the batch's
    /// `now() - expire_after`).
    pub fn end(&self, table: pg_sys::Oid, rows: u64, expire_after: pgrx::datum::Interval) {
        if self.message && rows > 0 {
            emit_message(table, rows, expire_after);
        }
    }
}

/// How many origins the server can have set up at once: `max_replication_slots` up to
/// PostgreSQL 17, `max_active_replication_origins` from 18.
fn origin_slots() -> (i32, &'static str) {
    #[cfg(not(feature = "pg18"))]
    let slots = (
        unsafe { pg_sys::max_replication_slots },
        "max_replication_slots",
    );
    #[cfg(feature = "pg18")]
    let slots = (
        unsafe { pg_sys::max_active_replication_origins },
        "max_active_replication_origins",
    );
    slots
}

/// The origin's id, found or created (in transactions of their own) when not known yet.
fn origin_id() -> Result<RepOriginId, Failure> {
    let (slots, setting) = origin_slots();
    if slots == 0 {
        return Err(Failure {
            code: PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            message: format!(
                "replication_origin: replication origins cannot be used with {setting} = 0; \
                 raise {setting} (a restart) or turn replication_origin off for this table"
            ),
        });
    }
    let known = ID.load(Ordering::Relaxed);
    if known != 0 {
        return Ok(known);
    }
    let id = match in_transaction(find_or_create) {
        // another database's worker created it at the same moment: it is there now
        Err(e) if e.code == PgSqlErrorCode::ERRCODE_UNIQUE_VIOLATION => {
            in_transaction(|| unsafe { pg_sys::replorigin_by_name(NAME.as_ptr(), false) })?
        }
        found => found?,
    };
    ID.store(id, Ordering::Relaxed);
    Ok(id)
}

/// The origin's id, created when missing (`pg_replication_origin_create`'s C function).
fn find_or_create() -> RepOriginId {
    unsafe {
        match pg_sys::replorigin_by_name(NAME.as_ptr(), true) {
            0 => {
                let id = pg_sys::replorigin_create(NAME.as_ptr());
                log!(
                    "jsonb_ttl: created the replication origin {} (id {id})",
                    NAME.to_string_lossy()
                );
                id
            }
            id => id,
        }
    }
}

/// Checks the origin `id` (locked by [`Stream::acquire`]) still is ours, and sets it up for
/// the current transaction (see the module's text).
fn set_up(id: RepOriginId) {
    // dropped (and perhaps its id reused) since it was found: found again by the next batch
    let mut name: *mut std::ffi::c_char = std::ptr::null_mut();
    let same = unsafe { pg_sys::replorigin_by_oid(id, true, &mut name) }
        && !name.is_null()
        && unsafe { CStr::from_ptr(name) } == NAME;
    if !same {
        ID.store(0, Ordering::Relaxed);
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
            "replication_origin: the replication origin jsonb_ttl was dropped",
            "The next batch creates it again.",
        );
    }
    unsafe {
        #[cfg(feature = "pg15")]
        pg_sys::replorigin_session_setup(id);
        #[cfg(not(feature = "pg15"))]
        pg_sys::replorigin_session_setup(id, 0);
        ARMED.store(id, Ordering::Relaxed);
        pg_sys::replorigin_session_origin = id;
        pg_sys::replorigin_session_origin_lsn = 0;
        pg_sys::replorigin_session_origin_timestamp = 0;
    }
}

/// Takes the origin's lock for the current transaction (SHARE UPDATE EXCLUSIVE on the shared
/// object), waiting for the batch of another database that holds it; a wait cut short (by its
/// lock timeout, a cancel) says what it waited for.
fn lock_origin(id: RepOriginId) {
    PgTryBuilder::new(|| unsafe {
        pg_sys::LockSharedObject(
            pg_sys::ReplicationOriginRelationId,
            pg_sys::Oid::from(id as u32),
            0,
            pg_sys::ShareUpdateExclusiveLock as pg_sys::LOCKMODE,
        )
    })
    .catch_when(PgSqlErrorCode::ERRCODE_QUERY_CANCELED, gave_up)
    .catch_when(PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE, gave_up)
    .execute()
}

/// The error of a wait for the origin cut short.
fn gave_up(caught: pg_sys::panic::CaughtError) {
    let why = match &caught {
        pg_sys::panic::CaughtError::PostgresError(e)
        | pg_sys::panic::CaughtError::ErrorReport(e) => e.message().to_string(),
        pg_sys::panic::CaughtError::RustPanic { ereport, .. } => ereport.message().to_string(),
    };
    crate::error::raise(
        PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
        format!(
            "replication_origin: gave up waiting for the replication origin jsonb_ttl, \
             which a batch of another database holds: {why}"
        ),
        "Batches that carry the origin take turns across databases.",
    )
}

/// Whether `role` may write under a replication origin by PostgreSQL's own rule: a superuser,
/// or a role granted EXECUTE on `pg_replication_origin_session_setup` (revoked from PUBLIC).
/// The table owner's code (triggers, rules, policies) runs inside a batch that carries the
/// origin, so `replication_origin` is for such owners only: it must not hand anyone else a
/// way to hide their writes from `origin = none` subscribers.
pub fn may_write_under_origin(role: pg_sys::Oid) -> bool {
    let superuser = unsafe { pg_sys::superuser_arg(role) };
    superuser
        || crate::read::one::<bool>(
            "SELECT EXISTS (SELECT FROM pg_catalog.pg_proc p \
               WHERE p.pronamespace OPERATOR(pg_catalog.=) 'pg_catalog'::pg_catalog.regnamespace \
                 AND p.proname OPERATOR(pg_catalog.=) 'pg_replication_origin_session_setup'::pg_catalog.name \
                 AND pg_catalog.has_function_privilege($1, p.oid, 'EXECUTE'))",
            &[role.into()],
        )
        .unwrap_or(false)
}

/// Refuses `replication_origin` for a table whose owner may not write under an origin (see
/// [`may_write_under_origin`]).
pub fn check_owner(owner: pg_sys::Oid, table: &str) {
    if !may_write_under_origin(owner) {
        let name = crate::owner::role_name(owner);
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "replication_origin: the owner of {table}, {name}, may not write under a \
                 replication origin"
            ),
            "The owner's triggers run inside the batches that carry it. PostgreSQL lets only \
             superusers and roles granted EXECUTE on pg_replication_origin_session_setup do \
             that: grant it to the owner, or leave replication_origin off.",
        );
    }
}

/// Registers [`at_transaction_end`], once per process.
fn register_callback() {
    if !CALLBACK.swap(true, Ordering::Relaxed) {
        unsafe { pg_sys::RegisterXactCallback(Some(at_transaction_end), std::ptr::null_mut()) };
    }
}

/// Ends what [`set_up`] began (see the module's text): before commit, refuses a commit whose
/// origin the owner's code changed; at commit or abort (after its WAL record, before the locks
/// go), resets the session's origin.
#[pg_guard]
unsafe extern "C-unwind" fn at_transaction_end(
    event: pg_sys::XactEvent::Type,
    _arg: *mut std::ffi::c_void,
) {
    use pg_sys::XactEvent::*;
    let armed = ARMED.load(Ordering::Relaxed);
    if armed == 0 {
        return;
    }
    match event {
        XACT_EVENT_PRE_COMMIT | XACT_EVENT_PARALLEL_PRE_COMMIT | XACT_EVENT_PRE_PREPARE => {
            let intact = unsafe {
                pg_sys::replorigin_session_origin == armed
                    && pg_sys::replorigin_session_origin_lsn == 0
                    && pg_sys::replorigin_session_origin_timestamp == 0
            };
            if !intact {
                crate::error::raise(
                    PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                    "replication_origin: code run inside the batch changed the session's \
                     replication origin; the batch is rolled back",
                    "Revoke EXECUTE on pg_replication_origin_session_reset, \
                     pg_replication_origin_session_setup and pg_replication_origin_xact_setup \
                     from the table's owner.",
                );
            }
        }
        _ => {
            ARMED.store(0, Ordering::Relaxed);
            unsafe {
                // whichever origin the session has now (the owner's code may have reset ours
                // and set up another with EXECUTE granted): none is left set up
                if pg_sys::replorigin_session_origin != 0 {
                    pg_sys::replorigin_session_reset();
                }
                pg_sys::replorigin_session_origin = 0;
                pg_sys::replorigin_session_origin_lsn = 0;
                pg_sys::replorigin_session_origin_timestamp = 0;
            }
        }
    }
}

/// One `pg_logical_emit_message(true, 'jsonb_ttl', …)` in the current transaction, as the
/// worker: `{"table": "schema.name", "rows": n, "cutoff": "…Z"}`, built with
/// `jsonb_build_object` (the table's name quoted as an identifier, the cutoff in UTC).
fn emit_message(table: pg_sys::Oid, rows: u64, expire_after: pgrx::datum::Interval) {
    let sql = "SELECT pg_catalog.pg_logical_emit_message(true, $4, pg_catalog.jsonb_build_object(\
                 'table', pg_catalog.format('%I.%I', n.nspname, c.relname), \
                 'rows', $2, \
                 'cutoff', pg_catalog.to_char(pg_catalog.timezone('UTC', \
                     pg_catalog.now() OPERATOR(pg_catalog.-) $3), \
                     'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'))::pg_catalog.text) \
                 IS NOT NULL \
               FROM pg_catalog.pg_class c \
               JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
               WHERE c.oid OPERATOR(pg_catalog.=) $1";
    Spi::get_one_with_args::<bool>(
        sql,
        &[
            table.into(),
            (rows as i64).into(),
            expire_after.into(),
            MESSAGE_PREFIX.into(),
        ],
    )
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot write the batch's logical message: {e}"));
}
