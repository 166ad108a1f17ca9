-- The SQL face of jsonb_ttl. The work is done by the Rust functions named _ttl_*, in the schema
-- jsonb_ttl_internal (sql/catalog.sql); these wrappers give them their documented signatures
-- and results.

-- The touch trigger function (a #[pg_trigger], which pgrx creates in the extension's schema)
-- joins the other internals.
ALTER FUNCTION @extschema@._ttl_touch() SET SCHEMA jsonb_ttl_internal;

-- A delete window as ttl_indexes shows it ('01:00-05:00'), and whether the time of day now, in
-- the index's time zone (UTC without one), is inside it (no window: always).
CREATE FUNCTION jsonb_ttl_internal._ttl_window_text(window_start time, window_end time)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.substr(window_start::pg_catalog.text, 1, 5) OPERATOR(pg_catalog.||) '-'
           OPERATOR(pg_catalog.||) pg_catalog.substr(window_end::pg_catalog.text, 1, 5)
$$;

CREATE FUNCTION jsonb_ttl_internal._ttl_in_window(window_start time, window_end time, zone text)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN window_start IS NULL OR window_end IS NULL THEN true
                WHEN window_start OPERATOR(pg_catalog.<) window_end
                THEN n.local OPERATOR(pg_catalog.>=) window_start AND n.local OPERATOR(pg_catalog.<) window_end
                ELSE n.local OPERATOR(pg_catalog.>=) window_start OR n.local OPERATOR(pg_catalog.<) window_end
           END
    FROM (SELECT pg_catalog.timezone(coalesce(zone, 'UTC'::pg_catalog.text), pg_catalog.now())::pg_catalog.time AS local) n
$$;

-- Every TTL index of the database; index_size from the pages the catalog records (as of the
-- index's build or last VACUUM or ANALYZE), read without locking the index, so that no
-- tenant's lock makes the view wait. Like every statement of the install and update scripts, the
-- views are written down to their operators (OPERATOR(pg_catalog.=)), types and functions
-- (pg_catalog.…), so that nothing a role with CREATE on the extension's schema planted there
-- first can be a better match and be bound into them.
CREATE VIEW ttl_indexes AS
SELECT t.table_oid                          AS table_name,
       t.column_name,
       t.path,
       t.json_path,
       t.expire_after,
       t.numeric_unit,
       t.index_name,
       i.relpages::pg_catalog.int8 OPERATOR(pg_catalog.*)
         pg_catalog.current_setting('block_size'::pg_catalog.text)::pg_catalog.int8 AS index_size,
       t.created_at,
       t.time_zone,
       t.paused_at,
       t.filter,
       t.touch,
       t.hide_expired,
       t.row_ttl_path,
       t.drop_partitions,
       t.paused_by,
       t.paused_reason,
       jsonb_ttl_internal._ttl_window_text(t.delete_window_start, t.delete_window_end) AS delete_window,
       t.batch_size,
       t.max_removes_per_second,
       t.replication_origin,
       t.logical_message,
       t.archive_to,
       NULL::pg_catalog.text                AS removes
FROM jsonb_ttl_internal.ttl_index t
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
LEFT JOIN jsonb_ttl_internal.index_oid o
       ON o.table_oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
      AND o.role OPERATOR(pg_catalog.=) 'index_name'::pg_catalog.text
LEFT JOIN pg_catalog.pg_index x ON x.indexrelid OPERATOR(pg_catalog.=) o.index_oid
                              AND x.indrelid OPERATOR(pg_catalog.=) c.oid
LEFT JOIN pg_catalog.pg_class i ON i.oid OPERATOR(pg_catalog.=) x.indexrelid
UNION ALL
-- each field TTL (docs/field_ttl.md): removes says what its expiry removes from a document
SELECT f.table_oid, f.column_name, f.path, f.json_path, f.expire_after, f.numeric_unit,
       f.index_name,
       i.relpages::pg_catalog.int8 OPERATOR(pg_catalog.*)
         pg_catalog.current_setting('block_size'::pg_catalog.text)::pg_catalog.int8,
       f.created_at, NULL::pg_catalog.text, NULL::pg_catalog.timestamptz, NULL::pg_catalog.text,
       false, false, NULL::pg_catalog.text, NULL::pg_catalog.text, NULL::pg_catalog.text,
       NULL::pg_catalog.text, NULL::pg_catalog.text, NULL::pg_catalog.int4, NULL::pg_catalog.int4,
       false, false, NULL::pg_catalog.regclass, f.remove
FROM jsonb_ttl_internal.ttl_field f
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) f.table_oid::pg_catalog.oid
LEFT JOIN LATERAL (SELECT x.relpages FROM pg_catalog.pg_class x
                   JOIN pg_catalog.pg_index xi ON xi.indexrelid OPERATOR(pg_catalog.=) x.oid
                                              AND xi.indrelid OPERATOR(pg_catalog.=) c.oid
                   WHERE x.relnamespace OPERATOR(pg_catalog.=) c.relnamespace
                     AND x.relname OPERATOR(pg_catalog.=) f.index_name) i ON true;
GRANT SELECT ON ttl_indexes TO PUBLIC;

CREATE FUNCTION jsonb_ttl_internal._ttl_index_info(tbl regclass, is_newly_created boolean, rows_expired bigint)
RETURNS @extschema@.ttl_index_info
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.index_name, t.table_oid, t.column_name, t.path, t.expire_after, t.numeric_unit,
           is_newly_created, t.time_zone, t.filter, t.touch,
           jsonb_ttl_internal._ttl_index_build_sql(t.table_oid), t.hide_expired, t.row_ttl_path,
           t.drop_partitions, t.paused_at IS NOT NULL,
           jsonb_ttl_internal._ttl_window_text(t.delete_window_start, t.delete_window_end),
           t.batch_size, t.max_removes_per_second, t.replication_origin, t.logical_message,
           rows_expired, t.archive_to
    FROM jsonb_ttl_internal.ttl_index t WHERE t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) tbl::pg_catalog.oid
$$;

CREATE FUNCTION ttl_index_create(tbl regclass, path text, expire_after interval,
                                 numeric_unit text DEFAULT 's', time_zone text DEFAULT NULL,
                                 filter text DEFAULT NULL, touch boolean DEFAULT false,
                                 build boolean DEFAULT true, hide_expired boolean DEFAULT false,
                                 row_ttl_path text DEFAULT NULL, drop_partitions text DEFAULT NULL,
                                 paused boolean DEFAULT false, delete_window text DEFAULT NULL,
                                 batch_size integer DEFAULT NULL,
                                 max_removes_per_second integer DEFAULT NULL,
                                 replication_origin boolean DEFAULT false,
                                 logical_message boolean DEFAULT false,
                                 archive_to regclass DEFAULT NULL)
RETURNS @extschema@.ttl_index_info
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    created boolean := jsonb_ttl_internal._ttl_index_create(tbl, path, expire_after, numeric_unit, time_zone,
                                                     filter, touch, build, hide_expired,
                                                     row_ttl_path, drop_partitions);
    backlog bigint;
