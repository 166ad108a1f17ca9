//! The worker's statements prepared once and kept across transactions and passes (a batch's
//! DELETE, a probe, the lock of a TTL index's definition), each with the SQL it was prepared
//! from: a rename changes the SQL, and the statement is prepared again.

use crate::generic_plan::GenericPlan;
use pgrx::prelude::*;
use pgrx::spi::OwnedPreparedStatement;
use pgrx::PgBuiltInOids;
use std::collections::HashMap;

/// A statement prepared once and kept across transactions, with the SQL it was prepared from
/// (a rename changes the SQL and the statement is prepared again): pgrx's, or for a batch's
/// statements one with a generic plan ([`GenericPlan`]: no batch is planned again).
pub(super) type Prepared<S = OwnedPreparedStatement> = (String, S);

/// A statement that can be prepared and kept.
pub(super) trait Statement: Sized {
    fn prepare(sql: &str, args: &[PgBuiltInOids]) -> Result<Self, String>;
}

impl Statement for OwnedPreparedStatement {
    fn prepare(sql: &str, args: &[PgBuiltInOids]) -> Result<Self, String> {
        let args: Vec<_> = args.iter().map(|t| t.oid()).collect();
        Spi::connect(|client| client.prepare_mut(sql, &args).map(|s| s.keep()))
            .map_err(|e| e.to_string())
    }
}

impl Statement for GenericPlan {
    fn prepare(sql: &str, args: &[PgBuiltInOids]) -> Result<Self, String> {
        let args: Vec<_> = args.iter().map(|t| t.value()).collect();
        Spi::connect(|_| GenericPlan::prepare(sql, &args))
    }
}

/// Makes sure `cache` holds the statement for `key`, prepared from `sql` (again if the SQL
/// changed).
pub(super) fn prepare_into<K: std::hash::Hash + Eq + Copy, S: Statement>(
    cache: &mut HashMap<K, Prepared<S>>,
    key: K,
    sql: &str,
    args: &[PgBuiltInOids],
) {
    if cache
        .get(&key)
        .is_none_or(|(prepared_sql, _)| prepared_sql != sql)
    {
        let statement =
            S::prepare(sql, args).unwrap_or_else(|e| error!("cannot prepare {sql}: {e}"));
        cache.insert(key, (sql.to_string(), statement));
    }
}

/// The statement for `key` in `cache`, prepared now if missing or stale.
pub(super) fn prepared<'a, K: std::hash::Hash + Eq + Copy, S: Statement>(
    cache: &'a mut HashMap<K, Prepared<S>>,
    key: K,
    sql: &str,
    args: &[PgBuiltInOids],
) -> &'a S {
    prepare_into(cache, key, sql, args);
    &cache[&key].1
}
