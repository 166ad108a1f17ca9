//! The operator's controls of one TTL index: a pause by hand (`ttl_index_pause`), a daily
//! delete window in the index's time zone, its own batch and rate limits under the server's
//! (`jsonb_ttl.batch_size`, `jsonb_ttl.max_removes_per_second`), and what its deletes carry in
//! the change stream (`replication_origin`, `logical_message`). Set at creation
//! (`ttl_index_create(…, paused => true, delete_window => '01:00-05:00', …)`) or by
//! `ttl_index_alter`, shown in `ttl_indexes`; the worker reads them with the catalog.
//!

use crate::error::raise;
use crate::extension::Extension;
use crate::owner;
use crate::table::Table;
use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;

/// The controls as a call gives them: `None` leaves one as it is (at creation: unset).
#[derive(Default)]
pub(crate) struct Controls<'a> {
    pub delete_window: Option<&'a str>,
    pub batch_size: Option<i32>,
    pub max_removes_per_second: Option<i32>,
    pub replication_origin: Option<bool>,
    pub logical_message: Option<bool>,
}

/// A daily window, `HH:MM` to `HH:MM` (over midnight when the end comes first).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Window {
    pub start: (u32, u32),
    pub end: (u32, u32),
}

impl Window {
    fn text(&self, (h, m): (u32, u32)) -> String {
        format!("{h:02}:{m:02}")
    }
}

const WINDOW_HINT: &str = "Write the window as 'HH:MM-HH:MM' in the TTL index's time zone (UTC \
     without one), for example '01:00-05:00', or '22:00-06:00' across midnight; '' removes it.";

/// `delete_window` as given: `Ok(None)` for `''` or `'off'` (no window), the window, or why not.
pub(crate) fn parse_window(text: &str) -> Result<Option<Window>, String> {
    let text = text.trim();
    if text.is_empty() || text.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let time = |part: &str| -> Result<(u32, u32), String> {
        let (h, m) = part
            .trim()
            .split_once(':')
            .ok_or_else(|| format!("{part:?} is not HH:MM"))?;
        let h: u32 = h.parse().map_err(|_| format!("{part:?} is not HH:MM"))?;
        let m: u32 = m.parse().map_err(|_| format!("{part:?} is not HH:MM"))?;
        match h <= 23 && m <= 59 {
            true => Ok((h, m)),
            false => Err(format!("{part:?} is not a time of day")),
        }
    };
    let (start, end) = text
        .split_once('-')
        .ok_or_else(|| format!("{text:?} is not two times of day"))?;
    let window = Window {
        start: time(start)?,
        end: time(end)?,
    };
    match window.start == window.end {
        true => Err(format!("{text:?} is empty: it starts when it ends")),
        false => Ok(Some(window)),
    }
}

fn window_arg(text: &str) -> Option<Window> {
    parse_window(text).unwrap_or_else(|e| {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("delete_window: {e}"),
            WINDOW_HINT,
        )
    })
}

/// A limit of the index's own: positive, or 0 for none (the server's setting alone).
fn limit_arg(value: i32, name: &str, setting: &str) -> Option<i32> {
    match value {
        0 => None,
        v if v > 0 => Some(v),
        v => raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("{name} must be positive, or 0 for none, not {v}"),
            format!(
                "{name} caps this TTL index under the server's jsonb_ttl.{setting}; \
                 it never raises it."
            ),
        ),
    }
}

/// The catalog columns (and values) that `controls` sets, each checked.
fn columns<'a>(controls: &Controls) -> Vec<(&'static str, DatumWithOid<'a>)> {
    let mut columns: Vec<(&str, DatumWithOid)> = Vec::new();
    if let Some(text) = controls.delete_window {
        let window = window_arg(text);
        let times = window.map(|w| (w.text(w.start), w.text(w.end)));
        columns.push(("delete_window_start", times.clone().map(|t| t.0).into()));
        columns.push(("delete_window_end", times.map(|t| t.1).into()));
    }
    if let Some(rows) = controls.batch_size {
        columns.push((
            "batch_size",
            limit_arg(rows, "batch_size", "batch_size").into(),
        ));
    }
    if let Some(rate) = controls.max_removes_per_second {
        let rate = limit_arg(rate, "max_removes_per_second", "max_removes_per_second");
        columns.push(("max_removes_per_second", rate.into()));
    }
    if let Some(on) = controls.replication_origin {
        columns.push(("replication_origin", on.into()));
    }
    if let Some(on) = controls.logical_message {
        columns.push(("logical_message", on.into()));
    }
    columns
}

/// The cast a control's value (given as text or a number) takes to its catalog column.
fn cast(column: &str) -> &'static str {
    match column.starts_with("delete_window") {
        true => "::pg_catalog.time",
        false => "",
    }
}