BEGIN
    -- the operator's controls: set on a new TTL index, compared with an existing one's
    PERFORM jsonb_ttl_internal._ttl_index_controls(tbl, created, paused, delete_window, batch_size,
                                                   max_removes_per_second, replication_origin,
                                                   logical_message);
    PERFORM jsonb_ttl_internal._ttl_index_archive(tbl, archive_to, created);
    -- the first backlog first (it may hold the new TTL index): the row returned shows it
    IF created THEN
        backlog := jsonb_ttl_internal._ttl_first_backlog(tbl);
    END IF;
    RETURN jsonb_ttl_internal._ttl_index_info(tbl, created, backlog);
END
$$;
COMMENT ON FUNCTION ttl_index_create(regclass, text, interval, text, text, text, boolean, boolean, boolean, text, text, boolean, text, integer, integer, boolean, boolean, regclass) IS
  'Creates the TTL index of a table: rows expire expire_after past the point in time at path.';

CREATE FUNCTION ttl_index_create(tbl regclass, path text, expire_after numeric,
                                 numeric_unit text DEFAULT 's', time_zone text DEFAULT NULL,
                                 filter text DEFAULT NULL, touch boolean DEFAULT false,
                                 build boolean DEFAULT true, hide_expired boolean DEFAULT false,
                                 row_ttl_path text DEFAULT NULL, drop_partitions text DEFAULT NULL,
                                 paused boolean DEFAULT false, delete_window text DEFAULT NULL,
                                 batch_size integer DEFAULT NULL,
                                 max_removes_per_second integer DEFAULT NULL,
                                 replication_origin boolean DEFAULT false,
                                 logical_message boolean DEFAULT false,
                                 archive_to regclass DEFAULT NULL)
RETURNS @extschema@.ttl_index_info
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT @extschema@.ttl_index_create(tbl, path, jsonb_ttl_internal._ttl_seconds(expire_after), numeric_unit,
                                        time_zone, filter, touch, build, hide_expired,
                                        row_ttl_path, drop_partitions, paused, delete_window,
                                        batch_size, max_removes_per_second, replication_origin,
                                        logical_message, archive_to)
$$;
COMMENT ON FUNCTION ttl_index_create(regclass, text, numeric, text, text, text, boolean, boolean, boolean, text, text, boolean, text, integer, integer, boolean, boolean, regclass) IS
  'Creates the TTL index of a table, with expire_after in seconds.';

-- expire_after as people type it first, an untyped literal ('1 day', '3600', '86400.5'): the
-- interval and numeric overloads would tie on it, so a text one takes it, read as PostgreSQL
-- reads an interval (a bare number is seconds, as in the numeric overload). A text that is no
-- interval is an argument error with no CONTEXT line (_ttl_invalid_argument; a RAISE here
-- would name this function and the wrapper).
CREATE FUNCTION jsonb_ttl_internal._ttl_interval(expire_after text)
RETURNS interval
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN expire_after::pg_catalog.interval;
EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR interval_field_overflow THEN
    PERFORM jsonb_ttl_internal._ttl_invalid_argument(
        pg_catalog.format('expire_after must be an interval or a number of seconds, not %s',
                          pg_catalog.quote_literal(expire_after)),
        'Write it as PostgreSQL reads an interval (''30 days'', ''90 minutes'', ''P1D'') or as seconds (''3600'').');
    RETURN NULL;  -- not reached
END
$$;

CREATE FUNCTION ttl_index_create(tbl regclass, path text, expire_after text,
                                 numeric_unit text DEFAULT 's', time_zone text DEFAULT NULL,
                                 filter text DEFAULT NULL, touch boolean DEFAULT false,
                                 build boolean DEFAULT true, hide_expired boolean DEFAULT false,
                                 row_ttl_path text DEFAULT NULL, drop_partitions text DEFAULT NULL,
                                 paused boolean DEFAULT false, delete_window text DEFAULT NULL,
                                 batch_size integer DEFAULT NULL,
                                 max_removes_per_second integer DEFAULT NULL,
                                 replication_origin boolean DEFAULT false,
                                 logical_message boolean DEFAULT false,
                                 archive_to regclass DEFAULT NULL)
RETURNS @extschema@.ttl_index_info
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT @extschema@.ttl_index_create(tbl, path, jsonb_ttl_internal._ttl_interval(expire_after),
                                        numeric_unit, time_zone, filter, touch, build, hide_expired,
                                        row_ttl_path, drop_partitions, paused, delete_window,
                                        batch_size, max_removes_per_second, replication_origin,
                                        logical_message, archive_to)
$$;
COMMENT ON FUNCTION ttl_index_create(regclass, text, text, text, text, text, boolean, boolean, boolean, text, text, boolean, text, integer, integer, boolean, boolean, regclass) IS
  'Creates the TTL index of a table, with expire_after as typed: ''1 day'', or ''3600'' seconds.';

CREATE FUNCTION ttl_index_alter(tbl regclass, expire_after interval DEFAULT NULL,
                                time_zone text DEFAULT NULL, touch boolean DEFAULT NULL,
                                hide_expired boolean DEFAULT NULL, drop_partitions text DEFAULT NULL,
                                filter text DEFAULT NULL, delete_window text DEFAULT NULL,
                                batch_size integer DEFAULT NULL,
                                max_removes_per_second integer DEFAULT NULL,
                                replication_origin boolean DEFAULT NULL,
                                logical_message boolean DEFAULT NULL,
                                path text DEFAULT NULL, numeric_unit text DEFAULT NULL,
                                row_ttl_path text DEFAULT NULL,
                                archive_to regclass DEFAULT NULL)
RETURNS @extschema@.ttl_index_info
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF expire_after IS NULL AND time_zone IS NULL AND touch IS NULL AND hide_expired IS NULL
       AND drop_partitions IS NULL AND filter IS NULL AND delete_window IS NULL
       AND batch_size IS NULL AND max_removes_per_second IS NULL AND replication_origin IS NULL
       AND logical_message IS NULL AND path IS NULL AND numeric_unit IS NULL
       AND row_ttl_path IS NULL AND archive_to IS NULL THEN
        -- an argument error with no CONTEXT line (a RAISE would name this function)
        PERFORM jsonb_ttl_internal._ttl_invalid_argument('nothing to change',
            'Pass expire_after, path, numeric_unit, row_ttl_path, time_zone, touch, hide_expired, drop_partitions, filter, delete_window, batch_size, max_removes_per_second, replication_origin, logical_message, archive_to or several.');
    END IF;
    IF expire_after IS NOT NULL THEN
        PERFORM jsonb_ttl_internal._ttl_index_alter(tbl, expire_after);
    END IF;
    IF path IS NOT NULL OR numeric_unit IS NOT NULL THEN
        PERFORM jsonb_ttl_internal._ttl_index_set_definition(tbl, path, numeric_unit);
    END IF;
    IF row_ttl_path IS NOT NULL THEN
        PERFORM jsonb_ttl_internal._ttl_index_set_row_ttl(tbl, row_ttl_path);
    END IF;
    IF time_zone IS NOT NULL THEN
        PERFORM jsonb_ttl_internal._ttl_index_set_time_zone(tbl, time_zone);
    END IF;
    IF touch IS NOT NULL THEN
        PERFORM jsonb_ttl_internal._ttl_index_set_touch(tbl, touch);
    END IF;
    IF hide_expired IS NOT NULL THEN
        PERFORM jsonb_ttl_internal._ttl_index_set_hide_expired(tbl, hide_expired);
    END IF;
    IF archive_to::pg_catalog.oid OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN
        -- '-' (none) first, so that drop_partitions => 'drop' may come with it
        PERFORM jsonb_ttl_internal._ttl_index_archive(tbl, archive_to, NULL);
    END IF;
    IF drop_partitions IS NOT NULL THEN
        PERFORM jsonb_ttl_internal._ttl_index_set_drop_partitions(tbl, drop_partitions);
    END IF;
    IF filter IS NOT NULL THEN
        PERFORM jsonb_ttl_internal._ttl_index_set_filter(tbl, filter);
    END IF;
    IF delete_window IS NOT NULL OR batch_size IS NOT NULL OR max_removes_per_second IS NOT NULL
       OR replication_origin IS NOT NULL OR logical_message IS NOT NULL THEN
        PERFORM jsonb_ttl_internal._ttl_index_set_controls(tbl, delete_window, batch_size,
                                                           max_removes_per_second,
                                                           replication_origin, logical_message);
    END IF;
    IF archive_to::pg_catalog.oid OPERATOR(pg_catalog.<>) 0::pg_catalog.oid THEN
        PERFORM jsonb_ttl_internal._ttl_index_archive(tbl, archive_to, NULL);
    END IF;
    -- what the changed definition expires, counted once: held past the brake's fraction
    IF expire_after IS NOT NULL OR path IS NOT NULL OR numeric_unit IS NOT NULL
       OR row_ttl_path IS NOT NULL OR time_zone IS NOT NULL OR filter IS NOT NULL THEN
        PERFORM jsonb_ttl_internal._ttl_index_widened(tbl);
    END IF;
    RETURN jsonb_ttl_internal._ttl_index_info(tbl, false, NULL);
