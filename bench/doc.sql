-- The documents of make bench: ~200 bytes with an ISO-8601 creationDate (bench/setup.sql,
-- bench/citus.sh).
CREATE FUNCTION bench_doc(g bigint, at timestamptz) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object(
    'creationDate', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'user', 'user-' || (g % 1000),
    'session', md5(g::text),
    'payload', repeat('x', 60),
    'n', g)
$$;
