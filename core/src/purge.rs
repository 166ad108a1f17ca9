//! Batch after batch, whether the worker's purge of one table goes on, and in which form
//! (the statements themselves are in the extension's `deleter` module). Pure Rust.

/// The two forms of a batch.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Batch {
    /// The DELETE alone: reports the rows it removed.
    Plain,
    /// The rows the DELETE will pick, locked and counted first, then the DELETE.
    Counting,
}

/// What one batch did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Outcome {
    /// Rows picked and locked, known for a [`Batch::Counting`] batch only.
    pub picked: Option<u64>,
    pub deleted: u64,
}

/// Batch after batch, whether the purge of one table goes on, and in which form.
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
}

impl Default for Purge {
    fn default() -> Self {
        Purge { next: Batch::Plain }
    }
}

impl Purge {
    /// The form of the next batch.
    pub fn next(&self) -> Batch {
        self.next
    }

    /// Takes the outcome of a batch that asked for `limit` rows; false when the table is done.
    pub fn go_on(&mut self, limit: i64, outcome: Outcome) -> bool {
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
    use super::{Batch, Outcome, Purge};

    fn plain(deleted: u64) -> Outcome {
        Outcome {
            picked: None,
            deleted,
        }
    }

    fn counting(picked: u64, deleted: u64) -> Outcome {
        Outcome {
            picked: Some(picked),
            deleted,
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
            let mut purge = Purge::default();
            assert_eq!(purge.next(), Batch::Plain, "{name}: starts plain");
            for (i, &(outcome, go_on, next)) in steps.iter().enumerate() {
                assert_eq!(purge.go_on(1000, outcome), go_on, "{name}: step {i}");
                assert_eq!(purge.next(), next, "{name}: step {i}, next form");
            }
        }
    }
}
