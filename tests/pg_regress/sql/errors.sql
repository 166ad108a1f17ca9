-- Every bad argument is a clear error with a SQLSTATE and a HINT, and no CONTEXT line (the
-- frames of the SQL and PL/pgSQL wrappers say nothing about the argument), and creates or
-- changes nothing.
-- attempt(statement) runs one statement and reports how it failed; its context is the error's
-- CONTEXT less attempt()'s own frame (its EXECUTE of the statement), empty for every argument error.
CREATE FUNCTION attempt(statement text, OUT code text, OUT message text, OUT hint text,
                        OUT context text)
LANGUAGE plpgsql AS $$
DECLARE
    frames text;
BEGIN
    EXECUTE statement;
    code := '00000';
    message := 'succeeded';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
                            hint = PG_EXCEPTION_HINT, frames = PG_EXCEPTION_CONTEXT;
    SELECT string_agg(frame, E'\n') INTO context
    FROM regexp_split_to_table(frames, E'\n') AS frame
    WHERE frame !~ '^PL/pgSQL function attempt\(text\) line \d+ at EXECUTE$'
      AND frame <> format('SQL statement "%s"', statement);
END
$$;

CREATE TABLE docs (id int, doc jsonb);
CREATE VIEW docs_view AS SELECT * FROM docs;
CREATE MATERIALIZED VIEW docs_mv AS SELECT * FROM docs;
CREATE SEQUENCE docs_seq;
CREATE INDEX docs_idx ON docs (id);
CREATE FOREIGN DATA WRAPPER ttl_dummy_fdw;
CREATE SERVER ttl_dummy_server FOREIGN DATA WRAPPER ttl_dummy_fdw;
CREATE FOREIGN TABLE docs_foreign (doc jsonb) SERVER ttl_dummy_server;
CREATE TEMPORARY TABLE docs_temp (doc jsonb);
CREATE TABLE docs_partitioned (id int, doc jsonb) PARTITION BY RANGE (id);
CREATE TABLE two_jsonb (a jsonb, b jsonb);
CREATE TABLE no_jsonb (id int, note text, flag boolean);

\x on
SELECT c.statement, a.*
FROM (VALUES
  -- the table
  ($$SELECT ttl_index_create('no_such_table', 'ts', interval '1 day')$$),
  ($$SELECT ttl_index_create(NULL, 'ts', interval '1 day')$$),
  ($$SELECT ttl_index_create('docs_view', 'ts', interval '1 day')$$),
  ($$SELECT ttl_index_create('docs_mv', 'ts', interval '1 day')$$),
  ($$SELECT ttl_index_create('docs_seq', 'ts', interval '1 day')$$),
  ($$SELECT ttl_index_create('docs_idx', 'ts', interval '1 day')$$),
  ($$SELECT ttl_index_create('docs_foreign', 'ts', interval '1 day')$$),
  ($$SELECT ttl_index_create('docs_temp', 'ts', interval '1 day')$$),
  -- the path
  ($$SELECT ttl_index_create('docs', NULL, interval '1 day')$$),
  ($$SELECT ttl_index_create('docs', '', interval '1 day')$$),
  ($$SELECT ttl_index_create('docs', 'doc..ts', interval '1 day')$$),
  ($$SELECT ttl_index_create('docs', 'doc."ts', interval '1 day')$$),
  ($$SELECT ttl_index_create('docs', 'id.x', interval '1 day')$$),
  ($$SELECT ttl_index_create('no_jsonb', 'flag', interval '1 day')$$),
  ($$SELECT ttl_index_create('no_jsonb', 'creationDate', interval '1 day')$$),
  ($$SELECT ttl_index_create('two_jsonb', 'creationDate', interval '1 day')$$),
  -- expire_after
  ($$SELECT ttl_index_create('docs', 'ts', NULL::interval)$$),
  ($$SELECT ttl_index_create('docs', 'ts', NULL::numeric)$$),
  ($$SELECT ttl_index_create('docs', 'ts', interval '-1 second')$$),
  ($$SELECT ttl_index_create('docs', 'ts', interval '1 month -31 days')$$),
  ($$SELECT ttl_index_create('docs', 'ts', -1)$$),
  ($$SELECT ttl_index_create('docs', 'ts', 'NaN'::numeric)$$),
  ($$SELECT ttl_index_create('docs', 'ts', 'Infinity'::numeric)$$),
  ($$SELECT ttl_index_create('docs', 'ts', 1e300)$$),
  ($$SELECT ttl_index_create('docs', 'ts', '10 minuts')$$),
  ($$SELECT ttl_index_create('docs', 'ts', 'soon'::text)$$),
  -- numeric_unit
  ($$SELECT ttl_index_create('docs', 'ts', interval '1 day', 'seconds')$$),
  ($$SELECT ttl_index_create('docs', 'ts', interval '1 day', NULL)$$),
  -- alter, drop and expire where there is no TTL index
  ($$SELECT ttl_index_alter('docs')$$),
  ($$SELECT ttl_index_alter('docs', '10 minuts')$$),
  ($$SELECT ttl_index_alter('docs', interval '1 day')$$),
  ($$SELECT ttl_field_create('docs', 'otp.at', '10 minuts')$$),
  ($$SELECT ttl_field_alter('docs', 'otp.at', '10 minuts')$$),
  ($$SELECT ttl_index_drop('docs')$$),
  ($$SELECT ttl_expire_now('docs')$$),
  ($$SELECT ttl_expire_now(NULL, -1)$$)
) AS c(statement), LATERAL attempt(c.statement) AS a;

