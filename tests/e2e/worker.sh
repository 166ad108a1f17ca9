#!/usr/bin/env bash
# The background worker against a real cluster with the library preloaded: expiry in two
# databases, limits, batches, GUC reloads, owner privileges, rows set aside, CREATE EXTENSION
# and DROP DATABASE while workers run.
source "$(dirname "$0")/lib.sh"
# (autovacuum off: its transactions would count in the visits to 'quiet', and a DROP waiting on
# it logs "canceling autovacuum task" as an ERROR)
start_cluster e2e-worker 28831 "jsonb_ttl.frequency = 200" "jsonb_ttl.lock_timeout = 50" "autovacuum = off"

set_guc() {  # set_guc NAME VALUE: ALTER SYSTEM + reload, as an operator would
  q postgres -c "ALTER SYSTEM SET $1 = '$2'" -c "SELECT pg_reload_conf()" >/dev/null
}
reset_gucs() {
  q postgres -c "ALTER SYSTEM RESET ALL" -c "SELECT pg_reload_conf()" >/dev/null
  sleep 0.3
}
events_table() {  # events_table DB: a table with a TTL index of 1 hour on doc->'at'
  q "$1" <<'SQL'
DROP TABLE IF EXISTS events;
CREATE TABLE events (id bigserial PRIMARY KEY, label text, doc jsonb);
SELECT FROM ttl_index_create('events', 'at', interval '1 hour');
SQL
}

echo "== expired rows go in two databases; the others stay; the statistics count them"
for db in db_a db_b; do
  q postgres -c "CREATE DATABASE $db"
  q $db -c "CREATE EXTENSION jsonb_ttl"
  events_table $db
done
q db_a -c "SELECT ttl_stats_reset()" >/dev/null
for db in db_a db_b; do
  q $db <<'SQL'
INSERT INTO events (label, doc) SELECT 'expired', jsonb_build_object('at', now() - interval '2 hours') FROM generate_series(1, 500);
INSERT INTO events (label, doc) VALUES
  ('fresh', jsonb_build_object('at', now())), ('future', '{"at": "2999-01-01"}'),
  ('dateless', '{"x": 1}'), ('invalid', '{"at": "2019-02-30"}');
SQL
done
start=$(date +%s.%N)
only_survivors() { [ "$(q "$1" -c "SELECT string_agg(label, ',' ORDER BY label) FROM events")" = "dateless,fresh,future,invalid" ]; }
wait_for "db_a purged within frequency + 1 s" 1.2 only_survivors db_a
wait_for "db_b purged too" 1.2 only_survivors db_b
eventually_eq "ttl_stats counts db_a's removals" 1 500 db_a "SELECT rows_deleted FROM ttl_stats"
eventually_eq "ttl_stats counts db_b's removals" 1 500 db_b "SELECT rows_deleted FROM ttl_stats"
eventually_eq "ttl_statistics() counts the server's removals" 1 1000 db_a "SELECT rows_deleted FROM ttl_statistics()"
expect_eq "workers show in pg_stat_activity with their database" "db_a,db_b" \
  "$(q postgres -c "SELECT string_agg(datname, ',' ORDER BY datname) FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname LIKE 'db_%'")"
expect_eq "one launcher" 1 "$(q postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl launcher'")"
# The server runs with RUST_BACKTRACE=1 (scripts/cluster.sh): errors still carry no backtrace
# (this error is allowed in the server log below).
expect_eq "the server's environment has RUST_BACKTRACE=1" 1 \
  "$(runuser -u postgres -- cat "/proc/$(head -1 "$CLUSTER_DIR/data/postmaster.pid")/environ" | tr '\0' '\n' | grep -c '^RUST_BACKTRACE=1$')"
err=$(q db_a -v VERBOSITY=verbose -c "SELECT ttl_timestamp('{}'::jsonb, 'no such unit')" 2>&1 || true)
expect_eq "an error says what is wrong" 1 "$(echo "$err" | grep -c 'ERROR')"
expect_eq "and carries no Rust backtrace" 0 "$(echo "$err" | grep -cE 'backtrace|rust_begin_unwind|^ +[0-9]+: ')"

