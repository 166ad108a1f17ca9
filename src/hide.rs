//! Hiding expired rows before they are deleted (Cosmos DB): `ttl_index_create(…,
//! hide_expired => true)`. Readers stop seeing a row the moment it expires, whatever the
//! worker's lag, through row security:
//!
//! - a RESTRICTIVE policy `jsonb_ttl_hide_expired` FOR SELECT, `USING ((<expired>) IS NOT
//!   TRUE)`, ANDed with whatever else allows a row; `<expired>` is the purge's own condition
//!   with `expire_after` written in (so `ttl_index_alter` writes the policy again), and the
//!   filter;
//! - when the table had no row security, it is enabled, with a PERMISSIVE policy
//!   `jsonb_ttl_keep_access` FOR ALL `USING (true) WITH CHECK (true)`: row security without a
//!   permissive policy denies everything, and this keeps every other access exactly as it was.
//!   A table that had row security keeps its own policies, and gets only the restrictive one.
//!
//! Row security reaches only the roles it applies to: the owner, superusers and BYPASSRLS roles
//! still see every row. FORCE ROW LEVEL SECURITY would hide the expired rows from the worker's
//! own DELETE (which runs as the owner, and a DELETE with a WHERE applies SELECT policies), so
//! it is refused, at creation and afterwards (sql/api.sql's event trigger). So is a table with
//! policies but row security off (enabling it would put them in force). Turning it off, or
//! dropping the TTL index, drops the restrictive policy; the permissive one and row security
//! go too if they were added here and no other policy has been added since (else access stays
//! as it is, and a NOTICE says so).

use crate::catalog::TtlIndex;
use crate::error::raise;
use crate::extension::Extension;
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;
use pgrx::spi::quote_literal;
use pgrx::PgSqlErrorCode;

/// The restrictive policy that hides expired rows.
pub const HIDE: &str = "jsonb_ttl_hide_expired";
/// The permissive policy that keeps access as it was on a table without row security.
pub const KEEP: &str = "jsonb_ttl_keep_access";

/// The row security state of a table: (enabled, forced, policies other than ours).
fn row_security(table: Oid) -> (bool, bool, i64) {
    Spi::get_three_with_args::<bool, bool, i64>(
        "SELECT c.relrowsecurity, c.relforcerowsecurity, \
                (SELECT pg_catalog.count(*) FROM pg_catalog.pg_policy p \
                 WHERE p.polrelid OPERATOR(pg_catalog.=) c.oid \
                   AND p.polname OPERATOR(pg_catalog.<>) ALL (ARRAY[$2, $3]::pg_catalog.name[])) \
         FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1",
        &[table.into(), HIDE.into(), KEEP.into()],
    )
    .map(|(on, forced, others)| {
        (
            on.unwrap_or(false),
            forced.unwrap_or(false),
            others.unwrap_or(0),
        )
    })
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot read the row security of the table: {e}"))
}

fn has_policy(table: Oid, name: &str) -> bool {
    Spi::get_one_with_args::<bool>(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_policy \
         WHERE polrelid OPERATOR(pg_catalog.=) $1 AND polname OPERATOR(pg_catalog.=) $2::pg_catalog.name)",
        &[table.into(), name.into()],
    )
    .ok()
    .flatten()
    .unwrap_or(false)
}

/// `(<expired>) IS NOT TRUE` for `index`, with its expire_after written in: for each of its
/// parts with a per-row TTL field (see [`crate::row_ttl`]).
fn visible_condition(ext: &Extension, index: &TtlIndex) -> String {
    let parts = match index.row_ttl {
        Some(_) => index.clone().parts(),
        None => vec![index.clone()],
    };
    parts
        .iter()
        .map(|part| {
            let reference = part
                .reference(ext)
                .unwrap_or_else(|e| error!("jsonb_ttl: {e}"));
            let expire_after = format!(
                "{}::pg_catalog.interval",
                quote_literal(format!("{}", part.expire_after))
            );
            format!(
                "({}) IS NOT TRUE",
                part.expired_after(ext, &reference, &expire_after)
            )
        })
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// Hides the expired rows of `index`'s table (see the module's text); returns whether row
/// security was enabled here.
pub fn install(ext: &Extension, index: &TtlIndex) -> bool {
    let (enabled, forced, others) = row_security(index.table);
    if !enabled && others > 0 {
        raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!(
                "table {} has row security policies but row security is off: hide_expired would put them in force",
                index.display_name
            ),
            "Enable row security yourself (ALTER TABLE … ENABLE ROW LEVEL SECURITY) once its \
             policies say what you mean, or drop them; then hide_expired adds its own.",
        );
    }
    if forced {
        raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!(
                "table {} has FORCE ROW LEVEL SECURITY: hide_expired would hide expired rows from the purge itself",
                index.display_name
            ),
            "The worker deletes as the table's owner, and a DELETE with a WHERE applies SELECT \
             policies to whom row security applies. ALTER TABLE … NO FORCE ROW LEVEL SECURITY, \
             or hide expired rows in your own policies.",
        );
    }
    for name in [HIDE, KEEP] {
        if has_policy(index.table, name) {
            raise(
                PgSqlErrorCode::ERRCODE_DUPLICATE_OBJECT,
                format!(
                    "table {} already has a policy named {name}",
                    index.display_name
                ),
                "hide_expired creates policies of that name: rename yours first.",
            );
        }
    }
    let table = &index.qualified_table;
    if !enabled {
        run(&format!(
            "CREATE POLICY {KEEP} ON {table} AS PERMISSIVE FOR ALL TO PUBLIC \
             USING (true) WITH CHECK (true)"
        ));
        run(&format!("ALTER TABLE {table} ENABLE ROW LEVEL SECURITY"));
    }
    run(&format!(
        "CREATE POLICY {HIDE} ON {table} AS RESTRICTIVE FOR SELECT TO PUBLIC USING ({})",
        visible_condition(ext, index)
    ));
    !enabled
}

