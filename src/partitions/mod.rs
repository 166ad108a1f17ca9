//! Dropping whole partitions (pg_partman / TimescaleDB retention, ClickHouse
//! `ttl_only_drop_parts`): `ttl_index_create(…, drop_partitions => 'drop' | 'detach')` on a
//! table range-partitioned by exactly the TTL index's reference time.
//!
//! A partition whose upper bound plus `expire_after` has passed holds only expired rows (its
//! rows' reference times are below the bound, and a NULL one goes to the default partition), so
//! the worker drops it (or detaches it, to archive it) instead of deleting its rows one by one.
//! A partition that expires whole before the next pass (its bound plus `expire_after` within
//! one `jsonb_ttl.frequency`) is left whole for that pass to drop, rather than emptied row by
//! row now. Row deletes go on for the other partitions. The default partition, and one bounded by
//! MAXVALUE, are never dropped. A filter or a per-row TTL field would keep some rows of an
//! expired partition alive, so neither goes with this option.
//!
//! DROP and DETACH take an ACCESS EXCLUSIVE lock on the parent (and `DETACH … CONCURRENTLY`
//! cannot run from SPI, in a transaction block): the worker asks for both locks without waiting
//! in line (`ConditionalLockRelationOid`, again every 2 ms within `jsonb_ttl.lock_timeout`), so
//! no query ever queues behind its request; when either is still taken it tries again at the
//! next pass. It runs the statement as the parent's owner, like
//! every statement on a user's table. The safety brake applies: a pass that would drop more than
//! `jsonb_ttl.max_table_fraction` of the table's rows pauses the TTL index instead.

use crate::catalog::TtlIndex;
use crate::error::raise;
use crate::extension::Extension;
use crate::filter;
use jsonb_ttl_core::path::ColumnKind;
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;
use pgrx::spi::quote_identifier;
use pgrx::PgSqlErrorCode;

mod list;
mod locks;
use list::list;
pub use list::{expired, leaf_rows, Expired};
use locks::try_lock;

pub use crate::catalog::PartitionMode as Mode;

/// Checks that `table` is range-partitioned by exactly `reference` (the TTL index's reference
/// time, of a column of `kind` named `column`), or raises.
pub fn check_partitioning(table: Oid, name: &str, reference: &str, kind: ColumnKind, column: &str) {
    let key = Spi::get_three_with_args::<String, i16, String>(
        "SELECT p.partstrat::pg_catalog.text, p.partnatts, \
                CASE WHEN p.partattrs[0] OPERATOR(pg_catalog.<>) 0 \
                     THEN (SELECT a.attname::pg_catalog.text FROM pg_catalog.pg_attribute a \
                           WHERE a.attrelid OPERATOR(pg_catalog.=) p.partrelid \
                             AND a.attnum OPERATOR(pg_catalog.=) p.partattrs[0]) \
                     ELSE pg_catalog.pg_get_expr(p.partexprs, p.partrelid) END \
         FROM pg_catalog.pg_partitioned_table p WHERE p.partrelid OPERATOR(pg_catalog.=) $1",
        &[table.into()],
    )
    .ok();
    let refuse = |why: String| -> ! {
        raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("drop_partitions needs {name} range-partitioned by its reference time: {why}"),
            format!(
                "Partition it BY RANGE ({}), or leave drop_partitions out to delete rows one by one.",
                match kind {
                    ColumnKind::Timestamptz => quote_identifier(column),
                    _ => format!("({})", filter::canonical(table, reference, false)),
                }
            ),
        )
    };
    let Some((Some(strategy), Some(keys), Some(key))) = key else {
        refuse("it is not partitioned".into());
    };
    if strategy != "r" || keys != 1 {
        refuse("its partition key is not one range".into());
    }
    let same = match kind {
        ColumnKind::Timestamptz => key == column,
        _ => key == filter::canonical(table, reference, false),
    };
    if !same {
        refuse(format!("it is partitioned by {key}"));
    }
}

