#!/usr/bin/env bash
# The SQL edition of jsonb_ttl, for managed services (issue 48): built from managed/*.sql, tested
# on real clusters that preload only pg_cron (and pg_tle for the pg_tle form), every call made by
# roles that are not superusers. managed/README.md says what each test shows.
#   scripts/managed.sh build    build/managed/jsonb_ttl.sql (psql -f) and
#                               build/managed/jsonb_ttl_pgtle.sql (pg_tle), both carrying the version
#   scripts/managed.sh test     build, then the tests below (installs what is missing);
#                               MANAGED_MAJORS="16 17 18" for more majors than 16 (17 and 18
#                               copied from scripts/pg-server.sh's builds, else built from source
#                               once, about 10 minutes each)
#   scripts/managed.sh test-conformance | test-cluster | test-pgtle | test-16 | test-17 | test-18
# Clusters run as the postgres user on a Unix socket in a temporary folder and a free loopback
# port, and are stopped at the end. PostgreSQL 15 is Debian's /usr/lib/postgresql/15 with
# Debian's pg_cron; the pg_tle form is tested on a copy of that installation under its own prefix
# (MANAGED_PG_PREFIX, default /var/cache/jsonb_ttl/managed/pg15), where jsonb_ttl's own control
# file is never installed (pg_tle refuses an extension whose control file is on disk); 16, 17 and
# 18 are installations of their own under MANAGED_CACHE (default /var/cache/jsonb_ttl/managed).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/build/managed
PGBIN=/usr/lib/postgresql/15/bin
PREFIX=${MANAGED_PG_PREFIX:-/var/cache/jsonb_ttl/managed/pg15}
PGTLE_TARBALL=$ROOT/../shared/vendor/pg_tle-1.5.3.tar.gz
[ -f "$PGTLE_TARBALL" ] || PGTLE_TARBALL=/work/shared/vendor/pg_tle-1.5.3.tar.gz
log() { echo "managed: $*" >&2; }

# ---------------------------------------------------------------------------------------------
# build
# ---------------------------------------------------------------------------------------------
version() { tr -d ' \n' <"$ROOT/managed/VERSION"; }

# The edition's statements: managed/NN_*.sql in the order of their numbers, the version filled in.
sources() {
  local f
  for f in "$ROOT"/managed/[0-9][0-9]_*.sql; do
    printf -- '-- ---- %s\n' "managed/$(basename "$f")"
    sed "s/@VERSION@/$(version)/g" "$f"
    echo
  done
}

build() {
  local v tag=_jsonb_ttl_managed_
  v=$(version)
  mkdir -p "$OUT"
  if sources | grep -q "\$$tag\\$"; then
    log "the sources hold the dollar quote \$$tag\$"; exit 1
  fi
  {
    echo "-- jsonb_ttl $v, the SQL edition for managed services (SQL and PL/pgSQL only)."
    echo "-- Built by scripts/managed.sh from managed/*.sql; do not edit. Install it, as a role with"
    echo "-- CREATE on the database (no superuser needed), in the database that has the tables:"
    echo "--   psql -v ON_ERROR_STOP=1 -d mydb -f jsonb_ttl.sql"
    echo "-- It makes the schemas jsonb_ttl (the functions and views) and jsonb_ttl_internal."
    echo "\\set ON_ERROR_STOP 1"
    echo "BEGIN;"
    echo "DO \$guard\$"
    echo "BEGIN"
    echo "    IF EXISTS (SELECT FROM pg_catalog.pg_namespace n WHERE n.nspname OPERATOR(pg_catalog.=) 'jsonb_ttl_internal') THEN"
    echo "        RAISE EXCEPTION 'jsonb_ttl is installed in this database already (the schema jsonb_ttl_internal exists)'"
    echo "            USING ERRCODE = '42P06', HINT = 'SELECT jsonb_ttl.ttl_edition() says which; this script installs it once.';"
    echo "    END IF;"
    echo "END"
    echo "\$guard\$;"
    sources
    echo "COMMIT;"
  } >"$OUT/jsonb_ttl.sql"
  {
    echo "-- jsonb_ttl $v, the SQL edition for managed services, as a pg_tle extension (Amazon RDS and"
    echo "-- Aurora, Supabase): run by a member of pgtle_admin, in the database that has the tables."
    echo "-- Built by scripts/managed.sh from managed/*.sql; do not edit."
    echo "--   psql -v ON_ERROR_STOP=1 -d mydb -f jsonb_ttl_pgtle.sql"
    echo "-- Its objects go into the schema jsonb_ttl (CREATE EXTENSION makes it) and jsonb_ttl_internal."
    echo "-- This is the first version of the edition: there is no update path yet; the next one adds"
    echo "-- pgtle.install_update_path('jsonb_ttl', '$v', '<next>', …) here."
    echo "\\set ON_ERROR_STOP 1"
    echo "SELECT pgtle.install_extension("
    echo "  'jsonb_ttl',"
    echo "  '$v',"
    echo "  'TTL indexes for JSONB documents: expired rows removed by ttl_purge(), which pg_cron calls (SQL edition)',"
    echo "\$$tag\$"
    sources
    echo "\$$tag\$,"
    echo "  ARRAY['plpgsql'],"
    echo "  'jsonb_ttl'"
    echo ");"
    echo "CREATE EXTENSION jsonb_ttl VERSION '$v';"
  } >"$OUT/jsonb_ttl_pgtle.sql"
  log "wrote $OUT/jsonb_ttl.sql and $OUT/jsonb_ttl_pgtle.sql (version $v)"
}

