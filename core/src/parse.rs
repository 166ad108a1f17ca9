//! The date-or-number grammar of a TTL reference time. Pure Rust: no pgrx, no allocation.
//!
//! Every function here answers `Option<i64>`: microseconds since the PostgreSQL epoch
//! (2000-01-01 00:00:00 UTC), which is exactly a `timestamptz` datum, or `None` when the input
//! is not a point in time we accept. `None` never means "error": a value that does not parse is
//! simply not indexed and never expires.
//!
//! The accepted string grammar (documented in docs/functions.md, "What counts as a point in time"):
//!
//! ```text
//! date      = YYYY "-" MM "-" DD
//! datetime  = date ("T" | "t" | " ") HH ":" MM [ ":" SS [ ("." | ",") 1*DIGIT ] ] [ zone ]
//! zone      = "Z" | "z" | ("+" | "-") HH [ [ ":" ] MM ]
//! ```
//!
//! An hours-only offset (`+00`, `-08`) is what PostgreSQL's own `timestamptz` output writes.
//! Calendar checks are chrono's (proleptic Gregorian). No offset means UTC, never the
//! session's TimeZone, so the result is IMMUTABLE; [`parse_datestring_local`] tells the caller
//! which strings had no offset, for a TTL index that reads them in a zone of its own. Fractions beyond microseconds are rounded
//! half up, as PostgreSQL rounds `timestamptz` input.

use chrono::NaiveDate;

/// Microseconds between the Unix epoch (1970-01-01) and the PostgreSQL epoch (2000-01-01).
pub const UNIX_TO_PG_EPOCH_MICROS: i64 = 946_684_800_000_000;
/// PostgreSQL's `MIN_TIMESTAMP` (4714-11-24 00:00:00 BC), in PostgreSQL-epoch microseconds.
pub const MIN_PG_MICROS: i64 = -211_813_488_000_000_000;
/// PostgreSQL's `END_TIMESTAMP` (exclusive upper bound, 294277-01-01), in PostgreSQL-epoch microseconds.
pub const END_PG_MICROS: i64 = 9_223_371_331_200_000_000;

const MICROS_PER_SECOND: i128 = 1_000_000;

/// How a JSON number is read: seconds (the default) or milliseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumericUnit {
    Seconds,
    Milliseconds,
}

impl NumericUnit {
    /// The spellings `ttl_timestamp(value, numeric_unit)` accepts.
    pub const ACCEPTED: &'static str = "'s' (seconds) or 'ms' (milliseconds)";

    pub fn from_name(name: &str) -> Option<NumericUnit> {
        match name {
            "s" => Some(NumericUnit::Seconds),
            "ms" => Some(NumericUnit::Milliseconds),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            NumericUnit::Seconds => "s",
            NumericUnit::Milliseconds => "ms",
        }
    }

    /// Microseconds per unit, as a power of ten.
    fn micros_exponent(self) -> i64 {
        match self {
            NumericUnit::Seconds => 6,
            NumericUnit::Milliseconds => 3,
        }
    }
}

/// Converts Unix-epoch microseconds (as i128, so no overflow on the way) to a PostgreSQL
/// timestamp, or `None` outside PostgreSQL's range.
fn pg_micros_from_unix(unix_micros: i128) -> Option<i64> {
    let pg = unix_micros - UNIX_TO_PG_EPOCH_MICROS as i128;
    if pg < MIN_PG_MICROS as i128 || pg >= END_PG_MICROS as i128 {
        return None;
    }
    Some(pg as i64)
}

