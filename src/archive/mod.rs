//! `archive_to`: each batch moves its expired rows into an archive table, in the same
//! statement, and so the same transaction, as their delete (docs/archive.md):
//!
//! ```sql
//! WITH gone AS (DELETE FROM ONLY tbl WHERE … RETURNING <tbl's columns>),
//!      archived AS (INSERT INTO archive (<tbl's columns>) SELECT <tbl's columns> FROM gone)
//! SELECT count(*) FROM gone
//! ```
//!
//! A row is then either still in the table or in the archive: the delete and the insert
//! commit or roll back together, whatever crashes. A foreign archive (postgres_fdw) commits
//! on its server just before the local transaction does: a crash between the two leaves a row
//! in both places, and the next pass archives it again; the INSERT into a foreign archive says
//! `ON CONFLICT DO NOTHING`, so a unique key on the remote table that identifies the row as
//! archived (the source's key with its point in time: never one a later row reuses) keeps the
//! second copy out.
//!
//! The archive is tracked by OID (a rename follows it). It must have every column of the
//! table, by name, of a type the value can be assigned to; columns of its own take their
//! defaults. The table's owner, whom the batch runs as, must be allowed to INSERT into it.
//! [`check`] says so at `ttl_index_create` / `ttl_index_alter`; when a batch fails later and
//! the archive no longer takes the rows ([`usable`]: dropped, a column added to the table only,
//! INSERT revoked; or its INSERT fails on its own: a foreign server down, no partition for a
//! row), the worker deletes nothing from the table, sets no row aside, and records why in
//! `ttl_stats`. A dropped archive leaves `archive_to` at `'-'` (OID 0, set by the `sql_drop`
//! event trigger of sql/api.sql): its OID may be reused by another table.

mod check;
pub use check::{check, usable, Unfit};

use crate::catalog::{qualified_name, PartitionMode};
use crate::deleter::{Archive, Named};
use crate::error::raise;
use crate::extension::Extension;
use crate::table::{set_column, ttl_index_of, Table};
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use pgrx::spi::quote_identifier;

/// The archive `archive` of the rows of `table` as a batch names it now: locked first
/// (`ROW EXCLUSIVE`, which its INSERT takes anyway, within the batch's lock_timeout), so that
/// its name and the table's columns read next stay as they are until the batch ends. An error
/// when it no longer exists.
pub fn resolve(table: Oid, archive: Oid) -> Result<Archive, String> {
    if archive == pg_sys::InvalidOid {
        return Err(gone(archive));
    }
    unsafe { pg_sys::LockRelationOid(archive, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE) };
    let name = qualified_name(archive).ok_or_else(|| gone(archive))?;
    if same_tree(table, archive) {
        // attached as a partition of the table it archives since archive_to was set (the
        // check of ttl_index_alter saw no loop then): its rows would go round for ever
        return Err(format!(
            "the archive {name} is now a partition of the table it archives: its rows would \
             go round for ever; nothing is deleted until ttl_index_alter names another archive, \
             or none ('-')"
        ));
    }
    let kind = unsafe { pg_sys::get_rel_relkind(archive) } as u8;
    Ok(Archive {
        qualified: name,
        columns: columns(table).join(", "),
        foreign: kind == pg_sys::RELKIND_FOREIGN_TABLE,
    })
}

/// Whether `table` and `archive` are in one partition tree (the same root, or one is the other).
pub(super) fn same_tree(table: Oid, archive: Oid) -> bool {
    crate::read::one::<bool>(
        "SELECT coalesce(pg_catalog.pg_partition_root($1)::pg_catalog.oid, $1) \
                OPERATOR(pg_catalog.=) coalesce(pg_catalog.pg_partition_root($2)::pg_catalog.oid, $2)",
        &[table.into(), archive.into()],
    )
    .unwrap_or(false)
}

/// That the archive `archive` is gone (`0`: dropped, see the module's text).
fn gone_what(archive: Oid) -> String {
    match archive == pg_sys::InvalidOid {
        true => "the archive table was dropped".to_string(),
        false => format!(
            "the archive table (OID {}) no longer exists",
            archive.to_u32()
        ),
    }
}

const GONE_HINT: &str = "Name another with ttl_index_alter(…, archive_to => …), or none ('-').";

fn gone(archive: Oid) -> String {
    format!(
        "{}: nothing is deleted until ttl_index_alter names another archive, or none ('-')",
        gone_what(archive)
    )
}

/// The live columns of `table`, quoted, in their order.
fn columns(table: Oid) -> Vec<String> {
    crate::catalog::table_columns(table)
        .into_iter()
        .map(|column| quote_identifier(&column.name).to_string())
        .collect()
}

/// Whether an archive takes a batch's rows (see [`takes_rows`]).
pub enum Verdict {
    Takes,
    /// It refuses them: why.
    Refuses(String),
    /// It could not be told (a moment's failure: a lock timeout, a cancel).
    Unknown,
}

