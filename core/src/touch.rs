//! Touch (Cosmos DB's `_ts`): the value a write leaves at a TTL index's path inside a JSON
//! document, so that the row expires `expire_after` past its last INSERT or UPDATE.
//!
//! - A number stays a number: whole seconds, or milliseconds with `numeric_unit => 'ms'`
//!   (what Cosmos DB's `_ts` and a JavaScript `Date.now()` hold).
//! - Anything else becomes an ISO 8601 string in UTC, to the microsecond, with its offset
//!   (`2026-11-23T18:22:36.123456Z`), which reads the same whatever `time_zone` the index has.
//! - Missing objects on the way are created; a value on the way that is not an object (or
//!   null) is an error, since writing there would destroy it.

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

/// Sets the value at `keys` in `doc` to the time `unix_micros` (see the module's text). `Err`
/// names the part of the path that holds something other than an object.
pub fn touch(
    doc: &mut Value,
    keys: &[String],
    unix_micros: i64,
    unit: NumericUnit,
) -> Result<(), String> {
    if keys.is_empty() {
        return Err("the document itself".into());
    }
    set(doc, keys, 0, unix_micros, unit)
}

/// [`touch`] from `keys[depth]` on, `at` being the value that holds it.
fn set(
    at: &mut Value,
    keys: &[String],
    depth: usize,
    unix_micros: i64,
    unit: NumericUnit,
) -> Result<(), String> {
    if at.is_null() {
        *at = Value::Object(Map::new());
    }
    let Value::Object(object) = at else {
        return Err(match depth {
            0 => "the document itself".into(),
            _ => keys[..depth].join("."),
        });
    };
    let child = object.entry(keys[depth].clone()).or_insert(Value::Null);
    if depth + 1 < keys.len() {
        return set(child, keys, depth + 1, unix_micros, unit);
    }
    *child = match child {
        Value::Number(_) => Value::from(epoch(unix_micros, unit)),
        _ => Value::String(iso_utc(unix_micros)),
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // 2026-11-23T18:22:36.123456Z
    const NOW: i64 = 1_795_458_156_123_456;

    fn keys(path: &str) -> Vec<String> {
        path.split('.').map(String::from).collect()
    }

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
    fn cases() {
        let s = NumericUnit::Seconds;
        let ms = NumericUnit::Milliseconds;
        let iso = "2026-11-23T18:22:36.123456Z";
        // (document, path, unit, document after)
        let cases = [
            (json!({}), "ts", s, Ok(json!({"ts": iso}))),
            (json!(null), "ts", s, Ok(json!({"ts": iso}))),
            (json!({"ts": "2019-01-01"}), "ts", s, Ok(json!({"ts": iso}))),
            (json!({"ts": 1}), "ts", s, Ok(json!({"ts": 1_795_458_156}))),
            (
                json!({"ts": 1.5}),
                "ts",
                ms,
                Ok(json!({"ts": 1_795_458_156_123_i64})),
            ),
            (
                json!({"ts": null, "a": 1}),
                "ts",
                s,
                Ok(json!({"ts": iso, "a": 1})),
            ),
            (json!({"ts": true}), "ts", s, Ok(json!({"ts": iso}))),
            (
                json!({}),
                "meta.seen",
                s,
                Ok(json!({"meta": {"seen": iso}})),
            ),
            (
                json!({"meta": null}),
                "meta.seen",
                s,
                Ok(json!({"meta": {"seen": iso}})),
            ),
            (
                json!({"meta": {"seen": 5, "x": 1}}),
                "meta.seen",
                s,
                Ok(json!({"meta": {"seen": 1_795_458_156, "x": 1}})),
            ),
            (json!({}), "a.b.c", s, Ok(json!({"a": {"b": {"c": iso}}}))),
            (
                json!({"a": {"b": "text"}}),
                "a.b.c",
                s,
                Err("a.b".to_string()),
            ),
            (
                json!({"meta": [1]}),
                "meta.seen",
                s,
                Err("meta".to_string()),
            ),
            (json!([1]), "ts", s, Err("the document itself".to_string())),
            (
                json!("text"),
                "a.b",
                s,
                Err("the document itself".to_string()),
            ),
        ];
        for (before, path, unit, expected) in cases {
            let mut doc = before.clone();
            let result = touch(&mut doc, &keys(path), NOW, unit).map(|()| doc);
            assert_eq!(result, expected, "{before} at {path}");
        }
        assert!(touch(&mut json!({}), &[], NOW, s).is_err());
    }
}
