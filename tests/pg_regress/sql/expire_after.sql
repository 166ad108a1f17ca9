-- expire_after as people type it. An untyped literal ('1 day', '3600') is read as PostgreSQL
-- reads an interval, where a bare number is seconds; a typed interval and a number of seconds
-- work as they are. Each spelling below makes the same kind of TTL index.
\set SHOW_CONTEXT never
SET client_min_messages = warning;
CREATE TABLE spelled (doc jsonb);

SELECT expire_after FROM ttl_index_create('spelled', 'ts', '1 day');
SELECT ttl_index_drop('spelled');
SELECT expire_after FROM ttl_index_create('spelled', 'ts', interval '1 day');
SELECT ttl_index_drop('spelled');
SELECT expire_after FROM ttl_index_create('spelled', 'ts', 3600);
SELECT ttl_index_drop('spelled');
SELECT expire_after FROM ttl_index_create('spelled', 'ts', '3600');
SELECT ttl_index_drop('spelled');
SELECT expire_after FROM ttl_index_create('spelled', 'ts', 86400.5);
SELECT ttl_index_drop('spelled');
SELECT expire_after FROM ttl_index_create('spelled', 'ts', 'P1DT2H');
-- the other options by name, as with the typed overloads
SELECT ttl_index_drop('spelled');
SELECT expire_after, numeric_unit FROM ttl_index_create('spelled', 'ts', '90 minutes', numeric_unit => 'ms');

-- ttl_index_alter takes the same spellings
SELECT expire_after FROM ttl_index_alter('spelled', '2 days');
SELECT expire_after FROM ttl_index_alter('spelled', '7200');
SELECT expire_after FROM ttl_index_alter('spelled', 60);
SELECT expire_after FROM ttl_index_alter('spelled', interval '3 hours');

-- what is neither an interval nor a number of seconds, or is negative, is refused
SELECT ttl_index_alter('spelled', 'soon');
SELECT ttl_index_create('spelled', 'ts', 'next tuesday');
SELECT ttl_index_alter('spelled', '-1 day');
SELECT expire_after FROM ttl_indexes WHERE table_name = 'spelled'::regclass;

DROP TABLE spelled;
