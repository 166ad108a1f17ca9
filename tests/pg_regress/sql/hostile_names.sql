-- Table, schema, column and key names that would inject SQL if concatenated: they work, and
-- nothing but the intended index is created.
\set SHOW_CONTEXT never
CREATE SCHEMA "my schema";
CREATE TABLE "my schema"."a""b; DROP TABLE victim; --" ("Dóc ü" jsonb, id int);
CREATE TABLE victim (id int);
SELECT index_name, table_name, column_name, path
FROM ttl_index_create('"my schema"."a""b; DROP TABLE victim; --"',
                      '"Dóc ü".''); DROP TABLE victim; --', interval '1 hour');
SELECT indexdef FROM pg_indexes WHERE schemaname = 'my schema';
INSERT INTO "my schema"."a""b; DROP TABLE victim; --" VALUES
  ('{"''); DROP TABLE victim; --": "2019-01-01"}', 1),
  ('{"''); DROP TABLE victim; --": "2999-01-01"}', 2);
SELECT ttl_expire_now('"my schema"."a""b; DROP TABLE victim; --"') AS removed;
SELECT id FROM "my schema"."a""b; DROP TABLE victim; --";
SELECT to_regclass('victim') IS NOT NULL AS victim_survives;

-- Mixed case and non-ASCII names
CREATE TABLE "Événements" ("Doc" jsonb);
SELECT index_name, table_name FROM ttl_index_create('"Événements"', 'Doc.créé', interval '1 hour');
SELECT indexdef FROM pg_indexes WHERE tablename = 'Événements';

-- A long table name still gets an index name within 63 bytes
CREATE TABLE t_567890123456789012345678901234567890123456789012345678901 (doc jsonb);
SELECT index_name, length(index_name)
FROM ttl_index_create('t_567890123456789012345678901234567890123456789012345678901', 'ts', 60);

DROP SCHEMA "my schema" CASCADE;
DROP TABLE victim, "Événements", t_567890123456789012345678901234567890123456789012345678901;
SELECT count(*) AS catalog_rows FROM jsonb_ttl_internal.ttl_index;
