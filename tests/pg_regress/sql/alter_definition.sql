-- ttl_index_alter(tbl, path => …, numeric_unit => …) mends the mistakes the creation's advice
-- tells of, in place: the TTL index is rebuilt on the new point in time (a new index under the
-- old name), the safety brake counts again what now expires (it may be most of the table), and
-- the advice is given on the new definition. Every other option stays.
\set SHOW_CONTEXT never

-- epoch milliseconds read as seconds (the year 58,000): nothing would ever expire
CREATE TABLE caches (id int, doc jsonb);
INSERT INTO caches SELECT i, jsonb_build_object('at', (extract(epoch FROM now() - interval '2 hours') * 1000)::bigint + i)
FROM generate_series(1, 10) i;
INSERT INTO caches SELECT i, jsonb_build_object('at', (extract(epoch FROM now()) * 1000)::bigint + i)
FROM generate_series(11, 20) i;
SELECT index_name FROM ttl_index_create('caches', 'at', interval '1 hour', touch => false);
SELECT rows FROM ttl_expire_preview('caches');
CREATE TEMP TABLE before AS SELECT c.oid FROM pg_class c WHERE c.relname = 'caches_ttl_idx';
-- the fix: no advice now, and the 10 rows two hours old expire
SELECT path, numeric_unit, index_name FROM ttl_index_alter('caches', numeric_unit => 'ms');
SELECT rows FROM ttl_expire_preview('caches');
-- a new index under the old name, recorded as the TTL index's
SELECT c.oid <> b.oid AS rebuilt, pg_get_indexdef(c.oid) LIKE '%''ms''%' AS reads_ms
FROM pg_class c, before b WHERE c.relname = 'caches_ttl_idx';
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'caches'::regclass;
-- the brake counts what the change lets expire (it was released at creation)
SELECT brake_released FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'caches'::regclass;
-- the same unit again: nothing changes
SELECT numeric_unit FROM ttl_index_alter('caches', numeric_unit => 'ms');
SELECT ttl_expire_now('caches') AS removed;

-- a misspelt key: the HINT of the advice names the one the documents hold
CREATE TABLE sessions (id int, doc jsonb);
INSERT INTO sessions SELECT i, jsonb_build_object('createdAt', now() - interval '2 days', 'user', i)
FROM generate_series(1, 100) i;
SELECT index_name FROM ttl_index_create('sessions', 'created_at', interval '1 day',
                                        filter => $$doc->>'user' <> '7'$$, touch => true);
SELECT rows FROM ttl_expire_preview('sessions');
SELECT path, column_name FROM ttl_index_alter('sessions', path => 'createdAt');
-- the filter and touch are kept: the touch trigger writes the new key
SELECT filter, touch FROM ttl_indexes WHERE table_name = 'sessions'::regclass;
UPDATE sessions SET doc = doc || '{"clicks": 1}' WHERE id = 1;
SELECT (doc->>'createdAt')::timestamptz > now() - interval '1 minute' AS touched FROM sessions WHERE id = 1;
SELECT rows FROM ttl_expire_preview('sessions');
-- a path into another column: a plain timestamptz column takes no time zone
ALTER TABLE sessions ADD COLUMN seen timestamptz DEFAULT now() - interval '3 days';
SELECT path, column_name, time_zone FROM ttl_index_alter('sessions', path => 'seen');
SELECT ttl_expire_now('sessions') AS removed;

-- a path the documents lack is taken, as at creation, with the advice
SELECT path FROM ttl_index_alter('sessions', path => 'doc.nope');
SELECT path FROM ttl_index_alter('sessions', path => 'seen');

-- a per-row TTL field added, changed, removed: the TTL index keeps the rows without one, a
-- second index the rows with one (docs/row_ttl.md)
CREATE TABLE items (id int, doc jsonb);
INSERT INTO items VALUES (1, jsonb_build_object('at', now() - interval '2 hours')),
                         (2, jsonb_build_object('at', now() - interval '2 hours', 'ttl', 86400)),
                         (3, jsonb_build_object('at', now() - interval '2 hours', 'life', 60));
SELECT index_name FROM ttl_index_create('items', 'at', interval '1 hour');
SELECT rows FROM ttl_expire_preview('items');
SELECT row_ttl_path FROM ttl_index_alter('items', row_ttl_path => 'ttl');
SELECT indexrelid::regclass AS index, pg_get_expr(indpred, indrelid) LIKE '%ttl_row_seconds%' AS per_row
FROM pg_index WHERE indrelid = 'items'::regclass ORDER BY 1;
SELECT rows FROM ttl_expire_preview('items');  -- row 2 keeps its day
SELECT row_ttl_path FROM ttl_index_alter('items', row_ttl_path => 'life');
SELECT rows FROM ttl_expire_preview('items');  -- row 3 went after its minute, row 2 after the hour
SELECT row_ttl_path FROM ttl_index_alter('items', row_ttl_path => '');
SELECT indexrelid::regclass AS index FROM pg_index WHERE indrelid = 'items'::regclass ORDER BY 1;
SELECT rows FROM ttl_expire_preview('items');
SELECT * FROM ttl_index_alter('items', row_ttl_path => 'at.x.');
SELECT ttl_index_drop('items');
DROP TABLE items;

-- a hostile key is a key: quoted into the index expression, the trigger and the advice
SELECT path FROM ttl_index_alter('sessions', path => $p$doc."x'); DROP TABLE sessions; --"$p$);
SELECT to_regclass('sessions') IS NOT NULL AS still_there,
       pg_get_indexdef('sessions_ttl_idx'::regclass) LIKE $l$%'x''); DROP TABLE sessions; --'%$l$ AS key_quoted;
SELECT path FROM ttl_index_alter('sessions', path => 'seen');

-- mistakes in the alter itself: errors with a HINT, nothing changed
SELECT path FROM ttl_index_alter('sessions', path => 'user.name.');
SELECT path FROM ttl_index_alter('sessions', numeric_unit => 'minutes');
ALTER TABLE sessions ADD COLUMN active boolean;
SELECT path FROM ttl_index_alter('sessions', path => 'active');
SELECT path FROM ttl_index_alter('sessions');
SELECT path FROM ttl_indexes WHERE table_name = 'sessions'::regclass;

-- only the table's owner may
CREATE ROLE alter_definition_other;
SET ROLE alter_definition_other;
SELECT path FROM ttl_index_alter('sessions', path => 'doc.createdAt');
RESET ROLE;
DROP ROLE alter_definition_other;
DROP TABLE caches, sessions;
