//! The catalog of TTL indexes (`ttl_index`, see sql/catalog.sql), the SQL expression of a
//! reference time, and lookups. Every name that reaches SQL text is quoted here.

use crate::error::raise;
use crate::extension::Extension;
use crate::reference;
use jsonb_ttl_core::parse::NumericUnit;
use jsonb_ttl_core::path::{Column, ColumnKind, Resolved};
use pgrx::datum::Interval;
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use pgrx::spi::quote_identifier;

/// One TTL index, as the catalog and the system catalogs describe it now; loaded as a target
/// (see [`Scope`]), one per leaf partition of a partitioned table.
#[derive(Clone, Debug)]
pub struct TtlIndex {
    /// The table rows are deleted from (a leaf partition, or the table itself).
    pub table: Oid,
    /// The table the TTL index was created on (the catalog's key).
    pub root: Oid,
    /// `schema.table`, both quoted.
    pub qualified_table: String,
    /// The table's name as regclass prints it, for messages.
    pub display_name: String,
    pub owner: Oid,
    pub resolved: Resolved,
    /// The number of `resolved.column` in `table` (0 when it is gone): names change, it stays.
    pub attnum: i16,
    pub path: String,
    pub expire_after: Interval,
    pub unit: NumericUnit,
    pub index_name: String,
    /// The zone a `timestamp` or `date` column, or a JSON string without an offset, is read
    /// in; `None` means UTC (see [`reference::reference_expr`]).
    pub time_zone: Option<String>,
    /// A foreign table (a partition of a partitioned table): never deleted from, since its
    /// rows live behind a foreign data wrapper.
    pub foreign: bool,
    /// Whether `table` has the TTL index, valid and ready: a restore creates the index after
    /// the catalog row, and a failed `CREATE INDEX CONCURRENTLY` leaves it invalid. The worker
    /// never purges a table without it (it would scan the whole table, every pass).
    pub index_ready: bool,
    /// Paused by the safety brake (see [`crate::brake`]) until `ttl_index_resume()`.
    pub paused: bool,
    /// Released by `ttl_index_resume()` until a visit drains the table.
    pub brake_released: bool,
    /// Whether the catalog has the brake's columns (a database still at 0.1.0's SQL has not).
    pub brake_available: bool,
    /// Only rows this predicate holds for expire (see [`crate::filter`]): its qualified form.
    pub filter_sql: Option<String>,
    /// The reference attribute is kept at the time of the last write (see [`crate::touch`]).
    pub touch: bool,
    /// Expired rows are hidden by a row security policy (see [`crate::hide`]).
    pub hide_expired: bool,
    /// ... and row security was enabled for it, to be disabled with it.
    pub hide_enabled_row_security: bool,
    /// A per-row TTL field (see [`crate::row_ttl`]).
    pub row_ttl: Option<RowTtl>,
    /// Which rows of the table this target purges.
    pub part: Part,
    /// Expired partitions are dropped or detached whole (see [`crate::partitions`]).
    pub drop_partitions: Option<PartitionMode>,
}

/// What the worker does with an expired partition (see [`crate::partitions`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionMode {
    Drop,
    Detach,
}

impl PartitionMode {
    /// `drop_partitions` as given: `'drop'` (or `'true'`, `'on'`), `'detach'`, or `'off'` (or
    /// `'false'`, `'none'`: rows are deleted one by one, the default).
    pub fn from_arg(arg: &str) -> Option<PartitionMode> {
        match arg.trim().to_ascii_lowercase().as_str() {
            "drop" | "true" | "on" | "yes" => Some(PartitionMode::Drop),
            "detach" => Some(PartitionMode::Detach),
            "off" | "false" | "no" | "none" => None,
            _ => raise(
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("drop_partitions must be 'drop', 'detach' or 'off', not {arg:?}"),
                "'drop' drops an expired partition, 'detach' detaches it (to archive it), 'off' \
                 deletes rows one by one.",
            ),
        }
    }

    /// As the catalog stores it.
    pub fn from_name(name: &str) -> Option<PartitionMode> {
        match name {
            "drop" => Some(PartitionMode::Drop),
            "detach" => Some(PartitionMode::Detach),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PartitionMode::Drop => "drop",
            PartitionMode::Detach => "detach",
        }
    }
}

