//! `ttl_timestamp` and `ttl_is_datestring`: the SQL face of the parser; and the helpers the TTL
//! indexes over plain columns call, `jsonb_ttl_internal.ttl_unix_timestamp` and
//! `jsonb_ttl_internal.ttl_text_timestamp`.
//!
//! All are IMMUTABLE, STRICT and PARALLEL SAFE, and never raise on any jsonb input, so
//! they can key an expression index. Only a bad `numeric_unit` argument raises.

use crate::error::raise;
use crate::jsonb_scalar::{JsonbRef, LocalTimes, Reading};
use jsonb_ttl_core::parse::{self, NumericUnit};
use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;

fn to_timestamptz(micros: Option<i64>) -> Option<TimestampWithTimeZone> {
    micros.and_then(|m| TimestampWithTimeZone::try_from(m).ok())
}

/// The point in time a jsonb value holds; JSON numbers are Unix seconds.
#[pg_extern(immutable, strict, parallel_safe, name = "ttl_timestamp")]
fn ttl_timestamp(value: JsonbRef) -> Option<TimestampWithTimeZone> {
    to_timestamptz(value.reference_time(NumericUnit::Seconds))
}

/// The point in time a jsonb value holds; JSON numbers are in `numeric_unit` ('s' or 'ms').
#[pg_extern(immutable, strict, parallel_safe, name = "ttl_timestamp")]
fn ttl_timestamp_unit(value: JsonbRef, numeric_unit: &str) -> Option<TimestampWithTimeZone> {
    to_timestamptz(value.reference_time(numeric_unit_arg(numeric_unit)))
}

/// The point in time a jsonb value holds, with strings without an offset read in `time_zone`
/// (a name PostgreSQL's time zone library accepts) instead of UTC: for documents whose writer
/// put naive local times there (Django's DjangoJSONEncoder with USE_TZ = False). JSON numbers
/// are in `numeric_unit`.
#[pg_extern(immutable, strict, parallel_safe, name = "ttl_timestamp")]
fn ttl_timestamp_in_zone(
    value: JsonbRef,
    numeric_unit: &str,
    time_zone: &str,
) -> Option<TimestampWithTimeZone> {
    let reading = Reading {
        unit: numeric_unit_arg(numeric_unit),
        local: LocalTimes::In(time_zone_arg(time_zone)),
    };
    to_timestamptz(value.reference_time_in(reading))
}

/// The point in time a string holds, read with the date-string grammar of `ttl_timestamp`
/// (a `text` column's reference time); strings without an offset are UTC.
#[pg_extern(
    immutable,
    strict,
    parallel_safe,
    name = "ttl_text_timestamp",
    schema = "jsonb_ttl_internal"
)]
fn ttl_text_timestamp(value: &str) -> Option<TimestampWithTimeZone> {
    to_timestamptz(parse::parse_datestring(value))
}

/// The point in time a string holds, with a string without an offset read in `time_zone`.
#[pg_extern(
    immutable,
    strict,
    parallel_safe,
    name = "ttl_text_timestamp",
    schema = "jsonb_ttl_internal"
)]
fn ttl_text_timestamp_in_zone(value: &str, time_zone: &str) -> Option<TimestampWithTimeZone> {
    let reading = Reading {
        unit: NumericUnit::Seconds,
        local: LocalTimes::In(time_zone_arg(time_zone)),
    };
    to_timestamptz(reading.date_string(value))
}

/// Reads a `time_zone` argument as a `text` datum, raising 22023 with a HINT on a name
/// PostgreSQL's time zone library does not know.
pub fn time_zone_arg(name: &str) -> pgrx::pg_sys::Datum {
    let accepted = std::ffi::CString::new(name)
        .ok()
        .is_some_and(|zone| unsafe {
            let tz = pgrx::pg_sys::pg_tzset(zone.as_ptr());
            !tz.is_null() && pgrx::pg_sys::pg_tz_acceptable(tz)
        });
    if !accepted {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("time zone {name:?} not recognized"),
            "Pass a name from pg_timezone_names, such as 'America/New_York' or 'UTC'.",
        );
    }
    let text =
        unsafe { pgrx::pg_sys::cstring_to_text_with_len(name.as_ptr().cast(), name.len() as i32) };
    pgrx::pg_sys::Datum::from(text)
}

/// Reads a `numeric_unit` argument, raising 22023 with a HINT on anything else.
pub fn numeric_unit_arg(name: &str) -> NumericUnit {
    NumericUnit::from_name(name).unwrap_or_else(|| {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("invalid numeric_unit {name:?}"),
            format!("numeric_unit must be {}.", NumericUnit::ACCEPTED),
        )
    })
}