echo "== max_table_removes caps each pass; batch_size bounds rows per transaction"
set_guc jsonb_ttl.max_table_removes 1000
set_guc jsonb_ttl.batch_size 300
set_guc jsonb_ttl.enabled off
wait_for "passes stop (enabled = off)" 5 passes_stopped db_a
q db_a <<'SQL'
-- each deletion with its transaction and the worker's visit (ttl_stats.runs counts the
-- visits that ended, so every deletion of one visit reads the same number)
CREATE TABLE deletions (txid bigint, visit bigint);
CREATE FUNCTION log_deletion() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN
  INSERT INTO public.deletions VALUES (txid_current(),
    (SELECT coalesce(max(runs), 0) FROM jsonb_ttl_internal._ttl_stats() WHERE table_oid = 'public.events'::regclass));
  RETURN OLD;
END $$;
CREATE TRIGGER log_deletion BEFORE DELETE ON events FOR EACH ROW EXECUTE FUNCTION log_deletion();
INSERT INTO events (label, doc) SELECT 'bulk', jsonb_build_object('at', 1550165973 + g) FROM generate_series(1, 10000) g;
SQL
q db_a -c "SELECT ttl_stats_reset()" >/dev/null
set_guc jsonb_ttl.enabled on
all_gone() { [ "$(q db_a -c "SELECT count(*) FROM events WHERE label = 'bulk'")" = 0 ]; }
wait_for "10,000 expired rows gone after enough passes" 20 all_gone
expect_eq "no transaction removed more than batch_size rows" 300 \
  "$(q db_a -c "SELECT max(n) FROM (SELECT count(*) n FROM deletions GROUP BY txid) t")"
# (the visit that deleted the last rows is recorded an instant after its commit)
eventually_eq "at least 10 passes for 10,000 rows, at least 9 of them hit max_table_removes" 1 t db_a \
  "SELECT runs >= 10 AND limit_reached >= 9 FROM ttl_stats"
echo "       ($(q db_a -c "SELECT runs || ' runs, limit_reached ' || limit_reached FROM ttl_stats"))"
expect_eq "no pass removed more than 1000 rows" 1000 \
  "$(q db_a -c "SELECT max(n) FROM (SELECT count(*) n FROM deletions GROUP BY visit) t")"
q db_a -c "DROP TRIGGER log_deletion ON events; DROP TABLE deletions; DROP FUNCTION log_deletion()"
reset_gucs

echo "== max_total_removes caps a pass across two databases"
set_guc jsonb_ttl.enabled off
set_guc jsonb_ttl.frequency 3000
set_guc jsonb_ttl.max_total_removes 1000
sleep 3.2   # let the budget window of the last claim end: the next claim opens a fresh one
for db in db_a db_b; do
  q $db -c "INSERT INTO events (label, doc) SELECT 'bulk', jsonb_build_object('at', 1550165973 + g) FROM generate_series(1, 3000) g"
done
q db_a -c "SELECT ttl_stats_reset()" >/dev/null
set_guc jsonb_ttl.enabled on
removed_both() {
  echo $(( $(q db_a -c "SELECT 3000 - count(*) FROM events WHERE label = 'bulk'") + $(q db_b -c "SELECT 3000 - count(*) FROM events WHERE label = 'bulk'") ))
}
first_pass() { [ "$(removed_both)" -gt 0 ]; }
wait_for "the first pass after enabling (frequency 3 s)" 6 first_pass
# the pass goes on until the budget is spent; the window it opened lasts 3 s
budget_spent() { [ "$(removed_both)" -ge 1000 ]; }
wait_for "the budget is spent" 2 budget_spent
removed=$(removed_both)
expect_eq "the first pass of both databases together removed max_total_removes rows" 1000 "$removed"
set_guc jsonb_ttl.frequency 200
gone_both() { [ "$(q db_a -c "SELECT count(*) FROM events WHERE label = 'bulk'")$(q db_b -c "SELECT count(*) FROM events WHERE label = 'bulk'")" = 00 ]; }
wait_for "all removed after enough windows" 10 gone_both
reset_gucs

