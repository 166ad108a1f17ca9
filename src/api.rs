//! `ttl_index_create` / `ttl_index_alter` / `ttl_index_drop` / `ttl_expire_now`.
//!
//! The documented signatures are SQL wrappers in sql/api.sql; the functions here do the work:
//! argument checks (each failure a clear error with a SQLSTATE and a HINT, before anything is
//! changed), the index DDL, and the catalog rows.

use crate::build::{drop_recorded_index, free_index_name, index_specs};
use crate::catalog::{self, Scope, TtlIndex};
use crate::error::raise;
use crate::extension::Extension;
use crate::functions::numeric_unit_arg;
use crate::{build, deleter, filter, gucs, hide, owner, partitions, touch};
use jsonb_ttl_core::path::{self, ColumnKind, PathErrorKind};
use pgrx::datum::Interval;
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;
use pgrx::spi::{quote_identifier, quote_literal};
use pgrx::{AnyNumeric, PgSqlErrorCode};

pub(crate) fn required<T>(value: Option<T>, name: &str) -> T {
    value.unwrap_or_else(|| {
        raise(
            PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            format!("{name} must not be NULL"),
            format!("Pass a value for {name}."),
        )
    })
}

const EXPIRE_AFTER_HINT: &str = "expire_after must be a finite, non-negative interval or number \
     of seconds; 0 makes rows expire at the time they hold.";

fn check_expire_after(expire_after: Option<Interval>) -> Interval {
    let expire_after = required(expire_after, "expire_after");
    if expire_after.as_micros() < 0 {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "expire_after must not be negative",
            EXPIRE_AFTER_HINT,
        );
    }
    expire_after
}

/// A number of seconds as an interval, for the numeric overloads.
#[pg_extern(
    immutable,
    parallel_safe,
    name = "_ttl_seconds",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_seconds(seconds: Option<AnyNumeric>) -> Interval {
    let seconds = required(seconds, "expire_after");
    let text = seconds.to_string();
    let value: f64 = text.parse().unwrap_or(f64::NAN);
    if !value.is_finite() || value < 0.0 || value * 1e6 >= i64::MAX as f64 {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            match text.len() {
                0..=40 => format!(
                    "expire_after must be a finite, non-negative number of seconds, not {text}"
                ),
                _ => "expire_after is too large".to_string(),
            },
            EXPIRE_AFTER_HINT,
        );
    }
    Interval::from_micros((value * 1e6).round() as i64)
}

/// A table the caller may manage a TTL index on.
pub(crate) struct Table {
    oid: Oid,
    partitioned: bool,
    /// `schema.table`, quoted, for messages.
    name: String,
    schema: String,
    relname: String,
}

/// Checks that `tbl` is an ordinary table the caller owns.
pub(crate) fn owned_table(tbl: Option<Oid>) -> Table {
    let oid = required(tbl, "tbl");
    let row = Spi::get_three_with_args::<String, Oid, String>(
        "SELECT c.relkind::pg_catalog.text OPERATOR(pg_catalog.||) c.relpersistence::pg_catalog.text, \
                c.relowner, n.nspname::pg_catalog.text \
         FROM pg_catalog.pg_class c \
         JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
         WHERE c.oid OPERATOR(pg_catalog.=) $1",
        &[oid.into()],
    );
    let (kind, relowner, schema) = match row {
        Ok((Some(kind), Some(relowner), Some(schema))) => (kind, relowner, schema),
        _ => raise(
            PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
            format!("relation with OID {} does not exist", oid.to_u32()),
            "Pass the name of an existing table.",
        ),
    };
    // relkind, then relpersistence ('p'ermanent, 'u'nlogged, 't'emporary)
    let (kind, persistence) = kind.split_at(1);
    let relname = Spi::get_one_with_args::<String>(
        "SELECT relname::pg_catalog.text FROM pg_catalog.pg_class \
         WHERE oid OPERATOR(pg_catalog.=) $1",
        &[oid.into()],
    )
    .ok()
    .flatten()
    .unwrap_or_default();
    let name = format!(
        "{}.{}",
        quote_identifier(&schema),
        quote_identifier(&relname)
    );
    match kind {
        "r" => {}
        "p" => {}
        other => {
            let what = match other {
                "v" => "a view",
                "m" => "a materialized view",
                "f" => "a foreign table",
                "S" => "a sequence",
                "i" | "I" => "an index",
                "c" => "a composite type",
                "t" => "a TOAST table",
                _ => "not a table",
            };
            raise(
                PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
                format!("{name} is {what}, not a table"),
                "A TTL index belongs to an ordinary table.",
            )
        }
    }
    if persistence == "t" {
        raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            // (its schema, pg_temp_N, says nothing to the caller)
            format!("{} is a temporary table", quote_identifier(&relname)),
            "The background worker cannot see another session's temporary tables: \
             delete from a temporary table yourself, or give the TTL index to a permanent one.",
        );
    }
    if !owner::has_privileges_of(relowner) {
        raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("must be owner of table {name}"),
            "Only the table's owner (or a member of the owning role) manages its TTL index.",
        );
    }
    Table {
        oid,
        partitioned: kind == "p",
        name,
        schema,
        relname,
    }
}

