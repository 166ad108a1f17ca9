#!/usr/bin/env bash
# Change streams (docs/change_streams.md): a TTL index with replication_origin makes the
# worker's delete transactions carry the replication origin jsonb_ttl; with logical_message,
# each batch that removed rows writes one logical message. A publisher (wal_level = logical)
# with a marked table and a plain one:
#   a. test_decoding (where the server has it): only-local hides the marked table's TTL
#      deletes, not the application's changes; without it they are there. On 16+, pgoutput
#      read from a slot with origin = none / any (and its origin message names jsonb_ttl);
#   b. wal2json (format-version 2): filter-origins with the origin's id hides them,
#      include-origin shows it (15: Debian's postgresql-15-wal2json; 16+: built from Debian's
#      source package wal2json);
#   c. logical_message: one message per batch, with its table, rows and cutoff;
#   d. 16+: subscribers with origin = none (keeps the expired rows, gets the application's
#      changes) and origin = any (gets the TTL deletes too);
#   e. two databases purging with the option at once (an origin is set up by one backend at
#      a time);
#   f. attacks: the table owner's trigger, inside the batch, cannot reset or replace the
#      origin (not allowed; and with EXECUTE granted, the batch rolls back), and the worker's
#      session never keeps the origin set up;
#   g. max_replication_slots = 0 (18: max_active_replication_origins): the batch fails with a clear error, the worker goes on.
source "$(dirname "$0")/lib.sh"
# where the server restricts logical decoding output plugins (a setting some builds add)
plugins=()
# (grep reads it all: with -q, pipefail would see postgres killed by SIGPIPE)
if "$PGBIN/postgres" --describe-config 2>/dev/null | grep '^output_plugin_libraries' >/dev/null; then
  plugins=("output_plugin_libraries = 'pgoutput, test_decoding, wal2json'")
fi
# (synchronous_commit on for the worker's batches: logical decoding reads only flushed WAL, and
# each check reads its slot as soon as the rows are gone; off, the default, a batch's commit
# may wait up to wal_writer_delay for its flush)
start_cluster e2e-streams 28890 "wal_level = logical" "max_replication_slots = 10" \
  "max_wal_senders = 10" "jsonb_ttl.frequency = 200" "jsonb_ttl.batch_size = 4" \
  "jsonb_ttl.synchronous_commit = on" "${plugins[@]}"
PUB_PORT=$PORT
PKGLIB=$("$PG_CONFIG" --pkglibdir)

# Subscriber clusters (16+), stopped with the publisher.
SUBSCRIBERS=()
cleanup() {
  local status=$? s
  for s in "${SUBSCRIBERS[@]}"; do "$ROOT/scripts/cluster.sh" destroy "$s"; done
  [ "${E2E_KEEP:-0}" = 1 ] && { echo "cluster kept: $CLUSTER_DIR"; exit $status; }
  "$ROOT/scripts/cluster.sh" destroy "$CLUSTER"
  exit $status
}
trap cleanup EXIT

# The options of TABLE's TTL index in DB (replication_origin, logical_message).
options() {
  q "$1" -c "SELECT FROM ttl_index_alter('$2', replication_origin => $3, logical_message => $4)"
}
# An application table with a TTL index on doc->'at' (expire_after 0).
ttl_table() {
  q "$1" -c "CREATE TABLE $2 (id int PRIMARY KEY, doc jsonb NOT NULL)" \
    -c "SELECT FROM ttl_index_create('$2', 'at', 0)"
}
# Inserts rows FROM..TO of TABLE in DB, expired a minute ago.
expired() {
  q "$1" -c "INSERT INTO $2 SELECT i, jsonb_build_object('at', now() - interval '1 minute') FROM generate_series($3, $4) i"
}
count() { q "$1" -c "SELECT count(*) FROM $2"; }
# until TABLE in DB has N rows
rows_are() { [ "$(count "$1" "$2")" = "$3" ]; }

q postgres -c "CREATE DATABASE app"
q app -c "CREATE EXTENSION jsonb_ttl"
ttl_table app marked
ttl_table app plain
options app marked true true
expect_eq "ttl_indexes shows the options" "true true|false false" \
  "$(q app -c "SELECT string_agg(replication_origin || ' ' || logical_message, '|' ORDER BY table_name::text) FROM ttl_indexes")"
