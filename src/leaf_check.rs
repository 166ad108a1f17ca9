//! Whether a TTL index holds any entry before a cutoff, read straight from its btree: the
//! worker's idle pass asks this of every table before it runs any SQL for it (docs/worker.md,
//! PROBE). An index scan compares the stored keys with the operator family's comparison
//! function, here always PostgreSQL's own (`timestamptz`, a built-in family); it never
//! evaluates the index expression, nor anything else of the table's owner, so it runs as the
//! worker. No entry before the cutoff means nothing is expired: the index is the TTL index
//! itself, recorded by OID as ours by its expression and predicate ([`crate::tracking`]; a
//! Citus shard's copy found by them, [`crate::shard_targets::shard_index`]), so
//! every row the probe could find has an entry keyed on its reference time. An entry (alive
//! or dead: the heap is not read) sends the table to the SQL probe, as before.
//!
//! The same btree gives the safety brake its count of entries ([`entries_before`]: read leaf
//! page by leaf page, [`leaf_pages`], where the pages can be read so, else by the scan) and
//! tells where a batch by key range ends ([`crate::leaf_range::range_end`], docs/worker.md, RANGE), reading the
//! stored keys.

use crate::leaf_pages;
pub use jsonb_ttl_core::marks::Marks;
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
    entries_before(table, index, cutoff, 1, None).map(|entries| entries > 0)
}

/// How many entries keyed before `cutoff` the index `index` of `table` has, counting up to
/// `most`; as [`has_entry_before`] otherwise. Entries of dead rows count too (the heap is not
/// read): an upper bound of the rows the same condition finds. With `marks`, records
/// [`Marks`] along the way, for the batches by key range that follow ([`crate::leaf_range::range_end`]).
pub fn entries_before(
    table: Oid,
    index: Oid,
    cutoff: i64,
    most: i64,
    marks: Option<&mut Marks>,
) -> Option<i64> {
    with_index(table, index, |heap, index| unsafe {
        count_before(heap, index, cutoff, most, marks)
    })
}

