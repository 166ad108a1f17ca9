//! One pass of the worker over its database (PASS in docs/worker.md): load the TTL catalog's
//! targets, drop the expired partitions, probe every table at once for expired rows, then
//! visit the tables round-robin (the start rotates each pass, and is kept in shared memory for
//! the next worker of the database).

use super::batch::{prepared, Prepared};
use super::targets;
use super::visit::{report, Ended};
use super::{Limit, Worker};
use crate::bgw::{handle_signals, BatchTimer};
use crate::catalog::{self, TtlIndex};
use crate::deadline::Deadline;
use crate::extension::Extension;
use crate::txn::in_transaction;
use crate::{citus_sync, deleter, gucs, leaf_check, owner, partitions, registry, stats};
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use std::collections::{HashMap, HashSet};
use std::ffi::CStr;
use std::time::{Duration, Instant};

impl Worker {
    pub(super) fn pass(&mut self, ext: &Extension) {
        // the whole pass, its read of the catalog included (ttl_statistics().last_pass_ms)
        let started = Instant::now();
        let Some(indexes) = self.load_targets(ext) else {
            return;
        };
        self.waiting_for_restore = false;
        if let Err(e) = in_transaction(|| citus_sync::send(ext, &mut self.citus_sent)) {
            log!("jsonb_ttl: cannot hand the TTL indexes of distributed tables on: {e}");
        }
        self.paused_roots.clear();
        // the statistics of tables no longer among the targets go (dropped, or their TTL
        // index dropped): the store holds jsonb_ttl.max_tables entries, not a history
        let recorded: HashSet<(Oid, u8)> = indexes
            .iter()
            .map(|i| (i.stats_table(), i.stats_part()))
            .collect();
        stats::forget_tables_except(&recorded);
        let indexes = self.drop_expired_partitions(ext, indexes);
        self.begin(ext, &indexes);
        let aside = stats::SetAside::now();
        let set_aside: Vec<bool> = indexes
            .iter()
            .map(|index| aside.holds(index.stats_table(), index.owner))
            .collect();
        let expired = self.probe(ext, &indexes, &set_aside);
        let pass_limited = self.visit_round_robin(ext, &indexes, &expired, &set_aside);
        self.next_start = self.next_start.wrapping_add(1) % indexes.len().max(1);
        registry::set_next_start(unsafe { pg_sys::MyDatabaseId }, self.next_start);
        stats::record_pass(pass_limited, started.elapsed());
        // a slowdown for replicas or WAL that no batch waited for lately ends
        crate::throttle::settle();
    }

    /// The targets of this pass (see [`read_targets`]), or `None` when there is no pass: a
    /// pg_restore is connected (logged once until it is gone), or the catalog cannot be read.
    fn load_targets(&mut self, ext: &Extension) -> Option<Vec<TtlIndex>> {
        match in_transaction(|| targets::read(ext, &mut self.kept)) {
            Ok(Some(indexes)) => Some(indexes),
            Ok(None) => {
                if !self.waiting_for_restore {
                    log!("jsonb_ttl: pg_restore is connected to this database; no pass until it is done");
                    self.waiting_for_restore = true;
                }
                None
            }
            Err(e) => {
                log!("jsonb_ttl: cannot read the TTL catalog: {e}");
                None
            }
        }
    }

    /// Forgets what the worker keeps for tables that are no longer among `indexes` (their
    /// statistics too), and readies the batch frame for this pass.
    fn begin(&mut self, ext: &Extension, indexes: &[TtlIndex]) {
        // sets: with 10,000 tables a scan of `indexes` per kept item would cost 10^8 steps
        let tables: HashSet<Oid> = indexes.iter().map(|i| i.table).collect();
        self.undeletable.retain(|table| tables.contains(&table));
        self.frame.begin_pass(ext);
        self.statements
            .retain(|((table, _), _), _| tables.contains(table));
        self.probes.retain(|(table, _), _| tables.contains(table));
        self.batch_rows.retain(|table, _| tables.contains(table));
        self.brake_checked
            .retain(|(table, _), _| tables.contains(table));
        self.brake_checked_roots.clear();
    }

