//! Reading the reference time out of a jsonb datum in place: no conversion to text, no
//! serde_json. This runs for every insert and update of a table with a TTL index.
//!
//! A jsonb value is one of: a raw scalar (stored as a one-element array flagged scalar), an
//! array, or an object. We read scalars with PostgreSQL's `JsonbExtractScalar`, array elements
//! with `getIthJsonbValueFromContainer`, and object keys with `findJsonbValueFromContainer`.

use jsonb_ttl_core::parse::{self, NumericUnit};
use pgrx::pg_sys;
use std::ffi::CStr;

/// A detoasted jsonb datum borrowed for the duration of one function call.
pub struct JsonbRef(*mut pg_sys::Jsonb);

impl pgrx::FromDatum for JsonbRef {
    unsafe fn from_polymorphic_datum(
        datum: pg_sys::Datum,
        is_null: bool,
        _typoid: pg_sys::Oid,
    ) -> Option<Self> {
        if is_null {
            return None;
        }
        // Like DatumGetJsonbP: a copy only when the datum is compressed, external or short.
        let jsonb = unsafe { pg_sys::pg_detoast_datum(datum.cast_mut_ptr()) };
        Some(JsonbRef(jsonb.cast()))
    }
}

unsafe impl<'fcx> pgrx::callconv::ArgAbi<'fcx> for JsonbRef {
    unsafe fn unbox_arg_unchecked(arg: pgrx::callconv::Arg<'_, 'fcx>) -> Self {
        unsafe { arg.unbox_arg_using_from_datum() }.expect("jsonb argument must not be NULL")
    }
}

pgrx::impl_sql_translatable!(JsonbRef, arg_only = "jsonb");

impl JsonbRef {
    /// The reference time of this value in PostgreSQL-epoch microseconds, or `None`; strings
    /// without an offset are read as UTC.
    pub fn reference_time(&self, unit: NumericUnit) -> Option<i64> {
        self.reference_time_in(Reading {
            unit,
            local: LocalTimes::Utc,
        })
    }

    /// The reference time of this value, as `reading` says.
    pub fn reference_time_in(&self, reading: Reading) -> Option<i64> {
        // SAFETY: the pointer is a detoasted jsonb datum valid for this call.
        unsafe { container_time(&raw mut (*self.0).root, reading) }
    }

    /// The number this value is, as PostgreSQL prints it, when it is a number (scalar).
    pub fn number_text(&self) -> Option<String> {
        // SAFETY: as above.
        unsafe {
            let container = &raw mut (*self.0).root;
            if header_flags((*container).header) & pg_sys::JB_FSCALAR == 0 {
                return None;
            }
            let mut value = std::mem::MaybeUninit::<pg_sys::JsonbValue>::uninit();
            if !pg_sys::JsonbExtractScalar(container, value.as_mut_ptr())
                || (*value.as_ptr()).type_ != pg_sys::jbvType::jbvNumeric
            {
                return None;
            }
            numeric_text((*value.as_ptr()).val.numeric)
        }
    }
}

