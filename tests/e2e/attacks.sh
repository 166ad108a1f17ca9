#!/usr/bin/env bash
# Attacks from the security issue, one per rule of docs/security.md's model that the
# release before it broke. Ordinary login roles that may create in a shared schema:
#   A. a victim's index dropped by name: alice points her per-row TTL index's recorded name at
#      carol's index (rename it to carol's name, drop it, move her table next to carol's), then
#      drops her TTL index, whose SECURITY DEFINER sql_drop handler drops "her" per-row index;
#   B. a victim's TTL index removed by a squatted name: bob's TTL index is recorded but not built
#      (build => false); mallory creates and drops an unrelated index under its name, and the
#      sql_drop handler takes bob's entry, touch trigger and policies with it;
#   C. the worker held past its time limit: mallory's trigger (or forced policy) catches the
#      worker's cancel and loops; bob's expired rows must still go within
#      frequency + batch_timeout + grace (+ slack);
#   D. statistics that leak and break: a trigger's error text (an SSN) shown in ttl_stats to a
#      role that may not read the table; a forced policy that raises or sleeps breaking
#      ttl_stats for everyone (reading the view must never run owner code);
#   E. owner code run with a caller's rights: the sample ttl_index_create reads for its advice
#      must run a tenant's forced policy as the tenant, not as the operator who creates the index.
# Objects are followed by OID, never by name; a time limit owner code can catch is no limit.
source "$(dirname "$0")/lib.sh"
start_cluster e2e-attacks 28851 "jsonb_ttl.frequency = 500" "jsonb_ttl.batch_timeout = 2s" \
  "jsonb_ttl.max_workers = 8"

# A database with the extension, a schema `shared` and public both open to every role.
new_db() {
  q postgres -c "CREATE DATABASE $1"
  q "$1" -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION jsonb_ttl;
CREATE SCHEMA shared;
GRANT USAGE, CREATE ON SCHEMA shared TO alice, bob, carol, mallory;
GRANT CREATE ON SCHEMA public TO alice, bob, carol, mallory;
SQL
}
exists() { q "$1" -c "SELECT to_regclass('$2') IS NOT NULL"; }

q postgres -v ON_ERROR_STOP=1 <<'SQL'
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE ROLE carol LOGIN;
CREATE ROLE mallory LOGIN;
CREATE ROLE eve LOGIN;
CREATE ROLE auditor LOGIN;
GRANT pg_read_all_stats TO auditor;
SQL

echo "-- A. a victim's index dropped by the name alice's per-row TTL index was renamed to"
new_db squat
# alice's table NAME (in public) with a per-row TTL index; carol's table VICTIM_TABLE with index
# VICTIM_INDEX (both schema-qualified names are passed whole).
alice_table() {
  as alice squat -v ON_ERROR_STOP=1 -c "CREATE TABLE $1 (id int, doc jsonb)" \
    -c "SELECT FROM ttl_index_create('$1', 'ts', interval '1 hour', row_ttl_path => 'ttl')" >/dev/null
}
carol_index() {  # TABLE INDEX (the index unqualified: it goes into the table's schema)
  as carol squat -v ON_ERROR_STOP=1 -c "CREATE TABLE $1 (id int, doc jsonb)" -c "CREATE INDEX $2 ON $1 (id)"
}
carol_index shared.c_t carol_idx
alice_table a_t
expect_eq "setup: alice's per-row TTL index a_t_row_ttl_idx exists" t "$(exists squat public.a_t_row_ttl_idx)"
echo "     rename: $(outcome alice squat "ALTER INDEX a_t_row_ttl_idx RENAME TO carol_idx")," \
     "drop: $(outcome alice squat "DROP INDEX carol_idx")," \
     "move: $(outcome alice squat "ALTER TABLE a_t SET SCHEMA shared")," \
     "DROP INDEX of her TTL index: $(outcome alice squat "DROP INDEX shared.a_t_ttl_idx")"