    /// Visits every table of `indexes` once, starting at `next_start`, until the server-wide
    /// budget is spent; returns whether a limit cut any visit short.
    fn visit_round_robin(
        &mut self,
        ext: &Extension,
        indexes: &[TtlIndex],
        expired: &[bool],
        set_aside: &[bool],
    ) -> bool {
        let mut pass_limited = false;
        let count = indexes.len();
        for k in 0..count {
            let at = (self.next_start + k) % count;
            let limit = self.visit_or_skip(ext, &indexes[at], expired[at], set_aside[at]);
            pass_limited |= limit != Limit::None;
            // a worker terminated further on (see crate::deadline) lets the next one go on
            // after this table
            registry::set_next_start(unsafe { pg_sys::MyDatabaseId }, (at + 1) % count);
            if matches!(limit, Limit::Server | Limit::Throttled) {
                break;
            }
            handle_signals();
        }
        pass_limited
    }

    /// Purges `index`'s table if the probe found it `expired`, unless it is skipped in this
    /// pass (recorded in the statistics either way).
    fn visit_or_skip(
        &mut self,
        ext: &Extension,
        index: &TtlIndex,
        expired: bool,
        set_aside: bool,
    ) -> Limit {
        match expired {
            // ttl_stats shows both as skipped
            _ if index.foreign => Limit::None,
            _ if index.paused || self.paused_roots.contains(&index.root) => Limit::None,
            // outside its delete window: ttl_stats shows it as skipped
            _ if !index.in_window => Limit::None,
            // it held a worker past its deadline: ttl_stats shows until when
            _ if set_aside => Limit::None,
            _ if !index.index_ready => report(
                index,
                0,
                Limit::None,
                None,
                Some(missing_index(index)),
                Ended::default(),
            ),
            true => self.purge(ext, index),
            // the probe found nothing expired: no backlog
            false => {
                let ended = Ended {
                    took: Duration::ZERO,
                    backlog: Some(0),
                };
                report(index, 0, Limit::None, None, None, ended)
            }
        }
    }

    /// Drops (or detaches) the expired partitions of the TTL indexes with `drop_partitions`
    /// (see [`partitions`]), before any row of theirs is probed or deleted; returns the targets
    /// left.
    fn drop_expired_partitions(
        &mut self,
        ext: &Extension,
        mut indexes: Vec<TtlIndex>,
    ) -> Vec<TtlIndex> {
        let mut roots = std::collections::HashSet::new();
        let owners: Vec<(TtlIndex, partitions::Mode)> = indexes
            .iter()
            .filter(|index| !index.paused && index.in_window && roots.insert(index.root))
            .filter_map(|index| Some((index.clone(), index.drop_partitions?)))
            .collect();
        for (index, mode) in owners {
            handle_signals();
            let visited = partitions::visit(ext, &index, mode);
            if visited.paused {
                self.paused_roots.insert(index.root);
            }
            stats::record_dropped(visited.rows as u64);
            forget_dropped(&mut indexes, index.root, &visited.busy, &visited.gone);
        }
        indexes
    }

    /// Which of `indexes` have an expired row now, probed through their TTL indexes in one
    /// transaction per [`PROBE_CHUNK`] tables, so an idle pass costs a few transactions, not one
    /// per table. Each probe runs as
    /// its table's owner (row security policies forced on the owner are the owner's code), read
    /// once the table is locked, within `jsonb_ttl.batch_timeout` and its deadline (see
    /// [`crate::deadline`]). A table whose lock is not free at once counts as expired (its
    /// batch waits lock_timeout at most); when a chunk's probe fails (a table's probe outlasted
    /// `jsonb_ttl.batch_timeout`), every table of that chunk does.
    fn probe(&mut self, ext: &Extension, indexes: &[TtlIndex], set_aside: &[bool]) -> Vec<bool> {
        let lock_timeout = gucs::LOCK_TIMEOUT_MS.get().to_string();
        let settings = deleter::batch_settings(&lock_timeout);
        let mut probing = Probing {
            ext,
            probes: &mut self.probes,
            lagging: &mut self.lagging,
            role_settings: &mut self.frame.role_settings,
            settings: &settings,
            timeout_ms: gucs::BATCH_TIMEOUT_MS.get(),
            started: Instant::now(),
        };
        let mut expired = Vec::with_capacity(indexes.len());
        for (tables, aside) in indexes
            .chunks(PROBE_CHUNK)
            .zip(set_aside.chunks(PROBE_CHUNK))
        {
            let probed = in_transaction(|| {
                gucs::with_settings(&settings, || {
                    tables
                        .iter()
                        .zip(aside)
                        .map(|(index, &set_aside)| probing.table(index, set_aside))
                        .collect::<Vec<bool>>()
                })
            });
            owner::release_session_state();
            match probed {
                Ok(probed) => expired.extend(probed),
                Err(e) => {
                    debug1!("jsonb_ttl: probe failed, visiting its tables: {e}");
                    probing.probes.clear();
                    expired.extend(std::iter::repeat_n(true, tables.len()));
                }
            }
        }
        expired
    }
}

