-- The operator's controls of a TTL index: pause and resume by hand, create it paused (nothing
-- goes before someone looks), a daily delete window in the index's time zone, and its own
-- batch and rate limits under the server's settings; all shown in ttl_indexes. And the first
-- backlog: ttl_index_create says how many rows are expired already and what the worker will
-- do with them. (tests/e2e/controls.sh has the worker obey them.)
\set SHOW_CONTEXT never
CREATE TABLE logs (id int, doc jsonb);
INSERT INTO logs SELECT g, jsonb_build_object('ts', now() - g * interval '1 hour') FROM generate_series(1, 48) g;

-- The first backlog: 25 of the 48 rows are a day old or more. Creating the index is their review:
-- the worker deletes them from its next pass on, and the safety brake lets them go.
SELECT index_name, rows_expired, paused FROM ttl_index_create('logs', 'ts', '1 day');
SELECT brake_released FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'logs'::regclass;
SELECT ttl_index_drop('logs');

-- Created paused: nothing goes before ttl_index_resume().
SELECT index_name, rows_expired, paused FROM ttl_index_create('logs', 'ts', '1 day', paused => true);
SELECT paused_by, paused_reason LIKE 'paused by % created paused' AS reason, paused_at IS NOT NULL AS since
FROM ttl_indexes WHERE table_name = 'logs'::regclass;
SELECT paused, paused_by, skipped LIKE 'paused by %' AS skipped, errors FROM ttl_stats WHERE table_name = 'logs'::regclass;
SELECT ttl_index_resume('logs');
SELECT paused_by, paused_at FROM ttl_indexes WHERE table_name = 'logs'::regclass;
SELECT ttl_index_resume('logs');  -- not paused: nothing to do

-- Pause by hand, with a reason; again: it was paused already.
SELECT ttl_index_pause('logs', 'migrating the archive');
SELECT paused_by, paused_reason LIKE 'paused by %: migrating the archive' AS reason FROM ttl_indexes WHERE table_name = 'logs'::regclass;
SELECT ttl_index_pause('logs');
SELECT ttl_index_resume('logs');

-- Creating it again is a no-op with the same controls, refused with others (ttl_index_alter
-- changes them).
SELECT is_newly_created FROM ttl_index_create('logs', 'ts', '1 day');
SELECT is_newly_created FROM ttl_index_create('logs', 'ts', '1 day', batch_size => 500);
SELECT is_newly_created FROM ttl_index_create('logs', 'ts', '1 day', paused => true);

-- A delete window, in the index's time zone (UTC without one); across midnight too.
SELECT delete_window FROM ttl_index_alter('logs', delete_window => '01:00-05:00');
SELECT delete_window FROM ttl_index_alter('logs', delete_window => '22:30-6:00');
SELECT delete_window FROM ttl_index_alter('logs', delete_window => '');
SELECT ttl_index_alter('logs', delete_window => '01:00');
SELECT ttl_index_alter('logs', delete_window => '01:00-01:00');
SELECT ttl_index_alter('logs', delete_window => '25:00-05:00');
-- Outside the window, ttl_stats says so in skipped (a window of one minute, an hour from now).
SELECT delete_window IS NOT NULL AS set
FROM ttl_index_alter('logs', delete_window => to_char(now() AT TIME ZONE 'UTC' + interval '1 hour', 'HH24:MI') || '-' ||
                                              to_char(now() AT TIME ZONE 'UTC' + interval '61 minutes', 'HH24:MI'));
SELECT skipped LIKE 'outside its delete_window %-% (UTC)' AS outside FROM ttl_stats WHERE table_name = 'logs'::regclass;
SELECT delete_window IS NULL AS cleared FROM ttl_index_alter('logs', delete_window => 'off');
SELECT skipped FROM ttl_stats WHERE table_name = 'logs'::regclass;

-- Its own limits: they can only lower the server's (jsonb_ttl.batch_size,
-- jsonb_ttl.max_removes_per_second); 0 removes them.
SELECT batch_size, max_removes_per_second FROM ttl_index_alter('logs', batch_size => 500, max_removes_per_second => 2000);
SELECT batch_size, max_removes_per_second, delete_window FROM ttl_indexes WHERE table_name = 'logs'::regclass;
SELECT batch_size, max_removes_per_second FROM ttl_index_alter('logs', batch_size => 0);
SELECT ttl_index_alter('logs', batch_size => -1);
SELECT ttl_index_alter('logs', max_removes_per_second => -5);

-- What its deletes carry in the change stream (docs/change_streams.md).
SELECT replication_origin, logical_message FROM ttl_index_alter('logs', replication_origin => true, logical_message => true);
SELECT replication_origin, logical_message FROM ttl_indexes WHERE table_name = 'logs'::regclass;

-- A new filter rebuilds the index with it as its predicate; '' removes it.
SELECT filter FROM ttl_index_alter('logs', filter => $$doc ? 'ts'$$);
SELECT pg_get_expr(indpred, indrelid) FROM pg_index WHERE indrelid = 'logs'::regclass;
SELECT filter FROM ttl_index_alter('logs', filter => '');
SELECT pg_get_expr(indpred, indrelid) FROM pg_index WHERE indrelid = 'logs'::regclass;

-- Only the table's owner controls its TTL index.
CREATE ROLE controls_other;
SET ROLE controls_other;
SELECT ttl_index_pause('logs');
SELECT ttl_index_alter('logs', delete_window => '01:00-05:00');
RESET ROLE;
DROP ROLE controls_other;

-- The health columns of ttl_stats (the worker fills them: tests/e2e/controls.sh).
SELECT last_success_at, last_run_ms, backlog, rows_never_expire FROM ttl_stats WHERE table_name = 'logs'::regclass;
ANALYZE logs;
SELECT rows_never_expire FROM ttl_stats WHERE table_name = 'logs'::regclass;
INSERT INTO logs SELECT g, '{"ts": "not a date"}' FROM generate_series(100, 109) g;
INSERT INTO logs SELECT g, '{}' FROM generate_series(110, 114) g;
ANALYZE logs;
SELECT rows_never_expire FROM ttl_stats WHERE table_name = 'logs'::regclass;
DROP TABLE logs;
