//! The ProcessUtility hook: before DROP DATABASE runs, the worker connected to that database is
//! told to leave (SIGTERM), so the statement succeeds without FORCE. PostgreSQL 15's DROP
//! DATABASE waits a few seconds for other backends and only signals autovacuum itself.

use crate::registry;
use pgrx::pg_sys;
use pgrx::prelude::*;

static mut PREVIOUS: pg_sys::ProcessUtility_hook_type = None;

/// Installs the hook; from `_PG_init` while preloading.
pub fn install() {
    unsafe {
        PREVIOUS = pg_sys::ProcessUtility_hook;
        pg_sys::ProcessUtility_hook = Some(process_utility);
    }
}

unsafe fn before(pstmt: *mut pg_sys::PlannedStmt) {
    let statement = unsafe { (*pstmt).utilityStmt };
    if statement.is_null() || unsafe { (*statement).type_ } != pg_sys::NodeTag::T_DropdbStmt {
        return;
    }
    let drop = statement as *mut pg_sys::DropdbStmt;
    let dboid = unsafe { pg_sys::get_database_oid((*drop).dbname, true) };
    if dboid != pg_sys::InvalidOid {
        if let Some(pid) = registry::stop_worker(dboid) {
            debug1!("jsonb_ttl: asked worker {pid} to leave the database being dropped");
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
