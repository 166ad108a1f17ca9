-- The checks of ttl_index_create's and ttl_index_alter's arguments, each SQLSTATE 22023 (0A000
-- for what this edition does not have) with a HINT, as the Rust edition raises them.

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
