//! On the Citus coordinator, what the worker nodes' `ttl_stats` say of the hash-distributed
//! tables, added to the coordinator's rows (see [`super`]).

use super::StatsRow;
use pgrx::pg_sys;
use pgrx::prelude::*;

/// On the Citus coordinator, adds to `rows` what the worker nodes count for their shards of
/// each hash-distributed table (their `ttl_stats`, read as the caller through Citus's
/// connections): the table shows once, summed over its placements; the last error names its
/// node. A node that cannot be reached adds nothing. Each node's own `ttl_stats` has its part.
pub(super) fn add_worker_nodes(rows: &mut Vec<StatsRow>) {
    if !crate::citus::present() || !crate::citus::is_coordinator() {
        return;
    }
    let Some(ext) = crate::extension::Extension::find() else {
        return;
    };
    let distributed = crate::read::one::<bool>(
        &format!(
        "SELECT EXISTS (SELECT FROM {catalog} t JOIN pg_catalog.pg_dist_partition d \
                        ON d.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid \
                        WHERE d.partmethod OPERATOR(pg_catalog.=) 'h'::pg_catalog.\"char\")", catalog = ext.catalog(),
        ),
        &[],
    );
    if distributed != Some(true) {
        return;
    }
    merge(rows, worker_node_rows(&ext));
}

/// What the worker nodes' `ttl_stats` say of the hash-distributed tables, one row a table.
fn worker_node_rows(ext: &crate::extension::Extension) -> Vec<StatsRow> {
    let remote = format!(
        "SELECT coalesce(pg_catalog.json_agg(pg_catalog.json_build_array( \
                (SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) FROM pg_catalog.pg_class c \
                 JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
                 WHERE c.oid OPERATOR(pg_catalog.=) ttl_table::pg_catalog.oid), \
                runs, rows_deleted, last_run_at, last_rows_deleted, limit_reached, errors, \
                last_error, oldest_expired, last_success_at, backlog, \
                part IS NOT DISTINCT FROM 'row_ttl')), '[]'::pg_catalog.json) \
         FROM {ext}.ttl_stats \
         WHERE table_name OPERATOR(pg_catalog.=) ttl_table \
           AND ttl_table::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (ARRAY( \
                 SELECT logicalrelid::pg_catalog.oid FROM pg_catalog.pg_dist_partition \
                 WHERE partmethod OPERATOR(pg_catalog.=) 'h'::pg_catalog.\"char\"))"
    );
    let sql = "SELECT pg_catalog.to_regclass(e OPERATOR(pg_catalog.->>) 0)::pg_catalog.oid, \
                      pg_catalog.sum((e OPERATOR(pg_catalog.->>) 1)::pg_catalog.int8)::pg_catalog.int8, \
                      pg_catalog.sum((e OPERATOR(pg_catalog.->>) 2)::pg_catalog.int8)::pg_catalog.int8, \
                      pg_catalog.max((e OPERATOR(pg_catalog.->>) 3)::pg_catalog.timestamptz), \
                      pg_catalog.sum((e OPERATOR(pg_catalog.->>) 4)::pg_catalog.int8)::pg_catalog.int8, \
                      pg_catalog.sum((e OPERATOR(pg_catalog.->>) 5)::pg_catalog.int8)::pg_catalog.int8, \
                      pg_catalog.sum((e OPERATOR(pg_catalog.->>) 6)::pg_catalog.int8)::pg_catalog.int8, \
                      (pg_catalog.array_agg(r.nodename OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) \
                          r.nodeport OPERATOR(pg_catalog.||) ': ' OPERATOR(pg_catalog.||) \
                          (e OPERATOR(pg_catalog.->>) 7) \
                        ORDER BY (e OPERATOR(pg_catalog.->>) 3)::pg_catalog.timestamptz DESC NULLS LAST) \
                       FILTER (WHERE (e OPERATOR(pg_catalog.->>) 7) IS NOT NULL))[1], \
                      pg_catalog.min((e OPERATOR(pg_catalog.->>) 8)::pg_catalog.timestamptz), \
                      pg_catalog.min((e OPERATOR(pg_catalog.->>) 9)::pg_catalog.timestamptz), \
                      pg_catalog.sum((e OPERATOR(pg_catalog.->>) 10)::pg_catalog.int8)::pg_catalog.int8, \
                      (e OPERATOR(pg_catalog.->>) 11)::pg_catalog.bool \
               FROM pg_catalog.run_command_on_workers($1) r, \
                    pg_catalog.json_array_elements(r.result::pg_catalog.json) e \
               WHERE r.success \
                 AND pg_catalog.to_regclass(e OPERATOR(pg_catalog.->>) 0)::pg_catalog.oid \
                     OPERATOR(pg_catalog.=) ANY (ARRAY( \
                       SELECT logicalrelid::pg_catalog.oid FROM pg_catalog.pg_dist_partition \
                       WHERE partmethod OPERATOR(pg_catalog.=) 'h'::pg_catalog.\"char\")) \
               GROUP BY 1, 12";
    crate::gucs::with_settings(&crate::citus::CONNECT_TIMEOUT, || worker_stats(sql, remote))
}

/// The rows of `sql` (run on the coordinator, `$1` = `remote`, the query each node runs).
fn worker_stats(sql: &str, remote: String) -> Vec<StatsRow> {
    Spi::connect(|client| {
        client
            .select(sql, None, &[remote.into()])
            .map(|found| {
                found
                    .filter_map(|row| {
                        let n = |i| row.get::<i64>(i).ok().flatten().unwrap_or(0);
                        Some((
                            row.get::<pg_sys::Oid>(1).ok()??,
                            n(2),
                            n(3),
                            row.get::<TimestampWithTimeZone>(4).ok().flatten(),
                            n(5),
                            n(6),
                            n(7),
                            row.get::<String>(8).ok().flatten(),
                            row.get::<TimestampWithTimeZone>(9).ok().flatten(),
                            None,
                            row.get::<TimestampWithTimeZone>(10).ok().flatten(),
                            None,
                            row.get::<i64>(11).ok().flatten(),
                            match row.get::<bool>(12).ok().flatten().unwrap_or(false) {
                                true => super::super::OWN_TTL,
                                false => super::super::WHOLE,
                            },
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default()
    })
}

/// Adds each of `added` to the row of its table in `rows` (summed), or as a row of its own.
pub(super) fn merge(rows: &mut Vec<StatsRow>, added: Vec<StatsRow>) {
    for node in added {
        match rows
            .iter_mut()
            .find(|row| row.0 == node.0 && row.13 == node.13)
        {
            Some(here) => {
                here.1 += node.1;
                here.2 += node.2;
                here.3 = here.3.max(node.3);
                here.4 += node.4;
                here.5 += node.5;
                here.6 += node.6;
                here.7 = here.7.take().or(node.7);
                here.8 = match (here.8, node.8) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                // the last success of every node: the earliest of theirs
                here.10 = match (here.10, node.10) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                here.12 = match (here.12, node.12) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                };
            }
            None => rows.push(node),
        }
    }
}
