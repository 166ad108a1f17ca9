//! The extension in this database: the schema it was created in, where its internals live, and
//! the role that owns its catalog. One value, passed down from the SQL face and the worker's
//! pass; it prints as its schema, quoted, so SQL text names a public object `{ext}.ttl_stats`.
//! The catalog table and the index expressions' helpers live in `jsonb_ttl_internal` from
//! 0.4.0's SQL on, in the extension's schema before it: [`Extension::catalog`] and
//! [`Extension::helpers`] name them for the SQL the database has.

use pgrx::pg_sys::Oid;
use pgrx::spi::quote_literal;

/// Where 0.3.0 keeps the extension's internals (see [`Extension::internal`]), and 0.4.0 its
/// catalog table and index helpers too.
pub const INTERNAL_SCHEMA: &str = "jsonb_ttl_internal";

/// jsonb_ttl as created in the current database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extension {
    /// The schema the extension lives in, quoted.
    schema: String,
    /// The version of its SQL (`pg_extension.extversion`).
    version: String,
}

impl std::fmt::Display for Extension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.schema)
    }
}

impl Extension {
    /// The extension, or `None` where it is not created; the worker never assumes `public`.
    pub fn find() -> Option<Extension> {
        crate::read::one::<Vec<String>>(
            "SELECT ARRAY[pg_catalog.quote_ident(n.nspname::text), e.extversion] \
             FROM pg_catalog.pg_extension e \
             JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace \
             WHERE e.extname OPERATOR(pg_catalog.=) 'jsonb_ttl'::pg_catalog.name",
            &[],
        )
        .and_then(|row| match <[String; 2]>::try_from(row) {
            Ok([schema, version]) => Some(Extension { schema, version }),
            Err(_) => None,
        })
    }

    /// The extension, from inside one of its functions.
    pub fn current() -> Extension {
        Extension::find().expect("jsonb_ttl is created in this database")
    }

    /// Whether the internals have a schema of their own, `jsonb_ttl_internal` (0.3.0's SQL).
    /// Only a schema that is a member of the extension counts: any role with CREATE on the
    /// database may make one of that name, and nothing of theirs may ever be called.
    pub fn has_internal_schema(&self) -> bool {
        crate::read::one::<bool>(
            "SELECT EXISTS (SELECT FROM pg_catalog.pg_depend d \
             JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) d.objid \
             JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid \
             WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass \
               AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass \
               AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog.\"char\" \
               AND e.extname OPERATOR(pg_catalog.=) 'jsonb_ttl'::pg_catalog.name \
               AND n.nspname OPERATOR(pg_catalog.=) 'jsonb_ttl_internal'::pg_catalog.name)", &[],
        )
        .unwrap_or(false)
    }

    /// The schema of the extension's internals: `jsonb_ttl_internal`, or, in a database still
    /// at an older version's SQL (before `ALTER EXTENSION jsonb_ttl UPDATE`), the extension's
    /// own schema, where those versions keep them.
    pub fn internal(&self) -> String {
        match self.has_internal_schema() {
            true => INTERNAL_SCHEMA.to_string(),
            false => self.schema.clone(),
        }
    }

    /// The catalog table, qualified: `jsonb_ttl_internal.ttl_index`, or the extension's own
    /// schema's before 0.4.0's SQL (`ALTER EXTENSION jsonb_ttl UPDATE` moves it).
    pub fn catalog(&self) -> String {
        format!("{}.ttl_index", self.helpers())
    }

    /// The schema of the index expressions' helpers (`ttl_text_timestamp`,
    /// `ttl_unix_timestamp`, `ttl_row_seconds`, `ttl_expires_at`) and of the catalog table:
    /// `jsonb_ttl_internal` from 0.4.0's SQL on, the extension's schema before.
    pub fn helpers(&self) -> &str {
        match self.sql_before_0_4() {
            true => &self.schema,
            false => INTERNAL_SCHEMA,
        }
    }

    /// The role that owns the catalog table (the extension's owner).
    pub fn owner(&self) -> Oid {
        let catalog = quote_literal(self.catalog());
        crate::read::one::<Oid>(
            &format!(
                "SELECT relowner FROM pg_catalog.pg_class \
             WHERE oid OPERATOR(pg_catalog.=) {catalog}::pg_catalog.regclass"
            ),
            &[],
        )
        .expect("the TTL catalog exists")
    }

    /// Whether the database's SQL is older than 0.4.0 (`pg_extension.extversion`), whose
    /// `ttl_expire_now` passed NULL for "no table" (0.4.0's passes `'-'::regclass`, so that a
    /// NULL named by mistake is an error).
    pub fn sql_before_0_4(&self) -> bool {
        matches!(self.version.as_str(), "0.1.0" | "0.2.0" | "0.3.0")
    }

    /// Whether the catalog has the `time_zone` column of 0.2.0: a database still at 0.1.0's
    /// SQL (before `ALTER EXTENSION jsonb_ttl UPDATE`) lacks it, and the library serves it all
    /// the same, reading its timestamp columns as UTC as 0.1.0 did. (Loads read the column
    /// through `to_jsonb(t) ->> 'time_zone'`, NULL when it is absent.)
    pub fn has_time_zone(&self) -> bool {
        self.has_catalog_column("time_zone")
    }

    /// Whether the catalog has the operator's controls (`paused_by`, `delete_window_start`…):
    /// not before 0.3.0's SQL.
    pub fn has_controls(&self) -> bool {
        self.has_catalog_column("paused_by")
    }

    fn has_catalog_column(&self, column: &str) -> bool {
        let catalog = quote_literal(self.catalog());
        crate::read::one::<bool>(
            &format!(
                "SELECT EXISTS (SELECT FROM pg_catalog.pg_attribute \
             WHERE attrelid OPERATOR(pg_catalog.=) {catalog}::pg_catalog.regclass \
               AND attname OPERATOR(pg_catalog.=) $1::pg_catalog.name \
               AND NOT attisdropped)"
            ),
            &[column.into()],
        )
        .unwrap_or(false)
    }
}
