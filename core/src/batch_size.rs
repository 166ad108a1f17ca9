//! How many rows the worker's next batch asks for: sized to take `jsonb_ttl.batch_time`, within
//! `jsonb_ttl.batch_size`, the way MongoDB's batched deletes aim at a time per batch rather than
//! a number of documents.
//!
//! A batch costs a fixed part (its transaction, the plan, the descent of the index, and above
//! all the WAL flush of its commit, about 1 ms) and a part per row (about 1–2 µs for a plain
//! document, far more under a trigger or a cascade). Small batches pay the fixed part too often;
//! large ones hold their row locks and their WAL burst for long, and a slow table's large batch
//! could run into `jsonb_ttl.batch_timeout`. So a table's first batch is small
//! ([`FIRST_ROWS`]); after each full batch the next is sized from the time per row just seen,
//! growing at most [`MAX_GROWTH`]-fold at a time and shrinking at once; the size a table reached
//! is where its next visit starts. `jsonb_ttl.batch_time = 0` turns this off: every batch is
//! `batch_size` rows.

use std::time::Duration;

/// The first batch of a table the worker has not sized yet (at most `batch_size`).
pub const FIRST_ROWS: i64 = 1_000;

/// The smallest batch a table is sized down to (unless `batch_size` is smaller).
pub const MIN_ROWS: i64 = 100;

/// The most a batch grows over the previous one.
pub const MAX_GROWTH: i64 = 4;

/// The size of a table's first batch in a visit: where its previous visit left off, if any.
pub fn first(previous: Option<i64>, target: Duration, max: i64) -> i64 {
    match previous {
        _ if target.is_zero() => max,
        Some(rows) => rows.clamp(MIN_ROWS.min(max), max),
        None => FIRST_ROWS.min(max),
    }
}

/// The size of the next batch after one that asked for `asked` rows, deleted `deleted` of them
/// and took `took`. Only a full batch says how long rows take: after a short one (the table is
/// drained, or rows were skipped) the size stays.
pub fn next(asked: i64, deleted: u64, took: Duration, target: Duration, max: i64) -> i64 {
    if target.is_zero() {
        return max;
    }
    if asked <= 0 || (deleted as i64) < asked || took.is_zero() {
        return asked.clamp(MIN_ROWS.min(max), max);
    }
    let per_row = took.as_secs_f64() / deleted as f64;
    let fits = (target.as_secs_f64() / per_row) as i64;
    fits.min(asked.saturating_mul(MAX_GROWTH))
        .clamp(MIN_ROWS.min(max), max)
}

/// The size of the next batch after one that failed as a whole (it outlasted
/// `jsonb_ttl.batch_timeout`, a lock was not granted): a quarter of it, so a table whose batches
/// grew past the time limit (a cold cache, a trigger added since) comes back under it rather
/// than fail at the same size every pass.
pub fn after_failure(asked: i64, target: Duration, max: i64) -> i64 {
    if target.is_zero() {
        return max;
    }
    (asked / MAX_GROWTH).clamp(MIN_ROWS.min(max), max)
}

/// With `jsonb_ttl.max_removes_per_second` set, the most rows one batch asks for: a tenth of a
/// second's worth (at least [`MIN_ROWS`]), so the rate is kept in small steps, not in one large
/// batch followed by a long sleep.
pub fn rate_cap(rows_per_second: i64) -> Option<i64> {
    (rows_per_second > 0).then(|| (rows_per_second / 10).max(MIN_ROWS))
}

#[cfg(test)]
mod tests {
    use super::{after_failure, first, next, rate_cap};
    use std::time::Duration;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn first_batches() {
        // (previous size, target ms, batch_size) → first batch
        let cases: &[(Option<i64>, u64, i64, i64)] = &[
            (None, 25, 50_000, 1_000),
            (None, 25, 500, 500),
            (Some(20_000), 25, 50_000, 20_000),
            (Some(20_000), 25, 5_000, 5_000), // batch_size lowered since
            (Some(20_000), 0, 3_000, 3_000),  // fixed size
            (None, 0, 50_000, 50_000),
            (Some(10), 25, 50_000, 100),
        ];
        for &(previous, target, max, want) in cases {
            assert_eq!(
                first(previous, MS(target), max),
                want,
                "first({previous:?}, {target} ms, {max})"
            );
        }
    }

    #[test]
    fn next_batches() {
        // (asked, deleted, took ms, target ms, batch_size) → next batch
        #[rustfmt::skip]
        let cases: &[(i64, u64, u64, u64, i64, i64, &str)] = &[
            ( 1_000,  1_000,     1, 25, 50_000,  4_000, "fast rows: grows, 4-fold at most"),
            ( 4_000,  4_000,     5, 25, 50_000, 16_000, "still fast: grows again"),
            (16_000, 16_000,    20, 25, 50_000, 20_000, "close to the target"),
            (20_000, 20_000,    25, 25, 50_000, 20_000, "on target: stays"),
            (20_000, 20_000,   100, 25, 50_000,  5_000, "rows got slower: shrinks at once"),
            ( 1_000,  1_000, 1_000, 25, 50_000,    100, "a slow trigger: down to the minimum"),
            (40_000, 40_000,     1, 25, 50_000, 50_000, "never past batch_size"),
            ( 1_000,    300,     1, 25, 50_000,  1_000, "a short batch says nothing: stays"),
            ( 1_000,      0,     0, 25, 50_000,  1_000, "an empty batch: stays"),
            ( 1_000,  1_000,     1,  0,  7_000,  7_000, "batch_time 0: always batch_size"),
            (   200,    200,     1, 25,    150,    150, "batch_size below the minimum wins"),
        ];
        for &(asked, deleted, took, target, max, want, what) in cases {
            assert_eq!(
                next(asked, deleted, MS(took), MS(target), max),
                want,
                "{what}"
            );
        }
    }

    #[test]
    fn after_failures() {
        // (asked, target ms, batch_size) → next batch
        let cases: &[(i64, u64, i64, i64)] = &[
            (50_000, 25, 50_000, 12_500),
            (1_000, 25, 50_000, 250),
            (200, 25, 50_000, 100),   // not below the minimum
            (50, 25, 50, 50),         // nor above batch_size
            (5_000, 0, 5_000, 5_000), // fixed size: batch_size
        ];
        for &(asked, target, max, want) in cases {
            assert_eq!(
                after_failure(asked, MS(target), max),
                want,
                "{asked} {target} {max}"
            );
        }
    }

    #[test]
    fn rate_caps() {
        let cases: &[(i64, Option<i64>)] = &[
            (0, None),
            (10_000, Some(1_000)),
            (500, Some(100)),
            (1, Some(100)),
        ];
        for &(rate, want) in cases {
            assert_eq!(rate_cap(rate), want, "{rate}");
        }
    }
}
