-- jsonb_ttl 0.3.0 → 0.4.0 (ALTER EXTENSION jsonb_ttl UPDATE). Every later change to the SQL
-- surface before 0.4.0 is released extends this file. Like the install script, every statement
-- here is written down to its operators, types and functions (OPERATOR(pg_catalog.=),
-- pg_catalog.…), and it creates nothing in the extension's schema, where others may create.
\echo Use "ALTER EXTENSION jsonb_ttl UPDATE" to load this file. \quit

-- ttl_expire_now(): no table named is '-' (no table), no longer NULL, so that a NULL named by
-- mistake (to_regclass() of a mistyped name) is an error instead of a purge of every table.
-- The same function, its default changed in place.
CREATE OR REPLACE FUNCTION @extschema@.ttl_expire_now(tbl pg_catalog.regclass DEFAULT '-'::pg_catalog.regclass,
                                                      max_rows pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.int8
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_expire_now(tbl, max_rows) $$;

-- A pause reason is at most 1 kB now (ttl_index_pause refuses longer ones); longer ones that
-- 0.3.0 let an owner write are cut to the most whole characters that fit in 1,024 bytes, so
-- that nothing reading the catalog meets one.
UPDATE @extschema@.ttl_index t
   SET paused_reason = (SELECT pg_catalog."left"(c.r, n.n)
                        FROM (SELECT pg_catalog."left"(t.paused_reason, 1024) AS r) c,
                             LATERAL (SELECT pg_catalog.max(g.n) AS n
                                      FROM pg_catalog.generate_series(0, 1024) g(n)
                                      WHERE pg_catalog.octet_length(pg_catalog."left"(c.r, g.n))
                                            OPERATOR(pg_catalog.<=) 1024) n)
 WHERE pg_catalog.octet_length(t.paused_reason) OPERATOR(pg_catalog.>) 1024;

-- The set-returning functions behind ttl_stats planned near their true size (at the default
-- estimate of 1,000 rows each, JIT compiled the view on every read: 0.9 s with one TTL table).
ALTER FUNCTION jsonb_ttl_internal._ttl_targets(pg_catalog.regclass) ROWS 1;
ALTER FUNCTION jsonb_ttl_internal._ttl_stats() ROWS 100;
ALTER FUNCTION jsonb_ttl_internal._ttl_undeletable() ROWS 10;

-- ttl_index_drop(tbl, if_exists => true), for migrations (as in sql/api.sql).
CREATE FUNCTION @extschema@.ttl_index_drop(tbl pg_catalog.regclass, if_exists pg_catalog.bool)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF if_exists AND (tbl IS NULL OR NOT EXISTS (
           SELECT FROM @extschema@.ttl_index t
           WHERE t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) tbl::pg_catalog.oid)) THEN
        IF tbl IS NULL THEN
            RAISE NOTICE 'jsonb_ttl: no such table, skipping';
        ELSE
            RAISE NOTICE 'jsonb_ttl: % has no TTL index, skipping', tbl;
        END IF;
        RETURN false;
    END IF;
    RETURN jsonb_ttl_internal._ttl_index_drop(tbl);
END
$$;
COMMENT ON FUNCTION @extschema@.ttl_index_drop(pg_catalog.regclass, pg_catalog.bool) IS
  'Drops the TTL index of a table and its catalog entry; with if_exists, a table without one is a NOTICE.';