unsafe extern "C-unwind" {
    /// `timezone(text, timestamp)`, the C function itself (pgrx binds it as a Rust wrapper).
    fn timestamp_zone(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
}

/// How strings without an offset are read.
#[derive(Clone, Copy)]
pub enum LocalTimes {
    /// As UTC (ArangoDB's rule, the default).
    Utc,
    /// In a time zone, given as a `text` datum, through PostgreSQL's own `timezone(text,
    /// timestamp)` (`AT TIME ZONE`): IMMUTABLE, and daylight saving gaps and overlaps read as
    /// PostgreSQL reads them everywhere.
    In(pg_sys::Datum),
}

/// How a JSON value is read: the unit of numbers, and the zone of strings without an offset.
#[derive(Clone, Copy)]
pub struct Reading {
    pub unit: NumericUnit,
    pub local: LocalTimes,
}

impl Reading {
    /// The instant of a parsed date string.
    fn instant(self, parsed: parse::Parsed) -> Option<i64> {
        match self.local {
            _ if parsed.has_offset => Some(parsed.micros),
            LocalTimes::Utc => Some(parsed.micros),
            LocalTimes::In(zone) => {
                // SAFETY: timestamp_zone takes (text, timestamp) and returns a timestamptz; the
                // parser's range (years 0000–9999) stays far inside PostgreSQL's, so the
                // conversion cannot fail for lack of range.
                let instant = unsafe {
                    pg_sys::DirectFunctionCall2Coll(
                        Some(timestamp_zone),
                        pg_sys::InvalidOid,
                        zone,
                        pg_sys::Datum::from(parsed.micros),
                    )
                };
                Some(instant.value() as i64)
            }
        }
    }

    /// A date string's instant, or `None`.
    pub fn date_string(self, text: &str) -> Option<i64> {
        self.instant(parse::parse_datestring_local(text)?)
    }
}

const fn header_flags(header: u32) -> u32 {
    header & !pg_sys::JB_CMASK
}

/// Top level: a scalar, an array (earliest element wins), or a `$date` object.
unsafe fn container_time(container: *mut pg_sys::JsonbContainer, reading: Reading) -> Option<i64> {
    let header = unsafe { (*container).header };
    let flags = header_flags(header);
    if flags & pg_sys::JB_FSCALAR != 0 {
        let mut value = std::mem::MaybeUninit::<pg_sys::JsonbValue>::uninit();
        if !unsafe { pg_sys::JsonbExtractScalar(container, value.as_mut_ptr()) } {
            return None;
        }
        return unsafe { scalar_time(value.as_ptr(), reading) };
    }
    if flags & pg_sys::JB_FARRAY != 0 {
        let count = header & pg_sys::JB_CMASK;
        let mut earliest: Option<i64> = None;
        for i in 0..count {
            let element = unsafe { pg_sys::getIthJsonbValueFromContainer(container, i) };
            if element.is_null() {
                continue;
            }
            let time = unsafe { element_time(element, reading) };
            unsafe { pg_sys::pfree(element.cast()) };
            earliest = match (earliest, time) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        return earliest;
    }
    if flags & pg_sys::JB_FOBJECT != 0 {
        return unsafe { date_object_time(container, reading) };
    }
    None
}

/// An array element: a scalar or a `$date` object (nested arrays are not dates).
unsafe fn element_time(value: *const pg_sys::JsonbValue, reading: Reading) -> Option<i64> {
    if unsafe { (*value).type_ } == pg_sys::jbvType::jbvBinary {
        let inner = unsafe { (*value).val.binary.data };
        let flags = header_flags(unsafe { (*inner).header });
        if flags & pg_sys::JB_FOBJECT != 0 {
            return unsafe { date_object_time(inner, reading) };
        }
        return None;
    }
    unsafe { scalar_time(value, reading) }
}

/// A string is a date string; a number is a Unix time in `unit`; anything else is no time.
unsafe fn scalar_time(value: *const pg_sys::JsonbValue, reading: Reading) -> Option<i64> {
    match unsafe { (*value).type_ } {
        pg_sys::jbvType::jbvString => reading.date_string(unsafe { string_of(value) }?),
        pg_sys::jbvType::jbvNumeric => unsafe { numeric_time((*value).val.numeric, reading.unit) },
        _ => None,
    }
}

/// The text of a jsonb string value (not NUL-terminated in the container).
unsafe fn string_of<'a>(value: *const pg_sys::JsonbValue) -> Option<&'a str> {
    let string = unsafe { (*value).val.string };
    let bytes = unsafe { std::slice::from_raw_parts(string.val as *const u8, string.len as usize) };
    std::str::from_utf8(bytes).ok()
}

/// Prints a numeric with PostgreSQL's own routine and reads it as a Unix time.
unsafe fn numeric_time(numeric: pg_sys::Numeric, unit: NumericUnit) -> Option<i64> {
    unsafe { with_numeric_text(numeric, |text| parse::parse_unix_number(text, unit)) }
}

/// A numeric as PostgreSQL prints it (`numeric_normalize`), `None` for NaN.
unsafe fn numeric_text(numeric: pg_sys::Numeric) -> Option<String> {
    unsafe { with_numeric_text(numeric, |text| Some(text.to_string())) }
}

/// `read` of the text PostgreSQL prints for a numeric (`numeric_normalize`, freed after), or
/// `None` for NaN.
unsafe fn with_numeric_text<R>(
    numeric: pg_sys::Numeric,
    read: impl FnOnce(&str) -> Option<R>,
) -> Option<R> {
    let numeric = unsafe { pg_sys::pg_detoast_datum(numeric.cast()) } as pg_sys::Numeric;
    if unsafe { pg_sys::numeric_is_nan(numeric) } {
        return None;
    }
    let text = unsafe { pg_sys::numeric_normalize(numeric) };
    let result = unsafe { CStr::from_ptr(text) }.to_str().ok().and_then(read);
    unsafe { pg_sys::pfree(text.cast()) };
    result
}

/// Looks up `key` in an object container.
unsafe fn object_get(
    container: *mut pg_sys::JsonbContainer,
    key: &'static str,
) -> Option<*mut pg_sys::JsonbValue> {
    let mut probe: pg_sys::JsonbValue = unsafe { std::mem::zeroed() };
    probe.type_ = pg_sys::jbvType::jbvString;
    probe.val.string = pg_sys::JsonbValue__bindgen_ty_1__bindgen_ty_1 {
        len: key.len() as i32,
        val: key.as_ptr() as *mut std::ffi::c_char,
    };
    let found =
        unsafe { pg_sys::findJsonbValueFromContainer(container, pg_sys::JB_FOBJECT, &mut probe) };
    (!found.is_null()).then_some(found)
}

/// MongoDB Extended JSON: `{"$date": "<ISO-8601>"}`, `{"$date": <ms>}` or
/// `{"$date": {"$numberLong": "<ms>"}}`; the object must hold that one key only.
unsafe fn date_object_time(
    container: *mut pg_sys::JsonbContainer,
    reading: Reading,
) -> Option<i64> {
    if unsafe { (*container).header } & pg_sys::JB_CMASK != 1 {
        return None;
    }
    let date = unsafe { object_get(container, "$date") }?;
    let ms = NumericUnit::Milliseconds;
    match unsafe { (*date).type_ } {
        pg_sys::jbvType::jbvString => reading.date_string(unsafe { string_of(date) }?),
        pg_sys::jbvType::jbvNumeric => unsafe { numeric_time((*date).val.numeric, ms) },
        pg_sys::jbvType::jbvBinary => {
            let inner = unsafe { (*date).val.binary.data };
            let header = unsafe { (*inner).header };
            if header_flags(header) & pg_sys::JB_FOBJECT == 0 || header & pg_sys::JB_CMASK != 1 {
                return None;
            }
            let long = unsafe { object_get(inner, "$numberLong") }?;
            if unsafe { (*long).type_ } != pg_sys::jbvType::jbvString {
                return None;
            }
            parse::parse_unix_integer_string(unsafe { string_of(long) }?, ms)
        }
        _ => None,
    }
}
