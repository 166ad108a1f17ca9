//! Per-row TTL (Cosmos DB's `ttl` on an item): a number of seconds in the row that overrides
//! the TTL index's `expire_after` for that row.
//!
//! - a finite number ≥ 0: the row expires that many seconds past its reference time;
//! - `-1`: the row never expires;
//! - anything else (absent, null, a string, another negative number): the row falls back to
//!   the index's `expire_after`.

/// Microseconds in a second.
const MICROS: f64 = 1_000_000.0;

/// What the value of a row's TTL field (a JSON number or a numeric column, as the text
/// PostgreSQL prints for it) means: `Some(seconds)` for a TTL of its own, `Some(-1.0)` for
/// never, `None` to fall back to `expire_after`.
pub fn row_seconds(number: &str) -> Option<f64> {
    let seconds: f64 = number.trim().parse().ok()?;
    (seconds.is_finite() && (seconds >= 0.0 || seconds == -1.0)).then_some(seconds)
}

/// When a row with reference time `reference` (microseconds) and a TTL of its own of
/// `seconds` expires: `None` for never (`-1`, any negative number, or past the end of
/// time).
pub fn expires_at(reference: i64, seconds: f64) -> Option<i64> {
    // (NaN is neither, and never expires either)
    if seconds.is_nan() || seconds < 0.0 {
        return None;
    }
    let micros = (seconds * MICROS).round();
    if micros >= i64::MAX as f64 {
        return None;
    }
    reference.checked_add(micros as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds() {
        let cases = [
            ("3600", Some(3600.0)),
            ("0", Some(0.0)),
            ("1.5", Some(1.5)),
            ("-1", Some(-1.0)),
            ("-1.0", Some(-1.0)),
            ("-2", None),
            ("-0.5", None),
            ("NaN", None),
            ("Infinity", None),
            ("1e400", None),
            ("", None),
            ("abc", None),
            (" 60 ", Some(60.0)),
        ];
        for (text, expected) in cases {
            assert_eq!(row_seconds(text), expected, "{text:?}");
        }
    }

    #[test]
    fn expiry() {
        assert_eq!(expires_at(1_000_000, 1.0), Some(2_000_000));
        assert_eq!(expires_at(1_000_000, 0.0), Some(1_000_000));
        assert_eq!(expires_at(1_000_000, 0.0000015), Some(1_000_002));
        assert_eq!(expires_at(-5_000_000, 2.0), Some(-3_000_000));
        assert_eq!(expires_at(1_000_000, -1.0), None);
        assert_eq!(expires_at(1_000_000, f64::NAN), None);
        assert_eq!(expires_at(i64::MAX - 10, 1.0), None);
        assert_eq!(expires_at(0, 1e300), None);
        // 2^63 microseconds, the first that does not fit: never, not the end of time
        assert_eq!(expires_at(0, 2f64.powi(63) / MICROS), None);
        assert_eq!(
            expires_at(0, 9_000_000_000_000.0),
            Some(9_000_000_000_000_000_000)
        );
    }
}