/// A per-row TTL field: where it is, and the index over the rows that have one.
#[derive(Clone, Debug)]
pub struct RowTtl {
    pub path: String,
    pub resolved: Resolved,
    pub index_name: String,
    /// Whether `index_name` is valid and ready on this target's table.
    pub index_ready: bool,
}

/// Which rows of a table a target purges: with a per-row TTL field, two targets share the
/// table (see [`crate::row_ttl`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// Every row: no per-row TTL field (and every catalog entry, `Scope::Entries`).
    Whole,
    /// The rows without a TTL of their own, through the TTL index itself.
    FallsBack,
    /// The rows with a TTL of their own, through the per-row index, keyed on their expiry.
    OwnTtl,
}

impl TtlIndex {
    /// What the worker keys its prepared statements and brake checks by: the table, and the
    /// part of its rows this target purges.
    pub fn target(&self) -> (Oid, Part) {
        (self.table, self.part)
    }

    /// The SQL expression of this TTL index's reference time (see [`reference::reference_expr`]); for
    /// the rows with a TTL of their own, their expiry time (their `expire_after` is 0).
    pub fn reference(&self, ext: &Extension) -> Result<String, String> {
        let reference = self.base_reference(ext)?;
        match (&self.row_ttl, self.part) {
            (Some(row_ttl), Part::OwnTtl) => Ok(crate::row_ttl::expiry_expr(
                ext,
                &reference,
                &crate::row_ttl::seconds_expr(ext, &row_ttl.resolved)?,
            )),
            _ => Ok(reference),
        }
    }

    /// The reference time at the path, whatever the part.
    pub fn base_reference(&self, ext: &Extension) -> Result<String, String> {
        reference::reference_expr(ext, &self.resolved, self.unit, self.time_zone.as_deref())
    }

    /// The predicate that keeps the rows with a TTL of their own out of the rows that fall
    /// back to `expire_after`, for that part (`" AND …"`), else nothing.
    fn falls_back(&self, ext: &Extension) -> String {
        match (&self.row_ttl, self.part) {
            // When the field can no longer be read (its column dropped or retyped), no row falls
            // back: `AND false` deletes nothing (rows with a TTL of their own, -1 included, must
            // never go by expire_after), and the other part reports the error.
            (Some(row_ttl), Part::FallsBack) => {
                crate::row_ttl::seconds_expr(ext, &row_ttl.resolved)
                    .map_or(" AND false".to_string(), |seconds| {
                        format!(" AND {}", crate::row_ttl::falls_back(&seconds))
                    })
            }
            _ => String::new(),
        }
    }

    /// Whether a row is expired, with the reference time `reference` (see
    /// [`reference::expired_condition`]), this TTL index's filter, and for the rows that fall back to
    /// `expire_after`, that they do.
    pub fn expired(&self, ext: &Extension, reference: &str) -> String {
        self.expired_after(ext, reference, "$1")
    }

    /// [`TtlIndex::expired`] with `expire_after` given as the SQL expression `expire_after`.
    pub fn expired_after(&self, ext: &Extension, reference: &str, expire_after: &str) -> String {
        format!(
            "{}{}",
            reference::expired_condition(reference, self.filter_sql.as_deref(), expire_after),
            self.falls_back(ext)
        )
    }

    /// Whether a row's `reference` is before the SQL expression `cutoff` (which says when
    /// rows expire: `ttl_expire_preview`'s `at - expire_after`), with the filter, and for the
    /// rows that fall back to `expire_after`, that they do.
    pub fn before(&self, ext: &Extension, reference: &str, cutoff: &str) -> String {
        let filter = self
            .filter_sql
            .as_ref()
            .map_or(String::new(), |filter| format!(" AND {filter}"));
        format!(
            "{reference} OPERATOR(pg_catalog.<) {cutoff}{filter}{}",
            self.falls_back(ext)
        )
    }

    /// The predicate of this target's index (see [`reference::index_predicate`]).
    pub fn predicate(&self, ext: &Extension, reference: &str) -> String {
        format!(
            "{}{}",
            reference::index_predicate(reference, self.filter_sql.as_deref()),
            self.falls_back(ext)
        )
    }

    /// The targets of this entry: itself, or with a per-row TTL field its two parts (the
    /// second one keyed on the expiry time, through its own index, expire_after 0).
    pub(crate) fn parts(self) -> Vec<TtlIndex> {
        let Some(row_ttl) = self.row_ttl.clone() else {
            return vec![self];
        };
        let own = TtlIndex {
            part: Part::OwnTtl,
            index_name: row_ttl.index_name.clone(),
            index_ready: row_ttl.index_ready,
            expire_after: Interval::from_micros(0),
            ..self.clone()
        };
        vec![
            TtlIndex {
                part: Part::FallsBack,
                ..self
            },
            own,
        ]
    }
}

