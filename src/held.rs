//! A definition that would remove much of its table at once is held, never released
//! silently. The commonest premature delete is a setup mistake: a time zone, a unit of
//! numbers, a path, an `expire_after` in minutes for months. Each looks like a big backlog the
//! moment the definition takes effect. So when `ttl_index_create`, or a `ttl_index_alter` that
//! may widen what expires (expire_after, path, numeric_unit, time_zone, filter, row_ttl_path;
//! counted once, at the end of the call, under the definition it leaves), finds more than
//! `jsonb_ttl.max_table_fraction` of the table expired at once (tables under
//! `jsonb_ttl.brake_min_rows` aside, as for the safety brake), the TTL index is paused by the
//! safety brake there and then, and a NOTICE gives the count, the oldest and newest points in
//! time as read (in the zone used) against now, and what to check. `ttl_index_resume()` lets
//! the rows go. A smaller backlog goes at once, said in a NOTICE too.
//!
//! The count is the preview's (`ttl_expire_preview`: the caller's query, or the owner's for a
//! filtered TTL index) and the table's rows are counted, not estimated, up to the number that
//! settles the question: a table loaded a moment ago has no statistics yet.

use crate::catalog::TtlIndex;
use crate::extension::Extension;
use crate::table::{set_column, ttl_index_of, Table};
use crate::{brake, gucs, owner};
use pgrx::datum::TimestampWithTimeZone;
use pgrx::pg_sys::{self, panic::ErrorReport};
use pgrx::prelude::*;
use pgrx::spi::{quote_identifier, quote_literal};
use pgrx::PgSqlErrorCode;

/// When the check runs.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Occasion {
    /// `ttl_index_create`: its first backlog.
    Created,
    /// `ttl_index_alter`, once at its end, after any option that may widen what expires.
    Altered,
}

/// What the new or changed definition of `table` finds expired now.
struct Backlog {
    expired: i64,
    /// The table's rows, counted up to `cap` (see [`count_rows`]).
    rows: i64,
    oldest: String,
    newest: String,
    now: String,
    zone: String,
}

/// The first backlog of the new TTL index of `table` (see the module's text); `None` when the
/// index is not built yet (`build => false`) or the table is distributed (each node's brake
/// checks its shards).
pub(crate) fn first_backlog(ext: &Extension, table: &Table) -> Option<i64> {
    check(ext, table, Occasion::Created)
}

/// Checks what the definition of `table` finds expired now, on `occasion`: holds it past the
/// fraction, says so either way; returns how many rows are expired.
pub(crate) fn check(ext: &Extension, table: &Table, occasion: Occasion) -> Option<i64> {
    // (the pause needs 0.3.0's catalog, the preview its SQL: an older SQL checks nothing)
    if !ext.has_controls() || crate::citus::hash_distributed(table.oid) {
        return None;
    }
    // not built yet (build => false): nothing to count through
    crate::tracking::recorded_index(ext, table.oid, "index_name")?;
    let index = ttl_index_of(ext, table);
    let backlog = measure(ext, table, &index);
    if backlog.expired == 0 {
        return Some(0);
    }
    let fraction = gucs::MAX_TABLE_FRACTION.get();
    let limit = brake::limit(
        backlog.rows as f64,
        fraction,
        gucs::BRAKE_MIN_ROWS.get() as i64,
    );
    let over = limit.is_some_and(|limit| backlog.expired > limit);
    let resume = format!(
        "SELECT ttl_index_resume({})",
        quote_literal(&index.display_name)
    );
    if over && !index.paused {
        hold(ext, table, &held_reason(&backlog, fraction, &resume));
    }
    // created: a backlog within the fraction, or one the operator reviews first (created
    // paused: the resume is the review), is let past the brake
    if occasion == Occasion::Created && (!over || index.paused) {
        release(ext, table);
    }
    let (message, detail, hint) = said(&index, &backlog, occasion, (over, limit), &resume);
    crate::error::tell(
        PgLogLevel::NOTICE,
        ErrorReport::new(
            PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
            format!("jsonb_ttl: {message}"),
            "jsonb_ttl",
        )
        .set_detail(detail)
        .set_hint(hint),
    );
    Some(backlog.expired)
}

