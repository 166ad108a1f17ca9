-- The SQL face of jsonb_ttl. The work is done by the Rust functions named _ttl_*; these
-- wrappers give them their documented signatures and results.

-- Every TTL index of the database.
CREATE VIEW ttl_indexes AS
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
JOIN pg_catalog.pg_class c ON c.oid = t.table_oid
LEFT JOIN pg_catalog.pg_class i ON i.relname = t.index_name AND i.relnamespace = c.relnamespace;
GRANT SELECT ON ttl_indexes TO PUBLIC;

CREATE FUNCTION @extschema@._ttl_index_info(tbl regclass, is_newly_created boolean)
RETURNS @extschema@.ttl_index_info
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.index_name, t.table_oid, t.column_name, t.path, t.expire_after, t.numeric_unit,
           is_newly_created, t.time_zone, t.filter, t.touch,
           @extschema@._ttl_index_build_sql(t.table_oid), t.hide_expired, t.row_ttl_path,
           t.drop_partitions
    FROM @extschema@.ttl_index t WHERE t.table_oid = tbl
$$;

CREATE FUNCTION ttl_index_create(tbl regclass, path text, expire_after interval,
                                 numeric_unit text DEFAULT 's', time_zone text DEFAULT NULL,
                                 filter text DEFAULT NULL, touch boolean DEFAULT false,
                                 build boolean DEFAULT true, hide_expired boolean DEFAULT false,
                                 row_ttl_path text DEFAULT NULL, drop_partitions text DEFAULT NULL)
RETURNS @extschema@.ttl_index_info
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    created boolean := @extschema@._ttl_index_create(tbl, path, expire_after, numeric_unit, time_zone,
                                                     filter, touch, build, hide_expired,
                                                     row_ttl_path, drop_partitions);
BEGIN
    RETURN @extschema@._ttl_index_info(tbl, created);
END
$$;
COMMENT ON FUNCTION ttl_index_create(regclass, text, interval, text, text, text, boolean, boolean, boolean, text, text) IS
  'Creates the TTL index of a table: rows expire expire_after past the point in time at path.';

