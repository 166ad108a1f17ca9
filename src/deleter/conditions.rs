//! The SQL of a target's conditions, kept out of the catalog, which is data: its reference time,
//! when a row is expired, its index's predicate, and the head of what removes a row (`DELETE`,
//! or a field TTL's `UPDATE`); and a target as its batch names it ([`Named`]: its table's
//! current names, its archive's), whose removing statements move the rows into the archive
//! ([`Named::archived`]). Every statement of [`super::statements`] is built from these.

use crate::catalog::{Part, TtlIndex};
use crate::extension::Extension;
use crate::reference;
use pgrx::spi::{quote_identifier, quote_literal};

impl TtlIndex {
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

    /// The head of this target's statements, before their `WHERE`: `DELETE FROM ONLY tbl`, or
    /// for a field TTL the `UPDATE` that removes its subtree from each document
    /// (`UPDATE ONLY tbl SET doc = doc #- '{otp}'`, see [`update_head`]), with the column's
    /// current name.
    pub fn removal(&self) -> String {
        match &self.field {
            None => format!("DELETE FROM ONLY {}", self.qualified_table),
            Some(field) => update_head(&self.qualified_table, &self.resolved.column, &field.remove),
        }
    }
}

/// `UPDATE ONLY table SET column = column #- '{keys}'`: the head of a field TTL's statements
/// (see [`TtlIndex::removal`]), every name quoted, the operator qualified.
pub fn update_head(qualified_table: &str, column: &str, remove: &[String]) -> String {
    let column = quote_identifier(column);
    let keys: Vec<String> = remove.iter().map(quote_literal).collect();
    format!(
        "UPDATE ONLY {qualified_table} SET {column} = {column} OPERATOR(pg_catalog.#-) \
         ARRAY[{}]::pg_catalog.text[]",
        keys.join(", ")
    )
}

/// A target as its batch names it, its table locked ([`crate::batch_frame::enter`]): the
/// target with its table's current names, and its archive, read under the batch's locks
/// ([`crate::archive::resolve`]; `Err`: it no longer exists). It reads as the target
/// (`Deref`).
#[derive(Clone, Debug)]
pub struct Named {
    pub index: TtlIndex,
    pub archive: Option<Result<Archive, String>>,
}

impl std::ops::Deref for Named {
    type Target = TtlIndex;
    fn deref(&self) -> &TtlIndex {
        &self.index
    }
}

impl Named {
    /// `delete`, a batch statement of [`crate::deleter`], as this target runs it: unchanged,
    /// or with its rows moved into the archive ([`wrap`]; an error when the
    /// archive no longer exists).
    pub fn archived(&self, delete: String) -> Result<String, String> {
        match (self.archive_to, &self.archive) {
            (None, _) => Ok(delete),
            (Some(_), Some(Ok(archive))) => Ok(wrap(&delete, archive)),
            (Some(_), Some(Err(e))) => Err(e.clone()),
            (Some(_), None) => Err(format!(
                "jsonb_ttl: the archive of {} was not read before its batch",
                self.display_name
            )),
        }
    }
}

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

/// `delete` (one of the batch statements of [`super::statements`], starting with
/// [`crate::planner::MARKER`]) with its rows moved into `archive`: a statement that returns
/// one row, the count of rows the DELETE removed (see
/// [`crate::generic_plan::GenericPlan::removed`]).
pub fn wrap(delete: &str, archive: &Archive) -> String {
    let marker = crate::planner::MARKER;
    let delete = delete.strip_prefix(marker).unwrap_or(delete);
    format!(
        "{marker}WITH gone AS ({delete} RETURNING {columns}), \
         archived AS (INSERT INTO {into} ({columns}) SELECT {columns} FROM gone{on_conflict}) \
         SELECT pg_catalog.count(*) FROM gone",
        columns = archive.columns,
        into = archive.qualified,
        on_conflict = on_conflict(archive),
    )
}

/// What an INSERT into `archive` adds: a foreign archive skips a row already there (the copy
/// a crash between the two commits leaves, see the module's text).
pub(super) fn on_conflict(archive: &Archive) -> &'static str {
    match archive.foreign {
        true => " ON CONFLICT DO NOTHING",
        false => "",
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::update_head;
    use pgrx::prelude::*;

    #[pg_test]
    fn update_head_quotes_every_name_and_key() {
        Spi::run(
            "CREATE TABLE \"t t\" (id int, \"d\"\"oc\" jsonb);
             INSERT INTO \"t t\" VALUES (1, '{\"o''tp\": {\"a\": 1}, \"k\": 2}');",
        )
        .expect("table made");
        let head = update_head(
            "public.\"t t\"",
            "d\"oc",
            &["o'tp".to_string(), "a".to_string()],
        );
        assert_eq!(
            head,
            "UPDATE ONLY public.\"t t\" SET \"d\"\"oc\" = \"d\"\"oc\" OPERATOR(pg_catalog.#-) \
             ARRAY['o''tp', 'a']::pg_catalog.text[]"
        );
        Spi::run(&format!("{head} WHERE id OPERATOR(pg_catalog.=) 1")).expect("runs");
        let doc = Spi::get_one::<pgrx::JsonB>("SELECT \"d\"\"oc\" FROM \"t t\"")
            .expect("read")
            .expect("a document");
        assert_eq!(doc.0, serde_json::json!({"o'tp": {}, "k": 2}));
    }
}
