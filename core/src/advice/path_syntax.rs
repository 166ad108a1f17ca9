//! A path written in JSONPath or SQL syntax, which a TTL index would read as keys named `$`,
//! `doc->>'at'`…: the dotted path meant, and the advice that gives it.

use super::Advice;
use crate::path::split;

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
    Some(segments.map(|segments| dotted(&segments)))
}

/// Segments written as a dotted path: a segment holding a dot or a double quote in double
/// quotes (see `crate::path::split`).
pub(super) fn dotted(segments: &[String]) -> String {
    segments
        .iter()
        .map(|s| match s.contains(['.', '"']) || s.is_empty() {
            true => format!("\"{}\"", s.replace('"', "\"\"")),
            false => s.clone(),
        })
        .collect::<Vec<_>>()
        .join(".")
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
            "Write the path with dots: '{meant}' (ttl_index_alter('…', path => '{}')).",
            meant.replace('\'', "''")
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

#[cfg(test)]
mod tests {
    use super::*;

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
        // the fix as a statement, the path a SQL literal
        assert!(
            advice
                .hint
                .contains("ttl_index_alter('…', path => 'doc.at')"),
            "{advice:?}"
        );
        let quoted = path_syntax("$.\"it's\"").unwrap();
        assert!(quoted.hint.contains("path => '"), "{quoted:?}");
        assert!(quoted.hint.contains("it''s"), "{quoted:?}");
        assert!(advice.message.contains("\"doc->>'at'\""), "{advice:?}");
        assert!(path_syntax("$.a[0].at").unwrap().hint.contains("array"));
        assert_eq!(path_syntax("createdAt"), None);
    }
}