END
$$;
COMMENT ON FUNCTION ttl_index_alter(regclass, interval, text, boolean, boolean, text, text, text, integer, integer, boolean, boolean, text, text, text, regclass) IS
  'Changes a TTL index: expire_after (a catalog update), the path and numeric_unit of its point in time and the per-row row_ttl_path ('''' removes it), the time zone a timestamp or date column is read in and the filter (these rebuild the index), touch (its trigger), hide_expired (its policies), drop_partitions (drop, detach or off), and the operator''s controls: delete_window, batch_size, max_removes_per_second (0 or '''' for none), replication_origin, logical_message, and archive_to (the table expired rows move into, in the same transaction; ''-'' for none).';

CREATE FUNCTION ttl_index_alter(tbl regclass, expire_after numeric)
RETURNS @extschema@.ttl_index_info
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT @extschema@.ttl_index_alter(tbl, jsonb_ttl_internal._ttl_seconds(expire_after))
$$;

CREATE FUNCTION ttl_index_alter(tbl regclass, expire_after text)
RETURNS @extschema@.ttl_index_info
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT @extschema@.ttl_index_alter(tbl, jsonb_ttl_internal._ttl_interval(expire_after))
$$;

CREATE FUNCTION ttl_index_drop(tbl regclass)
RETURNS boolean
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_index_drop(tbl) $$;
COMMENT ON FUNCTION ttl_index_drop(regclass) IS 'Drops the TTL index of a table and its catalog entry.';