pub(crate) fn existing(ext: &Extension, table: &Table) -> Option<TtlIndex> {
    catalog::load(ext, Some(table.oid), Scope::Entries)
        .into_iter()
        .next()
}

pub(crate) fn no_ttl_index(table: &Table) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
        format!("table {} has no TTL index", table.name),
        "Create one with ttl_index_create().",
    )
}

/// A free index name `<table><suffix>[N]` in the table's schema, within NAMEDATALEN, and none
/// of `also_taken`.
fn choose_index_name(table: &Table, suffix: &str, also_taken: &[String]) -> String {
    let taken: Vec<(Oid, String)> = also_taken
        .iter()
        .map(|name| {
            let qualified = format!(
                "{}.{}",
                quote_identifier(&table.schema),
                quote_identifier(name)
            );
            (table.oid, qualified)
        })
        .collect();
    free_index_name(&table.schema, &table.relname, suffix, &taken)
}

/// Builds the index `name` of `table` on `expression`, partial on `predicate` (see
/// [`index_specs`]). A partitioned table's index covers every
/// partition, now and future; a plain table's stays off legacy inheritance children, which are
/// not part of this TTL index.
fn build_index(table: &Table, name: &str, expression: &str, predicate: &str) {
    let only = if table.partitioned { "" } else { "ONLY" };
    Spi::run(&format!(
        "CREATE INDEX {} ON {only} {}.{} ({expression}) WHERE {predicate}",
        quote_identifier(name),
        quote_identifier(&table.schema),
        quote_identifier(&table.relname),
    ))
    .unwrap_or_else(|e| error!("jsonb_ttl: CREATE INDEX failed: {e}"));
}

/// Checks that the TTL index of `table` on `reference` can drop whole partitions (see
/// [`partitions`]), or raises.
fn check_drop_partitions(
    table: &Table,
    reference: &str,
    resolved: &jsonb_ttl_core::path::Resolved,
    filtered: bool,
    row_ttl: bool,
) {
    if filtered || row_ttl {
        raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            "drop_partitions does not go with a filter or a per-row TTL field",
            "An expired partition may hold rows the filter or their own TTL keep: it cannot be \
             dropped whole. Leave drop_partitions out to delete rows one by one.",
        );
    }
    partitions::check_partitioning(
        table.oid,
        &table.name,
        reference,
        resolved.kind,
        &resolved.column,
    );
}

/// Turns dropping whole partitions on ('drop', 'detach') or off ('off'; see [`partitions`]).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_set_drop_partitions",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_set_drop_partitions(tbl: Option<Oid>, mode: Option<&str>) {
    let table = owned_table(tbl);
    let mode = partitions::Mode::from_arg(required(mode, "drop_partitions"));
    let ext = Extension::current();
    let Some(current) = existing(&ext, &table) else {
        no_ttl_index(&table);
    };
    if mode.is_some() {
        let reference = current
            .base_reference(&ext)
            .unwrap_or_else(|e| error!("jsonb_ttl: {e}"));
        check_drop_partitions(
            &table,
            &reference,
            &current.resolved,
            current.filter_sql.is_some(),
            current.row_ttl.is_some(),
        );
    }
    set_column(
        &ext,
        &table,
        "drop_partitions",
        mode.map(partitions::Mode::name).into(),
    );
}

