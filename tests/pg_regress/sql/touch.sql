-- Touch (Cosmos DB's _ts, "time since last write"): ttl_index_create(…, touch => true) keeps
-- the reference attribute at the time of the row's last INSERT or UPDATE (the transaction's
-- now()), through a trigger the extension owns, jsonb_ttl_touch: a row expires expire_after
-- past its last write.
\set SHOW_CONTEXT never
CREATE TABLE sessions (id int PRIMARY KEY, doc jsonb);
SELECT index_name, touch FROM ttl_index_create('sessions', 'meta.seen', interval '30 minutes',
                                              touch => true);
SELECT tgname, tgtype, tgfoid::regproc, tgnargs FROM pg_trigger WHERE tgrelid = 'sessions'::regclass;

BEGIN;
INSERT INTO sessions VALUES
  (1, '{"user": "ann"}'),                                  -- created: meta.seen is added
  (2, '{"user": "bob", "meta": {"seen": "2019-01-01"}}'),  -- a string: the write's time, ISO 8601
  (3, '{"user": "cy", "meta": {"seen": 1}}'),              -- a number stays a number: seconds
  (4, NULL);                                               -- no document: one is made
SELECT id, doc->'meta'->>'seen' = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS iso_now,
       doc->'meta'->'seen' = to_jsonb(floor(extract(epoch FROM now()))::bigint) AS epoch_now,
       doc - 'meta' AS rest
FROM sessions ORDER BY id;
COMMIT;

-- nothing is expired right after a write; an old session comes back to life when written
SELECT ttl_expire_preview('sessions');
UPDATE sessions SET doc = doc || '{"meta": {"seen": "2019-01-01T00:00:00Z"}}' WHERE id = 1;
SELECT doc->'meta'->>'seen' > '2020' AS rewritten FROM sessions WHERE id = 1;
-- writes through the owner's trigger-free paths still go through it: COPY
COPY sessions FROM stdin;
5	{"user": "dee"}
\.
SELECT doc ? 'meta' AS touched_by_copy FROM sessions WHERE id = 5;

-- only the path changes: the rest of the document is kept exactly (numbers of any precision)
INSERT INTO sessions VALUES (9, '{"big": 12345678901234567890123, "price": 0.10, "z": 1, "a": 2}');
SELECT doc - 'meta' AS untouched FROM sessions WHERE id = 9;

-- a value on the way that is not an object would be destroyed: the write fails instead
INSERT INTO sessions VALUES (6, '{"meta": "oops"}');
INSERT INTO sessions VALUES (7, '[1, 2]');

-- plain columns get the time in their own type (each write and its check in one transaction,
-- so that now() is the write's time)
CREATE TABLE visits (id int, seen timestamp, day date, n bigint, t text);
SELECT touch FROM ttl_index_create('visits', 'seen', interval '1 day', touch => true,
                                   time_zone => 'Asia/Tokyo');
BEGIN;
INSERT INTO visits (id) VALUES (1);
SELECT seen = (now() AT TIME ZONE 'Asia/Tokyo') AS local_time_in_zone FROM visits;
COMMIT;
SELECT ttl_index_drop('visits');
SELECT touch FROM ttl_index_create('visits', 'day', interval '1 day', touch => true,
                                   time_zone => 'Pacific/Kiritimati');
BEGIN;
INSERT INTO visits (id) VALUES (2);
SELECT day = (now() AT TIME ZONE 'Pacific/Kiritimati')::date AS date_in_zone FROM visits WHERE id = 2;
COMMIT;
SELECT ttl_index_drop('visits');
SELECT touch FROM ttl_index_create('visits', 'n', interval '1 day', numeric_unit => 'ms', touch => true);
BEGIN;
INSERT INTO visits (id) VALUES (3);
SELECT n = floor(extract(epoch FROM now()) * 1000) AS epoch_ms FROM visits WHERE id = 3;
COMMIT;
SELECT ttl_index_drop('visits');
SELECT touch FROM ttl_index_create('visits', 't', interval '1 day', touch => true);
BEGIN;
INSERT INTO visits (id) VALUES (4);
SELECT jsonb_ttl_internal.ttl_text_timestamp(t) = now() AS iso_text FROM visits WHERE id = 4;
COMMIT;

-- a json column keeps its text as written, which a write into it would not: refused
CREATE TABLE raw_docs (id int, doc json);
SELECT ttl_index_create('raw_docs', 'doc.seen', interval '1 day', touch => true);
DROP TABLE raw_docs;

-- the trigger follows a renamed column, and the zone of ttl_index_alter
DROP TABLE visits;
CREATE TABLE visits (id int, seen timestamp);
SELECT FROM ttl_index_create('visits', 'seen', interval '1 day', touch => true, time_zone => 'UTC');
ALTER TABLE visits RENAME COLUMN seen TO last_seen;
SELECT FROM ttl_index_alter('visits', time_zone => 'America/New_York');
BEGIN;
INSERT INTO visits (id) VALUES (1);
SELECT last_seen = (now() AT TIME ZONE 'America/New_York') AS follows FROM visits;
COMMIT;

-- on a partitioned table the trigger is on the parent, cloned to every partition
CREATE TABLE events (region text, doc jsonb) PARTITION BY LIST (region);
CREATE TABLE events_eu PARTITION OF events FOR VALUES IN ('eu');
SELECT FROM ttl_index_create('events', 'at', interval '1 day', touch => true);
CREATE TABLE events_us PARTITION OF events FOR VALUES IN ('us');
INSERT INTO events VALUES ('eu', '{}'), ('us', '{}');
SELECT tableoid::regclass, doc ? 'at' AS touched FROM events ORDER BY 1;

-- ttl_index_alter turns it off and on; ttl_index_drop and DROP INDEX take the trigger along
SELECT touch FROM ttl_index_alter('sessions', touch => false);
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'sessions'::regclass;
INSERT INTO sessions VALUES (8, '{}');
SELECT doc FROM sessions WHERE id = 8;
SELECT touch FROM ttl_index_alter('sessions', touch => true);
SELECT ttl_index_drop('sessions');
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'sessions'::regclass;
SELECT FROM ttl_index_create('sessions', 'meta.seen', interval '30 minutes', touch => true);
DROP INDEX sessions_ttl_idx;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'sessions'::regclass;

-- a trigger of the same name that is not ours is never replaced
CREATE FUNCTION mine() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER jsonb_ttl_touch BEFORE INSERT ON sessions FOR EACH ROW EXECUTE FUNCTION mine();
SELECT ttl_index_create('sessions', 'meta.seen', interval '30 minutes', touch => true);
SELECT tgfoid::regproc FROM pg_trigger WHERE tgrelid = 'sessions'::regclass;
-- the same spec again is no change; touch is part of it
SELECT is_newly_created FROM ttl_index_create('events', 'at', interval '1 day', touch => true);
SELECT ttl_index_create('events', 'at', interval '1 day');

DROP TABLE sessions, visits, events;
DROP FUNCTION mine();
