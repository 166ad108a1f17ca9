#!/usr/bin/env bash
# No way up: an unprivileged login role (mallory) that owns one schema and TTL tables attacks
# jsonb_ttl the ways a hostile tenant would, and nothing she plants ever runs as a superuser:
#   - look-alike operators and functions (=, ||, <, -, ->, now(), quote_ident, …) in her schema,
#     first on her search_path, while she calls every function of the extension directly;
#   - a DELETE trigger that leaks settings (search_path, default_transaction_read_only) and a
#     session advisory lock into the worker's session;
#   - a superuser running ttl_expire_now() and reading ttl_stats over her tables;
#   - refused DROP DATABASE / ALTER DATABASE / CREATE DATABASE … TEMPLATE against a database;
#   - pg_cancel_backend() on the worker, a trigger that sleeps, an ALTER TABLE … OWNER TO mid-pass.
# Every planted function records current_user and tries ALTER ROLE mallory SUPERUSER; the test
# asserts on what was recorded and on what mallory can do at the end (inside the worker,
# session_user stays the superuser by design: only current_user counts).
source "$(dirname "$0")/lib.sh"
start_cluster e2e-security 28840 "jsonb_ttl.frequency = 200" "jsonb_ttl.enabled = off"


q postgres -c "CREATE DATABASE sec"
q sec <<'SQL'
CREATE EXTENSION jsonb_ttl;
CREATE ROLE mallory LOGIN;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
GRANT CREATE ON DATABASE sec TO mallory;
GRANT CREATE ON SCHEMA public TO alice, bob;
-- What planted code records, wherever and as whoever it runs.
CREATE TABLE public.seen (what text, who name, superuser boolean, at timestamptz DEFAULT clock_timestamp());
GRANT INSERT ON public.seen TO PUBLIC;
CREATE FUNCTION public.note(what text) RETURNS boolean LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog AS $$
BEGIN
  INSERT INTO public.seen (what, who, superuser)
    SELECT what, current_user, r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) current_user;
  BEGIN  -- what an attacker would do with a superuser's identity
    EXECUTE 'ALTER ROLE mallory SUPERUSER';
  EXCEPTION WHEN insufficient_privilege OR read_only_sql_transaction THEN NULL;
  END;
  RETURN true;
END $$;
SQL
superuser_runs() { q sec -c "SELECT count(*) FROM seen WHERE superuser OR who NOT IN ('mallory', 'alice', 'bob')"; }
mallory_is_superuser() { q sec -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'"; }

# Mallory's schema e: look-alikes of everything an unqualified statement of ours could resolve,
# each doing its job (so nothing visibly breaks) after calling note().
as mallory sec -v ON_ERROR_STOP=1 <<'SQL'
CREATE SCHEMA e;
CREATE FUNCTION e.f_eq_oid(oid, oid) RETURNS boolean LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.note('=(oid,oid)'); RETURN $1 OPERATOR(pg_catalog.=) $2; END $$;
CREATE OPERATOR e.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = e.f_eq_oid);
CREATE FUNCTION e.f_eq_regclass(regclass, oid) RETURNS boolean LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.note('=(regclass,oid)'); RETURN $1::oid OPERATOR(pg_catalog.=) $2; END $$;
CREATE OPERATOR e.= (LEFTARG = regclass, RIGHTARG = oid, FUNCTION = e.f_eq_regclass);
CREATE FUNCTION e.f_eq_name(name, name) RETURNS boolean LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.note('=(name,name)'); RETURN $1 OPERATOR(pg_catalog.=) $2; END $$;
CREATE OPERATOR e.= (LEFTARG = name, RIGHTARG = name, FUNCTION = e.f_eq_name);
CREATE FUNCTION e.f_eq_name_text(name, text) RETURNS boolean LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.note('=(name,text)'); RETURN $1 OPERATOR(pg_catalog.=) $2; END $$;
CREATE OPERATOR e.= (LEFTARG = name, RIGHTARG = text, FUNCTION = e.f_eq_name_text);
CREATE FUNCTION e.f_cat(text, text) RETURNS text LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.note('||'); RETURN $1 OPERATOR(pg_catalog.||) $2; END $$;
CREATE OPERATOR e.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = e.f_cat);
CREATE FUNCTION e.f_lt(timestamptz, timestamptz) RETURNS boolean LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.note('<'); RETURN $1 OPERATOR(pg_catalog.<) $2; END $$;
CREATE OPERATOR e.< (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = e.f_lt);
CREATE FUNCTION e.f_minus(timestamptz, interval) RETURNS timestamptz LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.note('-'); RETURN $1 OPERATOR(pg_catalog.-) $2; END $$;
CREATE OPERATOR e.- (LEFTARG = timestamptz, RIGHTARG = interval, FUNCTION = e.f_minus);
CREATE FUNCTION e.f_arrow(jsonb, text) RETURNS jsonb LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.note('->'); RETURN $1 OPERATOR(pg_catalog.->) $2; END $$;
CREATE OPERATOR e.-> (LEFTARG = jsonb, RIGHTARG = text, FUNCTION = e.f_arrow);
CREATE FUNCTION e.now() RETURNS timestamptz LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.note('now()'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION e.quote_ident(text) RETURNS text LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.note('quote_ident()'); RETURN pg_catalog.quote_ident($1); END $$;
CREATE FUNCTION e.has_table_privilege(oid, text) RETURNS boolean LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.note('has_table_privilege()'); RETURN pg_catalog.has_table_privilege($1, $2); END $$;
CREATE FUNCTION e.format_type(oid, integer) RETURNS text LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.note('format_type()'); RETURN pg_catalog.format_type($1, $2); END $$;
CREATE FUNCTION e.unnest(text[]) RETURNS SETOF text LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.note('unnest()'); RETURN QUERY SELECT pg_catalog.unnest($1); END $$;

CREATE TABLE e.t (id int, doc jsonb);
INSERT INTO e.t SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 50) g;
-- A DELETE trigger that leaks settings and a session lock into whoever runs it.
CREATE FUNCTION e.leak() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM public.note('trigger on ' || TG_TABLE_NAME);
  PERFORM pg_catalog.set_config('search_path', 'e, pg_catalog', false);
  PERFORM pg_catalog.set_config('default_transaction_read_only', 'on', false);
  PERFORM pg_catalog.pg_advisory_lock(4242);
  RETURN OLD;
