//! The rows of the `ttl_stats` view: one per table the worker deletes from (the table of each
//! TTL index, or each leaf partition of a partitioned one) and per part of a per-row TTL table,
//! and one per field TTL and table whose documents it changes (`part` 'field <path>'),
//! the statistics in shared memory beside what the catalogs say of the table.
//!
//! Built here rather than as one SQL join: at 1,000 TTL tables that join (three scans of
//! `pg_class`, one of `pg_index`, six hash joins) cost 16 ms of the view's 21. Here each
//! catalog is read once, by a scan that looks the rows up by OID in a hash table: not through
//! the system caches, whose first lookup of a table in a session reads the catalog's index
//! (1,000 TTL tables: 26–33 ms on a new connection against 7 on one that has looked them up).

use super::{visible_entries, StatsRow};
use crate::extension::INTERNAL_SCHEMA as INTERNAL;
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::collections::HashMap;

/// What `skipped` says of a foreign table.
const FOREIGN: &str = "foreign table: rows are not deleted through a foreign data wrapper";

/// One TTL index, as the view needs it from the catalog.
struct TtlIndex {
    table: pg_sys::Oid,
    /// No `filter`: every row with no readable point in time is one that never expires.
    unfiltered: bool,
    per_row: bool,
    paused: bool,
    paused_reason: Option<String>,
    paused_by: Option<String>,
    /// Why it is outside its delete window now, or `None`.
    outside_window: Option<String>,
}

/// A table the worker deletes from for a TTL index: the table itself or a leaf partition.
struct Target {
    relid: pg_sys::Oid,
    foreign: bool,
    /// About how many of its rows have no readable point in time (see `rows_never_expire`).
    never_expire: Option<i64>,
}

/// One row of the view, before the view casts its OIDs to `regclass` and adds `paused`.
type ViewRow = (
    pg_sys::Oid,
    i64,
    i64,
    Option<TimestampWithTimeZone>,
    i64,
    i64,
    i64,
    Option<String>,
    Option<TimestampWithTimeZone>,
    pg_sys::Oid,
    Option<String>,
    i64,
    Option<TimestampWithTimeZone>,
    Option<f64>,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<String>,
);

/// The rows of `ttl_stats` (sql/api.sql), read as the caller: the catalog tables are readable
/// by all, and [`visible_entries`] hides an error text or a lag from whoever may not read it.
/// Only 0.4.0's SQL and later call it, where the catalog is in `jsonb_ttl_internal`.
#[pg_extern(
    volatile,
    parallel_restricted,
    name = "_ttl_stats_view",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
#[allow(clippy::type_complexity)]
fn ttl_stats_view() -> TableIterator<
    'static,
    (
        name!(table_oid, pg_sys::Oid),
        name!(runs, i64),
        name!(rows_deleted, i64),
        name!(last_run_at, Option<TimestampWithTimeZone>),
        name!(last_rows_deleted, i64),
        name!(limit_reached, i64),
        name!(errors, i64),
        name!(last_error, Option<String>),
        name!(oldest_expired, Option<TimestampWithTimeZone>),
        name!(ttl_table, pg_sys::Oid),
        name!(skipped, Option<String>),
        name!(rows_undeletable, i64),
        name!(last_success_at, Option<TimestampWithTimeZone>),
        name!(last_run_ms, Option<f64>),
        name!(backlog, Option<i64>),
        name!(rows_never_expire, Option<i64>),
        name!(paused_by, Option<String>),
        name!(part, Option<String>),
    ),
> {
    let mut stats_rows = visible_entries();
    super::add_worker_nodes(&mut stats_rows);
    let stats: HashMap<(pg_sys::Oid, u8), StatsRow> =
        stats_rows.into_iter().map(|r| ((r.0, r.13), r)).collect();
    let undeletable = undeletable_rows();
    let ttl_indexes = ttl_indexes();
    let fields = field_ttls();
    let recorded = recorded_indexes();
    let oids = ttl_indexes.iter().map(|t| t.table);
    let field_oids = fields.iter().map(|f| f.0.table);
    let classes = classes(
        oids.chain(field_oids)
            .chain(recorded.iter().map(|r| r.1))
            .collect(),
    );
    let index_rows = recorded_index_rows(&recorded, &classes);
    let mut rows = Vec::new();
    for ttl in ttl_indexes {
        for target in targets(&ttl, &classes, &index_rows) {
            for &part in parts(ttl.per_row) {
                let key = match part == Some("row_ttl") {
                    true => crate::stats::OWN_TTL,
                    false => crate::stats::WHOLE,
                };
                let s = stats.get(&(target.relid, key));
                rows.push(view_row(&ttl, &target, part, s, &undeletable));
            }
        }
    }
    // each field TTL: a part of its own of each table whose documents it changes
    for (ttl, id, path) in fields {
        let part = format!("field {path}");
        for target in targets(&ttl, &classes, &index_rows) {
            let s = stats.get(&(target.relid, crate::stats::field_part(id)));
            rows.push(view_row(&ttl, &target, Some(&part), s, &undeletable));
        }
    }
    TableIterator::new(rows)
}