/// The NOTICE on `backlog` of `index` (its message, DETAIL and HINT): held past the brake's
/// `limit`, else what the worker does with the rows.
fn said(
    index: &TtlIndex,
    backlog: &Backlog,
    occasion: Occasion,
    (over, limit): (bool, Option<i64>),
    resume: &str,
) -> (String, String, String) {
    let fraction = gucs::MAX_TABLE_FRACTION.get();
    let table = &index.display_name;
    // the points in time as read, said where a mistake is suspected (they change with now)
    let seen = || describe(index, backlog);
    match (over, index.paused, occasion) {
        // created paused: the operator reviews first, and the resume is the review
        (_, true, Occasion::Created) => (
            format!(
                "{} row(s) of {table} are expired already: the TTL index is paused: nothing \
                 goes before it is resumed",
                backlog.expired
            ),
            "ttl_expire_preview() shows what would go.".to_string(),
            format!("When they may go: {resume}"),
        ),
        (true, _, _) => (
            format!(
                "{} of {} row(s) of {table} would expire at once: the TTL index is held, \
                 nothing goes until it is resumed",
                backlog.expired, backlog.rows
            ),
            format!("{} jsonb_ttl.max_table_fraction is {fraction}.", seen()),
            format!(
                "Check the time zone (time_zone), the unit of numbers (numeric_unit) and the \
                 path: a mistake in any of them expires a whole table. ttl_expire_preview() \
                 shows what would go. If they may all go: {resume}"
            ),
        ),
        (false, _, Occasion::Created) => (
            format!(
                "{} row(s) of {table} are expired already: the worker deletes them from \
                     its next pass on",
                backlog.expired
            ),
            format!(
                "At most {} a pass (jsonb_ttl.max_table_removes). Creating the index is \
                     their review: the safety brake lets them go, and holds again once they \
                     are gone.",
                gucs::MAX_TABLE_REMOVES.get()
            ),
            "To look at them first, create the index with paused => true.".to_string(),
        ),
        (false, paused, Occasion::Altered) => (
            format!(
                "{} row(s) of {table} expire under the changed definition: {}",
                backlog.expired,
                match paused {
                    true => "they go once the TTL index is resumed",
                    false => "the worker deletes them from its next pass on",
                }
            ),
            not_held(limit, fraction),
            "ttl_expire_preview() shows what would go; ttl_index_pause() stops the worker."
                .to_string(),
        ),
    }
}

/// Why a backlog is not held: the brake is off, the table is small, or it is within the fraction.
fn not_held(limit: Option<i64>, fraction: f64) -> String {
    match limit {
        None if fraction >= 1.0 => {
            "The safety brake is off (jsonb_ttl.max_table_fraction = 1): not held.".to_string()
        }
        None => format!(
            "The table has fewer than jsonb_ttl.brake_min_rows ({}) rows: not held.",
            gucs::BRAKE_MIN_ROWS.get()
        ),
        Some(_) => {
            format!("Within jsonb_ttl.max_table_fraction ({fraction}) of the table: not held.")
        }
    }
}

/// The points in time as read, in the zone used, against now.
fn describe(index: &TtlIndex, backlog: &Backlog) -> String {
    let numbers = match index.unit.name() {
        "ms" => "milliseconds",
        _ => "seconds",
    };
    format!(
        "Read from {} (numbers as Unix {numbers}, local times in {}), their points in time run \
         from {} to {}; now is {}, and they expire {}.",
        quote_literal(&index.path),
        backlog.zone,
        backlog.oldest,
        backlog.newest,
        backlog.now,
        match index.expire_after.as_micros() {
            0 => "at them".to_string(),
            _ => format!("{} after them", index.expire_after),
        },
    )
}

/// The transaction's start, `now()`, at which the backlog is counted.
fn now() -> TimestampWithTimeZone {
    unsafe {
        TimestampWithTimeZone::from_datum(
            pg_sys::Datum::from(pg_sys::GetCurrentTransactionStartTimestamp()),
            false,
        )
    }
    .unwrap_or_else(|| error!("jsonb_ttl: no transaction start"))
}

