#!/usr/bin/env bash
# The idle pass (issue 24): the worker keeps its targets across passes and reads each TTL
# index's btree for an entry before the cutoff before it runs any SQL for the table
# (src/worker/targets.rs, src/leaf_check.rs). Rows that expire while nothing changes are
# found (plain and timestamptz columns, days, an owner's time zone, a filter, per-row TTL,
# partitions); whatever changes the targets shows within a pass or two (a new TTL index, a new
# expire_after, a new partition, a new owner, a renamed schema, a dropped or invalid index, a
# pause, a delete window that opens); an idle pass does not read the catalog again; the owner's code
# never runs as the worker.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-kept 28853 "jsonb_ttl.frequency = 200" "jsonb_ttl.lock_timeout = 50" "autovacuum = off"

q postgres -c "CREATE DATABASE kept"
q kept -c "CREATE EXTENSION jsonb_ttl" \
  -c "CREATE ROLE tenant LOGIN" -c "CREATE ROLE other LOGIN" \
  -c "GRANT CREATE ON SCHEMA public TO tenant, other"
runs() { q kept -c "SELECT runs FROM ttl_statistics()"; }
ran_to() { [ "$(runs)" -ge "$1" ]; }
passes() {  # passes N: waits until N more passes have ended
  wait_for "$1 more passes" 10 ran_to $(($(runs) + $1)) >/dev/null
}

echo "== idle: the catalog is not read again at each pass"
q kept -c "DO \$\$ BEGIN FOR i IN 1..40 LOOP
             EXECUTE format('CREATE TABLE idle_%s (doc jsonb)', i);
             EXECUTE format('INSERT INTO idle_%s VALUES (''{\"at\": \"2999-01-01\"}'')', i);
             PERFORM ttl_index_create(format('idle_%s', i), 'at', interval '1 hour');
           END LOOP; END \$\$"
passes 3
pg_class_scans() { q kept -c "SELECT pg_stat_force_next_flush()" -c "SELECT idx_scan + seq_scan FROM pg_stat_sys_tables WHERE relname = 'pg_class'"; }
before=$(pg_class_scans) r0=$(runs)
sleep 2
after=$(pg_class_scans) r1=$(runs)
scans=$((after - before)) n=$((r1 - r0))
if [ "$n" -ge 5 ] && [ "$scans" -lt 40 ]; then pass "$n idle passes over 40 TTL tables read pg_class $scans times (not once per table and pass)"; else
  fail "$n idle passes over 40 TTL tables read pg_class $scans times"; fi
expect_eq "each idle table is visited at each pass" "40|0" \
  "$(q kept -c "SELECT count(*) FILTER (WHERE runs >= $n) || '|' || sum(rows_deleted) FROM ttl_stats WHERE table_name::text LIKE 'idle_%'")"

echo "== rows that expire while nothing changes are found"
q kept <<'SQL'
CREATE TABLE t_soon (doc jsonb);
SELECT FROM ttl_index_create('t_soon', 'at', interval '2 seconds');
CREATE TABLE t_ts (id int, ts timestamptz);
SELECT FROM ttl_index_create('t_ts', 'ts', interval '2 seconds');
CREATE TABLE t_days (id int, ts timestamptz);
SELECT FROM ttl_index_create('t_days', 'ts', interval '1 day');
CREATE TABLE t_kind (id int, kind text, doc jsonb);
SELECT FROM ttl_index_create('t_kind', 'at', interval '2 seconds', filter => $$kind = 'log'$$);
CREATE TABLE t_row (id int, doc jsonb);
SELECT FROM ttl_index_create('t_row', 'at', interval '1 hour', row_ttl_path => 'ttl');
CREATE TABLE t_parted (id int, ts timestamptz) PARTITION BY RANGE (id);
CREATE TABLE t_parted_1 PARTITION OF t_parted FOR VALUES FROM (0) TO (100);
CREATE TABLE t_parted_2 PARTITION OF t_parted FOR VALUES FROM (100) TO (200);
SELECT FROM ttl_index_create('t_parted', 'ts', interval '2 seconds');
SQL
# (the owner's TimeZone is not the worker's: days are counted in the owner's, by the SQL probe)
q kept -c "ALTER ROLE tenant SET timezone = 'Pacific/Chatham'" \
  -c "CREATE TABLE t_zone (id int, ts timestamptz)" -c "ALTER TABLE t_zone OWNER TO tenant"
