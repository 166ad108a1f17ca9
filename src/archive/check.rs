//! Whether a table may be an archive, and whether it takes the rows (see [`super`]): the checks
//! of `ttl_index_create` / `ttl_index_alter` ([`check`]), and what a failed batch asks again
//! ([`usable`]).

use super::{columns, gone_what, GONE_HINT};
use crate::catalog::qualified_name;
use crate::deleter::{wrap, Archive};
use crate::error::raise;
use crate::extension::Extension;
use crate::owner::role_name;
use crate::txn::in_subtransaction;
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use pgrx::spi::quote_identifier;

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
    if let Some(columns) = required_own_columns(table, archive) {
        // every row would fail alone: the archive's fault, not the rows'
        return unfit(
            PgSqlErrorCode::ERRCODE_NOT_NULL_VIOLATION,
            format!(
                "archive_to {archive_name} cannot take the rows of {name}: its column(s) \
                 {columns} are NOT NULL without a default, and {name} has none of that name"
            ),
            "Give them a default (ALTER TABLE … ALTER COLUMN … SET DEFAULT …), or drop NOT NULL.",
        );
    }
    crate::owner::as_table_owner(owner, &[], || fits(table, name, &archive_name, foreign))
}

/// The rules an archive follows, checked when it is named (not again later: an unlogged
/// partition attached to it afterwards is the owner's doing): not temporary or unlogged, no
/// foreign partition, not in the table's partition tree, no Citus table, no partitions dropped
/// whole, no chain of archives back to the table.
fn rules(table: Oid, name: &str, archive: Oid, drops: bool) -> Result<(), Unfit> {
    let archive_name = qualified_name(archive).unwrap_or_default();
    // (the same test as each batch's: one partition tree, whatever the branch)
    if super::same_tree(table, archive) {
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
    rules_of_use(table, name, &archive_name, archive, drops)
}

/// The rules of [`rules`] that depend on how the archive is used: no Citus table, no partitions
/// dropped whole, no chain of archives back to the table.
fn rules_of_use(
    table: Oid,
    name: &str,
    archive_name: &str,
    archive: Oid,
    drops: bool,
) -> Result<(), Unfit> {
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

/// The archive `archive`'s own columns (none of `table`'s name) that no archived row can fill:
/// NOT NULL, without a default, not identity nor generated; quoted, or `None`.
fn required_own_columns(table: Oid, archive: Oid) -> Option<String> {
    crate::read::one::<String>(
        "SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname::pg_catalog.text), ', ' \
                                      ORDER BY a.attnum) \
         FROM pg_catalog.pg_attribute a \
         WHERE a.attrelid OPERATOR(pg_catalog.=) $2 AND a.attnum OPERATOR(pg_catalog.>) 0 \
           AND NOT a.attisdropped AND a.attnotnull AND NOT a.atthasdef \
           AND a.attidentity OPERATOR(pg_catalog.=) ''::pg_catalog.\"char\" \
           AND a.attgenerated OPERATOR(pg_catalog.=) ''::pg_catalog.\"char\" \
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_attribute t \
                           WHERE t.attrelid OPERATOR(pg_catalog.=) $1 \
                             AND t.attnum OPERATOR(pg_catalog.>) 0 AND NOT t.attisdropped \
                             AND t.attname OPERATOR(pg_catalog.=) a.attname)",
        &[table.into(), archive.into()],
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
