//! The table a SQL function is called on: checked (it exists, is an ordinary permanent table,
//! and the caller has its owner's privileges), its TTL index, and that index's catalog row.
//! Below the SQL face, the brake and the partitions alike.

use crate::catalog::{self, Scope, TtlIndex};
use crate::error::raise;
use crate::extension::Extension;
use crate::owner;
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;
use pgrx::spi::quote_identifier;
use pgrx::PgSqlErrorCode;

/// `value`, or an error naming the argument `name` that was NULL.
pub(crate) fn required<T>(value: Option<T>, name: &str) -> T {
    value.unwrap_or_else(|| {
        raise(
            PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            format!("{name} must not be NULL"),
            format!("Pass a value for {name}."),
        )
    })
}

/// A table the caller may manage a TTL index on.
pub(crate) struct Table {
    pub oid: Oid,
    pub partitioned: bool,
    /// `schema.table`, quoted, for messages.
    pub name: String,
    pub schema: String,
    pub relname: String,
}

/// What pg_class says of a relation: its kind, its persistence ('p'ermanent, 'u'nlogged,
/// 't'emporary), its owner, its schema and its name.
struct Relation {
    kind: String,
    persistence: String,
    owner: Oid,
    schema: String,
    relname: String,
}

fn relation(oid: Oid) -> Relation {
    let row = Spi::get_three_with_args::<String, Oid, String>(
        "SELECT c.relkind::pg_catalog.text OPERATOR(pg_catalog.||) c.relpersistence::pg_catalog.text, \
                c.relowner, n.nspname::pg_catalog.text \
         FROM pg_catalog.pg_class c \
         JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
         WHERE c.oid OPERATOR(pg_catalog.=) $1",
        &[oid.into()],
    );
    let (kind, owner, schema) = match row {
        Ok((Some(kind), Some(owner), Some(schema))) => (kind, owner, schema),
        _ => raise(
            PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
            format!("relation with OID {} does not exist", oid.to_u32()),
            "Pass the name of an existing table.",
        ),
    };
    let (kind, persistence) = kind.split_at(1);
    let relname = Spi::get_one_with_args::<String>(
        "SELECT relname::pg_catalog.text FROM pg_catalog.pg_class \
         WHERE oid OPERATOR(pg_catalog.=) $1",
        &[oid.into()],
    )
    .ok()
    .flatten()
    .unwrap_or_default();
    Relation {
        kind: kind.to_string(),
        persistence: persistence.to_string(),
        owner,
        schema,
        relname,
    }
}

/// Raises unless a relation of kind `kind` (pg_class.relkind) is an ordinary or partitioned
/// table.
fn refuse_other_kinds(kind: &str, name: &str) {
    let what = match kind {
        "r" | "p" => return,
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

/// Checks that `tbl` is an ordinary table the caller owns.
pub(crate) fn owned_table(tbl: Option<Oid>) -> Table {
    let oid = required(tbl, "tbl");
    let relation = relation(oid);
    let name = format!(
        "{}.{}",
        quote_identifier(&relation.schema),
        quote_identifier(&relation.relname)
    );
    refuse_other_kinds(&relation.kind, &name);
    if relation.persistence == "t" {
        raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            // (its schema, pg_temp_N, says nothing to the caller)
            format!(
                "{} is a temporary table",
                quote_identifier(&relation.relname)
            ),
            "The background worker cannot see another session's temporary tables: \
             delete from a temporary table yourself, or give the TTL index to a permanent one.",
        );
    }
    if !owner::has_privileges_of(relation.owner) {
        raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("must be owner of table {name}"),
            "Only the table's owner (or a member of the owning role) manages its TTL index.",
        );
    }
    Table {
        oid,
        partitioned: relation.kind == "p",
        name,
        schema: relation.schema,
        relname: relation.relname,
    }
}

/// The TTL index of `table`, if it has one.
pub(crate) fn existing(ext: &Extension, table: &Table) -> Option<TtlIndex> {
    catalog::load(ext, Some(table.oid), Scope::Entries)
        .into_iter()
        .next()
}

/// Locks the catalog row of `table`'s TTL index until the transaction ends (`FOR UPDATE`, as the
/// catalog's owner): a change that checks its options against the others (`archive_to` and
/// `drop_partitions => 'drop'`) reads them after a concurrent change committed, not before.
pub(crate) fn lock_entry(ext: &Extension, table: &Table) {
    owner::as_catalog_owner(ext.owner(), || {
        Spi::run_with_args(
            &format!(
                "SELECT FROM {catalog} WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
                 FOR UPDATE",
                catalog = ext.catalog(),
            ),
            &[table.oid.into()],
        )
    })
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot lock the TTL index: {e}"));
}

/// The TTL index of `table`, or an error saying it has none.
pub(crate) fn ttl_index_of(ext: &Extension, table: &Table) -> TtlIndex {
    existing(ext, table).unwrap_or_else(|| no_ttl_index(table))
}

pub(crate) fn no_ttl_index(table: &Table) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
        format!("table {} has no TTL index", table.name),
        "Create one with ttl_index_create().",
    )
}

/// Sets `column` of the catalog entry of `table` to `value`, as the catalog's owner.
pub(crate) fn set_column(
    ext: &Extension,
    table: &Table,
    column: &str,
    value: pgrx::datum::DatumWithOid,
) {
    owner::as_catalog_owner(ext.owner(), || {
        Spi::run_with_args(
            &format!(
                "UPDATE {catalog} SET {column} = $2 \
                 WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
                catalog = ext.catalog(),
            ),
            &[table.oid.into(), value],
        )
    })
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot update the TTL index: {e}"));
}
