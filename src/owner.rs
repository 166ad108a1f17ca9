//! Running code as another role, the way autovacuum and REINDEX evaluate index expressions:
//! `SetUserIdAndSecContext`, restored on return and on error.
//!
//! Table owners are untrusted. Whatever evaluates their code (a DELETE that fires their
//! triggers, a scan their row security policies filter) runs through [`as_table_owner`]: as
//! the owner, inside a security-restricted operation, and inside a GUC nest level that is
//! rolled back when the section ends, so no setting the owner's code makes (`search_path`,
//! `default_transaction_read_only`, `row_security`, even with `is_local = false`) reaches the
//! code that runs after it.
//!
//! Inside the section the owner's code sees the settings the owner's own session would get in
//! this database: `search_path` back at its default (postgresql.conf, ALTER DATABASE), then the
//! owner's `ALTER ROLE … IN DATABASE`, `ALTER ROLE`, `ALTER DATABASE` and `ALTER ROLE ALL`
//! settings from `pg_db_role_setting`, in that order of precedence (what `process_settings()`
//! applies at login), as session values of the section's nest level; the caller's own
//! settings (the worker's `lock_timeout`) go on top. Our own statements are
//! qualified down to their operators, so none of these settings can redirect them.

use pgrx::pg_sys;
use pgrx::prelude::*;
use std::ffi::{CStr, CString};

/// Restores the saved user and security context when dropped, and, for an owner section,
/// rolls back every setting made inside it. While an ERROR unwinds through the section the
/// (sub)transaction abort that follows rolls the settings back itself.
struct Restore {
    user: pg_sys::Oid,
    context: i32,
    /// The GUC nest level opened for the section, if any.
    guc_level: Option<i32>,
}

impl Drop for Restore {
    fn drop(&mut self) {
        unsafe {
            if let Some(level) = self.guc_level {
                if !std::thread::panicking() {
                    // false: undo even the non-LOCAL changes, as a failed function's SET clause
                    pg_sys::AtEOXact_GUC(false, level);
                }
            }
            pg_sys::SetUserIdAndSecContext(self.user, self.context);
        }
    }
}

fn switch_to(role: pg_sys::Oid, extra: u32, guc_level: Option<i32>) -> Restore {
    let mut user = pg_sys::InvalidOid;
    let mut context = 0i32;
    unsafe {
        pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
        pg_sys::SetUserIdAndSecContext(role, context | extra as i32);
    }
    Restore {
        user,
        context,
        guc_level,
    }
}

/// Runs `f` as `role` inside a security-restricted operation and its own GUC nest level:
/// triggers, RLS policies and index expressions see `role` and the role's own settings (see
/// the module's text), then `on_top`; nothing run there can change the session's role, create
/// temporary objects or open a cursor WITH HOLD; and every setting changed there is undone
/// when `f` returns. Everything that reads or deletes a user's table on someone else's behalf
/// goes through here.
pub fn as_table_owner<R>(role: pg_sys::Oid, on_top: &[(&CStr, &str)], f: impl FnOnce() -> R) -> R {
    as_table_owner_with(role, &role_settings(role), on_top, f)
}

/// [`as_table_owner`] with the role's settings already read by [`role_settings`] (the worker
/// reads them once per pass and owner).
pub fn as_table_owner_with<R>(
    role: pg_sys::Oid,
    settings: &RoleSettings,
    on_top: &[(&CStr, &str)],
    f: impl FnOnce() -> R,
) -> R {
    let level = unsafe { pg_sys::NewGUCNestLevel() };
    let _restore = switch_to(
        role,
        pg_sys::SECURITY_LOCAL_USERID_CHANGE | pg_sys::SECURITY_RESTRICTED_OPERATION,
        Some(level),
    );
    // NULL: back to the reset value, the session's default before any SET
    apply_setting(c"search_path", None);
    for (name, value) in settings {
        apply_setting(name, Some(value));
    }
    for (name, value) in on_top {
        crate::gucs::override_setting(name, value);
    }
    f()
}

/// A role's settings in this database, as (name, value), most binding first.
pub type RoleSettings = Vec<(CString, CString)>;

/// Settings an owner section never takes from pg_db_role_setting: the role itself (refused in
/// a security-restricted operation anyway).
const NEVER_APPLIED: [&str; 2] = ["role", "session_authorization"];

