//! The targets of the worker's passes, kept across passes (docs/worker.md, PASS): the TTL
//! catalog is read again only when something it is read from may have changed, not at every
//! pass (at 10,000 TTL tables the read was half of an idle pass).
//!
//! What may change it:
//! - the catalog's rows (`ttl_index`, `jsonb_ttl_internal.index_oid`, the field TTLs'
//!   `jsonb_ttl_internal.ttl_field`): whoever writes them
//!   (the API, the event triggers, the brake, a restore, a superuser's UPDATE), a digest of
//!   their row versions (each one's `ctid` and `xmin`, read straight from the heap) differs;
//! - the system catalogs the read joins (tables, partitions, columns, indexes, owners, names):
//!   every such change sends a relation cache invalidation (or, for a schema, a system cache
//!   one), which a callback registered here notes, as an invalidation overflow does;
//! - the time: whether each TTL index is inside its delete window is evaluated again each
//!   pass; under Citus (a distributed table stands for the shards this node holds now) the
//!   catalog is read at every pass, as before.

use crate::catalog::{self, TtlIndex};
use crate::extension::Extension;
use crate::{deleter, gucs, tracking};
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the invalidation callbacks: something the catalog's read joins may have changed
/// since it was read. True at start: nothing read yet.
static CHANGED: AtomicBool = AtomicBool::new(true);

unsafe extern "C-unwind" fn relation_changed(_arg: pg_sys::Datum, _relid: Oid) {
    CHANGED.store(true, Ordering::SeqCst);
}

unsafe extern "C-unwind" fn syscache_changed(_arg: pg_sys::Datum, _cache: i32, _hash: u32) {
    CHANGED.store(true, Ordering::SeqCst);
}

/// Registers the invalidation callbacks, once per process (the worker's start).
pub(super) fn watch_invalidations() {
    unsafe {
        pg_sys::CacheRegisterRelcacheCallback(Some(relation_changed), pg_sys::Datum::from(0));
        pg_sys::CacheRegisterSyscacheCallback(
            pg_sys::SysCacheIdentifier::NAMESPACEOID as i32,
            Some(syscache_changed),
            pg_sys::Datum::from(0),
        );
    }
}

/// The targets as last read, and what they were read from.
pub(super) struct Kept {
    ext: Extension,
    /// The catalog tables and the digest of their rows when they were read.
    tables: Vec<Oid>,
    digest: Option<Vec<(u64, u64)>>,
    indexes: Vec<TtlIndex>,
    /// Under Citus, the TTL index found on each shard held here (see [`crate::shard_targets::shard_index`]), kept
    /// while no relation changes.
    shard_indexes: ShardIndexes,
}

/// The index of each Citus shard target (its table and part, under the version of its TTL
/// index's definition it was matched against) read directly, if any.
type ShardIndexes = HashMap<(Oid, catalog::Part, String), Option<Oid>>;

/// Reads the targets of a pass in the current transaction: the ones `kept` from an earlier
/// pass when nothing they were read from has changed (their delete windows evaluated again),
/// else the TTL catalog's, after recording the indexes of the tables whose records are stale
/// (see [`tracking::stale_records`]); `None` while a pg_restore is connected to the database
/// (a restore may be half done). `kept` is cleared first: an error leaves nothing kept.
pub(super) fn read(ext: &Extension, kept: &mut Option<Kept>) -> Option<Vec<TtlIndex>> {
    // Planned above jit_above_cost (the partition trees), the catalog read would be
    // compiled by JIT on every pass: 0.2–0.4 s each, measured with jit = on.
    gucs::override_setting(c"jit", "off");
    if catalog::restore_in_progress() {
        *kept = None;
        return None;
    }
    // the invalidations sent before this transaction began are in (StartTransaction), and
    // those its reads so far took in (each new lock)
    let changed = CHANGED.swap(false, Ordering::SeqCst);
    // Everything from here reads under a snapshot taken after that swap, which holds every
    // change whose invalidation the swap consumed (a change is visible before its
    // invalidations are sent). The transaction's own snapshot, taken as it began, may not:
    // a TTL index committed while this transaction waited for a lock (before the swap) was
    // then missing from the catalog's read, but in the digest taken later, and the targets
    // without it were kept pass after pass (kept_targets.sh, "while the worker waits").
    Some(under_fresh_snapshot(|| choose(ext, kept, changed)))
}

