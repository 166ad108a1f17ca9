//! Keys of a TTL index recorded by one walk of its btree from the head (the safety brake's,
//! before a visit), so that the visit's batches by key range find where each range ends
//! without walking the same entries again (docs/worker.md, RANGE). Pure Rust: the walk itself
//! is the extension's `leaf_check`.

/// About every [`Marks::every`]-th entry of a walk, the first key after that entry's key,
/// with the number of entries the walk counted before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marks {
    /// `(entries, key)`: the walk counted `entries` entries keyed before `key`; both increase.
    marks: Vec<(i64, i64)>,
    /// The key of the entry a mark was due at, until an entry with a key after it comes.
    due: Option<i64>,
    every: i64,
}

impl Default for Marks {
    /// No marks, and none recorded.
    fn default() -> Self {
        Marks {
            marks: Vec::new(),
            due: None,
            every: 0,
        }
    }
}

impl Marks {
    /// The most marks recorded.
    pub const MOST: usize = 65_536;

    /// Marks for batches of about `rows` rows: an eighth of that apart (16 to 4,096), so that
    /// a range that ends at the furthest mark within its rows holds nearly all of them.
    pub fn for_batches_of(rows: i64) -> Marks {
        Marks {
            every: (rows / 8).clamp(16, 4096),
            ..Marks::default()
        }
    }

    /// Whether the walk must read the key of the entry at position `entries` (0: the index's
    /// first entry) for [`Marks::saw`].
    pub fn wants(&self, entries: i64) -> bool {
        self.every > 0
            && self.marks.len() < Self::MOST
            && (self.due.is_some() || (entries > 0 && entries % self.every == 0))
    }

    /// The walk read `key` at position `entries` (where [`Marks::wants`] said so): a mark is
    /// due there, or this is the first key after the one it was due at.
    pub fn saw(&mut self, entries: i64, key: i64) {
        match self.due {
            Some(before) if key > before => {
                self.marks.push((entries, key));
                self.due = None;
            }
            Some(_) => {}
            None => self.due = Some(key),
        }
    }

    /// How far a range of at most `rows` entries from the key `low` (`i64::MIN`: the head of
    /// the index) gets by the marks alone: the key of the furthest mark within `rows` entries
    /// from `low`, how many entries lie before it from `low`, and whether the range may end
    /// there: it holds three quarters of `rows` or more and marks go on after it. Otherwise a
    /// walk from that key finds the end (after the last mark, the entries were not marked).
    /// `None` when `low` is neither the head nor a mark's key, or no mark is within `rows`
    /// entries of it.
    pub fn ahead(&self, low: i64, rows: i64) -> Option<(i64, i64, bool)> {
        let start = match low {
            i64::MIN => 0,
            _ => self.marks[self.marks.binary_search_by_key(&low, |m| m.1).ok()?].0,
        };
        let reach = self.marks.partition_point(|m| m.0 - start <= rows);
        let (entries, key) = *self.marks.get(reach.checked_sub(1)?)?;
        let taken = entries - start;
        let ends = reach < self.marks.len() && taken * 4 >= rows * 3;
        (key > low).then_some((key, taken, ends))
    }
}

#[cfg(test)]
mod tests {
    use super::Marks;

    /// The marks of a walk over entries keyed `keys`, in index order.
    fn walk(keys: &[i64]) -> Marks {
        // (batches of 2,048 rows: 256 entries apart)
        let mut marks = Marks::for_batches_of(2048);
        for (entries, &key) in keys.iter().enumerate() {
            if marks.wants(entries as i64) {
                marks.saw(entries as i64, key);
            }
        }
        marks
    }

    #[test]
    fn marks_of_distinct_keys() {
        // keys 1..=2000, one entry each: a mark due at every 256th entry, recorded at the next
        let marks = walk(&(1..=2000).collect::<Vec<_>>());
        let expected: Vec<(i64, i64)> = (1..=7).map(|i| (256 * i + 1, 256 * i + 2)).collect();
        assert_eq!(marks.marks, expected);
        // each mark: exactly `entries` keys before it
        for &(entries, key) in &marks.marks {
            assert_eq!((1..key).count() as i64, entries);
        }
    }

    #[test]
    fn marks_after_runs_of_equal_keys() {
        // 600 entries keyed 5, then keys 6..: the mark due at entry 256 waits for key 6
        let mut keys = vec![5; 600];
        keys.extend(6..1000);
        let marks = walk(&keys);
        assert_eq!(marks.marks[0], (600, 6));
        assert_eq!(marks.marks[1], (769, 175));
        for &(entries, key) in &marks.marks {
            assert_eq!(keys.iter().filter(|&&k| k < key).count() as i64, entries);
        }
    }

    /// Where a range goes by the marks: the furthest mark, the entries before it from the
    /// range's start, whether the range ends there.
    type Ahead = Option<(i64, i64, bool)>;

    #[test]
    fn ranges_by_marks() {
        let marks = walk(&(1..=2000).collect::<Vec<_>>());
        #[rustfmt::skip]
        let cases: &[(&str, i64, i64, Ahead)] = &[
            // (what, low, rows, the furthest mark, the entries before it from low, whether the
            // range ends there)
            ("from the head, 1000 rows: the mark at 769 entries", i64::MIN, 1000, Some((770, 769, true))),
            ("from that mark, 1000 more: 1537 entries in, 768 of them", 770, 1000, Some((1538, 768, true))),
            ("from there, 1000 more: the last mark, 256 entries on, then a walk", 1538, 1000, Some((1794, 256, false))),
            ("exactly to a mark", i64::MIN, 769, Some((770, 769, true))),
            ("513 entries of 700 rows: short of three quarters, a walk from the mark", i64::MIN, 700, Some((514, 513, false))),
            ("513 entries of 680 rows: three quarters", i64::MIN, 680, Some((514, 513, true))),
            ("a key that is no mark's: none", 771, 1000, None),
            ("fewer rows than to the next mark: none", 770, 200, None),
            ("from the last mark: none after it", 1794, 1000, None),
        ];
        for &(what, low, rows, expected) in cases {
            assert_eq!(marks.ahead(low, rows), expected, "{what}");
        }
    }

    #[test]
    fn no_marks() {
        let marks = Marks::default();
        assert_eq!(marks.ahead(i64::MIN, 1000), None);
        // a walk shorter than the marks' spacing leaves none
        assert_eq!(walk(&[1, 2, 3]).ahead(i64::MIN, 2), None);
    }

    #[test]
    fn spacing() {
        #[rustfmt::skip]
        let cases = [(1, 16), (100, 16), (1000, 125), (70_000, 4096), (50_000_000, 4096)];
        for (rows, every) in cases {
            // a mark is due at every `every`-th entry, and at none between
            let marks = Marks::for_batches_of(rows);
            assert!(marks.wants(every), "batches of {rows}: due at {every}");
            assert!(!marks.wants(every - 1), "batches of {rows}: not before");
            assert!(marks.wants(2 * every), "batches of {rows}: due again");
        }
        // none asked for: none recorded
        assert!(!Marks::default().wants(256));
    }

    #[test]
    fn at_most_marks() {
        let mut marks = Marks::for_batches_of(2048);
        let mut entries = 0;
        while marks.marks.len() < Marks::MOST {
            if marks.wants(entries) {
                marks.saw(entries, entries);
            }
            entries += 1;
        }
        assert!(!marks.wants(256 * 100_000));
    }
}