as tenant kept -c "SELECT FROM ttl_index_create('t_zone', 'ts', interval '1 day')" >/dev/null
passes 3
q kept <<'SQL'
INSERT INTO t_soon VALUES (jsonb_build_object('at', now())), ('{"at": "2999-01-01"}');
INSERT INTO t_ts VALUES (1, now()), (2, 'infinity');
INSERT INTO t_days VALUES (1, now() - interval '1 day' + interval '2 seconds'), (2, now() - interval '1 day' + interval '1 hour');
INSERT INTO t_zone VALUES (1, now() - interval '1 day' + interval '2 seconds'), (2, now() - interval '1 day' + interval '1 hour');
INSERT INTO t_kind VALUES (1, 'log', jsonb_build_object('at', now())), (2, 'keep', jsonb_build_object('at', now()));
INSERT INTO t_row VALUES (1, jsonb_build_object('at', now(), 'ttl', 2)), (2, jsonb_build_object('at', now(), 'ttl', 3600)),
                         (3, jsonb_build_object('at', now() - interval '59 minutes 58 seconds')), (4, jsonb_build_object('at', now()));
INSERT INTO t_parted VALUES (1, now() + interval '1 second'), (150, now()), (151, now() + interval '1 hour');
SQL
# (the transaction of these inserts began before their rows' times: they expire 2 s after it)
eventually_eq "a jsonb time, 2 seconds later" 10 1 kept "SELECT count(*) FROM t_soon"
eventually_eq "a timestamptz column" 10 "2" kept "SELECT string_agg(id::text, ',') FROM t_ts"
eventually_eq "expire_after '1 day' (the cutoff in the worker's time zone)" 10 2 kept "SELECT string_agg(id::text, ',') FROM t_days"
eventually_eq "expire_after '1 day', the owner in another time zone" 10 2 kept "SELECT string_agg(id::text, ',') FROM t_zone"
eventually_eq "a filter: only the rows it holds for go" 10 2 kept "SELECT string_agg(id::text, ',') FROM t_kind"
eventually_eq "per-row TTL: the row's own 2 seconds, and expire_after for a row without one" 10 "2,4" kept \
  "SELECT string_agg(id::text, ',' ORDER BY id) FROM t_row"
eventually_eq "partitions: each leaf's index" 10 151 kept "SELECT string_agg(id::text, ',') FROM t_parted"
expect_eq "nothing failed" 0 "$(q kept -c "SELECT sum(errors) FROM ttl_stats")"

echo "== what changes the targets is seen at once"
q kept -c "CREATE TABLE t_new (doc jsonb)" \
  -c "INSERT INTO t_new SELECT jsonb_build_object('at', now() - interval '2 hours') FROM generate_series(1, 100)"
q kept -c "SELECT FROM ttl_index_create('t_new', 'at', interval '1 hour')"
eventually_eq "a new TTL index" 5 0 kept "SELECT count(*) FROM t_new"

# The race CI met (a TTL index created while the worker begins a pass, never purged): the
# worker's pass transaction begins (its snapshot taken), then waits for a lock its catalog
# read needs before the targets are chosen (pg_authid, behind pg_roles, held here); meanwhile
# the TTL index is created, and committed as the lock goes. The catalog must be read under a
# snapshot that holds every change the worker has been told of: read under the one taken
# before the wait, it lacked the new index while the digest of the catalog's rows, taken
# later, had it, and the targets without it were kept pass after pass.
q kept -c "CREATE TABLE t_race (doc jsonb)" \
  -c "INSERT INTO t_race SELECT jsonb_build_object('at', now() - interval '2 hours') FROM generate_series(1, 100)"
passes 1
q kept -c "BEGIN" -c "LOCK TABLE pg_catalog.pg_authid IN ACCESS EXCLUSIVE MODE" -c "SELECT pg_sleep(0.6)" \
  -c "SELECT FROM ttl_index_create('t_race', 'at', interval '1 hour')" -c "COMMIT" >/dev/null
