-- A timestamp (without time zone) column holds a local time. A TTL index reads it in its own
-- time zone, never a guessed one: the time_zone argument, or the zone the table owner's own
-- sessions get (its role's settings, the database's, else postgresql.conf: here UTC) when the
-- session creating the index has that zone too. When the two differ (a DBA's psql in New York, an
-- application that sets its sessions' zone itself), nothing says which of them writes the rows:
-- creation asks for time_zone. The zone is stored with the index and shown in ttl_indexes; the
-- worker never uses its own session's.
-- express-session's connect-pg-simple, for one, writes expire = to_timestamp(…) into a
-- timestamp column: in the application's (UTC) session that is UTC wall time.
\set SHOW_CONTEXT never
CREATE TABLE web_sessions (sid text PRIMARY KEY, sess json NOT NULL, expire timestamp(6) NOT NULL);
INSERT INTO web_sessions VALUES
  ('gone',      '{}', to_timestamp(extract(epoch FROM now()) - 60)),     -- expired a minute ago
  ('for-1h',    '{}', to_timestamp(extract(epoch FROM now()) + 3600)),   -- an hour to live
  ('for-5h',    '{}', to_timestamp(extract(epoch FROM now()) + 5 * 3600));
-- the DBA's session is in New York, the owner's default is UTC: which one? creation asks
SET TimeZone = 'America/New_York';
SELECT index_name FROM ttl_index_create('web_sessions', 'expire', 0);
-- told, it reads the column in UTC
SELECT index_name, column_name, expire_after, time_zone
FROM ttl_index_create('web_sessions', 'expire', 0, time_zone => 'UTC');
SELECT indexdef FROM pg_indexes WHERE indexname = 'web_sessions_ttl_idx';
SELECT table_name, path, time_zone FROM ttl_indexes;

-- a table whose owner's sessions are in New York (ALTER ROLE … SET TimeZone), indexed from a
-- New York session: the same zone, taken without asking
CREATE ROLE regress_tz_owner;
ALTER ROLE regress_tz_owner SET TimeZone = 'America/New_York';
CREATE TABLE ny_sessions (sid text, expire timestamp);
ALTER TABLE ny_sessions OWNER TO regress_tz_owner;
SELECT time_zone FROM ttl_index_create('ny_sessions', 'expire', 0);
DROP TABLE ny_sessions;
DROP ROLE regress_tz_owner;

-- whatever the TimeZone of the session that purges (the worker's is the database's), only the
-- expired session goes: read in New York's zone, the two live ones (UTC wall times, 5 hours
-- ahead of New York's) would look 5 hours older, and the one with an hour to live would go too
SET TimeZone = 'Asia/Tokyo';
BEGIN;
SELECT ttl_expire_now('web_sessions') AS removed;
SELECT sid FROM web_sessions ORDER BY sid;
ROLLBACK;
SET TimeZone = 'UTC';
SELECT ttl_expire_now('web_sessions') AS removed;
SELECT sid FROM web_sessions ORDER BY sid;

-- time_zone can be given, and changed: the zone is part of the index expression, so
-- ttl_index_alter(time_zone => …) rebuilds the TTL index under the same name (CREATE INDEX
-- takes a SHARE lock: writes wait for the build)
SELECT index_name, time_zone FROM ttl_index_alter('web_sessions', time_zone => 'Europe/Paris');
SELECT indexdef FROM pg_indexes WHERE tablename = 'web_sessions' AND indexname LIKE '%ttl%';
SELECT index_name, time_zone FROM ttl_indexes;
SELECT ttl_index_drop('web_sessions');
SELECT index_name, time_zone
FROM ttl_index_create('web_sessions', 'expire', 0, time_zone => 'America/New_York');

-- a date column is midnight in the zone
CREATE TABLE coupons (code text, valid_until date);
SELECT column_name, time_zone FROM ttl_index_create('coupons', 'valid_until', interval '1 day',
                                                    time_zone => 'Pacific/Auckland');
SELECT indexdef FROM pg_indexes WHERE indexname = 'coupons_ttl_idx';

-- daylight saving time, read as PostgreSQL reads it everywhere: a local time in the spring-forward
-- gap (02:30 on 2026-03-08 does not exist in New York) is taken as standard time, 07:30 UTC;
-- one in the fall-back overlap (01:30 on 2026-11-01 happens twice) is taken as standard time,
-- the later of the two, 06:30 UTC
SET TimeZone = 'UTC';
SELECT local, local AT TIME ZONE 'America/New_York' AS read_as
FROM (VALUES (timestamp '2026-03-08 01:59:59'), (timestamp '2026-03-08 02:30'),
             (timestamp '2026-03-08 03:00'), (timestamp '2026-11-01 00:59:59'),
             (timestamp '2026-11-01 01:30'), (timestamp '2026-11-01 02:00')) t(local);

-- bad arguments
SELECT ttl_index_alter('coupons', time_zone => 'Mars/Olympus_Mons');
SELECT ttl_index_alter('coupons');
CREATE TABLE events (id int, doc jsonb, at timestamptz);
SELECT ttl_index_create('events', 'at', 0, time_zone => 'UTC');
DROP TABLE web_sessions, coupons, events;
