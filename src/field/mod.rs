//! Field TTLs: a point in time inside a JSON document whose expiry removes a subtree of the
//! document (`doc #- '{otp}'`) instead of the row (docs/field_ttl.md). One-time codes,
//! reset tokens, temporary flags: the document stays, the field goes.
//!
//! A field TTL is a row of `jsonb_ttl_internal.ttl_field` (its table, its date's path, the
//! keys it removes, `expire_after`) and a btree index on the date, like a TTL index's, partial
//! on the date being there. The worker purges it as one more target of its table
//! ([`catalog::Part::Field`]) with the same batches, limits, frame and owner as rows, its
//! statements an `UPDATE` in place of the `DELETE` ([`TtlIndex::removal`]): removing the
//! subtree removes the date, so an updated document leaves the index and is never taken again.
//! Its index is found by what it is (its expression and predicate on each table the batches
//! change), never by name alone ([`index_on`]).
//!
//! [`api`] has the SQL functions (`ttl_field_create`, `ttl_field_alter`, `ttl_field_drop`,
//! `ttl_field_expire_now`).

pub mod api;
mod dates;
pub(crate) use dates::{dates_and_removals, related, removes_date};
pub use dates::{guard_targets, refuse_removing, removes_a_ttl_date, serialize_dates};

use crate::catalog::{self, FieldTtl, Part, TtlIndex};
use crate::extension::{Extension, INTERNAL_SCHEMA as INTERNAL};
use crate::reference;
use jsonb_ttl_core::parse::NumericUnit;
use jsonb_ttl_core::path::{ColumnKind, Resolved};
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use pgrx::spi::{quote_identifier, quote_literal};
use std::sync::atomic::{AtomicU32, Ordering};

/// The most field TTLs one table may have (each counts in a part of the table's statistics).
pub const MAX_FIELDS: i16 = 200;

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

/// The table a field TTL's statement is updating now in this backend (0: none): the touch
/// trigger leaves the row's point in time alone for that table's rows (the update is the
/// worker's, not the application's); for any other table, and in the worker's deletes, it
/// touches as always.
static UPDATING: AtomicU32 = AtomicU32::new(0);

/// Runs `f` (the statements of a field TTL of `table`) with [`is_updating`] true for `table`,
/// false again after, whether `f` returns or raises.
pub fn updating<R>(table: Oid, f: impl FnOnce() -> R) -> R {
    struct Reset(u32);
    impl Drop for Reset {
        fn drop(&mut self) {
            UPDATING.store(self.0, Ordering::SeqCst);
        }
    }
    let _reset = Reset(UPDATING.swap(table.to_u32(), Ordering::SeqCst));
    f()
}

/// Whether a field TTL's statement is updating `table` now (see [`updating`]).
pub fn is_updating(table: Oid) -> bool {
    table != Oid::INVALID && UPDATING.load(Ordering::SeqCst) == table.to_u32()
}

/// Whether this database's catalog has field TTLs (0.4.0's SQL and later).
pub fn available() -> bool {
    crate::read::one::<bool>(
        &format!("SELECT pg_catalog.to_regclass('{INTERNAL}.ttl_field') IS NOT NULL"),
        &[],
    )
    .unwrap_or(false)
}

/// The reference expression of a field TTL (its date, read in UTC) and its index's predicate.
pub fn index_expressions(
    ext: &Extension,
    resolved: &Resolved,
    unit: NumericUnit,
) -> Result<(String, String), String> {
    let expression = reference::reference_expr(ext, resolved, unit, None)?;
    let predicate = reference::index_predicate(&expression, None);
    Ok((expression, predicate))
}

/// The valid, ready index of `table` that is the index of a field TTL with these expressions,
/// by what it is ([`crate::build::matching_index`]): the one named `name` first, else the
/// lowest OID.
pub fn index_on(table: Oid, expression: &str, predicate: &str, name: &str) -> Option<Oid> {
    crate::build::matching_index(table, expression, predicate, Some(name)).map(|(oid, _)| oid)
}

