#!/usr/bin/env bash
# Real schemas: what tables people already have must not stop the worker.
#   - a DELETE trigger with unqualified names, run with its owner's own search_path;
#   - a trigger that raises for one row among 10,000, an ON DELETE RESTRICT reference, a
#     Django-style DEFERRABLE INITIALLY DEFERRED foreign key: every deletable row goes, the rest
#     are set aside and counted in ttl_stats.rows_undeletable, never holding back the others;
#   - batch_size + 1 rows locked at the head of the index by another session;
#   - a table whose only churn is TTL deletes gets autovacuumed (the worker reports its table
#     statistics), and pg_stat_activity shows what the worker is doing;
#   - the launcher and a worker, terminated, come back, and never two workers on one database.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-real 28843 "jsonb_ttl.frequency = 200" "autovacuum_naptime = 1s" \
  "log_autovacuum_min_duration = 0"

q postgres -c "CREATE DATABASE shop"
q shop -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION jsonb_ttl;
CREATE ROLE alice LOGIN;
GRANT CREATE ON SCHEMA public TO alice;
SET ROLE alice;
-- A trigger as people write it: no schema, no SET search_path.
CREATE TABLE audit_log (id int, gone_at timestamptz DEFAULT now(), seqscan text, lock_timeout text);
CREATE TABLE audited (id int, doc jsonb);
CREATE FUNCTION log_delete() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN
       INSERT INTO audit_log (id, seqscan, lock_timeout)
         VALUES (OLD.id, current_setting('enable_seqscan'), current_setting('lock_timeout'));
       RETURN OLD;
     END $$;
CREATE TRIGGER log_delete BEFORE DELETE ON audited FOR EACH ROW EXECUTE FUNCTION log_delete();
-- One row among 10,000 that a trigger refuses to let go.
CREATE TABLE picky (id int, doc jsonb);
CREATE FUNCTION refuse_5000() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN IF OLD.id = 5000 THEN RAISE EXCEPTION 'row 5000 is kept for audit'; END IF; RETURN OLD; END $$;
CREATE TRIGGER refuse_5000 BEFORE DELETE ON picky FOR EACH ROW EXECUTE FUNCTION refuse_5000();
-- ON DELETE RESTRICT from another table, for 3 rows among 2,000.
CREATE TABLE parents (id int PRIMARY KEY, doc jsonb);
CREATE TABLE children (id int, parent int REFERENCES parents ON DELETE RESTRICT);
-- Django's shape: every foreign key DEFERRABLE INITIALLY DEFERRED (NO ACTION).
CREATE TABLE django_session (id int PRIMARY KEY, doc jsonb);
CREATE TABLE django_visit (id int,
  session_id int REFERENCES django_session DEFERRABLE INITIALLY DEFERRED);
-- Rows locked by another session at the head of the index.
CREATE TABLE busy (id int, doc jsonb);
-- Only TTL deletes, never anything else: autovacuum must learn of them from the worker.
CREATE TABLE churn (id int, doc jsonb) WITH (autovacuum_vacuum_insert_threshold = -1,
  autovacuum_vacuum_threshold = 100, autovacuum_vacuum_scale_factor = 0);
-- A slow trigger, to watch the worker at work.
CREATE TABLE slowpoke (id int, doc jsonb);
CREATE FUNCTION dawdle() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN PERFORM pg_sleep(0.002); RETURN OLD; END $$;
CREATE TRIGGER dawdle BEFORE DELETE ON slowpoke FOR EACH ROW EXECUTE FUNCTION dawdle();
SQL

expired() { echo "jsonb_build_object('at', '2019-01-01'::timestamptz + g * interval '1 second')"; }
q shop -v ON_ERROR_STOP=1 <<SQL
SET ROLE alice;
INSERT INTO audited SELECT g, $(expired) FROM generate_series(1, 100) g;
INSERT INTO picky SELECT g, $(expired) FROM generate_series(1, 10000) g;
INSERT INTO parents SELECT g, $(expired) FROM generate_series(1, 2000) g;
INSERT INTO children VALUES (1, 1), (2, 700), (3, 1999);
INSERT INTO django_session SELECT g, $(expired) FROM generate_series(1, 2000) g;
INSERT INTO django_visit VALUES (1, 1);
INSERT INTO busy SELECT g, $(expired) FROM generate_series(1, 3000) g;
INSERT INTO churn SELECT g, $(expired) FROM generate_series(1, 20000) g;
SQL

# Another session locks the 1001 oldest rows of busy (batch_size + 1) and holds them.
q shop -c "BEGIN; SELECT count(*) FROM (SELECT 1 FROM busy WHERE id <= 1001 FOR UPDATE) x; SELECT pg_sleep(8); COMMIT;" >/dev/null &
locker=$!
sleep 0.5

