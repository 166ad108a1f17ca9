//! Touch (Cosmos DB's `_ts`, "time since last write"): `ttl_index_create(…, touch => true)`
//! keeps a TTL index's reference attribute at the time of the row's last INSERT or UPDATE, so
//! a row expires `expire_after` past its last write.
//!
//! A `BEFORE INSERT OR UPDATE … FOR EACH ROW` trigger named `jsonb_ttl_touch`, which the
//! extension creates with the TTL index (on a partitioned table, on the parent: PostgreSQL
//! clones it to every partition) and drops with it. Its arguments say what to write, so a write
//! reads no catalog: the column, the numeric unit, the zone, and the keys inside a JSON
//! document. The time is the transaction's start (`now()`), what a `DEFAULT now()` gives. What
//! a JSON document gets is in `jsonb_ttl_core::touch`; a plain column gets the time in its own
//! type: a `timestamp` or `date` column in the TTL index's zone, a number in its unit, text as
//! ISO 8601 in UTC. ALTER TABLE … RENAME COLUMN and `ttl_index_alter(…, time_zone)` write the
//! trigger again with the new arguments.

use crate::catalog::{self, TtlIndex};
use crate::error::raise;
use crate::extension::Extension;
use jsonb_ttl_core::parse::NumericUnit;
use jsonb_ttl_core::path::ColumnKind;
use jsonb_ttl_core::touch::{epoch, iso_utc, leaf, nested};
use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use pgrx::spi::quote_literal;
use pgrx::{IntoDatum, PgSqlErrorCode};
use std::ffi::CString;
use std::sync::atomic::{AtomicU32, Ordering};

/// The trigger's name, on every table with `touch => true`.
pub const TRIGGER: &str = "jsonb_ttl_touch";

/// Microseconds from 1970-01-01 to 2000-01-01, PostgreSQL's epoch.
const POSTGRES_EPOCH_UNIX_MICROS: i64 = 946_684_800_000_000;

#[pg_trigger]
fn _ttl_touch<'a>(
    trigger: &'a PgTrigger<'a>,
) -> Result<Option<PgHeapTuple<'a, impl WhoAllocated>>, PgHeapTupleError> {
    let args = trigger.extra_args().unwrap_or_default();
    let [column, unit, zone, keys @ ..] = args.as_slice() else {
        error!("jsonb_ttl: _ttl_touch() runs only as the trigger ttl_index_create(…, touch => true) makes");
    };
    let unit = NumericUnit::from_name(unit).unwrap_or(NumericUnit::Seconds);
    let zone = if zone.is_empty() {
        "UTC"
    } else {
        zone.as_str()
    };
    let Some(new) = trigger.new() else {
        error!("jsonb_ttl: _ttl_touch() runs BEFORE INSERT OR UPDATE, FOR EACH ROW");
    };
    let relation = unsafe { (*trigger.trigger_data().tg_relation).rd_id };
    if matches!(trigger.op(), Ok(PgTriggerOperation::Update)) && is_updating(relation) {
        // a field TTL's UPDATE of this table (docs/field_ttl.md) is no write of the
        // application's: the row's point in time stays
        return Ok(Some(new.into_owned()));
    }
    let mut tuple = new.into_owned();
    let Some((attno, attribute)) = tuple.get_attribute_by_name(column) else {
        error!("jsonb_ttl: the touch trigger's column {column} is gone; recreate the TTL index");
    };
    let (type_oid, typmod) = (attribute.atttypid, attribute.atttypmod);
    let now = unsafe { pg_sys::GetCurrentTransactionStartTimestamp() };
    let unix_micros = now + POSTGRES_EPOCH_UNIX_MICROS;
    let datum = match catalog::kind_of_type(type_oid) {
        ColumnKind::Jsonb => {
            let data = trigger.trigger_data();
            let row = match trigger.op() {
                Ok(PgTriggerOperation::Update) => data.tg_newtuple,
                _ => data.tg_trigtuple,
            };
            let doc =
                unsafe { pgrx::htup::heap_getattr_raw(row, attno, (*data.tg_relation).rd_att) };
            touch_jsonb(doc, keys, unix_micros, unit).unwrap_or_else(|at| {
                raise(
                    PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
                    format!(
                        "cannot keep {column}.{} at the time of the last write: {at} is not an object",
                        keys.join(".")
                    ),
                    "The TTL index of this table was created with touch => true: every write \
                     sets that attribute. Store an object there, or drop the TTL index.",
                )
            })
        }
        ColumnKind::Json => error!("jsonb_ttl: touch does not write json columns"),
        kind => column_value(kind, type_oid, typmod, now, unix_micros, unit, zone),
    };
    unsafe { tuple.set_by_index_unchecked(attno, Some(datum)) };
    Ok(Some(tuple))
}

