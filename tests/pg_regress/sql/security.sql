-- Objects are followed by OID, never by name (docs/security.md). The internals live in a schema
-- of the extension's own, where nobody else may create; the indexes of each TTL index are
-- recorded by OID, and nothing is ever dropped because it has a recorded name.
\set SHOW_CONTEXT never
SET client_min_messages = warning;
SELECT n.nspname, pg_get_userbyid(n.nspowner) = current_user AS owned_by_installer,
       has_schema_privilege('public', n.oid, 'USAGE') AS public_usage,
       has_schema_privilege('public', n.oid, 'CREATE') AS public_create
FROM pg_namespace n WHERE n.nspname = 'jsonb_ttl_internal';

-- Two tenants who may both create in a shared schema.
CREATE ROLE regress_alice;
CREATE ROLE regress_carol;
CREATE SCHEMA shared;
GRANT USAGE, CREATE ON SCHEMA shared TO regress_alice, regress_carol;
GRANT CREATE ON SCHEMA public TO regress_alice;
SET ROLE regress_carol;
CREATE TABLE shared.c_t (doc jsonb);
CREATE INDEX carol_idx ON shared.c_t ((doc ->> 'x'));
RESET ROLE;

-- Alice's TTL index with a per-row TTL field has two indexes, recorded by OID.
SET ROLE regress_alice;
CREATE TABLE public.a_t (doc jsonb);
SELECT index_name FROM ttl_index_create('public.a_t', 'ts', interval '1 hour', row_ttl_path => 'ttl');
SELECT role, index_oid::regclass AS index FROM jsonb_ttl_internal.index_oid ORDER BY role;

-- A rename is followed by OID: she names her per-row index like Carol's…
ALTER INDEX public.a_t_row_ttl_idx RENAME TO carol_idx;
SELECT index_name, row_ttl_index_name FROM jsonb_ttl_internal.ttl_index;
-- …drops it (its name is cleared: its rows wait for a new index, which build_sql names)…
DROP INDEX public.carol_idx;
SELECT index_name, row_ttl_index_name FROM jsonb_ttl_internal.ttl_index;
SELECT left(s, 55) AS build_sql FROM ttl_index_create('public.a_t', 'ts', interval '1 hour', row_ttl_path => 'ttl'), unnest(build_sql) s;
-- …moves her table next to Carol's index and drops her TTL index: Carol's index stays.
ALTER TABLE public.a_t SET SCHEMA shared;
DROP INDEX shared.a_t_ttl_idx;
RESET ROLE;
SELECT count(*) AS ttl_indexes_left FROM jsonb_ttl_internal.ttl_index;
SELECT to_regclass('shared.carol_idx') AS carols_index;

-- A TTL index not built yet (build => false) has no index: a look-alike of another role's,
-- created and dropped under its name, takes nothing with it.
SET ROLE regress_carol;
SELECT index_name FROM ttl_index_create('shared.c_t', 'ts', interval '1 hour', build => false,
                                        touch => true, hide_expired => true);
RESET ROLE;
SET ROLE regress_alice;
CREATE TABLE shared.m_t (doc jsonb);
CREATE INDEX c_t_ttl_idx ON shared.m_t ((doc ->> 'y'));
RESET ROLE;
-- (while it squats the name, Carol's build_sql still builds hers: that index is not her table's)
SET ROLE regress_carol;
SELECT cardinality(build_sql) AS statements_left
FROM ttl_index_create('shared.c_t', 'ts', interval '1 hour', build => false, touch => true, hide_expired => true);
RESET ROLE;
SET ROLE regress_alice;
DROP INDEX shared.c_t_ttl_idx;
RESET ROLE;
SELECT table_name, index_name, touch, hide_expired FROM ttl_indexes;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'shared.c_t'::regclass;
SELECT polname FROM pg_policy WHERE polrelid = 'shared.c_t'::regclass ORDER BY polname;
SELECT relrowsecurity FROM pg_class WHERE oid = 'shared.c_t'::regclass;

-- Once Carol builds it (the statements of build_sql), its OID is recorded, and a DROP INDEX of
-- that index, and only that one, removes the TTL index.
SET ROLE regress_carol;
CREATE INDEX c_t_ttl_idx ON shared.c_t (ttl_timestamp(doc -> 'ts')) WHERE ttl_timestamp(doc -> 'ts') IS NOT NULL;
RESET ROLE;
SELECT role, index_oid::regclass AS index FROM jsonb_ttl_internal.index_oid ORDER BY role;
SET ROLE regress_carol;
DROP INDEX shared.c_t_ttl_idx;
RESET ROLE;
SELECT count(*) AS ttl_indexes_left FROM jsonb_ttl_internal.ttl_index;
SELECT count(*) AS recorded_oids_left FROM jsonb_ttl_internal.index_oid;

DROP SCHEMA shared CASCADE;
DROP TABLE IF EXISTS public.a_t;
REVOKE CREATE ON SCHEMA public FROM regress_alice;
DROP ROLE regress_alice, regress_carol;

-- REINDEX CONCURRENTLY builds the index again under a new OID, and fires no event trigger: an
-- ALTER of it, or the worker's next pass, records it; then DROP INDEX of it removes the TTL
-- index as before.
CREATE TABLE r_t (doc jsonb);
SELECT index_name FROM ttl_index_create('r_t', 'ts', interval '1 hour');
SELECT 'r_t_ttl_idx'::regclass::oid AS before_reindex \gset
REINDEX INDEX CONCURRENTLY r_t_ttl_idx;
SELECT 'r_t_ttl_idx'::regclass::oid <> :before_reindex AS a_new_oid;
ALTER INDEX r_t_ttl_idx RENAME TO r_t_renamed_idx;
SELECT t.index_name, o.index_oid::regclass AS recorded
FROM jsonb_ttl_internal.ttl_index t JOIN jsonb_ttl_internal.index_oid o ON o.table_oid = t.table_oid::oid;
DROP INDEX r_t_renamed_idx;
SELECT count(*) AS ttl_indexes_left FROM jsonb_ttl_internal.ttl_index;
DROP TABLE r_t;
