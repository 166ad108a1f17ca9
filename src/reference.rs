//! The SQL of a TTL index's reference time, and the conditions built on it: whether a row is
//! expired, and the index predicate. Every statement that picks expired rows and the index
//! itself are written from these, so the planner always matches the two.

use crate::extension::Extension;
use jsonb_ttl_core::parse::NumericUnit;
use jsonb_ttl_core::path::{ColumnKind, Resolved};
use pgrx::spi::{quote_identifier, quote_literal};

/// The SQL expression of the reference time of a row, qualified down to its operators and
/// casts so it means the same under any search_path (the worker runs it as the table's owner,
/// with the owner's settings). The index is built on it and the deleter filters on it, so the
/// planner always matches the two (it compares operator and function OIDs, not text). An error
/// when the column can no longer hold a time (it was dropped or changed type behind the
/// catalog's back).
///
/// A `timestamp` column holds a local time: it is read in `time_zone`, the TTL index's zone (by
/// default the database's own default TimeZone, what the application's sessions get: see
/// [`crate::zone`]); a `date` column is midnight in that zone. `AT TIME ZONE`
/// with a constant zone is IMMUTABLE (`timezone(text, timestamp)`), so it can key an index, and
/// it reads gaps and overlaps of daylight saving time as PostgreSQL does everywhere else. In a
/// JSON document, strings without an offset are read as UTC, or in `time_zone` when the index
/// has one (the three-argument `ttl_timestamp`). `None` is UTC.
pub fn reference_expr(
    ext: &Extension,
    resolved: &Resolved,
    unit: NumericUnit,
    time_zone: Option<&str>,
) -> Result<String, String> {
    let column = quote_identifier(&resolved.column);
    let zone = quote_literal(time_zone.unwrap_or("UTC"));
    Ok(match resolved.kind {
        ColumnKind::Jsonb | ColumnKind::Json => {
            let value = json_value(resolved, resolved.json_path.len());
            match (unit, time_zone) {
                (NumericUnit::Seconds, None) => format!("{ext}.ttl_timestamp({value})"),
                (NumericUnit::Milliseconds, None) => {
                    format!("{ext}.ttl_timestamp({value}, 'ms'::pg_catalog.text)")
                }
                (unit, Some(_)) => format!(
                    "{ext}.ttl_timestamp({value}, '{}'::pg_catalog.text, \
                     {zone}::pg_catalog.text)",
                    unit.name()
                ),
            }
        }
        ColumnKind::Text => match time_zone {
            None => format!(
                "{}.ttl_text_timestamp(({column})::pg_catalog.text)",
                ext.helpers()
            ),
            Some(_) => format!(
                "{}.ttl_text_timestamp(({column})::pg_catalog.text, {zone}::pg_catalog.text)",
                ext.helpers()
            ),
        },
        ColumnKind::Timestamptz => column,
        // AT TIME ZONE always calls pg_catalog.timezone()
        ColumnKind::Timestamp => format!("({column} AT TIME ZONE {zone}::pg_catalog.text)"),
        ColumnKind::Date => {
            format!("(({column})::pg_catalog.timestamp AT TIME ZONE {zone}::pg_catalog.text)")
        }
        ColumnKind::Number => format!(
            "{}.ttl_unix_timestamp(({column})::pg_catalog.numeric, '{}'::pg_catalog.text)",
            ext.helpers(),
            unit.name()
        ),
        ColumnKind::Other => {
            return Err(format!(
                "column {column} no longer exists or can no longer hold a point in time"
            ))
        }
    })
}

/// The jsonb value `resolved` (a json or jsonb column) holds at the first `keys` keys of its
/// path: `(doc OPERATOR(pg_catalog.->) 'a'::pg_catalog.text)`… A json column is read as jsonb (an
/// I/O conversion of IMMUTABLE functions: it can key an index).
pub fn json_value(resolved: &Resolved, keys: usize) -> String {
    let column = quote_identifier(&resolved.column);
    let document = match resolved.kind {
        ColumnKind::Json => format!("({column})::pg_catalog.jsonb"),
        _ => column,
    };
    resolved.json_path[..keys]
        .iter()
        .fold(document, |value, key| {
            format!(
                "({value} OPERATOR(pg_catalog.->) {}::pg_catalog.text)",
                quote_literal(key)
            )
        })
}

/// `<reference> < now() - $1 [AND <filter>]`: whether a row is expired (`expire_after`, the
/// parameter `$1 interval` in our statements), qualified like [`reference_expr`]; `filter` is the qualified filter
/// of the TTL index (see [`crate::filter`]), also part of the index predicate, so the planner
/// proves the partial index usable. `OPERATOR()` binds left to right at one precedence, hence
/// the parentheses.
pub fn expired_condition(reference: &str, filter: Option<&str>, expire_after: &str) -> String {
    let filter = filter.map_or(String::new(), |filter| format!(" AND {filter}"));
    format!(
        "{reference} OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) {expire_after}){filter}"
    )
}

/// The predicate of a TTL index: its reference time is known, and its filter holds.
pub fn index_predicate(reference: &str, filter: Option<&str>) -> String {
    let filter = filter.map_or(String::new(), |filter| format!(" AND {filter}"));
    format!("{reference} IS NOT NULL{filter}")
}

/// The reference expression of a field TTL (its date, read in UTC) and its index's predicate.
pub fn field_index_expressions(
    ext: &Extension,
    resolved: &Resolved,
    unit: NumericUnit,
) -> Result<(String, String), String> {
    let expression = reference_expr(ext, resolved, unit, None)?;
    let predicate = index_predicate(&expression, None);
    Ok((expression, predicate))
}