/// The version of a field TTL's catalog row (`xmin:ctid`), as [`catalog::VERSION_SQL`].
const VERSION_SQL: &str = "f.xmin::pg_catalog.text OPERATOR(pg_catalog.||) ':' \
     OPERATOR(pg_catalog.||) f.ctid::pg_catalog.text";

/// The read of a field TTL's definition (`$1` its table, `$2` its number): `expire_after` and
/// version, as [`catalog::definition_sql`] for a TTL index (`locked`: `FOR SHARE SKIP
/// LOCKED`, so `ttl_field_alter` and `ttl_field_drop` wait for the batch that holds it).
pub fn definition_sql(locked: bool) -> String {
    definition_sql_with(match locked {
        true => " FOR SHARE SKIP LOCKED",
        false => "",
    })
}

/// [`definition_sql`] for a caller's own call (`ttl_field_expire_now`), which waits for a
/// change under way (see [`crate::catalog::definition_sql_waiting`]).
pub fn definition_sql_waiting() -> String {
    definition_sql_with(" FOR SHARE")
}

fn definition_sql_with(lock: &str) -> String {
    format!(
        "SELECT f.expire_after, {VERSION_SQL} FROM {INTERNAL}.ttl_field f \
         WHERE f.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
           AND f.field_id OPERATOR(pg_catalog.=) $2{lock}"
    )
}

/// The field TTLs of `table` (the table they were created on), or of every table, as the
/// targets of a batch: one per field TTL and table rows are changed in (the table, or each
/// leaf partition). Under Citus, none of a Citus table (refused at creation; one distributed
/// since is left alone). Finding each one's index locks its table (`AccessShareLock`),
/// waiting if need be: for the SQL functions, called on the caller's own table.
pub fn load(ext: &Extension, table: Option<Oid>) -> Vec<TtlIndex> {
    load_with(ext, table, true).0
}

/// [`load`] for the worker's catalog read, which never waits on a tenant's lock: a table whose
/// lock is not free now has its field TTLs' index unread (not ready: no batch), and the second
/// value is false, so that the worker reads them again at its next pass.
pub fn load_for_worker(ext: &Extension) -> (Vec<TtlIndex>, bool) {
    load_with(ext, None, false)
}

fn load_with(ext: &Extension, table: Option<Oid>, wait: bool) -> (Vec<TtlIndex>, bool) {
    if !available() {
        return (Vec::new(), true);
    }
    let targets = catalog::targets_sql(ext, catalog::Scope::Targets, false);
    let sql = format!(
        "SELECT l.relid, \
                pg_catalog.quote_ident(n.nspname::pg_catalog.text) OPERATOR(pg_catalog.||) '.' \
                  OPERATOR(pg_catalog.||) pg_catalog.quote_ident(c.relname::pg_catalog.text), \
                l.relid::pg_catalog.regclass::pg_catalog.text, c.relowner, \
                t.column_name::pg_catalog.text, a.atttypid, t.json_path, t.path, \
                t.expire_after, t.numeric_unit, t.index_name::pg_catalog.text, \
                t.table_oid::pg_catalog.oid, coalesce(a.attnum, 0::pg_catalog.int2), \
                c.relkind::pg_catalog.text, t.field_id, t.remove_path, \
                t.xmin::pg_catalog.text OPERATOR(pg_catalog.||) ':' \
                  OPERATOR(pg_catalog.||) t.ctid::pg_catalog.text \
         FROM {INTERNAL}.ttl_field t \
         CROSS JOIN LATERAL {targets} l \
         JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) l.relid \
         JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
         LEFT JOIN LATERAL (SELECT a.atttypid, a.attnum FROM pg_catalog.pg_attribute a \
                WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid \
                  AND a.attname OPERATOR(pg_catalog.=) t.column_name AND NOT a.attisdropped \
                OFFSET 0) a ON true \
         WHERE $1 IS NULL OR t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
         ORDER BY t.table_oid::pg_catalog.oid, t.field_id, l.relid"
    );
    let rows: Vec<TtlIndex> = Spi::connect(|client| {
        client
            .select(&sql, None, &[table.into()])
            .expect("the field TTL catalog is readable")
            .map(|row| from_row(&row))
            .collect()
    });
    let mut all_read = true;
    let targets = rows
        .into_iter()
        .filter(|target| !crate::citus::citus_table(target.root))
        .map(|mut target| {
            all_read &= find_index(ext, &mut target, wait);
            target
        })
        .collect();
    (targets, all_read)
}