-- ttl_index_drop(tbl, if_exists => true), for migrations: a table without a TTL index (or no
-- table: to_regclass() of one that is gone) is a NOTICE and false, not an error.
CREATE FUNCTION ttl_index_drop(tbl regclass, if_exists boolean)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF if_exists AND (tbl IS NULL OR NOT EXISTS (
           SELECT FROM jsonb_ttl_internal.ttl_index t
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
COMMENT ON FUNCTION ttl_index_drop(regclass, boolean) IS
  'Drops the TTL index of a table and its catalog entry; with if_exists, a table without one is a NOTICE.';

-- No table named: '-' (no table), so that a NULL (a mistyped to_regclass()) is an error.
CREATE FUNCTION ttl_expire_now(tbl regclass DEFAULT '-'::pg_catalog.regclass, max_rows bigint DEFAULT NULL)
RETURNS bigint
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_expire_now(tbl, max_rows) $$;
COMMENT ON FUNCTION ttl_expire_now(regclass, bigint) IS
  'Removes expired rows now, in this transaction: of one table, or of every TTL table the caller owns, each as its owner.';

CREATE FUNCTION ttl_expire_preview(tbl regclass, at timestamptz DEFAULT now())
RETURNS TABLE (rows bigint, oldest timestamptz, newest timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM jsonb_ttl_internal._ttl_expire_preview(tbl, at) $$;
COMMENT ON FUNCTION ttl_expire_preview(regclass, timestamptz) IS
  'What the TTL index of a table would remove at a time (now by default): how many rows, their oldest and newest reference times. Removes nothing.';

CREATE FUNCTION ttl_index_resume(tbl regclass)
RETURNS boolean
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_index_resume(tbl) $$;
COMMENT ON FUNCTION ttl_index_resume(regclass) IS
  'Lifts a pause of the TTL index of a table (by the safety brake, or by hand); the brake holds again once the worker has drained the table.';

CREATE FUNCTION ttl_index_pause(tbl regclass, reason text DEFAULT NULL)
RETURNS boolean
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_index_pause(tbl, reason) $$;
COMMENT ON FUNCTION ttl_index_pause(regclass, text) IS
  'Pauses the TTL index of a table by hand: the worker deletes nothing from it until ttl_index_resume(). Returns whether it was running.';

-- Field TTLs (docs/field_ttl.md): a date inside a jsonb document whose expiry removes a subtree
-- of the document instead of the row.
CREATE FUNCTION ttl_field_create(tbl regclass, path text, expire_after interval,
                                 remove text DEFAULT NULL, numeric_unit text DEFAULT 's')
RETURNS boolean
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_field_create(tbl, path, expire_after, remove, numeric_unit) $$;
COMMENT ON FUNCTION ttl_field_create(regclass, text, interval, text, text) IS
  'Creates a field TTL: expire_after past the date at path, the worker removes remove (by default the object holding the date) from the document. Returns false when it exists already.';

-- expire_after as a number of seconds, and as typed ('1 day', '3600'), as for ttl_index_create
CREATE FUNCTION ttl_field_create(tbl regclass, path text, expire_after numeric,
                                 remove text DEFAULT NULL, numeric_unit text DEFAULT 's')
RETURNS boolean
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_field_create(tbl, path, jsonb_ttl_internal._ttl_seconds(expire_after), remove, numeric_unit) $$;
COMMENT ON FUNCTION ttl_field_create(regclass, text, numeric, text, text) IS
  'Creates a field TTL, with expire_after in seconds.';

CREATE FUNCTION ttl_field_create(tbl regclass, path text, expire_after text,
                                 remove text DEFAULT NULL, numeric_unit text DEFAULT 's')
RETURNS boolean
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_field_create(tbl, path, jsonb_ttl_internal._ttl_interval(expire_after), remove, numeric_unit) $$;
COMMENT ON FUNCTION ttl_field_create(regclass, text, text, text, text) IS
  'Creates a field TTL, with expire_after as typed: ''1 day'', or ''3600'' seconds.';

CREATE FUNCTION ttl_field_alter(tbl regclass, path text, expire_after interval)
RETURNS void
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_field_alter(tbl, path, expire_after) $$;
COMMENT ON FUNCTION ttl_field_alter(regclass, text, interval) IS
  'Changes the expire_after of the field TTL on path.';

CREATE FUNCTION ttl_field_alter(tbl regclass, path text, expire_after numeric)
RETURNS void
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_field_alter(tbl, path, jsonb_ttl_internal._ttl_seconds(expire_after)) $$;
COMMENT ON FUNCTION ttl_field_alter(regclass, text, numeric) IS
  'Changes the expire_after of the field TTL on path, in seconds.';

CREATE FUNCTION ttl_field_alter(tbl regclass, path text, expire_after text)
RETURNS void
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_field_alter(tbl, path, jsonb_ttl_internal._ttl_interval(expire_after)) $$;
COMMENT ON FUNCTION ttl_field_alter(regclass, text, text) IS
  'Changes the expire_after of the field TTL on path, as typed: ''1 day'', or ''3600'' seconds.';

CREATE FUNCTION ttl_field_drop(tbl regclass, path text)
RETURNS boolean
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_field_drop(tbl, path) $$;
COMMENT ON FUNCTION ttl_field_drop(regclass, text) IS
  'Drops the field TTL on path and its index.';

CREATE FUNCTION ttl_field_expire_now(tbl regclass, path text, max_rows bigint DEFAULT NULL)
RETURNS bigint
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_field_expire_now(tbl, path, max_rows) $$;
COMMENT ON FUNCTION ttl_field_expire_now(regclass, text, bigint) IS
  'Removes the expired field of the field TTL on path from the documents now, in this transaction, as the table''s owner; returns the documents changed.';

-- DROP TABLE and DROP INDEX remove the catalog entry. SECURITY DEFINER because the table's
-- owner may not write the catalog. It acts on the OIDs pg_event_trigger_dropped_objects()
-- reports (which no caller can forge), matched against the OIDs the extension recorded for
-- each TTL index (jsonb_ttl_internal.index_oid), never on names: a name can be renamed away,
-- squatted or reused by another role.
CREATE FUNCTION jsonb_ttl_internal._ttl_on_sql_drop()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    dropped pg_catalog.oid[] := ARRAY(
        SELECT d.objid FROM pg_catalog.pg_event_trigger_dropped_objects() d
        WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
          AND d.objsubid OPERATOR(pg_catalog.=) 0);
    gone record;
BEGIN
    FOR gone IN
        DELETE FROM jsonb_ttl_internal.ttl_index t
        WHERE t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (dropped)
           OR EXISTS (SELECT FROM jsonb_ttl_internal.index_oid o
                      JOIN pg_catalog.pg_event_trigger_dropped_objects() d
                        ON d.objid OPERATOR(pg_catalog.=) o.index_oid
                      JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
                      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
                      WHERE o.table_oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
                        AND o.role OPERATOR(pg_catalog.=) 'index_name'::pg_catalog.text
                        AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
                        AND d.object_type OPERATOR(pg_catalog.=) 'index'::pg_catalog.text
                        -- and what the catalog records of it: a stale OID reused by another
                        -- role's index (the old one went without an event) matches nothing
                        AND d.schema_name OPERATOR(pg_catalog.=) n.nspname::pg_catalog.text
                        AND d.object_name OPERATOR(pg_catalog.=) t.index_name::pg_catalog.text)
        RETURNING t.table_oid::pg_catalog.oid AS relid, t.touch, t.hide_expired,
                  t.hide_enabled_row_security,
                  (SELECT o.index_oid FROM jsonb_ttl_internal.index_oid o
                   WHERE o.table_oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
                     AND o.role OPERATOR(pg_catalog.=) 'row_ttl_index_name'::pg_catalog.text
                     AND NOT o.index_oid OPERATOR(pg_catalog.=) ANY (dropped)) AS row_ttl_index
    LOOP
        -- DROP INDEX of a TTL index (its table stays): said at the drop, the purge stops
        IF NOT gone.relid OPERATOR(pg_catalog.=) ANY (dropped) THEN
            RAISE WARNING 'jsonb_ttl: the TTL index of % went with its index: its expired rows are no longer removed',
                          gone.relid::pg_catalog.regclass
                USING HINT = 'ttl_index_create() makes it again (ttl_indexes listed it).';
        END IF;
        -- DROP INDEX of a TTL index: its touch trigger, policies and per-row TTL index go with it
        IF gone.touch OR gone.hide_expired OR gone.row_ttl_index IS NOT NULL THEN
            PERFORM jsonb_ttl_internal._ttl_options_dropped(gone.relid, gone.touch, gone.hide_expired,
                                                            gone.hide_enabled_row_security,
                                                            gone.row_ttl_index);
        END IF;
    END LOOP;
    -- DROP INDEX of a per-row TTL index: its name is cleared; its rows wait for a new one
    UPDATE jsonb_ttl_internal.ttl_index t SET row_ttl_index_name = NULL
    FROM jsonb_ttl_internal.index_oid o
    WHERE o.table_oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
      AND o.role OPERATOR(pg_catalog.=) 'row_ttl_index_name'::pg_catalog.text
      AND o.index_oid OPERATOR(pg_catalog.=) ANY (dropped);
    DELETE FROM jsonb_ttl_internal.index_oid o
    WHERE o.index_oid OPERATOR(pg_catalog.=) ANY (dropped)
       OR o.table_oid OPERATOR(pg_catalog.=) ANY (dropped);
    -- DROP TABLE of a table with field TTLs: they go with it
    DELETE FROM jsonb_ttl_internal.ttl_field f
    WHERE f.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (dropped);
    -- DROP COLUMN of the column a field TTL's date is in: the field TTL goes with it, said at the
    -- drop (kept, its column name would pass to the next column renamed on the table)
    FOR gone IN
        DELETE FROM jsonb_ttl_internal.ttl_field f
        USING pg_catalog.pg_event_trigger_dropped_objects() d
        WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
          AND d.objid OPERATOR(pg_catalog.=) f.table_oid::pg_catalog.oid
          AND d.objsubid OPERATOR(pg_catalog.>) 0
          AND (d.address_names)[3] OPERATOR(pg_catalog.=) f.column_name::pg_catalog.text
        RETURNING f.table_oid::pg_catalog.oid AS relid, f.path
    LOOP
        RAISE WARNING 'jsonb_ttl: the field TTL on % of % went with its column', gone.path,
                      gone.relid::pg_catalog.regclass;
    END LOOP;
    -- DROP TABLE of an archive: its OID may be reused by another table, so archive_to becomes
    -- '-' (OID 0), and nothing is deleted until ttl_index_alter names another archive or none
    FOR gone IN
        UPDATE jsonb_ttl_internal.ttl_index t SET archive_to = 0::pg_catalog.oid::pg_catalog.regclass
        WHERE t.archive_to::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (dropped)
          AND NOT t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (dropped)
        RETURNING t.table_oid::pg_catalog.oid AS relid
    LOOP
        -- said at the drop: the purge of the table it archived stops
        RAISE WARNING 'jsonb_ttl: the archive of % was dropped: nothing is deleted from it until ttl_index_alter names another archive, or none',
                      gone.relid::pg_catalog.regclass
            USING HINT = pg_catalog.format('ttl_index_alter(%L, archive_to => ''<another table>''), or archive_to => ''-'' to delete without archiving.',
                                           gone.relid::pg_catalog.regclass::pg_catalog.text);
    END LOOP;
END
$$;
CREATE EVENT TRIGGER jsonb_ttl_sql_drop ON sql_drop EXECUTE FUNCTION jsonb_ttl_internal._ttl_on_sql_drop();

-- CREATE INDEX of an index that is one of a TTL index's (on its table, with its expression and
-- predicate: a restore, the build_sql statements of build => false), or ALTER of one that is
-- not recorded (a REINDEX CONCURRENTLY made it), or ALTER TABLE of a TTL table (a column's new
-- type rebuilds its indexes): its OID is recorded (_ttl_track_indexes).
-- ALTER INDEX … RENAME (or ALTER TABLE … RENAME on an index) of a recorded index, and ALTER
-- TABLE … RENAME COLUMN of a column a TTL index reads: the catalog follows the new name, by OID.
CREATE FUNCTION jsonb_ttl_internal._ttl_on_ddl_command_end()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    renamed record;
BEGIN
    PERFORM jsonb_ttl_internal._ttl_track_indexes(t.table_oid::pg_catalog.oid)
    FROM jsonb_ttl_internal.ttl_index t
    WHERE t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (ARRAY(
              SELECT i.indrelid FROM pg_catalog.pg_event_trigger_ddl_commands() d
              JOIN pg_catalog.pg_index i ON i.indexrelid OPERATOR(pg_catalog.=) d.objid
              WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
                AND (d.command_tag OPERATOR(pg_catalog.=) 'CREATE INDEX'::pg_catalog.text
                     -- an index not recorded, altered: maybe a REINDEX CONCURRENTLY's new one
                     OR NOT EXISTS (SELECT FROM jsonb_ttl_internal.index_oid o
                                    WHERE o.index_oid OPERATOR(pg_catalog.=) d.objid))
              UNION ALL
              -- ALTER TABLE of the TTL table itself: a column's new type rebuilds its indexes
              SELECT d.objid FROM pg_catalog.pg_event_trigger_ddl_commands() d
              WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
                AND d.command_tag OPERATOR(pg_catalog.=) 'ALTER TABLE'::pg_catalog.text
                AND d.object_type OPERATOR(pg_catalog.=) 'table'::pg_catalog.text));
    UPDATE jsonb_ttl_internal.ttl_index t SET index_name = c.relname
    FROM pg_catalog.pg_event_trigger_ddl_commands() d
    JOIN jsonb_ttl_internal.index_oid o ON o.index_oid OPERATOR(pg_catalog.=) d.objid
    JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid
    JOIN pg_catalog.pg_index i ON i.indexrelid OPERATOR(pg_catalog.=) d.objid
    WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
      AND o.table_oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
      AND i.indrelid OPERATOR(pg_catalog.=) o.table_oid
      AND o.role OPERATOR(pg_catalog.=) 'index_name'::pg_catalog.text
      AND t.index_name OPERATOR(pg_catalog.<>) c.relname;
    UPDATE jsonb_ttl_internal.ttl_index t SET row_ttl_index_name = c.relname
    FROM pg_catalog.pg_event_trigger_ddl_commands() d
    JOIN jsonb_ttl_internal.index_oid o ON o.index_oid OPERATOR(pg_catalog.=) d.objid
    JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid
    JOIN pg_catalog.pg_index i ON i.indexrelid OPERATOR(pg_catalog.=) d.objid
    WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
      AND o.table_oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
      AND i.indrelid OPERATOR(pg_catalog.=) o.table_oid
      AND o.role OPERATOR(pg_catalog.=) 'row_ttl_index_name'::pg_catalog.text
      AND t.row_ttl_index_name IS DISTINCT FROM c.relname;
    UPDATE jsonb_ttl_internal.ttl_index t SET row_ttl_column = a.attname
    FROM pg_catalog.pg_event_trigger_ddl_commands() d
    JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) d.objid
                                  AND a.attnum OPERATOR(pg_catalog.=) d.objsubid
    WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
      AND d.object_type OPERATOR(pg_catalog.=) 'table column'::pg_catalog.text
      AND d.objid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid AND NOT a.attisdropped
      AND t.row_ttl_column IS NOT NULL
      AND NOT EXISTS (SELECT FROM pg_catalog.pg_attribute x
                      WHERE x.attrelid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
                        AND x.attname OPERATOR(pg_catalog.=) t.row_ttl_column
                        AND NOT x.attisdropped);
    -- RENAME COLUMN of the column a field TTL's date is in
    UPDATE jsonb_ttl_internal.ttl_field f SET column_name = a.attname
    FROM pg_catalog.pg_event_trigger_ddl_commands() d
    JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) d.objid
                                  AND a.attnum OPERATOR(pg_catalog.=) d.objsubid
    WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
      AND d.object_type OPERATOR(pg_catalog.=) 'table column'::pg_catalog.text
      AND d.objid OPERATOR(pg_catalog.=) f.table_oid::pg_catalog.oid AND NOT a.attisdropped
      AND NOT EXISTS (SELECT FROM pg_catalog.pg_attribute x
                      WHERE x.attrelid OPERATOR(pg_catalog.=) f.table_oid::pg_catalog.oid
                        AND x.attname OPERATOR(pg_catalog.=) f.column_name
                        AND NOT x.attisdropped);
    FOR renamed IN
        UPDATE jsonb_ttl_internal.ttl_index t SET column_name = a.attname
        FROM pg_catalog.pg_event_trigger_ddl_commands() d
        JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) d.objid
                                      AND a.attnum OPERATOR(pg_catalog.=) d.objsubid
        WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
          AND d.object_type OPERATOR(pg_catalog.=) 'table column'::pg_catalog.text
          AND d.objid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid AND NOT a.attisdropped
          AND NOT EXISTS (SELECT FROM pg_catalog.pg_attribute x
                          WHERE x.attrelid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
                            AND x.attname OPERATOR(pg_catalog.=) t.column_name
                            AND NOT x.attisdropped)
        RETURNING t.table_oid::pg_catalog.oid AS relid, t.touch
    LOOP
        -- the touch trigger names the column it writes
        IF renamed.touch THEN
            PERFORM jsonb_ttl_internal._ttl_touch_refresh(renamed.relid);
        END IF;
    END LOOP;
    -- a filter names columns: written again from the index predicate, which follows renames
    PERFORM jsonb_ttl_internal._ttl_filter_refresh(t.table_oid::pg_catalog.oid)
    FROM jsonb_ttl_internal.ttl_index t
    WHERE t.filter_sql IS NOT NULL
      AND t.table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (ARRAY(
              SELECT d.objid FROM pg_catalog.pg_event_trigger_ddl_commands() d
              WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
                AND d.object_type OPERATOR(pg_catalog.=) 'table column'::pg_catalog.text));
    -- hide_expired's policy would hide the expired rows from the worker's DELETE as the owner
    IF EXISTS (SELECT FROM jsonb_ttl_internal.ttl_index t
               JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.table_oid::pg_catalog.oid
               JOIN pg_catalog.pg_event_trigger_ddl_commands() d ON d.objid OPERATOR(pg_catalog.=) c.oid
               WHERE t.hide_expired AND c.relforcerowsecurity) THEN
        RAISE EXCEPTION 'FORCE ROW LEVEL SECURITY would hide expired rows from the purge of a TTL index with hide_expired'
            USING ERRCODE = '0A000',
                  HINT = 'Turn hide_expired off first: ttl_index_alter(tbl, hide_expired => false).';
    END IF;