/// The parts of a table: a per-row TTL table has two, the rows that fall back to
/// `expire_after` and those with a TTL of their own (each through its own index).
fn parts(per_row: bool) -> &'static [Option<&'static str>] {
    match per_row {
        true => &[Some("expire_after"), Some("row_ttl")],
        false => &[None],
    }
}

/// The row of `part` of `target`, a table of `ttl`, with its statistics `s`: what `skipped`
/// says (a foreign table, a pause, the delete window, a table set aside, in that order), and
/// the rows that never expire where they can be counted (no `filter`; not the rows with a TTL
/// of their own).
fn view_row(
    ttl: &TtlIndex,
    target: &Target,
    part: Option<&str>,
    s: Option<&StatsRow>,
    undeletable: &HashMap<pg_sys::Oid, i64>,
) -> ViewRow {
    // the rows that go by expire_after (not a per-row TTL's, not a field TTL's documents)
    let whole = matches!(part, None | Some("expire_after"));
    let skipped = match () {
        _ if target.foreign => Some(FOREIGN.to_string()),
        _ if ttl.paused => ttl.paused_reason.clone(),
        _ if ttl.outside_window.is_some() => ttl.outside_window.clone(),
        _ => s.and_then(|s| s.9.clone()),
    };
    let never_expire = match ttl.unfiltered && whole {
        true => target.never_expire,
        false => None,
    };
    // paused_at without paused_by: a pause from before 0.3.0, which only the brake made (the
    // update to 0.3.0 marks them so)
    let paused_by = match ttl.paused {
        true => Some(ttl.paused_by.clone().unwrap_or_else(|| "brake".to_string())),
        false => None,
    };
    let undeletable = match whole {
        false => 0,
        true => undeletable.get(&target.relid).copied().unwrap_or(0),
    };
    (
        target.relid,
        s.map_or(0, |s| s.1),
        s.map_or(0, |s| s.2),
        s.and_then(|s| s.3),
        s.map_or(0, |s| s.4),
        s.map_or(0, |s| s.5),
        s.map_or(0, |s| s.6),
        s.and_then(|s| s.7.clone()),
        s.and_then(|s| s.8),
        ttl.table,
        skipped,
        undeletable,
        s.and_then(|s| s.10),
        s.and_then(|s| s.11),
        s.and_then(|s| s.12),
        never_expire,
        paused_by,
        part.map(str::to_string),
    )
}

/// The TTL indexes of this database, in the order of their tables' OIDs.
fn ttl_indexes() -> Vec<TtlIndex> {
    let sql = format!(
        "SELECT t.table_oid::pg_catalog.oid, t.filter IS NULL, t.row_ttl_path IS NOT NULL, \
                t.paused_at IS NOT NULL, t.paused_reason, t.paused_by, \
                CASE WHEN t.delete_window_start IS NOT NULL \
                      AND NOT {INTERNAL}._ttl_in_window(t.delete_window_start, t.delete_window_end, t.time_zone) \
                THEN 'outside its delete_window '::pg_catalog.text OPERATOR(pg_catalog.||) \
                     {INTERNAL}._ttl_window_text(t.delete_window_start, t.delete_window_end) \
                     OPERATOR(pg_catalog.||) ' ('::pg_catalog.text OPERATOR(pg_catalog.||) \
                     coalesce(t.time_zone, 'UTC'::pg_catalog.text) OPERATOR(pg_catalog.||) ')'::pg_catalog.text \
                END \
         FROM {INTERNAL}.ttl_index t ORDER BY t.table_oid::pg_catalog.oid",
    );
    Spi::connect(|client| {
        client
            .select(&sql, None, &[])?
            .map(|row| {
                Ok(TtlIndex {
                    table: row.get::<pg_sys::Oid>(1)?.unwrap_or_default(),
                    unfiltered: row.get::<bool>(2)?.unwrap_or(false),
                    per_row: row.get::<bool>(3)?.unwrap_or(false),
                    paused: row.get::<bool>(4)?.unwrap_or(false),
                    paused_reason: row.get::<String>(5)?,
                    paused_by: row.get::<String>(6)?,
                    outside_window: row.get::<String>(7)?,
                })
            })
            .collect::<Result<Vec<_>, pgrx::spi::SpiError>>()
    })
    .expect("the TTL catalog is readable")
}