/// The preview of `table` now and its rows counted, both as the table's owner (a superuser's
/// `ttl_index_create` runs no owner code as a superuser, and both counts see the rows the same
/// row security lets the worker see), the times shown in the index's zone (UTC for none).
fn measure(ext: &Extension, table: &Table, index: &TtlIndex) -> Backlog {
    owner::as_table_owner(index.owner, &[], || measure_as_owner(ext, table, index))
}

fn measure_as_owner(ext: &Extension, table: &Table, index: &TtlIndex) -> Backlog {
    let zone = index.time_zone.clone().unwrap_or_else(|| "UTC".to_string());
    // the preview's own statement ([`crate::deleter::preview_sql`]), on the entry read already
    let sql = crate::deleter::preview_sql(ext, index);
    let row = Spi::connect(|client| {
        let counted = client
            .select(&sql, Some(1), &[now().into(), index.expire_after.into()])?
            .first()
            .get_three::<i64, TimestampWithTimeZone, TimestampWithTimeZone>()?;
        let times = client
            .select(
                "SELECT pg_catalog.to_char($1 AT TIME ZONE $4, 'YYYY-MM-DD HH24:MI:SS'), \
                        pg_catalog.to_char($2 AT TIME ZONE $4, 'YYYY-MM-DD HH24:MI:SS'), \
                        pg_catalog.to_char($3 AT TIME ZONE $4, 'YYYY-MM-DD HH24:MI:SS')",
                Some(1),
                &[
                    counted.1.into(),
                    counted.2.into(),
                    now().into(),
                    zone.as_str().into(),
                ],
            )?
            .first()
            .get_three::<String, String, String>()?;
        Ok::<_, pgrx::spi::Error>((counted.0, times.0, times.1, times.2))
    })
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot count the expired rows: {e}"));
    let expired = row.0.unwrap_or(0);
    Backlog {
        expired,
        rows: match expired {
            0 => 0,
            _ => count_rows(table, expired),
        },
        oldest: row.1.unwrap_or_default(),
        newest: row.2.unwrap_or_default(),
        now: row.3.unwrap_or_default(),
        zone,
    }
}

/// The rows of `table` (its partitions included), counted up to the number past which
/// `expired` of them is within `jsonb_ttl.max_table_fraction` and `jsonb_ttl.brake_min_rows`
/// is reached: a larger table is not held, whatever its exact size.
fn count_rows(table: &Table, expired: i64) -> i64 {
    let fraction = gucs::MAX_TABLE_FRACTION.get().max(1e-6);
    let cap = ((expired as f64 / fraction).ceil() as i64)
        .max(gucs::BRAKE_MIN_ROWS.get() as i64)
        .saturating_add(1);
    Spi::get_one_with_args::<i64>(
        &format!(
            "SELECT pg_catalog.count(*) FROM (SELECT FROM {}.{} LIMIT $1) t",
            quote_identifier(&table.schema),
            quote_identifier(&table.relname)
        ),
        &[cap.into()],
    )
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot count the rows of {}: {e}", table.name))
    .unwrap_or(0)
}

/// Why the TTL index is held (its `paused_reason`).
fn held_reason(backlog: &Backlog, fraction: f64, resume: &str) -> String {
    format!(
        "held by the safety brake: {} of {} rows would expire at once (jsonb_ttl.\
         max_table_fraction = {fraction}), their points in time from {} to {} in {}, now {}; \
         check time_zone, numeric_unit and the path, then {resume}",
        backlog.expired, backlog.rows, backlog.oldest, backlog.newest, backlog.zone, backlog.now
    )
}

/// Pauses the TTL index of `table` as the safety brake does ([`brake::pause_row`]), with
/// `reason`, as the catalog's owner (the caller, the table's owner, may not write the catalog;
/// no lock_timeout of the worker's: the caller's statement waits as any would).
fn hold(ext: &Extension, table: &Table, reason: &str) {
    owner::as_catalog_owner(ext.owner(), || brake::pause_row(ext, table.oid, reason));
}

/// Lets the first backlog of `table` past the safety brake until the worker has drained it:
/// creating the index reviewed it. A TTL index created paused keeps the release through its
/// pause, and its `ttl_index_resume()` lets the backlog go (an alter meanwhile holds the brake
/// again: the backlog it reviewed is no longer the one that goes).
fn release(ext: &Extension, table: &Table) {
    set_column(ext, table, "brake_released", true.into());
}
