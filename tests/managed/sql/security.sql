-- Another tenant, app_b (no superuser either), next to app_a's TTL indexes: it reads the
-- definitions (as pg_indexes), never app_a's statistics, and can neither change app_a's TTL
-- indexes, through the functions or the catalog tables, nor have ttl_purge() delete app_a's rows:
-- a run purges the tables its caller owns, and nothing else, even where a grant would let the
-- caller delete by hand.
SET search_path = b, jsonb_ttl;
SELECT count(*) > 0 AS sees_definitions FROM ttl_indexes;
SELECT count(*) AS sees_statistics FROM ttl_stats;
SELECT ttl_index_alter('a.logs', expire_after => 0);
SELECT ttl_index_pause('a.logs');
SELECT ttl_index_drop('a.logs');
SELECT ttl_expire_now('a.logs');
SELECT ttl_index_create('a.logs', 'other', 0);
-- the catalog tables: row security lets a role write only the rows of the tables it owns
WITH changed AS (UPDATE jsonb_ttl_internal.ttl_index SET expire_after = '0', paused_at = NULL RETURNING 1)
SELECT count(*) AS definitions_changed FROM changed;
WITH gone AS (DELETE FROM jsonb_ttl_internal.ttl_index RETURNING 1)
SELECT count(*) AS definitions_deleted FROM gone;
-- nor the index a TTL index is (so that its owner's ttl_index_drop would drop another of its
-- indexes), nor the file its rows set aside are in
WITH changed AS (UPDATE jsonb_ttl_internal.ttl_index SET index_oid = 0, index_shape = 'btree', index_name = 'logs_pkey' RETURNING 1)
SELECT count(*) AS identities_changed FROM changed;
WITH changed AS (UPDATE jsonb_ttl_internal.ttl_state SET set_aside = '{"(0,1)"}', set_aside_file = 0 RETURNING 1)
SELECT count(*) AS set_asides_changed FROM changed;
WITH changed AS (UPDATE jsonb_ttl_internal.ttl_state SET rows_deleted = 0 RETURNING 1)
SELECT count(*) AS statistics_changed FROM changed;
SELECT count(*) AS statistics_seen FROM jsonb_ttl_internal.ttl_state;
INSERT INTO jsonb_ttl_internal.ttl_index (table_oid, column_attnum, column_kind, json_path, path, expire_after, index_oid)
VALUES ('a.logs', 2, 'jsonb', '{at}', 'at', '0', 0);
-- ttl_purge() as app_b leaves app_a's expired row, which app_b could delete by hand
CALL ttl_purge();
SELECT count(*) AS a_logs_expired_left FROM a.logs WHERE (doc->>'at')::bigint = 1000;
-- app_b's own TTL index is purged by app_b's run
CREATE TABLE tasks (id int, done_at timestamptz);
SELECT index_name FROM ttl_index_create('tasks', 'done_at', '1 hour');
INSERT INTO tasks VALUES (1, now() - interval '2 hours'), (2, now()), (3, NULL);
CALL ttl_purge();
SELECT id FROM tasks ORDER BY id;
SELECT table_name, rows_deleted FROM ttl_stats;