/// Tables probed in one transaction: each holds a lock on its table and its TTL index until
/// the transaction ends, and the server's lock table has room for about
/// `max_locks_per_transaction` (64) × `max_connections` (100) of them: 10,000 tables in one
/// transaction would fail with "out of shared memory". A transaction per chunk costs little.
const PROBE_CHUNK: usize = 500;

/// Why a table whose TTL index is missing or not ready is not purged, for `ttl_stats`.
fn missing_index(index: &TtlIndex) -> String {
    match index.index_name.is_empty() {
        true => "the per-row TTL index of this table was dropped: its rows are \
                 not deleted until it is built again (ttl_index_create again \
                 returns the statements in build_sql)"
            .to_string(),
        false => format!(
            "the TTL index {} is missing or not valid on this table: \
             nothing is deleted until it is built (REINDEX, or ttl_index_create again)",
            index.index_name
        ),
    }
}

/// After the expired partitions of TTL index `root` were visited: drops from `indexes` the
/// targets under the partitions that were `busy` and those that are `gone`.
fn forget_dropped(indexes: &mut Vec<TtlIndex>, root: Oid, busy: &[Oid], gone: &[Oid]) {
    // the expired partitions that were busy go whole at a later pass: no row of theirs
    // is deleted meanwhile
    if !busy.is_empty() {
        indexes.retain(|target| {
            target.root != root
                || in_transaction(|| {
                    !busy.iter().any(|&busy| {
                        target.table == busy || catalog::is_partition_of(target.table, busy)
                    })
                })
                .unwrap_or(false)
        });
    }
    // the leaves that went with them (a dropped partition may have partitions)
    indexes.retain(|target| {
        !gone.contains(&target.table)
            && (gone.is_empty()
                || in_transaction(|| unsafe {
                    !pg_sys::get_rel_name(target.table).is_null()
                        && (target.table == target.root
                            || catalog::is_partition_of(target.table, target.root))
                })
                .unwrap_or(false))
    });
}

/// What the probes of the tables of a pass share (see [`Worker::probe`]).
struct Probing<'a> {
    ext: &'a Extension,
    probes: &'a mut HashMap<(Oid, catalog::Part), Prepared>,
    lagging: &'a mut HashSet<(Oid, u8)>,
    role_settings: &'a mut HashMap<Oid, owner::RoleSettings>,
    /// What our statements set on top of the owner's settings.
    settings: &'a [(&'a CStr, &'a str)],
    timeout_ms: i32,
    /// When the probe began: it stops after `timeout_ms` as a whole.
    started: Instant,
}

impl Probing<'_> {
    /// Whether `index`'s table has an expired row now (or might: it is visited).
    fn table(&mut self, index: &TtlIndex, set_aside: bool) -> bool {
        if index.foreign || !index.index_ready || index.paused || !index.in_window || set_aside {
            return false; // no foreign data wrapper, no scan of the whole table
        }
        if self.timeout_ms > 0
            && self.started.elapsed() > Duration::from_millis(self.timeout_ms as u64)
        {
            // owner code that returns just in time, table after table: the
            // rest count as expired, each visited within its own limits
            return true;
        }
        if let Some(expired) = self.leaf(index) {
            return expired;
        }
        // each table's probe its own time limit and deadline, so the one
        // whose owner code holds the worker is the one set aside
        let _timer = BatchTimer::arm(self.timeout_ms);
        let _deadline = Deadline::arm(index.stats_table(), index.owner, self.timeout_ms);
        let Ok(sql) = deleter::probe_sql(self.ext, index) else {
            return true; // purge() reports why
        };
        let locked = unsafe {
            pg_sys::ConditionalLockRelationOid(
                index.table,
                pg_sys::AccessShareLock as pg_sys::LOCKMODE,
            )
        };
        if !locked {
            return true;
        }
        let Some(owner) = owner::table_owner(index.table) else {
            return false; // dropped since the pass began
        };
        let owner_settings = self
            .role_settings
            .entry(owner)
            .or_insert_with(|| owner::role_settings(owner));
        let (probes, lagging) = (&mut *self.probes, &mut *self.lagging);
        owner::as_table_owner_with(owner, owner_settings, self.settings, || {
            probe_as_owner(probes, lagging, index, &sql)
        })
    }
}

