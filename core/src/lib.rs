//! The parts of jsonb_ttl that run without a server, in a crate of their own: they build and
//! test in seconds (`cargo test -p jsonb_ttl_core`), which is what lets `make mutants` check
//! that their tests catch every change to them.
//!
//! - [`parse`]: the date-or-number grammar of a TTL reference time.
//! - [`path`]: resolving a TTL index's path to a column and JSON keys.
//! - [`btree_page`]: a page of a TTL index's btree read from its bytes, for counting by page.
//! - [`batch_size`]: how many rows the worker's next batch asks for.
//! - [`marks`]: keys a walk of a TTL index leaves for the batches by key range after it.
//! - [`purge`]: batch after batch, whether the purge of one table goes on, and how.
//! - [`row_ttl`]: what a per-row TTL field means, and when such a row expires.
//! - [`touch`]: the time a write leaves in a document for `touch => true`.
//! - [`wal_rate`]: the WAL rate of the worker's deletes over a sliding window.

pub mod advice;
pub mod batch_size;
pub mod btree_page;
pub mod marks;
pub mod parse;
pub mod path;
pub mod purge;
pub mod row_ttl;
pub mod touch;
pub mod wal_rate;
