//! Where a batch by key range ends (docs/worker.md, RANGE), read straight from the TTL index's
//! btree as [`crate::leaf_check`] reads it: the stored keys from the batch's start, no heap,
//! nothing of the table's owner.

use crate::leaf_check::{next_entry, scan_before, stored_key, with_index, Marks};
use pgrx::pg_sys::{self, Oid};

/// Where a batch by key range ([`jsonb_ttl_core::purge::Batch::Range`]) that starts at a key
/// ends, read from the TTL index: see [`range_end`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeEnd {
    /// The index has no entry from the start key to the cutoff.
    Empty,
    /// The batch takes the entries up to this key, not included: at most the rows asked for.
    Key(i64),
    /// The batch takes every entry up to the cutoff: no more than the rows asked for.
    Cutoff,
    /// More entries than the rows asked for share the start key: no range can hold part of
    /// them (the batch picks its rows instead).
    Run,
}

/// Where a batch of at most `rows` rows that starts at the key `low` (included) ends, read from
/// the index `index` of `table` alone, as [`crate::leaf_check::entries_before`] reads it (no heap, no code of the
/// owner's): with the entries keyed from `low` up to `cutoff` (excluded) in index order, the key
/// of the entry after the `rows`-th one, so that the range `low ..< key` holds at most `rows`
/// entries (entries of dead rows count too: the range may hold fewer rows). `None` when the
/// index cannot be read so.
///
/// With `marks` from a walk earlier in the visit ([`Marks::ahead`]), the range ends at the
/// furthest mark within its rows when that holds nearly all of them (as of that walk: entries
/// added to it since are in it too), so the next range starts at a mark again; otherwise only
/// the entries after that mark are walked.
pub fn range_end(
    table: Oid,
    index: Oid,
    low: i64,
    cutoff: i64,
    rows: i64,
    marks: &Marks,
) -> Option<RangeEnd> {
    // the furthest mark the range reaches before the cutoff: its end, or where the walk starts
    let (start, taken) = match marks.ahead(low, rows) {
        Some((key, _, true)) if key < cutoff => return Some(RangeEnd::Key(key)),
        Some((key, taken, false)) if key < cutoff => (key, taken),
        _ => (low, 0),
    };
    let walked = with_index(table, index, |heap, index| unsafe {
        walk_range(heap, index, start, cutoff, rows - taken)
    })
    .flatten()?;
    Some(match walked {
        // (from a mark: the range holds the entries before it)
        RangeEnd::Empty if taken > 0 => RangeEnd::Cutoff,
        RangeEnd::Run if taken > 0 => RangeEnd::Key(start),
        walked => walked,
    })
}

