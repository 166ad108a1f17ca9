-- No long lock on a big table. CREATE INDEX, what ttl_index_create runs by default, makes
-- every write to the table wait for the build. Instead:
-- * build => false records the TTL index without building it, and returns in build_sql the
--   exact statements that build it without blocking writes (psql's \gexec runs them);
-- * ttl_index_create adopts a valid index that is exactly the one it would build.
-- Until its index is valid the worker leaves the table alone.
\set SHOW_CONTEXT never
CREATE TABLE events (id bigint, doc jsonb);
INSERT INTO events SELECT g, jsonb_build_object('at', 1550165973 + g) FROM generate_series(1, 1000) g;
SELECT index_name, is_newly_created, unnest(build_sql) AS build_sql
FROM ttl_index_create('events', 'at', interval '1 day', build => false);
SELECT index_name, index_size FROM ttl_indexes WHERE table_name = 'events'::regclass;
-- renaming another index of the table meanwhile does not make it the TTL index
CREATE INDEX events_kind ON events ((doc ->> 'kind')) WHERE doc ? 'kind';
ALTER INDEX events_kind RENAME TO events_by_kind;
SELECT index_name FROM ttl_indexes WHERE table_name = 'events'::regclass;
DROP INDEX events_by_kind;
-- the same call again hands the statements back again
SELECT is_newly_created, cardinality(build_sql)
FROM ttl_index_create('events', 'at', interval '1 day', build => false);
-- run them
SELECT unnest(build_sql) FROM ttl_index_create('events', 'at', interval '1 day') \gexec
SELECT build_sql FROM ttl_index_create('events', 'at', interval '1 day');
SELECT indexrelid::regclass, indisvalid FROM pg_index WHERE indrelid = 'events'::regclass;
SELECT ttl_expire_now('events');

-- adoption: an index built beforehand with exactly the statement build => false gives (here
-- with a filter) becomes the TTL index, and goes with ttl_index_drop like one it built
SELECT ttl_index_drop('events');
CREATE TABLE sessions (id bigint, doc jsonb);
CREATE INDEX CONCURRENTLY sessions_seen ON ONLY public.sessions
  (public.ttl_timestamp((doc OPERATOR(pg_catalog.->) 'seen'::pg_catalog.text)))
  WHERE public.ttl_timestamp((doc OPERATOR(pg_catalog.->) 'seen'::pg_catalog.text)) IS NOT NULL
    AND (doc OPERATOR(pg_catalog.?) 'user'::pg_catalog.text);
SELECT index_name, build_sql
FROM ttl_index_create('sessions', 'seen', interval '1 hour', filter => $$doc ? 'user'$$);
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'sessions'::regclass;
SELECT ttl_index_drop('sessions');
SELECT count(*) AS indexes_after_drop FROM pg_index WHERE indrelid = 'sessions'::regclass;
-- an index that differs in anything is not adopted: descending, or without the predicate
CREATE INDEX sessions_desc ON sessions (ttl_timestamp(doc -> 'seen') DESC)
  WHERE ttl_timestamp(doc -> 'seen') IS NOT NULL;
CREATE INDEX sessions_all ON sessions (ttl_timestamp(doc -> 'seen'));
SELECT index_name FROM ttl_index_create('sessions', 'seen', interval '1 hour');
SELECT ttl_index_drop('sessions');
-- an identical index built without the qualified names is the same index, and is adopted
CREATE INDEX sessions_plain ON sessions (ttl_timestamp(doc -> 'seen'))
  WHERE ttl_timestamp(doc -> 'seen') IS NOT NULL;
SELECT index_name FROM ttl_index_create('sessions', 'seen', interval '1 hour');
-- a plain timestamptz column: its index is the column itself, and is known by that shape too
-- (one identity for an index, whether its key is an expression or a column); a unique one is
-- not it
CREATE TABLE visits (id int, seen_at timestamptz);
CREATE UNIQUE INDEX visits_unique ON visits (seen_at) WHERE seen_at IS NOT NULL;
CREATE INDEX visits_seen ON visits (seen_at) WHERE seen_at IS NOT NULL;
SELECT index_name FROM ttl_index_create('visits', 'seen_at', interval '1 day');
SELECT count(*) AS indexes_on_seen_at FROM pg_index WHERE indrelid = 'visits'::regclass;
DROP TABLE visits;

-- a partitioned table: CONCURRENTLY does not work on the parent, so the parent's index is
-- made ON ONLY it (invalid), each leaf's concurrently, then attached; the parent's index is
-- valid once every partition has its own
CREATE TABLE logs (region text, day int, doc jsonb) PARTITION BY LIST (region);
CREATE TABLE logs_eu PARTITION OF logs FOR VALUES IN ('eu');
CREATE TABLE logs_us PARTITION OF logs FOR VALUES IN ('us') PARTITION BY RANGE (day);
CREATE TABLE logs_us_1 PARTITION OF logs_us FOR VALUES FROM (1) TO (16);
CREATE TABLE logs_us_2 PARTITION OF logs_us FOR VALUES FROM (16) TO (32);
INSERT INTO logs VALUES ('eu', 1, '{"at": "2019-01-01"}'), ('us', 2, '{"at": "2019-01-01"}'),
                        ('us', 20, '{"at": "2019-01-01"}');
SELECT unnest(build_sql) FROM ttl_index_create('logs', 'at', 0, build => false);
-- half done: the parent's index and one leaf's
CREATE INDEX logs_ttl_idx ON ONLY public.logs (public.ttl_timestamp((doc OPERATOR(pg_catalog.->) 'at'::pg_catalog.text))) WHERE public.ttl_timestamp((doc OPERATOR(pg_catalog.->) 'at'::pg_catalog.text)) IS NOT NULL;
CREATE INDEX CONCURRENTLY logs_eu_ttl_idx ON public.logs_eu (public.ttl_timestamp((doc OPERATOR(pg_catalog.->) 'at'::pg_catalog.text))) WHERE public.ttl_timestamp((doc OPERATOR(pg_catalog.->) 'at'::pg_catalog.text)) IS NOT NULL;
ALTER INDEX public.logs_ttl_idx ATTACH PARTITION public.logs_eu_ttl_idx;
-- the statements left: only what is missing
SELECT unnest(build_sql) FROM ttl_index_create('logs', 'at', 0) \gexec
SELECT c.relname, i.indisvalid
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid IN (SELECT relid FROM pg_partition_tree('logs')) ORDER BY 1;
SELECT build_sql FROM ttl_index_create('logs', 'at', 0);
SELECT ttl_expire_now('logs');

DROP TABLE events, sessions, logs;
