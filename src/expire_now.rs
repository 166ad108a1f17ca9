//! `ttl_expire_now([tbl [, max_rows]])`: the caller's own purge, in the caller's transaction,
//! with the worker's statements and in the worker's frame (see [`purge_target`]). On the Citus
//! coordinator, a hash-distributed table is purged on every node that holds its shards, each
//! node at most `max_rows`, through Citus's connections (each node's part commits on its own).

use crate::batch_frame::Entered;
use crate::catalog::{self, Lock, TtlIndex};
use crate::deleter::{Batch, Named, Purge, BATCH_ARGS};
use crate::error::raise;
use crate::extension::Extension;
use crate::generic_plan::GenericPlan;
use crate::table::{owned_table, ttl_index_of, Table};
use crate::{citus, deleter, gucs, owner};
use pgrx::datum::Interval;
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use pgrx::spi::quote_literal;
use pgrx::PgSqlErrorCode;

/// `max_rows` as given to `ttl_expire_now` or `ttl_field_expire_now`: NULL for no limit, never
/// negative.
pub(crate) fn max_rows_arg(max_rows: Option<i64>) -> i64 {
    let max_rows = max_rows.unwrap_or(i64::MAX);
    if max_rows < 0 {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("max_rows must not be negative, not {max_rows}"),
            "Pass NULL for no limit.",
        );
    }
    max_rows
}

/// Removes the expired rows of the TTL index of `tbl` (of every table whose owner's
/// privileges the caller has, when no table is named: `'-'::regclass`, the SQL function's
/// default), at most `max_rows`; the rows removed. A NULL table is an error: a mistyped name
/// through `to_regclass` must not purge every table.
pub(crate) fn expire_now(tbl: Option<Oid>, max_rows: Option<i64>) -> i64 {
    let max_rows = max_rows_arg(max_rows);
    let ext = Extension::current();
    let tbl = match tbl {
        Some(oid) if oid == pg_sys::InvalidOid => None,
        // 0.3.0's SQL and older pass NULL for no table
        None if ext.sql_before_0_4() => None,
        None => raise(
            PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            "ttl_expire_now: the table is NULL",
            "Name a table with a TTL index (to_regclass() returns NULL for a name that does \
             not exist), or call ttl_expire_now() with no table for every table you own.",
        ),
        Some(oid) => Some(oid),
    };
    let Some(tbl) = tbl else {
        let indexes = crate::shard_targets::targets(&ext, None, |index| {
            owner::has_privileges_of(index.owner) && purged_unnamed(index)
        });
        return expire_targets(&ext, &indexes, max_rows);
    };
    let table = owned_table(Some(tbl));
    let index = ttl_index_of(&ext, &table);
    if index.archive_to.is_some() && citus::hash_distributed(table.oid) {
        // distributed after archive_to was set: its TTL index is not handed on to the nodes
        raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!(
                "archive_to is not supported on the Citus table {}",
                table.name
            ),
            "It was distributed after archive_to was set, and its shards are not purged: \
             remove archive_to ('-') to purge it by deleting.",
        );
    }
    if index.paused {
        raise(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("the TTL index of {} is paused", table.name),
            format!(
                "Nothing goes while it is paused. To purge it: SELECT ttl_index_resume({}); \
                 then SELECT ttl_expire_now({}).",
                quote_literal(&table.name),
                quote_literal(&table.name)
            ),
        );
    }
    let here = expire_targets(
        &ext,
        &crate::shard_targets::targets(&ext, Some(table.oid), |_| true),
        max_rows,
    );
    match citus::hash_distributed(table.oid) && citus::is_coordinator() {
        true => here + on_worker_nodes(&ext, &table, max_rows),
        false => here,
    }
}

/// Whether the caller's `ttl_expire_now()` (no table named) purges `index`: not while it is
/// paused (by its owner, an operator or the safety brake) nor outside its delete window, as
/// the worker leaves it; each one left is said in a NOTICE.
fn purged_unnamed(index: &crate::catalog::TtlIndex) -> bool {
    let why = match (index.paused, index.in_window) {
        (true, _) => "it is paused (ttl_index_resume() ends that)",
        (false, false) => "it is outside its delete window",
        (false, true) => return true,
    };
    notice!("jsonb_ttl: {} skipped: {why}", index.display_name);
    false
}

