//! Advice when a TTL index or a field TTL is created, or a TTL index's path or unit altered: a
//! NOTICE (a WARNING where rows would expire at once) for a path in JSONPath or SQL syntax, for
//! numbers that look like another unit than `numeric_unit`, for local times without an offset
//! read as UTC, and for sampled rows with no point in time at the path (for a field TTL: when
//! none has one), each with its fix in the HINT (see `jsonb_ttl_core::advice`). The sample is
//! the table's first 1,000 rows, read as its owner (`as_table_owner`: the owner's row security,
//! never the caller's rights) in a subtransaction, so that nothing it meets can fail the
//! creation.

use crate::extension::Extension;
use crate::spec::IndexSpec;
use crate::table::Table;
use crate::{owner, reference, txn};
use jsonb_ttl_core::advice::{self, Advice, MICROS_FROM, MILLIS_FROM};
use jsonb_ttl_core::parse::NumericUnit;
use jsonb_ttl_core::path::{ColumnKind, Resolved};
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use pgrx::{PgLogLevel, PgSqlErrorCode};

/// Rows read from the table.
const SAMPLE_ROWS: i64 = 1000;

/// What the advice reads of a TTL index: where its point in time is, and how it is read.
pub(crate) struct Definition<'a> {
    pub path: &'a str,
    pub resolved: &'a Resolved,
    pub unit: NumericUnit,
    pub zone: Option<&'a str>,
    /// A field TTL's date (see [`crate::field`]), not a TTL index's.
    pub field: bool,
}

/// Raises the advice on `spec`, just created on `table` (see [`on_definition`]).
pub(crate) fn on_create(ext: &Extension, table: &Table, spec: &IndexSpec) {
    let definition = Definition {
        path: spec.path,
        resolved: &spec.resolved,
        unit: spec.unit,
        zone: spec.zone.as_deref(),
        field: false,
    };
    on_definition(ext, table, &definition);
}

/// Raises the advice on the field TTL just created on `table` for the date at `path`: the
/// sample a TTL index gets (a path no document has, JSONPath, another unit, naive times).
pub(crate) fn on_field(
    ext: &Extension,
    table: &Table,
    path: &str,
    date: &Resolved,
    unit: NumericUnit,
) {
    let definition = Definition {
        path,
        resolved: date,
        unit,
        zone: None,
        field: true,
    };
    on_definition(ext, table, &definition);
}

/// Raises the advice on the TTL index of `table` as `spec` defines it, just created or
/// altered (`'…'` in a HINT: the table's name).
pub(crate) fn on_definition(ext: &Extension, table: &Table, spec: &Definition) {
    let mut advice: Vec<Advice> = advice::path_syntax(spec.path).into_iter().collect();
    if let Some(sample) = sample(ext, table, spec) {
        advice.extend(advice::numeric_unit(spec.path, spec.unit, sample.scales));
        if spec.zone.is_none() {
            let owners = crate::zone::owner_default_zone(table.oid);
            let zone = (!crate::zone::same_zone(&owners, "UTC")).then_some(owners.as_str());
            advice.extend(advice::naive_strings(
                spec.path,
                sample.naive,
                sample.dated,
                zone,
            ));
        }
        // rows without a point in time: said when nothing above explains them already (a
        // field TTL's documents without the field are the usual case: said when none has it)
        let none_dated = sample.unreadable == sample.rows;
        if advice.is_empty() && (none_dated || !spec.field) {
            advice.extend(advice::unreadable(
                spec.path,
                spec.resolved,
                sample.rows,
                sample.unreadable,
                &sample.keys,
            ));
        }
    }
    for mut advice in advice {
        if spec.field {
            advice = for_field(advice, spec.path);
        }
        let (code, level) = match advice.warning {
            true => (PgSqlErrorCode::ERRCODE_WARNING, PgLogLevel::WARNING),
            false => (
                PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
                PgLogLevel::NOTICE,
            ),
        };
        crate::error::tell(
            level,
            ErrorReport::new(
                code,
                format!("jsonb_ttl: {}: {}", table.name, advice.message),
                "jsonb_ttl",
            )
            .set_hint(
                advice
                    .hint
                    .replace("'…'", &pgrx::spi::quote_literal(&table.name)),
            ),
        );
    }
}

