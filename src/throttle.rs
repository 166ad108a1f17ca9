//! Slowing down for replicas and WAL: should the worker's next batch wait, and why.
//!
//! Three limits, each off at 0 (the default): a streaming standby's replay lag
//! (`jsonb_ttl.max_replica_lag`, from `pg_stat_replication`), the WAL a replication slot holds
//! back (`jsonb_ttl.max_slot_wal_keep`, from `pg_replication_slots`), and the WAL rate of the
//! workers' own deletes (`jsonb_ttl.max_wal_rate`, all workers together, over a sliding window:
//! [`jsonb_ttl_core::wal_rate`]). Before each batch the worker asks [`Throttle::before_batch`]:
//! while a limit is passed it waits in short sleeps, acting on signals, and measures again,
//! so deletes slow down instead of stopping; after `jsonb_ttl.frequency` of waiting the visit
//! ends (the pass ends with a limit reached) and the next pass tries again.
//!
//! The replicas and slots are read at most every [`CHECK_EVERY`], by the worker as itself (the
//! superuser it connects as, between batches: no owner's code runs), read-only; with their
//! limits at 0 nothing is read at all. What was measured, whether the workers are slowed, since
//! when, how often and how long they waited is kept server-wide in shared memory and shown by
//! `ttl_throttle()`; a LOG line says when the workers start slowing down and when they are
//! back to full speed (no wait for [`CALM`]: a purge that waits, goes and waits again is one
//! slowdown).

use crate::bgw::sleep;
use crate::txn::in_transaction;
use crate::{gucs, read};
use jsonb_ttl_core::wal_rate::Window;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::shmem::PGRXSharedMemory;
use pgrx::{PgAtomic, PgLwLock};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often the replicas and slots are read, and how long one wait lasts before the limits
/// are checked again.
pub const CHECK_EVERY: Duration = Duration::from_millis(250);

/// A slowdown ends once no check has found its limit passed for this long: a purge that waits,
/// goes, and waits again is one slowdown (one pair of LOG lines), not one per wait.
pub const CALM: Duration = Duration::from_secs(5);

/// The limits, in the order of `ttl_throttle()`'s rows.
const LIMITS: usize = 3;
const REPLICA_LAG: usize = 0;
const SLOT_WAL: usize = 1;
const WAL_RATE: usize = 2;

/// What each limit is called and measured in.
struct Spec {
    setting: &'static str,
    /// The unit of its limit and value in `ttl_throttle()`.
    unit: &'static str,
    /// What is measured, for the log.
    what: &'static str,
}

const SPECS: [Spec; LIMITS] = [
    Spec {
        setting: "jsonb_ttl.max_replica_lag",
        unit: "ms",
        what: "the replay lag of a standby",
    },
    Spec {
        setting: "jsonb_ttl.max_slot_wal_keep",
        unit: "bytes",
        what: "the WAL a replication slot holds back",
    },
    Spec {
        setting: "jsonb_ttl.max_wal_rate",
        unit: "bytes/s",
        what: "the WAL rate of the jsonb_ttl workers' deletes",
    },
];

/// The largest replay lag of the streaming standbys, in ms; a standby with no recent traffic
/// reports no lag (NULL): 0.
const REPLICA_LAG_SQL: &str = "SELECT COALESCE(pg_catalog.max(pg_catalog.date_part(\
       'epoch'::pg_catalog.text, GREATEST(write_lag, flush_lag, replay_lag))), \
       0::pg_catalog.float8) OPERATOR(pg_catalog.*) 1000::pg_catalog.float8 \
     FROM pg_catalog.pg_stat_replication";

/// The most WAL a replication slot holds back, in bytes.
const SLOT_WAL_SQL: &str = "SELECT COALESCE(pg_catalog.max(\
       pg_catalog.pg_current_wal_lsn() OPERATOR(pg_catalog.-) restart_lsn), \
       0::pg_catalog.numeric)::pg_catalog.float8 \
     FROM pg_catalog.pg_replication_slots WHERE restart_lsn IS NOT NULL";

