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
    let (default, from) = owner_zone(crate::owner::table_owner(table));
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

/// The TimeZone the sessions of `owner` get before any client asks for another, and where it
/// comes from.
fn owner_zone(owner: Option<pg_sys::Oid>) -> (String, &'static str) {
    let stored = owner.and_then(|owner| {
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

/// The TimeZone a new session of this database gets before any client or role asks for
/// another: `ALTER DATABASE … SET TimeZone`, else the server's configuration files, else `GMT`.
pub(crate) fn database_zone() -> String {
    database_setting()
        .or_else(server_setting)
        .unwrap_or_else(|| "GMT".to_string())
}

/// `ALTER DATABASE <this one> SET TimeZone` (for all roles), if any. `pg_db_role_setting` is
/// readable by all.
fn database_setting() -> Option<String> {
    crate::read::one::<String>(
        "SELECT pg_catalog.substr(u.setting, pg_catalog.strpos(u.setting, '=') OPERATOR(pg_catalog.+) 1) \
         FROM pg_catalog.pg_db_role_setting s, pg_catalog.unnest(s.setconfig) u(setting) \
         WHERE s.setdatabase OPERATOR(pg_catalog.=) \
               (SELECT oid FROM pg_catalog.pg_database \
                WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) \
           AND s.setrole OPERATOR(pg_catalog.=) 0::pg_catalog.oid \
           AND pg_catalog.lower(pg_catalog.split_part(u.setting, '=', 1)) \
               OPERATOR(pg_catalog.=) 'timezone'",
        &[],
    )
}

/// The server's TimeZone as its configuration files set it (`postgresql.conf`, `ALTER SYSTEM`):
/// the last valid `timezone` line of `pg_file_settings`. That view is for superusers, and it
/// is read as the bootstrap superuser, in a security-restricted operation, by this one query
/// of catalog functions only.
fn server_setting() -> Option<String> {
    let mut user = pg_sys::InvalidOid;
    let mut context = 0i32;
    unsafe {
        pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
        pg_sys::SetUserIdAndSecContext(
            pg_sys::Oid::from(pg_sys::BOOTSTRAP_SUPERUSERID),
            context | pg_sys::SECURITY_RESTRICTED_OPERATION as i32,
        );
    }
    struct Back(pg_sys::Oid, i32);
    impl Drop for Back {
        fn drop(&mut self) {
            unsafe { pg_sys::SetUserIdAndSecContext(self.0, self.1) };
        }
    }
    let _back = Back(user, context);
    crate::read::one::<String>(
        "SELECT setting FROM pg_catalog.pg_file_settings \
         WHERE pg_catalog.lower(name) OPERATOR(pg_catalog.=) 'timezone' AND error IS NULL \
         ORDER BY seqno DESC LIMIT 1",
        &[],
    )
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
