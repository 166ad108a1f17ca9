//! jsonb_ttl: TTL indexes for tables of JSONB documents.
//!
//! Modules, bottom to top (no module imports one above it):
//! - [`parse`]: the date-or-number grammar, pure Rust.
//! - [`jsonb_scalar`]: reading a jsonb datum in place.
//! - [`functions`]: `ttl_timestamp`, `ttl_is_datestring`.

use pgrx::prelude::*;

pub mod functions;
pub mod jsonb_scalar;
pub mod parse;

::pgrx::pg_module_magic!(name, version);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    #[cfg(not(any(feature = "pg13", feature = "pg14")))]
    unsafe {
        pgrx::pg_sys::MarkGUCPrefixReserved(c"jsonb_ttl".as_ptr());
    }
}

/// This module is required by `cargo pgrx test` invocations.
/// It must be visible at the root of your extension crate.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}
