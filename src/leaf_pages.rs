//! The safety brake's count of a TTL index's entries before a cutoff, read leaf page by leaf
//! page (docs/worker.md, PAGE COUNT): from the head of the btree (a descent by the leftmost
//! downlinks from the metapage's fast root) rightwards along the leaves, each page under a
//! share lock while its items are read, the next page after it is released, as nbtree's own
//! forward scan goes (`_bt_get_endpoint`, `_bt_readnextpage`). What an index scan returns one
//! entry at a time (`index_getnext_tid`: its scan keys tested on each, tens of nanoseconds an
//! entry) is read here as the page's line pointers and keys, a posting list's TIDs counted
//! without a test each: the count and the marks are the scan's, entries of dead rows included,
//! those marked `LP_DEAD` stepped over as the scan steps over them. The page layout is read by
//! [`jsonb_ttl_core::btree_page`]; whatever it does not recognise gives `None`, and the
//! caller counts through the index scan ([`crate::leaf_check`]), as before: so does a descent
//! that does not go level by level to a leftmost leaf (a page misread, or the tree changing
//! under it in a way the scan would wait out). A deleted page is not recycled while the walk
//! may still reach it: the walk runs under an active snapshot (checked), whose xmin holds it.

use jsonb_ttl_core::btree_page::{LeafItem, Page, PAGE_SIZE};
use jsonb_ttl_core::marks::Marks;
use pgrx::pg_sys;

/// The metapage's block.
const META_BLOCK: u32 = 0;

/// How many entries of `index` (a btree [`crate::leaf_check`] reads: one ascending
/// `timestamptz` key, not temporary, locked by the caller) are keyed before `cutoff`, up to
/// `most`, recording `marks` as the index scan would; `None` if its pages are not read here
/// (then `marks` may hold part of a walk: the caller starts them again).
///
/// # Safety
/// `index` is an open relation the caller has locked, and a snapshot is active.
pub unsafe fn count_before(
    index: pg_sys::Relation,
    cutoff: i64,
    most: i64,
    mut marks: Option<&mut Marks>,
) -> Option<i64> {
    let one_column = !(*index).rd_index.is_null() && (*(*index).rd_index).indnatts == 1;
    if pg_sys::BLCKSZ as usize != PAGE_SIZE || !one_column || !pg_sys::ActiveSnapshotSet() {
        return None;
    }
    let mut known = blocks(index);
    let mut block = leftmost_leaf(index, &mut known)?;
    let mut entries = 0;
    let mut steps: u32 = 0;
    while block != 0 {
        steps += 1;
        if steps > known {
            known = blocks(index); // (the index grew meanwhile; more than that: a cycle)
            if steps > known {
                return None;
            }
        }
        let next = with_page(index, &mut known, block, |page| {
            let opaque = page.opaque()?;
            if opaque.ignored() {
                return Some(Some(opaque.next)); // (deleted or half-dead: to its right sibling)
            }
            for item in page.leaf_items()? {
                let LeafItem { key, tids } = item?;
                if key >= cutoff {
                    return Some(None);
                }
                for _ in 0..tids {
                    if entries >= most {
                        return Some(None);
                    }
                    if let Some(marks) = marks.as_deref_mut().filter(|m| m.wants(entries)) {
                        marks.saw(entries, key);
                    }
                    entries += 1;
                }
            }
            Some(Some(opaque.next))
        })??;
        block = next.unwrap_or(0);
        pg_sys::check_for_interrupts!();
    }
    Some(entries)
}

/// The block of the btree's leftmost leaf page (0, `P_NONE`: the index is empty): from the
/// fast root, each internal page's first downlink, to the right of a page a vacuum has
/// deleted or is deleting; each page at the level the descent expects, and the leaf the
/// leftmost of its level (no left sibling), or `None`. `known`: the index's blocks as last read.
unsafe fn leftmost_leaf(index: pg_sys::Relation, known: &mut u32) -> Option<u32> {
    let meta = with_page(index, known, META_BLOCK, |page| page.meta())??;
    let (mut block, mut level) = (meta.fast_root, meta.fast_level);
    // (bounded, as a descent by right-links and downlinks reaches a leaf within the index's
    // pages: more steps than that is a page this module misreads)
    for _ in 0..=*known {
        if block == 0 {
            return Some(0);
        }
        let step = with_page(index, known, block, |page| {
            let opaque = page.opaque()?;
            if opaque.ignored() {
                return Some(Step::Right(opaque.next)); // (its level is not kept: not checked)
            }
            (opaque.level == level).then_some(())?;
            Some(match opaque.is_leaf() {
                true if level == 0 && opaque.prev == 0 => Step::Leaf,
                true => return None,
                false => Step::Down(page.first_child()?),
            })
        })??;
        match step {
            Step::Leaf => return Some(block),
            Step::Right(0) => return None, // (a deleted rightmost page: the scan's error to raise)
            Step::Right(next) => block = next,
            Step::Down(child) => (block, level) = (child, level.checked_sub(1)?),
        }
    }
    None
}

/// Where a descent goes from a page.
enum Step {
    /// This page is the leftmost leaf.
    Leaf,
    /// To the right sibling of a deleted or half-dead page, at the same level.
    Right(u32),
    /// To the leftmost child, a level down.
    Down(u32),
}

