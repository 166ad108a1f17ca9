//! Which indexes are a TTL index's, by OID (`jsonb_ttl_internal.index_oid`), never by name,
//! which another role can squat or reuse: recording them when the API builds or adopts one,
//! after CREATE INDEX (the ddl_command_end event trigger) and before each pass of the worker
//! (a `REINDEX CONCURRENTLY` makes a new one); dropping only what is recorded; telling one of
//! ours by what it is ([`ttl_index_role`]). docs/security.md has the model.

use crate::build::{self, index_specs};
use crate::catalog::{self, TtlIndex};
use crate::extension::Extension;
use jsonb_ttl_core::path::ColumnKind;
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;

/// The index recorded for the catalog column `role` (`index_name`, `row_ttl_index_name`) of the
/// TTL index of `table`, if it is still an index of that table: objects are followed by OID
/// (`jsonb_ttl_internal.index_oid`), never by name, which another role can squat or reuse.
///
/// In a database still at an older version's SQL, which records no OIDs, the index of that
/// name in the table's schema, if it is an index of that table.
pub fn recorded_index(ext: &Extension, table: Oid, role: &str) -> Option<Oid> {
    if !ext.has_internal_schema() {
        return Spi::get_one_with_args::<Oid>(
            &format!(
                "SELECT i.indexrelid FROM {catalog} t \
                 JOIN pg_catalog.pg_class r ON r.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid \
                 JOIN pg_catalog.pg_class x ON x.relnamespace OPERATOR(pg_catalog.=) r.relnamespace \
                  AND x.relname OPERATOR(pg_catalog.=) \
                      (pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) $2::pg_catalog.text)::pg_catalog.name \
                 JOIN pg_catalog.pg_index i ON i.indexrelid OPERATOR(pg_catalog.=) x.oid \
                  AND i.indrelid OPERATOR(pg_catalog.=) r.oid \
                 WHERE t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1", catalog = ext.catalog(),
            ),
            &[table.into(), role.into()],
        )
        .ok()
        .flatten();
    }
    Spi::get_one_with_args::<Oid>(
        "SELECT o.index_oid FROM jsonb_ttl_internal.index_oid o \
         JOIN pg_catalog.pg_index i ON i.indexrelid OPERATOR(pg_catalog.=) o.index_oid \
         WHERE o.table_oid OPERATOR(pg_catalog.=) $1 \
           AND o.role OPERATOR(pg_catalog.=) $2::pg_catalog.text \
           AND i.indrelid OPERATOR(pg_catalog.=) $1",
        &[table.into(), role.into()],
    )
    .ok()
    .flatten()
}

/// Drops `index` if it is still an index of `table` (a partitioned index drops its partitions'
/// with it). Nothing else is ever dropped: not an index that merely has the recorded name.
pub fn drop_index_of(table: Oid, index: Oid) {
    let name = Spi::get_one_with_args::<String>(
        "SELECT i.indexrelid::pg_catalog.regclass::pg_catalog.text FROM pg_catalog.pg_index i \
         WHERE i.indexrelid OPERATOR(pg_catalog.=) $1 AND i.indrelid OPERATOR(pg_catalog.=) $2",
        &[index.into(), table.into()],
    )
    .ok()
    .flatten();
    if let Some(name) = name {
        // regclass output under our pinned search_path: qualified and quoted
        Spi::run(&format!("DROP INDEX {name}"))
            .unwrap_or_else(|e| error!("jsonb_ttl: DROP INDEX failed: {e}"));
    }
}

/// Drops the index recorded for the catalog column `role` of the TTL index of `table`, if
/// there is one (not built yet: `build => false`; dropped already: by the sql_drop event
/// trigger).
pub fn drop_recorded_index(ext: &Extension, table: Oid, role: &str) {
    if let Some(index) = recorded_index(ext, table, role) {
        drop_index_of(table, index);
    }
}

