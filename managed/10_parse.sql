-- The reference time: ttl_timestamp and ttl_is_datestring, and the helpers the TTL indexes over
-- plain columns call. A line-by-line port of core/src/parse.rs and src/jsonb_scalar.rs; every
-- case of their tests is run through both editions by tests/managed/conformance.sh.
--
-- All are IMMUTABLE, STRICT and PARALLEL SAFE and never raise on any jsonb input (only a bad
-- numeric_unit or time_zone argument does), so they can key an expression index. No float is
-- used on the way: a point in time is assembled from whole days and microseconds, so every
-- microsecond is exact, and no step depends on the session's TimeZone or DateStyle.

-- A wall-clock time: the PostgreSQL timestamp of Unix-epoch microseconds given as numeric, or
-- NULL outside PostgreSQL's range ([4714-11-24 BC, 294277-01-01)).
CREATE FUNCTION jsonb_ttl_internal._ttl_unix_wall(unix_micros numeric)
RETURNS timestamp
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    pg_micros numeric := unix_micros OPERATOR(pg_catalog.-) 946684800000000;
    days bigint;
BEGIN
    IF pg_micros OPERATOR(pg_catalog.<) (-211813488000000000)::numeric
       OR pg_micros OPERATOR(pg_catalog.>=) 9223371331200000000::numeric THEN
        RETURN NULL;
    END IF;
    days := pg_catalog.floor(pg_micros OPERATOR(pg_catalog./) 86400000000::numeric);
    RETURN pg_catalog.make_timestamp(2000, 1, 1, 0, 0, 0)
           OPERATOR(pg_catalog.+) pg_catalog.make_interval(days => days::integer)
           OPERATOR(pg_catalog.+) ('1 microsecond'::pg_catalog.interval OPERATOR(pg_catalog.*)
               (pg_micros OPERATOR(pg_catalog.-) (days::numeric OPERATOR(pg_catalog.*) 86400000000::numeric))::pg_catalog.float8);
END
$$;

-- parse_unix_number: the decimal text of a number (as PostgreSQL prints a numeric, or with an
-- exponent of at most four digits) as a Unix time in numeric_unit ('s' or 'ms'), in Unix-epoch
-- microseconds rounded half up; NULL for a negative number (never expires), for what is no
-- number, and past PostgreSQL's range.
CREATE FUNCTION jsonb_ttl_internal._ttl_number_micros(number text, numeric_unit text)
RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    part text[] := pg_catalog.regexp_match(number,
        '^([+-]?)([0-9]*)(?:[.]([0-9]*))?(?:[eE]([+-]?[0-9]{1,4}))?$');
    int_digits text;
    frac_digits text;
    digits text;
    scale integer;
    kept integer;
    micros numeric;
BEGIN
    IF part IS NULL THEN
        RETURN NULL;
    END IF;
    int_digits := part[2];
    frac_digits := coalesce(part[3], '');
    IF int_digits OPERATOR(pg_catalog.=) '' AND frac_digits OPERATOR(pg_catalog.=) '' THEN
        RETURN NULL;
    END IF;
    -- the value in microseconds is the digit string × 10^(unit + exponent − fraction length)
    scale := CASE numeric_unit WHEN 'ms' THEN 3 ELSE 6 END
             OPERATOR(pg_catalog.+) coalesce(part[4]::integer, 0)
             OPERATOR(pg_catalog.-) pg_catalog.length(frac_digits);
    digits := pg_catalog.ltrim(int_digits OPERATOR(pg_catalog.||) frac_digits, '0');
    IF digits OPERATOR(pg_catalog.=) '' THEN
        micros := 0;
    ELSE
        kept := pg_catalog.length(digits) OPERATOR(pg_catalog.+) scale;  -- digits left of the point
        IF kept OPERATOR(pg_catalog.>) 21 THEN
            RETURN NULL;
        ELSIF scale OPERATOR(pg_catalog.>=) 0 THEN
            micros := (digits OPERATOR(pg_catalog.||) pg_catalog.repeat('0', scale))::numeric;
        ELSE
            micros := coalesce(NULLIF(pg_catalog.left(digits, GREATEST(kept, 0)), ''), '0')::numeric;
            IF kept OPERATOR(pg_catalog.>=) 0
               AND pg_catalog.substr(digits, kept OPERATOR(pg_catalog.+) 1, 1) OPERATOR(pg_catalog.>=) '5' THEN
                micros := micros OPERATOR(pg_catalog.+) 1;  -- half up
            END IF;
        END IF;
    END IF;
    IF part[1] OPERATOR(pg_catalog.=) '-' AND micros OPERATOR(pg_catalog.<>) 0 THEN
        RETURN NULL;
    END IF;
    IF micros OPERATOR(pg_catalog.-) 946684800000000 OPERATOR(pg_catalog.>=) 9223371331200000000::numeric THEN
        RETURN NULL;
    END IF;
    RETURN micros;
