//! No long lock on a big table: building a TTL index without blocking writes.
//!
//! `CREATE INDEX` (what `ttl_index_create` runs by default) holds a SHARE lock on the table
//! for the whole build, so every INSERT, UPDATE and DELETE waits for it. Two ways around it:
//! - **Adoption.** `ttl_index_create` takes over a valid btree index of the table that is
//!   exactly the one it would build — same expression, same predicate (as `pg_get_expr` shows
//!   them), ascending, default operator class — such as one the user built with
//!   `CREATE INDEX CONCURRENTLY` from the statements below.
//! - **`build => false`.** `ttl_index_create` records the TTL index without building it and
//!   hands back the exact statements to run (`ttl_index_info.build_sql`, for psql's `\gexec`):
//!   `CREATE INDEX CONCURRENTLY` on a plain table; on a partitioned table, where CONCURRENTLY
//!   does not work on the parent, an invalid index `ON ONLY` the parent (and each partitioned
//!   child), a concurrent build on each leaf partition, and the `ALTER INDEX … ATTACH
//!   PARTITION` steps that make the parent's index valid once every partition has its own.
//!   Until the index is valid the worker leaves the table alone (`catalog::TtlIndex::index_ready`).

use crate::catalog::{self, TtlIndex};
use crate::extension::Extension;
use crate::filter;
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;
use pgrx::spi::quote_identifier;

/// The name of a valid index of `table` that is exactly the TTL index on `reference` with
/// predicate `predicate` would be, if there is one.
pub fn adoptable(table: Oid, reference: &str, predicate: &str) -> Option<String> {
    let expression = filter::canonical(table, reference, false);
    let predicate = filter::canonical(table, predicate, true);
    Spi::get_one_with_args::<String>(
        "SELECT c.relname::pg_catalog.text \
         FROM pg_catalog.pg_index i \
         JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.indexrelid \
         JOIN pg_catalog.pg_am a ON a.oid OPERATOR(pg_catalog.=) c.relam \
         JOIN pg_catalog.pg_opclass o ON o.oid OPERATOR(pg_catalog.=) i.indclass[0] \
         WHERE i.indrelid OPERATOR(pg_catalog.=) $1 \
           AND i.indisvalid AND i.indisready AND i.indislive AND NOT i.indisunique \
           AND a.amname OPERATOR(pg_catalog.=) 'btree'::pg_catalog.name \
           AND i.indnatts OPERATOR(pg_catalog.=) 1 AND i.indkey[0] OPERATOR(pg_catalog.=) 0 \
           AND i.indoption[0] OPERATOR(pg_catalog.=) 0 AND o.opcdefault \
           AND pg_catalog.pg_get_expr(i.indexprs, i.indrelid) OPERATOR(pg_catalog.=) $2 \
           AND pg_catalog.pg_get_expr(i.indpred, i.indrelid) OPERATOR(pg_catalog.=) $3 \
         ORDER BY c.relname LIMIT 1",
        &[table.into(), expression.into(), predicate.into()],
    )
    .ok()
    .flatten()
}

/// One relation of the table's partition tree (the table itself first).
struct Member {
    oid: Oid,
    parent: Option<Oid>,
    leaf: bool,
    foreign: bool,
    schema: String,
    name: String,
    /// The index of this relation in the TTL index's tree, if it has one.
    index: Option<String>,
}