/// Finds the index of field TTL target `target` on its table (see [`index_on`]), taking the
/// table's lock (`wait`), or only if it is free now and letting it go once read (the
/// worker's catalog read: at 10,000 tables, holding every one to the end of the read would
/// fill the lock table); whether it could be read. A column no longer jsonb (retyped, or
/// dropped: no kind) has no field to remove: not ready.
fn find_index(ext: &Extension, target: &mut TtlIndex, wait: bool) -> bool {
    let share = pg_sys::AccessShareLock as pg_sys::LOCKMODE;
    let free = wait || unsafe { pg_sys::ConditionalLockRelationOid(target.table, share) };
    let usable = free && target.resolved.kind == ColumnKind::Jsonb && !target.foreign;
    target.index_oid = index_expressions(ext, &target.resolved, target.unit)
        .ok()
        .filter(|_| usable)
        .and_then(|(expression, predicate)| {
            index_on(target.table, &expression, &predicate, &target.index_name)
        });
    if !wait && free {
        unsafe { pg_sys::UnlockRelationOid(target.table, share) };
    }
    target.index_ready = target.index_oid.is_some();
    if let Some(field) = target.field.as_mut() {
        field.busy = !free;
    }
    free
}

/// One row of [`load`]'s query as a target: the columns every target's row starts with
/// ([`catalog::target_of_row`]), and the field TTL's own. Not for fields: the safety brake
/// (it guards rows, docs/field_ttl.md), the TTL index's options and controls.
fn from_row(row: &pgrx::spi::SpiHeapTupleData) -> TtlIndex {
    let id = row.get::<i16>(15).ok().flatten().unwrap_or(0);
    TtlIndex {
        part: Part::Field(id),
        version: row.get::<String>(17).ok().flatten().unwrap_or_default(),
        field: Some(FieldTtl {
            id,
            remove: row
                .get::<Vec<String>>(16)
                .ok()
                .flatten()
                .unwrap_or_default(),
            busy: false,
        }),
        ..catalog::target_of_row(row)
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::{is_updating, load, update_head, updating};
    use crate::extension::Extension;
    use pgrx::pg_sys::Oid;
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

    #[pg_test]
    fn a_field_ttl_is_a_target_with_its_own_index() {
        Spi::run(
            "CREATE TABLE codes (id int, doc jsonb);
             SELECT ttl_field_create('codes', 'otp.at', interval '1 minute');",
        )
        .expect("field TTL made");
        let targets = load(&Extension::current(), None);
        assert_eq!(targets.len(), 1);
        let target = &targets[0];
        let field = target.field.as_ref().expect("a field target");
        assert_eq!(field.remove, vec!["otp".to_string()]);
        assert!(target.index_ready, "its index is found by what it is");
        let named = Spi::get_one::<Oid>("SELECT 'codes_ttl_field_idx'::regclass::oid")
            .expect("read")
            .expect("the index");
        assert_eq!(target.index_oid, Some(named));
        // renamed, it is still found; a look-alike with another predicate is not taken
        Spi::run(
            "ALTER INDEX codes_ttl_field_idx RENAME TO whatever;
             CREATE INDEX look_alike ON codes ((doc->'otp'->>'at'));",
        )
        .expect("renamed");
        let again = load(&Extension::current(), None);
        assert_eq!(again[0].index_oid, Some(named));
    }

    #[pg_test]
    fn updating_is_reset_even_when_its_work_raises() {
        let table = Oid::from(424242u32);
        assert!(!is_updating(table));
        let inside = updating(table, || is_updating(table));
        assert!(inside);
        let raised = std::panic::catch_unwind(|| updating(table, || panic!("raised")));
        assert!(raised.is_err());
        assert!(!is_updating(table), "reset on the way out");
    }
}