/// The targets of [`read`] once the invalidations are counted (`changed`).
fn choose(ext: &Extension, kept: &mut Option<Kept>, changed: bool) -> Vec<TtlIndex> {
    let previous = kept
        .take()
        .filter(|previous| !changed && previous.ext == *ext);
    let still = |previous: &Kept| {
        previous.digest.is_some()
            && digest(&previous.tables) == previous.digest
            && !crate::citus::present()
    };
    let found = match previous {
        Some(mut previous) if still(&previous) => {
            evaluate_windows(&mut previous.indexes);
            let indexes = previous.indexes.clone();
            *kept = Some(previous);
            return indexes;
        }
        // (under Citus, the shards' indexes as found: no relation changed)
        Some(previous) => previous.shard_indexes,
        None => ShardIndexes::new(),
    };
    let fresh = load(ext, found);
    let indexes = fresh.indexes.clone();
    *kept = Some(fresh);
    indexes
}

use crate::read::under_fresh_snapshot;

/// Records the indexes of the TTL index of `table` again ([`tracking::track_indexes`]) within
/// `jsonb_ttl.lock_timeout`, in a subtransaction: false when a lock was not free in time (or
/// anything else failed), with nothing of it kept.
fn record_within_lock_timeout(ext: &Extension, table: Oid) -> bool {
    let lock_timeout = gucs::LOCK_TIMEOUT_MS.get().to_string();
    let recorded = gucs::with_settings(&[(c"lock_timeout", &lock_timeout)], || {
        crate::txn::in_subtransaction(|| tracking::track_indexes(ext, table))
    });
    match recorded {
        Ok(()) => true,
        Err(failure) => {
            debug1!(
                "jsonb_ttl: the indexes of table {} not recorded again now: {failure}",
                table.to_u32()
            );
            false
        }
    }
}

/// Reads the catalog (see [`read`]); `shard_indexes`, the indexes found on Citus shards when
/// no relation changed since.
fn load(ext: &Extension, mut shard_indexes: ShardIndexes) -> Kept {
    for table in tracking::stale_records(ext) {
        // reading its indexes locks the table: only if that lock is free now
        let free = unsafe {
            pg_sys::ConditionalLockRelationOid(table, pg_sys::AccessShareLock as pg_sys::LOCKMODE)
        };
        // recording takes other locks an owner can hold (an ALTER INDEX … RENAME of hers
        // under way): within jsonb_ttl.lock_timeout, in a subtransaction, so that one owner's
        // open transaction stalls no other table's purge
        let recorded = free && record_within_lock_timeout(ext, table);
        if !recorded {
            // the next pass reads the catalog again, and tries again
            CHANGED.store(true, Ordering::SeqCst);
        }
    }
    let tables = catalog_tables(ext);
    unsafe { pg_sys::CommandCounterIncrement() };
    // The digest and the read under one snapshot (with what was just recorded): the digest
    // must never hold a change the read lacks. (A statement that takes a snapshot of its own,
    // in a transaction that wrote, takes a newer one: a change the digest lacks shows at the
    // next pass.)
    let (digest, mut indexes) = under_fresh_snapshot(|| {
        let mut indexes = catalog::load(ext, None, catalog::Scope::Targets);
        let (fields, all_read) = crate::tracking::field_targets(ext, None, false);
        if !all_read {
            // a table's lock was not free: its field TTLs wait, and the next pass reads again
            CHANGED.store(true, Ordering::SeqCst);
        }
        let mut fields = fields;
        crate::field_dates::guard_targets(&mut fields, &indexes);
        indexes.extend(fields);
        (digest(&tables), indexes)
    });
    // Under Citus a table's rows may live in shards elsewhere while its index here is empty
    // (a reference table's, a shell's): its probe says, as before. A shard's rows are here,
    // in its own copy of the TTL index.
    let citus = crate::citus::present();
    let mut found = ShardIndexes::new();
    for index in &mut indexes {
        // the index is read directly only for a table whose probe can be written
        if deleter::probe_sql(ext, index).is_err() || (citus && index.shard.is_none()) {
            index.index_oid = None;
        } else if citus {
            let key = (index.table, index.part, index.version.clone());
            let shard_index = *shard_indexes
                .entry(key.clone())
                .or_insert_with(|| crate::shard_targets::shard_index(ext, index));
            found.insert(key, shard_index);
            index.index_oid = shard_index;
        }
        if index.shard.is_some() {
            // a shard's index is known by its shape only: ready when found
            index.index_ready = shard_indexes_found(&found, index);
        }
    }
    Kept {
        ext: ext.clone(),
        tables,
        digest,
        indexes,
        shard_indexes: found,
    }
}

