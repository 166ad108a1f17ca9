-- The SQL face: ttl_index_create / ttl_index_alter / ttl_index_drop, ttl_index_pause /
-- ttl_index_resume, ttl_expire_preview, with the Rust edition's signatures (sql/api.sql): the
-- same names, argument names, order and defaults. The options this edition does not have are
-- accepted at their defaults and refused otherwise (SQLSTATE 0A000, with a HINT), so that a call
-- written for one edition either means the same on the other or says why not.

CREATE FUNCTION jsonb_ttl.ttl_index_create(tbl regclass, path text, expire_after interval,
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
RETURNS jsonb_ttl.ttl_index_info
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    resolved record;
    row_ttl record;
    row_attnum smallint;
    row_kind text;
    row_json_path text[];
    zone text;
    existing jsonb_ttl_internal.ttl_index;
    differs text[] := '{}';
    backlog bigint;
    window_times time[] := jsonb_ttl_internal._ttl_parse_window(coalesce(delete_window, ''));
BEGIN
    PERFORM jsonb_ttl_internal._ttl_not_here('touch', touch IS NOT TRUE);
    PERFORM jsonb_ttl_internal._ttl_not_here('build => false', build IS NOT FALSE);
    PERFORM jsonb_ttl_internal._ttl_not_here('hide_expired', hide_expired IS NOT TRUE);
    PERFORM jsonb_ttl_internal._ttl_not_here('drop_partitions', drop_partitions IS NULL);
    PERFORM jsonb_ttl_internal._ttl_check_rate(max_removes_per_second);
    PERFORM jsonb_ttl_internal._ttl_not_here('replication_origin', replication_origin IS NOT TRUE);
    PERFORM jsonb_ttl_internal._ttl_not_here('logical_message', logical_message IS NOT TRUE);
    PERFORM jsonb_ttl_internal._ttl_not_here('archive_to', archive_to IS NULL);
    PERFORM jsonb_ttl_internal._ttl_check_table(tbl);
    PERFORM jsonb_ttl_internal._ttl_check_expire_after(expire_after);
    PERFORM jsonb_ttl_internal._ttl_check_unit(numeric_unit);
    PERFORM jsonb_ttl_internal._ttl_check_zone_name(time_zone);
    IF filter IS NOT NULL THEN
        PERFORM jsonb_ttl_internal._ttl_check_filter(filter);
    END IF;
    IF batch_size IS NOT NULL AND batch_size OPERATOR(pg_catalog.<=) 0 THEN
        PERFORM jsonb_ttl_internal._ttl_error('22023', 'batch_size must be more than 0', 'Pass NULL for the purge''s own batch size.');
    END IF;
    resolved := jsonb_ttl_internal._ttl_resolve(tbl, path);
    zone := jsonb_ttl_internal._ttl_default_zone(tbl, resolved.kind, time_zone);
    IF row_ttl_path IS NOT NULL THEN
        row_ttl := jsonb_ttl_internal._ttl_resolve(tbl, row_ttl_path);
        IF row_ttl.kind OPERATOR(pg_catalog.<>) ALL (ARRAY['jsonb', 'json', 'number']) THEN
            PERFORM jsonb_ttl_internal._ttl_error('42804', pg_catalog.format('row_ttl_path %L does not hold a number of seconds', row_ttl_path),
                'Name a field of a json or jsonb column, or a numeric column.');
        END IF;
        row_attnum := row_ttl.attnum; row_kind := row_ttl.kind; row_json_path := row_ttl.json_path;
    END IF;

    -- one TTL index per table: the identical one again is no error
    SELECT * INTO existing FROM jsonb_ttl_internal.ttl_index x WHERE x.table_oid OPERATOR(pg_catalog.=) tbl FOR UPDATE;
    IF FOUND THEN
        IF existing.path IS DISTINCT FROM ttl_index_create.path THEN differs := differs OPERATOR(pg_catalog.||) pg_catalog.format('path %L, not %L', existing.path, ttl_index_create.path); END IF;
        IF existing.expire_after IS DISTINCT FROM ttl_index_create.expire_after THEN differs := differs OPERATOR(pg_catalog.||) pg_catalog.format('expire_after %s, not %s', existing.expire_after, ttl_index_create.expire_after); END IF;
        IF existing.numeric_unit IS DISTINCT FROM ttl_index_create.numeric_unit THEN differs := differs OPERATOR(pg_catalog.||) pg_catalog.format('numeric_unit %L, not %L', existing.numeric_unit, ttl_index_create.numeric_unit); END IF;
        IF existing.time_zone IS DISTINCT FROM zone THEN differs := differs OPERATOR(pg_catalog.||) pg_catalog.format('time_zone %L, not %L', existing.time_zone, zone); END IF;
        IF existing.filter IS DISTINCT FROM ttl_index_create.filter THEN differs := differs OPERATOR(pg_catalog.||) pg_catalog.format('filter %L, not %L', existing.filter, ttl_index_create.filter); END IF;
        IF existing.row_ttl_path IS DISTINCT FROM ttl_index_create.row_ttl_path THEN differs := differs OPERATOR(pg_catalog.||) pg_catalog.format('row_ttl_path %L, not %L', existing.row_ttl_path, ttl_index_create.row_ttl_path); END IF;
        IF pg_catalog.cardinality(differs) OPERATOR(pg_catalog.>) 0 THEN
            PERFORM jsonb_ttl_internal._ttl_error('42710',
                pg_catalog.format('%s has a TTL index already, with %s', tbl, pg_catalog.array_to_string(differs, ', ')),
                'A table has one TTL index: change it with ttl_index_alter(), or drop it with ttl_index_drop() first.');
        END IF;
        RETURN jsonb_ttl_internal._ttl_index_info(tbl, false, NULL);
    END IF;

    INSERT INTO jsonb_ttl_internal.ttl_index AS t
        (table_oid, column_attnum, column_kind, json_path, path, expire_after, numeric_unit, time_zone, filter,
         row_ttl_path, row_ttl_attnum, row_ttl_kind, row_ttl_json_path, index_oid, batch_size,
         max_removes_per_second, delete_window_start, delete_window_end, paused_at, paused_by, paused_reason)
    VALUES (tbl, resolved.attnum, resolved.kind, resolved.json_path, ttl_index_create.path, ttl_index_create.expire_after,
            ttl_index_create.numeric_unit, zone, ttl_index_create.filter,
            ttl_index_create.row_ttl_path, row_attnum, row_kind, row_json_path, 0, ttl_index_create.batch_size,
            NULLIF(ttl_index_create.max_removes_per_second, 0), window_times[1], window_times[2],
            CASE WHEN paused THEN pg_catalog.now() END, CASE WHEN paused THEN 'operator' END,
            CASE WHEN paused THEN 'created paused' END);
    PERFORM jsonb_ttl_internal._ttl_build(tbl);
    backlog := jsonb_ttl_internal._ttl_hold_backlog(tbl, 'the first backlog');
    RETURN jsonb_ttl_internal._ttl_index_info(tbl, true, backlog);
END
$$;
COMMENT ON FUNCTION jsonb_ttl.ttl_index_create(regclass, text, interval, text, text, text, boolean, boolean, boolean, text, text, boolean, text, integer, integer, boolean, boolean, regclass) IS
  'Creates the TTL index of a table: rows expire expire_after past the point in time at path.';

CREATE FUNCTION jsonb_ttl.ttl_index_create(tbl regclass, path text, expire_after numeric,
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
RETURNS jsonb_ttl.ttl_index_info
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT jsonb_ttl.ttl_index_create(tbl, path, jsonb_ttl_internal._ttl_seconds(expire_after), numeric_unit,
                                      time_zone, filter, touch, build, hide_expired, row_ttl_path,
                                      drop_partitions, paused, delete_window, batch_size,
                                      max_removes_per_second, replication_origin, logical_message, archive_to)
$$;
COMMENT ON FUNCTION jsonb_ttl.ttl_index_create(regclass, text, numeric, text, text, text, boolean, boolean, boolean, text, text, boolean, text, integer, integer, boolean, boolean, regclass) IS
  'Creates the TTL index of a table, with expire_after in seconds.';

CREATE FUNCTION jsonb_ttl.ttl_index_create(tbl regclass, path text, expire_after text,
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
RETURNS jsonb_ttl.ttl_index_info
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT jsonb_ttl.ttl_index_create(tbl, path, jsonb_ttl_internal._ttl_interval(expire_after), numeric_unit,
                                      time_zone, filter, touch, build, hide_expired, row_ttl_path,
                                      drop_partitions, paused, delete_window, batch_size,
                                      max_removes_per_second, replication_origin, logical_message, archive_to)
$$;
COMMENT ON FUNCTION jsonb_ttl.ttl_index_create(regclass, text, text, text, text, text, boolean, boolean, boolean, text, text, boolean, text, integer, integer, boolean, boolean, regclass) IS
  'Creates the TTL index of a table, with expire_after as typed: ''1 day'', or ''3600'' seconds.';

-- The TTL index of a table, locked for a change by its owner; an error when there is none.
CREATE FUNCTION jsonb_ttl_internal._ttl_lock_definition(tbl regclass)
RETURNS jsonb_ttl_internal.ttl_index
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t jsonb_ttl_internal.ttl_index;
BEGIN
    PERFORM jsonb_ttl_internal._ttl_check_table(tbl);
    SELECT * INTO t FROM jsonb_ttl_internal.ttl_index x WHERE x.table_oid OPERATOR(pg_catalog.=) tbl FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM jsonb_ttl_internal._ttl_error('42704', pg_catalog.format('%s has no TTL index', tbl),
            'Create one with ttl_index_create(); ttl_indexes lists the TTL indexes of this database.');
    END IF;
    RETURN t;
END
$$;

CREATE FUNCTION jsonb_ttl.ttl_index_alter(tbl regclass, expire_after interval DEFAULT NULL,
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
RETURNS jsonb_ttl.ttl_index_info
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t jsonb_ttl_internal.ttl_index;
    resolved record;
    row_ttl record;
    rebuild boolean := false;
BEGIN
    IF expire_after IS NULL AND time_zone IS NULL AND touch IS NULL AND hide_expired IS NULL
       AND drop_partitions IS NULL AND filter IS NULL AND delete_window IS NULL
       AND batch_size IS NULL AND max_removes_per_second IS NULL AND replication_origin IS NULL
       AND logical_message IS NULL AND path IS NULL AND numeric_unit IS NULL
       AND row_ttl_path IS NULL AND archive_to IS NULL THEN
        PERFORM jsonb_ttl_internal._ttl_error('22023', 'nothing to change',
            'Pass expire_after, path, numeric_unit, row_ttl_path, time_zone, filter, delete_window, batch_size, max_removes_per_second or several.');
    END IF;
    PERFORM jsonb_ttl_internal._ttl_not_here('touch', touch IS NOT TRUE);
    PERFORM jsonb_ttl_internal._ttl_not_here('hide_expired', hide_expired IS NOT TRUE);
    PERFORM jsonb_ttl_internal._ttl_not_here('drop_partitions', drop_partitions IS NULL OR drop_partitions OPERATOR(pg_catalog.=) '');
    PERFORM jsonb_ttl_internal._ttl_not_here('replication_origin', replication_origin IS NOT TRUE);
    PERFORM jsonb_ttl_internal._ttl_not_here('logical_message', logical_message IS NOT TRUE);
    PERFORM jsonb_ttl_internal._ttl_not_here('archive_to', archive_to IS NULL OR archive_to::pg_catalog.oid OPERATOR(pg_catalog.=) 0);
    t := jsonb_ttl_internal._ttl_lock_definition(tbl);
    IF expire_after IS NOT NULL THEN
        t.expire_after := jsonb_ttl_internal._ttl_check_expire_after(expire_after);
    END IF;
    IF numeric_unit IS NOT NULL THEN
        t.numeric_unit := jsonb_ttl_internal._ttl_check_unit(numeric_unit);
        rebuild := true;
    END IF;
    IF path IS NOT NULL THEN
        resolved := jsonb_ttl_internal._ttl_resolve(tbl, path);
        t.path := path; t.column_attnum := resolved.attnum; t.column_kind := resolved.kind; t.json_path := resolved.json_path;
        rebuild := true;
    END IF;
    IF time_zone IS NOT NULL THEN
        t.time_zone := NULLIF(jsonb_ttl_internal._ttl_check_zone_name(NULLIF(time_zone, '')), '');
        rebuild := true;
    END IF;
    IF filter IS NOT NULL THEN
        t.filter := CASE WHEN filter OPERATOR(pg_catalog.=) '' THEN NULL ELSE jsonb_ttl_internal._ttl_check_filter(filter) END;
        rebuild := true;
    END IF;
    IF row_ttl_path IS NOT NULL THEN
        IF row_ttl_path OPERATOR(pg_catalog.=) '' THEN
            t.row_ttl_path := NULL; t.row_ttl_attnum := NULL; t.row_ttl_kind := NULL; t.row_ttl_json_path := NULL;
        ELSE
            row_ttl := jsonb_ttl_internal._ttl_resolve(tbl, row_ttl_path);
            t.row_ttl_path := row_ttl_path; t.row_ttl_attnum := row_ttl.attnum; t.row_ttl_kind := row_ttl.kind;
            t.row_ttl_json_path := row_ttl.json_path;
        END IF;
        rebuild := true;
    END IF;
    IF max_removes_per_second IS NOT NULL THEN
        t.max_removes_per_second := jsonb_ttl_internal._ttl_check_rate(max_removes_per_second);
    END IF;
    IF delete_window IS NOT NULL THEN
        t.delete_window_start := (jsonb_ttl_internal._ttl_parse_window(delete_window))[1];
        t.delete_window_end := (jsonb_ttl_internal._ttl_parse_window(delete_window))[2];
    END IF;
    IF batch_size IS NOT NULL THEN
        IF batch_size OPERATOR(pg_catalog.<) 0 THEN
            PERFORM jsonb_ttl_internal._ttl_error('22023', 'batch_size must be 0 (none of its own) or more', 'Pass 0 for the purge''s own batch size.');
        END IF;
        t.batch_size := NULLIF(batch_size, 0);
    END IF;
    UPDATE jsonb_ttl_internal.ttl_index x
    SET expire_after = t.expire_after, numeric_unit = t.numeric_unit, path = t.path,
        column_attnum = t.column_attnum, column_kind = t.column_kind, json_path = t.json_path,
        time_zone = t.time_zone, filter = t.filter, row_ttl_path = t.row_ttl_path,
        row_ttl_attnum = t.row_ttl_attnum, row_ttl_kind = t.row_ttl_kind,
        row_ttl_json_path = t.row_ttl_json_path, batch_size = t.batch_size,
        delete_window_start = t.delete_window_start, delete_window_end = t.delete_window_end,
        max_removes_per_second = t.max_removes_per_second
    WHERE x.table_oid OPERATOR(pg_catalog.=) tbl;
    IF rebuild THEN
        PERFORM jsonb_ttl_internal._ttl_build(tbl);
    END IF;
    -- what the changed definition expires, counted once: held past the brake's fraction
    IF expire_after IS NOT NULL OR rebuild THEN
        UPDATE jsonb_ttl_internal.ttl_state s SET backlog_counted = false, set_aside = '{}' WHERE s.table_oid OPERATOR(pg_catalog.=) tbl;
        PERFORM jsonb_ttl_internal._ttl_hold_backlog(tbl, 'after ttl_index_alter');
    END IF;
    RETURN jsonb_ttl_internal._ttl_index_info(tbl, false, NULL);
END
$$;
COMMENT ON FUNCTION jsonb_ttl.ttl_index_alter(regclass, interval, text, boolean, boolean, text, text, text, integer, integer, boolean, boolean, text, text, text, regclass) IS
  'Changes a TTL index: expire_after (a catalog update), the path and numeric_unit of its point in time, the per-row row_ttl_path ('''' removes it), the time zone and the filter (these rebuild the index), delete_window ('''' removes it), batch_size and max_removes_per_second (0 removes them).';

CREATE FUNCTION jsonb_ttl.ttl_index_alter(tbl regclass, expire_after numeric)
RETURNS jsonb_ttl.ttl_index_info
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl.ttl_index_alter(tbl, jsonb_ttl_internal._ttl_seconds(expire_after)) $$;
COMMENT ON FUNCTION jsonb_ttl.ttl_index_alter(regclass, numeric) IS
  'Changes the expire_after of a table''s TTL index, in seconds.';

CREATE FUNCTION jsonb_ttl.ttl_index_alter(tbl regclass, expire_after text)
RETURNS jsonb_ttl.ttl_index_info
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl.ttl_index_alter(tbl, jsonb_ttl_internal._ttl_interval(expire_after)) $$;
COMMENT ON FUNCTION jsonb_ttl.ttl_index_alter(regclass, text) IS
  'Changes the expire_after of a table''s TTL index, written as an interval (''1 day'', ''P1D'') or seconds.';

CREATE FUNCTION jsonb_ttl.ttl_index_drop(tbl regclass)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t jsonb_ttl_internal.ttl_index := jsonb_ttl_internal._ttl_lock_definition(tbl);
BEGIN
    PERFORM jsonb_ttl_internal._ttl_drop_indexes(tbl);
    DELETE FROM jsonb_ttl_internal.ttl_index x WHERE x.table_oid OPERATOR(pg_catalog.=) tbl;
    RETURN true;
END
$$;
COMMENT ON FUNCTION jsonb_ttl.ttl_index_drop(regclass) IS 'Drops the TTL index of a table and its catalog entry.';

CREATE FUNCTION jsonb_ttl.ttl_index_drop(tbl regclass, if_exists boolean)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF if_exists AND (tbl IS NULL OR NOT EXISTS (
           SELECT FROM jsonb_ttl_internal.ttl_index t WHERE t.table_oid OPERATOR(pg_catalog.=) tbl)) THEN
        IF tbl IS NULL THEN
            RAISE NOTICE 'jsonb_ttl: no such table, skipping';
        ELSE
            RAISE NOTICE 'jsonb_ttl: % has no TTL index, skipping', tbl;
        END IF;
        RETURN false;
    END IF;
    RETURN jsonb_ttl.ttl_index_drop(tbl);
END
$$;
COMMENT ON FUNCTION jsonb_ttl.ttl_index_drop(regclass, boolean) IS
  'Drops the TTL index of a table and its catalog entry; with if_exists, a table without one is a NOTICE.';

CREATE FUNCTION jsonb_ttl.ttl_index_pause(tbl regclass, reason text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t jsonb_ttl_internal.ttl_index := jsonb_ttl_internal._ttl_lock_definition(tbl);
BEGIN
    IF t.paused_at IS NOT NULL THEN
        RETURN false;
    END IF;
    UPDATE jsonb_ttl_internal.ttl_index x
    SET paused_at = pg_catalog.now(), paused_by = 'operator', paused_reason = coalesce(reason, 'paused by hand')
    WHERE x.table_oid OPERATOR(pg_catalog.=) tbl;
    RETURN true;
END
$$;
COMMENT ON FUNCTION jsonb_ttl.ttl_index_pause(regclass, text) IS
  'Pauses the TTL index of a table by hand: ttl_purge() deletes nothing from it until ttl_index_resume(). Returns whether it was running.';

CREATE FUNCTION jsonb_ttl.ttl_index_resume(tbl regclass)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t jsonb_ttl_internal.ttl_index := jsonb_ttl_internal._ttl_lock_definition(tbl);
BEGIN
    -- the rows set aside are tried again (their cause may be mended)
    UPDATE jsonb_ttl_internal.ttl_state s SET set_aside = '{}'
    WHERE s.table_oid OPERATOR(pg_catalog.=) tbl AND s.set_aside OPERATOR(pg_catalog.<>) '{}';
    IF t.paused_at IS NULL THEN
        RETURN false;
    END IF;
    -- the brake lets this backlog go, and holds again once ttl_purge() has drained the table
    UPDATE jsonb_ttl_internal.ttl_index x
    SET paused_at = NULL, paused_by = NULL, paused_reason = NULL, brake_released = true
    WHERE x.table_oid OPERATOR(pg_catalog.=) tbl;
    RETURN true;
END
$$;
COMMENT ON FUNCTION jsonb_ttl.ttl_index_resume(regclass) IS
  'Lifts a pause of the TTL index of a table (by the safety brake, or by hand), and has the rows set aside tried again; the brake holds again once ttl_purge() has drained the table.';

CREATE FUNCTION jsonb_ttl.ttl_expire_preview(tbl regclass, at timestamptz DEFAULT now())
RETURNS TABLE (rows bigint, oldest timestamptz, newest timestamptz)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p record;
    counted record;
BEGIN
    PERFORM jsonb_ttl_internal._ttl_check_table(tbl);
    IF NOT EXISTS (SELECT FROM jsonb_ttl_internal.ttl_index x WHERE x.table_oid OPERATOR(pg_catalog.=) tbl) THEN
        PERFORM jsonb_ttl_internal._ttl_error('42704', pg_catalog.format('%s has no TTL index', tbl),
            'Create one with ttl_index_create().');
    END IF;
    rows := 0;
    FOR p IN SELECT * FROM jsonb_ttl_internal._ttl_parts(tbl) LOOP
        counted := jsonb_ttl_internal._ttl_count_expired(tbl, p.part, coalesce(at, pg_catalog.now()), NULL);
        rows := rows OPERATOR(pg_catalog.+) counted.rows;
        oldest := LEAST(oldest, counted.oldest);
        newest := GREATEST(newest, counted.newest);
    END LOOP;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION jsonb_ttl.ttl_expire_preview(regclass, timestamptz) IS
  'What the TTL index of a table would remove at a time (now by default): how many rows, their oldest and newest reference times. Removes nothing.';
