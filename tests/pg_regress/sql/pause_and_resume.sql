-- What a pause and a resume do, and what ttl_expire_now does with a paused TTL index (and
-- with a table that is NULL).
-- (tests/e2e/governs.sh has the worker obey a pause, an alter and the brake mid-visit.)
\set SHOW_CONTEXT never
\set VERBOSITY default
CREATE TABLE sessions (id int, doc jsonb);
INSERT INTO sessions SELECT g, jsonb_build_object('seen', now() - g * interval '1 hour') FROM generate_series(1, 48) g;
SELECT index_name, rows_expired FROM ttl_index_create('sessions', 'seen', '1 day');

-- Creating the index reviewed its first backlog: the safety brake lets it go.
SELECT brake_released FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'sessions'::regclass;

-- A pause says why in at most 1 kB: it is shown in ttl_stats and read with every TTL index.
SELECT ttl_index_pause('sessions', repeat('x', 1025));
SELECT ttl_index_pause('sessions', 'archiving to cold storage first');

-- Paused, ttl_expire_now() leaves the table as the worker does, and says so; naming the table
-- is refused, with the way out in the HINT.
SELECT ttl_expire_now();
SELECT ttl_expire_now('sessions');
SELECT count(*) FROM sessions;

-- An operator's resume ends only the operator's pause: the brake is as it was (still released
-- for the first backlog here) ...
SELECT ttl_index_resume('sessions');
SELECT paused_at IS NULL AS running, brake_released FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'sessions'::regclass;

-- ... but any alter that can widen what expires holds the brake again (a shorter expire_after,
-- another filter or time zone), and a pause and resume around it releases nothing.
SELECT ttl_index_pause('sessions');
SELECT expire_after FROM ttl_index_alter('sessions', interval '2 hours');
SELECT ttl_index_resume('sessions');
SELECT paused_at IS NULL AS running, brake_released FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'sessions'::regclass;

-- A table name mistyped through to_regclass() is NULL: an error, not a purge of every table.
SELECT ttl_expire_now(to_regclass('sesions'));

-- Running, ttl_expire_now purges (the brake is the worker's, not the operator's).
SELECT ttl_expire_now('sessions');
SELECT count(*) FROM sessions;
SELECT ttl_index_drop('sessions');
DROP TABLE sessions;
