//! One pass of the worker over its database (PASS in docs/worker.md): load the TTL catalog's
//! targets, drop the expired partitions, probe every table at once for expired rows, then
//! visit the tables round-robin (the start rotates each pass, and is kept in shared memory for
//! the next worker of the database).

use super::targets;
use super::visit::{report, Ended};
use super::{Limit, Worker};
use crate::bgw::handle_signals;
use crate::catalog::{self, TtlIndex};
use crate::extension::Extension;
use crate::txn::in_transaction;
use crate::{citus_sync, partitions, registry, stats};
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use std::collections::HashSet;
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
        self.rearm_brakes(ext);
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
        let sized: HashSet<Oid> = indexes.iter().map(|i| i.stats_table()).collect();
        self.batch_rows
            .retain(|(table, _), _| sized.contains(table));
        self.brake_checked
            .retain(|(table, _), _| tables.contains(table));
        self.brake_checked_roots.clear();
        // the pass visits every table with expired rows: the ones that yielded to their rate
        // go on there (when due)
        self.rate_pending.clear();
        self.rate_due.retain(|(table, _), _| tables.contains(table));
    }

    /// Sets the brake again on the TTL indexes released (by `ttl_index_resume()`, or at
    /// creation for their first backlog) whose every target visited drained in this pass (or
    /// between passes).
    fn rearm_brakes(&mut self, ext: &Extension) {
        for (root, drained) in std::mem::take(&mut self.rearm) {
            if drained {
                let _ = in_transaction(|| crate::brake::rearm(ext, root));
            }
        }
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
            // (a pause of the table's TTL index is not its field TTLs')
            _ if index.paused
                || (index.field.is_none() && self.paused_roots.contains(&index.root)) =>
            {
                Limit::None
            }
            // outside its delete window: ttl_stats shows it as skipped
            _ if !index.in_window => Limit::None,
            // a field TTL whose table was locked as the catalog was read: the next pass
            _ if index.field.as_ref().is_some_and(|field| field.busy) => Limit::None,
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
            // never a partition dropped whole past its archive (the two are refused together;
            // this holds even if two alters raced past that check)
            .filter(|(index, mode)| *mode != partitions::Mode::Drop || index.archive_to.is_none())
            .collect();
        for (index, mode) in owners {
            handle_signals();
            let visited = partitions::visit(ext, &index, mode);
            if visited.paused {
                self.paused_roots.insert(index.root);
            }
            stats::record_dropped(visited.rows as u64);
            forget_dropped(&mut indexes, index.root, &visited.left_whole, &visited.gone);
        }
        indexes
    }
}

/// Why a table whose TTL index is missing or not ready is not purged, for `ttl_stats`.
fn missing_index(index: &TtlIndex) -> String {
    if index.field.is_some() {
        return format!(
            "the index of this field TTL ({}) is missing or not valid, its column is no longer \
             jsonb, or it would remove the date a TTL index of this table expires rows by: no \
             field is removed until that is mended (ttl_field_drop, then ttl_field_create)",
            index.index_name
        );
    }
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
/// targets under the partitions `left_whole` for a later pass (see
/// [`partitions::Visited::left_whole`]) and those that are `gone`.
fn forget_dropped(indexes: &mut Vec<TtlIndex>, root: Oid, left_whole: &[Oid], gone: &[Oid]) {
    // the expired partitions that were busy, and those expiring whole by the next pass, go
    // whole at a later pass: no row of theirs is deleted meanwhile
    if !left_whole.is_empty() {
        indexes.retain(|target| {
            target.root != root
                || in_transaction(|| {
                    !left_whole.iter().any(|&whole| {
                        target.table == whole || catalog::is_partition_of(target.table, whole)
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