/// Runs `f` on `table` and its index `index` when the index can be read here (see
/// [`readable`]), both locked as [`has_entry_before`] says; `None` otherwise.
pub(crate) fn with_index<R>(
    table: Oid,
    index: Oid,
    f: impl FnOnce(pg_sys::Relation, pg_sys::Relation) -> R,
) -> Option<R> {
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
        let found = (!heap_rel.is_null()).then(|| f(heap_rel, index_rel));
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

/// A forward scan of `index` for keys `< cutoff` and, with `low`, `>= low`, its keys returned
/// too when `keys`, started; [`pg_sys::index_endscan`] ends it.
pub(crate) unsafe fn scan_before(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    low: Option<i64>,
    cutoff: i64,
    keys: bool,
) -> pg_sys::IndexScanDesc {
    let mut scan_keys: [pg_sys::ScanKeyData; 2] = std::mem::zeroed();
    let mut n = 0;
    if let Some(low) = low {
        pg_sys::ScanKeyInit(
            &mut scan_keys[n],
            1,
            pg_sys::BTGreaterEqualStrategyNumber as pg_sys::StrategyNumber,
            Oid::from(pg_sys::F_TIMESTAMPTZ_GE),
            pg_sys::Datum::from(low),
        );
        n += 1;
    }
    pg_sys::ScanKeyInit(
        &mut scan_keys[n],
        1,
        pg_sys::BTLessStrategyNumber as pg_sys::StrategyNumber,
        Oid::from(pg_sys::F_TIMESTAMPTZ_LT),
        pg_sys::Datum::from(cutoff),
    );
    n += 1;
    let snapshot = pg_sys::GetActiveSnapshot();
    #[cfg(not(feature = "pg18"))]
    let scan = pg_sys::index_beginscan(heap, index, snapshot, n as i32, 0);
    #[cfg(feature = "pg18")]
    let scan = pg_sys::index_beginscan(heap, index, snapshot, std::ptr::null_mut(), n as i32, 0);
    // the stored keys, as an index-only scan reads them (set before the rescan, which sets up
    // the btree's copy of them)
    (*scan).xs_want_itup = keys;
    pg_sys::index_rescan(
        scan,
        scan_keys.as_mut_ptr(),
        n as i32,
        std::ptr::null_mut(),
        0,
    );
    scan
}

/// The next entry of `scan`: whether there is one (`seen` entries so far).
pub(crate) unsafe fn next_entry(scan: pg_sys::IndexScanDesc, seen: i64) -> bool {
    if seen % 4096 == 4095 {
        pg_sys::check_for_interrupts!();
    }
    !pg_sys::index_getnext_tid(scan, pg_sys::ScanDirection::ForwardScanDirection).is_null()
}

/// How many entries a forward scan of `index` for keys `< cutoff` returns, up to `most`,
/// recording `marks` along the way if asked: counted page by page ([`leaf_pages`]) where the
/// pages can be read so, else entry by entry.
unsafe fn count_before(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    cutoff: i64,
    most: i64,
    mut marks: Option<&mut Marks>,
) -> i64 {
    // page by page first; if the pages are not read there, entry by entry from the start
    let fresh = marks.as_deref().cloned();
    if let Some(entries) = leaf_pages::count_before(index, cutoff, most, marks.as_deref_mut()) {
        return entries;
    }
    if let (Some(marks), Some(fresh)) = (marks.as_deref_mut(), fresh) {
        *marks = fresh;
    }
    count_by_scan(heap, index, cutoff, most, marks)
}

/// [`count_before`] through an index scan, entry by entry.
pub(crate) unsafe fn count_by_scan(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    cutoff: i64,
    most: i64,
    mut marks: Option<&mut Marks>,
) -> i64 {
    let scan = scan_before(heap, index, None, cutoff, marks.is_some());
    let mut entries = 0;
    while entries < most && next_entry(scan, entries) {
        if let Some(marks) = marks.as_deref_mut().filter(|marks| marks.wants(entries)) {
            // (the scan's condition `< cutoff` returns no null)
            if let Some(key) = stored_key(scan) {
                marks.saw(entries, key);
            }
        }
        entries += 1;
    }
    pg_sys::index_endscan(scan);
    entries
}

/// The key of the entry `scan` returned last (a `timestamptz`, the only key of the index:
/// see [`readable`]), or `None` if it has none stored (a null).
pub(crate) unsafe fn stored_key(scan: pg_sys::IndexScanDesc) -> Option<i64> {
    let tuple = (*scan).xs_itup;
    if tuple.is_null() {
        return None;
    }
    if (*tuple).t_info & (pg_sys::INDEX_NULL_MASK as u16) != 0 {
        return None; // (a TTL index holds no null key: its predicate is `IS NOT NULL`)
    }
    let key = pg_sys::nocache_index_getattr(tuple, 1, (*scan).xs_itupdesc);
    Some(key.value() as i64)
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
pub(crate) mod tests {
    use super::entries_before;
    use pgrx::pg_sys::{self, Oid};
    use pgrx::prelude::*;

    /// A key `seconds` after 2000-01-01 00:00 UTC, as the index stores it.
    pub(crate) fn key(seconds: i64) -> i64 {
        seconds * 1_000_000
    }

    /// A table `name (t timestamptz)` with a row keyed each of `seconds` after 2000 (a FROM
    /// item of a column `s`), and its index `name_t` on `t` (with `index_options`): the
    /// table's and the index's OIDs.
    pub(crate) fn seconds_table(name: &str, seconds: &str, index_options: &str) -> (Oid, Oid) {
        Spi::run(&format!(
            "CREATE TABLE {name} (t timestamptz);
             INSERT INTO {name} SELECT timestamptz '2000-01-01 00:00+00' + s * interval '1 s'
               FROM {seconds};
             CREATE INDEX {name}_t ON {name} (t {index_options});"
        ))
        .expect("table made");
        let oid = |name: &str| {
            Spi::get_one::<Oid>(&format!("SELECT '{name}'::regclass::oid"))
                .expect("query runs")
                .expect("relation exists")
        };
        (oid(name), oid(&format!("{name}_t")))
    }

    /// A cancel that comes during a long walk (checked on every leaf page, and every 4,096
    /// entries of a scan) ends it as an error, as anywhere else: a brake's count of a huge
    /// backlog can be cut short.
    #[pg_test(error = "canceling statement due to user request")]
    fn walk_cancelled() {
        let (table, index) = seconds_table("long_walk", "generate_series(1, 5000) s", "");
        unsafe {
            pg_sys::QueryCancelPending = 1;
            pg_sys::InterruptPending = 1;
        }
        entries_before(table, index, key(10_000), 100_000, None);
    }
}
