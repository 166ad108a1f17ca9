//! The TTL indexes' targets as a caller purges them, and the TTL index of each Citus shard
//! among them, found by what it is ([`crate::build::Shaped`]), never by name: shards record no
//! index OIDs (Citus makes their indexes with the shards, on each node).

use crate::build;
use crate::catalog::{self, TtlIndex};
use crate::extension::Extension;
use crate::tracking::shapes;
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;

/// The TTL indexes' targets of `table` (the table it was created on), or of every table
/// ([`catalog::load`]) that `keep` keeps, each Citus shard's index found by what it is
/// ([`shard_indexes`]). What the callers of the API purge: `keep` first, so that no other
/// tenant's shard is opened for a caller's `ttl_expire_now()`.
pub fn targets(
    ext: &Extension,
    table: Option<Oid>,
    keep: impl Fn(&TtlIndex) -> bool,
) -> Vec<TtlIndex> {
    let mut targets: Vec<TtlIndex> = catalog::load(ext, table, catalog::Scope::Targets)
        .into_iter()
        .filter(|target| keep(target))
        .collect();
    shard_indexes(ext, &mut targets);
    targets
}

/// Sets the index of each Citus shard among `targets` by what it is ([`shard_index`]): ready
/// when found. The shards are seen in `pg_class` as the catalog's load sees them
/// (`citus.override_table_visibility = off`: a client session's default hides them).
pub fn shard_indexes(ext: &Extension, targets: &mut [TtlIndex]) {
    if !targets.iter().any(|target| target.shard.is_some()) {
        return;
    }
    crate::gucs::with_settings(&crate::citus::SHOW_SHARDS, || {
        for target in targets.iter_mut().filter(|target| target.shard.is_some()) {
            target.index_oid = shard_index(ext, target);
            target.index_ready = target.index_oid.is_some();
        }
    })
}

/// Whether every part of `target`'s definition can be written as SQL now (a column dropped or
/// retyped since: not), so that its indexes' shapes can be: a target that cannot has no index
/// to find.
fn writable(ext: &Extension, target: &TtlIndex) -> bool {
    match target.row_ttl {
        Some(_) => target
            .clone()
            .parts()
            .iter()
            .all(|part| part.reference(ext).is_ok()),
        None => target.reference(ext).is_ok(),
    }
}

/// The TTL index of the Citus shard target `target` (a shard of a hash-distributed table, held
/// here), for the rows with a TTL of their own the per-row index: the index of the shard that
/// is it by what it is (as [`crate::tracking`] tells an index's role, its expression and predicate read on the
/// shard), whatever its name; the lowest OID if several are. Shards record no OIDs (Citus makes
/// their indexes with the shards, on each node); the worker reads the one found directly
/// ([`crate::leaf_check`]), and its batches still test expiry on the reference itself.
pub fn shard_index(ext: &Extension, target: &TtlIndex) -> Option<Oid> {
    let role = match target.part {
        catalog::Part::OwnTtl => "row_ttl_index_name",
        _ => "index_name",
    };
    if !writable(ext, target) {
        return None;
    }
    let shard = target.table;
    let candidates: Vec<Oid> = Spi::connect(|client| {
        client
            .select(
                "SELECT i.indexrelid FROM pg_catalog.pg_index i \
                 WHERE i.indrelid OPERATOR(pg_catalog.=) $1 AND NOT i.indcheckxmin \
                 ORDER BY i.indexrelid",
                None,
                &[shard.into()],
            )
            .map(|rows| {
                rows.filter_map(|row| row.get::<Oid>(1).ok().flatten())
                    .collect()
            })
            .unwrap_or_default()
    });
    let shapes = shapes(ext, target, shard);
    build::shaped_indexes(shard, true)
        .into_iter()
        .filter(|index| candidates.contains(&index.oid))
        .find(|index| {
            shapes
                .iter()
                .any(|(column, shape)| *column == role && index.is(shape))
        })
        .map(|index| index.oid)
}