# ---------------------------------------------------------------------------------------------
# what the tests need
# ---------------------------------------------------------------------------------------------
need() {  # need PACKAGE…: installs those not installed yet
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  log "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

deps() {
  need postgresql-15 postgresql-15-cron python3 make gcc flex postgresql-server-dev-15
  command -v cargo >/dev/null || { log "cargo is needed (the Rust edition's parser computes the expected answers)"; exit 1; }
}

# ---------------------------------------------------------------------------------------------
# clusters
# ---------------------------------------------------------------------------------------------
as_pg() { runuser -u postgres -- "$@"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_cluster BINDIR PRELOAD: a fresh cluster in a temporary folder; sets CLUSTER_DIR, PGHOST, PGPORT
start_cluster() {
  local bindir=$1 preload=$2
  CLUSTER_DIR=$(mktemp -d /tmp/jsonb_ttl-managed.XXXXXX)
  chmod 755 "$CLUSTER_DIR"
  chown postgres: "$CLUSTER_DIR"
  PGPORT=$(free_port)
  PGHOST=$CLUSTER_DIR
  export PGHOST PGPORT
  as_pg "$bindir/initdb" -D "$CLUSTER_DIR/data" -U postgres -A trust --no-sync -E UTF8 --locale=C.UTF-8 >"$CLUSTER_DIR/initdb.log"
  cat >>"$CLUSTER_DIR/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PGPORT
unix_socket_directories = '$CLUSTER_DIR'
shared_preload_libraries = '$preload'
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 20
fsync = off
EOF
  as_pg "$bindir/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" -w start >/dev/null
  STARTED_BINDIR=$bindir
  trap stop_cluster EXIT
  log "cluster $("$bindir/postgres" --version) at $CLUSTER_DIR port $PGPORT, shared_preload_libraries = '$preload'"
}

stop_cluster() {
  [ -n "${CLUSTER_DIR:-}" ] || return 0
  as_pg "$STARTED_BINDIR/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$CLUSTER_DIR"
  CLUSTER_DIR=
}

# psql as a role; -X: no psqlrc
PSQL=$PGBIN/psql
psql_as() { local role=$1; shift; "$PSQL" -X -q -v ON_ERROR_STOP=1 -U "$role" "$@"; }

# ---------------------------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------------------------
# The roles a managed service gives: no superuser. ttl_admin installs the edition (CREATE on the
# database), app_a and app_b are two tenants owning their tables, each using pg_cron.
make_roles() {
  local db=$1
  psql_as postgres -d postgres <<EOF
CREATE ROLE ttl_admin LOGIN;
CREATE ROLE app_a LOGIN;
CREATE ROLE app_b LOGIN;
CREATE DATABASE $db OWNER postgres;
GRANT CREATE, CONNECT ON DATABASE $db TO ttl_admin, app_a, app_b;
EOF
  psql_as postgres -d "$db" <<EOF
CREATE SCHEMA a AUTHORIZATION app_a;
CREATE SCHEMA b AUTHORIZATION app_b;
EOF
}

golden() {  # golden NAME ROLE DB: runs tests/managed/sql/NAME.sql as ROLE, compares its output
  local name=$1 role=$2 db=$3 out
  out=$(mktemp)
  # (LOCATION lines name C source lines, which differ between minor versions)
  "$PSQL" -X -a -q -U "$role" -d "$db" -v SHOW_CONTEXT=never -v VERBOSITY=verbose <"$ROOT/tests/managed/sql/$name.sql" 2>&1 \
    | grep -v '^LOCATION:' >"$out" || true
  # as pg_regress: NAME_N.out are other accepted outputs (api_1.out: PostgreSQL 16 and later write
  # an AT TIME ZONE index expression with one pair of parentheses fewer)
  local alt
  for alt in "$ROOT"/tests/managed/expected/"$name"_[0-9].out; do
    [ -f "$alt" ] && diff -q "$alt" "$out" >/dev/null && cp "$alt" "$out.alt" && break
  done
  if [ -f "$out.alt" ] || diff -u "$ROOT/tests/managed/expected/$name.out" "$out" >"$out.diff"; then
    log "ok   $name"
  else
    log "FAIL $name:"; cat "$out.diff" >&2
    cp "$out" "$ROOT/build/managed/$name.out"
    FAILED=$((FAILED + 1))
  fi
  rm -f "$out" "$out.diff" "$out.alt"
}

# The golden files of the shared functions, tests/pg_regress/sql/timestamp.sql and formats.sql,
# against this edition in DB: they must give the Rust edition's expected output, as it is (but
# for CONTEXT lines: a PL/pgSQL RAISE always has one).
rust_goldens() {
  local db=$1 f out
  for f in timestamp formats; do
    out=$(mktemp)
    PGOPTIONS="-c search_path=jsonb_ttl,public" "$PSQL" -X -a -q -U ttl_admin -d "$db" -v SHOW_CONTEXT=never \
      <"$ROOT/tests/pg_regress/sql/$f.sql" >"$out" 2>&1 || true
    if diff -u "$ROOT/tests/pg_regress/expected/$f.out" "$out"; then
      log "ok   tests/pg_regress/sql/$f.sql gives the Rust edition's expected output"
    else
      log "FAIL tests/pg_regress/sql/$f.sql"; FAILED=$((FAILED + 1))
    fi
    rm -f "$out"
  done
}

test_conformance() {
  local cases
  cases=$OUT/conformance.tsv
  (cd "$ROOT/tests/managed/cases" && CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/build/managed/target} nice -n 19 cargo build -q --release --locked)
  python3 "$ROOT/tests/managed/cases.py" "$ROOT" 20000 \
    | "${CARGO_TARGET_DIR:-$ROOT/build/managed/target}/release/managed_cases" >"$cases"
  start_cluster "$PGBIN" pg_cron
  make_roles conformance
  psql_as ttl_admin -d conformance -f "$OUT/jsonb_ttl.sql" >/dev/null
  # every case of the parser's tests, through the SQL edition, against the Rust parser's answers
  psql_as ttl_admin -d conformance -f "$ROOT/tests/managed/conformance.sql" <"$cases" | tee "$OUT/conformance.txt" | grep '^conformance'
  # and it can fail: one expected answer changed is found
  if sed '1s/\t\([0-9]*\)$/\t1\1/' "$cases" \
       | psql_as ttl_admin -d conformance -f "$ROOT/tests/managed/conformance.sql" >/dev/null 2>&1; then
    log "FAIL the conformance test passed with a wrong expected answer"; FAILED=$((FAILED + 1))
  else
    log "ok   the conformance test fails on a wrong expected answer"
  fi
  rust_goldens conformance
  stop_cluster
}

# The one line of README.md's "On a managed service" section that starts with PREFIX.
readme_line() {
  local line
  line=$(sed -n '/^## On a managed service/,/^## /p' "$ROOT/README.md" | grep -F -m1 -- "$1" | sed 's/  *# .*$//')
  [ -n "$line" ] || { log "README.md has no line starting $1"; exit 1; }
  echo "$line"
}

# Installs a form as README.md says, as ROLE, into DB.
install_as_readme() {  # install_as_readme FILE ROLE DB
  local line
  line=$(readme_line "psql -v ON_ERROR_STOP=1 -d mydb -f build/managed/$1")
  line=${line//-d mydb/-d $3}
  log "as $2: $line"
  (cd "$ROOT" && PATH=$(dirname "$PSQL"):$PATH PGUSER=$2 bash -c "$line" >/dev/null)
}

check() {  # check WHAT EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then log "ok   $1"; else log "FAIL $1: expected '$2', got '$3'"; FAILED=$((FAILED + 1)); fi
}
q() { local role=$1 db=$2; shift 2; "$PSQL" -X -q -A -t -v ON_ERROR_STOP=1 -U "$role" -d "$db" -c "$@"; }

# pg_cron as the services set it up: the extension in the postgres database (by the provider),
# its schema usable by the tenants, each scheduling its own job in its own database.
setup_cron() {
  psql_as postgres -d postgres -c "CREATE EXTENSION pg_cron" -c "GRANT USAGE ON SCHEMA cron TO app_a, app_b" \
    -c "GRANT EXECUTE ON FUNCTION cron.schedule_in_database(text, text, text, text, text, boolean) TO app_a, app_b"
}

# ttl_purge() called by pg_cron, as app_a: in seconds where pg_cron has them (1.5 and later),
# every minute otherwise (Debian bookworm's 1.4.2), waiting for the run.
test_cron() {
  local db=$1 version schedule waited=0 status left line
  version=$(q postgres postgres "SELECT extversion FROM pg_extension WHERE extname = 'pg_cron'")
  if printf '%s\n%s\n' 1.5 "$version" | sort -V -C; then schedule='30 seconds'; else schedule='* * * * *'; fi
  log "pg_cron $version: ttl_purge() scheduled '$schedule' (schedules in seconds need pg_cron 1.5)"
  q app_a "$db" "CREATE TABLE a.cron_events (id int, doc jsonb);
                 SELECT index_name FROM jsonb_ttl.ttl_index_create('a.cron_events', 'at', '1 minute');
                 INSERT INTO a.cron_events VALUES (1, '{\"at\": \"2001-01-01\"}'), (2, '{\"at\": \"2999-01-01\"}');" >/dev/null
  # the documented line (README.md, "On a managed service"), run as written by app_a: only the
  # database's name, and the schedule where pg_cron has no seconds, put in
  line=$(readme_line "SELECT cron.schedule_in_database('jsonb_ttl'")
  line=${line//\'mydb\'/\'$db\'}
  [ "$schedule" = '30 seconds' ] || line=${line//\'30 seconds\'/\'$schedule\'}
  log "as app_a: $line"
  q app_a postgres "$line" >/dev/null
  check "app_a's job runs as app_a" app_a "$(q app_a postgres "SELECT username FROM cron.job WHERE jobname = 'jsonb_ttl'")"
  while [ $waited -lt 75 ]; do
    status=$(q app_a postgres "SELECT status FROM cron.job_run_details d JOIN cron.job j USING (jobid)
                               WHERE j.jobname = 'jsonb_ttl' AND d.status IN ('succeeded', 'failed') ORDER BY runid DESC LIMIT 1")
    [ -n "$status" ] && break
    sleep 1; waited=$((waited + 1))
  done
  check "pg_cron ran CALL jsonb_ttl.ttl_purge() (${waited}s)" succeeded "$status"
  [ "$status" = failed ] && q app_a postgres "SELECT return_message FROM cron.job_run_details ORDER BY runid DESC LIMIT 1" >&2
  left=$(q app_a "$db" "SELECT string_agg(id::text, ',' ORDER BY id) FROM a.cron_events")
  check "pg_cron's run deleted the expired row, kept the live one" 2 "$left"
  q app_a postgres "SELECT cron.unschedule('jsonb_ttl')" >/dev/null
}

# pg_dump and a restore into another database give every index a new OID, and the catalog's
# rows come back with the dumped database's: each TTL index is found again by its shape
# (ttl_indexes shows it, ttl_index_drop drops it, ttl_purge() records its OID again), whatever
# index now has the old OID; the purge goes on from the definitions.
test_restore() {
  local db=$1 dump i
  # logins_a_mine: the TTL index's expression and predicate but for its function (the name
  # sorts first: pg_restore builds it first, and gives it the lower OID)
  q app_a "$db" "CREATE TABLE a.logins (id int, doc jsonb);
                 CREATE INDEX logins_id ON a.logins (id);
                 CREATE FUNCTION a.my_ts(jsonb) RETURNS timestamptz IMMUTABLE LANGUAGE sql RETURN NULL::timestamptz;
                 SELECT index_name FROM jsonb_ttl.ttl_index_create('a.logins', 'at', '1 hour', row_ttl_path => 'ttl');
                 CREATE INDEX logins_doc ON a.logins USING gin (doc);
                 CREATE INDEX logins_a_mine ON a.logins (a.my_ts(doc -> 'at')) WHERE a.my_ts(doc -> 'at') IS NOT NULL;
                 INSERT INTO a.logins VALUES (1, '{\"at\": \"2001-01-01\"}'), (2, '{\"at\": \"2999-01-01\"}'),
                                               (3, '{\"at\": \"2001-01-01\", \"ttl\": 60}'), (4, '{\"at\": \"2999-01-01\", \"ttl\": 60}');" >/dev/null
  # a row set aside (as a DELETE that failed on it would): a tid, which names another row, or
  # none, once restored
  q app_a "$db" "UPDATE jsonb_ttl_internal.ttl_state SET set_aside = ARRAY[(SELECT ctid FROM a.logins WHERE id = 1)],
                        set_aside_file = pg_relation_filenode('a.logins')
                 WHERE table_oid = 'a.logins'::regclass AND part = 'expire_after'" >/dev/null
  check "a row set aside before the dump" 1 \
    "$(q app_a "$db" "SELECT rows_undeletable FROM jsonb_ttl.ttl_stats WHERE table_name = 'a.logins'::regclass AND part = 'expire_after'")"
  dump=$CLUSTER_DIR/dump  # (removed with the cluster)
  "$STARTED_BINDIR/pg_dump" -U postgres -Fc -d "$db" -f "$dump"
  # one pg_restore, which grants the schemas after it has built the indexes (as their tables'
  # owners, who could not use jsonb_ttl_internal yet: nothing the index expressions call looks a
  # name up when it runs)
  for i in 1 2; do
    psql_as postgres -d postgres -c "CREATE DATABASE restored_$i" >/dev/null
    "$STARTED_BINDIR/pg_restore" -U postgres -d restored_$i --exit-on-error "$dump"
  done
  check "restored: the OIDs recorded are the dumped database's" "t|t" \
    "$(q app_a restored_1 "SELECT index_oid <> 'a.logins_ttl_idx'::regclass::oid, row_ttl_index_oid <> 'a.logins_row_ttl_idx'::regclass::oid
                           FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'a.logins'::regclass")"
  check "restored: ttl_indexes finds the TTL index" logins_ttl_idx \
    "$(q app_a restored_1 "SELECT index_name FROM jsonb_ttl.ttl_indexes WHERE table_name = 'a.logins'::regclass")"
  q app_a restored_1 "CALL jsonb_ttl.ttl_purge(max_table_fraction => 1)"
  check "restored: ttl_purge() deletes the expired rows, both parts, none set aside" 2,4 \
    "$(q app_a restored_1 "SELECT string_agg(id::text, ',' ORDER BY id) FROM a.logins")"
  check "restored: ttl_purge() recorded the indexes' new OIDs" "t|t" \
    "$(q app_a restored_1 "SELECT index_oid = 'a.logins_ttl_idx'::regclass::oid, row_ttl_index_oid = 'a.logins_row_ttl_idx'::regclass::oid
                           FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'a.logins'::regclass")"
  q app_a restored_2 "SELECT jsonb_ttl.ttl_index_drop('a.logins')" >/dev/null
  check "restored: ttl_index_drop drops its two indexes and no other" "logins_a_mine,logins_doc,logins_id" \
    "$(q app_a restored_2 "SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE schemaname = 'a' AND tablename = 'logins'")"
}

# What only sessions side by side show: rows another transaction holds are skipped, never
# waited for; a lock the purge cannot have within lock_timeout sets the table aside (its error
# in ttl_stats) and the run goes on; a superuser's run leaves the tenants' tables.
test_concurrency() {
  local db=$1 t0 t1 left
  q app_a "$db" "CREATE TABLE a.held (id int PRIMARY KEY, doc jsonb);
                 SELECT index_name FROM jsonb_ttl.ttl_index_create('a.held', 'at', 0);
                 INSERT INTO a.held SELECT i, '{\"at\": 1000}' FROM generate_series(1, 10) i;
                 CREATE TABLE a.free (id int, doc jsonb);
                 SELECT index_name FROM jsonb_ttl.ttl_index_create('a.free', 'at', 0);" >/dev/null
  # a row held FOR UPDATE by another session for 4 s
  q app_a "$db" "BEGIN; SELECT id FROM a.held WHERE id = 1 FOR UPDATE; SELECT pg_sleep(4); COMMIT;" >/dev/null &
  sleep 1
  t0=$(date +%s%N)
  q app_a "$db" "CALL jsonb_ttl.ttl_purge()"
  t1=$(date +%s%N)
  left=$(q app_a "$db" "SELECT string_agg(id::text, ',') FROM a.held")
  check "a row another transaction holds is skipped, the others go" 1 "$left"
  check "the run did not wait for it (< 2 s)" yes "$([ $(( (t1 - t0) / 1000000 )) -lt 2000 ] && echo yes || echo "no, $(( (t1 - t0) / 1000000 )) ms")"
  wait
  q app_a "$db" "CALL jsonb_ttl.ttl_purge()"
  check "the next run takes it" 0 "$(q app_a "$db" "SELECT count(*) FROM a.held")"
  # a table locked by DDL for 4 s: the run waits at most lock_timeout, and purges the next table
  q app_a "$db" "INSERT INTO a.held VALUES (1, '{\"at\": 1000}'); INSERT INTO a.free VALUES (1, '{\"at\": 1000}')" >/dev/null
  q app_a "$db" "BEGIN; LOCK TABLE a.held IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(4); COMMIT;" >/dev/null &
  sleep 1
  t0=$(date +%s%N)
  q app_a "$db" "CALL jsonb_ttl.ttl_purge(lock_timeout => '100 milliseconds')" 2>/dev/null
  t1=$(date +%s%N)
  check "a locked table does not hold up the run (< 2 s)" yes "$([ $(( (t1 - t0) / 1000000 )) -lt 2000 ] && echo yes || echo "no, $(( (t1 - t0) / 1000000 )) ms")"
  check "the next table was purged" 0 "$(q app_a "$db" "SELECT count(*) FROM a.free")"
  check "the locked table's error is in ttl_stats" "1|t" \
    "$(q app_a "$db" "SELECT errors, last_error LIKE 'a lock was not had within lock_timeout (100ms)%' FROM jsonb_ttl.ttl_stats WHERE table_name = 'a.held'::regclass")"
  wait
  # a superuser's run purges only the tables it owns: never a tenant's, as a superuser
  q postgres "$db" "CALL jsonb_ttl.ttl_purge()"
  check "a superuser's run leaves app_a's table" 1 "$(q app_a "$db" "SELECT count(*) FROM a.held")"
  q postgres "$db" "SELECT jsonb_ttl.ttl_expire_now('a.held')" >/dev/null 2>&1 \
    && { log "FAIL a superuser's ttl_expire_now of a tenant's table"; FAILED=$((FAILED + 1)); } \
    || log "ok   a superuser's ttl_expire_now('a.held') is refused"
  q app_a "$db" "CALL jsonb_ttl.ttl_purge()"
  check "its owner's run takes it" 0 "$(q app_a "$db" "SELECT count(*) FROM a.held")"
  # after REINDEX CONCURRENTLY (another OID), the run records the new index, but does not wait
  # for a caller's transaction that holds the definition (ttl_expire_now's FOR SHARE)
  q app_a "$db" "CREATE TABLE a.reindexed (id int, doc jsonb);
                 SELECT index_name FROM jsonb_ttl.ttl_index_create('a.reindexed', 'at', 0);" >/dev/null
  q app_a "$db" "REINDEX INDEX CONCURRENTLY a.reindexed_ttl_idx"
  q app_a "$db" "BEGIN; SELECT jsonb_ttl.ttl_expire_now('a.reindexed'); SELECT pg_sleep(4); COMMIT;" >/dev/null &
  sleep 1
  t0=$(date +%s%N)
  q app_a "$db" "CALL jsonb_ttl.ttl_purge()"
  t1=$(date +%s%N)
  check "a definition another transaction holds does not hold up the run (< 2 s)" yes "$([ $(( (t1 - t0) / 1000000 )) -lt 2000 ] && echo yes || echo "no, $(( (t1 - t0) / 1000000 )) ms")"
  wait
  q app_a "$db" "CALL jsonb_ttl.ttl_purge()"
  check "the next run records the reindexed index" t \
    "$(q app_a "$db" "SELECT index_oid = 'a.reindexed_ttl_idx'::regclass::oid FROM jsonb_ttl_internal.ttl_index WHERE table_oid = 'a.reindexed'::regclass")"
}

# A PostgreSQL 15 installation of its own for the pg_tle form: a copy of Debian's (its binaries
# find their lib and share folders relative to themselves), with pg_cron's files (from Debian's
# postgresql-15-cron) and pg_tle built from ../shared/vendor, and without any jsonb_ttl file,
# whatever Debian's own installation holds.
setup_prefix() {
  local stamp want src
  want="$(dpkg-query -W -f='${Version}' postgresql-15) $(dpkg-query -W -f='${Version}' postgresql-15-cron) $(basename "$PGTLE_TARBALL")"
  stamp=$PREFIX/.managed-stamp
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    log "copying PostgreSQL 15 into $PREFIX and building pg_tle there (once)"
    rm -rf "$PREFIX"
    mkdir -p "$PREFIX/usr/lib/postgresql" "$PREFIX/usr/share/postgresql"
    tar -C /usr/lib/postgresql -cf - --exclude=15/lib/bitcode 15 | tar -C "$PREFIX/usr/lib/postgresql" -xf -
    tar -C /usr/share/postgresql -cf - 15 | tar -C "$PREFIX/usr/share/postgresql" -xf -
    src=$(mktemp -d)
    tar -C "$src" -xzf "$PGTLE_TARBALL"
    (cd "$src"/pg_tle-* && unset MAKELEVEL MAKEFLAGS MFLAGS && nice -n 19 make -s PG_CONFIG="$PGBIN/pg_config" >"$src/make.log" 2>&1 \
       && make -s install PG_CONFIG="$PGBIN/pg_config" DESTDIR="$PREFIX" >>"$src/make.log" 2>&1) \
      || { cat "$src/make.log" >&2; log "pg_tle build failed"; exit 1; }
    rm -rf "$src"
    echo "$want" >"$stamp"
  fi
  # never jsonb_ttl's own files: pg_tle refuses a name whose control file is on disk
  rm -f "$PREFIX"/usr/share/postgresql/15/extension/jsonb_ttl* "$PREFIX"/usr/lib/postgresql/15/lib/jsonb_ttl*
  chmod -R a+rX "$PREFIX"
}

# PostgreSQL 16 of its own (16.2 as the PyPI wheel pgserver 0.1.4 ships it, as
# scripts/pg-server.sh fetches it, but under MANAGED_CACHE: no jsonb_ttl file is ever installed
# there), with pg_tle built into it. No pg_cron: nothing packages it for 16 here.
PG16=${MANAGED_CACHE:-/var/cache/jsonb_ttl/managed}/pg16
setup_pg16() {
  local bindir=$PG16/pgserver/pginstall/bin src
  if [ ! -x "$bindir/postgres" ]; then
    log "fetching PostgreSQL 16.2 (PyPI: pgserver 0.1.4) into $PG16"
    mkdir -p "$PG16"
    if ! ls "$PG16"/wheel/pgserver-*.whl >/dev/null 2>&1; then
      need python3-venv
      python3 -m venv "$PG16/venv"
      "$PG16/venv/bin/pip" download -q --no-deps --only-binary :all: \
        --platform manylinux2014_x86_64 --python-version 3.11 -d "$PG16/wheel" pgserver==0.1.4 >&2
      rm -rf "$PG16/venv"
    fi
    python3 - "$PG16" <<'PY'
import pathlib, sys, zipfile
target = pathlib.Path(sys.argv[1])
wheel = next((target / "wheel").glob("pgserver-*.whl"))
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(("pgserver/pginstall/", "pgserver.libs/")):
            z.extract(name, target)
pginstall = target / "pgserver/pginstall"
for f in list((pginstall / "bin").iterdir()) + [p for p in (pginstall / "lib/postgresql/pgxs").rglob("*")
                                                if p.is_file() and p.name in {"install-sh", "missing"}]:
    f.chmod(0o755)
PY
  fi
  if [ ! -f "$PG16/.pgtle-built" ]; then
    src=$(mktemp -d)
    tar -C "$src" -xzf "$PGTLE_TARBALL"
    (cd "$src"/pg_tle-* && unset MAKELEVEL MAKEFLAGS MFLAGS && nice -n 19 make -s PG_CONFIG="$bindir/pg_config" FLEX="$(command -v flex)" >"$src/make.log" 2>&1 \
       && make -s install PG_CONFIG="$bindir/pg_config" FLEX="$(command -v flex)" >>"$src/make.log" 2>&1) \
      || { cat "$src/make.log" >&2; log "pg_tle build for 16 failed"; exit 1; }
    rm -rf "$src"
    touch "$PG16/.pgtle-built"
  fi
  chmod -R a+rX "$PG16"
  echo "$bindir"
}

# PostgreSQL 17 or 18 of its own, under MANAGED_CACHE: a copy of scripts/pg-server.sh's build
# when there is one (make test-majors's), else built from the sources it takes (17.11 from the
# Debian archive's pool, 18 by apt-get source from sid), one make job at nice 19 (about 10
# minutes, once); pg_tle built into it.
setup_pg_source() {  # setup_pg_source MAJOR: prints its bindir
  local major=$1 dir=${MANAGED_CACHE:-/var/cache/jsonb_ttl/managed}/pg$1 src tarball
  local built=${JSONB_TTL_PG_CACHE:-/var/cache/jsonb_ttl/pg}/$1/install
  if [ ! -x "$dir/install/bin/postgres" ] && [ -x "$built/bin/postgres" ]; then
    # the same sources scripts/pg-server.sh built (for make test-majors): copied without any
    # jsonb_ttl file (its binaries find their lib and share folders relative to themselves)
    log "copying PostgreSQL $major from $built into $dir/install, without jsonb_ttl's files"
    rm -rf "$dir" && mkdir -p "$dir/install"
    tar -C "$built" -cf - --exclude='jsonb_ttl*' --exclude='*/bitcode' . | tar -C "$dir/install" -xf -
  fi
  if [ ! -x "$dir/install/bin/postgres" ]; then
    need bison flex libreadline-dev zlib1g-dev curl bzip2 dpkg-dev
    rm -rf "$dir" && mkdir -p "$dir/src"
    case "$major" in
      17) curl -fsS -o "$dir/postgresql-17.tar.bz2" \
            "$("$ROOT/scripts/debian-mirror.sh")/pool/main/p/postgresql-17/postgresql-17_17.11.orig.tar.bz2"
          tarball=$dir/postgresql-17.tar.bz2 ;;
      18) [ -f /etc/apt/sources.list.d/jsonb_ttl-pg-src.sources ] || "$ROOT/scripts/pg-server.sh" --deps 18 >&2
          (cd "$dir" && apt-get source -q --download-only postgresql-18 >/dev/null 2>&1)
          tarball=$(ls "$dir"/postgresql-18_*.orig.tar.bz2 | head -1) ;;
    esac
    tar xjf "$tarball" -C "$dir/src"
    src=$(find "$dir/src" -maxdepth 1 -mindepth 1 -type d | head -1)
    log "building PostgreSQL $major into $dir/install (one job, nice 19: about 10 minutes, once)"
    (unset MAKELEVEL MAKEFLAGS MFLAGS MAKEOVERRIDES && cd "$src" \
       && nice -n 19 ./configure --prefix="$dir/install" --without-icu >"$dir/configure.log" 2>&1 \
       && nice -n 19 make -s >"$dir/make.log" 2>&1 && make -s install >"$dir/install.log" 2>&1) \
      || { log "PostgreSQL $major build failed, see $dir/*.log"; exit 1; }
    rm -rf "$dir/src" "$dir"/postgresql-*
  fi
  if [ ! -f "$dir/.pgtle-built" ]; then
    src=$(mktemp -d)
    tar -C "$src" -xzf "$PGTLE_TARBALL"
    (cd "$src"/pg_tle-* && unset MAKELEVEL MAKEFLAGS MFLAGS && nice -n 19 make -s PG_CONFIG="$dir/install/bin/pg_config" >"$src/make.log" 2>&1 \
       && make -s install PG_CONFIG="$dir/install/bin/pg_config" >>"$src/make.log" 2>&1) \
      || { cat "$src/make.log" >&2; log "pg_tle build for $major failed"; exit 1; }
    rm -rf "$src"
    touch "$dir/.pgtle-built"
  fi
  chmod -R a+rX "$dir"
  echo "$dir/install/bin"
}

# On PostgreSQL MAJOR (16, 17, 18): the conformance test, the Rust edition's golden files, both
# forms and their cluster tests and restores, without pg_cron (nothing packages it for them here).
test_major() {
  local major=$1 db=managed bindir cases=$OUT/conformance.tsv
  case "$major" in
    16) bindir=$(setup_pg16) ;;
    17|18) bindir=$(setup_pg_source "$major") ;;
    *) log "no PostgreSQL $major here (16, 17 or 18)"; exit 2 ;;
  esac
  [ -s "$cases" ] || { log "run scripts/managed.sh test-conformance first (it writes $cases)"; exit 1; }
  start_cluster "$bindir" pg_tle
  make_roles $db
  install_as_readme jsonb_ttl.sql ttl_admin $db
  psql_as ttl_admin -d $db -f "$ROOT/tests/managed/conformance.sql" <"$cases" | grep '^conformance'
  rust_goldens $db
  golden api app_a $db
  golden purge app_a $db
  golden security app_b $db
  test_concurrency $db
  test_restore $db
  stop_cluster
  start_cluster "$bindir" pg_tle
  make_roles $db
  psql_as postgres -d $db -c "CREATE EXTENSION pg_tle" -c "GRANT pgtle_admin TO ttl_admin"
  install_as_readme jsonb_ttl_pgtle.sql ttl_admin $db
  check "PostgreSQL $major: CREATE EXTENSION jsonb_ttl through pg_tle" "$(version)" \
    "$(q app_a $db "SELECT extversion FROM pg_extension WHERE extname = 'jsonb_ttl'")"
  golden api app_a $db
  golden purge app_a $db
  golden security app_b $db
  test_restore $db
  stop_cluster
}

