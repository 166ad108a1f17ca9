//! The worker's statements prepared once and kept across transactions and passes (a batch's
//! DELETE, a probe, the lock of a TTL index's definition), each with the SQL it was prepared
//! from: a rename changes the SQL, and the statement is prepared again.

use pgrx::prelude::*;
use pgrx::spi::OwnedPreparedStatement;
use std::collections::HashMap;

/// A statement prepared once and kept across transactions, with the SQL it was prepared from
/// (a rename changes the SQL and the statement is prepared again).
pub(super) type Prepared = (String, OwnedPreparedStatement);

/// Makes sure `cache` holds the statement for `key`, prepared from `sql` (again if the SQL
/// changed).
pub(super) fn prepare_into<K: std::hash::Hash + Eq + Copy>(
    cache: &mut HashMap<K, Prepared>,
    key: K,
    sql: &str,
    args: &[pgrx::PgBuiltInOids],
) {
    if cache
        .get(&key)
        .is_none_or(|(prepared_sql, _)| prepared_sql != sql)
    {
        let args: Vec<_> = args.iter().map(|t| t.oid()).collect();
        let statement = Spi::connect(|client| client.prepare_mut(sql, &args).map(|s| s.keep()))
            .unwrap_or_else(|e| error!("cannot prepare {sql}: {e}"));
        cache.insert(key, (sql.to_string(), statement));
    }
}

/// The statement for `key` in `cache`, prepared now if missing or stale.
pub(super) fn prepared<'a, K: std::hash::Hash + Eq + Copy>(
    cache: &'a mut HashMap<K, Prepared>,
    key: K,
    sql: &str,
    args: &[pgrx::PgBuiltInOids],
) -> &'a OwnedPreparedStatement {
    prepare_into(cache, key, sql, args);
    &cache[&key].1
}