/// `doc` (a jsonb datum; NULL is `{}`) with the time at `keys` (see `jsonb_ttl_core::touch`),
/// changed with PostgreSQL's own `jsonb_extract_path`, `jsonb_typeof` and `jsonb_set`: the rest
/// of the document is never parsed into anything else and stays exactly as it was. `Err` names
/// the part of the path that holds something other than an object.
fn touch_jsonb(
    doc: Option<pg_sys::Datum>,
    keys: &[String],
    unix_micros: i64,
    unit: NumericUnit,
) -> Result<pg_sys::Datum, String> {
    let doc = doc.unwrap_or_else(|| jsonb(&serde_json::json!({})));
    if type_of(doc).as_deref() != Some("object") {
        return Err("the document itself".into());
    }
    for depth in 0..keys.len() {
        let path = &keys[..=depth];
        let found = unsafe {
            pgrx::direct_function_call_as_datum(
                pg_sys::jsonb_extract_path,
                &[Some(doc), path.to_vec().into_datum()],
            )
        };
        let kind = found.and_then(type_of);
        let last = depth + 1 == keys.len();
        let value = match kind.as_deref() {
            None | Some("null") => nested(&keys[depth + 1..], leaf(false, unix_micros, unit)),
            Some(kind) if last => leaf(kind == "number", unix_micros, unit),
            Some("object") => continue,
            Some(_) => return Err(path.join(".")),
        };
        return Ok(unsafe {
            pgrx::direct_function_call_as_datum(
                pg_sys::jsonb_set,
                &[
                    Some(doc),
                    path.to_vec().into_datum(),
                    Some(jsonb(&value)),
                    true.into_datum(),
                ],
            )
        }
        .expect("jsonb_set of a document is a document"));
    }
    unreachable!("the loop returns at the last key")
}

/// `jsonb_typeof` of a jsonb datum.
fn type_of(value: pg_sys::Datum) -> Option<String> {
    unsafe { pgrx::direct_function_call::<String>(pg_sys::jsonb_typeof, &[Some(value)]) }
}

/// A small JSON value as a jsonb datum (through `jsonb_in`).
fn jsonb(value: &serde_json::Value) -> pg_sys::Datum {
    let text = CString::new(value.to_string()).expect("no NUL in a time");
    unsafe {
        pgrx::direct_function_call_as_datum(
            pg_sys::jsonb_in,
            &[Some(pg_sys::Datum::from(text.as_ptr()))],
        )
    }
    .expect("jsonb_in of JSON is jsonb")
}

/// The time `now` as a value of a plain column of type `type_oid`.
fn column_value(
    kind: ColumnKind,
    type_oid: Oid,
    typmod: i32,
    now: pg_sys::TimestampTz,
    unix_micros: i64,
    unit: NumericUnit,
    zone: &str,
) -> pg_sys::Datum {
    let local = || unsafe {
        pgrx::direct_function_call_as_datum(
            pg_sys::timestamptz_zone,
            &[zone.into_datum(), Some(pg_sys::Datum::from(now))],
        )
        .expect("timezone() of a time is a time")
    };
    let text = match kind {
        ColumnKind::Timestamptz => return pg_sys::Datum::from(now),
        ColumnKind::Timestamp => return local(),
        ColumnKind::Date => {
            return unsafe {
                pgrx::direct_function_call_as_datum(pg_sys::timestamp_date, &[Some(local())])
            }
            .expect("the date of a time is a date")
        }
        ColumnKind::Number => epoch(unix_micros, unit).to_string(),
        _ => iso_utc(unix_micros),
    };
    // through the column type's input function: integer, numeric, varchar(n)…
    let text = CString::new(text).expect("no NUL in a time");
    unsafe {
        let mut input = pg_sys::InvalidOid;
        let mut io_param = pg_sys::InvalidOid;
        pg_sys::getTypeInputInfo(type_oid, &mut input, &mut io_param);
        pg_sys::OidInputFunctionCall(input, text.as_ptr() as *mut _, io_param, typmod)
    }
}