/// The field `path` of a per-row TTL, resolved like a TTL index's path; it must hold a number.
fn row_ttl_field(table: &Table, path: &str) -> jsonb_ttl_core::path::Resolved {
    let resolved = path::resolve(path, &catalog::table_columns(table.oid)).unwrap_or_else(|e| {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("row_ttl_path: {}", e.message),
            e.hint,
        )
    });
    match resolved.kind {
        ColumnKind::Jsonb | ColumnKind::Json | ColumnKind::Number => resolved,
        _ => raise(
            PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
            format!(
                "row_ttl_path {} leads to column {}, which holds no number of seconds",
                quote_literal(path),
                quote_identifier(&resolved.column)
            ),
            "row_ttl_path names a field of a JSON document (or a numeric column) holding the \
             row's TTL in seconds, -1 for never.",
        ),
    }
}

fn warn_unless_preloaded() {
    if !crate::preload::preloaded() {
        pgrx::pg_sys::panic::ErrorReport::new(
            PgSqlErrorCode::ERRCODE_WARNING,
            "jsonb_ttl is not in shared_preload_libraries: no background worker will remove expired rows",
            "jsonb_ttl",
        )
        .set_hint("Add jsonb_ttl to shared_preload_libraries and restart; until then only ttl_expire_now() removes rows.")
        .report(PgLogLevel::WARNING);
    }
}

/// The zone a `timestamp` or `date` column is read in: `time_zone` when given (a name
/// PostgreSQL's time zone library accepts), else the session's TimeZone.
fn column_time_zone(time_zone: Option<&str>) -> String {
    match time_zone {
        Some(zone) => {
            crate::functions::time_zone_arg(zone); // raises on an unknown zone
            zone.to_string()
        }
        None => unsafe {
            std::ffi::CStr::from_ptr(pgrx::pg_sys::pg_get_timezone_name(
                pgrx::pg_sys::session_timezone,
            ))
        }
        .to_string_lossy()
        .into_owned(),
    }
}

/// The zone stored with a TTL index on `kind` (see [`catalog::reference_expr`]): a `timestamp`
/// or `date` column is always read in one; JSON strings without an offset are read as UTC
/// unless a zone is given; the other kinds hold absolute times and take none.
fn index_time_zone(kind: ColumnKind, time_zone: Option<&str>) -> Option<String> {
    match kind {
        ColumnKind::Timestamp | ColumnKind::Date => Some(column_time_zone(time_zone)),
        ColumnKind::Jsonb | ColumnKind::Json | ColumnKind::Text => {
            time_zone.map(|zone| column_time_zone(Some(zone)))
        }
        _ => {
            if time_zone.is_some() {
                raise(
                    PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                    "time_zone applies to a timestamp or date column, or to JSON strings",
                    "A timestamptz or numeric column holds absolute times.",
                );
            }
            None
        }
    }
}

/// Two zones of a TTL index mean the same reading (`None` is UTC).
fn same_zone(a: Option<&str>, b: Option<&str>) -> bool {
    a.unwrap_or("UTC") == b.unwrap_or("UTC")
}

/// `ttl_index_create` as 0.1.0's SQL calls it (no time_zone): the 0.2.0 library serves it
/// until `ALTER EXTENSION jsonb_ttl UPDATE` runs.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_create",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_create(
    tbl: Option<Oid>,
    path: Option<&str>,
    expire_after: Option<Interval>,
    numeric_unit: Option<&str>,
) -> bool {
    ttl_index_create_in_zone(tbl, path, expire_after, numeric_unit, None)
}

#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_create",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_create_in_zone(
    tbl: Option<Oid>,
    path: Option<&str>,
    expire_after: Option<Interval>,
    numeric_unit: Option<&str>,
    time_zone: Option<&str>,
) -> bool {
    ttl_index_create_with_options(
        tbl,
        path,
        expire_after,
        numeric_unit,
        time_zone,
        None,
        None,
        None,
        None,
        None,
        None,
    )
}