expect_eq "A: carol's shared.carol_idx survives alice's DROP INDEX of her TTL index" t "$(exists squat shared.carol_idx)"

# Variant: ttl_index_drop instead of DROP INDEX.
carol_index shared.c2_t carol2_idx
alice_table a2_t
echo "     rename: $(outcome alice squat "ALTER INDEX a2_t_row_ttl_idx RENAME TO carol2_idx")," \
     "drop: $(outcome alice squat "DROP INDEX carol2_idx")," \
     "move: $(outcome alice squat "ALTER TABLE a2_t SET SCHEMA shared")"
got=$(outcome alice squat "SELECT ttl_index_drop('shared.a2_t')")
echo "     ttl_index_drop: $got"
expect_eq "A (ttl_index_drop): carol's shared.carol2_idx survives" t "$(exists squat shared.carol2_idx)"
expect_eq "A (ttl_index_drop): alice may still drop her own TTL index" ok "$got"

# Variant: rename then move, without dropping the renamed index first (the move collides), then
# DROP TABLE instead of DROP INDEX after a successful move.
carol_index shared.c3_t carol3_idx
alice_table a3_t
echo "     rename: $(outcome alice squat "ALTER INDEX a3_t_row_ttl_idx RENAME TO carol3_idx")," \
     "move without the drop: $(outcome alice squat "ALTER TABLE a3_t SET SCHEMA shared")," \
     "DROP INDEX of her TTL index: $(outcome alice squat "DROP INDEX IF EXISTS public.a3_t_ttl_idx; DROP INDEX IF EXISTS shared.a3_t_ttl_idx")"
expect_eq "A (rename, move, no drop): carol's shared.carol3_idx survives" t "$(exists squat shared.carol3_idx)"
carol_index shared.c3b_t carol3b_idx
alice_table a3b_t
echo "     rename: $(outcome alice squat "ALTER INDEX a3b_t_row_ttl_idx RENAME TO carol3b_idx")," \
     "drop: $(outcome alice squat "DROP INDEX carol3b_idx")," \
     "move: $(outcome alice squat "ALTER TABLE a3b_t SET SCHEMA shared")," \
     "DROP TABLE: $(outcome alice squat "DROP TABLE shared.a3b_t")"
expect_eq "A (rename, move, DROP TABLE): carol's shared.carol3b_idx survives" t "$(exists squat shared.carol3b_idx)"

# Variant: the squat in another schema (carol's index in public, alice's table from shared).
carol_index public.c4_t carol4_idx
as alice squat -v ON_ERROR_STOP=1 -c "CREATE TABLE shared.a4_t (id int, doc jsonb)" \
  -c "SELECT FROM ttl_index_create('shared.a4_t', 'ts', interval '1 hour', row_ttl_path => 'ttl')" >/dev/null
echo "     rename: $(outcome alice squat "ALTER INDEX shared.a4_t_row_ttl_idx RENAME TO carol4_idx")," \
     "drop: $(outcome alice squat "DROP INDEX shared.carol4_idx")," \
     "move: $(outcome alice squat "ALTER TABLE shared.a4_t SET SCHEMA public")," \
     "DROP INDEX: $(outcome alice squat "DROP INDEX public.a4_t_ttl_idx")"
expect_eq "A (another schema): carol's public.carol4_idx survives" t "$(exists squat public.carol4_idx)"

# Variant: carol drops her table and creates it again, same names, after alice's set-up.
carol_index shared.c5_t carol5_idx
alice_table a5_t
echo "     rename: $(outcome alice squat "ALTER INDEX a5_t_row_ttl_idx RENAME TO carol5_idx")," \
     "drop: $(outcome alice squat "DROP INDEX carol5_idx")," \
     "move: $(outcome alice squat "ALTER TABLE a5_t SET SCHEMA shared")"