END
$$;
CREATE EVENT TRIGGER jsonb_ttl_ddl_command_end ON ddl_command_end
    WHEN TAG IN ('ALTER INDEX', 'ALTER TABLE', 'CREATE INDEX')
    EXECUTE FUNCTION jsonb_ttl_internal._ttl_on_ddl_command_end();

-- What the background worker did, one row per table it deletes from (like pg_stat_*): each TTL
-- index of this database, or each leaf partition of a partitioned table's TTL index, and each
-- part of a per-row TTL table. The rows are built by one Rust function (src/stats/sql/view.rs),
-- which reads the catalog, pg_class and pg_index once each and joins the statistics in memory:
-- as a join in SQL the view took 21 ms at 1,000 TTL tables (7.5 ms now, in a warm session), and
-- its size estimates turned JIT on. It runs as its caller: the view reads as its reader.
CREATE VIEW ttl_stats AS
SELECT s.table_oid::pg_catalog.regclass AS table_name, s.runs, s.rows_deleted, s.last_run_at,
       s.last_rows_deleted, s.limit_reached, s.errors, s.last_error, s.oldest_expired,
       s.ttl_table::pg_catalog.regclass AS ttl_table, s.skipped, s.rows_undeletable,
       s.last_success_at, s.last_run_ms, s.backlog, s.rows_never_expire,
       s.paused_by IS NOT NULL AS paused, s.paused_by, s.part