echo "== a table with 200,000 expired rows does not starve one with 10"
q db_b <<'SQL'
CREATE TABLE big (doc jsonb);
CREATE TABLE small (doc jsonb);
SELECT FROM ttl_index_create('big', 'at', 0);
SELECT FROM ttl_index_create('small', 'at', 0);
SQL
set_guc jsonb_ttl.enabled off
set_guc jsonb_ttl.max_table_removes 100000
wait_for "passes stop (enabled = off)" 5 passes_stopped db_a
q db_b -c "INSERT INTO big SELECT jsonb_build_object('at', 1550165973 + g) FROM generate_series(1, 200000) g"
q db_b -c "INSERT INTO small SELECT jsonb_build_object('at', 1550165973 + g) FROM generate_series(1, 10) g"
q db_a -c "SELECT ttl_stats_reset()" >/dev/null
set_guc jsonb_ttl.enabled on
small_done() { [ "$(q db_b -c "SELECT count(*) FROM small")" = 0 ]; }
wait_for "the small table is emptied" 30 small_done
big_left=$(q db_b -c "SELECT count(*) FROM big")
if [ "$big_left" -gt 0 ]; then
  pass "while the big one still holds $big_left expired rows (max_table_removes = 100000 a pass)"
else
  fail "the small table waited for the big one to drain"
fi
eventually_eq "ttl_stats counts its 10 rows" 1 10 db_b "SELECT rows_deleted FROM ttl_stats WHERE table_name = 'small'::regclass"
q db_b -c "DROP TABLE big, small"

echo "== triggers tell the worker's deletes from the application's (jsonb_ttl.expiring)"
# a statement trigger with a transition table rolls expired rows up by day and kind, in
# batches of at most 700 rows; the application's own delete of expired rows is not counted
q db_b <<'SQL'
CREATE TABLE visits (id int, doc jsonb);
CREATE TABLE visits_daily (day date, kind text, expired bigint NOT NULL, PRIMARY KEY (day, kind));
CREATE TABLE roll_up_calls (n int NOT NULL);
INSERT INTO roll_up_calls VALUES (0);
CREATE FUNCTION roll_up() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('jsonb_ttl.expiring', true) = 'on' THEN
        UPDATE roll_up_calls SET n = n + 1;
        INSERT INTO visits_daily AS d (day, kind, expired)
        SELECT (e.doc->>'at')::timestamptz::date, e.doc->>'kind', count(*) FROM expired e GROUP BY 1, 2
        ON CONFLICT (day, kind) DO UPDATE SET expired = d.expired + excluded.expired;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER roll_up AFTER DELETE ON visits REFERENCING OLD TABLE AS expired
    FOR EACH STATEMENT EXECUTE FUNCTION roll_up();
SELECT FROM ttl_index_create('visits', 'at', interval '1 hour', batch_size => 700);
SQL
set_guc jsonb_ttl.enabled off
wait_for "passes stop (enabled = off)" 5 passes_stopped db_a
q db_b -c "INSERT INTO visits SELECT g, jsonb_build_object('at', timestamptz '2026-03-01 10:00+00' + (g % 3) * interval '1 day', 'kind', (ARRAY['login', 'click', 'logout'])[1 + g % 7 % 3]) FROM generate_series(1, 5000) g"
q db_b -c "INSERT INTO visits SELECT g, jsonb_build_object('at', now(), 'kind', 'click') FROM generate_series(5001, 5100) g"
expected=$(q db_b -c "SELECT string_agg(day || ' ' || kind || ' ' || n, ', ' ORDER BY day, kind) FROM (SELECT (doc->>'at')::timestamptz::date AS day, doc->>'kind' AS kind, count(*) AS n FROM visits WHERE id > 250 AND id <= 5000 GROUP BY 1, 2) s")
q db_b -c "DELETE FROM visits WHERE id <= 250"
set_guc jsonb_ttl.enabled on
visits_done() { [ "$(q db_b -c "SELECT count(*) FROM visits")" = 100 ]; }
wait_for "the worker removes the 4,750 expired rows left" 30 visits_done
expect_eq "the rollup counts each of them once, by day and kind, and none the application deleted" "$expected" \
  "$(q db_b -c "SELECT string_agg(day || ' ' || kind || ' ' || expired, ', ' ORDER BY day, kind) FROM visits_daily")"