/// `advice` for a field TTL on `path`: its fixes are a drop and a create (ttl_field_alter
/// changes only expire_after), and documents without a date keep all their fields.
fn for_field(advice: Advice, path: &str) -> Advice {
    let again = |args: &str| {
        format!(
            "ttl_field_drop('…', {}), then ttl_field_create('…', {args})",
            pgrx::spi::quote_literal(path)
        )
    };
    let quoted = pgrx::spi::quote_literal(path);
    let mut hint = advice.hint;
    if hint.starts_with("If they are another zone's wall times") {
        hint = "A field TTL reads them as UTC: have the writer add the offset (Z or ±HH:MM), \
                or store seconds since 1970."
            .to_string();
    }
    for (from, to) in [
        (
            "ttl_index_pause('…') now, then ttl_index_alter('…', numeric_unit => 's')".to_string(),
            again(&format!("{quoted}, …, numeric_unit => 's'")),
        ),
        (
            "ttl_index_alter('…', numeric_unit => 'ms')".to_string(),
            again(&format!("{quoted}, …, numeric_unit => 'ms'")),
        ),
    ] {
        hint = hint.replace(&from, &to);
    }
    // a path's fix: ttl_index_alter('…', path => '<meant>')
    if let Some(at) = hint.find("ttl_index_alter('…', path => ") {
        let rest = &hint[at + "ttl_index_alter('…', path => ".len()..];
        if let Some(end) = rest.find(')') {
            let meant = rest[..end].to_string();
            hint = format!(
                "{}{}{}",
                &hint[..at],
                again(&format!("{meant}, …")),
                &rest[end + 1..]
            );
        }
    }
    Advice {
        message: advice
            .message
            .replace(
                ": they never expire",
                ": the field TTL removes nothing from them",
            )
            .replace("rows have no point in time", "documents have no date"),
        hint: hint.replace(
            "A row without one is kept until it gets one; ttl_stats.rows_never_expire counts them.",
            "Documents without the date keep every field.",
        ),
        warning: advice.warning,
    }
}

/// What the sample found.
struct Sample {
    rows: u64,
    /// Rows whose reference time is NULL.
    unreadable: u64,
    /// The numbers at the path, by their scale as a Unix time (seconds, ms, µs).
    scales: [u64; 3],
    /// The keys of the objects where the path's last key should be, the most frequent first.
    keys: Vec<String>,
    /// Rows with a point in time at the path, and of those the strings with a time of day and
    /// no offset (read as UTC: they read otherwise in another zone).
    dated: u64,
    naive: u64,
}

/// The sample of `table` under `spec`, as its owner; `None` when it could not be read.
fn sample(ext: &Extension, table: &Table, spec: &Definition) -> Option<Sample> {
    let reference = reference::reference_expr(ext, spec.resolved, spec.unit, spec.zone).ok()?;
    // the same point in time read 14 hours east: differs for a local time only (0.1.0's SQL
    // reads no zone: none is told)
    let east = match ext.has_time_zone() {
        true => reference::reference_expr(ext, spec.resolved, spec.unit, Some("Etc/GMT-14"))
            .unwrap_or_else(|_| reference.clone()),
        false => reference.clone(),
    };
    let owner = owner::table_owner(table.oid)?;
    let column = pgrx::spi::quote_identifier(&spec.resolved.column);
    let rows = format!(
        "(SELECT {column} FROM {} LIMIT {SAMPLE_ROWS}) s",
        table.name
    );
    let counts = format!(
        "SELECT pg_catalog.count(*)::pg_catalog.int8, \
                (pg_catalog.count(*) FILTER (WHERE {}))::pg_catalog.int8, \
                (pg_catalog.count(*) FILTER (WHERE s.n OPERATOR(pg_catalog.<) {MILLIS_FROM}))::pg_catalog.int8, \
                (pg_catalog.count(*) FILTER (WHERE s.n OPERATOR(pg_catalog.>=) {MILLIS_FROM} \
                                              AND s.n OPERATOR(pg_catalog.<) {MICROS_FROM}))::pg_catalog.int8, \
                (pg_catalog.count(*) FILTER (WHERE s.n OPERATOR(pg_catalog.>=) {MICROS_FROM}))::pg_catalog.int8, \
                (pg_catalog.count(*) FILTER (WHERE s.r IS NOT NULL))::pg_catalog.int8, \
                (pg_catalog.count(*) FILTER (WHERE s.r IS NOT NULL \
                                             AND (s.e IS NULL OR s.r OPERATOR(pg_catalog.<>) s.e) \
                                             AND pg_catalog.length(s.t) OPERATOR(pg_catalog.>) 10))::pg_catalog.int8 \
         FROM (SELECT {reference} AS r, {east} AS e, {column} AS c, {} AS n, {} AS t FROM {rows}) s",
        unreadable(spec.resolved),
        number(spec.resolved),
        string(spec.resolved)
    );
    let keys = keys_sql(spec.resolved, &rows);
    let read = || {
        owner::as_table_owner(owner, &[(c"statement_timeout", "5s")], || {
            Spi::connect(|client| {
                let row = client.select(&counts, Some(1), &[])?.first();
                let count = |n: usize| -> Result<u64, pgrx::spi::Error> {
                    Ok(row.get::<i64>(n)?.unwrap_or(0).max(0) as u64)
                };
                let mut sample = Sample {
                    rows: count(1)?,
                    unreadable: count(2)?,
                    scales: [count(3)?, count(4)?, count(5)?],
                    keys: Vec::new(),
                    dated: count(6)?,
                    naive: count(7)?,
                };
                if let (Some(keys), true) = (&keys, sample.unreadable > 0) {
                    for key in client.select(keys, None, &[])? {
                        sample.keys.extend(key.get::<String>(1)?);
                    }
                }
                Ok::<_, pgrx::spi::Error>(sample)
            })
        })
    };
    match txn::in_subtransaction(read) {
        Ok(Ok(sample)) => Some(sample),
        Ok(Err(e)) => {
            debug1!("jsonb_ttl: no sample of {}: {e}", table.name);
            None
        }
        Err(e) => {
            debug1!("jsonb_ttl: no sample of {}: {}", table.name, e.message);
            None
        }
    }
}