as carol squat -v ON_ERROR_STOP=1 -c "DROP TABLE shared.c5_t"
carol_index shared.c5_t carol5_idx
echo "     carol re-created shared.c5_t and carol5_idx; DROP INDEX: $(outcome alice squat "DROP INDEX shared.a5_t_ttl_idx")"
expect_eq "A (victim's table re-created): carol's new shared.carol5_idx survives" t "$(exists squat shared.carol5_idx)"

echo "-- B. a victim's TTL index (not built yet) removed by an index squatting its name"
# bob's TABLE (in shared) with a TTL index recorded but not built, with touch and hide_expired.
bob_table() {
  as bob squat -v ON_ERROR_STOP=1 -c "CREATE TABLE shared.$1 (id int, doc jsonb)" \
    -c "SELECT FROM ttl_index_create('shared.$1', 'ts', interval '1 hour', build => false, touch => true, hide_expired => true $2)" >/dev/null
}
bob_intact() {  # DESCRIPTION TABLE
  local t=shared.$2
  expect_eq "$1: bob's catalog entry is still there" 1 \
    "$(q squat -c "SELECT count(*) FROM ttl_indexes WHERE table_name = '$t'::regclass")"
  expect_eq "$1: bob's touch trigger is still there" 1 \
    "$(q squat -c "SELECT count(*) FROM pg_trigger WHERE tgrelid = '$t'::regclass AND tgname = 'jsonb_ttl_touch'")"
  expect_eq "$1: bob's policies are still there" "jsonb_ttl_hide_expired,jsonb_ttl_keep_access" \
    "$(q squat -c "SELECT string_agg(polname, ',' ORDER BY polname) FROM pg_policy WHERE polrelid = '$t'::regclass")"
  expect_eq "$1: row security is still on for bob's table" t \
    "$(q squat -c "SELECT relrowsecurity FROM pg_class WHERE oid = '$t'::regclass")"
}
bob_table b_t ""
expect_eq "setup: nothing exists under bob's index name yet" f "$(exists squat shared.b_t_ttl_idx)"
echo "     mallory's index: $(outcome mallory squat "CREATE TABLE shared.m_t (id int); CREATE INDEX b_t_ttl_idx ON shared.m_t (id)")," \
     "dropped: $(outcome mallory squat "DROP INDEX shared.b_t_ttl_idx")"
bob_intact "B" b_t

# Variant: a TABLE named like bob's index.
bob_table b2_t ""
echo "     mallory's table shared.b2_t_ttl_idx: $(outcome mallory squat "CREATE TABLE shared.b2_t_ttl_idx (id int)")," \
     "dropped: $(outcome mallory squat "DROP TABLE shared.b2_t_ttl_idx")"
bob_intact "B (a table named like it)" b2_t

# Variant: an index named like bob's per-row TTL index, itself not built yet.
bob_table b3_t ", row_ttl_path => 'ttl'"
echo "     mallory's index b3_t_row_ttl_idx: $(outcome mallory squat "CREATE TABLE shared.m3_t (id int); CREATE INDEX b3_t_row_ttl_idx ON shared.m3_t (id)")," \
     "dropped: $(outcome mallory squat "DROP INDEX shared.b3_t_row_ttl_idx")"
bob_intact "B (the per-row index's name)" b3_t

