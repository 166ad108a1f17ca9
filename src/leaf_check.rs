//! Whether a TTL index holds any entry before a cutoff, read straight from its btree: the
//! worker's idle pass asks this of every table before it runs any SQL for it (docs/worker.md,
//! PROBE). An index scan compares the stored keys with the operator family's comparison
//! function, here always PostgreSQL's own (`timestamptz`, a built-in family); it never
//! evaluates the index expression, nor anything else of the table's owner, so it runs as the
//! worker. No entry before the cutoff means nothing is expired: the index is the TTL index
//! itself, recorded by OID as ours by its expression and predicate ([`crate::tracking`]), so
//! every row the probe could find has an entry keyed on its reference time. An entry (alive
//! or dead: the heap is not read) sends the table to the SQL probe, as before.

use pgrx::datum::{Interval, IntoDatum};
use pgrx::pg_sys::{self, Oid};

/// The largest `expire_after`, in days, whose cutoff is computed here: far from the ends of
/// `timestamptz`, so the subtraction cannot fail (the SQL probe reports what it says then).
const MAX_DAYS: i64 = 2_000_000;

/// `now() - expire_after` as the probe computes it in this transaction, when that does not
/// depend on the time zone (`expire_after` without days or months) or `zone_is_ours` (the
/// probe's `TimeZone` is this session's: the table owner's settings do not change it), and the
/// result is surely in range; `None` otherwise (the SQL probe decides).
pub fn cutoff(expire_after: &Interval, zone_is_ours: impl FnOnce() -> bool) -> Option<i64> {
    let (months, days, micros) = (
        expire_after.months() as i64,
        expire_after.days() as i64,
        expire_after.micros(),
    );
    let span_days = months.abs() * 31 + days.abs() + micros.abs() / 86_400_000_000;
    if span_days > MAX_DAYS {
        return None;
    }
    let now = unsafe { pg_sys::GetCurrentTransactionStartTimestamp() };
    if months == 0 && days == 0 {
        return Some(now - micros);
    }
    if !zone_is_ours() {
        return None;
    }
    let interval = (*expire_after).into_datum()?;
    let cutoff = unsafe {
        pgrx::direct_function_call_as_datum(
            pg_sys::timestamptz_mi_interval,
            &[Some(pg_sys::Datum::from(now)), Some(interval)],
        )
    }?;
    Some(cutoff.value() as i64)
}

/// Whether the index `index` of `table` has an entry keyed before `cutoff` (a `timestamptz`):
/// `Some(false)` when it surely has none; `None` when this cannot be read here (the index is
/// locked or gone, not valid, not a one-key ascending btree on `timestamptz` of a built-in
/// operator family, not `table`'s). The caller holds a lock on `table`; the index is locked
/// only if that lock is free at once, and both locks are kept until the transaction ends.
pub fn has_entry_before(table: Oid, index: Oid, cutoff: i64) -> Option<bool> {
    entries_before(table, index, cutoff, 1).map(|entries| entries > 0)
}

/// How many entries keyed before `cutoff` the index `index` of `table` has, counting up to
/// `most`; as [`has_entry_before`] otherwise. Entries of dead rows count too (the heap is not
/// read): an upper bound of the rows the same condition finds.
pub fn entries_before(table: Oid, index: Oid, cutoff: i64, most: i64) -> Option<i64> {
    unsafe {
        if !pg_sys::ConditionalLockRelationOid(index, pg_sys::AccessShareLock as pg_sys::LOCKMODE) {
            return None;
        }
        // (both locked: the relation cache has them as they are, or NULL when gone)
        let index_rel = pg_sys::RelationIdGetRelation(index);
        if index_rel.is_null() {
            return None;
        }
        let heap_rel = match readable(index_rel, table) {
            true => pg_sys::RelationIdGetRelation(table),
            false => std::ptr::null_mut(),
        };
        let found = (!heap_rel.is_null()).then(|| count_before(heap_rel, index_rel, cutoff, most));
        if !heap_rel.is_null() {
            pg_sys::RelationClose(heap_rel);
        }
        pg_sys::RelationClose(index_rel);
        found
    }
}

/// Whether `index` is an index of `table` this module can read: valid, ready and live, a
/// btree on one ascending `timestamptz` key of a built-in operator family; not one that older
/// snapshots may not use (`indcheckxmin`: built over broken HOT chains, the planner skips it
/// for them too), nor a temporary table's (its buffers are its session's).
unsafe fn readable(index: pg_sys::Relation, table: Oid) -> bool {
    let rel = &*index;
    let class = &*rel.rd_rel;
    if class.relkind != pg_sys::RELKIND_INDEX as std::ffi::c_char
        || class.relpersistence == pg_sys::RELPERSISTENCE_TEMP as std::ffi::c_char
        || class.relam != pg_sys::BTREE_AM_OID
        || rel.rd_index.is_null()
        || rel.rd_opfamily.is_null()
        || rel.rd_opcintype.is_null()
        || rel.rd_indoption.is_null()
    {
        return false;
    }
    let form = &*rel.rd_index;
    form.indrelid == table
        && form.indisvalid
        && form.indisready
        && form.indislive
        && !form.indcheckxmin
        && form.indnkeyatts == 1
        && *rel.rd_opcintype == pg_sys::TIMESTAMPTZOID
        && (*rel.rd_opfamily).to_u32() < pg_sys::FirstNormalObjectId
        && *rel.rd_indoption == 0
}

/// How many entries a forward scan of `index` for keys `< cutoff` returns, up to `most`.
unsafe fn count_before(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    cutoff: i64,
    most: i64,
) -> i64 {
    let mut key: pg_sys::ScanKeyData = std::mem::zeroed();
    pg_sys::ScanKeyInit(
        &mut key,
        1,
        pg_sys::BTLessStrategyNumber as pg_sys::StrategyNumber,
        Oid::from(pg_sys::F_TIMESTAMPTZ_LT),
        pg_sys::Datum::from(cutoff),
    );
    let snapshot = pg_sys::GetActiveSnapshot();
    #[cfg(not(feature = "pg18"))]
    let scan = pg_sys::index_beginscan(heap, index, snapshot, 1, 0);
    #[cfg(feature = "pg18")]
    let scan = pg_sys::index_beginscan(heap, index, snapshot, std::ptr::null_mut(), 1, 0);
    pg_sys::index_rescan(scan, &mut key, 1, std::ptr::null_mut(), 0);
    let mut entries = 0;
    while entries < most
        && !pg_sys::index_getnext_tid(scan, pg_sys::ScanDirection::ForwardScanDirection).is_null()
    {
        entries += 1;
        if entries % 4096 == 0 {
            pg_sys::check_for_interrupts!();
        }
    }
    pg_sys::index_endscan(scan);
    entries
}