q shop -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
SET ROLE alice;
SELECT ttl_index_create(t, 'at', 0) FROM unnest(ARRAY['audited', 'picky', 'parents', 'django_session', 'busy', 'churn']) t;
SQL
count() { q shop -c "SELECT count(*) FROM $1"; }
left_is() { [ "$(count "$1")" = "$2" ]; }
wait_for "a trigger with unqualified names runs under the worker: audited purged" 10 left_is audited 0
expect_eq "and it wrote its audit rows, as alice" 100 "$(count audit_log)"
expect_eq "its queries planned under alice's settings (no planner pins), the worker's lock_timeout on top" "on|100ms" \
  "$(q shop -c "SELECT DISTINCT seqscan || '|' || lock_timeout FROM audit_log")"
wait_for "picky: all rows but the one its trigger refuses go" 20 left_is picky 1
expect_eq "picky: the kept row is the refused one" 5000 "$(q shop -c "SELECT id FROM picky")"
wait_for "parents: all but the 3 rows ON DELETE RESTRICT keeps" 20 left_is parents 3
expect_eq "parents: the kept rows are the referenced ones" "1,700,1999" "$(q shop -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM parents")"
wait_for "django_session: all but the one a deferrable foreign key still references" 20 left_is django_session 1
wait_for "busy: everything but the 1001 rows locked at the head of the index" 6 left_is busy 1001
undeletable="SELECT string_agg(table_name || '=' || rows_undeletable, ' ' ORDER BY table_name::text) FROM ttl_stats WHERE rows_undeletable > 0"
eventually_eq "ttl_stats counts the rows set aside, per table" 5 "django_session=1 parents=3 picky=1" shop "$undeletable"
expect_eq "the rows set aside were logged once each" 5 \
  "$(grep -c 'cannot be deleted .*; set aside' "$CLUSTER_DIR/server.log")"
wait "$locker"
wait_for "busy: the locked rows go once their lock is released" 6 left_is busy 0

echo "-- the worker's table statistics reach autovacuum"
wait_for "churn purged" 10 left_is churn 0
eventually_eq "pg_stat_user_tables.n_tup_del counts the TTL deletes" 10 20000 shop \
  "SELECT n_tup_del FROM pg_stat_user_tables WHERE relname = 'churn'"
vacuumed() { [ "$(q shop -c "SELECT last_autovacuum IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'churn'")" = t ]; }
wait_for "autovacuum vacuums a table whose only churn is TTL deletes" 30 vacuumed

echo "-- pg_stat_activity shows what the worker does"
q shop -c "SET ROLE alice" -c "INSERT INTO slowpoke SELECT g, $(expired) FROM generate_series(1, 3000) g" \
  -c "SELECT FROM ttl_index_create('slowpoke', 'at', 0)" >/dev/null
active() { [ "$(q postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'shop' AND state = 'active' AND query LIKE 'jsonb_ttl: deleting expired rows from public.slowpoke%'")" = 1 ]; }
wait_for "while it deletes: state active, query naming the table" 10 active
wait_for "slowpoke purged" 20 left_is slowpoke 0
idle() { [ "$(q postgres -c "SELECT state FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'shop'")" = idle ]; }
wait_for "between passes: state idle" 5 idle

echo "-- terminated, the launcher and a worker come back; one worker per database"
pid_of() { q postgres -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl $1' ${2:+AND datname = '$2'}"; }
launcher=$(pid_of launcher)
q postgres -c "SELECT pg_terminate_backend($launcher)" >/dev/null
relaunched() { local p; p=$(pid_of launcher); [ -n "$p" ] && [ "$p" != "$launcher" ]; }
wait_for "a terminated launcher is started again" 15 relaunched
sleep 1.5
expect_eq "the new launcher leaves the running worker alone: one worker for shop" 1 \
  "$(q postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'shop'")"
worker=$(pid_of worker shop)
q postgres -c "SELECT pg_terminate_backend($worker)" >/dev/null
restarted() { local p; p=$(pid_of worker shop); [ -n "$p" ] && [ "$p" != "$worker" ]; }
wait_for "a terminated worker is started again" 10 restarted
q shop -c "SET ROLE alice" -c "INSERT INTO audited SELECT g, $(expired) FROM generate_series(1, 10) g" >/dev/null
wait_for "and purges" 5 left_is audited 0

echo "-- an invalid database (an interrupted DROP DATABASE, datconnlimit = -2) gets no worker"
q postgres -c "CREATE DATABASE half_dropped"
q half_dropped -c "CREATE EXTENSION jsonb_ttl"
served() { [ "$(q postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'half_dropped'")" = "$1" ]; }
wait_for "a worker serves it while it is valid" 5 served 1
q postgres -c "UPDATE pg_database SET datconnlimit = -2 WHERE datname = 'half_dropped'"
wait_for "marked invalid: its worker leaves" 5 served 0
sleep 2
expect_eq "and none starts again" 0 \
  "$(q postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'half_dropped'")"
q postgres -c "DROP DATABASE half_dropped"
finish
