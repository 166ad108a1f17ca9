//! The ProcessUtility hook: before a statement that needs a database free of other sessions
//! runs — DROP DATABASE, ALTER DATABASE … RENAME TO or … SET TABLESPACE, and CREATE DATABASE
//! (for its template) — the worker connected to that database is told to leave (SIGTERM) and
//! none is started there for a while, so the statement succeeds without FORCE. PostgreSQL 15
//! waits a few seconds for other backends to leave and only signals autovacuum itself.
//!
//! The hook acts only on a statement that PostgreSQL's own permission checks for it will let
//! through (the same checks, made first: database ownership, CREATEDB, CREATE on the new
//! tablespace, a template one may copy) and that may run where it is (not in a transaction
//! block): a refused statement never stops anyone's worker.

use crate::registry;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgList;
use std::ffi::{c_char, CStr};

static mut PREVIOUS: pg_sys::ProcessUtility_hook_type = None;

/// Installs the hook; from `_PG_init` while preloading.
pub fn install() {
    unsafe {
        PREVIOUS = pg_sys::ProcessUtility_hook;
        pg_sys::ProcessUtility_hook = Some(process_utility);
    }
}

/// The option named `name` among a statement's `options` (a List of DefElem).
unsafe fn option(options: *mut pg_sys::List, name: &CStr) -> Option<*mut pg_sys::DefElem> {
    let options = unsafe { PgList::<pg_sys::DefElem>::from_pg(options) };
    let found = options
        .iter_ptr()
        .find(|&def| unsafe { CStr::from_ptr((*def).defname) } == name);
    found
}

/// The database `statement` needs free of other sessions, if any.
unsafe fn database_needed(statement: *mut pg_sys::Node) -> Option<*const c_char> {
    unsafe {
        match (*statement).type_ {
            pg_sys::NodeTag::T_DropdbStmt => Some((*(statement as *mut pg_sys::DropdbStmt)).dbname),
            pg_sys::NodeTag::T_RenameStmt => {
                let rename = statement as *mut pg_sys::RenameStmt;
                ((*rename).renameType == pg_sys::ObjectType::OBJECT_DATABASE)
                    .then(|| (*rename).subname as *const c_char)
            }
            pg_sys::NodeTag::T_AlterDatabaseStmt => {
                let alter = statement as *mut pg_sys::AlterDatabaseStmt;
                option((*alter).options, c"tablespace").map(|_| (*alter).dbname as *const c_char)
            }
            pg_sys::NodeTag::T_CreatedbStmt => {
                let create = statement as *mut pg_sys::CreatedbStmt;
                Some(match option((*create).options, c"template") {
                    // TEMPLATE = DEFAULT has no argument: template1, as createdb() reads it
                    Some(template) if !(*template).arg.is_null() => {
                        pg_sys::defGetString(template) as *const c_char
                    }
                    _ => c"template1".as_ptr(),
                })
            }
            _ => None,
        }
    }
}

#[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15"))]
unsafe fn owns_database(db: pg_sys::Oid) -> bool {
    unsafe { pg_sys::pg_database_ownercheck(db, pg_sys::GetUserId()) }
}

#[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15")))]
unsafe fn owns_database(db: pg_sys::Oid) -> bool {
    unsafe { pg_sys::object_ownercheck(pg_sys::DatabaseRelationId, db, pg_sys::GetUserId()) }
}

#[cfg(any(feature = "pg13", feature = "pg14", feature = "pg15"))]
unsafe fn may_create_in_tablespace(tablespace: pg_sys::Oid) -> bool {
    unsafe {
        pg_sys::pg_tablespace_aclcheck(tablespace, pg_sys::GetUserId(), pg_sys::ACL_CREATE as _)
            == pg_sys::AclResult::ACLCHECK_OK
    }
}

#[cfg(not(any(feature = "pg13", feature = "pg14", feature = "pg15")))]
unsafe fn may_create_in_tablespace(tablespace: pg_sys::Oid) -> bool {
    unsafe {
        pg_sys::object_aclcheck(
            pg_sys::TableSpaceRelationId,
            tablespace,
            pg_sys::GetUserId(),
            pg_sys::ACL_CREATE as _,
        ) == pg_sys::AclResult::ACLCHECK_OK
    }
}

/// Whether database `db` is marked as a template (anyone with CREATEDB may copy it).
unsafe fn is_template(db: pg_sys::Oid) -> bool {
    let cache = pg_sys::SysCacheIdentifier::DATABASEOID;
    unsafe {
        crate::syscache::row(cache, db, |d: &pg_sys::FormData_pg_database| {
            d.datistemplate
        })
    }
    .unwrap_or(false)
}