/// The relations of `table`'s partition tree (a plain table alone: `pg_partition_tree`
/// returns nothing for it), parents before their children, each with its
/// index in the tree of `root_index` (`schema.name`, quoted), if that exists yet.
fn members(table: Oid, root_index: Option<&str>) -> Vec<Member> {
    Spi::connect(|client| {
        client
            .select(
                "SELECT t.relid::pg_catalog.oid, t.parentrelid::pg_catalog.oid, \
                        c.relkind::pg_catalog.text, n.nspname::pg_catalog.text, \
                        c.relname::pg_catalog.text, \
                        (SELECT pg_catalog.quote_ident(xn.nspname::pg_catalog.text) \
                                  OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) \
                                  pg_catalog.quote_ident(x.relname::pg_catalog.text) \
                         FROM pg_catalog.pg_index i \
                         JOIN pg_catalog.pg_class x ON x.oid OPERATOR(pg_catalog.=) i.indexrelid \
                         JOIN pg_catalog.pg_namespace xn ON xn.oid OPERATOR(pg_catalog.=) x.relnamespace \
                         WHERE i.indrelid OPERATOR(pg_catalog.=) t.relid \
                           AND $2::pg_catalog.regclass::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (ARRAY( \
                                 SELECT a.relid::pg_catalog.oid \
                                 FROM pg_catalog.pg_partition_ancestors(i.indexrelid) a)) \
                         LIMIT 1) \
                 FROM (SELECT p.relid, p.parentrelid, p.level FROM pg_catalog.pg_partition_tree($1) p \
                       UNION ALL \
                       SELECT $1::pg_catalog.regclass, NULL, 0 \
                       WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_partition_tree($1))) t \
                 JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.relid \
                 JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
                 ORDER BY t.level, t.relid",
                None,
                &[table.into(), root_index.into()],
            )
            .expect("pg_partition_tree is readable")
            .map(|row| {
                let kind = row.get::<String>(3).ok().flatten().unwrap_or_default();
                Member {
                    oid: row.get::<Oid>(1).ok().flatten().unwrap_or_default(),
                    parent: row.get::<Oid>(2).ok().flatten(),
                    leaf: kind != "p",
                    foreign: kind == "f",
                    schema: row.get::<String>(4).ok().flatten().unwrap_or_default(),
                    name: row.get::<String>(5).ok().flatten().unwrap_or_default(),
                    index: row.get::<String>(6).ok().flatten(),
                }
            })
            .collect()
    })
}

/// The statements that build the TTL index `index_name` of `table` on `reference` with
/// `predicate` without blocking writes, skipping what is built already (see the module's
/// text), each partition's index named `<partition><suffix>`. Empty when nothing is left.
pub fn statements(
    table: Oid,
    schema: &str,
    index_name: &str,
    reference: &str,
    predicate: &str,
    suffix: &str,
) -> Vec<String> {
    let root_index = format!(
        "{}.{}",
        quote_identifier(schema),
        quote_identifier(index_name)
    );
    let exists = is_index_of(&root_index, table);
    let members = members(table, exists.then_some(root_index.as_str()));
    let Some(root) = members.first() else {
        return Vec::new();
    };
    let on = |m: &Member| {
        format!(
            "{}.{} ({reference}) WHERE {predicate}",
            quote_identifier(&m.schema),
            quote_identifier(&m.name)
        )
    };
    if root.leaf {
        return match exists {
            true => Vec::new(),
            false => vec![format!(
                "CREATE INDEX CONCURRENTLY {} ON ONLY {}",
                quote_identifier(index_name),
                on(root)
            )],
        };
    }
    let mut creates = Vec::new();
    let mut attaches = Vec::new();
    // the index of each member in the tree: existing, or named here
    let mut names: Vec<(Oid, String)> = Vec::new();
    for m in &members {
        let index = match (&m.index, m.parent) {
            (Some(index), _) => index.clone(),
            (None, None) if exists => root_index.clone(),
            _ if m.foreign => continue, // no index on a foreign table
            (None, parent) => {
                let name = match parent {
                    None => index_name.to_string(),
                    Some(_) => free_index_name(&m.schema, &m.name, suffix, &names),
                };
                let qualified = format!(
                    "{}.{}",
                    quote_identifier(&m.schema),
                    quote_identifier(&name)
                );
                creates.push(match m.leaf {
                    true => format!(
                        "CREATE INDEX CONCURRENTLY {} ON {}",
                        quote_identifier(&name),
                        on(m)
                    ),
                    false => format!("CREATE INDEX {} ON ONLY {}", quote_identifier(&name), on(m)),
                });
                if let Some(parent) = parent {
                    if let Some((_, parent_index)) = names.iter().find(|(oid, _)| *oid == parent) {
                        attaches.push(format!(
                            "ALTER INDEX {parent_index} ATTACH PARTITION {qualified}"
                        ));
                    }
                }
                qualified
            }
        };
        names.push((m.oid, index));
    }
    // attach from the leaves up: a parent's index becomes valid once all its partitions' are
    attaches.reverse();
    creates.extend(attaches);
    creates
}