/// The settings `role`'s own session would get in this database from pg_db_role_setting, most
/// binding first and each name once: `ALTER ROLE … IN DATABASE`, `ALTER ROLE`, `ALTER
/// DATABASE`, `ALTER ROLE ALL`.
pub fn role_settings(role: pg_sys::Oid) -> RoleSettings {
    let rows: Vec<String> = Spi::connect(|client| {
        client
            .select(
                "SELECT u.setting FROM pg_catalog.pg_db_role_setting s, \
                        pg_catalog.unnest(s.setconfig) WITH ORDINALITY u(setting, n) \
                 WHERE s.setdatabase OPERATOR(pg_catalog.=) ANY (ARRAY[0::pg_catalog.oid, $1]) \
                   AND s.setrole OPERATOR(pg_catalog.=) ANY (ARRAY[0::pg_catalog.oid, $2]) \
                 ORDER BY s.setrole OPERATOR(pg_catalog.=) 0::pg_catalog.oid, \
                          s.setdatabase OPERATOR(pg_catalog.=) 0::pg_catalog.oid, u.n",
                None,
                &[unsafe { pg_sys::MyDatabaseId }.into(), role.into()],
            )
            .map(|rows| {
                rows.filter_map(|row| row.get::<String>(1).ok().flatten())
                    .collect()
            })
    })
    .unwrap_or_default();
    let mut settings: Vec<(CString, CString)> = Vec::new();
    for row in rows {
        let Some((name, value)) = row.split_once('=') else {
            continue;
        };
        let name = name.to_ascii_lowercase();
        if NEVER_APPLIED.contains(&name.as_str())
            || settings
                .iter()
                .any(|(seen, _)| seen.to_bytes() == name.as_bytes())
        {
            continue;
        }
        if let (Ok(name), Ok(value)) = (CString::new(name), CString::new(value)) {
            settings.push((name, value));
        }
    }
    settings
}

/// Sets `name` for the current GUC nest level as a login's stored settings are applied
/// (PGC_SUSET, since who stored them was checked when they were stored), or resets it when
/// `value` is None. A setting that cannot be applied now (one read only at backend start) is
/// skipped, logged at DEBUG1.
fn apply_setting(name: &CStr, value: Option<&CStr>) {
    unsafe {
        pg_sys::set_config_option(
            name.as_ptr(),
            value.map_or(std::ptr::null(), |v| v.as_ptr()),
            pg_sys::GucContext::PGC_SUSET,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_SAVE,
            true,
            pgrx::PgLogLevel::DEBUG1 as i32,
            false,
        );
    }
}

/// Runs `f` as `role` for our own catalog writes (the caller may own a table but not the
/// catalog). Nothing user-supplied runs inside, and every statement there is qualified down to
/// its operators, under the function's pinned search_path.
pub fn as_catalog_owner<R>(role: pg_sys::Oid, f: impl FnOnce() -> R) -> R {
    let _restore = switch_to(role, pg_sys::SECURITY_LOCAL_USERID_CHANGE, None);
    f()
}

/// The owner of `table` as the relation cache has it now. Called holding a lock on the table,
/// so an `ALTER TABLE … OWNER TO` either committed before (and shows here) or waits for us.
/// `None` when the table is gone.
pub fn table_owner(table: pg_sys::Oid) -> Option<pg_sys::Oid> {
    unsafe {
        let relation = pg_sys::RelationIdGetRelation(table);
        if relation.is_null() {
            return None;
        }
        let owner = (*(*relation).rd_rel).relowner;
        pg_sys::RelationClose(relation);
        Some(owner)
    }
}

/// Releases what the owner's code may have left in a long-lived session that a GUC nest level
/// does not undo: session-level advisory locks (the worker holds none of its own). PREPARE,
/// DEALLOCATE, LISTEN, DISCARD, temporary objects and cursors WITH HOLD are refused inside a
/// security-restricted operation in the first place.
pub fn release_session_state() {
    unsafe { pg_sys::LockReleaseSession(pg_sys::USER_LOCKMETHOD as pg_sys::LOCKMETHODID) };
}

/// The name of the role `role` (its OID when it is gone), for messages.
pub fn role_name(role: pg_sys::Oid) -> String {
    let name = unsafe { pg_sys::GetUserNameFromId(role, true) };
    match name.is_null() {
        true => role.to_u32().to_string(),
        false => unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned(),
    }
}

/// Whether the current role has the privileges of `owner` (owns the object, as CREATE INDEX
/// requires): a member of the owning role, or a superuser.
pub fn has_privileges_of(owner: pg_sys::Oid) -> bool {
    unsafe { pg_sys::has_privs_of_role(pg_sys::GetUserId(), owner) }
}
