-- The reference time: ttl_timestamp and ttl_is_datestring, and the helpers the TTL indexes over
-- plain columns call. A line-by-line port of core/src/parse.rs and src/jsonb_scalar.rs; every
-- case of their tests is run through both editions by tests/managed/conformance.sh.
--
-- All are IMMUTABLE, STRICT and PARALLEL SAFE and never raise on any jsonb input (only a bad
-- numeric_unit or time_zone argument does), so they can key an expression index. No float is
-- used on the way: a point in time is assembled from whole days and microseconds, so every
-- microsecond is exact, and no step depends on the session's TimeZone or DateStyle.
--
-- What an index expression calls never looks a name up when it runs: the functions that call
-- others have SQL-standard bodies (RETURN …, bound by OID when created), and the PL/pgSQL ones
-- call only pg_catalog. CREATE INDEX evaluates the expression as the table's owner, and a
-- pg_restore builds the indexes before it grants the schemas: a name looked up in
-- jsonb_ttl_internal then would be refused (managed/README.md, "Dump and restore").

-- Unix-epoch microseconds as a timestamptz, or NULL past PostgreSQL's range
-- ([4714-11-24 BC, 294277-01-01)): whole days, then the microseconds of the day.
CREATE FUNCTION jsonb_ttl_internal._ttl_micros_instant(unix_micros numeric)
RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    pg_micros numeric := unix_micros OPERATOR(pg_catalog.-) 946684800000000;
    days integer;
BEGIN
    IF pg_micros OPERATOR(pg_catalog.<) (-211813488000000000)::numeric
       OR pg_micros OPERATOR(pg_catalog.>=) 9223371331200000000::numeric THEN
        RETURN NULL;
    END IF;
    days := pg_catalog.floor(pg_micros OPERATOR(pg_catalog./) 86400000000::numeric);
    RETURN pg_catalog.timezone('UTC',
        pg_catalog.make_timestamp(2000, 1, 1, 0, 0, 0)
        OPERATOR(pg_catalog.+) pg_catalog.make_interval(days => days)
        OPERATOR(pg_catalog.+) ('1 microsecond'::pg_catalog.interval OPERATOR(pg_catalog.*)
            (pg_micros OPERATOR(pg_catalog.-) (days::numeric OPERATOR(pg_catalog.*) 86400000000::numeric))::pg_catalog.float8));
END
$$;

-- parse_unix_number itself: the decimal text of a number, with an exponent of at most four
-- digits, as a Unix time in numeric_unit, in Unix-epoch microseconds rounded half up; NULL for
-- a negative number, for what is no number, and for more than 21 digits left of the point. No
-- TTL index reads text this way (JSON numbers and numeric columns go through _ttl_json_time):
-- it is here so that the conformance test checks the grammar itself.
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

-- The reading of a jsonb value, in one PL/pgSQL function that calls only pg_catalog (see the
-- top): a string is a date string, a number a Unix time in numeric_unit, an object a $date
-- object, an array its earliest element that reads (MongoDB's rule; arrays inside it are not
-- read); anything else NULL. Text and numeric columns are read through it as to_jsonb() of them.
--
-- A date string is parse_datestring_local: an ISO 8601 date or date-time, or NULL when it is
-- not a date the grammar accepts:
--   date      = YYYY "-" MM "-" DD
--   datetime  = date ("T" | "t" | " ") HH ":" MM [ ":" SS [ ("." | ",") 1*DIGIT ] ] [ zone ]
--   zone      = "Z" | "z" | ("+" | "-") HH [ [ ":" ] MM ]
-- A string with an offset is that instant; one without is a wall-clock time in time_zone (UTC
-- when NULL). The shape is checked by one regular expression without captures (PostgreSQL's
-- regular expressions are several times slower with them), then each field is read at its
-- place; the calendar is the proleptic Gregorian one (year 0 is 1 BC, a leap year).
--
-- A number is a Unix time in numeric_unit ('s' or 'ms'), rounded half up to the microsecond;
-- NULL for a negative number (never expires: MongoDB's and ArangoDB's rule), NaN, infinities, and
-- past PostgreSQL's range. (parse_unix_number on the text PostgreSQL prints for a numeric: the
-- digits scaled and rounded half up on the first digit dropped, which is the numeric's own
-- round() of the exact product.)
--
-- A $date object is MongoDB Extended JSON: {"$date": "<ISO-8601>"}, {"$date": <ms>} or
-- {"$date": {"$numberLong": "<ms>"}} (parse_unix_integer_string: an optional minus and digits
-- only); the object must hold that one key only.
CREATE FUNCTION jsonb_ttl_internal._ttl_json_time(value jsonb, numeric_unit text, time_zone text)
RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    is_array boolean := pg_catalog.jsonb_typeof(value) OPERATOR(pg_catalog.=) 'array';
    n integer := CASE WHEN is_array THEN pg_catalog.jsonb_array_length(value) ELSE 1 END;
    i integer := 0;
    e jsonb;
    date jsonb;
    long jsonb;
    str text;
    num numeric;
    unit text;
    found timestamptz;
    earliest timestamptz;
    y integer;
    mo integer;
    d integer;
    h integer;
    mi integer;
    s integer;
    fraction integer;
    digits integer;
    rest text;
    wall timestamp;
    oh integer;
    om integer;
    micros numeric;
    pg_micros numeric;
    days integer;
