//! Batch after batch, whether the worker's purge of one table goes on, and in which form
//! (the statements themselves are in the extension's `deleter` module). Pure Rust.

/// The forms of a batch.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Batch {
    /// The rows whose keys fall in one range of the TTL index, from where the previous batch
    /// of the visit stopped ([`Purge::low`]) to a bound read from the index first: each row is
    /// read once, and no batch steps over the entries of the rows the batches before it removed.
    /// When the range cannot be used (see [`Reached`]), the batch runs as [`Batch::Plain`].
    Range,
    /// The DELETE of the rows a pick finds from the head of the index: reports the rows it removed.
    Plain,
    /// The rows the DELETE will pick, locked and counted first, then the DELETE.
    Counting,
}

/// How far into the TTL index a [`Batch::Range`] batch went.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Reached {
    /// Up to this key (not included): the next batch starts there.
    Key(i64),
    /// To the cutoff: nothing expired is left after the range.
    Cutoff,
}

/// What one batch did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Outcome {
    /// Rows picked and locked, known for a [`Batch::Counting`] batch only.
    pub picked: Option<u64>,
    pub deleted: u64,
    /// How far a range batch went; `None` for a batch of another form (a [`Batch::Range`]
    /// batch that ran as [`Batch::Plain`] too).
    pub reached: Option<Reached>,
}

impl Outcome {
    /// A batch of the form [`Batch::Plain`] or [`Batch::Counting`].
    pub fn picked(picked: Option<u64>, deleted: u64) -> Outcome {
        Outcome {
            picked,
            deleted,
            reached: None,
        }
    }
}

/// Batch after batch, whether the purge of one table goes on, and in which form.
///
/// Range batches first, each from the key the one before it reached, until one reaches the
/// cutoff: the table is done for this pass. A range batch that ran as a plain one (the range
/// could not be used: the index cannot be read directly, a run of equal keys longer than the
/// batch, a row busy elsewhere), or that removed fewer than half of its rows (rows a trigger
/// keeps), ends the ranges for the visit, which goes on as below.
///
/// Plain batches while they come back full. After a short one, counting batches, which go on
/// while they pick as many rows as asked and remove at least half of them: rows a trigger keeps
/// are picked again each time, and the rows behind them get removed. A counting batch that
/// picks fewer rows than asked means nothing else is expired (or the rest is locked elsewhere):
/// done. One that removes less than half of what it picked means mostly kept rows sit at the
/// head of the index: the table waits for the next pass rather than spend a visit relocking
/// them for a few rows each time.
#[derive(Debug)]
pub struct Purge {
    next: Batch,
    /// Where the next range batch starts (`i64::MIN`: `-infinity`, the index's head).
    low: i64,
}

impl Default for Purge {
    /// A purge by ranges of keys.
    fn default() -> Self {
        Purge {
            next: Batch::Range,
            low: i64::MIN,
        }
    }
}

impl Purge {
    /// A purge by plain and counting batches only.
    pub fn from_head() -> Purge {
        Purge {
            next: Batch::Plain,
            low: i64::MIN,
        }
    }

    /// The form of the next batch.
    pub fn next(&self) -> Batch {
        self.next
    }

    /// The key the next range batch starts from (included).
    pub fn low(&self) -> i64 {
        self.low
    }