/// Whether the shard target `index` has its TTL index, found by its shape ([`found`]).
fn shard_indexes_found(found: &ShardIndexes, index: &TtlIndex) -> bool {
    found
        .get(&(index.table, index.part, index.version.clone()))
        .is_some_and(|oid| oid.is_some())
}

/// The OIDs of the tables the catalog's rows are in.
fn catalog_tables(ext: &Extension) -> Vec<Oid> {
    let mut names = vec![ext.catalog()];
    if ext.has_internal_schema() {
        names.push(format!("{}.index_oid", crate::extension::INTERNAL_SCHEMA));
        // (0.4.0's SQL and later: an older catalog has none, and to_regclass reads NULL)
        names.push(format!("{}.ttl_field", crate::extension::INTERNAL_SCHEMA));
    }
    names
        .iter()
        .filter_map(|name| {
            crate::read::one::<Oid>(
                "SELECT pg_catalog.to_regclass($1)::pg_catalog.oid",
                &[name.as_str().into()],
            )
        })
        .collect()
}

/// Whether now is inside the delete window of each of `indexes` that has one, as the catalog's
/// read says (see [`catalog::in_window`]); one evaluation per distinct window.
fn evaluate_windows(indexes: &mut [TtlIndex]) {
    let mut seen: HashMap<(String, String, Option<String>), bool> = HashMap::new();
    for index in indexes.iter_mut() {
        let (Some(start), Some(end)) = (&index.window_start, &index.window_end) else {
            continue;
        };
        let key = (start.clone(), end.clone(), index.time_zone.clone());
        index.in_window = match seen.get(&key) {
            Some(&inside) => inside,
            None => {
                let inside = catalog::in_window(index)
                    .unwrap_or_else(|e| error!("jsonb_ttl: cannot read a delete window: {e}"));
                seen.insert(key, inside);
                inside
            }
        };
    }
}

/// A digest of the row versions of each of `tables` visible in the active snapshot: their
/// count, and a sum of a hash of each one's place (`ctid`) and inserting transaction (`xmin`).
/// Any insert, update or delete committed since changes it. `None` when a table cannot be read
/// so (gone, or not a heap): the catalog is then read at every pass.
fn digest(tables: &[Oid]) -> Option<Vec<(u64, u64)>> {
    tables.iter().map(|&table| heap_digest(table)).collect()
}

fn heap_digest(table: Oid) -> Option<(u64, u64)> {
    unsafe {
        let share = pg_sys::AccessShareLock as pg_sys::LOCKMODE;
        let rel = pg_sys::try_relation_open(table, share);
        if rel.is_null() {
            return None;
        }
        if (*(*rel).rd_rel).relam != pg_sys::HEAP_TABLE_AM_OID {
            pg_sys::relation_close(rel, share);
            return None;
        }
        let snapshot = pg_sys::RegisterSnapshot(pg_sys::GetActiveSnapshot());
        let flags = pg_sys::ScanOptions::SO_TYPE_SEQSCAN
            | pg_sys::ScanOptions::SO_ALLOW_STRAT
            | pg_sys::ScanOptions::SO_ALLOW_PAGEMODE;
        let scan = pg_sys::heap_beginscan(
            rel,
            snapshot,
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            flags,
        );
        let (mut count, mut sum) = (0u64, 0u64);
        loop {
            let tuple = pg_sys::heap_getnext(scan, pg_sys::ScanDirection::ForwardScanDirection);
            if tuple.is_null() {
                break;
            }
            let place = (*tuple).t_self;
            let block = (place.ip_blkid.bi_hi as u64) << 16 | place.ip_blkid.bi_lo as u64;
            let xmin = (*(*tuple).t_data).t_choice.t_heap.t_xmin;
            let hash = mix(mix(block << 16 | place.ip_posid as u64) ^ u32::from(xmin) as u64);
            count += 1;
            sum = sum.wrapping_add(hash);
        }
        pg_sys::heap_endscan(scan);
        pg_sys::UnregisterSnapshot(snapshot);
        pg_sys::relation_close(rel, share);
        Some((count, sum))
    }
}

/// splitmix64's finalizer.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
