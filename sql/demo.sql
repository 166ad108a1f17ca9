-- make run: a live demo of jsonb_ttl in the database "demo". Rows expire over the next minute
-- and the background worker removes them while you watch; make run's feeder
-- (scripts/demo-feed.sh) keeps adding a few a second, each gone 10 seconds later.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS jsonb_ttl;
DROP TABLE IF EXISTS demo_events;
CREATE TABLE demo_events (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
SELECT index_name, expire_after FROM ttl_index_create('demo_events', 'creationDate', interval '10 seconds');

-- 60 events created over the last 10 seconds and the next 50: one expires every second
INSERT INTO demo_events (doc)
SELECT jsonb_build_object('kind', 'click', 'n', g,
                          'creationDate', to_char((now() + (g - 10) * interval '1 second') AT TIME ZONE 'UTC',
                                                 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
FROM generate_series(1, 60) g;
-- dates in other shapes: Unix seconds, MongoDB Extended JSON; and rows that never expire
INSERT INTO demo_events (doc) VALUES
  ('{"kind": "login",  "creationDate": 1550165973}'),
  ('{"kind": "mongo",  "creationDate": {"$date": {"$numberLong": "1550165973000"}}}'),
  ('{"kind": "future", "creationDate": "2999-01-01T00:00:00+01:00"}'),
  ('{"kind": "broken", "creationDate": "2019-02-30"}'),
  ('{"kind": "no date"}');

-- sessions that idle 20 seconds are not lost: they move into an archive, stamped as they go
DROP TABLE IF EXISTS demo_sessions, demo_sessions_archive;
CREATE TABLE demo_sessions (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE demo_sessions_archive (id bigint, doc jsonb, archived_at timestamptz NOT NULL DEFAULT now());
SELECT index_name, archive_to FROM ttl_index_create('demo_sessions', 'lastSeen', interval '20 seconds',
                                                    archive_to => 'demo_sessions_archive');
INSERT INTO demo_sessions (doc)
SELECT jsonb_build_object('user', 'u' || g, 'lastSeen', now() + (g - 20) * interval '1 second')
FROM generate_series(1, 40) g;

-- one-time codes expire 10 seconds after they were issued; the accounts stay (a field TTL)
DROP TABLE IF EXISTS demo_accounts;
CREATE TABLE demo_accounts (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl_field_create('demo_accounts', 'otp.issuedAt', interval '10 seconds');
INSERT INTO demo_accounts (doc)
SELECT jsonb_build_object('email', 'user' || g || '@example.com',
                          'otp', jsonb_build_object('code', lpad((g * 7919 % 1000000)::text, 6, '0'),
                                                    'issuedAt', now() + (g - 10) * interval '1 second'))
FROM generate_series(1, 30) g;
RESET client_min_messages;

\echo
\echo 'Watch the rows go (one a second):   SELECT count(*) FROM demo_events \\watch 1'
\echo 'Sessions moving to their archive:   SELECT (SELECT count(*) FROM demo_sessions) AS live, (SELECT count(*) FROM demo_sessions_archive) AS archived \\watch 1'
\echo 'Codes expiring, accounts staying:   SELECT count(*) AS accounts, count(*) FILTER (WHERE doc ? ''otp'') AS with_code FROM demo_accounts \\watch 1'
\echo 'What the worker did:                SELECT * FROM ttl_stats;'
\echo 'Server totals:                      SELECT * FROM ttl_statistics();'
