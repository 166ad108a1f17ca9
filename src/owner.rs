//! Running a closure as another role, the way autovacuum and REINDEX evaluate index
//! expressions: `SetUserIdAndSecContext`, restored on return and on error.

use pgrx::pg_sys;

/// Restores the saved user and security context when dropped, including while an ERROR
/// unwinds through the closure.
struct Restore {
    user: pg_sys::Oid,
    context: i32,
}

impl Drop for Restore {
    fn drop(&mut self) {
        unsafe { pg_sys::SetUserIdAndSecContext(self.user, self.context) };
    }
}

fn switch_to(role: pg_sys::Oid, extra: u32) -> Restore {
    let mut user = pg_sys::InvalidOid;
    let mut context = 0i32;
    unsafe {
        pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
        pg_sys::SetUserIdAndSecContext(role, context | extra as i32);
    }
    Restore { user, context }
}

/// Runs `f` as `role` inside a security-restricted operation: triggers, RLS policies and index
/// expressions see `role`, and nothing run there can change the session's role or create
/// temporary objects. Deletes on behalf of a table's owner go through here.
pub fn as_table_owner<R>(role: pg_sys::Oid, f: impl FnOnce() -> R) -> R {
    let _restore = switch_to(
        role,
        pg_sys::SECURITY_LOCAL_USERID_CHANGE | pg_sys::SECURITY_RESTRICTED_OPERATION,
    );
    f()
}

/// Runs `f` as `role` for our own catalog writes (the caller may own a table but not the
/// catalog). Nothing user-supplied runs inside.
pub fn as_catalog_owner<R>(role: pg_sys::Oid, f: impl FnOnce() -> R) -> R {
    let _restore = switch_to(role, pg_sys::SECURITY_LOCAL_USERID_CHANGE);
    f()
}

/// The role the session acts as now (`current_user`).
pub fn current_user() -> pg_sys::Oid {
    unsafe { pg_sys::GetUserId() }
}

/// Whether the current role has the privileges of `owner` (owns the object, as CREATE INDEX
/// requires): a member of the owning role, or a superuser.
pub fn has_privileges_of(owner: pg_sys::Oid) -> bool {
    unsafe { pg_sys::has_privs_of_role(pg_sys::GetUserId(), owner) }
}