/// Reads the decimal text of a JSON number (as PostgreSQL's `numeric` prints it:
/// `-?digits[.digits]`, optionally with an exponent `e[+-]digits`) as a Unix time.
///
/// Negative values give `None` (MongoDB and ArangoDB never expire them). Digits beyond the
/// microsecond are rounded half up.
pub fn parse_unix_number(text: &str, unit: NumericUnit) -> Option<i64> {
    let bytes = text.as_bytes();
    let (negative, body) = match bytes.first()? {
        b'-' => (true, &bytes[1..]),
        b'+' => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    // Split mantissa and exponent.
    let (mantissa, exponent) = match body.iter().position(|&b| b == b'e' || b == b'E') {
        Some(at) => (&body[..at], parse_exponent(&body[at + 1..])?),
        None => (body, 0i32),
    };
    let (int_digits, frac_digits) = match mantissa.iter().position(|&b| b == b'.') {
        Some(at) => (&mantissa[..at], &mantissa[at + 1..]),
        None => (mantissa, &mantissa[mantissa.len()..]),
    };
    if int_digits.is_empty() && frac_digits.is_empty() {
        return None;
    }
    if !int_digits.iter().chain(frac_digits).all(u8::is_ascii_digit) {
        return None;
    }
    // The value in microseconds is the digit string × 10^(unit + exponent − fraction length).
    let scale = unit.micros_exponent() + exponent as i64 - frac_digits.len() as i64;
    let micros = scale_digits(int_digits, frac_digits, scale)?;
    if negative && micros != 0 {
        return None;
    }
    pg_micros_from_unix(micros)
}

fn parse_exponent(bytes: &[u8]) -> Option<i32> {
    let (negative, digits) = match bytes.first()? {
        b'-' => (true, &bytes[1..]),
        b'+' => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    if digits.is_empty() || digits.len() > 4 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value = digits
        .iter()
        .fold(0i32, |acc, d| acc * 10 + (d - b'0') as i32);
    Some(if negative { -value } else { value })
}

/// Interprets the digits `int` followed by `frac` multiplied by 10^scale, rounded half up to an
/// integer. `None` when the result cannot be a timestamp (more than 21 integer digits).
fn scale_digits(int: &[u8], frac: &[u8], scale: i64) -> Option<i128> {
    let digits = || int.iter().chain(frac).copied();
    // Leading zeros carry no value; skipping them keeps long zero prefixes from overflowing.
    let leading = digits().take_while(|&d| d == b'0').count();
    let significant = int.len() + frac.len() - leading;
    if significant == 0 {
        return Some(0);
    }
    let kept = significant as i64 + scale; // digits left of the decimal point
    if kept > 21 {
        return None;
    }
    let mut value: i128 = 0;
    if scale >= 0 {
        for d in digits().skip(leading) {
            value = value * 10 + (d - b'0') as i128;
        }
        for _ in 0..scale {
            value *= 10;
        }
    } else {
        let keep = kept.max(0) as usize;
        for d in digits().skip(leading).take(keep) {
            value = value * 10 + (d - b'0') as i128;
        }
        let next = digits().nth(leading + keep);
        if kept >= 0 && next.is_some_and(|d| d >= b'5') {
            value += 1;
        }
    }
    Some(value)
}

/// Reads an integer string (MongoDB's `{"$numberLong": "…"}`) as a Unix time in `unit`.
pub fn parse_unix_integer_string(text: &str, unit: NumericUnit) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    parse_unix_number(text, unit)
}

/// A cursor over the ASCII bytes of a date string.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn digits(&mut self, n: usize) -> Option<u32> {
        let slice = self.bytes.get(self.at..self.at + n)?;
        let mut value = 0u32;
        for &b in slice {
            if !b.is_ascii_digit() {
                return None;
            }
            value = value * 10 + (b - b'0') as u32;
        }
        self.at += n;
        Some(value)
    }

    fn eat(&mut self, accepted: &[u8]) -> bool {
        match self.bytes.get(self.at) {
            Some(b) if accepted.contains(b) => {
                self.at += 1;
                true
            }
            _ => false,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn done(&self) -> bool {
        self.at == self.bytes.len()
    }
}

/// Parses an ISO-8601 date or date-time string (see the module doc for the grammar); a string
/// without an offset is read as UTC.
pub fn parse_datestring(text: &str) -> Option<i64> {
    parse_datestring_local(text).map(|parsed| parsed.micros)
}

/// A parsed date string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// PostgreSQL-epoch microseconds: the instant, when the string had an offset; else the
    /// wall-clock time read as if in UTC (a date alone is its midnight).
    pub micros: i64,
    /// Whether the string carried its own offset (`Z` or `±HH[:MM]`).
    pub has_offset: bool,
}

