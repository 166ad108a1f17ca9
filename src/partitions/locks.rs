//! The locks a DROP or DETACH of a partition needs, taken only when free: a partition drop
//! never queues behind a writer, nor makes writers queue behind it; the tables its foreign keys
//! join it to included (a DETACH takes a lock on each, which one open writer of theirs holds).

use pgrx::pg_sys::{self, Oid};

/// Takes the locks a DROP or DETACH of `partition` needs, on `root` and on it, only when no
/// one holds a conflicting one: never queued, never making others queue. A table written
/// without pause (each insert holds a lock on the parent for its transaction) has gaps between
/// its writers' transactions, so the locks are tried again every 2 ms within
/// `jsonb_ttl.lock_timeout`, as a lock wait would last; a first attempt that found them taken
/// left a partition of a busy table whole, pass after pass (`make bench`, steady case).
///
/// A DETACH (`detach`) also locks the tables a foreign key joins the partition to, so those
/// too are taken only when free; a DROP of a partition takes none of theirs (its inherited
/// keys' triggers on them belong to the parent's constraint), and should one be wanted after
/// all, the DDL runs within `jsonb_ttl.lock_timeout`.
pub(super) fn try_lock(root: Oid, partition: Oid, detach: bool) -> bool {
    let joined = match detach {
        true => joined_by_keys(partition),
        false => Vec::new(),
    };
    let deadline = std::time::Instant::now()
        + std::time::Duration::from_millis(crate::gucs::LOCK_TIMEOUT_MS.get().max(0) as u64);
    loop {
        if lock_both(root, partition) && lock_joined(&joined, root, partition) {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        unsafe {
            pg_sys::pg_usleep(2_000);
        }
        pg_sys::check_for_interrupts!();
    }
}

/// [`try_lock`]'s one attempt: both locks, or neither (the parent's is given back when the
/// partition's is taken).
fn lock_both(root: Oid, partition: Oid) -> bool {
    let mode = pg_sys::AccessExclusiveLock as pg_sys::LOCKMODE;
    unsafe {
        if !pg_sys::ConditionalLockRelationOid(root, mode) {
            return false;
        }
        if pg_sys::ConditionalLockRelationOid(partition, mode) {
            return true;
        }
        pg_sys::UnlockRelationOid(root, mode);
        false
    }
}

/// The tables a foreign key joins `partition` to, either way (the ones it references, and the
/// ones that reference it): a DETACH or DROP of it locks each (`SHARE ROW EXCLUSIVE`, to
/// change their foreign key's triggers or check their rows).
fn joined_by_keys(partition: Oid) -> Vec<Oid> {
    pgrx::Spi::connect(|client| {
        client
            .select(
                "SELECT DISTINCT CASE WHEN c.conrelid OPERATOR(pg_catalog.=) $1 THEN c.confrelid \
                                      ELSE c.conrelid END \
                 FROM pg_catalog.pg_constraint c \
                 WHERE c.contype OPERATOR(pg_catalog.=) 'f'::pg_catalog.\"char\" \
                   AND (c.conrelid OPERATOR(pg_catalog.=) $1 OR c.confrelid OPERATOR(pg_catalog.=) $1)",
                None,
                &[partition.into()],
            )
            .map(|rows| rows.filter_map(|row| row.get::<Oid>(1).ok().flatten()).collect())
    })
    .unwrap_or_default()
}

/// The locks of `joined` (see [`joined_by_keys`]), each only when free; when one is not, none
/// is kept, nor those of `root` and `partition` that [`lock_both`] took.
fn lock_joined(joined: &[Oid], root: Oid, partition: Oid) -> bool {
    let mode = pg_sys::ShareRowExclusiveLock as pg_sys::LOCKMODE;
    for (taken, &table) in joined.iter().enumerate() {
        if table == root || table == partition {
            continue;
        }
        if unsafe { !pg_sys::ConditionalLockRelationOid(table, mode) } {
            unsafe {
                for &held in &joined[..taken] {
                    if held != root && held != partition {
                        pg_sys::UnlockRelationOid(held, mode);
                    }
                }
                let exclusive = pg_sys::AccessExclusiveLock as pg_sys::LOCKMODE;
                pg_sys::UnlockRelationOid(partition, exclusive);
                pg_sys::UnlockRelationOid(root, exclusive);
            }
            return false;
        }
    }
    true
}