END $$;
CREATE TRIGGER leak BEFORE DELETE ON e.t FOR EACH ROW EXECUTE FUNCTION e.leak();
-- Row security forced on the owner: the policy is mallory's code too.
ALTER TABLE e.t ENABLE ROW LEVEL SECURITY;
ALTER TABLE e.t FORCE ROW LEVEL SECURITY;
CREATE POLICY p ON e.t USING (public.note('policy'));
SQL
q sec -c "DELETE FROM seen"

echo "-- 1. mallory calls every function of the extension, her look-alikes first on her search_path"
calls=(
  "SELECT ttl_index_create('e.t', 'at', 0)"
  "SELECT jsonb_ttl_internal._ttl_index_create('e.t'::regclass, 'at', '0', 's')"
  "SELECT ttl_index_alter('e.t', 60)"
  "SELECT jsonb_ttl_internal._ttl_index_alter('e.t'::regclass, '0')"
  "SELECT * FROM ttl_indexes"
  "SELECT * FROM ttl_stats"
  "SELECT ttl_expire_now('e.t', 10)"
  "SELECT jsonb_ttl_internal._ttl_expire_now('e.t'::regclass, 10)"
  "SELECT ttl_expire_now(max_rows => 10)"
  "SELECT * FROM ttl_expire_preview('e.t')"
  "SELECT ttl_index_resume('e.t')"
  "SELECT jsonb_ttl_internal._ttl_index_resume('e.t'::regclass)"
  "SELECT * FROM jsonb_ttl_internal._ttl_expire_preview('e.t'::regclass, now())"
  "SELECT * FROM ttl_statistics()"
  "SELECT * FROM jsonb_ttl_internal._ttl_stats()"
  "SELECT jsonb_ttl_internal._ttl_seconds(5)"
  "SELECT ttl_timestamp('{\"a\": 1}'::jsonb -> 'a')"
  "SELECT jsonb_ttl_internal._ttl_index_set_time_zone('e.t'::regclass, 'UTC')"
  "SELECT jsonb_ttl_internal._ttl_index_drop('e.t'::regclass)"
  "SELECT ttl_index_create('e.t', 'at', 0)"
  "SELECT ttl_index_drop('e.t')"
  "SELECT ttl_index_create('e.t', 'at', 0)"
)
for call in "${calls[@]}"; do
  as mallory sec -c "SET search_path = e, pg_catalog, public" -c "$call" >/dev/null 2>&1 || true
