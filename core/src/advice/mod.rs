//! Mistakes a TTL index accepts but that leave it matching nothing (or everything), told at
//! creation: a path written in JSONPath or SQL syntax, numbers in another unit than
//! `numeric_unit`, rows with no point in time at the path (a typo of a key), and local times
//! without an offset read as UTC. Pure: the extension samples the table and passes the counts
//! here.

mod path_syntax;

pub use path_syntax::{dotted_path, path_syntax};

use crate::parse::NumericUnit;
use crate::path::{split, Resolved};

/// A NOTICE (or a WARNING when `warning`) to raise, with its HINT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Advice {
    pub message: String,
    pub hint: String,
    pub warning: bool,
}

/// Numbers from this one up are read as milliseconds since 1970 when they look like a Unix
/// time: 1e11 seconds is the year 5138, 1e11 milliseconds is March 1973.
pub const MILLIS_FROM: f64 = 1e11;
/// And from this one up as microseconds (1e14 ms is the year 5138, 1e14 µs March 1973).
pub const MICROS_FROM: f64 = 1e14;

/// The scale of a Unix time, by the ranges above (the extension counts the sampled numbers in
/// each range in SQL, with these constants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Seconds,
    Milliseconds,
    Microseconds,
}

impl Scale {
    fn name(self) -> &'static str {
        match self {
            Scale::Seconds => "seconds",
            Scale::Milliseconds => "milliseconds",
            Scale::Microseconds => "microseconds",
        }
    }
}

/// Advice when most of the numbers sampled at `path` (`counts` of each [`Scale`], in the
/// order seconds, milliseconds, microseconds) are in another unit than `unit`.
pub fn numeric_unit(path: &str, unit: NumericUnit, counts: [u64; 3]) -> Option<Advice> {
    let numbers: u64 = counts.iter().sum();
    let expected = match unit {
        NumericUnit::Seconds => Scale::Seconds,
        NumericUnit::Milliseconds => Scale::Milliseconds,
    };
    let (scale, count) = [Scale::Seconds, Scale::Milliseconds, Scale::Microseconds]
        .into_iter()
        .zip(counts)
        .max_by_key(|(_, count)| *count)?;
    if numbers == 0 || scale == expected || count * 2 <= numbers {
        return None;
    }
    let read_as = expected.name();
    let (effect, hint, warning) = match scale {
        Scale::Milliseconds => (
            "they expire thousands of years from now".to_string(),
            "Read them as milliseconds since 1970: ttl_index_alter('…', numeric_unit => 'ms').".to_string(),
            false,
        ),
        Scale::Seconds => (
            "they are all in January 1970: each row expires at once".to_string(),
            "Read them as seconds since 1970: ttl_index_pause('…') now, then ttl_index_alter('…', numeric_unit => 's').".to_string(),
            true,
        ),
        Scale::Microseconds => (
            "jsonb_ttl reads numbers as seconds or milliseconds".to_string(),
            "Store seconds or milliseconds since 1970 (or an ISO 8601 string) at the path.".to_string(),
            false,
        ),
    };
    Some(Advice {
        message: format!(
            "{count} of {numbers} sampled numbers at path '{path}' look like {} since 1970 but \
             are read as {read_as}: {effect}",
            scale.name()
        ),
        hint,
        warning,
    })
}

/// Advice when most of the `dated` sampled strings at `path` are times of day with no offset
/// (`naive` of them), read as UTC because the TTL index has no `time_zone`: a writer that puts
/// local wall times there (a naive `datetime`, `new Date().toLocaleString()`) has them read
/// hours off, all expiring early or late by the zone's offset. `zone`: the table owner's default
/// TimeZone, suggested when it is not UTC.
pub fn naive_strings(path: &str, naive: u64, dated: u64, zone: Option<&str>) -> Option<Advice> {
    if naive == 0 || naive * 2 <= dated {
        return None;
    }
    let suggested = zone.unwrap_or("Area/City");
    Some(Advice {
        message: format!(
            "{naive} of {dated} sampled dates at path '{path}' are local times with no offset: \
             they are read as UTC"
        ),
        hint: format!(
            "If they are another zone's wall times, say which: ttl_index_alter('…', time_zone => \
             '{}'); a writer that can should add the offset (Z or ±HH:MM).",
            suggested.replace('\'', "''")
        ),
        warning: false,
    })
}

