//! Touch (Cosmos DB's `_ts`): the value a write leaves at a TTL index's path inside a JSON
//! document, so that the row expires `expire_after` past its last INSERT or UPDATE.
//!
//! - A number stays a number: whole seconds, or milliseconds with `numeric_unit => 'ms'`
//!   (what Cosmos DB's `_ts` and a JavaScript `Date.now()` hold).
//! - Anything else becomes an ISO 8601 string in UTC, to the microsecond, with its offset
//!   (`2026-11-23T18:22:36.123456Z`), which reads the same whatever `time_zone` the index has.
//! - Missing objects on the way are created ([`nested`]); a value on the way that is not an
//!   object (or null) is an error, since writing there would destroy it. The trigger walks the
//!   path and changes the document with PostgreSQL's own `jsonb_set` (src/touch.rs): the rest of
//!   the document stays exactly as it was.

use crate::parse::NumericUnit;
use chrono::DateTime;
use serde_json::{Map, Value};

/// `unix_micros` (microseconds since 1970-01-01 UTC) as an ISO 8601 string in UTC.
pub fn iso_utc(unix_micros: i64) -> String {
    DateTime::from_timestamp_micros(unix_micros)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
        .unwrap_or_default()
}

/// `unix_micros` as a whole number of `unit`s since 1970, rounded down.
pub fn epoch(unix_micros: i64, unit: NumericUnit) -> i64 {
    match unit {
        NumericUnit::Seconds => unix_micros.div_euclid(1_000_000),
        NumericUnit::Milliseconds => unix_micros.div_euclid(1_000),
    }
}

/// The value a write leaves at the end of the path: the time as a number of `unit`s when the
/// value there is a number, else as an ISO 8601 string in UTC.
pub fn leaf(was_number: bool, unix_micros: i64, unit: NumericUnit) -> Value {
    match was_number {
        true => Value::from(epoch(unix_micros, unit)),
        false => Value::String(iso_utc(unix_micros)),
    }
}

/// `value` under the objects `keys` name, innermost last: `{"a": {"b": value}}` for
/// `["a", "b"]`; `value` itself for no keys. What a write puts where the path stops existing.
pub fn nested(keys: &[String], value: Value) -> Value {
    keys.iter().rev().fold(value, |inner, key| {
        let mut object = Map::new();
        object.insert(key.clone(), inner);
        Value::Object(object)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // 2026-11-23T18:22:36.123456Z
    const NOW: i64 = 1_795_458_156_123_456;

    #[test]
    fn formats() {
        assert_eq!(iso_utc(NOW), "2026-11-23T18:22:36.123456Z");
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(epoch(NOW, NumericUnit::Seconds), 1_795_458_156);
        assert_eq!(epoch(NOW, NumericUnit::Milliseconds), 1_795_458_156_123);
        assert_eq!(epoch(-1, NumericUnit::Seconds), -1);
        assert_eq!(epoch(-1, NumericUnit::Milliseconds), -1);
    }

    #[test]
    fn values() {
        let keys = |path: &str| -> Vec<String> { path.split('.').map(String::from).collect() };
        let iso = "2026-11-23T18:22:36.123456Z";
        assert_eq!(leaf(false, NOW, NumericUnit::Seconds), json!(iso));
        assert_eq!(leaf(true, NOW, NumericUnit::Seconds), json!(1_795_458_156));
        assert_eq!(
            leaf(true, NOW, NumericUnit::Milliseconds),
            json!(1_795_458_156_123_i64)
        );
        assert_eq!(nested(&[], json!(1)), json!(1));
        assert_eq!(nested(&keys("a"), json!(1)), json!({"a": 1}));
        assert_eq!(
            nested(&keys("a.b.c"), json!(iso)),
            json!({"a": {"b": {"c": iso}}})
        );
    }
}