done
for call in "SELECT jsonb_ttl_internal._ttl_wake_launcher()" "SELECT ttl_stats_reset()" \
            "SELECT jsonb_ttl_internal._ttl_on_sql_drop()" "SELECT jsonb_ttl_internal._ttl_track_indexes(1)" \
            "SELECT jsonb_ttl_internal._ttl_options_dropped(1, true, true, true, 1)" \
            "INSERT INTO jsonb_ttl_internal.index_oid VALUES (1, 1, 'index_name')" \
            "SELECT jsonb_ttl_internal._ttl_worker_batch('e.t'::regclass, 10)" \
            "SELECT jsonb_ttl_internal._ttl_worker_range_batch('e.t'::regclass, 10, '-infinity')" \
            "SELECT jsonb_ttl_internal._ttl_on_ddl_command_end()" "DELETE FROM jsonb_ttl_internal.ttl_index" "UPDATE jsonb_ttl_internal.ttl_index SET expire_after = '1 year'"; do
  got=$(outcome mallory sec "$call")
  case "$got" in
    *"permission denied"*) pass "mallory may not: $call ($got)" ;;
    *) fail "mallory may not: $call → [$got]" ;;
  esac
done
expect_eq "her calls ran her look-alikes and triggers as herself only" 0 "$(superuser_runs)"
expect_eq "her calls did run her trigger and policy (as her)" t \
  "$(q sec -c "SELECT count(*) > 0 FROM seen WHERE what IN ('policy', 'trigger on t') AND who = 'mallory'")"
expect_eq "mallory is not a superuser after calling every function" f "$(mallory_is_superuser)"
expect_eq "a temporary table is refused, with its reason" "tt is a temporary table" \
  "$(outcome mallory sec "CREATE TEMP TABLE tt (doc jsonb); SELECT ttl_index_create('tt', 'at', 0)")"

echo "-- 2. a superuser runs ttl_expire_now() and reads ttl_stats over mallory's table"
as mallory sec -c "INSERT INTO e.t SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 20) g"
q sec -c "DELETE FROM seen"
q sec -c "SELECT * FROM ttl_stats" -c "SELECT * FROM ttl_indexes" >/dev/null
expect_eq "the superuser's read of ttl_stats and ttl_indexes runs nothing of hers (the worker records the lag)" 0 \
  "$(q sec -c "SELECT count(*) FROM seen")"
present=$(q sec -c "SELECT count(*) FROM e.t")
expect_eq "the superuser's ttl_expire_preview() counts her expired rows, running nothing of hers" \
  "$present 0" "$(q sec -c "SELECT rows FROM ttl_expire_preview('e.t')") $(superuser_runs)"
expect_eq "the superuser's ttl_expire_now() removed mallory's rows" "$present" "$(q sec -c "SELECT ttl_expire_now()")"
expect_eq "her trigger and policy ran as mallory, never as the superuser" "mallory" \
  "$(q sec -c "SELECT string_agg(DISTINCT who, ',') FROM seen")"
refill="INSERT INTO e.t SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 5) g"
expect_eq "the superuser's session kept its own settings" "5|\"\$user\", public|off" \
  "$(q sec -c "$refill" -c "SELECT ttl_expire_now()" -c "SHOW search_path" -c "SHOW default_transaction_read_only" | paste -sd'|')"
# (A session-level advisory lock her trigger takes stays in the caller's session: accepted, see
# docs/security.md's other rules; the worker releases them after every batch, checked below.)

