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

-- ttl_stats: foreign partitions are skipped, and say so; rows the worker cannot delete are set
-- aside and counted.
CREATE FUNCTION @extschema@."_ttl_undeletable"() RETURNS TABLE (
	"table_oid" oid,  /* pg_sys :: Oid */
	"rows_undeletable" bigint  /* i64 */
)
STRICT VOLATILE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_undeletable_wrapper';
CREATE OR REPLACE VIEW @extschema@.ttl_stats AS
SELECT l.relid::regclass                        AS table_name,
       coalesce(s.runs, 0)                      AS runs,
       coalesce(s.rows_deleted, 0)              AS rows_deleted,
       s.last_run_at,
       coalesce(s.last_rows_deleted, 0)         AS last_rows_deleted,
       coalesce(s.limit_reached, 0)             AS limit_reached,
       coalesce(s.errors, 0)                    AS errors,
       s.last_error,
       @extschema@._ttl_oldest_expired(t.table_oid::pg_catalog.oid, l.relid::pg_catalog.oid) AS oldest_expired,
       t.table_oid                              AS ttl_table,
       CASE WHEN c.relkind OPERATOR(pg_catalog.=) 'f'::pg_catalog."char" THEN 'foreign table: rows are not deleted through a foreign data wrapper'
       END                                      AS skipped,
       coalesce(u.rows_undeletable, 0)          AS rows_undeletable
FROM @extschema@.ttl_index t
CROSS JOIN LATERAL @extschema@._ttl_targets(t.table_oid) l(relid)
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) l.relid::pg_catalog.oid
LEFT JOIN @extschema@._ttl_stats() s ON s.table_oid OPERATOR(pg_catalog.=) l.relid::pg_catalog.oid
LEFT JOIN @extschema@._ttl_undeletable() u ON u.table_oid OPERATOR(pg_catalog.=) l.relid::pg_catalog.oid;
GRANT SELECT ON @extschema@.ttl_stats TO PUBLIC;