BEGIN
    WHILE i OPERATOR(pg_catalog.<) n LOOP
        e := CASE WHEN is_array THEN value OPERATOR(pg_catalog.->) i ELSE value END;
        i := i OPERATOR(pg_catalog.+) 1;
        found := NULL;
        str := NULL;
        num := NULL;
        unit := numeric_unit;
        <<one>>
        BEGIN
            -- what the value holds: a date string (str) or a number of unit (num)
            CASE pg_catalog.jsonb_typeof(e)
            WHEN 'string' THEN
                str := e OPERATOR(pg_catalog.#>>) '{}';
            WHEN 'number' THEN
                num := e::numeric;
            WHEN 'object' THEN
                date := e OPERATOR(pg_catalog.->) '$date';
                IF date IS NULL OR (e OPERATOR(pg_catalog.-) '$date'::text) OPERATOR(pg_catalog.<>) '{}'::jsonb THEN
                    EXIT one;  -- no $date, or other keys beside it
                END IF;
                unit := 'ms';
                CASE pg_catalog.jsonb_typeof(date)
                WHEN 'string' THEN
                    str := date OPERATOR(pg_catalog.#>>) '{}';
                WHEN 'number' THEN
                    num := date::numeric;
                WHEN 'object' THEN
                    long := date OPERATOR(pg_catalog.->) '$numberLong';
                    IF pg_catalog.jsonb_typeof(long) IS DISTINCT FROM 'string'
                       OR (date OPERATOR(pg_catalog.-) '$numberLong'::text) OPERATOR(pg_catalog.<>) '{}'::jsonb
                       OR (long OPERATOR(pg_catalog.#>>) '{}') OPERATOR(pg_catalog.!~) '^-?[0-9]+$' THEN
                        EXIT one;
                    END IF;
                    num := (long OPERATOR(pg_catalog.#>>) '{}')::numeric;
                ELSE
                    EXIT one;
                END CASE;
            ELSE
                EXIT one;  -- null, a boolean, an array inside an array
            END CASE;

            IF num IS NOT NULL THEN
                -- a Unix time
                IF num OPERATOR(pg_catalog.=) ANY ('{NaN,Infinity,-Infinity}'::numeric[]) THEN
                    EXIT one;
                END IF;
                micros := pg_catalog.round(pg_catalog.abs(num) OPERATOR(pg_catalog.*)
                                           CASE unit WHEN 'ms' THEN 1000 ELSE 1000000 END);
                IF num OPERATOR(pg_catalog.<) 0 AND micros OPERATOR(pg_catalog.<>) 0 THEN
                    EXIT one;
                END IF;
                -- (as _ttl_micros_instant, written out: this runs for every number indexed)
                pg_micros := micros OPERATOR(pg_catalog.-) 946684800000000;
                IF pg_micros OPERATOR(pg_catalog.>=) 9223371331200000000::numeric THEN
                    EXIT one;
                END IF;
                days := pg_catalog.floor(pg_micros OPERATOR(pg_catalog./) 86400000000::numeric);
                found := pg_catalog.timezone('UTC',
                    pg_catalog.make_timestamp(2000, 1, 1, 0, 0, 0)
                    OPERATOR(pg_catalog.+) pg_catalog.make_interval(days => days)
                    OPERATOR(pg_catalog.+) ('1 microsecond'::pg_catalog.interval OPERATOR(pg_catalog.*)
                        (pg_micros OPERATOR(pg_catalog.-) (days::numeric OPERATOR(pg_catalog.*) 86400000000::numeric))::pg_catalog.float8));
                EXIT one;
            END IF;

            -- a date string
            IF str OPERATOR(pg_catalog.!~)
                '^[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[Tt ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:[.,][0-9]+)?)?(?:[Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)?)?$' THEN
                EXIT one;
            END IF;
            y := pg_catalog.substr(str, 1, 4)::integer;
            mo := pg_catalog.substr(str, 6, 2)::integer;
            d := pg_catalog.substr(str, 9, 2)::integer;
            IF mo OPERATOR(pg_catalog.<) 1 OR mo OPERATOR(pg_catalog.>) 12 OR d OPERATOR(pg_catalog.<) 1 THEN
                EXIT one;
            END IF;
            IF d OPERATOR(pg_catalog.>) 28 THEN
                IF mo OPERATOR(pg_catalog.=) 2 THEN
                    IF d OPERATOR(pg_catalog.>) 29 OR y OPERATOR(pg_catalog.%) 4 OPERATOR(pg_catalog.<>) 0
                       OR (y OPERATOR(pg_catalog.%) 100 OPERATOR(pg_catalog.=) 0 AND y OPERATOR(pg_catalog.%) 400 OPERATOR(pg_catalog.<>) 0) THEN
                        EXIT one;
                    END IF;
                ELSIF d OPERATOR(pg_catalog.>) 31
                      OR (d OPERATOR(pg_catalog.=) 31 AND mo OPERATOR(pg_catalog.=) ANY ('{4,6,9,11}'::integer[])) THEN
                    EXIT one;
                END IF;
            END IF;
            h := 0;
            mi := 0;
            s := 0;
            fraction := 0;
            rest := '';
            IF pg_catalog.length(str) OPERATOR(pg_catalog.>) 10 THEN
                h := pg_catalog.substr(str, 12, 2)::integer;
                mi := pg_catalog.substr(str, 15, 2)::integer;
                rest := pg_catalog.substr(str, 17);
                IF pg_catalog.left(rest, 1) OPERATOR(pg_catalog.=) ':' THEN
                    s := pg_catalog.substr(rest, 2, 2)::integer;
                    rest := pg_catalog.substr(rest, 4);
                    IF pg_catalog.left(rest, 1) OPERATOR(pg_catalog.=) ANY ('{.,","}'::text[]) THEN
                        rest := pg_catalog.substr(rest, 2);
                        digits := pg_catalog.length(rest) OPERATOR(pg_catalog.-) pg_catalog.length(pg_catalog.ltrim(rest, '0123456789'));
                        -- a fraction of a second in microseconds, rounded half up
                        fraction := pg_catalog.rpad(pg_catalog.left(rest, LEAST(digits, 6)), 6, '0')::integer;
                        IF digits OPERATOR(pg_catalog.>) 6 AND pg_catalog.substr(rest, 7, 1) OPERATOR(pg_catalog.>=) '5' THEN
                            fraction := fraction OPERATOR(pg_catalog.+) 1;
                        END IF;
                        rest := pg_catalog.substr(rest, digits OPERATOR(pg_catalog.+) 1);
                    END IF;
                END IF;
                IF h OPERATOR(pg_catalog.>) 23 OR mi OPERATOR(pg_catalog.>) 59 OR s OPERATOR(pg_catalog.>) 59 THEN
                    EXIT one;
                END IF;
            END IF;
            wall := pg_catalog.make_timestamp(CASE WHEN y OPERATOR(pg_catalog.=) 0 THEN -1 ELSE y END, mo, d, h, mi, s);
            IF fraction OPERATOR(pg_catalog.>) 0 THEN
                wall := wall OPERATOR(pg_catalog.+) ('1 microsecond'::pg_catalog.interval OPERATOR(pg_catalog.*) fraction);
            END IF;
            IF rest OPERATOR(pg_catalog.=) '' THEN
                found := pg_catalog.timezone(coalesce(time_zone, 'UTC'), wall);
                EXIT one;
            ELSIF rest OPERATOR(pg_catalog.=) ANY ('{Z,z}'::text[]) THEN
                found := pg_catalog.timezone('UTC', wall);
                EXIT one;
            END IF;
            -- ±HH, ±HHMM or ±HH:MM; local time = UTC + offset, so UTC = local − offset
            oh := pg_catalog.substr(rest, 2, 2)::integer;
            om := CASE WHEN pg_catalog.length(rest) OPERATOR(pg_catalog.=) 3 THEN 0 ELSE pg_catalog.right(rest, 2)::integer END;
            IF oh OPERATOR(pg_catalog.>) 23 OR om OPERATOR(pg_catalog.>) 59 THEN
                EXIT one;
            END IF;
            found := pg_catalog.timezone('UTC', wall OPERATOR(pg_catalog.-) pg_catalog.make_interval(
                mins => CASE pg_catalog.left(rest, 1) WHEN '+' THEN 1 ELSE -1 END OPERATOR(pg_catalog.*)
                        (oh OPERATOR(pg_catalog.*) 60 OPERATOR(pg_catalog.+) om)));
        END;
        IF found OPERATOR(pg_catalog.<) earliest OR earliest IS NULL THEN
            earliest := found;
        END IF;
    END LOOP;
    RETURN earliest;
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
RETURN jsonb_ttl_internal._ttl_json_time(value, 's', NULL);

CREATE FUNCTION jsonb_ttl.ttl_timestamp(value jsonb, numeric_unit text)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN jsonb_ttl_internal._ttl_json_time(value, jsonb_ttl_internal._ttl_check_unit(numeric_unit), NULL);

CREATE FUNCTION jsonb_ttl.ttl_timestamp(value jsonb, numeric_unit text, time_zone text)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN jsonb_ttl_internal._ttl_json_time(value, jsonb_ttl_internal._ttl_check_unit(numeric_unit),
                                             jsonb_ttl_internal._ttl_check_zone(time_zone));

CREATE FUNCTION jsonb_ttl.ttl_is_datestring(value text)
RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN jsonb_ttl_internal._ttl_json_time(pg_catalog.to_jsonb(value), 's', NULL) IS NOT NULL;

CREATE FUNCTION jsonb_ttl_internal.ttl_text_timestamp(value text)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN jsonb_ttl_internal._ttl_json_time(pg_catalog.to_jsonb(value), 's', NULL);

CREATE FUNCTION jsonb_ttl_internal.ttl_text_timestamp(value text, time_zone text)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN jsonb_ttl_internal._ttl_json_time(pg_catalog.to_jsonb(value), 's', jsonb_ttl_internal._ttl_check_zone(time_zone));

CREATE FUNCTION jsonb_ttl_internal.ttl_unix_timestamp(value numeric, numeric_unit text)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN jsonb_ttl_internal._ttl_json_time(pg_catalog.to_jsonb(value), jsonb_ttl_internal._ttl_check_unit(numeric_unit), NULL);

-- Per-row TTL (core/src/row_ttl.rs): the seconds a row's field holds, -1 for never, NULL to fall
-- back to expire_after. A finite number >= 0 or exactly -1 counts; anything else falls back.
CREATE FUNCTION jsonb_ttl_internal.ttl_row_seconds(value numeric)
RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN CASE WHEN value::text OPERATOR(pg_catalog.=) ANY ('{NaN,Infinity,-Infinity}'::text[]) THEN NULL
                WHEN value OPERATOR(pg_catalog.>=) 0 AND value OPERATOR(pg_catalog.<) 1e308 THEN value::double precision
                WHEN value OPERATOR(pg_catalog.=) -1 THEN -1::double precision
           END;

CREATE FUNCTION jsonb_ttl_internal.ttl_row_seconds(value jsonb)
RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN CASE WHEN pg_catalog.jsonb_typeof(value) OPERATOR(pg_catalog.=) 'number'
                THEN jsonb_ttl_internal.ttl_row_seconds((value OPERATOR(pg_catalog.#>>) '{}')::numeric) END;

-- When a row with a TTL of its own expires: its reference time plus that many seconds, added
-- as microseconds (timestamptz + interval is only STABLE); NULL for never. In Unix-epoch
-- microseconds here, as a timestamptz by ttl_expires_at.
CREATE FUNCTION jsonb_ttl_internal._ttl_expiry_micros(reference timestamptz, seconds double precision)
RETURNS numeric
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
    RETURN pg_catalog.round(micros);
END
$$;

CREATE FUNCTION jsonb_ttl_internal.ttl_expires_at(reference timestamptz, seconds double precision)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN jsonb_ttl_internal._ttl_micros_instant(jsonb_ttl_internal._ttl_expiry_micros(reference, seconds));