-- a second TTL index with another spec
SELECT index_name FROM ttl_index_create('docs', 'ts', interval '1 day');
SELECT * FROM attempt($$SELECT ttl_index_create('docs', 'ts', interval '2 days')$$);
SELECT * FROM attempt($$SELECT ttl_index_create('docs', 'other', interval '1 day')$$);
SELECT * FROM attempt($$SELECT ttl_index_create('docs', 'ts', interval '1 day', 'ms')$$);
\x off

-- what psql shows of a typo in expire_after, and of an alter that changes nothing: the error and
-- its HINT, no CONTEXT line (before 0.4.0 they named the wrappers: "PL/pgSQL function
-- jsonb_ttl_internal._ttl_interval(text) line 5 at RAISE", "SQL function "ttl_index_create"
-- statement 1")
\set SHOW_CONTEXT always
SELECT ttl_index_create('docs', 'ts', '10 minuts');
SELECT ttl_index_alter('docs', '10 minuts');
SELECT ttl_index_alter('docs');
\set SHOW_CONTEXT errors
SELECT ttl_index_drop('docs');

-- nothing was created by the failed calls
SELECT count(*) AS catalog_rows FROM jsonb_ttl_internal.ttl_index;
SELECT indexname FROM pg_indexes WHERE tablename IN ('docs', 'no_jsonb', 'two_jsonb');

-- only the owner of a table manages its TTL index
CREATE ROLE regress_ttl_owner;
CREATE ROLE regress_ttl_other;
GRANT CREATE ON SCHEMA public TO regress_ttl_owner;   -- CREATE INDEX needs it
CREATE TABLE owned (doc jsonb);
ALTER TABLE owned OWNER TO regress_ttl_owner;
SET ROLE regress_ttl_other;
\x on
SELECT c.statement, a.*
FROM (VALUES
  ($$SELECT ttl_index_create('owned', 'ts', interval '1 day')$$),
  ($$SELECT ttl_index_alter('owned', interval '2 days')$$),
  ($$SELECT ttl_index_drop('owned')$$),
  ($$SELECT ttl_expire_now('owned')$$),
  ($$DELETE FROM jsonb_ttl_internal.ttl_index$$),
  ($$UPDATE jsonb_ttl_internal.ttl_index SET expire_after = '0'$$)
) AS c(statement), LATERAL attempt(c.statement) AS a;
\x off
-- ttl_expire_now() without a table covers only the caller's own tables
SELECT ttl_expire_now() AS removed_from_my_tables;
-- the catalog is readable by everyone
SELECT count(*) FROM ttl_indexes;
RESET ROLE;

-- the owner manages its TTL index without owning the catalog
SET ROLE regress_ttl_owner;
SELECT index_name, is_newly_created FROM ttl_index_create('owned', 'ts', interval '1 day');
SELECT expire_after FROM ttl_index_alter('owned', interval '2 days');
SELECT ttl_index_drop('owned');
RESET ROLE;
DROP TABLE owned;
REVOKE CREATE ON SCHEMA public FROM regress_ttl_owner;
DROP ROLE regress_ttl_owner, regress_ttl_other;

DROP TABLE docs, docs_partitioned, two_jsonb, no_jsonb CASCADE;
DROP FOREIGN TABLE docs_foreign;
DROP SERVER ttl_dummy_server;
DROP FOREIGN DATA WRAPPER ttl_dummy_fdw;
DROP SEQUENCE docs_seq;
DROP FUNCTION attempt(text);
