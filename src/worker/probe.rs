//! The probe of a pass (PROBE in docs/worker.md): which tables have an expired row now, read
//! from each TTL index's btree when it can tell (see [`crate::leaf_check`]), else by a prepared
//! statement run as the table's owner.

use super::statements::{prepared, Prepared};
use super::visit::record_lag;
use super::Worker;
use crate::bgw::BatchTimer;
use crate::catalog::{self, TtlIndex};
use crate::deadline::Deadline;
use crate::extension::Extension;
use crate::txn::in_transaction;
use crate::{deleter, gucs, leaf_check, owner};
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use std::collections::{HashMap, HashSet};
use std::ffi::CStr;
use std::time::{Duration, Instant};

/// Tables probed in one transaction: each holds a lock on its table and its TTL index until
/// the transaction ends, and the server's lock table has room for about
/// `max_locks_per_transaction` (64) × `max_connections` (100) of them: 10,000 tables in one
/// transaction would fail with "out of shared memory". A transaction per chunk costs little.
const PROBE_CHUNK: usize = 500;

impl Worker {
    /// Which of `indexes` have an expired row now, probed through their TTL indexes in one
    /// transaction per [`PROBE_CHUNK`] tables, so an idle pass costs a few transactions, not one
    /// per table. Each probe runs as
    /// its table's owner (row security policies forced on the owner are the owner's code), read
    /// once the table is locked, within `jsonb_ttl.batch_timeout` and its deadline (see
    /// [`crate::deadline`]). A table whose lock is not free at once counts as expired (its
    /// batch waits lock_timeout at most); when a chunk's probe fails (a table's probe outlasted
    /// `jsonb_ttl.batch_timeout`), every table of that chunk does.
    pub(super) fn probe(
        &mut self,
        ext: &Extension,
        indexes: &[TtlIndex],
        set_aside: &[bool],
    ) -> Vec<bool> {
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
