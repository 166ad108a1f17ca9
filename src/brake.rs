//! The safety brake: a TTL index with more than `jsonb_ttl.max_table_fraction` of its table
//! expired at once is paused instead of purged, logged, and shown in
//! `ttl_stats.skipped` and `ttl_indexes.paused_at`, until its owner calls `ttl_index_resume()`.
//! What it guards against: a wrong `expire_after` (minutes for months), a clock that jumped
//! forward, documents whose dates were all rewritten — each of which would otherwise empty a
//! table in one pass.
//!
//! Before the first batch of a visit the worker reads the TTL index's btree for its entries
//! before the cutoff, up to the limit (`leaf_check::entries_before`: no heap, no owner code;
//! dead rows' entries count too). Within the limit, the visit goes on: a steady table pays a
//! walk over a few index pages. Past it, the worker counts the expired rows through the TTL
//! index, as the table's owner (a partition's: all the partitions of its partitioned table,
//! against all their rows, once a pass — see [`partitioned_root`]), stopping one past the
//! limit. A backlog that passed is not counted again until a visit drains it or its
//! `expire_after` changes, and a count that outlasts `jsonb_ttl.batch_timeout` pauses the index
//! too, saying why. Tables smaller than `jsonb_ttl.brake_min_rows` (by the planner's estimate,
//! or the live rows counted since the last statistics reset when there is none yet) are never
//! braked: a table of two rows, both expired, is purged. `ttl_index_resume()` releases the
//! brake until a visit drains the table, after which it holds again.
//!
//! The pause lives in the TTL catalog (`paused_at`, `paused_reason`, `brake_released`), so it
//! survives restarts and is dumped with the catalog.

use crate::catalog::TtlIndex;
use crate::extension::Extension;
use crate::gucs;
use crate::owner;
use crate::planner::MARKER;
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;

/// The most expired rows a visit of a table of about `rows` rows may find before the brake
/// pauses its TTL index; `None` when the brake does not apply (turned off with
/// `max_table_fraction = 1`, or a table under `brake_min_rows`).
pub fn limit(rows: f64, fraction: f64, min_rows: i64) -> Option<i64> {
    if fraction >= 1.0 || rows < min_rows as f64 {
        return None;
    }
    Some((rows * fraction).ceil() as i64)
}

/// About how many rows `table` has now: what the planner estimates (`reltuples` scaled by the
/// pages the table has now, as `estimate_rel_size` does: a table that grew since its last
/// ANALYZE counts at its size now), capped by the live rows the statistics count (pages that
/// a mass UPDATE filled with dead versions hold no more rows). Without `reltuples` (never
/// vacuumed nor analyzed), the live rows counted. From the relation cache: no query of
/// pg_class, which Citus filters shards out of.
pub fn table_rows(table: Oid) -> f64 {
    let Some((reltuples, relpages, pages)) = sizes(table) else {
        return 0.0;
    };
    let live = live_rows(table);
    let planned = match (reltuples >= 0.0, relpages > 0) {
        (true, true) => reltuples / relpages as f64 * pages as f64,
        // measured empty (a VACUUM or ANALYZE of an empty table, as of a partition made ahead):
        // the planner too estimates such a table by its pages now, not by its 0 rows
        (true, false) if pages > 0 => return live,
        (true, false) => reltuples,
        // (n_live_tup counts an insert its statistics report after an ANALYZE twice: it is only
        // the fallback, and the cap)
        (false, _) => return live,
    };
    match live > 0.0 {
        true => planned.min(live),
        false => planned,
    }
}

/// `reltuples`, `relpages` and the pages `table` has now, or `None` when it is gone.
fn sizes(table: Oid) -> Option<(f64, i32, u32)> {
    unsafe {
        let relation = pgrx::pg_sys::RelationIdGetRelation(table);
        if relation.is_null() {
            return None;
        }
        let rel = &*(*relation).rd_rel;
        let (reltuples, relpages) = (rel.reltuples as f64, rel.relpages);
        let pages = pgrx::pg_sys::RelationGetNumberOfBlocksInFork(
            relation,
            pgrx::pg_sys::ForkNumber::MAIN_FORKNUM,
        );
        pgrx::pg_sys::RelationClose(relation);
        Some((reltuples, relpages, pages))
    }
}

