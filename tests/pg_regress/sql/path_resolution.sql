-- How ttl_index_create reads its path argument.
\set SHOW_CONTEXT never

-- The first segment may name a jsonb column; the rest is the path inside it.
CREATE TABLE nested (id int, body jsonb, meta jsonb);
SELECT column_name, path FROM ttl_index_create('nested', 'meta.audit.createdAt', interval '1 day');
SELECT ttl_index_drop('nested');

-- With several jsonb columns the path must start with one of them.
SELECT * FROM ttl_index_create('nested', 'audit.createdAt', interval '1 day');

-- A segment holding a dot is written in double quotes ("" for a quote inside).
SELECT column_name, path FROM ttl_index_create('nested', 'body."a.b"."say ""hi"""', interval '1 day');
SELECT indexdef FROM pg_indexes WHERE tablename = 'nested' AND indexname LIKE '%ttl%';
INSERT INTO nested VALUES (1, '{"a.b": {"say \"hi\"": "2019-01-01"}}', NULL),
                          (2, '{"a": {"b": {"say \"hi\"": "2019-01-01"}}}', NULL);
SELECT id FROM nested WHERE ttl_timestamp(body -> 'a.b' -> 'say "hi"') IS NOT NULL;
SELECT ttl_index_drop('nested');

-- The whole jsonb value can be the date.
CREATE TABLE scalars (doc jsonb);
SELECT column_name, path FROM ttl_index_create('scalars', 'doc', interval '1 day');

-- With exactly one jsonb column, a path that names no column is inside it, even if a
-- key has the same name as nothing in the table.
CREATE TABLE single (id int, "Doc" jsonb);
SELECT column_name, path FROM ttl_index_create('single', 'id_card.expires', interval '1 day');
SELECT indexdef FROM pg_indexes WHERE tablename = 'single' AND indexname LIKE '%ttl%';

-- Badly formed paths
SELECT * FROM ttl_index_create('nested', '', interval '1 day');
SELECT * FROM ttl_index_create('nested', 'body..x', interval '1 day');
SELECT * FROM ttl_index_create('nested', 'body.', interval '1 day');
SELECT * FROM ttl_index_create('nested', 'body."a.b', interval '1 day');
SELECT * FROM ttl_index_create('nested', 'body."a"b', interval '1 day');

-- A column of a type that cannot hold a point in time, or a path after a plain column
CREATE TABLE typed (id int, tags text[], at timestamptz, doc jsonb);
SELECT * FROM ttl_index_create('typed', 'tags', interval '1 day');
SELECT * FROM ttl_index_create('typed', 'at.x', interval '1 day');

-- No jsonb column to look in
CREATE TABLE nojson (id int, at timestamptz);
SELECT * FROM ttl_index_create('nojson', 'creationDate', interval '1 day');

DROP TABLE nested, scalars, single, typed, nojson;
