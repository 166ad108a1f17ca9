-- The safety brake: when one visit of the worker would remove more than
-- jsonb_ttl.max_table_fraction of a table (of at least jsonb_ttl.brake_min_rows rows), the TTL
-- index is paused instead: ttl_indexes.paused_at and ttl_stats.skipped show it, and the worker
-- leaves the table alone until its owner calls ttl_index_resume(). (tests/e2e/brake.sh has the
-- worker trip it; here the pause is written by hand, as the worker writes it.)
\set SHOW_CONTEXT never
SHOW jsonb_ttl.max_table_fraction;
SHOW jsonb_ttl.brake_min_rows;
CREATE TABLE sessions (id int, doc jsonb);
SELECT index_name FROM ttl_index_create('sessions', 'seen', interval '30 days');
SELECT table_name, paused_at FROM ttl_indexes;

-- not paused: resuming changes nothing (the brake stays on), and says so
SELECT ttl_index_resume('sessions');
SELECT paused_at, brake_released FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'sessions'::regclass;

UPDATE jsonb_ttl_internal.ttl_index SET paused_at = '2026-11-23 12:00:00+00',
       paused_reason = 'paused by the safety brake: more than 10000 of about 20000 rows of public.sessions were expired at once (jsonb_ttl.max_table_fraction = 0.5); check expire_after and the clock, then SELECT ttl_index_resume(''public.sessions'')'
WHERE table_oid = 'sessions'::regclass;
SELECT table_name, paused_at FROM ttl_indexes;
SELECT table_name, skipped FROM ttl_stats;

-- resumed: the pause is gone, and the brake is released until the worker drains the table
SELECT ttl_index_resume('sessions');
SELECT table_name, paused_at FROM ttl_indexes;
SELECT paused_reason, brake_released FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'sessions'::regclass;

-- only the table's owner resumes it
CREATE ROLE brake_other;
SET ROLE brake_other;
SELECT ttl_index_resume('sessions');
RESET ROLE;
DROP ROLE brake_other;

-- bad arguments
SELECT ttl_index_resume(NULL);
CREATE TABLE plain_table (doc jsonb);
SELECT ttl_index_resume('plain_table');
DROP TABLE sessions, plain_table;