/// Sets `controls` on the TTL index of `table` (as the catalog's owner).
pub(crate) fn set(ext: &Extension, table: &Table, controls: &Controls) {
    let columns = columns(controls);
    if columns.is_empty() {
        return;
    }
    crate::citus::check_managed_here(table.oid, &table.name);
    if controls.replication_origin == Some(true) {
        let owner = owner::table_owner(table.oid).unwrap_or(pg_sys::InvalidOid);
        crate::origin::check_owner(owner, &table.name);
    }
    let sets: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(i, (name, _))| format!("{name} = ${}{}", i + 2, cast(name)))
        .collect();
    let mut args: Vec<DatumWithOid> = vec![table.oid.into()];
    args.extend(columns.into_iter().map(|(_, value)| value));
    let sql = format!(
        "UPDATE {catalog} SET {} \
         WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
        sets.join(", "),
        catalog = ext.catalog(),
    );
    owner::as_catalog_owner(ext.owner(), || Spi::run_with_args(&sql, &args))
        .unwrap_or_else(|e| error!("jsonb_ttl: cannot update the TTL index: {e}"));
}

/// `ttl_index_create`'s controls on an index that existed already: the same as it has, or
/// refused (they are changed by `ttl_index_alter`, not by creating it again).
pub(crate) fn refuse_other(ext: &Extension, table: &Table, controls: &Controls, paused: bool) {
    let mut differs: Vec<&str> = Vec::new();
    for (name, value) in columns(controls) {
        let same = Spi::get_one_with_args::<bool>(
            &format!(
                "SELECT {name} IS NOT DISTINCT FROM $2{} FROM {catalog} \
                 WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
                cast(name),
                catalog = ext.catalog(),
            ),
            &[table.oid.into(), value],
        );
        if !matches!(same, Ok(Some(true))) {
            differs.push(name.trim_end_matches("_start"));
        }
    }
    if paused && !crate::table::ttl_index_of(ext, table).paused {
        differs.push("paused");
    }
    if let Some(first) = differs.first() {
        raise(
            PgSqlErrorCode::ERRCODE_DUPLICATE_OBJECT,
            format!(
                "{} has this TTL index already, with another {first}",
                table.name
            ),
            "Change it with ttl_index_alter (ttl_index_pause to pause it).",
        )
    }
}

/// Whether a new TTL index's `controls` (and `paused`) are the defaults: nothing to set.
pub(crate) fn are_defaults(controls: &Controls, paused: bool) -> bool {
    !paused
        && controls.delete_window.is_none_or(|w| w.trim().is_empty())
        && controls.batch_size.is_none()
        && controls.max_removes_per_second.is_none()
        && controls.replication_origin != Some(true)
        && controls.logical_message != Some(true)
}

/// The longest reason `ttl_index_pause` keeps: it is shown in `ttl_stats` and read with
/// every TTL index, so it is bounded.
pub(crate) const MAX_REASON_BYTES: usize = 1024;

/// Pauses the TTL index of `table` by hand (`ttl_index_pause`): the worker leaves it until
/// `ttl_index_resume`. A pause of the safety brake becomes the operator's. Returns whether it
/// was running.
pub(crate) fn pause(ext: &Extension, table: &Table, reason: Option<&str>) -> bool {
    if let Some(reason) = reason.filter(|r| r.len() > MAX_REASON_BYTES) {
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_STRING_DATA_RIGHT_TRUNCATION,
            format!(
                "the reason of a pause is at most {MAX_REASON_BYTES} bytes, not {}",
                reason.len()
            ),
            "Say why in a sentence; keep longer notes elsewhere (a ticket, a table of your own).",
        );
    }
    let who = Spi::get_one::<String>("SELECT pg_catalog.session_user()::pg_catalog.text")
        .ok()
        .flatten()
        .unwrap_or_default();
    let reason = match reason {
        Some(reason) => format!("paused by {who}: {reason}"),
        None => format!("paused by {who} (ttl_index_pause)"),
    };
    owner::as_catalog_owner(ext.owner(), || {
        Spi::get_one_with_args::<bool>(
            &format!(
                "WITH before AS (SELECT paused_at IS NULL AS running FROM {catalog} \
                                 WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1), \
                      paused AS (UPDATE {catalog} \
                                 SET paused_at = pg_catalog.now(), paused_reason = $2, \
                                     paused_by = 'operator' \
                                 WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1) \
                 SELECT running FROM before",
                catalog = ext.catalog(),
            ),
            &[table.oid.into(), reason.into()],
        )
    })
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot pause the TTL index: {e}"))
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::{parse_window, Window};

    #[test]
    fn windows() {
        let w = |s: (u32, u32), e: (u32, u32)| Ok(Some(Window { start: s, end: e }));
        let cases: &[(&str, Result<Option<Window>, ()>)] = &[
            ("01:00-05:00", w((1, 0), (5, 0)).map_err(|_: ()| ())),
            (" 22:30 - 6:00 ", w((22, 30), (6, 0)).map_err(|_: ()| ())),
            ("", Ok(None)),
            ("off", Ok(None)),
            ("01:00", Err(())),
            ("01:00-01:00", Err(())),
            ("24:00-05:00", Err(())),
            ("01:60-05:00", Err(())),
            ("1-5", Err(())),
            ("a:b-c:d", Err(())),
        ];
        for (text, want) in cases {
            assert_eq!(&parse_window(text).map_err(|_| ()), want, "{text:?}");
        }
    }
}