/// The limits in force, in the units of [`SPECS`]; 0 is off.
fn limits() -> [f64; LIMITS] {
    [
        gucs::MAX_REPLICA_LAG_MS.get() as f64,
        gucs::MAX_SLOT_WAL_KEEP_KB.get() as f64 * 1024.0,
        gucs::MAX_WAL_RATE_KB.get() as f64 * 1024.0,
    ]
}

/// One limit's state, server-wide.
#[derive(Copy, Clone, Default)]
struct Slot {
    /// The last value measured, and when (TimestampTz, 0: never).
    value: f64,
    measured_at: i64,
    /// Whether the workers are slowed for this limit: a check found it passed less than
    /// [`CALM`] ago (`last_over`); since when (TimestampTz).
    slowed: bool,
    slowed_since: i64,
    last_over: i64,
    /// How many times the workers started slowing down for this limit.
    slowdowns: u64,
    /// How long workers waited for it, in all (µs).
    waited_us: u64,
}

#[derive(Copy, Clone, Default)]
pub struct Slots([Slot; LIMITS]);

unsafe impl PGRXSharedMemory for Slots {}

static SLOTS: PgLwLock<Slots> = unsafe { PgLwLock::new(c"jsonb_ttl_throttle") };
/// WAL bytes the workers have written, all together, as each adds its own (`pgWalUsage`).
static WAL_BYTES: PgAtomic<AtomicU64> = unsafe { PgAtomic::new(c"jsonb_ttl_wal_bytes") };

/// Requests the shared memory; from `_PG_init` while preloading.
pub fn init() {
    pgrx::pg_shmem_init!(SLOTS);
    pgrx::pg_shmem_init!(WAL_BYTES);
}

/// What one worker keeps between its checks.
pub struct Throttle {
    /// When the replicas and slots were last read, and what was found there.
    queried_at: Option<Instant>,
    queried: [Option<f64>; 2],
    /// The shared WAL count over the last seconds.
    wal: Window,
    /// The origin of the window's times.
    origin: Instant,
    /// This process's WAL bytes (`pgWalUsage.wal_bytes`) already added to [`WAL_BYTES`].
    wal_counted: u64,
    /// What this worker last published: which limits were passed, and when.
    over: [bool; LIMITS],
    published_at: Option<Instant>,
}

impl Default for Throttle {
    fn default() -> Self {
        Throttle {
            queried_at: None,
            queried: [None; 2],
            wal: Window::default(),
            origin: Instant::now(),
            wal_counted: own_wal_bytes(),
            over: [false; LIMITS],
            published_at: None,
        }
    }
}

impl Throttle {
    /// Before a batch: waits while a limit is passed, measuring again every [`CHECK_EVERY`]
    /// and acting on signals in between (a SIGTERM ends the worker, a SIGHUP's new limits
    /// count at once). True when the batch may go; false when it waited `give_up_after` in
    /// all and a limit is still passed (the visit ends).
    pub fn before_batch(&mut self, give_up_after: Duration) -> bool {
        let started = Instant::now();
        loop {
            let limits = limits();
            if limits == [0.0; LIMITS] {
                self.wal.clear();
                self.wal_counted = own_wal_bytes();
                if self.over.iter().any(|&over| over) {
                    self.publish(&limits, &[None; LIMITS], [false; LIMITS]);
                }
                return true;
            }
            let values = self.measure(&limits);
            let over: [bool; LIMITS] = std::array::from_fn(|k| {
                limits[k] > 0.0 && values[k].is_some_and(|v| v > limits[k])
            });
            let due = self
                .published_at
                .is_none_or(|at| at.elapsed() >= CHECK_EVERY);
            if due || over != self.over {
                self.publish(&limits, &values, over);
            }
            let Some(first) = over.iter().position(|&over| over) else {
                return true;
            };
            let waited = started.elapsed();
            if waited >= give_up_after {
                return false;
            }
            report_waiting(first, values[first].unwrap_or(0.0), limits[first]);
            let nap = Instant::now();
            sleep(CHECK_EVERY.min(give_up_after - waited));
            add_waited(over, nap.elapsed());
        }
    }

