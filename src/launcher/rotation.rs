//! The launcher's queue of databases that wait for a worker: first come first served, each
//! not started again before `frequency` has passed since its last worker started, so that
//! with more databases than `jsonb_ttl.max_workers` the workers take turns.

use pgrx::pg_sys::Oid;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The databases waiting for a worker, in order, and when each may next start one.
#[derive(Default)]
pub(super) struct Rotation {
    waiting: std::collections::VecDeque<Oid>,
    not_before: HashMap<Oid, Instant>,
}

impl Rotation {
    /// `db` needs a worker: it joins the end of the queue (once).
    pub(super) fn join(&mut self, db: Oid) {
        if !self.waiting.contains(&db) {
            self.waiting.push_back(db);
        }
    }

    fn is_due(&self, db: Oid) -> bool {
        self.not_before
            .get(&db)
            .is_none_or(|&at| at <= Instant::now())
    }

    /// The first database whose turn has come, if any.
    pub(super) fn next_due(&self) -> Option<Oid> {
        self.waiting.iter().copied().find(|&db| self.is_due(db))
    }

    /// How many waiting databases may start now.
    pub(super) fn due_count(&self) -> usize {
        self.waiting.iter().filter(|&&db| self.is_due(db)).count()
    }

    /// How long until the next waiting database that is not due yet becomes due. (One that is
    /// due but could not start waits for a worker to stop, which wakes the launcher.)
    pub(super) fn next_due_in(&self) -> Option<Duration> {
        let now = Instant::now();
        self.waiting
            .iter()
            .filter_map(|db| self.not_before.get(db))
            .filter(|&&at| at > now)
            .map(|&at| at - now)
            .min()
    }

    /// `db` got its worker: out of the queue, not due again before `frequency` has passed.
    pub(super) fn started(&mut self, db: Oid, frequency: Duration) {
        self.remove(db);
        self.not_before.insert(db, Instant::now() + frequency);
    }

    pub(super) fn remove(&mut self, db: Oid) {
        self.waiting.retain(|&waiting| waiting != db);
    }

    pub(super) fn retain(&mut self, keep: impl Fn(Oid) -> bool) {
        self.waiting.retain(|&db| keep(db));
        self.not_before.retain(|&db, _| keep(db));
    }
}
