-- ttl_index_drop(tbl) removes the TTL index and its catalog entry. DROP TABLE and DROP INDEX
-- remove the entry too (an event trigger), so nothing is left dangling.
\set SHOW_CONTEXT never
CREATE TABLE a (doc jsonb);
CREATE TABLE b (doc jsonb);
CREATE TABLE c (doc jsonb);
SELECT index_name FROM ttl_index_create('a', 'ts', interval '1 hour');
SELECT index_name FROM ttl_index_create('b', 'ts', interval '1 hour');
SELECT index_name FROM ttl_index_create('c', 'ts', interval '1 hour');
SELECT table_name, index_name FROM ttl_indexes ORDER BY table_name::text;

SELECT ttl_index_drop('a');
SELECT count(*) AS ttl_indexes_on_a FROM pg_indexes WHERE tablename = 'a';

DROP TABLE b;
DROP INDEX c_ttl_idx;
SELECT table_name, index_name FROM ttl_indexes ORDER BY table_name::text;
SELECT count(*) AS catalog_rows FROM jsonb_ttl_internal.ttl_index;

-- dropping again is an error: there is nothing to drop
SELECT ttl_index_drop('a');
-- and a table dropped in a rolled-back transaction keeps its TTL index
SELECT index_name FROM ttl_index_create('c', 'ts', interval '1 hour');
BEGIN;
DROP TABLE c;
ROLLBACK;
SELECT table_name, index_name FROM ttl_indexes ORDER BY table_name::text;
DROP TABLE a, c;
SELECT count(*) AS catalog_rows FROM jsonb_ttl_internal.ttl_index;