impl Probing<'_> {
    /// Whether `index`'s table has an expired row, when its TTL index says so without any SQL
    /// (see [`leaf_check`]): `Some(false)` when the index has no entry before the cutoff,
    /// `Some(true)` when the table's lock is not free at once (as for the SQL probe), `None`
    /// when the SQL probe must say (an entry before the cutoff, or the index cannot be read
    /// so). No code of the table's owner runs here.
    fn leaf(&mut self, index: &TtlIndex) -> Option<bool> {
        let index_oid = index.index_oid?;
        let locked = unsafe {
            pg_sys::ConditionalLockRelationOid(
                index.table,
                pg_sys::AccessShareLock as pg_sys::LOCKMODE,
            )
        };
        if !locked {
            return Some(true);
        }
        let owner = owner::table_owner(index.table)?;
        let cutoff = leaf_check::cutoff(&index.expire_after, || self.zone_is_ours(owner))?;
        match leaf_check::has_entry_before(index.table, index_oid, cutoff)? {
            true => None,
            false => {
                // (a Citus shard's lag is not recorded: never read so)
                record_lag(self.lagging, index, None);
                Some(false)
            }
        }
    }

    /// Whether the probe of a table of `owner` runs in this session's `TimeZone`: neither the
    /// owner's settings nor ours set another.
    fn zone_is_ours(&mut self, owner: Oid) -> bool {
        let is_zone = |name: &CStr| name.to_bytes().eq_ignore_ascii_case(b"timezone");
        if self.settings.iter().any(|(name, _)| is_zone(name)) {
            return false;
        }
        let ours = unsafe {
            CStr::from_ptr(pg_sys::GetConfigOptionByName(
                c"TimeZone".as_ptr(),
                std::ptr::null_mut(),
                false,
            ))
        };
        self.role_settings
            .entry(owner)
            .or_insert_with(|| owner::role_settings(owner))
            .iter()
            .all(|(name, value)| !is_zone(name) || value.as_c_str() == ours)
    }
}

/// Runs the probe `sql` of `index`'s table (prepared once, kept in `probes`), as its owner:
/// whether it found an expired row (or failed). Records the table's lag.
fn probe_as_owner(
    probes: &mut HashMap<(Oid, catalog::Part), Prepared>,
    lagging: &mut HashSet<(Oid, u8)>,
    index: &TtlIndex,
    sql: &str,
) -> bool {
    let statement = prepared(probes, index.target(), sql, &deleter::PROBE_ARGS);
    let oldest = Spi::connect(|client| {
        let rows = client.select(statement, Some(1), &[index.expire_after.into()])?;
        match rows.is_empty() {
            true => Ok(None),
            false => rows.first().get_one::<TimestampWithTimeZone>(),
        }
    });
    match oldest {
        Ok(oldest) => {
            // (a Citus shard's lag is not recorded: ttl_stats shows its table once per node)
            if index.shard.is_none() {
                record_lag(lagging, index, oldest);
            }
            oldest.is_some()
        }
        Err(_) => true,
    }
}

/// Records the oldest expired time of `table` (`None`: nothing expired is left) in the
/// statistics, for `ttl_stats.oldest_expired`; shared memory is written only when there is a
/// lag or one goes, not for each idle table of each pass.
pub(super) fn record_lag(
    lagging: &mut HashSet<(Oid, u8)>,
    index: &TtlIndex,
    oldest: Option<TimestampWithTimeZone>,
) {
    let key = (index.table, index.stats_part());
    let was = match oldest {
        Some(_) => !lagging.insert(key),
        None => lagging.remove(&key),
    };
    if oldest.is_some() || was {
        stats::record_oldest_expired(key.0, key.1, oldest);
    }
}