/// Whether the archive of `index` (a target, its archive read by
/// [`crate::batch_frame::enter`]) takes the rows a batch of `rows` would move, the
/// rows set aside (`set_aside`) left out as the batch leaves them: their INSERT alone, run and
/// always rolled back (as the owner, in the caller's frame), asked after a batch failed. It
/// inserts those rows (their WAL, sequence values, the archive's triggers; a foreign archive's
/// server receives them), then undoes it. [`Verdict::Refuses`] with the archive's error: a
/// foreign server down, no partition for a row, its own trigger or policy; the failure is then
/// the archive's, not the rows', and nothing is set aside. An integrity constraint of the
/// archive (a key already there, a check) is the rows': [`Verdict::Takes`], so that the split
/// sets aside the rows it refuses alone and the others move.
pub fn takes_rows(
    ext: &Extension,
    index: &Named,
    expire_after: pgrx::datum::Interval,
    rows: i64,
    set_aside: &[pg_sys::ItemPointerData],
) -> Verdict {
    let sql = match crate::deleter::archive_trial_sql(ext, index, !set_aside.is_empty()) {
        None => return Verdict::Takes,
        Some(Ok(sql)) => sql,
        Some(Err(e)) => return Verdict::Refuses(e),
    };
    let tried = crate::txn::in_rolled_back_subtransaction(|| {
        Spi::connect_mut(|client| {
            let args = [expire_after.into(), rows.into(), set_aside.to_vec().into()];
            client.update(&sql, None, &args).map(|_| ())
        })
        .unwrap_or_else(|e| error!("{e}"))
    });
    match tried {
        Ok(()) => Verdict::Takes,
        Err(failure) if failure.is_transient() => Verdict::Unknown,
        Err(failure) if failure.is_integrity() => Verdict::Takes,
        Err(failure) => Verdict::Refuses(format!(
            "the archive {} refuses the rows of {}: {}; nothing is deleted until it takes them",
            archived_into(index),
            index.display_name,
            failure.message
        )),
    }
}

/// The archive `index` moves its rows into, as its batch names it.
fn archived_into(index: &Named) -> &str {
    match &index.archive {
        Some(Ok(archive)) => &archive.qualified,
        _ => "(gone)",
    }
}

/// `archive_to` as `ttl_index_create` (`created`: set on the TTL index it has just created, or
/// compared with the one that existed already) or `ttl_index_alter` (`created` `None`) gives
/// it: the archive (`archive`; 0, `'-'::regclass`, for none), checked ([`check`]) as the
/// table's owner would insert into it.
pub(crate) fn set(ext: &Extension, table: &Table, archive: Oid, created: Option<bool>) {
    // the chains of archives one change at a time (that lock first, then the row: every
    // change takes them in this order), drop_partitions and the chains read after a
    // concurrent alter committed
    let archive = (archive != pg_sys::InvalidOid).then_some(archive);
    if archive.is_some() {
        serialize_chains(ext);
    }
    crate::table::lock_entry(ext, table);
    let current = ttl_index_of(ext, table);
    if created == Some(false) {
        // ('-' given: none, which an archive that was dropped, OID 0, is not either)
        if archive != current.archive_to {
            raise(
                PgSqlErrorCode::ERRCODE_DUPLICATE_OBJECT,
                format!(
                    "{} has this TTL index already, with another archive_to",
                    table.name
                ),
                "Change it with ttl_index_alter(…, archive_to => …).",
            )
        }
        return;
    }
    crate::citus::check_managed_here(table.oid, &table.name);
    if let Some(archive) = archive {
        let owner = crate::owner::table_owner(table.oid).unwrap_or(pg_sys::InvalidOid);
        let drops = current.drop_partitions == Some(PartitionMode::Drop);
        // (under a snapshot taken after the lock: an alter that committed meanwhile is seen,
        // under REPEATABLE READ too)
        let checked = crate::read::under_fresh_snapshot(|| {
            check(table.oid, &table.name, archive, owner, drops)
        });
        if let Err(unfit) = checked {
            unfit.raise();
        }
    }
    if archive != current.archive_to {
        set_column(ext, table, "archive_to", archive.into());
    }
}

