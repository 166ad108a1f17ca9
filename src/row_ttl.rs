//! Per-row TTL (Cosmos DB's `ttl` on an item): `ttl_index_create(…, row_ttl_path => 'ttl')`
//! names a field holding seconds that overrides `expire_after` for its row (`-1`: never; absent
//! or invalid: `expire_after`). What the field means is in `jsonb_ttl_core::row_ttl`.
//!
//! Purging never scans the table, so the rows are split between two partial indexes
//! (docs/row_ttl.md):
//! - the TTL index itself, keyed on the reference time as ever, now only over the rows that
//!   fall back to `expire_after` (`ttl_row_seconds(<ttl>) IS NULL`): `expire_after` still
//!   changes without a rebuild;
//! - a second index, `<table>_row_ttl_idx`, keyed on each row's own expiry time,
//!   `ttl_expires_at(<reference>, ttl_row_seconds(<ttl>))` (an IMMUTABLE helper, since
//!   `timestamptz + interval` is only STABLE), over the rows that have one.
//!
//! The worker purges them as two targets of one table (see [`crate::catalog::Part`]): the
//! second is a TTL index on the expiry time with `expire_after` 0.

use crate::extension::Extension;
use crate::jsonb_scalar::JsonbRef;
use jsonb_ttl_core::path::{ColumnKind, Resolved};
use jsonb_ttl_core::row_ttl::{expires_at, row_seconds};
use pgrx::prelude::*;
use pgrx::spi::{quote_identifier, quote_literal};
use pgrx::AnyNumeric;

/// What a row's TTL field holds: seconds of its own (≥ 0), `-1` for never, or NULL to fall
/// back to the index's `expire_after` (absent, null, not a number, another negative number).
#[pg_extern(
    immutable,
    strict,
    parallel_safe,
    name = "ttl_row_seconds",
    schema = "jsonb_ttl_internal"
)]
fn ttl_row_seconds(value: JsonbRef) -> Option<f64> {
    row_seconds(&value.number_text()?)
}

/// The same for a numeric column.
#[pg_extern(
    immutable,
    strict,
    parallel_safe,
    name = "ttl_row_seconds",
    schema = "jsonb_ttl_internal"
)]
fn ttl_row_seconds_numeric(value: AnyNumeric) -> Option<f64> {
    row_seconds(&value.to_string())
}

/// When a row expires that has a TTL of its own of `seconds` (NULL for never: `-1`).
#[pg_extern(
    immutable,
    strict,
    parallel_safe,
    name = "ttl_expires_at",
    schema = "jsonb_ttl_internal"
)]
fn ttl_expires_at(reference: TimestampWithTimeZone, seconds: f64) -> Option<TimestampWithTimeZone> {
    let micros: i64 = reference.into_inner();
    if !reference.is_finite() {
        return None;
    }
    TimestampWithTimeZone::try_from(expires_at(micros, seconds)?).ok()
}

/// `ttl_row_seconds(<the row's TTL field>)`, qualified like [`crate::reference::reference_expr`].
pub fn seconds_expr(ext: &Extension, field: &Resolved) -> Result<String, String> {
    let column = quote_identifier(&field.column);
    let value = match field.kind {
        ColumnKind::Jsonb | ColumnKind::Json => {
            let document = match field.kind {
                ColumnKind::Json => format!("({column})::pg_catalog.jsonb"),
                _ => column,
            };
            field.json_path.iter().fold(document, |value, key| {
                format!(
                    "({value} OPERATOR(pg_catalog.->) {}::pg_catalog.text)",
                    quote_literal(key)
                )
            })
        }
        ColumnKind::Number => format!("({column})::pg_catalog.numeric"),
        _ => {
            return Err(format!(
                "column {column} no longer exists or can no longer hold a number of seconds"
            ))
        }
    };
    Ok(format!("{}.ttl_row_seconds({value})", ext.helpers()))
}

/// A row's own expiry time.
pub fn expiry_expr(ext: &Extension, reference: &str, seconds: &str) -> String {
    format!("{}.ttl_expires_at({reference}, {seconds})", ext.helpers())
}

/// The predicate that keeps the rows with a TTL of their own out of the TTL index itself.
pub fn falls_back(seconds: &str) -> String {
    format!("{seconds} IS NULL")
}