echo "-- 3. the worker visits mallory's leaking table, then alice's"
q sec -v ON_ERROR_STOP=1 <<'SQL'
SET ROLE alice;
CREATE TABLE public.victim (id int, doc jsonb);
SELECT FROM ttl_index_create('victim', 'at', 0);
CREATE FUNCTION public.victim_trigger() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.note('victim trigger, search_path ' || current_setting('search_path')); RETURN OLD; END $$;
CREATE TRIGGER victim_trigger BEFORE DELETE ON public.victim FOR EACH ROW EXECUTE FUNCTION public.victim_trigger();
SQL
as mallory sec -c "INSERT INTO e.t SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 30) g"
q sec -c "DELETE FROM seen"
q sec -c "ALTER SYSTEM SET jsonb_ttl.enabled = on" -c "SELECT pg_reload_conf()" >/dev/null
worker_pid() { q postgres -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'jsonb_ttl worker' AND datname = 'sec'"; }
empty() { [ "$(q sec -c "SET row_security = off; SELECT count(*) FROM $1")" = 0 ]; }
wait_for "the worker purges mallory's leaking table" 10 empty e.t
pid=$(worker_pid)
q sec -c "INSERT INTO victim SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 30) g"
wait_for "then alice's table: no leaked read-only setting stops it" 10 empty victim
expect_eq "alice's trigger saw her default search_path, not mallory's leaked one" \
  "victim trigger, search_path \"\$user\", public" \
  "$(q sec -c "SELECT string_agg(DISTINCT what, ',') FROM seen WHERE what LIKE 'victim%'")"
expect_eq "nothing planted ran as a superuser inside the worker" 0 "$(superuser_runs)"
expect_eq "the worker holds no advisory lock mallory's trigger took" 0 \
  "$(q sec -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = $pid")"
expect_eq "the same worker served both" "$pid" "$(worker_pid)"

echo "-- 4. refused statements against the database leave its worker alone"
as mallory postgres -c "SELECT 1" >/dev/null
for stmt in "DROP DATABASE sec" "ALTER DATABASE sec RENAME TO sec2" "CREATE DATABASE copy TEMPLATE sec" \
            "ALTER DATABASE sec SET TABLESPACE pg_default"; do
  got=$(outcome mallory postgres "$stmt")
  [ "$got" != ok ] && pass "refused: $stmt ($got)" || fail "mallory ran: $stmt"
done
got=$(outcome postgres postgres "DO \$\$ BEGIN EXECUTE 'DROP DATABASE sec'; END \$\$")
[ "$got" != ok ] && pass "refused even to its owner: DROP DATABASE from a DO block ($got)" || fail "DROP DATABASE ran in a DO block"
q sec -c "INSERT INTO victim SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 10) g"
wait_for "the worker purges right after the refused statements" 3 empty victim
expect_eq "the worker was not stopped by them" "$pid" "$(worker_pid)"
expect_eq "CREATE DATABASE … TEMPLATE DEFAULT works with the library loaded" ok \
  "$(outcome postgres postgres "CREATE DATABASE from_default TEMPLATE DEFAULT")"