/// Whether PostgreSQL will let the current role run `statement` on database `db`: the checks
/// of dropdb(), RenameDatabase(), movedb() and createdb() (dbcommands.c), made in advance.
unsafe fn permitted(statement: *mut pg_sys::Node, db: pg_sys::Oid) -> bool {
    unsafe {
        let in_block = pg_sys::IsTransactionBlock();
        match (*statement).type_ {
            pg_sys::NodeTag::T_DropdbStmt => !in_block && owns_database(db),
            pg_sys::NodeTag::T_RenameStmt => owns_database(db) && pg_sys::have_createdb_privilege(),
            pg_sys::NodeTag::T_AlterDatabaseStmt => {
                let alter = statement as *mut pg_sys::AlterDatabaseStmt;
                let tablespace = option((*alter).options, c"tablespace")
                    .map(|def| pg_sys::get_tablespace_oid(pg_sys::defGetString(def), true))
                    .unwrap_or(pg_sys::InvalidOid);
                !in_block
                    && owns_database(db)
                    && tablespace != pg_sys::InvalidOid
                    && may_create_in_tablespace(tablespace)
            }
            pg_sys::NodeTag::T_CreatedbStmt => {
                !in_block
                    && pg_sys::have_createdb_privilege()
                    && (is_template(db) || owns_database(db))
            }
            _ => false,
        }
    }
}

unsafe fn before(pstmt: *mut pg_sys::PlannedStmt, context: pg_sys::ProcessUtilityContext::Type) {
    let statement = unsafe { (*pstmt).utilityStmt };
    // Not at top level (EXECUTE in a function, a DO block): PostgreSQL refuses DROP, CREATE and
    // ALTER DATABASE … SET TABLESPACE there, so nobody's worker is told to leave for them.
    // (RENAME may run there; it is permitted below like at top level.)
    let top_level = context == pg_sys::ProcessUtilityContext::PROCESS_UTILITY_TOPLEVEL;
    if statement.is_null()
        || (!top_level && unsafe { (*statement).type_ } != pg_sys::NodeTag::T_RenameStmt)
    {
        return;
    }
    let Some(name) = (unsafe { database_needed(statement) }) else {
        return;
    };
    if name.is_null() {
        return;
    }
    let dboid = unsafe { pg_sys::get_database_oid(name, true) };
    if dboid != pg_sys::InvalidOid && unsafe { permitted(statement, dboid) } {
        if let Some(pid) = registry::stop_worker(dboid) {
            debug1!("jsonb_ttl: asked worker {pid} to leave a database that must be free");
        }
    }
}

#[cfg(not(feature = "pg13"))]
#[pg_guard]
#[allow(clippy::too_many_arguments)]
unsafe extern "C-unwind" fn process_utility(
    pstmt: *mut pg_sys::PlannedStmt,
    query_string: *const std::ffi::c_char,
    read_only_tree: bool,
    context: pg_sys::ProcessUtilityContext::Type,
    params: pg_sys::ParamListInfo,
    query_env: *mut pg_sys::QueryEnvironment,
    dest: *mut pg_sys::DestReceiver,
    qc: *mut pg_sys::QueryCompletion,
) {
    unsafe {
        before(pstmt, context);
        match PREVIOUS {
            Some(previous) => previous(
                pstmt,
                query_string,
                read_only_tree,
                context,
                params,
                query_env,
                dest,
                qc,
            ),
            None => pg_sys::standard_ProcessUtility(
                pstmt,
                query_string,
                read_only_tree,
                context,
                params,
                query_env,
                dest,
                qc,
            ),
        }
    }
}

#[cfg(feature = "pg13")]
#[pg_guard]
unsafe extern "C-unwind" fn process_utility(
    pstmt: *mut pg_sys::PlannedStmt,
    query_string: *const std::ffi::c_char,
    context: pg_sys::ProcessUtilityContext::Type,
    params: pg_sys::ParamListInfo,
    query_env: *mut pg_sys::QueryEnvironment,
    dest: *mut pg_sys::DestReceiver,
    qc: *mut pg_sys::QueryCompletion,
) {
    unsafe {
        before(pstmt, context);
        match PREVIOUS {
            Some(previous) => previous(pstmt, query_string, context, params, query_env, dest, qc),
            None => pg_sys::standard_ProcessUtility(
                pstmt,
                query_string,
                context,
                params,
                query_env,
                dest,
                qc,
            ),
        }
    }
}
