-- ttl_index_create(tbl, path, expire_after): rows of tbl expire expire_after past the point in
-- time found at path. It builds a partial expression index on that point in time and records
-- the TTL index in the catalog.
\set SHOW_CONTEXT never
CREATE TABLE events (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
SELECT * FROM ttl_index_create('events', 'creationDate', interval '10 minutes');

-- the index keys on the reference time, not on the expiry time, and leaves out rows without one
\d events

-- the same spec again returns the existing index, unchanged
SELECT index_name, is_newly_created FROM ttl_index_create('events', 'creationDate', interval '10 minutes');
-- '10 minutes' and 600 seconds are the same spec; so is naming the jsonb column in the path
SELECT index_name, is_newly_created FROM ttl_index_create('events', 'doc.creationDate', 600);

-- a different spec on the same table is an error: one TTL index per table
SELECT * FROM ttl_index_create('events', 'creationDate', interval '1 hour');
SELECT * FROM ttl_index_create('events', 'updatedAt', interval '10 minutes');

-- expire_after as a number of seconds, numbers in the documents read as milliseconds,
-- and named arguments
CREATE TABLE sessions (id text PRIMARY KEY, data jsonb);
SELECT * FROM ttl_index_create(tbl => 'sessions', path => 'lastSeen', expire_after => 1800,
                               numeric_unit => 'ms');
\d sessions

-- expire_after 0: each document holds its own absolute expiry date
CREATE TABLE cache (key text PRIMARY KEY, value jsonb);
SELECT * FROM ttl_index_create('cache', 'expiresAt', 0);

-- the index name avoids names already taken
CREATE TABLE taken (doc jsonb);
CREATE INDEX taken_ttl_idx ON taken ((doc ->> 'x'));
SELECT index_name FROM ttl_index_create('taken', 'ts', interval '1 day');

-- every TTL index of the database
SELECT table_name, column_name, path, json_path, expire_after, numeric_unit, index_name,
       index_size > 0 AS has_size, created_at <= now() AS created
FROM ttl_indexes ORDER BY table_name::text;

-- the planner uses the TTL index to find expired rows
INSERT INTO events (doc)
SELECT jsonb_build_object('creationDate', 1550165973 + g) FROM generate_series(1, 1000) g;
ANALYZE events;
EXPLAIN (COSTS OFF)
SELECT id FROM events WHERE ttl_timestamp(doc -> 'creationDate') < now() - interval '10 minutes';

DROP TABLE events, sessions, cache, taken;