/// A number as a Unix time in `numeric_unit` ('s' or 'ms'): the reference time of a plain
/// numeric column. Negative numbers give NULL, like JSON numbers.
#[pg_extern(immutable, strict, parallel_safe, schema = "jsonb_ttl_internal")]
fn ttl_unix_timestamp(value: AnyNumeric, numeric_unit: &str) -> Option<TimestampWithTimeZone> {
    let unit = numeric_unit_arg(numeric_unit);
    to_timestamptz(parse::parse_unix_number(&value.to_string(), unit))
}

/// Whether a string is a date `ttl_timestamp` accepts (ArangoDB's IS_DATESTRING).
#[pg_extern(immutable, strict, parallel_safe)]
fn ttl_is_datestring(value: &str) -> bool {
    parse::is_datestring(value)
}

#[cfg(any(test, feature = "pg_test"))]
#[pg_schema]
mod tests {
    use pgrx::prelude::*;

    fn ts(sql: &str) -> Option<String> {
        Spi::get_one::<String>(&format!(
            "SELECT to_char(ttl_timestamp({sql}) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US')"
        ))
        .expect("query runs")
    }

    #[pg_test]
    fn jsonb_values_table() {
        #[rustfmt::skip]
        let cases: &[(&str, Option<&str>)] = &[
            ("'1550165973'::jsonb", Some("2019-02-14T17:39:33.000000")),
            ("'1550165973.25'::jsonb", Some("2019-02-14T17:39:33.250000")),
            ("'-5'::jsonb", None),
            ("'\"2019-02-14T17:39:33.000Z\"'::jsonb", Some("2019-02-14T17:39:33.000000")),
            ("'\"2019-05-27\"'::jsonb", Some("2019-05-27T00:00:00.000000")),
            ("'\"2019-02-30\"'::jsonb", None),
            ("'[\"2019-05-27\", 1550165973, \"junk\"]'::jsonb", Some("2019-02-14T17:39:33.000000")),
            ("'[\"junk\", null]'::jsonb", None),
            ("'[]'::jsonb", None),
            ("'[[1550165973]]'::jsonb", None),
            ("'[{\"$date\": 1550165973000}, \"2020-01-01\"]'::jsonb", Some("2019-02-14T17:39:33.000000")),
            ("'{\"$date\": \"2019-02-14T17:39:33Z\"}'::jsonb", Some("2019-02-14T17:39:33.000000")),
            ("'{\"$date\": 1550165973123}'::jsonb", Some("2019-02-14T17:39:33.123000")),
            ("'{\"$date\": {\"$numberLong\": \"1550165973000\"}}'::jsonb", Some("2019-02-14T17:39:33.000000")),
            ("'{\"$date\": {\"$numberLong\": 1550165973000}}'::jsonb", None),
            ("'{\"$date\": 1, \"x\": 2}'::jsonb", None),
            ("'{\"other\": 1550165973}'::jsonb", None),
            ("'true'::jsonb", None),
            ("'null'::jsonb", None),
            ("'{}'::jsonb", None),
            ("('{\"a\": {\"b\": \"2019-05-27T21:20:00+01:30\"}}'::jsonb -> 'a' -> 'b')", Some("2019-05-27T19:50:00.000000")),
            ("'1e400'::jsonb", None),
        ];
        for (input, expected) in cases {
            assert_eq!(ts(input).as_deref(), *expected, "input {input}");
        }
    }

    #[pg_test]
    fn milliseconds_unit() {
        let got = Spi::get_one::<String>(
            "SELECT to_char(ttl_timestamp('1550165973123', 'ms') AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')",
        )
        .unwrap();
        assert_eq!(got.as_deref(), Some("2019-02-14 17:39:33.123"));
    }

    #[pg_test(error = "invalid numeric_unit \"us\"")]
    fn bad_unit_raises() {
        Spi::run("SELECT ttl_timestamp('1', 'us')").unwrap();
    }

    #[pg_test]
    fn is_datestring() {
        assert_eq!(
            Spi::get_one::<bool>("SELECT ttl_is_datestring('2019-05-27T21:20:00.123+01:30')"),
            Ok(Some(true))
        );
        assert_eq!(
            Spi::get_one::<bool>("SELECT ttl_is_datestring('2019-02-30')"),
            Ok(Some(false))
        );
        assert_eq!(
            Spi::get_one::<bool>("SELECT ttl_is_datestring(NULL)"),
            Ok(None)
        );
    }