/// `ttl_index_info.build_sql`: the statements still to run to build the TTL index of `tbl`
/// (created with `build => false`), or NULL when it is built.
#[pg_extern(
    stable,
    parallel_safe,
    name = "_ttl_index_build_sql",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_index_build_sql(tbl: Oid) -> Option<Vec<String>> {
    let ext = Extension::current();
    let index = catalog::load(&ext, Some(tbl), catalog::Scope::Entries)
        .into_iter()
        .next()?;
    let (Some(schema), Some(relname)) = Spi::get_two_with_args::<String, String>(
        "SELECT n.nspname::pg_catalog.text, c.relname::pg_catalog.text FROM pg_catalog.pg_class c \
         JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
         WHERE c.oid OPERATOR(pg_catalog.=) $1",
        &[tbl.into()],
    )
    .ok()?
    else {
        return None;
    };
    let ready = [
        index.index_ready,
        index
            .row_ttl
            .as_ref()
            .is_none_or(|row_ttl| row_ttl.index_ready),
    ];
    let mut statements = Vec::new();
    for (column, name, expression, predicate) in index_specs(&ext, &index) {
        let (built, suffix) = match column {
            "index_name" => (ready[0], "_ttl_idx"),
            _ => (ready[1], "_row_ttl_idx"),
        };
        if !built {
            // a per-row TTL index that was dropped has no name any more: a free one
            let name = match name.is_empty() {
                true => free_index_name(&schema, &relname, suffix, &[]),
                false => name,
            };
            statements.extend(self::statements(
                tbl,
                &schema,
                &name,
                &expression,
                &predicate,
                suffix,
            ));
        }
    }
    (!statements.is_empty()).then_some(statements)
}

/// A free index name `<relname><suffix>[N]` in `schema`, within NAMEDATALEN, and none of the
/// (quoted, qualified) names in `taken`.
pub fn free_index_name(
    schema: &str,
    relname: &str,
    suffix: &str,
    taken: &[(Oid, String)],
) -> String {
    for n in 0.. {
        let suffix = if n == 0 {
            suffix.to_string()
        } else {
            format!("{suffix}{n}")
        };
        let mut base = relname.to_string();
        while base.len() + suffix.len() > 63 {
            base.pop();
        }
        let candidate = format!("{base}{suffix}");
        let qualified = format!(
            "{}.{}",
            quote_identifier(schema),
            quote_identifier(&candidate)
        );
        if taken.iter().any(|(_, name)| *name == qualified) {
            continue;
        }
        let taken = Spi::get_one_with_args::<bool>(
            "SELECT EXISTS (SELECT FROM pg_catalog.pg_class c \
             JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
             WHERE n.nspname OPERATOR(pg_catalog.=) $1::pg_catalog.name \
               AND c.relname OPERATOR(pg_catalog.=) $2::pg_catalog.name)",
            &[schema.into(), candidate.clone().into()],
        );
        if taken == Ok(Some(false)) {
            return candidate;
        }
    }
    unreachable!()
}

