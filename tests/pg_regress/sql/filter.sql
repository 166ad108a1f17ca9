-- Partial TTL (MongoDB's partialFilterExpression): ttl_index_create(…, filter => '<predicate>').
-- Only rows the predicate holds for ever expire. The predicate is checked as an index
-- predicate of the table (its columns; IMMUTABLE functions only; no subqueries), kept in its
-- canonical form, shown in ttl_indexes, and made part of the TTL index's own predicate.
\set SHOW_CONTEXT never
CREATE TABLE cache (id int, kind text, doc jsonb);
SELECT index_name, filter
FROM ttl_index_create('cache', 'doc.at', interval '1 hour',
                      filter => $$kind = 'session' OR doc->>'ephemeral' = 'yes'$$);
INSERT INTO cache VALUES
  (1, 'session', '{"at": "2019-01-01T00:00:00Z"}'),               -- expired, matches
  (2, 'account', '{"at": "2019-01-01T00:00:00Z"}'),               -- expired, kept by the filter
  (3, 'account', '{"at": "2019-01-01T00:00:00Z", "ephemeral": "yes"}'), -- expired, matches
  (4, 'session', '{"at": "2999-01-01T00:00:00Z"}'),               -- matches, not expired
  (5, NULL,      '{"at": "2019-01-01T00:00:00Z"}');               -- the filter is NULL: kept

-- the filter is part of the index predicate, in its canonical form
SELECT pg_get_indexdef('cache_ttl_idx'::regclass);
SELECT filter FROM ttl_indexes WHERE table_name = 'cache'::regclass;
-- the preview and the purge see the same rows
SELECT rows FROM ttl_expire_preview('cache');
SELECT ttl_expire_now('cache');
SELECT id, kind FROM cache ORDER BY id;

-- statements carry the filter qualified down to its operators (the catalog's filter_sql), and
-- read through the partial index: the pick of a batch, planned as the worker plans it
SELECT filter_sql FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'cache'::regclass;
INSERT INTO cache SELECT g, 'session', jsonb_build_object('at', 1550165973 + g)
FROM generate_series(10, 2000) g;
ANALYZE cache;
SELECT format($$/* jsonb_ttl batch */ EXPLAIN (COSTS OFF)
  SELECT ctid FROM ONLY public.cache
  WHERE public.ttl_timestamp((doc -> 'at'::text)) < now() - interval '1 hour' AND %s
  LIMIT 1000 FOR UPDATE SKIP LOCKED$$, filter_sql)
FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'cache'::regclass \gexec
SELECT ttl_expire_now('cache');

-- the same spec again is no change; another filter is another spec
SELECT is_newly_created
FROM ttl_index_create('cache', 'doc.at', interval '1 hour',
                      filter => $$kind = 'session' OR doc->>'ephemeral' = 'yes'$$);
SELECT ttl_index_create('cache', 'doc.at', interval '1 hour', filter => $$kind = 'session'$$);
-- a renamed column: the filter follows it (read again from the index predicate)
ALTER TABLE cache RENAME COLUMN kind TO category;
SELECT filter, filter_sql FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'cache'::regclass;
INSERT INTO cache VALUES (7, 'session', '{"at": "2019-01-01T00:00:00Z"}');
SELECT ttl_expire_now('cache');
ALTER TABLE cache RENAME COLUMN category TO kind;
-- expire_after changes without touching the filter; a time_zone rebuild keeps it
SELECT expire_after, filter FROM ttl_index_alter('cache', interval '2 hours');
SELECT ttl_index_drop('cache');

-- the filter is read with search_path = pg_catalog, whatever the caller's: names from other
-- schemas are qualified, so the filter means the same under any search_path (the worker
-- deletes as the owner, under the owner's settings)
CREATE SCHEMA rules;
CREATE FUNCTION rules.is_temporary(k text) RETURNS boolean
  LANGUAGE sql IMMUTABLE AS $$ SELECT k LIKE 'tmp%' $$;
SET search_path = rules, public;
SELECT filter FROM ttl_index_create('cache', 'doc.at', interval '1 hour',
                                    filter => 'is_temporary(kind)');
SELECT filter FROM ttl_index_create('cache', 'doc.at', interval '1 hour',
                                    filter => 'rules.is_temporary(kind)');
RESET search_path;
SELECT filter, filter_sql FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'cache'::regclass;
INSERT INTO cache VALUES (6, 'tmp-upload', '{"at": "2019-01-01T00:00:00Z"}');
-- the filter is the owner's code: the preview runs it as the owner, for a caller who may
-- read the table and to whom row security does not apply
CREATE ROLE filter_reader;
SET ROLE filter_reader;
SELECT rows FROM ttl_expire_preview('cache');
RESET ROLE;
GRANT SELECT ON cache TO filter_reader;
SET ROLE filter_reader;
SELECT rows FROM ttl_expire_preview('cache');
RESET ROLE;
REVOKE SELECT ON cache FROM filter_reader;
DROP ROLE filter_reader;
SELECT ttl_expire_now('cache');
SELECT ttl_index_drop('cache');

-- constants are written in ISO form whatever the session's DateStyle, so the worker reads
-- them back as they were meant
SET DateStyle = 'SQL, DMY';
SELECT filter FROM ttl_index_create('cache', 'doc.at', 0,
                                    filter => $$public.ttl_timestamp(doc->'since') < '01/02/2020 00:00 UTC'$$);
RESET DateStyle;
SELECT filter_sql FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'cache'::regclass;
SELECT ttl_index_drop('cache');

-- bad filters: each refused before anything is built, with the reason and a hint
SELECT ttl_index_create('cache', 'doc.at', 0, filter => 'kind =');
SELECT ttl_index_create('cache', 'doc.at', 0, filter => '');
SELECT ttl_index_create('cache', 'doc.at', 0, filter => 'no_such_column = 1');
SELECT ttl_index_create('cache', 'doc.at', 0, filter => 'kind');
SELECT ttl_index_create('cache', 'doc.at', 0, filter => 'id IN (SELECT 1)');
SELECT ttl_index_create('cache', 'doc.at', 0, filter => 'random() < 0.5');
SELECT ttl_index_create('cache', 'doc.at', 0, filter => 'count(*) > 1');
SELECT ttl_index_create('cache', 'doc.at', 0, filter => 'true; DROP TABLE cache');
SELECT ttl_index_create('cache', 'doc.at', 0, filter => 'true) OR (true');
SELECT ttl_index_create('cache', 'doc.at', 0, filter => 'true ORDER BY 1');
SELECT ttl_index_create('cache', 'doc.at', 0, filter => 'ctid = ''(0,1)''');
SELECT ttl_index_create('cache', 'doc.at', 0, filter => 'CASE WHEN id > 1 THEN true END');
SELECT count(*) AS no_index_left FROM ttl_indexes WHERE table_name = 'cache'::regclass;

DROP TABLE cache;
DROP SCHEMA rules CASCADE;
