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

-- ttl_stats planned without JIT whatever the number of TTL tables, and faster (1,000 TTL tables:
-- 50 to 65 ms → 10 to 15 ms): the view reads a function that plans it with jit = off, takes the
-- table itself as its own target without a call of _ttl_targets() (only a partitioned table's
-- leaves need it) and counts a table's rows that never expire from its recorded indexes (as in
-- sql/api.sql). The same columns: the roles' views over ttl_stats keep working.
CREATE FUNCTION jsonb_ttl_internal._ttl_stats_rows()
RETURNS TABLE (table_name pg_catalog.regclass, runs pg_catalog.int8, rows_deleted pg_catalog.int8,
               last_run_at pg_catalog.timestamptz, last_rows_deleted pg_catalog.int8,
               limit_reached pg_catalog.int8, errors pg_catalog.int8, last_error pg_catalog.text,
               oldest_expired pg_catalog.timestamptz, ttl_table pg_catalog.regclass,
               skipped pg_catalog.text, rows_undeletable pg_catalog.int8,
               last_success_at pg_catalog.timestamptz, last_run_ms pg_catalog.float8,
               backlog pg_catalog.int8, rows_never_expire pg_catalog.int8, paused pg_catalog.bool,
               paused_by pg_catalog.text, part pg_catalog.text)
LANGUAGE sql STABLE ROWS 100
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT l.relid::pg_catalog.regclass             AS table_name,
       coalesce(s.runs, 0)                      AS runs,
       coalesce(s.rows_deleted, 0)              AS rows_deleted,
       s.last_run_at,
       coalesce(s.last_rows_deleted, 0)         AS last_rows_deleted,
       coalesce(s.limit_reached, 0)             AS limit_reached,
       coalesce(s.errors, 0)                    AS errors,
       s.last_error,
       s.oldest_expired,
       t.table_oid                              AS ttl_table,
       CASE WHEN c.relkind OPERATOR(pg_catalog.=) 'f'::pg_catalog."char"
            THEN 'foreign table: rows are not deleted through a foreign data wrapper'::pg_catalog.text
            WHEN t.paused_at IS NOT NULL THEN t.paused_reason
            WHEN t.delete_window_start IS NOT NULL
                 AND NOT jsonb_ttl_internal._ttl_in_window(t.delete_window_start, t.delete_window_end, t.time_zone)
            THEN 'outside its delete_window '::pg_catalog.text OPERATOR(pg_catalog.||)
                 jsonb_ttl_internal._ttl_window_text(t.delete_window_start, t.delete_window_end)
                 OPERATOR(pg_catalog.||) ' ('::pg_catalog.text OPERATOR(pg_catalog.||)
                 coalesce(t.time_zone, 'UTC'::pg_catalog.text) OPERATOR(pg_catalog.||) ')'::pg_catalog.text
            ELSE s.set_aside
       END                                      AS skipped,
       coalesce(u.rows_undeletable, 0)          AS rows_undeletable,
       s.last_success_at,
       s.last_run_ms,
       s.backlog,
       CASE WHEN t.filter IS NULL AND c.reltuples OPERATOR(pg_catalog.>=) 0::pg_catalog.float4
                 AND NOT coalesce(p.part OPERATOR(pg_catalog.=) 'row_ttl'::pg_catalog.text, false) THEN
           CASE WHEN l.relid::pg_catalog.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid THEN
           -- the table itself: its recorded indexes (ix)
           GREATEST(0::pg_catalog.float4, c.reltuples OPERATOR(pg_catalog.-) ix.index_rows)::pg_catalog.int8
           ELSE
           -- a leaf partition: its indexes that are partitions of the recorded ones
           (SELECT GREATEST(0::pg_catalog.float4, c.reltuples OPERATOR(pg_catalog.-) pg_catalog.sum(ic.reltuples))::pg_catalog.int8
            FROM pg_catalog.pg_index x
            JOIN pg_catalog.pg_class ic ON ic.oid OPERATOR(pg_catalog.=) x.indexrelid
            WHERE x.indrelid OPERATOR(pg_catalog.=) l.relid::pg_catalog.oid
              AND ic.reltuples OPERATOR(pg_catalog.>=) 0::pg_catalog.float4
              AND EXISTS (SELECT FROM jsonb_ttl_internal.index_oid o
                          WHERE o.table_oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
                            AND (o.index_oid OPERATOR(pg_catalog.=) x.indexrelid
                                 OR o.index_oid OPERATOR(pg_catalog.=) ANY (ARRAY(
                                SELECT a.relid::pg_catalog.oid FROM pg_catalog.pg_partition_ancestors(x.indexrelid) a))))
            HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0)
           END
       END                                      AS rows_never_expire,
       t.paused_at IS NOT NULL                  AS paused,
       t.paused_by,
       p.part
