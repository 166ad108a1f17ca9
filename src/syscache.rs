//! Catalog rows read from PostgreSQL's system caches: no SQL, no lock on the object, a few
//! hundred nanoseconds a lookup once cached (who owns a table with an error in `ttl_stats`,
//! whether a database is a template for the hooks).

use pgrx::pg_sys;

/// Calls `read` with the row of `oid` in system cache `cache`, whose fixed part is a `Form`
/// (`FormData_pg_class` for `RELOID`, …), and releases it; `None` when there is no such row.
///
/// # Safety
/// `Form` must be the struct of `cache`'s catalog, and `read` may touch only its fixed-size
/// fields (those before the first variable-length one).
pub unsafe fn row<Form, T>(
    cache: pg_sys::SysCacheIdentifier::Type,
    oid: pg_sys::Oid,
    read: impl FnOnce(&Form) -> T,
) -> Option<T> {
    unsafe {
        let tuple = pg_sys::SearchSysCache1(cache as _, pg_sys::Datum::from(oid));
        if tuple.is_null() {
            return None;
        }
        let header = (*tuple).t_data;
        let form = (header as *const u8).add((*header).t_hoff as usize) as *const Form;
        let value = read(&*form);
        pg_sys::ReleaseSysCache(tuple);
        Some(value)
    }
}