CREATE FUNCTION ttl_index_create(tbl regclass, path text, expire_after numeric,
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
COMMENT ON FUNCTION ttl_index_create(regclass, text, numeric, text, text, text, boolean, boolean, boolean, text, text) IS
  'Creates the TTL index of a table, with expire_after in seconds.';

CREATE FUNCTION ttl_index_alter(tbl regclass, expire_after interval DEFAULT NULL,
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
        PERFORM @extschema@._ttl_index_alter(tbl, expire_after);
    END IF;
    IF time_zone IS NOT NULL THEN
        PERFORM @extschema@._ttl_index_set_time_zone(tbl, time_zone);
    END IF;
    IF touch IS NOT NULL THEN
        PERFORM @extschema@._ttl_index_set_touch(tbl, touch);
    END IF;
    IF hide_expired IS NOT NULL THEN
        PERFORM @extschema@._ttl_index_set_hide_expired(tbl, hide_expired);
    END IF;
    IF drop_partitions IS NOT NULL THEN
        PERFORM @extschema@._ttl_index_set_drop_partitions(tbl, drop_partitions);
    END IF;
    RETURN @extschema@._ttl_index_info(tbl, false);
END
$$;
COMMENT ON FUNCTION ttl_index_alter(regclass, interval, text, boolean, boolean, text) IS
  'Changes expire_after of a TTL index (a catalog update), the time zone a timestamp or date column is read in (rebuilds the index), touch (creates or drops its trigger), hide_expired (creates or drops its policies) and drop_partitions (drop, detach or off).';

CREATE FUNCTION ttl_index_alter(tbl regclass, expire_after numeric)
RETURNS @extschema@.ttl_index_info
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT @extschema@.ttl_index_alter(tbl, @extschema@._ttl_seconds(expire_after))
$$;

CREATE FUNCTION ttl_index_drop(tbl regclass)
RETURNS boolean
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT @extschema@._ttl_index_drop(tbl) $$;
COMMENT ON FUNCTION ttl_index_drop(regclass) IS 'Drops the TTL index of a table and its catalog entry.';

CREATE FUNCTION ttl_expire_now(tbl regclass DEFAULT NULL, max_rows bigint DEFAULT NULL)
RETURNS bigint
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT @extschema@._ttl_expire_now(tbl, max_rows) $$;
COMMENT ON FUNCTION ttl_expire_now(regclass, bigint) IS
  'Removes expired rows now, in this transaction: of one table, or of every TTL table the caller owns, each as its owner.';

CREATE FUNCTION ttl_expire_preview(tbl regclass, at timestamptz DEFAULT now())
RETURNS TABLE (rows bigint, oldest timestamptz, newest timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM @extschema@._ttl_expire_preview(tbl, at) $$;
COMMENT ON FUNCTION ttl_expire_preview(regclass, timestamptz) IS
  'What the TTL index of a table would remove at a time (now by default): how many rows, their oldest and newest reference times. Removes nothing.';

CREATE FUNCTION ttl_index_resume(tbl regclass)
RETURNS boolean
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT @extschema@._ttl_index_resume(tbl) $$;
COMMENT ON FUNCTION ttl_index_resume(regclass) IS
  'Lifts a pause of the safety brake on the TTL index of a table; the brake holds again once the worker has drained the table.';

-- DROP TABLE and DROP INDEX remove the catalog entry. SECURITY DEFINER because the table's
-- owner may not write the catalog; it only acts on what pg_event_trigger_dropped_objects()
-- reports, which no caller can forge.
CREATE FUNCTION @extschema@._ttl_on_sql_drop()
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
                                                     gone.row_ttl_index_name);
        END IF;
    END LOOP;
END
$$;
CREATE EVENT TRIGGER jsonb_ttl_sql_drop ON sql_drop EXECUTE FUNCTION @extschema@._ttl_on_sql_drop();

-- ALTER INDEX … RENAME (or ALTER TABLE … RENAME on an index) of a TTL index (or its per-row
-- TTL index), and ALTER TABLE … RENAME COLUMN of a column it reads: the catalog follows the
-- new name. Only entries whose recorded name no longer exists are updated (the command reports
-- the index, or the table and the renamed column's number), and only for an index that is
-- ours by its expression and predicate (_ttl_index_role), so that renaming another index of a
-- table whose TTL index is not built yet (build => false) changes nothing.
CREATE FUNCTION @extschema@._ttl_on_ddl_command_end()
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
    PERFORM @extschema@._ttl_filter_refresh(t.table_oid)
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
CREATE EVENT TRIGGER jsonb_ttl_ddl_command_end ON ddl_command_end
    WHEN TAG IN ('ALTER INDEX', 'ALTER TABLE')
    EXECUTE FUNCTION @extschema@._ttl_on_ddl_command_end();

-- What the background worker did, one row per table it deletes from (like pg_stat_*): each TTL
-- index of this database, or each leaf partition of a partitioned table's TTL index.
CREATE VIEW ttl_stats AS
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
            WHEN t.paused_at IS NOT NULL THEN t.paused_reason
       END                                      AS skipped,
       coalesce(u.rows_undeletable, 0)          AS rows_undeletable
FROM @extschema@.ttl_index t
CROSS JOIN LATERAL @extschema@._ttl_targets(t.table_oid) l(relid)
JOIN pg_catalog.pg_class c ON c.oid = l.relid::oid
LEFT JOIN @extschema@._ttl_stats() s ON s.table_oid = l.relid::oid
LEFT JOIN @extschema@._ttl_undeletable() u ON u.table_oid = l.relid::oid;
GRANT SELECT ON ttl_stats TO PUBLIC;

-- Like pg_stat_reset(): for superusers, and for whom they grant it.
REVOKE EXECUTE ON FUNCTION ttl_stats_reset() FROM PUBLIC;
-- Internals nobody calls directly: the launcher's wake-up (CREATE EXTENSION runs it as the
-- extension's owner) and the event trigger functions. The other _ttl_* functions stay
-- executable, because the documented wrappers call them as the caller: each pins its
-- search_path and checks the caller's rights itself (tests/pg_regress/expected/acl.out).
REVOKE EXECUTE ON FUNCTION @extschema@._ttl_wake_launcher() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@._ttl_on_sql_drop() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@._ttl_on_ddl_command_end() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@._ttl_touch_refresh(oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@._ttl_index_role(oid, oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@._ttl_filter_refresh(oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@._ttl_options_dropped(oid, boolean, boolean, boolean, text) FROM PUBLIC;
-- One batch of the worker's, run in the caller's transaction: for tests (tests/isolation).
REVOKE EXECUTE ON FUNCTION @extschema@._ttl_worker_batch(oid, bigint) FROM PUBLIC;

-- Tell the launcher (when preloaded) that this database now wants a worker.
SELECT @extschema@._ttl_wake_launcher();
