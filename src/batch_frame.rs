//! The steps every batch takes once its table is locked and its definition read, the worker's
//! ([`crate::worker`]'s frame) and a caller's (`ttl_expire_now`, `ttl_field_expire_now`,
//! [`crate::expire_now`]) alike: whether the target is still the TTL index's ([`enter`]), then
//! the owner's section ([`as_owner`]). One path, so that the two never drift.

use crate::catalog::{self, TtlIndex};
use crate::deleter::{self, Named};
use crate::extension::Extension;
use crate::{gucs, owner};
use pgrx::pg_sys::Oid;
use std::ffi::CStr;

/// What [`enter`] found.
pub(crate) enum Entered {
    /// The target as it is named now, its archive's too, and its owner.
    Ready(Box<Named>, Oid),
    /// Nothing to do here: the table is gone, a partition detached (or a Citus shard moved)
    /// since the targets were read.
    Gone,
    /// A field TTL that would now remove the date a TTL index of its table reads (a partition
    /// attached since): its definition is to be read again.
    Changed,
}

/// Whether `index` (a target, its table locked) is still one to remove from: a field TTL never
/// removes the date a TTL index of its table expires rows by; a partition detached, or a Citus
/// shard moved to another node, since the targets were read is no longer the TTL index's; the
/// table's current names (an ALTER TABLE … RENAME shows at once), its archive's, locked and
/// named as it is now ([`crate::archive::resolve`]), and owner (an OWNER TO too).
pub(crate) fn enter(ext: &Extension, index: &TtlIndex) -> Entered {
    if index.field.is_some() && crate::field_dates::removes_a_ttl_date(ext, index) {
        return Entered::Changed;
    }
    let Some(current) = catalog::with_current_names(index) else {
        return Entered::Gone;
    };
    let here = match index.shard {
        Some(shard) => crate::citus::holds_placement(shard),
        None => index.table == index.root || catalog::is_partition_of(index.table, index.root),
    };
    match (here, owner::table_owner(index.table)) {
        (true, Some(owner)) => {
            let archive =
                (index.archive_to).map(|archive| crate::archive::resolve(index.table, archive));
            Entered::Ready(
                Box::new(Named {
                    index: current,
                    archive,
                }),
                owner,
            )
        }
        _ => Entered::Gone,
    }
}

/// `f` as the table's `owner` (with the owner's `settings`, then `on_top`): every deferrable
/// check made immediate first ([`deleter::check_all_now`]); for a batch that removes rows or
/// fields (`removes`), `jsonb_ttl.expiring = on` for the owner's triggers, set before the
/// owner's section (it is superuser-only), and a field TTL's UPDATE kept from the touch
/// trigger ([`crate::touch::updating`]). A frame that only counts (the brake, the backlog)
/// leaves both off.
pub(crate) fn as_owner<R>(
    index: &TtlIndex,
    owner: Oid,
    settings: &owner::RoleSettings,
    on_top: &[(&CStr, &str)],
    removes: bool,
    f: impl FnOnce() -> R,
) -> R {
    deleter::check_all_now();
    let section = || owner::as_table_owner_with(owner, settings, on_top, f);
    match (removes, &index.field) {
        (true, Some(_)) => gucs::expiring(|| crate::touch::updating(index.table, section)),
        (true, None) => gucs::expiring(section),
        (false, _) => section(),
    }
}
