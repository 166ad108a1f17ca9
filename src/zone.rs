//! The zone a `timestamp` or `date` column is read in when `ttl_index_create` is given none:
//! the database's own default TimeZone, what the application's sessions get, never the zone of
//! the session that creates the index (a DBA's psql in Tokyo is not the application writing the
//! rows). When the two differ, creation says which it took, and how to take the other.
//!
//! The database's default is its `ALTER DATABASE … SET TimeZone`, else the server's (its
//! configuration files, `ALTER SYSTEM` included), else PostgreSQL's built-in `GMT`. A client's
//! `PGTZ`, a role's setting or a `SET` are the creating session's own and are not read.

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;

/// The zone a `timestamp` or `date` column is read in, `time_zone` given or not.
pub(crate) fn column_zone(time_zone: Option<&str>, column: &str) -> String {
    if let Some(zone) = time_zone {
        crate::functions::time_zone_arg(zone); // raises on an unknown zone
        return zone.to_string();
    }
    let database = database_zone();
    let session = session_zone();
    if !same_zone(&database, &session) {
        crate::error::tell(
            PgLogLevel::NOTICE,
            pgrx::pg_sys::panic::ErrorReport::new(
                PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
                format!(
                    "jsonb_ttl: column {column} is read in the database's time zone {}, not in \
                     this session's {}",
                    quote(&database),
                    quote(&session)
                ),
                "jsonb_ttl",
            )
            .set_detail(
                "A timestamp without time zone holds a local time; the application's sessions \
                 read and write it in the database's default TimeZone (ALTER DATABASE … SET \
                 TimeZone, else postgresql.conf), not in the zone of the session creating the \
                 TTL index.",
            )
            .set_hint(format!(
                "If the column holds local times of {}, pass time_zone => {} \
                 (ttl_index_alter changes it later).",
                quote(&session),
                quote(&session)
            )),
        );
    }
    database
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
