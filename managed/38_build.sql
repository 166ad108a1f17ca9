-- What ttl_index_create and ttl_index_alter build on: the names, the indexes of a TTL index's
-- parts (dropped and built by the one path that finds them, _ttl_index_of), the held first
-- backlog, the zone a timestamp or date column is read in, and the row they return.

-- A free index name in the table's schema: <table><suffix>, numbered when taken.
CREATE FUNCTION jsonb_ttl_internal._ttl_index_name(tbl regclass, suffix text)
RETURNS name
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rel record;
    candidate text;
    n integer := 0;
BEGIN
    SELECT c.relname, c.relnamespace INTO rel FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) tbl::pg_catalog.oid;
    LOOP
        candidate := CASE WHEN n OPERATOR(pg_catalog.=) 0 THEN suffix ELSE suffix OPERATOR(pg_catalog.||) n END;
        candidate := pg_catalog.left(rel.relname, 63 OPERATOR(pg_catalog.-) pg_catalog.octet_length(candidate)) OPERATOR(pg_catalog.||) candidate;
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_class c
                       WHERE c.relname OPERATOR(pg_catalog.=) candidate AND c.relnamespace OPERATOR(pg_catalog.=) rel.relnamespace) THEN
            RETURN candidate;
        END IF;
        n := n OPERATOR(pg_catalog.+) 1;
    END LOOP;
END
$$;

