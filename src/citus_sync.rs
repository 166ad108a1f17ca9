//! Handing the TTL indexes of hash-distributed tables on to the Citus worker nodes, so each
//! node's own worker purges the shards it holds, with or without the coordinator up.
//!
//! The coordinator's catalog is the authority. Each pass, the coordinator's worker sends the
//! definitions of its TTL indexes on hash-distributed tables to every worker node
//! (`run_command_on_workers`), when they or the nodes changed since the last sending that
//! reached every node, and at least every [`RESEND`]: a node added later, or one that was down,
//! gets them at the next pass. A node keeps what it received ([`ttl_citus_receive`]): its
//! catalog rows of hash-distributed tables become exactly the definitions sent — the table
//! named by its qualified name, which Citus keeps the same on every node and which resolves
//! there to the node's own shell of that distributed table — and its own brake state stays.
//! A rolled back `ttl_index_create` is never sent: only committed rows are read.

use crate::extension::Extension;
use crate::{citus, gucs, owner};
use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;
use std::time::{Duration, Instant};

/// The longest the coordinator goes without sending the definitions again.
pub const RESEND: Duration = Duration::from_secs(300);

/// The catalog columns that define a TTL index, sent to the worker nodes (the operator's
/// controls with them); the others (`paused_at`, `paused_reason`, `paused_by`,
/// `brake_released`, `created_at`, `hide_enabled_row_security`) are each node's own, but for a
/// pause by hand, which the coordinator sends beside the definition (`operator_pause`).
const DEFINITION: &[&str] = &[
    "column_name",
    "json_path",
    "path",
    "expire_after",
    "numeric_unit",
    "index_name",
    "time_zone",
    "filter",
    "filter_sql",
    "touch",
    "hide_expired",
    "row_ttl_path",
    "row_ttl_column",
    "row_ttl_json_path",
    "row_ttl_index_name",
    "drop_partitions",
    "delete_window_start",
    "delete_window_end",
    "batch_size",
    "max_removes_per_second",
    "replication_origin",
    "logical_message",
];

/// What the coordinator sent last, and when: sent again only when it changed or is old.
#[derive(Default)]
pub struct Sent {
    last: Option<(String, Instant)>,
}

/// On the coordinator, sends the definitions of the TTL indexes of hash-distributed tables to
/// the worker nodes when needed (see the module's text). Errors are logged; the next pass
/// tries again.
pub fn send(ext: &Extension, sent: &mut Sent) {
    if !citus::present() || !citus::is_coordinator() {
        return;
    }
    let Some(payload) = payload(ext) else {
        return;
    };
    if sent
        .last
        .as_ref()
        .is_some_and(|(last, at)| *last == payload && at.elapsed() < RESEND)
    {
        return;
    }
    let command = format!(
        "SELECT {}._ttl_citus_receive({}::pg_catalog.jsonb)",
        ext.internal(),
        pgrx::spi::quote_literal(&payload)
    );
    // Bounded: a node that does not answer, or a catalog row a tenant holds locked there (the
    // receive waits 1 s at most), costs this pass a few seconds, never the worker. A node
    // answers how many definitions it could not place yet: not 0 is not done.
    let _timer = crate::bgw::BatchTimer::arm(gucs::BATCH_TIMEOUT_MS.get());
    let failed: Vec<String> = gucs::with_settings(&citus::CONNECT_TIMEOUT, || {
        Spi::connect(|client| {
            client
                .select(
                    "SELECT nodename OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) nodeport \
                            OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) \
                            coalesce(result, 'no result'::pg_catalog.text) \
                     FROM pg_catalog.run_command_on_workers($1) \
                     WHERE success IS NOT TRUE OR result IS NULL \
                        OR result OPERATOR(pg_catalog.<>) '0'::pg_catalog.text",
                    None,
                    &[command.into()],
                )
                .map(|rows| {
                    rows.map(|row| row.get::<String>(1).ok().flatten().unwrap_or_default())
                        .collect()
                })
        })
    })
    .unwrap_or_else(|e| vec![e.to_string()]);
    match failed.is_empty() {
        true => sent.last = Some((payload, Instant::now())),
        false => log!(
            "jsonb_ttl: cannot hand (all) the TTL indexes of distributed tables on to: {} \
             (a number: the TTL indexes that node could not place yet)",
            failed.join("; ")
        ),
    }
}