/// The live rows of `table` the statistics count (`n_live_tup`).
pub fn live_rows(table: Oid) -> f64 {
    // read-only (crate::read): no transaction ID for a count
    crate::read::one_checked::<f64>(
        "SELECT pg_catalog.pg_stat_get_live_tuples($1)::pg_catalog.float8",
        &[table.into()],
    )
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot estimate the size of the table: {e}"))
    .unwrap_or(0.0)
}

/// Counts the expired rows of `index`'s table through the TTL index, up to `$2` (parameters:
/// `$1 interval` expire_after, `$2 bigint` the most to count).
pub fn count_sql(ext: &Extension, index: &TtlIndex) -> Result<String, String> {
    count_sql_in(ext, index, &format!("ONLY {}", index.qualified_table))
}

/// [`count_sql`] over `relation` (SQL text: a partitioned table counts in all its partitions).
pub fn count_sql_in(ext: &Extension, index: &TtlIndex, relation: &str) -> Result<String, String> {
    let reference = index.reference(ext)?;
    Ok(format!(
        "{MARKER}SELECT pg_catalog.count(*) FROM (SELECT FROM {relation} WHERE {} LIMIT $2) expired",
        index.expired(ext, &reference)
    ))
}

/// For a partition of a partitioned table with the same owner, that table (schema-qualified,
/// quoted): the brake measures a partition's visit against the whole table, counting the
/// expired rows of all its partitions. A table partitioned by time has its oldest partitions
/// wholly expired in its steady state, one after the other: measured alone, each would pause
/// the TTL index. With another owner (whose table the partition's owner may not read, and
/// whose code must not run as it), the partition alone, as a table of its own.
pub fn partitioned_root(index: &TtlIndex) -> Option<String> {
    if index.table == index.root {
        return None;
    }
    // read-only (crate::read): no transaction ID
    crate::read::one_checked::<String>(
        "SELECT pg_catalog.quote_ident(n.nspname::pg_catalog.text) OPERATOR(pg_catalog.||) '.' \
                OPERATOR(pg_catalog.||) pg_catalog.quote_ident(c.relname::pg_catalog.text) \
         FROM pg_catalog.pg_class c \
         JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
         WHERE c.oid OPERATOR(pg_catalog.=) $1 AND c.relkind OPERATOR(pg_catalog.=) 'p' \
           AND c.relowner OPERATOR(pg_catalog.=) $2",
        &[index.root.into(), index.owner.into()],
    )
    .ok()
    .flatten()
}

/// Why the brake stops a visit that found more than `limit` expired rows in `table` (as shown)
/// of about `rows` rows.
pub fn reason(index: &TtlIndex, table: &str, limit: i64, rows: f64) -> String {
    format!(
        "paused by the safety brake: more than {limit} of about {rows:.0} rows of {table} were expired \
         at once (jsonb_ttl.max_table_fraction = {}); check expire_after and the clock, then {}",
        gucs::MAX_TABLE_FRACTION.get(),
        resume_hint(index),
    )
}

/// Why the brake stops a visit whose count of the expired rows did not finish in time.
pub fn reason_uncounted(index: &TtlIndex, error: &str) -> String {
    format!(
        "paused by the safety brake: the expired rows of {} could not be counted ({error}); \
         check expire_after and the clock with ttl_expire_preview(), then {}",
        index.display_name,
        resume_hint(index),
    )
}

/// `SELECT ttl_index_resume('<the table the TTL index is on>')`: a partition's is its root's.
fn resume_hint(index: &TtlIndex) -> String {
    let root = Spi::get_one_with_args::<String>(
        "SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) FROM pg_catalog.pg_class c \
         JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
         WHERE c.oid OPERATOR(pg_catalog.=) $1",
        &[index.root.into()],
    )
    .ok()
    .flatten()
    .unwrap_or_else(|| index.display_name.clone());
    format!("SELECT ttl_index_resume('{}')", root.replace('\'', "''"))
}

