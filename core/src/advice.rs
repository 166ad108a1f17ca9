//! Mistakes a TTL index accepts but that leave it matching nothing (or everything), told at
//! creation: a path written in JSONPath or SQL syntax, numbers in another unit than
//! `numeric_unit`, and rows with no point in time at the path (a typo of a key). Pure: the
//! extension samples the table and passes the counts here.

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

/// The scale a Unix time of magnitude `value` has, by the ranges above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Seconds,
    Milliseconds,
    Microseconds,
}

impl Scale {
    pub fn of(value: f64) -> Scale {
        match value.abs() {
            v if v >= MICROS_FROM => Scale::Microseconds,
            v if v >= MILLIS_FROM => Scale::Milliseconds,
            _ => Scale::Seconds,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Scale::Seconds => "seconds",
            Scale::Milliseconds => "milliseconds",
            Scale::Microseconds => "microseconds",
        }
    }
}

/// The dotted path meant by `path` when it is written in JSONPath (`$.a.at`, `$."a"`,
/// `$['a']`) or SQL (`doc->>'at'`, `doc -> 'a' ->> 'at'`, `doc #>> '{a,at}'`, `doc['at']`)
/// syntax, which a TTL index would read as keys named `$`, `doc->>'at'`…: `Some(None)` when it
/// is one of those but names an array element (a TTL index follows object keys only).
pub fn dotted_path(path: &str) -> Option<Option<String>> {
    let trimmed = path.trim();
    let jsonpath = trimmed
        .strip_prefix("strict ")
        .or_else(|| trimmed.strip_prefix("lax "))
        .unwrap_or(trimmed)
        .trim_start();
    let segments = if let Some(rest) = jsonpath.strip_prefix('$') {
        if !(rest.is_empty() || rest.starts_with('.') || rest.starts_with('[')) {
            return None; // a key that starts with $, such as Extended JSON's $date
        }
        subscripts(rest)?
    } else if let Some((column, rest)) = split_sql(trimmed) {
        let column = unquote(column.trim())?;
        rest.map(|rest| [vec![column], rest].concat())
    } else if let Some(open) = trimmed.find('[') {
        let column = unquote(trimmed[..open].trim())?;
        subscripts(&trimmed[open..])?.map(|rest| [vec![column], rest].concat())
    } else {
        return None;
    };
    if segments.as_ref().is_some_and(|s| s.is_empty()) {
        return None; // `$`: the whole document, which a dotted path names by its column
    }
    Some(segments.map(|segments| {
        segments
            .iter()
            .map(|s| match s.contains(['.', '"']) || s.is_empty() {
                true => format!("\"{}\"", s.replace('"', "\"\"")),
                false => s.clone(),
            })
            .collect::<Vec<_>>()
            .join(".")
    }))
}

/// `.a."b"['c'][0]` → `Some(Some([a, b, c]))`, `Some(None)` with an array index; `None` when it
/// cannot be read.
fn subscripts(mut rest: &str) -> Option<Option<Vec<String>>> {
    let mut segments = Vec::new();
    let mut array = false;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = match after.strip_prefix('"') {
                Some(quoted) => quoted.find('"')? + 2,
                None => after.find(['.', '[']).unwrap_or(after.len()),
            };
            segments.push(unquote(&after[..end])?);
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let inside = after[..end].trim();
            match unquote(inside) {
                Some(key) if inside.starts_with(['\'', '"']) => segments.push(key),
                _ => array = true,
            }
            rest = &after[end + 1..];
        } else {
            return None;
        }
    }
    Some((!array).then_some(segments))
}

/// `doc->>'at'` → `("doc", Some(Some([at])))`: the column before the first `->` or `#>`, and
/// the keys after it (`Some(None)` with an array index).
fn split_sql(path: &str) -> Option<(&str, Option<Vec<String>>)> {
    let at = [path.find("->"), path.find("#>")]
        .into_iter()
        .flatten()
        .min()?;
    let column = &path[..at];
    let mut rest = &path[at..];
    let mut segments = Vec::new();
    let mut array = false;
    while !rest.trim_start().is_empty() {
        rest = rest.trim_start();
        let operator = ["->>", "->", "#>>", "#>"]
            .into_iter()
            .find(|op| rest.starts_with(op))?;
        let operand = rest[operator.len()..].trim_start();
        let end = match operand.strip_prefix('\'') {
            Some(quoted) => quoted.find('\'')? + 2,
            None => operand.find(['-', '#', ' ']).unwrap_or(operand.len()),
        };
        let value = &operand[..end];
        if operator.starts_with('#') {
            let list = unquote(value)?;
            let list = list.strip_prefix('{')?.strip_suffix('}')?;
            for key in list.split(',') {
                let key = key.trim().trim_matches('"');
                match key.parse::<i64>() {
                    Ok(_) => array = true,
                    Err(_) => segments.push(key.to_string()),
                }
            }
        } else if value.starts_with('\'') {
            segments.push(unquote(value)?);
        } else {
            array = true; // doc -> 0
        }
        rest = &operand[end..];
    }
    Some((column, (!array).then_some(segments)))
}