FROM @extschema@.ttl_index t
-- the tables the worker deletes from: the table itself, or the leaves of a partitioned one (a
-- join, not a lateral call per TTL index: the planner joins the statistics by hash once)
JOIN (SELECT r.table_oid::pg_catalog.oid AS ttl, r.table_oid::pg_catalog.oid AS relid
      FROM @extschema@.ttl_index r
      JOIN pg_catalog.pg_class rc ON rc.oid OPERATOR(pg_catalog.=) r.table_oid::pg_catalog.oid
      WHERE rc.relkind OPERATOR(pg_catalog.<>) 'p'::pg_catalog."char"
      UNION ALL
      SELECT r.table_oid::pg_catalog.oid, g.relid::pg_catalog.oid
      FROM @extschema@.ttl_index r
      JOIN pg_catalog.pg_class rc ON rc.oid OPERATOR(pg_catalog.=) r.table_oid::pg_catalog.oid
      CROSS JOIN LATERAL jsonb_ttl_internal._ttl_targets(r.table_oid) g(relid)
      WHERE rc.relkind OPERATOR(pg_catalog.=) 'p'::pg_catalog."char") l
  ON l.ttl OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
-- a per-row TTL table has two parts: the rows that fall back to expire_after, and those with
-- a TTL of their own (each through its own index); any other table is one
JOIN (VALUES (NULL::pg_catalog.text, false), ('expire_after'::pg_catalog.text, true),
             ('row_ttl'::pg_catalog.text, true)) p(part, per_row)
  ON p.per_row OPERATOR(pg_catalog.=) (t.row_ttl_path IS NOT NULL)
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) l.relid::pg_catalog.oid
-- the entries of the recorded indexes of each TTL table, counted once for all
LEFT JOIN (SELECT o.table_oid, pg_catalog.sum(ic.reltuples) AS index_rows
           FROM jsonb_ttl_internal.index_oid o
           JOIN pg_catalog.pg_index x ON x.indexrelid OPERATOR(pg_catalog.=) o.index_oid
                                     AND x.indrelid OPERATOR(pg_catalog.=) o.table_oid
           JOIN pg_catalog.pg_class ic ON ic.oid OPERATOR(pg_catalog.=) x.indexrelid
           WHERE ic.reltuples OPERATOR(pg_catalog.>=) 0::pg_catalog.float4
           GROUP BY o.table_oid) ix
       ON ix.table_oid OPERATOR(pg_catalog.=) l.relid::pg_catalog.oid
LEFT JOIN jsonb_ttl_internal._ttl_stats() s
       ON s.table_oid OPERATOR(pg_catalog.=) l.relid::pg_catalog.oid
      AND s.own_ttl OPERATOR(pg_catalog.=) coalesce(p.part OPERATOR(pg_catalog.=) 'row_ttl'::pg_catalog.text, false)
LEFT JOIN jsonb_ttl_internal._ttl_undeletable() u
       ON u.table_oid OPERATOR(pg_catalog.=) l.relid::pg_catalog.oid
      AND NOT coalesce(p.part OPERATOR(pg_catalog.=) 'row_ttl'::pg_catalog.text, false)
$$;

CREATE OR REPLACE VIEW @extschema@.ttl_stats AS
SELECT * FROM jsonb_ttl_internal._ttl_stats_rows();