/// What a column of type `type_oid` can be to a TTL index.
pub fn kind_of_type(type_oid: Oid) -> ColumnKind {
    match type_oid {
        pg_sys::JSONBOID => ColumnKind::Jsonb,
        pg_sys::JSONOID => ColumnKind::Json,
        pg_sys::TEXTOID | pg_sys::VARCHAROID | pg_sys::BPCHAROID => ColumnKind::Text,
        pg_sys::TIMESTAMPTZOID => ColumnKind::Timestamptz,
        pg_sys::TIMESTAMPOID => ColumnKind::Timestamp,
        pg_sys::DATEOID => ColumnKind::Date,
        pg_sys::INT2OID
        | pg_sys::INT4OID
        | pg_sys::INT8OID
        | pg_sys::NUMERICOID
        | pg_sys::FLOAT4OID
        | pg_sys::FLOAT8OID => ColumnKind::Number,
        _ => ColumnKind::Other,
    }
}

/// The live columns of a table.
pub fn table_columns(table: Oid) -> Vec<Column> {
    Spi::connect(|client| {
        client
            .select(
                "SELECT attname::pg_catalog.text, atttypid, \
                        pg_catalog.format_type(atttypid, atttypmod) \
                 FROM pg_catalog.pg_attribute \
                 WHERE attrelid OPERATOR(pg_catalog.=) $1 AND attnum OPERATOR(pg_catalog.>) 0 \
                   AND NOT attisdropped ORDER BY attnum",
                None,
                &[table.into()],
            )
            .expect("pg_attribute is readable")
            .map(|row| Column {
                name: row.get::<String>(1).ok().flatten().unwrap_or_default(),
                kind: kind_of_type(row.get::<Oid>(2).ok().flatten().unwrap_or_default()),
                type_name: row.get::<String>(3).ok().flatten().unwrap_or_default(),
            })
            .collect()
    })
}

/// `index` with the names its table and column have now, from the system caches; `None` when
/// the table is gone. Called holding a lock on the table, so that a concurrent ALTER TABLE …
/// RENAME (or SET SCHEMA, RENAME COLUMN) either committed before, and shows here, or waits.
pub fn with_current_names(index: &TtlIndex) -> Option<TtlIndex> {
    let text = |name: *mut std::ffi::c_char| {
        (!name.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy())
    };
    unsafe {
        let table = text(pg_sys::get_rel_name(index.table))?;
        let schema = text(pg_sys::get_namespace_name(pg_sys::get_rel_namespace(
            index.table,
        )))?;
        let mut current = index.clone();
        current.qualified_table = format!(
            "{}.{}",
            quote_identifier(schema.as_ref()),
            quote_identifier(table.as_ref())
        );
        if index.attnum > 0 {
            if let Some(column) = text(pg_sys::get_attname(index.table, index.attnum, true)) {
                current.resolved.column = column.into_owned();
            }
        }
        Some(current)
    }
}

/// Whether `table` is (still) a partition, at any depth, of `root`.
pub fn is_partition_of(table: Oid, root: Oid) -> bool {
    Spi::get_one_with_args::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_partition_ancestors($1) a \
                        WHERE a.relid::pg_catalog.oid OPERATOR(pg_catalog.=) $2)",
        &[table.into(), root.into()],
    )
    .ok()
    .flatten()
    .unwrap_or(false)
}

/// What to load from the catalog.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The catalog rows as they are: one per TTL index, keyed by the table it was created on.
    Entries,
    /// The tables rows are deleted from: a plain table stands for itself, a partitioned table
    /// for each of its leaf partitions (ctid is unique only within one); each twice with a
    /// per-row TTL field (see [`Part`]).
    Targets,
}

