-- make run: a small demo of jsonb_ttl in the database "demo".
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS jsonb_ttl;
DROP TABLE IF EXISTS demo_events;
CREATE TABLE demo_events (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
INSERT INTO demo_events (doc) VALUES
  ('{"kind": "login",  "creationDate": 1550165973}'),
  ('{"kind": "click",  "creationDate": "2019-02-14T17:39:33.000Z"}'),
  ('{"kind": "mongo",  "creationDate": {"$date": {"$numberLong": "1550165973000"}}}'),
  ('{"kind": "future", "creationDate": "2999-01-01T00:00:00+01:00"}'),
  ('{"kind": "broken", "creationDate": "2019-02-30"}');
CREATE INDEX demo_events_ttl ON demo_events (ttl_timestamp(doc -> 'creationDate'));
RESET client_min_messages;
\echo 'The reference time each document holds (NULL: never expires):'
SELECT id, doc ->> 'kind' AS kind, ttl_timestamp(doc -> 'creationDate') AS reference_time
FROM demo_events ORDER BY id;