eventually_eq "a TTL index committed while the worker waits to read the catalog" 5 0 kept "SELECT count(*) FROM t_race"

q kept -c "CREATE TABLE t_alter (doc jsonb)" \
  -c "SELECT FROM ttl_index_create('t_alter', 'at', interval '1 hour')" \
  -c "INSERT INTO t_alter SELECT jsonb_build_object('at', now() - interval '30 minutes') FROM generate_series(1, 100)"
passes 2
expect_eq "not expired under 1 hour" 100 "$(q kept -c "SELECT count(*) FROM t_alter")"
q kept -c "SELECT FROM ttl_index_alter('t_alter', interval '10 minutes')"
eventually_eq "a new expire_after" 5 0 kept "SELECT count(*) FROM t_alter"

q kept -c "CREATE TABLE t_parted_3 PARTITION OF t_parted FOR VALUES FROM (200) TO (300)" \
  -c "INSERT INTO t_parted VALUES (250, now() - interval '1 minute')"
eventually_eq "a new partition" 5 151 kept "SELECT string_agg(id::text, ',') FROM t_parted"

q kept <<'SQL'
CREATE TABLE deleted_by (who name);
GRANT INSERT ON deleted_by TO tenant, other;
CREATE FUNCTION note_deleter() RETURNS trigger LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO public.deleted_by VALUES (current_user); RETURN OLD; END$$;
CREATE TABLE t_owner (doc jsonb);
CREATE TRIGGER note AFTER DELETE ON t_owner FOR EACH ROW EXECUTE FUNCTION note_deleter();
ALTER TABLE t_owner OWNER TO tenant;
SQL
as tenant kept -c "SELECT FROM ttl_index_create('t_owner', 'at', interval '1 hour')" >/dev/null
passes 2
q kept -c "ALTER TABLE t_owner OWNER TO other" \
  -c "INSERT INTO t_owner SELECT jsonb_build_object('at', now() - interval '2 hours') FROM generate_series(1, 10)"
eventually_eq "a new owner: its rows go" 5 0 kept "SELECT count(*) FROM t_owner"
expect_eq "deleted as the new owner" "other" "$(q kept -c "SELECT string_agg(DISTINCT who::text, ',') FROM deleted_by")"

q kept -c "CREATE SCHEMA s1" -c "CREATE TABLE s1.t_schema (doc jsonb)" \
  -c "SELECT FROM ttl_index_create('s1.t_schema', 'at', interval '1 hour')"
passes 2
q kept -c "ALTER SCHEMA s1 RENAME TO s2" \
  -c "INSERT INTO s2.t_schema SELECT jsonb_build_object('at', now() - interval '2 hours') FROM generate_series(1, 10)"
eventually_eq "a renamed schema" 5 0 kept "SELECT count(*) FROM s2.t_schema"
expect_eq "and no batch failed on the old name" 0 "$(q kept -c "SELECT errors FROM ttl_stats WHERE table_name = 's2.t_schema'::regclass")"

q kept -c "CREATE TABLE t_noindex (doc jsonb)" \
  -c "SELECT FROM ttl_index_create('t_noindex', 'at', interval '1 hour')" \
  -c "CREATE TABLE t_invalid (doc jsonb)" \
  -c "SELECT FROM ttl_index_create('t_invalid', 'at', interval '1 hour')"
passes 2
q kept -c "DROP INDEX t_noindex_ttl_idx" \
  -c "INSERT INTO t_noindex SELECT jsonb_build_object('at', now() - interval '2 hours') FROM generate_series(1, 10)"
eventually_eq "a dropped TTL index: the table leaves ttl_stats" 5 0 kept \
  "SELECT count(*) FROM ttl_stats WHERE table_name = 't_noindex'::regclass"
expect_eq "and its rows stay" 10 "$(q kept -c "SELECT count(*) FROM t_noindex")"
# (as a failed CREATE INDEX CONCURRENTLY leaves it)
q kept -c "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 't_invalid_ttl_idx'::regclass" \
  -c "INSERT INTO t_invalid SELECT jsonb_build_object('at', now() - interval '2 hours') FROM generate_series(1, 10)"
