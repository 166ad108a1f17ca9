//! Queries that only read: pgrx's `Spi::get_one` and kin run as updates, which assign the
//! transaction an ID — refused on a standby ("cannot assign TransactionIds during recovery"),
//! where `ttl_stats` and `ttl_expire_preview` must still work.

use pgrx::datum::{DatumWithOid, FromDatum, IntoDatum};
use pgrx::prelude::*;

/// The first column of the first row of `sql` (with `args`), read-only; `None` when there is
/// no row, the value is NULL, or the query fails.
pub fn one<T: FromDatum + IntoDatum>(sql: &str, args: &[DatumWithOid]) -> Option<T> {
    Spi::connect(|client| client.select(sql, Some(1), args)?.first().get_one::<T>())
        .ok()
        .flatten()
}

/// [`one`], with the error of a query that could not be read (no row is `Ok(None)`).
pub fn one_checked<T: FromDatum + IntoDatum>(
    sql: &str,
    args: &[DatumWithOid],
) -> Result<Option<T>, pgrx::spi::SpiError> {
    Spi::connect(|client| {
        let rows = client.select(sql, Some(1), args)?;
        match rows.is_empty() {
            true => Ok(None),
            false => rows.first().get_one::<T>(),
        }
    })
}

/// Runs `f` under a snapshot taken now (the active one: the read-only statements of this module
/// and of a transaction without an ID run under it; the others take a newer one), popped again
/// after. Under REPEATABLE READ too: a check that must see what committed after the
/// transaction's snapshot (once a lock says nothing else is under way) reads under it.
pub fn under_fresh_snapshot<R>(f: impl FnOnce() -> R) -> R {
    // (an error aborts the transaction, which drops the snapshots it pushed)
    unsafe { pgrx::pg_sys::PushActiveSnapshot(pgrx::pg_sys::GetLatestSnapshot()) };
    let result = f();
    unsafe { pgrx::pg_sys::PopActiveSnapshot() };
    result
}