/// Pauses the TTL index of `root` with `reason` (in the caller's transaction, as the worker).
pub fn pause(ext: &Extension, root: Oid, reason: &str) {
    // an owner's open transaction holding the row (its ttl_index_resume) must not hold the
    // worker: within jsonb_ttl.lock_timeout, else the next pass tries again
    let lock_timeout = gucs::LOCK_TIMEOUT_MS.get().to_string();
    gucs::override_setting(c"lock_timeout", &lock_timeout);
    pause_row(ext, root, reason);
}

/// The catalog row of `root` paused by the brake with `reason` (cut on a character boundary to
/// what `ttl_index_pause` keeps: an error an owner's code raised may be long), its release
/// taken back: the one write of every pause of the brake, the worker's ([`pause`]) and the
/// hold of a mistaken definition at creation or alter ([`crate::held`]).
pub fn pause_row(ext: &Extension, root: Oid, reason: &str) {
    let by = match ext.has_controls() {
        true => ", paused_by = 'brake'",
        false => "",
    };
    let mut end = reason.len().min(crate::controls::MAX_REASON_BYTES);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let reason = &reason[..end];
    Spi::run_with_args(
        &format!(
            "UPDATE {catalog} SET paused_at = pg_catalog.now(), paused_reason = $2, \
                    brake_released = false{by} \
             WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
            catalog = ext.catalog(),
        ),
        &[root.into(), reason.into()],
    )
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot pause the TTL index: {e}"));
}

/// Sets the brake of `root` again, once a visit released by `ttl_index_resume()` has drained
/// the table (in the caller's transaction, as the worker).
pub fn rearm(ext: &Extension, root: Oid) {
    // within jsonb_ttl.lock_timeout (see pause); a row already rearmed is not written again
    let lock_timeout = gucs::LOCK_TIMEOUT_MS.get().to_string();
    gucs::override_setting(c"lock_timeout", &lock_timeout);
    Spi::run_with_args(
        &format!(
            "UPDATE {catalog} SET brake_released = false \
             WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 AND brake_released",
            catalog = ext.catalog(),
        ),
        &[root.into()],
    )
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot set the brake again: {e}"));
}

/// Lifts a pause of the TTL index of `root` (`ttl_index_resume`); a pause of the safety brake
/// also releases the brake until a visit of the worker drains the table (an operator's pause
/// does not: the brake is left as it was, held again by any `ttl_index_alter` since). Returns whether the index was
/// paused; an index that was not is left as it is (its brake still holds).
pub fn resume(ext: &Extension, root: Oid) -> bool {
    // a resume releases only the pause it ends: the brake's (its backlog was reviewed); after
    // an operator's the brake is as it was before (held again by any alter since)
    let (released, by) = match ext.has_controls() {
        true => (
            "CASE WHEN paused_by OPERATOR(pg_catalog.=) 'operator'::pg_catalog.text \
                  THEN brake_released ELSE true END",
            ", paused_by = NULL",
        ),
        false => ("true", ""),
    };
    owner::as_catalog_owner(ext.owner(), || {
        Spi::get_one_with_args::<bool>(
            &format!(
                "WITH before AS (SELECT paused_at IS NOT NULL AS paused FROM {catalog} \
                                 WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1), \
                      resumed AS (UPDATE {catalog} SET paused_at = NULL, paused_reason = NULL, \
                                         brake_released = {released}{by} \
                                  WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1 \
                                    AND paused_at IS NOT NULL) \
                 SELECT paused FROM before",
                catalog = ext.catalog(),
            ),
            &[root.into()],
        )
    })
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot resume the TTL index: {e}"))
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::limit;

    #[test]
    fn limits() {
        // (table rows, fraction, min rows) → the most expired rows a visit may find
        let cases: &[(f64, f64, i64, Option<i64>)] = &[
            (1_000_000.0, 0.5, 10_000, Some(500_000)),
            (10_000.0, 0.5, 10_000, Some(5_000)),
            (9_999.0, 0.5, 10_000, None), // a small table: never braked
            (2.0, 0.5, 10_000, None),     // two rows, both expired: purged
            (1_000_000.0, 1.0, 10_000, None), // brake off
            (1_000_001.0, 0.1, 0, Some(100_001)), // rounded up
        ];
        for &(rows, fraction, min_rows, want) in cases {
            assert_eq!(
                limit(rows, fraction, min_rows),
                want,
                "{rows} {fraction} {min_rows}"
            );
        }
    }
}
