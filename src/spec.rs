//! A TTL index as `ttl_index_create` is asked for it, validated: one check per option, each
//! failure a clear error with a SQLSTATE and a HINT, raised before anything is changed.

use crate::catalog::{self, TtlIndex};
use crate::error::raise;
use crate::extension::Extension;
use crate::filter::{self, Filter};
use crate::functions::numeric_unit_arg;
use crate::partitions;
use crate::table::{required, Table};
use jsonb_ttl_core::parse::NumericUnit;
use jsonb_ttl_core::path::{self, ColumnKind, PathErrorKind, Resolved};
use pgrx::datum::{DatumWithOid, Interval};
use pgrx::spi::{quote_identifier, quote_literal};
use pgrx::{AnyNumeric, PgSqlErrorCode};

/// The arguments of `ttl_index_create`, as SQL passed them.
pub(crate) struct Args<'a> {
    pub path: Option<&'a str>,
    pub expire_after: Option<Interval>,
    pub numeric_unit: Option<&'a str>,
    pub time_zone: Option<&'a str>,
    pub filter: Option<&'a str>,
    pub touch: Option<bool>,
    pub build: Option<bool>,
    pub hide_expired: Option<bool>,
    pub row_ttl_path: Option<&'a str>,
    pub drop_partitions: Option<&'a str>,
}

/// A TTL index to create, every option checked against its table.
pub(crate) struct IndexSpec<'a> {
    pub path: &'a str,
    pub resolved: Resolved,
    pub expire_after: Interval,
    pub unit: NumericUnit,
    /// The zone it is read in (see [`index_time_zone`]); always `None` on 0.1.0's catalog.
    pub zone: Option<String>,
    /// Whether the catalog has the `time_zone` column (not at 0.1.0's SQL).
    pub zoned_catalog: bool,
    pub filter: Option<Filter>,
    pub touch: bool,
    pub build: bool,
    pub hide_expired: bool,
    /// The per-row TTL field as given, and resolved.
    pub row_ttl: Option<(&'a str, Resolved)>,
    pub drop_partitions: Option<partitions::Mode>,
}