echo "-- 5. a cancel interrupts at most one batch; a sleeping trigger costs one batch"
# the worker serving sec now: the database created just above may have had its turn of a
# worker slot meanwhile (CI, PostgreSQL 17: sec's worker was a new one here)
serves_sec() { [ -n "$(worker_pid)" ]; }
wait_for "a worker serves sec" 5 serves_sec
pid=$(worker_pid)
# A worker that gives its turn up (another database waits for a worker slot) exits with code 0,
# which the postmaster does not log, and the next one has another pid (CI saw it on 15 and 17):
# what a cancel must never do is make the worker exit on an error, which the postmaster logs
# ("background worker … (PID n) exited with exit code 1").
exited_on_error() { grep -aE "\(PID $1\) (exited|was terminated)" "$CLUSTER_DIR/server.log" || true; }
for _ in 1 2 3 4 5; do q postgres -c "SELECT pg_cancel_backend($pid)" >/dev/null; sleep 0.1; done
sleep 0.5
expect_eq "pg_cancel_backend() leaves the worker running (it never exits on an error)" "" "$(exited_on_error "$pid")"
wait_for "and a worker serves sec" 5 serves_sec
pid=$(worker_pid)
q sec -c "ALTER SYSTEM SET jsonb_ttl.batch_timeout = '1s'" -c "SELECT pg_reload_conf()" >/dev/null
as mallory sec -v ON_ERROR_STOP=1 <<'SQL'
CREATE TABLE e.sleepy (doc jsonb);
SELECT FROM ttl_index_create('e.sleepy', 'at', 0);
CREATE FUNCTION e.sleep() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN PERFORM pg_catalog.pg_sleep(3600); RETURN OLD; END $$;
CREATE TRIGGER sleep BEFORE DELETE ON e.sleepy FOR EACH ROW EXECUTE FUNCTION e.sleep();
INSERT INTO e.sleepy VALUES ('{"at": "2019-01-01"}');
SQL
timed_out() { [ "$(q sec -c "SELECT errors > 0 AND last_error LIKE '%statement timeout%' FROM ttl_stats WHERE table_name = 'e.sleepy'::regclass")" = t ]; }
wait_for "the sleeping batch is cancelled by jsonb_ttl.batch_timeout" 5 timed_out
q sec -c "INSERT INTO victim SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 10) g"
wait_for "the other tables of the database are still purged" 6 empty victim
pid=$(worker_pid)
q postgres -c "SELECT pg_cancel_backend($pid)" >/dev/null
sleep 0.5
expect_eq "the worker survived timeouts and a cancel mid-batch (no exit on an error)" "" "$(exited_on_error "$pid")"
as mallory sec -c "DROP TABLE e.sleepy" >/dev/null
# A trigger that refuses one row and sleeps for the others: the failed batch is retried in
# parts, and the time limit still ends it (a cancel is no row's fault: nothing is set aside).
as mallory sec -v ON_ERROR_STOP=1 <<'SQL'
CREATE TABLE e.tricky (id int, doc jsonb);
SELECT FROM ttl_index_create('e.tricky', 'at', 0);
CREATE FUNCTION e.refuse_then_sleep() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN IF OLD.id = 1 THEN RAISE EXCEPTION 'not this one'; END IF; PERFORM pg_catalog.pg_sleep(3600); RETURN OLD; END $$;
CREATE TRIGGER refuse_then_sleep BEFORE DELETE ON e.tricky FOR EACH ROW EXECUTE FUNCTION e.refuse_then_sleep();
INSERT INTO e.tricky SELECT g, '{"at": "2019-01-01"}' FROM generate_series(1, 6) g;
SQL
sleep 3
q sec -c "INSERT INTO victim SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 10) g"
wait_for "a split of sleeping rows ends within batch_timeout: the other tables are purged" 6 empty victim
expect_eq "and none of the sleeping rows was set aside as undeletable" t \
  "$(q sec -c "SELECT rows_undeletable <= 1 FROM ttl_stats WHERE table_name = 'e.tricky'::regclass")"
as mallory sec -c "DROP TABLE e.tricky" >/dev/null
q sec -c "ALTER SYSTEM RESET jsonb_ttl.batch_timeout" -c "SELECT pg_reload_conf()" >/dev/null

echo "-- 6. ALTER TABLE … OWNER TO mid-pass: the next batch runs as the new owner"
q sec -c "ALTER SYSTEM SET jsonb_ttl.batch_size = 10" -c "ALTER SYSTEM SET jsonb_ttl.max_removes_per_second = 100" \
  -c "SELECT pg_reload_conf()" >/dev/null
q sec -v ON_ERROR_STOP=1 <<'SQL'
SET ROLE alice;
CREATE TABLE public.handover (id int, doc jsonb);
CREATE TRIGGER handover BEFORE DELETE ON public.handover FOR EACH ROW EXECUTE FUNCTION public.victim_trigger();
RESET ROLE;
DELETE FROM seen;
SET ROLE alice;
INSERT INTO handover SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 400) g;
SELECT FROM ttl_index_create('handover', 'at', 0);
SQL
started() { [ "$(q sec -c "SELECT count(*) > 30 FROM seen")" = t ]; }
wait_for "the slow pass over alice's 400 rows has begun" 5 started
alter_at=$(q sec -c "ALTER TABLE handover OWNER TO bob" -c "SELECT clock_timestamp()" | tail -1)
wait_for "the pass finishes under its new owner" 10 empty handover
expect_eq "no row deleted after the ALTER ran as the old owner" 0 \
  "$(q sec -c "SELECT count(*) FROM seen WHERE at > '$alter_at' AND who <> 'bob'")"
expect_eq "rows deleted after it ran as bob" t "$(q sec -c "SELECT count(*) > 0 FROM seen WHERE at > '$alter_at' AND who = 'bob'")"
q sec -c "ALTER SYSTEM RESET jsonb_ttl.batch_size" -c "ALTER SYSTEM RESET jsonb_ttl.max_removes_per_second" \
  -c "SELECT pg_reload_conf()" >/dev/null

expect_eq "in the end, no planted code ran as a superuser" 0 "$(superuser_runs)"
expect_eq "in the end, mallory is not a superuser" f "$(mallory_is_superuser)"
finish
