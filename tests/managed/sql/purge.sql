-- ttl_purge(), the procedure pg_cron calls, as app_a: batches each committed, within the limits
-- per table and per run, the safety brake (at creation and during a run), its release, and
-- the statistics it keeps.
SET search_path = a, jsonb_ttl;
SET TimeZone = 'UTC';

-- each batch its own transaction: a statement trigger logs the transaction of each DELETE
CREATE TABLE logs (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE delete_log (xid xid8, rows bigint);
CREATE FUNCTION a.log_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO a.delete_log SELECT pg_current_xact_id(), count(*) FROM gone;
    RETURN NULL;
END $$;
CREATE TRIGGER log_delete AFTER DELETE ON logs REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION a.log_delete();
INSERT INTO logs (doc) SELECT jsonb_build_object('at', extract(epoch FROM now() - interval '2 hours')::bigint)
FROM generate_series(1, 3000);
INSERT INTO logs (doc) SELECT jsonb_build_object('at', extract(epoch FROM now())::bigint)
FROM generate_series(1, 3000);
-- 3,000 of 6,000 rows expired: under brake_min_rows (10,000), so no brake
SELECT rows_expired, paused FROM ttl_index_create('logs', 'at', '1 hour');
CALL ttl_purge(batch_size => 500);
SELECT count(*) AS left_in_logs FROM logs;
SELECT count(DISTINCT xid) >= 6 AS several_transactions, sum(rows) AS deleted, max(rows) <= 500 AS batches_within_batch_size
FROM delete_log;
SELECT table_name, runs, rows_deleted, last_rows_deleted, limit_reached, errors, backlog, oldest_expired, paused, skipped
FROM ttl_stats WHERE table_name = 'logs'::regclass;
SELECT runs, rows_deleted >= 3000 AS counted FROM ttl_statistics();

-- limits: per table, per run
INSERT INTO logs (doc) SELECT jsonb_build_object('at', 1000) FROM generate_series(1, 1000);
CREATE TABLE other (id int, doc jsonb);
SELECT rows_expired FROM ttl_index_create('other', 'at', 0);
INSERT INTO other SELECT i, jsonb_build_object('at', 1000) FROM generate_series(1, 1000) i;
CALL ttl_purge(max_table_removes => 300, batch_size => 100);
SELECT (SELECT count(*) FROM logs WHERE (doc->>'at')::bigint = 1000) AS logs_left,
       (SELECT count(*) FROM other) AS other_left;
SELECT table_name, last_rows_deleted, limit_reached, backlog FROM ttl_stats ORDER BY table_name::text;
CALL ttl_purge(max_total_removes => 500, batch_size => 100);
SELECT (SELECT count(*) FROM logs WHERE (doc->>'at')::bigint = 1000) + (SELECT count(*) FROM other) AS left_after_a_run_of_500;
CALL ttl_purge();
SELECT (SELECT count(*) FROM logs WHERE (doc->>'at')::bigint = 1000) + (SELECT count(*) FROM other) AS left_after_another_run;

-- the held first backlog: 15,000 of 20,000 rows expired at creation
CREATE TABLE big (id int, doc jsonb);
INSERT INTO big SELECT i, jsonb_build_object('at', CASE WHEN i <= 15000 THEN '2001-01-01' ELSE '2999-01-01' END)
FROM generate_series(1, 20000) i;
ANALYZE big;
\set VERBOSITY terse
-- (the NOTICE's DETAIL and HINT give the dates as read, now, and what to check)
SELECT rows_expired, paused FROM ttl_index_create('big', 'at', '1 day');
\set VERBOSITY verbose
SELECT paused_by FROM ttl_indexes WHERE table_name = 'big'::regclass;
CALL ttl_purge();
SELECT count(*) AS big_kept_while_held FROM big;
SELECT skipped, paused FROM ttl_stats WHERE table_name = 'big'::regclass;
SELECT ttl_index_resume('big');
CALL ttl_purge();
SELECT count(*) AS big_after_resume FROM big;
-- drained: the brake holds again for the next backlog (20,000 rows that expire within 2 seconds)
SELECT brake_released FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'big'::regclass;
SELECT expire_after FROM ttl_index_alter('big', expire_after => '1 second');
INSERT INTO big SELECT i, jsonb_build_object('at', now()) FROM generate_series(1, 20000) i;
ANALYZE big;
SELECT pg_sleep(2);
CALL ttl_purge();
SELECT count(*) AS big_kept_by_the_brake FROM big;
SELECT paused_by, paused_reason LIKE 'more than % row(s) would expire at once%' AS reason FROM ttl_indexes WHERE table_name = 'big'::regclass;
-- the brake's settings, as the Rust edition's: max_table_fraction 1 turns it off
SELECT ttl_index_resume('big');
SET jsonb_ttl.max_table_fraction = 1;
CALL ttl_purge();
SELECT count(*) AS big_after_the_brake_is_off FROM big;
RESET jsonb_ttl.max_table_fraction;

-- a paused TTL index is left alone; a dropped table's definition is cleaned up
SELECT ttl_index_pause('other');
INSERT INTO other VALUES (1, '{"at": 1000}');
CALL ttl_purge();
SELECT count(*) AS other_kept_while_paused FROM other;
DROP TABLE other;
CALL ttl_purge();
SELECT count(*) AS definitions_left FROM jsonb_ttl_internal.ttl_index;

-- a row the DELETE fails on (a trigger raises for it) is set aside: the rows around it go
CREATE TABLE guarded (id int PRIMARY KEY, doc jsonb);
CREATE FUNCTION a.guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.id = 7 THEN
        RAISE EXCEPTION 'row 7 is kept by law';
    END IF;
    RETURN OLD;
END $$;
CREATE TRIGGER guard BEFORE DELETE ON guarded FOR EACH ROW EXECUTE FUNCTION a.guard();
SELECT index_name FROM ttl_index_create('guarded', 'at', 0);
INSERT INTO guarded SELECT i, jsonb_build_object('at', 1000 + i) FROM generate_series(1, 20) i;
CALL ttl_purge(batch_size => 50);
SELECT string_agg(id::text, ',') AS guarded_left FROM guarded;
SELECT rows_undeletable, errors, last_error FROM ttl_stats WHERE table_name = 'guarded'::regclass;
CALL ttl_purge();
SELECT rows_undeletable, errors FROM ttl_stats WHERE table_name = 'guarded'::regclass;
-- mended: ttl_index_resume() has it tried again
DROP TRIGGER guard ON guarded;
SELECT ttl_index_resume('guarded') AS was_paused;
CALL ttl_purge();
SELECT count(*) AS guarded_left, (SELECT rows_undeletable FROM ttl_stats WHERE table_name = 'guarded'::regclass)
FROM guarded;

-- max_removes_per_second: the TTL index's own, under ttl_purge()'s (0, none, by default): 250
-- expired rows at 100 a second take 2.5 s, in batches of a tenth of that
CREATE TABLE paced (id int, doc jsonb);
SELECT max_removes_per_second FROM ttl_index_create('paced', 'at', 0, max_removes_per_second => 100);
INSERT INTO paced SELECT i, jsonb_build_object('at', 1000 + i) FROM generate_series(1, 250) i;
SELECT clock_timestamp() AS paced_start \gset
CALL ttl_purge();
SELECT count(*) AS paced_left, clock_timestamp() - :'paced_start'::timestamptz >= interval '2 seconds' AS took_its_time FROM paced;
SELECT max_removes_per_second FROM ttl_index_alter('paced', max_removes_per_second => 0);
SELECT ttl_index_alter('paced', max_removes_per_second => -1);
CALL ttl_purge(max_removes_per_second => -1);
-- a TTL index's own rate holds up no other table: the run visits such tables last (quick,
-- created after slow, before it), so a run of 1 s empties quick and takes about 10 rows of slow
CREATE TABLE slow (id int, doc jsonb);
SELECT max_removes_per_second FROM ttl_index_create('slow', 'at', 0, max_removes_per_second => 10);
CREATE TABLE quick (id int, doc jsonb);
SELECT max_removes_per_second FROM ttl_index_create('quick', 'at', 0);
INSERT INTO slow SELECT i, jsonb_build_object('at', 1000 + i) FROM generate_series(1, 100) i;
INSERT INTO quick SELECT i, jsonb_build_object('at', 1000 + i) FROM generate_series(1, 100) i;
CALL ttl_purge(max_run_time => '1 second');
SELECT (SELECT count(*) FROM quick) AS quick_left, (SELECT count(*) FROM slow) BETWEEN 80 AND 99 AS slow_paced,
       (SELECT limit_reached FROM ttl_stats WHERE table_name = 'slow'::regclass) AS slow_limit_reached,
       (SELECT last_run_at FROM ttl_stats WHERE table_name = 'quick'::regclass)
       < (SELECT last_run_at FROM ttl_stats WHERE table_name = 'slow'::regclass) AS quick_visited_first;
DROP TABLE slow, quick;

-- delete_window: ttl_purge() deletes only inside it, the time of day in the index's time zone
-- (UTC without one); ttl_expire_now() with no table leaves the table too, a named one is purged
CREATE TABLE windowed (id int, doc jsonb);
SELECT delete_window FROM ttl_index_create('windowed', 'at', 0, delete_window => '01:00-05:00');
INSERT INTO windowed SELECT i, jsonb_build_object('at', 1000 + i) FROM generate_series(1, 3) i;
-- a window that starts two hours from now
SELECT delete_window IS NOT NULL AS has_window
FROM ttl_index_alter('windowed', delete_window => to_char(now() AT TIME ZONE 'UTC' + interval '2 hours', 'HH24:MI') || '-'
                                                  || to_char(now() AT TIME ZONE 'UTC' + interval '3 hours', 'HH24:MI'));
CALL ttl_purge();
SELECT count(*) AS windowed_left FROM windowed;
SELECT skipped ~ '^outside its delete_window \d\d:\d\d-\d\d:\d\d \(UTC\)$' AS skipped_outside FROM ttl_stats WHERE table_name = 'windowed'::regclass;
SELECT ttl_expire_now() AS removed;
SELECT ttl_expire_now('windowed', 1) AS removed_named;
SELECT count(*) AS windowed_left FROM windowed;
-- the window around now, in another time zone
SELECT delete_window IS NOT NULL AS has_window
FROM ttl_index_alter('windowed', time_zone => 'Asia/Kolkata',
                     delete_window => to_char(now() AT TIME ZONE 'Asia/Kolkata' - interval '1 hour', 'HH24:MI') || '-'
                                      || to_char(now() AT TIME ZONE 'Asia/Kolkata' + interval '1 hour', 'HH24:MI'));
CALL ttl_purge();
SELECT count(*) AS windowed_left FROM windowed;
SELECT skipped FROM ttl_stats WHERE table_name = 'windowed'::regclass;
-- '' removes it; bad windows
SELECT delete_window FROM ttl_index_alter('windowed', delete_window => '');
SELECT delete_window FROM ttl_indexes WHERE table_name = 'windowed'::regclass;
SELECT ttl_index_alter('windowed', delete_window => '25:00-01:00');
SELECT ttl_index_alter('windowed', delete_window => '01:00-01:00');
SELECT ttl_index_alter('windowed', delete_window => 'nightly');
SELECT ttl_index_create('windowed', 'at', 0, delete_window => '1-5');

-- a deferred foreign key (Django's DEFERRABLE INITIALLY DEFERRED) is checked at the DELETE, not at
-- the COMMIT, where it would end the whole run: the row it refuses is set aside
CREATE TABLE parents (id int PRIMARY KEY, doc jsonb);
CREATE TABLE children (id int, parent_id int REFERENCES parents DEFERRABLE INITIALLY DEFERRED);
SELECT index_name FROM ttl_index_create('parents', 'at', 0);
INSERT INTO parents SELECT i, jsonb_build_object('at', 1000 + i) FROM generate_series(1, 5) i;
INSERT INTO children VALUES (1, 3);
CALL ttl_purge();
SELECT string_agg(id::text, ',') AS parents_left FROM parents;
SELECT rows_undeletable FROM ttl_stats WHERE table_name = 'parents'::regclass;

-- an expired row for the next tests (tests/managed/sql/security.sql): app_b may read and delete
-- the table's rows, but does not own it
INSERT INTO logs (doc) VALUES ('{"at": 1000}');
GRANT USAGE ON SCHEMA a TO app_b;
GRANT SELECT, DELETE ON logs TO app_b;

-- bad arguments
CALL ttl_purge(batch_size => 0);
-- inside a transaction block, COMMIT is refused (pg_cron and psql's autocommit call it outside one)
BEGIN;
CALL ttl_purge();
ROLLBACK;
