//! The ProcessUtility hook: before a statement that needs a database free of other sessions
//! runs — DROP DATABASE, ALTER DATABASE … RENAME TO or … SET TABLESPACE, and CREATE DATABASE
//! (for its template) — the worker connected to that database is told to leave (SIGTERM) and
//! none is started there for a while, so the statement succeeds without FORCE. PostgreSQL 15
//! waits a few seconds for other backends to leave and only signals autovacuum itself.

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
                    Some(template) => pg_sys::defGetString(template) as *const c_char,
                    None => c"template1".as_ptr(),
                })
            }
            _ => None,
        }
    }
}

unsafe fn before(pstmt: *mut pg_sys::PlannedStmt) {
    let statement = unsafe { (*pstmt).utilityStmt };
    if statement.is_null() {
        return;
    }
    let Some(name) = (unsafe { database_needed(statement) }) else {
        return;
    };
    if name.is_null() {
        return;
    }
    let dboid = unsafe { pg_sys::get_database_oid(name, true) };
    if dboid != pg_sys::InvalidOid {
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
        before(pstmt);
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
        before(pstmt);
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