impl<'a> IndexSpec<'a> {
    /// Checks every argument, in the order they are documented.
    pub fn validate(ext: &Extension, table: &Table, args: Args<'a>) -> IndexSpec<'a> {
        let touch = args.touch.unwrap_or(false);
        let build = args.build.unwrap_or(true);
        let hide_expired = args.hide_expired.unwrap_or(false);
        let path = required(args.path, "path");
        let expire_after = check_expire_after(args.expire_after);
        let unit = numeric_unit_arg(required(args.numeric_unit, "numeric_unit"));
        let resolved = resolve_path(table, path);
        let filter = args.filter.map(|text| filter::analyze(table.oid, text));
        let row_ttl = args
            .row_ttl_path
            .map(|text| (text, row_ttl_field(table, text)));
        let drop_partitions = args.drop_partitions.and_then(partitions::Mode::from_arg);
        crate::citus::check_options(
            table.oid,
            &table.name,
            touch,
            hide_expired,
            drop_partitions.is_some(),
            table.partitioned,
        );
        let zoned_catalog = ext.has_time_zone();
        let zone = match zoned_catalog {
            true => index_time_zone(table, resolved.kind, &resolved.column, args.time_zone),
            false => None, // 0.1.0's SQL: timestamp columns read as UTC, as 0.1.0 did
        };
        IndexSpec {
            path,
            resolved,
            expire_after,
            unit,
            zone,
            zoned_catalog,
            filter,
            touch,
            build,
            hide_expired,
            row_ttl,
            drop_partitions,
        }
    }

    /// Whether `current` is this very TTL index (creating it again changes nothing).
    /// How this TTL index differs from `current`, the table's: one `option: current → given`
    /// for each option that differs.
    pub fn differences(&self, current: &TtlIndex) -> Vec<String> {
        let shown = |value: Option<&str>| value.map_or("none".to_string(), quote_literal);
        let mut differ = Vec::new();
        let mut differs = |name: &str, was: String, given: String| {
            differ.push(format!("{name}: {was} → {given}"));
        };
        if current.resolved != self.resolved {
            differs(
                "path",
                quote_literal(&current.path),
                quote_literal(self.path),
            );
        }
        if current.unit != self.unit {
            differs(
                "numeric_unit",
                shown(Some(current.unit.name())),
                shown(Some(self.unit.name())),
            );
        }
        if current.expire_after.as_micros() != self.expire_after.as_micros() {
            differs(
                "expire_after",
                current.expire_after.to_string(),
                self.expire_after.to_string(),
            );
        }
        if !same_zone(self.zone.as_deref(), current.time_zone.as_deref()) {
            differs(
                "time_zone",
                shown(current.time_zone.as_deref()),
                shown(self.zone.as_deref()),
            );
        }
        let filter = self.filter.as_ref().map(|f| f.sql.clone());
        if current.filter_sql != filter {
            let was = current
                .filter_sql
                .as_ref()
                .map_or("none", |_| "the current one");
            let given = self.filter.as_ref().map(|f| f.shown.as_str());
            differs("filter", was.to_string(), shown(given));
        }
        if current.touch != self.touch {
            differs("touch", current.touch.to_string(), self.touch.to_string());
        }
        if current.hide_expired != self.hide_expired {
            differs(
                "hide_expired",
                current.hide_expired.to_string(),
                self.hide_expired.to_string(),
            );
        }
        if current.row_ttl.as_ref().map(|r| &r.resolved) != self.row_ttl.as_ref().map(|r| &r.1) {
            differs(
                "row_ttl_path",
                shown(current.row_ttl.as_ref().map(|r| r.path.as_str())),
                shown(self.row_ttl.as_ref().map(|r| r.0)),
            );
        }
        if current.drop_partitions != self.drop_partitions {
            differs(
                "drop_partitions",
                shown(current.drop_partitions.map(|m| m.name())),
                shown(self.drop_partitions.map(|m| m.name())),
            );
        }
        differ
    }

    /// The catalog row of this TTL index on `table`, column by column: 0.1.0's catalog has
    /// none of the later columns, and 0.1.0's SQL passes no option.
    pub fn catalog_row(
        &self,
        table: &Table,
        index_name: String,
        row_ttl_index_name: Option<String>,
    ) -> Vec<(&'static str, DatumWithOid<'a>)> {
        let mut columns: Vec<(&str, DatumWithOid)> = vec![
            ("table_oid", table.oid.into()),
            ("column_name", self.resolved.column.clone().into()),
            ("json_path", self.resolved.json_path.clone().into()),
            ("path", self.path.into()),
            ("expire_after", self.expire_after.into()),
            ("numeric_unit", self.unit.name().into()),
            ("index_name", index_name.into()),
        ];
        if self.zoned_catalog {
            columns.push(("time_zone", self.zone.clone().into()));
        }
        if let Some(filter) = &self.filter {
            columns.push(("filter", filter.shown.clone().into()));
            columns.push(("filter_sql", filter.sql.clone().into()));
        }
        if self.touch {
            columns.push(("touch", true.into()));
        }
        if self.hide_expired {
            columns.push(("hide_expired", true.into()));
        }
        if let (Some((row_ttl_path, field)), Some(row_index)) = (&self.row_ttl, row_ttl_index_name)
        {
            columns.push(("row_ttl_path", (*row_ttl_path).into()));
            columns.push(("row_ttl_column", field.column.clone().into()));
            columns.push(("row_ttl_json_path", field.json_path.clone().into()));
            columns.push(("row_ttl_index_name", row_index.into()));
        }
        if let Some(mode) = self.drop_partitions {
            columns.push(("drop_partitions", mode.name().into()));
        }
        columns
    }
}

const EXPIRE_AFTER_HINT: &str = "expire_after must be a finite, non-negative interval or number \
     of seconds; 0 makes rows expire at the time they hold.";

pub(crate) fn check_expire_after(expire_after: Option<Interval>) -> Interval {
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
pub(crate) fn seconds(seconds: Option<AnyNumeric>) -> Interval {
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

/// The column (and keys inside it) that `path` leads to in `table`.
pub(crate) fn resolve_path(table: &Table, path: &str) -> Resolved {
    path::resolve(path, &catalog::table_columns(table.oid)).unwrap_or_else(|e| {
        let code = match e.kind {
            PathErrorKind::Syntax => PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            PathErrorKind::NoJsonbColumn => PgSqlErrorCode::ERRCODE_UNDEFINED_COLUMN,
            PathErrorKind::Ambiguous => PgSqlErrorCode::ERRCODE_AMBIGUOUS_COLUMN,
            PathErrorKind::WrongType => PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
        };
        raise(code, e.message, e.hint)
    })
}

/// The field `path` of a per-row TTL, resolved like a TTL index's path; it must hold a number.
pub(crate) fn row_ttl_field(table: &Table, path: &str) -> Resolved {
    const HINT: &str = "row_ttl_path names a field of a JSON document (or a numeric column) \
                        holding the row's TTL in seconds, -1 for never.";
    let resolved = path::resolve(path, &catalog::table_columns(table.oid)).unwrap_or_else(|e| {
        // the path's own hints name the column types a point in time may have: not this one's
        let hint = match e.kind {
            PathErrorKind::Syntax => e.hint,
            _ => HINT.to_string(),
        };
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("row_ttl_path: {}", e.message),
            hint,
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
            HINT,
        ),
    }
}

/// The zone stored with a TTL index of `table` on `kind` in `column` (see
/// [`crate::reference::reference_expr`]): a `timestamp` or `date` column is always read in one,
/// never guessed (see [`crate::zone`]); JSON strings without an offset are read as UTC unless a
/// zone is given; the other kinds hold absolute times and take none.
pub(crate) fn index_time_zone(
    table: &Table,
    kind: ColumnKind,
    column: &str,
    time_zone: Option<&str>,
) -> Option<String> {
    let named = |zone| crate::zone::column_zone(Some(zone), column, table.oid);
    match kind {
        ColumnKind::Timestamp | ColumnKind::Date => {
            Some(crate::zone::column_zone(time_zone, column, table.oid))
        }
        ColumnKind::Jsonb | ColumnKind::Json | ColumnKind::Text => time_zone.map(named),
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
    crate::zone::same_zone(a.unwrap_or("UTC"), b.unwrap_or("UTC"))
}

/// Checks that the TTL index of `table` on `reference` can drop whole partitions (see
/// [`partitions`]), or raises.
pub(crate) fn check_drop_partitions(
    table: &Table,
    reference: &str,
    resolved: &Resolved,
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

/// Raises that `table` already has a TTL index, `current`, other than the one asked for.
pub(crate) fn refuse_duplicate(table: &Table, current: &TtlIndex, differences: &[String]) -> ! {
    crate::error::raise_with_detail(
        PgSqlErrorCode::ERRCODE_DUPLICATE_OBJECT,
        format!(
            "table {} already has a TTL index on {} expiring after {}",
            table.name, current.path, current.expire_after
        ),
        format!("It differs in {}.", differences.join("; ")),
        format!(
            "A table has one TTL index. Change it with ttl_index_alter({}, …) ({}), or drop it \
             with ttl_index_drop({}) first.",
            quote_literal(&table.name),
            ALTERABLE,
            quote_literal(&table.name)
        ),
    )
}

/// What `ttl_index_alter` changes, as its arguments are named (sql/api.sql), for HINTs.
pub(crate) const ALTERABLE: &str = "expire_after, path, numeric_unit, row_ttl_path, time_zone, \
     filter, touch, hide_expired, drop_partitions, delete_window, batch_size, \
     max_removes_per_second, replication_origin, logical_message, archive_to";

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    /// The HINTs' list of what `ttl_index_alter` changes is its arguments, every one of them.
    #[pg_test]
    fn alterable_is_what_ttl_index_alter_takes() {
        let arguments = Spi::get_one::<String>(
            "SELECT pg_catalog.string_agg(a, ', ' ORDER BY a) \
             FROM pg_catalog.pg_proc p, pg_catalog.unnest(p.proargnames) a \
             WHERE p.proname = 'ttl_index_alter' AND p.pronargs > 2 AND a <> 'tbl'",
        )
        .expect("pg_proc is readable")
        .expect("ttl_index_alter exists");
        let mut listed: Vec<&str> = super::ALTERABLE.split(", ").collect();
        listed.sort();
        assert_eq!(listed.join(", "), arguments);
    }
}