/// Whether the index named by the SQL expression `name` (in the schema of the table the TTL
/// index was created on, `rn`) is valid and ready on the target table `l.relid`: itself, or
/// for a partition its partition of that index (the part of the load query below). A restore
/// creates the index after the catalog row, and a failed `CREATE INDEX CONCURRENTLY` leaves it
/// invalid.
fn index_ready_sql(name: &str) -> String {
    format!(
        "EXISTS (SELECT FROM pg_catalog.pg_index i, \
                   (SELECT pg_catalog.to_regclass(pg_catalog.quote_ident(rn.nspname::pg_catalog.text) \
                      OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) \
                      pg_catalog.quote_ident({name})) AS oid) ttl \
                 WHERE i.indrelid OPERATOR(pg_catalog.=) l.relid \
                   AND i.indisvalid AND i.indisready AND i.indislive \
                   AND (i.indexrelid OPERATOR(pg_catalog.=) ttl.oid \
                        OR ttl.oid OPERATOR(pg_catalog.=) ANY (ARRAY( \
                             SELECT p.relid::pg_catalog.oid \
                             FROM pg_catalog.pg_partition_ancestors(i.indexrelid) p))))"
    )
}

/// The query of [`load`] (`$1`: the table, or NULL for all): one row per target of `scope`,
/// in the columns [`from_row`] reads.
fn load_sql(ext: &Extension, scope: Scope) -> String {
    let target = match scope {
        Scope::Entries => "(SELECT t.table_oid::pg_catalog.oid AS relid)".to_string(),
        Scope::Targets => format!(
            "(SELECT relid::pg_catalog.oid FROM {}._ttl_targets(t.table_oid) relid)",
            ext.internal()
        ),
    };
    let ready = index_ready_sql("t.index_name::pg_catalog.text");
    let row_ready = index_ready_sql(
        "pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) 'row_ttl_index_name'::pg_catalog.text",
    );
    format!(
        "SELECT l.relid, \
                pg_catalog.quote_ident(n.nspname::pg_catalog.text) OPERATOR(pg_catalog.||) '.' \
                  OPERATOR(pg_catalog.||) pg_catalog.quote_ident(c.relname::pg_catalog.text), \
                l.relid::pg_catalog.regclass::pg_catalog.text, c.relowner, \
                t.column_name::pg_catalog.text, a.atttypid, t.json_path, t.path, \
                t.expire_after, t.numeric_unit, t.index_name::pg_catalog.text, \
                t.table_oid::pg_catalog.oid, coalesce(a.attnum, 0), c.relkind::pg_catalog.text, \
                pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) 'time_zone'::pg_catalog.text, \
                {ready}, \
                (pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) 'paused_at'::pg_catalog.text) IS NOT NULL, \
                coalesce((pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) 'brake_released'::pg_catalog.text) \
                  OPERATOR(pg_catalog.=) 'true'::pg_catalog.text, false), \
                pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.?) 'brake_released'::pg_catalog.text, \
                pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) 'filter_sql'::pg_catalog.text, \
                coalesce((pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) 'touch'::pg_catalog.text) \
                  OPERATOR(pg_catalog.=) 'true'::pg_catalog.text, false), \
                coalesce((pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) 'hide_expired'::pg_catalog.text) \
                  OPERATOR(pg_catalog.=) 'true'::pg_catalog.text, false), \
                coalesce((pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) 'hide_enabled_row_security'::pg_catalog.text) \
                  OPERATOR(pg_catalog.=) 'true'::pg_catalog.text, false), \
                pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) 'row_ttl_path'::pg_catalog.text, \
                pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) 'row_ttl_column'::pg_catalog.text, \
                ARRAY(SELECT pg_catalog.jsonb_array_elements_text(k.keys) \
                      FROM (SELECT pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->) \
                                   'row_ttl_json_path'::pg_catalog.text AS keys) k \
                      WHERE pg_catalog.jsonb_typeof(k.keys) OPERATOR(pg_catalog.=) 'array'::pg_catalog.text), \
                pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) 'row_ttl_index_name'::pg_catalog.text, \
                (SELECT ra.atttypid FROM pg_catalog.pg_attribute ra \
                 WHERE ra.attrelid OPERATOR(pg_catalog.=) c.oid AND NOT ra.attisdropped \
                   AND ra.attname::pg_catalog.text OPERATOR(pg_catalog.=) \
                       (pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) 'row_ttl_column'::pg_catalog.text)), \
                {row_ready}, \
                pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) 'drop_partitions'::pg_catalog.text \
         FROM {ext}.ttl_index t \
         CROSS JOIN LATERAL {target} l \
         JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) l.relid \
         JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
         JOIN pg_catalog.pg_class r ON r.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid \
         JOIN pg_catalog.pg_namespace rn ON rn.oid OPERATOR(pg_catalog.=) r.relnamespace \
         LEFT JOIN pg_catalog.pg_attribute a \
                ON a.attrelid OPERATOR(pg_catalog.=) c.oid \
               AND a.attname OPERATOR(pg_catalog.=) t.column_name AND NOT a.attisdropped \
         WHERE $1 IS NULL OR t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
         ORDER BY t.table_oid::pg_catalog.oid, l.relid"
    )
}

