//! The planner pins of jsonb_ttl's own statements, in force while those statements are planned
//! and at no other time.
//!
//! The batches and probes filter on `now() - $1`, which the planner cannot estimate: on a table
//! without statistics (just created, just rewritten by ALTER TABLE) it would rather sort the
//! whole table than walk the TTL index, for every batch. And a batch's estimated cost (a third
//! of a large table) passes `jit_above_cost`: JIT then compiles every batch of a few
//! milliseconds, for 100 ms or more each. So our statements are planned with no sequential
//! scan, bitmap scan or sort, and no JIT. A `planner_hook` recognises them by the comment they
//! start with ([`MARKER`]) and sets the pins in a GUC nest level around their planning only:
//! the owner's triggers and policies that run during a batch plan their own queries under the
//! owner's own settings.

use pgrx::pg_sys;
use pgrx::prelude::*;
use std::ffi::{c_char, c_int, CStr};

/// The comment every statement jsonb_ttl plans for a batch or a probe starts with.
pub const MARKER: &str = "/* jsonb_ttl batch */ ";

/// The settings our statements are planned with.
pub const INDEX_PLANS: [(&CStr, &str); 4] = [
    (c"enable_seqscan", "off"),
    (c"enable_bitmapscan", "off"),
    (c"enable_sort", "off"),
    (c"jit", "off"),
];

static mut PREVIOUS: pg_sys::planner_hook_type = None;

/// Installs the hook; from `_PG_init`, in every backend that loads the library.
pub fn install() {
    unsafe {
        PREVIOUS = pg_sys::planner_hook;
        pg_sys::planner_hook = Some(plan);
    }
}

/// Whether `query_string` is one of our statements.
unsafe fn ours(query_string: *const c_char) -> bool {
    !query_string.is_null()
        && unsafe { CStr::from_ptr(query_string) }
            .to_bytes()
            .starts_with(MARKER.as_bytes())
}

#[pg_guard]
unsafe extern "C-unwind" fn plan(
    parse: *mut pg_sys::Query,
    query_string: *const c_char,
    cursor_options: c_int,
    bound_params: pg_sys::ParamListInfo,
) -> *mut pg_sys::PlannedStmt {
    unsafe {
        let level = ours(query_string).then(|| {
            let level = pg_sys::NewGUCNestLevel();
            for (name, value) in INDEX_PLANS {
                crate::gucs::override_setting(name, value);
            }
            level
        });
        let planned = match PREVIOUS {
            Some(previous) => previous(parse, query_string, cursor_options, bound_params),
            None => pg_sys::standard_planner(parse, query_string, cursor_options, bound_params),
        };
        if let Some(level) = level {
            pg_sys::AtEOXact_GUC(false, level);
        }
        planned
    }
}