/// The field TTLs of this database (see [`crate::field`]), each as the view's [`TtlIndex`]
/// of its table (never paused, no delete window), with its number and path.
fn field_ttls() -> Vec<(TtlIndex, i16, String)> {
    let sql = format!(
        "SELECT f.table_oid::pg_catalog.oid, f.field_id, f.path FROM {INTERNAL}.ttl_field f \
         ORDER BY f.table_oid::pg_catalog.oid, f.field_id"
    );
    Spi::connect(|client| {
        client
            .select(&sql, None, &[])?
            .map(|row| {
                let ttl = TtlIndex {
                    table: row.get::<pg_sys::Oid>(1)?.unwrap_or_default(),
                    unfiltered: false,
                    per_row: false,
                    paused: false,
                    paused_reason: None,
                    paused_by: None,
                    outside_window: None,
                };
                Ok((
                    ttl,
                    row.get::<i16>(2)?.unwrap_or(0),
                    row.get::<String>(3)?.unwrap_or_default(),
                ))
            })
            .collect::<Result<Vec<_>, pgrx::spi::SpiError>>()
    })
    .expect("the field TTL catalog is readable")
}

/// The tables rows are deleted from for `ttl`, each with its count of rows that never expire:
/// the table itself, less the entries of its recorded indexes whose dates will come
/// (`index_rows`: those dated past the year 2200 count as never expiring); or each leaf
/// partition, less the entries of its indexes that are partitions of the recorded ones. A table
/// dropped meanwhile has none.
fn targets(
    ttl: &TtlIndex,
    classes: &HashMap<pg_sys::Oid, Class>,
    index_rows: &HashMap<pg_sys::Oid, f32>,
) -> Vec<Target> {
    let Some(&(relkind, reltuples)) = classes.get(&ttl.table) else {
        return Vec::new();
    };
    if relkind != pg_sys::RELKIND_PARTITIONED_TABLE as std::ffi::c_char {
        // unknown (NULL) until the table and one of its recorded indexes have been counted
        // (VACUUM, ANALYZE, CREATE INDEX), as for a leaf partition
        let never_expire = (reltuples >= 0.0)
            .then(|| index_rows.get(&ttl.table).map(|n| rows(reltuples - n)))
            .flatten();
        return vec![Target {
            relid: ttl.table,
            foreign: relkind == pg_sys::RELKIND_FOREIGN_TABLE as std::ffi::c_char,
            never_expire,
        }];
    }
    leaves(ttl.table)
}

/// A count of rows from `reltuples` arithmetic, as `GREATEST(0, x)::int8` gives it.
fn rows(x: f32) -> i64 {
    x.max(0.0).round_ties_even() as i64
}

/// The leaf partitions of partitioned table `table` (`_ttl_targets`), each with its rows that
/// never expire: few tables are partitioned, so one query each.
fn leaves(table: pg_sys::Oid) -> Vec<Target> {
    let sql = format!(
        "SELECT g.relid::pg_catalog.oid, \
                c.relkind OPERATOR(pg_catalog.=) 'f'::pg_catalog.\"char\", \
                CASE WHEN c.reltuples OPERATOR(pg_catalog.>=) 0::pg_catalog.float4 THEN \
                (SELECT GREATEST(0::pg_catalog.float4, c.reltuples OPERATOR(pg_catalog.-) pg_catalog.sum(ic.reltuples))::pg_catalog.int8 \
                 FROM pg_catalog.pg_index x \
                 JOIN pg_catalog.pg_class ic ON ic.oid OPERATOR(pg_catalog.=) x.indexrelid \
                 WHERE x.indrelid OPERATOR(pg_catalog.=) g.relid::pg_catalog.oid \
                   AND ic.reltuples OPERATOR(pg_catalog.>=) 0::pg_catalog.float4 \
                   AND EXISTS (SELECT FROM {INTERNAL}.index_oid o \
                               WHERE o.table_oid OPERATOR(pg_catalog.=) $1 \
                                 AND (o.index_oid OPERATOR(pg_catalog.=) x.indexrelid \
                                      OR o.index_oid OPERATOR(pg_catalog.=) ANY (ARRAY( \
                                     SELECT a.relid::pg_catalog.oid \
                                     FROM pg_catalog.pg_partition_ancestors(x.indexrelid) a)))) \
                 HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0) \
                END \
         FROM {INTERNAL}._ttl_targets($1::pg_catalog.regclass) g(relid) \
         JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) g.relid::pg_catalog.oid \
         ORDER BY 1",
    );
    Spi::connect(|client| {
        client
            .select(&sql, None, &[table.into()])?
            .map(|row| {
                Ok(Target {
                    relid: row.get::<pg_sys::Oid>(1)?.unwrap_or_default(),
                    foreign: row.get::<bool>(2)?.unwrap_or(false),
                    never_expire: row.get::<i64>(3)?,
                })
            })
            .collect::<Result<Vec<_>, pgrx::spi::SpiError>>()
    })
    .expect("the leaf partitions are readable")
}

