-- The SQL face: ttl_index_create / ttl_index_alter / ttl_index_drop, ttl_index_pause /
-- ttl_index_resume, ttl_expire_preview, with the Rust edition's signatures (sql/api.sql): the
-- same names, argument names, order and defaults. The options this edition does not have are
-- accepted at their defaults and refused otherwise (SQLSTATE 0A000, with a HINT), so that a call
-- written for one edition either means the same on the other or says why not.

-- A filter is an SQL condition on the row. It goes into statements as "AND (<filter>)", so it
-- must be one expression that cannot close that parenthesis: balanced parentheses outside
-- quotes, no semicolon, no comment, no dollar quote, no backslash. It is read (in the index
-- predicate and in every statement alike) with search_path = pg_catalog, pg_temp: functions
-- and operators of other schemas are written qualified.
CREATE FUNCTION jsonb_ttl_internal._ttl_check_filter(filter text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    depth integer := 0;
    quote text := NULL;   -- ' or " while inside one
    c text;
    hint constant text := 'Write the filter as one SQL condition on the row, as in doc->>''kind'' = ''session''; without semicolons, comments, dollar quotes or backslashes.';
BEGIN
    IF filter IS NULL OR pg_catalog.btrim(filter) OPERATOR(pg_catalog.=) '' THEN
        PERFORM jsonb_ttl_internal._ttl_error('22023', 'filter must not be empty', hint);
    END IF;
    FOR i IN 1 .. pg_catalog.length(filter) LOOP
        c := pg_catalog.substr(filter, i, 1);
        IF c OPERATOR(pg_catalog.=) pg_catalog.chr(92) THEN
            PERFORM jsonb_ttl_internal._ttl_error('22023', 'filter must not hold a backslash', hint);
        ELSIF quote IS NOT NULL THEN
            IF c OPERATOR(pg_catalog.=) quote THEN
                quote := NULL;   -- a doubled quote closes and opens again: the same
            END IF;
        ELSIF c OPERATOR(pg_catalog.=) ANY (ARRAY['''', '"']) THEN
            quote := c;
        ELSIF c OPERATOR(pg_catalog.=) '(' THEN
            depth := depth OPERATOR(pg_catalog.+) 1;
        ELSIF c OPERATOR(pg_catalog.=) ')' THEN
            depth := depth OPERATOR(pg_catalog.-) 1;
            IF depth OPERATOR(pg_catalog.<) 0 THEN
                PERFORM jsonb_ttl_internal._ttl_error('22023', 'filter has an unbalanced parenthesis', hint);
            END IF;
        ELSIF c OPERATOR(pg_catalog.=) ANY (ARRAY[';', '$'])
              OR pg_catalog.substr(filter, i, 2) OPERATOR(pg_catalog.=) ANY (ARRAY['--', '/*']) THEN
            PERFORM jsonb_ttl_internal._ttl_error('22023', 'filter must be one SQL condition', hint);
        END IF;
    END LOOP;
    IF quote IS NOT NULL OR depth OPERATOR(pg_catalog.<>) 0 THEN
        PERFORM jsonb_ttl_internal._ttl_error('22023', 'filter has an unterminated quote or parenthesis', hint);
    END IF;
    RETURN filter;
END
$$;

-- expire_after: 0 or more, finite.
CREATE FUNCTION jsonb_ttl_internal._ttl_check_expire_after(expire_after interval)
RETURNS interval
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF expire_after IS NULL OR expire_after OPERATOR(pg_catalog.<) '0'::pg_catalog.interval THEN
        PERFORM jsonb_ttl_internal._ttl_error('22023',
            pg_catalog.format('expire_after must be 0 or more, not %s', coalesce(expire_after::pg_catalog.text, 'NULL')),
            'Pass how long after its point in time a row expires, as in interval ''30 days''; 0 when the point in time is the expiry itself.');
    END IF;
    RETURN expire_after;
END
$$;

CREATE FUNCTION jsonb_ttl_internal._ttl_seconds(expire_after numeric)
RETURNS interval
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF expire_after IS NULL OR expire_after::pg_catalog.text OPERATOR(pg_catalog.=) ANY (ARRAY['NaN', 'Infinity', '-Infinity'])
       OR expire_after OPERATOR(pg_catalog.<) 0 OR expire_after OPERATOR(pg_catalog.>) 1e12 THEN
        PERFORM jsonb_ttl_internal._ttl_error('22023',
            pg_catalog.format('expire_after must be a finite number of seconds, 0 or more, not %s', coalesce(expire_after::pg_catalog.text, 'NULL')),
            'Pass the seconds after its point in time a row expires, as in 86400; 0 when the point in time is the expiry itself.');
    END IF;
    RETURN '1 second'::pg_catalog.interval OPERATOR(pg_catalog.*) expire_after::pg_catalog.float8;
END
$$;

CREATE FUNCTION jsonb_ttl_internal._ttl_interval(expire_after text)
RETURNS interval
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN expire_after::pg_catalog.interval;
EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR interval_field_overflow THEN
    PERFORM jsonb_ttl_internal._ttl_error('22023',
        pg_catalog.format('expire_after must be an interval or a number of seconds, not %s', pg_catalog.quote_literal(expire_after)),
        'Write it as PostgreSQL reads an interval (''30 days'', ''90 minutes'', ''P1D'') or as seconds (''3600'').');
    RETURN NULL;
END
$$;

-- A time zone for a TTL index: a name of pg_timezone_names (as the Rust edition's check).
CREATE FUNCTION jsonb_ttl_internal._ttl_check_zone_name(time_zone text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF time_zone IS NOT NULL AND NOT EXISTS (
           SELECT FROM pg_catalog.pg_timezone_names z
           WHERE pg_catalog.lower(z.name) OPERATOR(pg_catalog.=) pg_catalog.lower(time_zone)) THEN
        PERFORM jsonb_ttl_internal._ttl_error('22023', pg_catalog.format('time zone "%s" not recognized', time_zone),
            'Pass a name from pg_timezone_names, such as ''America/New_York'' or ''UTC''.');
    END IF;
    RETURN time_zone;
END
$$;

-- delete_window as given: NULL for '' or 'off' (no window), else its start and end; 22023 with
-- the Rust edition's messages and HINT otherwise.
CREATE FUNCTION jsonb_ttl_internal._ttl_parse_window(delete_window text)
RETURNS time[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    given text := pg_catalog.btrim(delete_window, E' \t\n\r');
    part text;
    hm text;
    times time[] := '{}';
    hint constant text := 'Write the window as ''HH:MM-HH:MM'' in the TTL index''s time zone (UTC without one), for example ''01:00-05:00'', or ''22:00-06:00'' across midnight; '''' removes it.';
BEGIN
    IF given OPERATOR(pg_catalog.=) '' OR pg_catalog.lower(given) OPERATOR(pg_catalog.=) 'off' THEN
        RETURN NULL;
    END IF;
    IF pg_catalog.strpos(given, '-') OPERATOR(pg_catalog.=) 0 THEN
        PERFORM jsonb_ttl_internal._ttl_error('22023', pg_catalog.format('delete_window: "%s" is not two times of day', given), hint);
    END IF;
    FOREACH part IN ARRAY ARRAY[pg_catalog.split_part(given, '-', 1),
                                pg_catalog.substr(given, pg_catalog.strpos(given, '-') OPERATOR(pg_catalog.+) 1)] LOOP
        hm := pg_catalog.btrim(part, E' \t\n\r');
        IF hm OPERATOR(pg_catalog.!~) '^[+]?[0-9]{1,9}:[+]?[0-9]{1,9}$' THEN
            PERFORM jsonb_ttl_internal._ttl_error('22023', pg_catalog.format('delete_window: "%s" is not HH:MM', part), hint);
        END IF;
        IF pg_catalog.split_part(hm, ':', 1)::bigint OPERATOR(pg_catalog.>) 23
           OR pg_catalog.split_part(hm, ':', 2)::bigint OPERATOR(pg_catalog.>) 59 THEN
            PERFORM jsonb_ttl_internal._ttl_error('22023', pg_catalog.format('delete_window: "%s" is not a time of day', part), hint);
        END IF;
        times := times OPERATOR(pg_catalog.||) pg_catalog.make_time(pg_catalog.split_part(hm, ':', 1)::integer,
                                                                    pg_catalog.split_part(hm, ':', 2)::integer, 0);
    END LOOP;
    IF times[1] OPERATOR(pg_catalog.=) times[2] THEN
        PERFORM jsonb_ttl_internal._ttl_error('22023', pg_catalog.format('delete_window: "%s" is empty: it starts when it ends', given), hint);
    END IF;
    RETURN times;
END
$$;

-- A limit of the TTL index's own: positive, or 0 for none (NULL); it only lowers ttl_purge()'s.
CREATE FUNCTION jsonb_ttl_internal._ttl_check_rate(max_removes_per_second integer)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF max_removes_per_second OPERATOR(pg_catalog.<) 0 THEN
        PERFORM jsonb_ttl_internal._ttl_error('22023',
            pg_catalog.format('max_removes_per_second must be positive, or 0 for none, not %s', max_removes_per_second),
            'max_removes_per_second caps this TTL index under ttl_purge()''s max_removes_per_second; it never raises it.');
    END IF;
    RETURN NULLIF(max_removes_per_second, 0);
END
$$;

-- The option this edition does not have: accepted at its default only.
CREATE FUNCTION jsonb_ttl_internal._ttl_not_here(option text, is_default boolean)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT coalesce(is_default, true) THEN
        RAISE EXCEPTION '% is not in the SQL edition of jsonb_ttl', option
            USING ERRCODE = '0A000',
                  HINT = 'The SQL edition (for managed services) has path, expire_after, numeric_unit, time_zone, filter, row_ttl_path, paused, delete_window, batch_size and max_removes_per_second; managed/README.md lists what it gives up and why.';
    END IF;
END
$$;

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
