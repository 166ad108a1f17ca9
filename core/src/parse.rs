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
mod tests;
