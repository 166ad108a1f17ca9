-- The SQL edition's parser against the Rust edition's, case by case.
--   psql -f tests/managed/conformance.sql < FILE
-- FILE (on standard input): the lines of tests/managed/cases.py with the Rust parser's answer appended
-- (tests/managed/cases): kind, unit, hex(the Rust side's input), hex(the SQL side's input),
-- expected (PostgreSQL-epoch microseconds, t/f, a float, or NULL).
-- Prints "N equal of N run" and fails (ON_ERROR_STOP) on any difference.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET TimeZone = 'Pacific/Chatham';   -- an odd zone: no answer may depend on the session's
SET DateStyle = 'SQL, DMY';
CREATE TEMP TABLE conformance_case (kind text, unit text, rust_hex text, sql_hex text, expected text);
\copy conformance_case FROM pstdin

-- the text of a case, or NULL when PostgreSQL's text cannot hold it (a NUL)
CREATE FUNCTION pg_temp.text_of(hex text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RETURN convert_from(decode(hex, 'hex'), 'UTF8');
EXCEPTION WHEN others THEN
    RETURN NULL;
END $$;
CREATE FUNCTION pg_temp.jsonb_of(t text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    RETURN t::jsonb;
EXCEPTION WHEN others THEN
    RETURN NULL;
END $$;
CREATE FUNCTION pg_temp.numeric_of(t text) RETURNS numeric LANGUAGE plpgsql AS $$
BEGIN
    RETURN t::numeric;
EXCEPTION WHEN others THEN
    RETURN NULL;
END $$;
-- a timestamptz as the Rust parser answers: PostgreSQL-epoch microseconds
CREATE FUNCTION pg_temp.micros(t timestamptz) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce((extract(epoch FROM t) * 1000000 - 946684800000000)::bigint::text, 'NULL')
$$;

CREATE TEMP TABLE conformance_result AS
SELECT c.*, i.input,
       CASE WHEN i.input IS NULL THEN NULL  -- not representable: not run
            WHEN c.kind = 'date' THEN pg_temp.micros(jsonb_ttl_internal.ttl_text_timestamp(i.input))
            WHEN c.kind = 'datestring' THEN CASE jsonb_ttl.ttl_is_datestring(i.input) WHEN true THEN 't' ELSE 'f' END
            WHEN c.kind = 'number' THEN pg_temp.micros(jsonb_ttl_internal._ttl_micros_instant(
                                            jsonb_ttl_internal._ttl_number_micros(i.input, c.unit)))
            WHEN c.kind = 'jnumber' THEN CASE WHEN pg_temp.jsonb_of(i.input) IS NOT NULL
                                              THEN pg_temp.micros(jsonb_ttl.ttl_timestamp(pg_temp.jsonb_of(i.input), c.unit)) END
            WHEN c.kind = 'long' THEN pg_temp.micros(jsonb_ttl.ttl_timestamp(
                                          jsonb_build_object('$date', jsonb_build_object('$numberLong', i.input))))
            WHEN c.kind = 'rowsec' THEN coalesce(jsonb_ttl_internal.ttl_row_seconds(pg_temp.numeric_of(i.input))::text, 'NULL')
       END AS got,
       -- a second way to the same answer: a date string as a jsonb string; a JSON number as a
       -- numeric column's value (jsonb_ttl_internal.ttl_unix_timestamp)
       CASE WHEN c.kind = 'date' AND i.input IS NOT NULL
            THEN pg_temp.micros(jsonb_ttl.ttl_timestamp(to_jsonb(i.input)))
            WHEN c.kind = 'jnumber' AND pg_temp.jsonb_of(i.input) IS NOT NULL
            THEN pg_temp.micros(jsonb_ttl_internal.ttl_unix_timestamp(pg_temp.numeric_of(i.input), c.unit)) END AS got_jsonb
FROM conformance_case c
CROSS JOIN LATERAL (SELECT pg_temp.text_of(c.sql_hex) AS input) i;

-- rowsec answers are floats: compare them as floats
SELECT kind, unit, input, expected, got, got_jsonb
FROM conformance_result
WHERE got IS NOT NULL
  AND (CASE WHEN kind = 'rowsec' AND expected <> 'NULL' AND got <> 'NULL'
            THEN expected::float8 <> got::float8
            ELSE expected <> got END
       OR got_jsonb <> expected)
ORDER BY kind, input
LIMIT 30;

SELECT count(*) FILTER (WHERE got IS NOT NULL
                          AND CASE WHEN kind = 'rowsec' AND expected <> 'NULL' AND got <> 'NULL'
                                   THEN expected::float8 = got::float8 ELSE expected = got END
                          AND (got_jsonb IS NULL OR got_jsonb = expected)) AS equal,
       count(*) FILTER (WHERE got IS NOT NULL) AS run,
       count(*) FILTER (WHERE got IS NULL) AS not_run,
       count(*) FILTER (WHERE got IS NOT NULL AND expected <> 'NULL') AS run_with_a_time
FROM conformance_result \gset
\echo conformance: :equal equal of :run run (:not_run not representable in PostgreSQL text or jsonb; :run_with_a_time of the run answer a point in time)
SELECT (:equal = :run AND :run > 0) AS conformance_ok \gset
\if :conformance_ok
\else
\echo conformance: FAILED
SELECT 1/0 AS conformance_failed;
\endif