    /// The values of the limits that are on (`None` for those off, or unreadable): the
    /// replicas and slots as last read (again if [`CHECK_EVERY`] has passed), the WAL rate now.
    fn measure(&mut self, limits: &[f64; LIMITS]) -> [Option<f64>; LIMITS] {
        let (lag_on, slot_on) = (limits[REPLICA_LAG] > 0.0, limits[SLOT_WAL] > 0.0);
        let due = self.queried_at.is_none_or(|at| at.elapsed() >= CHECK_EVERY);
        if due && (lag_on || slot_on) {
            self.queried = in_transaction(|| {
                [
                    lag_on
                        .then(|| read::one::<f64>(REPLICA_LAG_SQL, &[]))
                        .flatten(),
                    slot_on
                        .then(|| read::one::<f64>(SLOT_WAL_SQL, &[]))
                        .flatten(),
                ]
            })
            .unwrap_or_else(|e| {
                debug1!("jsonb_ttl: cannot read the replicas' state: {e}");
                [None, None]
            });
            self.queried_at = Some(Instant::now());
        }
        let mine = own_wal_bytes();
        let added = mine.saturating_sub(self.wal_counted);
        self.wal_counted = mine;
        let wal_rate = match limits[WAL_RATE] > 0.0 {
            true => {
                let total = WAL_BYTES.get().fetch_add(added, Ordering::Relaxed) + added;
                Some(self.wal.rate(self.origin.elapsed(), total))
            }
            false => {
                self.wal.clear();
                None
            }
        };
        [
            self.queried[0].filter(|_| lag_on),
            self.queried[1].filter(|_| slot_on),
            wal_rate,
        ]
    }

    /// Records `values` and whether each limit is passed (`over`) in shared memory (see
    /// [`record`]).
    fn publish(
        &mut self,
        limits: &[f64; LIMITS],
        values: &[Option<f64>; LIMITS],
        over: [bool; LIMITS],
    ) {
        record(limits, values, over);
        self.over = over;
        self.published_at = Some(Instant::now());
    }
}

/// Records `values` and whether each limit is passed (`over`) in shared memory: a limit passed
/// starts a slowdown (counted and logged) unless one is on; a slowdown ends (logged) once its
/// limit is off, or no check has found it passed for [`CALM`].
fn record(limits: &[f64; LIMITS], values: &[Option<f64>; LIMITS], over: [bool; LIMITS]) {
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    let calm = CALM.as_micros() as i64;
    let mut said = Vec::new();
    {
        let mut slots = SLOTS.exclusive();
        for (k, slot) in slots.0.iter_mut().enumerate() {
            if let Some(value) = values[k] {
                slot.value = value;
                slot.measured_at = now;
            }
            if over[k] {
                slot.last_over = now;
                if !slot.slowed {
                    slot.slowed = true;
                    slot.slowed_since = now;
                    slot.slowdowns += 1;
                    said.push(slowing(k, slot.value, limits[k]));
                }
            } else if slot.slowed && (limits[k] <= 0.0 || now - slot.last_over >= calm) {
                slot.slowed = false;
                let slowed_s = (now - slot.slowed_since) as f64 / 1e6;
                said.push(full_speed(k, slot.value, limits[k], slowed_s));
            }
        }
    }
    for line in said {
        log!("{line}");
    }
}

/// At the end of a pass: ends the slowdowns no check has found passed for [`CALM`] (a worker
/// with nothing left to delete checks nothing). Reads shared memory only while one is on.
pub fn settle() {
    if SLOTS.share().0.iter().any(|slot| slot.slowed) {
        record(&limits(), &[None; LIMITS], [false; LIMITS]);
    }
}

/// The log line of a worker that starts slowing down for limit `k`.
fn slowing(k: usize, value: f64, limit: f64) -> String {
    let spec = &SPECS[k];
    format!(
        "jsonb_ttl: slowing down: {} is {value:.0} {unit}, over {} = {limit:.0} {unit}",
        spec.what,
        spec.setting,
        unit = spec.unit
    )
}

