//! Dates that will never come: how many entries of a TTL index hold a point in time past the
//! year 2200. A number of epoch milliseconds read as seconds lands in the year 58888; a row so
//! dated is indexed, looks healthy, and never expires. `ttl_stats.rows_never_expire` counts
//! these rows beside the ones with no readable date at all.
//!
//! An estimate, as the rest of `rows_never_expire` is: from the planner's statistics of the
//! index's expression (what ANALYZE keeps for an expression index: its most common values with
//! their frequencies and a histogram of the others), times the index's entries. Read from the
//! system cache, no SQL; shown only to a caller who may read the table (as `pg_stats` shows a
//! column's histogram, or to a monitoring role of `pg_read_all_stats`), else 0. Not for a
//! partitioned table's leaves (their indexes are partitions of the recorded one).

use pgrx::pg_sys;

/// 2200-01-01 00:00:00 UTC as a `timestamptz` (microseconds since 2000-01-01): 200 years of
/// which 49 leap years (2000 is one, 2100 is not).
const BOUND: i64 = (200 * 365 + 49) * 86_400 * 1_000_000;

/// About how many of the `entries` of TTL index `index` (on `table`) hold a point in time
/// past [`BOUND`]; 0 without statistics, or when the caller may not read `table`.
pub(super) fn entries_past_bound(table: pg_sys::Oid, index: pg_sys::Oid, entries: f32) -> f32 {
    if entries <= 0.0 || !may_read(table) {
        return 0.0;
    }
    unsafe {
        let tuple = pg_sys::SearchSysCache3(
            pg_sys::SysCacheIdentifier::STATRELATTINH as _,
            pg_sys::Datum::from(index),
            pg_sys::Datum::from(1i16),
            pg_sys::Datum::from(false),
        );
        if tuple.is_null() {
            return 0.0;
        }
        let stats = &*(pg_sys::GETSTRUCT(tuple) as *const pg_sys::FormData_pg_statistic);
        let null_fraction = stats.stanullfrac;
        let (common_past, common) = common_values(tuple);
        let histogram_past = histogram_fraction(tuple);
        pg_sys::ReleaseSysCache(tuple);
        let fraction = common_past + (1.0 - null_fraction - common).max(0.0) * histogram_past;
        fraction.clamp(0.0, 1.0) * entries
    }
}

/// Whether the caller may see the statistics of `table`'s dates: a member of
/// `pg_read_all_stats` (a monitoring role, as for the rest of `ttl_stats`), or a role with
/// SELECT on it to whom no row security applies (what `pg_stats` asks). A table dropped
/// meanwhile: no.
fn may_read(table: pg_sys::Oid) -> bool {
    unsafe {
        let user = pg_sys::GetUserId();
        if pg_sys::has_privs_of_role(user, pg_sys::Oid::from(pg_sys::ROLE_PG_READ_ALL_STATS)) {
            return true;
        }
        let mut missing = false;
        let select =
            pg_sys::pg_class_aclcheck_ext(table, user, pg_sys::ACL_SELECT as _, &mut missing);
        !missing
            && select == pg_sys::AclResult::ACLCHECK_OK
            && pg_sys::check_enable_rls(table, pg_sys::InvalidOid, true)
                != pg_sys::CheckEnableRlsResult::RLS_ENABLED as i32
    }
}

/// The most common values' frequencies: of those past the bound, and of all.
unsafe fn common_values(tuple: pg_sys::HeapTuple) -> (f32, f32) {
    let mut slot = pg_sys::AttStatsSlot::default();
    let flags = (pg_sys::ATTSTATSSLOT_VALUES | pg_sys::ATTSTATSSLOT_NUMBERS) as i32;
    if !pg_sys::get_attstatsslot(
        &mut slot,
        tuple,
        pg_sys::STATISTIC_KIND_MCV as i32,
        pg_sys::InvalidOid,
        flags,
    ) {
        return (0.0, 0.0);
    }
    let n = slot.nvalues.min(slot.nnumbers).max(0) as usize;
    let values = std::slice::from_raw_parts(slot.values, n);
    let numbers = std::slice::from_raw_parts(slot.numbers, n);
    let past = values
        .iter()
        .zip(numbers)
        .filter(|(v, _)| past_bound(**v, slot.valuetype))
        .map(|(_, f)| *f)
        .sum();
    let all = numbers.iter().sum();
    pg_sys::free_attstatsslot(&mut slot);
    (past, all)
}

/// The share of the histogram's bins past the bound (each bin holds as many values).
unsafe fn histogram_fraction(tuple: pg_sys::HeapTuple) -> f32 {
    let mut slot = pg_sys::AttStatsSlot::default();
    if !pg_sys::get_attstatsslot(
        &mut slot,
        tuple,
        pg_sys::STATISTIC_KIND_HISTOGRAM as i32,
        pg_sys::InvalidOid,
        pg_sys::ATTSTATSSLOT_VALUES as i32,
    ) {
        return 0.0;
    }
    let n = slot.nvalues.max(0) as usize;
    let values = std::slice::from_raw_parts(slot.values, n);
    let past = values
        .iter()
        .filter(|v| past_bound(**v, slot.valuetype))
        .count();
    pg_sys::free_attstatsslot(&mut slot);
    match n {
        0 | 1 => 0.0,
        // bounds past the bound ≈ bins past it (the first bound opens a bin)
        _ => past.min(n - 1) as f32 / (n - 1) as f32,
    }
}

/// Whether a statistics value of type `valuetype` (a TTL index's key is a `timestamptz`) is
/// past the bound.
fn past_bound(value: pg_sys::Datum, valuetype: pg_sys::Oid) -> bool {
    valuetype == pg_sys::TIMESTAMPTZOID && value.value() as i64 > BOUND
}

#[cfg(test)]
mod tests {
    #[test]
    fn bound_is_2200() {
        // the parser's reading of the day, in PostgreSQL's microseconds since 2000-01-01
        let parsed = jsonb_ttl_core::parse::parse_datestring("2200-01-01");
        assert_eq!(Some(super::BOUND), parsed);
    }
}