echo "-- C. a trap that catches the worker's cancel must not hold the worker past its time limit"
# worker_holds DB TABLE: the pid of the database's worker while it holds a lock on TABLE, or nothing.
worker_holds() {
  q "$1" -c "SELECT a.pid FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
             WHERE a.backend_type = 'jsonb_ttl worker' AND a.datname = current_database()
               AND l.locktype = 'relation' AND l.relation = '$2'::regclass
               AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
             LIMIT 1"
}
# wait_held DB TABLE: waits (at most 15 s) until the same worker has held TABLE for over 2.5 s.
wait_held() {
  local start since=0 pid last=""
  start=$(now_ms)
  while [ $(($(now_ms) - start)) -lt 15000 ]; do
    pid=$(worker_holds "$1" "$2")
    if [ -n "$pid" ] && [ "$pid" = "$last" ]; then
      if [ $(($(now_ms) - since)) -gt 2500 ]; then
        echo "     the worker (pid $pid) has been on $2 for $(($(now_ms) - since)) ms:" \
             "$(q "$1" -c "SELECT coalesce(query, '') || ' / ' || state || ' / ' || coalesce(wait_event, '-') FROM pg_stat_activity WHERE pid = $pid")"
        return 0
      fi
    elif [ -n "$pid" ]; then since=$(now_ms); else since=0; fi
    last=$pid
    sleep 0.1
  done
  echo "     note: no worker held $2 for 2.5 s within 15 s (measuring anyway)"
}
# measure DB: bob inserts 100 expired rows into his table victim and waits (20 s at most) for
# them to go; asserts the bound and prints the figure.
measure() {
  local db=$1 what=$2 t0 left=100 took
  as bob "$db" -v ON_ERROR_STOP=1 \
    -c "INSERT INTO victim SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 100) g"
  t0=$(now_ms)
  while [ $(($(now_ms) - t0)) -lt 20000 ]; do
    left=$(q "$db" -c "SELECT count(*) FROM victim")
    [ "$left" = 0 ] && break
    sleep 0.05
  done
  took=$(($(now_ms) - t0))
  if [ "$left" = 0 ]; then
    echo "     bob's 100 expired rows went after $took ms"
    if [ "$took" -le 8500 ]; then pass "$what: bob's rows gone within 8.5 s ($took ms)"
    else fail "$what: bob's rows took $took ms (bound 8500 = frequency 0.5 + batch_timeout 2 + grace 2 + slack 4)"; fi
  else
    fail "$what: $left of bob's 100 expired rows still there after $took ms"
  fi
}
victim_table() {
  as bob "$1" -v ON_ERROR_STOP=1 -c "CREATE TABLE public.victim (id int, doc jsonb)" \
    -c "SELECT FROM ttl_index_create('victim', 'at', 0)" >/dev/null
}

new_db trap1
victim_table trap1
as mallory trap1 -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
CREATE TABLE public.stuck (id int, doc jsonb);
CREATE FUNCTION public.hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  LOOP
    BEGIN
      PERFORM pg_sleep(0.05);
    EXCEPTION WHEN query_canceled THEN NULL;
    END;
  END LOOP;
END $$;
CREATE TRIGGER hold BEFORE DELETE ON public.stuck FOR EACH ROW EXECUTE FUNCTION public.hold();
INSERT INTO public.stuck SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 10) g;
SELECT FROM ttl_index_create('stuck', 'at', 0);
SQL
wait_held trap1 stuck
measure trap1 "C (a DELETE trigger catching the cancel)"
eventually_eq "C: ttl_stats shows mallory's table set aside, with errors" 5 "t|t" trap1 \
  "SELECT coalesce(skipped, '') LIKE '%set aside%', errors > 0 FROM ttl_stats WHERE table_name = 'stuck'::regclass"
echo "     ttl_stats of stuck: $(q trap1 -c "SELECT errors || ' errors; skipped: ' || coalesce(skipped, '(null)') || '; last_error: ' || coalesce(last_error, '(null)') FROM ttl_stats WHERE table_name = 'stuck'::regclass")"
# The table set aside is skipped, and so is every other TTL table of its owner: a tenant with
# many such traps costs one termination per back-off, not one per table.
as mallory trap1 -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
CREATE TABLE public.stuck2 (id int, doc jsonb);
CREATE TRIGGER hold BEFORE DELETE ON public.stuck2 FOR EACH ROW EXECUTE FUNCTION public.hold();
INSERT INTO public.stuck2 SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 10) g;
SELECT FROM ttl_index_create('stuck2', 'at', 0);
SQL
measure trap1 "C (her second trap table, created after the first was set aside)"
sleep 3
expect_eq "C: one termination in all: the table set aside and its owner's other trap are skipped" 1 \
  "$(grep -c 'terminating it' "$CLUSTER_DIR/server.log")"

