-- A TTL index on a plain column: timestamptz, timestamp and date (read in the TTL index's time
-- zone, here the session's UTC: see time_zone.sql), or a number (Unix seconds, or milliseconds
-- with numeric_unit => 'ms').
\set SHOW_CONTEXT never
SET TimeZone = 'UTC';
CREATE TABLE plain (id int PRIMARY KEY, at_tz timestamptz, at_ts timestamp, on_day date,
                    epoch_s bigint, epoch_ms numeric);
INSERT INTO plain VALUES
  (1, now() - interval '2 days', now() - interval '2 days', current_date - 2,
      extract(epoch FROM now() - interval '2 days'), extract(epoch FROM now() - interval '2 days') * 1000),
  (2, now() + interval '2 days', now() + interval '2 days', current_date + 2,
      extract(epoch FROM now() + interval '2 days'), extract(epoch FROM now() + interval '2 days') * 1000),
  (3, NULL, NULL, NULL, NULL, NULL),
  (4, now() - interval '2 days', now() - interval '2 days', current_date - 2, -5, -5000);

-- For each kind of column: create the TTL index, show it, expire inside a transaction that is
-- rolled back so the next kind sees the same rows.
SELECT column_name, path, numeric_unit FROM ttl_index_create('plain', 'at_tz', interval '1 day');
SELECT indexdef FROM pg_indexes WHERE indexname = 'plain_ttl_idx';
BEGIN;
SELECT ttl_expire_now('plain') AS removed;
SELECT id FROM plain ORDER BY id;
ROLLBACK;
SELECT ttl_index_drop('plain');

SELECT column_name, path, numeric_unit FROM ttl_index_create('plain', 'at_ts', interval '1 day');
SELECT indexdef FROM pg_indexes WHERE indexname = 'plain_ttl_idx';
BEGIN;
SELECT ttl_expire_now('plain') AS removed;
SELECT id FROM plain ORDER BY id;
ROLLBACK;
SELECT ttl_index_drop('plain');

SELECT column_name, path, numeric_unit FROM ttl_index_create('plain', 'on_day', interval '1 day');
SELECT indexdef FROM pg_indexes WHERE indexname = 'plain_ttl_idx';
BEGIN;
SELECT ttl_expire_now('plain') AS removed;
SELECT id FROM plain ORDER BY id;
ROLLBACK;
SELECT ttl_index_drop('plain');

-- negative Unix times never expire
SELECT column_name, path, numeric_unit FROM ttl_index_create('plain', 'epoch_s', interval '1 day');
SELECT indexdef FROM pg_indexes WHERE indexname = 'plain_ttl_idx';
BEGIN;
SELECT ttl_expire_now('plain') AS removed;
SELECT id FROM plain ORDER BY id;
ROLLBACK;
SELECT ttl_index_drop('plain');

SELECT column_name, path, numeric_unit FROM ttl_index_create('plain', 'epoch_ms', interval '1 day', 'ms');
SELECT indexdef FROM pg_indexes WHERE indexname = 'plain_ttl_idx';
BEGIN;
SELECT ttl_expire_now('plain') AS removed;
SELECT id FROM plain ORDER BY id;
ROLLBACK;

-- the reference time of a number column
SELECT jsonb_ttl_internal.ttl_unix_timestamp(1550165973, 's'), jsonb_ttl_internal.ttl_unix_timestamp(1550165973123, 'ms'),
       jsonb_ttl_internal.ttl_unix_timestamp(-1, 's') AS negative;
DROP TABLE plain;
RESET TimeZone;