/// The TTL indexes of hash-distributed tables that are handed on: not those with an option
/// `ttl_index_create` refuses on such a table (a table distributed after its TTL index was
/// created is not checked again there; docs/citus.md). Not one with `archive_to` either (a
/// catalog from before 0.4.0 has none): its shards would be purged without archiving.
const HANDED_ON: &str = "NOT t.touch AND NOT t.hide_expired AND t.drop_partitions IS NULL \
                         AND (pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) 'archive_to'::pg_catalog.text) IS NULL \
                         AND c.relkind OPERATOR(pg_catalog.=) 'r'::pg_catalog.\"char\" \
                         AND d.repmodel OPERATOR(pg_catalog.=) 's'::pg_catalog.\"char\"";

/// The definitions to send, with the list of worker nodes (so a node added changes it) and
/// each table's OID here (so a table dropped and created again under its name, whose
/// definition the nodes dropped with it, changes it too; the nodes do not read it): a JSON
/// object, or `None` when it cannot be read.
fn payload(ext: &Extension) -> Option<String> {
    let keys: Vec<String> = DEFINITION.iter().map(|c| format!("'{c}'")).collect();
    Spi::get_one::<String>(&format!(
        "SELECT pg_catalog.jsonb_build_object( \
           'nodes', (SELECT pg_catalog.jsonb_agg(n.nodeid ORDER BY n.nodeid) \
                     FROM pg_catalog.pg_dist_node n WHERE n.isactive), \
           'indexes', coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object( \
                        'table', t.table_oid::pg_catalog.regclass::pg_catalog.text, \
                        'owner', pg_catalog.pg_get_userbyid(c.relowner), \
                        'here', t.table_oid::pg_catalog.oid, \
                        'operator_pause', CASE WHEN (pg_catalog.to_jsonb(t) OPERATOR(pg_catalog.->>) 'paused_by'::pg_catalog.text) \
                                                    OPERATOR(pg_catalog.=) 'operator'::pg_catalog.text \
                                               THEN t.paused_reason END, \
                        'definition', (SELECT pg_catalog.jsonb_object_agg(k.key, k.value) \
                                       FROM pg_catalog.jsonb_each(pg_catalog.to_jsonb(t)) k \
                                       WHERE k.key OPERATOR(pg_catalog.=) ANY (ARRAY[{}]::pg_catalog.text[]))) \
                        ORDER BY t.table_oid::pg_catalog.regclass::pg_catalog.text) \
                      FROM {catalog} t \
                      JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid \
                      JOIN pg_catalog.pg_dist_partition d \
                        ON d.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid \
                      WHERE d.partmethod OPERATOR(pg_catalog.=) 'h'::pg_catalog.\"char\" \
                        AND {HANDED_ON}), \
                      '[]'::pg_catalog.jsonb))::pg_catalog.text",
        keys.join(", "), catalog = ext.catalog(),
    ))
    .unwrap_or_else(|e| {
        log!("jsonb_ttl: cannot read the TTL indexes of distributed tables: {e}");
        None
    })
}

/// The sent rows (`$1`: the payload), each resolved to this node's shell of its distributed
/// table by name (kept the same on every node by Citus), and owned here by the role that owns
/// it there.
const SENT: &str =
    "SELECT pg_catalog.to_regclass(e OPERATOR(pg_catalog.->>) 'table'::pg_catalog.text) AS rel, \
            e OPERATOR(pg_catalog.->) 'definition'::pg_catalog.text AS definition, \
            e OPERATOR(pg_catalog.->>) 'operator_pause'::pg_catalog.text AS operator_pause \
     FROM pg_catalog.jsonb_array_elements($1 OPERATOR(pg_catalog.->) 'indexes'::pg_catalog.text) e \
     JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) \
          pg_catalog.to_regclass(e OPERATOR(pg_catalog.->>) 'table'::pg_catalog.text)::pg_catalog.oid \
     JOIN pg_catalog.pg_dist_partition d ON d.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) c.oid \
     WHERE d.partmethod OPERATOR(pg_catalog.=) 'h'::pg_catalog.\"char\" \
       AND pg_catalog.pg_get_userbyid(c.relowner)::pg_catalog.text OPERATOR(pg_catalog.=) \
           (e OPERATOR(pg_catalog.->>) 'owner'::pg_catalog.text)";