-- Drops the indexes of a TTL index (its parts' indexes, as _ttl_index_of finds them).
CREATE FUNCTION jsonb_ttl_internal._ttl_drop_indexes(tbl regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    old oid;
BEGIN
    FOR old IN SELECT v.i FROM jsonb_ttl_internal.ttl_index t,
                      LATERAL (VALUES (jsonb_ttl_internal._ttl_index_of(t, 'expire_after')),
                                      (jsonb_ttl_internal._ttl_index_of(t, 'row_ttl'))) v(i)
               WHERE t.table_oid OPERATOR(pg_catalog.=) tbl AND v.i IS NOT NULL
    LOOP
        EXECUTE pg_catalog.format('DROP INDEX %s', old::pg_catalog.regclass);
    END LOOP;
END
$$;

-- Builds the indexes of a TTL index from its parts (one, or two with a per-row TTL) and records
-- their OIDs and shapes; drops the old ones first (_ttl_drop_indexes).
CREATE FUNCTION jsonb_ttl_internal._ttl_build(tbl regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p record;
    name text;
    built oid;
    schema_name name;
BEGIN
    PERFORM jsonb_ttl_internal._ttl_drop_indexes(tbl);
    UPDATE jsonb_ttl_internal.ttl_index t SET index_oid = 0, index_shape = NULL, index_name = NULL,
        row_ttl_index_oid = NULL, row_ttl_index_shape = NULL, row_ttl_index_name = NULL
    WHERE t.table_oid OPERATOR(pg_catalog.=) tbl;
    SELECT n.nspname INTO schema_name FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
    WHERE c.oid OPERATOR(pg_catalog.=) tbl::pg_catalog.oid;
    FOR p IN SELECT * FROM jsonb_ttl_internal._ttl_parts(tbl) LOOP
        name := jsonb_ttl_internal._ttl_index_name(tbl, CASE p.part WHEN 'row_ttl' THEN '_row_ttl_idx' ELSE '_ttl_idx' END);
        BEGIN
            EXECUTE pg_catalog.format('CREATE INDEX %I ON %s USING btree ((%s)) WHERE %s', name, tbl, p.key_sql, p.predicate_sql);
        EXCEPTION WHEN syntax_error OR undefined_function OR undefined_column OR datatype_mismatch
                       OR invalid_object_definition OR undefined_object OR ambiguous_function THEN
            RAISE EXCEPTION '%', SQLERRM USING ERRCODE = SQLSTATE,
                HINT = 'The filter is read with search_path = pg_catalog, pg_temp: write functions and operators of other schemas qualified, and only IMMUTABLE ones (it is part of the index predicate).';
        END;
        SELECT c.oid INTO built FROM pg_catalog.pg_class c
        JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
        WHERE c.relname OPERATOR(pg_catalog.=) name AND n.nspname OPERATOR(pg_catalog.=) schema_name;
        IF p.part OPERATOR(pg_catalog.=) 'row_ttl' THEN
            UPDATE jsonb_ttl_internal.ttl_index t SET row_ttl_index_oid = built, row_ttl_index_name = name,
                row_ttl_index_shape = jsonb_ttl_internal._ttl_index_shape(built)
            WHERE t.table_oid OPERATOR(pg_catalog.=) tbl;
        ELSE
            UPDATE jsonb_ttl_internal.ttl_index t SET index_oid = built, index_name = name,
                index_shape = jsonb_ttl_internal._ttl_index_shape(built)
            WHERE t.table_oid OPERATOR(pg_catalog.=) tbl;
        END IF;
        INSERT INTO jsonb_ttl_internal.ttl_state AS s (table_oid, part) VALUES (tbl, p.part)
        ON CONFLICT (table_oid, part) DO UPDATE SET backlog_counted = false, set_aside = '{}';
    END LOOP;
    DELETE FROM jsonb_ttl_internal.ttl_state s
    WHERE s.table_oid OPERATOR(pg_catalog.=) tbl
      AND s.part OPERATOR(pg_catalog.<>) ALL (ARRAY(SELECT x.part FROM jsonb_ttl_internal._ttl_parts(tbl) x));
END
$$;

-- The first backlog, or what an alter that widens what expires expires at once: counted, and
-- held by the safety brake past jsonb_ttl.max_table_fraction of a table of at least
-- jsonb_ttl.brake_min_rows rows (the Rust edition's settings and defaults, read when set).
-- Returns the rows expired.
CREATE FUNCTION jsonb_ttl_internal._ttl_hold_backlog(tbl regclass, what text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t jsonb_ttl_internal.ttl_index;
    fraction double precision := jsonb_ttl_internal._ttl_setting('max_table_fraction', '0.5')::double precision;
    min_rows double precision := jsonb_ttl_internal._ttl_setting('brake_min_rows', '10000')::double precision;
    table_rows double precision := jsonb_ttl_internal._ttl_table_rows(tbl);
    p record;
    counted record;
    expired bigint := 0;
    oldest timestamptz;
    newest timestamptz;
BEGIN
    SELECT * INTO t FROM jsonb_ttl_internal.ttl_index x WHERE x.table_oid OPERATOR(pg_catalog.=) tbl;
    FOR p IN SELECT * FROM jsonb_ttl_internal._ttl_parts(tbl) LOOP
        counted := jsonb_ttl_internal._ttl_count_expired(tbl, p.part, pg_catalog.now(), 100000000);
        expired := expired OPERATOR(pg_catalog.+) counted.rows;
        oldest := LEAST(oldest, counted.oldest);
        newest := GREATEST(newest, counted.newest);
    END LOOP;
    IF expired OPERATOR(pg_catalog.=) 0 OR t.paused_at IS NOT NULL THEN
        RETURN expired;
    END IF;
    IF table_rows OPERATOR(pg_catalog.>=) min_rows AND fraction OPERATOR(pg_catalog.<) 1
       AND expired::double precision OPERATOR(pg_catalog.>) (fraction OPERATOR(pg_catalog.*) table_rows) THEN
        UPDATE jsonb_ttl_internal.ttl_index x
        SET paused_at = pg_catalog.now(), paused_by = 'brake', brake_released = false,
            paused_reason = pg_catalog.format('%s row(s) of about %s would expire at once (%s)', expired, table_rows::pg_catalog.int8, what)
        WHERE x.table_oid OPERATOR(pg_catalog.=) tbl;
        RAISE NOTICE 'jsonb_ttl: % of about % row(s) of % would expire at once: the TTL index is held, nothing goes until it is resumed',
                     expired, table_rows::pg_catalog.int8, tbl
            USING DETAIL = pg_catalog.format('Read from %L (numbers as Unix %s, local times in %s), their points in time run from %s to %s (UTC); now is %s, and they expire %s after them. jsonb_ttl.max_table_fraction is %s.',
                                             t.path, CASE t.numeric_unit WHEN 'ms' THEN 'milliseconds' ELSE 'seconds' END,
                                             coalesce(t.time_zone, 'UTC'),
                                             pg_catalog.timezone('UTC', oldest), pg_catalog.timezone('UTC', newest),
                                             pg_catalog.timezone('UTC', pg_catalog.now()), t.expire_after, fraction),
                  HINT = pg_catalog.format('Check the time zone (time_zone), the unit of numbers (numeric_unit) and the path: a mistake in any of them expires a whole table. ttl_expire_preview() shows what would go. If they may all go: SELECT jsonb_ttl.ttl_index_resume(%L)', tbl::pg_catalog.text);
    ELSE
        RAISE NOTICE 'jsonb_ttl: % row(s) of % are expired already: ttl_purge() deletes them from its next run', expired, tbl
            USING HINT = 'To look at them first, create the index with paused => true.';
    END IF;
    RETURN expired;
END
$$;

-- What ttl_index_create and ttl_index_alter return.
CREATE FUNCTION jsonb_ttl_internal._ttl_index_info(tbl regclass, is_newly_created boolean, rows_expired bigint)
RETURNS jsonb_ttl.ttl_index_info
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT i.relname, t.table_oid, jsonb_ttl_internal._ttl_column(t.table_oid::pg_catalog.oid, t.column_attnum),
           t.path, t.expire_after, t.numeric_unit, is_newly_created, t.time_zone, t.filter, false,
           NULL::pg_catalog.text[], false, t.row_ttl_path, NULL::pg_catalog.text, t.paused_at IS NOT NULL,
           jsonb_ttl_internal._ttl_window_text(t.delete_window_start, t.delete_window_end), t.batch_size, t.max_removes_per_second, false, false, rows_expired,
           NULL::pg_catalog.regclass
    FROM jsonb_ttl_internal.ttl_index t
    LEFT JOIN pg_catalog.pg_class i
           ON i.oid OPERATOR(pg_catalog.=) jsonb_ttl_internal._ttl_index_of(t, 'expire_after')
    WHERE t.table_oid OPERATOR(pg_catalog.=) tbl
$$;

-- The zone of a timestamp or date column when none is given: what the application's sessions
-- get (this session's TimeZone at its start), and only when this session has not changed it (a
-- DBA's psql elsewhere is not the application). Never taken silently otherwise.
CREATE FUNCTION jsonb_ttl_internal._ttl_default_zone(tbl regclass, kind text, time_zone text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    session_zone text;
    start_zone text;
BEGIN
    IF time_zone IS NOT NULL OR kind OPERATOR(pg_catalog.<>) ALL (ARRAY['timestamp', 'date']) THEN
        RETURN time_zone;
    END IF;
    SELECT s.setting, s.reset_val INTO session_zone, start_zone FROM pg_catalog.pg_settings s
    WHERE s.name OPERATOR(pg_catalog.=) 'TimeZone';
    IF session_zone OPERATOR(pg_catalog.<>) start_zone THEN
        PERFORM jsonb_ttl_internal._ttl_error('22023',
            pg_catalog.format('which time zone are the local times of %s in: this session''s %s, or %s, what sessions start with?', tbl, session_zone, start_zone),
            'Pass time_zone => ''<zone>'', the zone of the application that writes the rows.');
    END IF;
    RAISE NOTICE 'jsonb_ttl: the local times of % are read in %, the TimeZone sessions start with', tbl, start_zone
        USING HINT = 'To read them in another zone: ttl_index_alter(tbl, time_zone => ''<zone>'').';
    RETURN start_zone;
END
$$;