-- Real schemas: a timestamp or date column is read in a time zone stored with the TTL index
-- (by default the creating session's TimeZone). 0.1.0 read them as UTC: existing entries keep
-- time_zone NULL, which means UTC, so their indexes stay valid as they are.
ALTER TABLE @extschema@.ttl_index ADD COLUMN time_zone text;
ALTER TYPE @extschema@.ttl_index_info ADD ATTRIBUTE time_zone text;

CREATE FUNCTION @extschema@."_ttl_index_create"(
	"tbl" oid, /* Option < Oid > */
	"path" TEXT, /* Option < & str > */
	"expire_after" interval, /* Option < Interval > */
	"numeric_unit" TEXT, /* Option < & str > */
	"time_zone" TEXT /* Option < & str > */
) RETURNS bool /* bool */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_index_create_in_zone_wrapper';

CREATE FUNCTION @extschema@."_ttl_index_set_time_zone"(
	"tbl" oid, /* Option < Oid > */
	"time_zone" TEXT /* Option < & str > */
) RETURNS void
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_index_set_time_zone_wrapper';

CREATE OR REPLACE FUNCTION @extschema@._ttl_index_info(tbl regclass, is_newly_created boolean)
RETURNS @extschema@.ttl_index_info
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.index_name, t.table_oid, t.column_name, t.path, t.expire_after, t.numeric_unit,
           is_newly_created, t.time_zone
    FROM @extschema@.ttl_index t WHERE t.table_oid = tbl
$$;

CREATE OR REPLACE VIEW @extschema@.ttl_indexes AS
SELECT t.table_oid                          AS table_name,
       t.column_name,
       t.path,
       t.json_path,
       t.expire_after,
       t.numeric_unit,
       t.index_name,
       pg_catalog.pg_relation_size(i.oid)   AS index_size,
       t.created_at,
       t.time_zone
FROM @extschema@.ttl_index t
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
LEFT JOIN pg_catalog.pg_class i ON i.relname OPERATOR(pg_catalog.=) t.index_name
                               AND i.relnamespace OPERATOR(pg_catalog.=) c.relnamespace;
GRANT SELECT ON @extschema@.ttl_indexes TO PUBLIC;

DROP FUNCTION @extschema@.ttl_index_create(regclass, text, numeric, text);
DROP FUNCTION @extschema@.ttl_index_create(regclass, text, interval, text);
DROP FUNCTION @extschema@.ttl_index_alter(regclass, interval);
CREATE FUNCTION @extschema@.ttl_index_create(tbl regclass, path text, expire_after interval,
                                 numeric_unit text DEFAULT 's', time_zone text DEFAULT NULL)
RETURNS @extschema@.ttl_index_info
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    created boolean := @extschema@._ttl_index_create(tbl::pg_catalog.oid, path, expire_after, numeric_unit, time_zone);
BEGIN
    RETURN @extschema@._ttl_index_info(tbl::pg_catalog.regclass, created);
END
$$;
COMMENT ON FUNCTION @extschema@.ttl_index_create(regclass, text, interval, text, text) IS
  'Creates the TTL index of a table: rows expire expire_after past the point in time at path.';

CREATE FUNCTION @extschema@.ttl_index_create(tbl regclass, path text, expire_after numeric,
                                 numeric_unit text DEFAULT 's', time_zone text DEFAULT NULL)
RETURNS @extschema@.ttl_index_info
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT @extschema@.ttl_index_create(tbl, path, @extschema@._ttl_seconds(expire_after), numeric_unit,
                                        time_zone)
$$;
COMMENT ON FUNCTION @extschema@.ttl_index_create(regclass, text, numeric, text, text) IS
  'Creates the TTL index of a table, with expire_after in seconds.';

CREATE FUNCTION @extschema@.ttl_index_alter(tbl regclass, expire_after interval DEFAULT NULL,
                                time_zone text DEFAULT NULL)
RETURNS @extschema@.ttl_index_info
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF expire_after IS NULL AND time_zone IS NULL THEN
        RAISE EXCEPTION 'nothing to change'
            USING ERRCODE = '22023', HINT = 'Pass expire_after, time_zone or both.';
    END IF;
    IF expire_after IS NOT NULL THEN
        PERFORM @extschema@._ttl_index_alter(tbl::pg_catalog.oid, expire_after);
    END IF;
    IF time_zone IS NOT NULL THEN
        PERFORM @extschema@._ttl_index_set_time_zone(tbl::pg_catalog.oid, time_zone);
    END IF;
    RETURN @extschema@._ttl_index_info(tbl::pg_catalog.regclass, false);
END
$$;
COMMENT ON FUNCTION @extschema@.ttl_index_alter(regclass, interval, text) IS
  'Changes expire_after of a TTL index (a catalog update) and the time zone a timestamp or date column is read in (rebuilds the index).';

-- Real schemas: JSON strings without an offset may be read in a zone (Django's
-- DjangoJSONEncoder with USE_TZ = False writes naive local times), and text columns hold dates.
CREATE FUNCTION @extschema@."ttl_timestamp"(
	"value" jsonb, /* JsonbRef */
	"numeric_unit" TEXT, /* & str */
	"time_zone" TEXT /* & str */
) RETURNS timestamp with time zone /* Option < TimestampWithTimeZone > */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_timestamp_in_zone_wrapper';

CREATE FUNCTION @extschema@."ttl_text_timestamp"(
	"value" TEXT /* & str */
) RETURNS timestamp with time zone /* Option < TimestampWithTimeZone > */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_text_timestamp_wrapper';

CREATE FUNCTION @extschema@."ttl_text_timestamp"(
	"value" TEXT, /* & str */
	"time_zone" TEXT /* & str */
) RETURNS timestamp with time zone /* Option < TimestampWithTimeZone > */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_text_timestamp_in_zone_wrapper';

-- ttl_timestamp now reads hours-only offsets (`+00`, `-08`, PostgreSQL's own timestamptz
-- output) that 0.1.0 took for no date: rows holding them were left out of the partial TTL
-- indexes and would never expire. Rebuild every TTL index over a JSON document, leaf by leaf
-- (REINDEX of a partitioned index cannot run in the update's transaction): each takes a SHARE
-- lock on its table while it builds, so writes wait, as long as a CREATE INDEX of that table.
DO $$
DECLARE
    leaf regclass;
BEGIN
    FOR leaf IN
        SELECT l.relid
        FROM @extschema@.ttl_index t
        JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
        JOIN pg_catalog.pg_class i ON i.relname OPERATOR(pg_catalog.=) t.index_name
                                  AND i.relnamespace OPERATOR(pg_catalog.=) c.relnamespace
        JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) c.oid
                                      AND a.attname OPERATOR(pg_catalog.=) t.column_name
        CROSS JOIN LATERAL (
            SELECT p.relid FROM pg_catalog.pg_partition_tree(i.oid) p WHERE p.isleaf
            UNION ALL
            SELECT i.oid::pg_catalog.regclass WHERE i.relkind OPERATOR(pg_catalog.=) 'i') l(relid)
        WHERE a.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.jsonb'::pg_catalog.regtype
    LOOP
        EXECUTE pg_catalog.format('REINDEX INDEX %s', leaf);
    END LOOP;
END
$$;

-- One batch of the worker's, in the caller's transaction, for tests that stop a batch halfway
-- (tests/isolation): superusers only.
CREATE FUNCTION @extschema@."_ttl_worker_batch"(
	"tbl" oid, /* pg_sys :: Oid */
	"max_rows" bigint /* i64 */
) RETURNS bigint /* i64 */
STRICT VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_worker_batch_wrapper';
REVOKE EXECUTE ON FUNCTION @extschema@._ttl_worker_batch(oid, bigint) FROM PUBLIC;

-- Dry run: ttl_expire_preview(tbl, at) says what the TTL index would remove, removing nothing.
CREATE FUNCTION @extschema@."_ttl_expire_preview"(
	"tbl" oid, /* Option < Oid > */
	"at" timestamp with time zone /* Option < TimestampWithTimeZone > */
) RETURNS TABLE (
	"rows" bigint,  /* i64 */
	"oldest" timestamp with time zone,  /* Option < TimestampWithTimeZone > */
	"newest" timestamp with time zone  /* Option < TimestampWithTimeZone > */
)
STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_expire_preview_wrapper';
CREATE FUNCTION @extschema@.ttl_expire_preview(tbl regclass, at timestamptz DEFAULT now())
RETURNS TABLE (rows bigint, oldest timestamptz, newest timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM @extschema@._ttl_expire_preview(tbl::pg_catalog.oid, at) $$;
COMMENT ON FUNCTION @extschema@.ttl_expire_preview(regclass, timestamptz) IS
  'What the TTL index of a table would remove at a time (now by default): how many rows, their oldest and newest reference times. Removes nothing.';

-- The safety brake: a TTL index whose next visit would remove more than
-- jsonb_ttl.max_table_fraction of its table is paused until ttl_index_resume().
ALTER TABLE @extschema@.ttl_index ADD COLUMN paused_at timestamptz,
                                  ADD COLUMN paused_reason text,
                                  ADD COLUMN brake_released boolean NOT NULL DEFAULT false;
CREATE FUNCTION @extschema@."_ttl_index_resume"(
	"tbl" oid /* Option < Oid > */
) RETURNS bool /* bool */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_index_resume_wrapper';
CREATE FUNCTION @extschema@.ttl_index_resume(tbl regclass)
RETURNS boolean
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT @extschema@._ttl_index_resume(tbl::pg_catalog.oid) $$;
COMMENT ON FUNCTION @extschema@.ttl_index_resume(regclass) IS
  'Lifts a pause of the safety brake on the TTL index of a table; the brake holds again once the worker has drained the table.';
CREATE OR REPLACE VIEW @extschema@.ttl_indexes AS
SELECT t.table_oid                          AS table_name,
       t.column_name,
       t.path,
       t.json_path,
       t.expire_after,
       t.numeric_unit,
       t.index_name,
       pg_catalog.pg_relation_size(i.oid)   AS index_size,
       t.created_at,
       t.time_zone,
       t.paused_at
FROM @extschema@.ttl_index t
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
LEFT JOIN pg_catalog.pg_class i ON i.relname OPERATOR(pg_catalog.=) t.index_name
                               AND i.relnamespace OPERATOR(pg_catalog.=) c.relnamespace;
CREATE OR REPLACE VIEW @extschema@.ttl_stats AS
SELECT l.relid::regclass                        AS table_name,
       coalesce(s.runs, 0)                      AS runs,
       coalesce(s.rows_deleted, 0)              AS rows_deleted,
       s.last_run_at,
       coalesce(s.last_rows_deleted, 0)         AS last_rows_deleted,
       coalesce(s.limit_reached, 0)             AS limit_reached,
       coalesce(s.errors, 0)                    AS errors,
       s.last_error,
       @extschema@._ttl_oldest_expired(t.table_oid::pg_catalog.oid, l.relid::pg_catalog.oid) AS oldest_expired,
       t.table_oid                              AS ttl_table,
       CASE WHEN c.relkind OPERATOR(pg_catalog.=) 'f'::pg_catalog."char" THEN 'foreign table: rows are not deleted through a foreign data wrapper'
            WHEN t.paused_at IS NOT NULL THEN t.paused_reason
       END                                      AS skipped,
       coalesce(u.rows_undeletable, 0)          AS rows_undeletable
FROM @extschema@.ttl_index t
CROSS JOIN LATERAL @extschema@._ttl_targets(t.table_oid) l(relid)
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) l.relid::pg_catalog.oid
LEFT JOIN @extschema@._ttl_stats() s ON s.table_oid OPERATOR(pg_catalog.=) l.relid::pg_catalog.oid
LEFT JOIN @extschema@._ttl_undeletable() u ON u.table_oid OPERATOR(pg_catalog.=) l.relid::pg_catalog.oid;

-- Options of ttl_index_create: filter (partial TTL, MongoDB's partialFilterExpression; only
-- rows it holds for expire), touch (Cosmos DB's _ts; a trigger keeps the reference at the
-- time of the last write), build (false: record the TTL index and hand back the statements
-- that build it without blocking writes; an existing identical index is adopted) and
-- hide_expired (a row security policy hides expired rows). Existing TTL indexes have none.
ALTER TABLE @extschema@.ttl_index ADD COLUMN filter       text,
    ADD COLUMN filter_sql   text,
    ADD COLUMN touch        boolean NOT NULL DEFAULT false,
    ADD COLUMN hide_expired boolean NOT NULL DEFAULT false,
    ADD COLUMN hide_enabled_row_security boolean NOT NULL DEFAULT false,
    ADD COLUMN row_ttl_path text,
    ADD COLUMN row_ttl_column name,
    ADD COLUMN row_ttl_json_path text[],
    ADD COLUMN row_ttl_index_name name,
    ADD COLUMN drop_partitions text CHECK (drop_partitions IN ('drop', 'detach'));
ALTER TYPE @extschema@.ttl_index_info ADD ATTRIBUTE filter           text,
    ADD ATTRIBUTE touch            boolean,
    ADD ATTRIBUTE build_sql        text[],
    ADD ATTRIBUTE hide_expired     boolean,
    ADD ATTRIBUTE row_ttl_path     text,
    ADD ATTRIBUTE drop_partitions  text;
CREATE FUNCTION @extschema@."_ttl_index_create"(
	"tbl" oid, /* Option < Oid > */
	"path" TEXT, /* Option < & str > */
	"expire_after" interval, /* Option < Interval > */
	"numeric_unit" TEXT, /* Option < & str > */
	"time_zone" TEXT, /* Option < & str > */
	"filter" TEXT, /* Option < & str > */
	"touch" bool, /* Option < bool > */
	"build" bool, /* Option < bool > */
	"hide_expired" bool, /* Option < bool > */
	"row_ttl_path" TEXT, /* Option < & str > */
	"drop_partitions" TEXT /* Option < & str > */
) RETURNS bool /* bool */
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_index_create_with_options_wrapper';
CREATE FUNCTION @extschema@."_ttl_index_set_touch"(
	"tbl" oid, /* Option < Oid > */
	"on" bool /* Option < bool > */
) RETURNS void
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_index_set_touch_wrapper';
CREATE FUNCTION @extschema@."_ttl_index_set_hide_expired"(
	"tbl" oid, /* Option < Oid > */
	"on" bool /* Option < bool > */
) RETURNS void
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_index_set_hide_expired_wrapper';
CREATE FUNCTION @extschema@."_ttl_index_set_drop_partitions"(
	"tbl" oid, /* Option < Oid > */
	"mode" TEXT /* Option < & str > */
) RETURNS void
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_index_set_drop_partitions_wrapper';
CREATE FUNCTION @extschema@."_ttl_touch_refresh"(
	"tbl" oid /* Oid */
) RETURNS void
STRICT VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_touch_refresh_wrapper';
CREATE FUNCTION @extschema@."_ttl_options_dropped"(
	"table" oid, /* Oid */
	"touch" bool, /* bool */
	"hide" bool, /* bool */
	"hide_enabled_row_security" bool, /* bool */
	"row_ttl_index" TEXT /* Option < & str > */
) RETURNS void
VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_options_dropped_wrapper';
CREATE FUNCTION @extschema@."_ttl_index_build_sql"(
	"tbl" oid /* Oid */
) RETURNS TEXT[] /* :: std :: option :: Option < Vec < String > > */
STRICT STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_index_build_sql_wrapper';
CREATE FUNCTION @extschema@."_ttl_index_role"(
	"tbl" oid, /* Oid */
	"index" oid /* Oid */
) RETURNS TEXT /* Option < String > */
STRICT STABLE PARALLEL SAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_index_role_wrapper';
CREATE FUNCTION @extschema@."_ttl_filter_refresh"(
	"tbl" oid /* Oid */
) RETURNS void
STRICT VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_filter_refresh_wrapper';
CREATE FUNCTION @extschema@."_ttl_touch"()
	RETURNS TRIGGER
	LANGUAGE c
	AS 'MODULE_PATHNAME', '_ttl_touch_wrapper';
CREATE FUNCTION @extschema@."ttl_row_seconds"(
	"value" jsonb /* JsonbRef */
) RETURNS double precision /* Option < f64 > */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_row_seconds_wrapper';
CREATE FUNCTION @extschema@."ttl_row_seconds"(
	"value" NUMERIC /* AnyNumeric */
) RETURNS double precision /* Option < f64 > */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_row_seconds_numeric_wrapper';
CREATE FUNCTION @extschema@."ttl_expires_at"(
	"reference" timestamp with time zone, /* TimestampWithTimeZone */
	"seconds" double precision /* f64 */
) RETURNS timestamp with time zone /* Option < TimestampWithTimeZone > */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ttl_expires_at_wrapper';
REVOKE EXECUTE ON FUNCTION @extschema@._ttl_touch_refresh(oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@._ttl_index_role(oid, oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@._ttl_filter_refresh(oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@._ttl_options_dropped(oid, boolean, boolean, boolean, text) FROM PUBLIC;
CREATE OR REPLACE FUNCTION @extschema@._ttl_index_info(tbl regclass, is_newly_created boolean)
RETURNS @extschema@.ttl_index_info
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.index_name, t.table_oid, t.column_name, t.path, t.expire_after, t.numeric_unit,
           is_newly_created, t.time_zone, t.filter, t.touch,
           @extschema@._ttl_index_build_sql(t.table_oid::pg_catalog.oid), t.hide_expired, t.row_ttl_path,
           t.drop_partitions
    FROM @extschema@.ttl_index t WHERE t.table_oid = tbl
$$;

DROP FUNCTION @extschema@.ttl_index_create(regclass, text, numeric, text, text);
DROP FUNCTION @extschema@.ttl_index_create(regclass, text, interval, text, text);
DROP FUNCTION @extschema@.ttl_index_alter(regclass, numeric);
DROP FUNCTION @extschema@.ttl_index_alter(regclass, interval, text);
CREATE FUNCTION @extschema@.ttl_index_create(tbl regclass, path text, expire_after interval,
                                 numeric_unit text DEFAULT 's', time_zone text DEFAULT NULL,
                                 filter text DEFAULT NULL, touch boolean DEFAULT false,
                                 build boolean DEFAULT true, hide_expired boolean DEFAULT false,
                                 row_ttl_path text DEFAULT NULL, drop_partitions text DEFAULT NULL)
RETURNS @extschema@.ttl_index_info
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    created boolean := @extschema@._ttl_index_create(tbl::pg_catalog.oid, path, expire_after, numeric_unit, time_zone,
                                                     filter, touch, build, hide_expired,
                                                     row_ttl_path, drop_partitions);
BEGIN
    RETURN @extschema@._ttl_index_info(tbl::pg_catalog.regclass, created);
END
$$;
COMMENT ON FUNCTION @extschema@.ttl_index_create(regclass, text, interval, text, text, text, boolean, boolean, boolean, text, text) IS
  'Creates the TTL index of a table: rows expire expire_after past the point in time at path.';

CREATE FUNCTION @extschema@.ttl_index_create(tbl regclass, path text, expire_after numeric,
                                 numeric_unit text DEFAULT 's', time_zone text DEFAULT NULL,
                                 filter text DEFAULT NULL, touch boolean DEFAULT false,
                                 build boolean DEFAULT true, hide_expired boolean DEFAULT false,
                                 row_ttl_path text DEFAULT NULL, drop_partitions text DEFAULT NULL)
RETURNS @extschema@.ttl_index_info
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT @extschema@.ttl_index_create(tbl, path, @extschema@._ttl_seconds(expire_after), numeric_unit,
                                        time_zone, filter, touch, build, hide_expired,
                                        row_ttl_path, drop_partitions)
$$;
COMMENT ON FUNCTION @extschema@.ttl_index_create(regclass, text, numeric, text, text, text, boolean, boolean, boolean, text, text) IS
  'Creates the TTL index of a table, with expire_after in seconds.';

CREATE FUNCTION @extschema@.ttl_index_alter(tbl regclass, expire_after interval DEFAULT NULL,
                                time_zone text DEFAULT NULL, touch boolean DEFAULT NULL,
                                hide_expired boolean DEFAULT NULL, drop_partitions text DEFAULT NULL)
RETURNS @extschema@.ttl_index_info
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF expire_after IS NULL AND time_zone IS NULL AND touch IS NULL AND hide_expired IS NULL
       AND drop_partitions IS NULL THEN
        RAISE EXCEPTION 'nothing to change'
            USING ERRCODE = '22023',
                  HINT = 'Pass expire_after, time_zone, touch, hide_expired, drop_partitions or several.';
    END IF;
    IF expire_after IS NOT NULL THEN
        PERFORM @extschema@._ttl_index_alter(tbl::pg_catalog.oid, expire_after);
    END IF;
    IF time_zone IS NOT NULL THEN
        PERFORM @extschema@._ttl_index_set_time_zone(tbl::pg_catalog.oid, time_zone);
    END IF;
    IF touch IS NOT NULL THEN
        PERFORM @extschema@._ttl_index_set_touch(tbl::pg_catalog.oid, touch);
    END IF;
    IF hide_expired IS NOT NULL THEN
        PERFORM @extschema@._ttl_index_set_hide_expired(tbl::pg_catalog.oid, hide_expired);
    END IF;
    IF drop_partitions IS NOT NULL THEN
        PERFORM @extschema@._ttl_index_set_drop_partitions(tbl::pg_catalog.oid, drop_partitions);
    END IF;
    RETURN @extschema@._ttl_index_info(tbl::pg_catalog.regclass, false);
END
$$;
COMMENT ON FUNCTION @extschema@.ttl_index_alter(regclass, interval, text, boolean, boolean, text) IS
  'Changes expire_after of a TTL index (a catalog update), the time zone a timestamp or date column is read in (rebuilds the index), touch (creates or drops its trigger), hide_expired (creates or drops its policies) and drop_partitions (drop, detach or off).';

CREATE FUNCTION @extschema@.ttl_index_alter(tbl regclass, expire_after numeric)
RETURNS @extschema@.ttl_index_info
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT @extschema@.ttl_index_alter(tbl, @extschema@._ttl_seconds(expire_after))
$$;

CREATE OR REPLACE FUNCTION @extschema@._ttl_on_sql_drop()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    gone record;
BEGIN
    FOR gone IN
        DELETE FROM @extschema@.ttl_index t
        USING pg_event_trigger_dropped_objects() d
        WHERE d.classid = 'pg_class'::regclass AND d.objsubid = 0
          AND (d.objid = t.table_oid::oid
               OR (d.object_type = 'index' AND d.object_name = t.index_name
                   AND d.schema_name = (SELECT n.nspname FROM pg_class c
                                        JOIN pg_namespace n ON n.oid = c.relnamespace
                                        WHERE c.oid = t.table_oid)))
        RETURNING t.table_oid::oid AS relid, t.touch, t.hide_expired, t.hide_enabled_row_security,
                  t.row_ttl_index_name
    LOOP
        -- DROP INDEX of a TTL index: its touch trigger, policies and per-row TTL index go with it
        IF gone.touch OR gone.hide_expired OR gone.row_ttl_index_name IS NOT NULL THEN
            PERFORM @extschema@._ttl_options_dropped(gone.relid, gone.touch, gone.hide_expired,
                                                     gone.hide_enabled_row_security,
                                                     gone.row_ttl_index_name::pg_catalog.text);
        END IF;
    END LOOP;
END
$$;
-- ALTER INDEX … RENAME (or ALTER TABLE … RENAME on an index) of a TTL index (or its per-row
-- TTL index), and ALTER TABLE … RENAME COLUMN of a column it reads: the catalog follows the
-- new name. Only entries whose recorded name no longer exists are updated (the command reports
-- the index, or the table and the renamed column's number), and only for an index that is
-- ours by its expression and predicate (_ttl_index_role), so that renaming another index of a
-- table whose TTL index is not built yet (build => false) changes nothing.
CREATE OR REPLACE FUNCTION @extschema@._ttl_on_ddl_command_end()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    renamed record;
BEGIN
    UPDATE @extschema@.ttl_index t SET index_name = c.relname
    FROM pg_event_trigger_ddl_commands() d
    JOIN pg_class c ON c.oid = d.objid
    JOIN pg_index i ON i.indexrelid = c.oid
    WHERE d.classid = 'pg_class'::regclass AND d.object_type = 'index'
      AND i.indrelid = t.table_oid::oid
      AND NOT EXISTS (SELECT FROM pg_class x
                      WHERE x.relname = t.index_name AND x.relnamespace = c.relnamespace)
      AND @extschema@._ttl_index_role(t.table_oid, c.oid) = 'index_name';
    UPDATE @extschema@.ttl_index t SET row_ttl_index_name = c.relname
    FROM pg_event_trigger_ddl_commands() d
    JOIN pg_class c ON c.oid = d.objid
    JOIN pg_index i ON i.indexrelid = c.oid
    WHERE d.classid = 'pg_class'::regclass AND d.object_type = 'index'
      AND i.indrelid = t.table_oid::oid AND t.row_ttl_index_name IS NOT NULL
      AND NOT EXISTS (SELECT FROM pg_class x
                      WHERE x.relname = t.row_ttl_index_name AND x.relnamespace = c.relnamespace)
      AND @extschema@._ttl_index_role(t.table_oid, c.oid) = 'row_ttl_index_name';
    UPDATE @extschema@.ttl_index t SET row_ttl_column = a.attname
    FROM pg_event_trigger_ddl_commands() d
    JOIN pg_attribute a ON a.attrelid = d.objid AND a.attnum = d.objsubid
    WHERE d.classid = 'pg_class'::regclass AND d.object_type = 'table column'
      AND d.objid = t.table_oid::oid AND NOT a.attisdropped AND t.row_ttl_column IS NOT NULL
      AND NOT EXISTS (SELECT FROM pg_attribute x
                      WHERE x.attrelid = t.table_oid AND x.attname = t.row_ttl_column
                        AND NOT x.attisdropped);
    FOR renamed IN
        UPDATE @extschema@.ttl_index t SET column_name = a.attname
        FROM pg_event_trigger_ddl_commands() d
        JOIN pg_attribute a ON a.attrelid = d.objid AND a.attnum = d.objsubid
        WHERE d.classid = 'pg_class'::regclass AND d.object_type = 'table column'
          AND d.objid = t.table_oid::oid AND NOT a.attisdropped
          AND NOT EXISTS (SELECT FROM pg_attribute x
                          WHERE x.attrelid = t.table_oid AND x.attname = t.column_name
                            AND NOT x.attisdropped)
        RETURNING t.table_oid::oid AS relid, t.touch
    LOOP
        -- the touch trigger names the column it writes
        IF renamed.touch THEN
            PERFORM @extschema@._ttl_touch_refresh(renamed.relid);
        END IF;
    END LOOP;
    -- a filter names columns: written again from the index predicate, which follows renames
    PERFORM @extschema@._ttl_filter_refresh(t.table_oid::pg_catalog.oid)
    FROM @extschema@.ttl_index t
    WHERE t.filter_sql IS NOT NULL
      AND t.table_oid::oid IN (SELECT d.objid FROM pg_event_trigger_ddl_commands() d
                               WHERE d.classid = 'pg_class'::regclass
                                 AND d.object_type = 'table column');
    -- hide_expired's policy would hide the expired rows from the worker's DELETE as the owner
    IF EXISTS (SELECT FROM @extschema@.ttl_index t
               JOIN pg_class c ON c.oid = t.table_oid
               JOIN pg_event_trigger_ddl_commands() d ON d.objid = c.oid
               WHERE t.hide_expired AND c.relforcerowsecurity) THEN
        RAISE EXCEPTION 'FORCE ROW LEVEL SECURITY would hide expired rows from the purge of a TTL index with hide_expired'
            USING ERRCODE = '0A000',
                  HINT = 'Turn hide_expired off first: ttl_index_alter(tbl, hide_expired => false).';
    END IF;
END
$$;
CREATE OR REPLACE VIEW @extschema@.ttl_indexes AS
SELECT t.table_oid                          AS table_name,
       t.column_name,
       t.path,
       t.json_path,
       t.expire_after,
       t.numeric_unit,
       t.index_name,
       pg_catalog.pg_relation_size(i.oid)   AS index_size,
       t.created_at,
       t.time_zone,
       t.paused_at,
       t.filter,
       t.touch,
       t.hide_expired,
       t.row_ttl_path,
       t.drop_partitions
FROM @extschema@.ttl_index t
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
LEFT JOIN pg_catalog.pg_class i ON i.relname OPERATOR(pg_catalog.=) t.index_name
                               AND i.relnamespace OPERATOR(pg_catalog.=) c.relnamespace;
GRANT SELECT ON @extschema@.ttl_indexes TO PUBLIC;