test_cluster() {
  local db=managed
  start_cluster "$PGBIN" pg_cron
  make_roles $db
  setup_cron
  # installed by a role that is not a superuser, with psql -f as a managed service allows
  check "ttl_admin is no superuser" f "$(q ttl_admin postgres "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")"
  install_as_readme jsonb_ttl.sql ttl_admin $db
  check "installed" "jsonb_ttl $(version) (SQL edition, for managed services)" "$(q app_a $db "SELECT jsonb_ttl.ttl_edition()")"
  psql_as ttl_admin -d $db -f "$OUT/jsonb_ttl.sql" >/dev/null 2>&1 \
    && { log "FAIL a second install"; FAILED=$((FAILED + 1)); } || log "ok   a second install is refused"
  golden api app_a $db
  golden purge app_a $db
  golden security app_b $db
  test_concurrency $db
  test_cron $db
  test_restore $db
  stop_cluster
}

# The pg_tle form, on the installation of its own: preloading pg_cron and pg_tle only, pg_tle's
# extension made by the provider (a superuser, as on RDS), pgtle_admin granted to ttl_admin, who
# installs jsonb_ttl_pgtle.sql as written; then the same tests as the plain script's.
test_pgtle() {
  local db=managed bindir=$PREFIX/usr/lib/postgresql/15/bin
  setup_prefix
  check "no jsonb_ttl control file in the pg_tle installation" 0 \
    "$(find "$PREFIX/usr/share/postgresql/15/extension" -name 'jsonb_ttl*' | wc -l)"
  start_cluster "$bindir" "pg_cron,pg_tle"
  make_roles $db
  setup_cron
  psql_as postgres -d $db -c "CREATE EXTENSION pg_tle" -c "GRANT pgtle_admin TO ttl_admin"
  install_as_readme jsonb_ttl_pgtle.sql ttl_admin $db
  check "CREATE EXTENSION jsonb_ttl through pg_tle, as ttl_admin" "$(version)|jsonb_ttl|ttl_admin" \
    "$(q app_a $db "SELECT e.extversion, n.nspname, e.extowner::regrole FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'jsonb_ttl'")"
  check "pg_tle lists it" "jsonb_ttl|$(version)" "$(q ttl_admin $db "SELECT name, default_version FROM pgtle.available_extensions() WHERE name = 'jsonb_ttl'")"
  check "its catalog is dumped by pg_dump (an extension configuration table)" t \
    "$(q app_a $db "SELECT 'jsonb_ttl_internal.ttl_index'::regclass::oid = ANY (extconfig) FROM pg_extension WHERE extname = 'jsonb_ttl'")"
  golden api app_a $db
  golden purge app_a $db
  golden security app_b $db
  test_concurrency $db
  test_cron $db
  test_restore $db
  stop_cluster
}

FAILED=0
cmd=${1:-test}
case "$cmd" in
build) build ;;
test-conformance) deps; build; test_conformance ;;
test-cluster) deps; build; test_cluster ;;
test-pgtle) deps; build; test_pgtle ;;
test-16|test-17|test-18) deps; build; test_major "${cmd#test-}" ;;
test)
  deps; build
  test_conformance
  test_cluster
  test_pgtle
  for major in ${MANAGED_MAJORS:-16}; do test_major "$major"; done
  [ "$FAILED" = 0 ] || { log "$FAILED failed"; exit 1; }
  log "all passed"
  ;;
*) echo "usage: $0 build|test|test-conformance|test-cluster|test-pgtle|test-16|test-17|test-18" >&2; exit 2 ;;
esac
[ "$FAILED" = 0 ] || { log "$FAILED failed"; exit 1; }
[ "$cmd" = build ] || [ "$cmd" = test ] || log "passed"