/// Writes the policy again after a change of `index` (expire_after, time zone).
pub fn refresh(ext: &Extension, index: &TtlIndex) {
    if has_policy(index.table, HIDE) {
        run(&format!(
            "ALTER POLICY {HIDE} ON {} USING ({})",
            index.qualified_table,
            visible_condition(ext, index)
        ));
    }
}

/// Shows the expired rows again: drops the policies, and row security when `enabled_here` and
/// no policy of the owner's has been added since.
pub fn remove(index: &TtlIndex, enabled_here: bool) {
    remove_from(index.table, &index.qualified_table, enabled_here);
}

fn remove_from(oid: Oid, table: &str, enabled_here: bool) {
    if has_policy(oid, HIDE) {
        run(&format!("DROP POLICY {HIDE} ON {table}"));
    }
    if !enabled_here {
        return; // the owner's row security, as it was
    }
    let (enabled, _, others) = row_security(oid);
    if others > 0 {
        // policies of the owner's came since: without ours they alone would decide who sees
        // what, so access stays as it is
        notice!(
            "jsonb_ttl: row security of {table} stays on, with {KEEP}: the table has policies of its own now"
        );
        return;
    }
    if has_policy(oid, KEEP) {
        run(&format!("DROP POLICY {KEEP} ON {table}"));
    }
    if enabled {
        run(&format!("ALTER TABLE {table} DISABLE ROW LEVEL SECURITY"));
    }
}

fn run(sql: &str) {
    Spi::run(sql).unwrap_or_else(|e| error!("jsonb_ttl: {sql}: {e}"));
}

/// The sql/api.sql event trigger calls this when DROP INDEX removed the catalog entry of a TTL
/// index whose table is still there: its touch trigger, policies and per-row TTL index (by the
/// OID recorded for it) go too.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_options_dropped",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_options_dropped_by_oid(
    table: Oid,
    touch: bool,
    hide: bool,
    hide_enabled_row_security: bool,
    row_ttl_index: Option<Oid>,
) {
    if options_dropped(table, touch, hide, hide_enabled_row_security) {
        if let Some(index) = row_ttl_index {
            // the recorded per-row TTL index, if it is still an index of this table
            crate::tracking::drop_index_of(table, index);
        }
    }
}

/// What the event trigger of an older version's SQL calls (a database not yet updated with
/// `ALTER EXTENSION jsonb_ttl UPDATE`): it names the per-row TTL index, which is dropped only
/// if an index of that name in the table's schema is an index of the table, of our shape.
#[pg_extern(sql = false)]
fn ttl_options_dropped(
    table: Oid,
    touch: bool,
    hide: bool,
    hide_enabled_row_security: bool,
    row_ttl_index: Option<&str>,
) {
    if options_dropped(table, touch, hide, hide_enabled_row_security) {
        if let Some(name) = row_ttl_index {
            let index = Spi::get_one_with_args::<Oid>(
                "SELECT x.oid FROM pg_catalog.pg_class x \
                 JOIN pg_catalog.pg_class r ON r.relnamespace OPERATOR(pg_catalog.=) x.relnamespace \
                 JOIN pg_catalog.pg_index i ON i.indexrelid OPERATOR(pg_catalog.=) x.oid \
                  AND i.indrelid OPERATOR(pg_catalog.=) r.oid \
                 WHERE r.oid OPERATOR(pg_catalog.=) $1 AND x.relname OPERATOR(pg_catalog.=) $2::pg_catalog.name \
                   AND i.indpred IS NOT NULL AND i.indexprs IS NOT NULL",
                &[table.into(), name.into()],
            )
            .ok()
            .flatten();
            if let Some(index) = index {
                crate::tracking::drop_index_of(table, index);
            }
        }
    }
}

/// Removes the touch trigger and the policies of a TTL index whose index was dropped; false
/// when its table is gone too (DROP TABLE: they went with it).
fn options_dropped(table: Oid, touch: bool, hide: bool, hide_enabled_row_security: bool) -> bool {
    let Ok((Some(schema), Some(name))) = Spi::get_two_with_args::<String, String>(
        "SELECT pg_catalog.quote_ident(n.nspname::pg_catalog.text), \
                pg_catalog.quote_ident(c.relname::pg_catalog.text) \
         FROM pg_catalog.pg_class c \
         JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
         WHERE c.oid OPERATOR(pg_catalog.=) $1",
        &[table.into()],
    ) else {
        return false;
    };
    let qualified_table = format!("{schema}.{name}");
    let ext = Extension::current();
    if touch {
        crate::touch::remove_from(&ext, table, &qualified_table);
    }
    if hide {
        remove_from(table, &qualified_table, hide_enabled_row_security);
    }
    true
}