/// Serializes the changes of archive chains in this database until the transaction ends: two
/// `ttl_index_alter(archive_to)` calls that each locked only their own catalog row could close
/// a loop neither sees (a → b beside b → a), whose rows the worker would move round for ever.
/// A lock on the TTL catalog as an object of its own class, which no role can take by SQL;
/// whoever checks next reads the chain under a snapshot taken after it.
fn serialize_chains(ext: &Extension) {
    let class = crate::read::one::<Oid>(
        &format!(
            "SELECT pg_catalog.to_regclass({})::pg_catalog.oid",
            pgrx::spi::quote_literal(ext.catalog())
        ),
        &[],
    );
    if let Some(class) = class {
        unsafe {
            pg_sys::LockDatabaseObject(class, class, 0, pg_sys::ExclusiveLock as pg_sys::LOCKMODE)
        };
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::{resolve, takes_rows, Verdict};
    use crate::batch_frame::{enter, Entered};
    use crate::catalog::{self, Scope};
    use crate::deleter::wrap;
    use crate::extension::Extension;
    use crate::generic_plan::GenericPlan;
    use pgrx::pg_sys::{self, Oid};
    use pgrx::prelude::*;

    fn oid(name: &str) -> Oid {
        Spi::get_one::<Oid>(&format!("SELECT '{name}'::regclass::oid"))
            .expect("query runs")
            .expect("relation exists")
    }

    fn count(sql: &str) -> i64 {
        Spi::get_one::<i64>(sql).expect("query runs").unwrap_or(-1)
    }

    #[pg_test]
    fn wrapped_delete_moves_rows_and_counts_them() {
        Spi::run(
            "CREATE TABLE src (id int, \"we\"\"ird\" text);
             CREATE TABLE arch (\"we\"\"ird\" text, id int, at timestamptz DEFAULT now());
             INSERT INTO src SELECT g, 'x' || g FROM generate_series(1, 10) g;",
        )
        .expect("tables made");
        let archive = resolve(oid("src"), oid("arch")).expect("the archive exists");
        assert_eq!(archive.columns, r#"id, "we""ird""#);
        let delete = format!(
            "{}DELETE FROM ONLY public.src WHERE id OPERATOR(pg_catalog.<=) $1",
            crate::planner::MARKER
        );
        let sql = wrap(&delete, &archive);
        let removed = Spi::connect_mut(|_| {
            let plan = GenericPlan::prepare(&sql, &[pg_sys::INT4OID]).expect("prepared");
            plan.removed(&[4i32.into_datum()])
        })
        .expect("runs");
        assert_eq!(removed, 4);
        assert_eq!(count("SELECT count(*) FROM src"), 6);
        assert_eq!(count("SELECT count(*) FROM arch WHERE id <= 4 AND \"we\"\"ird\" = 'x' || id AND at IS NOT NULL"), 4);
        // the plain DELETE's count is its own (no row returned)
        let removed = Spi::connect_mut(|_| {
            let plan = GenericPlan::prepare(&delete, &[pg_sys::INT4OID]).expect("prepared");
            plan.removed(&[6i32.into_datum()])
        })
        .expect("runs");
        assert_eq!(removed, 2);
    }

    #[pg_test]
    fn a_dropped_archive_is_an_error() {
        Spi::run("CREATE TABLE src (id int)").expect("table made");
        let error = resolve(oid("src"), pg_sys::InvalidOid).expect_err("OID 0: dropped");
        assert!(error.contains("was dropped"), "{error}");
    }

    #[pg_test]
    fn rolled_back_subtransaction_keeps_nothing() {
        Spi::run("CREATE TABLE kept (id int)").expect("table made");
        let done = crate::txn::in_rolled_back_subtransaction(|| {
            Spi::run("INSERT INTO kept VALUES (1)").expect("inserted");
            count("SELECT count(*) FROM kept")
        });
        assert_eq!(done.expect("ran"), 1);
        assert_eq!(count("SELECT count(*) FROM kept"), 0);
        let failed = crate::txn::in_rolled_back_subtransaction(|| {
            Spi::run("INSERT INTO kept VALUES (2)").expect("inserted");
            error!("refused")
        });
        assert!(failed.is_err());
        assert_eq!(count("SELECT count(*) FROM kept"), 0);
    }

    #[pg_test]
    fn takes_rows_tells_the_archive_that_refuses() {
        Spi::run(
            "CREATE TABLE events (id int PRIMARY KEY, doc jsonb);
             CREATE TABLE events_archive (id int, doc jsonb);
             SELECT FROM ttl_index_create('events', 'at', 0, archive_to => 'events_archive');
             INSERT INTO events SELECT g, jsonb_build_object('at', '2020-01-01T00:00:00Z', 'n', g)
             FROM generate_series(1, 5) g;",
        )
        .expect("tables made");
        let ext = Extension::current();
        let target = catalog::load(&ext, Some(oid("events")), Scope::Targets)
            .pop()
            .expect("a target");
        let verdict = || {
            let Entered::Ready(current, _) = enter(&ext, &target) else {
                panic!("the table exists");
            };
            let zero = pgrx::datum::Interval::from_micros(0);
            takes_rows(&ext, &current, zero, 10, &[])
        };
        assert!(matches!(verdict(), Verdict::Takes));
        // the trial left nothing behind
        assert_eq!(count("SELECT count(*) FROM events_archive"), 0);
        Spi::run(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS
               $$ BEGIN IF NEW.id = 3 THEN RAISE EXCEPTION 'not row 3'; END IF; RETURN NEW; END $$;
             CREATE TRIGGER refuse BEFORE INSERT ON events_archive FOR EACH ROW EXECUTE FUNCTION refuse();",
        )
        .expect("trigger made");
        match verdict() {
            Verdict::Refuses(reason) => assert!(reason.contains("not row 3"), "{reason}"),
            _ => panic!("the archive's refusal was not told"),
        }
        assert_eq!(count("SELECT count(*) FROM events"), 5);
    }
}