/// The number of blocks of `index` now.
unsafe fn blocks(index: pg_sys::Relation) -> u32 {
    pg_sys::RelationGetNumberOfBlocksInFork(index, pg_sys::ForkNumber::MAIN_FORKNUM)
}

/// `f` on the page at `block` of `index`, under a share lock on its buffer; `None` if the
/// block is past the index's end (a misread link: reading it would be an error; `known`, the
/// index's blocks as last read, read again first) or the page is not a btree page read here.
unsafe fn with_page<R>(
    index: pg_sys::Relation,
    known: &mut u32,
    block: u32,
    f: impl FnOnce(Page) -> R,
) -> Option<R> {
    if block >= *known {
        *known = blocks(index); // (a page added by a split since)
        if block >= *known {
            return None;
        }
    }
    let buffer = pg_sys::ReadBuffer(index, block);
    pg_sys::LockBuffer(buffer, pg_sys::BUFFER_LOCK_SHARE as i32);
    let bytes = std::slice::from_raw_parts(pg_sys::BufferGetPage(buffer) as *const u8, PAGE_SIZE);
    let result = Page::new(bytes).map(f);
    pg_sys::UnlockReleaseBuffer(buffer);
    result
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use crate::leaf_check::tests::{key, seconds_table};
    use crate::leaf_check::{count_by_scan, with_index};
    use jsonb_ttl_core::marks::Marks;
    use pgrx::pg_sys::Oid;
    use pgrx::prelude::*;

    /// The table `name (t timestamptz)` with a row keyed each of `seconds` after 2000 (a FROM
    /// item of a column `s`), its index on `t`, then `after` run: the table's and index's OIDs.
    fn table(name: &str, seconds: &str, after: &str) -> (Oid, Oid) {
        let oids = seconds_table(name, seconds, "");
        if !after.is_empty() {
            Spi::run(after).expect("statements run");
        }
        oids
    }

    /// The count and marks page by page (`None`: not read so) and through the index scan.
    fn both(
        table: Oid,
        index: Oid,
        cutoff: i64,
        most: i64,
    ) -> (Option<(i64, Marks)>, (i64, Marks)) {
        with_index(table, index, |heap, index| unsafe {
            let mut by_pages = Marks::for_batches_of(1000);
            let pages = super::count_before(index, cutoff, most, Some(&mut by_pages));
            let mut by_scan = Marks::for_batches_of(1000);
            let scan = count_by_scan(heap, index, cutoff, most, Some(&mut by_scan));
            (pages.map(|entries| (entries, by_pages)), (scan, by_scan))
        })
        .expect("index readable")
    }

    #[pg_test]
    fn counts_by_pages_as_the_scan_counts() {
        #[rustfmt::skip]
        let tables: &[(&str, &str, &str, &str)] = &[
            // (what, name, keys, then)
            ("100,000 distinct keys: a btree of two levels", "distinct_keys", "generate_series(1, 100000) s", ""),
            ("each key 40 times: posting lists", "posting_lists", "generate_series(1, 100000) g, LATERAL (SELECT g / 40 AS s) k", ""),
            ("rows deleted since (their entries stay)", "deleted_rows", "generate_series(1, 50000) s",
             "DELETE FROM deleted_rows WHERE t < timestamptz '2000-01-01 00:00+00' + interval '20000 s'"),
            ("rows added after the index: splits", "split_pages", "generate_series(1, 20000) s",
             "INSERT INTO split_pages SELECT timestamptz '2000-01-01 00:00+00' + s * interval '1 s' FROM generate_series(1, 40000, 3) s"),
            ("no row", "no_rows", "generate_series(1, 0) s", ""),
        ];
        #[rustfmt::skip]
        let walks: &[(i64, i64)] = &[
            // (cutoff, most)
            (key(1), i64::MAX), (key(2), i64::MAX), (key(25_000), i64::MAX), (key(200_000), i64::MAX),
            (key(200_000), 1), (key(200_000), 12_345), (key(60_000), 40_001),
        ];
        for &(what, name, keys, then) in tables {
            let (table, index) = table(name, keys, then);
            for &(cutoff, most) in walks {
                let (pages, scan) = both(table, index, cutoff, most);
                assert_eq!(pages, Some(scan), "{what}: cutoff {cutoff}, most {most}");
            }
        }
        // an index with an INCLUDE column (not a TTL index's shape): counted by the scan only
        Spi::run(
            "CREATE TABLE included (t timestamptz, n int);
             INSERT INTO included SELECT timestamptz '2000-01-01 00:00+00' + s * interval '1 s', s
               FROM generate_series(1, 1000) s;
             CREATE INDEX included_t ON included (t) INCLUDE (n);",
        )
        .expect("table made");
        let oid = |name: &str| {
            Spi::get_one::<Oid>(&format!("SELECT '{name}'::regclass::oid"))
                .expect("query runs")
                .expect("relation exists")
        };
        let (pages, (scan, _)) = both(oid("included"), oid("included_t"), key(200_000), i64::MAX);
        assert_eq!((pages.map(|(entries, _)| entries), scan), (None, 1000));
        // the posting lists are there: 40 entries a key take a third of the pages or less
        let deduplicated = Spi::get_one::<bool>(
            "SELECT pg_relation_size('posting_lists_t') * 3 < pg_relation_size('distinct_keys_t')",
        );
        assert_eq!(deduplicated, Ok(Some(true)));
    }
}