/// Advice when `unreadable` of `sampled` rows have no point in time at `path` (`resolved`):
/// they never expire. `keys`: the keys the sampled documents hold where the last key of the
/// path should be, the most frequent first (empty for a plain column).
pub fn unreadable(
    path: &str,
    resolved: &Resolved,
    sampled: u64,
    unreadable: u64,
    keys: &[String],
) -> Option<Advice> {
    if unreadable == 0 || sampled == 0 {
        return None;
    }
    let last = resolved.json_path.last();
    let near = last.and_then(|last| {
        keys.iter()
            .find(|key| *key != last && similar(key, last))
            .map(|key| (last, key))
    });
    let hint = match near {
        Some((last, key)) => {
            let mut segments = split(path).unwrap_or_default();
            segments.pop();
            segments.push(key.clone());
            let meant = path_syntax::dotted(&segments);
            format!(
                "The documents have the key \"{key}\", not \"{last}\": did you mean path '{meant}'? \
                 (ttl_index_alter('…', path => '{}'))",
                meant.replace('\'', "''")
            )
        }
        None if unreadable == sampled && !keys.is_empty() => format!(
            "The sampled documents have these keys there: {}.",
            keys.iter()
                .take(8)
                .map(|key| format!("\"{key}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => "A row without one is kept until it gets one; ttl_stats.rows_never_expire \
                 counts them."
            .to_string(),
    };
    Some(Advice {
        message: format!(
            "{unreadable} of {sampled} sampled rows have no point in time at path '{path}': they \
             never expire"
        ),
        hint,
        warning: false,
    })
}

/// Whether two keys differ only by case, `_`, `-` and spaces, or by one letter.
fn similar(a: &str, b: &str) -> bool {
    let fold = |s: &str| -> Vec<char> {
        s.chars()
            .filter(|c| !matches!(c, '_' | '-' | ' '))
            .flat_map(char::to_lowercase)
            .collect()
    };
    let (a, b) = (fold(a), fold(b));
    a == b || (a.len().min(b.len()) >= 4 && edit_distance(&a, &b) <= 1)
}

/// Levenshtein distance.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != cb);
            current.push(substitute.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::ColumnKind;

    #[test]
    fn numeric_unit_advice() {
        use NumericUnit::*;
        // (unit, [seconds, ms, µs], advice?, warning)
        let cases = [
            (Seconds, [0, 100, 0], true, false),
            (Seconds, [100, 0, 0], false, false),
            (Seconds, [50, 50, 0], false, false),
            (Seconds, [40, 60, 0], true, false),
            (Seconds, [0, 0, 10], true, false),
            (Milliseconds, [100, 0, 0], true, true),
            (Milliseconds, [0, 100, 0], false, false),
            (Milliseconds, [0, 0, 0], false, false),
        ];
        for (unit, counts, advised, warning) in cases {
            let got = numeric_unit("at", unit, counts);
            assert_eq!(got.is_some(), advised, "{unit:?} {counts:?}");
            if let Some(advice) = got {
                assert_eq!(advice.warning, warning, "{advice:?}");
            }
        }
        let advice = numeric_unit("at", Seconds, [0, 100, 0]).unwrap();
        assert!(advice.hint.contains("numeric_unit => 'ms'"), "{advice:?}");
        assert!(advice.message.starts_with("100 of 100 sampled numbers"));
    }

    fn json(path: &[&str]) -> Resolved {
        Resolved {
            column: "doc".into(),
            kind: ColumnKind::Jsonb,
            json_path: path.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn naive_strings_advice() {
        // (naive, dated, advice?)
        let cases = [
            (0, 0, false),
            (0, 10, false),
            (5, 10, false),
            (6, 10, true),
            (10, 10, true),
        ];
        for (naive, dated, advised) in cases {
            assert_eq!(
                naive_strings("at", naive, dated, None).is_some(),
                advised,
                "{naive} {dated}"
            );
        }
        let advice = naive_strings("at", 10, 10, Some("America/New_York")).unwrap();
        assert!(
            advice.hint.contains("time_zone => 'America/New_York'"),
            "{advice:?}"
        );
        assert!(
            advice
                .message
                .starts_with("10 of 10 sampled dates at path 'at'"),
            "{advice:?}"
        );
        assert!(naive_strings("at", 1, 1, None)
            .unwrap()
            .hint
            .contains("'Area/City'"));
    }

    #[test]
    fn unreadable_advice() {
        let keys = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let typo = unreadable(
            "created_at",
            &json(&["created_at"]),
            1000,
            1000,
            &keys(&["kind", "createdAt"]),
        )
        .unwrap();
        assert!(
            typo.hint.contains("did you mean path 'createdAt'"),
            "{typo:?}"
        );
        assert!(
            typo.hint
                .contains("ttl_index_alter('…', path => 'createdAt')"),
            "{typo:?}"
        );
        let nested = unreadable(
            "meta.expires_at",
            &json(&["meta", "expires_at"]),
            10,
            10,
            &keys(&["expiresAt"]),
        )
        .unwrap();
        assert!(nested.hint.contains("'meta.expiresAt'"), "{nested:?}");
        let listed = unreadable("ts", &json(&["ts"]), 10, 10, &keys(&["kind", "user"])).unwrap();
        assert!(listed.hint.contains("\"kind\", \"user\""), "{listed:?}");
        let some = unreadable("ts", &json(&["ts"]), 10, 3, &keys(&["ts", "kind"])).unwrap();
        assert!(some.hint.contains("rows_never_expire"), "{some:?}");
        assert!(some.message.starts_with("3 of 10 sampled rows"));
        assert_eq!(unreadable("ts", &json(&["ts"]), 10, 0, &[]), None);
        assert_eq!(unreadable("ts", &json(&["ts"]), 0, 0, &[]), None);
        assert!(!similar("at", "id"));
        assert!(similar("expiresAt", "expires_at"));
        assert!(similar("expiry", "expiri"));
    }
}