END
$$;

-- parse_datestring_local: an ISO 8601 date or date-time as the wall-clock time it writes,
-- moved to UTC when it carries an offset; has_offset says whether it did. NULL (both) when it
-- is not a date the grammar accepts:
--   date      = YYYY "-" MM "-" DD
--   datetime  = date ("T" | "t" | " ") HH ":" MM [ ":" SS [ ("." | ",") 1*DIGIT ] ] [ zone ]
--   zone      = "Z" | "z" | ("+" | "-") HH [ [ ":" ] MM ]
CREATE FUNCTION jsonb_ttl_internal._ttl_date_parts(value text, OUT wall timestamp, OUT has_offset boolean)
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p text[] := pg_catalog.regexp_match(value,
        '^([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]+))?)?(?:([Zz])|([+-])([0-9]{2})(?::?([0-9]{2}))?)?)?$');
    y integer; mo integer; d integer; h integer; mi integer; s integer;
    oh integer; om integer; last_day integer;
    fraction integer := 0;
BEGIN
    IF p IS NULL THEN
        RETURN;
    END IF;
    y := p[1]::integer; mo := p[2]::integer; d := p[3]::integer;
    IF mo OPERATOR(pg_catalog.<) 1 OR mo OPERATOR(pg_catalog.>) 12 OR d OPERATOR(pg_catalog.<) 1 THEN
        RETURN;
    END IF;
    -- the proleptic Gregorian calendar (year 0 is a leap year)
    last_day := CASE WHEN mo OPERATOR(pg_catalog.=) 2 THEN
                         CASE WHEN y OPERATOR(pg_catalog.%) 4 OPERATOR(pg_catalog.=) 0
                                   AND (y OPERATOR(pg_catalog.%) 100 OPERATOR(pg_catalog.<>) 0
                                        OR y OPERATOR(pg_catalog.%) 400 OPERATOR(pg_catalog.=) 0)
                              THEN 29 ELSE 28 END
                     WHEN mo OPERATOR(pg_catalog.=) ANY ('{4,6,9,11}'::integer[]) THEN 30
                     ELSE 31 END;
    IF d OPERATOR(pg_catalog.>) last_day THEN
        RETURN;
    END IF;
    h := coalesce(p[4]::integer, 0); mi := coalesce(p[5]::integer, 0); s := coalesce(p[6]::integer, 0);
    IF h OPERATOR(pg_catalog.>) 23 OR mi OPERATOR(pg_catalog.>) 59 OR s OPERATOR(pg_catalog.>) 59 THEN
        RETURN;
    END IF;
    IF p[7] IS NOT NULL THEN
        -- a fraction of a second in microseconds, rounded half up
        fraction := pg_catalog.rpad(pg_catalog.left(p[7], 6), 6, '0')::integer;
        IF pg_catalog.substr(p[7], 7, 1) OPERATOR(pg_catalog.>=) '5' THEN
            fraction := fraction OPERATOR(pg_catalog.+) 1;
        END IF;
    END IF;
    -- year 0 is 1 BC, which make_timestamp writes -1
    wall := pg_catalog.make_timestamp(CASE WHEN y OPERATOR(pg_catalog.=) 0 THEN -1 ELSE y END, mo, d, h, mi, s)
            OPERATOR(pg_catalog.+) ('1 microsecond'::pg_catalog.interval OPERATOR(pg_catalog.*) fraction);
    has_offset := p[8] IS NOT NULL OR p[9] IS NOT NULL;
    IF p[9] IS NOT NULL THEN
        oh := p[10]::integer; om := coalesce(p[11]::integer, 0);
        IF oh OPERATOR(pg_catalog.>) 23 OR om OPERATOR(pg_catalog.>) 59 THEN
            wall := NULL; has_offset := NULL;
            RETURN;
        END IF;
        -- local time = UTC + offset, so UTC = local − offset
        wall := wall OPERATOR(pg_catalog.-) pg_catalog.make_interval(
                    mins => CASE p[9] WHEN '+' THEN 1 ELSE -1 END OPERATOR(pg_catalog.*)
                            (oh OPERATOR(pg_catalog.*) 60 OPERATOR(pg_catalog.+) om));
    END IF;
END
$$;