/// One row of [`load_sql`] as a TTL index (its `part` [`Part::Whole`]).
fn from_row(row: &pgrx::spi::SpiHeapTupleData) -> TtlIndex {
    let text = |i| row.get::<String>(i).ok().flatten().unwrap_or_default();
    let oid = |i| row.get::<Oid>(i).ok().flatten().unwrap_or_default();
    TtlIndex {
        table: oid(1),
        qualified_table: text(2),
        display_name: text(3),
        owner: oid(4),
        resolved: Resolved {
            column: text(5),
            kind: kind_of_type(oid(6)),
            json_path: row.get::<Vec<String>>(7).ok().flatten().unwrap_or_default(),
        },
        path: text(8),
        expire_after: row
            .get::<Interval>(9)
            .ok()
            .flatten()
            .unwrap_or_else(|| Interval::from_micros(0)),
        unit: NumericUnit::from_name(&text(10)).unwrap_or(NumericUnit::Seconds),
        index_name: text(11),
        root: oid(12),
        attnum: row.get::<i16>(13).ok().flatten().unwrap_or(0),
        foreign: text(14) == "f",
        time_zone: row.get::<String>(15).ok().flatten(),
        index_ready: row.get::<bool>(16).ok().flatten().unwrap_or(false),
        paused: row.get::<bool>(17).ok().flatten().unwrap_or(false),
        brake_released: row.get::<bool>(18).ok().flatten().unwrap_or(false),
        brake_available: row.get::<bool>(19).ok().flatten().unwrap_or(false),
        filter_sql: row.get::<String>(20).ok().flatten(),
        touch: row.get::<bool>(21).ok().flatten().unwrap_or(false),
        hide_expired: row.get::<bool>(22).ok().flatten().unwrap_or(false),
        hide_enabled_row_security: row.get::<bool>(23).ok().flatten().unwrap_or(false),
        row_ttl: row.get::<String>(24).ok().flatten().map(|path| RowTtl {
            path,
            resolved: Resolved {
                column: text(25),
                kind: kind_of_type(oid(28)),
                json_path: row
                    .get::<Vec<String>>(26)
                    .ok()
                    .flatten()
                    .unwrap_or_default(),
            },
            index_name: text(27),
            index_ready: row.get::<bool>(29).ok().flatten().unwrap_or(false),
        }),
        part: Part::Whole,
        drop_partitions: row
            .get::<String>(30)
            .ok()
            .flatten()
            .and_then(|mode| PartitionMode::from_name(&mode)),
    }
}

/// Loads the TTL index of `table` (the table it was created on), or all of them.
pub fn load(ext: &Extension, table: Option<Oid>, scope: Scope) -> Vec<TtlIndex> {
    let sql = load_sql(ext, scope);
    Spi::connect(|client| {
        let table_arg: Option<Oid> = table;
        client
            .select(&sql, None, &[table_arg.into()])
            .expect("the TTL catalog is readable")
            .map(|row| from_row(&row))
            .flat_map(|index| match scope {
                Scope::Entries => vec![index],
                Scope::Targets => index.parts(),
            })
            .collect()
    })
}

/// Whether `pg_restore` is connected to this database (its sessions' `application_name`), as
/// a superuser or the database's owner (who else may restore a database; anyone can name a
/// session `pg_restore`, and no tenant may stop the purge of a database that way): while it
/// is, a restore may be half done — TTL catalog rows restored before their indexes, expired
/// rows before the foreign keys that reference them — and the worker waits.
pub fn restore_in_progress() -> bool {
    Spi::get_one::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_stat_activity a \
         JOIN pg_catalog.pg_database d ON d.oid OPERATOR(pg_catalog.=) a.datid \
         JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.usesysid \
         WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database() \
           AND a.application_name OPERATOR(pg_catalog.=) 'pg_restore'::pg_catalog.text \
           AND (r.rolsuper OR r.oid OPERATOR(pg_catalog.=) d.datdba))",
    )
    .ok()
    .flatten()
    .unwrap_or(false)
}