/// Whether a sampled row (`s.r` its reference time, `s.c` its column) has a value at the path
/// that is no point in time: a missing key in a document, a text that is no date. A NULL in a
/// column of a date type is a row meant to be kept, not a mistake.
fn unreadable(resolved: &Resolved) -> &'static str {
    match resolved.kind {
        ColumnKind::Jsonb | ColumnKind::Json => "s.r IS NULL",
        ColumnKind::Text => "s.r IS NULL AND s.c IS NOT NULL",
        _ => "false",
    }
}

/// The absolute value of the number a row holds at the path, NULL when it holds none.
fn number(resolved: &Resolved) -> String {
    match resolved.kind {
        ColumnKind::Jsonb | ColumnKind::Json => {
            let value = reference::json_value(resolved, resolved.json_path.len());
            format!(
                "CASE WHEN pg_catalog.jsonb_typeof({value}) OPERATOR(pg_catalog.=) 'number'::pg_catalog.text \
                 THEN pg_catalog.abs(({value})::pg_catalog.numeric) END"
            )
        }
        ColumnKind::Number => format!(
            "pg_catalog.abs(({})::pg_catalog.numeric)",
            pgrx::spi::quote_identifier(&resolved.column)
        ),
        _ => "NULL::pg_catalog.numeric".to_string(),
    }
}

/// The string a row holds at the path, NULL when it holds none.
fn string(resolved: &Resolved) -> String {
    match resolved.kind {
        ColumnKind::Jsonb | ColumnKind::Json => {
            let value = reference::json_value(resolved, resolved.json_path.len());
            format!(
                "CASE WHEN pg_catalog.jsonb_typeof({value}) OPERATOR(pg_catalog.=) 'string'::pg_catalog.text \
                 THEN ({value}) OPERATOR(pg_catalog.#>>) '{{}}'::pg_catalog.text[] END"
            )
        }
        ColumnKind::Text => format!(
            "({})::pg_catalog.text",
            pgrx::spi::quote_identifier(&resolved.column)
        ),
        _ => "NULL::pg_catalog.text".to_string(),
    }
}

/// The statement listing the keys of the objects in which the path's last key is looked up
/// (`None` for a plain column).
fn keys_sql(resolved: &Resolved, rows: &str) -> Option<String> {
    let last = resolved.json_path.len().checked_sub(1)?;
    let parent = reference::json_value(resolved, last);
    Some(format!(
        "SELECT k.k FROM (SELECT {parent} AS p FROM {rows}) s \
         CROSS JOIN LATERAL pg_catalog.jsonb_object_keys(CASE WHEN pg_catalog.jsonb_typeof(s.p) \
              OPERATOR(pg_catalog.=) 'object'::pg_catalog.text THEN s.p END) k(k) \
         GROUP BY k.k ORDER BY pg_catalog.count(*) DESC, k.k LIMIT 20"
    ))
}
