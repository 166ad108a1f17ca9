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

use crate::catalog::PartitionMode;
use crate::error::raise;
use crate::extension::Extension;
use crate::table::{set_column, ttl_index_of, Table};
use crate::txn::in_subtransaction;
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use pgrx::spi::quote_identifier;

/// The archive of one target as its batches name it, read under the batch's locks.
#[derive(Clone, Debug)]
pub struct Archive {
    /// `schema.table` of the archive, quoted.
    pub qualified: String,
    /// The target table's live columns, quoted, comma-separated, in their order.
    pub columns: String,
    /// A foreign table: its INSERT skips rows already there (`ON CONFLICT DO NOTHING`).
    pub foreign: bool,
}

/// Why an archive cannot take a table's rows: an error's SQLSTATE, message and hint.
#[derive(Debug)]
pub struct Unfit {
    pub code: PgSqlErrorCode,
    pub message: String,
    pub hint: String,
}

impl Unfit {
    /// Raises it as an ERROR.
    pub fn raise(self) -> ! {
        raise(self.code, self.message, self.hint)
    }
}

/// `delete` (one of the batch statements of [`crate::deleter`], starting with
/// [`crate::planner::MARKER`]) with its rows moved into `archive`: a statement that returns
/// one row, the count of rows the DELETE removed (see
/// [`crate::generic_plan::GenericPlan::removed`]).
pub fn wrap(delete: &str, archive: &Archive) -> String {
    let marker = crate::planner::MARKER;
    let delete = delete.strip_prefix(marker).unwrap_or(delete);
    let on_conflict = match archive.foreign {
        true => " ON CONFLICT DO NOTHING",
        false => "",
    };
    format!(
        "{marker}WITH gone AS ({delete} RETURNING {columns}), \
         archived AS (INSERT INTO {into} ({columns}) SELECT {columns} FROM gone{on_conflict}) \
         SELECT pg_catalog.count(*) FROM gone",
        columns = archive.columns,
        into = archive.qualified,
    )
}

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
    let kind = unsafe { pg_sys::get_rel_relkind(archive) } as u8;
    Ok(Archive {
        qualified: name,
        columns: columns(table).join(", "),
        foreign: kind == pg_sys::RELKIND_FOREIGN_TABLE,
    })
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

