//! The locks a DROP or DETACH of a partition needs, taken only when free: a partition drop
//! never queues behind a writer, nor makes writers queue behind it.

use pgrx::pg_sys::{self, Oid};

/// Takes the locks a DROP or DETACH of `partition` needs, on `root` and on it, only when no
/// one holds a conflicting one: never queued, never making others queue. A table written
/// without pause (each insert holds a lock on the parent for its transaction) has gaps between
/// its writers' transactions, so the locks are tried again every 2 ms within
/// `jsonb_ttl.lock_timeout`, as a lock wait would last; a first attempt that found them taken
/// left a partition of a busy table whole, pass after pass (`make bench`, steady case).
pub(super) fn try_lock(root: Oid, partition: Oid) -> bool {
    let deadline = std::time::Instant::now()
        + std::time::Duration::from_millis(crate::gucs::LOCK_TIMEOUT_MS.get().max(0) as u64);
    loop {
        if lock_both(root, partition) {
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