# Variant: a forced row security policy whose function catches the cancel: it holds the
# worker's probe, which runs before any delete. (Reading ttl_stats.oldest_expired of this table
# would run the same trap, so this part never selects that column.)
new_db trap2
victim_table trap2
as mallory trap2 -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
CREATE TABLE public.stuck (id int, doc jsonb);
INSERT INTO public.stuck SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 10) g;
-- a DELETE trigger that keeps the rows, so that the policy has rows to hold the probe on
CREATE FUNCTION public.keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER keep BEFORE DELETE ON public.stuck FOR EACH ROW EXECUTE FUNCTION public.keep();
SELECT FROM ttl_index_create('stuck', 'at', 0);
CREATE FUNCTION public.hold() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  LOOP
    BEGIN
      PERFORM pg_sleep(0.05);
    EXCEPTION WHEN query_canceled THEN NULL;
    END;
  END LOOP;
END $$;
ALTER TABLE public.stuck ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.stuck FORCE ROW LEVEL SECURITY;
CREATE POLICY hold ON public.stuck USING (public.hold());
SQL
wait_held trap2 stuck
measure trap2 "C (a forced policy catching the cancel in the probe)"

echo "-- D. statistics: error texts only for who may read them, and reading never runs owner code"
new_db stats
as mallory stats -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
CREATE TABLE public.legal (id int, doc jsonb);
CREATE FUNCTION public.hold_legal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'order 7 is on legal hold: SSN 078-05-1120';
END $$;
CREATE TRIGGER hold_legal BEFORE DELETE ON public.legal FOR EACH ROW EXECUTE FUNCTION public.hold_legal();
INSERT INTO public.legal SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 5) g;
SELECT FROM ttl_index_create('legal', 'at', 0);
SQL
eventually_eq "D: the worker failed on legal (errors > 0, as superuser)" 10 t stats \
  "SELECT errors > 0 FROM ttl_stats WHERE table_name = 'legal'::regclass"
ssn='078-05-1120'
last_error_as() { as "$1" stats -c "SELECT last_error FROM ttl_stats WHERE table_name = 'legal'::regclass" 2>&1; }
eve_sees=$(last_error_as eve)
echo "     eve sees: [$eve_sees]"
case "$eve_sees" in
  *"$ssn"*) fail "D: eve (no privileges on legal) must not see its error text, saw [$eve_sees]" ;;
  *) pass "D: eve does not see legal's error text" ;;
esac
expect_eq "D: eve sees what pg_stat_activity shows her" "<insufficient privilege>" "$eve_sees"
for who in mallory auditor postgres; do
  got=$(last_error_as "$who")
  case "$got" in
    *"$ssn"*) pass "D: $who sees legal's error text" ;;
    *) fail "D: $who should see legal's error text, saw [$got]" ;;
  esac
done
# the functions behind the view, called directly: _ttl_stats() (the SQL of every version) and
# _ttl_stats_view() (0.4.0's)
for fn in $(q stats -c "SELECT DISTINCT n.nspname || '.' || p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.proname IN ('_ttl_stats', '_ttl_stats_view')"); do
  got=$(as eve stats -c "SELECT last_error FROM $fn()" 2>&1 || true)
  echo "     eve calling $fn(): [$(echo "$got" | paste -sd' ')]"
  case "$got" in
    *"permission denied"*) pass "D: eve may not call $fn()" ;;
    *"$ssn"*) fail "D: eve reads legal's error text through $fn()" ;;
    *) pass "D: eve's $fn() shows no error text of legal" ;;
  esac
done
expect_eq "D: both functions behind ttl_stats are there to be tried" 2 \
  "$(q stats -c "SELECT count(DISTINCT proname) FROM pg_proc WHERE proname IN ('_ttl_stats', '_ttl_stats_view')")"