eventually_eq "ttl_stats counts the same 4,750" 2 4750 db_b \
  "SELECT rows_deleted FROM ttl_stats WHERE table_name = 'visits'::regclass"
expect_eq "in batches of at most 700: the trigger ran once a batch, at least 7 times" t \
  "$(q db_b -c "SELECT n >= 7 FROM roll_up_calls")"
expect_eq "outside the worker's deletes, jsonb_ttl.expiring is off" off "$(q db_b -c "SHOW jsonb_ttl.expiring")"
q db_b -c "DROP TABLE visits, visits_daily, roll_up_calls; DROP FUNCTION roll_up()"

echo "== batches by key range read each row once: the worker does not parse a document again"
# 5,000 expired rows, each a second apart, in batches of at most 700: a batch that picked its
# rows and tested expiry again in its DELETE would compute each row's reference time
# (ttl_timestamp, counted with track_functions = all) once more; a batch by key range decides
# expiry on the keys the index stores. The application's 100 fresh rows stay.
q db_b <<'SQL'
CREATE TABLE ranged (id int, doc jsonb);
SELECT FROM ttl_index_create('ranged', 'at', interval '1 hour', batch_size => 700);
SQL
set_guc jsonb_ttl.enabled off
wait_for "passes stop (enabled = off)" 5 passes_stopped db_a
set_guc track_functions all
q db_b -c "INSERT INTO ranged SELECT g, jsonb_build_object('at', timestamptz '2026-03-01 10:00+00' + g * interval '1 second') FROM generate_series(1, 5000) g"
q db_b -c "INSERT INTO ranged SELECT g, jsonb_build_object('at', now()) FROM generate_series(5001, 5100) g"
reference_calls() {
  q db_b -c "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = 'ttl_timestamp'"
}
table_deletes() { q db_b -c "SELECT n_tup_del FROM pg_stat_user_tables WHERE relid = 'ranged'::regclass"; }
# (each psql session flushes its statistics as it ends: the inserts' calls are in)
calls_before=$(reference_calls)
set_guc jsonb_ttl.enabled on
ranged_done() { [ "$(q db_b -c "SELECT count(*) FROM ranged")" = 100 ]; }
wait_for "the worker removes the 5,000 expired rows, the 100 fresh ones stay" 30 ranged_done
# the worker flushes its function calls with its table counts, at most once a second
ranged_counted() { [ "$(table_deletes)" = 5000 ]; }
wait_for "the worker's statistics of the 5,000 deletes are flushed" 10 ranged_counted
calls=$(( $(reference_calls) - calls_before ))
if [ "$calls" -lt 500 ]; then
  pass "the reference time computed $calls times for 5,000 deleted rows (a batch that tests expiry again: 5,000 or more)"
else
  fail "the reference time computed $calls times for 5,000 deleted rows: documents parsed again"
fi
eventually_eq "ttl_stats counts the 5,000" 2 5000 db_b "SELECT rows_deleted FROM ttl_stats WHERE table_name = 'ranged'::regclass"
set_guc track_functions none
q db_b -c "DROP TABLE ranged"

echo "== frequency reloads at once; enabled = off pauses deletion"
set_guc jsonb_ttl.frequency 3600000
wait_for "passes stop after frequency = 1 h is reloaded" 5 passes_stopped db_a
q db_a -c "INSERT INTO events (label, doc) VALUES ('reload', '{\"at\": \"2019-01-01\"}')"
sleep 1
expect_eq "with frequency = 1 h the row waits" 1 "$(q db_a -c "SELECT count(*) FROM events WHERE label = 'reload'")"
set_guc jsonb_ttl.frequency 200
reload_gone() { [ "$(q db_a -c "SELECT count(*) FROM events WHERE label = 'reload'")" = 0 ]; }
wait_for "after frequency = 200 ms and pg_reload_conf(), a pass within 2 s" 2 reload_gone
set_guc jsonb_ttl.enabled off
wait_for "passes stop after enabled = off is reloaded" 5 passes_stopped db_a
q db_a -c "INSERT INTO events (label, doc) VALUES ('paused', '{\"at\": \"2019-01-01\"}')"
sleep 1
expect_eq "enabled = off: nothing removed" 1 "$(q db_a -c "SELECT count(*) FROM events WHERE label = 'paused'")"
reset_gucs
paused_gone() { [ "$(q db_a -c "SELECT count(*) FROM events WHERE label = 'paused'")" = 0 ]; }
wait_for "enabled = on again: removed" 2 paused_gone

