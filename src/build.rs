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
use crate::table::Table;
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;
use pgrx::spi::quote_identifier;

/// The name of a valid index of `table` that is exactly the TTL index on `reference` with
/// predicate `predicate` would be, if there is one.
pub fn adoptable(table: Oid, reference: &str, predicate: &str) -> Option<String> {
    matching_index(table, reference, predicate, None).map(|(_, name)| name)
}

/// An index shaped as a TTL index is (see [`shaped_indexes`]).
pub struct Shaped {
    pub oid: Oid,
    pub name: String,
    /// Its key: the expression as `pg_get_expr` shows it, or the column as `pg_get_indexdef`.
    pub key: String,
    /// Its predicate as `pg_get_expr` shows it (`None`: not partial).
    pub predicate: Option<String>,
}

impl Shaped {
    /// Whether it is the index `shape` ([`shape`]): the one identity of an index, by what it
    /// is, whatever its name.
    pub fn is(&self, shape: &(String, String)) -> bool {
        self.key == shape.0 && self.predicate.as_deref() == Some(shape.1.as_str())
    }
}

/// The index on `reference` with predicate `predicate` (both as we write them) as `table`'s
/// index would show them ([`Shaped::key`], [`Shaped::predicate`]): made canonical once.
pub fn shape(table: Oid, reference: &str, predicate: &str) -> (String, String) {
    (
        filter::canonical(table, reference, false),
        filter::canonical(table, predicate, true),
    )
}

/// The indexes of `table` shaped as a TTL index is (an ascending btree with the default
/// operator class on one key, an expression or a column, not unique), in OID order; `usable`:
/// only the valid, ready, live ones. Every search for a TTL index, a per-row TTL index or a
/// field TTL's index by what it is goes through this and [`Shaped::is`].
pub fn shaped_indexes(table: Oid, usable: bool) -> Vec<Shaped> {
    Spi::connect(|client| {
        client
            .select(
                "SELECT i.indexrelid, c.relname::pg_catalog.text, \
                        coalesce(pg_catalog.pg_get_expr(i.indexprs, i.indrelid), \
                                 pg_catalog.pg_get_indexdef(i.indexrelid, 1, false)), \
                        pg_catalog.pg_get_expr(i.indpred, i.indrelid) \
                 FROM pg_catalog.pg_index i \
                 JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.indexrelid \
                 JOIN pg_catalog.pg_am a ON a.oid OPERATOR(pg_catalog.=) c.relam \
                 JOIN pg_catalog.pg_opclass o ON o.oid OPERATOR(pg_catalog.=) i.indclass[0] \
                 WHERE i.indrelid OPERATOR(pg_catalog.=) $1 \
                   AND (NOT $2 OR (i.indisvalid AND i.indisready AND i.indislive)) \
                   AND i.indnatts OPERATOR(pg_catalog.=) 1 AND NOT i.indisunique \
                   AND a.amname OPERATOR(pg_catalog.=) 'btree'::pg_catalog.name \
                   AND i.indoption[0] OPERATOR(pg_catalog.=) 0 AND o.opcdefault \
                 ORDER BY i.indexrelid",
                None,
                &[table.into(), usable.into()],
            )
            .map(|rows| {
                rows.filter_map(|row| {
                    Some(Shaped {
                        oid: row.get::<Oid>(1).ok()??,
                        name: row.get::<String>(2).ok()??,
                        key: row.get::<String>(3).ok()??,
                        predicate: row.get::<String>(4).ok()?,
                    })
                })
                .collect()
            })
            .unwrap_or_default()
    })
}

/// The valid, ready index of `table` that is the index on `reference` with predicate
/// `predicate` ([`Shaped::is`]), with its name: the one named `prefer` if it is one, else the
/// first by name.
pub fn matching_index(
    table: Oid,
    reference: &str,
    predicate: &str,
    prefer: Option<&str>,
) -> Option<(Oid, String)> {
    let shape = shape(table, reference, predicate);
    let mut found: Vec<Shaped> = shaped_indexes(table, true)
        .into_iter()
        .filter(|index| index.is(&shape))
        .collect();
    found.sort_by(|a, b| {
        let preferred = |index: &Shaped| Some(index.name.as_str()) != prefer;
        (preferred(a), &a.name).cmp(&(preferred(b), &b.name))
    });
    found
        .into_iter()
        .next()
        .map(|index| (index.oid, index.name))
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
    tree_statements(&members, exists, &root_index, index_name, suffix, &on)
}

/// The statements of [`statements`] for a partitioned table: an index `ON ONLY` each parent
/// without one, a concurrent build on each leaf without one, then the `ATTACH PARTITION`
/// steps, from the leaves up.
fn tree_statements(
    members: &[Member],
    exists: bool,
    root_index: &str,
    index_name: &str,
    suffix: &str,
    on: &dyn Fn(&Member) -> String,
) -> Vec<String> {
    let mut creates = Vec::new();
    let mut attaches = Vec::new();
    // the index of each member in the tree: existing, or named here
    let mut names: Vec<(Oid, String)> = Vec::new();
    for m in members {
        let index = match (&m.index, m.parent) {
            (Some(index), _) => index.clone(),
            (None, None) if exists => root_index.to_string(),
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

/// A free index name `<table><suffix>[N]` in the table's schema, within NAMEDATALEN, and none
/// of `also_taken`.
pub(crate) fn choose_index_name(table: &Table, suffix: &str, also_taken: &[String]) -> String {
    let taken: Vec<(Oid, String)> = also_taken
        .iter()
        .map(|name| {
            let qualified = format!(
                "{}.{}",
                quote_identifier(&table.schema),
                quote_identifier(name)
            );
            (table.oid, qualified)
        })
        .collect();
    free_index_name(&table.schema, &table.relname, suffix, &taken)
}

/// Builds the index `name` of `table` on `expression`, partial on `predicate` (see
/// [`index_specs`]). A partitioned table's index covers every partition, now and future; a
/// plain table's stays off legacy inheritance children, which are not part of this TTL index.
pub(crate) fn build_index(table: &Table, name: &str, expression: &str, predicate: &str) {
    let only = if table.partitioned { "" } else { "ONLY" };
    Spi::run(&format!(
        "CREATE INDEX {} ON {only} {}.{} ({expression}) WHERE {predicate}",
        quote_identifier(name),
        quote_identifier(&table.schema),
        quote_identifier(&table.relname),
    ))
    .unwrap_or_else(|e| error!("jsonb_ttl: CREATE INDEX failed: {e}"));
}