/// Records the OIDs of the indexes of the TTL index of `tbl` (`jsonb_ttl_internal.index_oid`):
/// for each of its catalog columns, the index of `tbl` itself (`indrelid`) that is ours by its
/// expression and predicate ([`ttl_index_role`]) and has the recorded name, or, when that name
/// was cleared (its index dropped), the first such index under any name, whose name the
/// catalog then takes. A recorded index that is no longer there is forgotten. Run after the
/// API creates, adopts or rebuilds an index, by the ddl_command_end event trigger after CREATE
/// INDEX (a restore, `build_sql`), and by the worker for an entry whose record is stale (a
/// `REINDEX CONCURRENTLY` makes a new index). Writes as the catalog's owner.
pub fn track_indexes(ext: &Extension, tbl: Oid) {
    if !ext.has_internal_schema() {
        return; // an older version's SQL records no OIDs: see recorded_index
    }
    if let Some(entry) = catalog::load(ext, Some(tbl), catalog::Scope::Entries)
        .into_iter()
        .next()
    {
        track_entry(ext, &entry);
    }
}

/// [`track_indexes`] for the TTL index `entry`, as read already.
pub fn track_entry(ext: &Extension, entry: &TtlIndex) {
    if !ext.has_internal_schema() {
        return;
    }
    let tbl = entry.root;
    let mut roles = vec![("index_name", Some(entry.index_name.clone()))];
    if let Some(row_ttl) = &entry.row_ttl {
        let name = (!row_ttl.index_name.is_empty()).then(|| row_ttl.index_name.clone());
        roles.push(("row_ttl_index_name", name));
    }
    // every index of the table shaped as ours, and the shapes of ours: each read once
    let candidates = build::shaped_indexes(tbl, false);
    let shapes = shapes(ext, entry, tbl);
    let owner = ext.owner();
    for (role, name) in roles {
        let ours = |index: &&build::Shaped| {
            shapes
                .iter()
                .any(|(column, shape)| *column == role && index.is(shape))
        };
        let by_name = name
            .as_ref()
            .and_then(|name| candidates.iter().filter(|c| &c.name == name).find(ours));
        // no index of the recorded name, and none recorded that is still there (a dropped
        // per-row index, or a REINDEX CONCURRENTLY's new index renamed since): any of ours
        let found = by_name.or_else(|| {
            recorded_index(ext, tbl, role)
                .is_none()
                .then(|| candidates.iter().find(ours))
                .flatten()
        });
        crate::owner::as_catalog_owner(owner, || match found {
            Some(index) => record(ext, tbl, role, index.oid, &index.name),
            None => forget_gone(tbl, role),
        })
        .unwrap_or_else(|e| error!("jsonb_ttl: cannot record the TTL index's OID: {e}"));
    }
}

/// Records `index` (named `relname`) as the index of the catalog column `role` of the TTL index
/// of `tbl`, and the catalog takes its name.
fn record(
    ext: &Extension,
    tbl: Oid,
    role: &str,
    index: Oid,
    relname: &str,
) -> Result<(), pgrx::spi::Error> {
    Spi::run_with_args(
        "DELETE FROM jsonb_ttl_internal.index_oid \
         WHERE (table_oid OPERATOR(pg_catalog.=) $1 AND role OPERATOR(pg_catalog.=) $2::pg_catalog.text) \
            OR index_oid OPERATOR(pg_catalog.=) $3",
        &[tbl.into(), role.into(), index.into()],
    )?;
    // The worker (before a pass) and a CREATE INDEX CONCURRENTLY's event trigger may record
    // the same index at once: whoever comes second finds it recorded.
    Spi::run_with_args(
        "INSERT INTO jsonb_ttl_internal.index_oid (index_oid, table_oid, role) \
         VALUES ($1, $2, $3::pg_catalog.text) ON CONFLICT DO NOTHING",
        &[index.into(), tbl.into(), role.into()],
    )?;
    // role is one of our two column names, never input
    Spi::run_with_args(
        &format!(
            "UPDATE {catalog} SET {role} = $2::pg_catalog.name \
             WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
               AND {role} IS DISTINCT FROM $2::pg_catalog.name",
            catalog = ext.catalog(),
        ),
        &[tbl.into(), relname.into()],
    )
}

