//! One batch of the worker run by hand, in the caller's transaction, for the tests that need
//! to hold a batch still halfway (tests/isolation), which no background worker lets them do:
//! `_ttl_worker_batch` (the plain form) and `_ttl_worker_range_batch` (a batch by key range).

use super::batch::{run_statements, waited_on_a_row};
use super::frame::Frame;
use crate::catalog::{self, TtlIndex};
use crate::deleter::Batch;
use crate::extension::Extension;
use crate::leaf_check::Marks;
use crate::owner;
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use std::collections::HashMap;

/// Runs exactly one plain batch of the worker on `tbl` (a table with a TTL index, or one of its
/// partitions) for at most `max_rows` rows, in the caller's transaction, and returns the rows
/// it removed (see [`one_batch`]).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_worker_batch",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_worker_batch(tbl: Oid, max_rows: i64) -> i64 {
    one_batch(tbl, max_rows, (Batch::Plain, i64::MIN, &Marks::default()))
}

/// Runs exactly one batch by key range of the worker on `tbl`, from the key `low` (the start of
/// a visit: `-infinity`), for at most `max_rows` rows, as [`ttl_worker_batch`] does; when no
/// range can be used, a plain batch, as the worker runs then.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_worker_range_batch",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_worker_range_batch(tbl: Oid, max_rows: i64, low: TimestampWithTimeZone) -> i64 {
    let low = low.into_datum().map_or(i64::MIN, |d| d.value() as i64);
    one_batch(tbl, max_rows, (Batch::Range, low, &Marks::default()))
}

/// Runs exactly one plain batch of the worker for the field TTL on `path` (as it was given to
/// `ttl_field_create`) of `tbl`, as [`ttl_worker_batch`] does: the documents it changed.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_worker_field_batch",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_worker_field_batch(tbl: Oid, path: &str, max_rows: i64) -> i64 {
    let ext = Extension::current();
    let mut fields = crate::tracking::field_targets(&ext, None, true).0;
    let ttl_targets = catalog::load(&ext, None, catalog::Scope::Targets);
    crate::field_dates::guard_targets(&mut fields, &ttl_targets);
    let target = fields
        .into_iter()
        .find(|field| field.table == tbl && field.path == path);
    let index = checked_target(target, tbl);
    run_one(
        &ext,
        index,
        max_rows,
        (Batch::Plain, i64::MIN, &Marks::default()),
    )
}

/// One batch of the form `form` on `tbl`, for at most `max_rows` rows: the rows it removed.
/// The worker's own steps ([`Frame::run`]) and statements, without the worker's transaction
/// and time limit around them; like a batch, it makes the transaction's
/// deferrable checks immediate (`SET CONSTRAINTS ALL IMMEDIATE`); its DELETE without row locks
/// runs in a subtransaction, and when it waits out `jsonb_ttl.lock_timeout` on a busy row, the
/// batch runs again with the pick that skips busy rows, as [`super::Worker::batch`] does. For tests
/// that need to stop a batch halfway (tests/isolation), which no background worker lets them
/// do. Superusers only (EXECUTE is revoked from PUBLIC), and only on tables whose owner's
/// privileges the caller has.
fn one_batch(tbl: Oid, max_rows: i64, form: (Batch, i64, &Marks)) -> i64 {
    let ext = Extension::current();
    let index = worker_batch_target(&ext, tbl);
    run_one(&ext, index, max_rows, form)
}

/// [`one_batch`] on the target `index`.
fn run_one(ext: &Extension, index: TtlIndex, max_rows: i64, form: (Batch, i64, &Marks)) -> i64 {
    let mut frame = Frame::default();
    frame.begin_pass(ext);
    let mut statements = HashMap::new();
    frame
        .run(&index, true, |current, expire_after| {
            let mut run = |locked| {
                let rows = max_rows;
                run_statements(
                    &mut statements,
                    ext,
                    form,
                    current,
                    expire_after,
                    rows,
                    &[],
                    locked,
                )
            };
            // as Worker::batch does, in a subtransaction of the caller's transaction
            match crate::txn::in_subtransaction(|| run(false)) {
                Ok(outcome) => outcome,
                Err(failure) if waited_on_a_row(&failure) => run(true),
                Err(failure) => {
                    pg_sys::panic::ErrorReport::new(failure.code, failure.message, "jsonb_ttl")
                        .report(PgLogLevel::ERROR);
                    unreachable!()
                }
            }
        })
        .map_or(0, |outcome| outcome.deleted as i64)
}

/// The target of `_ttl_worker_batch(tbl)`: `tbl`'s TTL index, if `tbl` has one, is no foreign
/// table and the caller has its owner's privileges; else an error.
fn worker_batch_target(ext: &Extension, tbl: Oid) -> TtlIndex {
    let target = catalog::load(ext, None, catalog::Scope::Targets)
        .into_iter()
        .find(|index| index.table == tbl);
    checked_target(target, tbl)
}

/// `target`, the target of a batch by hand on `tbl`, if there is one, it is no foreign table
/// and the caller has its owner's privileges; else an error.
fn checked_target(target: Option<TtlIndex>, tbl: Oid) -> TtlIndex {
    let index = target.unwrap_or_else(|| {
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
            format!("relation {} has no TTL index", tbl.to_u32()),
            "Pass a table with a TTL index, or one of its partitions.",
        )
    });
    if index.foreign {
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("{} is a foreign table", index.display_name),
            "The worker never deletes through a foreign data wrapper.",
        );
    }
    if !owner::has_privileges_of(index.owner) {
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "must be the owner of the table to run a batch on it",
            "A batch runs as the table's owner.",
        );
    }
    index
}