echo "== deletes run as the table's owner; a failing table is skipped, the others purged"
q db_a <<'SQL'
CREATE ROLE regress_owner;
GRANT CREATE ON SCHEMA public TO regress_owner;
SET ROLE regress_owner;
CREATE TABLE owned (doc jsonb);
CREATE TABLE who_deleted (who name, is_superuser boolean);
CREATE FUNCTION record_who() RETURNS trigger LANGUAGE plpgsql SET search_path = public AS
$$ BEGIN
  INSERT INTO who_deleted SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user;
  RETURN OLD;
END $$;
CREATE TRIGGER record_who BEFORE DELETE ON owned FOR EACH ROW EXECUTE FUNCTION record_who();
SELECT FROM ttl_index_create('owned', 'at', 0);
CREATE TABLE failing (doc jsonb);
CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no deletes here'; END $$;
CREATE TRIGGER refuse BEFORE DELETE ON failing FOR EACH ROW EXECUTE FUNCTION refuse();
SELECT FROM ttl_index_create('failing', 'at', 0);
RESET ROLE;
INSERT INTO owned VALUES ('{"at": "2019-01-01"}'), ('{"at": "2019-01-02"}');
INSERT INTO failing VALUES ('{"at": "2019-01-01"}');
INSERT INTO events (label, doc) VALUES ('neighbour', '{"at": "2019-01-01"}');
SQL
owned_gone() { [ "$(q db_a -c "SELECT count(*) FROM owned")" = 0 ]; }
wait_for "the owner's table is purged" 2 owned_gone
expect_eq "the DELETE trigger saw the table's owner, not a superuser" "regress_owner|false" \
  "$(q db_a -c "SELECT DISTINCT who || '|' || is_superuser FROM who_deleted")"
neighbour_gone() { [ "$(q db_a -c "SELECT count(*) FROM events WHERE label = 'neighbour'")" = 0 ]; }
wait_for "a table next to a failing one is purged" 2 neighbour_gone
set_aside() { [ "$(q db_a -c "SELECT rows_undeletable FROM ttl_stats WHERE table_name = 'failing'::regclass")" = 1 ]; }
wait_for "the row the failing table refuses is set aside and counted" 2 set_aside
expect_eq "the visit is counted as an error, with the row's error" "1|1 row(s) set aside: no deletes here" \
  "$(q db_a -c "SELECT errors || '|' || last_error FROM ttl_stats WHERE table_name = 'failing'::regclass")"
sleep 0.5
expect_eq "later passes skip it (no new error)" 1 \
  "$(q db_a -c "SELECT errors FROM ttl_stats WHERE table_name = 'failing'::regclass")"
expect_eq "and its row stays" 1 "$(q db_a -c "SELECT count(*) FROM failing")"
expect_eq "ttl_stats shows the lag of the failing table" "2019-01-01 00:00:00+00" \
  "$(q db_a -c "SET TimeZone = 'UTC'; SELECT oldest_expired FROM ttl_stats WHERE table_name = 'failing'::regclass")"
if grep -q 'row (0,1) of table public.failing cannot be deleted (no deletes here); set aside' "$CLUSTER_DIR/server.log"; then
  pass "the row is logged with the table's name and the error"
else
  fail "no log line names the failing table's row"
fi
expect_eq "the worker did not restart" 1 \
  "$(q postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'db_a'")"
q db_a -c "DROP TABLE owned, who_deleted, failing; DROP FUNCTION record_who(), refuse(); REVOKE CREATE ON SCHEMA public FROM regress_owner; DROP ROLE regress_owner"