/// Forgets the record of the catalog column `role` of the TTL index of `tbl` if its index is
/// no longer an index of `tbl`.
fn forget_gone(tbl: Oid, role: &str) -> Result<(), pgrx::spi::Error> {
    Spi::run_with_args(
        "DELETE FROM jsonb_ttl_internal.index_oid o \
         WHERE o.table_oid OPERATOR(pg_catalog.=) $1 AND o.role OPERATOR(pg_catalog.=) $2::pg_catalog.text \
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_index i \
                           WHERE i.indexrelid OPERATOR(pg_catalog.=) o.index_oid \
                             AND i.indrelid OPERATOR(pg_catalog.=) $1)",
        &[tbl.into(), role.into()],
    )
}

/// The TTL tables whose index of the recorded name is not the one recorded by OID, or whose
/// recorded OID is no longer an index of theirs (a `REINDEX CONCURRENTLY` or an `ALTER COLUMN
/// … TYPE` makes a new index and drops the old one without an event; a restore whose indexes
/// came before the event trigger could see them): the worker records them again
/// ([`track_indexes`]) before each pass, so a stale OID never stays to be reused. Only an
/// index of the table itself counts (`indrelid`). The recorded OIDs are checked once, not once
/// per TTL table (a scan of the records per table made this quadratic: 50 % of an idle pass
/// over 1,000 tables).
pub fn stale_records(ext: &Extension) -> Vec<Oid> {
    if !ext.has_internal_schema() {
        return Vec::new();
    }
    let sql = format!(
        "SELECT t.table_oid::pg_catalog.oid FROM {catalog} t \
         JOIN pg_catalog.pg_class r ON r.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid \
         WHERE EXISTS ( \
           SELECT FROM (VALUES ('index_name'::pg_catalog.text, t.index_name), \
                               ('row_ttl_index_name'::pg_catalog.text, t.row_ttl_index_name)) v(role, name) \
           JOIN pg_catalog.pg_class x ON x.relnamespace OPERATOR(pg_catalog.=) r.relnamespace \
                                     AND x.relname OPERATOR(pg_catalog.=) v.name \
           JOIN pg_catalog.pg_index i ON i.indexrelid OPERATOR(pg_catalog.=) x.oid \
                                     AND i.indrelid OPERATOR(pg_catalog.=) r.oid \
           WHERE NOT EXISTS (SELECT FROM jsonb_ttl_internal.index_oid o \
                             WHERE o.table_oid OPERATOR(pg_catalog.=) r.oid \
                               AND o.role OPERATOR(pg_catalog.=) v.role \
                               AND o.index_oid OPERATOR(pg_catalog.=) x.oid)) \
         OR r.oid OPERATOR(pg_catalog.=) ANY (ARRAY( \
           SELECT o.table_oid FROM jsonb_ttl_internal.index_oid o \
           WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_index i \
                             WHERE i.indexrelid OPERATOR(pg_catalog.=) o.index_oid \
                               AND i.indrelid OPERATOR(pg_catalog.=) o.table_oid)))", catalog = ext.catalog(),
    );
    Spi::connect(|client| {
        client
            .select(&sql, None, &[])
            .map(|rows| {
                rows.filter_map(|row| row.get::<Oid>(1).ok().flatten())
                    .collect()
            })
            .unwrap_or_default()
    })
}

/// [`track_indexes`] for the sql/api.sql event trigger (after CREATE INDEX).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_track_indexes",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_track_indexes(tbl: Oid) {
    track_indexes(&Extension::current(), tbl);
}

/// Which index of the TTL index of `tbl` the index `index` is, going by what it is (an
/// ascending btree with the default operator class on one key, an expression or a plain
/// `timestamptz` column, and a predicate, as `pg_get_expr` and `pg_get_indexdef` show them,
/// like ours), whatever its name: its catalog column (`index_name`,
/// `row_ttl_index_name`), or NULL. [`track_indexes`] records an index's OID only when it is
/// one of these, on the TTL table itself.
#[pg_extern(
    stable,
    parallel_safe,
    name = "_ttl_index_role",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_role(tbl: Oid, index: Oid) -> Option<String> {
    let ext = Extension::current();
    let entry = catalog::load(&ext, Some(tbl), catalog::Scope::Entries)
        .into_iter()
        .next()?;
    role_on(&ext, &entry, tbl, index)
}