/// The indexes recorded for each TTL table (`index_oid`): (table, index).
fn recorded_indexes() -> Vec<(pg_sys::Oid, pg_sys::Oid)> {
    let sql = format!("SELECT o.table_oid, o.index_oid FROM {INTERNAL}.index_oid o");
    Spi::connect(|client| {
        client
            .select(&sql, None, &[])?
            .map(|row| {
                Ok((
                    row.get::<pg_sys::Oid>(1)?.unwrap_or_default(),
                    row.get::<pg_sys::Oid>(2)?.unwrap_or_default(),
                ))
            })
            .collect::<Result<Vec<_>, pgrx::spi::SpiError>>()
    })
    .expect("the recorded index OIDs are readable")
}

/// The entries of the `recorded` indexes of each TTL table whose dates will come, summed: each
/// index still on its table, with a known `reltuples` (not -1, never analyzed), less its
/// entries dated past the year 2200 (see [`super::far_future`]).
fn recorded_index_rows(
    recorded: &[(pg_sys::Oid, pg_sys::Oid)],
    classes: &HashMap<pg_sys::Oid, Class>,
) -> HashMap<pg_sys::Oid, f32> {
    let on_table = index_tables(recorded.iter().map(|r| r.1).collect());
    let mut sums = HashMap::new();
    for &(table, index) in recorded {
        if on_table.get(&index) != Some(&table) {
            continue;
        }
        if let Some(&(_, reltuples)) = classes.get(&index).filter(|(_, n)| *n >= 0.0) {
            let past = super::far_future::entries_past_bound(table, index, reltuples);
            *sums.entry(table).or_insert(0.0) += reltuples - past;
        }
    }
    sums
}

/// A relation's `relkind` and `reltuples`.
type Class = (std::ffi::c_char, f32);

/// The [`Class`] of each relation of `oids` that exists (no lock taken).
fn classes(oids: Vec<pg_sys::Oid>) -> HashMap<pg_sys::Oid, Class> {
    let sql = "SELECT c.oid, c.relkind, c.reltuples FROM pg_catalog.pg_class c \
               WHERE c.oid OPERATOR(pg_catalog.=) ANY ($1)";
    Spi::connect(|client| {
        client
            .select(sql, None, &[oids.into()])?
            .map(|row| {
                let relkind = row.get::<i8>(2)?.unwrap_or_default() as std::ffi::c_char;
                let reltuples = row.get::<f32>(3)?.unwrap_or(-1.0);
                Ok((
                    row.get::<pg_sys::Oid>(1)?.unwrap_or_default(),
                    (relkind, reltuples),
                ))
            })
            .collect::<Result<HashMap<_, _>, pgrx::spi::SpiError>>()
    })
    .expect("pg_class is readable")
}

/// The table each index of `oids` that exists is on.
fn index_tables(oids: Vec<pg_sys::Oid>) -> HashMap<pg_sys::Oid, pg_sys::Oid> {
    let sql = "SELECT x.indexrelid, x.indrelid FROM pg_catalog.pg_index x \
               WHERE x.indexrelid OPERATOR(pg_catalog.=) ANY ($1)";
    Spi::connect(|client| {
        client
            .select(sql, None, &[oids.into()])?
            .map(|row| {
                Ok((
                    row.get::<pg_sys::Oid>(1)?.unwrap_or_default(),
                    row.get::<pg_sys::Oid>(2)?.unwrap_or_default(),
                ))
            })
            .collect::<Result<HashMap<_, _>, pgrx::spi::SpiError>>()
    })
    .expect("pg_index is readable")
}

/// The rows of each table of this database that the worker has set aside as undeletable.
fn undeletable_rows() -> HashMap<pg_sys::Oid, i64> {
    super::undeletable_entries().into_iter().collect()
}