echo "== a partitioned table: the worker purges each leaf; ttl_stats reports per leaf"
q db_b <<'SQL'
CREATE TABLE parted (id int, doc jsonb) PARTITION BY RANGE (id);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (1000);
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (1000) TO (2000);
SELECT FROM ttl_index_create('parted', 'at', 0);
CREATE TABLE parted_3 PARTITION OF parted FOR VALUES FROM (2000) TO (3000);
INSERT INTO parted SELECT g, jsonb_build_object('at', CASE WHEN g % 2 = 0 THEN '2019-01-01' ELSE '2999-01-01' END)
FROM generate_series(1, 2999) g;
SQL
parted_done() { [ "$(q db_b -c "SELECT count(*) FROM parted WHERE doc ->> 'at' = '2019-01-01'")" = 0 ]; }
wait_for "expired rows gone from every partition, the later one included" 3 parted_done
expect_eq "unexpired rows kept in each partition" "parted_1:500 parted_2:500 parted_3:500" \
  "$(q db_b -c "SELECT string_agg(t || ':' || n, ' ' ORDER BY t) FROM (SELECT tableoid::regclass::text t, count(*) n FROM parted GROUP BY 1) x")"
eventually_eq "ttl_stats counts each leaf" 1 "parted_1:499 parted_2:500 parted_3:500" db_b \
  "SELECT string_agg(table_name::text || ':' || rows_deleted, ' ' ORDER BY table_name::text) FROM ttl_stats WHERE ttl_table = 'parted'::regclass"
q db_b -c "DROP TABLE parted"

echo "== a row a DELETE trigger keeps does not hold back the expired rows behind it"
q db_b <<'SQL'
CREATE TABLE guarded (doc jsonb);
CREATE TABLE guarded_log (visit bigint);
CREATE FUNCTION keep_pinned() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN IF OLD.doc ? 'pinned' THEN RETURN NULL; END IF; RETURN OLD; END $$;
CREATE FUNCTION log_visit() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN
  INSERT INTO public.guarded_log
    SELECT coalesce(max(runs), 0) FROM jsonb_ttl_internal._ttl_stats() WHERE table_oid = 'public.guarded'::regclass;
  RETURN NULL;
END $$;
CREATE TRIGGER keep_pinned BEFORE DELETE ON guarded FOR EACH ROW EXECUTE FUNCTION keep_pinned();
CREATE TRIGGER log_visit AFTER DELETE ON guarded FOR EACH ROW EXECUTE FUNCTION log_visit();
SELECT FROM ttl_index_create('guarded', 'at', 0);
-- one transaction: no visit between the pinned row and the rows behind it
INSERT INTO guarded SELECT '{"at": "2018-01-01", "pinned": true}'
                    UNION ALL SELECT jsonb_build_object('at', 1550165973 + g) FROM generate_series(1, 3000) g;
SQL
only_pinned() { [ "$(q db_b -c "SELECT count(*) FROM guarded")" = 1 ]; }
wait_for "the 3000 expired rows behind a pinned one are purged" 5 only_pinned
visits=$(q db_b -c "SELECT count(DISTINCT visit) FROM guarded_log")
expect_eq "all in one visit of the worker" 1 "$visits"
[ "$visits" = 1 ] || q db_b -c "SELECT visit, count(*) FROM guarded_log GROUP BY 1 ORDER BY 1" \
  -c "SELECT runs, rows_deleted, limit_reached, errors, last_error FROM ttl_stats WHERE table_name = 'guarded'::regclass"
expect_eq "the pinned row stays" t "$(q db_b -c "SELECT doc ? 'pinned' FROM guarded")"
q db_b -c "DROP TABLE guarded, guarded_log"