/// Which index of the TTL index `entry` the index `index` of `tbl` (its table, or a shard of
/// it) is, going by what it is: see [`ttl_index_role`].
fn role_on(ext: &Extension, entry: &catalog::TtlIndex, tbl: Oid, index: Oid) -> Option<String> {
    let shaped = build::shaped_indexes(tbl, false)
        .into_iter()
        .find(|shaped| shaped.oid == index)?;
    role_of(ext, entry, tbl, &shaped)
}

/// Which index of the TTL index `entry` the index `shaped` of `tbl` is ([`build::Shaped::is`]).
fn role_of(
    ext: &Extension,
    entry: &catalog::TtlIndex,
    tbl: Oid,
    shaped: &build::Shaped,
) -> Option<String> {
    shapes(ext, entry, tbl)
        .into_iter()
        .find(|(_, shape)| shaped.is(shape))
        .map(|(column, _)| column.to_string())
}

/// The indexes of the TTL index `entry` on `tbl` (its table, or a shard of it) by catalog
/// column, as shapes ([`build::shape`]).
pub(crate) fn shapes(
    ext: &Extension,
    entry: &catalog::TtlIndex,
    tbl: Oid,
) -> Vec<(&'static str, (String, String))> {
    index_specs(ext, entry)
        .into_iter()
        .map(|(column, _, ours, our_predicate)| (column, build::shape(tbl, &ours, &our_predicate)))
        .collect()
}

/// The field TTLs of `table` (the table they were created on), or of every table, as the
/// targets of a batch ([`catalog::load_fields`]), each with its index found by what it is
/// ([`field_index_on`]). Finding it locks its table (`AccessShareLock`): waiting if need be
/// (`wait`: for the SQL functions, called on the caller's own table), or, for the worker's
/// catalog read, which never waits on a tenant's lock, only when it is free now: a table whose
/// lock is not has its field TTLs' index unread (not ready: no batch), and the second value is
/// false, so that the worker reads them again at its next pass.
pub fn field_targets(ext: &Extension, table: Option<Oid>, wait: bool) -> (Vec<TtlIndex>, bool) {
    let mut all_read = true;
    let targets = catalog::load_fields(ext, table)
        .into_iter()
        .map(|mut target| {
            all_read &= find_field_index(ext, &mut target, wait);
            target
        })
        .collect();
    (targets, all_read)
}

/// Finds the index of field TTL target `target` on its table (see [`field_index_on`]), taking the
/// table's lock (`wait`), or only if it is free now and letting it go once read (the
/// worker's catalog read: at 10,000 tables, holding every one to the end of the read would
/// fill the lock table); whether it could be read. A column no longer jsonb (retyped, or
/// dropped: no kind) has no field to remove: not ready.
fn find_field_index(ext: &Extension, target: &mut TtlIndex, wait: bool) -> bool {
    let share = pg_sys::AccessShareLock as pg_sys::LOCKMODE;
    let free = wait || unsafe { pg_sys::ConditionalLockRelationOid(target.table, share) };
    let usable = free && target.resolved.kind == ColumnKind::Jsonb && !target.foreign;
    target.index_oid =
        crate::reference::field_index_expressions(ext, &target.resolved, target.unit)
            .ok()
            .filter(|_| usable)
            .and_then(|(expression, predicate)| {
                field_index_on(target.table, &expression, &predicate, &target.index_name)
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

/// The valid, ready index of `table` that is the index of a field TTL with these expressions,
/// by what it is ([`build::matching_index`]): the one named `name` first, else the first by
/// name.
pub fn field_index_on(table: Oid, expression: &str, predicate: &str, name: &str) -> Option<Oid> {
    build::matching_index(table, expression, predicate, Some(name)).map(|(oid, _)| oid)
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::field_targets;
    use crate::extension::Extension;
    use pgrx::pg_sys::Oid;
    use pgrx::prelude::*;

    #[pg_test]
    fn a_field_ttl_is_a_target_with_its_own_index() {
        Spi::run(
            "CREATE TABLE codes (id int, doc jsonb);
             SELECT ttl_field_create('codes', 'otp.at', interval '1 minute');",
        )
        .expect("field TTL made");
        let targets = field_targets(&Extension::current(), None, true).0;
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
        let again = field_targets(&Extension::current(), None, true).0;
        assert_eq!(again[0].index_oid, Some(named));
    }
}
