-- jsonb_ttl 0.1.0 → 0.2.0 (ALTER EXTENSION jsonb_ttl UPDATE). Every later change to the SQL
-- surface before 0.2.0 is released extends this file.
\echo Use "ALTER EXTENSION jsonb_ttl UPDATE" to load this file. \quit

-- No way up (security): every function of the extension that runs SQL or reads a catalog pins
-- its search_path; the parser functions that key indexes (ttl_timestamp, ttl_unix_timestamp,
-- ttl_is_datestring) run no SQL and resolve no names, and stay without a SET clause, which
-- would cost a GUC nest level per call on every insert.
ALTER FUNCTION @extschema@._ttl_seconds(numeric) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @extschema@._ttl_index_create(oid, text, interval, text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @extschema@._ttl_index_alter(oid, interval) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @extschema@._ttl_index_drop(oid) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @extschema@._ttl_expire_now(oid, bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @extschema@._ttl_oldest_expired(oid, oid) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @extschema@._ttl_stats() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @extschema@._ttl_wake_launcher() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @extschema@.ttl_statistics() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @extschema@.ttl_stats_reset() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @extschema@.ttl_expire_now(regclass, bigint) SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.ttl_expire_now(regclass, bigint) IS
  'Removes expired rows now, in this transaction: of one table, or of every TTL table the caller owns, each as its owner.';

REVOKE EXECUTE ON FUNCTION @extschema@._ttl_wake_launcher() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@._ttl_on_sql_drop() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@._ttl_on_ddl_command_end() FROM PUBLIC;

-- ttl_stats: foreign partitions are skipped, and say so.
CREATE OR REPLACE VIEW @extschema@.ttl_stats AS
SELECT l.relid::regclass                        AS table_name,
       coalesce(s.runs, 0)                      AS runs,
       coalesce(s.rows_deleted, 0)              AS rows_deleted,
       s.last_run_at,
       coalesce(s.last_rows_deleted, 0)         AS last_rows_deleted,
       coalesce(s.limit_reached, 0)             AS limit_reached,
       coalesce(s.errors, 0)                    AS errors,
       s.last_error,
       @extschema@._ttl_oldest_expired(t.table_oid, l.relid::oid) AS oldest_expired,
       t.table_oid                              AS ttl_table,
       CASE WHEN c.relkind = 'f' THEN 'foreign table: rows are not deleted through a foreign data wrapper'
       END                                      AS skipped
FROM @extschema@.ttl_index t
CROSS JOIN LATERAL @extschema@._ttl_targets(t.table_oid) l(relid)
JOIN pg_catalog.pg_class c ON c.oid = l.relid::oid
LEFT JOIN @extschema@._ttl_stats() s ON s.table_oid = l.relid::oid;
GRANT SELECT ON @extschema@.ttl_stats TO PUBLIC;