echo "== a row a user holds: the batch gives up on it within lock_timeout and deletes the others"
# A batch deletes without row locks first (less WAL); a row another transaction holds makes that
# DELETE wait, at most jsonb_ttl.lock_timeout (50 ms here), and the batch runs again at once
# with FOR UPDATE SKIP LOCKED. The held row is the oldest: every batch meets it first.
set_guc jsonb_ttl.enabled off
wait_for "passes stop (enabled = off)" 5 passes_stopped db_b
q db_b <<'SQL'
CREATE TABLE held (id int PRIMARY KEY, doc jsonb);
SELECT FROM ttl_index_create('held', 'at', interval '1 hour');
INSERT INTO held VALUES (1, '{"at": "2018-01-01"}'), (0, '{"at": "2999-01-01"}');
INSERT INTO held SELECT g, jsonb_build_object('at', 1550165973 + g) FROM generate_series(2, 2001) g;
SQL
q db_b -c "SET application_name = 'holder'" -c "BEGIN" -c "SELECT FROM held WHERE id = 1 FOR UPDATE" -c "SELECT pg_sleep(6)" -c "COMMIT" &
holder=$!
holding() { [ "$(q db_b -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'holder' AND query LIKE '%pg_sleep%' AND state = 'active'")" = 1 ]; }
wait_for "a user holds the oldest expired row (FOR UPDATE, for 6 s)" 5 holding
q db_b -c "SELECT ttl_stats_reset()" >/dev/null
set_guc jsonb_ttl.enabled on
held_left() { [ "$(q db_b -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM held")" = "0,1" ]; }
wait_for "the 2000 other expired rows go while she holds hers" 2 held_left
expect_eq "she still holds it (the worker did not wait for her)" 1 "$(q db_b -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'holder' AND state = 'active'")"
eventually_eq "no error in ttl_stats" 1 "0|" db_b "SELECT errors || '|' || coalesce(last_error, '') FROM ttl_stats WHERE table_name = 'held'::regclass"
# the visit met her row (it waited lock_timeout once: the batch without row locks ran first) and
# went on within a second (not the 6 s she holds it)
expect_eq "the visit waited lock_timeout (50 ms) once, no longer" t \
  "$(q db_b -c "SELECT last_run_ms >= 50 AND last_run_ms < 1000 FROM ttl_stats WHERE table_name = 'held'::regclass")"
wait "$holder"
held_gone() { [ "$(q db_b -c "SELECT string_agg(id::text, ',') FROM held")" = "0" ]; }
wait_for "her row goes once she commits" 2 held_gone
q db_b -c "DROP TABLE held"
reset_gucs

echo "== CREATE EXTENSION in a new database is served; DROP DATABASE without FORCE succeeds"
q postgres -c "CREATE DATABASE db_new"
q db_new -c "CREATE EXTENSION jsonb_ttl"
events_table db_new
q db_new -c "INSERT INTO events (label, doc) VALUES ('x', '{\"at\": \"2019-01-01\"}')"
new_gone() { [ "$(q db_new -c "SELECT count(*) FROM events")" = 0 ]; }
wait_for "a new database is served within two passes" 1 new_gone
worker_in() { [ "$(q postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = '$1'")" = "$2" ]; }
wait_for "its worker runs" 1 worker_in db_new 1
if q postgres -c "DROP DATABASE db_new"; then pass "DROP DATABASE without FORCE while its worker runs"; else fail "DROP DATABASE failed"; fi
wait_for "the other databases keep their workers" 2 worker_in db_a 1
q db_a -c "DROP EXTENSION jsonb_ttl CASCADE" 2>/dev/null
wait_for "after DROP EXTENSION the worker goes away quietly" 2 worker_in db_a 0
echo "== a database without the extension is looked at once, then left alone until CREATE EXTENSION"
q postgres -c "CREATE DATABASE quiet"
# Each worker that connects to 'quiet' commits transactions there; pg_stat_database counts them.
visits() { q postgres -c "SELECT coalesce(sum(xact_commit), 0) FROM pg_stat_database WHERE datname = 'quiet'"; }
looked() { [ "$(visits)" -gt 0 ]; }
wait_for "a worker looked at the new database" 3 looked
sleep 0.5
before=$(visits)
sleep 3.5   # the launcher lists the databases every second (max(frequency, 1 s))
expect_eq "then none came back in 3.5 s (transactions committed in it)" "$before" "$(visits)"
q quiet -c "CREATE EXTENSION jsonb_ttl"
wait_for "CREATE EXTENSION there later: its worker starts at once" 3 worker_in quiet 1
q quiet -c "DROP EXTENSION jsonb_ttl"
wait_for "DROP EXTENSION: its worker goes" 2 worker_in quiet 0
q quiet -c "CREATE EXTENSION jsonb_ttl; DROP EXTENSION jsonb_ttl; CREATE EXTENSION jsonb_ttl"
wait_for "CREATE EXTENSION again: a worker again" 3 worker_in quiet 1
q quiet <<'SQL'
BEGIN;
DROP EXTENSION jsonb_ttl;
CREATE EXTENSION jsonb_ttl;
SELECT FROM pg_sleep(0.5);
COMMIT;
SQL
events_table quiet
q quiet -c "INSERT INTO events (label, doc) VALUES ('x', '{\"at\": \"2019-01-01\"}')"
quiet_gone() { [ "$(q quiet -c "SELECT count(*) FROM events")" = 0 ]; }
wait_for "re-created in one transaction while its worker ran: still served" 2 quiet_gone

echo "== CREATE EXTENSION in a long transaction: its worker waits for the commit, however long"
q postgres -c "CREATE DATABASE slow"
q postgres -c "ALTER DATABASE slow SET lock_timeout = '1s'"   # the worker's wait ignores it
q slow >/dev/null <<'SQL' &
BEGIN;
CREATE EXTENSION jsonb_ttl;
CREATE TABLE events (id bigserial PRIMARY KEY, label text, doc jsonb);
SELECT FROM ttl_index_create('events', 'at', interval '1 hour');
INSERT INTO events (label, doc) VALUES ('x', '{"at": "2019-01-01"}');
SELECT FROM pg_sleep(11);
COMMIT;
SQL
long_txn=$!
waiting() { [ "$(q postgres -c "SELECT wait_event FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'slow'")" = transactionid ]; }
wait_for "its worker waits on the CREATE EXTENSION's transaction" 2 waiting
sleep 2
if waiting; then pass "still waiting 2 s later, past the database's lock_timeout of 1 s"
else fail "the wait ended early (lock_timeout?)"; fi
wait "$long_txn"
slow_gone() { [ "$(q slow -c "SELECT count(*) FROM events")" = 0 ]; }
wait_for "11 s later it commits, and the worker purges at once" 3 slow_gone

echo "== a database with the extension can be a template, be renamed; template1 gets no worker"
if q postgres -c "CREATE DATABASE db_copy TEMPLATE db_b"; then
  pass "CREATE DATABASE … TEMPLATE a database whose worker runs (without FORCE)"
else fail "CREATE DATABASE … TEMPLATE db_b failed"; fi
wait_for "the copy, with the extension, is served" 5 worker_in db_copy 1
if q postgres -c "ALTER DATABASE db_copy RENAME TO db_copied"; then
  pass "ALTER DATABASE … RENAME while its worker runs"
else fail "ALTER DATABASE … RENAME failed"; fi
q template1 -c "CREATE EXTENSION jsonb_ttl"
sleep 1.5
expect_eq "CREATE EXTENSION in template1 starts no worker there" 0 \
  "$(q postgres -c "SELECT count(*) FROM pg_stat_activity WHERE datname = 'template1'")"
if q postgres -c "CREATE DATABASE db_from_template1"; then
  pass "so CREATE DATABASE still works"
else fail "CREATE DATABASE from template1 failed"; fi
wait_for "and the new database, with the extension, is served" 5 worker_in db_from_template1 1
q template1 -c "DROP EXTENSION jsonb_ttl"

# Expected: the FATAL of a worker told to leave a database being dropped, and, rarely, of one
# the launcher started just before the DROP and that found the database gone when it got the
# database's lock (docs/worker.md). Anything else is a bug.
unexpected=$(grep -E 'ERROR|FATAL|PANIC' "$CLUSTER_DIR/server.log" \
  | grep -v -e 'terminating background worker "jsonb_ttl worker" due to administrator command' \
               -e 'jsonb_ttl worker  FATAL:  database [0-9]* does not exist' \
               -e 'ERROR:  invalid numeric_unit "no such unit"' || true)
expect_eq "no other error in the server log" "" "$unexpected"
finish