    /// Takes the outcome of a batch that asked for `limit` rows; false when the table is done.
    pub fn go_on(&mut self, limit: i64, outcome: Outcome) -> bool {
        match outcome.reached {
            // a range that removed fewer than half of its rows holds rows a trigger keeps (or
            // entries of rows removed by others): the head form tells them apart, and stops
            // at rows kept at the head of the index rather than walk past them at every pass
            Some(Reached::Key(_)) if (outcome.deleted as i64) * 2 < limit => {
                self.next = Batch::Plain;
                return true;
            }
            Some(Reached::Key(key)) => {
                self.low = key;
                return true;
            }
            Some(Reached::Cutoff) => return false,
            None if self.next == Batch::Range => self.next = Batch::Plain,
            None => {}
        }
        match outcome.picked {
            None if (outcome.deleted as i64) < limit => {
                self.next = Batch::Counting;
                true
            }
            None => true,
            Some(picked) => picked as i64 >= limit && outcome.deleted * 2 >= picked,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Batch, Outcome, Purge, Reached};

    fn plain(deleted: u64) -> Outcome {
        Outcome::picked(None, deleted)
    }

    fn counting(picked: u64, deleted: u64) -> Outcome {
        Outcome::picked(Some(picked), deleted)
    }

    fn range(deleted: u64, reached: Reached) -> Outcome {
        Outcome {
            picked: None,
            deleted,
            reached: Some(reached),
        }
    }

    /// One batch of 1000 rows: its outcome, whether the purge goes on, the next batch's form.
    type Step = (Outcome, bool, Batch);

    /// Each case: the successive batches of one visit.
    #[test]
    fn purge_decisions() {
        let cases: &[(&str, &[Step])] = &[
            (
                "full batches go on, plain",
                &[
                    (plain(1000), true, Batch::Plain),
                    (plain(1000), true, Batch::Plain),
                ],
            ),
            (
                "drained: a short batch, then a counting one that picks less",
                &[
                    (plain(1000), true, Batch::Plain),
                    (plain(400), true, Batch::Counting),
                    (counting(0, 0), false, Batch::Counting),
                ],
            ),
            (
                "one row kept by a trigger at the head: the rows behind it go",
                &[
                    (plain(999), true, Batch::Counting),
                    (counting(1000, 999), true, Batch::Counting),
                    (counting(1000, 999), true, Batch::Counting),
                    (counting(301, 300), false, Batch::Counting),
                ],
            ),
            (
                "600 rows kept at the head: wait for the next pass",
                &[
                    (plain(400), true, Batch::Counting),
                    (counting(1000, 400), false, Batch::Counting),
                ],
            ),
            (
                "half kept: still worth going on",
                &[
                    (plain(500), true, Batch::Counting),
                    (counting(1000, 500), true, Batch::Counting),
                ],
            ),
            (
                "only kept rows left: picked in full, none removed",
                &[
                    (plain(0), true, Batch::Counting),
                    (counting(1000, 0), false, Batch::Counting),
                ],
            ),
            (
                "an empty table",
                &[
                    (plain(0), true, Batch::Counting),
                    (counting(0, 0), false, Batch::Counting),
                ],
            ),
            (
                "rows keep expiring: a counting batch that picks a full batch goes on",
                &[
                    (plain(10), true, Batch::Counting),
                    (counting(1000, 1000), true, Batch::Counting),
                    (counting(12, 12), false, Batch::Counting),
                ],
            ),
        ];
        for (name, steps) in cases {
            let mut purge = Purge::from_head();
            assert_eq!(purge.next(), Batch::Plain, "{name}: starts plain");
            for (i, &(outcome, go_on, next)) in steps.iter().enumerate() {
                assert_eq!(purge.go_on(1000, outcome), go_on, "{name}: step {i}");
                assert_eq!(purge.next(), next, "{name}: step {i}, next form");
            }
        }
    }

    /// Each case: the successive batches of a visit by ranges (1000 rows each), with the
    /// key the next range batch starts from after each.
    #[test]
    fn range_decisions() {
        type RangeStep = (Outcome, bool, Batch, i64);
        let cases: &[(&str, &[RangeStep])] = &[
            (
                "ranges go on from the key each reached, until one reaches the cutoff",
                &[
                    (range(1000, Reached::Key(10)), true, Batch::Range, 10),
                    (range(990, Reached::Key(25)), true, Batch::Range, 25),
                    (range(12, Reached::Cutoff), false, Batch::Range, 25),
                ],
            ),
            (
                "a last range with rows kept in it ends the visit as any last range",
                &[
                    (range(1000, Reached::Key(10)), true, Batch::Range, 10),
                    (range(3, Reached::Cutoff), false, Batch::Range, 10),
                ],
            ),
            (
                "nothing expired: the first range reaches the cutoff",
                &[(range(0, Reached::Cutoff), false, Batch::Range, i64::MIN)],
            ),
            (
                "a range that removes under half of its rows: plain batches from the head",
                &[
                    (range(1000, Reached::Key(10)), true, Batch::Range, 10),
                    (range(499, Reached::Key(20)), true, Batch::Plain, 10),
                    (plain(400), true, Batch::Counting, 10),
                    (counting(1000, 400), false, Batch::Counting, 10),
                ],
            ),
            (
                "half of its rows is enough",
                &[(range(500, Reached::Key(10)), true, Batch::Range, 10)],
            ),
            (
                "a range batch run as a plain one: plain batches from then on",
                &[
                    (range(1000, Reached::Key(10)), true, Batch::Range, 10),
                    (plain(1000), true, Batch::Plain, 10),
                    (plain(1000), true, Batch::Plain, 10),
                ],
            ),
            (
                "a short plain batch after the ranges: counting ones, as from the head",
                &[
                    (plain(400), true, Batch::Counting, i64::MIN),
                    (counting(0, 0), false, Batch::Counting, i64::MIN),
                ],
            ),
        ];
        for (name, steps) in cases {
            let mut purge = Purge::default();
            assert_eq!(purge.next(), Batch::Range, "{name}: starts by ranges");
            assert_eq!(purge.low(), i64::MIN, "{name}: from the head");
            for (i, &(outcome, go_on, next, low)) in steps.iter().enumerate() {
                assert_eq!(purge.go_on(1000, outcome), go_on, "{name}: step {i}");
                assert_eq!(purge.next(), next, "{name}: step {i}, next form");
                assert_eq!(purge.low(), low, "{name}: step {i}, next range's start");
            }
        }
    }
}