/// A key as written in SQL or JSONPath: `'a'`, `"a"` or `a`.
fn unquote(text: &str) -> Option<String> {
    for quote in ['\'', '"'] {
        if let Some(inner) = text.strip_prefix(quote) {
            let inner = inner.strip_suffix(quote)?;
            let doubled = format!("{quote}{quote}");
            return Some(inner.replace(&doubled, &quote.to_string()));
        }
    }
    (!text.is_empty()).then(|| text.to_string())
}

/// Advice on `path` written in JSONPath or SQL syntax.
pub fn path_syntax(path: &str) -> Option<Advice> {
    let meant = dotted_path(path)?;
    let hint = match meant {
        Some(meant) => format!(
            "Write the path with dots: '{meant}' (drop the TTL index with ttl_index_drop('…') and \
             create it again with that path)."
        ),
        None => "A TTL index follows object keys, not array elements: keep the point in time \
                 under a key of an object."
            .to_string(),
    };
    Some(Advice {
        message: format!(
            "path '{path}' looks like JSONPath or SQL; jsonb_ttl reads it as keys {}",
            split(path)
                .map(|segments| segments
                    .iter()
                    .map(|s| format!("\"{s}\""))
                    .collect::<Vec<_>>()
                    .join(", then "))
                .unwrap_or_default()
        ),
        hint,
        warning: false,
    })
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
            format!("Pass numeric_unit => 'ms' to read them as milliseconds since 1970 (drop the TTL index with ttl_index_drop('…') and create it again)."),
            false,
        ),
        Scale::Seconds => (
            "they are all in January 1970: each row expires at once".to_string(),
            "Pass numeric_unit => 's' to read them as seconds since 1970 (ttl_index_pause('…') now, then drop the TTL index and create it again).".to_string(),
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
            let meant = segments
                .iter()
                .map(|s| match s.contains(['.', '"']) {
                    true => format!("\"{}\"", s.replace('"', "\"\"")),
                    false => s.clone(),
                })
                .collect::<Vec<_>>()
                .join(".");
            format!(
                "The documents have the key \"{key}\", not \"{last}\": did you mean path '{meant}'? \
                 (ttl_index_drop('…'), then ttl_index_create again)"
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
    fn dotted_paths() {
        let cases: &[(&str, Option<Option<&str>>)] = &[
            ("createdAt", None),
            ("doc.createdAt", None),
            ("at.$date", None),
            ("$date", None),
            ("a-b", None),
            ("$.createdAt", Some(Some("createdAt"))),
            ("$.meta.at", Some(Some("meta.at"))),
            ("lax $.meta.at", Some(Some("meta.at"))),
            ("$.\"a.b\".at", Some(Some("\"a.b\".at"))),
            ("$['meta']['at']", Some(Some("meta.at"))),
            ("$.a[0].at", Some(None)),
            ("$.a[*].at", Some(None)),
            ("doc->>'at'", Some(Some("doc.at"))),
            ("doc -> 'meta' ->> 'at'", Some(Some("doc.meta.at"))),
            ("doc #>> '{meta,at}'", Some(Some("doc.meta.at"))),
            ("doc #>> '{a,0,at}'", Some(None)),
            ("doc->0->>'at'", Some(None)),
            ("doc['at']", Some(Some("doc.at"))),
            ("doc['meta']['at']", Some(Some("doc.meta.at"))),
        ];
        for (path, expected) in cases {
            let got = dotted_path(path);
            assert_eq!(
                got.as_ref().map(|o| o.as_deref()),
                *expected,
                "dotted_path({path})"
            );
        }
    }

    #[test]
    fn path_syntax_advice() {
        let advice = path_syntax("doc->>'at'").unwrap();
        assert!(advice.hint.contains("'doc.at'"), "{advice:?}");
        assert!(advice.message.contains("\"doc->>'at'\""), "{advice:?}");
        assert!(path_syntax("$.a[0].at").unwrap().hint.contains("array"));
        assert_eq!(path_syntax("createdAt"), None);
    }

    #[test]
    fn scales() {
        let cases = [
            (1_700_000_000.0, Scale::Seconds),
            (99_999_999_999.0, Scale::Seconds),
            (1_700_000_000_000.0, Scale::Milliseconds),
            (1_700_000_000_000_000.0, Scale::Microseconds),
            (-1_700_000_000_000.0, Scale::Milliseconds),
            (0.0, Scale::Seconds),
        ];
        for (value, scale) in cases {
            assert_eq!(Scale::of(value), scale, "{value}");
        }
    }

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
