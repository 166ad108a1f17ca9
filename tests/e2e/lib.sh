# Shared helpers for the end-to-end tests: each test sources this, starts its own cluster
# (library preloaded) with `start_cluster NAME PORT [conf lines…]`, and stops it on exit.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}  # make test PG=N sets it
PGBIN=$("$PG_CONFIG" --bindir)
PG_MAJOR=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
E2E_FAILURES=0
E2E_PASSES=0

start_cluster() {
  # E2E_PORT_OFFSET moves every script's port, so a second checkout can run its tests at once
  CLUSTER=$1 PORT=$(($2 + ${E2E_PORT_OFFSET:-0}))
  shift 2
  "$ROOT/scripts/cluster.sh" destroy "$CLUSTER"
  # E2E_KEEP=1 leaves the cluster running and its log in place, to look at a failure
  if [ "${E2E_KEEP:-0}" = 1 ]; then trap 'echo "cluster kept: $CLUSTER_DIR"' EXIT; else
    trap 'status=$?; "$ROOT/scripts/cluster.sh" destroy "$CLUSTER"; exit $status' EXIT
  fi
  # Most tests drain tables that expire whole at once: the safety brake (its own test,
  # brake.sh, sets it back) would pause them.
  "$ROOT/scripts/cluster.sh" start "$CLUSTER" "$PORT" "jsonb_ttl.max_table_fraction = 1" "$@"
  CLUSTER_DIR=$("$ROOT/scripts/cluster.sh" dir "$CLUSTER")
  SOCK=$CLUSTER_DIR/sock
}

# psql against database $1 of the test cluster, unaligned and quiet.
q() {
  local db=$1
  shift
  PGOPTIONS="-c client_min_messages=warning" "$PGBIN/psql" -h "$SOCK" -p "$PORT" -U postgres -d "$db" -X -q -At -v ON_ERROR_STOP=1 "$@"
}

# psql as ROLE (a login role, trust authentication) against DB; errors are the caller's to judge.
as() {
  local role=$1 db=$2
  shift 2
  PGOPTIONS="-c client_min_messages=warning" "$PGBIN/psql" -h "$SOCK" -p "$PORT" -U "$role" -d "$db" -X -q -At "$@"
}
# The ERROR line of a statement run as ROLE in DB, or "ok".
outcome() {
  local out
  if out=$(as "$1" "$2" -v ON_ERROR_STOP=1 -c "$3" 2>&1); then echo ok; else echo "$out" | sed -n 's/.*ERROR: *//p' | head -1; fi
}

pass() { E2E_PASSES=$((E2E_PASSES + 1)); echo "  ok   $*"; }
fail() {
  E2E_FAILURES=$((E2E_FAILURES + 1))
  echo "  FAIL $*"
  # what the worker and the launcher last logged, to tell a slow pass from a wrong one
  if [ -n "${CLUSTER_DIR:-}" ] && [ -f "$CLUSTER_DIR/server.log" ]; then
    grep -a "jsonb_ttl" "$CLUSTER_DIR/server.log" | tail -n 12 | sed 's/^/       log: /' || true
  fi
  # and what the launcher and the workers are doing now
  if [ -n "${SOCK:-}" ]; then
    PGOPTIONS="-c statement_timeout=2s" "$PGBIN/psql" -h "$SOCK" -p "$PORT" -U postgres -d postgres -X -q -At -F ' | ' -c \
      "SELECT backend_type, coalesce(datname, '-'), coalesce(state, '-'), coalesce(wait_event, '-'),
              left(regexp_replace(query, '\s+', ' ', 'g'), 80)
       FROM pg_stat_activity WHERE backend_type LIKE 'jsonb_ttl%' ORDER BY 1, 2" 2>/dev/null |
      sed 's/^/       now: /' || true
    # and what each database's worker last did to its tables: whether it holds them as targets
    # (a row), visited them (runs, last_run_at), or skipped them (skipped, last_error)
    local db
    for db in $(PGOPTIONS="-c statement_timeout=2s" "$PGBIN/psql" -h "$SOCK" -p "$PORT" -U postgres -d postgres -X -q -At -c \
                "SELECT datname FROM pg_database WHERE datallowconn AND datname NOT IN ('template0', 'template1')" 2>/dev/null); do
      PGOPTIONS="-c statement_timeout=2s -c client_min_messages=error" "$PGBIN/psql" -h "$SOCK" -p "$PORT" -U postgres -d "$db" -X -q -At -F ' | ' -c \
        "SELECT table_name, part, runs, rows_deleted, to_char(last_run_at, 'HH24:MI:SS.MS'), paused,
                left(coalesce(skipped, last_error, ''), 60)
         FROM ttl_stats ORDER BY last_run_at DESC NULLS FIRST LIMIT 8" 2>/dev/null |
        sed "s/^/       $db: /" || true
    done
  fi
}

# expect_eq DESCRIPTION EXPECTED ACTUAL
expect_eq() {
  if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: expected [$2], got [$3]"; fi
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# wait_for DESCRIPTION SECONDS COMMAND…: polls COMMAND every 0.05 s until it succeeds, and
# fails when SECONDS (may be fractional) pass first.
wait_for() {
  local what=$1 seconds=$2
  shift 2
  local start deadline
  start=$(now_ms)
  deadline=$((start + $(awk -v s="$seconds" 'BEGIN {printf "%d", s * 1000}')))
  until "$@"; do
    if [ "$(now_ms)" -ge $deadline ]; then fail "$what (not within ${seconds}s)"; return 1; fi
    sleep 0.05
  done
  pass "$what (after $(($(now_ms) - start)) ms)"
}

# eventually_eq DESCRIPTION SECONDS EXPECTED DB SQL: polls SQL in DB until it returns EXPECTED, and
# fails with the last value when SECONDS pass first. For what lags a commit by an instant, such as
# the statistics the worker records right after each batch commits.
eventually_eq() {
  local what=$1 seconds=$2 expected=$3 db=$4 sql=$5 got deadline
  deadline=$(($(now_ms) + $(awk -v s="$seconds" 'BEGIN {printf "%d", s * 1000}')))
  while got=$(q "$db" -c "$sql"); [ "$got" != "$expected" ]; do
    if [ "$(now_ms)" -ge $deadline ]; then fail "$what: expected [$expected], got [$got] for ${seconds}s"; return 0; fi
    sleep 0.05
  done
  pass "$what"
}

# passes_stopped DB: no pass of any worker has ended for 600 ms (ttl_statistics().last_pass_at),
# as after `jsonb_ttl.enabled = off` or a long frequency has been reloaded. For wait_for.
passes_stopped() {
  [ "$(q "$1" -c "SELECT coalesce(now() - last_pass_at > interval '600 ms', true) FROM ttl_statistics()")" = t ]
}

finish() {
  echo "$(basename "$0" .sh): $E2E_PASSES passed, $E2E_FAILURES failed"
  [ "$E2E_FAILURES" -eq 0 ]
}
