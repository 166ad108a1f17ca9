-- ttl_expire_preview(tbl, at => now()): what the TTL index of a table would remove at a time,
-- without removing anything: how many rows, and the oldest and newest of their reference
-- times. Read through the TTL index, as the caller.
\set SHOW_CONTEXT never
CREATE TABLE sessions (id int, doc jsonb);
SELECT index_name FROM ttl_index_create('sessions', 'seen', interval '1 day');
INSERT INTO sessions VALUES
  (1, '{"seen": "2019-01-01T00:00:00Z"}'),
  (2, '{"seen": "2019-06-01T12:00:00Z"}'),
  (3, '{"seen": "2999-01-01T00:00:00Z"}'),
  (4, '{"seen": "not a date"}'),
  (5, '{}');

-- now: the two 2019 sessions would go
SELECT * FROM ttl_expire_preview('sessions');
-- at a chosen time: as of mid-2019 only the first; by the year 3000 the third as well
SELECT * FROM ttl_expire_preview('sessions', at => '2019-03-01T00:00:00Z');
SELECT * FROM ttl_expire_preview('sessions', '3000-01-01T00:00:00Z');
-- before anything expires: no row, no times
SELECT * FROM ttl_expire_preview('sessions', '2018-01-01T00:00:00Z');
-- nothing was removed
SELECT count(*) AS still_there FROM sessions;

-- the preview follows expire_after: with 10 years, nothing of 2019 is expired yet
SELECT expire_after FROM ttl_index_alter('sessions', interval '10 years');
SELECT rows FROM ttl_expire_preview('sessions');
SELECT rows FROM ttl_expire_preview('sessions', '2030-01-01T00:00:00Z');

-- a partitioned table is previewed whole
CREATE TABLE events (region text, doc jsonb) PARTITION BY LIST (region);
CREATE TABLE events_eu PARTITION OF events FOR VALUES IN ('eu');
CREATE TABLE events_us PARTITION OF events FOR VALUES IN ('us');
SELECT index_name FROM ttl_index_create('events', 'at', 0);
INSERT INTO events VALUES ('eu', '{"at": 1550165973}'), ('us', '{"at": 1550165974}'),
                          ('us', '{"at": 32503680000}');
SELECT * FROM ttl_expire_preview('events');

-- the caller reads the table: a role without SELECT on it gets the usual error
CREATE ROLE preview_reader;
SET ROLE preview_reader;
SELECT * FROM ttl_expire_preview('sessions');
RESET ROLE;
GRANT SELECT ON sessions TO preview_reader;
SET ROLE preview_reader;
SELECT rows FROM ttl_expire_preview('sessions', '2030-01-01T00:00:00Z');
RESET ROLE;

-- bad arguments
SELECT * FROM ttl_expire_preview(NULL);
SELECT * FROM ttl_expire_preview('sessions', NULL);
CREATE TABLE plain_table (doc jsonb);
SELECT * FROM ttl_expire_preview('plain_table');

DROP TABLE sessions, events, plain_table;
DROP ROLE preview_reader;
