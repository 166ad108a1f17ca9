-- The SQL face, as app_a (a table owner, no superuser): create, the identical create again, a
-- different one, alter, pause and resume, preview, ttl_expire_now, drop; each kind of column;
-- per-row TTL and filter; argument errors with their SQLSTATE and HINT.

SET search_path = a, jsonb_ttl;
SET TimeZone = 'UTC';
SELECT jsonb_ttl.ttl_edition() LIKE 'jsonb_ttl % (SQL edition, for managed services)' AS edition;

CREATE TABLE events (id bigserial PRIMARY KEY, doc jsonb NOT NULL);
SELECT index_name, table_name, column_name, path, expire_after, numeric_unit, is_newly_created, paused, rows_expired
FROM ttl_index_create('events', 'creationDate', interval '10 minutes');
SELECT indexdef FROM pg_indexes WHERE indexname = 'events_ttl_idx';
INSERT INTO events (doc) VALUES ('{"creationDate": 1550165973}'),
                                ('{"creationDate": "2019-02-14T17:39:33.000Z"}'),
                                ('{"creationDate": "2999-01-01"}'),
                                ('{"other": 1}');
SELECT rows, oldest, newest FROM ttl_expire_preview('events');
SELECT rows FROM ttl_expire_preview('events', at => '2019-01-01');
-- the identical TTL index again: no error; another one: an error naming ttl_index_alter
SELECT is_newly_created FROM ttl_index_create('events', 'creationDate', '600');
SELECT ttl_index_create('events', 'creationDate', 3600);
SELECT table_name, column_name, path, json_path, expire_after, numeric_unit, index_name, paused_at IS NULL AS running, filter, row_ttl_path
FROM ttl_indexes;
SELECT ttl_expire_now('events') AS removed;
SELECT id FROM events ORDER BY id;
SELECT ttl_expire_now('events') AS removed_again;

-- alter: expire_after is a catalog update (the index is kept), the path rebuilds it
SELECT (SELECT index_oid FROM jsonb_ttl_internal.ttl_index) AS before_oid \gset
SELECT expire_after FROM ttl_index_alter('events', expire_after => '2 days');
SELECT index_oid = :before_oid AS same_index FROM jsonb_ttl_internal.ttl_index;
SELECT path, numeric_unit FROM ttl_index_alter('events', path => 'meta.at', numeric_unit => 'ms');
SELECT indexdef FROM pg_indexes WHERE tablename = 'events';
SELECT ttl_index_alter('events');
SELECT ttl_index_alter('events', touch => true);

-- pause and resume: a paused TTL index removes nothing, even when asked
INSERT INTO events (doc) VALUES ('{"meta": {"at": 1000}}');
SELECT ttl_index_pause('events', 'looking at it') AS paused, ttl_index_pause('events') AS paused_again;
SELECT paused_by, paused_reason FROM ttl_indexes;
SELECT ttl_expire_now('events');
SELECT ttl_expire_now() AS every_table_mine;
SELECT ttl_index_resume('events') AS resumed, ttl_index_resume('events') AS resumed_again;
SELECT ttl_expire_now() AS every_table_mine;

-- each kind of column
CREATE TABLE kinds (id int, created timestamptz, local_at timestamp, day date, unix numeric, ms bigint, txt text, j json);
SELECT index_name, column_name FROM ttl_index_create('kinds', 'created', 0);
SELECT indexdef FROM pg_indexes WHERE tablename = 'kinds';
SELECT ttl_index_drop('kinds');
SELECT time_zone FROM ttl_index_create('kinds', 'local_at', '1 day', time_zone => 'America/New_York');
SELECT indexdef FROM pg_indexes WHERE tablename = 'kinds';
SELECT ttl_index_drop('kinds');
SELECT time_zone FROM ttl_index_create('kinds', 'day', '1 day', time_zone => 'Asia/Tokyo');
SELECT ttl_index_drop('kinds');
SELECT index_name FROM ttl_index_create('kinds', 'ms', '1 day', numeric_unit => 'ms');
SELECT indexdef FROM pg_indexes WHERE tablename = 'kinds';
SELECT ttl_index_drop('kinds');
SELECT index_name FROM ttl_index_create('kinds', 'txt', '1 day');
SELECT indexdef FROM pg_indexes WHERE tablename = 'kinds';
SELECT ttl_index_drop('kinds');
SELECT index_name FROM ttl_index_create('kinds', 'j."a.b".c', '1 day');
SELECT indexdef FROM pg_indexes WHERE tablename = 'kinds';
INSERT INTO kinds (id, j) VALUES (1, '{"a.b": {"c": "2000-01-01"}}'), (2, '{"a.b": {"c": "2999-01-01"}}');
SELECT ttl_expire_now('kinds') AS removed;
SELECT ttl_index_drop('kinds');
SELECT ttl_index_drop('kinds', if_exists => true);
SELECT ttl_index_drop(to_regclass('nothing_here'), if_exists => true);