/// Whether `qualified` (`schema.name`, quoted) names an index of `table`: a relation of that
/// name that is anything else (another role's, squatting the name) is not ours to build on.
pub fn is_index_of(qualified: &str, table: Oid) -> bool {
    Spi::get_one_with_args::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_index i \
                        WHERE i.indexrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1)::pg_catalog.oid \
                          AND i.indrelid OPERATOR(pg_catalog.=) $2)",
        &[qualified.into(), table.into()],
    )
    .ok()
    .flatten()
    .unwrap_or(false)
}

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
                "SELECT i.indexrelid FROM {ext}.ttl_index t \
                 JOIN pg_catalog.pg_class r ON r.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid \
                 JOIN pg_catalog.pg_class x ON x.relnamespace OPERATOR(pg_catalog.=) r.relnamespace \
                  AND x.relname OPERATOR(pg_catalog.=) \
                      (pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) $2::pg_catalog.text)::pg_catalog.name \
                 JOIN pg_catalog.pg_index i ON i.indexrelid OPERATOR(pg_catalog.=) x.oid \
                  AND i.indrelid OPERATOR(pg_catalog.=) r.oid \
                 WHERE t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1"
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
    let Some(entry) = catalog::load(ext, Some(tbl), catalog::Scope::Entries)
        .into_iter()
        .next()
    else {
        return;
    };
    let mut roles = vec![("index_name", Some(entry.index_name.clone()))];
    if let Some(row_ttl) = &entry.row_ttl {
        let name = (!row_ttl.index_name.is_empty()).then(|| row_ttl.index_name.clone());
        roles.push(("row_ttl_index_name", name));
    }
    let candidates: Vec<(Oid, String)> = Spi::connect(|client| {
        client
            .select(
                "SELECT i.indexrelid, c.relname::pg_catalog.text FROM pg_catalog.pg_index i \
                 JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.indexrelid \
                 WHERE i.indrelid OPERATOR(pg_catalog.=) $1 ORDER BY i.indexrelid",
                None,
                &[tbl.into()],
            )
            .map(|rows| {
                rows.filter_map(|row| Some((row.get::<Oid>(1).ok()??, row.get::<String>(2).ok()??)))
                    .collect()
            })
            .unwrap_or_default()
    });
    let owner = ext.owner();
    for (role, name) in roles {
        let ours = |(oid, _): &&(Oid, String)| ttl_index_role(tbl, *oid).as_deref() == Some(role);
        let by_name = name
            .as_ref()
            .and_then(|name| candidates.iter().filter(|c| &c.1 == name).find(ours));
        // no index of the recorded name, and none recorded that is still there (a dropped
        // per-row index, or a REINDEX CONCURRENTLY's new index renamed since): any of ours
        let found = by_name.or_else(|| {
            recorded_index(ext, tbl, role)
                .is_none()
                .then(|| candidates.iter().find(ours))
                .flatten()
        });
        crate::owner::as_catalog_owner(owner, || match found {
            Some((index, relname)) => record(ext, tbl, role, *index, relname),
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
            "UPDATE {ext}.ttl_index SET {role} = $2::pg_catalog.name \
             WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
               AND {role} IS DISTINCT FROM $2::pg_catalog.name"
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
/// index of the table itself counts (`indrelid`).
pub fn stale_records(ext: &Extension) -> Vec<Oid> {
    if !ext.has_internal_schema() {
        return Vec::new();
    }
    let sql = format!(
        "SELECT t.table_oid::pg_catalog.oid FROM {ext}.ttl_index t \
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
         OR EXISTS ( \
           SELECT FROM jsonb_ttl_internal.index_oid o \
           WHERE o.table_oid OPERATOR(pg_catalog.=) r.oid \
             AND NOT EXISTS (SELECT FROM pg_catalog.pg_index i \
                             WHERE i.indexrelid OPERATOR(pg_catalog.=) o.index_oid \
                               AND i.indrelid OPERATOR(pg_catalog.=) r.oid))"
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

/// The indexes of a TTL index, as (its catalog column, name, expression, predicate): the TTL
/// index itself, and with a per-row TTL field the index over the rows that have one (see
/// [`crate::row_ttl`]).
pub fn index_specs(
    ext: &Extension,
    entry: &TtlIndex,
) -> Vec<(&'static str, String, String, String)> {
    let parts = match entry.row_ttl {
        Some(_) => entry.clone().parts(),
        None => vec![entry.clone()],
    };
    parts
        .iter()
        .map(|part| {
            let expression = part
                .reference(ext)
                .unwrap_or_else(|e| error!("jsonb_ttl: {e}"));
            let predicate = part.predicate(ext, &expression);
            let column = match part.part {
                catalog::Part::OwnTtl => "row_ttl_index_name",
                _ => "index_name",
            };
            (column, part.index_name.clone(), expression, predicate)
        })
        .collect()
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
    let (Some(expression), Some(predicate)) = Spi::get_two_with_args::<String, String>(
        "SELECT coalesce(pg_catalog.pg_get_expr(i.indexprs, i.indrelid), \
                         pg_catalog.pg_get_indexdef(i.indexrelid, 1, false)), \
                pg_catalog.pg_get_expr(i.indpred, i.indrelid) \
         FROM pg_catalog.pg_index i \
         JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.indexrelid \
         JOIN pg_catalog.pg_am a ON a.oid OPERATOR(pg_catalog.=) c.relam \
         JOIN pg_catalog.pg_opclass o ON o.oid OPERATOR(pg_catalog.=) i.indclass[0] \
         WHERE i.indexrelid OPERATOR(pg_catalog.=) $1 AND i.indrelid OPERATOR(pg_catalog.=) $2 \
           AND i.indnatts OPERATOR(pg_catalog.=) 1 AND NOT i.indisunique \
           AND a.amname OPERATOR(pg_catalog.=) 'btree'::pg_catalog.name \
           AND i.indoption[0] OPERATOR(pg_catalog.=) 0 AND o.opcdefault",
        &[index.into(), tbl.into()],
    )
    .ok()?
    else {
        return None;
    };
    index_specs(&ext, &entry)
        .into_iter()
        .find(|(_, _, ours, our_predicate)| {
            filter::canonical(tbl, ours, false) == expression
                && filter::canonical(tbl, our_predicate, true) == predicate
        })
        .map(|(column, ..)| column.to_string())
}