/// On a Citus worker node, for the coordinator's `ttl_expire_now(tbl)`: removes the expired rows
/// of the shards of `tbl` this node holds, at most `max_rows`, as the caller.
pub(crate) fn expire_local(tbl: Oid, max_rows: i64) -> i64 {
    let ext = Extension::current();
    let table = owned_table(Some(tbl));
    if crate::table::existing(&ext, &table).is_none() {
        if citus::present() && !citus::holds_shards_of(table.oid) {
            return 0; // nothing of it here (a node added since, not handed on yet)
        }
        raise(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "the TTL index of {} has not reached this node yet",
                table.name
            ),
            "The coordinator's worker hands it on at its next pass (jsonb_ttl.frequency).",
        );
    }
    expire_targets(
        &ext,
        &crate::shard_targets::targets(&ext, Some(table.oid), |_| true),
        max_rows,
    )
}

/// The rows removed on the Citus worker nodes from their shards of the hash-distributed
/// `table` (each node at most `max_rows`), through Citus's connections as the caller.
fn on_worker_nodes(ext: &Extension, table: &Table, max_rows: i64) -> i64 {
    let command = format!(
        "SELECT {}._ttl_expire_local({}::pg_catalog.regclass, {max_rows}::pg_catalog.int8)",
        ext.internal(),
        quote_literal(&table.name)
    );
    let results: Vec<(bool, String, String)> = Spi::connect(|client| {
        client
            .select(
                "SELECT success, result, \
                        nodename OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) nodeport \
                 FROM pg_catalog.run_command_on_workers($1)",
                None,
                &[command.into()],
            )
            .map(|rows| {
                rows.filter_map(|row| {
                    let text = |i| row.get::<String>(i).ok().flatten().unwrap_or_default();
                    Some((row.get::<bool>(1).ok()??, text(2), text(3)))
                })
                .collect()
            })
    })
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot reach the worker nodes: {e}"));
    let mut removed = 0;
    for (success, result, node) in results {
        match (success, result.parse::<i64>()) {
            (true, Ok(rows)) => removed += rows,
            _ => raise(
                PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
                format!("ttl_expire_now failed on worker node {node}: {result}"),
                "The rows removed on the other nodes stay removed.",
            ),
        }
    }
    removed
}

