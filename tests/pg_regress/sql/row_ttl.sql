-- Per-row TTL (Cosmos DB's ttl on an item): ttl_index_create(…, row_ttl_path => 'ttl') names a
-- field holding seconds that overrides expire_after for its row; -1 means never; absent or
-- invalid falls back to expire_after. Purging never scans the table: the rows with a TTL of
-- their own are keyed on their expiry in a second index (docs/row_ttl.md).
\set SHOW_CONTEXT never

-- what a TTL field means: seconds (>= 0), -1 (never), or NULL (fall back)
SELECT v AS field, jsonb_ttl_internal.ttl_row_seconds(v) AS seconds
FROM unnest(ARRAY['3600', '0', '1.5', '-1', '-5', '"60"', 'null', 'true', '[1]']::jsonb[]) v;
SELECT jsonb_ttl_internal.ttl_expires_at('2026-01-01T00:00:00Z', 90) AS expires_at,
       jsonb_ttl_internal.ttl_expires_at('2026-01-01T00:00:00Z', -1) AS never;

CREATE TABLE items (id int, doc jsonb);
SELECT index_name, row_ttl_path
FROM ttl_index_create('items', 'ts', interval '1 hour', row_ttl_path => 'ttl');
INSERT INTO items VALUES
  (1, jsonb_build_object('ts', now() - interval '2 hours')),                  -- falls back: expired
  (2, jsonb_build_object('ts', now() - interval '2 hours', 'ttl', 86400)),    -- its own day: kept
  (3, jsonb_build_object('ts', now() - interval '2 hours', 'ttl', -1)),       -- never: kept
  (4, jsonb_build_object('ts', now() - interval '10 seconds', 'ttl', 5)),     -- its own 5 s: expired
  (5, jsonb_build_object('ts', now() - interval '2 hours', 'ttl', 'abc')),    -- invalid: expired
  (6, jsonb_build_object('ts', now() - interval '2 hours', 'ttl', -5)),       -- invalid: expired
  (7, jsonb_build_object('ts', now() - interval '10 seconds')),               -- falls back: kept
  (8, jsonb_build_object('ts', now() - interval '10 seconds', 'ttl', 0));     -- its own 0 s: expired

-- two partial indexes: the TTL index over the rows that fall back to expire_after, keyed on
-- the reference time (expire_after still changes without a rebuild), and one over the rows
-- with a TTL of their own, keyed on their expiry
SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'items' ORDER BY 1;

SELECT rows FROM ttl_expire_preview('items');
SELECT ttl_expire_now('items');
SELECT id FROM items ORDER BY id;

-- each batch reads through its own index, as the worker plans it
INSERT INTO items SELECT g, jsonb_build_object('ts', 1550165973 + g, 'ttl', g % 3)
FROM generate_series(100, 3000) g;
ANALYZE items;
/* jsonb_ttl batch */ EXPLAIN (COSTS OFF)
SELECT ctid FROM ONLY public.items
WHERE public.ttl_timestamp((doc OPERATOR(pg_catalog.->) 'ts'::pg_catalog.text)) < now() - interval '1 hour'
  AND jsonb_ttl_internal.ttl_row_seconds((doc OPERATOR(pg_catalog.->) 'ttl'::pg_catalog.text)) IS NULL
LIMIT 1000 FOR UPDATE SKIP LOCKED;
/* jsonb_ttl batch */ EXPLAIN (COSTS OFF)
SELECT ctid FROM ONLY public.items
WHERE jsonb_ttl_internal.ttl_expires_at(public.ttl_timestamp((doc OPERATOR(pg_catalog.->) 'ts'::pg_catalog.text)),
                            jsonb_ttl_internal.ttl_row_seconds((doc OPERATOR(pg_catalog.->) 'ttl'::pg_catalog.text)))
      < now() - interval '0'
LIMIT 1000 FOR UPDATE SKIP LOCKED;
SELECT ttl_expire_now('items');

-- expire_after moves only the rows that fall back to it
INSERT INTO items VALUES (9, jsonb_build_object('ts', now() - interval '2 hours'));
SELECT expire_after FROM ttl_index_alter('items', interval '1 day');
SELECT ttl_expire_now('items');
SELECT id FROM items ORDER BY id;

-- the same spec again is no change; another field is another spec
SELECT is_newly_created FROM ttl_index_create('items', 'ts', interval '1 day', row_ttl_path => 'ttl');
SELECT ttl_index_create('items', 'ts', interval '1 day', row_ttl_path => 'life');
-- build => false hands back the statements of both indexes
SELECT ttl_index_drop('items');
SELECT count(*) AS indexes_left FROM pg_indexes WHERE tablename = 'items';
SELECT unnest(build_sql) FROM ttl_index_create('items', 'ts', 0, row_ttl_path => 'ttl', build => false);
SELECT ttl_index_drop('items');

-- a numeric column can hold the TTL too, and DROP INDEX of the TTL index takes the other along
CREATE TABLE readings (id int, taken_at timestamptz, keep_seconds int);
SELECT index_name FROM ttl_index_create('readings', 'taken_at', interval '1 day',
                                        row_ttl_path => 'keep_seconds');
INSERT INTO readings VALUES (1, now() - interval '1 hour', 60), (2, now() - interval '1 hour', NULL);
SELECT ttl_expire_now('readings');
SELECT id FROM readings;
-- ttl_stats has a row for each part of a per-row TTL table: the rows that fall back to
-- expire_after, and those with a TTL of their own (any other table has one, part NULL)
SELECT table_name, part, runs, rows_deleted, oldest_expired FROM ttl_stats
WHERE table_name = 'readings'::regclass ORDER BY part;

DROP INDEX readings_ttl_idx;
SELECT count(*) AS indexes_left FROM pg_indexes WHERE tablename = 'readings';

-- bad paths
SELECT ttl_index_create('readings', 'taken_at', 0, row_ttl_path => 'taken_at');
SELECT ttl_index_create('readings', 'taken_at', 0, row_ttl_path => 'nope.x');

DROP TABLE items, readings;
