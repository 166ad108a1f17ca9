-- Dates in json and text columns, and JSON strings without an offset read in a zone.
\set SHOW_CONTEXT never
SET TimeZone = 'UTC';

-- a json column (connect-pg-simple's sess, older schemas): the path goes inside it, read as jsonb
CREATE TABLE sessions (sid text PRIMARY KEY, sess json NOT NULL);
SELECT index_name, column_name, path FROM ttl_index_create('sessions', 'sess.cookie.expires', 0);
SELECT indexdef FROM pg_indexes WHERE indexname = 'sessions_ttl_idx';
INSERT INTO sessions VALUES
  ('old', '{"cookie": {"expires": "2019-01-01T00:00:00.000Z"}}'),
  ('new', '{"cookie": {"expires": "2999-01-01T00:00:00.000Z"}}'),
  ('none', '{"cookie": {}}');
SELECT ttl_expire_now('sessions') AS removed;
SELECT sid FROM sessions ORDER BY sid;

-- a text column holding dates
CREATE TABLE jobs (id int, finished_at text);
SELECT index_name, column_name FROM ttl_index_create('jobs', 'finished_at', interval '1 day');
SELECT indexdef FROM pg_indexes WHERE indexname = 'jobs_ttl_idx';
INSERT INTO jobs VALUES (1, '2019-01-01 10:00:00+00'), (2, '2999-01-01'), (3, 'not yet');
SELECT ttl_expire_now('jobs') AS removed;
SELECT id FROM jobs ORDER BY id;

-- JSON strings without an offset: UTC by default (ArangoDB's rule), or the TTL index's
-- time_zone (Django's DjangoJSONEncoder with USE_TZ = False writes naive local times)
SELECT ttl_timestamp('"2026-11-23T10:00:00"') AS as_utc,
       ttl_timestamp('"2026-11-23T10:00:00"', 's', 'America/New_York') AS in_new_york,
       ttl_timestamp('"2026-11-23T10:00:00Z"', 's', 'America/New_York') AS offset_wins,
       ttl_timestamp('"2026-11-23"', 's', 'Asia/Tokyo') AS date_is_local_midnight,
       ttl_timestamp('1779530400', 's', 'Asia/Tokyo') AS numbers_are_absolute;
CREATE TABLE orders (id int, data jsonb);
SELECT index_name, time_zone FROM ttl_index_create('orders', 'placed', interval '30 days',
                                                   time_zone => 'America/New_York');
SELECT indexdef FROM pg_indexes WHERE indexname = 'orders_ttl_idx';
SELECT table_name, path, time_zone FROM ttl_indexes WHERE table_name = 'orders'::regclass;
-- moving the zone rebuilds the index; an unknown zone is refused
SELECT index_name, time_zone FROM ttl_index_alter('orders', time_zone => 'Europe/Berlin');
SELECT ttl_timestamp('"2026-11-23T10:00:00"', 's', 'Nowhere/Atlantis');
DROP TABLE sessions, jobs, orders;
