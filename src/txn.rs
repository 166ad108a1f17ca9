//! Transactions and subtransactions the worker opens itself, each ended whatever happens inside:
//! committed (released) when the closure returns, rolled back when it raises, with the error
//! handed back as a [`Failure`] instead of ending the process.

use pgrx::pg_sys;
use pgrx::pg_sys::panic::CaughtError;
use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;
use std::panic::AssertUnwindSafe;

/// An ERROR caught at the end of a (sub)transaction: its SQLSTATE and message.
#[derive(Clone, Debug)]
pub struct Failure {
    pub code: PgSqlErrorCode,
    pub message: String,
}

impl Failure {
    fn caught(caught: CaughtError) -> Failure {
        let report = match &caught {
            CaughtError::PostgresError(e) | CaughtError::ErrorReport(e) => e,
            CaughtError::RustPanic { ereport, .. } => ereport,
        };
        Failure {
            code: report.sql_error_code(),
            message: report.message().to_string(),
        }
    }

    /// Whether the failure belongs to the moment, not to the rows: a lock that was busy, a
    /// cancel or a time limit. Retrying the same rows one by one would not help.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.code,
            PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE
                | PgSqlErrorCode::ERRCODE_QUERY_CANCELED
                | PgSqlErrorCode::ERRCODE_T_R_DEADLOCK_DETECTED
                | PgSqlErrorCode::ERRCODE_T_R_SERIALIZATION_FAILURE
                | PgSqlErrorCode::ERRCODE_ADMIN_SHUTDOWN
                | PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE
        )
    }
}

impl Failure {
    /// Whether an integrity constraint refused a row (class 23: a key already there, a check,
    /// a NOT NULL, a foreign key, an exclusion): the row's fault, not the statement's.
    pub fn is_integrity(&self) -> bool {
        matches!(
            self.code,
            PgSqlErrorCode::ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION
                | PgSqlErrorCode::ERRCODE_RESTRICT_VIOLATION
                | PgSqlErrorCode::ERRCODE_NOT_NULL_VIOLATION
                | PgSqlErrorCode::ERRCODE_FOREIGN_KEY_VIOLATION
                | PgSqlErrorCode::ERRCODE_UNIQUE_VIOLATION
                | PgSqlErrorCode::ERRCODE_CHECK_VIOLATION
                | PgSqlErrorCode::ERRCODE_EXCLUSION_VIOLATION
        )
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Runs `f` in its own transaction: committed when it returns, rolled back (and the error
/// returned) when it or the commit raises (a deferred trigger fires at commit), so one failure
/// never leaves a transaction open nor ends the worker.
pub fn in_transaction<R>(f: impl FnOnce() -> R) -> Result<R, Failure> {
    unsafe {
        pg_sys::SetCurrentStatementStartTimestamp();
        pg_sys::StartTransactionCommand();
        pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
    }
    let run_and_commit = move || {
        let result = f();
        unsafe {
            pg_sys::PopActiveSnapshot();
            pg_sys::CommitTransactionCommand();
        }
        Ok(result)
    };
    let result = PgTryBuilder::new(AssertUnwindSafe(run_and_commit))
        .catch_others(|caught| Err(Failure::caught(caught)))
        .execute();
    if result.is_err() {
        unsafe { pg_sys::AbortCurrentTransaction() };
    }
    result
}

/// Runs `f` in a subtransaction of the current transaction, as a PL/pgSQL block with an
/// EXCEPTION clause does: released when it returns, rolled back when it raises (its changes
/// undone, its locks kept only if taken before), and the error returned. The caller's memory
/// context and resource owner are the same after as before. `f` opens its own SPI connection.
pub fn in_subtransaction<R>(f: impl FnOnce() -> R) -> Result<R, Failure> {
    subtransaction(true, f)
}

/// Runs `f` in a subtransaction of the current transaction that is always rolled back: whether
/// `f` can run, and its result or its error, with nothing of what it did kept. `f` opens its own
/// SPI connection.
pub fn in_rolled_back_subtransaction<R>(f: impl FnOnce() -> R) -> Result<R, Failure> {
    subtransaction(false, f)
}

/// `f` in a subtransaction, released when it returns and `keep`, else rolled back.
fn subtransaction<R>(keep: bool, f: impl FnOnce() -> R) -> Result<R, Failure> {
    let context = unsafe { pg_sys::CurrentMemoryContext };
    let owner = unsafe { pg_sys::CurrentResourceOwner };
    unsafe {
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(context);
    }
    let result = PgTryBuilder::new(AssertUnwindSafe(move || Ok(f())))
        .catch_others(|caught| Err(Failure::caught(caught)))
        .execute();
    unsafe {
        match (keep, &result) {
            (true, Ok(_)) => pg_sys::ReleaseCurrentSubTransaction(),
            _ => pg_sys::RollbackAndReleaseCurrentSubTransaction(),
        }
        pg_sys::MemoryContextSwitchTo(context);
        pg_sys::CurrentResourceOwner = owner;
    }
    result
}
