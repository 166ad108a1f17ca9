//! Keys of a TTL index recorded by one walk of its btree from the head (the safety brake's,
//! before a visit), so that the visit's batches by key range find where each range ends
//! without walking the same entries again (docs/worker.md, RANGE). Pure Rust: the walk itself
//! is the extension's `leaf_check`.

/// About every [`Marks::EVERY`]-th entry of a walk, the first key after that entry's key, with
/// the number of entries the walk counted before it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Marks {
    /// `(entries, key)`: the walk counted `entries` entries keyed before `key`; both increase.
    marks: Vec<(i64, i64)>,
    /// The key of the entry a mark was due at, until an entry with a key after it comes.
    due: Option<i64>,
}

impl Marks {
    /// About how many entries apart the marks are.
    pub const EVERY: i64 = 256;
    /// The most marks recorded (the first 16 M entries of a walk).
    pub const MOST: usize = 65_536;

    /// Whether the walk must read the key of the entry at position `entries` (0: the index's
    /// first entry) for [`Marks::saw`].
    pub fn wants(&self, entries: i64) -> bool {
        self.marks.len() < Self::MOST
            && (self.due.is_some() || (entries > 0 && entries % Self::EVERY == 0))
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

    /// Where a range of at most `rows` entries from the key `low` (`i64::MIN`: the head of the
    /// index) may end by the marks alone: the key of the furthest mark within `rows` entries,
    /// the entries from `low` before it, and whether it is the last mark (the entries after it
    /// were not marked: the range may go on past it). `None` when `low` is neither the head
    /// nor a mark's key, or the furthest mark within `rows` is short of three quarters of
    /// them while marks go on after it (a walk from `low` finds a better end).
    pub fn ahead(&self, low: i64, rows: i64) -> Option<(i64, i64, bool)> {
        let start = match low {
            i64::MIN => 0,
            _ => self.marks[self.marks.binary_search_by_key(&low, |m| m.1).ok()?].0,
        };
        let reach = self.marks.partition_point(|m| m.0 - start <= rows);
        let (entries, key) = *self.marks.get(reach.checked_sub(1)?)?;
        let taken = entries - start;
        let last = reach == self.marks.len();
        (key > low && (last || taken * 4 >= rows * 3)).then_some((key, taken, last))
    }
}

#[cfg(test)]
mod tests {
    use super::Marks;

    /// The marks of a walk over entries keyed `keys`, in index order.
    fn walk(keys: &[i64]) -> Marks {
        let mut marks = Marks::default();
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

    #[test]
    fn ranges_by_marks() {
        let marks = walk(&(1..=2000).collect::<Vec<_>>());
        #[rustfmt::skip]
        let cases: &[(&str, i64, i64, Option<(i64, i64, bool)>)] = &[
            // (what, low, rows, where the marks take the range)
            ("from the head, 1000 rows: the mark at 769 entries", i64::MIN, 1000, Some((770, 769, false))),
            ("from that mark, 1000 more: 1537 entries in, 768 of them", 770, 1000, Some((1538, 768, false))),
            ("from there, 1000 more: the last mark, 256, then a walk", 1538, 1000, Some((1794, 256, true))),
            ("a key that is no mark's: a walk", 771, 1000, None),
            ("fewer rows than the marks are apart: a walk", 770, 200, None),
            ("513 entries of 700 rows: short of three quarters, a walk", i64::MIN, 700, None),
            ("513 entries of 680 rows: three quarters", i64::MIN, 680, Some((514, 513, false))),
            ("from the last mark: nothing marked after it, a walk", 1794, 1000, None),
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
    fn at_most_marks() {
        let mut marks = Marks::default();
        let mut entries = 0;
        while marks.marks.len() < Marks::MOST {
            if marks.wants(entries) {
                marks.saw(entries, entries);
            }
            entries += 1;
        }
        assert!(!marks.wants(Marks::EVERY * 100_000));
    }
}