/// Creates (or writes again, with `index`'s current column, unit, zone and keys) the touch
/// trigger of `index`'s table. Refuses to replace a trigger of the same name that is not ours.
pub fn install(ext: &Extension, index: &TtlIndex) {
    if index.resolved.kind == ColumnKind::Json {
        raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!(
                "touch cannot write the json column {} of {}",
                pgrx::spi::quote_identifier(&index.resolved.column),
                index.display_name
            ),
            "A json column keeps its text as written (key order, spaces, duplicate keys), which \
             writing a value into it would not. Use a jsonb column, or set the time yourself.",
        );
    }
    if trigger_is_ours(ext, index.table) == Some(false) {
        raise(
            PgSqlErrorCode::ERRCODE_DUPLICATE_OBJECT,
            format!(
                "table {} already has a trigger named {TRIGGER}",
                index.display_name
            ),
            "touch => true creates a trigger of that name: rename yours first.",
        );
    }
    let args: Vec<String> = [
        index.resolved.column.as_str(),
        index.unit.name(),
        index.time_zone.as_deref().unwrap_or(""),
    ]
    .into_iter()
    .chain(index.resolved.json_path.iter().map(String::as_str))
    .map(quote_literal)
    .collect();
    Spi::run(&format!(
        "CREATE OR REPLACE TRIGGER {TRIGGER} BEFORE INSERT OR UPDATE ON {} \
         FOR EACH ROW EXECUTE FUNCTION {}._ttl_touch({})",
        index.qualified_table,
        ext.internal(),
        args.join(", ")
    ))
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot create the touch trigger: {e}"));
}

/// Whether `table`'s trigger named [`TRIGGER`] runs our `_ttl_touch()`; `None` when it has none.
fn trigger_is_ours(ext: &Extension, table: Oid) -> Option<bool> {
    Spi::get_one_with_args::<bool>(
        "SELECT (SELECT tgfoid OPERATOR(pg_catalog.=) \
                        $3::pg_catalog.text::pg_catalog.regprocedure::pg_catalog.oid \
                 FROM pg_catalog.pg_trigger \
                 WHERE tgrelid OPERATOR(pg_catalog.=) $1 \
                   AND tgname OPERATOR(pg_catalog.=) $2::pg_catalog.name)",
        &[
            table.into(),
            TRIGGER.into(),
            format!("{}._ttl_touch()", ext.internal()).into(),
        ],
    )
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot read the triggers of the table: {e}"))
}

/// Drops the touch trigger of `index`'s table, if it is there.
pub fn remove(ext: &Extension, index: &TtlIndex) {
    remove_from(ext, index.table, &index.qualified_table);
}

/// Drops the touch trigger of `table` (`qualified`: its quoted name), if it is there and ours.
pub fn remove_from(ext: &Extension, table: Oid, qualified: &str) {
    if trigger_is_ours(ext, table) == Some(true) {
        Spi::run(&format!("DROP TRIGGER {TRIGGER} ON {qualified}"))
            .unwrap_or_else(|e| error!("jsonb_ttl: cannot drop the touch trigger: {e}"));
    }
}

/// The touch trigger of `tbl` written again from the catalog: the sql/api.sql event trigger
/// calls it after ALTER TABLE … RENAME COLUMN of the column it writes.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_touch_refresh",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_touch_refresh(tbl: Oid) {
    let ext = Extension::current();
    for index in catalog::load(&ext, Some(tbl), catalog::Scope::Entries) {
        if index.touch {
            install(&ext, &index);
        }
    }
}

/// The table a field TTL's statement is updating now in this backend (0: none): the touch
/// trigger leaves the row's point in time alone for that table's rows (the update is the
/// worker's, not the application's); for any other table, and in the worker's deletes, it
/// touches as always.
static UPDATING: AtomicU32 = AtomicU32::new(0);

/// Runs `f` (the statements of a field TTL of `table`) with [`is_updating`] true for `table`,
/// false again after, whether `f` returns or raises.
pub fn updating<R>(table: Oid, f: impl FnOnce() -> R) -> R {
    struct Reset(u32);
    impl Drop for Reset {
        fn drop(&mut self) {
            UPDATING.store(self.0, Ordering::SeqCst);
        }
    }
    let _reset = Reset(UPDATING.swap(table.to_u32(), Ordering::SeqCst));
    f()
}

/// Whether a field TTL's statement is updating `table` now (see [`updating`]).
pub fn is_updating(table: Oid) -> bool {
    table != Oid::INVALID && UPDATING.load(Ordering::SeqCst) == table.to_u32()
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::{is_updating, updating};
    use pgrx::pg_sys::Oid;
    use pgrx::prelude::*;

    #[pg_test]
    fn updating_is_reset_even_when_its_work_raises() {
        let table = Oid::from(424242u32);
        assert!(!is_updating(table));
        let inside = updating(table, || is_updating(table));
        assert!(inside);
        let raised = std::panic::catch_unwind(|| updating(table, || panic!("raised")));
        assert!(raised.is_err());
        assert!(!is_updating(table), "reset on the way out");
    }
}