/// The log line of the end of a slowdown for limit `k`, `value` last measured.
fn full_speed(k: usize, value: f64, limit: f64, slowed_s: f64) -> String {
    let spec = &SPECS[k];
    match limit > 0.0 {
        true => format!(
            "jsonb_ttl: back to full speed: {} is {value:.0} {unit}, within {} = {limit:.0} {unit} \
             (slowed for {slowed_s:.1} s)",
            spec.what,
            spec.setting,
            unit = spec.unit
        ),
        false => format!(
            "jsonb_ttl: back to full speed: {} is off (slowed for {slowed_s:.1} s)",
            spec.setting
        ),
    }
}

/// Adds `waited` to the time waited for each limit passed (`over`).
fn add_waited(over: [bool; LIMITS], waited: Duration) {
    let mut slots = SLOTS.exclusive();
    for (slot, _) in slots.0.iter_mut().zip(over).filter(|(_, over)| *over) {
        slot.waited_us += waited.as_micros() as u64;
    }
}

/// The WAL this process has written since it started.
fn own_wal_bytes() -> u64 {
    unsafe { pg_sys::pgWalUsage.wal_bytes }
}

/// Shows in pg_stat_activity why the worker waits.
fn report_waiting(k: usize, value: f64, limit: f64) {
    let spec = &SPECS[k];
    let what = format!(
        "jsonb_ttl: waiting: {} is {value:.0} {unit}, over {} = {limit:.0} {unit}",
        spec.what,
        spec.setting,
        unit = spec.unit
    );
    let what = std::ffi::CString::new(what).unwrap_or_default();
    unsafe { pg_sys::pgstat_report_activity(pg_sys::BackendState::STATE_RUNNING, what.as_ptr()) };
}

fn timestamptz(value: i64) -> Option<TimestampWithTimeZone> {
    (value != 0)
        .then(|| TimestampWithTimeZone::try_from(value).ok())
        .flatten()
}

/// Whether the workers slow down for replicas and WAL, one row per limit, like a
/// `pg_stat_*` view: the setting, its unit, the limit in that unit (0: off), the last value a
/// worker measured and when, whether the workers are slowed for it now and since when, how many
/// times they started slowing down, and how long they waited, in all. Server-wide, since the
/// server started. The replay lag is shown, as in `pg_stat_replication`, only to superusers and
/// members of `pg_read_all_stats`.
#[pg_extern(volatile, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
#[allow(clippy::type_complexity)]
fn ttl_throttle() -> TableIterator<
    'static,
    (
        name!(setting, String),
        name!(unit, String),
        name!(limit_value, i64),
        name!(last_value, Option<f64>),
        name!(measured_at, Option<TimestampWithTimeZone>),
        name!(slowed, bool),
        name!(slowed_since, Option<TimestampWithTimeZone>),
        name!(slowdowns, i64),
        name!(waited_ms, f64),
    ),
> {
    let limits = limits();
    let slots = match crate::preload::preloaded() {
        true => *SLOTS.share(),
        false => Slots::default(),
    };
    let reads_all = unsafe {
        pg_sys::has_privs_of_role(
            pg_sys::GetUserId(),
            pg_sys::Oid::from(pg_sys::ROLE_PG_READ_ALL_STATS),
        )
    };
    let rows: Vec<_> = (0..LIMITS)
        .map(|k| {
            let slot = &slots.0[k];
            let slowed = slot.slowed && limits[k] > 0.0;
            let visible = slot.measured_at != 0 && (k != REPLICA_LAG || reads_all);
            (
                SPECS[k].setting.to_string(),
                SPECS[k].unit.to_string(),
                limits[k] as i64,
                visible.then_some(slot.value),
                timestamptz(slot.measured_at),
                slowed,
                slowed.then(|| timestamptz(slot.slowed_since)).flatten(),
                slot.slowdowns as i64,
                slot.waited_us as f64 / 1000.0,
            )
        })
        .collect();
    TableIterator::new(rows)
}