eventually_eq "a TTL index no longer valid: ttl_stats says so" 5 t kept \
  "SELECT last_error LIKE '%missing or not valid%' FROM ttl_stats WHERE table_name = 't_invalid'::regclass"
expect_eq "and its rows stay" 10 "$(q kept -c "SELECT count(*) FROM t_invalid")"
q kept -c "UPDATE pg_index SET indisvalid = true WHERE indexrelid = 't_invalid_ttl_idx'::regclass"
eventually_eq "valid again: they go" 5 0 kept "SELECT count(*) FROM t_invalid"

q kept -c "CREATE TABLE t_pause (doc jsonb)" \
  -c "SELECT FROM ttl_index_create('t_pause', 'at', interval '1 hour')"
passes 2
q kept -c "SELECT FROM ttl_index_pause('t_pause')" \
  -c "INSERT INTO t_pause SELECT jsonb_build_object('at', now() - interval '2 hours') FROM generate_series(1, 10)"
passes 3
expect_eq "paused: its rows stay" 10 "$(q kept -c "SELECT count(*) FROM t_pause")"
q kept -c "SELECT FROM ttl_index_resume('t_pause')"
eventually_eq "resumed: they go" 5 0 kept "SELECT count(*) FROM t_pause"

echo "== a delete window that opens while nothing changes"
q kept -c "CREATE TABLE t_window (doc jsonb)" \
  -c "INSERT INTO t_window SELECT jsonb_build_object('at', now() - interval '2 hours') FROM generate_series(1, 10)"
# (not in the last seconds of a minute: the window, from the next one, must not open at once)
sec=$(date -u +%S); [ $((10#$sec)) -lt 50 ] || sleep $((61 - 10#$sec))
window=$(q kept -c "SELECT to_char(timezone('UTC', now()) + interval '1 minute', 'HH24:MI') || '-' || to_char(timezone('UTC', now()) + interval '11 minutes', 'HH24:MI')")
q kept -c "SELECT FROM ttl_index_create('t_window', 'at', interval '1 hour', delete_window => '$window')"
passes 2
expect_eq "outside its window ($window UTC) the rows stay" 10 "$(q kept -c "SELECT count(*) FROM t_window")"
eventually_eq "when the window opens (within a minute), they go" 75 0 kept "SELECT count(*) FROM t_window"

echo "== attack: the owner's code never runs as the worker, idle or not"
q kept <<'SQL'
CREATE TABLE calls (who name, superuser bool);
GRANT INSERT ON calls TO tenant;
SQL
as tenant kept -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
-- declared immutable for the index predicate, it records who calls it (nextval is allowed)
CREATE SEQUENCE filter_calls;
CREATE FUNCTION public.trap(kind text) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  PERFORM pg_catalog.nextval('public.filter_calls');
  IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
    RAISE EXCEPTION 'trap: called as superuser %', current_user;
  END IF;
  RETURN kind = 'log';
END $$;
CREATE TABLE t_trap (id int, kind text, doc jsonb);
SELECT FROM ttl_index_create('t_trap', 'at', interval '2 seconds', filter => 'public.trap(kind)');
INSERT INTO t_trap VALUES (1, 'log', '{"at": "2999-01-01"}'), (2, 'keep', '{"at": "2999-01-01"}');
SQL
calls() { q kept -c "SELECT last_value FROM filter_calls"; }
c0=$(calls)
passes 5
expect_eq "idle passes call the owner's filter not once" "$c0" "$(calls)"
as tenant kept -c "INSERT INTO t_trap VALUES (3, 'log', jsonb_build_object('at', now()))"
eventually_eq "an expired row still goes (probed and deleted as the owner)" 10 "1,2" kept \
  "SELECT string_agg(id::text, ',' ORDER BY id) FROM t_trap"
expect_eq "and no visit failed" 0 "$(q kept -c "SELECT errors FROM ttl_stats WHERE table_name = 't_trap'::regclass")"
if grep -q 'trap: called as superuser' "$CLUSTER_DIR/server.log"; then fail "the owner's filter ran as a superuser"; else pass "the owner's filter never ran as a superuser"; fi

finish
