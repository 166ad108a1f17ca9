//! The zone a `timestamp` or `date` column is read in when `ttl_index_create` is given none.
//! Never a guess: a DBA's psql in Tokyo is not the application writing the rows, and an
//! application that sets its sessions' zone itself (Django's `TIME_ZONE`, a JDBC driver) is
//! not the database's default either. The default is the zone the table owner's own sessions
//! get (`ALTER ROLE … IN DATABASE`, `ALTER ROLE`, `ALTER DATABASE`, `ALTER ROLE ALL … SET
//! TimeZone`, else the server's configuration files, else `GMT`). When the creating session's
//! zone is that one, it is taken; when it differs, nothing says which of the two writes the
//! rows, and creation asks for `time_zone` (an error naming both).

use crate::error::raise_with_detail;
use pgrx::pg_sys;
use pgrx::PgSqlErrorCode;

/// The zone a `timestamp` or `date` column `column` of `table` is read in, `time_zone` given
/// or not (see the module's text).
pub(crate) fn column_zone(time_zone: Option<&str>, column: &str, table: pg_sys::Oid) -> String {
    if let Some(zone) = time_zone {
        crate::functions::time_zone_arg(zone); // raises on an unknown zone
        return zone.to_string();
    }
    let (default, from) = owner_zone(table);
    let session = session_zone();
    if same_zone(&default, &session) {
        return default;
    }
    raise_with_detail(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("column {column} holds local times: say which time zone they are in (time_zone)"),
        format!(
            "This session's TimeZone is {}; the sessions of the table's owner get {} ({from}). \
             A timestamp without time zone is read in one zone, and the wrong one expires \
             every row hours early or late.",
            quote(&session),
            quote(&default)
        ),
        format!(
            "Pass time_zone => {} if the application writes the column in the owner's default \
             zone, or time_zone => {} if its sessions use this one.",
            quote(&default),
            quote(&session)
        ),
    )
}

/// The TimeZone the sessions of `table`'s owner get before any client asks for another (what
/// the application gets when it connects as the owner, and the one advice suggests for JSON
/// strings without an offset).
pub(crate) fn owner_default_zone(table: pg_sys::Oid) -> String {
    owner_zone(table).0
}

/// [`owner_default_zone`], and where it comes from.
fn owner_zone(table: pg_sys::Oid) -> (String, &'static str) {
    let stored = crate::owner::table_owner(table).and_then(|owner| {
        crate::owner::role_settings(owner)
            .into_iter()
            .find(|(name, _)| name.to_bytes() == b"timezone")
            .map(|(_, value)| value.to_string_lossy().into_owned())
    });
    match stored {
        Some(zone) => (zone, "its role's and the database's settings"),
        None => match server_setting() {
            Some(zone) => (zone, "the server's configuration"),
            None => ("GMT".to_string(), "PostgreSQL's default"),
        },
    }
}

fn quote(zone: &str) -> String {
    pgrx::spi::quote_literal(zone)
}

/// The TimeZone of this session (`SET`, `PGTZ`, a role's setting or the default).
pub(crate) fn session_zone() -> String {
    unsafe { std::ffi::CStr::from_ptr(pg_sys::pg_get_timezone_name(pg_sys::session_timezone)) }
        .to_string_lossy()
        .into_owned()
}

/// The server's TimeZone as its configuration files set it (`postgresql.conf`, `ALTER SYSTEM`):
/// the last valid `timezone` line of `pg_file_settings`. That view is for superusers: it is
/// read as the bootstrap superuser (as the catalog's owner is, [`crate::owner`]), by this one
/// query of catalog objects only.
fn server_setting() -> Option<String> {
    let superuser = pg_sys::Oid::from(pg_sys::BOOTSTRAP_SUPERUSERID);
    crate::owner::as_catalog_owner(superuser, || {
        crate::read::one::<String>(
            "SELECT setting FROM pg_catalog.pg_file_settings \
             WHERE pg_catalog.lower(name) OPERATOR(pg_catalog.=) 'timezone' AND error IS NULL \
             ORDER BY seqno DESC LIMIT 1",
            &[],
        )
    })
}

/// Whether two zone names read times alike: equal, or both names of UTC.
pub(crate) fn same_zone(a: &str, b: &str) -> bool {
    const UTC: &[&str] = &[
        "utc",
        "etc/utc",
        "gmt",
        "etc/gmt",
        "universal",
        "etc/universal",
        "zulu",
        "etc/zulu",
        "uct",
        "etc/uct",
        "gmt0",
        "etc/gmt0",
        "gmt+0",
        "gmt-0",
        "etc/gmt+0",
        "etc/gmt-0",
        "greenwich",
        "etc/greenwich",
    ];
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    a == b || (UTC.contains(&a.as_str()) && UTC.contains(&b.as_str()))
}

#[cfg(test)]
mod tests {
    use super::same_zone;

    #[test]
    fn zones() {
        let cases: &[(&str, &str, bool)] = &[
            ("UTC", "Etc/UTC", true),
            ("GMT", "UTC", true),
            ("Europe/Paris", "europe/paris", true),
            ("Asia/Tokyo", "Etc/UTC", false),
            ("America/New_York", "US/Eastern", false), // aliases beyond UTC: said, not guessed
        ];
        for &(a, b, want) in cases {
            assert_eq!(same_zone(a, b), want, "{a} {b}");
        }
    }
}