/// `ttl_index_create` with every option (sql/api.sql gives it its documented signature, with
/// names and defaults: one argument per option is the SQL face).
#[allow(clippy::too_many_arguments)]
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_create",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_create_with_options(
    tbl: Option<Oid>,
    path: Option<&str>,
    expire_after: Option<Interval>,
    numeric_unit: Option<&str>,
    time_zone: Option<&str>,
    filter: Option<&str>,
    touch: Option<bool>,
    build: Option<bool>,
    hide_expired: Option<bool>,
    row_ttl_path: Option<&str>,
    drop_partitions: Option<&str>,
) -> bool {
    let table = owned_table(tbl);
    let touch = touch.unwrap_or(false);
    let build = build.unwrap_or(true);
    let hide_expired = hide_expired.unwrap_or(false);
    let path = required(path, "path");
    let expire_after = check_expire_after(expire_after);
    let unit = numeric_unit_arg(required(numeric_unit, "numeric_unit"));
    let resolved = path::resolve(path, &catalog::table_columns(table.oid)).unwrap_or_else(|e| {
        let code = match e.kind {
            PathErrorKind::Syntax => PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            PathErrorKind::NoJsonbColumn => PgSqlErrorCode::ERRCODE_UNDEFINED_COLUMN,
            PathErrorKind::Ambiguous => PgSqlErrorCode::ERRCODE_AMBIGUOUS_COLUMN,
            PathErrorKind::WrongType => PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
        };
        raise(code, e.message, e.hint)
    });
    let filter = filter.map(|text| filter::analyze(table.oid, text));
    let row_ttl = row_ttl_path.map(|text| (text, row_ttl_field(&table, text)));
    let drop_partitions = drop_partitions.and_then(partitions::Mode::from_arg);
    let ext = Extension::current();
    let zoned_catalog = ext.has_time_zone();
    let zone = match zoned_catalog {
        true => index_time_zone(resolved.kind, time_zone),
        false => None, // 0.1.0's SQL: timestamp columns read as UTC, as 0.1.0 did
    };

    if let Some(current) = existing(&ext, &table) {
        let same = current.resolved == resolved
            && current.unit == unit
            && current.expire_after.as_micros() == expire_after.as_micros()
            && same_zone(zone.as_deref(), current.time_zone.as_deref())
            && current.filter_sql == filter.as_ref().map(|f| f.sql.clone())
            && current.touch == touch
            && current.hide_expired == hide_expired
            && current.row_ttl.as_ref().map(|r| &r.resolved) == row_ttl.as_ref().map(|r| &r.1)
            && current.drop_partitions == drop_partitions;
        if same {
            return false;
        }
        raise(
            PgSqlErrorCode::ERRCODE_DUPLICATE_OBJECT,
            format!(
                "table {} already has a TTL index on {} expiring after {}",
                table.name, current.path, current.expire_after
            ),
            format!(
                "A table has one TTL index. Change its expiry with ttl_index_alter({}, …), \
                 or drop it with ttl_index_drop({}) first.",
                quote_literal(&table.name),
                quote_literal(&table.name)
            ),
        );
    }

    if drop_partitions.is_some() {
        let reference = catalog::reference_expr(&ext, &resolved, unit, zone.as_deref())
            .unwrap_or_else(|e| error!("jsonb_ttl: {e}"));
        check_drop_partitions(
            &table,
            &reference,
            &resolved,
            filter.is_some(),
            row_ttl.is_some(),
        );
    }
    let index_name = choose_index_name(&table, "_ttl_idx", &[]);
    let row_ttl_index_name = row_ttl
        .as_ref()
        .map(|_| choose_index_name(&table, "_row_ttl_idx", std::slice::from_ref(&index_name)));

    // the catalog row: 0.1.0's catalog has none of the later columns, and 0.1.0's SQL passes
    // no option
    let mut columns: Vec<(&str, pgrx::datum::DatumWithOid)> = vec![
        ("table_oid", table.oid.into()),
        ("column_name", resolved.column.clone().into()),
        ("json_path", resolved.json_path.clone().into()),
        ("path", path.into()),
        ("expire_after", expire_after.into()),
        ("numeric_unit", unit.name().into()),
        ("index_name", index_name.into()),
    ];
    if zoned_catalog {
        columns.push(("time_zone", zone.into()));
    }
    if let Some(filter) = &filter {
        columns.push(("filter", filter.shown.clone().into()));
        columns.push(("filter_sql", filter.sql.clone().into()));
    }
    if touch {
        columns.push(("touch", true.into()));
    }
    if hide_expired {
        columns.push(("hide_expired", true.into()));
    }
    if let (Some((row_ttl_path, field)), Some(row_index)) = (&row_ttl, &row_ttl_index_name) {
        columns.push(("row_ttl_path", (*row_ttl_path).into()));
        columns.push(("row_ttl_column", field.column.clone().into()));
        columns.push(("row_ttl_json_path", field.json_path.clone().into()));
        columns.push(("row_ttl_index_name", row_index.clone().into()));
    }
    if let Some(mode) = drop_partitions {
        columns.push(("drop_partitions", mode.name().into()));
    }
    let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
    let values: Vec<String> = (1..=columns.len()).map(|n| format!("${n}")).collect();
    let args: Vec<pgrx::datum::DatumWithOid> = columns.into_iter().map(|(_, v)| v).collect();
    owner::as_catalog_owner(ext.owner(), || {
        Spi::run_with_args(
            &format!(
                "INSERT INTO {ext}.ttl_index ({}) VALUES ({})",
                names.join(", "),
                values.join(", ")
            ),
            &args,
        )
    })
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot record the TTL index: {e}"));
    let entry = || existing(&ext, &table).expect("the TTL index is recorded");
    // the index (and the per-row TTL one): adopted when it exists, else built unless not asked
    for (catalog_column, name, expression, predicate) in index_specs(&ext, &entry()) {
        match build::adoptable(table.oid, &expression, &predicate) {
            Some(adopted) => {
                notice!(
                    "jsonb_ttl: index {adopted} is the {} of {}: adopted, not built again",
                    match catalog_column {
                        "index_name" => "TTL index",
                        _ => "per-row TTL index",
                    },
                    table.name
                );
                set_column(&ext, &table, catalog_column, adopted.into());
            }
            None if build => build_index(&table, &name, &expression, &predicate),
            None => {}
        }
    }
    build::track_indexes(&ext, table.oid);
    if touch {
        touch::install(&ext, &entry());
    }
    if hide_expired {
        let enabled_here = hide::install(&ext, &entry());
        set_column(
            &ext,
            &table,
            "hide_enabled_row_security",
            enabled_here.into(),
        );
    }
    warn_unless_preloaded();
    true
}