HAVE_TD=0 HAVE_W2J=0
[ -f "$PKGLIB/test_decoding.so" ] && HAVE_TD=1

# wal2json for this server: Debian's package for 15, else built from Debian's source package
have_wal2json() {
  [ -f "$PKGLIB/wal2json.so" ] && return 0
  if [ "$PG_MAJOR" = 15 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq postgresql-15-wal2json >/dev/null 2>&1 || true
  else
    local src_list=/etc/apt/sources.list.d/jsonb_ttl-pg-src.sources build
    if ! grep -rqs '^Types: deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
      printf 'Types: deb-src\nURIs: %s\nSuites: sid\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$("$ROOT/scripts/debian-mirror.sh")" >"$src_list"
      apt-get update -qq >/dev/null 2>&1 || true
    fi
    command -v dpkg-source >/dev/null || apt-get -o DPkg::Lock::Timeout=300 install -y -qq dpkg-dev >/dev/null 2>&1 || true
    build=$(mktemp -d)
    (cd "$build" && apt-get source -q wal2json >/dev/null 2>&1 \
      && cd "$(find . -maxdepth 1 -mindepth 1 -type d -name 'wal2json*' | head -1)" \
      && make -s USE_PGXS=1 PG_CONFIG="$PG_CONFIG" >/dev/null 2>&1 \
      && make -s USE_PGXS=1 PG_CONFIG="$PG_CONFIG" install >/dev/null 2>&1) || true
    rm -rf "$build"
  fi
  [ -f "$PKGLIB/wal2json.so" ]
}
have_wal2json && HAVE_W2J=1

# Every decoder reads the same stretch of WAL: slots made before anything is purged.
[ $HAVE_TD = 1 ] && q app -c "SELECT FROM pg_create_logical_replication_slot('td', 'test_decoding')"
[ $HAVE_W2J = 1 ] && q app -c "SELECT FROM pg_create_logical_replication_slot('w2j', 'wal2json')"
if [ "$PG_MAJOR" -ge 16 ]; then
  q app -c "CREATE PUBLICATION pub FOR TABLE marked, plain" \
    -c "SELECT FROM pg_create_logical_replication_slot('po', 'pgoutput')"
  # subscribers, one per origin setting, with the same tables (and no TTL index)
  for origin in none any; do
    name=e2e-streams-$origin port=$((28891 + ${#SUBSCRIBERS[@]} + ${E2E_PORT_OFFSET:-0}))
    SUBSCRIBERS+=("$name")
    "$ROOT/scripts/cluster.sh" destroy "$name"
    "$ROOT/scripts/cluster.sh" start "$name" "$port"
    dir=$("$ROOT/scripts/cluster.sh" dir "$name")
    "$PGBIN/psql" -h "$dir/sock" -p "$port" -U postgres -d postgres -X -q -v ON_ERROR_STOP=1 \
      -c "CREATE TABLE marked (id int PRIMARY KEY, doc jsonb NOT NULL)" \
      -c "CREATE TABLE plain (id int PRIMARY KEY, doc jsonb NOT NULL)" \
      -c "CREATE SUBSCRIPTION sub_$origin CONNECTION 'host=127.0.0.1 port=$PUB_PORT dbname=app user=postgres' PUBLICATION pub WITH (origin = $origin, copy_data = false)" \
      2> >(grep -v "^WARNING\|^DETAIL\|^HINT\|^NOTICE" >&2)
  done
fi
# sq CLUSTER_INDEX SQL: a query on subscriber 0 (origin = none) or 1 (origin = any)
sq() {
  local dir port
  dir=$("$ROOT/scripts/cluster.sh" dir "${SUBSCRIBERS[$1]}") port=$((28891 + $1 + ${E2E_PORT_OFFSET:-0}))
  PGOPTIONS="-c client_min_messages=warning" "$PGBIN/psql" -h "$dir/sock" -p "$port" -U postgres -d postgres -X -q -At -v ON_ERROR_STOP=1 -c "$2"
}

echo "-- the worker purges both tables"
# the application's own rows: not expired
q app -c "INSERT INTO marked VALUES (100, '{\"at\": \"2999-01-01\"}'), (102, '{\"at\": \"2999-01-01\"}')"
expired app marked 1 10
expired app plain 1 5
wait_for "the marked table's 10 expired rows are purged" 10 rows_are app marked 2
wait_for "the plain table's 5 expired rows are purged" 10 rows_are app plain 0
expect_eq "ttl_stats: no errors" "0 0" "$(q app -c "SELECT string_agg(errors::text, ' ' ORDER BY table_name::text) FROM ttl_stats")"
# the application's own changes, after the purge
q app -c "DELETE FROM marked WHERE id = 100" -c "INSERT INTO marked VALUES (101, '{\"at\": \"2999-01-01\"}')" \
  -c "INSERT INTO plain VALUES (999, '{\"at\": \"2999-01-01\"}')"
expect_eq "pg_replication_origin_status: jsonb_ttl's progress advanced" t \
  "$(q app -c "SELECT local_lsn <> '0/0' FROM pg_replication_origin_status WHERE external_id = 'jsonb_ttl'")"
expect_eq "the worker's session keeps no origin set up (a session can set it up now)" ok \
  "$(outcome postgres app "SELECT pg_replication_origin_session_setup('jsonb_ttl'); SELECT pg_replication_origin_session_reset()")"

if [ $HAVE_TD = 1 ]; then
  echo "-- a. test_decoding"
  td() {  # td OPTIONS… : the slot's changes as text
    local opts=${1:-}
    q app -c "SELECT data FROM pg_logical_slot_peek_changes('td', NULL, NULL, 'skip-empty-xacts', '1' $opts)"
  }
  n() { grep -c "$1" <<<"$2" || true; }
  all=$(td) local_only=$(td ", 'only-local', '1'")
  expect_eq "a. without only-local: the marked table's 10 TTL deletes and the application's 1" 11 \
    "$(n '^table public.marked: DELETE' "$all")"
  expect_eq "a. with only-local: the application's delete only" 1 "$(n '^table public.marked: DELETE' "$local_only")"
  expect_eq "a. with only-local: the application's delete is the one of id 100" 1 \
    "$(n '^table public.marked: DELETE: id\[integer\]:100$' "$local_only")"
  expect_eq "a. with only-local: the application's inserts (10 + 2 + 1)" 13 "$(n '^table public.marked: INSERT' "$local_only")"
  expect_eq "a. with only-local: the plain table's TTL deletes (no origin)" 5 "$(n '^table public.plain: DELETE' "$local_only")"

  echo "-- c. logical_message (test_decoding)"
  messages=$(sed -n 's/^message: transactional: 1 prefix: jsonb_ttl, sz: [0-9]* content://p' <<<"$all")
  expect_eq "c. one message per batch of 4 (batch_size): rows 4, 4, 2" "4 4 2" \
    "$(q app -c "SELECT string_agg((m::jsonb ->> 'rows'), ' ' ORDER BY o) FROM unnest(string_to_array(\$m\$$messages\$m\$, E'\n')) WITH ORDINALITY AS u(m, o)")"
  expect_eq "c. each names the table and a cutoff before the commit" "public.marked t" \
    "$(q app -c "SELECT DISTINCT (m::jsonb ->> 'table') || ' ' || CASE WHEN (m::jsonb ->> 'cutoff')::timestamptz <= now() THEN 't' ELSE 'f' END FROM unnest(string_to_array(\$m\$$messages\$m\$, E'\n')) AS u(m)")"
  expect_eq "c. only-local skips the messages too (they carry the origin)" 0 "$(n '^message:' "$local_only")"
else
  echo "-- a., c. with test_decoding skipped: no test_decoding in $PKGLIB (pgoutput below)"
fi

if [ "$PG_MAJOR" -ge 16 ]; then
  echo "-- a., c. pgoutput read from a slot (16+: its origin option)"
  # po ORIGIN: one line per message: its type, and for a delete the relation, for an origin
  # message its name, for a logical message its content
  po() {
    q app -c "SELECT CASE chr(get_byte(data, 0))
                WHEN 'D' THEN 'D ' || (('x' || encode(substr(data, 2, 4), 'hex'))::bit(32)::int)::regclass::text
                WHEN 'O' THEN 'O ' || convert_from(rtrim(substr(data, 10), '\\x00'::bytea), 'UTF8')
                WHEN 'M' THEN 'M ' || convert_from(substr(data, 25), 'UTF8')
                ELSE chr(get_byte(data, 0)) END
              FROM pg_logical_slot_peek_binary_changes('po', NULL, NULL, 'proto_version', '1',
                     'publication_names', 'pub', 'messages', 'true', 'origin', '$1')"
  }
  n() { grep -c "$1" <<<"$2" || true; }
  any=$(po any) none=$(po none)
  expect_eq "a. origin = any: the marked table's 10 TTL deletes and the application's 1" 11 "$(n '^D marked$' "$any")"
  expect_eq "a. origin = any: their transactions name the origin jsonb_ttl" 3 "$(n '^O jsonb_ttl$' "$any")"
  expect_eq "a. origin = none: the application's delete only" 1 "$(n '^D marked$' "$none")"
  expect_eq "a. origin = none: no origin message" 0 "$(n '^O ' "$none")"
  expect_eq "a. origin = none: the plain table's TTL deletes" 5 "$(n '^D plain$' "$none")"
  expect_eq "c. origin = any: one message per batch: rows 4, 4, 2 of public.marked" "4 4 2|public.marked" \
    "$(q app -c "SELECT string_agg(m::jsonb ->> 'rows', ' ') || '|' || string_agg(DISTINCT m::jsonb ->> 'table', ',') FROM unnest(string_to_array(\$m\$$(sed -n 's/^M //p' <<<"$any")\$m\$, E'\n')) AS u(m)")"
  expect_eq "c. origin = none: no message" 0 "$(n '^M ' "$none")"
fi

if [ $HAVE_W2J = 1 ]; then
  echo "-- b. wal2json (format-version 2)"
  id=$(q app -c "SELECT pg_replication_origin_oid('jsonb_ttl')")
  w2j() {
    q app -c "SELECT data FROM pg_logical_slot_peek_changes('w2j', NULL, NULL, 'format-version', '2' $1)"
  }
  deletes() { grep -c "\"action\":\"D\".*\"table\":\"$1\"" <<<"$2" || true; }
  unfiltered=$(w2j ", 'include-origin', '1'") filtered=$(w2j ", 'filter-origins', '$id'")
  expect_eq "b. without filter-origins: the marked table's 10 TTL deletes and the application's 1" 11 \
    "$(deletes marked "$unfiltered")"
  expect_eq "b. include-origin shows jsonb_ttl's id ($id) on the 10 TTL deletes, in 3 transactions" "10 3" \
    "$(grep -c "^{\"action\":\"D\",\"origin\":$id,.*\"table\":\"marked\"" <<<"$unfiltered" || true) $(grep -c "^{\"action\":\"B\",\"origin\":$id}" <<<"$unfiltered" || true)"
  expect_eq "b. filter-origins=$id: the application's delete only" 1 "$(deletes marked "$filtered")"
  expect_eq "b. filter-origins=$id: the plain table's TTL deletes" 5 "$(deletes plain "$filtered")"
else
  echo "-- b. wal2json skipped: no wal2json for PostgreSQL $PG_MAJOR here"
fi
[ $HAVE_TD = 1 ] && q app -c "SELECT FROM pg_drop_replication_slot('td')"
[ $HAVE_W2J = 1 ] && q app -c "SELECT FROM pg_drop_replication_slot('w2j')"

if [ "$PG_MAJOR" -ge 16 ]; then
  echo "-- d. subscribers"
  q app -c "SELECT FROM pg_drop_replication_slot('po')"
  arrived() { [ "$(sq "$1" "SELECT count(*) FROM plain WHERE id = 999")" = 1 ]; }
  wait_for "d. the origin = none subscriber caught up" 20 arrived 0
  wait_for "d. the origin = any subscriber caught up" 20 arrived 1
  expect_eq "d. origin = none: the expired rows stay, the application's delete and insert arrived" \
    "1 2 3 4 5 6 7 8 9 10 101 102" "$(sq 0 "SELECT string_agg(id::text, ' ' ORDER BY id) FROM marked")"
  expect_eq "d. origin = none: the plain table's TTL deletes arrived" 999 "$(sq 0 "SELECT string_agg(id::text, ' ') FROM plain")"
  expect_eq "d. origin = any: the TTL deletes arrived too" "101 102" "$(sq 1 "SELECT string_agg(id::text, ' ' ORDER BY id) FROM marked")"
else
  echo "-- d. subscribers skipped: a subscription's origin option needs PostgreSQL 16 (this is $PG_MAJOR)"
fi

echo "-- e. two databases purging with the option at once"
for db in app2 app3; do
  q postgres -c "CREATE DATABASE $db"
  q $db -c "CREATE EXTENSION jsonb_ttl"
  ttl_table $db t
  options $db t true false
  # each batch (4 rows) holds the origin for 8 ms or more: the two databases' batches overlap
  q $db -c "CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS \$\$BEGIN PERFORM pg_sleep(0.002); RETURN OLD; END\$\$" \
    -c "CREATE TRIGGER slow BEFORE DELETE ON t FOR EACH ROW EXECUTE FUNCTION slow()"
done
# a slot in each, to see what the deletes carried
for db in app2 app3; do
  if [ $HAVE_TD = 1 ]; then
    q $db -c "SELECT FROM pg_create_logical_replication_slot('s_$db', 'test_decoding')"
  else
    q $db -c "CREATE PUBLICATION p FOR TABLE t" -c "SELECT FROM pg_create_logical_replication_slot('s_$db', 'pgoutput')"
  fi
done
# 400 rows each: 100 batches each, both workers at the same time
expired app2 t 1 400 &
expired app3 t 1 400
wait
wait_for "e. app2's 400 rows purged" 30 rows_are app2 t 0
wait_for "e. app3's 400 rows purged" 30 rows_are app3 t 0
for db in app2 app3; do
  expect_eq "e. $db: no batch failed" "0 400" "$(q $db -c "SELECT errors || ' ' || rows_deleted FROM ttl_stats")"
  if [ $HAVE_TD = 1 ]; then
    local_deletes="SELECT count(*) FROM pg_logical_slot_peek_changes('s_$db', NULL, NULL, 'only-local', '1') WHERE data LIKE 'table public.t: DELETE%'"
    all_deletes="SELECT count(*) FROM pg_logical_slot_peek_changes('s_$db', NULL, NULL) WHERE data LIKE 'table public.t: DELETE%'"
  else
    peek="pg_logical_slot_peek_binary_changes('s_$db', NULL, NULL, 'proto_version', '1', 'publication_names', 'p', 'origin'"
    local_deletes="SELECT count(*) FROM $peek, 'none') WHERE get_byte(data, 0) = ascii('D')"
    all_deletes="SELECT count(*) FROM $peek, 'any') WHERE get_byte(data, 0) = ascii('D')"
  fi
  expect_eq "e. $db: every delete carried the origin (0 local, 400 in all)" "0 400" \
    "$(q $db -c "$local_deletes") $(q $db -c "$all_deletes")"
  q $db -c "SELECT FROM pg_drop_replication_slot('s_$db')"
done
expect_eq "e. no 'already active' error in the server log" 0 \
  "$(grep -c 'is already active for PID' "$CLUSTER_DIR/server.log" || true)"

echo "-- e2. one database's slow batches never use another's time limit up"
# app4's batches hold the origin until batch_timeout cancels them (a trigger sleeps 0.5 s a row,
# 4 rows a batch): app5's batches wait for the origin within a budget of their own, then run
# within their own batch_timeout, and fail none (0.3.0 counted the wait against it)
q postgres -c "ALTER SYSTEM SET jsonb_ttl.batch_timeout = '1s'" -c "SELECT pg_reload_conf()" >/dev/null
for db in app4 app5; do
  q postgres -c "CREATE DATABASE $db"
  q $db -c "CREATE EXTENSION jsonb_ttl"
  ttl_table $db t
  options $db t true false
done
q app4 -c "CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS \$\$BEGIN PERFORM pg_sleep(0.5); RETURN OLD; END\$\$" \
  -c "CREATE TRIGGER slow BEFORE DELETE ON t FOR EACH ROW EXECUTE FUNCTION slow()"
expired app4 t 1 8
busy() { [ "$(q app4 -c "SELECT errors > 0 FROM ttl_stats WHERE table_name = 't'::regclass")" = t ]; }
wait_for "e2. app4's batches hold the origin until their batch_timeout" 10 busy
expired app5 t 1 12
wait_for "e2. app5's 12 rows purged meanwhile, 4 at a time" 20 rows_are app5 t 0
expect_eq "e2. app5: no batch failed waiting for app4's" 0 "$(q app5 -c "SELECT errors FROM ttl_stats WHERE table_name = 't'::regclass")"
q app4 -c "DROP TRIGGER slow ON t"
q postgres -c "ALTER SYSTEM RESET jsonb_ttl.batch_timeout" -c "SELECT pg_reload_conf()" >/dev/null
wait_for "e2. (app4 drained)" 10 rows_are app4 t 0 >/dev/null

echo "-- f. the table owner's trigger against the origin"
q postgres -c "CREATE ROLE tenant LOGIN"
q app -c "GRANT CREATE ON SCHEMA public TO tenant" -c "SELECT FROM pg_replication_origin_create('tenant_origin')"
as tenant app -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
CREATE TABLE attempts (what text);
CREATE TABLE owned (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT FROM ttl_index_create('owned', 'at', 0);
CREATE FUNCTION meddle() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  BEGIN PERFORM pg_replication_origin_session_reset();
        INSERT INTO attempts VALUES ('reset: done');
  EXCEPTION WHEN OTHERS THEN INSERT INTO attempts VALUES ('reset: ' || SQLERRM); END;
  BEGIN PERFORM pg_replication_origin_session_setup('tenant_origin');
        INSERT INTO attempts VALUES ('setup: done');
  EXCEPTION WHEN OTHERS THEN INSERT INTO attempts VALUES ('setup: ' || SQLERRM); END;
  BEGIN INSERT INTO attempts SELECT 'is_setup: ' || pg_replication_origin_session_is_setup();
  EXCEPTION WHEN OTHERS THEN INSERT INTO attempts VALUES ('is_setup: ' || SQLERRM); END;
  RETURN OLD;
END $$;
CREATE TRIGGER meddle BEFORE DELETE ON owned FOR EACH ROW EXECUTE FUNCTION meddle();
SQL
# PostgreSQL lets only superusers, and roles granted EXECUTE on
# pg_replication_origin_session_setup, write under an origin: the owner's code runs inside the
# batches that carry it, so replication_origin is for such owners only.
expect_eq "f. replication_origin refused for a table whose owner may not write under an origin" \
  "replication_origin: the owner of public.owned, tenant, may not write under a replication origin" \
  "$(outcome postgres app "SELECT FROM ttl_index_alter('owned', replication_origin => true)")"
# set in the catalog by hand (or under a library without that rule): the batches refuse it
q app -c "UPDATE jsonb_ttl_internal.ttl_index SET replication_origin = true WHERE table_oid = 'owned'::regclass"
expired app owned 1 3
refused() { [ "$(q app -c "SELECT last_error LIKE '%may not write under a replication origin%' FROM ttl_stats WHERE table_name = 'owned'::regclass")" = t ]; }
wait_for "f. set by hand, the batches refuse it: ttl_stats says why" 10 refused
expect_eq "f. and nothing is deleted" 3 "$(count app owned)"
q app -c "DELETE FROM owned" -c "TRUNCATE attempts" -c "UPDATE jsonb_ttl_internal.ttl_index SET replication_origin = false WHERE table_oid = 'owned'::regclass"
# granted the right to (every overload: 18 has one more), the owner may have it
q app >/dev/null <<'SQL'
DO $$ DECLARE f regprocedure; BEGIN
  FOR f IN SELECT oid::regprocedure FROM pg_proc WHERE proname = 'pg_replication_origin_session_setup' LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO tenant', f);
  END LOOP; END $$;
SQL
options app owned true false
if [ $HAVE_TD = 1 ]; then
  q app -c "SELECT FROM pg_create_logical_replication_slot('f', 'test_decoding')"
  owned_deletes() {  # OPTIONS: the owned table's deletes the slot shows
    q app -c "SELECT count(*) FROM pg_logical_slot_peek_changes('f', NULL, NULL $1) WHERE data LIKE 'table public.owned: DELETE%'"
  }
  local_opt=", 'only-local', '1'" all_opt=""
else
  q app -c "CREATE PUBLICATION pf FOR TABLE owned" -c "SELECT FROM pg_create_logical_replication_slot('f', 'pgoutput')"
  owned_deletes() {
    q app -c "SELECT count(*) FROM pg_logical_slot_peek_binary_changes('f', NULL, NULL, 'proto_version', '1', 'publication_names', 'pf' $1) WHERE get_byte(data, 0) = ascii('D')"
  }
  local_opt=", 'origin', 'none'" all_opt=", 'origin', 'any'"
fi
expired app owned 1 3
wait_for "f. the owner's rows are purged, the trigger notwithstanding" 10 rows_are app owned 0
expect_eq "f. the trigger may not reset the origin, nor set up another, nor read it" \
  "is_setup: permission denied for function pg_replication_origin_session_is_setup|reset: permission denied for function pg_replication_origin_session_reset|setup: refused" \
  "$(q app -c "SELECT string_agg(w, '|' ORDER BY w) FROM (SELECT DISTINCT CASE WHEN what LIKE 'setup: %' AND what <> 'setup: done' THEN 'setup: refused' ELSE what END AS w FROM attempts) a")"
expect_eq "f. the deletes carried the origin all the same (0 local, 3 in all)" "0 3" \
  "$(owned_deletes "$local_opt") $(owned_deletes "$all_opt")"

# A superuser's mistake: EXECUTE on the reset granted to the owner too. The trigger resets the
# origin and sets up another: the batch rolls back instead of committing under it.
q app -c "GRANT EXECUTE ON FUNCTION pg_replication_origin_session_reset() TO tenant" \
  -c "TRUNCATE attempts"
expired app owned 11 12
failed() { [ "$(q app -c "SELECT last_error LIKE '%changed the session''s replication origin%' FROM ttl_stats WHERE table_name = 'owned'::regclass")" = t ]; }
wait_for "f. with EXECUTE granted, the batch fails: the trigger changed the origin" 10 failed
expect_eq "f. its rows are still there, its deletes rolled back" 2 "$(count app owned)"
# the worker still tries each pass: stopped, so that this session's set-up meets no batch
q app -c "ALTER SYSTEM SET jsonb_ttl.enabled = off" -c "SELECT pg_reload_conf()" >/dev/null
wait_for "f. (passes stopped)" 10 passes_stopped app
expect_eq "f. the worker's session keeps no origin set up after the failed batches" ok \
  "$(outcome postgres app "SELECT pg_replication_origin_session_setup('jsonb_ttl'); SELECT pg_replication_origin_session_reset()")"
q app -c "REVOKE EXECUTE ON FUNCTION pg_replication_origin_session_reset() FROM tenant"
q app -c "ALTER SYSTEM RESET jsonb_ttl.enabled" -c "SELECT pg_reload_conf()" >/dev/null
wait_for "f. revoked: the next pass purges them" 10 rows_are app owned 0
expect_eq "f. and these deletes carried the origin too (0 local, 5 in all)" "0 5" \
  "$(owned_deletes "$local_opt") $(owned_deletes "$all_opt")"
q app -c "SELECT FROM pg_drop_replication_slot('f')"

# (from PostgreSQL 18 replication origins have a setting of their own)
ORIGINS_SETTING=max_replication_slots
[ "$PG_MAJOR" -ge 18 ] && ORIGINS_SETTING=max_active_replication_origins
echo "-- g. $ORIGINS_SETTING = 0"
for s in "${SUBSCRIBERS[@]}"; do  # their slots on the publisher go with them
  i=0; [ "$s" = e2e-streams-any ] && i=1
  sq $i "DROP SUBSCRIPTION sub_${s#e2e-streams-}"
done
"$ROOT/scripts/cluster.sh" stop "$CLUSTER"
echo "$ORIGINS_SETTING = 0" >>"$CLUSTER_DIR/data/postgresql.conf"
echo "wal_level = replica" >>"$CLUSTER_DIR/data/postgresql.conf"
"$ROOT/scripts/cluster.sh" start "$CLUSTER" "$PUB_PORT"
expired app marked 21 22
expired app plain 21 22
wait_for "g. the plain table is purged" 10 rows_are app plain 1
slots_error() { [ "$(q app -c "SELECT last_error LIKE '%$ORIGINS_SETTING = 0; raise $ORIGINS_SETTING%' FROM ttl_stats WHERE table_name = 'marked'::regclass")" = t ]; }
wait_for "g. the marked table's batch fails, saying to raise $ORIGINS_SETTING" 10 slots_error
expect_eq "g. its rows stay" 4 "$(count app marked)"
expect_eq "g. no server process crashed" 0 "$(grep -c 'terminated by signal' "$CLUSTER_DIR/server.log" || true)"
options app marked false false
wait_for "g. replication_origin off: purged" 10 rows_are app marked 2
finish
