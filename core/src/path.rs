//! Resolving the `path` argument of `ttl_index_create` to a column and a JSON path. Pure Rust.
//!
//! `path` is a dotted attribute path; a segment holding a dot (or a double quote) is written in
//! double quotes, with `""` for a quote inside: `doc."a.b".c`. Its first segment may name a
//! column: a jsonb or json column (the rest is the path inside it), or a timestamptz /
//! timestamp / date / numeric / text column (nothing may follow). Otherwise the table must have
//! exactly one jsonb column and the whole path is inside it.

/// What a column can be to a TTL index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnKind {
    Jsonb,
    /// A `json` column: read as jsonb.
    Json,
    /// A `text`, `varchar` or `char` column: read with the string grammar.
    Text,
    Timestamptz,
    Timestamp,
    Date,
    /// Any integer, numeric or float column: a Unix time.
    Number,
    /// Any other type: not usable.
    Other,
}

/// One column of the table, as the catalog describes it.
#[derive(Clone, Debug)]
pub struct Column {
    pub name: String,
    pub kind: ColumnKind,
    /// The type's name, for messages.
    pub type_name: String,
}

/// A resolved path: the column and the keys to follow inside it (empty for a plain column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub column: String,
    pub kind: ColumnKind,
    pub json_path: Vec<String>,
}

/// Why a path was refused; the SQL layer maps each kind to a SQLSTATE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathErrorKind {
    /// Bad syntax: empty path or segment, unbalanced quotes.
    Syntax,
    /// No jsonb column to look in.
    NoJsonbColumn,
    /// Several jsonb columns and none named.
    Ambiguous,
    /// The named column's type cannot hold a point in time, or something follows a plain column.
    WrongType,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathError {
    pub kind: PathErrorKind,
    pub message: String,
    pub hint: String,
}

fn error(kind: PathErrorKind, message: String, hint: &str) -> PathError {
    PathError {
        kind,
        message,
        hint: hint.to_string(),
    }
}

const QUOTING_HINT: &str =
    "Separate segments with dots; write a segment that holds a dot in double quotes, as in doc.\"a.b\".c.";

/// Splits a dotted path into its segments, unquoting `"…"` segments.
pub fn split(path: &str) -> Result<Vec<String>, PathError> {
    if path.is_empty() {
        return Err(error(
            PathErrorKind::Syntax,
            "path must not be empty".into(),
            QUOTING_HINT,
        ));
    }
    let mut segments = Vec::new();
    let mut chars = path.chars().peekable();
    loop {
        let mut segment = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        segment.push('"');
                    }
                    Some('"') => break,
                    Some(c) => segment.push(c),
                    None => {
                        return Err(error(
                            PathErrorKind::Syntax,
                            format!("unterminated quoted segment in path: {path}"),
                            QUOTING_HINT,
                        ))
                    }
                }
            }
            if !matches!(chars.peek(), None | Some('.')) {
                return Err(error(
                    PathErrorKind::Syntax,
                    format!("unexpected character after a quoted segment in path: {path}"),
                    QUOTING_HINT,
                ));
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == '.' {
                    break;
                }
                if c == '"' {
                    return Err(error(
                        PathErrorKind::Syntax,
                        format!("unexpected double quote inside a segment of path: {path}"),
                        QUOTING_HINT,
                    ));
                }
                segment.push(c);
                chars.next();
            }
        }
        if segment.is_empty() {
            return Err(error(
                PathErrorKind::Syntax,
                format!("empty segment in path: {path}"),
                QUOTING_HINT,
            ));
        }
        segments.push(segment);
        match chars.next() {
            None => return Ok(segments),
            Some('.') => continue,
            Some(_) => unreachable!("a segment ends at a dot or at the end"),
        }
    }
}

