//! Field TTLs: a point in time inside a JSON document whose expiry removes a subtree of the
//! document (`doc #- '{otp}'`) instead of the row (docs/field_ttl.md). One-time codes,
//! reset tokens, temporary flags: the document stays, the field goes.
//!
//! A field TTL is a row of `jsonb_ttl_internal.ttl_field` (its table, its date's path, the
//! keys it removes, `expire_after`) and a btree index on the date, like a TTL index's, partial
//! on the date being there. The worker purges it as one more target of its table
//! ([`crate::catalog::Part::Field`]) with the same batches, limits, frame and owner as rows,
//! its statements an `UPDATE` in place of the `DELETE` ([`crate::deleter::update_head`]): removing the
//! subtree removes the date, so an updated document leaves the index and is never taken again.
//! Its index is found by what it is (its expression and predicate on each table the batches
//! change), never by name alone ([`crate::tracking::field_index_on`]).
//!
//! Where each piece lives: the rows, [`crate::catalog::load_fields`]; their indexes,
//! [`crate::tracking::field_targets`]; the dates a field TTL must never remove,
//! [`crate::field_dates`]; the statements, [`crate::deleter`]. This folder has the SQL
//! functions ([`api`]: `ttl_field_create`, `ttl_field_alter`, `ttl_field_drop`,
//! `ttl_field_expire_now`).

pub mod api;
