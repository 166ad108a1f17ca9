//! The frame of one batch of the worker, inside its transaction: the table locked within
//! `jsonb_ttl.lock_timeout`, the TTL index's definition locked and checked to be the one the
//! batch was built from, the table's current names and owner read, then the batch's
//! statements as that owner ([`Frame::run`]); and what the batches of a pass keep between
//! them.

use super::statements::{prepared, Prepared};
use crate::batch_frame::Entered;
use crate::catalog::{self, Definition, Lock, Statement, TtlIndex};
use crate::deleter::{self, Named};
use crate::extension::Extension;
use crate::{gucs, owner};
use pgrx::pg_sys::{self, Oid};
use std::collections::{HashMap, HashSet};

/// What the batches of a pass keep between them: the prepared lock of a TTL index's catalog
/// row, and each owner's settings (read once per pass: an `ALTER ROLE … SET`
/// takes effect at the next pass).
#[derive(Default)]
pub(super) struct Frame {
    /// The reads of a definition: of a TTL index (`false`) or a field TTL (`true`), plain
    /// (`false`) and locking (`true`).
    lookups: HashMap<(bool, bool), Prepared>,
    lookup_sql: [[String; 2]; 2],
    /// The tables whose batches met a row another transaction holds in this pass: their
    /// batches pick with `FOR UPDATE SKIP LOCKED` until the pass ends (see [`Worker::batch`]).
    pub(super) row_locked: HashSet<(Oid, catalog::Part)>,
    /// Also what the probe of a pass runs under (see [`Worker::probe`]).
    pub(super) role_settings: HashMap<Oid, owner::RoleSettings>,
    /// Whether the last [`Frame::run`] found the TTL index's definition changed (or a change
    /// of it under way) since the targets were loaded: the visit ends, and the next pass goes
    /// on under the new definition, the safety brake first.
    pub(super) changed: bool,
    /// The extension of this pass's database (for the check of a field TTL's batch against
    /// the TTL indexes of its table, see [`crate::field_dates::removes_a_ttl_date`]).
    ext: Option<Extension>,
}

impl Frame {
    /// Ready for a pass in the database whose extension lives in `ext`.
    pub(super) fn begin_pass(&mut self, ext: &Extension) {
        self.ext = Some(ext.clone());
        self.role_settings.clear();
        self.row_locked.clear();
        self.lookup_sql = [false, true].map(|field| {
            [Lock::No, Lock::SkipLocked].map(|lock| catalog::definition_sql(ext, field, lock))
        });
    }

    /// The steps of one batch of `index` inside its transaction: the table locked within
    /// `jsonb_ttl.lock_timeout`; the TTL index's definition checked to be the version the
    /// batch was built from, and for a batch that deletes (`lock`) its catalog row locked
    /// until the batch ends (see [`Frame::definition`]); the table's current names and owner
    /// read (an ALTER TABLE … OWNER TO or a rename since the pass began shows at once; see
    /// [`crate::batch_frame::enter`]); then `f(current names, expire_after)` as the owner, every
    /// deferrable check made immediate, with the owner's settings and the worker's lock_timeout
    /// on top ([`crate::batch_frame::as_owner`]; our statements get their planner pins while
    /// they are planned, see [`crate::planner`]). `None` when the TTL index or the table no longer exists, or the
    /// definition changed ([`Frame::changed`]).
    pub(super) fn run<R>(
        &mut self,
        index: &TtlIndex,
        lock: bool,
        f: impl FnOnce(&Named, pgrx::datum::Interval) -> R,
    ) -> Option<R> {
        self.changed = false;
        let lock_timeout = gucs::LOCK_TIMEOUT_MS.get().to_string();
        let settings = deleter::batch_settings(&lock_timeout);
        gucs::with_settings(&settings, || {
            // The DELETE's own lock, taken first (within lock_timeout).
            unsafe {
                pg_sys::LockRelationOid(index.table, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE)
            };
            let expire_after = self.definition(index, lock)?;
            let ext = self.ext.as_ref()?;
            let (current, owner) = match crate::batch_frame::enter(ext, index) {
                Entered::Ready(current, owner) => (*current, owner),
                Entered::Gone => return None,
                Entered::Changed => {
                    self.changed = true;
                    return None;
                }
            };
            if index.replication_origin {
                // the owner's code runs under the origin: only an owner who may write under one
                crate::origin::check_owner(owner, &current.display_name);
            }
            let owner_settings = self
                .role_settings
                .entry(owner)
                .or_insert_with(|| owner::role_settings(owner));
            Some(crate::batch_frame::as_owner(
                index,
                owner,
                owner_settings,
                &settings,
                lock,
                || f(&current, expire_after),
            ))
        })
    }

    /// `index`'s expire_after, when its catalog row is at the version `index` was loaded from
    /// (read without a lock first: a changed one writes nothing); for a batch that deletes
    /// (`lock`), then locked until the batch's transaction ends and checked again (`FOR SHARE`:
    /// a `ttl_index_alter`, `ttl_index_pause` or `ttl_index_drop` either committed before, or
    /// waits for the batch), so the committed definition governs each batch
    /// (docs/guarantees.md). `None` when the TTL index is gone, a change of it is under way
    /// (the row is locked: `SKIP LOCKED`, no wait), or it changed since it was loaded (then
    /// [`Frame::changed`] is set). 0 for the rows with a TTL of their own (see
    /// [`crate::row_ttl`]).
    fn definition(&mut self, index: &TtlIndex, lock: bool) -> Option<pgrx::datum::Interval> {
        let mut expire_after = None;
        for locked in [false, true].into_iter().take(1 + lock as usize) {
            expire_after = self
                .read_definition(index, locked)
                .and_then(|definition| definition.governs(index));
            if expire_after.is_none() {
                self.changed = true;
                return None;
            }
        }
        expire_after
    }

    /// The catalog row of `index` ([`catalog::read_definition`], prepared once a pass), read
    /// plainly or `locked` (`FOR SHARE SKIP LOCKED`); `None` when it is gone or (`locked`) a
    /// change holds it.
    fn read_definition(&mut self, index: &TtlIndex, locked: bool) -> Option<Definition> {
        let field = index.field.is_some();
        let sql = &self.lookup_sql[field as usize][locked as usize];
        let types: &[pgrx::PgBuiltInOids] = match field {
            true => &[pgrx::PgBuiltInOids::OIDOID, pgrx::PgBuiltInOids::INT2OID],
            false => &[pgrx::PgBuiltInOids::OIDOID],
        };
        let lookup = prepared(&mut self.lookups, (field, locked), sql, types);
        let lock = match locked {
            true => Lock::SkipLocked,
            false => Lock::No,
        };
        catalog::read_definition(index, lock, Statement::Prepared(lookup))
            .unwrap_or_else(|e| pgrx::error!("cannot read the TTL catalog: {e}"))
    }
}