    /// Random JSON text: nesting, huge and tiny numbers, long strings, escapes, dates, $date.
    fn random_json(rng: &mut rand::rngs::StdRng, depth: u32) -> String {
        use rand::Rng;
        let leaf = |rng: &mut rand::rngs::StdRng| -> String {
            match rng.gen_range(0..12) {
                0 => format!("{}", rng.gen::<i64>()),
                1 => format!("{}e{}", rng.gen_range(-9..10), rng.gen_range(-400..400)),
                2 => format!("{}.{}", rng.gen::<u32>(), rng.gen::<u64>()),
                3 => "9".repeat(rng.gen_range(1..300)),
                4 => format!("\"{}\"", "x".repeat(rng.gen_range(0..5000))),
                5 => "\"\\u00e9\\ud83d\\ude00\\n\\\"\"".to_string(),
                6 => format!(
                    "\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{}{}\"",
                    rng.gen_range(0..10000),
                    rng.gen_range(0..14),
                    rng.gen_range(0..33),
                    rng.gen_range(0..26),
                    rng.gen_range(0..62),
                    rng.gen_range(0..62),
                    rng.gen_range(0..10_000_000),
                    ["Z", "+01:30", "-23:59", "+24:00", "", " "][rng.gen_range(0..6)]
                ),
                7 => format!("{{\"$date\": {}}}", rng.gen::<i64>()),
                8 => format!(
                    "{{\"$date\": {{\"$numberLong\": \"{}\"}}}}",
                    rng.gen::<i64>()
                ),
                9 => ["true", "false", "null", "[]", "{}"][rng.gen_range(0..5)].to_string(),
                10 => format!("-{}", rng.gen::<u16>()),
                _ => format!("\"{}\"", rng.gen::<u32>()),
            }
        };
        if depth == 0 || rng.gen_bool(0.4) {
            return leaf(rng);
        }
        let n = rng.gen_range(0..5);
        let items: Vec<String> = (0..n).map(|_| random_json(rng, depth - 1)).collect();
        if rng.gen_bool(0.5) {
            format!("[{}]", items.join(","))
        } else {
            let pairs: Vec<String> = items
                .iter()
                .enumerate()
                .map(|(i, v)| format!("\"k{i}\": {v}"))
                .collect();
            format!("{{{}}}", pairs.join(","))
        }
    }

    /// Hostile input through SQL: 20,000 generated jsonb values, a 1 MB document and 200-deep
    /// nesting. What is checked: each call returns (an ERROR would end the test at that value,
    /// which the message names), and the answers are not all one way — some generated values
    /// are dates (their numeric leaves), most are not, and the parser must tell them apart
    /// rather than answer NULL, or a time, to everything.
    #[pg_test]
    fn generated_jsonb_answers_without_raising() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(2026);
        let mut values: Vec<String> = (0..20_000).map(|_| random_json(&mut rng, 6)).collect();
        values.push(format!("{{\"doc\": \"{}\"}}", "y".repeat(1 << 20)));
        values.push(format!("{}1550165973{}", "[".repeat(200), "]".repeat(200)));
        let (mut times, mut nulls) = (0, 0);
        for value in &values {
            let row = Spi::get_two_with_args::<bool, bool>(
                "SELECT ttl_timestamp($1::jsonb) IS NULL, ttl_timestamp($1::jsonb, 'ms') IS NULL",
                &[value.as_str().into()],
            );
            let Ok((Some(seconds_null), Some(_))) = row else {
                panic!("no answer for {}: {row:?}", &value[..value.len().min(200)]);
            };
            match seconds_null {
                true => nulls += 1,
                false => times += 1,
            }
        }
        assert!(times > 0 && nulls > 0, "{times} times, {nulls} NULLs");
    }

    #[pg_test]
    fn declared_immutable_strict_parallel_safe() {
        let parsers =
            "('ttl_timestamp', 'ttl_is_datestring', 'ttl_unix_timestamp', 'ttl_text_timestamp')";
        let bad = Spi::get_one::<i64>(&format!(
            "SELECT count(*) FROM pg_proc WHERE proname IN {parsers} \
             AND NOT (provolatile = 'i' AND proisstrict AND proparallel = 's')"
        ));
        assert_eq!(bad, Ok(Some(0)));
        // ttl_timestamp ×3, ttl_text_timestamp ×2, ttl_is_datestring, ttl_unix_timestamp
        let count = Spi::get_one::<i64>(&format!(
            "SELECT count(*) FROM pg_proc WHERE proname IN {parsers}"
        ));
        assert_eq!(count, Ok(Some(7)));
    }
}
