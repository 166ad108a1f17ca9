//! The server-wide removal budget of a pass, `jsonb_ttl.max_total_removes` rows per window of
//! `jsonb_ttl.frequency`, shared by every database's worker through two atomics in shared
//! memory: no lock, a compare-and-swap per claim.

use crate::registry::now_ms;
use pgrx::prelude::*;
use pgrx::{pg_sys, PgAtomic};
use std::sync::atomic::{AtomicI64, Ordering};

/// Rows the current budget window may still remove, server-wide.
static BUDGET: PgAtomic<AtomicI64> = unsafe { PgAtomic::new(c"jsonb_ttl_budget") };
/// When the current budget window started, in ms since the Unix epoch.
static WINDOW_START_MS: PgAtomic<AtomicI64> = unsafe { PgAtomic::new(c"jsonb_ttl_window") };

/// Requests the shared memory; from `_PG_init` while preloading.
pub fn init() {
    pgrx::pg_shmem_init!(BUDGET);
    pgrx::pg_shmem_init!(WINDOW_START_MS);
}

/// Claims up to `want` rows of the server-wide budget: `max_total` rows per window of
/// `window_ms`. The first claim after a window ends opens the next one.
pub fn claim(want: i64, max_total: i64, window_ms: i64) -> i64 {
    let now_ms = now_ms();
    let start = WINDOW_START_MS.get().load(Ordering::Acquire);
    if now_ms - start >= window_ms
        && WINDOW_START_MS
            .get()
            .compare_exchange(start, now_ms, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    {
        BUDGET.get().store(max_total, Ordering::Release);
    }
    let budget = BUDGET.get();
    let mut current = budget.load(Ordering::Acquire);
    loop {
        // A lowered max_total_removes applies to the window already open.
        let available = current.min(max_total);
        let take = want.min(available);
        if take <= 0 {
            return 0;
        }
        match budget.compare_exchange(
            current,
            available - take,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => return take,
            Err(now) => current = now,
        }
    }
}

/// Returns rows claimed but not removed.
pub fn give_back(rows: i64) {
    if rows > 0 {
        BUDGET.get().fetch_add(rows, Ordering::AcqRel);
    }
}
