//! jsonb_ttl: TTL indexes for tables of JSONB documents.
//!
//! The layers, top to bottom. A module imports only from its own row or the rows below, never
//! from this file, and no two modules import each other, directly or round a circle; a folder
//! is one module. `scripts/structure.py` (the first step of `make test`) reads this block and
//! checks it against the code; docs/architecture.md says what each module owns.
//!
//! ```text
//! SQL face      api
//! the work      create alter expire_now preview field/ worker/ launcher/
//! a batch       batch_frame
//! the options   spec advise held hide touch tracking partitions brake controls origin
//!               shard_targets archive/ field_dates citus_sync
//! statements    deleter/ build filter/ table
//! the catalog   catalog/
//! SQL text      reference row_ttl functions zone
//! the server    extension owner planner registry budget hooks undeletable citus throttle
//!               stats/ deadline leaf_check leaf_range
//! ground        error read txn bgw gucs preload jsonb_scalar generic_plan syscache leaf_pages
//! ```
//!
//! Below them all, the pure crate `jsonb_ttl_core` (core/: parse, path, batch_size, purge,
//! marks, btree_page, touch, row_ttl, wal_rate, advice), which knows nothing of PostgreSQL.

use pgrx::prelude::*;

// 0.2.0 needs PostgreSQL 15 or later (CREATE OR REPLACE TRIGGER, the raw parser's modes,
// MarkGUCPrefixReserved…); the pg13/pg14 features of pgrx stay declared but do not build.
#[cfg(any(feature = "pg13", feature = "pg14"))]
compile_error!("jsonb_ttl supports PostgreSQL 15, 16, 17 and 18");

pub mod advise;
pub mod alter;
pub mod api;
pub mod archive;
pub mod batch_frame;
pub mod bgw;
pub mod brake;
pub mod budget;
pub mod build;
pub mod catalog;
pub mod citus;
pub mod citus_sync;
pub mod controls;
pub mod create;
pub mod deadline;
pub mod deleter;
pub mod error;
pub mod expire_now;
pub mod extension;
pub mod field;
pub mod field_dates;
pub mod filter;
pub mod functions;
pub mod generic_plan;
pub mod gucs;
pub mod held;
pub mod hide;
pub mod hooks;
pub mod jsonb_scalar;
pub mod launcher;
pub mod leaf_check;
pub mod leaf_pages;
pub mod leaf_range;
pub mod origin;
pub mod owner;
pub mod partitions;
pub mod planner;
pub mod preload;
pub mod preview;
pub mod read;
pub mod reference;
pub mod registry;
pub mod row_ttl;
pub mod shard_targets;
pub mod spec;
pub mod stats;
pub mod syscache;
pub mod table;
pub mod throttle;
pub mod touch;
pub mod tracking;
pub mod txn;
pub mod undeletable;
pub mod worker;
pub mod zone;

::pgrx::pg_module_magic!(name, version);

pgrx::extension_sql_file!("../sql/catalog.sql", name = "catalog", bootstrap);

/// The schema of the internals (`schema = "jsonb_ttl_internal"` on their `#[pg_extern]`s). It is
/// created by sql/catalog.sql, which runs first: the `CREATE SCHEMA IF NOT EXISTS` pgrx adds
/// for it then finds it a member of the extension (PostgreSQL refuses IF NOT EXISTS in an
/// extension script when the object exists and is not a member).
#[pg_schema]
mod jsonb_ttl_internal {}
pgrx::extension_sql_file!("../sql/api.sql", name = "api", finalize);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    quiet_rust_backtraces();
    gucs::register();
    planner::install();
    #[cfg(not(any(feature = "pg13", feature = "pg14")))]
    unsafe {
        pgrx::pg_sys::MarkGUCPrefixReserved(c"jsonb_ttl".as_ptr());
    }
    if unsafe { pgrx::pg_sys::process_shared_preload_libraries_in_progress } {
        preload::mark_preloaded();
        registry::init();
        budget::init();
        stats::init();
        throttle::init();
        deadline::init();
        hooks::install();
        // pg_upgrade's servers (binary-upgrade mode: `postgres -b`, before any library is
        // loaded) run no worker: nothing may change a table between pg_upgrade's steps
        if !unsafe { pgrx::pg_sys::IsBinaryUpgrade } {
            launcher::register();
        }
    }
}

/// Errors reach users without a Rust backtrace in their DETAIL, even when the server runs with
/// `RUST_BACKTRACE` set in its environment (pgrx captures one for every error raised through a
/// panic, and std reads `RUST_LIB_BACKTRACE` before `RUST_BACKTRACE`). Whoever wants them sets
/// `RUST_LIB_BACKTRACE=1` explicitly.
fn quiet_rust_backtraces() {
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // _PG_init runs before any thread of ours, in the postmaster or a backend
        std::env::set_var("RUST_LIB_BACKTRACE", "0");
    }
}

/// This module is required by `cargo pgrx test` invocations.
/// It must be visible at the root of your extension crate.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec!["shared_preload_libraries = 'jsonb_ttl'"]
    }
}