-- A date string's instant: UTC when it has no offset and time_zone is NULL, else in time_zone.
CREATE FUNCTION jsonb_ttl_internal._ttl_date_string(value text, time_zone text)
RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    parsed record;
BEGIN
    IF value IS NULL THEN
        RETURN NULL;
    END IF;
    parsed := jsonb_ttl_internal._ttl_date_parts(value);
    IF parsed.wall IS NULL THEN
        RETURN NULL;
    END IF;
    IF parsed.has_offset OR time_zone IS NULL THEN
        RETURN pg_catalog.timezone('UTC', parsed.wall);
    END IF;
    RETURN pg_catalog.timezone(time_zone, parsed.wall);
END
$$;

-- Unix-epoch microseconds (from _ttl_number_micros) as a timestamptz.
CREATE FUNCTION jsonb_ttl_internal._ttl_unix_instant(unix_micros numeric)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.timezone('UTC', jsonb_ttl_internal._ttl_unix_wall(unix_micros)) $$;

-- MongoDB Extended JSON: {"$date": "<ISO-8601>"}, {"$date": <ms>} or
-- {"$date": {"$numberLong": "<ms>"}}; the object must hold that one key only.
CREATE FUNCTION jsonb_ttl_internal._ttl_date_object(value jsonb, time_zone text)
RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    date jsonb;
    long jsonb;
    digits text;