/// Removes the expired rows of `indexes`, at most `max_rows` in all, with the worker's first
/// batch size; the rows removed.
pub(crate) fn expire_targets(
    ext: &Extension,
    indexes: &[crate::catalog::TtlIndex],
    max_rows: i64,
) -> i64 {
    // the worker's first batch of a table it has not sized yet
    let batch_size = jsonb_ttl_core::batch_size::FIRST_ROWS.min(gucs::BATCH_SIZE.get() as i64);
    let mut removed: i64 = 0;
    for index in indexes {
        if removed >= max_rows {
            break;
        }
        if !index.index_ready && !index.foreign && index.field.is_some() {
            notice!(
                "jsonb_ttl: the field TTL on {} of {} is not ready (its index {} is missing or \
                 not valid, its column is no longer jsonb, or it would remove the date a TTL \
                 index of the table expires rows by): nothing removed there",
                index.path,
                index.display_name,
                index.index_name
            );
            continue;
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
        removed += purge_target(ext, index, batch_size, max_rows - removed) as i64;
    }
    removed
}

/// The most rows one statement of [`purge_target`] removes: bounds the statement's array of
/// row ids (6 bytes each) while the statements grow.
const MAX_STATEMENT_ROWS: i64 = 1_000_000;

/// Removes up to `max_rows` expired rows of one target in the caller's transaction and returns
/// how many it removed, batch after batch as [`Purge`] says, in the frame of the worker's
/// batches: the definition read under its catalog row's lock and checked to be the version
/// `index` was loaded at ([`locked_definition`]); the table locked; then the worker's own steps
/// ([`crate::batch_frame`]): still the TTL index's target, its current names and owner
/// (whoever calls: a superuser's `ttl_expire_now()` never runs a tenant's triggers as a
/// superuser), every deferred check made immediate, `jsonb_ttl.expiring` on, the statements
/// as the owner. Foreign partitions are skipped.
///
/// Its statements lock the rows they pick and skip the busy ones ([`deleter::batch_sql`]): the
/// caller's transaction never waits on a row (so no batch by key range, whose DELETE would).
/// They start at `batch_size` rows (the worker's first batch size) and double, up to
/// `MAX_STATEMENT_ROWS`. In one transaction the index entries of rows an earlier statement
/// removed stay (they are dead to no one else yet), so each statement walks past all of them
/// again: with a fixed size, removing n rows would visit about n²/(2 × batch_size) entries;
/// doubling keeps it near 2n.
fn purge_target(ext: &Extension, index: &TtlIndex, batch_size: i64, max_rows: i64) -> u64 {
    if index.foreign {
        return 0;
    }
    // The definition first, its catalog row locked (an alter locks the row, then the table:
    // the same order, no deadlock), then the DELETE's own lock, so the owner and names read
    // next are current.
    let expire_after = locked_definition(ext, index);
    unsafe { pg_sys::LockRelationOid(index.table, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE) };
    let (index, owner) = match crate::batch_frame::enter(ext, index) {
        Entered::Ready(current, owner) => (*current, owner),
        Entered::Gone => return 0,
        Entered::Changed => {
            notice!(
                "jsonb_ttl: the field TTL on {} of {} would remove the date a TTL index of the \
                 table reads: nothing removed there",
                index.path,
                index.display_name
            );
            return 0;
        }
    };
    if !owner::has_privileges_of(owner) {
        return 0; // an ALTER TABLE … OWNER TO committed since the caller's rights were checked
    }
    let settings = owner::role_settings(owner);
    crate::batch_frame::as_owner(&index, owner, &settings, &[], true, || {
        Spi::connect_mut(|_| purge_batches(ext, &index, expire_after, batch_size, max_rows))
    })
}

/// The batches of [`purge_target`], in an SPI connection, as the owner.
fn purge_batches(
    ext: &Extension,
    index: &Named,
    expire_after: Interval,
    batch_size: i64,
    max_rows: i64,
) -> u64 {
    let prepare = |sql: Result<String, String>| {
        let sql = sql.unwrap_or_else(|e| error!("{e}"));
        GenericPlan::prepare(&sql, &BATCH_ARGS.map(|t| t.value())).unwrap_or_else(|e| {
            error!(
                "jsonb_ttl: cannot prepare the delete of {}: {e}",
                index.display_name
            )
        })
    };
    let delete = prepare(deleter::batch_sql(ext, index, false));
    let pick_count = prepare(deleter::pick_count_sql(ext, index, false));
    let mut purge = Purge::from_head();
    let mut removed: u64 = 0;
    let mut size = batch_size;
    while (removed as i64) < max_rows {
        let limit = size.min(max_rows - removed as i64);
        let counting = (purge.next() == Batch::Counting).then_some(&pick_count);
        let outcome = deleter::run_batch(&delete, counting, expire_after, limit, &[])
            .unwrap_or_else(|e| {
                error!("jsonb_ttl: delete from {} failed: {e}", index.display_name)
            });
        removed += outcome.deleted;
        if !purge.go_on(limit, outcome) {
            break;
        }
        size = (size * 2).min(MAX_STATEMENT_ROWS);
    }
    removed
}

/// The `expire_after` of `index`'s definition as committed now, its catalog row locked until
/// the caller's transaction ends (`FOR SHARE`: an alter, pause or drop under way is waited for,
/// one to come waits for the caller): the same read as the worker's batches
/// ([`catalog::read_definition`]). A row changed since `index` was loaded (an alter committed in
/// between; under REPEATABLE READ, one committed after the transaction's snapshot, which the
/// lock itself refuses) is a serialization failure: the caller calls again, and reads the
/// definition committed then. 0 for the rows with a TTL of their own.
fn locked_definition(ext: &Extension, index: &TtlIndex) -> Interval {
    let sql = catalog::definition_sql(ext, index.field.is_some(), Lock::Wait);
    // (a row lock is a write: as the catalog's owner, which the caller may not be)
    let read = owner::as_catalog_owner(ext.owner(), || {
        catalog::read_definition(index, Lock::Wait, catalog::Statement::Text(&sql))
    })
    .unwrap_or_else(|e| {
        error!(
            "jsonb_ttl: cannot read the definition of {}: {e}",
            index.display_name
        )
    });
    match read
        .as_ref()
        .and_then(|definition| definition.governs(index))
    {
        Some(expire_after) => expire_after,
        _ => raise(
            PgSqlErrorCode::ERRCODE_T_R_SERIALIZATION_FAILURE,
            format!(
                "the TTL definition of {} changed while ttl_expire_now read it",
                index.display_name
            ),
            "Call it again: it purges under the definition committed then (a pause, an \
             archive_to or an expire_after committed since this transaction's snapshot counts).",
        ),
    }
}