-- a per-row TTL (seconds in the row, -1: never) and a filter
CREATE TABLE sessions (id int, doc jsonb);
SELECT index_name, row_ttl_path, filter FROM ttl_index_create('sessions', 'at', 3600, row_ttl_path => 'ttl',
                                                              filter => $$doc->>'kind' = 'temp'$$);
SELECT indexname FROM pg_indexes WHERE tablename = 'sessions' ORDER BY 1;
INSERT INTO sessions VALUES
  (1, '{"at": "2000-01-01", "kind": "temp"}'),               -- expire_after: expired
  (2, '{"at": "2000-01-01", "kind": "keep"}'),               -- the filter keeps it
  (3, jsonb_build_object('at', now() - interval '10 seconds', 'kind', 'temp', 'ttl', 1)),      -- its own TTL: expired
  (4, jsonb_build_object('at', now() - interval '10 seconds', 'kind', 'temp', 'ttl', 100000)), -- its own TTL: not yet
  (5, '{"at": "2000-01-01", "kind": "temp", "ttl": -1}');    -- never
SELECT rows FROM ttl_expire_preview('sessions');
SELECT ttl_expire_now('sessions') AS removed;
SELECT id FROM sessions ORDER BY id;
SELECT row_ttl_path IS NULL AS row_ttl_removed FROM ttl_index_alter('sessions', row_ttl_path => '');
SELECT indexname FROM pg_indexes WHERE tablename = 'sessions' ORDER BY 1;

-- hostile names: every name reaches SQL through format('%I'), %L or regclass
CREATE TABLE "we""ird; name" ("my doc" jsonb, "x"")--" int);
SELECT index_name, column_name, path FROM ttl_index_create('"we""ird; name"', '"my doc"."a.b"."it''s"', 0);
SELECT indexdef FROM pg_indexes WHERE tablename = 'we"ird; name';
INSERT INTO "we""ird; name" VALUES ('{"a.b": {"it''s": "2001-01-01"}}', 1), ('{"a.b": {"it''s": "2999-01-01"}}', 2);
SELECT ttl_expire_now('"we""ird; name"') AS removed;
SELECT "x"")--" FROM "we""ird; name";
SELECT ttl_index_drop('"we""ird; name"');

-- argument errors: SQLSTATE and HINT
SELECT ttl_index_create(NULL, 'at', 1);
SELECT ttl_index_create('sessions', 'at', -1);
SELECT ttl_index_create('sessions', 'at', 'soon');
SELECT ttl_index_create('events2', 'at', 1);
CREATE TABLE plain (id int, name text, n numeric, flag boolean);
SELECT ttl_index_create('plain', 'at', 1);
SELECT ttl_index_create('plain', 'flag', 1);
SELECT ttl_index_create('plain', 'n.x', 1);
SELECT ttl_index_create('plain', 'n', 1, numeric_unit => 'us');
SELECT ttl_index_create('plain', 'n', 1, time_zone => 'Nowhere/Atlantis');
SELECT ttl_index_create('plain', 'n', 1, filter => $$n > 0; DROP TABLE plain$$);
SELECT ttl_index_create('plain', 'n', 1, filter => $$n > 0) OR (true$$);
SELECT ttl_index_create('plain', 'n', 1, filter => $$a.my_function(n)$$);
SELECT ttl_index_create('plain', '"unterminated', 1);
SELECT ttl_index_create('plain', 'n', 1, archive_to => 'events');
SELECT ttl_expire_now(NULL);
SELECT ttl_expire_now('plain');
SELECT ttl_timestamp('1', 'us');
SELECT ttl_timestamp('"2026-11-23T10:00:00"', 's', 'Nowhere/Atlantis');
CREATE TABLE parted (id int, doc jsonb) PARTITION BY RANGE (id);
SELECT ttl_index_create('parted', 'at', 1);
CREATE VIEW a_view AS SELECT 1 AS x;
SELECT ttl_index_create('a_view', 'x', 1);