/// The statements that make this node's catalog rows of hash-distributed tables the sent ones
/// (`$1`: the payload): the rows no longer sent go, the rows that differ are updated, the new
/// ones inserted; then a pause by hand on the coordinator is this node's pause too (and a
/// resume there, a resume here, which releases the brake as `ttl_index_resume` does).
fn receive_statements(ext: &Extension) -> [String; 5] {
    let definition = DEFINITION
        .iter()
        .map(|c| format!("'{c}'"))
        .collect::<Vec<_>>()
        .join(", ");
    let sets: Vec<String> = DEFINITION
        .iter()
        .map(|c| format!("{c} = (n.def_row).{c}"))
        .collect();
    let sent = SENT;
    let mine = format!(
        "(SELECT pg_catalog.jsonb_object_agg(k.key, k.value) FROM pg_catalog.jsonb_each(pg_catalog.to_jsonb(t)) k \
          WHERE k.key OPERATOR(pg_catalog.=) ANY (ARRAY[{definition}]::pg_catalog.text[]))"
    );
    // Only rows that differ are written (and locked): an unchanged row a tenant holds locked
    // here (ttl_index_resume in an open transaction) holds nothing up; a changed one waits 1 s
    // at most, and the coordinator sends again at its next pass.
    [
        format!(
            "DELETE FROM {catalog} t USING pg_catalog.pg_dist_partition d \
             WHERE d.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid \
               AND d.partmethod OPERATOR(pg_catalog.=) 'h'::pg_catalog.\"char\" \
               AND t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.<>) ALL (ARRAY( \
                     SELECT s.rel::pg_catalog.oid FROM ({sent}) s))", catalog = ext.catalog(),
        ),
        format!(
            "UPDATE {catalog} t SET {} \
             FROM (SELECT s.rel, pg_catalog.jsonb_populate_record(NULL::{catalog}, s.definition) AS def_row, \
                          s.definition FROM ({sent}) s) n \
             WHERE t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) n.rel::pg_catalog.oid \
               AND {mine} OPERATOR(pg_catalog.<>) n.definition",
            sets.join(", "), catalog = ext.catalog(),
        ),
        format!(
            "INSERT INTO {catalog} \
             SELECT (pg_catalog.jsonb_populate_record(NULL::{catalog}, \
                       s.definition OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object( \
                         'table_oid', s.rel::pg_catalog.oid::pg_catalog.text, \
                         'created_at', pg_catalog.now(), 'brake_released', false, \
                         'hide_enabled_row_security', false))).* \
             FROM ({sent}) s ON CONFLICT (table_oid) DO NOTHING", catalog = ext.catalog(),
        ),
        format!(
            "UPDATE {catalog} t SET paused_at = pg_catalog.now(), paused_by = 'operator', \
                    paused_reason = s.operator_pause \
             FROM ({sent}) s \
             WHERE t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) s.rel::pg_catalog.oid \
               AND s.operator_pause IS NOT NULL \
               AND (t.paused_by IS NULL OR t.paused_by OPERATOR(pg_catalog.<>) 'operator'::pg_catalog.text)", catalog = ext.catalog(),
        ),
        format!(
            "UPDATE {catalog} t SET paused_at = NULL, paused_by = NULL, paused_reason = NULL \
             FROM ({sent}) s \
             WHERE t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) s.rel::pg_catalog.oid \
               AND s.operator_pause IS NULL \
               AND t.paused_by OPERATOR(pg_catalog.=) 'operator'::pg_catalog.text", catalog = ext.catalog(),
        ),
    ]
}

/// On a worker node: makes its catalog rows of hash-distributed tables exactly the
/// definitions the coordinator sent (`payload`, from [`send`]); returns how many of them it
/// could not place (a table whose distribution has not reached this node yet, or owned here by
/// another role): the coordinator sends again until none is left.
/// Superusers only (the coordinator's worker; EXECUTE is revoked from PUBLIC).
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_citus_receive",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_citus_receive(payload: pgrx::JsonB) -> i64 {
    if !unsafe { pgrx::pg_sys::superuser() } {
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "only the coordinator's jsonb_ttl worker hands TTL indexes on",
            "This runs on Citus worker nodes, called by the coordinator.",
        );
    }
    if !citus::present() || citus::is_coordinator() {
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            "this node is not a Citus worker node",
            "The coordinator's catalog is the authority; it is not overwritten.",
        );
    }
    let ext = Extension::current();
    let statements = receive_statements(&ext);
    let placed = gucs::with_settings(&[(c"lock_timeout", "1000")], || {
        owner::as_catalog_owner(ext.owner(), || {
            for sql in &statements {
                Spi::connect_mut(|client| {
                    client
                        .update(sql, None, &[pgrx::JsonB(payload.0.clone()).into()])
                        .map(|_| ())
                })?;
            }
            Spi::get_one_with_args::<i64>(
                &format!("SELECT pg_catalog.count(*) FROM ({SENT}) s"),
                &[pgrx::JsonB(payload.0.clone()).into()],
            )
        })
    })
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot record the TTL indexes sent: {e}"))
    .unwrap_or(0);
    let total = payload
        .0
        .get("indexes")
        .and_then(|indexes| indexes.as_array())
        .map_or(0, |indexes| indexes.len() as i64);
    total - placed
}
