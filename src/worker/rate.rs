//! A table's own rate (`max_removes_per_second`) without holding the worker: a visit waits for
//! its rate only briefly, then yields ([`Limit::Rate`](super::Limit)); the table goes on between
//! passes, whenever its next batch is due ("RATE" in docs/worker.md).

use super::Worker;
use crate::bgw::{handle_signals, sleep};
use crate::catalog::{self, TtlIndex};
use crate::extension::Extension;
use crate::gucs;
use crate::txn::in_transaction;
use pgrx::pg_sys::Oid;
use std::time::{Duration, Instant};

/// The longest a visit waits for its rate (`max_removes_per_second`) before a batch.
const RATE_WAIT: Duration = Duration::from_millis(250);

/// The longest a rate-limited visit runs, its waits included, before it yields the worker:
/// the worker, not a table's own rate, bounds a visit's time, so other tables keep their
/// cadence. The table goes on between passes, as soon as its rate lets it
/// ([`Worker::serve_rate_limited`]).
const RATE_SLICE: Duration = Duration::from_secs(1);

impl Worker {
    /// Whether a visit's next batch may run now under its `rate` (the visit began at
    /// `started`): it is due (see [`Worker::rate_due`]), or due within [`RATE_WAIT`] and the
    /// visit's [`RATE_SLICE`] (then it waits here); else the visit yields.
    pub(super) fn rate_allows(&mut self, index: &TtlIndex, rate: i64, started: Instant) -> bool {
        if rate <= 0 {
            return true;
        }
        let Some((due, version)) = self.rate_due.get(&index.target()) else {
            return true;
        };
        if *version != index.version {
            // set under another definition (another rate, perhaps): not this one's
            self.rate_due.remove(&index.target());
            return true;
        }
        let wait = due.saturating_duration_since(Instant::now());
        if wait.is_zero() {
            return true;
        }
        if wait > RATE_WAIT || started.elapsed() + wait > RATE_SLICE {
            return false;
        }
        sleep(wait);
        handle_signals();
        true
    }

    /// Waits until `frequency` ms after `started` (re-reading the frequency after each SIGHUP
    /// so a shorter one takes effect at once), serving meanwhile the rate-limited tables whose
    /// visit yielded, each when its next batch is due.
    pub(super) fn wait_for_next_pass(&mut self, ext: &Extension, started: Instant) {
        loop {
            handle_signals();
            let frequency = Duration::from_millis(gucs::FREQUENCY_MS.get() as u64);
            let Some(until_pass) = frequency.checked_sub(started.elapsed()) else {
                return;
            };
            match self.next_rate_limited() {
                Some((target, wait)) if wait < until_pass => match wait.is_zero() {
                    true => self.serve_rate_limited(ext, target),
                    false => sleep(wait),
                },
                _ if until_pass.is_zero() => return,
                _ => sleep(until_pass),
            }
        }
    }

    /// The rate-limited table that yielded whose next batch is due first, and how long until.
    fn next_rate_limited(&self) -> Option<((Oid, catalog::Part), Duration)> {
        let now = Instant::now();
        self.rate_pending
            .keys()
            .map(|target| {
                let due = self.rate_due.get(target).map_or(now, |(due, _)| *due);
                (*target, due.saturating_duration_since(now))
            })
            .min_by_key(|(_, wait)| *wait)
    }

    /// Goes on with the visit of a rate-limited table between passes (it yields again if its
    /// rate asks; a change of its definition ends it, as in a pass).
    fn serve_rate_limited(&mut self, ext: &Extension, target: (Oid, catalog::Part)) {
        let Some(index) = self.rate_pending.remove(&target) else {
            return;
        };
        let in_window = in_transaction(|| catalog::in_window(&index)).ok();
        if gucs::ENABLED.get() && matches!(in_window, Some(Ok(true))) {
            self.purge(ext, &index);
            super::report_idle();
        }
    }
}
