-- jsonb_ttl, the edition for managed services: SQL and PL/pgSQL only (no C, no Rust, no
-- $libdir), installed by a role that is not a superuser (CREATE on the database), purged by a
-- procedure pg_cron calls. scripts/managed.sh concatenates managed/*.sql in the order of their
-- numbers into build/managed/jsonb_ttl.sql (psql -f) and build/managed/jsonb_ttl_pgtle.sql
-- (pg_tle). See managed/README.md.
--
-- Names as in the Rust edition: the documented functions and views carry the ttl_ prefix and
-- live in the schema jsonb_ttl; internals live in jsonb_ttl_internal, which no other role may
-- create in. Every statement here and every one the functions build is written down to its
-- operators (OPERATOR(pg_catalog.=)) and functions (pg_catalog.…), every function pins its
-- search_path, every name that reaches SQL text goes through format('%I') or regclass.

-- (as an extension, pg_tle's CREATE EXTENSION has made it already: the control's schema)
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_namespace n WHERE n.nspname OPERATOR(pg_catalog.=) 'jsonb_ttl') THEN
        CREATE SCHEMA jsonb_ttl;
    END IF;
END
$$;
COMMENT ON SCHEMA jsonb_ttl IS 'jsonb_ttl (SQL edition): TTL indexes for tables of JSONB documents.';
GRANT USAGE ON SCHEMA jsonb_ttl TO PUBLIC;
CREATE SCHEMA jsonb_ttl_internal;
COMMENT ON SCHEMA jsonb_ttl_internal IS 'jsonb_ttl: internals; nothing here is called directly.';
GRANT USAGE ON SCHEMA jsonb_ttl_internal TO PUBLIC;

-- Which edition and version this is.
CREATE FUNCTION jsonb_ttl.ttl_edition()
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT 'jsonb_ttl @VERSION@ (SQL edition, for managed services)'::pg_catalog.text $$;