BEGIN
    IF (SELECT pg_catalog.count(*) FROM pg_catalog.jsonb_object_keys(value)) OPERATOR(pg_catalog.<>) 1 THEN
        RETURN NULL;
    END IF;
    date := value OPERATOR(pg_catalog.->) '$date';
    CASE pg_catalog.jsonb_typeof(date)
    WHEN 'string' THEN
        RETURN jsonb_ttl_internal._ttl_date_string(date OPERATOR(pg_catalog.#>>) '{}', time_zone);
    WHEN 'number' THEN
        RETURN jsonb_ttl_internal._ttl_unix_instant(
            jsonb_ttl_internal._ttl_number_micros(date OPERATOR(pg_catalog.#>>) '{}', 'ms'));
    WHEN 'object' THEN
        IF (SELECT pg_catalog.count(*) FROM pg_catalog.jsonb_object_keys(date)) OPERATOR(pg_catalog.<>) 1 THEN
            RETURN NULL;
        END IF;
        long := date OPERATOR(pg_catalog.->) '$numberLong';
        IF pg_catalog.jsonb_typeof(long) IS DISTINCT FROM 'string' THEN
            RETURN NULL;
        END IF;
        -- parse_unix_integer_string: an optional minus and digits only
        digits := long OPERATOR(pg_catalog.#>>) '{}';
        IF digits OPERATOR(pg_catalog.!~) '^-?[0-9]+$' THEN
            RETURN NULL;
        END IF;
        RETURN jsonb_ttl_internal._ttl_unix_instant(jsonb_ttl_internal._ttl_number_micros(digits, 'ms'));
    ELSE
        RETURN NULL;
    END CASE;
END
$$;

-- A scalar (a string is a date string, a number a Unix time in numeric_unit) or a $date object.
-- NULL for anything else, nested arrays among them.
CREATE FUNCTION jsonb_ttl_internal._ttl_element(value jsonb, numeric_unit text, time_zone text)
RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    CASE pg_catalog.jsonb_typeof(value)
    WHEN 'string' THEN
        RETURN jsonb_ttl_internal._ttl_date_string(value OPERATOR(pg_catalog.#>>) '{}', time_zone);
    WHEN 'number' THEN
        RETURN jsonb_ttl_internal._ttl_unix_instant(
            jsonb_ttl_internal._ttl_number_micros(value OPERATOR(pg_catalog.#>>) '{}', numeric_unit));
    WHEN 'object' THEN
        RETURN jsonb_ttl_internal._ttl_date_object(value, time_zone);
    ELSE
        RETURN NULL;
    END CASE;
END
$$;

-- The reading of a whole jsonb value: a scalar, a $date object, or an array (its earliest
-- element that parses: MongoDB's rule).
CREATE FUNCTION jsonb_ttl_internal._ttl_json_time(value jsonb, numeric_unit text, time_zone text)
RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF pg_catalog.jsonb_typeof(value) OPERATOR(pg_catalog.=) 'array' THEN
        RETURN (SELECT pg_catalog.min(jsonb_ttl_internal._ttl_element(e, numeric_unit, time_zone))
                FROM pg_catalog.jsonb_array_elements(value) e
                WHERE pg_catalog.jsonb_typeof(e) OPERATOR(pg_catalog.<>) 'array');
    END IF;
    RETURN jsonb_ttl_internal._ttl_element(value, numeric_unit, time_zone);
END
$$;

-- Argument checks: SQLSTATE 22023 with a HINT, as the Rust edition raises them.
CREATE FUNCTION jsonb_ttl_internal._ttl_check_unit(numeric_unit text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF numeric_unit IS NULL OR numeric_unit OPERATOR(pg_catalog.<>) ALL ('{s,ms}'::text[]) THEN
        RAISE EXCEPTION 'invalid numeric_unit %', coalesce(pg_catalog.format('"%s"', numeric_unit), 'NULL')
            USING ERRCODE = '22023',
                  HINT = 'numeric_unit must be ''s'' (seconds) or ''ms'' (milliseconds).';
    END IF;
    RETURN numeric_unit;
END
$$;

-- A time zone name: PostgreSQL's own check (timezone() raises 22023 on a name it does not
-- know); cheap enough for every row of an index expression.
CREATE FUNCTION jsonb_ttl_internal._ttl_check_zone(time_zone text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pg_catalog.timezone(time_zone, pg_catalog.make_timestamp(2000, 1, 1, 0, 0, 0));
    RETURN time_zone;
END
$$;

CREATE FUNCTION jsonb_ttl.ttl_timestamp(value jsonb)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_json_time(value, 's', NULL) $$;

CREATE FUNCTION jsonb_ttl.ttl_timestamp(value jsonb, numeric_unit text)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_json_time(value, jsonb_ttl_internal._ttl_check_unit(numeric_unit), NULL) $$;

CREATE FUNCTION jsonb_ttl.ttl_timestamp(value jsonb, numeric_unit text, time_zone text)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT jsonb_ttl_internal._ttl_json_time(value, jsonb_ttl_internal._ttl_check_unit(numeric_unit),
                                             jsonb_ttl_internal._ttl_check_zone(time_zone))
$$;

CREATE FUNCTION jsonb_ttl.ttl_is_datestring(value text)
RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT (jsonb_ttl_internal._ttl_date_parts(value)).wall IS NOT NULL $$;

CREATE FUNCTION jsonb_ttl_internal.ttl_text_timestamp(value text)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_date_string(value, NULL) $$;

CREATE FUNCTION jsonb_ttl_internal.ttl_text_timestamp(value text, time_zone text)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT jsonb_ttl_internal._ttl_date_string(value, jsonb_ttl_internal._ttl_check_zone(time_zone)) $$;

CREATE FUNCTION jsonb_ttl_internal.ttl_unix_timestamp(value numeric, numeric_unit text)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT jsonb_ttl_internal._ttl_unix_instant(
        jsonb_ttl_internal._ttl_number_micros(value::text, jsonb_ttl_internal._ttl_check_unit(numeric_unit)))
$$;

-- Per-row TTL (core/src/row_ttl.rs): the seconds a row's field holds, -1 for never, NULL to fall
-- back to expire_after. A finite number >= 0 or exactly -1 counts; anything else falls back.
CREATE FUNCTION jsonb_ttl_internal.ttl_row_seconds(value numeric)
RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN value::text OPERATOR(pg_catalog.=) ANY ('{NaN,Infinity,-Infinity}'::text[]) THEN NULL
                WHEN value OPERATOR(pg_catalog.>=) 0 AND value OPERATOR(pg_catalog.<) 1e308 THEN value::double precision
                WHEN value OPERATOR(pg_catalog.=) -1 THEN -1::double precision
           END
$$;

CREATE FUNCTION jsonb_ttl_internal.ttl_row_seconds(value jsonb)
RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN pg_catalog.jsonb_typeof(value) OPERATOR(pg_catalog.=) 'number'
                THEN jsonb_ttl_internal.ttl_row_seconds((value OPERATOR(pg_catalog.#>>) '{}')::numeric) END
$$;

-- When a row with a TTL of its own expires: its reference time plus that many seconds, added
-- as microseconds (timestamptz + interval is only STABLE); NULL for never.
CREATE FUNCTION jsonb_ttl_internal.ttl_expires_at(reference timestamptz, seconds double precision)
RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET extra_float_digits = 1
AS $$
DECLARE
    micros numeric;
BEGIN
    IF pg_catalog.isfinite(reference) IS NOT TRUE OR seconds::text OPERATOR(pg_catalog.=) 'NaN'
       OR seconds OPERATOR(pg_catalog.<) 0
       OR (seconds OPERATOR(pg_catalog.*) 1000000) OPERATOR(pg_catalog.>=) 9223372036854775807::float8 THEN
        RETURN NULL;
    END IF;
    -- the seconds' exact decimal value (float8's shortest text that reads back the same),
    -- rounded half away from zero as Rust's f64::round
    micros := pg_catalog.round(((seconds OPERATOR(pg_catalog.*) 1000000)::text)::numeric)
              OPERATOR(pg_catalog.+) (EXTRACT(epoch FROM reference) OPERATOR(pg_catalog.*) 1000000);
    RETURN jsonb_ttl_internal._ttl_unix_instant(pg_catalog.round(micros));
END
$$;