/// `schema.name` of a relation, quoted; `None` when it does not exist.
fn qualified_name(relation: Oid) -> Option<String> {
    let text = |name: *mut std::ffi::c_char| {
        (!name.is_null()).then(|| {
            unsafe { std::ffi::CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned()
        })
    };
    unsafe {
        let name = text(pg_sys::get_rel_name(relation))?;
        let schema = text(pg_sys::get_namespace_name(pg_sys::get_rel_namespace(
            relation,
        )))?;
        Some(format!(
            "{}.{}",
            quote_identifier(&schema),
            quote_identifier(&name)
        ))
    }
}

/// The name of the role `role` (its OID when it is gone).
fn role_name(role: Oid) -> String {
    let name = unsafe { pg_sys::GetUserNameFromId(role, true) };
    match name.is_null() {
        true => role.to_u32().to_string(),
        false => unsafe { std::ffi::CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned(),
    }
}

/// The live columns of `table`, quoted, in their order.
fn columns(table: Oid) -> Vec<String> {
    crate::catalog::table_columns(table)
        .into_iter()
        .map(|column| quote_identifier(&column.name).to_string())
        .collect()
}

/// Whether `archive` may be the archive of `table` (named `name` in messages), its rows
/// inserted as `owner`; `drops`: whether the TTL index drops expired partitions whole, which
/// would remove rows without archiving them. What `ttl_index_create` and `ttl_index_alter`
/// refuse: whether it takes the rows ([`fits_now`]), then the rules of an archive ([`rules`]).
pub fn check(table: Oid, name: &str, archive: Oid, owner: Oid, drops: bool) -> Result<(), Unfit> {
    fits_now(table, name, archive, owner)?;
    rules(table, name, archive, drops)
}

fn unfit(code: PgSqlErrorCode, message: String, hint: &str) -> Result<(), Unfit> {
    Err(Unfit {
        code,
        message,
        hint: hint.to_string(),
    })
}

/// Whether the INSERT of `table`'s rows into `archive`, as `owner`, can run now: the archive
/// exists and is a table, the owner may INSERT into it, and it has the table's columns
/// ([`fits`]). What a failed batch asks ([`usable`]) as well as a change.
fn fits_now(table: Oid, name: &str, archive: Oid, owner: Oid) -> Result<(), Unfit> {
    let Some(archive_name) = qualified_name(archive) else {
        return unfit(
            PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
            gone_what(archive),
            GONE_HINT,
        );
    };
    let kind = unsafe { pg_sys::get_rel_relkind(archive) } as u8;
    if ![
        pg_sys::RELKIND_RELATION,
        pg_sys::RELKIND_PARTITIONED_TABLE,
        pg_sys::RELKIND_FOREIGN_TABLE,
    ]
    .contains(&kind)
    {
        return unfit(
            PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
            format!("archive_to {archive_name} is not a table"),
            "Name a table, a partitioned table or a foreign table (postgres_fdw).",
        );
    }
    let allowed = unsafe { pg_sys::pg_class_aclcheck(archive, owner, pg_sys::ACL_INSERT as _) };
    if allowed != pg_sys::AclResult::ACLCHECK_OK {
        let role = role_name(owner);
        return Err(Unfit {
            code: PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            message: format!(
                "the owner of {name}, {role}, may not insert into the archive {archive_name}"
            ),
            hint: format!(
                "The worker archives as the table's owner: GRANT INSERT ON {archive_name} TO {};",
                quote_identifier(&role)
            ),
        });
    }
    let foreign = kind == pg_sys::RELKIND_FOREIGN_TABLE;
    crate::owner::as_table_owner(owner, &[], || fits(table, name, &archive_name, foreign))
}

/// The rules an archive follows, checked when it is named (not again later: an unlogged
/// partition attached to it afterwards is the owner's doing): not temporary or unlogged, no
/// foreign partition, not in the table's partition tree, no Citus table, no partitions dropped
/// whole, no chain of archives back to the table.
fn rules(table: Oid, name: &str, archive: Oid, drops: bool) -> Result<(), Unfit> {
    let archive_name = qualified_name(archive).unwrap_or_default();
    if archive == table
        || crate::catalog::is_partition_of(archive, table)
        || crate::catalog::is_partition_of(table, archive)
    {
        return unfit(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("archive_to {archive_name} is {name} or in its partition tree"),
            "Name another table: rows archived into their own table would never leave it.",
        );
    }
    let leaves = leaves(archive);
    let persistence = |table: Oid| unsafe { pg_sys::get_rel_persistence(table) } as u8;
    if persistence(archive) == pg_sys::RELPERSISTENCE_TEMP {
        return unfit(
            PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
            format!("archive_to {archive_name} is a temporary table"),
            "The worker's sessions cannot see it: name a permanent table.",
        );
    }
    if std::iter::once(archive)
        .chain(leaves.iter().copied())
        .any(|table| persistence(table) == pg_sys::RELPERSISTENCE_UNLOGGED)
    {
        return unfit(
            PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
            format!("archive_to {archive_name} is unlogged, or has an unlogged partition"),
            "A crash empties an unlogged table, and a standby has none of it: the archived rows \
             would be lost. ALTER TABLE … SET LOGGED, or name a permanent table.",
        );
    }
    let foreign_leaf = leaves.iter().any(
        |&leaf| unsafe { pg_sys::get_rel_relkind(leaf) } as u8 == pg_sys::RELKIND_FOREIGN_TABLE,
    );
    if foreign_leaf {
        return unfit(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("archive_to {archive_name} has a foreign partition"),
            "Name the foreign table itself (its INSERT skips a row already there, for the moment \
             a crash may copy a row twice), or a table whose partitions are all local.",
        );
    }
    let on_citus = |what: String| {
        unfit(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            what,
            "Archive a Citus table's expired rows with a statement trigger of your own that \
             reads jsonb_ttl.expiring (docs/functions.md), or use tables Citus does not manage.",
        )
    };
    if crate::citus::citus_table(table) {
        return on_citus(format!(
            "archive_to is not supported on the Citus table {name}"
        ));
    }
    if crate::citus::citus_table(archive) {
        return on_citus(format!("archive_to {archive_name} is a Citus table"));
    }
    if drops {
        return unfit(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("archive_to cannot go with drop_partitions => 'drop' on {name}"),
            "A dropped partition's rows would never reach the archive: use drop_partitions => \
             'detach' (the detached partition keeps its rows) or 'off'.",
        );
    }
    if let Some(before) = archives_into(archive, table) {
        return unfit(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("archive_to {archive_name} leads back to {name} (through {before})"),
            "Rows would go round for ever: end the chain of archives at a table without \
             archive_to.",
        );
    }
    Ok(())
}

/// The leaf partitions of `table` (none for a table that is not partitioned).
fn leaves(table: Oid) -> Vec<Oid> {
    Spi::connect(|client| {
        client
            .select(
                "SELECT l.relid::pg_catalog.oid FROM pg_catalog.pg_partition_tree($1) l \
                 WHERE l.isleaf AND l.relid::pg_catalog.oid OPERATOR(pg_catalog.<>) $1",
                None,
                &[table.into()],
            )
            .map(|rows| {
                rows.filter_map(|row| row.get::<Oid>(1).ok().flatten())
                    .collect()
            })
            .unwrap_or_default()
    })
}

/// Whether the chain of archives from `archive` (each TTL index's `archive_to` leading to the
/// next table; a table's rows are purged by its own TTL index, or by that of a partitioned
/// table it is a partition of) comes back to `table` or a partition of it: the last table
/// before it, by name.
fn archives_into(archive: Oid, table: Oid) -> Option<String> {
    let catalog = Extension::find()?.catalog();
    // the TTL indexes that purge the rows of the table c.relid
    let purging = format!(
        "{catalog} t ON t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (ARRAY( \
           SELECT c.relid UNION \
           SELECT a.relid::pg_catalog.oid FROM pg_catalog.pg_partition_ancestors(c.relid) a))"
    );
    crate::read::one::<String>(
        &format!(
            "WITH RECURSIVE chain(relid, hops) AS ( \
               SELECT $1::pg_catalog.oid, 0 \
               UNION ALL \
               SELECT t.archive_to::pg_catalog.oid, c.hops OPERATOR(pg_catalog.+) 1 \
               FROM chain c JOIN {purging} \
               WHERE t.archive_to IS NOT NULL AND c.hops OPERATOR(pg_catalog.<) 100) \
             SELECT c.relid::pg_catalog.regclass::pg_catalog.text FROM chain c JOIN {purging} \
             WHERE t.archive_to::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (ARRAY( \
               SELECT $2 UNION \
               SELECT p.relid::pg_catalog.oid FROM pg_catalog.pg_partition_tree($2) p)) \
             LIMIT 1"
        ),
        &[archive.into(), table.into()],
    )
}

/// Whether the INSERT of a batch into `archive_name` can be parsed: every column of `table`
/// is there, by name, not generated, of a type its value can be assigned to (PostgreSQL's own
/// rules, by preparing the statement: nothing runs).
fn fits(table: Oid, name: &str, archive_name: &str, foreign: bool) -> Result<(), Unfit> {
    let Some(table_name) = qualified_name(table) else {
        return Ok(()); // the table is gone: the caller finds out
    };
    let archive = Archive {
        qualified: archive_name.to_string(),
        columns: columns(table).join(", "),
        foreign,
    };
    let delete = format!("DELETE FROM ONLY {table_name} WHERE false");
    let sql = wrap(&delete, &archive);
    in_subtransaction(|| {
        Spi::connect(|client| client.prepare_mut(sql.as_str(), &[]).map(|_| ()))
            .unwrap_or_else(|e| error!("{e}"))
    })
    .map_err(|failure| Unfit {
        code: failure.code,
        message: format!(
            "archive_to {archive_name} cannot take the rows of {name}: {}",
            failure.message
        ),
        hint: "The archive needs every column of the table, by the same name, of a type the \
               value can be assigned to, none of them generated; columns of its own take their \
               defaults (archived_at timestamptz DEFAULT now())."
            .to_string(),
    })
}

/// Whether the archive of a TTL index on `table` (owned by `owner`) can still take its rows,
/// asked after a batch failed: `Err` with the reason when it cannot, and the failure is then
/// the archive's, not the rows' (no row is set aside; nothing is deleted until it is mended).
pub fn usable(table: Oid, name: &str, archive: Oid, owner: Oid) -> Result<(), String> {
    fits_now(table, name, archive, owner).map_err(|unfit| {
        format!(
            "{}; nothing is deleted until it is mended. {}",
            unfit.message, unfit.hint
        )
    })
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
/// [`crate::catalog::with_current_names`]) takes the rows a batch of `rows` would move, the
/// rows set aside (`set_aside`) left out as the batch leaves them: their INSERT alone, run and
/// always rolled back (as the owner, in the caller's frame), asked after a batch failed. It
/// inserts those rows (their WAL, sequence values, the archive's triggers; a foreign archive's
/// server receives them), then undoes it. [`Verdict::Refuses`] with the archive's error: a
/// foreign server down, no partition for a row, its own trigger, constraint or policy; the
/// failure is then the archive's, not the rows', and nothing is set aside.
pub fn takes_rows(
    ext: &Extension,
    index: &crate::catalog::TtlIndex,
    expire_after: pgrx::datum::Interval,
    rows: i64,
    set_aside: &[pg_sys::ItemPointerData],
) -> Verdict {
    let Some(Ok(archive)) = &index.archive else {
        return Verdict::Takes;
    };
    let reference = match index.reference(ext) {
        Ok(reference) => reference,
        Err(e) => return Verdict::Refuses(e),
    };
    let on_conflict = match archive.foreign {
        true => " ON CONFLICT DO NOTHING",
        false => "",
    };
    let sql = format!(
        "{marker}INSERT INTO {into} ({columns}) SELECT {columns} FROM ONLY {table} \
         WHERE {expired}{set_aside} LIMIT $2{on_conflict}",
        marker = crate::planner::MARKER,
        into = archive.qualified,
        columns = archive.columns,
        table = index.qualified_table,
        expired = index.expired(ext, &reference),
        set_aside = crate::deleter::not_set_aside(!set_aside.is_empty(), "$3"),
    );
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
        Err(failure) => Verdict::Refuses(format!(
            "the archive {} refuses the rows of {}: {}; nothing is deleted until it takes them",
            archive.qualified, index.display_name, failure.message
        )),
    }
}

/// `archive_to` as `ttl_index_create` (`created`: set on the TTL index it has just created, or
/// compared with the one that existed already) or `ttl_index_alter` (`created` `None`) gives
/// it: the archive (`archive`; 0, `'-'::regclass`, for none), checked ([`check`]) as the
/// table's owner would insert into it.
pub(crate) fn set(ext: &Extension, table: &Table, archive: Oid, created: Option<bool>) {
    // drop_partitions, and the chain of archives, read after a concurrent alter committed
    crate::table::lock_entry(ext, table);
    let current = ttl_index_of(ext, table);
    let archive = (archive != pg_sys::InvalidOid).then_some(archive);
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
        if let Err(unfit) = check(table.oid, &table.name, archive, owner, drops) {
            unfit.raise();
        }
    }
    if archive != current.archive_to {
        set_column(ext, table, "archive_to", archive.into());
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::{resolve, takes_rows, wrap, Verdict};
    use crate::catalog::{self, Scope};
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
            let current = catalog::with_current_names(&target).expect("the table exists");
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