/// Resolves a path against the table's columns.
pub fn resolve(path: &str, columns: &[Column]) -> Result<Resolved, PathError> {
    let segments = split(path)?;
    if let Some(column) = columns.iter().find(|c| c.name == segments[0]) {
        let rest = segments[1..].to_vec();
        return match column.kind {
            ColumnKind::Jsonb | ColumnKind::Json => Ok(Resolved {
                column: column.name.clone(),
                kind: column.kind,
                json_path: rest,
            }),
            ColumnKind::Other => Err(error(
                PathErrorKind::WrongType,
                format!(
                    "column \"{}\" has type {}, which cannot hold a point in time",
                    column.name, column.type_name
                ),
                "Use a jsonb or json column (with a path inside it), or a timestamptz, timestamp, date, numeric or text column.",
            )),
            _ if !rest.is_empty() => Err(error(
                PathErrorKind::WrongType,
                format!(
                    "column \"{}\" has type {}; nothing can follow it in the path",
                    column.name, column.type_name
                ),
                "Only a jsonb or json column can be followed by a path inside it.",
            )),
            kind => Ok(Resolved {
                column: column.name.clone(),
                kind,
                json_path: Vec::new(),
            }),
        };
    }
    let jsonb: Vec<&Column> = columns
        .iter()
        .filter(|c| c.kind == ColumnKind::Jsonb)
        .collect();
    match jsonb.as_slice() {
        [only] => Ok(Resolved {
            column: only.name.clone(),
            kind: ColumnKind::Jsonb,
            json_path: segments,
        }),
        [] => Err(error(
            PathErrorKind::NoJsonbColumn,
            format!(
                "\"{}\" is not a column of the table, and the table has no jsonb column",
                segments[0]
            ),
            "Name a json, timestamptz, timestamp, date, numeric or text column, or add a jsonb column.",
        )),
        _ => Err(error(
            PathErrorKind::Ambiguous,
            format!(
                "\"{}\" is not a column of the table, and the table has several jsonb columns",
                segments[0]
            ),
            "Start the path with the jsonb column to look in, as in doc.creationDate.",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, kind: ColumnKind) -> Column {
        Column {
            name: name.into(),
            kind,
            type_name: format!("{kind:?}").to_lowercase(),
        }
    }

    #[test]
    fn split_table() {
        let ok: &[(&str, &[&str])] = &[
            ("creationDate", &["creationDate"]),
            ("doc.a.b", &["doc", "a", "b"]),
            ("doc.\"a.b\".c", &["doc", "a.b", "c"]),
            ("\"a\"\"b\"", &["a\"b"]),
            ("\"\u{e9}t\u{e9}\".x", &["\u{e9}t\u{e9}", "x"]),
            ("a b.c d", &["a b", "c d"]),
            ("\"'; DROP TABLE x; --\"", &["'; DROP TABLE x; --"]),
        ];
        for (path, expected) in ok {
            assert_eq!(split(path).unwrap(), *expected, "{path}");
        }
        for bad in [
            "", ".", "a.", ".a", "a..b", "\"a", "\"a\"b", "a\"b", "\"\"", "a.\"\"",
        ] {
            assert_eq!(
                split(bad).unwrap_err().kind,
                PathErrorKind::Syntax,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn resolve_table() {
        let one = [col("id", ColumnKind::Number), col("doc", ColumnKind::Jsonb)];
        let two = [
            col("doc", ColumnKind::Jsonb),
            col("meta", ColumnKind::Jsonb),
        ];
        let none = [
            col("id", ColumnKind::Number),
            col("at", ColumnKind::Timestamptz),
            col("note", ColumnKind::Other),
        ];
        let r = |column: &str, kind, path: &[&str]| Resolved {
            column: column.into(),
            kind,
            json_path: path.iter().map(|s| s.to_string()).collect(),
        };
        use ColumnKind::*;
        assert_eq!(
            resolve("creationDate", &one),
            Ok(r("doc", Jsonb, &["creationDate"]))
        );
        assert_eq!(
            resolve("doc.creationDate", &one),
            Ok(r("doc", Jsonb, &["creationDate"]))
        );
        assert_eq!(resolve("doc", &one), Ok(r("doc", Jsonb, &[])));
        assert_eq!(resolve("id", &one), Ok(r("id", Number, &[])));
        assert_eq!(resolve("meta.a.b", &two), Ok(r("meta", Jsonb, &["a", "b"])));
        assert_eq!(resolve("at", &none), Ok(r("at", Timestamptz, &[])));
        let kind = |p: &str, cols: &[Column]| resolve(p, cols).unwrap_err().kind;
        assert_eq!(kind("a.b", &two), PathErrorKind::Ambiguous);
        assert_eq!(kind("x", &none), PathErrorKind::NoJsonbColumn);
        assert_eq!(kind("note", &none), PathErrorKind::WrongType);
        assert_eq!(kind("at.x", &none), PathErrorKind::WrongType);
        assert_eq!(kind("id.x", &one), PathErrorKind::WrongType);
        assert_eq!(kind("doc..x", &one), PathErrorKind::Syntax);
    }
}
