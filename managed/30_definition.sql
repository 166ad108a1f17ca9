-- A TTL index's definition: its path resolved to a column, the SQL of its reference time, and
-- the parts every statement is built from (the ones that build the indexes, the purge's, the
-- brake's and the preview's alike), as src/reference.rs and core/src/path.rs write them.

-- Argument errors: SQLSTATE and HINT, as the Rust edition raises them.
CREATE FUNCTION jsonb_ttl_internal._ttl_error(sqlstate text, message text, hint text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = sqlstate, MESSAGE = message, HINT = hint;
END
$$;

-- A table a TTL index may be made on by the caller: it exists, is a plain table, and the caller
-- has the privileges of its owner (what CREATE INDEX asks).
CREATE FUNCTION jsonb_ttl_internal._ttl_check_table(tbl regclass)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rel record;
BEGIN
    IF tbl IS NULL THEN
        PERFORM jsonb_ttl_internal._ttl_error('22004', 'tbl must not be NULL',
            'Name a table, as in ''public.events'' (to_regclass() gives NULL for one that does not exist).');
    END IF;
    SELECT c.relkind, c.relowner INTO rel FROM pg_catalog.pg_class c
    WHERE c.oid OPERATOR(pg_catalog.=) tbl::pg_catalog.oid;
    IF NOT FOUND THEN
        PERFORM jsonb_ttl_internal._ttl_error('42P01', pg_catalog.format('relation with OID %s does not exist', tbl::pg_catalog.oid),
            'Name an existing table.');
    END IF;
    IF rel.relkind OPERATOR(pg_catalog.=) 'p' THEN
        PERFORM jsonb_ttl_internal._ttl_error('0A000', pg_catalog.format('%s is a partitioned table', tbl),
            'The SQL edition of jsonb_ttl purges plain tables only; give each partition its own TTL index, or use the Rust edition (managed/README.md).');
    END IF;
    IF rel.relkind OPERATOR(pg_catalog.<>) 'r' THEN
        PERFORM jsonb_ttl_internal._ttl_error('42809', pg_catalog.format('%s is not a table', tbl),
            'A TTL index is made on a table.');
    END IF;
    IF NOT pg_catalog.pg_has_role(CURRENT_USER, rel.relowner, 'USAGE') THEN
        PERFORM jsonb_ttl_internal._ttl_error('42501', pg_catalog.format('must be owner of table %s', tbl),
            'Only the table''s owner (or a member of the owning role) may change its TTL index.');
    END IF;
END
$$;

-- Splits a dotted path into its segments; a segment holding a dot or a quote is written in
-- double quotes, with "" for a quote inside: doc."a.b".c (core/src/path.rs).
CREATE FUNCTION jsonb_ttl_internal._ttl_split_path(path text)
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    hint constant text := 'Separate segments with dots; write a segment that holds a dot in double quotes, as in doc."a.b".c.';
    segments text[] := '{}';
    segment text;
    i integer := 1;
    n integer := pg_catalog.length(path);
    c text;
BEGIN
    IF path IS NULL OR path OPERATOR(pg_catalog.=) '' THEN
        PERFORM jsonb_ttl_internal._ttl_error('22023', 'path must not be empty', hint);
    END IF;
    LOOP
        segment := '';
        IF pg_catalog.substr(path, i, 1) OPERATOR(pg_catalog.=) '"' THEN
            i := i OPERATOR(pg_catalog.+) 1;
            LOOP
                IF i OPERATOR(pg_catalog.>) n THEN
                    PERFORM jsonb_ttl_internal._ttl_error('22023', 'unterminated quoted segment in path: ' OPERATOR(pg_catalog.||) path, hint);
                END IF;
                c := pg_catalog.substr(path, i, 1);
                i := i OPERATOR(pg_catalog.+) 1;
                IF c OPERATOR(pg_catalog.=) '"' THEN
                    IF pg_catalog.substr(path, i, 1) OPERATOR(pg_catalog.=) '"' THEN
                        segment := segment OPERATOR(pg_catalog.||) '"';
                        i := i OPERATOR(pg_catalog.+) 1;
                    ELSE
                        EXIT;
                    END IF;
                ELSE
                    segment := segment OPERATOR(pg_catalog.||) c;
                END IF;
            END LOOP;
            IF i OPERATOR(pg_catalog.<=) n AND pg_catalog.substr(path, i, 1) OPERATOR(pg_catalog.<>) '.' THEN
                PERFORM jsonb_ttl_internal._ttl_error('22023', 'unexpected character after a quoted segment in path: ' OPERATOR(pg_catalog.||) path, hint);
            END IF;
        ELSE
            WHILE i OPERATOR(pg_catalog.<=) n AND pg_catalog.substr(path, i, 1) OPERATOR(pg_catalog.<>) '.' LOOP
                IF pg_catalog.substr(path, i, 1) OPERATOR(pg_catalog.=) '"' THEN
                    PERFORM jsonb_ttl_internal._ttl_error('22023', 'unexpected double quote inside a segment of path: ' OPERATOR(pg_catalog.||) path, hint);
                END IF;
                segment := segment OPERATOR(pg_catalog.||) pg_catalog.substr(path, i, 1);
                i := i OPERATOR(pg_catalog.+) 1;
            END LOOP;
        END IF;
        IF segment OPERATOR(pg_catalog.=) '' THEN
            PERFORM jsonb_ttl_internal._ttl_error('22023', 'empty segment in path: ' OPERATOR(pg_catalog.||) path, hint);
        END IF;
        segments := segments OPERATOR(pg_catalog.||) segment;
        IF i OPERATOR(pg_catalog.>) n THEN
            RETURN segments;
        END IF;
        i := i OPERATOR(pg_catalog.+) 1;  -- the dot
        IF i OPERATOR(pg_catalog.>) n THEN
            PERFORM jsonb_ttl_internal._ttl_error('22023', 'empty segment in path: ' OPERATOR(pg_catalog.||) path, hint);
        END IF;
    END LOOP;
END
$$;

-- What a column can be to a TTL index (core/src/path.rs ColumnKind).
CREATE FUNCTION jsonb_ttl_internal._ttl_column_kind(type_oid oid)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE type_oid
        WHEN 'pg_catalog.jsonb'::pg_catalog.regtype THEN 'jsonb'
        WHEN 'pg_catalog.json'::pg_catalog.regtype THEN 'json'
        WHEN 'pg_catalog.text'::pg_catalog.regtype THEN 'text'
        WHEN 'pg_catalog.varchar'::pg_catalog.regtype THEN 'text'
        WHEN 'pg_catalog.bpchar'::pg_catalog.regtype THEN 'text'
        WHEN 'pg_catalog.timestamptz'::pg_catalog.regtype THEN 'timestamptz'
        WHEN 'pg_catalog.timestamp'::pg_catalog.regtype THEN 'timestamp'
        WHEN 'pg_catalog.date'::pg_catalog.regtype THEN 'date'
        WHEN 'pg_catalog.int2'::pg_catalog.regtype THEN 'number'
        WHEN 'pg_catalog.int4'::pg_catalog.regtype THEN 'number'
        WHEN 'pg_catalog.int8'::pg_catalog.regtype THEN 'number'
        WHEN 'pg_catalog.numeric'::pg_catalog.regtype THEN 'number'
        WHEN 'pg_catalog.float4'::pg_catalog.regtype THEN 'number'
        WHEN 'pg_catalog.float8'::pg_catalog.regtype THEN 'number'
        ELSE 'other' END
$$;

-- Resolves a path against the table's columns (core/src/path.rs resolve): its first segment may
-- name a column (a jsonb or json column, followed by a path inside it, or a plain column alone);
-- otherwise the table must have exactly one jsonb column, and the whole path is inside it.
CREATE FUNCTION jsonb_ttl_internal._ttl_resolve(tbl regclass, path text,
                                                OUT attnum smallint, OUT kind text, OUT json_path text[])
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    segments text[] := jsonb_ttl_internal._ttl_split_path(path);
    col record;
    jsonb_columns smallint[];
    wrong_type constant text := 'Use a jsonb or json column (with a path inside it), or a timestamptz, timestamp, date, numeric or text column.';
BEGIN
    SELECT a.attnum, a.attname, a.atttypid, pg_catalog.format_type(a.atttypid, NULL) AS type_name INTO col
    FROM pg_catalog.pg_attribute a
    WHERE a.attrelid OPERATOR(pg_catalog.=) tbl::pg_catalog.oid AND a.attnum OPERATOR(pg_catalog.>) 0
      AND NOT a.attisdropped AND a.attname OPERATOR(pg_catalog.=) segments[1];
    IF FOUND THEN
        attnum := col.attnum;
        kind := jsonb_ttl_internal._ttl_column_kind(col.atttypid);
        json_path := segments[2:];
        IF kind OPERATOR(pg_catalog.=) 'other' THEN
            PERFORM jsonb_ttl_internal._ttl_error('42804',
                pg_catalog.format('column "%s" has type %s, which cannot hold a point in time', col.attname, col.type_name), wrong_type);
        END IF;
        IF kind OPERATOR(pg_catalog.<>) ALL (ARRAY['jsonb', 'json'])
           AND pg_catalog.cardinality(json_path) OPERATOR(pg_catalog.>) 0 THEN
            PERFORM jsonb_ttl_internal._ttl_error('42804',
                pg_catalog.format('column "%s" has type %s; nothing can follow it in the path', col.attname, col.type_name),
                'Only a jsonb or json column can be followed by a path inside it.');
        END IF;
        RETURN;
    END IF;
    jsonb_columns := ARRAY(SELECT a.attnum FROM pg_catalog.pg_attribute a
                           WHERE a.attrelid OPERATOR(pg_catalog.=) tbl::pg_catalog.oid AND a.attnum OPERATOR(pg_catalog.>) 0
                             AND NOT a.attisdropped AND a.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.jsonb'::pg_catalog.regtype
                           ORDER BY a.attnum);
    IF pg_catalog.cardinality(jsonb_columns) OPERATOR(pg_catalog.=) 1 THEN
        attnum := jsonb_columns[1];
        kind := 'jsonb';
        json_path := segments;
    ELSIF pg_catalog.cardinality(jsonb_columns) OPERATOR(pg_catalog.=) 0 THEN
        PERFORM jsonb_ttl_internal._ttl_error('42703',
            pg_catalog.format('"%s" is not a column of the table, and the table has no jsonb column', segments[1]),
            'Name a json, timestamptz, timestamp, date, numeric or text column, or add a jsonb column.');
    ELSE
        PERFORM jsonb_ttl_internal._ttl_error('42702',
            pg_catalog.format('"%s" is not a column of the table, and the table has several jsonb columns', segments[1]),
            'Start the path with the jsonb column to look in, as in doc.creationDate.');
    END IF;
END
$$;

-- The jsonb value at a json or jsonb column's path: ((doc OPERATOR(pg_catalog.->) 'a'::pg_catalog.text) …)
CREATE FUNCTION jsonb_ttl_internal._ttl_json_value_sql(column_name name, kind text, json_path text[])
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    value text := CASE kind WHEN 'json' THEN pg_catalog.format('(%I)::pg_catalog.jsonb', column_name)
                            ELSE pg_catalog.format('%I', column_name) END;
    key text;
BEGIN
    FOREACH key IN ARRAY json_path LOOP
        value := pg_catalog.format('(%s OPERATOR(pg_catalog.->) %L::pg_catalog.text)', value, key);
    END LOOP;
    RETURN value;
END
$$;

-- The SQL of a row's reference time (src/reference.rs reference_expr), qualified down to its
-- operators and casts so that it means the same under any search_path.
CREATE FUNCTION jsonb_ttl_internal._ttl_reference_sql(column_name name, kind text, json_path text[],
                                                      numeric_unit text, time_zone text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    col text := pg_catalog.format('%I', column_name);
    zone text := pg_catalog.quote_literal(coalesce(time_zone, 'UTC'));
    value text;
BEGIN
    IF column_name IS NULL THEN
        PERFORM jsonb_ttl_internal._ttl_error('42703', 'the column of the TTL index no longer exists',
            'Drop the TTL index (ttl_index_drop) and create it again.');
    END IF;
    CASE kind
    WHEN 'jsonb', 'json' THEN
        value := jsonb_ttl_internal._ttl_json_value_sql(column_name, kind, json_path);
        IF time_zone IS NOT NULL THEN
            RETURN pg_catalog.format('jsonb_ttl.ttl_timestamp(%s, %L::pg_catalog.text, %s::pg_catalog.text)', value, numeric_unit, zone);
        ELSIF numeric_unit OPERATOR(pg_catalog.=) 'ms' THEN
            RETURN pg_catalog.format('jsonb_ttl.ttl_timestamp(%s, ''ms''::pg_catalog.text)', value);
        END IF;
        RETURN pg_catalog.format('jsonb_ttl.ttl_timestamp(%s)', value);
    WHEN 'text' THEN
        IF time_zone IS NOT NULL THEN
            RETURN pg_catalog.format('jsonb_ttl_internal.ttl_text_timestamp((%s)::pg_catalog.text, %s::pg_catalog.text)', col, zone);
        END IF;
        RETURN pg_catalog.format('jsonb_ttl_internal.ttl_text_timestamp((%s)::pg_catalog.text)', col);
    WHEN 'timestamptz' THEN
        RETURN col;
    WHEN 'timestamp' THEN
        RETURN pg_catalog.format('(%s AT TIME ZONE %s::pg_catalog.text)', col, zone);
    WHEN 'date' THEN
        RETURN pg_catalog.format('((%s)::pg_catalog.timestamp AT TIME ZONE %s::pg_catalog.text)', col, zone);
    WHEN 'number' THEN
        RETURN pg_catalog.format('jsonb_ttl_internal.ttl_unix_timestamp((%s)::pg_catalog.numeric, %L::pg_catalog.text)', col, numeric_unit);
    ELSE
        PERFORM jsonb_ttl_internal._ttl_error('42804',
            pg_catalog.format('column %s can no longer hold a point in time', col), 'Drop the TTL index and create it again.');
    END CASE;
    RETURN NULL;
END
$$;

-- The SQL of a row's own TTL in seconds (per-row TTL): NULL falls back to expire_after.
CREATE FUNCTION jsonb_ttl_internal._ttl_row_seconds_sql(column_name name, kind text, json_path text[])
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN kind OPERATOR(pg_catalog.=) ANY (ARRAY['jsonb', 'json'])
                THEN pg_catalog.format('jsonb_ttl_internal.ttl_row_seconds(%s)',
                                       jsonb_ttl_internal._ttl_json_value_sql(column_name, kind, json_path))
                ELSE pg_catalog.format('jsonb_ttl_internal.ttl_row_seconds((%I)::pg_catalog.numeric)', column_name) END
$$;

-- The parts of a TTL index, each what its statements are built from: the key its index is on,
-- the index's predicate, the rest of that predicate once the key is known to be before a cutoff
-- (what a DELETE checks again on the row version it deletes: "key < cutoff" already says that
-- the key is not NULL), and the expire_after its cutoff is now() less. Without a per-row TTL,
-- one part; with one, two (docs/row_ttl.md): the rows that fall back to expire_after, keyed on
-- the reference time, and the rows with a TTL of their own, keyed on their expiry (cutoff now()).
CREATE FUNCTION jsonb_ttl_internal._ttl_parts(tbl regclass)
RETURNS TABLE (part text, key_sql text, predicate_sql text, recheck_sql text, reference_sql text,
               expire_after interval, index_oid oid)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t jsonb_ttl_internal.ttl_index;
    reference text;
    seconds text;
    expiry text;
    filter_sql text;
BEGIN
    SELECT * INTO t FROM jsonb_ttl_internal.ttl_index x WHERE x.table_oid OPERATOR(pg_catalog.=) tbl;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    reference := jsonb_ttl_internal._ttl_reference_sql(jsonb_ttl_internal._ttl_column(tbl::pg_catalog.oid, t.column_attnum),
                                                       t.column_kind, t.json_path, t.numeric_unit, t.time_zone);
    filter_sql := CASE WHEN t.filter IS NOT NULL THEN ' AND (' OPERATOR(pg_catalog.||) t.filter OPERATOR(pg_catalog.||) ')' ELSE '' END;
    IF t.row_ttl_path IS NULL THEN
        RETURN QUERY SELECT 'expire_after'::pg_catalog.text, reference,
                            reference OPERATOR(pg_catalog.||) ' IS NOT NULL' OPERATOR(pg_catalog.||) filter_sql,
                            'true' OPERATOR(pg_catalog.||) filter_sql,
                            reference, t.expire_after, t.index_oid;
        RETURN;
    END IF;
    seconds := jsonb_ttl_internal._ttl_row_seconds_sql(jsonb_ttl_internal._ttl_column(tbl::pg_catalog.oid, t.row_ttl_attnum),
                                                       t.row_ttl_kind, t.row_ttl_json_path);
    expiry := pg_catalog.format('jsonb_ttl_internal.ttl_expires_at(%s, %s)', reference, seconds);
    RETURN QUERY SELECT 'expire_after'::pg_catalog.text, reference,
                        pg_catalog.format('%s IS NOT NULL AND %s IS NULL', reference, seconds) OPERATOR(pg_catalog.||) filter_sql,
                        pg_catalog.format('%s IS NULL', seconds) OPERATOR(pg_catalog.||) filter_sql,
                        reference, t.expire_after, t.index_oid;
    RETURN QUERY SELECT 'row_ttl'::pg_catalog.text, expiry,
                        expiry OPERATOR(pg_catalog.||) ' IS NOT NULL' OPERATOR(pg_catalog.||) filter_sql,
                        'true' OPERATOR(pg_catalog.||) filter_sql,
                        reference, '0'::pg_catalog.interval, t.row_ttl_index_oid;
END
$$;

-- The cutoff of a part: now() less expire_after, in UTC days (timestamptz - interval would
-- read days and months in the session's TimeZone).
CREATE FUNCTION jsonb_ttl_internal._ttl_cutoff(at timestamptz, expire_after interval)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.timezone('UTC', pg_catalog.timezone('UTC', at) OPERATOR(pg_catalog.-) expire_after) $$;

-- How many rows of a part are expired at a time (up to a limit, through its index), and the
-- oldest and newest reference times among them. Runs as its caller.
CREATE FUNCTION jsonb_ttl_internal._ttl_count_expired(tbl regclass, part text, at timestamptz, max_rows bigint,
                                                      OUT rows bigint, OUT oldest timestamptz, OUT newest timestamptz)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p record;
BEGIN
    SELECT * INTO p FROM jsonb_ttl_internal._ttl_parts(tbl) x WHERE x.part OPERATOR(pg_catalog.=) _ttl_count_expired.part;
    IF NOT FOUND THEN
        rows := 0;
        RETURN;
    END IF;
    EXECUTE pg_catalog.format(
        'SELECT pg_catalog.count(*), pg_catalog.min(r), pg_catalog.max(r) FROM (SELECT %s AS r FROM %s WHERE %s OPERATOR(pg_catalog.<) $1 AND %s ORDER BY %s LIMIT $2) s',
        p.reference_sql, tbl, p.key_sql, p.predicate_sql, p.key_sql)
    INTO rows, oldest, newest
    USING jsonb_ttl_internal._ttl_cutoff(at, p.expire_after), max_rows;
END
$$;

-- The planner's estimate of a table's rows (what the brake compares with, as the Rust edition).
CREATE FUNCTION jsonb_ttl_internal._ttl_table_rows(tbl regclass)
RETURNS double precision
LANGUAGE plpgsql VOLATILE  -- (EXPLAIN is refused in a STABLE function)
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE pg_catalog.format('EXPLAIN (FORMAT JSON) SELECT FROM %s', tbl) INTO plan;
    RETURN (plan OPERATOR(pg_catalog.#>>) '{0,Plan,Plan Rows}')::double precision;
END
$$;

-- A setting of the brake: jsonb_ttl.<name> when set in the session (or for the role or the
-- database), else the Rust edition's default.
CREATE FUNCTION jsonb_ttl_internal._ttl_setting(name text, fallback text)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT coalesce(NULLIF(pg_catalog.current_setting('jsonb_ttl.' OPERATOR(pg_catalog.||) name, true), ''), fallback) $$;
