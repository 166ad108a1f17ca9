-- TTL deletes that triggers can tell apart. While jsonb_ttl removes expired rows (the worker's
-- batches, ttl_expire_now()) or fields (field_ttl.sql), the setting jsonb_ttl.expiring is on;
-- everywhere else it is off.
-- A statement trigger with a transition table reads it, and rolls the expired rows up into a
-- summary that outlives them, leaving the application's own deletes alone.
\set SHOW_CONTEXT never
SHOW jsonb_ttl.expiring;

CREATE TABLE events (id bigint PRIMARY KEY, doc jsonb);
SELECT index_name FROM ttl_index_create('events', 'at', interval '1 day');

-- the rollup: expired events per day and kind, kept after the raw rows go
CREATE TABLE events_daily (day date, kind text, expired bigint NOT NULL, PRIMARY KEY (day, kind));
CREATE FUNCTION roll_up_expired() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('jsonb_ttl.expiring', true) = 'on' THEN
        INSERT INTO events_daily AS d (day, kind, expired)
        SELECT (e.doc->>'at')::timestamptz::date, e.doc->>'kind', count(*)
        FROM expired e GROUP BY 1, 2
        ON CONFLICT (day, kind) DO UPDATE SET expired = d.expired + excluded.expired;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER roll_up AFTER DELETE ON events REFERENCING OLD TABLE AS expired
    FOR EACH STATEMENT EXECUTE FUNCTION roll_up_expired();

-- 120 events of three days in 2026 (expired), 10 of today (not)
INSERT INTO events
SELECT i, jsonb_build_object('at', timestamptz '2026-03-01 12:00+00' + (i % 3) * interval '1 day',
                             'kind', CASE WHEN i % 4 = 0 THEN 'login' ELSE 'click' END)
FROM generate_series(1, 120) i;
INSERT INTO events SELECT 1000 + i, jsonb_build_object('at', now(), 'kind', 'click')
FROM generate_series(1, 10) i;

-- the application's own delete is no TTL delete: nothing rolled up
DELETE FROM events WHERE id <= 12;
SELECT count(*) AS rolled_up FROM events_daily;

-- ttl_expire_now() is one: its 108 expired rows are counted, by day and kind
SELECT ttl_expire_now('events') AS removed;
SELECT day, kind, expired FROM events_daily ORDER BY day, kind;
SELECT sum(expired) AS rolled_up FROM events_daily;
SHOW jsonb_ttl.expiring;

-- the worker's batches are (one batch of the worker's, run here in this session)
INSERT INTO events
SELECT 2000 + i, jsonb_build_object('at', '2026-03-04 08:00+00', 'kind', 'logout')
FROM generate_series(1, 5) i;
SELECT jsonb_ttl_internal._ttl_worker_batch('events'::regclass, 1000) AS removed;
SELECT day, kind, expired FROM events_daily WHERE kind = 'logout';
SELECT count(*) AS left_unexpired FROM events;

-- a table owner's own ttl_expire_now() is a TTL delete too, though the owner may not set it
CREATE ROLE expiring_owner;
GRANT SELECT, INSERT, UPDATE ON events_daily TO expiring_owner;
ALTER TABLE events OWNER TO expiring_owner;
INSERT INTO events
SELECT 3000 + i, jsonb_build_object('at', '2026-03-05 08:00+00', 'kind', 'purge')
FROM generate_series(1, 3) i;
SET ROLE expiring_owner;
SELECT ttl_expire_now('events') AS removed;
SELECT day, kind, expired FROM events_daily WHERE kind = 'purge';
SHOW jsonb_ttl.expiring;
SET jsonb_ttl.expiring = on;
SELECT set_config('jsonb_ttl.expiring', 'on', true);
RESET ROLE;
ALTER SYSTEM SET jsonb_ttl.expiring = on;

-- a delete that fails leaves it off: the error rolls it back with the statement
CREATE FUNCTION hold_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'row % is on hold', OLD.id;
END
$$;
CREATE TRIGGER hold BEFORE DELETE ON events FOR EACH ROW
    WHEN (OLD.doc->>'kind' = 'hold') EXECUTE FUNCTION hold_row();
INSERT INTO events VALUES (4000, '{"at": "2026-03-06 08:00+00", "kind": "hold"}');
BEGIN;
SAVEPOINT before_purge;
SELECT ttl_expire_now('events') AS removed;
ROLLBACK TO SAVEPOINT before_purge;
SHOW jsonb_ttl.expiring;
COMMIT;

-- owner code that runs RESET ALL mid-purge leaves it on: the rest of the purge is still a TTL
-- delete to the triggers it fires (jsonb_ttl.expiring is not reset by RESET ALL)
DROP TRIGGER hold ON events;
DELETE FROM events;
CREATE TABLE seen_expiring (id int, expiring text);
GRANT INSERT ON seen_expiring TO expiring_owner;
CREATE FUNCTION reset_all_then_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RESET ALL;
    INSERT INTO seen_expiring VALUES (OLD.id, current_setting('jsonb_ttl.expiring'));
    RETURN OLD;
END
$$;
CREATE TRIGGER reset_all BEFORE DELETE ON events FOR EACH ROW EXECUTE FUNCTION reset_all_then_note();
INSERT INTO events SELECT 5000 + i, '{"at": "2026-03-06 08:00+00", "kind": "reset"}' FROM generate_series(1, 3) i;
SELECT ttl_expire_now('events') AS removed;
SELECT id, expiring FROM seen_expiring ORDER BY id;
SHOW jsonb_ttl.expiring;

DROP TABLE events, events_daily, seen_expiring;
DROP FUNCTION roll_up_expired(), hold_row(), reset_all_then_note();
DROP ROLE expiring_owner;
