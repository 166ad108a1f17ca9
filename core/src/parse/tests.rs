//! The parsers' tests: tables of cases, one per grammar rule.

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
        let offset_secs = rng.gen_range(-(23 * 3600 + 59 * 60)..=(23 * 3600 + 59 * 60)) / 60 * 60;
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