#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_alter",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_alter(tbl: Option<Oid>, expire_after: Option<Interval>) {
    let table = owned_table(tbl);
    let expire_after = check_expire_after(expire_after);
    let ext = Extension::current();
    if existing(&ext, &table).is_none() {
        no_ttl_index(&table);
    }
    set_column(&ext, &table, "expire_after", expire_after.into());
    let current = existing(&ext, &table).expect("the TTL index is recorded");
    if current.hide_expired {
        hide::refresh(&ext, &current);
    }
}

/// Sets `column` of the catalog entry of `table` to `value`, as the catalog's owner.
fn set_column(ext: &Extension, table: &Table, column: &str, value: pgrx::datum::DatumWithOid) {
    owner::as_catalog_owner(ext.owner(), || {
        Spi::run_with_args(
            &format!(
                "UPDATE {ext}.ttl_index SET {column} = $2 \
                 WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1"
            ),
            &[table.oid.into(), value],
        )
    })
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot update the TTL index: {e}"));
}

/// Changes the zone a `timestamp` or `date` column is read in. The zone is part of the index
/// expression, so the TTL index is rebuilt: a new index is built beside the old one (CREATE
/// INDEX: a SHARE lock, so writes to the table wait for the build), the catalog points at it,
/// the old one is dropped and the new one takes its name (ACCESS EXCLUSIVE, for an instant).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_set_time_zone",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_set_time_zone(tbl: Option<Oid>, time_zone: Option<&str>) {
    let table = owned_table(tbl);
    let time_zone = required(time_zone, "time_zone");
    let ext = Extension::current();
    let Some(current) = existing(&ext, &table) else {
        no_ttl_index(&table);
    };
    let Some(zone) = index_time_zone(current.resolved.kind, Some(time_zone)) else {
        unreachable!("index_time_zone raises for a kind without a zone")
    };
    if current.time_zone.as_deref() == Some(zone.as_str()) {
        return;
    }
    // Each index is built again beside the old one. The catalog follows the new index first, so
    // that dropping the old one (which the sql_drop event trigger watches) keeps the entry,
    // then takes the old name back with it.
    let rezoned = TtlIndex {
        time_zone: Some(zone.clone()),
        ..current
    };
    if rezoned.drop_partitions.is_some() {
        // the partitions are bounded by the old reference: refused unless still the same
        let reference = rezoned
            .base_reference(&ext)
            .unwrap_or_else(|e| error!("jsonb_ttl: {e}"));
        check_drop_partitions(&table, &reference, &rezoned.resolved, false, false);
    }
    build::track_indexes(&ext, table.oid);
    set_column(&ext, &table, "time_zone", zone.into());
    let schema = quote_identifier(&table.schema);
    for (column, name, expression, predicate) in index_specs(&ext, &rezoned) {
        let Some(old) = build::recorded_index(&ext, table.oid, column) else {
            continue; // not built yet (build => false): build_sql now gives the new zone's
        };
        let building = choose_index_name(&table, "_ttl_idx", &[]);
        build_index(&table, &building, &expression, &predicate);
        set_column(&ext, &table, column, building.clone().into());
        // the new index is the recorded one before the old one goes (the sql_drop event
        // trigger removes the entry of a TTL index whose recorded index is dropped)
        build::track_indexes(&ext, table.oid);
        build::drop_index_of(table.oid, old);
        Spi::run(&format!(
            "ALTER INDEX {schema}.{} RENAME TO {}",
            quote_identifier(&building),
            quote_identifier(&name)
        ))
        .unwrap_or_else(|e| error!("jsonb_ttl: ALTER INDEX failed: {e}"));
        set_column(&ext, &table, column, name.into());
    }
    let entry = existing(&ext, &table).expect("the TTL index is recorded");
    if entry.touch {
        touch::install(&ext, &entry);
    }
    if entry.hide_expired {
        hide::refresh(&ext, &entry);
    }
}