/// Drops or detaches those of `partitions` of `index`'s table whose locks are free now, in the
/// caller's transaction, as the table's owner: one DROP TABLE for all of them, or one DETACH
/// each. Returns the partitions it dropped or detached.
fn drop_locked<'a>(
    index: &TtlIndex,
    mode: Mode,
    root: &str,
    partitions: &'a [Expired],
) -> Vec<&'a Expired> {
    // The definition the list was made under, locked against changes until this transaction
    // ends: a pause, a longer expire_after or drop_partitions turned off committed since the
    // pass began drops nothing (the next pass lists again under it).
    if !crate::catalog::definition_holds(index) {
        return Vec::new();
    }
    // Locked, each is listed again: detached, re-attached with another bound or renamed since
    // the list was made, it is not dropped (and its name now is the one used).
    let locked: Vec<(&Expired, String)> = partitions
        .iter()
        .filter(|partition| try_lock(index.root, partition.oid, mode == Mode::Detach))
        .filter_map(|partition| {
            let now = list(index, Some(partition.oid)).pop()?;
            Some((partition, now.qualified))
        })
        .collect();
    if locked.is_empty() {
        return Vec::new();
    }
    let Some(owner) = crate::owner::table_owner(index.root) else {
        return Vec::new();
    };
    let statements: Vec<String> = match mode {
        Mode::Drop => vec![format!(
            "DROP TABLE {}",
            locked
                .iter()
                .map(|(_, name)| name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )],
        Mode::Detach => locked
            .iter()
            .map(|(_, name)| format!("ALTER TABLE {root} DETACH PARTITION {name}"))
            .collect(),
    };
    // (every lock it needs is held already; should one still be wanted, within the worker's
    // lock_timeout: the transaction fails, and the next pass tries again)
    let lock_timeout = crate::gucs::LOCK_TIMEOUT_MS.get().to_string();
    crate::owner::as_table_owner(owner, &[(c"lock_timeout", &lock_timeout)], || {
        for sql in &statements {
            Spi::run(sql).unwrap_or_else(|e| error!("{e}"));
        }
    });
    locked.into_iter().map(|(partition, _)| partition).collect()
}

/// What a visit of [`visit`] did.
#[derive(Default)]
pub struct Visited {
    /// The partitions dropped or detached.
    pub gone: Vec<Oid>,
    /// About how many rows went with them.
    pub rows: f64,
    /// The brake paused the TTL index instead.
    pub paused: bool,
    /// Partitions left whole, rows and all, for the next pass: expired ones whose locks others
    /// held (a partition to detach for archiving must not be emptied row by row meanwhile), and
    /// those that expire whole before the next pass (one `jsonb_ttl.frequency` from now; not
    /// for a TTL index with a delete window), whose rows the drop removes then at a fraction of
    /// the cost of deleting them one by one now (their expired rows wait about that long).
    pub left_whole: Vec<Oid>,
}

/// Drops (or detaches) the expired partitions of the TTL index `index` (any target of it), each
/// in a transaction of its own, as the parent's owner; partitions whose locks are taken are
/// left for the next pass. The brake is checked first, on the estimated rows.
pub fn visit(ext: &Extension, index: &TtlIndex, mode: Mode) -> Visited {
    let mut visited = Visited::default();
    let Some((expired, total, root, soon)) = list_expired(index) else {
        return visited;
    };
    // (not with a delete window: the next pass may fall outside it, and drop nothing)
    if index.window_start.is_none() {
        visited.left_whole = soon;
    }
    if expired.is_empty() {
        return visited;
    }
    if let Some(reason) = brake_reason(index, &expired, total, &root) {
        let paused = crate::txn::in_transaction(|| {
            crate::brake::pause(ext, index.root, &reason);
        });
        if paused.is_ok() {
            log!("jsonb_ttl: {reason}");
            visited.paused = true;
        }
        return visited;
    }
    let gone = drop_all(index, mode, &root, &expired, &mut visited.left_whole);
    for partition in gone {
        log!(
            "jsonb_ttl: {} partition {} of {root}: about {:.0} expired rows",
            match mode {
                Mode::Drop => "dropped",
                Mode::Detach => "detached",
            },
            partition.qualified,
            partition.rows
        );
        visited.gone.push(partition.oid);
        visited.rows += partition.rows;
    }
    visited
}

