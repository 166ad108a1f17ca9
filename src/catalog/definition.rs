//! The one read of a definition: a TTL index's or a field TTL's catalog row, its
//! `expire_after` and its version (`xmin:ctid`), plain, locked without waiting (the worker's
//! batches) or locked waiting (a caller's `ttl_expire_now`, `ttl_field_expire_now`); every
//! batch and every call that purges goes through [`read_definition`] and [`Definition::governs`].

use super::{Part, TtlIndex};
use crate::extension::{Extension, INTERNAL_SCHEMA as INTERNAL};
use pgrx::datum::Interval;
use pgrx::prelude::*;
use pgrx::spi::OwnedPreparedStatement;

/// The catalog row's version (`xmin:ctid`): any change of its definition (an alter, a pause,
/// a resume, the brake's own) writes a new one. A batch runs only under the version its
/// statements were built from.
pub(super) const VERSION_SQL: &str = "t.xmin::pg_catalog.text OPERATOR(pg_catalog.||) ':' \
     OPERATOR(pg_catalog.||) t.ctid::pg_catalog.text";

/// How a definition is read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Lock {
    /// Read only: no transaction ID, no WAL.
    No,
    /// Locked until the transaction ends (`FOR SHARE`), and not returned while a change of it
    /// is under way (`SKIP LOCKED`: a batch of the worker does not wait for it). A
    /// `ttl_index_alter` or `ttl_index_pause` either committed before, and shows as a new
    /// version, or waits for the transaction that locked the row.
    SkipLocked,
    /// Locked, waiting for a change under way (`FOR SHARE`), as any statement of a caller's
    /// transaction would; under REPEATABLE READ, a change committed after the transaction's
    /// snapshot is a serialization failure.
    Wait,
}

/// The read of a definition's catalog row (`$1`: the table it was created on; for a field
/// TTL, `$2`: its number): its `expire_after` and version.
pub fn definition_sql(ext: &Extension, field: bool, lock: Lock) -> String {
    let (catalog, field) = match field {
        true => (
            format!("{INTERNAL}.ttl_field"),
            " AND t.field_id OPERATOR(pg_catalog.=) $2",
        ),
        false => (ext.catalog(), ""),
    };
    let lock = match lock {
        Lock::No => "",
        Lock::SkipLocked => " FOR SHARE SKIP LOCKED",
        Lock::Wait => " FOR SHARE",
    };
    format!(
        "SELECT t.expire_after, {VERSION_SQL} FROM {catalog} t \
         WHERE t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1{field}{lock}"
    )
}

/// A definition as [`read_definition`] found it.
#[derive(Clone, Debug)]
pub struct Definition {
    pub expire_after: Option<Interval>,
    pub version: String,
}

impl Definition {
    /// The `expire_after` a batch of `index` runs under when this is the version `index` was
    /// loaded from (`None` when it changed): 0 for the rows with a TTL of their own, keyed on
    /// their expiry. (NOT NULL in the catalog: a NULL would expire everything, so it is never
    /// taken as 0.)
    pub fn governs(&self, index: &TtlIndex) -> Option<Interval> {
        match (self.version == index.version, index.part) {
            (false, _) => None,
            (true, Part::OwnTtl) => Some(Interval::from_micros(0)),
            (true, _) => self.expire_after,
        }
    }
}

/// The statement that reads a definition: the text of [`definition_sql`], or its prepared form
/// (the worker keeps one across passes).
pub enum Statement<'a> {
    Text(&'a str),
    Prepared(&'a OwnedPreparedStatement),
}

/// Reads the definition of `index` with `statement` (built by [`definition_sql`] for it with
/// `lock`), in an SPI connection of its own: `None` when it is gone or (`Lock::SkipLocked`) a
/// change holds it; an error when the catalog cannot be read.
pub fn read_definition(
    index: &TtlIndex,
    lock: Lock,
    statement: Statement,
) -> Result<Option<Definition>, pgrx::spi::SpiError> {
    let mut args = vec![index.root.into()];
    if let Some(field) = &index.field {
        args.push(field.id.into());
    }
    let read = |rows: pgrx::spi::SpiTupleTable| match rows.is_empty() {
        true => Ok(None),
        false => rows
            .first()
            .get_two::<Interval, String>()
            .map(|(expire_after, version)| {
                Some(Definition {
                    expire_after,
                    version: version.unwrap_or_default(),
                })
            }),
    };
    match (lock, statement) {
        // read-only: no transaction ID, no WAL
        (Lock::No, Statement::Text(sql)) => {
            Spi::connect(|client| read(client.select(sql, Some(1), &args)?))
        }
        (Lock::No, Statement::Prepared(prepared)) => {
            Spi::connect(|client| read(client.select(prepared, Some(1), &args)?))
        }
        // a row lock is a write: the non-read-only SPI
        (_, Statement::Text(sql)) => {
            Spi::connect_mut(|client| read(client.update(sql, Some(1), &args)?))
        }
        (_, Statement::Prepared(prepared)) => {
            Spi::connect_mut(|client| read(client.update(prepared, Some(1), &args)?))
        }
    }
}

/// Whether the catalog row of `index` is still the version it was loaded from, locked now
/// until the transaction ends (`Lock::SkipLocked`): false when it changed, is being changed,
/// or is gone.
pub fn definition_holds(index: &TtlIndex) -> bool {
    let Some(ext) = Extension::find() else {
        return false;
    };
    let sql = definition_sql(&ext, index.field.is_some(), Lock::SkipLocked);
    // (an error reading it: not held, as a change would be)
    read_definition(index, Lock::SkipLocked, Statement::Text(&sql))
        .ok()
        .flatten()
        .is_some_and(|definition| definition.version == index.version)
}