FROM jsonb_ttl_internal._ttl_stats_view() s;
GRANT SELECT ON ttl_stats TO PUBLIC;
-- ttl_stats planned at about its true size (at the default estimate of 1,000 rows, JIT compiled
-- 0.3.0's view on every read: 0.9 s with one TTL table). _ttl_stats() and _ttl_undeletable()
-- stay for the SQL of older versions, until ALTER EXTENSION jsonb_ttl UPDATE.
ALTER FUNCTION jsonb_ttl_internal._ttl_stats_view() ROWS 100;
ALTER FUNCTION jsonb_ttl_internal._ttl_stats() ROWS 100;
ALTER FUNCTION jsonb_ttl_internal._ttl_undeletable() ROWS 10;

-- Like pg_stat_reset(): for superusers, and for whom they grant it.
REVOKE EXECUTE ON FUNCTION ttl_stats_reset() FROM PUBLIC;
-- Internals nobody calls directly: the launcher's wake-up (CREATE EXTENSION runs it as the
-- extension's owner) and the event trigger functions. The other _ttl_* functions stay
-- executable, because the documented wrappers call them as the caller: each pins its
-- search_path and checks the caller's rights itself (tests/pg_regress/expected/acl.out).
REVOKE EXECUTE ON FUNCTION jsonb_ttl_internal._ttl_wake_launcher() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION jsonb_ttl_internal._ttl_on_sql_drop() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION jsonb_ttl_internal._ttl_on_ddl_command_end() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION jsonb_ttl_internal._ttl_touch_refresh(oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION jsonb_ttl_internal._ttl_index_role(oid, oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION jsonb_ttl_internal._ttl_filter_refresh(oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION jsonb_ttl_internal._ttl_options_dropped(oid, boolean, boolean, boolean, oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION jsonb_ttl_internal._ttl_track_indexes(oid) FROM PUBLIC;
-- Citus: what the coordinator's worker hands on to the worker nodes (docs/citus.md).
REVOKE EXECUTE ON FUNCTION jsonb_ttl_internal._ttl_citus_receive(jsonb) FROM PUBLIC;
-- One batch of the worker's, run in the caller's transaction: for tests (tests/isolation).
REVOKE EXECUTE ON FUNCTION jsonb_ttl_internal._ttl_worker_batch(oid, bigint) FROM PUBLIC;
-- 0.3.0's ttl_stats view read these two; 0.4.0's reads _ttl_stats_view()
REVOKE EXECUTE ON FUNCTION jsonb_ttl_internal._ttl_stats() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION jsonb_ttl_internal._ttl_undeletable() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION jsonb_ttl_internal._ttl_worker_range_batch(oid, bigint, timestamptz) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION jsonb_ttl_internal._ttl_worker_field_batch(oid, text, bigint) FROM PUBLIC;

-- Tell the launcher (when preloaded) that this database now wants a worker.
SELECT jsonb_ttl_internal._ttl_wake_launcher();

-- A schema where roles other than its owner may create objects is one where they can plant
-- objects for whoever installs or updates an extension there: say so (docs/security.md).
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_extension e
               JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
               CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) a
               WHERE e.extname OPERATOR(pg_catalog.=) 'jsonb_ttl'::pg_catalog.name
                 AND a.privilege_type OPERATOR(pg_catalog.=) 'CREATE'::pg_catalog.text
                 AND a.grantee OPERATOR(pg_catalog.<>) n.nspowner) THEN
        RAISE WARNING 'jsonb_ttl is in a schema where roles other than its owner may create objects'
            USING HINT = 'Such a role can plant objects for a superuser to run. Install jsonb_ttl into a schema only trusted roles may create in (CREATE SCHEMA ttl; CREATE EXTENSION jsonb_ttl SCHEMA ttl), or revoke CREATE on this one; see docs/security.md.';
    END IF;
END
$$;

-- A comment on every function and view a user reads, and on every column of the views, so that
-- \df+, \dv+ and \d+ say what each is (docs/functions.md and docs/monitoring.md say more).
COMMENT ON FUNCTION ttl_index_alter(regclass, numeric) IS
  'Changes the expire_after of a table''s TTL index, in seconds.';
COMMENT ON FUNCTION ttl_index_alter(regclass, text) IS
  'Changes the expire_after of a table''s TTL index, written as an interval (''1 day'', ''P1D'') or seconds.';
COMMENT ON FUNCTION ttl_statistics() IS
  'Server totals of the background workers: passes, rows deleted, passes cut short by a limit.';
COMMENT ON FUNCTION ttl_stats_reset() IS
  'Sets every statistic of ttl_stats and ttl_statistics() back to zero, server-wide (like pg_stat_reset()).';
COMMENT ON FUNCTION ttl_stats_store() IS
  'The statistics store: entries in use, its size (jsonb_ttl.max_tables), and the tables it had no room for.';
COMMENT ON FUNCTION ttl_throttle() IS
  'Whether the workers slow down for replicas or WAL, per limit: lag, slots'' retained WAL, WAL rate.';
COMMENT ON FUNCTION ttl_is_datestring(text) IS
  'Whether a text is a point in time a TTL index reads (the date-string grammar of docs/functions.md).';
COMMENT ON FUNCTION ttl_timestamp(jsonb) IS
  'The point in time a JSON value holds (a date string, Unix seconds, Extended JSON), or NULL; keys TTL indexes.';
COMMENT ON FUNCTION ttl_timestamp(jsonb, text) IS
  'The point in time a JSON value holds, its numbers read in numeric_unit (''s'' or ''ms''), or NULL; keys TTL indexes.';
COMMENT ON FUNCTION ttl_timestamp(jsonb, text, text) IS
  'The point in time a JSON value holds, numbers in numeric_unit, strings without an offset in the time zone given; keys TTL indexes.';
COMMENT ON FUNCTION jsonb_ttl_internal.ttl_text_timestamp(text) IS
  'The point in time a text column holds, read with the date-string grammar (UTC without an offset), or NULL; keys TTL indexes.';
COMMENT ON FUNCTION jsonb_ttl_internal.ttl_text_timestamp(text, text) IS
  'The point in time a text column holds, strings without an offset read in the time zone given, or NULL; keys TTL indexes.';
COMMENT ON FUNCTION jsonb_ttl_internal.ttl_unix_timestamp(numeric, text) IS
  'A Unix time in numeric_unit (''s'' or ''ms'') as a timestamptz, or NULL when out of range; keys TTL indexes.';
COMMENT ON FUNCTION jsonb_ttl_internal.ttl_row_seconds(jsonb) IS
  'The per-row TTL a JSON value holds, in seconds (-1: never), or NULL; keys per-row TTL indexes.';
COMMENT ON FUNCTION jsonb_ttl_internal.ttl_row_seconds(numeric) IS
  'The per-row TTL a numeric column holds, in seconds (-1: never), or NULL; keys per-row TTL indexes.';
COMMENT ON FUNCTION jsonb_ttl_internal.ttl_expires_at(timestamptz, double precision) IS
  'When a row with a per-row TTL expires: its reference time plus its TTL in seconds; keys per-row TTL indexes.';

COMMENT ON VIEW ttl_indexes IS 'Every TTL index and field TTL of this database, with its options (see ttl_index_create, ttl_field_create).';
COMMENT ON COLUMN ttl_indexes.table_name IS 'The table of the TTL index.';
COMMENT ON COLUMN ttl_indexes.column_name IS 'The column the path starts in.';
COMMENT ON COLUMN ttl_indexes.path IS 'The path as given to ttl_index_create.';
COMMENT ON COLUMN ttl_indexes.json_path IS 'The keys followed inside a json or jsonb column (empty for a plain column).';
COMMENT ON COLUMN ttl_indexes.expire_after IS 'How long after its point in time a row expires.';
COMMENT ON COLUMN ttl_indexes.numeric_unit IS 'How numbers are read: s (Unix seconds) or ms (milliseconds).';
COMMENT ON COLUMN ttl_indexes.index_name IS 'The btree index on the point in time.';
COMMENT ON COLUMN ttl_indexes.index_size IS 'The index''s size in bytes, as of its build or last VACUUM or ANALYZE.';
COMMENT ON COLUMN ttl_indexes.created_at IS 'When the TTL index was created.';
COMMENT ON COLUMN ttl_indexes.time_zone IS 'The zone times without an offset are read in (NULL: UTC).';
COMMENT ON COLUMN ttl_indexes.paused_at IS 'When the TTL index was paused (NULL: not paused).';
COMMENT ON COLUMN ttl_indexes.filter IS 'The condition a row must meet to expire (NULL: every row).';
COMMENT ON COLUMN ttl_indexes.touch IS 'Whether an update sets the point in time to now.';
COMMENT ON COLUMN ttl_indexes.hide_expired IS 'Whether a row security policy hides expired rows before they are deleted.';
COMMENT ON COLUMN ttl_indexes.row_ttl_path IS 'The field holding each row''s own TTL in seconds (NULL: none).';
COMMENT ON COLUMN ttl_indexes.drop_partitions IS 'drop or detach: expired partitions go whole (NULL: rows are deleted).';
COMMENT ON COLUMN ttl_indexes.paused_by IS 'Who paused the TTL index: brake (the safety brake) or operator.';
COMMENT ON COLUMN ttl_indexes.paused_reason IS 'Why it is paused.';
COMMENT ON COLUMN ttl_indexes.delete_window IS 'The time of day the worker deletes in, in time_zone (NULL: any time).';
COMMENT ON COLUMN ttl_indexes.batch_size IS 'Rows a batch deletes (NULL: the worker adapts it).';
COMMENT ON COLUMN ttl_indexes.max_removes_per_second IS 'The rate the worker deletes at most (NULL: no limit of its own).';
COMMENT ON COLUMN ttl_indexes.replication_origin IS 'Whether deletes are written under a replication origin (hidden from origin = none subscribers).';
COMMENT ON COLUMN ttl_indexes.logical_message IS 'Whether each batch writes a logical decoding message with the rows it deleted.';
COMMENT ON COLUMN ttl_indexes.removes IS 'A field TTL: what its expiry removes from each document (NULL: a TTL index, whose rows go).';
COMMENT ON COLUMN ttl_indexes.archive_to IS 'The table each batch moves its expired rows into, in the same transaction (NULL: they are deleted; ''-'': the archive was dropped, nothing is deleted until ttl_index_alter names another or none).';

COMMENT ON VIEW ttl_stats IS 'What the background worker did, one row per table it deletes from (a leaf partition for a partitioned table), like pg_stat_*.';
COMMENT ON COLUMN ttl_stats.table_name IS 'The table the worker deletes from.';
COMMENT ON COLUMN ttl_stats.runs IS 'Passes of the worker that visited the table.';
COMMENT ON COLUMN ttl_stats.rows_deleted IS 'Expired rows removed (since the server started or ttl_stats_reset()).';
COMMENT ON COLUMN ttl_stats.last_run_at IS 'When the last visit of the table ended.';
COMMENT ON COLUMN ttl_stats.last_rows_deleted IS 'Rows removed in the last visit.';
COMMENT ON COLUMN ttl_stats.limit_reached IS 'Visits cut short by a limit (max_table_removes, max_total_removes, a rate).';
COMMENT ON COLUMN ttl_stats.errors IS 'Visits that failed: a busy lock, a batch past batch_timeout, rows set aside.';
COMMENT ON COLUMN ttl_stats.last_error IS 'The last failure''s message.';
COMMENT ON COLUMN ttl_stats.oldest_expired IS 'The oldest point in time expired and still present when the worker last looked.';
COMMENT ON COLUMN ttl_stats.ttl_table IS 'The table the TTL index is on (the partitioned table for a partition).';
COMMENT ON COLUMN ttl_stats.skipped IS 'Why the worker does not delete from the table now (paused, outside delete_window, set aside), or NULL.';
COMMENT ON COLUMN ttl_stats.rows_undeletable IS 'Expired rows the worker cannot delete and has set aside (a trigger raised, a foreign key restricts).';
COMMENT ON COLUMN ttl_stats.last_success_at IS 'When the last visit that ended without an error ended.';
COMMENT ON COLUMN ttl_stats.last_run_ms IS 'How long the last visit that deleted took, in milliseconds.';
COMMENT ON COLUMN ttl_stats.backlog IS 'Expired rows left at the end of the last visit (0: it drained the table).';
COMMENT ON COLUMN ttl_stats.rows_never_expire IS 'About how many rows have no readable point in time, so never expire (as of the last ANALYZE).';
COMMENT ON COLUMN ttl_stats.paused IS 'Whether the TTL index is paused.';
COMMENT ON COLUMN ttl_stats.paused_by IS 'Who paused it: brake (the safety brake) or operator.';
COMMENT ON COLUMN ttl_stats.part IS 'For a table with a per-row TTL: expire_after or row_ttl, the part the row counts; for a field TTL: field and its path; NULL for any other.';

-- What each internal object is (\df+ jsonb_ttl_internal.*): every object of the extension says
-- what it is for; docs/security.md lists the internals executable by PUBLIC, and why.
COMMENT ON TYPE @extschema@.ttl_index_info IS 'jsonb_ttl: the row ttl_index_create and ttl_index_alter return: the TTL index as it is now.';
COMMENT ON EVENT TRIGGER jsonb_ttl_sql_drop IS 'jsonb_ttl: a dropped TTL table, index, column or archive leaves the catalog (_ttl_on_sql_drop).';
COMMENT ON EVENT TRIGGER jsonb_ttl_ddl_command_end IS 'jsonb_ttl: records the OID of an index of a TTL index, follows renames (_ttl_on_ddl_command_end).';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_on_sql_drop() IS 'jsonb_ttl: the sql_drop event trigger''s function. Not for calling.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_on_ddl_command_end() IS 'jsonb_ttl: the ddl_command_end event trigger''s function. Not for calling.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_citus_receive(jsonb) IS 'jsonb_ttl: a Citus worker node takes the TTL indexes of distributed tables handed on by the coordinator''s worker. Superuser only.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_expire_local(oid, bigint) IS 'jsonb_ttl: ttl_expire_now on this node only (a Citus coordinator calls it on each worker node as the caller). For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_expire_now(oid, bigint) IS 'jsonb_ttl: behind ttl_expire_now(). For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_expire_preview(oid, timestamptz) IS 'jsonb_ttl: behind ttl_expire_preview(); reads the table as the caller (a filtered TTL index as its owner, for a caller who may read the table and to whom row security does not apply).';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_field_create(oid, text, interval, text, text) IS 'jsonb_ttl: behind ttl_field_create(). For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_field_alter(oid, text, interval) IS 'jsonb_ttl: behind ttl_field_alter(). For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_field_drop(oid, text) IS 'jsonb_ttl: behind ttl_field_drop(). For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_field_expire_now(oid, text, bigint) IS 'jsonb_ttl: behind ttl_field_expire_now(). For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_filter_refresh(oid) IS 'jsonb_ttl: a TTL index''s filter written again after a rename it reads. Called by the event trigger only.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_first_backlog(oid) IS 'jsonb_ttl: behind ttl_index_create(): the first backlog, held past max_table_fraction. For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_in_window(time, time, text) IS 'jsonb_ttl: whether now, in a zone, is inside a delete window.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_create(oid, text, interval, text) IS 'jsonb_ttl: behind ttl_index_create() (0.1.0''s arguments). For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_create(oid, text, interval, text, text) IS 'jsonb_ttl: behind ttl_index_create() (0.2.0''s arguments). For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_create(oid, text, interval, text, text, text, boolean, boolean, boolean, text, text) IS 'jsonb_ttl: behind ttl_index_create(). For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_controls(oid, boolean, boolean, text, integer, integer, boolean, boolean) IS 'jsonb_ttl: behind ttl_index_create(): its controls (paused, delete_window, limits, change streams). For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_archive(oid, oid, boolean) IS 'jsonb_ttl: behind ttl_index_create() and ttl_index_alter(): archive_to. For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_alter(oid, interval) IS 'jsonb_ttl: behind ttl_index_alter(): expire_after. For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_set_definition(oid, text, text) IS 'jsonb_ttl: behind ttl_index_alter(): path and numeric_unit. For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_set_time_zone(oid, text) IS 'jsonb_ttl: behind ttl_index_alter(): time_zone. For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_set_filter(oid, text) IS 'jsonb_ttl: behind ttl_index_alter(): filter. For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_set_touch(oid, boolean) IS 'jsonb_ttl: behind ttl_index_alter(): touch. For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_set_hide_expired(oid, boolean) IS 'jsonb_ttl: behind ttl_index_alter(): hide_expired. For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_set_row_ttl(oid, text) IS 'jsonb_ttl: behind ttl_index_alter(): row_ttl_path. For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_set_drop_partitions(oid, text) IS 'jsonb_ttl: behind ttl_index_alter(): drop_partitions. For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_set_controls(oid, text, integer, integer, boolean, boolean) IS 'jsonb_ttl: behind ttl_index_alter(): its controls. For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_widened(oid) IS 'jsonb_ttl: behind ttl_index_alter(): a widened definition''s backlog, held past max_table_fraction. For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_drop(oid) IS 'jsonb_ttl: behind ttl_index_drop(). For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_pause(oid, text) IS 'jsonb_ttl: behind ttl_index_pause(). For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_resume(oid) IS 'jsonb_ttl: behind ttl_index_resume(). For the table''s owner.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_info(regclass, boolean, bigint) IS 'jsonb_ttl: the ttl_index_info row of a TTL index, as ttl_index_create and ttl_index_alter return it.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_build_sql(oid) IS 'jsonb_ttl: ttl_index_info.build_sql: the statements still to run to build a TTL index created with build => false.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_index_role(oid, oid) IS 'jsonb_ttl: which index of a TTL index an index is, by its expression, predicate and access method (0.2.0''s event trigger called it). Superuser only.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_interval(text) IS 'jsonb_ttl: expire_after given as text, read as an interval, with a HINT for a typo.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_seconds(numeric) IS 'jsonb_ttl: expire_after given as a number of seconds, as an interval.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_invalid_argument(text, text) IS 'jsonb_ttl: raises 22023 with a HINT (for the SQL wrappers).';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_options_dropped(oid, boolean, boolean, boolean, oid) IS 'jsonb_ttl: a TTL index''s options dropped by hand (trigger, policy, archive). Called by the event trigger only.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_stats() IS 'jsonb_ttl: the statistics rows as 0.3.0''s ttl_stats view read them. Superuser only.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_stats_view() IS 'jsonb_ttl: the rows of the ttl_stats view; last_error only for who may read the table''s statistics.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_undeletable() IS 'jsonb_ttl: the rows set aside per table, as 0.3.0''s ttl_stats view read them. Superuser only.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_targets(regclass) IS 'jsonb_ttl: the tables rows are deleted from: a table, or its leaf partitions.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_touch() IS 'jsonb_ttl: the touch trigger''s function (ttl_index_create(..., touch => true)). Runs only as that trigger.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_touch_refresh(oid) IS 'jsonb_ttl: the touch trigger written again after a rename it reads. Called by the event trigger only.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_track_indexes(oid) IS 'jsonb_ttl: records the OIDs of a TTL index''s indexes. Called by the event trigger only.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_wake_launcher() IS 'jsonb_ttl: wakes the launcher after CREATE EXTENSION. Superuser only.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_window_text(time, time) IS 'jsonb_ttl: a delete window as ttl_indexes shows it (''HH:MM-HH:MM'').';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_worker_batch(oid, bigint) IS 'jsonb_ttl: one batch of the worker, run by hand (the isolation tests). Superuser only.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_worker_range_batch(oid, bigint, timestamptz) IS 'jsonb_ttl: one batch of the worker by key range, run by hand (the isolation tests). Superuser only.';
COMMENT ON FUNCTION jsonb_ttl_internal._ttl_worker_field_batch(oid, text, bigint) IS 'jsonb_ttl: one batch of a field TTL, run by hand (the isolation tests). Superuser only.';