/// The expired partitions of `index`'s table, about how many rows the table has, its
/// qualified name, and the partitions that expire whole before the next pass; `None` when they
/// cannot be listed (logged) or the table is gone.
fn list_expired(index: &TtlIndex) -> Option<(Vec<Expired>, f64, String, Vec<Oid>)> {
    let listed = crate::txn::in_transaction(|| {
        let (expired, total, soon) = expired(index);
        let root = crate::read::one_checked::<String>(
            "SELECT pg_catalog.quote_ident(n.nspname::pg_catalog.text) OPERATOR(pg_catalog.||) '.' \
                    OPERATOR(pg_catalog.||) pg_catalog.quote_ident(c.relname::pg_catalog.text) \
             FROM pg_catalog.pg_class c \
             JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
             WHERE c.oid OPERATOR(pg_catalog.=) $1",
            &[index.root.into()],
        )
        .ok()
        .flatten();
        (expired, total, root, soon)
    });
    match listed {
        Ok((expired, total, Some(root), soon)) => Some((expired, total, root, soon)),
        Ok(_) => None,
        Err(e) => {
            log!(
                "jsonb_ttl: cannot list the expired partitions: {}",
                e.message
            );
            None
        }
    }
}

/// Why the brake pauses `index` rather than drop `expired` (of a table of about `total` rows,
/// `root`), if it does.
fn brake_reason(index: &TtlIndex, expired: &[Expired], total: f64, root: &str) -> Option<String> {
    let rows: f64 = expired.iter().map(|p| p.rows).sum();
    let fraction = crate::gucs::MAX_TABLE_FRACTION.get();
    let limit = crate::brake::limit(total, fraction, crate::gucs::BRAKE_MIN_ROWS.get() as i64);
    (!index.brake_released && limit.is_some_and(|limit| rows > limit as f64)).then(|| {
        format!(
            "paused by the safety brake: {} expired partitions of {root} hold about {rows:.0} of \
             about {total:.0} rows (jsonb_ttl.max_table_fraction = {fraction}); check expire_after \
             and the clock, then SELECT ttl_index_resume('{}')",
            expired.len(),
            root.replace('\'', "''")
        )
    })
}

/// Drops (or detaches) `expired`: all in one transaction, one DROP TABLE for all of them, one
/// commit; when that fails (a partition someone else owns…), one by one, so one partition
/// cannot hold up the rest. The partitions gone; those whose locks were busy go to `busy`.
fn drop_all<'a>(
    index: &TtlIndex,
    mode: Mode,
    root: &str,
    expired: &'a [Expired],
    busy: &mut Vec<Oid>,
) -> Vec<&'a Expired> {
    let together = crate::txn::in_transaction(|| drop_locked(index, mode, root, expired));
    match together {
        Ok(gone) => {
            busy.extend(
                expired
                    .iter()
                    .filter(|p| !gone.iter().any(|g| g.oid == p.oid))
                    .map(|p| p.oid),
            );
            gone
        }
        Err(e) if expired.len() == 1 => {
            log!(
                "jsonb_ttl: cannot {} {}: {}",
                mode.name(),
                expired[0].qualified,
                e.message
            );
            Vec::new()
        }
        Err(_) => expired
            .iter()
            .filter(|partition| {
                let one = std::slice::from_ref(*partition);
                match crate::txn::in_transaction(|| drop_locked(index, mode, root, one)) {
                    Ok(gone) if gone.is_empty() => {
                        busy.push(partition.oid);
                        false
                    }
                    Ok(_) => true,
                    Err(e) => {
                        log!(
                            "jsonb_ttl: cannot {} {}: {}",
                            mode.name(),
                            partition.qualified,
                            e.message
                        );
                        false
                    }
                }
            })
            .collect(),
    }
}
