//! `ttl_expire_now([tbl [, max_rows]])`: the caller's own purge, in the caller's transaction,
//! with the worker's statements (see [`deleter::delete_expired`]).

use crate::catalog::{self, Scope};
use crate::error::raise;
use crate::extension::Extension;
use crate::table::{owned_table, ttl_index_of};
use crate::{deleter, gucs, owner};
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;

/// Removes the expired rows of the TTL index of `tbl` (of every table whose owner's
/// privileges the caller has, when `None`), at most `max_rows`; the rows removed.
pub(crate) fn expire_now(tbl: Option<Oid>, max_rows: Option<i64>) -> i64 {
    let max_rows = max_rows.unwrap_or(i64::MAX);
    if max_rows < 0 {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("max_rows must not be negative, not {max_rows}"),
            "Pass NULL for no limit.",
        );
    }
    let ext = Extension::current();
    let indexes = match tbl {
        Some(_) => {
            let table = owned_table(tbl);
            ttl_index_of(&ext, &table);
            catalog::load(&ext, Some(table.oid), Scope::Targets)
        }
        None => catalog::load(&ext, None, Scope::Targets)
            .into_iter()
            .filter(|index| owner::has_privileges_of(index.owner))
            .collect(),
    };
    // the worker's first batch of a table it has not sized yet
    let batch_size = jsonb_ttl_core::batch_size::FIRST_ROWS.min(gucs::BATCH_SIZE.get() as i64);
    let mut removed: i64 = 0;
    for index in &indexes {
        if removed >= max_rows {
            break;
        }
        if !index.index_ready && !index.foreign {
            // not built yet (build => false) or not valid: deleting would scan the whole table
            notice!(
                "jsonb_ttl: {} has no valid index {} yet: nothing deleted there",
                index.display_name,
                index.index_name
            );
            continue;
        }
        removed += deleter::delete_expired(&ext, index, batch_size, max_rows - removed) as i64;
    }
    removed
}