# A forced policy that raises, on a TTL table of mallory's whose expired rows stay (a trigger
# keeps them); STABLE, so the planner may also run it once per query.
as mallory stats -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
CREATE TABLE public.fenced (id int, doc jsonb);
INSERT INTO public.fenced SELECT g, jsonb_build_object('at', '2019-01-01') FROM generate_series(1, 5) g;
CREATE FUNCTION public.keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER keep BEFORE DELETE ON public.fenced FOR EACH ROW EXECUTE FUNCTION public.keep();
SELECT FROM ttl_index_create('fenced', 'at', 0);
CREATE FUNCTION public.boom() RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
  RAISE EXCEPTION 'mallory''s policy raised';
END $$;
CREATE FUNCTION public.nap() RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
  PERFORM pg_sleep(30);
  RETURN true;
END $$;
ALTER TABLE public.fenced ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.fenced FORCE ROW LEVEL SECURITY;
CREATE POLICY boom ON public.fenced USING (public.boom());
SQL
for who in postgres eve; do
  for view in ttl_stats ttl_indexes; do
    expect_eq "D: SELECT * FROM $view as $who succeeds with a raising policy on fenced" ok \
      "$(outcome "$who" stats "SELECT * FROM $view")"
  done
done
as mallory stats -v ON_ERROR_STOP=1 -c "DROP POLICY boom ON public.fenced" \
  -c "CREATE POLICY nap ON public.fenced USING (public.nap())"
for who in postgres eve; do
  t0=$(now_ms)
  got=$(outcome "$who" stats "SET statement_timeout = '5s'; SELECT * FROM ttl_stats")
  echo "     $who's SELECT * FROM ttl_stats under a 30 s sleeping policy: $got after $(($(now_ms) - t0)) ms"
  expect_eq "D: SELECT * FROM ttl_stats as $who succeeds within statement_timeout = 5s with a sleeping policy" ok "$got"
done

echo "-- E. the sample ttl_index_create reads runs a tenant's policy as the tenant, never as the caller"
# ops, an operator role that is a member of mallory's role (so it may manage her TTL index) and
# may write to its own table ops_audit, creates the TTL index of mallory's table. mallory's forced
# policy writes down who runs it and tries to write into ops_audit: the creation's sample (its
# advice) reads the table as its owner, so the policy runs as mallory, whose write is refused.
# The table's name is hostile.
new_db sample
q sample -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
CREATE ROLE ops LOGIN;
GRANT mallory TO ops;
CREATE TABLE public.ops_audit (line text);
ALTER TABLE public.ops_audit OWNER TO ops;
SQL
as mallory sample -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
CREATE TABLE public."s""; DROP TABLE x; --" (doc jsonb);
INSERT INTO public."s""; DROP TABLE x; --" VALUES ('{"createdAt": "2020-01-01"}');
CREATE TABLE public.ran_as (who text, wrote boolean);
GRANT INSERT ON public.ran_as TO PUBLIC;
CREATE FUNCTION public.grab() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  wrote boolean := true;
BEGIN
  BEGIN
    INSERT INTO public.ops_audit VALUES ('written by mallory''s policy');
  EXCEPTION WHEN insufficient_privilege THEN
    wrote := false;
  END;
  INSERT INTO public.ran_as VALUES (current_user, wrote);
  RETURN true;
END $$;
ALTER TABLE public."s""; DROP TABLE x; --" ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY grab ON public."s""; DROP TABLE x; --" USING (public.grab());
SQL
got=$(outcome ops sample "SELECT index_name FROM ttl_index_create('public.\"s\"\"; DROP TABLE x; --\"', 'created_at', interval '1 day')")
expect_eq "E: ops's ttl_index_create on mallory's table succeeds" ok "$got"
expect_eq "E: the sample ran mallory's policy as mallory, whose write into ops_audit was refused" "mallory|false" \
  "$(q sample -c "SELECT string_agg(DISTINCT who || '|' || wrote, ',') FROM public.ran_as")"
expect_eq "E: ops_audit is untouched" 0 "$(q sample -c "SELECT count(*) FROM public.ops_audit")"

finish