/// [`range_end`] on the open relations.
unsafe fn walk_range(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    low: i64,
    cutoff: i64,
    rows: i64,
) -> Option<RangeEnd> {
    let scan = scan_before(heap, index, Some(low), cutoff, true);
    let mut entries = 0;
    let mut end = None;
    while next_entry(scan, entries) {
        entries += 1;
        if entries > rows {
            // the entry after the rows asked for: its key bounds the range
            end = Some(stored_key(scan));
            break;
        }
    }
    pg_sys::index_endscan(scan);
    Some(match (entries, end) {
        (0, _) => RangeEnd::Empty,
        (_, None) => RangeEnd::Cutoff,
        (_, Some(None)) => return None,
        (_, Some(Some(key))) if key <= low => RangeEnd::Run,
        (_, Some(Some(key))) => RangeEnd::Key(key),
    })
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::{range_end, Marks, RangeEnd};
    use crate::leaf_check::entries_before;
    use crate::leaf_check::tests::{key, seconds_table};
    use pgrx::pg_sys::{self, Oid};
    use pgrx::prelude::*;

    /// The `timestamptz` of a stored key.
    fn epoch_key(key: i64) -> Option<TimestampWithTimeZone> {
        unsafe { TimestampWithTimeZone::from_datum(pg_sys::Datum::from(key), false) }
    }

    /// A table keyed 10, 20, 30, 30, 30, 40, 50 (seconds after 2000), its row keyed 20 deleted
    /// in this transaction (its entry stays), and its index: the table's and the index's OIDs.
    fn keyed_table(index_options: &str) -> (Oid, Oid) {
        let seconds = "unnest(ARRAY[10, 20, 30, 30, 30, 40, 50]) s";
        let oids = seconds_table("keyed", seconds, index_options);
        Spi::run("DELETE FROM keyed WHERE t = timestamptz '2000-01-01 00:00:20+00'")
            .expect("row deleted");
        oids
    }

    #[pg_test]
    fn range_ends_table() {
        let (table, index) = keyed_table("");
        let head = i64::MIN;
        #[rustfmt::skip]
        let cases: &[(&str, i64, i64, i64, RangeEnd)] = &[
            // (what, low, cutoff, rows, the range's end)
            ("the entry after two: the range holds 10 and 20 (dead: counted)", head, key(60), 2, RangeEnd::Key(key(30))),
            ("the fourth entry shares its key with the third: the range stops before them", head, key(60), 3, RangeEnd::Key(key(30))),
            ("three entries keyed 30, two asked for: a run", key(30), key(60), 2, RangeEnd::Run),
            ("three entries keyed 30, three asked for: up to 40", key(30), key(60), 3, RangeEnd::Key(key(40))),
            ("every entry, no more than asked: to the cutoff", head, key(60), 7, RangeEnd::Cutoff),
            ("the cutoff before the last entries", head, key(35), 10, RangeEnd::Cutoff),
            ("the cutoff bounds the walk: 40 is the cutoff, 50 beyond it", key(31), key(40), 1, RangeEnd::Empty),
            ("nothing from the start key to the cutoff", key(45), key(50), 10, RangeEnd::Empty),
            ("a start key past every entry", key(60), key(100), 1, RangeEnd::Empty),
            ("a start key between entries", key(15), key(60), 1, RangeEnd::Key(key(30))),
        ];
        for &(what, low, cutoff, rows, end) in cases {
            assert_eq!(
                range_end(table, index, low, cutoff, rows, &Marks::default()),
                Some(end),
                "{what}"
            );
        }
    }

    #[pg_test]
    fn range_end_unreadable_index() {
        // a descending index is not read here: the batch picks its rows instead
        let (table, index) = keyed_table("DESC");
        let no_marks = Marks::default();
        assert_eq!(
            range_end(table, index, i64::MIN, key(60), 2, &no_marks),
            None
        );
    }

    #[pg_test]
    fn range_ends_by_marks() {
        // 2,000 entries keyed 1 to 2000 seconds after 2000; the walk of the safety brake
        // (entries_before) leaves marks after every 256th entry: 257 entries before key 258...
        let (table, index) = seconds_table("marked", "generate_series(1, 2000) s", "");
        // (batches of about 2,048 rows: marks 256 entries apart)
        let mut marks = Marks::for_batches_of(2048);
        let counted = entries_before(table, index, key(2001), 10_000, Some(&mut marks));
        assert_eq!(counted, Some(2000));
        let head = i64::MIN;
        // the index entries a walk reads, as this transaction's statistics count them
        let read = || {
            Spi::get_one_with_args::<i64>(
                "SELECT pg_stat_get_xact_tuples_returned($1)",
                &[index.into()],
            )
            .expect("counted")
            .expect("a count")
        };
        #[rustfmt::skip]
        let cases: &[(&str, i64, i64, i64, RangeEnd, i64)] = &[
            // (what, low, cutoff, rows, the range's end, the entries read to find it)
            ("from the head, 1000 rows: to the mark 769 entries in, nothing walked", head, key(2001), 1000, RangeEnd::Key(key(770)), 0),
            ("from that mark, 1000 rows: to the mark 768 entries on", key(770), key(2001), 1000, RangeEnd::Key(key(1538)), 0),
            ("from that mark: the last one, 256 on, then a walk to the cutoff", key(1538), key(2001), 1000, RangeEnd::Cutoff, 207),
            ("the last mark, then 44 walked", key(1538), key(2001), 300, RangeEnd::Key(key(1838)), 45),
            ("513 entries of 700 rows: a walk from that mark for 187", head, key(2001), 700, RangeEnd::Key(key(701)), 188),
            ("a start key no mark has: a walk", key(771), key(2001), 10, RangeEnd::Key(key(781)), 11),
            ("a cutoff before the marks: a walk to the cutoff", head, key(500), 1000, RangeEnd::Cutoff, 499),
        ];
        for &(what, low, cutoff, rows, end, walked) in cases {
            let before = read();
            assert_eq!(
                range_end(table, index, low, cutoff, rows, &marks),
                Some(end),
                "{what}"
            );
            assert_eq!(read() - before, walked, "{what}: entries read");
            // a walk from `low` alone reads every entry of the range, which holds at most
            // `rows` entries either way
            let before = read();
            let walked_end = range_end(table, index, low, cutoff, rows, &Marks::default());
            assert!(
                read() - before >= walked,
                "{what}: a walk reads as much or more"
            );
            let held = |end| {
                let high = match end {
                    Some(RangeEnd::Key(high)) => high,
                    _ => cutoff,
                };
                Spi::get_one_with_args::<i64>(
                    "SELECT count(*) FROM marked WHERE t >= coalesce($1, '-infinity') AND t < $2",
                    &[
                        (low != head).then(|| epoch_key(low)).flatten().into(),
                        epoch_key(high).into(),
                    ],
                )
                .expect("counted")
                .expect("a count")
            };
            assert!(
                held(Some(end)) <= rows,
                "{what}: at most the rows asked for"
            );
            assert!(
                held(walked_end) <= rows,
                "{what}: walked, at most the rows asked for"
            );
        }
    }

    #[pg_test]
    fn range_end_run_at_a_mark() {
        // keys 1 to 593, 300 entries keyed 594, then 595 to 700 (seconds after 2000); marks 16
        // apart (batches of 128): (593, 594) begins the run, the next is (893, 595)
        let seconds =
            "(SELECT generate_series(1, 593) UNION ALL SELECT 594 FROM generate_series(1, 300)
                        UNION ALL SELECT generate_series(595, 700)) v(s)";
        let (table, index) = seconds_table("runs", seconds, "");
        let mut marks = Marks::for_batches_of(128);
        assert_eq!(
            entries_before(table, index, key(701), 10_000, Some(&mut marks)),
            Some(999)
        );
        // 800 rows from the head: the mark 593 entries in is short of three quarters, and the
        // 207 after it share its key with 93 more: the range ends at the mark
        let end = range_end(table, index, i64::MIN, key(701), 800, &marks);
        assert_eq!(end, Some(RangeEnd::Key(key(594))));
        // from the run's key, fewer rows than it holds: a run, as without marks
        let end = range_end(table, index, key(594), key(701), 200, &marks);
        assert_eq!(end, Some(RangeEnd::Run));
        // 895 rows from the head: the mark after the run, 893 entries in
        let end = range_end(table, index, i64::MIN, key(701), 895, &marks);
        assert_eq!(end, Some(RangeEnd::Key(key(595))));
    }
}
