-- ttl_index_create samples the table (its first 1,000 rows, read as its owner) and tells, in a
-- NOTICE with the fix in the HINT, the mistakes that leave a TTL index matching nothing: a key
-- that the documents spell otherwise, a path in JSONPath or SQL syntax, epoch milliseconds read
-- as seconds. Epoch seconds read as milliseconds would expire every row at once: a WARNING.
-- None of them stops the creation.
\set SHOW_CONTEXT never

-- a typo of the key: the HINT names the key the documents hold
CREATE TABLE sessions (id int, doc jsonb);
INSERT INTO sessions SELECT i, jsonb_build_object('createdAt', '2026-01-01T00:00:00Z', 'user', i)
FROM generate_series(1, 1000) i;
SELECT index_name FROM ttl_index_create('sessions', 'created_at', interval '1 day');
SELECT ttl_index_drop('sessions');

-- some rows without a point in time: they never expire (as designed), said once
INSERT INTO sessions VALUES (0, '{"user": 0}');
DELETE FROM sessions WHERE id BETWEEN 1 AND 990;
SELECT index_name FROM ttl_index_create('sessions', 'createdAt', interval '1 day');
SELECT ttl_index_drop('sessions');

-- nothing near: the HINT lists the keys there
CREATE TABLE events (doc jsonb);
INSERT INTO events VALUES ('{"meta": {"kind": "click", "when": "2026-01-01"}}');
SELECT index_name FROM ttl_index_create('events', 'meta.at', interval '1 day');
SELECT ttl_index_drop('events');

-- JSONPath and SQL syntax: read as keys named "$", "doc->>'at'"…
SELECT index_name FROM ttl_index_create('events', '$.meta.when', interval '1 day');
SELECT ttl_index_drop('events');
SELECT index_name FROM ttl_index_create('events', $$doc->'meta'->>'when'$$, interval '1 day');
SELECT ttl_index_drop('events');
SELECT index_name FROM ttl_index_create('events', '$.items[0].at', interval '1 day');
SELECT ttl_index_drop('events');
-- the dotted path: no advice
SELECT index_name FROM ttl_index_create('events', 'meta.when', interval '1 day');
SELECT ttl_index_drop('events');

-- epoch milliseconds read as seconds (the year 58,000): nothing would ever expire
CREATE TABLE caches (doc jsonb);
INSERT INTO caches SELECT jsonb_build_object('at', 1767225600000 + i) FROM generate_series(1, 10) i;
SELECT index_name FROM ttl_index_create('caches', 'at', interval '1 hour');
SELECT ttl_index_drop('caches');
SELECT index_name FROM ttl_index_create('caches', 'at', interval '1 hour', numeric_unit => 'ms');
SELECT ttl_index_drop('caches');

-- epoch seconds read as milliseconds (January 1970): every row would expire at once
CREATE TABLE tokens (id int, expires numeric);
INSERT INTO tokens SELECT i, 1767225600 + i FROM generate_series(1, 10) i;
SELECT index_name FROM ttl_index_create('tokens', 'expires', interval '0', numeric_unit => 'ms', paused => true);
SELECT ttl_index_drop('tokens');

-- microseconds: neither unit reads them
DELETE FROM caches;
INSERT INTO caches VALUES ('{"at": 1767225600000000}');
SELECT index_name FROM ttl_index_create('caches', 'at', interval '1 hour');

-- ttl_index_drop(tbl, if_exists => true), for migrations: no TTL index (or no table) is a NOTICE
SELECT ttl_index_drop('caches', if_exists => true);
SELECT ttl_index_drop('caches', if_exists => true);
SELECT ttl_index_drop(to_regclass('no_such_table'), if_exists => true);
SELECT ttl_index_drop('caches', if_exists => false);

-- the sample reads as the table's owner: a superuser creating the TTL index of a tenant's table
-- does not run the tenant's row security policy as superuser (here it sees no row at all, so
-- nothing is advised; the superuser would have seen the typo)
CREATE ROLE advice_tenant;
CREATE TABLE tenant_docs (doc jsonb);
ALTER TABLE tenant_docs OWNER TO advice_tenant;
INSERT INTO tenant_docs VALUES ('{"createdAt": "2026-01-01"}');
ALTER TABLE tenant_docs ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY only_mine ON tenant_docs USING (current_user = 'postgres');
SELECT index_name FROM ttl_index_create('tenant_docs', 'created_at', interval '1 day');
SELECT ttl_index_drop('tenant_docs');

-- ttl_index_create on a table that has a TTL index says what differs (DETAIL); an error about
-- an argument carries no CONTEXT of the SQL wrappers, even with psql's SHOW_CONTEXT always
\set SHOW_CONTEXT always
SELECT index_name FROM ttl_index_create('sessions', 'createdAt', interval '1 day');
SELECT ttl_index_create('sessions', 'updatedAt', interval '2 days', time_zone => 'Europe/Paris', touch => true);
SELECT ttl_index_create('sessions', 'createdAt', interval '-1 day');
SELECT ttl_index_alter('caches', interval '1 day');
\set SHOW_CONTEXT never
DROP TABLE sessions, events, caches, tokens, tenant_docs;
DROP ROLE advice_tenant;