/// Parses a date string like [`parse_datestring`], and says whether it had an offset.
pub fn parse_datestring_local(text: &str) -> Option<Parsed> {
    let local = |micros: i128| {
        pg_micros_from_unix(micros).map(|micros| Parsed {
            micros,
            has_offset: false,
        })
    };
    let mut c = Cursor {
        bytes: text.as_bytes(),
        at: 0,
    };
    let year = c.digits(4)?;
    if !c.eat(b"-") {
        return None;
    }
    let month = c.digits(2)?;
    if !c.eat(b"-") {
        return None;
    }
    let day = c.digits(2)?;
    let date = NaiveDate::from_ymd_opt(year as i32, month, day)?;
    let days = date
        .signed_duration_since(NaiveDate::from_ymd_opt(1970, 1, 1)?)
        .num_days() as i128;
    let mut unix_micros = days * 86_400 * MICROS_PER_SECOND;
    if c.done() {
        return local(unix_micros);
    }

    if !c.eat(b"Tt ") {
        return None;
    }
    let hour = c.digits(2)?;
    if !c.eat(b":") {
        return None;
    }
    let minute = c.digits(2)?;
    let mut second = 0;
    let mut fraction_micros: i128 = 0;
    if c.eat(b":") {
        second = c.digits(2)?;
        if c.eat(b".,") {
            fraction_micros = fraction(&mut c)?;
        }
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    unix_micros += ((hour * 3600 + minute * 60 + second) as i128) * MICROS_PER_SECOND;
    unix_micros += fraction_micros;

    match c.peek() {
        None => return local(unix_micros),
        Some(b'Z' | b'z') => c.at += 1,
        Some(sign @ (b'+' | b'-')) => {
            c.at += 1;
            let offset = utc_offset(&mut c)?;
            // Local time = UTC + offset, so UTC = local − offset.
            unix_micros += if sign == b'+' { -offset } else { offset };
        }
        Some(_) => return None,
    }
    if !c.done() {
        return None;
    }
    pg_micros_from_unix(unix_micros).map(|micros| Parsed {
        micros,
        has_offset: true,
    })
}

/// Reads an offset from UTC after its sign, `HH`, `HH:MM` or `HHMM` (hours alone: `+00`, as
/// PostgreSQL writes), in microseconds.
fn utc_offset(c: &mut Cursor) -> Option<i128> {
    let hour = c.digits(2)?;
    let minute = match c.peek() {
        None => 0,
        Some(b':') => {
            c.at += 1;
            c.digits(2)?
        }
        Some(_) => c.digits(2)?,
    };
    if hour > 23 || minute > 59 {
        return None;
    }
    Some(((hour * 3600 + minute * 60) as i128) * MICROS_PER_SECOND)
}

/// Reads `1*DIGIT` as a fraction of a second in microseconds, rounded half up.
fn fraction(c: &mut Cursor) -> Option<i128> {
    let start = c.at;
    while matches!(c.peek(), Some(b'0'..=b'9')) {
        c.at += 1;
    }
    let digits = &c.bytes[start..c.at];
    if digits.is_empty() {
        return None;
    }
    let mut micros: i128 = 0;
    for i in 0..6 {
        micros = micros * 10 + digits.get(i).map_or(0, |d| (d - b'0') as i128);
    }
    if digits.get(6).is_some_and(|&d| d >= b'5') {
        micros += 1;
    }
    Some(micros)
}

/// Whether `text` is a date string [`parse_datestring`] accepts (ArangoDB's IS_DATESTRING).
pub fn is_datestring(text: &str) -> bool {
    parse_datestring(text).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, FixedOffset, TimeZone, Utc};
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// A unit's name (stored in the TTL catalog) reads back as the same unit.
    #[test]
    fn unit_names() {
        for (unit, name) in [
            (NumericUnit::Seconds, "s"),
            (NumericUnit::Milliseconds, "ms"),
        ] {
            assert_eq!(unit.name(), name);
            assert_eq!(NumericUnit::from_name(name), Some(unit));
        }
        assert_eq!(NumericUnit::from_name("sec"), None);
    }

    /// PostgreSQL's range, at both ends, exactly. (No date string or number reaches the lower
    /// end: numbers below zero and years before 0000 are refused first; the bound is tested
    /// here, where it is.)
    #[test]
    fn timestamp_range_bounds() {
        let unix = |pg: i64| pg as i128 + UNIX_TO_PG_EPOCH_MICROS as i128;
        let cases = [
            (MIN_PG_MICROS - 1, None),
            (MIN_PG_MICROS, Some(MIN_PG_MICROS)),
            (0, Some(0)),
            (END_PG_MICROS - 1, Some(END_PG_MICROS - 1)),
            (END_PG_MICROS, None),
        ];
        for (pg, expected) in cases {
            assert_eq!(pg_micros_from_unix(unix(pg)), expected, "{pg}");
        }
    }

    /// The digit scaling refuses more than 21 digits left of the decimal point, and no fewer
    /// (numbers that long are out of PostgreSQL's range anyway, so only this test can tell).
    #[test]
    fn scale_digits_bounds() {
        let twenty_one = [b'1'; 21];
        assert_eq!(
            scale_digits(&twenty_one, b"", 0),
            Some(111_111_111_111_111_111_111)
        );
        assert_eq!(scale_digits(&twenty_one, b"", 1), None);
        assert_eq!(scale_digits(b"15", b"", -1), Some(2)); // 1.5 rounds half up
        assert_eq!(scale_digits(b"0001", b"", 20), Some(10i128.pow(20)));
    }

    /// The expected value of a case, as an RFC 3339 instant in UTC.
    fn at(rfc3339: &str) -> Option<i64> {
        let t = DateTime::parse_from_rfc3339(rfc3339).expect("test case is RFC 3339");
        Some(t.timestamp_micros() - UNIX_TO_PG_EPOCH_MICROS)
    }

    #[test]
    fn date_strings_table() {
        #[rustfmt::skip]
        let cases: &[(&str, Option<i64>)] = &[
            // ArangoDB's documented examples
            ("2019-05-27", at("2019-05-27T00:00:00Z")),
            ("2019-05-27T21:20:00", at("2019-05-27T21:20:00Z")),
            ("2019-05-27T21:20:00Z", at("2019-05-27T21:20:00Z")),
            ("2019-05-27T21:20:00.123Z", at("2019-05-27T21:20:00.123Z")),
            ("2019-05-27T21:20:00.123+01:30", at("2019-05-27T19:50:00.123Z")),
            ("2019-05-27T21:20:00.123-02:00", at("2019-05-27T23:20:00.123Z")),
            ("2014-05-07T14:19", at("2014-05-07T14:19:00Z")),
            // DESIGN.md's example
            ("2019-02-14T17:39:33.000Z", at("2019-02-14T17:39:33Z")),
            // separators and zone spellings
            ("2019-05-27t21:20:00z", at("2019-05-27T21:20:00Z")),
            ("2019-05-27 21:20:00", at("2019-05-27T21:20:00Z")),
            ("2019-05-27T21:20:00+0130", at("2019-05-27T19:50:00Z")),
            ("2019-05-27T21:20:00,5Z", at("2019-05-27T21:20:00.5Z")),
            ("2019-05-27T21:20+01:00", at("2019-05-27T20:20:00Z")),
            ("2019-05-27T21:20:00+00:00", at("2019-05-27T21:20:00Z")),
            ("2019-05-27T21:20:00-00:00", at("2019-05-27T21:20:00Z")),
            // leap days
            ("2020-02-29", at("2020-02-29T00:00:00Z")),
            ("2000-02-29T12:00:00Z", at("2000-02-29T12:00:00Z")),
            ("2019-02-29", None),
            ("1900-02-29", None),
            ("2100-02-29", None),
            ("2400-02-29", at("2400-02-29T00:00:00Z")),
            // month and day bounds
            ("2019-01-31", at("2019-01-31T00:00:00Z")),
            ("2019-04-30", at("2019-04-30T00:00:00Z")),
            ("2019-04-31", None),
            ("2019-02-30", None),
            ("2019-12-31T23:59:59.999999Z", at("2019-12-31T23:59:59.999999Z")),
            ("2019-00-10", None),
            ("2019-13-01", None),
            ("2019-01-00", None),
            ("2019-01-32", None),
            ("0000-01-01", Some(year0())),
            ("9999-12-31T23:59:59Z", at("9999-12-31T23:59:59Z")),
            ("1969-12-31T23:59:59Z", at("1969-12-31T23:59:59Z")),
            ("1970-01-01", at("1970-01-01T00:00:00Z")),
            // time bounds
            ("2019-05-27T00:00:00", at("2019-05-27T00:00:00Z")),
            ("2019-05-27T23:59:59", at("2019-05-27T23:59:59Z")),
            ("2019-05-27T24:00", None),
            ("2019-05-27T24:00:00", None),
            ("2019-05-27T23:60:00", None),
            ("2019-05-27T23:59:60", None),
            ("2019-05-27T23:59:60Z", None),
            // fractions beyond milliseconds
            ("2019-05-27T21:20:00.1Z", at("2019-05-27T21:20:00.1Z")),
            ("2019-05-27T21:20:00.123456Z", at("2019-05-27T21:20:00.123456Z")),
            ("2019-05-27T21:20:00.1234564Z", at("2019-05-27T21:20:00.123456Z")),
            ("2019-05-27T21:20:00.1234565Z", at("2019-05-27T21:20:00.123457Z")),
            ("2019-05-27T21:20:00.123456789Z", at("2019-05-27T21:20:00.123457Z")),
            ("2019-12-31T23:59:59.9999999Z", at("2020-01-01T00:00:00Z")),
            ("2019-05-27T21:20:00.000000000000000001Z", at("2019-05-27T21:20:00Z")),
            ("2019-05-27T21:20:00.Z", None),
            ("2019-05-27T21:20:00.", None),
            // offsets that cross midnight or a year
            ("2019-05-27T23:30:00-01:00", at("2019-05-28T00:30:00Z")),
            ("2019-05-28T00:30:00+01:00", at("2019-05-27T23:30:00Z")),
            ("2019-12-31T23:00:00-05:00", at("2020-01-01T04:00:00Z")),
            ("2020-01-01T01:00:00+05:30", at("2019-12-31T19:30:00Z")),
            ("2019-05-27T12:00:00+23:59", at("2019-05-26T12:01:00Z")),
            ("2019-05-27T12:00:00+24:00", None),
            ("2019-05-27T12:00:00+01:60", None),
            ("2019-05-27T12:00:00+1", None),
            ("2019-05-27T12:00:00+01:", None),
            ("2019-05-27T12:00:00+013", None),
            ("2019-05-27T12:00:00+01:3", None),
            ("2019-05-27T12:00:00+01:300", None),
            // hours-only offsets, as PostgreSQL's timestamptz output writes them
            ("2026-11-23 10:36:13.123456+00", at("2026-11-23T10:36:13.123456Z")),
            ("2026-11-23 02:36:13-08", at("2026-11-23T10:36:13Z")),
            ("2026-11-23T16:06:13+05", at("2026-11-23T11:06:13Z")),
            ("2026-11-23T12:00:00+24", None),
            ("2026-11-23T12:00:00-", None),
            // what common serializers write
            ("2026-11-23T10:36:13.123456+00:00", at("2026-11-23T10:36:13.123456Z")), // to_jsonb(timestamptz), Python isoformat()
            ("2026-11-23 10:36:13.123456+00:00", at("2026-11-23T10:36:13.123456Z")), // Python str(aware datetime)
            ("2026-11-23 10:36:13.123456", at("2026-11-23T10:36:13.123456Z")),       // Python str(naive datetime)
            ("2026-11-23T10:36:13", at("2026-11-23T10:36:13Z")),                     // Python isoformat(), whole seconds
            ("2026-11-23T10:36:13.123Z", at("2026-11-23T10:36:13.123Z")),            // JavaScript toISOString()
            ("2026-11-23T10:36:13.123456789Z", at("2026-11-23T10:36:13.123457Z")),   // Java Instant
            ("2026-11-23T10:36Z", at("2026-11-23T10:36:00Z")),                       // Java Instant, whole minutes
            ("2026-11-23T11:36:13.5+01:00", at("2026-11-23T10:36:13.5Z")),           // Java OffsetDateTime
            ("2019-05-27T12:00:00 +01:00", None),
            // whitespace is not trimmed
            (" 2019-05-27", None),
            ("2019-05-27 ", None),
            ("2019-05-27\n", None),
            ("2019-05-27T 21:20:00", None),
            ("\t2019-05-27T21:20:00Z", None),
            // numbers in strings are not Unix times
            ("1550165973", None),
            ("1550165973.5", None),
            ("-1", None),
            ("0", None),
            // malformed
            ("", None),
            ("2019", None),
            ("2019-05", None),
            ("19-05-27", None),
            ("2019-5-27", None),
            ("2019-05-7", None),
            ("2019/05/27", None),
            ("2019-05-27T", None),
            ("2019-05-27T21", None),
            ("2019-05-27T21:2", None),
            ("2019-05-27T21:20:0", None),
            ("2019-05-27T21:20:00ZZ", None),
            ("2019-05-27T21:20:00 Z", None),
            ("2019-05-27X21:20:00", None),
            ("2019-05-27Z", None),
            ("+2019-05-27", None),
            ("-2019-05-27", None),
            ("２０１９-05-27", None),
            ("2019-05-27T21:20:00\u{0}", None),
            ("now", None),
            ("today", None),
            ("infinity", None),
            ("Mon, 27 May 2019 21:20:00 GMT", None),
        ];
        assert!(cases.len() >= 80, "{} cases", cases.len());
        for (input, expected) in cases {
            assert_eq!(parse_datestring(input), *expected, "input {input:?}");
            assert_eq!(is_datestring(input), expected.is_some(), "input {input:?}");
        }
    }

    fn year0() -> i64 {
        let d = NaiveDate::from_ymd_opt(0, 1, 1).unwrap();
        d.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp_micros() - UNIX_TO_PG_EPOCH_MICROS
    }

    #[test]
    fn strings_without_offset_are_local() {
        #[rustfmt::skip]
        let cases: &[(&str, Option<(&str, bool)>)] = &[
            ("2026-11-23", Some(("2026-11-23T00:00:00Z", false))),
            ("2026-11-23 10:36:13.5", Some(("2026-11-23T10:36:13.5Z", false))),
            ("2026-11-23T10:36", Some(("2026-11-23T10:36:00Z", false))),
            ("2026-11-23T10:36:13Z", Some(("2026-11-23T10:36:13Z", true))),
            ("2026-11-23T10:36:13z", Some(("2026-11-23T10:36:13Z", true))),
            ("2026-11-23T10:36:13+00", Some(("2026-11-23T10:36:13Z", true))),
            ("2026-11-23T10:36:13-05:00", Some(("2026-11-23T15:36:13Z", true))),
            ("2026-11-23T10:36:13+0530", Some(("2026-11-23T05:06:13Z", true))),
            ("2026-11-23T10:36:13 ", None),
            ("2026-02-30T10:36:13", None),
        ];
        for &(text, expected) in cases {
            let expected = expected.map(|(instant, has_offset)| Parsed {
                micros: at(instant).unwrap(),
                has_offset,
            });
            assert_eq!(parse_datestring_local(text), expected, "{text:?}");
        }
    }

    #[test]
    fn numbers_table() {
        use NumericUnit::*;
        #[rustfmt::skip]
        let cases: &[(&str, NumericUnit, Option<i64>)] = &[
            ("1550165973", Seconds, at("2019-02-14T17:39:33Z")),
            ("1550165973000", Milliseconds, at("2019-02-14T17:39:33Z")),
            ("1550165973123", Milliseconds, at("2019-02-14T17:39:33.123Z")),
            ("1550165973.5", Seconds, at("2019-02-14T17:39:33.5Z")),
            ("1550165973.123456", Seconds, at("2019-02-14T17:39:33.123456Z")),
            ("1550165973.1234565", Seconds, at("2019-02-14T17:39:33.123457Z")),
            ("1550165973123.4567", Milliseconds, at("2019-02-14T17:39:33.123457Z")),
            ("0", Seconds, at("1970-01-01T00:00:00Z")),
            ("0.000001", Seconds, at("1970-01-01T00:00:00.000001Z")),
            ("0.0000004", Seconds, at("1970-01-01T00:00:00Z")),
            ("-0", Seconds, at("1970-01-01T00:00:00Z")),
            ("-1", Seconds, None),
            ("-1550165973", Seconds, None),
            ("-0.5", Seconds, None),
            ("1.5e9", Seconds, at("2017-07-14T02:40:00Z")),
            ("1.55016597312E12", Milliseconds, at("2019-02-14T17:39:33.12Z")),
            ("15501659731e-1", Seconds, at("2019-02-14T17:39:33.1Z")),
            ("00000000000000000000000000001550165973", Seconds, at("2019-02-14T17:39:33Z")),
            // the largest PostgreSQL timestamp and beyond
            ("9224318015999", Seconds, Some(END_PG_MICROS - 1_000_000)),
            ("9224318016000", Seconds, None),
            ("99999999999999999999", Seconds, None),
            ("1e300", Seconds, None),
            ("1e-300", Seconds, at("1970-01-01T00:00:00Z")),
            // a sign on the number and on its exponent (JSON writes 1e+9)
            ("+1550165973", Seconds, at("2019-02-14T17:39:33Z")),
            ("1.550165973e+9", Seconds, at("2019-02-14T17:39:33Z")),
            ("1.550165973E+0009", Seconds, at("2019-02-14T17:39:33Z")),
            // four exponent digits at most
            ("1550165973e0000", Seconds, at("2019-02-14T17:39:33Z")),
            ("1550165973e00000", Seconds, None),
            ("184467440737095516160000", Milliseconds, None),
            // not numbers
            ("", Seconds, None),
            ("-", Seconds, None),
            (".", Seconds, None),
            ("1.2.3", Seconds, None),
            ("1e", Seconds, None),
            ("NaN", Seconds, None),
            ("Infinity", Seconds, None),
            (" 1", Seconds, None),
            ("0x10", Seconds, None),
        ];
        for (input, unit, expected) in cases {
            assert_eq!(
                parse_unix_number(input, *unit),
                *expected,
                "input {input:?} {unit:?}"
            );
        }
    }

    #[test]
    fn number_long_strings() {
        assert_eq!(
            parse_unix_integer_string("1550165973000", NumericUnit::Milliseconds),
            at("2019-02-14T17:39:33Z")
        );
        assert_eq!(
            parse_unix_integer_string("-1000", NumericUnit::Milliseconds),
            None
        );
        assert_eq!(
            parse_unix_integer_string("15.5", NumericUnit::Milliseconds),
            None
        );
        assert_eq!(
            parse_unix_integer_string("", NumericUnit::Milliseconds),
            None
        );
        assert_eq!(
            parse_unix_integer_string("1e3", NumericUnit::Milliseconds),
            None
        );
    }

    #[test]
    fn units() {
        assert_eq!(NumericUnit::from_name("s"), Some(NumericUnit::Seconds));
        assert_eq!(
            NumericUnit::from_name("ms"),
            Some(NumericUnit::Milliseconds)
        );
        assert_eq!(NumericUnit::from_name("S"), None);
        assert_eq!(NumericUnit::from_name("us"), None);
    }

    /// Millions of arbitrary strings and numbers: no panic, and whatever parses is in range.
    #[test]
    fn arbitrary_input_never_panics() {
        let mut rng = StdRng::seed_from_u64(0x7717);
        const ALPHABET: &[u8] = b"0123456789-:.,+TZtz eE \x00\xff";
        let mut accepted = 0usize;
        for i in 0..2_000_000 {
            let len = rng.gen_range(0..40);
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    if i % 3 == 0 {
                        rng.gen::<u8>()
                    } else {
                        ALPHABET[rng.gen_range(0..ALPHABET.len())]
                    }
                })
                .collect();
            let text = String::from_utf8_lossy(&bytes);
            for result in [
                parse_datestring(&text),
                parse_unix_number(&text, NumericUnit::Seconds),
                parse_unix_number(&text, NumericUnit::Milliseconds),
                parse_unix_integer_string(&text, NumericUnit::Milliseconds),
            ]
            .into_iter()
            .flatten()
            {
                accepted += 1;
                assert!((MIN_PG_MICROS..END_PG_MICROS).contains(&result), "{text:?}");
            }
        }
        // Mutations of valid dates: a structured neighbourhood of the grammar.
        let base = b"2019-05-27T21:20:00.123+01:30";
        for _ in 0..1_000_000 {
            let mut bytes = base.to_vec();
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(0..bytes.len());
                match rng.gen_range(0..3) {
                    0 => bytes[at] = ALPHABET[rng.gen_range(0..ALPHABET.len())],
                    1 => {
                        bytes.remove(at);
                    }
                    _ => bytes.insert(at, ALPHABET[rng.gen_range(0..ALPHABET.len())]),
                }
            }
            let text = String::from_utf8_lossy(&bytes);
            if let Some(r) = parse_datestring(&text) {
                accepted += 1;
                assert!((MIN_PG_MICROS..END_PG_MICROS).contains(&r));
            }
        }
        assert!(
            accepted > 1000,
            "the generator should hit the grammar sometimes"
        );
    }

    /// Format random instants with random offsets and fraction widths, parse them back.
    #[test]
    fn round_trip_random_instants() {
        let mut rng = StdRng::seed_from_u64(42);
        let lo = NaiveDate::from_ymd_opt(1, 1, 2)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap();
        let hi = NaiveDate::from_ymd_opt(9999, 12, 30)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap();
        let (lo, hi) = (
            lo.and_utc().timestamp_micros(),
            hi.and_utc().timestamp_micros(),
        );
        for _ in 0..1_000_000 {
            let micros = rng.gen_range(lo..hi);
            let offset_secs =
                rng.gen_range(-(23 * 3600 + 59 * 60)..=(23 * 3600 + 59 * 60)) / 60 * 60;
            let offset = FixedOffset::east_opt(offset_secs).unwrap();
            let instant = Utc.timestamp_micros(micros).unwrap().with_timezone(&offset);
            let digits = rng.gen_range(0..=6);
            let truncated = micros - micros.rem_euclid(10i64.pow(6 - digits));
            let fraction = match digits {
                0 => String::new(),
                d => format!(
                    ".{:0width$}",
                    instant.timestamp_subsec_micros() / 10u32.pow(6 - d),
                    width = d as usize
                ),
            };
            let text = match rng.gen_range(0..3) {
                0 => format!(
                    "{}{fraction}{}",
                    instant.format("%Y-%m-%dT%H:%M:%S"),
                    instant.format("%:z")
                ),
                1 => format!(
                    "{}{fraction}{}",
                    instant.format("%Y-%m-%d %H:%M:%S"),
                    instant.format("%z")
                ),
                _ => format!(
                    "{}{fraction}Z",
                    instant.with_timezone(&Utc).format("%Y-%m-%dT%H:%M:%S")
                ),
            };
            assert_eq!(
                parse_datestring(&text),
                Some(truncated - UNIX_TO_PG_EPOCH_MICROS),
                "{text}"
            );
            // The same instant as a number of seconds and of milliseconds.
            if micros >= 0 {
                let secs = format!("{}.{:06}", micros / 1_000_000, micros % 1_000_000);
                assert_eq!(
                    parse_unix_number(&secs, NumericUnit::Seconds),
                    Some(micros - UNIX_TO_PG_EPOCH_MICROS),
                    "{secs}"
                );
                let ms = format!("{}.{:03}", micros / 1_000, micros % 1_000);
                assert_eq!(
                    parse_unix_number(&ms, NumericUnit::Milliseconds),
                    Some(micros - UNIX_TO_PG_EPOCH_MICROS),
                    "{ms}"
                );
            }
        }
    }
}
