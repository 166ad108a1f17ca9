//! Raising a PostgreSQL ERROR with a SQLSTATE, a message and a HINT, as every bad argument does.

use pgrx::pg_sys::panic::ErrorReport;
use pgrx::{PgLogLevel, PgSqlErrorCode};

/// Raises an ERROR; never returns. It carries no CONTEXT: the calls it would list are the SQL
/// wrappers of `sql/api.sql` ("PL/pgSQL function ttl_index_create(…) line 3 during statement
/// block local variable initialization") and our own statements, nothing about the argument
/// the message names. The context callbacks are cleared for this error only: every PL/pgSQL
/// or SQL function frame restores its caller's on the way out, as do PG_TRY and the
/// subtransactions that catch it.
pub fn raise(code: PgSqlErrorCode, message: impl Into<String>, hint: impl Into<String>) -> ! {
    report(ErrorReport::new(code, message.into(), "jsonb_ttl").set_hint(hint))
}

/// [`raise`] with a DETAIL.
pub fn raise_with_detail(
    code: PgSqlErrorCode,
    message: impl Into<String>,
    detail: impl Into<String>,
    hint: impl Into<String>,
) -> ! {
    report(
        ErrorReport::new(code, message.into(), "jsonb_ttl")
            .set_detail(detail)
            .set_hint(hint),
    )
}

fn report(error: ErrorReport) -> ! {
    unsafe {
        pgrx::pg_sys::error_context_stack = std::ptr::null_mut();
    }
    error.report(PgLogLevel::ERROR);
    unreachable!("ERROR does not return")
}

/// Reports a NOTICE or WARNING `message` without the CONTEXT of our SQL wrappers (see [`raise`]);
/// the context callbacks are back in place when it returns.
pub fn tell(level: PgLogLevel, message: ErrorReport) {
    unsafe {
        let saved = pgrx::pg_sys::error_context_stack;
        pgrx::pg_sys::error_context_stack = std::ptr::null_mut();
        message.report(level);
        pgrx::pg_sys::error_context_stack = saved;
    }
}
