-- Tables other tables reference. Django declares every foreign key DEFERRABLE INITIALLY
-- DEFERRED; a deferred check cannot be queued inside the security-restricted operation the
-- deletes run in (as the table's owner), so jsonb_ttl makes the checks of the keys that
-- reference a TTL table immediate before it deletes: a violation belongs to a row, at the end
-- of the DELETE. The worker then sets such rows aside (ttl_stats.rows_undeletable) and purges
-- the rest (tests/e2e/real_schemas.sh); ttl_expire_now, in the caller's transaction, raises.
\set SHOW_CONTEXT never
CREATE TABLE django_session (session_key text PRIMARY KEY, expire_date timestamptz NOT NULL);
CREATE TABLE app_visit (id int, session_id text
    REFERENCES django_session DEFERRABLE INITIALLY DEFERRED);
SELECT index_name FROM ttl_index_create('django_session', 'expire_date', 0);
INSERT INTO django_session SELECT 'k' || g, now() - interval '1 day' FROM generate_series(1, 5) g;
INSERT INTO django_session VALUES ('live', now() + interval '1 day');

-- no referencing row: the expired sessions go
SELECT ttl_expire_now('django_session') AS removed;
SELECT session_key FROM django_session;

-- a referencing row: the check runs at the end of the DELETE, not at commit
INSERT INTO django_session VALUES ('kept', now() - interval '1 day');
INSERT INTO app_visit VALUES (1, 'kept');
SELECT ttl_expire_now('django_session') AS removed;

-- the key's check stays immediate for the rest of the caller's transaction; other deferred
-- keys are left as they were
DROP TABLE app_visit, django_session;