/// Turns touch on or off (see [`touch`]): the trigger is created or dropped, the index stays.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_set_touch",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_set_touch(tbl: Option<Oid>, on: Option<bool>) {
    let table = owned_table(tbl);
    let on = required(on, "touch");
    let ext = Extension::current();
    let Some(current) = existing(&ext, &table) else {
        no_ttl_index(&table);
    };
    set_column(&ext, &table, "touch", on.into());
    match on {
        true => touch::install(&ext, &current),
        false => touch::remove(&ext, &current),
    }
}

/// Turns hide_expired on or off (see [`hide`]): the policies are created or dropped.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_set_hide_expired",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_set_hide_expired(tbl: Option<Oid>, on: Option<bool>) {
    let table = owned_table(tbl);
    let on = required(on, "hide_expired");
    let ext = Extension::current();
    let Some(current) = existing(&ext, &table) else {
        no_ttl_index(&table);
    };
    if current.hide_expired == on {
        return;
    }
    set_column(&ext, &table, "hide_expired", on.into());
    let enabled_here = match on {
        true => hide::install(&ext, &current),
        false => {
            hide::remove(&current, current.hide_enabled_row_security);
            false
        }
    };
    set_column(
        &ext,
        &table,
        "hide_enabled_row_security",
        enabled_here.into(),
    );
}

#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_index_drop",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_drop(tbl: Option<Oid>) -> bool {
    let table = owned_table(tbl);
    let ext = Extension::current();
    let Some(current) = existing(&ext, &table) else {
        no_ttl_index(&table);
    };
    touch::remove(&ext, &current);
    if current.hide_expired {
        hide::remove(&current, current.hide_enabled_row_security);
    }
    build::track_indexes(&ext, table.oid);
    if current.row_ttl.is_some() {
        drop_recorded_index(&ext, table.oid, "row_ttl_index_name");
    }
    drop_recorded_index(&ext, table.oid, "index_name");
    // The sql_drop event trigger has removed the entry; make sure even if it was disabled.
    owner::as_catalog_owner(ext.owner(), || {
        Spi::run_with_args(
            &format!(
                "DELETE FROM {ext}.ttl_index \
                 WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1"
            ),
            &[table.oid.into()],
        )
    })
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot remove the TTL index entry: {e}"));
    true
}

#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_expire_now",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_expire_now(tbl: Option<Oid>, max_rows: Option<i64>) -> i64 {
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
            if existing(&ext, &table).is_none() {
                no_ttl_index(&table);
            }
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
