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
